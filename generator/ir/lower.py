"""Lowering: EquationsOfMotion (sympy) -> Kernel IR. The only place CSE and ordering happen.

Per kernel: dead-code elimination from its outputs, conversion of sympy expressions to IR
nodes (dispatch on the sympy class; anything unknown is an error), then global value
numbering: every composite subexpression that occurs more than once in the kernel gets a
temporary `z<k>`, assigned just before its first use.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import replace

import sympy as sp

from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.tangent import tangent_added, tangent_kernel, tape_kernel
from dynamica.generator.mechanics.tables import data_name, module_tables
from dynamica.generator.spec import expr as ex
from dynamica.version import __version__

#: sympy function class -> IR function name
_FUNCS = {sp.sin: "sin", sp.cos: "cos", sp.tan: "tan", sp.asin: "asin", sp.acos: "acos",
          sp.atan: "atan", sp.atan2: "atan2", sp.sinh: "sinh", sp.cosh: "cosh", sp.tanh: "tanh",
          sp.exp: "exp", sp.log: "log", sp.Abs: "fabs", sp.sign: "sign", sp.Heaviside: "heaviside",
          sp.Min: "fmin", sp.Max: "fmax"}


class ToIR:
    """sympy -> IR nodes; `symbols` maps input and intermediate symbols to IR leaves."""

    def __init__(self, symbols: dict, lookups=None):
        self.symbols = symbols
        self.lookups = lookups if lookups is not None else set()    # (table, orders) the kernel reads

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

    def _ir_DiracDelta(self, e):
        # the derivative of a jump (heaviside, sign) or a kink (abs, min, max) in a driven
        # transform's `by:`: zero everywhere but at the switching instant, where no impulse is
        # modelled (a step of the position is taken as it is, at an instant of measure zero)
        return ir.Num(0.0)

    def _ir_TableFunction(self, e):       # a tabulated function of the model (generator/mechanics/tables.py)
        from dynamica.generator.mechanics.tables import lookup_parts
        self.lookups.add((e.table, e.orders))
        return ir.Lookup(**lookup_parts(e.table, e.orders), args=tuple(self(a) for a in e.args))

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


def _needed(assignments, roots, aliases=None) -> list:
    """Assignments reachable from `roots`, dependencies first (dead-code elimination).

    `aliases` maps input symbols to program symbols that replace them in this kernel (the
    Hamiltonian forms compute q' from the momenta); with aliases an assignment may depend on
    a later one, so the result is ordered topologically, ties broken by program order.
    """
    aliases = aliases or {}
    index = {sym: k for k, (sym, _) in enumerate(assignments)}

    def deps(e):
        out = set()
        for s in e.free_symbols:
            s = aliases.get(s, s)
            if s in index:
                out.add(s)
        return out

    need, stack = set(), []
    for r in roots:
        stack.extend(deps(r))
    dep = {}
    while stack:
        s = stack.pop()
        if s in need:
            continue
        need.add(s)
        dep[s] = deps(assignments[index[s]][1])
        stack.extend(dep[s] - need)
    if not aliases:
        return [assignments[k] for k in sorted(index[s] for s in need)]
    # Kahn's algorithm, smallest program index first
    import heapq
    users: dict = {s: [] for s in need}
    indeg = {s: len(dep[s]) for s in need}
    for s in need:
        for d in dep[s]:
            users[d].append(s)
    heap = [index[s] for s in need if indeg[s] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        sym, e = assignments[heapq.heappop(heap)]
        order.append((sym, e))
        for u in users[sym]:
            indeg[u] -= 1
            if indeg[u] == 0:
                heapq.heappush(heap, index[u])
    if len(order) != len(need):
        raise ValueError("cyclic dependency among intermediates (an alias depends on what it replaces)")
    return order


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
    if isinstance(node, ir.Lookup):
        return replace(node, args=kids)
    return node


def value_numbering(body: list) -> tuple[list, list]:
    """Global CSE over straight-line code: repeated composite subtrees become temporaries."""
    counts: Counter = Counter()

    def count(node):
        if isinstance(node, _TRIVIAL):
            return
        counts[node] += 1
        if counts[node] == 1:
            for k in ir.children(node):
                count(k)

    for st in body:
        count(st.value)
    out: list = []
    temps: list = []
    memo: dict = {}

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


def lower_kernel(name, program, inputs, outputs, symbols, aliases=None, lookups=None) -> ir.Kernel:
    """One kernel: `outputs` is a list of (array name, list of expressions) of `program`; the
    tabulated functions it reads are added to `lookups`."""
    roots = [sp.sympify(e) for _, exprs in outputs for e in exprs]
    keep = _needed(program.assignments, roots, aliases)
    symbols = dict(symbols)
    for sym, _ in keep:
        if sym in symbols:          # an input read as a local: impossible by the namespaces of expr.py
            raise ValueError(f"internal error: intermediate `{sym}` shadows an input of kernel `{name}`")
        symbols[sym] = ir.Var(sym.name)
    for src, dst in (aliases or {}).items():
        if dst in symbols:                # unused aliases need nothing
            symbols[src] = symbols[dst]
    conv = ToIR(symbols, lookups)
    body: list = [ir.Assign(sym.name, conv(e)) for sym, e in keep]
    for arr, exprs in outputs:
        body += [ir.Store(arr, k, conv(sp.sympify(e))) for k, e in enumerate(exprs)]
    body, temps = value_numbering(body)
    return ir.Kernel(name=name, inputs=tuple(inputs),
                     outputs=tuple(ir.Output(a, len(x)) for a, x in outputs),
                     temps=tuple(temps), body=tuple(body))


def parameter_layout(spec):
    """((name, size), ...), flattened defaults and symbol -> IR of the model's parameters, then
    the loops' references `<loop>.reference` (set by the assembly; 0 until then), then the slots
    of its inputs and extra states (generator/mechanics/signals.py; defaults 0)."""
    from dynamica.generator.mechanics.constraints import reference_parameters
    from dynamica.generator.mechanics.signals import slot_layout, slot_symbols
    params, defaults, sym = [], [], {}
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
    for name, size in reference_parameters(spec):
        params.append((name, size))
        for j in range(size):
            sym[ex.param_symbol(name, j)] = ir.Arg("p", k)
            defaults.append(0.0)
            k += 1
    from dynamica.generator.mechanics.broad_phase import wrench_parameters
    for name, size in wrench_parameters(spec):          # the broad phase's wrenches (written by its routine)
        params.append((name, size))
        for j in range(size):
            sym[ex.param_symbol(name, j)] = ir.Arg("p", k)
            defaults.append(0.0)
            k += 1
    slots = slot_layout(spec, k)
    sym.update(slot_symbols(slots))
    defaults += [0.0] * (slots.size - k)
    return tuple(params), tuple(defaults), sym


def derived_lookups(kernel: ir.Kernel, lookups: set) -> set:
    """(table, orders) of the Lookups in `kernel` (a tangent's: derivative orders the lowering
    did not see), for the tables in `lookups`."""
    by_data = {data_name(tf): tf for tf, _ in lookups}
    found = set()

    def walk(node):
        if isinstance(node, ir.Lookup):
            found.add((by_data[node.data], node.orders))
        for c in ir.children(node):
            walk(c)
    for st in kernel.body:
        walk(st.value)
    return found


def lower(eom, spec) -> ir.ModuleIR:
    """The kernels of the form's kind (forms.kernel_specs), each DCE'd and CSE'd on its own."""
    from dynamica.generator.forms import kernel_specs
    n = len(eom.coordinates)
    params, defaults, psym = parameter_layout(spec)
    roles = {"q": eom.q, "qd": eom.qd, "pm": eom.pm}
    kernels, tables = [], list(eom.tables)
    lookups: set = set()
    for ks in kernel_specs(eom):
        sizes = {"t": None, "p": len(defaults)}
        sym = dict(psym) if "p" in ks.inputs else {}
        extra = dict(ks.symbols)
        for role in ks.inputs:
            if role == "t":
                sym[ex.T] = ir.Arg("t")
            elif role != "p":
                syms = extra[role] if role in extra else roles[role]
                sizes[role] = len(syms)
                sym.update({s: ir.Arg(role, j) for j, s in enumerate(syms)})
        inputs = tuple(ir.Input(r, sizes.get(r, n)) for r in ks.inputs)
        kernel = lower_kernel(ks.name, ks.program or eom.program, inputs, list(ks.outputs), sym, dict(ks.aliases),
                              lookups)
        if ks.tangent and ks.tangent_add:
            of, into = ks.tangent_add
            kernel = tangent_added(kernel, ks.tangent, of, into, name=ks.name)
        elif ks.tangent:
            kernel = tangent_kernel(kernel, ks.tangent, name=ks.name)
        if ks.tape:
            kernel, more = tape_kernel(kernel, ks.tape, name=ks.name)
            tables += more
        if (ks.tangent or ks.tape) and lookups:      # the derivative tables the tangent looks up
            lookups |= derived_lookups(kernel, lookups)
        if ks.skip_zero_stores:
            kernel = replace(kernel, body=tuple(st for st in kernel.body if not (
                isinstance(st, ir.Store) and isinstance(st.value, ir.Num) and st.value.value == 0.0)))
        kernels.append(replace(kernel, hints=tuple(ks.hints), exported=ks.export))
    suffix = "" if eom.mode == "symbolic" else f"_{eom.mode}"
    mod = ir.ModuleIR(model_name=spec.name, module_name=f"{spec.name}_{eom.form.replace('-', '_')}{suffix}",
                      form=eom.form, kind=eom.kind, coordinates=eom.coordinates, parameters=params,
                      parameter_defaults=defaults, kernels=tuple(kernels),
                      entries=eom.entries or eom.kind, info=tuple(sorted(eom.info.items())),
                      tables=tuple(tables) + module_tables(lookups), constrained=eom.constrained,
                      inputs=tuple(spec.inputs), states=tuple(s.name for s in spec.states))
    digest = hashlib.sha256(repr((__version__, mod)).encode()).hexdigest()
    return replace(mod, signature=digest)
