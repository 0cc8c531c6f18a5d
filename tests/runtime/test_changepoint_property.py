"""Random Grashof change-point four-bars integrated through their flat configuration, where the
loops' Jacobian loses rank for an instant and two branches of motion cross: the default
integrator (adams) must carry on along the smooth branch it came on.

Mechanism (one compiled model, the lengths are parameters): crank l1 about the origin, coupler
l2 on its tip, rocker l3 about (l0, 0), the coupler's tip pinned to the rocker's;
l1 + l2 = l0 + l3 (change point) with the crank the shortest (Grashof: it turns fully), so the
links fold flat once a turn, at th1 = 0 mod 2 pi. Drawn by hypothesis: l1, l0, l3 (l2 follows),
the branch (the sign of the closure's acos), a start th1 in (-2 pi + 0.3, -0.3) and an initial
kinetic energy above what gravity takes on the way (the crank never stops), integrated until the
crank is 0.5 rad past the flat configuration at rtol = atol = 1e-10, with no SingularPassageWarning
(the guard of the step across's landing: no false alarm on the branch).

Oracle: tests/oracles/changepoint_quadrature.py, the branch in closed form and the motion by
energy conservation and quadrature (the time to reach each angle; no state off the branch,
nothing of dynamica). It agrees with tests/oracles/changepoint.py's 40-digit integration of the
branch's equation on that file's mechanism to 1.2e-12 rad over 2.5 s through the crossing
(checked in test_the_two_oracles_agree).

Measure: the crank-angle error at each output time t_k, |t_k - T(th1_k)| s'(th1_k), T the
oracle's time to reach dynamica's angle (first order in the error, which is small). Tolerance:
2e-7 rad. Measured at rtol 1e-10 over 20 random mechanisms drawn as here: 5e-10 ... 1.4e-8 rad
(the fixed mechanism of test_iftomm_nfourbar.py: 3.9e-8 over 2.5 s); a jump to the crossed
branch is an O(1) error; the bound is about 5x the worst measured on either.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import dynamica  # noqa: E402
from dynamica.errors import SingularPassageWarning  # noqa: E402

from oracles import changepoint_quadrature as cq  # noqa: E402

RTOL = 1e-10
TOL = 2e-7



@pytest.fixture(scope="module")
def model():
    """tests/data/changepoint.yaml: the lengths and mass are parameters, set per example."""
    return dynamica.load(str(Path(__file__).resolve().parents[1] / "data" / "changepoint.yaml"))


_bodies = cq.bodies


def crossing_error(model, lengths, sign, s0, extra, rtol=RTOL, method=None):
    """The largest crank-angle error (rad) of adams (or `method`) through the flat configuration at th1 = 0."""
    l0, l1, l2, l3 = lengths
    fb, sdot0, q0, qd0, t_end = cq.crossing_start(lengths, sign, s0, extra)
    params = {"l0": l0, "l1": l1, "l2": l2, "l3": l3}
    with warnings.catch_warnings():         # on its branch the step across's landing guard stays quiet
        warnings.simplefilter("error", SingularPassageWarning)
        res = dynamica.simulate(model, t_end=t_end, rtol=rtol, atol=rtol, output_step=t_end / 50,
                                q0=q0, qd0=qd0, params=params, method=method)
    s = res.q[:, model.coordinates.index("th1")]
    assert s[-1] > 0.4, "the run did not pass the flat configuration"
    assert np.all(np.diff(s) > 0)
    T, rate = cq.times(fb, s0, sdot0, s)
    return float(np.abs((T - res.t) * rate).max())


@settings(max_examples=4, deadline=None, derandomize=True)
@given(l1=st.floats(0.5, 2.0), a=st.floats(0.3, 2.0), b=st.floats(0.3, 2.0), sign=st.sampled_from([1, -1]),
       s0=st.floats(-2 * math.pi + 0.3, -0.3), extra=st.floats(5.0, 60.0))
def test_random_change_point_fourbars_pass_their_flat_configuration(model, l1, a, b, sign, s0, extra):
    lengths = (l1 + a, l1, l1 + a + b, l1 + b)       # l0, l1, l2, l3: l1 + l2 = l0 + l3, l1 the shortest
    err = crossing_error(model, lengths, sign, s0, extra)
    assert err <= TOL, (lengths, sign, s0, extra, err)


@settings(max_examples=4, deadline=None, derandomize=True)
@given(l1=st.floats(0.5, 2.0), a=st.floats(0.3, 2.0), b=st.floats(0.3, 2.0), sign=st.sampled_from([1, -1]),
       s0=st.floats(-2 * math.pi + 0.3, -0.3), extra=st.floats(5.0, 60.0))
def test_random_change_point_fourbars_at_rtol_1e_12(model, l1, a, b, sign, s0, extra):
    """The same at rtol 1e-12, where adams steps across the flat configuration (docs/loops.md,
    "Adams: stepping across"): within 1e-9 rad. Measured over the 20 mechanisms of
    benchmarks/bench_changepoint.py: 19 within 100 rtol (5.6e-13 ... 3.8e-11), one 3.8e-10 (where
    the oracle's quadrature warns of slow convergence); before the step across 2 of 20 passed, 7
    turned onto the crossed branch, 3 stopped with "step size too small"."""
    lengths = (l1 + a, l1, l1 + a + b, l1 + b)
    err = crossing_error(model, lengths, sign, s0, extra, rtol=1e-12)
    assert err <= 1e-9, (lengths, sign, s0, extra, err)


@settings(max_examples=3, deadline=None, derandomize=True)
@given(l1=st.floats(0.5, 2.0), a=st.floats(0.3, 2.0), b=st.floats(0.3, 2.0), sign=st.sampled_from([1, -1]),
       s0=st.floats(-2 * math.pi + 0.3, -0.3), extra=st.floats(5.0, 60.0))
def test_random_change_point_fourbars_with_radau(model, l1, a, b, sign, s0, extra):
    """radau at rtol 1e-10 (its step across, docs/loops.md "The implicit route"): within 100 rtol.
    Measured over the 20 mechanisms of benchmarks/bench_changepoint.py: 6.0e-12 ... 1.1e-10, one 3.9e-10
    (where the oracle's quadrature warns of slow convergence); before radau left a crossing on the strict
    right-hand side once it crawled (singular.LEAVE_CRAWL), 15 of the 20 did not finish in 60 s."""
    from helpers import within_seconds
    lengths = (l1 + a, l1, l1 + a + b, l1 + b)
    with within_seconds(60):
        err = crossing_error(model, lengths, sign, s0, extra, rtol=1e-10, method="radau")
    assert err <= 1e-8, (lengths, sign, s0, extra, err)


@pytest.mark.slow
def test_the_two_oracles_agree():
    """The quadrature oracle against tests/oracles/changepoint.py (the branch's equation in 40
    digits, DOP853 at 1e-13) on test_iftomm_nfourbar.py's mechanism over 2.5 s through its
    crossing near t = 1.9: within 1e-11 rad (measured 1.2e-12)."""
    from oracles import changepoint
    lengths = (3.0, 2.0, 4.0, 3.0)
    fb = cq.Fourbar(lengths, _bodies(*lengths), 9.81, 1)
    q0, qd0 = fb.state(0.6, 3.0)
    times = np.linspace(0.0, 2.5, 26)
    ref, _ = changepoint.reference(changepoint.Branch(3, 2, 4, 3, _bodies(*lengths), 9.81), q0, qd0[0], times,
                                   rtol=1e-13)
    assert ref[-1] > 2 * math.pi                       # through the flat configuration
    T, rate = cq.times(fb, 0.6, 3.0, ref)
    assert float(np.abs((T - times) * rate).max()) <= 1e-11
