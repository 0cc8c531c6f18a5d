"""The module file every backend shares: `<module>.c` (templates/module.c.j2).

It reaches the backend's entry points through `declarations`, gives each Python-callable entry
a one-line adapter with the uniform signature of templates/native/dynamica_module.h, lists them in a
table, and carries the module's metadata as a Python literal; dynamica_module.h does the rest.

Python-callable entries by module kind (ModuleKind.python_entries, generator/ir/kinds.py; every
kind adds `outputs` when the module has an outputs kernel):
  lagrangian, numeric   qdd(t, q, qd, p, out), mass_matrix(t, q, p, out), rhs(t, y, p, ydot)
  hamiltonian           rhs(t, y, p, ydot) on y = [q, pm], momenta, velocities, mass_matrix
  iterative             the Lagrangian ones and the solver's controls (`_itr_*`, wrapped in
                        Python by templates/native/itr_controls.py, whose text runs in the module)
  derivatives           residual, residual_jacobian, mass_matrix (the backend's) and qdd,
                        qdd_jacobian, rhs, jacobian composed from them in the module file
                        (ModuleKind.composed, templates/native/dynamica_linalg.h)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from importlib import resources

from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.kinds import module_kind
from dynamica.generator.render.common import env, kernel_names, kernel_output_size
from dynamica.templates.native.itr_controls import ITR_SETTINGS, ITR_STATS
from dynamica.version import __version__

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
    symbol: str = ""              # or a C function of the module file itself (a layer's, below)


def lagrangian_entries(mod) -> list:
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    return [
        Entry("qdd", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)),
              "Generalized accelerations into `out` (float64 arrays; q, qd, out of length N, p of length NP)."),
        Entry("mass_matrix", (("q", n, 0), ("p", np_, 0), ("out", n * n, 1)),
              "The mass matrix, row-major, into `out` (length N*N)."),
        Entry("rhs", (("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)),
              "The state derivative of y = [q, qd] into `ydot` (length 2N)."),
    ]


def hamiltonian_entries(mod) -> list:
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


def iterative_entries(mod) -> list:
    n = len(mod.coordinates)
    return lagrangian_entries(mod) + [
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


def derivative_entries(mod) -> list:
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    state = (("q", n, 0), ("qd", n, 0))
    return [
        Entry("residual", state + (("qdd", n, 0), ("p", np_, 0), ("out", n, 1)),
              "The residual r = M(q) qdd - Q(t, q, qd) of the equations of motion into `out` (length N)."),
        Entry("residual_jacobian", state + (("qdd", n, 0), ("p", np_, 0), ("r", n, 1), ("out", 2 * n * n, 1)),
              "The residual into `r` and its Jacobian [dr/dq | dr/dqd] at fixed qdd, row-major N x 2N, into `out`."),
        Entry("mass_matrix", (("q", n, 0), ("p", np_, 0), ("out", n * n, 1)),
              "The mass matrix, row-major, into `out` (length N*N)."),
        Entry("qdd", state + (("p", np_, 0), ("out", n, 1)),
              "Generalized accelerations -M^-1 r(t, q, qd, 0) into `out` (NaN when M is singular)."),
        Entry("qdd_jacobian", state + (("p", np_, 0), ("qdd", n, 1), ("out", 2 * n * n, 1)),
              "q'' into `qdd` and dq''/d[q, qd] = -M^-1 [dr/dq | dr/dqd], row-major N x 2N, into `out`."),
        Entry("qdd_derivatives", state + (("p", np_, 0), ("qdd", n, 1), ("out", 2 * n * n, 1), ("minv", n * n, 1)),
              "As qdd_jacobian, and M^-1 (row-major N x N) into `minv` from the same factors of M."),
        Entry("rhs", (("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)),
              "The state derivative of y = [q, qd] into `ydot` (length 2N)."),
        Entry("jacobian", (("y", 2 * n, 0), ("p", np_, 0), ("out", 4 * n * n, 1)),
              "The state Jacobian d[qd, qdd]/d[q, qd], row-major 2N x 2N, into `out`."),
    ]


def _pair_lines(n, symbol) -> list:
    """The residual Jacobian, M and the solve of the variants whose pairs of coordinates run in
    loops (recursive_loops, numeric)."""
    nv = 42 * n
    terms = f"(dyn_pair_terms_fn){symbol('pair_terms')}, (dyn_pair_mass_fn){symbol('pair_mass')}"
    return [
        "static void dyn_m_residual_jacobian(double t, const double *q, const double *qd, const double *x,",
        "                                    const double *p, double *r, double *J)",
        f"{{ dyn_rl_residual_jacobian({n}, {nv}, dyn_rl_pred, (dyn_pair_terms_fn){symbol('pair_terms')}, t, q, qd, "
        "x, p, r, J); }",
        "static void dyn_m_mass_matrix(double t, const double *q, const double *p, double *M)",
        f"{{ dyn_rl_mass_matrix({n}, dyn_rl_pred, (dyn_pair_mass_fn){symbol('pair_mass')}, t, q, p, M); }}",
        "static void dyn_m_solve_jacobian(double t, const double *q, const double *qd, const double *p,",
        "                                 double *qdd, double *F, double *J)",
        f"{{ dyn_rl_solve_jacobian({n}, {nv}, dyn_rl_pred, {terms}, t, q, qd, p, qdd, F, J); }}"]


def _tape_lines(mod, n, symbol) -> list:
    """The residual Jacobian of the tape (generator/ir/tangent.py tape_kernel)."""
    size = kernel_output_size(mod, "residual_partials", "P")
    return [
        "static void dyn_m_residual_jacobian(double t, const double *q, const double *qd, const double *x,",
        "                                    const double *p, double *r, double *J)",
        "{",
        f"    double *P = (double *)malloc({size} * sizeof(double));",
        "    double *T = (double *)malloc((size_t)dyn_tp_meta[1] * dyn_tp_meta[3] * sizeof(double));",
        f"    if (P == NULL || T == NULL) {{ dyn_fill_nan(r, {n}); dyn_fill_nan(J, {2 * n * n}); }}",
        f"    else {{ {symbol('residual_partials')}(t, q, qd, x, p, r, P);",
        "           dyn_tape_jacobian(dyn_tp_meta, dyn_tp_stmt, dyn_tp_edge, dyn_tp_out, P, T, J); }",
        "    free(P);",
        "    free(T);",
        "}"]


def _composed_lines(n, res, mass, qdd_jac, qdd_der, state_jac) -> list:
    """q'', its Jacobian and derivatives, the RHS and the state Jacobian composed from the parts."""
    return [
        "static void dyn_m_qdd(double t, const double *q, const double *qd, const double *p, double *out)",
        f"{{ dyn_dv_qdd({n}, {res}, {mass}, t, q, qd, p, out); }}",
        "static void dyn_m_qdd_jacobian(double t, const double *q, const double *qd, const double *p, double *qdd,",
        "                               double *out)",
        f"{{ {qdd_jac} }}",
        "static void dyn_m_qdd_derivatives(double t, const double *q, const double *qd, const double *p,",
        "                                  double *qdd, double *out, double *minv)",
        f"{{ {qdd_der} }}",
        "static void dyn_m_rhs(double t, const double *y, const double *p, double *ydot)",
        f"{{ memcpy(ydot, y + {n}, {n} * sizeof(double)); dyn_m_qdd(t, y, y + {n}, p, ydot + {n}); }}",
        "static void dyn_m_jacobian(double t, const double *y, const double *p, double *out)",
        f"{{ {state_jac} }}",
    ]


def derivative_solves(mod, symbol) -> tuple:
    """q'', dq''/d[q, qd], the state Jacobian and rhs composed from the backend's residual,
    residual_jacobian and mass_matrix entry points by templates/native/dynamica_linalg.h."""
    n = len(mod.coordinates)
    res, mass = f"(dyn_residual_fn){symbol('residual')}", f"(dyn_mass_fn){symbol('mass_matrix')}"
    lines, names = ['#include "dynamica_linalg.h"'], {}
    if "mass_times" in kernel_names(mod):               # M column by column from M x
        lines += [
            "static void dyn_m_mass_matrix(double t, const double *q, const double *p, double *M)",
            f"{{ dyn_dv_mass_by_columns({n}, (dyn_mass_times_fn){symbol('mass_times')}, t, q, p, M); }}"]
        mass, names = "(dyn_mass_fn)dyn_m_mass_matrix", {"mass_matrix": "dyn_m_mass_matrix"}
    pairs = bool({"pair_terms", "numeric_terms"} & set(kernel_names(mod)))
    if pairs:              # variants recursive_loops and numeric: pairs of coordinates in loops
        lines += _pair_lines(n, symbol)
        mass, names = "(dyn_mass_fn)dyn_m_mass_matrix", {"mass_matrix": "dyn_m_mass_matrix",
                                                          "residual_jacobian": "dyn_m_residual_jacobian"}
    if "residual_partials" in kernel_names(mod):       # the tape (generator/ir/tangent.py tape_kernel)
        lines += _tape_lines(mod, n, symbol)
        jac, names = (
            "(dyn_residual_jacobian_fn)dyn_m_residual_jacobian",
            {**names, "residual_jacobian": "dyn_m_residual_jacobian"},
        )
    elif pairs:
        jac = "(dyn_residual_jacobian_fn)dyn_m_residual_jacobian"
    else:
        jac = f"(dyn_residual_jacobian_fn){symbol('residual_jacobian')}"
    if "solve_jacobian" in kernel_names(mod) or pairs:
        # q'', M's factors and J in one call (variants recursive and recursive_loops)
        solve = f"(dyn_solve_jacobian_fn){symbol('solve_jacobian')}" if "numeric_terms" in kernel_names(mod) else \
            "(dyn_solve_jacobian_fn)dyn_m_solve_jacobian" if pairs else \
            f"(dyn_solve_jacobian_fn){symbol('solve_jacobian')}"
        qdd_jac = f"dyn_dv_ldl_qdd_jacobian({n}, {solve}, t, q, qd, p, out, qdd);"
        qdd_der = f"dyn_dv_ldl_qdd_derivatives({n}, {solve}, t, q, qd, p, out, qdd, minv);"
        state_jac = f"dyn_dv_ldl_state_jacobian({n}, {solve}, t, y, p, out);"
    else:
        qdd_jac = f"dyn_dv_qdd_jacobian({n}, {res}, {jac}, {mass}, t, q, qd, p, out, qdd);"
        qdd_der = f"dyn_dv_qdd_derivatives({n}, {res}, {jac}, {mass}, t, q, qd, p, out, qdd, minv);"
        state_jac = f"dyn_dv_state_jacobian({n}, {res}, {jac}, {mass}, t, y, p, out);"
    lines += _composed_lines(n, res, mass, qdd_jac, qdd_der, state_jac)
    return lines, {"qdd": "dyn_m_qdd", "qdd_jacobian": "dyn_m_qdd_jacobian",
                   "qdd_derivatives": "dyn_m_qdd_derivatives", "rhs": "dyn_m_rhs",
                   "jacobian": "dyn_m_jacobian", **names}




def exported(mod: ir.ModuleIR) -> list:
    """Entries of the kernels exported with their own arguments (KernelSpec.export): inputs after t,
    then outputs."""
    out = []
    for k in mod.kernels:
        if k.exported:
            arrays = tuple((i.name, i.size, 0) for i in k.inputs if i.size is not None) + \
                tuple((o.name, o.size, 1) for o in k.outputs)
            out.append(Entry(k.name, arrays, f"The kernel `{k.name}` (generated): "
                                             f"({', '.join(i.name for i in k.inputs)}) -> "
                                             f"{', '.join(o.name for o in k.outputs)}."))
    return out


def _with_states(mod: ir.ModuleIR, ents: list) -> list:
    """rhs over y = [q, qd, s] (generator/mechanics/signals.py) and the extra states' rates."""
    if "states" not in kernel_names(mod):
        return ents
    n, np_, k = len(mod.coordinates), len(mod.parameter_defaults), len(mod.states)
    size = 2 * n + k
    out = [replace(e, arrays=(("y", size, 0), ("p", np_, 0), ("ydot", size, 1)),
                   doc=e.doc.replace("2N)", "STATE_SIZE)") + " The extra states (STATES) follow, "
                   "their rates in ydot; their slots in p are ignored.") if e.name == "rhs" else e
           for e in ents]
    out.append(Entry("states", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", k, 1)),
                     "The rates s' of the extra states (STATES) into `out`; the states are read from their "
                     "slots in p (SLOTS)."))
    return out


def entries(mod: ir.ModuleIR) -> list:
    out = _with_states(mod, module_kind(mod.entries).python_entries(mod))
    if "outputs" in kernel_names(mod):
        n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
        size = kernel_output_size(mod, "outputs", "out")
        out.append(Entry("outputs", (("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", size, 1)),
                         f"The model's outputs (INFO['output_layout']) of the state (q, qd), flat, into `out` "
                         f"(length {size})."))
    return out + exported(mod)


@dataclass(frozen=True)
class Layer:
    """C functions the module file adds over the backend's entry points, the Python entries they
    replace or add, and C entry points for compiled code (capsules: (attribute, name, function))."""
    functions: tuple
    entries: tuple
    capsules: tuple = ()


#: layers a module may need, each (mod, symbol) -> Layer or None (render/constrained.py: closed loops)
LAYERS: list = []


def _composed(mod: ir.ModuleIR, symbol) -> Layer | None:
    """The entry points a module kind composes in the module file (ModuleKind.composed)."""
    kind = module_kind(mod.entries)
    if kind.composed is None:
        return None
    lines, names = kind.composed(mod, symbol)
    ents = tuple(replace(e, symbol=names[e.name]) for e in kind.python_entries(mod) if e.name in names)
    return Layer(tuple(lines), ents, (("rhs_capsule", "dynamica.rhs", names["rhs"]),) if "rhs" in names else ())


LAYERS.append(_composed)


def metadata(mod: ir.ModuleIR, backend: str) -> dict:
    """The module's constants (docs/api.md): what `dynamica.load` and users read."""
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
    from dynamica.generator.mechanics.signals import SlotLayout
    n0 = sum(size for _, size in mod.parameters)
    return SlotLayout(n0, tuple(mod.inputs), tuple(mod.states)).metadata()


def c_string(text: str, width: int = 100) -> str:
    """`text` as adjacent C string literals of at most `width` characters (any text: escaped)."""
    if not text:
        return '""'
    pieces, cur = [], ""
    for byte in text.encode():
        ch = chr(byte)
        esc = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "?": "\\?"}.get(ch) or (
            ch if 32 <= byte < 127 else f"\\{byte:03o}"
        )
        if len(cur) + len(esc) > width:
            pieces.append(cur)
            cur = ""
        cur += esc
    pieces.append(cur)
    return "\n    ".join(f'"{p}"' for p in pieces)


def layered_entries(mod: ir.ModuleIR, symbol) -> tuple:
    """(entry points, C functions the layers add, [capsules of each layer]) of the module file:
    the kind's entries with each layer of LAYERS (closed loops, extra states, composed solves)
    replacing the entries it redefines; `symbol(entry name)` is the C name of an entry point.
    Shared by the module file and the exported C library (runtime/export/c_library.py)."""
    ents, functions, capsules = entries(mod), [], []
    for layer in LAYERS:
        extra = layer(mod, symbol)
        if extra is None:
            continue
        functions += extra.functions
        replaced = {e.name for e in extra.entries}
        ents = [e for e in ents if e.name not in replaced] + list(extra.entries)
        capsules.append(list(extra.capsules))
    return ents, functions, capsules


def _adapter(e: Entry, symbol: str) -> dict:
    args = {"t": ["x"], "flag": ["(int)i"], "": []}[e.first] + [f"a[{k}]" for k in range(len(e.arrays))]
    call = f"{symbol}({', '.join(args)})"
    body = f"return {call};" if e.returns_int else f"{call}; return 0;"
    return {"cname": f"dyn_py_{e.name.lstrip('_')}", "body": body}


def module_context(mod: ir.ModuleIR, backend: str, declarations, symbol) -> dict:
    """What templates/module.c.j2 shows; `symbol(entry name)` is the C name of an entry point."""
    capsules = [("rhs_capsule", "dynamica.rhs", symbol("rhs"))] if any(e.name == "rhs" for e in entries(mod)) else []
    ents, functions, layer_capsules = layered_entries(mod, symbol)
    for added in layer_capsules:                # a layer's capsule replaces one of the same name
        capsules = [c for c in capsules if c[0] not in {a for a, _, _ in added}] + list(added)
    adapters = [_adapter(e, e.symbol or symbol(e.entry or e.name)) for e in ents]
    out = next((e for e in ents if e.name == "outputs"), None)
    if out is not None:                 # the outputs of many rows in one call (runtime/native/series_core.pyx)
        capsules.append(("outputs_capsule", "dynamica.outputs", out.symbol or symbol(out.entry or out.name)))
    table = []
    for e, a in zip(ents, adapters):
        sizes = ", ".join(str(s) for _, s, _ in e.arrays) or "0"
        writable = ", ".join(str(int(w)) for _, _, w in e.arrays) or "0"
        names = ",".join(x for x, _, _ in e.arrays)
        table.append(f'{{"{e.name}", {a["cname"]}, {FIRST[e.first]}, {int(e.returns_int)}, {len(e.arrays)}, '
                     f'{{{sizes}}}, {{{writable}}}, "{names}", {c_string(e.doc, 10**6)}}}')
    python = module_kind(mod.entries).python_code
    code = resources.files("dynamica.templates.native").joinpath(python).read_text() if python else ""
    ctx = {
        "version": __version__, "model_name": mod.model_name, "form": mod.form, "signature": mod.signature,
        "module_name": mod.module_name, "declarations": list(declarations), "functions": functions,
        "adapters": adapters, "table": table, "metadata": c_string(repr(metadata(mod, backend))),
        "python": c_string(code), "capsules": [f'{{"{a}", "{n}", (void *){fn}}}' for a, n, fn in capsules],
        "n_capsules": len(capsules),
        "doc": c_string(f"Equations of motion of the model `{mod.model_name}` (form {mod.form}, backend "
                        f"{backend}), generated by dynamica {__version__}."),
    }
    return ctx


def module_file(mod: ir.ModuleIR, backend: str, declarations, symbol) -> tuple:
    """(file name, text) of the module file."""
    return f"{mod.module_name}.c", env().get_template("module.c.j2").render(
        **module_context(mod, backend, declarations, symbol))
