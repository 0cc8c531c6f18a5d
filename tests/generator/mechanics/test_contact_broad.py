"""The broad phase of contact (docs/contact.md, "Broad phase"; generator/mechanics/broad_phase.py,
templates/native/dynamica_broad.h): the pairs leave the generated equations and a C routine over
constant tables evaluates them.

Oracles: the numeric reference (runtime/reference/, numpy, written apart) for q'' of every pair
type, to 1e-12 relative as the generated pairs' tests (test_contact_pairs.py): the two codes
differ by the rounding of sums of forces of up to 1e4 N on 1 kg bodies; and the generated pairs
(`broad_phase: false`) for q'' and every contact output, to 1e-13 relative (the same expressions,
summed in another order). A pair whose bounding spheres are apart has exactly zero force.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.mechanics import broad_phase
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import write_model
from helpers import CONTACT_PAIRS, CONTACT_SHAPES

LAW = {"stiffness": 1e4, "damping": 0.3, "friction": 0.6, "stiction_velocity": 0.01}


def _free(name, mass=1.0, inertia=(0.01, 0.02, 0.03)):
    q = [f"{name}_{c}" for c in ("x", "y", "z", "a", "b", "c")]
    return {"name": name, "parent": "ground", "joint": {"type": "free", "q": q}, "mass": mass,
            "com": [0, 0, 0], "inertia": list(inertia)}


def _model(name, shapes, pairs, bodies, broad):
    return {"name": name, "gravity": [0, 0, -9.81], "bodies": [_free(b) for b in bodies],
            "contact": {"shapes": shapes, "defaults": dict(LAW), "pairs": pairs, "broad_phase": broad},
            "outputs": {"forces": True}}


#: test_contact_pairs.py's scene (tests/helpers.py)
SHAPES, PAIRS = CONTACT_SHAPES, CONTACT_PAIRS
#: every pair penetrates by 5 cm or more here (test_contact_pairs.py)
Q = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0, -0.162, -0.043, -0.083, 0.142, -0.427, 0.458,
              -0.038, 0.026, -0.199, -0.415, 0.204, -0.146])


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    models = {}
    for broad in (True, False):
        d = _model(f"bp{int(broad)}", SHAPES, PAIRS, ("p", "r", "k"), broad)
        models[broad] = dynamica.load(write_model(tmp_path_factory.mktemp(f"bp{int(broad)}"), d))
    return models, NumericReference(load_model(_model("bp", SHAPES, PAIRS, ("p", "r", "k"), False)))


def _rel(a, b):
    return np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(np.max(np.abs(b)), 1e-300)


def test_broad_phase_is_the_generated_pairs_and_the_reference(scene):
    models, ref = scene
    assert broad_phase.used(models[True].spec) and not broad_phase.used(models[False].spec)
    qd = np.random.default_rng(3).normal(0, 0.7, 18)
    broad, plain = models[True].outputs(0.0, Q, qd), models[False].outputs(0.0, Q, qd)
    assert all(np.max(v) > 0.05 for k, v in plain.items() if k.endswith(".penetration"))
    assert _rel(models[True].qdd(Q, qd), ref.qdd(Q, qd)) < 1e-12
    assert _rel(models[True].qdd(Q, qd), models[False].qdd(Q, qd)) < 1e-13
    contact = [k for k in plain if k.startswith("contact_")]
    assert len(contact) == 5 * len(PAIRS)
    for key in plain:
        assert _rel(broad[key], plain[key]) < 1e-13, key


def test_a_pair_whose_spheres_are_apart_has_exactly_zero_force(scene):
    """The ball lifted 1 m: its three pairs are skipped; their force is exactly 0, their distance
    the gap of the bounding spheres (a lower bound of the narrow phase's, which is positive)."""
    models, ref = scene
    q = Q.copy()
    q[2] += 1.0
    qd = np.random.default_rng(4).normal(0, 0.7, 18)
    broad, plain = models[True].outputs(0.0, q, qd), models[False].outputs(0.0, q, qd)
    for pair in ("contact_floor_ball", "contact_ball_pin", "contact_ball_rod"):
        assert np.all(np.asarray(broad[f"{pair}.force"]) == 0.0)
        assert np.all(np.asarray(broad[f"{pair}.normal_force"]) == 0.0)
        # (a plane's and a sphere's gap is the narrow phase's distance: equal to rounding, 1e-12 m)
        assert 0 < np.min(broad[f"{pair}.distance"]) <= np.min(plain[f"{pair}.distance"]) + 1e-12
    assert _rel(models[True].qdd(q, qd), ref.qdd(q, qd)) < 1e-12
    assert _rel(models[True].qdd(q, qd), models[False].qdd(q, qd)) < 1e-13


def test_the_other_pair_types_agree_with_the_reference(tmp_path):
    """box-box, box-sphere, box-capsule, sphere-sphere and plane-cylinder, each penetrating."""
    shapes = {"A": {"type": "box", "body": "a", "size": [0.4, 0.4, 0.4]},
              "B": {"type": "box", "body": "b", "size": [0.2, 0.3, 0.2], "rpy": [0.3, 0.2, 0.1]},
              "S": {"type": "sphere", "body": "s", "radius": 0.1},
              "C": {"type": "capsule", "body": "c", "radius": 0.05, "length": 0.3, "rpy": [0, 1.5708, 0]},
              "S2": {"type": "sphere", "body": "c", "radius": 0.1, "at": [-0.25, -0.07, 0]},
              "Y": {"type": "cylinder", "body": "y", "radius": 0.1, "length": 0.2, "rpy": [0.3, 1.2, 0]},
              "floor": {"type": "plane", "body": "ground", "at": [0, 0, -0.5]}}
    pairs = [{"a": "A", "b": "B"}, {"a": "A", "b": "S"}, {"a": "A", "b": "C"}, {"a": "S", "b": "S2"},
             {"a": "floor", "b": "Y"}]
    d = _model("bt", shapes, pairs, ("a", "b", "s", "c", "y"), True)
    model = dynamica.load(write_model(tmp_path, d))
    ref = NumericReference(load_model(d))
    q = np.zeros(30)
    q[6:9], q[12:15], q[18:21], q[24:27] = (0.3, 0.05, 0.1), (-0.25, 0, 0), (0, 0.22, 0), (1, 0, -0.45)
    qd = np.random.default_rng(6).normal(0, 0.7, 30)
    out = model.outputs(0.0, q, qd)
    assert all(np.max(out[f"contact_{p['a']}_{p['b']}.penetration"]) > 1e-3 for p in pairs), out
    assert _rel(model.qdd(q, qd), ref.qdd(q, qd)) < 1e-12


def test_law_parameters_are_read_at_run_time(scene, tmp_path):
    models, _ = scene
    d = _model("bpp", SHAPES, PAIRS, ("p", "r", "k"), True)
    d["parameters"] = {"kc": 1e4, "mu": 0.6}
    d["contact"]["defaults"].update(stiffness="kc", friction="mu")
    model = dynamica.load(write_model(tmp_path, d))
    qd = np.random.default_rng(3).normal(0, 0.7, 18)
    assert np.array_equal(model.qdd(Q, qd), models[True].qdd(Q, qd))
    ref = NumericReference(load_model({**d, "parameters": {"kc": 2e4, "mu": 0.3}}))
    assert _rel(model.qdd(Q, qd, params={"kc": 2e4, "mu": 0.3}), ref.qdd(Q, qd)) < 1e-12


def test_a_ball_dropped_in_broad_phase_lands_at_the_free_fall_time(tmp_path):
    """Events come from the routine's gaps: the first contact at sqrt(2 h / g) (h = 0.9 m)."""
    d = _model("bpd", {"floor": {"type": "plane", "body": "ground"},
                       "ball": {"type": "sphere", "body": "p", "radius": 0.1}},
               [{"a": "floor", "b": "ball"}], ("p",), True)
    d["initial"] = {"p_z": 1.0}
    model = dynamica.load(write_model(tmp_path, d))
    r = dynamica.simulate(model, 0.5, output_step=0.01)
    first = r.info["contacts"][0]
    assert first[1] == "contact_floor_ball" and first[3] == 1
    assert abs(first[0] - np.sqrt(2 * 0.9 / 9.81)) < 1e-9


def test_broad_phase_errors_name_the_entry(tmp_path):
    d = _model("bpe", SHAPES, PAIRS, ("p", "r", "k"), "sometimes")
    with pytest.raises(ModelError, match=r"contact.broad_phase.*true, false or auto"):
        load_model(d)
    d = _model("bpe", SHAPES, PAIRS, ("p", "r", "k"), True)
    d["parameters"] = {"kc": 1e4}
    d["contact"]["defaults"]["stiffness"] = "2 * kc"
    with pytest.raises(ModelError, match=r"contact_floor_ball.*`stiffness` as a number or one parameter"):
        dynamica.generate(load_model(d))
    with pytest.raises(ModelError, match=r"contact.broad_phase.*fortran backend.*broad_phase: false"):
        dynamica.generate(load_model(copy.deepcopy(_model("bpe", SHAPES, PAIRS, ("p", "r", "k"), True))),
                          backend="fortran")


def test_the_derivatives_module_keeps_the_pairs_and_reads_the_same_p():
    """A derivatives module (scipy's implicit methods, statics) generates its pairs into its own
    equations under `broad_phase: true`, and keeps the wrench slots, so that the inputs' slots of p
    are where the main module has them."""
    from dynamica.generator.pipeline import generate_derivatives
    d = _model("bpd", {"floor": {"type": "plane", "body": "ground"},
                       "ball": {"type": "sphere", "body": "p", "radius": 0.1}}, [{"a": "floor", "b": "ball"}],
               ("p",), True)
    d["inputs"] = ["u"]
    main, deriv = dynamica.generate(load_model(d)), generate_derivatives(load_model(d))
    assert "broad_phase" in dict(main.module_ir.info) and "broad_phase" not in dict(deriv.module_ir.info)
    assert main.module_ir.parameters == deriv.module_ir.parameters
    assert len(main.module_ir.parameter_defaults) == len(deriv.module_ir.parameter_defaults)


def test_inputs_and_extra_states_reach_the_broad_phase_module(tmp_path):
    """An input and an extra state live in p after the wrench slots: rhs = the generated pairs' rhs
    (1e-13 relative), the ball pressed into the floor by the input and the state."""
    rhs = {}
    for broad in (True, False):
        d = _model(f"bpi{int(broad)}", {"floor": {"type": "plane", "body": "ground"},
                                        "ball": {"type": "sphere", "body": "p", "radius": 0.1}},
                   [{"a": "floor", "b": "ball"}], ("p",), broad)
        d["inputs"] = ["u"]
        d["states"] = {"s": {"initial": 0, "der": "u - s"}}
        d["forces"] = [{"type": "generalized_force", "coordinate": "p_z", "value": "-u - 10 * s"}]
        (tmp_path / str(broad)).mkdir()
        model = dynamica.load(write_model(tmp_path / str(broad), d))
        y = np.zeros(model.state_size)
        y[2], y[6:12], y[12] = 0.09, [0.1, -0.2, -0.3, 0.5, 0.2, -0.1], 2.0
        rhs[broad] = model.rhs(0.0, y, inputs={"u": 3.0})
    assert rhs[True][8] != 0 and _rel(rhs[True], rhs[False]) < 1e-13


def test_the_exported_c_library_carries_the_broad_phase(tmp_path):
    """The standalone C library's example (Dormand-Prince, rtol 1e-12) integrates a ball resting in
    the floor (k = 1e4 N/m^1.5: 10 ms oscillations) like scipy's DOP853 on the module's rhs, 1e-9."""
    import subprocess

    from scipy.integrate import solve_ivp

    from dynamica.runtime.export import export_c
    d = _model("bpx", {"floor": {"type": "plane", "body": "ground"},
                       "ball": {"type": "sphere", "body": "p", "radius": 0.1}}, [{"a": "floor", "b": "ball"}],
               ("p",), True)
    d["initial"] = {"p_z": 0.098, "der(p_x)": 0.1}
    model = dynamica.load(write_model(tmp_path, d))
    folder = export_c(model, tmp_path / "lib")
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-I.", "main.c", "bpx.c", "-lm",
                    "-o", "example"], cwd=folder, check=True, capture_output=True)
    proc = subprocess.run(["./example", "0.1", "0.02", "1e-12", "1e-14"], cwd=folder, capture_output=True,
                          text=True, check=True)
    rows = np.array([line.split() for line in proc.stdout.splitlines() if not line.startswith("#")], dtype=float)
    y0 = model.to_state(*model.initial_state())
    ref = solve_ivp(model.rhs_function(), (0, 0.1), y0, method="DOP853", rtol=1e-13, atol=1e-14, t_eval=rows[:, 0])
    assert np.ptp(rows[:, 3]) > 1e-4                       # it moves in the floor's spring
    np.testing.assert_allclose(rows[:, 1:], ref.y.T, rtol=0, atol=1e-9)


@pytest.mark.parametrize("form", ["iterative-m", "lagrange1"])
def test_other_forms_take_the_broad_phase(tmp_path, form):
    """The iterative forms' entry points and another Lagrangian form: q'' as the reference's, 1e-12."""
    d = _model("bpf", SHAPES, PAIRS, ("p", "r", "k"), True)
    model = dynamica.load(write_model(tmp_path, d), form=form)
    qd = np.random.default_rng(3).normal(0, 0.7, 18)
    assert _rel(model.qdd(Q, qd), NumericReference(load_model(d)).qdd(Q, qd)) < 1e-12


def test_the_contacts_elastic_energy_is_in_the_potential(tmp_path):
    """A ball 1 cm into the floor: energy.potential = m g z + k delta^(e+1) / (e+1) (closed form, 1e-12
    relative); a ball above it: m g z alone."""
    d = _model("bpv", {"floor": {"type": "plane", "body": "ground"},
                       "ball": {"type": "sphere", "body": "p", "radius": 0.1}}, [{"a": "floor", "b": "ball"}],
               ("p",), True)
    d["outputs"] = {"energy": True}
    model = dynamica.load(write_model(tmp_path, d))
    for z, delta in ((0.09, 0.01), (0.3, 0.0)):
        q = np.zeros(6)
        q[2] = z
        V = float(model.outputs(0.0, q, np.zeros(6))["energy.potential"])
        expected = 9.81 * z + LAW["stiffness"] * delta ** 2.5 / 2.5
        assert abs(V - expected) < 1e-12 * abs(expected), (z, V, expected)


def test_the_routines_sizes_are_the_generators():
    """The C routine's row sizes and its room for contact points (templates/native/dynamica_broad.h)
    are the generator's (broad_phase.py): a pair type with more points than the routine's default
    room overran its stack buffer once."""
    import re
    from pathlib import Path
    text = (Path(broad_phase.__file__).resolve().parents[2] / "templates" / "native" / "dynamica_broad.h").read_text()
    defs = dict(re.findall(r"#define (DYN_CB_\w+) (\d+)", text))
    assert int(defs["DYN_CB_SHAPE"]) == broad_phase.SHAPE_ROW and int(defs["DYN_CB_PAIR"]) == broad_phase.PAIR_ROW
    assert int(defs["DYN_CB_POSE"]) == broad_phase.POSE and int(defs["DYN_CB_IN"]) == broad_phase.SIZE_IN
    assert int(defs["DYN_CB_MAX_POINTS"]) == max(broad_phase.POINTS.values())


def test_the_cylinder_pairs_agree_with_the_reference(tmp_path):
    """sphere-cylinder (the side) and capsule-cylinder (the capsule's middle across the side), each
    penetrating by 5 / 3 cm, through the broad phase: q'' against the numeric reference (1e-12)."""
    shapes = {"Y": {"type": "cylinder", "body": "y", "radius": 0.1, "length": 0.2},
              "S": {"type": "sphere", "body": "s", "radius": 0.1},
              "C": {"type": "capsule", "body": "c", "radius": 0.1, "length": 0.3, "rpy": [0, 1.5708, 0]}}
    pairs = [{"a": "S", "b": "Y"}, {"a": "C", "b": "Y"}]
    d = _model("bcyl", shapes, pairs, ("y", "s", "c"), True)
    model = dynamica.load(write_model(tmp_path, d))
    ref = NumericReference(load_model(d))
    q = np.zeros(18)
    q[6:9], q[12:15] = (0.15, 0.0, 0.0), (0.0, 0.17, 0.0)
    qd = np.random.default_rng(8).normal(0, 0.7, 18)
    out = model.outputs(0.0, q, qd)
    assert all(np.max(out[f"contact_{p['a']}_{p['b']}.penetration"]) > 1e-2 for p in pairs), out
    assert _rel(model.qdd(q, qd), ref.qdd(q, qd)) < 1e-12
