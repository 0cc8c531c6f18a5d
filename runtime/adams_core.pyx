# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled Shampine-Gordon Adams PECE integration loop (port of runtime/adams.py).

The step (``step_core``) is a line-by-line port of ``Adams._step_core`` of runtime/adams.py
(STEP of Shampine & Gordon 1975: block 0 checks and start, block 1 coefficients, block 2
predictor and error estimates at orders k-2..k, block 3 failure handling, block 4 corrector,
order selection with the k+1 estimate, step selection, round-off floor with STEP's compensated
summation), and ``intrp`` is INTRP.  The driver ``integrate`` repeats what
``solve_ivp(fun, (t0, t_bound), y0, method=Adams, t_eval=t_out)`` does, so the two give the
same steps, the same number of RHS evaluations and the same numbers up to the order of
floating-point summations (BLAS in numpy vs. plain loops here).

With a PyCapsule named b"dynamica.rhs" (``void rhs(double t, const double *y, const double *p,
double *ydot)``) the whole loop runs without the GIL and without any Python call per step;
with a Python callable ``f(t, y)`` the same loop calls back into Python for every evaluation.

Arrays are 1-based as in STEP (row/index 0 unused).  ``phi`` is a (17, n) row-major block.
"""

from libc.math cimport fabs, sqrt, pow, copysign, isfinite, INFINITY
from libc.float cimport DBL_EPSILON
from libc.stdlib cimport malloc, free
from libc.string cimport memcpy, memset
from cpython.pycapsule cimport PyCapsule_IsValid, PyCapsule_GetPointer

import numpy as np

ctypedef void (*rhs_fn)(double, const double*, const double*, double*) noexcept nogil

cdef enum:
    MAXORD = 12
    STIFF_RUN = 50
    STIFF_BLOCK = 500

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

OK, CRASH_TOL, CRASH_STEP, NONFINITE, PYERR, MAXSTEPS, WTZERO, STIFF = range(8)
STATUS_NAMES = ("ok", "crash_tol", "crash_step", "nonfinite", "pyerr", "maxsteps", "wtzero", "stiff")
MAX_ORDER = MAXORD

cdef double U = DBL_EPSILON
cdef double TWOU = 2.0 * DBL_EPSILON
cdef double FOURU = 4.0 * DBL_EPSILON

# 1-based tables: GSTR[i] = |gamma*_i| (exact, as runtime/adams.py), TWO[i] = 2**i.
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
    double h
    double hold
    double tb
    double max_step
    double eps_factor
    int k
    int kold
    int ns
    int phase1
    int nornd
    int start
    int h_given
    long nfev
    long nrejected
    # right-hand side
    rhs_fn fn
    const double *par
    void *pyfun         # borrowed: the Python callable (fn == NULL)
    void *errbox        # borrowed: a list receiving an exception from the callable
    # failure report
    double bad_t
    double bad_h
    double bad_val
    int bad_i
    int nbad


cdef int pycall(State *s, double t, double *yin, double *out) noexcept with gil:
    cdef double[::1] mv
    cdef Py_ssize_t i, n = s.n
    try:
        ya = np.empty(n)
        mv = ya
        for i in range(n):
            mv[i] = yin[i]
        r = (<object>s.pyfun)(t, ya)
        mv = np.ascontiguousarray(np.asarray(r, dtype=np.float64).reshape(-1))
        if mv.shape[0] != n:
            raise ValueError(f"the right-hand side returned {mv.shape[0]} values, expected {n}")
        for i in range(n):
            out[i] = mv[i]
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
    """STEP block 1 for k >= ns (as runtime/adams.py ``_coefficients``)."""
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


cdef void intrp(State *s, double xout, double *out) noexcept nogil:
    """INTRP: y(xout) from the Adams interpolant of the last step (order kold + 1)."""
    cdef int n = s.n, ki = s.kold + 1, i, j, l
    cdef double hi = xout - s.x, term = 0.0, gamma, eta, psijm1, acc
    cdef double w[MAXORD + 3]
    cdef double gi[MAXORD + 3]
    cdef double *phi = s.phi
    for i in range(1, ki + 1):
        w[i] = 1.0 / i
    gi[1] = 1.0
    for j in range(2, ki + 1):
        psijm1 = s.psi[j - 1]
        gamma = (hi + term) / psijm1
        eta = hi / psijm1
        for i in range(1, ki + 2 - j):
            w[i] = gamma * w[i] - eta * w[i + 1]
        gi[j] = w[1]
        term = psijm1
    for l in range(n):
        acc = 0.0
        for i in range(1, ki + 1):
            acc += phi[i * n + l] * gi[i]
        out[l] = s.y[l] + hi * acc


cdef int step_core(State *s) noexcept nogil:
    """One call of STEP: a successful step from s.x (retrying after failures).

    s.rwt must hold 1 / (rtol |y| + atol).  Returns ST_OK or an error code; block numbers
    follow Shampine & Gordon (and runtime/adams.py ``Adams._step_core``).
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
    cdef double eps = 1.0, p5eps, round_, sn, absh, acc, v, tau, rho
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
        if not s.h_given and eps < 16.0 * sn * h * h:
            absh = 0.25 * sqrt(eps / sn)
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

        if err <= eps:
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
    if phase1:
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
    if not phase1 and p5eps < erk * TWO[k + 1]:
        hnew = h
        if p5eps < erk:
            r = pow(p5eps / erk, 1.0 / (k + 1))
            hnew = absh * max(0.5, min(0.9, r))
            hnew = copysign(max(hnew, FOURU * fabs(x)), h)

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


cdef int run(State *s, const double *rtol, const double *atol, const double *tout, int m,
             double *Y, int *jout, long max_steps, long *nsteps, long *hist,
             int stiff_raise, long *nstiff) noexcept nogil:
    """DE-like driver: steps to s.tb, filling Y[j * n + l] = y_l(tout[j]) by INTRP."""
    cdef int n = s.n, l, code, j = jout[0]
    cdef double d = 1.0 if s.tb >= s.x else -1.0
    cdef double wt
    cdef int kle4 = 0, stiff = 0, ksteps = 0
    while d * (s.x - s.tb) < 0:
        if fabs(s.tb - s.x) <= FOURU * fabs(s.x):
            # DE: too close to the end for a step: extrapolate with the interpolant.
            while j < m and d * (tout[j] - s.tb) <= 0:
                intrp(s, tout[j], Y + j * n)
                j += 1
            s.x = s.tb
            break
        if nsteps[0] >= max_steps:
            jout[0] = j
            return ST_MAXSTEPS
        for l in range(n):
            wt = rtol[l] * fabs(s.y[l]) + atol[l]
            if wt <= 0:
                s.bad_i = l
                s.bad_t = s.x
                jout[0] = j
                return ST_WTZERO
            s.rwt[l] = 1.0 / wt
        code = step_core(s)
        if code != ST_OK:
            jout[0] = j
            return code
        nsteps[0] += 1
        hist[s.kold] += 1
        while j < m and d * (tout[j] - s.x) <= 0:
            intrp(s, tout[j], Y + j * n)
            j += 1
        # DDES stiffness test: a run of 50 steps at order <= 4 within a block of 500.
        kle4 = 0 if s.kold > 4 else kle4 + 1
        if kle4 >= STIFF_RUN:
            stiff = 1
        ksteps += 1
        if ksteps >= STIFF_BLOCK:
            ksteps = 0
            if stiff:
                stiff = 0
                kle4 = 0
                nstiff[0] += 1
                if stiff_raise:
                    jout[0] = j
                    return ST_STIFF
    jout[0] = j
    return ST_OK


def integrate(f, double t0, y0, t_out, p=None, rtol=1e-6, atol=1e-6, long max_steps=500000,
              t_bound=None, first_step=None, double max_step=INFINITY, bint stiff_raise=True):
    """Integrate y' = f(t, y) from t0 and return ``(Y, info)``.

    f : PyCapsule named b"dynamica.rhs" (C pointer called directly, GIL released) or a Python
        callable ``f(t, y) -> array`` (same algorithm, one Python call per evaluation).
    t_out : output times, monotone in the direction of integration, within [t0, t_bound];
        ``t_bound`` defaults to ``t_out[-1]``.  Outputs equal to t0 are y0 exactly, the
        others come from the Adams interpolant (INTRP) of the step that covers them.
    p : parameter array handed to the capsule (ignored for a callable).
    Returns Y of shape (n, len(t_out)) (rows filled up to info["n_out"]) and info, a dict:
    status (0 ok, see STATUS_NAMES), nfev, nsteps, nrejected, order_histogram (list, index =
    order 0..12), t, h, and for failures component, value, nbad, eps_factor.
    """
    cdef double[::1] y0v = np.ascontiguousarray(y0, dtype=np.float64).reshape(-1)
    cdef double[::1] tv = np.ascontiguousarray(t_out, dtype=np.float64).reshape(-1)
    cdef int n = y0v.shape[0], m = tv.shape[0], j, l, code
    cdef double[::1] pv
    cdef double[::1] rt = np.array(np.broadcast_to(np.asarray(rtol, dtype=np.float64), (n,)), dtype=np.float64)
    cdef double[::1] at = np.array(np.broadcast_to(np.asarray(atol, dtype=np.float64), (n,)), dtype=np.float64)
    cdef double tb, d, h0
    cdef State s
    cdef long nsteps = 0, nstiff = 0
    cdef long hist[MAXORD + 2]
    cdef int jout = 0
    cdef double *work
    cdef double pdummy = 0.0
    cdef double[:, ::1] Yv
    cdef bint use_capsule
    errbox = []

    if n == 0:
        raise ValueError("y0 is empty")
    tb = float(tv[m - 1]) if t_bound is None else float(t_bound)
    d = 1.0 if tb >= t0 else -1.0
    for j in range(m):
        if d * (tv[j] - t0) < 0 or d * (tv[j] - tb) > 0:
            raise ValueError(f"t_out[{j}] = {tv[j]!r} lies outside [t0, t_bound] = [{t0!r}, {tb!r}]")
        if j > 0 and d * (tv[j] - tv[j - 1]) < 0:
            raise ValueError("t_out must be monotone in the direction of integration")
    for l in range(n):
        if rt[l] < 0 or at[l] < 0:
            raise ValueError("rtol and atol must be non-negative")
        if rt[l] + at[l] <= 0:
            raise ValueError("rtol and atol must not both be zero")
    if not (max_step > 0):
        raise ValueError("max_step must be positive")

    memset(&s, 0, sizeof(State))
    use_capsule = PyCapsule_IsValid(f, b"dynamica.rhs") != 0
    if use_capsule:
        s.fn = <rhs_fn>PyCapsule_GetPointer(f, b"dynamica.rhs")
        if p is None:
            s.par = &pdummy
        else:
            pv = np.ascontiguousarray(p, dtype=np.float64).reshape(-1)
            s.par = &pdummy if pv.shape[0] == 0 else &pv[0]
    elif callable(f):
        s.fn = NULL
        s.pyfun = <void*>f
        s.errbox = <void*>errbox
        s.par = &pdummy
    else:
        raise TypeError("f must be a PyCapsule named 'dynamica.rhs' or a callable f(t, y)")

    Y = np.full((m, n), np.nan)
    Yv = Y
    work = <double*>malloc(sizeof(double) * n * (7 + 17))
    if work == NULL:
        raise MemoryError()
    try:
        memset(work, 0, sizeof(double) * n * (7 + 17))
        s.n = n
        s.y = work
        s.ynew = work + n
        s.pp = work + 2 * n
        s.yp = work + 3 * n
        s.psum = work + 4 * n
        s.temp4 = work + 5 * n
        s.rwt = work + 6 * n
        s.phi = work + 7 * n
        for l in range(n):
            s.y[l] = y0v[l]
        s.x = t0
        s.tb = tb
        s.max_step = max_step
        s.k = 1
        s.start = 1
        s.nornd = 1
        s.phase1 = 1
        s.eps_factor = 1.0
        if first_step is None:
            h0 = max(fabs(tb - t0), FOURU * fabs(t0))
            s.h_given = 0
        else:
            h0 = float(first_step)
            if not (h0 > 0):
                raise ValueError("first_step must be positive")
            s.h_given = 1
        if h0 > max_step:
            h0 = max_step
        s.h = d * h0
        for j in range(MAXORD + 2):
            hist[j] = 0
        # outputs at t0 are y0 itself
        while jout < m and tv[jout] == t0:
            for l in range(n):
                Yv[jout, l] = y0v[l]
            jout += 1
        code = feval(&s, s.x, s.y, s.yp, s.h)
        if code == ST_OK:
            for l in range(n):
                s.phi[n + l] = s.yp[l]
            if use_capsule:
                with nogil:
                    code = run(&s, &rt[0], &at[0], &tv[0], m, &Yv[0, 0], &jout, max_steps,
                               &nsteps, hist, stiff_raise, &nstiff)
            else:
                code = run(&s, &rt[0], &at[0], &tv[0], m, &Yv[0, 0], &jout, max_steps,
                           &nsteps, hist, stiff_raise, &nstiff)
    finally:
        free(work)
    if code == ST_PYERR and errbox:
        raise errbox[0]
    info = {
        "status": code, "message": STATUS_NAMES[code],
        "nfev": s.nfev, "nsteps": nsteps, "nrejected": s.nrejected,
        "order_histogram": [hist[j] for j in range(MAXORD + 1)],
        "t": s.x, "h": s.h, "n_out": jout, "nstiff": nstiff, "eps_factor": s.eps_factor,
        "capsule": bool(use_capsule),
    }
    if code == ST_NONFINITE:
        info.update(t=s.bad_t, h=s.bad_h, component=s.bad_i, value=s.bad_val, nbad=s.nbad)
    elif code == ST_WTZERO:
        info.update(component=s.bad_i)
    return Y.T, info
