"""The direct form (DRT, (2.11)-(2.14)) and Lagrange I (LGR, (1.44)-(1.46), (2.24)-(2.26)).

* compiled qdd and M against the composite form (CBM) for the bundled models and against
  pinocchio (aba, crba, mapped by coordinate name) and CBM for random trees of
  tests/oracles/pin_trees.py, at random states and parameters: relative 1e-10;
* the intermediates of the programs evaluated numerically against numpy: DRT's tangent basis
  B = T A (1.31) exists only on the paths P_i and gives B^T M B; LGR's Z_i (Z_i^T A_i = 0,
  rank 6 - n_i), H = Z^T S M^-1 S^T Z with the block pattern of (2.24) and R of (2.25);
* LGR needs M_i^-1: a literally massless body is a ModelError, one massless at the default
  parameters (puma560) a warning.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import sympy as sp

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.forms.direct import direct, tangent_basis
from dynamica.generator.forms.lagrange1 import lagrange1_system
from dynamica.generator.forms.parts.common import forward_pass
from dynamica.generator.mechanics.kinematics import derive_kinematics, numeric_values
from dynamica.generator.mechanics.topology import build_topology
from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.model import load_model

from conftest import BUNDLED, MODELS, write_model
from helpers import rel_err
from oracles.pin_trees import random_tree, write_yaml

RTOL = 1e-10
FORMS = ("direct", "lagrange1")
FAST_BUNDLED = {"governor"}          # prismatic + q-dependent A_i + generalized forces and springs
# LGR needs M_i^-1: puma560's link1 has m1 = 0 by default (tested with overrides below), the
# motor joint's rotor is a point mass on its axis
LGR_SKIP = {"puma560", "dc_motor_joint"}


def _compare_modules(model, ref, seed, n=8, spread=0.2, params=None):
    """Worst relative errors of (qdd, M) of `model` against `ref` (same model file)."""
    rng = np.random.default_rng(seed)
    p0 = ref.param_vector(params)
    eq = em = 0.0
    for k in range(n):
        q, qd, t = rng.uniform(-1, 1, ref.n), rng.uniform(-1, 1, ref.n), rng.uniform(0, 2)
        p = p0 if k == 0 else p0 * rng.uniform(1 - spread, 1 + spread, p0.shape)
        a, b = np.empty(ref.n), np.empty(ref.n)
        model.module.qdd(t, q, qd, p, a)
        ref.module.qdd(t, q, qd, p, b)
        M, Mr = np.empty(ref.n ** 2), np.empty(ref.n ** 2)
        model.module.mass_matrix(t, q, p, M)
        ref.module.mass_matrix(t, q, p, Mr)
        eq, em = max(eq, rel_err(a, b)), max(em, rel_err(M, Mr))
    return eq, em


# ------------------------------------------------------------------------------------------
# bundled models against the composite form

BUNDLED_CASES = [pytest.param(name, form, id=f"{name}-{form}",
                              marks=[] if name in FAST_BUNDLED else [pytest.mark.slow])
                 for name in BUNDLED for form in FORMS if not (form == "lagrange1" and name in LGR_SKIP)]


@pytest.mark.parametrize("name,form", BUNDLED_CASES)
def test_bundled_against_composite(bundled, name, form):
    model, ref = bundled(name, form), bundled(name)
    assert model.form == form and model.coordinates == ref.coordinates
    eq, em = _compare_modules(model, ref, seed=7)
    print(f"[{name} {form}] vs CBM: qdd {eq:.2e}, M {em:.2e}, ops {model.module.OPERATION_COUNTS}")
    assert eq <= RTOL and em <= RTOL, (eq, em)


@pytest.mark.slow
def test_puma560_lagrange1_with_massive_link1(bundled):
    """puma560 with m1 > 0 and a nonsingular inertia of link1: LGR equals CBM."""
    model, ref = bundled("puma560", "lagrange1"), bundled("puma560")
    params = {"m1": 2.0, "I1": [0.3, 0.35, 0.2]}
    eq, em = _compare_modules(model, ref, seed=8, params=params)
    assert eq <= RTOL and em <= RTOL, (eq, em)


# ------------------------------------------------------------------------------------------
# random trees against pinocchio and the composite form

TREES = {
    # base on a free joint (m = 0), universal, spherical, custom (q-dependent A_i), welded
    # (n = 0, Z = E), prismatic; four bodies on the ground, siblings under bodies
    "mixed9_free_custom_welded": ("mixed", 9, (1, 2, 3, "custom", "welded"), 306,
                                  {"base_joint": "free", "prismatic": 0.3}),
    "chain8_123": ("chain", 8, (1, 2, 3), 102, {}),
    "star9_free_base": ("star", 9, (1, 2, 3), 103, {"base_joint": "free"}),
    "mixed10_custom_welded": ("mixed", 10, (1, 2, 3, "custom", "welded"), 104, {}),
    "mixed12_numeric": ("mixed", 12, (1, 2, 3, "custom"), 105, {"parametric": False}),
}
FAST_TREES = {"mixed9_free_custom_welded"}


def make_tree(case):
    kind, n, tokens, seed, kw = TREES[case]
    return random_tree(kind, n, tokens, np.random.default_rng(seed), name=case, **kw)


@pytest.fixture(scope="module")
def tree_models(tmp_path_factory):
    cache = {}

    def get(case, form):
        if case not in cache:
            tree = make_tree(case)
            path = tmp_path_factory.mktemp("drt_lgr") / f"{case}.yaml"
            write_yaml(tree, path)
            cache[case] = (tree, path, {})
        tree, path, mods = cache[case]
        if form not in mods:
            mods[form] = dynamica.load(str(path), form=form)
        return tree, mods[form]
    return get


@pytest.mark.parametrize("case", [pytest.param(c, marks=[] if c in FAST_TREES else [pytest.mark.slow])
                                  for c in TREES])
def test_random_tree_against_pinocchio_and_composite(tree_models, case):
    pin = pytest.importorskip("pinocchio")
    tree, ref = tree_models(case, "composite")
    models = {f: tree_models(case, f)[1] for f in FORMS}
    order = list(ref.coordinates)
    rng = np.random.default_rng(31)
    worst = {f: [0.0, 0.0, 0.0, 0.0] for f in FORMS}     # qdd/M vs pinocchio, qdd/M vs CBM
    for k in range(8):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        pmodel, names = tree.to_pinocchio(tree.param_values(ov))
        data = pmodel.createData()
        qv, vv = np.array([q[c] for c in names]), np.array([qd[c] for c in names])
        a = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv)).copy()
        M = pin.crba(pmodel, data, qv).copy()
        M = np.triu(M) + np.triu(M, 1).T
        idx = [names.index(c) for c in order]
        a, M = a[idx], M[np.ix_(idx, idx)]
        qs, qds = [q[c] for c in order], [qd[c] for c in order]
        a_ref, M_ref = ref.qdd(qs, qds, 0.0, params=ov or None), ref.mass_matrix(qs, 0.0, params=ov or None)
        for f, model in models.items():
            a_f, M_f = model.qdd(qs, qds, 0.0, params=ov or None), model.mass_matrix(qs, 0.0, params=ov or None)
            errs = (rel_err(a_f, a), rel_err(M_f, M), rel_err(a_f, a_ref), rel_err(M_f, M_ref))
            worst[f] = [max(x, y) for x, y in zip(worst[f], errs)]
    for f, w in worst.items():
        print(f"[{case} {f}] qdd/M vs pinocchio {w[0]:.2e}/{w[1]:.2e}, vs CBM {w[2]:.2e}/{w[3]:.2e}, "
              f"ops {models[f].module.OPERATION_COUNTS}")
        assert max(w) <= RTOL, (f, w)


# ------------------------------------------------------------------------------------------
# the intermediates against numpy

def _kinematics(source):
    spec = load_model(source)
    return derive_kinematics(spec, build_topology(spec))


def _evaluator(kin, seed):
    """ev(expr) -> float at a random state (parameters at their defaults)."""
    rng = np.random.default_rng(seed)
    subs = dict(kin.spec.defaults())
    subs[ex.T] = rng.uniform(0, 1)
    for jk in kin.joints[1:]:
        for q, qd in zip(jk.q, jk.qd):
            subs[q], subs[qd] = rng.uniform(-1, 1), rng.uniform(-1, 1)
    vals = numeric_values(kin.program, subs)
    return lambda e: float(sp.sympify(e).xreplace(vals))


def _skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def _bodies_numeric(kin, ev):
    """C_i, M_i (6x6) and A_i (6 x n_i) of every body, numpy."""
    C, M, A = [None], [None], [None]
    for i in range(1, kin.topo.n_bodies + 1):
        jk, bi = kin.joints[i], kin.inertia[i]
        G = np.array([[ev(jk.G[r, c]) for c in range(3)] for r in range(3)])
        rho = np.array([ev(x) for x in jk.rho])
        C.append(np.block([[G, -G @ _skew(rho)], [np.zeros((3, 3)), G]]))
        m, h = ev(bi.mass), np.array([ev(x) for x in bi.h])
        th = np.array([[ev(bi.theta[r, c]) for c in range(3)] for r in range(3)])
        M.append(np.block([[m * np.eye(3), -_skew(h)], [_skew(h), th]]))
        A.append(np.array([[ev(col[r]) for col in jk.A] for r in range(6)]).reshape(6, len(jk.A)))
    return C, M, A


def _structure_models(tmp_path):
    tree = make_tree("mixed9_free_custom_welded")
    path = tmp_path / "tree.yaml"
    write_yaml(tree, path)
    return [MODELS / "star.yaml", MODELS / "governor.yaml", MODELS / "driven.yaml", path]


def test_lagrange1_system_is_the_structured_H(tmp_path):
    """H of the program == Z^T S M^-1 S^T Z (numpy), nonzero blocks exactly those of (2.24)."""
    for source in _structure_models(tmp_path):
        kin = _kinematics(source)
        topo, N = kin.topo, kin.topo.n_bodies
        sysm = lagrange1_system(kin)
        ev = _evaluator(kin, 5)
        C, M, A = _bodies_numeric(kin, ev)
        Z = [None] + [np.array([[ev(z[r]) for z in sysm.Z[i]] for r in range(6)]).reshape(6, -1)
                      for i in range(1, N + 1)]
        for i in range(1, N + 1):       # (1.6), (1.8): an orthogonal basis of the right size
            assert Z[i].shape[1] == 6 - A[i].shape[1]
            if Z[i].size and A[i].size:
                assert np.abs(Z[i].T @ A[i]).max() < 1e-12 * max(1.0, np.abs(A[i]).max() * np.abs(Z[i]).max())
            if Z[i].size:
                assert np.linalg.svd(Z[i], compute_uv=False).min() > 1e-6
        nl = sum(Z[i].shape[1] for i in range(1, N + 1))
        S, Zb, Minv = np.eye(6 * N), np.zeros((6 * N, nl)), np.zeros((6 * N, 6 * N))
        blk = [slice(6 * (i - 1), 6 * i) for i in range(N + 1)]
        for i in range(1, N + 1):
            if topo.kappa[i]:
                S[blk[i], blk[topo.kappa[i]]] = -C[i]                       # (1.15)
            Zb[blk[i], sysm.offset[i]:sysm.offset[i] + Z[i].shape[1]] = Z[i]
            Minv[blk[i], blk[i]] = np.linalg.inv(M[i])
        H_np = Zb.T @ S @ Minv @ S.T @ Zb                                    # (1.46)
        H = np.zeros((nl, nl))
        for r, row in enumerate(sysm.H):
            for c, e in row.items():
                assert c <= r
                H[r, c] = H[c, r] = ev(e)
        assert rel_err(H, H_np) < 1e-12, (source, rel_err(H, H_np))
        owner = [i for i in range(1, N + 1) for _ in range(Z[i].shape[1])]
        for r, row in enumerate(sysm.H):                                     # the pattern (2.24)
            i = owner[r]
            allowed = {j for j in owner[:r + 1] if j in (i, topo.kappa[i])
                       or (topo.kappa[j] == topo.kappa[i] != 0)}
            assert {owner[c] for c in row} == allowed, (source, r)
        # R (2.25) = Z^T (w' - S M^-1 F'), with w'_i = w_hat_i - C_i w_hat_k (1.33)
        Fp = np.concatenate([[ev(x) for x in sysm.F_prime[i]] for i in range(1, N + 1)])
        a = np.concatenate([[ev(x) for x in sysm.a[i]] for i in range(1, N + 1)])
        np.testing.assert_allclose(a, Minv @ Fp, rtol=1e-11, atol=1e-11 * np.abs(a).max())
        w_hat = [None] + [np.array([ev(x) for x in sysm.fp.w_hat[i]]) for i in range(1, N + 1)]
        wp = np.concatenate([w_hat[i] - (C[i] @ w_hat[topo.kappa[i]] if topo.kappa[i] else 0)
                             for i in range(1, N + 1)])
        R = np.array([ev(x) for x in sysm.R])
        R_np = Zb.T @ (wp - S @ Minv @ Fp)
        assert rel_err(R, R_np) < 1e-12, (source, rel_err(R, R_np))


def test_direct_tangent_basis_and_mass_matrix(tmp_path):
    """B_i has columns exactly for the joints on P_i, equal to (T A)_i (1.24), (1.31); the
    mass matrix output equals B^T M B (2.11)."""
    for source in _structure_models(tmp_path):
        kin, kin_b = _kinematics(source), _kinematics(source)
        topo, N = kin.topo, kin.topo.n_bodies
        eom = direct(kin)
        B = tangent_basis(kin_b, forward_pass(kin_b))
        ev, ev_b = _evaluator(kin, 6), _evaluator(kin_b, 6)
        C, M, A = _bodies_numeric(kin, ev)
        n = len(kin.coordinates)
        first = np.cumsum([0] + [A[i].shape[1] for i in range(1, N + 1)])
        T = {}
        for i in range(1, N + 1):                                            # (1.24)
            T[i, i] = np.eye(6)
            for j in topo.paths[topo.kappa[i]]:
                T[i, j] = C[i] @ T[topo.kappa[i], j]
        Bn = np.zeros((6 * N, n))
        for i in range(1, N + 1):
            cols = {r for j in topo.paths[i] for r in range(first[j - 1], first[j])}
            assert set(B[i]) == cols, (source, i)
            for j in topo.paths[i]:
                Bn[6 * (i - 1):6 * i, first[j - 1]:first[j]] = T[i, j] @ A[j]
            got = np.array([[ev_b(x) for x in B[i][r]] for r in sorted(cols)]).T.reshape(6, -1)
            np.testing.assert_allclose(got, Bn[6 * (i - 1):6 * i, sorted(cols)], rtol=0, atol=1e-12)
        Mb = np.zeros((6 * N, 6 * N))
        for i in range(1, N + 1):
            Mb[6 * (i - 1):6 * i, 6 * (i - 1):6 * i] = M[i]
        Mm = np.array([ev(x) for x in eom.outputs["mass_matrix"]]).reshape(n, n)
        assert rel_err(Mm, Bn.T @ Mb @ Bn) < 1e-12, source


# ------------------------------------------------------------------------------------------
# LGR and massless bodies

def test_lagrange1_massless_body_is_a_model_error(tmp_path):
    path = write_model(tmp_path, {
        "name": "massless", "gravity": [0, 0, -9.81],
        "bodies": [
            {"name": "frame", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}], "mass": 0},
            {"name": "rod", "parent": "frame", "joint": [{"translate": [0, 0, 0.1]}, {"rotate": "x", "q": "b"}],
             "mass": 1.0, "com": [0, 0, -0.2], "inertia": [0.01, 0.01, 0.001]}]})
    dynamica.generate(str(path), form="direct")                  # the Lagrange II forms are fine
    with pytest.raises(ModelError, match="frame"):
        dynamica.generate(str(path), form="LGR")


def test_lagrange1_refuses_zero_default_mass():
    """puma560's link1 is massless at the default parameters (its mass a parameter): (2.24) has no
    M_i^-1 there: generating warns, naming the body and the forms that take it, and evaluating at
    those values is an error (it was NaN q''); other values run (the next test)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        spec = load_model(MODELS / "puma560.yaml")
    with pytest.warns(UserWarning, match="lagrange1.*body `link1`.*default parameters; use composite"):
        dynamica.generate(spec, form="lagrange1")
