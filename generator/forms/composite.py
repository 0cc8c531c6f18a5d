"""The composite-body form, CBM (dissertation 2.2.1-2.2.2, (2.15)-(2.23)).

Symbol table (body i, frame i):
  M*_i = (m*, h*, Theta*)   composite inertia of the subtree D_i about O_i          (2.20)
  F_hat*_i                  composite bias force of D_i at O_i                       (2.22)
  M_ij = A_i^T M*_i T_ij A_j  blocks of the mass matrix, j in P_i                    (2.19)
  Q_i  = A_i^T F_hat*_i + generalized forces of joint i                              (2.21)
Composite inertias are carried as the 10 numbers (m, h, Theta) of M = [[m E, -h~], [h~,
Theta]]: C^T M* C keeps that structure, so (2.20) is evaluated as a change of reference
point and axes instead of a 6x6 triple product.
"""

from __future__ import annotations

from dynamica.generator.cost.flops import F, Formula, cube_sq_lin, nonroot
from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.generator.forms.parts.cholesky import StructurallySingular, singular_error, solve_reverse_ldl
from dynamica.generator.forms.parts.common import bias_forces, forward_pass, lagrangian_equations
from dynamica.generator.forms.parts.spatial import (
    composite_forces,
    composite_inertias,
    coordinate_layout,
    full_matrix,
    mass_matrix_rows,
)
from dynamica.generator.ir.program import dot
from dynamica.generator.mechanics.forces import active_forces


def flops(c):
    """(4.2): sum_i [eta^3/3 + 17 eta^2/2 + 109 eta/6 + 222 + 42 tau]
    - sum_{kappa_i != 0} [eta_k^3/3 + 17 eta_k^2/2 + 109 eta_k/6 - 205]."""
    s = sum(cube_sq_lin(e, F(17, 2), F(109, 6), 222) + 42 * tau for e, tau in zip(c.eta, c.tau))
    return s - sum(cube_sq_lin(c.eta_parent[i], F(17, 2), F(109, 6), -205) for i in nonroot(c))


@register("composite", "CBM", cost=Formula("(4.2)", flops, candidate=True), pivots_of_m=True)
def composite(kin) -> EquationsOfMotion:
    prog = kin.program
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    F_hat = bias_forces(kin, fp, F_active)
    Mstar = composite_inertias(kin)                 # (2.20)
    Fstar = composite_forces(kin, F_hat)            # (2.22)
    owner, local, _ = coordinate_layout(kin)
    # right-hand side (2.21)
    Q = [prog.let(f"Q{idx}", dot(kin.joints[i].A[c], Fstar[i]) + gen[kin.coordinates[idx]])
         for idx, (i, c) in enumerate(zip(owner, local))]
    Mrows = mass_matrix_rows(kin, Mstar)            # (2.19)
    try:
        qdd = solve_reverse_ldl(prog, Mrows, Q)
    except StructurallySingular as exc:
        raise singular_error(kin, exc.index) from None
    qdd = [prog.let(f"qdd{k}", x) for k, x in enumerate(qdd)]
    return lagrangian_equations(kin, "composite", qdd, full_matrix(Mrows))
