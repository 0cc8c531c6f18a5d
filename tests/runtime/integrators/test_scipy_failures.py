"""A scipy integrator that fails raises IntegrationError with the integrator's own message (never
an IndexError or a hang), in a plain run, a run with events and a run with inputs."""

import re

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.special import ellipk

import dynamica
from dynamica.errors import IntegrationError

from helpers import oscillator


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    return dynamica.load(str(oscillator(tmp_path_factory.mktemp("osc"))))


@pytest.fixture(scope="module")
def driven(tmp_path_factory):
    return dynamica.load(str(oscillator(tmp_path_factory.mktemp("osc_u"), inputs=True)))


def lsoda_message_at_zero_atol():
    """scipy's own LSODA on the oscillator's equations from x = x' = 0 with atol = 0: a weight
    1/(rtol |y|) of a zero component is infinite and LSODA stops on its first step (the oracle
    of the message)."""
    sol = solve_ivp(lambda t, y: [y[1], (-50.0 * y[0] - 0.3 * y[1]) / 2.0], (0.0, 1.0), [0.0, 0.0],
                    method="LSODA", rtol=1e-8, atol=0.0, t_eval=np.linspace(0.0, 1.0, 11))
    assert sol.status == -1 and len(sol.t) == 0
    return sol.message


def test_lsoda_failing_on_its_first_step_with_events(plain):
    msg = lsoda_message_at_zero_atol()
    with pytest.raises(IntegrationError, match=r"at t = 0\.0 \(LSODA, on its first step\): " + re.escape(msg)):
        dynamica.simulate(plain, 1.0, method="LSODA", rtol=1e-8, atol=0.0, output_step=0.1,
                          events=[lambda t, y: y[0] - 1.0])


def test_lsoda_failing_on_its_first_step_without_events(plain):
    msg = lsoda_message_at_zero_atol()
    with pytest.raises(IntegrationError, match=r"at t = 0\.0: " + re.escape(msg)):
        dynamica.simulate(plain, 1.0, method="LSODA", rtol=1e-8, atol=0.0, output_step=0.1)


def test_lsoda_failing_on_its_first_step_with_inputs(driven):
    msg = lsoda_message_at_zero_atol()
    with pytest.raises(IntegrationError, match=r"at t = 0\.0 \(LSODA, on its first step\): " + re.escape(msg)):
        dynamica.simulate(driven, 1.0, method="LSODA", rtol=1e-8, atol=0.0, output_step=0.1,
                          inputs={"u": ([0.0, 1.0], [0.0, 0.0])})


@pytest.mark.parametrize("method", ["LSODA", "RK45"])
def test_a_solution_without_bound_stops_at_its_blow_up_time(plain, method):
    """m x'' = k3 x^3 with k3 = m = 2 (k = c = 0) from x = 1 at rest: x'' = x^3, x' = sqrt((x^4 - 1)/2),
    grows without bound at t* = int_1^inf dx / sqrt((x^4 - 1)/2) = K(m = 1/2)
    = 1.8540747 (complete elliptic integral). scipy's LSODA keeps returning success from steps that
    no longer move t there (a hang before); both methods stop with an IntegrationError within
    1e-4 of t* (the step there is below the spacing of floating-point numbers near t*)."""
    t_star = ellipk(0.5)
    with pytest.raises(IntegrationError) as err:
        dynamica.simulate(plain, 3.0, method=method, q0=[1.0], params={"k": 0.0, "c": 0.0, "k3": 2.0},
                          output_step=0.5)
    t_fail = float(str(err.value).split("at t = ")[1].split(":")[0].split(" ")[0])
    assert abs(t_fail - t_star) < 1e-4
