"""The derivatives module of a model (issue 16): the equations as a residual and its Jacobian.

A model's derivatives are generated as a module of their own (kind "derivatives"), built on
first use by `dynamica.linearize`, `dynamica.equilibrium` and the radau integrator, whatever
the form, mode and backend of the model's main module. Its kernels:

  residual (t, q, qd, x, p)      -> r [n]          r = M(q) x - Q(t, q, qd): the equations of
                                                   motion as inverse dynamics; r = 0 at x = q''
  residual_jacobian (same)       -> r [n], J [n*2n]  J = [dr/dq | dr/dqd] at fixed x, by the
                                                   forward-mode tangent of `residual`
                                                   (generator/tangent.py)
  mass (t, q, p)                 -> M [n*n]        composite bodies (2.19)-(2.20)

The tape variant (large models) has `residual_partials` (r and the local partials of its
statements, generator/tangent.py tape_kernel) instead of `residual_jacobian`, and
`mass_times` (t, q, x, p) -> M x by the recursions (2.54)-(2.55) instead of `mass`: its
kernels stay O(n) in size, the module file forms J and M from them by loops.

r is computed by the recursions of the forms: the velocities (1.13), the accelerations with the
trial x, a_i = C_i a_kappa_i + w^c_i + wr_i + A_i x_i ((1.33) with the accelerated ground, and
(2.54)), and one backward pass of the net forces f_i = M_i a_i - F^c_i - F_i + sum_{j in S_i}
C_j^T f_j ((2.14), (2.55)), so that r_i = A_i^T f_i - Q^gen_i: a body's forward quantities
depend on the coordinates of its path P_i only, which the tangent keeps.

Linearisation (runtime/linear.py): M dq'' + C dq' + K dq = 0 with C = dr/dqd, K = dr/dq at
x = q''(q, qd); dq''/d[q, qd] = -M^-1 J; the statics' residual is r(q, 0, 0) = -Q and its
Jacobian the stiffness K (runtime/statics.py).
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forces import active_forces
from dynamica.generator.forms import EquationsOfMotion, KernelSpec
from dynamica.generator.forms.common import forward_pass
from dynamica.generator.forms.spatial import apply_C, apply_CT, coordinate_layout, inertia_times, mass_matrix
from dynamica.generator.program import add, cross, dot, fold_vectors, matvec, mul, scale, total

#: the sympy name of trial acceleration j (a role prefix: never a generated intermediate)
ACCEL_PREFIX = "qdd:"


def trial_accelerations(coordinates) -> tuple:
    return tuple(sp.Symbol(f"{ACCEL_PREFIX}{c}", real=True) for c in coordinates)


def residual(kin, x):
    """r = M x - Q by inverse dynamics (module docstring): (one expression per coordinate, the
    forward pass)."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    _, _, first = coordinate_layout(kin)
    a = [[-e for e in kin.gravity] + [sp.Integer(0)] * 3] + [None] * N     # the accelerated ground (1.33)
    for i in range(1, N + 1):            # a_i = C_i a_k + w^c_i + wr_i + A_i x_i: (1.33) with (2.54)
        jk, k = kin.joints[i], topo.kappa[i]
        wk, vr, rp = matvec(jk.G, fp.v[k][3:]), fp.vr[i], fp.rho_p[i]
        wc = add(cross(wk, cross(wk, rp)), scale(2, cross(wk, vr[:3]))) + cross(wk, vr[3:])
        acc = [total([p, c, w]) for p, c, w in zip(apply_C(jk.G, rp, a[k]), wc, jk.wr_hat)]
        for c, col in enumerate(jk.A):
            acc = [total([e, mul(s_, x[first[i] + c])]) for e, s_ in zip(acc, col)]
        a[i] = prog.let_vector(f"IDa{i}", acc)
    terms = [None]
    for i in range(1, N + 1):            # the net force on body i: M_i a_i - F^c_i - F_i (2.14)
        bi = kin.inertia[i]
        w = fp.v[i][3:]
        fc = [-e for e in cross(w, cross(w, bi.h))] + [-e for e in cross(w, matvec(bi.theta, w))]
        ma = inertia_times((bi.mass, bi.h, bi.theta), a[i])
        terms.append([[total([m_, -c, -f]) for m_, c, f in zip(ma, fc, F_active[i])]])
    f = [None] * (N + 1)
    for i in range(N, 0, -1):            # (2.55): carried towards the root by C^T
        f[i] = prog.let_vector(f"IDf{i}", fold_vectors(terms[i]))
        k = topo.kappa[i]
        if k > 0:
            terms[k].append(apply_CT(kin.joints[i].G, kin.joints[i].rho, f[i]))
    out = []
    for i in range(1, N + 1):
        for c, col in enumerate(kin.joints[i].A):
            name = kin.coordinates[first[i] + c]
            out.append(prog.let(f"IDr{first[i] + c}", total([dot(col, f[i]), -gen[name]])))
    return out, fp


#: how the Jacobian is formed: "unrolled" (the tangent program, generator/tangent.py) or "tape"
#: (the statements' local partials generated, the tangents carried by a loop in the module file,
#: runtime/dynamica_linalg.h: for models whose unrolled tangent would be too long to compile)
#: "recursive": the inertial part of J by the analytical recursive derivatives of inverse dynamics,
#: the tangent for the active forces only (generator/derivatives_recursive.py)
VARIANTS = ("unrolled", "tape", "recursive")


def derivative_equations(kin, variant="unrolled") -> EquationsOfMotion:
    """The EquationsOfMotion of a derivatives module (kind "derivatives", module docstring)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown derivatives variant {variant!r}; available: {', '.join(VARIANTS)}")
    x = trial_accelerations(kin.coordinates)
    if variant == "recursive":
        return _recursive_equations(kin, x)
    r, fp = residual(kin, x)
    qs = tuple(q for jk in kin.joints[1:] for q in jk.q)
    qds = tuple(q for jk in kin.joints[1:] for q in jk.qd)
    inputs = ("t", "q", "qd", "x", "p")
    if variant == "unrolled":
        jac = KernelSpec("residual_jacobian", inputs, (("r", r),), symbols=(("x", x),), tangent=("q", "qd"))
        mass = KernelSpec("mass", ("t", "q", "p"), (("M", mass_matrix(kin)),))
    else:           # O(n) kernels only: M column by column from M x (2.54)-(2.55), in the module file
        jac = KernelSpec("residual_partials", inputs, (("r", r),), symbols=(("x", x),), tape=("q", "qd"))
        from dynamica.generator.forms.iterative import recursive_mx
        mx = recursive_mx(kin, fp, lambda e: e, x)
        mass = KernelSpec("mass_times", ("t", "q", "x", "p"), (("Mx", mx),), symbols=(("x", x),))
    kernels = (KernelSpec("residual", inputs, (("r", r),), symbols=(("x", x),)), jac, mass)
    return EquationsOfMotion(form="derivatives", kind="derivatives", program=kin.program,
                             coordinates=kin.coordinates, q=qs, qd=qds, extra_kernels=kernels,
                             mode="symbolic" if variant == "unrolled" else variant,
                             info={"residual": "r = M(q) x - Q(t, q, qd), inverse dynamics (2.54)-(2.55)",
                                   "jacobian": "[dr/dq | dr/dqd], row-major n x 2n, forward-mode tangent",
                                   "variant": variant})


def _recursive_equations(kin, x) -> EquationsOfMotion:
    """The variant "recursive": residual and mass as "unrolled", the Jacobian kernel from
    generator/derivatives_recursive.py (same outputs r, J)."""
    from dynamica.generator.derivatives_recursive import recursive_jacobian
    inputs = ("t", "q", "qd", "x", "p")
    base = kin.program
    kin.program = base.fork()
    r, _ = residual(kin, x)
    mass = mass_matrix(kin)
    res_prog, kin.program = kin.program, base.fork()
    rr, J, r_act = recursive_jacobian(kin, x)
    jac_prog, kin.program = kin.program, base
    qs = tuple(q for jk in kin.joints[1:] for q in jk.q)
    qds = tuple(q for jk in kin.joints[1:] for q in jk.qd)
    kernels = (KernelSpec("residual", inputs, (("r", r),), symbols=(("x", x),), program=res_prog),
               KernelSpec("residual_jacobian", inputs, (("r", rr), ("J", J), ("A", r_act)), symbols=(("x", x),),
                          program=jac_prog, tangent=("q", "qd"), tangent_add=("A", "J")),
               KernelSpec("mass", ("t", "q", "p"), (("M", mass),), program=res_prog))
    return EquationsOfMotion(form="derivatives", kind="derivatives", program=res_prog,
                             coordinates=kin.coordinates, q=qs, qd=qds, extra_kernels=kernels, mode="recursive",
                             info={"residual": "r = M(q) x - Q(t, q, qd), inverse dynamics (2.54)-(2.55)",
                                   "jacobian": "[dr/dq | dr/dqd], row-major n x 2n, analytical recursive "
                                               "derivatives (inertial part) + forward-mode tangent (active forces)",
                                   "variant": "recursive"})
