"""The direct form, DRT (dissertation 1.4.2, 2.2.2: (2.11)-(2.14), then (2.23)).

Lagrange II assembled directly from the tangent basis instead of composite bodies:
  B_ij = A_i (j = i),  C_i B_{kappa_i j} (j in P_{kappa_i}),  0 otherwise        (1.31)
  M = B^T M B = sum_i B_i^T M_i B_i                                               (2.11)
  Q = B^T F_hat = sum_i B_i^T F_hat_i, plus the generalized forces of the joints  (2.12)
with F_hat of (2.14). B is kept per body as the columns B_i[r] (6-vectors, frame i) of the
coordinates r of the joints on the path P_i only: the structural zeros of B (j not in P_i)
are never formed. Each body adds the products of its columns to the entries of the rows and
columns of P_i, so M_rc sums over the bodies of D_j intersected with D_k (r in joint j, c in
joint k). The system is solved by the tree-sparse elimination of (2.23), root-free: M = L^T D L
(forms/cholesky.py).
"""

from __future__ import annotations

from dynamica.generator.cost.flops import F, Formula, cube_sq_lin, nonroot
from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.generator.forms.parts.cholesky import StructurallySingular, singular_error, solve_reverse_ldl
from dynamica.generator.forms.parts.common import bias_forces, forward_pass, lagrangian_equations
from dynamica.generator.forms.parts.spatial import apply_C, coordinate_layout, full_matrix, inertia_times
from dynamica.generator.ir.program import dot, total
from dynamica.generator.mechanics.forces import active_forces, armature_blocks


def tangent_basis(kin, fp, tag="dr_B"):
    """B_i (1.31) of every body as {coordinate index: 6-vector in frame i}, nonzero blocks only."""
    prog, topo = kin.program, kin.topo
    _, _, first = coordinate_layout(kin)
    B = [{}]
    for i in range(1, topo.n_bodies + 1):
        jk = kin.joints[i]
        cols = {r: prog.let_vector(f"{tag}{i}_{r}", apply_C(jk.G, fp.rho_p[i], b))   # C_i B_{kappa_i j}
                for r, b in B[topo.kappa[i]].items()}
        cols.update({first[i] + c: list(a) for c, a in enumerate(jk.A)})           # B_ii = A_i
        B.append(cols)
    return B

def flops(c):
    """(4.1): sum_i [eta^3/3 + 17 eta^2/2 + 325 eta/6 + 222]
    - sum_{kappa_i != 0} [eta_k^3/3 + 5 eta_k^2/2 - 251 eta_k/6]."""
    s = sum(cube_sq_lin(e, F(17, 2), F(325, 6), 222) for e in c.eta)
    return s - sum(cube_sq_lin(c.eta_parent[i], F(5, 2), F(-251, 6), 0) for i in nonroot(c))


@register("direct", "DRT", cost=Formula("(4.1)", flops), pivots_of_m=True)
def direct(kin) -> EquationsOfMotion:
    prog = kin.program
    n = len(kin.coordinates)
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    F_hat = bias_forces(kin, fp, F_active)                      # (2.14)
    B = tangent_basis(kin, fp)                                  # (1.31), (2.13)
    m_terms = [{} for _ in range(n)]                        # lower triangle, r >= c
    _, _, first = coordinate_layout(kin)
    for i, block in armature_blocks(kin).items():           # M's joint block += armature
        for r, row in enumerate(block):
            for c, a in enumerate(row[:r + 1]):
                if a != 0:
                    m_terms[first[i] + r][first[i] + c] = [a]
    q_terms = [[gen[c]] for c in kin.coordinates]
    for i in range(1, kin.topo.n_bodies + 1):
        bi = kin.inertia[i]
        MB = {r: prog.let_vector(f"dr_MB{i}_{r}", inertia_times((bi.mass, bi.h, bi.theta), b))
              for r, b in B[i].items()}                         # M_i B_i
        for r, b in B[i].items():
            q_terms[r].append(dot(b, F_hat[i]))                 # B_i^T F_hat_i (2.12)
            for c, mb in MB.items():
                if c <= r:
                    m_terms[r].setdefault(c, []).append(dot(mb, b))   # B_i^T M_i B_i (2.11)
    Mrows = [{c: prog.let(f"dr_M{r}_{c}", total(t)) for c, t in row.items()} for r, row in enumerate(m_terms)]
    Q = [prog.let(f"dr_Q{r}", total(t)) for r, t in enumerate(q_terms)]
    try:
        qdd = solve_reverse_ldl(prog, Mrows, Q, tag="dr_L")    # (2.23)
    except StructurallySingular as exc:
        raise singular_error(kin, exc.index) from None
    qdd = [prog.let(f"dr_qdd{k}", x) for k, x in enumerate(qdd)]
    return lagrangian_equations(kin, "direct", qdd, full_matrix(Mrows))
