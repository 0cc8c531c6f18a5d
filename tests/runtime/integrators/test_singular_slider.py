"""Singular crossings where a slider moves fastest: the isosceles slider-crank of
tests/data/isosceles.yaml (crank = coupler = L, the slider on a line through the crank pivot; the
loop's Jacobian loses rank where the slider passes the pivot) against the reduced equation of its
moving-slider branch (tests/oracles/slidercrank.py: Lagrange on the crank angle, by hand, checked
against sympy; scipy's DOP853 at rtol 1e-13). g is scaled with L, so the crank angle's motion is
the same at every L and only the units differ (benchmarks/bench_singular_slider.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import dynamica

from oracles import slidercrank as sc

ISOSCELES = Path(__file__).resolve().parents[2] / "data" / "isosceles.yaml"
#: two passages (theta = pi/2 at t = 0.087, 3 pi/2 at t = 0.258)
T_END = 0.3


@pytest.fixture(scope="module")
def model():
    return dynamica.load(str(ISOSCELES))


def _errors(model, length, **options):
    params = {"L": length, "g": 9.81 * length / 0.05}
    res = dynamica.simulate(model, t_end=T_END, output_step=0.005, params=params, **options)
    ref, _ = sc.reference(res.t, 0.3, 30.0, length, g=params["g"])
    residual = max(float(np.abs(model.constraints(q, params=params)).max()) for q in res.q) / length
    return float(np.abs(res.q[:, 0] - ref).max()), residual, res


@pytest.mark.parametrize("length, rtol", [(0.05, 1e-10), (500.0, 1e-10), (500.0, 1e-12)])
def test_adams_steps_across_where_the_slider_passes_the_pivot(model, length, rtol):
    """adams, two passages, stepped across once each: the crank angle within 100 rtol of the reduced
    equation at L = 0.05 m (the angles fastest) and at L = 500 m (the slider's m/s 1000 times its
    rad/s); measured 1.7e-10 at L = 0.05 m, rtol 1e-10; 8.1e-11 and 3.3e-12 at L = 500 m, rtol 1e-10
    and 1e-12. With the gap in metres along the slider L = 500 m ended 2.2e-9 and 1.8e-7 rad off.
    The constraints over L at the rounding level."""
    err, residual, res = _errors(model, length, rtol=rtol, atol=rtol)
    assert len(res.info["singular_passages"]) == 2, res.info["singular_passages"]
    assert err <= 100 * rtol, err
    assert residual <= 1e-13, residual


def test_radau_steps_across_where_the_slider_passes_the_pivot(model):
    """radau (its gap on s = sigma_r / sigma_1) at rtol 1e-8, L = 0.05 m: the crank angle within 100
    rtol of the reduced equation after two passages (measured 3.6e-10)."""
    err, residual, res = _errors(model, 0.05, rtol=1e-8, atol=1e-8, method="radau")
    assert err <= 100 * 1e-8, err
    assert residual <= 1e-13, residual


def test_radau_leaving_a_crossing_does_not_crawl(model):
    """radau at L = 0.05 m started 1e-4 rad past the dead centre (theta = pi/2), at 30 rad/s, 0.3 s at
    rtol 1e-10 (four crossings): leaving the one at t = 0.071 on the weak rows' treatment it crawled at
    steps of 1e-11 s, 1.3e-6 ... 1e-5 of the time from the crossing (above LEAVE_CRAWL), 8118 of them:
    309 126 RHS calls. After LEAVE_STEPS steps there it takes the strict right-hand side: 32 089 calls
    (from 0.3 rad, no crawl: 11 102), the crank within 100 rtol of the reduced equation (measured
    5.7e-12; 5.6e-12 before)."""
    theta0 = np.pi / 2 + 1e-4
    q0, qd0 = sc.branch_state(theta0, 30.0, 0.05)
    res = dynamica.simulate(model, t_end=T_END, output_step=0.005, params={"L": 0.05, "g": 9.81}, rtol=1e-10,
                            atol=1e-10, method="radau", q0=q0, qd0=qd0)
    ref, _ = sc.reference(res.t, theta0, 30.0, 0.05)
    assert res.nfev <= 60_000, res.nfev
    assert float(np.abs(res.q[:, 0] - ref).max()) <= 1e-8


def test_radau_prints_no_overflow_where_the_equations_ignore_a_coordinate(model, monkeypatch):
    """q'' of the slider-crank does not depend on the slider's x: scipy's finite-difference Jacobian
    grew its relative step there tenfold at every Jacobian, to inf after about 300 of them, and numpy
    warned "overflow encountered in multiply" (radau from 1e-6 rad of the dead centre, rtol 1e-10, 0.3
    s, crawling as before LEAVE_STEPS: 840 Jacobians in one leg). Bounded (simulate.JAC_FACTOR_MAX):
    no warning."""
    import warnings

    from dynamica.runtime.integrators import singular
    monkeypatch.setattr(singular, "LEAVE_STEPS", 10 ** 9)        # (the crawl: many Jacobians)
    q0, qd0 = sc.branch_state(np.pi / 2 + 1e-6, 30.0, 0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        dynamica.simulate(model, t_end=T_END, output_step=0.005, params={"L": 0.05, "g": 9.81}, rtol=1e-10,
                          atol=1e-10, method="radau", q0=q0, qd0=qd0)


def test_the_singular_measure_is_the_same_at_every_length(model):
    """s = sigma_r / sigma_1 of J with its columns in consistent units (singular.column_weights: a
    length over the loop's lever arm) along the moving-slider branch is the same at L = 0.05, 5 and
    500 m, and far from the gap where the crank passes theta = 0 and pi (no crossing there). With J
    in its own units s was 6.5e-3 at L = 500 m there (the slider's row, 1 m/m against 1e3 m/rad,
    scaled by its length at the start): radau stepped across a crossing that was not there."""
    from dynamica.runtime.integrators.singular import Crossings
    thetas = (0.0, 1.0, 1.5, 1.57, np.pi, 5.0, 2 * np.pi)
    measures = []
    for length in (0.05, 5.0, 500.0):
        params = {"L": length, "g": 9.81 * length / 0.05}
        cr = Crossings(model, params, 0.0, sc.branch_state(0.3, 30.0, length)[0], warn=False, nearby=True)
        measures.append([cr.measure(0.0, sc.branch_state(th, 30.0, length)[0]) for th in thetas])
    np.testing.assert_allclose(measures[1], measures[0], rtol=1e-6)
    np.testing.assert_allclose(measures[2], measures[0], rtol=1e-6)
    assert min(measures[2][0], measures[2][4], measures[2][6]) > 0.5, measures[2]
    assert measures[2][3] < 1e-3, measures[2]          # (the crossing itself, 8e-4 rad from pi/2)


@pytest.mark.parametrize("rtol, t_end", [(1e-8, 0.45), (1e-12, 0.3)])
def test_radau_keeps_the_branch_where_the_slider_moves_fastest(model, rtol, t_end):
    """radau at L = 500 m (the slider's m/s 1000 times the crank's rad/s) past the crank's theta = pi
    (t = 0.18) and 2 pi (t = 0.33): the crank angle within 100 rtol of the reduced equation, no
    SingularPassageWarning (measured 3.9e-9 and 4.4e-13 rad over 1 s). Before, s in mixed units
    stepped across there, onto another branch: 14.5 and 1.09 rad off after 1 s, silently."""
    import warnings

    from dynamica.errors import SingularPassageWarning
    params = {"L": 500.0, "g": 9.81 * 500.0 / 0.05}
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularPassageWarning)
        res = dynamica.simulate(model, t_end=t_end, output_step=0.005, params=params, rtol=rtol, atol=rtol,
                                method="radau")
    ref, _ = sc.reference(res.t, 0.3, 30.0, 500.0, g=params["g"])
    err = float(np.abs(res.q[:, 0] - ref).max())
    assert err <= 100 * rtol, err


def test_a_landing_off_the_extrapolated_state_is_reported(model, monkeypatch):
    """The guard of the step across (singular.LANDING): with the singular measure in mixed units (J's
    columns as they are, the code before) radau at L = 500 m, rtol 1e-8 steps across at theta = 2 pi
    (t = 0.33) where there is no crossing, and lands 3.9e3 jumps off its extrapolation (on the branch:
    at most 1.7e-7 measured), onto another branch: a SingularPassageWarning naming the loop and t."""
    from dynamica.errors import SingularPassageWarning
    from dynamica.runtime.integrators import singular
    init = singular.Crossings.__init__
    monkeypatch.setattr(singular.Crossings, "__init__", lambda self, *a, **k: init(self, *a, **{**k, "units": False}))
    params = {"L": 500.0, "g": 9.81 * 500.0 / 0.05}
    with pytest.warns(SingularPassageWarning, match=r"'pin' from t = 0\.33"):
        dynamica.simulate(model, t_end=0.45, output_step=0.005, params=params, rtol=1e-8, atol=1e-8, method="radau")


@pytest.mark.parametrize("rtol, theta0, rate0, t_end", [(1e-8, 6.2, 30.0, 0.02), (1e-10, 0.3, 30.0, 0.2)])
def test_ida_passes_the_slider_dead_centre_without_crawling(model, monkeypatch, rtol, theta0, rate0, t_end):
    """ida at L = 500 m through a dead centre of the slider (x' -> 0 on a scale of 3e4 m/s; no crossing
    there): at rtol 1e-8 from 0.083 rad before theta = 2 pi, 0.02 s; at rtol 1e-10 from the model's start
    through theta = pi (t = 0.183), 0.2 s. At most 20 000 residual calls (measured 853 and 4850) and the
    crank within 1000 rtol of the reduced equation (measured 2.4e-7 and 1.7e-8 rad; ida's own error over 1 s
    at L = 5 m is 580 and 420 rtol, adams's on the reduced equation 110 and 220 rtol). Before, with lambda
    and mu in IDA's y and rtol |x'| + atol on x', IDA crawled there at order 1: 135 977 calls at rtol 1e-8;
    at 1e-10 with the integrated multipliers alone, not through in 60 s (docs/loops.md, "IDA at a
    slider's dead centre")."""
    from dynamica.runtime.integrators import ida
    residual, calls = ida._GGL.residual, [0]

    def budgeted(self, t, y, yp, out):
        calls[0] += 1
        assert calls[0] <= 20_000, f"ida crawls at t = {t}"
        return residual(self, t, y, yp, out)
    monkeypatch.setattr(ida._GGL, "residual", budgeted)
    params = {"L": 500.0, "g": 9.81 * 500.0 / 0.05}
    q0, qd0 = sc.branch_state(theta0, rate0, 500.0)
    res = dynamica.simulate(model, t_end=t_end, output_step=0.005, params=params, rtol=rtol, atol=rtol, method="ida",
                            q0=q0, qd0=qd0)
    ref, _ = sc.reference(res.t, theta0, rate0, 500.0, g=params["g"])
    err = float(np.abs(res.q[:, 0] - ref).max())
    assert err <= 1000 * rtol, err


@pytest.mark.parametrize("dtheta", [0.0, 1e-6])
def test_radau_starts_at_the_dead_centre_where_the_slider_moves_fastest(model, dtheta):
    """radau at L = 500 m started at the slider's dead centre (theta = pi/2, the slider at 3e4 m/s) and
    1e-6 rad past it: the start across (singular_start.py) with its nodes one gap-time apart in
    consistent units (max |w q'|, the slider's m/s over the lever arm) lands outside the gap, no
    SingularStartWarning, the crank within 100 rtol of the reduced equation (measured 2.0e-11 at rtol
    1e-10 over 0.1 s, 2.8e-12 over the 0.02 s here). Before, the gap-time along the slider's m/s put
    every node inside the gap (s = 4e-4 at the landing, warned), and from the dead centre itself radau
    failed with scipy's "array must not contain infs or NaNs"."""
    import warnings

    from dynamica.errors import SingularStartWarning
    params = {"L": 500.0, "g": 9.81 * 500.0 / 0.05}
    theta0 = np.pi / 2 + dtheta
    q0, qd0 = sc.branch_state(theta0, 30.0, 500.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingularStartWarning)
        res = dynamica.simulate(model, t_end=0.02, output_step=0.002, params=params, rtol=1e-10, atol=1e-10,
                                method="radau", q0=q0, qd0=qd0)
    ref, _ = sc.reference(res.t, theta0, 30.0, 500.0, g=params["g"])
    err = float(np.abs(res.q[:, 0] - ref).max())
    assert err <= 100 * 1e-10, err


def test_an_iteration_matrix_not_finite_is_an_integration_error(model, monkeypatch):
    """radau left at the dead centre itself (the start across made to give up: warned) meets a Jacobian
    of the right-hand side that is not finite there: an IntegrationError naming t and its columns,
    not scipy's bare ValueError from its LU."""
    from dynamica.errors import IntegrationError, SingularStartWarning
    from dynamica.runtime.integrators import singular_start
    monkeypatch.setattr(singular_start, "start_across", lambda *a, **k: " (given up, in this test)")
    params = {"L": 500.0, "g": 9.81 * 500.0 / 0.05}
    q0, qd0 = sc.branch_state(np.pi / 2, 30.0, 500.0)
    with pytest.warns(SingularStartWarning), pytest.raises(IntegrationError, match=r"t = 0\.0: .* der\(th1\)"):
        dynamica.simulate(model, t_end=0.05, output_step=0.005, params=params, rtol=1e-10, atol=1e-10,
                          method="radau", q0=q0, qd0=qd0)
