"""The Fortran backend (docs/fortran.md): kernels as Fortran 2008 procedures of one module in
`<module>_f.f90` (templates/fortran_kernels.f90.j2) with bind(C) entry points, compiled by
gfortran and linked with the module file, which declares the entry points as C prototypes.

Kernels are cut as in C (common.split_kernel) and every temporary is renamed (`v<k>` locally,
`dyn_w(k)` shared): Fortran names are case-insensitive and at most 63 characters, the IR's are
neither. Statements are wrapped to free-form lines with `&`; very long sums are accumulated in
several statements (`_statement`).
"""

from __future__ import annotations

import math

from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.kinds import module_kind
from dynamica.generator.render import Backend, common, register
from dynamica.generator.render.c import tables as c_tables
from dynamica.generator.render.common import STACK_DOUBLES, kernel_names, kernel_output_size
from dynamica.generator.render.printers import CPrinter, NonFiniteConstant
from dynamica.version import __version__


class FortranPrinter(CPrinter):
    """Fortran 2008 expressions (free form) for the Fortran backend (templates/fortran_*.j2).

    Arrays are declared 0-based (`q(0:*)`), so IR indices print unchanged; constants are
    double precision literals (`1.5d0`); integer powers stay integer powers (`x**5`, exact
    repeated multiplication as in C); sign/heaviside/fmin/fmax are the module's helpers
    (C semantics of templates/native/dynamica_helpers.h: dyn_sign(0) = 0, H(0) = 1/2, fmin/fmax ignore
    a NaN operand). Line length is not this class's business: the renderer wraps statements.
    """

    functions = {f: f for f in ir.FUNCTIONS} | {
        "fabs": "abs", "sign": "dyn_sign", "heaviside": "dyn_heaviside", "fmin": "dyn_fmin", "fmax": "dyn_fmax"}

    @staticmethod
    def literal(v: float) -> str:
        if not math.isfinite(v):
            raise NonFiniteConstant(f"non-finite constant {v} in generated code")
        s = repr(float(v))
        s = s.replace("e", "d") if "e" in s else s + "d0"
        return s

    def _print_Num(self, n):
        s = self.literal(n.value)
        return f"({s})" if n.value < 0 else s

    #: the module's lookups -> their number in the module file's C function (render/fortran.py)
    lookups: dict = {}

    def _print_Lookup(self, e):
        """A tabulated function: the module file's C function over its tables (render/fortran.py)."""
        key = ir.Lookup(e.data, e.orders, e.shape, e.degree, e.ext, ())
        args = [self.doprint(a) for a in e.args] + ([] if len(e.args) == 2 else ["0.0d0"])
        return f"dyn_lookup({self.lookups[key]}, {', '.join(args)})"

    def _print_Arg(self, a):
        name = self.arrays.get(a.array, a.array)
        return name if a.index is None else f"{name}({a.index})"

    def _mul_text(self, e) -> str:
        # the C text with its one literal "1.0" (no numerator) made double precision
        num = [f for f in e.factors if not (isinstance(f, ir.Pow) and isinstance(f.exp, ir.Num)
                                           and f.exp.value < 0 and float(f.exp.value).is_integer())]
        text = super()._mul_text(e)
        if not num or (len(num) == 1 and isinstance(num[0], ir.Num) and num[0].value == -1.0):
            sign = "-" if text.startswith("-") else ""
            text = sign + "1.0d0" + text[len(sign) + 3:]
        return text

    def _print_Pow(self, e):
        if isinstance(e.exp, ir.Num) and float(e.exp.value).is_integer():
            k = int(e.exp.value)
            if k == 0:
                return "1.0d0"
            b = self._paren(e.base)
            if abs(k) <= 4:
                prod = "*".join([b] * abs(k))
            else:
                prod = f"{b}**{abs(k)}"
            return prod if k > 0 else f"1.0d0/({prod})"
        exp = self.doprint(e.exp) if isinstance(e.exp, (ir.Var, ir.Arg, ir.Call)) or \
            (isinstance(e.exp, ir.Num) and e.exp.value >= 0) else f"({self.doprint(e.exp)})"
        return f"{self._paren(e.base)}**{exp}"

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


def _statement(lhs: str, value, pr, indent="    ") -> list:
    """`lhs = value`, as several accumulating statements when one would need too many lines
    (left-to-right summation as in C, so the result is the same)."""
    text = pr.doprint(value)
    limit = FORTRAN_MAX_CONTINUATIONS * (FORTRAN_WIDTH - len(indent) - 2)
    if len(text) <= limit or not isinstance(value, ir.Add) or len(value.terms) < 2:
        return fortran_wrap(f"{lhs} = {text}", indent)
    terms = list(value.terms)
    half = len(terms) // 2
    first = _statement(lhs, ir.Add(tuple(terms[:half])) if half > 1 else terms[0], pr, indent)
    rest = ir.Add((ir.Var("\0lhs"),) + tuple(terms[half:]))
    pr2 = type(pr)(pr.arrays, {**pr.variables, "\0lhs": lhs})
    return first + _statement(lhs, rest, pr2, indent)


def _dummies(kernel: ir.Kernel) -> tuple[list, list]:
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


def _decls(names, per_line=12):
    names = list(names)
    return [f"real(c_double) :: {', '.join(names[k:k + per_line])}" for k in range(0, len(names), per_line)]


def kernel_context(kernel: ir.Kernel, printer_cls=FortranPrinter, lookups=None) -> dict:
    """A kernel as Fortran procedures: parts (`split_kernel`, the C path's cut) and a driver;
    `lookups`: the module's tabulated-function lookups and their numbers (`lookup_ids`)."""
    ck = common.cut(kernel)
    kernel, shared = ck.kernel, ck.shared
    local = {t: f"v{k}" for k, t in enumerate(kernel.temps) if t not in shared}
    pr = printer_cls(ck.arrays, local | {v: f"dyn_w({k})" for v, k in shared.items()})
    pr.lookups = lookups or {}
    names, decls = _dummies(kernel)
    fname = f"k_{kernel.name}"
    printed = common.print_parts(ck, pr, lambda lhs, value: _statement(lhs, value, pr, ""),
                                 lambda st: f"out_{st.array}({st.index})")
    out_parts = [{"name": f"{fname}_p{ci}", "decls": _decls(local[t] for t in loc), "lines": lines}
                 for ci, (lines, loc) in enumerate(printed)]
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
    driver += [f"out_{a}({i}:{i + n - 1}) = 0.0d0" for a, i, n in ck.zeros]
    return {"name": fname, "args": call_args, "decls": decls, "parts": out_parts,
            "wdecl": wdecl, "driver": driver}


def _entry(name, args, body, decl_extra=(), alloc=()):
    return {"name": name, "args": args, "extra": list(decl_extra), "lines": list(alloc) + body}


def _scratch(name, size):
    if size <= STACK_DOUBLES:
        return [f"real(c_double) :: {name}(0:{size - 1})"], []
    return [f"real(c_double), allocatable :: {name}(:)"], [f"allocate({name}(0:{size - 1}))"]


def lagrangian_entries(mod: ir.ModuleIR) -> list:
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    if "mass" in kernel_names(mod):
        qdd_extra, qdd_lines = [], ["call k_dynamics(t, q, qd, p, out)"]
        m_extra, m_lines = [], ["call k_mass(t, q, p, out)"]
    else:
        d, a = _scratch("Ms", max(n * n, 1))
        qdd_extra, qdd_lines = d, a + ["call k_dynamics(t, q, qd, p, out, Ms)"]
        d, a = _scratch("work", 2 * n)
        m_extra, m_lines = d, a + [f"work(0:{n - 1}) = 0.0d0", f"call k_dynamics(t, q, work(0:{n - 1}), p, "
                                                                   f"work({n}:{2 * n - 1}), out)"]
    return [
        _entry("qdd", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)], qdd_lines, qdd_extra),
        _entry("mass_matrix", [("q", n, 0), ("p", np_, 0), ("out", n * n, 1)], m_lines, m_extra),
        _entry("rhs", [("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)],
               [f"ydot(0:{n - 1}) = y({n}:{2 * n - 1})",
                f"call e_qdd(t, y(0:{n - 1}), y({n}:{2 * n - 1}), p, ydot({n}:{2 * n - 1}))"])]


def hamiltonian_entries(mod: ir.ModuleIR) -> list:
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    d, a = _scratch("pmd", max(n, 1))
    return [
        _entry(
            "rhs",
            [("y", 2 * n, 0), ("p", np_, 0), ("ydot", 2 * n, 1)],
            [f"call k_hamilton(t, y(0:{n - 1}), y({n}:{2 * n - 1}), p, ydot(0:{n - 1}), ydot({n}:{2 * n - 1}))"],
        ),
        _entry(
            "momenta", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", n, 1)], ["call k_momenta(t, q, qd, p, out)"]
        ),
        _entry(
            "velocities",
            [("q", n, 0), ("pm", n, 0), ("p", np_, 0), ("out", n, 1)],
            a + ["call k_hamilton(t, q, pm, p, out, pmd)"],
            d,
        ),
        _entry("mass_matrix", [("q", n, 0), ("p", np_, 0), ("out", n * n, 1)], ["call k_mass(t, q, p, out)"]),
    ]


def derivative_entries(mod: ir.ModuleIR) -> list:
    """A derivatives module: its kernels; the solves are C in the module file (ModuleKind.composed)."""
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    state = [("q", n, 0), ("qd", n, 0), ("qdd", n, 0), ("p", np_, 0)]
    if "residual_jacobian" in kernel_names(mod):
        jac = _entry("residual_jacobian", state + [("r", n, 1), ("J", 2 * n * n, 1)],
                     ["call k_residual_jacobian(t, q, qd, qdd, p, r, J)"])
    else:                       # the tape: the partials, carried to J by the module file's C
        size = kernel_output_size(mod, "residual_partials", "P")    # (Fortran: `P` would be `p`)
        jac = _entry("residual_partials", state + [("r", n, 1), ("partials", size, 1)],
                     ["call k_residual_partials(t, q, qd, qdd, p, r, partials)"])
    if "mass" in kernel_names(mod):
        mass = _entry("mass_matrix", [("q", n, 0), ("p", np_, 0), ("out", n * n, 1)], ["call k_mass(t, q, p, out)"])
    else:
        mass = _entry("mass_times", [("q", n, 0), ("x", n, 0), ("p", np_, 0), ("out", n, 1)],
                      ["call k_mass_times(t, q, x, p, out)"])
    solve = [_entry("solve_jacobian", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("qdd", n, 1), ("F", n * n, 1),
                                       ("J", 2 * n * n, 1)], ["call k_solve_jacobian(t, q, qd, p, qdd, F, J)"])] \
        if "solve_jacobian" in kernel_names(mod) else []
    return [_entry("residual", state + [("r", n, 1)], ["call k_residual(t, q, qd, qdd, p, r)"]), jac, mass] + solve




def entry_symbol(mod: ir.ModuleIR, name: str) -> str:
    """Module-qualified C names: several Fortran modules may be loaded in one process."""
    return f"dyn_{mod.module_name}_{name}"


def _with_states(mod: ir.ModuleIR, ents: list) -> list:
    """Extra states (generator/mechanics/signals.py, as render/c.py with_states): the kind's rhs becomes
    rhs_mech; rhs on [.., s] copies s into its slots of p and appends s' = states(t, q, qd, p)."""
    if "states" not in kernel_names(mod):
        return ents
    n, np_, k = len(mod.coordinates), len(mod.parameter_defaults), len(mod.states)
    at = np_ - k
    out = [dict(e, name="rhs_mech")
           if e["name"] == "rhs" else e for e in ents]
    d, a = _scratch("px", np_)
    copy = [f"px(0:{at - 1}) = p(0:{at - 1})"] if at else []
    out += [_entry("states", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", k, 1)],
                   ["call k_states(t, q, qd, p, out)"]),
            _entry("rhs", [("y", 2 * n + k, 0), ("p", np_, 0), ("ydot", 2 * n + k, 1)],
                   a + copy + [f"px({at}:{np_ - 1}) = y({2 * n}:{2 * n + k - 1})", "call e_rhs_mech(t, y, px, ydot)",
                               f"call k_states(t, y(0:{n - 1}), ydot(0:{n - 1}), px, ydot({2 * n}:{2 * n + k - 1}))"],
                   d)]
    return out


def lookup_ids(mod: ir.ModuleIR) -> dict:
    """Every distinct tabulated-function lookup of the module's kernels -> its number in the C function
    `<module>_lookup` of the module file (the tables are C data: `declarations`)."""
    found = set()

    def walk(node):
        if isinstance(node, ir.Lookup):
            found.add(ir.Lookup(node.data, node.orders, node.shape, node.degree, node.ext, ()))
        for k in ir.children(node):
            walk(k)
    for kernel in mod.kernels:
        for st in kernel.body:
            walk(st.value)
    return {lk: k for k, lk in enumerate(sorted(found, key=repr))}


def lookup_declarations(mod: ir.ModuleIR) -> list:
    """C lines of the module file: `double <module>_lookup(int id, double a, double b)` (the tables
    it reads are among the module's tables, declared before it)."""
    ids = lookup_ids(mod)
    if not ids:
        return []
    pr = CPrinter({}, {"a": "a", "b": "b"})
    lines = ['#include "dynamica_helpers.h"']
    lines += [f"double {entry_symbol(mod, 'lookup')}(int id, double a, double b)", "{", "    switch (id) {"]
    for lk, k in ids.items():
        args = (ir.Var("a"),) if len(lk.shape) == 1 else (ir.Var("a"), ir.Var("b"))
        call = pr.doprint(ir.Lookup(lk.data, lk.orders, lk.shape, lk.degree, lk.ext, args))
        lines.append(f"    case {k}: return {call};")
    lines += ["    }", "    (void)b;", "    return NAN;", "}"]
    return lines


def entries(mod: ir.ModuleIR) -> list:
    """The bind(C) entry points, t passed by value: {"name", "args": [(name, size, writable)], ...}."""
    n, np_ = len(mod.coordinates), len(mod.parameter_defaults)
    ents = _with_states(mod, module_kind(mod.entries).backends["fortran"](mod))
    if "outputs" in kernel_names(mod):
        size = kernel_output_size(mod, "outputs", "out")
        ents.append(_entry("outputs", [("q", n, 0), ("qd", n, 0), ("p", np_, 0), ("out", size, 1)],
                           ["call k_outputs(t, q, qd, p, out)"]))
    for k in mod.kernels:                    # kernels exported with their own arguments (t first)
        if k.exported:
            args = [(i.name, i.size, 0) for i in k.inputs if i.size is not None] + [(o.name, o.size, 1)
                                                                                   for o in k.outputs]
            call = ", ".join([i.name for i in k.inputs] + [o.name for o in k.outputs])
            ents.append(_entry(k.name, args, [f"call k_{k.name}({call})"]))
    for e in ents:
        e["cname"] = entry_symbol(mod, e["name"])
        e["dummies"] = ", ".join(["t"] + [a for a, _, _ in e["args"]])
        e["bind"] = _bind_clause(f'    subroutine e_{e["name"]}({e["dummies"]})', e["cname"])
        e["decls"] = ["real(c_double), value, intent(in) :: t"] + [
            f"real(c_double), intent({'inout' if w else 'in'}) :: {a}(0:*)" for a, _, w in e["args"]]
        e["c_signature"] = (f"void {e['cname']}(double t, " + ", ".join(
            f"{'' if w else 'const '}double *{a}" for a, _, w in e["args"]) + ")")
    return ents


def _bind_clause(head: str, cname: str, width: int = 132) -> str:
    """` bind(C, name="...")` after `head`, continued onto further lines where free form's 132
    characters a line would be exceeded (the name itself split by character-context continuation)."""
    clause = f' bind(C, name="{cname}")'
    if len(head) + len(clause) <= width:
        return clause
    lines, rest = [' &\n        bind(C, name="'], cname + '")'
    room = width - 25
    while len(rest) > room:
        lines.append(rest[:room] + "&\n        &")
        rest = rest[room:]
    return "".join(lines) + rest


def kernels_context(mod: ir.ModuleIR) -> dict:
    """What templates/fortran_kernels.f90.j2 shows."""
    ids = lookup_ids(mod)
    return {"version": __version__, "model_name": mod.model_name, "form": mod.form, "signature": mod.signature,
            "fortran_module": FORTRAN_MODULE, "kernels": [kernel_context(k, lookups=ids) for k in mod.kernels],
            "entries": entries(mod), "lookup": entry_symbol(mod, "lookup") if ids else ""}


FORTRAN = register(Backend(
    name="fortran", printer=FortranPrinter,
    templates=(("fortran_kernels.f90.j2", "{module}_f.f90", kernels_context, "fortran"),),
    declarations=lambda mod: tuple(f"extern {e['c_signature']};" for e in entries(mod)) + tuple(c_tables(mod))
    + tuple(lookup_declarations(mod)),
    entry_symbol=entry_symbol,
    helpers=("dynamica_linalg.h", "dynamica_helpers.h"),
    description="Fortran 2008 kernels with bind(C) entry points, compiled by gfortran"))
