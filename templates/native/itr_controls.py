"""The Python controls of an iterative module (forms/iterative.py, templates/native/dynamica_itr.h).

This file's text runs in the namespace of every generated iterative module at import
(generator/render/module.py, PYTHON_CODE), over the module's raw entries `_itr_stats(out)`,
`_itr_reset(flag)`, `_itr_settings(in_, out)` and `_itr_inverse(out)`, and its constant `N`.
"""

import numpy as _np

#: the counters of dyn_itr_read_stats, in array order
ITR_STATS = ("calls", "iterations", "residuals", "fallbacks", "pb_calls", "pb_iterations", "directs", "inits",
             "last_iterations", "last_method", "last_rho", "max_rho", "have_inverse", "n")
#: last_method codes
ITR_METHODS = ("2.29", "2.33", "direct", "init", "failed")
#: the settings of dyn_itr_configure, in array order
ITR_SETTINGS = ("rtol", "atol", "eps_abs", "eps_rel", "rho_max", "max_iter", "max_iter_pb")
_FLOAT_STATS = ("last_rho", "max_rho", "last_method", "have_inverse")


def itr_stats():
    """Counters of the iterative solver since the last reset: calls, iterations (residual
    evaluations after r_0, the K of (4.4)-(4.5)), residuals (all of them), fallbacks (calls that
    left (2.29): (2.33) or a direct solve), pb_calls / pb_iterations ((2.33)), directs (L^T D L
    solves, first call included), inits, last_iterations, last_method, last_rho (|r_0|/|b|, a lower
    bound of ||E - M H_0||: (2.43) asks < 1), max_rho, have_inverse, n."""
    s = _np.empty(len(ITR_STATS))
    _itr_stats(s)  # noqa: F821 - an entry of the module this text runs in
    d = dict(zip(ITR_STATS, s.tolist()))
    for k in ITR_STATS:
        if k not in _FLOAT_STATS:
            d[k] = int(d[k])
    d["have_inverse"] = bool(d["have_inverse"])
    d["last_method"] = ITR_METHODS[int(d["last_method"])]
    return d


def itr_reset(inverse=True, stats=True):
    """Forget the inverse estimate (the next call solves directly) and/or clear the counters."""
    _itr_reset((1 if inverse else 0) | (2 if stats else 0))  # noqa: F821


def itr_settings(**changes):
    """Read (no arguments) or change the solver settings; returns them all. rtol, atol: stop when
    the correction |H r| <= rtol |x| + atol; eps_abs, eps_rel: (2.28) with eps = eps_abs + eps_rel |Q|;
    rho_max: (2.33) instead of (2.29) when |r_0| / |Q| >= rho_max (check of (2.43)); max_iter: iterations
    of (2.29) before (2.33), max_iter_pb: of (2.33) before the direct solve (-1: n + 1, the default)."""
    unknown = sorted(set(changes) - set(ITR_SETTINGS))
    if unknown:
        raise KeyError(f"unknown setting(s) {unknown}; available: {ITR_SETTINGS}")
    a = _np.array([float(changes[k]) if k in changes else _np.nan for k in ITR_SETTINGS])
    b = _np.empty(len(ITR_SETTINGS))
    _itr_settings(a, b)  # noqa: F821
    d = dict(zip(ITR_SETTINGS, b.tolist()))
    d["max_iter"] = int(d["max_iter"])
    d["max_iter_pb"] = int(d["max_iter_pb"])
    return d


def itr_inverse(out):
    """The inverse estimate H (row-major, N*N) into `out`; False (and NaN) when there is none."""
    return bool(_itr_inverse(out))  # noqa: F821
