"""The loading of `contact` (docs/model_format.md#contact, docs/contact.md): collision shapes
fixed in bodies, the law's defaults and the pairs of shapes that touch. Each pair becomes a
force element of type `contact` (generator/mechanics/forces.py), read like any force entry, with
its two shapes resolved into `Shape` records (numbers, body frame).

    contact:
      shapes:
        floor: {type: plane, body: ground}                    # normal: the shape's z axis
        ball:  {type: sphere, body: ball, radius: 0.1}
        rod:   {type: capsule, body: arm, radius: 0.02, length: 0.3, at: [0, 0, 0.15]}
        wheel: {type: cylinder, body: hub, radius: 0.3, length: 0.1, rpy: [1.5708, 0, 0]}
        block: {type: box, body: block, size: [0.2, 0.1, 0.1], rpy: [0, 0, 0.3]}
      defaults: {stiffness: 1e6, damping: 0.5, exponent: 1.5, friction: 0.8, stiction_velocity: 1e-3}
      pairs:                                                  # absent: every pair that can touch
        - {a: floor, b: ball, friction: 0.3}
      broad_phase: auto                                       # true, false, auto (docs/contact.md)
"""

from __future__ import annotations

import math

from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found, join_path
from dynamica.generator.spec.model import Shape

#: shape type -> (required keys, optional keys) besides type, body, at, rpy
SHAPE_KEYS = {
    "sphere": ({"radius"}, set()),
    "capsule": ({"radius", "length"}, set()),
    "box": ({"size"}, set()),
    "cylinder": ({"radius", "length"}, set()),
    "plane": (set(), {"normal"}),
}
#: the pairs of shape types with a closed-form distance (generator/mechanics/contact.py), in the
#: order (a, b) the force element takes them
PAIR_TYPES = {("plane", "sphere"), ("plane", "capsule"), ("plane", "box"), ("plane", "cylinder"), ("sphere", "sphere"),
              ("sphere", "capsule"), ("capsule", "capsule"), ("box", "sphere"), ("box", "box"),
              ("box", "capsule"), ("sphere", "cylinder"),
              ("capsule", "cylinder")}
#: the keys of `contact.defaults` and of a pair besides a and b: the law's fields
LAW_KEYS = ("stiffness", "damping", "exponent", "friction", "stiction_velocity")


def _parent_child(a, b, parent_of) -> bool:
    """MuJoCo's rule: no contact between a body and its parent, unless the parent is the ground."""
    return (parent_of.get(a) == b and b != "ground") or (parent_of.get(b) == a and a != "ground")


def rotation_rpy(rpy) -> tuple:
    """URDF's fixed-axis roll, pitch, yaw as a row-major rotation (shape -> body): Rz Ry Rx."""
    r, p, y = rpy
    cr, sr, cp, sp_, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return (cy * cp, cy * sp_ * sr - sy * cr, cy * sp_ * cr + sy * sr,
            sy * cp, sy * sp_ * sr + cy * cr, sy * sp_ * cr - cy * sr,
            -sp_, cp * sr, cp * cr)


def rotation_to(normal) -> tuple:
    """A rotation whose z column is the unit vector `normal` (a plane's frame)."""
    n = [x / math.sqrt(sum(c * c for c in normal)) for x in normal]
    helper = (1.0, 0.0, 0.0) if abs(n[0]) < 0.9 else (0.0, 1.0, 0.0)
    xa = [helper[1] * n[2] - helper[2] * n[1], helper[2] * n[0] - helper[0] * n[2], helper[0] * n[1] - helper[1] * n[0]]
    s = math.sqrt(sum(c * c for c in xa))
    xa = [c / s for c in xa]
    ya = [n[1] * xa[2] - n[2] * xa[1], n[2] * xa[0] - n[0] * xa[2], n[0] * xa[1] - n[1] * xa[0]]
    return tuple(v for r in range(3) for v in (xa[r], ya[r], n[r]))


class ContactSections:
    """The loader's reading of `contact:` (mixed into loader._Loader)."""

    def contact(self, d: dict, body_names, parent_of) -> tuple:
        """(shapes, pair entries: (path, mapping of a `contact` force)) of the section."""
        self.keys(d, "contact", {"shapes", "defaults", "pairs", "broad_phase"})
        self.broad_phase = d.get("broad_phase", "auto")
        if self.broad_phase not in (True, False, "auto"):
            self.err("contact.broad_phase", f"expected true, false or auto, found {found(self.broad_phase)}")
            self.broad_phase = "auto"
        self.shapes = {}
        for name, s in self.mapping(d, "shapes", "contact.shapes", "a mapping name -> shape").items():
            p = self.entry = join_path("contact.shapes", name)
            if self.ident(name, p, "a shape name"):
                shape = self.shape(name, s, p, body_names)
                if shape is not None:
                    self.shapes[name] = shape
        defaults = self.mapping(d, "defaults", "contact.defaults", "a mapping of the law's fields")
        self.keys(defaults, "contact.defaults", set(LAW_KEYS))
        pairs = d.get("pairs")
        out = []
        if pairs is None:                    # every pair of shapes on two bodies that can touch
            names = list(self.shapes)
            for i, first in enumerate(names):
                for second in names[i + 1:]:
                    a, b = first, second
                    sa, sb = self.shapes[a], self.shapes[b]
                    if (sa.kind, sb.kind) not in PAIR_TYPES:
                        a, b, sa, sb = b, a, sb, sa
                    if (sa.kind, sb.kind) in PAIR_TYPES and sa.body != sb.body and \
                            not _parent_child(sa.body, sb.body, parent_of):
                        out.append((f"contact (the pair {a}, {b})",
                                    {"type": "contact", "name": f"contact_{a}_{b}", "a": a, "b": b, **defaults}))
        elif not isinstance(pairs, list):
            self.err("contact.pairs", f"expected a list of {{a: SHAPE, b: SHAPE}}, found {found(pairs)}")
        else:
            for k, pair in enumerate(pairs):
                p = f"contact.pairs[{k}]"
                if not isinstance(pair, dict):
                    self.err(p, f"expected a mapping {{a: SHAPE, b: SHAPE}}, found {found(pair)}")
                    continue
                self.keys(pair, p, {"a", "b", "name", *LAW_KEYS}, required=("a", "b"))
                name = pair.get("name", f"contact_{pair.get('a')}_{pair.get('b')}")
                sa, sb = (self.shapes.get(pair.get(k)) if isinstance(pair.get(k), str) else None for k in "ab")
                if sa is not None and sb is not None and (sa.kind, sb.kind) not in PAIR_TYPES:
                    pair = {**pair, "a": pair["b"], "b": pair["a"]}      # the order the closed forms take
                out.append((p, {"type": "contact", "name": name, **defaults,
                                **{k: v for k, v in pair.items() if k != "name"}}))
        return tuple(self.shapes.values()), out

    def shape(self, name, s, path, body_names):
        if not isinstance(s, dict):
            self.err(path, f"expected a mapping {{type:, body:, ...}}, found {found(s)}")
            return None
        kind = s.get("type")
        if kind not in SHAPE_KEYS:
            hint = ex.did_you_mean(kind, SHAPE_KEYS) if isinstance(kind, str) and len(kind) < 100 else ""
            self.err(f"{path}.type", f"unknown shape type {ex.shown(kind)}{hint}; expected one of "
                                     f"{', '.join(SHAPE_KEYS)}")
            return None
        required, optional = SHAPE_KEYS[kind]
        self.keys(s, path, {"type", "body", "at", "rpy"} | required | optional, required=("body", *sorted(required)))
        body = s.get("body")
        if not (isinstance(body, str) and (body in body_names or body == "ground")):
            hint = ex.did_you_mean(body, body_names) if isinstance(body, str) and len(body) < 100 else ""
            if "body" in s:
                self.err(f"{path}.body", f"unknown body {ex.shown(body)}{hint}")
            return None
        at = self.numbers(s.get("at", [0, 0, 0]), f"{path}.at", 3)
        rpy = self.numbers(s.get("rpy", [0, 0, 0]), f"{path}.rpy", 3)
        if at is None or rpy is None:
            return None
        axes = rotation_rpy(rpy)
        kw = {}
        if not required <= set(s):          # said by keys()
            return None
        if kind in ("sphere", "capsule", "cylinder"):
            kw["radius"] = self.number(s["radius"], f"{path}.radius", positive=True)
        if kind == "cylinder":
            kw["length"] = self.number(s["length"], f"{path}.length", positive=True)
        if kind == "capsule":
            length = self.number(s["length"], f"{path}.length")
            if length is not None and length < 0:
                self.err(f"{path}.length", f"expected a length >= 0, found {ex.shown(length)}")
                length = None
            kw["length"] = length
        if kind == "box":
            size = self.numbers(s["size"], f"{path}.size", 3)
            if size is not None and min(size) <= 0:
                self.err(f"{path}.size", f"expected three positive edge lengths, found {ex.shown(s.get('size'))}")
                size = None
            kw["half"] = None if size is None else tuple(x / 2 for x in size)
        if kind == "plane" and "normal" in s:
            if "rpy" in s:
                self.err(path, "a plane takes `normal` or `rpy`, not both")
            normal = self.numbers(s["normal"], f"{path}.normal", 3)
            if normal is not None and not any(normal):
                self.err(f"{path}.normal", "expected a nonzero vector")
                normal = None
            if normal is None:
                return None
            axes = rotation_to(normal)
        if any(v is None for v in kw.values()):
            return None
        return Shape(name, kind, body, at, axes, path=path, **kw)

    def numbers(self, value, path, n):
        """A list of n finite numbers (shapes are numbers: not parameters), or None after an error."""
        if not isinstance(value, (list, tuple)) or len(value) != n:
            self.err(path, f"expected a list of {n} numbers, found {found(value)}")
            return None
        out = [self.number(v, f"{path}[{k}]") for k, v in enumerate(value)]
        return None if any(o is None for o in out) else tuple(out)

    def shape_field(self, v, p, coords, body_names, com):
        """A force field of kind `shape`: the name of a shape of `contact.shapes` -> its Shape."""
        shapes = getattr(self, "shapes", {})
        if isinstance(v, str) and v in shapes:
            return shapes[v]
        hint = ex.did_you_mean(v, shapes) if isinstance(v, str) and len(v) < 100 else ""
        self.err(p, f"unknown shape {ex.shown(v)}{hint}; shapes are declared in `contact.shapes`")
