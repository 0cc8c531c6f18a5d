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


def test_a_run_started_next_to_a_crossing_steps_across_it_once(models):
    """The N four-bar (N = 1) started 1e-4 rad above the horizontal, heading down at 1 rad/s, 1 s at
    rtol 1e-10: one step across at t = 1e-4 and a0 within 100 rtol of the reduced equation (scipy's
    DOP853 at rtol 1e-13; measured 1.2e-10). With J's rows scaled by their lengths at the start the
    closure's x row, 1e-4 long there, hid the crossing and made fake ones beyond it (four steps
    across in 0.01 s, 6e-5 rad off)."""
    from scipy.integrate import solve_ivp
    model = models[1]
    ia = model.coordinates.index("a0")
    c = nf.reduced_coefficient(1)
    q0, qd0 = nf.branch_state(model.coordinates, 1e-4, -1.0)
    res = dynamica.simulate(model, t_end=1.0, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0, qd0=qd0)
    ref = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 1.0), [1e-4, -1.0], method="DOP853",
                    rtol=1e-13, atol=1e-13, t_eval=res.t).y[0]
    assert [round(p[0], 4) for p in res.info["singular_passages"]] == [1e-4]
    assert float(np.abs(res.q[:, ia] - ref).max()) <= 1e-8


def test_a_pure_atol_run_steps_across(models):
    """rtol = 0 (atol 1e-10 alone) through the first passage: the quiet projection's level from atol
    (it divided by rtol before); a0 within 1e-7 of the reduced equation (measured 8.8e-11)."""
    model = models[1]
    res = dynamica.simulate(model, t_end=1.0, rtol=0.0, atol=1e-10, output_step=0.01)
    ref, _ = nf.reference(1, res.t)
    assert len(res.info["singular_passages"]) == 1
    assert float(np.abs(res.q[:, model.coordinates.index("a0")] - ref).max()) <= 1e-7


def test_a_run_started_at_or_next_to_a_crossing_is_warned_about(models):
    """SingularStartWarning naming the loop for the N four-bar (N = 1) started at the horizontal (J's
    rank 1 there, 2 at a state projected onto the constraints 1e-3 away) and 1e-6 rad from it
    (s = 2e-5, inside the gap 1e-3), where which branch the motion takes is not resolved (measured:
    adams at rtol 1e-10 0.95 rad off the parallelogram branch from 1e-6 rad); none 1e-3 rad from it."""
    from dynamica.errors import SingularStartWarning
    model = models[1]
    for phi, warned in ((0.0, "starts at"), (1e-6, "within the gap"), (1e-3, None)):
        q0, qd0 = nf.branch_state(model.coordinates, phi, -1.0)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            dynamica.simulate(model, t_end=0.01, q0=q0, qd0=qd0)
        got = [str(w.message) for w in caught if issubclass(w.category, SingularStartWarning)]
        assert all(w.filename == __file__ for w in caught if issubclass(w.category, SingularStartWarning))
        if warned is None:
            assert got == [], got
        else:
            assert len(got) == 1 and warned in got[0] and "'pin0'" in got[0], got


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
