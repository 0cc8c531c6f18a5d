"""What the numeric reference (runtime/reference.py) needs of the model's tabulated functions,
inputs and extra states, kept apart from the generator's own evaluation:

  * a tabulated function (or a derivative of one, as sympy differentiates a driven joint's `by:`)
    is evaluated by scipy's interpolators themselves (`make_interp_spline` k=1 for linear,
    `CubicSpline`, `PchipInterpolator`; `RegularGridInterpolator` and, for derivatives,
    `RectBivariateSpline` of degree 1 on two variables), not by generator/tables.py's code;
  * inputs and states are slots of the parameter array, as in the module (generator/signals.py's
    layout: values, rates, t_k, then the states): u = p[u] + p[du] (t - p[t_k]), s = p[s].
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from sympy.utilities.lambdify import implemented_function

from dynamica.generator import expr as ex


def slots(spec, n_parameters):
    """(symbols of the slots after the parameters, substitutions of the input and state symbols)."""
    m, k = len(spec.inputs), len(spec.states)
    size = (2 * m + 1 if m else 0) + k
    syms = [sp.Symbol(f"slot:{n_parameters + j}", real=True) for j in range(size)]
    subs = {}
    for j, u in enumerate(spec.inputs):
        subs[ex.input_symbol(u)] = syms[j] + syms[m + j] * (ex.T - syms[2 * m])
    for j, s in enumerate(spec.states):
        subs[ex.state_symbol(s.name)] = syms[size - k + j]
    return syms, subs


def _scipy_1d(tf, order):
    from scipy.interpolate import CubicSpline, PchipInterpolator, make_interp_spline
    x, y = np.array(tf.x), np.array(tf.y)
    f = {"linear": lambda: make_interp_spline(x, y, k=1), "cubic": lambda: CubicSpline(x, y),
         "pchip": lambda: PchipInterpolator(x, y)}[tf.interpolation]()
    f = f.derivative(order) if order else f
    hold = tf.extrapolation == "hold"

    def value(v):
        v = np.asarray(v, dtype=float)
        if not hold:
            return f(v)[()]
        if order:
            return np.where((v < x[0]) | (v > x[-1]), 0.0, f(np.clip(v, x[0], x[-1])))[()]
        return f(np.clip(v, x[0], x[-1]))[()]
    return value


def _scipy_2d(tf, orders):
    from scipy.interpolate import RectBivariateSpline, RegularGridInterpolator
    x, y = np.array(tf.x), np.array(tf.y)
    z = np.array(tf.z).reshape(len(x), len(y))
    hold = tf.extrapolation == "hold"
    rgi = RegularGridInterpolator((x, y), z, bounds_error=False, fill_value=None)
    spline = RectBivariateSpline(x, y, z, kx=1, ky=1)

    def value(u, w):
        u, w = np.broadcast_arrays(np.asarray(u, dtype=float), np.asarray(w, dtype=float))
        uc, wc = (np.clip(u, x[0], x[-1]), np.clip(w, y[0], y[-1])) if hold else (u, w)
        if not any(orders):
            return rgi(np.stack([uc, wc], axis=-1)).reshape(uc.shape)[()]
        d = spline.ev(uc, wc, dx=orders[0], dy=orders[1])
        if hold:
            outside = ((u < x[0]) | (u > x[-1])) & (orders[0] > 0) | ((w < y[0]) | (w > y[-1])) & (orders[1] > 0)
            d = np.where(outside, 0.0, d)
        return d[()]
    return value


_IMPL: dict = {}


def numeric(e):
    """`e` with every tabulated function replaced by a function lambdify evaluates with scipy."""
    from dynamica.generator.tables import TableFunction

    def impl(call):
        key = (call.table, call.orders)
        if key not in _IMPL:
            fn = _scipy_2d(call.table, call.orders) if call.table.arity == 2 else _scipy_1d(call.table, call.orders[0])
            name = f"tab_{call.table.name}_" + "_".join(map(str, call.orders))
            _IMPL[key] = implemented_function(sp.Function(name), fn)
        return _IMPL[key](*call.args)
    e = sp.sympify(e)
    return e.replace(lambda a: isinstance(a, TableFunction), impl) if e.has(TableFunction) else e
