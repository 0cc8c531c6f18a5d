"""Spatial algebra and the recursions over the tree that the forms share.

Spatial 6-vectors are [lin; ang] in a body's own frame (GUIDE: "Conventions"),
C_i = [[G, -G rho~], [0, G]]; symmetric 6x6 matrices (articulated inertias M*_i of (3.7), (3.30))
are sympy Matrices whose upper triangle is bound in the program.

  apply_C(G, rho_p, x)          C_i x: a parent's spatial vector in frame i
  apply_CT(G, rho, f)           C_i^T f: a wrench at O_i moved to the parent
  inertia_times((m, h, Th), a)  M_i a
  rigid6(m, h, Theta)           M_i = [[m E, -h~], [h~, Theta]] (after (1.36))
  symv(X, a)                    X a with structural zeros folded
  transfer(prog, tag, G, rho, X)       C^T X C of a symmetric 6x6 (in (3.7), (3.30), (3.16))
  transfer_inertia(prog, tag, G, rho, (m, h, Th))   C^T M C of a rigid/composite inertia (2.20)
  unit_columns(A)               joint-basis columns s e_k: where the carried inertia has zero rows
Recursions (composite bodies, dissertation 2.2.1):
  composite_inertias (2.20), composite_forces (2.22), mass_matrix_rows (2.19), mass_matrix
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.ir.program import (
    add,
    cross,
    dot,
    fold_add,
    fold_matrices,
    fold_vectors,
    matTvec,
    matvec,
    mul,
    neg,
    scale,
    sub,
    total,
)


def apply_C(G, rho_p, x):
    """C_i x for a spatial vector x of the parent, with rho_p = G rho (frame i)."""
    ang = matvec(G, x[3:])
    return add(matvec(G, x[:3]), cross(ang, rho_p)) + ang


def apply_CT(G, rho, f):
    """C_i^T f: a force/torque pair at O_i (frame i) moved to O_k (parent frame)."""
    fp = matTvec(G, f[:3])
    return fp + add(cross(rho, fp), matTvec(G, f[3:]))


def inertia_times(inert, a):
    """M_i a for M_i = [[m E, -h~], [h~, Theta]] (h = m r_c), a = [lin; ang]."""
    m, h, th = inert
    return sub(scale(m, a[:3]), cross(h, a[3:])) + add(cross(h, a[:3]), matvec(th, a[3:]))


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


def transfer_inertia(prog, tag, G, rho, inert):
    """C^T M C for M = (m, h, Theta) of a child, expressed at the parent's origin and axes.

    With h' = G^T h:  m unchanged, h -> m rho + h',
    Theta -> G^T Theta G - m rho~ rho~ - (rho~ h'~ + h'~ rho~)
           = G^T Theta G + m (|rho|^2 E - rho rho^T) + 2 (rho . h') E - (h' rho^T + rho h'^T),
    using a~ b~ = b a^T - (a . b) E; only the upper triangle is formed.
    """
    m, h, th = inert
    hr = matTvec(G, h)                                       # G^T h
    h_new = add(scale(m, rho), hr)
    P = sp.Matrix(3, 3, lambda r, c: total([mul(th[r, k], G[k, c]) for k in range(3)]))
    rr, rh = dot(rho, rho), dot(rho, hr)
    th_new = sp.zeros(3, 3)
    for r in range(3):
        for c in range(r, 3):
            terms = [mul(G[k, r], P[k, c]) for k in range(3)]
            terms += [neg(mul(m, mul(rho[r], rho[c]))), neg(mul(hr[r], rho[c])), neg(mul(rho[r], hr[c]))]
            if r == c:
                terms += [mul(m, rr), mul(2, rh)]
            e = total(terms)
            th_new[r, c] = th_new[c, r] = e
    return m, h_new, th_new


# ------------------------------------------------------------------ composite-body recursions
def coordinate_layout(kin):
    """owner[k], local[k]: body and column of coordinate k (state order); first[i]: first coordinate of i."""
    owner, local = [], []
    for i in range(1, kin.topo.n_bodies + 1):
        for c in range(len(kin.joints[i].A)):
            owner.append(i)
            local.append(c)
    first = {}
    for idx, i in enumerate(owner):
        first.setdefault(i, idx)
    return owner, local, first


def composite_inertias(kin, tag="Ms"):
    """M*_i of every subtree D_i about O_i, (2.20), as (m, h, Theta) bound in the program."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    Mstar = [None] * (N + 1)
    # children's terms collected per body and summed once (fold_*: linear in the children)
    acc = [None] + [([kin.inertia[i].mass], [list(kin.inertia[i].h)], [kin.inertia[i].theta])
                    for i in range(1, N + 1)]
    for i in range(N, 0, -1):
        m, h, th = fold_add(acc[i][0]), fold_vectors(acc[i][1]), fold_matrices(acc[i][2])
        Mstar[i] = (prog.let(f"{tag}{i}_m", m), prog.let_vector(f"{tag}{i}_h", h),
                    prog.let_symmetric(f"{tag}{i}_T", th))
        k = topo.kappa[i]
        if k > 0:
            jk = kin.joints[i]
            for part, term in zip(acc[k], transfer_inertia(prog, f"X{i}", jk.G, jk.rho, Mstar[i])):
                part.append(term)
    return Mstar


def composite_forces(kin, F_hat, tag="Fs"):
    """F_hat*_i of every subtree, (2.22): the bias forces carried towards the root by C^T."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    acc = [None] + [[list(F_hat[i])] for i in range(1, N + 1)]
    Fstar = [None] * (N + 1)
    for i in range(N, 0, -1):
        Fstar[i] = prog.let_vector(f"{tag}{i}", [fold_add(list(xs)) for xs in zip(*acc[i])])
        k = topo.kappa[i]
        if k > 0:
            jk = kin.joints[i]
            acc[k].append(apply_CT(jk.G, jk.rho, Fstar[i]))
    return Fstar


def mass_matrix_rows(kin, Mstar, tag="M"):
    """Lower triangle of the mass matrix by blocks (2.19): Mrows[r][c], c <= r, nonzeros only.

    M*_i A_i is carried towards the root by C^T and projected on each A_j, j in P_i.
    """
    from dynamica.generator.mechanics.forces import armature_blocks
    prog, topo = kin.program, kin.topo
    owner, local, first = coordinate_layout(kin)
    n = len(owner)
    Mrows = [dict() for _ in range(n)]
    arm = armature_blocks(kin)                      # M's joint block += armature (MuJoCo's dof_armature)
    for i in range(1, topo.n_bodies + 1):
        jk = kin.joints[i]
        if not jk.A:
            continue
        cols = [prog.let_vector(f"F{tag}{i}_{c}", inertia_times(Mstar[i], a)) for c, a in enumerate(jk.A)]
        for c in range(len(jk.A)):
            for c2 in range(c + 1):
                extra = arm[i][c][c2] if i in arm else 0
                Mrows[first[i] + c][first[i] + c2] = prog.let(f"{tag}{first[i] + c}_{first[i] + c2}",
                                                              dot(jk.A[c2], cols[c]) + extra)
        j = i
        while topo.kappa[j] > 0:
            cols = [prog.let_vector(f"F{tag}{i}_{c}_{topo.kappa[j]}",
                                    apply_CT(kin.joints[j].G, kin.joints[j].rho, f))
                    for c, f in enumerate(cols)]
            j = topo.kappa[j]
            Aj = kin.joints[j].A
            for c, f in enumerate(cols):
                for c2, a in enumerate(Aj):
                    Mrows[first[i] + c][first[j] + c2] = prog.let(f"{tag}{first[i] + c}_{first[j] + c2}", dot(a, f))
    return Mrows


def full_matrix(Mrows):
    """Row-major n*n list of a symmetric matrix given by its lower-triangle rows."""
    n = len(Mrows)
    return [Mrows[max(r, c)].get(min(r, c), sp.Integer(0)) for r in range(n) for c in range(n)]


def mass_matrix(kin):
    """The mass matrix as a row-major list, for forms that do not form it (their `mass` kernel)."""
    return full_matrix(mass_matrix_rows(kin, composite_inertias(kin, tag="Mc"), tag="Mm"))
