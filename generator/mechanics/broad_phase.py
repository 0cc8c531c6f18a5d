"""Contact with a broad phase (docs/contact.md, "Broad phase"): the pairs leave the generated equations.

In this mode no pair's narrow phase is generated into the equations or the outputs kernel. The
module gets instead

- the kernel `contact_poses` (t, q, q', p) -> per body that carries a shape of a pair, 18 numbers:
  R_0i (ground -> body, row-major), r_0i, and its linear and angular velocity in ground axes;
- one kernel per pair *type* (plane-sphere, box-box, ...), (s) -> o, lowered from the same sympy
  narrow phase and law as the generated force element (generator/mechanics/contact.py
  `contact_points` and `point_law`), with the shapes' sizes, poses and the law's parameters as
  arguments: the build costs per pair type, not per pair;
- two constant tables, `dyn_cb_shape` (per shape: its body's slot, type, frame, sizes, bounding
  radius) and `dyn_cb_pair` (per pair: its shapes, type, law, where its outputs go);
- the fixed C routine `dyn_broad_phase` (templates/native/dynamica_broad.h) that tests each pair's
  bounding spheres (all pairs, O(n^2): a few ns per pair), runs the narrow phase of the pairs that
  pass, and sums each body's wrench into the slots `contact.wrench` of p (6 per body: force and
  torque at O_i, body axes), then the pairs' elastic energy and its rate (2); the equations add
  the wrenches to the applied body forces, F_i += W_i, and the energy outputs read the last two.

Per pair type the arguments s are (SIZE_IN numbers)

    0..2 centre of a, 3..11 a's x, y, z axes (ground), 12..14 a's sizes, 15..29 the same of b,
    30..32 r_0 of a's body, 33..35 its velocity, 36..38 its angular velocity (ground axes),
    39..47 the same of b's body, 48..52 the law: k, c, e, mu, v_s

and the results o: 0..5 the force and the torque about r_0 on a's body, 6..11 on b's (ground axes),
then 12, 13 the elastic energy k delta^(e+1) / (e+1) summed over the points and its rate, then per
contact point j, 14 + 4 j ..: d, n . (v_b - v_a), delta, F_n.

Sizes per shape type: sphere (r, 0, 0), capsule and cylinder (r, length, 0), box (half sizes),
plane (0, 0, 0).
"""

from __future__ import annotations

import dataclasses
import math

import sympy as sp

from dynamica.generator.ir.program import Program, add, cross, matTvec, sub
from dynamica.generator.spec import expr as ex

#: `broad_phase: auto` takes the broad phase above this many pairs
AUTO_PAIRS = 64
#: the name of the p slots the routine writes (6 per body carrying a shape)
WRENCH = "contact.wrench"
#: shape type -> its number in the tables
TYPE_IDS = {"sphere": 0, "capsule": 1, "box": 2, "cylinder": 3, "plane": 4}
SIZE_IN = 53
SHAPE_ROW = 18
PAIR_ROW = 19
POSE = 18
#: the output quantities of a contact element, in the order of the pair table's offsets
QUANTITIES = ("force", "distance", "normal_velocity", "penetration", "normal_force")


def contact_pairs(spec) -> list:
    return [f for f in spec.forces if f.type == "contact"]


def kept(mode) -> tuple:
    """The mode of a module that keeps the pairs in its own equations though its model takes the broad
    phase (a derivatives module, or under `auto` the Fortran backend, ...: `takes`): its p keeps the
    wrench slots, so that every module of the model reads one parameter vector."""
    return ("kept", mode)


def _wanted(spec) -> bool:
    mode = getattr(spec, "broad_phase", "auto")
    if isinstance(mode, tuple):
        mode = mode[1]
    n = len(contact_pairs(spec))
    return n > 0 and (mode is True or (mode == "auto" and n > AUTO_PAIRS))


def used(spec) -> bool:
    """Whether the model's contacts run through the broad phase in this module."""
    return not isinstance(getattr(spec, "broad_phase", "auto"), tuple) and _wanted(spec)


def shape_bodies(spec) -> list:
    """The bodies (not the ground) that carry a shape of a pair, in the order of their slots."""
    out = []
    for f in contact_pairs(spec):
        for s in (f["a"], f["b"]):
            if s.body != "ground" and s.body not in out:
                out.append(s.body)
    return out


def wrench_parameters(spec) -> list:
    """[(name, size)] of the p slots the routine writes (lower.parameter_layout)."""
    return [(WRENCH, 6 * len(shape_bodies(spec)) + 2)] if _wanted(spec) else []


def add_wrenches(ctx, spec):
    """F_i += W_i for every body that carries a shape (forces.active_forces in this mode)."""
    for slot, body in enumerate(shape_bodies(spec)):
        i = ctx.kin.topo.index(body)
        ctx.F[i] = [a + ex.param_symbol(WRENCH, 6 * slot + j) for j, a in enumerate(ctx.F[i])]


def placeholder_values(f) -> dict:
    """The outputs of a contact element whose values the routine writes (zeros in the kernel)."""
    n = npoints(f["a"].kind, f["b"].kind)
    z = sp.Integer(0)
    return {"force": [z] * 3, **{q: [z] * n for q in QUANTITIES[1:]}}


@dataclasses.dataclass
class _Shape:
    """A shape of symbolic sizes, in the frame of a symbolic body (`_Ctx.frame_of`)."""
    name: str
    kind: str
    body: str
    radius: object = 0
    length: object = 0
    half: tuple = (0, 0, 0)
    at: tuple = (0.0, 0.0, 0.0)

    def axis(self, k):
        return tuple(1.0 if r == k else 0.0 for r in range(3))


class _Ctx:
    """What contact_points and point_law reach: a program and the shapes' symbolic frames."""

    def __init__(self, frames):
        self.program = Program()
        self.frames = frames
        self.tag = "cb"

    def let(self, what, value):
        return self.program.let(f"{self.tag}_{what}", value)

    def let_vector(self, what, values):
        return self.program.let_vector(f"{self.tag}_{what}", values)

    def frame_of(self, body):
        G, origin = self.frames[body]
        return G, None, origin


def _sizes(kind, s):
    if kind == "box":
        return {"half": tuple(s)}
    if kind in ("capsule", "cylinder"):
        return {"radius": s[0], "length": s[1]}
    if kind == "sphere":
        return {"radius": s[0]}
    return {}


_NPOINTS: dict = {}


def pair_type_kernel(ka, kb):
    """(KernelSpec of the pair type (ka, kb): (s) -> o, its number of contact points)."""
    from dynamica.generator.forms import KernelSpec
    from dynamica.generator.mechanics.contact import contact_points, point_law
    s = tuple(sp.Symbol(f"cbin{k}", real=True) for k in range(SIZE_IN))
    frames = {"A": (sp.Matrix(3, 3, s[3:12]), list(s[0:3])), "B": (sp.Matrix(3, 3, s[18:27]), list(s[15:18]))}
    ctx = _Ctx(frames)
    a = _Shape("a", ka, "A", **_sizes(ka, s[12:15]))
    b = _Shape("b", kb, "B", **_sizes(kb, s[27:30]))
    r0a, va, wa = list(s[30:33]), list(s[33:36]), list(s[36:39])
    r0b, vb, wb = list(s[39:42]), list(s[42:45]), list(s[45:48])
    law = s[48:53]
    zero = [sp.Integer(0)] * 3
    Fa, Ta, Fb, Tb = list(zero), list(zero), list(zero), list(zero)
    per_point = []
    V = Vd = sp.Integer(0)
    for j, (x, n, d) in enumerate(contact_points(ctx, a, b)):
        x = ctx.let_vector(f"x{j}", x)
        ra, rb = ctx.let_vector(f"ra{j}", sub(x, r0a)), ctx.let_vector(f"rb{j}", sub(x, r0b))
        vr = ctx.let_vector(f"vr{j}", sub(add(vb, cross(wb, rb)), add(va, cross(wa, ra))))
        vn, delta, Fn, F = point_law(ctx, j, n, d, vr, law)
        Fb, Tb = add(Fb, F), add(Tb, cross(rb, F))
        Fa, Ta = sub(Fa, F), sub(Ta, cross(ra, F))
        per_point += [d, vn, delta, Fn]
        V += law[0] * delta ** (law[2] + 1) / (law[2] + 1)          # the elastic part (forces._contact_potential)
        Vd -= law[0] * delta ** law[2] * vn
    _NPOINTS[(ka, kb)] = len(per_point) // 4
    ks = KernelSpec(f"cb_{ka}_{kb}", ("s",), (("o", Fa + Ta + Fb + Tb + [V, Vd] + per_point),), symbols=(("s", s),),
                    program=ctx.program)
    return ks, len(per_point) // 4


#: contact points per pair type (contact.py's table; checked against the narrow phase when it is built)
POINTS = {("plane", "sphere"): 1, ("plane", "capsule"): 2, ("plane", "box"): 8, ("plane", "cylinder"): 6,
          ("sphere", "sphere"): 1, ("sphere", "capsule"): 1, ("capsule", "capsule"): 1, ("box", "sphere"): 1,
          ("box", "capsule"): 11, ("box", "box"): 17, ("sphere", "cylinder"): 1, ("capsule", "cylinder"): 3}


def npoints(ka, kb) -> int:
    return POINTS[(ka, kb)]


def _parameter_slots(spec) -> dict:
    """parameter symbol -> its slot in p (lower.parameter_layout's order)."""
    out, k = {}, 0
    for p in spec.parameters:
        if isinstance(p.value, tuple):
            for j in range(len(p.value)):
                out[ex.param_symbol(p.name, j)] = k
                k += 1
        else:
            out[ex.param_symbol(p.name)] = k
            k += 1
    return out


def _law(spec, f, slots):
    """(the five law fields of a pair: numbers, their slots in p (-1: the number)), or (None, the
    first field that is neither a number nor a parameter)."""
    values, where = [], []
    scope = spec.scope(coordinates_allowed=False)
    for key in ("stiffness", "damping", "exponent", "friction", "stiction_velocity"):
        e = ex.parse(f[key], scope)
        if e in slots:
            values.append(0.0), where.append(float(slots[e]))
        elif e.free_symbols:
            return None, key
        else:
            values.append(float(e)), where.append(-1.0)
    return values + where, None


def takes(form, backend, mode, spec) -> bool:
    """Whether a main module takes the broad phase (otherwise `auto` keeps its pairs in the equations,
    and `broad_phase: true` is refused): the C backend's Lagrangian modules in symbolic mode. The
    modules of other kinds (derivatives, inverse dynamics) always keep them."""
    from dynamica.generator.forms import FORM_INFO
    info = FORM_INFO.get(form)
    hamiltonian = info is not None and any("hamilton" in a.lower() for a in (form, *info.acronyms))
    return backend == "c" and mode == "symbolic" and not spec.loops and not hamiltonian


def refuse(spec, what):
    """The one error of a module that cannot take the broad phase."""
    from dynamica.errors import ModelError, Problem
    raise ModelError(spec.file, [Problem("contact.broad_phase", (
        f"the broad phase ({len(contact_pairs(spec))} contact pairs) runs in the C backend's Lagrangian "
        f"modules of symbolic mode only, not with {what}; set `contact: {{broad_phase: false}}` to generate "
        "the pairs into the equations"))])


def _not_taken(eom, backend):
    """What of the module the broad phase does not take (refused by name), or None."""
    if backend != "c":
        return f"the {backend} backend"
    if eom.kind != "lagrangian":
        return f"a {eom.kind} module"
    if eom.mode != "symbolic":
        return f"{eom.mode} mode"
    if eom.constrained:
        return "closed loops"
    return None


def _poses_kernel(spec, topo, bodies):
    """`contact_poses`: per body that carries a shape R_0i (row-major), r_0i, and its linear and
    angular velocity in ground axes."""
    from dynamica.generator.forms import KernelSpec
    from dynamica.generator.forms.parts.common import forward_pass
    from dynamica.generator.mechanics.kinematics import derive_kinematics
    kin = derive_kinematics(spec, topo)
    fp = forward_pass(kin)
    poses = []
    for body in bodies:
        i = topo.index(body)
        R = fp.R0[i]
        poses += [R[r, c] for r in range(3) for c in range(3)] + list(fp.r0[i])
        poses += matTvec(R, fp.v[i][:3]) + matTvec(R, fp.v[i][3:])
    return KernelSpec("contact_poses", ("t", "q", "qd", "p"), (("poses", poses),), program=kin.program)


def attach_broad_phase(eom, spec, topo, backend):
    """The equations with the broad phase's kernels, tables and routine (see the module docstring)."""
    from dynamica.errors import ModelError, Problem
    what = _not_taken(eom, backend)
    if what is not None:
        refuse(spec, what)
    bodies = shape_bodies(spec)
    slot = {b: k for k, b in enumerate(bodies)}
    kernels = [_poses_kernel(spec, topo, bodies)]
    types = []
    shapes, shape_index, pair_rows = [], {}, []
    slots = _parameter_slots(spec)
    offsets, at = {}, 0
    for key, shape in dict(eom.info).get("output_layout", ()):
        offsets[key] = at
        at += math.prod(shape)
    for f in contact_pairs(spec):
        a, b = f["a"], f["b"]
        if (a.kind, b.kind) not in types:
            types.append((a.kind, b.kind))
        for s in (a, b):
            if s.name not in shape_index:
                shape_index[s.name] = len(shapes) // SHAPE_ROW
                size = (s.half if s.kind == "box" else (s.radius, s.length, 0.0) if s.kind != "plane" else (0, 0, 0))
                radius = -1.0 if s.kind == "plane" else s.bounding_radius
                shapes += [float(slot.get(s.body, -1)), float(TYPE_IDS[s.kind]), *map(float, s.at),
                           *map(float, s.axes), *map(float, size), float(radius)]
        law, bad = _law(spec, f, slots)
        if law is None:
            raise ModelError(spec.file, [Problem(f"forces ({f['name']})", (
                f"the broad phase takes the law's `{bad}` as a number or one parameter, not `{f[bad]}`: set "
                "`contact: {broad_phase: false}` to generate the pairs into the equations"))])
        outs = [float(offsets.get(f"{f['name']}.{q}", -1)) for q in QUANTITIES]
        pair_rows += [float(shape_index[a.name]), float(shape_index[b.name]), float(types.index((a.kind, b.kind))),
                      *law[:5], *outs, float(npoints(a.kind, b.kind)), *law[5:]]
    for ka, kb in types:
        ks, n = pair_type_kernel(ka, kb)
        if n != npoints(ka, kb):
            raise AssertionError(f"internal error: the pair type {ka}-{kb} has {n} points, not {npoints(ka, kb)}")
        kernels.append(ks)
    info = {"bodies": len(bodies), "pairs": len(contact_pairs(spec)), "shapes": len(shape_index),
            "types": [f"{a}_{b}" for a, b in types],
            "wrench": _wrench_offset(spec), "outputs": at}
    tables = (("dyn_cb_shape", tuple(shapes)), ("dyn_cb_pair", tuple(pair_rows)))
    return dataclasses.replace(eom, extra_kernels=tuple(eom.extra_kernels) + tuple(kernels),
                               tables=tuple(eom.tables) + tables, info={**eom.info, "broad_phase": info})


def _wrench_offset(spec) -> int:
    """The first slot of `contact.wrench` in p (lower.parameter_layout: parameters, references, then it)."""
    from dynamica.generator.mechanics.constraints import reference_parameters
    k = sum(len(p.value) if isinstance(p.value, tuple) else 1 for p in spec.parameters)
    return k + sum(n for _, n in reference_parameters(spec))


def potential(ctx, f):
    """A contact element's (V, dV/dt) in this mode: the routine's sums over every pair, given as the
    first pair's (the others 0)."""
    first = contact_pairs(ctx.kin.spec)[0]
    n = 6 * len(shape_bodies(ctx.kin.spec))
    if f is not first:
        return sp.Integer(0), sp.Integer(0)
    return ex.param_symbol(WRENCH, n), ex.param_symbol(WRENCH, n + 1)
