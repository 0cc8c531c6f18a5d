"""`dynamica cache list MODEL`: the model's modules and its stages' (each structure of its
cyclogram is a module of its own), columns aligned whatever the names' lengths, and the legend of
"stale" and "damaged" only when an entry is."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from conftest import write_model

NAME = "a_rod_with_a_rather_long_model_name"          # longer than the 20 characters the columns had

LOAD = """
import sys, warnings
warnings.simplefilter("ignore")
import dynamica
dynamica.simulate(sys.argv[1], 0.3)
"""


@pytest.fixture(scope="module")
def staged(tmp_path_factory):
    """A rod pendulum whose second stage locks its joint (a second structure, a second module),
    simulated in a subprocess (so this process holds no lock on the entries)."""
    root = tmp_path_factory.mktemp("cache_list")
    model = write_model(root, {
        "name": NAME, "parameters": {"m": 1.0, "l": 0.5}, "gravity": [0, 0, -9.81],
        "bodies": [{"name": "rod", "parent": "ground", "joint": {"type": "revolute", "axis": "y", "q": "phi"},
                    "mass": "m", "com": [0, 0, "-l/2"], "inertia": ["m*l**2/12", "m*l**2/12", 1e-3]}],
        "initial": {"phi": 0.4},
        "stages": [{"name": "swing", "until": 0.1}, {"name": "hold", "until": 0.3, "lock": ["phi"]}]},
        "rod.yaml")
    cache_dir = root / "cache"
    proc = subprocess.run([sys.executable, "-c", LOAD, str(model)], capture_output=True, text=True,
                          env={**__import__("os").environ, "DYNAMICA_CACHE": str(cache_dir)})
    assert proc.returncode == 0, proc.stderr
    return cache_dir


def _list(cache_dir, capsys, *model):
    from dynamica.runtime.cli import main as cli
    assert cli.main(["cache", "--cache", str(cache_dir), "list", *model]) == 0
    return capsys.readouterr().out.splitlines()


def _manifests(cache_dir):
    return sorted(cache_dir.glob("*/manifest.json"))


def test_lists_the_stage_modules_aligned_without_a_legend(staged, capsys):
    lines = _list(staged, capsys, NAME)
    head, rows = lines[0], lines[1:]
    assert len(rows) == 2, lines                          # the model's module and its locked stage's
    assert sum("(stage of " + NAME + ")" in r for r in rows) == 1, lines
    assert not any("stale" in line for line in lines)   # nothing is stale: no legend
    for col in ("form", "backend", "mode", "in use", "status", "entry"):
        at = head.index(col)
        for r in rows:                                    # each column starts where its header does
            assert r[at - 1] == " " and r[at] != " ", (col, lines)
    assert rows[0].index("composite") == rows[1].index("composite") == head.index("form")


def test_a_manifest_without_stage_of_is_still_listed_and_stale_gets_its_legend(staged, tmp_path, capsys):
    import shutil
    cache_dir = tmp_path / "cache"
    shutil.copytree(staged, cache_dir)
    for f in _manifests(cache_dir):
        m = json.loads(f.read_text())
        if m.get("stage_of"):                             # as an entry built before the field existed
            del m["stage_of"]
        else:
            m["fingerprint"] = "another version"
        f.write_text(json.dumps(m))
    lines = _list(cache_dir, capsys, NAME)
    rows = [line for line in lines if re.match(r"\d{4}-", line)]
    assert len(rows) == 2, lines
    assert any(re.search(r"\bstale\b", r) for r in rows) and lines[-1].startswith("(stale: "), lines
    assert "damaged" not in lines[-1]


def test_another_model_name_lists_nothing(staged, capsys):
    assert _list(staged, capsys, "a_rod")[0].startswith("no cached modules")
