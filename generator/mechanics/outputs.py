"""What the model's `outputs` section asks for, as straight-line expressions (dissertation 5.1.4).

One `outputs(t, q, qd, p)` kernel per module, built in a program of its own (so it is the
same for every equation form; it runs at output points only, so its cost does not matter to
the integration):

  qdd                       generalized accelerations, composite-body solve (2.15)-(2.23)
  a_i = w_hat_i + [G_0i g; 0] + z_i,  z_i = C_i z_k + A_i q''_i
                            absolute acceleration of O_i, body frame: (1.33) with the
                            accelerated ground w_hat_0 = [-g; 0] taken back out
  <point>.position/velocity/acceleration   ground frame: r + G^T c, G^T (v + w x c),
                            G^T (a + eps x c + w x (w x c))
  <body>.angular_velocity / angular_acceleration   body frame
  <body>.reaction_force / reaction_torque   R_i = M_i a_i - F_i^c - F_i - gravity + sum_{j in S_i} C_j^T R_j
                            = M_i z_i - F_hat_i + sum_{j in S_i} C_j^T R_j: the wrench the parent
                            exerts on body i at O_i, body frame (the backward pass of (3.8))
  <force>.<quantity>        the value of every force element (tension, length, generalized
                            force, force/torque vectors)
  energy.kinetic/potential/total/power   generator/mechanics/energy.py
  <expression name>         the model's named expressions
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from dynamica.generator.forms.parts.cholesky import StructurallySingular, singular_error, solve_reverse_ldl
from dynamica.generator.forms.parts.common import bias_forces, forward_pass
from dynamica.generator.forms.parts.spatial import (
    apply_C,
    apply_CT,
    composite_forces,
    composite_inertias,
    coordinate_layout,
    inertia_times,
    mass_matrix_rows,
)
from dynamica.generator.ir.program import add, cross, dot, fold_vectors, matTvec, matvec
from dynamica.generator.mechanics.forces import FORCE_TYPES, active_forces
from dynamica.generator.mechanics.kinematics import derive_kinematics


@dataclass
class OutputEquations:
    program: object
    layout: tuple            # ((key, shape), ...) in the order of `values`
    values: list             # flat expressions


def wanted(spec) -> bool:
    o = spec.outputs
    return bool(o.points or o.angular or o.reactions or o.expressions or o.forces or o.energy or spec.loops
                or any(FORCE_TYPES[f.type].gaps for f in spec.forces))


def _solved_accelerations(kin, F_hat, gen, owner, local) -> list:
    """q'' solved from M q'' = Q (composite inertias, the tree-sparse L^T D L)."""
    prog = kin.program
    Mstar, Fstar = composite_inertias(kin), composite_forces(kin, F_hat)
    Q = [prog.let(f"Q{k}", dot(kin.joints[i].A[c], Fstar[i]) + gen[kin.coordinates[k]])
         for k, (i, c) in enumerate(zip(owner, local))]
    try:
        qdd = solve_reverse_ldl(prog, mass_matrix_rows(kin, Mstar), Q)
    except StructurallySingular as exc:
        raise singular_error(kin, exc.index) from None
    return [prog.let(f"qdd{k}", x) for k, x in enumerate(qdd)]


def _body_accelerations(kin, topo, fp, qdd, first):
    """(z, acc): per body the part of its acceleration from q'' (z) and the whole acceleration of
    its origin (frame i), gravity included (acc); index 0 the ground."""
    prog, N = kin.program, topo.n_bodies
    g = kin.gravity
    z, acc = [None] * (N + 1), [None] * (N + 1)
    z[0] = [sp.Integer(0)] * 6
    for i in range(1, N + 1):
        jk, k = kin.joints[i], topo.kappa[i]
        zi = apply_C(jk.G, fp.rho_p[i], z[k])
        for c, col in enumerate(jk.A):
            zi = [a + qdd[first[i] + c] * b for a, b in zip(zi, col)]
        z[i] = prog.let_vector(f"z{i}", zi)
        acc[i] = prog.let_vector(f"acc{i}", add(fp.w_hat[i][:3], matvec(fp.R0[i], g)) + list(fp.w_hat[i][3:]))
        acc[i] = prog.let_vector(f"a{i}", [a + b for a, b in zip(acc[i], z[i])])
    return z, acc


def _reactions(kin, topo, z, F_hat) -> list:
    """The joints' reaction wrenches, from the leaves to the root (index 0 unused)."""
    prog, N = kin.program, topo.n_bodies
    R: list = [None] * (N + 1)
    for i in range(N, 0, -1):
        bi = kin.inertia[i]
        Ri = [[a - b for a, b in zip(inertia_times((bi.mass, bi.h, bi.theta), z[i]), F_hat[i])]]
        Ri += [apply_CT(kin.joints[j].G, kin.joints[j].rho, R[j]) for j in topo.children[i]]
        R[i] = prog.let_vector(f"R{i}", fold_vectors(Ri))
    return R


def _motion_outputs(out, spec, topo, fp, acc):
    """Points' position, velocity and acceleration (ground axes), bodies' angular velocity and
    acceleration (body axes)."""
    from dynamica.generator.spec import expr as ex
    o = spec.outputs
    P0 = spec.scope(time_allowed=False)
    for name, body, at in o.points:
        c = [ex.parse(x, P0) for x in at]
        if body == "ground":
            out(f"{name}.position", c, (3,))
            out(f"{name}.velocity", [sp.Integer(0)] * 3, (3,))
            out(f"{name}.acceleration", [sp.Integer(0)] * 3, (3,))
            continue
        i = topo.index(body)
        R, v, a = fp.R0[i], fp.v[i], acc[i]
        w, eps = v[3:], a[3:]
        out(f"{name}.position", add(fp.r0[i], matTvec(R, c)), (3,))
        out(f"{name}.velocity", matTvec(R, add(v[:3], cross(w, c))), (3,))
        out(f"{name}.acceleration", matTvec(R, add(add(a[:3], cross(eps, c)), cross(w, cross(w, c)))), (3,))
    for body in o.angular:
        i = topo.index(body)
        out(f"{body}.angular_velocity", fp.v[i][3:], (3,))
        out(f"{body}.angular_acceleration", acc[i][3:], (3,))


def _loop_outputs(out, spec, atoms, reaction):
    """Each loop's reaction (with `reactions`) and residual."""
    for lp in spec.loops:
        if spec.outputs.reactions:
            out(f"{lp.name}.reaction_force", reaction[lp.name][0], (3,))
            out(f"{lp.name}.reaction_torque", reaction[lp.name][1], (3,))
        phi = [a.phi for a in atoms if a.loop == lp.name]
        out(f"{lp.name}.residual", phi, (len(phi),))


def output_equations(spec, topo, qdd=None, lam=None) -> OutputEquations:
    """The outputs as expressions of (t, q, qd, p); with `qdd` (symbols, one per coordinate) the
    accelerations are taken as given inputs instead of solved for (numeric mode: the recursion
    of the form computes them; closed loops: the constrained solve), so the program stays linear
    in the number of bodies. With `lam` (the loops' multipliers, symbols), the loops' forces act
    on the bodies (reactions include them) and each loop reports its reaction and residual."""
    kin = derive_kinematics(spec, topo)
    prog, N = kin.program, topo.n_bodies
    fp = forward_pass(kin)
    F_active, gen, force_values = active_forces(kin, fp)
    loops = None
    if lam is not None:
        from dynamica.generator.mechanics.constraints import loop_atoms, loop_wrenches
        atoms, _ = loop_atoms(kin, fp)
        F_loop, reaction = loop_wrenches(kin, fp, atoms, lam)
        F_active = [None] + [prog.let_vector(f"Fl{i}", [a + b for a, b in zip(F_active[i], F_loop[i])])
                             for i in range(1, N + 1)]
        loops = (atoms, reaction)
    F_hat = bias_forces(kin, fp, F_active)
    owner, local, first = coordinate_layout(kin)
    qdd = _solved_accelerations(kin, F_hat, gen, owner, local) if qdd is None else list(qdd)
    z, acc = _body_accelerations(kin, topo, fp, qdd, first)

    layout, values = [], []

    def out(key, exprs, shape):
        layout.append((key, shape))
        values.extend(exprs)

    out("qdd", qdd, (len(qdd),))
    o = spec.outputs
    _motion_outputs(out, spec, topo, fp, acc)
    if o.reactions:
        R = _reactions(kin, topo, z, F_hat)
        for i in range(1, N + 1):
            out(f"{topo.names[i]}.reaction_force", R[i][:3], (3,))
            out(f"{topo.names[i]}.reaction_torque", R[i][3:], (3,))
    contacts = {f["name"] for f in spec.forces if FORCE_TYPES[f.type].gaps}     # always: the integrators' gaps
    for key, exprs in force_values.items():
        if o.forces or key.rsplit(".", 1)[0] in contacts:
            out(key, list(exprs), () if len(exprs) == 1 else (len(exprs),))
    if loops is not None:
        _loop_outputs(out, spec, *loops)
    if o.energy:                     # generator/mechanics/energy.py
        from dynamica.generator.mechanics.energy import energy_outputs
        for key, e in energy_outputs(kin, fp, F_active, gen).items():
            out(key, [e], ())
    from dynamica.generator.spec import expr as ex
    scope = spec.scope(coordinates_allowed=True)
    for name, e in o.expressions:
        out(name, [ex.parse(e, scope)], ())
    return OutputEquations(program=prog, layout=tuple(layout), values=values)


def attach_outputs(eom, spec, topo):
    """The form's equations with the `outputs` kernel (t, q, qd, p) -> out added; its layout goes to
    INFO. In numeric mode the kernel takes q'' as an input (t, q, qd, qdd, p), computed by the
    form's recursion, so that it stays linear in the number of bodies; with closed loops it takes
    q'' and the loops' multipliers (t, q, qd, qdd, lam, p) from the constrained solve, as the
    exported kernel `con_outputs` that the module file calls (render/module.py)."""
    import dataclasses

    from dynamica.generator.forms import KernelSpec
    n = len(eom.coordinates)
    if eom.constrained:
        qdd = tuple(sp.Symbol(f"cn_qdd{k}", real=True) for k in range(n))
        lam = tuple(sp.Symbol(f"cn_lam{k}", real=True) for k in range(len(dict(eom.info)["constraints"])))
        oe = output_equations(spec, topo, qdd=qdd, lam=lam)
        ks = KernelSpec("con_outputs", ("t", "q", "qd", "qdd", "lam", "p"), (("out", oe.values),), program=oe.program,
                        symbols=(("qdd", qdd), ("lam", lam)), export=True)
    elif eom.mode == "numeric":
        qdd = tuple(sp.Symbol(f"nm_qdd{k}") for k in range(n))
        oe = output_equations(spec, topo, qdd=qdd)
        ks = KernelSpec("outputs", ("t", "q", "qd", "qdd", "p"), (("out", oe.values),), program=oe.program,
                        symbols=(("qdd", qdd),))
    else:
        oe = output_equations(spec, topo)
        from dynamica.generator.mechanics.broad_phase import used
        # with the broad phase the entry point clears `out` and its routine writes the contacts' values
        ks = KernelSpec("outputs", ("t", "q", "qd", "p"), (("out", oe.values),), program=oe.program,
                        skip_zero_stores=used(spec))
    return dataclasses.replace(eom, extra_kernels=tuple(eom.extra_kernels) + (ks,),
                               info={**eom.info, "output_layout": oe.layout})
