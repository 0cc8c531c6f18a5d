"""The helical (screw) joint shorthand (the peer package's screw pair): translation s along the
axis with the rotation 2 pi s / pitch about it, one coordinate.

Oracles: Pinocchio's JointModelHelicalUnaligned (its coordinate is the angle theta with the
translation h theta: s = h theta, h = pitch / 2 pi), the numeric reference (joint quantities by
differentiation of rho(q, t), G(q, t), runtime/reference/numeric.py) and a closed form. Tolerances: 1e-10
relative (double-precision recursions of the same equations).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from helpers import rel_err

PITCH = (0.35, -0.8)          # a right-handed and a left-handed screw
AXIS = (0.3, -0.5, 0.81)


def _model(tmp_path, driven=False):
    """A revolute base, a helical joint about a skew axis after an offset, a helical joint about z."""
    second = {"type": "helical", "axis": list(AXIS), "pitch": "p1", "offset": [0.2, 0.1, -0.3]}
    second.update({"by": "0.4*sin(2*t)"} if driven else {"q": "s1"})
    data = {
        "name": "screws",
        "parameters": {"p1": PITCH[0], "p2": PITCH[1]},
        "gravity": [0.5, -1.0, -9.81],
        "bodies": [
            {"name": "base", "parent": "ground", "joint": {"type": "revolute", "axis": "y", "q": "a"},
             "mass": 2.0, "com": [0.1, 0.0, -0.2], "inertia": [0.3, 0.2, 0.25, 0.01, 0.02, -0.03]},
            {"name": "nut", "parent": "base", "joint": second,
             "mass": 1.5, "com": [0.05, -0.02, 0.1], "inertia": [0.05, 0.07, 0.04, 0.004, -0.003, 0.002]},
            {"name": "tip", "parent": "nut", "joint": {"type": "helical", "axis": "z", "pitch": "p2", "q": "s2"},
             "mass": 0.7, "com": [0.0, 0.15, 0.05], "inertia": [0.02, 0.01, 0.015, 0.0, 0.001, 0.0]},
        ],
    }
    path = tmp_path / ("screws_driven.yaml" if driven else "screws.yaml")
    path.write_text(yaml.safe_dump(data))
    return path


def _pin_model():
    """The same tree in Pinocchio: coordinates (a, theta1, theta2), theta = 2 pi s / pitch."""
    pin = pytest.importorskip("pinocchio")
    m = pin.Model()
    m.gravity.linear = np.array([0.5, -1.0, -9.81])
    I = lambda xx, yy, zz, xy, yz, xz: np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])  # noqa: E731
    axis = np.array(AXIS) / np.linalg.norm(AXIS)
    j0 = m.addJoint(0, pin.JointModelRY(), pin.SE3.Identity(), "a")
    m.appendBodyToJoint(j0, pin.Inertia(2.0, np.array([0.1, 0.0, -0.2]), I(0.3, 0.2, 0.25, 0.01, 0.02, -0.03)),
                        pin.SE3.Identity())
    j1 = m.addJoint(j0, pin.JointModelHelicalUnaligned(axis, PITCH[0] / (2 * math.pi)),
                    pin.SE3(np.eye(3), np.array([0.2, 0.1, -0.3])), "s1")
    m.appendBodyToJoint(j1, pin.Inertia(1.5, np.array([0.05, -0.02, 0.1]),
                                        I(0.05, 0.07, 0.04, 0.004, -0.003, 0.002)), pin.SE3.Identity())
    j2 = m.addJoint(j1, pin.JointModelHelicalUnaligned(np.array([0.0, 0.0, 1.0]), PITCH[1] / (2 * math.pi)),
                    pin.SE3.Identity(), "s2")
    m.appendBodyToJoint(j2, pin.Inertia(0.7, np.array([0.0, 0.15, 0.05]), I(0.02, 0.01, 0.015, 0.0, 0.001, 0.0)),
                        pin.SE3.Identity())
    return pin, m


@pytest.mark.parametrize("form, mode, backend", [("composite", "symbolic", "c"), ("articulated", "symbolic", "c"),
                                                 ("lagrange1", "symbolic", "c"), ("ltdl", "numeric", "c"),
                                                 ("composite", "symbolic", "fortran")])
def test_helical_against_pinocchio(tmp_path, form, mode, backend):
    pin, pm = _pin_model()
    data = pm.createData()
    model = dynamica.load(_model(tmp_path), form=form, mode=mode, backend=backend)
    scale = np.array([1.0, PITCH[0] / (2 * math.pi), PITCH[1] / (2 * math.pi)])    # s = h theta
    rng = np.random.default_rng(7)
    for _ in range(5):
        th, thd = rng.uniform(-2, 2, 3), rng.uniform(-2, 2, 3)
        tau = np.zeros(3)
        thdd = pin.aba(pm, data, th, thd, tau)
        qdd = model.qdd(scale * th, scale * thd)
        assert rel_err(qdd, scale * thdd) < 1e-10
        M_pin = pin.crba(pm, data, th)
        M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
        # M in s-coordinates: theta = s / h, so M_s = D^-1 M_theta D^-1
        M = model.mass_matrix(scale * th)
        assert rel_err(M, M_pin / np.outer(scale, scale)) < 1e-10


def test_driven_helical_against_reference(tmp_path):
    path = _model(tmp_path, driven=True)
    model = dynamica.load(path)
    ref = NumericReference(load_model(path))
    rng = np.random.default_rng(3)
    for _ in range(4):
        q, qd, t = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2), rng.uniform(0, 3)
        assert rel_err(model.qdd(q, qd, t), ref.qdd(q, qd, t)) < 1e-10


def test_helical_closed_form(tmp_path):
    """A nut on a vertical screw: (m + I_zz (2 pi / P)^2) s'' = -m g, the screw's rotation about z."""
    m, Izz, P, g = 3.0, 0.2, 0.5, 9.81
    path = tmp_path / "nut.yaml"
    path.write_text(yaml.safe_dump({"name": "nut", "gravity": [0, 0, -g], "bodies": [
        {"name": "nut", "parent": "ground", "joint": {"type": "helical", "axis": "z", "pitch": P, "q": "s"},
         "mass": m, "com": [0, 0, 0], "inertia": [0.1, 0.1, Izz]}]}))
    model = dynamica.load(path)
    expected = -m * g / (m + Izz * (2 * math.pi / P) ** 2)
    assert abs(model.qdd([0.3], [1.2])[0] - expected) < 1e-12 * abs(expected)


@pytest.mark.parametrize("joint, message", [
    ({"type": "helical", "axis": "z", "pitch": 0, "q": "s"}, "zero pitch"),
    ({"type": "helical", "axis": "z", "q": "s"}, "missing required key `pitch`"),
    ({"type": "helical", "axis": "z", "pitch": "nope", "q": "s"}, "unknown name `nope`"),
    ({"type": "helical", "axis": "z", "pitch": "t", "q": "s"}, "time `t` is not allowed"),
])
def test_helical_bad_input(tmp_path, joint, message):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"name": "bad", "bodies": [
        {"name": "nut", "parent": "ground", "joint": joint, "mass": 1, "com": [0, 0, 0], "inertia": [1, 1, 1]}]}))
    with pytest.raises(ModelError) as exc:
        load_model(path)
    assert "bodies[0].joint" in str(exc.value) and message in str(exc.value)
