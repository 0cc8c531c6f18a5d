"""Numeric reference: the composite-body algorithm evaluated with numpy, no unrolled generation.

Independent of the generator on purpose: it shares no code with generator/ beyond the validated
plain data of the loader (ModelSpec: the model's expression texts, inertia components in the
documented order). It reads the joints from the model file itself (shorthands expanded and named
axes mapped as docs/model_format.md says; a model given as a mapping uses the loader's expanded
transforms), parses the expression texts itself (Python's `ast`, the grammar of
docs/model_format.md, into sympy), numbers the bodies itself, builds the elementary rotations
itself, and takes the joint quantities from differentiating rho_i(q, t) and
G_i(q, t) as (1.2)-(1.5) define them (the generator composes velocities through the transforms
instead); the recursions use explicit 6x6 matrices C_i, M_i and T_ij ((1.13), (1.33), (1.36),
(2.19)-(2.22)) in ordinary loops, and the force laws are written out from docs/model_format.md
(runtime/reference/forces.py: one law per force type; a type without one is an error).
`dynamica check` and the tests compare the compiled module with it at random states and
parameters; a convention error in the generator (an axis sign, a rotation's sense, the order of
the inertia components, a force's frame) is therefore not repeated here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import sympy as sp

from dynamica.runtime.reference.forces import LAWS, ActiveSums
from dynamica.runtime.reference.names import LAW_LOCALS, Names, joint_transforms, skew, unskew
from dynamica.runtime.reference.reader import read


@dataclass(frozen=True)
class Tree:
    """Bodies numbered 1..N, each after its parent (depth first from ground, children in file
    order); kappa[i] the parent, paths[i] the bodies from ground to i."""

    names: tuple
    kappa: tuple
    paths: tuple

    @classmethod
    def of(cls, spec):
        children = {}
        for b in spec.bodies:
            children.setdefault(b.parent, []).append(b.name)
        names, parent_of, stack = ["ground"], {}, [("ground", c) for c in reversed(children.get("ground", []))]
        while stack:
            parent, name = stack.pop()
            parent_of[name] = parent
            names.append(name)
            stack += [(name, c) for c in reversed(children.get(name, []))]
        kappa = [-1] + [names.index(parent_of[n]) for n in names[1:]]
        paths = [()]
        for i in range(1, len(names)):
            paths.append(paths[kappa[i]] + (i,))
        return cls(tuple(names), tuple(kappa), tuple(paths))


def elementary_G(u, angle) -> sp.Matrix:
    """Coordinates in the frame turned by `angle` about the unit axis u (right-hand rule) from
    coordinates in the frame before: the transpose of the rotation exp(angle u~),
    G = cos I + (1 - cos) u u^T - sin u~."""
    U = sp.Matrix([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return sp.cos(angle) * sp.eye(3) + (1 - sp.cos(angle)) * (u * u.T) - sp.sin(angle) * U


def unit(v: sp.Matrix) -> sp.Matrix:
    return v / sp.sqrt(sum(x * x for x in v))


class NumericReference:
    """qdd, mass matrix and energy of a ModelSpec, computed numerically."""

    def __init__(self, spec):
        self.spec = spec
        self.data = data = read(spec)             # the file's numbers and texts, read here
        self.names = names = Names(spec, data.functions)
        self.topo = topo = Tree.of(spec)
        self.N = N = len(topo.names) - 1
        self.psyms = names.params
        self.slots = names.slots
        values = data.parameters
        self.defaults = np.array([0.0 if not n else values[n] if k is None else values[n][k] for n, k in names.slots],
                                 dtype=float)
        joints = joint_transforms(spec)
        self.coordinates = []
        self.joint_fns, self.slices, self.inertia_fns = [None], [None], [None]
        for i in range(1, N + 1):
            body = topo.names[i]
            coords = [x[2] for x in joints[body] if x[2] is not None]
            start = len(self.coordinates)
            self.coordinates += coords
            self.slices.append(slice(start, len(self.coordinates)))
            self.joint_fns.append(self._joint(joints[body], [names.q[c] for c in coords],
                                              [names.qd[c] for c in coords]))
            mass, com, inertia = data.bodies[body]
            m = names.expr(mass)
            rc = names.vector(com)
            ixx, iyy, izz, ixy, iyz, ixz = [names.expr(x) for x in inertia]   # docs/model_format.md order
            self.inertia_fns.append(sp.lambdify([self.psyms], [m, rc, sp.Matrix(
                [[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])], "numpy"))
        self.gravity_fn = sp.lambdify([self.psyms], names.vector(data.gravity), "numpy")
        self._forces()

    # -- joint kinematics by differentiation, (1.1)-(1.5)
    def _joint(self, transforms, q, qd):
        names = self.names
        G = sp.eye(3)            # parent -> current frame
        rho = sp.zeros(3, 1)     # current origin in parent frame
        for kind, vector, coordinate, by, pitch in transforms:
            if kind == "offset":
                rho = rho + G.T * names.vector(vector)
                continue
            u = unit(names.vector(vector))
            val = names.q[coordinate] if coordinate is not None else names.expr(by)
            if kind in ("translate", "screw"):            # a screw: s along u, 2 pi s / pitch about u
                rho = rho + G.T * u * val
            if kind in ("rotate", "screw"):
                G = elementary_G(u, val if kind == "rotate" else 2 * sp.pi * val / names.expr(pitch)) * G
        t = names.t
        n = len(q)
        A = sp.zeros(6, n)
        for k in range(n):
            A[0:3, k] = G * rho.diff(q[k])
            A[3:6, k] = unskew(G * G.T.diff(q[k]))
        vhat = sp.Matrix.vstack(G * rho.diff(t), unskew(G * G.T.diff(t)))
        qdv = sp.Matrix(qd)
        vr = A * qdv + vhat if n else vhat
        lin, ang = vr[0:3, :], vr[3:6, :]

        def ddt(e):      # total time derivative with q'' = 0
            return sum((e.diff(qk) * qdk for qk, qdk in zip(q, qd)), sp.zeros(*e.shape)) + e.diff(t)
        what = sp.Matrix.vstack(ddt(lin) + _skew_sym(ang) * lin, ddt(ang))
        args = [q, qd, t, self.psyms]
        # sympy's common subexpressions (cse=True): the nested joint steps differentiated twice print
        # as trees many times their DAG's size (a seven-step joint: 22 s to lambdify, 3.5 s with it)
        return sp.lambdify(args, [rho, G, A, vhat, what], "numpy", cse=True)

    def _forces(self):
        names = self.names
        args = [[names.q[c] for c in self.coordinates], [names.qd[c] for c in self.coordinates], names.t, self.psyms]
        law_args = args + [[names.local[n] for n in LAW_LOCALS]]
        self.forces = []
        for kind, fields in self.data.forces:
            if kind not in LAWS:
                raise ValueError(f"force `{fields['name']}`: the numeric reference has no law for the force type "
                                 f"`{kind}` (runtime/reference/forces.py)")
            law = LAWS[kind]
            fn = {}
            for key, v in fields.items():
                if key == "law":
                    fn[key] = sp.lambdify(law_args, names.expr(v, law=True), "numpy")
                elif key in law.vectors and isinstance(v, tuple):
                    fn[key] = sp.lambdify(args, names.vector(v), "numpy")
                elif key in law.scalars:
                    fn[key] = sp.lambdify(args, names.expr(v), "numpy")
                else:
                    fn[key] = v
            self.forces.append((kind, fn))

    # -- the recursion
    def _state(self, q, qd, t, p):
        N, topo = self.N, self.topo
        dt = complex if (np.iscomplexobj(q) or np.iscomplexobj(qd) or np.iscomplexobj(t)) else float
        g = np.asarray(self.gravity_fn(p), dtype=float).reshape(3)
        C = [None] * (N + 1)
        A = [None] * (N + 1)
        Mb = [None] * (N + 1)
        v = [np.zeros(6, dtype=dt)] + [None] * N
        what = [np.concatenate([-g, np.zeros(3)])] + [None] * N
        R0 = [np.eye(3)] + [None] * N
        r0 = [np.zeros(3)] + [None] * N
        rcs = [None] * (N + 1)
        for i in range(1, N + 1):
            k = topo.kappa[i]
            s = self.slices[i]
            rho, G, Ai, vh, wh = self.joint_fns[i](q[s], qd[s], t, p)
            rho = np.asarray(rho, dt).reshape(3)
            G = np.asarray(G, dt)
            Ai = np.asarray(Ai, dt).reshape(6, s.stop - s.start)
            vh = np.asarray(vh, dt).reshape(6)
            wh = np.asarray(wh, dt).reshape(6)
            Ci = np.zeros((6, 6), dtype=dt)
            Ci[:3, :3] = G
            Ci[:3, 3:] = -G @ skew(rho)
            Ci[3:, 3:] = G
            C[i], A[i] = Ci, Ai
            vr = Ai @ qd[s] + vh
            v[i] = Ci @ v[k] + vr                                         # (1.13)
            wk = v[k][3:]
            wc = np.concatenate([G @ skew(wk) @ skew(wk) @ rho + 2 * G @ skew(wk) @ G.T @ vr[:3],
                                 G @ skew(wk) @ G.T @ vr[3:]])            # w^c after (1.12)
            what[i] = Ci @ what[k] + wc + wh                              # (1.33)
            R0[i] = G @ R0[k]                                             # (1.9)
            r0[i] = r0[k] + R0[k].T @ rho                                 # (1.10)
            m, rc, Ic = self.inertia_fns[i](p)
            rc = np.asarray(rc, float).reshape(3)
            Ic = np.asarray(Ic, float)
            rcs[i] = (m, rc, Ic)
            Mi = np.zeros((6, 6))
            Mi[:3, :3] = m * np.eye(3)
            Mi[:3, 3:] = -m * skew(rc)
            Mi[3:, :3] = m * skew(rc)
            Mi[3:, 3:] = Ic - m * skew(rc) @ skew(rc)                     # about O_i
            Mb[i] = Mi
        return dict(C=C, A=A, M=Mb, v=v, what=what, R0=R0, r0=r0, rcs=rcs, g=g)

    def _active(self, st, q, qd, t, p):
        N = self.N
        sums = ActiveSums(q, qd, t, p, st, [np.zeros(6) for _ in range(N + 1)], np.zeros(len(self.coordinates)),
                          self.topo.names, self.coordinates, tuple(self.slices))
        for ftype, fn in self.forces:
            LAWS[ftype].contribute(sums, fn)          # every type has a law (checked in _forces)
        return sums.F, sums.gen

    def _params(self, params):
        return self.defaults if params is None else np.asarray(params, dtype=float)

    def equations(self, q, qd, t=0.0, params=None):
        """Mass matrix and right-hand side Q of (1.41) by (2.19)-(2.22)."""
        p = self._params(params)
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        st = self._state(q, qd, t, p)
        F, gen = self._active(st, q, qd, t, p)
        N, topo = self.N, self.topo
        C, A, Mb = st["C"], st["A"], st["M"]
        Fhat = [None] * (N + 1)
        for i in range(1, N + 1):
            m, rc, Ic = st["rcs"][i]
            w = st["v"][i][3:]
            Theta = Mb[i][3:, 3:]
            Fc = np.concatenate([-m * skew(w) @ skew(w) @ rc, -skew(w) @ Theta @ w])
            Fhat[i] = Fc + F[i] - Mb[i] @ st["what"][i]                    # (2.14)
        Ms = [None] + [Mb[i].copy() for i in range(1, N + 1)]
        Fs = [None] + [Fhat[i].copy() for i in range(1, N + 1)]
        for i in range(N, 0, -1):                                         # (2.20), (2.22)
            k = topo.kappa[i]
            if k > 0:
                Ms[k] += C[i].T @ Ms[i] @ C[i]
                Fs[k] += C[i].T @ Fs[i]
        n = len(self.coordinates)
        M, Q = np.zeros((n, n)), np.zeros(n)
        for i in range(1, N + 1):
            si = self.slices[i]
            Q[si] = A[i].T @ Fs[i]                                        # (2.21)
            Tij = np.eye(6)
            j = i
            while j > 0:                                                  # (2.19), T_ij by (1.24)
                sj = self.slices[j]
                M[si, sj] = A[i].T @ Ms[i] @ Tij @ A[j]
                M[sj, si] = M[si, sj].T
                Tij = Tij @ C[j]
                j = topo.kappa[j]
        for ftype, fn in self.forces:                                     # MuJoCo's armature: M[c, c] += a
            if ftype == "armature":
                k = self.coordinates.index(fn["coordinate"])
                M[k, k] += fn["inertia"](q, qd, t, p)
            elif ftype == "rotation_armature":
                s, B, b = self._rotation_armature(fn, q, qd, t, p)
                M[s, s] += B
                Q[s] -= b
        return M, Q + gen

    def _rotation_armature(self, fn, q, qd, t, p):
        """(slice, a W^T W, a W^T W' q') of a `rotation_armature` (MuJoCo's armature on the joint's
        relative angular velocity w = W q', W the angular rows of its columns): W' q' by a complex step
        of W along q', Im W(q + i h q') q' / h (exact to rounding)."""
        i = self.topo.names.index(fn["body"])
        s = self.slices[i]
        n, h = s.stop - s.start, 1e-30
        W = np.asarray(self.joint_fns[i](q[s], qd[s], t, p)[2], float).reshape(6, n)[3:]
        Wc = np.asarray(self.joint_fns[i](q[s] + 1j * h * qd[s], qd[s], t, p)[2], complex).reshape(6, n)[3:]
        a = fn["inertia"](q, qd, t, p)
        return s, a * W.T @ W, a * W.T @ ((Wc.imag / h) @ qd[s])

    def qdd(self, q, qd, t=0.0, params=None):
        M, Q = self.equations(q, qd, t, params)
        return np.linalg.solve(M, Q)

    def mass_matrix(self, q, t=0.0, params=None):
        return self.equations(q, np.zeros(len(self.coordinates)), t, params)[0]

    def physical(self, params=None, tol=1e-12):
        """True when every body's 6x6 inertia M_i (about O_i) is positive semidefinite with a
        positive mass, or zero (a massless frame), at these parameters."""
        p = self._params(params)
        for i in range(1, self.N + 1):
            m, rc, Ic = self.inertia_fns[i](p)
            Ic = np.asarray(Ic, float)
            if float(m) == 0.0 and not Ic.any():
                continue
            if float(m) < 0 or np.linalg.eigvalsh(Ic).min() < -tol * max(1.0, abs(Ic).max()):
                return False
        return True

    # -- Hamiltonian variables (1.49): pm = B^T M v and its time derivative
    def momenta(self, q, qd, t=0.0, params=None):
        """Poisson momenta pm = B^T M v (1.49): A_i^T of the subtree momenta T^T M v at O_i.

        Complex q, qd, t are allowed (complex-step differentiation in `pmd`)."""
        p = self._params(params)
        st = self._state(q, qd, t, p)
        N, topo = self.N, self.topo
        P = [None] + [st["M"][i] @ st["v"][i] for i in range(1, N + 1)]
        for i in range(N, 0, -1):
            k = topo.kappa[i]
            if k > 0:
                P[k] = P[k] + st["C"][i].T @ P[i]
        out = np.zeros(len(self.coordinates), dtype=P[1].dtype if N else float)
        for i in range(1, N + 1):
            out[self.slices[i]] = st["A"][i].T @ P[i]
        return out

    def pmd(self, q, qd, t=0.0, params=None, h=1e-30):
        """d pm / dt along the motion through (q, qd) at t, with q'' from the Lagrangian equations:

            pm' = (d pm/d qd) q'' + (d pm/d q) q' + d pm/d t = M q'' + D_(q', 0, 1) pm = Q + D pm,

        since pm = M(q, t) q' + B^T M v_hat is linear in q' (1.56) and M q'' = Q (1.41). The
        directional derivative D pm along (q', 0, 1) is one complex-step evaluation
        Im pm(q + i h q', q', t + i h) / h (exact to rounding; the joint functions must be
        analytic, which every grammar function used in a transform is, except abs/sign/min/max/
        heaviside)."""
        p = self._params(params)
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        _, Q = self.equations(q, qd, t, p)
        dpm = self.momenta(q + 1j * h * qd, qd.astype(complex), t + 1j * h, p).imag / h
        return Q + dpm

    def energy(self, q, qd, t=0.0, params=None):
        """Kinetic + gravity + the force elements' potential energy (and the armatures' kinetic
        energy), for checks of conservative models; a force without a potential is an error."""
        p = self._params(params)
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        st = self._state(q, qd, t, p)
        E = 0.0
        for i in range(1, self.N + 1):
            E += 0.5 * st["v"][i] @ st["M"][i] @ st["v"][i]
            m, rc, _ = st["rcs"][i]
            E -= m * st["g"] @ (st["r0"][i] + st["R0"][i].T @ rc)
        a = ActiveSums(q, qd, t, p, st, None, None, self.topo.names, self.coordinates, tuple(self.slices))
        for ftype, fn in self.forces:                     # each law's energy (runtime/reference/forces.py)
            if LAWS[ftype].energy is None:
                raise ValueError(f"energy() is defined only for conservative models: force `{fn['name']}` "
                                 f"({ftype}) has no potential")
            E += LAWS[ftype].energy(a, fn)
        return E


def _skew_sym(a):
    return sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
