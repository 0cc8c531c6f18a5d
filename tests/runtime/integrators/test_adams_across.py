"""adams (the default) through the singular configurations of closed loops: the watch of the
compiled loop and the step across (runtime/integrators/adams_across.py, docs/loops.md).

Oracles: numpy's SVD of the loops' Jacobian (the watch's bound), the reduced equation of the
IFToMM A02 N four-bar's parallelogram branch (tests/oracles/nfourbar.py, one coordinate, a closed
form of its own) and the change-point four-bar's branch equation in 40 digits
(tests/oracles/changepoint.py)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import dynamica
from dynamica.runtime.integrators.adams_across import watch_data
from dynamica.runtime.integrators.singular import Crossings

from helpers import nfourbar_models
from oracles import nfourbar as nf

CHANGE_POINT = Path(__file__).resolve().parents[2] / "data" / "changepoint.yaml"


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
