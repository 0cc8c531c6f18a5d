"""The C backend: kernels and entry points as C99 in `<module>_kernels.h` (templates/kernels.h.j2),
which the module file includes, so a module is one translation unit and one compiler call.

Each kernel is cut into parts of at most `CHUNK` expression nodes (separate functions, so the
compiler's work stays bounded), temporaries used across parts live in a workspace `dyn_w`, and
runs of zero stores become one `memset`. The entry points (`dyn_<name>`) wrap the kernels as
the module kind needs (ModuleKind.backends["c"], generator/ir/kinds.py).
"""

from __future__ import annotations

from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.kinds import module_kind
from dynamica.generator.render import Backend, common, register
from dynamica.generator.render.common import STACK_DOUBLES, kernel_names, kernel_output_size
from dynamica.generator.render.printers import CPrinter
from dynamica.version import __version__

PREFIX = "dyn_k_"      # kernels
ENTRY = "dyn_"        # entry points (the module's C interface)
#: kernel hint -> function attribute (templates/native/dynamica_helpers.h)
HINTS = {"O1": "DYN_O1"}


def _c_args(kernel: ir.Kernel) -> str:
    args = []
    for inp in kernel.inputs:
        args.append(f"double in_{inp.name}" if inp.size is None else f"const double *in_{inp.name}")
    args += [f"double *out_{o.name}" for o in kernel.outputs]
    return ", ".join(args)


def _decls(names, per_line=16):
    names = list(names)
    return [f"double {', '.join(names[k:k + per_line])};" for k in range(0, len(names), per_line)]


def kernel_context(kernel: ir.Kernel, printer_cls=CPrinter) -> dict:
    ck = common.cut(kernel)
    kernel, shared = ck.kernel, ck.shared
    pr = printer_cls(ck.arrays, {v: f"dyn_w[{k}]" for v, k in shared.items()})
    cname = f"{PREFIX}{kernel.name}"
    printed = common.print_parts(ck, pr, lambda lhs, value: [f"{lhs} = {pr.doprint(value)};"],
                                 lambda st: f"out_{st.array}[{st.index}]")
    out_parts = [{"name": f"{cname}_part{ci}", "decls": _decls(local), "lines": lines}
                 for ci, (lines, local) in enumerate(printed)]
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
    driver += [f"memset(out_{a} + {i}, 0, {n} * sizeof(double));" for a, i, n in ck.zeros]
    if nw > STACK_DOUBLES:
        driver.append("free(dyn_w);")
    attr = "".join(f"{HINTS[h]} " for h in kernel.hints)
    return {"cname": cname, "c_args": _c_args(kernel), "parts": out_parts, "driver": driver, "attr": attr}


def scratch(name, size, outputs):
    """A scratch array: on the stack when small, else on the heap (NaN outputs if that fails)."""
    if size <= STACK_DOUBLES:
        return [f"double {name}[{size}];"], []
    fail = [f"    for (int k = 0; k < {n}; ++k) {o}[k] = NAN;" for o, n in outputs]
    return ([f"double *{name} = (double *)malloc({size} * sizeof(double));", f"if ({name} == NULL) {{"]
            + fail + ["    return;", "}"], [f"free({name});"])


def _qdd_signature():
    return f"void {ENTRY}qdd(double t, const double *q, const double *qd, const double *p, double *qdd)"


def _mass_signature():
    return f"void {ENTRY}mass_matrix(double t, const double *q, const double *p, double *M)"


def _rhs_entry(n):
    return {"signature": f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)",
            "lines": [f"memcpy(ydot, y + {n}, {n} * sizeof(double));", f"{ENTRY}qdd(t, y, y + {n}, p, ydot + {n});"]}


def lagrangian_entries(mod: ir.ModuleIR) -> list:
    """qdd(t, q, qd, p, qdd), mass_matrix(t, q, p, M) and the entry point for integrators
    rhs(t, y, p, ydot) with y = [q, qd], ydot = [qd, qdd]. Returns [{"signature", "lines"}]."""
    n = len(mod.coordinates)
    k = f"{PREFIX}dynamics"
    if "mass" in kernel_names(mod):
        qdd = [f"{k}(t, q, qd, p, qdd);"]
        mass = [f"{PREFIX}mass(t, q, p, M);"]
    else:
        m_decl, m_free = scratch("M", max(n * n, 1), [("qdd", n)])
        w_decl, w_free = scratch("work", 2 * n, [("M", n * n)])
        qdd = m_decl + [f"{k}(t, q, qd, p, qdd, M);"] + m_free
        mass = w_decl + [f"memset(work, 0, {n} * sizeof(double));", f"{k}(t, q, work, p, work + {n}, M);"] + w_free
    return [{"signature": _qdd_signature(), "lines": qdd}, {"signature": _mass_signature(), "lines": mass},
            _rhs_entry(n)]


def hamiltonian_entries(mod: ir.ModuleIR) -> list:
    """rhs on y = [q, pm] (pm the Poisson momenta (1.49)), the conversions
    momenta(t, q, qd, p, pm) and velocities(t, q, pm, p, qd), and mass_matrix."""
    n = len(mod.coordinates)
    s_decl, s_free = scratch("pmd", max(n, 1), [("qd", n)])
    return [
        {"signature": f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)",
         "lines": [f"{PREFIX}hamilton(t, y, y + {n}, p, ydot, ydot + {n});"]},
        {"signature": f"void {ENTRY}momenta(double t, const double *q, const double *qd, const double *p, "
                      "double *pm)",
         "lines": [f"{PREFIX}momenta(t, q, qd, p, pm);"]},
        {"signature": f"void {ENTRY}velocities(double t, const double *q, const double *pm, const double *p, "
                      "double *qd)",
         "lines": s_decl + [f"{PREFIX}hamilton(t, q, pm, p, qd, pmd);"] + s_free},
        {"signature": _mass_signature(), "lines": [f"{PREFIX}mass(t, q, p, M);"]},
    ]


#: doubles of work space per coordinate of the iterative solver (DYN_ITR_WORK in templates/native/dynamica_itr.h)
ITR_WORK = 8


def iterative_entries(mod: ir.ModuleIR) -> list:
    """An iterative module (forms/iterative.py): the Lagrangian entry points around the
    quasi-Newton solver of templates/native/dynamica_itr.h, whose state `dyn_itr_st` (inverse estimate
    and counters) is static in the module (`iterative_preamble`); plus the solver's controls.

    qdd: itr_terms -> Q, ws; dyn_itr_solve(Q, ws, itr_mx); on request a direct solve with M
    (ws itself for ITR-M, the `mass` kernel for ITR-G).
    """
    n = len(mod.coordinates)
    nws = max(kernel_output_size(mod, "itr_terms", "ws"), 1)
    separate_mass = "mass" in kernel_names(mod)
    nwork = ITR_WORK * n
    decl, free = scratch("dyn_buf", n + nws + nwork + (n * n if separate_mass else 0), [("qdd", n)])
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
        w_decl, w_free = scratch("work", 2 * n, [("M", n * n)])
        mass = w_decl + [f"memset(work, 0, {n} * sizeof(double));",
                         f"{PREFIX}itr_terms(t, q, work, p, work + {n}, M);"] + w_free
    return [
        {"signature": _qdd_signature(), "lines": lines},
        {"signature": _mass_signature(), "lines": mass},
        _rhs_entry(n),
        {"signature": f"void {ENTRY}itr_stats(double *out)", "lines": ["dyn_itr_read_stats(&dyn_itr_st, out);"]},
        {"signature": f"void {ENTRY}itr_reset(int what)", "lines": ["dyn_itr_clear(&dyn_itr_st, what);"]},
        {
            "signature": f"void {ENTRY}itr_settings(const double *in_, double *out)",
            "lines": ["dyn_itr_configure(&dyn_itr_st, in_, out);"],
        },
        {
            "signature": f"int {ENTRY}itr_inverse(double *out)",
            "lines": ["return dyn_itr_copy_inverse(&dyn_itr_st, out);"],
        },
    ]


def iterative_preamble(mod: ir.ModuleIR) -> list:
    """File-scope C of an iterative module: the solver and its persistent state."""
    n = len(mod.coordinates)
    return ['#include "dynamica_itr.h"',
            "/* the inverse estimate H_k of (2.29), kept between calls, and the solver's counters:",
            "   static, one per module, so the module is not thread-safe (dynamica_itr.h) */",
            f"static double dyn_itr_H[{n * n}];",
            f"static dyn_itr_state dyn_itr_st = DYN_ITR_STATE({n}, dyn_itr_H);"]


def numeric_entries(mod: ir.ModuleIR) -> list:
    """Numeric mode (forms/numeric.py): the form's recursion in templates/native/numeric_core.h over the
    generated terms kernel and the topology tables (`numeric_preamble`)."""
    n, form = len(mod.coordinates), mod.form
    terms = f"{PREFIX}numeric_terms"
    return [
        {
            "signature": _qdd_signature(),
            "lines": [
                f"DYN_NM_WITH_WORK(DYN_NM_WORK_{form.upper()}(DYN_NM_NB, DYN_NM_N),",
                f"                 dyn_nm_{form}_qdd(&dyn_nm_tp, {terms}, t, q, qd, p, qdd, work), qdd, DYN_NM_N);",
            ],
        },
        {
            "signature": _mass_signature(),
            "lines": [
                "DYN_NM_WITH_WORK(DYN_NM_WORK_MASS(DYN_NM_NB, DYN_NM_N),",
                f"                 dyn_nm_mass(&dyn_nm_tp, {terms}, t, q, p, M, work), M, DYN_NM_N * DYN_NM_N);",
            ],
        },
        _rhs_entry(n),
    ]


def numeric_preamble(mod: ir.ModuleIR) -> list:
    """The hand-written core and the topology it runs over (the module's tables)."""
    names = ", ".join(name for name, _ in mod.tables)
    return ['#include "numeric_core.h"', f"#define DYN_NM_NB {dict(mod.info)['bodies']}",
            f"#define DYN_NM_N {len(mod.coordinates)}",
            f"static const dyn_nm_topo dyn_nm_tp = {{DYN_NM_NB, DYN_NM_N, {names}}};"]


def derivative_preamble(mod: ir.ModuleIR) -> list:
    """The derivatives variant numeric: its loops (templates/native/numeric_deriv.h) and the topology."""
    if "numeric_terms" not in kernel_names(mod):
        return []
    nb = len(dict(mod.tables)["dyn_nm_kappa"]) - 1
    return ['#include "numeric_deriv.h"',
            f"static const dyn_nm_topo dyn_nm_tp = {{{nb}, {len(mod.coordinates)}, dyn_nm_kappa, dyn_nm_first, "
            "dyn_nm_ndof, dyn_nm_lambda};"]


def derivative_entries(mod: ir.ModuleIR) -> list:
    """A derivatives module (generator/kinds/derivatives.py): its kernels as they are; the solves are
    composed in the module file (ModuleKind.composed)."""
    state = "double t, const double *q, const double *qd, const double *qdd, const double *p"
    residual = f"void {ENTRY}residual({state}, double *r)"
    pair_terms = f"void {ENTRY}pair_terms({state}, double *r, double *V, double *D, double *J)"
    pair_mass = f"void {ENTRY}pair_mass(double t, const double *q, const double *qd, const double *p, " \
                "double *r, double *SA, double *D)"
    if "numeric_terms" in kernel_names(mod):           # variant numeric: templates/native/numeric_deriv.h
        terms = f"&dyn_nm_tp, {PREFIX}numeric_terms"
        force = ", ".join(f"{PREFIX}{k}" if k in kernel_names(mod) else "NULL"
                          for k in ("force_jacobian", "wrench_jacobian"))
        return [{"signature": residual,
                 "lines": [f"dyn_nd_residual({terms}, t, q, qd, qdd, p, r);"]},
                {"signature": pair_terms,
                 "lines": [f"dyn_nd_pair_terms({terms}, {force}, t, q, qd, qdd, p, r, V, D, J);"]},
                {"signature": pair_mass,
                 "lines": [f"dyn_nd_pair_mass({terms}, t, q, qd, p, r, SA, D);"]},
                {"signature": f"void {ENTRY}solve_jacobian(double t, const double *q, const double *qd, "
                              "const double *p, double *qdd, double *F, double *J)",
                 "lines": [f"dyn_nd_solve_jacobian({terms}, {force}, dyn_rl_pred, t, q, qd, p, qdd, F, J);"]}]
    if "pair_terms" in kernel_names(mod):              # variant recursive_loops: the module file composes the rest
        return [{"signature": residual,
                 "lines": [f"{PREFIX}residual(t, q, qd, qdd, p, r);"]},
                {"signature": pair_terms,
                 "lines": [f"{PREFIX}pair_terms(t, q, qd, qdd, p, r, V, D, J);"]},
                {"signature": pair_mass,
                 "lines": [f"{PREFIX}pair_mass(t, q, qd, p, r, SA, D);"]}]
    jac = "residual_jacobian" if "residual_jacobian" in kernel_names(mod) else "residual_partials"
    if "mass" in kernel_names(mod):
        mass = {"signature": _mass_signature(), "lines": [f"{PREFIX}mass(t, q, p, M);"]}
    else:
        mass = {"signature": f"void {ENTRY}mass_times(double t, const double *q, const double *x, const double *p, "
                             "double *Mx)", "lines": [f"{PREFIX}mass_times(t, q, x, p, Mx);"]}
    solve = [{"signature": f"void {ENTRY}solve_jacobian(double t, const double *q, const double *qd, const double *p, "
                           "double *qdd, double *F, double *J)",
              "lines": [f"{PREFIX}solve_jacobian(t, q, qd, p, qdd, F, J);"]}] \
        if "solve_jacobian" in kernel_names(mod) else []
    return [
        {
            "signature": f"void {ENTRY}residual({state}, double *r)",
            "lines": [f"{PREFIX}residual(t, q, qd, qdd, p, r);"],
        },
        {
            "signature": f"void {ENTRY}{jac}({state}, double *r, double *J)",
            "lines": [f"{PREFIX}{jac}(t, q, qd, qdd, p, r, J);"],
        },
        mass,
    ] + solve




def tables(mod: ir.ModuleIR, per_line=24) -> list:
    """The module's constant tables as C arrays: of int (numeric mode's topology) or, for a table
    of floats, double (tabulated functions), every value written exactly (repr)."""
    out = []
    for name, values in mod.tables:
        real = any(isinstance(v, float) for v in values)
        vals = [repr(float(v)) if real else str(int(v)) for v in values]
        per_line = 6 if real else per_line
        out.append(f"static const {'double' if real else 'int'} {name}[{len(vals)}] = {{")
        out += ["    " + ", ".join(vals[k:k + per_line]) + ("," if k + per_line < len(vals) else "")
                for k in range(0, len(vals), per_line)]
        out.append("};")
    return out


def with_states(mod: ir.ModuleIR, entries: list) -> list:
    """A module with extra states (generator/mechanics/signals.py): the kind's rhs becomes `rhs_mech` on
    [q, qd] (or [q, pm]); `rhs` on y = [.., s] copies s into its slots of p, calls it and appends
    s' = states(t, q, qd, p), qd being the first n entries of ydot in every kind."""
    if "states" not in kernel_names(mod):
        return entries
    n, k = len(mod.coordinates), len(mod.states)
    at = len(mod.parameter_defaults) - k                # the states' slots: the end of p
    sig = f"void {ENTRY}rhs(double t, const double *y, const double *p, double *ydot)"
    out = [dict(e, signature=e["signature"].replace(f"{ENTRY}rhs(", f"{ENTRY}rhs_mech(")) if e["signature"] == sig
           else e for e in entries]
    decl, free = scratch("px", at + k, [("ydot", 2 * n + k)])
    out += [{"signature": f"void {ENTRY}states(double t, const double *q, const double *qd, const double *p, "
                          "double *sd)", "lines": [f"{PREFIX}states(t, q, qd, p, sd);"]},
            {"signature": sig,
             "lines": decl + ([f"memcpy(px, p, {at} * sizeof(double));"] if at else []) + [
                              f"memcpy(px + {at}, y + {2 * n}, {k} * sizeof(double));",
                              f"{ENTRY}rhs_mech(t, y, px, ydot);",
                              f"{PREFIX}states(t, y, ydot, px, ydot + {2 * n});"] + free}]
    return out


def output_entry(mod: ir.ModuleIR) -> list:
    """The entry point of the `outputs` kernel (generator/mechanics/outputs.py), if the module has one; a
    kernel that takes q'' (numeric mode) gets it from the module's qdd entry point."""
    k = next((k for k in mod.kernels if k.name == "outputs"), None)
    if k is None:
        return []
    signature = f"void {ENTRY}outputs(double t, const double *q, const double *qd, const double *p, double *out)"
    if "qdd" not in {i.name for i in k.inputs}:
        return [{"signature": signature, "lines": [f"{PREFIX}outputs(t, q, qd, p, out);"]}]
    n = len(mod.coordinates)
    buf, release = scratch("qdd", n, [("out", k.outputs[0].size)])
    return [{"signature": signature,
             "lines": buf + [f"{ENTRY}qdd(t, q, qd, p, qdd);", f"{PREFIX}outputs(t, q, qd, qdd, p, out);"] + release}]


def exported_entries(mod: ir.ModuleIR) -> list:
    """Entry points of the kernels exported with their own arguments (KernelSpec.export)."""
    out = []
    for k in mod.kernels:
        if k.exported:
            args = [f"double {i.name}" if i.size is None else f"const double *{i.name}" for i in k.inputs]
            args += [f"double *{o.name}" for o in k.outputs]
            call = ", ".join([i.name for i in k.inputs] + [o.name for o in k.outputs])
            out.append({"signature": f"void {ENTRY}{k.name}({', '.join(args)})",
                        "lines": [f"{PREFIX}{k.name}({call});"]})
    return out


def with_broad_phase(mod: ir.ModuleIR, entries: list) -> list:
    """A module with the broad phase of contact (generator/mechanics/broad_phase.py): `broad_phase`
    evaluates the pairs into the wrench slots of a copy of p (and their values into `out`), the kind's
    qdd becomes `qdd_mech` called on that copy, and the outputs entry clears `out`, lets the routine
    write the contacts' values and the kernel the rest (it skips its zero stores)."""
    info = dict(mod.info).get("broad_phase")
    if info is None:
        return entries
    n_p = len(mod.parameter_defaults)
    fns = ", ".join(f"{PREFIX}cb_{t}" for t in info["types"])
    nb = info["bodies"]
    evaluate = {"signature": f"void {ENTRY}broad_phase(double t, const double *q, const double *qd, double *px, "
                             "double *out)",
                "lines": [f"static const dyn_pair_fn fns[] = {{{fns}}};", f"double poses[{max(18 * nb, 1)}];",
                          f"double placed[{27 * info['shapes']}];",
                          f"{PREFIX}contact_poses(t, q, qd, px, poses);",
                          f"dyn_cb_run({info['pairs']}, dyn_cb_pair, {info['shapes']}, dyn_cb_shape, fns, {nb}, "
                          f"poses, px, px + {info['wrench']}, out, placed);"]}
    decl, free = scratch("px", n_p, [("qdd", len(mod.coordinates))])
    qdd_sig = _qdd_signature()
    out = [evaluate]
    for e in entries:
        if e["signature"] == qdd_sig:
            out.append(dict(e, signature=qdd_sig.replace(f"{ENTRY}qdd(", f"{ENTRY}qdd_mech(")))
            out.append({"signature": qdd_sig, "lines": decl + [
                f"memcpy(px, p, {n_p} * sizeof(double));", f"{ENTRY}broad_phase(t, q, qd, px, NULL);",
                f"{ENTRY}qdd_mech(t, q, qd, px, qdd);"] + free})
        elif e["signature"].startswith(f"void {ENTRY}outputs("):
            odecl, ofree = scratch("px", n_p, [("out", info["outputs"])])
            lines = [line.replace(", p, out)", ", px, out)") for line in e["lines"]]
            out.append(dict(e, lines=[f"memset(out, 0, {info['outputs']} * sizeof(double));"] + odecl + [
                f"memcpy(px, p, {n_p} * sizeof(double));", f"{ENTRY}broad_phase(t, q, qd, px, out);"]
                + lines + ofree))
        else:
            out.append(e)
    if not any(e["signature"] == qdd_sig for e in entries):
        raise ValueError("internal error: the broad phase needs a module with the qdd entry point")
    return out


def broad_phase_preamble() -> list:
    from dynamica.generator.mechanics.broad_phase import POINTS
    return [f"#define DYN_CB_MAX_POINTS {max(POINTS.values())}", '#include "dynamica_broad.h"']


def header_context(mod: ir.ModuleIR) -> dict:
    """What templates/kernels.h.j2 shows."""
    kind = module_kind(mod.entries)
    return {
        "version": __version__, "model_name": mod.model_name, "form": mod.form, "signature": mod.signature,
        "kernels": [kernel_context(k) for k in mod.kernels],
        "entries": with_states(mod, with_broad_phase(mod, kind.backends["c"](mod) + output_entry(mod)))
        + exported_entries(mod),
        "preamble": (kind.preambles["c"](mod) if "c" in kind.preambles else [])
        + (broad_phase_preamble() if dict(mod.info).get("broad_phase") else []),
        "tables": tables(mod),
        "guard": f"DYNAMICA_{mod.module_name.upper()}_KERNELS_H",
    }


C = register(Backend(
    name="c", printer=CPrinter,
    templates=(("kernels.h.j2", "{module}_kernels.h", header_context, None),),
    declarations=lambda mod: (f'#include "{mod.module_name}_kernels.h"',),
    entry_symbol=lambda mod, name: f"{ENTRY}{name}",
    helpers=("dynamica_helpers.h", "dynamica_itr.h", "numeric_core.h", "numeric_deriv.h", "dynamica_linalg.h",
             "dynamica_broad.h"),
    description="C99 kernels in a header the module file includes"))
