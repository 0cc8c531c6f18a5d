"""Events and dense output of the compiled Adams loop (runtime/integrators/compiled_adams.py ``solve``).

The pendulum theta'' = -g sin(theta), length 1, released at rest from theta = pi/2, with
g = 4 K(1/2)^2 (K the complete elliptic integral of the first kind at parameter m = 1/2) has
period exactly 2: theta(t) = 2 arcsin(k sn(K - 2K t | 1/2)), k = sin(pi/4), so theta = 0 at
t = 0.5 + j.  It runs on the compiled path both through a generated one-body model (the module's
C entry point, a PyCapsule) and through a Python callable; both must give the same numbers, and
the same as ``solve_ivp(method=Adams)`` (one compiled core for all three).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipj, ellipk

import dynamica
from dynamica.runtime.integrators.adams import Adams
from dynamica.runtime.integrators.compiled_adams import solve

from conftest import write_model

G = 13.7503716360407456549801915596          # 4 K(1/2)^2: period exactly 2
TOL = 1e-12
CROSSINGS = 0.5 + np.arange(30)


def pendulum(t, y):
    return np.array([y[1], -G * np.sin(y[0])])


def exact_theta(t):
    """theta(t) = 2 arcsin(k sn(K - 2K t | 1/2)) with k = sin(pi/4)."""
    K = ellipk(0.5)
    sn = ellipj(K - 2 * K * np.asarray(t, dtype=float), 0.5)[0]
    return 2 * np.arcsin(math.sin(math.pi / 4) * sn)


def theta_zero(t, y):
    return y[0]


def event(fn, terminal=None, direction=None):
    def g(t, y):
        return fn(t, y)
    if terminal is not None:
        g.terminal = terminal
    if direction is not None:
        g.direction = direction
    return g


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A one-body pendulum: a point mass 1 at distance 1 below a revolute joint about x."""
    d = {"name": "pendulum_events", "parameters": {"g": G}, "gravity": [0, 0, "-g"],
         "bodies": [{"name": "bob", "parent": "ground", "joint": [{"rotate": "x", "q": "theta"}],
                     "mass": 1.0, "com": [0, 0, -1.0], "inertia": [0, 0, 0]}],
         "initial": {"theta": math.pi / 2, "der(theta)": 0.0}}
    return dynamica.load(write_model(tmp_path_factory.mktemp("pendulum"), d))


Y0 = [math.pi / 2, 0.0]


def test_model_is_the_pendulum(model):
    assert model.param_vector()[0] == G
    y = np.array([0.3, -0.2])
    np.testing.assert_allclose(model.rhs_function()(0.0, y), pendulum(0.0, y), rtol=1e-15)
    assert ellipk(0.5) ** 2 * 4 == pytest.approx(G, rel=1e-15)


def test_pendulum_30_events_on_the_capsule_path(model):
    """30 zero crossings on [0, 30] within 1e-9 of 0.5 + j at rtol = atol = 1e-12 (measured:
    7e-12); the event function is evaluated once at t0, once per accepted step (at its end),
    and otherwise only by the root finder in the 30 steps where theta changed sign."""
    calls = []

    def g(t, y):
        calls.append(t)
        return y[0]

    res = solve(model, (0.0, 30.0), rtol=TOL, atol=TOL, events=[g], dense_output=True)
    assert res.capsule and res.status == 0
    te = res.t_events[0]
    assert len(te) == 30
    assert np.max(np.abs(te - CROSSINGS)) < 1e-9
    ye = res.y_events[0]
    assert ye.shape == (30, 2)
    assert np.max(np.abs(ye[:, 0])) < 1e-9
    # energy: theta' = -+ sqrt(2 g) at theta = 0, alternating sign, first one negative
    np.testing.assert_allclose(np.abs(ye[:, 1]), math.sqrt(2 * G), rtol=1e-9)
    assert np.all(ye[::2, 1] < 0) and np.all(ye[1::2, 1] > 0)
    ends = res.sol.ts[1:]
    assert len(ends) == res.nsteps
    at_ends = np.isin(np.array(calls[1:]), ends)
    assert calls[0] == 0.0
    # once per accepted step, plus brentq's two bracket ends (on the interpolant) per root
    assert int(at_ends.sum()) == res.nsteps + 2 * 30
    assert len(calls) - 1 - res.nsteps <= 30 * 15              # brentq inside 30 steps only


def test_capsule_callable_and_solve_ivp_agree_exactly(model):
    """The capsule, the module's Python rhs, a numpy callable and solve_ivp(method=Adams) take the
    same steps and find the same event times, to the last bit."""
    a = solve(model, (0.0, 30.0), rtol=TOL, atol=TOL, events=theta_zero)
    b = solve(model, (0.0, 30.0), rtol=TOL, atol=TOL, events=theta_zero, use_capsule=False)
    c = solve(model.rhs_function(), (0.0, 30.0), Y0, rtol=TOL, atol=TOL, events=theta_zero)
    d = solve_ivp(model.rhs_function(), (0.0, 30.0), Y0, method=Adams, rtol=TOL, atol=TOL,
                  events=theta_zero)
    assert a.capsule and not b.capsule and not c.capsule
    assert a.nfev == b.nfev == c.nfev == d.nfev
    for r in (b, c):
        np.testing.assert_array_equal(r.t_events[0], a.t_events[0])
        np.testing.assert_array_equal(r.y_events[0], a.y_events[0])
        np.testing.assert_array_equal(r.y, a.y)
    np.testing.assert_array_equal(d.t_events[0], a.t_events[0])
    np.testing.assert_array_equal(d.y_events[0], a.y_events[0])
    np.testing.assert_array_equal(d.y[:, -1], a.y[:, -1])
    # the numpy pendulum (sin from numpy, not libm) is the same problem up to round-off
    e = solve(pendulum, (0.0, 30.0), Y0, rtol=TOL, atol=TOL, events=theta_zero)
    assert np.max(np.abs(e.t_events[0] - CROSSINGS)) < 1e-9


def test_events_do_not_change_the_outputs(model):
    """Events leave the steps and outputs alone.  theta' = 0 at t = 0, 1, 2, ...: a zero at t0
    counts on the first step (g(t0) = 0 <= 0 and g <= 0 after it), as in solve_ivp."""
    te = np.linspace(0.0, 29.7, 61)
    a = solve(model, (0.0, 29.7), t_eval=te, rtol=1e-10, atol=1e-10)
    b = solve(model, (0.0, 29.7), t_eval=te, rtol=1e-10, atol=1e-10, events=[theta_zero, lambda t, y: y[1]])
    np.testing.assert_array_equal(a.y, b.y)
    assert a.nfev == b.nfev and a.t_events is None
    np.testing.assert_allclose(b.t_events[0], CROSSINGS, atol=1e-9)
    np.testing.assert_allclose(b.t_events[1], np.arange(0.0, 30.0), atol=1e-9)
    c = solve_ivp(model.rhs_function(), (0.0, 29.7), Y0, method=Adams, t_eval=te, rtol=1e-10, atol=1e-10,
                  events=[theta_zero, lambda t, y: y[1]])
    for i in range(2):
        np.testing.assert_array_equal(c.t_events[i], b.t_events[i])
    np.testing.assert_array_equal(c.y, b.y)


@pytest.mark.parametrize("direction, first", [(1, 1.5), (-1, 0.5)])
def test_terminal_event_with_direction(model, direction, first):
    """theta goes down through 0 at 0.5, 2.5, ... and up at 1.5, 3.5, ...; a terminal event
    with a direction stops at the first crossing in that direction; outputs after it are
    dropped; the dense solution ends there."""
    t_eval = np.linspace(0.0, 30.0, 301)
    res = solve(model, (0.0, 30.0), t_eval=t_eval, rtol=TOL, atol=TOL, dense_output=True,
                events=[event(theta_zero, terminal=True, direction=direction)])
    assert res.status == 1 and "termination event" in res.message
    assert len(res.t_events[0]) == 1
    assert abs(res.t_events[0][0] - first) < 1e-9
    assert len(res.t) == np.count_nonzero(t_eval <= res.t_events[0][0])
    assert res.y.shape == (2, len(res.t))
    np.testing.assert_allclose(res.y[0], exact_theta(res.t), atol=1e-9)
    assert res.sol.t_max == res.t_events[0][0]
    # without t_eval the result is the state at the event
    res = solve(model, (0.0, 30.0), rtol=TOL, atol=TOL,
                events=[event(theta_zero, terminal=True, direction=direction)])
    assert res.t[0] == res.t_events[0][0] and abs(res.y[0, 0]) < 1e-9


def test_terminal_count_and_several_events(model):
    """terminal = 3 stops at the third upward crossing (5.5); a second, non-terminal event
    (theta' = 0 at integer t) keeps only its occurrences before the stop."""
    res = solve(model, (0.0, 30.0), rtol=TOL, atol=TOL,
                events=[lambda t, y: y[1], event(theta_zero, terminal=3, direction=1)])
    assert res.status == 1
    np.testing.assert_allclose(res.t_events[1], [1.5, 3.5, 5.5], atol=1e-9)
    np.testing.assert_allclose(res.t_events[0], [0.0, 1.0, 2.0, 3.0, 4.0, 5.0], atol=1e-9)
    with pytest.raises(ValueError, match="terminal"):
        solve(model, (0.0, 1.0), rtol=1e-8, atol=1e-8, events=[event(theta_zero, terminal=-1)])


def test_dense_output_over_the_whole_interval(model):
    """sol(t) on [0, 30] follows the exact solution (elliptic functions) within 1e-9, equals
    the accepted values at every step end, accepts scalars and arrays, and equals
    solve_ivp(method=Adams, dense_output=True) to the last bit."""
    res = solve(model, (0.0, 30.0), rtol=TOL, atol=TOL, dense_output=True)
    sol = res.sol
    assert (sol.t_min, sol.t_max) == (0.0, 30.0) and sol.n_segments == res.nsteps
    tt = np.linspace(0.0, 30.0, 3001)
    assert np.max(np.abs(sol(tt)[0] - exact_theta(tt))) < 1e-9
    assert sol(0.5).shape == (2,) and sol(tt).shape == (2, 3001)
    np.testing.assert_array_equal(sol(30.0), res.y[:, -1])
    ref = solve_ivp(model.rhs_function(), (0.0, 30.0), Y0, method=Adams, rtol=TOL, atol=TOL,
                    dense_output=True)
    np.testing.assert_array_equal(ref.t, sol.ts)
    np.testing.assert_array_equal(sol(ref.t), ref.y[:, :])
    np.testing.assert_array_equal(sol(tt), ref.sol(tt))


def test_backward_integration_events_and_dense_output():
    """From t = 0 backwards to -3.2: crossings at -0.5, -1.5, -2.5 (theta is even in t)."""
    res = solve(pendulum, (0.0, -3.2), Y0, rtol=TOL, atol=TOL, events=theta_zero, dense_output=True)
    np.testing.assert_allclose(res.t_events[0], [-0.5, -1.5, -2.5], atol=1e-9)
    tt = np.linspace(0.0, -3.2, 101)
    assert np.max(np.abs(res.sol(tt)[0] - exact_theta(tt))) < 1e-9
    res = solve(pendulum, (0.0, -3.2), Y0, rtol=TOL, atol=TOL,
                events=event(theta_zero, terminal=True, direction=1))
    assert res.status == 1 and abs(res.t_events[0][0] + 1.5) < 1e-9


def test_event_errors_propagate():
    def bad(t, y):
        if t > 1.0:
            raise ZeroDivisionError("in the event")
        return y[0]
    with pytest.raises(ZeroDivisionError, match="in the event"):
        solve(pendulum, (0.0, 3.0), Y0, rtol=1e-8, atol=1e-8, events=bad)
