"""hamilton-lagrange1 (HLGR): orthogonal projection of (1.54), dissertation 1.5.3, (1.60)-(1.67).

The momentum p* of every body is split along the joint basis and its orthogonal complement,
p*_i = A_i mu_i + Z_i lambda_i (1.61), with mu_i = (A_i^T A_i)^{-1} p_i (1.62) from the
state, and lambda (the Lagrange multipliers of the kinematic constraints) from (1.65):

  Z^T S M^{-1} S^T Z lambda = Z^T [v_hat^r - S M^{-1} S^T A mu]                      (1.65)

(the matrix is that of Lagrange I, (1.46), (2.24)-(2.26)). Then
  v   = M^{-1} S^T p*,  i.e. v_i = M_i^{-1} (p*_i - sum_{j in S_i} C_j^T p*_j)     (1.64)
  q'_i = (A_i^T A_i)^{-1} A_i^T (v_i - C_i v_k - v_hat^r_i)                         (1.60), (1.67)
  pm'_i = (A'_i^T - A_i^T Omega_i) p*_i + A_i^T F*_i                                (1.67)

Symbol table:
  Z_i      6 x (6 - n_i) basis of the complement of A_i, Z_i^T A_i = 0, built by (1.8):
           n_i independent rows A^H of A_i, Z = [-(A^3 (A^H)^{-1})^T; E] (Z^H = E). For a
           constant A_i (revolute, prismatic) Z_i is exact numbers; for a basis that turns
           with q_i the rows are chosen where A^H is best conditioned at random states, and
           the form is singular where det A^H(q) = 0 (e.g. a gimbal angle of 90 degrees for
           some universal joints), a limitation of (1.8) with a fixed Z^H.
  H        Z^T S M^{-1} S^T Z, assembled per body b from the columns of S^T Z that touch b
           (Z_b, and -C_j^T Z_j of its children j): H += x_a^T M_b^{-1} x_b; with regular
           numbering its reverse L^T D L (2.23) has no fill-in (a body couples only to its
           parent, children and siblings, which form a clique once it is eliminated)
  M_i^{-1} [x1/m + r_c x y; y], y = Theta_c^{-1} (x2 - r_c x x1) (Theta_c about the centre of
           mass): every body needs M_i invertible (m_i != 0, Theta_c regular); a negative mass or
           inertia (a cut-out) only makes H indefinite, which the root-free L^T D L takes.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp

from dynamica.errors import ModelError, Problem
from dynamica.generator.cost.flops import NO_FORMULA
from dynamica.generator.forms import register
from dynamica.generator.forms.hamiltonian import Z6, Hamiltonian, small_inverse
from dynamica.generator.forms.parts.cholesky import StructurallySingular, solve_reverse_ldl
from dynamica.generator.forms.parts.spatial import apply_C, apply_CT
from dynamica.generator.ir.program import add, cross, dot, mul, neg, scale, sub, total
from dynamica.generator.mechanics.body_inertias import BodyInertiaCheck
from dynamica.generator.spec import expr as ex


class _Evaluator:
    """Numbers of program intermediates at given inputs, evaluated on demand."""

    def __init__(self, prog, subs):
        self.defs = dict(prog.assignments)
        self.vals = {k: sp.Float(v) for k, v in subs.items()}

    def __call__(self, e):
        e = sp.sympify(e)
        for s in e.free_symbols:
            self._sym(s)
        return complex(e.xreplace(self.vals)).real

    def _sym(self, s):
        stack = [s]
        while stack:
            x = stack[-1]
            if x in self.vals:
                stack.pop()
                continue
            if x not in self.defs:
                raise KeyError(f"no value for {x}")
            missing = [y for y in self.defs[x].free_symbols if y not in self.vals]
            if missing:
                stack.extend(missing)
                continue
            self.vals[x] = self.defs[x].xreplace(self.vals)
            stack.pop()


def _samples(kin, count=4, seed=2024):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        subs = dict(kin.spec.defaults())
        subs[ex.T] = rng.uniform(0.0, 2.0)
        for jk in kin.joints[1:]:
            for q, qd in zip(jk.q, jk.qd):
                subs[q], subs[qd] = rng.uniform(-1.5, 1.5), rng.uniform(-1.0, 1.0)
        out.append(_Evaluator(kin.program, subs))
    return out


def _error(kin, text):
    return ModelError(kin.spec.file, [Problem("bodies", text)])


def complement_basis(kin, i, samples, tag):
    """Z_i of (1.8) as a list of 6-lists (columns), entries bound in the program."""
    prog = kin.program
    A = kin.joints[i].A
    n = len(A)
    if n == 0:
        return [[sp.Integer(int(r == c)) for r in range(6)] for c in range(6)]
    if n == 6:
        return []
    Am = sp.Matrix(6, n, lambda r, c: sp.sympify(A[c][r]))
    constant = all(x.is_Number for x in Am)
    nums = [np.array([[ev(Am[r, c]) for c in range(n)] for r in range(6)]) for ev in samples[:1 if constant else None]]
    best, rows = -1.0, None
    for sel in itertools.combinations(range(6), n):
        score = min(abs(np.linalg.det(a[list(sel), :])) / max(1e-300, np.prod(np.linalg.norm(a, axis=0)))
                    for a in nums)
        if score > best + 1e-12:
            best, rows = score, sel
    if best < 1e-9:
        raise _error(kin, f"hamilton-lagrange1: no independent rows in the joint basis of body "
                          f"`{kin.topo.names[i]}` (1.8)")
    rest = [r for r in range(6) if r not in rows]
    AH, A3 = Am[list(rows), :], Am[rest, :]
    X = AH.inv() if constant else small_inverse(prog, AH, f"{tag}AHi{i}_")
    Z3 = sp.Matrix(n, len(rest), lambda r, c: total([mul(A3[c, k], X[k, r]) for k in range(n)]))  # (A3 X)^T
    cols = []
    for c, rr in enumerate(rest):
        z = [sp.Integer(0)] * 6
        z[rr] = sp.Integer(1)
        for k, hr in enumerate(rows):
            z[hr] = neg(Z3[k, c]) if constant else prog.let(f"{tag}Z{i}_{hr}{c}", neg(Z3[k, c]))
        cols.append(z)
    return cols


class BodyInverse:
    """x -> M_i^{-1} x for M_i = [[m E, -m r~], [m r~, Theta_O]] (see the module docstring)."""

    def __init__(self, prog, inert, i, tag):
        m, rc, th = inert.mass, inert.com, inert.theta
        self.im = prog.let(f"{tag}im{i}", 1 / m)
        self.r = prog.let_vector(f"{tag}rc{i}", rc)
        r = self.r
        r2 = total([mul(x, x) for x in r])
        Tc = sp.Matrix(3, 3, lambda a, b: total([th[a, b], neg(mul(m, total([r2 if a == b else sp.S.Zero,
                                                                            neg(mul(r[a], r[b]))])))]))
        Tc = prog.let_symmetric(f"{tag}Tc{i}", Tc)
        if all(Tc[a, b] == 0 for a in range(3) for b in range(3) if a != b):
            self.Ti = sp.diag(*[prog.let(f"{tag}Ti{i}_{a}{a}", 1 / Tc[a, a]) for a in range(3)])
        else:
            Ti = small_inverse(prog, Tc, f"{tag}Ti{i}_")
            self.Ti = sp.Matrix(3, 3, lambda a, b: Ti[min(a, b), max(a, b)])

    def __call__(self, x):
        y = [total([mul(self.Ti[a, b], e) for b, e in enumerate(sub(x[3:], cross(self.r, x[:3])))])
             for a in range(3)]
        return add(scale(self.im, x[:3]), cross(self.r, y)) + y


def _projected_momenta(kin, H, tag):
    """(NAi, a): per joint (A_i^T A_i)^{-1} and a_i = A_i mu_i with mu_i = (A^T A)^{-1} p_i (1.62)."""
    prog, N = kin.program, kin.topo.n_bodies
    NAi, a = [None] * (N + 1), [None] + [list(Z6) for _ in range(N)]
    for i in range(1, N + 1):
        A = kin.joints[i].A
        n = len(A)
        if not n:
            continue
        NA = sp.Matrix(n, n, lambda r, c: dot(A[r], A[c]))
        if NA == sp.eye(n):
            NAi[i] = NA
        else:
            NA = sp.Matrix(n, n, lambda r, c: prog.let(f"{tag}NA{i}_{min(r, c)}{max(r, c)}", NA[r, c])
                           if r <= c else sp.S.Zero)
            NA = sp.Matrix(n, n, lambda r, c: NA[min(r, c), max(r, c)])
            NAi[i] = small_inverse(prog, NA, f"{tag}NAi{i}_")
        mu = [total([mul(NAi[i][r, c], H.pm_of[i][c]) for c in range(n)]) for r in range(n)]
        mu = prog.let_vector(f"{tag}mu{i}", mu)
        a[i] = prog.let_vector(f"{tag}a{i}", [total([mul(A[c][r], mu[c]) for c in range(n)]) for r in range(6)])
    return NAi, a


def _s_transpose(kin, x):
    """S^T x per body: x_b - sum_{j in S_b} C_j^T x_j."""
    topo, N = kin.topo, kin.topo.n_bodies
    out = [None] + [list(x[b]) for b in range(1, N + 1)]
    for j in range(N, 0, -1):
        k = topo.kappa[j]
        if k > 0:
            jk = kin.joints[j]
            out[k] = sub(out[k], apply_CT(jk.G, jk.rho, x[j]))
    return out


def _projection_system(kin, H, Z, Minv, a, tag):
    """(rows, r, first, m): the matrix of (1.65) (lower triangle, rows of dicts) and its right-hand
    side Z^T [v_hat^r - S M^{-1} S^T A mu], the first unknown of each body, the unknowns' count."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    # right-hand side of (1.65): Z^T [v_hat^r - S M^{-1} S^T A mu]
    g = _s_transpose(kin, a)
    h = [list(Z6)] + [prog.let_vector(f"{tag}h{b}", Minv[b](g[b])) for b in range(1, N + 1)]
    index, first = [], {}
    for i in range(1, N + 1):
        first[i] = len(index)
        index += [(i, c) for c in range(len(Z[i]))]
    m = len(index)
    r = [None] * m
    for i in range(1, N + 1):
        jk = kin.joints[i]
        Sh = sub(h[i], apply_C(jk.G, H.rp[i], h[topo.kappa[i]]))
        d = prog.let_vector(f"{tag}dv{i}", sub(jk.vr_hat, Sh))
        for c, z in enumerate(Z[i]):
            r[first[i] + c] = prog.let(f"{tag}r{first[i] + c}", dot(z, d))
    # the matrix of (1.65), body by body
    rows = [dict() for _ in range(m)]
    for b in range(1, N + 1):
        entries = [(first[b] + c, z) for c, z in enumerate(Z[b])]
        for j in topo.children[b]:
            jk = kin.joints[j]
            entries += [(first[j] + c, prog.let_vector(f"{tag}CZ{j}_{c}", [neg(x) for x in apply_CT(jk.G, jk.rho, z)]))
                        for c, z in enumerate(Z[j])]
        ys = [prog.let_vector(f"{tag}MZ{b}_{k}", Minv[b](x)) for k, (_, x) in enumerate(entries)]
        for (ka, xa), ya in zip(entries, ys):
            for kb, _ in entries:
                if kb > ka:
                    continue
                yb = ys[[e[0] for e in entries].index(kb)]
                rows[ka][kb] = total([rows[ka].get(kb, sp.S.Zero), dot(xa, yb)])
    rows = [{c: prog.let(f"{tag}H{ri}_{c}", e) for c, e in row.items()} for ri, row in enumerate(rows)]
    return rows, r, first, m


def _coordinate_rates(kin, H, v, NAi, tag) -> list:
    """q' (1.60) from the body velocities v: (A^T A)^{-1} A^T (v_i - C v_k - v_hat^r) per joint."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    qd = [None] * H.n
    for i in range(1, N + 1):
        jk = kin.joints[i]
        A = jk.A
        if not A:
            continue
        rel = sub(sub(v[i], apply_C(jk.G, H.rp[i], v[topo.kappa[i]])), jk.vr_hat)
        ATr = [dot(col, rel) for col in A]
        n = len(A)
        for c in range(n):
            qd[H.first[i] + c] = prog.let(f"{tag}qdot{H.first[i] + c}",
                                          total([mul(NAi[i][c, k], ATr[k]) for k in range(n)]))
    return qd


@register("hamilton-lagrange1", "HLGR", cost=NO_FORMULA,
          pivots_of_m=False,                                      # it factors H of (1.64), not M
          inverts_body_inertias=("(1.64)", "hamilton-composite, hamilton-articulated or hamilton-ltdl"))
def hamilton_lagrange1(kin):
    """Orthogonal projection (1.61)-(1.67)."""
    BodyInertiaCheck(kin.spec, "hamilton-lagrange1").check_defaults()   # (1.64) needs every M_i^{-1}
    tag = "hl_"
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    samples = _samples(kin)
    Z = [None] + [complement_basis(kin, i, samples, tag) for i in range(1, N + 1)]
    H = Hamiltonian(kin, tag)
    Minv = [None] + [BodyInverse(prog, kin.inertia[i], i, tag) for i in range(1, N + 1)]
    NAi, a = _projected_momenta(kin, H, tag)
    rows, r, first, m = _projection_system(kin, H, Z, Minv, a, tag)
    if m:
        try:
            lam = solve_reverse_ldl(prog, rows, r, tag=f"{tag}L")
        except StructurallySingular as exc:   # pragma: no cover - H is regular when every M_i is
            raise _error(kin, f"hamilton-lagrange1: the matrix of (1.65) is singular (row {exc.index})") from None
    else:
        lam = []
    # p* (1.61), v (1.64), q' (1.60)
    pstar = [None] * (N + 1)
    for i in range(1, N + 1):
        e = list(a[i])
        for c, z in enumerate(Z[i]):
            e = add(e, [mul(lam[first[i] + c], x) for x in z])
        pstar[i] = prog.let_vector(f"{tag}ps{i}", e)
    Sp = _s_transpose(kin, pstar)
    v = [list(Z6)] + [prog.let_vector(f"{tag}v{i}", Minv[i](Sp[i])) for i in range(1, N + 1)]
    qd = _coordinate_rates(kin, H, v, NAi, tag)
    pmd = H.momentum_rates(pstar, v, H.composite_forces())
    return H.equations("hamilton-lagrange1", qd, pmd, info={"multipliers": m})
