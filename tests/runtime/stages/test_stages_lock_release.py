"""A stage that locks a coordinate followed by one that releases a body (docs/stages.md): every body
that remains keeps its position and velocity across the boundary, the released body flies from the
boundary state computed here (the double pendulum's kinematics written with numpy rotations, not
dynamica's), the upper link moves on as a separate model of it alone started from that state, and
the energy (kinetic from the centres' velocities and the body-frame angular velocities with the
file's inertias, potential of gravity) is constant within each stage and continuous at the release."""

from __future__ import annotations

import math
import warnings

import numpy as np

import dynamica

from conftest import write_model

G = 9.81
L1, L2 = 1.0, 0.8
AXIS_C = np.array([0.2, 1.0, 0.1]) / np.linalg.norm([0.2, 1.0, 0.1])
COM_LOW = np.array([0.03, -0.04, -L2 / 2])
COM_UP = np.array([0.05, 0.02, -0.5])
#: mass, inertia about the centre of mass in body axes ([Ixx, Iyy, Izz, Ixy, Iyz, Ixz] of the file)
BODIES = {"upper": (1.3, [0.11, 0.10, 0.03, 0.003, -0.002, 0.004]),
          "lower": (0.9, [0.06, 0.05, 0.015, 0.002, 0.001, -0.003])}


def _tensor(i):
    ixx, iyy, izz, ixy, iyz, ixz = i
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def _rot(u, angle):
    """Rodrigues: the right-handed rotation by `angle` about the unit vector u."""
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K


def _com_low(a, b, c):
    """The lower link's centre of mass in the ground frame: universal joint R_y(a) R_x(b), then the
    offset [0.1, 0, -L1] and the rotation by c about AXIS_C."""
    Ru = _rot([0, 1, 0], a) @ _rot([1, 0, 0], b)
    return Ru @ (np.array([0.1, 0, -L1]) + _rot(AXIS_C, c) @ COM_LOW)


def _model(stages):
    return {
        "name": "pend2_lock",
        "parameters": {"L1": L1, "L2": L2, "g": G},
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "upper", "parent": "ground", "joint": {"type": "universal", "axes": ["y", "x"], "q": ["a", "b"]},
             "mass": BODIES["upper"][0], "com": COM_UP.tolist(), "inertia": BODIES["upper"][1]},
            {"name": "lower", "parent": "upper",
             "joint": {"type": "revolute", "axis": AXIS_C.tolist(), "q": "c", "offset": [0.1, 0, "-L1"]},
             "mass": BODIES["lower"][0], "com": COM_LOW.tolist(), "inertia": BODIES["lower"][1]},
        ],
        "initial": {"a": 0.7, "b": -0.3, "c": 0.9, "der(a)": 0.4, "der(b)": 1.1, "der(c)": -0.8},
        "outputs": {"points": {"p_up": {"body": "upper", "at": [0.1, 0.2, -0.3]},
                               "com_up": {"body": "upper", "at": COM_UP.tolist()},
                               "com_low": {"body": "lower", "at": COM_LOW.tolist()}},
                    "angular": ["upper", "lower"]},
        "simulate": {"rtol": 1e-11, "atol": 1e-12, "output_step": 0.01},
        "stages": stages,
    }


def test_release_after_a_lock_keeps_every_body_continuous(tmp_path):
    data = _model([{"name": "swing", "until": 0.3}, {"name": "held", "until": 0.6, "lock": ["c"]},
                   {"name": "fly", "until": 1.0, "release": ["lower"]}])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")                       # the lock of a moving c warns (tested elsewhere)
        res = dynamica.simulate(write_model(tmp_path, data))
    col = {c: res.coordinates.index(c) for c in ("a", "b", "c")}
    k = int(np.nonzero(res.stage == "fly")[0][0])              # the first row of `fly`; k - 1: the last of `held`
    assert res.stage[k - 1] == "held" and res.t[k - 1] == res.t[k] == 0.6
    a, b, c = (res.q[k - 1, col[x]] for x in "abc")
    ad, bd = res.qd[k - 1, col["a"]], res.qd[k - 1, col["b"]]
    assert res.qd[k - 1, col["c"]] == 0.0

    # the boundary state of the lower link's centre of mass, from the numpy kinematics (c at rest)
    x0 = _com_low(a, b, c)
    h = 1e-6
    v0 = (_com_low(a + h * ad, b + h * bd, c) - _com_low(a - h * ad, b - h * bd, c)) / (2 * h)
    # the oracle's kinematics agree with the locked stage's rows (1e-12 m; 1e-8 m/s: differences)
    assert np.max(np.abs(res.outputs["com_low.position"][k - 1] - x0)) < 1e-12
    assert np.max(np.abs(res.outputs["com_low.velocity"][k - 1] - v0)) < 1e-8

    # continuity across the boundary, for every body (1e-12)
    for key in ("p_up.position", "p_up.velocity", "com_low.position", "com_low.velocity",
                "upper.angular_velocity", "lower.angular_velocity"):
        before, after = res.outputs[key][k - 1], res.outputs[key][k]
        assert np.max(np.abs(before - after)) < 1e-12 * max(1.0, np.max(np.abs(before))), key

    # the released link falls freely from (x0, v0): closed form, 1e-8 m (v0 by differences)
    fly = res.stage == "fly"
    tau = res.t[fly] - 0.6
    expected = x0 + np.outer(tau, v0) + 0.5 * np.outer(tau ** 2, [0, 0, -G])
    assert np.max(np.abs(res.outputs["com_low.position"][fly] - expected)) < 1e-8

    # the energy (gravity alone does work): constant within each stage, continuous across the release;
    # the lock at the start of `held` stops c' and takes energy away (1e-9 J: the integration)
    point = {"upper": "com_up", "lower": "com_low"}
    E = sum(m * (0.5 * np.sum(res.outputs[f"{point[b]}.velocity"] ** 2, axis=1)
                 + G * res.outputs[f"{point[b]}.position"][:, 2])
            + 0.5 * np.einsum("fi,ij,fj->f", res.outputs[f"{b}.angular_velocity"], _tensor(i),
                              res.outputs[f"{b}.angular_velocity"])
            for b, (m, i) in BODIES.items())
    for stage in ("swing", "held", "fly"):
        e = E[res.stage == stage]
        assert np.max(np.abs(e - e[0])) < 1e-9, stage
    assert abs(E[k] - E[k - 1]) < 1e-12 * abs(E[k])
    first_held = int(np.nonzero(res.stage == "held")[0][0])
    assert E[first_held] < E[first_held - 1] - 1e-3

    # the upper link moves on as a model of it alone started from (a, b, a', b') at the boundary: 1e-8
    alone = _model([])
    del alone["stages"]
    alone["bodies"] = alone["bodies"][:1]
    alone["outputs"] = {}
    alone["initial"] = {"a": float(a), "b": float(b), "der(a)": float(ad), "der(b)": float(bd)}
    ref = dynamica.simulate(write_model(tmp_path, alone, "alone.yaml"), t0=0.0, t_end=0.4, output_step=0.01)
    for name, j in (("a", 0), ("b", 1)):
        assert np.max(np.abs(np.interp(ref.t, tau, res.q[fly, col[name]]) - ref.q[:, j])) < 1e-8
