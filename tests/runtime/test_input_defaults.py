"""Inputs with a default (`inputs: [{name: u, default: 0}]`, what the URDF and MJCF importers give
their joint torques): a simulation not given the input holds it at its default, exactly as if it
had been given as that constant; an input without a default must still be given."""

from __future__ import annotations

import numpy as np
import pytest

import dynamica
from dynamica.errors import InputError, ModelError

from conftest import write_model

MODEL = {
    "name": "pushed", "parameters": {"m": 2.0, "k": 8.0},
    "inputs": ["f", {"name": "g", "default": 1.5}],
    "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}], "mass": "m",
                "com": [0, 0, 0], "inertia": [1, 1, 1]}],
    "forces": [{"type": "joint_spring_damper", "coordinate": "x", "stiffness": "k"},
               {"type": "generalized_force", "coordinate": "x", "value": "f + g"}],
    "initial": {"x": 0.1},
}


def test_an_input_with_a_default_is_held_there_when_not_given(tmp_path):
    model = dynamica.load(write_model(tmp_path, MODEL))
    assert model.spec.input_defaults == (("g", 1.5),)
    f = lambda t: np.sin(t)                                                   # noqa: E731
    held = dynamica.simulate(model, t_end=2.0, inputs={"f": f}, rtol=1e-10, atol=1e-10)
    given = dynamica.simulate(model, t_end=2.0, inputs={"f": f, "g": (np.array([0.0, 2.0]), np.array([1.5, 1.5]))},
                              rtol=1e-10, atol=1e-10)
    assert np.array_equal(held.q, given.q)
    # x'' = (-k x + sin t + 1.5) / m: the closed form of the forced oscillator, w = 2
    t, w = held.t, 2.0
    x = (0.1 - 1.5 / 8) * np.cos(w * t) + 1.5 / 8 + (np.sin(t) - np.sin(w * t) / w) / (2.0 * (w * w - 1))
    assert np.abs(held.q[:, 0] - x).max() < 1e-8
    with pytest.raises(InputError, match="`f`"):                              # no default: still required
        dynamica.simulate(model, t_end=1.0)


def test_a_controller_may_leave_out_an_input_with_a_default(tmp_path):
    model = dynamica.load(write_model(tmp_path, MODEL))
    res = dynamica.simulate(model, t_end=1.0, controller=lambda t, q, qd, s: {"f": 0.0}, sample_time=0.01)
    ref = dynamica.simulate(model, t_end=1.0, inputs={"f": (np.array([0.0, 1.0]), np.array([0.0, 0.0]))})
    assert np.abs(res.q - ref.q).max() < 1e-9


@pytest.mark.parametrize("entry, message", [({"name": "g"}, r"inputs\[1\].*default"),
                                            ({"name": "g", "default": "x"}, r"inputs\[1\]\.default"),
                                            ({"name": "g", "default": 0, "unit": "N"}, r"inputs\[1\].*unit")])
def test_bad_input_entries_name_the_entry(tmp_path, entry, message):
    with pytest.raises(ModelError, match=message):
        dynamica.load(write_model(tmp_path, {**MODEL, "inputs": ["f", entry]}))
