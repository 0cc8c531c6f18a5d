"""Operational-space kinematics of a body (generator/kinds/frames.py): `model.frame(body)` generates,
compiles and caches on first use a module of kind "frames" for that body (or for a frame at a
point `at` of it, with its axes) and returns a `Frame`:

    f = model.frame("tool0")
    pos, R = f.placement(q)                    # position of the frame's origin, rotation frame -> ground
    J = f.jacobian(q, "LOCAL_WORLD_ALIGNED")   # 6 x n, [linear; angular], or "WORLD", "LOCAL"
    v = f.velocity(q, qd, "LOCAL")             # spatial velocity
    a = f.acceleration(q, qd, qdd, "LOCAL")    # spatial acceleration; classical=True: classical
    b = f.bias(q, qd, "LOCAL_WORLD_ALIGNED")   # J'q': the classical acceleration at q'' = 0

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
_JACOBIAN = {"LOCAL": "frame_jacobian_local", "WORLD": "frame_jacobian_world",
             "LOCAL_WORLD_ALIGNED": "frame_jacobian_aligned"}


def _reference(ref) -> str:
    name = getattr(ref, "name", ref)                  # pinocchio.ReferenceFrame.LOCAL has .name
    name = str(name).upper()
    if name not in REFERENCES:
        raise ValueError(f"reference {ref!r}: expected one of {', '.join(REFERENCES)}")
    return name


class Frame:
    """The compiled kinematics of one frame of a model (module docstring)."""

    def __init__(self, module, model, body, at):
        self.module, self.model, self.body, self.at = module, model, body, at
        self.n = model.n
        self._size = 6 * model.n
        self._p = model.param_vector()
        self._jac = {ref: getattr(module, name) for ref, name in _JACOBIAN.items()}

    def __repr__(self):
        return f"<dynamica frame {self.body!r} at {list(self.at)} of {self.model.name!r}>"

    def _params(self, params):
        return self._p if params is None else self.model.param_vector(params)

    def placement(self, q, t=0.0, params=None):
        """(position of the frame's origin [3], rotation matrix frame -> ground [3 x 3])."""
        x = np.empty(12)
        self.module.frame_placement(float(t), self.model.as_vector(q, "q"), self._params(params), x)
        return x[:3], x[3:].reshape(3, 3)

    def jacobian(self, q, reference="LOCAL_WORLD_ALIGNED", t=0.0, params=None) -> np.ndarray:
        """The frame Jacobian, 6 x n ([linear; angular] rows), in `reference`."""
        J = np.empty(self._size)
        try:                              # float64 vectors as they are (the fast path)
            self._jac[reference](t, q, self._p if params is None else self.model.param_vector(params), J)
        except (KeyError, TypeError, ValueError):
            self._jac[_reference(reference)](float(t), self.model.as_vector(q, "q"), self._params(params), J)
        return J.reshape(6, self.n)

    def _local(self, kernel, args, t, params):
        out = np.empty(6)
        kernel(float(t), *args, self._params(params), out)
        return out

    def _express(self, local, q, reference, t, params, kind):
        """A vector of the frame (LOCAL) in `reference`: a motion ("twist") moves as a spatial vector."""
        reference = _reference(reference)
        if reference == "LOCAL":
            return local
        pos, R = self.placement(q, t, params)
        lin, ang = R @ local[:3], R @ local[3:]
        if reference == "WORLD":
            lin = lin + np.cross(pos, ang)
        return np.concatenate([lin, ang])

    def velocity(self, q, qd, reference="LOCAL", t=0.0, params=None) -> np.ndarray:
        """The spatial velocity [linear; angular] (Pinocchio's getFrameVelocity)."""
        m = self.model
        v = self._local(self.module.frame_velocity, (m.as_vector(q, "q"), m.as_vector(qd, "qd")), t, params)
        return self._express(v, q, reference, t, params, "twist")

    def acceleration(self, q, qd, qdd, reference="LOCAL", classical=False, t=0.0, params=None) -> np.ndarray:
        """The spatial acceleration (Pinocchio's getFrameAcceleration), or with classical=True the
        classical one (getFrameClassicalAcceleration: of the frame's origin, and w')."""
        m = self.model
        a = self._local(self.module.frame_acceleration, (m.as_vector(q, "q"), m.as_vector(qd, "qd"),
                                                          m.as_vector(qdd, "qdd")), t, params)
        return self._acceleration(a, q, qd, reference, classical, t, params)

    def bias(self, q, qd, reference="LOCAL", t=0.0, params=None) -> np.ndarray:
        """J'q': the classical acceleration at q'' = 0 (the frame's origin, and w'), so that the
        classical acceleration is J q'' + J'q' in LOCAL and LOCAL_WORLD_ALIGNED."""
        m = self.model
        reference = _reference(reference)
        kernel = self.module.frame_bias_aligned if reference == "LOCAL_WORLD_ALIGNED" else self.module.frame_bias
        a = self._local(kernel, (m.as_vector(q, "q"), m.as_vector(qd, "qd")), t, params)
        return a if reference != "WORLD" else self._acceleration(a, q, qd, reference, True, t, params)

    def _acceleration(self, a_classical, q, qd, reference, classical, t, params):
        reference = _reference(reference)
        if classical and reference != "WORLD":
            return self._express(a_classical, q, reference, t, params, "twist")
        v = self.velocity(q, qd, "LOCAL", t, params)
        spatial = a_classical - np.concatenate([np.cross(v[3:], v[:3]), np.zeros(3)])
        out = self._express(spatial, q, reference, t, params, "twist")
        if classical:                     # WORLD: Pinocchio adds w x v of the WORLD velocity
            vw = self._express(v, q, "WORLD", t, params, "twist")
            out = out + np.concatenate([np.cross(vw[3:], vw[:3]), np.zeros(3)])
        return out


def frame(model, body: str, at=None) -> Frame:
    """The Frame of `body` (a body of the model: a URDF link, an MJCF body) at the point `at` of it
    (3 numbers, body axes; default its origin), its module built on first use."""
    from dynamica.errors import ModelError, Problem
    bodies = [b.name for b in model.spec.bodies]
    if body not in bodies:
        from dynamica.generator.spec import expr as ex
        raise ModelError(model.spec.file, [Problem(f"frame({body!r})", f"no body named {body!r}"
                                                   f"{ex.did_you_mean(str(body), bodies)}; the bodies are "
                                                   f"{', '.join(bodies)}")])
    at = (0.0, 0.0, 0.0) if at is None else tuple(float(x) for x in at)
    if len(at) != 3 or not all(np.isfinite(at)):
        raise ModelError(model.spec.file, [Problem(f"frame({body!r}).at", f"expected 3 finite numbers, found {at}")])
    key = ("frames", body, at)
    cached = model.companions.get(key)
    if cached is None:
        cached = model.companions[key] = Frame(_load_module(model, body, at), model, body, at)
    return cached


def _load_module(model, body, at):
    from dynamica.build import cache_root, compile_bundle, import_extension, tool_fingerprint
    from dynamica.runtime.api import index_path, indexed_extension, write_index
    cache = cache_root()
    digest = hashlib.sha256(b"\0".join([tool_fingerprint().encode(), repr(model.spec).encode(), b"frames",
                                        body.encode(), repr(at).encode()])).hexdigest()
    idx = index_path(cache, digest)
    so = indexed_extension(idx)
    if so is None:
        from dynamica.generator.kinds.frames import generate_frame
        bundle = generate_frame(model.spec, body, at)
        so = compile_bundle(bundle, cache=cache, meta={"model": model.spec.name, "form": "frames", "mode": "symbolic"})
        write_index(idx, {"entry": so.parent.name, "file": so.name, "extension": str(so),
                           "signature": bundle.signature, "model": model.spec.name, "form": "frames"})
    return import_extension(so)
