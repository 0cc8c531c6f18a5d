"""Parameter sets (runtime/paramsets.py): `dynamica params` writes every parameter with value,
unit and description; `--params` of that set reproduces the run bit for bit; `--set` (scalars,
vectors, elements) equals the same values given through the Python API; import by name takes
the common parameters of another model's set; unknown names are errors with a "did you mean"."""

from __future__ import annotations

import math
import os

import pytest
import yaml

import dynamica
from dynamica.errors import ModelError
from dynamica.runtime.cli.main import main

from conftest import REPO_ROOT

ROOT = str(REPO_ROOT)
PENDULUM = os.path.join(ROOT, "models", "double_pendulum.yaml")
VECTOR_MODEL = """name: vec
parameters:
  m: {value: 1.0, unit: kg, description: the mass}
  r: {value: [0.0, 0.0, -0.5], unit: m}
  g: 9.81
gravity: [0, 0, -g]
bodies:
  - name: rod
    parent: ground
    joint: [{rotate: x, q: phi}]
    mass: m
    com: r
    inertia: [0.02, 0.02, 0.001]
initial: {phi: 0.4}
"""


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_params_writes_values_units_descriptions(capsys):
    code, out, _ = run(["params", PENDULUM, "-q"], capsys)
    assert code == 0
    data = yaml.safe_load(out)
    assert data["model"] == "double_pendulum"
    assert data["parameters"]["l2"] == {"value": 0.7, "unit": "m", "description": "length of rod 2"}
    assert set(data["parameters"]) == set(dynamica.load(PENDULUM).parameters)


def test_round_trip_reproduces_the_run_bit_for_bit(tmp_path, capsys):
    """A set written with a changed value, read back with --params, gives the same CSV bytes as
    --set of that value; and a set of the defaults the same bytes as no set."""
    changed = tmp_path / "changed.yaml"
    assert run(["params", PENDULUM, "-q", "--set", "l2=0.734567891234567", "-o", str(changed)], capsys)[0] == 0
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    common = ["--t-end", "1", "--output-step", "0.01", "-q", "--no-progress"]
    assert run(["simulate", PENDULUM, *common, "--out", str(a), "--set", "l2=0.734567891234567"], capsys)[0] == 0
    assert run(["simulate", PENDULUM, *common, "--out", str(b), "--params", str(changed)], capsys)[0] == 0
    assert a.read_bytes() == b.read_bytes()
    defaults, c, d = tmp_path / "defaults.yaml", tmp_path / "c.csv", tmp_path / "d.csv"
    assert run(["params", PENDULUM, "-q", "-o", str(defaults)], capsys)[0] == 0
    assert run(["simulate", PENDULUM, *common, "--out", str(c)], capsys)[0] == 0
    assert run(["simulate", PENDULUM, *common, "--out", str(d), "--params", str(defaults)], capsys)[0] == 0
    assert c.read_bytes() == d.read_bytes()
    assert a.read_bytes() != c.read_bytes()                 # the value did change the run


def test_set_equals_the_api(tmp_path, capsys):
    path = tmp_path / "vec.yaml"
    path.write_text(VECTOR_MODEL)
    out = tmp_path / "o.csv"
    assert run(["simulate", str(path), "--t-end", "0.5", "--output-step", "0.05", "-q", "--no-progress",
                "--out", str(out), "--set", "r=[0, 0.1, -0.7]", "--set", "r[1]=0.2", "--set", "m=2"], capsys)[0] == 0
    model = dynamica.load(path)
    dynamica.simulate(model, t_end=0.5, output_step=0.05, params={"r": (0, 0.2, -0.7), "m": 2.0},
                      out=tmp_path / "api.csv")
    assert out.read_bytes() == (tmp_path / "api.csv").read_bytes()


def test_unknown_names_and_bad_values(tmp_path, capsys):
    path = tmp_path / "vec.yaml"
    path.write_text(VECTOR_MODEL)
    code, _, err = run(["simulate", str(path), "-q", "--set", "mm=2"], capsys)
    assert code == 2 and "unknown parameter `mm`" in err and "did you mean `m`" in err
    code, _, err = run(["simulate", str(path), "-q", "--set", "r=[1, 2]"], capsys)
    assert code == 2 and "expected a list of 3 numbers" in err
    code, _, err = run(["simulate", str(path), "-q", "--set", "m=heavy"], capsys)
    assert code == 2 and "expected a finite number" in err
    bad = tmp_path / "bad.yaml"
    bad.write_text("parameters:\n  gg: 9.8\n")
    code, _, err = run(["check", str(path), "-q", "--params", str(bad)], capsys)
    assert code == 2 and "gg" in err and "did you mean `g`" in err and str(bad) in err


def test_import_by_name_from_another_models_set(tmp_path, capsys):
    """The pendulum's set has g (shared) and m1, l1, ... (not in the vector model): the import
    takes g only, and the run uses it."""
    path = tmp_path / "vec.yaml"
    path.write_text(VECTOR_MODEL)
    other = tmp_path / "other.yaml"
    assert run(["params", PENDULUM, "-q", "--set", "g=1.62", "-o", str(other)], capsys)[0] == 0
    out = tmp_path / "o.csv"
    code, _, err = run(["simulate", str(path), "--import", str(other), "--t-end", "0.5", "--output-step", "0.05",
                        "--out", str(out), "--no-progress"], capsys)
    assert code == 0 and "imported 1 parameter(s)" in err and ": g" in err
    dynamica.simulate(dynamica.load(path), t_end=0.5, output_step=0.05, params={"g": 1.62}, out=tmp_path / "api.csv")
    assert out.read_bytes() == (tmp_path / "api.csv").read_bytes()
    with pytest.raises(ModelError, match="did you mean"):
        from dynamica.runtime.paramsets import read_set
        read_set(other, dict(dynamica.load(path).parameters))


# ---------------------------------------------------------------- the one NAME=VALUE reader
NAMES = {"l": 1.0, "m": 2.0, "r": (0.0, 0.0, -0.5)}


@pytest.mark.parametrize("items, expected", [
    # the parameter sets' documented grammar (docs/api.md#parameter-sets): YAML 1.2 numbers,
    # lists for a vector, NAME[K] for one element (the others kept), several entries in order
    (["l=0.7", "m=2"], {"l": 0.7, "m": 2.0}),
    (["r=[0,0,1]"], {"r": (0.0, 0.0, 1.0)}),
    (["r=[0, 0.1, -0.7]", "r[1]=0.2"], {"r": (0.0, 0.2, -0.7)}),
    (["r[2]=1"], {"r": (0.0, 0.0, 1.0)}),
    (["l=1e-3", "m=.5"], {"l": 1e-3, "m": 0.5}),
    (["l=0x10"], {"l": 16.0}),
    # the statics/modes grammar (Python's float() of the text): spaces, signs, exponents, 1_000
    ([" l = 60000 "], {"l": 60000.0}),
    (["l=+1.5", "m=5."], {"l": 1.5, "m": 5.0}),
    (["l=1E5", "m=1_000"], {"l": 1e5, "m": 1000.0}),
])
def test_parameter_entries_of_both_old_grammars_are_read(items, expected):
    from dynamica.runtime.paramsets import parse_assignments
    assert parse_assignments(items, NAMES) == expected


def test_scalar_entries_of_statics_modes_identify():
    """`--start q=0.3`, `--input u=1.8` (checked names) and identify's `--start-values k1=7e4,c1=50`
    (one comma-separated string, `p[k]` names as written)."""
    from dynamica.runtime.paramsets import scalar_values, split_entries
    assert scalar_values(["phi=0.3"], "--start", ("phi", "psi"), "coordinate") == {"phi": 0.3}
    assert scalar_values(["u=1.8", "v=-2"], "--input", ("u", "v"), "input") == {"u": 1.8, "v": -2.0}
    assert scalar_values("k1=7e4,c1=50", "--start-values") == {"k1": 7e4, "c1": 50.0}
    assert scalar_values("r[1]=2, k=1", "--start-values") == {"r[1]": 2.0, "k": 1.0}
    assert scalar_values(None, "--start") == {} and scalar_values([], "--input", (), "input") == {}
    assert split_entries("r=[0,0,1],k=2") == ["r=[0,0,1]", "k=2"]


@pytest.mark.parametrize("items, words", [
    (["k1"], ["--set 'k1'", "expected NAME=VALUE"]),
    (["=3"], ["--set '=3'", "expected NAME=VALUE"]),
    (["mm=2"], ["--set 'mm=2'", "unknown parameter `mm`", "did you mean `m`"]),
    (["r=[1, 2]"], ["--set 'r=[1, 2]'", "expected a list of 3 numbers"]),
    (["m=heavy"], ["--set 'm=heavy'", "expected a finite number", "'heavy'"]),
    (["m=inf"], ["--set 'm=inf'", "expected a finite number"]),
    (["m=true"], ["--set 'm=true'", "expected a finite number"]),
    (["m[1]=2"], ["--set 'm[1]=2'", "no element 1 (it is a scalar)"]),
    (["r[3]=2"], ["--set 'r[3]=2'", "no element 3 (it is a vector of 3)"]),
    (["l=[1, 2]"], ["--set 'l=[1, 2]'", "expected a finite number"]),
    (["2x=1"], ["--set '2x=1'", "not a name"]),
    (["mm=2", "l=0.7", "m=x"], ["--set: 2 bad entries", "'mm=2'", "'m=x'"]),
])
def test_one_error_names_the_option_and_every_bad_entry(items, words):
    from dynamica.errors import OptionError
    from dynamica.runtime.paramsets import parse_assignments
    with pytest.raises(OptionError) as info:
        parse_assignments(items, NAMES)
    assert all(w in str(info.value) for w in words), str(info.value)
    assert "'l=0.7'" not in str(info.value)
    assert isinstance(info.value, ValueError)            # as the old errors: caught by the commands


def test_scalar_entries_errors():
    from dynamica.errors import OptionError
    from dynamica.runtime.paramsets import scalar_values
    with pytest.raises(OptionError, match=r"--start 'psi=1': unknown coordinate `psi`.*the model has phi"):
        scalar_values(["psi=1"], "--start", ("phi",), "coordinate")
    with pytest.raises(OptionError, match=r"--input 'u=\[1, 2\]': expected a finite number"):
        scalar_values(["u=[1, 2]"], "--input", ("u",), "input")
    with pytest.raises(OptionError, match=r"--start-values 'k1': expected NAME=VALUE"):
        scalar_values("k1,c1=50", "--start-values")


def test_the_other_commands_split_their_entries_the_same_way():
    """simulate's `--input NAME=FILE.csv` and sweep's `--grid`, `--dist` split at the first `=` with
    the same error naming the entry; their values keep their own grammar."""
    from dynamica.errors import OptionError
    from dynamica.runtime.paramsets import split_assignment
    from dynamica.runtime.studies.cases import parse_dist, parse_grid

    def input_file(text):
        return split_assignment(text, "--input", "NAME=FILE.csv")
    assert input_file("u = volts.csv") == ("u", "volts.csv")
    assert parse_grid("der(phi2)=0,1")[0] == "der(phi2)" and parse_grid("r[1]=0.5:1:3")[1].tolist() == [0.5, 0.75, 1]
    assert parse_dist("k=normal(2,0.1)")[0] == "k"
    for fn, text, option in ((input_file, "volts.csv", "--input"), (parse_grid, "k", "--grid"),
                             (parse_dist, "k=", "--dist")):
        with pytest.raises(OptionError, match=f"{option} '{text}': expected NAME="):
            fn(text)


def test_statics_takes_a_vector_parameter_and_an_element(tmp_path, capsys):
    """statics' --set is the parameter sets' one: a vector, then one element of it."""
    path = tmp_path / "vec.yaml"
    path.write_text(VECTOR_MODEL)
    code, out, err = run(["statics", str(path), "-q", "--set", "r=[0, 0.1, -0.7]", "r[1]=0.2", "--start", "phi=0.1"],
                         capsys)
    assert code == 0, err
    # the centre of mass r = (0, 0.2, -0.7) hangs below the x axis: tan(phi) = r_y / r_z
    phi = math.atan(0.2 / -0.7)
    assert f"{phi:.9f}" in out
    code, _, err = run(["statics", str(path), "-q", "--set", "r[1]=0.2", "mm=1"], capsys)
    assert code == 2 and "--set 'mm=1': unknown parameter `mm`" in err and "did you mean `m`" in err
