"""Printers: IR nodes -> source text. Dispatch on node type; unknown nodes are an error."""

from __future__ import annotations

import math

from dynamica.generator.ir import nodes as ir


class NonFiniteConstant(ValueError):
    """A constant of the generated code is not a finite double (the pipeline names the model
    entries whose constants multiply up to it)."""


class CPrinter:
    """C99 expressions for the generated kernel files."""

    #: IR function -> name in the generated code (helpers come from dynamica_helpers.pxd)
    functions = {f: f for f in ir.FUNCTIONS} | {"sign": "dyn_sign", "heaviside": "dyn_heaviside"}

    def __init__(self, arrays: dict | None = None, variables: dict | None = None):
        self.arrays = arrays or {}      # IR input/output array name -> name in the code
        self.variables = variables or {}  # temporaries living elsewhere (e.g. a workspace)

    def var(self, name: str) -> str:
        return self.variables.get(name, name)

    def doprint(self, node) -> str:
        method = getattr(self, "_print_" + type(node).__name__, None)
        if method is None:
            raise TypeError(f"{type(self).__name__} cannot print {type(node).__name__}")
        return method(node)

    # leaves
    def _print_Num(self, n):
        v = n.value
        if not math.isfinite(v):
            raise NonFiniteConstant(f"non-finite constant {v} in generated code")
        s = repr(float(v))
        return f"({s})" if v < 0 else s

    def _print_Arg(self, a):
        name = self.arrays.get(a.array, a.array)
        return name if a.index is None else f"{name}[{a.index}]"

    def _print_Var(self, v):
        return self.variables.get(v.name, v.name)

    # operators
    def _paren(self, node) -> str:
        s = self.doprint(node)
        return s if isinstance(node, (ir.Num, ir.Arg, ir.Var, ir.Call, ir.Lookup)) else f"({s})"

    def _print_Add(self, e):
        out = []
        for k, t in enumerate(e.terms):
            neg = self._negated(t)
            if neg is not None:
                s = self._mul_text(neg) if isinstance(neg, ir.Mul) else self._paren_add(neg)
                out.append(f"- {s}" if k else f"-{s}")
            else:
                s = self.doprint(t)
                out.append(f"+ {s}" if k else s)
        return " ".join(out)

    def _paren_add(self, node):
        return f"({self.doprint(node)})" if isinstance(node, ir.Add) else self.doprint(node)

    @staticmethod
    def _negated(t):
        """If t is -1 * x, return x (an expression or Mul of the rest)."""
        if isinstance(t, ir.Mul) and isinstance(t.factors[0], ir.Num) and t.factors[0].value == -1.0:
            rest = t.factors[1:]
            return rest[0] if len(rest) == 1 else ir.Mul(rest)
        if isinstance(t, ir.Num) and t.value < 0:
            return ir.Num(-t.value)
        return None

    def _mul_text(self, e) -> str:
        num, den = [], []
        for f in e.factors:
            if isinstance(f, ir.Pow) and isinstance(f.exp, ir.Num) and f.exp.value < 0 \
                    and float(f.exp.value).is_integer():
                den.append(f.base if f.exp.value == -1 else ir.Pow(f.base, ir.Num(-f.exp.value)))
            else:
                num.append(f)
        sign = ""
        if num and isinstance(num[0], ir.Num) and num[0].value == -1.0:
            sign, num = "-", num[1:]
        ntext = "*".join(self._paren(f) for f in num) if num else "1.0"
        if not den:
            return sign + ntext
        dtext = "*".join(self._paren(f) for f in den)
        return f"{sign}{ntext}/({dtext})" if len(den) > 1 else f"{sign}{ntext}/{self._paren(den[0])}"

    def _print_Mul(self, e):
        return self._mul_text(e)

    def _print_Pow(self, e):
        if isinstance(e.exp, ir.Num) and float(e.exp.value).is_integer() and abs(e.exp.value) <= 4:
            k = int(e.exp.value)
            if k == 0:
                return "1.0"
            b = self._paren(e.base)
            prod = "*".join([b] * abs(k))
            return prod if k > 0 else f"1.0/({prod})"
        return f"pow({self.doprint(e.base)}, {self.doprint(e.exp)})"

    def _print_Call(self, c):
        fn = self.functions.get(c.func)
        if fn is None:
            raise TypeError(f"unknown function {c.func!r}")
        return f"{fn}({', '.join(self.doprint(a) for a in c.args)})"

    def _print_Lookup(self, e):
        """A tabulated function: the helpers of dynamica_helpers.h over the module's tables."""
        args = ", ".join(self.doprint(a) for a in e.args)
        if len(e.shape) == 2:
            return (f"dyn_grid2({e.data}_x, {e.shape[0]}, {e.data}_y, {e.shape[1]}, {e.data}_z, {e.ext}, "
                    f"{e.orders[0]}, {e.orders[1]}, {args})")
        return f"dyn_ppoly({e.data}_x, {e.data}_c{e.orders[0]}, {e.shape[0]}, {e.degree}, {e.ext}, {args})"
