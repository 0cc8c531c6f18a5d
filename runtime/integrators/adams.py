"""Variable-step, variable-order (1-12) Adams-Bashforth-Moulton PECE integrator.

The method and its step/order strategy are those of subroutine STEP of

    L. F. Shampine and M. K. Gordon, *Computer Solution of Ordinary Differential
    Equations: the Initial Value Problem*, W. H. Freeman, San Francisco, 1975
    (subroutines DE, STEP, INTRP; in SLATEC as DDEABM / DDES / DSTEPS / DINTP),

re-implemented here from the published description (no code was copied):

* the history is held as *modified divided differences* ``phi_i(n)`` =
  ``psi_1(n) ... psi_{i-1}(n) f[x_n, ..., x_{n-i+1}]`` with ``psi_i(n) = x_n - x_{n-i}``,
  which are exact for uneven steps; the coefficients ``alpha, beta, psi, sigma, g`` of the
  step are recomputed whenever the step size changed in the last ``k`` steps;
* predictor of order k (Adams-Bashforth), one evaluation, corrector of order k+1 (local
  extrapolation of the Adams-Moulton formula), one evaluation: PECE;
* local error estimates at orders k-2, k-1, k (and k+1 after k+1 constant steps) choose the
  order; the start phase raises the order by one and doubles the step each step until the
  error estimate says stop;
* step ratio bounds: at most doubling, reduction to [0.5, 0.9] by the error estimate, halving
  on failure, order 1 (and the optimal step) after three consecutive failures;
* the local error "per unit step in a generalized sense" of STEP, measured in the 2-norm of
  ``e_i / wt_i`` with ``wt_i = rtol_i |y_i| + atol_i`` (DDEABM's weights, ``eps = 1``);
* STEP's round-off floor: when ``0.5 < 2u ||y / wt||`` the requested accuracy cannot be met
  and an :class:`~dynamica.errors.IntegrationError` names the smallest sensible ``rtol``;
  compensated summation (STEP's ``nornd``) when the tolerance is within a factor 100 of it;
* DDEABM's stiffness test, with steps counted only when the step size is limited by
  stability: ``h |lambda| >= B_k / 2`` (``|lambda|`` from the two evaluations of the PECE step
  at the same t, ``B_k`` the real stability interval of the order-k pair) and the order is
  <= 4; 50 such steps in a run within a block of 500 steps make the problem "appear stiff"
  (a :class:`StiffnessWarning` by default and the run goes on, :class:`StiffnessError` with
  ``on_stiff="raise"``).  Low order after a jump of f comes with small steps and does not count;
* the first step is also bounded by the curvature of the solution (one extra evaluation), and
  ``max_step`` / ``first_step`` are applied times 0.9024 so that steps do not lock onto round
  values (docs/adams.md, non-smooth right-hand sides);
* INTRP: the dense output on the last step integrates the Adams interpolating polynomial of
  the derivative (order ``kold + 1``) from the end of the step.

The step itself is compiled: runtime/native/adams_core.pyx (``step_core``, 1-based arrays and STEP's
block structure) is the only implementation.  :class:`Adams` is the ``scipy.integrate.OdeSolver``
around it, one compiled step per ``step()`` (``fun`` is called back from C), and
runtime/integrators/compiled_adams.py runs the whole loop in C on a generated module's C entry point.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.integrate import DenseOutput, OdeSolver
from scipy.integrate._ivp.common import validate_max_step, warn_extraneous

from dynamica.errors import IntegrationError
from dynamica.runtime.integrators.compiled_adams import core, status_error

__all__ = ["Adams", "AdamsDenseOutput", "StiffnessError", "StiffnessWarning",
           "MAXORD", "gamma_star", "adams_bashforth_gamma"]

MAXORD = 12
U = float(np.finfo(float).eps)          # D1MACH(4), as in DDES
TWOU = 2.0 * U
FOURU = 4.0 * U
STIFF_RUN = 50                          # DDES: consecutive steps with order <= 4 ...
STIFF_BLOCK = 500                       # ... seen within a block of MAXNUM = 500 steps


def adams_bashforth_gamma(m: int) -> np.ndarray:
    """gamma_0..gamma_{m-1}: backward-difference Adams-Bashforth coefficients.

    gamma_j = (-1)^j int_0^1 binom(-s, j) ds; recursion sum_{i=0}^{j} gamma_i / (j + 1 - i) = 1.
    For constant steps STEP's g(i) equals gamma_{i-1}.
    """
    gam = np.zeros(m)
    for j in range(m):
        gam[j] = 1.0 - sum(gam[i] / (j + 1 - i) for i in range(j))
    return gam


def gamma_star(m: int) -> np.ndarray:
    """gamma*_0..gamma*_{m-1}: backward-difference Adams-Moulton coefficients.

    sum_{i=0}^{j} gamma*_i / (j + 1 - i) = 0 for j >= 1, gamma*_0 = 1.  STEP's table ``gstr``
    holds |gamma*_1|..|gamma*_13| rounded to three digits; the exact values are used here.
    """
    gs = np.zeros(m)
    gs[0] = 1.0
    for j in range(1, m):
        gs[j] = -sum(gs[i] / (j + 1 - i) for i in range(j))
    return gs


# 1-based tables: GSTR[i] = |gamma*_i| (i = 1..13), TWO[i] = 2**i.
GSTR = np.abs(gamma_star(MAXORD + 2))
GSTR[0] = 0.0
TWO = 2.0 ** np.arange(MAXORD + 2)


class StiffnessError(IntegrationError):
    """The Adams method is limited by stability, not accuracy (DDEABM's idid = -4)."""


class StiffnessWarning(RuntimeWarning):
    """Warning variant of :class:`StiffnessError` (``on_stiff="warn"``)."""


class AdamsDenseOutput(DenseOutput):
    """The Adams interpolant (INTRP) of the last accepted step."""

    def __init__(self, t_old, t, x, y, phi, psi, kold):
        super().__init__(t_old, t)
        self.x = x
        self.yx = np.array(y, dtype=float)
        self.kold = kold
        self.phi = np.ascontiguousarray(phi[:kold + 2], dtype=float)
        self.psi = np.ascontiguousarray(psi[:kold + 1], dtype=float)

    def _call_impl(self, t):
        scalar = t.ndim == 0
        out = core().intrp_eval(self.x, self.yx, self.phi, self.psi, self.kold, np.atleast_1d(t))
        return out[:, 0] if scalar else out


class Adams(OdeSolver):
    """Variable-step, variable-order (1-12) Adams PECE method of Shampine & Gordon (STEP).

    Use as ``scipy.integrate.solve_ivp(fun, t_span, y0, method=Adams, rtol=..., atol=...)``.
    Each ``step()`` is one call of the compiled step (runtime/native/adams_core.pyx), which calls
    ``fun`` back for its two (more after a rejection) evaluations.

    Reference: L. F. Shampine, M. K. Gordon, *Computer Solution of Ordinary Differential
    Equations: the Initial Value Problem*, Freeman 1975 (DE/STEP/INTRP); SLATEC DDEABM.

    Parameters (besides those of :class:`scipy.integrate.OdeSolver`)
    ----------------------------------------------------------------
    rtol, atol : float or array_like
        Local error weights ``wt = rtol * |y| + atol`` (DDEABM's).  Tolerances below the
        round-off limit raise :class:`IntegrationError` naming the smallest sensible rtol
        (no silent clipping).
    max_step : float
        Upper bound of the step size (the steps taken are at most 0.9024 max_step).
    first_step : float, optional
        Upper bound of the initial step size (0.9024 first_step is taken); default: STEP's
        ``min(|t_bound - t0|, 0.25 sqrt(1/||f/wt||))``, further bounded by the curvature
        ``sqrt(0.5 / ||y''||)`` and ``100 h0`` (see ``runtime/native/adams_core.pyx``, start_bound).
    on_stiff : {"warn", "raise", "ignore"}
        What the "appears stiff" test does: warn with :class:`StiffnessWarning` and continue
        (default), raise :class:`StiffnessError`, or nothing.

    Attributes
    ----------
    nfev, nsteps, nrejected : int
        RHS evaluations, accepted steps, rejected step attempts.
    order_history : list of int
        The order of every accepted step.
    """

    def __init__(self, fun, t0, y0, t_bound, max_step=np.inf, rtol=1e-3, atol=1e-6,
                 vectorized=False, first_step=None, on_stiff="warn", **extraneous):
        warn_extraneous(extraneous)
        super().__init__(fun, t0, y0, t_bound, vectorized)
        n = self.n
        self.max_step = validate_max_step(max_step)
        rtol = np.asarray(rtol, dtype=float)
        atol = np.asarray(atol, dtype=float)
        if np.any(rtol < 0) or np.any(atol < 0):
            raise ValueError("rtol and atol must be non-negative")
        if np.any(rtol + atol <= 0):
            raise ValueError("rtol and atol must not both be zero")
        self.rtol = np.broadcast_to(rtol, (n,)).copy()
        self.atol = np.broadcast_to(atol, (n,)).copy()
        if on_stiff not in ("raise", "warn", "ignore"):
            raise ValueError("on_stiff must be 'raise', 'warn' or 'ignore'")
        self.on_stiff = on_stiff
        if first_step is not None and first_step <= 0:
            raise ValueError("first_step must be positive")
        # The compiled STEP state; it calls self.fun (scipy's wrapper, which counts nfev).
        self._core = core().Stepper(self.fun, float(t0), self.y, float(t_bound), None, self.rtol,
                                    self.atol, first_step, float(self.max_step), 2 ** 62, False)
        self.order_history: list[int] = []
        self._force_h = None
        self._raise(self._core.begin())

    # ------------------------------------------------------------------ helpers

    def _raise(self, code):
        if code == 0:
            return
        c = self._core
        if code == core().PYERR:
            err = c.pop_error()
            if err is not None:
                raise err
        exc = status_error(code, c.info(), self.rtol, self.atol)
        if exc is not None:
            raise exc

    def restart(self, y=None):
        """Restart at order 1 from the current point (after a discontinuity), optionally with a new state."""
        if y is not None:
            y = np.asarray(y, dtype=float)
            if y.shape != (self.n,):
                raise ValueError(f"restart: y must have shape ({self.n},)")
        self._raise(self._core.restart(y))
        self.y = self._core.y

    def force(self, order, steps=None):
        """Test hook: raise the order by one per step up to ``order`` and keep it there, take the
        step sizes from the iterable ``steps`` (positive; direction applied); every step is
        accepted.  Used to test exactness on polynomials with arbitrary step sequences."""
        self._core.force(int(order))
        self._force_h = iter(steps) if steps is not None else None

    @property
    def order(self):
        """Order to be used for the next step."""
        return self._core.k

    @property
    def step_size(self):
        return abs(self._core.h)

    @property
    def nsteps(self):
        return self._core.nsteps

    @property
    def nrejected(self):
        return self._core.nrejected

    @property
    def _g(self):
        """STEP's integration coefficients g(0..13) of the last step (1-based; for tests)."""
        return self._core.g

    # ------------------------------------------------------------------ scipy interface

    def _step_impl(self):
        c = self._core
        tb = self.t_bound
        x = c.t
        if abs(tb - x) <= FOURU * abs(x):
            # DE: too close to the end for a step: extrapolate with the interpolant.
            self.t = tb
            self.y = c.intrp(tb)
            return True, None
        if self._force_h is not None:
            c.h = self.direction * float(next(self._force_h))
        code = c.step()
        stiff = code == core().STIFF
        if not stiff:
            self._raise(code)
        self.order_history.append(c.kold)
        self.t = c.t
        self.y = c.y
        if stiff and self.on_stiff != "ignore":
            exc = status_error(code, c.info(), self.rtol, self.atol)
            if self.on_stiff == "raise":
                raise exc
            warnings.warn(str(exc), StiffnessWarning, stacklevel=3)
        return True, None

    def _dense_output_impl(self):
        x, y, phi, psi, kold = self._core.interpolant()
        return AdamsDenseOutput(self.t_old, self.t, x, y, phi, psi, kold)
