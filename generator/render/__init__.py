"""Rendering: ModuleIR -> SourceBundle (printers + jinja2). No sympy past this point.

Every generated module is one C file, `<module>.c` (templates/module.c.j2 over the hand-written
templates/native/dynamica_module.h, see module.py): its Python-callable entries, its metadata and the C
entry point for integrators. A backend prints the kernels and the entry points around them in
its own language; build.py compiles the module file with the C compiler, the backend's other
sources with their compiler, and links one extension module.

A backend is one registered record (`BACKENDS`), defined in its own module:

    c        C99 kernels in a header the module file includes (c.py); alias "cython", the
             name of the first implementation, kept for the API
    fortran  Fortran 2008 kernels with bind(C) entry points, compiled by gfortran (fortran.py)

To add a backend: a module here that builds a `Backend` (a printer in printers.py, its templates
with their contexts, the C declarations of its entry points) and calls `register`; build.py
compiles files of a new `language` once told how (build.COMPILERS).
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from typing import Callable

from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.kinds import module_kind
from dynamica.generator.render.common import SourceBundle, env, helper_files
from dynamica.generator.render.module import module_file

__all__ = ["BACKENDS", "Backend", "SourceBundle", "backend_names", "register", "render", "resolve_backend"]


@dataclass(frozen=True)
class Backend:
    """How one language prints a module's kernels and the entry points around them."""
    name: str
    printer: type                       # IR expressions -> text (printers.py)
    templates: tuple                    # ((template, file name "{module}...", context(mod) -> dict,
                                        #   language compiled apart, or None: included by the module file), ...)
    declarations: Callable              # (mod) -> lines of C through which the module file reaches the entries
    entry_symbol: Callable              # (mod, entry name) -> the C symbol of that entry point
    helpers: tuple = ()                 # fixed files of dynamica.templates.native copied into the build
    description: str = ""


#: fixed files every module file includes (the loops' layer and its tree L^T D L only when used, always copied)
MODULE_HELPERS = ("dynamica_module.h", "dynamica_constraints.h", "dynamica_tree_ldl.h")
BACKENDS: dict = {}
ALIASES = {"cython": "c"}


def register(backend: Backend) -> Backend:
    BACKENDS[backend.name] = backend
    return backend


def resolve_backend(name: str) -> str:
    """Canonical backend name (ValueError listing the choices)."""
    _discover()
    name = ALIASES.get(name, name)
    if name not in BACKENDS:
        raise ValueError(f"unknown backend {name!r}; available: {', '.join(sorted(BACKENDS))} "
                         f"({', '.join(f'{a} = {b}' for a, b in ALIASES.items())})")
    return name


def backend_names() -> tuple:
    """Every name `backend=` accepts: the registered backends and their aliases."""
    _discover()
    return tuple(sorted(BACKENDS)) + tuple(sorted(ALIASES))


def render(mod: ir.ModuleIR, backend: str = "c") -> SourceBundle:
    b = BACKENDS[resolve_backend(backend)]
    if b.name not in module_kind(mod.entries).backends:          # the kinds it renders: generator/ir/kinds.py
        raise ValueError(f"backend {b.name!r} cannot render {mod.entries!r} modules (form {mod.form!r}); "
                         f"use backend 'c'")
    files, compiled = [], []
    for template, pattern, context, language in b.templates:
        name = pattern.format(module=mod.module_name)
        files.append((name, env().get_template(template).render(**context(mod))))
        if language is not None:
            compiled.append((name, language))
    main = module_file(mod, b.name, b.declarations(mod), lambda name: b.entry_symbol(mod, name))
    files = [main] + files + list(helper_files(MODULE_HELPERS + tuple(b.helpers)))
    return SourceBundle(module_name=mod.module_name, backend=b.name, files=tuple(files), signature=mod.signature,
                        op_count=sum(k.op_count()["total"] for k in mod.kernels), compiled=tuple(compiled))


def _discover():
    """Import every module of this package once: each backend module registers itself."""
    for info in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{info.name}")
