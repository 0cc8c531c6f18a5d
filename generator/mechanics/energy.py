"""Energy outputs (`outputs: {energy: true}`): kinetic, potential and total energy and the power
of the non-conservative forces, so that E(t) - E(0) = integral of that power (an energy balance).

  T  = 1/2 sum_i v_i . M_i v_i                       v_i, M_i at O_i in frame i ((1.13), (1.36))
  Vg = -sum_i g . (m_i r_i + G_i0^T h_i)             gravity; r_i the origin O_i, h_i = m_i r^c_i
  Ve = sum of the potentials of the conservative elements (`ForceType.potential`, forces.py)
  P  = sum_i F_i . v_i + sum_c Q_c q'_c + sum_e dVe/dt     the power of the active forces
                                                           less that of their conservative parts

An element is conservative when its stiffness, free length (neutral position, stop position)
are expressions of the parameters only: a linear spring-damper's spring, a joint spring, the
stiff part of a limit, a bushing's translational springs and an isotropic rotational one. A
`law` spring, dampers, applied forces and everything with coefficients that vary in time or
with the state count in P. Driven joints (`by:`) do work the balance does not see (the power
of the drives): it holds for models without them.
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.forms.parts.spatial import inertia_times
from dynamica.generator.ir.program import add, dot, matTvec
from dynamica.generator.mechanics.forces import FORCE_TYPES, NO_POTENTIAL, ForceContext
from dynamica.generator.spec import expr as ex


def energy_outputs(kin, fp, F_active, gen) -> dict:
    """{"energy.kinetic", "energy.potential", "energy.total", "energy.power"}: expressions in the
    outputs' program (generator/mechanics/outputs.py, after its forward pass and active forces)."""
    prog, N = kin.program, kin.topo.n_bodies
    T = sp.Integer(0)
    Vg = sp.Integer(0)
    P = sp.Integer(0)
    for i in range(1, N + 1):
        bi, v = kin.inertia[i], fp.v[i]
        T += dot(v, inertia_times((bi.mass, bi.h, bi.theta), v)) / 2
        Vg -= dot(kin.gravity, add([bi.mass * x for x in fp.r0[i]], matTvec(fp.R0[i], bi.h)))
        P += dot(F_active[i], v)
    P += sum(Q * ex.rate_symbol(c) for c, Q in gen.items())
    from dynamica.generator.mechanics.forces import armature_terms, rotation_armatures
    T += sum(a * ex.rate_symbol(c) ** 2 / 2 for c, a in armature_terms(kin).items())   # 1/2 a q'^2
    for i, a, W in rotation_armatures(kin):         # 1/2 a |w|^2, w = W q'; the generalized force
        jk = kin.joints[i]                          # -a W^T W' q' it adds to gen is inertial: not power
        w = [sum((ex.rate_symbol(c) * col[k] for c, col in zip(jk.coordinates, W)), sp.Integer(0)) for k in range(3)]
        T += a * dot(w, w) / 2
        P += a * dot(w, jk.wr_hat[3:])
    ctx = ForceContext(kin, fp, [], {})
    Ve = sp.Integer(0)
    for n, f in enumerate(kin.spec.forces):
        ctx.tag = f"en{n}"
        rule = FORCE_TYPES[f.type].potential
        got = rule(ctx, f) if rule is not NO_POTENTIAL else None
        if got is not None:
            Ve += got[0]
            P += got[1]
    T = prog.let("energy_T", T)
    V = prog.let("energy_V", Vg + Ve)
    return {"energy.kinetic": T, "energy.potential": V, "energy.total": T + V, "energy.power": P}
