"""A straight-line program under construction: ordered single assignments of sympy expressions.

Unrolling a recursion over bodies calls `let` for every per-body quantity, so each gets a
named intermediate and expressions never grow beyond one recursion step (the program grows
as the dissertation's flop counts, not exponentially). Numbers and bare symbols are never
bound: they propagate, so structural zeros and ones fold as the recursion proceeds.
"""

from __future__ import annotations

import sympy as sp


class Program:
    def __init__(self):
        self.assignments: list[tuple[sp.Symbol, sp.Expr]] = []
        self._names: set[str] = set()

    def let(self, name: str, value) -> sp.Expr:
        value = sp.sympify(value) if not isinstance(value, sp.Basic) else value
        if value.is_Atom or (value.is_Mul and len(value.args) == 2 and value.args[0] == -1
                             and value.args[1].is_Symbol):
            return value
        if name in self._names:
            raise ValueError(f"intermediate `{name}` bound twice")
        self._names.add(name)
        sym = sp.Symbol(name, real=True)
        self.assignments.append((sym, value))
        return sym

    def let_vector(self, name: str, values) -> list:
        return [self.let(f"{name}_{k}", v) for k, v in enumerate(values)]

    def let_matrix(self, name: str, m: sp.Matrix) -> sp.Matrix:
        return sp.Matrix(m.rows, m.cols, lambda r, c: self.let(f"{name}_{r}{c}", m[r, c]))


# ------------------------------------------------------------------ 3-vector helpers
def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def sub(a, b):
    return [x - y for x, y in zip(a, b)]


def scale(s, a):
    return [s * x for x in a]


def dot(a, b):
    return sp.Add(*[x * y for x, y in zip(a, b)])


def matvec(M, v):
    return [sp.Add(*[M[r, c] * v[c] for c in range(M.cols)]) for r in range(M.rows)]


def matTvec(M, v):
    return [sp.Add(*[M[c, r] * v[c] for c in range(M.rows)]) for r in range(M.cols)]


def skew(a) -> sp.Matrix:
    return sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
