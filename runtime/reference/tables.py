"""What the numeric reference (runtime/reference/numeric.py) needs of the model's tabulated functions,
inputs and extra states, kept apart from the generator's own evaluation:

  * a tabulated function (or a derivative of one, as sympy differentiates a driven joint's `by:`)
    is evaluated by scipy's interpolators themselves (`make_interp_spline` k=1 for linear,
    `CubicSpline`, `PchipInterpolator`; `RegularGridInterpolator` and, for derivatives,
    `RectBivariateSpline` of degree 1 on two variables), not by generator/mechanics/tables.py's code;
  * inputs and states are slots of the parameter array, as in the module (docs/api.md's SLOTS
    layout: values, rates, t_k, then the states): u = p[u] + p[du] (t - p[t_k]), s = p[s].
"""

from __future__ import annotations

import numpy as np
import sympy as sp


def signal_slots(spec, n_parameters, t):
    """({input or state name: its expression of the slots}, [the slot symbols after the parameters])."""
    m, k = len(spec.inputs), len(spec.states)
    size = (2 * m + 1 if m else 0) + k
    syms = [sp.Symbol(f"p{n_parameters + j}", real=True) for j in range(size)]
    named = {}
    for j, u in enumerate(spec.inputs):
        named[u] = syms[j] + syms[m + j] * (t - syms[2 * m])
    for j, s in enumerate(spec.states):
        named[s.name] = syms[size - k + j]
    return named, syms


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


_CLASSES: dict = {}


def table_function(tf, orders=None):
    """A sympy function class evaluating the tabulated function `tf` (or its partial derivative of
    `orders`) by scipy; sympy differentiates it into the class of the next order."""
    orders = tuple(orders or (0,) * tf.arity)
    key = (tf.name, tf.x, tf.y, tf.z, tf.interpolation, tf.extrapolation, orders)
    if key not in _CLASSES:
        fn = _scipy_2d(tf, orders) if tf.arity == 2 else _scipy_1d(tf, orders[0])

        def fdiff(self, argindex=1):
            up = list(orders)
            up[argindex - 1] += 1
            return table_function(tf, up)(*self.args)
        name = f"table_{tf.name}_" + "_".join(map(str, orders))
        _CLASSES[key] = type(name, (sp.Function,), {"nargs": tf.arity, "_imp_": staticmethod(fn), "fdiff": fdiff})
    return _CLASSES[key]
