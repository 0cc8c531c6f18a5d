"""`dynamica.load` of a model already in the cache, without the generator.

The usual `load` reads and validates the model file (generator/spec/loader.py: PyYAML and sympy's
parser for every expression) to find the cache key of its module. Once a model has loaded, a
record keyed by what decides that result -- the tool fingerprint, the model file's place (and
the path as given: the spec names the file so) and bytes, the requested form, backend, mode and
`select_by` -- names the module's cache entry and holds the validated ModelSpec (pickled into
it, plain data: without its cached scope), the resolved form and the initial values at the
default parameters (computed with sympy by the first load). A later `load` with the same inputs
takes that record: it imports neither sympy, nor jinja2, nor PyYAML, nor the generator.

A record is written only when reloading it gives what the full path gives: the loader's physics
warnings (negative mass, indefinite inertia: generator/spec/model.py) are kept in it and given again;
the spec's classes are all generator/spec/model.py's (plain data: the stages' and tables' classes
import sympy, and a model with tables also names data files, which the key does not cover); the
form does not check body inertias at load (lagrange1, hamilton-lagrange1); the file is no robot
description (URDF: its converter keeps its own cache); the form was not chosen by measuring. The
check of the mass matrix at the initial state runs on every load, as before. Anything unexpected
while reading a record sends `load` down the full path, which writes it again.
"""

from __future__ import annotations

import base64
import hashlib
import json
import pickle
import warnings
from pathlib import Path

import numpy as np

from dynamica.files import write_atomic

#: the version of the record's layout (another one is ignored)
FORMAT = 2                  # 2: with "initial_depends"


def _record_path(cache: Path, key: str) -> Path:
    return cache / "index" / f"load-{key}.json"


def key(path, form, backend, mode, select_by) -> str | None:
    """The record's key, or None when this load cannot take one (a URDF, an unreadable file)."""
    p = Path(path)
    if p.suffix.lower() == ".urdf":
        return None
    try:
        raw = p.read_bytes()
        where = str(p.resolve())
    except OSError:
        return None
    from dynamica.build import tool_fingerprint
    parts = [tool_fingerprint().encode(), where.encode(), str(path).encode(), raw, repr(form).encode(),
             str(backend).encode(), str(mode).encode(), str(select_by).encode()]
    return hashlib.sha256(b"\0".join(parts)).hexdigest()


def _plain(spec) -> bool:
    """Every dataclass in the spec is generator/spec/model.py's (unpickling imports nothing else)."""
    from dataclasses import fields, is_dataclass
    seen = set()

    def walk(x):
        if id(x) in seen:
            return True
        seen.add(id(x))
        if is_dataclass(x) and not isinstance(x, type):
            if type(x).__module__ != "dynamica.generator.spec.model":
                return False
            return all(walk(getattr(x, f.name)) for f in fields(x))
        if isinstance(x, (tuple, list, frozenset, set)):
            return all(walk(v) for v in x)
        if isinstance(x, dict):
            return all(walk(k) and walk(v) for k, v in x.items())
        return isinstance(x, (str, int, float, bool, type(None)))
    return walk(spec)


def lookup(cache: Path, k: str, check_mass_matrix: bool):
    """The CompiledModel of record `k`, or None (no record, or one that does not verify)."""
    rec_file = _record_path(cache, k)
    try:
        rec = json.loads(rec_file.read_text())
        if rec.get("format") != FORMAT:
            return None
        so = cache / rec["entry"] / rec["file"]
        from dynamica import cache as cache_store
        from dynamica.build import tool_fingerprint
        if cache_store.verify(so.parent, fingerprint=tool_fingerprint()) is not None:
            return None
        spec = pickle.loads(base64.b64decode(rec["spec"]))
    except (OSError, ValueError, KeyError, TypeError, pickle.UnpicklingError, AttributeError, EOFError):
        return None
    from dynamica.build import EntryVanished, import_extension
    from dynamica.runtime.compiled import CompiledModel
    try:
        module = import_extension(so)
    except EntryVanished:
        return None
    initial = tuple(np.array(v, dtype=float) for v in rec["initial"])       # (q0, qd0, s0)
    model = CompiledModel(module, spec, so, initial_at_defaults=initial, inverts_body_inertias=False,
                          initial_depends=rec.get("initial_depends"))
    model.backend, model.mode, model.cache = rec["backend"], rec["mode"], cache
    if check_mass_matrix:
        from dynamica.runtime.api import check_regular
        check_regular(model)
    from dynamica.generator.spec.model import DynamicaWarning
    for message in rec["warnings"]:                  # as generator/spec/model.py `_warn` gives them
        warnings.warn_explicit(message, DynamicaWarning, filename=spec.file, lineno=0, module="dynamica.model")
    model.check_defaults = True
    return model


def remember(cache: Path, k: str, model, select_by) -> None:
    """Write the record of a model the full path loaded (best effort: a cache that cannot take
    it still works)."""
    from dataclasses import replace

    from dynamica.generator.mechanics.body_inertias import inverts_body_inertias
    spec = model.spec
    if inverts_body_inertias(model.form) or select_by == "measured" or not _plain(spec) or model.path is None:
        return
    try:
        so = Path(model.path)
        entry = so.parent
        if entry.parent.resolve() != Path(cache).resolve():
            return
        q0, qd0 = model.initial_state()
        s0 = model.initial_states()
        from dynamica.generator.spec.model import default_value, physics_warnings
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            physics_warnings(spec, default_value(spec))
        spec_text = base64.b64encode(pickle.dumps(replace(spec), protocol=pickle.HIGHEST_PROTOCOL)).decode()
        rec = {"format": FORMAT, "entry": entry.name, "file": so.name, "spec": spec_text, "form": model.form,
               "backend": model.backend, "mode": model.mode, "select_by": select_by,
               "warnings": [str(w.message) for w in caught],
               "initial": [q0.tolist(), qd0.tolist(), np.asarray(s0, dtype=float).tolist()],
               "initial_depends": list(model.initial_depends_on_parameters())}
        path = _record_path(cache, k)
        write_atomic(path, json.dumps(rec), parents=True)
    except (OSError, ValueError, TypeError, pickle.PicklingError):
        return
