"""Lowering: EquationsOfMotion (sympy) -> Kernel IR. The only place CSE and ordering happen.

Per kernel: dead-code elimination from its outputs, conversion of sympy expressions to IR
nodes (dispatch on the sympy class; anything unknown is an error), then global value
numbering: every composite subexpression that occurs more than once in the kernel gets a
temporary `z<k>`, assigned just before its first use.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import sympy as sp

from dynamica import __version__
from dynamica.generator import expr as ex
from dynamica.generator import ir

#: sympy function class -> IR function name
_FUNCS = {sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.asin: "asin", sp.acos: "acos",
          sp.atan: "atan", sp.atan2: "atan2", sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh",
          sp.exp: "exp", sp.log: "log", sp.Abs: "fabs", sp.sign: "sign", sp.Heaviside: "heaviside",
          sp.Min: "fmin", sp.Max: "fmax"}


class ToIR:
    """sympy -> IR nodes; `symbols` maps input and intermediate symbols to IR leaves."""

    def __init__(self, symbols: dict):
        self.symbols = symbols

    def __call__(self, e):
        for cls in type(e).__mro__:
            m = getattr(self, "_ir_" + cls.__name__, None)
            if m is not None:
                return m(e)
        raise TypeError(f"cannot lower {type(e).__name__}: {e}")

    def _ir_Symbol(self, e):
        try:
            return self.symbols[e]
        except KeyError:
            raise KeyError(f"symbol `{e}` is not an input of this kernel") from None

    def _ir_Number(self, e):
        return ir.Num(float(e))

    def _ir_NumberSymbol(self, e):      # pi, E
        return ir.Num(float(e))

    def _ir_Add(self, e):
        return ir.Add(tuple(self(a) for a in e.args))

    def _ir_Mul(self, e):
        return ir.Mul(tuple(self(a) for a in e.args))

    def _ir_Pow(self, e):
        b, x = e.args
        if x == sp.Rational(1, 2):
            return ir.Call("sqrt", (self(b),))
        if x == -sp.Rational(1, 2):
            return ir.Pow(ir.Call("sqrt", (self(b),)), ir.Num(-1.0))
        return ir.Pow(self(b), self(x))

    def _ir_MinMaxBase(self, e):          # Min/Max are lattice operations, not Functions
        return self._ir_Function(e)

    def _ir_Function(self, e):
        name = _FUNCS.get(type(e))
        if name is None:
            raise TypeError(f"function {type(e).__name__} has no IR counterpart")
        args = tuple(self(a) for a in e.args)
        if name in ("fmin", "fmax") and len(args) > 2:
            acc = ir.Call(name, args[:2])
            for a in args[2:]:
                acc = ir.Call(name, (acc, a))
            return acc
        if name == "heaviside" and len(args) == 2:      # sympy's H(x, H0): we use H(0) = 1/2
            args = args[:1]
        return ir.Call(name, args)


def _needed(assignments, roots) -> list:
    """Assignments reachable from `roots`, in program order (dead-code elimination)."""
    need = set()
    for r in roots:
        need |= r.free_symbols
    keep = []
    for sym, e in reversed(assignments):
        if sym in need:
            keep.append((sym, e))
            need |= e.free_symbols
    keep.reverse()
    return keep


_TRIVIAL = (ir.Num, ir.Arg, ir.Var)


def _is_cheap(node) -> bool:
    """Negation of a leaf costs nothing: never worth a temporary."""
    return isinstance(node, ir.Mul) and len(node.factors) == 2 and isinstance(node.factors[0], ir.Num) \
        and node.factors[0].value == -1.0 and isinstance(node.factors[1], _TRIVIAL)


def _rebuild(node, kids):
    if isinstance(node, ir.Add):
        return ir.Add(kids)
    if isinstance(node, ir.Mul):
        return ir.Mul(kids)
    if isinstance(node, ir.Pow):
        return ir.Pow(*kids)
    if isinstance(node, ir.Call):
        return ir.Call(node.func, kids)
    return node


def value_numbering(body: list) -> tuple[list, list]:
    """Global CSE over straight-line code: repeated composite subtrees become temporaries."""
    counts = Counter()

    def count(node):
        if isinstance(node, _TRIVIAL):
            return
        counts[node] += 1
        if counts[node] == 1:
            for k in ir.children(node):
                count(k)

    for st in body:
        count(st.value)
    out, temps, memo = [], [], {}

    def rewrite(node, top):
        if isinstance(node, _TRIVIAL):
            return node
        if node in memo:
            return memo[node]
        new = _rebuild(node, tuple(rewrite(k, False) for k in ir.children(node)))
        if not top and counts[node] > 1 and not _is_cheap(node):
            name = f"z{len(temps)}"
            temps.append(name)
            out.append(ir.Assign(name, new))
            memo[node] = ir.Var(name)
            return memo[node]
        return new

    for st in body:
        v = rewrite(st.value, True)
        if isinstance(st, ir.Assign):
            out.append(ir.Assign(st.target, v))
            temps.append(st.target)
        else:
            out.append(ir.Store(st.array, st.index, v))
    return out, temps


def lower_kernel(name, eom, inputs, outputs, symbols) -> ir.Kernel:
    """One kernel: `outputs` is a list of (array name, list of expressions)."""
    roots = [e for _, exprs in outputs for e in exprs]
    keep = _needed(eom.program.assignments, roots)
    symbols = dict(symbols)
    for sym, _ in keep:
        symbols[sym] = ir.Var(sym.name)
    conv = ToIR(symbols)
    body = [ir.Assign(sym.name, conv(e)) for sym, e in keep]
    for arr, exprs in outputs:
        body += [ir.Store(arr, k, conv(sp.sympify(e))) for k, e in enumerate(exprs)]
    body, temps = value_numbering(body)
    return ir.Kernel(name=name, inputs=tuple(inputs),
                     outputs=tuple(ir.Output(a, len(x)) for a, x in outputs),
                     temps=tuple(temps), body=tuple(body))


def lower(eom, spec) -> ir.ModuleIR:
    """The kernel of a Lagrangian module: `dynamics` (t, q, qd, p) -> (qdd, M)."""
    n = len(eom.coordinates)
    params, defaults = [], []
    sym = {ex.T: ir.Arg("t")}
    k = 0
    for p in spec.parameters:
        if isinstance(p.value, tuple):
            params.append((p.name, len(p.value)))
            for j, v in enumerate(p.value):
                sym[ex.param_symbol(p.name, j)] = ir.Arg("p", k)
                defaults.append(float(v))
                k += 1
        else:
            params.append((p.name, 1))
            sym[ex.param_symbol(p.name)] = ir.Arg("p", k)
            defaults.append(float(p.value))
            k += 1
    qsym = {s: ir.Arg("q", j) for j, s in enumerate(eom.q)}
    qdsym = {s: ir.Arg("qd", j) for j, s in enumerate(eom.qd)}
    np_ = k
    t_in, q_in, qd_in, p_in = ir.Input("t", None), ir.Input("q", n), ir.Input("qd", n), ir.Input("p", np_)
    # one kernel for both outputs: the mass matrix is an intermediate of the form anyway, and
    # one program compiles in half the time of two overlapping ones
    kernels = (
        lower_kernel("dynamics", eom, (t_in, q_in, qd_in, p_in),
                     [("qdd", eom.outputs["qdd"]), ("M", eom.outputs["mass_matrix"])],
                     {**sym, **qsym, **qdsym}),
    )
    mod = ir.ModuleIR(model_name=spec.name, module_name=f"{spec.name}_{eom.form}", form=eom.form,
                      kind=eom.kind, coordinates=eom.coordinates, parameters=tuple(params),
                      parameter_defaults=tuple(defaults), kernels=kernels)
    digest = hashlib.sha256(repr((__version__, mod)).encode()).hexdigest()
    return ir.ModuleIR(**{**mod.__dict__, "signature": digest})
