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

from dynamica.generator.cost.flops import F, Formula, cube_sq_lin
from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.generator.forms.parts.passes import Variant, sweep

ABM = Variant(form="articulated", prefix="ab", scale_first=True, rows="Yt", rows_scaled="Yh", rhs="z",
              rhs_scaled="nu", inertia="Ia", force="hb")

def flops(c):
    """(4.6): sum_i (n^3/3 + 35 n^2/2 + 967 n/6 + 1242) - sum_{roots} (72 n_r + 1122)."""
    return (sum(cube_sq_lin(x, F(35, 2), F(967, 6), 1242) for x in c.dofs)
            - sum(72 * c.dofs[i] + 1122 for i in range(c.N) if c.eta_parent[i] is None))


@register("articulated", "ABM", cost=Formula("(4.6)", flops), pivots_of_m=True)
def articulated(kin) -> EquationsOfMotion:
    return sweep(kin, ABM)
