"""Contact between collision shapes (docs/contact.md): the signed distance and the contact frame
of a pair of shapes in closed form, and the compliant law at each contact point. The force type
`contact` (generator/mechanics/forces.py) is built from these.

A pair (a, b) gives one or more contact points, each (x, n, d): the point x midway between the
two surfaces (ground frame), the unit normal n pointing from a into b, and the signed distance
d (negative: penetration). The pairs, a before b:

  plane   - sphere    d = n . (c - p) - r                       n: the plane's z axis
  plane   - capsule   the plane against each end sphere          (two points)
  plane   - box       the plane against each corner (radius 0)   (eight points)
  plane   - cylinder  per end face, the rim point deepest below the plane and the two rim points
                      120 degrees from it (six points: a cylinder standing on a face rests on a
                      triangle of its rim, one lying rolls on the deepest point of each end)
  sphere  - sphere    d = |c_b - c_a| - r_a - r_b               n = (c_b - c_a) / |c_b - c_a|
  sphere  - capsule   the sphere against the capsule's closest segment point
  sphere  - cylinder  the cylinder's point closest to the centre (radial distance clamped to the
                      radius, axial to the half length); a centre inside: the side or end of least
                      depth (`_cylinder_sphere`)
  capsule - cylinder  each end sphere against the cylinder (as sphere - cylinder), then the
                      capsule's middle against the side (`_capsule_cylinder_side`): three points
  capsule - capsule   the closest points of the two segments (Ericson, Real-Time Collision
                      Detection, 2005, section 5.1.9, clamped twice)
  box     - sphere    the box's point closest to the centre (the centre clamped to the box, in
                      its axes); a centre inside the box: the face of least depth
  box     - capsule   each end sphere of the capsule against the box (as box - sphere), then each
                      corner of the box against the capsule (as sphere - capsule, radius 0), then
                      the box's edges against the capsule's segment (`_box_box_edges`, one
                      direction): eleven points
  box     - box       each corner of b against box a and each corner of a against box b, as
                      box - sphere of radius 0 (sixteen points: vertex-face contacts), then the
                      edge-edge point of the separating-axis test (`_box_box_edges`)

The law at a point (Hunt and Crossley, J. Appl. Mech. 42 (1975) 440): with the penetration
delta = max(0, -d) and its rate delta' = -n . (v_b - v_a) (the two bodies' material points at x),

  F_n = max(0, k delta^e (1 + 3/2 c delta'))          (never pulling)
  F_t = -mu F_n v_t / sqrt(|v_t|^2 + v_s^2)          (regularised Coulomb, v_t the slip velocity)

and F_n n + F_t acts on b at x, its opposite on a.
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.ir.program import add, cross, dot, matTvec, matvec, scale, sub

#: a floor under |c_b - c_a|^2 and the capsules' 1 - (u_a . u_b)^2 (m^2; dimensionless): two
#: coincident centres or parallel capsules give a zero normal or parameter instead of 0/0
_TINY = sp.Float(1e-300)


def _f(x):
    """A number of a shape as a sympy Float; a symbol (the broad phase's per-pair-type functions,
    generator/mechanics/broad_phase.py, take the sizes as arguments) as it is."""
    return x if isinstance(x, sp.Basic) else sp.Float(x)


def placed(ctx, shape):
    """(centre, [x, y, z axes]) of a shape in the ground frame: expressions of the state."""
    G, _, origin = ctx.frame_of(shape.body)
    at = [sp.Float(v) for v in shape.at]
    centre = add(origin, matTvec(G, at)) if shape.body != "ground" else at
    axes = [[sp.Float(v) for v in shape.axis(k)] for k in range(3)]
    if shape.body != "ground":
        axes = [matTvec(G, a) for a in axes]
    return centre, axes


def smax(*args):
    """max of the arguments, left unevaluated: sympy's Max compares its arguments under their
    assumptions when it is built, which took 37 of the 76 s of generating MuJoCo's humanoid
    (126 pairs); the value (fmax in C) is the same."""
    return sp.Max(*args, evaluate=False)


def smin(*args):
    """min of the arguments, left unevaluated (as `smax`)."""
    return sp.Min(*args, evaluate=False)


def _clamp(x, lo, hi):
    return smax(lo, smin(hi, x))


def _point_plane(ctx, p, n, c, r):
    d = ctx.let(f"d{len(ctx.contact_points)}", dot(n, sub(c, p)) - r)
    ctx.contact_points.append((add(c, scale(-(r + d / 2), n)), n, d))


def _sphere_sphere(ctx, ca, ra, cb, rb):
    k = len(ctx.contact_points)
    dv = ctx.let_vector(f"dv{k}", sub(cb, ca))
    L = ctx.let(f"L{k}", sp.sqrt(dot(dv, dv) + _TINY))
    n = ctx.let_vector(f"n{k}", scale(1 / L, dv))
    d = ctx.let(f"d{k}", L - ra - rb)
    ctx.contact_points.append((add(ca, scale(ra + d / 2, n)), n, d))


def _box_sphere(ctx, c, axes, half, centre, r):
    """A sphere against a box, without branches: outside, d = |w| - r along w = centre - (the
    centre clamped to the box), in the box's axes; inside (every depth s_j = h_j - |c_j| >= 0),
    d = -min(s) - r along the face of least depth, chosen by Heaviside weights (H(0) = 1/2: on a
    tie, or with the centre exactly on the surface, the normal is not a unit vector)."""
    k = len(ctx.contact_points)
    h = [_f(x) for x in half]
    loc = ctx.let_vector(f"cl{k}", [dot(axes[j], sub(centre, c)) for j in range(3)])
    w = ctx.let_vector(f"w{k}", [loc[j] - _clamp(loc[j], -h[j], h[j]) for j in range(3)])
    L = ctx.let(f"L{k}", sp.sqrt(dot(w, w) + _TINY))
    s = ctx.let_vector(f"s{k}", [h[j] - sp.Abs(loc[j]) for j in range(3)])
    smin_ = ctx.let(f"smin{k}", smin(*s))
    inside = ctx.let(f"in{k}", sp.Heaviside(smin_))
    wx = sp.Heaviside(s[1] - s[0]) * sp.Heaviside(s[2] - s[0])
    wy = (1 - wx) * sp.Heaviside(s[2] - s[1])
    face = [wx * sp.sign(loc[0]), wy * sp.sign(loc[1]), (1 - wx - wy) * sp.sign(loc[2])]
    nl = [(1 - inside) * w[j] / L + inside * face[j] for j in range(3)]
    n = ctx.let_vector(f"n{k}", add(add(scale(nl[0], axes[0]), scale(nl[1], axes[1])), scale(nl[2], axes[2])))
    d = ctx.let(f"d{k}", (1 - inside) * (L - r) + inside * (-smin_ - r))
    ctx.contact_points.append((add(centre, scale(-(r + d / 2), n)), n, d))


#: the weight of the cylinder's own x axis in the in-face direction of its deepest rim point: where
#: the plane's normal is along the axis (a cylinder standing on a face) the projection of the normal
#: vanishes and the rim's triangle turns to the body's x axis instead of 0/0; elsewhere it moves the
#: deepest point by about 1e-12 / |projection| radians, its distance by r (1e-12 / |projection|)^2 / 2
_AXIS_WEIGHT = sp.Float(1e-12)


def _plane_cylinder(ctx, p, n, c, axes, r, hl):
    """A cylinder (centre c, axis axes[2], radius r, half length hl) against the plane through p with
    normal n: per end face c +- hl u, the rim point deepest below the plane, e - r w with w the unit
    in-face direction of n (n less its component along u), and the rim points 120 degrees on either
    side of it; each a point against the plane (radius 0)."""
    u = ctx.let_vector("cu", axes[2])
    w = sub(n, scale(dot(n, u), u))
    w = add(w, scale(_AXIS_WEIGHT, axes[0]))
    L = ctx.let("cw", sp.sqrt(dot(w, w)))
    w = ctx.let_vector("w", scale(1 / L, w))
    v = ctx.let_vector("v", cross(u, w))
    c3 = sp.sqrt(3) / 2
    rim = [scale(-r, w), add(scale(r / 2, w), scale(c3 * r, v)), add(scale(r / 2, w), scale(-c3 * r, v))]
    for sgn in (1, -1):
        e = add(c, scale(sgn * hl, u))
        for offset in rim:
            _point_plane(ctx, p, n, add(e, offset), sp.Integer(0))


def _cylinder_sphere(ctx, c, axes, R, hl, centre, r):
    """A sphere against a solid cylinder (centre c, axis axes[2], radius R, half length hl), without
    branches, as `_box_sphere` in the cylinder's axes: outside, d = |w| - r along w = centre - (the
    centre with its radial distance clamped to R and its axial one to hl); inside (both depths
    R - rho and hl - |z| >= 0), d = -min(depths) - r out through the side or the nearer end face,
    chosen by a Heaviside weight. The normal points from the cylinder to the sphere."""
    k = len(ctx.contact_points)
    loc = ctx.let_vector(f"cl{k}", [dot(axes[j], sub(centre, c)) for j in range(3)])
    rho = ctx.let(f"rho{k}", sp.sqrt(loc[0] ** 2 + loc[1] ** 2 + _TINY))
    f = ctx.let(f"rf{k}", smin(sp.Integer(1), R / rho))
    w = ctx.let_vector(f"w{k}", [loc[0] * (1 - f), loc[1] * (1 - f), loc[2] - _clamp(loc[2], -hl, hl)])
    L = ctx.let(f"L{k}", sp.sqrt(dot(w, w) + _TINY))
    s_side, s_cap = ctx.let(f"ss{k}", R - rho), ctx.let(f"sc{k}", hl - sp.Abs(loc[2]))
    smin_ = ctx.let(f"smin{k}", smin(s_side, s_cap))
    inside = ctx.let(f"in{k}", sp.Heaviside(smin_))
    cap = sp.Heaviside(s_side - s_cap)                  # 1: the end face is the nearer way out
    face = [(1 - cap) * loc[0] / rho, (1 - cap) * loc[1] / rho, cap * sp.sign(loc[2])]
    nl = [(1 - inside) * w[j] / L + inside * face[j] for j in range(3)]
    n = ctx.let_vector(f"n{k}", add(add(scale(nl[0], axes[0]), scale(nl[1], axes[1])), scale(nl[2], axes[2])))
    d = ctx.let(f"d{k}", (1 - inside) * (L - r) + inside * (-smin_ - r))
    ctx.contact_points.append((add(centre, scale(-(r + d / 2), n)), n, d))


def _capsule_cylinder_side(ctx, ca, ua, ha, ra, cb, ub, hb, R):
    """A capsule's middle against a cylinder's side: the closest points of the two axes' lines,
    s* = (beta f - c) / (1 - beta^2) along the capsule and t* = beta s* + f along the cylinder, and
    d = |p_b - p_a| - ra - R between them, where both lie inside their segments (|s*| < ha, |t*| < hb;
    Heaviside weights); elsewhere the positive |d| (no force: an end of the capsule is its end
    sphere's point, the cylinder's end faces and rims are not covered)."""
    r = ctx.let_vector("cyr", sub(ca, cb))
    beta = ctx.let("cybeta", dot(ua, ub))
    c_, f_ = ctx.let("cycr", dot(ua, r)), ctx.let("cyfr", dot(ub, r))
    s = ctx.let("cys", (beta * f_ - c_) / smax(1 - beta ** 2, _TINY))
    t = ctx.let("cyt", beta * s + f_)
    on = ctx.let("cyon", sp.Heaviside(ha - sp.Abs(s)) * sp.Heaviside(hb - sp.Abs(t)))
    pa = ctx.let_vector("cypa", add(ca, scale(_clamp(s, -ha, ha), ua)))
    pb = ctx.let_vector("cypb", add(cb, scale(_clamp(t, -hb, hb), ub)))
    _sphere_sphere(ctx, pa, ra, pb, R)
    x, n, d = ctx.contact_points.pop()
    d = ctx.let(f"dside{len(ctx.contact_points)}", on * d + (1 - on) * sp.Abs(d))
    ctx.contact_points.append((x, n, d))


def _corners(c, axes, half):
    """The eight corners of a box, in the order (+,+,+), (+,+,-), (+,-,+), ... of its half sizes."""
    h = [scale(_f(half[j]), axes[j]) for j in range(3)]
    return [add(c, add(scale(sx, h[0]), add(scale(sy, h[1]), scale(sz, h[2]))))
            for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]


def _segment_point(ctx, c, u, h, x, what):
    """The point of the segment c + s u, |s| <= h, closest to x."""
    s = ctx.let(what, _clamp(dot(u, sub(x, c)), -h, h))
    return add(c, scale(s, u))


#: box - box edge-edge: an edge axis is the contact's only where its separation beats the faces'
#: by this factor (ODE's dBoxBox takes 1.05 the other way round): boxes face to face, whose edge
#: axes coincide with face normals, keep their corners' contacts alone
_EDGE_BIAS = sp.Float(0.95)
#: |e_a x e_b|^2 below which two edges count as parallel: their axis is left out (set far below)
_PARALLEL = sp.Float(1e-12)


def _box_box_edges(ctx, ca, ea, ha, cb, eb, hb, rb=sp.Integer(0), b_faces=True):
    """Two boxes' edge-edge contact, one point, without branches: the separating-axis test over the
    nine axes L_ij = e_a,i x e_b,j / |.| (separation |L . r| - sum_k ha_k |L . e_a,k| - sum_k hb_k
    |L . e_b,k| - rb, r = c_b - c_a) and the six face normals; the edge axis of largest separation,
    chosen by Heaviside weights, gives n (from a into b), the two supporting edges, and x midway
    between the surfaces at their closest points. d is that separation where it beats the faces'
    (by `_EDGE_BIAS`), else |edge| + |face| (> 0: no force; a face contact is the corners').
    A capsule's segment is b with one direction (eb = [u], hb = [half length], rb its radius, no
    faces of its own): the three axes e_a,i x u."""
    nb = len(eb)
    r = ctx.let_vector("eer", sub(cb, ca))
    ea = [ctx.let_vector(f"eea{k}", ea[k]) for k in range(3)]
    eb = [ctx.let_vector(f"eeb{k}", eb[k]) for k in range(nb)]
    ha, hb = [_f(x) for x in ha], [_f(x) for x in hb]

    def sep(L):
        return (sp.Abs(dot(L, r)) - sum(ha[k] * sp.Abs(dot(L, ea[k])) for k in range(3))
                - sum(hb[k] * sp.Abs(dot(L, eb[k])) for k in range(nb)) - rb)
    normals = list(ea) + (list(eb) if b_faces else [])
    face = ctx.let("eeface", smax(*[ctx.let(f"eef{m}", sep(e)) for m, e in enumerate(normals)]))
    axes, vals = [], []
    for i in range(3):
        for j in range(nb):
            m = nb * i + j
            c = ctx.let_vector(f"eec{m}", cross(ea[i], eb[j]))
            c2 = ctx.let(f"eecc{m}", dot(c, c))
            L = ctx.let_vector(f"eeL{m}", scale(1 / sp.sqrt(c2 + _TINY), c))
            axes.append(L)
            vals.append(ctx.let(f"eev{m}", sep(L) - sp.Float(1e6) * sp.Heaviside(_PARALLEL - c2)))
    M = len(vals)
    edge = ctx.let("eeedge", smax(*vals))
    w = [ctx.let(f"eew{m}", sp.Mul(*[sp.Heaviside(vals[m] - vals[l]) for l in range(M) if l != m]))
         for m in range(M)]
    wa = [ctx.let(f"eewa{k}", sum(w[nb * k + j] for j in range(nb))) for k in range(3)]
    wb = [ctx.let(f"eewb{k}", sum(w[nb * i + k] for i in range(3))) for k in range(nb)]
    Lsel = [sum(w[m] * axes[m][x] for m in range(M)) for x in range(3)]
    n = ctx.let_vector("een", scale(sp.sign(dot(Lsel, r)), Lsel))
    u = ctx.let_vector("eeu", [sum(wa[k] * ea[k][x] for k in range(3)) for x in range(3)])
    v = ctx.let_vector("eeuv", [sum(wb[k] * eb[k][x] for k in range(nb)) for x in range(3)])
    hu, hv = sum(wa[k] * ha[k] for k in range(3)), sum(wb[k] * hb[k] for k in range(nb))
    pa, pb = list(ca), list(cb)
    for k in range(3):
        pa = add(pa, scale((1 - wa[k]) * sp.sign(dot(n, ea[k])) * ha[k], ea[k]))
    for k in range(nb):
        pb = add(pb, scale(-(1 - wb[k]) * sp.sign(dot(n, eb[k])) * hb[k], eb[k]))
    pa, pb = ctx.let_vector("eepa", pa), ctx.let_vector("eepb", pb)
    wv = ctx.let_vector("eew", sub(pa, pb))
    s1, t = _closest_parameters(ctx, u, v, wv, hu, hv, "ee")
    x = scale(sp.Rational(1, 2), add(add(pa, scale(s1, u)), add(pb, scale(t, v))))
    x = add(x, scale(-rb / 2, n))                      # b's surface: its segment point less rb n
    on = ctx.let("eeon", sp.Heaviside(edge - _EDGE_BIAS * face))
    d = ctx.let(f"d{len(ctx.contact_points)}", on * edge + (1 - on) * (sp.Abs(edge) + sp.Abs(face)))
    ctx.contact_points.append((x, n, d))


def contact_points(ctx, a, b) -> list:
    """[(x, n, d)] of shapes a and b (ground frame): the table of the module docstring (one
    function per pair type, `PAIRS`)."""
    ctx.contact_points = []
    ca, ea = placed(ctx, a)
    cb, eb = placed(ctx, b)
    ca, cb = ctx.let_vector("ca", ca), ctx.let_vector("cb", cb)
    kinds = (a.kind, b.kind)
    if kinds not in PAIRS:
        raise ValueError(f"no closed form for the pair {kinds}")
    PAIRS[kinds](ctx, a, ca, ea, b, cb, eb)
    return ctx.contact_points


def _plane_sphere(ctx, a, ca, ea, b, cb, eb):
    _point_plane(ctx, ca, ctx.let_vector("n", ea[2]), cb, _f(b.radius))


def _plane_capsule(ctx, a, ca, ea, b, cb, eb):
    n = ctx.let_vector("n", ea[2])
    u = scale(_f(b.length / 2), eb[2])
    for sgn in (1, -1):
        _point_plane(ctx, ca, n, add(cb, scale(sgn, u)), _f(b.radius))


def _plane_cylinder_pair(ctx, a, ca, ea, b, cb, eb):
    _plane_cylinder(ctx, ca, ctx.let_vector("n", ea[2]), cb, eb, _f(b.radius), _f(b.length / 2))


def _plane_box(ctx, a, ca, ea, b, cb, eb):
    n = ctx.let_vector("n", ea[2])
    for corner in _corners(cb, eb, b.half):
        _point_plane(ctx, ca, n, corner, sp.Integer(0))


def _box_sphere_pair(ctx, a, ca, ea, b, cb, eb):
    _box_sphere(ctx, ca, ea, a.half, cb, _f(b.radius))


def _box_capsule(ctx, a, ca, ea, b, cb, eb):
    ub = ctx.let_vector("ub", eb[2])
    hb = _f(b.length / 2)
    for sgn in (1, -1):
        _box_sphere(ctx, ca, ea, a.half, add(cb, scale(sgn * hb, ub)), _f(b.radius))
    for k, corner in enumerate(_corners(ca, ea, a.half)):
        corner = ctx.let_vector(f"k{k}", corner)
        q = ctx.let_vector(f"qk{k}", _segment_point(ctx, cb, ub, hb, corner, f"sk{k}"))
        _sphere_sphere(ctx, corner, sp.Integer(0), q, _f(b.radius))
    _box_box_edges(ctx, ca, ea, a.half, cb, [ub], [hb], _f(b.radius), b_faces=False)   # across an edge


def _box_box(ctx, a, ca, ea, b, cb, eb):
    for corner in _corners(cb, eb, b.half):                 # b's corners in box a: n from a into b
        _box_sphere(ctx, ca, ea, a.half, corner, sp.Integer(0))
    for corner in _corners(ca, ea, a.half):                 # a's corners in box b: the normal turned
        _box_sphere(ctx, cb, eb, b.half, corner, sp.Integer(0))
        x, n, d = ctx.contact_points.pop()
        ctx.contact_points.append((x, [-v for v in n], d))
    _box_box_edges(ctx, ca, ea, a.half, cb, eb, b.half)     # the edges that cross: one point


def _sphere_sphere_pair(ctx, a, ca, ea, b, cb, eb):
    _sphere_sphere(ctx, ca, _f(a.radius), cb, _f(b.radius))


def _sphere_cylinder(ctx, a, ca, ea, b, cb, eb):              # n from the sphere into the cylinder
    _cylinder_sphere(ctx, cb, eb, _f(b.radius), _f(b.length / 2), ca, _f(a.radius))
    x, n, d = ctx.contact_points.pop()
    ctx.contact_points.append((x, [-v for v in n], d))


def _capsule_cylinder(ctx, a, ca, ea, b, cb, eb):             # n from the capsule into the cylinder
    ua, ub = ctx.let_vector("ua", ea[2]), ctx.let_vector("ub", eb[2])
    ha, hb, ra, R = _f(a.length / 2), _f(b.length / 2), _f(a.radius), _f(b.radius)
    for sgn in (1, -1):                                      # each end sphere against the cylinder
        _cylinder_sphere(ctx, cb, eb, R, hb, add(ca, scale(sgn * ha, ua)), ra)
        x, n, d = ctx.contact_points.pop()
        ctx.contact_points.append((x, scale(-1, n), d))
    _capsule_cylinder_side(ctx, ca, ua, ha, ra, cb, ub, hb, R)


def _sphere_capsule(ctx, a, ca, ea, b, cb, eb):
    ub = ctx.let_vector("ub", eb[2])
    q = ctx.let_vector("qb", _segment_point(ctx, cb, ub, _f(b.length / 2), ca, "sb"))
    _sphere_sphere(ctx, ca, _f(a.radius), q, _f(b.radius))


def _closest_parameters(ctx, u, v, w, hu, hv, tag=""):
    """(s, t): the closest points c_a + s u, c_b + t v of two segments (unit directions u, v,
    half-lengths hu, hv, w = c_a - c_b), each parameter clamped to its segment, the other
    recomputed from it (parallel segments: 1 - beta^2 kept from 0 by _TINY)."""
    beta = ctx.let(f"{tag}beta", dot(u, v))
    c_, f_ = ctx.let(f"{tag}cr", dot(u, w)), ctx.let(f"{tag}fr", dot(v, w))
    s0 = ctx.let(f"{tag}s0", _clamp((beta * f_ - c_) / smax(1 - beta ** 2, _TINY), -hu, hu))
    t = ctx.let(f"{tag}t", _clamp(beta * s0 + f_, -hv, hv))
    return ctx.let(f"{tag}s", _clamp(beta * t - c_, -hu, hu)), t


def _capsule_capsule(ctx, a, ca, ea, b, cb, eb):
    ua, ub = ctx.let_vector("ua", ea[2]), ctx.let_vector("ub", eb[2])
    ha, hb = _f(a.length / 2), _f(b.length / 2)
    r = ctx.let_vector("r", sub(ca, cb))
    s, t = _closest_parameters(ctx, ua, ub, r, ha, hb)
    pa = ctx.let_vector("pa", add(ca, scale(s, ua)))
    pb = ctx.let_vector("pb", add(cb, scale(t, ub)))
    _sphere_sphere(ctx, pa, _f(a.radius), pb, _f(b.radius))


#: (shape a, shape b) -> its narrow phase (ctx, a, a's centre and axes, b, b's) appending the
#: contact points; the loader's pair types (generator/spec/contact_sections.py PAIR_TYPES)
PAIRS = {("plane", "sphere"): _plane_sphere, ("plane", "capsule"): _plane_capsule,
         ("plane", "cylinder"): _plane_cylinder_pair, ("plane", "box"): _plane_box,
         ("box", "sphere"): _box_sphere_pair, ("box", "capsule"): _box_capsule, ("box", "box"): _box_box,
         ("sphere", "sphere"): _sphere_sphere_pair, ("sphere", "cylinder"): _sphere_cylinder,
         ("capsule", "cylinder"): _capsule_cylinder, ("sphere", "capsule"): _sphere_capsule,
         ("capsule", "capsule"): _capsule_capsule}


def material_point(ctx, body, x):
    """(the point x (ground frame) in `body`'s frame, the velocity of body's material point there
    (ground frame)); the ground's points are at rest."""
    if body == "ground":
        return x, [sp.Integer(0)] * 3
    fp, i = ctx.fp, ctx.kin.topo.index(body)
    p = matvec(fp.R0[i], sub(x, fp.r0[i]))
    return p, matTvec(fp.R0[i], add(fp.v[i][:3], cross(fp.v[i][3:], p)))


def normal_rate(ctx, a, b, x, n):
    """n . (v_b - v_a) at x: the rate of the signed distance (a point's normal velocity)."""
    _, va = material_point(ctx, a.body, x)
    _, vb = material_point(ctx, b.body, x)
    return dot(n, sub(vb, va))


def point_law(ctx, j, n, d, vr, law):
    """(delta', as n . (v_b - v_a), delta, F_n, the force on b (ground frame)) at contact point j
    of a pair: the law of the module docstring, with vr = v_b - v_a at the point and
    law = (k, c, e, mu, v_s). The generated force element and the broad phase's per-pair-type
    functions (generator/mechanics/broad_phase.py) both take it from here."""
    k, c, e, mu, vs = law
    vn = ctx.let(f"vn{j}", dot(n, vr))
    delta = ctx.let(f"pen{j}", smax(0, -d))
    Fn = ctx.let(f"Fn{j}", smax(0, k * delta ** e * (1 - sp.Rational(3, 2) * c * vn)))
    vt = ctx.let_vector(f"vt{j}", sub(vr, scale(vn, n)))
    ft = ctx.let(f"ft{j}", -mu * Fn / sp.sqrt(dot(vt, vt) + vs ** 2))
    F = ctx.let_vector(f"F{j}", add(scale(Fn, n), scale(ft, vt)))
    return vn, delta, Fn, F
