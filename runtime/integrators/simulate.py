"""Simulation: `simulate` and its integrators (docs/api.md, docs/adams.md)."""

from __future__ import annotations

import functools
import math

import numpy as np

from dynamica.generator.spec.integrators import INTEGRATORS as INTEGRATOR_RECORDS
from dynamica.runtime.compiled import CompiledModel
from dynamica.runtime.results.result import SimulationResult


def _output_times(t0, t_end, output_step):
    if not output_step:
        return None
    k = int(np.floor((t_end - t0) / output_step + 1e-9))
    t_eval = np.minimum(t0 + output_step * np.arange(k + 1), t_end)     # t_end - 1e-9 step < last <= t_end
    if t_eval[-1] < t_end - 1e-12 * max(1.0, abs(t_end)):
        t_eval = np.append(t_eval, t_end)
    return t_eval


def simulation_result(model, t, Y, method, nfev, info, message="", params=None, inputs=None):
    """SimulationResult from states Y of shape (len(t), STATE_SIZE) (Hamiltonian states converted
    to (q, qd)); the extra states and the inputs (name -> values per row) join the outputs."""
    n = model.n
    Y, t = np.asarray(Y).reshape(len(t), model.state_size), np.asarray(t)
    q, qd, S = Y[:, :n].copy(), Y[:, n:2 * n].copy(), Y[:, 2 * n:]
    if model.hamiltonian:
        info = {**info, "momenta": qd}
        qd = np.array([model.from_state(y, tk, params)[1] for tk, y in zip(t, Y)]).reshape(len(t), n)
    signals = model.states or model.inputs
    return SimulationResult(t=t, q=q, qd=qd, coordinates=model.coordinates, method=method, nfev=int(nfev),
                            message=message, info=info,
                            outputs=model.output_series(t, q, qd, params, S, inputs)
                            if hasattr(model.module, "outputs") or signals else {})


def _run_adams(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None, jacobian=None):
    """The compiled Adams PECE loop (runtime/native/adams_core.pyx) on the module's C entry point."""
    from dynamica.runtime.integrators.compiled_adams import solve
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    if _locates_contacts(model):
        t, Y, nfev, info = _contact_run(model, t0, t_end, y0, t_eval, rtol, atol, params, events=events)
        return simulation_result(model, t, Y, "adams", nfev, info, params=params)
    res = solve(model, (t0, t_end), y0, t_eval=t_eval, params_array=model.param_vector(params),
                rtol=rtol, atol=atol, events=events, params=params)
    info = {"integrator": "compiled Adams PECE (Shampine-Gordon), orders 1-12", "steps": res.nsteps,
            "rejected": res.nrejected, "order_histogram": res.order_histogram}
    if "singular_passages" in res.info:
        info["singular_passages"] = res.info["singular_passages"]
    if events:
        info.update(t_events=res.t_events, y_events=res.y_events, status=res.status)
    Y = np.asarray(res.y).T
    if model.loops:                  # rows between steps come from the interpolant: onto the constraints too
        Y = np.array(Y, dtype=float)
        _project_rows(model, res.t, Y, params)
    return simulation_result(model, res.t, Y, "adams", res.nfev, info, params=params)


def _locates_contacts(model) -> bool:
    """Whether adams runs the model with its contacts' gaps located (contact_events.py)."""
    from dynamica.runtime.integrators import contact_events
    return (not model.loops and not model.hamiltonian and model.state_size == 2 * model.n
            and bool(contact_events.gap_forces(model)))


def _contact_run(model, t0, t_end, y0, t_eval, rtol, atol, params, events=None, scipy_method=None, jacobian=None):
    """contact_events.solve with the compiled Adams step, or scipy's `scipy_method` stepped."""
    from dynamica.runtime.integrators import contact_events
    steps = None
    if scipy_method is not None:
        jac = _jacobian(model, scipy_method, params, jacobian)
        steps = contact_events.ScipySteps(scipy_method, model.rhs_function(params), rtol, atol,
                                          {"jac": jac} if jac is not None else None)
    return contact_events.solve(model, t0, t_end, y0, t_eval, model.param_vector(params), rtol, atol,
                                steps=steps, events=events)


def _stream_contacts(model, t0, t_end, y0, t_eval, cuts, rtol, atol, params, jacobian=None, scipy_method=None):
    """`_stream_adams` (or a scipy method's stream) of a model with contacts: the run with its
    contacts located, then its rows handed on piece by piece between `cuts` (after the run, not
    as they are reached)."""
    t, Y, nfev, info = _contact_run(model, t0, t_end, y0, t_eval, rtol, atol, params, scipy_method=scipy_method,
                                    jacobian=jacobian)
    for n, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        yield t[a:b + 1], Y[a:b + 1], nfev if n == 0 else 0, info, ""


def _gaps(model) -> bool:
    """Whether the model has contact gaps (contact_events.gap_forces): stoermer6 locates them (ida too)."""
    from dynamica.runtime.integrators import contact_events
    return bool(contact_events.gap_forces(model))


def _stream_whole(run, step, model, t0, t_end, y0, t_eval, cuts, rtol, atol, params, jacobian=None):
    """A run of `run` (stoermer6) with its contacts located, whole, then its rows handed on
    piece by piece between `cuts` (after the run), every piece with the run's info (its contacts)."""
    res = run(model, t0, t_end, y0, t_eval, rtol, atol, params, step, jacobian=jacobian)
    Y = np.hstack([res.q, res.qd])
    for n, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        yield res.t[a:b + 1], Y[a:b + 1], res.nfev if n == 0 else 0, res.info, res.message


def _project_rows(model, t, Y, params):
    """Each row of Y (states [q, qd, ...]) onto the loops' constraints, in place, as after a step."""
    from dynamica.runtime.assembly import PROJECT_ITERATIONS, PROJECT_TOL
    p, opts = model.param_vector(params), np.array([PROJECT_TOL, PROJECT_ITERATIONS], dtype=float)
    n2 = 2 * model.n
    for k in range(len(t)):
        y = np.ascontiguousarray(Y[k, :n2])
        model.module.project(float(t[k]), y, p, opts)
        Y[k, :n2] = y


def _run_stoermer6(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None, jacobian=None):
    """Fixed-step Stoermer-Cowell 6 (runtime/integrators/stoermer.py); rtol/atol are not used. A
    model with contacts is stepped one grid step at a time with its contacts (and `events`) located
    (contact_events.solve with stoermer.StoermerSteps)."""
    contacts = _locates_contacts(model)
    if events and not contacts:
        raise ValueError("stoermer6 locates events only in a model with contacts; use adams or a scipy method")
    from dynamica.runtime.integrators.stoermer import stoermer6_first_order
    h = step or (t_eval[1] - t_eval[0] if t_eval is not None and len(t_eval) > 1 else (t_end - t0) / 1000.0)
    if model.hamiltonian:
        raise ValueError("stoermer6 integrates q'' = f(q, q'): it needs a Lagrangian form, not "
                         f"{model.form!r}")
    if model.states:
        raise ValueError("stoermer6 integrates q'' = f(q, q'): not the extra states of this model (`states:`); "
                         "use adams or a scipy method")
    if contacts:
        from dynamica.runtime.integrators import contact_events
        from dynamica.runtime.integrators.stoermer import StoermerSteps
        steps = StoermerSteps(model.rhs_function(params), t0, t_end, h, model.n)
        tv = np.asarray(t_eval if t_eval is not None else [steps.grid_time(k) for k in range(steps.N + 1)], float)
        t, Y, nfev, info = contact_events.solve(model, t0, t_end, y0, tv, model.param_vector(params), rtol, atol,
                                                steps=steps, events=events)
        return simulation_result(model, t, Y, "stoermer6", nfev, info, params=params)
    t, Y, nfev = stoermer6_first_order(model.rhs_function(params), (t0, t_end), y0, h, t_eval=t_eval)
    return simulation_result(model, t, Y, "stoermer6", nfev,
                             {"integrator": f"Stoermer-Cowell 6 with Adams velocities, step {h}"})


#: scipy's methods that use a Jacobian (their records' option `jacobian`, generator/spec/integrators.py):
#: given the generated one (runtime/kinds/derivatives.py) unless simulate(jacobian="numeric") asks for
#: scipy's finite differences
IMPLICIT = tuple(dict.fromkeys(r.options["method"] for r in INTEGRATOR_RECORDS.values()
                               if r.kind == "scipy" and r.options["jacobian"]))


def _jacobian(model, scipy_method, params, jacobian):
    if jacobian not in (None, "analytic", "numeric"):
        raise ValueError(f"jacobian must be 'analytic' or 'numeric', not {jacobian!r}")
    if scipy_method not in IMPLICIT or jacobian == "numeric" or model.hamiltonian or model.loops or model.spec.inputs:
        return None           # (the derivatives module's Jacobian: state [q, qd, s], no loops, no inputs)
    from dynamica.runtime.kinds.derivatives import derivatives
    return derivatives(model).jacobian_function(params)


#: scipy's one-step methods, which take the projection onto the loops' constraints after each step
#: (a multistep method's history would no longer match the projected state): option `one_step`
ONE_STEP = tuple(dict.fromkeys(r.options["method"] for r in INTEGRATOR_RECORDS.values()
                               if r.kind == "scipy" and r.options["one_step"]))
#: scipy's methods that step over the loops' singular configurations (runtime/integrators/singular.py):
#: option `across`
ACROSS = tuple(dict.fromkeys(r.options["method"] for r in INTEGRATOR_RECORDS.values()
                             if r.kind == "scipy" and r.options.get("across")))


#: consecutive steps of a scipy solver that leave t where it was before the run is stopped: scipy's
#: LSODA, near a solution that grows without bound (x'' = x^3 at t = 1.854 from x = 1), returns
#: success from every step while t no longer moves (200 000 steps measured, t unchanged), which
#: would loop for ever; a step that advances t at all resets the count
STALLED_STEPS = 100
#: the largest relative step of scipy's finite-difference Jacobian (Radau's and BDF's `jac_factor`).
#: scipy multiplies it by 10 at each Jacobian whose column does not change f, without bound: the
#: isosceles slider-crank's slider x (q'' does not depend on it) reached inf after about 300 Jacobians
#: and numpy printed "overflow encountered in multiply" (radau from 1e-6 rad of the dead centre, rtol
#: 1e-10); bounded, the same runs give the same numbers bit for bit, without the warning
JAC_FACTOR_MAX = 0.1


def _finite_lu(solver, model):
    """solver (scipy's), its LU of the iteration matrix (radau's, bdf's: I / h - J) raising an
    IntegrationError that names t and what is not finite, where scipy's lu_factor raises a bare
    ValueError ("array must not contain infs or NaNs"). Seen: radau started exactly at the isosceles
    slider-crank's dead centre (L = 500 m), its Jacobian's columns of der(th1) and der(th2) NaN there."""
    lu = getattr(solver, "lu", None)
    if lu is None:
        return solver

    def checked(A):
        try:
            return lu(A)
        except ValueError as e:
            from dynamica.errors import IntegrationError
            n, J = model.n, getattr(solver, "J", None)
            names = list(model.coordinates) + [f"der({c})" for c in model.coordinates]
            names += [f"state {i}" for i in range(len(names), len(solver.y))]
            bad = [] if J is None else np.nonzero(~np.all(np.isfinite(J), axis=0))[0]
            what = (f"its Jacobian of the right-hand side is not finite in the columns of "
                    f"{', '.join(names[i] for i in bad)}" if len(bad)
                    else f"the step h = {solver.h_abs:.3g} or the state {solver.y[:2 * n]}")
            raise IntegrationError(f"integration failed at t = {solver.t}: {type(solver).__name__}'s iteration "
                                   f"matrix I / h - J is not finite ({what})") from e
    solver.lu = checked
    return solver


class _Stepped:
    """scipy's solver class stepped directly, as solve_ivp does, with its output rows handed on as
    they are reached (`rows()`), so that a run can stream them (progress, out) without restarting.
    For a model with closed loops and a one-step method (ONE_STEP) the state is projected onto
    the constraints after every step (the module's `project`: positions, then velocities, as the
    compiled adams does) and so are the rows; without it the drift grows, and near a singular
    configuration the solution leaves its branch (docs/loops.md)."""

    def __init__(self, model, scipy_method, t0, t_end, y0, t_eval, rtol, atol, params, jacobian, crossings=None,
                 points=None, strict=False):
        import scipy.integrate as si
        jac = _jacobian(model, scipy_method, params, jacobian)
        self.extra = {"jac": jac} if jac is not None else {}
        self.crossings, self.nfev_before, self.points = None, 0, points   # (points: singular.step_across's)
        self.past = [(t0, np.array(y0, dtype=float))]           # for the step across (singular.remember)
        if model.loops and scipy_method in ACROSS:      # (`crossings`: a run's measure, its rows' scale, handed on)
            from dynamica.runtime.integrators.singular import Crossings
            self.crossings = crossings or Crossings(model, params, t0, np.asarray(y0, dtype=float)[:model.n],
                                                    warn=False, nearby=True)
        fun, strict_project = model.rhs_function(params), None
        if strict and self.crossings:                   # (radau: without the weak rows' treatment away from a crossing)
            from dynamica.runtime.integrators import singular
            both = singular.strict_functions(model, params)
            if both is not None:
                weak_f, (strict_f, strict_project) = fun, both
                self.away = self.crossings.measure(t0, np.asarray(y0, dtype=float)[:model.n]) >= singular.STRICT_FROM
                self.crawled, self.last_step, self.leaving = False, math.inf, 0     # (`_choose_rhs`)
                fun = lambda t, y: strict_f(t, y) if self.away else weak_f(t, y)      # noqa: E731
        self.strict = strict_project is not None
        self.begin = None                               # a run of its own started inside a gap: the start across
        if self.crossings is not None and crossings is None:
            from dynamica.runtime.integrators.singular_start import resolve
            self.begin = resolve(self.crossings, t0, y0)
        self.start = lambda t, y, **kw: _finite_lu(getattr(si, scipy_method)(fun, t, y, t_end, rtol=rtol, atol=atol,
                                                                             **self.extra, **kw), model)
        self.solver = self.start(t0, y0)
        self.max_step = getattr(self.solver, "max_step", np.inf)
        self.t0, self.y0 = t0, np.array(y0, dtype=float)
        self.every_step = t_eval is None                 # solve_ivp's rows then: t0 and every step
        self.times = np.array([t0]) if self.every_step else np.asarray(t_eval, dtype=float)
        self.projected = bool(model.loops) and scipy_method in ONE_STEP
        if self.projected:
            from dynamica.runtime.assembly import PROJECT_ITERATIONS, PROJECT_TOL
            self.p = model.param_vector(params)
            self.opts = np.array([PROJECT_TOL, PROJECT_ITERATIONS], dtype=float)
            self.project = model.module.project
            if strict_project is not None:
                weak_p = self.project
                self.project = lambda t, y, p, opts: strict_project(t, y, p, opts) if self.away \
                    else weak_p(t, y, p, opts)
        self.message = "The solver successfully reached the end of the integration interval."

    def _onto(self, t, y):
        if self.projected:
            self.project(float(t), y, self.p, self.opts)
        return y

    def rows(self):
        """(t, y) of each output row in order; IntegrationError if the solver fails."""
        from dynamica.errors import IntegrationError
        solver, times, j = self.solver, self.times, 0
        while j < len(times) and times[j] <= self.t0:
            yield times[j], self.y0.copy()
            j += 1
        if self.begin is not None:
            j = yield from self._start_across(j)
            solver = self.solver
        stalled = 0
        while solver.status == "running":
            t_old = solver.t
            msg = solver.step()
            if getattr(solver, "jac_factor", None) is not None:
                np.minimum(solver.jac_factor, JAC_FACTOR_MAX, out=solver.jac_factor)
            if solver.status == "failed":
                raise IntegrationError(f"integration failed at t = {t_old}: {msg}")
            if not np.all(np.isfinite(solver.y)):        # (radau accepts a step whose error norm is NaN)
                raise IntegrationError(f"integration failed at t = {t_old}: {type(solver).__name__}'s step to t = "
                                       f"{solver.t} gave a state that is not finite ({solver.y[:4]}...)")
            stalled = stalled + 1 if solver.t == t_old else 0
            if stalled > STALLED_STEPS:
                raise IntegrationError(f"integration failed at t = {t_old}: {STALLED_STEPS} steps of "
                                       f"{type(solver).__name__} did not advance t (its step is below the spacing of "
                                       f"floating-point numbers there; the state is {solver.y[:4]}...)")
            sol = None
            while j < len(times) and times[j] <= solver.t:
                sol = sol or solver.dense_output()
                yield times[j], self._onto(times[j], np.array(sol(times[j]), dtype=float))
                j += 1
            if self.projected:
                solver.y = self._onto(solver.t, np.array(solver.y, dtype=float))
                if hasattr(solver, "f") and solver.status == "running":   # the next step's first stage
                    solver.f = solver.fun(solver.t, solver.y)
            if self.every_step:
                yield solver.t, np.array(solver.y, dtype=float)
            across = None
            if self.crossings and solver.status == "running":
                from dynamica.runtime.integrators.singular import remember
                remember(self.past, solver.t, solver.y)
                across = self._across()
            if across is not None:
                t_b, state = across
                self.nfev_before += len(self.crossings.passages[-1][3])   # (its q'' calls: before its rows,
                while j < len(times) and times[j] <= t_b:                 # which a stream reads between)
                    yield times[j], state(times[j])
                    j += 1
                y_b = state(t_b)
                self.past, self.last_step = [(t_b, y_b)], math.inf
                if t_b < solver.t_bound:
                    self.nfev_before += solver.nfev
                    first = min(solver.step_size, t_b - solver.t, solver.t_bound - t_b)   # (scipy: within bounds)
                    self.solver = solver = self.start(t_b, y_b, first_step=first)
                else:
                    solver.t, solver.y, solver.status = t_b, y_b, "finished"
                if self.every_step:
                    yield t_b, y_b

    def _start_across(self, j):
        """The rows of the start across (singular_start.py) up to its end t_b, then the solver anew
        there; returns the index of the next row."""
        t_b, state, calls = self.begin
        times, solver, self.begin = self.times, self.solver, None
        t_b = min(t_b, solver.t_bound)
        self.nfev_before += calls              # (before its rows, which a stream reads between)
        while j < len(times) and times[j] <= t_b:
            yield times[j], state(times[j])
            j += 1
        y_b = state(t_b)
        self.past = [(t_b, y_b)]
        if self.strict:
            from dynamica.runtime.integrators.singular import STRICT_FROM
            self.away = self.crossings.measure(t_b, y_b[:self.crossings.n]) >= STRICT_FROM
        if t_b < solver.t_bound:
            self.nfev_before += solver.nfev
            self.solver = self.start(t_b, y_b)
        else:
            solver.t, solver.y, solver.status = t_b, y_b, "finished"
        if self.every_step:
            yield t_b, y_b
        return j

    def _across(self):
        """(t_b, state) of a step over a singular configuration ahead (runtime/integrators/singular.py), or None."""
        from dynamica.runtime.integrators.singular import step_across
        solver = self.solver
        s, delta = self.crossings.approaching(solver.t, solver.y)
        if self.strict:
            self._choose_rhs(s, delta)
        if not self.crossings.crossing(s, delta, solver.t - solver.t_old):
            solver.max_step = min(self.crossings.max_step(s, delta), self.max_step)
            return None
        if self.points is None:
            return step_across(self.crossings, self.past, delta, solver.t_bound)
        return self._collocated(delta) or step_across(self.crossings, self.past, delta, solver.t_bound, self.points)

    def _collocated(self, delta):
        """radau's step across when the states since the start (or the last step across) give fewer than
        singular.PAST points for its polynomial: the start across's collocation from the current state
        (singular_start.start_across, nodes 2 delta apart: the crossing midway between it and the first),
        which needs none; (t_b, state) or None (then the step across as usual). Through two points (a
        run started 1e-3 rad from the N four-bar's horizontal) radau ended 8e-10 rad off at rtol 1e-10,
        25 times its error on the reduced equation (docs/loops.md, "A start inside the gap")."""
        from dynamica.runtime.integrators.singular import PAST, spread
        from dynamica.runtime.integrators.singular_start import start_across
        solver, n = self.solver, self.crossings.n
        t_b = float(solver.t) + 2.0 * delta
        if not (math.isfinite(delta) and delta > 0.0) or len(spread(self.past, t_b)) >= PAST:
            return None
        speed = float(np.abs(self.crossings.w * solver.y[n:2 * n]).max(initial=0.0))   # (its gap's units)
        got = start_across(self.crossings, float(solver.t), np.array(solver.y, dtype=float), 2.0 * delta * speed)
        if isinstance(got, str) or got[0] > solver.t_bound:
            if not isinstance(got, str):
                self.crossings.passages.pop()
            return None
        t_b, state, calls = got
        self.nfev_before += calls - len(self.crossings.passages[-1][3])     # (`rows` adds the nodes)
        return t_b, state

    def _choose_rhs(self, s, delta):
        """radau's right-hand side for the next step (`away`: the strict one, without the weak rows'
        treatment): strict where s >= STRICT_FROM, and leaving a crossing (delta < 0) once a step on the
        treatment shrank below LEAVE_CRAWL |delta| or more than LEAVE_STEPS steps were taken on it (radau
        crawls there at a generic crossing, whose normals turn: the treatment's held velocity is only an
        approximation; singular.LEAVE_CRAWL)."""
        from dynamica.runtime.integrators.singular import LEAVE_CRAWL, LEAVE_STEPS, STRICT_FROM
        step = self.solver.t - self.solver.t_old
        if s >= STRICT_FROM or not delta < 0.0:
            self.crawled, self.leaving = False, 0
        elif not self.away:
            self.leaving += 1
            self.crawled = step < min(self.last_step, LEAVE_CRAWL * -delta) or self.leaving > LEAVE_STEPS
        self.last_step = step
        self.away = s >= STRICT_FROM or self.crawled

    @property
    def nfev(self) -> int:
        """RHS calls of every solver of the run (a new one after each step across)."""
        return self.nfev_before + self.solver.nfev

    def info(self, name):
        out = {"integrator": f"scipy {name}" + (", projected onto the loops' constraints after each step"
                                                 if self.projected else "")
               + (", without the weak rows' treatment" if self.strict else "")}
        if name in IMPLICIT:
            out.update(jacobian="analytic" if self.extra else "numeric", njev=int(getattr(self.solver, "njev", 0)))
        if self.crossings is not None:
            out["singular_passages"] = list(self.crossings.passages)
        return out


def _across_options(model, scipy_method) -> dict:
    """`_Stepped`'s options of a run of its own (plain or streamed) that steps across singular
    configurations (radau with loops): the polynomial through RADAU_PAST states, the strict
    right-hand side away from a crossing (runtime/integrators/singular.py)."""
    if not (model.loops and scipy_method in ACROSS):
        return {}
    from dynamica.runtime.integrators.singular import RADAU_PAST
    return {"points": RADAU_PAST, "strict": True}


def stepped(model, scipy_method, t0, t_end, y0, t_eval, rtol, atol, params, jacobian=None, crossings=None):
    """scipy's method stepped directly (`_Stepped`: its `rows()`, `solver`, `nfev`), for another
    integrator's use: ida's bridge over a singular configuration (runtime/integrators/ida.py)."""
    return _Stepped(model, scipy_method, t0, t_end, y0, t_eval, rtol, atol, params, jacobian, crossings=crossings)


def _scipy_runner(scipy_method):
    def run(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None, jacobian=None):
        if _locates_contacts(model):   # stepped, restarted at each contact
            if t_eval is None:
                t_eval = np.linspace(t0, t_end, 201)
            t, Y, nfev, info = _contact_run(model, t0, t_end, y0, t_eval, rtol, atol, params, events=events,
                                            scipy_method=scipy_method, jacobian=jacobian)
            return simulation_result(model, t, Y, run.name, nfev, info, params=params)
        if not events:                 # (solve_ivp's own loop below locates events)
            stepped = _Stepped(model, scipy_method, t0, t_end, y0, t_eval, rtol, atol, params, jacobian,
                               **_across_options(model, scipy_method))
            rows = list(stepped.rows())
            t, Y = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
            return simulation_result(model, t, Y, run.name, stepped.nfev, stepped.info(scipy_method),
                                     stepped.message, params=params)
        from scipy.integrate import solve_ivp
        jac = _jacobian(model, scipy_method, params, jacobian)
        extra = {"jac": jac} if jac is not None else {}
        sol = solve_ivp(model.rhs_function(params), (t0, t_end), y0, method=scipy_method, rtol=rtol, atol=atol,
                        t_eval=t_eval, events=events, **extra)
        if sol.status < 0:
            raise solve_ivp_error(sol, t0, scipy_method)
        info = {"integrator": f"scipy solve_ivp {scipy_method}"}
        if scipy_method in IMPLICIT:
            info.update(jacobian="analytic" if jac is not None else "numeric", njev=int(sol.njev))
        if events:
            info.update(t_events=sol.t_events, y_events=sol.y_events, status=sol.status)
        return simulation_result(model, sol.t, sol.y.T, run.name, sol.nfev, info, sol.message, params=params)
    return run


def solve_ivp_error(sol, t_start, scipy_method):
    """The IntegrationError of a failed solve_ivp run, with the integrator's message and the last
    time it reached: t_start when it failed on its first step (then sol.t holds no row at all when
    output times were given, e.g. LSODA with atol = 0 and a state component that is 0)."""
    from dynamica.errors import IntegrationError
    t = sol.t[-1] if len(sol.t) else t_start
    return IntegrationError(f"integration failed at t = {t} ({scipy_method}"
                            f"{', on its first step' if not len(sol.t) else ''}): {sol.message}")


#: integrator name -> scipy's solve_ivp method (the records of kind "scipy")
SCIPY_METHODS = {r.name: r.options["method"] for r in INTEGRATOR_RECORDS.values() if r.kind == "scipy"}


def _named_scipy_runner(record):
    run = _scipy_runner(record.options["method"])
    run.name = record.name
    return run


def _run_still(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None, jacobian=None, method=""):
    """A model without state (a stage that locks every coordinate): nothing to integrate, time
    advances over the output times (those of adams by default), the outputs are computed at each;
    events, functions of t alone here, are located by their sign changes on those times and
    refined by Brent's method (terminal ones end the run, as solve_ivp's)."""
    from scipy.optimize import brentq
    t = np.linspace(t0, t_end, 201) if t_eval is None else np.asarray(t_eval, dtype=float)
    y0 = np.asarray(y0, dtype=float)
    info = {"integrator": "none: the model has no state, time advances"}
    if events:
        t_events, end = [], None
        for ev in events:
            g = np.array([ev(tk, y0) for tk in t])
            d = getattr(ev, "direction", 0)
            hits = []
            for k in np.nonzero(np.sign(g[:-1]) != np.sign(g[1:]))[0]:
                if g[k] == 0 and k > 0:
                    continue                          # counted as the end of the previous interval
                if d and (g[k + 1] - g[k]) * d < 0:
                    continue
                hits.append(t[k + 1] if g[k + 1] == 0 else t[k] if g[k] == 0 else
                            brentq(lambda x: ev(x, y0), t[k], t[k + 1], xtol=1e-14, rtol=4 * np.finfo(float).eps))
            if getattr(ev, "terminal", False) and hits:
                hits = hits[:1]
                end = hits[0] if end is None else min(end, hits[0])
            t_events.append(np.array(hits))
        if end is not None:                           # solve_ivp: the rows before the event
            t = t[t < end] if np.any(t < end) else np.array([t0])
            t_events = [te[te <= end] for te in t_events]
        info.update(t_events=t_events, y_events=[np.tile(y0, (len(te), 1)) for te in t_events],
                    status=1 if end is not None else 0)
    return simulation_result(model, t, np.tile(y0, (len(t), 1)), method, 0, info, params=params)


def _run_ida(*args, **kw):
    """SUNDIALS IDA on the constrained equations of a model with loops (runtime/integrators/ida.py)."""
    from dynamica.runtime.integrators.ida import run_ida
    return run_ida(*args, **kw)


#: integrator kind (generator/spec/integrators.py) -> record -> its runner
RUNNERS = {"adams": lambda record: _run_adams, "stoermer": lambda record: _run_stoermer6,
           "scipy": _named_scipy_runner, "ida": lambda record: _run_ida}
#: integrator name -> runner(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None,
#: jacobian=None) -> SimulationResult: one per record (a record of an unknown kind fails here, at import)
INTEGRATORS = {r.name: RUNNERS[r.kind](r) for r in INTEGRATOR_RECORDS.values()}


def _prepare_adams(model, record, params, jacobian):
    from dynamica.runtime.integrators.compiled_adams import core
    core()


def _prepare_stoermer(model, record, params, jacobian):
    import dynamica.runtime.integrators.stoermer  # noqa: F401


def _prepare_scipy(model, record, params, jacobian):
    import scipy.integrate  # noqa: F401
    _jacobian(model, record.options["method"], params, jacobian)      # built (or fetched) once per model


def _prepare_ida(model, record, params, jacobian):
    try:
        import sksundae.ida  # noqa: F401
    except ImportError:
        pass                                # run_ida names the package to install


#: integrator kind -> what its runner needs before the first step (imports, a Jacobian module):
#: `prepare` runs it, so that a timed `simulate` that follows measures the integration alone
PREPARE = {"adams": _prepare_adams, "stoermer": _prepare_stoermer, "scipy": _prepare_scipy, "ida": _prepare_ida}


def prepare(model, method=None, params=None, jacobian=None) -> None:
    """Do the start-up work of `simulate(model, method=...)` ahead of it: import the integrator's
    modules (scipy for its methods, the compiled Adams core) and build the Jacobian module an
    implicit method uses. Optional: `simulate` does the same on its own; the command line calls it
    first to print the integration's time apart from the start-up. (A model with stages loads its
    stages' modules in `simulate`, not here.)"""
    method = method or model.spec.simulate.integrator
    if method not in INTEGRATOR_RECORDS:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(INTEGRATORS)}")
    record = INTEGRATOR_RECORDS[method]
    from dynamica.runtime.integrators import contact_events  # noqa: F401  (every run asks for its gaps)
    PREPARE[record.kind](model, record, params, jacobian)
    if hasattr(model.module, "outputs"):    # the rows' outputs (simulation_result: model.output_series)
        from dynamica.runtime.series import row_loop
        row_loop()


#: output rows per piece when results stream to a file: bounds the memory of a long run
STREAM_ROWS = 10000


#: the run's numbers: name -> what they must be (None: not given, the model's default)
_RUN_NUMBERS = {"t0": "finite", "t_end": "finite", "output_step": "positive", "step": "positive",
                "rtol": "nonnegative", "atol": "nonnegative"}


def _check_numbers(**given):
    """A ValueError naming the first setting that is not a finite number of its kind."""
    for name, value in given.items():
        if value is None:
            continue
        kind = _RUN_NUMBERS[name]
        try:                                # tolerances may be given per component
            x = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"{name} must be a number, got {value!r}") from None
        if not (np.all(np.isfinite(x)) and (kind != "positive" or np.all(x > 0))
                and (kind != "nonnegative" or np.all(x >= 0))):
            raise ValueError(f"{name} must be a {'' if kind == 'finite' else kind + ' '}finite number, got {value!r}")


def simulate(model, t_end=None, *, method=None, rtol=None, atol=None, output_step=None, q0=None, qd0=None,
             params=None, t0=0.0, step=None, progress=None, segments=20, events=None, out=None,
             keep=None, jacobian=None, inputs=None, controller=None, sample_time=None, s0=None) -> SimulationResult:
    """Integrate the model from t0 to t_end; defaults come from the model's `simulate` block.
    `model` and `t_end` may be given by position, every other option by keyword only.

    `method="adams"` (the default) is the compiled Adams-Bashforth-Moulton PECE loop of
    variable step and order 1-12 (runtime/native/adams_core.pyx) calling the module's C entry point
    with no Python per step; `"stoermer6"` is the fixed-step 6th-order Stoermer-Cowell method
    of the dissertation's timing experiments with step `step` (default: the output step, else
    (t_end - t0)/1000); the other names (`INTEGRATORS`) run scipy's `solve_ivp` on the compiled RHS.

    `events`: functions g(t, y) of the integrator state y (= to_state(q, qd)) with scipy's optional
    `terminal` and `direction` attributes; their zeros are located on the integrator's
    interpolant and returned in `result.info["t_events"]`, `["y_events"]` (adams and the scipy
    methods). `progress(result_so_far, new)` (optional) makes the run go in `segments` pieces ending at
    output points and is called after each with the partial result and the slice of new rows
    (for progress bars and for writing results as they come). With adams, the scipy methods and
    ida the pieces are those of one run (`STREAMS`): the rows and the RHS calls are the same as
    without progress or out. stoermer6 restarts at each piece from the state
    reached, like a stage boundary: results agree with one piece to the integration tolerance, and
    cost a few start-up steps per piece (with contacts stoermer6 runs once and hands on the rows
    after: `_stream_whole`).

    `jacobian`: for radau, BDF and LSODA, "analytic" (the default: d[q', q'']/d[q, q'] of the
    model's derivatives module, runtime/kinds/derivatives.py, built on first use) or "numeric"
    (scipy's finite differences); Hamiltonian forms always use scipy's.

    `out`: a CSV file the rows are streamed to as they come (pieces of at most `STREAM_ROWS`
    rows), written as `<out>.partial` and renamed to `out` when the run completes. With `out`
    the rows are not kept (`keep=False`, the default then): the result holds the last row only,
    `info["rows"]` counts them, and memory stays bounded however long the run. `keep=False`
    without `out` does the same for a `progress` callback that consumes the rows itself, which
    then gets each piece as `result_so_far`.

    Models with extra states (`states:`) integrate y = [q, qd, s] (`s0`: their initial values,
    default the model's); the states join `result.outputs` under their names. Models with
    inputs (`inputs:`) need them at run time (runtime/inputs.py): `inputs={name: u(t) |
    (t_array, values) | "file.csv"}` and/or `controller=f(t, q, qd, s) -> {name: value}` called
    every `sample_time` from t0 on, its values held until the next sample; the inputs join
    `result.outputs` too (adams and the scipy methods; not with progress, out or events).
    """
    if not isinstance(model, CompiledModel):
        from dynamica.runtime.api import load
        model = load(model)
    _check_numbers(t0=t0, t_end=t_end, output_step=output_step, step=step, rtol=rtol, atol=atol)
    if model.spec.stages:                 # the cyclogram (runtime/stages/cyclogram.py)
        return _run_stages(model, t_end=t_end, method=method, rtol=rtol, atol=atol, output_step=output_step,
                           params=params, t0=t0, q0=q0, qd0=qd0, events=events, out=out, progress=progress)
    from dynamica.errors import IntegrationError
    try:
        result = simulate_stage(model, t_end, method=method, rtol=rtol, atol=atol, output_step=output_step, q0=q0,
                                qd0=qd0, params=params, t0=t0, step=step, progress=progress, segments=segments,
                                events=events, out=out, keep=keep, jacobian=jacobian, inputs=inputs,
                                controller=controller, sample_time=sample_time, s0=s0)
        return warn_ranges(model, result)
    except IntegrationError as exc:
        hint = _singular_mass_hint(model, params, q0, t0) if params and "non-finite" in str(exc) else ""
        if not hint and model.loops and "non-finite" in str(exc):
            hint = ("; with closed loops the constrained solve returns NaN where the loops' equations are "
                    "inconsistent at a state (not merely redundant): model.qdd(q, qd) there raises a ConstraintError "
                    "naming the loop (docs/loops.md)")
        if not hint:
            raise
        raise IntegrationError(f"{exc}{hint}") from exc


def warn_ranges(model, result):
    """A warning naming the coordinates that left their `ranges` (a robot's joint limits when
    they are not modelled: limits=False), with how far and when first; the result unchanged."""
    ranges = getattr(model.spec, "ranges", ())
    if not ranges or result.q is None or not len(result.q):
        return result
    left = []
    for c, lo, hi in ranges:
        k = model.coordinates.index(c)
        x = result.q[:, k]
        out = np.nonzero((x < lo) | (x > hi))[0]
        if len(out):
            worst = float(np.max(np.maximum(lo - x, x - hi)))
            left.append(f"`{c}` (by up to {worst:.3g}, first at t = {float(result.t[out[0]]):.4g})")
    if left:
        import warnings

        from dynamica.generator.spec.model import DynamicaWarning
        warnings.warn(f"{model.spec.file}: coordinates leave their limits, which are not modelled (limits=False): "
                      + ", ".join(left), DynamicaWarning, stacklevel=3)
    return result


def _singular_mass_hint(model, params, q0, t0) -> str:
    """Why the right-hand side is not finite with parameter overrides, when M is the reason (load
    checks M at the defaults only): its smallest eigenvalue at the initial state."""
    from dynamica.runtime.api import SINGULAR_RTOL
    try:
        q = model.initial_state(params)[0] if q0 is None else np.asarray(q0, dtype=float)
        w = np.abs(np.linalg.eigvalsh(model.mass_matrix(q, t0, params)))
    except Exception:                   # noqa: BLE001 - only a hint: the error itself stands
        return ""
    if np.all(np.isfinite(w)) and w.min() > SINGULAR_RTOL * w.max():
        return ""
    return (f"; with the parameters given ({', '.join(f'{k} = {v}' for k, v in dict(params).items())}) the mass "
            f"matrix is singular at the initial state (its eigenvalues' magnitudes from {w.min():.3g} to "
            f"{w.max():.3g}): a zero mass or inertia?")


def simulate_stage(model, t_end=None, *, method=None, rtol=None, atol=None, output_step=None, q0=None, qd0=None,
                   params=None, t0=0.0, step=None, progress=None, segments=20, events=None, out=None,
                   keep=None, jacobian=None, inputs=None, controller=None, sample_time=None,
                   s0=None) -> SimulationResult:
    """`simulate` of one kinematic structure (a model without stages, or one stage of a cyclogram);
    the options as `simulate`'s, keyword-only."""
    sim = model.spec.simulate
    t_end = sim.t_end if t_end is None else float(t_end)
    method = method or sim.integrator
    rtol = sim.rtol if rtol is None else rtol
    atol = sim.atol if atol is None else atol
    output_step = output_step if output_step is not None else sim.output_step
    if method not in INTEGRATORS:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(INTEGRATORS)}")
    if not t_end > t0:
        raise ValueError(f"t_end ({t_end}) must be greater than t0 ({t0})")
    keep = (out is None) if keep is None else bool(keep)
    iq0, iqd0 = model.initial_state(params)
    q0 = iq0 if q0 is None else model.as_vector(q0, "q0")
    qd0 = iqd0 if qd0 is None else model.as_vector(qd0, "qd0")
    if model.loops:               # closed loops: a consistent state (and the loops' references)
        q0, qd0 = model.assemble(q0, qd0, t0, params)
    y0 = model.to_state(q0, qd0, t0, params, s0)
    t_eval = _output_times(t0, t_end, output_step)
    run = INTEGRATORS[method]
    if not len(y0):               # every coordinate locked (a held stage): no state, time advances
        run = functools.partial(_run_still, method=method)
    model.reset_solver()          # the iterative form starts from a direct solve: runs are reproducible
    if model.inputs or inputs or controller is not None:
        if progress is not None or out is not None or events or keep is False:
            raise ValueError("a run with inputs or a controller does not take progress, out, keep or events")
        from dynamica.runtime.integrators.driven import run_driven
        t, Y, nfev, info, U = run_driven(model, t0, t_end, y0, t_eval, rtol, atol, params, method, inputs,
                                         controller, sample_time)
        return simulation_result(model, t, Y, method, nfev, info, params=params, inputs=U)
    if progress is None and out is None and keep:
        return run(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=events, jacobian=jacobian)
    if events:
        raise ValueError("events with progress, out or keep=False are not supported (a piece would restart "
                         "the events)")
    return _in_pieces(model, run, method, t0, t_end, y0, t_eval, rtol, atol, params, step, jacobian, segments,
                      out, keep, progress)


def _stream_of(model, method, run, step):
    """How a run hands on its rows piece by piece: from one integration (its dense output, or the
    whole run when restarted pieces would split its contacts), or None (restarted at each piece)."""
    stream = STREAMS.get(method)
    if stream is not None and _locates_contacts(model):
        return functools.partial(_stream_contacts, scipy_method=SCIPY_METHODS.get(method))
    if INTEGRATOR_RECORDS[method].kind == "stoermer" and _gaps(model) and model.state_size == 2 * model.n:
        return functools.partial(_stream_whole, run, step)     # restarted pieces would split its contacts
    if INTEGRATOR_RECORDS[method].kind == "ida" and not model.loops:
        return None                                            # (run_ida names what it does not take)
    if INTEGRATOR_RECORDS[method].kind == "ida" and step:
        return functools.partial(stream, step=step)            # (IDA's largest step)
    return stream


def _in_pieces(model, run, method, t0, t_end, y0, t_eval, rtol, atol, params, step, jacobian, segments, out, keep,
               progress):
    """A run with progress, a streamed file (`out`) or keep=False: its rows in pieces, each
    written and reported as it comes."""
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    pieces = max(2, min(segments, len(t_eval) - 1) + 1)
    if out is not None or not keep:
        pieces = max(pieces, -(-len(t_eval) // STREAM_ROWS) + 1)
    cuts = np.unique(np.linspace(0, len(t_eval) - 1, pieces).astype(int))
    writer = _open_writer(model, out, t0, y0, params) if out is not None else None
    rows = _Rows(model.coordinates, keep)
    stream = _stream_of(model, method, run, step)
    try:
        if stream is not None:      # one integration, its rows handed on piece by piece
            chunks = stream(model, t0, t_end, y0, t_eval, cuts, rtol, atol, params, jacobian)
            pieces = (simulation_result(model, t, Y, method, nfev, info, message, params=params)
                      for t, Y, nfev, info, message in chunks)
        else:                       # restarted at each piece
            pieces = _restarted(model, run, y0, t_eval, cuts, rtol, atol, params, step, jacobian)
        for piece in pieces:
            start = 0 if rows.count == 0 else 1          # the first row repeats the previous piece's last
            if writer is not None:
                writer.write(piece.t[start:], piece.q[start:], piece.qd[start:],
                             {k: v[start:] for k, v in piece.outputs.items()})
            rows.add(piece, start)
            if progress is not None:
                progress(*rows.so_far())
    except BaseException:
        if writer is not None:
            writer.abort()                              # the rows so far stay in <out>.partial
        raise
    if writer is not None:
        writer.close()
    return rows.result(out)


def _restarted(model, run, y0, t_eval, cuts, rtol, atol, params, step, jacobian):
    """The pieces of a run between the output rows `cuts`, each a new integration from the state
    the previous one reached (the integrators that cannot hand on their rows as they go)."""
    for a, b in zip(cuts[:-1], cuts[1:]):
        te = t_eval[a:b + 1]
        piece = run(model, float(te[0]), float(te[-1]), y0, te, rtol, atol, params, step, jacobian=jacobian)
        y0 = model.to_state(piece.q[-1], piece.qd[-1], te[-1], params,
                            [piece.outputs[s][-1] for s in model.states] if model.states else None)
        yield piece


def _stream_adams(model, t0, t_end, y0, t_eval, cuts, rtol, atol, params, jacobian=None):
    """The compiled Adams loop of `_run_adams` (compiled_adams.solve, its defaults), stepped from
    Python so that the output rows between `cuts` are handed on as they are reached: (t, Y, nfev
    of the piece, info, message) per piece, the rows those of one uninterrupted run (each filled
    by the interpolant of the step that reaches it, as `Stepper.run` does)."""
    from dynamica.runtime.integrators.compiled_adams import check_status, resolve_rhs, stepper, warn_stiff
    max_steps = 500_000
    f, y0, p = resolve_rhs(model, y0, model.param_vector(params), True)
    st, driver = stepper(model, f, p, t0, y0, t_end, rtol, atol, max_steps=max_steps, params=params)
    check_status(st, st.begin(), rtol, atol, max_steps, "warn")
    nfev, last = 0, None                                  # last: the previous piece's last row
    for a, b in zip(cuts[:-1], cuts[1:]):
        tv = np.ascontiguousarray(t_eval[a:b + 1] if a == cuts[0] else t_eval[a + 1:b + 1], dtype=float)
        Y = np.full((len(tv), len(y0)), np.nan)
        j = 0
        while j < len(tv) and tv[j] == t0:                # outputs at t0 are y0 itself
            Y[j] = y0
            j += 1
        while j < len(tv) and tv[j] <= st.t and st.nsteps:    # reached by the step that ended the last piece
            Y[j] = driver.intrp(tv[j])
            j += 1
        while j < len(tv):
            code, j = driver.run(tv, Y, j, 1)
            check_status(st, code, rtol, atol, max_steps, "warn")
            if st.done and j < len(tv):
                break
        info = st.info()
        if b == cuts[-1]:
            warn_stiff(info, "warn")
        rows = tv if a == cuts[0] else np.concatenate([[t_eval[a]], tv])
        if a != cuts[0]:                                  # the piece starts at the previous one's last row
            Y = np.vstack([last, Y])
        if model.loops:                                   # as _run_adams: the rows onto the constraints
            _project_rows(model, rows, Y, params)
        last = Y[-1:].copy()
        calls = info["nfev"] + getattr(driver, "extra_calls", 0)
        yield (rows, Y, calls - nfev, {"integrator": "compiled Adams PECE (Shampine-Gordon), orders 1-12",
                                       "steps": info["nsteps"], "rejected": info["nrejected"],
                                       "order_histogram": info["order_histogram"],
                                       **(driver.info() if driver is not st else {})}, "")
        nfev = calls


def _stream_scipy(scipy_method, name):
    """The `_Stepped` run of scipy's method, its rows handed on piece by piece between `cuts` as
    `_stream_adams` does: the rows and RHS calls of one uninterrupted run."""
    def stream(model, t0, t_end, y0, t_eval, cuts, rtol, atol, params, jacobian=None):
        stepped = _Stepped(model, scipy_method, t0, t_end, y0, t_eval, rtol, atol, params, jacobian,
                           **_across_options(model, scipy_method))
        yield from pieces(stepped.rows(), cuts, lambda: (stepped.nfev, stepped.info(scipy_method), stepped.message))
    return stream


def pieces(rows, cuts, state):
    """The rows (t, y) of one run, handed on piece by piece between `cuts` as STREAMS do: (t, Y, calls
    of the piece, info, message) per piece, each piece starting at the previous one's last row;
    state() gives (calls so far, info, message) of the run."""
    nfev, last = 0, None
    for a, b in zip(cuts[:-1], cuts[1:]):
        piece = [next(rows) for _ in range(b - a + 1 if last is None else b - a)]
        if last is not None:                          # the piece starts at the previous one's last row
            piece.insert(0, last)
        last = piece[-1]
        calls, info, message = state()
        yield np.array([r[0] for r in piece]), np.array([r[1] for r in piece]), calls - nfev, info, message
        nfev = calls


#: integrators that hand on the rows of one run piece by piece (progress, out, keep=False); the
#: others are restarted at each piece
def _stream_ida(*args, **kw):
    """One `ida` run handed on piece by piece (runtime/integrators/ida.py, `stream`)."""
    from dynamica.runtime.integrators.ida import stream
    return stream(*args, **kw)


STREAMS = {r.name: {"adams": lambda: _stream_adams, "ida": lambda: _stream_ida,
                    "scipy": lambda: _stream_scipy(r.options["method"], r.name)}[r.kind]()
           for r in INTEGRATOR_RECORDS.values() if r.kind in ("adams", "scipy", "ida")}


#: how a model with stages runs: the cyclogram (runtime/stages/cyclogram.py), which sits above the
#: integrators (it runs them stage by stage) and registers its `run` here when imported (dynamica's
#: package file imports it with `simulate`)
STAGED_RUNNER: dict = {}


def _run_stages(model, *, t_end, method, rtol, atol, output_step, params, t0, q0, qd0, events, out, progress):
    run = STAGED_RUNNER.get("cyclogram")
    if run is None:
        raise RuntimeError("a model with stages runs through its cyclogram: import dynamica.runtime.stages.cyclogram "
                           "(dynamica.simulate does)")
    unsupported = [k for k, v in (("t0", t0 != 0.0), ("q0", q0 is not None), ("qd0", qd0 is not None),
                                  ("events", events)) if v]
    if unsupported:
        raise ValueError(f"a model with stages starts from its initial values at t = 0 and its stages end by "
                         f"their own events: {', '.join(unsupported)} cannot be given")
    res = run(model, t_end=t_end, method=method, rtol=rtol, atol=atol, output_step=output_step,
              params=params, progress=progress)
    if out is not None:
        res.to_csv(out)
        res.info["out"] = str(out)
    return res


def _open_writer(model, out, t0, y0, params):
    """The CSV writer of `simulate(out=...)`: its output columns from the outputs at the start."""
    from dynamica.runtime.results.result import CsvWriter, output_columns
    probe = {}
    if hasattr(model.module, "outputs") or model.states:
        q, qd = model.from_state(y0, t0, params)
        s = model.split_state(y0)[2] if model.states else None
        probe = {k: np.asarray(v)[None] for k, v in model.outputs(t0, q, qd, params, s=s).items()}
    return CsvWriter(out, model.coordinates, output_columns(probe))


class _Rows:
    """The rows of a run in pieces: all of them (keep) or only the latest piece."""

    def __init__(self, coordinates, keep):
        self.coordinates, self.keep = coordinates, keep
        self.parts, self.count, self.nfev, self.last, self.pieces = [], 0, 0, None, 0

    def add(self, piece, start):
        self.nfev += piece.nfev
        self.pieces += 1
        self.count += len(piece.t) - start
        self.last = piece
        sliced = (piece.t[start:], piece.q[start:], piece.qd[start:], {k: v[start:] for k, v in piece.outputs.items()})
        self.parts = self.parts + [sliced] if self.keep else [sliced]

    def _merged(self, parts):
        p = self.last
        return SimulationResult(t=np.concatenate([x[0] for x in parts]), q=np.concatenate([x[1] for x in parts]),
                                qd=np.concatenate([x[2] for x in parts]), coordinates=self.coordinates,
                                method=p.method, nfev=self.nfev, message=p.message,
                                info={**p.info, "segments": self.pieces, "rows": self.count},
                                outputs={k: np.concatenate([x[3][k] for x in parts]) for k in p.outputs})

    def so_far(self):
        """(result so far, slice of its new rows) for `progress`."""
        res = self._merged(self.parts)
        return res, slice(len(res.t) - len(self.parts[-1][0]), len(res.t))

    def result(self, out):
        if self.keep:
            res = self._merged(self.parts)
        else:                                       # the last row only
            t, q, qd, o = self.parts[-1]
            res = self._merged([(t[-1:], q[-1:], qd[-1:], {k: v[-1:] for k, v in o.items()})])
        if out is not None:
            res.info["out"] = str(out)
        return res
