"""Units of the variables of a result, for axis labels (plots, reports, tables): from the joint
kinds (a rotation's coordinate is in rad, a translation's in m), the output kinds (a point's
position in m, a reaction force in N, ...) and, for output expressions, from the parameters'
`unit` entries by dimensional analysis (`m*g*l*cos(phi)` with m in kg, g in m/s^2, l in m is
in J). A variable whose unit cannot be told has the unit "".
"""

from __future__ import annotations

import re

import sympy as sp

_BASE = {s: sp.Symbol(s, positive=True) for s in ("kg", "m", "s", "A", "K", "mol", "cd")}
_KG, _M, _S = _BASE["kg"], _BASE["m"], _BASE["s"]
#: unit names a `unit:` entry may use, in base units (rad and deg are dimensionless here)
NAMED = {**_BASE, "g": _KG / 1000, "mm": _M / 1000, "cm": _M / 100, "km": 1000 * _M, "min": 60 * _S, "h": 3600 * _S,
         "N": _KG * _M / _S**2, "J": _KG * _M**2 / _S**2, "W": _KG * _M**2 / _S**3, "Pa": _KG / _M / _S**2,
         "Hz": 1 / _S, "rad": sp.Integer(1), "deg": sp.pi / 180, "1": sp.Integer(1)}
#: how a derived unit is shown (first match), in base units
SHOWN = [("N", NAMED["N"]), ("J", NAMED["J"]), ("W", NAMED["W"]), ("m/s", _M / _S), ("m/s^2", _M / _S**2),
         ("1/s", 1 / _S), ("kg", _KG), ("m", _M), ("s", _S), ("kg*m^2", _KG * _M**2)]

#: (suffix of an output key, unit) for the kinds of outputs (docs/model_format.md#outputs)
OUTPUT_UNITS = [(".position", "m"), (".velocity", "m/s"), (".acceleration", "m/s^2"),
                (".angular_velocity", "rad/s"), (".angular_acceleration", "rad/s^2"),
                (".reaction_force", "N"), (".reaction_torque", "N m"), (".force", "N"), (".torque", "N m"),
                (".length", "m"), (".tension", "N")]
KINDS = {"rotate": ("rad", "rad/s", "rad/s^2", "N m"), "translate": ("m", "m/s", "m/s^2", "N")}


def parse_unit(text: str):
    """A `unit:` text (kg*m^2, m/s^2, N*m*s/rad) in base units, or None if it is not one."""
    if not isinstance(text, str) or not text.strip():
        return None
    t = text.strip().replace("^", "**").replace("·", "*")
    if not re.fullmatch(r"[A-Za-z0-9_*/(). +-]+", t):
        return None
    t = re.sub(r"(?<=[A-Za-z])\s+(?=[A-Za-z])", "*", t)       # "N m" = N*m
    try:
        e = sp.sympify(t, locals=dict(NAMED))
    except (sp.SympifyError, TypeError, SyntaxError):
        return None
    return e if e.free_symbols <= set(_BASE.values()) else None


def shown(u) -> str:
    """A unit in base units as a label ("J", "m/s", "kg*m^2/s")."""
    if u is None:
        return ""
    u = sp.nsimplify(sp.simplify(u))
    if u == 1:
        return "1"
    for name, ref in SHOWN:
        if sp.simplify(u / ref) == 1:
            return name
    return str(u).replace("**", "^")


def coordinate_kinds(spec) -> dict:
    """coordinate -> "rotate" | "translate" (a screw's coordinate is its travel)."""
    return {tr.q: "translate" if tr.kind == "screw" else tr.kind for b in spec.bodies for tr in b.joint
            if tr.q is not None}


def variable_units(model) -> dict:
    """Column name of a result (coordinates, der(q), output keys and their elements) -> SI unit label
    (`display_units` has the declared units some columns may be shown in instead)."""
    spec = model.spec
    kinds = coordinate_kinds(spec)
    out = {}
    for c, kind in kinds.items():
        pos, vel, acc, _ = KINDS[kind]
        out[c], out[f"der({c})"], out[f"qdd[{model.coordinates.index(c)}]"] = pos, vel, acc
    if spec.stages:           # the results' columns of every stage: a released body's free coordinates
        from dynamica.generator.mechanics.stages import FREE_SUFFIXES, result_columns
        for j, c in enumerate(result_columns(spec, model.coordinates)):
            kind = kinds.get(c) or next(("rotate" if suffix.startswith("_r") else "translate"
                                         for suffix in FREE_SUFFIXES if c.endswith(suffix)), None)
            if kind:
                pos, vel, acc, _ = KINDS[kind]
                out[c], out[f"der({c})"], out[f"qdd[{j}]"] = pos, vel, acc
    gen = {f["name"]: KINDS[kinds[f["coordinate"]]][3]
           for f in spec.forces if "coordinate" in dict(f.fields) and f["coordinate"] in kinds}
    exprs = dict(spec.outputs.expressions)
    for key, shape in getattr(model, "output_layout", ()):
        unit = next((u for suffix, u in OUTPUT_UNITS if key.endswith(suffix)), None)
        if key.endswith(".generalized_force"):
            unit = gen.get(key[:-len(".generalized_force")], "")
        if key in exprs:
            unit = expression_unit(spec, exprs[key])
        if unit is None:
            continue
        size = 1
        for d in shape:
            size *= d
        out[key] = unit
        for j in range(size if shape else 0):
            out[f"{key}[{j}]"] = unit
    return out


def display_units(model) -> dict:
    """Column -> (unit, factor to SI) of the columns shown in the units the model file wrote their
    initial values in (a coordinate started at "30 deg": deg and deg/s); a value shown is the
    SI value divided by the factor."""
    return {c: (u, f) for c, u, f in getattr(model.spec, "display_units", ())}


def expression_unit(spec, text) -> str:
    """The unit of an output expression from the parameters' units and the coordinates' kinds
    ("" when a parameter has no unit or the terms of a sum disagree)."""
    from dynamica.generator.spec import expr as ex
    try:
        e = ex.parse(text, spec.scope(coordinates_allowed=True, time_allowed=True))
    except Exception:                        # noqa: BLE001 (a label is not worth an error)
        return ""
    units = {}
    for p in spec.parameters:
        u = parse_unit(p.unit)
        if u is not None:                    # the values are SI (converted at load): the dimension only
            u = sp.Mul(*[f for f in sp.Mul.make_args(u) if f.free_symbols])
        if isinstance(p.value, tuple):
            for k in range(len(p.value)):
                units[ex.param_symbol(p.name, k)] = u
        else:
            units[ex.param_symbol(p.name)] = u
    for c, kind in coordinate_kinds(spec).items():
        pos = sp.Integer(1) if kind == "rotate" else _M
        units[ex.coord_symbol(c)], units[ex.rate_symbol(c)] = pos, pos / _S
    units[ex.T] = _S
    u = _unit(e, units)
    return shown(u) if u is not None else ""


def _unit(e, units):
    if e.is_Number or e in (sp.pi, sp.E):
        return sp.Integer(1)
    if e.is_Symbol:
        return units.get(e)
    args = [_unit(a, units) for a in e.args]
    if any(a is None for a in args):
        return None
    if e.is_Add:
        first = args[0]
        return first if all(sp.simplify(a / first) == 1 for a in args[1:]) else None
    if e.is_Mul:
        return sp.Mul(*args)
    if e.is_Pow:
        return args[0] ** e.args[1] if e.args[1].is_Number else (sp.Integer(1) if args[0] == 1 else None)
    if isinstance(e, (sp.Abs, sp.Min, sp.Max)):
        return args[0] if all(sp.simplify(a / args[0]) == 1 for a in args) else None
    if isinstance(e, (sp.sign, sp.Heaviside)):
        return sp.Integer(1)
    return sp.Integer(1) if all(a == 1 for a in args) else None      # sin, exp, atan2 of numbers


def group_by_unit(panels, units) -> list:
    """Each panel split so that every panel holds one unit (in order of first appearance)."""
    out = []
    for panel in panels:
        groups = {}
        for name in panel:
            groups.setdefault(units.get(name, ""), []).append(name)
        out.extend(groups.values())
    return out


def label(unit: str) -> str:
    return f" [{unit}]" if unit and unit != "1" else ""
