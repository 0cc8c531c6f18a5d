"""The Python API (docs/api.md): `load`, the compiled model object and `simulate`."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from dynamica.errors import ModelError, Problem
from dynamica.generator.model import ModelSpec, evaluate, load_model
from dynamica.runtime.results import SimulationResult


class CompiledModel:
    """A compiled equation-of-motion module with named coordinates and parameters."""

    def __init__(self, module, spec: ModelSpec, path: Path | None = None):
        self.module = module
        self.spec = spec
        self.path = path
        self.name = module.MODEL_NAME
        self.form = module.FORM
        self.kind = module.KIND
        self.coordinates = tuple(module.COORDINATES)
        self.n = int(module.N)
        self._layout = tuple(module.PARAMETERS)                    # ((name, size), ...)
        self._defaults = np.array(module.PARAMETER_DEFAULTS, dtype=float)
        self.parameters = {}
        k = 0
        for name, size in self._layout:
            vals = self._defaults[k:k + size]
            p = next(p for p in spec.parameters if p.name == name)
            self.parameters[name] = tuple(float(v) for v in vals) if isinstance(p.value, tuple) else float(vals[0])
            k += size

    def __repr__(self):
        return f"<dynamica model {self.name!r} form={self.form!r} n={self.n}>"

    # -- parameters
    def param_vector(self, params=None) -> np.ndarray:
        """The flat parameter array of the module, defaults overridden by `params`."""
        p = self._defaults.copy()
        if not params:
            return p
        offsets, k = {}, 0
        for name, size in self._layout:
            offsets[name] = (k, size)
            k += size
        unknown = [k for k in params if k not in offsets]
        if unknown:
            raise KeyError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; "
                           f"the model has {', '.join(offsets) or 'none'}")
        for name, value in params.items():
            k, size = offsets[name]
            arr = np.atleast_1d(np.asarray(value, dtype=float))
            if arr.shape != (size,) or (size == 1 and np.ndim(value) != 0 and isinstance(self.parameters[name], float)):
                raise ValueError(f"parameter {name!r} expects {'a scalar' if size == 1 else f'{size} values'}, "
                                 f"got {value!r}")
            p[k:k + size] = arr
        return p

    # -- equations
    def _vec(self, x, name, size=None):
        a = np.ascontiguousarray(x, dtype=float).reshape(-1)
        n = self.n if size is None else size
        if a.shape[0] != n:
            raise ValueError(f"`{name}` has length {a.shape[0]}, expected {n} ({', '.join(self.coordinates)})")
        return a

    @property
    def hamiltonian(self) -> bool:
        """True when the state is [q, pm] with Poisson momenta pm (the Hamiltonian forms)."""
        return self.kind == "hamiltonian"

    def qdd(self, q, qd, t=0.0, params=None) -> np.ndarray:
        if self.hamiltonian:
            raise TypeError(f"form {self.form!r} is Hamiltonian (state [q, pm]): use rhs(t, y) with "
                            "y = to_state(q, qd), or a Lagrangian form for qdd")
        out = np.empty(self.n)
        self.module.qdd(float(t), self._vec(q, "q"), self._vec(qd, "qd"), self.param_vector(params), out)
        return out

    def mass_matrix(self, q, t=0.0, params=None) -> np.ndarray:
        out = np.empty(self.n * self.n)
        self.module.mass_matrix(float(t), self._vec(q, "q"), self.param_vector(params), out)
        return out.reshape(self.n, self.n)

    def rhs(self, t, y, params=None) -> np.ndarray:
        out = np.empty(2 * self.n)
        self.module.rhs(float(t), self._vec(y, "y", 2 * self.n), self.param_vector(params), out)
        return out

    def solver_stats(self) -> dict:
        """Counters of a form with an inner solver (the iterative one: iterations per call, fallbacks);
        empty for the direct forms."""
        return dict(self.module.itr_stats()) if hasattr(self.module, "itr_stats") else {}

    def reset_solver(self):
        """Forget state kept between calls (the iterative form's inverse estimate) and its counters."""
        if hasattr(self.module, "itr_reset"):
            self.module.itr_reset()

    def to_state(self, q, qd, t=0.0, params=None) -> np.ndarray:
        """The integrator state of (q, qd): [q, qd] (Lagrangian) or [q, pm] (Hamiltonian, (1.49))."""
        q, qd = self._vec(q, "q"), self._vec(qd, "qd")
        if not self.hamiltonian:
            return np.concatenate([q, qd])
        pm = np.empty(self.n)
        self.module.momenta(float(t), q, qd, self.param_vector(params), pm)
        return np.concatenate([q, pm])

    def from_state(self, y, t=0.0, params=None):
        """(q, qd) of an integrator state y (inverse of `to_state`)."""
        y = self._vec(y, "y", 2 * self.n)
        q = y[:self.n].copy()
        if not self.hamiltonian:
            return q, y[self.n:].copy()
        qd = np.empty(self.n)
        self.module.velocities(float(t), q, np.ascontiguousarray(y[self.n:]), self.param_vector(params), qd)
        return q, qd

    def rhs_function(self, params=None):
        """A fast `f(t, y)` closure for scipy's integrators (parameters bound once)."""
        p = self.param_vector(params)
        rhs, n2 = self.module.rhs, 2 * self.n

        def f(t, y):
            out = np.empty(n2)
            rhs(float(t), np.ascontiguousarray(y, dtype=float), p, out)
            return out
        return f

    @property
    def output_layout(self) -> tuple:
        """((key, shape), ...) of `outputs`, in order."""
        info = getattr(self.module, "INFO", {})
        return tuple(info.get("output_layout", (("qdd", (self.n,)),)))

    def outputs(self, t, q, qd, params=None) -> dict:
        """What the model's `outputs` section asks for (docs/model_format.md), plus "qdd": name -> ndarray."""
        q, qd = self._vec(q, "q"), self._vec(qd, "qd")
        if not hasattr(self.module, "outputs"):            # no outputs section: qdd only
            return {"qdd": self.qdd(q, qd, t, params)}
        layout = self.output_layout
        flat = np.empty(sum(int(np.prod(s)) for _, s in layout))
        self.module.outputs(float(t), q, qd, self.param_vector(params), flat)
        out, k = {}, 0
        for key, shape in layout:
            size = int(np.prod(shape))
            out[key] = flat[k] if shape == () else flat[k:k + size].reshape(shape).copy()
            k += size
        return out

    def output_series(self, t, Q, QD, params=None) -> dict:
        """`outputs` along a trajectory: name -> array with a leading time axis."""
        rows = [self.outputs(tk, q, qd, params) for tk, q, qd in zip(t, Q, QD)]
        if not rows:
            return {}
        return {k: np.array([r[k] for r in rows]) for k in rows[0]}

    # -- initial state
    def initial_state(self, params=None):
        """(q0, qd0) from the model's `initial` section (default 0), at the given parameters."""
        q0, qd0 = np.zeros(self.n), np.zeros(self.n)
        if not self.spec.initial:
            return q0, qd0
        from dynamica.generator import expr as ex
        p = self.param_vector(params)
        subs, k = {}, 0
        for name, size in self._layout:
            if size == 1 and isinstance(self.parameters[name], float):
                subs[ex.param_symbol(name)] = p[k]
            else:
                for j in range(size):
                    subs[ex.param_symbol(name, j)] = p[k + j]
            k += size
        for key, text in self.spec.initial:
            val = evaluate(self.spec, [text], extra=subs)[0]
            if key.startswith("der("):
                qd0[self.coordinates.index(key[4:-1])] = val
            else:
                q0[self.coordinates.index(key)] = val
        return q0, qd0


# ------------------------------------------------------------------ load
def _index_path(cache: Path, key: str) -> Path:
    return cache / "index" / f"{key}.json"


def _indexed(idx: Path) -> Path | None:
    """The extension the index file names, when its cache entry verifies (sizes and hash against
    its manifest, this tool and this Python); None sends `load` to generate and `compile_bundle`,
    which rebuilds a damaged entry with a warning."""
    from dynamica import cache as cache_store
    from dynamica.build import tool_fingerprint
    try:
        record = json.loads(idx.read_text())
        so = idx.parent.parent / record["entry"] / record["file"]     # the cache may have been moved
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if cache_store.verify(so.parent, fingerprint=tool_fingerprint()) is not None:
        return None
    return so


def _write_index(idx: Path, record: dict):
    """Best effort: a cache that cannot take the index file still has the module."""
    tmp = idx.with_suffix(f".{os.getpid()}.tmp")
    try:
        idx.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(json.dumps(record))
        os.replace(tmp, idx)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def load(path, form=None, backend="c", *, cache=None, progress=None, check_mass_matrix=True,
         select_by="predicted", mode="symbolic") -> CompiledModel:
    """Compile (or fetch from the cache) and import the module of a model file.

    form="auto" picks the cheapest form: by the flop formulas of chapter 4 (select_by=
    "predicted", the dissertation's choice) or by timing every compiled form ("measured").
    mode="numeric": only the joint kinematics, inertias and forces are generated, the recursions
    run as hand-written loops (generator/forms/numeric.py; composite, articulated and ltdl forms).
    """
    from dynamica.build import EntryVanished, cache_root, compile_bundle, import_extension
    from dynamica.build import tool_fingerprint
    spec = load_model(path)
    form = form or spec.simulate.form or "composite"
    if form == "auto":
        from dynamica.runtime import selection
        if select_by == "predicted":
            form = selection.predicted_best(spec)
        elif select_by == "measured":
            form = selection.select(path, measure=True).recommended
        else:
            raise ValueError(f"select_by must be 'predicted' or 'measured', not {select_by!r}")
    from dynamica.generator.forms import check_form, forms_of
    from dynamica.generator.render import resolve_backend
    forms_of(mode)                                  # ValueError naming the modes
    try:
        form = check_form(form, mode)
    except KeyError as exc:
        raise ModelError(str(path), [Problem("form", str(exc.args[0]))]) from None
    except ValueError as exc:
        raise ModelError(str(path), [Problem("form", str(exc))]) from None
    try:
        backend = resolve_backend(backend)
    except ValueError as exc:
        raise ModelError(str(path), [Problem("backend", str(exc))]) from None
    parts = [tool_fingerprint().encode(), Path(path).read_bytes(), form.encode(), backend.encode(), mode.encode()]
    cache = Path(cache) if cache is not None else cache_root()
    key = hashlib.sha256(b"\0".join(parts)).hexdigest()
    idx = _index_path(cache, key)
    so = _indexed(idx)
    for attempt in (1, 2):                  # 2: the entry was pruned between finding and locking it
        if so is None:
            from dynamica.generator.pipeline import generate
            gen = generate(spec, form=form, backend=backend, progress=progress, mode=mode)
            so = compile_bundle(gen.bundle, cache=cache, progress=progress,
                                meta={"model": spec.name, "form": form, "mode": mode})
            _write_index(idx, {"entry": so.parent.name, "file": so.name, "extension": str(so),
                               "signature": gen.module_ir.signature,
                               "model": spec.name, "form": form, "mode": mode})
        try:
            module = import_extension(so)
            break
        except EntryVanished:
            if attempt == 2:
                raise
            so = None
    model = CompiledModel(module, spec, so)
    if check_mass_matrix:
        _check_regular(model)
    return model


#: |eigenvalue| <= SINGULAR_RTOL * largest |eigenvalue|: the mass matrix is singular (and a
#: pivot of its factorization that small is zero)
SINGULAR_RTOL = 1e-12
#: forms whose solve for q'' eliminates M's coordinates from the last to the first (the tree
#: L^T D L of forms/cholesky.py, the joint blocks of the sweeps, the iterative forms' direct
#: solve): they meet the pivots `_reverse_pivots` computes; LGR and HLGR factor another matrix
_PIVOTS_OF_M = frozenset({"composite", "direct", "iterative-m", "iterative-g", "articulated", "ltdl",
                          "hamilton-composite", "hamilton-articulated", "hamilton-ltdl"})


def _check_regular(model: CompiledModel):
    """The mass matrix at the initial state: singular (an eigenvalue tiny against the largest)
    is an error naming the coordinates it involves; indefinite but regular (negative masses,
    e.g. cut-outs) is a warning naming the bodies, and an error only if the form's elimination
    order meets a zero pivot."""
    q0, _ = model.initial_state()
    M = model.mass_matrix(q0)
    if not np.all(np.isfinite(M)):
        raise ModelError(model.spec.file, [Problem("bodies", "the mass matrix is not finite at the initial state")])
    w, V = np.linalg.eigh(M)
    size = np.abs(w)
    k = int(np.argmin(size))
    if size[k] <= SINGULAR_RTOL * size.max():
        raise ModelError(model.spec.file, [Problem("bodies", _singular_message(model, w, V[:, k]))])
    if w[0] > 0:
        return
    from dynamica.generator.model import _warn, negative_bodies
    bodies = negative_bodies(model.spec)
    _warn(model.spec, f"the mass matrix is indefinite at the initial state ({int(np.sum(w < 0))} of {len(w)} "
                      f"eigenvalues negative, the smallest {w[0]:.3g}): the kinetic energy is negative for some "
                      "motions; bodies with negative mass or inertia: "
                      + (", ".join(f"`{b}`" for b in bodies) or "none at the default parameters"))
    if model.form not in _PIVOTS_OF_M:
        return
    d = _reverse_pivots(M)
    j = int(np.argmin(np.abs(d)))
    if abs(d[j]) <= SINGULAR_RTOL * size.max():
        c = model.coordinates[j]
        raise ModelError(model.spec.file, [Problem("bodies", (
            f"the mass matrix is regular but indefinite at the initial state, and its L^T D L factorization "
            f"(eliminating the coordinates from the last to the first, as the form `{model.form}` does) meets a "
            f"zero pivot at coordinate `{c}` ({d[j]:.3g}): with the coordinates before `{c}` locked, what it "
            "carries has no inertia along it (negative and positive inertias cancel), and the form cannot "
            "solve for q'' there; another initial state, or the form `lagrange1` (it factors another "
            "matrix), may avoid it"))])


def _singular_message(model, w, null):
    """What a singular M looks like: its eigenvalues and the coordinates its null vector moves."""
    names = [model.coordinates[k] for k in np.flatnonzero(np.abs(null) > 0.1 * np.abs(null).max())]
    size = np.abs(w)
    text = (f"the mass matrix is singular at the initial state: its eigenvalue of least magnitude is "
            f"{w[np.argmin(size)]:.3g}, against {size.max():.3g} the largest; its null vector moves the "
            f"coordinates {', '.join(f'`{c}`' for c in names)}")
    from dynamica.generator.model import negative_bodies
    bodies = negative_bodies(model.spec)
    if bodies:
        return text + (f" (the negative mass or inertia of {', '.join(f'`{b}`' for b in bodies)} cancels the "
                       "inertia of the other bodies along that motion?)")
    return text + " (massless bodies at the end of a chain, or joint axes that cannot move any mass?)"


def _reverse_pivots(M):
    """Pivots d of M = L^T D L (L unit lower), eliminating from the last coordinate to the first."""
    A = np.array(M, dtype=float)
    d = np.empty(len(A))
    for k in range(len(A) - 1, -1, -1):
        d[k] = A[k, k]
        if d[k] != 0.0:
            A[:k, :k] -= np.outer(A[:k, k], A[k, :k]) / d[k]
    return d


# ------------------------------------------------------------------ simulate
def _output_times(t0, t_end, output_step):
    if not output_step:
        return None
    k = int(np.floor((t_end - t0) / output_step + 1e-9))
    t_eval = t0 + output_step * np.arange(k + 1)
    if t_eval[-1] < t_end - 1e-12 * max(1.0, abs(t_end)):
        t_eval = np.append(t_eval, t_end)
    return t_eval


def _result(model, t, Y, method, nfev, info, message="", params=None):
    """SimulationResult from states Y of shape (len(t), 2n) (Hamiltonian states converted to (q, qd))."""
    n = model.n
    Y, t = np.asarray(Y), np.asarray(t)
    q, qd = Y[:, :n].copy(), Y[:, n:].copy()
    if model.hamiltonian:
        info = {**info, "momenta": qd}
        qd = np.array([model.from_state(y, tk, params)[1] for tk, y in zip(t, Y)]).reshape(len(t), n)
    return SimulationResult(t=t, q=q, qd=qd, coordinates=model.coordinates, method=method, nfev=int(nfev),
                            message=message, info=info,
                            outputs=model.output_series(t, q, qd, params) if hasattr(model.module, "outputs") else {})


def _run_adams(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None):
    """The compiled Adams PECE loop (runtime/adams_core.pyx) on the module's C entry point."""
    from dynamica.runtime.compiled_adams import solve
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    res = solve(model, (t0, t_end), y0, t_eval=t_eval, params_array=model.param_vector(params),
                rtol=rtol, atol=atol, events=events)
    info = {"integrator": "compiled Adams PECE (Shampine-Gordon), orders 1-12", "steps": res.nsteps,
            "rejected": res.nrejected, "order_histogram": res.order_histogram}
    if events:
        info.update(t_events=res.t_events, y_events=res.y_events, status=res.status)
    return _result(model, res.t, np.asarray(res.y).T, "adams", res.nfev, info, params=params)


def _run_stoermer6(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None):
    """Fixed-step Stoermer-Cowell 6 (runtime/stoermer.py); rtol/atol are not used."""
    if events:
        raise ValueError("stoermer6 does not locate events; use adams or a scipy method")
    from dynamica.runtime.stoermer import stoermer6_first_order
    h = step or (t_eval[1] - t_eval[0] if t_eval is not None and len(t_eval) > 1 else (t_end - t0) / 1000.0)
    if model.hamiltonian:
        raise ValueError("stoermer6 integrates q'' = f(q, q'): it needs a Lagrangian form, not "
                         f"{model.form!r}")
    t, Y, nfev = stoermer6_first_order(model.rhs_function(params), (t0, t_end), y0, h, t_eval=t_eval)
    return _result(model, t, Y, "stoermer6", nfev, {"integrator": f"Stoermer-Cowell 6 with Adams velocities, step {h}"})


def _scipy_runner(scipy_method):
    def run(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None):
        from scipy.integrate import solve_ivp
        from dynamica.errors import IntegrationError
        sol = solve_ivp(model.rhs_function(params), (t0, t_end), y0, method=scipy_method, rtol=rtol, atol=atol,
                        t_eval=t_eval, events=events)
        if sol.status < 0:
            raise IntegrationError(f"integration failed at t = {sol.t[-1]}: {sol.message}")
        info = {"integrator": f"scipy solve_ivp {scipy_method}"}
        if events:
            info.update(t_events=sol.t_events, y_events=sol.y_events, status=sol.status)
        return _result(model, sol.t, sol.y.T, run.name, sol.nfev, info, sol.message, params=params)
    return run


#: integrator name -> runner(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None)
#: -> SimulationResult
INTEGRATORS = {"adams": _run_adams, "stoermer6": _run_stoermer6}
for _name, _scipy in (("radau", "Radau"), ("RK45", "RK45"), ("DOP853", "DOP853"), ("LSODA", "LSODA"),
                      ("BDF", "BDF"), ("Radau", "Radau")):
    INTEGRATORS[_name] = _scipy_runner(_scipy)
    INTEGRATORS[_name].name = _name


#: output rows per piece when results stream to a file: bounds the memory of a long run
STREAM_ROWS = 10000


def simulate(model, t_end=None, method=None, rtol=None, atol=None, output_step=None, q0=None, qd0=None,
             params=None, t0=0.0, step=None, progress=None, segments=20, events=None, out=None,
             keep=None) -> SimulationResult:
    """Integrate the model from t0 to t_end; defaults come from the model's `simulate` block.

    `method="adams"` (the default) is the compiled Adams-Bashforth-Moulton PECE loop of
    variable step and order 1-12 (runtime/adams_core.pyx) calling the module's C entry point
    with no Python per step; `"stoermer6"` is the fixed-step 6th-order Stoermer-Cowell method
    of the dissertation's timing experiments with step `step` (default: the output step, else
    (t_end - t0)/1000); the other names (`INTEGRATORS`) run scipy's `solve_ivp` on the compiled RHS.

    `events`: functions g(t, y) of the integrator state y (= to_state(q, qd)) with scipy's optional
    `terminal` and `direction` attributes; their zeros are located on the integrator's
    interpolant and returned in `result.info["t_events"]`, `["y_events"]` (adams and the scipy
    methods). `progress(result_so_far, new)` (optional) makes the run go in `segments` pieces ending at
    output points and is called after each with the partial result and the slice of new rows
    (for progress bars and for writing results as they come). Each piece restarts the
    integrator from the state reached, like a stage boundary: results agree with one piece
    to the integration tolerance, and cost a few start-up steps per piece.

    `out`: a CSV file the rows are streamed to as they come (pieces of at most `STREAM_ROWS`
    rows), written as `<out>.partial` and renamed to `out` when the run completes. With `out`
    the rows are not kept (`keep=False`, the default then): the result holds the last row only,
    `info["rows"]` counts them, and memory stays bounded however long the run. `keep=False`
    without `out` does the same for a `progress` callback that consumes the rows itself, which
    then gets each piece as `result_so_far`.
    """
    if not isinstance(model, CompiledModel):
        model = load(model)
    sim = model.spec.simulate
    t_end = sim.t_end if t_end is None else float(t_end)
    method = method or sim.integrator
    rtol = sim.rtol if rtol is None else rtol
    atol = sim.atol if atol is None else atol
    output_step = output_step if output_step is not None else sim.output_step
    if method not in INTEGRATORS:
        raise ValueError(f"unknown method {method!r}; available: {', '.join(INTEGRATORS)}")
    if not t_end > t0:
        raise ValueError(f"t_end ({t_end}) must be greater than t0 ({t0})")
    keep = (out is None) if keep is None else bool(keep)
    iq0, iqd0 = model.initial_state(params)
    y0 = model.to_state(iq0 if q0 is None else model._vec(q0, "q0"),
                        iqd0 if qd0 is None else model._vec(qd0, "qd0"), t0, params)
    t_eval = _output_times(t0, t_end, output_step)
    run = INTEGRATORS[method]
    model.reset_solver()          # the iterative form starts from a direct solve: runs are reproducible
    if progress is None and out is None and keep:
        return run(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=events)
    if events:
        raise ValueError("events with progress, out or keep=False are not supported (a piece would restart "
                         "the events)")
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    pieces = max(2, min(segments, len(t_eval) - 1) + 1)
    if out is not None or not keep:
        pieces = max(pieces, -(-len(t_eval) // STREAM_ROWS) + 1)
    cuts = np.unique(np.linspace(0, len(t_eval) - 1, pieces).astype(int))
    writer = _open_writer(model, out, t0, y0, params) if out is not None else None
    rows = _Rows(model.coordinates, keep)
    try:
        for a, b in zip(cuts[:-1], cuts[1:]):
            te = t_eval[a:b + 1]
            piece = run(model, float(te[0]), float(te[-1]), y0, te, rtol, atol, params, step)
            y0 = model.to_state(piece.q[-1], piece.qd[-1], te[-1], params)
            start = 0 if rows.count == 0 else 1          # the first row repeats the previous piece's last
            if writer is not None:
                writer.write(piece.t[start:], piece.q[start:], piece.qd[start:],
                             {k: v[start:] for k, v in piece.outputs.items()})
            rows.add(piece, start)
            if progress is not None:
                progress(*rows.so_far())
    except BaseException:
        if writer is not None:
            writer.abort()                              # the rows so far stay in <out>.partial
        raise
    if writer is not None:
        writer.close()
    return rows.result(out)


def _open_writer(model, out, t0, y0, params):
    """The CSV writer of `simulate(out=...)`: its output columns from the outputs at the start."""
    from dynamica.runtime.results import CsvWriter, output_columns
    probe = {}
    if hasattr(model.module, "outputs"):
        q, qd = model.from_state(y0, t0, params)
        probe = {k: np.asarray(v)[None] for k, v in model.outputs(t0, q, qd, params).items()}
    return CsvWriter(out, model.coordinates, output_columns(probe))


class _Rows:
    """The rows of a run in pieces: all of them (keep) or only the latest piece."""

    def __init__(self, coordinates, keep):
        self.coordinates, self.keep = coordinates, keep
        self.parts, self.count, self.nfev, self.last, self.pieces = [], 0, 0, None, 0

    def add(self, piece, start):
        self.nfev += piece.nfev
        self.pieces += 1
        self.count += len(piece.t) - start
        self.last = piece
        sliced = (piece.t[start:], piece.q[start:], piece.qd[start:], {k: v[start:] for k, v in piece.outputs.items()})
        self.parts = self.parts + [sliced] if self.keep else [sliced]

    def _result(self, parts):
        p = self.last
        return SimulationResult(t=np.concatenate([x[0] for x in parts]), q=np.concatenate([x[1] for x in parts]),
                                qd=np.concatenate([x[2] for x in parts]), coordinates=self.coordinates,
                                method=p.method, nfev=self.nfev, message=p.message,
                                info={**p.info, "segments": self.pieces, "rows": self.count},
                                outputs={k: np.concatenate([x[3][k] for x in parts]) for k in p.outputs})

    def so_far(self):
        """(result so far, slice of its new rows) for `progress`."""
        res = self._result(self.parts)
        return res, slice(len(res.t) - len(self.parts[-1][0]), len(res.t))

    def result(self, out):
        if self.keep:
            res = self._result(self.parts)
        else:                                       # the last row only
            t, q, qd, o = self.parts[-1]
            res = self._result([(t[-1:], q[-1:], qd[-1:], {k: v[-1:] for k, v in o.items()})])
        if out is not None:
            res.info["out"] = str(out)
        return res
