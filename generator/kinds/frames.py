"""Operational-space kinematics of one body as a module of its own kind, "frames": the placement,
spatial velocity and classical acceleration of a body frame (or of a frame at a point `at` of the
body, with the body's axes), its Jacobian in the three references Pinocchio names and J'q'. Built
on demand (runtime/kinds/frames.py: `model.frame(body)`), one module per (model, body, at).

Symbol table (frame i: the body's; (1.9)-(1.13), (1.33) with the ground at rest):
  R0_i, r0_i        rotation ground -> frame i and position of O_i (common.forward_pass)
  v_i = [v; w]      velocity of O_i and angular velocity, frame i (1.13)
  a_i = C_i a_k + w^c_i + wr_i + A_i q''_i     classical acceleration of O_i and angular
                    acceleration, frame i ((1.33) with a_0 = 0); b_i the same at q'' = 0 (J'q')
  S = A_j[c]        the twist of coordinate c of joint j at O_j, frame j; its column of the
                    Jacobian of the frame F at p_F = r0_i + R0_i^T at:
                    LOCAL_WORLD_ALIGNED [R0_j^T S_v + (R0_j^T S_w) x (p_F - r0_j); R0_j^T S_w]
                    WORLD               [R0_j^T S_v - (R0_j^T S_w) x r0_j;        R0_j^T S_w]
                    LOCAL               R0_i applied to both halves of LOCAL_WORLD_ALIGNED
Kernels (all exported with their own arguments; REF one of local, world, aligned, Pinocchio's
LOCAL, WORLD, LOCAL_WORLD_ALIGNED):
  frame_placement (t, q, p)                   -> x [12]: p_F, then R = R0_i^T row-major (frame -> ground)
  frame_velocity_REF (t, q, qd, p)            -> v [6]: the spatial velocity [v; w] (getFrameVelocity)
  frame_acceleration_REF (t, q, qd, qdd, p)   -> a [6]: the spatial acceleration (getFrameAcceleration)
  frame_classical_REF (t, q, qd, qdd, p)      -> a [6]: the classical acceleration [a_F; w']
                                                 (getFrameClassicalAcceleration)
  frame_bias_REF (t, q, qd, p)                -> a [6]: the classical acceleration at q'' = 0, J'q'
  frame_jacobian_REF (t, q, p)                -> J [6 n] row-major
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms import EquationsOfMotion, KernelSpec
from dynamica.generator.forms.parts.common import forward_pass
from dynamica.generator.forms.parts.spatial import apply_C, coordinate_layout
from dynamica.generator.ir.kinds import ModuleKind, register_kind
from dynamica.generator.ir.program import add, cross, matTvec, matvec, scale, sub
from dynamica.generator.mechanics.kinematics import derive_kinematics
from dynamica.generator.spec import expr as ex

KIND = "frames"


def _accelerations(kin, fp, path, qdd, name):
    """a_j along the path ((1.33), the ground at rest), with q'' symbols `qdd` (None: q'' = 0)."""
    prog, topo = kin.program, kin.topo
    _, _, first = coordinate_layout(kin)
    a = {0: [sp.Integer(0)] * 6}
    for j in path:
        jk, k = kin.joints[j], topo.kappa[j]
        wk, vr, rp = matvec(jk.G, fp.v[k][3:]), fp.vr[j], fp.rho_p[j]
        wc = add(cross(wk, cross(wk, rp)), scale(2, cross(wk, vr[:3]))) + cross(wk, vr[3:])
        acc = [x + c + w for x, c, w in zip(apply_C(jk.G, rp, a[k]), wc, jk.wr_hat)]
        if qdd is not None:
            for c, col in enumerate(jk.A):
                acc = [e + s_ * qdd[first[j] + c] for e, s_ in zip(acc, col)]
        a[j] = prog.let_vector(f"{name}{j}", acc)
    return a


def _jacobian_columns(kin, fp, path, pF, R0) -> dict:
    """The frame's Jacobian, a column [lin; ang] per coordinate on the body's path P_i, in each
    reference (LOCAL, WORLD, LOCAL_WORLD_ALIGNED); zero columns elsewhere."""
    prog, n = kin.program, len(kin.coordinates)
    _, _, first = coordinate_layout(kin)
    zero = [sp.Integer(0)] * 6
    cols = {"local": [zero] * n, "world": [zero] * n, "aligned": [zero] * n}
    for j in path:
        jk = kin.joints[j]
        Rj, rj = fp.R0[j], fp.r0[j]
        for c, S in enumerate(jk.A):
            sw = prog.let_vector(f"fw{first[j] + c}", matTvec(Rj, S[3:]))
            sv = matTvec(Rj, S[:3])
            lin = prog.let_vector(f"fl{first[j] + c}", add(sv, cross(sw, sub(pF, rj))))
            k = first[j] + c
            cols["aligned"][k] = list(lin) + list(sw)
            cols["world"][k] = sub(sv, cross(sw, rj)) + list(sw)
            cols["local"][k] = matvec(R0, lin) + matvec(R0, sw)
    return cols


def _frame_kernels(placement, velocity, spatial, classical, bias_r, cols, qdd, n) -> tuple:
    """Every quantity in every reference a kernel of its own (a call from Python is one kernel)."""
    q_qd, q_qd_qdd = ("t", "q", "qd", "p"), ("t", "q", "qd", "qdd", "p")
    kernels = (KernelSpec("frame_placement", ("t", "q", "p"), (("x", placement),), export=True),)
    for ref in ("local", "world", "aligned"):
        kernels += (KernelSpec(f"frame_velocity_{ref}", q_qd, (("v", velocity[ref]),), export=True),
                    KernelSpec(f"frame_acceleration_{ref}", q_qd_qdd, (("a", spatial[ref]),),
                               symbols=(("qdd", qdd),), export=True),
                    KernelSpec(f"frame_classical_{ref}", q_qd_qdd, (("a", classical[ref]),),
                               symbols=(("qdd", qdd),), export=True),
                    KernelSpec(f"frame_bias_{ref}", q_qd, (("a", bias_r[ref]),), export=True))
    for ref, J in cols.items():          # row-major 6 x n
        kernels += (KernelSpec(f"frame_jacobian_{ref}", ("t", "q", "p"),
                               (("J", [J[k][r] for r in range(6) for k in range(n)]),), export=True),)
    return kernels


def frame_equations(spec, topo, body: str, at=(0, 0, 0), rot=None) -> EquationsOfMotion:
    """The kernels of the frame F at the point `at` of `body` (body axes) whose axes are `rot`'s
    columns (3 x 3, frame axes -> body axes; None: the body's axes)."""
    kin = derive_kinematics(spec, topo)
    prog = kin.program
    i = topo.index(body)
    at = [sp.sympify(x) for x in at]
    fp = forward_pass(kin)
    path = [j for j in topo.paths[i] if j > 0]
    r0 = fp.r0[i]
    # R0F: ground -> frame F = rot^T R0_i
    R0 = fp.R0[i] if rot is None else prog.let_matrix("RF", sp.Matrix(rot).T * fp.R0[i])
    pF = prog.let_vector("pF", add(r0, matTvec(fp.R0[i], at)))
    placement = list(pF) + [R0[b, a] for a in range(3) for b in range(3)]
    v, w = fp.v[i][:3], fp.v[i][3:]

    def frame_axes(x):                   # a motion [lin; ang] in body axes -> F's axes
        return x if rot is None else matTvec(sp.Matrix(rot), x[:3]) + matTvec(sp.Matrix(rot), x[3:])
    vel = frame_axes(add(v, cross(w, at)) + list(w))
    qdd = tuple(sp.Symbol(f"qdd:{c}", real=True) for c in kin.coordinates)

    def at_point(a):
        return frame_axes(add(add(a[:3], cross(a[3:], at)), cross(w, cross(w, at))) + list(a[3:]))
    acc = at_point(_accelerations(kin, fp, path, qdd, "fa")[i])
    bias = at_point(_accelerations(kin, fp, path, None, "fb")[i])
    n = len(kin.coordinates)
    cols = _jacobian_columns(kin, fp, path, pF, R0)

    # every quantity in every reference a kernel of its own (a call from Python is then one kernel):
    # Rm = R0F^T maps F's axes to the ground's; a motion [lin; ang] of F in LOCAL is, in
    # LOCAL_WORLD_ALIGNED, [Rm lin; Rm ang] and in WORLD [Rm lin + p_F x Rm ang; Rm ang] (the
    # transform of a motion vector to the ground's origin)
    def motion(name, local):
        lin = prog.let_vector(f"{name}l", matTvec(R0, local[:3]))
        ang = prog.let_vector(f"{name}a", matTvec(R0, local[3:]))
        return {"local": list(local), "aligned": list(lin) + list(ang),
                "world": add(lin, cross(pF, ang)) + list(ang)}
    vel = prog.let_vector("fv", vel)
    velocity = motion("fvr", vel)
    # the spatial acceleration (Pinocchio's getFrameAcceleration): the classical one less w x v_F
    wxv = cross(vel[3:], vel[:3])
    vw = velocity["world"]

    def accelerations(name, classical_local):
        spatial = motion(f"{name}s", sub(classical_local[:3], wxv) + list(classical_local[3:]))
        classical = motion(f"{name}c", classical_local)
        # in WORLD, as Pinocchio's getFrameClassicalAcceleration: the spatial one plus w x v
        classical["world"] = add(spatial["world"][:3], cross(vw[3:], vw[:3])) + list(spatial["world"][3:])
        return spatial, classical
    spatial, classical = accelerations("fa", acc)
    _, bias_r = accelerations("fb", bias)
    kernels = _frame_kernels(placement, velocity, spatial, classical, bias_r, cols, qdd, n)
    qs = tuple(ex.coord_symbol(c) for c in kin.coordinates)
    qds = tuple(ex.rate_symbol(c) for c in kin.coordinates)
    return EquationsOfMotion(form=f"frame_{body}", kind=KIND, program=prog, coordinates=kin.coordinates, q=qs,
                             qd=qds, extra_kernels=kernels, entries=KIND,
                             info={"body": body, "at": repr([str(x) for x in at]),
                                   "rot": "" if rot is None else repr([str(x) for x in sp.Matrix(rot)])})


def generate_frame(spec, body: str, at=(0, 0, 0), rot=None, backend="c"):
    """The SourceBundle of the frame module `<model>_frame_<body>`."""
    from dynamica.generator.ir.lower import lower
    from dynamica.generator.mechanics.topology import build_topology
    from dynamica.generator.render import render
    return render(lower(frame_equations(spec, build_topology(spec), body, at, rot), spec), backend)


# ------------------------------------------------------------------ the module kind (docs/design.md)
# every kernel is exported with its own arguments (KernelSpec.export): no entry points of the kind's own
register_kind(ModuleKind(KIND, lambda eom: [], lambda mod: [], {"c": lambda mod: []},
                         description="placement, velocities, accelerations and Jacobians of one frame"))
