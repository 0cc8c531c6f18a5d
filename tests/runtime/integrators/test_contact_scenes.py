"""Contact scenes against closed forms (docs/contact.md): each number's oracle and tolerance at
the test. The models are planar (x, z, pitch) to stay small; the law is the same in 3-D (the
3-D pairs are checked against the numeric reference in tests/generator/mechanics/test_contact_pairs.py).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import dynamica

from conftest import write_model

G = 9.81


def _planar(name, shape, *, mass=1.0, inertia=(0.01, 0.01, 0.01), gravity=(0, 0, -G), initial=None, law=None):
    """One body on x, z, pitch over a ground plane z = 0, with `shape` on it."""
    return {"name": name, "gravity": list(gravity),
            "bodies": [{"name": "b", "parent": "ground",
                        "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"},
                                  {"rotate": "y", "q": "th"}],
                        "mass": mass, "com": [0, 0, 0], "inertia": list(inertia)}],
            "initial": initial or {},
            "contact": {"shapes": {"floor": {"type": "plane", "body": "ground"}, "s": {"body": "b", **shape}},
                        "defaults": law or {}},
            "outputs": {"energy": True}}


def _rest_penetration(weight, k, e, points):
    return (weight / (points * k)) ** (1 / e)


BOX = {"type": "box", "size": [0.2, 0.2, 0.1]}
BOX_I = (1 / 12 * (0.2 ** 2 + 0.1 ** 2), 1 / 12 * (0.2 ** 2 + 0.1 ** 2), 1 / 12 * 0.08)
LAW = {"stiffness": 1e6, "damping": 1.0, "exponent": 1.5, "friction": 0.5, "stiction_velocity": 1e-3}


@pytest.fixture(scope="module")
def box(tmp_path_factory):
    z0 = 0.05 - _rest_penetration(G, 1e6, 1.5, 4)
    d = _planar("box", BOX, inertia=BOX_I, initial={"z": z0}, law=LAW)
    return dynamica.load(write_model(tmp_path_factory.mktemp("box"), d))


def test_box_given_v0_stops_after_v0_squared_over_2_mu_g(box):
    """Closed form: x_stop = v0^2 / (2 mu g) = 0.40775 m for v0 = 2, mu = 0.5; within 1 % (the
    regularisation adds about v_s^2 / (mu g) = 2e-7 m, the normal law's settling less)."""
    v0, mu = 2.0, 0.5
    r = dynamica.simulate(box, 1.0, qd0=[v0, 0, 0], output_step=0.01, rtol=1e-8, atol=1e-10)
    x_stop = v0 ** 2 / (2 * mu * G)
    assert abs(r.q[-1, 0] - x_stop) < 0.01 * x_stop
    assert abs(r.qd[-1, 0]) < 1e-3                     # at rest (t_stop = v0 / (mu g) = 0.41 s)


def test_box_at_rest_carries_m_g_and_does_not_creep(box):
    """On a level plane: the four normal forces sum to m g (1e-6 relative, the integration's
    tolerance once settled) and the box does not move sideways (1e-12 m)."""
    r = dynamica.simulate(box, 1.0, output_step=0.1, rtol=1e-10, atol=1e-12)
    Fn = r.outputs["contact_floor_s.normal_force"][-1]
    assert abs(Fn.sum() - G) < 1e-6 * G
    assert np.allclose(Fn[Fn > 0], G / 4, rtol=1e-6)
    assert np.max(np.abs(r.q[:, 0])) < 1e-12 and np.max(np.abs(r.q[:, 2])) < 1e-12


def test_passive_energy_never_grows(box, dropped):
    """Total energy (kinetic + gravity + the normal law's elastic part) of the sliding box and of
    a bouncing ball never grows: every output step's increase below 1e-7 of the energy (the
    integration error at rtol 1e-10), while it decreases by whole joules or tenths."""
    r = dynamica.simulate(box, 0.6, qd0=[2.0, -0.3, 0.5], output_step=0.001, rtol=1e-10, atol=1e-12)
    E = r.outputs["energy.total"]
    assert E[0] - E[-1] > 1.0
    assert np.max(np.diff(E)) < 1e-7 * abs(E).max()
    r = dynamica.simulate(dropped, 2.0, output_step=0.0005, rtol=1e-10, atol=1e-12)
    E = r.outputs["energy.total"]
    assert E[0] - E[-1] > 0.5 and len(r.info["contacts"]) >= 6
    assert np.max(np.diff(E)) < 1e-7 * abs(E).max()


@pytest.fixture(scope="module")
def dropped(tmp_path_factory):
    d = _planar("dropped", {"type": "sphere", "radius": 0.1}, inertia=(0.004, 0.004, 0.004), initial={"z": 0.5},
                law={"stiffness": 1e5, "damping": 0.15, "exponent": 1.5, "friction": 0.0})
    return dynamica.load(write_model(tmp_path_factory.mktemp("dropped"), d))


def test_a_dropped_ball_rebounds_to_the_height_the_law_predicts(dropped):
    """Dropped from 0.4 m above the floor, gravity acting during the contact too: the rebound
    apex against scipy's solve_ivp (DOP853, rtol 1e-12) of the law in one dimension,
    m delta'' = m g - k delta^e (1 + 3/2 c delta'), from delta = 0 at the impact speed sqrt(2 g h)
    until delta = 0 again; within 1e-6 m."""
    v_out, apex = _one_dimensional_rebound()
    r = dynamica.simulate(dropped, 1.0, output_step=1e-4, rtol=1e-11, atol=1e-13)
    assert abs(_first_apex(r, v_out) - apex) < 1e-6
    assert v_out < 0.95 * math.sqrt(2 * G * 0.4)                                 # it did lose energy


def _one_dimensional_rebound(k=1e5, c=0.15, e=1.5, h=0.4):
    """(exit speed, apex of the centre) of the dropped ball: scipy's solve_ivp (DOP853, rtol 1e-12)
    of m delta'' = m g - k delta^e (1 + 3/2 c delta') from delta = 0 at sqrt(2 g h) until delta = 0."""
    from scipy.integrate import solve_ivp

    def law(t, y):
        return [y[1], G - max(0.0, k * max(y[0], 0.0) ** e * (1 + 1.5 * c * y[1]))]
    leave = lambda t, y: y[0]                                                    # noqa: E731
    leave.terminal, leave.direction = True, -1
    sol = solve_ivp(law, (0, 1), [0.0, math.sqrt(2 * G * h)], method="DOP853", rtol=1e-12, atol=1e-14,
                    events=leave, first_step=1e-7)
    v_out = -sol.y_events[0][0][1]
    return v_out, 0.1 + v_out ** 2 / (2 * G)


def _first_apex(r, v_out):
    """The apex of the first flight after the first contact's end (the flight is a parabola: its
    vertex from the highest row's height and velocity)."""
    end = next(c[0] for c in r.info["contacts"] if c[3] == -1)
    after = (r.t > end) & (r.t < end + 2 * v_out / G - 1e-3)
    z = r.q[after, 1]
    k_top = np.argmax(z)
    return z[k_top] + r.qd[after, 1][k_top] ** 2 / (2 * G)


@pytest.mark.parametrize("method", ["RK45", "DOP853", "radau", "LSODA"])
def test_scipy_methods_locate_the_contacts_and_rebound_to_the_same_apex(dropped, method):
    """scipy's methods are stepped with the contacts located as adams does (restarted at each start
    and end): the first impact at the free fall's sqrt(2 h / g) (1e-9 s) and the rebound apex of the
    one-dimensional oracle above within 1e-5 m (rtol 1e-9: the interpolants of RK45 and radau are
    of lower order than their steps)."""
    v_out, apex = _one_dimensional_rebound()
    r = dynamica.simulate(dropped, 0.9, method=method, output_step=1e-4, rtol=1e-9, atol=1e-11)
    assert [c[3] for c in r.info["contacts"][:2]] == [1, -1] and r.info["restarts"] >= 2
    assert abs(r.info["contacts"][0][0] - math.sqrt(2 * 0.4 / G)) < 1e-9
    assert abs(_first_apex(r, v_out) - apex) < 1e-5


def test_stoermer6_locates_the_contacts_on_its_grid(dropped):
    """stoermer6 is stepped on its fixed grid with the contacts located on its quartic Hermite
    interpolant (restarted at each start and end): the first impact at the free fall's
    sqrt(2 h / g) within 1e-11 s (free fall is a quadratic: the grid values and the interpolant are
    exact up to round-off; the root is located to 4 ulp), the rebound apex of the one-dimensional
    oracle above within 1e-7 m at h = 1e-4 (seen: 3e-9 m; 2e-6 m at h = 2e-4, the order-6 error of the
    280 steps through the contact), and the rows stay on the grid t0 + k h."""
    v_out, apex = _one_dimensional_rebound()
    r = dynamica.simulate(dropped, 0.9, method="stoermer6", step=1e-4)
    assert [c[3] for c in r.info["contacts"][:3]] == [1, -1, 1] and r.info["restarts"] >= 3
    assert abs(r.info["contacts"][0][0] - math.sqrt(2 * 0.4 / G)) < 1e-11
    assert abs(_first_apex(r, v_out) - apex) < 1e-7
    assert len(r.t) == 9001 and np.max(np.abs(r.t - 1e-4 * np.arange(9001))) < 1e-12


def test_stoermer6_with_progress_is_the_run_without(dropped):
    """With `progress` the stoermer6 run is one run (not restarted per piece): the same rows, bit for
    bit, and all its contacts in `info`."""
    a = dynamica.simulate(dropped, 0.9, method="stoermer6", step=1e-3)
    seen = []
    b = dynamica.simulate(dropped, 0.9, method="stoermer6", step=1e-3, output_step=1e-3,
                          progress=lambda *x: seen.append(x))
    assert len(seen) >= 2 and np.array_equal(a.t, b.t) and np.array_equal(a.q, b.q)
    assert b.info["contacts"] == a.info["contacts"] and len(a.info["contacts"]) == 4


def test_stoermer6_without_contact_location_is_the_plain_method(tmp_path):
    """A model without contacts still runs the vectorised stoermer6 (no restarts), and events there
    are refused by name."""
    d = _planar("free", {"type": "sphere", "radius": 0.1}, initial={"z": 0.5})
    del d["contact"]
    m = dynamica.load(write_model(tmp_path, d))
    r = dynamica.simulate(m, 0.2, method="stoermer6", step=1e-3)
    assert "contacts" not in r.info
    assert abs(r.q[-1, 1] - (0.5 - G * 0.2 ** 2 / 2)) < 1e-12                  # free fall, exact
    with pytest.raises(ValueError, match="stoermer6 locates events only in a model with contacts"):
        dynamica.simulate(m, 0.2, method="stoermer6", step=1e-3, events=[lambda t, y: y[1]])


def test_ida_locates_the_contacts_of_a_model_with_loops(tmp_path):
    """The dropped ball of the oracle above split into two sliders of 0.5 kg tied by a loop joint
    (ida integrates models with loops only): its gaps are IDA's event functions, IDA is restarted at
    each root. The first impact at sqrt(2 h / g) within 1e-9 s (seen: 1e-14 s; SUNDIALS locates roots
    to about 100 ulp of t and the step), the rebound apex within 1e-6 m at rtol 1e-10 (seen: 2e-9 m),
    the loop closed to 1e-9 m on every row."""
    pytest.importorskip("sksundae")
    slider = {"parent": "ground", "mass": 0.5, "com": [0, 0, 0], "inertia": [0.002] * 3}
    d = {"name": "looped_ball", "gravity": [0, 0, -G],
         "bodies": [{"name": "b", "joint": {"type": "prismatic", "axis": "z", "q": "z"}, **slider},
                    {"name": "c", "joint": {"type": "prismatic", "axis": "z", "q": "zc"}, **slider}],
         "loops": [{"name": "tie", "type": "revolute", "body_a": "b", "point_a": [0, 0, 0], "body_b": "c",
                    "point_b": [0, 0, 0], "axis": "z"}],
         "initial": {"z": 0.5, "zc": 0.5},
         "contact": {"shapes": {"floor": {"type": "plane", "body": "ground"},
                                "s": {"body": "b", "type": "sphere", "radius": 0.1}},
                     "defaults": {"stiffness": 1e5, "damping": 0.15, "exponent": 1.5, "friction": 0.0}}}
    m = dynamica.load(write_model(tmp_path, d))
    v_out, apex = _one_dimensional_rebound()
    r = dynamica.simulate(m, 0.9, method="ida", output_step=1e-4, rtol=1e-10, atol=1e-12)
    assert [c[3] for c in r.info["contacts"]] == [1, -1, 1, -1] and r.info["restarts"] == 4
    assert abs(r.info["contacts"][0][0] - math.sqrt(2 * 0.4 / G)) < 1e-9
    assert abs(_first_apex(r, v_out) - apex) < 1e-6
    assert np.max(np.abs(r.q[:, 0] - r.q[:, 1])) < 1e-9 and len(r.t) == 9001


def test_a_scipy_method_does_not_step_over_a_thin_obstacle(tmp_path):
    """The shot of `test_a_fast_ball_is_not_stepped_through_a_thin_obstacle` with DOP853, whose
    steps grow to the whole flight when nothing is in the way: located and deflected."""
    r = dynamica.simulate(dynamica.load(write_model(tmp_path, _SHOT)), 0.2, method="DOP853", qd0=[40.0, 0],
                          output_step=0.1, rtol=1e-6, atol=1e-8)
    assert [c[3] for c in r.info["contacts"]] == [1, -1]
    assert r.qd[-1, 1] > 1e-3


@pytest.fixture(scope="module")
def ball(tmp_path_factory):
    d = _planar("ball", {"type": "sphere", "radius": 0.1}, inertia=(0.004, 0.004, 0.004), gravity=(0, 0, 0),
                initial={"z": 0.2}, law={"stiffness": 1e5, "damping": 0.15, "exponent": 1.5, "friction": 0.0})
    return dynamica.load(write_model(tmp_path_factory.mktemp("ball"), d))


def _hunt_crossley_restitution(v_in, c):
    """The law's exact restitution without gravity during the contact: m v dv = -k delta^e (1 + lam v) d delta
    with lam = 3 c / 2 integrates to v/lam - ln(1 + lam v)/lam^2 + k delta^(e+1)/(m (e+1)) = const, so the
    exit speed v_out solves v_in/lam - ln(1 + lam v_in)/lam^2 = -v_out/lam - ln(1 - lam v_out)/lam^2."""
    lam = 1.5 * c
    lhs = v_in / lam - math.log1p(lam * v_in) / lam ** 2
    v_out = brentq(lambda v: -v / lam - math.log1p(-lam * v) / lam ** 2 - lhs, 1e-9, (1 - 1e-12) / lam)
    return v_out / v_in


@pytest.mark.parametrize("v_in", [0.5, 2.0])
def test_ball_rebounds_with_the_restitution_of_the_law(ball, v_in):
    """Restitution of a ball thrown at the floor (no gravity): the closed form above, within 1e-6
    (the integration's error); for c v_in small it is about 1 - c v_in (Hunt and Crossley)."""
    r = dynamica.simulate(ball, 0.1 / v_in + 0.2, qd0=[0, -v_in, 0], output_step=0.01, rtol=1e-11, atol=1e-13)
    e = r.qd[-1, 1] / v_in
    assert abs(e - _hunt_crossley_restitution(v_in, 0.15)) < 1e-6
    assert [c[3] for c in r.info["contacts"]] == [1, -1]           # one contact, its start and end located
    assert abs(r.info["contacts"][0][0] - 0.1 / v_in) < 1e-9        # starts when the gap 0.1 m closes


_SHOT = {"name": "shot", "gravity": [0, 0, 0],
         "bodies": [{"name": "b", "parent": "ground",
                     "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"}],
                     "mass": 0.01, "com": [0, 0, 0], "inertia": [1e-6, 1e-6, 1e-6]}],
         "initial": {"x": -2.0, "z": 0.012},
         "contact": {"shapes": {"post": {"type": "sphere", "body": "ground", "radius": 0.01},
                                "s": {"type": "sphere", "body": "b", "radius": 0.005}},
                     "defaults": {"stiffness": 1e5, "friction": 0.0}}}


def test_a_fast_ball_is_not_stepped_through_a_thin_obstacle(tmp_path):
    """A sphere flying at 40 m/s past a small sphere fixed in the ground: with no force before the
    contact an Adams step may grow over the whole obstacle (2 cm across); the contact is located
    (start and end) and the ball is deflected: its sideways velocity no longer zero (1e-3 m/s)."""
    model = dynamica.load(write_model(tmp_path, _SHOT))
    r = dynamica.simulate(model, 0.2, qd0=[40.0, 0], output_step=0.1, rtol=1e-6, atol=1e-8)
    assert [c[3] for c in r.info["contacts"]] == [1, -1]
    assert r.qd[-1, 1] > 1e-3


@pytest.fixture(scope="module")
def tilted(tmp_path_factory):
    """Gravity tilted by theta about y: the level floor is an incline of angle theta."""
    def load(name, shape, inertia, theta, law, z0):
        g = (G * math.sin(theta), 0, -G * math.cos(theta))
        d = _planar(name, shape, inertia=inertia, gravity=g, initial={"z": z0}, law=law)
        return dynamica.load(write_model(tmp_path_factory.mktemp(name), d))
    return load


def test_sphere_rolls_down_an_incline_at_five_sevenths_g_sin_theta(tilted):
    """Solid sphere (I = 2/5 m r^2), theta = 20 deg, mu = 0.5 above the slip limit (2/7) tan(theta):
    x'' = (5/7) g sin(theta) within 1 % (the rolling radius is r less the penetration, 3e-4 r)."""
    theta, r = math.radians(20), 0.1
    I = 0.4 * r ** 2
    law = {**LAW, "damping": 2.0}
    model = tilted("roll", {"type": "sphere", "radius": r}, (I, I, I), theta, law,
                   r - _rest_penetration(G * math.cos(theta), 1e6, 1.5, 1))
    res = dynamica.simulate(model, 1.0, output_step=0.01, rtol=1e-9, atol=1e-11)
    t, v = res.t, res.qd[:, 0]
    sel = t > 0.2
    a = np.polyfit(t[sel], v[sel], 1)[0]
    assert abs(a - 5 / 7 * G * math.sin(theta)) < 0.01 * 5 / 7 * G * math.sin(theta)
    # the contact point's velocity: rolling, it is the law's creep v_s rho / sqrt(1 - rho^2) = 2.1e-4 m/s
    # (rho = (2/7) tan(theta) / mu, the friction needed over mu N); the contact point is r - delta/2 from the centre
    reach = r - res.outputs["contact_floor_s.penetration"][sel] / 2
    slip = res.qd[sel, 0] - reach * res.qd[sel, 2]
    rho = 2 / 7 * math.tan(theta) / 0.5
    assert np.max(np.abs(slip - 1e-3 * rho / math.sqrt(1 - rho ** 2))) < 2e-5


def test_box_on_a_plane_steeper_than_atan_mu_slides_at_g_sin_minus_mu_cos(tilted):
    """theta = 30 deg > atan(0.3): x'' = g (sin(theta) - mu cos(theta)) = 2.356 m/s^2 within 1 %."""
    theta, mu = math.radians(30), 0.3
    model = tilted("slide", BOX, BOX_I, theta, {**LAW, "friction": mu},
                   0.05 - _rest_penetration(G * math.cos(theta), 1e6, 1.5, 4))
    res = dynamica.simulate(model, 0.8, output_step=0.01, rtol=1e-9, atol=1e-11)
    sel = res.t > 0.2
    a = np.polyfit(res.t[sel], res.qd[sel, 0], 1)[0]
    expected = G * (math.sin(theta) - mu * math.cos(theta))
    assert abs(a - expected) < 0.01 * expected


def test_box_on_a_gentle_incline_creeps_at_the_regularised_laws_speed(tilted):
    """Below the friction angle the regularised law holds the box by a slip: mu N v/sqrt(v^2 + v_s^2)
    = m g sin(theta) gives v = v_s rho / sqrt(1 - rho^2), rho = tan(theta)/mu (docs/contact.md: the
    choice of v_s). theta = 10 deg, mu = 0.5: v = 3.77e-4 m/s with v_s = 1e-3; within 1 %."""
    theta, mu, vs = math.radians(10), 0.5, 1e-3
    model = tilted("creep", BOX, BOX_I, theta, {**LAW, "friction": mu, "stiction_velocity": vs},
                   0.05 - _rest_penetration(G * math.cos(theta), 1e6, 1.5, 4))
    res = dynamica.simulate(model, 1.0, output_step=0.1, rtol=1e-10, atol=1e-12)
    rho = math.tan(theta) / mu
    assert abs(res.qd[-1, 0] - vs * rho / math.sqrt(1 - rho ** 2)) < 0.01 * vs * rho / math.sqrt(1 - rho ** 2)


def test_statics_with_contacts_finds_the_resting_box(box):
    """dynamica.statics from 1 cm above the floor, tilted: the box rests level on its four corners
    sunk by (m g / (4 k))^(1/e) (closed form, 1e-12 m) carrying m g (1e-9 relative)."""
    eq = dynamica.statics(box, q0=[0.0, 0.06, 0.05], free=["z", "th"])
    sink = (G / (4 * 1e6)) ** (1 / 1.5)
    assert abs(eq.q[1] - (0.05 - sink)) < 1e-12 and abs(eq.q[2]) < 1e-12
    Fn = box.outputs(0.0, eq.q, np.zeros(3))["contact_floor_s.normal_force"]
    assert abs(Fn.sum() - G) < 1e-9 * G
    assert np.all(eq.eigenvalues > 0)                  # a stable rest


def test_a_run_with_progress_locates_the_contacts_too(ball):
    """With `progress` (the command line's bar) the rows are those of the plain run, bit for bit,
    contacts located: the same impact."""
    a = dynamica.simulate(ball, 0.3, qd0=[0, -1.0, 0], output_step=0.01)
    pieces = []
    b = dynamica.simulate(ball, 0.3, qd0=[0, -1.0, 0], output_step=0.01, progress=lambda res, new: pieces.append(new))
    assert np.array_equal(a.q, b.q) and len(pieces) > 2
    assert a.info["contacts"] == b.info["contacts"] and len(a.info["contacts"]) == 2


def test_a_cached_contact_model_runs_without_the_generator_or_scipy(tmp_path):
    """The start-up boundary (tests/runtime/test_startup.py) holds for a model with contacts: a
    cache hit's load and simulate (contacts located) import no sympy, scipy, yaml or jinja2."""
    import json
    import os
    import subprocess
    import sys
    path = write_model(tmp_path, _planar("drop", {"type": "sphere", "radius": 0.1}, initial={"z": 0.5}))
    code = ("import sys, json, dynamica\nm = dynamica.load(sys.argv[1])\nr = dynamica.simulate(m, 1.0)\n"
            "assert r.info['contacts']\n"
            "print(json.dumps(sorted(k for k in sys.modules if k.split('.')[0] in "
            "('sympy', 'scipy', 'yaml', 'jinja2'))))")
    env = {**os.environ, "DYNAMICA_CACHE": str(tmp_path / "cache")}
    for first in (True, False):
        r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        heavy = json.loads(r.stdout.strip().splitlines()[-1])
        assert ("sympy" in heavy) if first else heavy == [], heavy
