"""Symbolic joint kinematics (dissertation 1.3.1, (1.1)-(1.5)) and body inertia (after (1.36)).

Symbol table (per joint i, all in the frame of body i unless said otherwise):
  rho_i     origin O_i of frame i in the parent's frame                     (1.1)
  G_i       coordinate transformation parent frame -> frame i               (1.1)
  A_i       joint basis, 6 x n_i, columns [a^v; a^w]                        (1.4)
  vr_hat_i  velocity part not proportional to q'_i (driven transforms)      (1.4)
  wr_hat_i  relative acceleration with q''_i = 0                            (1.5)
  driven_i  the driven motions one by one: (column, rate, acceleration, place), the column
            carried to frame i like A_i's, place = the number of coordinates before it
            (vr_hat_i is the sum of column * rate; generator/kinds/derivatives_recursive.py)
Spatial 6-vectors are [translational; angular].

The joint's elementary transforms are composed as a chain of frames F_0 (parent) ... F_K
(body i), carrying the relative velocity and acceleration of the current frame with respect
to F_0 through each transform. This is (1.11)-(1.12) applied inside the joint with a fixed
F_0 and gives exactly the A_i, vr_hat_i, wr_hat_i of (1.4)-(1.5) (which define the same
quantities by differentiation) while keeping expressions compact: rotations about the axis
they turn around leave it unchanged, and structural zeros fold.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from dynamica.errors import ModelError, Problem
from dynamica.generator.ir.program import Program, add, cross, matTvec, matvec, scale
from dynamica.generator.spec import expr as ex

ZERO3 = [sp.Integer(0)] * 3


@dataclass
class JointKinematics:
    body: int
    coordinates: tuple      # names
    q: tuple                # coordinate symbols
    qd: tuple               # rate symbols
    rho: list               # 3
    G: sp.Matrix            # 3x3
    A: list                 # n_i columns, each a 6-list
    vr_hat: list            # 6
    wr_hat: list            # 6
    driven: tuple = ()      # ((column 6, rate, acceleration, place), ...): the driven motions in order


@dataclass
class BodyInertia:
    mass: sp.Expr
    h: list                 # first moment m * r_c (3), body frame
    theta: sp.Matrix        # inertia tensor about O_i, body axes (3x3 symmetric)
    com: list


@dataclass
class Kinematics:
    spec: object
    topo: object
    program: Program
    joints: list            # index i -> JointKinematics (joints[0] is None)
    inertia: list           # index i -> BodyInertia
    gravity: list           # 3, ground frame
    coordinates: tuple      # names in state order (regular numbering, joint order)


def _rotation(u, c, s) -> sp.Matrix:
    """Rodrigues matrix R (new-frame coords -> current-frame coords) for unit axis u."""
    x, y, z = u
    C = 1 - c
    return sp.Matrix([
        [c + x * x * C, x * y * C - z * s, x * z * C + y * s],
        [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
        [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])


def unit_vector(vec, scope):
    """The unit vector of an axis written in the model file (three expressions in `scope`), as
    sympy expressions; the joints' and the loops' axes (generator/mechanics/constraints.py)."""
    v = [ex.parse(c, scope) for c in vec]
    n2 = sum(x * x for x in v)
    if all(x.is_Number for x in v):
        vals = [float(x) for x in v]
        if vals.count(0.0) == 2:       # a coordinate axis: keep exact integers
            return [sp.Integer(int(np.sign(x))) for x in vals]
        nrm = sp.sqrt(sp.nsimplify(n2)) if all(x.is_Integer or x.is_Rational for x in v) else sp.sqrt(n2)
        return [x / nrm for x in v]
    nrm = sp.sqrt(n2)
    return [x / nrm for x in v]


def joint_kinematics(spec, body, i: int, prog: Program, scope) -> JointKinematics:
    """Compose the elementary transforms of `body`'s joint (see module docstring)."""
    j = _JointFrames(prog, scope)
    for k, tr in enumerate(body.joint):
        j.transform(f"b{i}t{k}", tr)
    return JointKinematics(body=i, coordinates=tuple(j.names), q=tuple(j.qs), qd=tuple(j.qds), rho=j.p, G=j.G,
                           A=j.cols, vr_hat=j.v0, wr_hat=j.acc, driven=tuple(tuple(d) for d in j.dcols))


class _JointFrames:
    """The frame of a joint as its elementary transforms move it, one after another: rotation G
    and position p, the coordinates' columns, the driven motions, the driven part of the
    relative velocity and the relative acceleration with q'' = 0, all in the current frame."""

    def __init__(self, prog, scope):
        self.prog, self.scope = prog, scope
        self.G = sp.eye(3)
        self.p = list(ZERO3)
        self.cols: list = []                       # joint basis columns so far, current frame
        self.dcols: list = []                      # driven motions so far: [column, rate, acceleration, place]
        self.v0 = [sp.Integer(0)] * 6              # driven-velocity part, current frame
        self.acc = [sp.Integer(0)] * 6             # relative acceleration with q'' = 0
        self.names, self.qs, self.qds = [], [], []

    def omega(self):                               # relative angular velocity of the current frame
        w = list(self.v0[3:])
        for col, qd in zip(self.cols, self.qds):
            w = add(w, scale(qd, col[3:]))
        return w

    def shift(self, t, r):                         # move the frame by r (its own axes): position, columns, velocity
        prog = self.prog
        self.p = prog.let_vector(f"{t}_p", add(self.p, matTvec(self.G, r)))
        self.cols = [prog.let_vector(f"{t}_A{j}", add(col[:3], cross(col[3:], r)) + col[3:])
                     for j, col in enumerate(self.cols)]
        for j, d in enumerate(self.dcols):
            d[0] = prog.let_vector(f"{t}_D{j}", add(d[0][:3], cross(d[0][3:], r)) + d[0][3:])
        self.v0 = prog.let_vector(f"{t}_v", add(self.v0[:3], cross(self.v0[3:], r)) + self.v0[3:])

    def turn_by(self, t, u, val, rate, accel, w, eps):   # rotate about u by val
        prog = self.prog
        if not val.free_symbols:          # a literal angle: fold cos/sin (pi/2 -> 0, 1)
            cth, sth = sp.cos(val), sp.sin(val)
        else:
            cth, sth = prog.let(f"{t}_c", sp.cos(val)), prog.let(f"{t}_s", sp.sin(val))
        RT = _rotation(u, cth, sth).T
        self.G = prog.let_matrix(f"{t}_G", RT * self.G)
        self.cols = [prog.let_vector(f"{t}_A{j}", matvec(RT, col[:3]) + matvec(RT, col[3:]))
                     for j, col in enumerate(self.cols)]
        for j, d in enumerate(self.dcols):
            d[0] = prog.let_vector(f"{t}_D{j}", matvec(RT, d[0][:3]) + matvec(RT, d[0][3:]))
        self.v0 = prog.let_vector(f"{t}_v", matvec(RT, self.v0[:3]) + matvec(RT, self.v0[3:]))
        new_eps = matvec(RT, add(eps, scale(rate, cross(w, u))))
        self.acc = prog.let_vector(f"{t}_w", matvec(RT, self.acc[:3]) + add(new_eps, scale(accel, u)))

    def transform(self, t, tr):
        prog, scope = self.prog, self.scope
        if tr.kind == "offset":
            c = [ex.parse(x, scope) for x in tr.vector]
            w, eps = self.omega(), self.acc[3:]
            self.shift(t, c)
            acc = self.acc
            self.acc = prog.let_vector(f"{t}_w", add(add(acc[:3], cross(eps, c)), cross(w, cross(w, c))) + acc[3:])
            return
        u = unit_vector(tr.vector, scope)
        if tr.q is not None:
            qs_ = ex.coord_symbol(tr.q)
            val, rate, accel = qs_, ex.rate_symbol(tr.q), sp.Integer(0)
            self.names.append(tr.q), self.qs.append(qs_), self.qds.append(rate)
        else:
            val = ex.parse(tr.by, scope)
            rate, accel = sp.diff(val, ex.T), sp.diff(val, ex.T, 2)
        w, eps = self.omega(), self.acc[3:]
        if tr.kind in ("translate", "screw"):    # translate along u by val
            r = scale(val, u)
            self.shift(t, r)
            acc = self.acc
            lin = add(add(acc[:3], cross(eps, r)), cross(w, cross(w, r)))
            lin = add(add(lin, scale(2 * rate, cross(w, u))), scale(accel, u))
            self.acc = prog.let_vector(f"{t}_w", lin + acc[3:])
        turn = 1
        if tr.kind in ("rotate", "screw"):       # rotate about u by val (screw: 2 pi val / pitch)
            if tr.kind == "screw":
                turn = 2 * sp.pi / ex.parse(tr.pitch, scope)
                val, rate, accel = turn * val, turn * rate, turn * accel
                t = f"{t}r"
            self.turn_by(t, u, val, rate, accel, w, eps)
        self._motion(tr, u, rate, accel, turn)

    def _motion(self, tr, u, rate, accel, turn):
        # the coordinate's column [a^v; a^w] (1.4), or the driven part of the relative velocity;
        # u is unchanged by a rotation about itself
        lin_part = list(u) if tr.kind != "rotate" else list(ZERO3)
        ang_part = list(ZERO3) if tr.kind == "translate" else scale(turn, u)
        v0 = self.v0
        if tr.q is not None:
            self.cols.append(lin_part + ang_part)
        elif tr.kind == "translate":
            self.v0 = add(v0[:3], scale(rate, u)) + v0[3:]
        elif tr.kind == "rotate":
            self.v0 = v0[:3] + add(v0[3:], scale(rate, u))
        else:                                  # a driven screw: rate is turn * d(val)/dt
            self.v0 = add(v0[:3], scale(rate / turn, u)) + add(v0[3:], scale(rate, u))
        if tr.q is None and (rate != 0 or accel != 0):      # a moving driven transform, one by one
            per = turn if tr.kind != "translate" else 1
            self.dcols.append([lin_part + ang_part, rate / per, accel / per, len(self.cols)])


def body_inertia(spec, body, i: int, prog: Program, scope) -> BodyInertia:
    """M_i of (1.36) about O_i: mass, first moment h = m r_c and Theta_O (parallel axes)."""
    m = ex.parse(body.mass, scope)
    rc = [ex.parse(x, scope) for x in body.com]
    ixx, iyy, izz, ixy, iyz, ixz = [ex.parse(x, scope) for x in body.inertia]
    theta_c = sp.Matrix([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    m = prog.let(f"m{i}", m)
    h = prog.let_vector(f"h{i}", scale(m, rc))
    r2 = rc[0] ** 2 + rc[1] ** 2 + rc[2] ** 2
    theta = theta_c + m * (r2 * sp.eye(3) - sp.Matrix(3, 1, rc) * sp.Matrix(1, 3, rc))
    theta = prog.let_symmetric(f"Th{i}", theta)
    return BodyInertia(mass=m, h=h, theta=theta, com=rc)


def derive_kinematics(spec, topo) -> Kinematics:
    """Joint kinematics and inertia of every body, in regular numbering."""
    prog = Program()
    scope = spec.scope(time_allowed=True)
    joints, inertia, coords = [None], [None], []
    by_name = {b.name: b for b in spec.bodies}
    for i in range(1, topo.n_bodies + 1):
        body = by_name[topo.names[i]]
        jk = joint_kinematics(spec, body, i, prog, scope)
        joints.append(jk)
        inertia.append(body_inertia(spec, body, i, prog, scope))
        coords.extend(jk.coordinates)
    _check_independent(spec, topo, joints, prog)
    gravity = [ex.parse(g, scope.child(time_allowed=False)) for g in spec.gravity]
    return Kinematics(spec=spec, topo=topo, program=prog, joints=joints, inertia=inertia,
                      gravity=gravity, coordinates=tuple(coords))


def numeric_values(prog: Program, subs: dict) -> dict:
    """Evaluate every intermediate of `prog` at the numbers `subs` (a tiny interpreter)."""
    vals = {k: sp.Float(v) for k, v in subs.items()}
    for sym, e in prog.assignments:
        vals[sym] = e.xreplace(vals)
    return vals


def _check_independent(spec, topo, joints, prog):
    """A joint whose coordinates are not independent (A_i rank-deficient) is an error."""
    rng = np.random.default_rng(12345)
    subs = dict(spec.defaults())
    subs[ex.T] = 0.37
    for jk in joints[1:]:
        for q, qd in zip(jk.q, jk.qd):
            subs[q], subs[qd] = rng.uniform(-1.0, 1.0), rng.uniform(-1.0, 1.0)
    vals = numeric_values(prog, subs)
    by_name = {b.name: b for b in spec.bodies}
    problems = []
    for jk in joints[1:]:
        n = len(jk.A)
        if n == 0:
            continue
        A = np.array([[float(sp.sympify(jk.A[c][r]).xreplace(vals)) for c in range(n)] for r in range(6)])
        sv = np.linalg.svd(A, compute_uv=False)
        tol = 1e-9 * max(1.0, sv.max())
        if sv.min() <= tol:
            body = by_name[topo.names[jk.body]]
            problems.append(Problem(f"{body.path}.joint",
                                    f"the coordinates {', '.join(f'`{c}`' for c in jk.coordinates)} of body "
                                    f"`{body.name}` are not independent (the joint basis A_i has rank "
                                    f"{int((sv > tol).sum())} < {n})"))
    if problems:
        raise ModelError(spec.file, problems)
