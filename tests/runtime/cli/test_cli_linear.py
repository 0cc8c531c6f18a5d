"""The command line of linear analysis: statics, modes, prony, identify; errors without a traceback.

The numbers printed are checked against the Python API (itself checked against closed forms
and sympy in test_statics.py, test_linear.py, test_identify.py)."""

import math
import subprocess
import sys

import numpy as np
import pytest

import dynamica

from conftest import MODELS

TWO_MASS = MODELS / "two_mass.yaml"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "dynamica.runtime.cli.main", *map(str, args)],
                          capture_output=True, text=True, cwd=cwd)


def test_statics_prints_and_writes_the_equilibrium(tmp_path):
    r = run("statics", TWO_MASS, "--out", tmp_path / "eq.csv", "--set", "k1=60000")
    assert r.returncode == 0, r.stderr
    # x1 = -(m1 + m2) g / k1, x2 = -m2 g / k2: the springs carry the weights below them
    x1, x2 = -25 * 9.81 / 60000, -5 * 9.81 / 20000
    assert "stable" in r.stdout and "20000, 60000" in r.stdout
    rows = (tmp_path / "eq.csv").read_text().splitlines()
    assert rows[0] == "coordinate,start,equilibrium,held"
    assert abs(float(rows[1].split(",")[2]) - x1) < 1e-12 and abs(float(rows[2].split(",")[2]) - x2) < 1e-12


def test_modes_table_plot_and_response(tmp_path):
    r = run(
        "modes",
        TWO_MASS,
        "--table",
        tmp_path / "m.csv",
        "--plot",
        tmp_path / "m.png",
        "--response",
        "x1",
        "--outputs",
        "x1,der(x2)",
        "--response-plot",
        tmp_path / "afc.png",
        "--response-table",
        tmp_path / "afc.csv",
    )
    assert r.returncode == 0, r.stderr
    md = dynamica.linearize(dynamica.load(TWO_MASS)).modes()
    for f in md.frequencies:
        assert f"{f:.5g}" in r.stdout
    assert "response x1 / x1: peaks at" in r.stdout
    for name in ("m.csv", "m.png", "afc.png", "afc.csv"):
        assert (tmp_path / name).stat().st_size > 100
    r = run("modes", TWO_MASS, "--at", "initial")
    assert r.returncode == 0 and "about the initial state" in r.stdout


def test_prony_of_a_csv_file(tmp_path):
    t = np.arange(0.0, 3.0, 0.005)
    y = 0.2 * np.exp(-0.4 * t) * np.cos(2 * math.pi * 1.5 * t + 0.3) + 0.05 * np.exp(-1.1 * t) * np.cos(
        2 * math.pi * 4.0 * t)
    data = tmp_path / "rec.csv"
    np.savetxt(data, np.column_stack([t, y, 2 * y]), delimiter=",", header="time,a,b", comments="")
    r = run("prony", data, "--t-column", "time", "--columns", "a", "--modes", "2", "--table", tmp_path / "p.csv",
            "--plot", tmp_path / "p.png", "--start", "0.5", "--end", "2.5", "--offset")
    assert r.returncode == 0, r.stderr
    assert "1.5 " in r.stdout and "4 " in r.stdout and "-0.4" in r.stdout and "-1.1" in r.stdout
    rows = (tmp_path / "p.csv").read_text().splitlines()
    assert rows[0].startswith("k,f_Hz,beta_1_s") and abs(float(rows[1].split(",")[1]) - 1.5) < 1e-8
    r = run("prony", data, "--columns", "a")
    assert r.returncode == 2 and "no column(s) 't'" in r.stderr and "Traceback" not in r.stderr


def test_identify_from_records_and_from_frequencies(tmp_path):
    model = dynamica.load(TWO_MASS)
    true = {"k1": 7.5e4, "k2": 2.2e4}
    rec = dynamica.simulate(model, params=true, t_end=1.0, output_step=0.002)
    path = tmp_path / "rec.csv"
    np.savetxt(path, np.column_stack([rec.t, rec.q]), delimiter=",", header="t,x1,x2", comments="")
    r = run("identify", TWO_MASS, "--params", "k1,k2", "--records", path, "--start-values", "k1=7e4,k2=2e4")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[2:4]}
    assert abs(float(rows["k1"][2]) / 7.5e4 - 1) < 1e-6 and abs(float(rows["k2"][2]) / 2.2e4 - 1) < 1e-6
    md = dynamica.linearize(model, params=true).modes()
    r = run("identify", TWO_MASS, "--params", "k1,k2", "--frequencies", ",".join(f"{f:.12g}" for f in md.frequencies))
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line.split() for line in r.stdout.splitlines()[2:4]}
    assert abs(float(rows["k1"][2]) / 7.5e4 - 1) < 1e-6 and abs(float(rows["k2"][2]) / 2.2e4 - 1) < 1e-6
    r = run("identify", TWO_MASS, "--params", "k1")
    assert r.returncode == 2 and "either --records" in r.stderr


def test_statics_failure_is_one_error_line(tmp_path):
    from conftest import write_model
    path = write_model(tmp_path, {"name": "falls", "gravity": [0, 0, -9.81], "bodies": [
        {"name": "b", "parent": "ground", "joint": [{"translate": "z", "q": "h"}], "mass": 1.0, "com": [0, 0, 0],
         "inertia": [0.1, 0.1, 0.1]}]}, "falls.yaml")
    r = run("statics", path)
    assert r.returncode == 2 and "no equilibrium" in r.stderr and "`h`" in r.stderr and "Traceback" not in r.stderr
    r = run("statics", TWO_MASS, "--set", "k1")
    assert r.returncode == 2 and "--set 'k1': expected NAME=VALUE" in r.stderr


def test_statics_and_modes_take_inputs_and_a_start():
    # the DC-motor joint with the armature voltage held at 1.8 V: N k_t i = m g (l/2) cos(phi),
    # i = u / R, so phi = acos(1.8 N k_t / (R m g l / 2)) (the closed form, from the model file)
    model = MODELS / "dc_motor_joint.yaml"
    phi = math.acos(1.8 * 50.0 * 0.05 / (1.2 * 2.0 * 9.81 * 0.2))
    r = run("statics", model, "--input", "u=1.8", "--start", "phi=0.3")
    assert r.returncode == 0, r.stderr
    assert f"{phi:.8f}"[:9] in r.stdout and "extra states: i_m = 1.5" in r.stdout
    r = run("modes", model, "--input", "u=1.8", "--start", "phi=0.3", "--response", "u", "--outputs", "phi,i_m")
    assert r.returncode == 0 and "response i_m / u: peaks at" in r.stdout, r.stderr
    r = run("statics", model, "--start", "psi=1")
    assert r.returncode == 2 and "--start 'psi=1': unknown coordinate `psi`" in r.stderr


def test_modes_of_a_loop_model_in_independent_coordinates_of_ones_choice():
    r = run("modes", MODELS / "double_wishbone.yaml", "--independent", "lower", "--response", "lower")
    assert r.returncode == 0 and "response lower / lower: peaks at" in r.stdout, r.stderr


def test_modes_says_when_the_state_is_not_an_equilibrium_and_checks_names_first():
    """A new user's trial: `--at initial` away from an equilibrium said nothing about it; a typo in
    --response was reported after the whole modes table; a loop model's response took only the
    independent coordinate"""
    r = run("modes", MODELS / "double_pendulum.yaml", "--at", "initial", "-q")
    assert r.returncode == 0 and "not an equilibrium: the accelerations there reach" in r.stdout, r.stderr
    r = run("modes", MODELS / "double_pendulum.yaml", "-q")
    assert r.returncode == 0 and "not an equilibrium" not in r.stdout and " -0 " not in r.stdout
    r = run("modes", MODELS / "double_pendulum.yaml", "--response", "nowhere", "-q")
    assert r.returncode != 0 and "unknown input(s) 'nowhere'" in r.stderr and "Traceback" not in r.stderr
    assert "modes of" not in r.stdout
    r = run("modes", MODELS / "fourbar.yaml", "--response", "th1", "--outputs", "th1,th3", "-q")
    assert r.returncode == 0 and "response th3 / th1" in r.stdout, r.stderr


def test_modes_about_the_equilibrium_of_a_soft_and_a_stiff_coordinate(tmp_path):
    """A pendulum (4.9 N m/rad) on a carriage on a 400 N/m spring: statics stopped at th = 6.6e-9,
    which modes then called "not an equilibrium", and the response of the carriage showed a
    peak at the pendulum's frequency."""
    from helpers import cart_pendulum
    path = cart_pendulum(tmp_path, start=(0.1, 0.2))
    r = run("statics", path, "--out", tmp_path / "eq.csv", "-q")
    assert r.returncode == 0, r.stderr
    rows = [row.split(",") for row in (tmp_path / "eq.csv").read_text().splitlines()[1:]]
    assert abs(float(rows[0][2]) + 3.0 * 9.81 / 400.0) < 1e-15 and abs(float(rows[1][2])) < 1e-12
    r = run("modes", path, "--response", "x", "-q")
    assert r.returncode == 0, r.stderr
    assert "not an equilibrium" not in r.stdout
    # one peak, at the carriage's own frequency sqrt(k / (M + m)) / (2 pi)
    f = math.sqrt(400.0 / 3.0) / (2 * math.pi)
    assert f"response x / x: peaks at {f:.5g} Hz\n" in r.stdout, r.stdout


def test_undamped_modes_print_zero_damping_and_an_infinite_half_time(tmp_path, monkeypatch, capsys):
    """A double pendulum without dampers and a first-order filter of its angle (an extra state):
    the eigenvalues of A came with real parts of rounding, printed as zeta -1.9e-17 and
    -ln2/beta -1.2e16 s in the table and the plot titles. The pendulum's modes are undamped:
    beta = zeta = log dec = 0 and an infinite half-amplitude time, in the API and the CLI alike;
    the filter's is the real root -1/tau."""
    from dynamica.runtime.analysis import modes
    from dynamica.runtime.cli import main as cli

    from conftest import write_model
    path = write_model(
        tmp_path,
        {
            "name": "pendulum_filter",
            "parameters": {"m1": 1.0, "m2": 0.8, "l1": 1.0, "l2": 0.7, "g": 9.81, "tau": 0.5},
            "gravity": [0, 0, "-g"],
            "inputs": ["u"],
            "states": {"s": {"initial": 0, "der": "(a - s)/tau"}},
            "bodies": [
                {
                    "name": "link1",
                    "parent": "ground",
                    "joint": [{"rotate": "y", "q": "a"}],
                    "mass": "m1",
                    "com": [0, 0, "-l1/2"],
                    "inertia": [0.1, 0.08, 0.03],
                },
                {
                    "name": "link2",
                    "parent": "link1",
                    "joint": [{"translate": "z", "by": "-l1"}, {"rotate": "y", "q": "b"}],
                    "mass": "m2",
                    "com": [0, 0, "-l2/2"],
                    "inertia": [0.05, 0.03, 0.03],
                },
            ],
            "forces": [{"type": "generalized_force", "coordinate": "a", "value": "u"}],
            "initial": {"a": 0.3, "b": -0.2},
        },
        "pendulum_filter.yaml",
    )
    md = dynamica.linearize(dynamica.load(path)).modes()
    swinging = [k for k in range(len(md)) if md.frequencies[k] > 0]
    assert len(swinging) == 2 and md.decay_rates[swinging].tolist() == [0.0, 0.0]
    assert md.damping_ratios[swinging].tolist() == [0.0, 0.0] and md.log_decrements[swinging].tolist() == [0.0, 0.0]
    assert np.all(np.isinf(md.half_amplitude_times[swinging]))
    assert md.eigenvalues[0] == pytest.approx(-2.0, rel=1e-12)       # the filter: -1 / tau
    titles = []
    monkeypatch.setattr(modes, "save_figure", lambda fig, p: titles.extend(ax.get_title() for ax in fig.axes))
    capsys.readouterr()
    assert cli.main(["modes", str(path), "--plot", str(tmp_path / "shapes.png"), "-q"]) == 0
    table = capsys.readouterr().out
    rows = [line.split() for line in table.splitlines() if line.split()[:1] in (["2"], ["3"])]
    assert len(rows) == 2
    for row, k in zip(rows, swinging):
        # f, omega, beta, zeta, log dec, -ln2/beta
        assert row[1] == f"{md.frequencies[k]:.5g}" and row[3:7] == ["0", "0", "0", "inf"], table
    assert [t.endswith("zeta = 0") for t in titles] == [False, True, True], titles
