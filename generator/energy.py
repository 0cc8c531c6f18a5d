"""Energy outputs (`outputs: {energy: true}`): kinetic, potential and total energy and the power
of the non-conservative forces, so that E(t) - E(0) = integral of that power (an energy balance).

  T  = 1/2 sum_i v_i . M_i v_i                       v_i, M_i at O_i in frame i ((1.13), (1.36))
  Vg = -sum_i g . (m_i r_i + G_i0^T h_i)             gravity; r_i the origin O_i, h_i = m_i r^c_i
  Ve = sum of the potentials of the conservative elements (`POTENTIALS`)
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

from dynamica.generator import expr as ex
from dynamica.generator.forces import ForceContext, bushing_frames
from dynamica.generator.forms.spatial import inertia_times
from dynamica.generator.program import add, cross, dot, matTvec, matvec, sub

#: force type -> function(ctx, force) -> (potential V, dV/dt along the motion) or None
POTENTIALS: dict = {}


def potential(name):
    def deco(fn):
        POTENTIALS[name] = fn
        return fn
    return deco


def _constant(ctx, *texts):
    """The fields as expressions, when every one depends on parameters only (else None)."""
    vals = [ctx.P(t) for t in texts]
    if all(all(str(s).startswith("p:") for s in v.free_symbols) for v in vals):
        return vals
    return None


@potential("joint_spring_damper")
def _joint_spring(ctx, f):
    kn = _constant(ctx, f["stiffness"], f["neutral"])
    if kn is None:
        return None
    k, n = kn
    c = f["coordinate"]
    x = ex.coord_symbol(c) - n
    return k * x ** 2 / 2, k * x * ex.rate_symbol(c)


@potential("spring_damper")
def _spring(ctx, f):
    fields = dict(f.fields)
    if "law" in fields:
        return None
    kl = _constant(ctx, f["stiffness"], f["free_length"])
    if kl is None:
        return None
    k, L0 = kl
    xa, va = ctx.point_state(f["body_a"], [ctx.P(x) for x in f["point_a"]])
    xb, vb = ctx.point_state(f["body_b"], [ctx.P(x) for x in f["point_b"]])
    d = ctx.let_vector("d", sub(xb, xa))
    L = ctx.let("L", sp.sqrt(dot(d, d)))
    Ld = ctx.let("Ld", dot(d, sub(vb, va)) / L)
    return k * (L - L0) ** 2 / 2, k * (L - L0) * Ld


@potential("limit")
def _limit(ctx, f):
    # the stiff part of the limit's contact law, k exp(-a (q - q1)) and -k exp(a (q - q2)), has the
    # potential (k / a) exp(-a (q - q1)) and (k / a) exp(a (q - q2))
    fields = dict(f.fields)
    ka = _constant(ctx, f["stiffness"], f["decay"], *(fields[b] for b in ("lower", "upper") if b in fields))
    if ka is None:
        return None
    k, a = ka[:2]
    c = f["coordinate"]
    q, qd = ex.coord_symbol(c), ex.rate_symbol(c)
    V = Vd = sp.Integer(0)
    if "lower" in fields:
        e = sp.exp(-a * (q - ctx.P(fields["lower"])))
        V, Vd = V + k / a * e, Vd - k * e * qd
    if "upper" in fields:
        e = sp.exp(a * (q - ctx.P(fields["upper"])))
        V, Vd = V + k / a * e, Vd + k * e * qd
    return V, Vd


@potential("bushing")
def _bushing(ctx, f):
    # translational springs: V = 1/2 d^T K d of d = G_a (x_b - x_a) (frame a), dV/dt = (K d) . d';
    # an isotropic rotational spring: V = k (1 - cos phi) = k (3 - tr R) / 2, dV/dt = k theta . w
    K = _constant(ctx, *f["stiffness"])
    rot = f["rotational_stiffness"]
    Kr = _constant(ctx, rot[0]) if rot[0] == rot[1] == rot[2] else None
    if K is None and Kr is None:
        return None
    pa, pb, xa, va, xb, vb, Ga, wa, Gb, wb = bushing_frames(ctx, f)
    V = Vd = sp.Integer(0)
    if K is not None:
        d = ctx.let_vector("d", matvec(Ga, sub(xb, xa)))
        dd = sub(matvec(Ga, sub(vb, va)), cross(wa, d))
        V += sum(K[j] * d[j] ** 2 for j in range(3)) / 2
        Vd += sum(K[j] * d[j] * dd[j] for j in range(3))
    if Kr is not None:
        R = ctx.let_matrix("R", Ga * Gb.T)
        th = [(R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2]
        w = sub(matvec(R, wb), wa)
        V += Kr[0] * (3 - R[0, 0] - R[1, 1] - R[2, 2]) / 2
        Vd += Kr[0] * dot(th, w)
    return V, Vd


def energy_outputs(kin, fp, F_active, gen) -> dict:
    """{"energy.kinetic", "energy.potential", "energy.total", "energy.power"}: expressions in the
    outputs' program (generator/outputs.py, after its forward pass and active forces)."""
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
    from dynamica.generator.forces import armature_terms
    T += sum(a * ex.rate_symbol(c) ** 2 / 2 for c, a in armature_terms(kin).items())   # 1/2 a q'^2
    ctx = ForceContext(kin, fp, [], {})
    Ve = sp.Integer(0)
    for n, f in enumerate(kin.spec.forces):
        ctx.tag = f"en{n}"
        rule = POTENTIALS.get(f.type)
        got = rule(ctx, f) if rule is not None else None
        if got is not None:
            Ve += got[0]
            P += got[1]
    T = prog.let("energy_T", T)
    V = prog.let("energy_V", Vg + Ve)
    return {"energy.kinetic": T, "energy.potential": V, "energy.total": T + V, "energy.power": P}
