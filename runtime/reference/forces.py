"""The force laws of the numeric reference: one `Law` per force type, written out from
docs/model_format.md with numpy, apart from the generator's (generator/mechanics/forces.py) on
purpose, so that a convention error there (a force's frame, a sign) is not repeated here.

A law says which fields of the element are expressions (`scalars`, evaluated to numbers) and
which are 3-vectors (`vectors`), and `contribute(a, fn)` adds the element's wrenches to `a.F`
(per body, at O_i, frame i) and its generalized forces to `a.gen`, where `fn` maps each field to
a function (q, qd, t, p) -> value (the law's `law` field: (q, qd, t, p, locals)) or to its plain
value, and `a` is the reference's state (`ActiveSums`). The reference raises on a force type
without a law (NumericReference); tests/test_registries.py checks that
every registered force type has one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Law:
    name: str
    contribute: Callable          # (a: ActiveSums, fn) -> None
    scalars: tuple = ()           # fields that are expressions
    vectors: tuple = ()           # fields that are 3-vectors of expressions
    energy: Callable | None = None   # (a, fn) -> the element's potential (or kinetic) energy; None: not conservative


#: force type -> its law in the reference
LAWS: dict = {}


def law(name, scalars=(), vectors=(), energy=None):
    def deco(fn):
        LAWS[name] = Law(name, fn, tuple(scalars), tuple(vectors), energy)
        return fn
    return deco


def _ground_point(a, fn, side):
    """The ground position of the element's point on body_<side>."""
    b, pt = fn[f"body_{side}"], a.vector(fn, f"point_{side}")
    if b == "ground":
        return pt
    i = a.body(b)
    return a.st["r0"][i] + a.st["R0"][i].T @ pt


@dataclass
class ActiveSums:
    """What a law reaches: the state (q, qd, t, p), the forward pass `st` (R0, r0, v per body), the
    sums F (6 per body) and gen (per coordinate), body and coordinate indices by name."""
    q: object
    qd: object
    t: object
    p: object
    st: dict
    F: list
    gen: object
    bodies: tuple                 # names, ground first
    coordinates: list
    slices: tuple = ()            # per body (ground first: None) its coordinates' slice

    def body(self, name) -> int:
        return self.bodies.index(name)

    def coordinate(self, name) -> int:
        return self.coordinates.index(name)

    def value(self, fn, key):
        return fn[key](self.q, self.qd, self.t, self.p)

    def vector(self, fn, key):
        return np.asarray(fn[key](self.q, self.qd, self.t, self.p), float).reshape(3)


def _joint_spring_energy(a, fn):
    k = a.coordinate(fn["coordinate"])
    return 0.5 * a.value(fn, "stiffness") * (a.q[k] - a.value(fn, "neutral")) ** 2


@law("joint_spring_damper", scalars=("stiffness", "damping", "neutral"), energy=_joint_spring_energy)
def _joint_spring_damper(a, fn):
    k = a.coordinate(fn["coordinate"])
    a.gen[k] += -a.value(fn, "stiffness") * (a.q[k] - a.value(fn, "neutral")) - a.value(fn, "damping") * a.qd[k]


@law("generalized_force", scalars=("value",))
def _generalized_force(a, fn):
    a.gen[a.coordinate(fn["coordinate"])] += a.value(fn, "value")


@law("body_force", vectors=("force", "torque", "point"))
def _body_force(a, fn):
    i = a.body(fn["body"])
    f, tq, pt = a.vector(fn, "force"), a.vector(fn, "torque"), a.vector(fn, "point")
    if fn["frame"] == "ground":
        f, tq = a.st["R0"][i] @ f, a.st["R0"][i] @ tq
    a.F[i] += np.concatenate([f, tq + np.cross(pt, f)])


def _spring_energy(a, fn):
    if "law" in fn:
        raise ValueError(f"force `{fn['name']}`: a spring_damper with a `law` has no potential in closed form")
    L = np.linalg.norm(_ground_point(a, fn, "b") - _ground_point(a, fn, "a"))
    return 0.5 * a.value(fn, "stiffness") * (L - a.value(fn, "free_length")) ** 2


@law("spring_damper", scalars=("stiffness", "damping", "free_length"), vectors=("point_a", "point_b"),
     energy=_spring_energy)
def _spring_damper(a, fn):
    st, xs, vs = a.st, [], []
    for side in ("a", "b"):
        b = fn[f"body_{side}"]
        pt = a.vector(fn, f"point_{side}")
        if b == "ground":
            xs.append(pt), vs.append(np.zeros(3))
        else:
            i = a.body(b)
            xs.append(st["r0"][i] + st["R0"][i].T @ pt)
            vs.append(st["R0"][i].T @ (st["v"][i][:3] + np.cross(st["v"][i][3:], pt)))
    d = xs[1] - xs[0]
    L = np.linalg.norm(d)
    e = d / L
    if "law" in fn:
        T = fn["law"](a.q, a.qd, a.t, a.p, [L - a.value(fn, "free_length"), e @ (vs[1] - vs[0])])
    else:
        T = a.value(fn, "stiffness") * (L - a.value(fn, "free_length")) + a.value(fn, "damping") * e @ (vs[1] - vs[0])
    for side, sgn in (("a", 1.0), ("b", -1.0)):
        b = fn[f"body_{side}"]
        if b != "ground":
            i = a.body(b)
            pt = a.vector(fn, f"point_{side}")
            fb = st["R0"][i] @ (sgn * T * e)
            a.F[i] += np.concatenate([fb, np.cross(pt, fb)])


def _limit_energy(a, fn):
    # docs/model_format.md, `limit`: (k/a) exp(-a (q - q1)) and (k/a) exp(a (q - q2))
    k = a.coordinate(fn["coordinate"])
    kk, dec, V = a.value(fn, "stiffness"), a.value(fn, "decay"), 0.0
    if "lower" in fn:
        V += kk / dec * np.exp(-dec * (a.q[k] - a.value(fn, "lower")))
    if "upper" in fn:
        V += kk / dec * np.exp(dec * (a.q[k] - a.value(fn, "upper")))
    return V


@law("limit", scalars=("lower", "upper", "stiffness", "damping", "decay"), energy=_limit_energy)
def _limit(a, fn):
    k = a.coordinate(fn["coordinate"])
    kk, mu, dec = (a.value(fn, x) for x in ("stiffness", "damping", "decay"))
    if "lower" in fn:
        a.gen[k] += (kk - mu * a.qd[k]) * np.exp(-dec * (a.q[k] - a.value(fn, "lower")))
    if "upper" in fn:
        a.gen[k] -= (kk + mu * a.qd[k]) * np.exp(dec * (a.q[k] - a.value(fn, "upper")))


def _bushing_energy(a, fn):
    # docs/model_format.md, `bushing`: 1/2 d^T K d in frame a, and K_r (1 - cos phi) when K_r is isotropic
    Kr = a.vector(fn, "rotational_stiffness")
    if np.ptp(Kr) != 0.0:
        raise ValueError(f"force `{fn['name']}`: an anisotropic rotational stiffness has no potential")
    R = [np.eye(3) if fn[f"body_{s}"] == "ground" else a.st["R0"][a.body(fn[f"body_{s}"])] for s in ("a", "b")]
    d = R[0] @ (_ground_point(a, fn, "b") - _ground_point(a, fn, "a"))
    return 0.5 * d @ (a.vector(fn, "stiffness") * d) + Kr[0] * (3.0 - np.trace(R[0] @ R[1].T)) / 2


@law("bushing", vectors=("point_a", "point_b", "stiffness", "damping", "rotational_stiffness",
                         "rotational_damping"), energy=_bushing_energy)
def _bushing(a, fn):
    # ground-frame kinematics of the two frames, then the law in frame a (docs/model_format.md, `bushing`)
    st, fr = a.st, {}
    for side in ("a", "b"):
        b = fn[f"body_{side}"]
        pt = a.vector(fn, f"point_{side}")
        if b == "ground":
            fr[side] = (np.eye(3), pt, np.zeros(3), np.zeros(3), pt)
        else:
            i = a.body(b)
            R = st["R0"][i]
            w_g = R.T @ st["v"][i][3:]
            fr[side] = (R, st["r0"][i] + R.T @ pt, R.T @ st["v"][i][:3] + np.cross(w_g, R.T @ pt), w_g, pt)
    Ra, xa, va, wa, pa = fr["a"]
    Rb, xb, vb, wb, pb = fr["b"]
    dg = xb - xa
    d = Ra @ dg
    dd = Ra @ (vb - va) - Ra @ np.cross(wa, dg)            # d/dt (Ra dg), Ra' = -Ra wa~ (ground wa)
    R = Ra @ Rb.T
    th = 0.5 * np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    w = Ra @ (wb - wa)
    Fa = -(a.vector(fn, "stiffness") * d + a.vector(fn, "damping") * dd)           # on b, frame a
    Ta = -(a.vector(fn, "rotational_stiffness") * th + a.vector(fn, "rotational_damping") * w)
    if fn["body_b"] != "ground":
        i = a.body(fn["body_b"])
        fb, tb = Rb @ Ra.T @ Fa, Rb @ Ra.T @ Ta
        a.F[i] += np.concatenate([fb, tb + np.cross(pb, fb)])
    if fn["body_a"] != "ground":
        i = a.body(fn["body_a"])
        a.F[i] += np.concatenate([-Fa, -Ta + np.cross(pa + d, -Fa)])


def _armature_energy(a, fn):
    return 0.5 * a.value(fn, "inertia") * a.qd[a.coordinate(fn["coordinate"])] ** 2


@law("armature", scalars=("inertia",), energy=_armature_energy)
def _armature(a, fn):
    """No force: the inertia joins the mass matrix's diagonal (NumericReference.mass_matrix, as
    MuJoCo's dof_armature) and the kinetic energy; nothing enters the active sums."""


def _rotation_armature_energy(a, fn):
    i = a.body(fn["body"])
    w = a.st["A"][i][3:] @ a.qd[a.slices[i]]
    return 0.5 * a.value(fn, "inertia") * float(w @ w)


@law("rotation_armature", scalars=("inertia",), energy=_rotation_armature_energy)
def _rotation_armature(a, fn):
    """No force in the active sums: NumericReference.equations adds a W^T W to the joint's block of
    M and -a W^T W' q' to its generalized forces (W the angular rows of the joint's columns)."""


def _placed(a, shape):
    """(centre, 3x3 with the shape's axes as columns), ground frame."""
    A = np.asarray(shape.axes, float).reshape(3, 3)
    at = np.asarray(shape.at, float)
    if shape.body == "ground":
        return at, A
    i = a.body(shape.body)
    R = a.st["R0"][i]                                  # ground -> body
    return a.st["r0"][i] + R.T @ at, R.T @ A


def _segment_closest(c1, u1, h1, c2, u2, h2):
    """Closest points of two segments c + s u, |s| <= h (unit u): a grid-free alternation
    (clamped projections, repeated until it settles; convex, so it converges)."""
    s = t = 0.0
    for _ in range(200):
        t = float(np.clip(u2 @ (c1 + s * u1 - c2), -h2, h2))
        s_new = float(np.clip(u1 @ (c2 + t * u2 - c1), -h1, h1))
        if abs(s_new - s) < 1e-15:
            s = s_new
            break
        s = s_new
    return c1 + s * u1, c2 + t * u2


def _point_box(ca, Ea, half, cb, radius):
    """(x, n, d) of a sphere (centre cb) against a box (centre ca, axes the columns of Ea)."""
    c = Ea.T @ (cb - ca)
    h = np.asarray(half, float)
    if np.any(np.abs(c) > h):                            # outside: the closest point of the box
        w = c - np.clip(c, -h, h)
        L = np.linalg.norm(w)
        n, d = Ea @ (w / L), L - radius
    else:                                                # inside: out through the nearest face
        j = int(np.argmin(h - np.abs(c)))
        n, d = Ea[:, j] * np.sign(c[j]), -(h[j] - abs(c[j])) - radius
    return cb - (radius + d / 2) * n, n, d


def _box_corners(c, E, half):
    return [c + E @ (np.array(s) * np.asarray(half)) for s in
            ((1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1), (-1, 1, 1), (-1, 1, -1), (-1, -1, 1), (-1, -1, -1))]


def box_box_edges(ca, Ea, ha, cb, Eb, hb, rb=0.0, b_faces=True):
    """(x, n, d) of two boxes' edge-edge contact (docs/contact.md): the separating-axis test, the
    edge axis of largest separation (parallel edges left out), its two supporting edges' closest
    points (`_segment_closest`); d that separation where it exceeds 0.95 times the faces', else
    |edge| + |face|. A capsule is b with one column in Eb (its axis), rb its radius, no faces."""
    ha, hb, r = np.asarray(ha, float), np.asarray(hb, float), cb - ca
    nb = Eb.shape[1]

    def sep(L):
        return abs(L @ r) - ha @ np.abs(Ea.T @ L) - hb @ np.abs(Eb.T @ L) - rb
    face = max(sep(e) for e in list(Ea.T) + (list(Eb.T) if b_faces else []))
    best = None
    for i in range(3):
        for j in range(nb):
            c = np.cross(Ea[:, i], Eb[:, j])
            if c @ c >= 1e-12 and (best is None or sep(c / np.linalg.norm(c)) > best[0]):
                best = (sep(c / np.linalg.norm(c)), i, j, c / np.linalg.norm(c))
    edge, i, j, n = best
    n = n * np.sign(n @ r)
    pa = ca + sum(np.sign(n @ Ea[:, k]) * ha[k] * Ea[:, k] for k in range(3) if k != i)
    pb = cb - sum((np.sign(n @ Eb[:, k]) * hb[k] * Eb[:, k] for k in range(nb) if k != j), np.zeros(3))
    xa, xb = _segment_closest(pa, Ea[:, i], ha[i], pb, Eb[:, j], hb[j])
    d = edge if edge > 0.95 * face else abs(edge) + abs(face)
    return (xa + xb - rb * n) / 2, n, d


def _point_cylinder(c, E, R, hl, p, radius):
    """(x, n, d) of a sphere (centre p) against a solid cylinder (centre c, axis E[:, 2]), the normal
    from the cylinder to the sphere."""
    x, y, z = E.T @ (p - c)
    rho = np.hypot(x, y)
    if rho > R or abs(z) > hl:                           # outside: the closest point of the cylinder
        f = min(1.0, R / rho) if rho > 0 else 1.0
        w = np.array([x - f * x, y - f * y, z - np.clip(z, -hl, hl)])
        L = np.linalg.norm(w)
        n, d = E @ (w / L), L - radius
    elif hl - abs(z) < R - rho:                          # inside, nearer an end face
        n, d = E[:, 2] * np.sign(z), -(hl - abs(z)) - radius
    else:                                                # inside, nearer the side
        n, d = E @ np.array([x / rho, y / rho, 0.0]), -(R - rho) - radius
    return p - (radius + d / 2) * n, n, d


def _contacts(a, A, B):
    """[(x, n, d)] of the shapes A, B as docs/contact.md describes them (one function per pair type)."""
    ca, Ea = _placed(a, A)
    cb, Eb = _placed(a, B)
    kinds = (A.kind, B.kind)
    pair = _plane if A.kind == "plane" else _PAIRS.get(kinds)
    if pair is None:
        raise ValueError(f"the reference has no contact of the pair {kinds}")
    out: list = []
    pair(out, ca, Ea, A, cb, Eb, B)
    return out


def _spheres(out, pa, ra, pb, rb):
    dv = pb - pa
    L = np.linalg.norm(dv)
    n = dv / L if L > 0 else np.zeros(3)
    d = L - ra - rb
    out.append((pa + (ra + d / 2) * n, n, d))


def _plane(out, ca, Ea, A, cb, Eb, B):
    n = Ea[:, 2]
    if B.kind == "sphere":
        pts, r = [cb], B.radius
    elif B.kind == "capsule":
        pts, r = [cb + Eb[:, 2] * B.length / 2, cb - Eb[:, 2] * B.length / 2], B.radius
    elif B.kind == "cylinder":                       # rim points by angle in the cylinder's axes:
        nl = Eb.T @ n                                # the deepest (opposite the normal's direction,
        phi = np.arctan2(nl[1], nl[0] + 1e-12)       # x by 1e-12 when along the axis) and +-120 deg
        pts = [cb + Eb @ np.array([B.radius * np.cos(a), B.radius * np.sin(a), s * B.length / 2])
               for s in (1, -1) for a in (phi + np.pi, phi + np.pi / 3, phi - np.pi / 3)]
        r = 0.0
    elif B.kind == "box":                            # box: its corners
        pts = [cb + Eb @ (np.array(s) * np.asarray(B.half)) for s in
               ((1, 1, 1), (1, 1, -1), (1, -1, 1), (1, -1, -1), (-1, 1, 1), (-1, 1, -1), (-1, -1, 1), (-1, -1, -1))]
        r = 0.0
    else:
        raise ValueError(f"the reference has no contact of the pair ('plane', {B.kind!r})")
    for c in pts:
        d = n @ (c - ca) - r
        out.append((c - (r + d / 2) * n, n, d))


def _box_box(out, ca, Ea, A, cb, Eb, B):                 # each box's corners in the other (radius 0)
    for x, n, d in [_point_box(ca, Ea, A.half, p, 0.0) for p in _box_corners(cb, Eb, B.half)]:
        out.append((x, n, d))
    for x, n, d in [_point_box(cb, Eb, B.half, p, 0.0) for p in _box_corners(ca, Ea, A.half)]:
        out.append((x, -n, d))                       # the normal from a into b
    out.append(box_box_edges(ca, Ea, A.half, cb, Eb, B.half))


def _box_capsule(out, ca, Ea, A, cb, Eb, B):     # the capsule's end spheres in the box, then the
    u, h = Eb[:, 2], B.length / 2                # box's corners against the capsule's segment
    for sgn in (1.0, -1.0):
        out.append(_point_box(ca, Ea, A.half, cb + sgn * h * u, B.radius))
    for p in _box_corners(ca, Ea, A.half):
        _spheres(out, p, 0.0, cb + np.clip(u @ (p - cb), -h, h) * u, B.radius)
    out.append(box_box_edges(ca, Ea, A.half, cb, Eb[:, 2:], [h], B.radius, b_faces=False))


def _capsule_cylinder(out, ca, Ea, A, cb, Eb, B):  # its end spheres, then its middle against the side
    u, h = Ea[:, 2], A.length / 2
    for sgn in (1.0, -1.0):
        x, n, d = _point_cylinder(cb, Eb, B.radius, B.length / 2, ca + sgn * h * u, A.radius)
        out.append((x, -n, d))
    v, hb, r = Eb[:, 2], B.length / 2, ca - cb
    beta = u @ v
    s = (beta * (v @ r) - u @ r) / max(1 - beta ** 2, 1e-300)
    t = beta * s + v @ r
    _spheres(out, ca + np.clip(s, -h, h) * u, A.radius, cb + np.clip(t, -hb, hb) * v, B.radius)
    if not (abs(s) < h and abs(t) < hb):             # only the side: elsewhere the positive |d|
        x, n, d = out.pop()
        out.append((x, n, abs(d)))


def _sphere_cylinder(out, ca, Ea, A, cb, Eb, B):   # the normal from a into b
    x, n, d = _point_cylinder(cb, Eb, B.radius, B.length / 2, ca, A.radius)
    out.append((x, -n, d))


def _box_sphere(out, ca, Ea, A, cb, Eb, B):
    out.append(_point_box(ca, Ea, A.half, cb, B.radius))


def _sphere_sphere(out, ca, Ea, A, cb, Eb, B):
    _spheres(out, ca, A.radius, cb, B.radius)


def _sphere_capsule(out, ca, Ea, A, cb, Eb, B):
    u = Eb[:, 2]
    s = np.clip(u @ (ca - cb), -B.length / 2, B.length / 2)
    _spheres(out, ca, A.radius, cb + s * u, B.radius)


def _capsule_capsule(out, ca, Ea, A, cb, Eb, B):
    pa, pb = _segment_closest(ca, Ea[:, 2], A.length / 2, cb, Eb[:, 2], B.length / 2)
    _spheres(out, pa, A.radius, pb, B.radius)


#: (shape a, shape b) -> the pair's contact points (a plane against anything: `_plane`)
_PAIRS = {("box", "box"): _box_box, ("box", "capsule"): _box_capsule, ("capsule", "cylinder"): _capsule_cylinder,
          ("sphere", "cylinder"): _sphere_cylinder, ("box", "sphere"): _box_sphere,
          ("sphere", "sphere"): _sphere_sphere, ("sphere", "capsule"): _sphere_capsule,
          ("capsule", "capsule"): _capsule_capsule}


def _contact_energy(a, fn):
    # the elastic part of the normal law: k delta^(e+1) / (e+1) per contact point (docs/contact.md)
    k, e = a.value(fn, "stiffness"), a.value(fn, "exponent")
    return sum(k * max(0.0, -d) ** (e + 1) / (e + 1) for _, _, d in _contacts(a, fn["a"], fn["b"]))


@law("contact", scalars=("stiffness", "damping", "exponent", "friction", "stiction_velocity"),
     energy=_contact_energy)
def _contact(a, fn):
    # docs/contact.md: delta = max(0, -d), F_n = max(0, k delta^e (1 + 1.5 c delta')),
    # F_t = -mu F_n v_t / sqrt(|v_t|^2 + v_s^2); on b at x, the opposite on a
    k, c, e, mu, vs = (a.value(fn, x) for x in ("stiffness", "damping", "exponent", "friction", "stiction_velocity"))
    A, B = fn["a"], fn["b"]
    st = a.st

    def material(shape, x):
        if shape.body == "ground":
            return None, np.zeros(3)
        i = a.body(shape.body)
        R = st["R0"][i]
        p = R @ (x - st["r0"][i])
        return i, R.T @ (st["v"][i][:3] + np.cross(st["v"][i][3:], p))

    for x, n, d in _contacts(a, A, B):
        ia, va = material(A, x)
        ib, vb = material(B, x)
        vr = vb - va
        vn = n @ vr
        delta = max(0.0, -d)
        Fn = max(0.0, k * delta ** e * (1 - 1.5 * c * vn))
        vt = vr - vn * n
        F = Fn * n - mu * Fn * vt / np.sqrt(vt @ vt + vs ** 2)
        for i, sgn in ((ib, 1.0), (ia, -1.0)):
            if i is not None:
                R = st["R0"][i]
                p = R @ (x - st["r0"][i])
                fb = R @ (sgn * F)
                a.F[i] += np.concatenate([fb, np.cross(p, fb)])


def _stop_energy(a, fn):
    # beyond a bound by delta: k delta^2 / 2 (the elastic part of the stop's law)
    k = a.coordinate(fn["coordinate"])
    q, kk, V = a.q[k], a.value(fn, "stiffness"), 0.0
    if "lower" in fn:
        V += kk * max(0.0, a.value(fn, "lower") - q) ** 2 / 2
    if "upper" in fn:
        V += kk * max(0.0, q - a.value(fn, "upper")) ** 2 / 2
    return V


@law("stop", scalars=("lower", "upper", "stiffness", "damping"), energy=_stop_energy)
def _stop(a, fn):
    # docs/model_format.md, `stop`: beyond a bound by delta, |Q| = max(0, k delta (1 + 1.5 c delta'))
    k = a.coordinate(fn["coordinate"])
    kk, c = a.value(fn, "stiffness"), a.value(fn, "damping")
    q, qd = a.q[k], a.qd[k]
    if "lower" in fn:
        delta = max(0.0, a.value(fn, "lower") - q)
        a.gen[k] += max(0.0, kk * delta * (1 - 1.5 * c * qd))
    if "upper" in fn:
        delta = max(0.0, q - a.value(fn, "upper"))
        a.gen[k] -= max(0.0, kk * delta * (1 + 1.5 * c * qd))
