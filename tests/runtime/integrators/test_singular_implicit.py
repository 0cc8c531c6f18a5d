"""The implicit integrators (radau, ida) through the singular configurations of closed loops: the
step across (runtime/integrators/singular.py, docs/loops.md "The implicit route"). The mechanism
is the N four-bar of the IFToMM benchmark library (problem A02), the oracle the reduced equation of
its parallelogram branch (tests/oracles/nfourbar.py: one coordinate, its own closed form,
independent of the generated equations). Over 1.5 s the rods pass the horizontal twice (t = 0.708
and 1.215). Before the step across, radau at rtol 1e-12 and ida at every rtol from 1e-10 stopped
at the first passage ("step size too small" / "corrector convergence failed"); ida passes them on a
bridge of radau (runtime/integrators/ida.py)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

import dynamica
from dynamica.runtime.integrators.singular import RADAU_PAST, Crossings

from helpers import nfourbar_models
from oracles import nfourbar as nf

T_END = 1.5


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return nfourbar_models(tmp_path_factory.mktemp("nfourbar_implicit"))


def _run(model, n, method, rtol):
    res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01, method=method)
    ia = model.coordinates.index("a0")
    ref, _ = nf.reference(n, res.t)
    error = float(np.abs(nf.b0_x(res.q[:, ia]) - nf.b0_x(ref)).max())
    residual = max(float(np.abs(model.constraints(q)).max()) for q in res.q)
    return res, error, residual


@pytest.mark.parametrize("n", [1, 2])
def test_radau_passes_the_singular_positions_within_100_rtol(models, n):
    """radau at rtol 1e-10 and 1e-12: both passages stepped across, B0 within 100 rtol of the
    reduced equation (measured N = 1: 2.2e-11 and 2.3e-13 m; N = 2: 2.1e-11 and 3.9e-13 m, the
    same as before the first passage), the constraints at the rounding level (measured <= 2.9e-15)."""
    for rtol in (1e-10, 1e-12):
        res, error, residual = _run(models[n], n, "radau", rtol)
        assert len(res.info["singular_passages"]) == 2, res.info["singular_passages"]
        assert error <= 100 * rtol, (rtol, error)
        assert residual <= 1e-13


@pytest.mark.parametrize("n", [1, 2])
def test_ida_passes_the_singular_positions(models, n):
    """ida at rtol 1e-8 and 1e-10: both passages stepped across, on the branch. IDA's own error on
    this motion without a passage (1.2 s from an exact state, t = 1.3 ... 2.5) is 1.2e-6 rad at rtol
    1e-8 and 8.2e-9 at 1e-10; measured through the two passages, B0: N = 1 1.3e-7 and 1.0e-8 m,
    N = 2 4.8e-7 and 8.9e-9 m. Bounds about 10 times that."""
    for rtol, bound in ((1e-8, 5e-6), (1e-10, 1e-7)):
        res, error, residual = _run(models[n], n, "ida", rtol)
        assert len(res.info["singular_passages"]) == 2, res.info["singular_passages"]
        assert error <= bound, (rtol, error)
        assert residual <= 1e3 * rtol


@pytest.mark.parametrize("n", [1, 2])
def test_ida_at_rtol_1e_12_passes_the_singular_positions(models, n):
    """ida at rtol 1e-12 (before the bridge it failed right after the first step across, t = 0.7105
    for N = 1, 0.7174 for N = 2): both passages bridged (radau across them, runtime/integrators/ida.py),
    B0 within 2e-9 m of the reduced equation (measured 1.6e-10 m for N = 1, 1.4e-10 m for N = 2,
    against 1.0e-8 and 8.9e-9 at rtol 1e-10: the error falls with the tolerance; the bound is below
    what rtol 1e-10 gives), the constraints within 1000 rtol (measured 1.3e-12)."""
    res, error, residual = _run(models[n], n, "ida", 1e-12)
    assert len(res.info["singular_passages"]) == 2, res.info["singular_passages"]
    assert error <= 2e-9, error
    assert residual <= 1e-9


def _streamed_is_plain(model, kw, tmp_path=None, segments=20):
    """(plain, streamed, written): the run without and with `progress` (and with `out` when tmp_path
    is given), asserted to give the same rows bit for bit and the same calls; `segments` pieces."""
    plain = dynamica.simulate(model, **kw)
    pieces = []
    streamed = dynamica.simulate(model, progress=lambda res, new: pieces.append(new), segments=segments, **kw)
    written = dynamica.simulate(model, out=tmp_path / "rows.csv", **kw) if tmp_path is not None else plain
    assert len(pieces) == segments
    assert np.array_equal(streamed.t, plain.t) and np.array_equal(streamed.q, plain.q)
    assert np.array_equal(streamed.qd, plain.qd)
    assert streamed.nfev == plain.nfev == written.nfev
    return plain, streamed, written


def test_ida_with_progress_and_out_is_the_run_without(models, tmp_path):
    """With `progress` and `out` an ida run is one run handed on piece by piece (simulate's STREAMS):
    the same rows, bit for bit, the same residual calls and passages as the plain run (before, each
    piece was a new run, and one that started inside a crossing's window stopped with an error)."""
    model, kw = models[1], {"t_end": T_END, "rtol": 1e-10, "atol": 1e-10, "output_step": 0.01, "method": "ida"}
    plain, streamed, _ = _streamed_is_plain(model, kw, tmp_path)
    assert len(plain.info["singular_passages"]) == 2
    assert [p[:2] for p in streamed.info["singular_passages"]] == [p[:2] for p in plain.info["singular_passages"]]
    rows = np.loadtxt(tmp_path / "rows.csv", delimiter=",", skiprows=1)
    assert rows.shape[0] == len(plain.t) and np.array_equal(rows[:, 1:1 + model.n], plain.q)


def test_the_step_across_from_exact_states_lands_on_the_branch(models):
    """The polynomial of the step across, fed exact states of the branch (the reduced equation)
    0.9 ms apart before the crossing (s = 7.9e-4, delta = 0.55 ms), lands 2 delta later within
    1e-13 rad and 1e-11 rad/s of the branch (measured 2.7e-16 and 8.3e-14; the accelerations near
    the crossing are exact to about w^2 eps / d^3, w the rate, d the distance in rad), i.e. on the
    parallelogram branch, not the crossed one (about 2 delta w ~ 5e-3 rad away)."""
    from scipy.integrate import solve_ivp
    model, n = models[1], 1
    c = nf.reduced_coefficient(n)
    sol = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 1.0), [math.pi / 2, -1.0], method="DOP853",
                    rtol=1e-14, atol=1e-14, dense_output=True)

    def state(t):
        q, v = nf.branch_state(model.coordinates, *sol.sol(t))
        return np.concatenate([q, v])

    crossings = Crossings(model, None, 0.0, state(0.0)[:n + 2])
    t2 = 0.7079
    s, delta = crossings.approaching(t2, state(t2))
    assert s < crossings.gap and 0.0 < delta < 1e-3
    past = [(t2 - 9e-4 * k, state(t2 - 9e-4 * k)) for k in range(4, -1, -1)]
    t_b = t2 + 2 * delta
    y_b = crossings.across(past, t_b)(t_b)
    exact = state(t_b)
    assert np.abs(y_b[:3] - exact[:3]).max() <= 1e-13
    assert np.abs(y_b[3:] - exact[3:]).max() <= 1e-11


def _exact_states(model, n, t_end):
    """q, q' on the parallelogram branch from the reduced equation (DOP853 at 1e-14), as a function of t."""
    from scipy.integrate import solve_ivp
    c = nf.reduced_coefficient(n)
    sol = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, t_end), [math.pi / 2, -1.0], method="DOP853",
                    rtol=1e-14, atol=1e-14, dense_output=True)

    def state(t):
        q, v = nf.branch_state(model.coordinates, *sol.sol(t))
        return np.concatenate([q, v])
    return sol, state


def test_radau_steps_across_a_long_jump_at_the_rounding_level(models):
    """radau's step across (its polynomial of q'' through RADAU_PAST past states) fed exact states of the
    branch (N = 2) spaced about delta apart, 1.5 ms before the crossing (delta = 1.5 ms, a jump of 3 ms, as
    radau's runs at rtol 1e-12 make at some passages): the landing within 1e-13 rad and 5e-13 rad/s of
    the branch (measured 3.2e-15 and 2.1e-14 with nine states; with five, the polynomial's truncation
    error, growing like delta^6, left 8.6e-12 rad/s, an energy lost at the passage that then grew into a
    drift of phase: docs/loops.md, "The implicit route")."""
    from scipy.optimize import brentq
    model, n = models[2], 2
    sol, state = _exact_states(model, n, 1.0)
    t_c = brentq(lambda t: sol.sol(t)[0], 0.6, 0.8)                 # the rods horizontal
    crossings = Crossings(model, None, 0.0, state(0.0)[:model.n])
    t2 = t_c - 1.5e-3
    s, delta = crossings.approaching(t2, state(t2))
    assert 0.0 < delta < 2e-3 and s < 2 * crossings.gap
    h = 1.01 * delta                                 # (singular.spread keeps points at least delta apart)
    past = [(t2 - h * k, state(t2 - h * k)) for k in range(RADAU_PAST - 1, -1, -1)]
    t_b = t2 + 2 * delta
    y_b = crossings.across(past, t_b, RADAU_PAST)(t_b)
    exact = state(t_b)
    assert len(crossings.passages[-1][3]) == RADAU_PAST
    assert np.abs(y_b[:model.n] - exact[:model.n]).max() <= 1e-13
    assert np.abs(y_b[model.n:] - exact[model.n:]).max() <= 5e-13


@pytest.mark.slow
def test_radau_through_eight_passages_at_its_reduced_accuracy(models):
    """radau at rtol 1e-12 over 8 s (N = 2, eight passages stepped across): B0 within 2e-11 m of the
    reduced equation (measured 7.8e-12; radau on the reduced equation itself 1.6e-12 over the same 8 s;
    with the step across through five past states 7.6e-11, the energy lost at the passages, up to 4e-12
    relative at one, growing into a drift of phase). About 15 s."""
    model, n = models[2], 2
    res = dynamica.simulate(model, t_end=8.0, rtol=1e-12, atol=1e-12, output_step=0.01, method="radau")
    ia = model.coordinates.index("a0")
    ref, _ = nf.reference(n, res.t)
    assert len(res.info["singular_passages"]) == 8, res.info["singular_passages"]
    assert float(np.abs(nf.b0_x(res.q[:, ia]) - nf.b0_x(ref)).max()) <= 2e-11
    assert max(float(np.abs(model.constraints(q)).max()) for q in res.q) <= 1e-13


@pytest.mark.slow
def test_radau_on_a_change_point_four_bar_without_the_weak_rows_away_from_the_crossing():
    """radau on the change-point four-bar (tests/data/changepoint.yaml, its normals turning along the
    branch) at rtol 1e-8 over 2.5 s, through the crossing near t = 1.9, against the branch's own
    one-coordinate equation (tests/oracles/changepoint.py, 40 digits, never off the constraints): the
    crank within 100 rtol (measured 1.4e-9 rad) in at most 30 000 RHS calls (measured 3714; with the
    weak rows' treatment outside the window too its steps fell to 1e-6 s at s ~ 1e-2 and the run took
    601 858 calls and 163 s, the same 1.4e-9 rad)."""
    from pathlib import Path

    from oracles import changepoint
    model = dynamica.load(str(Path(__file__).resolve().parents[2] / "data" / "changepoint.yaml"))
    q0, qd0 = model.assemble()
    bodies = [(1.0, 2.0 ** 2 / 12, 1.0, 0.0), (2.0, 4.0 ** 2 / 6, 4.0 / 3, 0.1), (1.0, 3.0 ** 2 / 12, 1.5, 0.0)]
    branch = changepoint.Branch(3, 2, 4, 3, bodies, 9.81)     # (the model file's lengths, masses, inertias)
    times = np.linspace(0.0, 2.5, 251)
    ith = model.coordinates.index("th1")
    ref, _ = changepoint.reference(branch, q0, qd0[ith], times, rtol=1e-11)   # (within 6.5e-11 of 1e-13)
    res = dynamica.simulate(model, t_end=2.5, rtol=1e-8, atol=1e-8, output_step=0.01, method="radau")
    assert len(res.info["singular_passages"]) == 1, res.info["singular_passages"]
    assert float(np.abs(res.q[:, ith] - ref).max()) <= 1e-6
    assert res.nfev <= 30000, res.nfev


@pytest.mark.parametrize("rtol, calls", [(1e-10, 20000), (1e-12, 60000)])
def test_radau_through_a_change_point_crossing_at_tight_tolerances(rtol, calls):
    """radau on the change-point four-bar (tests/data/changepoint.yaml: a generic crossing, its normals
    turning along the branch) at rtol 1e-10 and 1e-12 over 2.5 s, through the crossing near t = 1.9,
    against the quadrature oracle (tests/oracles/changepoint_quadrature.py: energy and quadrature, within
    1.2e-12 rad of the 40-digit one here): the crank within 100 rtol (measured 1.2e-11 and 4.8e-13 rad)
    in at most `calls` RHS calls (measured 9224 and 25 798). Before, leaving the crossing on the weak
    rows' treatment radau crawled (steps of 1e-11 s): 117 905 calls at 1e-10, and at 1e-12 over a
    million calls in 60 s without getting out of the window (docs/loops.md, "radau over many passages")."""
    from helpers import within_seconds
    from oracles import changepoint_quadrature as cq
    model = dynamica.load(str(Path(__file__).resolve().parents[2] / "data" / "changepoint.yaml"))
    fb = cq.Fourbar((3.0, 2.0, 4.0, 3.0), cq.bodies(3.0, 2.0, 4.0, 3.0), 9.81, 1)
    q0, qd0 = fb.state(0.6, 3.0)
    with within_seconds(60):
        res = dynamica.simulate(model, t_end=2.5, rtol=rtol, atol=rtol, output_step=0.01, method="radau",
                                q0=q0, qd0=qd0)
    assert len(res.info["singular_passages"]) == 1, res.info["singular_passages"]
    s = res.q[:, model.coordinates.index("th1")]
    T, rate = cq.times(fb, 0.6, 3.0, s)
    assert float(np.abs((T - res.t) * rate).max()) <= 100 * rtol
    assert res.nfev <= calls, res.nfev


def test_radau_with_progress_is_the_run_without(models):
    """A radau run streamed for `progress` (simulate's STREAMS) steps across as the plain run does
    (nine past states, the strict right-hand side away from a crossing): the same rows, bit for bit,
    and the same RHS calls and passages."""
    model, kw = models[2], {"t_end": T_END, "rtol": 1e-10, "atol": 1e-10, "output_step": 0.01, "method": "radau"}
    plain, streamed, _ = _streamed_is_plain(model, kw, segments=10)
    assert len(plain.info["singular_passages"]) == 2
    assert "without the weak rows' treatment" in plain.info["integrator"]


@pytest.mark.parametrize("rtol", [1e-10, 1e-12])
def test_ida_with_step_and_progress_is_the_run_with_step(models, tmp_path, rtol):
    """`step` (IDA's largest step) with `progress` and `out`: one run handed on piece by piece, the
    same rows bit for bit and the same residual calls as the plain run with `step`, at rtol 1e-10
    (IDA's own step across) and 1e-12 (the bridge, whose radau takes the same largest step). Before,
    each piece was a new run (the rows differed; one that started inside a crossing's window could
    stop with an error). The plain run's B0 stays within the bound of the runs without `step` (the
    step only limits IDA's steps; measured 1.0e-8 / 1.6e-10 m without it)."""
    model = models[1]
    kw = {"t_end": T_END, "rtol": rtol, "atol": rtol, "output_step": 0.01, "method": "ida", "step": 0.02}
    plain, _, _ = _streamed_is_plain(model, kw, tmp_path)
    assert len(plain.info["singular_passages"]) == 2
    rows = np.loadtxt(tmp_path / "rows.csv", delimiter=",", skiprows=1)
    assert rows.shape[0] == len(plain.t) and np.array_equal(rows[:, 1:1 + model.n], plain.q)
    ref, _ = nf.reference(1, plain.t)
    ia = model.coordinates.index("a0")
    assert float(np.abs(nf.b0_x(plain.q[:, ia]) - nf.b0_x(ref)).max()) <= (1e-7 if rtol > 1e-11 else 2e-9)


@pytest.mark.parametrize("motion", ["file", "from -1", "slow"])
def test_ida_at_rtol_1e_12_passes_a_change_point_crossing(motion):
    """A change-point four-bar (tests/data/changepoint.yaml, whose normals turn along the branch,
    unlike the N four-bar's) through its flat configuration at rtol 1e-12, against the branch by
    quadrature (tests/oracles/changepoint_quadrature.py: energy and the closure in closed form, no
    state off the branch; on the file's motion it agrees with tests/oracles/changepoint.py's 40
    digits). "file": the model's own motion over 2.5 s, the crossing near t = 1.9, the crank within
    1e-9 rad, 30 times below what rtol 1e-10 gives (3.0e-8); measured 9.2e-11, and 3.0e-10 from the
    same initial state assembled once more (a change at the rounding level). Before, IDA's steps
    fell to 1e-12 s at s = 1.44e-2, above the hand-over to the bridge, and it failed at t = 1.897.
    "from -1": from th1 = -1 through th1 = 0, within 1e-10 rad (measured 2.2e-11; at rtol 1e-10
    2.3e-10). Before, the bridge's radau on the module's own right-hand side did not finish in 120 s.
    "slow": from th1 = -1 on the other branch, a slow crossing (delta = 32 ms at s = 1e-2), within
    2e-9 rad (measured 3.1e-10; at rtol 1e-10 2.5e-8). Before, the bridge's radau counted its first
    steps as a crawl and stepped across from there over 64 ms: 6.1e-6 rad."""
    from oracles import changepoint_quadrature as cq
    model = dynamica.load(str(Path(__file__).resolve().parents[2] / "data" / "changepoint.yaml"))
    if motion == "file":
        q0, qd0 = model.assemble()
        fb, s0, sdot0, t_end, step = cq.Fourbar((3.0, 2.0, 4.0, 3.0), cq.bodies(3.0, 2.0, 4.0, 3.0), 9.81, 1), \
            q0[0], qd0[0], 2.5, 0.05
        assert np.allclose(np.concatenate(fb.state(s0, sdot0)), np.concatenate([q0, qd0]), atol=1e-12)
    else:
        fb, sdot0, q0, qd0, t_end = cq.crossing_start((3.0, 2.0, 4.0, 3.0), 1 if motion == "from -1" else -1,
                                                      -1.0, 20.0)
        s0, step = -1.0, t_end / 50
    start = {} if motion == "file" else {"q0": q0, "qd0": qd0}
    res = dynamica.simulate(model, t_end=t_end, rtol=1e-12, atol=1e-12, output_step=step, method="ida", **start)
    s = res.q[:, model.coordinates.index("th1")]
    assert np.all(np.diff(s) > 0) and math.floor(s[0] / (2 * math.pi)) < math.floor(s[-1] / (2 * math.pi))
    assert res.info["singular_passages"]                     # (through a flat configuration, th1 = 0 mod 2 pi)
    times, rate = cq.times(fb, s0, sdot0, s)
    assert float(np.abs((times - res.t) * rate).max()) <= {"file": 1e-9, "from -1": 1e-10, "slow": 2e-9}[motion]


def _floor_model(folder, floor, radius=0.05):
    """The N four-bar (N = 1) with a sphere on the tip of its first rod above a floor (a plane at y =
    floor, normal +y): the tip touches it when sin(phi) = floor + radius on the branch."""
    text = nf.model_text(1, "nfourbar_floor") + (
        "contact:\n  shapes:\n"
        f"    floor: {{type: plane, body: ground, at: [0, {floor}, 0], normal: [0, 1, 0]}}\n"
        f"    tip: {{type: sphere, body: rod0, at: [1.0, 0, 0], radius: {radius}}}\n"
        "  defaults: {stiffness: 1.0e+5, damping: 0.15, exponent: 1.5, friction: 0.0}\n")
    path = folder / "nfourbar_floor.yaml"
    path.write_text(text)
    return dynamica.load(str(path))


@pytest.mark.parametrize("rtol, bound", [(1e-10, 1e-7), (1e-12, 2e-9)])
def test_ida_passes_a_singular_position_in_a_model_with_contacts(tmp_path, rtol, bound):
    """ida on a model with contacts through a singular configuration: the N four-bar (N = 1) whose
    first rod's tip hits a floor 0.17 s after the first passage (t = 0.708). Oracle: the reduced
    equation of the parallelogram branch (DOP853 at 1e-13) up to the contact, and the contact's
    time where the branch's tip reaches the floor (brentq on it). B0 within `bound` before the
    contact (IDA's own step across at 1e-10, the bridge at 1e-12; measured 7.4e-9 and 1.3e-10 m), the
    contact located within `bound` s (measured 1.3e-9 and 2.2e-11 s), its start and end listed. Before,
    the contact path of ida did not step across: it failed at the passage (t = 0.708)."""
    from scipy.integrate import solve_ivp
    from scipy.optimize import brentq
    floor, radius = -0.9, 0.05
    model = _floor_model(tmp_path, floor, radius)
    c = nf.reduced_coefficient(1)
    branch = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 1.0), [math.pi / 2, -1.0], method="DOP853",
                       rtol=1e-13, atol=1e-13, dense_output=True)
    t_contact = brentq(lambda t: math.sin(branch.sol(t)[0]) - radius - floor, 0.8, 0.95, xtol=1e-15)
    res = dynamica.simulate(model, t_end=1.0, rtol=rtol, atol=rtol, output_step=0.01, method="ida")
    passages = [p[0] for p in res.info["singular_passages"]]
    assert passages and passages[0] < t_contact, passages
    assert [x[3] for x in res.info["contacts"][:2]] == [1, -1] and res.info["restarts"] >= 2
    assert abs(res.info["contacts"][0][0] - t_contact) <= bound
    before = res.t < t_contact
    ref, _ = nf.reference(1, res.t[before])
    ia = model.coordinates.index("a0")
    assert float(np.abs(nf.b0_x(res.q[before, ia]) - nf.b0_x(ref)).max()) <= bound
    if rtol == 1e-10:                # with progress: one run handed on piece by piece, the same rows
        streamed = dynamica.simulate(model, t_end=1.0, rtol=rtol, atol=rtol, output_step=0.01, method="ida",
                                     progress=lambda r, new: None, segments=7)
        assert np.array_equal(streamed.q, res.q) and streamed.nfev == res.nfev
        assert streamed.info["contacts"] == res.info["contacts"]


def test_ida_names_a_contact_within_a_step_across(tmp_path):
    """A floor the tip touches at sin(phi) = -1e-3, inside the step across of the passage at t =
    0.708 (IDA's own step across, or the bridge, neither of which locates contacts): one error
    naming the contact and the window, not a contact missed."""
    model = _floor_model(tmp_path, -0.051)
    with pytest.raises(dynamica.IntegrationError, match=r"contact_floor_tip \(point 0\) starts or ends within the "
                                                         r"step across a singular configuration"):
        dynamica.simulate(model, t_end=1.0, rtol=1e-10, atol=1e-10, output_step=0.01, method="ida")


def test_ida_failing_after_its_own_step_across_goes_on_by_the_bridge():
    """At rtol 1e-10 (IDA's own step across) on a change-point crossing from th1 = -0.6 (sign +1,
    extra 5 J; the quadrature oracle as above) IDA restarted after the step across at s = 2.7e-3,
    leaving, and its steps no longer advanced: the run stopped with an error. Now a failure near a
    crossing goes on by the bridge (strict radau) from the last state: the crank within 100 rtol
    (measured 8.6e-10 rad)."""
    from oracles import changepoint_quadrature as cq
    model = dynamica.load(str(Path(__file__).resolve().parents[2] / "data" / "changepoint.yaml"))
    fb, sdot0, q0, qd0, t_end = cq.crossing_start((3.0, 2.0, 4.0, 3.0), 1, -0.6, 5.0)
    res = dynamica.simulate(model, t_end=t_end, rtol=1e-10, atol=1e-10, output_step=t_end / 50, q0=q0, qd0=qd0,
                            method="ida")
    s = res.q[:, model.coordinates.index("th1")]
    assert s[0] < 0.0 < s[-1] and np.all(np.diff(s) > 0)
    times, rate = cq.times(fb, -0.6, sdot0, s)
    assert float(np.abs((times - res.t) * rate).max()) <= 1e-8


def _branch_a0(n, phi, times):
    """a0 on the parallelogram branch from phi heading down at 1 rad/s: scipy's DOP853 at rtol 1e-13 on
    the reduced equation (tests/oracles/nfourbar.py)."""
    from scipy.integrate import solve_ivp
    c = nf.reduced_coefficient(n)
    return solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, float(times[-1])), [phi, -1.0],
                     method="DOP853", rtol=1e-13, atol=1e-13, t_eval=times).y[0]


@pytest.fixture
def budget(monkeypatch):
    """At most 50 000 residual calls of IDA per run (the runs below take 1000 ... 5200): a run in which
    IDA crawls (steps of one ulp of t, for ever) fails instead of hanging."""
    from dynamica.runtime.integrators import ida
    residual = ida._GGL.residual

    def budgeted(self, t, y, yp, out):
        assert self.calls < 50_000, "ida crawls"
        return residual(self, t, y, yp, out)
    monkeypatch.setattr(ida._GGL, "residual", budgeted)


@pytest.mark.parametrize("n, phi, rtol", [(1, 0.0, 1e-10), (2, 1e-4, 1e-10), (2, 0.0, 1e-12)])
def test_ida_started_at_or_inside_its_gap_leaves_by_the_start_across(models, budget, n, phi, rtol):
    """ida from the N four-bar started on its branch at the horizontal (J's rank 1 of 2 with N = 1) or
    1e-4 rad above it (N = 2, s = 1.5e-4, inside ida's gap; the state 1e-3 away that the singular start
    is told by failed to project there, and the start counted as a regular one), heading down at 1 rad/s,
    0.5 s: no SingularStartWarning, the start across first (from t = 0, singular_start.py, as radau's),
    every row on the branch within 1e-9 rad and a0 within 200 rtol of the reduced equation (measured
    2.2e-9 / 1.8e-9 / 5.5e-11; ida's own error on this orbit from a regular start, 0.3 rad below the
    horizontal, over 3 s: 1.4e-8 at rtol 1e-10, 5.4e-11 at 1e-12). At rtol 1e-12 IDA crawls right after the
    start across (at s = 1.6e-2) and the bridge takes over, as after a bridge. Before: warned, N = 1 from the
    horizontal 2.0 rad off after 3 s; N = 2 from 1e-4 rad a step across from two points, then IDA crawling
    (not finished in 30 s at rtol 1e-10). At most 10 000 residual calls (measured at most 5200; N = 2 at
    rtol 1e-12 with IDA left crawling, CRAWL_STEPS off, 14 918)."""
    from dynamica.errors import SingularStartWarning
    model = models[n]
    ia = model.coordinates.index("a0")
    signs = np.array([1.0 if name.startswith("a") else -1.0 for name in model.coordinates])
    q0, qd0 = nf.branch_state(model.coordinates, phi, -1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularStartWarning)
        res = dynamica.simulate(model, t_end=0.5, rtol=rtol, atol=rtol, output_step=0.01, q0=q0, qd0=qd0,
                                method="ida")
    assert res.info["singular_passages"][0][0] == 0.0, res.info["singular_passages"]
    assert res.nfev <= 10_000, res.nfev
    assert float(np.abs(res.q * signs - res.q[:, ia:ia + 1]).max()) <= 1e-9
    assert float(np.abs(res.q[:, ia] - _branch_a0(n, phi, res.t)).max()) <= 200 * rtol


def test_ida_does_not_start_anew_inside_its_gap_after_a_slow_crossing(models, budget):
    """ida from the N four-bar (N = 1) started 1e-2 rad above the horizontal (outside its gap) at 1 rad/s,
    1 s at rtol 1e-10, through the slow crossing at t = 0.915 (1.1 rad/s, the motion turning back 0.04
    rad past it): the step across there lands at s = 2.8e-3, inside ida's gap (3e-3: the motion slows past
    the crossing), where IDA started anew took accepted steps of one ulp of t for ever (so did it from the
    branch's exact state there: the restart, not the landing). Now the bridge takes it on from the landing:
    no more steps across than crossings (two), a0 within 1e-7 of the reduced equation (measured 6.8e-9) in
    at most 6000 residual calls (measured 3096; 10 152 when IDA crawls 200 steps first and is then bridged,
    ida.CRAWL_STEPS)."""
    model = models[1]
    q0, qd0 = nf.branch_state(model.coordinates, 1e-2, -1.0)
    res = dynamica.simulate(model, t_end=1.0, rtol=1e-10, atol=1e-10, output_step=0.01, q0=q0, qd0=qd0,
                            method="ida")
    assert len(res.info["singular_passages"]) <= 2, res.info["singular_passages"]
    assert res.nfev <= 6000
    assert float(np.abs(res.q[:, model.coordinates.index("a0")] - _branch_a0(1, 1e-2, res.t)).max()) <= 1e-7


@pytest.mark.parametrize("method", ["radau", "ida"])
def test_a_streamed_run_ending_inside_the_start_across_counts_its_calls(models, method):
    """The N four-bar (N = 1) started at the horizontal, heading down at 1 rad/s, run for 4e-3 s: the
    run ends inside the start across. Streamed for `progress` it reports the calls of the plain run (the
    start across's were counted after its rows, which a stream reads between: 2 against 19 for radau, 0
    against 15 for ida), and the same end state."""
    model = models[1]
    q0, qd0 = nf.branch_state(model.coordinates, 0.0, -1.0)
    runs = [dynamica.simulate(model, t_end=4e-3, rtol=1e-10, atol=1e-10, q0=q0, qd0=qd0, output_step=1e-3,
                              method=method, **kw) for kw in ({}, {"progress": lambda *a, **k: None})]
    assert runs[0].nfev == runs[1].nfev > 5, (runs[0].nfev, runs[1].nfev)
    assert np.array_equal(runs[0].q[-1], runs[1].q[-1])


@pytest.mark.parametrize("method, rtol, found", [("ida", 1e-10, (0.15705, 0.1571)), ("ida", 1e-12, (0.1579,)),
                                                  ("radau", 1e-10, (0.15782,)), ("radau", 1e-12, (0.15782,))])
def test_a_run_ending_next_to_a_crossing(models, method, rtol, found):
    """The N four-bar (N = 1) from 0.3 rad heading down at 1 rad/s, ended at 21 times from 0.150 to 0.160
    across the first crossing (near t = 0.157) and at times found by a scan with the code before
    (`found`). Each run ends at t_end on the branch (the reduced equation by DOP853 at 1e-14: within
    100 rtol); the found ones streamed with the plain run's calls. Before: ida's last step, cut at
    t_end, ended inside the crossing's gap and it stepped across from t_end with no span left (numpy's
    "SVD did not converge", rtol 1e-10); radau (and ida's bridge, radau) after a step across landing
    just before t_end restarted with a first step past t_end (scipy's "`first_step` exceeds bounds")."""
    from scipy.integrate import solve_ivp
    model = models[1]
    q0, qd0 = nf.branch_state(model.coordinates, 0.3, -1.0)
    c = nf.reduced_coefficient(1)
    exact = solve_ivp(lambda t, y: [y[1], -c * math.cos(y[0])], (0.0, 0.16), [0.3, -1.0], method="DOP853",
                      rtol=1e-14, atol=1e-14, dense_output=True).sol
    for t_end in sorted({*np.linspace(0.150, 0.160, 21).tolist(), *found}):
        streams = ({}, {"progress": lambda *a, **k: None}) if t_end in found else ({},)
        runs = [dynamica.simulate(model, t_end=t_end, rtol=rtol, atol=rtol, q0=q0, qd0=qd0, method=method,
                                  output_step=1e-3, **kw) for kw in streams]
        q_end, _ = nf.branch_state(model.coordinates, *exact(t_end))
        assert runs[0].t[-1] == t_end and np.abs(runs[0].q[-1] - q_end).max() <= 100 * rtol, t_end
        assert all(r.nfev == runs[0].nfev and np.array_equal(r.q[-1], runs[0].q[-1]) for r in runs), t_end


def test_a_streamed_ida_run_ending_inside_its_bridge_counts_its_calls(models):
    """ida at rtol 1e-12 (the bridge, radau, over the crossing), the N four-bar (N = 1) from 0.3 rad
    heading down at 1 rad/s, ended at t = 0.1577 inside the bridge: streamed for `progress` it reports
    the plain run's calls (the bridge's were counted after its rows: 1258 against 1369)."""
    model = models[1]
    q0, qd0 = nf.branch_state(model.coordinates, 0.3, -1.0)
    runs = [dynamica.simulate(model, t_end=0.1577, rtol=1e-12, atol=1e-12, q0=q0, qd0=qd0, method="ida",
                              output_step=1e-3, **kw) for kw in ({}, {"progress": lambda *a, **k: None})]
    assert runs[0].nfev == runs[1].nfev, (runs[0].nfev, runs[1].nfev)
    assert np.array_equal(runs[0].q[-1], runs[1].q[-1])


def test_ida_held_to_short_steps_by_the_user_does_not_count_as_crawling(models, monkeypatch):
    """ida with `step` = 3e-6 s (its largest step), the N four-bar (N = 1) from 0.1 rad, heading down at
    1 rad/s, at rtol 1e-10 to past the first crossing: the steps the user's limit holds are no crawl
    (CRAWL_STEPS counted them: "ida crawls" at t = 0.063, handed to the bridge as a failure of IDA,
    182 577 calls over 0.4 s against 137 908). No step across starts from a failure."""
    from dynamica.runtime.integrators import ida
    failures = []
    across = ida._Across._across

    def spy(self, t_cur, y, delta, past, t_eval, failed=False):
        failures.append(failed)
        return across(self, t_cur, y, delta, past, t_eval, failed)

    monkeypatch.setattr(ida._Across, "_across", spy)
    model = models[1]
    q0, qd0 = nf.branch_state(model.coordinates, 0.1, -1.0)
    res = dynamica.simulate(model, t_end=0.075, rtol=1e-10, atol=1e-10, q0=q0, qd0=qd0, output_step=5e-3,
                            method="ida", step=3e-6)
    assert failures and not any(failures), failures
    assert len(res.info["singular_passages"]) == 1
