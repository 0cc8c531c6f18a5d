"""Units of a model file (docs/model_format.md#units-and-numbers): a parameter's declared `unit`
and quantities written as text ("30 deg", "250 mm", "1.2 kg*m^2") are converted to SI at load
with pint; the model's numbers from then on are SI (radians for angles), as a bare number always
was. Entries of a known kind (a body's mass, its centre of mass and inertia, gravity, a
coordinate's initial value and rate) refuse a quantity or a parameter whose unit is of another
dimension (a mass given in m).

pint is imported on the first quantity or unit only, by the loader: a cached `load` (runtime/fastload.py)
reads the converted values and never imports it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: a quantity written as text: a number, blanks, then a unit ("30 deg", "-2.5e-3 m", "250 mm"); an
#: expression never has a number followed by a blank and a name, so nothing that parsed before is read as one
QUANTITY = re.compile(r"^\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)\s+([A-Za-z\u00b0\u00b5\u03a9]"
                      r"[A-Za-z0-9\u00b0\u00b5\u03a9_*/^(). -]*?)\s*$")
#: words that make text after a number an expression, not a unit (`1 if 1 else 0` is not read by pint)
_NOT_UNITS = frozenset(("if", "else", "and", "or", "not", "in", "is", "for", "lambda", "None", "True", "False"))

#: the unit of entries of a known kind, by the pattern of their entry path: what a quantity or a
#: parameter with a declared unit given there must convert to (an angle: rad or a plain number)
ENTRY_UNITS = [
    (re.compile(r"^bodies\[\d+\]\.mass$"), "kg", "a mass"),
    (re.compile(r"^bodies\[\d+\]\.com(\[\d\])?$"), "m", "a length (the centre of mass)"),
    (re.compile(r"^bodies\[\d+\]\.inertia(\[\d\]|\.I\w\w)?$"), "kg*m^2", "a moment of inertia"),
    (re.compile(r"^gravity(\[\d\])?$"), "m/s^2", "an acceleration"),
]


class UnitError(ValueError):
    """A unit pint cannot read, or one of another dimension than the entry's."""


@dataclass(frozen=True)
class Unit:
    """A declared unit: its text, the factor to SI and its SI base units (pint's, as text)."""
    text: str
    factor: float
    base: str                       # its SI base dimensions, "kg^1 m^2 s^-2" (rad^k kept); "" for alternatives


_REGISTRY = []


def registry():
    """pint's unit registry, made on first use (importing pint costs some 0.2 s)."""
    if not _REGISTRY:
        import pint
        _REGISTRY.append(pint.UnitRegistry())
    return _REGISTRY[0]


#: coherent SI units (factor 1 to SI) by symbol: their base dimensions (rad kept apart, see `compatible`).
#: A unit written with these alone is read here without pint, whose import and registry cost some 2 s
#: (measured on this project's machine: 1.1 s import, 0.9 s registry): every file that declares SI units
#: only (all the bundled models, the robot importers' output) loads as fast as before
COHERENT = {"1": {}, "m": {"m": 1}, "kg": {"kg": 1}, "s": {"s": 1}, "A": {"A": 1}, "K": {"K": 1},
            "mol": {"mol": 1}, "cd": {"cd": 1}, "rad": {"rad": 1},
            "N": {"kg": 1, "m": 1, "s": -2}, "Pa": {"kg": 1, "m": -1, "s": -2}, "J": {"kg": 1, "m": 2, "s": -2},
            "W": {"kg": 1, "m": 2, "s": -3}, "C": {"A": 1, "s": 1}, "V": {"kg": 1, "m": 2, "s": -3, "A": -1},
            "ohm": {"kg": 1, "m": 2, "s": -3, "A": -2}, "H": {"kg": 1, "m": 2, "s": -2, "A": -2},
            "F": {"kg": -1, "m": -2, "s": 4, "A": 2}, "T": {"kg": 1, "s": -2, "A": -1},
            "Wb": {"kg": 1, "m": 2, "s": -2, "A": -1}, "Hz": {"s": -1}}
#: pint's base units -> the symbols above
_PINT_BASE = {"meter": "m", "kilogram": "kg", "second": "s", "ampere": "A", "kelvin": "K", "mole": "mol",
              "candela": "cd", "radian": "rad"}
_TOKEN = re.compile(r"\s*(\*\*|[*/()^]|[A-Za-z]+|[-+]?\d+(?:\.\d*)?|\S)")


def _coherent(text: str):
    """The base dimensions of a unit written with COHERENT symbols, products (`*`, a blank),
    quotients (`/` divides by the next factor, as pint reads it), powers (`^`, `**`) and
    parentheses; None for anything else (then pint reads it)."""
    tokens = [t for t in _TOKEN.findall(text)]
    pos = [0]

    def peek():
        return tokens[pos[0]] if pos[0] < len(tokens) else None

    def factor():
        t = peek()
        if t == "(":
            pos[0] += 1
            d = product()
            if peek() != ")":
                raise ValueError
            pos[0] += 1
        elif t in COHERENT:
            pos[0] += 1
            d = dict(COHERENT[t])
        else:
            raise ValueError
        if peek() in ("^", "**"):
            pos[0] += 1
            e = float(peek() or "x")
            pos[0] += 1
            d = {k: v * e for k, v in d.items()}
        return d

    def product():
        d = factor()
        while peek() not in (None, ")"):
            sign = 1
            if peek() in ("*", "/"):
                sign = -1 if peek() == "/" else 1
                pos[0] += 1
            for k, v in factor().items():
                d[k] = d.get(k, 0) + sign * v
        return d
    try:
        d = product()
        if pos[0] != len(tokens):
            return None
    except (ValueError, IndexError):
        return None
    return {k: v for k, v in d.items() if v}


def _base_text(dims: dict) -> str:
    return " ".join(f"{k}^{v:g}" for k, v in sorted(dims.items()))


_UNITS: dict = {}

#: what a unit's text may hold before pint reads it (pint evaluates its text: `9**9**9**9` would not
#: end): names, products, quotients, single powers by a plain number, shallow parentheses
_UNIT_CHARS = re.compile(r"^[A-Za-z0-9\u00b0\u00b5\u03a9_*/^(). -]{1,80}$")
_NUMBER = re.compile(r"(\^|\*\*)?\s*\(?\s*([-+]?\d+(?:\.\d+)?)")


def _plain(part: str) -> bool:
    """Whether `part` is made of unit names, `*`, `/`, blanks, parentheses (depth <= 3) and powers
    `^`/`**` by plain numbers of magnitude <= 12 (no power of a power); a number standing alone
    only as the unit 1 ("1/s")."""
    if not _UNIT_CHARS.match(part) or re.search(r"(\^|\*\*)\s*\(?\s*[-+]?[\d.]+\s*\)?\s*(\^|\*\*)", part):
        return False
    depth = 0
    for ch in part:
        depth += (ch == "(") - (ch == ")")
        if depth < 0 or depth > 3:
            return False
    if depth:
        return False
    for m in _NUMBER.finditer(part):
        start = m.start(2)
        if start > 0 and (part[start - 1].isalnum() or part[start - 1] in "_."):
            continue                                      # a digit inside a name
        if m.group(1):
            if abs(float(m.group(2))) > 12:
                return False
        elif m.group(2) != "1":
            return False
    return True


def unit(text: str) -> Unit:
    """The Unit of `text` (alternatives "N*m or N" allowed when they share one factor to SI, as the
    robot importers write for a parameter of revolute and prismatic joints alike); UnitError if
    pint cannot read it or it has an offset (degC)."""
    if text in _UNITS:
        return _UNITS[text]
    parts = [p.strip() for p in text.split(" or ")]
    found = []
    for part in parts:
        if not _plain(part):
            raise UnitError(f"`{part[:40]}` is not a unit: expected unit names with `*`, `/`, blanks, "
                            "parentheses and powers by plain numbers (kg*m^2, N m/rad, mm)")
        dims = _coherent(part)
        if dims is not None:
            found.append((1.0, _base_text(dims)))
            continue
        ureg = registry()
        try:
            q = ureg.Quantity(1.0, part)
        except Exception as exc:          # noqa: BLE001 - pint raises many kinds on bad text (ZeroDivisionError, ...)
            raise UnitError(f"unknown unit `{part}` ({type(exc).__name__}: {str(exc)[:80]})") from None
        if not q._is_multiplicative:
            raise UnitError(f"the unit `{part}` has an offset (a temperature scale): give it in K")
        b = q.to_base_units()
        dims = {_PINT_BASE.get(k, k): v for k, v in b.unit_items()}
        found.append((float(b.magnitude), _base_text(dims)))
    if len({f for f, _ in found}) != 1:
        raise UnitError(f"the alternatives of `{text}` convert to SI by different factors")
    out = _UNITS[text] = Unit(text, found[0][0], found[0][1] if len(found) == 1 else "")
    return out


def quantity(value):
    """(SI value, Unit) of a quantity written as text ("30 deg"), or None if `value` is not one."""
    if not isinstance(value, str) or len(value) > 120:      # (a quantity is short; long text is an expression)
        return None
    m = QUANTITY.match(value)
    if m is None or _NOT_UNITS & set(re.findall(r"[A-Za-z_]+", m.group(2))):
        return None
    u = unit(m.group(2))
    return float(m.group(1)) * u.factor, u


def compatible(u: Unit, expected: str) -> bool:
    """Whether `u` has the dimension of the unit `expected` (rad and a plain number agree)."""
    if not u.base and u.text != "1":       # alternatives ("N*m or N"): not checked
        return True
    return _without_rad(u.base) == _without_rad(unit(expected).base)


def _without_rad(base: str) -> str:
    return " ".join(p for p in base.split() if not p.startswith("rad^"))


def entry_unit(path: str):
    """(unit, what) the entry at `path` is in (ENTRY_UNITS), or None."""
    for pattern, expected, what in ENTRY_UNITS:
        if pattern.match(path):
            return expected, what
    return None
