"""The sweep ("progonka", method of separate bodies), ABM: (3.7)-(3.8), dissertation 3.1.1.

The extended system (1.38) (Newton-Euler equations of every body, joint kinematics, ideal
joints) is solved for q'', w and R by a backward pass of articulated inertias and bias forces
and a forward pass of accelerations; only the n_i x n_i blocks D_i are inverted.

Symbol table (body i, frame i, vectors [lin; ang] at O_i; program names prefixed `ab_`):
  M*_i                 articulated inertia, M_i + sum_j C_j^T H_j M*_j C_j           (3.7)
  F*_i                 articulated bias force                                        (3.7)
  Y_i = M*_i A_i       (6 x n_i), D_i = A_i^T Y_i = L_i^T diag(d_i) L_i  (root-free, L_i unit
                       lower, from the last row: cholesky.reverse_ldl)
  Yt_i = L_i^-T Y_i^T (rows),  Yh_i = diag(d_i)^-1 Yt_i, so Y_i D_i^-1 Y_i^T = Yh_i^T Yt_i
  u_i = A_i^T F*_i + Q_i  (Q_i: generalized forces of joint i, springs etc.);  z_i = L_i^-T u_i
  H_j M*_j = M*_j - Yh_j^T Yt_j                  transferred to the parent             (3.7)
  H_j F*_j = F*_j - Yh_j^T z_j  (with Q_j: - M*_j A_j D_j^-1 Q_j included)           (3.7)
  (H_j M*_j A_j = 0 and A_j^T H_j F*_j = -Q_j: literal zeros where A_j has a unit column)
  q''_i = D_i^-1 (u_i - Y_i^T a_i) = L_i^-1 (diag(d_i)^-1 z_i - Yh_i a_i)             (3.8)
  R_i = M*_i w_i - F*_i   joint reaction: the wrench body i receives from its parent through
                          joint i (constraint plus joint forces, A_i^T R_i = Q_i), frame i, O_i
The relative bias accelerations w^cr_i of (3.2) are folded into F_hat_i (2.14): with the
accelerated ground, w_i = w_hat_i + dw_i, where w_hat_i (common.forward_pass) is the absolute
acceleration at q'' = 0, and dw_i = C_i dw_k + A_i q''_i, a_i = C_i dw_k. The body equations in
dw_i read M_i dw_i = F_hat_i + R_i - sum_j C_j^T R_j, i.e. (3.1)-(3.8) with F'_i -> F_hat_i
and w^cr_i -> 0; the R_i are the same.

Reactions: program intermediates `ab_R{i}_{0..5}` ([force; torque]); the module exports
INFO["reactions"] = ((body name, (6 names)), ...) in regular numbering (an entry that folds
to a literal or to another intermediate, e.g. `0` or `-ab_F1_0`, is given as that expression).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms import EquationsOfMotion, composite, register
from dynamica.generator.forms.cholesky import StructurallySingular, lower_rows, reverse_ldl
from dynamica.generator.forms.common import active_forces, apply_C, apply_CT, bias_forces, forward_pass
from dynamica.generator.forms.spatial import rigid6, symv, transfer, unit_columns
from dynamica.generator.program import dot, fold_matrices, fold_vectors, mul, neg, total


def reaction_info(kin, R):
    """INFO entry: ((body name, (6 names)), ...) of the reaction intermediates."""
    return tuple((kin.topo.names[i], tuple(str(x) for x in R[i])) for i in range(1, kin.topo.n_bodies + 1))


@register("articulated", "ABM")
def articulated(kin) -> EquationsOfMotion:
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    fp = forward_pass(kin)
    F_active, gen = active_forces(kin, fp)
    F_hat = bias_forces(kin, fp, F_active)
    _, _, first = composite.coordinate_layout(kin)
    Z6 = [sp.S.Zero] * 6

    # backward pass (3.7), i = N..1
    # children's terms collected per body and summed once (fold_*: linear in the children)
    accM = [None] + [[rigid6(b.mass, b.h, b.theta)] for b in kin.inertia[1:]]
    accF = [None] + [[list(F_hat[i])] for i in range(1, N + 1)]
    Ms, Fs = [None] * (N + 1), [None] * (N + 1)
    Yh, Lf, nu = [None] * (N + 1), [None] * (N + 1), [None] * (N + 1)
    for i in range(N, 0, -1):
        t = f"ab_{i}"
        jk, k = kin.joints[i], topo.kappa[i]
        Ms[i] = prog.let_symmetric(f"ab_M{i}", fold_matrices(accM[i]))
        Fs[i] = prog.let_vector(f"ab_F{i}", fold_vectors(accF[i]))
        A, n = jk.A, len(jk.A)
        Y = [prog.let_vector(f"{t}_Y{c}", symv(Ms[i], a)) for c, a in enumerate(A)]
        D = [[dot(A[r], Y[c]) for c in range(n)] for r in range(n)]
        try:
            f = reverse_ldl(prog, lower_rows(D), f"{t}_L")
        except StructurallySingular as exc:
            raise composite.singular_error(kin, first[i] + exc.index) from None
        Yt = f.solve_LT(prog, Y, f"{t}_Yt")                # Yt = L^-T Y^T
        Yh[i] = f.scaled(prog, Yt, f"{t}_Yh")
        z = f.solve_LT(prog, [dot(A[c], Fs[i]) + gen[kin.coordinates[first[i] + c]] for c in range(n)],
                       f"{t}_z")                          # z = L^-T (A^T F* + Q)
        nu[i] = f.scaled(prog, z, f"{t}_nu")
        Lf[i] = f
        if k == 0:
            continue
        # H M* = M* - Y D^-1 Y^T and H F* carried to the parent by C^T (3.7)
        unit = unit_columns(A)                              # A_c = s e_k: row/column k vanish
        Ia = sp.zeros(6, 6)
        for r in range(6):
            for s in range(r, 6):
                if r not in unit and s not in unit:
                    Ia[r, s] = Ia[s, r] = total([Ms[i][r, s]] + [neg(mul(Yh[i][c][r], Yt[c][s])) for c in range(n)])
        Ia = prog.let_symmetric(f"{t}_Ia", Ia)
        hb = [neg(gen[kin.coordinates[first[i] + unit[r][0]]]) / unit[r][1] if r in unit else
              total([Fs[i][r]] + [neg(mul(Yh[i][c][r], z[c])) for c in range(n)]) for r in range(6)]
        hb = prog.let_vector(f"{t}_hb", hb)
        accM[k].append(transfer(prog, f"{t}_X", jk.G, jk.rho, Ia))
        accF[k].append(apply_CT(jk.G, jk.rho, hb))

    # forward pass (3.8), i = 1..N
    dw = [Z6] + [None] * N
    qdd = [None] * len(kin.coordinates)
    R = [None] * (N + 1)
    for i in range(1, N + 1):
        t = f"ab_{i}"
        jk, k = kin.joints[i], topo.kappa[i]
        n = len(jk.A)
        a = prog.let_vector(f"{t}_a", apply_C(jk.G, fp.rho_p[i], dw[k]))    # C_i dw_k
        x = Lf[i].solve_L(prog, [total([nu[i][c], neg(dot(Yh[i][c], a))]) for c in range(n)],
                          f"{t}_x")                 # L x = nu - Yh a
        for c in range(n):
            x[c] = qdd[first[i] + c] = prog.let(f"ab_qdd{first[i] + c}", x[c])
        w = a
        for c in range(n):
            w = [total([p, mul(x[c], e)]) for p, e in zip(w, jk.A[c])]
        dw[i] = prog.let_vector(f"ab_dw{i}", w)
        R[i] = prog.let_vector(f"ab_R{i}", [total([y, neg(f)]) for y, f in zip(symv(Ms[i], dw[i]), Fs[i])])

    qs = tuple(q for jk in kin.joints[1:] for q in jk.q)
    qds = tuple(q for jk in kin.joints[1:] for q in jk.qd)
    return EquationsOfMotion(form="articulated", kind="lagrangian", program=prog,
                             coordinates=kin.coordinates, q=qs, qd=qds,
                             outputs={"qdd": qdd, "mass_matrix": composite.mass_matrix(kin)},
                             mass_in_dynamics=False, info={"reactions": reaction_info(kin, R)})
