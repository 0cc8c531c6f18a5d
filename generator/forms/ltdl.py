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

from dynamica.generator.cost.flops import F, Formula, cube_sq_lin
from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.generator.forms.parts.passes import Variant, sweep

DEC = Variant(form="ltdl", prefix="dc", scale_first=False, rows="U", rows_scaled="Uh", rhs="u", rhs_scaled="",
              inertia="H", force="h")

def flops(c):
    """(4.7): sum_i (n^3/3 + 39 n^2/2 + 1105 n/6 + 864) - sum_{roots} (84 n_r + 660)."""
    return (sum(cube_sq_lin(x, F(39, 2), F(1105, 6), 864) for x in c.dofs)
            - sum(84 * c.dofs[i] + 660 for i in range(c.N) if c.eta_parent[i] is None))


@register("ltdl", "DEC", cost=Formula("(4.7)", flops, candidate=True), pivots_of_m=True)
def ltdl(kin) -> EquationsOfMotion:
    return sweep(kin, DEC)
