"""The matrix-exponential integrator for linear multi-mass chains (runtime/analysis/expm.py,
lin.simulate(method="expm")).

Oracles: scipy.linalg.expm(A t) x0 with A built by the test (free motion), scipy's DOP853 at tolerance 1e-13 (forced
motion) and the method's own published table of the optimal fractional step (18)-(19) as printed.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg as sla
from scipy.integrate import solve_ivp

import dynamica
from dynamica.runtime.analysis import expm as E

from helpers import n_pendulum

#: the method's published table (Grigoriev, Gevorkyan 2011): order r, fractional step omega_M Delta, error eps_m
SEED_TABLE = [(1, 0.75, 4e-1), (2, 0.50, 4e-2), (3, 0.31, 1e-3), (4, 0.19, 1e-5), (5, 0.11, 2e-8), (6, 0.06, 1e-11)]


@pytest.mark.parametrize("r, step, err", SEED_TABLE)
def test_optimal_fractional_step_reproduces_the_seed_table(r, step, err):
    assert round(E.fractional_step(r), 2) == pytest.approx(step, abs=0.0051)
    assert float(f"{E.step_error(r):.0e}") == pytest.approx(err)


def wide_chain(n=40, seed=0):
    """A fixed-free spring-mass chain whose stiffnesses span four decades (omega_max/omega_min ~ 10^3)."""
    rng = np.random.default_rng(seed)
    m = rng.uniform(1.0, 2.0, n)
    k = np.logspace(0, 4, n)
    K = np.zeros((n, n))
    for i in range(n):
        K[i, i] += k[i]
        if i + 1 < n:
            K[i, i] += k[i + 1]
            K[i, i + 1] = K[i + 1, i] = -k[i + 1]
    M = np.diag(m)
    return M, 2e-4 * K + 0.01 * M, K


def first_order(M, C, K):
    """A = [[0, E], [-M^-1 K, -M^-1 C]] of x' = A x, x = [q, q'], built here (not runtime/analysis/expm.py's)."""
    n = len(M)
    return np.block([[np.zeros((n, n)), np.eye(n)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])


def reference(M, C, K, x0, t):
    A = first_order(M, C, K)
    return np.array([sla.expm(A * tk) @ x0 for tk in t])


def rel(X, R):
    return float(np.max(np.abs(X - R)) / np.max(np.abs(R)))


def test_free_motion_of_a_wide_spectrum_chain_equals_scipy_expm(monkeypatch):
    M, C, K = wide_chain(120)
    x0 = np.random.default_rng(1).normal(size=2 * len(M))
    t, X, info = E.integrate(M, C, K, x0, t_end=2.0, output_step=0.25)
    assert info["structured"] and info["sparse_doublings"] >= 1        # banded blocks for the first doublings
    w = np.sqrt(sla.eigvalsh(K, M))
    assert w.max() / w.min() > 500
    assert rel(X, reference(M, C, K, x0, t)) < 1e-10
    monkeypatch.setattr(E, "DENSE_FILL", 0.0)                         # all blocks dense: the same numbers
    t, Xd, info = E.integrate(M, C, K, x0, t_end=2.0, output_step=0.25)
    assert info["sparse_doublings"] == 0 and rel(X, Xd) < 1e-12
    M, C, K = wide_chain(40)
    x0 = x0[:80]
    # the same on the general (dense 2n x 2n) path: a non-symmetric stiffness (a follower force)
    Kn = K + 0.3 * np.triu(K, 1)
    t, X, info = E.integrate(M, C, Kn, x0, t_end=2.0, output_step=0.05)
    assert not info["structured"]
    assert rel(X, reference(M, C, Kn, x0, t)) < 1e-10


def test_error_and_step_follow_the_seed_table():
    """One step of a harmonic oscillator (the trace bound is its frequency): m doublings put the
    fractional step at the optimum (18), and exp(A h)'s relative error (in the energy norm of
    [omega x, x'], where exp(A h) is a rotation) is about omega h eps_m (19)."""
    w = 20.0
    M, C, K = np.eye(1), np.zeros((1, 1)), np.array([[w * w]])
    assert E.spectral_bound(M, C, K) == pytest.approx(w)
    A = first_order(M, C, K)
    assert np.array_equal(E.state_matrix(M, C, K), A)
    S = np.diag([w, 1.0])
    for r in range(3, 7):
        h = E.fractional_step(r) * 2 ** 4 / w                 # omega h / 2^4 = (18)'s optimum
        assert E.doublings(w, h, r) == 4 and E.doublings(w, h * 1.01, r) == 5
        prop = E.propagator(h, w, r, E._Blocks(K, C))
        D = np.eye(2) + prop.matrix
        err = np.linalg.norm(S @ (D - sla.expm(A * h)) @ np.linalg.inv(S), 2)
        assert prop.predicted_error == pytest.approx(w * h * E.step_error(r), rel=1e-12)
        assert 0.2 < err / prop.predicted_error < 5.0, (r, err, prop.predicted_error)
    assert E.order_for(2e-11) == 6 and E.order_for(1e-11) == 7 and E.order_for(1e-5) == 5 and E.order_for(0.5) == 1


def test_forced_motion_by_the_seed_quadrature():
    m, c, k, F, W = 1.2, 0.4, 300.0, 2.0, 7.0
    M, C, K = np.array([[m]]), np.array([[c]]), np.array([[k]])
    f = lambda t: np.array([F * math.cos(W * t)])                                     # noqa: E731
    x0 = np.array([0.01, -0.2])
    ref = solve_ivp(lambda t, x: [x[1], (f(t)[0] - c * x[1] - k * x[0]) / m], (0, 2.0), x0, method="DOP853",
                    rtol=1e-13, atol=1e-15, dense_output=True)
    errs = {}
    for p in (1, 2, 3):
        for h in (0.02, 0.01):
            t, X, _ = E.integrate(M, C, K, x0, 2.0, 0.1, forcing=f, order=p, step=h)
            errs[p, h] = rel(X, ref.sol(t).T)
    assert errs[3, 0.01] < 1e-7
    for p in (1, 2):                                           # second order: a quarter per halving
        assert 0.2 < errs[p, 0.01] / errs[p, 0.02] < 0.3
    assert 0.05 < errs[3, 0.01] / errs[3, 0.02] < 0.08         # the parabola: fourth order (1/16)
    # the same forcing through an input matrix B and u(t)
    t, X1, _ = E.integrate(M, C, K, x0, 2.0, 0.1, forcing=lambda t: f(t) / 4, inputs=np.array([[4.0]]), step=0.01)
    t, X2, _ = E.integrate(M, C, K, x0, 2.0, 0.1, forcing=f, step=0.01)
    assert rel(X1, X2) < 1e-13


def test_linearized_model_simulate_expm(tmp_path):
    """lin.simulate(method="expm") on a pendulum chain's linearization (dense M) with damping."""
    model = dynamica.load(n_pendulum(tmp_path, 3))
    lin = dynamica.linearize(model)
    lin.C = 0.05 * lin.K                                      # proportional damping, for the test
    lin.info.pop("A", None)
    x0 = np.array([0.01, -0.02, 0.015, 0.0, 0.05, 0.0])
    res = lin.simulate(5.0, x0, 0.1)
    assert res.method == "expm" and res.coordinates == lin.coordinates and res.info["deviations"]
    R = reference(lin.M, lin.C, lin.K, x0, res.t)
    assert rel(np.hstack([res.q, res.qd]), R) < 1e-10
    with pytest.raises(ValueError, match="unknown method"):
        lin.simulate(1.0, x0, 0.1, method="rk4")
    with pytest.raises(ValueError, match="x0 has 3 entries"):
        lin.simulate(1.0, x0[:3], 0.1)
    with pytest.raises(ValueError, match="must divide"):
        lin.simulate(1.0, x0, 0.1, step=0.03)
