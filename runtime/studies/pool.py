"""Local worker processes forked from the study's process (`scheduler="processes"` where the
platform forks; docs/sweep.md, "Local worker processes").

The workers are forked once the study's blocks are cut, so each starts with the model and the
cases in its memory: nothing is sent to it. A worker claims the next block from a counter in
memory shared with this process, runs it and writes the block's values and wall times into a
table in that shared memory; through its
pipe it says only which block it finished, with the few per-case objects the block has (the
statuses of the cases that failed, extra columns, trajectories). So this process spends little
per case (a short message per block, no rows to unpickle), the blocks balance themselves over
the workers (a worker that is done takes the next), and the workers' exit (the unmapping of
their memory) overlaps with the assembly of the table instead of preceding it.
"""

from __future__ import annotations

import gc
import mmap
import os
import signal
import sys

import numpy as np

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


class SharedTable:
    """Memory shared with the forked workers: the index of the next block to claim, and for each
    case of the study (in the order of its blocks) the values of its row and its wall time."""

    def __init__(self, cases: int, columns: int):
        # anonymous, shared with the children; its pages made at creation (MAP_POPULATE) rather than one
        # fault at a time (2000 rows of 140: 1.5 ms against 2.0 ms to make and read, best of 5, loaded machine)
        self.buffer = mmap.mmap(-1, 8 * (1 + cases * (columns + 1)),
                                flags=mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0))
        self.next = np.frombuffer(self.buffer, dtype=np.int64, count=1)
        self.values = np.frombuffer(self.buffer, dtype=np.float64, count=cases * columns, offset=8)
        self.values = self.values.reshape(cases, columns)
        self.wall = np.frombuffer(self.buffer, dtype=np.float64, count=cases, offset=8 * (1 + cases * columns))


class ForkedWorkers:
    """The blocks of a study on `workers` processes forked from this one (one per core by
    default); the blocks' rows come back through shared memory (`SharedTable`). A block costs a
    lock and a message of a few bytes: the blocks may shrink towards the end (`guided`)."""

    guided = True

    def __init__(self, model, pkg, workers, timeout):
        self.slots = int(workers or cores())
        if self.slots < 1:
            raise ValueError(f"workers must be at least 1, not {workers}")
        self.model = model
        self.procs: list = []
        warm_up(model)

    def run(self, pkg, blocks, roles, settings, on_batch):
        import multiprocessing
        check_picklable(settings)
        if not blocks:
            return
        ctx = multiprocessing.get_context("fork")
        starts = np.cumsum([0, *(len(numbers) for numbers, _, _ in blocks)])
        columns = result_columns(self.model, settings)
        shared = SharedTable(int(starts[-1]), len(columns))
        job = (self.model, blocks, starts, shared, ctx.Lock(), roles, settings)
        finished = False
        try:
            pipes = {}
            for _ in range(min(self.slots, len(blocks))):
                receive, send = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_work, args=(*job, send), daemon=True)
                proc.start()
                send.close()                     # the worker's end: end of file here when it exits
                pipes[receive] = proc
                self.procs.append(proc)
            self._receive(pipes, blocks, lambda j, name, failed, extra, trajectories: on_batch(
                _block(blocks[j][0], columns, shared, int(starts[j]), name, failed, extra, trajectories)))
            finished = True
        finally:
            if not finished:                     # Ctrl-C, a lost worker, an error: stop now, run nothing more
                for proc in self.procs:
                    proc.terminate()
                for proc in self.procs:
                    proc.join()
                self.procs.clear()

    @staticmethod
    def _receive(pipes: dict, blocks: list, finished_block):
        """The workers' messages until every block is in: `finished_block(j, worker, failed,
        extra, trajectories)` for each; the study's error when a worker dies or fails."""
        from multiprocessing.connection import wait
        left = set(range(len(blocks)))
        while left:
            if not pipes:                        # every worker said it is done: a block was never claimed
                raise DynamicaError(f"the worker processes of the study ended with cases "
                                    f"{ranges(sorted(int(n) for j in left for n in blocks[j][0]))} not run")
            for conn in wait(list(pipes)):
                try:
                    message = conn.recv()
                except EOFError:                 # it exited without saying it was done: it died
                    raise worker_died(n for j in left for n in blocks[j][0]) from None
                if message[0] == "done":
                    del pipes[conn]
                elif message[0] == "error":
                    raise DynamicaError(f"a block of the study failed in a worker process: {message[1]}")
                else:
                    left.discard(message[1])
                    finished_block(*message[1:])

    def close(self):
        """Nothing to wait for: the workers exit once every block is claimed (multiprocessing
        reaps them)."""
        self.procs.clear()


def _block(numbers, columns, shared: SharedTable, start: int, name, failed, extra, trajectories) -> Block:
    """The `Block` of a finished block from the shared table and its worker's message."""
    stop = start + len(numbers)
    status = [OK] * len(numbers)
    for k, text in (failed or {}).items():
        status[k] = text
    return Block(numbers, columns, shared.values[start:stop], shared.wall[start:stop], status, name, extra,
                 trajectories)


#: glibc's mallopt parameters (malloc.h): M_TRIM_THRESHOLD, M_MMAP_THRESHOLD
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3


def keep_heap() -> bool:
    """Have this (short-lived, forked) worker's allocator keep the memory it frees (glibc;
    elsewhere nothing: False). By default glibc maps a block of 128 kB or more afresh and unmaps
    it when freed, and gives back the top of its heap past 128 kB, until a study's frees have
    raised those thresholds; a worker forked from a process that had not yet run a full study
    (a script's first study) so took fresh zeroed pages for the temporaries of every block's
    reductions: 6350 and 9700 page faults in the later blocks of 2000 cases on 2 workers against
    164 and 213 with the heap kept (measured with getrusage in each worker). The worker exits at
    the study's end, which gives the memory back."""
    import ctypes
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):         # not glibc (macOS, musl): its allocator as it is
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    # 32 MB: glibc's largest mmap threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX)
    return bool(mallopt(_M_MMAP_THRESHOLD, 32 << 20) and mallopt(_M_TRIM_THRESHOLD, 1 << 30))


def _work(model, blocks, starts, shared: SharedTable, lock, roles, settings, conn):
    """A forked worker: claim blocks and run them until none is left, then say so."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)     # Ctrl-C is the study's process's to handle
    gc.freeze()      # what the process inherited is never collected: no collection walks (and copies) its pages
    keep_heap()
    name = f"process {os.getpid()}"
    try:
        while True:
            with lock:
                j = int(shared.next[0])
                shared.next[0] = j + 1
            if j >= len(blocks):
                break
            numbers, values, names = blocks[j]
            block = run_block(model, numbers, values, names, roles, settings, worker=name)
            start, stop = starts[j], starts[j] + len(numbers)
            shared.values[start:stop] = block.values
            shared.wall[start:stop] = block.wall_time
            failed = {k: text for k, text in enumerate(block.status) if text != OK}
            conn.send(("block", j, name, failed or None, block.extra, block.trajectories))
        conn.send(("done",))
    except Exception as exc:                         # not a case's error (those are rows): the study's
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        conn.close()
        sys.stdout.flush()
        sys.stderr.flush()
        os.nice(19)      # its exit (unmapping its memory, some ms) yields to the study's process and other workers
