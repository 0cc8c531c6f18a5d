"""Many runs of one model that differ only in their parameters and initial state (the cases of a
parameter study, runtime/studies/plan.py): what `simulate` resolves, checks and builds on every
call (the options, the integrator's record, the output times, the result object, the outputs'
dict) done once, so that a run is the compiled Adams loop (runtime/native/adams_core.pyx) and the
compiled loop over the output rows (runtime/native/series_core.pyx) with little Python around them.

Only the runs `simulate` makes as a bare compiled Adams run qualify (`plain_adams`): no stages,
closed loops, contacts, extra states, inputs or Hamiltonian state. A run then gives the numbers of
`simulate` with the same options bit for bit: the same `Stepper` with the same arguments (those
of `compiled_adams.solve` as `_run_adams` calls it), the same output rows from the same
parameter array (tests/runtime/studies/test_plan.py compares them).
"""

from __future__ import annotations

import inspect

import numpy as np

from dynamica.generator.spec.integrators import INTEGRATORS as INTEGRATOR_RECORDS


def plain_adams(model, method: str | None) -> bool:
    """Whether `simulate(model, method=method)` is one compiled Adams run of the state [q, q'] and
    its outputs, nothing more (what `AdamsRuns` repeats)."""
    from dynamica.runtime.integrators.contact_events import gap_forces
    method = method or model.spec.simulate.integrator
    record = INTEGRATOR_RECORDS.get(method)
    module = model.module
    return (record is not None and record.kind == "adams" and not model.spec.stages and not model.loops
            and not model.hamiltonian and not model.states and not model.inputs
            and model.state_size == 2 * model.n > 0 and hasattr(module, "rhs_capsule")
            and (hasattr(module, "outputs_capsule") or not hasattr(module, "outputs"))
            and not gap_forces(model))


def _solve_defaults() -> dict:
    """The options `_run_adams` leaves at `compiled_adams.solve`'s defaults, read from its signature."""
    from dynamica.runtime.integrators.compiled_adams import solve
    given = inspect.signature(solve).parameters
    return {k: given[k].default for k in ("first_step", "max_step", "max_steps", "on_stiff", "project_tol")}


class AdamsRuns:
    """Runs of `model` (`plain_adams`) from t[0] to `t_end` with the output times `t` (those
    `simulate` chose for the options: the `t` of a result of it; its last may lie a rounding
    below t_end) and tolerances `rtol`, `atol`.

    `run(y0, p)`: the states at the output times, shape (len(t), 2n), for the initial state y0 and
    the module's parameter array p (`CompiledModel.param_vector`); an IntegrationError (or
    StiffnessError) as `simulate` raises it, a StiffnessWarning as it warns. `outputs(Y, p)`: the
    states and the flat outputs of those rows side by side, shape (len(t), 2n + size), the outputs
    in the order of `output_slices` (none for a model without outputs). Both return arrays of this
    object that the next run overwrites (no memory is asked for a run: fresh pages cost a fault
    each, thousands a study in a forked worker)."""

    def __init__(self, model, t, t_end, rtol, atol):
        from dynamica.runtime.integrators.compiled_adams import check_status, core, warn_stiff
        self.model, self.rtol, self.atol = model, rtol, atol
        self.t = np.array(t, dtype=float).reshape(-1)
        self.t0, self.t_end = float(self.t[0]), float(t_end)
        self.first = int(np.count_nonzero(self.t == self.t0))         # rows at t0: y0 itself
        self.stepper, self.check, self.warn = core().Stepper, check_status, warn_stiff
        self.options = _solve_defaults()
        self.rhs, self.n2 = model.module.rhs_capsule, 2 * model.n
        self.output_size = model.output_slices()[1] if hasattr(model.module, "outputs") else 0
        rows, n = len(self.t), model.n
        self.Y, self.Q, self.QD = np.empty((rows, self.n2)), np.empty((rows, n)), np.empty((rows, n))
        self.flat, self.every = np.empty((rows, self.output_size)), np.empty((rows, self.n2 + self.output_size))
        if self.output_size:
            from dynamica.runtime.series import row_loop
            self.rows, self.capsule = row_loop().output_rows, model.module.outputs_capsule

    def run(self, y0, p) -> np.ndarray:
        o = self.options
        max_steps = int(o["max_steps"])
        st = self.stepper(self.rhs, self.t0, y0, self.t_end, p, self.rtol, self.atol, o["first_step"],
                          float(o["max_step"]), max_steps, o["on_stiff"] == "raise", False, None,
                          float(o["project_tol"]))
        Y = self.Y
        Y.fill(np.nan)
        Y[:self.first] = y0
        self.check(st, st.begin(), self.rtol, self.atol, max_steps, o["on_stiff"])
        code, _ = st.run(self.t, Y, self.first, max_steps + 1)
        self.check(st, code, self.rtol, self.atol, max_steps, o["on_stiff"])
        self.warn(st.info(), o["on_stiff"])
        return Y

    def outputs(self, Y, p) -> np.ndarray:
        n = self.n2 // 2
        if self.output_size:
            np.copyto(self.Q, Y[:, :n])
            np.copyto(self.QD, Y[:, n:])
            self.rows(self.capsule, self.t, self.Q, self.QD, p.reshape(1, -1), self.flat)
        return np.concatenate([Y, self.flat], axis=1, out=self.every)
