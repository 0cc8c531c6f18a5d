"""What a parameter study runs on its workers (docs/sweep.md): the model reaching the worker,
and batches of cases, each case one `simulate` reduced to one row.

The compiled module reaches a worker one of two ways (`MODULES`):

- "ship": the client compiles once and sends the extension file with the model file; the
  worker writes both into its scratch directory and imports the extension. Workers need the
  same platform and Python (the extension's ABI tag) and dynamica, no compiler.
- "build": the client sends the model file; each worker generates and compiles it into its own
  cache (`$DYNAMICA_CACHE` of the worker, shared between workers on a shared file system).
  Workers need dynamica and a C compiler with the Python headers.

Either way a worker prepares a model once per process (`prepared`), however many batches it runs.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import platform
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynamica.errors import DynamicaError
from dynamica.files import write_atomic

#: the status of a case that ran to t_end
OK = "ok"
#: status prefix of a case whose worker died (not a result: a resumed study runs it again)
LOST = "lost:"


class SweepSetupError(DynamicaError):
    """A worker cannot prepare the model (an extension of another platform, no compiler, ...):
    the study stops, since every case would fail the same way."""


# ------------------------------------------------------------------ the model on a worker
@dataclass(frozen=True)
class ModelPackage:
    """What a worker needs to get the compiled model: the model file and how it was compiled,
    and with `modules="ship"` the extension itself."""

    key: str
    how: str                        # "ship" or "build"
    source_name: str
    source: bytes
    form: str
    backend: str
    mode: str
    version: str
    abi: str                        # the extension suffix of the client's Python
    extension_name: str = ""
    extension: bytes = field(default=b"", repr=False)


def keep(pkg: ModelPackage) -> ModelPackage:
    """The task that holds the package on the cluster (recomputed if its workers are lost)."""
    return pkg


def _abi() -> str:
    return f"{importlib.machinery.EXTENSION_SUFFIXES[0]} {platform.system()} {platform.machine()}"


def package(model, how: str) -> ModelPackage:
    """The package of a loaded model (`CompiledModel`) for the workers."""
    if how not in MODULES:
        raise ValueError(f"modules must be one of {', '.join(MODULES)}, not {how!r}")
    from dynamica.version import __version__
    source = Path(model.spec.file).read_bytes()
    ext = Path(model.path).read_bytes() if how == "ship" else b""
    h = hashlib.sha256(b"\0".join([how.encode(), source, model.form.encode(), ext, __version__.encode()]))
    return ModelPackage(key=h.hexdigest(), how=how, source_name=Path(model.spec.file).name, source=source,
                        form=model.form, backend=_backend(model), mode=_mode(model), version=__version__,
                        abi=_abi(), extension_name=Path(model.path).name if how == "ship" else "", extension=ext)


def _backend(model) -> str:
    return str(getattr(model.module, "BACKEND", "c"))


def _mode(model) -> str:
    """The generation mode, from the manifest of the model's cache entry (symbolic without one)."""
    from dynamica import cache as cache_store
    manifest = cache_store.read_manifest(Path(model.path).parent) if model.path else None
    return str((manifest or {}).get("mode", "symbolic"))


def _scratch() -> Path:
    """The worker's own directory (Dask's local directory), else a temporary one."""
    try:
        from distributed import get_worker
        base = Path(get_worker().local_directory)
    except (ImportError, ValueError):
        base = Path(tempfile.gettempdir()) / f"dynamica-sweep-{os.getuid() if hasattr(os, 'getuid') else 0}"
    return base / "dynamica-sweep"


def _write_once(path: Path, data: bytes):
    if path.exists() and path.stat().st_size == len(data):
        return
    write_atomic(path, data)


def _ship(pkg: ModelPackage, folder: Path):
    """Import the extension the client compiled."""
    if pkg.abi != _abi():
        raise SweepSetupError(f"the shipped module of {pkg.source_name} was compiled for {pkg.abi}, this worker "
                              f"({platform.node()}) runs {_abi()}: run the study with modules='build' "
                              "(--modules build), or workers of the client's platform and Python")
    from dynamica.build import import_extension
    from dynamica.generator.spec.model import load_model
    from dynamica.runtime.compiled import CompiledModel
    so = folder / pkg.extension_name
    _write_once(so, pkg.extension)
    return CompiledModel(import_extension(so), load_model(folder / pkg.source_name), so)


def _build(pkg: ModelPackage, folder: Path):
    """Generate and compile into this worker's cache (found there when built before)."""
    from dynamica.runtime.api import load
    return load(folder / pkg.source_name, form=pkg.form, backend=pkg.backend, mode=pkg.mode, check_mass_matrix=False)


#: how the compiled module reaches the workers -> how a worker gets the model from the package
MODULES = {"ship": _ship, "build": _build}

_PREPARED: dict = {}
_PREPARE_LOCK = threading.Lock()


def prepared(pkg: ModelPackage):
    """The compiled model of a package, prepared once per worker process: (model, lock). The
    lock serialises the runs of a form that keeps state between calls (the iterative forms)."""
    with _PREPARE_LOCK:
        if pkg.key not in _PREPARED:
            from dynamica.version import __version__
            if pkg.version != __version__:
                raise SweepSetupError(f"the client runs dynamica {pkg.version}, this worker ({platform.node()}) "
                                      f"{__version__}: install the same version on every worker")
            folder = _scratch() / pkg.key[:24]
            try:
                folder.mkdir(parents=True, exist_ok=True)
                _write_once(folder / pkg.source_name, pkg.source)
                model = MODULES[pkg.how](pkg, folder)
            except SweepSetupError:
                raise
            except Exception as exc:          # anything at all: no case of this worker could run
                raise SweepSetupError(f"worker {platform.node()} cannot prepare {pkg.source_name} "
                                      f"(modules={pkg.how!r}): {type(exc).__name__}: {exc}") from None
            warm_up(model)
            stateful = hasattr(model.module, "itr_reset")
            _PREPARED[pkg.key] = (model, threading.Lock() if stateful else None)
        return _PREPARED[pkg.key]


def adopt(pkg: ModelPackage, model):
    """Register a model this process already has as the package's prepared model: worker
    processes forked from here find it ready (no import, no file written)."""
    with _PREPARE_LOCK:
        if pkg.key not in _PREPARED:
            _PREPARED[pkg.key] = (model, threading.Lock() if hasattr(model.module, "itr_reset") else None)


#: why this worker process cannot prepare the model (`start_process`), said by its first block
_START_ERROR: list = []


def start_process(pkg: ModelPackage):
    """Initializer of a local worker process (`scheduler="processes"`): Ctrl-C is the parent's to
    handle (it stops the pool), the model is prepared once, before the first block."""
    import gc
    import signal
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    gc.freeze()     # what the process inherited is never collected: no collection walks (and copies) its pages
    try:
        prepared(pkg)
    except Exception as exc:            # the first block raises it: the study's error, not a broken pool
        _START_ERROR.append(exc)


def process_block(pkg_key: str, numbers, values, names: list, roles: dict, settings: RunSettings) -> Block:
    """A block of cases in a local worker process (the model prepared by `start_process`)."""
    if _START_ERROR:
        raise _START_ERROR[0]
    model, _ = _PREPARED[pkg_key]
    return run_block(model, numbers, values, names, roles, settings, worker=f"process {os.getpid()}")


def warm_up(model):
    """Import what a run needs (the integrators, the expression evaluator of initial values)
    before the first case, so that its wall time is its own."""
    from dynamica.runtime.integrators.simulate import simulate
    if model.spec.stages:               # a worker process runs models with stages through their cyclogram
        import dynamica.runtime.stages.cyclogram  # noqa: F401  (registers itself with simulate)
    try:
        simulate(model, t_end=1e-9, output_step=1e-9)
        # the initial state at given parameters, as a case evaluates it: what it parses (sympy, when an
        # initial value depends on a parameter) then happens once here, before workers are forked
        model.initial_state(dict(list(model.parameters.items())[:1]))
        model.initial_states(dict(list(model.parameters.items())[:1]))
    except Exception:                   # the cases will say what is wrong, each in its row
        pass


# ------------------------------------------------------------------ one case
@dataclass(frozen=True)
class RunSettings:
    """How each case runs and what its row holds.

    `series`: names of the time series to reduce (as `SimulationResult.series()` names them);
    `reductions`: their reductions (`REDUCTIONS`); `extra_columns(result, case) -> dict`: more
    columns per case (event and stage times, say), called on the worker after a run that
    succeeded; `trajectories`: send the whole run back with the row.
    """

    t_end: float
    method: str | None = None
    rtol: float | None = None
    atol: float | None = None
    output_step: float | None = None
    series: tuple = ()
    reductions: tuple = ("final",)
    trajectories: bool = False
    extra_columns: object = None


def _rms(t, x):
    """Root mean square over time (trapezoidal rule): sqrt(int x^2 dt / (t_end - t0)), over the
    last axis (one series, one series a row of a matrix, or a stack of such matrices: the cases
    of a block, each summed as a matrix alone, so that its values are those of its case alone)."""
    span = t[-1] - t[0]
    x = np.asarray(x, dtype=float)
    if not span > 0:
        return np.abs(x[..., -1])
    y = x * x
    pairs, dt = y[..., 1:] + y[..., :-1], np.diff(t)
    if pairs.ndim <= 2:
        integral = pairs @ dt
    else:                               # matmul of a stack sums in another order than of one matrix
        integral = np.array([m @ dt for m in pairs.reshape(-1, *pairs.shape[-2:])]).reshape(pairs.shape[:-1])
    return np.sqrt(integral * (0.5 / span))


#: reduction name -> (t, x) -> value(s) over the last axis of x (a series, a matrix of series one
#: a row, or a stack of such matrices); its column is `name(series)`, the final value's the bare name
REDUCTIONS = {
    "final": lambda t, x: np.asarray(x, dtype=float)[..., -1],
    "min": lambda t, x: np.min(x, axis=-1),
    "max": lambda t, x: np.max(x, axis=-1),
    "rms": _rms,
}


def reduced_column(reduction: str, name: str) -> str:
    return name if reduction == "final" else f"{reduction}({name})"


def case_inputs(model, case: dict, roles: dict):
    """(params, q0, qd0) of a case: the model's initial values at the case's parameters,
    overridden by the case's initial values (None, None: the case sets none)."""
    params = {}
    for col, value in case.items():
        role = roles[col]
        if role.kind == "param" and role.index is None:
            params[role.name] = float(value)
        elif role.kind == "param":
            vec = list(params.get(role.name, model.parameters[role.name]))
            vec[role.index] = float(value)
            params[role.name] = tuple(vec)
    if all(roles[col].kind == "param" for col in case):
        return params, None, None                  # simulate takes the model's initial values
    q0, qd0 = model.initial_state(params)
    for col, value in case.items():
        role = roles[col]
        if role.kind == "q0":
            q0[role.index] = value
        elif role.kind == "qd0":
            qd0[role.index] = value
    return params, q0, qd0


def _value_names(model, settings: RunSettings) -> list:
    """The name of each value a run gives, in order: the final state, then every (series,
    reduction) of the reduced outputs (a coordinate's final value twice when it is also reduced)."""
    state = [*model.coordinates, *(f"der({c})" for c in model.coordinates)]
    return [*state, *(reduced_column(r, s) for s in settings.series for r in settings.reductions)]


def result_columns(model, settings: RunSettings) -> list:
    """The columns of a case's results that every study of this model and settings has, in
    order: the final state, then every (series, reduction) of the reduced outputs."""
    return list(dict.fromkeys(_value_names(model, settings)))


def column_picks(model, settings: RunSettings) -> np.ndarray:
    """Which of a run's values (the final state, then the reductions) are the `result_columns`:
    the first of each name (a coordinate among the outputs reduced by "final" is the final state
    again)."""
    first: dict = {}
    for k, name in enumerate(_value_names(model, settings)):
        first.setdefault(name, k)
    return np.fromiter(first.values(), dtype=np.intp, count=len(first))


def _simulate_case(model, case: dict, roles: dict, settings: RunSettings):
    from dynamica.runtime.integrators.simulate import simulate
    params, q0, qd0 = case_inputs(model, case, roles)
    return simulate(model, t_end=settings.t_end, method=settings.method, rtol=settings.rtol,
                    atol=settings.atol, output_step=settings.output_step, q0=q0, qd0=qd0, params=params)


#: (coordinates, output shapes, series names) -> the series' columns in the matrix of a run
_SERIES_COLUMNS: dict = {}


def series_columns(result, names: tuple) -> np.ndarray:
    """Where the series `names` are among the columns of q, q' and the outputs of `result` side
    by side (as `series(result)` names and orders them)."""
    outputs = getattr(result, "outputs", None) or {}
    key = (tuple(result.coordinates), tuple((k, np.shape(a)[1:]) for k, a in outputs.items()), names)
    index = _SERIES_COLUMNS.get(key)
    if index is None:
        from dynamica.runtime.results.result import series
        position = {name: k for k, name in enumerate(series(result))}
        index = _SERIES_COLUMNS[key] = np.array([position[name] for name in names], dtype=np.intp)
    return index


def reduce_series(t, every: np.ndarray, index: np.ndarray, reductions: tuple) -> np.ndarray:
    """Every reduction of the series in the columns `index` of `every` (rows over t), series by
    series (the order of `result_columns`): the series taken at once, each reduction once over
    them."""
    return reduce_stack(t, every[:, index].T[None], reductions)[0]    # (every[:, index] is column-major)


def reduce_stack(t, X: np.ndarray, reductions: tuple) -> np.ndarray:
    """`reduce_series` of many runs over the same t at once: X of shape (runs, series, len(t)),
    each run's matrix row-major (BLAS sums a matrix of another layout in another order), one row
    of values a run (numpy's calls once for them all)."""
    return np.stack([np.asarray(REDUCTIONS[r](t, X), dtype=float) for r in reductions], axis=2).reshape(len(X), -1)


def _reduce(result, settings: RunSettings) -> np.ndarray:
    """`reduce_series` of a run's q, q' and outputs."""
    if not settings.series:
        return np.empty(0)
    n = len(result.t)
    flat = [np.asarray(a).reshape(n, -1) for a in (getattr(result, "outputs", None) or {}).values()]
    every = np.concatenate([result.q, result.qd, *flat], axis=1)
    return reduce_series(result.t, every, series_columns(result, settings.series), settings.reductions)


def run_case_values(model, case: dict, roles: dict, settings: RunSettings, seen=None):
    """One case as numbers: (values in the order of `result_columns` or None, extra columns
    {name: value}, trajectory table or None, status, wall time). An error of the case
    (integration failure, a bad value) is its status; values are then None. `seen(result)`, if
    given, is called with the run's result when it succeeded (plan.py learns from it)."""
    if model.spec.stages:               # (as in warm_up)
        import dynamica.runtime.stages.cyclogram  # noqa: F401
    from dynamica.runtime.results.result import series
    start = time.perf_counter()
    try:
        result = _simulate_case(model, case, roles, settings)
        extra = {}
        if tuple(result.coordinates) == tuple(model.coordinates):
            state = np.concatenate([result.q[-1], result.qd[-1]])
        else:                           # stages: the final state over the union of the stages' coordinates
            state = np.full(2 * len(model.coordinates), np.nan)
            extra.update({c: float(v) for c, v in zip(result.coordinates, result.q[-1])})
            extra.update({f"der({c})": float(v) for c, v in zip(result.coordinates, result.qd[-1])})
        for record in result.stages or ():          # a cyclogram: when each stage ended
            extra[f"t_end({record['name']})"] = float(record["t_end"])
        extra.update(contact_columns(result))
        values = np.concatenate([state, _reduce(result, settings)])[column_picks(model, settings)]
        if settings.extra_columns is not None:
            extra.update(settings.extra_columns(result, dict(case)))
        traj = _trajectory(result, series(result)) if settings.trajectories else None
        status = OK
    except Exception as exc:                    # the case's own failure: the study goes on
        values, extra, traj, status = None, {}, None, f"{type(exc).__name__}: {exc}"
    wall = time.perf_counter() - start
    if seen is not None and status == OK:       # (outside the case's own errors)
        seen(result)
    return values, extra, traj, status, wall


def contact_columns(result) -> dict:
    """A model with contacts (docs/contact.md): `contacts`, the number of contact starts the
    integrator located, and `max_penetration`, the deepest penetration of any pair at any output
    point; none for a model without contacts."""
    if "contacts" not in (result.info or {}):
        return {}
    depths = [np.nanmax(v) for k, v in result.outputs.items() if k.endswith(".penetration") and np.size(v)]
    return {"contacts": sum(1 for c in result.info["contacts"] if c[-1] == 1),
            "max_penetration": float(max(depths)) if depths else 0.0}


@dataclass
class Block:
    """The rows of a block of cases as arrays (what a local worker process sends back): case
    numbers, the values of `result_columns` (NaN for a failed case), wall times and statuses;
    the few per-case objects only where a study asks for them (extra columns, trajectories)."""

    numbers: np.ndarray
    columns: list
    values: np.ndarray
    wall_time: np.ndarray
    status: list
    worker: str | list                 # the worker's name, or one per case (`join` of several workers)
    extra: list | None = None
    trajectories: list | None = None

    def frame(self):
        """The block as a DataFrame indexed by case number (the study's rows)."""
        import pandas as pd
        index = pd.Index(self.numbers, name="case")
        numbers = np.column_stack([self.values, self.wall_time])
        parts = [pd.DataFrame(numbers, index=index, columns=[*self.columns, "wall_time"])]
        if self.extra is not None and any(self.extra):
            more = pd.DataFrame(self.extra, index=index)
            parts = [parts[0].drop(columns=[c for c in more.columns if c in self.columns]), more]
        worker = self.worker if isinstance(self.worker, list) else [self.worker] * len(self.numbers)
        parts.append(pd.DataFrame({"worker": worker, "status": self.status}, index=index))
        return pd.concat(parts, axis=1)

    @staticmethod
    def join(blocks: list) -> Block:
        """One block of many (their cases in the order given; workers named per case)."""
        if len(blocks) == 1:
            return blocks[0]
        extra = None
        if any(b.extra is not None for b in blocks):
            extra = [e for b in blocks for e in (b.extra if b.extra is not None else [{}] * len(b.numbers))]
        trajectories = None
        if any(b.trajectories is not None for b in blocks):
            trajectories = [t for b in blocks for t in (b.trajectories or [None] * len(b.numbers))]
        workers = {b.worker for b in blocks}
        joined = Block(np.concatenate([b.numbers for b in blocks]), blocks[0].columns,
                       np.concatenate([b.values for b in blocks]), np.concatenate([b.wall_time for b in blocks]),
                       [st for b in blocks for st in b.status], workers.pop() if len(workers) == 1 else "",
                       extra, trajectories)
        if workers:                    # several workers: the worker column per case
            joined.worker = [b.worker for b in blocks for _ in range(len(b.numbers))]
        return joined


def run_block(model, numbers, values, names: list, roles: dict, settings: RunSettings, worker="local") -> Block:
    """Cases given as arrays (case numbers; one row of input values a case, columns `names`)
    -> their `Block`. Every case runs as `run_case_values` runs it, the same rows bit for bit,
    what the cases share prepared once (plan.py)."""
    from dynamica.runtime.studies.plan import case_plan
    plan = case_plan(model, names, roles, settings)
    if not settings.trajectories:
        out, wall, status, extra = plan.block(names, values)
        trajs = None
    else:
        n = len(numbers)
        out, wall = np.full((n, len(plan.columns)), np.nan), np.empty(n)
        status, extra, trajs = [], [], []
        for k in range(n):
            vals, more, traj, st, wall[k] = run_case_values(model, dict(zip(names, values[k].tolist())), roles,
                                                            settings)
            if vals is not None:
                out[k] = vals
            status.append(st)
            extra.append(more)
            trajs.append(traj)
    return Block(np.asarray(numbers), plan.columns, out, wall, status, worker, extra if any(extra) else None, trajs)


def _trajectory(result, data):
    import pandas as pd
    return pd.DataFrame({"t": result.t, **data})


def _worker_name() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def run_batch(pkg, cases: list, roles: dict, settings: RunSettings, model=None) -> Block:
    """A batch of cases [(case number, {column: value})] (a Dask task) -> their `Block`, as
    `run_block` runs them. `model`: an already loaded model, else the package's."""
    lock = None
    if model is None:
        model, lock = prepared(pkg)
    names = list(cases[0][1]) if cases else []
    numbers = np.array([number for number, _ in cases], dtype=np.int64)
    values = np.array([[case[c] for c in names] for _, case in cases], dtype=float).reshape(len(cases), len(names))
    if lock is None:
        return run_block(model, numbers, values, names, roles, settings, worker=_worker_name())
    with lock:
        return run_block(model, numbers, values, names, roles, settings, worker=_worker_name())
