"""Cylinders (docs/contact.md): a cylinder against a plane touches at the rim points of its two end
faces, per face the deepest one and the two 120 degrees from it. Oracles: the numeric reference
(runtime/reference/forces.py: the rim points by angle in the cylinder's axes, not the generator's
vectors) for the forces, 1e-12; MuJoCo's collision (mj_forward's contacts, `data.contact.dist`, with
a margin that reports separated poses too) for the distances at random poses, 1e-9 (both exact
geometry: the same rim points); the closed form (2/3) g sin(theta) of a solid cylinder rolling down
an incline, 1 %."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import write_model
from helpers import mujoco_scene

G = 9.81
LAW = {"stiffness": 1e4, "damping": 0.3, "friction": 0.6, "stiction_velocity": 0.01}


def _free(name, inertia=(0.01, 0.02, 0.03)):
    q = [f"{name}_{c}" for c in ("x", "y", "z", "a", "b", "c")]
    return {"name": name, "parent": "ground", "joint": {"type": "free", "q": q}, "mass": 1.0,
            "com": [0, 0, 0], "inertia": list(inertia)}


def test_a_cylinder_with_a_bad_size_is_an_error_naming_it():
    for key, value in (("radius", -0.1), ("length", 0.0)):
        shape = {"type": "cylinder", "body": "c", "radius": 0.1, "length": 0.2, key: value}
        d = {"name": "m", "bodies": [_free("c")], "contact": {"shapes": {"cyl": shape}}}
        with pytest.raises(ModelError) as info:
            load_model(d)
        assert any(p.path == f"contact.shapes.cyl.{key}" and "positive" in p.message for p in info.value.problems)


def _cylinder(tmp_path, rpy):
    shapes = {"floor": {"type": "plane", "body": "ground"},
              "cyl": {"type": "cylinder", "body": "c", "radius": 0.1, "length": 0.3, "at": [0.01, -0.02, 0.03],
                      "rpy": rpy}}
    d = {"name": "cyl", "gravity": [0, 0, -G], "bodies": [_free("c")],
         "contact": {"shapes": shapes, "defaults": LAW}}
    return dynamica.load(write_model(tmp_path, d)), NumericReference(load_model(d))


@pytest.fixture(scope="module")
def cylinder(tmp_path_factory):
    return _cylinder(tmp_path_factory.mktemp("cyl"), [0.2, -0.1, 0.4])


@pytest.fixture(scope="module")
def upright(tmp_path_factory):
    return _cylinder(tmp_path_factory.mktemp("upright"), [0, 0, 0])


@pytest.mark.parametrize("pose", ["tilted", "lying"])
def test_plane_cylinder_agrees_with_the_reference(cylinder, pose):
    """q'' as the reference's (1e-12 relative) with the cylinder tilted on its rim and lying on its
    side (one point per end), each in contact and sliding."""
    model, ref = cylinder
    R = np.array(model.spec.shapes[1].axes).reshape(3, 3)               # shape -> body
    q = np.zeros(6)
    if pose == "tilted":
        q[3:] = [0.5, -0.3, 0.2]
        q[2] = 0.12
    else:
        # the body turned so that the shape's z axis is along the ground's x: the Cardan angles of
        # the body rotation B with B R = target
        B = np.array([[0, 0, 1], [0, 1, 0], [-1, 0, 0.0]]) @ R.T
        q[3:] = [math.atan2(-B[1, 2], B[2, 2]), math.asin(B[0, 2]), math.atan2(-B[0, 1], B[0, 0])]
        q[2] = 0.09 - (B @ np.array([0.01, -0.02, 0.03]))[2]
    _check(model, ref, q, 1 if pose == "tilted" else 2)


def test_a_standing_cylinder_rests_on_a_triangle_of_its_rim(upright):
    """The plane's normal exactly along the axis (no in-face direction): the triangle turns to the
    cylinder's x axis; three points in contact, q'' as the reference's (1e-12 relative)."""
    model, ref = upright
    q = np.array([0.0, 0.0, 0.14 - 0.03, 0.0, 0.0, 0.0])
    _check(model, ref, q, 3)


def _check(model, ref, q, touching):
    qd = np.random.default_rng(7).normal(0, 0.7, 6)
    d = model.outputs(0.0, q, qd)["contact_floor_cyl.distance"]
    assert np.sum(d < -1e-3) == touching, d
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))


#: the free cylinder of the MuJoCo comparisons (off its body's origin, tilted)
CYLINDER = '<geom name="cyl" type="cylinder" size="0.1 0.2" pos="0.01 0.02 -0.03" euler="0.3 0.2 0.1" margin="10"/>'


def test_plane_cylinder_distances_are_mujocos(tmp_path):
    """At 20 random poses, MuJoCo's four contacts of the cylinder with the floor (its deepest rim point,
    the other face's point below it and the deepest face's two other triangle points) have the
    distances of four of our six points, 1e-9 m."""
    mujoco = pytest.importorskip("mujoco")
    model, pair, oracle, m, data = mujoco_scene(     # m: contacts on (the oracle's are off)
        tmp_path, '<geom name="floor" type="plane" size="5 5 0.1" margin="10"/>', CYLINDER, "cyl.xml", "c", "0 0 0.3")
    rng = np.random.default_rng(11)
    for _ in range(20):
        q = np.concatenate([rng.uniform(-0.5, 0.5, 2), rng.uniform(-0.1, 0.4, 1), rng.uniform(-1.4, 1.4, 3)])
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        theirs = np.sort([data.contact[i].dist for i in range(data.ncon)])
        ours = model.outputs(0.0, q, np.zeros(6))[f"{pair}.distance"]
        assert len(theirs) == 4 and abs(theirs[0] - ours.min()) < 1e-9
        assert all(np.min(np.abs(ours - x)) < 1e-9 for x in theirs), (theirs, ours)


def test_a_cylinder_rolls_down_an_incline_at_two_thirds_g_sin_theta(tmp_path):
    """A solid cylinder (I = m r^2 / 2 about its axis) on its side, theta = 20 deg, mu = 0.5 above the
    slip limit tan(theta) / 3: x'' = (2/3) g sin(theta) within 1 % (as the rolling sphere of
    test_contact_scenes: the rolling radius is r less the penetration, 1e-3 r)."""
    theta, r, m = math.radians(20), 0.1, 1.0
    ia, it = m * r ** 2 / 2, m * (3 * r ** 2 + 0.2 ** 2) / 12
    sink = (G * math.cos(theta) / (2 * 1e6)) ** (1 / 1.5)
    d = {"name": "roller", "gravity": [G * math.sin(theta), 0, -G * math.cos(theta)],
         "bodies": [{"name": "b", "parent": "ground",
                     "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"}, {"rotate": "y", "q": "th"}],
                     "mass": m, "com": [0, 0, 0], "inertia": [it, ia, it]}],
         "initial": {"z": r - sink},
         "contact": {"shapes": {"floor": {"type": "plane", "body": "ground"},
                                "s": {"type": "cylinder", "body": "b", "radius": r, "length": 0.2,
                                      "rpy": [math.pi / 2, 0, 0]}},
                     "defaults": {"stiffness": 1e6, "damping": 2.0, "friction": 0.5, "stiction_velocity": 1e-3}}}
    res = dynamica.simulate(dynamica.load(write_model(tmp_path, d)), 1.0, output_step=0.01, rtol=1e-9, atol=1e-11)
    sel = res.t > 0.2
    a = np.polyfit(res.t[sel], res.qd[sel, 0], 1)[0]
    expected = 2 / 3 * G * math.sin(theta)
    assert abs(a - expected) < 0.01 * expected
    assert np.max(res.outputs["contact_floor_s.normal_force"][-1][[1, 2, 4, 5]]) == 0.0    # on one point per end


def test_sphere_cylinder_distances_are_mujocos(tmp_path):
    """A sphere fixed in the world against a free cylinder at 60 random poses (separated, touching
    the side, an end face or the rim, and the centre inside): MuJoCo's one contact (a margin that
    reports separated poses too) has our distance, 1e-9 m (both closed forms: the point of the
    solid cylinder closest to the centre), where it finds one; at least 40 poses are compared."""
    mujoco = pytest.importorskip("mujoco")
    model, pair, oracle, m, data = mujoco_scene(
        tmp_path, '<geom name="ball" type="sphere" size="0.05" margin="10"/>', CYLINDER, "ball_cyl.xml", "c", "0 0 0.3")
    rng = np.random.default_rng(5)
    compared, kinds = 0, set()
    for _ in range(60):
        q = np.concatenate([rng.uniform(-0.3, 0.3, 3), rng.uniform(-1.4, 1.4, 3)])
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        ours = float(model.outputs(0.0, q, np.zeros(6))[f"{pair}.distance"])
        if data.ncon != 1:
            continue
        compared += 1
        kinds.add(bool(ours < 0))
        assert abs(data.contact[0].dist - ours) < 1e-9, (q, data.contact[0].dist, ours)
    assert compared >= 40 and kinds == {True, False}, (compared, kinds)


@pytest.fixture(scope="module")
def ball_cylinder(tmp_path_factory):
    shapes = {"ball": {"type": "sphere", "body": "s", "radius": 0.05},
              "cyl": {"type": "cylinder", "body": "c", "radius": 0.1, "length": 0.3, "at": [0.01, -0.02, 0.03],
                      "rpy": [0.2, -0.1, 0.4]}}
    d = {"name": "ball_cyl", "gravity": [0, 0, -G], "bodies": [_free("s"), _free("c")],
         "contact": {"shapes": shapes, "defaults": LAW}}
    return dynamica.load(write_model(tmp_path_factory.mktemp("ballcyl"), d)), NumericReference(load_model(d))


@pytest.mark.parametrize("where", [(0.14, 0.0, 0.0), (0.0, 0.0, 0.19), (0.13, 0.0, 0.17), (0.08, 0.0, 0.0),
                                   (0.0, 0.02, 0.14)])
def test_sphere_cylinder_agrees_with_the_reference(ball_cylinder, where):
    """The ball against the side, an end face, the rim, and with its centre inside the cylinder near
    the side and near an end (points given in the cylinder's axes), both bodies moving: q'' as the
    reference's (runtime/reference/forces.py, its own branchy routine), 1e-12 relative."""
    model, ref = ball_cylinder
    E = np.array(model.spec.shapes[1].axes).reshape(3, 3)             # cylinder shape -> its body (at rest)
    q = np.zeros(12)
    q[:3] = np.array([0.01, -0.02, 0.03]) + E @ np.array(where)
    qd = np.random.default_rng(3).normal(0, 0.7, 12)
    d = float(model.outputs(0.0, q, qd)["contact_ball_cyl.distance"])
    assert d < -1e-3, d
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))


def test_capsule_cylinder_distances_are_mujocos(tmp_path):
    """A cylinder fixed in the world, a free capsule at 600 random poses: where the capsule's middle
    touches the cylinder's side (the closest points of the two axes inside both segments, by 1 cm)
    or an end sphere is the deepest point with the cylinder's axis point inside its segment, by less
    than the capsule's radius, MuJoCo's
    deepest contact (its general convex collider) has our deepest distance, 1e-9 m (seen: 2e-11 m,
    its solver's tolerance); at least 15 poses of each. Where the capsule's middle is over an end
    face or its rim, our points are not that feature (docs/contact.md) and are not compared."""
    mujoco = pytest.importorskip("mujoco")
    model, pair, oracle, m, data = mujoco_scene(
        tmp_path, '<geom name="cyl" type="cylinder" size="0.1 0.2" euler="0.4 0.3 0"/>',
        '<geom name="rod" type="capsule" size="0.04 0.15"/>', "capcyl.xml")
    rng = np.random.default_rng(3)
    seen = {"side": 0, "end": 0}
    for _ in range(600):
        q = np.concatenate([rng.uniform(-0.25, 0.25, 3), rng.uniform(-np.pi, np.pi, 3)])
        d = model.outputs(0.0, q, np.zeros(6))[f"{pair}.distance"]
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        if data.ncon < 1 or not -0.04 < d.min() < 0:         # deeper: MuJoCo's EPA to about 1e-7 m
            continue
        u, v = data.geom_xmat[1].reshape(3, 3)[:, 2], data.geom_xmat[0].reshape(3, 3)[:, 2]
        r = data.geom_xpos[1] - data.geom_xpos[0]
        beta = u @ v
        s = (beta * (v @ r) - u @ r) / (1 - beta ** 2)
        t = beta * s + v @ r
        if abs(s) < 0.14 and abs(t) < 0.19 and d[2] < 0 < min(d[0], d[1]):
            kind = "side"
        elif np.argmin(d) < 2 and d[2] > 0 and abs(t) < 0.2:
            kind = "end"
        else:
            continue
        seen[kind] += 1
        theirs = min(data.contact[i].dist for i in range(data.ncon))
        assert abs(theirs - d.min()) < 1e-9, (kind, q, theirs, d)
    assert min(seen.values()) >= 15, seen


@pytest.fixture(scope="module")
def capsule_cylinder(tmp_path_factory):
    shapes = {"rod": {"type": "capsule", "body": "s", "radius": 0.04, "length": 0.3, "rpy": [0.0, 1.5708, 0.0]},
              "cyl": {"type": "cylinder", "body": "c", "radius": 0.1, "length": 0.4}}
    d = {"name": "cap_cyl", "gravity": [0, 0, -G], "bodies": [_free("s"), _free("c")],
         "contact": {"shapes": shapes, "defaults": LAW}}
    return dynamica.load(write_model(tmp_path_factory.mktemp("capcyl"), d)), NumericReference(load_model(d))


@pytest.mark.parametrize("where", ["side", "end"])
def test_capsule_cylinder_agrees_with_the_reference(capsule_cylinder, where):
    """The capsule (along x) crossing the upright cylinder's side, and dipping an end into its side:
    q'' as the reference's (runtime/reference/forces.py), 1e-12 relative, the named point in contact."""
    model, ref = capsule_cylinder
    q = np.zeros(12)
    q[:6] = [0.0, 0.13, 0.05, 0.3, 0.0, 0.0] if where == "side" else [0.25, 0.0, 0.05, 0.0, 0.0, 0.2]
    qd = np.random.default_rng(4).normal(0, 0.7, 12)
    d = model.outputs(0.0, q, qd)["contact_rod_cyl.distance"]
    assert (d[2] < -1e-3 < min(d[:2])) if where == "side" else (d[:2].min() < -1e-3 < d[2]), d
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))
