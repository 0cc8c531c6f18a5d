"""The implicit DAE integrator of models with closed loops: `simulate(model, method="ida")`.

The constrained equations in the stabilized index-2 form of Gear, Gupta and Leimkuhler (GGL), on
y = [q, v, Lambda, Mu] (n + n + r + r), the multipliers lambda = Lambda' and mu = Mu' (integrated
multipliers, `_GGL`):

    q' - v + J^T Mu' = 0                  (mu = 0 on the exact solution: it keeps q on phi = 0)
    M(q) v' - Q(t, q, v) + J^T Lambda' = 0
    J(q) v + phi_t = 0                    (the velocity constraints)
    phi(q, t) = 0                         (the position constraints)

integrated by SUNDIALS IDA (variable-order BDF, through the maintained binding scikit-sundae)
for mechanisms that are stiff (stiff springs or dampers), where the explicit Adams method needs
steps limited by stability. The rows of phi are the independent subset of the loops' equations
at the start (QR with column pivoting of J^T: a planar linkage written with 3-D joints repeats
its out-of-plane conditions, and IDA's iteration matrix must stay regular); the rank must not
change between singular configurations. Lambda and Mu are left out of the error test (their absolute
tolerance is huge: index-2 variables need not be accurate to the tolerance of q). The tolerance of a
length's rate (a slider's q') is in the units of the angles' (`_tolerances`).

The residual is evaluated in Python from the module's entry points: the tree's mass matrix,
its inverse dynamics at zero acceleration (-Q, runtime/kinds/inverse.py), and the loops' kernels
(phi, J, phi_t; runtime/assembly.py); IDA differences it for its Jacobian. Each call costs tens of
microseconds, so the method pays off where Adams' stability limit costs far more steps
(benchmarks/bench_loops.py).

Singular configurations of the loops (docs/loops.md, "The implicit route"): IDA is stepped one
step at a time (`_Across`) and steps across them (runtime/integrators/singular.py), starting anew
on the other side with the rows of phi chosen again (where that step lands inside the gap, as at a
slow crossing next to a turning point, the bridge below takes over from there; a run that starts at or
inside the gap leaves it by radau's start across, singular_start.py); below rtol BRIDGE_RTOL it hands
over instead, where the loops' singular measure falls below SINGULAR_GAP (or where it crawls or fails
heading in: CRAWL; at any rtol where IDA fails or crawls near one: CRAWL_STEPS), to a bridge: scipy's
Radau on the index-1 equations without the weak rows' treatment (`_Strict`) with its own step across,
as far past the crossing (near a crossing the GGL equations amplify rounding-level defects beyond IDA's
error test at tight tolerances: SINGULAR_GAP).

Contacts (docs/contact.md, "Events"): the gaps d of the model's contact points are IDA's event
functions, located by its root finding on its own BDF interpolant; IDA stops at each root and is
started anew from the state there (lambda recomputed, mu = 0), so no step straddles the law's
kink at d = 0. `info["contacts"]` lists (t_e, pair, point, +1 start / -1 end). A contact whose gap
changes side within a step across (or a bridge), where nothing locates it, is an error.
"""

from __future__ import annotations

import math

import numpy as np

#: below this rtol IDA hands over to the bridge near a crossing (`_bridge`); at and above it IDA steps
#: across itself (runtime/integrators/singular.py) from s < STEP_GAP. Why both: the bridge is what passes
#: at rtol 1e-12 (below), but on a change-point four-bar (tests/data/changepoint.yaml) radau's steps fall
#: to microseconds near the crossing: with the bridge at rtol 1e-8 the crank ended 1.5e-4 rad off the
#: branch's oracle after 2.5 s (7.9e-7 with IDA's own step across, 2938 residual calls) and rtol 1e-10
#: did not finish in 400 s; on the N four-bar both give IDA's own error at rtol 1e-8 and 1e-10
BRIDGE_RTOL = 1e-11
#: the singular measure below which IDA steps across itself at rtol >= BRIDGE_RTOL (radau's is 1e-3): its
#: Newton iteration on the GGL equations fails nearer the crossing (the N four-bar: it gave up at s =
#: 1.6e-3). Measured on the N four-bar (N = 1, 2; 1.5 s, two passages): 3e-3 passes at rtol 1e-8 and
#: 1e-10 with IDA's own error (1e-8 at 1e-10); 1e-2 loses 4e-8 ... 2e-7 m at 1e-10
STEP_GAP = 3e-3
#: the singular measure below which IDA hands over to the bridge (`_bridge`: scipy's Radau with its step
#: across, gap 1e-3). Why not nearer, nor a step across of IDA's own: at s ~ 3e-3 a position defect at the
#: rounding level (phi ~ 7e-16 on the N four-bar) moves q by phi / sigma along the weak direction and v by
#: |v| phi / sigma^2 (measured 4.6e-11 m/s, N = 1, sigma_min(J) = 7.3e-3), the same for every step size:
#: at rtol 1e-12 IDA's error test then fails for every h on the first step of a restart there (it failed
#: at t = 0.7105, N = 1, right after a step across from s = 3e-3); from exact states of the branch it
#: restarts at s >= 4e-3 (377 steps over 50 ms at s = 4.3e-3, 81 steps and failure at 1.4e-3). A longer step
#: across of its own (landing at s ~ 6e-3 .. 3e-2) passes but costs 1.3e-9 ... 3e-6 m (the polynomial
#: extrapolated over the longer jump). 1e-2 keeps IDA's steps and restarts out of that window.
SINGULAR_GAP = 1e-2
#: the bridge ends BRIDGE delta after the hand-over (delta the time to the crossing then): s is about
#: 1.5 gap there, leaving, where IDA starts anew
BRIDGE = 2.5
#: IDA failing soon after a bridge (within as long again; N four-bar, N = 2, rtol 1e-12, t = 12.888:
#: corrector convergence at s = 1.4e-2, on its first steps) bridges on from there, at most RETRIES times
RETRIES = 3
#: heading into a crossing within APPROACH gaps (singular.py), a step of IDA below CRAWL times the time to
#: the crossing hands over to the bridge from where it is (`_Across._heading_in`; a failure there does
#: too): on the change-point four-bar at rtol 1e-12, 9171 calls and 9.2e-11 rad after the crossing,
#: against 10825 calls (IDA crawling on until it fails) and 3.4e-11 rad without it
CRAWL = 1e-3
#: ... and near a crossing (within APPROACH gaps, either way) more than CRAWL_STEPS steps in a row below CRAWL
#: times the time to it count as a failure of IDA there (its crawl), bridged from where it is: IDA started
#: anew at s = 2.8e-3 after a slow crossing of the N four-bar (N = 1, rtol 1e-10, started 1e-2 rad from the
#: horizontal) took accepted steps of one ulp of t, 1.1e-16 s, for ever (a million residual calls in 60 s)
CRAWL_STEPS = 200
INTEGRATOR = "SUNDIALS IDA (BDF orders 1-5) on the GGL index-2 equations (runtime/integrators/ida.py)"


def independent_rows(J) -> np.ndarray:
    """Indices of a maximal independent subset of the rows of J (sorted)."""
    from dynamica.runtime.assembly import pivoted_columns
    return np.sort(np.array(pivoted_columns(J.T), dtype=int))


class _GGL:
    """The GGL index-2 equations of a model with closed loops in IDA's residual form, y = [q, v,
    Lambda, Mu], on the independent rows of the loops' Jacobian at the start. The multipliers enter as
    the derivatives lambda = Lambda', mu = Mu' (their integrals' values enter nowhere), so that IDA's
    corrector solves for h lambda and h mu, as for h v', and its predictor extrapolates no multiplier.
    Why: with lambda and mu themselves in y, IDA's BDF history of them (left out of the error test)
    was noise at 1e-3 of lambda at microsecond steps, their extrapolated derivatives 1e9 ... 1e10 per
    second (the isosceles slider-crank, tests/data/isosceles.yaml, L = 500 m, rtol 1e-8, at theta = 2
    pi): 122 841 residual calls over 1 s, a crawl at order 1 and h ~ 3e-8 s; with the integrated
    multipliers 14 426 (docs/loops.md, "IDA at a slider's dead centre")."""

    def __init__(self, model, params, q0, t0):
        from dynamica.runtime import assembly as loops
        self.model, self.params, self.loops = model, params, loops
        self.n, self.zero = model.n, np.zeros(model.n)
        J0, _ = loops.jacobian(model, q0, t0, params)
        self.rows = independent_rows(J0)
        self.r = len(self.rows)
        self.calls = 0

    def consistent(self, t, q, v, qdd=None):
        """[q, v, 0, 0] and its derivative [v, q'', lambda, 0] at (t, q, v): lambda from M q'' - Q +
        J^T lambda = 0 (q'' the module's unless given)."""
        model, params, r = self.model, self.params, self.r
        qdd = model.qdd(q, v, t, params) if qdd is None else qdd
        tau = model.inverse_dynamics(q, v, self.zero, t, params)             # M q'' - Q at q'' = 0: -Q
        J, _ = self.loops.jacobian(model, q, t, params)
        lam = np.linalg.lstsq(J[self.rows].T, -(model.mass_matrix(q, t, params) @ qdd + tau), rcond=None)[0] \
            if r else np.zeros(0)
        return np.concatenate([q, v, np.zeros(2 * r)]), np.concatenate([v, qdd, lam, np.zeros(r)])

    def residual(self, t, y, yp, out):
        self.calls += 1
        model, params, n, r = self.model, self.params, self.n, self.r
        q, v, lam, mu = y[:n], y[n:2 * n], yp[2 * n:2 * n + r], yp[2 * n + r:]
        J, phit = self.loops.jacobian(model, q, t, params)
        J, phit = J[self.rows], phit[self.rows]
        out[:n] = yp[:n] - v + J.T @ mu
        out[n:2 * n] = model.mass_matrix(q, t, params) @ yp[n:2 * n] \
            + model.inverse_dynamics(q, v, self.zero, t, params) + J.T @ lam
        out[2 * n:2 * n + r] = J @ v + phit
        out[2 * n + r:] = self.loops.residual(model, q, t, params)[self.rows]


def _options(n, r, rtol, atol, step, t0, t_end, t_eval):
    """IDA's options (the multipliers left out of the error test) and the output times."""
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval[0] > t0:
        t_eval = np.concatenate([[t0], t_eval])
    options = {"rtol": float(rtol), "atol": _tolerances(n, r, rtol, atol), "max_num_steps": 100000}
    if step:
        options["max_step"] = float(step)
    return options, t_eval


def _tolerances(n, r, rtol, atol, w=None, rate=0.0, lengths=None) -> np.ndarray:
    """IDA's atol for y = [q, v, Lambda, Mu] (r rows of phi): Lambda and Mu left out of the error test; on
    a length's rate (a slider's q', `lengths` the coordinates singular.column_weights weighs, w
    their weight 1 / ell) atol + rtol rate / w, `rate` the fastest rate in the angles' units so far
    (max |w q'| at IDA's starts). Why: the velocity constraints tie a slider's rate to the angles
    (x' = 2 L sin(theta) theta' on the isosceles slider-crank), so that an angle within its
    tolerance moves x' by 2 L theta' times it; rtol |x'| + atol on x' alone falls far below that
    where the slider turns (x' -> 0 at a dead centre, on a scale of 3e4 m/s at L = 500 m): IDA
    crawled there (h ~ 1e-8 s at order 1, an error-test failure every step at rtol 1e-10, its
    corrector's x' within 4e-7 m/s against a tolerance of 8e-8) or failed (rtol 1e-12). The rate is
    the largest so far, not the current one: with the current one at each restart (22 ... 31 rad/s
    after a crossing, against 60 at the start) 56 663 residual calls at rtol 1e-8 instead of 12 663.
    The user's atol is kept on every coordinate; the positions keep rtol |q| + atol."""
    tol = np.full(2 * n + 2 * r, float(atol))
    tol[2 * n:] = 1e10                        # left out of the error test (module docstring)
    if lengths is not None:
        tol[n:2 * n][lengths] += rtol * rate / w[lengths]
    return tol


def run_ida(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None, jacobian=None):
    """The `ida` entry of simulate's INTEGRATORS (module docstring); y0 = [q, qd] assembled."""
    from dynamica.runtime.integrators.simulate import simulation_result
    if events:
        raise ValueError("method 'ida' does not locate events; use adams or a scipy method")
    run = _prepared(model, t0, t_end, y0, t_eval, rtol, atol, params, step)
    rows = list(run.rows())
    return simulation_result(model, np.array([r[0] for r in rows]), np.array([r[1] for r in rows]), "ida", run.nfev,
                             run.info, run.message, params=params)


def _prepared(model, t0, t_end, y0, t_eval, rtol, atol, params, step):
    """The `_Across` run of IDA from y0 = [q, qd] (assembled), its contacts' gaps IDA's event
    functions (located by its root finding on its BDF interpolant)."""
    from dynamica.errors import DynamicaError
    try:
        import sksundae.ida  # noqa: F401
    except ImportError:
        raise DynamicaError("method 'ida' needs SUNDIALS through scikit-sundae: pip install 'dynamica[dae]' "
                            "(or scikit-sundae); radau is the other implicit method") from None
    if not model.loops:
        raise ValueError("method 'ida' integrates the differential-algebraic equations of a model with closed "
                         "loops; this model has none: use 'radau' or 'BDF' for a stiff tree")
    from dynamica.runtime.integrators import contact_events
    n = model.n
    q0, v0 = np.array(y0[:n], dtype=float), np.array(y0[n:2 * n], dtype=float)
    g = _GGL(model, params, q0, t0)
    options, t_eval = _options(n, g.r, rtol, atol, step, t0, t_end, t_eval)
    info = {"integrator": INTEGRATOR, "constraint_rows": tuple(int(k) for k in g.rows)}
    gaps = contact_events.Gaps(model, model.param_vector(params)) if contact_events.gap_forces(model) else None
    if gaps is not None:
        def gap_events(t, y, yp, out):
            out[:] = gaps(t, y[:2 * n])[0]
        gap_events.terminal, gap_events.direction = [True] * len(gaps), [0] * len(gaps)
        options.update(eventsfn=gap_events, num_events=len(gaps))
    return _Across(model, g, options, t0, t_end, t_eval, q0, v0, params, info, gaps)


class _Across:
    """IDA stepped one step at a time, over the loops' singular configurations (module docstring):
    within APPROACH gaps of a crossing each step is cut (IDA's tstop) so as to end just outside the
    gap; there the run steps across (`_across`: IDA's own step, or below BRIDGE_RTOL scipy's Radau
    with its step across, `_bridge`), and IDA starts anew on the other side (the GGL rows chosen
    again). `rows()` hands on the output rows as they are reached (from IDA's interpolant
    over its last step, or the bridge's), so that a streamed run (progress, out) is this one run."""

    message = "The solver successfully reached the end of the integration interval."

    def __init__(self, model, g, options, t0, t_end, t_eval, q0, v0, params, info, gaps=None):
        from dynamica.runtime.integrators.singular import Crossings
        self.model, self.g, self.options, self.params, self.n = model, g, options, params, model.n
        self.t0, self.t_end, self.t_eval, self.q0, self.v0 = float(t0), float(t_end), t_eval, q0, v0
        self.bridged = options["rtol"] < BRIDGE_RTOL
        self.atol, self.rate = float(np.min(options["atol"])), 0.0          # (the rate: `_tolerances`)
        self.crossings = Crossings(model, params, t0, q0, gap=SINGULAR_GAP if self.bridged else STEP_GAP,
                                   warn=False, nearby=True)
        from dynamica.runtime.integrators.singular_start import resolve
        self.begin = resolve(self.crossings, t0, np.concatenate([q0, v0]))    # a start inside the gap: radau's
        self.calls, self._info, self.stalled, self.short, self.last = 0, info, 0, 0, 0.0
        self.gaps, self.root, self.contacts, self.restarts = gaps, None, [], 0
        if gaps is not None:                          # the side of each contact point: -1 in contact, +1 apart
            self.side = np.where(gaps(t0, np.concatenate([q0, v0]))[0] < 0, -1, 1)

    @property
    def nfev(self) -> int:
        """Residual calls of every IDA of the run and the bridges' RHS calls."""
        return self.calls + self.g.calls

    @property
    def info(self) -> dict:
        out = {**self._info, "residual_calls": self.nfev, "singular_passages": list(self.crossings.passages)}
        if self.gaps is not None:
            out.update(contacts=list(self.contacts), restarts=self.restarts)
        return out

    def _start(self, t, q, v, qdd=None):
        from sksundae.ida import IDA
        if t > self.t0:                             # after a bridge: the rows of phi chosen again
            self.calls += self.g.calls
            self.g = _GGL(self.model, self.params, q, t)
        w = self.crossings.w
        self.rate = max(self.rate, float(np.max(np.abs(w * v), initial=0.0)))
        self.options["atol"] = _tolerances(self.n, self.g.r, self.options["rtol"], self.atol, w, self.rate,
                                           self.crossings.lengths)
        yy, yp = self.g.consistent(t, q, v, qdd)
        self.short = 0
        self.solver = IDA(self.g.residual, **self.options)
        self.solver.init_step(t, yy, yp)
        return yy

    def rows(self):
        """(t, y) of each output row in order; IntegrationError if IDA fails."""
        from dynamica.errors import IntegrationError
        from dynamica.runtime.integrators.singular import APPROACH, remember
        n, crossings, t_eval, t_end = self.n, self.crossings, self.t_eval, self.t_end
        t_cur, j, fresh, t_x = self.t0, 0, 0, -math.inf
        if self.begin is None:
            y_new = self._start(t_cur, self.q0, self.v0)
        else:                                            # the start across (singular_start.py), IDA from its end
            t_cur, y_new, j = yield from self._start_across()
            fresh, t_x = 1, t_cur                        # (a failure soon after it bridges on, as after a bridge)
        past = [(t_cur, y_new[:2 * n].copy())]
        while j < len(t_eval) and t_eval[j] <= t_cur:
            yield t_eval[j], y_new[:2 * n].copy()
            j += 1
        s, delta = crossings.approaching(t_cur, y_new)
        while t_cur < t_end and j < len(t_eval):
            try:
                t_new, y_step, failed = *self._step(t_cur, s, delta), False
            except IntegrationError:
                heading = self._heading_in(s, delta)
                near = not self.bridged and math.isfinite(delta) and s < APPROACH * crossings.gap and fresh <= RETRIES
                if not (heading or near or self.bridged and 0 < fresh <= RETRIES and t_cur < t_x + self.last):
                    raise                                # (unless heading in, near a crossing, or soon after a bridge)
                t_new, y_step, failed, fresh = None, None, True, 0 if heading else fresh
            if t_new is not None:
                while j < len(t_eval) and t_eval[j] < t_new:          # IDA's interpolant over the step
                    yield t_eval[j], np.asarray(self.solver.step(float(t_eval[j])).y).reshape(-1)[:2 * n].copy()
                    j += 1
                step, t_cur, y_new = t_new - t_cur, t_new, y_step
                remember(past, t_cur, y_new[:2 * n])
                if self.root is not None:                # a contact's gap changed sign: IDA starts anew at its root
                    y_new = self._contact(t_cur, y_new)
                    past = [(t_cur, y_new[:2 * n].copy())]
                s, delta = crossings.approaching(t_cur, y_new)
            elif not failed:
                continue                                 # (IDA handed back its current point)
            crossing = t_new is not None and (crossings.crossing(s, delta, step)
                                              or self._heading_in(s, delta) and step < CRAWL * delta)
            if (crossing or failed) and t_cur < t_end:       # (a last step that ends at t_end in a gap ends the run)
                fresh = 0 if crossing else fresh
                rows, t_x, y_x, nfev = self._across(t_cur, y_new, delta, past, t_eval[j:], failed)
                self._no_contact_within(t_cur, rows, t_x, y_x)
                self.calls += nfev                       # (before its rows, which a stream reads between)
                yield from rows
                j += len(rows)
                self.last, t_cur, y_new, fresh = t_x - t_cur, t_x, y_x, fresh + 1
                yy = self._start(t_x, y_x[:n], y_x[n:], crossings.qdd(t_x, y_x[:n], y_x[n:]))
                past = [(t_cur, y_x)]
                s, delta = crossings.approaching(t_cur, yy)
            while j < len(t_eval) and t_eval[j] <= t_cur:
                yield t_eval[j], y_new[:2 * n].copy()
                j += 1

    def _start_across(self):
        """The rows of the start across (singular_start.resolve, as radau's: `simulate._Stepped`) up to its
        end t_b, IDA started anew there: (t_b, IDA's state there, the index of the next row)."""
        t_b, state, calls = self.begin
        t_eval, n, j, self.begin = self.t_eval, self.n, 0, None
        t_b = min(t_b, self.t_end)
        y_b, rows = state(t_b), [(t, state(t)) for t in t_eval[t_eval <= t_b]]
        self._no_contact_within(self.t0, rows, t_b, y_b)
        self.calls += calls                    # (before its rows, which a stream reads between)
        yield from rows
        j += len(rows)
        self.last = t_b - self.t0
        return t_b, self._start(t_b, y_b[:n], y_b[n:], self.crossings.qdd(t_b, y_b[:n], y_b[n:])), j

    def _contact(self, t, y):
        """At the root of a contact's gap (IDA stopped there, `root`: which changed sign): the contacts
        recorded (t, pair, point, +1 start / -1 end), IDA started anew from the state there (lambda
        recomputed, mu = 0), so that no step straddles the law's kink; the new [q, v, lambda, mu]."""
        for k in np.nonzero(self.root)[0]:
            self.contacts.append((float(t), *self.gaps.labels[k], int(self.side[k])))
            self.side[k] = -self.side[k]
        self.root, self.restarts = None, self.restarts + 1
        return self._start(t, y[:self.n], y[self.n:2 * self.n])

    def _no_contact_within(self, t_a, rows, t_x, y_x):
        """IntegrationError if a contact's gap is on another side at the rows of a step across (or its
        end) than before it: neither the step across nor the bridge locates contacts."""
        if self.gaps is None:
            return
        from dynamica.errors import IntegrationError
        for t, y in [*rows, (t_x, y_x)]:
            moved = np.nonzero(np.where(self.gaps(t, y[:2 * self.n])[0] < 0, -1, 1) != self.side)[0]
            if len(moved):
                pair, point = self.gaps.labels[moved[0]][:2]
                raise IntegrationError(
                    f"{self.model.spec.file}: ida: the contact {pair} (point {point}) starts or ends within the "
                    f"step across a singular configuration of the loops (t = {t_a:.6g} ... {t_x:.6g}), where ida does "
                    "not locate contacts (docs/loops.md, \"Stiff mechanisms: the DAE integrator\")")

    def _heading_in(self, s, delta) -> bool:
        """Whether a bridged run is within APPROACH gaps of a crossing, heading in: there a failure of
        IDA, or a step below CRAWL delta, hands over to the bridge from the last state (on the
        change-point four-bar at rtol 1e-12 IDA's steps fell from 2e-4 s to 1e-12 s at s = 1.44e-2,
        above the gap, and it failed there)."""
        from dynamica.runtime.integrators.singular import APPROACH
        return self.bridged and 0.0 < delta < math.inf and s < APPROACH * self.crossings.gap

    def _across(self, t_cur, y, delta, past, t_eval, failed=False):
        """Over the crossing ahead (or on from a failed restart, delta < 0): (the output rows on the way,
        the time and state where IDA starts anew, the RHS calls made): the bridge below BRIDGE_RTOL or
        where IDA `failed` near a crossing, else IDA's own step across (runtime/integrators/singular.py), and
        the bridge on from where that landed if inside the gap: at a slow crossing next to a turning point
        (the N four-bar, N = 1, started 1e-2 rad above the horizontal, rtol 1e-10: s = 2.8e-3 there at t =
        0.915) IDA started anew took accepted steps of one ulp of t for ever, from the branch's exact state
        there too; bridged on from the landing, 3096 residual calls to t = 1 (10 152 with IDA crawling
        CRAWL_STEPS steps first), a0 within 6.8e-9 rad."""
        from dynamica.errors import IntegrationError
        from dynamica.runtime.integrators.singular import step_across
        crossings, t_end = self.crossings, self.t_end
        if not (self.bridged or failed):
            stepped = step_across(crossings, past, delta, t_end)
            if stepped is None:
                raise IntegrationError(f"ida failed at t = {t_cur:g}: the crossing of a singular configuration ahead "
                                       f"is nearer than the resolution of t ({delta:.3g} s)")
            t_x, state = stepped
            times = t_eval[(t_eval > t_cur) & (t_eval <= t_x)]
            rows, y_x = [(t, state(t)) for t in times], state(t_x)
            s_x, delta_x = crossings.approaching(t_x, y_x)
            if not (s_x < crossings.gap and t_x < t_end):
                return rows, t_x, y_x, 0
            more, t_y, y_y, nfev = self._across(t_x, y_x, delta_x, [(t_x, y_x)], t_eval, True)   # (landed inside)
            return rows + more, t_y, y_y, nfev
        t_x = min(t_cur + (BRIDGE * abs(delta) if math.isfinite(delta) else self.last), t_end)
        if not t_x > t_cur:                     # (not heading in nor leaving, before any bridge: nothing to span)
            raise IntegrationError(f"ida failed at t = {t_cur:g} next to a singular configuration of the loops "
                                   f"(singular measure {crossings.measure(t_cur, y[:self.n]):.2g}), with no bridge "
                                   f"length to go on by")
        rows, y_x, nfev = _bridge(self.model, self.params, crossings, t_cur, t_x, crossings.onto(t_cur, y), t_eval,
                                  self.options["rtol"], self.atol,
                                  self.options.get("max_step", math.inf), past)
        return rows, t_x, y_x, nfev

    def _step(self, t_cur, s, delta):
        """One step of IDA, cut near a crossing: (t, y) reached, or (None, None) when IDA handed back its
        current point (a few times at most)."""
        from dynamica.errors import IntegrationError
        crossings = self.crossings
        stop = min(self.t_end, t_cur + max(crossings.max_step(s, delta), 1e-9 * (1.0 + abs(t_cur))))
        sol = self.solver.step(self.t_end, method="onestep", tstop=stop)
        if not sol.success:
            raise IntegrationError(f"ida failed at t = {t_cur:g}: {sol.message}")
        t_new = float(np.asarray(sol.t).reshape(-1)[-1])
        self.root = np.asarray(sol.i_events).reshape(-1) if sol.status == 2 and t_new > t_cur else None
        if t_new > t_cur:
            self.stalled = 0
            h, allowed = t_new - t_cur, min(stop - t_cur, self.options.get("max_step", math.inf))
            # (a step IDA chose: one cut by tstop or held by the user's `step` is no crawl)
            self.short = self.short + 1 if math.isfinite(delta) and h < CRAWL * abs(delta) and h < 0.5 * allowed \
                else 0
            if self.short > CRAWL_STEPS:
                self.short = 0
                raise IntegrationError(f"ida crawls at t = {t_cur:g}: {CRAWL_STEPS} steps below {CRAWL:g} times the "
                                       f"time to the crossing (the loops' singular measure is {s:.2g} there)")
            return t_new, np.array(np.asarray(sol.y).reshape(-1), dtype=float)
        self.stalled += 1
        if self.stalled > 3:
            raise IntegrationError(f"ida failed at t = {t_cur:g}: its steps no longer advance t (the loops' "
                                   f"singular measure is {s:.2g} there, the hand-over to the bridge is below "
                                   f"{crossings.gap:g})")
        return None, None


def stream(model, t0, t_end, y0, t_eval, cuts, rtol, atol, params, jacobian=None, step=None):
    """The rows of one `ida` run handed on piece by piece between `cuts` (simulate's STREAMS: progress,
    out, keep=False), as `_stream_scipy` does: the rows and residual calls of one uninterrupted run,
    the singular configurations bridged and the contacts located as without pieces; `step`: IDA's
    largest step, as `run_ida`'s."""
    run = _prepared(model, t0, t_end, y0, t_eval, rtol, atol, params, step)
    from dynamica.runtime.integrators.simulate import pieces
    yield from pieces(run.rows(), cuts, lambda: (run.nfev, run.info, run.message))


def _bridge(model, params, crossings, t_a, t_x, y_a, t_eval, rtol, atol, max_step=math.inf, past=()):
    """scipy's Radau from the state y_a at t_a (projected) to t_x across the singular configuration
    between them, with its own step across (runtime/integrators/simulate.py, `stepped`), its steps at
    most `max_step` (the run's `step`), on the module's right-hand side and projection without the
    weak rows' treatment (`_Strict`): (the output rows in (t_a, t_x], the state at t_x, its RHS
    calls); its passages join `crossings`', whose measure it uses (the rows of J scaled as at the
    run's start). `past`: IDA's last states (singular.remember), radau's first step the last of them,
    and the polynomial of radau's step across through them too; a crawl (singular.CRAWL) is a step short
    against that first step as well as against the time to the crossing. On a slow change-point crossing
    at rtol 1e-12 (tests/runtime/integrators/test_singular_implicit.py, "slow": delta = 32 ms at s = 1e-2)
    radau's first step (its own choice, short) counted as a crawl, and the step across from that one
    state, a constant q'' over 64 ms, landed 9e-5 rad off the branch; with IDA's history and first step
    6.1e-6 rad (its ordinary steps, 0.2 ms, still counted as a crawl); with the crawl also relative to
    IDA's step 3.1e-10 rad."""
    import copy

    from dynamica.runtime.integrators import singular
    from dynamica.runtime.integrators.simulate import stepped as scipy_stepped
    crossings = copy.copy(crossings)              # (sharing its list of passages) with radau's gap
    crossings.gap = singular.SINGULAR_GAP
    times = np.concatenate([[t_a], t_eval[(t_eval > t_a) & (t_eval <= t_x)]])
    stepped = scipy_stepped(_Strict(model, params), "Radau", t_a, t_x, y_a, times, rtol, atol, params, "numeric",
                            crossings)
    stepped.max_step = max_step
    if len(past) >= 2:
        stepped.past = [*past[:-1], (t_a, y_a)]
        h = float(past[-1][0] - past[-2][0])
        stepped.solver = stepped.start(t_a, y_a, first_step=min(h, t_x - t_a))

        def crossing(s, delta, step, within=crossings.crossing):    # a crawl: short against IDA's steps too
            return within(s, delta, step) and (s < crossings.gap or step < singular.CRAWL * min(delta, h))
        crossings.crossing = crossing
    stepped.solver.max_step = min(crossings.max_step(*crossings.approaching(t_a, y_a)), max_step)   # (its first step)
    rows = [(float(t), np.array(y, dtype=float)) for t, y in stepped.rows() if t > t_a]
    return rows, np.array(stepped.solver.y, dtype=float), stepped.nfev



class _Strict:
    """The model as the bridge's radau sees it: its right-hand side and projection those without
    the weak rows' treatment (the module's `rhs_strict_capsule`, `project_strict_capsule`, which
    the compiled adams runs: runtime/integrators/adams_across.py), called through ctypes; the rest
    the model's. Why: with the module's own right-hand side, whose treatment of weak rows reads the
    state's defects (docs/loops.md, "Singular configurations"), radau's steps on the change-point
    four-bar (tests/data/changepoint.yaml) fell to microseconds near the crossing: at rtol 1e-12 the
    bridge did not reach the crossing in 400 s; with these the whole run takes 2.7 s, the crank within
    7.3e-11 rad of its branch's oracle after the crossing (benchmarks/bench_changepoint.py --method
    ida). On the N four-bar (N = 1, 2; 1.5 s, two passages, rtol 1e-12) the same error (B0 within
    1.9e-10 and 5.3e-11 m against 1.6e-10 and 5.7e-11) in fewer RHS calls (6206 and 8767 against
    6244 and 9016). (The compiled adams as the bridge, measured too: 1.9e-9 and 6.1e-10 m on the N
    four-bar, 2.0e-6 rad on the change-point four-bar.)"""

    def __init__(self, model, params):
        import ctypes
        self._model = model
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        dp = ctypes.POINTER(ctypes.c_double)
        self._rhs = ctypes.CFUNCTYPE(None, ctypes.c_double, dp, dp, dp)(
            get(model.module.rhs_strict_capsule, b"dynamica.rhs"))
        self._project = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_double, dp, dp, ctypes.c_double)(
            get(model.module.project_strict_capsule, b"dynamica.project"))
        self._p = np.ascontiguousarray(model.param_vector(params), dtype=float)
        self._dp, self.module = dp, _StrictModule(self)

    def __getattr__(self, name):
        return getattr(self._model, name)

    def rhs_function(self, params):
        """f(t, y) -> y' of the strict right-hand side (the parameters those given at construction)."""
        f, dp, p = self._rhs, self._dp, self._p.ctypes.data_as(self._dp)

        def rhs(t, y):
            y = np.ascontiguousarray(y, dtype=float)
            out = np.empty_like(y)
            f(float(t), y.ctypes.data_as(dp), p, out.ctypes.data_as(dp))
            return out
        return rhs

    def project(self, t, y, opts):
        """The module's projection without the weak rows' treatment, y (contiguous) in place."""
        return self._project(float(t), y.ctypes.data_as(self._dp), self._p.ctypes.data_as(self._dp), float(opts[0]))


class _StrictModule:
    """The module of `_Strict`: its `project` the strict one, the rest the model's module."""

    def __init__(self, strict):
        self._strict = strict

    def __getattr__(self, name):
        return getattr(self._strict._model.module, name)

    def project(self, t, y, p, opts):
        return self._strict.project(t, y, opts)
