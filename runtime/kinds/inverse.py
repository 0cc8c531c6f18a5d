"""The inverse-dynamics companion of a compiled model (generator/kinds/inverse.py): a module of kind
"inverse" generated, compiled and cached on first use, so that models that do not ask for it
pay nothing. `CompiledModel.inverse_dynamics` and `gravity_forces` call it."""

from __future__ import annotations

import hashlib

#: spec -> the imported companion module (one per process)
_LOADED: dict = {}


def companion(model):
    """The imported `<model>_inverse` module of a CompiledModel (generated and compiled once)."""
    key = id(model.spec)
    if key in _LOADED and _LOADED[key][0] is model.spec:
        return _LOADED[key][1]
    from dynamica.build import cache_root, compile_bundle, import_extension, tool_fingerprint
    from dynamica.runtime.api import index_path, indexed_extension, write_index
    cache = cache_root()
    digest = hashlib.sha256(b"\0".join([tool_fingerprint().encode(), repr(model.spec).encode(),
                                        b"inverse"])).hexdigest()
    idx = index_path(cache, digest)
    so = indexed_extension(idx)
    if so is None:
        from dynamica.generator.kinds.inverse import generate_inverse
        bundle = generate_inverse(model.spec)
        so = compile_bundle(bundle, cache=cache, meta={"model": model.spec.name, "form": "inverse", "mode": "symbolic"})
        write_index(idx, {"entry": so.parent.name, "file": so.name, "extension": str(so),
                           "signature": bundle.signature, "model": model.spec.name, "form": "inverse"})
    module = import_extension(so)
    _LOADED[key] = (model.spec, module)
    return module
