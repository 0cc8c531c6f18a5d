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


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        return dynamica.load(path, contacts=False, limits=False, torques="off", **kw)


def _worst_against_mujoco(oracle, model, seed):
    """The largest relative error of q'' (against qacc) and of M (against mj_fullM) at 6 random states."""
    rng = np.random.default_rng(seed)
    worst_qdd = worst_m = 0.0
    for _ in range(6):
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-2, 2, model.n)
        qacc, ours, M_mj, M_ours = oracle.compare(model, q, qd)
        worst_qdd = max(worst_qdd, max_rel_err(ours, qacc))
        worst_m = max(worst_m, max_rel_err(M_ours, M_mj))
    return worst_qdd, worst_m


@pytest.fixture(scope="module")
def armature(tmp_path_factory):
    path = tmp_path_factory.mktemp("armature") / "armature.xml"
    path.write_text(ARMATURE)
    return path, _load(path)


def test_free_and_ball_armature_match_mujoco(armature):
    path, model = armature
    oracle = MujocoOracle(path, model.coordinates)
    assert np.allclose(oracle.m.dof_armature[3:6], 0.3) and np.allclose(oracle.m.dof_armature[7:10], 0.7)
    worst_qdd, worst_m = _worst_against_mujoco(oracle, model, 3)
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


# -- a ball joint whose parent moves: a `rotation_armature` element (a W^T W on the joint's block
# of M, -a W^T W' q' in its forces; generator/mechanics/forces.py), under a hinged parent and under
# a free-floating one, no damping (the energy is conserved)
MOVING = """
<mujoco model="ball_armature">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="base" pos="0 0 1">
      <joint name="hinge" axis="0 1 0" armature="0.1"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.03" mass="1"/>
      <body name="bob" pos="0.3 0 0" euler="10 -20 30">
        <joint name="pivot" type="ball" armature="0.7"/>
        <geom type="capsule" fromto="0 0 0 0.1 0.05 -0.4" size="0.04" mass="0.6"/>
        <body name="tip" pos="0.1 0.05 -0.4">
          <joint name="wrist" axis="1 0 0" armature="0.02"/>
          <geom type="sphere" size="0.05" pos="0 0 -0.1" mass="0.2"/>
        </body>
      </body>
    </body>
    <body name="flyer" pos="1 0 1">
      <joint name="root" type="free"/>
      <geom type="box" size="0.2 0.1 0.05" mass="2"/>
      <body name="limb" pos="0.2 0 0">
        <joint name="shoulder" type="ball" armature="0.3"/>
        <geom type="capsule" fromto="0 0 0 0.3 0 0.1" size="0.03" mass="0.4"/>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@pytest.fixture(scope="module")
def moving(tmp_path_factory):
    path = tmp_path_factory.mktemp("ball_armature") / "ball_armature.xml"
    path.write_text(MOVING)
    return path


@pytest.fixture(scope="module")
def moving_model(moving):
    return _load(moving)


@pytest.mark.parametrize("form", [None, "articulated", "iterative-g"])
def test_ball_armature_on_moving_parents_matches_mujoco(moving, moving_model, form):
    model = moving_model if form is None else _load(moving, form=form)
    assert [f["body"] for f in model.spec.forces if f.type == "rotation_armature"] == ["bob", "limb"]
    worst_qdd, worst_m = _worst_against_mujoco(MujocoOracle(moving, model.coordinates), model, 5)
    assert worst_qdd < RTOL and worst_m < RTOL, (worst_qdd, worst_m)


def test_the_ball_armature_on_a_moving_parent_matters(moving, moving_model):
    """MuJoCo without these two armatures differs well beyond the tolerance, in M and in q''."""
    model = moving_model
    oracle = MujocoOracle(moving, model.coordinates)
    oracle.m.dof_armature[1:4] = 0.0
    oracle.m.dof_armature[11:14] = 0.0
    q, qd = np.linspace(-0.8, 0.9, model.n), np.linspace(1.5, -1.2, model.n)
    qacc, ours, M_mj, M_ours = oracle.compare(model, q, qd)
    assert max_rel_err(ours, qacc) > 1e-3 and max_rel_err(M_ours, M_mj) > 1e-3


def test_reference_takes_the_rotation_armature(moving_model):
    """The independent reference (its own kinematics; W' q' by a complex step) gives the same q''
    and M: 1e-9 relative (measured ~1e-14)."""
    from dynamica.runtime.reference.numeric import NumericReference
    model = moving_model
    ref = NumericReference(model.spec)
    assert ref.coordinates == list(model.coordinates)
    rng = np.random.default_rng(8)
    for _ in range(4):
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-2, 2, model.n)
        assert max_rel_err(model.qdd(q, qd), ref.qdd(q, qd)) < 1e-9
        assert max_rel_err(model.mass_matrix(q), ref.mass_matrix(q)) < 1e-9


def test_the_rotation_armature_conserves_the_energy(moving_model):
    """No damping, no input: the reference's energy (kinetic with 1/2 a |w|^2 of each armature,
    gravity) stays constant along the motion (a wrong velocity term W' q' breaks it); 1 s at rtol
    1e-10: 1e-7 relative to the kinetic energy at the start (measured ~1e-10)."""
    from dynamica.runtime.reference.numeric import NumericReference
    model = moving_model
    ref = NumericReference(model.spec)
    q0, qd0 = np.linspace(-0.5, 0.6, model.n), np.linspace(1.2, -0.9, model.n)
    res = dynamica.simulate(model, t_end=1.0, q0=q0, qd0=qd0, rtol=1e-10, atol=1e-12, output_step=0.25)
    E = [ref.energy(q, qd) for q, qd in zip(res.q, res.qd)]
    T0 = E[0] - ref.energy(q0, 0 * qd0)
    assert max(abs(e - E[0]) for e in E) < 1e-7 * T0, (E, T0)


def test_inverse_dynamics_with_the_rotation_armature(moving_model):
    """tau(q, q', x) = M x + tau(q, q', 0), and 0 at x = q'' (no input): 1e-10 relative."""
    model = moving_model
    q, qd, x = np.linspace(-0.7, 0.8, model.n), np.linspace(0.9, -1.3, model.n), np.linspace(2, -1, model.n)
    tau0 = model.inverse_dynamics(q, qd, np.zeros(model.n))
    assert max_rel_err(model.inverse_dynamics(q, qd, x) - tau0, model.mass_matrix(q) @ x) < 1e-10
    assert np.abs(model.inverse_dynamics(q, qd, model.qdd(q, qd))).max() < 1e-10 * np.abs(tau0).max()


def test_derivatives_fall_back_to_a_variant_that_takes_it(moving_model):
    """The default derivatives ("recursive" at this size has the armature on M's diagonal only) fall
    back to "tape"; dq''/d[q, q'] against central differences of q'': 1e-6 relative."""
    from dynamica.errors import ModelError
    from dynamica.runtime.kinds.derivatives import derivatives

    from helpers import central
    model = moving_model
    q, qd = np.linspace(-0.6, 0.7, model.n), np.linspace(0.8, -1.1, model.n)
    _, Jq, Jqd = derivatives(model).qdd_jacobian(q, qd)
    assert max_rel_err(Jq, central(lambda z: model.qdd(z, qd), q)) < 1e-6
    assert max_rel_err(Jqd, central(lambda z: model.qdd(q, z), qd)) < 1e-6
    with pytest.raises(ModelError, match=r"forces\[\d+\].*'recursive'.*rotation_armature"):
        derivatives(model, "recursive")


def test_numeric_mode_refuses_the_rotation_armature(moving):
    from dynamica.errors import ModelError
    with pytest.raises(ModelError, match=r"forces\[\d+\].*rotation_armature.*symbolic mode"):
        _load(moving, mode="numeric")


def test_converted_file_with_the_rotation_armature(moving, moving_model, tmp_path):
    from dynamica.runtime.cli.main import main
    out = tmp_path / "ball_armature.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        assert main(["convert", str(moving), "-o", str(out), "--torques", "off", "--no-contacts"]) == 0
        again = dynamica.load(out)
    assert "rotation_armature" in out.read_text()
    q, qd = np.linspace(-0.7, 0.6, moving_model.n), np.linspace(0.9, -1.1, moving_model.n)
    assert np.array_equal(again.qdd(q, qd), moving_model.qdd(q, qd))


ROTOR_YAML = """
name: ball_rotor
parameters: {m: 1.0, l: 0.4, a: 0.05, g: 9.81}
gravity: [0, 0, -g]
bodies:
  - name: arm
    parent: ground
    joint: {type: revolute, axis: y, q: th}
    mass: m
    com: ["l/2", 0, 0]
    inertia: [0.001, "m*l**2/12", "m*l**2/12"]
  - name: bob
    parent: arm
    joint: {type: spherical, q: [bx, by, bz], offset: [l, 0, 0]}
    mass: 0.5*m
    com: [0.05, 0.02, "-l/2"]
    inertia: [0.004, 0.003, 0.001]
forces:
  - {type: rotation_armature, body: bob, inertia: a}
initial: {th: 0.3, bx: 0.2, by: -0.4, bz: 0.5, der(th): 1.0, der(bx): -2.0, der(by): 1.5, der(bz): 3.0}
outputs: {energy: true}
"""


def test_energy_outputs_with_the_rotation_armature(tmp_path):
    """A model file with the element: the module's `energy.total` (kinetic with 1/2 a |w|^2, its
    velocity term out of the power) equals the reference's energy at every row (1e-10 relative to
    the kinetic energy) and stays constant over 1 s at rtol 1e-10 (1e-7); `energy.power` is 0."""
    from dynamica.runtime.reference.numeric import NumericReference
    path = tmp_path / "ball_rotor.yaml"
    path.write_text(ROTOR_YAML)
    model = dynamica.load(path)
    ref = NumericReference(model.spec)
    r = dynamica.simulate(model, t_end=1.0, rtol=1e-10, atol=1e-12, output_step=0.1)
    E = np.array([ref.energy(q, qd) for q, qd in zip(r.q, r.qd)])
    scale = float(np.max(r.outputs["energy.kinetic"]))
    assert np.abs(E - r.outputs["energy.total"]).max() <= 1e-10 * scale
    assert np.ptp(E) <= 1e-7 * scale and np.abs(r.outputs["energy.power"]).max() <= 1e-10 * scale
    without = ref.energy(r.q[3], r.qd[3], params=[0.0 if n == ("a", None) else v
                                                 for n, v in zip(ref.slots, ref.defaults)])
    assert abs(E[3] - without) > 1e-3 * scale             # the armature's kinetic energy is there


def test_ball_armature_over_its_range_of_values(moving, moving_model):
    """Values not chosen by hand: the two ball armatures drawn log-uniform over 1e-8 ... 1e3 kg m^2
    (the links' own inertias are ~1e-2: from negligible to 1e5 times them, M's condition number up
    to ~1e6), set as parameters of the one compiled model and in MuJoCo, at random states: q'' and
    M within 1e-8 relative of MuJoCo (the issue's tolerance; cond(M) eps stays below 1e-9)."""
    model = moving_model
    oracle = MujocoOracle(moving, model.coordinates)
    rng = np.random.default_rng(21)
    for _ in range(5):
        a_pivot, a_shoulder = 10.0 ** rng.uniform(-8, 3, 2)
        params = {"pivot_armature": a_pivot, "shoulder_armature": a_shoulder}
        oracle.m.dof_armature[1:4], oracle.m.dof_armature[11:14] = a_pivot, a_shoulder
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-2, 2, model.n)
        qacc, M_mj, T = oracle.qacc_and_M(q, qd)
        ours = T @ model.qdd(q, qd, params=params) + oracle.bias_rate(q, qd)
        assert max_rel_err(ours, qacc) < RTOL, (a_pivot, a_shoulder)
        assert max_rel_err(model.mass_matrix(q, params=params), T.T @ M_mj @ T) < RTOL, (a_pivot, a_shoulder)


def test_rotation_armature_on_a_joint_that_does_not_turn_is_an_error(tmp_path):
    from dynamica.errors import ModelError
    text = ROTOR_YAML.replace("joint: {type: spherical, q: [bx, by, bz], offset: [l, 0, 0]}",
                              "joint: [{translate: [l, 0, 0]}, {translate: x, q: bx}, {translate: y, q: by}, "
                              "{translate: z, q: bz}]")
    assert text != ROTOR_YAML
    path = tmp_path / "sliding_rotor.yaml"
    path.write_text(text)
    with pytest.raises(ModelError, match=r"forces\[0\].*body `bob` has no rotation"):
        dynamica.load(path)
