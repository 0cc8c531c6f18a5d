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
