"""Time per right-hand-side call of a compiled module, measured from C (no Python per call).

The loop (runtime/native/ctiming.pyx) calls the module's `rhs_capsule` directly; `dynamica select
--measure` and the benchmarks use it. Forms that keep state between calls (the iterative
one) are timed on a moving state: the loop cycles through states along a short trajectory.
"""

from __future__ import annotations

import time

import numpy as np


def ctiming():
    """The compiled timing loop (built at install time; build.compiled_helper)."""
    from dynamica.build import compiled_helper
    return compiled_helper("ctiming")


def trajectory_states(model, count=64, t_end=0.05, params=None):
    """`count` states along a short simulation from the model's initial state (moved a little so
    every coordinate moves), as a C-contiguous (count, 2n) array of integrator states."""
    q0, qd0 = model.initial_state(params)
    rng = np.random.default_rng(0)
    q0 = q0 + rng.uniform(-0.3, 0.3, model.n)
    qd0 = qd0 + rng.uniform(-0.5, 0.5, model.n)
    from dynamica.runtime.integrators.simulate import simulate_stage  # this structure alone, stages or not
    r = simulate_stage(model, t_end=t_end, method="DOP853", rtol=1e-8, atol=1e-10, q0=q0, qd0=qd0,
                 output_step=t_end / (count - 1), params=params)
    ys = np.array([model.to_state(q, qd, t, params) for t, q, qd in zip(r.t, r.q, r.qd)])
    return np.ascontiguousarray(ys[:count])


def seconds_per_call(model, states=None, params=None, budget=0.2, rounds=5) -> float:
    """Best of `rounds` timings, each about `budget`/rounds seconds, of the C entry point."""
    ct = ctiming()
    ys = trajectory_states(model, params=params) if states is None else np.ascontiguousarray(states, dtype=float)
    p = model.param_vector(params)
    out = np.empty(ys.shape[1])
    cap = model.module.rhs_capsule
    per = ct.rhs_seconds_per_call_states(cap, 0.0, ys, p, out, 50)
    repeat = max(50, int(budget / rounds / max(per, 1e-9)))
    best = float("inf")
    t0 = time.perf_counter()
    for _ in range(rounds):
        best = min(best, ct.rhs_seconds_per_call_states(cap, 0.0, ys, p, out, repeat))
        if time.perf_counter() - t0 > 4 * budget:
            break
    return best
