"""The symbolic-numeric mode (dissertation 5.1.3) as forms: only the relative kinematics of each
joint, the body inertias and the active forces are generated; the recursions of the form run as
the hand-written loops of templates/native/numeric_core.h, the same for every model.

`mode="numeric"` selects the variant registered here for a form (`register_numeric`); it goes
through the same stages as every form (form_equations -> lower -> render), with the module kind
"numeric": one kernel `numeric_terms(t, q, qd, p) -> T` in the layout of numeric_core.h (per
body G_i (9), rho_i (3), vr_hat_i (6), wr_hat_i (6), m_i, h_i (3), Theta_i (6), the active wrench
F_i (6); then A (6 per coordinate), the generalized forces (one per coordinate), gravity (3) and
the armature (one per coordinate, added to M's diagonal)),
and the topology as constant tables (kappa, first, ndof, lambda). The C backend's entry points
for the kind call the core's recursion with them (render/c.py). Generation time and code size
are O(bodies), not O(size of the unrolled recursion).

Active forces that need absolute positions or velocities of a body (spring-dampers, bushings,
forces in the ground frame) generate the forward kinematics of that body's path to the root
symbolically, on demand (`_LazyForward`); joint forces and body-frame forces need none.
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms import NUMERIC_FORMS, EquationsOfMotion, KernelSpec
from dynamica.generator.forms.parts.common import Z3
from dynamica.generator.ir.program import add, cross, matTvec, matvec
from dynamica.generator.mechanics.forces import active_forces, armature_terms

#: doubles per body in the terms array (DYN_NM_TB in templates/native/numeric_core.h)
TB = 40


class _LazyList:
    def __init__(self, fill):
        self._fill, self._memo = fill, {}

    def __getitem__(self, i):
        if i not in self._memo:
            self._fill(i)
        return self._memo[i]


class _LazyForward:
    """The fields of common.ForwardPass that active_forces reads (v, R0, r0), computed on demand
    for the bodies it asks about (and their paths to the root), with the same formulas."""

    def __init__(self, kin):
        self.kin = kin
        self.v = _LazyList(self._fill_v)
        self.R0 = _LazyList(self._fill_pose)
        self.r0 = _LazyList(self._fill_pose)
        self.v._memo[0] = [sp.Integer(0)] * 6
        self.R0._memo[0] = sp.eye(3)
        self.r0._memo[0] = list(Z3)

    def _path(self, i, memo):
        path = []
        while i not in memo:
            path.append(i)
            i = self.kin.topo.kappa[i]
        return reversed(path)

    def _fill_v(self, i):
        prog, memo = self.kin.program, self.v._memo
        for b in self._path(i, memo):
            jk, k = self.kin.joints[b], self.kin.topo.kappa[b]
            G = jk.G
            rp = prog.let_vector(f"nm_rp{b}", matvec(G, jk.rho))
            vr = list(jk.vr_hat)
            for col, qd in zip(jk.A, jk.qd):
                vr = [a + qd * c for a, c in zip(vr, col)]
            vr = prog.let_vector(f"nm_vr{b}", vr)
            wk = prog.let_vector(f"nm_wk{b}", matvec(G, memo[k][3:]))
            vk = add(matvec(G, memo[k][:3]), cross(wk, rp))
            memo[b] = prog.let_vector(f"nm_v{b}", add(vk, vr[:3]) + add(wk, vr[3:]))

    def _fill_pose(self, i):
        prog, R0, r0 = self.kin.program, self.R0._memo, self.r0._memo
        for b in self._path(i, R0):
            jk, k = self.kin.joints[b], self.kin.topo.kappa[b]
            R0[b] = prog.let_matrix(f"nm_R{b}", jk.G * R0[k])
            r0[b] = prog.let_vector(f"nm_r{b}", add(r0[k], matTvec(R0[k], jk.rho)))


def terms_outputs(kin) -> list:
    """The expressions of the terms array, in the layout of templates/native/numeric_core.h."""
    F, gen, _ = active_forces(kin, _LazyForward(kin))
    out = []
    for i in range(1, kin.topo.n_bodies + 1):
        jk, bi = kin.joints[i], kin.inertia[i]
        th = bi.theta
        out += [jk.G[r, c] for r in range(3) for c in range(3)]
        out += list(jk.rho) + list(jk.vr_hat) + list(jk.wr_hat)
        out += [bi.mass] + list(bi.h) + [th[0, 0], th[0, 1], th[0, 2], th[1, 1], th[1, 2], th[2, 2]]
        out += list(F[i])
    assert len(out) == TB * kin.topo.n_bodies
    for i in range(1, kin.topo.n_bodies + 1):
        for col in kin.joints[i].A:
            out += list(col)
    out += [gen[c] for c in kin.coordinates]
    out += list(kin.gravity)
    arm = armature_terms(kin)                         # MuJoCo's dof_armature: + diag(a) on M (D_i)
    out += [arm.get(c, 0) for c in kin.coordinates]
    return out


def topology_tables(kin) -> tuple:
    """kappa, first, ndof (index 0 unused) and lambda (preceding coordinate towards the root), as
    the module's constant tables ((name, values), ...)."""
    topo = kin.topo
    nb = topo.n_bodies
    kappa, first, ndof = [0] * (nb + 1), [0] * (nb + 1), [0] * (nb + 1)
    lam, last = [], [-1] * (nb + 1)          # last[i]: last coordinate on the path root..i
    k = 0
    for i in range(1, nb + 1):
        kappa[i] = topo.kappa[i]
        if kappa[i] >= i:
            raise ValueError("numeric mode needs regular numbering (kappa[i] < i)")
        ni = len(kin.joints[i].A)
        first[i], ndof[i] = k, ni
        prev = last[kappa[i]]
        for _ in range(ni):
            lam.append(prev)
            prev = k
            k += 1
        last[i] = prev
    return (("dyn_nm_kappa", tuple(kappa)), ("dyn_nm_first", tuple(first)), ("dyn_nm_ndof", tuple(ndof)),
            ("dyn_nm_lambda", tuple(lam or [-1])))


def numeric_form(name: str):
    """The numeric variant of form `name`: its recursion is numeric_core.h's dyn_nm_<name>_qdd."""
    def form(kin) -> EquationsOfMotion:
        terms = terms_outputs(kin)
        q = tuple(s for jk in kin.joints[1:] for s in jk.q)
        qd = tuple(s for jk in kin.joints[1:] for s in jk.qd)
        # structural zeros are not stored: the core clears the array before the call (dyn_nm_terms);
        # thousands of `= 0.0` stores cost the C compiler more than the rest of the kernel
        terms_kernel = KernelSpec("numeric_terms", ("t", "q", "qd", "p"), (("T", terms),), skip_zero_stores=True,
                                  hints=("O1",))
        return EquationsOfMotion(form=name, kind="lagrangian", program=kin.program, coordinates=kin.coordinates,
                                 q=q, qd=qd, entries="numeric", mode="numeric", extra_kernels=(terms_kernel,),
                                 info={"mode": "numeric", "bodies": kin.topo.n_bodies},
                                 tables=topology_tables(kin))
    form.__name__ = f"{name}_numeric"
    return form


for _name in ("composite", "articulated", "ltdl"):
    NUMERIC_FORMS[_name] = numeric_form(_name)
