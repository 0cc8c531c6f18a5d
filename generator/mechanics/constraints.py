"""The equations of closed loops (cut-joint constraint equations, as in the peer package;
docs/loops.md), generated like the rest.

Each loop joint holds a few scalar equations (atoms, generator/mechanics/loops.py) on the tree's
coordinates q. Every atom is a function of points and directions fixed in the two bodies, so
its derivatives follow from the bodies' motion, which the forward pass of the kinematics gives
((1.9)-(1.10), (1.13), (1.33)); everything here is in the ground frame:

  x = r_X + R_X^T p                 a point p of body X (R_X: ground -> X, r_X: its origin)
  v(x) = R_X^T (v_X + w_X x p)       its velocity;  a0(x) = R_X^T (a_X + e_X x p + w_X x (w_X x p))
                                    its acceleration at q'' = 0 (a_X, e_X: w_hat of (1.33) with
                                    the accelerated ground taken back out)
  u = R_X^T u_X                      a direction;  u' = R_X^T (w_X x u_X);  u''0 likewise
  v_k(x) = R_j^T a_k + (R_j^T b_k) x (x - r_j),  w_k = R_j^T b_k
                                    the motion of x, u for a unit rate of coordinate k of joint j
                                    (column [a_k; b_k] of A_j), if X is in the subtree D_j

For an atom phi(q, t):  J_k = dphi/dq_k (rows of the Jacobian, J q' + phi_t = 0), phi_t from the
driven joints (their v^r_j taken as a column of unit rate), and the acceleration term
J q'' = gamma = -phi''(q'' = 0) from the full velocities and a0. Kernels:

  con_phi  (t, q, p) -> phi (m)          con_jac (t, q, p) -> J (m x n, row-major), phit (m)
  con_bias (t, q, qd, p) -> gamma (m)    con_refs (t, q, p) -> the references fixed at assembly

The references (prismatic: c_b, weld: c1_b, c2_b) are parameters of the module named
`<loop>.reference`, set by the assembly (runtime/assembly.py); until then they are 0 and their
atoms vanish identically (a zero row of J: redundant, dropped by the solve).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from dynamica.generator.forms.parts.common import forward_pass
from dynamica.generator.forms.parts.spatial import coordinate_layout
from dynamica.generator.ir.program import add, cross, dot, matTvec, matvec, mul, scale, sub, total
from dynamica.generator.mechanics.kinematics import derive_kinematics, unit_vector
from dynamica.generator.mechanics.loops import LOOP_TYPES
from dynamica.generator.spec import expr as ex

Z3 = [sp.Integer(0)] * 3


def reference_parameters(spec) -> list:
    """[(name, size)] of the module parameters the assembly sets: `<loop>.reference`."""
    return [(f"{lp.name}.reference", LOOP_TYPES[lp.type].references) for lp in spec.loops
            if LOOP_TYPES[lp.type].references]


@dataclass
class Atom:
    """One scalar equation of a loop: residual, Jacobian row, phi_t, phi''(q'' = 0), and how its
    multiplier acts on the two bodies (force at x_b, torque; force at x_a, torque; ground frame)."""
    loop: str
    what: str
    phi: object
    jac: dict                    # coordinate index -> expression
    phit: object
    acc: object                  # phi'' at q'' = 0 (gamma = -acc)
    on_b: tuple                  # (force at x_b, torque) per unit multiplier, ground frame: the
    on_a: tuple                  # generalized force -lambda J_k is their virtual work
    references: bool = False


class Motion:
    """The motion of a body (or the ground) in the ground frame, and of its points and directions."""

    def __init__(self, eqs, body):
        self.eqs, self.body = eqs, body
        fp, kin = eqs.fp, eqs.kin
        if body == "ground":
            self.i, self.R, self.r = 0, sp.eye(3), list(Z3)
            self.v, self.w, self.a, self.e = list(Z3), list(Z3), list(Z3), list(Z3)
        else:
            i = self.i = kin.topo.index(body)
            self.R, self.r = fp.R0[i], fp.r0[i]
            self.v, self.w = list(fp.v[i][:3]), list(fp.v[i][3:])
            self.a = add(fp.w_hat[i][:3], matvec(fp.R0[i], kin.gravity))   # accelerated ground taken out
            self.e = list(fp.w_hat[i][3:])
        self.path = set(eqs.path_of(self.i))        # joints (bodies) whose motion moves this body

    def point(self, p):
        """(x, v(x), a0(x)) of body point p (body coordinates)."""
        x = add(self.r, matTvec(self.R, p))
        v = matTvec(self.R, add(self.v, cross(self.w, p)))
        a0 = matTvec(self.R, add(add(self.a, cross(self.e, p)), cross(self.w, cross(self.w, p))))
        return x, v, a0

    def direction(self, u):
        """(u, u', u''0) of a body direction u (body coordinates), ground frame."""
        return (matTvec(self.R, u), matTvec(self.R, cross(self.w, u)),
                matTvec(self.R, add(cross(self.e, u), cross(self.w, cross(self.w, u)))))


@dataclass
class ConstraintEquations:
    kin: object                  # the kinematics (and program) the atoms are built in
    atoms: list
    references: list = field(default_factory=list)   # expressions of the `<loop>.reference` slots

    @property
    def program(self):
        return self.kin.program

    @property
    def coordinates(self):
        return self.kin.coordinates


class Equations:
    """The forward pass of a program and the unit motions of its joints."""

    def __init__(self, kin, fp=None):
        self.kin, self.prog = kin, kin.program
        self.fp = fp or forward_pass(kin)
        owner, local, _ = coordinate_layout(kin)
        self.coord = {}                              # joint (body) -> [coordinate indices]
        for k, i in enumerate(owner):
            self.coord.setdefault(i, []).append(k)
        self._unit = {}

    def path_of(self, i):
        topo, out = self.kin.topo, []
        while i > 0:
            out.append(i)
            i = topo.kappa[i]
        return out

    def twists(self, j):
        """[(coordinate index or None for the driven part, w_k, v_k at O_j, O_j)] of joint j, ground frame."""
        if j not in self._unit:
            jk, fp = self.kin.joints[j], self.fp
            cols = [(k, col) for k, col in zip(self.coord.get(j, []), jk.A)]
            if any(x != 0 for x in jk.vr_hat):
                cols.append((None, list(jk.vr_hat)))
            out = []
            for k, col in cols:
                tag = f"cn{j}_{'t' if k is None else k}"
                w = self.prog.let_vector(f"{tag}w", matTvec(fp.R0[j], col[3:]))
                v = self.prog.let_vector(f"{tag}v", matTvec(fp.R0[j], col[:3]))
                out.append((k, w, v, fp.r0[j]))
            self._unit[j] = out
        return self._unit[j]


class Geometry:
    """The points and directions of one loop joint, and its atoms (generator/mechanics/loops.py)."""

    def __init__(self, eqs: Equations, loop, scope, refs):
        self.eqs, self.loop, self.refs = eqs, loop, refs
        P = lambda x: ex.parse(x, scope)  # noqa: E731
        self.A, self.B = Motion(eqs, loop.body_a), Motion(eqs, loop.body_b)
        self.xa = self.A.point([P(x) for x in loop.point_a])
        self.xb = self.B.point([P(x) for x in loop.point_b])
        if loop.axis:
            u = unit_vector(loop.axis, scope)
            self.ua, self.ub = u, unit_vector(loop.axis_b, scope)
            w1 = _perpendicular(u, eqs.kin.spec.defaults())
            self.w1, self.w2 = w1, cross(u, w1)
        self.length = P(loop.length) if loop.length is not None else None
        tag = f"cn_{loop.name}"
        self.d = [eqs.prog.let_vector(f"{tag}_d", sub(self.xb[0], self.xa[0]))] + \
            [sub(self.xb[1], self.xa[1]), sub(self.xb[2], self.xa[2])]

    # -- generic atoms
    def _atom(self, what, phi, rate, acc, on_b, on_a, dir_a=None, dir_b=None, references=False):
        """rate(motion of A, motion of B) -> d phi for a unit rate (each motion: velocity of the
        loop point, velocity of the direction given, or None when the coordinate does not move that
        body); the rates of the coordinates are J's row, the driven joints' give phi_t."""
        ma = self._unit_motions(self.A, self.xa[0], dir_a)
        mb = self._unit_motions(self.B, self.xb[0], dir_b)
        jac, phit = {}, []
        for k in set(ma) | set(mb):
            e = rate(ma.get(k), mb.get(k))
            if e == 0:
                continue
            if k is None:
                phit.append(e)
            else:
                jac[k] = e
        return Atom(self.loop.name, what, phi, jac, total(phit), acc, on_b, on_a, references)

    def _unit_motions(self, X, point, direction):
        """{coordinate index (None: a driven joint's part): (velocity of point, of direction)}."""
        out = {}
        for j in X.path:
            for k, w, v, o in self.eqs.twists(j):
                pv = add(v, cross(w, sub(point, o)))
                dv = cross(w, direction) if direction is not None else None
                if k in out:                     # several driven transforms: one phi_t term each joint
                    a, b = out[k]
                    out[k] = (add(a, pv), add(b, dv) if dv is not None else None)
                else:
                    out[k] = (pv, dv)
        return out

    def Q(self, w, X, what):
        """d . w with w fixed in body X (A, or the ground)."""
        wd, wv, wacc = X.direction(w)
        d, dv, da = self.d
        moves = X is self.A

        def rate(ma, mb):
            terms = [dot(mb[0], wd)] if mb is not None else []
            if ma is not None:
                terms.append(-dot(ma[0], wd))
                if moves:
                    terms.append(dot(d, ma[1]))
            return total(terms)
        acc = total([dot(da, wd), mul(2, dot(dv, wv)), dot(d, wacc)])
        torque_a = [-x for x in cross(wd, d)] if moves else list(Z3)
        return self._atom(what, dot(d, wd), rate, acc, ([-x for x in wd], list(Z3)), (wd, torque_a),
                          dir_a=wd if moves else None)

    def D(self, ua, ub, what, references=False):
        """a . b with a fixed in body A and b in body B."""
        a, av, aacc = self.A.direction(ua)
        b, bv, bacc = self.B.direction(ub)

        def rate(ma, mb):
            return total(([dot(ma[1], b)] if ma is not None else []) + ([dot(a, mb[1])] if mb is not None else []))
        acc = total([dot(aacc, b), mul(2, dot(av, bv)), dot(a, bacc)])
        return self._atom(what, dot(a, b), rate, acc, (list(Z3), [-x for x in cross(b, a)]),
                          (list(Z3), [-x for x in cross(a, b)]), dir_a=a, dir_b=b, references=references)

    # -- the building blocks of the loop types (generator/mechanics/loops.py)
    def points(self):
        G = Motion(self.eqs, "ground")
        out = []
        for k, axis in enumerate("xyz"):
            e = [sp.Integer(int(c == k)) for c in range(3)]
            out.append(self.Q(e, G, f"point {axis}"))
        return out

    def on_line(self):
        return [self.Q(self.w1, self.A, "on the line 1"), self.Q(self.w2, self.A, "on the line 2")]

    def parallel(self):
        return [self.D(self.w1, self.ub, "parallel 1"), self.D(self.w2, self.ub, "parallel 2")]

    def perpendicular(self):
        return [self.D(self.ua, self.ub, "perpendicular")]

    def twist(self):
        return [self.D(self.w2, self.refs[:3], "twist", references=True)]

    def orientation(self):
        e = [[sp.Integer(int(c == k)) for c in range(3)] for k in range(3)]
        c1, c2 = self.refs[:3], self.refs[3:6]
        return [self.D(e[1], c1, "orientation 1", True), self.D(e[2], c1, "orientation 2", True),
                self.D(e[2], c2, "orientation 3", True)]

    def distance(self):
        d, dv, da = self.d

        def rate(ma, mb):
            terms = ([mul(2, dot(d, mb[0]))] if mb is not None else []) + \
                    ([mul(-2, dot(d, ma[0]))] if ma is not None else [])
            return total(terms)
        acc = mul(2, total([dot(da, d), dot(dv, dv)]))
        return [self._atom("distance", total([dot(d, d), -self.length ** 2]), rate, acc,
                           (scale(-2, d), list(Z3)), (scale(2, d), list(Z3)))]

    def reference_values(self):
        """The references of this loop at the current configuration (what the assembly stores)."""
        lt = LOOP_TYPES[self.loop.type]
        RA, RB = self.A.R, self.B.R
        if lt.name == "prismatic":                  # w1 of body a, in body b's axes
            return matvec(RB, matTvec(RA, self.w1))
        if lt.name == "weld":                       # e1, e2 of body a, in body b's axes
            return matvec(RB, matTvec(RA, [1, 0, 0])) + matvec(RB, matTvec(RA, [0, 1, 0]))
        return []


def _perpendicular(u, defaults):
    """A unit vector perpendicular to the unit vector u, from the coordinate axis least aligned with
    u (judged at the parameters' defaults)."""
    values = {k: sp.Float(v) for k, v in defaults.items()}
    vals = [abs(float(sp.sympify(x).xreplace(values))) for x in u]
    k = int(np.argmin(vals))
    w = cross(u, [sp.Integer(int(c == k)) for c in range(3)])
    n = sp.sqrt(dot(w, w))
    return [x / n for x in w]


def loop_atoms(kin, fp=None):
    """The atoms of every loop of the model and the expressions of the references, in the
    program of `kin` (with its forward pass `fp`, or a new one)."""
    eqs = Equations(kin, fp)
    spec = kin.spec
    scope = spec.scope()
    atoms, references = [], []
    for lp in spec.loops:
        lt = LOOP_TYPES[lp.type]
        refs = [ex.param_symbol(f"{lp.name}.reference", k) for k in range(lt.references)]
        g = Geometry(eqs, lp, scope, refs)
        atoms += lt.atoms(g)
        references += g.reference_values()
    return atoms, references


def constraint_equations(spec, topo) -> ConstraintEquations:
    """The loops' atoms in a program of their own."""
    kin = derive_kinematics(spec, topo)
    atoms, references = loop_atoms(kin)
    return ConstraintEquations(kin, atoms, references)


def loop_wrenches(kin, fp, atoms, lam):
    """The loops' forces on the bodies for multipliers `lam`: (per body i: wrench at O_i in frame i
    (6), per loop: (force, torque) on body_b at point_b, ground frame)."""
    scope = kin.spec.scope()
    N = kin.topo.n_bodies
    F = [[sp.Integer(0)] * 6 for _ in range(N + 1)]
    by_loop = {lp.name: lp for lp in kin.spec.loops}
    reaction = {name: (list(Z3), list(Z3)) for name in by_loop}
    for a, lm in zip(atoms, lam):
        lp = by_loop[a.loop]
        for body, point, (f, t) in ((lp.body_b, lp.point_b, a.on_b), (lp.body_a, lp.point_a, a.on_a)):
            if body == "ground":
                continue
            i = kin.topo.index(body)
            fb = matvec(fp.R0[i], scale(lm, f))
            tb = add(matvec(fp.R0[i], scale(lm, t)), cross([ex.parse(x, scope) for x in point], fb))
            F[i] = [x + y for x, y in zip(F[i], fb + tb)]
        rf, rt = reaction[a.loop]
        reaction[a.loop] = (add(rf, scale(lm, a.on_b[0])), add(rt, scale(lm, a.on_b[1])))
    return F, reaction


def loop_layout(atoms) -> tuple:
    """((loop, what), ...) of the equations, in the order of phi, gamma and lambda."""
    return tuple((a.loop, a.what) for a in atoms)


def attach_constraints(eom, spec, topo):
    """The form's equations with the loops' kernels added (exported as module entries): con_phi,
    con_jac, con_bias, con_refs; the module's entry points then solve the constrained system
    (templates/native/dynamica_constraints.h, render/module.py). Lagrangian forms only."""
    import dataclasses

    from dynamica.errors import ModelError, Problem
    from dynamica.generator.forms import KernelSpec
    from dynamica.generator.forms.numeric import topology_tables
    if eom.kind != "lagrangian":
        raise ModelError(spec.file, [Problem("loops", f"the form `{eom.form}` cannot take closed loops (its "
                                                      "state is [q, p]); use a Lagrangian form, e.g. composite")])
    if spec.states or spec.inputs:
        raise ModelError(spec.file, [Problem("loops", "closed loops do not take extra states or inputs yet "
                                                      "(`states:`, `inputs:`)")])
    ce = constraint_equations(spec, topo)
    atoms, n = ce.atoms, len(ce.coordinates)
    J = [a.jac.get(k, sp.Integer(0)) for a in atoms for k in range(n)]
    kernels = (KernelSpec("con_phi", ("t", "q", "p"), (("phi", [a.phi for a in atoms]),), program=ce.program,
                          export=True),
               KernelSpec("con_jac", ("t", "q", "p"), (("J", J), ("phit", [a.phit for a in atoms])),
                          program=ce.program, export=True),
               KernelSpec("con_bias", ("t", "q", "qd", "p"), (("gamma", [-a.acc for a in atoms]),),
                          program=ce.program, export=True),
               KernelSpec("con_refs", ("t", "q", "p"), (("refs", ce.references or [sp.Integer(0)]),),
                          program=ce.program, export=True))
    lam = dict(topology_tables(ce.kin))["dyn_nm_lambda"]
    info = {**eom.info, "constraints": loop_layout(atoms), "tree_predecessors": tuple(lam),
            "loop_references": tuple(reference_parameters(spec)),
            "reference_rows": tuple(k for k, a in enumerate(atoms) if a.references)}
    return dataclasses.replace(eom, extra_kernels=tuple(eom.extra_kernels) + kernels, info=info, constrained=True)

