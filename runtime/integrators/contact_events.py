"""Contact start and end as events of the Adams integrator (docs/contact.md, "Events").

A model with `contact` forces or `stop`s has, per contact point (or bound), a gap: its signed distance d (negative in
contact) and its rate n . (v_b - v_a), outputs of the generated module (`<pair>.distance`,
`<pair>.normal_velocity`: the outputs kernel, evaluated once per accepted step). The compiled
Adams step (runtime/native/adams_core.pyx) is driven one step at a time and after each:

  - a gap whose sign differs from the side it was on (outside / in contact) is located on the
    step's interpolant (`root`) (which is the motion up to there: no contact force
    changes before the first such root);
  - a gap that stayed positive at both ends while its rate went from closing to opening is
    minimised on the interpolant (a root of the rate); a negative minimum is a contact stepped
    over, located the same way.

At the earliest located time t_e the integration restarts from y(t_e) (order 1: the law's
kink at d = 0 is not inside any step), the outputs after t_e are recomputed, and the gap's side
flips. `info["contacts"]` lists (t_e, pair, point, +1 start / -1 end).
"""

from __future__ import annotations

import numpy as np


def gap_forces(model) -> list:
    """Names of the force elements with gaps: `<name>.distance` and `<name>.normal_velocity` among
    the outputs (the contact pairs and the stops; generator/mechanics/forces.py, `gaps`)."""
    keys = {key for key, _ in model.output_layout}
    return [f["name"] for f in model.spec.forces
            if f"{f['name']}.distance" in keys and f"{f['name']}.normal_velocity" in keys]


def root(f, a, b, eps):
    """A zero of f on [a, b] where f(a) and f(b) differ in sign (or one is zero): the Illinois
    variant of regula falsi (Dowell and Jarratt, BIT 11 (1971) 168), bisecting when it stalls,
    to |b - a| <= eps max(1, |a|, |b|) (no scipy: a cached model's run imports none)."""
    fa, fb = f(a), f(b)
    if fa == 0:
        return a
    if fb == 0:
        return b
    side = 0
    for _ in range(200):
        if abs(b - a) <= eps * max(1.0, abs(a), abs(b)):
            break
        c = (a * fb - b * fa) / (fb - fa)
        if not min(a, b) < c < max(a, b):
            c = (a + b) / 2
        fc = f(c)
        if fc == 0:
            return c
        if (fc < 0) == (fb < 0):                 # c replaces b; a stays
            b, fb = c, fc
            if side == -1:
                fa /= 2
            side = -1
        else:                                    # c replaces a
            a, fa = c, fc
            if side == 1:
                fb /= 2
            side = 1
    return (a + b) / 2


class Gaps:
    """(d, d') of every contact point at (t, y): flat arrays from the module's outputs kernel."""

    def __init__(self, model, p):
        self.model, self.p = model, p
        slices, self.total = model.output_slices()
        contacts = gap_forces(model)
        self.labels, self.d_idx, self.r_idx = [], [], []
        where = {key: (k, size) for key, _, k, size in slices}
        for name in contacts:
            k, size = where[f"{name}.distance"]
            kr, _ = where[f"{name}.normal_velocity"]
            self.labels += [(name, j) for j in range(size)]
            self.d_idx += range(k, k + size)
            self.r_idx += range(kr, kr + size)
        self.d_idx, self.r_idx = np.array(self.d_idx, int), np.array(self.r_idx, int)
        self.flat = np.empty(self.total)
        self.n = model.n
        self.calls = 0

    def __len__(self):
        return len(self.labels)

    def __call__(self, t, y):
        n = self.n
        self.model.module.outputs(float(t), np.ascontiguousarray(y[:n]), np.ascontiguousarray(y[n:2 * n]),
                                  self.p, self.flat)
        self.calls += 1
        return self.flat[self.d_idx].copy(), self.flat[self.r_idx].copy()


class AdamsSteps:
    """The compiled Adams step (runtime/native/adams_core.pyx), driven one accepted step at a time."""

    name = "compiled Adams PECE (Shampine-Gordon), orders 1-12, restarted at contacts"

    def __init__(self, model, p, rtol, atol, max_steps=500_000):
        from dynamica.runtime.integrators.compiled_adams import check_status, core
        self.mod, self.check = core(), check_status
        self.f, self.p, self.rtol, self.atol, self.max_steps = model.module.rhs_capsule, p, rtol, atol, int(max_steps)
        self.nfev = self.nsteps = self.nrejected = 0
        self.hist = None

    def start(self, t0, y0, tb):
        self.st = self.mod.Stepper(self.f, t0, y0, tb, self.p, self.rtol, self.atol, None, np.inf, self.max_steps,
                                   False, False, None, 1e-12)
        self.check(self.st, self.st.begin(), self.rtol, self.atol, self.max_steps)

    def step(self, tv, Y, j):
        """One accepted step, the output rows it reaches filled from its interpolant: (j, advanced)."""
        st = self.st
        before = st.nsteps
        code, j = st.run(tv, Y, j, 1)
        if code:
            self.check(st, code, self.rtol, self.atol, self.max_steps)
        self.t, self.t_old, self.y, self.intrp = st.t, st.t_old, st.y, st.intrp
        return j, st.nsteps != before

    @property
    def done(self):
        return self.st.done

    def stop(self):
        info = self.st.info()
        self.nfev, self.nsteps = self.nfev + info["nfev"], self.nsteps + info["nsteps"]
        self.nrejected += info["nrejected"]
        h = np.asarray(info["order_histogram"])
        self.hist = h if self.hist is None else self.hist + h

    def info(self):
        return {"integrator": self.name, "steps": self.nsteps, "rejected": self.nrejected,
                "order_histogram": self.hist.tolist()}


class ScipySteps:
    """One of scipy's solver classes (RK45, DOP853, Radau, BDF, LSODA), stepped as solve_ivp does,
    its dense output the step's interpolant; restarted as a new solver at each contact."""

    def __init__(self, method, fun, rtol, atol, extra=None):
        import scipy.integrate as si
        self.method, self.cls, self.fun = method, getattr(si, method), fun
        self.rtol, self.atol, self.extra = rtol, atol, dict(extra or {})
        self.name = f"scipy {method}, restarted at contacts"
        self.nfev = self.njev = self.nsteps = 0
        self.solver = None

    def start(self, t0, y0, tb):
        if self.solver is not None:
            self.stop()
        self.solver = self.cls(self.fun, t0, np.array(y0, float), tb, rtol=self.rtol, atol=self.atol, **self.extra)
        self.stalled = 0

    def step(self, tv, Y, j):
        from dynamica.errors import IntegrationError
        s = self.solver
        t_old = s.t
        msg = s.step()
        if s.status == "failed":
            raise IntegrationError(f"integration failed at t = {t_old} ({self.method}): {msg}")
        self.stalled = self.stalled + 1 if s.t == t_old else 0
        if self.stalled > 100:               # as simulate's _Stepped: a step that no longer advances t
            raise IntegrationError(f"integration failed at t = {t_old}: 100 steps of {self.method} did not advance t")
        self.nsteps += 1
        self.t, self.t_old, self.y = s.t, t_old, np.array(s.y, float)
        self.intrp = s.dense_output()
        while j < len(tv) and tv[j] <= s.t:
            Y[j] = self.intrp(tv[j])
            j += 1
        return j, s.t != t_old

    @property
    def done(self):
        return self.solver.status != "running"

    def stop(self):
        self.nfev += self.solver.nfev
        self.njev += int(getattr(self.solver, "njev", 0) or 0)
        self.solver = None

    def info(self):
        out = {"integrator": self.name, "steps": self.nsteps}
        if "jac" in self.extra or self.method in ("Radau", "BDF", "LSODA"):
            out.update(jacobian="analytic" if "jac" in self.extra else "numeric", njev=self.njev)
        return out


def _gap_roots(gaps, intrp, side, g, r, g_old, r_old, t_old, t, eps) -> list:
    """[(t_root, k)] of the gaps that changed side within the step (t_old, t] on its interpolant,
    and of those stepped over (outside at both ends, closing at the start and opening at the end,
    fast enough to reach the surface within the step)."""
    def gap(s, k):
        return gaps(s, intrp(s))[0][k]

    found = []
    for k in np.nonzero(np.where(g < 0, -1, 1) != side)[0]:
        if (gap(t_old, k) < 0) == (g[k] < 0):     # already there at the step's start: on the
            found.append((t_old, k))              # surface within round-off after a restart
        else:
            found.append((root(lambda s, k=k: gap(s, k), t_old, t, eps), k))
    for k in np.nonzero((side > 0) & (g >= 0) & (r_old < 0) & (r > 0)
                        & (np.minimum(g_old, g) < -r_old * (t - t_old)))[0]:
        def rate(s, k=k):
            return gaps(s, intrp(s))[1][k]
        if not rate(t_old) < 0 < rate(t):
            continue
        tm = root(rate, t_old, t, eps)
        if gap(tm, k) < 0:
            found.append((root(lambda s, k=k: gap(s, k), t_old, tm, eps), k))
    return found


def _user_events(events, ev, ev_new, direction, max_events, t_events, y_events, intrp, t_old, t, cutoff, eps):
    """The user's events located in the step before `cutoff` (the first contact's root: one at
    the cutoff is found after the restart), recorded in t_events / y_events; the time of the
    terminal one reached, or None."""
    from dynamica.runtime.integrators.compiled_adams import active_events
    hits = []
    for i in active_events(ev, ev_new, direction):
        te = root(lambda s, i=i: float(events[i](s, intrp(s))), t_old, t, eps)
        if te < cutoff:
            hits.append((te, i))
    stop = None
    for te, i in sorted(hits):
        if stop is not None and te > stop:
            break
        t_events[i].append(te)
        y_events[i].append(np.array(intrp(te), float))
        if len(t_events[i]) >= max_events[i]:
            stop = te
    return stop


def _restart_at(te, ks, steps, tv, Y, gaps, side, contacts):
    """The state at a contact's root te (the rows after it dropped, a row at te kept), the gaps
    ks flipped to their new side and recorded: (y, rows kept, gaps, rates)."""
    y = np.array(steps.intrp(te), float)
    j = int(np.count_nonzero(tv <= te))
    Y[j:] = np.nan
    if j and tv[j - 1] == te:
        Y[j - 1] = y
    g, r = gaps(te, y)
    for k in ks:
        side[k] = -side[k]
        contacts.append((float(te), *gaps.labels[k], int(-side[k])))
        g[k] = 0.0                               # on the surface: its side is the flipped one
    return y, j, g, r


def solve(model, t0, tb, y0, tv, p, rtol, atol, max_steps=500_000, steps=None, events=None):
    """(t, Y (len(t), n), nfev, info) of the model from (t0, y0) with contacts located (the
    module docstring); `tv` the output times (t0 included). `steps`: the integrator stepped
    (default the compiled Adams step, `AdamsSteps`; `ScipySteps` for scipy's methods). `events`:
    functions g(t, y) with scipy's `terminal` and `direction`, located on the same interpolants
    (info `t_events`, `y_events`, `status` 1 at a terminal one, as solve_ivp's)."""
    from dynamica.runtime.integrators.compiled_adams import prepare_events
    steps = AdamsSteps(model, p, rtol, atol, max_steps) if steps is None else steps
    gaps = Gaps(model, p)
    n, m = len(y0), len(tv)
    Y = np.full((m, n), np.nan)
    j = int(np.count_nonzero(tv <= t0))
    Y[:j] = y0
    g, r = gaps(t0, y0)
    side = np.where(g < 0, -1, 1)
    contacts, restarts = [], 0
    t_start, y_start = t0, np.array(y0, float)
    eps = 4 * float(np.finfo(float).eps)
    events, max_events, direction = prepare_events(events) if events else ((), np.zeros(0), np.zeros(0))
    t_events, y_events = [[] for _ in events], [[] for _ in events]
    ev = [float(e(t0, y0)) for e in events]
    status = 0
    while True:
        steps.start(t_start, y_start, tb)
        g_old, r_old = g, r
        restart = None
        while not steps.done:
            j, advanced = steps.step(tv, Y, j)
            if not advanced:
                break
            t, t_old = steps.t, steps.t_old
            g, r = gaps(t, steps.y)
            intrp = steps.intrp
            found = _gap_roots(gaps, intrp, side, g, r, g_old, r_old, t_old, t, eps)
            stop = None
            if events:                               # the user's events before the first contact's root
                ev_new = [float(e(t, steps.y)) for e in events]
                stop = _user_events(events, ev, ev_new, direction, max_events, t_events, y_events, intrp,
                                    t_old, t, min(found)[0] if found else np.inf, eps)
                ev = ev_new
            if stop is not None:
                status = 1
                j = int(np.count_nonzero(tv <= stop))
                Y[j:] = np.nan
                break
            if found:
                te = min(found)[0]
                # every gap crossing within round-off of the first (symmetric corners touch together)
                restart = (te, sorted(k for tk, k in found if tk <= te + 64 * eps * max(1.0, abs(te))))
                break
            g_old, r_old = g, r
        steps.stop()
        if restart is None:
            break
        te, ks = restart
        y_start, j, g, r = _restart_at(te, ks, steps, tv, Y, gaps, side, contacts)
        ev = [float(e(te, y_start)) for e in events]
        t_start, restarts = te, restarts + 1
    info = {**steps.info(), "contacts": contacts, "restarts": restarts, "gap_evaluations": gaps.calls,
            **({"t_events": [np.array(x) for x in t_events], "status": status,
                "y_events": [np.array(x).reshape(len(x), n) for x in y_events]} if events else {})}
    return tv[:j], Y[:j], steps.nfev, info
