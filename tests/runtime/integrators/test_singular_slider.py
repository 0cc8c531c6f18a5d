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
