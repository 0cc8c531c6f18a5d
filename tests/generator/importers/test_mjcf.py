"""MJCF models (generator/importers/mjcf.py) against MuJoCo itself on the same files: q'' against
mj_forward's qacc (contacts and other constraints disabled by the option flags) and M against
mj_fullM, to a relative 1e-9 at random states (oracles/mujoco_mjcf.py maps ball and free joints'
Cardan angles to MuJoCo's quaternions and angular velocities); `dynamica convert` then load gives
the same numbers bit for bit; malformed files give one ModelError naming the element.

Models: small ones written here (a double pendulum with a defaults class, angles in degrees,
damping, armature, a spring with springref, a joint ref and gravity compensation; a cart pendulum driven by a motor;
a ball joint; a free body with a hinged child and tilted gravity; several joints in one body;
inertias from geoms and a full inertia) and dm_control's suite (acrobot, cartpole, hopper,
cheetah, walker; humanoid, dog and humanoid_CMU among the slow tests)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest
import yaml

mujoco = pytest.importorskip("mujoco")

import dynamica  # noqa: E402
from dynamica.errors import ModelError  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning, load_model  # noqa: E402

from helpers import max_rel_err  # noqa: E402
from oracles.mujoco_mjcf import MujocoOracle  # noqa: E402

RTOL = 1e-9

SMALL = {
    "double_pendulum": """
<mujoco model="double pendulum">
  <compiler angle="degree"/>
  <default>
    <joint damping="0.1" armature="0.05"/>
    <default class="stiff"><joint stiffness="2" springref="20"/></default>
  </default>
  <worldbody>
    <body name="upper" pos="0 0 1" euler="10 20 30">
      <joint name="shoulder" type="hinge" axis="0 1 0.3" pos="0 0 0.1"/>
      <geom type="capsule" fromto="0 0 0 0 0 -0.5" size="0.05" mass="1.3"/>
      <body name="lower" pos="0 0.1 -0.5" quat="0.9 0.1 0.2 0.3" gravcomp="0.4">
        <joint name="elbow" class="stiff" type="hinge" axis="1 0 0" pos="0.02 0 0" ref="15"/>
        <geom type="box" size="0.05 0.04 0.25" pos="0 0 -0.25" euler="5 0 10" mass="0.7"/>
      </body>
    </body>
  </worldbody>
</mujoco>""",
    "cart_pendulum": """
<mujoco model="cart-pendulum">
  <option gravity="0 0 -9.81"/>
  <worldbody>
    <body name="cart" pos="0 0 0.2">
      <joint name="slider" type="slide" axis="1 0 0" damping="0.3" armature="0.2" stiffness="5" springref="0.1"/>
      <geom type="box" size="0.2 0.1 0.05" mass="2"/>
      <body name="pole" pos="0 0 0.05">
        <joint name="hinge" type="hinge" axis="0 1 0" damping="0.02"/>
        <geom type="capsule" fromto="0 0 0 0.02 0 0.6" size="0.03" mass="0.4"/>
      </body>
    </body>
  </worldbody>
  <actuator>
    <motor name="push" joint="slider" gear="5" ctrllimited="true" ctrlrange="-1 1"/>
    <motor name="twist" joint="hinge" gear="0.5"/>
  </actuator>
</mujoco>""",
    "ball": """
<mujoco model="ball">
  <worldbody>
    <body name="bob" pos="0.1 0 1" axisangle="1 1 0 30">
      <joint name="socket" type="ball" pos="0 0 0.3" damping="0.05"/>
      <geom type="ellipsoid" size="0.1 0.15 0.3" mass="1.5"/>
      <body name="flap" pos="0 0.1 -0.3">
        <joint name="flap_hinge" axis="0.2 0 1" armature="0.01"/>
        <geom type="box" size="0.1 0.02 0.05" pos="0.1 0 0" mass="0.2"/>
      </body>
    </body>
  </worldbody>
</mujoco>""",
    "free": """
<mujoco model="free">
  <option gravity="0.5 -1 -9.0"/>
  <worldbody>
    <body name="torso" pos="0.3 -0.2 1.2" euler="0.2 -0.4 0.7">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.15" mass="4"/>
      <geom type="sphere" size="0.1" pos="0.2 0.05 0" mass="0.5"/>
      <body name="arm" pos="0.25 0 0.1">
        <joint name="shoulder" axis="0 1 0" pos="-0.05 0 0" damping="0.2" armature="0.03"/>
        <geom type="cylinder" fromto="0 0 0 0.4 0 0" size="0.04" mass="0.8"/>
      </body>
    </body>
  </worldbody>
</mujoco>""",
    "swimmer_like": """
<mujoco model="several joints in one body">
  <compiler angle="radian"/>
  <worldbody>
    <body name="head" pos="0 0 0.5">
      <joint name="x" type="slide" axis="1 0 0" armature="0.1" damping="0.5"/>
      <joint name="y" type="slide" axis="0 1 0" pos="0.3 0 0"/>
      <joint name="yaw" type="hinge" axis="0 0 1" pos="0.1 0.2 0" stiffness="3"/>
      <joint name="pitch" type="hinge" axis="0 1 0" pos="0 0 0.1" ref="0.2"/>
      <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.05" density="800"/>
      <body name="tail" pos="0.5 0 0">
        <joint name="tail_yaw" axis="0 0 1" damping="0.01"/>
        <joint name="tail_slide" type="slide" axis="1 0 0"/>
        <inertial pos="0.2 0.01 0" mass="0.3" fullinertia="0.002 0.004 0.005 0.0003 -0.0001 0.0002"/>
        <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.04" density="0"/>
      </body>
    </body>
  </worldbody>
</mujoco>""",
}


def asset(package, folder, name):
    """An MJCF file shipped by a package (found without importing it: dm_control's suite
    imports dm_env and more, which these tests do not need)."""
    import importlib.util
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        pytest.skip(f"{package} is not installed (pip install 'dynamica[test]')")
    path = os.path.join(os.path.dirname(spec.origin), *folder.split("/"), f"{name}.xml")
    if not os.path.isfile(path):
        pytest.skip(f"{package} has no {folder}/{name}.xml")
    return path


def dm_suite(name):
    return asset("dm_control", "suite", name)


def gym_asset(name):
    return asset("gymnasium", "envs/mujoco/assets", name)


@pytest.fixture(scope="module")
def small_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mjcf")
    out = {}
    for name, text in SMALL.items():
        out[name] = folder / f"{name}.xml"
        out[name].write_text(text)
    return out


def _load(path, **kw):
    if str(path).endswith(".xml"):
        kw.setdefault("contacts", False)                     # the oracle switches MuJoCo's off
        kw.setdefault("limits", False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)     # contacts and the like, not modelled
        return dynamica.load(path, **kw)


def _compare(model, path, states=6, seed=0, spread=1.0):
    """q'' and M against MuJoCo with actuation off: `model` is loaded with actuators="off" (a
    servo's bias is part of its actuator force, which MuJoCo's flag switches off with it)."""
    oracle = MujocoOracle(path, model.coordinates)
    rng = np.random.default_rng(seed)
    worst = 0.0
    for _ in range(states):
        q = rng.uniform(-spread, spread, model.n)
        qd = rng.uniform(-2.0, 2.0, model.n)
        qacc, ours, M_mj, M = oracle.compare(model, q, qd)
        worst = max(worst, max_rel_err(ours, qacc), max_rel_err(M, M_mj))
    assert worst < RTOL, worst
    return worst


@pytest.mark.parametrize("name", list(SMALL))
def test_small_models_match_mujoco(small_files, name):
    model = _load(small_files[name], actuators="off")
    _compare(model, small_files[name], seed=list(SMALL).index(name))


@pytest.mark.parametrize("form", ["direct", "articulated", "ltdl", "iterative-m", "iterative-g"])
def test_armature_in_other_forms(small_files, form):
    """Armature (a term on M's diagonal) in every form that takes it: the same q'' as MuJoCo."""
    for name in ("cart_pendulum", "free"):
        _compare(_load(small_files[name], form=form, actuators="off"), small_files[name], states=3, seed=5)


@pytest.mark.parametrize("form", ["composite", "articulated", "ltdl"])
def test_armature_in_numeric_mode(small_files, form):
    """Numeric mode's recursions (numeric_core.h) add the armature to M's diagonal (CBM) and to
    the joint blocks D_i (ABM, DEC): the same q'' and M as MuJoCo."""
    for name in ("cart_pendulum", "free", "swimmer_like", "double_pendulum"):
        _compare(_load(small_files[name], form=form, mode="numeric", actuators="off"), small_files[name], states=3,
                 seed=6)


def test_armature_refused_by_other_forms(small_files):
    with pytest.raises(ModelError, match=r"forces\[\d+\].*`lagrange1`.*armature"):
        _load(small_files["cart_pendulum"], form="lagrange1")


def test_names_and_parameters(small_files):
    spec = load_model(small_files["double_pendulum"])
    assert spec.name == "double_pendulum"
    params = {p.name: p for p in spec.parameters}
    assert params["shoulder_armature"].value == 0.05 and params["elbow_stiffness"].value == 2
    assert params["upper_mass"].value == pytest.approx(1.3)
    springs = {f["name"]: f for f in spec.forces if f.type == "joint_spring_damper"}
    assert float(springs["elbow_stiffness"]["neutral"]) == pytest.approx(np.radians(20))   # degrees resolved
    ball = _load(small_files["ball"])
    assert ball.coordinates == ("socket_rx", "socket_ry", "socket_rz", "flap_hinge")
    free = _load(small_files["free"])
    assert free.coordinates[:6] == ("root_x", "root_y", "root_z", "root_rx", "root_ry", "root_rz")


def test_free_body_starts_where_the_file_puts_it(small_files):
    """The free joint's initial values are the body's pose in the file (MuJoCo's qpos0)."""
    spec = load_model(small_files["free"])
    init = {name: float(v) for name, v in spec.initial}
    coords = ("root_x", "root_y", "root_z", "root_rx", "root_ry", "root_rz", "shoulder")
    q0 = np.array([init.get(c, 0.0) for c in coords])
    m = mujoco.MjModel.from_xml_path(str(small_files["free"]))
    qpos, _, _ = MujocoOracle(small_files["free"], coords).state(q0, np.zeros(7))
    assert np.abs(qpos[:3] - m.qpos0[:3]).max() < 1e-15 and np.abs(qpos[:3]).max() > 0.1
    assert min(np.abs(qpos[3:7] - m.qpos0[3:7]).max(), np.abs(qpos[3:7] + m.qpos0[3:7]).max()) < 1e-12


def test_motor_actuators_are_inputs(small_files):
    """Motors as inputs u_<actuator>: gear-scaled, clamped to ctrlrange as MuJoCo does; the joint
    torques tau_<joint> add to them as MuJoCo's qfrc_applied adds to its actuator forces."""
    path = small_files["cart_pendulum"]
    model = _load(path)
    assert model.inputs == ("tau_slider", "tau_hinge", "u_push", "u_twist")
    assert _load(path, torques="off").inputs == ("u_push", "u_twist")
    oracle = MujocoOracle(path, model.coordinates, actuation=True)
    rng = np.random.default_rng(7)
    for u in ([0.3, -0.7], [2.5, 1.0], [-4.0, 0.2]):                  # inside and outside ctrlrange
        q, qd = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
        for tau in ([0.0, 0.0], list(rng.uniform(-3, 3, 2))):
            qacc, ours, _, _ = oracle.compare(model, q, qd, ctrl=u, qfrc=tau,
                                              inputs=dict(zip(model.inputs, tau + u)))
            assert max_rel_err(ours, qacc) < RTOL


DM_SUITE = ["acrobot", "cartpole", "hopper", "cheetah", "walker", "finger", "reacher", "pendulum", "point_mass",
            "swimmer", "manipulator", "ball_in_cup", "fish", "stacker"]
GYM = ["ant", "half_cheetah", "hopper", "inverted_double_pendulum", "inverted_pendulum", "pusher", "reacher",
       "swimmer", "walker2d", "point"]


@pytest.mark.parametrize("name", DM_SUITE)
def test_dm_control_suite_matches_mujoco(name):
    path = dm_suite(name)
    _compare(_load(path, actuators="off"), path, states=4, seed=11)


@pytest.mark.parametrize("name", GYM)
def test_gymnasium_assets_match_mujoco(name):
    path = gym_asset(name)
    _compare(_load(path, actuators="off"), path, states=4, seed=13)


@pytest.mark.slow
@pytest.mark.parametrize("source", ["dm_control", "gymnasium", "standup", "quadruped"])
def test_large_models_match_mujoco(source):
    path = {"dm_control": lambda: dm_suite("humanoid"), "gymnasium": lambda: gym_asset("humanoid"),
            "standup": lambda: gym_asset("humanoidstandup"), "quadruped": lambda: dm_suite("quadruped")}[source]()
    _compare(_load(path, actuators="off"), path, states=3, seed=12, spread=0.8)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["numeric", "symbolic"])
@pytest.mark.parametrize("name", ["dog", "humanoid_CMU"])
def test_largest_suite_models_match_mujoco(name, mode):
    """dm_control's dog (63 bodies, two free joints, 85 dofs) and humanoid_CMU (62 dofs), with
    their armatures, dampers and springs, in numeric mode (composite) and in symbolic mode's
    default form (ltdl): built in 5-10 s and 20-40 s (benchmarks/results/mjcf_large.txt, where
    every variant agrees with MuJoCo to 5e-12)."""
    path = dm_suite(name)
    kw = {"form": "composite"} if mode == "numeric" else {}
    _compare(_load(path, mode=mode, actuators="off", **kw), path, states=3, seed=12, spread=0.8)


@pytest.mark.parametrize("name", ["fish", "manipulator"])
def test_actuated_suite_models_match_mujoco(name):
    """Actuation on: position servos on joints and on a fixed tendon (fish's fins), a tendon's
    spring, motors with ctrlrange; the controls inside and outside their ranges."""
    path = dm_suite(name)
    model = _load(path)
    oracle = MujocoOracle(path, model.coordinates, actuation=True)
    rng = np.random.default_rng(21)
    for _ in range(3):
        q, qd = rng.uniform(-0.8, 0.8, model.n), rng.uniform(-1, 1, model.n)
        u = rng.uniform(-1.5, 1.5, oracle.m.nu)
        names = [f"u_{oracle.mj.mj_id2name(oracle.m, oracle.mj.mjtObj.mjOBJ_ACTUATOR, k)}" for k in range(oracle.m.nu)]
        modelled = [k for k in range(oracle.m.nu) if names[k] in model.inputs]
        ctrl = np.zeros(oracle.m.nu)
        ctrl[modelled] = u[modelled]                  # the actuators left out get no control in MuJoCo either
        inputs = {names[k]: ctrl[k] for k in modelled}
        qacc, ours, _, _ = oracle.compare(model, q, qd, ctrl=ctrl, inputs=inputs)
        assert max_rel_err(ours, qacc) < RTOL


def test_one_warning_names_what_is_not_modelled(tmp_path):
    path = dm_suite("hopper")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_model(path, contacts=False, limits=False)
    texts = [str(w.message) for w in caught if issubclass(w.category, DynamicaWarning)]
    assert len(texts) == 1
    for what in ("contacts", "joint limits", "`waist`", "sensors"):
        assert what in texts[0]


def test_convert_then_load_gives_the_same_numbers(tmp_path, small_files):
    from dynamica.runtime.cli.main import main
    for path in (small_files["free"], small_files["double_pendulum"]):
        out = tmp_path / f"{path.stem}.yaml"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DynamicaWarning)
            assert main(["convert", str(path), "-o", str(out)]) == 0
        data = yaml.safe_load(out.read_text())
        assert any(f["type"] == "armature" for f in data["forces"])
        a, b = _load(path), _load(out)
        assert a.coordinates == b.coordinates and a.parameters == b.parameters
        rng = np.random.default_rng(3)
        for _ in range(3):
            q, qd = rng.uniform(-1, 1, a.n), rng.uniform(-1, 1, a.n)
            assert np.array_equal(a.qdd(q, qd), b.qdd(q, qd))
            assert np.array_equal(a.mass_matrix(q), b.mass_matrix(q))


# ---------------------------------------------------------------- malformed files
BODY = '<body name="b"><joint name="j" {joint}/><geom type="sphere" size="0.1" mass="1"/></body>'


def _world(joint):
    return "<mujoco><worldbody>" + BODY.format(joint=joint) + "</worldbody></mujoco>"


MALFORMED = {
    "not mjcf": ('<robot name="r"><link name="a"/></robot>', r"expected a <mujoco> element.*<robot>", ".mjcf"),
    "not xml": ("<mujoco", r"not a valid XML", ".xml"),
    "unknown joint type": (_world('type="twist"'), r"`joint`.*twist", ".xml"),
    "zero axis": (_world('axis="0 0 0"'), r"`joint\[j\]`.*axis", ".xml"),
    "inertia not positive": ('<mujoco><worldbody><body name="b"><joint name="j"/><inertial pos="0 0 0" mass="1" '
                             'diaginertia="1 -1 1"/></body></worldbody></mujoco>', r"`element\[b\]`.*inertia", ".xml"),
    "ball spring": (_world('type="ball" stiffness="2"'), r"joint\[j\]\.stiffness", ".xml"),
    "ball armature beside another joint of its body": (
        '<mujoco><worldbody><body name="b"><joint name="h"/><joint name="j" type="ball" armature="2"/>'
        '<geom type="sphere" size="0.1" mass="1"/></body></worldbody></mujoco>',
        r"joint\[j\]\.armature", ".xml"),
    "weld off its reference pose": (
        '<mujoco><worldbody><body name="a" euler="0 0 30"><joint name="j"/><geom type="sphere" size="0.1" mass="1"/>'
        '</body><body name="c" pos="1 0 0"><joint name="k"/><geom type="sphere" size="0.1" mass="1"/></body>'
        '</worldbody><equality><weld name="w" body1="a" body2="c" relpose="0 0 0 1 0 0 0"/></equality></mujoco>',
        r"equality\[w\]\.relpose", ".xml"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_mjcf_is_a_model_error_naming_the_element(tmp_path, case):
    text, pattern, suffix = MALFORMED[case]
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    with pytest.raises(ModelError, match=pattern) as err:
        dynamica.load(path)
    assert str(path) in str(err.value)


def test_urdf_in_an_xml_file_is_read_as_urdf(tmp_path):
    path = tmp_path / "robot.xml"
    path.write_text('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" '
                    'iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute">'
                    '<parent link="a"/><child link="b"/><axis xyz="0 0 1"/></joint></robot>')
    assert load_model(path).bodies[1].name == "b"


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="file not found"):
        load_model(tmp_path / "none.xml")


def test_actuators_off_and_urdf_options_refused(small_files):
    path = small_files["cart_pendulum"]
    off = _load(path, actuators="off", torques="off")
    assert off.inputs == () and off.n == 2
    oracle = MujocoOracle(path, off.coordinates)                 # actuation disabled there
    qacc, ours, _, _ = oracle.compare(off, np.array([0.2, -0.4]), np.array([0.5, 1.0]))
    assert max_rel_err(ours, qacc) < RTOL
    with pytest.raises(ModelError, match="floating.*URDF"):
        load_model(path, floating=True)
    with pytest.raises(ModelError, match="actuators"):
        load_model(path, actuators="sometimes")
    with pytest.raises(ModelError, match="torques.*inputs, off"):
        load_model(path, torques="always")


def test_simulate_from_the_command_line(tmp_path, small_files):
    from dynamica.runtime.cli.main import main
    out = tmp_path / "run.csv"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        assert main(["simulate", str(small_files["double_pendulum"]), "--t-end", "0.2", "--torques", "off",
                     "--out", str(out)]) == 0
    assert out.read_text().splitlines()[0].startswith("t,shoulder,elbow")


# ---------------------------------------------------------------- equality constraints as loops
LOOPED = {
    "fourbar": """
<mujoco model="fourbar">
  <worldbody>
    <body name="crank">
      <joint name="th1" axis="0 1 0" damping="0.01" armature="0.002"/>
      <geom type="capsule" fromto="0 0 0 0.2 0 0" size="0.01" mass="1"/>
      <body name="coupler" pos="0.2 0 0" euler="0 -60 0">
        <joint name="th2" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 0.6 0 0" size="0.01" mass="1"/>
      </body>
    </body>
    <body name="rocker" pos="0.55 0 0">
      <joint name="th3" axis="0 1 0" stiffness="0.5"/>
      <geom type="capsule" fromto="0 0 0 0 0 0.5" size="0.01" mass="1"/>
    </body>
  </worldbody>
  <equality><connect name="pin" body1="coupler" body2="rocker" anchor="0.6 0 0"/></equality>
</mujoco>""",
    "weld": """
<mujoco model="weld">
  <worldbody>
    <body name="a" pos="0 0 1">
      <joint name="j1" axis="0 1 0"/>
      <geom type="box" size="0.1 0.05 0.05" pos="0.1 0 0" mass="1"/>
      <body name="b" pos="0.2 0 0" euler="0 30 0">
        <joint name="j2" axis="0 1 0"/>
        <joint name="j3" axis="1 0 0"/>
        <joint name="j4" axis="0 0 1"/>
        <geom type="box" size="0.1 0.05 0.05" pos="0.1 0 0" mass="1"/>
      </body>
    </body>
    <body name="c" pos="0.5 0.1 1.1">
      <joint name="s1" type="slide" axis="1 0 0"/>
      <joint name="s2" type="slide" axis="0 0 1"/>
      <joint name="s3" type="slide" axis="0 1 0" damping="0.3"/>
      <joint name="r1" axis="0 1 0"/>
      <geom type="sphere" size="0.05" mass="0.5"/>
    </body>
  </worldbody>
  <equality><weld name="glue" body1="b" body2="c" anchor="0.05 0 0"/></equality>
</mujoco>""",
}


@pytest.mark.parametrize("name", list(LOOPED))
def test_connect_and_weld_as_loops(tmp_path, name):
    """connect -> a spherical loop, weld -> a weld loop: q'' at assembled states equals the
    exact constrained q'' from MuJoCo's M, bias and point Jacobians (oracles.constrained_qacc)."""
    from oracles.mujoco_mjcf import constrained_qacc
    path = tmp_path / f"{name}.xml"
    path.write_text(LOOPED[name])
    spec = load_model(path)
    assert [(lp.type if hasattr(lp, "type") else lp["type"]) for lp in spec.loops] == \
        (["spherical"] if name == "fourbar" else ["weld"])
    model = _load(path)
    oracle = MujocoOracle(path, model.coordinates)
    rng = np.random.default_rng(4)
    worst = 0.0
    for _ in range(4):
        q, qd = model.assemble(rng.uniform(-0.3, 0.3, model.n), rng.uniform(-1, 1, model.n))
        assert np.abs(model.constraints(q)).max() < 1e-10
        worst = max(worst, max_rel_err(model.qdd(q, qd), constrained_qacc(oracle, q, qd)))
    assert worst < RTOL, worst                 # measured: 2e-12 (the central difference of J' q')


def test_limits_and_frictionloss_on_request(tmp_path):
    """limits (the default): the ranges as `stop` forces; frictionloss=True: -f tanh(q'/0.01), which
    adds M^-1 Q to MuJoCo's q'' (its friction loss is a constraint, disabled in the oracle)."""
    path = tmp_path / "friction.xml"
    path.write_text("""
<mujoco><compiler angle="degree"/><worldbody>
  <body name="arm"><joint name="hinge" axis="0 1 0" range="-30 60" frictionloss="0.4"/>
    <geom type="capsule" fromto="0 0 0 0.5 0 0" size="0.02" mass="1"/>
    <body name="slider" pos="0.5 0 0"><joint name="slide" type="slide" axis="1 0 0" frictionloss="2"/>
      <geom type="sphere" size="0.05" mass="0.3"/></body></body>
</worldbody></mujoco>""")
    plain = load_model(path, limits=False, torques="off")
    assert not [f for f in plain.forces if f.type in ("stop", "generalized_force")]
    spec = load_model(path)
    limits = {f["coordinate"]: f for f in spec.forces if f.type == "stop"}
    assert set(limits) == {"hinge"}
    assert float(limits["hinge"]["lower"]) == pytest.approx(-np.pi / 6)
    assert float(limits["hinge"]["upper"]) == pytest.approx(np.pi / 3)
    model = _load(path, frictionloss=True)
    oracle = MujocoOracle(path, model.coordinates)
    q, qd = np.array([0.3, 0.1]), np.array([0.7, -0.002])
    qacc, _, M, _ = oracle.compare(model, q, qd)
    Q = np.array([-0.4 * np.tanh(0.7 / 0.01), -2.0 * np.tanh(-0.002 / 0.01)])
    assert max_rel_err(model.qdd(q, qd), qacc + np.linalg.solve(M, Q)) < RTOL


def test_form_auto_picks_a_form_that_takes_armature(small_files):
    from dynamica.generator.mechanics.forces import ARMATURE_FORMS
    from dynamica.runtime.analysis import selection
    spec = load_model(small_files["cart_pendulum"])
    assert selection.predicted_best(spec) in ARMATURE_FORMS


@pytest.mark.parametrize("variant", ["unrolled", "tape", "recursive"])
def test_derivatives_with_armature(small_files, variant):
    """The derivative kernels take the armature (their residual M x - Q and their solve): q''
    equals MuJoCo's and dq''/dq, dq''/dq' equal central differences of model.qdd (h = 1e-6,
    agreement 1e-6 relative)."""
    from dynamica.runtime.kinds.derivatives import derivatives
    path = small_files["cart_pendulum"]
    model = _load(path, actuators="off")
    d = derivatives(model, variant=variant)
    q, qd = np.array([0.3, -0.5]), np.array([0.7, 1.1])
    qdd, Jq, Jqd = d.qdd_jacobian(q, qd)
    qacc, _, _, _ = MujocoOracle(path, model.coordinates).compare(model, q, qd)
    assert max_rel_err(qdd, qacc) < RTOL
    h = 1e-6
    for k in range(model.n):
        e = np.zeros(model.n)
        e[k] = h
        assert max_rel_err(Jq[:, k], (model.qdd(q + e, qd) - model.qdd(q - e, qd)) / (2 * h)) < 1e-6
        assert max_rel_err(Jqd[:, k], (model.qdd(q, qd + e) - model.qdd(q, qd - e)) / (2 * h)) < 1e-6


def _pair_bodies(xml, tmp_path, **options):
    """The bodies of each contact pair of the model file `dynamica convert` writes."""
    from dynamica.runtime.cli.convert import convert
    contact = yaml.safe_load(convert(xml, tmp_path / "converted.yaml", **options).read_text()).get("contact")
    return [{contact["shapes"][p[k]]["body"] for k in "ab"} for p in contact["pairs"]] if contact else []


def test_the_dogs_contact_pairs_are_all_kept_and_contacts_ground_keeps_the_floors(tmp_path):
    """dm_control's dog makes 3026 contact pairs under MuJoCo's filters with a closed form: all kept
    (they run through the broad phase, docs/contact.md); contacts='ground' keeps its pairs with a
    geom fixed to the ground (MuJoCo's filters counted independently here: 720 ground pairs less
    the ellipsoids' 264 and the cylinder's 11 against boxes and cylinders), with one warning
    naming the 2581 left out; --no-contacts converts it without any."""
    import subprocess
    import sys
    import time
    path = dm_suite("dog")
    t0 = time.perf_counter()
    assert len(_pair_bodies(path, tmp_path)) == 3026
    assert time.perf_counter() - t0 < 60
    with pytest.warns(DynamicaWarning, match=r"contacts between two moving bodies.*`2581 pairs`"):
        bodies = _pair_bodies(path, tmp_path, contacts="ground")
    assert len(bodies) == 445 and all("ground" in b for b in bodies)
    yaml_path = tmp_path / "dog.yaml"
    out = subprocess.run([sys.executable, "-m", "dynamica.runtime.cli.main", "convert", str(path), "-o", str(yaml_path),
                          "--no-contacts"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-500:]
    assert "contact" not in yaml.safe_load(yaml_path.read_text())


_SPHERES = """<mujoco><worldbody><geom name="floor" type="plane" size="5 5 .1"/>
  <body name="a" pos="0 0 1"><freejoint/>{a}</body>
  <body name="b" pos="0 0 2"><freejoint/><geom name="b0" type="sphere" size=".1"/></body>
</worldbody></mujoco>"""


def test_contacts_ground_keeps_only_the_pairs_with_the_ground_and_many_pairs_take_the_broad_phase(tmp_path):
    """contacts='ground' (--contacts ground) keeps the floor's pairs and drops a-b; a thousand pairs
    are all kept, and the model's contacts run through the broad phase (docs/contact.md)."""
    import subprocess
    import sys
    small = tmp_path / "small.xml"
    small.write_text(_SPHERES.format(a='<geom name="a0" type="sphere" size=".1"/>'))
    assert len(_pair_bodies(small, tmp_path)) == 3
    with pytest.warns(DynamicaWarning, match=r"contacts between two moving bodies.*`1 pairs`"):
        bodies = _pair_bodies(small, tmp_path, contacts="ground")
    assert sorted(map(sorted, bodies)) == [["a", "ground"], ["b", "ground"]]
    yaml_path = tmp_path / "small.yaml"
    out = subprocess.run([sys.executable, "-m", "dynamica.runtime.cli.main", "convert", str(small), "-o",
                          str(yaml_path), "--contacts", "ground"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-500:]
    assert len(yaml.safe_load(yaml_path.read_text())["contact"]["pairs"]) == 2
    big = tmp_path / "big.xml"
    big.write_text(_SPHERES.format(a="".join(f'<geom type="sphere" size=".01" pos="{k * .02} 0 0"/>'
                                             for k in range(501))))
    from dynamica.generator.mechanics import broad_phase
    spec = load_model(big)
    assert sum(f.type == "contact" for f in spec.forces) == 1003 and broad_phase.used(spec)
    assert not broad_phase.used(load_model(big, broad_phase=False))
    assert not broad_phase.used(load_model(small)) and broad_phase.used(load_model(small, broad_phase=True))
    with pytest.raises(ModelError, match=r"broad_phase.*expected True, False or 'auto'"):
        load_model(small, broad_phase="sometimes")
    with pytest.raises(ModelError, match=r"contacts.*expected True, False or 'ground'"):
        load_model(small, contacts="all")
