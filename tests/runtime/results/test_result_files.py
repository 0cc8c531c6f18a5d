"""Results files survive interruptions: a file is replaced only by a complete one, a
streamed run that is interrupted or killed leaves a readable prefix in `<file>.partial`, and
`simulate(out=...)` keeps only the last row in memory.

Trajectories are checked against scipy's DOP853 on the closed-form equation of a compound
pendulum, phi'' = -m g l sin(phi) / (J + m l^2), and against its energy.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dynamica
from dynamica.runtime.integrators import simulate as sim_module
from dynamica.runtime.results.result import CsvWriter, SimulationResult

from conftest import write_model
from helpers import PENDULUM, G, J, L, M

K = M * G * L / (J + M * L * L)


def energy(phi, phid):
    """Per unit (J + m l^2): 1/2 phid^2 - K cos(phi), constant along the motion."""
    return 0.5 * phid ** 2 - K * np.cos(phi)


@pytest.fixture(scope="module")
def pendulum(tmp_path_factory):
    path = write_model(tmp_path_factory.mktemp("pendulum"), PENDULUM, "pendulum.yaml")
    return path, dynamica.load(path)


def oracle(t):
    sol = solve_ivp(lambda _, y: [y[1], -K * math.sin(y[0])], (t[0], t[-1]), [0.7, 0.0], method="DOP853",
                    t_eval=t, rtol=1e-12, atol=1e-12)
    return sol.y[0]


def test_streamed_run_keeps_the_last_row_and_writes_every_row(pendulum, tmp_path, monkeypatch):
    _, model = pendulum
    monkeypatch.setattr(sim_module, "STREAM_ROWS", 300)                 # many pieces in a short run
    out = tmp_path / "run.csv"
    res = dynamica.simulate(model, t_end=2.0, output_step=1e-3, out=out)
    assert len(res.t) == 1 and res.info["rows"] == 2001 and res.info["segments"] >= 7
    assert not (tmp_path / "run.csv.partial").exists()
    back = SimulationResult.read_csv(out)
    assert back.info == {} and len(back.t) == 2001
    assert np.allclose(back.t, np.arange(2001) * 1e-3, rtol=0, atol=1e-12)
    assert np.max(np.abs(back.q[:, 0] - oracle(back.t))) < 1e-6          # adams at rtol 1e-8, restarted per piece
    assert back.t[-1] == res.t[0] and back.q[-1, 0] == res.q[0, 0]
    kept = dynamica.simulate(model, t_end=2.0, output_step=1e-3, out=tmp_path / "kept.csv", keep=True)
    assert len(kept.t) == 2001 and np.array_equal(kept.q, back.q)


def test_an_interrupted_run_leaves_the_previous_file_and_a_marked_prefix(pendulum, tmp_path, monkeypatch):
    _, model = pendulum
    monkeypatch.setattr(sim_module, "STREAM_ROWS", 200)
    out = tmp_path / "run.csv"
    out.write_text("previous results\n")
    calls = []

    def stop(res, new):
        calls.append(len(res.t))
        if len(calls) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        dynamica.simulate(model, t_end=2.0, output_step=1e-3, out=out, progress=stop)
    assert out.read_text() == "previous results\n"
    part = SimulationResult.read_csv(tmp_path / "run.csv.partial")
    assert part.info["partial"] and len(part.t) == sum(calls) and len(part.t) > 250
    assert np.max(np.abs(part.q[:, 0] - oracle(part.t))) < 1e-6


def test_whole_file_writes_replace_only_when_complete(tmp_path, monkeypatch):
    res = SimulationResult(t=np.linspace(0, 1, 5), q=np.zeros((5, 1)), qd=np.ones((5, 1)), coordinates=("x",),
                           method="test")
    for name, write in (("r.csv", res.to_csv), ("r.npz", res.to_npz)):
        (tmp_path / name).write_text("previous")
        with monkeypatch.context() as mp:
            mp.setattr(
                CsvWriter, "write", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left on device"))
            )
            mp.setattr(np, "savez", lambda *a, **k: (_ for _ in ()).throw(OSError(28, "No space left on device")))
            with pytest.raises(OSError):
                write(tmp_path / name)
        assert (tmp_path / name).read_text() == "previous"
        assert {p.name for p in tmp_path.iterdir()} <= {"r.csv", "r.npz"}      # no temporary left
        write(tmp_path / name)
    assert np.array_equal(SimulationResult.read_npz(tmp_path / "r.npz").qd, res.qd)
    assert np.array_equal(SimulationResult.read_csv(tmp_path / "r.csv").t, res.t)


def test_read_csv_drops_a_row_cut_by_a_kill(tmp_path):
    res = SimulationResult(t=np.arange(4.0), q=np.arange(4.0)[:, None] / 3, qd=np.ones((4, 1)), coordinates=("x",),
                           method="test")
    res.to_csv(tmp_path / "r.csv")
    text = (tmp_path / "r.csv").read_bytes()
    (tmp_path / "r.csv.partial").write_bytes(text[:-7])                 # the last row cut short
    back = SimulationResult.read_csv(tmp_path / "r.csv.partial")
    assert back.info["partial"] and np.array_equal(back.t, res.t[:3]) and np.array_equal(back.q, res.q[:3])


def test_a_killed_command_line_run_leaves_a_readable_file(pendulum, tmp_path):
    path, _ = pendulum
    out = tmp_path / "run.csv"
    out.write_text("previous results\n")
    cmd = [sys.executable, "-m", "dynamica.runtime.cli.main", "simulate", str(path), "--out", str(out),
           "--t-end", "1000", "--output-step", "0.001", "-q"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    partial, deadline = tmp_path / "run.csv.partial", time.monotonic() + 120
    try:
        while time.monotonic() < deadline and not (partial.exists() and partial.stat().st_size > 1_000_000):
            time.sleep(0.05)
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert out.read_text() == "previous results\n"
    back = SimulationResult.read_csv(partial)
    assert back.info["partial"] and len(back.t) > 10000
    assert np.allclose(np.diff(back.t), 1e-3, rtol=0, atol=1e-9)
    e = energy(back.q[:, 0], back.qd[:, 0])
    assert np.max(np.abs(e - e[0])) < 1e-6 * K


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="peak memory read from /proc (Linux)")
def test_a_million_streamed_rows_stay_in_bounded_memory(pendulum, tmp_path):
    """Peak resident memory (VmHWM: ru_maxrss would include the forking parent's) of 10^6 rows
    streamed to CSV minus that of 10^4 rows: under 20 MB (benchmarks/results/cache.txt)."""
    path, _ = pendulum
    code = ("import sys, dynamica\n"
            "m = dynamica.load(sys.argv[1])\n"
            "n = int(sys.argv[2])\n"
            "r = dynamica.simulate(m, t_end=(n - 1) * 1e-3, output_step=1e-3, out=sys.argv[3])\n"
            "assert r.info['rows'] == n and len(r.t) == 1\n"
            "print(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1])\n")
    peaks = {}
    for n in (10_000, 1_000_000):
        proc = subprocess.run([sys.executable, "-c", code, str(path), str(n), str(tmp_path / f"{n}.csv")],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr
        peaks[n] = int(proc.stdout.split()[-1]) / 1024
    assert peaks[1_000_000] - peaks[10_000] < 20, peaks
    with open(tmp_path / "1000000.csv") as fh:
        assert sum(1 for _ in fh) == 1_000_001
