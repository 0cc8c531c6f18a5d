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

#: bytes of the runs' series reduced at once: numpy's calls shared by several runs, its
#: temporaries (twice this) small enough to come from the heap, not from fresh pages of the OS
#: (a block's 100 runs of 35 series over 101 rows at once took 47 us a run in the reductions,
#: 2 MB temporaries faulted in page by page; 64 KB: 9 us)
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
            np.take(np.concatenate([Y, runs.outputs(Y, p)], axis=1).T, self.index, axis=0, out=series)
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
        fast = np.zeros(n, dtype=bool)
        X = S = None
        for k in range(n):
            case = dict(zip(names, values[k].tolist()))
            start = time.perf_counter()
            if self.runs is not None:
                if X is None:
                    X = np.empty((n, len(self.index), len(self.runs.t)))
                    S = np.empty((n, 2 * self.model.n))
                try:
                    S[k] = self._run(case, X[k])
                    fast[k] = True
                except Exception:                # the case's failure: simulate says it, with its hints
                    pass
            if not fast[k]:
                vals, extra[k], _, status[k], _ = self._general(case, quiet=self.runs is not None)
                if vals is not None:
                    out[k] = vals
            wall[k] = time.perf_counter() - start
        if fast.any():                           # the reductions of the block's fast cases at once
            start = time.perf_counter()
            out[fast] = self._reduced(S[fast], X[fast])
            wall[fast] += (time.perf_counter() - start) / np.count_nonzero(fast)
        return out, wall, status, extra

    def _reduced(self, S: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The values of the `columns` of runs from their final states S and series X (reduced
        REDUCE_BYTES of X at a time)."""
        reduced = np.empty((len(S), len(self.index) * len(self.settings.reductions)))
        step = max(1, REDUCE_BYTES // max(1, X[0].nbytes))
        for k in range(0, len(S) if len(self.index) else 0, step):
            reduced[k:k + step] = reduce_stack(self.runs.t, X[k:k + step], self.settings.reductions)
        return np.concatenate([S, reduced], axis=1)[:, self.picks]


#: the plan of the latest study's blocks in this process (one study runs at a time in a process)
_LATEST: list = []


def case_plan(model, names, roles, settings) -> CasePlan:
    """The plan of these cases: the latest one when it is theirs (the next block of the same
    study), else a new one."""
    if _LATEST and _LATEST[0].same(model, names, roles, settings):
        return _LATEST[0]
    plan = CasePlan(model, names, roles, settings)
    _LATEST[:] = [plan]
    return plan
