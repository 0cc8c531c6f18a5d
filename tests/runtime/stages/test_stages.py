"""Stages (docs/stages.md): the cyclogram's boundaries, checked against what does not
share the cyclogram's code.

- A release: the released body's absolute position, velocity and angular velocity on both sides
  of the boundary (the outputs of two different generated modules, the second fed by
  runtime/motion.py) agree to 1e-12; afterwards it flies ballistically (closed form, 1e-9); the
  system that stays matches a separate model of it started from the boundary state (1e-8); a
  free-floating system's linear and angular momentum (computed by the numeric reference from the
  states) are the same after the boundary (1e-10) and stay so.
- Events end stages within 1e-9 of a closed-form time (a coordinate, an output force).
- A lock: the locked stage satisfies the base model's equation for the free coordinate with the
  locked one at rest (numeric reference), and the coordinate is held exactly.
- `set` changes a force at the boundary (closed form); `remove` leaves the rest as a separate model.
- Bad input: a ModelError naming the stage.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.spec.model import DynamicaWarning, load_model
from dynamica.runtime.reference.numeric import NumericReference
from dynamica.runtime.results.result import SimulationResult

from conftest import MODELS, write_model

G = 9.81
TOL = dict(rtol=1e-11, atol=1e-12)


def _pendulum2(stages, **extra):
    """A double pendulum in 3-D (universal then revolute joints), the lower link offset."""
    data = {
        "name": "pend2",
        "parameters": {"L1": 1.0, "L2": 0.8, "g": G},
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "upper", "parent": "ground", "joint": {"type": "universal", "axes": ["y", "x"], "q": ["a", "b"]},
             "mass": 1.3, "com": [0.05, 0.02, -0.5], "inertia": [0.11, 0.10, 0.03, 0.003, -0.002, 0.004]},
            {"name": "lower", "parent": "upper",
             "joint": {"type": "revolute", "axis": [0.2, 1.0, 0.1], "q": "c", "offset": ["0.1", 0, "-L1"]},
             "mass": 0.9, "com": [0.03, -0.04, "-L2/2"], "inertia": [0.06, 0.05, 0.015, 0.002, 0.001, -0.003]},
        ],
        "initial": {"a": 0.7, "b": -0.3, "c": 0.9, "der(a)": 0.4, "der(b)": 1.1, "der(c)": -0.8},
        "outputs": {"points": {"p_up": {"body": "upper", "at": [0.1, 0.2, -0.3]},
                               "p_low": {"body": "lower", "at": [0.2, -0.1, -0.5]}},
                    "angular": ["upper", "lower"]},
        "simulate": {"rtol": 1e-11, "atol": 1e-12, "output_step": 0.01},
        "stages": stages,
    }
    data.update(extra)
    return data


def _boundary(res, name):
    """Row indices (last of the stage before, first of `name`)."""
    k = int(np.nonzero(res.stage == name)[0][0])
    return k - 1, k


# ------------------------------------------------------------------ release
def test_release_is_continuous(tmp_path):
    res = dynamica.simulate(write_model(tmp_path, _pendulum2(
        [{"name": "swing", "until": 0.6}, {"name": "fly", "until": 0.9, "release": ["lower"]}])))
    a, b = _boundary(res, "fly")
    assert res.t[a] == res.t[b] == pytest.approx(0.6)
    for key in ("p_up.position", "p_up.velocity", "p_low.position", "p_low.velocity",
                "upper.angular_velocity", "lower.angular_velocity"):
        x, y = res.outputs[key][a], res.outputs[key][b]
        assert np.max(np.abs(x - y)) < 1e-12 * max(1.0, np.max(np.abs(x))), key
    assert np.isnan(res.q[b, res.coordinates.index("c")])          # the joint is gone
    assert not np.isnan(res.q[b, res.coordinates.index("lower_rz")])
    assert res.stages[1]["reason"] == "time" and res.stages[1]["coordinates"][-6:] == (
        "lower_x", "lower_y", "lower_z", "lower_rx", "lower_ry", "lower_rz")


def test_released_body_is_ballistic_and_the_rest_moves_on_alone(tmp_path):
    """After the release, the lower link's centre of mass falls freely (closed form) and the
    upper link moves as a model of it alone started from the boundary state."""
    data = _pendulum2([{"name": "swing", "until": 0.5}, {"name": "fly", "until": 1.2, "release": ["lower"]}])
    data["outputs"]["points"]["com_low"] = {"body": "lower", "at": [0.03, -0.04, -0.4]}
    res = dynamica.simulate(write_model(tmp_path, data))
    fly = res.stage == "fly"
    t, r = res.t[fly], res.outputs["com_low.position"][fly]
    v0 = res.outputs["com_low.velocity"][fly][0]
    tau = t - t[0]
    expected = r[0] + np.outer(tau, v0) + 0.5 * np.outer(tau ** 2, [0, 0, -G])
    assert np.max(np.abs(r - expected)) < 1e-9

    alone = _pendulum2([])
    del alone["stages"]
    alone["bodies"] = alone["bodies"][:1]
    alone["outputs"] = {}
    k = int(np.nonzero(fly)[0][0])
    alone["initial"] = {c: float(res.q[k, res.coordinates.index(c)]) for c in ("a", "b")}
    alone["initial"].update({f"der({c})": float(res.qd[k, res.coordinates.index(c)]) for c in ("a", "b")})
    ref = dynamica.simulate(write_model(tmp_path, alone, "alone.yaml"), t0=0.0, t_end=float(t[-1] - t[0]),
                            output_step=0.01)
    ours = res.q[fly][:, [res.coordinates.index("a"), res.coordinates.index("b")]]
    assert np.max(np.abs(np.interp(ref.t, tau, ours[:, 0]) - ref.q[:, 0])) < 1e-8
    assert np.max(np.abs(np.interp(ref.t, tau, ours[:, 1]) - ref.q[:, 1])) < 1e-8


def _momenta(spec, q, qd, t=0.0):
    """Linear and angular momentum (about the ground origin) of every body, by the reference."""
    ref = NumericReference(spec)
    st = ref._state(np.asarray(q, float), np.asarray(qd, float), t, ref.defaults)
    P, H = np.zeros(3), np.zeros(3)
    for i in range(1, ref.N + 1):
        m, rc, Ic = st["rcs"][i]
        R = st["R0"][i].T                                   # body -> ground
        v, w = st["v"][i][:3], st["v"][i][3:]
        vc = R @ (v + np.cross(w, rc))
        xc = st["r0"][i] + R @ rc
        P += m * vc
        H += np.cross(xc, m * vc) + R @ Ic @ w
    return P, H


def test_momentum_is_conserved_across_a_release(tmp_path):
    """A free-floating pair (no gravity): release the child; P and H are those before."""
    data = {
        "name": "floating",
        "bodies": [
            {"name": "hub", "parent": "ground", "joint": {"type": "free", "q": ["x", "y", "z", "r1", "r2", "r3"]},
             "mass": 4.0, "com": [0.1, 0, 0], "inertia": [0.5, 0.4, 0.3, 0.01, 0.02, 0.0]},
            {"name": "arm", "parent": "hub", "joint": {"type": "universal", "axes": ["z", "y"], "q": ["p1", "p2"],
                                                        "offset": [0.5, 0.1, 0]},
             "mass": 1.0, "com": [0.4, 0, 0.05], "inertia": [0.01, 0.08, 0.08, 0, 0.001, 0]},
        ],
        "initial": {"der(x)": 0.3, "der(r3)": 0.5, "der(p1)": 2.0, "der(p2)": -1.0, "r1": 0.2, "p2": 0.3},
        "simulate": {"rtol": 1e-11, "atol": 1e-12, "output_step": 0.05},
        "stages": [{"name": "spin", "until": 0.4}, {"name": "apart", "until": 1.0, "release": ["arm"]}],
    }
    path = write_model(tmp_path, data)
    res = dynamica.simulate(path)
    base = load_model(path)
    a, b = _boundary(res, "apart")
    P0, H0 = _momenta(base, res.q[0, :8], res.qd[0, :8])
    Pa, Ha = _momenta(base, res.q[a, :8], res.qd[a, :8], res.t[a])
    apart = dynamica.runtime.stages.cyclogram.derive(base, dynamica.generator.mechanics.stages.structures(base)[1])[0]
    cols = [res.coordinates.index(c) for c in apart.coordinates]
    for k in (b, len(res.t) - 1):
        P, H = _momenta(apart, res.q[k, cols], res.qd[k, cols], res.t[k])
        assert np.linalg.norm(P - P0) < 1e-10 * np.linalg.norm(P0)
        assert np.linalg.norm(H - H0) < 1e-9 * np.linalg.norm(H0)
    assert np.linalg.norm(Pa - P0) < 1e-10 * np.linalg.norm(P0)


# ------------------------------------------------------------------ events
def _drop() -> dict:
    """A body falling from z0 = 2; its first stage ends when z - h crosses zero (falling)."""
    return {"name": "drop", "parameters": {"h": 0.5}, "gravity": [0, 0, -G],
            "bodies": [{"name": "ball", "parent": "ground", "joint": {"type": "prismatic", "axis": "z", "q": "z"},
                        "mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
            "initial": {"z": 2.0}, "simulate": {"rtol": 1e-10, "atol": 1e-12},
            "stages": [{"name": "fall", "until": 5.0, "event": {"expr": "z - h", "direction": "falling"}},
                       {"name": "after", "until": 5.5}]}


def test_event_on_a_coordinate_ends_at_the_closed_form_time(tmp_path):
    """A body falls from z0 = 2: the event z - h (falling) at sqrt(2 (z0 - h) / g)."""
    res = dynamica.simulate(write_model(tmp_path, _drop()))
    assert res.stages[0]["reason"] == "event"
    assert abs(res.stages[0]["t_end"] - math.sqrt(2 * 1.5 / G)) < 1e-9
    assert res.stages[1]["t_start"] == res.stages[0]["t_end"] and res.stages[1]["t_end"] == 5.5


@pytest.mark.parametrize("method", ["adams", "DOP853"])
def test_event_on_an_output_force(tmp_path, method):
    """A mass on a spring released from x = A: the spring's force k |x| first falls below F0 at
    acos(F0 / (k A)) / omega (the stopper lets go when its force drops)."""
    k, m, A, F0 = 400.0, 2.0, 0.1, 25.0
    data = {"name": "osc", "parameters": {"F0": F0},
            "bodies": [{"name": "mass", "parent": "ground", "joint": {"type": "prismatic", "axis": "x", "q": "x"},
                        "mass": m, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
            "forces": [{"type": "joint_spring_damper", "name": "stopper", "coordinate": "x", "stiffness": k}],
            "outputs": {"forces": True}, "initial": {"x": A},
            "simulate": {"rtol": 1e-11, "atol": 1e-13},
            "stages": [{"name": "held", "until": 1.0,
                        "event": {"expr": "-stopper.generalized_force - F0", "direction": "falling"}},
                       {"name": "free", "until": 1.2}]}
    res = dynamica.simulate(write_model(tmp_path, data), method=method)
    expected = math.acos(F0 / (k * A)) / math.sqrt(k / m)
    assert res.stages[0]["reason"] == "event"
    assert abs(res.stages[0]["t_end"] - expected) < 1e-9


# ------------------------------------------------------------------ lock, set, remove
def test_lock_holds_the_coordinate_and_the_rest_obeys_the_base_equations(tmp_path):
    data = _pendulum2([{"name": "free", "until": 0.3}, {"name": "held", "until": 0.8, "lock": ["c"]},
                       {"name": "again", "until": 1.0}])
    data["outputs"] = {"angular": ["lower"]}                 # (and qdd, written with any outputs)
    path = write_model(tmp_path, data)
    with pytest.warns(DynamicaWarning, match="stage `held` locks `c` moving"):
        res = dynamica.simulate(path)
    held = res.stage == "held"
    ci = res.coordinates.index("c")
    assert np.all(res.q[held, ci] == res.q[np.nonzero(held)[0][0] - 1, ci]) and np.all(res.qd[held, ci] == 0)
    ref = NumericReference(load_model(path))
    for k in np.nonzero(held)[0][::10]:
        M, Q = ref.equations(res.q[k], res.qd[k], res.t[k])
        qdd = res.outputs["qdd"][k]
        # the free coordinates a, b: M_ff q''_f = Q_f with c at rest
        assert np.allclose(M[:2, :2] @ qdd[:2], Q[:2], rtol=1e-9, atol=1e-9)
    again = np.nonzero(res.stage == "again")[0][0]
    assert res.qd[again, ci] == 0.0 and res.q[again, ci] == res.q[again - 1, ci]


def _held_rod(stages, phi0=0.4):
    """A rod pendulum (one DOF, about y); phi'' = -(m g l/2) sin(phi) / (m l^2/3) = -3 g sin(phi) / (2 l)."""
    return {"name": "held", "parameters": {"m": 1.0, "l": 0.5}, "gravity": [0, 0, -G],
            "bodies": [{"name": "rod", "parent": "ground", "joint": {"type": "revolute", "axis": "y", "q": "phi"},
                        "mass": "m", "com": [0, 0, "-l/2"], "inertia": ["m*l**2/12", "m*l**2/12", 1e-3]}],
            "outputs": {"points": {"tip": {"body": "rod", "at": [0, 0, "-l"]}}},
            "initial": {"phi": phi0}, "simulate": {"rtol": 1e-11, "atol": 1e-12}, "stages": stages}


@pytest.mark.parametrize("method", ["adams", "RK45"])
def test_a_stage_that_locks_every_coordinate_advances_time(tmp_path, method):
    """Held for 0.5 s (no free state: adams stopped with "y0 is empty"), then released at rest: the
    swing equals the pendulum started at the held angle at t = 0.5 (1e-8), and the closed-form
    equation integrated by scipy (1e-7); while held, phi, its rate and the outputs stay put."""
    from scipy.integrate import solve_ivp
    phi0, l = 0.4, 0.5
    res = dynamica.simulate(write_model(tmp_path, _held_rod([{"name": "hold", "until": 0.5, "lock": ["phi"]},
                                                            {"name": "swing", "until": 1.5}])), method=method)
    hold = res.stage == "hold"
    assert res.stages[0]["coordinates"] == () and res.t[hold][-1] == 0.5 and np.sum(hold) > 2
    assert np.all(res.q[hold, 0] == phi0) and np.all(res.qd[hold, 0] == 0) and np.all(res.outputs["qdd"][hold] == 0)
    tip = res.outputs["tip.position"][hold]
    assert np.allclose(tip, [-l * math.sin(phi0), 0, -l * math.cos(phi0)], rtol=0, atol=1e-15)
    alone = _held_rod([], phi0)
    del alone["stages"]
    ref = dynamica.simulate(write_model(tmp_path, alone, "alone.yaml"), method=method, t0=0.5, t_end=1.5)
    assert res.t[-1] == ref.t[-1] == 1.5
    assert abs(res.q[-1, 0] - ref.q[-1, 0]) < 1e-8 and abs(res.qd[-1, 0] - ref.qd[-1, 0]) < 1e-8
    exact = solve_ivp(lambda t, y: [y[1], -1.5 * G * math.sin(y[0]) / l], (0.5, 1.5), [phi0, 0.0],
                      method="DOP853", rtol=1e-13, atol=1e-14).y[:, -1]
    assert abs(res.q[-1, 0] - exact[0]) < 1e-7 and abs(res.qd[-1, 0] - exact[1]) < 1e-7


@pytest.mark.parametrize("method", ["adams", "stoermer6", "DOP853"])
def test_an_event_of_a_stage_without_state_ends_it(tmp_path, method):
    """A held stage's event is a function of t alone: `t - 0.3` rising ends it at 0.3."""
    res = dynamica.simulate(write_model(tmp_path, _held_rod(
        [{"name": "hold", "until": 1.0, "lock": ["phi"], "event": {"expr": "t - 0.3", "direction": "rising"}},
         {"name": "swing", "until": 1.2}])), method=method)
    assert res.stages[0]["reason"] == "event" and abs(res.stages[0]["t_end"] - 0.3) < 1e-12
    assert res.stages[1]["t_start"] == res.stages[0]["t_end"] and res.q[-1, 0] < 0.4


def test_set_changes_a_parameter_from_its_stage_on(tmp_path):
    """A pushed block: x'' = F / m, F = 1 then 3 from t = 1: x(2) = 0.5 + 1 + 1.5 (m = 1)."""
    data = {"name": "push", "parameters": {"F": 1.0},
            "bodies": [{"name": "block", "parent": "ground", "joint": {"type": "prismatic", "axis": "x", "q": "x"},
                        "mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
            "forces": [{"type": "generalized_force", "coordinate": "x", "value": "F"}],
            "simulate": {"rtol": 1e-10, "atol": 1e-12},
            "stages": [{"name": "slow", "until": 1.0}, {"name": "fast", "until": 2.0, "set": {"F": "3*F"}}]}
    res = dynamica.simulate(write_model(tmp_path, data))
    assert abs(res.q[-1, 0] - 3.0) < 1e-9 and abs(res.qd[-1, 0] - 4.0) < 1e-9


def test_remove_leaves_the_rest_as_a_separate_model(tmp_path):
    res = dynamica.simulate(write_model(tmp_path, _pendulum2(
        [{"name": "both", "until": 0.4}, {"name": "one", "until": 0.9, "remove": ["lower"]}])))
    one = res.stage == "one"
    assert np.all(np.isnan(res.outputs["p_low.position"][one]))
    assert res.stages[1]["coordinates"] == ("a", "b")
    alone = _pendulum2([])
    del alone["stages"]
    alone["bodies"], alone["outputs"] = alone["bodies"][:1], {}
    k = int(np.nonzero(one)[0][0])
    alone["initial"] = {"a": float(res.q[k, 0]), "b": float(res.q[k, 1]),
                        "der(a)": float(res.qd[k, 0]), "der(b)": float(res.qd[k, 1])}
    ref = dynamica.simulate(write_model(tmp_path, alone, "alone.yaml"), t_end=0.5, output_step=0.01)
    assert np.max(np.abs(ref.q[-1] - res.q[-1, :2])) < 1e-8


def test_results_across_stages(tmp_path):
    path = write_model(tmp_path, _pendulum2([{"name": "s1", "until": 0.2}, {"name": "s2", "until": 0.3,
                                                                           "release": ["lower"]}]))
    res = dynamica.simulate(path)
    assert res.columns == ("a", "b", "c", "lower_x", "lower_y", "lower_z", "lower_rx", "lower_ry", "lower_rz")
    assert np.all(np.isnan(res.q[res.stage == "s1", 3:]))
    res.to_csv(tmp_path / "out.csv")
    back = SimulationResult.read_csv(tmp_path / "out.csv")
    assert list(back.stage) == list(res.stage) and back.coordinates == res.coordinates
    assert [s["name"] for s in back.stages] == ["s1", "s2"]


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("stages, where, message", [
    ([{"name": "s", "until": 1, "lock": ["nope"]}], "stages[0].lock[0]", "stage `s`: unknown coordinate 'nope'"),
    ([{"name": "s", "until": 1, "release": ["ground"]}], "stages[0].release[0]", "the ground cannot be released"),
    ([{"name": "s", "until": 1, "remove": ["lower"]}, {"name": "u", "until": 2, "remove": ["lower"]}],
     "stages[1].remove[0]", "body `lower` was removed before (in stage `s`)"),
    ([{"name": "s", "until": 1, "remove": ["upper"]}, {"name": "u", "until": 2, "lock": ["c"]}],
     "stages[1].lock[0]", "unknown coordinate 'c'"),
    ([{"name": "s", "until": 1, "event": {"expr": "a - zz"}}], "stages[0].event.expr", "unknown name `zz`"),
    ([{"name": "s", "until": 1, "event": {"expr": "spring.tension"}}], "stages[0].event.expr",
     "`spring.tension` is not an output"),
    ([{"name": "s", "until": 1, "event": {"expr": "a", "direction": "up"}}], "stages[0].event.direction",
     "expected rising, falling or both"),
    ([{"name": "s"}], "stages[0]", "missing required key `until`"),
    ([{"name": "s", "until": 2}, {"name": "u", "until": 1}], "stages[1].until", "before the stage before it"),
    ([{"name": "s", "until": 1, "set": {"L3": 2}}], "stages[0].set.L3", "unknown parameter 'L3'"),
    ([{"name": "s", "until": 1}, {"name": "s", "until": 2}], "stages[1].name", "duplicate stage name `s`"),
    ([{"name": "s", "type": "statics", "free": ["a"], "lock": ["a"]}], "stages[0].free", "both locked and free"),
    ([{"name": "s", "type": "kinematics"}], "stages[0].type", "expected one of statics, dynamics"),
    ([{"name": "s", "until": 1, "release": ["upper"]}, {"name": "u", "until": 2, "release": ["upper"]}],
     "stages[1].release", "was released before"),
])
def test_bad_stages(tmp_path, stages, where, message):
    with pytest.raises(ModelError) as exc:
        load_model(write_model(tmp_path, _pendulum2(stages)))
    text = str(exc.value)
    assert f"`{where}`" in text and message in text, text


def test_released_coordinates_must_be_free_names(tmp_path):
    data = _pendulum2([{"name": "s", "until": 1, "release": ["lower"]}])
    data["parameters"]["lower_x"] = 1.0
    with pytest.raises(ModelError, match="releasing `lower` makes the coordinates"):
        load_model(write_model(tmp_path, data))


def test_event_on_an_output_the_stage_lacks(tmp_path):
    """Names are checked at loading; a quantity a stage's module does not have, when it is built."""
    data = _pendulum2([{"name": "s", "until": 1, "event": {"expr": "p_up.speed"}}])
    with pytest.raises(ModelError, match="`p_up.speed` is not an output of this stage's model"):
        dynamica.simulate(write_model(tmp_path, data))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_model(write_model(tmp_path, _pendulum2([{"name": "s", "until": 1, "event": "p_up.position[2] + 0.5"}])))


def test_a_sweep_of_a_staged_model_has_its_stage_times(tmp_path):
    """dynamica.sweep over the event's height: each row's t_end(fall) is the closed-form time."""
    from dynamica.runtime.studies.sweep import sweep
    table = sweep(write_model(tmp_path, _drop()), {"h": [0.0, 0.5, 1.5]}, 5.5, scheduler="serial")
    assert list(table["status"]) == ["ok"] * 3
    for h, t_fall, t_after in zip(table["h"], table["t_end(fall)"], table["t_end(after)"]):
        assert abs(t_fall - math.sqrt(2 * (2.0 - h) / G)) < 1e-9 and t_after == 5.5


def test_report_of_a_cyclogram(tmp_path):
    """The HTML report of a staged run: D90's tables across the stages, and the 3-D scene moving
    the released body by its free coordinates (p_low, an output point of the lower link, is where
    the scene puts that point)."""
    from dynamica.runtime.report.page import write_report
    from dynamica.runtime.report.scene import placements
    path = write_model(tmp_path, _pendulum2([{"name": "swing", "until": 0.5},
                                             {"name": "fly", "until": 0.8, "release": ["lower"]}]))
    model = dynamica.load(path)
    res = dynamica.simulate(model)
    page = write_report(model, res, tmp_path / "r.html").read_text()
    assert "<h2>Stages</h2>" in page and "values at the end (or event) of each stage (fig. 5.6)" in page
    rows = np.arange(len(res.t))
    R, p = placements(model, res, rows)
    k = [b.name for b in model.spec.bodies].index("lower")
    point = next(pt for pt in model.spec.outputs.points if pt[0] == "p_low")
    local = np.array([float(x) for x in point[2]])
    scene_point = p[:, k] + np.einsum("fij,j->fi", R[:, k], local)
    assert np.max(np.abs(scene_point - res.outputs["p_low.position"])) < 1e-9


@pytest.mark.parametrize("N", [1, 2, 5, 12])
def test_launcher_flops_equal_table_5_2(N):
    """The launcher (models/launcher.py: 3 + N bodies, n = 5 + 3N, the tree of section 5.2.3):
    the flop formulas (4.2), (4.3), (4.7) of generator/cost/flops.py on its structure equal the
    dissertation's table 5.2 for CBM, LGR and DEC. (Its ITR column, 1943 + 1004N + 45N^2 with
    K = 2, is not what (4.5) gives here: 3827 at N = 1 for ITR-G, 3918 for ITR-M.)"""
    import importlib.util
    from fractions import Fraction

    from dynamica.generator.cost import flops as cost
    from dynamica.generator.spec.loader import load
    spec_ = importlib.util.spec_from_file_location("launcher", MODELS / "launcher.py")
    launcher = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(launcher)
    tree = cost.from_spec(load(launcher.model(N), file=f"launcher_{N}.yaml"))
    assert cost.count(tree, form="CBM") == 1757 + 1446 * N
    assert cost.count(tree, form="LGR") == 4538 + Fraction(2329, 2) * N + Fraction(243, 2) * N ** 2 + 9 * N ** 3
    assert cost.count(tree, form="DEC") == 2825 + 1601 * N


def test_launcher_mass_matrix_equals_pinocchio(tmp_path):
    """The launcher's tree (N = 2) against Pinocchio's crba and generalized gravity on the same tree
    built from the model file by tests/oracles/pin_yaml.py (its own yaml reading and expression
    evaluation; one Pinocchio joint per elementary motion, the screw as HelicalUnaligned, whose
    coordinate is the angle 2 pi s / pitch): 1e-12 of the largest entry."""
    pin = pytest.importorskip("pinocchio")
    import importlib.util

    from oracles.pin_yaml import pinocchio_from_file
    spec_ = importlib.util.spec_from_file_location("launcher", MODELS / "launcher.py")
    launcher = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(launcher)
    path = tmp_path / "launcher_2.yaml"
    path.write_text(yaml.safe_dump(launcher.model(2), sort_keys=False))
    pm, names, screw = pinocchio_from_file(path)
    pd = pm.createData()
    model = dynamica.load(str(path))
    assert sorted(names) == sorted(model.coordinates)
    perm = [names.index(c) for c in model.coordinates]
    scale = np.array([1.0 / screw.get(c, 1.0) for c in model.coordinates])     # Pinocchio's angle per s
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = rng.uniform(-0.5, 0.5, model.n)
        qp = np.empty(model.n)
        qp[perm] = q * scale
        Mp = pin.crba(pm, pd, qp)
        Mp = (np.triu(Mp) + np.triu(Mp, 1).T)[np.ix_(perm, perm)]
        M = model.mass_matrix(q)
        assert np.max(np.abs(scale[:, None] * Mp * scale[None, :] - M)) < 1e-12 * np.max(np.abs(M))
        gp = pin.computeGeneralizedGravity(pm, pd, qp)[perm] * scale
        g = model.gravity_forces(q)                                # what holds it still: g of M q'' + g = tau
        assert np.max(np.abs(gp - g)) < 1e-12 * np.max(np.abs(g))


def test_cli_takes_every_stages_coordinates_in_vars(tmp_path):
    """A new user's case: `--vars` refused a released body's coordinates (only the first stage's
    were known before the run) although the results carry them"""
    import subprocess
    import sys
    path = write_model(tmp_path, _pendulum2([{"name": "swing", "until": 0.2},
                                             {"name": "fly", "until": 0.3, "release": ["lower"]}]))
    r = subprocess.run([sys.executable, "-m", "dynamica.runtime.cli.main", "simulate", str(path), "-q", "--table",
                        str(tmp_path / "t.csv"), "--vars", "a lower_z"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    rows = {line.split(",")[0]: line.split(",") for line in (tmp_path / "t.csv").read_text().splitlines()}
    assert "lower_z" in rows and all(x != "nan" for x in rows["a"][1:])


def test_units_of_every_stages_columns(tmp_path):
    """A new user's report: a released body's coordinates were plotted as "value" without a unit"""
    from dynamica.runtime.results.units import variable_units
    model = dynamica.load(write_model(tmp_path, _pendulum2([{"name": "swing", "until": 0.2},
                                                             {"name": "fly", "until": 0.3, "release": ["lower"]}])))
    u = variable_units(model)
    assert u["lower_z"] == "m" and u["der(lower_rx)"] == "rad/s" and u["a"] == "rad"
    n = len(model.coordinates)
    assert u[f"qdd[{n}]"] in ("m/s^2", "rad/s^2") and f"qdd[{n + 5}]" in u
