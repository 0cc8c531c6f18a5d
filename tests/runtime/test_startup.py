"""Start-up of a model already in the cache (runtime/fastload.py): which modules a cache hit
imports (the import boundary, not the time), and that the model it gives is the one the full
path gives (numbers, warnings, a changed file)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings

import numpy as np
import yaml

import dynamica

from conftest import MODELS

#: what a cache hit must not import: the generator's heavy parts and what they use
HEAVY = ("sympy", "jinja2", "yaml", "scipy", "matplotlib", "pint", "filelock", "dynamica.generator.spec.expr",
         "dynamica.generator.spec.units",
         "dynamica.generator.spec.loader", "dynamica.generator.render", "dynamica.generator.pipeline",
         "dynamica.generator.forms")

_PROBE = """
import json, sys
{body}
heavy = sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in {heavy!r}))
print(json.dumps(heavy))
"""


def _run(tmp_path, body, *args):
    env = {**os.environ, "DYNAMICA_CACHE": str(tmp_path / "cache")}
    code = _PROBE.format(body=body, heavy=HEAVY)
    r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1]), r


def test_a_cache_hit_imports_no_generator_sympy_jinja2_yaml_or_scipy(tmp_path):
    load = "import dynamica\nm = dynamica.load(sys.argv[1])\nr = dynamica.simulate(m, t_end=1.0)"
    for name in ("double_pendulum", "fourbar"):   # (a tree; closed loops, assembled at load)
        model = MODELS / f"{name}.yaml"
        first, _ = _run(tmp_path, load, model)
        assert "sympy" in first                   # the first load generates (and writes the record)
        assert "pint" not in first                # SI units only (both files declare some): read without pint
        hit, _ = _run(tmp_path, load, model)
        assert hit == [], name
    cli = ("from dynamica.runtime.cli.main import main\n"
           "assert main(['simulate', sys.argv[1], '--t-end', '1', '-q']) == 0")
    hit, r = _run(tmp_path, cli, MODELS / "double_pendulum.yaml")
    assert hit == [] and "simulated double_pendulum" in r.stdout


def test_a_cache_hit_gives_the_model_of_the_full_path(tmp_path, monkeypatch):
    """Same module, spec, initial state, run and warnings; a changed file is read again."""
    monkeypatch.setenv("DYNAMICA_CACHE", str(tmp_path / "cache"))
    d = yaml.safe_load((MODELS / "double_pendulum.yaml").read_text())
    d["bodies"][1]["inertia"] = [0.01, 0.01, 0.05]             # violates the triangle inequality: a warning
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    with warnings.catch_warnings(record=True) as w1:
        warnings.simplefilter("always")
        full = dynamica.load(path)
    from dynamica.runtime import fastload
    with warnings.catch_warnings(record=True) as w2:
        warnings.simplefilter("always")
        hit = fastload.lookup(tmp_path / "cache", fastload.key(path, None, "c", "symbolic", "predicted"), True)
    assert hit is not None and hit.path == full.path and hit.spec == full.spec
    assert [str(x.message) for x in w2] == [str(x.message) for x in w1] and w1
    assert all(np.array_equal(a, b) for a, b in zip(hit.initial_state(), full.initial_state()))
    full._initial_at_defaults = None                            # (the full path's own sympy evaluation)
    assert all(np.array_equal(a, b) for a, b in zip(hit.initial_state(), full.initial_state()))
    r1, r2 = dynamica.simulate(full, t_end=0.5), dynamica.simulate(hit, t_end=0.5)
    assert np.array_equal(r1.q, r2.q) and all(np.array_equal(r1.outputs[k], r2.outputs[k]) for k in r1.outputs)
    d["parameters"]["m1"]["value"] = 1.5
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    assert dynamica.load(path).parameters["m1"] == 1.5


def test_a_cache_hit_runs_cases_at_other_parameters_without_sympy(tmp_path):
    """A study's cases override parameters: where no initial value depends on one, the cached
    model's initial state serves them (no sympy in a case, nor in each forked worker)."""
    body = ("import dynamica\nm = dynamica.load(sys.argv[1])\n"
            "r = dynamica.simulate(m, t_end=0.1, params={'l2': 0.9})\n"
            "from dynamica.runtime.studies.sweep import sweep\n"
            "t = sweep(m, {'l2': [0.6, 0.8]}, 0.1, scheduler='serial')\n"
            "assert (t['status'] == 'ok').all()")
    model = MODELS / "double_pendulum.yaml"
    _run(tmp_path, body, model)
    hit, _ = _run(tmp_path, body, model)
    assert hit == [], hit


def test_an_initial_value_that_depends_on_a_parameter_follows_it_on_a_cache_hit(tmp_path, monkeypatch):
    monkeypatch.setenv("DYNAMICA_CACHE", str(tmp_path / "cache"))
    d = yaml.safe_load((MODELS / "double_pendulum.yaml").read_text())
    d["initial"]["phi2"] = "-0.4*l2/0.7"
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    full = dynamica.load(path)
    from dynamica.runtime import fastload
    hit = fastload.lookup(tmp_path / "cache", fastload.key(path, None, "c", "symbolic", "predicted"), True)
    assert hit is not None and hit.initial_depends_on_parameters() == (True, False)
    q0, _ = hit.initial_state({"l2": 1.4})
    assert q0[1] == -0.8 and full.initial_state({"l2": 1.4})[0][1] == -0.8
    assert dynamica.load(MODELS / "double_pendulum.yaml").initial_depends_on_parameters() == (False, False)


def test_an_extra_states_initial_value_follows_its_parameter_on_a_cache_hit(tmp_path, monkeypatch):
    """The same for `states:` (dc_motor_joint's armature current, its initial value made a function
    of R): the cached model evaluates it at the parameters given; the bundled file's constant 0 is
    recorded as independent of them."""
    monkeypatch.setenv("DYNAMICA_CACHE", str(tmp_path / "cache"))
    d = yaml.safe_load((MODELS / "dc_motor_joint.yaml").read_text())
    d["states"]["i_m"]["initial"] = "0.5*R"
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    full = dynamica.load(path)
    from dynamica.runtime import fastload
    hit = fastload.lookup(tmp_path / "cache", fastload.key(path, None, "c", "symbolic", "predicted"), True)
    assert hit is not None and hit.initial_depends_on_parameters() == (False, True)
    assert hit.initial_states({"R": 3.0})[0] == 1.5 and full.initial_states({"R": 3.0})[0] == 1.5
    assert hit.initial_states()[0] == 0.6
    assert dynamica.load(MODELS / "dc_motor_joint.yaml").initial_depends_on_parameters() == (False, False)
