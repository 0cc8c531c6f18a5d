"""The 3-D scene of a result, for the report's animation (runtime/report/page.py): where every body
frame is at every frame of the animation, and what is drawn in each body frame.

- Placements: the body frames composed from the joints' elementary transforms (the kinematics
  of docs/model_format.md#joints, evaluated with numpy over all frames at once).
- Geometry per body, in its frame: the body's `visual:` entries (box, cylinder, sphere, mesh
  files read by trimesh), else a default drawn from the model: the equivalent inertia box of
  the body (uniform box with its mass and principal moments, on its principal axes at the
  centre of mass) and a rod from the body's origin O_i to its centre of mass; rods between the
  joint origins O_parent -> O_i are drawn for every body.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import sympy as sp

from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.model import evaluate

#: at most this many frames are animated (rows are subsampled evenly)
MAX_FRAMES = 1500
#: meshes with more triangles are simplified to this many by quadric decimation (fast-simplification,
#: through trimesh): the Panda's link meshes (12 000 - 22 000 triangles, 0.12 - 0.31 m) then deviate
#: from their originals by at most 1.6 mm at 4000 triangles, less at this count, under a pixel of a
#: view that frames the robot (about 3 mm per pixel); the Panda's report is 1.9 MB instead of 11.6
MAX_TRIANGLES = 10000
#: a body whose path leaves the mechanism's initial extent by more than this factor (a part
#: released that flies off) is framed at its start only: the view shows the mechanism
FRAME_REACH = 3.0


@dataclass
class Scene:
    names: list                     # bodies, in the order of `frames`
    parents: list                   # index of the parent body, -1 for the ground
    t: np.ndarray                   # (F,) times of the frames
    rows: np.ndarray                # (F,) rows of the result they come from
    frames: np.ndarray              # (F, B, 12): R (row-major 3x3, body -> ground) and the origin
    shapes: list = field(default_factory=list)     # dicts: body index, triangles (K*9 floats), color
    notes: list = field(default_factory=list)      # what could not be drawn (a mesh not found, ...)
    up: tuple = (0.0, 0.0, 1.0)     # against gravity (z without gravity): the floor is normal to it

    @property
    def extent(self):
        """(centre, radius) of the view: the bodies where they start, and the paths of those that
        stay within FRAME_REACH times that extent (not the path of a part that flies off)."""
        pts = self.frames[:, :, 9:]                                     # (F, B, 3) origins
        reach = max((s["radius"] for s in self.shapes), default=0.0)
        lo, hi = pts[0].min(axis=0) - reach, pts[0].max(axis=0) + reach
        centre, size = (lo + hi) / 2, max(float(np.max(hi - lo)), 0.1)
        for b in range(pts.shape[1]):
            far = np.linalg.norm(pts[:, b] - centre, axis=1).max()
            if far <= FRAME_REACH * size:
                lo, hi = np.minimum(lo, pts[:, b].min(axis=0)), np.maximum(hi, pts[:, b].max(axis=0))
        return (lo + hi) / 2, max(float(np.max(hi - lo)), 0.1)


def _subs(model, params):
    """Parameter symbol -> value for the run's parameters."""
    return model.parameter_values(params)


def _rodrigues(u, theta):
    """(F, 3, 3) rotations by angles theta (F,) about the unit axis u."""
    x, y, z = u
    c, s = np.cos(theta), np.sin(theta)
    C = 1 - c
    return np.stack([np.stack([c + x * x * C, x * y * C - z * s, x * z * C + y * s], -1),
                     np.stack([y * x * C + z * s, c + y * y * C, y * z * C - x * s], -1),
                     np.stack([z * x * C - y * s, z * y * C + x * s, c + z * z * C], -1)], -2)


def placements(model, result, rows, params=None):
    """(F, B, 3, 3) rotations body -> ground and (F, B, 3) origins, bodies in model.spec order."""
    spec = model.spec
    subs = _subs(model, params)
    value = lambda texts: evaluate(spec, texts, extra=subs)          # noqa: E731
    scope = spec.scope(time_allowed=True)
    t = np.asarray(result.t)[rows]
    q = np.asarray(result.q)[rows]
    col = {c: k for k, c in enumerate(result.coordinates)}
    F = len(rows)
    R_of, p_of = {"ground": np.broadcast_to(np.eye(3), (F, 3, 3))}, {"ground": np.zeros((F, 3))}
    pending = list(spec.bodies)
    while pending:                                            # parents first
        body = next(b for b in pending if b.parent in R_of)
        pending.remove(body)
        R, p = R_of[body.parent].copy(), p_of[body.parent].copy()
        for tr in body.joint:
            vec = value(tr.vector)
            if tr.kind == "offset":
                p = p + R @ vec
                continue
            u = vec / np.linalg.norm(vec)
            if tr.q is not None:
                amount = q[:, col[tr.q]]
            else:
                e = ex.parse(tr.by, scope).xreplace({k: sp.Float(v) for k, v in subs.items()})
                amount = np.broadcast_to(np.asarray(sp.lambdify(ex.T, e, "numpy")(t), dtype=float), (F,))
            if tr.kind in ("translate", "screw"):
                p = p + np.einsum("fij,j,f->fi", R, u, amount)
            if tr.kind == "rotate":
                R = R @ _rodrigues(u, amount)
            elif tr.kind == "screw":                     # 2 pi s / pitch about the axis
                R = R @ _rodrigues(u, 2 * np.pi * amount / float(value([tr.pitch])[0]))
        free = [col.get(body.name + s) for s in ("_x", "_y", "_z", "_rx", "_ry", "_rz")]
        if None not in free:                             # released at a stage boundary: a free body from then on
            x = q[:, free]
            on = np.all(np.isfinite(x), axis=1)
            Rf = _rodrigues(np.array([1.0, 0, 0]), x[:, 3]) @ _rodrigues(np.array([0, 1.0, 0]), x[:, 4]) \
                @ _rodrigues(np.array([0, 0, 1.0]), x[:, 5])
            R, p = np.where(on[:, None, None], Rf, R), np.where(on[:, None], x[:, :3], p)
        R_of[body.name], p_of[body.name] = R, p
    names = [b.name for b in spec.bodies]
    return np.stack([R_of[n] for n in names], 1), np.stack([p_of[n] for n in names], 1)


def build_scene(model, result, params=None, base_dir=None) -> Scene:
    m = len(result.t)
    rows = np.unique(np.linspace(0, m - 1, min(m, MAX_FRAMES)).round().astype(int))
    R, p = placements(model, result, rows, params)
    frames = np.concatenate([R.reshape(len(rows), -1, 9), p], axis=2)
    spec = model.spec
    names = [b.name for b in spec.bodies]
    parents = [names.index(b.parent) if b.parent != "ground" else -1 for b in spec.bodies]
    scene = Scene(names, parents, np.asarray(result.t)[rows], rows, frames)
    subs = _subs(model, params)
    g = np.asarray(evaluate(spec, list(spec.gravity), extra=subs), dtype=float)
    if np.linalg.norm(g) > 0:
        scene.up = tuple(float(x) for x in -g / np.linalg.norm(g))
    base_dir = Path(base_dir or Path(spec.file).parent)
    for k, body in enumerate(spec.bodies):
        shapes = _visual_shapes(spec, body, subs, base_dir, scene.notes, k) if body.visual else \
            _default_shapes(spec, body, subs, k)
        for tri, color in shapes:
            if len(tri):
                scene.shapes.append({"body": k, "triangles": np.asarray(tri, dtype=np.float32).reshape(-1),
                                     "color": color, "radius": float(np.abs(tri).max())})
    return scene


# ---------------------------------------------------------------- shapes
PALETTE = [(0.36, 0.55, 0.80), (0.85, 0.55, 0.25), (0.45, 0.70, 0.40), (0.75, 0.40, 0.45),
           (0.55, 0.45, 0.75), (0.60, 0.60, 0.60)]


def _transform(tri, at=(0, 0, 0), rpy=(0, 0, 0), R=None):
    """Triangles (K, 3, 3) moved by a rotation (R, or fixed-axis rpy) and an offset."""
    if R is None:
        r, pch, y = rpy
        R = _rodrigues((0, 0, 1), np.array([y]))[0] @ _rodrigues((0, 1, 0), np.array([pch]))[0] @ \
            _rodrigues((1, 0, 0), np.array([r]))[0]
    return tri @ np.asarray(R).T + np.asarray(at, dtype=float)


def _box(a, b, c):
    import trimesh
    return np.asarray(trimesh.creation.box(extents=(a, b, c)).triangles)


def _cylinder(radius, length):
    import trimesh
    return np.asarray(trimesh.creation.cylinder(radius=radius, height=length, sections=24).triangles)


def _sphere(radius):
    import trimesh
    return np.asarray(trimesh.creation.icosphere(subdivisions=2, radius=radius).triangles)


def _mesh(file, scale, notes):
    import trimesh
    try:
        mesh = trimesh.load(str(file), force="mesh")
    except Exception as exc:                  # noqa: BLE001 (a drawing must not stop a report)
        notes.append(f"mesh {file} could not be read ({type(exc).__name__}: {exc}); drawn as nothing")
        return np.zeros((0, 3, 3))
    return np.asarray(simplified(mesh, notes, Path(file).name).triangles) * np.asarray(scale, dtype=float)


def simplified(mesh, notes, name="mesh"):
    """`mesh` with its duplicate vertices merged and, above MAX_TRIANGLES triangles, decimated to
    that many (quadric error metric: the shape kept, flat areas thinned first)."""
    mesh = mesh.copy()
    mesh.merge_vertices()
    if len(mesh.faces) <= MAX_TRIANGLES:
        return mesh
    try:
        return mesh.simplify_quadric_decimation(face_count=MAX_TRIANGLES)
    except Exception as exc:                  # noqa: BLE001 (a drawing must not stop a report)
        notes.append(f"mesh {name}: {len(mesh.faces)} triangles, not simplified ({type(exc).__name__}: {exc})")
        return mesh


def _visual_shapes(spec, body, subs, base_dir, notes, index):
    out = []
    for k, v in enumerate(body.visual):
        val = lambda texts: evaluate(spec, list(texts), extra=subs)       # noqa: E731
        size = val(v.size) if v.size else ()
        if v.shape == "box":
            tri = _box(*size)
        elif v.shape == "cylinder":
            tri = _cylinder(*size)
        elif v.shape == "sphere":
            tri = _sphere(*size)
        else:
            file = Path(v.file) if Path(v.file).is_absolute() else base_dir / v.file
            if not file.is_file():
                notes.append(f"body `{body.name}`: mesh file {v.file} not found; drawn as nothing")
                continue
            tri = _mesh(file, val(v.scale), notes)
        color = v.color or PALETTE[(index + k) % len(PALETTE)]
        out.append((_transform(tri, val(v.at), val(v.rpy)), tuple(color)))
    return out


def equivalent_box(m, I):
    """Edges (a, b, c) of the uniform box of mass m with the principal moments of I (about the
    com): I1 = m (b^2 + c^2)/12 and so on; with the principal axes (columns of V)."""
    w, V = np.linalg.eigh(I)
    w = np.maximum(w, 0.0)
    s = w.sum()
    edges = np.sqrt(np.maximum(6.0 * (s - 2.0 * w) / m, 0.0)) if m > 0 else np.zeros(3)
    return edges, V


def _default_shapes(spec, body, subs, k):
    vals = evaluate(spec, [body.mass, *body.com, *body.inertia], extra=subs)
    m, com, (ixx, iyy, izz, ixy, iyz, ixz) = vals[0], vals[1:4], vals[4:]
    if m <= 0:
        return []
    edges, V = equivalent_box(m, np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))
    scale = max(edges.max(), np.linalg.norm(com), 1e-3)
    edges = np.maximum(edges, 0.05 * scale)                   # a rod's box stays visible
    if np.linalg.det(V) < 0:
        V[:, 0] = -V[:, 0]
    color = PALETTE[k % len(PALETTE)]
    return [(_transform(_box(*edges), com, R=V), color)]
