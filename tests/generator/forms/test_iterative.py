"""The iterative forms ITR-M and ITR-G (dissertation 2.3): quasi-Newton solve (2.29) of
M q'' = Q with the inverse estimate kept in the compiled module between calls.

  * q'' equals Pinocchio's aba and the composite form to 1e-10 relative, both on a sequence
    of nearby states (the iteration proper) and at unrelated random states and parameters
    (where the check of (2.43) sends the call to (2.33) or to the direct solve);
  * finite convergence (2.3.2): starting from the exact inverse at q_a, the solve at q_b
    takes at most rank(M(q_b) - M(q_a)) + 1 iterations;
  * along trajectories of `dynamica.simulate` the mean iteration count stays small;
  * the module's controls itr_stats / itr_reset / itr_settings / itr_inverse, and the
    fallback paths ((2.33) and the direct solve).

Tolerance: the default stopping rule (templates/native/dynamica_itr.h) ends an iteration when the
correction |H r| <= 1e-12 |x| + 1e-12 (or (2.28) with eps = 1e-15 |Q|); the measured errors
are ~1e-13.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.generator.forms import resolve

from oracles.pin_trees import random_tree, write_yaml

RTOL = 1e-10
FORMS = ("iterative-m", "iterative-g")


def rel(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1.0, np.linalg.norm(b)))


def chain_dict(N, L=0.3):
    """A spatial pendulum chain of N uniform links, revolute joints about x and y in turn."""
    bodies = []
    for k in range(1, N + 1):
        joint = {"type": "revolute", "axis": "x" if k % 2 else "y", "q": f"q{k}"}
        if k > 1:
            joint["offset"] = [0, 0, -L]
        bodies.append({"name": f"l{k}", "parent": "ground" if k == 1 else f"l{k - 1}", "joint": joint,
                       "mass": 1.0, "com": [0, 0, -L / 2],
                       "inertia": [L * L / 12 + 1e-3, L * L / 12 + 2e-3, 1e-3]})
    return {"name": f"itr_chain{N}", "gravity": [0, 0, -9.81], "bodies": bodies,
            "initial": {f"q{k}": float(0.4 * np.sin(1.3 * k)) for k in range(1, N + 1)}}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A random mixed tree (1-, 2-, 3-DOF, custom and welded joints) and its modules."""
    t = random_tree("mixed", 8, (1, 2, 3, "custom", "welded"), np.random.default_rng(602), name="itr_mixed8")
    path = tmp_path_factory.mktemp("itr") / "itr_mixed8.yaml"
    write_yaml(t, path)
    models = {f: dynamica.load(str(path), form=f) for f in FORMS + ("composite",)}
    return t, models


def pin_answer(tree, q, qd, overrides, order):
    pin = pytest.importorskip("pinocchio")
    pmodel, names = tree.to_pinocchio(tree.param_values(overrides))
    data = pmodel.createData()
    qv = np.array([q[c] for c in names])
    vv = np.array([qd[c] for c in names])
    a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv))
    M = pin.crba(pmodel, data, qv)
    M = np.triu(M) + np.triu(M, 1).T
    idx = [names.index(c) for c in order]
    return a[idx], M[np.ix_(idx, idx)]


def vec(d, order):
    return np.array([d[c] for c in order])


# ------------------------------------------------------------------------------------ registry
def test_names_resolve():
    assert resolve("ITR") == resolve("ITR-M") == resolve("iterative") == "iterative-m"
    assert resolve("ITR-G") == "iterative-g"


def test_generated_kernels_and_operation_counts():
    """ITR-M multiplies by the structural nonzeros of M (2.53); ITR-G's residual (2.54)-(2.55)
    grows linearly with the chain length while ITR-M's grows quadratically."""
    import tempfile

    from dynamica.generator.spec.model import load_model
    counts = {}
    for N in (4, 8, 12):
        spec = chain_dict(N)
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "c.yaml")
            with open(p, "w") as f:
                yaml.safe_dump(spec, f)
            for form in FORMS:
                g = dynamica.generate(load_model(p), form=form)
                ops = {k.name: k.op_count() for k in g.module_ir.kernels}
                assert ops["dynamics"]["total"] == 0            # no closed-form q''
                assert g.module_ir.entries == "iterative"
                counts[form, N] = ops
                if form == "iterative-m":
                    assert ops["itr_mx"]["mul"] <= g.equations.info["mass_nonzeros"] <= N * N
                else:
                    assert "mass" in ops                        # first inverse, fallback, mass_matrix
                headers = dict(g.bundle.files)
                assert '#include "dynamica_itr.h"' in headers[f"itr_chain{N}_{form.replace('-', '_')}_kernels.h"]
                assert "dynamica_itr.h" in headers
    g = [counts["iterative-g", N]["itr_mx"]["total"] for N in (4, 8, 12)]
    m = [counts["iterative-m", N]["itr_mx"]["total"] for N in (4, 8, 12)]
    assert abs((g[2] - g[1]) - (g[1] - g[0])) <= 0.05 * (g[1] - g[0])      # linear in N
    assert (m[2] - m[1]) - (m[1] - m[0]) >= 0.5 * (m[1] - m[0])            # quadratic in N


# ------------------------------------------------------------------------------------ accuracy
@pytest.mark.parametrize("form", FORMS)
def test_qdd_nearby_states_vs_pinocchio_and_composite(tree, form):
    """A path of nearby states: the calls after the first iterate (2.29), and agree to 1e-10."""
    t, models = tree
    m, c = models[form], models["composite"]
    order = list(m.coordinates)
    rng = np.random.default_rng(7)
    q, qd = t.random_state(rng)
    q, qd = vec(q, order), vec(qd, order)
    m.module.itr_reset()
    worst = 0.0
    for k in range(25):
        a = m.qdd(q, qd)
        b, M = pin_answer(t, dict(zip(order, q)), dict(zip(order, qd)), {}, order)
        worst = max(worst, rel(a, b), rel(a, c.qdd(q, qd)))
        if k % 8 == 0:
            worst = max(worst, rel(m.mass_matrix(q), M))
        q, qd = q + 2e-3 * qd, qd + 2e-3 * b
    st = m.module.itr_stats()
    assert worst <= RTOL, f"{form}: worst relative error {worst:.2e}"
    assert st["calls"] == 25 and st["inits"] == 1 and st["directs"] == 1 and st["fallbacks"] == 0
    assert 25 <= st["iterations"] <= 24 * 8


@pytest.mark.parametrize("form", FORMS)
def test_qdd_random_states_and_parameters_vs_pinocchio(tree, form):
    """Unrelated states and parameter values: every call still agrees to 1e-10."""
    t, models = tree
    m, c = models[form], models["composite"]
    order = list(m.coordinates)
    rng = np.random.default_rng(11)
    worst = 0.0
    for k in range(8):
        q, qd = t.random_state(rng)
        ov = {} if k == 0 else t.random_overrides(rng)
        b, M = pin_answer(t, q, qd, ov, order)
        q, qd = vec(q, order), vec(qd, order)
        a = m.qdd(q, qd, params=ov or None)
        worst = max(worst, rel(a, b), rel(a, c.qdd(q, qd, params=ov or None)),
                    rel(m.mass_matrix(q, params=ov or None), M))
    assert worst <= RTOL, f"{form}: worst relative error {worst:.2e}"


# ------------------------------------------------------------------------------------ 2.3.2
@pytest.mark.parametrize("form", FORMS)
def test_finite_convergence_within_rank_plus_one(tree, form):
    """H_0 = M(q_a)^{-1} exactly (a direct solve at q_a), then q_b differs in one coordinate:
    the solve at q_b takes at most rank(Delta M) + 1 iterations, for (2.29) and (2.33) alike."""
    t, models = tree
    m = models[form]
    order = list(m.coordinates)
    rng = np.random.default_rng(5)
    q0, qd0 = t.random_state(rng)
    q0, qd0 = vec(q0, order), vec(qd0, order)
    M0 = m.mass_matrix(q0)
    seen = []
    for j in range(m.n):
        q1 = q0.copy()
        q1[j] += 0.4
        M1 = m.mass_matrix(q1)
        sv = np.linalg.svd(M1 - M0, compute_uv=False)
        rank = int((sv > 1e-10 * np.linalg.norm(M0, 2)).sum())
        m.module.itr_reset()
        m.qdd(q0, qd0)
        a = m.qdd(q1, qd0)
        st = m.module.itr_stats()
        assert st["last_method"] in ("2.29", "2.33")
        assert st["last_iterations"] <= rank + 1, (j, rank, st)
        assert rel(a, models["composite"].qdd(q1, qd0)) <= RTOL
        seen.append((rank, st["last_iterations"]))
    assert any(r < m.n - 1 for r, _ in seen)          # low-rank cases occur
    assert (0, 0) in seen                              # M independent of the first coordinate


@pytest.mark.parametrize("form", FORMS)
def test_finite_convergence_parameter_change(tree, form):
    """A new mass of one body at the same q: Delta M of rank <= 6, convergence within rank + 1."""
    t, models = tree
    m = models[form]
    name = next(k for k, (kind, _) in t.param_kinds.items() if kind == "mass")
    q, qd = t.random_state(np.random.default_rng(3))
    q, qd = vec(q, m.coordinates), vec(qd, m.coordinates)
    ov = {name: 1.7 * m.parameters[name]}
    dM = m.mass_matrix(q, params=ov) - m.mass_matrix(q)
    rank = int((np.linalg.svd(dM, compute_uv=False) > 1e-10 * np.linalg.norm(m.mass_matrix(q), 2)).sum())
    m.module.itr_reset()
    m.qdd(q, qd)
    a = m.qdd(q, qd, params=ov)
    st = m.module.itr_stats()
    assert 1 <= rank <= 6 and st["last_iterations"] <= rank + 1, (rank, st)
    assert rel(a, models["composite"].qdd(q, qd, params=ov)) <= RTOL


# ------------------------------------------------------------------------------------ controls
def test_stats_reset_settings_inverse(tree):
    t, models = tree
    m = models["iterative-g"]
    mod = m.module
    q, qd = t.random_state(np.random.default_rng(2))
    q, qd = vec(q, m.coordinates), vec(qd, m.coordinates)
    mod.itr_reset()
    st = mod.itr_stats()
    assert st["calls"] == st["iterations"] == st["directs"] == 0 and not st["have_inverse"]
    H = np.empty(m.n * m.n)
    assert mod.itr_inverse(H) is False and np.isnan(H).all()
    m.qdd(q, qd)
    st = mod.itr_stats()
    assert (st["calls"], st["inits"], st["directs"], st["last_method"]) == (1, 1, 1, "init")
    assert mod.itr_inverse(H) is True
    Minv = np.linalg.inv(m.mass_matrix(q))
    assert rel(H.reshape(m.n, m.n), Minv) <= 1e-11
    assert np.array_equal(H.reshape(m.n, m.n), H.reshape(m.n, m.n).T)
    m.qdd(q + 1e-3, qd)
    st = mod.itr_stats()
    assert st["calls"] == 2 and st["last_method"] == "2.29" and st["last_iterations"] >= 1
    assert st["iterations"] == st["last_iterations"] and 0 < st["last_rho"] < 1
    mod.itr_reset(inverse=False)                       # counters only: the inverse stays
    m.qdd(q + 2e-3, qd)
    assert mod.itr_stats()["inits"] == 0 and mod.itr_stats()["calls"] == 1
    mod.itr_reset(stats=False)                         # inverse only: the counters stay
    m.qdd(q, qd)
    assert mod.itr_stats()["calls"] == 2 and mod.itr_stats()["last_method"] == "init"
    old = mod.itr_settings()
    assert set(old) == {"rtol", "atol", "eps_abs", "eps_rel", "rho_max", "max_iter", "max_iter_pb"}
    try:
        assert mod.itr_settings(rtol=1e-9, max_iter=3)["max_iter"] == 3
        assert mod.itr_settings()["rtol"] == 1e-9
    finally:
        mod.itr_settings(**old)
    assert mod.itr_settings() == old
    with pytest.raises(KeyError):
        mod.itr_settings(tolerance=1.0)


@pytest.mark.parametrize("form", FORMS)
def test_fallback_paths(tree, form):
    """A big jump in q violates (2.43): (2.33) takes over; with (2.29) and (2.33) both denied
    iterations, the direct solve; with (2.29) denied only, (2.33) solves. All to 1e-10."""
    t, models = tree
    m, c = models[form], models["composite"]
    mod = m.module
    rng = np.random.default_rng(13)
    q, qd = t.random_state(rng)
    q, qd = vec(q, m.coordinates), vec(qd, m.coordinates)
    old = mod.itr_settings()
    try:
        mod.itr_reset()
        m.qdd(q, qd)
        q2 = q + 1.5 * np.sign(np.sin(np.arange(m.n) + 1.0))   # big jump
        a = m.qdd(q2, qd)
        st = mod.itr_stats()
        assert st["last_rho"] >= 1 and st["fallbacks"] == 1 and st["last_method"] in ("2.33", "direct")
        assert rel(a, c.qdd(q2, qd)) <= RTOL
        mod.itr_settings(max_iter=0, max_iter_pb=0)
        a = m.qdd(q2 + 1e-3, qd)
        st = mod.itr_stats()
        assert st["last_method"] == "direct" and st["directs"] >= 2 and st["fallbacks"] == 2
        assert rel(a, c.qdd(q2 + 1e-3, qd)) <= RTOL
        mod.itr_settings(max_iter=0, max_iter_pb=-1)
        pb = st["pb_calls"]
        a = m.qdd(q2 + 2e-3, qd)
        st = mod.itr_stats()
        assert st["last_method"] == "2.33" and st["pb_calls"] == pb + 1 and st["pb_iterations"] >= 1
        assert rel(a, c.qdd(q2 + 2e-3, qd)) <= RTOL
    finally:
        mod.itr_settings(**old)


def test_nonfinite_input_does_not_poison_the_inverse(tree):
    t, models = tree
    m = models["iterative-m"]
    q, qd = t.random_state(np.random.default_rng(4))
    q, qd = vec(q, m.coordinates), vec(qd, m.coordinates)
    m.qdd(q, qd)
    bad = qd.copy()
    bad[0] = np.nan
    assert np.isnan(m.qdd(q, bad)).all()
    assert m.module.itr_stats()["have_inverse"]
    assert rel(m.qdd(q, qd), models["composite"].qdd(q, qd)) <= RTOL


# ------------------------------------------------------------------------------------ trajectories
def trajectory_stats(tmp_path, N, t_end=1.0):
    path = tmp_path / f"itr_chain{N}.yaml"
    path.write_text(yaml.safe_dump(chain_dict(N), sort_keys=False))
    ref = dynamica.simulate(dynamica.load(str(path), form="composite"), t_end=t_end, output_step=0.1,
                            rtol=1e-8, atol=1e-10)
    out = {}
    for form in FORMS:
        m = dynamica.load(str(path), form=form)
        m.module.itr_reset()
        res = dynamica.simulate(m, t_end=t_end, output_step=0.1, rtol=1e-8, atol=1e-10)
        st = m.module.itr_stats()
        out[form] = (st["iterations"] / st["calls"], st, float(np.abs(res.q - ref.q).max()))
    return out


def _check_trajectory(out, N, bound):
    for form, (avg, st, dev) in out.items():
        print(f"chain N={N} {form}: mean iterations {avg:.2f} over {st['calls']} calls, "
              f"fallbacks {st['fallbacks']}, |q - q_CBM| {dev:.1e}")
        assert avg <= bound, (form, avg)
        assert st["fallbacks"] <= max(2, st["calls"] // 100), st
        assert dev <= 1e-6


def test_trajectory_chain5(tmp_path):
    _check_trajectory(trajectory_stats(tmp_path, 5), 5, 4.0)


@pytest.mark.slow
@pytest.mark.parametrize("N", [10, 20])
def test_trajectory_long_chains(tmp_path, N):
    _check_trajectory(trajectory_stats(tmp_path, N), N, 7.0)


def test_simulate_is_reproducible_with_the_kept_inverse(models_dir):
    """simulate() resets the inverse kept between calls, so two runs give identical results."""
    m = dynamica.load(str(models_dir / "chain7.yaml"), form="iterative-g")
    a = dynamica.simulate(m, t_end=0.5, rtol=1e-9, atol=1e-11)
    b = dynamica.simulate(m, t_end=0.5, rtol=1e-9, atol=1e-11)
    np.testing.assert_array_equal(a.q, b.q)
    s = m.solver_stats()
    assert s["calls"] > 0 and s["iterations"] > 0
