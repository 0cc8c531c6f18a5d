"""Tests of the fixed-step 6th-order Stoermer/Cowell method (runtime/integrators/stoermer.py)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp
from scipy.integrate import solve_ivp

from dynamica.runtime.integrators import stoermer as st
from dynamica.runtime.integrators.stoermer import stoermer6, stoermer6_first_order


def fitted_order(hs, errs):
    return float(np.polyfit(np.log(hs), np.log(errs), 1)[0])


# ---------------------------------------------------------------- (1) coefficients, exact
def test_coefficients_match_generating_functions():
    t = sp.symbols("t")
    sig = sp.series(t**2 / ((1 - t) * sp.log(1 - t) ** 2), t, 0, 6).removeO()
    gam = sp.series(-t / ((1 - t) * sp.log(1 - t)), t, 0, 6).removeO()
    for j in range(6):
        assert sp.Rational(sig.coeff(t, j)) == sp.Rational(
            st.STOERMER_SIGMA[j].numerator, st.STOERMER_SIGMA[j].denominator
        )
        assert sp.Rational(gam.coeff(t, j)) == sp.Rational(st.ADAMS_GAMMA[j].numerator, st.ADAMS_GAMMA[j].denominator)
    assert [b * 240 for b in st.STOERMER_ORDINATES] == [317, -266, 374, -276, 109, -18]
    assert [b * 1440 for b in st.ADAMS_ORDINATES] == [4277, -7923, 9982, -7298, 2877, -475]
    # the float arrays the integrator uses are these numbers
    assert np.array_equal(st._BQ, [float(b) for b in st.STOERMER_ORDINATES])
    assert np.array_equal(st._BV, [float(b) for b in st.ADAMS_ORDINATES])


def _stoermer_residual(k, tn, h):
    """q(t_{n+1}) - 2 q(t_n) + q(t_{n-1}) - h^2 sum b_i q''(t_{n-i}) for q = t^k, exactly."""
    def q(x):
        return x**k

    def qdd(x):
        return k * (k - 1) * x ** (k - 2) if k >= 2 else Fraction(0)

    lhs = q(tn + h) - 2 * q(tn) + q(tn - h)
    rhs = h * h * sum(b * qdd(tn - i * h) for i, b in enumerate(st.STOERMER_ORDINATES))
    return lhs - rhs


def _adams_residual(k, tn, h):
    def v(x):
        return x**k

    def vd(x):
        return k * x ** (k - 1) if k >= 1 else Fraction(0)

    return v(tn + h) - v(tn) - h * sum(b * vd(tn - i * h) for i, b in enumerate(st.ADAMS_ORDINATES))


@pytest.mark.parametrize("tn,h", [(Fraction(0), Fraction(1)), (Fraction(7, 3), Fraction(1, 5)),
                                  (Fraction(-5, 2), Fraction(3, 7))])
def test_stoermer_exact_for_polynomials_up_to_degree_7(tn, h):
    for k in range(8):
        assert _stoermer_residual(k, tn, h) == 0, k
    # and not for degree 8: the order is exactly 6, error constant sigma_6 = 863/12096
    assert _stoermer_residual(8, tn, h) == Fraction(863, 12096) * h**8 * 40320
    # the companion Adams-Bashforth 6 formula is exact up to degree 6, not 7
    for k in range(7):
        assert _adams_residual(k, tn, h) == 0, k
    assert _adams_residual(7, tn, h) == Fraction(19087, 60480) * h**7 * 5040


def test_integrator_reproduces_degree_7_polynomial():
    """With fixed steps the whole method (start included) integrates q = t^7 to round-off."""
    t0, t1, h = 0.3, 2.3, 0.1
    for k, exact in [(7, True), (8, False)]:
        def f2(t, q, qd, k=k):
            return np.array([k * (k - 1) * t ** (k - 2)])

        t, q, qd, _ = stoermer6(f2, (t0, t1), [t0**k], [k * t0 ** (k - 1)], h)
        err = max(np.abs(q[:, 0] - t**k).max(), np.abs(qd[:, 0] - k * t ** (k - 1)).max()) / t1**k
        if exact:
            assert err < 1e-13, err
        else:
            assert err > 1e-9, err


# ---------------------------------------------------------------- (2) observed order
HS = [0.2, 0.1, 0.05, 0.025]


def test_order_harmonic_oscillator():
    # measured: errors 2.8e-5, 4.5e-7, 7.1e-9, 1.1e-10 at t = 10; fitted order 5.98
    T = 10.0
    errs = []
    for h in HS:
        _, q, qd, nfev = stoermer6(lambda t, q, qd: -q, (0.0, T), [1.0], [0.0], h)
        assert nfev == int(round(T / h)) + 1 + 5 * 42    # one evaluation per multistep step
        errs.append(max(abs(q[-1, 0] - np.cos(T)), abs(qd[-1, 0] + np.sin(T))))
    p = fitted_order(HS, errs)
    assert abs(p - 6) < 0.3, (p, errs)
    assert 1e-11 < errs[-1] < errs[0] < 1e-3


def kepler_exact(t, e):
    E = t
    for _ in range(60):
        E = E - (E - e * np.sin(E) - t) / (1 - e * np.cos(E))
    r, s = 1 - e * np.cos(E), np.sqrt(1 - e * e)
    return np.array([np.cos(E) - e, s * np.sin(E)]), np.array([-np.sin(E) / r, s * np.cos(E) / r])


def test_order_kepler_d1():
    # DETEST D1 (e = 0.1) on [0, 20], reference from Kepler's equation.
    # measured: errors 2.7e-6, 4.5e-8, 7.2e-10, 1.2e-11; fitted order 5.94 (5.90, 5.96, 5.96 pairwise)
    e, T = 0.1, 20.0
    hs = [0.05, 0.025, 0.0125, 0.00625]
    qe, qde = kepler_exact(T, e)
    assert np.allclose(kepler_exact(0.0, e)[1], [0, np.sqrt((1 + e) / (1 - e))])
    errs = []
    for h in hs:
        _, q, qd, _ = stoermer6(lambda t, q, qd: -q / np.linalg.norm(q) ** 3, (0.0, T),
                                [1 - e, 0.0], [0.0, np.sqrt((1 + e) / (1 - e))], h)
        errs.append(max(np.abs(q[-1] - qe).max(), np.abs(qd[-1] - qde).max()))
    p = fitted_order(hs, errs)
    assert abs(p - 6) < 0.3, (p, errs)


# ---------------------------------------------------------------- (3) velocity-dependent
def test_order_damped_oscillator():
    # q'' = -q - 0.3 q', q(0) = 1, q'(0) = 0; measured errors 1.98e-7, 2.8e-9, 4.2e-11, 7.0e-13
    # at t = 10, fitted order 6.04
    c, T = 0.3, 10.0
    w = np.sqrt(1 - c * c / 4)
    a = np.exp(-c * T / 2)
    qe = a * (np.cos(w * T) + c / (2 * w) * np.sin(w * T))
    qde = -a * np.sin(w * T) / w
    hs = [0.1, 0.05, 0.025, 0.0125]
    errs = []
    for h in hs:
        _, q, qd, _ = stoermer6(lambda t, q, qd: -q - c * qd, (0.0, T), [1.0], [0.0], h)
        errs.append(max(abs(q[-1, 0] - qe), abs(qd[-1, 0] - qde)))
    p = fitted_order(hs, errs)
    assert abs(p - 6) < 0.3, (p, errs)


# ---------------------------------------------------------------- dense output, step checks
def test_t_eval_interpolation_keeps_the_order():
    T = 10.0
    te = np.linspace(0.0, T, 23)[1:-1] + 0.0123    # off the grid
    errs = []
    for h in HS:
        t, q, qd, _ = stoermer6(lambda t, q, qd: -q, (0.0, T), [1.0], [0.0], h, t_eval=te)
        assert np.array_equal(t, te) and q.shape == (te.size, 1)
        errs.append(max(np.abs(q[:, 0] - np.cos(te)).max(), np.abs(qd[:, 0] + np.sin(te)).max()))
    p = fitted_order(HS, errs)
    assert abs(p - 6) < 0.3, (p, errs)


def test_step_must_divide_interval():
    with pytest.raises(ValueError, match="not an integer"):
        stoermer6(lambda t, q, qd: -q, (0.0, 1.0), [1.0], [0.0], 0.3)
    with pytest.raises(ValueError, match="t_eval"):
        stoermer6(lambda t, q, qd: -q, (0.0, 1.0), [1.0], [0.0], 0.1, t_eval=[1.5])
    t, q, _, _ = stoermer6(lambda t, q, qd: -q, (0.0, 2.0), [1.0], [0.0], 1e-3)   # 2/1e-3 not exact in floats
    assert t.size == 2001 and t[-1] == 2.0
    # backward integration
    t, q, qd, _ = stoermer6(lambda t, q, qd: -q, (1.0, 0.0), [np.cos(1.0)], [-np.sin(1.0)], 0.01)
    assert abs(q[-1, 0] - 1.0) < 1e-11 and abs(qd[-1, 0]) < 1e-11


# ---------------------------------------------------------------- (4) dynamica model
def test_double_pendulum_against_dop853(models_dir):
    import dynamica
    m = dynamica.load(models_dir / "double_pendulum.yaml")
    q0, qd0 = m.initial_state()
    y0 = np.concatenate([q0, qd0])
    f = m.rhs_function()
    t, y, nfev = stoermer6_first_order(f, (0.0, 2.0), y0, 1e-3)
    assert y.shape == (2001, 2 * m.n) and nfev == 2000 + 1 + 5 * 42
    ref = solve_ivp(f, (0.0, 2.0), y0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=t)
    # measured: max |y - y_DOP853| over all 2001 grid points and 4 components 1.3e-11
    # (1.2e-12 against DOP853 at rtol 1e-13, atol 1e-14, i.e. the rtol-1e-12 reference dominates)
    dev = np.abs(y - ref.y.T).max()
    assert dev < 1e-9, dev
