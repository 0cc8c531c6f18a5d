"""Lagrange I, LGR (dissertation 1.4.3, 2.2.3: (1.42)-(1.46), (2.24)-(2.26)).

The joint reactions are R = Z lambda (1.42); eliminating the accelerations w of the bodies
from (1.43) leaves H lambda = R (1.46) with H = Z^T S M^-1 S^T Z, R = Z^T (w' - S M^-1 F').
Symbol table (body i, frame i, parent k = kappa_i; m_i = 6 - n_i):
  Z_i      6 x m_i orthogonal basis of joint i, Z_i^T A_i = 0                      (1.6), (1.8)
  F'_i     F^c_i + F_i (active and velocity-dependent inertial forces)             (1.36)
           generalized forces Q_i of joint i (springs, `generalized_force`) enter as
           the pair F^J_i = A_i (A_i^T A_i)^-1 Q_i on body i, -C_i^T F^J_i on kappa_i
           (B^T maps the pair to Q_i on q_i and to zero elsewhere)
  w'_i     w^c_i + w_hat^r_i; the ground's acceleration w_0 = [-g; 0] is known, so
           C_i w_0 joins w'_i of the bodies on the ground                          (1.38)
  a_i      M_i^-1 F'_i;  Y_i = M_i^-1 Z_i;  X_i = C_i^T Z_i;  U_i = M_k^-1 X_i
  H_ii     Z_i^T Y_i + X_i^T U_i;  H_ik = -X_i^T Y_k;  H_ij = X_i^T U_j (siblings)  (2.24)
  R_i      Z_i^T (w'_i - a_i) + X_i^T a_k                                          (2.25)
then lambda by the reverse L^T D L (2.26), w_i = a_i + Y_i lambda_i - sum_{j in S_i} U_j
lambda_j (1.45) and q''_i = (A_i^T A_i)^-1 A_i^T (w_i - C_i w_k - w'_i) (1.44). Blocks of
bodies on the ground do not couple (M_0^-1 = 0). M_i^-1 is applied through the centre of
mass: M_i^-1 [f; tau] = [f/m + c x alpha; alpha], alpha = Theta_c^-1 (tau - c x f), so every
body needs m_i != 0 and Theta_c nonsingular (theorem 2.1 assumes m_i > 0 and Theta_c positive
definite; a negative mass or inertia, e.g. a cut-out welded to a body, only makes H
indefinite, which the root-free factorization takes); a literally massless body is a
ModelError here, one massless through a parameter's value a ModelError at the defaults (here and
when the module is loaded) and on every override (generator/mechanics/body_inertias.py).

(2.26) is the block Cholesky of H in reverse order, whose factor keeps the pattern of H
(theorem 2.6); cholesky.solve_reverse_ldl (the same elimination, root-free) applied to the
scalar lower triangle of H
with its structural zeros performs exactly these operations (its sums run over the nonzero
L_ki, i.e. k in S_i u S_kappa_i), so it is reused.

Z_i (1.8), computed symbolically from A_i: Gauss-Jordan elimination on the columns of A_i
turns n_i independent rows (A^H) into the identity and the other m_i rows into
A^3 (A^H)^-1; then Z_i = [-(A^3 (A^H)^-1)^T; E] (rows in the original order), i.e. (1.8)
with Z^H = E. When A_i is constant in the body frame (a single rotation or translation,
with constant transforms around it) this folds to numbers at generation time (for an axis
along a coordinate axis, Z_i is the other five unit vectors). When A_i depends on q (Cardan,
spherical and general multi-transform joints) or t, Z_i is the same formula in the symbols of
A_i; the rows A^H are chosen at generation time by partial pivoting on numeric values of A_i
at q = 0 and three random states (largest smallest modulus), so the basis is regular there.
As with any fixed choice of A^H, it degenerates where det A^H = 0 (e.g. a Cardan joint about
y then x, body frame: at the second angle = +-90 deg); this is a singularity of the basis
only, not of the mechanism (the accelerations do not depend on the choice of Z_i).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from dynamica.errors import ModelError, Problem
from dynamica.generator.cost.flops import F, Formula, cube_sq_lin, nonroot
from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.generator.forms.parts.cholesky import solve_reverse_ldl
from dynamica.generator.forms.parts.common import forward_pass, lagrangian_equations
from dynamica.generator.forms.parts.spatial import apply_C, apply_CT, coordinate_layout, mass_matrix
from dynamica.generator.ir.program import (
    add,
    cross,
    dot,
    matvec,
    mul,
    neg,
    scale,
    sub,
    total,
)
from dynamica.generator.mechanics.body_inertias import BodyInertiaCheck
from dynamica.generator.mechanics.forces import active_forces
from dynamica.generator.mechanics.kinematics import numeric_values
from dynamica.generator.spec import expr as ex

ONE, ZERO = sp.S.One, sp.S.Zero


def _unit(r):
    return [ONE if k == r else ZERO for k in range(6)]


def orthogonal_basis(prog, tag, A, samples):
    """Z (list of m = 6 - n columns) with Z^T A = 0 by (1.8), Z^H = E; see the module docstring.

    A: n columns (6-lists); samples: numeric arrays (6, n) of A used to choose the pivots.
    """
    n = len(A)
    W = [list(col) for col in A]
    Wn = np.array(samples, dtype=float).reshape(-1, 6, n) if n else None
    piv = []
    for c in range(n):
        free = [r for r in range(6) if r not in piv]
        mags = np.abs(Wn[:, :, c])
        r = max(free, key=lambda r: (mags[:, r].min(), mags[1:, r].min() if len(mags) > 1 else 0, -r))
        inv = prog.let(f"{tag}_p{c}", 1 / W[c][r])
        W[c] = [ONE if k == r else ZERO if k in piv else mul(inv, W[c][k]) for k in range(6)]
        W[c] = prog.let_vector(f"{tag}_{c}_{c}", W[c])
        Wn[:, :, c] /= Wn[:, r, c][:, None]
        for c2 in range(n):
            f = W[c2][r]
            if c2 == c or f == 0:
                continue
            W[c2] = prog.let_vector(f"{tag}_{c}_{c2}", [ZERO if k == r else total([W[c2][k], neg(mul(f, W[c][k]))])
                                                      for k in range(6)])
            Wn[:, :, c2] -= Wn[:, r, c2][:, None] * Wn[:, :, c]
        piv.append(r)
    Z = []
    for j in (r for r in range(6) if r not in piv):         # Z^3 = -(A^3 (A^H)^-1)^T
        z = _unit(j)
        for c, r in enumerate(piv):
            z[r] = neg(W[c][j])
        Z.append(z)
    return Z


def _solve_small(prog, tag, K, b):
    """K x = b for a small symmetric positive definite K = A^T A (lists), unrolled elimination."""
    n = len(b)
    K, b = [list(row) for row in K], list(b)
    inv = [None] * n
    for p in range(n):
        inv[p] = prog.let(f"{tag}_i{p}", 1 / K[p][p])
        for r in range(p + 1, n):
            f = prog.let(f"{tag}_f{p}_{r}", mul(K[r][p], inv[p]))
            if f == 0:
                continue
            for c in range(p + 1, n):
                K[r][c] = prog.let(f"{tag}_K{p}_{r}{c}", total([K[r][c], neg(mul(f, K[p][c]))]))
            b[r] = prog.let(f"{tag}_b{p}_{r}", total([b[r], neg(mul(f, b[p]))]))
    x = [None] * n
    for p in range(n - 1, -1, -1):
        x[p] = mul(total([b[p]] + [neg(mul(K[p][c], x[c])) for c in range(p + 1, n)]), inv[p])
    return x


class InverseInertia:
    """x -> M_i^-1 x through the centre of mass c: [f/m + c x alpha; alpha], alpha = J (tau - c x f)."""

    def __init__(self, prog, i, m, com, theta_c):
        th = prog.let_symmetric(f"lg_Tc{i}", theta_c)
        a, b, c, d, e, f = th[0, 0], th[1, 1], th[2, 2], th[0, 1], th[1, 2], th[0, 2]
        cof = sp.Matrix([[b * c - e * e, e * f - d * c, d * e - b * f],
                         [0, a * c - f * f, d * f - a * e], [0, 0, a * b - d * d]])
        det = prog.let(f"lg_det{i}", a * cof[0, 0] + d * cof[0, 1] + f * cof[0, 2])
        self.singular = det == 0 or m == 0
        if self.singular:
            return
        idet = prog.let(f"lg_idet{i}", 1 / det)
        self.J = prog.let_symmetric(f"lg_J{i}", sp.Matrix(3, 3, lambda r, k: mul(idet, cof[min(r, k), max(r, k)])))
        self.im = prog.let(f"lg_im{i}", 1 / m)
        self.c = prog.let_vector(f"lg_c{i}", com)
        self.det, self.m = det, m

    def __call__(self, x):
        al = matvec(self.J, sub(x[3:], cross(self.c, x[:3])))
        return add(scale(self.im, x[:3]), cross(self.c, al)) + al


def inverse_inertias(kin):
    """M_i^-1 of every body (after (1.36)); literally singular M_i is a ModelError."""
    spec, topo, prog = kin.spec, kin.topo, kin.program
    scope = spec.scope(time_allowed=True)
    by_name = {b.name: b for b in spec.bodies}
    out, problems = [None], []
    for i in range(1, topo.n_bodies + 1):
        body = by_name[topo.names[i]]
        ixx, iyy, izz, ixy, iyz, ixz = [ex.parse(x, scope) for x in body.inertia]
        th = sp.Matrix([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        mi = InverseInertia(prog, i, kin.inertia[i].mass, kin.inertia[i].com, th)
        if mi.singular:
            problems.append(Problem(f"{body.path}.mass", f"the form `lagrange1` (LGR) needs M_i^-1 (2.24): body "
                                    f"`{body.name}` has zero mass or a singular inertia about its centre of mass; "
                                    "use composite, articulated or ltdl"))
        out.append(mi)
    if problems:
        raise ModelError(spec.file, problems)
    return out


def _samples(kin, n_random=3, seed=20240917):
    """Values of the kinematic intermediates at q = 0 and at random states (default parameters)."""
    rng = np.random.default_rng(seed)
    out = []
    for s in range(n_random + 1):
        subs = dict(kin.spec.defaults())
        subs[ex.T] = 0.37 if s == 0 else rng.uniform(0.0, 1.0)
        for jk in kin.joints[1:]:
            for q, qd in zip(jk.q, jk.qd):
                subs[q], subs[qd] = (0.0 if s == 0 else rng.uniform(-1.0, 1.0)), rng.uniform(-1.0, 1.0)
        out.append(numeric_values(kin.program, subs))
    return out


@dataclass
class LagrangeSystem:
    """H lambda = R (1.46) of a tree and the pieces its solution needs."""
    Z: list          # per body: columns of Z_i
    offset: list     # per body: index of its first multiplier
    H: list          # lower triangle rows {col: expr}, (2.24)
    R: list          # (2.25)
    F_prime: list    # F'_i, joint generalized forces included
    a: list          # M_i^-1 F'_i
    Y: list          # M_i^-1 Z_i
    U: list          # M_k^-1 C_i^T Z_i
    w_prime: list    # w'_i (gravity included for bodies on the ground)
    fp: object       # common.ForwardPass


def _joint_forces(kin, gen, Fp):
    """The generalized forces of each joint i as a pair F^J on i and -C_i^T F^J on kappa_i with
    A_i^T F^J = Q_i, F^J = A_i (A_i^T A_i)^-1 Q_i, added to F'."""
    prog, topo = kin.program, kin.topo
    for i in range(1, topo.n_bodies + 1):
        jk, k = kin.joints[i], topo.kappa[i]
        Qi = [gen[c] for c in jk.coordinates]
        if all(x == 0 for x in Qi):
            continue
        x = _solve_small(prog, f"lg_G{i}", [[dot(ar, ac) for ac in jk.A] for ar in jk.A], Qi)
        FJ = prog.let_vector(f"lg_FJ{i}", [total([mul(xc, col[r]) for xc, col in zip(x, jk.A)]) for r in range(6)])
        Fp[i] = add(Fp[i], FJ)
        if k:
            Fp[k] = sub(Fp[k], apply_CT(jk.G, jk.rho, FJ))


def _h_and_r(prog, topo, nl, offset, Z, Y, X, U, wp, a):
    """H (2.24) and R (2.25), block rows of body i: columns kappa_i, earlier siblings, i."""
    H = [{} for _ in range(nl)]
    R = [None] * nl
    for i in range(1, topo.n_bodies + 1):
        k, oi = topo.kappa[i], offset[i]
        sibs = [j for j in topo.children[k] if j < i] if k else []
        for r in range(len(Z[i])):
            row = H[oi + r]
            for c in range(r + 1):
                row[oi + c] = prog.let(f"lg_H{oi + r}_{oi + c}", total(
                    [dot(Z[i][r], Y[i][c])] + ([dot(X[i][r], U[i][c])] if k else [])))
            if k:
                for c in range(len(Z[k])):
                    row[offset[k] + c] = prog.let(f"lg_H{oi + r}_{offset[k] + c}", neg(dot(X[i][r], Y[k][c])))
            for j in sibs:
                for c in range(len(Z[j])):
                    row[offset[j] + c] = prog.let(f"lg_H{oi + r}_{offset[j] + c}", dot(X[i][r], U[j][c]))
            R[oi + r] = prog.let(f"lg_R{oi + r}", total([dot(Z[i][r], sub(wp[i], a[i]))]
                                                         + ([dot(X[i][r], a[k])] if k else [])))
    return H, R


def lagrange1_system(kin) -> LagrangeSystem:
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    Minv = inverse_inertias(kin)
    constant_A = all(sp.sympify(x).is_number for jk in kin.joints[1:] for col in jk.A for x in col)
    samples = _samples(kin, 0 if constant_A else 3)
    BodyInertiaCheck(kin.spec, "lagrange1").check_defaults()       # and the module's loader on overrides
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    g0 = [-x for x in kin.gravity] + [ZERO] * 3                 # w_0 of the ground
    Z, offset, Fp, wp = [None], [None], [None], [None]
    a, Y, X, U = [None], [None], [None], [None]
    nl = 0
    for i in range(1, N + 1):
        k, jk, bi = topo.kappa[i], kin.joints[i], kin.inertia[i]
        An = [[[float(sp.sympify(col[r]).xreplace(v)) for col in jk.A] for r in range(6)] for v in samples]
        Z.append(orthogonal_basis(prog, f"lg_Zw{i}", jk.A, An))             # (1.8)
        offset.append(nl)
        nl += len(Z[i])
        # F'_i = F^c_i + F_i (1.36)
        w = fp.v[i][3:]
        fc = [-x for x in cross(w, cross(w, bi.h))] + [-x for x in cross(w, matvec(bi.theta, w))]
        Fp.append(add(fc, F_active[i]))
        # w'_i = w^c_i + w_hat^r_i (1.12), (1.38); w^c_i with the parent's omega in frame i
        vr, rp = fp.vr[i], fp.rho_p[i]
        if k > 0:
            wk = sub(w, vr[3:])
            wc = add(cross(wk, cross(wk, rp)), scale(2, cross(wk, vr[:3]))) + cross(wk, vr[3:])
        else:
            wc = apply_C(jk.G, rp, g0)
        wp.append(prog.let_vector(f"lg_wp{i}", add(wc, jk.wr_hat)))
    _joint_forces(kin, gen, Fp)
    for i in range(1, N + 1):
        k, jk = topo.kappa[i], kin.joints[i]
        Fp[i] = prog.let_vector(f"lg_Fp{i}", Fp[i])
        a.append(prog.let_vector(f"lg_a{i}", Minv[i](Fp[i])))
        Y.append([prog.let_vector(f"lg_Y{i}_{c}", Minv[i](z)) for c, z in enumerate(Z[i])])
        X.append([prog.let_vector(f"lg_X{i}_{c}", apply_CT(jk.G, jk.rho, z)) for c, z in enumerate(Z[i])] if k else [])
        U.append([prog.let_vector(f"lg_U{i}_{c}", Minv[k](x)) for c, x in enumerate(X[i])])
    H, R = _h_and_r(prog, topo, nl, offset, Z, Y, X, U, wp, a)
    return LagrangeSystem(Z=Z, offset=offset, H=H, R=R, F_prime=Fp, a=a, Y=Y, U=U, w_prime=wp, fp=fp)

def flops(c):
    """(4.3): sum_i [mu^3/3 + 17 mu^2/2 + 361 mu/6 + 420] - sum_{kappa_i != 0} [m^3/3 + 5 m^2/2 + m/6] - 48 R."""
    s = sum(cube_sq_lin(x, F(17, 2), F(361, 6), 420) for x in c.mu)
    s -= sum(cube_sq_lin(c.m[i], F(5, 2), F(1, 6), 0) for i in nonroot(c))
    return s - 48 * c.R


@register("lagrange1", "LGR", cost=Formula("(4.3)", flops, candidate=True),
          pivots_of_m=False,                                      # it factors H (1.46), not M
          inverts_body_inertias=("(2.24)", "composite, articulated or ltdl"))
def lagrange1(kin) -> EquationsOfMotion:
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    sysm = lagrange1_system(kin)
    lam = solve_reverse_ldl(prog, sysm.H, sysm.R, tag="lg_L")        # (2.26)
    lam = [prog.let(f"lg_lam{k}", x) for k, x in enumerate(lam)]
    _, _, first = coordinate_layout(kin)
    qdd = [None] * len(kin.coordinates)
    w = [[ZERO] * 6]                                                     # w_0 is in w' already
    for i in range(1, N + 1):
        # w_i = M_i^-1 (F'_i + (S^T Z lambda)_i) (1.45)
        terms = [list(sysm.a[i])]
        terms += [scale(lam[sysm.offset[i] + c], y) for c, y in enumerate(sysm.Y[i])]
        terms += [scale(neg(lam[sysm.offset[j] + c]), u) for j in topo.children[i] for c, u in enumerate(sysm.U[j])]
        w.append(prog.let_vector(f"lg_w{i}", [total(t) for t in zip(*terms)]))
    for i in range(1, N + 1):
        jk = kin.joints[i]
        if not jk.A:
            continue
        # q''_i = (A_i^T A_i)^-1 A_i^T (S w - w')_i (1.44)
        y = sub(sub(w[i], apply_C(jk.G, sysm.fp.rho_p[i], w[topo.kappa[i]])), sysm.w_prime[i])
        K = [[dot(ar, ac) for ac in jk.A] for ar in jk.A]
        x = _solve_small(prog, f"lg_N{i}", K, [dot(ar, y) for ar in jk.A])
        for c, v in enumerate(x):
            qdd[first[i] + c] = prog.let(f"lg_qdd{first[i] + c}", v)
    return lagrangian_equations(kin, "lagrange1", qdd, mass_matrix(kin))
