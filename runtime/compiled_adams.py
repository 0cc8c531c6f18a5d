"""Compiled Adams integration loop (runtime/adams_core.pyx) and its Python entry point.

``solve(model_or_capsule, t_span, ...)`` integrates with the Shampine-Gordon Adams PECE method of
runtime/adams.py, but with the whole step loop compiled: when the right-hand side is a generated
model's ``rhs_capsule`` (a PyCapsule b"dynamica.rhs" holding
``void rhs(double t, const double *y, const double *p, double *ydot)``) no Python runs per step
and the GIL is released.  A Python callable ``f(t, y)`` is accepted too (same numbers, slower).

The Cython source is compiled on first use through dynamica's own build (content-addressed
cache, see build.py) and the imported module is kept for the process.
"""

from __future__ import annotations

import threading
import warnings
from dataclasses import dataclass, field
from importlib import resources

import numpy as np

from dynamica.errors import IntegrationError

__all__ = ["core", "solve", "CompiledAdamsResult"]

_CORE = None
_LOCK = threading.Lock()


def core():
    """The compiled ``adams_core`` module (built on first use, then cached)."""
    global _CORE
    if _CORE is None:
        with _LOCK:
            if _CORE is None:
                from dynamica.build import compile_bundle, import_extension
                from dynamica.generator.render import SourceBundle
                text = resources.files("dynamica.runtime").joinpath("adams_core.pyx").read_text()
                bundle = SourceBundle(module_name="adams_core", backend="cython",
                                      files=(("adams_core.pyx", text),), signature="adams_core")
                _CORE = import_extension(compile_bundle(bundle))
    return _CORE


@dataclass
class CompiledAdamsResult:
    """Solution at ``t`` (``y`` has shape (n, len(t))) and the integrator's counters."""

    t: np.ndarray
    y: np.ndarray
    nfev: int
    nsteps: int
    nrejected: int
    order_histogram: list
    capsule: bool
    info: dict = field(repr=False, default_factory=dict)


def _resolve(model_or_capsule, y0, params_array, use_capsule):
    """(f, y0, p) from a compiled model, a capsule or a Python callable."""
    obj = model_or_capsule
    module = getattr(obj, "module", None)
    if module is not None and hasattr(module, "rhs_capsule"):
        p = obj.param_vector() if params_array is None else np.ascontiguousarray(params_array, dtype=float)
        if p.shape != (int(module.NP),):
            raise ValueError(f"params_array has shape {p.shape}, the model expects ({int(module.NP)},)")
        if y0 is None:
            y0 = np.concatenate(obj.initial_state())
        elif isinstance(y0, tuple) and len(y0) == 2:
            y0 = np.concatenate([np.asarray(y0[0], dtype=float), np.asarray(y0[1], dtype=float)])
        y0 = np.asarray(y0, dtype=float).reshape(-1)
        if y0.shape[0] != 2 * obj.n:
            raise ValueError(f"y0 has length {y0.shape[0]}, expected {2 * obj.n} (q then qd)")
        if use_capsule:
            return module.rhs_capsule, y0, p
        return _bound_rhs(module, p, 2 * obj.n), y0, p        # the module's Python-level rhs
    if y0 is None:
        raise ValueError("y0 is required unless a compiled model is given")
    y0 = np.asarray(y0, dtype=float).reshape(-1)
    p = np.zeros(0) if params_array is None else np.ascontiguousarray(params_array, dtype=float)
    return obj, y0, p


def _bound_rhs(module, p, n2):
    rhs = module.rhs

    def f(t, y):
        out = np.empty(n2)
        rhs(float(t), np.ascontiguousarray(y, dtype=float), p, out)
        return out
    return f


def solve(model_or_capsule, t_span, y0=None, t_eval=None, params_array=None, rtol=1e-6, atol=1e-6,
          max_steps=500_000, first_step=None, max_step=np.inf, on_stiff="raise", use_capsule=True):
    """Integrate with the compiled Adams loop; return a :class:`CompiledAdamsResult`.

    model_or_capsule : a compiled model (``dynamica.load``; its ``rhs_capsule`` and default
        parameters are used; ``use_capsule=False`` runs its Python ``rhs`` instead), a PyCapsule
        b"dynamica.rhs" (then ``params_array`` must be the model's flat parameter array), or a
        Python callable ``f(t, y)``.
    t_span : (t0, t_bound).  t_eval : output times in t_span (default: t_bound only).
    rtol, atol : scalars or per-component arrays (weights ``rtol |y| + atol``, as Adams).
    on_stiff : "raise" (:class:`~dynamica.runtime.adams.StiffnessError`), "warn" or "ignore".
    Raises :class:`~dynamica.errors.IntegrationError` on failure (non-finite RHS, tolerance
    below round-off, step size too small, too many steps).
    """
    from dynamica.runtime.adams import StiffnessError, StiffnessWarning
    if on_stiff not in ("raise", "warn", "ignore"):
        raise ValueError("on_stiff must be 'raise', 'warn' or 'ignore'")
    t0, tb = float(t_span[0]), float(t_span[1])
    f, y0, p = _resolve(model_or_capsule, y0, params_array, use_capsule)
    t_eval = np.array([tb]) if t_eval is None else np.asarray(t_eval, dtype=float).reshape(-1)
    mod = core()
    Y, info = mod.integrate(f, t0, y0, t_eval, p, rtol, atol, int(max_steps), tb, first_step,
                            float(max_step), on_stiff == "raise")
    status = info["status"]
    if status == mod.NONFINITE:
        raise IntegrationError(
            f"right-hand side returned {info['value']} in component {info['component']} (of "
            f"{info['nbad']} non-finite) at t = {info['t']!r} with step size h = {info['h']!r}")
    if status == mod.CRASH_TOL:
        fct = info["eps_factor"]
        r, a = fct * np.max(rtol), fct * np.max(atol)
        raise IntegrationError(
            f"requested accuracy is below what round-off allows at t = {info['t']!r}: "
            f"use rtol >= {r:.3g} (and atol >= {a:.3g}), suggested rtol = {r:.3g}")
    if status == mod.CRASH_STEP:
        raise IntegrationError(
            f"step size {abs(info['h']):.3g} too small at t = {info['t']!r} (below 4u|t|); "
            f"requested accuracy too high or a singularity: suggested rtol = "
            f"{info['eps_factor'] * np.max(rtol):.3g}")
    if status == mod.MAXSTEPS:
        raise IntegrationError(f"more than max_steps = {max_steps} steps (reached t = {info['t']!r})")
    if status == mod.WTZERO:
        raise IntegrationError(f"pure relative error test impossible: component {info['component']} "
                               f"is zero with atol = 0 at t = {info['t']!r}")
    if status == mod.STIFF:
        raise StiffnessError(f"problem appears stiff: use method='radau' (Adams stayed at order <= 4 "
                             f"for 50+ consecutive steps; t = {info['t']!r}, {info['nsteps']} steps, "
                             f"{info['nfev']} evaluations)")
    if status != mod.OK:
        raise IntegrationError(f"compiled Adams failed: {info['message']}")
    if info["nstiff"] and on_stiff == "warn":
        warnings.warn(f"problem appears stiff ({info['nstiff']} detection(s)): use method='radau'",
                      StiffnessWarning, stacklevel=2)
    return CompiledAdamsResult(t=t_eval, y=Y, nfev=info["nfev"], nsteps=info["nsteps"],
                               nrejected=info["nrejected"], order_histogram=info["order_histogram"],
                               capsule=info["capsule"], info=info)
