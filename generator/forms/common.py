"""Pieces shared by the Lagrangian forms: the forward kinematic recursion and active forces.

Symbol table (dissertation 1.3.2 and 1.4.1; body i, its parent k = kappa_i, frame of body i):
  C_i x        transfer of a parent spatial vector into frame i, C_i = [[G, -G rho~], [0, G]]
  v_i          absolute velocity [v; w] of O_i                                   (1.13)
  w_hat_i      absolute acceleration of O_i with q'' = 0, gravity included by the
               "accelerated ground" w_hat_0 = [-g; 0]                            (1.33)
  w^c_i        Coriolis/centripetal transfer terms                               (after 1.12)
  R_i0, r_i    orientation (ground -> i) and position of O_i in the ground frame (1.9), (1.10)
  F^c_i        velocity-dependent inertial force [-m w~^2 r_c; -w~ Theta w]       (after 1.36)
  F_i          active forces on body i at O_i (body frame)                       (1.36)
  F_hat_i      F^c_i + F_i - M_i w_hat_i                                         (2.14)
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from dynamica.generator import expr as ex
from dynamica.generator.forms.spatial import apply_C, inertia_times
from dynamica.generator.model import LAW_LOCALS
from dynamica.generator.program import add, cross, dot, matTvec, matvec, scale, sub

Z3 = [sp.Integer(0)] * 3


@dataclass
class ForwardPass:
    rho_p: list      # per body: G_i rho_i
    v: list          # absolute velocities (6)
    w_hat: list      # bias accelerations (6)
    R0: list         # G_i0 (3x3): ground -> i
    r0: list         # O_i in ground frame
    vr: list         # relative velocities A q' + vr_hat (6)


def forward_pass(kin) -> ForwardPass:
    """Velocities (1.13) and bias accelerations (1.33) with q'' = 0, positions (1.9)-(1.10)."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    g = kin.gravity
    fp = ForwardPass(rho_p=[None] * (N + 1), v=[None] * (N + 1), w_hat=[None] * (N + 1),
                     R0=[None] * (N + 1), r0=[None] * (N + 1), vr=[None] * (N + 1))
    fp.v[0] = [sp.Integer(0)] * 6
    fp.w_hat[0] = [-x for x in g] + Z3
    fp.R0[0] = sp.eye(3)
    fp.r0[0] = list(Z3)
    for i in range(1, N + 1):
        k = topo.kappa[i]
        jk = kin.joints[i]
        G, rho = jk.G, jk.rho
        rp = fp.rho_p[i] = prog.let_vector(f"rp{i}", matvec(G, rho))
        vr = list(jk.vr_hat)
        for col, qd in zip(jk.A, jk.qd):
            vr = [a + qd * c for a, c in zip(vr, col)]
        vr = fp.vr[i] = prog.let_vector(f"vr{i}", vr)
        wk = prog.let_vector(f"wk{i}", matvec(G, fp.v[k][3:]))       # parent's omega in frame i
        vk = add(matvec(G, fp.v[k][:3]), cross(wk, rp))
        fp.v[i] = prog.let_vector(f"v{i}", add(vk, vr[:3]) + add(wk, vr[3:]))
        wc = add(cross(wk, cross(wk, rp)), scale(2, cross(wk, vr[:3]))) + cross(wk, vr[3:])
        fp.w_hat[i] = prog.let_vector(f"wh{i}", [a + b + c for a, b, c in
                                                 zip(apply_C(G, rp, fp.w_hat[k]), wc, jk.wr_hat)])
        fp.R0[i] = prog.let_matrix(f"R{i}", G * fp.R0[k])
        fp.r0[i] = prog.let_vector(f"r{i}", add(fp.r0[k], matTvec(fp.R0[k], rho)))
    return fp


def active_forces(kin, fp):
    """Active body forces F_i (6, frame i, at O_i) and generalized forces per coordinate."""
    spec, topo, prog = kin.spec, kin.topo, kin.program
    N = topo.n_bodies
    scope = spec.scope(coordinates_allowed=True)
    P = lambda x: ex.parse(x, scope)  # noqa: E731
    F = [[sp.Integer(0)] * 6 for _ in range(N + 1)]
    gen = {c: sp.Integer(0) for c in kin.coordinates}

    def point_state(body, point):
        """Position and velocity (ground frame) of a body-fixed point."""
        if body == "ground":
            return point, list(Z3)
        i = topo.index(body)
        pos = add(fp.r0[i], matTvec(fp.R0[i], point))
        vel = matTvec(fp.R0[i], add(fp.v[i][:3], cross(fp.v[i][3:], point)))
        return pos, vel

    def frame_of(body):
        """(G_0i: ground -> body axes, angular velocity in body axes, origin in ground) of a body or the ground."""
        if body == "ground":
            return sp.eye(3), list(Z3), list(Z3)
        i = topo.index(body)
        return fp.R0[i], fp.v[i][3:], fp.r0[i]

    def apply(body, point, f_ground=None, f_body=None, t_body=None):
        if body == "ground":
            return
        i = topo.index(body)
        fb = f_body if f_body is not None else matvec(fp.R0[i], f_ground)
        tb = t_body if t_body is not None else list(Z3)
        F[i] = [a + b for a, b in zip(F[i], fb + add(tb, cross(point, fb)))]

    values = kin.force_values
    values.clear()
    for n, f in enumerate(spec.forces):
        tag = f"f{n}"
        name = f["name"]
        if f.type == "joint_spring_damper":
            c = f["coordinate"]
            Qf = -P(f["stiffness"]) * (ex.coord_symbol(c) - P(f["neutral"])) - P(f["damping"]) * ex.rate_symbol(c)
            gen[c] += Qf
            values[f"{name}.generalized_force"] = [Qf]
        elif f.type == "generalized_force":
            gen[f["coordinate"]] += P(f["value"])
            values[f"{name}.generalized_force"] = [P(f["value"])]
        elif f.type == "body_force":
            i = topo.index(f["body"])
            point = [P(x) for x in f["point"]]
            force = [P(x) for x in f["force"]]
            torque = [P(x) for x in f["torque"]]
            values[f"{name}.force"], values[f"{name}.torque"] = force, torque     # as given, in `frame`
            if f["frame"] == "ground":
                force = prog.let_vector(f"{tag}_f", matvec(fp.R0[i], force))
                torque = prog.let_vector(f"{tag}_t", matvec(fp.R0[i], torque))
            apply(f["body"], point, f_body=force, t_body=torque)
        elif f.type == "spring_damper":
            pa = [P(x) for x in f["point_a"]]
            pb = [P(x) for x in f["point_b"]]
            xa, va = point_state(f["body_a"], pa)
            xb, vb = point_state(f["body_b"], pb)
            d = prog.let_vector(f"{tag}_d", sub(xb, xa))
            L = prog.let(f"{tag}_L", sp.sqrt(dot(d, d)))
            Ldot = prog.let(f"{tag}_Ld", dot(d, sub(vb, va)) / L)
            if "law" in dict(f.fields):                              # nonlinear: law(elongation, rate)
                law = ex.parse(f["law"], scope.child(local=LAW_LOCALS)).xreplace({ex.local_symbol("elongation"): L - P(f["free_length"]),
                                            ex.local_symbol("elongation_rate"): Ldot})
                tension = prog.let(f"{tag}_T", law)
            else:
                tension = prog.let(f"{tag}_T", P(f["stiffness"]) * (L - P(f["free_length"]))
                                   + P(f["damping"]) * Ldot)
            values[f"{name}.length"], values[f"{name}.tension"] = [L], [tension]
            e = prog.let_vector(f"{tag}_e", scale(tension / L, d))      # tension * unit vector
            apply(f["body_b"], pb, f_ground=[-x for x in e])
            apply(f["body_a"], pa, f_ground=e)
        elif f.type == "limit":
            # seed 003: F = (k - mu q') exp(-a (q - q1)) pushes up from a lower bound q1;
            # mirrored, -(k + mu q') exp(a (q - q2)) pushes down from an upper bound q2
            c = f["coordinate"]
            q, qd = ex.coord_symbol(c), ex.rate_symbol(c)
            k, mu, a = P(f["stiffness"]), P(f["damping"]), P(f["decay"])
            fields = dict(f.fields)
            Qf = sp.Integer(0)
            if "lower" in fields:
                Qf += prog.let(f"{tag}_lo", (k - mu * qd) * sp.exp(-a * (q - P(fields["lower"]))))
            if "upper" in fields:
                Qf += prog.let(f"{tag}_up", -(k + mu * qd) * sp.exp(a * (q - P(fields["upper"]))))
            gen[c] += Qf
            values[f"{name}.generalized_force"] = [Qf]
        elif f.type == "bushing":
            # frame a: axes of body_a at point_a; frame b: axes of body_b at point_b. In frame a:
            # d = G_a (x_b - x_a), d' = G_a (v_b - v_a) - w_a x d, rotation angles
            # theta = vee(R - R^T)/2 of R = G_a G_b^T (exact small-angle linearization; for an
            # isotropic rotational stiffness the torque k sin(phi) has potential k (1 - cos phi)),
            # relative angular velocity w = G_a G_b^T w_b - w_a. Force on b -(K d + C d'),
            # torque on b -(K_r theta + C_r w); the opposite on a at the same spatial point.
            pa = [P(x) for x in f["point_a"]]
            pb = [P(x) for x in f["point_b"]]
            xa, va = point_state(f["body_a"], pa)
            xb, vb = point_state(f["body_b"], pb)
            Ga, wa, _ = frame_of(f["body_a"])
            Gb, wb, _ = frame_of(f["body_b"])
            d = prog.let_vector(f"{tag}_d", matvec(Ga, sub(xb, xa)))
            dd = prog.let_vector(f"{tag}_dd", sub(matvec(Ga, sub(vb, va)), cross(wa, d)))
            R = prog.let_matrix(f"{tag}_R", Ga * Gb.T)
            th = [(R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2]
            w = sub(matvec(R, wb), wa)
            K, C = [P(x) for x in f["stiffness"]], [P(x) for x in f["damping"]]
            Kr, Cr = [P(x) for x in f["rotational_stiffness"]], [P(x) for x in f["rotational_damping"]]
            Fb = prog.let_vector(f"{tag}_F", [-(K[j] * d[j] + C[j] * dd[j]) for j in range(3)])
            Tq = prog.let_vector(f"{tag}_M", [-(Kr[j] * th[j] + Cr[j] * w[j]) for j in range(3)])
            values[f"{name}.force"], values[f"{name}.torque"] = Fb, Tq        # on body_b, frame a
            apply(f["body_b"], pb, f_ground=matTvec(Ga, Fb), t_body=matvec(Gb, matTvec(Ga, Tq)))
            apply(f["body_a"], add(pa, d), f_body=[-x for x in Fb], t_body=[-x for x in Tq])
        else:  # pragma: no cover - the loader rejects unknown types
            raise ValueError(f"unsupported force type {f.type!r}")
    F = [None] + [prog.let_vector(f"Fa{i}", F[i]) for i in range(1, N + 1)]
    return F, gen


def bias_forces(kin, fp, F_active):
    """F_hat_i = F^c_i + F_i - M_i w_hat_i (2.14), frame i, at O_i."""
    prog = kin.program
    out = [None]
    for i in range(1, kin.topo.n_bodies + 1):
        bi = kin.inertia[i]
        w = fp.v[i][3:]
        fc = [-x for x in cross(w, cross(w, bi.h))] + [-x for x in cross(w, matvec(bi.theta, w))]
        mw = inertia_times((bi.mass, bi.h, bi.theta), fp.w_hat[i])
        out.append(prog.let_vector(f"Fh{i}", [a + b - c for a, b, c in zip(fc, F_active[i], mw)]))
    return out


def lagrangian_equations(kin, form, qdd, mass_matrix, **kw):
    """The EquationsOfMotion of a Lagrangian form: its q'' and M (row-major), the kinematics'
    program, coordinates and their symbols; `kw` the rest (info, kernels, ...)."""
    from dynamica.generator.forms import EquationsOfMotion
    qs = tuple(q for jk in kin.joints[1:] for q in jk.q)
    qds = tuple(q for jk in kin.joints[1:] for q in jk.qd)
    return EquationsOfMotion(form=form, kind="lagrangian", program=kin.program, coordinates=kin.coordinates,
                             q=qs, qd=qds, outputs={"qdd": qdd, "mass_matrix": mass_matrix}, **kw)
