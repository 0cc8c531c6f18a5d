"""Parameter studies on local processes or a Dask cluster: `sweep` (docs/sweep.md).

    table = dynamica.sweep("model.yaml", {"l1": [0.8, 1.0], "m2": [0.5, 1.0]}, t_end=1.0)

The client loads (compiles) the model, checks the cases against it, cuts them into blocks
and hands them to an executor (`SCHEDULERS`: local processes or this process; else Dask, one
task per block; runtime/studies/worker.py runs them); rows come
back as batches finish, are kept (runtime/studies/store.py: written at once with `out=`) and
make one table, one row a case, indexed by case number.
"""

from __future__ import annotations

import hashlib
import logging
import math
import os
import sys
import time

from dynamica.errors import DynamicaError
from dynamica.runtime.studies import cases as sweep_cases
from dynamica.runtime.studies.cases import grid, sample
from dynamica.runtime.studies.pool import ForkedWorkers, check_picklable, cores, worker_died
from dynamica.runtime.studies.store import FileStore, MemoryStore, TrajectoryWriter, read_table
from dynamica.runtime.studies.worker import (
    LOST,
    OK,
    REDUCTIONS,
    Block,
    RunSettings,
    SweepSetupError,
    adopt,
    keep,
    package,
    process_block,
    result_columns,
    run_batch,
    run_block,
    start_process,
)

__all__ = ["sweep", "grid", "sample", "read_table", "SweepSetupError", "REDUCTIONS"]

#: batches per worker thread when the batch size is chosen: enough for load balance, a fine
#: progress bar and little lost work per failed worker; few enough that the ~2 ms a Dask task
#: costs stays small against the cases of a batch
TASKS_PER_SLOT = 16
#: largest batch chosen automatically (cases)
MAX_BATCH = 100
#: smallest batch chosen automatically for an executor whose batches cost little each (`guided`):
#: the last ones, so that the workers finish within a few cases of each other
MIN_GUIDED_BATCH = 8


# ------------------------------------------------------------------ where the batches run
class SerialExecutor:
    """Every block of cases in this process, one after the other (`scheduler="serial"`)."""

    slots = 1

    def __init__(self, model, pkg, workers, timeout):
        from dynamica.runtime.studies.worker import warm_up
        self.model = model
        warm_up(model)

    def run(self, pkg, blocks, roles, settings, on_batch):
        for numbers, values, names in blocks:
            on_batch(run_block(self.model, numbers, values, names, roles, settings))

    def close(self):
        pass


class ProcessExecutor:
    """Blocks of cases on a pool of local worker processes (`scheduler="processes"` where the
    platform does not fork, macOS and Windows; `pool.ForkedWorkers` where it does): each process
    prepares the model once from the shipped package; a block travels as two arrays (case
    numbers, input values) and comes back as arrays (`worker.Block`)."""

    def __init__(self, model, pkg, workers, timeout):
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        from dynamica.runtime.studies.worker import warm_up
        self.slots = int(workers or cores())
        if self.slots < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        warm_up(model)
        adopt(pkg, model)                        # a forked worker has the model already
        method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
        before = set(multiprocessing.active_children())
        self.pool = ProcessPoolExecutor(self.slots, mp_context=multiprocessing.get_context(method),
                                        initializer=start_process, initargs=(pkg,))
        self.before = before

    def _workers(self):
        import multiprocessing
        return [p for p in multiprocessing.active_children() if p not in self.before]

    def run(self, pkg, blocks, roles, settings, on_batch):
        from concurrent.futures import FIRST_COMPLETED, wait
        from concurrent.futures.process import BrokenProcessPool
        check_picklable(settings)
        pending = {self.pool.submit(process_block, pkg.key, numbers, values, names, roles, settings): numbers
                   for numbers, values, names in blocks}
        finished = False
        try:
            while pending:
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for f in done:
                    numbers = pending.pop(f)
                    try:
                        block = f.result()
                    except BrokenProcessPool:
                        raise worker_died(n for nums in [numbers, *pending.values()] for n in nums) from None
                    except SweepSetupError:
                        raise
                    except Exception as exc:     # not a case's error (those are rows)
                        raise DynamicaError(f"a block of the study failed in a worker process: "
                                            f"{type(exc).__name__}: {exc}") from exc
                    on_batch(block)
            finished = True
        finally:
            if not finished:                     # Ctrl-C, a lost worker, an error: stop now, run nothing more
                for f in pending:
                    f.cancel()
                for proc in self._workers():
                    proc.terminate()

    def close(self):
        self.pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor:
    """Batches as Dask tasks: on a LocalCluster of this machine (scheduler None: "dask"), the
    scheduler at an address ("tcp://host:8786") or through a `distributed.Client`."""

    def __init__(self, scheduler, workers=None, timeout=60.0):
        self.cluster = None
        self.client = self._connect(scheduler, workers, timeout)
        self.own = not _is_client(scheduler)
        try:
            self.client.wait_for_workers(1, timeout=timeout)
        except Exception as exc:                     # TimeoutError, or the scheduler went away
            self.close()
            raise DynamicaError(f"no Dask worker joined the scheduler {self.client.scheduler.address} within "
                                f"{timeout:g} s ({type(exc).__name__}): start workers with "
                                f"`dask worker {self.client.scheduler.address}`") from None
        self.slots = max(1, sum(self.client.nthreads().values()))

    def _connect(self, scheduler, workers, timeout):
        from distributed import Client, LocalCluster
        if _is_client(scheduler):
            return scheduler
        if scheduler is None:
            try:
                self.cluster = LocalCluster(n_workers=workers or cores(), threads_per_worker=1, processes=True,
                                            dashboard_address=":0", silence_logs=logging.ERROR)
            except Exception as exc:
                raise DynamicaError(f"cannot start a local Dask cluster ({type(exc).__name__}: {exc}); a script that "
                                    "calls dynamica.sweep must run it under `if __name__ == \"__main__\":` "
                                    "(the workers are new processes that import the script)") from None
            return Client(self.cluster)
        try:
            return Client(str(scheduler), timeout=timeout)
        except Exception as exc:                     # OSError, TimeoutError: nothing answers there
            raise DynamicaError(f"cannot reach the Dask scheduler at {scheduler} within {timeout:g} s "
                                f"({type(exc).__name__}: {exc})") from None

    def run(self, pkg, blocks, roles, settings, on_batch):
        from distributed import as_completed
        batches = [[(int(n), dict(zip(names, v))) for n, v in zip(numbers.tolist(), values.tolist())]
                   for numbers, values, names in blocks]
        from distributed.scheduler import KilledWorker
        # the package as a task's result, not scattered data: when every worker holding it dies,
        # the scheduler computes it again (scattered data would be lost, and the study with it)
        shipped = self.client.submit(keep, pkg, pure=False, key=f"dynamica-model-{pkg.key[:16]}-{os.urandom(6).hex()}")
        pending, suspects, suspect_running = {}, [], [False]

        def submit(batch, suspect=False):
            f = self.client.submit(run_batch, shipped, batch, roles, settings, pure=False,
                                   key=f"dynamica-sweep-{batch[0][0]}-{os.urandom(6).hex()}")
            pending[f] = (batch, suspect)
            return f

        def next_suspect():
            # the cases of a batch whose workers died run one task at a time, so that a case that
            # kills workers never shares a death with another suspect (which would lose it too)
            if suspects and not suspect_running[0]:
                suspect_running[0] = True
                done.add(submit([suspects.pop(0)], suspect=True))
        done = as_completed([submit(b) for b in batches])
        try:
            for f in done:
                batch, suspect = pending.pop(f)
                if suspect:
                    suspect_running[0] = False
                try:
                    rows = f.result()
                except KilledWorker as exc:
                    if len(batch) > 1:               # find the case that kills workers: one task each
                        suspects.extend(batch)
                        next_suspect()
                        continue
                    rows = [(batch[0][0], {"status": f"{LOST} every worker that ran it died ({exc})"}, None)]
                except SweepSetupError:
                    raise
                except Exception as exc:             # not a case's error (those are rows): the cluster's
                    raise DynamicaError(f"a task of the study failed on the cluster: {type(exc).__name__}: "
                                        f"{exc}") from exc
                f.release()
                on_batch(rows)
                next_suspect()
        finally:
            for f in pending:
                f.cancel()
            shipped.release()

    def close(self):
        if self.own:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _is_client(scheduler) -> bool:
    from distributed import Client
    return isinstance(scheduler, Client)


def local_processes(model, pkg, workers, timeout):
    """Worker processes forked from this one where the platform forks (the model, the cases and
    the plan of their runs inherited, the rows back through shared memory), else a pool of
    spawned processes that import the shipped module."""
    import multiprocessing
    if "fork" in multiprocessing.get_all_start_methods():
        return ForkedWorkers(model, pkg, workers, timeout)
    return ProcessExecutor(model, pkg, workers, timeout)


#: scheduler name -> executor of the blocks on this machine (anything else is Dask's: an address,
#: a distributed.Client, or "dask" for a LocalCluster)
SCHEDULERS = {"processes": local_processes, "serial": SerialExecutor}
#: where a study runs when no scheduler is given
DEFAULT_SCHEDULER = "processes"


def _executor(scheduler, model, pkg, workers, timeout):
    if scheduler is None:
        scheduler = DEFAULT_SCHEDULER
    if isinstance(scheduler, str) and scheduler in SCHEDULERS:
        return SCHEDULERS[scheduler](model, pkg, workers, timeout)
    if isinstance(scheduler, str) and scheduler == "dask":
        return DaskExecutor(None, workers, timeout)
    if isinstance(scheduler, str) and ":" not in scheduler:
        raise ValueError(f"unknown scheduler {scheduler!r}: one of {', '.join(map(repr, SCHEDULERS))}, 'dask' (a "
                         f"local Dask cluster) or the address of a Dask scheduler such as 'tcp://host:8786'")
    if not (isinstance(scheduler, str) or _is_client(scheduler)):
        raise TypeError(f"scheduler must be None (local worker processes), one of {', '.join(map(repr, SCHEDULERS))}, "
                        f"'dask' (a local Dask cluster), an address such as 'tcp://host:8786' or a "
                        f"distributed.Client, not {type(scheduler).__name__}")
    return DaskExecutor(scheduler, workers, timeout)


# ------------------------------------------------------------------ progress
class CaseBar:
    """Completed cases on one line of stderr."""

    def __init__(self, total, done, enabled, width=30):
        self.total, self.enabled, self.width = total, enabled, width
        self.start, self.first = time.perf_counter(), done
        self.update(done)

    def update(self, done):
        if not self.enabled:
            return
        frac = done / self.total if self.total else 1.0
        k = int(round(frac * self.width))
        dt = time.perf_counter() - self.start
        rate = (done - self.first) / dt if dt > 0 else 0.0
        eta = f"  ETA {(self.total - done) / rate:6.0f} s" if 0 < rate and done < self.total else ""
        print(f"\r[dynamica] sweep [{'#' * k}{'.' * (self.width - k)}] {done}/{self.total} cases  {dt:7.1f} s{eta}",
              end="", file=sys.stderr, flush=True)

    def close(self):
        if self.enabled:
            print(file=sys.stderr, flush=True)


def _progress(progress, total, done):
    """progress: None/False (nothing), True (a bar on stderr) or a callable(done, total)."""
    if callable(progress):
        progress(done, total)
        return (lambda n: progress(n, total)), (lambda: None)
    bar = CaseBar(total, done, bool(progress))
    return bar.update, bar.close


# ------------------------------------------------------------------ the study
def _series(model, outputs) -> tuple:
    """The time series named by `outputs` (model output keys, `key[j]` components, coordinates,
    der(coordinate)), as `SimulationResult.series()` names them."""
    if outputs is None:
        return ()
    if isinstance(outputs, str):
        outputs = [o for o in outputs.split(",") if o.strip()]
    states = [*model.coordinates, *(f"der({c})" for c in model.coordinates)]
    names, unknown = [], []
    layout = dict(model.output_layout) if hasattr(model.module, "outputs") else {}
    for key in (o.strip() for o in outputs):
        shape = layout.get(key)
        if key in states or shape == ():
            names.append(key)
        elif shape is not None:
            names += [f"{key}[{j}]" for j in range(math.prod(shape))]
        elif key.endswith("]") and "[" in key and key[:key.rindex("[")] in layout and \
                key[key.rindex("[") + 1:-1].isdigit() and int(key[key.rindex("[") + 1:-1]) < math.prod(
                    layout[key[:key.rindex("[")]]):
            names.append(key)
        else:
            unknown.append(key)
    if unknown:
        have = [k if s == () else f"{k}[0..{math.prod(s) - 1}]" for k, s in layout.items()]
        raise ValueError(f"unknown output(s) {', '.join(map(repr, unknown))} of model {model.name!r}; available: "
                         f"{', '.join([*states, *have])}")
    return tuple(dict.fromkeys(names))


def _fingerprint(model, table, settings) -> dict:
    """What makes two runs the same study (`FileStore` resumes only the same one)."""
    from dynamica.build import tool_fingerprint
    from dynamica.version import __version__
    extra = settings.extra_columns
    return {"model": hashlib.sha256(open(model.spec.file, "rb").read()).hexdigest(),
            "module": f"{model.form} {model.module.BACKEND}",
            "dynamica": f"{__version__} {tool_fingerprint()}",
            "cases": hashlib.sha256(table.to_csv().encode()).hexdigest(),
            "settings": repr((settings.t_end, settings.method, settings.rtol, settings.atol, settings.output_step,
                              settings.series, settings.reductions, settings.trajectories,
                              getattr(extra, "__qualname__", repr(extra)) if extra else None))}


def block_sizes(cases: int, slots: int, batch_size, guided: bool) -> list:
    """The number of cases of each block: `batch_size` each when given; else TASKS_PER_SLOT
    blocks a slot (at most MAX_BATCH cases), or, for an executor whose blocks cost little each
    (`guided`), blocks that shrink as the cases left do (guided self-scheduling: a block of the
    cases left / (2 slots), from MAX_BATCH down to the smaller of MIN_GUIDED_BATCH and the fixed
    size), so that the slots finish together."""
    size = int(batch_size) if batch_size else max(1, min(MAX_BATCH, math.ceil(cases / (TASKS_PER_SLOT * slots))))
    if batch_size or not guided:
        return [min(size, cases - k) for k in range(0, cases, size)]
    sizes, left, least = [], cases, min(MIN_GUIDED_BATCH, size)
    while left > 0:
        sizes.append(min(left, max(least, min(MAX_BATCH, math.ceil(left / (2 * slots))))))
        left -= sizes[-1]
    return sizes


def _blocks(todo, table, sizes: list):
    """[(case numbers, input values (one row a case), input names)], `sizes` cases a block."""
    import numpy as np
    numbers = np.asarray(todo, dtype=np.int64)
    values = table.to_numpy(dtype=float)[numbers] if len(table.columns) else np.empty((len(numbers), 0))
    names = list(table.columns)
    bounds = np.cumsum([0, *sizes]).tolist()
    return [(numbers[a:b], values[a:b], names) for a, b in zip(bounds[:-1], bounds[1:])]


def _columns(model, table, roles, settings) -> list:
    inputs = [sweep_cases.input_column(c, roles[c]) for c in table.columns]
    return list(dict.fromkeys([*inputs, *result_columns(model, settings)]))


def _assemble(frames, model, table, roles, settings):
    """One table, one row a case in case order: inputs, final state, reduced outputs, extra
    columns, wall_time, worker, status."""
    import pandas as pd
    if len(frames) == 1:
        rows = frames[0]
    else:
        rows = pd.concat(frames) if frames else pd.DataFrame(index=pd.RangeIndex(0, name="case"))
    if not (rows.index.is_unique and rows.index.is_monotonic_increasing):     # a case run again: its last row
        rows = rows[~rows.index.duplicated(keep="last")].sort_index()
    inputs = table.rename(columns={c: sweep_cases.input_column(c, roles[c]) for c in table.columns})
    fixed = _columns(model, table, roles, settings)
    tail = ["wall_time", "worker", "status"]
    extra = [c for c in rows.columns if c not in fixed and c not in tail]
    rows = rows.drop(columns=[c for c in inputs.columns if c in rows.columns])
    # every case's row, in order (a study run at once): side by side, else joined on the case number
    out = pd.concat([inputs, rows], axis=1) if rows.index.equals(inputs.index) else inputs.join(rows, how="left")
    for c in fixed + extra + tail:
        if c not in out.columns:
            out[c] = float("nan") if c not in ("worker", "status") else ""
    return out[fixed + extra + tail]


def _check_reductions(reductions):
    bad = [r for r in reductions if r not in REDUCTIONS]
    if bad or not reductions:
        raise ValueError(f"unknown reduction(s) {', '.join(map(repr, bad)) or '(none given)'}; "
                         f"available: {', '.join(REDUCTIONS)}")


class _Collector:
    """Takes the rows of each finished batch: Blocks kept until the end when there is no output
    file (one frame at the end), else written to the store as they come; the rows of cases the
    Dask path lost [(case number, row, None)]; trajectories to their writer."""

    def __init__(self, store, writer, tick, done):
        self.store, self.writer, self.tick, self.count = store, writer, tick, done
        self.blocks = []

    def __call__(self, rows):
        import pandas as pd
        if isinstance(rows, Block):
            trajs = zip(rows.numbers.tolist(), rows.trajectories or ())
        else:                                # cases the Dask path lost: [(case number, row, None)]
            trajs = ((n, traj) for n, _, traj in rows)
        if self.writer is not None:
            for n, traj in trajs:
                if traj is not None:
                    self.writer.write(n, traj)
        if isinstance(rows, Block) and not isinstance(self.store, FileStore):
            self.blocks.append(rows)
            self.count += len(rows.numbers)
        else:
            frame = rows.frame() if isinstance(rows, Block) else pd.DataFrame(
                [row for _, row, _ in rows], index=pd.Index([n for n, _, _ in rows], name="case"))
            self.store.add(frame)
            self.count += len(frame)
        self.tick(self.count)

    def finish(self):
        if self.blocks:                      # in case order (blocks are ranges of it; workers finish out of order)
            self.store.add(Block.join(sorted(self.blocks, key=lambda b: int(b.numbers[0]))).frame())


def sweep(model, cases, t_end=None, outputs=None, scheduler=None, *, reductions=("final", "min", "max", "rms"),
          method=None, rtol=None, atol=None, output_step=None, out=None, trajectories=None, resume=True,
          batch_size=None, workers=None, modules="ship", progress=None, extra_columns=None, timeout=60.0,
          form=None, backend="c", mode="symbolic"):
    """Run every case of a study and return its table (pandas DataFrame indexed by case number).

    model: a model file (compiled here once) or a loaded `CompiledModel`. cases: dict name ->
    values (every combination), a DataFrame (one row a case) or a CSV/Parquet file of one; names
    as the model's: parameters (`r[1]` a component of a vector one), coordinates (initial value)
    and `der(coordinate)` (initial rate). t_end: final time (default the model's simulate.t_end).
    outputs: model output keys (a vector key gives `key[j]` per component), coordinates or
    der(coordinate) to reduce over the run by `reductions` (`REDUCTIONS`: "final" as the bare
    name, the others as `min(name)`, ...). scheduler: None or "processes" (a pool of
    `workers` local processes, default one per core), "serial" (this process), "dask" (a local
    Dask cluster of `workers` processes), "tcp://host:port" or a `distributed.Client` (Dask).
    out: Parquet (or .csv) file, written as the study goes so that it resumes (`resume`).
    trajectories: a directory for one Parquet file per case. modules: "ship" or "build"
    (runtime/studies/worker.py). extra_columns(result, case) -> dict: more columns per
    case, computed on the worker. progress: True (a bar on stderr) or callable(done, total).
    """
    from dynamica.runtime.api import load
    from dynamica.runtime.compiled import CompiledModel
    if not isinstance(model, CompiledModel):
        model = load(model, form=form, backend=backend, mode=mode)
    table = sweep_cases.case_table(cases)
    roles = sweep_cases.roles(model, list(table.columns))
    _check_reductions(reductions)
    settings = RunSettings(t_end=float(model.spec.simulate.t_end if t_end is None else t_end), method=method,
                           rtol=rtol, atol=atol, output_step=output_step, series=_series(model, outputs),
                           reductions=tuple(reductions), trajectories=trajectories is not None,
                           extra_columns=extra_columns)
    if not settings.t_end > 0:
        raise ValueError(f"t_end must be positive, not {settings.t_end}")
    store = FileStore(out, _fingerprint(model, table, settings), resume) if out is not None else MemoryStore()
    writer = TrajectoryWriter(trajectories) if trajectories is not None else None
    done = store.done()
    todo = [i for i in range(len(table)) if i not in done]
    start = time.perf_counter()
    slots = 0
    if todo:
        pkg = package(model, modules) if not (isinstance(scheduler, str) and scheduler == "serial") else None
        executor = _executor(scheduler, model, pkg, workers, timeout)
        slots = executor.slots
        sizes = block_sizes(len(todo), slots, batch_size, getattr(executor, "guided", False))
        tick, close = _progress(progress, len(table), len(done))
        collect = _Collector(store, writer, tick, len(done))
        try:
            executor.run(pkg, _blocks(todo, table, sizes), roles, settings, collect)
        finally:
            close()
            executor.close()
            collect.finish()
    result = _assemble(store.frames, model, table, roles, settings)
    result.attrs["study"] = {"inputs": [sweep_cases.input_column(c, roles[c]) for c in table.columns],
                             "cases": len(table), "ran": len(todo), "workers": slots,
                             "seconds": time.perf_counter() - start, "failed": int((result["status"] != OK).sum())}
    return store.finish(result)
