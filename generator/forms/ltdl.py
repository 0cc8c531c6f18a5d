"""L^T D L decomposition of the extended system (1.38), DEC: (3.30)-(3.31), dissertation 3.2.

The block matrix of (3.18) is factored as L^T I L (3.21); eliminating the block unknowns
(q''_i, R_i, w_i) from the leaves to the root gives the recursion (3.30) and the triangular
solves give (3.31). The dissertation takes Cholesky factors L_i of the joint blocks
A_i^T M*_i A_i, which need them positive definite; here they are factored root-free,
A_i^T M*_i A_i = L_i^T diag(d_i) L_i (L_i unit lower, cholesky.reverse_ldl), which needs
only nonzero pivots (an indefinite mass matrix: negative masses) and no square roots. The
diagonal joins the unit blocks of I in (3.21); in (3.30)-(3.31) it appears as diag(d_i)^-1:

Symbol table (body i, frame i, vectors [lin; ang] at O_i; program names prefixed `dc_`):
  M*_i = M_i + sum_j C_j^T H_j C_j,   F*_i = F_hat_i + sum_j C_j^T h_j                (3.30)
  A_i^T M*_i A_i = L_i^T diag(d_i) L_i, L_i unit lower, from the last row (as (2.23))
  U_i = L_i^-T A_i^T M*_i  (n_i x 6),   u_i = L_i^-T (A_i^T F*_i + Q_i)                (3.30)
  Uh_i = diag(d_i)^-1 U_i
  H_i = M*_i - Uh_i^T U_i,   h_i = F*_i - Uh_i^T u_i                                   (3.30)
  (H_i A_i = 0 and A_i^T h_i = -Q_i: literal zeros where A_i has a unit column)
  q''_i = L_i^-1 diag(d_i)^-1 (u_i - U_i a_i),   w_i = A_i q''_i + a_i,   R_i = M*_i w_i - F*_i   (3.31)
With the root-free factor these are the operations of ABM's (3.7)-(3.8) (articulated.py),
grouped as (3.30)-(3.31) group them.
Q_i are the generalized forces of joint i (springs, generalized_force entries): the joint
equation of (1.38) becomes A_i^T R_i = Q_i. As in the ABM form (articulated.py), w^cr_i is
folded into F_hat_i (2.14) by the accelerated ground: w_i here is dw_i = w_i - w_hat_i,
a_i = C_i dw_k, and the term -H_j w^cr_j of h_j vanishes; R_i is unchanged.

Reactions: program intermediates `dc_R{i}_{0..5}` ([force; torque], the wrench body i
receives from its parent through joint i, frame i, at O_i); the module exports
INFO["reactions"] = ((body name, (6 names)), ...) in regular numbering (an entry that folds
to a literal or to another intermediate, e.g. `0` or `-dc_F1_0`, is given as that expression).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms import EquationsOfMotion, composite, register
from dynamica.generator.forms.articulated import reaction_info
from dynamica.generator.forms.cholesky import StructurallySingular, lower_rows, reverse_ldl
from dynamica.generator.forms.common import active_forces, apply_C, apply_CT, bias_forces, forward_pass
from dynamica.generator.forms.spatial import rigid6, symv, transfer, unit_columns
from dynamica.generator.program import dot, fold_matrices, fold_vectors, mul, neg, total


@register("ltdl", "DEC")
def ltdl(kin) -> EquationsOfMotion:
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    fp = forward_pass(kin)
    F_active, gen = active_forces(kin, fp)
    F_hat = bias_forces(kin, fp, F_active)
    _, _, first = composite.coordinate_layout(kin)
    Z6 = [sp.S.Zero] * 6

    # reduction to triangular form (3.30), i = N..1
    # children's terms collected per body and summed once (fold_*: linear in the children)
    accM = [None] + [[rigid6(b.mass, b.h, b.theta)] for b in kin.inertia[1:]]
    accF = [None] + [[list(F_hat[i])] for i in range(1, N + 1)]
    Ms, Fs = [None] * (N + 1), [None] * (N + 1)
    Us, us, Lf = [None] * (N + 1), [None] * (N + 1), [None] * (N + 1)
    for i in range(N, 0, -1):
        t = f"dc_{i}"
        jk, k = kin.joints[i], topo.kappa[i]
        Ms[i] = prog.let_symmetric(f"dc_M{i}", fold_matrices(accM[i]))
        Fs[i] = prog.let_vector(f"dc_F{i}", fold_vectors(accF[i]))
        A, n = jk.A, len(jk.A)
        Y = [prog.let_vector(f"{t}_Y{c}", symv(Ms[i], a)) for c, a in enumerate(A)]     # M*_i A_i
        D = [[dot(A[r], Y[c]) for c in range(n)] for r in range(n)]
        try:
            f = reverse_ldl(prog, lower_rows(D), f"{t}_L")
        except StructurallySingular as exc:
            raise composite.singular_error(kin, first[i] + exc.index) from None
        U = f.solve_LT(prog, Y, f"{t}_U")                  # L^T U = A^T M*
        u = f.solve_LT(prog, [dot(A[r], Fs[i]) + gen[kin.coordinates[first[i] + r]] for r in range(n)],
                       f"{t}_u")                          # L^T u = A^T F* + Q
        Us[i], us[i], Lf[i] = U, u, f
        if k == 0:
            continue
        unit = unit_columns(A)                              # A_c = s e_k: row/column k vanish
        Uh = f.scaled(prog, U, f"{t}_Uh")
        H = sp.zeros(6, 6)
        for r in range(6):
            for s in range(r, 6):
                if r not in unit and s not in unit:
                    H[r, s] = H[s, r] = total([Ms[i][r, s]] + [neg(mul(Uh[c][r], U[c][s])) for c in range(n)])
        H = prog.let_symmetric(f"{t}_H", H)
        h = [neg(gen[kin.coordinates[first[i] + unit[r][0]]]) / unit[r][1] if r in unit else
             total([Fs[i][r]] + [neg(mul(Uh[c][r], u[c])) for c in range(n)]) for r in range(6)]
        h = prog.let_vector(f"{t}_h", h)
        accM[k].append(transfer(prog, f"{t}_X", jk.G, jk.rho, H))
        accF[k].append(apply_CT(jk.G, jk.rho, h))

    # triangular solves (3.31), i = 1..N
    dw = [Z6] + [None] * N
    qdd = [None] * len(kin.coordinates)
    R = [None] * (N + 1)
    for i in range(1, N + 1):
        t = f"dc_{i}"
        jk, k = kin.joints[i], topo.kappa[i]
        n = len(jk.A)
        a = prog.let_vector(f"{t}_a", apply_C(jk.G, fp.rho_p[i], dw[k]))    # C_i w_k
        x = Lf[i].solve_L(prog, [total([us[i][r], neg(dot(Us[i][r], a))]) for r in range(n)],
                          f"{t}_x", scale=True)     # L x = D^-1 (u - U a)
        for r in range(n):
            x[r] = qdd[first[i] + r] = prog.let(f"dc_qdd{first[i] + r}", x[r])
        w = a
        for c in range(n):
            w = [total([p, mul(x[c], e)]) for p, e in zip(w, jk.A[c])]
        dw[i] = prog.let_vector(f"dc_dw{i}", w)
        R[i] = prog.let_vector(f"dc_R{i}", [total([y, neg(f)]) for y, f in zip(symv(Ms[i], dw[i]), Fs[i])])

    qs = tuple(q for jk in kin.joints[1:] for q in jk.q)
    qds = tuple(q for jk in kin.joints[1:] for q in jk.qd)
    return EquationsOfMotion(form="ltdl", kind="lagrangian", program=prog,
                             coordinates=kin.coordinates, q=qs, qd=qds,
                             outputs={"qdd": qdd, "mass_matrix": composite.mass_matrix(kin)},
                             mass_in_dynamics=False, info={"reactions": reaction_info(kin, R)})
