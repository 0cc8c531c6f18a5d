"""The `contact` section and the `contact` force type (docs/contact.md): the loader's errors name
the entry; the generated forces of every pair type agree with the numeric reference
(runtime/reference/forces.py, written apart with numpy; capsule-capsule by another algorithm)
to 1e-12 relative, in states where every pair penetrates and slides.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import write_model
from helpers import CONTACT_PAIRS, CONTACT_SHAPES


def _free(name, mass=1.0, inertia=(0.01, 0.02, 0.03)):
    q = [f"{name}_{c}" for c in ("x", "y", "z", "a", "b", "c")]
    return {"name": name, "parent": "ground", "joint": {"type": "free", "q": q}, "mass": mass,
            "com": [0, 0, 0], "inertia": list(inertia)}


def _model(shapes, pairs=None, bodies=("p", "r", "k"), defaults=None):
    contact = {"shapes": shapes, "defaults": defaults or {}}
    if pairs is not None:
        contact["pairs"] = pairs
    return {"name": "m", "gravity": [0, 0, -9.81], "bodies": [_free(b) for b in bodies], "contact": contact}


def _problems(d):
    with pytest.raises(ModelError) as info:
        load_model(d)
    return [(p.path, p.message) for p in info.value.problems]


def test_errors_name_the_shape_or_pair():
    ball = {"type": "sphere", "body": "p", "radius": 0.1}
    cases = [
        ({"s": {"type": "sphere", "body": "p", "radius": -0.1}}, None, "contact.shapes.s.radius", "positive"),
        ({"s": {"type": "box", "body": "p", "size": [0.1, -1, 0.1]}}, None, "contact.shapes.s.size", "positive"),
        ({"s": {"type": "capsule", "body": "p", "radius": 0.1, "length": -1}}, None, "contact.shapes.s.length",
         ">= 0"),
        ({"s": {"type": "sphere", "body": "nobody", "radius": 0.1}}, None, "contact.shapes.s.body", "unknown body"),
        ({"s": {"type": "cone", "body": "p"}}, None, "contact.shapes.s.type", "unknown shape type"),
        ({"s": ball, "u": {**ball, "radius": 0.2}}, [{"a": "s", "b": "u"}], "contact.pairs[0]",
         "both on `p`"),
        ({"s": ball}, [{"a": "s", "b": "floor"}], "contact.pairs[0].b", "unknown shape"),
        ({"s": {"type": "cylinder", "body": "p", "radius": 0.1, "length": 0.2},
          "u": {"type": "box", "body": "r", "size": [1, 1, 1]}}, [{"a": "s", "b": "u"}],
         "contact.pairs[0]", "no contact between"),
        ({"s": ball, "f": {"type": "plane", "body": "ground"}}, [{"a": "f", "b": "s", "friction": -0.5}],
         "contact.pairs[0].friction", "nonnegative"),
        ({"s": {**ball, "at": [0, 0]}}, None, "contact.shapes.s.at", "3 numbers"),
    ]
    for shapes, pairs, path, words in cases:
        got = _problems(_model(shapes, pairs))
        assert any(p == path and words in m for p, m in got), (path, got)


def test_pairs_by_default_every_pair_that_can_touch_but_not_parent_and_child():
    shapes = {"f": {"type": "plane", "body": "ground"}, "a": {"type": "sphere", "body": "p", "radius": 0.1},
              "b": {"type": "capsule", "body": "c", "radius": 0.1, "length": 0.2},
              "c": {"type": "box", "body": "r", "size": [1, 1, 1]}}
    d = _model(shapes, bodies=("p", "r"))
    d["bodies"].append({**_free("c"), "parent": "p"})
    spec = load_model(d)
    pairs = {(f["a"].name, f["b"].name) for f in spec.forces}
    # a-b: parent and child; box before sphere and capsule
    assert pairs == {("f", "a"), ("f", "b"), ("f", "c"), ("c", "a"), ("c", "b")}


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    d = _model(copy.deepcopy(CONTACT_SHAPES), copy.deepcopy(CONTACT_PAIRS),
               defaults={"stiffness": 1e4, "damping": 0.3, "friction": 0.6, "stiction_velocity": 0.01})
    d["outputs"] = {"forces": True}
    spec = load_model(d)
    return dynamica.load(write_model(tmp_path_factory.mktemp("scene"), d)), NumericReference(spec)


def test_every_pair_type_agrees_with_the_reference(scene):
    model, ref = scene
    # a state where every pair penetrates by 5 cm or more (checked below); random velocities make
    # every contact slide
    q = np.array([0.0, 0.0, 0.05, 0.0, 0.0, 0.0, -0.162, -0.043, -0.083, 0.142, -0.427, 0.458,
                  -0.038, 0.026, -0.199, -0.415, 0.204, -0.146])        # (found by a random search)
    rng = np.random.default_rng(3)
    qd = rng.normal(0, 0.7, 18)
    out = model.outputs(0.0, q, qd)
    pen = {k: v for k, v in out.items() if k.endswith(".penetration")}
    assert all(np.max(v) > 0.05 for v in pen.values()), pen
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))


@pytest.fixture(scope="module")
def box_ball(tmp_path_factory):
    shapes = {"blk": {"type": "box", "body": "k", "size": [0.4, 0.3, 0.2], "at": [0.01, 0.02, 0.03],
                      "rpy": [0.3, -0.2, 0.5]},
              "ball": {"type": "sphere", "body": "p", "radius": 0.1}}
    d = _model(shapes, [{"a": "ball", "b": "blk"}], bodies=("p", "k"),       # given as sphere, box: swapped
               defaults={"stiffness": 1e4, "damping": 0.3, "friction": 0.6, "stiction_velocity": 0.01})
    spec = load_model(d)
    return dynamica.load(write_model(tmp_path_factory.mktemp("boxball"), d)), NumericReference(spec)


@pytest.mark.parametrize("where", [(0.25, 0.0, 0.0), (0.24, 0.2, 0.05), (0.25, 0.2, 0.15), (0.05, 0.02, 0.01),
                                   (-0.02, 0.1, -0.04)])
def test_box_sphere_agrees_with_the_reference(box_ball, where):
    """The sphere's centre near a face, an edge, a corner (outside the box) and inside it (the
    face of least depth): q'' as the reference's, 1e-12 relative, every case in contact."""
    model, ref = box_ball
    q = np.zeros(12)
    q[6:12] = [0.0, 0.0, 0.0, 0.1, 0.2, -0.3]                 # the box's body
    q[0:3] = where                                            # the sphere's centre, ground frame
    qd = np.random.default_rng(5).normal(0, 0.7, 12)
    assert model.spec.forces[0]["a"].kind == "box"
    assert float(model.outputs(0.0, q, qd)["contact_ball_blk.penetration"]) > 1e-3
    a, b = model.qdd(q, qd), ref.qdd(q, qd)
    assert np.max(np.abs(a - b)) < 1e-12 * np.max(np.abs(b))
