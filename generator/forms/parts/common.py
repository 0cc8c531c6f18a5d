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

from dynamica.generator.forms.parts.spatial import apply_C, inertia_times
from dynamica.generator.ir.program import add, cross, matTvec, matvec, scale

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
