"""Fixed-step 6th-order Stoermer (Cowell) method for second-order systems q'' = f(t, q, q').

This is the integrator of the dissertation's timing experiments: one evaluation of the
accelerations per step, constant step h.

Formulas (f_n = f(t_n, q_n, qd_n), nabla the backward difference, nabla f_n = f_n - f_{n-1}):

* Positions, explicit Stoermer of order 6 (six back values f_n .. f_{n-5})::

      q_{n+1} - 2 q_n + q_{n-1} = h^2 sum_{j=0}^{5} sigma_j nabla^j f_n

  sigma_j are the coefficients of  t^2 / ((1 - t) log(1 - t)^2) = sum_j sigma_j t^j::

      sigma = 1, 0, 1/12, 1/12, 19/240, 3/40        (next: 863/12096, the error constant)

  In ordinate form  q_{n+1} - 2 q_n + q_{n-1} = h^2/240 (317 f_n - 266 f_{n-1}
  + 374 f_{n-2} - 276 f_{n-3} + 109 f_{n-4} - 18 f_{n-5})  (computed exactly in
  STOERMER_ORDINATES). The formula is exact for polynomials q of degree <= 7, local error
  (863/12096) h^8 q^(8), global error O(h^6). It is evaluated in the "summed" form
  d_n = q_{n+1} - q_n = d_{n-1} + h^2 sum(...), q_{n+1} = q_n + d_n with compensated
  (Kahan) summation, which keeps the round-off growth of the double recursion small.

* Velocities (the accelerations of multibody systems depend on them), Adams-Bashforth of
  the matching order 6::

      qd_{n+1} = qd_n + h sum_{j=0}^{5} gamma_j nabla^j f_n

  gamma_j from  -t / ((1 - t) log(1 - t)) :  1, 1/2, 5/12, 3/8, 251/720, 95/288;
  ordinates  h/1440 (4277 f_n - 7923 f_{n-1} + 9982 f_{n-2} - 7298 f_{n-3} + 2877 f_{n-4}
  - 475 f_{n-5}); local error (19087/60480) h^7 qd^(7), global O(h^6).

  Both are derived here with exact rational arithmetic (`fractions.Fraction`) from the
  generating functions, by power-series inversion of L(t) = -log(1 - t)/t = sum t^k/(k+1).

* Start: the values q_1..q_5, qd_1..qd_5 come from Gragg-Bulirsch-Stoer extrapolation of the
  modified midpoint rule with the same step h (substeps n = 2, 4, 6, 8, 10, 12; Aitken-Neville
  in (h/n)^2), i.e. a fixed-step one-step method of order 12 on the first-order system
  y = [q, qd]. Why this start does not limit the order: its local error is O(h^13); the
  Stoermer recursion (double root 1 of its characteristic polynomial) amplifies a start
  error at most by O(N) = O(1/h), so the start contributes O(h^12) to the global error, far
  below the O(h^6) of the method (for the step sizes of interest it is at round-off level).
  Unlike an adaptive DOP853 start at a tolerance, its error goes to zero with h and does not
  depend on a tolerance (so the observed order is that of the multistep formulas). It costs
  43 evaluations per start step (215 in total).

Step grid: the step is fixed; (t1 - t0)/h must be an integer N (to within 1e-9, relative to
max(1, N)), otherwise ValueError. The grid is t_n = t0 + n (t1 - t0)/N.

Dense output: at t_eval, q and qd are interpolated by the degree-7 polynomial through the 8
nearest grid values (interpolation error O(h^8), below the O(h^6) global error, whose
asymptotic expansion is smooth); t_eval need not lie on the grid but must lie in t_span.
"""
from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np

ORDER = 6


# -- coefficients (exact)
def _series_L(m):
    """-log(1 - t)/t = sum_k t^k/(k+1), first m coefficients."""
    return [Fraction(1, k + 1) for k in range(m)]


def _mul(a, b, m):
    return [sum((a[i] * b[k - i] for i in range(k + 1)), Fraction(0)) for k in range(m)]


def _inv(a, m):
    """1/a as a power series (a[0] != 0)."""
    out = [Fraction(0)] * m
    out[0] = 1 / a[0]
    for k in range(1, m):
        out[k] = -sum((a[i] * out[k - i] for i in range(1, k + 1)), Fraction(0)) / a[0]
    return out


def stoermer_sigma(m):
    """sigma_0..sigma_{m-1} of the explicit Stoermer method: t^2/((1-t) log(1-t)^2)."""
    L = _series_L(m)
    return _inv(_mul(_mul(L, L, m), [Fraction(1)] + [Fraction(-1)] + [Fraction(0)] * (m - 2), m), m)


def adams_gamma(m):
    """gamma_0..gamma_{m-1} of Adams-Bashforth: -t/((1-t) log(1-t))."""
    L = _series_L(m)
    return _inv(_mul(L, [Fraction(1)] + [Fraction(-1)] + [Fraction(0)] * (m - 2), m), m)


def to_ordinates(diff_coeffs):
    """sum_j c_j nabla^j f_n  ->  sum_i b_i f_{n-i}  (b_i = sum_{j>=i} c_j (-1)^i C(j, i))."""
    k = len(diff_coeffs)
    return [sum((diff_coeffs[j] * (-1) ** i * comb(j, i) for j in range(i, k)), Fraction(0))
            for i in range(k)]


STOERMER_SIGMA = stoermer_sigma(ORDER)
ADAMS_GAMMA = adams_gamma(ORDER)
STOERMER_ORDINATES = to_ordinates(STOERMER_SIGMA)   # b_i for f_{n-i}, i = 0..5
ADAMS_ORDINATES = to_ordinates(ADAMS_GAMMA)
_BQ = np.array([float(b) for b in STOERMER_ORDINATES])
_BV = np.array([float(b) for b in ADAMS_ORDINATES])


# -- start: Gragg-Bulirsch-Stoer extrapolation (fixed step, order 12)
_GBS_SEQ = (2, 4, 6, 8, 10, 12)


def _gbs_step(F, t, y, fy, h):
    """One step of the extrapolated modified midpoint rule; returns (y_new, nfev)."""
    nfev = 0
    T = []
    for j, n in enumerate(_GBS_SEQ):
        hs = h / n
        z0, z1 = y, y + hs * fy
        for i in range(1, n):
            z0, z1 = z1, z0 + 2.0 * hs * F(t + i * hs, z1)
        nfev += n - 1
        z1f = F(t + h, z1)
        nfev += 1
        row = [0.5 * (z0 + z1 + hs * z1f)]          # Gragg's smoothing step
        for k in range(1, j + 1):                    # Aitken-Neville in (h/n)^2
            r = (n / _GBS_SEQ[j - k]) ** 2
            row.append(row[k - 1] + (row[k - 1] - T[k - 1]) / (r - 1.0))
        T = row
    return T[-1], nfev


# -- helpers
def _grid(t_span, h):
    t0, t1 = float(t_span[0]), float(t_span[1])
    h = float(h)
    if not (np.isfinite(t0) and np.isfinite(t1) and t1 != t0):
        raise ValueError(f"t_span must be two different finite times, got {t_span!r}")
    if not (np.isfinite(h) and h > 0):
        raise ValueError(f"the step h must be positive and finite, got {h!r}")
    ratio = abs(t1 - t0) / h
    N = int(round(ratio))
    if N < 1 or abs(ratio - N) > 1e-9 * max(1, N):
        raise ValueError(f"stoermer6 uses a fixed step: (t1 - t0)/h = {ratio!r} is not an integer "
                         f"(to 1e-9); choose h = (t1 - t0)/N")
    return t0, t1, N, (t1 - t0) / N


def _interp(tg, t0, H, N, Y, te):
    """Degree-7 Lagrange interpolation of grid values Y (N+1, n) at times te."""
    m = min(8, N + 1)
    out = np.empty((len(te), Y.shape[1]))
    for r, tt in enumerate(te):
        x = (tt - t0) / H
        s = int(np.clip(np.floor(x) - (m // 2 - 1), 0, N + 1 - m))
        nodes = np.arange(s, s + m, dtype=float)
        k = np.nonzero(nodes == x)[0]
        if k.size:
            out[r] = Y[s + k[0]]
            continue
        w = np.empty(m)
        for i in range(m):
            others = np.delete(nodes, i)
            w[i] = np.prod((x - others) / (nodes[i] - others))
        out[r] = w @ Y[s:s + m]
    return out


# -- the method
def stoermer6(f2, t_span, q0, qd0, h, t_eval=None):
    """Fixed-step 6th-order Stoermer/Cowell method for q'' = f2(t, q, qd).

    Positions: q_{n+1} - 2 q_n + q_{n-1} = h^2 sum_{j=0}^{5} sigma_j nabla^j f_n with
    sigma = (1, 0, 1/12, 1/12, 19/240, 3/40); velocities: Adams-Bashforth 6,
    qd_{n+1} = qd_n + h sum_{j=0}^{5} gamma_j nabla^j f_n with gamma = (1, 1/2, 5/12, 3/8,
    251/720, 95/288); the first 5 steps by order-12 Gragg-Bulirsch-Stoer extrapolation
    (see the module docstring for the derivation and the start's justification).

    (t1 - t0)/h must be an integer N (else ValueError); the grid is t0 + n (t1 - t0)/N.
    Returns (t, q, qd, nfev): t of shape (m,), q and qd of shape (m, n). Without t_eval the
    output is the whole grid; with t_eval (inside t_span, any points) q and qd are
    interpolated to O(h^8) by the degree-7 polynomial through the 8 nearest grid values.
    """
    t0, t1, N, H = _grid(t_span, h)
    q0 = np.atleast_1d(np.asarray(q0, dtype=float)).copy()
    qd0 = np.atleast_1d(np.asarray(qd0, dtype=float)).copy()
    if q0.ndim != 1 or q0.shape != qd0.shape:
        raise ValueError(f"q0 and qd0 must be 1-d of equal length, got {q0.shape} and {qd0.shape}")
    n = q0.size
    nfev = 0

    def acc(t, q, qd):
        a = np.asarray(f2(t, q, qd), dtype=float).reshape(-1)
        if a.shape != (n,):
            raise ValueError(f"f2 returned shape {a.shape}, expected ({n},)")
        return a

    def F(t, y):
        return np.concatenate([y[n:], acc(t, y[:n], y[n:])])

    tg = t0 + H * np.arange(N + 1)
    tg[-1] = t1
    Q = np.empty((N + 1, n))
    V = np.empty((N + 1, n))
    A = np.empty((N + 1, n))
    Q[0], V[0] = q0, qd0
    A[0] = acc(t0, q0, qd0)
    nfev += 1

    ns = min(ORDER - 1, N)
    y = np.concatenate([q0, qd0])
    for i in range(ns):                             # the start: Gragg-Bulirsch-Stoer steps
        y, k = _gbs_step(F, tg[i], y, np.concatenate([V[i], A[i]]), H)
        nfev += k
        Q[i + 1], V[i + 1] = y[:n], y[n:]
        A[i + 1] = acc(tg[i + 1], Q[i + 1], V[i + 1])
        nfev += 1
    if N > ns:
        nfev += _recursion(acc, tg, Q, V, A, ns, N, H)
    if t_eval is None:
        return tg, Q, V, nfev
    te = np.atleast_1d(np.asarray(t_eval, dtype=float))
    lo, hi = min(t0, t1), max(t0, t1)
    tol = 1e-12 * max(1.0, abs(t0), abs(t1))
    if np.any(te < lo - tol) or np.any(te > hi + tol):
        raise ValueError(f"t_eval must lie in t_span = ({t0}, {t1})")
    return te, _interp(tg, t0, H, N, Q, te), _interp(tg, t0, H, N, V, te), nfev


def _recursion(acc, tg, Q, V, A, ns, N, H) -> int:
    """The Stoermer recursion from grid value ns to N (rows of Q, V, A filled), with compensated
    sums of q and q'; returns the evaluations of acc."""
    n = Q.shape[1]
    H2 = H * H
    d = Q[ns] - Q[ns - 1]
    q, cq = Q[ns].copy(), np.zeros(n)
    v, cv = V[ns].copy(), np.zeros(n)
    for i in range(ns, N):
        back = A[i - 5:i + 1][::-1]             # f_n, f_{n-1}, ..., f_{n-5}
        d = d + H2 * (_BQ @ back)
        # compensated q += d and v += H * (...)
        yk = d - cq
        tk = q + yk
        cq = (tk - q) - yk
        q = tk
        yk = H * (_BV @ back) - cv
        tk = v + yk
        cv = (tk - v) - yk
        v = tk
        Q[i + 1], V[i + 1] = q, v
        A[i + 1] = acc(tg[i + 1], q, v)
        if not (np.all(np.isfinite(q)) and np.all(np.isfinite(v)) and np.all(np.isfinite(A[i + 1]))):
            raise FloatingPointError(f"stoermer6: non-finite state at t = {tg[i + 1]!r} (h = {H!r})")
    return N - ns


def stoermer6_first_order(rhs, t_span, y0, h, t_eval=None):
    """`stoermer6` for a first-order system y = [q, qd], rhs(t, y) -> [qd, qdd].

    This is the form of dynamica's compiled models (`model.rhs_function()`); y0 is split in
    halves, only the second half of rhs is used (the first is assumed to be qd).
    Returns (t, y, nfev) with y of shape (m, 2n): [q, qd] per row.
    """
    y0 = np.asarray(y0, dtype=float).reshape(-1)
    if y0.size % 2:
        raise ValueError(f"y0 must have even length [q, qd], got {y0.size}")
    n = y0.size // 2

    def f2(t, q, qd):
        return np.asarray(rhs(t, np.concatenate([q, qd])), dtype=float)[n:]

    t, q, qd, nfev = stoermer6(f2, t_span, y0[:n], y0[n:], h, t_eval=t_eval)
    return t, np.hstack([q, qd]), nfev


# -- stepped one grid step at a time (contact events: runtime/integrators/contact_events.py)
def _hermite4(t_old, y_old, a_old, t_new, y_new, n):
    """y(s) = [q, q'] on [t_old, t_new]: q the quartic through q, q', q'' at t_old and q, q' at
    t_new (error O(h^5)), q' its derivative (O(h^4)). It leaves out q'' at t_new, the one value
    evaluated after the step's start: a contact force that begins inside the step is not in it
    (the step's q and q' at t_new come from the accelerations up to t_old alone)."""
    h = t_new - t_old
    q0, v0, q1, v1 = y_old[:n], y_old[n:], y_new[:n], y_new[n:]
    r1 = q1 - q0 - h * v0 - h * h * a_old / 2
    r2 = h * (v1 - v0) - h * h * a_old
    c4 = r2 - 3 * r1
    c3 = r1 - c4

    def intrp(s):
        x = (float(s) - t_old) / h
        q = q0 + x * (h * v0 + x * (h * h * a_old / 2 + x * (c3 + x * c4)))
        v = (h * v0 + x * (h * h * a_old + x * (3 * c3 + x * 4 * c4))) / h
        return np.concatenate([q, v])
    return intrp


class StoermerSteps:
    """`stoermer6` on its fixed grid t0 + k h, one step at a time, for the contact events' loop
    (contact_events.solve; docs/contact.md, "Events"). Between two grid values the state is the
    quartic Hermite interpolant of q, q', q'' at the step's start and q, q' at its end
    (`_hermite4`): the gaps are located on it. A restart at t_e inside a step (a contact's start
    or end) takes one extrapolated step
    (`_gbs_step`, order 12) from t_e to the next grid time, five more on the grid (the start of
    `stoermer6`), then the Stoermer recursion again: the grid, and the rows on it, stay those of
    the run without contacts."""

    def __init__(self, rhs, t0, t_end, h, n):
        _, _, self.N, self.H = _grid((t0, t_end), h)
        self.rhs, self.t0, self.t_end, self.n = rhs, float(t0), float(t_end), n
        self.name = f"Stoermer-Cowell 6 with Adams velocities, step {self.H}, restarted at contacts"
        self.nfev = self.nsteps = 0

    def grid_time(self, k):
        return self.t_end if k == self.N else self.t0 + k * self.H

    def _acc(self, t, y):
        self.nfev += 1
        return np.asarray(self.rhs(t, y), dtype=float)[self.n:]

    def _F(self, t, y):
        self.nfev += 1
        return np.asarray(self.rhs(t, y), dtype=float)

    def start(self, t0, y0, tb):
        ts = float(t0)
        k = min(max(int(np.floor((ts - self.t0) / self.H)), 0), self.N)
        while k < self.N and self.grid_time(k + 1) <= ts:
            k += 1
        while k > 0 and self.grid_time(k) > ts:
            k -= 1
        self.k, self.t, self.y = k, ts, np.array(y0, dtype=float)
        self.a = self._acc(ts, self.y)
        self.on_grid = self.grid_time(k) == ts
        self.hist = [self.a] if self.on_grid else []     # q'' at the grid values since the restart
        self.d = None                                    # the recursion's q_{k+1} - q_k, once it runs

    @property
    def done(self):
        return self.k >= self.N

    def step(self, tv, Y, j):
        n, H = self.n, self.H
        t_old, y_old, a_old = self.t, self.y, self.a
        t_new = self.grid_time(self.k + 1)
        if len(self.hist) < ORDER:                       # the start: extrapolated midpoint steps
            y_new, _ = _gbs_step(self._F, t_old, y_old, np.concatenate([y_old[n:], a_old]), t_new - t_old)
        else:
            back = np.array(self.hist[::-1])             # f_k, f_{k-1}, ..., f_{k-5}
            if self.d is None:
                self.d, self.cq, self.cv = y_old[:n] - self.q_prev, np.zeros(n), np.zeros(n)
            self.d = self.d + H * H * (_BQ @ back)
            q, v = y_old[:n], y_old[n:]
            yk = self.d - self.cq                        # compensated q += d, v += H (...)
            tk = q + yk
            self.cq = (tk - q) - yk
            q = tk
            yk = H * (_BV @ back) - self.cv
            tk = v + yk
            self.cv = (tk - v) - yk
            y_new = np.concatenate([q, tk])
        a_new = self._acc(t_new, y_new)
        if not (np.all(np.isfinite(y_new)) and np.all(np.isfinite(a_new))):
            raise FloatingPointError(f"stoermer6: non-finite state at t = {t_new!r} (h = {H!r})")
        self.q_prev = y_old[:n]
        self.hist = (self.hist + [a_new])[-ORDER:]
        self.k, self.t, self.t_old, self.y, self.a = self.k + 1, t_new, t_old, y_new, a_new
        self.nsteps += 1
        self.intrp = _hermite4(t_old, y_old, a_old, t_new, y_new, n)
        while j < len(tv) and tv[j] <= t_new:
            Y[j] = y_new if tv[j] == t_new else self.intrp(tv[j])
            j += 1
        return j, True

    def stop(self):
        pass

    def info(self):
        return {"integrator": self.name, "steps": self.nsteps}
