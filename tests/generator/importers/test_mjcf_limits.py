"""MJCF effort limits (generator/importers/mjcf.py) against MuJoCo on the same file, with controls
beyond the limits: an actuator's `ctrlrange` (clamping the control), `forcerange` (clamping its
force before the gear) and a joint's `actuatorfrcrange` (clamping the sum of the actuators' forces
on the joint, MuJoCo's qfrc_actuator), q'' against mj_forward's qacc with actuation on, 1e-10
relative (the same arithmetic in both; measured ~1e-15). The joint torque inputs tau_<joint>
(MuJoCo's qfrc_applied, which MuJoCo does not clamp) are clamped to the joint's actuatorfrcrange
with saturate=True, as URDF's to `effort`: checked against MuJoCo given the clamped value."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import dynamica  # noqa: E402
from dynamica.errors import ModelError  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning  # noqa: E402

from helpers import max_rel_err  # noqa: E402
from oracles.mujoco_mjcf import MujocoOracle  # noqa: E402

RTOL = 1e-10

LIMITS = """
<mujoco model="limits">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="cart" pos="0 0 0.2">
      <joint name="slider" type="slide" axis="1 0 0" damping="0.3" actuatorfrclimited="true" actuatorfrcrange="-3 4"/>
      <geom type="box" size="0.2 0.1 0.05" mass="2"/>
      <body name="pole" pos="0 0 0.05">
        <joint name="hinge" type="hinge" axis="0 1 0" actuatorfrclimited="true" actuatorfrcrange="-0.5 0.5"/>
        <geom type="capsule" fromto="0 0 0 0.02 0 0.6" size="0.03" mass="0.4"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="push" joint="slider" gear="5" ctrllimited="true" ctrlrange="-1 1"/>
    <motor name="push2" joint="slider" gear="2" forcelimited="true" forcerange="-0.3 0.3"/>
    <motor name="twist" joint="hinge" gear="0.5" ctrllimited="true" ctrlrange="-2 2" forcelimited="true"
           forcerange="-1.5 1.5"/>
  </actuator>
</mujoco>"""

# controls (push, push2, twist): inside every range; beyond ctrlrange; beyond forcerange; the
# sum on the slider beyond actuatorfrcrange on both sides; the hinge's beyond its own
CONTROLS = [(0.1, 0.05, 0.4), (3.0, 0.0, 0.0), (0.0, 2.0, 0.0), (0.7, 0.15, 0.0), (-0.6, -0.15, 0.0),
            (0.0, 0.0, 1.8), (0.0, 0.0, -1.3), (-5.0, -4.0, 5.0)]


@pytest.fixture(scope="module")
def limits_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("limits") / "limits.xml"
    path.write_text(LIMITS)
    return path


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        return dynamica.load(path, contacts=False, limits=False, **kw)


def test_actuator_limits_clamp_as_mujoco(limits_file):
    model = _load(limits_file)
    oracle = MujocoOracle(limits_file, model.coordinates, actuation=True)
    rng = np.random.default_rng(1)
    worst = 0.0
    for ctrl in CONTROLS:
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)
        inputs = dict(zip(("u_push", "u_push2", "u_twist"), ctrl))
        qacc, ours, _, _ = oracle.compare(model, q, qd, ctrl=np.array(ctrl), inputs=inputs)
        worst = max(worst, max_rel_err(ours, qacc))
    assert worst < RTOL, worst
    # the clamps act: the unclamped force would differ (slider: 5*3 against the range's 4)
    _, _, _, _ = oracle.compare(model, np.zeros(2), np.zeros(2), ctrl=np.array([3.0, 0, 0]),
                                inputs={"u_push": 3.0})
    assert abs(oracle.d.qfrc_actuator[0] - 4.0) < 1e-12


def test_torque_inputs_saturate_to_actuatorfrcrange(limits_file):
    model = _load(limits_file, saturate=True, actuators="off")
    plain = _load(limits_file, actuators="off")
    values = {repr(k): float(v) for k, v in model.parameter_values().items()}
    assert (values["p:slider_effort[0]"], values["p:slider_effort[1]"], values["p:hinge_effort"]) == (-3, 4, 0.5)
    oracle = MujocoOracle(limits_file, model.coordinates)
    q, qd = np.array([0.2, -0.4]), np.array([0.3, 0.1])
    for tau, clamped in (((10.0, -2.0), (4.0, -0.5)), ((-7.0, 0.3), (-3.0, 0.3)), ((1.0, 0.2), (1.0, 0.2))):
        inputs = {"tau_slider": tau[0], "tau_hinge": tau[1]}
        qacc, ours, _, _ = oracle.compare(model, q, qd, inputs=inputs, qfrc=np.array(clamped))
        assert max_rel_err(ours, qacc) < RTOL
        qacc, ours, _, _ = oracle.compare(plain, q, qd, inputs=inputs, qfrc=np.array(tau))   # not clamped
        assert max_rel_err(ours, qacc) < RTOL


def test_saturate_without_torques_is_an_error(limits_file):
    with pytest.raises(ModelError, match="saturate.*torques='off'"):
        _load(limits_file, saturate=True, torques="off")
