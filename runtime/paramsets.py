"""Parameter sets (docs/api.md#parameter-sets), after the parameter dialogs of D90 that save,
load and import sets (dissertation, appendix B):

    dynamica params MODEL > set.yaml              every parameter with value, unit, description
    dynamica simulate MODEL --params set.yaml     the values of a set (unknown names are errors)
    dynamica simulate MODEL --import other.yaml   import by name: the values of the parameters
                                                  this model has too, from another model's set
    dynamica simulate MODEL --set l=0.7 --set r=[0,0,1] --set "r[2]=1"

The option plumbing (`add_options`, `overrides`) is shared by every command that runs a model
(simulate, check, params; statics and modes when they come). Values are written with repr, so a
set read back gives the same doubles: a run with `--params` of a written set is bit-identical.
"""

from __future__ import annotations

import re
from pathlib import Path

from dynamica.errors import ModelError, Problem

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


_ASSIGNMENT = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\[\s*(\d+)\s*\])?\s*=(.*)$", re.S)


def parse_assignments(items, names: dict, base: dict | None = None) -> dict:
    """`--set` items: NAME=VALUE (VALUE a YAML number or list: 0.7, 1e-3, [0, 0, 1]) or
    NAME[K]=NUMBER for one element of a vector parameter (from 0)."""
    if not items:
        return {}
    import yaml

    from dynamica.generator.spec import expr as ex
    from dynamica.generator.spec.loader import YamlLoader
    out, problems = {}, []
    for item in items:
        m = _ASSIGNMENT.match(item)
        if not m:
            problems.append(Problem(item, "expected NAME=VALUE (e.g. l=0.7, r=[0,0,1], r[2]=1)"))
            continue
        name, index, text = m.group(1), m.group(2), m.group(3).strip()
        if name not in names:
            problems.append(Problem(item, f"unknown parameter `{name}`{ex.did_you_mean(name, names)}; the model has "
                                          f"{', '.join(names) or 'none'}"))
            continue
        try:
            v = yaml.load(text, Loader=YamlLoader) if text else None
        except yaml.YAMLError:
            v = text
        default = names[name]
        if index is not None:
            if not isinstance(default, tuple) or int(index) >= len(default):
                size = len(default) if isinstance(default, tuple) else "a scalar"
                what = size if isinstance(size, str) else f"a vector of {size}"
                problems.append(Problem(item, f"`{name}` has no element {index} (it is {what})"))
                continue
            current = list(out.get(name, (base or {}).get(name, default)))
            elem, msg = _value(v, 0.0)
            if msg:
                problems.append(Problem(item, msg))
                continue
            current[int(index)] = elem
            out[name] = tuple(current)
            continue
        value, msg = _value(v, default)
        if msg:
            problems.append(Problem(item, msg))
        else:
            out[name] = value
    if problems:
        raise ModelError("--set", problems)
    return out
