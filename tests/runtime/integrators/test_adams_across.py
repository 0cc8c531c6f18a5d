"""adams (the default) through the singular configurations of closed loops: the watch of the
compiled loop and the step across (runtime/integrators/adams_across.py, docs/loops.md).

Oracles: numpy's SVD of the loops' Jacobian (the watch's bound), the reduced equation of the
IFToMM A02 N four-bar's parallelogram branch (tests/oracles/nfourbar.py, one coordinate, a closed
form of its own) and the change-point four-bar's branch equation in 40 digits
(tests/oracles/changepoint.py)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import dynamica
from dynamica.runtime.integrators.adams_across import watch_data
from dynamica.runtime.integrators.singular import Crossings

from helpers import nfourbar_models
from oracles import nfourbar as nf

CHANGE_POINT = Path(__file__).resolve().parents[2] / "data" / "changepoint.yaml"
ISOSCELES = Path(__file__).resolve().parents[2] / "data" / "isosceles.yaml"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return nfourbar_models(tmp_path_factory.mktemp("nfourbar_adams"), sizes=(1, 2, 5))


def _watch(model, q, w):
    out = np.empty(1)
    model.module.con_watch(0.0, np.ascontiguousarray(q, dtype=float), model.param_vector(), w, out)
    return float(out[0])


@pytest.mark.parametrize("n", [1, 2, 5])
def test_the_watch_bounds_the_singular_measure_and_vanishes_at_the_crossing(models, n):
    """The module's watch (|R_rr| / |R_11| of J's scaled rows by QR with column pivoting) against
    numpy's SVD of the same rows, on the branch at 1 ... 1e-9 rad from the horizontal: at least
    sigma_r / sigma_1 / sqrt(m) (the bound the hand-over to Python relies on), at most 10 times
    sigma_r / sigma_1 (measured: 1.0 ... 2.1 times it for N = 1, 2, 5), and proportional to the
    distance near it (the ratio of watch to distance constant within 1 % below 1e-3 rad)."""
    model = models[n]
    q0, _ = model.assemble()
    cr = Crossings(model, None, 0.0, q0)
    w = watch_data(cr)
    m = int(w.shape[0] - 1)
    slopes = []
    for d in (1.0, 0.3, 1e-1, 1e-2, 1e-3, 1e-5, 1e-7, 1e-9):
        q, _ = nf.branch_state(model.coordinates, d, 1.0)
        s = cr.measure(0.0, q)
        watch = _watch(model, q, w)
        assert s / math.sqrt(m) * (1 - 1e-9) <= watch <= 10.0 * s, (d, s, watch)
        if d <= 1e-3:
            slopes.append(watch / d)
    assert max(slopes) <= 1.01 * min(slopes), slopes


@pytest.mark.parametrize("n", [1, 2])
def test_adams_steps_across_each_passage_of_the_n_four_bar(models, n):
    """1.5 s (two passages, t = 0.708 and 1.215) with the default integrator: each passage stepped
    across once (info["singular_passages"]), B0 within 100 rtol of the reduced equation at rtol
    1e-10 and 1e-12 (measured N = 1: 7.4e-11, 2.5e-12; N = 2: 3.3e-11, 3.3e-12; at rtol 1e-8
    2.7e-8 and 8.7e-9), the constraints at the rounding level."""
    model = models[n]
    ia = model.coordinates.index("a0")
    for rtol in (1e-10, 1e-12):
        res = dynamica.simulate(model, t_end=1.5, rtol=rtol, atol=rtol, output_step=0.01)
        ref, _ = nf.reference(n, res.t)
        err = float(np.abs(nf.b0_x(res.q[:, ia]) - nf.b0_x(ref)).max())
        assert err <= 100 * rtol, (rtol, err)
        assert len(res.info["singular_passages"]) == 2, res.info["singular_passages"]
        assert max(float(np.abs(model.constraints(q)).max()) for q in res.q) <= 1e-13


def test_a_streamed_run_steps_across_as_the_plain_run():
    """`progress` (the run stepped from Python piece by piece) gives the same rows, RHS calls and
    passages as the plain run through the change-point four-bar's crossing near t = 1.9."""
    model = dynamica.load(str(CHANGE_POINT))
    kw = dict(t_end=2.5, rtol=1e-10, atol=1e-10, output_step=0.01)
    plain = dynamica.simulate(model, **kw)
    streamed = dynamica.simulate(model, progress=lambda *a: None, **kw)
    assert len(plain.info["singular_passages"]) == 1
    assert np.array_equal(plain.q, streamed.q) and np.array_equal(plain.qd, streamed.qd)
    assert plain.nfev == streamed.nfev
    assert [p[:2] for p in plain.info["singular_passages"]] == [p[:2] for p in streamed.info["singular_passages"]]


def test_without_the_step_across_the_tight_tolerance_run_is_worse():
    """The step across is what passes the change-point four-bar's crossing at rtol 1e-12: the
    compiled loop alone (step_across=False, the module's weak rows' treatment) ends 1.6e-8 rad
    off after it; with it, 100 rtol (the test can fail: each variant against the same oracle)."""
    from dynamica.runtime.integrators.compiled_adams import solve

    from oracles import changepoint
    model = dynamica.load(str(CHANGE_POINT))
    q0, qd0 = model.assemble()
    bodies = [(1.0, 4.0 / 12, 1.0, 0.0), (2.0, 16.0 / 6, 4.0 / 3, 0.1), (1.0, 9.0 / 12, 1.5, 0.0)]
    branch = changepoint.Branch(3, 2, 4, 3, bodies, 9.81)
    i1 = model.coordinates.index("th1")
    times = np.linspace(2.05, 2.5, 10)
    ref = changepoint.reference(branch, q0, qd0[i1], np.r_[0.0, times], rtol=1e-11)[0][1:]
    errors = {}
    for across in (True, False):
        res = solve(model, (0.0, 2.5), np.r_[q0, qd0], t_eval=times, rtol=1e-12, atol=1e-12, step_across=across)
        errors[across] = float(np.abs(res.y[i1] - ref).max())
    assert errors[True] <= 1e-10 < 1e-9 <= errors[False], errors


@pytest.mark.parametrize("n", [1, 2])
def test_a_run_with_events_steps_across_and_locates_them(models, n):
    """`events` with the default integrator: the run steps across the first passage (it did not
    with events before) and locates a0 = 0 (inside the step across, on its polynomial), a0 = -0.5
    and, terminal, a0 = -pi/2 (before the second passage) at the reduced equation's times (scipy's DOP853 with
    events at rtol 1e-13 on the one-coordinate equation) within 100 rtol at rtol 1e-10
    (measured N = 1: 1.7e-12 s)."""
    from scipy.integrate import solve_ivp
    model = models[n]
    ia = model.coordinates.index("a0")
    c = nf.reduced_coefficient(n)
    levels = (0.0, 0.5, math.pi / 2)
    events = [lambda t, y, a=a: y[ia] + a for a in levels]
    events[2].terminal, events[2].direction = True, -1
    res = dynamica.simulate(model, t_end=1.5, rtol=1e-10, atol=1e-10, output_step=0.01, events=events)
    ref = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 1.5), [math.pi / 2, -1.0], method="DOP853",
                    rtol=1e-13, atol=1e-13, events=[lambda t, y, a=a: y[0] + a for a in levels])
    assert res.info["status"] == 1 and res.t[-1] <= ref.t_events[2][0]
    assert len(res.info["singular_passages"]) == 1
    t_2, t_b = res.info["singular_passages"][0][:2]
    assert t_2 < res.info["t_events"][0][0] < t_b                  # (a0 = 0 inside the step across)
    for got, want in zip(res.info["t_events"], ref.t_events):
        assert len(got) == 1 and abs(got[0] - want[0]) <= 1e-8, (got, want)


def test_near_a_crossing_the_projection_is_left_out_while_its_noise_exceeds_the_tolerance(models, monkeypatch):
    """The rule of adams_across.QUIET, after every step near the crossings of 1.5 s of the N four-bar
    (N = 5, rtol 1e-8 and 1e-12): the projection follows the step when s^2 >= eps / (QUIET rtol) or
    the loops' equations drifted beyond rtol, and only then; both happen. (Its effect, N = 40 over
    20 s, is in benchmarks/bench_singular.py: 7.0e-11 m against 3.7e-8 with the projection after
    every step.)"""
    from dynamica.runtime.integrators import adams_across
    model = models[5]
    seen = []
    after = adams_across.Across._after_step

    def spy(self, tv, Y, j):
        t, y = self.st.t, self.st.y
        s = self.crossings.measure(t, y[:model.n])
        j = after(self, tv, Y, j)
        if self.near and self.st.t == t:                 # (no step across, no hand-back)
            want = s * s >= np.finfo(float).eps / (adams_across.QUIET * self.tol) or self.drifted(t, y)
            seen.append((self.st.projecting, want))
        return j

    monkeypatch.setattr(adams_across.Across, "_after_step", spy)
    for rtol in (1e-8, 1e-12):
        dynamica.simulate(model, t_end=1.5, rtol=rtol, atol=rtol, output_step=0.01)
    assert all(got == want for got, want in seen), seen
    assert {got for got, _ in seen} == {True, False}


def test_the_stepper_projects_only_when_asked():
    """Stepper.projecting: 20 steps of the change-point four-bar at rtol 1e-6 leave its loop
    equations at the rounding level with the projection, at the local errors' level without it."""
    from dynamica.runtime.integrators.compiled_adams import core
    model = dynamica.load(str(CHANGE_POINT))
    q0, qd0 = model.assemble()
    defects = {}
    for on in (True, False):
        st = core().Stepper(model.module.rhs_strict_capsule, 0.0, np.r_[q0, qd0], 0.3, model.param_vector(),
                            1e-6, 1e-6, project=model.module.project_strict_capsule)
        st.projecting = on
        assert st.projecting is on
        st.begin()
        st.run(np.array([0.3]), np.empty((1, 2 * model.n)), 0, 20)
        defects[on] = float(np.abs(model.constraints(st.y[:model.n])).max())
    assert defects[True] <= 1e-14 < 1e-9 <= defects[False], defects


def _crossings_of(phi) -> int:
    """How many times the reduced equation's angle passes a multiple of pi (the horizontal rods)."""
    return int(np.count_nonzero(np.diff(np.floor(np.asarray(phi) / math.pi))))


def _reduced_a0(n, phi0, times, when=False):
    """a0 on the branch from phi0 heading down at 1 rad/s: scipy's DOP853 at rtol 1e-13 on the reduced
    equation, at `times` and every 1e-4 s (to count the crossings; `when`: their times instead, to 1e-4 s)."""
    from scipy.integrate import solve_ivp
    c = nf.reduced_coefficient(n)
    sol = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, float(times[-1])), [phi0, -1.0],
                    method="DOP853", rtol=1e-13, atol=1e-13, dense_output=True)
    fine = np.arange(0.0, float(times[-1]), 1e-4)
    phi = sol.sol(fine)[0]
    if when:
        return sol.sol(times)[0], fine[1:][np.diff(np.floor(phi / math.pi)) != 0]
    return sol.sol(times)[0], _crossings_of(phi)


def test_a_run_started_next_to_a_crossing_keeps_to_its_branch(models):
    """The N four-bar (N = 1) started 1e-4 rad above the horizontal, heading down at 1 rad/s, 1 s at
    rtol 1e-10: no more steps across than the reduced equation has crossings (two) and a0 within 100 rtol
    of it (scipy's DOP853 at rtol 1e-13; measured 1.3e-10). With J's rows scaled by their lengths at the
    start the closure's x row, 1e-4 long there, hid the crossing and made fake ones beyond it (four steps
    across in 0.01 s, 6e-5 rad off)."""
    model = models[1]
    ia = model.coordinates.index("a0")
    q0, qd0 = nf.branch_state(model.coordinates, 1e-4, -1.0)
    res = dynamica.simulate(model, t_end=1.0, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0, qd0=qd0)
    ref, crossings = _reduced_a0(1, 1e-4, res.t)
    assert crossings == 2 and len(res.info["singular_passages"]) <= crossings, res.info["singular_passages"]
    assert float(np.abs(res.q[:, ia] - ref).max()) <= 1e-8


@pytest.mark.parametrize("n, phi0", [(1, 3e-2), (2, 0.3), (1, -0.035)])
def test_slow_crossings_next_to_a_turning_point_keep_the_accuracy(models, n, phi0):
    """The N four-bar started phi0 from the horizontal heading down at 1 rad/s, 3 s at rtol 1e-12: it
    crosses the horizontal at 1.3 / 2.8 / 0.42 rad/s and turns back 0.07 / 0.35 / 0.007 rad past the next
    crossing (five, five, four crossings). a0 within 100 rtol of the reduced equation (scipy's DOP853 at
    rtol 1e-13; measured 1.3e-12 / 6.8e-12 / 1.5e-12, adams on the reduced equation itself 1.6e-12 /
    1.1e-11 / 3.9e-12), and every crossing listed in info["singular_passages"], once, its (t, t_b)
    about the reduced equation's crossing (to its 1e-4 s grid), the steps across and the crossings adams
    stepped over itself (no points: the first one from 3e-2 rad). Before the watch's straight line and
    adams stepping over a crossing itself when its states give too few points for the step across, the
    compiled loop passed crossings unseen and steps across through one to three points landed off:
    1.5e-8 / 9.9e-10 / 7.2e-8 (benchmarks/bench_singular_slow.py); the crossings stepped over were not
    listed."""
    model = models[n]
    ia = model.coordinates.index("a0")
    q0, qd0 = nf.branch_state(model.coordinates, phi0, -1.0)
    res = dynamica.simulate(model, t_end=3.0, rtol=1e-12, atol=1e-12, output_step=0.01, q0=q0, qd0=qd0)
    ref, when = _reduced_a0(n, phi0, res.t, when=True)
    spans = [p[:2] for p in res.info["singular_passages"]]
    assert len(spans) == len(when) and all(t - 1e-4 <= tc <= t_b + 1e-4 for (t, t_b), tc in zip(spans, when)), spans
    assert float(np.abs(res.q[:, ia] - ref).max()) <= 1e-10


def test_a_run_ending_just_past_a_crossing_it_stepped_over_lists_it(models):
    """The N four-bar (N = 1) from 3e-2 rad, heading down at 1 rad/s, at rtol 1e-12: adams steps over the
    first crossing itself (too few points for a step across); a run that ends 1e-6 s before that step
    ended (past the crossing) lists it too, up to its end (it was lost when the run's last step was the
    one over the crossing); so does a run a terminal event ends at that time (it was lost there too)."""
    model = models[1]
    q0, qd0 = nf.branch_state(model.coordinates, 3e-2, -1.0)
    _, when = _reduced_a0(1, 3e-2, np.linspace(0.0, 0.1, 11), when=True)
    options = {"rtol": 1e-12, "atol": 1e-12, "output_step": 1e-3, "q0": q0, "qd0": qd0}
    first = dynamica.simulate(model, t_end=0.1, **options).info["singular_passages"][0]
    assert len(first[3]) == 0 and first[0] - 1e-4 <= when[0] <= first[1] + 1e-4, (first, when)
    t_stop = first[1] - 1e-6
    res = dynamica.simulate(model, t_end=t_stop, **options)
    spans = [p[:2] for p in res.info["singular_passages"]]
    assert len(spans) == 1 and spans[0] == pytest.approx((first[0], t_stop), abs=1e-12), spans

    def stop(t, y):
        return t - t_stop
    stop.terminal = True
    res = dynamica.simulate(model, t_end=0.1, events=[stop], **options)
    spans = [p[:2] for p in res.info["singular_passages"]]
    assert res.info["t_events"][0][0] == pytest.approx(t_stop, abs=1e-12)
    assert len(spans) == 1 and spans[0] == pytest.approx((first[0], t_stop), abs=1e-12), spans


def test_a_pure_atol_run_steps_across(models):
    """rtol = 0 (atol 1e-10 alone) through the first passage: the quiet projection's level from atol
    (it divided by rtol before); a0 within 1e-7 of the reduced equation (measured 8.8e-11)."""
    model = models[1]
    res = dynamica.simulate(model, t_end=1.0, rtol=0.0, atol=1e-10, output_step=0.01)
    ref, _ = nf.reference(1, res.t)
    assert len(res.info["singular_passages"]) == 1
    assert float(np.abs(res.q[:, model.coordinates.index("a0")] - ref).max()) <= 1e-7


def test_a_start_the_branch_is_not_resolved_at_is_warned_about(models):
    """SingularStartWarning naming the loop for the N four-bar (N = 1) started at rest at the horizontal
    (J's rank 1 there, 2 at a state projected onto the constraints 1e-3 away: no velocity to choose
    the branch by) with adams, and 1e-6 rad from it (s = 2e-5, inside the gap 1e-3), at rest too,
    with radau and ida; none for adams, radau and ida started there at 1 rad/s (the start across), none
    1e-3 rad from it. (Before ida had the start across, it warned at 1 rad/s too.)"""
    from dynamica.errors import SingularStartWarning
    model = models[1]
    for phi, rate, method, warned in ((0.0, 0.0, "adams", "starts at a singular configuration of the closed loops "
                                       "'pin0', where which branch the motion continues on is not resolved (the run "
                                       "starts at rest"), (1e-6, 0.0, "radau", "within the gap"),
                                      (1e-6, 0.0, "ida", "within the gap"), (0.0, -1.0, "ida", None),
                                      (0.0, -1.0, "radau", None), (0.0, -1.0, "adams", None),
                                      (1e-6, -1.0, "adams", None), (1e-3, -1.0, "adams", None)):
        q0, qd0 = nf.branch_state(model.coordinates, phi, rate)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dynamica.simulate(model, t_end=0.01, q0=q0, qd0=qd0, method=method)
        got = [str(w.message) for w in caught if issubclass(w.category, SingularStartWarning)]
        assert all(w.filename == __file__ for w in caught if issubclass(w.category, SingularStartWarning))
        if warned is None:
            assert got == [], got
        else:
            assert len(got) == 1 and warned in got[0] and "'pin0'" in got[0], got


@pytest.mark.parametrize("n", [1, 2])
def test_a_run_started_at_or_inside_the_gap_of_a_crossing_stays_on_its_branch(models, n):
    """The N four-bar started on its parallelogram branch at the horizontal, 1e-6 rad above it
    (heading in) and 1e-6 rad below it (heading away), at 1 rad/s, 1.2 s at rtol 1e-12 (through the
    next passage, t = 0.92): the start across first (info["singular_passages"][0] from t = 0), every
    row on the branch (a_i = a0 = -b_i within 1e-11 rad) and a0 within 100 rtol of the reduced
    equation (scipy's DOP853 at rtol 1e-13; measured N = 1: 5.1e-12 / 2.6e-12 / 7.4e-12, N = 2:
    4.4e-12 / 3.1e-12 / 3.5e-12). Before it, with a SingularStartWarning: N = 1 0.09 / 0.8 / 0.26 rad
    off, N = 2 "step size too small" at t = 0.93."""
    from scipy.integrate import solve_ivp
    model = models[n]
    ia = model.coordinates.index("a0")
    c = nf.reduced_coefficient(n)
    signs = np.array([1.0 if name.startswith("a") else -1.0 for name in model.coordinates])
    for phi in (0.0, 1e-6, -1e-6):
        q0, qd0 = nf.branch_state(model.coordinates, phi, -1.0)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = dynamica.simulate(model, t_end=1.2, rtol=1e-12, atol=1e-12, output_step=0.01, q0=q0, qd0=qd0)
        ref = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 1.2), [phi, -1.0], method="DOP853",
                        rtol=1e-13, atol=1e-13, t_eval=res.t).y[0]
        assert res.info["singular_passages"][0][0] == 0.0
        assert float(np.abs(res.q * signs - res.q[:, ia:ia + 1]).max()) <= 1e-11
        assert float(np.abs(res.q[:, ia] - ref).max()) <= 1e-10, phi


def test_the_start_velocity_chooses_the_branch(models):
    """The N four-bar (N = 1) at the horizontal lies on two branches: the parallelogram and the one
    where rod 0 stays horizontal (its tip on rod 1's pivot) while rod 1 and the bar turn together
    about that pivot, theta'' = -(3 g / 2L) cos(theta) (two slender rods, m L^2 / 3 each, gravity
    at L / 2). Started there with a1' = b0' = -1 rad/s, a0' = 0 (tangent to the second branch) at
    rtol 1e-12 for 1.2 s: a0 stays at 0 and b0 = a1 within 1e-12 rad, a1 within 100 rtol of that
    equation (scipy's DOP853 at rtol 1e-13; measured 8.4e-14, 2.2e-15, 1.3e-11; before the start
    across a0 ended 1.3 rad off)."""
    from scipy.integrate import solve_ivp
    model = models[1]
    at = {name: i for i, name in enumerate(model.coordinates)}
    qd0 = np.zeros(model.n)
    qd0[at["a1"]] = qd0[at["b0"]] = -1.0
    res = dynamica.simulate(model, t_end=1.2, rtol=1e-12, atol=1e-12, output_step=0.01, q0=np.zeros(model.n), qd0=qd0)
    ref = solve_ivp(lambda t, y: [y[1], -1.5 * nf.G / nf.LENGTH * math.cos(y[0])], (0.0, 1.2), [0.0, -1.0],
                    method="DOP853", rtol=1e-13, atol=1e-13, t_eval=res.t).y[0]
    assert float(np.abs(res.q[:, at["a0"]]).max()) <= 1e-12
    assert float(np.abs(res.q[:, at["b0"]] - res.q[:, at["a1"]]).max()) <= 1e-12
    assert float(np.abs(res.q[:, at["a1"]] - ref).max()) <= 1e-10


def test_a_start_inside_the_gap_of_a_generic_crossing_stays_on_its_branch():
    """The change-point four-bar (normals that turn, unlike the N four-bar's) started 1e-7 rad of the
    crank before its flat configuration, on each of the two branches that cross there (the two closed
    forms of the closure, tests/oracles/changepoint.py, the rates along J's null space in 40 digits),
    crank at 1.15 rad/s, 0.1 s at rtol 1e-10: the start across (its nodes spread twice and four times
    as far, singular_start.WIDEN) and the crank within 100 rtol of each branch's equation (its oracle
    at rtol 1e-11; measured 4.2e-10 and 2.6e-10, over 0.3 s 1.3e-9 and 1.5e-9: a start in doubles d
    rad from the crossing fixes its branch's tangent only to about eps / d; from 1e-5 rad 9.9e-12 and
    2.9e-11). Before it, warned: 0.089 rad off, and "step size too small"."""
    import mpmath as mp

    from oracles import changepoint
    from oracles import planar_loops as pl
    model = dynamica.load(str(CHANGE_POINT))
    bodies = [(1.0, 4.0 / 12, 1.0, 0.0), (2.0, 16.0 / 6, 4.0 / 3, 0.1), (1.0, 9.0 / 12, 1.5, 0.0)]
    i1 = model.coordinates.index("th1")
    branch = changepoint.Branch(3, 2, 4, 3, bodies, 9.81)
    with mp.workdps(pl.DPS):
        starts = []
        for q in branch._candidates(2 * mp.pi - mp.mpf("1e-7")):
            Vt = mp.svd_r(mp.matrix(branch.mech._J(q)), full_matrices=True)[2]
            starts.append(([float(x) for x in q], [float(Vt[2, k] / Vt[2, 0]) for k in range(3)]))
    lost = []
    for q, tangent in starts:
        q0 = np.array([q[0], (q[1] + math.pi) % (2 * math.pi) - 3 * math.pi,       # (th2 near -2 pi, th3 near 0)
                       (q[2] + math.pi) % (2 * math.pi) - math.pi])
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = dynamica.simulate(model, t_end=0.1, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0,
                                    qd0=1.15 * np.array(tangent))
        ref = changepoint.reference(changepoint.Branch(3, 2, 4, 3, bodies, 9.81), q0, 1.15, res.t, rtol=1e-11)[0]
        assert res.info["singular_passages"][0][0] == 0.0
        lost.append(float(np.abs(res.q[:, i1] - ref).max()))
    assert max(lost) <= 1e-8, lost


@pytest.mark.parametrize("n", [1, 2])
def test_radau_started_at_a_crossing_stays_on_its_branch(models, n):
    """radau started at the N four-bar's horizontal on the parallelogram branch at 1 rad/s, 1.2 s at
    rtol 1e-10 (through the next passage, t = 0.92): the start across, then a0 within 100 rtol of
    the reduced equation and on the branch (measured N = 1: 3.2e-11, N = 2: 2.9e-11; before it,
    warned, 0.09 and 0.19 rad off)."""
    from scipy.integrate import solve_ivp
    model = models[n]
    ia = model.coordinates.index("a0")
    c = nf.reduced_coefficient(n)
    signs = np.array([1.0 if name.startswith("a") else -1.0 for name in model.coordinates])
    q0, qd0 = nf.branch_state(model.coordinates, 0.0, -1.0)
    res = dynamica.simulate(model, t_end=1.2, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0, qd0=qd0,
                            method="radau")
    ref = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 1.2), [0.0, -1.0], method="DOP853",
                    rtol=1e-13, atol=1e-13, t_eval=res.t).y[0]
    assert res.info["singular_passages"][0][0] == 0.0
    assert float(np.abs(res.q * signs - res.q[:, ia:ia + 1]).max()) <= 1e-11
    assert float(np.abs(res.q[:, ia] - ref).max()) <= 1e-8


@pytest.mark.parametrize("method, within", [("radau", 3e-10), ("ida", 1e-7)])
def test_a_start_just_outside_the_gap_keeps_to_its_branch(models, method, within):
    """radau and ida from the N four-bar (N = 2) started 1e-3 rad above the horizontal at 1 rad/s, 1.2 s
    at rtol 1e-10: no more steps across than the reduced equation has crossings (three) and a0 within
    3 rtol of it (radau on the reduced equation: 3.4e-11 over 3 s; ida 1000 rtol, its error from the
    vertical start at this rtol is 1e-8). With J's
    rows scaled by their lengths at the start (the closures' x rows 1e-3 long there, floored at a
    tenth of their lengths nearby) s fell to 8e-3 between the crossings, and both stepped across one
    that was not there at t = 0.33 (9.7 rad off after 3 s, no warning); with the rows' median lengths
    nearby, measured radau 8.0e-10 (through two points at the first crossing; 6.7e-11 by the
    collocation), ida 1.4e-8 (warned: the start is inside its gap; now by the start across, unwarned,
    5.8e-9)."""
    model = models[2]
    ia = model.coordinates.index("a0")
    q0, qd0 = nf.branch_state(model.coordinates, 1e-3, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = dynamica.simulate(model, t_end=1.2, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0, qd0=qd0,
                                method=method)
    ref, crossings = _reduced_a0(2, 1e-3, res.t)
    assert crossings == 3 and len(res.info["singular_passages"]) <= crossings, res.info["singular_passages"]
    assert float(np.abs(res.q[:, ia] - ref).max()) <= within


def test_events_inside_the_start_across_are_located_on_its_polynomial(models):
    """The N four-bar (N = 1) started at the horizontal at 1 rad/s with events a0 = -1e-3 (inside the
    start across, which ends 1e-2 rad out) and a0 = -0.5, 0.5 s at rtol 1e-10: both at the reduced
    equation's event times (scipy's DOP853 with events at rtol 1e-13) within 1e-9 s (measured 3.1e-17
    and 3.8e-12 s)."""
    from scipy.integrate import solve_ivp
    model = models[1]
    ia = model.coordinates.index("a0")
    c = nf.reduced_coefficient(1)
    q0, qd0 = nf.branch_state(model.coordinates, 0.0, -1.0)
    levels = (1e-3, 0.5)
    res = dynamica.simulate(model, t_end=0.5, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0, qd0=qd0,
                            events=[lambda t, y, a=a: y[ia] + a for a in levels])
    ref = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 0.5), [0.0, -1.0], method="DOP853",
                    rtol=1e-13, atol=1e-13, events=[lambda t, y, a=a: y[0] + a for a in levels])
    t_b = res.info["singular_passages"][0][1]
    assert res.info["t_events"][0][0] < t_b < res.info["t_events"][1][0]
    for got, want in zip(res.info["t_events"], ref.t_events):
        assert len(got) == 1 and abs(got[0] - want[0]) <= 1e-9, (got, want)
def _across_at_rest(model, params, q0, qd0, rtol):
    """An Across on a Stepper of `model` started at (q0, qd0), as compiled_adams builds it (no step taken)."""
    from dynamica.runtime.integrators import adams_across
    from dynamica.runtime.integrators.compiled_adams import core
    p = model.param_vector(params)
    st = core().Stepper(model.module.rhs_strict_capsule, 0.0, np.r_[q0, qd0], 1.0, p, rtol, rtol,
                        project=model.module.project_strict_capsule)
    return adams_across.Across(model, params, st, 0.0, np.r_[q0, qd0], rtol=rtol, atol=rtol)


@pytest.mark.parametrize("length", [0.05, 500.0])
def test_the_quiet_projections_guard_sees_a_planted_drift_in_positions_and_velocities(length):
    """The drift guard of the quiet projection (Across.drifted), on the isosceles slider-crank 1e-3 rad
    before its crossing (where the projection is left out at rtol 1e-10), at the branch's exact state
    (tests/oracles/slidercrank.py): not drifted. With the positions moved off the constraints by
    1e2 tol (the coupler's angle by 1e2 tol rad; the crank's column of J vanishes at the crossing)
    or the velocities by 1e2 tol times the coupler's rate: drifted; by 1 tol: not; at L = 0.05 m and
    500 m alike. Before, only the positions were guarded (the planted velocity drift went unseen),
    their rows scaled in mixed units (at L = 0.05 m the slider's column, 1, against the angles'
    0.05 m/rad)."""
    from oracles import slidercrank as sc
    model = dynamica.load(str(ISOSCELES))
    params = {"L": length, "g": 9.81 * length / 0.05}
    rtol = 1e-10
    theta, rate = math.pi / 2 - 1e-3, 30.0
    across = _across_at_rest(model, params, *model.assemble(params=params), rtol)      # (from theta = 0.3)
    q, v = sc.branch_state(theta, rate, length)
    s = across.crossings.measure(0.0, q)
    assert s * s < across.quiet_s2                          # (quiet: only the guard projects here)
    assert not across.drifted(0.0, np.r_[q, v])
    assert max(across.drift(0.0, np.r_[q, v])) <= 1e-12
    off, speed = 1e2 * rtol, 2.0 * rate                     # (the coupler's th2, the fastest coordinate)
    assert across.drifted(0.0, np.r_[q + [0.0, off, 0.0], v])
    assert across.drifted(0.0, np.r_[q, v + [0.0, off * speed, 0.0]])
    assert not across.drifted(0.0, np.r_[q + [0.0, 1e-2 * off, 0.0], v + [0.0, 1e-2 * off * speed, 0.0]])
