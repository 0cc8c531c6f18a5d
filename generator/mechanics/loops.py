"""Closed kinematic loops (docs/loops.md; cut joints as in the peer package): the loop-joint types (a registry)
and the loader's `loops` and `assembly` sections.

The bodies and their `parent` joints form a tree; each entry of `loops` is one more joint between
two bodies of it (a cut joint), which holds a few scalar equations on the tree's coordinates.
A type is one `LoopType`: its keys and its equations as a list of constraint atoms, built from
the geometry of the joint (`Geometry`, generator/mechanics/constraints.py), where every direction lies in
a body and moves with it:

    points()       the two points coincide: d . e_x, d . e_y, d . e_z (ground axes), d = x_b - x_a
    on_line()      x_b on the line through x_a along the axis: d . w1, d . w2 (w1, w2 _|_ axis, body a)
    parallel()     the axes parallel: w1 . u_b, w2 . u_b
    perpendicular()    the axes perpendicular: u_a . u_b
    twist()        no rotation about the axis from the assembled one: w2 . c_b (c_b: w1 at assembly)
    orientation()  the frames keep their relative orientation at assembly (3 dot products)
    distance()     |d|^2 - length^2
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found
from dynamica.generator.spec.model import Loop


@dataclass(frozen=True)
class LoopType:
    name: str
    atoms: Callable          # (Geometry) -> [atoms]
    axis: bool = False       # takes `axis` (and `axis_b`)
    length: bool = False     # takes `length`
    references: int = 0      # numbers fixed at assembly (prismatic: 3, weld: 6)
    doc: str = ""


LOOP_TYPES: dict = {}


def register(name, axis=False, length=False, references=0, doc=""):
    def deco(atoms):
        LOOP_TYPES[name] = LoopType(name, atoms, axis, length, references, doc)
        return atoms
    return deco


@register("spherical", doc="the two points coincide (3)")
def _spherical(g):
    return g.points()


@register("revolute", axis=True, doc="points coincide; `axis` of a parallel to `axis_b` of b (5)")
def _revolute(g):
    return g.points() + g.parallel()


@register("universal", axis=True, doc="points coincide; `axis` of a perpendicular to `axis_b` of b (4)")
def _universal(g):
    return g.points() + g.perpendicular()


@register("cylindrical", axis=True, doc="point_b on the line through point_a along `axis`; axes parallel (4)")
def _cylindrical(g):
    return g.on_line() + g.parallel()


@register("prismatic", axis=True, references=3,
          doc="as cylindrical, and no relative rotation about the axis (5)")
def _prismatic(g):
    return g.on_line() + g.parallel() + g.twist()


@register("weld", references=6, doc="points coincide; frames keep their relative orientation at assembly (6)")
def _weld(g):
    return g.points() + g.orientation()


@register("distance", length=True, doc="the points stay `length` apart: a massless rod with ball ends (1)")
def _distance(g):
    return g.distance()


class LoopSections:
    """The loader's `loops` and `assembly` sections (mixed into loader._Loader)."""

    LOOP_KEYS = {"name", "type", "body_a", "point_a", "body_b", "point_b", "axis", "axis_b", "length"}

    def loops(self, lst: list, body_names, coords) -> list:
        out, seen = [], {}
        taken = set(body_names) | set(coords) | {"ground"}
        pscope = self.pscope.child(time_allowed=False)
        for i, d in enumerate(lst):
            path = self.entry = f"loops[{i}]"
            if not isinstance(d, dict):
                self.err(path, f"expected a mapping with `name`, `type`, `body_a`, ..., found {found(d)}")
                continue
            lt = LOOP_TYPES.get(d.get("type")) if isinstance(d.get("type"), str) else None
            required = ["name", "type", "body_a", "body_b"] + (["axis"] if lt and lt.axis else []) \
                + (["length"] if lt and lt.length else [])
            allowed = self.LOOP_KEYS - ({"axis", "axis_b"} if lt and not lt.axis else set()) \
                - ({"length"} if lt and not lt.length else set())
            self.keys(d, path, allowed, required=required)
            if lt is None:
                if "type" in d:
                    t = d["type"]
                    hint = ex.did_you_mean(t, LOOP_TYPES) if isinstance(t, str) and len(t) < 100 else ""
                    self.err(f"{path}.type", f"unknown loop type {ex.shown(t)}{hint}; expected one of "
                                             f"{', '.join(LOOP_TYPES)}")
                continue
            name = d.get("name")
            if "name" in d and self.ident(name, f"{path}.name", "a loop name"):
                if name in taken:
                    self.err(f"{path}.name", f"`{name}` is already the name of a body or coordinate")
                elif name in seen:
                    self.err(f"{path}.name", f"duplicate loop name `{name}` (also {seen[name]})")
                seen.setdefault(name, path)
            bodies = []
            for key in ("body_a", "body_b"):
                b = d.get(key)
                if key in d and not (isinstance(b, str) and (b in body_names or b == "ground")):
                    hint = ex.did_you_mean(b, body_names) if isinstance(b, str) and len(b) < 100 else ""
                    self.err(f"{path}.{key}", f"unknown body {ex.shown(b)}{hint} (a body or ground)")
                bodies.append(b)
            if "body_a" in d and "body_b" in d and bodies[0] == bodies[1]:
                self.err(f"{path}.body_b", f"a loop joins two different bodies, found `{bodies[0]}` twice")
            points = [self.vector(d.get(k, [0, 0, 0]), f"{path}.{k}", pscope) for k in ("point_a", "point_b")]
            axis = axis_b = ()
            if lt.axis and "axis" in d:
                axis = self.axis(d["axis"], f"{path}.axis") or ()
                axis_b = self.axis(d["axis_b"], f"{path}.axis_b") or () if "axis_b" in d else axis
            length = self.expression(d["length"], f"{path}.length", pscope) if lt.length and "length" in d else None
            out.append(Loop(name=name, type=lt.name, body_a=bodies[0], point_a=points[0] or (0, 0, 0),
                            body_b=bodies[1], point_b=points[1] or (0, 0, 0), axis=tuple(axis),
                            axis_b=tuple(axis_b), length=length, path=path))
        return out

    def assembly(self, d: dict, coords) -> tuple:
        """`assembly: {hold: [coordinate | der(coordinate), ...]}`."""
        self.keys(d, "assembly", {"hold"})
        hold = d.get("hold", [])
        if not isinstance(hold, list):
            self.err("assembly.hold", f"expected a list of coordinates and der(coordinate)s, found {found(hold)}")
            return ()
        known = set(coords) | {f"der({c})" for c in coords}
        out = []
        for k, name in enumerate(hold):
            if not (isinstance(name, str) and name in known):
                hint = ex.did_you_mean(name, known) if isinstance(name, str) and len(name) < 100 else ""
                inner = name[4:-1] if isinstance(name, str) and name.startswith("der(") and name.endswith(")") else name
                self.unknown(f"assembly.hold[{k}]", inner, f"unknown coordinate {ex.shown(name)}{hint}; expected a "
                                                           "coordinate or der(coordinate)")
            else:
                out.append(name)
        return tuple(out)

