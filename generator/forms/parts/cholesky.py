"""Tree-sparse root-free factorisation M = L^T D L without fill-in (after (2.7)-(2.10), (2.23)).

The dissertation factors M = L^T L (Cholesky) from the last coordinate to the first, so that
with regular numbering the factor has nonzeros only where M has (theorem 2.5). The same
elimination is done here without square roots: M = L^T D L, L unit lower triangular, D
diagonal (for a positive definite M, L_ij = Lc_ij / Lc_ii and d_i = Lc_ii^2 with Lc the
Cholesky factor). Same sparsity, same products per entry, but no square root per pivot and
one multiplication per coordinate in the solve instead of two; and it needs only nonzero
pivots, so a regular indefinite M (negative masses: a cut-out subtracted from a body) is
factored as well.

Pivot i is the inertia along coordinate i of the subtree it carries with the earlier
coordinates locked (d_i = det M[s, s] / det M[s', s'], s the coordinates of the subtree of i
from i on, s' = s without i); every form here eliminates in this order, so ABM, DEC, HDEC and
CBM meet the same pivots (runtime/api.py checks them at load time).

The sums run only over the nonzero entries of each column, which is the index set D_i of
(2.23); structural zeros are literal zeros of the matrix handed in. Used for M (composite,
direct, hamilton-composite), for H of Lagrange I (lagrange1, hamilton-lagrange1) and for the
joint blocks A_i^T M*_i A_i of the sweeps (articulated, ltdl, hamilton-ltdl).
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from dynamica.errors import ModelError, Problem
from dynamica.generator.ir.program import mul, neg, total


class StructurallySingular(ArithmeticError):
    """A pivot of the factorisation is identically zero: M is singular at every state."""

    def __init__(self, index: int):
        self.index = index
        super().__init__(f"zero pivot at coordinate {index}")


@dataclass
class ReverseLDL:
    """M = L^T D L: L[i] = {j: L_ij} (j < i, nonzeros; L_ii = 1 implied), dinv[i] = 1/d_i."""

    L: list
    below: list          # below[j]: rows k > j with L_kj != 0
    dinv: list

    def solve_LT(self, prog, y, name=None):
        """L^T x = y from the last row up (2.8). Entries of y are numbers or 6-vectors (lists);
        bound as `name<i>` when named."""
        x = [None] * len(y)
        for i in range(len(y) - 1, -1, -1):
            x[i] = _bind(prog, name, i, _minus(y[i], [(self.L[k][i], x[k]) for k in self.below[i]]))
        return x

    def solve_L(self, prog, y, name=None, scale=False):
        """L x = y (scale: L x = D^-1 y) from the first row down (2.9); y as in solve_LT."""
        x = [None] * len(y)
        for i in range(len(y)):
            head = _times(self.dinv[i], y[i]) if scale else y[i]
            x[i] = _bind(prog, name, i, _minus(head, [(lij, x[j]) for j, lij in self.L[i].items()]))
        return x

    def scaled(self, prog, x, name):
        """D^-1 x, bound as `name<i>`."""
        return [_bind(prog, name, i, _times(di, xi)) for i, (di, xi) in enumerate(zip(self.dinv, x))]

    def solve(self, prog, Q, tag):
        """x = M^-1 Q: L^T y = Q, then L x = D^-1 y."""
        return self.solve_L(prog, self.solve_LT(prog, Q, f"{tag}y"), f"{tag}x", scale=True)


def _minus(head, pairs):
    """head - sum c x over (c, x) pairs; head and x both numbers or both 6-vectors."""
    if isinstance(head, list):
        return [total([h] + [neg(mul(c, x[r])) for c, x in pairs]) for r, h in enumerate(head)]
    return total([head] + [neg(mul(c, x)) for c, x in pairs])


def _times(c, x):
    return [mul(c, e) for e in x] if isinstance(x, list) else mul(c, x)


def _bind(prog, name, i, e):
    if not name:
        return e
    return prog.let_vector(f"{name}{i}", e) if isinstance(e, list) else prog.let(f"{name}{i}", e)


def lower_rows(D):
    """Lower-triangle rows {j: D[i][j]} (j <= i, nonzeros) of a dense symmetric block."""
    return [{j: D[i][j] for j in range(i + 1) if D[i][j] != 0} for i in range(len(D))]


def reverse_ldl(prog, M, tag="L") -> ReverseLDL:
    """Unrolled M = L^T D L, from the last row up: with W_ij = d_i L_ij (bound),

        d_i  = M_ii - sum_{k > i} L_ki W_ki,   W_ij = M_ij - sum_{k > i} L_ki W_kj,   L_ij = W_ij / d_i.

    M: M[i][j] for j <= i (a list of dicts, zeros omitted or literal). A pivot that folds to
    zero raises StructurallySingular(i).
    """
    n = len(M)
    L = [dict() for _ in range(n)]
    W = [dict() for _ in range(n)]
    below = [[] for _ in range(n)]
    dinv = [None] * n
    for i in range(n - 1, -1, -1):
        d = total([M[i].get(i, sp.S.Zero)] + [neg(mul(L[k][i], W[k][i])) for k in below[i]])
        if d == 0:
            raise StructurallySingular(i)
        dinv[i] = prog.let(f"{tag}di{i}", 1 / prog.let(f"{tag}d{i}", d))
        for j in range(i - 1, -1, -1):
            s = total([M[i].get(j, sp.S.Zero)] + [neg(mul(L[k][i], W[k][j])) for k in below[i] if j in L[k]])
            if s == 0:
                continue
            W[i][j] = prog.let(f"{tag}W{i}_{j}", s)
            L[i][j] = prog.let(f"{tag}{i}_{j}", mul(W[i][j], dinv[i]))
            below[j].append(i)
    return ReverseLDL(L, below, dinv)


def solve_reverse_ldl(prog, M, Q, tag="L"):
    """Unrolled solution of M x = Q by M = L^T D L (2.23), root-free. Returns x (bound)."""
    return reverse_ldl(prog, M, tag).solve(prog, Q, tag)


def singular_error(kin, index):
    """A pivot of the tree-ordered L^T D L that folds to zero: coordinate `index`, with the
    coordinates before it locked, moves no mass (singular M, unless negative inertias cancel)."""
    from dynamica.generator.spec.model import negative_bodies
    c = kin.coordinates[index]
    bodies = negative_bodies(kin.spec)
    if not bodies:
        text = (f"the mass matrix is singular at every state: coordinate `{c}` moves no mass "
                "(a massless body at the end of a chain, or an axis through a point mass?)")
    else:
        text = (f"with the coordinates before it locked, coordinate `{c}` moves no mass at any state: the "
                f"negative mass or inertia of {', '.join(f'`{b}`' for b in bodies)} cancels the others along it, "
                "and the L^T D L factorization (from the last coordinate to the first) meets a zero pivot "
                "there, even if the mass matrix is regular; the form `lagrange1` factors another matrix")
    return ModelError(kin.spec.file, [Problem("bodies", text)])
