"""The absolute motion of a body (position, orientation, velocity, angular velocity) from the
joint transforms along its path P_i, and the free-joint coordinates that reproduce it: what a
stage boundary needs when it releases a body (docs/stages.md).

Each elementary transform moves the current frame (R: frame -> ground, r its origin, v its
velocity, w its angular velocity, all in the ground frame), as (1.1)-(1.5) compose them:

    offset c:               r += R c,            v += w x (R c)
    translate u by s:       r += R u s,          v += w x (R u s) + R u s'
    rotate u by th:         R <- R Rot(u, th),   w += R u th'
    screw u (pitch P) by s: translate by s, then rotate by 2 pi s / P

with the values of `by:` transforms and their time derivatives from their expressions.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from dynamica.generator.spec import expr as ex


def _rot(u, th) -> np.ndarray:
    """Rodrigues: the matrix of a rotation by th about unit u (new-frame coords -> current)."""
    x, y, z = u
    c, s = np.cos(th), np.sin(th)
    C = 1 - c
    return np.array([[c + x * x * C, x * y * C - z * s, x * z * C + y * s],
                     [y * x * C + z * s, c + y * y * C, y * z * C - x * s],
                     [z * x * C - y * s, z * y * C + x * s, c + z * z * C]])


def _evaluator(spec, params):
    """value(text, t, rate=False): an entry of a joint (or its time derivative) at the parameters."""
    scope = spec.scope(time_allowed=True)
    values = dict(spec.defaults())
    for name, v in (params or {}).items():
        if isinstance(v, (tuple, list, np.ndarray)):
            for k, x in enumerate(v):
                values[ex.param_symbol(name, k)] = float(x)
        else:
            values[ex.param_symbol(name)] = float(v)
    subs = {k: sp.Float(v) for k, v in values.items()}

    def value(text, t, rate=False):
        if not isinstance(text, str):
            return 0.0 if rate else float(text)
        e = ex.parse(text, scope)
        if rate:
            e = sp.diff(e, ex.T)
        return float(e.xreplace({**subs, ex.T: sp.Float(t)}))
    return value


def body_motion(spec, body: str, q: dict, qd: dict, t: float, params=None):
    """(R, r, v, w) of `body`'s frame in the ground frame: R the orientation (body -> ground), r
    the origin, v its velocity, w the angular velocity. q, qd: coordinate name -> value (every
    coordinate on the path); params: parameter name -> value (defaults for the others)."""
    by_name = {b.name: b for b in spec.bodies}
    path = []
    b = by_name[body]
    while True:
        path.append(b)
        if b.parent == "ground":
            break
        b = by_name[b.parent]
    value = _evaluator(spec, params)
    R, r, v, w = np.eye(3), np.zeros(3), np.zeros(3), np.zeros(3)
    for b in reversed(path):
        for tr in b.joint:
            vec = np.array([value(c, t) for c in tr.vector])
            if tr.kind == "offset":
                d = R @ vec
                r, v = r + d, v + np.cross(w, d)
                continue
            u = vec / np.linalg.norm(vec)
            if tr.q is not None:
                s, sd = q[tr.q], qd[tr.q]
            else:
                s, sd = value(tr.by, t), value(tr.by, t, rate=True)
            if tr.kind in ("translate", "screw"):
                d = R @ u * s
                r, v = r + d, v + np.cross(w, d) + R @ u * sd
            if tr.kind in ("rotate", "screw"):
                turn = 1.0 if tr.kind == "rotate" else 2 * np.pi / value(tr.pitch, t)
                w = w + R @ u * (turn * sd)
                R = R @ _rot(u, turn * s)
    return R, r, v, w


class GimbalLock(ValueError):
    """The Cardan angles of an orientation are singular (the second angle at +-90 degrees)."""


def free_joint_state(R, r, v, w):
    """(q, qd) of a free joint to the ground (translations along x, y, z, then rotations about x,
    y, z: R = Rx(a) Ry(b) Rz(c)) that put a frame at (R, r) moving with (v, w)."""
    b = np.arcsin(np.clip(R[0, 2], -1.0, 1.0))
    if abs(np.cos(b)) < 1e-8:
        raise GimbalLock(f"the second Cardan angle is {np.degrees(b):.6g} degrees")
    a = np.arctan2(-R[1, 2], R[2, 2])
    c = np.arctan2(-R[0, 1], R[0, 0])
    Rx = _rot((1.0, 0.0, 0.0), a)
    Ry = _rot((0.0, 1.0, 0.0), b)
    E = np.column_stack([[1.0, 0.0, 0.0], Rx @ [0.0, 1.0, 0.0], Rx @ Ry @ [0.0, 0.0, 1.0]])
    rates = np.linalg.solve(E, w)
    return np.concatenate([r, [a, b, c]]), np.concatenate([v, rates])
