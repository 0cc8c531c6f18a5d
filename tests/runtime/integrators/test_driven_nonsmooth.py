"""A driven transform whose `by:` switches (heaviside, sign) or kinks (abs, min, max): away from
the switching instants it is the smooth expression that holds there (derivatives of the jump
itself are zero: no impulse is modelled)."""

import numpy as np
import pytest

import dynamica

from conftest import write_model

BY = "0.5*heaviside(t-1) + abs(t-2) + max(t, 3) + sign(t-4) + min(t*t, 9)"
#: the same motion, piece by piece: (t, the expression that holds around t)
PIECES = [(0.5, "(2 - t) + 3 - 1 + t*t"), (1.5, "0.5 + (2 - t) + 3 - 1 + t*t"),
          (2.5, "0.5 + (t - 2) + 3 - 1 + t*t"), (3.5, "0.5 + (t - 2) + t - 1 + 9"),
          (4.5, "0.5 + (t - 2) + t + 1 + 9")]


def model(tmp_path, by, name):
    return dynamica.load(str(write_model(tmp_path, {
        "name": name, "gravity": [0, 0, -9.81],
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "z", "by": by}, {"rotate": "x", "q": "a"}],
                    "mass": 1.0, "com": [0.3, 0.1, 0], "inertia": [0.1, 0.2, 0.3]}]}, f"{name}.yaml")))


def test_switching_by_equals_its_pieces(tmp_path):
    m = model(tmp_path, BY, "switching")
    for k, (t, piece) in enumerate(PIECES):
        ref = model(tmp_path, piece, f"piece{k}")
        for q, qd in ((0.3, 0.1), (-1.2, 2.0)):
            assert m.qdd([q], [qd], t=t) == pytest.approx(ref.qdd([q], [qd], t=t), rel=1e-12, abs=1e-12)
    assert np.all(np.isfinite(m.qdd([0.3], [0.1], t=1.0)))      # at the jump: finite, no impulse
