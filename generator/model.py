"""Model loading and validation: YAML file -> ModelSpec (MODEL_FORMAT.md, version 1).

`load_model` returns plain frozen data (no sympy): expressions stay as the model's text (or
numbers) after being checked by the restricted parser, and every problem in the file is
collected into one `ModelError` naming the entry path and what was expected.
"""

from __future__ import annotations

import keyword
import math
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import sympy as sp
import yaml

from dynamica.errors import ModelError, Problem
from dynamica.generator import expr as ex

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1),
        "-x": (-1, 0, 0), "-y": (0, -1, 0), "-z": (0, 0, -1)}
INERTIA_KEYS = ("Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz")
#: integrators `simulate` accepts
INTEGRATORS = ("adams", "stoermer6", "radau", "RK45", "DOP853", "LSODA", "BDF", "Radau")


class DynamicaWarning(UserWarning):
    """Physically dubious but allowed input (negative mass, indefinite inertia, ...)."""


# ---------------------------------------------------------------- plain data
@dataclass(frozen=True)
class Parameter:
    name: str
    value: float | tuple            # float, or tuple of floats for a vector parameter
    unit: str = ""
    description: str = ""

    @property
    def size(self) -> int:
        return len(self.value) if isinstance(self.value, tuple) else 1


@dataclass(frozen=True)
class Transform:
    """One elementary transform of a joint: `rotate`/`translate` along a unit axis by `q`
    (a coordinate) or `by` (an expression of t and parameters), or a constant `offset`."""

    kind: str                       # "rotate" | "translate" | "offset"
    vector: tuple                   # axis (3 expressions, normalised later) or the offset
    q: str | None = None
    by: object = None
    path: str = ""


@dataclass(frozen=True)
class Body:
    name: str
    parent: str
    joint: tuple                    # of Transform
    mass: object
    com: tuple
    inertia: tuple                  # [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] about the com, body axes
    path: str = ""

    @property
    def coordinates(self) -> tuple:
        return tuple(tr.q for tr in self.joint if tr.q is not None)


@dataclass(frozen=True)
class Force:
    type: str
    fields: tuple                   # ((key, value), ...) with defaults filled in
    path: str = ""

    def __getitem__(self, key):
        return dict(self.fields)[key]


@dataclass(frozen=True)
class Outputs:
    points: tuple = ()              # ((name, body, at), ...)
    angular: tuple = ()             # body names
    reactions: bool = False
    expressions: tuple = ()         # ((name, text), ...)
    forces: bool = False            # the value of every force element


@dataclass(frozen=True)
class Simulate:
    t_end: float = 10.0
    output_step: float | None = None
    integrator: str = "adams"
    rtol: float = 1e-8
    atol: float = 1e-10
    form: str | None = None


@dataclass(frozen=True)
class ModelSpec:
    name: str
    file: str
    parameters: tuple               # of Parameter
    gravity: tuple                  # 3 expressions
    bodies: tuple                   # of Body, in file order
    initial: tuple                  # ((key, value), ...): key `q` or `der(q)`
    forces: tuple = ()
    outputs: Outputs = field(default_factory=Outputs)
    simulate: Simulate = field(default_factory=Simulate)
    description: str = ""

    @cached_property
    def coordinates(self) -> tuple:
        return tuple(c for b in self.bodies for c in b.coordinates)

    @cached_property
    def _base_scope(self) -> ex.Scope:
        scalars = frozenset(p.name for p in self.parameters if p.size == 1 and not isinstance(p.value, tuple))
        vectors = {p.name: p.size for p in self.parameters if isinstance(p.value, tuple)}
        return ex.Scope(scalars=scalars, vectors=vectors, coordinates=frozenset(self.coordinates))

    def scope(self, **kw) -> ex.Scope:
        return self._base_scope.child(**kw)

    def defaults(self) -> dict:
        """Symbol -> default value, for every parameter slot."""
        out = {}
        for p in self.parameters:
            if isinstance(p.value, tuple):
                for k, v in enumerate(p.value):
                    out[ex.param_symbol(p.name, k)] = v
            else:
                out[ex.param_symbol(p.name)] = p.value
        return out


# ---------------------------------------------------------------- loading
def load_model(source) -> ModelSpec:
    """Read and validate a model file (a path) or an already-parsed mapping."""
    if isinstance(source, dict):
        return _Loader("<dict>", source).run()
    path = Path(source)
    if not path.is_file():
        raise ModelError(str(path), [Problem("", "file not found")])
    try:
        # libyaml's parser when present (same YAML, ~10x faster on large models)
        text = path.read_text(encoding="utf-8")
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as exc:
        try:                               # the pure-Python parser's message quotes the offending line
            yaml.safe_load(text)
        except yaml.YAMLError as exc2:
            exc = exc2
        raise ModelError(str(path), [Problem("", f"not valid YAML: {exc}")]) from None
    return _Loader(str(path), data).run()


class _Loader:
    TOP = {"name", "description", "parameters", "gravity", "bodies", "initial", "forces",
           "outputs", "simulate"}

    def __init__(self, file: str, data):
        self.file = file
        self.data = data
        self.problems: list[Problem] = []

    # -- helpers
    def err(self, path: str, msg: str):
        self.problems.append(Problem(path, msg))

    def keys(self, d: dict, path: str, allowed, required=()):
        for k in d:
            if k not in allowed:
                hint = ex.did_you_mean(str(k), allowed)
                self.err(f"{path}.{k}" if path else str(k),
                         f"unknown key{hint}; expected one of {', '.join(sorted(allowed))}")
        for k in required:
            if k not in d:
                self.err(path or "<top>", f"missing required key `{k}`")

    def ident(self, value, path: str, what: str) -> bool:
        if not isinstance(value, str) or not IDENT.match(value):
            self.err(path, f"expected {what} (an identifier), found {value!r}")
            return False
        if value in ex.RESERVED:
            self.err(path, f"`{value}` is a reserved name and cannot be {what}")
            return False
        if keyword.iskeyword(value):
            self.err(path, f"`{value}` is a Python keyword and cannot be {what} (an expression could "
                           "not refer to it)")
            return False
        return True

    def expression(self, value, path: str, scope: ex.Scope):
        """Check an expression; return it unchanged (text or number) or None if invalid."""
        try:
            ex.parse(value, scope)
        except ex.ExpressionError as exc:
            self.err(path, str(exc))
            return None
        return value

    def vector(self, value, path: str, scope: ex.Scope, n: int = 3, what="a vector"):
        """A list of n expressions, or the name of a vector parameter of length n."""
        if isinstance(value, str) and value in scope.vectors:
            if scope.vectors[value] != n:
                self.err(path, f"vector parameter `{value}` has length {scope.vectors[value]}, expected {n}")
                return None
            return tuple(f"{value}[{k}]" for k in range(n))
        if not isinstance(value, (list, tuple)) or len(value) != n:
            self.err(path, f"expected {what} of {n} numbers or expressions (or a vector parameter "
                           f"of length {n}), found {value!r}")
            return None
        out = [self.expression(v, f"{path}[{k}]", scope) for k, v in enumerate(value)]
        return None if any(o is None for o in out) else tuple(out)

    def number(self, value, path: str, positive=False):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            self.err(path, f"expected a number, found {value!r}")
            return None
        if positive and value <= 0:
            self.err(path, f"expected a positive number, found {value!r}")
            return None
        return float(value)

    # -- sections
    def run(self) -> ModelSpec:
        d = self.data
        if not isinstance(d, dict):
            raise ModelError(self.file, [Problem("", f"expected a mapping at the top level, found {type(d).__name__}")])
        self.keys(d, "", self.TOP, required=("name", "bodies"))
        name = d.get("name")
        if "name" in d:
            self.ident(name, "name", "the model name")
        description = d.get("description", "")
        if not isinstance(description, str):
            self.err("description", "expected a string")
        params = self.params = self.parameters(d.get("parameters") or {})
        self.pscope = _scope_of(params, frozenset())
        gravity = self.vector(d.get("gravity", [0, 0, 0]), "gravity",
                              self.pscope.child(time_allowed=False)) or (0, 0, 0)
        bodies = self.bodies(d.get("bodies"))
        coords = [c for b in bodies for c in b.coordinates]
        self.fscope = _scope_of(params, frozenset(coords)).child(coordinates_allowed=True)
        body_names = {b.name for b in bodies}
        initial = self.initial(d.get("initial") or {}, coords)
        forces = self.forces(d.get("forces") or [], coords, body_names, bodies)
        outputs = self.outputs(d.get("outputs") or {}, body_names)
        simulate = self.simulate(d.get("simulate") or {})
        for p in params:
            if p.name in coords:
                self.err("parameters", f"`{p.name}` is both a parameter and a joint coordinate")
        if self.problems:
            raise ModelError(self.file, self.problems)
        spec = ModelSpec(name=name, file=self.file, parameters=tuple(params), gravity=gravity,
                         bodies=tuple(bodies), initial=tuple(initial), forces=tuple(forces),
                         outputs=outputs, simulate=simulate, description=description or "")
        _physics_warnings(spec)
        return spec

    def parameters(self, d) -> list:
        out = []
        if not isinstance(d, dict):
            self.err("parameters", f"expected a mapping name -> value, found {type(d).__name__}")
            return out
        for name, v in d.items():
            path = f"parameters.{name}"
            if not self.ident(name, path, "a parameter name"):
                continue
            unit = description = ""
            if isinstance(v, dict):
                self.keys(v, path, {"value", "unit", "description"}, required=("value",))
                unit, description = str(v.get("unit", "")), str(v.get("description", ""))
                v = v.get("value")
                path += ".value"
            if isinstance(v, (list, tuple)):
                vals = [self.number(x, f"{path}[{k}]") for k, x in enumerate(v)]
                if not vals:
                    self.err(path, "a vector parameter needs at least one element")
                elif all(x is not None for x in vals):
                    out.append(Parameter(name, tuple(vals), unit, description))
            else:
                x = self.number(v, path)
                if x is not None:
                    out.append(Parameter(name, x, unit, description))
        return out

    def bodies(self, lst) -> list:
        out = []
        if not isinstance(lst, list) or not lst:
            if lst is not None or "bodies" in self.data:
                self.err("bodies", "expected a non-empty list of bodies")
            return out
        seen_bodies, seen_coords = {}, {}
        # coordinate names first, so that misuse of one (in a mass, a `by`) is named as such
        self.pscope = self.pscope.child(coordinates=frozenset(_scan_coordinates(lst)))
        for i, b in enumerate(lst):
            path = f"bodies[{i}]"
            if not isinstance(b, dict):
                self.err(path, f"expected a mapping, found {b!r}")
                continue
            # an intermediate frame (`mass: 0`) may omit com and inertia; any other body gives both
            massless = b.get("mass") == 0 and not isinstance(b.get("mass"), bool)
            self.keys(b, path, {"name", "parent", "joint", "mass", "com", "inertia"},
                      required=("name", "parent", "joint", "mass") + (() if massless else ("com", "inertia")))
            name = b.get("name")
            ok = self.ident(name, f"{path}.name", "a body name")
            if ok and name in seen_bodies:
                self.err(f"{path}.name", f"duplicate body name `{name}` (also bodies[{seen_bodies[name]}])")
            if ok:
                seen_bodies.setdefault(name, i)
            parent = b.get("parent")
            if "parent" in b and not (parent == "ground" or (isinstance(parent, str) and IDENT.match(parent))):
                self.err(f"{path}.parent", f"expected `ground` or a body name, found {parent!r}")
            joint = self.joint(b.get("joint"), f"{path}.joint") if "joint" in b else ()
            for tr in joint:
                if tr.q is None:
                    continue
                if tr.q in seen_coords:
                    self.err(tr.path, f"coordinate `{tr.q}` is already defined at `{seen_coords[tr.q]}`")
                seen_coords.setdefault(tr.q, tr.path)
            sc = self.pscope.child(time_allowed=False)
            mass = self.expression(b.get("mass", 0), f"{path}.mass", sc) if "mass" in b else 0
            com = self.vector(b.get("com", [0, 0, 0]), f"{path}.com", sc) or (0, 0, 0)
            inertia = self.inertia(b.get("inertia", [0, 0, 0]), f"{path}.inertia", sc)
            out.append(Body(name=name, parent=parent, joint=tuple(joint), mass=mass if mass is not None else 0,
                            com=com, inertia=inertia, path=path))
        names = {b.name for b in out}
        for b in out:
            if b.parent != "ground" and isinstance(b.parent, str) and b.parent not in names:
                self.err(f"{b.path}.parent", f"unknown parent body `{b.parent}`"
                                             f"{ex.did_you_mean(b.parent, names | {'ground'})}")
            if b.parent == b.name:
                self.err(f"{b.path}.parent", f"body `{b.name}` cannot be its own parent")
        return out

    def inertia(self, v, path, sc):
        if isinstance(v, dict):
            self.keys(v, path, set(INERTIA_KEYS))
            vals = [self.expression(v.get(k, 0), f"{path}.{k}", sc) for k in INERTIA_KEYS]
            return tuple(x if x is not None else 0 for x in vals)
        if isinstance(v, str) and v in sc.vectors:
            n = sc.vectors[v]
            if n not in (3, 6):
                self.err(path, f"vector parameter `{v}` has length {n}, expected 6 or 3")
                return (0,) * 6
            elems = tuple(f"{v}[{k}]" for k in range(n))
            return elems + (0, 0, 0) if n == 3 else elems
        if isinstance(v, (list, tuple)) and len(v) in (3, 6):
            vals = [self.expression(x, f"{path}[{k}]", sc) for k, x in enumerate(v)]
            vals = tuple(x if x is not None else 0 for x in vals)
            return vals + (0, 0, 0) if len(v) == 3 else vals
        self.err(path, f"expected [Ixx, Iyy, Izz, Ixy, Iyz, Ixz], [Ixx, Iyy, Izz], a mapping with "
                       f"those keys or a vector parameter of length 6 or 3, found {v!r}")
        return (0,) * 6

    def axis(self, v, path):
        if isinstance(v, str) and v in AXES:
            return AXES[v]
        if isinstance(v, str) and v not in self.pscope.vectors:
            self.err(path, f"expected an axis x, y, z, -x, -y, -z or a 3-vector, found {v!r}"
                           f"{ex.did_you_mean(v, AXES)}")
            return None
        vec = self.vector(v, path, self.pscope.child(time_allowed=False), what="an axis")
        if vec is None:
            return None
        vals = _evaluate_defaults(vec, self.pscope, self.params)
        if vals is not None and np.linalg.norm(vals) == 0.0:
            self.err(path, f"zero axis {list(v)}: an axis must have non-zero length")
            return None
        return vec

    def joint(self, j, path) -> list:
        if isinstance(j, dict):
            return self.shorthand(j, path)
        if not isinstance(j, list):
            self.err(path, f"expected a list of elementary transforms or a shorthand mapping "
                           f"(`type: revolute` ...), found {j!r}")
            return []
        out = []
        for k, tr in enumerate(j):
            p = f"{path}[{k}]"
            if not isinstance(tr, dict):
                self.err(p, f"expected a mapping like `{{rotate: z, q: a}}`, found {tr!r}")
                continue
            self.keys(tr, p, {"rotate", "translate", "q", "by"})
            kinds = [x for x in ("rotate", "translate") if x in tr]
            if len(kinds) != 1:
                self.err(p, "expected exactly one of `rotate` or `translate`")
                continue
            kind = kinds[0]
            has_q, has_by = "q" in tr, "by" in tr
            if has_q and has_by:
                self.err(p, "a transform has exactly one of `q` or `by`, found both")
                continue
            if kind == "translate" and not has_q and not has_by:
                vec = self.vector(tr["translate"], f"{p}.translate",
                                  self.pscope.child(time_allowed=False), what="an offset")
                if isinstance(tr["translate"], str):
                    self.err(f"{p}.translate", f"`translate: {tr['translate']}` needs `q:` or `by:` "
                                               "(a constant offset is a list [x, y, z])")
                elif vec is not None:
                    out.append(Transform("offset", vec, path=p))
                continue
            if not has_q and not has_by:
                self.err(p, "`rotate` needs `q:` (a coordinate) or `by:` (an expression of t and parameters)")
                continue
            axis = self.axis(tr[kind], f"{p}.{kind}")
            if axis is None:
                continue
            if has_q:
                if self.ident(tr["q"], f"{p}.q", "a coordinate name"):
                    out.append(Transform(kind, axis, q=tr["q"], path=p))
            else:
                by = self.expression(tr["by"], f"{p}.by", self.pscope)
                if by is not None:
                    out.append(Transform(kind, axis, by=by, path=p))
        return out

    def shorthand(self, j, path) -> list:
        jt = j.get("type")
        if jt not in JOINT_TYPES:
            self.err(f"{path}.type", f"unknown joint type {jt!r}{ex.did_you_mean(str(jt), JOINT_TYPES)}; "
                                     f"expected one of {', '.join(JOINT_TYPES)} (or a list of transforms)")
            return []
        allowed, required, expand = JOINT_TYPES[jt]
        self.keys(j, path, allowed | {"type", "offset"}, required=required)
        if any(k not in j for k in required):
            return []
        q = j["q"]
        nq = {"revolute": 1, "prismatic": 1, "universal": 2, "spherical": 3, "free": 6}[jt]
        qs = [q] if isinstance(q, str) else q
        if not isinstance(qs, list) or len(qs) != nq:
            self.err(f"{path}.q", f"a {jt} joint takes {nq} coordinate name(s), found {q!r}")
            return []
        items = []
        if "offset" in j:
            items.append({"translate": j["offset"]})
        items += expand(j, qs)
        trs = self.joint(items, path)
        # shorthand transforms carry the shorthand's path
        return [Transform(t.kind, t.vector, t.q, t.by, path=path) for t in trs]

    def initial(self, d, coords) -> list:
        out = []
        if not isinstance(d, dict):
            self.err("initial", f"expected a mapping coordinate -> value, found {d!r}")
            return out
        keys = set(coords) | {f"der({c})" for c in coords}
        for k, v in d.items():
            path = f"initial.{k}"
            if k not in keys:
                self.err(path, f"unknown coordinate `{k}`{ex.did_you_mean(str(k), keys)}; "
                               "expected a coordinate name or der(name)")
                continue
            val = self.expression(v, path, self.pscope.child(time_allowed=False))
            if val is not None:
                out.append((k, val))
        return out

    def forces(self, lst, coords, body_names, bodies) -> list:
        out = []
        if not isinstance(lst, list):
            self.err("forces", f"expected a list of forces, found {lst!r}")
            return out
        com_of = {b.name: b.com for b in bodies}
        for i, f in enumerate(lst):
            path = f"forces[{i}]"
            if not isinstance(f, dict):
                self.err(path, f"expected a mapping with a `type`, found {f!r}")
                continue
            ft = f.get("type")
            if ft not in FORCE_TYPES:
                self.err(f"{path}.type", f"unknown force type {ft!r}{ex.did_you_mean(str(ft), FORCE_TYPES)}; "
                                         f"expected one of {', '.join(FORCE_TYPES)}")
                continue
            schema = FORCE_TYPES[ft]
            self.keys(f, path, set(schema) | {"type", "name"},
                      required=[k for k, (kind, dflt) in schema.items() if dflt is REQUIRED])
            fields = []
            for key, (kind, dflt) in schema.items():
                p = f"{path}.{key}"
                v = f.get(key, dflt)
                if v is REQUIRED or (v is None and kind in ("expr", "law")):     # optional, not given
                    continue
                if kind == "coordinate":
                    if v not in coords:
                        self.err(p, f"unknown coordinate {v!r}{ex.did_you_mean(str(v), coords)}")
                        continue
                elif kind in ("body", "body_or_ground"):
                    ok = v in body_names or (kind == "body_or_ground" and v == "ground")
                    if not ok:
                        self.err(p, f"unknown body {v!r}{ex.did_you_mean(str(v), body_names)}")
                        continue
                elif kind == "expr":
                    v = self.expression(v, p, self.fscope)
                elif kind == "law":
                    v = self.expression(v, p, self.fscope.child(local=LAW_LOCALS))
                elif kind == "vector":
                    v = self.vector(v, p, self.fscope)
                elif kind == "point":
                    if v is None:        # the centre of mass of the force's body
                        v = com_of.get(f.get("body"), (0, 0, 0))
                    else:
                        v = self.vector(v, p, self.pscope.child(time_allowed=False))
                elif kind == "frame":
                    if v not in ("ground", "body"):
                        self.err(p, f"expected `ground` or `body`, found {v!r}")
                        continue
                if v is None:
                    continue
                fields.append((key, v))
            given = dict(fields)
            if ft == "limit" and "lower" not in given and "upper" not in given:
                self.err(path, "a `limit` needs `lower`, `upper` or both")
            if ft == "spring_damper" and ("law" in f) == ("stiffness" in f):
                self.err(path, "a `spring_damper` needs either `stiffness` (linear) or `law` (an expression "
                               f"of {' and '.join(LAW_LOCALS)}), not {'both' if 'law' in f else 'neither'}")
            if ft == "spring_damper" and "law" in f and "damping" in f:
                self.err(f"{path}.damping", "with a `law`, put the damping into the law (elongation_rate)")
            name = f.get("name", f"{ft}_{i}")
            if "name" in f:
                self.ident(name, f"{path}.name", "a force name")
            out.append(Force(ft, tuple(fields) + (("name", name),), path))
        return out

    def outputs(self, d, body_names) -> Outputs:
        if not isinstance(d, dict):
            self.err("outputs", f"expected a mapping, found {d!r}")
            return Outputs()
        self.keys(d, "outputs", {"points", "angular", "reactions", "expressions", "forces"})
        points = []
        for name, pt in (d.get("points") or {}).items():
            p = f"outputs.points.{name}"
            if not self.ident(name, p, "a point name"):
                continue
            if not isinstance(pt, dict):
                self.err(p, f"expected {{body: NAME, at: [x, y, z]}}, found {pt!r}")
                continue
            self.keys(pt, p, {"body", "at"}, required=("body",))
            body = pt.get("body")
            if body not in body_names and body != "ground":
                self.err(f"{p}.body", f"unknown body {body!r}{ex.did_you_mean(str(body), body_names)}")
                continue
            at = self.vector(pt.get("at", [0, 0, 0]), f"{p}.at", self.pscope.child(time_allowed=False))
            if at is not None:
                points.append((name, body, at))
        angular = d.get("angular") or []
        if not isinstance(angular, list):
            self.err("outputs.angular", f"expected a list of body names, found {angular!r}")
            angular = []
        for k, b in enumerate(angular):
            if b not in body_names:
                self.err(f"outputs.angular[{k}]", f"unknown body {b!r}{ex.did_you_mean(str(b), body_names)}")
        reactions = d.get("reactions", False)
        if not isinstance(reactions, bool):
            self.err("outputs.reactions", f"expected true or false, found {reactions!r}")
            reactions = False
        forces = d.get("forces", False)
        if not isinstance(forces, bool):
            self.err("outputs.forces", f"expected true or false, found {forces!r}")
            forces = False
        exprs = []
        for name, e in (d.get("expressions") or {}).items():
            p = f"outputs.expressions.{name}"
            if name in OUTPUT_KEYS_RESERVED:
                self.err(p, f"`{name}` is the name of an output the tool writes; choose another")
            elif self.ident(name, p, "an expression name"):
                v = self.expression(e, p, self.fscope)
                if v is not None:
                    exprs.append((name, v))
        return Outputs(tuple(points), tuple(b for b in angular if b in body_names), reactions, tuple(exprs),
                       forces)

    def simulate(self, d) -> Simulate:
        if not isinstance(d, dict):
            self.err("simulate", f"expected a mapping, found {d!r}")
            return Simulate()
        self.keys(d, "simulate", {"t_end", "output_step", "integrator", "rtol", "atol", "form"})
        kw = {}
        for key in ("t_end", "output_step", "rtol", "atol"):
            if key in d:
                v = self.number(d[key], f"simulate.{key}", positive=True)
                if v is not None:
                    kw[key] = v
        if "integrator" in d:
            if d["integrator"] not in INTEGRATORS:
                self.err("simulate.integrator", f"unknown integrator {d['integrator']!r}"
                                                f"{ex.did_you_mean(str(d['integrator']), INTEGRATORS)}; "
                                                f"expected one of {', '.join(INTEGRATORS)}")
            else:
                kw["integrator"] = d["integrator"]
        if "form" in d:
            from dynamica.generator.forms import EQUATION_FORMS
            if d["form"] not in EQUATION_FORMS and d["form"] != "auto":
                self.err("simulate.form", f"unknown equation form {d['form']!r}; expected one of "
                                          f"{', '.join(EQUATION_FORMS)}")
            else:
                kw["form"] = d["form"]
        return Simulate(**kw)


REQUIRED = object()
#: output keys the tool always writes (API.md): an expression cannot take them
OUTPUT_KEYS_RESERVED = ("qdd",)

#: force type -> {key: (kind, default)}   (MODEL_FORMAT.md, "Vectors and defaults")
FORCE_TYPES = {
    "joint_spring_damper": {"coordinate": ("coordinate", REQUIRED), "stiffness": ("expr", 0),
                            "damping": ("expr", 0), "neutral": ("expr", 0)},
    "generalized_force": {"coordinate": ("coordinate", REQUIRED), "value": ("expr", REQUIRED)},
    "body_force": {"body": ("body", REQUIRED), "point": ("point", None), "force": ("vector", [0, 0, 0]),
                   "torque": ("vector", [0, 0, 0]), "frame": ("frame", "ground")},
    "spring_damper": {"body_a": ("body_or_ground", REQUIRED), "point_a": ("point", REQUIRED),
                      "body_b": ("body_or_ground", REQUIRED), "point_b": ("point", REQUIRED),
                      "stiffness": ("expr", None), "damping": ("expr", 0),
                      "free_length": ("expr", REQUIRED), "law": ("law", None)},
    # seed 003: F = (k - mu q') exp(-a (q - q1)) at a lower bound q1, mirrored at an upper bound
    "limit": {"coordinate": ("coordinate", REQUIRED), "lower": ("expr", None), "upper": ("expr", None),
              "stiffness": ("expr", REQUIRED), "damping": ("expr", 0), "decay": ("expr", REQUIRED)},
    # 6-DOF linear spring-damper between frames fixed in two bodies (axes parallel to body_a's)
    "bushing": {"body_a": ("body_or_ground", REQUIRED), "point_a": ("point", [0, 0, 0]),
                "body_b": ("body_or_ground", REQUIRED), "point_b": ("point", [0, 0, 0]),
                "stiffness": ("vector", [0, 0, 0]), "damping": ("vector", [0, 0, 0]),
                "rotational_stiffness": ("vector", [0, 0, 0]), "rotational_damping": ("vector", [0, 0, 0])},
}
#: names a spring_damper `law` may use besides parameters, coordinates and t
LAW_LOCALS = ("elongation", "elongation_rate")


def _rot(axis, q):
    return {"rotate": axis, "q": q}


#: joint shorthand -> (allowed keys, required keys, expansion into elementary transforms)
JOINT_TYPES = {
    "revolute": ({"axis", "q"}, ("axis", "q"), lambda j, q: [{"rotate": j["axis"], "q": q[0]}]),
    "prismatic": ({"axis", "q"}, ("axis", "q"), lambda j, q: [{"translate": j["axis"], "q": q[0]}]),
    "universal": ({"axes", "q"}, ("axes", "q"),
                  lambda j, q: [_rot(a, c) for a, c in zip(_two_axes(j["axes"]), q)]),
    "spherical": ({"q"}, ("q",), lambda j, q: [_rot(a, c) for a, c in zip("xyz", q)]),
    "free": ({"q"}, ("q",), lambda j, q: [{"translate": a, "q": c} for a, c in zip("xyz", q[:3])]
             + [_rot(a, c) for a, c in zip("xyz", q[3:])]),
}


def _scan_coordinates(bodies) -> list:
    """Names given to `q:` anywhere in the bodies' joints (before validation)."""
    out = []
    for b in bodies:
        j = b.get("joint") if isinstance(b, dict) else None
        items = [j] if isinstance(j, dict) else (j if isinstance(j, list) else [])
        for tr in items:
            q = tr.get("q") if isinstance(tr, dict) else None
            for name in (q if isinstance(q, list) else [q]):
                if isinstance(name, str):
                    out.append(name)
    return out


def _two_axes(axes):
    return axes if isinstance(axes, list) and len(axes) == 2 else [axes, axes]


def _scope_of(params, coords) -> ex.Scope:
    return ex.Scope(scalars=frozenset(p.name for p in params if not isinstance(p.value, tuple)),
                    vectors={p.name: p.size for p in params if isinstance(p.value, tuple)},
                    coordinates=coords)


def _evaluate_defaults(texts, scope: ex.Scope, params):
    """Numeric value of parameter-only expressions at default values (None if not numeric)."""
    subs = {}
    for p in params:
        if isinstance(p.value, tuple):
            subs.update({ex.param_symbol(p.name, k): v for k, v in enumerate(p.value)})
        else:
            subs[ex.param_symbol(p.name)] = p.value
    try:
        return np.array([float(ex.parse(t, scope).subs(subs)) for t in texts])
    except (TypeError, ValueError, ex.ExpressionError):
        return None


def evaluate(spec: ModelSpec, texts, extra=None) -> np.ndarray:
    """Evaluate parameter-only expressions at the parameters' default values."""
    return _evaluator(spec, extra)(texts)


def _evaluator(spec: ModelSpec, extra=None):
    """`evaluate` with the scope and substitutions prepared once (for per-body loops)."""
    scope = spec.scope(time_allowed=True)
    subs = spec.defaults()
    subs[ex.T] = 0.0
    if extra:
        subs.update(extra)
    subs = {k: sp.Float(v) for k, v in subs.items()}
    return lambda texts: np.array([float(ex.parse(t, scope).xreplace(subs)) for t in texts])


def _mass_properties(spec: ModelSpec):
    """(body, mass, principal moments about the com, tolerance) at the default parameters, for
    the bodies whose values are numbers there."""
    value = _evaluator(spec)
    for b in spec.bodies:
        try:
            m = value([b.mass])[0]
            ixx, iyy, izz, ixy, iyz, ixz = value(b.inertia)
        except (TypeError, ValueError):
            continue
        ev = np.linalg.eigvalsh(np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
        yield b, m, ev, 1e-12 * max(1.0, abs(ev).max())


def negative_bodies(spec: ModelSpec) -> list:
    """Names of the bodies with a negative mass or an indefinite inertia (default parameters)."""
    return [b.name for b, m, ev, tol in _mass_properties(spec) if m < 0 or ev.min() < -tol]


def _physics_warnings(spec: ModelSpec):
    """Negative mass, indefinite inertia, triangle inequality: warnings naming the body."""
    for b, m, ev, tol in _mass_properties(spec):
        if m < 0:
            _warn(spec, f"body `{b.name}` has negative mass {m}")
        if ev.min() < -tol:
            _warn(spec, f"inertia of body `{b.name}` is indefinite (principal moments {ev.tolist()})")
        elif ev[2] > ev[0] + ev[1] + tol:
            _warn(spec, f"inertia of body `{b.name}` violates the triangle inequality "
                        f"(principal moments {ev.tolist()})")


def _warn(spec, message):
    """A warning attributed to the model file (not to a line of dynamica's code)."""
    warnings.warn_explicit(f"{spec.file}: {message}", DynamicaWarning, filename=spec.file, lineno=0,
                           module="dynamica.model")
