"""Statics (dynamica.equilibrium / dynamica.statics) against closed forms and
against long damped simulations that settle there.

Oracles: scipy's brentq / fsolve on the hand-written force balance of each model (no dynamica
code), the stiffness as the derivative of that balance, and simulate() with damping.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.optimize import brentq, fsolve

import dynamica
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.analysis.statics import StaticsError

from conftest import write_model
from helpers import cart_pendulum

M_, L_, G_ = 1.3, 0.8, 9.81


def torsion_pendulum(tmp_path, k=20.0, neutral=1.2, damping=0.0, name="torsion"):
    """A point mass m at distance l on a joint about x with a torsional spring k (neutral angle)."""
    return write_model(tmp_path, {
        "name": name, "parameters": {"m": M_, "l": L_, "g": G_, "k": k, "th0": neutral, "c": damping},
        "gravity": [0, 0, "-g"],
        "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "th"}], "mass": "m",
                    "com": [0, 0, "-l"], "inertia": [0, 0, 0]}],
        "forces": [{"type": "joint_spring_damper", "coordinate": "th", "stiffness": "k", "neutral": "th0",
                    "damping": "c"}],
        "initial": {"th": 0.0}}, f"{name}.yaml")


def balance(th, k, neutral):
    """Torque about the joint: spring plus gravity on the mass at R_x(th) [0, 0, -l]."""
    return -k * (th - neutral) - M_ * G_ * L_ * math.sin(th)


def test_pendulum_on_a_torsional_spring_matches_the_closed_form(tmp_path):
    k, neutral = 20.0, 1.2
    model = dynamica.load(torsion_pendulum(tmp_path, k, neutral))
    eq = dynamica.statics(model)
    exact = brentq(lambda x: balance(x, k, neutral), 0.0, neutral)
    assert abs(eq.q[0] - exact) < 1e-10
    assert np.array_equal(dynamica.equilibrium(model), eq.q)
    # stiffness: -d(balance)/dth = k + m g l cos(th*)
    assert eq.eigenvalues[0] == pytest.approx(k + M_ * G_ * L_ * math.cos(exact), rel=1e-10)
    assert eq.stable and eq.free == ("th",) and eq.held == ()
    assert abs(eq.residual[0]) <= eq.tolerance


def test_long_damped_simulation_settles_at_the_equilibrium(tmp_path):
    model = dynamica.load(torsion_pendulum(tmp_path, 20.0, 1.2, damping=3.0, name="torsion_damped"))
    eq = dynamica.statics(model)
    res = dynamica.simulate(model, t_end=40.0, output_step=0.5, rtol=1e-10, atol=1e-12)
    assert abs(res.q[-1, 0] - eq.q[0]) < 1e-8
    assert abs(res.qd[-1, 0]) < 1e-8


def two_spring_body(tmp_path):
    """A body sliding in x and z (two prismatic coordinates), hanging from two springs anchored
    at ground points A and B, under gravity."""
    return write_model(tmp_path, {
        "name": "two_springs", "parameters": {"m": 2.0, "g": G_},
        "gravity": [0, 0, "-g"],
        "bodies": [{"name": "slider", "parent": "ground",
                    "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"}],
                    "mass": "m", "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]}],
        "forces": [{"type": "spring_damper", "body_a": "ground", "point_a": [-1.0, 0, 0.5], "body_b": "slider",
                    "point_b": [0, 0, 0], "stiffness": 150.0, "free_length": 0.6},
                   {"type": "spring_damper", "body_a": "ground", "point_a": [1.2, 0, 0.3], "body_b": "slider",
                    "point_b": [0, 0, 0], "stiffness": 90.0, "free_length": 0.5}],
        "initial": {"x": 0.1, "z": -0.2}}, "two_springs.yaml")


def two_spring_forces(p):
    f = np.array([0.0, -2.0 * G_])
    for anchor, k, L0 in (((-1.0, 0.5), 150.0, 0.6), ((1.2, 0.3), 90.0, 0.5)):
        d = p - np.array(anchor)
        L = np.linalg.norm(d)
        f -= k * (L - L0) * d / L
    return f


def test_body_on_two_springs_matches_fsolve_and_its_stiffness(tmp_path):
    model = dynamica.load(two_spring_body(tmp_path))
    eq = dynamica.statics(model)
    exact = fsolve(two_spring_forces, [0.1, -0.2], xtol=1e-14)
    assert np.max(np.abs(eq.q - exact)) < 1e-10
    h = 1e-6
    K = -np.array([(two_spring_forces(exact + h * e) - two_spring_forces(exact - h * e)) / (2 * h)
                   for e in np.eye(2)]).T
    assert np.max(np.abs(eq.stiffness - K)) < 1e-6 * np.max(np.abs(K))
    assert np.allclose(eq.eigenvalues, np.linalg.eigvalsh((K + K.T) / 2), rtol=1e-6)


def test_a_held_coordinate_keeps_its_value(tmp_path):
    """Double pendulum with a torsional spring at joint 2; joint 1 held at 0.4: the balance of
    link 2 alone, k2 a2 + m g l sin(a1 + a2) = 0."""
    path = write_model(tmp_path, {
        "name": "held", "gravity": [0, 0, -G_],
        "bodies": [{"name": "l1", "parent": "ground", "joint": [{"rotate": "x", "q": "a1"}], "mass": 1.0,
                    "com": [0, 0, -0.5], "inertia": [0.02, 0.02, 0.01]},
                   {"name": "l2", "parent": "l1", "joint": [{"translate": [0, 0, -1.0]}, {"rotate": "x", "q": "a2"}],
                    "mass": M_, "com": [0, 0, -L_], "inertia": [0, 0, 0]}],
        "forces": [{"type": "joint_spring_damper", "coordinate": "a2", "stiffness": 15.0}],
        "initial": {"a1": 0.4, "a2": 0.0}}, "held.yaml")
    model = dynamica.load(path)
    eq = dynamica.statics(model, free=["a2"])
    exact = brentq(lambda a2: 15.0 * a2 + M_ * G_ * L_ * math.sin(0.4 + a2), -1.0, 0.5)
    assert eq.q[0] == 0.4 and abs(eq.q[1] - exact) < 1e-10
    assert eq.held == ("a1",) and eq.free == ("a2",)
    # the same with q0 given and `free` as a single name
    assert dynamica.equilibrium(model, q0=[0.4, 0.3], free="a2")[1] == pytest.approx(exact, abs=1e-10)


def test_unstable_equilibrium_warns_naming_the_coordinate(tmp_path):
    model = dynamica.load(torsion_pendulum(tmp_path, k=0.0, neutral=0.0, name="inverted"))
    with pytest.warns(DynamicaWarning, match="unstable.*`th`"):
        eq = dynamica.statics(model, q0=[3.0])
    assert abs(eq.q[0] - math.pi) < 1e-10
    assert not eq.stable and eq.eigenvalues[0] == pytest.approx(-M_ * G_ * L_, rel=1e-9)
    assert "UNSTABLE" in eq.text()


def test_no_equilibrium_is_an_error_naming_the_residual_and_coordinate(tmp_path):
    path = write_model(tmp_path, {
        "name": "falling", "gravity": [0, 0, -G_],
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "z", "q": "height"}], "mass": 2.0,
                    "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]}]}, "falling.yaml")
    model = dynamica.load(path)
    with pytest.raises(StaticsError, match=r"no equilibrium.*`height` -1\.962e\+01"):
        dynamica.statics(model)
    with pytest.raises(ValueError, match="unknown coordinate.*'nope'.*height"):
        dynamica.statics(model, free=["nope"])


def test_already_in_equilibrium_takes_no_iteration(tmp_path):
    model = dynamica.load(torsion_pendulum(tmp_path, k=5.0, neutral=0.0, name="resting"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        eq = dynamica.statics(model)
    assert eq.iterations == 0 and eq.q[0] == 0.0


def test_a_soft_coordinate_converges_as_far_as_a_stiff_one(tmp_path):
    """The tolerance followed the stiffest coordinate (400 N/m): the pendulum (4.9 N m/rad) stopped
    at th = 6.6e-9 from th = 0.2. Each coordinate now converges to its own scale."""
    model = dynamica.load(cart_pendulum(tmp_path))
    x_exact = -(2.0 + 1.0) * G_ / 400.0              # the spring carries both weights
    for th0 in (0.2, 0.3, 0.7, -0.45):
        eq = dynamica.statics(model, q0=[0.1, th0])
        assert abs(eq.q[0] - x_exact) < 1e-15 and abs(eq.q[1]) < 1e-12, (th0, eq.q)
        assert eq.stable and sorted(eq.eigenvalues) == pytest.approx([1.0 * G_ * 0.5, 400.0], rel=1e-12)
        # each coordinate's force within its own tolerance, the pendulum's far below the spring's
        tol = eq.info["tolerances"]
        assert tol["th"] < 0.02 * tol["x"] and eq.tolerance == tol["x"]
        assert all(abs(r) <= tol[c] for c, r in zip(eq.free, eq.residual))


def _lagged_spring(tmp_path):
    """A mass on a spring k under gravity, pushed by an actuator force F that lags behind
    k2 (x0 - x) with time constant tau (an extra state): at equilibrium F = k2 (x0 - x) and
    -k x + F - m g = 0, so x = (k2 x0 - m g) / (k + k2)."""
    return write_model(tmp_path, {
        "name": "lagged", "parameters": {"m": 2.0, "k": 300.0, "k2": 500.0, "x0": 0.2, "tau": 0.05, "g": 9.81},
        "gravity": [0, 0, "-g"],
        "bodies": [{"name": "mass", "parent": "ground", "joint": {"type": "prismatic", "axis": "z", "q": "x"},
                    "mass": "m", "com": [0, 0, 0], "inertia": [1, 1, 1]}],
        "states": {"F": {"initial": 0.0, "der": "(k2*(x0 - x) - F)/tau"}},
        "forces": [{"type": "joint_spring_damper", "coordinate": "x", "stiffness": "k", "damping": 20.0},
                   {"type": "generalized_force", "coordinate": "x", "value": "F"}],
        "initial": {"x": 0.05}})


def test_extra_states_are_solved_with_the_coordinates(tmp_path):
    """statics of a model with an extra state: its closed form, and a long damped run settles there."""
    m, k, k2, x0, g = 2.0, 300.0, 500.0, 0.2, 9.81
    model = dynamica.load(_lagged_spring(tmp_path))
    eq = dynamica.statics(model)
    x = (k2 * x0 - m * g) / (k + k2)
    assert abs(eq.q[0] - x) < 1e-9 and abs(eq.info["states"]["F"] - k2 * (x0 - x)) < 1e-6
    assert eq.stable and abs(eq.stiffness[0, 0] - k) < 1e-4 * k
    run = dynamica.simulate(model, t_end=20.0, rtol=1e-10, atol=1e-12)
    assert abs(run.q[-1, 0] - x) < 1e-7 and abs(run.outputs["F"][-1] - k2 * (x0 - x)) < 1e-5
