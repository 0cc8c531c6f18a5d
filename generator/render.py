"""Rendering: ModuleIR -> SourceBundle (printer + jinja2). No sympy past this point.

All text the template shows is prepared here as plain strings; the template only places it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from importlib import resources

import jinja2

from dynamica import __version__
from dynamica.generator import ir
from dynamica.generator.printers import PRINTERS


@dataclass(frozen=True)
class SourceBundle:
    module_name: str
    backend: str
    files: tuple            # ((filename, text), ...); the first is the main source
    signature: str
    op_count: int = 0       # arithmetic operations of the kernels (chooses compiler effort)

    @property
    def main(self) -> tuple:
        return self.files[0]


def _env() -> jinja2.Environment:
    path = resources.files("dynamica.templates")
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(path)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


PREFIX = "dyn_k_"      # kernels
ENTRY = "dyn_"        # entry points (the module's C interface)
#: expression nodes per C function: bounds the C compiler's time and memory on large programs
CHUNK = 4000
#: workspaces up to this many doubles live on the stack, larger ones on the heap
STACK_DOUBLES = 16384
#: runs of at least this many output entries stored as the literal 0 become one fill (`zero_runs`)
ZERO_RUN = 8


def _c_args(kernel: ir.Kernel) -> str:
    args = []
    for inp in kernel.inputs:
        args.append(f"double in_{inp.name}" if inp.size is None else f"const double *in_{inp.name}")
    args += [f"double *out_{o.name}" for o in kernel.outputs]
    return ", ".join(args)


def _decls(names, per_line=16):
    names = list(names)
    return [f"double {', '.join(names[k:k + per_line])};" for k in range(0, len(names), per_line)]


def _vars(node, acc):
    """Names of the temporaries an expression reads."""
    if isinstance(node, ir.Var):
        acc.add(node.name)
    for k in ir.children(node):
        _vars(k, acc)
    return acc


def _size(node) -> int:
    """Number of expression nodes."""
    return 1 + sum(_size(k) for k in ir.children(node))


def split_kernel(kernel: ir.Kernel, chunk: int = CHUNK):
    """Cut the straight-line body into functions of at most about `chunk` expression nodes.

    Temporaries used outside the part that defines them move to a workspace `dyn_w`.
    Returns (parts, shared) with parts a list of statement tuples and shared the workspace
    index of each shared temporary.
    """
    body = kernel.body
    parts, cur, size = [], [], 0
    for st in body:
        cur.append(st)
        size += _size(st.value)
        if size >= chunk:
            parts.append(tuple(cur))
            cur, size = [], 0
    if cur or not parts:
        parts.append(tuple(cur))
    home = {}
    for ci, part in enumerate(parts):
        for st in part:
            if isinstance(st, ir.Assign):
                home[st.target] = ci
    shared = {}
    for ci, part in enumerate(parts):
        for st in part:
            for v in sorted(_vars(st.value, set()), key=lambda v: (home[v], v)):
                if home[v] != ci and v not in shared:
                    shared[v] = None
    position = {st.target: k for k, st in enumerate(body) if isinstance(st, ir.Assign)}
    order = sorted(shared, key=position.__getitem__)
    return parts, {v: k for k, v in enumerate(order)}


def zero_runs(kernel: ir.Kernel, min_run: int):
    """Stores of the literal 0 to `min_run` or more consecutive entries of an output array, e.g.
    the structural zeros of a star's mass matrix (a 500-body star: 248 502 of its 250 000 entries).

    Returns (kernel without those stores, [(array, start, length)]). Each run becomes one fill
    after the kernel's parts; as single stores, they made the C compiler's alias and dead-store
    passes superlinear (a 200-body star: 40 000 stores of M, 39 402 of them zero)."""
    count, zeros = {}, {}
    for st in kernel.body:
        if isinstance(st, ir.Store):
            count[(st.array, st.index)] = count.get((st.array, st.index), 0) + 1
            if isinstance(st.value, ir.Num) and st.value.value == 0.0 and math.copysign(1.0, st.value.value) > 0:
                zeros.setdefault(st.array, []).append(st.index)
    runs, drop = [], set()
    for array in sorted(zeros):
        idx = sorted(i for i in set(zeros[array]) if count[(array, i)] == 1)
        start = 0
        for k in range(1, len(idx) + 1):
            if k == len(idx) or idx[k] != idx[k - 1] + 1:
                if k - start >= min_run:
                    runs.append((array, idx[start], k - start))
                    drop.update((array, i) for i in idx[start:k])
                start = k
    if not runs:
        return kernel, []
    body = tuple(st for st in kernel.body if not (isinstance(st, ir.Store) and (st.array, st.index) in drop))
    return replace(kernel, body=body), runs


def kernel_context(kernel: ir.Kernel, printer_cls) -> dict:
    arrays = {i.name: f"in_{i.name}" for i in kernel.inputs} | {o.name: f"out_{o.name}" for o in kernel.outputs}
    kernel, zeros = zero_runs(kernel, ZERO_RUN)
    parts, shared = split_kernel(kernel, CHUNK)
    pr = printer_cls(arrays, {v: f"dyn_w[{k}]" for v, k in shared.items()})
    cname = f"{PREFIX}{kernel.name}"
    out_parts = []
    for ci, part in enumerate(parts):
        lines, local = [], []
        for st in part:
            if isinstance(st, ir.Assign):
                target = pr.var(st.target)
                if st.target not in shared:
                    local.append(st.target)
                lines.append(f"{target} = {pr.doprint(st.value)};")
            elif isinstance(st, ir.Store):
                lines.append(f"out_{st.array}[{st.index}] = {pr.doprint(st.value)};")
            else:
                raise TypeError(f"unknown statement {type(st).__name__}")
        out_parts.append({"name": f"{cname}_part{ci}", "decls": _decls(local), "lines": lines})
    call_args = ", ".join([f"in_{i.name}" for i in kernel.inputs] + [f"out_{o.name}" for o in kernel.outputs])
    nw = len(shared)
    if nw == 0:
        driver = ["double *dyn_w = NULL;"]
    elif nw <= STACK_DOUBLES:
        driver = [f"double dyn_w[{nw}];"]
    else:
        driver = [f"double *dyn_w = (double *)malloc({nw} * sizeof(double));",
                  "if (dyn_w == NULL) {"]
        driver += [f"    for (int k = 0; k < {o.size}; ++k) out_{o.name}[k] = NAN;" for o in kernel.outputs]
        driver += ["    return;", "}"]
    driver += [f"{p['name']}({call_args}, dyn_w);" for p in out_parts]
    driver += [f"memset(out_{a} + {i}, 0, {n} * sizeof(double));" for a, i, n in zeros]
    if nw > STACK_DOUBLES:
        driver.append("free(dyn_w);")
    return {"cname": cname, "c_args": _c_args(kernel), "parts": out_parts, "driver": driver}


def _scratch(name, size, outputs):
    """A scratch array: on the stack when small, else on the heap (NaN outputs if that fails)."""
    if size <= STACK_DOUBLES:
        return [f"double {name}[{size}];"], []
    fail = [f"    for (int k = 0; k < {n}; ++k) {o}[k] = NAN;" for o, n in outputs]
    return ([f"double *{name} = (double *)malloc({size} * sizeof(double));", f"if ({name} == NULL) {{"]
            + fail + ["    return;", "}"], [f"free({name});"])


def _kernel_names(mod):
    return {k.name for k in mod.kernels}


def lagrangian_entries(mod: ir.ModuleIR) -> list:
    """The C functions a Lagrangian module exports around its kernels.

    qdd(t, q, qd, p, qdd), mass_matrix(t, q, p, M) and the entry point for integrators
    rhs(t, y, p, ydot) with y = [q, qd], ydot = [qd, qdd]. Returns [{"signature", "lines"}].
    """
    n = len(mod.coordinates)
    k = f"{PREFIX}dynamics"
    if "mass" in _kernel_names(mod):
        qdd = [f"{k}(t, q, qd, p, qdd);"]
        mass = [f"{PREFIX}mass(t, q, p, M);"]
    else:
        m_decl, m_free = _scratch("M", max(n * n, 1), [("qdd", n)])
        w_decl, w_free = _scratch("work", 2 * n, [("M", n * n)])
        qdd = m_decl + [f"{k}(t, q, qd, p, qdd, M);"] + m_free
        mass = w_decl + [f"memset(work, 0, {n} * sizeof(double));", f"{k}(t, q, work, p, work + {n}, M);"] + w_free
    return [
        {"signature": f"void {ENTRY}qdd(double t, const double *q, const double *qd, const double *p, double *qdd)",
         "lines": qdd},
        {"signature": f"void {ENTRY}mass_matrix(double t, const double *q, const double *p, double *M)",
         "lines": mass},
        {"signature": f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)",
         "lines": [f"memcpy(ydot, y + {n}, {n} * sizeof(double));", f"{ENTRY}qdd(t, y, y + {n}, p, ydot + {n});"]},
    ]


def hamiltonian_entries(mod: ir.ModuleIR) -> list:
    """A Hamiltonian module: rhs on y = [q, pm] (pm the Poisson momenta (1.49)), the
    conversions momenta(t, q, qd, p, pm) and velocities(t, q, pm, p, qd), and mass_matrix."""
    n = len(mod.coordinates)
    s_decl, s_free = _scratch("pmd", max(n, 1), [("qd", n)])
    return [
        {"signature": f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)",
         "lines": [f"{PREFIX}hamilton(t, y, y + {n}, p, ydot, ydot + {n});"]},
        {"signature": f"void {ENTRY}momenta(double t, const double *q, const double *qd, const double *p, "
                      "double *pm)",
         "lines": [f"{PREFIX}momenta(t, q, qd, p, pm);"]},
        {"signature": f"void {ENTRY}velocities(double t, const double *q, const double *pm, const double *p, "
                      "double *qd)",
         "lines": s_decl + [f"{PREFIX}hamilton(t, q, pm, p, qd, pmd);"] + s_free},
        {"signature": f"void {ENTRY}mass_matrix(double t, const double *q, const double *p, double *M)",
         "lines": [f"{PREFIX}mass(t, q, p, M);"]},
    ]


def _output_size(mod, kernel, array):
    k = next(k for k in mod.kernels if k.name == kernel)
    return next(o.size for o in k.outputs if o.name == array)


#: doubles of work space per coordinate of the iterative solver (DYN_ITR_WORK in runtime/dynamica_itr.h)
ITR_WORK = 8


def iterative_entries(mod: ir.ModuleIR) -> list:
    """An iterative module (forms/iterative.py): the Lagrangian entry points around the
    quasi-Newton solver of runtime/dynamica_itr.h, whose state `dyn_itr_st` (inverse estimate
    and counters) is static in the module (`iterative_preamble`); plus the solver's controls.

    qdd: itr_terms -> Q, ws; dyn_itr_solve(Q, ws, itr_mx); on request a direct solve with M
    (ws itself for ITR-M, the `mass` kernel for ITR-G).
    """
    n = len(mod.coordinates)
    nws = max(_output_size(mod, "itr_terms", "ws"), 1)
    separate_mass = "mass" in _kernel_names(mod)
    nwork = ITR_WORK * n
    decl, free = _scratch("dyn_buf", n + nws + nwork + (n * n if separate_mass else 0), [("qdd", n)])
    lines = decl + [f"double *Q = dyn_buf, *ws = dyn_buf + {n}, *work = dyn_buf + {n + nws};",
                    f"{PREFIX}itr_terms(t, q, qd, p, Q, ws);",
                    f"if (dyn_itr_solve(&dyn_itr_st, Q, ws, {PREFIX}itr_mx, qdd, work) != 0) {{"]
    if separate_mass:
        lines += [f"    double *M = dyn_buf + {n + nws + nwork};", f"    {PREFIX}mass(t, q, p, M);",
                  "    dyn_itr_direct(&dyn_itr_st, Q, M, qdd);"]
    else:
        lines += ["    dyn_itr_direct(&dyn_itr_st, Q, ws, qdd);"]
    lines += ["}"] + free
    if separate_mass:
        mass = [f"{PREFIX}mass(t, q, p, M);"]
    else:       # ws is M: itr_terms at zero velocities
        w_decl, w_free = _scratch("work", 2 * n, [("M", n * n)])
        mass = w_decl + [f"memset(work, 0, {n} * sizeof(double));",
                         f"{PREFIX}itr_terms(t, q, work, p, work + {n}, M);"] + w_free
    return [
        {"signature": f"void {ENTRY}qdd(double t, const double *q, const double *qd, const double *p, double *qdd)",
         "lines": lines},
        {"signature": f"void {ENTRY}mass_matrix(double t, const double *q, const double *p, double *M)",
         "lines": mass},
        {"signature": f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)",
         "lines": [f"memcpy(ydot, y + {n}, {n} * sizeof(double));", f"{ENTRY}qdd(t, y, y + {n}, p, ydot + {n});"]},
        {"signature": f"void {ENTRY}itr_stats(double *out)", "lines": ["dyn_itr_read_stats(&dyn_itr_st, out);"]},
        {"signature": f"void {ENTRY}itr_reset(int what)", "lines": ["dyn_itr_clear(&dyn_itr_st, what);"]},
        {"signature": f"void {ENTRY}itr_settings(const double *in_, double *out)",
         "lines": ["dyn_itr_configure(&dyn_itr_st, in_, out);"]},
        {"signature": f"int {ENTRY}itr_inverse(double *out)", "lines": ["return dyn_itr_copy_inverse(&dyn_itr_st, out);"]},
    ]


def iterative_preamble(mod: ir.ModuleIR) -> list:
    """File-scope C of an iterative module: the solver and its persistent state."""
    n = len(mod.coordinates)
    return ['#include "dynamica_itr.h"',
            "/* the inverse estimate H_k of (2.29), kept between calls, and the solver's counters:",
            "   static, one per module, so the module is not thread-safe (dynamica_itr.h) */",
            f"static double dyn_itr_H[{n * n}];",
            f"static dyn_itr_state dyn_itr_st = DYN_ITR_STATE({n}, dyn_itr_H);"]


ITR_STATS = ("calls", "iterations", "residuals", "fallbacks", "pb_calls", "pb_iterations", "directs", "inits",
             "last_iterations", "last_method", "last_rho", "max_rho", "have_inverse", "n")
ITR_METHODS = ("2.29", "2.33", "direct", "init", "failed")
ITR_SETTINGS = ("rtol", "atol", "eps_abs", "eps_rel", "rho_max", "max_iter", "max_iter_pb")


def iterative_python(mod: ir.ModuleIR) -> list:
    """Python functions of an iterative module: itr_stats, itr_reset, itr_settings, itr_inverse."""
    n = len(mod.coordinates)
    stats = ", ".join(f'"{k}": s[{j}]' for j, k in enumerate(ITR_STATS))
    ints = ", ".join(f'"{k}"' for k in ITR_STATS if k not in ("last_rho", "max_rho", "last_method", "have_inverse"))
    return [
        "",
        f"ITR_METHODS = {ITR_METHODS!r}",
        f"ITR_SETTINGS = {ITR_SETTINGS!r}",
        "",
        "",
        "def itr_stats():",
        '    """Counters of the iterative solver since the last reset: calls, iterations (residual',
        "    evaluations after r_0, the K of (4.4)-(4.5)), residuals (all of them), fallbacks (calls that",
        "    left (2.29): (2.33) or a direct solve), pb_calls / pb_iterations ((2.33)), directs (L^T D L",
        "    solves, first call included), inits, last_iterations, last_method, last_rho (|r_0|/|b|, a lower",
        '    bound of ||E - M H_0||: (2.43) asks < 1), max_rho, have_inverse, n."""',
        f"    cdef double s[{len(ITR_STATS)}]",
        "    dyn_itr_stats(s)",
        f"    d = {{{stats}}}",
        f"    for k in ({ints},):",
        "        d[k] = int(d[k])",
        '    d["have_inverse"] = bool(d["have_inverse"])',
        '    d["last_method"] = ITR_METHODS[int(d["last_method"])]',
        "    return d",
        "",
        "",
        "def itr_reset(inverse=True, stats=True):",
        '    """Forget the inverse estimate (the next call solves directly) and/or clear the counters."""',
        "    dyn_itr_reset((1 if inverse else 0) | (2 if stats else 0))",
        "",
        "",
        "def itr_settings(**changes):",
        '    """Read (no arguments) or change the solver settings; returns them all. rtol, atol: stop when',
        "    the correction |H r| <= rtol |x| + atol; eps_abs, eps_rel: (2.28) with eps = eps_abs + eps_rel |Q|;",
        "    rho_max: (2.33) instead of (2.29) when |r_0| / |Q| >= rho_max (check of (2.43)); max_iter: iterations",
        '    of (2.29) before (2.33), max_iter_pb: of (2.33) before the direct solve (-1: n + 1, the default)."""',
        f"    cdef double a[{len(ITR_SETTINGS)}]",
        f"    cdef double b[{len(ITR_SETTINGS)}]",
        "    unknown = sorted(set(changes) - set(ITR_SETTINGS))",
        "    if unknown:",
        '        raise KeyError(f"unknown setting(s) {unknown}; available: {ITR_SETTINGS}")',
        "    for k, name in enumerate(ITR_SETTINGS):",
        '        a[k] = float(changes[name]) if name in changes else float("nan")',
        "    dyn_itr_settings(a, b)",
        "    d = {name: b[k] for k, name in enumerate(ITR_SETTINGS)}",
        '    d["max_iter"] = int(d["max_iter"])',
        '    d["max_iter_pb"] = int(d["max_iter_pb"])',
        "    return d",
        "",
        "",
        "def itr_inverse(out):",
        f'    """The inverse estimate H (row-major, length {n * n}) into `out`; False (and NaN) when there is none."""',
        "    cdef Py_buffer b_out",
        f'    get_buffer(out, &b_out, {n * n}, "out", 1)',
        "    try:",
        "        return bool(dyn_itr_inverse(<double*>b_out.buf))",
        "    finally:",
        "        PyBuffer_Release(&b_out)",
    ]


#: ModuleIR.entries -> function(mod) -> [{"signature", "lines"}]
ENTRY_POINTS = {"lagrangian": lagrangian_entries, "hamiltonian": hamiltonian_entries,
                "iterative": iterative_entries}
#: ModuleIR.entries -> function(mod) -> lines at file scope of the kernel header (before the kernels)
PREAMBLES = {"iterative": iterative_preamble}
#: ModuleIR.entries -> function(mod) -> lines of Cython appended to the module (extra Python functions)
MODULE_CODE = {"iterative": iterative_python}


def _wrapper(name, doc, arrays):
    """A Python wrapper of entry point `name(double t, arrays...)`: arrays are (name, size, writable)."""
    return {"name": name, "doc": doc, "cname": f"{ENTRY}{name}",
            "arrays": [{"name": a, "size": size, "writable": int(w)} for a, size, w in arrays]}


def python_wrappers(mod: ir.ModuleIR) -> list:
    """The module's Python functions: every entry point taking (t, arrays...) via the buffer protocol."""
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    mass = _wrapper("mass_matrix", "The mass matrix, row-major, into `out` (length N*N).",
                    [("q", n, 0), ("p", np_, 0), ("out", n * n, 1)])
    if mod.entries == "hamiltonian":
        return [
            _wrapper("rhs", "The state derivative of y = [q, pm] (pm: Poisson momenta) into `ydot` (length 2N).",
                     [("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)]),
            _wrapper("momenta", "Poisson momenta pm = B^T M v (1.49) of the state (q, qd), into `out`.",
                     [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)]),
            _wrapper("velocities", "Generalized velocities qd of the state (q, pm), into `out`.",
                     [("q", n, 0), ("pm", n, 0), ("p", np_, 0), ("out", n, 1)]),
            mass]
    return [
        _wrapper("qdd", "Generalized accelerations into `out` (float64 arrays; q, qd, out of length N, "
                        "p of length NP).", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)]),
        mass,
        _wrapper("rhs", "The state derivative of y = [q, qd] into `ydot` (length 2N).",
                 [("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)])]


def output_entries(mod: ir.ModuleIR) -> tuple[list, list]:
    """Entry point and Python wrapper of the `outputs` kernel (generator/outputs.py), if any."""
    if "outputs" not in _kernel_names(mod):
        return [], []
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    size = _output_size(mod, "outputs", "out")
    entry = {"signature": f"void {ENTRY}outputs(double t, const double *q, const double *qd, const double *p, "
                          "double *out)",
             "lines": [f"{PREFIX}outputs(t, q, qd, p, out);"]}
    wrap = _wrapper("outputs", f"The model's outputs (INFO['output_layout']) of the state (q, qd), flat, into `out` "
                               f"(length {size}).", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", size, 1)])
    return [entry], [wrap]


def template_context(mod: ir.ModuleIR, printer_cls) -> dict:
    for backend, context in CONTEXTS.items():      # backends with their own context (Fortran)
        if PRINTERS.get(backend) is printer_cls:
            return context(mod, printer_cls)
    n = len(mod.coordinates)
    return {
        "version": __version__,
        "model_name": mod.model_name,
        "form": mod.form,
        "signature": mod.signature,
        "model_name_literal": repr(mod.model_name),
        "form_literal": repr(mod.form),
        "kind_literal": repr(mod.kind),
        "signature_literal": repr(mod.signature),
        "version_literal": repr(__version__),
        "coordinates_literal": repr(tuple(mod.coordinates)),
        "parameters_literal": repr(tuple(mod.parameters)),
        "defaults_literal": repr(tuple(float(x) for x in mod.parameter_defaults)),
        "op_counts_literal": repr({k.name: k.op_count() for k in mod.kernels}),
        "n": n,
        "np": len(mod.parameter_defaults),
        "kernels": [kernel_context(k, printer_cls) for k in mod.kernels],
        "prefix": ENTRY,
        "entries": ENTRY_POINTS[mod.entries](mod) + output_entries(mod)[0],
        "wrappers": python_wrappers(mod) + output_entries(mod)[1],
        "info_literal": repr(dict(mod.info)),
        "preamble": PREAMBLES[mod.entries](mod) if mod.entries in PREAMBLES else [],
        "module_code": MODULE_CODE[mod.entries](mod) if mod.entries in MODULE_CODE else [],
        "kernels_header": f"{mod.module_name}_kernels.h",
        "guard": f"DYNAMICA_{mod.module_name.upper()}_KERNELS_H",
    }


#: backend -> ((template, output file name pattern), ...); the first output is the main source
TEMPLATES = {"cython": (("cython_module.pyx.j2", "{module}.pyx"), ("kernels.h.j2", "{module}_kernels.h"))}
HELPERS = {"cython": ("dynamica_helpers.pxd", "dynamica_helpers.h", "dynamica_itr.h")}


def render(mod: ir.ModuleIR, backend: str = "cython") -> SourceBundle:
    if backend not in TEMPLATES:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(TEMPLATES)}")
    ctx = template_context(mod, PRINTERS[backend])
    env = _env()
    files = [(pattern.format(module=mod.module_name), env.get_template(tpl).render(**ctx))
             for tpl, pattern in TEMPLATES[backend]]
    for h in HELPERS[backend]:
        files.append((h, resources.files("dynamica.runtime").joinpath(h).read_text()))
    return SourceBundle(module_name=mod.module_name, backend=backend, files=tuple(files),
                        signature=mod.signature, op_count=sum(k.op_count()["total"] for k in mod.kernels))


# ------------------------------------------------------------------ the Fortran backend (docs/fortran.md)
#: free-form source lines are at most 132 characters: statements are cut at this width with `&`
FORTRAN_WIDTH = 100
#: F2008 allows 255 continuation lines; longer sums are accumulated in several statements
FORTRAN_MAX_CONTINUATIONS = 200
FORTRAN_MODULE = "dyn_kernels"      # the Fortran module holding helpers, kernels and entry points


def fortran_wrap(text: str, indent: str = "    ", width: int = FORTRAN_WIDTH) -> list:
    """One statement as free-form lines: cut anywhere (a cut token continues after a leading `&`)."""
    if len(indent) + len(text) <= width:
        return [indent + text]
    step = width - len(indent) - 2
    pieces = [text[k:k + step] for k in range(0, len(text), step)]
    lines = [indent + pieces[0] + "&"]
    lines += [indent + "&" + p + "&" for p in pieces[1:-1]]
    lines.append(indent + "&" + pieces[-1])
    return lines


def _fortran_statement(lhs: str, value, pr, indent="    ") -> list:
    """`lhs = value`, as several accumulating statements when one would need too many lines
    (left-to-right summation as in C, so the result is the same)."""
    text = pr.doprint(value)
    limit = FORTRAN_MAX_CONTINUATIONS * (FORTRAN_WIDTH - len(indent) - 2)
    if len(text) <= limit or not isinstance(value, ir.Add) or len(value.terms) < 2:
        return fortran_wrap(f"{lhs} = {text}", indent)
    terms = list(value.terms)
    half = len(terms) // 2
    first = _fortran_statement(lhs, ir.Add(tuple(terms[:half])) if half > 1 else terms[0], pr, indent)
    rest = ir.Add((ir.Var("\0lhs"),) + tuple(terms[half:]))
    pr2 = type(pr)(pr.arrays, {**pr.variables, "\0lhs": lhs})
    return first + _fortran_statement(lhs, rest, pr2, indent)


def _f_dummies(kernel: ir.Kernel) -> tuple[list, list]:
    """Dummy argument names and declarations of a kernel procedure (0-based assumed-size arrays)."""
    names, decls = [], []
    for i in kernel.inputs:
        names.append(f"in_{i.name}")
        decls.append(f"real(c_double), intent(in) :: in_{i.name}" if i.size is None
                     else f"real(c_double), intent(in) :: in_{i.name}(0:*)")
    for o in kernel.outputs:
        names.append(f"out_{o.name}")
        decls.append(f"real(c_double), intent(inout) :: out_{o.name}(0:*)")
    return names, decls


def _f_decls(names, per_line=12):
    names = list(names)
    return [f"real(c_double) :: {', '.join(names[k:k + per_line])}" for k in range(0, len(names), per_line)]


def fortran_kernel_context(kernel: ir.Kernel, printer_cls) -> dict:
    """A kernel as Fortran procedures: parts (`split_kernel`, the C path's cut) and a driver.

    Every temporary is renamed (`v<k>` locally, `dyn_w(k)` shared): Fortran names are
    case-insensitive and at most 63 characters, the IR's are neither."""
    arrays = {i.name: f"in_{i.name}" for i in kernel.inputs} | {o.name: f"out_{o.name}" for o in kernel.outputs}
    kernel, zeros = zero_runs(kernel, ZERO_RUN)
    parts, shared = split_kernel(kernel, CHUNK)
    local = {t: f"v{k}" for k, t in enumerate(kernel.temps) if t not in shared}
    pr = printer_cls(arrays, local | {v: f"dyn_w({k})" for v, k in shared.items()})
    names, decls = _f_dummies(kernel)
    fname = f"k_{kernel.name}"
    out_parts = []
    for ci, part in enumerate(parts):
        lines, loc = [], []
        for st in part:
            if isinstance(st, ir.Assign):
                if st.target not in shared:
                    loc.append(local[st.target])
                lines += _fortran_statement(pr.var(st.target), st.value, pr, "")
            elif isinstance(st, ir.Store):
                lines += _fortran_statement(f"out_{st.array}({st.index})", st.value, pr, "")
            else:
                raise TypeError(f"unknown statement {type(st).__name__}")
        out_parts.append({"name": f"{fname}_p{ci}", "decls": _f_decls(loc), "lines": lines})
    nw = len(shared)
    call_args = ", ".join(names)
    if nw <= STACK_DOUBLES:
        wdecl = [f"real(c_double) :: dyn_w(0:{max(nw, 1) - 1})"]
        driver = []
    else:
        wdecl = ["real(c_double), allocatable :: dyn_w(:)", "integer :: stat"]
        driver = [f"allocate(dyn_w(0:{nw - 1}), stat=stat)", "if (stat /= 0) then"]
        driver += [f"    out_{o.name}(0:{o.size - 1}) = ieee_value(0.0_c_double, ieee_quiet_nan)"
                   for o in kernel.outputs]
        driver += ["    return", "end if"]
    driver += [f"call {p['name']}({call_args}, dyn_w)" for p in out_parts]
    driver += [f"out_{a}({i}:{i + n - 1}) = 0.0d0" for a, i, n in zeros]
    return {"name": fname, "args": call_args, "decls": decls, "parts": out_parts,
            "wdecl": wdecl, "driver": driver}


def _f_entry(name, args, body, decl_extra=(), alloc=()):
    return {"name": name, "args": args, "extra": list(decl_extra), "lines": list(alloc) + body}


def fortran_entries(mod: ir.ModuleIR) -> list:
    """The bind(C) entry points (the C signatures of `ENTRY_POINTS`, t passed by value), as
    {"name", "args": [(name, size or None, writable)], "extra", "lines"}."""
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)

    def scratch(name, size):
        if size <= STACK_DOUBLES:
            return [f"real(c_double) :: {name}(0:{size - 1})"], []
        return [f"real(c_double), allocatable :: {name}(:)"], [f"allocate({name}(0:{size - 1}))"]

    ents = []
    if mod.entries == "lagrangian":
        if "mass" in _kernel_names(mod):
            qdd_extra, qdd_lines = [], ["call k_dynamics(t, q, qd, p, out)"]
            m_extra, m_lines = [], ["call k_mass(t, q, p, out)"]
        else:
            d, a = scratch("Ms", max(n * n, 1))
            qdd_extra, qdd_lines = d, a + ["call k_dynamics(t, q, qd, p, out, Ms)"]
            d, a = scratch("work", 2 * n)
            m_extra, m_lines = d, a + [f"work(0:{n - 1}) = 0.0d0", f"call k_dynamics(t, q, work(0:{n - 1}), p, "
                                                                       f"work({n}:{2 * n - 1}), out)"]
        ents += [
            _f_entry("qdd", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)], qdd_lines, qdd_extra),
            _f_entry("mass_matrix", [("q", n, 0), ("p", np_, 0), ("out", n * n, 1)], m_lines, m_extra),
            _f_entry("rhs", [("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)],
                     [f"ydot(0:{n - 1}) = y({n}:{2 * n - 1})",
                      f"call e_qdd(t, y(0:{n - 1}), y({n}:{2 * n - 1}), p, ydot({n}:{2 * n - 1}))"])]
    elif mod.entries == "hamiltonian":
        d, a = scratch("pmd", max(n, 1))
        ents += [
            _f_entry("rhs", [("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)],
                     [f"call k_hamilton(t, y(0:{n - 1}), y({n}:{2 * n - 1}), p, ydot(0:{n - 1}), "
                      f"ydot({n}:{2 * n - 1}))"]),
            _f_entry("momenta", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)],
                     ["call k_momenta(t, q, qd, p, out)"]),
            _f_entry("velocities", [("q", n, 0), ("pm", n, 0), ("p", np_, 0), ("out", n, 1)],
                     a + ["call k_hamilton(t, q, pm, p, out, pmd)"], d),
            _f_entry("mass_matrix", [("q", n, 0), ("p", np_, 0), ("out", n * n, 1)], ["call k_mass(t, q, p, out)"])]
    else:
        raise ValueError(f"backend 'fortran' does not support {mod.entries!r} modules (form {mod.form!r}): "
                         "its solver is the hand-written C of runtime/dynamica_itr.h; use backend='cython'")
    if "outputs" in _kernel_names(mod):
        size = _output_size(mod, "outputs", "out")
        ents.append(_f_entry("outputs", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", size, 1)],
                             ["call k_outputs(t, q, qd, p, out)"]))
    for e in ents:
        e["cname"] = f"{ENTRY}{mod.module_name}_{e['name']}"
        e["fname"] = e["name"]
        e["dummies"] = ", ".join(["t"] + [a for a, _, _ in e["args"]])
        e["decls"] = ["real(c_double), value, intent(in) :: t"] + [
            f"real(c_double), intent({'inout' if w else 'in'}) :: {a}(0:*)" for a, _, w in e["args"]]
        # the f2py-facing wrapper: explicit shapes (f2py checks the sizes), t by reference
        e["wdecls"] = ["real(c_double), intent(in) :: t"] + [
            f"real(c_double), intent({'inout' if w else 'in'}) :: {a}(0:{s - 1})" for a, s, w in e["args"]]
        e["c_signature"] = (f"void {e['cname']}(double t, " + ", ".join(
            f"{'' if w else 'const '}double *{a}" for a, _, w in e["args"]) + ")")
    return ents


def fortran_context(mod: ir.ModuleIR, printer_cls) -> dict:
    """Everything the Fortran templates show (fortran_kernels.f90.j2, fortran_module.pyx.j2)."""
    entries = fortran_entries(mod)
    return {
        "version": __version__,
        "model_name": mod.model_name,
        "form": mod.form,
        "signature": mod.signature,
        "model_name_literal": repr(mod.model_name),
        "form_literal": repr(mod.form),
        "kind_literal": repr(mod.kind),
        "signature_literal": repr(mod.signature),
        "version_literal": repr(__version__),
        "coordinates_literal": repr(tuple(mod.coordinates)),
        "parameters_literal": repr(tuple(mod.parameters)),
        "defaults_literal": repr(tuple(float(x) for x in mod.parameter_defaults)),
        "op_counts_literal": repr({k.name: k.op_count() for k in mod.kernels}),
        "n": len(mod.coordinates),
        "np": len(mod.parameter_defaults),
        "info_literal": repr(dict(mod.info)),
        "fortran_module": FORTRAN_MODULE,
        "kernels": [fortran_kernel_context(k, printer_cls) for k in mod.kernels],
        "entries": entries,
        "wrappers": python_wrappers(mod) + output_entries(mod)[1],
        "f2py_module": f"{mod.module_name}_f",
        "f2py_only": " ".join(e["fname"] for e in entries),
    }


#: the Fortran backend: a Cython shim (main), the kernels and the subroutines f2py wraps (build.py: files
#: ending in _f2py.f90 give f2py its signatures, the other .f90 files are compiled with them)
TEMPLATES["fortran"] = (("fortran_module.pyx.j2", "{module}.pyx"), ("fortran_kernels.f90.j2", "{module}_f.f90"),
                        ("fortran_f2py.f90.j2", "{module}_f2py.f90"))
HELPERS["fortran"] = ("dynamica_helpers.pxd",)
CONTEXTS = {"fortran": fortran_context}
