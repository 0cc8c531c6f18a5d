"""The cases of one study with what they share prepared once (docs/sweep.md, "How a case runs").

A case of a study changes parameters and initial values; the options of its run, the output
times, the integrator, the columns of its row and where each reduced series sits are the same
for every case. `CasePlan` runs the first case that succeeds as `run_case_values` does (through
`simulate`) and learns those from its result; the cases after it skip `simulate`'s per-call
work: each is the parameter array, the initial state, the compiled Adams run and the compiled
output rows (runtime/integrators/repeated.py), then the reductions over one matrix. Their rows
are those `run_case_values` gives, bit for bit (tests/runtime/studies/test_plan.py).

Where `simulate` does more than a compiled Adams run (stages, closed loops, contacts, extra
states, inputs, another integrator) or the study asks for the run itself (trajectories,
extra_columns), every case runs through `simulate`. A case that fails on the fast path runs
again through `simulate`, whose error (with its hints) is the case's status.
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np

from dynamica.runtime.studies.worker import (
    OK,
    RunSettings,
    case_inputs,
    column_picks,
    reduce_stack,
    result_columns,
    run_case_values,
    series_columns,
)

#: bytes of the runs' series reduced at once (the workspace, allocated once a plan): numpy's
#: calls shared by many runs, their temporaries small (a block's 100 runs of 35 series over 101
#: rows at once, 2.8 MB temporaries faulted in page by page, took 47 us a run in the reductions)
REDUCE_BYTES = 1 << 20


class CasePlan:
    """How the cases of (model, input columns `names`, `roles`, `settings`) run in this process."""

    def __init__(self, model, names: list, roles: dict, settings: RunSettings):
        from dynamica.runtime.integrators.repeated import plain_adams
        self.model, self.names, self.roles, self.settings = model, list(names), roles, settings
        self.columns = result_columns(model, settings)
        self.picks = column_picks(model, settings)
        self.fast = (not settings.trajectories and settings.extra_columns is None
                     and plain_adams(model, settings.method))
        self.runs = None                 # the repeated runs, once a case has run through simulate
        self.index = np.empty(0, dtype=np.intp)
        self.ranges = bool(getattr(model.spec, "ranges", ()))
        self.stateful = hasattr(model.module, "itr_reset")      # (what reset_solver resets)
        self.X = self.S = None           # the workspace: series and final states of runs to reduce

    def same(self, model, names, roles, settings) -> bool:
        """Whether this plan is the one of these arguments (the blocks of one study)."""
        try:
            return (model is self.model and list(names) == self.names and roles == self.roles
                    and bool(settings == self.settings))
        except ValueError:               # tolerances given per component (arrays): a new plan
            return False

    def learn(self, result):
        """Take the output times and the series' columns from the result of a case run through
        `simulate` (the first that succeeded)."""
        from dynamica.runtime.integrators.repeated import AdamsRuns
        if self.runs is not None or not self.fast:
            return
        model, s, sim = self.model, self.settings, self.model.spec.simulate
        index = series_columns(result, s.series) if s.series else np.empty(0, dtype=np.intp)
        runs = AdamsRuns(model, result.t, s.t_end, sim.rtol if s.rtol is None else s.rtol,
                         sim.atol if s.atol is None else s.atol)
        if runs.output_size != sum(np.size(a[0]) for a in result.outputs.values()):
            self.fast = False            # outputs not those of the module's kernel: simulate each case
            return
        self.index, self.runs = index, runs

    def _state(self, case: dict):
        """(y0, p) of a case, as `simulate` makes them."""
        model = self.model
        params, q0, qd0 = case_inputs(model, case, self.roles)
        p = model.param_vector(params)
        iq0, iqd0 = model.initial_state(params)
        q0 = iq0 if q0 is None else model.as_vector(q0, "q0")
        qd0 = iqd0 if qd0 is None else model.as_vector(qd0, "qd0")
        return np.concatenate([q0, qd0]), p        # (to_state of a model plain_adams takes)

    def _run(self, case: dict, series: np.ndarray) -> np.ndarray:
        """The repeated run of a case (it raises what `simulate` would): its final state, and its
        series to reduce written into `series` (len(index), len(t)), one a row."""
        y0, p = self._state(case)
        if self.stateful:
            self.model.reset_solver()
        runs = self.runs
        Y = runs.run(y0, p)
        if self.ranges:
            self._warn_ranges(Y)
        if len(self.index):
            np.take(runs.outputs(Y, p).T, self.index, axis=0, out=series)
        return Y[-1]

    def _warn_ranges(self, Y):
        from dynamica.runtime.integrators.simulate import warn_ranges
        from dynamica.runtime.results.result import SimulationResult
        n = self.model.n
        warn_ranges(self.model, SimulationResult(t=self.runs.t, q=Y[:, :n], qd=Y[:, n:],
                                                 coordinates=self.model.coordinates, method="adams"))

    def _general(self, case: dict, quiet=False):
        """A case through `simulate` (`run_case_values`); quiet: its warnings not shown again."""
        if not quiet:
            return run_case_values(self.model, case, self.roles, self.settings, seen=self.learn)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_case_values(self.model, case, self.roles, self.settings)

    def block(self, names: list, values: np.ndarray):
        """The cases of a block (one row of `values` a case, columns `names`): (values of the
        `columns` one row a case, NaN for a failed one; wall times; statuses; extra columns)."""
        n = len(values)
        out, wall = np.full((n, len(self.columns)), np.nan), np.zeros(n)
        status, extra = [OK] * n, [{} for _ in range(n)]
        waiting: list = []                       # cases whose series wait in the workspace
        for k in range(n):
            case = dict(zip(names, values[k].tolist()))
            start = time.perf_counter()
            if self.runs is not None and self._fast(case, len(waiting)):
                waiting.append(k)
            else:
                vals, extra[k], _, status[k], _ = self._general(case, quiet=self.runs is not None)
                if vals is not None:
                    out[k] = vals
            wall[k] = time.perf_counter() - start
            if waiting and (len(waiting) == len(self.S) or k == n - 1):
                self._reduce(waiting, out, wall)
        return out, wall, status, extra

    def _fast(self, case: dict, j: int) -> bool:
        """Run a case on the fast path into slot j of the workspace; False if it failed there."""
        if self.S is None:                       # REDUCE_BYTES of series, allocated once
            size = len(self.index) * len(self.runs.t) * 8
            slots = max(1, REDUCE_BYTES // size) if size else 64
            self.X = np.empty((slots, len(self.index), len(self.runs.t)))
            self.S = np.empty((slots, 2 * self.model.n))
        try:
            self.S[j] = self._run(case, self.X[j])
        except Exception:                        # the case's failure: simulate says it, with its hints
            return False
        return True

    def _reduce(self, waiting: list, out: np.ndarray, wall: np.ndarray):
        """The rows of the cases waiting in the workspace, reduced at once (each case's wall time
        gets its share)."""
        start, j = time.perf_counter(), len(waiting)
        reduced = reduce_stack(self.runs.t, self.X[:j], self.settings.reductions) if len(self.index) \
            else np.empty((j, 0))
        out[waiting] = np.concatenate([self.S[:j], reduced], axis=1)[:, self.picks]
        wall[waiting] += (time.perf_counter() - start) / j
        waiting.clear()


#: the plan of the latest study's blocks, one per thread (a plan's workspace is its thread's; a Dask
#: worker may run several batches at once, in threads)
_LATEST = threading.local()


def case_plan(model, names, roles, settings) -> CasePlan:
    """The plan of these cases in this thread: the latest one when it is theirs (the next block
    of the same study), else a new one."""
    plan = getattr(_LATEST, "plan", None)
    if plan is None or not plan.same(model, names, roles, settings):
        plan = _LATEST.plan = CasePlan(model, names, roles, settings)
    return plan
