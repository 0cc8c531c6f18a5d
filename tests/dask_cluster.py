"""A real Dask cluster for the tests: `dask scheduler` and `dask worker` processes on 127.0.0.1.

Ports are chosen free by the OS as each process binds (port 0: the scheduler's address is read from
its scheduler file, written once it listens; a port looked up free beforehand could be taken by another
process before the scheduler bound it); workers run without a nanny (one process each, so that a test
can kill one) with one thread, their own scratch directory and their own empty module cache
(`DYNAMICA_CACHE`), so a test can tell what a worker compiled. Timeouts are generous: the
machine may be a loaded 2-core one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

START_TIMEOUT = 180.0


def _wait_address(file: Path, proc, log: Path, timeout: float) -> str:
    """The address the scheduler wrote to its scheduler file (once it listens; the file is written in
    place, so a partial one is read again)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise RuntimeError(f"dask scheduler exited ({proc.returncode}):\n{log.read_text()[-3000:]}")
        try:
            return json.loads(file.read_text())["address"]
        except (OSError, ValueError, KeyError):
            time.sleep(0.2)
    raise RuntimeError(f"dask scheduler not listening after {timeout} s:\n{log.read_text()[-3000:]}")


class TestCluster:
    """`with TestCluster(tmp_path, workers=2) as c:` c.address, c.client, c.workers (Popen), c.caches."""

    __test__ = False                                   # not a pytest test class

    def __init__(self, folder, workers=2):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.n = workers
        self.procs, self.workers, self.caches, self.client = [], [], [], None

    def _spawn(self, args, name, env=None):
        log = self.folder / f"{name}.log"
        proc = subprocess.Popen([sys.executable, "-m", "dask", *args], stdout=open(log, "w"), stderr=subprocess.STDOUT,
                                env=env or os.environ.copy(), start_new_session=True)
        self.procs.append(proc)
        return proc, log

    def __enter__(self):
        from distributed import Client
        try:
            address_file = self.folder / "scheduler.json"
            address_file.unlink(missing_ok=True)
            proc, log = self._spawn(["scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
                                     "--scheduler-file", str(address_file)], "scheduler")
            self.address = _wait_address(address_file, proc, log, START_TIMEOUT)
            for k in range(self.n):
                cache = self.folder / f"cache-{k}"
                env = {**os.environ, "DYNAMICA_CACHE": str(cache)}
                proc, _ = self._spawn(["worker", self.address, "--nthreads", "1", "--no-nanny", "--host", "127.0.0.1",
                                       "--no-dashboard", "--name", f"w{k}", "--local-directory",
                                       str(self.folder / f"scratch-{k}"), "--death-timeout", "120"], f"worker-{k}", env)
                self.workers.append(proc)
                self.caches.append(cache)
            self.client = Client(self.address, timeout=START_TIMEOUT)
            self.client.wait_for_workers(self.n, timeout=START_TIMEOUT)
        except BaseException:
            self.__exit__()
            raise
        return self

    def worker_address(self, k: int) -> str:
        """The address of worker `k` (by its name w<k>)."""
        info = self.client.scheduler_info(n_workers=-1)["workers"]
        return next(a for a, w in info.items() if w.get("name") == f"w{k}")

    def kill_worker(self, k: int):
        os.kill(self.workers[k].pid, signal.SIGKILL)

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close(timeout=30)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in self.procs:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(timeout=30)
