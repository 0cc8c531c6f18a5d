"""Tabulated functions of the model file (`functions:`; as in the peer package: tabulated functions of one and
more variables, thrust and gas-dynamic forces given as curves).

A function of one variable is a piecewise polynomial on its knots x_0 < ... < x_{n-1}: on
[x_i, x_{i+1}) it is sum_j c[j, i] (x - x_i)^(k - j), scipy's `PPoly` layout, with the
coefficients of the interpolation chosen (`INTERPOLATIONS`: `linear` as `interp1d`, `cubic` the
not-a-knot spline of `CubicSpline`, `pchip` of `PchipInterpolator`, all computed by scipy when the
module is generated). A function of two variables is the bilinear interpolation of a
rectilinear grid (scipy's `RegularGridInterpolator`, method linear). Outside the knots
(`EXTRAPOLATIONS`): `hold` keeps the end value (the function at the nearest knot), `extrapolate`
continues the end piece.

The generated code evaluates them with the helpers of templates/native/dynamica_helpers.h (the same
interval search and the same order of operations as scipy) over the coefficients, which are
constant arrays of the module (`module_tables`); `value` is their twin in Python (the IR
interpreter and constant folding). In sympy, a call is a `TableFunction` whose `fdiff` is
the derivative table: every derivative a Jacobian or a driven joint needs is again a table
lookup (the derivative pieces of the polynomial, or of the bilinear cell), zero where the held
function is constant.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import sympy as sp

#: extrapolation -> the helpers' flag (dynamica_helpers.h: 0 continue the end piece, 1 hold)
EXTRAPOLATIONS = {"extrapolate": 0, "hold": 1}
#: the helpers' flag for the derivative of a held function: zero outside the knots
ZERO_OUTSIDE = 2


@dataclass(frozen=True)
class TabulatedFunction:
    """One entry of `functions:`: knots and values, plain floats (checked by the loader)."""
    name: str
    x: tuple                      # knots of the first variable, strictly increasing
    y: tuple                      # 1 variable: the values at x; 2 variables: the knots of the second
    z: tuple = ()                 # 2 variables: z[i * len(y) + j] the value at (x_i, y_j)
    interpolation: str = "linear"
    extrapolation: str = "hold"
    source: str = ""              # the data file, as written in the model (or "")
    path: str = ""                # the entry, e.g. functions.thrust

    @property
    def arity(self) -> int:
        return 2 if self.z else 1

    @property
    def degree(self) -> int:
        """Polynomial degree of the pieces in each variable."""
        return 1 if self.z else DEGREES[self.interpolation]


# ------------------------------------------------------------------ coefficients (scipy)
def _linear(x, y):
    # interp1d(kind="linear"): y_lo + slope (x - x_lo), slope = (y_hi - y_lo) / (x_hi - x_lo)
    return np.vstack([np.diff(y) / np.diff(x), y[:-1]])


def _cubic(x, y):
    from scipy.interpolate import CubicSpline
    return CubicSpline(x, y).c


def _pchip(x, y):
    from scipy.interpolate import PchipInterpolator
    return PchipInterpolator(x, y).c


#: interpolation of one variable -> (x, y) -> PPoly coefficients c[j, i], shape (k + 1, n - 1)
INTERPOLATIONS = {"linear": _linear, "cubic": _cubic, "pchip": _pchip}
DEGREES = {"linear": 1, "cubic": 3, "pchip": 3}
#: interpolations of two variables
INTERPOLATIONS_2D = ("linear",)


def coefficients(tf: TabulatedFunction, order: int = 0) -> np.ndarray:
    """PPoly coefficients of the `order`-th derivative of a function of one variable."""
    from scipy.interpolate import PPoly
    x = np.asarray(tf.x, dtype=float)
    c = INTERPOLATIONS[tf.interpolation](x, np.asarray(tf.y, dtype=float))
    return PPoly(c, x).derivative(order).c if order else c


# ------------------------------------------------------------------ evaluation (the C semantics)
def _interval(knots, v: float) -> int:
    """i with knots[i] <= v < knots[i + 1]; the last interval at and beyond the last knot, the first
    below the first (scipy's find_interval with extrapolation)."""
    n = len(knots)
    if v >= knots[n - 1]:
        return n - 2
    if not v >= knots[0]:             # below, or NaN
        return 0
    return bisect.bisect_right(knots, v) - 1


def ppoly(x, c, k: int, ext: int, v: float) -> float:
    """dyn_ppoly of dynamica_helpers.h: c flat, piece i at c[i (k + 1) : (i + 1) (k + 1)]."""
    n = len(x)
    if ext and not x[0] <= v <= x[n - 1] and v == v:
        if ext == ZERO_OUTSIDE:
            return 0.0
        v = min(max(v, x[0]), x[n - 1])
    i = _interval(x, v)
    dx, z, res = v - x[i], 1.0, 0.0
    for j in range(k, -1, -1):              # scipy's evaluate_poly1: lowest power first
        res = res + c[i * (k + 1) + j] * z
        z = z * dx
    return res


def grid2(xg, yg, z, ext: int, dx: int, dy: int, u: float, w: float) -> float:
    """dyn_grid2 of dynamica_helpers.h: bilinear on the grid, derivatives (dx, dy) in {0, 1}."""
    ny = len(yg)
    if ext:
        if (dx and not xg[0] <= u <= xg[-1] and u == u) or (dy and not yg[0] <= w <= yg[-1] and w == w):
            return 0.0
        u = min(max(u, xg[0]), xg[-1]) if u == u else u
        w = min(max(w, yg[0]), yg[-1]) if w == w else w
    i, j = _interval(xg, u), _interval(yg, w)
    hx, hy = xg[i + 1] - xg[i], yg[j + 1] - yg[j]
    tx, ty = (u - xg[i]) / hx, (w - yg[j]) / hy
    z00, z01, z10, z11 = z[i * ny + j], z[i * ny + j + 1], z[(i + 1) * ny + j], z[(i + 1) * ny + j + 1]
    if dx and dy:
        return (((z11 - z10) - z01) + z00) / (hx * hy)
    if dx:
        return ((z10 - z00) * (1.0 - ty) + (z11 - z01) * ty) / hx
    if dy:
        return ((z01 - z00) * (1.0 - tx) + (z11 - z10) * tx) / hy
    return z00 * ((1.0 - tx) * (1.0 - ty)) + z01 * ((1.0 - tx) * ty) + z10 * (tx * (1.0 - ty)) + z11 * (tx * ty)


def ext_flag(tf: TabulatedFunction, orders: tuple) -> int:
    """The helpers' extrapolation flag of a lookup (a derivative of a held function of one
    variable is zero outside; the two-variable helper decides per axis)."""
    flag = EXTRAPOLATIONS[tf.extrapolation]
    return ZERO_OUTSIDE if flag and tf.arity == 1 and orders[0] > 0 else flag


def value(tf: TabulatedFunction, orders: tuple, args) -> float:
    """The (derivative of the) function at `args`, as the generated code computes it."""
    if tf.arity == 2:
        return grid2(tf.x, tf.y, tf.z, EXTRAPOLATIONS[tf.extrapolation], orders[0], orders[1], *map(float, args))
    c = _coefficients_cached(tf, orders[0])
    return ppoly(tf.x, c, tf.degree - orders[0], ext_flag(tf, orders), float(args[0]))


_COEFFS: dict = {}


def _coefficients_cached(tf, order):
    key = (tf, order)
    if key not in _COEFFS:
        _COEFFS[key] = tuple(float(v) for v in coefficients(tf, order).T.reshape(-1))
    return _COEFFS[key]


def vanishes(tf: TabulatedFunction, orders: tuple) -> bool:
    """True when this derivative is zero everywhere (beyond the degree of the pieces)."""
    return any(o > tf.degree for o in orders)


# ------------------------------------------------------------------ sympy
class TableFunction(sp.Function):
    """A call of a tabulated function (or of one of its derivative tables) in an expression.
    Subclasses are made by `sympy_function`, one per (table, derivative orders)."""

    is_real = True
    table: TabulatedFunction = None
    orders: tuple = ()

    @classmethod
    def eval(cls, *args):
        if all(a.is_Number for a in args):
            return sp.Float(value(cls.table, cls.orders, [float(a) for a in args]))
        return None

    def fdiff(self, argindex=1):
        orders = list(self.orders)
        orders[argindex - 1] += 1
        if vanishes(self.table, tuple(orders)):
            return sp.Integer(0)
        return sympy_function(self.table, tuple(orders))(*self.args)


_CLASSES: dict = {}


def sympy_function(tf: TabulatedFunction, orders: tuple | None = None):
    """The sympy function class of `tf` differentiated `orders` times (one per argument)."""
    orders = tuple(orders) if orders is not None else (0,) * tf.arity
    key = (tf, orders)
    if key not in _CLASSES:
        mark = "" if not any(orders) else "[" + ",".join(map(str, orders)) + "]"
        # the name is a role-prefixed one (expr.py): it can meet no generated or model name
        _CLASSES[key] = type(f"tab:{tf.name}{mark}", (TableFunction,),
                             {"table": tf, "orders": orders, "nargs": tf.arity, "__module__": __name__})
    return _CLASSES[key]


@dataclass(frozen=True)
class ScopeFunction:
    """What the expression parser (expr.Scope.functions) needs of a tabulated function."""
    table: TabulatedFunction

    @property
    def arity(self) -> int:
        return self.table.arity

    def sympy(self, *args):
        return sympy_function(self.table)(*args)

    def value(self, *args) -> float:
        return value(self.table, (0,) * self.table.arity, args)


def scope_functions(functions) -> dict:
    """name -> ScopeFunction of a model's tabulated functions (for expr.Scope)."""
    return {tf.name: ScopeFunction(tf) for tf in functions}


# ------------------------------------------------------------------ the module's constant data
def data_name(tf: TabulatedFunction) -> str:
    """Prefix of the module's arrays of `tf` (its name is an identifier: expr.py)."""
    return f"dyn_tab_{tf.name}"


def lookup_parts(tf: TabulatedFunction, orders: tuple) -> dict:
    """The fields of an ir.Lookup of `tf` differentiated `orders` times."""
    shape = (len(tf.x), len(tf.y)) if tf.arity == 2 else (len(tf.x),)
    return {"data": data_name(tf), "orders": tuple(orders), "shape": shape,
            "degree": tf.degree - (0 if tf.arity == 2 else orders[0]), "ext": ext_flag(tf, orders)}


def module_tables(used) -> tuple:
    """((array name, floats), ...) for the (table, orders) pairs a module's kernels look up."""
    out = {}
    for tf, orders in sorted(used, key=lambda u: (u[0].name, u[1])):
        base = data_name(tf)
        out[f"{base}_x"] = tuple(float(v) for v in tf.x)
        if tf.arity == 2:
            out[f"{base}_y"] = tuple(float(v) for v in tf.y)
            out[f"{base}_z"] = tuple(float(v) for v in tf.z)
        else:
            out[f"{base}_c{orders[0]}"] = _coefficients_cached(tf, orders[0])
    return tuple(out.items())
