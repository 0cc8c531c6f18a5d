"""The compiled adams through the singular configurations of closed loops: the step across of
runtime/integrators/singular.py, with the compiled loop running in C away from them
(docs/loops.md, "Adams: stepping across").

Away from a crossing the C loop runs alone; after every accepted step it evaluates the module's
watch (`dyn_con_measure` of templates/native/dynamica_constraints.h: |R_rr| / |R_11| of the pivoted
QR of J with its rows scaled as `singular.Crossings` scales them, at least sigma_r / sigma_1 / sqrt(m)),
and below ARM times its value at the start the run hands over to Python (status WATCH), or earlier
when the watch's straight line through the last two steps reaches zero within the next step (a
window narrower than a step). There the steps are taken one at a time with `singular.Crossings`
(J's singular values, the time delta to the crossing) and cut heading in, so that the last ones are
a gap-time long; once within GAP of the crossing, the state at t + JUMP delta comes from the
polynomial of the exact constrained accelerations at past states, projected onto the branch
nearest it, and adams restarts there at order 1; when the states give too few points for that
polynomial, adams steps over the crossing itself, in one step of at most JUMP delta
(`_few` of `Across`). Leaving the crossing (the watch above EXIT times its start value) the C loop
takes over again. The module's right-hand side and projection are those without the weak rows' treatment
(compiled_adams.stepper chooses them): with it, on the change-point four-bar at rtol 1e-10, adams
took steps down to 7e-8 s near the crossing (2446 RHS calls against 521) and ended 2.7e-8 rad off
against 9.0e-11."""

from __future__ import annotations

import math

import numpy as np

#: the watch, relative to its value at the start, below which the run is stepped from Python (on
#: the N four-bar from the horizontal rods' 0.15 rad, whatever N: sigma_r / sigma_1 itself is 0.54
#: at the start with N = 1, 0.023 with N = 40)
ARM = 0.1
#: ... and above which, leaving a crossing, the C loop takes over again (above ARM: no flutter)
EXIT = 0.2
#: the distance (dimensionless, along the fastest coordinate: the time to the crossing times max |w q'|,
#: w from `rate_weights`: rad for an angle, a length over the loops' lever arm) below which adams
#: steps across; radau's gap in s = sigma_r / sigma_1 (singular.SINGULAR_GAP, 1e-3) is about 3e-3 rad
#: on the N four-bar with N = 1, but 2e-2 rad with N = 40, whose J has 200 rows: a step across
#: 0.02 s long lost 1e-6 rad/s there
GAP = 2e-3
#: heading into a crossing, the last LAST gap-times are stepped one at a time (singular.PAST + 1)
LAST = 6
#: the step across goes from t to t + JUMP delta, delta the time to the crossing (2: as far past it;
#: 3 halved the RHS calls of N = 40 at rtol 1e-12 but lost 8e-11 m over two passages, against 2e-12,
#: and N = 1 ended 1.0e-7 m off at rtol 1e-10 against 2.6e-8)
JUMP = 2.0
#: leaving a crossing, a step is at most DEPART times the time in which s doubles (singular.DEPART)
DEPART = 0.5
#: within CRAWL gaps, a step below 1e-2 of the time to the crossing starts the step across, unless
#: it is more than 1.5 times the step Python took before it (`h_before`, kept across hand-overs and steps
#: across; 0 before the first: the run's first step near a crossing never counts) (adams starting, at
#: order 1, doubles its steps: from the N four-bar's
#: horizontal 3e-3 rad away, its first step of 8e-7 s crawled, and the step across from it, with the
#: polynomial through that one state, landed 2e-7 rad/s off)
CRAWL = 10.0
#: near a crossing the projection after each step is left out while its rounding noise in q',
#: |q'| eps / s^2 (s = sigma_r / sigma_1: the tangent of a state off the manifold by eps / s), exceeds
#: QUIET rtol |q'|: that noise kept adams at orders 2-4 with 1e-6 s steps for 1000-odd steps after
#: each passage of the N four-bar with N = 40 at rtol 1e-12 (s ~ 8e-5) and the error at B0 grew to
#: 3.7e-8 m over 20 s (7.0e-11 without it, 36 366 RHS calls against 8626); measured on the N four-bar
#: (N = 1 / 2 / 40, rtol 1e-8 / 1e-10 / 1e-12, B0 error m): QUIET 1e-2 5.0e-6 / 1.1e-7 / 5.0e-10,
#: 9.4e-6 / 1.8e-8 / 7.4e-11, 9.5e-7 / 2.9e-8 / 7.0e-11; QUIET 1: N = 1 9.1e-6 / 1.3e-7 / 5.4e-10,
#: N = 40 1.2e-5 at 1e-8; no projection anywhere near a crossing: N = 1 2.3e-5 / 4.3e-7 / 6.3e-10.
#: (rtol = 0: atol's level). A drift of the loops' equations beyond max(rtol, atol) (`Across.drifted`:
#: positions and velocities, each row over its scale in consistent units) is projected all the same
QUIET = 1e-2


def watch_data(crossings) -> np.ndarray:
    """w of the module's watch: [r, the inverse lengths of J's rows at the start (0: left out)]."""
    scale = np.zeros(crossings.keep.shape[0])
    scale[crossings.keep] = crossings.scale
    return np.concatenate([[float(crossings.rank)], scale])


def gap_units(model, crossings, t0, q0):
    """(w, row_scale): w of the gap (GAP), 1 for a coordinate that is an angle (or not a joint's),
    1 / ell for a length (prismatic, screw), ell the loops' lever arm: the longest column of the
    'point' rows of J (m/rad) over the angles, the median at the configurations `Crossings` samples
    near the start; row_scale of the drift guard (`drifted`), the kept rows' inverse lengths in
    J w^-1 (its columns all in m), floored as `Crossings.scale` is. Without lengths and angles both
    in loops w = 1 and row_scale = Crossings.scale. On the isosceles slider-crank
    (tests/data/isosceles.yaml) at L = 500 m the slider's m/s set the gap, 1000 times its rad/s:
    adams ended 3.2e-6 rad off at rtol 1e-12 (1.4e-10 with w)."""
    from dynamica.runtime.integrators.singular import ROW_FLOOR, column_weights
    Js = crossings.nearby_jacobians(t0, q0)
    w = column_weights(model, crossings.assembly, Js)
    if np.all(w == 1.0):
        return w, crossings.scale
    nearby = np.median([np.linalg.norm(J / w, axis=1) for J in Js], axis=0)
    J0 = crossings.assembly.jacobian(model, q0, t0, crossings.params)[0]
    return w, 1.0 / np.maximum(np.linalg.norm(J0 / w, axis=1), ROW_FLOOR * nearby)[crossings.keep]


class Across:
    """A compiled adams Stepper `st` run over output times, stepping across singular
    configurations (module docstring): ``run(tv, Y, j, nmax)`` as ``Stepper.run``."""

    def __init__(self, model, params, st, t0, y0, max_step=math.inf, rtol=1e-6, atol=1e-6):
        from dynamica.runtime.integrators.singular import Crossings
        self.model, self.st, self.user_max = model, st, float(max_step)
        eps = float(np.finfo(float).eps)
        self.tol = max(float(np.min(rtol)), float(np.min(atol)), eps)    # (rtol = 0: atol's level)
        self.quiet_s2 = eps / (QUIET * self.tol)                          # s^2 below it: no projection
        self.stop = False
        q0 = np.asarray(y0, dtype=float)[:model.n]
        self.crossings = Crossings(model, params, t0, q0, warn=False, units=False)
        self.rates, self.row_scale = gap_units(model, self.crossings, t0, q0)     # (the gap's units)
        self.p = model.param_vector(params)
        self.near, self.past, self.extra_calls, self.jump = False, [], 0, None
        self.h_before = 0.0                                   # the step before the last one (CRAWL)
        self.over = None            # (t, s) where adams was let step over a crossing itself (`_few`)
        self.on_step = None      # or the events of a run: on_step(t_old, t, y, intrp) -> True to stop
        self.begin = self._start(t0, np.asarray(y0, dtype=float))   # (t_b, state) of the start across, or None
        self.w = watch_data(self.crossings)
        self.level = self.measure(t0, y0)            # the watch relative to its value at the start
        if self.begin is not None:                   # (a start inside the gap is no measure of it)
            from dynamica.runtime.integrators.singular_start import reference_level
            self.level = reference_level(model, self.crossings, t0, y0[:model.n], self.w)
        if self.crossings.rank and self.level > 0.0:
            st.set_watch(model.module.watch_capsule, self.w, ARM * self.level)

    def _start(self, t0, y0):
        """(t_b, state) of the start across for a start at or within the gap of a singular
        configuration (singular_start.resolve), or None."""
        from dynamica.runtime.integrators.singular_start import resolve
        got = resolve(self.crossings, t0, y0, GAP, rescale=False, w=self.rates)      # (the gap's units)
        if got is None:
            return None
        t_b, state, calls = got
        self.extra_calls += calls - len(self.crossings.passages[-1][3])    # (_jump counts the nodes)
        return t_b, state

    def measure(self, t, y) -> float:
        out = np.empty(1)
        self.model.module.con_watch(float(t), np.ascontiguousarray(y[:self.model.n]), self.p, self.w, out)
        return float(out[0])

    def drift(self, t, y) -> tuple:
        """The largest defects of the loops' equations at y, each over its row's scale (`gap_units`):
        (positions: a dimensionless distance, velocities: a dimensionless rate, 1/s)."""
        n, cr = self.model.n, self.crossings
        q, v = y[:n], y[n:2 * n]
        phi = self.model.constraints(q, t, cr.params)[cr.keep]
        J, phit = cr.assembly.jacobian(self.model, q, t, cr.params)
        return (float(np.abs(phi * self.row_scale).max(initial=0.0)),
                float(np.abs((J @ v + phit)[cr.keep] * self.row_scale).max(initial=0.0)))

    def drifted(self, t, y) -> bool:
        """Whether the loops' equations drifted beyond the tolerance (the quiet projection's guard,
        QUIET): positions beyond tol, velocities beyond tol max |w q'| (the integrator's own error
        weights; the velocity level was not guarded before, and the rows were scaled in mixed units)."""
        dq, dv = self.drift(t, y)
        return dq > self.tol or dv > self.tol * float(np.abs(y[self.model.n:2 * self.model.n] * self.rates).max())

    def run(self, tv, Y, j, nmax):
        """At most about nmax steps towards t_bound, filling Y[j:] at tv[j:]; (code, j)."""
        from dynamica.runtime.integrators.compiled_adams import core
        st, watch = self.st, core().WATCH
        before = st.nsteps
        if self.begin is not None:                  # the start across first
            (t_b, state), self.begin = self.begin, None
            j = self._jump(tv, Y, j, min(t_b, st.t_bound), state)
            if self.stop:
                return 0, j
        while not st.done and st.nsteps - before < nmax:
            steps = st.nsteps
            code, j = st.run(tv, Y, j, 1 if self.near else nmax - (st.nsteps - before))
            if code not in (0, watch):
                return code, j
            if self.stopped(steps):
                self._stopped_over()
                return 0, j
            if not self.near:
                if code != watch:
                    return code, j
                self.near, self.past = True, []
                st.watch_level = 0.0
            j = self._after_step(tv, Y, j)
            if self.stop:                   # (the events ended the run inside a step across)
                return 0, j
        return 0, j

    def stopped(self, steps) -> bool:
        """The events (on_step) of the step just taken (when one was): True when they end the run."""
        st = self.st
        return self.on_step is not None and st.nsteps > steps and self.on_step(st.t_old, st.t, st.y, st.intrp)

    def _after_step(self, tv, Y, j):
        """Near a crossing, after an accepted step: step across, cut the next step, or hand back."""
        from dynamica.runtime.integrators.singular import remember
        st, cr = self.st, self.crossings
        t, y = st.t, st.y
        if st.done:
            if self.over is not None:
                self._stepped_over(t, cr.approaching(t, y, within=math.inf)[1])
            return j
        remember(self.past, t, y)
        before = self.h_before
        s, delta = cr.approaching(t, y, within=math.inf)
        st.projecting = s * s >= self.quiet_s2 or self.drifted(t, y)     # (from the next step)
        inside = GAP / max(float(np.abs(y[self.model.n:2 * self.model.n] * self.rates).max()), 1e-300)  # gap's time
        h, self.h_before = t - st.t_old, t - st.t_old
        self._stepped_over(t, delta)
        if 0.0 < delta < inside or (0.0 < delta < CRAWL * inside and h < min(1e-2 * delta, 1.5 * before)):
            t_b = min(t + JUMP * delta, st.t_bound)
            if self._few(t_b):              # adams steps over it itself
                st.max_step = min(JUMP * delta, self.user_max)
                self.over = (float(t), s)
                return j
            if len(self.past) >= 2:
                return self._jump(tv, Y, j, t_b, cr.across(self.past, t_b))
        if not 0.0 < delta < math.inf and self.measure(t, y) > EXIT * self.level:    # away: the C loop again
            self.near, st.max_step, st.watch_level = False, self.user_max, ARM * self.level
            st.projecting = True
            return j
        if delta < 0.0:                     # leaving: at most DEPART times the time in which s doubles
            cap = -DEPART * delta
        elif delta > (LAST + 1) * inside:   # heading in, far: halve the way to the last LAST gap-times
            cap = 0.5 * (delta - LAST * inside)
        else:                               # then a gap-time each, the last one ending at 0.75 of it
            cap = inside if delta - inside >= 0.75 * inside else max(delta - 0.75 * inside, 1e-3 * delta)
        st.max_step = min(cap, self.user_max)
        return j

    def _stepped_over(self, t, delta):
        """After adams was let step over a crossing itself (`over`): once the state no longer heads into
        it, the passage is listed (t before it, t after it, s before it, no points)."""
        if self.over is not None and not 0.0 < delta < math.inf:
            self.crossings.passages.append((self.over[0], float(t), self.over[1], np.empty(0)))
            self.over = None

    def _stopped_over(self):
        """When the events end the run in a step adams took over a crossing itself: the passage listed if
        the state at the events' time no longer heads into it (as at t_bound, `_after_step`)."""
        t_stop = getattr(self.on_step, "t_end", None)
        if self.over is not None and t_stop is not None:
            y = np.asarray(self.st.intrp(t_stop), dtype=float).reshape(-1)
            self._stepped_over(t_stop, self.crossings.approaching(t_stop, y, within=math.inf)[1])

    def _few(self, t_b) -> bool:
        """Whether the states since the hand-over (or the start, or the last step across) give fewer than
        singular.PAST points for the polynomial of a step across to t_b: then adams steps over the crossing
        itself, in one step of at most JUMP delta. Few points extrapolate badly: the step across through
        three points 3.4 ms apart of the N four-bar at 0.4 rad/s (a crossing 0.007 rad from a turning
        point, soon after the step across of the one before) landed 1.4e-7 rad/s off, fed exact states
        too (q'' = -c cos(a0) changes like 3 c^2 a0' t^2), through five 1.6e-12; through one (a run
        started 3e-3 rad from it) 3.8e-8. Adams stepping over them itself ended those 3 s runs within
        1.5e-12 and 1.6e-12 rad at rtol 1e-12, below adams on the reduced equation
        (benchmarks/bench_singular_slow.py; docs/loops.md, "Adams: stepping across")."""
        from dynamica.runtime.integrators.singular import PAST, spread
        return len(spread(self.past, t_b)) < PAST

    def _jump(self, tv, Y, j, t_b, state):
        """The rows up to t_b from the step across, then adams anew from its state at t_b."""
        st = self.st
        while j < len(tv) and tv[j] <= t_b:
            Y[j] = state(tv[j])
            j += 1
        y_b = np.ascontiguousarray(state(t_b))
        self.jump, self.over = (st.t, t_b, state), None
        self.extra_calls += len(self.crossings.passages[-1][3])          # (its q'' evaluations)
        st.max_step = self.user_max
        code = st.resume(t_b, y_b, st.t_bound)
        if code:
            from dynamica.errors import IntegrationError
            raise IntegrationError(f"the right-hand side failed at t = {t_b!r} after a step across a "
                                   f"singular configuration of the loops")
        self.past = [(t_b, y_b)]
        if self.on_step is not None:
            self.stop = bool(self.on_step(self.jump[0], t_b, y_b, state))
        return j

    def intrp(self, t):
        """y(t) within the last step, or within the last step across when it ended there."""
        if self.jump is not None and self.jump[1] == self.st.t and self.jump[0] < t <= self.jump[1]:
            return self.jump[2](t)
        return self.st.intrp(t)

    def info(self) -> dict:
        return {"singular_passages": list(self.crossings.passages)}
