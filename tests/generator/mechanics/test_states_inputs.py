"""Extra first-order states, inputs and a sampled controller (generator/mechanics/signals.py,
runtime/inputs.py), each against an oracle written apart from dynamica:

- the DC-motor-driven joint (models/dc_motor_joint.yaml) against its equations written by hand
  and integrated by scipy, with the voltage as data, as a sampled callable and from a PD
  controller with zero-order hold (1e-8);
- a hydraulic ram's pressure build-up and motion against their closed form (1e-8), and an
  event on the pressure at the time the closed form gives;
- the energy balance E(t) - E(0) = the work of the motor and the damper, integrated as a state
  written by hand (1e-7);
- the controller is called exactly at t0 + k Ts with the state there, reaches its set point,
  and the result does not depend on the integrator;
- every form and mode integrates the same motion; inputs missing or malformed are InputErrors
  naming the input, before any integration.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml
from scipy.integrate import solve_ivp

import dynamica
from dynamica.errors import InputError

from conftest import MODELS, write_model

P = yaml.safe_load((MODELS / "dc_motor_joint.yaml").read_text())["parameters"]
V = {k: (v["value"] if isinstance(v, dict) else v) for k, v in P.items()}
J = V["m"] * V["l"] ** 2 / 12 + V["m"] * (V["l"] / 2) ** 2 + V["N"] ** 2 * V["J_m"]


def motor_rhs(u):
    """The DC-motor joint by hand: J phi'' = -m g l/2 cos(phi) + N k_t i - b phi',
    L i' = u(t) - R i - k_e N phi'."""
    def f(t, y):
        phi, w, i = y
        return [w, (-V["m"] * V["g"] * V["l"] / 2 * math.cos(phi) + V["N"] * V["k_t"] * i - V["b"] * w) / J,
                (u(t) - V["R"] * i - V["k_e"] * V["N"] * w) / V["L_m"]]
    return f


def by_hand(u, cuts, t_out, y0=(0.0, 0.0, 0.0)):
    """solve_ivp (DOP853, 1e-12) from cut to cut (u is smooth between them) -> rows at t_out."""
    y, rows = np.array(y0, dtype=float), []
    for a, b in zip(cuts[:-1], cuts[1:]):
        inside = t_out[(t_out > a) & (t_out <= b)] if a > cuts[0] else t_out[(t_out >= a) & (t_out <= b)]
        sol = solve_ivp(motor_rhs(u), (a, b), y, method="DOP853", rtol=1e-12, atol=1e-12,
                        t_eval=np.union1d(inside, [b]))
        rows += [sol.y[:, k] for k, tk in enumerate(sol.t) if tk in inside]
        y = sol.y[:, -1]
    return np.array(rows)


def dynamica_rows(r):
    return np.column_stack([r.q[:, 0], r.qd[:, 0], r.outputs["i_m"]])


def close(a, b, tol):
    scale = np.maximum(np.abs(b).max(axis=0), 1e-300)
    return np.abs(a - b).max(axis=0) / scale <= tol


@pytest.fixture(scope="module")
def motor():
    return dynamica.load(MODELS / "dc_motor_joint.yaml")


def test_motor_with_voltage_data_equals_hand_equations(motor):
    t_u, u = np.array([0.0, 0.05, 0.2, 0.3, 0.5]), np.array([0.0, 12.0, 12.0, -6.0, 0.0])
    r = dynamica.simulate(motor, t_end=0.6, output_step=0.005, rtol=1e-12, atol=1e-12, inputs={"u": (t_u, u)})
    ref = by_hand(lambda t: np.interp(t, t_u, u), np.union1d(t_u, [0.6]), r.t)
    assert np.all(close(dynamica_rows(r), ref, 1e-8)), np.abs(dynamica_rows(r) - ref).max(axis=0)
    np.testing.assert_allclose(r.outputs["u"], np.interp(r.t, t_u, u), rtol=0, atol=1e-12)
    assert r.info["segments"] == 5                                 # cut at the data points


@pytest.mark.parametrize("method", ["adams", "DOP853", "radau"])
def test_motor_with_a_callable_evaluated_where_the_integrator_asks(motor, method):
    """Without sample_time a callable u(t) is the input itself: the run equals the hand equations
    with the same u(t) integrated by scipy (DOP853, 1e-12, no cuts) to 1e-8 (both at rtol = atol
    = 1e-12: the two integrations' errors, each some 1e-11 over 0.3 s of this smooth motion, far
    below), for the compiled adams, a scipy explicit and an implicit method; the same callable
    sampled every 10 ms (linear between samples) differs by far more than that."""
    def u(t):
        return 12.0 * math.sin(8.0 * t) + 4.0 * math.cos(23.0 * t)
    kw = dict(t_end=0.3, output_step=0.005, rtol=1e-12, atol=1e-12, method=method)
    r = dynamica.simulate(motor, inputs={"u": u}, **kw)
    ref = by_hand(u, np.array([0.0, 0.3]), r.t)
    assert np.all(close(dynamica_rows(r), ref, 1e-8)), np.abs(dynamica_rows(r) - ref).max(axis=0)
    np.testing.assert_allclose(r.outputs["u"], [u(t) for t in r.t], rtol=1e-15, atol=1e-15)
    assert r.info["segments"] == 1                                 # no cut: u is not sampled
    sampled = dynamica.simulate(motor, inputs={"u": u}, sample_time=0.01, **kw)
    assert not np.all(close(dynamica_rows(sampled), ref, 1e-6))


def test_motor_with_a_sampled_callable_and_a_csv_file(motor, tmp_path):
    Ts, t_end = 0.01, 0.3
    r = dynamica.simulate(motor, t_end=t_end, output_step=0.005, rtol=1e-12, atol=1e-12,
                          inputs={"u": lambda t: 12.0 * math.sin(8.0 * t)}, sample_time=Ts)
    samples = np.append(Ts * np.arange(30), t_end)                 # t0 + k Ts and t_end: linear between
    u_samples = 12.0 * np.sin(8.0 * samples)
    ref = by_hand(lambda t: np.interp(t, samples, u_samples), samples, r.t)
    assert np.all(close(dynamica_rows(r), ref, 1e-8))
    (tmp_path / "u.csv").write_text(
        "t,u\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(samples, u_samples))
    )
    r2 = dynamica.simulate(motor, t_end=t_end, output_step=0.005, rtol=1e-12, atol=1e-12,
                           inputs={"u": str(tmp_path / "u.csv")})
    assert np.all(close(dynamica_rows(r2), ref, 1e-8))


def pd_controller(model, ref=0.8, kp=300.0, kd=15.0, calls=None):
    """A discrete PD controller with gravity compensation (the model's own gravity_forces)."""
    hold = model.parameters["R"] / (model.parameters["N"] * model.parameters["k_t"])

    def f(t, q, qd, s):
        if calls is not None:
            calls.append((t, q.copy(), qd.copy(), s.copy()))
        return {"u": float(np.clip(hold * model.gravity_forces(q)[0] + kp * (ref - q[0]) - kd * qd[0], -24, 24))}
    return f


def test_controller_sampled_exactly_reaches_its_set_point(motor):
    Ts, calls = 1e-3, []
    r = dynamica.simulate(motor, t_end=1.5, output_step=Ts, rtol=1e-10, atol=1e-10,
                          controller=pd_controller(motor, calls=calls), sample_time=Ts)
    times = np.array([c[0] for c in calls])
    assert np.array_equal(times, Ts * np.arange(1500))            # t0 + k Ts, k = 0 .. (t_end - t0)/Ts - 1
    assert r.info["controller_calls"] == 1500
    rows = {tk: k for k, tk in enumerate(r.t)}
    for t, q, qd, s in calls[::50]:                                  # with the state at the sample time
        k = rows[t]
        assert abs(q[0] - r.q[k, 0]) <= 1e-14 and abs(qd[0] - r.qd[k, 0]) <= 1e-12
        assert abs(s[0] - r.outputs["i_m"][k]) <= 1e-12
    assert abs(r.q[-1, 0] - 0.8) < 1e-4 and abs(r.qd[-1, 0]) < 1e-3


def test_controller_values_are_held_between_samples(motor):
    Ts, answers = 2.0 ** -6, []                   # binary fractions: the rows fall on the samples exactly
    pd = pd_controller(motor)

    def recorded(t, q, qd, s):
        answers.append((t, pd(t, q, qd, s)["u"]))
        return {"u": answers[-1][1]}
    r = dynamica.simulate(motor, t_end=0.25, output_step=Ts / 4, controller=recorded, sample_time=Ts)
    starts = np.array([t for t, _ in answers])
    k = np.searchsorted(starts, r.t, side="right") - 1
    assert np.array_equal(r.outputs["u"], np.array([u for _, u in answers])[k])
    assert len(set(r.outputs["u"])) > 5


def test_controlled_run_equals_hand_equations_and_not_the_integrator(motor):
    Ts, t_end = 2e-3, 0.3
    out = {}
    for method, tol in (("adams", 1e-11), ("DOP853", 1e-11), ("RK45", 1e-10)):
        out[method] = dynamica.simulate(motor, t_end=t_end, output_step=Ts, rtol=tol, atol=tol, method=method,
                                        controller=pd_controller(motor), sample_time=Ts)
    # by hand: the same controller (gravity by hand too), held from sample to sample
    hold = V["R"] / (V["N"] * V["k_t"])
    y, rows, cuts = np.zeros(3), [np.zeros(3)], Ts * np.arange(int(round(t_end / Ts)) + 1)
    for a, b in zip(cuts[:-1], cuts[1:]):
        u = float(np.clip(hold * V["m"] * V["g"] * V["l"] / 2 * math.cos(y[0]) + 300.0 * (0.8 - y[0]) - 15.0 * y[1],
                          -24, 24))
        y = solve_ivp(motor_rhs(lambda t: u), (a, b), y, method="DOP853", rtol=1e-12, atol=1e-12).y[:, -1]
        rows.append(y)
    ref = np.array(rows)
    for method, r in out.items():
        assert np.allclose(r.t, cuts, rtol=0, atol=1e-15)
        assert np.all(close(dynamica_rows(r), ref, 1e-8 if method != "RK45" else 1e-7)), method
    a, b = dynamica_rows(out["adams"]), dynamica_rows(out["DOP853"])
    assert np.all(close(a, b, 1e-8))


RAM = {"name": "ram",
       "parameters": {"m": 50.0, "A": 2.0e-3, "C": 1.0e-12, "p0": 1.0e6, "Qp": 1.0e-4},
       "inputs": ["Q"],
       "states": {"p": {"initial": "p0", "der": "(Q - A*der(x))/C"}},
       "bodies": [{"name": "piston", "parent": "ground", "joint": [{"translate": "x", "q": "x"}], "mass": "m",
                   "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]}],
       "forces": [{"type": "generalized_force", "coordinate": "x", "value": "A*(p - p0)"}]}


def ram_closed_form(t, m=50.0, A=2.0e-3, C=1.0e-12, p0=1.0e6, Q=1.0e-4):
    """m x'' = A (p - p0), C p' = Q - A x' from rest: w = A / sqrt(m C),
    x' = Q/A (1 - cos wt), x = Q/A (t - sin(wt)/w), p = p0 + m Q w / A^2 sin wt."""
    w = A / math.sqrt(m * C)
    return Q / A * (t - np.sin(w * t) / w), Q / A * (1 - np.cos(w * t)), p0 + m * Q * w / A ** 2 * np.sin(w * t)


def test_hydraulic_pressure_build_up_equals_its_closed_form(tmp_path):
    ram = dynamica.load(write_model(tmp_path, RAM))
    r = dynamica.simulate(ram, t_end=0.1, output_step=1e-4, rtol=1e-12, atol=1e-12,
                          inputs={"Q": ([0.0], [1.0e-4])})
    x, v, p = ram_closed_form(r.t)
    for got, ref in ((r.q[:, 0], x), (r.qd[:, 0], v), (r.outputs["p"] - 1.0e6, p - 1.0e6)):
        assert np.abs(got - ref).max() <= 1e-8 * np.abs(ref).max()


def test_event_on_a_state(tmp_path):
    data = {**RAM, "inputs": [], "states": {"p": {"initial": "p0", "der": "(Qp - A*der(x))/C"}}}
    ram = dynamica.load(write_model(tmp_path, data))
    dp = 2.0e5

    def reached(t, y):                 # y = [x, x', p]
        return y[2] - (1.0e6 + dp)
    reached.terminal = True
    r = dynamica.simulate(ram, t_end=0.1, rtol=1e-12, atol=1e-12, events=[reached])
    w = 2.0e-3 / math.sqrt(50.0 * 1.0e-12)
    amp = 50.0 * 1.0e-4 * w / 2.0e-3 ** 2
    assert abs(r.info["t_events"][0][0] - math.asin(dp / amp) / w) <= 1e-10


def test_energy_balance_with_motor_and_damper(tmp_path):
    """E(t) - E(0) (energy outputs) = the work of the motor torque and the damper, integrated
    as a state written by hand: W' = N k_t i phi' - b phi'^2."""
    data = yaml.safe_load((MODELS / "dc_motor_joint.yaml").read_text())
    data["states"]["W"] = {"initial": 0, "der": "N*k_t*i_m*der(phi) - b*der(phi)**2"}
    model = dynamica.load(write_model(tmp_path, data))
    assert model.states == ("i_m", "W")
    r = dynamica.simulate(model, t_end=1.0, output_step=2e-3, rtol=1e-11, atol=1e-11,
                          controller=pd_controller(model), sample_time=1e-3)
    E, W = r.outputs["energy.total"], r.outputs["W"]
    assert np.abs(E - E[0] - W).max() <= 1e-7 * np.abs(W).max()
    power = V["N"] * V["k_t"] * r.outputs["i_m"] * r.qd[:, 0] - V["b"] * r.qd[:, 0] ** 2
    np.testing.assert_allclose(r.outputs["energy.power"], power, rtol=1e-12, atol=1e-12 * np.abs(power).max())
    kinetic = 0.5 * J * r.qd[:, 0] ** 2
    np.testing.assert_allclose(r.outputs["energy.kinetic"], kinetic, rtol=1e-13, atol=1e-13 * kinetic.max())
    np.testing.assert_allclose(r.outputs["energy.potential"], V["m"] * V["g"] * V["l"] / 2 * np.sin(r.q[:, 0]),
                               rtol=1e-13, atol=1e-13)


def test_energy_against_the_numeric_reference_and_its_balance(tmp_path, models_dir):
    """energy.total = NumericReference.energy (kinetic, gravity, joint and line springs) at random
    states; with dampers, limits and bushings too, dE/dt = energy.power along a run."""
    from scipy.integrate import cumulative_simpson

    from dynamica.runtime.reference.numeric import NumericReference
    data = yaml.safe_load((models_dir / "forces_demo.yaml").read_text())
    data["forces"] = [f for f in data["forces"] if f["type"] in ("joint_spring_damper", "spring_damper")]
    for f in data["forces"]:
        f.pop("damping", None)
    data["outputs"] = {"energy": True}
    m = dynamica.load(write_model(tmp_path, data))
    ref = NumericReference(m.spec)
    perm = [ref.coordinates.index(c) for c in m.coordinates]
    rng = np.random.default_rng(4)
    for _ in range(5):
        q, qd = rng.uniform(-1, 1, m.n), rng.uniform(-1, 1, m.n)
        qr, qdr = np.empty(m.n), np.empty(m.n)
        qr[perm], qdr[perm] = q, qd
        out = m.outputs(0.3, q, qd)
        assert abs(out["energy.total"] - ref.energy(qr, qdr, 0.3)) <= 1e-12 * max(1.0, abs(out["energy.total"]))
        assert abs(out["energy.kinetic"] - 0.5 * qd @ m.mass_matrix(q) @ qd) <= 1e-12 * max(1.0, out["energy.kinetic"])
        assert abs(out["energy.power"]) <= 1e-12 * max(1.0, abs(out["energy.total"]))   # conservative
    m2 = dynamica.load(write_model(tmp_path, ENERGY_MODEL, "damped.yaml"))
    r = dynamica.simulate(m2, t_end=2.0, output_step=5e-4, rtol=1e-12, atol=1e-12)
    E, work = r.outputs["energy.total"], cumulative_simpson(r.outputs["energy.power"], x=r.t, initial=0.0)
    assert np.abs(E - E[0] - work).max() <= 1e-7 * np.abs(work).max()
    assert np.abs(work).max() > 1e-2 * np.abs(E).max()              # the dampers do work


#: two bodies with every force type that has a potential, damped, and a limit that is hit
ENERGY_MODEL = {
    "name": "damped", "parameters": {"m": 1.0, "l": 0.5, "g": 9.81, "k": 20.0, "d": 0.3},
    "gravity": [0, 0, "-g"],
    "bodies": [{"name": "a", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}], "mass": "m",
                "com": [0, 0, "-l"], "inertia": [0.01, 0.02, 0.025]},
               {"name": "b", "parent": "a", "joint": [{"translate": [0, 0, "-l"]}, {"rotate": "y", "q": "psi"}],
                "mass": "m", "com": [0.1, 0, "-l"], "inertia": [0.02, 0.025, 0.03, 0.001, 0.002, 0.003]}],
    "forces": [{"type": "joint_spring_damper", "coordinate": "psi", "stiffness": "k", "damping": "d"},
               {"type": "spring_damper", "body_a": "ground", "point_a": [0, 0.3, 0], "body_b": "b",
                "point_b": [0, 0, "-l"], "stiffness": "k", "damping": "d", "free_length": 0.2},
               {"type": "bushing", "body_a": "a", "point_a": [0, 0, 0], "body_b": "b", "point_b": [0, 0, 0.1],
                "stiffness": [5, 6, 7], "damping": [0.1, 0.1, 0.1], "rotational_stiffness": [3, 3, 3],
                "rotational_damping": [0.01, 0.02, 0.03]},
               {"type": "limit", "coordinate": "phi", "lower": -0.2, "upper": 0.4, "stiffness": 2, "decay": 30,
                "damping": 0.1}],
    "initial": {"phi": 0.3, "psi": -0.5, "der(phi)": 1.0},
    "outputs": {"energy": True},
}


STATE_MODEL = {
    "name": "stateful",
    "parameters": {"k": 2.0, "g": 9.81, "c": 0.3},
    "gravity": [0, 0, "-g"],
    "functions": {"stiff": {"x": [-1.0, 0.0, 0.5, 1.0, 2.0], "y": [1.0, 0.0, 1.0, 5.0, 6.0], "interpolation": "cubic"}},
    "inputs": ["u"],
    "states": {"i_m": {"initial": "k/4", "der": "(u - k*i_m - der(a))*0.5 + stiff(a)*0.1"},
               "z": {"initial": 0.1, "der": "-c*z + i_m*der(b)"}},
    "bodies": [{"name": "b1", "parent": "ground", "joint": [{"rotate": "x", "q": "a"}], "mass": 1.0,
                "com": [0, 0, -0.5], "inertia": [0.1, 0.12, 0.02]},
               {"name": "b2", "parent": "b1", "joint": [{"translate": [0, 0, -1.0]}, {"rotate": "y", "q": "b"}],
                "mass": 0.7, "com": [0.1, 0, -0.4], "inertia": [0.05, 0.04, 0.03]}],
    "forces": [{"type": "generalized_force", "coordinate": "a", "value": "u*i_m + stiff(a)"},
               {"type": "joint_spring_damper", "coordinate": "b", "stiffness": "1 + z**2", "damping": 0.1}],
    "initial": {"a": 0.3, "der(b)": 1.0},
}


@pytest.fixture(scope="module")
def stateful_path(tmp_path_factory):
    return write_model(tmp_path_factory.mktemp("stateful"), STATE_MODEL)


@pytest.mark.parametrize("form,mode,backend", [("articulated", "symbolic", "c"), ("lagrange1", "symbolic", "c"),
                                               ("hamilton-composite", "symbolic", "c"),
                                               ("hamilton-ltdl", "symbolic", "c"), ("iterative-m", "symbolic", "c"),
                                               ("composite", "numeric", "c"), ("composite", "symbolic", "fortran"),
                                               ("hamilton-composite", "symbolic", "fortran")])
def test_every_form_integrates_the_same_states(stateful_path, form, mode, backend):
    ref = dynamica.load(stateful_path)
    model = dynamica.load(stateful_path, form=form, mode=mode, backend=backend)
    assert model.states == ("i_m", "z") and model.state_size == 2 * 2 + 2
    signal = {"u": ([0.0, 0.2, 0.6], [0.0, 1.0, -1.0])}
    a = dynamica.simulate(ref, t_end=0.6, output_step=0.05, rtol=1e-11, atol=1e-11, inputs=signal)
    b = dynamica.simulate(model, t_end=0.6, output_step=0.05, rtol=1e-11, atol=1e-11, inputs=signal)
    for key in ("i_m", "z", "u"):
        np.testing.assert_allclose(b.outputs[key], a.outputs[key], rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(b.q, a.q, rtol=1e-8, atol=1e-9)
    np.testing.assert_allclose(b.qd, a.qd, rtol=1e-8, atol=1e-9)


def test_states_start_from_their_initial_values_and_s0(stateful_path):
    m = dynamica.load(stateful_path)
    np.testing.assert_array_equal(m.initial_states(), [0.5, 0.1])
    np.testing.assert_array_equal(m.initial_states({"k": 4.0}), [1.0, 0.1])
    r = dynamica.simulate(m, t_end=0.1, inputs={"u": ([0.0], [0.0])}, s0=[0.2, -0.3], output_step=0.05)
    assert r.outputs["i_m"][0] == 0.2 and r.outputs["z"][0] == -0.3


def test_missing_and_malformed_inputs_are_named(motor, tmp_path):
    calls = []

    def spy(answer):
        def f(t, q, qd, s):
            calls.append(t)
            return answer
        return f
    cases = [
        (dict(), r"input\(s\) `u` of the model \(entry `inputs`\) not supplied"),
        (
            dict(controller=spy({}), sample_time=0.01),
            r"`u`.*neither a signal nor returned by the controller at t = 0.0",
        ),
        (dict(controller=spy({"u": float("nan")}), sample_time=0.01), r"input `u`.*not finite"),
        (dict(controller=spy({"u": 1.0, "w": 2.0}), sample_time=0.01), r"returned `w` .*not inputs of the model"),
        (dict(controller=spy(3.0), sample_time=0.01), r"the controller returned float .* expected a dict"),
        (dict(inputs={"v": ([0.0], [1.0])}), r"`v` is not an input of the model; its inputs are u"),
        (dict(inputs={"u": ([0.0, 1.0, 1.0], [0.0, 1.0, 2.0])}), r"input `u`: the times must increase strictly"),
        (dict(inputs={"u": str(tmp_path / "none.csv")}), r"input `u`: file not found"),
        (dict(inputs={"u": lambda t: "1 V"}), r"input `u` at t = 0.0: expected a number, found str '1 V'"),
        (dict(inputs={"u": lambda t: math.inf}), r"input `u` at t = 0.0: the value inf is not finite"),
        (dict(inputs={"u": ([0.0, 1.0], [0.0, float("inf")])}), r"input `u`: the times and values must be finite"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InputError, match=message) as info:
            dynamica.simulate(motor, t_end=0.1, **kwargs)
        assert str(MODELS / "dc_motor_joint.yaml") in str(info.value) or "dc_motor_joint.yaml" in str(info.value)
    assert set(calls) == {0.0}                     # the bad answers stop the run at its first sample
    with pytest.raises(ValueError, match="sample_time"):
        dynamica.simulate(motor, t_end=0.1, controller=spy({"u": 0.0}))
    with pytest.raises(ValueError, match="events"):
        dynamica.simulate(motor, t_end=0.1, inputs={"u": ([0.0], [0.0])}, events=[lambda t, y: y[0]])


def test_command_line_input_file(motor, tmp_path):
    """`dynamica simulate --input u=FILE.csv` runs the model with that signal (the same rows as
    simulate(inputs=...)); without it the run stops with an error naming the input."""
    from dynamica.runtime.cli import main as cli
    from dynamica.runtime.results.result import SimulationResult
    (tmp_path / "u.csv").write_text("t,u\n0.0,0.0\n0.05,12.0\n0.3,12.0\n")
    out = tmp_path / "run.csv"
    cli.main(["simulate", str(MODELS / "dc_motor_joint.yaml"), "--t-end", "0.3", "--output-step", "0.01",
              "--input", f"u={tmp_path / 'u.csv'}", "--out", str(out), "--quiet"])
    got = SimulationResult.read_csv(out)
    ref = dynamica.simulate(motor, t_end=0.3, output_step=0.01, inputs={"u": ([0.0, 0.05, 0.3], [0.0, 12.0, 12.0])})
    np.testing.assert_array_equal(got.q, ref.q)
    np.testing.assert_array_equal(got.outputs["u"], ref.outputs["u"])
    assert cli.main(["simulate", str(MODELS / "dc_motor_joint.yaml"), "--t-end", "0.1", "--quiet"]) == 2
