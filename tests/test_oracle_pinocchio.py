"""dynamica against pinocchio on random rigid-body trees (chains, stars, mixed; revolute,
prismatic, universal, spherical, free, custom multi-transform and welded joints; inertias
with products of inertia; parameters overridden at run time).

Two layers, so that a failure can be localized:
  * ``test_builder_*`` check the pinocchio oracle itself against an independent numpy
    composition of the YAML transforms (placements, kinetic energy, gravity) and pinocchio's
    own aba against crba/rnea.  They do not need dynamica.
  * ``test_qdd_*`` / ``test_mass_matrix_*`` compile each random model once with
    ``dynamica.load`` and compare, at random states and parameter values, ``model.qdd`` with
    ``pin.aba(tau=0)`` and ``model.mass_matrix`` with ``pin.crba``, mapped by coordinate name.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

from helpers import rel_err  # noqa: E402
from oracles.pin_trees import (  # noqa: E402
    random_tree,
    write_yaml,
    yaml_body_mass_props,
    yaml_body_placements,
    yaml_gravity,
    yaml_kinetic_energy,
)

RTOL = 1e-10
N_STATES = 10

# name -> (kind, n_bodies, joint tokens, seed, keyword arguments).  Each is one compiled model.
CASES = {
    "chain7_rev_prism": ("chain", 7, (1,), 101, {"prismatic": 0.3}),
    "chain8_123": ("chain", 8, (1, 2, 3), 102, {}),
    "star9_free_base": ("star", 9, (1, 2, 3), 103, {"base_joint": "free"}),
    "mixed10_custom_welded": ("mixed", 10, (1, 2, 3, "custom", "welded"), 104, {}),
    "mixed12_numeric": ("mixed", 12, (1, 2, 3, "custom"), 105, {"parametric": False}),
    "chain20_123": ("chain", 20, (1, 2, 3), 106, {}),
    "star20_custom": ("star", 20, (1, 2, 3, "custom"), 107, {}),
    "mixed20_all": ("mixed", 20, (1, 2, 3, "custom", "welded"), 108, {}),
}
SLOW = {"chain20_123", "star20_custom", "mixed20_all"}
CASE_PARAMS = [pytest.param(c, id=c, marks=[pytest.mark.slow] if c in SLOW else [])
               for c in CASES]


def make_tree(case):
    kind, n, tokens, seed, kw = CASES[case]
    return random_tree(kind, n, tokens, np.random.default_rng(seed), name=case, **kw)


def states_and_params(tree, seed, n=N_STATES):
    """Fixed random (q, qd, overrides) triples; the first uses the default parameters."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        q, qd = tree.random_state(rng)
        overrides = {} if k == 0 else tree.random_overrides(rng)
        out.append((q, qd, overrides))
    return out


def pin_answers(tree, q, qd, overrides):
    """pinocchio's (qdd, M) as dicts/arrays in pinocchio's coordinate order + that order."""
    pmodel, names = tree.to_pinocchio(tree.param_values(overrides))
    data = pmodel.createData()
    qv = np.array([q[c] for c in names])
    vv = np.array([qd[c] for c in names])
    a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv)).copy()
    M = pin.crba(pmodel, data, qv).copy()
    M = np.triu(M) + np.triu(M, 1).T
    return names, a, M


# ------------------------------------------------------------------------------------------
# layer 1: the pinocchio builder against numpy and against itself

@pytest.fixture(scope="module", params=CASE_PARAMS)
def tree_yaml(request, tmp_path_factory):
    """(case, tree, YAML dict read back from the written file, path)."""
    import yaml

    case = request.param
    tree = make_tree(case)
    path = tmp_path_factory.mktemp("pin_oracle") / f"{case}.yaml"
    write_yaml(tree, path)
    with open(path) as f:
        mdict = yaml.safe_load(f)
    return case, tree, mdict, path


def test_builder_yaml_roundtrip_and_shape(tree_yaml):
    case, tree, mdict, _ = tree_yaml
    assert mdict == tree.model_dict
    names = [b["name"] for b in mdict["bodies"]]
    tree_order = [b.name for b in tree.bodies]
    assert sorted(names) == sorted(tree_order) and len(set(names)) == len(names)
    if len(names) > 3:
        assert names != tree_order, "bodies should be listed shuffled"
    pmodel, coords = tree.to_pinocchio()
    assert pmodel.nq == pmodel.nv == len(coords) == len(set(coords))


def test_builder_placements_match_numpy(tree_yaml):
    """Frame of every body from pinocchio (oMi * body placement) == numpy composition of the
    YAML transforms (shorthands expanded per docs/model_format.md)."""
    case, tree, mdict, _ = tree_yaml
    for q, qd, ov in states_and_params(tree, 11, 5):
        values = tree.param_values(ov)
        pmodel, names = tree.to_pinocchio(values)
        data = pmodel.createData()
        pin.forwardKinematics(pmodel, data, np.array([q[c] for c in names]))
        ref = yaml_body_placements(mdict, values, q)
        for b in tree.bodies:
            jid, P = tree.pin_attach[b.name]
            T = (data.oMi[jid] * P).homogeneous
            np.testing.assert_allclose(T, ref[b.name], rtol=0, atol=1e-12,
                                       err_msg=f"{case}: body {b.name} ({b.jtype})")


def _numpy_potential(mdict, values, q):
    props = yaml_body_mass_props(mdict, values)
    g = yaml_gravity(mdict, values)
    T = yaml_body_placements(mdict, values, q)
    return -sum(m * g @ (T[n][:3, 3] + T[n][:3, :3] @ c) for n, (m, c, _) in props.items())


def test_builder_energy_and_gravity_match_numpy(tree_yaml):
    """0.5 v'Mv (pinocchio crba) == kinetic energy of the YAML bodies (numpy, finite
    differences); pinocchio's generalized gravity == gradient of -sum m g.c (numpy)."""
    case, tree, mdict, _ = tree_yaml
    for k, (q, qd, ov) in enumerate(states_and_params(tree, 12, 4)):
        values = tree.param_values(ov)
        pmodel, names = tree.to_pinocchio(values)
        data = pmodel.createData()
        qv = np.array([q[c] for c in names])
        vv = np.array([qd[c] for c in names])
        M = pin.crba(pmodel, data, qv)
        M = np.triu(M) + np.triu(M, 1).T
        ke = yaml_kinetic_energy(mdict, values, q, qd)
        assert 0.5 * vv @ M @ vv == pytest.approx(ke, rel=1e-7), f"{case} state {k}"
        grav = pin.computeGeneralizedGravity(pmodel, data, qv)
        h = 1e-6
        num = []
        for c in names:
            qp, qm = dict(q), dict(q)
            qp[c] += h
            qm[c] -= h
            num.append((_numpy_potential(mdict, values, qp)
                        - _numpy_potential(mdict, values, qm)) / (2 * h))
        np.testing.assert_allclose(grav, num, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(num).max()),
                                   err_msg=f"{case} state {k}")


def test_builder_aba_equals_crba_rnea(tree_yaml):
    """pinocchio self-consistency: aba(q, v, 0) solves M qdd = -nle(q, v)."""
    case, tree, _, _ = tree_yaml
    for k, (q, qd, ov) in enumerate(states_and_params(tree, 13, 5)):
        pmodel, names = tree.to_pinocchio(tree.param_values(ov))
        data = pmodel.createData()
        qv = np.array([q[c] for c in names])
        vv = np.array([qd[c] for c in names])
        a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv)).copy()
        M = pin.crba(pmodel, data, qv).copy()
        M = np.triu(M) + np.triu(M, 1).T
        nle = pin.rnea(pmodel, data, qv, vv, np.zeros(pmodel.nv)).copy()
        sol = np.linalg.solve(M, -nle)
        assert rel_err(a, sol) < 1e-9, f"{case} state {k}: {rel_err(a, sol):.3e}"
        assert np.all(np.linalg.eigvalsh(M) > 0), f"{case} state {k}: M not positive definite"


# ------------------------------------------------------------------------------------------
# layer 2: dynamica against pinocchio

@pytest.fixture(scope="module", params=CASE_PARAMS)
def compiled(request, tmp_path_factory):
    """(case, tree, dynamica model, YAML path, compile seconds), compiled once per case."""
    try:
        import dynamica
    except ModuleNotFoundError as e:  # the package not installed yet: skip, never hide bugs
        if e.name != "dynamica":
            raise
        pytest.skip("dynamica is not importable")
    case = request.param
    tree = make_tree(case)
    path = tmp_path_factory.mktemp("pin_oracle_dyn") / f"{case}.yaml"
    write_yaml(tree, path)
    t0 = time.perf_counter()
    model = dynamica.load(str(path))
    dt = time.perf_counter() - t0
    print(f"\n[{case}] dynamica.load: {dt:.1f} s, n = {model.n}, form = {model.form}")
    return case, tree, model, path, dt


def test_coordinates_and_parameters(compiled):
    case, tree, model, path, _ = compiled
    assert sorted(model.coordinates) == sorted(tree.coordinates)
    assert model.n == len(tree.coordinates)
    for name, v in tree.defaults.items():
        assert name in model.parameters, f"{case}: parameter {name} missing ({path})"
        np.testing.assert_allclose(np.asarray(model.parameters[name], dtype=float),
                                   np.asarray(v, dtype=float), rtol=0, atol=0)


def _failure(case, path, k, q, qd, ov, what, dyn, ref, err):
    np.set_printoptions(precision=17, linewidth=200)
    return (f"{case} ({path}) state {k}: {what} rel. error {err:.3e} > {RTOL:g}\n"
            f"q = {q!r}\nqd = {qd!r}\nparams = {ov!r}\n"
            f"dynamica = {np.asarray(dyn)!r}\npinocchio = {np.asarray(ref)!r}")


def test_qdd_matches_aba(compiled):
    case, tree, model, path, _ = compiled
    order = list(model.coordinates)
    worst = 0.0
    for k, (q, qd, ov) in enumerate(states_and_params(tree, 21)):
        names, a, _ = pin_answers(tree, q, qd, ov)
        ref = a[[names.index(c) for c in order]]
        dyn = model.qdd([q[c] for c in order], [qd[c] for c in order], 0.0,
                        params=ov or None)
        err = rel_err(dyn, ref)
        worst = max(worst, err)
        assert err <= RTOL, _failure(case, path, k, q, qd, ov, "qdd", dyn, ref, err)
    print(f"[{case}] qdd worst rel. error {worst:.2e}")


def test_mass_matrix_matches_crba(compiled):
    case, tree, model, path, _ = compiled
    order = list(model.coordinates)
    worst = 0.0
    for k, (q, qd, ov) in enumerate(states_and_params(tree, 22)):
        names, _, M = pin_answers(tree, q, qd, ov)
        idx = [names.index(c) for c in order]
        ref = M[np.ix_(idx, idx)]
        dyn = model.mass_matrix([q[c] for c in order], 0.0, params=ov or None)
        err = rel_err(dyn, ref)
        worst = max(worst, err)
        assert err <= RTOL, _failure(case, path, k, q, qd, ov, "mass matrix", dyn, ref, err)
    print(f"[{case}] mass matrix worst rel. error {worst:.2e}")
