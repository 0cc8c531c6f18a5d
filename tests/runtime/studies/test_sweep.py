"""Parameter studies (runtime/sweep*.py, docs/sweep.md).

Oracles: `dynamica.simulate` run case by case in this process (the sweep's rows on a real Dask
cluster must equal it to 1e-12); reductions recomputed here from the serial run (explicit
trapezoidal sums); scipy.stats for the sampled marginals; the closed-form Sobol indices of the
Ishigami function; the closed-form derivative of a harmonic oscillator's final position.
The cluster is real: `dask scheduler` and two `dask worker` processes on 127.0.0.1
(tests/dask_cluster.py), each worker with an empty module cache of its own.
"""

from __future__ import annotations

import importlib
import math
import re

import numpy as np
import pandas as pd
import pytest
from dask_cluster import TestCluster

import dynamica
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.studies import cases as sweep_cases
from dynamica.runtime.studies.sweep import read_table, sweep
from dynamica.runtime.studies.worker import SweepSetupError, package, prepared

from conftest import MODELS, write_model
from helpers import max_rel_err

PENDULUM = MODELS / "double_pendulum.yaml"
T_END = 0.5


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with TestCluster(tmp_path_factory.mktemp("dask"), workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def pendulum():
    return dynamica.load(PENDULUM)


def serial_run(model, case: dict, t_end=T_END, **kw):
    """The oracle: dynamica.simulate of one case, its initial values set by hand."""
    params = {k: v for k, v in case.items() if k in model.parameters}
    q0, qd0 = model.initial_state(params)
    for name, value in case.items():
        if name in model.coordinates:
            q0[model.coordinates.index(name)] = value
        elif name.startswith("der("):
            qd0[model.coordinates.index(name[4:-1])] = value
    return dynamica.simulate(model, t_end=t_end, params=params, q0=q0, qd0=qd0, **kw)


def trapezoid_rms(t, x):
    dt = np.diff(t)
    return math.sqrt(float(np.sum(0.5 * (x[1:] ** 2 + x[:-1] ** 2) * dt)) / (t[-1] - t[0]))


def check_rows(model, table, cases, outputs=()):
    """Every ok row equals the serial run of its case: final state, and final/min/max/rms of outputs."""
    for k, case in cases.iterrows():
        row = table.loc[k]
        ref = serial_run(model, case.to_dict())
        assert row["status"] == "ok", row["status"]
        got = row[[*model.coordinates, *(f"der({c})" for c in model.coordinates)]].to_numpy(float)
        assert max_rel_err(got, np.concatenate([ref.q[-1], ref.qd[-1]])) <= 1e-12
        series = ref.series()
        for name in outputs:
            x = series[name]
            want = {name: x[-1], f"min({name})": x.min(), f"max({name})": x.max(),
                    f"rms({name})": trapezoid_rms(ref.t, x)}
            for col, value in want.items():
                assert abs(row[col] - value) <= 1e-12 * max(1.0, abs(value)), col


# ------------------------------------------------------------------ on a real cluster
def test_cluster_rows_equal_serial_runs_and_a_failing_case_is_its_row(cluster, pendulum):
    cases = sweep_cases.grid({"l2": [0.5, 0.7, 0.9], "der(phi2)": [0.0, 1.5]})
    cases["phi1"] = np.linspace(0.2, 0.7, len(cases))
    cases.loc[len(cases)] = {"l2": 0.7, "der(phi2)": 0.0, "phi1": 0.3}
    bad = len(cases)
    cases.loc[bad] = {"l2": float("nan"), "der(phi2)": 0.0, "phi1": 0.3}    # q'' not finite: it fails
    table = sweep(PENDULUM, cases, T_END, outputs=["tip.position[2]", "potential_energy"],
                  scheduler=cluster.address, batch_size=2)
    assert len(table) == len(cases) and list(table.index) == list(range(len(cases)))
    assert list(table.columns[:3]) == ["l2", "der(phi2)(0)", "phi1(0)"]       # inputs, initial values as (0)
    assert table.loc[bad, "status"].startswith("IntegrationError") and "nan" in table.loc[bad, "status"]
    assert np.isnan(table.loc[bad, "phi1"])
    check_rows(pendulum, table, cases.drop(index=bad), ["tip.position[2]", "potential_energy"])
    assert set(table["worker"]) <= set(cluster.client.nthreads())
    # shipped: the workers compiled nothing (their caches were empty and stay so)
    assert not any(c.exists() and any(c.glob("double_pendulum*")) for c in cluster.caches)


def test_modules_built_on_each_worker(cluster, pendulum):
    cases = pd.DataFrame({"m2": [0.6, 1.1, 0.9, 1.3]})
    table = sweep(PENDULUM, cases, T_END, scheduler=cluster.client, modules="build", batch_size=1)
    check_rows(pendulum, table, cases)
    built = [c for c in cluster.caches if any(c.glob("double_pendulum_composite-*"))]
    assert len(built) == len(set(table["worker"]))           # every worker that ran a case compiled it


def test_interrupted_study_keeps_its_rows_and_resumes(cluster, pendulum, tmp_path):
    out = tmp_path / "study.parquet"
    cases = sweep_cases.grid({"l1": [0.8, 1.0, 1.2, 1.4], "g": [9.0, 10.0]})

    def interrupt(done, total):
        if done >= 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        sweep(PENDULUM, cases, T_END, scheduler=cluster.client, out=out, batch_size=1, progress=interrupt)
    partial = out.with_name(out.name + ".partial")
    assert not out.exists() and partial.is_dir()
    kept = pd.concat(pd.read_parquet(p) for p in partial.glob("part-*.parquet"))
    assert 2 <= len(kept) < len(cases)
    with pytest.raises(ValueError, match="differs from this one"):              # another study: refused
        sweep(PENDULUM, cases, 2 * T_END, scheduler=cluster.client, out=out)
    seen = []
    table = sweep(PENDULUM, cases, T_END, scheduler=cluster.client, out=out, batch_size=1,
                  progress=lambda done, total: seen.append(done))
    assert seen[0] == len(kept) and seen[-1] == len(cases)            # only the missing cases ran
    for k in kept.index:                                             # the kept rows, not recomputed
        assert table.loc[k, "wall_time"] == kept.loc[k, "wall_time"]
    check_rows(pendulum, table, cases)
    assert out.exists() and not partial.exists()
    pd.testing.assert_frame_equal(read_table(out), table, check_like=False)


def test_command_line_sweep(cluster, tmp_path, capsys):
    from dynamica.runtime.cli import main as cli
    out = tmp_path / "grid.csv"
    code = cli.main(["sweep", str(PENDULUM), "--grid", "l2=0.5:0.9:3", "--grid", "m2=0.5,1", "--t-end", str(T_END),
                     "--outputs", "potential_energy", "--reduce", "final,max", "--scheduler", cluster.address,
                     "--out", str(out), "--no-progress"])
    assert code == 0
    assert "6 cases" in capsys.readouterr().out
    table = read_table(out)
    assert list(table["l2"]) == [0.5, 0.5, 0.7, 0.7, 0.9, 0.9] and list(table["m2"]) == [0.5, 1.0] * 3
    assert "max(potential_energy)" in table.columns and "min(potential_energy)" not in table.columns


def test_a_killed_worker_loses_no_finished_row(tmp_path, pendulum):
    """SIGKILL one of two workers mid-study: the rows received before stay as they were, the
    rest are run on the other worker, every case completes. Each case waits until both workers have
    started one (a file per worker: a condition, not luck), so the victim always has rows to keep."""
    out = tmp_path / "study.parquet"
    cases = pd.DataFrame({"l2": np.linspace(0.5, 1.0, 40)})
    snapshot = {}
    gate = tmp_path / "gate"
    gate.mkdir()

    def slow(result, case):                       # the hook of extra columns, and time to kill in
        import time

        from distributed import get_worker
        (gate / re.sub(r"\W", "_", get_worker().address)).touch()
        deadline = time.monotonic() + 120
        while len(list(gate.iterdir())) < 2 and time.monotonic() < deadline:     # both workers at a case
            time.sleep(0.01)
        time.sleep(0.1)
        return {"tip_x": float(result.outputs["tip.position"][-1, 0])}

    with TestCluster(tmp_path / "dask", workers=2) as c:
        victim = c.worker_address(1)
        c.client.run(importlib.import_module, "dynamica.runtime.api")    # both start at once

        def kill_when_both_ran(done, total):
            if done >= 4 and not snapshot:
                partial = out.with_name(out.name + ".partial")
                rows = pd.concat(pd.read_parquet(p) for p in partial.glob("part-*.parquet"))
                if victim in set(rows["worker"]):
                    snapshot["rows"] = rows
                    c.kill_worker(1)
        table = sweep(PENDULUM, cases, T_END, scheduler=c.client, out=out, batch_size=1, extra_columns=slow,
                      progress=kill_when_both_ran)
    assert snapshot, "the second worker ran no case before the study ended: nothing was killed"
    before = snapshot["rows"]
    assert len(before) >= 4 and (table["status"] == "ok").all()
    for k in before.index:
        assert table.loc[k, "worker"] == before.loc[k, "worker"]
        assert table.loc[k, "wall_time"] == before.loc[k, "wall_time"]
    assert c.workers[1].poll() is not None                        # it was killed, mid-study
    assert victim in set(table["worker"]) and len(set(table["worker"])) == 2
    assert len(before) < len(cases)
    check_rows(pendulum, table, cases)
    ref = [serial_run(pendulum, {"l2": v}).outputs["tip.position"][-1, 0] for v in cases["l2"]]
    np.testing.assert_allclose(table["tip_x"], ref, rtol=1e-12, atol=1e-12)


def _crash_at_07(result, case):
    import os
    if case["l2"] == 0.7:
        os._exit(3)                               # as a crash in compiled code would: the process dies
    return {}


@pytest.mark.slow
def test_a_case_that_kills_its_workers_is_found_and_reported():
    """Workers under nannies (a LocalCluster) restart; the batch with the crashing case is run
    again one case a task, and only that case's row says it was lost."""
    import dask
    from distributed import Client, LocalCluster
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=":0") as lc, Client(lc) as client:
            cases = pd.DataFrame({"l2": [0.5, 0.6, 0.7, 0.8]})
            table = sweep(PENDULUM, cases, T_END, scheduler=client, batch_size=2, extra_columns=_crash_at_07)
    assert table.loc[2, "status"].startswith("lost:")
    assert (table.drop(index=2)["status"] == "ok").all()


def test_local_dask_cluster(pendulum):
    cases = {"l1": [0.9, 1.1], "m1": [1.0, 2.0]}
    table = sweep(PENDULUM, cases, T_END, scheduler="dask", workers=2)
    assert table.attrs["study"]["workers"] == 2
    check_rows(pendulum, table, sweep_cases.grid(cases))


# ------------------------------------------------------------------ on local worker processes
def _fail_at_07(result, case):
    if case["l2"] == 0.7:
        raise RuntimeError("hook refuses l2 = 0.7")
    return {"nfev": result.nfev}


def _exit_at_07(result, case):
    import os
    if case["l2"] == 0.7:
        os._exit(3)                               # as a crash in compiled code would: the process dies
    return {}


def _rows(table):
    return table.drop(columns=["wall_time", "worker"])


def test_processes_rows_equal_serial_rows_bit_for_bit(pendulum):
    """The same cases (parameters, initial values, one that fails) on two worker processes in
    blocks of 2 and in this process: the same table, bit for bit (the same integrator and
    reductions); the rows also equal dynamica.simulate case by case (check_rows, 1e-12)."""
    cases = sweep_cases.grid({"l2": [0.5, 0.7, 0.9], "der(phi2)": [0.0, 1.5]})
    cases["phi1"] = np.linspace(0.2, 0.7, len(cases))
    bad = len(cases)
    cases.loc[bad] = {"l2": float("nan"), "der(phi2)": 0.0, "phi1": 0.3}    # q'' not finite: it fails
    outputs = ["tip.position", "potential_energy"]
    table = sweep(pendulum, cases, T_END, outputs=outputs, scheduler="processes", workers=2, batch_size=2)
    serial = sweep(pendulum, cases, T_END, outputs=outputs, scheduler="serial")
    pd.testing.assert_frame_equal(_rows(table), _rows(serial), check_exact=True)
    assert table.attrs["study"]["workers"] == 2
    # (the workers claim the blocks as they free up: one may take them all when the other starts late)
    assert len(set(table["worker"])) <= 2 and all(w.startswith("process ") for w in table["worker"])
    assert table.loc[bad, "status"].startswith("IntegrationError") and "nan" in table.loc[bad, "status"]
    assert np.isnan(table.loc[bad, "l2"]) and table.loc[bad, "phi1(0)"] == 0.3     # the case's inputs in its row
    check_rows(pendulum, table, cases.drop(index=bad), ["tip.position[0]", "tip.position[2]", "potential_energy"])


def test_processes_are_the_default_and_a_case_that_raises_is_its_row(pendulum):
    cases = pd.DataFrame({"l2": [0.5, 0.6, 0.7, 0.8]})
    table = sweep(pendulum, cases, T_END, workers=2, batch_size=3, extra_columns=_fail_at_07)
    serial = sweep(pendulum, cases, T_END, scheduler="serial", extra_columns=_fail_at_07)
    pd.testing.assert_frame_equal(_rows(table), _rows(serial), check_exact=True)
    assert table.loc[2, "status"] == "RuntimeError: hook refuses l2 = 0.7" and table.loc[2, "l2"] == 0.7
    assert np.isnan(table.loc[2, "phi1"]) and (table.drop(index=2)["status"] == "ok").all()
    assert all(w.startswith("process ") for w in table["worker"])


def test_the_pool_of_platforms_that_spawn_gives_the_same_rows(pendulum, monkeypatch):
    """Where processes are not forked (macOS, Windows) a pool of processes that prepare the
    model from the package runs the blocks (here with the start method this platform has): the
    rows are the serial ones, a failing case is its row."""
    from dynamica.runtime.studies import sweep as sweep_module
    monkeypatch.setitem(sweep_module.SCHEDULERS, "processes", sweep_module.ProcessExecutor)
    cases = pd.DataFrame({"l2": [0.5, 0.6, float("nan"), 0.8]})
    table = sweep(pendulum, cases, T_END, outputs=["potential_energy"], workers=2, batch_size=2)
    serial = sweep(pendulum, cases, T_END, outputs=["potential_energy"], scheduler="serial")
    pd.testing.assert_frame_equal(_rows(table), _rows(serial), check_exact=True)
    assert table.loc[2, "status"].startswith("IntegrationError")
    assert all(w.startswith("process ") for w in table["worker"])


def _mapped_blocks() -> int:
    """glibc's count of the blocks malloc mapped on their own (mallinfo2().hblks)."""
    import ctypes

    class Info(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                         "fsmblks", "uordblks", "fordblks", "keepcost")]
    mallinfo2 = ctypes.CDLL(None).mallinfo2
    mallinfo2.restype = Info
    return int(mallinfo2().hblks)


def test_a_forked_worker_keeps_the_memory_it_frees(pendulum, monkeypatch, tmp_path):
    """Each forked worker has its allocator keep what it frees (pool.keep_heap): after it, a
    24 MB block (under glibc's 32 MB ceiling) comes from the heap, not from a mapping of its own
    that a free would give back (mallinfo2's count of mapped blocks is unchanged); the rows are
    the serial ones."""
    import multiprocessing
    import os
    import platform

    from dynamica.runtime.studies import pool
    if platform.libc_ver()[0] != "glibc" or not hasattr(os, "fork"):
        pytest.skip("glibc's allocator and fork")
    try:
        _mapped_blocks()
    except AttributeError:
        pytest.skip("glibc without mallinfo2 (before 2.33)")
    keep_heap = pool.keep_heap

    def checked():
        kept = keep_heap()
        before = _mapped_blocks()
        block = np.empty(3 << 20)                   # 24 MB
        block[:] = 1.0
        (tmp_path / str(os.getpid())).write_text(f"{kept} {_mapped_blocks() - before}")
        del block
        return kept

    monkeypatch.setattr(pool, "keep_heap", checked)
    cases = pd.DataFrame({"l2": np.linspace(0.5, 1.0, 6)})
    table = sweep(pendulum, cases, T_END, outputs=["potential_energy"], workers=2, batch_size=1)
    serial = sweep(pendulum, cases, T_END, outputs=["potential_energy"], scheduler="serial")
    pd.testing.assert_frame_equal(_rows(table), _rows(serial), check_exact=True)
    # a worker started late may find every block claimed and still be writing its report when
    # the study returns (it was seen on a loaded 2-core machine): wait for both to exit
    for proc in multiprocessing.active_children():
        proc.join(timeout=30)
    reports = [f.read_text() for f in tmp_path.iterdir()]
    assert len(reports) == 2 and all(r == "True 0" for r in reports), reports


def _unpicklable_column(result, case):
    import threading
    return {"lock": threading.Lock()}


def test_a_hook_whose_columns_cannot_come_back_is_one_error(pendulum):
    """Extra columns travel back from a worker process by pickle: a value that cannot stops the
    study with one error naming why (no hang, no traceback from the worker)."""
    with pytest.raises(dynamica.DynamicaError, match=r"failed in a worker process: TypeError: cannot pickle"):
        sweep(pendulum, {"l2": [0.5, 0.6]}, T_END, workers=1, extra_columns=_unpicklable_column)


#: the folder where the cases of test_a_worker_held_up_... mark that they ran (set by the test
#: before the study: the forked workers inherit it)
_HELD_GATE = None


def _held_at_05(result, case):
    """Case 0 (l2 = 0.5) holds its worker 1 s and then until every other case has run (a file per
    case in the gate: a condition, not a race against the other worker on a loaded machine)."""
    import time
    if case["l2"] != 0.5:
        (_HELD_GATE / f"{case['l2']:.9f}").touch()
        return {}
    time.sleep(1.0)
    deadline = time.monotonic() + 30
    while len(list(_HELD_GATE.iterdir())) < 11 and time.monotonic() < deadline:
        time.sleep(0.01)
    return {}


def test_a_worker_held_up_leaves_the_other_blocks_to_the_other_worker(pendulum, monkeypatch, tmp_path):
    """Blocks go to whichever worker is free: while one worker is held on case 0 (1 s, then until
    the 11 others have run), the other runs every other case (blocks of one case); the rows are the
    serial ones. Blocks dealt out in advance would leave some to the held worker: they would run
    after the hold's 30 s limit, on the held worker, and the count below would fail."""
    (tmp_path / "gate").mkdir()
    monkeypatch.setitem(globals(), "_HELD_GATE", tmp_path / "gate")
    cases = pd.DataFrame({"l2": np.linspace(0.5, 1.0, 12)})
    table = sweep(pendulum, cases, T_END, workers=2, batch_size=1, extra_columns=_held_at_05)
    serial = sweep(pendulum, cases, T_END, scheduler="serial")
    pd.testing.assert_frame_equal(_rows(table), _rows(serial), check_exact=True)
    held_up = table.loc[0, "worker"]
    assert held_up.startswith("process ") and table.loc[0, "wall_time"] >= 1.0
    assert (table["worker"] != held_up).sum() == len(cases) - 1


def test_a_dying_worker_process_stops_the_study_naming_the_cases(pendulum, tmp_path):
    """A worker process that dies (os._exit in the hook) ends the study at once with an error
    naming the unfinished cases (no hang: a 60 s guard aborts the test run otherwise); the rows
    already received are kept in the output file, and no worker process is left behind."""
    import faulthandler
    import multiprocessing
    before = set(multiprocessing.active_children())
    cases = pd.DataFrame({"l2": [0.5, 0.6, 0.7, 0.8]})
    faulthandler.dump_traceback_later(60, exit=True)
    try:
        with pytest.raises(dynamica.DynamicaError, match=r"worker process of the study died") as err:
            sweep(pendulum, cases, T_END, scheduler="processes", workers=1, batch_size=1, extra_columns=_exit_at_07,
                  out=tmp_path / "study.parquet")
    finally:
        faulthandler.cancel_dump_traceback_later()
    # the cases named unfinished (a finished case's row may not have arrived when the pool broke)
    first, last = map(int, re.search(r"while cases (\d+)-(\d+) were unfinished", str(err.value)).groups())
    assert first <= 2 and last == 3
    kept = pd.concat([pd.read_parquet(f) for f in (tmp_path / "study.parquet.partial").glob("part-*.parquet")])
    assert sorted(kept.index) == list(range(first)) and (kept["status"] == "ok").all()
    assert not set(multiprocessing.active_children()) - before


def test_ctrl_c_stops_the_worker_processes(pendulum):
    import multiprocessing
    before = set(multiprocessing.active_children())

    def interrupt(done, total):
        if done >= 2:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        sweep(pendulum, pd.DataFrame({"l2": np.linspace(0.5, 1.0, 40)}), T_END, scheduler="processes", workers=2,
              batch_size=1, progress=interrupt)
    assert not set(multiprocessing.active_children()) - before


def test_processes_need_a_picklable_hook_and_a_known_scheduler(pendulum):
    with pytest.raises(ValueError, match="extra_columns must be a function defined at the top level"):
        sweep(pendulum, {"l2": [1.0]}, T_END, scheduler="processes", workers=1, extra_columns=lambda r, c: {})
    with pytest.raises(ValueError, match="unknown scheduler 'proceses': one of 'processes', 'serial', 'dask'"):
        sweep(pendulum, {"l2": [1.0]}, T_END, scheduler="proceses")


# ------------------------------------------------------------------ in this process
def test_serial_trajectories_and_hook(pendulum, tmp_path):
    cases = pd.DataFrame({"phi2": [0.1, -0.3], "der(phi1)": [0.0, 0.5]})
    table = sweep(pendulum, cases, T_END, outputs=["tip.position"], scheduler="serial", trajectories=tmp_path / "runs",
                  reductions=("final",), extra_columns=lambda result, case: {"nfev": result.nfev})
    check_rows(pendulum, table, cases)
    for k, case in cases.iterrows():
        ref = serial_run(pendulum, case.to_dict())
        traj = pd.read_parquet(tmp_path / "runs" / f"case-{k:06d}.parquet")
        np.testing.assert_array_equal(traj["t"], ref.t)
        np.testing.assert_array_equal(traj["der(phi2)"], ref.qd[:, 1])
        np.testing.assert_array_equal(traj["tip.position[2]"], ref.outputs["tip.position"][:, 2])
        assert table.loc[k, "tip.position[1]"] == ref.outputs["tip.position"][-1, 1]
        assert table.loc[k, "nfev"] == ref.nfev
    assert list(table.columns[-3:]) == ["wall_time", "worker", "status"]


def test_bad_studies_are_one_clear_error(pendulum):
    with pytest.raises(ValueError, match=r"'L2'.*parameters are m1, m2, l1, l2, r_rod, g.*der\(coordinate\)"):
        sweep(pendulum, {"L2": [1.0]}, T_END, scheduler="serial")
    with pytest.raises(ValueError, match=r"unknown output\(s\) 'tip\.speed'.*tip\.position\[0\.\.2\]"):
        sweep(pendulum, {"l2": [1.0]}, T_END, outputs=["tip.speed"], scheduler="serial")
    with pytest.raises(ValueError, match="unknown reduction"):
        sweep(pendulum, {"l2": [1.0]}, T_END, outputs=["phi1"], reductions=("median",), scheduler="serial")
    with pytest.raises(ValueError, match="not numeric"):
        sweep(pendulum, pd.DataFrame({"l2": ["long"]}), T_END, scheduler="serial")
    with pytest.raises(dynamica.DynamicaError, match="cannot reach the Dask scheduler"):
        sweep(pendulum, {"l2": [1.0]}, T_END, scheduler="tcp://127.0.0.1:1", timeout=2)


def test_a_worker_of_another_platform_is_refused(pendulum):
    import dataclasses
    pkg = dataclasses.replace(package(pendulum, "ship"), key="0" * 64, abi=".cpython-27-sparc.so SunOS sparc")
    with pytest.raises(SweepSetupError, match="modules='build'"):
        prepared(pkg)


def test_command_line_errors(capsys):
    from dynamica.runtime.cli import main as cli
    for argv, message in ((["--dist", "l2=normal(1,0.1)"], "--dist needs --samples"),
                          (["--samples", "4"], "--samples needs the distributions"),
                          (["--grid", "l2=1,2", "--samples", "3"], "--samples 3: the grid has 2 cases"),
                          (["--samples", "4", "--dist", "l2=gauss(1,0.1)"], "expected one of normal(mu, sigma)"),
                          (["--grid", "l2=1:2"], "NAME=start:stop:count"),
                          ([], "no cases")):
        assert cli.main(["sweep", str(PENDULUM), "--scheduler", "serial", *argv]) == 2
        assert message in capsys.readouterr().err


def test_samples_of_a_grid_on_the_command_line():
    """The contract's line `dynamica sweep MODEL --grid k=1,2,3 [--samples N] ...`: N of the grid's
    cases, drawn without replacement"""
    import argparse

    from dynamica.runtime.cli.sweep import _cases
    args = argparse.Namespace(grid=["a=1,2,3", "b=10,20"], dist=None, samples=4, design="sobol", seed=3, cases=None)
    table = _cases(args)
    full = sweep_cases.grid({"a": [1.0, 2.0, 3.0], "b": [10.0, 20.0]})
    rows = {tuple(r) for r in table.values.tolist()}
    assert len(table) == 4 and len(rows) == 4 and rows <= {tuple(r) for r in full.values.tolist()}
    assert _cases(args).equals(table)                       # the same draw for the same seed


# ------------------------------------------------------------------ cases
def test_grid_is_every_combination_first_axis_slowest():
    g = sweep_cases.grid({"a": [1, 2], "b": sweep_cases.parse_grid("b=0.5:1.0:3")[1]})
    assert g.values.tolist() == [[1, 0.5], [1, 0.75], [1, 1.0], [2, 0.5], [2, 0.75], [2, 1.0]]
    assert sweep_cases.parse_grid("k=1,2,3")[1].tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("design", ["sobol", "lhs", "halton", "random"])
def test_samples_follow_their_distributions(design):
    from scipy import stats

    s = sweep_cases.sample(
        {"k": "normal(2, 0.1)", "c": "uniform(1, 3)", "r": "lognormal(0, 0.5)"}, 1024, design, seed=3
    )
    for col, dist in (("k", stats.norm(2, 0.1)), ("c", stats.uniform(1, 2)), ("r", stats.lognorm(0.5))):
        assert stats.kstest(s[col], dist.cdf).pvalue > 0.01, (design, col)
    if design == "lhs":                           # one point in each of the n equal-probability strata
        strata = np.floor(stats.norm(2, 0.1).cdf(s["k"]) * len(s)).astype(int)
        assert sorted(strata) == list(range(len(s)))


def test_vector_parameter_components_are_inputs(tmp_path):
    path = write_model(tmp_path, {
        "name": "vec", "parameters": {"r": [0.3, 0.0, -0.5], "m": 1.0, "g": 9.81}, "gravity": [0, 0, "-g"],
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "x", "q": "a"}], "mass": "m",
                    "com": ["r[0]", "r[1]", "r[2]"], "inertia": [0.01, 0.01, 0.01]}],
        "initial": {"a": 0.3}})
    model = dynamica.load(path)
    table = sweep(model, {"r[2]": [-0.5, -1.0]}, 0.3, scheduler="serial")
    for k, z in enumerate([-0.5, -1.0]):
        ref = dynamica.simulate(model, t_end=0.3, params={"r": (0.3, 0.0, z)})
        assert max_rel_err(table.loc[k, ["a", "der(a)"]].to_numpy(float), [ref.q[-1, 0], ref.qd[-1, 0]]) <= 1e-12


def test_initial_values_follow_the_parameters_they_depend_on(tmp_path):
    """Initial values that depend on no parameter are evaluated once per model (a sweep's cases
    reuse them); those that do are evaluated at each case's parameters. Oracle: the model file's
    expressions by hand (a = m / 4, der(a) = 0.5)."""
    body = {"name": "b", "parent": "ground", "joint": [{"rotate": "x", "q": "a"}], "mass": "m", "com": [0, 0, -0.5],
            "inertia": [0.01, 0.01, 0.01]}
    varying = dynamica.load(write_model(tmp_path, {"name": "var", "parameters": {"m": 1.0}, "bodies": [body],
                                                   "initial": {"a": "m / 4", "der(a)": 0.5}}, "var.yaml"))
    for m in (2.0, 1.0, 4.0):
        q0, qd0 = varying.initial_state({"m": m})
        assert (q0[0], qd0[0]) == (m / 4, 0.5)
    fixed = dynamica.load(write_model(tmp_path, {"name": "fix", "parameters": {"m": 1.0}, "bodies": [body],
                                                 "initial": {"a": 0.3}}, "fix.yaml"))
    q0, _ = fixed.initial_state({"m": 2.0})
    q0[0] = 99.0                                  # the caller's copy: the next case is not touched
    assert fixed.initial_state({"m": 5.0})[0][0] == 0.3 and fixed.initial_state()[0][0] == 0.3
    table = sweep(varying, {"m": [2.0, 4.0]}, 0.2, scheduler="processes", workers=2, batch_size=1)
    for k, m in enumerate([2.0, 4.0]):
        ref = dynamica.simulate(varying, t_end=0.2, params={"m": m}, q0=[m / 4], qd0=[0.5])
        assert (table.loc[k, "a"], table.loc[k, "der(a)"]) == (ref.q[-1, 0], ref.qd[-1, 0])


# ------------------------------------------------------------------ sensitivity
ISHIGAMI_A, ISHIGAMI_B = 7.0, 0.1


def ishigami_indices():
    """Closed form (Ishigami & Homma 1990; Sobol & Levitan 1999): S1 and ST of x1, x2, x3."""
    a, b, pi = ISHIGAMI_A, ISHIGAMI_B, math.pi
    v1 = 0.5 * (1 + b * pi ** 4 / 5) ** 2
    v2 = a ** 2 / 8
    v13 = b ** 2 * pi ** 8 * (1 / 18 - 1 / 50)
    v = v1 + v2 + v13
    return np.array([v1 / v, v2 / v, 0.0]), np.array([(v1 + v13) / v, v2 / v, v13 / v])


def test_sobol_indices_of_ishigami_within_sampling_error():
    from dynamica.runtime.studies.sensitivity import sobol_design, sobol_indices
    design = sobol_design({f"x{i}": f"uniform({-math.pi}, {math.pi})" for i in (1, 2, 3)}, 2 ** 13, seed=7)
    assert len(design) == 2 ** 13 * 5
    x1, x2, x3 = (design[f"x{i}"].to_numpy() for i in (1, 2, 3))
    y = np.sin(x1) + ISHIGAMI_A * np.sin(x2) ** 2 + ISHIGAMI_B * x3 ** 4 * np.sin(x1)
    si = sobol_indices(pd.DataFrame({"y": y}), ["x1", "x2", "x3"]).loc["y"]
    s1, st = ishigami_indices()
    for j, name in enumerate(["x1", "x2", "x3"]):
        assert si.loc[name, "S1_conf"] < 0.05 and si.loc[name, "ST_conf"] < 0.05
        assert abs(si.loc[name, "S1"] - s1[j]) <= 2 * si.loc[name, "S1_conf"], name
        assert abs(si.loc[name, "ST"] - st[j]) <= 2 * si.loc[name, "ST_conf"], name


def test_sobol_of_a_model_output_through_the_sweep(tmp_path):
    """The Ishigami function as an output expression of a model's parameters: the design goes
    through sweep, the indices come out of the table."""
    path = write_model(tmp_path, {
        "name": "ishigami", "parameters": {"x1": 0.0, "x2": 0.0, "x3": 0.0},
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "s"}], "mass": 1.0,
                    "com": [0, 0, 0], "inertia": [1, 1, 1]}],
        "outputs": {"expressions": {"y": f"sin(x1) + {ISHIGAMI_A}*sin(x2)**2 + {ISHIGAMI_B}*x3**4*sin(x1)"}}})
    pi = f"uniform({-math.pi}, {math.pi})"
    with pytest.warns(DynamicaWarning, match=r"output\(s\) s, der\(s\) do not vary"):
        indices, table = dynamica.sobol(path, {"x1": pi, "x2": pi, "x3": pi}, 2 ** 9, t_end=1e-3, outputs=["y"],
                                        scheduler="serial", reductions=("final",), seed=5)
    assert len(table) == 2 ** 9 * 5 and (table["status"] == "ok").all()
    s1, st = ishigami_indices()
    got = indices.loc["y"]
    for j, name in enumerate(["x1", "x2", "x3"]):
        assert abs(got.loc[name, "S1"] - s1[j]) <= 2.5 * got.loc[name, "S1_conf"] + 0.01, name
        assert abs(got.loc[name, "ST"] - st[j]) <= 2.5 * got.loc[name, "ST_conf"] + 0.01, name
    # the coordinate s stays 0 in every case: no indices (0/0), said, never NaN or 0 in the table
    assert indices.attrs["constant"] == ["s", "der(s)"] and "s" not in indices.index.get_level_values(0)
    assert np.isfinite(indices.to_numpy()).all()


def test_local_derivatives_of_an_oscillator_match_the_closed_form(tmp_path):
    """x(t) = x0 cos(w t), w = sqrt(k/m): dx/dk = -x0 t sin(w t) / (2 sqrt(k m)), dx/dx0 = cos(w t)."""
    path = write_model(tmp_path, {
        "name": "oscillator", "parameters": {"k": 40.0, "m": 2.0},
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}], "mass": "m",
                    "com": [0, 0, 0], "inertia": [1, 1, 1]}],
        "forces": [{"type": "joint_spring_damper", "coordinate": "x", "stiffness": "k"}],
        "initial": {"x": 0.1}})
    t, k, m, x0 = 1.3, 40.0, 2.0, 0.1
    d = dynamica.local_derivatives(path, ["k", "x"], t_end=t, scheduler="serial", rtol=1e-13, atol=1e-15)
    w = math.sqrt(k / m)
    assert d.loc["x", "k"] == pytest.approx(-x0 * t * math.sin(w * t) / (2 * math.sqrt(k * m)), rel=1e-6)
    assert d.loc["x", "x"] == pytest.approx(math.cos(w * t), rel=1e-6)
    assert d.loc["der(x)", "x"] == pytest.approx(-w * math.sin(w * t), rel=1e-6)
