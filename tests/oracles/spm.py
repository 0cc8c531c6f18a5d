"""Independent test oracle: generalized accelerations via ``sympy.physics.mechanics``.

TEST-ONLY code.  It reads a model dict (``yaml.safe_load`` of a model file written to
docs/model_format.md) and builds the equations of motion with ``KanesMethod``,
sharing no code with ``dynamica``.  Intended for SMALL models (a handful of coordinates):
the symbolic derivation is done naively and may be slow for large trees.

    f = kane_qdd_function(model_dict)
    f.coordinates            # tuple of coordinate names, the oracle's order
    f.parameters             # dict name -> default (float, or tuple for vectors)
    qdd = f(q, qd, t, params)   # params: None or {name: value} overriding defaults

Conventions implemented (see docs/model_format.md):
  * ``rotate: AXIS`` by angle a: the new frame is the current frame turned by +a about the
    (normalised) axis, right-hand rule  ->  ``B.orient_axis(A, axis_in_A, a)``.
  * ``translate: AXIS`` with ``q``/``by``: the origin moves by s * unit(axis) in the current
    frame; ``translate: [x, y, z]`` without ``q``/``by``: constant offset in the current frame.
  * generalized speeds u_i = der(q_i), so Kane's generalized forces are Lagrange's Q_i and
    ``joint_spring_damper``/``generalized_force`` are added directly to the forcing row.
  * inertia [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] = ``mechanics.inertia(B, Ixx, Iyy, Izz, Ixy, Iyz, Ixz)``
    about the centre of mass.
"""

from __future__ import annotations

import ast
import re

import numpy as np
import sympy as sp
from sympy.parsing.sympy_parser import parse_expr, standard_transformations
from sympy.physics import mechanics as me

__all__ = ["kane_qdd_function", "build_kane", "OracleModelError"]

T = me.dynamicsymbols._t

_FUNCS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "asin": sp.asin, "acos": sp.acos,
    "atan": sp.atan, "atan2": sp.atan2, "sinh": sp.sinh, "cosh": sp.cosh, "tanh": sp.tanh,
    "exp": sp.exp, "log": sp.log, "sqrt": sp.sqrt, "abs": sp.Abs, "sign": sp.sign,
    "min": sp.Min, "max": sp.Max, "heaviside": sp.Heaviside,
}

_AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1)}

_TOP_KEYS = {"name", "description", "parameters", "gravity", "bodies", "initial", "forces",
             "outputs", "simulate"}
_BODY_KEYS = {"name", "parent", "joint", "mass", "com", "inertia", "description"}
_INERTIA_KEYS = ["Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz"]


class OracleModelError(ValueError):
    pass


# --------------------------------------------------------------------------- expressions

class _Env:
    """Names an expression may use, mapped to sympy objects."""

    def __init__(self):
        self.scalars = {}      # param name -> Symbol
        self.vectors = {}      # param name -> [Symbol, ...]
        self.coords = {}       # coord name -> dynamicsymbol
        self.defaults = {}     # param name -> float | tuple

    def _local_dict(self, allow_coords):
        d = {"t": T, "pi": sp.pi}
        d.update(_FUNCS)
        d.update(self.scalars)
        for name, syms in self.vectors.items():
            for i, s in enumerate(syms):
                d[f"{name}__{i}"] = s
        if allow_coords:
            d.update(self.coords)
            d["der"] = lambda x: sp.diff(x, T)
        return d

    def expr(self, value, where, allow_coords=False, extra=None):
        """Parse one scalar expression (number or string); `extra`: more local names."""
        if isinstance(value, bool):
            raise OracleModelError(f"{where}: boolean is not an expression")
        if isinstance(value, (int, float)):
            return sp.Float(value) if isinstance(value, float) else sp.Integer(value)
        if not isinstance(value, str):
            raise OracleModelError(f"{where}: expected an expression, got {value!r}")
        s = value

        def repl(m):
            name, idx = m.group(1), int(m.group(2))
            if name not in self.vectors:
                raise OracleModelError(f"{where}: {name!r} is not a vector parameter in {value!r}")
            if idx >= len(self.vectors[name]):
                raise OracleModelError(f"{where}: index out of range in {value!r}")
            return f"{name}__{idx}"

        s = re.sub(r"\b([A-Za-z_]\w*)\s*\[\s*(\d+)\s*\]", repl, s)
        local = self._local_dict(allow_coords)
        local.update(extra or {})
        # validate with the Python AST: only the documented grammar
        try:
            tree = ast.parse(s, mode="eval")
        except SyntaxError as exc:
            raise OracleModelError(f"{where}: cannot parse {value!r}: {exc}") from None
        ok_nodes = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.Call, ast.Name, ast.Load,
                    ast.Constant, ast.Add, ast.Sub, ast.Mult, ast.Div, ast.Pow, ast.USub,
                    ast.UAdd)
        for node in ast.walk(tree):
            if not isinstance(node, ok_nodes):
                raise OracleModelError(f"{where}: {type(node).__name__} not allowed in {value!r}")
            if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float)):
                raise OracleModelError(f"{where}: constant {node.value!r} in {value!r}")
            if isinstance(node, ast.Name) and node.id not in local:
                raise OracleModelError(f"{where}: unknown name {node.id!r} in {value!r}")
            if isinstance(node, ast.Call):
                if not isinstance(node.func, ast.Name) or not (
                        node.func.id in _FUNCS or (allow_coords and node.func.id == "der")):
                    raise OracleModelError(f"{where}: call not allowed in {value!r}")
                if node.func.id == "der" and not (
                        len(node.args) == 1 and isinstance(node.args[0], ast.Name)
                        and node.args[0].id in self.coords):
                    raise OracleModelError(f"{where}: der() needs a coordinate in {value!r}")
        gd = {}
        exec("from sympy import Integer, Float, Rational, Symbol, Function", gd)
        return sp.sympify(parse_expr(s, local_dict=local, global_dict=gd,
                                     transformations=standard_transformations))

    def vec3(self, value, where, allow_coords=False):
        """A 3-vector: list of 3 expressions or the name of a vector parameter of length 3."""
        return self.vecn(value, where, (3,), allow_coords)

    def vecn(self, value, where, lengths, allow_coords=False):
        if isinstance(value, str) and value.strip() in self.vectors:
            syms = self.vectors[value.strip()]
            if len(syms) not in lengths:
                raise OracleModelError(f"{where}: vector parameter {value!r} has length {len(syms)}")
            return list(syms)
        if not isinstance(value, (list, tuple)) or len(value) not in lengths:
            raise OracleModelError(f"{where}: expected a vector of length {lengths}, got {value!r}")
        return [self.expr(v, f"{where}[{i}]", allow_coords) for i, v in enumerate(value)]


def _parameters(model, env):
    params = model.get("parameters") or {}
    for name, spec in params.items():
        val = spec["value"] if isinstance(spec, dict) else spec
        if isinstance(spec, dict):
            extra = set(spec) - {"value", "unit", "description"}
            if extra:
                raise OracleModelError(f"parameters.{name}: unknown keys {sorted(extra)}")
        if isinstance(val, (list, tuple)):
            env.vectors[name] = [sp.Symbol(f"_p_{name}_{i}", real=True) for i in range(len(val))]
            env.defaults[name] = tuple(float(v) for v in val)
        else:
            env.scalars[name] = sp.Symbol(f"_p_{name}", real=True)
            env.defaults[name] = float(val)


# --------------------------------------------------------------------------- joints

def _axis(env, value, where):
    if isinstance(value, str):
        s = value.strip()
        sign = 1
        if s.startswith("-"):
            sign, s = -1, s[1:].strip()
        elif s.startswith("+"):
            s = s[1:].strip()
        if s not in _AXES:
            raise OracleModelError(f"{where}: bad axis {value!r}")
        return [sign * sp.Integer(c) for c in _AXES[s]]
    v = env.vec3(value, where)
    n = sp.sqrt(sum(c**2 for c in v))
    if n == 0:
        raise OracleModelError(f"{where}: zero axis")
    return [c / n for c in v]


def _expand_joint(joint, where):
    """Return a list of elementary transforms (dicts)."""
    if joint is None:
        return []
    if isinstance(joint, dict):
        joint = [joint]
    out = []
    for k, tr in enumerate(joint):
        w = f"{where}[{k}]"
        if "type" not in tr:
            out.append((tr, w))
            continue
        typ = tr["type"]
        allowed = {"type", "offset", "q", "by", "axis", "axes"}
        extra = set(tr) - allowed
        if extra:
            raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
        if "offset" in tr:
            out.append(({"translate": tr["offset"]}, f"{w}.offset"))

        def motion(kind, axis, key, val):
            return {kind: axis, key: val}

        if typ in ("revolute", "prismatic"):
            kind = "rotate" if typ == "revolute" else "translate"
            if "axis" not in tr:
                raise OracleModelError(f"{w}: {typ} needs 'axis'")
            key = "q" if "q" in tr else "by"
            out.append((motion(kind, tr["axis"], key, tr[key]), w))
        elif typ in ("universal", "spherical", "free"):
            qs = tr.get("q")
            if typ == "universal":
                if "axes" not in tr:
                    raise OracleModelError(f"{w}: universal without 'axes' (default undocumented)")
                kinds = ["rotate", "rotate"]
                axes = list(tr["axes"])
            elif typ == "spherical":
                kinds, axes = ["rotate"] * 3, ["x", "y", "z"]
            else:
                kinds, axes = ["translate"] * 3 + ["rotate"] * 3, ["x", "y", "z"] * 2
            if not isinstance(qs, (list, tuple)) or len(qs) != len(kinds):
                raise OracleModelError(f"{w}: {typ} needs q: list of {len(kinds)} names")
            for kd, ax, qn in zip(kinds, axes, qs):
                out.append((motion(kd, ax, "q", qn), w))
        else:
            raise OracleModelError(f"{w}: unknown joint type {typ!r}")
    return out


# --------------------------------------------------------------------------- model

def _topo_bodies(bodies):
    names = [b["name"] for b in bodies]
    if len(set(names)) != len(names) or "ground" in names:
        raise OracleModelError("bodies: duplicate or reserved name")
    placed, order = {"ground"}, []
    remaining = list(bodies)
    while remaining:
        nxt = [b for b in remaining if b["parent"] in placed]
        if not nxt:
            raise OracleModelError("bodies: unknown parent or loop")
        for b in nxt:
            order.append(b)
            placed.add(b["name"])
        remaining = [b for b in remaining if b["name"] not in placed]
    return order


def _inertia_components(env, value, where):
    if isinstance(value, dict):
        extra = set(value) - set(_INERTIA_KEYS)
        if extra:
            raise OracleModelError(f"{where}: unknown keys {sorted(extra)}")
        return [env.expr(value.get(k, 0), f"{where}.{k}") for k in _INERTIA_KEYS]
    comps = env.vecn(value, where, (3, 6))
    if len(comps) == 3:
        comps = comps + [0, 0, 0]
    return comps


def build_kane(model):
    """Derive the equations symbolically.  Returns a dict with the pieces."""
    extra = set(model) - _TOP_KEYS
    if extra:
        raise OracleModelError(f"unsupported top-level keys {sorted(extra)}")
    env = _Env()
    _parameters(model, env)

    N = me.ReferenceFrame("N")
    O = me.Point("O")
    O.set_vel(N, 0)

    bodies = _topo_bodies(model["bodies"])
    # first pass: collect the coordinates (so forces may reference any of them)
    coord_names = []
    expanded = {}
    for b in bodies:
        bi = model["bodies"].index(b)
        extra = set(b) - _BODY_KEYS
        if extra:
            raise OracleModelError(f"bodies[{bi}]: unknown keys {sorted(extra)}")
        trs = _expand_joint(b.get("joint"), f"bodies[{bi}].joint")
        expanded[b["name"]] = trs
        for tr, w in trs:
            if "q" in tr:
                qn = tr["q"]
                if qn in coord_names:
                    raise OracleModelError(f"{w}: coordinate {qn!r} is not unique")
                coord_names.append(qn)
    qs = [me.dynamicsymbols(f"q_{n}") for n in coord_names]
    us = [me.dynamicsymbols(f"u_{n}") for n in coord_names]
    env.coords = dict(zip(coord_names, qs))
    qmap = env.coords

    frames = {"ground": N}
    origins = {"ground": O}
    rbodies = []
    rbody_of = {}
    for b in bodies:
        bi = model["bodies"].index(b)
        F = frames[b["parent"]]
        P = origins[b["parent"]]
        vP = P.vel(N)
        for k, (tr, w) in enumerate(expanded[b["name"]]):
            keys = set(tr)
            kinds = keys & {"rotate", "translate"}
            if len(kinds) != 1 or keys - {"rotate", "translate", "q", "by"}:
                raise OracleModelError(f"{w}: bad transform {tr!r}")
            kind = kinds.pop()
            has_q, has_by = "q" in tr, "by" in tr
            if has_q and has_by:
                raise OracleModelError(f"{w}: both q and by")
            tag = f"{b['name']}_{k}"
            if kind == "translate" and not has_q and not has_by:
                off = env.vec3(tr["translate"], w)
                r = off[0] * F.x + off[1] * F.y + off[2] * F.z
                P2 = P.locatenew(f"P_{tag}", r)
                vP = vP + r.dt(N)
                P2.set_vel(N, vP)
                P = P2
                continue
            if not (has_q or has_by):
                raise OracleModelError(f"{w}: needs q or by")
            amount = qmap[tr["q"]] if has_q else env.expr(tr["by"], f"{w}.by")
            ax = _axis(env, tr[kind], f"{w}.{kind}")
            axv = ax[0] * F.x + ax[1] * F.y + ax[2] * F.z
            if kind == "rotate":
                F2 = me.ReferenceFrame(f"F_{tag}")
                F2.orient_axis(F, axv, amount)
                F = F2
            else:
                r = amount * axv
                P2 = P.locatenew(f"P_{tag}", r)
                vP = vP + r.dt(N)
                P2.set_vel(N, vP)
                P = P2
        # the body frame/origin: fresh objects at the end of the chain
        B = me.ReferenceFrame(f"B_{b['name']}")
        B.orient_axis(F, F.z, 0)
        Ob = P.locatenew(f"O_{b['name']}", 0 * N.x)
        Ob.set_vel(N, vP)
        frames[b["name"]] = B
        origins[b["name"]] = Ob

        w = f"bodies[{bi}]"
        mass = env.expr(b.get("mass", 0), f"{w}.mass")
        com = env.vec3(b.get("com", [0, 0, 0]), f"{w}.com")
        rc = com[0] * B.x + com[1] * B.y + com[2] * B.z
        G = Ob.locatenew(f"G_{b['name']}", rc)
        G.v2pt_theory(Ob, N, B)
        I = _inertia_components(env, b.get("inertia", [0, 0, 0]), f"{w}.inertia")
        Idy = me.inertia(B, *I)
        rb = me.RigidBody(f"RB_{b['name']}", G, B, mass, (Idy, G))
        rbodies.append(rb)
        rbody_of[b["name"]] = rb

    # ------------------------------------------------------------------ loads
    loads = []
    gvec = env.vec3(model.get("gravity", [0, 0, 0]), "gravity")
    g = gvec[0] * N.x + gvec[1] * N.y + gvec[2] * N.z
    for rb in rbodies:
        loads.append((rb.masscenter, rb.mass * g))

    gen = [sp.Integer(0)] * len(qs)
    pts = [0]

    def body_point(body, coords, where):
        c = env.vec3(coords, where, allow_coords=False)
        Fb, Ob = frames[body], origins[body]
        pts[0] += 1
        Pt = Ob.locatenew(f"Q{pts[0]}", c[0] * Fb.x + c[1] * Fb.y + c[2] * Fb.z)
        Pt.v2pt_theory(Ob, N, Fb)
        return Pt

    def check_body(name, where):
        if name not in frames:
            raise OracleModelError(f"{where}: unknown body {name!r}")

    for fi, fd in enumerate(model.get("forces") or []):
        w = f"forces[{fi}]"
        typ = fd.get("type")
        if typ == "joint_spring_damper":
            extra = set(fd) - {"type", "coordinate", "stiffness", "damping", "neutral"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            i = coord_names.index(fd["coordinate"])
            k = env.expr(fd.get("stiffness", 0), f"{w}.stiffness", True)
            d = env.expr(fd.get("damping", 0), f"{w}.damping", True)
            q0 = env.expr(fd.get("neutral", 0), f"{w}.neutral", True)
            gen[i] += -k * (qs[i] - q0) - d * qs[i].diff(T)
        elif typ == "generalized_force":
            extra = set(fd) - {"type", "coordinate", "value"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            i = coord_names.index(fd["coordinate"])
            gen[i] += env.expr(fd["value"], f"{w}.value", True)
        elif typ == "body_force":
            extra = set(fd) - {"type", "body", "point", "force", "torque", "frame"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            body = fd["body"]
            check_body(body, f"{w}.body")
            if body == "ground":
                continue
            fr = fd.get("frame", "ground")
            if fr not in ("ground", "body"):
                raise OracleModelError(f"{w}.frame: {fr!r}")
            E = N if fr == "ground" else frames[body]
            if "point" in fd:
                Pt = body_point(body, fd["point"], f"{w}.point")
            else:
                Pt = rbody_of[body].masscenter
            f = env.vec3(fd.get("force", [0, 0, 0]), f"{w}.force", True)
            tq = env.vec3(fd.get("torque", [0, 0, 0]), f"{w}.torque", True)
            loads.append((Pt, f[0] * E.x + f[1] * E.y + f[2] * E.z))
            loads.append((frames[body], tq[0] * E.x + tq[1] * E.y + tq[2] * E.z))
        elif typ == "limit":
            extra = set(fd) - {"type", "coordinate", "lower", "upper", "stiffness", "damping", "decay", "name"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            i = coord_names.index(fd["coordinate"])
            k = env.expr(fd["stiffness"], f"{w}.stiffness", True)
            mu = env.expr(fd.get("damping", 0), f"{w}.damping", True)
            a = env.expr(fd["decay"], f"{w}.decay", True)
            x, xd = qs[i], qs[i].diff(T)
            if "lower" in fd:
                gen[i] += (k - mu * xd) * sp.exp(-a * (x - env.expr(fd["lower"], f"{w}.lower", True)))
            if "upper" in fd:
                gen[i] += -(k + mu * xd) * sp.exp(a * (x - env.expr(fd["upper"], f"{w}.upper", True)))
        elif typ == "bushing":
            extra = set(fd) - {"type", "body_a", "point_a", "body_b", "point_b", "stiffness", "damping",
                               "rotational_stiffness", "rotational_damping", "name"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            A, B = frames[fd["body_a"]], frames[fd["body_b"]]
            Pa = body_point(fd["body_a"], fd.get("point_a", [0, 0, 0]), f"{w}.point_a")
            Pb = body_point(fd["body_b"], fd.get("point_b", [0, 0, 0]), f"{w}.point_b")
            vec = lambda key: env.vec3(fd.get(key, [0, 0, 0]), f"{w}.{key}", True)  # noqa: E731
            K, C, Kr, Cr = vec("stiffness"), vec("damping"), vec("rotational_stiffness"), vec("rotational_damping")
            r = Pb.pos_from(Pa)
            ax = [A.x, A.y, A.z]
            d = [r.dot(e) for e in ax]                        # components along A's axes
            dd = [sp.diff(c, T) for c in d]                   # their time derivatives
            R = A.dcm(B)
            th = [(R[2, 1] - R[1, 2]) / 2, (R[0, 2] - R[2, 0]) / 2, (R[1, 0] - R[0, 1]) / 2]
            wrel = B.ang_vel_in(A)
            om = [wrel.dot(e) for e in ax]
            Fv = sum((-(K[j] * d[j] + C[j] * dd[j]) * ax[j] for j in range(3)), 0 * N.x)
            Tv = sum((-(Kr[j] * th[j] + Cr[j] * om[j]) * ax[j] for j in range(3)), 0 * N.x)
            pts[0] += 1
            Pa2 = Pa.locatenew(f"Q{pts[0]}", r)               # the point of A under Pb
            Pa2.v2pt_theory(Pa, N, A)
            loads += [(Pb, Fv), (Pa2, -Fv)]
            if fd["body_b"] != "ground":
                loads.append((B, Tv))
            if fd["body_a"] != "ground":
                loads.append((A, -Tv))
        elif typ == "spring_damper" and "law" in fd:
            extra = set(fd) - {"type", "body_a", "point_a", "body_b", "point_b", "law", "free_length", "name"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            Pa = body_point(fd["body_a"], fd.get("point_a", [0, 0, 0]), f"{w}.point_a")
            Pb = body_point(fd["body_b"], fd.get("point_b", [0, 0, 0]), f"{w}.point_b")
            L0 = env.expr(fd["free_length"], f"{w}.free_length", True)
            r = Pb.pos_from(Pa).express(N)
            L = sp.sqrt(r.dot(r))
            x_, v_ = sp.Symbol("x_"), sp.Symbol("v_")
            law = env.expr(fd["law"], f"{w}.law", True, extra={"elongation": x_, "elongation_rate": v_})
            tension = law.subs({x_: L - L0, v_: sp.diff(L, T)})
            loads.append((Pb, -tension * r / L))
            loads.append((Pa, tension * r / L))
        elif typ == "spring_damper":
            extra = set(fd) - {"type", "body_a", "point_a", "body_b", "point_b", "stiffness",
                               "damping", "free_length"}
            if extra:
                raise OracleModelError(f"{w}: unknown keys {sorted(extra)}")
            check_body(fd["body_a"], f"{w}.body_a")
            check_body(fd["body_b"], f"{w}.body_b")
            Pa = body_point(fd["body_a"], fd.get("point_a", [0, 0, 0]), f"{w}.point_a")
            Pb = body_point(fd["body_b"], fd.get("point_b", [0, 0, 0]), f"{w}.point_b")
            k = env.expr(fd["stiffness"], f"{w}.stiffness", True)
            d = env.expr(fd.get("damping", 0), f"{w}.damping", True)
            L0 = env.expr(fd["free_length"], f"{w}.free_length", True)
            r = Pb.pos_from(Pa).express(N)
            L = sp.sqrt(r.dot(r))
            Ldot = r.dot(Pb.vel(N) - Pa.vel(N)) / L
            tension = k * (L - L0) + d * Ldot
            e = r / L
            loads.append((Pb, -tension * e))
            loads.append((Pa, tension * e))
        else:
            raise OracleModelError(f"{w}: unknown force type {typ!r}")

    # ------------------------------------------------------------------ Kane
    kd = [qi.diff(T) - ui for qi, ui in zip(qs, us)]
    km = me.KanesMethod(N, q_ind=qs, u_ind=us, kd_eqs=kd)
    if not loads:
        loads = [(O, 0 * N.x)]
    km.kanes_equations(rbodies, loads)
    qd_to_u = {qi.diff(T): ui for qi, ui in zip(qs, us)}
    MM = km.mass_matrix
    forcing = km.forcing + sp.Matrix([me.msubs(gi, qd_to_u) for gi in gen])
    forcing = me.msubs(forcing, qd_to_u)
    return dict(env=env, coordinates=tuple(coord_names), q=qs, u=us, mass_matrix=MM,
                forcing=forcing, kane=km, frames=frames, origins=origins,
                bodies=rbodies, gravity=g, N=N, O=O)


def kane_qdd_function(model):
    """Numeric function f(q, qd, t, params) -> qdd, q in ``f.coordinates`` order."""
    d = build_kane(model)
    env, qs, us = d["env"], d["q"], d["u"]
    n = len(qs)
    qsym = [sp.Symbol(f"_q{i}", real=True) for i in range(n)]
    usym = [sp.Symbol(f"_u{i}", real=True) for i in range(n)]
    tsym = sp.Symbol("_t", real=True)
    sub = dict(zip(us, usym))
    sub.update(zip(qs, qsym))
    MM = me.msubs(d["mass_matrix"], sub).xreplace({T: tsym})
    FF = me.msubs(d["forcing"], sub).xreplace({T: tsym})
    pnames, psyms = [], []
    for name in env.defaults:
        if name in env.scalars:
            pnames.append(name)
            psyms.append(env.scalars[name])
        else:
            pnames.append(name)
            psyms.extend(env.vectors[name])
    leftover = (MM.free_symbols | FF.free_symbols) - set(qsym) - set(usym) - {tsym} - set(psyms)
    if leftover or me.find_dynamicsymbols(MM) or me.find_dynamicsymbols(FF):
        raise OracleModelError(f"oracle: unresolved symbols {leftover}")
    args = [qsym, usym, tsym, psyms]
    mm_f = sp.lambdify(args, MM, modules="numpy", cse=True)
    ff_f = sp.lambdify(args, FF, modules="numpy", cse=True)
    defaults = dict(env.defaults)

    def pvec(params):
        vals = dict(defaults)
        if params:
            for k, v in params.items():
                if k not in vals:
                    raise KeyError(f"unknown parameter {k!r}")
                vals[k] = v
        out = []
        for name in pnames:
            v = vals[name]
            if name in env.vectors:
                v = list(np.asarray(v, dtype=float).ravel())
                if len(v) != len(env.vectors[name]):
                    raise ValueError(f"parameter {name!r}: wrong length")
                out.extend(v)
            else:
                out.append(float(v))
        return out

    def f(q, qd, t=0.0, params=None):
        q = [float(x) for x in np.asarray(q, dtype=float).ravel()]
        qd = [float(x) for x in np.asarray(qd, dtype=float).ravel()]
        if len(q) != n or len(qd) != n:
            raise ValueError(f"expected {n} coordinates")
        p = pvec(params)
        M = np.array(mm_f(q, qd, float(t), p), dtype=float).reshape(n, n)
        F = np.array(ff_f(q, qd, float(t), p), dtype=float).reshape(n)
        return np.linalg.solve(M, F)

    def mass_matrix(q, t=0.0, params=None):
        q = [float(x) for x in np.asarray(q, dtype=float).ravel()]
        return np.array(mm_f(q, [0.0] * n, float(t), pvec(params)), dtype=float).reshape(n, n)

    f.coordinates = d["coordinates"]
    f.parameters = defaults
    f.mass_matrix = mass_matrix
    f.symbolic = d
    return f
