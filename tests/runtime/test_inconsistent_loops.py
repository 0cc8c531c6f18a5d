"""Inconsistent loop equations (docs/loops.md: an error naming the loop) give no numbers through any
entry point: a slider on x held by two distance loops of length 1 to the ground points x = -1 and
x = +1, at x = 0. J = [2, -2]^T has rank 1 and gamma = [-2 x'^2, -2 x'^2] (closed form): with x' = 1,
2 x'' = -2 and -2 x'' = -2 have no common solution; at x' = 0 they do (x'' = 0, gravity along -y)."""

from __future__ import annotations

import numpy as np
import pytest

import dynamica
from dynamica.runtime.assembly import ConstraintError

from conftest import write_model

G = 9.81


def _two_rods(tmp_path):
    rod = lambda name, x: {"name": name, "type": "distance", "body_a": "ground", "point_a": [x, 0.0, 0.0],  # noqa: E731
                           "body_b": "slider", "point_b": [0.0, 0.0, 0.0], "length": 1.0}
    data = {"name": "two_rods", "gravity": [0, -G, 0],
            "bodies": [{"name": "slider", "parent": "ground", "joint": {"type": "prismatic", "axis": "x", "q": "x"},
                        "mass": 1.3, "com": [0, 0, 0], "inertia": [0.02, 0.02, 0.02]}],
            "loops": [rod("left", -1.0), rod("right", 1.0)],
            "initial": {"x": 0.0}, "outputs": {"reactions": True}}
    return dynamica.load(str(write_model(tmp_path, data, "two_rods.yaml")), check_mass_matrix=False)


def test_inconsistent_loops_give_no_numbers(tmp_path):
    model = _two_rods(tmp_path)
    # consistent at rest: x'' = 0, the two rods and the joint carry the weight (closed form)
    assert model.qdd([0.0], [0.0]) == pytest.approx([0.0], abs=1e-14)
    out = model.outputs(0.0, [0.0], [0.0])
    assert np.all(np.isfinite(out["qdd"])) and abs(out["qdd"][0]) < 1e-14
    assert np.all(np.isfinite(model.rhs(0.0, np.array([0.0, 0.0]))))
    # x' = 1: the documented error, naming a loop, from qdd
    with pytest.raises(ConstraintError, match=r"loop `(left|right)` \(distance\) are inconsistent"):
        model.qdd([0.0], [1.0])
    # and NaN, never a number, from the module's rhs and outputs (q'' and what the multipliers give)
    assert np.isnan(model.rhs(0.0, np.array([0.0, 1.0]))[1])
    out = model.outputs(0.0, [0.0], [1.0])
    assert np.isnan(out["qdd"][0])
    for key in ("left.reaction_force", "right.reaction_force", "slider.reaction_force"):
        assert np.isnan(out[key][0]), (key, out[key])
    # a simulation started there stops with an error, not a trajectory
    with pytest.raises(dynamica.errors.DynamicaError, match="inconsistent"):
        dynamica.simulate(model, t_end=0.1, q0=[0.0], qd0=[1.0])
