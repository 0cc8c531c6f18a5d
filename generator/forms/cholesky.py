"""Tree-sparse Cholesky M = L^T L without fill-in (dissertation (2.7)-(2.10), (2.23)).

The factorisation runs from the last coordinate to the first, so that with regular
numbering the factor L has nonzeros only where M has (theorem 2.5). It is applied to a
matrix of expressions in which structural zeros are literal zeros; sums run only over the
nonzero entries of each column, which is the index set D_i of (2.23).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.program import mul, neg, total


class StructurallySingular(ArithmeticError):
    """A pivot of the factorisation is identically zero: M is singular at every state."""

    def __init__(self, index: int):
        self.index = index
        super().__init__(f"zero pivot at coordinate {index}")


def solve_reverse_cholesky(prog, M, Q, tag="L"):
    """Unrolled solution of M x = Q with M = L^T L (L lower triangular), (2.23).

    M: dict-like M[i][j] for j <= i (lower triangle, zeros omitted or sp.Integer(0)); Q: list.
    Returns x as a list of expressions.
    """
    n = len(Q)
    L = [dict() for _ in range(n)]          # L[i][j], j <= i, nonzeros only
    below = [[] for _ in range(n)]          # below[j]: rows k > j with L[k][j] != 0
    inv_diag = [None] * n
    for i in range(n - 1, -1, -1):
        s = total([M[i].get(i, sp.S.Zero)] + [neg(mul(L[k][i], L[k][i])) for k in below[i]])
        if s == 0:
            raise StructurallySingular(i)
        lii = prog.let(f"{tag}{i}_{i}", sp.sqrt(s))
        inv = inv_diag[i] = prog.let(f"{tag}inv{i}", 1 / lii)
        L[i][i] = lii
        for j in range(i - 1, -1, -1):
            a = M[i].get(j, sp.Integer(0))
            s = total([a] + [neg(mul(L[k][i], L[k][j])) for k in below[i] if j in L[k]])
            if s == 0:
                continue
            L[i][j] = prog.let(f"{tag}{i}_{j}", mul(s, inv))
            below[j].append(i)
    # L^T y = Q, from the last row up (2.8)
    y = [None] * n
    for i in range(n - 1, -1, -1):
        s = total([Q[i]] + [neg(mul(L[k][i], y[k])) for k in below[i]])
        y[i] = prog.let(f"{tag}chy{i}", mul(s, inv_diag[i]))
    # L x = y, from the first row down (2.9)
    x = [None] * n
    for i in range(n):
        s = total([y[i]] + [neg(mul(L[i][j], x[j])) for j in L[i] if j < i])
        x[i] = prog.let(f"{tag}chx{i}", mul(s, inv_diag[i]))
    return x
