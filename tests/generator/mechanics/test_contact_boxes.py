"""Box against box (docs/contact.md): each box's corners against the other box, as a box and a
sphere of radius 0 (vertex-face contacts). Oracles: the numeric reference (runtime/reference/forces.py,
numpy, its own point-box routine) for the forces, 1e-12; MuJoCo's box-box collision
(`data.contact.dist`) for the depth of a corner dipped into a face, 1e-9 (exact for a vertex-face
contact); the closed form v0^2 / (2 mu g) of a box sliding to rest on another box, 1 %."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dynamica
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import write_model
from helpers import mujoco_scene

G = 9.81


def _free(name):
    q = [f"{name}_{c}" for c in ("x", "y", "z", "a", "b", "c")]
    return {"name": name, "parent": "ground", "joint": {"type": "free", "q": q}, "mass": 1.0,
            "com": [0, 0, 0], "inertia": [0.01, 0.02, 0.03]}


@pytest.fixture(scope="module")
def boxes(tmp_path_factory):
    shapes = {"lo": {"type": "box", "body": "p", "size": [0.4, 0.3, 0.2], "rpy": [0.1, 0.0, 0.2]},
              "hi": {"type": "box", "body": "k", "size": [0.2, 0.25, 0.1], "at": [0.01, 0.0, 0.02]}}
    d = {"name": "boxes", "gravity": [0, 0, -G], "bodies": [_free("p"), _free("k")],
         "contact": {"shapes": shapes, "defaults": {"stiffness": 1e4, "damping": 0.3, "friction": 0.6,
                                                    "stiction_velocity": 0.01}}}
    return dynamica.load(write_model(tmp_path_factory.mktemp("boxes"), d)), NumericReference(load_model(d))


def test_box_box_agrees_with_the_reference(boxes):
    """The second box turned with a corner of each box inside the other (a pose found by a random
    search), sliding: q'' as the reference's, 1e-12 relative."""
    model, ref = boxes
    q = np.zeros(12)
    q[6:12] = [-0.1, -0.21, -0.03, 0.9, -0.8, -1.3]
    qd = np.random.default_rng(9).normal(0, 0.7, 12)
    d = model.outputs(0.0, q, qd)["contact_lo_hi.distance"]
    assert d[:8].min() < -3e-3 and d[8:].min() < -3e-3 and np.sum(d > 1e-3) >= 12, d
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))


def test_a_corner_in_a_face_has_mujocos_depth(tmp_path):
    """A box turned at random and lowered until its lowest corner is 1 to 5 mm into the top face of
    a box fixed in the world (away from the face's edges): MuJoCo's deepest contact and ours agree,
    1e-9 m, at 10 poses."""
    mujoco = pytest.importorskip("mujoco")
    from oracles.mujoco_mjcf import _rx, _ry, _rz
    model, pair, oracle, m, data = mujoco_scene(
        tmp_path, '<geom name="base" type="box" size="0.5 0.4 0.1"/>',
        '<geom name="top" type="box" size="0.1 0.07 0.05"/>', "boxes.xml")
    rng = np.random.default_rng(4)
    half = np.array([0.1, 0.07, 0.05])
    corners = np.array([[sx, sy, sz] for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]) * half
    for _ in range(10):
        abc = rng.uniform(-1.2, 1.2, 3)
        R = _rx(abc[0]) @ _ry(abc[1]) @ _rz(abc[2])
        low = corners @ R.T
        depth = rng.uniform(1e-3, 5e-3)
        q = np.concatenate([rng.uniform(-0.2, 0.2, 2), [0.1 - depth - low[:, 2].min()], abc])
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        theirs = min(data.contact[i].dist for i in range(data.ncon))
        ours = model.outputs(0.0, q, np.zeros(6))[f"{pair}.distance"]
        assert abs(ours.min() + depth) < 1e-12 and abs(theirs - ours.min()) < 1e-9, (theirs, ours.min(), depth)


def test_a_box_slides_to_rest_on_a_box_after_v0_squared_over_2_mu_g(tmp_path):
    """A box given v0 = 1.5 m/s on a longer box fixed in the ground, mu = 0.4: it stops after
    v0^2 / (2 mu g) = 0.2867 m (1 %) and then carries m g on its four lower corners (1e-3: 0.6 s
    after stopping it still rocks a little on its compliant corners) sunk by (m g / (4 k))^(1/e)."""
    sink = (G / (4 * 1e6)) ** (1 / 1.5)
    d = {"name": "stack", "gravity": [0, 0, -G],
         "bodies": [{"name": "b", "parent": "ground",
                     "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"}, {"rotate": "y", "q": "th"}],
                     "mass": 1.0, "com": [0, 0, 0], "inertia": [0.0042, 0.0042, 0.0067]}],
         "initial": {"z": 0.05 - sink, "der(x)": 1.5},
         "contact": {"shapes": {"base": {"type": "box", "body": "ground", "size": [2.0, 1.0, 0.2],
                                         "at": [0.5, 0, -0.1]},
                                "s": {"type": "box", "body": "b", "size": [0.2, 0.2, 0.1]}},
                     "defaults": {"stiffness": 1e6, "damping": 1.0, "friction": 0.4, "stiction_velocity": 1e-3}}}
    r = dynamica.simulate(dynamica.load(write_model(tmp_path, d)), 1.0, output_step=0.01, rtol=1e-8, atol=1e-10)
    x_stop = 1.5 ** 2 / (2 * 0.4 * G)
    assert abs(r.q[-1, 0] - x_stop) < 0.01 * x_stop and abs(r.qd[-1, 0]) < 1e-3
    Fn = r.outputs["contact_base_s.normal_force"][-1]
    assert abs(Fn.sum() - G) < 1e-3 * G and np.count_nonzero(Fn[:8]) == 4 and not np.any(Fn[8:])
    assert math.isclose(r.outputs["contact_base_s.penetration"][-1].max(), sink, rel_tol=1e-2)


@pytest.fixture(scope="module")
def box_capsule(tmp_path_factory):
    shapes = {"rod": {"type": "capsule", "body": "p", "radius": 0.05, "length": 0.4, "rpy": [0.3, 1.2, 0]},
              "blk": {"type": "box", "body": "k", "size": [0.3, 0.2, 0.15], "at": [0.01, 0.02, 0.0],
                      "rpy": [0.1, -0.2, 0.3]}}
    d = {"name": "boxcap", "gravity": [0, 0, -G], "bodies": [_free("p"), _free("k")],
         "contact": {"shapes": shapes, "pairs": [{"a": "rod", "b": "blk"}],          # given as capsule, box: swapped
                     "defaults": {"stiffness": 1e4, "damping": 0.3, "friction": 0.6, "stiction_velocity": 0.01}}}
    return dynamica.load(write_model(tmp_path_factory.mktemp("boxcap"), d)), NumericReference(load_model(d))


@pytest.mark.parametrize("where", ["end in a face", "corner in the side"])
def test_box_capsule_agrees_with_the_reference(box_capsule, where):
    """An end sphere of the capsule sunk into a face of the box, and a corner of the box pushed into
    the capsule's side: q'' as the reference's, 1e-12 relative, the pair in contact."""
    model, ref = box_capsule
    q = np.zeros(12)
    q[6:12] = [0.0, 0.0, 0.0, 0.2, -0.1, 0.4]                                       # the box
    # (poses found by a random search: only the named points in contact, by 5 mm or more)
    q[0:6] = [-0.04, 0.27, 0.0, -0.2, 0.4, 1.5] if where == "end in a face" else [0.23, 0.01, -0.09, 1.5, -0.6, -1.0]
    qd = np.random.default_rng(2).normal(0, 0.7, 12)
    assert model.spec.forces[0]["a"].kind == "box"
    pen = model.outputs(0.0, q, qd)["contact_rod_blk.penetration"]
    ends, corners = pen[:2], pen[2:10]
    assert (ends.max() > 5e-3 and corners.max() == 0) if where == "end in a face" else \
        (corners.max() > 5e-3 and ends.max() == 0), pen
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))


def test_a_capsule_end_in_a_face_has_mujocos_depth(tmp_path):
    """A capsule turned at random (at least 0.3 rad from lying flat) and lowered until its lowest end
    is 1 to 5 mm into the top face of a box fixed in the world: MuJoCo's deepest contact and ours
    agree, 1e-9 m, at 10 poses."""
    mujoco = pytest.importorskip("mujoco")
    from oracles.mujoco_mjcf import _rx, _ry, _rz
    model, pair, oracle, m, data = mujoco_scene(
        tmp_path, '<geom name="base" type="box" size="0.5 0.4 0.1"/>',
        '<geom name="rod" type="capsule" size="0.04 0.12"/>', "boxcap.xml")
    rng = np.random.default_rng(6)
    checked = 0
    while checked < 10:
        abc = rng.uniform(-1.2, 1.2, 3)
        u = (_rx(abc[0]) @ _ry(abc[1]) @ _rz(abc[2]))[:, 2]
        if abs(u[2]) < math.sin(0.3):
            continue
        depth = rng.uniform(1e-3, 5e-3)
        q = np.concatenate([rng.uniform(-0.2, 0.2, 2), [0.1 - depth + 0.04 + 0.12 * abs(u[2])], abc])
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        theirs = min(data.contact[i].dist for i in range(data.ncon))
        ours = model.outputs(0.0, q, np.zeros(6))[f"{pair}.distance"]
        assert abs(ours.min() + depth) < 1e-12 and abs(theirs - ours.min()) < 1e-9, (theirs, ours.min(), depth)
        checked += 1


def test_a_capsule_rolls_down_a_box_at_the_rolling_acceleration(tmp_path):
    """A capsule lying across the top of a long box fixed in the ground (gravity tilted by theta = 15
    deg, so the top is an incline), rolling on its two end spheres: with I = m r^2 / 2 about its
    axis x'' = g sin(theta) / (1 + I / (m r^2)) = (2/3) g sin(theta) within 1 % (the rolling radius
    is r less the penetration, 2e-3 r)."""
    theta, r, m = math.radians(15), 0.05, 1.0
    ia, it = m * r ** 2 / 2, 0.01
    sink = (G * math.cos(theta) / (2 * 1e6)) ** (1 / 1.5)
    d = {"name": "capsule_on_box", "gravity": [G * math.sin(theta), 0, -G * math.cos(theta)],
         "bodies": [{"name": "b", "parent": "ground",
                     "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"}, {"rotate": "y", "q": "th"}],
                     "mass": m, "com": [0, 0, 0], "inertia": [it, ia, it]}],
         "initial": {"z": r - sink},
         "contact": {"shapes": {"base": {"type": "box", "body": "ground", "size": [3.0, 1.0, 0.2],
                                         "at": [1.0, 0, -0.1]},
                                "s": {"type": "capsule", "body": "b", "radius": r, "length": 0.3,
                                      "rpy": [math.pi / 2, 0, 0]}},
                     "defaults": {"stiffness": 1e6, "damping": 2.0, "friction": 0.5, "stiction_velocity": 1e-3}}}
    res = dynamica.simulate(dynamica.load(write_model(tmp_path, d)), 0.8, output_step=0.01, rtol=1e-9, atol=1e-11)
    sel = res.t > 0.2
    a = np.polyfit(res.t[sel], res.qd[sel, 0], 1)[0]
    expected = 2 / 3 * G * math.sin(theta)
    assert abs(a - expected) < 0.01 * expected
    Fn = res.outputs["contact_base_s.normal_force"][-1]
    assert np.count_nonzero(Fn[:2]) == 2 and not np.any(Fn[2:])                 # on its two ends only


def test_two_crossing_edges_have_mujocos_contact(tmp_path):
    """Box-box edge-edge: a box turned at random near an edge of a box fixed in the world, at poses
    where no corner is inside the other box and MuJoCo reports one contact: our edge-edge point's
    distance is MuJoCo's `dist` (1e-9 m; the separating-axis depth is the same closed form), the
    total force on the box (frictionless: F_n n alone) lies along MuJoCo's normal (1e-9), and the
    numeric reference's point (runtime/reference/forces.py, numpy; its forces agree with the
    generated code in `test_box_box_agrees_with_the_reference`) is MuJoCo's `pos` (1e-9 m). At least
    20 such poses among 400 (70 seen)."""
    mujoco = pytest.importorskip("mujoco")
    from dynamica.runtime.reference.forces import box_box_edges

    model, pair, oracle, m, data = mujoco_scene(
        tmp_path, '<geom name="base" type="box" size="0.5 0.4 0.1" friction="0 0 0"/>',
        '<geom name="top" type="box" size="0.1 0.07 0.05" friction="0 0 0"/>', "edges.xml")
    rng = np.random.default_rng(7)
    seen = 0
    for _ in range(400):
        abc = rng.uniform(-np.pi, np.pi, 3)
        q = np.concatenate([[0.5 + rng.uniform(-0.02, 0.12), rng.uniform(-0.3, 0.3), 0.1 + rng.uniform(0.0, 0.1)],
                            abc])
        out = model.outputs(0.0, q, np.zeros(6))
        d = out[f"{pair}.distance"]
        if not (d[16] < -1e-4 and np.all(d[:16] > 0)):
            continue
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        if data.ncon != 1:
            continue
        c = data.contact[0]
        seen += 1
        assert abs(c.dist - d[16]) < 1e-9, (q, c.dist, d[16])
        F = out[f"{pair}.force"]
        assert abs(abs(F @ c.frame[:3]) / np.linalg.norm(F) - 1) < 1e-9
        x, n, dd = box_box_edges(np.zeros(3), np.eye(3), [0.5, 0.4, 0.1], data.xpos[1], data.xmat[1].reshape(3, 3),
                                  [0.1, 0.07, 0.05])
        assert np.max(np.abs(x - c.pos)) < 1e-9 and abs(dd - c.dist) < 1e-9
    assert seen >= 20, seen


def test_a_capsule_across_an_edge_has_mujocos_depth(tmp_path):
    """A capsule turned at random across an edge of a box fixed in the world, both its ends and the
    box's corners out of contact, its segment outside the box (a penetration below its radius): our
    edge point's distance is MuJoCo's `dist` (1e-9 m; both the separating-axis depth along e_i x u,
    e_i the edge, u the capsule's axis), at least 20 such poses among 300. (With the segment itself inside the box
    MuJoCo's capsule-box takes other features and the two differ by up to 1 cm.)"""
    mujoco = pytest.importorskip("mujoco")
    model, pair, oracle, m, data = mujoco_scene(
        tmp_path, '<geom name="base" type="box" size="0.5 0.4 0.1"/>',
        '<geom name="rod" type="capsule" size="0.04 0.2"/>', "capedge.xml")
    rng = np.random.default_rng(3)
    seen = 0
    for _ in range(300):
        abc = rng.uniform(-np.pi, np.pi, 3)
        q = np.concatenate([[0.5 + rng.uniform(-0.05, 0.1), rng.uniform(-0.3, 0.3), 0.1 + rng.uniform(-0.02, 0.08)],
                            abc])
        d = model.outputs(0.0, q, np.zeros(6))[f"{pair}.distance"]
        if not (-0.04 < d[10] < -1e-4 and np.all(d[:10] > 0)):
            continue
        data.qpos[:], _, _ = oracle.state(q, np.zeros(6))
        mujoco.mj_forward(m, data)
        seen += 1
        assert data.ncon >= 1 and abs(min(data.contact[i].dist for i in range(data.ncon)) - d[10]) < 1e-9, q
    assert seen >= 20, seen
