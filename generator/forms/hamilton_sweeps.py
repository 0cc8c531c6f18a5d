"""Hamiltonian sweep forms: the kinematic part of (1.54) solved for q' body by body.

hamilton-articulated (HABM), dissertation 3.1.2, (3.9)-(3.17): the method of separate bodies
(Vereshchagin's sweep, "progonka") on the first three rows of (1.54).
hamilton-ltdl (HDEC), dissertation 3.2.3, (3.32)-(3.40): the symmetric L^T D L elimination of
the same system, with root-free L^T D L factors of the joint blocks A_i^T M*_i A_i.

Symbol table (body i, its parent k = kappa_i, children S_i; [lin; ang] spatial vectors):
  M*_i     articulated inertia of the subtree D_i at O_i (6x6 symmetric)      (3.16), (3.22)
  pi*_i    momentum bias: p*_i = M*_i v_i - pi*_i                            (3.13)
  D_i      A_i^T M*_i A_i (n_i x n_i);  Y_i = M*_i A_i (6 x n_i)
  v^r_i    v_hat^r_i, the driven part of the joint velocity (1.4)
  p_i      the Poisson momenta of joint i (state), pm' their derivatives (3.12)
Forward sweep (i = N..1), HABM (3.16):
  M*_i  = M_i + sum_j C_j^T H_j M*_j C_j,   H_j M*_j = M*_j - Y_j D_j^{-1} Y_j^T
  pi*_i = sum_j C_j^T [H_j (pi*_j - M*_j v^r_j) - M*_j A_j u_j],  u_j = D_j^{-1} p_j
          evaluated as C_j^T [x_j - Y_j D_j^{-1} (A_j^T x_j + p_j)],  x_j = pi*_j - M*_j v^r_j
Backward sweep (i = 1..N), HABM (3.17):
  v*_i = C_i v_k + v^r_i,  q'_i = U_i (pi*_i - M*_i v*_i) + u_i = D_i^{-1} (p_i + A_i^T pi*_i - Y_i^T v*_i)
  v_i = A_i q'_i + v*_i,   p*_i = M*_i v_i - pi*_i,   pm'_i by (3.12) (hamiltonian.py)
HDEC, with D_i = L_i^T diag(d_i) L_i (L_i unit lower triangular, formed from the last row as
(2.7), root-free: cholesky.reverse_ldl; the dissertation's Cholesky factor is L_i diag(d_i)^(1/2)
in this notation), U_i = L_i^{-T} A_i^T M*_i = L_i^{-T} Y_i^T (3.22), Uh_i = diag(d_i)^{-1} U_i:
  M*_i  = M_i + sum_j C_j^T (M*_j - Uh_j^T U_j) C_j                                   (3.30)
  x_i   = L_i^{-T} [p_i + A_i^T (pi*_i - M*_i v^r_i)]                                  (3.35)
  pi*_i = sum_j C_j^T (pi*_j - M*_j v^r_j - Uh_j^T x_j)                                (3.36)
  q'_i  = L_i^{-1} diag(d_i)^{-1} (x_i - U_i C_i v_k)
          (the dissertation's L_i^{-1}(u_i - U_i v*_i), u_i = x_i + U_i v^r_i)
  v_i, p*_i, pm'_i as HABM                                                             (3.40)
The dissertation's printed (3.34)-(3.40) lose the lines (3.37)-(3.39); the relations above follow
from L^T X = P, L V = I X with the factors (3.21)-(3.22) and were checked against (3.17).
"""

from __future__ import annotations

from types import SimpleNamespace

import sympy as sp

from dynamica.errors import ModelError, Problem
from dynamica.generator.cost.flops import NO_FORMULA
from dynamica.generator.forms import register
from dynamica.generator.forms.hamiltonian import Z6, Hamiltonian, symmetric_inverse
from dynamica.generator.forms.parts.cholesky import StructurallySingular, lower_rows, reverse_ldl
from dynamica.generator.forms.parts.spatial import apply_C, apply_CT, rigid6, symv, transfer
from dynamica.generator.ir.program import add, dot, fold_matrices, fold_vectors, mul, neg, sub, total
from dynamica.generator.spec.model import negative_bodies


def _singular(kin, i):
    body = kin.topo.names[i]
    bodies = negative_bodies(kin.spec)
    cause = (f"negative masses or inertias ({', '.join(f'`{b}`' for b in bodies)}) cancel the others along them"
             if bodies else "a massless end body, or an axis through a point mass?")
    return ModelError(kin.spec.file, [Problem(
        "bodies", f"the joint block A_i^T M*_i A_i of body `{body}` is singular at every state: its "
                  f"coordinates move no mass ({cause})")])


def _sweep(kin, tag, ltdl: bool):
    H = Hamiltonian(kin, tag)
    fw = _forward_sweep(kin, tag, ltdl, H)
    qd, pstar, v = _backward_sweep(kin, tag, ltdl, H, fw)
    pmd = H.momentum_rates(pstar, v, H.composite_forces())
    return H, qd, pmd


def _forward_sweep(kin, tag, ltdl, H):
    """From the tips to the root: M*_i, pi*_i and each joint's elimination (D_i factored by the
    reverse L^T D L, or inverted), transferred to the parent."""
    prog, topo, N = kin.program, kin.topo, kin.topo.n_bodies
    fw = SimpleNamespace(Ma=[None] * (N + 1), pi=[None] * (N + 1), Y={}, Dinv={}, F={}, U={}, x={})
    # children's terms collected per body and summed once (fold_*: linear in the children)
    accM = [None] + [[rigid6(b.mass, b.h, b.theta)] for b in kin.inertia[1:]]
    accP = [None] + [[list(Z6)] for _ in range(N + 1)]
    for i in range(N, 0, -1):
        jk = kin.joints[i]
        fw.Ma[i] = prog.let_symmetric(f"{tag}Ma{i}", fold_matrices(accM[i]))
        fw.pi[i] = prog.let_vector(f"{tag}pi{i}", fold_vectors(accP[i]))
        xb = sub(fw.pi[i], symv(fw.Ma[i], jk.vr_hat))                      # pi*_i - M*_i v^r_i
        if len(jk.A):
            try:
                Hm, contrib = _eliminate(prog, tag, i, jk.A, fw, xb, H.pm_of[i], ltdl)
            except StructurallySingular:
                raise _singular(kin, i) from None
        else:
            Hm, contrib = fw.Ma[i], xb
        k = topo.kappa[i]
        if k > 0:
            Hm = prog.let_symmetric(f"{tag}Hm{i}", Hm)
            contrib = prog.let_vector(f"{tag}pc{i}", contrib)
            accM[k].append(transfer(prog, f"{tag}X{i}", jk.G, jk.rho, Hm))
            accP[k].append(apply_CT(jk.G, jk.rho, contrib))
    return fw


def _eliminate(prog, tag, i, A, fw, xb, p_i, ltdl):
    """Joint i's elimination: (H_i M*_i, the momentum passed on) with D_i = A^T M*_i A."""
    n, Ma = len(A), fw.Ma
    Y = fw.Y[i] = [prog.let_vector(f"{tag}Y{i}_{c}", symv(Ma[i], a)) for c, a in enumerate(A)]
    Du = {(r, c): prog.let(f"{tag}D{i}_{r}{c}", dot(A[r], Y[c])) for r in range(n) for c in range(r, n)}
    D = [[Du[min(r, c), max(r, c)] for c in range(n)] for r in range(n)]
    if ltdl:
        F = fw.F[i] = reverse_ldl(prog, lower_rows(D), f"{tag}L{i}_")
        U = fw.U[i] = F.solve_LT(prog, Y, f"{tag}U{i}_")          # L^T U = Y^T
        x = fw.x[i] = F.solve_LT(prog, [total([p_i[c], dot(A[c], xb)]) for c in range(n)], f"{tag}x{i}_")
        Uh = F.scaled(prog, U, f"{tag}Uh{i}_")
        Hm = sp.Matrix(6, 6, lambda r, c: total([Ma[i][r, c]] + [neg(mul(Uh[k][r], U[k][c])) for k in range(n)]))
        return Hm, [total([xb[r]] + [neg(mul(Uh[k][r], x[k])) for k in range(n)]) for r in range(6)]
    if any(D[r][r] == 0 for r in range(n)):
        raise StructurallySingular(0)
    Dinv = fw.Dinv[i] = symmetric_inverse(prog, D, f"{tag}Di{i}_")
    # W = D^{-1} Y^T (n x 6), H_i M*_i = M*_i - Y_i W
    W = [[prog.let(f"{tag}W{i}_{c}{r}", total([mul(Dinv[c][k], Y[k][r]) for k in range(n)]))
          for r in range(6)] for c in range(n)]
    Hm = sp.Matrix(6, 6, lambda r, c: total([Ma[i][r, c]] + [neg(mul(Y[k][r], W[k][c])) for k in range(n)]))
    s = [total([p_i[c], dot(A[c], xb)]) for c in range(n)]
    u = prog.let_vector(f"{tag}u{i}", [total([mul(Dinv[c][k], s[k]) for k in range(n)]) for c in range(n)])
    return Hm, [total([xb[r]] + [neg(mul(Y[k][r], u[k])) for k in range(n)]) for r in range(6)]


def _backward_sweep(kin, tag, ltdl, H, fw):
    """From the root to the tips: q' of each joint, v_i and p*_i = M*_i v_i - pi*_i."""
    prog, topo, N = kin.program, kin.topo, kin.topo.n_bodies
    v = [list(Z6)] + [None] * N
    pstar = [None] * (N + 1)
    qd = [None] * H.n
    for i in range(1, N + 1):
        jk = kin.joints[i]
        A, n = jk.A, len(jk.A)
        k = topo.kappa[i]
        Cv = prog.let_vector(f"{tag}Cv{i}", apply_C(jk.G, H.rp[i], v[k]))     # C_i v_k
        vs = add(Cv, jk.vr_hat)                                                  # v*_i
        if n:
            if ltdl:
                rhs = [total([fw.x[i][c], neg(dot(fw.U[i][c], Cv))]) for c in range(n)]
                qi = fw.F[i].solve_L(prog, rhs, f"{tag}y{i}_", scale=True)
            else:
                s = [total([H.pm_of[i][c], dot(A[c], fw.pi[i]), neg(dot(fw.Y[i][c], vs))]) for c in range(n)]
                qi = [total([mul(fw.Dinv[i][c][m], s[m]) for m in range(n)]) for c in range(n)]
            qi = [prog.let(f"{tag}qdot{H.first[i] + c}", e) for c, e in enumerate(qi)]
            for c in range(n):
                qd[H.first[i] + c] = qi[c]
                vs = add(vs, [mul(qi[c], a) for a in A[c]])
        v[i] = prog.let_vector(f"{tag}v{i}", vs)
        pstar[i] = prog.let_vector(f"{tag}ps{i}", sub(symv(fw.Ma[i], v[i]), fw.pi[i]))
    return qd, pstar, v


@register("hamilton-articulated", "HABM", cost=NO_FORMULA, pivots_of_m=True)
def hamilton_articulated(kin):
    """Sweep of (1.54), (3.16)-(3.17)."""
    H, qd, pmd = _sweep(kin, "ha_", ltdl=False)
    return H.equations("hamilton-articulated", qd, pmd)


@register("hamilton-ltdl", "HDEC", cost=NO_FORMULA, pivots_of_m=True)
def hamilton_ltdl(kin):
    """L^T D L elimination of (1.54), (3.32)-(3.40)."""
    H, qd, pmd = _sweep(kin, "hd_", ltdl=True)
    return H.equations("hamilton-ltdl", qd, pmd)
