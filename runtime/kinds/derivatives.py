"""The derivatives of a model's equations: a compiled module of its own.

`derivatives(model)` generates (generator/kinds/derivatives.py), compiles and caches the model's
derivatives module on first use, with the backend of the model's module, whatever its form
and mode, and keeps it on the model: by default (`default_variant`) the analytical recursive derivatives
(generator/kinds/derivatives_recursive.py) up to RECURSIVE_MAX_COORDINATES coordinates, else the tape
(generator/ir/tangent.py tape_kernel); the unrolled tangent program on request. What it computes
(r = M(q) q'' - Q(t, q, q') is the residual of the equations of motion, J = [dr/dq | dr/dq'] at fixed q''):

    d.residual(q, qd, qdd)          r
    d.residual_jacobian(q, qd, qdd) (r, dr/dq, dr/dqd)
    d.mass_matrix(q)                M
    d.qdd(q, qd)                    q'' = -M^-1 r(q, q', 0)
    d.qdd_jacobian(q, qd)           (q'', dq''/dq, dq''/dqd) = -M^-1 J at q''
    d.qdd_derivatives(q, qd, u)     {"qdd", "qdd_q", "qdd_qd", "qdd_u", "qdd_tau", "Minv"}: the above,
                                    dq''/du of the inputs and dq''/dtau = M^-1 of generalized
                                    forces, M^-1 from the same factors of M
    d.state_jacobian(t, y)          d[q', q'']/d[q, q'], the Jacobian implicit integrators use
    d.force_jacobian(q, qd)         (Q, dQ/dq, dQ/dqd): the active and inertial forces at q'' = 0

All arguments take `t=0.0, params=None` as the model's entries do.
"""

from __future__ import annotations

import dataclasses
import hashlib
from pathlib import Path

import numpy as np


def _input_vector(model, u, nu):
    """The inputs u (a mapping name -> value or a sequence in the model's order; default 0) as an array."""
    from dynamica.runtime.inputs import input_vector
    v = input_vector(model, u, "u")
    return np.zeros(nu) if v is None else v


class Derivatives:
    """A compiled derivatives module with the named coordinates and parameters of its model."""

    def __init__(self, module, model):
        self.module = module
        self.model = model
        self.n = int(module.N)
        self.coordinates = tuple(module.COORDINATES)
        if self.coordinates != tuple(model.coordinates):
            raise RuntimeError(f"internal error: the derivatives module of {model.name!r} has the coordinates "
                               f"{self.coordinates}, the model {model.coordinates}")

    def __repr__(self):
        return f"<dynamica derivatives of {self.model.name!r} n={self.n} backend={self.module.BACKEND!r}>"

    def _state(self, q, qd=None):
        m = self.model
        q = m.as_vector(q, "q")
        qd = np.zeros(self.n) if qd is None else m.as_vector(qd, "qd")
        return q, qd

    def _p(self, params=None, s=None, u=None) -> np.ndarray:
        """p with the extra states s and the inputs u (held) in their slots (default 0)."""
        from dynamica.runtime.inputs import input_mapping
        return self.model.param_vector(params, inputs=input_mapping(self.model, u, "u"), s=s)

    def residual(self, q, qd, qdd, t=0.0, params=None, s=None, u=None) -> np.ndarray:
        q, qd = self._state(q, qd)
        out = np.empty(self.n)
        self.module.residual(float(t), q, qd, self.model.as_vector(qdd, "qdd"), self._p(params, s, u), out)
        return out

    def residual_jacobian(self, q, qd, qdd, t=0.0, params=None, s=None, u=None):
        """(r, dr/dq, dr/dqd) at fixed q'' (and fixed extra states s and inputs u, default 0)."""
        q, qd = self._state(q, qd)
        r, J = np.empty(self.n), np.empty(2 * self.n * self.n)
        self.module.residual_jacobian(float(t), q, qd, self.model.as_vector(qdd, "qdd"), self._p(params, s, u), r, J)
        J = J.reshape(self.n, 2 * self.n)
        return r, J[:, :self.n].copy(), J[:, self.n:].copy()

    def force_jacobian(self, q, qd=None, t=0.0, params=None, s=None, u=None):
        """(Q, dQ/dq, dQ/dqd) of the generalized forces Q = -r(q, q', 0) (active, gravity, velocity terms)."""
        r, K, C = self.residual_jacobian(q, qd, np.zeros(self.n), t, params, s, u)
        return -r, -K, -C

    def signal_jacobian(self, q, qd, qdd, s=None, u=None, t=0.0, params=None) -> dict:
        """A model with extra states or inputs: the residual r(q, q', q'', s, u) and the
        states' rates s'(q, q', s, u) with their Jacobians, as {"r", "r_q", "r_qd", "r_s", "r_u",
        "sd", "sd_q", "sd_qd", "sd_s", "sd_u"} (s, u default 0)."""
        m, n = self.model, self.n
        k, nu = len(m.states), len(m.spec.inputs)
        q, qd = self._state(q, qd)
        args = [float(t), q, qd, m.as_vector(qdd, "qdd")]
        sig = ([m.as_vector(np.zeros(k) if s is None else s, "s", k)] if k else []) + \
              ([_input_vector(m, u, nu)] if nu else [])
        p = self._p(params)
        D = 2 * n + k + nu
        cuts = np.cumsum([n, n, k])

        def split(prefix, J, rows):
            return dict(zip((f"{prefix}_q", f"{prefix}_qd", f"{prefix}_s", f"{prefix}_u"),
                            np.split(J.reshape(rows, D), cuts, axis=1)))
        r, J = np.empty(n), np.empty(n * D)
        self.module.residual_jacobian_full(*args, *sig, p, r, J)
        out = {"r": r, **split("r", J, n)}
        if k:
            sd, G = np.empty(k), np.empty(k * D)
            self.module.state_rates_jacobian(*args[:3], *sig, p, sd, G)
            out.update({"sd": sd, **split("sd", G, k)})
        return out

    def first_order(self, q, qd, s=None, u=None, t=0.0, params=None) -> dict:
        """A model with extra states or inputs: x' = f(x, u) over x = [q, q', s] linearised,
        {"A": df/dx, "B": df/du (None without inputs), "M", "qdd", "J": signal_jacobian at q''}
        (runtime/analysis/linear.py's module docstring has the blocks)."""
        import scipy.linalg as sla
        n, k, m = self.n, len(self.model.states), len(self.model.spec.inputs)
        M = self.mass_matrix(q, t, params)
        lu = sla.lu_factor(M)
        qdd = -sla.lu_solve(lu, self.residual(q, qd, np.zeros(n), t, params, s, u))
        J = self.signal_jacobian(q, qd, qdd, s, u, t, params)
        rows = [np.hstack([np.zeros((n, n)), np.eye(n), np.zeros((n, k))]),
                -sla.lu_solve(lu, np.hstack([J["r_q"], J["r_qd"], J["r_s"]]))]
        B = [np.zeros((n, m)), -sla.lu_solve(lu, J["r_u"])]
        if k:
            rows.append(np.hstack([J["sd_q"], J["sd_qd"], J["sd_s"]]))
            B.append(J["sd_u"])
        return {"A": np.vstack(rows), "B": np.vstack(B) if m else None, "M": M, "qdd": qdd, "J": J}

    def constraint_force_jacobian(self, q, lam, x=None, t=0.0, params=None):
        """A model with closed loops: (g, dg/dq, c, dc/dq) of g = Phi_q^T lam (the generalized forces
        of the multipliers) and c = Phi_q x at fixed lam and x (default 0): the curvature of the
        constraints weighted by the multipliers, and along x."""
        n = self.n
        q = self.model.as_vector(q, "q")
        lam = np.ascontiguousarray(lam, dtype=float)
        m = len(lam)
        x = np.zeros(n) if x is None else self.model.as_vector(x, "x")
        g, c, J = np.empty(n), np.empty(m), np.empty((n + m) * n)
        self.module.con_force_jacobian(float(t), q, lam, x, self.model.param_vector(params), g, c, J)
        J = J.reshape(n + m, n)
        return g, J[:n].copy(), c, J[n:].copy()

    def mass_matrix(self, q, t=0.0, params=None) -> np.ndarray:
        out = np.empty(self.n * self.n)
        self.module.mass_matrix(float(t), self.model.as_vector(q, "q"), self.model.param_vector(params), out)
        return out.reshape(self.n, self.n)

    def qdd(self, q, qd, t=0.0, params=None, s=None, u=None) -> np.ndarray:
        q, qd = self._state(q, qd)
        out = np.empty(self.n)
        self.module.qdd(float(t), q, qd, self._p(params, s, u), out)
        return out

    def qdd_jacobian(self, q, qd, t=0.0, params=None, s=None, u=None):
        """(q'', dq''/dq, dq''/dqd) (at fixed extra states s and inputs u, default 0)."""
        q, qd = self._state(q, qd)
        qdd, J = np.empty(self.n), np.empty(2 * self.n * self.n)
        self.module.qdd_jacobian(float(t), q, qd, self._p(params, s, u), qdd, J)
        J = J.reshape(self.n, 2 * self.n)
        return qdd, J[:, :self.n].copy(), J[:, self.n:].copy()

    def qdd_derivatives(self, q, qd, u=None, t=0.0, params=None, s=None) -> dict:
        """q'' and its derivatives at (q, q') with the inputs u (a sequence in the order of
        `model.inputs`, or name -> value; default 0) and extra states s held:
        {"qdd", "qdd_q", "qdd_qd", "qdd_u" (n x m, m inputs; n x 0 without), "qdd_tau", "Minv"}.
        qdd_tau = dq''/dtau = M^-1 is the derivative by a generalized force on each coordinate
        (a URDF or MJCF robot's joint torques tau_<joint>: the columns of their coordinates).
        The factors of M that give dq''/d[q, q'] give M^-1 (one factorisation; Pinocchio's
        computeABADerivatives returns the same three and M^-1); dq''/du = -M^-1 dr/du, dr/du by
        the tangent of the residual in u alone."""
        m = self.model
        n, nu = self.n, len(m.inputs)
        if isinstance(u, dict):
            unknown = [k for k in u if k not in m.inputs]
            if unknown:
                raise ValueError(f"{', '.join(map(repr, unknown))} not inputs of the model; its inputs are "
                                 f"{', '.join(m.inputs) or 'none'}")
            u = [u.get(name, 0.0) for name in m.inputs]
        uv = m.as_vector(np.zeros(nu) if u is None else u, "u", nu) if nu else np.zeros(0)
        q, qd = self._state(q, qd)
        p = self._p(params, s, uv if nu else None)
        qdd, J, Minv = np.empty(n), np.empty(2 * n * n), np.empty(n * n)
        self.module.qdd_derivatives(float(t), q, qd, p, qdd, J, Minv)
        J, Minv = J.reshape(n, 2 * n), Minv.reshape(n, n)
        if nu:
            r, Ju = np.empty(n), np.empty(n * nu)
            self.module.residual_input_jacobian(float(t), q, qd, qdd, uv, p, r, Ju)
            Bu = -Minv @ Ju.reshape(n, nu)
        else:
            Bu = np.zeros((n, 0))
        return {"qdd": qdd, "qdd_q": J[:, :n].copy(), "qdd_qd": J[:, n:].copy(), "qdd_u": Bu, "qdd_tau": Minv,
                "Minv": Minv}

    def state_jacobian(self, t, y, params=None) -> np.ndarray:
        """d y'/d y of the integrators' state (with extra states: over [q, q', s], inputs 0)."""
        if self.model.states:
            return self.jacobian_function(params)(t, self.model.as_vector(y, "y", self.model.state_size))
        out = np.empty(4 * self.n * self.n)
        self.module.jacobian(float(t), self.model.as_vector(y, "y", 2 * self.n), self.model.param_vector(params), out)
        return out.reshape(2 * self.n, 2 * self.n)

    def jacobian_function(self, params=None):
        """A fast `jac(t, y)` for scipy's implicit integrators (parameters bound once); with extra
        states (and no inputs), over y = [q, q', s] from the signal kernels."""
        if self.model.states:
            n = self.n
            return lambda t, y: self.first_order(y[:n], y[n:2 * n], y[2 * n:], None, t, params)["A"]
        p = self.model.param_vector(params)
        jac, n2 = self.module.jacobian, 2 * self.n

        def f(t, y):
            out = np.empty(n2 * n2)
            jac(float(t), np.ascontiguousarray(y, dtype=float), p, out)
            return out.reshape(n2, n2)
        return f


#: the recursive variant (analytical derivatives, generator/kinds/derivatives_recursive.py) is the
#: default up to this many coordinates: its qdd_jacobian (q'', M's factors and J from one kernel)
#: is the fastest of the three from 2 coordinates on (us per call from Python, 1-DOF chains of
#: benchmarks/bench_derivatives.py, benchmarks/results/derivatives.txt, quiet machine, the
#: AVX2 solves of dynamica_linalg.h; first build s):
#:   N   unrolled   recursive   tape      recursive gen + cc   tape gen + cc
#:   2     0.46       0.42       1.01
#:   3     0.82       0.66       2.24
#:   5     2.09       1.30       4.79
#:  10     7.28       3.00      13.22
#:  20    33.1        8.86      42.6        3.7 + 7.0           0.8 + 2.3
#:  30      -        19.0       91.6        7.2 + 12.1          1.3 + 2.4
#:  40      -        36.5      161.1       11.8 + 20.0          1.8 + 2.9
#: and on the bundled models (qdd_jacobian, us, unrolled / recursive, before those solves): star 2.63 / 2.02,
#: chain7 2.77 / 2.04, spherical_chain 2.96 / 2.18, forces_demo 0.69 / 0.61, double_pendulum
#: 0.37 / 0.33, governor 0.73 / 0.95 (its tangent is small: 4 coordinates on a shallow tree).
#: Above 30 coordinates its first build (20-30 s at 30 and 40) outweighs the evaluation for
#: one-off analyses, and the tape (O(n) code: a 100-body chain builds in 10 s,
#: benchmarks/results/modes.txt) is the default.
#: Above 30 coordinates "recursive_loops" (the same formulas, the pairs of coordinates in loops,
#: generated code O(n)) replaces the tape on the C backend: benchmarks/results/derivatives_scale.txt,
#: qdd_jacobian over pin.computeABADerivatives interleaved in one run (load average 8-12 on 2 cores):
#: 0.77 at N = 50, 0.76 at N = 100 (the tape 5.96 at N = 50 in a run under the same load).
#: Above 30 coordinates "numeric" (the same formulas as loops over numeric mode's generated per-joint
#: terms) replaces "recursive_loops": benchmarks/results/derivatives_numeric.txt, runs with
#: Pinocchio interleaved on a machine at load average 4-15 on 2 cores (qdd_jacobian over
#: computeABADerivatives; first build, generation + compile s):
#:   N    numeric            recursive_loops
#:  25    1.17 (0.5 + 6.7)   1.12 (11.8 + 16.9)     q'' and J from two evaluations (first version)
#:  50    0.69 (0.6 + 10.7)  0.74 (42.2 + 53.1)     same run, load 4.5-5.6
#:  25    0.52 (2.1 + 23.8)                         one evaluation (dyn_nd_solve_jacobian), load 12-16
#:  50    0.53 (2.5 + 17.0)
#: 100    1.20 (2.1 + 20.8)
#: and a 50-body chain's first build through `derivatives` 2.3 s at load 1.2. Below 31 coordinates
#: "numeric" was not measured against "recursive"; that limit stays.
#: The unrolled tangent (on request) grows as n^2 x depth: a 20-body chain's has 115 000
#: operations and compiles in 15-70 s, a 40-body chain's 460 000 and takes minutes.
RECURSIVE_MAX_COORDINATES = 30


#: the default variant -> the one it falls back to for a model it does not take (VariantUnsupported:
#: "numeric" takes no loops, driven motions, extra states or inputs; the analytical variants no
#: `rotation_armature`); "tape" takes every model
FALLBACKS = {"numeric": "recursive_loops", "recursive_loops": "tape", "recursive": "tape"}
#: the companions' key of the default's fallback
FALLBACK = "default:fallback"


def default_variant(model) -> str:
    """"recursive" up to RECURSIVE_MAX_COORDINATES coordinates, else "numeric" (its loops are C:
    "tape" for a model of the Fortran backend; `derivatives` falls back to "recursive_loops" for a
    model "numeric" does not take)."""
    if model.n <= RECURSIVE_MAX_COORDINATES:
        return "recursive"
    backend = getattr(getattr(model, "module", None), "BACKEND", "c")
    return "numeric" if backend == "c" else "tape"


def derivatives(model, variant=None, progress=None) -> Derivatives:
    """The derivatives module of a compiled model, built (or fetched from the cache) on first use.
    variant: "unrolled" (the tangent program), "tape" (partials generated, tangents carried by a
    loop), "recursive" (analytical recursive derivatives), "recursive_loops" (the same, the pairs of
    coordinates in loops), "numeric" (the same as loops over numeric mode's per-joint terms), None:
    `default_variant(model)`."""
    from dynamica.generator.kinds.derivatives import VARIANTS
    chosen = variant is None
    variant = variant or default_variant(model)
    if variant not in VARIANTS:
        raise ValueError(f"unknown derivatives variant {variant!r}; available: {', '.join(VARIANTS)}")
    backend = getattr(model.module, "BACKEND", "c")
    if backend not in VARIANTS[variant].backends:
        raise ValueError(f"the derivatives variant {variant!r} has no {backend!r} backend; it has "
                         f"{', '.join(VARIANTS[variant].backends)}")
    cached = model.companions.setdefault("derivatives", {})
    if chosen and FALLBACK in cached:
        return cached[FALLBACK]
    if variant not in cached:
        try:
            cached[variant] = Derivatives(_load_module(model, variant, progress), model)
        except Exception as e:
            from dynamica.generator.kinds.derivatives import VariantUnsupported
            if not (isinstance(e, VariantUnsupported) and chosen):
                raise
            cached[FALLBACK] = _fallback(model, FALLBACKS[variant], progress)
            return cached[FALLBACK]
    return cached[variant]


def _fallback(model, variant, progress) -> Derivatives:
    """The derivatives of the first variant along FALLBACKS from `variant` that takes the model."""
    from dynamica.generator.kinds.derivatives import VariantUnsupported
    try:
        return derivatives(model, variant, progress)
    except VariantUnsupported:
        if variant not in FALLBACKS:
            raise
        return _fallback(model, FALLBACKS[variant], progress)


def _load_module(model, variant, progress):
    from dynamica.build import cache_root, compile_bundle, import_extension, tool_fingerprint
    from dynamica.runtime.api import index_path, indexed_extension, write_index
    backend = getattr(model.module, "BACKEND", "c")
    # keyed by the model's content, not its file: a stage's structure shares its model's file
    parts = [tool_fingerprint().encode(), repr(dataclasses.replace(model.spec, file="")).encode(), b"derivatives",
             backend.encode(), variant.encode()]
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()
    cache = Path(model.cache) if getattr(model, "cache", None) else cache_root()
    idx = index_path(cache, key) if key else None
    so = indexed_extension(idx) if idx else None
    if so is not None:
        try:
            return import_extension(so)
        except Exception:               # pruned between finding and loading it: build again
            pass
    from dynamica.generator.pipeline import generate_derivatives
    gen = generate_derivatives(model.spec, backend=backend, progress=progress, variant=variant)
    from dynamica.generator.kinds.derivatives import VARIANTS
    mode = VARIANTS[variant].mode
    so = compile_bundle(gen.bundle, cache=cache, progress=progress,
                        meta={"model": model.spec.name, "form": "derivatives", "mode": mode,
                              **({"stage_of": model.stage_of} if getattr(model, "stage_of", None) else {})})
    if idx is not None:
        write_index(idx, {"entry": so.parent.name, "file": so.name, "extension": str(so),
                           "signature": gen.module_ir.signature, "model": model.spec.name,
                           "form": "derivatives", "mode": mode})
    return import_extension(so)
