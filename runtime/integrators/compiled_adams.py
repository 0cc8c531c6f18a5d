"""Compiled Adams integration loop (runtime/native/adams_core.pyx) and its Python entry point.

``solve(model_or_capsule, t_span, ...)`` integrates with the Shampine-Gordon Adams PECE method
(the step of runtime/native/adams_core.pyx, which ``runtime.adams.Adams`` drives one step at a time) with
the whole step loop compiled: when the right-hand side is a generated model's ``rhs_capsule`` (a
PyCapsule b"dynamica.rhs" holding ``void rhs(double t, const double *y, const double *p, double
*ydot)``) no Python runs per step and the GIL is released.  A Python callable ``f(t, y)`` is
accepted too (same numbers, slower).  Events (``g(t, y)`` once per accepted step, roots by brentq
on the Adams interpolant) and a dense solution over the whole interval (interpolants recorded in
C) as in ``solve_ivp``.

The Cython source is compiled at install time (setup.py; `build.compiled_helper` rebuilds it into
the cache when the installed extension is missing or stale).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np

from dynamica.errors import IntegrationError

__all__ = ["core", "solve", "CompiledAdamsResult"]


def core():
    """The compiled ``adams_core`` module (built at install time; build.compiled_helper)."""
    from dynamica.build import compiled_helper
    return compiled_helper("adams_core")


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
    t_events: list | None = None      #: per event, the times found (None without events)
    y_events: list | None = None      #: per event, the states there, shape (count, n)
    sol: object = field(repr=False, default=None)   #: AdamsSolution with dense_output=True
    status: int = 0                   #: 0 reached the end of t_span, 1 a terminal event
    message: str = ""


def resolve_rhs(model_or_capsule, y0, params_array, use_capsule):
    """(f, y0, p) from a compiled model, a capsule or a Python callable."""
    obj = model_or_capsule
    module = getattr(obj, "module", None)
    if module is not None and hasattr(module, "rhs_capsule"):
        p = obj.param_vector() if params_array is None else np.ascontiguousarray(params_array, dtype=float)
        if p.shape != (int(module.NP),):
            raise ValueError(f"params_array has shape {p.shape}, the model expects ({int(module.NP)},)")
        size = getattr(obj, "state_size", 2 * obj.n)
        if y0 is None:
            y0 = obj.to_state(*obj.initial_state())
        elif isinstance(y0, tuple) and len(y0) == 2:
            y0 = np.concatenate([np.asarray(y0[0], dtype=float), np.asarray(y0[1], dtype=float)])
        y0 = np.asarray(y0, dtype=float).reshape(-1)
        if y0.shape[0] != size:
            raise ValueError(f"y0 has length {y0.shape[0]}, expected {size} (q then qd"
                             + (", then the extra states)" if size > 2 * obj.n else ")"))
        if use_capsule:
            return module.rhs_capsule, y0, p
        return _bound_rhs(module, p, size), y0, p        # the module's Python-level rhs
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


def status_error(code, info, rtol, atol, max_steps=None):
    """The exception for a failure status of the compiled core (None for OK)."""
    mod = core()
    rmax, amax = float(np.max(rtol)), float(np.max(atol))
    if code == mod.OK:
        return None
    if code == mod.NONFINITE:
        return IntegrationError(
            f"right-hand side returned {info['value']} in component {info['component']} (of "
            f"{info['nbad']} non-finite) at t = {info['bad_t']!r} with step size h = {info['bad_h']!r}")
    if code == mod.CRASH_TOL:
        fct = info["eps_factor"]
        return IntegrationError(
            f"requested accuracy is below what round-off allows at t = {info['t']!r}: "
            f"use rtol >= {fct * rmax:.3g} (and atol >= {fct * amax:.3g}), suggested rtol = {fct * rmax:.3g}")
    if code == mod.CRASH_STEP:
        return IntegrationError(
            f"step size {abs(info['h']):.3g} too small at t = {info['t']!r} (below 4u|t|); "
            f"requested accuracy too high or a singularity: suggested rtol = {info['eps_factor'] * rmax:.3g}"
            + _stiff_note(info))
    if code == mod.MAXSTEPS:
        return IntegrationError(f"more than max_steps = {max_steps} steps (reached t = {info['t']!r})"
                                + _stiff_note(info))
    if code == mod.WTZERO:
        return IntegrationError(f"pure relative error test impossible: component {info['component']} "
                                f"is zero with atol = 0 at t = {info['t']!r}")
    if code == mod.STIFF:
        from dynamica.runtime.integrators.adams import (
            StiffnessError,  # (here: runtime/integrators/adams.py imports scipy)
        )
        return StiffnessError(_stiff_message(info))
    if code == mod.NOMEM:
        return MemoryError("compiled Adams: out of memory for the dense output")
    return IntegrationError(f"compiled Adams failed: {mod.STATUS_NAMES[code]}")


def _stiff_message(info):
    return (f"problem appears stiff: use method='radau' (from t = {info['stiff_t']!r} on, 50 or more "
            f"steps at order <= 4 had a step size limited by stability, h |lambda| near the "
            f"stability boundary; t = {info['t']!r}, step size {abs(info['hold']):.3g}, "
            f"{info['nsteps']} steps, {info['nfev']} evaluations)")


def _stiff_note(info):
    """The stiffness diagnosis appended to a failure after a detection."""
    if not info.get("nstiff"):
        return ""
    return f"; the problem appeared stiff from t = {info['stiff_t']!r} on: use method='radau'"


def warn_stiff(info, on_stiff, stacklevel=3):
    """A StiffnessWarning when the core's `info` counts stiffness detections and `on_stiff` is "warn"."""
    if info["nstiff"] and on_stiff == "warn":
        from dynamica.runtime.integrators.adams import (
            StiffnessWarning,  # (here: runtime/integrators/adams.py imports scipy)
        )
        warnings.warn(f"{_stiff_message(info)} [{info['nstiff']} detection(s)]", StiffnessWarning,
                      stacklevel=stacklevel)


def check_status(st, code, rtol, atol, max_steps, on_stiff="ignore"):
    """After a call of the core's Stepper `st` that returned `code`: nothing when it is OK, the
    stiffness warning (`on_stiff`), else the exception of `status_error`."""
    if code == 0:
        return
    if code != core().STIFF:
        warn_stiff(st.info(), on_stiff, stacklevel=4)
    if code == core().PYERR:
        err = st.pop_error()
        if err is not None:
            raise err
    exc = status_error(code, st.info(), rtol, atol, max_steps)
    if exc is not None:
        raise exc


def prepare_events(events):
    """(events, max_events, direction) with scipy's conventions (``terminal``: bool or a count)."""
    if callable(events):
        events = (events,)
    events = tuple(events)
    max_events = np.empty(len(events))
    direction = np.empty(len(events))
    for i, ev in enumerate(events):
        if not callable(ev):
            raise TypeError(f"event {i} is not callable")
        terminal = getattr(ev, "terminal", None)
        direction[i] = getattr(ev, "direction", 0)
        if terminal is None or terminal == 0:
            max_events[i] = np.inf
        elif int(terminal) == terminal and terminal > 0:
            max_events[i] = terminal
        else:
            raise ValueError("The `terminal` attribute of each event must be a boolean or positive integer.")
    return events, max_events, direction


def active_events(g, g_new, direction):
    """Indices of the events whose function changed sign (or reached zero) over the step
    (solve_ivp's rule; plain Python: there are few events and this runs once per step)."""
    out = []
    for i, (a, b, d) in enumerate(zip(g, g_new, direction)):
        up = a <= 0 <= b
        down = a >= 0 >= b
        if (up and d > 0) or (down and d < 0) or ((up or down) and d == 0):
            out.append(i)
    return out


_EPS = float(np.finfo(float).eps)


def _output_times(t_eval, t0: float, tb: float):
    """(tv, d): the output times (default: the end point) checked to lie in [t0, tb] and to be
    monotone, and the direction of integration d = +-1."""
    tv = np.array([tb]) if t_eval is None else np.array(t_eval, dtype=float).reshape(-1)
    d = 1.0 if tb >= t0 else -1.0
    if np.any(d * (tv - t0) < 0) or np.any(d * (tv - tb) > 0):
        raise ValueError(f"t_eval must lie within t_span = [{t0!r}, {tb!r}]")
    if tv.shape[0] > 1 and np.any(d * np.diff(tv) < 0):
        raise ValueError("t_eval must be monotone in the direction of integration")
    return tv, d


class _Events:
    """The user's events of a run, fed each accepted step (or step across) as (t_old, t, y, intrp):
    evaluated at its end, a sign change located by brentq on intrp (see `solve`); returns True
    when a terminal event ends the run (`status` 1 at `t_end`)."""

    def __init__(self, events, t0, y0, d):
        self.events, self.max_events, direction = prepare_events(events)
        self.direction, self.d, self.n = direction.tolist(), d, y0.shape[0]
        self.count = np.zeros(len(self.events))
        self.t_events = [[] for _ in self.events]
        self.y_events = [[] for _ in self.events]
        self.g = [float(ev(t0, y0.copy())) for ev in self.events]
        self.status, self.t_end, self.calls = 0, None, 0

    def __call__(self, t_old, t, y, intrp) -> bool:
        from scipy.optimize import brentq
        self.calls += 1
        events, max_events = self.events, self.max_events
        g_new = [float(ev(t, y if i == 0 else y.copy())) for i, ev in enumerate(events)]
        active = active_events(self.g, g_new, self.direction)
        self.g = g_new
        if not active:
            return False
        active = np.array(active)
        self.count[active] += 1
        roots = np.array([brentq(lambda s, ev=events[e]: ev(s, intrp(s)), t_old, t, xtol=4 * _EPS, rtol=4 * _EPS)
                          for e in active])
        terminate = bool(np.any(self.count[active] >= max_events[active]))
        if terminate:
            order = np.argsort(self.d * roots)
            active, roots = active[order], roots[order]
            last = np.nonzero(self.count[active] >= max_events[active])[0][0]
            active, roots = active[:last + 1], roots[:last + 1]
        for e, te in zip(active, roots):
            self.t_events[e].append(te)
            self.y_events[e].append(intrp(te))
        if terminate:
            self.status, self.t_end = 1, float(roots[-1])
        return terminate

    def results(self):
        return ([np.asarray(te) for te in self.t_events],
                [np.asarray(ye).reshape(-1, self.n) for ye in self.y_events])


def _run_with_events(st, driver, events, tv, Y, j, t0, y0, d, check):
    """The run one accepted step at a time with the events (`_Events`); a driver that steps
    across singular configurations feeds them its steps and steps across itself (its
    ``on_step``). check(code) raises on a failed step. Returns (j, status, t_end, t_events,
    y_events)."""
    ev = _Events(events, t0, y0, d)
    if driver is not st:
        driver.on_step = ev
    while not st.done:
        before, calls = st.nsteps, ev.calls
        code, j = driver.run(tv, Y, j, 1)
        if code:
            check(code)
        if ev.status or st.nsteps == before:           # ended by an event, or by extrapolation within 4u|t|
            break
        if ev.calls == calls and ev(st.t_old, st.t, st.y, st.intrp):
            break
    return (j, ev.status, ev.t_end, *ev.results())


def stepper(model, f, p, t0, y0, tb, rtol, atol, *, first_step=None, max_step=np.inf, max_steps=500_000,
            stiff_raise=False, dense=False, project=None, project_tol=1e-12, params=None, step_across=True,
            own_project=True):
    """(st, driver): the core's Stepper for the right-hand side f (from `resolve_rhs`) and what runs
    it, ``driver.run(tv, Y, j, nmax)`` as ``Stepper.run``: the Stepper itself, or for a closed-loop
    model (its own projection; `step_across`) the step across its singular configurations
    (runtime/integrators/adams_across.py) on the module's right-hand side and projection without
    the weak rows' treatment (``rhs_strict_capsule``, ``project_strict_capsule``). `own_project`
    False: no projection but `project` (f is not the module's capsule)."""
    module = getattr(model, "module", None) if own_project else None
    across = step_across and project is None and hasattr(module, "watch_capsule") and tb >= t0   # (forward runs)
    if across:
        f, project = module.rhs_strict_capsule, module.project_strict_capsule
    elif project is None and hasattr(module, "project_capsule"):
        project = module.project_capsule
    st = core().Stepper(f, t0, y0, tb, p, rtol, atol, first_step, float(max_step), int(max_steps),
                        bool(stiff_raise), bool(dense), project, float(project_tol))
    if not across:
        return st, st
    from dynamica.runtime.integrators.adams_across import Across
    return st, Across(model, params, st, t0, y0, max_step, rtol, atol)


def solve(model_or_capsule, t_span, y0=None, t_eval=None, params_array=None, rtol=1e-6, atol=1e-6,
          max_steps=500_000, first_step=None, max_step=np.inf, on_stiff="warn", use_capsule=True,
          events=None, dense_output=False, project=None, project_tol=1e-12, params=None, step_across=True):
    """Integrate with the compiled Adams loop; return a :class:`CompiledAdamsResult`.

    model_or_capsule : a compiled model (``dynamica.load``; its ``rhs_capsule`` and default
        parameters are used; ``use_capsule=False`` runs its Python ``rhs`` instead), a PyCapsule
        b"dynamica.rhs" (then ``params_array`` must be the model's flat parameter array), or a
        Python callable ``f(t, y)``.
    t_span : (t0, t_bound).  t_eval : output times in t_span (default: the end point only, i.e.
        t_bound or the time of a terminal event).
    rtol, atol : scalars or per-component arrays (weights ``rtol |y| + atol``, as Adams).
    on_stiff : what the stiffness test (docs/adams.md) does when it fires: "warn" (default; a
        :class:`~dynamica.runtime.integrators.adams.StiffnessWarning` at the end, or before the error of a
        run that then fails, whose message also says it), "raise"
        (:class:`~dynamica.runtime.integrators.adams.StiffnessError` at once) or "ignore".
    first_step, max_step : upper bounds of the first and of every step; the steps taken are
        at most 0.9024 times them, so that capped steps do not land on round values.
    events : callables ``g(t, y)`` (or one), with scipy's optional attributes ``terminal``
        (bool or a count) and ``direction``.  Each is evaluated once per accepted step (at its
        end); a sign change is located by ``scipy.optimize.brentq`` (xtol = rtol = 4u, as
        solve_ivp) on the Adams interpolant of that step.  Result: ``t_events``, ``y_events``
        (lists of arrays, one per event); a terminal event ends the integration there
        (``status`` 1), outputs after it are dropped.  Without events the whole loop runs in C.
    dense_output : also return ``sol``, a callable solution on the whole interval built from
        every step's interpolant (recorded in C, no Python per step).
    project : a PyCapsule b"dynamica.project" (a closed-loop model's ``project_capsule``): after
        every accepted step the state is moved back onto the constraint manifolds, positions to
        ``project_tol`` (max norm of the residual), then velocities (docs/loops.md). A model with
        closed loops gets its own by default.
    step_across : for a closed-loop model with its own projection, step across the
        singular configurations of its loops (runtime/integrators/adams_across.py; ``params``: the
        model's parameter overrides, as in ``simulate``); ``info["singular_passages"]`` lists them
        (`stepper`).
    Raises :class:`~dynamica.errors.IntegrationError` on failure (non-finite RHS, tolerance
    below round-off, step size too small, too many steps).
    """
    if on_stiff not in ("raise", "warn", "ignore"):
        raise ValueError("on_stiff must be 'raise', 'warn' or 'ignore'")
    t0, tb = float(t_span[0]), float(t_span[1])
    f, y0, p = resolve_rhs(model_or_capsule, y0, params_array, use_capsule)
    default_out = t_eval is None
    tv, d = _output_times(t_eval, t0, tb)
    m = tv.shape[0]
    st, driver = stepper(model_or_capsule, f, p, t0, y0, tb, rtol, atol, first_step=first_step,
                         max_step=max_step, max_steps=max_steps, stiff_raise=on_stiff == "raise",
                         dense=dense_output, project=project, project_tol=project_tol, params=params,
                         step_across=step_across, own_project=use_capsule)
    n = y0.shape[0]
    Y = np.full((m, n), np.nan)
    j = 0
    while j < m and tv[j] == t0:                        # outputs at t0 are y0 itself
        Y[j] = y0
        j += 1
    check_status(st, st.begin(), rtol, atol, max_steps, on_stiff)

    status, t_end, t_events, y_events = 0, None, None, None
    if events is None:
        code, j = driver.run(tv, Y, j, int(max_steps) + 1)
        check_status(st, code, rtol, atol, max_steps, on_stiff)
    else:
        j, status, t_end, t_events, y_events = _run_with_events(
            st, driver, events, tv, Y, j, t0, y0, d,
            lambda code: check_status(st, code, rtol, atol, max_steps, on_stiff))
    if status == 1:
        if default_out:
            tv, Y, j = np.array([t_end]), driver.intrp(t_end)[None, :], 1
        else:
            j = min(j, int(np.count_nonzero(d * (tv - t_end) <= 0)))
            tv, Y = tv[:j], Y[:j]
    info = st.info()
    warn_stiff(info, on_stiff)
    info.update(status=status, n_out=j)
    if driver is not st:
        info.update(driver.info(), nfev=info["nfev"] + driver.extra_calls)
    sol = st.solution(t_end) if dense_output else None
    return CompiledAdamsResult(t=tv, y=Y.T, nfev=info["nfev"], nsteps=info["nsteps"],
                               nrejected=info["nrejected"], order_histogram=info["order_histogram"],
                               capsule=info["capsule"], info=info, t_events=t_events, y_events=y_events,
                               sol=sol, status=status,
                               message="A termination event occurred." if status == 1
                               else "The solver successfully reached the end of the integration interval.")
