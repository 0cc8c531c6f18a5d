"""Joint shorthands (a registry) and the loading of bodies and their joints.

A joint is a list of elementary transforms (`rotate`/`translate` by a coordinate `q:` or an
expression `by:`, or a constant offset) or a shorthand mapping with a `type` that expands into
them (`JOINT_TYPES`: adding a shorthand is one entry). `JointSections` is the part of the loader
(loader._Loader) that reads `bodies`, their joints and inertias.
"""

from __future__ import annotations

from dataclasses import replace

from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found
from dynamica.generator.spec.model import AXES, IDENT, INERTIA_KEYS, Body, Transform

#: joint shorthand -> (its keys besides type, offset, q and by; its motions: (transform, axis) in
#: order). Each motion takes one coordinate of `q:` or, for a driven joint, one expression of `by:`.
JOINT_TYPES = {
    "revolute": ({"axis"}, lambda j: [("rotate", j["axis"])]),
    "prismatic": ({"axis"}, lambda j: [("translate", j["axis"])]),
    "universal": ({"axes"}, lambda j: [("rotate", a) for a in _two_axes(j["axes"])]),
    "spherical": (set(), lambda j: [("rotate", a) for a in "xyz"]),
    "free": (set(), lambda j: [("translate", a) for a in "xyz"] + [("rotate", a) for a in "xyz"]),
    # the peer package's screw pair: translation s along the axis and rotation 2 pi s / pitch about it
    "helical": ({"axis", "pitch"}, lambda j: [("screw", j["axis"])]),
}


def scan_coordinates(bodies) -> list:
    """Names given to `q:` anywhere in the bodies' joints (before validation)."""
    out = []
    for b in bodies:
        j = b.get("joint") if isinstance(b, dict) else None
        items = [j] if isinstance(j, dict) else (j if isinstance(j, list) else [])
        for tr in items:
            q = tr.get("q") if isinstance(tr, dict) else None
            for name in (q if isinstance(q, list) else [q]):
                if isinstance(name, str):
                    out.append(name)
    return out


def _two_axes(axes):
    return axes if isinstance(axes, list) and len(axes) == 2 else [axes, axes]




class JointSections:
    """The loader's sections for bodies (mixed into loader._Loader, which has err, keys, ...)."""

    def bodies(self, lst) -> list:
        out = []
        if not isinstance(lst, list) or not lst:
            if lst is not None or "bodies" in self.data:
                self.err("bodies", f"expected a non-empty list of bodies, found {found(lst)}")
            return out
        seen_bodies, seen_coords = {}, {}
        # coordinate names first, so that misuse of one (in a mass, a `by`) is named as such
        self.pscope = self.pscope.child(coordinates=frozenset(scan_coordinates(lst)))
        for i, b in enumerate(lst):
            path = self.entry = f"bodies[{i}]"
            if not isinstance(b, dict):
                self.err(path, f"expected a mapping, found {found(b)}")
                continue
            # an intermediate frame (`mass: 0`) may omit com and inertia; any other body gives both
            mass = b.get("mass")
            massless = type(mass) in (int, float) and mass == 0
            self.keys(b, path, {"name", "parent", "joint", "mass", "com", "inertia", "visual"},
                      required=("name", "parent", "joint", "mass") + (() if massless else ("com", "inertia")))
            name = b.get("name")
            ok = self.ident(name, f"{path}.name", "a body name")
            if ok and name in seen_bodies:
                self.err(f"{path}.name", f"duplicate body name `{name}` (also bodies[{seen_bodies[name]}])")
            if ok:
                seen_bodies.setdefault(name, i)
            parent = b.get("parent")
            if not (parent == "ground" or (isinstance(parent, str) and IDENT.match(parent))):
                if "parent" in b:
                    self.err(f"{path}.parent", f"expected `ground` or a body name, found {found(parent)}")
                parent = None
            joint = self.joint(b.get("joint"), f"{path}.joint") if "joint" in b else ()
            for tr in joint:
                if tr.q is None:
                    continue
                if tr.q in seen_coords:
                    self.err(tr.path, f"coordinate `{tr.q}` is already defined at `{seen_coords[tr.q]}`")
                seen_coords.setdefault(tr.q, tr.path)
            sc = self.pscope.child(time_allowed=False)
            mass = self.expression(b.get("mass", 0), f"{path}.mass", sc) if "mass" in b else 0
            com = self.vector(b.get("com", [0, 0, 0]), f"{path}.com", sc) or (0, 0, 0)
            inertia = self.inertia(b.get("inertia", [0, 0, 0]), f"{path}.inertia", sc)
            visual = self.visuals(b.get("visual"), f"{path}.visual")
            out.append(Body(name=name if ok else None, parent=parent, joint=tuple(joint),
                            mass=mass if mass is not None else 0, com=com, inertia=inertia, path=path,
                            visual=visual))
        self.entry = "bodies"
        names = {b.name for b in out}
        for b in out:
            if b.parent is not None and b.parent != "ground" and b.parent not in names:
                self.err(f"{b.path}.parent", f"unknown parent body `{b.parent}`"
                                             f"{ex.did_you_mean(b.parent, names - {None} | {'ground'})}")
            if b.parent is not None and b.parent == b.name:
                self.err(f"{b.path}.parent", f"body `{b.name}` cannot be its own parent")
        return out

    def inertia(self, v, path, sc):
        if isinstance(v, dict):
            self.keys(v, path, set(INERTIA_KEYS))
            vals = [self.expression(v.get(k, 0), f"{path}.{k}", sc) for k in INERTIA_KEYS]
            return tuple(x if x is not None else 0 for x in vals)
        if isinstance(v, str) and v in sc.vectors:
            n = sc.vectors[v]
            if n not in (3, 6):
                self.err(path, f"vector parameter `{v}` has length {n}, expected 6 or 3")
                return (0,) * 6
            elems = tuple(f"{v}[{k}]" for k in range(n))
            return elems + (0, 0, 0) if n == 3 else elems
        if isinstance(v, (list, tuple)) and len(v) in (3, 6):
            vals = [self.expression(x, f"{path}[{k}]", sc) for k, x in enumerate(v)]
            vals = tuple(x if x is not None else 0 for x in vals)
            return vals + (0, 0, 0) if len(v) == 3 else vals
        self.err(path, f"expected [Ixx, Iyy, Izz, Ixy, Iyz, Ixz], [Ixx, Iyy, Izz], a mapping with "
                       f"those keys or a vector parameter of length 6 or 3, found {found(v)}")
        return (0,) * 6

    def axis(self, v, path):
        if isinstance(v, str) and v in AXES:
            return AXES[v]
        if isinstance(v, str) and v not in self.pscope.vectors:
            self.err(path, f"expected an axis x, y, z, -x, -y, -z or a 3-vector, found {found(v)}"
                           f"{ex.did_you_mean(v, AXES) if len(v) < 100 else ''}")
            return None
        vec = self.vector(v, path, self.pscope.child(time_allowed=False), what="an axis")
        if vec is None:
            return None
        vals = [self.default_value(x) for x in vec]
        if all(x == 0.0 for x in vals):
            self.err(path, f"zero axis {ex.shown(v)}: an axis must have non-zero length")
            return None
        return vec

    def joint(self, j, path) -> list:
        if isinstance(j, dict):
            return self.shorthand(j, path)
        if not isinstance(j, list):
            self.err(path, f"expected a list of elementary transforms or a shorthand mapping "
                           f"(`type: revolute` ...), found {found(j)}")
            return []
        out = []
        for k, tr in enumerate(j):
            p = f"{path}[{k}]"
            if not isinstance(tr, dict):
                self.err(p, f"expected a mapping like `{{rotate: z, q: a}}`, found {found(tr)}")
                continue
            self.keys(tr, p, {"rotate", "translate", "screw", "pitch", "q", "by"})
            kinds = [x for x in ("rotate", "translate", "screw") if x in tr]
            if len(kinds) != 1:
                self.err(p, "expected exactly one of `rotate`, `translate` or `screw`")
                continue
            kind = kinds[0]
            if ("pitch" in tr) != (kind == "screw"):
                self.err(p, "`screw` needs `pitch` (the advance per turn)" if kind == "screw" else
                         f"`pitch` belongs to a `screw`, not to a `{kind}`")
                continue
            has_q, has_by = "q" in tr, "by" in tr
            if has_q and has_by:
                self.err(p, "a transform has exactly one of `q` or `by`, found both")
                continue
            if kind == "translate" and not has_q and not has_by:
                vec = self.vector(tr["translate"], f"{p}.translate",
                                  self.pscope.child(time_allowed=False), what="an offset")
                if isinstance(tr["translate"], str):
                    self.err(f"{p}.translate", f"`translate: {ex.shown(tr['translate'])}` needs `q:` or `by:` "
                                               "(a constant offset is a list [x, y, z])")
                elif vec is not None:
                    out.append(Transform("offset", vec, path=p))
                continue
            if not has_q and not has_by:
                self.err(p, f"`{kind}` needs `q:` (a coordinate) or `by:` (an expression of t and parameters)")
                continue
            key = "q" if has_q else "by"
            pitch = tr.get("pitch")
            tr = self.motion(kind, tr[kind], key, tr[key], p, f"{p}.{kind}", f"{p}.{key}")
            if tr is not None and kind == "screw":
                tr = self.pitch(pitch, f"{p}.pitch", tr)
            if tr is not None:
                out.append(tr)
        return out

    def motion(self, kind, axis, key, value, path, axis_path, value_path):
        """One rotation or translation along `axis` by a coordinate (key `q`) or an expression
        (key `by`); None after an error."""
        axis = self.axis(axis, axis_path)
        if axis is None:
            return None
        if key == "q":
            return Transform(kind, axis, q=value, path=path) if self.ident(value, value_path, "a coordinate name") \
                else None
        by = self.expression(value, value_path, self.pscope)
        return Transform(kind, axis, by=by, path=path) if by is not None else None

    def pitch(self, value, path, tr):
        """A screw's pitch: a non-zero expression of parameters (the translation per turn)."""
        pitch = self.expression(value, path, self.pscope.child(time_allowed=False))
        if pitch is None:
            return None
        if self.default_value(pitch) == 0.0:
            self.err(path, f"zero pitch {ex.shown(value)}: a helical joint advances a non-zero length per turn")
            return None
        return replace(tr, pitch=pitch)

    def shorthand(self, j, path) -> list:
        """`{type: revolute, axis: z, q: a}` (or `by: w*t`, a driven joint) and the other
        JOINT_TYPES, expanded into elementary transforms that carry the shorthand's path."""
        jt = j.get("type")
        if not isinstance(jt, str) or jt not in JOINT_TYPES:
            hint = ex.did_you_mean(jt, JOINT_TYPES) if isinstance(jt, str) and len(jt) < 100 else ""
            self.err(f"{path}.type", f"unknown joint type {ex.shown(jt)}{hint}; "
                                     f"expected one of {', '.join(JOINT_TYPES)} (or a list of transforms)")
            return []
        keys, motions = JOINT_TYPES[jt]
        self.keys(j, path, keys | {"type", "offset", "q", "by"}, required=tuple(sorted(keys)))
        if any(k not in j for k in keys):
            return []
        if ("q" in j) == ("by" in j):
            self.err(path, f"a {jt} joint has exactly one of `q:` (its coordinates) or `by:` (expressions of t "
                           f"and parameters that drive it), found {'both' if 'q' in j else 'neither'}")
            return []
        key = "q" if "q" in j else "by"
        moves = motions(j)
        given = j[key]
        single = len(moves) == 1 and not isinstance(given, list)
        values = [given] if single else given
        if not isinstance(values, list) or len(values) != len(moves):
            what = "coordinate name(s)" if key == "q" else "expression(s)"
            self.err(f"{path}.{key}", f"a {jt} joint takes {len(moves)} {what}, found {found(given)}")
            return []
        out = []
        if "offset" in j:
            vec = self.vector(j["offset"], f"{path}.offset", self.pscope.child(time_allowed=False), what="an offset")
            if vec is None:
                return []
            out.append(Transform("offset", vec, path=path))
        for i, ((kind, axis), value) in enumerate(zip(moves, values)):
            axis_path = f"{path}.axes[{i}]" if "axes" in keys and isinstance(j["axes"], list) else \
                f"{path}.axes" if "axes" in keys else f"{path}.axis"
            tr = self.motion(kind, axis, key, value, path, axis_path, f"{path}.{key}" + ("" if single else f"[{i}]"))
            if tr is not None and kind == "screw":
                tr = self.pitch(j["pitch"], f"{path}.pitch", tr)
            if tr is not None:
                out.append(tr)
        return out if len(out) == len(moves) + ("offset" in j) else []
