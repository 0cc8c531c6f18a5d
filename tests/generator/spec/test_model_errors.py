"""Bad input: every malformed model raises ModelError naming file, entry and expectation."""

import copy

import numpy as np
import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.mechanics.topology import build_topology
from dynamica.generator.spec.model import DynamicaWarning, load_model

from conftest import write_model
from helpers import within_bound

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
    from dynamica.generator.spec.model import DynamicaWarning
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


# ---------------------------------------------------------------- hostile or careless files
def _error(path):
    """The ModelError of loading `path` (the test fails if it loads or raises anything else)."""
    with pytest.raises(ModelError) as info:
        load_model(path)
    assert str(path) in str(info.value)
    return info.value


def _text_model(tmp_path, text: str, name="model.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("raw, message", [
    ("name: caf\u00e9\nbodies: []\n".encode("latin-1"), "not a UTF-8 text file (byte 0xe9 at line 1)"),
    ("name: a\nbodies: []\n".encode("utf-16"), "not a UTF-8 text file (byte 0xff at line 1)"),
    (b"name: a\n\x00\x01\x02\n", "not a text file (a NUL character at line 2)"),
    (b"name: a\nbodies: [\x01]\n", "not valid YAML at line 2: the character #x0001 is not allowed"),
    (b"", "found an empty document"),
    (b"# only a comment\n", "found an empty document"),
    (b"- a\n- b\n", "expected a mapping (name:, bodies:, ...) at the top level, found a list"),
])
def test_unreadable_file_names_it(tmp_path, raw, message):
    path = tmp_path / "m.yaml"
    path.write_bytes(raw)
    assert message in str(_error(path))


def test_directory_is_not_a_model(tmp_path):
    assert "is a directory" in str(_error(tmp_path))


def test_yaml_error_names_file_and_line(tmp_path):
    path = _text_model(tmp_path, "name: a\nbodies:\n  - {name: b, parent: ground\n  - x: 1\n")
    err = _error(path)
    text = str(err)
    assert "<unicode string>" not in text
    assert "not valid YAML at line 4" in text, text
    assert "`- x: 1`" in text                       # the offending line, quoted


def test_constructor_error_is_a_model_error(tmp_path):
    """PyYAML's constructors raise ValueError (not a YAMLError) for `!!int abc`."""
    assert "not valid YAML" in str(_error(_text_model(tmp_path, "name: a\nparameters: {m: !!int abc}\n")))


def test_numbers_follow_yaml_1_2(tmp_path):
    """`1e-8` is a number (PyYAML's YAML 1.1 resolver reads it as a string); `012` is twelve."""
    text = write_model(tmp_path, GOOD).read_text()
    text = text.replace("parameters:\n", "parameters:\n  a: 1e-8\n  b: 1E5\n  c: .5\n  d: -2.5e+3\n  e: 012\n"
                                         "  f: 0x1F\n  h: 0o17\n", 1)
    spec = load_model(_text_model(tmp_path, text, "m12.yaml"))
    values = {p.name: p.value for p in spec.parameters}
    assert values | {"a": 1e-8, "b": 1e5, "c": 0.5, "d": -2500.0, "e": 12.0, "f": 31.0, "h": 15.0} == values
    assert all(type(v) is float for v in values.values() if not isinstance(v, tuple))


@pytest.mark.parametrize("value, path", [(".inf", "parameters.k"), ("-.Inf", "parameters.k"), (".nan", "parameters.k"),
                                         ("1:30", "parameters.k"), ("1_000", "parameters.k")])
def test_special_and_yaml_1_1_numbers_rejected(tmp_path, value, path):
    text = write_model(tmp_path, GOOD).read_text().replace("parameters:\n", f"parameters:\n  k: {value}\n", 1)
    err = _error(_text_model(tmp_path, text, "m2.yaml"))
    assert [p.path for p in err.problems] == [path] and "expected a finite number" in str(err), str(err)


def test_infinite_yaml_number_in_an_expression_slot(tmp_path):
    text = write_model(tmp_path, GOOD).read_text().replace("mass: m\n", "mass: .inf\n", 1)
    err = _error(_text_model(tmp_path, text, "m2.yaml"))
    assert [p.path for p in err.problems] == ["bodies[0].mass"] and "finite" in str(err), str(err)


@pytest.mark.parametrize("text, message", [
    ("10**400", "too large"),
    ("1e400", "expected a finite number, found inf"),        # YAML 1.2: 1e400 is the float inf
    ("exp(1000)", "too large"),
    ("sqrt(-1)", "not a finite real number"),
    ("1/(m-1)", "division by zero in `1/(m-1)` (with the parameters at their default values)"),
    ("log(m-1)", "not a finite real number (with the parameters at their default values)"),
])
def test_non_finite_constant_named_at_its_entry(tmp_path, text, message):
    """The constant, or the value at the parameters' defaults (m = 1), is not a finite real
    number: an error at the entry that produced it, not at generation."""
    err = _error(write_model(tmp_path, mutate(lambda d: d["bodies"][1]["com"].__setitem__(2, text))))
    assert [p.path for p in err.problems] == ["bodies[1].com[2]"] and message in str(err), str(err)


@pytest.mark.parametrize("text", ["9**9**9**9", "10**10**10", "(2*m)**10**10", "2**-10**8", "-" * 5000 + "1"])
def test_huge_power_is_a_quick_error(tmp_path, text):
    """Under 1 s (a few ms): the loader is imported first (the first model of a process imports it and
    sympy: 0.6-0.9 s, 1.3 s on a loaded machine, which failed this bound when the test ran first)."""
    load_model(write_model(tmp_path, GOOD, "good.yaml"))
    path = write_model(tmp_path, mutate(lambda d: d["bodies"][1].update(mass=text)))
    err = within_bound(lambda: _error(path), 1.0)
    assert [p.path for p in err.problems] == ["bodies[1].mass"], str(err)


def test_huge_inertia_loads_without_linalg_error(tmp_path):
    """Finite but huge entries: the physics checks scale the tensor (no overflow, no LinAlgError)."""
    d = mutate(lambda d: d["bodies"][1].update(inertia=[1e308, 1e308, -1e308, 1.5e308, 0, 0]))
    with pytest.warns(DynamicaWarning, match="inertia of body `a` is indefinite"):
        load_model(write_model(tmp_path, d))


@pytest.mark.parametrize("label, fn, path, message", [
    ("outputs a string", lambda d: d.update(outputs="tip"), "outputs", "expected a mapping, found the string 'tip'"),
    ("points a list", lambda d: d.update(outputs={"points": ["tip"]}), "outputs.points", "expected a mapping name"),
    ("expressions a string", lambda d: d.update(outputs={"expressions": "m"}), "outputs.expressions",
     "expected a mapping name -> expression"),
    ("angular a mapping", lambda d: d.update(outputs={"angular": [{"a": 1}]}), "outputs.angular[0]", "unknown body"),
    ("body name null", lambda d: d["bodies"][0].update(name=None), "bodies[0].name", "found nothing (null)"),
    ("body name a list", lambda d: d["bodies"][1].update(name=["a"]), "bodies[1].name", "found a list"),
    ("parent a mapping", lambda d: d["bodies"][0].update(parent={"a": 1}), "bodies[0].parent", "found a mapping"),
    ("force type a list", lambda d: d["forces"][0].update(type=["x"]), "forces[0].type", "unknown force type"),
    ("force body a list", lambda d: d["forces"].append({"type": "body_force", "body": ["a"]}), "forces[1].body",
     "unknown body"),
    ("joint type a mapping", lambda d: d["bodies"][1]["joint"].update(type={"a": 1}), "bodies[1].joint.type",
     "unknown joint type"),
    ("unit a list", lambda d: d["parameters"]["l"].update(unit=["m"]), "parameters.l.unit", "expected a string"),
    ("form a mapping", lambda d: d.update(simulate={"form": {}}), "simulate.form", "unknown equation form"),
    ("forces a mapping", lambda d: d.update(forces={"a": 1}), "forces", "expected a list of forces"),
    ("parameters a list", lambda d: d.update(parameters=[1]), "parameters", "expected a mapping name -> value"),
    ("huge integer", lambda d: d["parameters"].update(m=10**400), "parameters.m", "an integer of 401 digits"),
])
def test_wrong_types_named(tmp_path, label, fn, path, message):
    err = _error(write_model(tmp_path, mutate(fn)))
    assert path in [p.path for p in err.problems] and message in str(err), str(err)


def test_internal_error_is_a_model_error_naming_the_entry(tmp_path, monkeypatch):
    """The loader's last line of defence: a bug while reading an entry is still a ModelError
    naming the file and that entry (and asking for a report)."""
    from dynamica.generator.spec import loader

    def broken(self, *args):
        raise KeyError("boom")
    monkeypatch.setattr(loader._Loader, "inertia", broken)
    err = _error(write_model(tmp_path, GOOD))
    assert [p.path for p in err.problems] == ["bodies[0]"] and "internal error" in str(err), str(err)


# ---------------------------------------------------------------- joint shorthands drive with `by:`
def _driven(joint):
    """GOOD with body `a` on `joint` (q1, its coordinate, is then unknown: no initial or forces)."""
    def fn(d):
        d["bodies"][1].update(joint=joint)
        del d["initial"], d["forces"]
    return mutate(fn)


def _joint_of(tmp_path, joint, name):
    d = _driven(joint)
    return load_model(write_model(tmp_path, d, name)).bodies[1].joint


def _same_transforms(a, b):
    return [(t.kind, t.vector, t.q, t.by) for t in a] == [(t.kind, t.vector, t.q, t.by) for t in b]


@pytest.mark.parametrize("short, long", [
    ({"type": "revolute", "axis": "z", "by": "0.5*t"}, [{"rotate": "z", "by": "0.5*t"}]),
    ({"type": "revolute", "axis": [0, 1, 1], "by": 0.3}, [{"rotate": [0, 1, 1], "by": 0.3}]),
    ({"type": "prismatic", "axis": "-y", "offset": [0, 0, "l"], "by": ["l*sin(t)"]},
     [{"translate": [0, 0, "l"]}, {"translate": "-y", "by": "l*sin(t)"}]),
    ({"type": "universal", "axes": ["y", "x"], "by": ["t", "2*t"]},
     [{"rotate": "y", "by": "t"}, {"rotate": "x", "by": "2*t"}]),
    ({"type": "spherical", "by": ["t", 0, "-t"]}, [{"rotate": a, "by": b} for a, b in zip("xyz", ["t", 0, "-t"])]),
    ({"type": "free", "by": ["t", 0, 0, 0, "t", 0]},
     [{"translate": a, "by": b} for a, b in zip("xyz", ["t", 0, 0])]
     + [{"rotate": a, "by": b} for a, b in zip("xyz", [0, "t", 0])]),
])
def test_shorthand_by_is_the_long_form(tmp_path, short, long):
    assert _same_transforms(_joint_of(tmp_path, short, "s.yaml"), _joint_of(tmp_path, long, "l.yaml"))
    assert all(t.q is None for t in _joint_of(tmp_path, short, "s.yaml"))


@pytest.mark.parametrize("joint, path, message", [
    ({"type": "revolute", "axis": "z", "q": "q1", "by": "t"}, "bodies[1].joint", "found both"),
    ({"type": "revolute", "axis": "z"}, "bodies[1].joint", "found neither"),
    ({"type": "universal", "axes": ["y", "x"], "by": ["t"]}, "bodies[1].joint.by", "takes 2 expression(s)"),
    ({"type": "revolute", "axis": "z", "by": "q2"}, "bodies[1].joint.by", "allowed only in forces"),
    ({"type": "revolute", "axis": "z", "by": "10**400*t"}, "bodies[1].joint.by", "too large"),
    ({"type": "spherical", "by": [0, "t", "sqrt(-1)"]}, "bodies[1].joint.by[2]", "not a finite real number"),
    ({"type": "universal", "axes": ["y", "w"], "by": ["t", "t"]}, "bodies[1].joint.axes[1]", "expected an axis"),
    ({"type": "revolute", "axis": "z", "q": "9"}, "bodies[1].joint.q", "a coordinate name"),
    ({"type": "revolute", "axis": "z", "by": "t", "offset": "x"}, "bodies[1].joint.offset", "an offset"),
])
def test_shorthand_by_errors(tmp_path, joint, path, message):
    err = _error(write_model(tmp_path, _driven(joint)))
    assert [p.path for p in err.problems] == [path] and message in str(err), str(err)


@pytest.mark.parametrize("mode", ["symbolic", "numeric"])
def test_constants_overflowing_in_the_equations_are_named(tmp_path, mode):
    """Each entry's constants are finite, their products in the equations are not (1e300**2):
    a ModelError naming those entries, not a printer's error without a place."""
    from dynamica.generator.pipeline import generate

    d = mutate(lambda d: d["bodies"][1].update(mass=1e300, com=[0, 0, "2e300"]))
    f = write_model(tmp_path, d)
    spec = load_model(f)                         # loads: every constant is finite
    with pytest.raises(ModelError) as info:
        generate(spec, mode=mode)
    text = str(info.value)
    assert str(f) in text and "not a finite double" in text, text
    assert "`bodies[1].com[2]` (10^300)" in text and "`bodies[1].mass` (10^300)" in text, text


def test_a_key_written_twice_is_an_error(tmp_path):
    """YAML keeps the last of two equal keys: a parameter or body key written twice would
    silently change the model."""
    path = tmp_path / "twice.yaml"
    path.write_text("name: twice\nparameters:\n  m: 1.0\n  l: 2.0\n  m: 3.0\nbodies:\n  - name: b\n"
                    "    parent: ground\n    joint: [{rotate: z, q: a}]\n    mass: m\n    com: [0, 0, 0]\n"
                    "    inertia: [1, 1, 1]\n")
    with pytest.raises(ModelError, match=r"line 5.*the key 'm' twice \(first at line 3\)"):
        load_model(path)


def test_two_forces_with_one_name_are_an_error():
    d = {"name": "f2", "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}],
                                   "mass": 1, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
         "forces": [{"type": "generalized_force", "coordinate": "a", "value": 1, "name": "push"},
                    {"type": "generalized_force", "coordinate": "a", "value": 2, "name": "push"},
                    {"type": "generalized_force", "coordinate": "a", "value": 3, "name": "generalized_force_3"},
                    {"type": "generalized_force", "coordinate": "a", "value": 4}]}
    with pytest.raises(ModelError) as info:
        load_model(d)
    text = str(info.value)
    assert "`forces[1].name`: force name `push` is already used by forces[0]" in text
    assert "`forces[3]`: force name `generalized_force_3` is already used by forces[2]" in text


def test_simulate_form_takes_the_acronyms():
    d = {"name": "acr", "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}],
                                    "mass": 1, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
         "simulate": {"form": "DEC"}}
    assert load_model(d).simulate.form == "ltdl"
    d["simulate"]["form"] = "XYZ"
    with pytest.raises(ModelError, match="simulate.form"):
        load_model(d)


CASCADE_BASE = {"name": "cp", "parameters": {"g": 9.81, "l": 0.4, "m": 1.0}, "gravity": [0, 0, "-g"],
                "bodies": [{"name": "b", "parent": "ground", "joint": {"type": "prismatic", "axis": "x", "q": "x"},
                            "mass": "m", "com": [0, 0, "-l"], "inertia": [0.1, 0.1, 0.1]}],
                "forces": [{"type": "generalized_force", "coordinate": "x", "value": "-g*x"}],
                "initial": {"x": 0.1, "der(x)": 0.0}}


@pytest.mark.parametrize("label, fn, problem", [
    ("infinite parameter", lambda d: d["parameters"].__setitem__("g", float("inf")),
     "`parameters.g`: expected a finite number"),
    ("misspelt value key", lambda d: d["parameters"].__setitem__("l", {"valeu": 0.4}),
     "`parameters.l`: missing required key `value`"),
    ("joint type typo", lambda d: d["bodies"][0]["joint"].__setitem__("type", "prismatc"),
     "`bodies[0].joint.type`: unknown joint type 'prismatc'"),
])
def test_one_mistake_one_problem(tmp_path, label, fn, problem):
    """A new user's trial: an invalid parameter or joint also gave `unknown name` / `unknown
    coordinate` problems wherever its name was used; those follow-on problems are not listed"""
    data = copy.deepcopy(CASCADE_BASE)
    fn(data)
    err = _error(write_model(tmp_path, data))
    text = str(err)
    assert problem in text, text
    assert "unknown name" not in text and "unknown coordinate" not in text, text


def test_a_reference_to_an_undeclared_name_is_still_reported(tmp_path):
    data = copy.deepcopy(CASCADE_BASE)
    data["bodies"][0]["mass"] = "mm"
    data["initial"]["y"] = 0.0
    text = str(_error(write_model(tmp_path, data)))
    assert "`bodies[0].mass`: unknown name `mm`" in text and "`initial.y`: unknown coordinate `y`" in text


def test_a_bare_yaml_word_as_a_name_says_to_quote_it(tmp_path):
    text = (
        "name: a\nparameters:\n  NULL: 1.0\n  m: 1.0\nbodies:\n  - {name: b, parent: ground, joint: {type: revolute,"
        " axis: x, q: th}, mass: m, com: [0, 0, -1], inertia: [1, 1, 1]}\n"
    )
    err = str(_error(_text_model(tmp_path, text)))
    assert "found nothing (null); YAML reads some bare words" in err and "quote the name" in err


def test_a_state_dependent_singular_mass_matrix_names_its_null_space(tmp_path):
    """Gimbal lock of a spherical joint (Cardan x, y, z at y = pi/2): M is regular elsewhere and
    singular at this initial state, its null space moving `a` and `e`"""
    text = ("name: gimbal\nbodies:\n  - {name: b, parent: ground, joint: {type: spherical, q: [a, c, e]}, mass: 1, "
            "com: [0, 0, 0], inertia: [0.1, 0.2, 0.3]}\ninitial: {c: 1.5707963267948966}\n")
    with pytest.raises(ModelError) as info:
        dynamica.load(_text_model(tmp_path, text), cache=tmp_path / "cache")
    err = str(info.value)
    assert "singular at the initial state" in err and "moves the coordinates `a`, `e`" in err and "gimbal lock" in err


# ---------------------------------------------------------------- body inertias the form inverts
def _rod(ia):
    """A slender rod on a revolute joint about y, its axial moment of inertia the parameter `ia`."""
    return {"name": "rod", "parameters": {"m": 2.0, "l": 0.8, "g": 9.81, "ia": ia}, "gravity": [0, 0, "-g"],
            "bodies": [{"name": "rod", "parent": "ground", "joint": {"type": "revolute", "axis": "y", "q": "phi"},
                        "mass": "m", "com": [0, 0, "-l/2"], "inertia": ["m*l**2/12", "m*l**2/12", "ia"]}],
            "initial": {"phi": 0.3}}


@pytest.mark.parametrize("form, other", [("lagrange1", "composite"), ("hamilton-lagrange1", "hamilton-composite")])
def test_inverted_body_inertia_singular_by_a_parameter_default(tmp_path, form, other):
    """LGR (2.24) and HLGR (1.64) apply M_i^-1: a rod with axial inertia `ia: 0.0` gave NaN q''
    without a word. Loading warns (the model may be meant for other values of `ia`); evaluating
    at those values is a ModelError naming the file, the body and a form that takes it."""
    from dynamica.generator.spec.model import DynamicaWarning
    path = write_model(tmp_path, _rod(0.0))
    with pytest.warns(DynamicaWarning, match="body `rod`"):
        model = dynamica.load(path, form)
    with pytest.raises(ModelError) as info:
        model.rhs(0.0, model.to_state([0.3], [0.0]))
    text = str(info.value)
    assert str(path) in text and "body `rod`" in text and "at the default parameters" in text and other in text
    other = {"ia": 1e-3}                                                  # other values run
    model.rhs(0.0, model.to_state([0.3], [0.0], params=other), params=other)


@pytest.mark.parametrize("form", ["lagrange1", "hamilton-lagrange1"])
def test_inverted_body_inertia_singular_by_an_override(tmp_path, form):
    """Default ia = 1e-3 loads; ia = 0 given to qdd, rhs, simulate or as a sweep's case is a
    ModelError naming the body and the override (the case's status, the study goes on)."""
    path = write_model(tmp_path, _rod(1e-3))
    model = dynamica.load(path, form)
    calls = [lambda p: dynamica.simulate(model, t_end=0.1, params=p),
             lambda p: model.rhs(0.0, model.to_state([0.3], [0.0]), params=p)]
    if not model.hamiltonian:
        calls.append(lambda p: model.qdd([0.3], [0.0], params=p))
    for call in calls:
        with pytest.raises(ModelError, match=r"body `rod`.*\(ia = 0\.0\)"):
            call({"ia": 0.0})
        call({"ia": 2e-3})                          # a regular value still runs
    table = dynamica.sweep(model, {"ia": [2e-3, 0.0]}, t_end=0.1, scheduler="serial")
    assert table.loc[0, "status"] == "ok"
    assert table.loc[1, "status"].startswith("ModelError") and "body `rod`" in table.loc[1, "status"]


def test_composite_takes_the_rod_of_zero_axial_inertia(tmp_path):
    """composite needs only M regular: phi'' = -(m g l/2) sin(phi) / (m l^2/3) (the rod's moment
    of inertia about its end, gravity's moment about the pivot)."""
    m_, l, g, phi = 2.0, 0.8, 9.81, 0.3
    model = dynamica.load(write_model(tmp_path, _rod(0.0)), "composite")
    got = model.qdd([phi], [0.0])
    assert np.all(np.isfinite(got))
    assert got[0] == pytest.approx(-(m_ * g * l / 2) * np.sin(phi) / (m_ * l ** 2 / 3), rel=1e-12)
