"""Restricted expression parser for model files (docs/model_format.md, "Expressions").

Model text is data: it is parsed with Python's `ast` and walked over a whitelist of node
types, building sympy objects by constructor. Nothing is ever evaluated (`eval`, `sympify`
and `parse_expr` are never applied to model text).
"""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass, field

import sympy as sp

#: the functions of the grammar and the sympy constructors they map to
FUNCTIONS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "asin": sp.asin, "acos": sp.acos,
    "atan": sp.atan, "atan2": sp.atan2, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "abs": sp.Abs, "sign": sp.sign,
    "min": sp.Min, "max": sp.Max, "heaviside": sp.Heaviside,
}
ARITY = {"atan2": (2, 2), "min": (2, 64), "max": (2, 64)}
RESERVED = set(FUNCTIONS) | {"t", "pi", "der", "ground"}

# Every symbol that stands for something the model file names lives in a namespace of its own:
# its sympy name carries a role prefix with a colon ("p:", "q:", "qd:", "local:"), which no
# generated intermediate can have (Program.let accepts identifiers only). A parameter called
# like a generated quantity (`m3`, the mass of body 3) is therefore a different symbol, and
# lowering maps it to its slot p[k] of the parameter array, never to a local of the kernel.
T = sp.Symbol("t", real=True)


def param_symbol(name: str, index: int | None = None) -> sp.Symbol:
    return sp.Symbol(f"p:{name}" if index is None else f"p:{name}[{index}]", real=True)


def local_symbol(name: str) -> sp.Symbol:
    """A name bound by its context, e.g. `elongation` in a spring law."""
    return sp.Symbol(f"local:{name}", real=True)


def coord_symbol(name: str) -> sp.Symbol:
    return sp.Symbol(f"q:{name}", real=True)


def rate_symbol(name: str) -> sp.Symbol:
    return sp.Symbol(f"qd:{name}", real=True)


class ExpressionError(ValueError):
    """Raised with a message that quotes the offending expression."""


@dataclass
class Scope:
    """The names an expression may use, and what it did use."""

    scalars: frozenset = frozenset()          # scalar parameter names
    vectors: dict = field(default_factory=dict)  # vector parameter name -> length
    coordinates: frozenset = frozenset()      # allowed only where coordinates_allowed
    coordinates_allowed: bool = False
    time_allowed: bool = True
    local: tuple = ()                         # names bound by the context (e.g. a force law)

    def child(self, **kw) -> "Scope":
        d = dict(scalars=self.scalars, vectors=self.vectors, coordinates=self.coordinates,
                 coordinates_allowed=self.coordinates_allowed, time_allowed=self.time_allowed,
                 local=self.local)
        d.update(kw)
        return Scope(**d)


def parse(text, scope: Scope) -> sp.Expr:
    """Parse a number or a grammar string into a sympy expression (raises ExpressionError)."""
    if isinstance(text, bool):
        raise ExpressionError(f"expected a number or an expression, found the boolean {text!r}")
    if isinstance(text, int):
        return sp.Integer(text)
    if isinstance(text, float):
        if not math.isfinite(text):
            raise ExpressionError(f"expected a finite number, found {text!r}")
        return sp.Float(text)
    if not isinstance(text, str):
        raise ExpressionError(f"expected a number or an expression string, found {type(text).__name__} {text!r}")
    if len(text) > 10000:
        raise ExpressionError("expression longer than 10000 characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {text!r}: {exc.msg}") from None
    return _Walker(text, scope).visit(tree.body)


class _Walker:
    def __init__(self, text: str, scope: Scope):
        self.text = text
        self.scope = scope

    def fail(self, what: str):
        raise ExpressionError(f"{what} in expression {self.text!r}")

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            self.fail(f"`{type(node).__name__}` is not allowed (only numbers, names, + - * / **, "
                      f"parentheses and the functions {', '.join(sorted(FUNCTIONS))})")
        return method(node)

    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(f"the constant {v!r} is not a number")
        return sp.Integer(v) if isinstance(v, int) else sp.Float(v)

    def visit_Name(self, node):
        name, sc = node.id, self.scope
        if name == "pi":
            return sp.pi
        if name == "t":
            if not sc.time_allowed:
                self.fail("time `t` is not allowed here")
            return T
        if name in sc.local:
            return local_symbol(name)
        if name in sc.scalars:
            return param_symbol(name)
        if name in sc.vectors:
            self.fail(f"vector parameter `{name}` needs an index here, e.g. `{name}[0]`")
        if name in sc.coordinates:
            if not sc.coordinates_allowed:
                self.fail(f"coordinate `{name}` is allowed only in forces and outputs")
            return coord_symbol(name)
        hint = _did_you_mean(name, set(sc.scalars) | set(sc.vectors) | set(sc.coordinates) | set(sc.local)
                             | {"t", "pi"})
        self.fail(f"unknown name `{name}`{hint}")

    def visit_Subscript(self, node):
        if not isinstance(node.value, ast.Name) or node.value.id not in self.scope.vectors:
            self.fail("indexing is allowed only on vector parameters")
        name = node.value.id
        idx = node.slice
        if not (isinstance(idx, ast.Constant) and type(idx.value) is int):
            self.fail(f"the index of `{name}` must be a whole number")
        n = self.scope.vectors[name]
        if not 0 <= idx.value < n:
            self.fail(f"index {idx.value} out of range for `{name}` of length {n} (indices from 0)")
        return param_symbol(name, idx.value)

    def visit_Call(self, node):
        if not isinstance(node.func, ast.Name):
            self.fail("only calls of the grammar's functions are allowed")
        fname = node.func.id
        if node.keywords:
            self.fail(f"keyword arguments are not allowed in `{fname}`")
        if fname == "der":
            sc = self.scope
            if len(node.args) != 1 or not isinstance(node.args[0], ast.Name) \
                    or node.args[0].id not in sc.coordinates:
                self.fail("`der(...)` takes one coordinate name")
            if not sc.coordinates_allowed:
                self.fail("`der(...)` is allowed only in forces and outputs")
            return rate_symbol(node.args[0].id)
        if fname not in FUNCTIONS:
            self.fail(f"call of unknown function `{fname}`{_did_you_mean(fname, FUNCTIONS)}")
        lo, hi = ARITY.get(fname, (1, 1))
        if not lo <= len(node.args) <= hi:
            self.fail(f"`{fname}` takes {lo if lo == hi else f'{lo} or more'} argument(s)")
        args = [self.visit(a) for a in node.args]
        return FUNCTIONS[fname](*args)

    def visit_BinOp(self, node):
        a, b = self.visit(node.left), self.visit(node.right)
        op = type(node.op)
        if op is ast.Add:
            return a + b
        if op is ast.Sub:
            return a - b
        if op is ast.Mult:
            return a * b
        if op is ast.Div:
            if b == 0:
                self.fail("division by zero")
            return a / b
        if op is ast.Pow:
            return a ** b
        self.fail(f"operator `{type(node.op).__name__}` is not allowed")

    def visit_UnaryOp(self, node):
        a = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -a
        if isinstance(node.op, ast.UAdd):
            return a
        self.fail(f"operator `{type(node.op).__name__}` is not allowed")


def _did_you_mean(name: str, candidates) -> str:
    import difflib
    close = difflib.get_close_matches(name, sorted(candidates), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


did_you_mean = _did_you_mean
