"""Restricted expression parser for model files (docs/model_format.md, "Expressions").

Model text is data: it is parsed with Python's `ast` and walked over a whitelist of node
types, building sympy objects by constructor. Nothing is ever evaluated (`eval`, `sympify`
and `parse_expr` are never applied to model text).
"""

from __future__ import annotations

import ast
import math
import operator
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


def state_symbol(name: str) -> sp.Symbol:
    """An extra first-order state (`states:`)."""
    return sp.Symbol(f"s:{name}", real=True)


def input_symbol(name: str) -> sp.Symbol:
    """A signal from outside (`inputs:`)."""
    return sp.Symbol(f"u:{name}", real=True)


class ExpressionError(ValueError):
    """Raised with a message that quotes the offending expression; `unknown`: the name, when the
    problem is an unknown name."""

    def __init__(self, message, unknown=None):
        super().__init__(message)
        self.unknown = unknown


#: bounds that keep parsing quick and every folded constant a finite double
MAX_LENGTH = 10000      # characters of one expression
MAX_DEPTH = 100         # nesting of calls, powers, unary operators and parentheses
MAX_EXPONENT = 1000     # |n| of an exact (integer or rational) exponent, e.g. the 2 of m**2
MAX_BITS = 1100         # bits of an exact constant's numerator and denominator (2**1024 > any double)
EXACT_DIGITS = f"more than {int(MAX_BITS * math.log10(2))} digits"

#: the functions' values in IEEE double arithmetic, as the generated code computes them: the
#: twin of every constant subexpression, to find overflow, poles and complex values at their entry
VALUES = {
    "sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
    "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
    "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "abs": abs, "sign": lambda x: float((x > 0) - (x < 0)),
    "min": min, "max": max, "heaviside": lambda x: 1.0 if x > 0 else 0.0 if x < 0 else 0.5,
}


#: chain operator -> (the sympy term it contributes, its double-precision operation)
CHAIN_OPS = {ast.Add: (lambda b: b, operator.add), ast.Sub: (lambda b: -b, operator.sub),
             ast.Mult: (lambda b: b, operator.mul), ast.Div: (lambda b: 1 / b, operator.truediv)}


@dataclass
class Scope:
    """The names an expression may use, and what it did use."""

    scalars: frozenset = frozenset()          # scalar parameter names
    vectors: dict = field(default_factory=dict)  # vector parameter name -> length
    coordinates: frozenset = frozenset()      # allowed only where coordinates_allowed
    coordinates_allowed: bool = False
    time_allowed: bool = True
    local: tuple = ()                         # names bound by the context (e.g. a force law)
    values: dict = field(default_factory=dict)  # parameter name -> default value (float or tuple)
    # where coordinates are allowed: extra states and inputs (generator/mechanics/signals.py)
    states: frozenset = frozenset()
    inputs: frozenset = frozenset()
    # tabulated functions (generator/mechanics/tables.py): name -> an object with arity, sympy(*args), value(*args)
    functions: dict = field(default_factory=dict)

    def child(self, **kw) -> "Scope":
        d = dict(scalars=self.scalars, vectors=self.vectors, coordinates=self.coordinates,
                 coordinates_allowed=self.coordinates_allowed, time_allowed=self.time_allowed,
                 local=self.local, values=self.values, states=self.states, inputs=self.inputs,
                 functions=self.functions)
        d.update(kw)
        return Scope(**d)


def parse(text, scope: Scope) -> sp.Expr:
    """Parse a number or a grammar string into a sympy expression (raises ExpressionError)."""
    return parse_value(text, scope)[0]


def parse_value(text, scope: Scope) -> tuple:
    """(sympy expression, its value or None): the value, in double arithmetic, when every name
    in the expression has one (`pi`, parameters with `scope.values`). Raises ExpressionError,
    also when a constant, or the value, is not a finite real number."""
    if isinstance(text, (bool, int, float)):
        v = number_value(text)
        return (sp.Integer(text) if isinstance(text, int) else sp.Float(text)), v
    if not isinstance(text, str):
        raise ExpressionError(f"expected a number or an expression string, found {type(text).__name__} "
                              f"{shown(text)}")
    if len(text) > MAX_LENGTH:
        raise ExpressionError(f"expression longer than {MAX_LENGTH} characters: {_quote(text)}")
    source = text.strip()
    try:
        tree = ast.parse(source, mode="eval")
    except SyntaxError as exc:
        raise ExpressionError(f"cannot parse expression {_quote(text)}: {exc.msg}") from None
    except (RecursionError, MemoryError):
        raise ExpressionError(f"expression too deeply nested for Python's parser (or a chain of "
                              f"thousands of operators): {_quote(text)}") from None
    walker = _Walker(text, source, scope)
    expr, value = walker.visit(tree.body)
    walker.check_folded(expr)
    return expr, value


def number_value(x) -> float:
    """A YAML number as a finite float (ExpressionError otherwise)."""
    if isinstance(x, bool):
        raise ExpressionError(f"expected a number or an expression, found the boolean {x!r}")
    if not isinstance(x, (int, float)):
        raise ExpressionError(f"expected a number, found {type(x).__name__} {shown(x)}")
    try:
        v = float(x)
    except OverflowError:
        v = math.inf
    if not math.isfinite(v):
        raise ExpressionError(f"expected a finite number, found {shown(x)}")
    return v


class _Walker:
    """Builds the sympy expression and, alongside, its value in double arithmetic."""

    def __init__(self, text: str, source: str, scope: Scope):
        self.text = text
        self.source = source
        self.scope = scope
        self.depth = 0
        self.used_defaults = False

    def fail(self, what: str, unknown=None):
        raise ExpressionError(f"{what} in expression {_quote(self.text)}", unknown)

    def segment(self, node) -> str:
        seg = ast.get_source_segment(self.source, node) or ""
        return seg if len(seg) <= 60 else seg[:57] + "..."

    def visit(self, node):
        method = getattr(self, "visit_" + type(node).__name__, None)
        if method is None:
            self.fail(f"`{type(node).__name__}` is not allowed (only numbers, names, + - * / **, "
                      f"parentheses and the functions {', '.join(sorted(FUNCTIONS))})")
        self.depth += 1
        if self.depth > MAX_DEPTH:
            self.fail(f"nesting deeper than {MAX_DEPTH}")
        try:
            return method(node)
        finally:
            self.depth -= 1

    # -- the double-precision twin
    def value(self, node, fn, *args):
        """fn(*args) in double arithmetic, or None if an argument has no value."""
        if any(a is None for a in args):
            return None
        try:
            v = fn(*args)
        except ZeroDivisionError:
            self.fail(f"division by zero in `{self.segment(node)}`{self.at_defaults()}")
        except OverflowError:
            v = math.inf
        except ValueError:              # math domain error: log(0), sqrt(-1), acos(2), (-8)**(1/3)
            self.fail(f"`{self.segment(node)}` is not a finite real number{self.at_defaults()}")
        if isinstance(v, complex) or not math.isfinite(v):
            self.fail(f"`{self.segment(node)}` is too large: not a finite double{self.at_defaults()}")
        return float(v)

    def at_defaults(self) -> str:
        return " (with the parameters at their default values)" if self.used_defaults else ""

    def exact(self, node, e):
        """An exact constant built by sympy stays small (its size is what sympy's time grows with)."""
        if isinstance(e, sp.Rational) and max(abs(e.p), e.q).bit_length() > MAX_BITS:
            self.fail(f"`{self.segment(node)}` is an exact constant too large to fold ({EXACT_DIGITS})")
        return e

    def check_folded(self, e):
        """Every constant sympy folded is a finite real double."""
        for n in e.atoms(sp.Number):
            if n.is_Rational or n.is_Float:
                if math.isfinite(float(n)):
                    continue
                what = "too large: not a finite double"
            else:
                what = f"not a finite real number ({n})"
            self.fail(f"a constant is {what}")
        if e.has(sp.zoo, sp.nan):
            self.fail("a constant is not a finite real number (a pole or an undefined value)")
        if e.has(sp.I):
            self.fail("the value is not real")

    # -- leaves
    def visit_Constant(self, node):
        v = node.value
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(f"the constant {shown(v)} is not a number")
        x = self.value(node, float, v)                 # 1e400 is inf, 10**400 too large: errors
        return (sp.Integer(v) if isinstance(v, int) else sp.Float(v)), x

    def visit_Name(self, node):
        name, sc = node.id, self.scope
        if name == "pi":
            return sp.pi, math.pi
        if name == "t":
            if not sc.time_allowed:
                self.fail("time `t` is not allowed here")
            return T, None
        if name in sc.local:
            return local_symbol(name), None
        if name in sc.scalars:
            return param_symbol(name), self.default(name)
        if name in sc.vectors:
            self.fail(f"vector parameter `{name}` needs an index here, e.g. `{name}[0]`")
        if name in sc.coordinates:
            if not sc.coordinates_allowed:
                self.fail(f"coordinate `{name}` is allowed only in forces and outputs")
            return coord_symbol(name), None
        for names, symbol, what in ((sc.states, state_symbol, "state"), (sc.inputs, input_symbol, "input")):
            if name in names:
                if not sc.coordinates_allowed:
                    self.fail(f"{what} `{name}` is allowed only in forces, outputs and the states' `der`")
                return symbol(name), None
        if name in sc.functions:
            self.fail(f"`{name}` is a tabulated function: call it, e.g. `{name}(t)`")
        hint = _did_you_mean(name, set(sc.scalars) | set(sc.vectors) | set(sc.coordinates) | set(sc.local)
                             | set(sc.states) | set(sc.inputs) | {"t", "pi"})
        self.fail(f"unknown name `{name}`{hint}", unknown=name)

    def default(self, name, index=None):
        v = self.scope.values.get(name)
        if v is not None and index is not None:
            v = v[index] if isinstance(v, (tuple, list)) and index < len(v) else None
        if isinstance(v, (tuple, list)):
            v = None
        if v is not None:
            self.used_defaults = True
        return v

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
        return param_symbol(name, idx.value), self.default(name, idx.value)

    # -- operations
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
            return rate_symbol(node.args[0].id), None
        if fname in self.scope.functions:
            return self.table_call(node, fname)
        if fname not in FUNCTIONS:
            hint = _did_you_mean(fname, set(FUNCTIONS) | set(self.scope.functions))
            self.fail(f"call of unknown function `{fname}`{hint}")
        lo, hi = ARITY.get(fname, (1, 1))
        if not lo <= len(node.args) <= hi:
            self.fail(f"`{fname}` takes {lo if lo == hi else f'{lo} or more'} argument(s)")
        args = [self.visit(a) for a in node.args]
        v = self.value(node, VALUES[fname], *(x for _, x in args))    # before sympy folds it
        return FUNCTIONS[fname](*(e for e, _ in args)), v

    def table_call(self, node, fname):
        """A tabulated function of the model (`functions:`)."""
        fn = self.scope.functions[fname]
        if len(node.args) != fn.arity:
            self.fail(f"`{fname}` is a tabulated function of {fn.arity} variable(s): it takes {fn.arity} argument(s)")
        args = [self.visit(a) for a in node.args]
        v = self.value(node, fn.value, *(x for _, x in args))
        return fn.sympy(*(e for e, _ in args)), v

    def visit_BinOp(self, node):
        op = type(node.op)
        if op in (ast.Add, ast.Sub):
            return self.chain(node, (ast.Add, ast.Sub), sp.Add)
        if op in (ast.Mult, ast.Div):
            return self.chain(node, (ast.Mult, ast.Div), sp.Mul)
        if op is ast.Pow:
            return self.power(node)
        self.fail(f"operator `{op.__name__}` is not allowed")

    def chain(self, node, ops, combine):
        """a + b - c ... (or a * b / c ...) as one sympy Add (Mul): a long sum is a flat list,
        not a recursion as deep as it is long."""
        spine = []
        while isinstance(node, ast.BinOp) and type(node.op) in ops:
            spine.append(node)
            node = node.left
        e, v = self.visit(node)
        terms = [e]
        for link in reversed(spine):
            b, vb = self.visit(link.right)
            if isinstance(link.op, ast.Div) and b == 0:
                self.fail("division by zero")
            term, fn = CHAIN_OPS[type(link.op)]
            terms.append(term(b))
            v = self.value(link, fn, v, vb)
        return self.exact(spine[0], combine(*terms)), v

    def power(self, node):
        a, va = self.visit(node.left)
        b, vb = self.visit(node.right)
        if b.is_Rational:                # sympy folds exact powers exactly: bound their size first
            if abs(b) > MAX_EXPONENT:
                self.fail(f"the exponent of `{self.segment(node)}` is too large (at most {MAX_EXPONENT})")
            if a.is_Rational and a != 0 and abs(b) * math.log2(max(abs(a.p), a.q)) > MAX_BITS:
                size = "too large" if (b > 0) == (abs(a) > 1) else "too small"
                self.fail(f"`{self.segment(node)}` is {size} a constant to fold exactly ({EXACT_DIGITS})")
        if va == 0 and vb is not None and vb < 0:
            self.fail(f"division by zero in `{self.segment(node)}`{self.at_defaults()}")
        v = self.value(node, math.pow, va, vb)
        return self.exact(node, a ** b), v

    def visit_UnaryOp(self, node):
        a, v = self.visit(node.operand)
        if isinstance(node.op, ast.USub):
            return -a, (None if v is None else -v)
        if isinstance(node.op, ast.UAdd):
            return a, v
        self.fail(f"operator `{type(node.op).__name__}` is not allowed")


def shown(value, limit: int = 80) -> str:
    """A short repr of any value for a message (model data may be huge or self-referential)."""
    import reprlib
    r = reprlib.Repr()
    r.maxstring = r.maxother = limit
    r.maxlist = r.maxdict = r.maxtuple = r.maxset = 6
    r.maxlevel = 3
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 256:
        return f"<an integer of {int(value.bit_length() * math.log10(2)) + 1} digits>"
    return r.repr(value)


def _quote(text: str) -> str:
    return repr(text) if len(text) <= 200 else f"{text[:160]!r}... ({len(text)} characters)"


def _did_you_mean(name: str, candidates) -> str:
    import difflib
    close = difflib.get_close_matches(name, sorted(candidates), n=1)
    return f" (did you mean `{close[0]}`?)" if close else ""


did_you_mean = _did_you_mean


def found(value) -> str:
    """`found ...` in a message: the value's type and a short repr."""
    if value is None:
        return "nothing (null)"
    kind = {bool: "the boolean", str: "the string", int: "the number", float: "the number", list: "a list",
            dict: "a mapping"}.get(type(value), f"a {type(value).__name__}")
    return f"{kind} {shown(value)}"


def join_path(path: str, key) -> str:
    """The path of a key inside a mapping; a huge or odd key is shortened."""
    k = str(key) if isinstance(key, (str, int, float, bool)) or key is None else type(key).__name__
    k = k if len(k) <= 60 else k[:57] + "..."
    return f"{path}.{k}" if path else k
