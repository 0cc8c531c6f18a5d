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
* DDEABM's stiffness test: count consecutive steps taken at order <= 4; if a run of 50 such
  steps was seen within a block of 500 steps, the problem "appears stiff"
  (:class:`StiffnessError`, or a :class:`StiffnessWarning` with ``on_stiff="warn"``);
* INTRP: the dense output on the last step integrates the Adams interpolating polynomial of
  the derivative (order ``kold + 1``) from the end of the step.

The step loop (:meth:`Adams._step_core`) is written with 1-based arrays and STEP's block
structure, with the component loops written as numpy row operations, so that it can be
moved to Cython (typed memoryviews, loops over the components) without restructuring.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.integrate import DenseOutput, OdeSolver
from scipy.integrate._ivp.common import validate_max_step, warn_extraneous

from dynamica.errors import IntegrationError

__all__ = ["Adams", "AdamsDenseOutput", "StiffnessError", "StiffnessWarning",
           "MAXORD", "gamma_star", "adams_bashforth_gamma"]

MAXORD = 12
U = float(np.finfo(float).eps)          # D1MACH(4), as in DDES
TWOU = 2.0 * U
FOURU = 4.0 * U
STIFF_RUN = 50                          # DDES: consecutive steps with order <= 4 ...
STIFF_BLOCK = 500                       # ... seen within a block of MAXNUM = 500 steps

_OK, _CRASH_TOL, _CRASH_STEP = 0, 1, 2


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


def _coefficients(k, ns, h, psi, alpha, beta, sig, g, w):
    """STEP block 1 for ``k >= ns``: psi, alpha, beta, sigma for this step and g(1..k+1).

    psi(i) = x_{n+1} - x_{n+1-i}, alpha(i) = h / psi(i),
    beta(i) = prod_{j<i} psi_j(n+1) / psi_j(n)  (phi*_i = beta_i phi_i),
    sig(i+1) = i alpha(i) sig(i),
    g(i) = g_{i,1} with g_{1,q} = 1/q, g_{2,q} = 1/(q(q+1)), g_{i,q} = g_{i-1,q} - alpha_{i-1} g_{i-1,q+1}.

    Entries with index < ns are those of constant steps (alpha_i = 1/i, beta_i = sigma_i = 1)
    and are kept from earlier steps.  STEP updates g incrementally through its array v; here
    the triangle g_{i,q} is rebuilt from the alphas (at most 66 multiply-adds), which gives
    the same numbers and has no state to keep consistent when the order changes.
    """
    beta[ns] = 1.0
    alpha[ns] = 1.0 / ns
    temp1 = h * ns
    sig[ns + 1] = 1.0
    for i in range(ns + 1, k + 1):
        temp2 = psi[i - 1]
        psi[i - 1] = temp1
        beta[i] = beta[i - 1] * psi[i - 1] / temp2
        temp1 = temp2 + h
        alpha[i] = h / temp1
        sig[i + 1] = i * alpha[i] * sig[i]
    psi[k] = temp1
    g[1] = 1.0
    g[2] = 0.5
    for q in range(1, k + 1):
        w[q] = 1.0 / (q * (q + 1))
    for i in range(3, k + 2):
        a = alpha[i - 1]
        for q in range(1, k + 3 - i):
            w[q] -= a * w[q + 1]
        g[i] = w[1]


def _intrp(x, y, phi, psi, kold, xout):
    """INTRP: y(xout) from the Adams interpolant of the last step (end point x, value y).

    ``phi`` holds rows 1..kold+1 of the modified divided differences at x (row 0 unused),
    ``psi`` entries 1..kold.  The derivative interpolates f at x, x - psi_1, ..., x - psi_kold;
    y(xout) = y + hi sum_i g_i(hi) phi_i with hi = xout - x.  ``xout`` is a 1-D array;
    returns shape (n, len(xout)).
    """
    hi = np.asarray(xout, dtype=float) - x
    ki = kold + 1
    m = hi.shape[0]
    w = np.empty((ki + 2, m))
    for i in range(1, ki + 1):
        w[i] = 1.0 / i
    gi = np.empty((ki + 1, m))
    gi[1] = 1.0
    term = 0.0
    for j in range(2, ki + 1):
        psijm1 = psi[j - 1]
        gamma = (hi + term) / psijm1
        eta = hi / psijm1
        for i in range(1, ki + 2 - j):
            w[i] = gamma * w[i] - eta * w[i + 1]
        gi[j] = w[1]
        term = psijm1
    return y[:, None] + hi[None, :] * (phi[1:ki + 1].T @ gi[1:ki + 1])


class AdamsDenseOutput(DenseOutput):
    """The Adams interpolant (INTRP) of the last accepted step."""

    def __init__(self, t_old, t, x, y, phi, psi, kold):
        super().__init__(t_old, t)
        self.x = x
        self.yx = y.copy()
        self.kold = kold
        self.phi = phi[:kold + 2].copy()
        self.psi = psi[:kold + 1].copy()

    def _call_impl(self, t):
        scalar = t.ndim == 0
        out = _intrp(self.x, self.yx, self.phi, self.psi, self.kold, np.atleast_1d(t))
        return out[:, 0] if scalar else out


class Adams(OdeSolver):
    """Variable-step, variable-order (1-12) Adams PECE method of Shampine & Gordon (STEP).

    Use as ``scipy.integrate.solve_ivp(fun, t_span, y0, method=Adams, rtol=..., atol=...)``.

    Reference: L. F. Shampine, M. K. Gordon, *Computer Solution of Ordinary Differential
    Equations: the Initial Value Problem*, Freeman 1975 (DE/STEP/INTRP); SLATEC DDEABM.

    Parameters (besides those of :class:`scipy.integrate.OdeSolver`)
    ----------------------------------------------------------------
    rtol, atol : float or array_like
        Local error weights ``wt = rtol * |y| + atol`` (DDEABM's).  Tolerances below the
        round-off limit raise :class:`IntegrationError` naming the smallest sensible rtol
        (no silent clipping).
    max_step : float
        Largest step size.
    first_step : float, optional
        Initial step size; default: STEP's ``min(|t_bound - t0|, 0.25 sqrt(1/||f/wt||))``.
    on_stiff : {"raise", "warn", "ignore"}
        What DDEABM's "appears stiff" test does: raise :class:`StiffnessError` (default),
        warn with :class:`StiffnessWarning` and continue, or nothing.

    Attributes
    ----------
    nfev, nsteps, nrejected : int
        RHS evaluations, accepted steps, rejected step attempts.
    order_history : list of int
        The order of every accepted step.
    """

    def __init__(self, fun, t0, y0, t_bound, max_step=np.inf, rtol=1e-3, atol=1e-6,
                 vectorized=False, first_step=None, on_stiff="raise", **extraneous):
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

        # STEP's state, 1-based arrays (index 0 unused).
        self._x = float(t0)
        self._y = self.y.copy()
        self._phi = np.zeros((17, n))
        self._psi = np.zeros(MAXORD + 1)
        self._alpha = np.zeros(MAXORD + 1)
        self._beta = np.zeros(MAXORD + 1)
        self._sig = np.zeros(MAXORD + 2)
        self._g = np.zeros(MAXORD + 2)
        self._w = np.zeros(MAXORD + 2)
        self._k = 1
        self._kold = 0
        self._ns = 0
        self._hold = 0.0
        self._phase1 = True
        self._nornd = True
        self._start = True
        self._eps_factor = 1.0

        if first_step is None:
            self._h = self.direction * max(abs(t_bound - t0), FOURU * abs(t0))
            self._h_given = False
        else:
            if first_step <= 0:
                raise ValueError("first_step must be positive")
            self._h = self.direction * float(first_step)
            self._h_given = True
        if np.isfinite(self.max_step) and abs(self._h) > self.max_step:
            self._h = self.direction * self.max_step

        self.nsteps = 0
        self.nrejected = 0
        self.order_history: list[int] = []
        self._kle4 = 0
        self._stiff = False
        self._ksteps = 0
        self._force_k = None
        self._force_h = None
        self._yp = self._f(self._x, self._y, self._h)
        self._phi[1] = self._yp          # so that the interpolant is defined before the first step

    # ------------------------------------------------------------------ helpers

    def _f(self, t, y, h):
        """RHS with immediate NaN/inf detection."""
        yp = self.fun(t, y)
        if not np.all(np.isfinite(yp)):
            bad = np.flatnonzero(~np.isfinite(yp))
            i = int(bad[0])
            raise IntegrationError(
                f"right-hand side returned {yp[i]} in component {i} (of {bad.size} non-finite) "
                f"at t = {t!r} with step size h = {h!r}")
        return yp

    def restart(self, y=None):
        """Restart at order 1 from the current point (after a discontinuity), optionally with a new state."""
        if y is not None:
            y = np.asarray(y, dtype=float)
            if y.shape != (self.n,):
                raise ValueError(f"restart: y must have shape ({self.n},)")
            self._y = y.copy()
            self.y = self._y
        remaining = abs(self.t_bound - self._x)
        self._h = self.direction * min(max(remaining, FOURU * abs(self._x)), self.max_step)
        self._h_given = False
        self._start = True
        self._yp = self._f(self._x, self._y, self._h)
        self._phi[1] = self._yp
        self._kold = 0

    def force(self, order, steps=None):
        """Test hook: raise the order by one per step up to ``order`` and keep it there, take the
        step sizes from the iterable ``steps`` (positive; direction applied); every step is
        accepted.  Used to test exactness on polynomials with arbitrary step sequences."""
        if not 1 <= order <= MAXORD:
            raise ValueError("order must be in 1..12")
        self._force_k = int(order)
        self._force_h = iter(steps) if steps is not None else None

    @property
    def order(self):
        """Order to be used for the next step."""
        return self._k

    @property
    def step_size(self):
        return abs(self._h)

    # ------------------------------------------------------------------ scipy interface

    def _step_impl(self):
        tb = self.t_bound
        x = self._x
        if abs(tb - x) <= FOURU * abs(x):
            # DE: too close to the end for a step: extrapolate with the interpolant.
            self.t = tb
            self.y = self._interpolate(np.array([tb]))[:, 0]
            return True, None
        if self._force_h is not None:
            self._h = self.direction * float(next(self._force_h))
        wt = self.rtol * np.abs(self._y) + self.atol
        if np.any(wt <= 0):
            i = int(np.flatnonzero(wt <= 0)[0])
            raise IntegrationError(
                f"pure relative error test impossible: component {i} is zero with atol = 0 at t = {x!r}")
        code = self._step_core(wt)
        if code == _CRASH_TOL:
            f = self._eps_factor
            raise IntegrationError(
                f"requested accuracy is below what round-off allows at t = {self._x!r}: "
                f"use rtol >= {f * self.rtol.max():.3g} (and atol >= {f * self.atol.max():.3g}), "
                f"suggested rtol = {f * self.rtol.max():.3g}")
        if code == _CRASH_STEP:
            f = self._eps_factor
            raise IntegrationError(
                f"step size {abs(self._h):.3g} too small at t = {self._x!r} (below 4u|t|); "
                f"requested accuracy too high or a singularity: suggested rtol = {f * self.rtol.max():.3g}")
        self.nsteps += 1
        self.order_history.append(self._kold)
        self.t = self._x
        self.y = self._y
        self._stiffness_test()
        return True, None

    def _stiffness_test(self):
        """DDES: a run of 50 consecutive steps at order <= 4 within a block of 500 steps."""
        self._kle4 = 0 if self._kold > 4 else self._kle4 + 1
        if self._kle4 >= STIFF_RUN:
            self._stiff = True
        self._ksteps += 1
        if self._ksteps >= STIFF_BLOCK:
            self._ksteps = 0
            if self._stiff:
                self._stiff = False
                self._kle4 = 0
                if self.on_stiff == "ignore":
                    return
                msg = (f"problem appears stiff: use method='radau' (Adams stayed at order <= 4 for "
                       f"{STIFF_RUN}+ consecutive steps; t = {self._x!r}, step size {abs(self._hold):.3g}, "
                       f"{self.nsteps} steps, {self.nfev} evaluations)")
                if self.on_stiff == "raise":
                    raise StiffnessError(msg)
                warnings.warn(msg, StiffnessWarning, stacklevel=3)

    def _interpolate(self, t):
        return _intrp(self._x, self._y, self._phi, self._psi, self._kold, t)

    def _dense_output_impl(self):
        return AdamsDenseOutput(self.t_old, self.t, self._x, self._y, self._phi, self._psi, self._kold)

    # ------------------------------------------------------------------ STEP

    def _step_core(self, wt):
        """One call of STEP: a successful step from self._x, retrying after failures.

        Returns _OK, or _CRASH_TOL / _CRASH_STEP with ``self._eps_factor`` the factor by which
        the tolerances should be raised.  Block numbers follow Shampine & Gordon.
        """
        phi, psi, alpha, beta = self._phi, self._psi, self._alpha, self._beta
        sig, g, w = self._sig, self._g, self._w
        y = self._y
        x = self._x
        h = self._h
        tb = self.t_bound
        forced = self._force_k is not None
        eps = 1.0
        rwt = 1.0 / wt

        # Block 0: step size and tolerance checks, start.
        if abs(h) < FOURU * abs(x):
            self._h = math.copysign(FOURU * abs(x), h)
            self._eps_factor = 1.0
            return _CRASH_STEP
        p5eps = 0.5 * eps
        round_ = TWOU * math.sqrt(float(np.dot(y * rwt, y * rwt)))
        if p5eps < round_:
            self._eps_factor = 2.0 * round_ * (1.0 + FOURU)
            return _CRASH_TOL
        g[1] = 1.0
        g[2] = 0.5
        sig[1] = 1.0
        if self._start:
            yp0 = self._yp
            phi[1] = yp0
            phi[2] = 0.0
            s = math.sqrt(float(np.dot(yp0 * rwt, yp0 * rwt)))
            absh = abs(h)
            if not (forced or self._h_given) and eps < 16.0 * s * h * h:
                absh = 0.25 * math.sqrt(eps / s)
            h = math.copysign(max(absh, FOURU * abs(x)), h)
            self._hold = 0.0
            self._k = 1
            self._kold = 0
            self._start = False
            self._phase1 = True
            self._nornd = True
            if p5eps <= 100.0 * round_:
                self._nornd = False
                phi[15] = 0.0
        k = self._k
        kold = self._kold
        ns = self._ns
        hold = self._hold
        phase1 = self._phase1
        nornd = self._nornd
        ifail = 0

        while True:
            # Never step beyond t_bound (DE's tstop) nor beyond max_step.
            if abs(h) > self.max_step:
                h = math.copysign(self.max_step, h)
            if abs(h) >= abs(tb - x):
                h = tb - x
                xnew = tb
            else:
                xnew = x + h

            # Block 1: coefficients.
            kp1, kp2, km1, km2 = k + 1, k + 2, k - 1, k - 2
            if h != hold:
                ns = 0
            if ns <= kold:
                ns += 1
            nsp1 = ns + 1
            if k >= ns:
                _coefficients(k, ns, h, psi, alpha, beta, sig, g, w)

            # Block 2: predict (phi -> phi*, then the predicted differences), evaluate, estimate.
            if k >= nsp1:
                phi[nsp1:kp1] *= beta[nsp1:kp1, None]
            phi[kp2] = phi[kp1]
            phi[kp1] = 0.0
            psum = g[1:kp1] @ phi[1:kp1]
            phi[1:kp1] = np.cumsum(phi[k:0:-1], axis=0)[::-1]
            if nornd:
                p = y + h * psum
            else:
                tau = h * psum - phi[15]
                p = y + tau
                phi[16] = (p - y) - tau
            xold = x
            x = xnew
            absh = abs(h)
            yp = self._f(x, p, h)

            temp4 = yp - phi[1]
            erkm2 = erkm1 = 0.0
            if km2 > 0:
                v = (phi[km1] + temp4) * rwt
                erkm2 = absh * sig[km1] * GSTR[km2] * math.sqrt(float(np.dot(v, v)))
            if km2 >= 0:
                v = (phi[k] + temp4) * rwt
                erkm1 = absh * sig[k] * GSTR[km1] * math.sqrt(float(np.dot(v, v)))
            v = temp4 * rwt
            temp5 = absh * math.sqrt(float(np.dot(v, v)))
            err = temp5 * (g[k] - g[kp1])
            erk = temp5 * sig[kp1] * GSTR[k]
            knew = k
            if km2 > 0:
                if max(erkm1, erkm2) <= erk:
                    knew = km1
            elif km2 == 0:
                if erkm1 <= 0.5 * erk:
                    knew = km1

            if err <= eps or forced:
                break

            # Block 3: unsuccessful step; restore x, phi, psi; halve (order 1 after 3 failures).
            self.nrejected += 1
            phase1 = False
            x = xold
            phi[1:kp1] = (phi[1:kp1] - phi[2:kp2]) / beta[1:kp1, None]
            for i in range(2, kp1):
                psi[i - 1] = psi[i] - h
            ifail += 1
            temp2 = 0.5
            if ifail > 3 and p5eps < 0.25 * erk:
                temp2 = math.sqrt(p5eps / erk)
            if ifail >= 3:
                knew = 1
            h = temp2 * h
            k = knew
            if abs(h) < FOURU * abs(x):
                self._h = math.copysign(FOURU * abs(x), h)
                self._eps_factor = 2.0
                self._k, self._ns, self._phase1 = k, ns, phase1
                return _CRASH_STEP

        # Block 4: successful step; correct, evaluate, update differences.
        kold = k
        hold = h
        temp1 = h * g[kp1]
        if nornd:
            ynew = p + temp1 * (yp - phi[1])
        else:
            rho = temp1 * (yp - phi[1]) - phi[16]
            ynew = p + rho
            phi[15] = (ynew - p) - rho
        yp = self._f(x, ynew, h)
        phi[kp1] = yp - phi[1]
        phi[kp2] = phi[kp1] - phi[kp2]
        phi[1:kp1] += phi[kp1]

        # Order for the next step.
        erkp1 = 0.0
        if knew == km1 or k == MAXORD:
            phase1 = False
        if forced:
            k = min(kp1, self._force_k)
            action = "forced"
        elif phase1:
            action = "raise"
        elif knew == km1:
            action = "lower"
        elif kp1 > ns:
            action = "keep"
        else:
            v = phi[kp2] * rwt
            erkp1 = absh * GSTR[kp1] * math.sqrt(float(np.dot(v, v)))
            if k > 1:
                if erkm1 <= min(erk, erkp1):
                    action = "lower"
                elif erkp1 >= erk or k == MAXORD:
                    action = "keep"
                else:
                    action = "raise"
            else:
                action = "keep" if erkp1 >= 0.5 * erk else "raise"
        if action == "raise":
            k = kp1
            erk = erkp1
        elif action == "lower":
            k = km1
            erk = erkm1

        # Step size for the next step: double, keep, or reduce to [0.5, 0.9] h.
        hnew = h + h
        if not phase1 and not forced and p5eps < erk * TWO[k + 1]:
            hnew = h
            if p5eps < erk:
                r = (p5eps / erk) ** (1.0 / (k + 1))
                hnew = absh * max(0.5, min(0.9, r))
                hnew = math.copysign(max(hnew, FOURU * abs(x)), h)

        self._x = x
        self._y = ynew
        self._yp = yp
        self._h = hnew
        self._hold = hold
        self._k = k
        self._kold = kold
        self._ns = ns
        self._phase1 = phase1
        return _OK
