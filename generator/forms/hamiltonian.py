"""Hamiltonian forms: state (q, pm) with the Poisson momenta pm = B^T M v (1.49).

This module holds the pieces shared by the four Hamiltonian forms and the composite one:

  name                  acronym  solves the kinematic part of (1.54) for q' by          where
  hamilton-composite    HCBM     tangent projection (1.59): M q' = pm - B^T M v_hat,    this module
                                 tree-sparse L^T D L (2.23); p* by (1.55)
  hamilton-lagrange1    HLGR     orthogonal projection (1.61)-(1.67), H lambda = r       hamilton_lagrange1.py
                                 by (1.65)
  hamilton-articulated  HABM     sweep of (1.54) (method of separate bodies),           hamilton_sweeps.py
                                 (3.16)-(3.17)
  hamilton-ltdl         HDEC     L^T D L of (1.54), (3.32)-(3.40)                       hamilton_sweeps.py

Every form ends with the same momentum equation (1.54) / (3.12) / (3.17) / (3.40):

  pm'_i = (A'_i^T - A_i^T Omega_i) p*_i + A_i^T F*_i (+ generalized forces of joint i)

Symbol table (body i, frame i, spatial vectors [lin; ang]):
  v_i      absolute velocity of O_i (1.13); v_hat_i = C_i v_hat_k + v_hat^r_i  (1.32)
  p*_i     momentum of the subtree D_i at O_i, p* = T^T M v (1.53), (3.9):
           p*_i = M_i v_i + sum_{j in S_i} C_j^T p*_j
  Omega_i  [[w~, 0], [v~, w~]] of v_i = [v; w] (after (1.20)), so Omega_i p* = [w x P; v x P + w x L]
           for p* = [P; L]
  A'_i     total time derivative of A_i(q_i, t) in frame i, formed here by forward-mode
           differentiation of the program that computes A_i (`time_derivative`)
  F_i      active forces on body i at O_i, gravity included as a force: F_i += M_i [G_i0 g; 0]
           (the Lagrangian forms put gravity into the accelerated ground instead); F*_i =
           F_i + sum C_j^T F*_j, F* = T^T F
  gen      generalized forces of joint_spring_damper / generalized_force, added to pm'

The module kernels (forms/__init__.py, kind "hamiltonian"): hamilton(t, q, pm) -> (q', pm'),
with every joint-rate symbol aliased to the program intermediate holding q' as the form
solved it from pm (forward kinematics and active forces are written with the rate symbols);
momenta(t, q, q') -> pm by (1.49) = A_i^T p*_i with p* from the forward velocities; mass.
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.cost.flops import NO_FORMULA
from dynamica.generator.forms import EquationsOfMotion, register
from dynamica.generator.forms.parts.cholesky import StructurallySingular, singular_error, solve_reverse_ldl
from dynamica.generator.forms.parts.common import forward_pass
from dynamica.generator.forms.parts.spatial import (
    apply_C,
    apply_CT,
    composite_forces,
    composite_inertias,
    coordinate_layout,
    full_matrix,
    inertia_times,
    mass_matrix_rows,
)
from dynamica.generator.ir.program import add, cross, dot, fold_vectors, matvec, mul, neg, scale, total
from dynamica.generator.mechanics.forces import active_forces
from dynamica.generator.spec import expr as ex

ZERO = sp.S.Zero
Z6 = [sp.Integer(0)] * 6

#: acronyms of the Hamiltonian forms (registered with the forms)
ACRONYMS = {"hamilton-composite": "HCBM", "hamilton-lagrange1": "HLGR",
            "hamilton-articulated": "HABM", "hamilton-ltdl": "HDEC"}


# ------------------------------------------------------------------ program-level helpers
def bind(prog, name, value):
    """A program symbol holding `value`, even when `value` is a number or a bare symbol.

    Program.let propagates atoms; an alias target (forms/__init__.py `aliases`) must be a
    symbol, so an atomic q' (e.g. a literal 0) is bound explicitly here.
    """
    value = sp.sympify(value)
    if isinstance(value, sp.Symbol):
        return value
    out = prog.let(name, value)
    if isinstance(out, sp.Symbol) and out.name == name:
        return out
    return prog.bind(name, value)


class TimeDerivative:
    """Forward-mode total time derivative d/dt of program expressions along (q', t).

    d q_k/dt = q'_k (the rate symbol), dt/dt = 1, parameters are constants; a program
    intermediate s = e gets ds/dt = sum_x de/dx dx/dt, bound once as `<tag><name>`. The
    joint bases A_i(q_i, t) depend on nothing else, so this gives A'_i of (1.54) exactly as
    its definition, without a hand-written derivative per joint type.
    """

    def __init__(self, kin, tag):
        self.prog, self.tag = kin.program, tag
        self.defs = dict(kin.program.assignments)
        self.rate = {}
        for jk in kin.joints[1:]:
            self.rate.update(zip(jk.q, jk.qd))
        self.rates = set(self.rate.values())
        # sin(x)/cos(x) already bound: reuse them in derivatives
        self.reuse = {e: s for s, e in kin.program.assignments if isinstance(e, (sp.sin, sp.cos))}
        self.memo = {}

    def of_symbol(self, s):
        if s == ex.T:
            return sp.S.One
        if s in self.rate:
            return self.rate[s]
        if s in self.rates:
            raise ValueError(f"d/dt of an expression in the rate {s}: it would need q''")
        if s not in self.defs:
            return ZERO                      # a parameter
        if s not in self.memo:
            d = self(self.defs[s])
            self.memo[s] = self.prog.let(f"{self.tag}{s.name}", d) if d != 0 else ZERO
        return self.memo[s]

    def __call__(self, e):
        e = sp.sympify(e)
        if e.is_Number:
            return ZERO
        terms = []
        for s in sorted(e.free_symbols, key=lambda x: x.name):
            ds = self.of_symbol(s)
            if ds == 0:
                continue
            de = sp.diff(e, s)
            if de == 0:
                continue
            if self.reuse:
                de = de.xreplace(self.reuse)
            terms.append(mul(de, ds))
        return total(terms)


def omega_times(v, p):
    """Omega_i p for v_i = [v; w], p = [P; L]: [w x P; v x P + w x L] (after (1.20), (1.47))."""
    vl, w = v[:3], v[3:]
    P, L = p[:3], p[3:]
    return cross(w, P) + add(cross(vl, P), cross(w, L))


# ------------------------------------------------------------------ small dense solvers
def symmetric_inverse(prog, D, tag):
    """D^{-1} of a small symmetric regular D (list of lists), entries bound.

    n = 1: 1/D; n = 2: adjugate; n >= 3: unrolled Gauss-Jordan elimination without pivoting,
    from the last row to the first (the pivots of cholesky.reverse_ldl: D need not be positive
    definite), the upper triangle of the result mirrored.
    """
    n = len(D)
    if n == 1:
        return [[prog.let(f"{tag}00", 1 / D[0][0])]]
    if n == 2:
        det = prog.let(f"{tag}det", 1 / total([mul(D[0][0], D[1][1]), neg(mul(D[0][1], D[0][1]))]))
        a = prog.let(f"{tag}00", mul(D[1][1], det))
        b = prog.let(f"{tag}01", neg(mul(D[0][1], det)))
        c = prog.let(f"{tag}11", mul(D[0][0], det))
        return [[a, b], [b, c]]
    # Gauss-Jordan with the augmented identity, symmetric result
    W = [list(D[r]) + [sp.Integer(int(r == c)) for c in range(n)] for r in range(n)]
    for k in range(n - 1, -1, -1):
        if W[k][k] == 0:
            raise StructurallySingular(k)
        piv = prog.let(f"{tag}p{k}", 1 / W[k][k])
        W[k] = [prog.let(f"{tag}w{k}_{k}_{c}", mul(x, piv)) for c, x in enumerate(W[k])]
        for r in range(n):
            if r == k or W[r][k] == 0:
                continue
            f = W[r][k]
            W[r] = [prog.let(f"{tag}w{k}_{r}_{c}", total([x, neg(mul(f, y))])) for c, (x, y) in
                    enumerate(zip(W[r], W[k]))]
    return [[W[r][n + c] if c >= r else W[c][n + r] for c in range(n)] for r in range(n)]


def small_inverse(prog, A, tag):
    """A^{-1} for a small general square matrix (sp.Matrix), entries bound."""
    n = A.rows
    if n == 1:
        return sp.Matrix([[prog.let(f"{tag}00", 1 / A[0, 0])]])
    if n <= 3:
        det = A.det(method="berkowitz") if n == 3 else A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0]
        idet = prog.let(f"{tag}det", 1 / det)
        adj = A.adjugate()
        return sp.Matrix(n, n, lambda r, c: prog.let(f"{tag}{r}{c}", mul(adj[r, c], idet)))
    inv = A.inv(method="LU")
    return sp.Matrix(n, n, lambda r, c: prog.let(f"{tag}{r}{c}", inv[r, c]))


# ------------------------------------------------------------------ shared pieces of the forms
class Hamiltonian:
    """What every Hamiltonian form builds: symbols, forward velocities, forces, A', momenta."""

    def __init__(self, kin, tag):
        self.kin, self.tag = kin, tag
        self.prog = kin.program
        self.topo = kin.topo
        self.N = kin.topo.n_bodies
        self.owner, self.local, self.first = coordinate_layout(kin)
        self.n = len(self.owner)
        self.q = tuple(q for jk in kin.joints[1:] for q in jk.q)
        self.qd = tuple(q for jk in kin.joints[1:] for q in jk.qd)
        self.pm = tuple(sp.Symbol(f"pm:{c}", real=True) for c in kin.coordinates)
        self.pm_of = {}                     # body -> list of its momentum symbols
        for k, i in enumerate(self.owner):
            self.pm_of.setdefault(i, []).append(self.pm[k])
        # forward kinematics with the rate symbols: v_i (1.13), G_i0, r_i (1.9)-(1.10)
        self.fp = forward_pass(kin)
        self.rp = self.fp.rho_p
        self.F_active, self.gen, _ = active_forces(kin, self.fp)

    def joint(self, i):
        return self.kin.joints[i]

    def cols(self, i):
        return self.kin.joints[i].A

    # -- momenta (1.49) from the forward velocities: the `momenta` kernel
    def composite_momenta(self, v, tag):
        """p*_i = M_i v_i + sum_{j in S_i} C_j^T p*_j (3.9), bound per body."""
        prog, topo = self.prog, self.topo
        acc = [None] + [[inertia_times(self._inert(i), v[i])] for i in range(1, self.N + 1)]
        out = [None] * (self.N + 1)
        for i in range(self.N, 0, -1):
            out[i] = prog.let_vector(f"{tag}{i}", fold_vectors(acc[i]))
            k = topo.kappa[i]
            if k > 0:
                jk = self.joint(i)
                acc[k].append(apply_CT(jk.G, jk.rho, out[i]))
        return out

    def _inert(self, i):
        b = self.kin.inertia[i]
        return b.mass, b.h, b.theta

    def forward_momenta(self):
        """p* = T^T M v with v from the forward pass (1.13) (bound once)."""
        if not hasattr(self, "_pv"):
            self._pv = self.composite_momenta(self.fp.v, f"{self.tag}pv")
        return self._pv

    def momenta_outputs(self):
        """pm = B^T M v = A_i^T p*_i with v from the forward pass (rates are kernel inputs)."""
        pstar = self.forward_momenta()
        return [dot(self.cols(i)[c], pstar[i]) for i, c in zip(self.owner, self.local)]

    # -- v_hat (1.32) and the driven part of the momenta
    def v_hat(self):
        """v_hat_i = C_i v_hat_k + v_hat^r_i: the velocities with q' = 0 (zero without drives)."""
        prog = self.prog
        vh = [Z6] + [None] * self.N
        for i in range(1, self.N + 1):
            jk = self.joint(i)
            k = self.topo.kappa[i]
            vh[i] = prog.let_vector(f"{self.tag}vh{i}", add(apply_C(jk.G, self.rp[i], vh[k]), jk.vr_hat))
        return vh

    # -- forces
    def body_forces(self):
        """F_i: active forces plus gravity m g at the centre of mass, [m g_i; h x g_i], g_i = G_i0 g."""
        prog, g = self.prog, self.kin.gravity
        F = [None]
        for i in range(1, self.N + 1):
            m, h, _ = self._inert(i)
            gi = matvec(self.fp.R0[i], g)
            Fg = scale(m, gi) + cross(h, gi)
            F.append(prog.let_vector(f"{self.tag}F{i}", add(self.F_active[i], Fg)))
        return F

    def composite_forces(self):
        """F*_i = F_i + sum_{j in S_i} C_j^T F*_j (after (3.12))."""
        return composite_forces(self.kin, self.body_forces(), tag=f"{self.tag}Fs")

    # -- the momentum equation
    def momentum_rates(self, pstar, v, Fstar):
        """pm'_i = (A'_i^T - A_i^T Omega_i) p*_i + A_i^T F*_i + generalized forces (3.12)."""
        prog = self.prog
        D = TimeDerivative(self.kin, f"{self.tag}d_")
        out = [None] * self.n
        for i in range(1, self.N + 1):
            A = self.cols(i)
            if not A:
                continue
            Op = prog.let_vector(f"{self.tag}Op{i}", omega_times(v[i], pstar[i]))
            for c, a in enumerate(A):
                adot = [D(x) for x in a]
                k = self.first[i] + c
                e = total([dot(adot, pstar[i]), neg(dot(a, Op)), dot(a, Fstar[i]),
                           self.gen[self.kin.coordinates[k]]])
                out[k] = prog.let(f"{self.tag}pmd{k}", e)
        return out

    # -- the result
    def equations(self, form, qd_values, pmd, mass=None, info=None):
        prog = self.prog
        qd_syms = [bind(prog, f"{self.tag}qd{k}", x) for k, x in enumerate(qd_values)]
        pmd = [bind(prog, f"{self.tag}pmdo{k}", x) for k, x in enumerate(pmd)]
        if mass is None:
            mass = full_matrix(mass_matrix_rows(self.kin, composite_inertias(self.kin, tag=f"{self.tag}Mc"),
                                                tag=f"{self.tag}Mm"))
        return EquationsOfMotion(
            form=form, kind="hamiltonian", program=prog, coordinates=self.kin.coordinates,
            q=self.q, qd=self.qd, pm=self.pm, aliases=dict(zip(self.qd, qd_syms)),
            outputs={"qd": qd_syms, "pmd": pmd, "momenta": self.momenta_outputs(), "mass_matrix": mass},
            info={"acronym": ACRONYMS[form], "state": "q, pm (Poisson momenta pm = B^T M v, (1.49))",
                  **(info or {})})


# ------------------------------------------------------------------ hamilton-composite (HCBM)
@register("hamilton-composite", "HCBM", cost=NO_FORMULA, pivots_of_m=True)
def hamilton_composite(kin) -> EquationsOfMotion:
    """(1.59): M q' = pm - A^T T^T M T v_hat^r (composite-body mass matrix (2.19)-(2.20),
    tree-sparse L^T D L (2.23)), then v by (1.13), p* = T^T M v (1.55) and pm' by (1.54)."""
    H = Hamiltonian(kin, "hc_")
    prog = kin.program
    Mstar = composite_inertias(kin, tag="hc_Ms")                 # (2.20)
    Mrows = mass_matrix_rows(kin, Mstar, tag="hc_M")             # (2.19)
    vh = H.v_hat()
    ph = H.composite_momenta(vh, "hc_ph")                        # T^T M T v_hat^r
    rhs = [prog.let(f"hc_r{k}", total([H.pm[k], neg(dot(H.cols(i)[c], ph[i]))]))
           for k, (i, c) in enumerate(zip(H.owner, H.local))]
    try:
        qd = solve_reverse_ldl(prog, Mrows, rhs, tag="hc_L")
    except StructurallySingular as exc:
        raise singular_error(kin, exc.index) from None
    # with the rates aliased to qd, the forward velocities are v = B q' + v_hat (1.29)
    pstar = H.forward_momenta()                                  # (1.55): p* = T^T M v
    pmd = H.momentum_rates(pstar, H.fp.v, H.composite_forces())
    return H.equations("hamilton-composite", qd, pmd, mass=full_matrix(Mrows))
