"""The isosceles slider-crank of tests/data/isosceles.yaml (crank and coupler both L long, thin
rods of mass m, I = m L^2 / 12 about the centre; the slider, mass ms, on the x axis through the
crank pivot; gravity g along -y) on its branch where the slider moves: with the crank angle theta,
the coupler's angle (from the x axis) is -theta and the slider is at x = 2 L cos(theta), so the
coordinates of the model are th1 = theta, th2 = -2 theta (relative to the crank) and x. Where
theta = pi/2 (mod pi) the slider passes the crank pivot, the loop's Jacobian loses rank and the
branch crosses the one where the slider stays at the pivot and the coupler folds onto the crank.

Lagrange on the one coordinate, written by hand from the bodies' positions (the coupler's centre
at (3 L/2 cos theta, L/2 sin theta)):

    T = 1/2 I(theta) theta'^2,  I = m L^2 (2/3 + 2 sin^2 theta) + 4 ms L^2 sin^2 theta
    V = m g L sin(theta)
    I theta'' + 1/2 I'(theta) theta'^2 + m g L cos(theta) = 0

integrated with scipy's DOP853 at rtol 1e-13. theta(t) depends on g / L and ms / m only: the
mechanism scaled in length by k with g scaled by k moves the same, its slider k times as far.
"""

from __future__ import annotations

import math

import numpy as np


def inertia(theta, L, m, ms):
    s2 = np.sin(theta) ** 2
    return m * L ** 2 * (2.0 / 3.0 + 2.0 * s2) + 4.0 * ms * L ** 2 * s2


def theta_dd(theta, rate, L, m, ms, g):
    """theta'' of the reduced equation (module docstring)."""
    d_inertia = (2.0 * m + 4.0 * ms) * L ** 2 * 2.0 * math.sin(theta) * math.cos(theta)
    return -(0.5 * d_inertia * rate ** 2 + m * g * L * math.cos(theta)) / inertia(theta, L, m, ms)


def energy(theta, rate, L, m, ms, g):
    return 0.5 * inertia(theta, L, m, ms) * np.asarray(rate) ** 2 + m * g * L * np.sin(theta)


def branch_state(theta, rate, L):
    """(q, q') of the model (th1, th2, x) on the moving-slider branch."""
    q = np.array([theta, -2.0 * theta, 2.0 * L * math.cos(theta)])
    v = np.array([rate, -2.0 * rate, -2.0 * L * math.sin(theta) * rate])
    return q, v


def reference(times, theta0, rate0, L=0.05, m=1.0, ms=1.0, g=9.81, rtol=1e-13):
    """(theta, theta') at `times` (from 0) of the reduced equation."""
    from scipy.integrate import solve_ivp
    sol = solve_ivp(lambda t, y: [y[1], theta_dd(y[0], y[1], L, m, ms, g)], (0.0, float(times[-1])),
                    [theta0, rate0], method="DOP853", rtol=rtol, atol=rtol * 1e-3, t_eval=times)
    return sol.y[0], sol.y[1]
