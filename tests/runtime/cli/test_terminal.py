"""What the command line prints (runtime/cli/terminal.py, runtime/results/units.py): an import snippet with
absolute paths after `compile`; nothing about generating for a module found in the cache;
a warning once per model, not on every command; units of variables from joint kinds, output
kinds and (for expressions) the parameters' units."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import dynamica
from dynamica.runtime.cli.main import main

from conftest import REPO_ROOT

ROOT = REPO_ROOT
NEGATIVE = """name: cutout
bodies:
  - name: plate
    parent: ground
    joint: [{rotate: z, q: a}]
    mass: 2.0
    com: [0.1, 0, 0]
    inertia: [0.1, 0.1, 0.2]
  - name: hole
    parent: plate
    joint: []
    mass: -0.2
    com: [0.1, 0, 0]
    inertia: [0.01, 0.01, 0.02]
"""


def test_compile_prints_an_absolute_import_snippet(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["compile", str(ROOT / "models" / "double_pendulum.yaml"), "-o", "build", "-q"]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "sys.path.insert" in x)
    where = line.split("sys.path.insert(0, ")[1].split(")")[0].strip("'\"")
    assert os.path.isabs(where) and Path(where) == (tmp_path / "build").resolve()
    code = line.strip() + "; print(" + line.split("import ")[-1].strip() + ".MODEL_NAME)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/")
    assert run.returncode == 0 and run.stdout.strip() == "double_pendulum", run.stderr
    assert f"dynamica.load({str((ROOT / 'models' / 'double_pendulum.yaml').resolve())!r})" in out


def test_cached_build_says_nothing_about_generating(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DYNAMICA_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "m.yaml"
    model.write_text(NEGATIVE.replace("cutout", "fresh_model"))
    assert main(["compile", str(model)]) == 0
    first = capsys.readouterr().err
    assert "generating and compiling" in first and "kinematics" in first
    assert main(["compile", str(model)]) == 0
    assert "generating" not in capsys.readouterr().err


def test_warnings_once_per_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("DYNAMICA_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "cutout.yaml"
    model.write_text(NEGATIVE)
    assert main(["check", str(model), "-q", "--samples", "2"]) == 0
    err = capsys.readouterr().err
    assert err.count("negative mass") == 1                  # once, though the model is read more than once
    assert main(["check", str(model), "-q", "--samples", "2"]) == 0
    err = capsys.readouterr().err
    assert "negative mass" not in err and "shown by an earlier command" in err
    assert main(["check", str(model), "-q", "--samples", "2", "--warnings"]) == 0
    assert capsys.readouterr().err.count("negative mass") == 1


def test_units_of_variables(tmp_path):
    from dynamica.runtime.results.units import expression_unit, parse_unit, shown, variable_units
    model = dynamica.load(ROOT / "models" / "double_pendulum.yaml")
    u = variable_units(model)
    assert (u["phi1"], u["der(phi1)"], u["qdd[1]"]) == ("rad", "rad/s", "rad/s^2")
    assert u["tip.position[2]"] == "m" and u["tip.velocity"] == "m/s"
    assert u["link1.angular_acceleration[0]"] == "rad/s^2"
    assert u["potential_energy"] == "J"                     # g [m/s^2] * m [kg] * l [m]
    forces = dynamica.load(ROOT / "models" / "forces_demo.yaml")
    fu = variable_units(forces)
    translations = [c for c in forces.coordinates if fu[c] == "m"]
    assert translations and all(fu[f"der({c})"] == "m/s" for c in translations)
    assert shown(parse_unit("N*m*s/rad") / parse_unit("s")) == "J"
    assert shown(parse_unit("kg*m/s^2")) == "N"
    assert expression_unit(model.spec, "m1*l1 + g") == ""    # terms of different units: no unit claimed
