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


def warm_up(model):
    """Import what a run needs (the integrators, the expression evaluator of initial values)
    before the first case, so that its wall time is its own."""
    from dynamica.runtime.integrators.simulate import simulate
    if model.spec.stages:               # a worker process runs models with stages through their cyclogram
        import dynamica.runtime.stages.cyclogram  # noqa: F401  (registers itself with simulate)
    try:
        simulate(model, t_end=1e-9, output_step=1e-9)
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
    """Root mean square over time (trapezoidal rule): sqrt(int x^2 dt / (t_end - t0))."""
    span = t[-1] - t[0]
    return float(np.sqrt(np.trapezoid(x * x, t) / span)) if span > 0 else float(abs(x[-1]))


#: reduction name -> (t, x) -> float; its column is `name(series)`, the final value's the bare name
REDUCTIONS = {
    "final": lambda t, x: float(x[-1]),
    "min": lambda t, x: float(np.min(x)),
    "max": lambda t, x: float(np.max(x)),
    "rms": _rms,
}


def reduced_column(reduction: str, name: str) -> str:
    return name if reduction == "final" else f"{reduction}({name})"


def _inputs(model, case: dict, roles: dict):
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


def run_case(model, case: dict, roles: dict, settings: RunSettings):
    """One case: (row without its inputs, trajectory table or None). An error of the case
    (integration failure, a bad value) is its status; the other columns are then NaN."""
    from dynamica.runtime.integrators.simulate import simulate
    from dynamica.runtime.results.result import series
    if model.spec.stages:               # (as in warm_up)
        import dynamica.runtime.stages.cyclogram  # noqa: F401
    start = time.perf_counter()
    try:
        params, q0, qd0 = _inputs(model, case, roles)
        result = simulate(model, t_end=settings.t_end, method=settings.method, rtol=settings.rtol,
                          atol=settings.atol, output_step=settings.output_step, q0=q0, qd0=qd0, params=params)
        row = {c: float(v) for c, v in zip(result.coordinates, result.q[-1])}
        row.update({f"der({c})": float(v) for c, v in zip(result.coordinates, result.qd[-1])})
        for record in result.stages or ():          # a cyclogram: when each stage ended
            row[f"t_end({record['name']})"] = float(record["t_end"])
        row.update(contact_columns(result))
        data = series(result) if settings.series or settings.trajectories else {}
        for name in settings.series:
            for red in settings.reductions:
                row.setdefault(reduced_column(red, name), REDUCTIONS[red](result.t, data[name]))
        if settings.extra_columns is not None:
            row.update(settings.extra_columns(result, dict(case)))
        traj = _trajectory(result, data) if settings.trajectories else None
        status = OK
    except Exception as exc:                    # the case's own failure: the study goes on
        row, traj, status = {}, None, f"{type(exc).__name__}: {exc}"
    row["wall_time"] = time.perf_counter() - start
    row["status"] = status
    return row, traj


def contact_columns(result) -> dict:
    """A model with contacts (docs/contact.md): `contacts`, the number of contact starts the
    integrator located, and `max_penetration`, the deepest penetration of any pair at any output
    point; none for a model without contacts."""
    if "contacts" not in (result.info or {}):
        return {}
    depths = [np.nanmax(v) for k, v in result.outputs.items() if k.endswith(".penetration") and np.size(v)]
    return {"contacts": sum(1 for c in result.info["contacts"] if c[-1] == 1),
            "max_penetration": float(max(depths)) if depths else 0.0}


def _trajectory(result, data):
    import pandas as pd
    return pd.DataFrame({"t": result.t, **data})


def _worker_name() -> str:
    try:
        from distributed import get_worker
        return get_worker().address
    except (ImportError, ValueError):
        return "local"


def run_batch(pkg, cases: list, roles: dict, settings: RunSettings, model=None) -> list:
    """A batch of cases [(case number, {column: value})] -> [(case number, row, trajectory)].
    `model`: an already loaded model (the serial path), else the package's."""
    lock = None
    if model is None:
        model, lock = prepared(pkg)
    where = _worker_name()
    out = []
    for number, case in cases:
        if lock is not None:
            with lock:
                row, traj = run_case(model, case, roles, settings)
        else:
            row, traj = run_case(model, case, roles, settings)
        row["worker"] = where
        out.append((number, row, traj))
    return out
