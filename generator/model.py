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
    """Read and validate a model file (a path) or an already-parsed mapping.

    Whatever the file holds, the result is a ModelSpec or one ModelError naming the file, the
    entries and what was expected (issue 12: tests/test_fuzz_models.py).
    """
    if isinstance(source, dict):
        return _checked(_Loader("<dict>", source))
    path = Path(source)
    return _checked(_Loader(str(path), read_yaml(path)))


def _checked(loader: "_Loader") -> ModelSpec:
    """The last line of defence: an exception the loader did not expect is still a ModelError
    naming the file and the entry being read (and asking for a report: it is a bug)."""
    try:
        return loader.run()
    except ModelError:
        raise
    except Exception as exc:                 # noqa: BLE001 (boundary: a bug must not escape as a traceback)
        raise ModelError(loader.file, [Problem(loader.entry, f"internal error of dynamica while reading this entry "
                                                             f"({type(exc).__name__}: {ex.shown(str(exc))}); "
                                                             "please report it with the model file")]) from exc


class YamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
    """PyYAML's safe loader (libyaml's parser when present: ~10x faster on large models) with the
    numbers of YAML 1.2's core schema: `1e-8`, `1E5` and `.5` are floats (YAML 1.1 reads the
    first two as strings), `012` is twelve, and `1:30` or `1_000` are strings, not numbers."""


_INT, _FLOAT = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
YamlLoader.yaml_implicit_resolvers = {
    ch: [(tag, rx) for tag, rx in resolvers if tag not in (_INT, _FLOAT)]
    for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
YamlLoader.add_implicit_resolver(_INT, re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$"),
                                 list("-+0123456789"))
YamlLoader.add_implicit_resolver(
    _FLOAT, re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                       r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"), list("-+.0123456789"))


def _construct_int(loader, node) -> int:
    """YAML 1.2 integers: decimal (leading zeros allowed), 0o octal, 0x hexadecimal."""
    text = loader.construct_scalar(node).strip()
    sign, digits = (-1, text[1:]) if text[:1] == "-" else (1, text.lstrip("+"))
    base = {"0o": 8, "0x": 16}.get(digits[:2], 10)
    return sign * int(digits[2:] if base != 10 else digits, base)


YamlLoader.add_constructor(_INT, _construct_int)


def read_yaml(path: Path):
    """The document of a model file; anything that is not a readable UTF-8 YAML text is a
    ModelError naming the file (and the line, for YAML errors)."""
    def fail(message):
        raise ModelError(str(path), [Problem("", message)])
    if path.is_dir():
        fail("is a directory, expected a model file")
    if not path.is_file():
        fail("file not found")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        fail(f"cannot read the file: {exc.strerror or exc}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        fail(f"not a UTF-8 text file (byte 0x{raw[exc.start]:02x} at line {line}): a model file is YAML "
             "text in UTF-8")
    if "\x00" in text:
        fail(f"not a text file (a NUL character at line {text.count(chr(10), 0, text.index(chr(0))) + 1})")
    try:
        return yaml.load(text.removeprefix("\ufeff"), Loader=YamlLoader)
    except yaml.MarkedYAMLError as exc:
        fail(_yaml_message(exc, text))
    except yaml.reader.ReaderError as exc:   # a character YAML does not allow (control characters)
        char = f"#x{exc.character:04x}" if isinstance(exc.character, int) else repr(exc.character)
        fail(f"not valid YAML at line {text.count(chr(10), 0, exc.position) + 1}: the character {char} "
             f"is not allowed ({exc.reason})")
    except RecursionError:
        fail("not valid YAML for this tool: collections nested too deeply")
    except Exception as exc:                 # noqa: BLE001 (boundary: a value PyYAML's constructors refuse)
        fail(f"not valid YAML: {ex.shown(str(exc), 200)}")


def _yaml_message(exc, text: str) -> str:
    """A YAML error as `line L, column C: problem (context)`, quoting the line (not PyYAML's
    `<unicode string>`)."""
    mark = exc.problem_mark or exc.context_mark
    out = "not valid YAML"
    if mark is not None:
        lines = text.splitlines()
        quoted = lines[mark.line].strip() if mark.line < len(lines) else ""
        out += f" at line {mark.line + 1}, column {mark.column + 1}"
        out += f" (`{quoted[:80]}`)" if quoted else ""
    out += f": {exc.problem or type(exc).__name__}"
    if exc.context:
        cm = exc.context_mark
        out += f", {exc.context}" + (f" at line {cm.line + 1}" if cm is not None else "")
    return out


class _Loader:
    TOP = {"name", "description", "parameters", "gravity", "bodies", "initial", "forces",
           "outputs", "simulate"}

    def __init__(self, file: str, data):
        self.file = file
        self.data = data
        self.problems: list[Problem] = []
        self.entry = ""                  # the entry being read (for an internal error's message)
        self.defaults_of = {}            # expression text -> its value at the parameters' defaults

    # -- helpers
    def err(self, path: str, msg: str):
        self.problems.append(Problem(path, msg))

    def section(self, d: dict, key: str, kind: type, default, what: str):
        """A top-level section: absent or null -> default; otherwise it must be a `kind`."""
        v = d.get(key)
        if v is None:
            return default
        if not isinstance(v, kind):
            self.err(key, f"expected {what}, found {_found(v)}")
            return default
        return v

    def keys(self, d: dict, path: str, allowed, required=()):
        for k in d:
            if k not in allowed:
                hint = ex.did_you_mean(str(k), allowed) if isinstance(k, str) and len(k) < 100 else ""
                self.err(_join(path, k), f"unknown key{hint}; expected one of {', '.join(sorted(allowed))}")
        for k in required:
            if k not in d:
                self.err(path or "<top>", f"missing required key `{k}`")

    def ident(self, value, path: str, what: str) -> bool:
        if not isinstance(value, str) or not IDENT.match(value):
            self.err(path, f"expected {what} (an identifier), found {_found(value)}")
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
        """Check an expression; return it unchanged (text or number) or None if invalid. Its value
        at the parameters' defaults, when it has one, must be a finite real number."""
        try:
            if isinstance(value, (int, float)) and not isinstance(value, bool):     # a literal number
                val = ex.number_value(value)
            else:
                val = ex.parse_value(value, scope)[1]
        except ex.ExpressionError as exc:
            self.err(path, str(exc))
            return None
        if val is not None:
            self.defaults_of[value] = val
        return value

    def default_value(self, text):
        """Value of a checked parameter-only expression at the parameters' defaults (or None)."""
        if text in self.defaults_of:
            return self.defaults_of[text]
        try:
            return ex.parse_value(text, self.pscope)[1]
        except ex.ExpressionError:
            return None

    def vector(self, value, path: str, scope: ex.Scope, n: int = 3, what="a vector"):
        """A list of n expressions, or the name of a vector parameter of length n."""
        if isinstance(value, str) and value in scope.vectors:
            if scope.vectors[value] != n:
                self.err(path, f"vector parameter `{value}` has length {scope.vectors[value]}, expected {n}")
                return None
            return tuple(f"{value}[{k}]" for k in range(n))
        if not isinstance(value, (list, tuple)) or len(value) != n:
            self.err(path, f"expected {what} of {n} numbers or expressions (or a vector parameter "
                           f"of length {n}), found {_found(value)}")
            return None
        out = [self.expression(v, f"{path}[{k}]", scope) for k, v in enumerate(value)]
        return None if any(o is None for o in out) else tuple(out)

    def number(self, value, path: str, positive=False):
        try:
            x = ex.number_value(value)
        except ex.ExpressionError:
            self.err(path, f"expected a finite number, found {_found(value)}")
            return None
        if positive and x <= 0:
            self.err(path, f"expected a positive number, found {ex.shown(value)}")
            return None
        return x

    def text(self, value, path: str) -> str:
        """A documentation string (unit, description)."""
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        self.err(path, f"expected a string, found {_found(value)}")
        return ""

    # -- sections
    def run(self) -> ModelSpec:
        d = self.data
        if not isinstance(d, dict):
            what = "an empty document" if d is None else _found(d)
            raise ModelError(self.file, [Problem("", f"expected a mapping (name:, bodies:, ...) at the top level, "
                                                     f"found {what}")])
        self.keys(d, "", self.TOP, required=("name", "bodies"))
        name = d.get("name")
        if "name" in d:
            self.ident(name, "name", "the model name")
        description = d.get("description", "")
        if not isinstance(description, str):
            self.err("description", f"expected a string, found {_found(description)}")
            description = ""
        self.entry = "parameters"
        params = self.params = self.parameters(self.section(d, "parameters", dict, {}, "a mapping name -> value"))
        self.pscope = _scope_of(params, frozenset())
        self.entry = "gravity"
        gravity = self.vector(d.get("gravity", [0, 0, 0]), "gravity",
                              self.pscope.child(time_allowed=False)) or (0, 0, 0)
        self.entry = "bodies"
        bodies = self.bodies(d.get("bodies"))
        coords = [c for b in bodies for c in b.coordinates]
        self.fscope = _scope_of(params, frozenset(coords)).child(coordinates_allowed=True)
        body_names = {b.name for b in bodies if isinstance(b.name, str)}
        self.entry = "initial"
        initial = self.initial(self.section(d, "initial", dict, {}, "a mapping coordinate -> value"), coords)
        self.entry = "forces"
        forces = self.forces(self.section(d, "forces", list, [], "a list of forces"), coords, body_names, bodies)
        self.entry = "outputs"
        outputs = self.outputs(self.section(d, "outputs", dict, {}, "a mapping"), body_names)
        self.entry = "simulate"
        simulate = self.simulate(self.section(d, "simulate", dict, {}, "a mapping"))
        self.entry = "parameters"
        for p in params:
            if p.name in coords:
                self.err("parameters", f"`{p.name}` is both a parameter and a joint coordinate")
        if self.problems:
            raise ModelError(self.file, self.problems)
        self.entry = ""
        spec = ModelSpec(name=name, file=self.file, parameters=tuple(params), gravity=gravity,
                         bodies=tuple(bodies), initial=tuple(initial), forces=tuple(forces),
                         outputs=outputs, simulate=simulate, description=description)
        _physics_warnings(spec, self.default_value)
        return spec

    def parameters(self, d: dict) -> list:
        out = []
        for name, v in d.items():
            path = _join("parameters", name)
            self.entry = path
            if not self.ident(name, path, "a parameter name"):
                continue
            unit = description = ""
            if isinstance(v, dict):
                self.keys(v, path, {"value", "unit", "description"}, required=("value",))
                unit = self.text(v.get("unit", ""), f"{path}.unit")
                description = self.text(v.get("description", ""), f"{path}.description")
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
                self.err("bodies", f"expected a non-empty list of bodies, found {_found(lst)}")
            return out
        seen_bodies, seen_coords = {}, {}
        # coordinate names first, so that misuse of one (in a mass, a `by`) is named as such
        self.pscope = self.pscope.child(coordinates=frozenset(_scan_coordinates(lst)))
        for i, b in enumerate(lst):
            path = self.entry = f"bodies[{i}]"
            if not isinstance(b, dict):
                self.err(path, f"expected a mapping, found {_found(b)}")
                continue
            # an intermediate frame (`mass: 0`) may omit com and inertia; any other body gives both
            mass = b.get("mass")
            massless = type(mass) in (int, float) and mass == 0
            self.keys(b, path, {"name", "parent", "joint", "mass", "com", "inertia"},
                      required=("name", "parent", "joint", "mass") + (() if massless else ("com", "inertia")))
            name = b.get("name")
            ok = self.ident(name, f"{path}.name", "a body name")
            if ok and name in seen_bodies:
                self.err(f"{path}.name", f"duplicate body name `{name}` (also bodies[{seen_bodies[name]}])")
            if ok:
                seen_bodies.setdefault(name, i)
            parent = b.get("parent")
            if not (parent == "ground" or (isinstance(parent, str) and IDENT.match(parent))):
                if "parent" in b:
                    self.err(f"{path}.parent", f"expected `ground` or a body name, found {_found(parent)}")
                parent = None
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
            out.append(Body(name=name if ok else None, parent=parent, joint=tuple(joint),
                            mass=mass if mass is not None else 0, com=com, inertia=inertia, path=path))
        self.entry = "bodies"
        names = {b.name for b in out}
        for b in out:
            if b.parent is not None and b.parent != "ground" and b.parent not in names:
                self.err(f"{b.path}.parent", f"unknown parent body `{b.parent}`"
                                             f"{ex.did_you_mean(b.parent, names - {None} | {'ground'})}")
            if b.parent is not None and b.parent == b.name:
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
                       f"those keys or a vector parameter of length 6 or 3, found {_found(v)}")
        return (0,) * 6

    def axis(self, v, path):
        if isinstance(v, str) and v in AXES:
            return AXES[v]
        if isinstance(v, str) and v not in self.pscope.vectors:
            self.err(path, f"expected an axis x, y, z, -x, -y, -z or a 3-vector, found {_found(v)}"
                           f"{ex.did_you_mean(v, AXES) if len(v) < 100 else ''}")
            return None
        vec = self.vector(v, path, self.pscope.child(time_allowed=False), what="an axis")
        if vec is None:
            return None
        vals = [self.default_value(x) for x in vec]
        if all(x == 0.0 for x in vals):
            self.err(path, f"zero axis {ex.shown(v)}: an axis must have non-zero length")
            return None
        return vec

    def joint(self, j, path) -> list:
        if isinstance(j, dict):
            return self.shorthand(j, path)
        if not isinstance(j, list):
            self.err(path, f"expected a list of elementary transforms or a shorthand mapping "
                           f"(`type: revolute` ...), found {_found(j)}")
            return []
        out = []
        for k, tr in enumerate(j):
            p = f"{path}[{k}]"
            if not isinstance(tr, dict):
                self.err(p, f"expected a mapping like `{{rotate: z, q: a}}`, found {_found(tr)}")
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
                    self.err(f"{p}.translate", f"`translate: {ex.shown(tr['translate'])}` needs `q:` or `by:` "
                                               "(a constant offset is a list [x, y, z])")
                elif vec is not None:
                    out.append(Transform("offset", vec, path=p))
                continue
            if not has_q and not has_by:
                self.err(p, f"`{kind}` needs `q:` (a coordinate) or `by:` (an expression of t and parameters)")
                continue
            key = "q" if has_q else "by"
            tr = self.motion(kind, tr[kind], key, tr[key], p, f"{p}.{kind}", f"{p}.{key}")
            if tr is not None:
                out.append(tr)
        return out

    def motion(self, kind, axis, key, value, path, axis_path, value_path):
        """One rotation or translation along `axis` by a coordinate (key `q`) or an expression
        (key `by`); None after an error."""
        axis = self.axis(axis, axis_path)
        if axis is None:
            return None
        if key == "q":
            return Transform(kind, axis, q=value, path=path) if self.ident(value, value_path, "a coordinate name") \
                else None
        by = self.expression(value, value_path, self.pscope)
        return Transform(kind, axis, by=by, path=path) if by is not None else None

    def shorthand(self, j, path) -> list:
        """`{type: revolute, axis: z, q: a}` (or `by: w*t`, a driven joint) and the other
        JOINT_TYPES, expanded into elementary transforms that carry the shorthand's path."""
        jt = j.get("type")
        if not isinstance(jt, str) or jt not in JOINT_TYPES:
            hint = ex.did_you_mean(jt, JOINT_TYPES) if isinstance(jt, str) and len(jt) < 100 else ""
            self.err(f"{path}.type", f"unknown joint type {ex.shown(jt)}{hint}; "
                                     f"expected one of {', '.join(JOINT_TYPES)} (or a list of transforms)")
            return []
        keys, motions = JOINT_TYPES[jt]
        self.keys(j, path, keys | {"type", "offset", "q", "by"}, required=tuple(sorted(keys)))
        if any(k not in j for k in keys):
            return []
        if ("q" in j) == ("by" in j):
            self.err(path, f"a {jt} joint has exactly one of `q:` (its coordinates) or `by:` (expressions of t "
                           f"and parameters that drive it), found {'both' if 'q' in j else 'neither'}")
            return []
        key = "q" if "q" in j else "by"
        moves = motions(j)
        given = j[key]
        single = len(moves) == 1 and not isinstance(given, list)
        values = [given] if single else given
        if not isinstance(values, list) or len(values) != len(moves):
            what = "coordinate name(s)" if key == "q" else "expression(s)"
            self.err(f"{path}.{key}", f"a {jt} joint takes {len(moves)} {what}, found {_found(given)}")
            return []
        out = []
        if "offset" in j:
            vec = self.vector(j["offset"], f"{path}.offset", self.pscope.child(time_allowed=False), what="an offset")
            if vec is None:
                return []
            out.append(Transform("offset", vec, path=path))
        for i, ((kind, axis), value) in enumerate(zip(moves, values)):
            axis_path = f"{path}.axes[{i}]" if "axes" in keys and isinstance(j["axes"], list) else \
                f"{path}.axes" if "axes" in keys else f"{path}.axis"
            tr = self.motion(kind, axis, key, value, path, axis_path, f"{path}.{key}" + ("" if single else f"[{i}]"))
            if tr is not None:
                out.append(tr)
        return out if len(out) == len(moves) + ("offset" in j) else []

    def initial(self, d: dict, coords) -> list:
        out = []
        keys = set(coords) | {f"der({c})" for c in coords}
        for k, v in d.items():
            path = _join("initial", k)
            if k not in keys:
                hint = ex.did_you_mean(str(k), keys) if len(str(k)) < 100 else ""
                self.err(path, f"unknown coordinate `{_join('', k)}`{hint}; expected a coordinate name or der(name)")
                continue
            val = self.expression(v, path, self.pscope.child(time_allowed=False))
            if val is not None:
                out.append((k, val))
        return out

    def forces(self, lst: list, coords, body_names, bodies) -> list:
        out = []
        com_of = {b.name: b.com for b in bodies}
        for i, f in enumerate(lst):
            path = self.entry = f"forces[{i}]"
            if not isinstance(f, dict):
                self.err(path, f"expected a mapping with a `type`, found {_found(f)}")
                continue
            ft = f.get("type")
            if not isinstance(ft, str) or ft not in FORCE_TYPES:
                hint = ex.did_you_mean(ft, FORCE_TYPES) if isinstance(ft, str) and len(ft) < 100 else ""
                self.err(f"{path}.type", f"unknown force type {ex.shown(ft)}{hint}; "
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
                v = FIELD_KINDS[kind](self, v, p, coords, body_names, com_of.get(f.get("body")) if
                                      isinstance(f.get("body"), str) else None)
                if v is not None:
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

    # -- force fields by kind (FORCE_TYPES): the checked value, or None after an error
    def coordinate_field(self, v, p, coords, body_names, com):
        if isinstance(v, str) and v in coords:
            return v
        hint = ex.did_you_mean(v, coords) if isinstance(v, str) and len(v) < 100 else ""
        self.err(p, f"unknown coordinate {ex.shown(v)}{hint}")

    def body_field(self, v, p, coords, body_names, com, ground=False):
        if isinstance(v, str) and (v in body_names or (ground and v == "ground")):
            return v
        hint = ex.did_you_mean(v, body_names) if isinstance(v, str) and len(v) < 100 else ""
        self.err(p, f"unknown body {ex.shown(v)}{hint}")

    def point_field(self, v, p, coords, body_names, com):
        if v is None:                    # the centre of mass of the force's body
            return com or (0, 0, 0)
        return self.vector(v, p, self.pscope.child(time_allowed=False))

    def frame_field(self, v, p, coords, body_names, com):
        if isinstance(v, str) and v in ("ground", "body"):
            return v
        self.err(p, f"expected `ground` or `body`, found {_found(v)}")

    def outputs(self, d: dict, body_names) -> Outputs:
        self.keys(d, "outputs", {"points", "angular", "reactions", "expressions", "forces"})
        points = []
        for name, pt in self.mapping(d, "points", "outputs.points", "a mapping name -> {body:, at:}").items():
            p = self.entry = _join("outputs.points", name)
            if not self.ident(name, p, "a point name"):
                continue
            if not isinstance(pt, dict):
                self.err(p, f"expected {{body: NAME, at: [x, y, z]}}, found {_found(pt)}")
                continue
            self.keys(pt, p, {"body", "at"}, required=("body",))
            body = pt.get("body")
            if not (isinstance(body, str) and (body in body_names or body == "ground")):
                hint = ex.did_you_mean(body, body_names) if isinstance(body, str) and len(body) < 100 else ""
                if "body" in pt:
                    self.err(f"{p}.body", f"unknown body {ex.shown(body)}{hint}")
                continue
            at = self.vector(pt.get("at", [0, 0, 0]), f"{p}.at", self.pscope.child(time_allowed=False))
            if at is not None:
                points.append((name, body, at))
        angular = d.get("angular") or []
        if not isinstance(angular, list):
            self.err("outputs.angular", f"expected a list of body names, found {_found(angular)}")
            angular = []
        for k, b in enumerate(angular):
            if not (isinstance(b, str) and b in body_names):
                hint = ex.did_you_mean(b, body_names) if isinstance(b, str) and len(b) < 100 else ""
                self.err(f"outputs.angular[{k}]", f"unknown body {ex.shown(b)}{hint}")
        reactions = d.get("reactions", False)
        if not isinstance(reactions, bool):
            self.err("outputs.reactions", f"expected true or false, found {_found(reactions)}")
            reactions = False
        forces = d.get("forces", False)
        if not isinstance(forces, bool):
            self.err("outputs.forces", f"expected true or false, found {_found(forces)}")
            forces = False
        exprs = []
        for name, e in self.mapping(d, "expressions", "outputs.expressions", "a mapping name -> expression").items():
            p = self.entry = _join("outputs.expressions", name)
            if name in OUTPUT_KEYS_RESERVED:
                self.err(p, f"`{name}` is the name of an output the tool writes; choose another")
            elif self.ident(name, p, "an expression name"):
                v = self.expression(e, p, self.fscope)
                if v is not None:
                    exprs.append((name, v))
        return Outputs(tuple(points), tuple(b for b in angular if isinstance(b, str) and b in body_names),
                       reactions, tuple(exprs), forces)

    def mapping(self, d: dict, key: str, path: str, what: str) -> dict:
        v = d.get(key)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.err(path, f"expected {what}, found {_found(v)}")
            return {}
        return v

    def simulate(self, d: dict) -> Simulate:
        self.keys(d, "simulate", {"t_end", "output_step", "integrator", "rtol", "atol", "form"})
        kw = {}
        for key in ("t_end", "output_step", "rtol", "atol"):
            if key in d:
                v = self.number(d[key], f"simulate.{key}", positive=True)
                if v is not None:
                    kw[key] = v
        if "integrator" in d:
            v = d["integrator"]
            if not (isinstance(v, str) and v in INTEGRATORS):
                hint = ex.did_you_mean(v, INTEGRATORS) if isinstance(v, str) and len(v) < 100 else ""
                self.err("simulate.integrator", f"unknown integrator {ex.shown(v)}{hint}; "
                                                f"expected one of {', '.join(INTEGRATORS)}")
            else:
                kw["integrator"] = v
        if "form" in d:
            from dynamica.generator.forms import EQUATION_FORMS
            v = d["form"]
            if not (isinstance(v, str) and (v in EQUATION_FORMS or v == "auto")):
                self.err("simulate.form", f"unknown equation form {ex.shown(v)}; expected one of "
                                          f"{', '.join(EQUATION_FORMS)}")
            else:
                kw["form"] = v
        return Simulate(**kw)


def _found(value) -> str:
    """`found ...` in a message: the value's type and a short repr."""
    if value is None:
        return "nothing (null)"
    kind = {bool: "the boolean", str: "the string", int: "the number", float: "the number", list: "a list",
            dict: "a mapping"}.get(type(value), f"a {type(value).__name__}")
    return f"{kind} {ex.shown(value)}"


def _join(path: str, key) -> str:
    """The path of a key inside a mapping; a huge or odd key is shortened."""
    k = str(key) if isinstance(key, (str, int, float, bool)) or key is None else type(key).__name__
    k = k if len(k) <= 60 else k[:57] + "..."
    return f"{path}.{k}" if path else k


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


#: force field kind -> its check: (loader, value, path, coordinates, body names, com of the force's
#: body) -> the checked value, or None after an error
FIELD_KINDS = {
    "coordinate": _Loader.coordinate_field,
    "body": _Loader.body_field,
    "body_or_ground": lambda self, *a: self.body_field(*a, ground=True),
    "point": _Loader.point_field,
    "frame": _Loader.frame_field,
    "expr": lambda self, v, p, *a: self.expression(v, p, self.fscope),
    "law": lambda self, v, p, *a: self.expression(v, p, self.fscope.child(local=LAW_LOCALS)),
    "vector": lambda self, v, p, *a: self.vector(v, p, self.fscope),
}

#: joint shorthand -> (its keys besides type, offset, q and by; its motions: (transform, axis) in
#: order). Each motion takes one coordinate of `q:` or, for a driven joint, one expression of `by:`.
JOINT_TYPES = {
    "revolute": ({"axis"}, lambda j: [("rotate", j["axis"])]),
    "prismatic": ({"axis"}, lambda j: [("translate", j["axis"])]),
    "universal": ({"axes"}, lambda j: [("rotate", a) for a in _two_axes(j["axes"])]),
    "spherical": (set(), lambda j: [("rotate", a) for a in "xyz"]),
    "free": (set(), lambda j: [("translate", a) for a in "xyz"] + [("rotate", a) for a in "xyz"]),
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
                    coordinates=coords, values={p.name: p.value for p in params})


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


def _default_value(spec: ModelSpec):
    """text -> its value at the parameters' defaults (None when it is not a number there)."""
    evaluate_ = _evaluator(spec)

    def value(text):
        try:
            return float(evaluate_([text])[0])
        except (TypeError, ValueError):
            return None
    return value


def _mass_properties(spec: ModelSpec, value=None):
    """(body, mass, eigenvalues of the inertia about the com scaled by its largest entry, their
    tolerance, principal moments) at the default parameters, for the bodies whose values are
    numbers there; `value(text)` as the loader's (default: evaluated here)."""
    value = value or _default_value(spec)
    for b in spec.bodies:
        vals = [value(x) for x in (b.mass, *b.inertia)]
        if any(v is None for v in vals):
            continue
        m, ixx, iyy, izz, ixy, iyz, ixz = vals
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        scale = abs(I).max() or 1.0             # eigenvalues of I / scale: no overflow for huge entries
        ev = np.linalg.eigvalsh(I / scale)
        with np.errstate(over="ignore"):
            moments = (scale * ev).tolist()
        yield b, m, ev, 1e-12 * max(1.0 / scale, abs(ev).max()), moments


def negative_bodies(spec: ModelSpec) -> list:
    """Names of the bodies with a negative mass or an indefinite inertia (default parameters)."""
    return [b.name for b, m, ev, tol, _ in _mass_properties(spec) if m < 0 or ev.min() < -tol]


def _physics_warnings(spec: ModelSpec, value):
    """Negative mass, indefinite inertia, triangle inequality: warnings naming the body.
    `value(text)` is an entry's value at the parameters' defaults (finite: checked at loading)."""
    for b, m, ev, tol, moments in _mass_properties(spec, value):
        if m < 0:
            _warn(spec, f"body `{b.name}` has negative mass {m}")
        if ev.min() < -tol:
            _warn(spec, f"inertia of body `{b.name}` is indefinite (principal moments {moments})")
        elif ev[2] > ev[0] + ev[1] + tol:
            _warn(spec, f"inertia of body `{b.name}` violates the triangle inequality (principal moments {moments})")


def overflow_problem(spec: ModelSpec) -> Problem:
    """Generated code with a constant that is not a finite double: every entry's constants are
    finite (load_model checks them), so the equations multiply them beyond the double range.
    Names the entries with the most extreme constants."""
    scope = spec.scope(coordinates_allowed=True, local=LAW_LOCALS)
    extremes = []
    for path, text in _entries(spec):
        try:
            e = ex.parse(text, scope)
        except ex.ExpressionError:           # a body or coordinate name, not an expression
            continue
        sizes = [abs(math.log10(abs(float(n)))) for n in e.atoms(sp.Number) if n != 0]
        if sizes:
            extremes.append((max(sizes), path))
    extremes.sort(key=lambda x: -x[0])
    where = ", ".join(f"`{p}` (10^{s:.0f})" for s, p in extremes[:3])
    return Problem(extremes[0][1] if extremes else "",
                   "a constant of the generated equations of motion is not a finite double: the model's "
                   f"constants multiply up beyond the double range (1.8e308); the most extreme are at {where}. "
                   "Use other units, or parameters")


def _entries(spec: ModelSpec):
    """(path, expression or name) of every entry of a loaded model."""
    yield from ((f"gravity[{k}]", g) for k, g in enumerate(spec.gravity))
    for b in spec.bodies:
        yield f"{b.path}.mass", b.mass
        yield from ((f"{b.path}.com[{k}]", c) for k, c in enumerate(b.com))
        yield from ((f"{b.path}.inertia[{k}]", c) for k, c in enumerate(b.inertia))
        for tr in b.joint:
            if tr.by is not None:
                yield f"{tr.path}.by", tr.by
            yield from ((f"{tr.path}.axis[{k}]", c) for k, c in enumerate(tr.vector))
    yield from ((f"initial.{k}", v) for k, v in spec.initial)
    for f in spec.forces:
        for key, v in f.fields:
            items = enumerate(v) if isinstance(v, tuple) else [(None, v)]
            yield from ((f"{f.path}.{key}" + ("" if k is None else f"[{k}]"), x) for k, x in items)
    for name, _, at in spec.outputs.points:
        yield from ((f"outputs.points.{name}.at[{k}]", c) for k, c in enumerate(at))
    yield from ((f"outputs.expressions.{name}", e) for name, e in spec.outputs.expressions)


def _warn(spec, message):
    """A warning attributed to the model file (not to a line of dynamica's code)."""
    warnings.warn_explicit(f"{spec.file}: {message}", DynamicaWarning, filename=spec.file, lineno=0,
                           module="dynamica.model")
