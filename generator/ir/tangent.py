"""Forward-mode differentiation of a kernel: its tangent program over the IR.

`tangent_kernel(kernel, wrt, output)` returns a kernel that computes what `kernel` computes
and, for every output entry, its derivatives with respect to the entries of the input arrays
`wrt` (a Jacobian, row-major: entry `index * D + d` of `output`, D directions in all).

Each statement `z = f(a, b, ...)` of the straight-line code gets its local partials df/da,
df/db, ... (one reverse sweep over the statement's small expression tree, bound once as
temporaries `dyn_p<k>`), and then one tangent per direction d that reaches it:

    z_d = df/da a_d + df/db b_d + ...           (bound as `dyn_t<k>`)

Directions are tracked per value, so a value carries tangents only for the inputs it depends
on: a quantity of body i has tangents for the coordinates of its path P_i only, and the
program grows with the sum over values of their dependency sets, not with D times the program
(and never exponentially: every tangent is one statement over named values). Derivatives of
the functions are those of their C semantics away from the kinks (sign, heaviside: 0;
fabs: sign; fmin/fmax: the branch taken, half of each at a tie); of a tabulated function, the
Lookup of its derivative table (of the piece the argument is in; at a knot of a linear table,
one of its two slopes).
"""

from __future__ import annotations

from dynamica.generator.ir import nodes as ir
from dynamica.generator.mechanics.tables import ZERO_OUTSIDE

ZERO, ONE, MINUS_ONE = ir.Num(0.0), ir.Num(1.0), ir.Num(-1.0)
_LEAVES = (ir.Num, ir.Arg, ir.Var)


# ------------------------------------------------------------------ folding constructors
def mul(*factors):
    """Product with ones dropped, zeros absorbing, numbers folded, nested products flattened."""
    flat, coef = [], 1.0
    for f in factors:
        for g in (f.factors if isinstance(f, ir.Mul) else (f,)):
            if isinstance(g, ir.Num):
                coef *= g.value
            else:
                flat.append(g)
    if coef == 0.0:
        return ZERO
    if not flat:
        return ir.Num(coef)
    if coef != 1.0:
        flat.insert(0, ir.Num(coef))
    return flat[0] if len(flat) == 1 else ir.Mul(tuple(flat))


def add(*terms):
    """Sum with zeros dropped and nested sums flattened."""
    flat = []
    for t in terms:
        for u in (t.terms if isinstance(t, ir.Add) else (t,)):
            if not (isinstance(u, ir.Num) and u.value == 0.0):
                flat.append(u)
    if not flat:
        return ZERO
    return flat[0] if len(flat) == 1 else ir.Add(tuple(flat))


def power(base, k: float):
    if k == 1.0:
        return base
    return ir.Pow(base, ir.Num(k))


def call(func, *args):
    return ir.Call(func, tuple(args))


# ------------------------------------------------------------------ local partials of one expression
def _arg_partials(node, named=None):
    """[(operand, d node / d operand)] for one node (operands as they stand in the node);
    `named`: a variable holding the node's value, used where a partial repeats the node."""
    if isinstance(node, ir.Add):
        return [(t, ONE) for t in node.terms]
    if isinstance(node, ir.Mul):
        fs = node.factors
        return [(f, mul(*(fs[:k] + fs[k + 1:]))) for k, f in enumerate(fs)]
    if isinstance(node, ir.Pow):
        b, e = node.base, node.exp
        if isinstance(e, ir.Num):
            return [(b, mul(e, power(b, e.value - 1.0)))]
        return [(b, mul(e, ir.Pow(b, add(e, MINUS_ONE)))), (e, mul(named or node, call("log", b)))]
    if isinstance(node, ir.Call):
        return _CALL_RULES[node.func](named or node, *node.args)
    if isinstance(node, ir.Lookup):
        return [(a, d) for k, a in enumerate(node.args) if (d := lookup_derivative(node, k)) is not None]
    return []


def lookup_derivative(node: ir.Lookup, k: int):
    """The Lookup of d node / d args[k] (generator/mechanics/tables.py lookup_parts with the order of
    argument k raised), or None where it vanishes (beyond the degree of the pieces). One
    variable: the pieces' degree drops by one and a derivative is zero outside the knots unless
    the function continues its end pieces; two variables: the grid helper takes the orders."""
    orders = list(node.orders)
    orders[k] += 1
    if len(node.args) == 1:
        degree, ext = node.degree - 1, (ZERO_OUTSIDE if node.ext else node.ext)
        if degree < 0:
            return None
    else:
        degree, ext = node.degree, node.ext
        if orders[k] > degree:
            return None
    return ir.Lookup(node.data, tuple(orders), node.shape, degree, ext, node.args)


def _h(x):
    return call("heaviside", x)


#: function -> (node, *args) -> [(arg, partial)]: derivatives of the C functions
_CALL_RULES = {
    "sin": lambda n, a: [(a, call("cos", a))],
    "cos": lambda n, a: [(a, mul(MINUS_ONE, call("sin", a)))],
    "tan": lambda n, a: [(a, add(ONE, power(n, 2.0)))],
    "asin": lambda n, a: [(a, power(call("sqrt", add(ONE, mul(MINUS_ONE, power(a, 2.0)))), -1.0))],
    "acos": lambda n, a: [(a, mul(MINUS_ONE, power(call("sqrt", add(ONE, mul(MINUS_ONE, power(a, 2.0)))), -1.0)))],
    "atan": lambda n, a: [(a, power(add(ONE, power(a, 2.0)), -1.0))],
    "atan2": lambda n, y, x: [(y, mul(x, power(add(power(x, 2.0), power(y, 2.0)), -1.0))),
                              (x, mul(MINUS_ONE, y, power(add(power(x, 2.0), power(y, 2.0)), -1.0)))],
    "sinh": lambda n, a: [(a, call("cosh", a))],
    "cosh": lambda n, a: [(a, call("sinh", a))],
    "tanh": lambda n, a: [(a, add(ONE, mul(MINUS_ONE, power(n, 2.0))))],
    "exp": lambda n, a: [(a, n)],
    "log": lambda n, a: [(a, power(a, -1.0))],
    "sqrt": lambda n, a: [(a, mul(ir.Num(0.5), power(n, -1.0)))],
    "fabs": lambda n, a: [(a, call("sign", a))],
    "sign": lambda n, a: [],
    "heaviside": lambda n, a: [],
    "fmin": lambda n, a, b: [(a, _h(add(b, mul(MINUS_ONE, a)))), (b, _h(add(a, mul(MINUS_ONE, b))))],
    "fmax": lambda n, a, b: [(a, _h(add(a, mul(MINUS_ONE, b)))), (b, _h(add(b, mul(MINUS_ONE, a))))],
}
assert set(_CALL_RULES) == set(ir.FUNCTIONS)


def leaf_partials(expr, active, named=None) -> dict:
    """{leaf: d expr / d leaf} for the active leaves (Var/Arg with `active(leaf)`) of a tree:
    a reverse sweep over the expression, partials multiplied down its edges; `named` holds
    the value of `expr` (a partial such as that of exp or sqrt reads it instead of recomputing)."""
    live = {}

    def has(node):
        if isinstance(node, (ir.Var, ir.Arg)):
            return active(node)
        if isinstance(node, ir.Num):
            return False
        key = id(node)
        if key not in live:
            live[key] = any(has(k) for k in ir.children(node))
        return live[key]

    out: dict = {}

    def sweep(node, adj):
        if isinstance(node, (ir.Var, ir.Arg)):
            out.setdefault(node, []).append(adj)
            return
        for arg, d in _arg_partials(node, named if node is expr else None):
            if has(arg):
                sweep(arg, mul(adj, d))

    if has(expr):
        sweep(expr, ONE)
    return {leaf: add(*terms) for leaf, terms in out.items()}


# ------------------------------------------------------------------ the tangent program
class _Tangents:
    """Statements of the tangent kernel under construction and the tangents of every value."""

    def __init__(self, seeds: dict):
        self.of = dict(seeds)            # leaf -> {direction: node}
        self.body: list = []
        self.temps: list = []

    def bind(self, prefix, value):
        if isinstance(value, _LEAVES) or (isinstance(value, ir.Mul) and len(value.factors) == 2
                                          and value.factors[0] == MINUS_ONE and isinstance(value.factors[1], _LEAVES)):
            return value
        name = f"dyn_{prefix}{len(self.temps)}"
        self.temps.append(name)
        self.body.append(ir.Assign(name, value))
        return ir.Var(name)

    def directional(self, expr, named=None) -> dict:
        """{direction: tangent node} of an expression over values whose tangents are known."""
        parts = leaf_partials(expr, lambda leaf: bool(self.of.get(leaf)), named)
        dirs = sorted({d for leaf in parts for d in self.of[leaf]})
        shared = len(dirs) > 1
        terms: dict = {d: [] for d in dirs}
        for leaf, partial in parts.items():
            if shared and sum(1 for d in self.of[leaf]) > 1:
                partial = self.bind("p", partial)
            for d, t in self.of[leaf].items():
                terms[d].append(mul(partial, t))
        return {d: add(*ts) for d, ts in terms.items() if ts}


def _seeds(kernel: ir.Kernel, wrt: tuple) -> tuple:
    """({input entry: {direction: 1}}, D) of the input arrays `wrt`, concatenated in order."""
    sizes = {i.name: i.size for i in kernel.inputs}
    missing = [w for w in wrt if w not in sizes or sizes[w] is None]
    if missing:
        raise ValueError(f"kernel {kernel.name!r} has no input array {missing[0]!r} to differentiate by")
    seeds, D = {}, 0
    for w in wrt:
        for j in range(sizes[w]):
            seeds[ir.Arg(w, j)] = {D: ONE}
            D += 1
    return seeds, D


def tangent_kernel(kernel: ir.Kernel, wrt: tuple, output: str = "J", name: str | None = None) -> ir.Kernel:
    """The kernel with the Jacobian of its outputs (concatenated in order) w.r.t. the input
    arrays `wrt` (concatenated in order) as one more output `output` (row-major)."""
    seeds, D = _seeds(kernel, wrt)
    offsets, row = {}, 0
    for o in kernel.outputs:
        offsets[o.name] = row
        row += o.size
    tg = _Tangents(seeds)
    jac = {}
    for st in kernel.body:
        tg.body.append(st)
        if isinstance(st, ir.Assign):
            tg.temps.append(st.target)
            tan = tg.directional(st.value, ir.Var(st.target))
            tg.of[ir.Var(st.target)] = {d: tg.bind("t", v) for d, v in tan.items()}
        else:
            tan = tg.directional(st.value)
            base = (offsets[st.array] + st.index) * D
            for d, v in tan.items():
                jac[base + d] = v
    stores = [ir.Store(output, k, jac.get(k, ZERO)) for k in range(row * D)]
    return ir.Kernel(name=name or f"{kernel.name}_tangent", inputs=kernel.inputs,
                     outputs=kernel.outputs + (ir.Output(output, row * D),), temps=tuple(tg.temps),
                     body=tuple(tg.body) + tuple(stores), hints=kernel.hints)


def tangent_added(kernel: ir.Kernel, wrt: tuple, of: str, into: str, name: str | None = None) -> ir.Kernel:
    """The kernel with the Jacobian of its output `of` (by the input arrays `wrt`, row-major)
    added into its output `into` of the same size, and `of` dropped: a Jacobian computed
    otherwise plus the tangent of a part (generator/kinds/derivatives_recursive.py). Only the
    statements that `of` depends on get tangents."""
    seeds, D = _seeds(kernel, wrt)
    needed: set = set()

    def reads(node):
        if isinstance(node, ir.Var):
            needed.add(node.name)
        for c in ir.children(node):
            reads(c)
    for st in reversed(kernel.body):
        if (isinstance(st, ir.Store) and st.array == of) or (isinstance(st, ir.Assign) and st.target in needed):
            reads(st.value)
    tg = _Tangents(seeds)
    extra, held = {}, {}
    for st in kernel.body:
        if isinstance(st, ir.Store) and st.array == of:
            for d, v in tg.directional(st.value).items():
                extra[st.index * D + d] = v
            continue
        if isinstance(st, ir.Store) and st.array == into:
            held[st.index] = st.value
            continue
        tg.body.append(st)
        if isinstance(st, ir.Assign):
            tg.temps.append(st.target)
            if st.target in needed:
                tan = tg.directional(st.value, ir.Var(st.target))
                tg.of[ir.Var(st.target)] = {d: tg.bind("t", v) for d, v in tan.items()}
    size = next(o.size for o in kernel.outputs if o.name == into)
    stores = [ir.Store(into, k, add(held.get(k, ZERO), extra.get(k, ZERO))) for k in range(size)]
    return ir.Kernel(name=name or kernel.name, inputs=kernel.inputs,
                     outputs=tuple(o for o in kernel.outputs if o.name != of), temps=tuple(tg.temps),
                     body=tuple(tg.body) + tuple(stores), hints=kernel.hints)


# ------------------------------------------------------------------ the tape: partials generated, tangents in a loop
def _liveness(body) -> dict:
    """Temporary -> index of the last statement that reads it."""
    last = {}

    def walk(node, k):
        if isinstance(node, ir.Var):
            last[node.name] = k
        for c in ir.children(node):
            walk(c, k)
    for k, st in enumerate(body):
        walk(st.value, k)
    return last


def tape_kernel(kernel: ir.Kernel, wrt: tuple, output: str = "P", name: str | None = None, prefix: str = "dyn_tp"):
    """The kernel's outputs and the local partials of its statements (output `output`), and the
    integer tables with which a loop (templates/native/dynamica_linalg.h `dyn_tape_jacobian`) forms the
    Jacobian of the outputs by the inputs `wrt`: for large programs, whose unrolled tangent
    would be too long to compile.

    Directions interleave the inputs (q_0, qd_0, q_1, qd_1, ...), so a value's dependency set is
    kept as one range [lo, hi) (along a chain: the coordinates up to its body). Each value with
    a tangent has a row of D doubles; rows are reused once their value is dead. Tables:
      <prefix>_meta  [statements, rows, edges, D, outputs]
      <prefix>_stmt  per statement: row, lo, hi, first edge (and a final entry: the edge count)
      <prefix>_edge  per edge: source row, lo, hi (a value), or -(direction + 1), 0, 0 (an input)
      <prefix>_out   per output entry: row, lo, hi (row -1: no dependence)
    """
    sizes = {i.name: i.size for i in kernel.inputs}
    missing = [w for w in wrt if w not in sizes or sizes[w] is None]
    if missing:
        raise ValueError(f"kernel {kernel.name!r} has no input array {missing[0]!r} to differentiate by")
    tape = _Tape(kernel, wrt, sizes, output)
    for k, st in enumerate(kernel.body):
        tape.record(k, st)
    partials = tape.partials
    tk = ir.Kernel(name=name or f"{kernel.name}_partials", inputs=kernel.inputs,
                   outputs=kernel.outputs + (ir.Output(output, max(len(partials), 1)),), temps=kernel.temps,
                   body=tuple(tape.body) if partials else tuple(tape.body) + (ir.Store(output, 0, ZERO),),
                   hints=kernel.hints)
    return tk, tape.tables(prefix)


class _Tape:
    """The pass of `tape_kernel` over a kernel's statements: each statement with a tangent gets a
    row (reused once its value is dead), its partials stored in the output, an edge per operand."""

    def __init__(self, kernel, wrt, sizes, output):
        self.hull = {}
        for a, w in enumerate(wrt):
            for j in range(sizes[w]):
                self.hull[ir.Arg(w, j)] = (j * len(wrt) + a, j * len(wrt) + a + 1)
        self.D = sum(sizes[w] for w in wrt)
        self.last = _liveness(kernel.body)
        self.output = output
        self.row_of: dict = {}
        self.free: list = []
        self.rows = 0
        self.stmts: list = []
        self.edges: list = []
        self.body: list = []
        self.partials: list = []
        self.outs: dict = {}
        self.offsets, self.total_out = {}, 0
        for o in kernel.outputs:
            self.offsets[o.name] = self.total_out
            self.total_out += o.size

    def record(self, k, st):
        hull, row_of, free = self.hull, self.row_of, self.free
        self.body.append(st)
        named = ir.Var(st.target) if isinstance(st, ir.Assign) else None
        parts = leaf_partials(st.value, lambda leaf: leaf in hull, named)
        if not parts:
            if isinstance(st, ir.Store):
                self.outs[self.offsets[st.array] + st.index] = (-1, 0, 0)
            return
        lo = min(hull[leaf][0] for leaf in parts)
        hi = max(hull[leaf][1] for leaf in parts)
        row = free.pop() if free else self.rows
        self.rows = max(self.rows, row + 1)
        self.stmts.append((row, lo, hi, len(self.edges)))
        for leaf, partial in parts.items():
            if isinstance(leaf, ir.Arg):
                self.edges.append((-(hull[leaf][0] + 1), 0, 0))
            else:
                self.edges.append((row_of[leaf.name],) + hull[leaf])
            self.body.append(ir.Store(self.output, len(self.partials), partial))
            self.partials.append(partial)
        for leaf in parts:                       # operands read for the last time free their rows
            if isinstance(leaf, ir.Var) and self.last.get(leaf.name, -1) <= k and leaf.name in row_of:
                free.append(row_of.pop(leaf.name))
        if isinstance(st, ir.Assign):
            hull[named] = (lo, hi)  # type: ignore[index]  # an Assign names its target
            row_of[st.target] = row
            if self.last.get(st.target, -1) <= k:      # never read: its row is free again
                free.append(row_of.pop(st.target))
        else:
            self.outs[self.offsets[st.array] + st.index] = (row, lo, hi)

    def tables(self, prefix):
        return (
            (f"{prefix}_meta", (len(self.stmts), max(self.rows, 1), len(self.edges), self.D, self.total_out)),
            (f"{prefix}_stmt", tuple(x for s in self.stmts for x in s) + (len(self.edges),)),
            (f"{prefix}_edge", tuple(x for e in self.edges for x in e) or (0,)),
            (f"{prefix}_out", tuple(x for i in range(self.total_out) for x in self.outs.get(i, (-1, 0, 0)))),
        )
