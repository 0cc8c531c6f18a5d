"""The backward and forward passes over the extended system (1.38) that ABM (3.7)-(3.8) and DEC
(3.30)-(3.31) share, written once (articulated.py and ltdl.py hold the symbol tables).

Per body i, from the leaves to the root: the articulated inertia and bias force M*_i, F*_i
(children summed once), Y_i = M*_i A_i, the joint block A_i^T Y_i = L_i^T diag(d_i) L_i
(root-free, cholesky.reverse_ldl), the rows L_i^-T Y_i^T and L_i^-T (A_i^T F*_i + Q_i), the
reduced H_i, h_i carried to the parent by C_i^T; then from the root: a_i = C_i dw_k, q''_i,
dw_i = a_i + A_i q''_i and the joint reaction R_i = M*_i dw_i - F*_i.

The two forms do the same operations and differ only in where diag(d_i)^-1 is applied
(`Variant.scale_first`): ABM scales the reduced rows in the backward pass (Yh, nu of (3.7)),
DEC in the forward solve ((3.31)); and in the names of their intermediates.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import sympy as sp

from dynamica.generator.forms.parts.cholesky import StructurallySingular, lower_rows, reverse_ldl, singular_error
from dynamica.generator.forms.parts.common import bias_forces, forward_pass, lagrangian_equations
from dynamica.generator.forms.parts.spatial import (
    apply_C,
    apply_CT,
    coordinate_layout,
    mass_matrix,
    rigid6,
    symv,
    transfer,
    unit_columns,
)
from dynamica.generator.ir.program import dot, fold_matrices, fold_vectors, mul, neg, total
from dynamica.generator.mechanics.forces import active_forces, armature_blocks


@dataclass(frozen=True)
class Variant:
    form: str
    prefix: str              # program names: `<prefix>_M3`, `<prefix>_3_Y0`, ...
    scale_first: bool        # diag(d)^-1 in the backward pass (ABM) or in the forward solve (DEC)
    rows: str                # L^-T Y^T
    rows_scaled: str         # diag(d)^-1 L^-T Y^T
    rhs: str                 # L^-T (A^T F* + Q)
    rhs_scaled: str          # its scaled form (ABM only)
    inertia: str             # H_i (the reduced articulated inertia)
    force: str               # h_i


def reaction_info(kin, R):
    """INFO entry: ((body name, (6 names)), ...) of the reaction intermediates."""
    return tuple((kin.topo.names[i], tuple(str(x) for x in R[i])) for i in range(1, kin.topo.n_bodies + 1))


def sweep(kin, v: Variant):
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    back = _backward(kin, v, bias_forces(kin, fp, F_active), gen)
    qdd, R = _forward(kin, v, fp, back)
    return lagrangian_equations(kin, v.form, qdd, mass_matrix(kin), info={"reactions": reaction_info(kin, R)})


def _backward(kin, v: Variant, F_hat, gen):
    """The backward pass, i = N..1: M*_i and F*_i from the children (collected per body and
    summed once, fold_*), D_i = A^T M*_i A (+ diag(armature)) factored, the rows R_i and the
    right sides r_i, and H, h carried to the parent by C^T."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    _, _, first = coordinate_layout(kin)
    arm = armature_blocks(kin)                      # D_i += the joint's armature block: MuJoCo's dof_armature
    accM = [None] + [[rigid6(b.mass, b.h, b.theta)] for b in kin.inertia[1:]]
    accF = [None] + [[list(F_hat[i])] for i in range(1, N + 1)]
    b = SimpleNamespace(Ms=[None] * (N + 1), Fs=[None] * (N + 1), rows=[None] * (N + 1), rhs=[None] * (N + 1),
                        Lf=[None] * (N + 1))
    for i in range(N, 0, -1):
        t = f"{v.prefix}_{i}"
        jk, k = kin.joints[i], topo.kappa[i]
        Ms = b.Ms[i] = prog.let_symmetric(f"{v.prefix}_M{i}", fold_matrices(accM[i]))
        Fs = b.Fs[i] = prog.let_vector(f"{v.prefix}_F{i}", fold_vectors(accF[i]))
        A, n = jk.A, len(jk.A)
        Y = [prog.let_vector(f"{t}_Y{c}", symv(Ms, a)) for c, a in enumerate(A)]     # M*_i A_i
        own = arm.get(i, [[0] * n] * n)
        D = [[dot(A[r], Y[c]) + own[r][c] for c in range(n)] for r in range(n)]
        try:
            f = reverse_ldl(prog, lower_rows(D), f"{t}_L")
        except StructurallySingular as exc:
            raise singular_error(kin, first[i] + exc.index) from None
        R_ = f.solve_LT(prog, Y, f"{t}_{v.rows}")                       # L^T R = Y^T
        Rh = f.scaled(prog, R_, f"{t}_{v.rows_scaled}") if v.scale_first else None
        r = f.solve_LT(prog, [dot(A[c], Fs) + gen[kin.coordinates[first[i] + c]] for c in range(n)],
                       f"{t}_{v.rhs}")                                 # L^T r = A^T F* + Q
        b.rows[i], b.rhs[i], b.Lf[i] = ((Rh, f.scaled(prog, r, f"{t}_{v.rhs_scaled}")) if v.scale_first
                                        else (R_, r)) + (f,)
        if k == 0:
            continue
        if not v.scale_first:
            Rh = f.scaled(prog, R_, f"{t}_{v.rows_scaled}")
        # H = M* - Y D^-1 Y^T and h = F* - Y D^-1 (A^T F* + Q) carried to the parent by C^T
        # A_c = s e_k: row/column k vanish (not with armature in D: then H A != 0)
        unit = unit_columns(A) if i not in arm else {}
        H = sp.zeros(6, 6)
        for p in range(6):
            for s in range(p, 6):
                if p not in unit and s not in unit:
                    H[p, s] = H[s, p] = total([Ms[p, s]] + [neg(mul(Rh[c][p], R_[c][s])) for c in range(n)])
        H = prog.let_symmetric(f"{t}_{v.inertia}", H)
        h = [neg(gen[kin.coordinates[first[i] + unit[p][0]]]) / unit[p][1] if p in unit else
             total([Fs[p]] + [neg(mul(Rh[c][p], r[c])) for c in range(n)]) for p in range(6)]
        h = prog.let_vector(f"{t}_{v.force}", h)
        accM[k].append(transfer(prog, f"{t}_X", jk.G, jk.rho, H))
        accF[k].append(apply_CT(jk.G, jk.rho, h))
    return b


def _forward(kin, v: Variant, fp, b):
    """The forward pass, i = 1..N: q''_i = L^-1 D^-1 (r - R a) with a = C_i dw_k, then dw_i and
    the reaction R_i = M*_i dw_i - F*_i."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    _, _, first = coordinate_layout(kin)
    dw = [[sp.S.Zero] * 6] + [None] * N
    qdd = [None] * len(kin.coordinates)
    R = [None] * (N + 1)
    for i in range(1, N + 1):
        t = f"{v.prefix}_{i}"
        jk, k = kin.joints[i], topo.kappa[i]
        n = len(jk.A)
        a = prog.let_vector(f"{t}_a", apply_C(jk.G, fp.rho_p[i], dw[k]))    # C_i dw_k
        x = b.Lf[i].solve_L(prog, [total([b.rhs[i][c], neg(dot(b.rows[i][c], a))]) for c in range(n)],
                            f"{t}_x", scale=not v.scale_first)      # q''_i = L^-1 D^-1 (r - R a)
        for c in range(n):
            x[c] = qdd[first[i] + c] = prog.let(f"{v.prefix}_qdd{first[i] + c}", x[c])
        w = a
        for c in range(n):
            w = [total([p, mul(x[c], e)]) for p, e in zip(w, jk.A[c])]
        dw[i] = prog.let_vector(f"{v.prefix}_dw{i}", w)
        R[i] = prog.let_vector(f"{v.prefix}_R{i}", [total([y, neg(f)])
                                                   for y, f in zip(symv(b.Ms[i], dw[i]), b.Fs[i])])
    return qdd, R
