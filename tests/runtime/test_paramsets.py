"""Parameter sets (runtime/paramsets.py): `dynamica params` writes every parameter with value,
unit and description; `--params` of that set reproduces the run bit for bit; `--set` (scalars,
vectors, elements) equals the same values given through the Python API; import by name takes
the common parameters of another model's set; unknown names are errors with a "did you mean"."""

from __future__ import annotations

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
