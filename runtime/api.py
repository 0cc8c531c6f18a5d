"""Loading (docs/api.md): `load` (generate, compile or fetch from the cache, import, check) and the
compiled model it returns (runtime/compiled.py). The whole public API is listed in dynamica's
package file (`dynamica.load`, `dynamica.simulate`, ...), which also sets the load order."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np

from dynamica.errors import ModelError, Problem
from dynamica.files import write_atomic
from dynamica.runtime.compiled import CompiledModel

__all__ = ["load", "CompiledModel", "FORM_CHOOSERS"]

#: form="auto": select_by -> chooser(path, spec) -> form name. "predicted" is the flop formulas of
#: chapter 4; "measured" (timing every compiled form) is registered by runtime/analysis/selection.py,
#: which sits above the integrators it times with (dynamica's package file imports it with `load`)
FORM_CHOOSERS: dict = {}


def index_path(cache: Path, key: str) -> Path:
    """The index file of a module built from content `key` (`<cache>/index/<key>.json`): load's
    modules and the companions built on first use (derivatives, inverse dynamics, stages)."""
    return cache / "index" / f"{key}.json"


def indexed_extension(idx: Path) -> Path | None:
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


def write_index(idx: Path, record: dict):
    """Best effort: a cache that cannot take the index file still has the module."""
    try:
        write_atomic(idx, json.dumps(record), parents=True)
    except OSError:
        pass


def load(path, form=None, backend="c", *, cache=None, progress=None, check_mass_matrix=True,
         select_by="predicted", mode="symbolic", **import_options) -> CompiledModel:
    """Compile (or fetch from the cache) and import the module of a model file.

    form="auto" picks the cheapest form: by the flop formulas of chapter 4 (select_by=
    "predicted", the dissertation's choice) or by timing every compiled form ("measured").
    mode="numeric": only the joint kinematics, inertias and forces are generated, the recursions
    run as hand-written loops (generator/forms/numeric.py; composite, articulated and ltdl forms).
    A URDF file (docs/urdf.md) takes `import_options`: floating=True (a free root link),
    mimic="independent" (default) or "coupled", limits=True (default: joint limits as `stop`
    forces; False leaves them out); an MJCF file's contacts=False leaves its geoms' contacts out,
    broad_phase=True/False asks for the contacts' broad phase or against it (docs/mjcf.md, docs/contact.md).
    An MJCF file (.xml with a <mujoco> root, or .mjcf; docs/mjcf.md) is read through MuJoCo's compiler.
    """
    from dynamica.build import cache_root, tool_fingerprint
    from dynamica.runtime import fastload
    cache = Path(cache) if cache is not None else cache_root()
    fast = None if import_options else fastload.key(path, form, backend, mode, select_by)
    if fast is not None:                 # loaded before: from the cache, without the generator
        model = fastload.lookup(cache, fast, check_mass_matrix)
        if model is not None:
            return model
    from dynamica.generator.spec.model import load_model
    spec = load_model(path, cache=cache, **import_options)
    form, backend = _resolve_form(path, spec, form, select_by, mode), _resolve_backend(path, backend)
    parts = [tool_fingerprint().encode(), Path(path).read_bytes(), form.encode(), backend.encode(), mode.encode()]
    if import_options:
        parts.append(json.dumps(import_options, sort_keys=True, default=str).encode())
    if spec.functions:                              # the tables' data files are part of the model
        parts.append(repr(spec.functions).encode())
    model = _import(spec, hashlib.sha256(b"\0".join(parts)).hexdigest(), form, backend, mode, cache, progress,
                    check_mass_matrix)
    if fast is not None:
        fastload.remember(cache, fast, model, select_by)
    return model


def _resolve_form(path, spec, form, select_by, mode) -> str:
    """The form asked for, the model file's, or the default (composite, ltdl for large trees);
    "auto": the cheapest by the flop formulas or by timing ("measured"). A ModelError names a
    form the mode does not have."""
    if not (form or spec.simulate.form):        # the default: composite, ltdl for large trees
        from dynamica.generator.cost.flops import default_form
        form = default_form(spec, mode)
    form = form or spec.simulate.form
    if form == "auto":
        if select_by not in ("predicted", "measured"):
            raise ValueError(f"select_by must be 'predicted' or 'measured', not {select_by!r}")
        if select_by == "predicted":
            from dynamica.generator.cost.flops import cheapest_form
            form = cheapest_form(spec)
        elif select_by not in FORM_CHOOSERS:
            raise RuntimeError("select_by='measured' times the compiled forms: import "
                               "dynamica.runtime.analysis.selection (dynamica.load does)")
        else:
            form = FORM_CHOOSERS[select_by](path, spec)
    from dynamica.generator.forms import check_form, forms_of
    forms_of(mode)                                  # ValueError naming the modes
    try:
        return check_form(form, mode)
    except KeyError as exc:
        raise ModelError(str(path), [Problem("form", str(exc.args[0]))]) from None
    except ValueError as exc:
        raise ModelError(str(path), [Problem("form", str(exc))]) from None


def _resolve_backend(path, backend) -> str:
    from dynamica.generator.render import resolve_backend
    try:
        return resolve_backend(backend)
    except ValueError as exc:
        raise ModelError(str(path), [Problem("backend", str(exc))]) from None


def spec_key(spec, form, backend="c", mode="symbolic") -> str:
    """The cache key of a ModelSpec the tool made (a stage's structure, generator/mechanics/stages.py): its
    content (every field but the file name), the form, backend and mode, and this tool."""
    from dataclasses import replace

    from dynamica.build import tool_fingerprint
    parts = [tool_fingerprint().encode(), repr(replace(spec, file="")).encode(), form.encode(), backend.encode(),
             mode.encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def load_spec(spec, form, backend="c", mode="symbolic", *, cache=None, progress=None,
              check_mass_matrix=False, stage_of=None) -> CompiledModel:
    """Compile (or fetch from the cache) and import the module of a ModelSpec (resolved form).
    `stage_of`: the name of the model whose stage's structure `spec` is (recorded in the cache
    entry's manifest, so that `dynamica cache list MODEL` lists the stages' modules)."""
    return _import(spec, spec_key(spec, form, backend, mode), form, backend, mode, cache, progress,
                   check_mass_matrix, stage_of)


def build_spec(spec, form, backend="c", mode="symbolic", cache=None, stage_of=None) -> str:
    """The compiled extension of a ModelSpec (built if not cached), without importing it: what a
    worker process of a parallel build runs (runtime/stages/cyclogram.py)."""
    from dynamica.build import cache_root
    cache = Path(cache) if cache is not None else cache_root()
    return str(_built(spec, spec_key(spec, form, backend, mode), form, backend, mode, cache, None, stage_of))


def _built(spec, key, form, backend, mode, cache, progress, stage_of=None) -> Path:
    """The extension of cache key `key`: from the index when its entry verifies, else generated
    and compiled (and indexed)."""
    from dynamica.build import compile_bundle
    idx = index_path(cache, key)
    so = indexed_extension(idx)
    if so is None:
        from dynamica.generator.pipeline import generate
        gen = generate(spec, form=form, backend=backend, progress=progress, mode=mode)
        so = compile_bundle(gen.bundle, cache=cache, progress=progress,
                            meta={"model": spec.name, "form": form, "mode": mode,
                                  **({"stage_of": stage_of} if stage_of else {})})
        write_index(idx, {"entry": so.parent.name, "file": so.name, "extension": str(so),
                           "signature": gen.module_ir.signature, "model": spec.name, "form": form, "mode": mode})
    return so


def _import(spec, key, form, backend, mode, cache, progress, check_mass_matrix, stage_of=None) -> CompiledModel:
    from dynamica.build import EntryVanished, cache_root, import_extension
    cache = Path(cache) if cache is not None else cache_root()
    for attempt in (1, 2):                  # 2: the entry was pruned between finding and locking it
        so = _built(spec, key, form, backend, mode, cache, progress, stage_of)
        try:
            module = import_extension(so)
            break
        except EntryVanished:
            if attempt == 2:
                raise
    model = CompiledModel(module, spec, so)
    model.backend, model.mode, model.cache = backend, mode, cache      # how its stages' structures are built
    model.stage_of = stage_of                                          # (cache manifests of its companions)
    if check_mass_matrix:
        check_regular(model)
    model.check_defaults = True      # from here on an evaluation at singular default inertias raises (LGR, HLGR)
    return model


#: |eigenvalue| <= SINGULAR_RTOL * largest |eigenvalue|: the mass matrix is singular (and a
#: pivot of its factorization that small is zero)
SINGULAR_RTOL = 1e-12


def _meets_pivots_of_m(form: str) -> bool:
    """Whether the solve of `form` eliminates M's coordinates from the last to the first, so that
    it meets the pivots `_reverse_pivots` computes (registered with the form: `FormInfo.pivots_of_m`;
    LGR and HLGR factor another matrix)."""
    from dynamica.generator.forms import FORM_INFO
    return FORM_INFO[form].pivots_of_m


def check_regular(model: CompiledModel):
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
        null = V[:, size <= SINGULAR_RTOL * size.max()]              # the whole null space
        raise ModelError(model.spec.file, [Problem("bodies", _singular_message(model, w, null))])
    if w[0] > 0:
        return
    from dynamica.generator.spec.model import negative_bodies, warn_model
    bodies = negative_bodies(model.spec)
    warn_model(model.spec, f"the mass matrix is indefinite at the initial state ({int(np.sum(w < 0))} of {len(w)} "
                      f"eigenvalues negative, the smallest {w[0]:.3g}): the kinetic energy is negative for some "
                      "motions; bodies with negative mass or inertia: "
                      + (", ".join(f"`{b}`" for b in bodies) or "none at the default parameters"))
    if not _meets_pivots_of_m(model.form):
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
    """What a singular M looks like: its eigenvalues and the coordinates its null space moves
    (null: its basis as columns)."""
    null = np.asarray(null, dtype=float).reshape(len(w), -1)
    reach = np.linalg.norm(null, axis=1)
    names = [model.coordinates[k] for k in np.flatnonzero(reach > 0.1 * reach.max())]
    size = np.abs(w)
    dim = null.shape[1]
    text = (f"the mass matrix is singular at the initial state: its eigenvalue of least magnitude is "
            f"{w[np.argmin(size)]:.3g}, against {size.max():.3g} the largest"
            + (f" ({dim} such eigenvalues)" if dim > 1 else "")
            + f"; its null {'space' if dim > 1 else 'vector'} moves the coordinates "
            + ", ".join(f"`{c}`" for c in names))
    from dynamica.generator.spec.model import negative_bodies
    bodies = negative_bodies(model.spec)
    if bodies:
        return text + (f" (the negative mass or inertia of {', '.join(f'`{b}`' for b in bodies)} cancels the "
                       "inertia of the other bodies along that motion?)")
    return text + (" (joint axes that line up at this configuration, as in gimbal lock; massless bodies at the end of "
                   "a chain; or joint axes that cannot move any mass?)")


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
