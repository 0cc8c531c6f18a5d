"""A straight-line program under construction: ordered single assignments of sympy expressions.

Unrolling a recursion over bodies calls `let` for every per-body quantity, so each gets a
named intermediate and expressions never grow beyond one recursion step (the program grows
as the dissertation's flop counts, not exponentially). Numbers and bare symbols are never
bound: they propagate, so structural zeros and ones fold as the recursion proceeds.
"""

from __future__ import annotations

import re

import sympy as sp

#: a generated name: an identifier (so never one of the model's "role:name" symbols, see
#: expr.py), not `t`, not a CSE temporary `z<k>` (lower.value_numbering), not the generated
#: code's own names (`in_*`, `out_*`, `dyn_*`) and not a word the backends reserve
GENERATED_NAME = re.compile(r"^(?!(?:in_|out_|dyn_))(?!z\d+$)(?!t$)[A-Za-z][A-Za-z0-9_]*$")
RESERVED_WORDS = frozenset("""auto break case char const continue default do double else enum extern float for
goto if inline int long register restrict return short signed sizeof static struct switch typedef union
unsigned void volatile while pow sqrt sin cos tan asin acos atan atan2 sinh cosh tanh exp log fabs fmin fmax
memset memcpy malloc free NAN INFINITY abs real end call""".split())


def check_generated_name(name: str) -> str:
    """`name` if it may name a generated intermediate; ValueError (a generator bug) if not."""
    if not GENERATED_NAME.match(name) or name in RESERVED_WORDS:
        raise ValueError(f"internal error: `{name}` cannot name a generated intermediate")
    return name


class Program:
    def __init__(self):
        self.assignments: list[tuple[sp.Symbol, sp.Expr]] = []
        self._names: set[str] = set()

    def fork(self) -> "Program":
        """A program that starts with this one's intermediates and grows on its own."""
        out = Program()
        out.assignments, out._names = list(self.assignments), set(self._names)
        return out

    def let(self, name: str, value) -> sp.Expr:
        value = sp.sympify(value) if not isinstance(value, sp.Basic) else value
        if value.is_Atom or (value.is_Mul and len(value.args) == 2 and value.args[0] == -1
                             and value.args[1].is_Symbol):
            return value
        return self.bind(name, value)

    def bind(self, name: str, value) -> sp.Symbol:
        """A new intermediate `name` = value, even when value is an atom (`let` propagates those)."""
        if name in self._names:
            raise ValueError(f"intermediate `{name}` bound twice")
        self._names.add(check_generated_name(name))
        sym = sp.Symbol(name, real=True)
        self.assignments.append((sym, sp.sympify(value)))
        return sym

    def let_vector(self, name: str, values) -> list:
        return [self.let(f"{name}_{k}", v) for k, v in enumerate(values)]

    def let_matrix(self, name: str, m: sp.Matrix) -> sp.Matrix:
        return sp.Matrix(m.rows, m.cols, lambda r, c: self.let(f"{name}_{r}{c}", m[r, c]))

    def let_symmetric(self, name: str, m: sp.Matrix) -> sp.Matrix:
        """Bind the upper triangle of a symmetric matrix; return the symmetric matrix of the bindings."""
        upper = {(r, c): self.let(f"{name}_{r}{c}", m[r, c]) for r in range(m.rows) for c in range(r, m.cols)}
        return sp.Matrix(m.rows, m.cols, lambda r, c: upper[min(r, c), max(r, c)])


# ------------------------------------------------------------------ fast arithmetic
# Unrolled recursions multiply and add bare symbols and numbers almost exclusively; sympy's
# general flattening (with its assumption queries) is most of the generation time there. These
# build the canonical result directly for those cases and fall back to sympy otherwise.
_ZERO, _ONE = sp.S.Zero, sp.S.One


def mul(a, b):
    """a * b with structural zeros and ones folded."""
    if not isinstance(a, sp.Basic):
        a = sp.sympify(a)
    if not isinstance(b, sp.Basic):
        b = sp.sympify(b)
    if a.is_Number:
        if a == 0:
            return _ZERO
        if a == 1:
            return b
        if b.is_Number:
            return a * b
        if b.is_Symbol:
            return sp.Mul._from_args((a, b))
    elif b.is_Number:
        return mul(b, a)
    elif a.is_Symbol and b.is_Symbol and a != b:
        return sp.Mul._from_args((a, b) if a.compare(b) < 0 else (b, a))
    return a * b


def neg(a):
    """-a, built directly for numbers, symbols and products with a numeric coefficient."""
    if not isinstance(a, sp.Basic):
        a = sp.sympify(a)
    if a.is_Number:
        return -a
    if a.is_Symbol:
        return sp.Mul._from_args((sp.S.NegativeOne, a))
    if a.is_Mul and a.args[0].is_Number:
        c = -a.args[0]
        rest = a.args[1:]
        if c == 1:
            return rest[0] if len(rest) == 1 else sp.Mul._from_args(rest)
        return sp.Mul._from_args((c,) + rest)
    return -a


def total(terms):
    """Sum of expressions, zeros dropped (argument order as given, not sympy's)."""
    terms = [t if isinstance(t, sp.Basic) else sp.sympify(t) for t in terms]
    terms = [t for t in terms if not (t.is_Number and t == 0)]
    if not terms:
        return _ZERO
    if len(terms) == 1:
        return terms[0]
    nums = [t for t in terms if t.is_Number]
    if len(nums) > 1 or any(t.is_Add for t in terms):
        return sp.Add(*terms)
    return sp.Add._from_args(terms)


def fold_total(terms):
    """The sum `total([total([t0, t1]), t2]) ...` of a left fold, built in one call. Summing the
    children of a body into it one at a time re-flattens the growing sum each time (quadratic in
    the number of children: a star of 200 bodies took minutes); this gives the same expression."""
    terms = [t if isinstance(t, sp.Basic) else sp.sympify(t) for t in terms]
    terms = [t for t in terms if not (t.is_Number and t == 0)]    # as each total() drops them
    if len(terms) <= 2:
        return total(terms)
    return sp.Add(*terms)


def fold_vectors(vectors):
    """Entrywise fold_total of equal-length lists."""
    return [fold_total(list(xs)) for xs in zip(*vectors)]


def fold_add(terms):
    """The sum `t0 + t1 + ...` of sympy's `+` (canonical Add), built in one call."""
    return terms[0] if len(terms) == 1 else sp.Add(*terms)


def fold_matrices(mats):
    """Entrywise fold_add of equal-shape matrices (the sum `m0 + m1 + ...`)."""
    if len(mats) == 1:
        return mats[0]
    return sp.Matrix(mats[0].rows, mats[0].cols, lambda r, c: fold_add([m[r, c] for m in mats]))


# ------------------------------------------------------------------ 3-vector helpers
def cross(a, b):
    return [total([mul(a[1], b[2]), neg(mul(a[2], b[1]))]), total([mul(a[2], b[0]), neg(mul(a[0], b[2]))]),
            total([mul(a[0], b[1]), neg(mul(a[1], b[0]))])]


def add(a, b):
    return [total([x, y]) for x, y in zip(a, b)]


def sub(a, b):
    return [total([x, neg(y)]) for x, y in zip(a, b)]


def scale(s, a):
    return [mul(s, x) for x in a]


def dot(a, b):
    return total([mul(x, y) for x, y in zip(a, b)])


def matvec(M, v):
    return [total([mul(M[r, c], v[c]) for c in range(M.cols)]) for r in range(M.rows)]


def matTvec(M, v):
    return [total([mul(M[c, r], v[c]) for c in range(M.rows)]) for r in range(M.cols)]


def skew(a) -> sp.Matrix:
    return sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
