"""How the numeric reference (runtime/reference/numeric.py) reads a model: the expression grammar of
docs/model_format.md parsed with Python's `ast` into sympy, the joints read from the model file
itself (shorthands expanded and named axes mapped as the docs say), and the model's names as
sympy symbols. Shares no code with generator/ on purpose (runtime/reference/numeric.py's docstring).
"""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import sympy as sp
import yaml

from dynamica.runtime.reference.tables import signal_slots, table_function

#: the functions of the expression grammar (docs/model_format.md, "Expressions"); sign(0) = 0,
#: heaviside(0) = 1/2 (sympy's conventions, the documented ones)
FUNCTIONS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "asin": sp.asin, "acos": sp.acos,
    "atan": sp.atan, "atan2": sp.atan2, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "abs": sp.Abs, "sign": sp.sign,
    "min": sp.Min, "max": sp.Max, "heaviside": lambda x: sp.Heaviside(x, sp.Rational(1, 2)),
}
#: the names a spring_damper `law` binds (docs/model_format.md, `spring_damper`)
LAW_LOCALS = ("elongation", "elongation_rate")
_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a ** b}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: a}


#: docs/model_format.md, "Axes" and "Shorthands"
NAMED_AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1), "-x": (-1, 0, 0), "-y": (0, -1, 0), "-z": (0, 0, -1)}
SHORTHANDS = {
    "revolute": lambda j, qs, m: [{"rotate": j["axis"], **m}],
    "prismatic": lambda j, qs, m: [{"translate": j["axis"], **m}],
    "universal": lambda j, qs, m: [{"rotate": a, "q": c} for a, c in zip(j["axes"], qs)],
    "spherical": lambda j, qs, m: [{"rotate": a, "q": c} for a, c in zip("xyz", qs)],
    "free": lambda j, qs, m: [{"translate": a, "q": c} for a, c in zip("xyz", qs[:3])]
    + [{"rotate": a, "q": c} for a, c in zip("xyz", qs[3:])],
    "helical": lambda j, qs, m: [{"screw": j["axis"], "pitch": j["pitch"], **m}],
}


def joint_transforms(spec) -> dict:
    """Body name -> [(kind, axis or offset texts, coordinate, by, pitch)], read from the model file
    when there is one and it has the spec's bodies and coordinates (a URDF file by
    runtime/reference/reader.py's `urdf`; else the loader's expansion: a model given as a
    mapping, a stage's structure): kind "rotate", "translate", "screw" or "offset"."""
    own = {b.name: [(tr.kind, tr.vector, tr.q, tr.by, tr.pitch) for tr in b.joint] for b in spec.bodies}
    from dynamica.runtime.reference.reader import urdf
    robot = urdf(spec)
    if robot is not None:                          # a URDF robot: its joints read from its XML
        return robot[1]
    path = Path(spec.file)
    if not path.is_file() or path.suffix not in (".yaml", ".yml"):
        return own
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    read = {b["name"]: _expand(b["joint"]) for b in raw["bodies"]}
    same = set(read) == set(own) and all([x[2] for x in read[n]] == [x[2] for x in own[n]] for n in own)
    return read if same else own


def _expand(joint) -> list:
    if isinstance(joint, dict):
        q = joint.get("q")
        motion = {"q": q} if "q" in joint else {"by": joint.get("by")}
        items = [{"translate": joint["offset"]}] if "offset" in joint else []
        joint = items + SHORTHANDS[joint["type"]](joint, q if isinstance(q, list) else [q], motion)
    out = []
    for tr in joint:
        kind = next(k for k in ("rotate", "translate", "screw") if k in tr)
        if "q" not in tr and "by" not in tr:
            out.append(("offset", tuple(tr["translate"]), None, None, None))
        else:
            out.append((kind, _axis(tr[kind]), tr.get("q"), tr.get("by"), tr.get("pitch")))
    return out


def _axis(axis) -> tuple:
    """A named axis, the name of a vector parameter, or three expressions."""
    if isinstance(axis, str):
        return NAMED_AXES[axis] if axis in NAMED_AXES else tuple(f"{axis}[{k}]" for k in range(3))
    return tuple(axis)


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def unskew(S):
    return sp.Matrix([S[2, 1], S[0, 2], S[1, 0]])


class Names:
    """The model's names as sympy symbols of this module, and a reader of its expression texts
    (already validated by the loader, so only the grammar's constructs are translated)."""

    def __init__(self, spec, tables=None):
        self.t = sp.Symbol("t", real=True)
        self.scalars, self.vectors, self.slots = {}, {}, []
        for p in spec.parameters:
            if isinstance(p.value, tuple):
                self.vectors[p.name] = [sp.Symbol(f"p{len(self.slots) + k}", real=True) for k in range(len(p.value))]
                self.slots += [(p.name, k) for k in range(len(p.value))]
            else:
                self.scalars[p.name] = sp.Symbol(f"p{len(self.slots)}", real=True)
                self.slots.append((p.name, None))
        self.params = [self.scalars[n] if k is None else self.vectors[n][k] for n, k in self.slots]
        # inputs and extra states: slots after the parameters, laid out as docs/api.md (SLOTS) says
        signals, self.signal_slots = signal_slots(spec, len(self.params), self.t)
        self.params += [s for s in self.signal_slots]
        self.slots += [("", None)] * len(self.signal_slots)
        coords = [tr.q for b in spec.bodies for tr in b.joint if tr.q is not None]
        self.q = {c: sp.Symbol(f"q{k}", real=True) for k, c in enumerate(coords)}
        self.qd = {c: sp.Symbol(f"qd{k}", real=True) for k, c in enumerate(coords)}
        self.local = {n: sp.Symbol(f"loc{k}", real=True) for k, n in enumerate(LAW_LOCALS)}
        self._named = {"pi": sp.pi, "t": self.t} | self.scalars | self.q | signals
        self.tables = {tf.name: tf for tf in (getattr(spec, "functions", ()) if tables is None else tables)}

    def expr(self, text, law=False) -> sp.Expr:
        """The sympy expression of a model text; `law`: the names a spring law binds shadow the rest."""
        if isinstance(text, (int, float)) and not isinstance(text, bool):
            return sp.Integer(text) if isinstance(text, int) else sp.Float(text)
        self._in_law = law
        return self._node(ast.parse(str(text).strip(), mode="eval").body)

    def vector(self, texts) -> sp.Matrix:
        return sp.Matrix([self.expr(x) for x in texts])

    def _node(self, n):
        if isinstance(n, ast.Constant):
            return sp.Integer(n.value) if isinstance(n.value, int) else sp.Float(n.value)
        if isinstance(n, ast.Name):
            return self.local[n.id] if self._in_law and n.id in self.local else self._named[n.id]
        if isinstance(n, ast.Subscript):
            return self.vectors[n.value.id][n.slice.value]
        if isinstance(n, ast.Call) and n.func.id == "der":
            return self.qd[n.args[0].id]
        if isinstance(n, ast.Call) and n.func.id in self.tables:       # evaluated by scipy
            return table_function(self.tables[n.func.id])(*[self._node(a) for a in n.args])
        if isinstance(n, ast.Call):
            return FUNCTIONS[n.func.id](*[self._node(a) for a in n.args])
        if isinstance(n, ast.BinOp):
            return _BINARY[type(n.op)](self._node(n.left), self._node(n.right))
        if isinstance(n, ast.UnaryOp):
            return _UNARY[type(n.op)](self._node(n.operand))
        raise ValueError(f"not in the expression grammar: {ast.dump(n)}")
