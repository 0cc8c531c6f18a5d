"""Symmetric 6x6 algebra for the sweep forms of the extended system (1.38) (ABM, DEC).

Articulated inertias (M*_i of (3.7), (3.30)) are general symmetric 6x6 matrices, kept as
sympy Matrices whose upper triangle is bound in the program. Spatial vectors are [lin; ang]
in a body's own frame (GUIDE.md "Conventions"), C = [[G, -G rho~], [0, G]].

  rigid6(m, h, Theta)      M_i = [[m E, -h~], [h~, Theta]] (after (1.36))
  transfer(G, rho, X)      C^T X C: X moved from O_i, axes i to O_k, axes k (in (3.7), (3.30))
  symv(X, a)               X a with structural zeros folded
  unit_columns(A)          joint-basis columns s e_k: where the carried inertia has zero rows

The joint blocks D_i = A_i^T M*_i A_i are factored by cholesky.reverse_ldl (root-free
L^T D L in the elimination order of the mass matrix, so the sweeps meet the same pivots).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.program import mul, neg, total


def rigid6(m, h, theta) -> sp.Matrix:
    """The 6x6 M_i of a rigid body from (m, h = m r_c, Theta about O_i)."""
    X = sp.zeros(6, 6)
    for r in range(3):
        X[r, r] = m
        for c in range(3):
            X[3 + r, 3 + c] = theta[r, c]
    hx = [[0, -h[2], h[1]], [h[2], 0, -h[0]], [-h[1], h[0], 0]]
    for r in range(3):
        for c in range(3):
            X[3 + r, c] = hx[r][c]          # h~
            X[c, 3 + r] = hx[r][c]          # (h~)^T = -h~ in the upper-right block
    return X


def symv(X, a):
    """X a (X symmetric 6x6 sp.Matrix, a a 6-list)."""
    return [total([mul(X[r, c], a[c]) for c in range(6)]) for r in range(6)]


def _rot_sym(G, S):
    """Upper triangle of G^T S G (S symmetric 3x3), returned symmetric."""
    P = [[total([mul(S[r, k], G[k, c]) for k in range(3)]) for c in range(3)] for r in range(3)]
    out = sp.zeros(3, 3)
    for r in range(3):
        for c in range(r, 3):
            out[r, c] = out[c, r] = total([mul(G[k, r], P[k][c]) for k in range(3)])
    return out


def _rot_gen(G, B):
    """G^T B G for a general 3x3 B."""
    P = [[total([mul(B[r, k], G[k, c]) for k in range(3)]) for c in range(3)] for r in range(3)]
    return sp.Matrix(3, 3, lambda r, c: total([mul(G[k, r], P[k][c]) for k in range(3)]))


def _skew_right(S, r):
    """S r~ for a 3x3 S and a 3-vector r (r~ x = r x x)."""
    return [[total([mul(S[i, 1], r[2]), neg(mul(S[i, 2], r[1]))]),
             total([mul(S[i, 2], r[0]), neg(mul(S[i, 0], r[2]))]),
             total([mul(S[i, 0], r[1]), neg(mul(S[i, 1], r[0]))])] for i in range(3)]


def _skew_left(r, S):
    """r~ S for a 3-vector r and a 3x3 S (rows of S as nested lists or a Matrix)."""
    s = (lambda i, j: S[i][j]) if isinstance(S, list) else (lambda i, j: S[i, j])
    return [[total([mul(r[1], s(2, j)), neg(mul(r[2], s(1, j)))]) for j in range(3)],
            [total([mul(r[2], s(0, j)), neg(mul(r[0], s(2, j)))]) for j in range(3)],
            [total([mul(r[0], s(1, j)), neg(mul(r[1], s(0, j)))]) for j in range(3)]]


def transfer(prog, tag, G, rho, X) -> sp.Matrix:
    """C^T X C for a symmetric 6x6 X = [[A, B], [B^T, D]] of body i, at O_k in the axes of k.

    C = diag(G, G) T with T = [[E, -rho~], [0, E]] (rho in the parent's frame), so first the
    axes turn: A' = G^T A G, B' = G^T B G, D' = G^T D G (bound), then the point moves:
      T^T X' T = [[A', B' - A' rho~], [sym, D' + K + K^T - rho~ A' rho~]],  K = rho~ B'.
    Only upper triangles are formed; the result is not bound (the caller sums and binds it).
    """
    A = prog.let_symmetric(f"{tag}_A", _rot_sym(G, X[:3, :3]))
    B = prog.let_matrix(f"{tag}_B", _rot_gen(G, X[:3, 3:]))
    D = prog.let_symmetric(f"{tag}_D", _rot_sym(G, X[3:, 3:]))
    N = _skew_right(A, rho)                    # A' rho~
    K = _skew_left(rho, B)                     # rho~ B'
    RN = _skew_left(rho, N)                    # rho~ A' rho~ (symmetric)
    out = sp.zeros(6, 6)
    for r in range(3):
        for c in range(3):
            if c >= r:
                out[r, c] = out[c, r] = A[r, c]
                e = total([D[r, c], K[r][c], K[c][r], neg(RN[r][c])])
                out[3 + r, 3 + c] = out[3 + c, 3 + r] = e
            e = total([B[r, c], neg(N[r][c])])
            out[r, 3 + c] = out[3 + c, r] = e
    return out


def unit_columns(A) -> dict:
    """{k: (c, s)} for the joint-basis columns A_c = s e_k (s a nonzero number).

    The matrix carried to the parent annihilates A (H M* A = 0 in (3.7), (M* - U^T U) A = 0
    in (3.30)) and A^T of the carried force is -Q (Q the joint's generalized forces), so for
    such a column row and column k are literal zeros and component k is -Q_c / s.
    """
    out = {}
    for c, col in enumerate(A):
        nz = [k for k, x in enumerate(col) if x != 0]
        if len(nz) == 1 and col[nz[0]].is_Number:
            out[nz[0]] = (c, col[nz[0]])
    return out
