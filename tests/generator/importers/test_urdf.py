"""URDF robots (generator/importers/urdf.py) against Pinocchio's buildModelFromUrdf on the same files:
q'' (aba, with the URDF's damping and Coulomb friction as joint torques) and M (crba) to a
relative 1e-10 at random states; `dynamica convert` then load gives the same numbers; malformed
files give one ModelError naming the element.

Robots: example-robot-data's UR5, double pendulums (revolute and continuous), Allegro hand
(16 DOF, damping and friction), Panda (prismatic fingers, a mimic joint), and a small robot
written here with what those lack: rpy on joints and inertial frames, products of inertia,
fixed joints between massive links, a floating base (as a composite joint in Pinocchio)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import yaml

pin = pytest.importorskip("pinocchio")
pytest.importorskip("yourdfpy")

import dynamica  # noqa: E402
from dynamica.errors import ModelError  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning, load_model  # noqa: E402

from helpers import max_rel_err  # noqa: E402
from oracles.pin_urdf import coordinate_map, identifier, pin_model, pin_qdd_and_M, robot_file  # noqa: E402

RTOL = 1e-12
ROBOTS = {
    "ur5": "robots/ur_description/urdf/ur5_robot.urdf",
    "double_pendulum": "robots/double_pendulum_description/urdf/double_pendulum.urdf",
    "double_pendulum_continuous": "robots/double_pendulum_description/urdf/double_pendulum_continuous.urdf",
    "allegro_hand": "robots/allegro_hand_description/urdf/allegro_right_hand.urdf",
    "panda": "robots/panda_description/urdf/panda.urdf",
}

SMALL = """<?xml version="1.0"?>
<robot name="small-bot">
  <link name="base">
    <inertial><origin xyz="0.01 0 0.05" rpy="0 0 0"/><mass value="3.0"/>
      <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial>
    <visual><geometry><box size="0.2 0.2 0.1"/></geometry></visual>
  </link>
  <link name="arm.1">
    <inertial><origin xyz="0.1 0.02 -0.03" rpy="0.3 -0.2 0.7"/><mass value="1.2"/>
      <inertia ixx="0.01" ixy="-0.002" ixz="0.001" iyy="0.02" iyz="0.0005" izz="0.015"/></inertial>
    <visual><origin xyz="0.1 0 0" rpy="0 1.5707963267948966 0"/>
      <geometry><cylinder radius="0.02" length="0.2"/></geometry></visual>
  </link>
  <link name="bracket">
    <inertial><origin xyz="0 0.01 0" rpy="0.1 0.2 0.3"/><mass value="0.4"/>
      <inertia ixx="0.001" ixy="0" ixz="0" iyy="0.002" iyz="0" izz="0.0015"/></inertial>
  </link>
  <link name="slider">
    <inertial><origin xyz="0 0 0.02" rpy="0 0 0"/><mass value="0.5"/>
      <inertia ixx="0.0008" ixy="0.0001" ixz="0" iyy="0.0009" iyz="0" izz="0.0007"/></inertial>
    <visual><geometry><sphere radius="0.03"/></geometry></visual>
  </link>
  <link name="wheel">
    <inertial><origin xyz="0 0 0" rpy="-0.4 0.5 0.2"/><mass value="0.3"/>
      <inertia ixx="0.0004" ixy="0" ixz="0" iyy="0.0004" iyz="0" izz="0.0006"/></inertial>
  </link>
  <link name="finger">
    <inertial><origin xyz="0 0 0.01"/><mass value="0.1"/>
      <inertia ixx="0.0001" iyy="0.0001" izz="0.00005" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tool_frame"/>
  <joint name="shoulder" type="revolute">
    <parent link="base"/><child link="arm.1"/>
    <origin xyz="0 0 0.1" rpy="0.2 -0.3 0.5"/><axis xyz="0 0.6 0.8"/>
    <limit lower="-2" upper="2" effort="10" velocity="3"/>
    <dynamics damping="0.3" friction="0.05"/>
  </joint>
  <joint name="weld" type="fixed">
    <parent link="arm.1"/><child link="bracket"/><origin xyz="0.2 0 0" rpy="0 0.4 0"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="bracket"/><child link="slider"/>
    <origin xyz="0.05 0.01 0" rpy="1.1 0 -0.2"/><axis xyz="1 0 0"/>
    <limit lower="-0.1" upper="0.1" effort="10" velocity="1"/>
    <dynamics damping="2.0"/>
  </joint>
  <joint name="spin" type="continuous">
    <parent link="slider"/><child link="wheel"/><origin xyz="0 0 0.05" rpy="0 0 0"/><axis xyz="0 0 -1"/>
  </joint>
  <joint name="grip" type="revolute">
    <parent link="bracket"/><child link="finger"/><origin xyz="0 0.03 0"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
    <mimic joint="shoulder" multiplier="-0.5" offset="0.1"/>
  </joint>
  <joint name="tool" type="fixed"><parent link="finger"/><child link="tool_frame"/></joint>
</robot>
"""


def robot_path(name):
    path = robot_file(ROBOTS[name])
    if path is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    return path


@pytest.fixture(scope="module")
def small_urdf(tmp_path_factory):
    path = tmp_path_factory.mktemp("urdf") / "small.urdf"
    path.write_text(SMALL)
    return path


def _load(path, **kw):
    if str(path).endswith(".urdf"):
        kw.setdefault("limits", False)                       # Pinocchio's aba has no limits
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)     # the mimic joint's warning
        return dynamica.load(path, **kw)


def _compare(model, pmodel, root=(), states=6, seed=0):
    """q'' with random joint torques (the inputs tau_<joint>) against aba(q, v, tau), and M."""
    cmap = coordinate_map(pmodel, list(model.coordinates), root)
    rng = np.random.default_rng(seed)
    worst = 0.0
    index = {c: k for k, c in enumerate(model.coordinates)}
    for _ in range(states):
        q = rng.uniform(-1.5, 1.5, model.n)
        qd = rng.uniform(-2.0, 2.0, model.n)
        tau = np.zeros(model.n)
        inputs = {u: rng.uniform(-5, 5) for u in model.inputs}
        for u, v in inputs.items():
            tau[index[u[len("tau_"):]]] = v
        a, M = pin_qdd_and_M(pmodel, cmap, q, qd, model.n, tau)
        worst = max(worst, max_rel_err(model.qdd(q, qd, inputs=inputs), a), max_rel_err(model.mass_matrix(q), M))
    assert worst < RTOL, worst
    return worst


@pytest.mark.parametrize("name", list(ROBOTS))
def test_robot_matches_pinocchio(name):
    path = robot_path(name)
    model = _load(path)
    pmodel = pin_model(path)
    assert pmodel.nv == model.n
    assert set(model.coordinates) == {identifier(pmodel.names[j]) for j in range(1, pmodel.njoints)}
    _compare(model, pmodel)


def test_small_robot_matches_pinocchio(small_urdf):
    """rpy on joints and inertial frames, a skew axis, products of inertia, a fixed joint between
    massive links, a prismatic and a continuous joint, a mimic joint (independent), damping and
    friction."""
    model = _load(small_urdf)
    assert model.coordinates == ("shoulder", "slide", "spin", "grip")
    _compare(model, pin_model(small_urdf), seed=1)


def test_floating_base_on_request(small_urdf):
    fixed = _load(small_urdf)
    free = _load(small_urdf, floating=True)
    assert free.n == fixed.n + 6
    root = ("base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz")
    assert free.coordinates[:6] == root
    _compare(free, pin_model(small_urdf, root="cardan"), root=root, seed=2)


def test_names_are_identifiers(small_urdf):
    spec = load_model(small_urdf)
    assert spec.name == "small_bot"
    assert [b.name for b in spec.bodies] == ["base", "arm_1", "bracket", "slider", "wheel", "finger", "tool_frame"]
    params = {p.name: p for p in spec.parameters}
    assert params["arm_1_mass"].value == 1.2 and params["arm_1_mass"].unit == "kg"
    assert params["shoulder_damping"].value == 0.3
    assert "tool_frame_mass" not in params              # a link without <inertial>: an intermediate frame


def test_mimic_warns_once_and_coupled_is_refused(small_urdf):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        load_model(small_urdf)
    texts = [str(w.message) for w in caught if issubclass(w.category, DynamicaWarning)]
    assert len([t for t in texts if "mimic" in t]) == 1 and "`grip` (mimics `shoulder`)" in texts[0]
    with pytest.raises(ModelError, match=r"joint\[grip\]\.mimic"):
        load_model(small_urdf, mimic="coupled")
    with pytest.raises(ModelError, match="mimic"):
        load_model(small_urdf, mimic="sometimes")


def test_limits_as_stops_by_default(small_urdf):
    spec = load_model(small_urdf)
    limits = {f["coordinate"]: f for f in spec.forces if f.type == "stop"}
    assert set(limits) == {"shoulder", "slide", "grip"}          # not the continuous joint
    assert (limits["shoulder"]["lower"], limits["shoulder"]["upper"]) == (-2, 2)
    assert not [f for f in load_model(small_urdf, limits=False).forces if f.type == "stop"]


def test_options_are_for_urdf_only(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: m\nbodies: [{name: a, parent: ground, joint: [], mass: 0}]\n")
    with pytest.raises(ModelError, match="robot descriptions"):
        load_model(path, floating=True)


def test_visuals_from_urdf(small_urdf):
    spec = load_model(small_urdf)
    vis = {b.name: b.visual for b in spec.bodies}
    assert vis["base"][0].shape == "box" and tuple(map(float, vis["base"][0].size)) == (0.2, 0.2, 0.1)
    assert vis["arm_1"][0].shape == "cylinder" and float(vis["arm_1"][0].rpy[1]) == pytest.approx(np.pi / 2)
    assert vis["slider"][0].shape == "sphere"
    ur5 = load_model(robot_path("ur5"))
    meshes = [v for b in ur5.bodies for v in b.visual if v.shape == "mesh"]
    assert meshes and all(v.file.endswith((".dae", ".stl", ".DAE", ".STL")) for v in meshes)
    from pathlib import Path
    assert all(Path(v.file).is_file() for v in meshes)     # package:// resolved


def test_convert_then_load_gives_the_same_numbers(tmp_path):
    from dynamica.runtime.cli.main import main
    path = robot_path("ur5")
    out = tmp_path / "ur5.yaml"
    assert main(["convert", str(path), "-o", str(out)]) == 0
    text = out.read_text()
    data = yaml.safe_load(text)
    shoulder = next(b for b in data["bodies"] if b["name"] == "shoulder_link")
    assert shoulder["joint"][-1] == {"rotate": "z", "q": "shoulder_pan_joint"}
    assert shoulder["mass"] == "shoulder_link_mass"
    assert "upper_arm_link_mass" in data["parameters"]
    a, b = _load(path, limits=True), _load(out)                  # convert keeps the limits (the default)
    assert a.coordinates == b.coordinates and a.parameters == b.parameters
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, a.n), rng.uniform(-1, 1, a.n)
        assert np.array_equal(a.qdd(q, qd), b.qdd(q, qd))
        assert np.array_equal(a.mass_matrix(q), b.mass_matrix(q))


# ---------------------------------------------------------------- malformed files
GOOD_LINKS = """\
<link name="a"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
<link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>
"""
MALFORMED = {
    "missing parent link": (
        GOOD_LINKS + '<joint name="j" type="revolute"><parent link="nowhere"/><child link="b"/></joint>',
        r"joint\[j\]\.parent.*`nowhere`.*not defined",
    ),
    "cycle": (
        GOOD_LINKS + '<link name="c"/>'
        '<joint name="j1" type="revolute"><parent link="b"/><child link="c"/></joint>'
        '<joint name="j2" type="revolute"><parent link="c"/><child link="b"/></joint>',
        r"joint\[j1\].*cycle",
    ),
    "two parents": (
        GOOD_LINKS + '<joint name="j1" type="revolute"><parent link="a"/><child link="b"/></joint>'
        '<joint name="j2" type="revolute"><parent link="a"/><child link="b"/></joint>',
        r"joint\[j2\]\.child.*already the child of joint `j1`",
    ),
    "negative mass": (
        '<link name="a"/><link name="b"><inertial><mass value="-1"/><inertia ixx="1" iyy="1" izz="1" '
        'ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute"><parent link="a"/>'
        '<child link="b"/></joint>',
        r"link\[b\]\.inertial\.mass",
    ),
    "indefinite inertia": (
        '<link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="1" iyy="-2" izz="1" '
        'ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute"><parent link="a"/>'
        '<child link="b"/></joint>',
        r"link\[b\]\.inertial\.inertia.*positive semi-definite",
    ),
    "inertia not a number": (
        '<link name="a"/><link name="b"><inertial><mass value="1"/><inertia ixx="heavy" iyy="1" '
        'izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link><joint name="j" type="revolute">'
        '<parent link="a"/><child link="b"/></joint>',
        r"link\[b\]\.inertial\.inertia\.ixx.*heavy",
    ),
    "unknown joint type": (
        GOOD_LINKS + '<joint name="j" type="revolut"><parent link="a"/><child link="b"/></joint>',
        r"joint\[j\]\.type.*revolut.*did you mean.*revolute",
    ),
    "joint without child": (
        GOOD_LINKS + '<joint name="j" type="revolute"><parent link="a"/></joint>',
        r"joint\[j\]\.child.*missing",
    ),
    "two roots": (GOOD_LINKS, r"2 root links"),
    "zero axis": (
        GOOD_LINKS + '<joint name="j" type="revolute"><parent link="a"/><child link="b"/><axis xyz="0 0 0"/></joint>',
        r"joint\[j\]\.axis",
    ),
    "not xml": ("<robot", r"not a valid XML"),
}


@pytest.mark.parametrize("case", list(MALFORMED))
def test_malformed_urdf_is_a_model_error_naming_the_element(tmp_path, case):
    body, pattern = MALFORMED[case]
    path = tmp_path / "bad.urdf"
    path.write_text(body if case == "not xml" else f'<robot name="bad">{body}</robot>')
    with pytest.raises(ModelError, match=pattern) as err:
        dynamica.load(path)
    assert str(path) in str(err.value)


def test_missing_file_is_a_model_error(tmp_path):
    with pytest.raises(ModelError, match="file not found"):
        load_model(tmp_path / "none.urdf")


@pytest.mark.parametrize("name", ["small", "small_floating"] + list(ROBOTS))
def test_the_reference_reads_the_urdf_itself(name, small_urdf):
    """The numeric reference reads a URDF's joints and inertial numbers from its XML itself
    (runtime/reference/reader.py, the standard library's parser; not the importer's library or
    mapping): its mass matrix and q'' (joint torques of the URDF's damping and friction) equal
    Pinocchio's at random states, 1e-10."""
    from dynamica.runtime.reference import reader
    from dynamica.runtime.reference.numeric import NumericReference
    path = small_urdf if name.startswith("small") else robot_path(name)
    floating = name == "small_floating"
    spec = load_model(path, floating=floating, limits=False)
    assert reader.urdf(spec) is not None
    ref = NumericReference(spec)
    assert tuple(ref.coordinates) == tuple(c for b in spec.bodies for tr in b.joint for c in [tr.q] if c)
    root = ("base_x", "base_y", "base_z", "base_rx", "base_ry", "base_rz") if floating else ()
    pmodel = pin_model(path, root="cardan" if floating else None)
    cmap = coordinate_map(pmodel, list(ref.coordinates), root)
    rng = np.random.default_rng(4)
    for _ in range(3):
        q = rng.uniform(-1.0, 1.0, len(ref.coordinates))
        qd = rng.uniform(-2.0, 2.0, len(ref.coordinates))
        a, M = pin_qdd_and_M(pmodel, cmap, q, qd, len(q))
        assert max_rel_err(ref.mass_matrix(q), M) < RTOL
        assert max_rel_err(ref.qdd(q, qd), a) < RTOL


# ---------------------------------------------------------------- joint torques as inputs
def test_joint_torques_are_inputs_with_effort_and_velocity_parameters(small_urdf):
    """Every 1-DOF joint (revolute, continuous, prismatic, the mimic joint too: an independent
    coordinate) gets an input tau_<joint>; <limit effort velocity> become parameters;
    saturate=True clamps the input to +-effort (checked on q'' against aba with the clamped
    torque); torques="off" leaves them out."""
    spec = load_model(small_urdf)
    assert spec.inputs == ("tau_shoulder", "tau_slide", "tau_spin", "tau_grip")
    params = {p.name: p for p in spec.parameters}
    assert params["shoulder_effort"].value == 10 and params["shoulder_effort"].unit == "N*m"
    assert params["shoulder_velocity"].value == 3 and params["shoulder_velocity"].unit == "rad/s"
    assert load_model(small_urdf, torques="off").inputs == ()
    model = _load(small_urdf, saturate=True)
    pmodel = pin_model(small_urdf)
    cmap = coordinate_map(pmodel, list(model.coordinates))
    q, qd = np.array([0.3, 0.05, -0.2, 0.1]), np.array([0.4, -0.3, 1.0, 0.2])
    inputs = {"tau_shoulder": 25.0, "tau_slide": -1.0, "tau_spin": 0.2, "tau_grip": 0.0}
    clamped = np.array([10.0, -1.0, 0.2, 0.0])          # the shoulder's effort is 10
    a, _ = pin_qdd_and_M(pmodel, cmap, q, qd, model.n, clamped)
    assert max_rel_err(model.qdd(q, qd, inputs=inputs), a) < RTOL
    with pytest.raises(ModelError, match="torques"):
        load_model(small_urdf, torques="sometimes")
    with pytest.raises(ModelError, match="saturate"):
        load_model(small_urdf, torques="off", saturate=True)


def test_negative_effort_is_a_model_error(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text('<robot name="bad">' + GOOD_LINKS + '<joint name="j" type="revolute"><parent link="a"/>'
                    '<child link="b"/><limit lower="-1" upper="1" effort="-3" velocity="1"/></joint></robot>')
    with pytest.raises(ModelError, match=r"joint\[j\]\.limit\.effort") as err:
        load_model(path)
    assert str(path) in str(err.value)


def test_inverse_dynamics_torques_reproduce_the_motion():
    """Closed form: driven by tau(t) = inverse_dynamics(q_ref, q_ref', q_ref'') the robot (UR5,
    6 DOF) follows q_ref(t) = q0 + a sin(w t). The torques are given as data every h = 1 ms
    (linear between the points: an error h^2/8 max|tau''| ~ 1e-6 N m of torque, w^2 |tau| with w
    = 2 rad/s), which bounds the motion's error to ~1e-7 rad over 0.5 s; the integration's own
    (rtol 1e-10) is below that. Without the torques the robot falls by more than 0.1 rad."""
    model = _load(robot_path("ur5"))
    w = 2.0
    q0 = np.array([0.1, -1.2, 1.4, -0.8, 0.6, 0.3])
    amp = np.array([0.3, 0.2, -0.25, 0.4, -0.3, 0.5])
    t = np.linspace(0.0, 0.5, 501)

    def ref(tt):
        s, c = np.sin(w * tt), np.cos(w * tt)
        return q0 + amp * s, amp * w * c, -amp * w * w * s
    tau = np.array([model.inverse_dynamics(*ref(tt)) for tt in t])
    inputs = {u: (t, tau[:, k]) for k, u in enumerate(model.inputs)}
    assert model.inputs == tuple(f"tau_{c}" for c in model.coordinates)
    q_start, qd_start, _ = ref(0.0)
    res = dynamica.simulate(model, t_end=0.5, q0=q_start, qd0=qd_start, inputs=inputs, rtol=1e-10, atol=1e-12,
                            output_step=0.01)
    err = max(np.abs(res.q[k] - ref(tt)[0]).max() for k, tt in enumerate(res.t))
    assert err < 1e-6, err
    print(f"tracking error {err:.2e} rad")
    free = dynamica.simulate(model, t_end=0.5, q0=q_start, qd0=qd_start, output_step=0.01,
                             inputs={u: (np.array([0.0, 0.5]), np.zeros(2)) for u in model.inputs})
    assert np.abs(free.q[-1] - ref(0.5)[0]).max() > 0.1


# ---------------------------------------------------------------- Coulomb friction that simulates
BLOCK = """<?xml version="1.0"?>
<robot name="block">
  <link name="floor"/>
  <link name="block"><inertial><mass value="0.1"/>
    <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial></link>
  <joint name="slide" type="prismatic"><parent link="floor"/><child link="block"/><axis xyz="1 0 0"/>
    <limit lower="-10" upper="10" effort="100" velocity="5"/><dynamics friction="2.0"/></joint>
</robot>
"""


def test_block_sticks_then_slips_at_the_coulomb_force(tmp_path):
    """A 0.1 kg block on a horizontal prismatic joint with <dynamics friction="2.0"> (f = 2 N)
    under the ramp force F = k t, k = 0.002 N/s (the input tau_slide, linear data: exact). Closed
    form of the law f tanh(v / v_s): the block creeps at v = v_s atanh(F / f) while F < f (it
    sticks: below v_s until F = tanh(1) f) and slips once F exceeds f. Slip is the first time
    v > 3 v_s (where a quasi-static creep would need F = tanh(3) f = 0.995 f; the block's inertia
    adds m k v_s / (f (1 - (F/f)^2)) ~ 0.1 % more): the force then is f to 1 %."""
    path = tmp_path / "block.urdf"
    path.write_text(BLOCK)
    model = _load(path)
    f, k, vs = 2.0, 0.002, model.parameters["friction_velocity"]          # the documented stiction velocity
    t_end = 1.2 * f / k
    ramp = (np.array([0.0, t_end]), np.array([0.0, k * t_end]))
    res = dynamica.simulate(model, t_end=t_end, inputs={"tau_slide": ramp}, output_step=0.05, rtol=1e-9, atol=1e-12)
    v = res.qd[:, 0]
    F = k * res.t
    sticking = F < np.tanh(1.0) * f
    assert np.abs(v[sticking]).max() < vs                       # creeps below the stiction velocity
    assert np.all(np.abs(v[sticking] - vs * np.arctanh(F[sticking] / f)) < 0.02 * vs + 1e-9)  # as v_s atanh(F/f)
    slip = np.argmax(v > 3 * vs)
    assert slip > 0
    assert abs(F[slip] / f - 1) < 0.01, F[slip] / f
    assert v[-1] > 10 * vs                                      # and keeps sliding


def test_friction_costs_the_ur5_a_few_times_the_steps(tmp_path):
    """The UR5 with friction 2 N m on every joint (and damping 0.5) falls for 3 s with adams in
    under 10 times the right-hand side evaluations of the same robot without friction (a count,
    not a time: benchmarks/bench_friction.py has the times; measured 4.9x). The sign law needed
    more than 500 000 steps for 4e-7 s."""
    import re
    src = robot_path("ur5").read_text()
    src = re.sub(r"<visual>.*?</visual>|<collision>.*?</collision>", "", src, flags=re.S)
    runs = []
    for friction in (0.0, 2.0):
        path = tmp_path / f"ur5_{friction}.urdf"
        path.write_text(src.replace('<dynamics damping="0.0" friction="0.0"/>',
                                    f'<dynamics damping="0.5" friction="{friction}"/>'))
        model = _load(path, torques="off")
        res = dynamica.simulate(model, t_end=3.0, q0=[0.1, -1.0, 1.2, -0.5, 0.4, 0.2])
        assert res.success and res.t[-1] == pytest.approx(3.0)
        runs.append(res.nfev)
    assert runs[1] < 10 * runs[0], runs
