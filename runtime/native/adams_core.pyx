# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled Shampine-Gordon Adams PECE step (the one implementation of runtime/integrators/adams.py).

``step_core`` is STEP of Shampine & Gordon 1975 (block 0 checks and start, block 1
coefficients, block 2 predictor and error estimates at orders k-2..k, block 3 failure
handling, block 4 corrector, order selection with the k+1 estimate, step selection, round-off
floor with STEP's compensated summation) and ``intrp_raw`` is INTRP.  docs/adams.md gives the
formulas.

:class:`Stepper` holds one integration: ``step()`` takes one step (what
``runtime.adams.Adams._step_impl`` calls), ``run(t_out, Y, j, nmax)`` takes up to ``nmax`` steps
in a C loop and fills outputs by INTRP (what ``runtime.compiled_adams.solve`` calls), and with
``dense=True`` every accepted step's interpolant (x, y, psi, phi rows, order) is appended to a
C buffer, from which :class:`AdamsSolution` evaluates the solution on the whole interval.

With a PyCapsule named b"dynamica.rhs" (``void rhs(double t, const double *y, const double *p,
double *ydot)``) ``run`` releases the GIL and makes no Python call per step; with a Python
callable ``f(t, y)`` the same loop calls back into Python for every evaluation.

Arrays are 1-based as in STEP (row/index 0 unused).  ``phi`` is a (17, n) row-major block.
"""

from libc.math cimport fabs, sqrt, pow, copysign, isfinite, INFINITY
from libc.float cimport DBL_EPSILON
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from cpython.pycapsule cimport PyCapsule_IsValid, PyCapsule_GetPointer

import numpy as np

ctypedef void (*rhs_fn)(double, const double*, const double*, double*) noexcept nogil
# closed loops (templates/native/dynamica_constraints.h): y onto the constraint manifolds after a step
ctypedef int (*project_fn)(double, double*, const double*, double) noexcept nogil

cdef enum:
    MAXORD = 12
    STIFF_RUN = 50
    STIFF_BLOCK = 500
    STIFF_ORDER = 4
    STIFF_GAP = 6

# status codes (also exported to Python)
cdef enum:
    ST_OK = 0
    ST_CRASH_TOL = 1
    ST_CRASH_STEP = 2
    ST_NONFINITE = 3
    ST_PYERR = 4
    ST_MAXSTEPS = 5
    ST_WTZERO = 6
    ST_STIFF = 7
    ST_NOMEM = 8

OK, CRASH_TOL, CRASH_STEP, NONFINITE, PYERR, MAXSTEPS, WTZERO, STIFF, NOMEM = range(9)
STATUS_NAMES = ("ok", "crash_tol", "crash_step", "nonfinite", "pyerr", "maxsteps", "wtzero", "stiff",
                "nomem")
MAX_ORDER = MAXORD

cdef double U = DBL_EPSILON
cdef double TWOU = 2.0 * DBL_EPSILON
cdef double FOURU = 4.0 * DBL_EPSILON

# Length of the real stability interval (-B_k, 0) of the PECE pair of order k (Adams-Bashforth
# of order k predicting, the (k+1)-point Adams-Moulton corrector, constant steps); index 0
# unused.  tests/runtime/integrators/test_adams_nonsmooth.py recomputes them from the characteristic polynomial.
cdef double STAB_B[STIFF_ORDER + 1]
STAB_B[:] = [0.0, 2.0, 2.4, 1.934, 1.411]
# A step counts as stability-limited when h rho >= STIFF_FRAC B_k (docs/adams.md, stiffness).
cdef double STIFF_FRAC = 0.5
# max_step (and a given first_step) are applied as STEP_CAP times their value: a mesh of
# capped steps does not land on the round multiples of max_step where a periodic forcing of
# that period looks constant (docs/adams.md, non-smooth right-hand sides).
cdef double STEP_CAP = 0.9 + 0.01 * (5.0 ** 0.5 - 2.0)

# 1-based tables: GSTR[i] = |gamma*_i| (exact, see runtime/integrators/adams.py gamma_star), TWO[i] = 2**i.
cdef double GSTR[MAXORD + 2]
cdef double TWO[MAXORD + 2]


cdef void _tables():
    cdef double gs[MAXORD + 2]
    cdef double acc
    cdef int i, j
    gs[0] = 1.0
    for j in range(1, MAXORD + 2):
        acc = 0.0
        for i in range(j):
            acc = acc + gs[i] / (j + 1 - i)
        gs[j] = -acc
    for j in range(MAXORD + 2):
        GSTR[j] = fabs(gs[j])
        TWO[j] = 2.0 ** j
    GSTR[0] = 0.0

_tables()


def stab_table():
    """STAB_B[1..4] (for tests)."""
    return [STAB_B[i] for i in range(1, STIFF_ORDER + 1)]


def gstr_table():
    """The GSTR table (for tests)."""
    return [GSTR[i] for i in range(MAXORD + 2)]


cdef struct State:
    int n
    # solution, work rows
    double *y
    double *ynew
    double *pp          # predicted value
    double *yp          # derivative at the end of the last step / at the prediction
    double *psum
    double *temp4
    double *rwt
    double *phi         # 17 rows of n
    double psi[MAXORD + 1]
    double alpha[MAXORD + 1]
    double beta[MAXORD + 1]
    double sig[MAXORD + 2]
    double g[MAXORD + 2]
    double w[MAXORD + 2]
    double x
    double t_old
    double h
    double hold
    double tb
    double max_step     # the cap applied: STEP_CAP * the max_step asked for
    double eps_factor
    int k
    int kold
    int ns
    int phase1
    int nornd
    int start
    int h_given
    int force_k         # test hook: > 0 forces the order ramp up to force_k, accepts every step
    int done            # run(): ended by extrapolation within 4u|t| of tb (x unchanged)
    long nfev
    long nrejected
    long nsteps
    long max_steps
    long hist[MAXORD + 2]
    # stiffness test (DDES's, with the stability check): h |lambda| of the last step, run counters
    double hrho
    int nstab
    int nfree
    int stiff
    int ksteps
    long nstiff
    double stiff_t
    # tolerances (per component)
    const double *rtol
    const double *atol
    # right-hand side
    rhs_fn fn
    project_fn proj     # NULL, or called on y after every accepted step (drift of closed loops)
    double proj_tol
    const double *par
    void *pyfun         # borrowed: the Python callable (fn == NULL)
    void *errbox        # borrowed: a list receiving an exception from the callable
    # dense record: per accepted step [t_old, x, kold, y(n), psi(0..kold), phi rows 1..kold+1]
    int record
    double *rec
    Py_ssize_t reclen
    Py_ssize_t reccap
    Py_ssize_t *recoff
    Py_ssize_t nrec
    Py_ssize_t offcap
    # failure report
    double bad_t
    double bad_h
    double bad_val
    int bad_i
    int nbad


cdef int pycall(State *s, double t, double *yin, double *out) noexcept with gil:
    cdef double[::1] mv
    cdef const double[::1] rv
    cdef Py_ssize_t i, n = s.n
    try:
        ya = np.empty(n)
        mv = ya
        for i in range(n):
            mv[i] = yin[i]
        r = (<object>s.pyfun)(t, ya)
        rv = np.ascontiguousarray(np.asarray(r, dtype=np.float64).reshape(-1))
        if rv.shape[0] != n:
            raise ValueError(f"the right-hand side returned {rv.shape[0]} values, expected {n}")
        for i in range(n):
            out[i] = rv[i]
    except BaseException as e:
        (<list>s.errbox).append(e)
        return -1
    return 0


cdef int feval(State *s, double t, double *yin, double *out, double h) noexcept nogil:
    """RHS with immediate NaN/inf detection (records t, h, first bad component)."""
    cdef int i, nb = 0
    s.nfev += 1
    if s.fn != NULL:
        s.fn(t, yin, s.par, out)
    elif pycall(s, t, yin, out) != 0:
        return ST_PYERR
    for i in range(s.n):
        if not isfinite(out[i]):
            if nb == 0:
                s.bad_i = i
                s.bad_val = out[i]
            nb += 1
    if nb:
        s.bad_t = t
        s.bad_h = h
        s.nbad = nb
        return ST_NONFINITE
    return ST_OK


cdef inline double wnorm(const double *a, const double *rwt, int n) noexcept nogil:
    cdef double acc = 0.0, v
    cdef int l
    for l in range(n):
        v = a[l] * rwt[l]
        acc += v * v
    return sqrt(acc)


cdef void coefficients(int k, int ns, double h, double *psi, double *alpha, double *beta,
                       double *sig, double *g, double *w) noexcept nogil:
    """STEP block 1 for k >= ns: psi, alpha, beta, sigma for this step and g(1..k+1).

    psi(i) = x_{n+1} - x_{n+1-i}, alpha(i) = h / psi(i),
    beta(i) = prod_{j<i} psi_j(n+1) / psi_j(n)  (phi*_i = beta_i phi_i),
    sig(i+1) = i alpha(i) sig(i),
    g(i) = g_{i,1} with g_{1,q} = 1/q, g_{2,q} = 1/(q(q+1)), g_{i,q} = g_{i-1,q} - alpha_{i-1} g_{i-1,q+1}.

    Entries with index < ns are those of constant steps and are kept from earlier steps.  STEP
    updates g incrementally through its array v; here the triangle g_{i,q} is rebuilt from the
    alphas (at most 66 multiply-adds): the same numbers, no state to keep consistent when the
    order changes.
    """
    cdef int i, q
    cdef double temp1, temp2, a
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


cdef void intrp_raw(int n, int kold, double x, const double *y, const double *phi1,
                    const double *psi, double xout, double *out) noexcept nogil:
    """INTRP: y(xout) from the Adams interpolant of a step ending at x with value y.

    ``phi1`` points at row 1 of the modified divided differences (row i at phi1 + (i-1) n,
    i = 1..kold+1), ``psi`` is 1-based (psi[1..kold]).  The derivative interpolates f at
    x, x - psi_1, ..., x - psi_kold; y(xout) = y + hi sum_i g_i(hi) phi_i with hi = xout - x.
    """
    cdef int ki = kold + 1, i, j, l
    cdef double hi = xout - x, term = 0.0, gamma, eta, psijm1, acc
    cdef double w[MAXORD + 3]
    cdef double gi[MAXORD + 3]
    for i in range(1, ki + 1):
        w[i] = 1.0 / i
    gi[1] = 1.0
    for j in range(2, ki + 1):
        psijm1 = psi[j - 1]
        gamma = (hi + term) / psijm1
        eta = hi / psijm1
        for i in range(1, ki + 2 - j):
            w[i] = gamma * w[i] - eta * w[i + 1]
        gi[j] = w[1]
        term = psijm1
    for l in range(n):
        acc = 0.0
        for i in range(1, ki + 1):
            acc += phi1[(i - 1) * n + l] * gi[i]
        out[l] = y[l] + hi * acc


cdef inline void intrp(State *s, double xout, double *out) noexcept nogil:
    intrp_raw(s.n, s.kold, s.x, s.y, s.phi + s.n, s.psi, xout, out)


cdef int start_bound(State *s, double h, double sn, double *absh) noexcept nogil:
    """Bound the first step by the curvature of the solution (one extra evaluation).

    STEP's first step, 0.25 / sqrt(||f0||), sees only f0: where f0 = 0 it takes the whole
    interval (or max_step), and a forcing that is zero at both ends of it looks absent.  As in
    Hairer, Norsett & Wanner I (II.4) and Gladwell, Shampine & Brankin 1987: probe with
    h0 = 0.01 ||y0|| / ||f0|| (1e-6 when either is below 1e-5), estimate
    ||y''|| = ||f(x0 + h0, y0 + h0 f0) - f0|| / h0, and take at most 100 h0 and
    sqrt(0.5 / ||y''||) (the step whose order-1 error estimate, h^2/2 ||y''||, is 1/4).
    """
    cdef int n = s.n, l, code
    cdef double d0 = wnorm(s.y, s.rwt, n), h0, d2, acc, v
    cdef double hmin = 16.0 * FOURU * fabs(s.x)
    h0 = 1e-6 if (d0 < 1e-5 or sn < 1e-5) else 0.01 * d0 / sn
    h0 = min(max(h0, hmin), fabs(h))
    for l in range(n):
        s.pp[l] = s.y[l] + copysign(h0, h) * s.yp[l]
    code = feval(s, s.x + copysign(h0, h), s.pp, s.temp4, h0)
    if code != ST_OK:
        return code
    acc = 0.0
    for l in range(n):
        v = (s.temp4[l] - s.yp[l]) * s.rwt[l]
        acc += v * v
    d2 = sqrt(acc) / h0
    if d2 > 0.0:
        absh[0] = min(absh[0], sqrt(0.5 / d2))
    absh[0] = min(absh[0], 100.0 * h0)
    return ST_OK


cdef int step_core(State *s) noexcept nogil:
    """One call of STEP: a successful step from s.x (retrying after failures).

    s.rwt must hold 1 / (rtol |y| + atol).  Returns ST_OK or an error code; block numbers
    follow Shampine & Gordon (and runtime/integrators/adams.py ``Adams._step_core``).
    """
    cdef int n = s.n, l, i, code, ifail, knew, action
    cdef int k, kold, ns, phase1, nornd, kp1, kp2, km1, km2, nsp1
    cdef double *phi = s.phi
    cdef double *psi = s.psi
    cdef double *beta = s.beta
    cdef double *sig = s.sig
    cdef double *g = s.g
    cdef double *y = s.y
    cdef double *rwt = s.rwt
    cdef double *pp = s.pp
    cdef double *yp = s.yp
    cdef double *psum = s.psum
    cdef double *temp4 = s.temp4
    cdef double *ynew = s.ynew
    cdef double *swap
    cdef double x = s.x, h = s.h, tb = s.tb, xnew, xold, hold
    cdef double eps = 1.0, p5eps, round_, sn, absh, acc, v, tau, rho, dfs
    cdef double erkm2, erkm1, erk, erkp1, err, temp1, temp2, temp5, hnew, r

    # Block 0: step size and tolerance checks, start.
    if fabs(h) < FOURU * fabs(x):
        s.h = copysign(FOURU * fabs(x), h)
        s.eps_factor = 1.0
        return ST_CRASH_STEP
    p5eps = 0.5 * eps
    round_ = TWOU * wnorm(y, rwt, n)
    if p5eps < round_:
        s.eps_factor = 2.0 * round_ * (1.0 + FOURU)
        return ST_CRASH_TOL
    g[1] = 1.0
    g[2] = 0.5
    sig[1] = 1.0
    if s.start:
        for l in range(n):
            phi[n + l] = yp[l]
            phi[2 * n + l] = 0.0
        sn = wnorm(yp, rwt, n)
        absh = fabs(h)
        if not (s.force_k or s.h_given):
            if eps < 16.0 * sn * h * h:
                absh = 0.25 * sqrt(eps / sn)
            code = start_bound(s, h, sn, &absh)
            if code != ST_OK:
                return code
        h = copysign(max(absh, FOURU * fabs(x)), h)
        s.hold = 0.0
        s.k = 1
        s.kold = 0
        s.start = 0
        s.phase1 = 1
        s.nornd = 1
        if p5eps <= 100.0 * round_:
            s.nornd = 0
            for l in range(n):
                phi[15 * n + l] = 0.0
    k = s.k
    kold = s.kold
    ns = s.ns
    hold = s.hold
    phase1 = s.phase1
    nornd = s.nornd
    ifail = 0

    while True:
        # Never step beyond t_bound (DE's tstop) nor beyond max_step.
        if fabs(h) > s.max_step:
            h = copysign(s.max_step, h)
        if fabs(h) >= fabs(tb - x):
            h = tb - x
            xnew = tb
        else:
            xnew = x + h

        # Block 1: coefficients.
        kp1 = k + 1
        kp2 = k + 2
        km1 = k - 1
        km2 = k - 2
        if h != hold:
            ns = 0
        if ns <= kold:
            ns += 1
        nsp1 = ns + 1
        if k >= ns:
            coefficients(k, ns, h, psi, s.alpha, beta, sig, g, s.w)

        # Block 2: predict, evaluate, estimate.
        if k >= nsp1:
            for i in range(nsp1, kp1):
                for l in range(n):
                    phi[i * n + l] *= beta[i]
        for l in range(n):
            phi[kp2 * n + l] = phi[kp1 * n + l]
            phi[kp1 * n + l] = 0.0
        for l in range(n):
            acc = 0.0
            for i in range(1, kp1):
                acc += g[i] * phi[i * n + l]
            psum[l] = acc
        for i in range(k - 1, 0, -1):
            for l in range(n):
                phi[i * n + l] = phi[(i + 1) * n + l] + phi[i * n + l]
        if nornd:
            for l in range(n):
                pp[l] = y[l] + h * psum[l]
        else:
            for l in range(n):
                tau = h * psum[l] - phi[15 * n + l]
                pp[l] = y[l] + tau
                phi[16 * n + l] = (pp[l] - y[l]) - tau
        xold = x
        x = xnew
        absh = fabs(h)
        code = feval(s, x, pp, yp, h)
        if code != ST_OK:
            return code

        for l in range(n):
            temp4[l] = yp[l] - phi[n + l]
        erkm2 = 0.0
        erkm1 = 0.0
        if km2 > 0:
            acc = 0.0
            for l in range(n):
                v = (phi[km1 * n + l] + temp4[l]) * rwt[l]
                acc += v * v
            erkm2 = absh * sig[km1] * GSTR[km2] * sqrt(acc)
        if km2 >= 0:
            acc = 0.0
            for l in range(n):
                v = (phi[k * n + l] + temp4[l]) * rwt[l]
                acc += v * v
            erkm1 = absh * sig[k] * GSTR[km1] * sqrt(acc)
        temp5 = absh * wnorm(temp4, rwt, n)
        err = temp5 * (g[k] - g[kp1])
        erk = temp5 * sig[kp1] * GSTR[k]
        knew = k
        if km2 > 0:
            if max(erkm1, erkm2) <= erk:
                knew = km1
        elif km2 == 0:
            if erkm1 <= 0.5 * erk:
                knew = km1

        if err <= eps or s.force_k:
            break

        # Block 3: unsuccessful step; restore x, phi, psi; halve (order 1 after 3 failures).
        s.nrejected += 1
        phase1 = 0
        x = xold
        for i in range(1, kp1):
            for l in range(n):
                phi[i * n + l] = (phi[i * n + l] - phi[(i + 1) * n + l]) / beta[i]
        for i in range(2, kp1):
            psi[i - 1] = psi[i] - h
        ifail += 1
        temp2 = 0.5
        if ifail > 3 and p5eps < 0.25 * erk:
            temp2 = sqrt(p5eps / erk)
        if ifail >= 3:
            knew = 1
        h = temp2 * h
        k = knew
        if fabs(h) < FOURU * fabs(x):
            s.h = copysign(FOURU * fabs(x), h)
            s.eps_factor = 2.0
            s.k = k
            s.ns = ns
            s.phase1 = phase1
            return ST_CRASH_STEP

    # Block 4: successful step; correct, evaluate, update differences.
    kold = k
    hold = h
    temp1 = h * g[kp1]
    if nornd:
        for l in range(n):
            ynew[l] = pp[l] + temp1 * (yp[l] - phi[n + l])
    else:
        for l in range(n):
            rho = temp1 * (yp[l] - phi[n + l]) - phi[16 * n + l]
            ynew[l] = pp[l] + rho
            phi[15 * n + l] = (ynew[l] - pp[l]) - rho
    code = feval(s, x, ynew, yp, h)
    if code != ST_OK:
        return code
    # f was evaluated twice at x, at the prediction and at the correction: the ratio of the
    # differences estimates |lambda| of the Jacobian in the direction of the correction (a jump
    # of f in t cancels).  temp4 = f^p - phi^p_1, so f_{n+1} - f^p = (f_{n+1} - phi^p_1) - temp4.
    acc = 0.0
    dfs = 0.0
    for l in range(n):
        v = (ynew[l] - pp[l]) * rwt[l]
        acc += v * v
        v = (yp[l] - phi[n + l] - temp4[l]) * rwt[l]
        dfs += v * v
    s.hrho = absh * sqrt(dfs / acc) if acc > 0.0 else 0.0
    for l in range(n):
        phi[kp1 * n + l] = yp[l] - phi[n + l]
        phi[kp2 * n + l] = phi[kp1 * n + l] - phi[kp2 * n + l]
    for i in range(1, kp1):
        for l in range(n):
            phi[i * n + l] += phi[kp1 * n + l]

    # Order for the next step (0 keep, 1 raise, -1 lower).
    erkp1 = 0.0
    if knew == km1 or k == MAXORD:
        phase1 = 0
    if s.force_k:
        k = min(kp1, s.force_k)
        action = 0
    elif phase1:
        action = 1
    elif knew == km1:
        action = -1
    elif kp1 > ns:
        action = 0
    else:
        erkp1 = absh * GSTR[kp1] * wnorm(phi + kp2 * n, rwt, n)
        if k > 1:
            if erkm1 <= min(erk, erkp1):
                action = -1
            elif erkp1 >= erk or k == MAXORD:
                action = 0
            else:
                action = 1
        else:
            action = 0 if erkp1 >= 0.5 * erk else 1
    if action == 1:
        k = kp1
        erk = erkp1
    elif action == -1:
        k = km1
        erk = erkm1

    # Step size for the next step: double, keep, or reduce to [0.5, 0.9] h.
    hnew = h + h
    if not phase1 and not s.force_k and p5eps < erk * TWO[k + 1]:
        hnew = h
        if p5eps < erk:
            r = pow(p5eps / erk, 1.0 / (k + 1))
            hnew = absh * max(0.5, min(0.9, r))
            hnew = copysign(max(hnew, FOURU * fabs(x)), h)

    s.t_old = xold
    s.x = x
    swap = s.y
    s.y = s.ynew
    s.ynew = swap
    s.h = hnew
    s.hold = hold
    s.k = k
    s.kold = kold
    s.ns = ns
    s.phase1 = phase1
    return ST_OK



cdef int record_step(State *s) noexcept nogil:
    """Append the interpolant of the last step to the dense record."""
    cdef int n = s.n, kold = s.kold, i
    cdef Py_ssize_t size = 3 + n + (kold + 1) + (kold + 1) * n, cap
    cdef double *r
    cdef Py_ssize_t *o
    if s.reclen + size > s.reccap:
        cap = max(2 * s.reccap, s.reclen + size + 1024)
        r = <double*>realloc(s.rec, sizeof(double) * cap)
        if r == NULL:
            return ST_NOMEM
        s.rec = r
        s.reccap = cap
    if s.nrec + 2 > s.offcap:
        cap = max(2 * s.offcap, 256)
        o = <Py_ssize_t*>realloc(s.recoff, sizeof(Py_ssize_t) * cap)
        if o == NULL:
            return ST_NOMEM
        s.recoff = o
        s.offcap = cap
    r = s.rec + s.reclen
    r[0] = s.t_old
    r[1] = s.x
    r[2] = kold
    memcpy(r + 3, s.y, sizeof(double) * n)
    for i in range(kold + 1):
        r[3 + n + i] = s.psi[i]
    memcpy(r + 3 + n + kold + 1, s.phi + n, sizeof(double) * n * (kold + 1))
    s.recoff[s.nrec] = s.reclen
    s.nrec += 1
    s.reclen += size
    return ST_OK


cdef int step_one(State *s) noexcept nogil:
    """Weights, one STEP, counters, DDES stiffness test, dense record.

    Returns ST_OK, ST_STIFF (step accepted; the stiffness test fired on it) or an error code.
    """
    cdef int n = s.n, l, code
    cdef double wt
    for l in range(n):
        wt = s.rtol[l] * fabs(s.y[l]) + s.atol[l]
        if wt <= 0:
            s.bad_i = l
            s.bad_t = s.x
            return ST_WTZERO
        s.rwt[l] = 1.0 / wt
    code = step_core(s)
    if code != ST_OK:
        return code
    if s.proj != NULL:
        s.proj(s.x, s.y, s.par, s.proj_tol)
    s.nsteps += 1
    s.hist[s.kold] += 1
    if s.record:
        code = record_step(s)
        if code != ST_OK:
            return code
    # DDES: a run of 50 steps at order <= 4 within a block of 500 steps, where a step counts
    # only if it is also limited by stability, h |lambda| >= STIFF_FRAC B_k (low order after a
    # discontinuity comes with small steps and does not count); a run survives up to
    # STIFF_GAP - 1 steps that do not count (Hairer's rule in DOPRI5).
    if s.kold <= STIFF_ORDER and s.hrho >= STIFF_FRAC * STAB_B[s.kold]:
        s.nstab += 1
        s.nfree = 0
        if s.nstab >= STIFF_RUN and not s.stiff:
            s.stiff = 1
            if s.nstiff == 0:
                s.stiff_t = s.x
    else:
        s.nfree += 1
        if s.nfree >= STIFF_GAP:
            s.nstab = 0
    s.ksteps += 1
    if s.ksteps >= STIFF_BLOCK:
        s.ksteps = 0
        if s.stiff:
            s.stiff = 0
            s.nstab = 0
            s.nstiff += 1
            return ST_STIFF
    return ST_OK


cdef int run(State *s, const double *tout, int m, double *Y, int *jout, long nmax,
             int stiff_raise) noexcept nogil:
    """DE-like driver: at most nmax steps towards s.tb, filling Y[j * n + l] = y_l(tout[j])."""
    cdef int n = s.n, code, j = jout[0]
    cdef long taken = 0
    cdef double d = 1.0 if s.tb >= s.x else -1.0
    while d * (s.x - s.tb) < 0 and not s.done and taken < nmax:
        if fabs(s.tb - s.x) <= FOURU * fabs(s.x):
            # DE: too close to the end for a step: extrapolate with the interpolant.
            while j < m and d * (tout[j] - s.tb) <= 0:
                intrp(s, tout[j], Y + j * n)
                j += 1
            s.done = 1
            break
        if s.nsteps >= s.max_steps:
            jout[0] = j
            return ST_MAXSTEPS
        code = step_one(s)
        taken += 1
        if code == ST_OK or code == ST_STIFF:
            while j < m and d * (tout[j] - s.x) <= 0:
                intrp(s, tout[j], Y + j * n)
                j += 1
        if code == ST_STIFF and not stiff_raise:
            code = ST_OK
        if code != ST_OK:
            jout[0] = j
            return code
    jout[0] = j
    return ST_OK


cdef class Stepper:
    """One Adams integration of y' = f(t, y) from t0 towards t_bound (the compiled STEP state).

    f : PyCapsule named b"dynamica.rhs" (called directly; ``run`` releases the GIL) or a Python
        callable ``f(t, y) -> array`` (one Python call per evaluation).
    p : parameter array handed to the capsule (ignored for a callable).
    dense : record every accepted step's interpolant (see :meth:`solution`).
    The right-hand side is first evaluated by :meth:`begin`.  Methods return status codes
    (``OK``, ``STIFF`` ... of this module); :meth:`info` describes a failure.
    """

    cdef State s
    cdef double *work
    cdef object f, errbox, keep
    cdef double pdummy
    cdef readonly double t0
    cdef readonly bint capsule
    cdef public bint stiff_raise

    def __cinit__(self):
        memset(&self.s, 0, sizeof(State))
        self.work = NULL

    def __dealloc__(self):
        free(self.work)
        free(self.s.rec)
        free(self.s.recoff)

    def __init__(self, f, double t0, y0, double t_bound, p=None, rtol=1e-6, atol=1e-6,
                 first_step=None, double max_step=INFINITY, long max_steps=500000,
                 bint stiff_raise=True, bint dense=False, project=None, double project_tol=1e-12):
        cdef const double[::1] y0v = np.ascontiguousarray(y0, dtype=np.float64).reshape(-1)
        cdef int n = y0v.shape[0], l
        cdef double[::1] rt = np.array(np.broadcast_to(np.asarray(rtol, dtype=np.float64), (n,)), dtype=np.float64)
        cdef double[::1] at = np.array(np.broadcast_to(np.asarray(atol, dtype=np.float64), (n,)), dtype=np.float64)
        cdef const double[::1] pv
        cdef double d, h0
        cdef State *s = &self.s
        if n == 0:
            raise ValueError("y0 is empty")
        for l in range(n):
            if rt[l] < 0 or at[l] < 0:
                raise ValueError("rtol and atol must be non-negative")
            if rt[l] + at[l] <= 0:
                raise ValueError("rtol and atol must not both be zero")
        if not (max_step > 0):
            raise ValueError("max_step must be positive")
        self.errbox = []
        keep = [rt, at]
        self.pdummy = 0.0
        if PyCapsule_IsValid(f, b"dynamica.rhs"):
            self.capsule = True
            s.fn = <rhs_fn>PyCapsule_GetPointer(f, b"dynamica.rhs")
            s.par = &self.pdummy
            if p is not None:
                pv = np.ascontiguousarray(p, dtype=np.float64).reshape(-1)
                keep.append(pv)
                if pv.shape[0] > 0:
                    s.par = &pv[0]
        elif callable(f):
            self.capsule = False
            s.fn = NULL
            s.pyfun = <void*>f
            s.errbox = <void*>self.errbox
            s.par = &self.pdummy
        else:
            raise TypeError("f must be a PyCapsule named 'dynamica.rhs' or a callable f(t, y)")
        if project is not None:
            if not (self.capsule and PyCapsule_IsValid(project, b"dynamica.project")):
                raise TypeError("project must be a PyCapsule named 'dynamica.project', with a capsule rhs")
            s.proj = <project_fn>PyCapsule_GetPointer(project, b"dynamica.project")
            s.proj_tol = project_tol
            keep.append(project)
        self.f = f
        self.keep = keep
        s.rtol = &rt[0]
        s.atol = &at[0]
        self.stiff_raise = stiff_raise

        self.work = <double*>malloc(sizeof(double) * n * (7 + 17))
        if self.work == NULL:
            raise MemoryError()
        memset(self.work, 0, sizeof(double) * n * (7 + 17))
        s.n = n
        s.y = self.work
        s.ynew = self.work + n
        s.pp = self.work + 2 * n
        s.yp = self.work + 3 * n
        s.psum = self.work + 4 * n
        s.temp4 = self.work + 5 * n
        s.rwt = self.work + 6 * n
        s.phi = self.work + 7 * n
        for l in range(n):
            s.y[l] = y0v[l]
        self.t0 = t0
        s.x = t0
        s.t_old = t0
        s.tb = t_bound
        s.max_step = max_step * STEP_CAP if max_step < INFINITY else INFINITY
        s.max_steps = max_steps
        s.k = 1
        s.start = 1
        s.nornd = 1
        s.phase1 = 1
        s.eps_factor = 1.0
        s.record = dense
        d = 1.0 if t_bound >= t0 else -1.0
        if first_step is None:
            h0 = max(fabs(t_bound - t0), FOURU * fabs(t0))
            s.h_given = 0
        else:
            h0 = float(first_step)
            if not (h0 > 0):
                raise ValueError("first_step must be positive")
            h0 = h0 * STEP_CAP
            s.h_given = 1
        if h0 > s.max_step:
            h0 = s.max_step
        s.h = d * h0

    cdef int _f0(self) except? -1:
        cdef State *s = &self.s
        cdef int code = feval(s, s.x, s.y, s.yp, s.h), l
        if code == ST_OK:
            for l in range(s.n):
                s.phi[s.n + l] = s.yp[l]     # so that the interpolant is defined before the first step
        return code

    def begin(self):
        """Evaluate f(t0, y0); returns a status code."""
        return self._f0()

    def step(self):
        """One step of STEP (retrying after failures); returns OK, STIFF (accepted) or an error code."""
        return step_one(&self.s)

    def run(self, const double[::1] t_out, double[:, ::1] Y, int j, long nmax):
        """At most nmax steps towards t_bound, filling Y[j:] (shape (m, n)) at t_out[j:] by INTRP.

        Returns (code, j) with j the number of filled outputs.  STIFF is returned (after the
        step) only when ``stiff_raise``; otherwise detections are counted in ``nstiff``.
        """
        cdef int code, jout = j, m = t_out.shape[0]
        cdef const double *tp = &t_out[0] if m > 0 else NULL
        cdef double *yp = &Y[0, 0] if m > 0 else NULL
        if m > 0 and Y.shape[1] != self.s.n:
            raise ValueError("Y must have shape (len(t_out), n)")
        if self.capsule:
            with nogil:
                code = run(&self.s, tp, m, yp, &jout, nmax, self.stiff_raise)
        else:
            code = run(&self.s, tp, m, yp, &jout, nmax, self.stiff_raise)
        return code, jout

    def restart(self, y=None):
        """Start again at order 1 from the current point, optionally with a new state y;
        returns the status of the evaluation of f there."""
        cdef State *s = &self.s
        cdef const double[::1] yv
        cdef double remaining
        cdef int l
        if y is not None:
            yv = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
            if yv.shape[0] != s.n:
                raise ValueError(f"restart: y must have shape ({s.n},)")
            for l in range(s.n):
                s.y[l] = yv[l]
        remaining = fabs(s.tb - s.x)
        s.h = copysign(min(max(remaining, FOURU * fabs(s.x)), s.max_step), 1.0 if s.tb >= self.t0 else -1.0)
        s.h_given = 0
        s.start = 1
        s.kold = 0
        s.done = 0
        return self._f0()

    def resume(self, double t, double[::1] y, double t_bound):
        """Start again at order 1 from (t, y) towards a new t_bound, in the direction of the first
        integration (a segment boundary where the right-hand side changes, e.g. inputs sampled
        by a controller: runtime/inputs.py); the counters go on. Returns the status of the
        evaluation of f at (t, y)."""
        cdef State *s = &self.s
        cdef int l
        if y.shape[0] != s.n:
            raise ValueError(f"resume: y must have shape ({s.n},)")
        for l in range(s.n):
            s.y[l] = y[l]
        s.x = t
        s.t_old = t
        s.tb = t_bound
        s.h = copysign(min(max(fabs(t_bound - t), FOURU * fabs(t)), s.max_step), t_bound - t)
        s.h_given = 0
        s.start = 1
        s.kold = 0
        s.done = 0
        return self._f0()

    def run_segments(self, const double[::1] t_out, double[:, ::1] Y, int j, const double[::1] b,
                     double[:, ::1] values, const double[:, ::1] rates, const unsigned char[::1] held,
                     const unsigned char[::1] sampled, object sample, double[::1] p, int slot_u, int slot_du,
                     int slot_t, long nmax):
        """Integrate over the segments [b[k], b[k+1]] of a run with inputs (runtime/inputs.py), from
        the current point (t = b[0], the slots of p set for segment 0) to b[-1], filling Y[j:] at
        t_out[j:]. At each inner boundary k: when `sampled[k]`, Python's `sample(k, y)` is called with
        the state there (it writes row k of `values`, e.g. a controller's answers); inputs with
        `held[i]` keep row k-1's value otherwise; then the slots of p get values[k] (u_i),
        rates[k] (du_i) and b[k] (t_k), and the integration restarts (`resume`). Python runs only
        at the samples. Returns (code, j, k): k the boundary reached (len(b) - 1 when done)."""
        cdef State *s = &self.s
        cdef int nb = b.shape[0], m = values.shape[1], k, i, l, code = ST_OK, jout = j
        cdef int mo = t_out.shape[0]
        cdef const double *tp = &t_out[0] if mo > 0 else NULL
        cdef double *yp = &Y[0, 0] if mo > 0 else NULL
        cdef double[::1] yv
        if values.shape[0] < nb - 1 or rates.shape[0] < nb - 1 or rates.shape[1] != m or held.shape[0] != m \
                or sampled.shape[0] < nb:
            raise ValueError("run_segments: inconsistent segment tables")
        for k in range(1, nb):
            s.tb = b[k]
            if self.capsule:
                with nogil:
                    code = run(s, tp, mo, yp, &jout, nmax, self.stiff_raise)
            else:
                code = run(s, tp, mo, yp, &jout, nmax, self.stiff_raise)
            if code != ST_OK or k == nb - 1:
                return code, jout, k
            if s.x != b[k]:                     # ended by extrapolation within 4u|t|
                intrp(s, b[k], s.ynew)
                for l in range(s.n):
                    s.y[l] = s.ynew[l]
            if sampled[k]:
                y = np.empty(s.n)
                yv = y
                for l in range(s.n):
                    yv[l] = s.y[l]
                sample(k, y)
            for i in range(m):
                if held[i] and not sampled[k]:
                    values[k, i] = values[k - 1, i]
                p[slot_u + i] = values[k, i]
                p[slot_du + i] = rates[k, i]
            if m > 0:
                p[slot_t] = b[k]
            s.x = b[k]
            s.t_old = b[k]
            s.tb = b[k + 1]
            s.h = copysign(min(max(fabs(b[k + 1] - b[k]), FOURU * fabs(b[k])), s.max_step), b[k + 1] - b[k])
            s.h_given = 0
            s.start = 1
            s.kold = 0
            s.done = 0
            code = self._f0()
            if code != ST_OK:
                return code, jout, k
        return code, jout, nb - 1

    def force(self, int order):
        """Test hook: raise the order by one per step up to ``order`` and keep it there; every
        step is accepted (step sizes are set through ``h``)."""
        if not 1 <= order <= MAXORD:
            raise ValueError("order must be in 1..12")
        self.s.force_k = order

    def intrp(self, double t):
        """y(t) from the interpolant of the last step, shape (n,)."""
        out = np.empty(self.s.n)
        cdef double[::1] ov = out
        intrp(&self.s, t, &ov[0])
        return out

    def intrp_many(self, t):
        """y at the times t (1-D) from the interpolant of the last step, shape (n, len(t))."""
        cdef const double[::1] tv = np.ascontiguousarray(t, dtype=np.float64).reshape(-1)
        cdef Py_ssize_t i, m = tv.shape[0]
        out = np.empty((m, self.s.n))
        cdef double[:, ::1] ov = out
        for i in range(m):
            intrp(&self.s, tv[i], &ov[i, 0])
        return out.T

    def interpolant(self):
        """(x, y, phi rows 0..kold+1, psi 0..kold, kold) of the last step (copies)."""
        cdef State *s = &self.s
        cdef int kold = s.kold
        phi = np.array(<double[:kold + 2, :s.n]> s.phi)
        psi = np.array([s.psi[i] for i in range(kold + 1)])
        return s.x, self.y, phi, psi, kold

    def solution(self, t_last=None):
        """The dense solution over all recorded steps (``dense=True``) as an :class:`AdamsSolution`;
        ``t_last`` (default: the current t, or t_bound after an end by extrapolation) ends it."""
        cdef State *s = &self.s
        if not s.record:
            raise ValueError("the stepper was created without dense=True")
        rec = np.array(<double[:s.reclen]> s.rec) if s.reclen else np.zeros(0)
        off = np.array(<Py_ssize_t[:s.nrec]> s.recoff) if s.nrec else np.zeros(0, dtype=np.intp)
        if t_last is None:
            t_last = s.tb if s.done else s.x
        return AdamsSolution(self.t0, float(t_last), s.n, rec, off)

    def info(self):
        """Counters and, after a failure, what failed."""
        cdef State *s = &self.s
        return {"nfev": s.nfev, "nsteps": s.nsteps, "nrejected": s.nrejected,
                "order_histogram": [s.hist[j] for j in range(MAXORD + 1)], "nstiff": s.nstiff,
                "stiff_t": s.stiff_t,
                "t": s.x, "h": s.h, "hold": s.hold, "eps_factor": s.eps_factor,
                "component": s.bad_i, "value": s.bad_val, "nbad": s.nbad,
                "bad_t": s.bad_t, "bad_h": s.bad_h, "capsule": bool(self.capsule)}

    def pop_error(self):
        """The exception raised by the Python callable (status PYERR), or None."""
        return self.errbox.pop(0) if self.errbox else None

    property t:
        def __get__(self):
            return self.s.x

    property t_old:
        def __get__(self):
            return self.s.t_old

    property t_bound:
        def __get__(self):
            return self.s.tb

    property y:
        def __get__(self):
            return np.array(<double[:self.s.n]> self.s.y)

    property h:
        def __get__(self):
            return self.s.h

        def __set__(self, double h):
            self.s.h = h

    property k:
        def __get__(self):
            return self.s.k

    property kold:
        def __get__(self):
            return self.s.kold

    property hold:
        def __get__(self):
            return self.s.hold

    property g:
        def __get__(self):
            return np.array([self.s.g[i] for i in range(MAXORD + 2)])

    property nfev:
        def __get__(self):
            return self.s.nfev

    property nsteps:
        def __get__(self):
            return self.s.nsteps

    property nrejected:
        def __get__(self):
            return self.s.nrejected

    property nstiff:
        def __get__(self):
            return self.s.nstiff

    property hrho:
        """h |lambda| of the last step, |lambda| estimated from its two evaluations at the same t."""
        def __get__(self):
            return self.s.hrho

    property order_histogram:
        def __get__(self):
            return [self.s.hist[j] for j in range(MAXORD + 1)]

    property done:
        """True once t_bound is reached (by a step or by extrapolation within 4u|t|)."""
        def __get__(self):
            return bool(self.s.done or self.s.x == self.s.tb)


def intrp_eval(double x, y, phi, psi, int kold, t):
    """INTRP for one step's data (as :meth:`Stepper.interpolant` returns them) at the 1-D times t;
    returns shape (n, len(t))."""
    cdef const double[::1] yv = np.ascontiguousarray(y, dtype=np.float64)
    cdef const double[:, ::1] pv = np.ascontiguousarray(phi, dtype=np.float64)
    cdef const double[::1] sv = np.ascontiguousarray(psi, dtype=np.float64)
    cdef const double[::1] tv = np.ascontiguousarray(t, dtype=np.float64).reshape(-1)
    cdef int n = yv.shape[0]
    cdef Py_ssize_t i, m = tv.shape[0]
    if pv.shape[0] < kold + 2 or pv.shape[1] != n or sv.shape[0] < kold + 1 or not 0 <= kold <= MAXORD:
        raise ValueError("inconsistent interpolant data")
    out = np.empty((m, n))
    cdef double[:, ::1] ov = out
    for i in range(m):
        intrp_raw(n, kold, x, &yv[0], &pv[1, 0], &sv[0], tv[i], &ov[i, 0])
    return out.T


cdef class AdamsSolution:
    """Continuous solution over the whole interval from the Adams interpolants of every step
    (like scipy's ``OdeSolution``: ``sol(t)`` for a scalar gives shape (n,), for a 1-D array
    (n, len(t)); at a step end the step ending there is used, which reproduces its y)."""

    cdef readonly int n
    cdef readonly double t_min, t_max
    cdef readonly object ts
    cdef readonly Py_ssize_t n_segments
    cdef object rec, off, ends
    cdef double d

    def __init__(self, double t0, double t_last, int n, rec, off):
        self.n = n
        self.rec = np.ascontiguousarray(rec, dtype=np.float64)
        self.off = np.ascontiguousarray(off, dtype=np.intp)
        self.n_segments = self.off.shape[0]
        if self.n_segments == 0:
            raise ValueError("no steps recorded")
        xs = self.rec[self.off + 1]
        self.d = 1.0 if (xs[-1] >= t0) else -1.0
        self.ts = np.concatenate([[t0], xs[:-1], [t_last]])
        self.ends = self.d * self.ts[1:]
        self.t_min = min(t0, t_last)
        self.t_max = max(t0, t_last)

    cdef void _eval(self, double t, Py_ssize_t seg, double *out):
        cdef double[::1] rv = self.rec
        cdef Py_ssize_t[::1] ofv = self.off
        cdef double *r = &rv[0] + ofv[seg]
        cdef int kold = <int>r[2], n = self.n
        intrp_raw(n, kold, r[1], r + 3, r + 3 + n + kold + 1, r + 3 + n, t, out)

    def __call__(self, t):
        ta = np.asarray(t, dtype=np.float64)
        cdef Py_ssize_t i, m
        seg = np.searchsorted(self.ends, self.d * ta.reshape(-1), side="left")
        np.clip(seg, 0, self.n_segments - 1, out=seg)
        cdef Py_ssize_t[::1] sv = np.ascontiguousarray(seg, dtype=np.intp)
        cdef const double[::1] tv = np.ascontiguousarray(ta.reshape(-1))
        m = tv.shape[0]
        out = np.empty((m, self.n))
        cdef double[:, ::1] ov = out
        for i in range(m):
            self._eval(tv[i], sv[i], &ov[i, 0])
        if ta.ndim == 0:
            return out[0]
        return out.T


def integrate(f, double t0, y0, t_out, p=None, rtol=1e-6, atol=1e-6, long max_steps=500000,
              t_bound=None, first_step=None, double max_step=INFINITY, bint stiff_raise=True):
    """Integrate y' = f(t, y) from t0 and return ``(Y, info)`` (no events, no dense output).

    t_out : output times, monotone in the direction of integration, within [t0, t_bound];
        ``t_bound`` defaults to ``t_out[-1]``.  Outputs equal to t0 are y0 exactly, the
        others come from the Adams interpolant (INTRP) of the step that covers them.
    Returns Y of shape (n, len(t_out)) (rows filled up to info["n_out"]) and info, a dict:
    status (0 ok, see STATUS_NAMES), nfev, nsteps, nrejected, order_histogram (list, index =
    order 0..12), t, h, and for failures component, value, nbad, eps_factor.
    """
    cdef const double[::1] tv = np.ascontiguousarray(t_out, dtype=np.float64).reshape(-1)
    cdef int m = tv.shape[0], j, jout = 0
    cdef double tb, d
    if m == 0 and t_bound is None:
        raise ValueError("t_out is empty and no t_bound given")
    tb = float(tv[m - 1]) if t_bound is None else float(t_bound)
    d = 1.0 if tb >= t0 else -1.0
    for j in range(m):
        if d * (tv[j] - t0) < 0 or d * (tv[j] - tb) > 0:
            raise ValueError(f"t_out[{j}] = {tv[j]!r} lies outside [t0, t_bound] = [{t0!r}, {tb!r}]")
        if j > 0 and d * (tv[j] - tv[j - 1]) < 0:
            raise ValueError("t_out must be monotone in the direction of integration")
    st = Stepper(f, t0, y0, tb, p, rtol, atol, first_step, max_step, max_steps, stiff_raise)
    y0a = st.y
    Y = np.full((m, y0a.shape[0]), np.nan)
    while jout < m and tv[jout] == t0:          # outputs at t0 are y0 itself
        Y[jout] = y0a
        jout += 1
    code = st.begin()
    if code == ST_OK:
        code, jout = st.run(tv, Y, jout, max_steps + 1)
    if code == ST_PYERR:
        err = st.pop_error()
        if err is not None:
            raise err
    info = st.info()
    info.update(status=code, message=STATUS_NAMES[code], n_out=jout)
    if code == ST_NONFINITE:
        info.update(t=info["bad_t"], h=info["bad_h"])
    if st.done:
        info["t"] = tb
    return Y.T, info


# The SHA-256 of this file's text when built at install time (setup.py), else "": how
# build.compiled_helper tells an installed extension from one built from an older source.
cdef extern from *:
    """
    #ifndef DYN_SOURCE_SHA
    #define DYN_SOURCE_SHA ""
    #endif
    """
    const char *DYN_SOURCE_SHA
SOURCE_SHA = DYN_SOURCE_SHA.decode()
