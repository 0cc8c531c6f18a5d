"""The kernel IR: plain frozen data, no front-end (sympy) objects (docs/design.md, FFCx-style).

A `Kernel` is an ordered list of single assignments to temporaries (`Assign`) and stores to
output arrays (`Store`), with inputs and outputs described by role. Expressions are trees of
the node types below; printers dispatch on them and refuse anything else.
"""

from __future__ import annotations

import math
from dataclasses import dataclass


# ------------------------------------------------------------------ expression nodes
@dataclass(frozen=True)
class Num:
    value: float


@dataclass(frozen=True)
class Arg:
    """Element `index` of input array `array` (a scalar input such as t has index None)."""
    array: str
    index: int | None = None


@dataclass(frozen=True)
class Var:
    name: str


@dataclass(frozen=True)
class Add:
    terms: tuple


@dataclass(frozen=True)
class Mul:
    factors: tuple


@dataclass(frozen=True)
class Pow:
    base: object
    exp: object          # Num (integer-valued or not) or an expression


@dataclass(frozen=True)
class Call:
    func: str            # one of FUNCTIONS
    args: tuple


@dataclass(frozen=True)
class Lookup:
    """A tabulated function (generator/mechanics/tables.py) at `args`: over the module's constant tables
    `<data>_x` and, for one variable, the piecewise-polynomial coefficients `<data>_c<order>` of
    degree `degree`; for two, the grid `<data>_y` and values `<data>_z`, differentiated
    `orders` (each 0 or 1) times. `shape`: knots per variable; `ext`: the helpers' extrapolation
    flag (0 continue the end piece, 1 hold the end value, 2 zero outside)."""
    data: str
    orders: tuple
    shape: tuple
    degree: int
    ext: int
    args: tuple


FUNCTIONS = ("sin", "cos", "tan", "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh",
             "exp", "log", "sqrt", "fabs", "sign", "heaviside", "fmin", "fmax")


def children(node) -> tuple:
    """The operand nodes of an expression node (empty for leaves)."""
    if isinstance(node, Add):
        return node.terms
    if isinstance(node, Mul):
        return node.factors
    if isinstance(node, Pow):
        return (node.base, node.exp)
    if isinstance(node, (Call, Lookup)):
        return node.args
    return ()


# ------------------------------------------------------------------ statements and kernels
@dataclass(frozen=True)
class Assign:
    target: str
    value: object


@dataclass(frozen=True)
class Store:
    array: str
    index: int
    value: object


@dataclass(frozen=True)
class Input:
    name: str            # "t", "q", "qd", "p"
    size: int | None     # None for a scalar


@dataclass(frozen=True)
class Output:
    name: str
    size: int


@dataclass(frozen=True)
class Kernel:
    name: str
    inputs: tuple        # of Input
    outputs: tuple       # of Output
    temps: tuple         # names of temporaries, in order of assignment
    body: tuple          # of Assign | Store
    hints: tuple = ()    # to the backend, e.g. "O1": compile this kernel with less optimization
    exported: bool = False   # an entry point of the module with the kernel's own arguments

    def op_count(self) -> dict:
        """Arithmetic operations of the straight-line code (adds, muls, divs, calls)."""
        counts = {"add": 0, "mul": 0, "div": 0, "call": 0}

        def walk(e):
            if isinstance(e, Add):
                counts["add"] += len(e.terms) - 1
                for a in e.terms:
                    walk(a)
            elif isinstance(e, Mul):
                counts["mul"] += len(e.factors) - 1
                for a in e.factors:
                    walk(a)
            elif isinstance(e, Pow):
                walk(e.base)
                if isinstance(e.exp, Num) and float(e.exp.value).is_integer():
                    k = int(e.exp.value)
                    counts["mul"] += max(abs(k) - 1, 0)
                    counts["div"] += k < 0
                else:
                    counts["call"] += 1
                    walk(e.exp)
            elif isinstance(e, (Call, Lookup)):
                counts["call"] += 1
                for a in e.args:
                    walk(a)
        for st in self.body:
            walk(st.value)
        counts["total"] = counts["add"] + counts["mul"] + counts["div"] + counts["call"]
        return counts


@dataclass(frozen=True)
class ModuleIR:
    """Everything a backend needs to render a module."""
    model_name: str
    module_name: str
    form: str
    kind: str
    coordinates: tuple
    parameters: tuple        # ((name, size), ...)
    parameter_defaults: tuple  # flattened floats
    kernels: tuple           # of Kernel
    entries: str = "lagrangian"   # the module kind (generator/ir/kinds.py): its entry points
    info: tuple = ()         # ((key, value), ...) form-specific metadata, exported as INFO
    tables: tuple = ()       # ((name, values), ...) constant tables: of ints (numeric mode's topology) or of
                             # floats (tabulated functions' knots and coefficients, read by Lookup)
    constrained: bool = False    # closed loops (generator/mechanics/constraints.py)
    signature: str = ""      # content hash, filled by lower()
    inputs: tuple = ()       # names of the inputs, and of the extra states: their slots follow the
    states: tuple = ()       # parameters in p (generator/mechanics/signals.py)


# ------------------------------------------------------------------ an interpreter (the reference for printers)
def _heaviside(x):
    return 1.0 if x > 0 else (0.0 if x < 0 else 0.5)


def _sign(x):
    return float((x > 0) - (x < 0))


def _fmin(a, b):      # C99: a NaN operand is ignored
    return b if math.isnan(a) else (a if math.isnan(b) else min(a, b))


def _fmax(a, b):
    return b if math.isnan(a) else (a if math.isnan(b) else max(a, b))


#: IR function -> Python float function with the C semantics of the generated code
PY_FUNCTIONS = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "asin": math.asin, "acos": math.acos,
                "atan": math.atan, "atan2": math.atan2, "sinh": math.sinh, "cosh": math.cosh, "tanh": math.tanh,
                "exp": math.exp, "log": math.log, "sqrt": math.sqrt, "fabs": math.fabs, "sign": _sign,
                "heaviside": _heaviside, "fmin": _fmin, "fmax": _fmax}


def _lookup(node: Lookup, tables: dict, args) -> float:
    from dynamica.generator.mechanics import tables as tb
    x = tables[f"{node.data}_x"]
    if len(node.shape) == 2:
        return tb.grid2(x, tables[f"{node.data}_y"], tables[f"{node.data}_z"], node.ext, *node.orders, *args)
    return tb.ppoly(x, tables[f"{node.data}_c{node.orders[0]}"], node.degree, node.ext, args[0])


def interpret(kernel: Kernel, inputs: dict, tables=()) -> dict:
    """Run a kernel in Python: `inputs` maps input names to a float (scalar) or a sequence, `tables`
    are the module's constant tables (ModuleIR.tables, for Lookup); returns output name -> list
    of floats. Slow and obviously right: the reference the printers and the compiled modules are
    checked against (tests/generator/ir/test_lower.py)."""
    env: dict = {}
    tables = dict(tables)

    def ev(node):
        if isinstance(node, Num):
            return node.value
        if isinstance(node, Arg):
            v = inputs[node.array]
            return float(v) if node.index is None else float(v[node.index])
        if isinstance(node, Var):
            return env[node.name]
        if isinstance(node, Add):
            return sum(ev(t) for t in node.terms)
        if isinstance(node, Mul):
            out = 1.0
            for f in node.factors:
                out *= ev(f)
            return out
        if isinstance(node, Pow):
            b, x = ev(node.base), ev(node.exp)
            return 1.0 / b ** -x if x < 0 and float(x).is_integer() else b ** x
        if isinstance(node, Call):
            return PY_FUNCTIONS[node.func](*(ev(a) for a in node.args))
        if isinstance(node, Lookup):
            return _lookup(node, tables, [ev(a) for a in node.args])
        raise TypeError(f"cannot interpret {type(node).__name__}")

    out = {o.name: [math.nan] * o.size for o in kernel.outputs}
    for st in kernel.body:
        if isinstance(st, Assign):
            env[st.target] = ev(st.value)
        elif isinstance(st, Store):
            out[st.array][st.index] = ev(st.value)
        else:
            raise TypeError(f"unknown statement {type(st).__name__}")
    return out
