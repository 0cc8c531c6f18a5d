"""The residual Jacobian by analytical recursive derivatives of inverse dynamics.

The derivatives module's variant "recursive" (generator/kinds/derivatives.py): the same kernel
outputs as the tangent, r = M(q) x - Q(t, q, q') and J = [dr/dq | dr/dq'] at fixed x, but the
inertial part of J (inertia, gravity, velocity terms) comes from one forward and one backward
pass in the ground frame and a few 6-vector inner products per pair of coordinates on a path,
after the analytical derivatives of the recursive Newton-Euler algorithm (Carpentier and
Mansard, RSS 2018), here derived for this package's joints: a joint is a sequence of elementary
motions (generator/mechanics/kinematics.py), each with a constant axis in the frame it moves, so every
coordinate is a 1-DOF joint of its own and a driven motion one with prescribed s(t).

Symbols (ground frame, Pluecker at the ground origin, [lin; ang]; x for motion, x* for force
cross products; body i, its coordinates c, e; e < c: e is on the path of c, before c):
  S_c          axis of coordinate c (a world twist of unit rate)
  Sd_c         dS_c/dt = v^-_c x S_c, v^- the velocity of the frame S_c is fixed in
  Sdd_c        d Sd_c/dt = a^-_c x S_c + v^-_c x Sd_c
  v_i, a_i     spatial velocity and acceleration (a_0 = [-g; 0], with the trial x)
  I_i, Id_i    spatial inertia and its time derivative v x* I - I v x = (0, h', Theta')
  f_i          I_i a_i + v_i x* I_i v_i (inertial force; the active forces apart)
  IC, IdC, HC, FC   sums over the subtree of i of I, Id, I v (momentum), f
Since d(anything rigidly attached beyond c)/dq_c = S_c x (.), with B y = Id y + y x* HC:
  dv/dq_e = S_e x v + Sd_e   da/dq_e = S_e x a + Sd_e x v + Sdd_e   dv/dq'_e = S_e
  da/dq'_e = S_e x v + 2 Sd_e
and r_c = S_c . FC_i, so (a_c = IC_i S_c, b_c = B_i^T S_c = Id S_c - S_c x* HC):
  e < c   dr_c/dq_e  = Sdd_e . a_c + Sd_e . b_c        dr_c/dq'_e = S_e . b_c + 2 Sd_e . a_c
  e <= c  dr_e/dq_c  = S_e . (S_c x* FC + IC Sdd_c + B Sd_c)
          dr_e/dq'_c = S_e . (B S_c + 2 IC Sd_c)          (composites of c's body)
The active forces (springs, dampers, force expressions) stay in the body frames of the residual
(generator/kinds/derivatives.py); their part of r is the kernel's output `A`, differentiated by the
forward-mode tangent of generator/ir/tangent.py and added into J (`KernelSpec.tangent_add`).

Two kernels: `recursive_jacobian` (r and J at a given x: the module's residual_jacobian) and
`recursive_solve_jacobian` (the module's qdd_jacobian in one call: M_ce = S_e . IC S_c and r at
x = 0, q'' by the unrolled tree-sparse L^T D L of M, J at x = q''; the factors are an output,
the module file solves -M^-1 J with them).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms.parts.common import forward_pass
from dynamica.generator.forms.parts.spatial import apply_CT, coordinate_layout, inertia_times, transfer_inertia
from dynamica.generator.ir.program import add, cross, dot, fold_vectors, matTvec, mul, neg, scale, sub, total
from dynamica.generator.mechanics.forces import active_forces

Z6 = [sp.Integer(0)] * 6


def crossm(a, b):
    """a x b of motion vectors [lin; ang]."""
    return add(cross(a[3:], b[:3]), cross(a[:3], b[3:])) + cross(a[3:], b[3:])


def crossf(a, f):
    """a x* f: motion a acting on force f."""
    return cross(a[3:], f[:3]) + add(cross(a[:3], f[:3]), cross(a[3:], f[3:]))


def axpy(y, s, x):
    return [total([a, mul(s, b)]) for a, b in zip(y, x)]


def to_world(R, r, col):
    """A motion vector of body frame (R ground -> body, origin r) at the ground origin."""
    w = matTvec(R, col[3:])
    return add(matTvec(R, col[:3]), cross(r, w)) + w


def inertia_rate(inert, v):
    """Id = v x* I - I v x of I = (m, h, Theta) (all at the ground origin): (h', Theta') with
    h' = w x h + m v_lin, Theta' = X + X^T - h v^T - v h^T + 2 (v . h) E, X = w~ Theta."""
    m, h, th = inert
    vl, w = v[:3], v[3:]
    hd = add(cross(w, h), scale(m, vl))
    X = [[total([mul(w[(r + 1) % 3], th[(r + 2) % 3, c]), neg(mul(w[(r + 2) % 3], th[(r + 1) % 3, c]))])
          for c in range(3)] for r in range(3)]
    vh = dot(vl, h)
    T = sp.zeros(3, 3)
    for r in range(3):
        for c in range(r, 3):
            terms = [X[r][c], X[c][r], neg(mul(h[r], vl[c])), neg(mul(vl[r], h[c]))]
            if r == c:
                terms.append(mul(2, vh))
            T[r, c] = T[c, r] = total(terms)
    return hd, T


def active_part(kin, fp):
    """The active forces' part of r (body frames): -(A_c . carried F_active_i + Q^gen_c)."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    F_active, gen, _ = active_forces(kin, fp)
    _, _, first = coordinate_layout(kin)
    terms = [None] + [[list(F_active[i])] for i in range(1, N + 1)]
    out = [None] * len(kin.coordinates)
    for i in range(N, 0, -1):
        Fa = fold_vectors(terms[i])
        if any(e != 0 for e in Fa):
            Fa = prog.let_vector(f"RDa{i}", Fa)
            k = topo.kappa[i]
            if k > 0:
                terms[k].append(apply_CT(kin.joints[i].G, kin.joints[i].rho, Fa))
        for c, col in enumerate(kin.joints[i].A):
            idx = first[i] + c
            out[idx] = prog.let(f"RDq{idx}", neg(total([dot(col, Fa), gen[kin.coordinates[idx]]])))
    return out


def _motions(kin, fp):
    """The x-free forward pass: per body its motions in order, (S, Sd, v^-, rate, coordinate or
    acceleration of a driven motion), and its velocity v; S, Sd per coordinate."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    n = len(kin.coordinates)
    _, _, first = coordinate_layout(kin)
    S, Sd = [None] * n, [None] * n
    v = [Z6] + [None] * N
    motions = [None] * (N + 1)
    for i in range(1, N + 1):            # the elementary motions of each joint in order
        jk, k = kin.joints[i], topo.kappa[i]
        R, r0 = fp.R0[i], fp.r0[i]
        order = [(p, ("d", col, rate, acc)) for col, rate, acc, p in jk.driven]
        order += [(c, ("q", first[i] + c)) for c in range(len(jk.A))]
        order.sort(key=lambda m: (m[0], m[1][0] == "q"))      # a driven motion before the coordinate at its place
        vc, motions[i] = v[k], []
        for _, m in order:
            if m[0] == "q":
                e = m[1]
                s = S[e] = prog.let_vector(f"RS{e}", to_world(R, r0, jk.A[e - first[i]]))
                sd = Sd[e] = prog.let_vector(f"RSd{e}", crossm(vc, s))
                motions[i].append((s, sd, vc, jk.qd[e - first[i]], e))
            else:
                _, col, rate, acc = m
                s = to_world(R, r0, col)
                motions[i].append((s, crossm(vc, s), vc, rate, ("accel", acc)))
            vc = axpy(vc, motions[i][-1][3], s)
        v[i] = prog.let_vector(f"Rv{i}", vc)
    return motions, S, Sd, v


def _accelerations(kin, motions, x, tag):
    """Sdd per coordinate and a per body with the accelerations x of the coordinates."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    Sdd = [None] * len(kin.coordinates)
    a = [[neg(e) for e in kin.gravity] + [sp.Integer(0)] * 3] + [None] * N
    for i in range(1, N + 1):
        ac = a[topo.kappa[i]]
        for s, sd, vm, rate, which in motions[i]:
            if isinstance(which, tuple):
                sdd = which[1]
            else:
                Sdd[which] = prog.let_vector(f"{tag}Sdd{which}", add(crossm(ac, s), crossm(vm, sd)))
                sdd = x[which]
            ac = axpy(axpy(ac, sdd, s), rate, sd)
        a[i] = prog.let_vector(f"{tag}a{i}", ac)
    return Sdd, a


def _inertias(kin, fp, v):
    """Per body (I, momentum I v) and per subtree (IC, IdC, HC) at the ground origin."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    acc, body = [None] * (N + 1), [None] * (N + 1)
    for i in range(1, N + 1):
        bi = kin.inertia[i]
        m_, h, th = transfer_inertia(prog, f"RX{i}", fp.R0[i], fp.r0[i], (bi.mass, bi.h, bi.theta))
        inert = (m_, prog.let_vector(f"RIh{i}", h), prog.let_symmetric(f"RIt{i}", th))
        hd, thd = inertia_rate(inert, v[i])
        mom = prog.let_vector(f"Rp{i}", inertia_times(inert, v[i]))
        body[i] = (inert, mom)
        acc[i] = [[inert[0]], [inert[1]], [inert[2]], [prog.let_vector(f"RJh{i}", hd)],
                  [prog.let_symmetric(f"RJt{i}", thd)], [mom]]
    comp = [None] * (N + 1)
    for i in range(N, 0, -1):
        ms, hs, ts, hds, tds, ps = acc[i]
        m_ = prog.let(f"RCm{i}", sp.Add(*ms))
        h = prog.let_vector(f"RCh{i}", fold_vectors(hs))
        th = prog.let_symmetric(f"RCt{i}", sp.Matrix(3, 3, lambda r, c: sp.Add(*[t[r, c] for t in ts])))
        hd = prog.let_vector(f"RCdh{i}", fold_vectors(hds))
        thd = prog.let_symmetric(f"RCdt{i}", sp.Matrix(3, 3, lambda r, c: sp.Add(*[t[r, c] for t in tds])))
        pc = prog.let_vector(f"RCp{i}", fold_vectors(ps))
        comp[i] = ((m_, h, th), (sp.Integer(0), hd, thd), pc)
        k = topo.kappa[i]
        if k > 0:
            for part, val in zip(acc[k], (m_, h, th, hd, thd, pc)):
                part.append(val)
    return body, comp


def _forces(kin, body, v, a, tag):
    """FC per body: the subtree sum of f = I a + v x* I v."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    acc = [None] + [[add(inertia_times(body[i][0], a[i]), crossf(v[i], body[i][1]))] for i in range(1, N + 1)]
    FC = [None] * (N + 1)
    for i in range(N, 0, -1):
        FC[i] = prog.let_vector(f"{tag}Cf{i}", fold_vectors(acc[i]))
        if topo.kappa[i] > 0:
            acc[topo.kappa[i]].append(FC[i])
    return FC


def _jacobian(kin, S, Sd, Sdd, comp, FC, tag, al=None):
    """The inertial part of [dr/dq | dr/dq'] (n x 2n, nested lists); al: the a_c if bound."""
    prog, topo = kin.program, kin.topo
    n = len(kin.coordinates)
    owner, _, first = coordinate_layout(kin)
    J = [[sp.Integer(0)] * (2 * n) for _ in range(n)]
    al, be = list(al or [None] * n), [None] * n
    for c in range(n):                   # per coordinate: a_c, b_c and the columns of c
        (IC, IdC, HC), F = comp[owner[c]], FC[owner[c]]
        s = S[c]
        if al[c] is None:
            al[c] = prog.let_vector(f"RDal{c}", inertia_times(IC, s))
        ids = prog.let_vector(f"RDis{c}", inertia_times(IdC, s))
        sh = crossf(s, HC)
        be[c] = prog.let_vector(f"RDbe{c}", sub(ids, sh))
        g = prog.let_vector(f"{tag}Dg{c}", fold_vectors([crossf(s, F), inertia_times(IC, Sdd[c]),
                                                         inertia_times(IdC, Sd[c]), crossf(Sd[c], HC)]))
        kk = prog.let_vector(f"RDk{c}", fold_vectors([ids, sh, scale(2, inertia_times(IC, Sd[c]))]))
        for e in _before(kin, topo, owner, first, c) + [c]:
            J[e][c] = dot(S[e], g)
            J[e][n + c] = dot(S[e], kk)
    for c in range(n):
        for e in _before(kin, topo, owner, first, c):
            J[c][e] = total([dot(Sdd[e], al[c]), dot(Sd[e], be[c])])
            J[c][n + e] = total([dot(S[e], be[c]), mul(2, dot(Sd[e], al[c]))])
    return J, al


def _passes_at(kin, x):
    """The recursions at q'' = x (generated in this order: forward pass, active part, motions,
    accelerations, inertias, forces, r): (r, r_act, owner, first, S, Sd, Sdd, comp, FC, armature),
    r = S . FC + r_active (+ armature x)."""
    prog = kin.program
    fp = forward_pass(kin)
    r_act = active_part(kin, fp)
    owner, _, first = coordinate_layout(kin)
    motions, S, Sd, v = _motions(kin, fp)
    Sdd, a = _accelerations(kin, motions, x, "R")
    body, comp = _inertias(kin, fp, v)
    FC = _forces(kin, body, v, a, "R")
    arm = _armature(kin)                                        # + diag(armature) x
    r = [prog.let(f"RDr{c}", total([dot(S[c], FC[owner[c]]), r_act[c]] + ([mul(arm[c], x[c])] if c in arm else [])))
         for c in range(len(S))]
    return r, r_act, owner, first, S, Sd, Sdd, comp, FC, arm


def _passes_at_rest(kin):
    """The recursions at q'' = 0 (inertias before accelerations): (r0, r_act, owner, first,
    motions, S, Sd, v, body, comp), r0 = r(q'' = 0) = S . FC0 + r_active."""
    n = len(kin.coordinates)
    fp = forward_pass(kin)
    r_act = active_part(kin, fp)
    owner, _, first = coordinate_layout(kin)
    motions, S, Sd, v = _motions(kin, fp)
    body, comp = _inertias(kin, fp, v)
    _, a0 = _accelerations(kin, motions, [sp.Integer(0)] * n, "R0")
    FC0 = _forces(kin, body, v, a0, "R0")
    r0 = [total([dot(S[c], FC0[owner[c]]), r_act[c]]) for c in range(n)]
    return r0, r_act, owner, first, motions, S, Sd, v, body, comp


def recursive_jacobian(kin, x):
    """(r, J_inertial, r_active): r (n), the inertial part of [dr/dq | dr/dq'] (row-major n x 2n)
    by the recursions of the module docstring, and the active part of r (n) whose tangent the
    kernel adds to J."""
    r, r_act, _, _, S, Sd, Sdd, comp, FC, _ = _passes_at(kin, x)
    J, _ = _jacobian(kin, S, Sd, Sdd, comp, FC, "R")
    return r, [x for row in J for x in row], r_act


def recursive_solve_jacobian(kin):
    """(q'', F, J_inertial, r_active) in one kernel: the passes at x = 0 give r(0) = -Q and M
    (M_ce = S_e . IC S_c), M = L^T D L (forms/cholesky.py reverse_ldl, tree-sparse, unrolled)
    gives q'' = -M^-1 r(0), and the accelerations and forces again at x = q'' give J as
    `recursive_jacobian` (the kinematics and inertias are shared). F (n x n, row-major): L below
    the diagonal, 1/d_i on it, for the 2n solves of the module file (templates/native/dynamica_linalg.h
    dyn_ldl_solve). Raises cholesky.StructurallySingular when a pivot folds to zero."""
    from dynamica.generator.forms.parts.cholesky import reverse_ldl
    prog = kin.program
    n = len(kin.coordinates)
    r0, r_act, owner, first, motions, S, Sd, v, body, comp = _passes_at_rest(kin)
    Mrows = [dict() for _ in range(n)]
    arm = _armature(kin)
    al = [prog.let_vector(f"RDal{c}", inertia_times(comp[owner[c]][0], S[c])) for c in range(n)]
    for c in range(n):
        for e in _before(kin, kin.topo, owner, first, c) + [c]:
            Mrows[c][e] = prog.let(f"RM{c}_{e}", dot(S[e], al[c]) + (arm.get(c, 0) if e == c else 0))
    ldl = reverse_ldl(prog, Mrows, "RL")
    qdd = ldl.solve(prog, [neg(e) for e in r0], "RQ")
    F = [ldl.dinv[r] if r == c else ldl.L[r].get(c, sp.Integer(0)) if c < r else sp.Integer(0)
         for r in range(n) for c in range(n)]
    Sdd, a = _accelerations(kin, motions, qdd, "R")
    FC = _forces(kin, body, v, a, "R")
    J, _ = _jacobian(kin, S, Sd, Sdd, comp, FC, "R", al)
    return qdd, F, [x for row in J for x in row], r_act


def _armature(kin) -> dict:
    """coordinate index -> its armature (forces.armature_terms), added to M's diagonal."""
    from dynamica.generator.mechanics.forces import armature_terms
    return {kin.coordinates.index(c): a for c, a in armature_terms(kin).items()}


def _before(kin, topo, owner, first, c):
    """The coordinates e < c: those of the strict ancestors of c's body and of its joint before c."""
    i = owner[c]
    out = list(range(first[i], c))
    k = topo.kappa[i]
    while k > 0:
        out = list(range(first[k], first[k] + len(kin.joints[k].A))) + out if kin.joints[k].A else out
        k = topo.kappa[k]
    return out


def world_mass_matrix(kin):
    """M row-major by the same ground-frame quantities: M_ce = S_e . IC_i S_c for e <= c on the
    path of c (i the body of c), IC_i the subtree's inertia at the ground origin."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    n = len(kin.coordinates)
    fp = forward_pass(kin)
    owner, _, first = coordinate_layout(kin)
    S = [None] * n
    acc = [None] + [None] * N
    for i in range(1, N + 1):
        jk = kin.joints[i]
        for c in range(len(jk.A)):
            S[first[i] + c] = prog.let_vector(f"WS{first[i] + c}", to_world(fp.R0[i], fp.r0[i], jk.A[c]))
        bi = kin.inertia[i]
        m_, h, th = transfer_inertia(prog, f"WX{i}", fp.R0[i], fp.r0[i], (bi.mass, bi.h, bi.theta))
        acc[i] = [[m_], [h], [th]]
    IC = [None] * (N + 1)
    for i in range(N, 0, -1):
        ms, hs, ts = acc[i]
        IC[i] = (prog.let(f"WCm{i}", sp.Add(*ms)), prog.let_vector(f"WCh{i}", fold_vectors(hs)),
                 prog.let_symmetric(f"WCt{i}", sp.Matrix(3, 3, lambda r, c: sp.Add(*[t[r, c] for t in ts]))))
        k = topo.kappa[i]
        if k > 0:
            for part, val in zip(acc[k], IC[i]):
                part.append(val)
    M = [[sp.Integer(0)] * n for _ in range(n)]
    for c in range(n):
        al = prog.let_vector(f"WAl{c}", inertia_times(IC[owner[c]], S[c]))
        for e in _before(kin, topo, owner, first, c) + [c]:
            M[c][e] = M[e][c] = prog.let(f"WM{c}_{e}", dot(S[e], al))
    return [x for row in M for x in row]


def pair_terms(kin, x):
    """The variant "recursive_loops": the per-coordinate vectors of the module docstring, generated
    (O(n) statements), the inner products of the pairs of coordinates left to a loop of the module
    file (templates/native/dynamica_linalg.h dyn_rl_*). Returns (r, V, D, r_active, pred): r (n);
    V (42 n) the blocks S, Sd, Sdd, a_c = IC S_c, b_c, g_c = S_c x* FC + IC Sdd_c + B Sd_c and
    k_c = B S_c + 2 IC Sd_c of every coordinate, 6 each; D (n) the armature on M's diagonal;
    pred (n) the coordinate before each on its path (-1 at the root), so that e < c on the path
    of c are pred[c], pred[pred[c]], ...; then (with d = dot)
        dr_e/dq_c = d(S_e, g_c), dr_e/dq'_c = d(S_e, k_c)                  e <= c
        dr_c/dq_e = d(Sdd_e, a_c) + d(Sd_e, b_c), dr_c/dq'_e = d(S_e, b_c) + 2 d(Sd_e, a_c)   e < c
        M_ce = M_ec = d(S_e, a_c) (+ D_c on the diagonal)."""
    prog = kin.program
    n = len(kin.coordinates)
    r, r_act, owner, first, S, Sd, Sdd, comp, FC, arm = _passes_at(kin, x)
    al, be, g, kk = [], [], [], []
    for c in range(n):
        (IC, IdC, HC), F = comp[owner[c]], FC[owner[c]]
        s = S[c]
        al.append(prog.let_vector(f"RDal{c}", inertia_times(IC, s)))
        ids = prog.let_vector(f"RDis{c}", inertia_times(IdC, s))
        sh = crossf(s, HC)
        be.append(prog.let_vector(f"RDbe{c}", sub(ids, sh)))
        g.append(fold_vectors([crossf(s, F), inertia_times(IC, Sdd[c]), inertia_times(IdC, Sd[c]),
                               crossf(Sd[c], HC)]))
        kk.append(fold_vectors([ids, sh, scale(2, inertia_times(IC, Sd[c]))]))
    V = [e for block in (S, Sd, Sdd, al, be, g, kk) for vec in block for e in vec]
    D = [arm.get(c, sp.Integer(0)) for c in range(n)]
    return r, V, D, r_act, _predecessors(kin, owner, first)


def pair_mass_terms(kin):
    """For M and q'' of the variant "recursive_loops": (r0, SA, D): r at x = 0 (n), SA (12 n) the
    blocks S and a_c = IC S_c of every coordinate, D (n) the armature; M_ce = d(S_e, a_c) (+ D_c)."""
    prog = kin.program
    n = len(kin.coordinates)
    r0, _, owner, _, _, S, _, _, _, comp = _passes_at_rest(kin)
    al = [prog.let_vector(f"RDal{c}", inertia_times(comp[owner[c]][0], S[c])) for c in range(n)]
    arm = _armature(kin)
    return r0, [e for block in (S, al) for vec in block for e in vec], [arm.get(c, sp.Integer(0)) for c in range(n)]


def _predecessors(kin, owner, first):
    """Per coordinate the one before it on its path (-1 at the root)."""
    out = []
    for c in range(len(kin.coordinates)):
        before = _before(kin, kin.topo, owner, first, c)
        out.append(before[-1] if before else -1)
    return out
