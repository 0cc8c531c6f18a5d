"""Parameter sets (docs/api.md#parameter-sets), after the parameter dialogs of D90 that save,
load and import sets (dissertation, appendix B):

    dynamica params MODEL > set.yaml              every parameter with value, unit, description
    dynamica simulate MODEL --params set.yaml     the values of a set (unknown names are errors)
    dynamica simulate MODEL --import other.yaml   import by name: the values of the parameters
                                                  this model has too, from another model's set
    dynamica simulate MODEL --set l=0.7 --set r=[0,0,1] --set "r[2]=1"

The option plumbing (`add_options`, `overrides`) is shared by every command that runs a model
(simulate, check, params), and so is the one reader of NAME=VALUE entries (`split_assignment`,
`read_value`, `parse_assignments` for parameters, `scalar_values` for coordinates and inputs):
statics, modes and identify (`--set`, `--input`, `--start`, `--start-values`), simulate's
`--input NAME=FILE.csv` and sweep's `--grid`, `--dist` read theirs with it; a bad entry is one
OptionError naming the option and every bad entry. Values are written with repr, so a
set read back gives the same doubles: a run with `--params` of a written set is bit-identical.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

from dynamica.errors import ModelError, OptionError, Problem

# PyYAML and the expression parser (sympy) are imported where they are used: a run without
# parameter options imports neither (the start-up of `dynamica simulate`, runtime/fastload.py)


def add_options(p):
    """--params, --import and --set on a command's parser."""
    p.add_argument("--params", metavar="SET", action="append", default=[],
                   help="a parameter set (YAML, as `dynamica params` writes it); unknown names are errors; "
                   "repeatable, later sets win")
    p.add_argument("--import", dest="import_sets", metavar="SET", action="append", default=[],
                   help="import by name from another model's parameter set: the parameters this model also has")
    p.add_argument(
        "--set",
        dest="set_values",
        metavar="NAME=VALUE",
        action="extend",
        nargs="+",
        default=[],
        help="parameter values for this run (several after one --set, or repeated): l=0.7, r=[0,0,1], 'r[2]=1'",
    )


def overrides(args, model, report=None) -> dict:
    """The parameter values the options ask for (imported sets, then sets, then --set), checked
    against the model: name -> float or tuple. `report(line)` is told what an import took."""
    names = dict(model.parameters)
    out: dict = {}
    for path in getattr(args, "import_sets", []) or []:
        taken = imported(path, names)
        out.update(taken)
        if report:
            report(f"imported {len(taken)} parameter(s) from {path}: {', '.join(taken) or 'none in common'}")
    for path in getattr(args, "params", []) or []:
        out.update(read_set(path, names))
    out.update(parse_assignments(getattr(args, "set_values", []) or [], names, out))
    return out


# ---------------------------------------------------------------- writing a set
def parameter_set(model, values=None) -> dict:
    """The set of a compiled model: {"model": name, "parameters": {name: {value, unit, description}}}."""
    spec = {p.name: p for p in model.spec.parameters}
    values = {**model.parameters, **(values or {})}
    params = {}
    for name, value in values.items():
        entry = {"value": list(value) if isinstance(value, tuple) else value}
        if spec[name].unit:
            entry["unit"] = spec[name].unit
        if spec[name].description:
            entry["description"] = spec[name].description
        params[name] = entry
    return {"model": model.name, "parameters": params}


def _dumper():
    import yaml

    class _Dumper(yaml.SafeDumper):
        pass

    _Dumper.add_representer(list, lambda d, data: d.represent_sequence("tag:yaml.org,2002:seq", data,
                                                                       flow_style=True))
    _Dumper.add_representer(dict, lambda d, data: d.represent_mapping(
        "tag:yaml.org,2002:map", data.items(), flow_style="value" in data))
    return _Dumper


def dump_set(model, values=None) -> str:
    import yaml
    head = f"# parameter set of model `{model.name}` ({model.spec.file}), written by `dynamica params`\n"
    return head + yaml.dump(parameter_set(model, values), Dumper=_dumper(), sort_keys=False, width=120,
                            allow_unicode=True)


# ---------------------------------------------------------------- reading sets
def _read(path) -> dict:
    """name -> value of a set file: {parameters: {name: value | {value, ...}}} or a flat mapping."""
    from dynamica.generator.spec.loader import read_yaml
    data = read_yaml(Path(path))
    if isinstance(data, dict) and isinstance(data.get("parameters"), dict):
        data = data["parameters"]
    if not isinstance(data, dict):
        raise ModelError(str(path), [Problem("", "expected a parameter set: `parameters:` with name: value "
                                                 "or name: {value: ...} entries")])
    out, problems = {}, []
    for name, v in data.items():
        if isinstance(v, dict):
            if "value" not in v:
                problems.append(Problem(f"parameters.{name}", "missing `value`"))
                continue
            v = v["value"]
        out[str(name)] = v
    if problems:
        raise ModelError(str(path), problems)
    return out


def read_set(path, names: dict) -> dict:
    """The values of a set for a model with parameters `names` (name -> default); a name the
    model does not have is an error with a "did you mean"."""
    values = _read(path)
    return _checked(values, names, str(path), strict=True)


def imported(path, names: dict) -> dict:
    """Import by name: the values of the set's parameters that the model also has."""
    values = _read(path)
    return _checked({k: v for k, v in values.items() if k in names}, names, str(path), strict=True)


def _checked(values: dict, names: dict, where: str, strict: bool) -> dict:
    from dynamica.generator.spec import expr as ex
    out, problems = {}, []
    for name, v in values.items():
        if name not in names:
            problems.append(Problem(name, f"unknown parameter{ex.did_you_mean(name, names)}; the model has "
                                          f"{', '.join(names) or 'none'}"))
            continue
        value, msg = _value(v, names[name])
        if msg:
            problems.append(Problem(name, msg))
        else:
            out[name] = value
    if problems:
        raise ModelError(where, problems)
    return out


def _value(v, default):
    """(value, None) or (None, what is wrong) for a value of a parameter whose default is `default`."""
    from dynamica.generator.spec import expr as ex
    vector = isinstance(default, tuple)
    if vector:
        if not isinstance(v, (list, tuple)) or len(v) != len(default):
            return None, f"expected a list of {len(default)} numbers, found {ex.found(v)}"
        try:
            return tuple(ex.number_value(x) for x in v), None
        except ex.ExpressionError as exc:
            return None, str(exc)
    try:
        return ex.number_value(v), None
    except ex.ExpressionError:
        return None, f"expected a finite number, found {ex.found(v)}"


# ---------------------------------------------------------------- NAME=VALUE entries of every command
#: the name of an entry: an identifier, or NAME[K] for one element of a vector (from 0)
_NAME = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*(\d+)\s*\])?$")
#: examples shown with a malformed entry
_EXAMPLES = "e.g. l=0.7, r=[0,0,1], r[2]=1"


@dataclass(frozen=True)
class Assignment:
    """One NAME=VALUE entry of an option, as given (`entry`) and read: `name`, `index` (the
    element of NAME[K], else None) and `value` (a float, or a tuple of floats for [a, b, c])."""

    entry: str
    name: str
    index: int | None
    value: float | tuple

    @property
    def key(self) -> str:
        """`name`, or `name[index]` for one element."""
        return self.name if self.index is None else f"{self.name}[{self.index}]"


def split_entries(items) -> list:
    """The entries of an option: argparse's list as it is, or one string of entries separated
    by commas (`--start-values k1=7e4,c1=50`), a comma inside [...] belonging to a vector."""
    if items is None:
        return []
    if not isinstance(items, str):
        return list(items)
    out, depth, current = [], 0, ""
    for ch in items:
        depth += (ch == "[") - (ch == "]")
        if ch == "," and depth <= 0:
            out.append(current)
            current = ""
        else:
            current += ch
    return [e for e in out + [current] if e.strip()]


def split_assignment(entry: str, option: str, form: str = "NAME=VALUE") -> tuple:
    """(NAME, VALUE) of one NAME=VALUE entry, split at the first `=` and stripped; OptionError
    naming the option and the entry, and the `form` expected, when either is missing. The one
    splitter of every command's NAME=VALUE options (values read by `read_value`, or as text: a
    file, a sweep's grid or distribution)."""
    name, eq, value = str(entry).partition("=")
    if not eq or not name.strip() or not value.strip():
        raise OptionError(f"{option} {entry!r}: expected {form}")
    return name.strip(), value.strip()


def _number(x) -> float:
    from dynamica.generator.spec import expr as ex
    if isinstance(x, str):                 # what Python's float() reads and YAML 1.2 does not: 1_000
        try:
            v = float(x)
        except ValueError:
            v = None
        if v is None or not math.isfinite(v):
            raise ex.ExpressionError(f"expected a finite number, found {ex.found(x)}")
        return v
    try:
        return ex.number_value(x)
    except ex.ExpressionError:
        raise ex.ExpressionError(f"expected a finite number, found {ex.found(x)}") from None


def read_value(text: str):
    """The VALUE of an entry: a finite number as YAML 1.2 reads it (0.7, -2, 1e-3, .5, 0x10; also
    Python's spelling, 1_000) -> float, or a list of them ([0, 0, 1]) -> tuple of floats;
    ExpressionError saying what was found otherwise. (Values are numbers, not expressions, as
    in a parameter set file.)"""
    import yaml

    from dynamica.generator.spec.loader import YamlLoader
    try:
        v = yaml.load(text, Loader=YamlLoader) if text.strip() else None
    except yaml.YAMLError:
        v = text.strip()
    if isinstance(v, (list, tuple)):
        return tuple(_number(x) for x in v)
    return _number(v)


def read_number(text: str) -> float:
    """A VALUE that must be one finite number (`read_value`'s grammar); ExpressionError (a
    ValueError) otherwise."""
    from dynamica.generator.spec import expr as ex
    v = read_value(text)
    if isinstance(v, tuple):
        raise ex.ExpressionError(f"expected a finite number, found a list {ex.shown(list(v))}")
    return v


def _raise(option: str, problems: list):
    """One OptionError naming the option and every bad entry."""
    if len(problems) == 1:
        raise OptionError(f"{option} {problems[0][0]!r}: {problems[0][1]}")
    raise OptionError(f"{option}: {len(problems)} bad entries:\n" +
                      "\n".join(f"  - {entry!r}: {msg}" for entry, msg in problems))


def read_assignments(items, option: str) -> list:
    """The entries of an option (`split_entries`) as `Assignment`s, checked for their form only
    (NAME or NAME[K], `read_value`); one OptionError naming every bad entry."""
    out, problems = _read_entries(items, option)
    if problems:
        _raise(option, problems)
    return out


def _read_entries(items, option: str) -> tuple:
    """(assignments, problems: [(entry, what is wrong)]) of `read_assignments`."""
    from dynamica.generator.spec import expr as ex
    out, problems = [], []
    for entry in split_entries(items):
        try:
            name, text = split_assignment(entry, option)
        except OptionError:
            problems.append((entry, f"expected NAME=VALUE ({_EXAMPLES})"))
            continue
        m = _NAME.match(name)
        if not m:
            problems.append((entry, f"`{name}` is not a name (an identifier, or NAME[K] for one element)"))
            continue
        try:
            value = read_value(text)
        except ex.ExpressionError as exc:
            problems.append((entry, str(exc)))
            continue
        out.append(Assignment(entry, m.group(1), None if m.group(2) is None else int(m.group(2)), value))
    return out, problems


def _unknown(name, names, what) -> str:
    from dynamica.generator.spec import expr as ex
    return f"unknown {what} `{name}`{ex.did_you_mean(name, names)}; the model has {', '.join(names) or 'none'}"


def scalar_values(items, option: str, names=None, what: str = "name") -> dict:
    """{key: float} of NAME=NUMBER entries (`--start`, `--input`, `--start-values`): with `names`
    (the coordinates, the inputs), every NAME one of them (`what` they are, for the message) and
    no element; without, the keys as written (`p` or `p[k]`) for the caller to check."""
    from dynamica.generator.spec import expr as ex
    out = {}
    assignments, problems = _read_entries(items, option)
    for a in assignments:
        if names is not None and a.name not in names:
            problems.append((a.entry, _unknown(a.name, names, what)))
        elif names is not None and a.index is not None:
            problems.append((a.entry, f"the {what} `{a.name}` is a scalar: no element {a.index}"))
        elif isinstance(a.value, tuple):
            problems.append((a.entry, f"expected a finite number, found a list {ex.shown(list(a.value))}"))
        else:
            out[a.key] = a.value
    if problems:
        _raise(option, problems)
    return out


def parse_assignments(items, names: dict, base: dict | None = None, option: str = "--set") -> dict:
    """Parameter values of NAME=VALUE entries (`--set` of every command): VALUE a number, or a
    list for a vector parameter (0.7, 1e-3, [0, 0, 1]); NAME[K]=NUMBER one element of a vector
    parameter (from 0; the others from earlier entries, `base`, else the default). `names`: the
    model's parameters, name -> default. Returns name -> float or tuple; one OptionError naming
    every bad entry (unknown names with a "did you mean")."""
    if not items:
        return {}                   # (no parser imported: the start-up of a run without options)
    out = {}
    assignments, problems = _read_entries(items, option)
    for a in assignments:
        if a.name not in names:
            problems.append((a.entry, _unknown(a.name, names, "parameter")))
            continue
        default = names[a.name]
        if a.index is not None:
            if not isinstance(default, tuple) or a.index >= len(default):
                what = f"a vector of {len(default)}" if isinstance(default, tuple) else "a scalar"
                problems.append((a.entry, f"`{a.name}` has no element {a.index} (it is {what})"))
                continue
            elem, msg = _value(list(a.value) if isinstance(a.value, tuple) else a.value, 0.0)
            if msg:
                problems.append((a.entry, msg))
                continue
            current = list(out.get(a.name, (base or {}).get(a.name, default)))
            current[a.index] = elem
            out[a.name] = tuple(current)
            continue
        value, msg = _value(list(a.value) if isinstance(a.value, tuple) else a.value, default)
        if msg:
            problems.append((a.entry, msg))
        else:
            out[a.name] = value
    if problems:
        _raise(option, problems)
    return out
