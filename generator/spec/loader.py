"""Reading and validating a model file (docs/model_format.md): the YAML reader and the loader,
one method per section. Whatever a file holds, the result is a ModelSpec or one ModelError that
lists every problem with its entry path and what was expected.
"""

from __future__ import annotations

import keyword
import re
from pathlib import Path

import yaml

from dynamica.errors import ModelError, Problem
from dynamica.generator.mechanics.joints import JointSections, scan_coordinates
from dynamica.generator.mechanics.loops import LoopSections
from dynamica.generator.mechanics.stages import StageSections
from dynamica.generator.mechanics.tables import scope_functions
from dynamica.generator.spec import expr as ex
from dynamica.generator.spec import units
from dynamica.generator.spec.actuator_sections import ActuatorSections
from dynamica.generator.spec.contact_sections import ContactSections
from dynamica.generator.spec.expr import found, join_path
from dynamica.generator.spec.force_sections import ForceSections
from dynamica.generator.spec.model import (
    IDENT,
    INTEGRATORS,
    ModelSpec,
    Parameter,
    Simulate,
    physics_warnings,
    scope_of,
)
from dynamica.generator.spec.visuals import VisualSections


def load(source, file=None, cache=None, **import_options) -> ModelSpec:
    """A model file (a path) or an already-parsed mapping (`file`: the name its errors give),
    checked (model.load_model). A file of another format (IMPORTERS, by suffix) is converted
    to the mapping a model file would hold first (kept in `cache`, a directory, when given);
    `import_options` go to its importer."""
    if isinstance(source, dict):
        return _checked(_Loader(file or "<dict>", source))
    path = Path(source)
    importer = IMPORTERS.get(path.suffix.lower())
    if importer is not None:
        return _checked(_Loader(str(path), importer(path, cache=cache, **import_options)))
    if import_options:
        raise ModelError(str(path), [Problem("", f"the options {', '.join(sorted(import_options))} are for "
                                                 f"robot descriptions ({', '.join(IMPORTERS)} files)")])
    return _checked(_Loader(str(path), read_yaml(path)))


def _urdf(path, cache=None, **options):
    from dynamica.generator.importers import urdf
    return urdf.cached_model(path, urdf.check_options(path, **options), cache)


def _mjcf(path, cache=None, **options):
    from dynamica.generator.importers import mjcf
    return mjcf.cached_model(path, mjcf.check_options(path, **options), cache)


def _xml(path, cache=None, **options):
    """An .xml file by its root element: <mujoco> is MJCF (generator/importers/mjcf.py), <robot> URDF."""
    from dynamica.generator.importers.mjcf import root_tag
    tag = root_tag(path) if path.is_file() else "mujoco"
    if tag == "robot":
        return _urdf(path, cache=cache, **options)
    return _mjcf(path, cache=cache, **options)


#: file suffix -> importer(path, **options) -> the mapping of a model file
IMPORTERS = {".urdf": _urdf, ".xml": _xml, ".mjcf": _mjcf}


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


def _construct_mapping(loader, node, deep=False):
    """A mapping whose every key is written once: YAML keeps only the last of two equal keys, so
    a model with a parameter or a body written twice would silently mean something else."""
    seen = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.setdefault(key, key_node.start_mark)
        except TypeError:                    # an unhashable key: the base constructor reports it
            continue
        if first is not key_node.start_mark:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark,
                f"found the key {ex.shown(key)} twice (first at line {first.line + 1}); each key is written once",
                key_node.start_mark)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


YamlLoader.construct_mapping = _construct_mapping


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


class _Loader(JointSections, ForceSections, ActuatorSections, LoopSections, StageSections, VisualSections,
              ContactSections):
    TOP = {"name", "description", "parameters", "gravity", "bodies", "initial", "forces",
           "outputs", "simulate", "functions", "inputs", "states", "loops", "assembly", "stages", "contact",
           "ranges", "frames"}

    def __init__(self, file: str, data):
        self.file = file
        self.data = data
        self.problems: list[Problem] = []
        self.entry = ""                  # the entry being read (for an internal error's message)
        self.defaults_of = {}            # expression text -> its value at the parameters' defaults
        # names declared by an entry that was itself invalid (a parameter's value, a joint): a
        # reference to one is not reported as an unknown name unless nothing else is wrong
        self.broken: set = set()
        self.deferred: list[Problem] = []

    # -- helpers
    def unknown(self, path: str, name, msg: str):
        """Report an unknown name, unless it is declared by an entry already reported invalid
        (then only if nothing else is wrong: one mistake, one problem)."""
        if isinstance(name, str) and name in self.broken:
            self.deferred.append(Problem(path, msg))
        else:
            self.err(path, msg)

    def err(self, path: str, msg: str):
        self.problems.append(Problem(path, msg))

    def section(self, d: dict, key: str, kind: type, default, what: str):
        """A top-level section: absent or null -> default; otherwise it must be a `kind`."""
        v = d.get(key)
        if v is None:
            return default
        if not isinstance(v, kind):
            self.err(key, f"expected {what}, found {found(v)}")
            return default
        return v

    def keys(self, d: dict, path: str, allowed, required=()):
        for k in d:
            if k not in allowed:
                hint = ex.did_you_mean(str(k), allowed) if isinstance(k, str) and len(k) < 100 else ""
                self.err(join_path(path, k), f"unknown key{hint}; expected one of {', '.join(sorted(allowed))}")
        for k in required:
            if k not in d:
                self.err(path or "<top>", f"missing required key `{k}`")

    def ident(self, value, path: str, what: str) -> bool:
        if not isinstance(value, str) or not IDENT.match(value):
            hint = ("; YAML reads some bare words (null, NULL, ~, yes, no, true, on, off) and numbers as other "
                    "values: quote the name" if value is None or isinstance(value, (bool, int, float)) else "")
            self.err(path, f"expected {what} (an identifier), found {found(value)}{hint}")
            return False
        if value in ex.RESERVED:
            self.err(path, f"`{value}` is a reserved name and cannot be {what}")
            return False
        if keyword.iskeyword(value):
            self.err(path, f"`{value}` is a Python keyword and cannot be {what} (an expression could "
                           "not refer to it)")
            return False
        return True

    def in_si(self, value, path: str, expect=None):
        """A quantity written as text ("30 deg") as its SI value (generator/spec/units.py), checked
        against the unit of the entry (`expect`: (unit, what), default by the entry path's kind);
        a parameter with a declared unit, given alone at an entry of a known kind, is checked the
        same way. Anything else unchanged; None (and a problem) when a unit is wrong."""
        expect = expect or units.entry_unit(path)
        try:
            q = units.quantity(value)
            if q is None:
                declared = getattr(self, "param_units", {}).get(value) if isinstance(value, str) else None
                if expect and declared is not None and not units.compatible(declared, expect[0]):
                    self.err(path, f"parameter `{value}` is in {declared.text}, but this entry is {expect[1]} "
                                   f"(in {expect[0]} or a unit of its dimension)")
                    return None
                return value
            x, u = q
            if expect and not units.compatible(u, expect[0]):
                self.err(path, f"`{value}` is not {expect[1]}: expected a unit of the dimension of {expect[0]}")
                return None
        except units.UnitError as exc:
            self.err(path, f"{exc} in {ex.shown(value)}")
            return None
        return x

    def expression(self, value, path: str, scope: ex.Scope, expect=None):
        """Check an expression; return it unchanged (text or number) or None if invalid. Its value
        at the parameters' defaults, when it has one, must be a finite real number. A quantity
        ("30 deg") is returned as its SI value (`in_si`)."""
        value = self.in_si(value, path, expect)
        if value is None:
            return None
        try:
            if isinstance(value, (int, float)) and not isinstance(value, bool):     # a literal number
                val = ex.number_value(value)
            else:
                val = ex.parse_value(value, scope)[1]
        except ex.ExpressionError as exc:
            self.unknown(path, exc.unknown, str(exc))
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
                           f"of length {n}), found {found(value)}")
            return None
        out = [self.expression(v, f"{path}[{k}]", scope) for k, v in enumerate(value)]
        return None if any(o is None for o in out) else tuple(out)

    def number(self, value, path: str, positive=False):
        value = self.in_si(value, path)
        if value is None:
            return None
        try:
            x = ex.number_value(value)
        except ex.ExpressionError:
            self.err(path, f"expected a finite number, found {found(value)}")
            return None
        if positive and x <= 0:
            self.err(path, f"expected a positive number, found {ex.shown(value)}")
            return None
        return x

    def text(self, value, path: str) -> str:
        """A documentation string (unit, description)."""
        if isinstance(value, (str, int, float)) and not isinstance(value, bool):
            return str(value)
        self.err(path, f"expected a string, found {found(value)}")
        return ""

    # -- sections
    def run(self) -> ModelSpec:
        d = self.data
        name, description = self.header(d)
        self.entry = "parameters"
        self.param_units = {}
        params = self.params = self.parameters(self.section(d, "parameters", dict, {}, "a mapping name -> value"))
        self.entry = "functions"
        functions = self.functions(self.section(d, "functions", dict, {}, "a mapping name -> table"))
        self.pscope = scope_of(params, frozenset()).child(
            functions={**self.unusable_functions, **scope_functions(functions)})
        self.entry = "gravity"
        gravity = self.vector(d.get("gravity", [0, 0, 0]), "gravity",
                              self.pscope.child(time_allowed=False)) or (0, 0, 0)
        self.entry = "bodies"
        bodies = self.bodies(d.get("bodies"))
        coords = [c for b in bodies for c in b.coordinates]
        if isinstance(d.get("bodies"), list):   # the coordinates of joints that did not parse
            self.broken |= set(scan_coordinates(d["bodies"])) - set(coords)
        self.entry = "inputs"
        inputs = self.inputs(self.section(d, "inputs", list, [], "a list of input names"))
        self.scopes(params, coords, inputs, d.get("states"), bodies)
        body_names = {b.name for b in bodies if isinstance(b.name, str)}
        self.entry = "initial"
        initial = self.initial(self.section(d, "initial", dict, {}, "a mapping coordinate -> value"), coords)
        self.entry = "contact"
        shapes, pairs = self.contact(self.section(d, "contact", dict, {}, "a mapping {shapes:, defaults:, pairs:}"),
                                     body_names, {b.name: b.parent for b in bodies})
        self.entry = "ranges"
        ranges = self.ranges(self.section(d, "ranges", dict, {}, "a mapping coordinate -> [lower, upper]"), coords)
        self.entry = "frames"
        frames = self.frames(self.section(d, "frames", dict, {}, "a mapping name -> {body:, at:, rpy:}"),
                             body_names)
        self.entry = "forces"
        forces = self.forces(self.section(d, "forces", list, [], "a list of forces"), coords, body_names, bodies,
                             pairs)
        self.entry = "outputs"
        outputs = self.outputs(self.section(d, "outputs", dict, {}, "a mapping"), body_names)
        self.entry = "simulate"
        simulate = self.simulate(self.section(d, "simulate", dict, {}, "a mapping"))
        self.entry = "states"
        states = self.states(self.section(d, "states", dict, {}, "a mapping name -> {initial:, der:}"))
        self.distinct_names(params, coords, functions, inputs, states, outputs.expressions)
        self.entry = "loops"
        loops = self.loops(self.section(d, "loops", list, [], "a list of loop joints"), body_names, coords)
        self.entry = "assembly"
        hold = self.assembly(self.section(d, "assembly", dict, {}, "a mapping {hold: [...]}"), coords)
        self.entry = "stages"
        stages = self.stages(self.section(d, "stages", list, [], "a list of stages"), bodies, params, outputs,
                             forces, loops)
        self.finish(params, coords)
        spec = ModelSpec(name=name, file=self.file, parameters=tuple(params), gravity=gravity,
                         bodies=tuple(bodies), initial=tuple(initial), forces=tuple(forces),
                         outputs=outputs, simulate=simulate, description=description, loops=tuple(loops),
                         assembly_hold=hold, stages=tuple(stages),
                         functions=tuple(functions), states=tuple(states), inputs=tuple(inputs),
                         shapes=shapes, broad_phase=getattr(self, "broad_phase", "auto"), ranges=ranges,
                         frames=frames, input_defaults=tuple(self.input_defaults),
                         display_units=self.shown_units(coords))
        physics_warnings(spec, self.default_value)
        return spec

    def header(self, d) -> tuple:
        """The document a mapping with its top-level keys; (the model name, its description)."""
        if not isinstance(d, dict):
            what = "an empty document" if d is None else found(d)
            raise ModelError(self.file, [Problem("", f"expected a mapping (name:, bodies:, ...) at the top level, "
                                                     f"found {what}")])
        self.keys(d, "", self.TOP, required=("name", "bodies"))
        name = d.get("name")
        if "name" in d:
            self.ident(name, "name", "the model name")
        description = d.get("description", "")
        if not isinstance(description, str):
            self.err("description", f"expected a string, found {found(description)}")
            description = ""
        return name, description

    def scopes(self, params, coords, inputs, states, bodies):
        """The scope of expressions of the state (forces, outputs, ...) and the coordinates' units."""
        self.fscope = scope_of(params, frozenset(coords)).child(
            coordinates_allowed=True, functions=self.pscope.functions, inputs=frozenset(inputs),
            states=frozenset(self.state_names(states)))
        self.coordinate_units = {tr.q: "rad" if tr.kind == "rotate" else "m" for b in bodies for tr in b.joint
                                 if tr.q is not None}

    def finish(self, params, coords):
        """The checks across sections, then every problem found in one ModelError."""
        self.entry = "parameters"
        for p in params:
            if p.name in coords:
                self.err("parameters", f"`{p.name}` is both a parameter and a joint coordinate")
        if self.problems or self.deferred:
            raise ModelError(self.file, self.problems or self.deferred)
        self.entry = ""

    def parameters(self, d: dict) -> list:
        out = []
        for name, v in d.items():
            before = len(out)
            self._parameter(name, v, out)
            if len(out) == before and isinstance(name, str):
                self.broken.add(name)
        return out

    def _parameter(self, name, v, out):
        """Append parameter `name` with value `v` to out, or report what is wrong with it."""
        path = join_path("parameters", name)
        self.entry = path
        if not self.ident(name, path, "a parameter name"):
            return
        unit = description = ""
        declared = None
        if isinstance(v, dict):
            self.keys(v, path, {"value", "unit", "description"}, required=("value",))
            if "value" not in v:                 # said by keys()
                return
            unit = self.text(v.get("unit", ""), f"{path}.unit")
            description = self.text(v.get("description", ""), f"{path}.description")
            if unit.strip():
                try:
                    declared = units.unit(unit.strip())
                except units.UnitError as exc:
                    self.err(f"{path}.unit", f"{exc}: the value is converted to SI from this unit "
                                             "(docs/model_format.md, Units and numbers)")
                    return
            v = v.get("value")
            path += ".value"
        elems = list(v) if isinstance(v, (list, tuple)) else [v]
        vals = [self._parameter_value(x, f"{path}[{k}]" if isinstance(v, (list, tuple)) else path, declared)
                for k, x in enumerate(elems)]
        if isinstance(v, (list, tuple)) and not vals:
            self.err(path, "a vector parameter needs at least one element")
        elif all(x is not None for x in vals):
            if declared is None:                 # the unit of its quantities, for display and checks
                qs = [q for q in (units.quantity(x) for x in elems) if q is not None]
                declared = qs[0][1] if qs else None
                unit = declared.text if declared is not None else unit
            if declared is not None:
                self.param_units[name] = declared
            out.append(Parameter(name, tuple(vals) if isinstance(v, (list, tuple)) else vals[0], unit, description))

    def _parameter_value(self, x, path, declared):
        """One number of a parameter in SI: a quantity converted (of the declared unit's dimension),
        a bare number times the declared unit's factor to SI (1 for an SI unit: unchanged)."""
        if isinstance(x, str) and len(x) <= 120 and units.QUANTITY.match(x):
            if declared is None:
                return self.number(x, path)
            x = self.in_si(x, path, (declared.text, f"in {declared.text} (the parameter's unit)"))
            return None if x is None else self.number(x, path)
        x = self.number(x, path)
        if x is None or declared is None or declared.factor == 1.0:
            return x
        return x * declared.factor

    def initial(self, d: dict, coords) -> list:
        out = []
        self.display_units = {}
        keys = set(coords) | {f"der({c})" for c in coords}
        for k, v in d.items():
            path = join_path("initial", k)
            if k not in keys:
                hint = ex.did_you_mean(str(k), keys) if len(str(k)) < 100 else ""
                inner = str(k)[4:-1] if str(k).startswith("der(") and str(k).endswith(")") else str(k)
                self.unknown(path, inner, f"unknown coordinate `{join_path('', k)}`{hint}; expected a coordinate "
                                          "name or der(name)")
                continue
            q = str(k)[4:-1] if str(k).startswith("der(") else str(k)
            u = getattr(self, "coordinate_units", {}).get(q, "")
            expect = (f"{u}/s", f"the rate of coordinate `{q}`") if str(k).startswith("der(") else \
                (u, f"a value of coordinate `{q}`")
            val = self.expression(v, path, self.pscope.child(time_allowed=False), expect=expect if u else None)
            if val is not None:
                out.append((k, val))
                shown = units.quantity(v) if u and val != v else None
                if shown is not None and shown[1].factor != 1.0:      # shown in the file's unit
                    self.display_units[str(k)] = (shown[1].text, shown[1].factor)
        return out

    def ranges(self, d: dict, coords) -> tuple:
        """`ranges`: coordinate -> [lower, upper] (numbers, lower < upper): the range a simulation
        warns about leaving (no force; a robot's joint limits when they are not modelled)."""
        out = []
        for c, v in d.items():
            path = join_path("ranges", c)
            if c not in coords:
                hint = ex.did_you_mean(str(c), coords) if len(str(c)) < 100 else ""
                self.unknown(path, c, f"unknown coordinate `{join_path('', c)}`{hint}")
                continue
            if not isinstance(v, (list, tuple)) or len(v) != 2:
                self.err(path, f"expected [lower, upper], found {found(v)}")
                continue
            lo, hi = (self.number(x, f"{path}[{k}]") for k, x in enumerate(v))
            if lo is not None and hi is not None:
                if not lo < hi:
                    self.err(path, f"expected lower < upper, found [{ex.shown(lo)}, {ex.shown(hi)}]")
                else:
                    out.append((c, lo, hi))
        return tuple(out)

    def frames(self, d: dict, body_names) -> tuple:
        """`frames`: name -> {body, at: [x, y, z], rpy: [roll, pitch, yaw]} (numbers; at and rpy
        default 0): a frame fixed in a body at `at` (body axes), its axes the body's turned by
        R = Rz(yaw) Ry(pitch) Rx(roll) (URDF's rpy), for model.frame (docs/model_format.md)."""
        out = []
        for name, v in d.items():
            path = join_path("frames", name)
            if not self.ident(name, path, "a frame name"):
                continue
            if name in body_names:
                self.err(path, f"`{name}` is a body's name: a frame needs a name of its own")
                continue
            if not isinstance(v, dict):
                self.err(path, f"expected a mapping {{body:, at:, rpy:}}, found {found(v)}")
                continue
            self.keys(v, path, {"body", "at", "rpy"}, required=("body",))
            body = v.get("body")
            if body is not None and body not in body_names:
                hint = ex.did_you_mean(str(body), body_names) if len(str(body)) < 100 else ""
                self.err(f"{path}.body", (f"no body named `{body}`" if isinstance(body, str) else
                                          f"expected a body's name, found {found(body)}") + hint)
                continue
            vecs = []
            for key in ("at", "rpy"):
                x = v.get(key, [0, 0, 0])
                if not isinstance(x, (list, tuple)) or len(x) != 3:
                    self.err(f"{path}.{key}", f"expected 3 numbers, found {found(x)}")
                    vecs.append(None)
                    continue
                nums = [self.number(e, f"{path}.{key}[{k}]") for k, e in enumerate(x)]
                vecs.append(None if any(e is None for e in nums) else tuple(float(e) for e in nums))
            if body is not None and all(x is not None for x in vecs):
                out.append((name, body, vecs[0], vecs[1]))
        return tuple(out)

    def shown_units(self, coords) -> tuple:
        """((column, unit, factor), ...) of the coordinates whose initial value (or rate) is a
        quantity in other units than SI: the rate of one given in deg is shown in deg/s."""
        given = getattr(self, "display_units", {})
        out = []
        for c in coords:
            if c in given:
                out.append((c, *given[c]))
            rate = f"der({c})"
            if rate in given:
                out.append((rate, *given[rate]))
            elif c in given:
                out.append((rate, f"{given[c][0]}/s", given[c][1]))
        return tuple(out)

    def flag(self, d: dict, key: str) -> bool:
        """outputs.<key>: true or false."""
        v = d.get(key, False)
        if not isinstance(v, bool):
            self.err(f"outputs.{key}", f"expected true or false, found {found(v)}")
            return False
        return v

    def mapping(self, d: dict, key: str, path: str, what: str) -> dict:
        v = d.get(key)
        if v is None:
            return {}
        if not isinstance(v, dict):
            self.err(path, f"expected {what}, found {found(v)}")
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
            from dynamica.generator.forms import ALIASES, EQUATION_FORMS, resolve
            v = d["form"]
            if isinstance(v, str) and (v in EQUATION_FORMS or v in ALIASES or v == "auto"):
                kw["form"] = v if v == "auto" else resolve(v)
            else:
                self.err("simulate.form", f"unknown equation form {ex.shown(v)}; expected one of "
                                          f"{', '.join(EQUATION_FORMS)}, their acronyms ({', '.join(ALIASES)}) "
                                          "or auto")
        return Simulate(**kw)
