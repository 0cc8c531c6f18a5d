"""Force elements: a registry with one entry per type (dissertation 5.1.2: forces on bodies,
between pairs of bodies, in joints; the peer package's limit stops).

An entry (`ForceType`) holds what the loader checks, the schema {key: (kind, default)} (kinds:
generator/spec/force_sections.py FIELD_KINDS) and `check` for what the schema cannot say, and `build`: the
element's contribution to the equations, through a `ForceContext`:

    ctx.P(text)                          the sympy expression of a field
    ctx.point_state(body, point)         position and velocity of a body point (ground frame)
    ctx.frame_of(body)                   (G_0i, angular velocity (body axes), origin) of a body
    ctx.apply(body, point, ...)          a force and torque on a body at a point
    ctx.gen[coordinate] += Q             a generalized force of one coordinate
    ctx.let / ctx.let_vector             program intermediates named after the element

`build` returns the element's values for the outputs ({quantity: [expressions]}, exported as
`<name>.<quantity>` with `outputs: {forces: true}`), and `potential` the element's potential
energy and its time derivative for the energy outputs (generator/mechanics/energy.py), None
when a particular element is not conservative, or `NO_POTENTIAL` for a type that never is.
Adding a force type is one entry here, plus its law in the numeric reference
(runtime/reference/forces.py), which is written apart on purpose (an independent oracle) and
raises on a type it does not know; tests/test_registries.py checks both.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sympy as sp

from dynamica.generator.ir.program import add, cross, dot, matTvec, matvec, scale, sub
from dynamica.generator.spec import expr as ex

REQUIRED = object()
Z3 = [sp.Integer(0)] * 3
#: names a spring_damper `law` may use besides parameters, coordinates and t
LAW_LOCALS = ("elongation", "elongation_rate")


@dataclass(frozen=True)
class ForceType:
    name: str
    schema: dict                  # key -> (kind, default); default REQUIRED, or None: optional, no value
    build: Callable               # (ctx, force) -> {quantity: [expressions]}
    potential: object             # (ctx, force) -> (V, dV/dt along the motion) or None, or NO_POTENTIAL
    check: Callable = None        # (the force's mapping, its checked fields) -> [(key or "", message)]
    doc: str = ""
    #: its values include per contact point `distance` and `normal_velocity` (the gaps the Adams
    #: integrator locates, runtime/integrators/contact_events.py): written as outputs always
    gaps: bool = False


FORCE_TYPES: dict = {}
#: the explicit `potential` of a force type that is never conservative (an applied force): its
#: power counts as non-conservative in the energy outputs (generator/mechanics/energy.py)
class _NoPotential:
    def __repr__(self):
        return "NO_POTENTIAL"


NO_POTENTIAL = _NoPotential()


def register(name, schema, *, potential, check=None, doc="", gaps=False):
    """Register the contribution `build` of force type `name` with its record (`potential` must
    be given: a function, or NO_POTENTIAL)."""
    def deco(build):
        FORCE_TYPES[name] = ForceType(name, schema, build, potential, check, doc, gaps)
        return build
    return deco


@dataclass
class ForceContext:
    """What a force element's `build` reaches: the kinematics, the forward pass and the sums."""
    kin: object
    fp: object                    # positions, orientations, velocities (common.ForwardPass or lazy)
    F: list                       # per body: the active wrench at O_i, frame i (6)
    gen: dict                     # coordinate -> generalized force
    tag: str = ""                 # program names of the current element: `<tag>_<what>`

    def P(self, text):
        return ex.parse(text, self.kin.spec.scope(coordinates_allowed=True))

    def law(self, text, **local):
        """A `law` expression with its local names replaced (elongation, elongation_rate)."""
        e = ex.parse(text, self.kin.spec.scope(coordinates_allowed=True).child(local=LAW_LOCALS))
        return e.xreplace({ex.local_symbol(k): v for k, v in local.items()})

    def let(self, what, value):
        return self.kin.program.let(f"{self.tag}_{what}", value)

    def let_vector(self, what, values):
        return self.kin.program.let_vector(f"{self.tag}_{what}", values)

    def let_matrix(self, what, value):
        return self.kin.program.let_matrix(f"{self.tag}_{what}", value)

    def point_state(self, body, point):
        """Position and velocity (ground frame) of a body-fixed point."""
        if body == "ground":
            return point, list(Z3)
        fp, i = self.fp, self.kin.topo.index(body)
        pos = add(fp.r0[i], matTvec(fp.R0[i], point))
        vel = matTvec(fp.R0[i], add(fp.v[i][:3], cross(fp.v[i][3:], point)))
        return pos, vel

    def frame_of(self, body):
        """(G_0i: ground -> body axes, angular velocity in body axes, origin in ground) of a body or the ground."""
        if body == "ground":
            return sp.eye(3), list(Z3), list(Z3)
        i = self.kin.topo.index(body)
        return self.fp.R0[i], self.fp.v[i][3:], self.fp.r0[i]

    def apply(self, body, point, f_ground=None, f_body=None, t_body=None):
        """A force (ground or body axes) at a body point and a torque (body axes) on `body`."""
        if body == "ground":
            return
        i = self.kin.topo.index(body)
        fb = f_body if f_body is not None else matvec(self.fp.R0[i], f_ground)
        tb = t_body if t_body is not None else list(Z3)
        self.F[i] = [a + b for a, b in zip(self.F[i], fb + add(tb, cross(point, fb)))]


def active_forces(kin, fp):
    """Active body forces F_i (6, frame i, at O_i, bound as `Fa<i>`), generalized forces per
    coordinate and the values of every element: (F, gen, {"<name>.<quantity>": [expressions]})."""
    N = kin.topo.n_bodies
    ctx = ForceContext(kin, fp, [[sp.Integer(0)] * 6 for _ in range(N + 1)],
                       {c: sp.Integer(0) for c in kin.coordinates})
    values = {}
    from dynamica.generator.mechanics import broad_phase
    broad = broad_phase.used(kin.spec)
    if broad:                            # the pairs' wrenches come from the module's C routine
        broad_phase.add_wrenches(ctx, kin.spec)
    for n, f in enumerate(kin.spec.forces):
        ctx.tag = f"f{n}"
        if broad and f.type == "contact":
            for quantity, exprs in broad_phase.placeholder_values(f).items():
                values[f"{f['name']}.{quantity}"] = exprs
            continue
        for quantity, exprs in FORCE_TYPES[f.type].build(ctx, f).items():
            values[f"{f['name']}.{quantity}"] = exprs
    F = [None] + [kin.program.let_vector(f"Fa{i}", ctx.F[i]) for i in range(1, N + 1)]
    return F, ctx.gen, values


def constant_fields(ctx, *texts):
    """The fields as expressions, when every one depends on parameters only (else None)."""
    vals = [ctx.P(t) for t in texts]
    if all(all(str(s).startswith("p:") for s in v.free_symbols) for v in vals):
        return vals
    return None


# ------------------------------------------------------------------ the force types
def _joint_spring_potential(ctx, f):
    kn = constant_fields(ctx, f["stiffness"], f["neutral"])
    if kn is None:
        return None
    k, n = kn
    c = f["coordinate"]
    x = ex.coord_symbol(c) - n
    return k * x ** 2 / 2, k * x * ex.rate_symbol(c)


@register("joint_spring_damper", {"coordinate": ("coordinate", REQUIRED), "stiffness": ("expr", 0),
                                  "damping": ("expr", 0), "neutral": ("expr", 0)},
          potential=_joint_spring_potential, doc="-stiffness (q - neutral) - damping q' on one coordinate")
def _joint_spring_damper(ctx, f):
    c = f["coordinate"]
    Q = -ctx.P(f["stiffness"]) * (ex.coord_symbol(c) - ctx.P(f["neutral"])) - ctx.P(f["damping"]) * ex.rate_symbol(c)
    ctx.gen[c] += Q
    return {"generalized_force": [Q]}


@register("generalized_force", {"coordinate": ("coordinate", REQUIRED), "value": ("expr", REQUIRED)},
          potential=NO_POTENTIAL, doc="an expression added to one coordinate's generalized force")
def _generalized_force(ctx, f):
    Q = ctx.P(f["value"])
    ctx.gen[f["coordinate"]] += Q
    return {"generalized_force": [Q]}


@register("body_force", {"body": ("body", REQUIRED), "point": ("point", None), "force": ("vector", [0, 0, 0]),
                         "torque": ("vector", [0, 0, 0]), "frame": ("frame", "ground")},
          potential=NO_POTENTIAL, doc="a force at a point of a body and a torque, in ground or body axes")
def _body_force(ctx, f):
    i = ctx.kin.topo.index(f["body"])
    point = [ctx.P(x) for x in f["point"]]
    force = [ctx.P(x) for x in f["force"]]
    torque = [ctx.P(x) for x in f["torque"]]
    values = {"force": force, "torque": torque}              # as given, in `frame`
    if f["frame"] == "ground":
        force = ctx.let_vector("f", matvec(ctx.fp.R0[i], force))
        torque = ctx.let_vector("t", matvec(ctx.fp.R0[i], torque))
    ctx.apply(f["body"], point, f_body=force, t_body=torque)
    return values


def _spring_damper_check(given, fields):
    out = []
    if ("law" in given) == ("stiffness" in given):
        out.append(("", "a `spring_damper` needs either `stiffness` (linear) or `law` (an expression of "
                        f"{' and '.join(LAW_LOCALS)}), not {'both' if 'law' in given else 'neither'}"))
    if "law" in given and "damping" in given:
        out.append(("damping", "with a `law`, put the damping into the law (elongation_rate)"))
    return out


def _spring_potential(ctx, f):
    fields = dict(f.fields)
    if "law" in fields:
        return None
    kl = constant_fields(ctx, f["stiffness"], f["free_length"])
    if kl is None:
        return None
    k, L0 = kl
    xa, va = ctx.point_state(f["body_a"], [ctx.P(x) for x in f["point_a"]])
    xb, vb = ctx.point_state(f["body_b"], [ctx.P(x) for x in f["point_b"]])
    d = ctx.let_vector("d", sub(xb, xa))
    L = ctx.let("L", sp.sqrt(dot(d, d)))
    Ld = ctx.let("Ld", dot(d, sub(vb, va)) / L)
    return k * (L - L0) ** 2 / 2, k * (L - L0) * Ld


@register("spring_damper", {"body_a": ("body_or_ground", REQUIRED), "point_a": ("point", REQUIRED),
                            "body_b": ("body_or_ground", REQUIRED), "point_b": ("point", REQUIRED),
                            "stiffness": ("expr", None), "damping": ("expr", 0),
                            "free_length": ("expr", REQUIRED), "law": ("law", None)},
          check=_spring_damper_check, potential=_spring_potential,
          doc="along the line between two points: linear, or a `law`")
def _spring_damper(ctx, f):
    pa = [ctx.P(x) for x in f["point_a"]]
    pb = [ctx.P(x) for x in f["point_b"]]
    xa, va = ctx.point_state(f["body_a"], pa)
    xb, vb = ctx.point_state(f["body_b"], pb)
    d = ctx.let_vector("d", sub(xb, xa))
    L = ctx.let("L", sp.sqrt(dot(d, d)))
    Ldot = ctx.let("Ld", dot(d, sub(vb, va)) / L)
    if "law" in dict(f.fields):                              # nonlinear: law(elongation, rate)
        tension = ctx.let("T", ctx.law(f["law"], elongation=L - ctx.P(f["free_length"]), elongation_rate=Ldot))
    else:
        tension = ctx.let("T", ctx.P(f["stiffness"]) * (L - ctx.P(f["free_length"])) + ctx.P(f["damping"]) * Ldot)
    e = ctx.let_vector("e", scale(tension / L, d))          # tension * unit vector
    ctx.apply(f["body_b"], pb, f_ground=[-x for x in e])
    ctx.apply(f["body_a"], pa, f_ground=e)
    return {"length": [L], "tension": [tension]}


def _limit_check(given, fields):
    return [] if "lower" in fields or "upper" in fields else [("", "a `limit` needs `lower`, `upper` or both")]


def _limit_potential(ctx, f):
    # the stiff part of the limit's contact law, k exp(-a (q - q1)) and -k exp(a (q - q2)), has the
    # potential (k / a) exp(-a (q - q1)) and (k / a) exp(a (q - q2))
    fields = dict(f.fields)
    ka = constant_fields(ctx, f["stiffness"], f["decay"], *(fields[b] for b in ("lower", "upper") if b in fields))
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


@register("limit", {"coordinate": ("coordinate", REQUIRED), "lower": ("expr", None), "upper": ("expr", None),
                    "stiffness": ("expr", REQUIRED), "damping": ("expr", 0), "decay": ("expr", REQUIRED)},
          check=_limit_check, potential=_limit_potential,
          doc="stops of a coordinate with an exponential contact law")
def _limit(ctx, f):
    # the peer package's contact law: F = (k - mu q') exp(-a (q - q1)) pushes up from a lower bound q1;
    # mirrored, -(k + mu q') exp(a (q - q2)) pushes down from an upper bound q2
    c = f["coordinate"]
    q, qd = ex.coord_symbol(c), ex.rate_symbol(c)
    k, mu, a = ctx.P(f["stiffness"]), ctx.P(f["damping"]), ctx.P(f["decay"])
    fields = dict(f.fields)
    Q = sp.Integer(0)
    if "lower" in fields:
        Q += ctx.let("lo", (k - mu * qd) * sp.exp(-a * (q - ctx.P(fields["lower"]))))
    if "upper" in fields:
        Q += ctx.let("up", -(k + mu * qd) * sp.exp(a * (q - ctx.P(fields["upper"]))))
    ctx.gen[c] += Q
    return {"generalized_force": [Q]}


@register("armature", {"coordinate": ("coordinate", REQUIRED), "inertia": ("constant", REQUIRED)},
          potential=NO_POTENTIAL,
          doc="an inertia added to one coordinate's diagonal of the mass matrix (MuJoCo's armature)")
def _armature(ctx, f):
    # no force: the forms add `inertia` to M[c, c] (armature_terms); its generalized force
    # -inertia q'' is of the accelerations, which force values are not
    return {}


#: the equation forms whose mass matrix takes the `armature` elements (armature_terms); the
#: others refuse a model with armature (forms.form_equations)
ARMATURE_FORMS = ("composite", "direct", "articulated", "ltdl", "iterative-m", "iterative-g")
#: the force types that are armature (terms of M: armature_blocks)
ARMATURE_TYPES = ("armature", "rotation_armature")


@register("rotation_armature", {"body": ("body", REQUIRED), "inertia": ("constant", REQUIRED)},
          potential=NO_POTENTIAL,
          doc="an inertia on the relative angular velocity of a body's joint (MuJoCo's armature on a ball joint)")
def _rotation_armature(ctx, f):
    """MuJoCo's armature a on a ball joint's three DOFs, whose velocity is the joint's relative
    angular velocity w = W q' (W: the angular rows of A_i, (1.4)): M_mj += a I in those DOFs and
    no velocity term, so with w' = W q'' + W' q' (W' q' the angular part of wr_hat_i, (1.5)) the
    equations gain a W^T W on the joint's block of M (armature_blocks) and the generalized force
    -a W^T W' q' here (the same equations as the kinetic energy 1/2 a |w|^2: an isotropic inertia has
    no gyroscopic term). Its power is inertial: energy.py takes it back out of the balance."""
    jk = ctx.kin.joints[ctx.kin.topo.index(f["body"])]
    a = ctx.P(f["inertia"])
    for c, col in zip(jk.coordinates, jk.A):
        ctx.gen[c] -= a * dot(col[3:], jk.wr_hat[3:])
    return {}


def rotation_armatures(kin) -> list:
    """[(body index, inertia, W)] of the `rotation_armature` elements, W the angular rows of the
    joint's columns (n_i 3-vectors)."""
    out = []
    for f in kin.spec.forces:
        if f.type == "rotation_armature":
            jk = kin.joints[kin.topo.index(f["body"])]
            out.append((jk.body, ex.parse(f["inertia"], kin.spec.scope()), [col[3:] for col in jk.A]))
    return out


def armature_blocks(kin) -> dict:
    """body i -> the armature's n_i x n_i block on M's diagonal block of joint i (sympy; zeros where
    none): the `armature` elements on its diagonal, a W^T W of each `rotation_armature`. Bodies
    without armature are absent."""
    scalar = armature_terms(kin)
    out = {}
    for i in range(1, kin.topo.n_bodies + 1):
        names = kin.joints[i].coordinates
        if any(c in scalar for c in names):
            out[i] = [[scalar.get(c, sp.Integer(0)) if r == k else sp.Integer(0) for k in range(len(names))]
                      for r, c in enumerate(names)]
    for i, a, W in rotation_armatures(kin):
        block = out.setdefault(i, [[sp.Integer(0)] * len(W) for _ in W])
        for r in range(len(W)):
            for k in range(len(W)):
                block[r][k] = block[r][k] + a * dot(W[r], W[k])
    return out


def armature_terms(kin) -> dict:
    """coordinate -> the sum of its `armature` elements' inertias (MuJoCo's dof_armature: added
    to the diagonal of M, M q'' = Q becoming (M + diag(a)) q'' = Q)."""
    out = {}
    for f in kin.spec.forces:
        if f.type == "armature":
            c = f["coordinate"]
            out[c] = out.get(c, sp.Integer(0)) + ex.parse(f["inertia"], kin.spec.scope())
    return out


def bushing_frames(ctx, f):
    """(p_a, p_b, x_a, v_a, x_b, v_b, G_a, w_a, G_b, w_b): the bushing's two points in their bodies'
    frames and in the ground's, their velocities, and
    its bodies' rotations and angular velocities (the bushing's wrench and its potential)."""
    pa = [ctx.P(x) for x in f["point_a"]]
    pb = [ctx.P(x) for x in f["point_b"]]
    xa, va = ctx.point_state(f["body_a"], pa)
    xb, vb = ctx.point_state(f["body_b"], pb)
    Ga, wa, _ = ctx.frame_of(f["body_a"])
    Gb, wb, _ = ctx.frame_of(f["body_b"])
    return pa, pb, xa, va, xb, vb, Ga, wa, Gb, wb


def _bushing_potential(ctx, f):
    # translational springs: V = 1/2 d^T K d of d = G_a (x_b - x_a) (frame a), dV/dt = (K d) . d';
    # an isotropic rotational spring: V = k (1 - cos phi) = k (3 - tr R) / 2, dV/dt = k theta . w
    K = constant_fields(ctx, *f["stiffness"])
    rot = f["rotational_stiffness"]
    Kr = constant_fields(ctx, rot[0]) if rot[0] == rot[1] == rot[2] else None
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


@register("bushing", {"body_a": ("body_or_ground", REQUIRED), "point_a": ("point", [0, 0, 0]),
                      "body_b": ("body_or_ground", REQUIRED), "point_b": ("point", [0, 0, 0]),
                      "stiffness": ("vector", [0, 0, 0]), "damping": ("vector", [0, 0, 0]),
                      "rotational_stiffness": ("vector", [0, 0, 0]), "rotational_damping": ("vector", [0, 0, 0])},
          potential=_bushing_potential,
          doc="a 6-DOF linear spring-damper between frames fixed in two bodies (axes of body_a)")
def _bushing(ctx, f):
    # frame a: axes of body_a at point_a; frame b: axes of body_b at point_b. In frame a:
    # d = G_a (x_b - x_a), d' = G_a (v_b - v_a) - w_a x d, rotation angles
    # theta = vee(R - R^T)/2 of R = G_a G_b^T (exact small-angle linearization; for an
    # isotropic rotational stiffness the torque k sin(phi) has potential k (1 - cos phi)),
    # relative angular velocity w = G_a G_b^T w_b - w_a. Force on b -(K d + C d'),
    # torque on b -(K_r theta + C_r w); the opposite on a at the same spatial point.
    pa, pb, xa, va, xb, vb, Ga, wa, Gb, wb = bushing_frames(ctx, f)
    d = ctx.let_vector("d", matvec(Ga, sub(xb, xa)))
    dd = ctx.let_vector("dd", sub(matvec(Ga, sub(vb, va)), cross(wa, d)))
    R = ctx.let_matrix("R", Ga * Gb.T)
    th = [(R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2]
    w = sub(matvec(R, wb), wa)
    K, C = [ctx.P(x) for x in f["stiffness"]], [ctx.P(x) for x in f["damping"]]
    Kr, Cr = [ctx.P(x) for x in f["rotational_stiffness"]], [ctx.P(x) for x in f["rotational_damping"]]
    Fb = ctx.let_vector("F", [-(K[j] * d[j] + C[j] * dd[j]) for j in range(3)])
    Tq = ctx.let_vector("M", [-(Kr[j] * th[j] + Cr[j] * w[j]) for j in range(3)])
    ctx.apply(f["body_b"], pb, f_ground=matTvec(Ga, Fb), t_body=matvec(Gb, matTvec(Ga, Tq)))
    ctx.apply(f["body_a"], add(pa, d), f_body=[-x for x in Fb], t_body=[-x for x in Tq])
    return {"force": Fb, "torque": Tq}                          # on body_b, frame a


def _contact_check(given, fields):
    from dynamica.generator.spec.contact_sections import PAIR_TYPES
    out = []
    a, b = fields.get("a"), fields.get("b")
    if a is not None and b is not None:
        if a.body == b.body:
            out.append(("", f"the shapes `{a.name}` and `{b.name}` are both on `{a.body}`: a contact pair "
                            "joins two bodies"))
        elif (a.kind, b.kind) not in PAIR_TYPES:
            out.append(("", f"no contact between a {a.kind} (`{a.name}`) and a {b.kind} (`{b.name}`); pairs: "
                            + ", ".join(f"{x}-{y}" for x, y in sorted(PAIR_TYPES))))
    for key in ("stiffness", "damping", "exponent", "friction", "stiction_velocity"):
        v = given.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and (
                v < 0 or (v == 0 and key in ("exponent", "stiction_velocity"))):
            out.append((key, f"expected a {'positive' if key in ('exponent', 'stiction_velocity') else 'nonnegative'} "
                             f"number, found {v}"))
    return out


def _contact_potential(ctx, f):
    # the elastic part k delta^e of the normal law: V = k delta^(e+1) / (e+1) per point,
    # dV/dt = k delta^e delta' with delta' = -n . (v_b - v_a)
    from dynamica.generator.mechanics import broad_phase
    if broad_phase.used(ctx.kin.spec):           # the pairs' sum, from the broad phase's routine
        return broad_phase.potential(ctx, f)
    ke = constant_fields(ctx, f["stiffness"], f["exponent"])
    if ke is None:
        return None
    from dynamica.generator.mechanics.contact import contact_points, normal_rate, smax
    k, e = ke
    V = Vd = sp.Integer(0)
    for x, n, d in contact_points(ctx, f["a"], f["b"]):
        delta = smax(0, -d)
        V += k * delta ** (e + 1) / (e + 1)
        Vd -= k * delta ** e * normal_rate(ctx, f["a"], f["b"], x, n)
    return V, Vd


@register("contact", {"a": ("shape", REQUIRED), "b": ("shape", REQUIRED), "stiffness": ("expr", 1e6),
                      "damping": ("expr", 0.5), "exponent": ("expr", 1.5), "friction": ("expr", 0.8),
                      "stiction_velocity": ("expr", 1e-3)},
          check=_contact_check, potential=_contact_potential, gaps=True,
          doc="two collision shapes (contact.shapes): Hunt-Crossley normal law, regularised Coulomb friction")
def _contact(ctx, f):
    # per contact point (x, n, d) of the pair (generator/mechanics/contact.py): delta = max(0, -d),
    # F_n = max(0, k delta^e (1 + 3/2 c delta')), F_t = -mu F_n v_t / sqrt(|v_t|^2 + v_s^2)
    from dynamica.generator.mechanics.contact import contact_points, material_point, point_law
    a, b = f["a"], f["b"]
    k, c, e = ctx.P(f["stiffness"]), ctx.P(f["damping"]), ctx.P(f["exponent"])
    mu, vs = ctx.P(f["friction"]), ctx.P(f["stiction_velocity"])
    total = [sp.Integer(0)] * 3
    dist, rate, pen, normal = [], [], [], []
    for j, (x, n, d) in enumerate(contact_points(ctx, a, b)):
        x = ctx.let_vector(f"x{j}", x)
        pa, va = material_point(ctx, a.body, x)
        pb, vb = material_point(ctx, b.body, x)
        vr = ctx.let_vector(f"vr{j}", sub(vb, va))
        vn, delta, Fn, F = point_law(ctx, j, n, d, vr, (k, c, e, mu, vs))
        if b.body != "ground":
            pb = ctx.let_vector(f"pb{j}", pb)
        if a.body != "ground":
            pa = ctx.let_vector(f"pa{j}", pa)
        ctx.apply(b.body, pb, f_ground=F)
        ctx.apply(a.body, pa, f_ground=[-v for v in F])
        total = add(total, F)
        dist.append(d), rate.append(vn), pen.append(delta), normal.append(Fn)
    return {"force": total, "distance": dist, "normal_velocity": rate, "penetration": pen, "normal_force": normal}


def _stop_check(given, fields):
    out = [] if "lower" in fields or "upper" in fields else [("", "a `stop` needs `lower`, `upper` or both")]
    for key in ("stiffness", "damping"):
        v = given.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and v < 0:
            out.append((key, f"expected a nonnegative number, found {v}"))
    return out


def _stop_sides(ctx, f):
    """[(delta, delta', sign)] of a stop's bounds: the penetration beyond the bound, its rate, and
    the sign of the generalized force that pushes back."""
    c = f["coordinate"]
    q, qd = ex.coord_symbol(c), ex.rate_symbol(c)
    fields = dict(f.fields)
    out = []
    if "lower" in fields:
        out.append((ctx.P(fields["lower"]) - q, -qd, 1))
    if "upper" in fields:
        out.append((q - ctx.P(fields["upper"]), qd, -1))
    return out


def _stop_potential(ctx, f):
    fields = dict(f.fields)
    k = constant_fields(ctx, f["stiffness"], *(fields[b] for b in ("lower", "upper") if b in fields))
    if k is None:
        return None
    V = Vd = sp.Integer(0)
    for gap, rate, _ in _stop_sides(ctx, f):
        delta = sp.Max(0, gap)
        V, Vd = V + k[0] * delta ** 2 / 2, Vd + k[0] * delta * rate
    return V, Vd


@register("stop", {"coordinate": ("coordinate", REQUIRED), "lower": ("expr", None), "upper": ("expr", None),
                   "stiffness": ("expr", REQUIRED), "damping": ("expr", 0)},
          check=_stop_check, potential=_stop_potential, gaps=True,
          doc="one-sided compliant stops of a coordinate: no force inside [lower, upper]")
def _stop(ctx, f):
    # beyond a bound by delta (rate delta'): |Q| = max(0, k delta (1 + 3/2 c delta')), the contact
    # law (Hunt-Crossley) with exponent 1 on the coordinate; zero inside the range
    k, c = ctx.P(f["stiffness"]), ctx.P(f["damping"])
    Q = sp.Integer(0)
    dist, rate = [], []
    for n, (gap, gap_rate, sign) in enumerate(_stop_sides(ctx, f)):
        delta = sp.Max(0, gap)
        Q += sign * ctx.let(f"Q{n}", sp.Max(0, k * delta * (1 + sp.Rational(3, 2) * c * gap_rate)))
        dist.append(-gap), rate.append(-gap_rate)
    ctx.gen[f["coordinate"]] += Q
    return {"generalized_force": [Q], "distance": dist, "normal_velocity": rate}
