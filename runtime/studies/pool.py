"""Local worker processes forked from the study's process (`scheduler="processes"` where the
platform forks; docs/sweep.md, "Local worker processes").

The workers are forked at a model's first study, so each starts with the model in its memory,
and are kept for its next studies (`Kept`). A study sends each worker its blocks (the case
numbers and input values) and settings; a worker claims the next block from a counter in memory
shared with this process, runs it and sends the block's values, wall times and the few per-case
objects it has (the statuses of the cases that failed, extra columns, trajectories) as arrays
through its pipe. So this process spends little per case, the blocks balance themselves over the
workers (a worker that is done takes the next), and a study of a model already studied pays no
fork.
"""

from __future__ import annotations

import gc
import os
import signal
import sys
import time

from dynamica.errors import DynamicaError
from dynamica.runtime.studies.worker import OK, Block, result_columns, run_block, warm_up


def cores() -> int:
    """The processor cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def ranges(numbers) -> str:
    """[1, 2, 3, 7] -> '1-3, 7' (at most 8 ranges, then the count of the rest)."""
    spans: list = []
    for n in numbers:
        if spans and n == spans[-1][1] + 1:
            spans[-1][1] = n
        else:
            spans.append([n, n])
    text = [f"{a}-{b}" if b > a else f"{a}" for a, b in spans[:8]]
    return ", ".join(text) + (f" and {len(spans) - 8} more ranges" if len(spans) > 8 else "")


def worker_died(lost) -> DynamicaError:
    """The study's error when a worker process dies: the cases that have no rows."""
    return DynamicaError(
        f"a worker process of the study died (killed, out of memory or a crash in compiled code) while cases "
        f"{ranges(sorted(int(n) for n in lost))} were unfinished: those cases have no rows; the rows received are "
        f"kept (with out=, the same call runs only the missing cases; scheduler='serial' runs a case in this "
        f"process to see its error)")


def check_picklable(settings):
    """The rule of every platform: an `extra_columns` hook reaches spawned worker processes by
    pickle (a forked worker would not need it, but a script must run alike everywhere)."""
    import pickle
    try:
        pickle.dumps(settings)
    except Exception as exc:                 # a lambda or a local function as extra_columns
        raise ValueError(f"extra_columns must be a function defined at the top level of a module for "
                         f"scheduler='processes' (it is sent to the worker processes by pickle: "
                         f"{type(exc).__name__}: {exc}); scheduler='serial' takes any callable") from None


class ForkedWorkers:
    """The blocks of a study on `workers` processes forked from this one (one per core by
    default), kept for the next study of the same model (`Kept`); the blocks' rows come back as
    arrays through the workers' pipes. A block costs a lock and a message: the blocks may shrink
    towards the end (`guided`)."""

    guided = True

    def __init__(self, model, pkg, workers, timeout):
        self.slots = int(workers or cores())
        if self.slots < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.model = model
        self.cpu_seconds = None          # the workers' CPU seconds for the study's cases (as they report them)
        warm_up(model)

    def run(self, pkg, blocks, roles, settings, on_batch):
        check_picklable(settings)
        if not blocks:
            return
        columns = result_columns(self.model, settings)

        def finished(j, name, values, wall, failed, extra, trajectories):
            on_batch(_block(blocks[j][0], columns, values, wall, name, failed, extra, trajectories))
        for attempt in (1, 2):
            kept = Kept.get(self.model, self.slots)
            try:
                self.cpu_seconds = kept.study(blocks, roles, settings, finished)
                return
            except Refused:              # no kept worker could read the study: once more on new workers
                kept.close()
                if attempt == 2:
                    raise DynamicaError("the worker processes of the study could not read its settings") from None
            except BaseException:        # Ctrl-C, a lost worker, an error: stop the workers now, run nothing more
                kept.close()
                raise

    def close(self):
        """Nothing to wait for: the workers stay for the next study (`Kept`)."""


class Refused(Exception):
    """No kept worker could read a study (its hook was defined after they were forked, say)."""


class Kept:
    """Worker processes forked for a model and kept for its next study: forking them and each
    one's first case (its plan of the runs, the pages it touches) cost about 25 ms a study on 2
    workers (bench_sweep.py, "workers' start"), as much as 200 one-second double-pendulum cases.
    One set is kept, the last one made (another model, or another number of workers, closes it);
    they exit with this process (daemon processes; a worker also exits when its pipe closes)."""

    last: Kept | None = None
    parent_ends: list = []               # this process's ends of every kept worker's pipe (closed in new workers)

    @classmethod
    def get(cls, model, slots: int) -> Kept:
        kept = cls.last
        if kept is not None and kept.serves(model, slots):
            return kept
        if kept is not None:
            kept.close()
        cls.last = Kept(model, slots)
        return cls.last

    def __init__(self, model, slots: int):
        import multiprocessing
        import weakref
        ctx = multiprocessing.get_context("fork")
        self.model, self.slots, self.token = weakref.ref(model), slots, model.runtime_state()
        self.counter = ctx.Value("q", 0)             # the next block to claim, in memory shared with the workers
        self.procs: dict = {}                        # this process's end of a worker's pipe -> the worker
        self.cpu: dict = {}                          # -> its CPU seconds when it last reported
        for _ in range(slots):
            mine, theirs = ctx.Pipe(duplex=True)
            Kept.parent_ends.append(mine)
            proc = ctx.Process(target=_serve, args=(model, self.counter, theirs, list(Kept.parent_ends)), daemon=True)
            proc.start()
            theirs.close()
            self.procs[mine], self.cpu[mine] = proc, 0.0

    def serves(self, model, slots: int) -> bool:
        return (self.model() is model and self.slots == slots and self.token == model.runtime_state()
                and all(p.is_alive() for p in self.procs.values()))

    def study(self, blocks: list, roles, settings, finished_block) -> float:
        """Run the blocks on the workers: `finished_block(j, worker, values, wall, failed, extra,
        trajectories)` for each as it comes; the workers' CPU seconds for them. The study's error
        when a worker dies or fails."""
        from multiprocessing.connection import wait
        self.counter.value = 0                       # (every worker is idle: it said so after the last study)
        for conn in self.procs:
            conn.send(("study", blocks, roles, settings))
        left, busy, cpu, refused = set(range(len(blocks))), set(self.procs), 0.0, 0
        while busy:
            for conn in wait(list(busy)):
                try:
                    message = conn.recv()
                except EOFError:                     # it exited without saying it was done: it died
                    raise worker_died(n for j in left for n in blocks[j][0]) from None
                if message[0] == "block":
                    left.discard(message[1])
                    finished_block(*message[1:])
                elif message[0] == "idle":
                    busy.discard(conn)
                    cpu += message[1] - self.cpu[conn]
                    self.cpu[conn] = message[1]
                elif message[0] == "refused":        # the others run the blocks; these workers are stale
                    busy.discard(conn)
                    refused += 1
                else:
                    raise DynamicaError(f"a block of the study failed in a worker process: {message[1]}")
        if refused:
            self.token = b"stale"                    # (the next study forks new workers)
            if refused == len(self.procs):
                raise Refused()
        if left:                                     # every worker is idle: a block was never claimed
            raise DynamicaError(f"the worker processes of the study ended with cases "
                                f"{ranges(sorted(int(n) for j in left for n in blocks[j][0]))} not run")
        return cpu

    def close(self):
        """Stop the workers (at once: they may be running a block) and forget them."""
        for proc in self.procs.values():
            proc.terminate()
        for conn, proc in self.procs.items():
            proc.join()
            conn.close()
            if conn in Kept.parent_ends:
                Kept.parent_ends.remove(conn)
        self.procs.clear()
        if Kept.last is self:
            Kept.last = None


def close_kept():
    """Stop the worker processes kept from the last study (they would exit with this process)."""
    if Kept.last is not None:
        Kept.last.close()


def _block(numbers, columns, values, wall, name, failed, extra, trajectories) -> Block:
    """The `Block` of a finished block from its worker's message."""
    status = [OK] * len(numbers)
    for k, text in (failed or {}).items():
        status[k] = text
    return Block(numbers, columns, values, wall, status, name, extra, trajectories)


def _serve(model, counter, conn, inherited):
    """A forked worker: for each study sent, claim blocks and run them until none is left, then
    say so and wait for the next study; exit when the pipe closes."""
    for other in inherited:                          # this process's copies of the study process's ends
        other.close()                                # (so that a worker sees its own pipe close)
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the study's process's to handle
    gc.freeze()      # what the process inherited is never collected: no collection walks (and copies) its pages
    name = f"process {os.getpid()}"
    try:
        while True:
            try:
                _, blocks, roles, settings = conn.recv()
            except EOFError:
                break
            except Exception as exc:                 # a hook defined after this worker was forked, say
                conn.send(("refused", f"{type(exc).__name__}: {exc}"))
                continue
            while True:
                with counter.get_lock():
                    j = counter.value
                    counter.value = j + 1
                if j >= len(blocks):
                    break
                numbers, values, names = blocks[j]
                block = run_block(model, numbers, values, names, roles, settings, worker=name)
                failed = {k: text for k, text in enumerate(block.status) if text != OK}
                conn.send(("block", j, name, block.values, block.wall_time, failed or None, block.extra,
                           block.trajectories))
            conn.send(("idle", time.process_time()))
    except Exception as exc:                         # not a case's error (those are rows): the study's
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os.nice(19)      # its exit (unmapping its memory, some ms) yields to the study's process and other workers
