"""The model's methods called with float64 arrays go to the module's entry as they are (p made
once); anything else is converted as before: the same numbers either way, the same errors."""

from __future__ import annotations

import numpy as np
import pytest

import dynamica

from conftest import MODELS


@pytest.fixture(scope="module")
def model():
    return dynamica.load(MODELS / "chain7.yaml")


def test_arrays_as_they_are_and_converted_give_the_same_numbers(model):
    rng = np.random.default_rng(5)
    q, qd, qdd = rng.uniform(-1, 1, (3, model.n))
    y = np.concatenate([q, qd])
    p = model.param_vector()
    for args, fn in [((q, qd), model.qdd), ((0.2, y), model.rhs), ((q,), model.mass_matrix),
                     ((q, qd, qdd), model.inverse_dynamics)]:
        fast = fn(*args)
        for other in ([list(a) if isinstance(a, np.ndarray) else a for a in args],            # lists
                      [a.reshape(-1, 1) if isinstance(a, np.ndarray) else a for a in args],   # 2-D
                      [np.repeat(a, 2)[::2] if isinstance(a, np.ndarray) else a for a in args]):  # strided
            assert np.array_equal(fn(*other), fast)
    out = np.empty(model.n)                  # the module's entry itself, with the defaults' p
    model.module.qdd(0.0, q, qd, p, out)
    assert np.array_equal(model.qdd(q, qd), out)
    assert np.array_equal(model.qdd(q, qd, params={"g": 9.81}), out)      # (its default: the other path)
    assert not np.array_equal(model.qdd(q, qd, params={"g": 1.0}), out)
    f = model.rhs_function()
    assert np.array_equal(f(0.2, y), model.rhs(0.2, y)) and np.array_equal(f(0.2, list(y)), f(0.2, y))


def test_errors_still_name_the_argument(model):
    q = np.zeros(model.n)
    with pytest.raises(ValueError, match="`q` has length 3"):
        model.qdd(np.zeros(3), q)
    with pytest.raises(ValueError, match="`qd` has length"):
        model.qdd(q, np.zeros(model.n + 1))
    with pytest.raises(ValueError, match="`y` has length"):
        model.rhs(0.0, q)
    with pytest.raises(ValueError, match="`q` has length"):
        model.mass_matrix(np.zeros(2))
