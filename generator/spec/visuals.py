"""The optional `visual:` entry of a body (docs/model_format.md#visual): shapes drawn by the
report's 3-D view (runtime/report/page.py). Geometry only: nothing here enters the equations.

A visual is one shape or a list of shapes, each in the body frame:

    {shape: box, size: [a, b, c]}            centred at `at`
    {shape: cylinder, radius: r, length: l}  axis along z of the shape's frame (as URDF)
    {shape: sphere, radius: r}
    {shape: mesh, file: F, scale: s}         a mesh file (STL, OBJ, PLY, DAE, ...: what trimesh
                                             reads), relative to the model file
with optional `at: [x, y, z]` and `rpy: [roll, pitch, yaw]` (the shape's frame in the body
frame, URDF's fixed-axis angles) and `color: [r, g, b]` (0..1). Sizes are expressions of
parameters.
"""

from __future__ import annotations

from dataclasses import dataclass

from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found

#: shape -> (required keys, optional keys) besides shape, at, rpy, color
SHAPES = {
    "box": ({"size"}, set()),
    "cylinder": ({"radius", "length"}, set()),
    "sphere": ({"radius"}, set()),
    "mesh": ({"file"}, {"scale"}),
}
COMMON = {"shape", "at", "rpy", "color"}


@dataclass(frozen=True)
class Visual:
    shape: str
    size: tuple = ()                # box: (a, b, c); cylinder: (radius, length); sphere: (radius,)
    file: str = ""                  # mesh: as written (relative to the model file) or absolute
    scale: tuple = (1, 1, 1)
    at: tuple = (0, 0, 0)
    rpy: tuple = (0, 0, 0)
    color: tuple | None = None
    path: str = ""


class VisualSections:
    """The loader's reading of `visual:` (mixed into loader._Loader)."""

    def visuals(self, v, path) -> tuple:
        if v is None:
            return ()
        items = v if isinstance(v, list) else [v]
        out = []
        for k, item in enumerate(items):
            p = f"{path}[{k}]" if isinstance(v, list) else path
            vis = self.visual(item, p)
            if vis is not None:
                out.append(vis)
        return tuple(out)

    def visual(self, d, path):
        if not isinstance(d, dict):
            self.err(path, f"expected a shape mapping ({{shape: box, size: [a, b, c]}}, ...), found {found(d)}")
            return None
        shape = d.get("shape")
        if not isinstance(shape, str) or shape not in SHAPES:
            hint = ex.did_you_mean(shape, SHAPES) if isinstance(shape, str) and len(shape) < 100 else ""
            self.err(f"{path}.shape", f"expected one of {', '.join(SHAPES)}, found {found(shape)}{hint}")
            return None
        required, optional = SHAPES[shape]
        self.keys(d, path, COMMON | required | optional, required=tuple(sorted(required)))
        if any(k not in d for k in required):
            return None
        sc = self.pscope.child(time_allowed=False)
        size = ()
        if shape == "box":
            size = self.vector(d["size"], f"{path}.size", sc, what="a size")
        elif shape == "cylinder":
            size = (
                self.expression(d["radius"], f"{path}.radius", sc),
                self.expression(d["length"], f"{path}.length", sc),
            )
        elif shape == "sphere":
            size = (self.expression(d["radius"], f"{path}.radius", sc),)
        file, scale = "", (1, 1, 1)
        if shape == "mesh":
            file = d["file"]
            if not isinstance(file, str) or not file:
                self.err(f"{path}.file", f"expected a file name, found {found(file)}")
                return None
            s = d.get("scale", 1)
            scale = self.vector(s, f"{path}.scale", sc, what="a scale") if isinstance(s, list) else \
                (self.expression(s, f"{path}.scale", sc),) * 3
        at = self.vector(d.get("at", [0, 0, 0]), f"{path}.at", sc, what="a position")
        rpy = self.vector(d.get("rpy", [0, 0, 0]), f"{path}.rpy", sc, what="angles")
        color = self._color(d.get("color"), f"{path}.color")
        parts = (size, scale, at, rpy)
        if any(p is None or any(x is None for x in p) for p in parts):
            return None
        return Visual(shape, tuple(size), file, tuple(scale), tuple(at), tuple(rpy), color, path)

    def _color(self, c, path):
        if c is None:
            return None
        if isinstance(c, list) and len(c) in (3, 4) and all(
                isinstance(x, (int, float)) and not isinstance(x, bool) and 0 <= x <= 1 for x in c):
            return tuple(float(x) for x in c[:3])
        self.err(path, f"expected [r, g, b] with numbers from 0 to 1, found {found(c)}")
        return None
