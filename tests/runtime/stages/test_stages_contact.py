"""Contacts in a cyclogram and in a parameter study (docs/contact.md, docs/stages.md, docs/sweep.md):
a ball held, then released onto the floor, bounces as in one plain run and as the Hunt-Crossley
law's closed-form restitution says; a stage that ends by its own event locates the contacts
inside it too; a sweep over the friction coefficient stops a sliding box after v0^2 / (2 mu g)
in every case, the rows' contact columns those of `simulate` case by case."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import brentq

import dynamica
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.studies.sweep import sweep

from conftest import write_model

G = 9.81
R = 0.1                   # the ball's radius (m)
Z0 = 2.1                  # its centre's height while held: a 2 m fall to the floor
HOLD = 0.3                # the release time (s)
#: stiff and lightly damped: the contact lasts tau = 1.5 ms, so gravity's impulse during it changes
#: the exit speed by about g tau / v' = 0.3 % (the closed form below leaves it out)
LAW = {"stiffness": 1e8, "damping": 0.05, "exponent": 1.5, "friction": 0.0}
SLOW = 0.01               # the bounce stage ends when the ball rises at this speed (m/s), just below its apex


def _ball(stages=None, z0=Z0):
    return {"name": "held_ball", "gravity": [0, 0, -G],
            "bodies": [{"name": "ball", "parent": "ground", "joint": [{"translate": "z", "q": "z"}],
                        "mass": 1.0, "com": [0, 0, 0], "inertia": [0.004] * 3}],
            "initial": {"z": z0},
            "contact": {"shapes": {"floor": {"type": "plane", "body": "ground"},
                                   "s": {"type": "sphere", "body": "ball", "radius": R}},
                        "defaults": LAW},
            "simulate": {"rtol": 1e-10, "atol": 1e-12, "output_step": 1e-3},
            **({"stages": stages} if stages else {})}


def _restitution(v_in, c):
    """Hunt and Crossley's restitution without gravity during the contact (docs/contact.md): v' solves
    v/lam - ln(1 + lam v)/lam^2 = -v'/lam - ln(1 - lam v')/lam^2, lam = 3 c / 2."""
    lam = 1.5 * c
    lhs = v_in / lam - math.log1p(lam * v_in) / lam ** 2
    return brentq(lambda v: -v / lam - math.log1p(-lam * v) / lam ** 2 - lhs, 1e-9, (1 - 1e-12) / lam) / v_in


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    stages = [{"name": "hold", "until": HOLD, "lock": ["z"]},
              {"name": "bounce", "until": 3.0, "release": ["ball"],
               "event": {"expr": f"der(ball_z) - {SLOW}", "direction": "falling"}},
              {"name": "after", "until": 3.5}]
    path = write_model(tmp_path_factory.mktemp("staged_ball"), _ball(stages))
    with pytest.warns(DynamicaWarning, match="already negative"):      # der(ball_z) = 0 at the release
        return dynamica.simulate(path)


def test_a_released_ball_bounces_to_the_closed_form_apex(staged, tmp_path):
    """Stage `bounce` ends by its event just below the first apex, with the contact's start and end
    inside it located: the impact at HOLD + sqrt(2 h / g) (free fall, 1e-9 s); the apex (the last
    row's height plus SLOW^2 / (2 g)) within 1 % of the closed form r + e^2 h (e the law's
    restitution at sqrt(2 g h): gravity's impulse during the contact, 0.6 % of the rebound height,
    is left out of it) and within 1e-7 m of the plain run of the same ball dropped from t = 0."""
    res = staged
    assert [s["reason"] for s in res.stages] == ["time", "event", "time"]
    contacts = res.info["contacts"]
    assert [c[3] for c in contacts[:2]] == [1, -1] and res.info["restarts"] == len(contacts) >= 4
    h = Z0 - R
    assert abs(contacts[0][0] - (HOLD + math.sqrt(2 * h / G))) < 1e-9
    end = np.nonzero(res.stage == "bounce")[0][-1]
    k = res.coordinates.index("ball_z")
    assert abs(res.qd[end, k] - SLOW) < 1e-9
    apex = res.q[end, k] + SLOW ** 2 / (2 * G)
    e = _restitution(math.sqrt(2 * G * h), LAW["damping"])
    assert abs((apex - R) - e ** 2 * h) < 0.01 * e ** 2 * h
    plain = dynamica.simulate(dynamica.load(write_model(tmp_path, _ball())), 1.5, output_step=1e-4)
    assert [c[3] for c in plain.info["contacts"]] == [1, -1]             # 1.5 s: one bounce, in flight after it
    after = plain.t > plain.info["contacts"][1][0]
    top = plain.q[after, 0] + plain.qd[after, 0] ** 2 / (2 * G)          # the flight's parabola at each row
    assert np.ptp(top) < 1e-7 and abs(top.mean() - apex) < 1e-7
    # the penetrations are rows of the staged result, below the undamped law's deepest point
    # ((e + 1) m v^2 / (2 k))^(1 / (e + 1)) (its energy balance; the damping only takes energy out)
    pen = res.outputs["contact_floor_s.penetration"][res.stage == "bounce"]
    deepest = (2.5 * 2 * G * h / (2 * LAW["stiffness"])) ** (1 / 2.5)
    assert np.all(np.isfinite(pen)) and 0.5 * deepest < pen.max() < deepest


def _box(tmp_path):
    sink = (G / (4 * 1e6)) ** (1 / 1.5)
    d = {"name": "box_mu", "gravity": [0, 0, -G], "parameters": {"mu": 0.5},
         "bodies": [{"name": "b", "parent": "ground",
                     "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"}, {"rotate": "y", "q": "th"}],
                     "mass": 1.0, "com": [0, 0, 0], "inertia": [0.0042, 0.0042, 0.0067]}],
         "initial": {"z": 0.05 - sink, "der(x)": 2.0},
         "contact": {"shapes": {"floor": {"type": "plane", "body": "ground"},
                                "s": {"type": "box", "body": "b", "size": [0.2, 0.2, 0.1]}},
                     "defaults": {"stiffness": 1e6, "damping": 1.0, "exponent": 1.5, "friction": "mu",
                                  "stiction_velocity": 1e-3}},
         "simulate": {"rtol": 1e-8, "atol": 1e-10, "output_step": 0.01}}
    return dynamica.load(write_model(tmp_path, d))


def test_a_sweep_over_friction_stops_each_box_after_v0_squared_over_2_mu_g(tmp_path):
    """Closed form x_stop = v0^2 / (2 mu g) per case within 1 % (the regularisation and the normal
    law's settling add well under that: tests/runtime/integrators/test_contact_scenes.py); the rows'
    `contacts` and `max_penetration` equal those of `simulate` of the same case (1e-12)."""
    model = _box(tmp_path)
    mus = [0.3, 0.5, 0.8]
    table = sweep(model, {"mu": mus}, t_end=0.8, scheduler="serial", reductions=("final",),
                  outputs=["contact_floor_s.normal_force"])
    assert list(table["status"]) == ["ok"] * 3
    for mu, (_, row) in zip(mus, table.iterrows()):
        x_stop = 2.0 ** 2 / (2 * mu * G)
        assert abs(row["x"] - x_stop) < 0.01 * x_stop
        one = dynamica.simulate(model, 0.8, params={"mu": mu})
        assert row["contacts"] == sum(1 for c in one.info["contacts"] if c[3] == 1)
        assert abs(row["max_penetration"] - one.outputs["contact_floor_s.penetration"].max()) < 1e-12
        assert abs(sum(row[f"contact_floor_s.normal_force[{j}]"] for j in range(8)) - G) < 1e-3 * G   # at rest
