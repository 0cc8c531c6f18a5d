"""Tests of the compiled Adams loop (runtime/native/adams_core.pyx via runtime/integrators/compiled_adams.py).

There is one implementation of the step (``step_core`` of runtime/native/adams_core.pyx): the
OdeSolver ``runtime.adams.Adams`` calls it once per ``step()`` and ``compiled_adams.solve`` runs
the whole loop in C.  Both drivers must therefore take the same steps and give the same
numbers to the last bit, at every tolerance (the outputs come from the same INTRP code).
The step's mathematics (coefficients, exactness on polynomials, DETEST accuracy, stiffness,
round-off floor) is tested in tests/runtime/integrators/test_adams.py, events and dense output in
tests/runtime/integrators/test_adams_events.py.

Note: the Python driver (solve_ivp + Adams) evaluates an output at t0 with the first step's
interpolant; the compiled driver returns y0 there exactly, so outputs start after t0.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dynamica
from dynamica.errors import IntegrationError
from dynamica.runtime.integrators.adams import Adams
from dynamica.runtime.integrators.compiled_adams import core, solve

from conftest import REPO_ROOT

MODELS = REPO_ROOT / "models"


def _kepler(e):
    def f(t, y):
        r3 = (y[0] ** 2 + y[1] ** 2) ** 1.5
        return np.array([y[2], y[3], -y[0] / r3, -y[1] / r3])
    return f, [1 - e, 0.0, 0.0, math.sqrt((1 + e) / (1 - e))]


PROBLEMS = {"D1": _kepler(0.1), "A3": (lambda t, y: y * np.cos(t), [1.0])}
T_OUT = np.linspace(0.5, 20.0, 40)


@pytest.fixture(scope="module")
def chain7():
    return dynamica.load(str(MODELS / "chain7.yaml"))


@pytest.mark.parametrize("name", ["D1", "A3"])
@pytest.mark.parametrize("tol", [1e-6, 1e-9, 1e-12])
def test_same_numbers_as_the_odesolver(name, tol):
    f, y0 = PROBLEMS[name]
    ref = solve_ivp(f, (0.0, 20.0), np.array(y0, float), method=Adams, rtol=tol, atol=tol, t_eval=T_OUT)
    assert ref.success
    res = solve(f, (0.0, 20.0), y0, T_OUT, rtol=tol, atol=tol)
    assert not res.capsule
    assert res.nfev == ref.nfev
    # f0 and the start probe, then PECE; a rejection costs one
    assert res.nfev == 2 + 2 * res.nsteps + res.nrejected
    assert sum(res.order_histogram) == res.nsteps
    np.testing.assert_array_equal(res.y, ref.y)


def test_output_at_t0_is_y0_and_order_reaches_high():
    f, y0 = PROBLEMS["D1"]
    res = solve(f, (0.0, 20.0), y0, [0.0, 20.0], rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(res.y[:, 0], y0)
    assert max(k for k, c in enumerate(res.order_histogram) if c) >= 10


def test_backward_integration_matches_the_odesolver():
    f, y0 = PROBLEMS["A3"]
    te = np.linspace(-0.5, -10.0, 20)
    ref = solve_ivp(f, (0.0, -10.0), np.array(y0, float), method=Adams, rtol=1e-9, atol=1e-9, t_eval=te)
    res = solve(f, (0.0, -10.0), y0, te, rtol=1e-9, atol=1e-9)
    assert res.nfev == ref.nfev
    np.testing.assert_array_equal(res.y, ref.y)


def test_chain7_capsule_against_dop853(chain7):
    m = chain7
    y0 = np.concatenate(m.initial_state())
    te = np.linspace(0.1, 2.0, 20)
    res = solve(m, (0.0, 2.0), y0, te, rtol=1e-10, atol=1e-10)
    assert res.capsule
    ref = solve_ivp(m.rhs_function(), (0.0, 2.0), y0, method="DOP853", rtol=1e-12, atol=1e-12, t_eval=te)
    assert ref.success
    err = np.max(np.abs(res.y - ref.y) / np.maximum(np.abs(ref.y), 1.0))
    assert err < 1e-7, err


def test_chain7_capsule_and_callable_identical(chain7):
    m = chain7
    y0 = np.concatenate(m.initial_state())
    te = np.linspace(0.0, 2.0, 11)
    a = solve(m.module.rhs_capsule, (0.0, 2.0), y0, te, params_array=m.param_vector(), rtol=1e-9, atol=1e-9)
    b = solve(m.rhs_function(), (0.0, 2.0), y0, te, rtol=1e-9, atol=1e-9)
    c = solve(m, (0.0, 2.0), None, te, rtol=1e-9, atol=1e-9, use_capsule=False)
    assert a.capsule and not b.capsule and not c.capsule
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.y, c.y)
    assert a.nfev == b.nfev == c.nfev
    assert a.order_histogram == b.order_histogram


def test_nan_in_callable_names_time_step_and_component():
    def f(t, y):
        d = -y.copy()
        if t > 1.0:
            d[2] = np.nan
        return d
    with pytest.raises(IntegrationError, match=r"nan in component 2 .*at t = 1\.\d+.*step size h = "):
        solve(f, (0.0, 5.0), np.ones(4), rtol=1e-8, atol=1e-8)
    info = core().integrate(f, 0.0, np.ones(4), [5.0], None, 1e-8, 1e-8)[1]
    assert info["status"] == core().NONFINITE and info["component"] == 2 and info["t"] > 1.0


def test_nan_in_capsule_detected(chain7):
    m = chain7
    p = m.param_vector()
    p[-1] = np.nan                                   # the last parameter of the layout
    name = m.param_layout[-1][0]
    y0 = np.concatenate(m.initial_state())
    with pytest.raises(IntegrationError, match=r"right-hand side returned nan in component \d+ .*at t = 0\.0"):
        solve(m.module.rhs_capsule, (0.0, 1.0), y0, params_array=p, rtol=1e-8, atol=1e-8)
    assert name                                      # (the layout is non-empty)


def test_python_exception_propagates():
    def f(t, y):
        if t > 0.5:
            raise ZeroDivisionError("boom")
        return -y
    with pytest.raises(ZeroDivisionError, match="boom"):
        solve(f, (0.0, 1.0), [1.0], rtol=1e-8, atol=1e-8)


def test_roundoff_floor_and_max_steps():
    f, y0 = PROBLEMS["A3"]
    with pytest.raises(IntegrationError, match="suggested rtol"):
        solve(f, (0.0, 1.0), y0, rtol=1e-18, atol=1e-18)
    with pytest.raises(IntegrationError, match="max_steps"):
        solve(f, (0.0, 20.0), y0, rtol=1e-10, atol=1e-10, max_steps=10)


def _count_python_calls(fn):
    import sys
    calls = []

    def profiler(frame, event, arg):
        if event in ("call", "c_call"):
            calls.append(event)
    sys.setprofile(profiler)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return len(calls)


def test_capsule_path_makes_no_python_calls(chain7):
    """The capsule path never calls back into Python per step (speed itself: benchmarks/)."""
    m = chain7
    y0 = np.concatenate(m.initial_state())
    integrate, cap, p, t_out = core().integrate, m.module.rhs_capsule, m.param_vector(), np.array([1.0])
    f = m.rhs_function()
    with_capsule = _count_python_calls(lambda: integrate(cap, 0.0, y0, t_out, p, 1e-8, 1e-8, 100000))
    with_callable = _count_python_calls(lambda: integrate(f, 0.0, y0, t_out, p, 1e-8, 1e-8, 100000))
    assert with_capsule < 30                       # entry and exit only
    assert with_callable > 300                     # one or more per RHS evaluation


def test_dense_record_makes_no_python_calls(chain7):
    """With dense=True the capsule loop records every step's interpolant in C."""
    m = chain7
    y0 = np.concatenate(m.initial_state())
    st = core().Stepper(m.module.rhs_capsule, 0.0, y0, 1.0, m.param_vector(), 1e-8, 1e-8, dense=True)
    assert st.begin() == core().OK
    t_out, Y = np.array([1.0]), np.empty((1, y0.size))
    calls = _count_python_calls(lambda: st.run(t_out, Y, 0, 100000))
    assert calls < 30
    sol = st.solution()
    assert sol.n_segments == st.nsteps > 50
    np.testing.assert_array_equal(sol(1.0), Y[0])
    np.testing.assert_array_equal(sol(sol.ts[1:]).T[-1], st.y)


def test_read_only_arrays_are_accepted():
    """A right-hand side returning a read-only array, read-only y0 and t_eval."""
    def f(t, y):
        out = -y
        out.setflags(write=False)
        return out
    y0 = np.ones(3)
    y0.setflags(write=False)
    te = np.linspace(0.0, 1.0, 5)
    te.setflags(write=False)
    res = solve(f, (0.0, 1.0), y0, te, rtol=1e-10, atol=1e-10, dense_output=True)
    np.testing.assert_allclose(res.y[:, -1], np.exp(-1.0), rtol=1e-9)
    np.testing.assert_allclose(res.sol(te), res.y, rtol=0, atol=0)
    Y, _ = core().integrate(f, 0.0, y0, te, None, 1e-10, 1e-10)
    np.testing.assert_array_equal(Y, res.y)
