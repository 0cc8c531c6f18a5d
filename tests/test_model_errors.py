"""Bad input: every malformed model raises ModelError naming file, entry and expectation."""

import copy

import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.model import load_model
from dynamica.generator.topology import build_topology

from conftest import write_model

GOOD = {
    "name": "pend2",
    "parameters": {"m": 1.0, "l": {"value": 1.0, "unit": "m", "description": "length"}, "g": 9.81,
                   "rc": [0.0, 0.0, -0.5]},
    "gravity": [0, 0, "-g"],
    "bodies": [
        {"name": "b", "parent": "a", "joint": [{"translate": [0, 0, "-l"]}, {"rotate": "y", "q": "q2"}],
         "mass": "m", "com": "rc", "inertia": [0.1, 0.1, 0.01]},
        {"name": "a", "parent": "ground", "joint": {"type": "revolute", "axis": "x", "q": "q1"},
         "mass": "m", "com": [0, 0, "-l/2"], "inertia": [0.1, 0.1, 0.01, 0, 0, 0]},
    ],
    "initial": {"q1": 0.1, "der(q2)": 0.2},
    "forces": [{"type": "joint_spring_damper", "coordinate": "q1", "stiffness": 2.0}],
}


def mutate(fn):
    d = copy.deepcopy(GOOD)
    fn(d)
    return d


CASES = [
    ("missing name", lambda d: d.pop("name"), "<top>", "missing required key `name`"),
    ("unknown top key", lambda d: d.update(gravty=[0, 0, 1]), "gravty", "did you mean `gravity`?"),
    ("unknown body key", lambda d: d["bodies"][0].update(mas=1), "bodies[0].mas", "did you mean `mass`?"),
    ("missing mass", lambda d: d["bodies"][1].pop("mass"), "bodies[1]", "missing required key `mass`"),
    ("bad axis", lambda d: d["bodies"][0]["joint"][1].update(rotate="w"), "bodies[0].joint[1].rotate",
     "expected an axis x, y, z"),
    ("zero axis", lambda d: d["bodies"][0]["joint"][1].update(rotate=[0, 0, 0]), "bodies[0].joint[1].rotate",
     "zero axis"),
    ("duplicate body", lambda d: d["bodies"][1].update(name="b"), "bodies[1].name", "duplicate body name `b`"),
    ("duplicate coordinate", lambda d: d["bodies"][0]["joint"][1].update(q="q1"), "q1",
     "coordinate `q1` is already defined"),
    ("unknown parent", lambda d: d["bodies"][0].update(parent="aa"), "bodies[0].parent",
     "unknown parent body `aa` (did you mean `a`?)"),
    ("cycle", lambda d: d["bodies"][1].update(parent="b"), "bodies", "form a cycle"),
    ("unknown symbol", lambda d: d["bodies"][1].update(mass="mass1"), "bodies[1].mass", "unknown name `mass1`"),
    ("code injection", lambda d: d["bodies"][1].update(mass="__import__('os')"), "bodies[1].mass",
     "call of unknown function `__import__`"),
    ("q in mass", lambda d: d["bodies"][1].update(mass="q1*2"), "bodies[1].mass", "allowed only in forces"),
    ("both q and by", lambda d: d["bodies"][0]["joint"][1].update(by="t"), "bodies[0].joint[1]",
     "exactly one of `q` or `by`"),
    ("rotate without q", lambda d: d["bodies"][0]["joint"][1].pop("q"), "bodies[0].joint[1]", "needs `q:`"),
    ("bad shorthand", lambda d: d["bodies"][1]["joint"].update(type="hinge"), "bodies[1].joint.type",
     "unknown joint type 'hinge'"),
    ("ground as name", lambda d: d["bodies"][1].update(name="ground"), "bodies[1].name", "reserved name"),
    ("bad inertia", lambda d: d["bodies"][1].update(inertia=[1, 2]), "bodies[1].inertia", "expected [Ixx"),
    ("unknown force type", lambda d: d["forces"][0].update(type="spring"), "forces[0].type",
     "unknown force type 'spring'"),
    ("force on unknown coord", lambda d: d["forces"][0].update(coordinate="q3"), "forces[0].coordinate",
     "unknown coordinate 'q3'"),
    ("unknown initial", lambda d: d["initial"].update(q9=1.0), "initial.q9", "unknown coordinate `q9`"),
    ("vector length", lambda d: d["bodies"][1].update(com=[0, 0]), "bodies[1].com", "of 3 numbers"),
    ("bad integrator", lambda d: d.update(simulate={"integrator": "euler"}), "simulate.integrator",
     "unknown integrator 'euler'"),
    ("param is coordinate", lambda d: d["parameters"].update(q1=1.0), "parameters",
     "both a parameter and a joint coordinate"),
]


@pytest.mark.parametrize("label, fn, path, message", CASES, ids=[c[0] for c in CASES])
def test_malformed_model(tmp_path, label, fn, path, message):
    f = write_model(tmp_path, mutate(fn))
    with pytest.raises(ModelError) as info:
        build_topology(load_model(f))          # file-level, then tree-level checks
    text = str(info.value)
    assert str(f) in text
    assert message in text, text
    assert any(path in p.path or path in p.message for p in info.value.problems), text


def test_every_problem_is_listed(tmp_path):
    def two(d):
        d["bodies"][0].update(mas=1)
        d["bodies"][1].update(mass="mass1")
    f = write_model(tmp_path, mutate(two))
    with pytest.raises(ModelError) as info:
        load_model(f)
    assert len(info.value.problems) == 2


def test_good_model_loads(tmp_path):
    spec = load_model(write_model(tmp_path, GOOD))
    assert spec.coordinates == ("q2", "q1")      # file order; the topology renumbers
    assert spec.bodies[0].com == ("rc[0]", "rc[1]", "rc[2]")


def test_dependent_coordinates_rejected(tmp_path):
    d = mutate(lambda d: d["bodies"][0]["joint"].append({"rotate": "y", "q": "q3"}))
    with pytest.raises(ModelError, match="not independent"):
        dynamica.load(write_model(tmp_path, d), cache=tmp_path / "cache")


def test_singular_mass_matrix_names_coordinates(tmp_path):
    d = mutate(lambda d: d["bodies"][0].update(mass=0, inertia=[0, 0, 0], com=[0, 0, 0]))
    with pytest.raises(ModelError, match="singular.*`q2`"):
        dynamica.load(write_model(tmp_path, d), cache=tmp_path / "cache")


def test_nothing_written_on_failure(tmp_path):
    cache = tmp_path / "cache"
    f = write_model(tmp_path, mutate(lambda d: d["bodies"][1].update(mass="nope")))
    with pytest.raises(ModelError):
        dynamica.load(f, cache=cache)
    assert not cache.exists() or not any(cache.iterdir())


def test_negative_mass_warns(tmp_path):
    from dynamica.generator.model import DynamicaWarning
    f = write_model(tmp_path, mutate(lambda d: d["bodies"][1].update(mass=-1.0)))
    with pytest.warns(DynamicaWarning, match="body `a` has negative mass"):
        load_model(f)


def test_massless_frame_may_omit_com_and_inertia(tmp_path):
    d = mutate(lambda d: d["bodies"].append({"name": "frame", "parent": "b", "mass": 0,
                                             "joint": [{"translate": [0, 0, "-l"]}]}))
    spec = load_model(write_model(tmp_path, d))
    frame = next(b for b in spec.bodies if b.name == "frame")
    assert frame.com == (0, 0, 0) and frame.inertia == (0,) * 6
    d = mutate(lambda d: d["bodies"].append({"name": "frame", "parent": "b", "mass": 1.0, "joint": []}))
    with pytest.raises(ModelError, match="missing required key `com`"):
        load_model(write_model(tmp_path, d, "m2.yaml"))
