"""Module kinds: what a generated module's entry points are (ModuleIR.entries names one), one
record each (`ModuleKind`), so that a new kind is one record in one file:

    lagrangian   q'' and M of a Lagrangian form (the kernels `dynamics`, `mass`)
    numeric      a numeric-mode form (the recursions as loops over the generated joint kernels)
    hamiltonian  q', p' of a Hamiltonian form, the momenta and M
    iterative    q'' of the iterative forms (the solver's controls in Python at import)
    derivatives  the residual, its Jacobian by [q, q'] and M, and the solves composed over them
    inverse      the recursive Newton-Euler inverse dynamics and the gravity forces
    frames       placement, velocities, accelerations and Jacobians of one body's frame

The records themselves are declared where their parts are written (generator/kinds/__init__.py
for the first four; generator/kinds/derivatives.py, inverse.py, frames.py for theirs). This module holds only
the record type and the table, so that the IR's consumers (forms.kernel_specs, the backends, the
module file) look a kind up without importing the code that declares it: `module_kind` imports
dynamica.generator.kinds (which registers every kind) on first use.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class ModuleKind:
    name: str
    kernels: Callable                   # (eom) -> [KernelSpec]: the kernels its entries call (before the
                                        #   form's own extra_kernels)
    python_entries: Callable            # (mod) -> [render.module.Entry]: what Python can call
    backends: dict                      # backend name -> (mod) -> [entry point]: the backends that render it
    preambles: dict = field(default_factory=dict)   # backend -> (mod) -> lines before the kernels
    composed: Callable | None = None    # (mod, symbol) -> (C lines, {entry: C function}): entry points composed
                                        #   in the module file over the backend's, the same for every backend
    python_code: str | None = None      # a file of dynamica.templates.native run in the module at import
    description: str = ""


#: kind name -> its record
MODULE_KINDS: dict = {}


def register_kind(kind: ModuleKind) -> ModuleKind:
    MODULE_KINDS[kind.name] = kind
    return kind


def module_kind(name: str) -> ModuleKind:
    """The record of a module kind (ValueError naming the known ones)."""
    importlib.import_module("dynamica.generator.kinds")             # registers every kind
    if name not in MODULE_KINDS:
        raise ValueError(f"unknown module kind {name!r}; known: {', '.join(sorted(MODULE_KINDS))}")
    return MODULE_KINDS[name]
