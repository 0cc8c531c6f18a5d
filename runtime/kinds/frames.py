"""Operational-space kinematics of a body (generator/kinds/frames.py): `model.frame(body)` generates,
compiles and caches on first use a module of kind "frames" for that body (or for a frame at a
point `at` of it, with its axes) and returns a `Frame`:

    f = model.frame("tool0")
    pos, R = f.placement(q)                    # position of the frame's origin, rotation frame -> ground
    J = f.jacobian(q, "LOCAL_WORLD_ALIGNED")   # 6 x n, [linear; angular], or "WORLD", "LOCAL"
    v = f.velocity(q, qd, "LOCAL")             # spatial velocity
    a = f.acceleration(q, qd, qdd, "LOCAL")    # spatial acceleration; classical=True: classical
    b = f.bias(q, qd, "LOCAL_WORLD_ALIGNED")   # J'q': the classical acceleration at q'' = 0
    J = f.jacobian(q, "LOCAL", out=J)          # every method fills `out=` when given

    jac = model.frame_function("tool0", "jacobian", "LOCAL")   # checked once, then one kernel call:
    jac(q, out=J)                              # a float64 q of length n and J (6, n) go straight to C

Each quantity in each reference is a kernel of its own (generator/kinds/frames.py), so a call is
the kernel and, without `out`, one np.empty.

The references are Pinocchio's (pinocchio.ReferenceFrame): LOCAL the frame's axes at its
origin, LOCAL_WORLD_ALIGNED the ground's axes at the frame's origin, WORLD the ground's axes at the
ground's origin (the spatial velocity of the point of the body at the ground's origin). The
classical acceleration is that of the frame's origin (and the angular acceleration); in WORLD it
is, as Pinocchio's getFrameClassicalAcceleration, the spatial acceleration plus w x v.
"""

from __future__ import annotations

import hashlib

import numpy as np

REFERENCES = ("LOCAL", "WORLD", "LOCAL_WORLD_ALIGNED")
_REF = {"LOCAL": "local", "WORLD": "world", "LOCAL_WORLD_ALIGNED": "aligned"}
# what a prepared function computes: (kernel stem, state arguments, shape of the result; None: 6 x n)
WHATS = {"placement": ("frame_placement", 1, (12,)), "jacobian": ("frame_jacobian", 1, None),
         "velocity": ("frame_velocity", 2, (6,)), "bias": ("frame_bias", 2, (6,)),
         "acceleration": ("frame_acceleration", 3, (6,)), "classical": ("frame_classical", 3, (6,))}


def _reference(ref) -> str:
    name = getattr(ref, "name", ref)                  # pinocchio.ReferenceFrame.LOCAL has .name
    name = str(name).upper()
    if name not in REFERENCES:
        raise ValueError(f"reference {ref!r}: expected one of {', '.join(REFERENCES)}")
    return name


class Frame:
    """The compiled kinematics of one frame of a model (module docstring). Every method is one
    kernel call; `out=` (an array of the result's shape, float64, C-contiguous) is filled and
    returned instead of a new array."""

    def __init__(self, module, model, body, at, name=None):
        self.module, self.model, self.body, self.at = module, model, body, at
        self.name = body if name is None else name
        self.n = model.n
        self._p = model.param_vector()
        self._kernels = {(what, ref): getattr(module, f"{stem}_{_REF[ref]}" if what != "placement" else stem)
                         for what, (stem, _, _) in WHATS.items() for ref in REFERENCES}

    def __repr__(self):
        return f"<dynamica frame {self.name!r} ({self.body!r} at {list(self.at)}) of {self.model.name!r}>"

    def _call(self, what, reference, states, t, params, out):
        try:
            kernel = self._kernels[what, reference]
        except KeyError:
            kernel = self._kernels[what, _reference(reference)]
        shape = WHATS[what][2] or (6, self.n)
        if out is None:
            out = np.empty(shape)
        p = self._p if params is None else self.model.param_vector(params)
        try:                              # float64 arrays as they are (the fast path)
            kernel(t, *states, p, out)
        except (TypeError, ValueError):
            names = ("q", "qd", "qdd")
            kernel(float(t), *(self.model.as_vector(x, nm) for x, nm in zip(states, names)), p,
                   _checked_out(out, shape))
        return out

    def placement(self, q, t=0.0, params=None, out=None):
        """(position of the frame's origin [3], rotation matrix frame -> ground [3 x 3]); `out` a
        12-array: the position, then the rotation row by row (the two returned are views of it)."""
        x = self._call("placement", "LOCAL", (q,), t, params, out)
        return x[:3], x[3:].reshape(3, 3)

    def jacobian(self, q, reference="LOCAL_WORLD_ALIGNED", t=0.0, params=None, out=None) -> np.ndarray:
        """The frame Jacobian, 6 x n ([linear; angular] rows), in `reference`."""
        return self._call("jacobian", reference, (q,), t, params, out)

    def velocity(self, q, qd, reference="LOCAL", t=0.0, params=None, out=None) -> np.ndarray:
        """The spatial velocity [linear; angular] (Pinocchio's getFrameVelocity)."""
        return self._call("velocity", reference, (q, qd), t, params, out)

    def acceleration(self, q, qd, qdd, reference="LOCAL", classical=False, t=0.0, params=None,
                     out=None) -> np.ndarray:
        """The spatial acceleration (Pinocchio's getFrameAcceleration), or with classical=True the
        classical one (getFrameClassicalAcceleration: of the frame's origin, and w')."""
        return self._call("classical" if classical else "acceleration", reference, (q, qd, qdd), t, params, out)

    def bias(self, q, qd, reference="LOCAL", t=0.0, params=None, out=None) -> np.ndarray:
        """J'q': the classical acceleration at q'' = 0 (the frame's origin, and w'), so that the
        classical acceleration is J q'' + J'q' in LOCAL and LOCAL_WORLD_ALIGNED."""
        return self._call("bias", reference, (q, qd), t, params, out)

    def function(self, what: str, reference="LOCAL_WORLD_ALIGNED", params=None):
        """A prepared function of one quantity (`what`: placement, jacobian, velocity, bias,
        acceleration, classical) in `reference`, checked here once: f(q[, qd[, qdd]], out=None,
        t=0.0) is then one kernel call (module docstring of runtime/kinds/frames.py)."""
        if what not in WHATS:
            raise ValueError(f"frame function {what!r}: expected one of {', '.join(WHATS)}")
        reference = _reference(reference)
        kernel = self._kernels[what, reference]
        arity, shape = WHATS[what][1], WHATS[what][2] or (6, self.n)
        p = self._p if params is None else self.model.param_vector(params)
        call = self._call
        empty = np.empty

        def slow(states, t, out):
            return call(what, reference, states, t, params, out)
        if arity == 1:
            def f(q, out=None, t=0.0):
                if out is None:
                    out = empty(shape)
                try:
                    kernel(t, q, p, out)
                except (TypeError, ValueError):
                    return slow((q,), t, out)
                return out
        elif arity == 2:
            def f(q, qd, out=None, t=0.0):
                if out is None:
                    out = empty(shape)
                try:
                    kernel(t, q, qd, p, out)
                except (TypeError, ValueError):
                    return slow((q, qd), t, out)
                return out
        else:
            def f(q, qd, qdd, out=None, t=0.0):
                if out is None:
                    out = empty(shape)
                try:
                    kernel(t, q, qd, qdd, p, out)
                except (TypeError, ValueError):
                    return slow((q, qd, qdd), t, out)
                return out
        f.__doc__ = (f"{what} of frame {self.name!r} ({reference}) of model {self.model.name!r}: "
                     f"({', '.join(('q', 'qd', 'qdd')[:arity])}, out=None, t=0.0) -> array {shape}")
        f.__name__ = f"frame_{what}"
        return f


def _checked_out(out, shape):
    if not (isinstance(out, np.ndarray) and out.dtype == np.float64 and out.flags.c_contiguous
            and out.size == int(np.prod(shape)) and out.flags.writeable):
        raise ValueError(f"`out` must be a writable C-contiguous float64 array of shape {shape}")
    return out


def frame(model, body: str, at=None) -> Frame:
    """The Frame named `body`: a body of the model (a URDF link, an MJCF body) at the point `at` of
    it (3 numbers, body axes; default its origin), or a frame the model file declares (`frames:`,
    an MJCF site), its module built on first use."""
    from dynamica.errors import ModelError, Problem
    bodies = [b.name for b in model.spec.bodies]
    declared = {f[0]: f for f in getattr(model.spec, "frames", ())}
    rot = None
    name = body
    if body in declared and body not in bodies:
        if at is not None:
            raise ModelError(model.spec.file, [Problem(f"frame({body!r}).at", "a declared frame has its own "
                                                       "origin: `at` is for bodies")])
        _, body, at, rpy = declared[body]
        rot = _rpy_matrix(rpy)
    elif body not in bodies:
        from dynamica.generator.spec import expr as ex
        names = bodies + list(declared)
        raise ModelError(model.spec.file, [Problem(f"frame({body!r})", f"no body or frame named {body!r}"
                                                   f"{ex.did_you_mean(str(body), names)}; the bodies are "
                                                   f"{', '.join(bodies)}"
                                                   + (f"; the frames {', '.join(declared)}" if declared else ""))])
    at = (0.0, 0.0, 0.0) if at is None else tuple(float(x) for x in at)
    if len(at) != 3 or not all(np.isfinite(at)):
        raise ModelError(model.spec.file, [Problem(f"frame({body!r}).at", f"expected 3 finite numbers, found {at}")])
    key = ("frames", name, body, at)
    cached = model.companions.get(key)
    if cached is None:
        cached = model.companions[key] = Frame(_load_module(model, body, at, rot), model, body, at, name)
    return cached


def _rpy_matrix(rpy):
    """R = Rz(yaw) Ry(pitch) Rx(roll) (URDF's rpy): frame axes -> body axes, as nested tuples."""
    r, p, y = rpy
    cr, sr, cp, sp_, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    R = np.array([[cy * cp, cy * sp_ * sr - sy * cr, cy * sp_ * cr + sy * sr],
                  [sy * cp, sy * sp_ * sr + cy * cr, sy * sp_ * cr - cy * sr],
                  [-sp_, cp * sr, cp * cr]])
    return tuple(tuple(float(x) for x in row) for row in R)


def _load_module(model, body, at, rot=None):
    from dynamica.build import cache_root, compile_bundle, import_extension, tool_fingerprint
    from dynamica.runtime.api import index_path, indexed_extension, write_index
    cache = cache_root()
    digest = hashlib.sha256(b"\0".join([tool_fingerprint().encode(), repr(model.spec).encode(), b"frames",
                                        body.encode(), repr(at).encode(), repr(rot).encode()])).hexdigest()
    idx = index_path(cache, digest)
    so = indexed_extension(idx)
    if so is None:
        from dynamica.generator.kinds.frames import generate_frame
        bundle = generate_frame(model.spec, body, at, rot)
        so = compile_bundle(bundle, cache=cache, meta={"model": model.spec.name, "form": "frames", "mode": "symbolic"})
        write_index(idx, {"entry": so.parent.name, "file": so.name, "extension": str(so),
                           "signature": bundle.signature, "model": model.spec.name, "form": "frames"})
    return import_extension(so)
