"""Inverse dynamics as a module of its own kind, "inverse": the generalized forces tau that give a
motion (q, q', q''), by the recursive Newton-Euler algorithm unrolled like the forms, and the
generalized gravity forces. Built on demand (runtime/kinds/inverse.py: `model.inverse_dynamics`).

Symbol table (frame of body i; (1.13), (1.33), (2.14), the backward pass of (3.8)):
  z_i   = C_i z_k + A_i q''_i                   the part of the acceleration of O_i due to q''
  w_hat_i                                       the rest: bias accelerations with the accelerated
                                                ground w_hat_0 = [-g; 0] (common.forward_pass)
  F_hat_i = F^c_i + F_i - M_i w_hat_i           velocity terms, active forces, bias (2.14)
  R_i   = M_i z_i - F_hat_i + sum_{j in S_i} C_j^T R_j    the wrench the parent exerts on body i
  tau_c = A_i^T R_i - Q_c                       for the coordinates c of joint i, Q_c the model's
                                                generalized forces (joint springs, limits, ...)

so that M q'' = Q(t, q, q') + tau: tau = 0 exactly when q'' is the model's own acceleration, and
for a model with no force elements tau = M q'' + C(q, q') q' + g(q) as Pinocchio's rnea. The
gravity forces g(q) are the same recursion at rest with gravity only: R_i = M_i [-G_i0 g; 0] +
sum_j C_j^T R_j, g_c = A_i^T R_i (Pinocchio's computeGeneralizedGravity: the forces that hold
the system still).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms import EquationsOfMotion, KernelSpec
from dynamica.generator.forms.parts.common import bias_forces, forward_pass
from dynamica.generator.forms.parts.spatial import apply_C, apply_CT, coordinate_layout, inertia_times
from dynamica.generator.ir.kinds import ModuleKind, register_kind
from dynamica.generator.ir.program import dot, fold_vectors, matvec
from dynamica.generator.mechanics.forces import active_forces
from dynamica.generator.mechanics.kinematics import derive_kinematics
from dynamica.generator.spec import expr as ex

KIND = "inverse"


def _backward(kin, prog, own, name):
    """R_i = own_i + sum_{j in S_i} C_j^T R_j from the leaves to the root; tau per coordinate A^T R."""
    N, topo = kin.topo.n_bodies, kin.topo
    R = [None] * (N + 1)
    for i in range(N, 0, -1):
        terms = [own[i]] + [apply_CT(kin.joints[j].G, kin.joints[j].rho, R[j]) for j in topo.children[i]]
        R[i] = prog.let_vector(f"{name}R{i}", fold_vectors(terms))
    owner, local, _ = coordinate_layout(kin)
    return [dot(kin.joints[i].A[c], R[i]) for i, c in zip(owner, local)]


def _armature(kin, qdd) -> list:
    """MuJoCo's armature, per coordinate: the joint's armature block times q'' (a q'' on a single
    coordinate; forces.armature_blocks)."""
    from dynamica.generator.mechanics.forces import armature_blocks
    _, _, first = coordinate_layout(kin)
    out = [sp.Integer(0)] * len(kin.coordinates)
    for i, block in armature_blocks(kin).items():
        for r, row in enumerate(block):
            out[first[i] + r] = sum((a * qdd[first[i] + k] for k, a in enumerate(row) if a != 0), sp.Integer(0))
    return out


def inverse_equations(spec, topo) -> EquationsOfMotion:
    """The kernels `inverse_dynamics` (t, q, qd, qdd, p) -> tau and `gravity` (t, q, p) -> tau."""
    kin = derive_kinematics(spec, topo)
    prog, N = kin.program, topo.n_bodies
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    F_hat = bias_forces(kin, fp, F_active)
    qdd = tuple(sp.Symbol(f"qdd:{c}", real=True) for c in kin.coordinates)
    _, _, first = coordinate_layout(kin)
    z = [[sp.Integer(0)] * 6] + [None] * N
    own = [None] * (N + 1)
    for i in range(1, N + 1):
        jk = kin.joints[i]
        zi = apply_C(jk.G, fp.rho_p[i], z[topo.kappa[i]])
        for c, col in enumerate(jk.A):
            zi = [a + qdd[first[i] + c] * b for a, b in zip(zi, col)]
        z[i] = prog.let_vector(f"idz{i}", zi)
        bi = kin.inertia[i]
        own[i] = [a - b for a, b in zip(inertia_times((bi.mass, bi.h, bi.theta), z[i]), F_hat[i])]
    tau = [x - gen[c] + a for x, c, a in zip(_backward(kin, prog, own, "id"), kin.coordinates, _armature(kin, qdd))]
    grav = [None] * (N + 1)
    for i in range(1, N + 1):
        bi = kin.inertia[i]
        a = [-x for x in matvec(fp.R0[i], kin.gravity)] + [sp.Integer(0)] * 3
        grav[i] = inertia_times((bi.mass, bi.h, bi.theta), a)
    g = _backward(kin, prog, grav, "gr")
    qs = tuple(ex.coord_symbol(c) for c in kin.coordinates)
    qds = tuple(ex.rate_symbol(c) for c in kin.coordinates)
    kernels = (KernelSpec("inverse_dynamics", ("t", "q", "qd", "qdd", "p"), (("tau", tau),), symbols=(("qdd", qdd),)),
               KernelSpec("gravity", ("t", "q", "p"), (("tau", g),)))
    return EquationsOfMotion(form=KIND, kind=KIND, program=prog, coordinates=kin.coordinates, q=qs, qd=qds,
                             extra_kernels=kernels, entries=KIND)


def generate_inverse(spec, backend="c"):
    """The SourceBundle of a model's inverse-dynamics module `<model>_inverse`."""
    from dynamica.generator.ir.lower import lower
    from dynamica.generator.mechanics.topology import build_topology
    from dynamica.generator.render import render
    return render(lower(inverse_equations(spec, build_topology(spec)), spec), backend)


# ------------------------------------------------------------------ the module kind (docs/design.md)
def _c_entries(mod) -> list:
    from dynamica.generator.render.c import ENTRY, PREFIX
    return [{"signature": f"void {ENTRY}inverse_dynamics(double t, const double *q, const double *qd, "
                          "const double *qdd, const double *p, double *tau)",
             "lines": [f"{PREFIX}inverse_dynamics(t, q, qd, qdd, p, tau);"]},
            {"signature": f"void {ENTRY}gravity_forces(double t, const double *q, const double *p, double *tau)",
             "lines": [f"{PREFIX}gravity(t, q, p, tau);"]}]


def _python_entries(mod) -> list:
    from dynamica.generator.render.module import Entry
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    return [Entry("inverse_dynamics", (("q", n, 0), ("qd", n, 0), ("qdd", n, 0), ("p", np_, 0), ("out", n, 1)),
                  "The generalized forces tau with M qdd = Q(t, q, qd) + tau (recursive Newton-Euler) into `out`."),
            Entry("gravity_forces", (("q", n, 0), ("p", np_, 0), ("out", n, 1)),
                  "The generalized gravity forces g(q) (the forces that hold the system still) into `out`.")]


register_kind(ModuleKind(KIND, lambda eom: [], _python_entries, {"c": _c_entries},
                         description="the recursive Newton-Euler inverse dynamics and the gravity forces"))
