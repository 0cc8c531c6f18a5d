"""A run (the compiled adams, radau, ida) that starts at, or within the gap of, a singular configuration of
its closed loops: the start across (docs/loops.md, "Adams: stepping across", "A start inside the gap").

There the branch is chosen by the initial velocity (the state given is on the constraints and q'
is tangent to one branch), but no integrator resolves it from there: the equations off the
manifold are ill-conditioned in the gap, and the step across (singular.py) needs past states.
Here the first stretch is a collocation that evaluates nothing inside the gap: the polynomial
q''(t) through the exact constrained accelerations (`Crossings.qdd`) at NODES states one gap-time
(adams_across.GAP along the fastest coordinate, max |w q'| in consistent units: `Crossings.w`) apart,
from one to NODES gap-times after the start, integrated twice from the given (q0, q0'), each node's
state projected onto the branch nearest the polynomial there (`Crossings.onto`); the nodes are
found by a first sweep (each predicted by the polynomial through those before it) and then
fixed-point iterations, which contract by about
c T^2 (c the largest |dq''/dq|, T the stretch: 1e-3 on the N four-bar); nodes too near the crossing
for their q'' to settle (its noise grows like 1 / d^3) are spread further (WIDEN). The integrator
starts at the last node, outside the gap, as after a step across (adams_across.Across._jump,
simulate._Stepped, ida._Across._start_across); output rows inside the stretch come from the polynomial,
projected.

Left unresolved (the SingularStartWarning stays, saying why): a start at rest (no velocity to
choose the branch by), iterations that do not settle, and a landing still inside the gap (a
motion that turns back within the stretch).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.polynomial.polynomial as npp

from dynamica.runtime.integrators.adams_across import GAP  # (a gap-time: the fastest coordinate moves GAP)

#: the polynomial goes through the accelerations at NODES states, one gap-time apart from one
#: gap-time after the start. Measured on the N four-bar (N = 1, 2) started 0 ... 1e-5 rad from the
#: horizontal, the landing against the reduced equation: five nodes from one gap-time 1e-15 ...
#: 7e-15 rad, 6e-14 ... 6.6e-13 rad/s; seven 5e-16 ... 1.7e-14, 3e-14 ... 1.3e-12; seven from two
#: gap-times 1.3e-14 ... 9.4e-14, 8.8e-13 ... 6.4e-12 (the nodes' q'' carry the projection's noise,
#: about w^2 eps / d^3 at d rad from the crossing, which the longer extrapolation back to the start
#: amplifies)
NODES = 5
#: at most ITERATIONS fixed-point iterations after the first sweep; they stop when the nodes' q''
#: change by less than SETTLED times its largest value (their noise: 1e-12 ... 1e-10 relative on the
#: N four-bar), or change less than halved; a change still above UNSETTLED leaves the start unresolved
ITERATIONS, SETTLED, UNSETTLED = 12, 1e-12, 1e-8
#: ... then the nodes are spread twice as far, up to WIDEN times: on the change-point four-bar
#: (the fastest coordinate 5.9 rad/s, the crank 1.2) started 1e-5 rad from its flat configuration,
#: the nodes one gap-time apart are 4e-4 rad of the crank from it and their q'' scatter by 6e-6
WIDEN = 3


def resolve(crossings, t0, y0, gap=GAP, rescale=True, w=None):
    """For a start at or within the gap of a singular configuration (`Crossings.start`): (t_b, state,
    calls) of the start across, the run's rank (crossings.rank) that of the configurations nearby,
    and with `rescale` the scales of J's rows (crossings.scale) too (singular.NEARBY: the rows' lengths
    at the start, some near zero there, made s of the N four-bar started at the horizontal 0.18 at
    1e-2 rad from it and 1.3e-2 (N = 1) and 8e-3 (N = 2) at 1.5 rad, where radau's crawl rule then
    stepped across a crossing that was not there, 2.7 rad off after 1.2 s; with the rows' median
    lengths nearby, 2e-2 and 0.13 and 8e-2, 2.9e-11 rad. adams, whose gap is a distance, keeps the
    start's scales: with those nearby its slow crossings later in the run lost more, docs/loops.md);
    or None with the SingularStartWarning saying why it is not resolved. None for any other start."""
    if crossings.start is None:
        return None
    y0 = np.asarray(y0, dtype=float)
    before = crossings.rank, crossings.scale
    crossings.rank = crossings.start[1]
    if rescale:
        crossings.scale_nearby(t0, y0[:crossings.n])
    got = start_across(crossings, t0, y0, gap, w)
    if isinstance(got, str):
        crossings.rank, crossings.scale = before
        crossings.warn_at_start(t0, y0[:crossings.n], got)
        return None
    return got


def start_across(crossings, t0, y0, gap, w=None):
    """(t_b, state, calls) of the start across (module docstring) from (t0, y0) on the branch its
    velocity is tangent to, `gap` the distance (along the fastest coordinate) of a gap-time; or a
    string saying why the branch is not resolved. Nodes whose iterations do not settle are spread
    twice as far, up to WIDEN times. Speeds and accelerations are taken in consistent units, times w
    (default crossings.w; adams's: its gap's, adams_across.gap_units), a length over the loops' lever
    arm (w = 1 for loops of angles alone): on the isosceles slider-crank at L = 500 m (the slider at 3e4 m/s against the
    angles' 60 rad/s) the gap-time along the slider's m/s put every node inside the gap (s = 4e-4 at
    the landing), and the settle test on the slider's m/s^2 did not pass (3.7e-5 relative)."""
    y0 = np.asarray(y0, dtype=float)
    w = crossings.w if w is None else np.asarray(w, dtype=float)
    speed = float(np.abs(w * y0[crossings.n:2 * crossings.n]).max(initial=0.0))
    if not speed > 0.0:
        return " (the run starts at rest: no velocity to choose the branch by)"
    calls, dt = 0, gap / speed
    for _ in range(WIDEN + 1):
        got = _collocation(crossings, t0, y0, dt, w)
        calls += got[-1]
        if not isinstance(got[0], str):
            break
        dt *= 2.0
    if isinstance(got[0], str):
        return got[0]
    t_b, state, P, times = got[:4]
    s_b = crossings.measure(t_b, state(P, t_b)[:crossings.n])
    if s_b < crossings.gap:
        return f" (the start across landed inside the gap, sigma_r / sigma_1 = {s_b:.1e})"
    crossings.passages.append((float(t0), t_b, crossings.measure(t0, y0[:crossings.n]), times - t0))
    return t_b, (lambda t: state(P, t)), calls


def _collocation(crossings, t0, y0, dt, w):
    """(t_b, state, P, times, calls): the nodes one dt apart from t0 + dt, settled (w q''); or (why, calls)."""
    n = crossings.n
    q0, v0 = y0[:n], y0[n:2 * n]
    times = t0 + dt * np.arange(1.0, NODES + 1.0)
    scale = float(times[-1] - t0)
    xi = (times - t0) / scale

    def state(P, t):                                     # the polynomial's [q, q'] at t, projected
        V = npp.polyint(P) * scale
        Q = npp.polyint(V) * scale
        x = (t - t0) / scale
        return crossings.onto(t, np.concatenate([q0 + (t - t0) * v0 + npp.polyval(x, Q), v0 + npp.polyval(x, V)]))

    def qdd(t, y):
        return crossings.qdd(t, y[:n], y[n:])

    acc = np.zeros((0, n))
    for k, t in enumerate(times):                         # the first sweep: each node from those before it
        P = npp.polyfit(xi[:k], acc, k - 1) if k > 1 else (acc[:1] if k else np.zeros((1, n)))
        acc = np.vstack([acc, qdd(t, state(P, t))])
    change, calls = math.inf, NODES
    for _ in range(ITERATIONS):
        P = npp.polyfit(xi, acc, NODES - 1)
        new = np.array([qdd(t, state(P, t)) for t in times])
        calls += NODES
        step, acc = float(np.abs(w * (new - acc)).max()), new
        settled = step <= SETTLED * float(np.abs(w * acc).max()) or step > 0.5 * change
        change = step
        if settled:
            break
    if not change <= UNSETTLED * max(float(np.abs(w * acc).max()), 1e-300):
        return f" (the start across did not settle: q'' at its nodes changed by {change:.1e})", calls
    return float(times[-1]), state, npp.polyfit(xi, acc, NODES - 1), times, calls


def reference_level(model, crossings, t0, q0, w) -> float:
    """The watch's median at configurations around q0 (each coordinate moved by up to
    singular.NEARBY_SPAN, singular.NEARBY of them, a fixed draw, projected onto the constraints): the
    level the hand-over to Python is relative to, for a run whose start, inside the gap, is no
    measure of it (adams_across.ARM)."""
    from dynamica.runtime.integrators.singular import NEARBY, NEARBY_SPAN
    p = crossings.p
    levels, out = [], np.empty(1)
    for dq in np.random.default_rng(0).uniform(-NEARBY_SPAN, NEARBY_SPAN, (NEARBY, crossings.n)):
        y = np.concatenate([q0 + dq, np.zeros(crossings.n)])
        if model.module.project(float(t0), y, crossings.p, crossings.opts) == 0:
            model.module.con_watch(float(t0), np.ascontiguousarray(y[:crossings.n]), p, w, out)
            levels.append(float(out[0]))
    return float(np.median(levels)) if levels else 0.0
