"""The Hamiltonian forms (state [q, pm], Poisson momenta pm = B^T M v (1.49)).

  hamilton-composite   HCBM  (1.59), Cholesky of the composite-body mass matrix
  hamilton-lagrange1   HLGR  (1.61)-(1.67), multipliers lambda by (1.65)
  hamilton-articulated HABM  sweep (3.16)-(3.17)
  hamilton-ltdl        HDEC  L^T D L (3.32)-(3.40)

Checked against
  * the numeric reference (runtime/reference/numeric.py: pm = B^T M v with explicit 6x6 matrices, and
    pm' = Q + d pm/dt along (q', t) by complex-step differentiation), via check.py, at 1e-10;
  * the composite Lagrangian module after conversion: pm' = M q'' + D pm with q'' and M from
    form="composite" and D pm (the derivative of the Hamiltonian module's own momenta along
    (q', 0, 1)) by Richardson-extrapolated central differences (h = 1e-3, error ~1e-13), at 1e-10;
  * pinocchio (random trees, when installed): pm = crba(q) q' (1e-10) and pm' = M aba(q, q') + M' q'
    with M' q' by Richardson-extrapolated central differences of crba along q' (1e-9; pinocchio
    4.1's computeCoriolisMatrix and computeRNEADerivatives disagree with d/dt crba for its
    JointModelComposite, which the multi-coordinate joints of pin_trees use, so they are not used);
  * the Dynamica90 documents' worked governor example: G_2, A_2, A'_2, M_i and Q, written out here in
    numpy, in the example's own rotation order (alpha2 about x first, then beta2 about y; the bundled
    governor.yaml follows the example's text, the opposite order);
  * trajectories: 1 s of dynamica.simulate (compiled Adams, rtol 1e-10, atol 1e-12) from the same
    (q0, qd0): the Hamiltonian and the Lagrangian (composite) runs agree to 1e-7 relative to the
    largest |q|, |q'| of the run (observed: 2e-11 .. 3e-9).
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.runtime.reference.check import check_against_reference

from conftest import MODELS, PLAIN_MODELS, write_model
from oracles.pin_trees import random_tree, write_yaml

FORMS = ("hamilton-composite", "hamilton-lagrange1", "hamilton-articulated", "hamilton-ltdl")
ACRONYMS = {"HCBM": "hamilton-composite", "HLGR": "hamilton-lagrange1", "HABM": "hamilton-articulated",
            "HDEC": "hamilton-ltdl"}
RTOL = 1e-10
TRAJ_RTOL = 1e-7
PIN_PMD_RTOL = 1e-9
#: models where a form cannot apply: puma560's link1 is massless (M_1 singular), which (1.64) needs
NOT_APPLICABLE = {("puma560", "hamilton-lagrange1")}
#: the cheap cases run by default; every other (model, form) pair is marked slow
FAST = {("governor", f) for f in FORMS} | {("driven", "hamilton-composite"), ("driven", "hamilton-ltdl")}

_LOADED = {}


def load(path, form):
    key = (str(path), form)
    if key not in _LOADED:
        _LOADED[key] = dynamica.load(path, form=form)
    return _LOADED[key]


def bundled_h(name, form):
    return load(MODELS / f"{name}.yaml", form)


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1.0, np.linalg.norm(b)))


def cases(models=PLAIN_MODELS, fast=FAST):
    out = []
    for name in models:
        for form in FORMS:
            if (name, form) in NOT_APPLICABLE:
                continue
            marks = [] if (name, form) in fast else [pytest.mark.slow]
            out.append(pytest.param(name, form, id=f"{name}-{form}", marks=marks))
    return out


def random_states(model, count, seed):
    """(q, qd, t, p): parameters scaled by U(0.8, 1.2), redrawn until every body inertia is
    physical (NumericReference.physical)."""
    from dynamica.runtime.reference.numeric import NumericReference
    ref = NumericReference(model.spec)
    rng = np.random.default_rng(seed)
    p0 = model.param_vector()
    for _ in range(count):
        q, qd, t = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n), rng.uniform(0, 2)
        p = p0 * rng.uniform(0.8, 1.2, p0.shape)
        while not ref.physical(p):
            p = p0 * rng.uniform(0.8, 1.2, p0.shape)
        yield q, qd, t, p


def momentum_derivative_fd(model, q, qd, t, p, h=1e-3):
    """D pm along (q', 0, 1) from the module's own momenta: central differences, Richardson."""
    def pm(s):
        out = np.empty(model.n)
        model.module.momenta(t + s, q + s * qd, qd, p, out)
        return out

    def D(hh):
        return (pm(hh) - pm(-hh)) / (2 * hh)
    return (4 * D(h / 2) - D(h)) / 3


# ------------------------------------------------------------------ registry
def test_forms_registered_with_acronyms():
    from dynamica.generator.forms import EQUATION_FORMS, resolve
    for acr, name in ACRONYMS.items():
        assert name in EQUATION_FORMS
        assert resolve(acr) == name and resolve(name) == name


def test_lagrange1_refuses_singular_body_inertia():
    """(1.64) needs M_i^{-1}: puma560's link1, massless at the default parameters, is named in a
    warning when generated and an error when evaluated there (tests/generator/spec/test_model_errors.py)."""
    with pytest.warns(UserWarning, match="link1"):
        dynamica.generate(MODELS / "puma560.yaml", form="HLGR")


# ------------------------------------------------------------------ against the reference
@pytest.mark.parametrize("name,form", cases())
def test_rhs_matches_reference(name, form):
    """rhs at y = [q, momenta(q, qd)] == [qd, pm'_reference]; momenta, velocities, M: rel. 1e-10."""
    m = bundled_h(name, form)
    assert m.hamiltonian and m.form == form
    report = check_against_reference(m, samples=8, seed=5)
    assert report.kind == "hamiltonian"
    assert report.ok(RTOL), report.text()


@pytest.mark.parametrize("name,form", cases())
def test_rhs_matches_composite_lagrangian(bundled, name, form):
    """pm' of the Hamiltonian module == M q'' + D pm with q'', M of form="composite" (rel. 1e-10)."""
    m, lag = bundled_h(name, form), bundled(name)
    assert tuple(lag.coordinates) == tuple(m.coordinates)
    for q, qd, t, p in random_states(m, 5, seed=7):
        pm = np.empty(m.n)
        m.module.momenta(t, q, qd, p, pm)
        yd = np.empty(2 * m.n)
        m.module.rhs(t, np.concatenate([q, pm]), p, yd)
        a, M = np.empty(m.n), np.empty(m.n * m.n)
        lag.module.qdd(t, q, qd, p, a)
        lag.module.mass_matrix(t, q, p, M)
        expected = M.reshape(m.n, m.n) @ a + momentum_derivative_fd(m, q, qd, t, p)
        assert rel(yd[:m.n], qd) < RTOL
        assert rel(yd[m.n:], expected) < RTOL, (yd[m.n:], expected)
        # pm = M q' + B^T M v_hat (1.56): the momenta are the Lagrangian mass matrix times q' ...
        pm0 = np.empty(m.n)
        m.module.momenta(t, q, 0 * qd, p, pm0)            # ... plus the driven part
        assert rel(pm, M.reshape(m.n, m.n) @ qd + pm0) < RTOL


@pytest.mark.parametrize("name,form", cases())
def test_state_conversion_round_trip(name, form):
    m = bundled_h(name, form)
    for q, qd, t, _ in random_states(m, 5, seed=9):
        y = m.to_state(q, qd, t)
        q2, qd2 = m.from_state(y, t)
        np.testing.assert_array_equal(q2, q)
        assert rel(qd2, qd) < RTOL
        out = np.empty(m.n)
        m.module.velocities(t, q, y[m.n:], m.param_vector(), out)
        assert rel(out, qd) < RTOL


# ------------------------------------------------------------------ a joint basis that turns with t
RHEONOMIC = {
    "name": "rheonomic_basis",
    "parameters": {"Omega": 1.3, "w": 2.0, "g": 9.81},
    "gravity": [0, "-g", 0],
    "bodies": [
        {"name": "b1", "parent": "ground", "mass": 2.0, "com": [0.1, 0.05, -0.2],
         "inertia": [0.05, 0.04, 0.03, 0.001, 0.002, 0.003],
         "joint": [{"rotate": "z", "q": "psi"}, {"rotate": "y", "by": "0.5*sin(w*t)"}, {"translate": [0.3, 0, 0]},
                   {"rotate": "x", "q": "a"}]},
        {"name": "b2", "parent": "b1", "mass": 1.0, "com": [0, 0.1, -0.3], "inertia": [0.02, 0.03, 0.01],
         "joint": [{"translate": [0, 0, -0.4]}, {"rotate": "x", "q": "b"}, {"rotate": "z", "by": "Omega*t"},
                   {"translate": "y", "q": "s"}, {"translate": [0.05, 0, 0]}]},
    ],
}


@pytest.mark.parametrize("form", [pytest.param(f, marks=[] if f in ("hamilton-composite", "hamilton-ltdl")
                                               else [pytest.mark.slow]) for f in FORMS])
def test_time_dependent_joint_basis(form, tmp_path_factory):
    """A_i(q_i, t) turned by driven rotations between coordinates: A'_i has a d/dt part and
    v_hat^r != 0 inside a joint; the RHS still equals the reference."""
    path = tmp_path_factory.getbasetemp() / "rheonomic_basis.yaml"
    if not path.exists():
        write_model(path.parent, RHEONOMIC, path.name)
    m = load(path, form)
    report = check_against_reference(m, samples=8, seed=21)
    assert report.ok(RTOL), report.text()


# ------------------------------------------------------------------ trajectories
@pytest.mark.parametrize("name,form", cases())
def test_trajectory_matches_lagrangian(bundled, name, form):
    """1 s of simulate: Hamiltonian vs composite, to 1e-7 of the run's largest |q|, |q'|."""
    m, lag = bundled_h(name, form), bundled(name)
    rh = dynamica.simulate(m, t_end=1.0, rtol=1e-10, atol=1e-12)
    rl = dynamica.simulate(lag, t_end=1.0, rtol=1e-10, atol=1e-12)
    np.testing.assert_array_equal(rh.t, rl.t)
    assert "momenta" in rh.info
    sq = max(1.0, np.abs(rl.q).max())
    sv = max(1.0, np.abs(rl.qd).max())
    assert np.abs(rh.q - rl.q).max() < TRAJ_RTOL * sq
    assert np.abs(rh.qd - rl.qd).max() < TRAJ_RTOL * sv


def test_energy_conserved_along_hamiltonian_run():
    """double pendulum (conservative): the Hamiltonian HDEC run keeps the energy to 1e-8."""
    from dynamica.runtime.reference.numeric import NumericReference
    m = bundled_h("double_pendulum", "hamilton-ltdl")
    ref = NumericReference(m.spec)
    r = dynamica.simulate(m, t_end=1.0, rtol=1e-10, atol=1e-12, q0=[1.0, -0.5], qd0=[0.5, 2.0])
    E = [ref.energy(q, qd) for q, qd in zip(r.q, r.qd)]
    assert np.ptp(E) < 1e-8 * max(1.0, abs(E[0]))


# ------------------------------------------------------------------ the Dynamica90 governor example
def _governor_seed_order(tmp_path):
    """governor.yaml with body2 turned about x by alpha2 first, then about y by beta2 (the
    order of the printed G_2 and A_2 of the Dynamica90 example)."""
    d = yaml.safe_load((MODELS / "governor.yaml").read_text())
    d["name"] = "governor_seed_order"
    b2 = next(b for b in d["bodies"] if b["name"] == "body2")
    b2["joint"] = [{"translate": "y", "q": "y2"}, {"rotate": "x", "q": "alpha2"}, {"rotate": "y", "q": "beta2"}]
    return write_model(tmp_path, d, "governor_seed_order.yaml")


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _seed002(q, qd, prm):
    """The Dynamica90 governor example: (p, p') by (12) from the printed matrices, numpy only.

    q = (gamma1, y2, alpha2, beta2). Printed typos corrected: A'_2's (5,3) entry is 0, its
    column 2 is (0, 0, 0, -b' s_b, 0, b' c_b) (printed with s_a, c_a); M_2's first row lacks a 0.
    """
    g1, y2, a, b = q
    dg, dy, da, db = qd
    m1, m2, yc1, zc2 = prm["m1"], prm["m2"], prm["yc1"], prm["zc2"]
    ca, sa, cb, sb = np.cos(a), np.sin(a), np.cos(b), np.sin(b)
    # G_1 (a turn about z by gamma1) and rho_1 = 0 do not enter: body 1 is the root, v_1 = A_1 gamma1'
    G2 = np.array([[cb, sa * sb, -ca * sb], [0, ca, sa], [sb, -sa * cb, ca * cb]])
    rho2 = np.array([0, y2, 0.0])

    def C(G, rho):
        out = np.zeros((6, 6))
        out[:3, :3], out[:3, 3:], out[3:, 3:] = G, -G @ _skew(rho), G
        return out

    def Mb(m, rc, J):
        out = np.zeros((6, 6))
        out[:3, :3], out[:3, 3:], out[3:, :3], out[3:, 3:] = m * np.eye(3), -m * _skew(rc), m * _skew(rc), np.diag(J)
        return out
    A1 = np.array([0, 0, 0, 0, 0, 1.0]).reshape(6, 1)
    A2 = np.array([[sa * sb, 0, 0], [ca, 0, 0], [-sa * cb, 0, 0], [0, cb, 0], [0, 0, 1], [0, sb, 0]])
    A2d = np.array([[da * ca * sb + db * sa * cb, 0, 0], [-da * sa, 0, 0], [-da * ca * cb + db * sa * sb, 0, 0],
                    [0, -db * sb, 0], [0, 0, 0], [0, db * cb, 0]])
    M1 = Mb(m1, [0, yc1, 0], [prm["J1x"], prm["J1y"], prm["J1z"]])
    M2 = Mb(m2, [0, 0, zc2], [prm["J2x"], prm["J2y"], prm["J2z"]])
    C2 = C(G2, rho2)
    v1 = A1[:, 0] * dg
    v2 = C2 @ v1 + A2 @ np.array([dy, da, db])
    mu2 = M2 @ v2                                   # mu = T^T M v (12)
    mu1 = M1 @ v1 + C2.T @ mu2

    def Omega(v):
        out = np.zeros((6, 6))
        out[:3, :3], out[3:, :3], out[3:, 3:] = _skew(v[3:]), _skew(v[:3]), _skew(v[3:])
        return out
    p = np.concatenate([A1.T @ mu1, A2.T @ mu2])
    Q = np.array([prm["k"] * (prm["omega0"] - dg), prm["c"] * (prm["y20"] - y2),
                  prm["g"] * m2 * zc2 * sa * cb, prm["g"] * m2 * zc2 * ca * sb])
    pd = np.concatenate([-A1.T @ Omega(v1) @ mu1, (A2d.T - A2.T @ Omega(v2)) @ mu2]) + Q
    B = np.zeros((12, 4))
    B[:6, :1], B[6:, :1], B[6:, 1:] = A1, C2 @ A1, A2
    Mbig = np.zeros((12, 12))
    Mbig[:6, :6], Mbig[6:, 6:] = M1, M2
    return p, pd, B.T @ Mbig @ B


def test_seed002_governor_example(tmp_path):
    m = load(_governor_seed_order(tmp_path), "hamilton-composite")
    assert m.coordinates == ("gamma1", "y2", "alpha2", "beta2")
    rng = np.random.default_rng(2)
    for _ in range(5):
        q, qd, t = rng.uniform(-1, 1, 4), rng.uniform(-3, 3, 4), rng.uniform(0, 2)
        q[1] = rng.uniform(0.1, 0.4)
        prm = dict(m.parameters)
        p, pd, M = _seed002(q, qd, prm)
        y = m.to_state(q, qd, t)
        assert rel(y[4:], p) < RTOL
        assert rel(m.mass_matrix(q, t), M) < RTOL
        yd = m.rhs(t, y)
        assert rel(yd[:4], qd) < RTOL
        assert rel(yd[4:], pd) < RTOL, (yd[4:], pd)


# ------------------------------------------------------------------ random trees (pin_trees)
TREES = {
    # name -> (kind, bodies, joint tokens, seed, keywords, forms run by default)
    "mixed6_custom_welded": ("mixed", 6, (1, 2, "custom", "welded"), 301, {},
                             {"hamilton-articulated", "hamilton-lagrange1"}),
    "chain8_123": ("chain", 8, (1, 2, 3), 102, {}, set()),
    "star9_free_base": ("star", 9, (1, 2, 3), 103, {"base_joint": "free"}, set()),
    "mixed10_custom_welded": ("mixed", 10, (1, 2, 3, "custom", "welded"), 104, {}, set()),
}
TREE_CASES = [pytest.param(t, f, id=f"{t}-{f}", marks=[] if f in TREES[t][5] else [pytest.mark.slow])
              for t in TREES for f in FORMS]
_TREES = {}


def tree_model(name, form, tmp_path_factory):
    if name not in _TREES:
        kind, n, tokens, seed, kw, _ = TREES[name]
        tree = random_tree(kind, n, tokens, np.random.default_rng(seed), name=name, **kw)
        path = tmp_path_factory.mktemp("ham_trees") / f"{name}.yaml"
        write_yaml(tree, path)
        _TREES[name] = (tree, path)
    tree, path = _TREES[name]
    return tree, load(path, form)


@pytest.mark.parametrize("name,form", TREE_CASES)
def test_random_tree_matches_reference(name, form, tmp_path_factory):
    _, m = tree_model(name, form, tmp_path_factory)
    report = check_against_reference(m, samples=6, seed=13)
    assert report.ok(RTOL), report.text()


@pytest.mark.parametrize("name,form", TREE_CASES)
def test_random_tree_matches_pinocchio(name, form, tmp_path_factory):
    pin = pytest.importorskip("pinocchio")
    tree, m = tree_model(name, form, tmp_path_factory)
    order = list(m.coordinates)
    rng = np.random.default_rng(17)
    for k in range(5):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        pmodel, names = tree.to_pinocchio(tree.param_values(ov))
        data = pmodel.createData()
        idx = [names.index(c) for c in order]
        qv, vv = np.array([q[c] for c in names]), np.array([qd[c] for c in names])
        def crba(x):
            M = pin.crba(pmodel, data, x).copy()
            return np.triu(M) + np.triu(M, 1).T

        def Mdot_v(h):
            return (crba(qv + h * vv) - crba(qv - h * vv)) @ vv / (2 * h)
        M = crba(qv)
        a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv)).copy()
        pm_ref = (M @ vv)[idx]
        pmd_ref = (M @ a + (4 * Mdot_v(5e-4) - Mdot_v(1e-3)) / 3)[idx]
        y = m.to_state(qv[idx], vv[idx], 0.0, params=ov or None)
        assert rel(y[m.n:], pm_ref) < RTOL, f"state {k}: momenta"
        yd = m.rhs(0.0, y, params=ov or None)
        assert rel(yd[:m.n], vv[idx]) < RTOL, f"state {k}: qd"
        assert rel(yd[m.n:], pmd_ref) < PIN_PMD_RTOL, f"state {k}: pm' {rel(yd[m.n:], pmd_ref):.2e}"
