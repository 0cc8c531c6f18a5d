"""The module file every backend shares: `<module>.c` (templates/module.c.j2).

It reaches the backend's entry points through `declarations`, gives each Python-callable entry
a one-line adapter with the uniform signature of runtime/dynamica_module.h, lists them in a
table, and carries the module's metadata as a Python literal; dynamica_module.h does the rest.

Python-callable entries by module kind (`ENTRIES`; every kind adds `outputs` when the module
has an outputs kernel):
  lagrangian, numeric   qdd(t, q, qd, p, out), mass_matrix(t, q, p, out), rhs(t, y, p, ydot)
  hamiltonian           rhs(t, y, p, ydot) on y = [q, pm], momenta, velocities, mass_matrix
  iterative             the Lagrangian ones and the solver's controls (`_itr_*`, wrapped in
                        Python by runtime/itr_controls.py, whose text runs in the module)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from importlib import resources

from dynamica import __version__
from dynamica.generator import ir
from dynamica.generator.render.common import env, kernel_names, kernel_output_size
from dynamica.runtime.itr_controls import ITR_SETTINGS, ITR_STATS

#: the first thing a Python call passes, before the arrays (dynamica_module.h DYN_FIRST_*)
FIRST = {"": "DYN_FIRST_NONE", "t": "DYN_FIRST_DOUBLE", "flag": "DYN_FIRST_INT"}


@dataclass(frozen=True)
class Entry:
    """A function of the module callable from Python: `name([t | flag,] arrays...)`."""
    name: str
    arrays: tuple                 # ((name, size, writable), ...)
    doc: str
    first: str = "t"              # a key of FIRST
    returns_int: bool = False
    entry: str = ""               # the backend's entry point it calls (default: name)


def _lagrangian(mod) -> list:
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    return [
        Entry("qdd", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)),
              "Generalized accelerations into `out` (float64 arrays; q, qd, out of length N, p of length NP)."),
        Entry("mass_matrix", (("q", n, 0), ("p", np_, 0), ("out", n * n, 1)),
              "The mass matrix, row-major, into `out` (length N*N)."),
        Entry("rhs", (("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)),
              "The state derivative of y = [q, qd] into `ydot` (length 2N)."),
    ]


def _hamiltonian(mod) -> list:
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    return [
        Entry("rhs", (("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)),
              "The state derivative of y = [q, pm] (pm: Poisson momenta) into `ydot` (length 2N)."),
        Entry("momenta", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)),
              "Poisson momenta pm = B^T M v (1.49) of the state (q, qd), into `out`."),
        Entry("velocities", (("q", n, 0), ("pm", n, 0), ("p", np_, 0), ("out", n, 1)),
              "Generalized velocities qd of the state (q, pm), into `out`."),
        Entry("mass_matrix", (("q", n, 0), ("p", np_, 0), ("out", n * n, 1)),
              "The mass matrix, row-major, into `out` (length N*N)."),
    ]


def _iterative(mod) -> list:
    n = len(mod.coordinates)
    return _lagrangian(mod) + [
        Entry("_itr_stats", (("out", len(ITR_STATS), 1),), "The solver's counters (ITR_STATS) into `out`.",
              first="", entry="itr_stats"),
        Entry("_itr_reset", (), "Forget the inverse estimate (flag & 1) and/or clear the counters (flag & 2).",
              first="flag", entry="itr_reset"),
        Entry("_itr_settings", (("in_", len(ITR_SETTINGS), 0), ("out", len(ITR_SETTINGS), 1)),
              "Change the settings that are not NaN in `in_`; all of them into `out`.", first="",
              entry="itr_settings"),
        Entry("_itr_inverse", (("out", n * n, 1),), "The inverse estimate into `out`; 0 (and NaN) when there is none.",
              first="", returns_int=True, entry="itr_inverse"),
    ]


#: ModuleIR.entries -> the module's Python-callable entries
ENTRIES = {"lagrangian": _lagrangian, "numeric": _lagrangian, "hamiltonian": _hamiltonian, "iterative": _iterative}
#: ModuleIR.entries -> Python source run in the module's namespace at import (runtime/<file>)
PYTHON_CODE = {"iterative": "itr_controls.py"}


def _with_states(mod: ir.ModuleIR, ents: list) -> list:
    """rhs over y = [q, qd, s] (generator/signals.py) and the extra states' rates."""
    if "states" not in kernel_names(mod):
        return ents
    n, np_, k = len(mod.coordinates), len(mod.parameter_defaults), len(mod.states)
    size = 2 * n + k
    out = [dataclasses.replace(e, arrays=(("y", size, 0), ("p", np_, 0), ("ydot", size, 1)),
                               doc=e.doc.replace("2N)", "STATE_SIZE)") + " The extra states (STATES) follow, "
                               "their rates in ydot; their slots in p are ignored.") if e.name == "rhs" else e
           for e in ents]
    out.append(Entry("states", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", k, 1)),
                     "The rates s' of the extra states (STATES) into `out`; the states are read from their "
                     "slots in p (SLOTS)."))
    return out


def entries(mod: ir.ModuleIR) -> list:
    out = _with_states(mod, ENTRIES[mod.entries](mod))
    if "outputs" in kernel_names(mod):
        n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
        size = kernel_output_size(mod, "outputs", "out")
        out.append(Entry("outputs", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", size, 1)),
                         f"The model's outputs (INFO['output_layout']) of the state (q, qd), flat, into `out` "
                         f"(length {size})."))
    return out


def metadata(mod: ir.ModuleIR, backend: str) -> dict:
    """The module's constants (API.md): what `dynamica.load` and users read."""
    n = len(mod.coordinates)
    return {
        "MODEL_NAME": mod.model_name, "FORM": mod.form, "KIND": mod.kind, "SIGNATURE": mod.signature,
        "DYNAMICA_VERSION": __version__, "BACKEND": backend, "COORDINATES": tuple(mod.coordinates),
        "PARAMETERS": tuple(mod.parameters), "PARAMETER_DEFAULTS": tuple(float(x) for x in mod.parameter_defaults),
        "N": n, "NP": len(mod.parameter_defaults), "STATE_SIZE": 2 * n + len(mod.states),
        "OPERATION_COUNTS": {k.name: k.op_count() for k in mod.kernels}, "INFO": dict(mod.info),
        "STATES": tuple(mod.states), "INPUTS": tuple(mod.inputs), "SLOTS": _slots(mod),
    }


def _slots(mod: ir.ModuleIR) -> dict:
    from dynamica.generator.signals import SlotLayout
    n0 = sum(size for _, size in mod.parameters)
    return SlotLayout(n0, tuple(mod.inputs), tuple(mod.states)).metadata()


def c_string(text: str, width: int = 100) -> str:
    """`text` as adjacent C string literals of at most `width` characters (any text: escaped)."""
    if not text:
        return '""'
    pieces, cur = [], ""
    for byte in text.encode():
        ch = chr(byte)
        esc = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "?": "\\?"}.get(ch) or (ch if 32 <= byte < 127 else f"\\{byte:03o}")
        if len(cur) + len(esc) > width:
            pieces.append(cur)
            cur = ""
        cur += esc
    pieces.append(cur)
    return "\n    ".join(f'"{p}"' for p in pieces)


def _adapter(e: Entry, symbol: str) -> dict:
    args = {"t": ["x"], "flag": ["(int)i"], "": []}[e.first] + [f"a[{k}]" for k in range(len(e.arrays))]
    call = f"{symbol}({', '.join(args)})"
    body = f"return {call};" if e.returns_int else f"{call}; return 0;"
    return {"cname": f"dyn_py_{e.name.lstrip('_')}", "body": body}


def module_context(mod: ir.ModuleIR, backend: str, declarations, symbol) -> dict:
    """What templates/module.c.j2 shows; `symbol(entry name)` is the C name of an entry point."""
    ents = entries(mod)
    adapters = [_adapter(e, symbol(e.entry or e.name)) for e in ents]
    table = []
    for e, a in zip(ents, adapters):
        sizes = ", ".join(str(s) for _, s, _ in e.arrays) or "0"
        writable = ", ".join(str(int(w)) for _, _, w in e.arrays) or "0"
        names = ",".join(x for x, _, _ in e.arrays)
        table.append(f'{{"{e.name}", {a["cname"]}, {FIRST[e.first]}, {int(e.returns_int)}, {len(e.arrays)}, '
                     f'{{{sizes}}}, {{{writable}}}, "{names}", {c_string(e.doc, 10**6)}}}')
    python = PYTHON_CODE.get(mod.entries)
    code = resources.files("dynamica.runtime").joinpath(python).read_text() if python else ""
    has_rhs = any(e.name == "rhs" for e in ents)
    ctx = {
        "version": __version__, "model_name": mod.model_name, "form": mod.form, "signature": mod.signature,
        "module_name": mod.module_name, "declarations": list(declarations), "adapters": adapters,
        "table": table, "metadata": c_string(repr(metadata(mod, backend))), "python": c_string(code),
        "rhs": f"(dyn_rhs_fn){symbol('rhs')}" if has_rhs else "NULL",
        "doc": c_string(f"Equations of motion of the model `{mod.model_name}` (form {mod.form}, backend "
                        f"{backend}), generated by dynamica {__version__}."),
    }
    return ctx


def module_file(mod: ir.ModuleIR, backend: str, declarations, symbol) -> tuple:
    """(file name, text) of the module file."""
    return f"{mod.module_name}.c", env().get_template("module.c.j2").render(
        **module_context(mod, backend, declarations, symbol))
