"""Closed loops through singular positions: the N four-bar mechanism of the IFToMM library of
computational benchmark problems for multibody dynamics (problem A02; tests/oracles/nfourbar.py).
All rods pass the horizontal twice a turn, where the loops' Jacobian loses N of its rank for an
instant and the motion must carry on along the parallelogram branch. The oracle is the reduced
equation of that branch (one coordinate, its own closed form), independent of the generated
equations. N = 40 is in benchmarks/bench_singular.py."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import dynamica
from dynamica.runtime.integrators.compiled_adams import solve

from helpers import nfourbar_models
from oracles import nfourbar as nf

T_END = 20.0


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return nfourbar_models(tmp_path_factory.mktemp("nfourbar"))


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("distance", [1e-1, 1e-3, 1e-5, 1e-7, 1e-9, 1e-10, 1e-11, 1e-12])
def test_qdd_on_the_manifold_near_the_singular_configuration(models, n, distance):
    """q'' at states on the parallelogram branch d rad from the singular configuration (rods
    horizontal), on both sides of it and of the half-turn, equals the reduced equation to 1e-9
    relative: no equation of the loops is left out while it still carries the motion (the rank
    is decided on J, not on J M^-1 J^T, whose pivots go like d^2)."""
    model = models[n]
    for phi in (distance, -distance, math.pi + distance, math.pi - distance):
        for rate in (-4.9, 0.3):
            q, qd = nf.branch_state(model.coordinates, phi, rate)
            assert np.abs(model.constraints(q)).max() < 1e-15
            ref = nf.branch_qdd(model.coordinates, phi)
            got = model.qdd(q, qd)
            assert np.abs(got - ref).max() <= 1e-9 * np.abs(ref).max(), (phi, rate, got, ref)


def _reduced_error(n, rtol, times, ref):
    """The largest error of B0's x when the same compiled Adams integrates the reduced equation
    itself: what the tolerance gives on this motion without any loop."""
    c = nf.reduced_coefficient(n)
    res = solve(lambda t, y: np.array([y[1], -c * math.cos(y[0])]), (0.0, T_END), np.array([math.pi / 2, -1.0]),
                rtol=rtol, atol=rtol, t_eval=times)
    y = np.asarray(res.y)
    y = y if y.shape[0] == 2 else y.T
    return float(np.abs(nf.b0_x(y[0]) - nf.b0_x(ref)).max())


def _check_run(model, n, res, rtol, factor):
    ia = model.coordinates.index("a0")
    ref, _ = nf.reference(n, res.t)
    err = float(np.abs(nf.b0_x(res.q[:, ia]) - nf.b0_x(ref)).max())
    energy = nf.energy(n, res.q[:, ia], res.qd[:, ia])
    drift = float(np.abs(energy - energy[0]).max() / abs(energy[0]))
    residual = max(float(np.abs(model.constraints(q)).max()) for q in res.q)
    assert err <= 1e-3, err                                      # the benchmark's high precision
    assert drift <= 1e-6, drift
    assert residual <= 1e-8, residual
    if factor:                                                    # no loss of accuracy through the passages
        assert err <= factor * _reduced_error(n, rtol, res.t, ref), err
    return err


@pytest.mark.parametrize("n", [1, 2])
def test_adams_passes_the_singular_positions_more_accurately_as_the_tolerance_tightens(models, n):
    """20 s (about seven turns, fourteen singular passages) with the default integrator: B0
    within the benchmark's 1e-3 m, within 10 x the error the same integrator makes on the
    reduced equation itself, energy to 1e-6, constraints to 1e-8, and the error falls with the
    tolerance down to 1e-12 (benchmarks/results/singular_adams.txt, adams stepping across each
    passage: N = 1 9.1e-6, 2.6e-8, 6.0e-10; N = 2 1.7e-5, 2.5e-8, 3.9e-10; the reduced equation
    N = 1 1.0e-5, 2.1e-7, 6.2e-10)."""
    model = models[n]
    errors = []
    for rtol in (1e-8, 1e-10, 1e-12):
        res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01)
        errors.append(_check_run(model, n, res, rtol, 10.0))
    assert errors[0] > errors[1] > errors[2], errors


@pytest.mark.parametrize("method, rtol", [("DOP853", 1e-10), ("radau", 1e-8), ("radau", 1e-10)])
def test_scipy_methods_pass_the_singular_positions(models, method, rtol):
    """scipy's one-step methods with the projection after each step: on the branch to the
    benchmark's precision (without it DOP853 and radau jumped to the crossed branch; radau at
    1e-10 also when the velocity projection corrects the weak rows)."""
    model = models[1]
    res = dynamica.simulate(model, t_end=T_END, rtol=rtol, atol=rtol, output_step=0.01, method=method)
    _check_run(model, 1, res, rtol, 0.0)


CHANGE_POINT = Path(__file__).resolve().parents[1] / "data" / "changepoint.yaml"


def test_a_generic_change_point_four_bar_passes_its_flat_configurations():
    """A change-point four-bar whose normals turn along the branch (unlike the N four-bar's): the
    crank turns about five and a half times in 10 s through a dozen flat configurations. With
    adams at rtol 1e-8, 1e-10 and 1e-12: the energy (a closed form: constant) to 2e-6, 1e-7 and
    5e-8 (measured 1.1e-6, 6.0e-8, 1.2e-8), the constraints to 1e-8, and all runs on the same
    branch (the crank's final angle within 1e-4). Before the projection went to the rounding
    level, rtol 1e-12 ran out of steps at the first flat configuration (docs/loops.md)."""
    model = dynamica.load(str(CHANGE_POINT))
    finals = []
    for rtol, bound in ((1e-8, 2e-6), (1e-10, 1e-7), (1e-12, 5e-8)):
        res = dynamica.simulate(model, t_end=10.0, rtol=rtol, atol=rtol, output_step=0.01)
        energy = res.outputs["energy.total"]
        assert np.abs(energy - energy[0]).max() <= bound * np.abs(energy).max()
        assert max(float(np.abs(model.constraints(q)).max()) for q in res.q) <= 1e-8
        finals.append(res.q[-1, model.coordinates.index("th1")])
    assert finals[0] > 30.0 and max(abs(f - finals[0]) for f in finals) < 1e-4, finals


@pytest.mark.slow
def test_the_change_point_four_bar_follows_its_branch_through_the_crossing():
    """The same change-point four-bar against its own smooth branch's one-coordinate equation
    (tests/oracles/changepoint.py: the configuration in closed form on the branch, accelerations
    in 40 digits, never off the constraint manifold) over 2.5 s, through the crossing near
    t = 1.9: the crank angle within 100 rtol at rtol 1e-8, 1e-10 and 1e-12, the error falling
    with the tolerance (measured with the step across: 1.4e-9, 1.6e-10, 7.5e-11 against the
    reference at rtol 1e-11; before it 7.0e-7, 3.9e-8 and 1.6e-8: the passage cost accuracy; adams
    on the branch's own equation: 9.9e-8, 5.5e-10, 6.0e-11; the reference at rtol 1e-13 is used
    here, the one at 1e-11 differs from it by up to 6.5e-11)."""
    from oracles import changepoint
    model = dynamica.load(str(CHANGE_POINT))
    q0, qd0 = model.assemble()
    m = 1.0                                         # per link: mass, I about the centre, the centre in the link
    bodies = [(m, m * 2.0 ** 2 / 12, 1.0, 0.0), (2 * m, m * 4.0 ** 2 / 6, 4.0 / 3, 0.1),
              (m, m * 3.0 ** 2 / 12, 1.5, 0.0)]
    branch = changepoint.Branch(3, 2, 4, 3, bodies, 9.81)
    times = np.linspace(0.0, 2.5, 251)
    ref, _ = changepoint.reference(branch, q0, qd0[model.coordinates.index("th1")], times, rtol=1e-13)
    errors = []
    for rtol in (1e-8, 1e-10, 1e-12):
        res = dynamica.simulate(model, t_end=2.5, rtol=rtol, atol=rtol, output_step=0.01)
        err = float(np.abs(res.q[:, model.coordinates.index("th1")] - ref).max())
        assert err <= 100 * rtol, (rtol, err)
        assert len(res.info["singular_passages"]) == 1, res.info["singular_passages"]
        errors.append(err)
    assert errors[0] > errors[1] > errors[2], errors
