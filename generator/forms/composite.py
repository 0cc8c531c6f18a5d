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

import sympy as sp

from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.errors import ModelError, Problem
from dynamica.generator.forms.cholesky import StructurallySingular, solve_reverse_ldl
from dynamica.generator.forms.common import active_forces, apply_CT, bias_forces, forward_pass, inertia_times
from dynamica.generator.model import negative_bodies
from dynamica.generator.program import (add, dot, fold_add, fold_matrices, fold_vectors, matTvec, mul, neg,
                                       scale, total)


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
    prog, topo = kin.program, kin.topo
    owner, local, first = coordinate_layout(kin)
    n = len(owner)
    Mrows = [dict() for _ in range(n)]
    for i in range(1, topo.n_bodies + 1):
        jk = kin.joints[i]
        if not jk.A:
            continue
        cols = [prog.let_vector(f"F{tag}{i}_{c}", inertia_times(Mstar[i], a)) for c, a in enumerate(jk.A)]
        for c in range(len(jk.A)):
            for c2 in range(c + 1):
                Mrows[first[i] + c][first[i] + c2] = prog.let(f"{tag}{first[i] + c}_{first[i] + c2}",
                                                              dot(jk.A[c2], cols[c]))
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


def singular_error(kin, index):
    """A pivot of the tree-ordered L^T D L that folds to zero: coordinate `index`, with the
    coordinates before it locked, moves no mass (singular M, unless negative inertias cancel)."""
    c = kin.coordinates[index]
    bodies = negative_bodies(kin.spec)
    if not bodies:
        text = (f"the mass matrix is singular at every state: coordinate `{c}` moves no mass "
                "(a massless body at the end of a chain, or an axis through a point mass?)")
    else:
        text = (f"with the coordinates before it locked, coordinate `{c}` moves no mass at any state: the "
                f"negative mass or inertia of {', '.join(f'`{b}`' for b in bodies)} cancels the others along it, "
                "and the L^T D L factorization (from the last coordinate to the first) meets a zero pivot "
                "there, even if the mass matrix is regular; the form `lagrange1` factors another matrix")
    return ModelError(kin.spec.file, [Problem("bodies", text)])


@register("composite", "CBM")
def composite(kin) -> EquationsOfMotion:
    prog = kin.program
    fp = forward_pass(kin)
    F_active, gen = active_forces(kin, fp)
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
    qs = tuple(q for jk in kin.joints[1:] for q in jk.q)
    qds = tuple(q for jk in kin.joints[1:] for q in jk.qd)
    return EquationsOfMotion(form="composite", kind="lagrangian", program=prog,
                             coordinates=kin.coordinates, q=qs, qd=qds,
                             outputs={"qdd": qdd, "mass_matrix": full_matrix(Mrows)})
