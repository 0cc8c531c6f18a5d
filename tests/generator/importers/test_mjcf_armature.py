"""Armature on the rotation of a free joint and of a ball joint on the world body (generator/importers/
mjcf.py, _rotation_armature) against MuJoCo: MuJoCo adds the armature a to M's diagonal in the
joint's angular velocity w (no velocity term); the importer adds a I to the body's rotational
inertia, which gives exactly that (the gyroscopic w x (a I w) is 0). q'' against mj_forward's qacc
and M against mj_fullM, both compared in MuJoCo's dofs (angular velocities, w = E(q) q',
tests/oracles/mujoco_mjcf.py), at random states: 1e-8 relative (the issue's tolerance; two
independent computations in double precision, measured ~1e-14)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import dynamica  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning  # noqa: E402

from helpers import max_rel_err  # noqa: E402
from oracles.mujoco_mjcf import MujocoOracle  # noqa: E402

RTOL = 1e-8

ARMATURE = """
<mujoco model="armature">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="torso" pos="0 0 1" euler="10 20 30">
      <joint name="root" type="free" armature="0.3" damping="0.1"/>
      <geom type="box" size="0.2 0.1 0.05" mass="2"/>
      <body name="arm" pos="0.2 0 0">
        <joint name="elbow" axis="0 1 0" armature="0.05"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.4"/>
      </body>
    </body>
    <body name="bob" pos="1 0 0.5">
      <joint name="pivot" type="ball" armature="0.7" damping="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.04" mass="0.6"/>
      <body name="tip" pos="0.1 0.05 -0.4">
        <joint name="wrist" axis="1 0 0" armature="0.02"/>
        <geom type="sphere" size="0.05" pos="0 0 -0.1" mass="0.2"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def armature(tmp_path_factory):
    path = tmp_path_factory.mktemp("armature") / "armature.xml"
    path.write_text(ARMATURE)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        model = dynamica.load(path, contacts=False, limits=False, torques="off")
    return path, model


def test_free_and_ball_armature_match_mujoco(armature):
    path, model = armature
    oracle = MujocoOracle(path, model.coordinates)
    assert np.allclose(oracle.m.dof_armature[3:6], 0.3) and np.allclose(oracle.m.dof_armature[7:10], 0.7)
    rng = np.random.default_rng(3)
    worst_qdd = worst_m = 0.0
    for _ in range(6):
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-2, 2, model.n)
        qacc, ours, M_mj, M_ours = oracle.compare(model, q, qd)
        worst_qdd = max(worst_qdd, max_rel_err(ours, qacc))
        worst_m = max(worst_m, max_rel_err(M_ours, M_mj))
    assert worst_qdd < RTOL and worst_m < RTOL, (worst_qdd, worst_m)


def test_the_armature_matters(armature):
    """Without the armature MuJoCo's qacc differs well beyond the tolerance: the test can fail."""
    path, model = armature
    oracle = MujocoOracle(path, model.coordinates)
    oracle.m.dof_armature[3:6] = 0.0
    oracle.m.dof_armature[7:10] = 0.0
    q, qd = np.linspace(-0.8, 0.9, model.n), np.linspace(1.5, -1.2, model.n)
    qacc, ours, _, _ = oracle.compare(model, q, qd)
    assert max_rel_err(ours, qacc) > 1e-3


def test_armature_parameters(armature):
    _, model = armature
    params = model.parameters
    assert params["root_armature"] == 0.3 and params["pivot_armature"] == 0.7
    assert params["root_x_armature"] == 0.3          # the translations: armature elements on x, y, z


def test_converted_file_gives_the_same_numbers(armature, tmp_path):
    from dynamica.runtime.cli.main import main
    path, model = armature
    out = tmp_path / "armature.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        assert main(["convert", str(path), "-o", str(out), "--torques", "off", "--no-contacts"]) == 0
        again = dynamica.load(out)
    assert again.parameters == model.parameters
    q, qd = np.linspace(-0.7, 0.6, model.n), np.linspace(0.9, -1.1, model.n)
    assert np.array_equal(again.qdd(q, qd), model.qdd(q, qd))
