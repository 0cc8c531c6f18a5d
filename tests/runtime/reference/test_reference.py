"""The numeric reference (runtime/reference/numeric.py) is an oracle of its own.

It imports nothing of the generator, and its conventions are pinned by closed forms written here:
the sense of a rotation about a named and a vector axis, the order of the inertia components, the
frame of a body force, a driven joint. Tolerance 1e-12 relative.
"""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import yaml

from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import MODELS
from helpers import rel_err


def test_the_reference_imports_nothing_of_the_generator():
    code = ("import sys, dynamica.runtime.reference.numeric; "
            "print(sorted(m for m in sys.modules if m.startswith('dynamica.generator')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def _one_body(joint, inertia=(0, 0, 0), com=(0, 0, 0), mass=1.0, forces=(), parameters=None, gravity=(0, 0, 0)):
    spec = load_model({"name": "one", "parameters": parameters or {}, "gravity": list(gravity),
                       "bodies": [{"name": "b", "parent": "ground", "joint": joint, "mass": mass,
                                   "com": list(com), "inertia": list(inertia)}],
                       "forces": list(forces)})
    return NumericReference(spec)


def test_pendulum_and_rotation_sense():
    """rotate: x by +q takes body (0, 0, -l) to ground (0, l sin q, -l cos q): a ground-y force F
    there gives m l^2 q'' = F l cos q; about -x (or the vector [-2, 0, 0]) the sign flips.
    Gravity alone: q'' = -g l sin q / l^2 (point mass)."""
    force = {"type": "body_force", "body": "b", "force": [0, 3.0, 0], "point": [0, 0, -0.5]}
    for axis, sign in (("x", 1.0), ("-x", -1.0), ([-2, 0, 0], -1.0), ([5, 0, 0], 1.0)):
        ref = _one_body([{"rotate": axis, "q": "q"}], com=(0, 0, -0.5), mass=2.0, forces=[force])
        for q in (0.3, -1.1, 2.0):
            assert rel_err(ref.qdd([q], [0.7]), [sign * 3.0 * math.cos(q) / (2.0 * 0.5)]) < 1e-12, axis
    ref = _one_body([{"rotate": "x", "q": "q"}], com=(0, 0, -0.5), mass=2.0, gravity=(0, 0, -9.81))
    assert rel_err(ref.qdd([0.4], [1.0]), [-9.81 * math.sin(0.4) / 0.5]) < 1e-12


def test_inertia_component_order():
    """Spinning about a unit axis n under a unit generalized force: q'' = 1 / (n . I . n), with
    I = [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] about the centre of mass at the origin."""
    I = [2.0, 3.0, 5.0, 0.3, -0.4, 0.7]
    for axis, nIn in (([1, 1, 0], (I[0] + I[1]) / 2 + I[3]), ([0, 1, 1], (I[1] + I[2]) / 2 + I[4]),
                      ([1, 0, 1], (I[0] + I[2]) / 2 + I[5]), ("z", I[2])):
        ref = _one_body([{"rotate": axis, "q": "a"}], inertia=I,
                        forces=[{"type": "generalized_force", "coordinate": "a", "value": 1}])
        assert rel_err(ref.qdd([0.4], [1.3]), [1.0 / nIn]) < 1e-12, axis


def test_body_force_frames():
    """Turntable about z; force F along x at body point (0, r, 0): moment -r F about z when the
    components are in the body frame, -r F cos q in the ground frame; plus a torque tau."""
    for frame, moment in (("body", lambda q: -0.5 * 2.0), ("ground", lambda q: -0.5 * math.cos(q) * 2.0)):
        force = {"type": "body_force", "body": "b", "point": [0, 0.5, 0], "force": [2.0, 0, 0],
                 "torque": [0, 0, 0.3], "frame": frame}
        ref = _one_body([{"rotate": "z", "q": "q"}], inertia=(1, 1, 4.0), forces=[force])
        for q in (0.2, 1.3):
            assert rel_err(ref.qdd([q], [0.5]), [(moment(q) + 0.3) / 4.0]) < 1e-12, frame


def test_driven_pivot():
    """Pendulum on a pivot moved by z = A sin(w t): q'' = -(g + z'')/l sin q (point mass at l)."""
    ref = _one_body([{"translate": "z", "by": "A*sin(w*t)"}, {"rotate": "x", "q": "q"}], com=(0, 0, -0.5),
                    parameters={"A": 0.1, "w": 7.0}, gravity=(0, 0, -9.81))
    for t, q in ((0.1, 0.4), (0.9, -2.0)):
        zdd = -0.1 * 49.0 * math.sin(7.0 * t)
        assert rel_err(ref.qdd([q], [0.3], t), [-(9.81 + zdd) / 0.5 * math.sin(q)]) < 1e-12


def test_parameters_and_vector_parameters_in_order():
    ref = _one_body([{"rotate": "x", "q": "q"}], com=("c[0]", "c[1]", "c[2]"), mass="m",
                    parameters={"m": 1.5, "c": [0.0, 0.1, -0.4]}, gravity=(0, 0, -9.81))
    assert ref.slots == [("m", None), ("c", 0), ("c", 1), ("c", 2)]
    np.testing.assert_array_equal(ref.defaults, [1.5, 0.0, 0.1, -0.4])
    # a point mass at body (0, y, z), height y sin q + z cos q: m (y^2 + z^2) q'' = -m g (y cos q - z sin q)
    for p in ([1.5, 0.0, 0.1, -0.4], [0.7, 0.3, -0.2, 0.25]):
        m, _, y, z = p
        expect = -9.81 * (y * math.cos(0.8) - z * math.sin(0.8)) / (y * y + z * z)
        assert rel_err(ref.qdd([0.8], [0.0], params=p), [expect]) < 1e-12


def test_joint_shorthands_read_from_the_file(tmp_path):
    """From a file, the reference expands the shorthands and maps the named axes itself
    (docs/model_format.md); from a mapping it takes the loader's expansion. Both must agree."""
    from helpers import model_free_body, model_universal_spherical
    for model in (model_universal_spherical(), model_free_body()):
        model["parameters"]["ax"] = [0.3, -1.0, 0.5]
        model["bodies"].append({"name": "tip", "parent": model["bodies"][0]["name"],
                                "joint": {"type": "revolute", "axis": "ax", "q": "tip_q", "offset": [0, 0.1, 0]},
                                "mass": 0.3, "com": [0, 0, -0.1], "inertia": [0.01, 0.02, 0.015]})
        path = tmp_path / f"{model['name']}.yaml"
        path.write_text(yaml.safe_dump(model, sort_keys=False))
        from_file, from_dict = NumericReference(load_model(path)), NumericReference(load_model(model))
        assert from_file.coordinates == from_dict.coordinates
        rng = np.random.default_rng(4)
        for _ in range(3):
            q, qd = rng.uniform(-1, 1, (2, len(from_file.coordinates)))
            assert rel_err(from_file.qdd(q, qd, 0.4), from_dict.qdd(q, qd, 0.4)) < 1e-12


def _normal(data):
    """The reader's data with numbers as floats (the file's `1` and the loader's `1.0` alike)."""
    def norm(v):
        if isinstance(v, (list, tuple)):
            return tuple(norm(x) for x in v)
        if isinstance(v, dict):
            return {k: norm(x) for k, x in v.items()}
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return float(f"{float(v):.14g}")           # (a unit's factor may round differently in the last bit)
        return v
    return (norm(data.parameters), norm(data.bodies), norm(data.gravity), norm(data.forces),
            tuple((t.name, norm(t.x), norm(t.y), norm(t.z), t.interpolation, t.extrapolation)
                  for t in data.functions))


DEFAULTS_MODEL = """
name: defaults
parameters: {m: {value: 2000, unit: g}, r: [0.1, 0.0, "-300 mm"], I: {value: [0.2, 0.3, 0.4], unit: kg*m^2},
             k: {value: 5, unit: N/m}, a: 30 deg}
gravity: r
functions:
  push: {table: push.csv, columns: [time, F], interpolation: cubic}
  grid: {x: [0.0, 1.0], y: [0.0, 1.0, 2.0], z: [[0, 1, 2], [3, 4, 5]]}
bodies:
  - {name: a, parent: ground, joint: [{rotate: x, q: qa}], mass: m, com: r, inertia: I}
  - {name: b, parent: a, joint: {type: revolute, axis: y, q: qb}, mass: 1 kg, com: [0, 0, 20 cm],
     inertia: {Ixx: 0.1, Izz: 0.2, Ixy: -0.01}}
  - {name: c, parent: b, joint: [{translate: [0, 0, 0.1]}], mass: 0}
forces:
  - {type: body_force, body: b, force: ["push(t)", 0, 0]}
  - {type: joint_spring_damper, coordinate: qa, stiffness: k}
  - {type: limit, coordinate: qb, lower: -1, stiffness: 1, decay: 50}
  - {type: bushing, body_a: ground, body_b: b, stiffness: [1, 2, 3]}
  - {type: spring_damper, body_a: a, point_a: r, body_b: ground, point_b: [0, 1, 0], free_length: 0.5, stiffness: k}
  - {type: generalized_force, name: drive, coordinate: qa, value: "grid(t, qa)"}
"""


def test_the_reference_reads_the_model_file_itself(tmp_path):
    """The reference's own reading of each bundled model file and of one that leaves every
    optional key to its default (runtime/reference/reader.py: values, inertia forms, vector
    parameters, force defaults, tables from CSV files) equals the loader's: two readings of
    docs/model_format.md that share no code."""
    from dynamica.runtime.reference import reader
    (tmp_path / "defaults.yaml").write_text(DEFAULTS_MODEL)
    (tmp_path / "push.csv").write_text("# a push\nF,time\n0,0\n2,1\n1,2\n\n0,3\n")
    models = [p for p in sorted(MODELS.glob("*.yaml"))] + [tmp_path / "defaults.yaml"]
    assert len(models) >= 15
    for path in models:
        spec = load_model(path)
        if spec.stages:
            continue
        own, loaders = reader.read(spec), reader._from_spec(spec)
        assert own is not None and _normal(own) == _normal(loaders), path.name


def test_the_reference_takes_its_numbers_from_the_file_not_the_loader(tmp_path):
    """A loader that misread the file (a parameter's value, a force default, an inertia entry,
    a table's knots: here planted in the ModelSpec after loading) does not move the reference:
    its q'' stays the file's closed form."""
    import dataclasses
    path = tmp_path / "pendulum.yaml"
    path.write_text(
        "name: pendulum\nparameters: {m: 2.0, l: 0.5, k: {value: 3.0, unit: N*m/rad}}\n"
        "functions: {drive: {x: [0.0, 10.0], y: [1.0, 1.0]}}\n"
        "bodies:\n  - {name: b, parent: ground, joint: [{rotate: x, q: q}], mass: m, com: [0, 0, \"-l\"],"
        " inertia: {Ixx: 0.1}}\n"
        "forces:\n  - {type: joint_spring_damper, coordinate: q, stiffness: k}\n"
        "  - {type: generalized_force, coordinate: q, value: drive(t)}\n")
    spec = load_model(path)
    bad = dataclasses.replace(
        spec,
        parameters=tuple(dataclasses.replace(p, value=9.0) if p.name == "k" else p for p in spec.parameters),
        bodies=tuple(dataclasses.replace(b, inertia=(0.7, 0, 0, 0, 0, 0)) for b in spec.bodies),
        functions=tuple(dataclasses.replace(tf, y=(5.0, 5.0)) for tf in spec.functions))
    inertia = 0.1 + 2.0 * 0.5 ** 2                        # about the axis through O: Ixx + m l^2
    for s in (spec, bad):
        ref = NumericReference(s)
        q = 0.3
        assert rel_err(ref.qdd([q], [0.0]), [(-3.0 * q + 1.0) / inertia]) < 1e-12
