"""The cyclogram: running a model's `stages` in order (docs/stages.md; D90, dissertation 5.2.2).

    structures(spec)            the tree of each stage (generator/mechanics/stages.py)
    build(model, structures)    one compiled module per distinct structure, in parallel, cached
    for each stage:
        enter                   parameters set, the state mapped onto the stage's coordinates:
                                the same names keep their values, a released body gets the free
                                joint state of its absolute motion (runtime/motion.py), locked
                                coordinates become parameters (rate 0)
        statics | dynamics      equilibrium (runtime/analysis/statics.py) | integration to `until` or the
                                stage's event (the integrator's event location)
    result                      rows of every stage on the union of the columns, NaN where a
                                coordinate or output does not exist; result.stage, result.stages
"""

from __future__ import annotations

import logging
import os
import warnings
from dataclasses import dataclass, field

import numpy as np
import sympy as sp

from dynamica.errors import ModelError, Problem
from dynamica.generator.mechanics.stages import derive, event_expression, free_coordinates, structures
from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.model import DynamicaWarning, evaluate
from dynamica.runtime.integrators.simulate import STAGED_RUNNER
from dynamica.runtime.results.result import SimulationResult

log = logging.getLogger("dynamica")


@dataclass
class _Built:
    """The compiled module of one structure and what its spec leaves out of the model's."""
    model: object
    dropped: tuple = ()


def build(model, structs) -> dict:
    """Structure -> _Built for every distinct structure: the base is `model` itself; the others
    are derived specs compiled with the model's form, backend and mode (in parallel worker
    processes when several are not in the cache) and imported."""
    from dynamica.runtime import api
    out, todo = {}, {}
    for s in structs:
        if s in out or s in todo:
            continue
        if s.is_base:
            out[s] = _Built(model)
        else:
            todo[s] = derive(model.spec, s)
    cache = model.cache
    missing = [s for s, (dspec, _) in todo.items()
               if api.indexed_extension(api.index_path(_cache(cache), api.spec_key(dspec, model.form, model.backend,
                                                                           model.mode))) is None]
    if len(missing) > 1:
        import concurrent.futures as cf
        import multiprocessing as mp
        workers = min(len(missing), os.cpu_count() or 1)
        log.info("building %d stage structures in %d processes", len(missing), workers)
        # fork: the workers inherit the loaded tool (spawn would re-run the caller's __main__)
        method = "fork" if "fork" in mp.get_all_start_methods() else "spawn"
        with cf.ProcessPoolExecutor(workers, mp_context=mp.get_context(method)) as pool:
            jobs = [pool.submit(api.build_spec, todo[s][0], model.form, model.backend, model.mode, cache,
                                model.spec.name)
                    for s in missing]
            for job in jobs:
                job.result()
    for s, (dspec, dropped) in todo.items():
        out[s] = _Built(api.load_spec(dspec, model.form, model.backend, model.mode, cache=cache,
                                      stage_of=model.spec.name), dropped)
    return out


def _cache(cache):
    from pathlib import Path

    from dynamica.build import cache_root
    return Path(cache) if cache is not None else cache_root()


# ------------------------------------------------------------------ the state across stages
@dataclass
class _State:
    t: float
    q: dict                          # coordinate name -> value (every coordinate of the stage)
    qd: dict
    params: dict                     # parameter name -> value (the user's and the stages' `set`)
    locked: dict = field(default_factory=dict)      # locked coordinate -> its value, this stage


def _enter(stage, built, prev_spec, state: _State, base_spec):
    """Map the state onto the stage's structure: (q, qd, params of the stage's model)."""
    from dynamica.runtime.motion import GimbalLock, body_motion, free_joint_state
    m = built.model
    for name, value in stage.set:
        state.params[name] = value if isinstance(value, tuple) else float(evaluate(
            base_spec, [value], extra=_param_subs(base_spec, state.params))[0])
    lock_values = {c: state.q[c] for c in state.locked}          # the previous stage's locks
    for b in stage.release:
        if b in stage.remove:
            continue
        try:
            R, r, v, w = body_motion(prev_spec, b, state.q, state.qd, state.t, {**state.params, **lock_values})
            qf, qdf = free_joint_state(R, r, v, w)
        except GimbalLock as exc:
            raise ModelError(base_spec.file, [Problem(stage.path + ".release", (
                f"stage `{stage.name}`: releasing `{b}` at t = {state.t:g}: {exc}; its free joint's Cardan angles "
                "cannot describe that orientation (turn the body's frame in the model)"))]) from None
        for c, x, xd in zip(free_coordinates(b), qf, qdf):
            state.q[c], state.qd[c] = float(x), float(xd)
    state.locked = {}
    for c in stage.lock:
        if state.qd.get(c, 0.0) != 0.0:
            warnings.warn(f"{base_spec.file}: stage `{stage.name}` locks `{c}` moving at der({c}) = "
                          f"{state.qd[c]:.6g}: its rate is set to 0 (the motion of what it carries jumps)",
                          DynamicaWarning, stacklevel=4)
        state.qd[c] = 0.0
        state.locked[c] = state.q[c]
    params = {k: v for k, v in state.params.items() if k in m.parameters}
    params.update(state.locked)
    q = np.array([state.q[c] for c in m.coordinates])
    qd = np.array([state.qd[c] for c in m.coordinates])
    return q, qd, params


def _param_subs(spec, params):
    subs = {}
    for name, v in params.items():
        if isinstance(v, tuple):
            subs.update({ex.param_symbol(name, k): x for k, x in enumerate(v)})
        else:
            subs[ex.param_symbol(name)] = v
    return subs


# ------------------------------------------------------------------ events
def event_function(stage, m, params):
    """g(t, y) of a stage's event on the state y of its model `m` (terminal, with its direction)."""
    text, direction = stage.event
    spec = m.spec
    scope = spec.scope(coordinates_allowed=True)
    e, refs = event_expression(text, scope, [n for n, _ in spec.outputs.expressions])
    offsets, k = {}, 0
    for key, shape in m.output_layout:
        offsets[key] = (k, shape)
        k += int(np.prod(shape))
    picks = []
    for _, key, idx in refs:
        if key not in offsets:
            raise ModelError(spec.file, [Problem(f"{stage.path}.event.expr", (
                f"stage `{stage.name}`: `{key}` is not an output of this stage's model; its outputs are "
                f"{', '.join(o for o in offsets if o != 'qdd')}"))])
        start, shape = offsets[key]
        size = int(np.prod(shape))
        if (idx is None) != (shape == ()) or (idx is not None and idx >= size):
            want = "a scalar: no index" if shape == () else f"an index 0..{size - 1}"
            raise ModelError(spec.file, [Problem(f"{stage.path}.event.expr", (
                f"stage `{stage.name}`: output `{key}` takes {want}"))])
        picks.append(start + (idx or 0))
    psyms = []
    for name, size, scalar in m.param_layout:
        scalar = size == 1 and scalar
        psyms += [ex.param_symbol(name)] if scalar else [ex.param_symbol(name, j) for j in range(size)]
    qs = [ex.coord_symbol(c) for c in m.coordinates]
    qds = [ex.rate_symbol(c) for c in m.coordinates]
    locs = [ex.local_symbol(r[0]) for r in refs]
    f = sp.lambdify([ex.T, *qs, *qds, *psyms, *locs], e, "numpy")
    p = m.param_vector(params)
    n = m.n
    flat = np.empty(sum(int(np.prod(s)) for _, s in m.output_layout)) if picks else None
    picks = np.array(picks, dtype=int)

    def g(t, y):
        q, qd = (y[:n], y[n:]) if not m.hamiltonian else m.from_state(y, t, params)
        if flat is not None:
            m.module.outputs(float(t), np.ascontiguousarray(q), np.ascontiguousarray(qd), p, flat)
            return float(f(t, *q, *qd, *p, *flat[picks]))
        return float(f(t, *q, *qd, *p))
    g.terminal, g.direction = True, direction
    return g


# ------------------------------------------------------------------ running the stages
def run(model, t_end=None, *, method=None, rtol=None, atol=None, output_step=None, params=None,
        progress=None) -> SimulationResult:
    """Run every stage of `model.spec.stages` from the model's initial state at t = 0 (docs/stages.md).
    `t_end` (optional) cuts the cyclogram there; `progress(stage_result, rows)` is called after
    each stage with its rows (a SimulationResult on the stage's own coordinates)."""
    from dynamica.runtime.integrators.simulate import simulate_stage
    spec = model.spec
    structs = structures(spec)
    built = build(model, structs)
    q0, qd0 = model.initial_state(params)
    if model.loops:
        q0, qd0 = model.assemble(q0, qd0, 0.0, params)
    state = _State(0.0, dict(zip(model.coordinates, map(float, q0))), dict(zip(model.coordinates, map(float, qd0))),
                   dict(params or {}))
    sim = spec.simulate
    table = _Table(model.coordinates)
    records, prev_spec = [], spec
    for stage, struct in zip(spec.stages, structs):
        b = built[struct]
        m = b.model
        q, qd, p = _enter(stage, b, prev_spec, state, spec)
        if m.loops:
            q, qd = m.assemble(q, qd, state.t, p)
        t_start = state.t
        if stage.type == "statics":
            from dynamica.runtime.analysis.statics import statics
            eq = statics(m, q0=q, free=stage.free or [c for c in m.coordinates], t=state.t, params=p)
            res = _rows(m, np.array([state.t]), eq.q[None, :], np.zeros((1, m.n)), p)
            reason = "statics"
        else:
            until = stage.until if t_end is None else min(stage.until, t_end)
            if until <= state.t:
                res, reason = _rows(m, np.array([state.t]), q[None, :], qd[None, :], p), "time"
            else:
                events = None
                if stage.event is not None:
                    events = [event_function(stage, m, p)]
                    _warn_past(stage, events[0], m, q, qd, state.t, p, spec)
                res = simulate_stage(m, t_end=until, method=method or sim.integrator, rtol=rtol or sim.rtol,
                               atol=atol or sim.atol, output_step=stage.output_step or output_step or sim.output_step,
                               q0=q, qd0=qd, params=p, t0=state.t, events=events)
                reason = "time"
                if res.info.get("status") == 1:
                    reason = "event"
                    te = float(res.info["t_events"][0][-1])
                    qe, qde = m.from_state(res.info["y_events"][0][-1], te, p)
                    res = _append(m, res, te, qe, qde, p)
        table.add(stage.name, res, state.locked)
        if progress is not None:
            progress(res, slice(0, len(res.t)))
        state.t = float(res.t[-1])
        state.q.update(zip(m.coordinates, map(float, res.q[-1])))
        state.qd.update(zip(m.coordinates, map(float, res.qd[-1])))
        records.append({"name": stage.name, "type": stage.type, "t_start": t_start, "t_end": state.t,
                        "reason": reason, "coordinates": m.coordinates, "dropped": b.dropped})
        log.info("stage %s: %s, t = %g .. %g (%s)", stage.name, stage.type, t_start, state.t, reason)
        prev_spec = m.spec
        if t_end is not None and state.t >= t_end:
            break
    return table.result(records, method or sim.integrator)


def _warn_past(stage, g, m, q, qd, t, p, spec):
    """An event whose expression already has the sign its crossing leads to at the stage's start."""
    g0 = g(t, m.to_state(q, qd, t, p))
    text, d = stage.event
    if d and g0 * d > 0:
        warnings.warn(f"{spec.file}: stage `{stage.name}`: its event `{text}` is already "
                      f"{'positive' if d > 0 else 'negative'} ({g0:.6g}) at the stage's start; the stage ends at "
                      f"its next {'rising' if d > 0 else 'falling'} crossing of zero, or at `until`",
                      DynamicaWarning, stacklevel=3)


def _rows(m, t, Q, QD, p):
    outputs = m.output_series(t, Q, QD, p) if hasattr(m.module, "outputs") else {}
    return SimulationResult(t=t, q=Q, qd=QD, coordinates=m.coordinates, method="", outputs=outputs)


def _append(m, res, te, qe, qde, p):
    """res with the event's row added at its end."""
    keep = res.t < te
    extra = _rows(m, np.array([te]), qe[None, :], qde[None, :], p)
    return SimulationResult(t=np.concatenate([res.t[keep], extra.t]), q=np.vstack([res.q[keep], extra.q]),
                            qd=np.vstack([res.qd[keep], extra.qd]), coordinates=res.coordinates, method=res.method,
                            nfev=res.nfev, info=res.info,
                            outputs={k: np.concatenate([v[keep], extra.outputs[k]]) for k, v in res.outputs.items()})


class _Table:
    """The rows of all stages on the union of their columns."""

    def __init__(self, coordinates):
        self.columns = list(coordinates)
        self.parts = []

    def add(self, name, res, locked):
        for c in res.coordinates:
            if c not in self.columns:
                self.columns.append(c)
        self.parts.append((name, res, dict(locked)))

    def result(self, records, method) -> SimulationResult:
        cols = {c: k for k, c in enumerate(self.columns)}
        shapes = {}
        for _, res, _ in self.parts:
            for key, v in res.outputs.items():
                shapes.setdefault(key, (len(cols),) if key == "qdd" else np.asarray(v).shape[1:])
        T, Q, QD, O, S = [], [], [], {k: [] for k in shapes}, []
        nfev = 0
        for name, res, locked in self.parts:
            m = len(res.t)
            q = np.full((m, len(cols)), np.nan)
            qd = np.full((m, len(cols)), np.nan)
            idx = [cols[c] for c in res.coordinates]
            q[:, idx], qd[:, idx] = res.q, res.qd
            for c, v in locked.items():                  # held: its value, rate 0
                q[:, cols[c]], qd[:, cols[c]] = v, 0.0
            T.append(res.t), Q.append(q), QD.append(qd), S.append(np.full(m, name, dtype=object))
            for key, shape in shapes.items():
                if key == "qdd" and key in res.outputs:          # accelerations: on the columns, like q
                    qdd = np.full((m, len(cols)), np.nan)
                    qdd[:, idx] = res.outputs[key]
                    for c in locked:
                        qdd[:, cols[c]] = 0.0
                    O[key].append(qdd)
                else:
                    O[key].append(np.asarray(res.outputs[key]) if key in res.outputs else np.full((m, *shape), np.nan))
            nfev += res.nfev
        stage = np.concatenate(S).astype(str)
        info = {"stages": len(records), "structures": len({r["coordinates"] for r in records})}
        located = [res.info for _, res, _ in self.parts if "contacts" in (res.info or {})]
        if located:                  # the contacts' starts and ends of every stage, in time order
            info.update(contacts=[c for i in located for c in i["contacts"]],
                        restarts=sum(i["restarts"] for i in located))
        return SimulationResult(t=np.concatenate(T), q=np.vstack(Q), qd=np.vstack(QD), coordinates=tuple(self.columns),
                                method=method, nfev=nfev, outputs={k: np.concatenate(v) for k, v in O.items()},
                                stage=stage, stages=records, info=info)


STAGED_RUNNER["cyclogram"] = run          # integrators.simulate hands models with stages to `run`
