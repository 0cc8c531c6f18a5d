"""The default form (`load` without a form): composite, ltdl for large trees by the flop formulas
(runtime/analysis/selection.py `default_form`); explicit forms and the file's `simulate.form` as before."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.generator.spec.model import load_model
from dynamica.runtime.analysis.selection import default_form

from conftest import ALL_BUNDLED, MODELS


def _tree(path, n, shape="chain", form=None):
    """n bodies on revolute joints about x, y, x, ...: a chain, or a star (bodies 2..n on body 1, as
    benchmarks/bench_forms.py's, where the rule was measured)."""
    bodies = [{"name": f"b{i}", "parent": "ground" if i == 1 else "b1" if shape == "star" else f"b{i - 1}",
               "joint": [{"translate": [0, 0, -0.5]}, {"rotate": "x" if i % 2 else "y", "q": f"q{i}"}],
               "mass": 1.0, "com": [0, 0, -0.25], "inertia": [0.02, 0.02, 0.001]} for i in range(1, n + 1)]
    d = {"name": f"{shape}{n}", "parameters": {"g": 9.81}, "gravity": [0, 0, "-g"], "bodies": bodies,
         "initial": {f"q{i}": float(0.3 * np.cos(i)) for i in range(1, n + 1)}}
    if form:
        d["simulate"] = {"form": form}
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


@pytest.mark.parametrize("name", ALL_BUNDLED)
def test_the_bundled_models_keep_composite(name):
    assert default_form(load_model(MODELS / f"{name}.yaml")) == "composite"


def test_large_chains_take_ltdl_stars_and_numeric_mode_composite(tmp_path):
    chains = {n: default_form(load_model(_tree(tmp_path / f"c{n}.yaml", n))) for n in (5, 10, 11, 20, 50)}
    assert chains == {5: "composite", 10: "composite", 11: "ltdl", 20: "ltdl", 50: "ltdl"}
    assert default_form(load_model(_tree(tmp_path / "s40.yaml", 40, "star"))) == "composite"
    assert default_form(load_model(_tree(tmp_path / "c20.yaml", 20)), mode="numeric") == "composite"


def test_load_takes_the_default_and_keeps_explicit_forms(tmp_path):
    path = _tree(tmp_path / "c12.yaml", 12)
    auto, cbm = dynamica.load(path), dynamica.load(path, form="composite")
    assert (auto.form, cbm.form) == ("ltdl", "composite")
    assert dynamica.load(_tree(tmp_path / "f12.yaml", 12, form="composite")).form == "composite"
    rng = np.random.default_rng(3)
    for _ in range(5):                  # two forms, one set of equations (to round-off)
        q, qd = rng.uniform(-1, 1, 12), rng.uniform(-1, 1, 12)
        a, b = auto.qdd(q, qd), cbm.qdd(q, qd)
        assert np.abs(a - b).max() <= 1e-11 * max(1.0, np.abs(b).max())
