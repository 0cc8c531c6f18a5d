"""The outputs of a whole trajectory in one call from Python (`CompiledModel.output_series`).

The module's `outputs_capsule` is called from the C loop of runtime/native/series_core.pyx for every
row, with the parameter array p of each row (a single one when no row changes it): the extra
states and the inputs of a row are written into their slots of p, as `CompiledModel.outputs`
does for one row, and their columns of the result are read back from those slots with the same
arithmetic as runtime/inputs.py `signal_values`. So every value is the one the row-by-row path
(`CompiledModel.outputs` per row) gives, bit for bit (tests/generator/mechanics/test_outputs.py).
"""

from __future__ import annotations

import numpy as np


def row_loop():
    """The compiled loop over the rows (runtime/native/series_core.pyx), loaded on first use."""
    from dynamica.build import compiled_helper
    return compiled_helper("series_core")


def output_rows(model, t, Q, QD, params=None, S=None, U=None) -> dict | None:
    """name -> array with a leading time axis, or None when the module has no outputs kernel
    reachable from C (an older module, or no `outputs` section: the caller goes row by row)."""
    module = model.module
    capsule = getattr(module, "outputs_capsule", None)
    if capsule is None or not hasattr(module, "outputs"):
        return None
    rows, n = len(t), model.n
    t = np.ascontiguousarray(t, dtype=float).reshape(rows)
    Q = np.ascontiguousarray(Q, dtype=float).reshape(rows, n)
    QD = np.ascontiguousarray(QD, dtype=float).reshape(rows, n)
    slots = model.slots
    # the initial states, as `outputs` takes them
    s_row = None if S is not None else model.extra_states(None, params)
    base = model.param_vector(params, None, s_row)
    per_row = (S is not None and len(model.states)) or U
    if not per_row:
        P = base.reshape(1, -1)
    else:
        P = np.tile(base, (rows, 1))
        if S is not None and model.states:
            k = slots["states"]
            P[:, k:k + len(model.states)] = np.asarray(S, dtype=float).reshape(rows, len(model.states))
        if U:
            from dynamica.runtime.inputs import input_value, set_inputs
            set_inputs(model, base.copy(), dict.fromkeys(U, 0.0), 0.0)      # unknown names: its error
            for name, values in U.items():
                j = model.inputs.index(name)
                try:
                    col = np.asarray(values, dtype=float).reshape(rows)
                except (TypeError, ValueError):
                    col = None
                if col is None or not np.all(np.isfinite(col)):         # the first bad value: its error
                    col = [input_value(model, name, v) for v in values]
                P[:, slots["inputs"] + j] = col
                P[:, slots["input_rates"] + j] = 0.0
            P[:, slots["segment_start"]] = 0.0
    P = np.ascontiguousarray(P)
    sl, total = model.output_slices()
    flat = np.empty((rows, total))
    row_loop().output_rows(capsule, t, Q, QD, P, flat)
    out = {key: flat[:, k].copy() if shape == () else flat[:, k:k + size].reshape((rows, *shape)).copy()
           for key, shape, k, size in sl}
    if model.inputs or model.states:                 # runtime/inputs.py signal_values, a column at a time
        Pr = np.broadcast_to(P, (rows, P.shape[1]))
        since = t - Pr[:, slots["segment_start"]] if model.inputs else None
        for j, name in enumerate(model.inputs):
            out[name] = Pr[:, slots["inputs"] + j] + Pr[:, slots["input_rates"] + j] * since
        for j, name in enumerate(model.states):
            out[name] = Pr[:, slots["states"] + j].copy()
    return out
