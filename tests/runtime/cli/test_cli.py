"""The command line: compile, simulate, check; errors without a traceback."""

import subprocess
import sys

import numpy as np
import pytest

from conftest import MODELS, write_model


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dynamica.runtime.cli.main", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_compile_to_directory_and_import(tmp_path):
    out = tmp_path / "mods"
    r = run("compile", MODELS / "double_pendulum.yaml", "-o", out)
    assert r.returncode == 0, r.stderr
    assert "import double_pendulum_composite" in r.stdout
    code = ("import sys, numpy as np; sys.path.insert(0, sys.argv[1]); import double_pendulum_composite as m; "
            "o = np.zeros(4); m.rhs(0.0, np.array([0.1, 0.2, 0.0, 0.0]), np.array(m.PARAMETER_DEFAULTS), o); "
            "print(o[2])")
    r2 = subprocess.run([sys.executable, "-c", code, str(out)], capture_output=True, text=True, cwd=tmp_path)
    assert r2.returncode == 0, r2.stderr
    assert np.isfinite(float(r2.stdout))


def test_simulate_writes_csv_and_plot(tmp_path):
    r = run("simulate", MODELS / "double_pendulum.yaml", "--t-end", "0.5", "--out", tmp_path / "r.csv",
            "--plot", tmp_path / "p.png")
    assert r.returncode == 0, r.stderr
    lines = (tmp_path / "r.csv").read_text().splitlines()
    # coordinates and rates first, then the model's outputs (double_pendulum has points and angular)
    assert lines[0].startswith("t,phi1,phi2,der(phi1),der(phi2),qdd[0],qdd[1],tip.position[0]") and len(lines) > 10
    assert (tmp_path / "p.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_check_passes():
    r = run("check", MODELS / "governor.yaml", "--samples", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "OK" in r.stdout


def test_errors_without_traceback(tmp_path):
    bad = write_model(tmp_path, {"name": "x", "bodies": [{"name": "b", "parent": "nowhere"}]})
    r = run("check", bad)
    assert r.returncode != 0
    assert "Traceback" not in r.stderr
    assert "unknown parent body `nowhere`" in r.stderr and "missing required key `joint`" in r.stderr


def test_help_everywhere():
    for sub in ([], ["compile"], ["simulate"], ["check"]):
        r = run(*sub, "--help")
        assert r.returncode == 0 and "usage" in r.stdout


def test_bad_numbers_are_refused_before_any_work(tmp_path):
    """A new user's trial: a negative or infinite time, a zero step or panel count, times that are
    not numbers gave tracebacks or were ignored, some only after the whole run"""
    model = MODELS / "double_pendulum.yaml"
    cases = [(("simulate", "--output-step", "-0.1"), "--output-step: a positive finite number"),
             (("simulate", "--output-step", "0"), "--output-step: a positive finite number"),
             (("simulate", "--t-end", "inf"), "--t-end: a finite number"),
             (("simulate", "--step", "0", "--method", "stoermer6"), "--step: a positive finite number"),
             (("simulate", "--rtol", "nan"), "--rtol: a nonnegative finite number"),
             (("simulate", "--panels", "0", "--plot", tmp_path / "p.png"), "--panels: a positive integer"),
             (("simulate", "--table", tmp_path / "t.csv", "--table-times", "abc"), "--table-times: a number"),
             (("modes", "--time", "inf"), "--time: a finite number")]
    for (cmd, *opts), message in cases:
        r = run(cmd, model, *opts)
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, (opts, r.stderr)
        assert not (tmp_path / "p.png").exists() and not (tmp_path / "t.csv").exists()
    r = run("prony", tmp_path / "none.csv", "--modes", "0")
    assert r.returncode == 2 and "--modes: a positive integer" in r.stderr


def test_simulate_api_refuses_bad_numbers():
    import pytest

    import dynamica
    model = dynamica.load(MODELS / "double_pendulum.yaml")
    for kw, name in ((dict(output_step=-0.1), "output_step"), (dict(t_end=float("inf")), "t_end"),
                     (dict(output_step=0.0), "output_step"), (dict(atol=-1.0), "atol"), (dict(step="x"), "step")):
        with pytest.raises(ValueError, match=f"^{name} must be"):
            dynamica.simulate(model, **kw)


def test_a_singular_mass_matrix_from_parameter_overrides_is_named():
    """A new user's trial: `--set` of zero masses gave only "right-hand side returned -inf" """
    import pytest

    import dynamica
    from dynamica.errors import IntegrationError
    model = dynamica.load(MODELS / "double_pendulum.yaml")
    with pytest.raises(IntegrationError, match=r"non-finite.*m1 = 0.0, m2 = 0.0\) the mass matrix is singular"):
        dynamica.simulate(model, t_end=0.1, params={"m1": 0.0, "m2": 0.0})


def test_set_takes_several_values_after_one_option(tmp_path):
    """The contract's `dynamica simulate MODEL --set name=value ...`: one --set with several values
    is the same as repeated --set"""
    a = run("simulate", MODELS / "double_pendulum.yaml", "-q", "--t-end", "0.2", "--out", tmp_path / "a.csv",
            "--set", "m1=2", "l2=0.5")
    b = run("simulate", MODELS / "double_pendulum.yaml", "-q", "--t-end", "0.2", "--out", tmp_path / "b.csv",
            "--set", "m1=2", "--set", "l2=0.5")
    c = run("simulate", MODELS / "double_pendulum.yaml", "-q", "--t-end", "0.2", "--out", tmp_path / "c.csv")
    assert a.returncode == 0 and b.returncode == 0 and c.returncode == 0, a.stderr + b.stderr
    assert (tmp_path / "a.csv").read_text() == (tmp_path / "b.csv").read_text() != (tmp_path / "c.csv").read_text()


def test_simulate_takes_tolerances_per_component():
    import pytest

    import dynamica
    model = dynamica.load(MODELS / "double_pendulum.yaml")
    res = dynamica.simulate(model, t_end=0.1, atol=np.full(4, 1e-9), rtol=1e-8)
    assert res.success and np.all(np.isfinite(res.q))
    with pytest.raises(ValueError, match="^atol must be a nonnegative finite number"):
        dynamica.simulate(model, t_end=0.1, atol=np.array([1e-9, -1.0, 1e-9, 1e-9]))


@pytest.mark.parametrize("name, method", [("double_pendulum", "DOP853"), ("double_pendulum", "LSODA"),
                                          ("fourbar", "adams"), ("fourbar", "radau")])
def test_progress_hands_on_the_rows_of_one_run(name, method):
    """With progress the scipy methods (and adams on a model with loops, whose rows are projected)
    give the rows and RHS calls of the run without it: they were restarted at each piece."""
    import dynamica
    model = dynamica.load(MODELS / f"{name}.yaml")
    ref = dynamica.simulate(model, t_end=2.0, method=method, output_step=0.01)
    seen = []
    res = dynamica.simulate(model, t_end=2.0, method=method, output_step=0.01,
                            progress=lambda so_far, new: seen.append(len(new.t) if hasattr(new, "t") else 1))
    assert len(seen) > 2 and res.nfev == ref.nfev
    assert np.array_equal(res.t, ref.t) and np.max(np.abs(res.q - ref.q)) < 1e-13
    assert np.max(np.abs(res.qd - ref.qd)) < 1e-13


def test_streaming_to_a_file_does_not_change_the_integration(tmp_path):
    """`--out` alone streams the rows: the run went in restarted pieces (1338 RHS calls instead of
    640, rows moved by 1e-6). The file must hold the rows of the same run as without it, with as
    many RHS calls, and so must a progress callback."""
    import re

    import dynamica
    path = MODELS / "double_pendulum.yaml"
    ref = dynamica.simulate(dynamica.load(path))
    r = run("simulate", path, "-q", "--out", tmp_path / "r.csv")
    assert r.returncode == 0, r.stderr
    data = np.genfromtxt(tmp_path / "r.csv", delimiter=",", names=True, deletechars="")
    assert np.max(np.abs(data["t"] - ref.t)) == 0.0 and len(data) == len(ref.t)
    for j, c in enumerate(ref.coordinates):
        assert np.max(np.abs(data[c] - ref.q[:, j])) < 1e-12
        assert np.max(np.abs(data[f"der({c})"] - ref.qd[:, j])) < 1e-12
    assert int(re.search(r"\((\d+) RHS calls", r.stdout).group(1)) == ref.nfev, r.stdout
    seen = []
    res = dynamica.simulate(dynamica.load(path), progress=lambda so_far, new: seen.append(len(so_far.t)))
    assert len(seen) > 2 and res.nfev == ref.nfev and np.max(np.abs(res.q - ref.q)) < 1e-12
