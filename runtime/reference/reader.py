"""What the numeric reference reads of a model file itself: the parameters' values, the bodies'
mass, centre of mass and inertia, gravity, the force elements (with the defaults
docs/model_format.md documents) and the tabulated functions (inline or from their CSV files),
each parsed here from the YAML text by the rules of docs/model_format.md and not taken from the
loader's ModelSpec, so that a misreading there (a default, an inertia order, a table's column) is
not repeated in the oracle. The loader's data serve only where there is no such file to read: a
model given as a mapping, a stage's structure, a URDF or MJCF robot; and for the force elements
other sections make (the `contact` section's pairs, whose shapes the reference's contact law reads
from them).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

#: docs/model_format.md, "Inertia": the mapping form's keys, in the order of the 6-entry form
INERTIA_KEYS = ("Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz")
#: docs/model_format.md, "Forces": the optional keys of each force type and their defaults
#: (`point` of a body_force defaults to the body's centre of mass: None here)
FORCE_DEFAULTS = {
    "joint_spring_damper": {"stiffness": 0, "damping": 0, "neutral": 0},
    "generalized_force": {},
    "body_force": {"point": None, "force": (0, 0, 0), "torque": (0, 0, 0), "frame": "ground"},
    "spring_damper": {"damping": 0},
    "limit": {"damping": 0},
    "bushing": {"point_a": (0, 0, 0), "point_b": (0, 0, 0), "stiffness": (0, 0, 0), "damping": (0, 0, 0),
                "rotational_stiffness": (0, 0, 0), "rotational_damping": (0, 0, 0)},
    "armature": {},
    "rotation_armature": {},
    "stop": {"damping": 0},
}
#: the keys of each force type that are vectors (a list of three expressions or a vector parameter)
FORCE_VECTORS = {"body_force": ("point", "force", "torque"), "spring_damper": ("point_a", "point_b"),
                 "bushing": tuple(FORCE_DEFAULTS["bushing"])}


@dataclass(frozen=True)
class Table:
    """A tabulated function as docs/model_format.md, "Tabulated functions", defines it."""
    name: str
    x: tuple
    y: tuple
    z: tuple = ()
    interpolation: str = "linear"
    extrapolation: str = "hold"

    @property
    def arity(self) -> int:
        return 2 if self.z else 1


@dataclass(frozen=True)
class ModelData:
    """The numbers and expression texts the reference evaluates."""
    parameters: dict            # name -> float or tuple of floats
    bodies: dict                # name -> (mass, com (3 texts), inertia (6 texts, Ixx Iyy Izz Ixy Iyz Ixz))
    gravity: tuple              # 3 texts
    forces: tuple               # (type, {key: value}), the name under "name"
    functions: tuple            # Table


def read(spec) -> ModelData:
    """The model's data from its YAML file when the file describes the spec's bodies (else the
    loader's, see the module's docstring)."""
    path = Path(spec.file)
    if path.is_file() and path.suffix in (".yaml", ".yml") and not getattr(spec, "stages", ()):
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        if isinstance(raw, dict) and {b.get("name") for b in raw.get("bodies", ())} == {b.name for b in spec.bodies}:
            data = _from_file(raw, path.parent)
            named = {fields["name"] for _, fields in data.forces}
            made = tuple((f.type, dict(f.fields)) for f in spec.forces if f["name"] not in named)
            return ModelData(data.parameters, data.bodies, data.gravity, data.forces + made, data.functions)
    data = _from_spec(spec)
    robot = urdf(spec)
    if robot is not None:                          # a URDF robot's inertial numbers, read from its XML
        data = ModelData(data.parameters | robot[0], data.bodies, data.gravity, data.forces, data.functions)
    return data


def _from_spec(spec) -> ModelData:
    return ModelData(
        parameters={p.name: p.value for p in spec.parameters},
        bodies={b.name: (b.mass, tuple(b.com), tuple(b.inertia)) for b in spec.bodies},
        gravity=tuple(spec.gravity),
        forces=tuple((f.type, dict(f.fields)) for f in spec.forces),
        functions=tuple(Table(tf.name, tuple(tf.x), tuple(tf.y), tuple(tf.z), tf.interpolation, tf.extrapolation)
                        for tf in getattr(spec, "functions", ())))


def _from_file(raw, folder: Path) -> ModelData:
    parameters = {name: _value(v) for name, v in (raw.get("parameters") or {}).items()}
    vectors = {name: len(v) for name, v in parameters.items() if isinstance(v, tuple)}

    def vector(v):
        return tuple(f"{v}[{k}]" for k in range(vectors[v])) if isinstance(v, str) else tuple(v)

    bodies = {}
    for b in raw["bodies"]:
        massless = b["mass"] == 0 and not isinstance(b["mass"], bool)
        com = vector(b["com"]) if "com" in b or not massless else (0, 0, 0)
        bodies[b["name"]] = (_text(b["mass"]), tuple(_text(x) for x in com),
                             tuple(_text(x) for x in _inertia(b.get("inertia", (0, 0, 0)) if massless
                                                              else b["inertia"], vector)))
    forces = []
    for index, f in enumerate(raw.get("forces") or ()):
        kind = f["type"]
        fields = {k: v for k, v in f.items() if k != "type"}
        fields.setdefault("name", f"{kind}_{index}")
        for key, default in FORCE_DEFAULTS.get(kind, {}).items():
            if key not in fields:
                fields[key] = bodies[f["body"]][1] if default is None else default
        for key in FORCE_VECTORS.get(kind, ()):
            fields[key] = vector(fields[key])
        forces.append((kind, fields))
    functions = tuple(_table(name, t, folder) for name, t in (raw.get("functions") or {}).items())
    gravity = tuple(_text(x) for x in vector(raw.get("gravity", (0, 0, 0))))
    return ModelData(parameters, bodies, gravity, tuple(forces), functions)


def _value(v):
    """A parameter's value in SI: a number, a quantity text ("250 mm"), a list of them, or a
    mapping with `value` and an optional `unit` (docs/model_format.md, "Units and numbers")."""
    unit = v.get("unit") if isinstance(v, dict) else None
    v = v["value"] if isinstance(v, dict) else v
    if isinstance(v, list):
        return tuple(_si(x, unit) for x in v)
    return _si(v, unit)


#: unit symbols whose factor to SI is 1 (read without pint)
_SI = {"", "1", "m", "kg", "s", "N", "rad", "sr", "Pa", "J", "W", "A", "V", "K", "mol", "Hz", "C", "ohm", "T", "Wb"}
_QUANTITY = re.compile(r"^\s*([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?)"      # a number, then a unit
                       r"\s+([A-Za-z\u00b0][A-Za-z0-9_*/^ .()\u00b2\u00b3-]*)$")


def _si(v, unit=None) -> float:
    """A number (times its unit's factor to SI) or a quantity text, as a float in SI units (pint,
    the maintained units library, read here apart from the loader's own conversion)."""
    if isinstance(v, str):
        m = _QUANTITY.match(v)
        if m is None:
            return float(v)
        v, unit = float(m.group(1)), m.group(2)
    if unit is None or all(tok in _SI for tok in re.split(r"[\s*/^().0-9-]+", str(unit))):
        return float(v)
    import pint
    return float(pint.UnitRegistry().Quantity(float(v), str(unit)).to_base_units().magnitude)


def _text(v):
    """An expression text of a body entry, a quantity ("2 kg") as its SI number."""
    return _si(v) if isinstance(v, str) and _QUANTITY.match(v) else v


def _inertia(v, vector) -> tuple:
    """The six components Ixx Iyy Izz Ixy Iyz Ixz of any form of docs/model_format.md, "Inertia"."""
    if isinstance(v, dict):
        return tuple(v.get(k, 0) for k in INERTIA_KEYS)
    v = vector(v) if isinstance(v, str) else tuple(v)
    return v + (0, 0, 0) if len(v) == 3 else v


def _table(name, t, folder: Path) -> Table:
    options = {k: t[k] for k in ("interpolation", "extrapolation") if k in t}
    if "table" not in t:
        z = tuple(tuple(float(x) for x in row) for row in t.get("z", ()))
        return Table(name, tuple(map(float, t["x"])), tuple(map(float, t["y"])),
                     tuple(x for row in z for x in row), **options)
    with open(folder / t["table"], newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.reader(fh) if r and r[0].strip() and not r[0].lstrip().startswith("#")]
    header = None
    try:
        float(rows[0][0])
    except ValueError:
        header, rows = [c.strip() for c in rows[0]], rows[1:]
    cols = [header.index(c) if isinstance(c, str) else c for c in t.get("columns", (0, 1))]
    return Table(name, tuple(float(r[cols[0]]) for r in rows), tuple(float(r[cols[1]]) for r in rows), **options)


# --------------------------------------------------------------------------- URDF
def _identifier(name):
    """docs/urdf.md: a URDF name as an identifier, other characters than letters, digits and `_`
    becoming `_` (the rarer renamings, of keywords and leading digits, are not repeated here: such
    a model is read from the loader's data)."""
    return re.sub(r"[^A-Za-z0-9_]", "_", name)


def _floats(text, default):
    return tuple(float(x) for x in text.split()) if text is not None else default


def _rpy_matrix(rpy):
    """URDF's fixed-axis roll, pitch, yaw: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    import numpy as np
    r, p, y = rpy
    cr, sr, cp, sp_, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return (np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]]) @ np.array([[cp, 0, sp_], [0, 1, 0], [-sp_, 0, cp]])
            @ np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]]))


def _origin(el):
    o = el.find("origin") if el is not None else None
    return (_floats(o.get("xyz"), (0.0, 0.0, 0.0)), _floats(o.get("rpy"), (0.0, 0.0, 0.0))) if o is not None else \
        ((0.0, 0.0, 0.0), (0.0, 0.0, 0.0))


def _urdf_joint(j, spec_coords):
    """A URDF joint's steps (the root's when j is None: welded, or free with six coordinates), or
    None when the model's coordinates are not the joint's."""
    if j is None:                                       # the root: welded, or free (floating=True)
        if len(spec_coords) not in (0, 6):
            return None
        axes = ((1, 0, 0), (0, 1, 0), (0, 0, 1))
        return [("translate", ax, c, None, None) for ax, c in zip(axes, spec_coords[:3])] + \
               [("rotate", ax, c, None, None) for ax, c in zip(axes, spec_coords[3:])]
    xyz, (roll, pitch, yaw) = _origin(j)
    tr = [("offset", xyz, None, None, None)] if any(xyz) else []
    tr += [("rotate", ax, None, angle, None) for ax, angle in
           (((0, 0, 1), yaw), ((0, 1, 0), pitch), ((1, 0, 0), roll)) if angle]
    axis = _floats(j.find("axis").get("xyz") if j.find("axis") is not None else None, (1.0, 0.0, 0.0))
    kind = j.get("type")
    if kind in ("revolute", "continuous", "prismatic"):
        if spec_coords != [_identifier(j.get("name"))]:
            return None
        tr.append(("rotate" if kind != "prismatic" else "translate", axis, spec_coords[0], None, None))
    elif kind != "fixed" or spec_coords:
        return None
    return tr


def _urdf_inertial(name, body, inertial):
    """The inertial parameters `<link>_mass`, `_com`, `_inertia` read from a link's <inertial>
    ({} when the model's are numbers or the link has none; None when the names do not match)."""
    import numpy as np
    if inertial is None or inertial.find("mass") is None or isinstance(body.mass, (int, float)):
        return {}
    if (body.mass, tuple(body.com), tuple(body.inertia)) != (
            f"{name}_mass", tuple(f"{name}_com[{k}]" for k in range(3)),
            tuple(f"{name}_inertia[{k}]" for k in range(6))):
        return None
    xyz, rpy = _origin(inertial)
    el = inertial.find("inertia")
    g = {k: float(el.get(k, 0.0)) for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")} if el is not None else {}
    I_ = np.array([[g.get("ixx", 0), g.get("ixy", 0), g.get("ixz", 0)], [g.get("ixy", 0), g.get("iyy", 0),
                  g.get("iyz", 0)], [g.get("ixz", 0), g.get("iyz", 0), g.get("izz", 0)]])
    R = _rpy_matrix(rpy)
    Il = R @ I_ @ R.T
    return {f"{name}_mass": float(inertial.find("mass").get("value")), f"{name}_com": tuple(xyz),
            f"{name}_inertia": (Il[0, 0], Il[1, 1], Il[2, 2], Il[0, 1], Il[1, 2], Il[0, 2])}


def urdf(spec):
    """(parameter values, joints) of a model loaded from a URDF file, read here from its XML with
    the standard library (not the importer's library or mapping): per joint its origin (translate,
    then rotate about z by yaw, y by pitch, x by roll) and its motion about or along its axis
    (URDF's default axis x); per link its mass, centre of mass and inertia (the inertial frame's
    tensor R I R^T in link axes). The importer's names are used where they are names (bodies are
    links, coordinates joints, the inertial parameters `<link>_mass`, `_com`, `_inertia`); None when
    they do not match (renamed identifiers), and then the loader's data serve."""
    import xml.etree.ElementTree as ET
    path = Path(spec.file)
    if not path.is_file() or path.suffix != ".urdf":
        return None
    root = ET.parse(path).getroot()
    links = {_identifier(el.get("name")): el for el in root.findall("link")}
    joints = {_identifier(el.find("child").get("link")): el for el in root.findall("joint")}
    bodies = {b.name: b for b in spec.bodies}
    if set(links) != set(bodies):
        return None
    out_joints, values = {}, {}
    for name, body in bodies.items():
        tr = _urdf_joint(joints.get(name), [tr.q for tr in body.joint if tr.q is not None])
        inertial = _urdf_inertial(name, body, links[name].find("inertial"))
        if tr is None or inertial is None:
            return None
        out_joints[name] = tr
        values.update(inertial)
    return values, out_joints
