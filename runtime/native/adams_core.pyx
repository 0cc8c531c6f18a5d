# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Compiled Shampine-Gordon Adams PECE step (the one implementation of runtime/integrators/adams.py).

The method itself is plain C in runtime/native/dynamica_adams.h (shared with the exported
Co-Simulation FMU): ``dyn_ad_step_core`` is STEP of Shampine & Gordon 1975 (block 0 checks and
start, block 1 coefficients, block 2 predictor and error estimates at orders k-2..k, block 3
failure handling, block 4 corrector, order selection with the k+1 estimate, step selection,
round-off floor with STEP's compensated summation) and ``dyn_ad_intrp_raw`` is INTRP.
docs/adams.md gives the formulas. This file wraps it for Python.

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


from libc.math cimport fabs, copysign, INFINITY
from libc.stdlib cimport malloc, free
from cpython.pycapsule cimport PyCapsule_IsValid, PyCapsule_GetPointer

import numpy as np

cdef extern from "dynamica_adams.h" nogil:
    enum:
        DYN_AD_MAXORD
        DYN_AD_STIFF_ORDER
        DYN_AD_OK
        DYN_AD_CALLBACK
        DYN_AD_NONFINITE
        DYN_AD_STIFF
    double DYN_AD_FOURU
    ctypedef void (*dyn_ad_rhs_fn)(double, const double*, const double*, double*) noexcept nogil
    ctypedef int (*dyn_ad_call_fn)(void *, double, const double*, double*) noexcept nogil
    ctypedef int (*dyn_ad_project_fn)(double, double*, const double*, double) noexcept nogil
    ctypedef double (*dyn_ad_watch_fn)(double, const double*, const double*, const double*) noexcept nogil
    ctypedef struct dyn_ad_state:
        int n
        double *y
        double *ynew
        double *phi
        double *psi
        double *g
        double x
        double t_old
        double h
        double hold
        double tb
        double max_step
        double eps_factor
        int k
        int kold
        int start
        int h_given
        int force_k
        int done
        long nfev
        long nrejected
        long nsteps
        long max_steps
        long *hist
        double hrho
        long nstiff
        double stiff_t
        dyn_ad_rhs_fn fn
        dyn_ad_call_fn call
        void *ctx
        dyn_ad_project_fn proj
        double proj_tol
        dyn_ad_watch_fn watch
        const double *watch_w
        double watch_level
        double watch_prev
        const double *par
        int record
        double *rec
        Py_ssize_t reclen
        Py_ssize_t *recoff
        Py_ssize_t nrec
        double bad_t
        double bad_h
        double bad_val
        int bad_i
        int nbad
    int DYN_AD_WORK(int n)
    double dyn_ad_stab_b(int k)
    double dyn_ad_step_cap()
    void dyn_ad_tables(double *gstr, double *two)
    void dyn_ad_init(dyn_ad_state *s, int n, double *work, const double *rtol, const double *atol)
    int dyn_ad_begin(dyn_ad_state *s)
    int dyn_ad_step_one(dyn_ad_state *s)
    int dyn_ad_run(dyn_ad_state *s, const double *tout, int m, double *Y, int *jout, long nmax, int stiff_raise)
    void dyn_ad_intrp(const dyn_ad_state *s, double xout, double *out)
    void dyn_ad_intrp_raw(int n, int kold, double x, const double *y, const double *phi1, const double *psi,
                          double xout, double *out)

# status codes (dynamica_adams.h DYN_AD_*; CALLBACK: the Python callable raised)
# (WATCH: a step accepted, the watch of closed loops below its level: Stepper.set_watch)
OK, CRASH_TOL, CRASH_STEP, NONFINITE, PYERR, MAXSTEPS, WTZERO, STIFF, NOMEM, WATCH = range(10)
STATUS_NAMES = ("ok", "crash_tol", "crash_step", "nonfinite", "pyerr", "maxsteps", "wtzero", "stiff",
                "nomem", "watch")
MAX_ORDER = DYN_AD_MAXORD
cdef double STEP_CAP = dyn_ad_step_cap()
cdef double FOURU = DYN_AD_FOURU


def stab_table():
    """STAB_B[1..4] (for tests)."""
    return [dyn_ad_stab_b(i) for i in range(1, DYN_AD_STIFF_ORDER + 1)]


def gstr_table():
    """The GSTR table (for tests)."""
    cdef double gstr[DYN_AD_MAXORD + 2]
    cdef double two[DYN_AD_MAXORD + 2]
    dyn_ad_tables(gstr, two)
    return [gstr[i] for i in range(DYN_AD_MAXORD + 2)]


cdef inline int intrp(dyn_ad_state *s, double xout, double *out) noexcept nogil:
    dyn_ad_intrp(s, xout, out)
    return 0


cdef class Stepper


cdef int pycall(void *ctx, double t, const double *yin, double *out) noexcept with gil:
    """The right-hand side as a Python callable f(t, y) (ctx: the Stepper); an exception goes to
    the Stepper's errbox and the integration stops with PYERR."""
    cdef Stepper st = <Stepper>ctx
    cdef double[::1] mv
    cdef const double[::1] rv
    cdef Py_ssize_t i, n = st.s.n
    try:
        ya = np.empty(n)
        mv = ya
        for i in range(n):
            mv[i] = yin[i]
        r = st.f(t, ya)
        rv = np.ascontiguousarray(np.asarray(r, dtype=np.float64).reshape(-1))
        if rv.shape[0] != n:
            raise ValueError(f"the right-hand side returned {rv.shape[0]} values, expected {n}")
        for i in range(n):
            out[i] = rv[i]
    except BaseException as e:
        (<list>st.errbox).append(e)
        return -1
    return 0


cdef class Stepper:
    """One Adams integration of y' = f(t, y) from t0 towards t_bound (the compiled STEP state).

    f : PyCapsule named b"dynamica.rhs" (called directly; ``run`` releases the GIL) or a Python
        callable ``f(t, y) -> array`` (one Python call per evaluation).
    p : parameter array handed to the capsule (ignored for a callable).
    dense : record every accepted step's interpolant (see :meth:`solution`).
    The right-hand side is first evaluated by :meth:`begin`.  Methods return status codes
    (``OK``, ``STIFF`` ... of this module); :meth:`info` describes a failure.
    """

    cdef dyn_ad_state s
    cdef dyn_ad_project_fn proj_saved
    cdef double *work
    cdef object f, errbox, keep
    cdef double pdummy
    cdef readonly double t0
    cdef readonly bint capsule
    cdef public bint stiff_raise

    def __cinit__(self):
        self.work = NULL
        self.s.rec = NULL
        self.s.recoff = NULL

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
        cdef dyn_ad_state *s = &self.s
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
        self.work = <double*>malloc(sizeof(double) * DYN_AD_WORK(n))
        if self.work == NULL:
            raise MemoryError()
        dyn_ad_init(s, n, self.work, &rt[0], &at[0])
        if PyCapsule_IsValid(f, b"dynamica.rhs"):
            self.capsule = True
            s.fn = <dyn_ad_rhs_fn>PyCapsule_GetPointer(f, b"dynamica.rhs")
            s.par = &self.pdummy
            if p is not None:
                pv = np.ascontiguousarray(p, dtype=np.float64).reshape(-1)
                keep.append(pv)
                if pv.shape[0] > 0:
                    s.par = &pv[0]
        elif callable(f):
            self.capsule = False
            s.fn = NULL
            s.call = pycall
            s.ctx = <void*>self
            s.par = &self.pdummy
        else:
            raise TypeError("f must be a PyCapsule named 'dynamica.rhs' or a callable f(t, y)")
        if project is not None:
            if not (self.capsule and PyCapsule_IsValid(project, b"dynamica.project")):
                raise TypeError("project must be a PyCapsule named 'dynamica.project', with a capsule rhs")
            s.proj = <dyn_ad_project_fn>PyCapsule_GetPointer(project, b"dynamica.project")
            self.proj_saved = s.proj
            s.proj_tol = project_tol
            keep.append(project)
        self.f = f
        self.keep = keep
        self.stiff_raise = stiff_raise
        for l in range(n):
            s.y[l] = y0v[l]
        self.t0 = t0
        s.x = t0
        s.t_old = t0
        s.tb = t_bound
        s.max_step = max_step * STEP_CAP if max_step < INFINITY else INFINITY
        s.max_steps = max_steps
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
        return dyn_ad_begin(&self.s)         # f0 also into phi row 1: the interpolant is defined

    def begin(self):
        """Evaluate f(t0, y0); returns a status code."""
        return self._f0()

    def step(self):
        """One step of STEP (retrying after failures); returns OK, STIFF (accepted) or an error code."""
        return dyn_ad_step_one(&self.s)

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
                code = dyn_ad_run(&self.s, tp, m, yp, &jout, nmax, self.stiff_raise)
        else:
            code = dyn_ad_run(&self.s, tp, m, yp, &jout, nmax, self.stiff_raise)
        return code, jout

    def restart(self, y=None):
        """Start again at order 1 from the current point, optionally with a new state y;
        returns the status of the evaluation of f there."""
        cdef dyn_ad_state *s = &self.s
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
        cdef dyn_ad_state *s = &self.s
        cdef int l
        if y.shape[0] != s.n:
            raise ValueError(f"resume: y must have shape ({s.n},)")
        for l in range(s.n):
            s.y[l] = y[l]
        s.x = t
        s.t_old = t
        s.watch_prev = -1.0
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
        cdef dyn_ad_state *s = &self.s
        cdef int nb = b.shape[0], m = values.shape[1], k, i, l, code = DYN_AD_OK, jout = j
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
                    code = dyn_ad_run(s, tp, mo, yp, &jout, nmax, self.stiff_raise)
            else:
                code = dyn_ad_run(s, tp, mo, yp, &jout, nmax, self.stiff_raise)
            if code != DYN_AD_OK or k == nb - 1:
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
            if code != DYN_AD_OK:
                return code, jout, k
        return code, jout, nb - 1

    def set_watch(self, watch, w, double level):
        """After every accepted step, `watch` (a PyCapsule b"dynamica.watch", a closed-loop model's
        ``watch_capsule``: how near the loops' Jacobian is to losing rank) at the new state with the
        data `w`; below `level` the step is kept and ``run`` returns WATCH (runtime/integrators/
        adams_across.py steps across the singular configuration ahead). ``watch_level`` changes the
        level later (0: never)."""
        cdef const double[::1] wv = np.ascontiguousarray(w, dtype=np.float64).reshape(-1)
        if not (self.capsule and PyCapsule_IsValid(watch, b"dynamica.watch")):
            raise TypeError("watch must be a PyCapsule named 'dynamica.watch', with a capsule rhs")
        if wv.shape[0] == 0:
            raise ValueError("the watch's data w is empty")
        self.keep.extend([watch, wv])
        self.s.watch = <dyn_ad_watch_fn>PyCapsule_GetPointer(watch, b"dynamica.watch")
        self.s.watch_w = &wv[0]
        self.s.watch_level = level
        self.s.watch_prev = -1.0

    property watch_level:
        def __get__(self):
            return self.s.watch_level

        def __set__(self, double level):
            self.s.watch_level = level

    property projecting:
        """Whether the projection given at the start follows every accepted step (settable)."""
        def __get__(self):
            return self.s.proj != NULL

        def __set__(self, bint on):
            self.s.proj = self.proj_saved if on else NULL

    property max_step:
        """The longest step (the cap applied is STEP_CAP times it, as at the start)."""
        def __get__(self):
            return self.s.max_step / STEP_CAP if self.s.max_step < INFINITY else INFINITY

        def __set__(self, double max_step):
            if not (max_step > 0):
                raise ValueError("max_step must be positive")
            self.s.max_step = max_step * STEP_CAP if max_step < INFINITY else INFINITY

    def force(self, int order):
        """Test hook: raise the order by one per step up to ``order`` and keep it there; every
        step is accepted (step sizes are set through ``h``)."""
        if not 1 <= order <= DYN_AD_MAXORD:
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
        cdef dyn_ad_state *s = &self.s
        cdef int kold = s.kold
        phi = np.array(<double[:kold + 2, :s.n]> s.phi)
        psi = np.array([s.psi[i] for i in range(kold + 1)])
        return s.x, self.y, phi, psi, kold

    def solution(self, t_last=None):
        """The dense solution over all recorded steps (``dense=True``) as an :class:`AdamsSolution`;
        ``t_last`` (default: the current t, or t_bound after an end by extrapolation) ends it."""
        cdef dyn_ad_state *s = &self.s
        if not s.record:
            raise ValueError("the stepper was created without dense=True")
        rec = np.array(<double[:s.reclen]> s.rec) if s.reclen else np.zeros(0)
        off = np.array(<Py_ssize_t[:s.nrec]> s.recoff) if s.nrec else np.zeros(0, dtype=np.intp)
        if t_last is None:
            t_last = s.tb if s.done else s.x
        return AdamsSolution(self.t0, float(t_last), s.n, rec, off)

    def info(self):
        """Counters and, after a failure, what failed."""
        cdef dyn_ad_state *s = &self.s
        return {"nfev": s.nfev, "nsteps": s.nsteps, "nrejected": s.nrejected,
                "order_histogram": [s.hist[j] for j in range(DYN_AD_MAXORD + 1)], "nstiff": s.nstiff,
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
            return np.array([self.s.g[i] for i in range(DYN_AD_MAXORD + 2)])

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
            return [self.s.hist[j] for j in range(DYN_AD_MAXORD + 1)]

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
    if pv.shape[0] < kold + 2 or pv.shape[1] != n or sv.shape[0] < kold + 1 or not 0 <= kold <= DYN_AD_MAXORD:
        raise ValueError("inconsistent interpolant data")
    out = np.empty((m, n))
    cdef double[:, ::1] ov = out
    for i in range(m):
        dyn_ad_intrp_raw(n, kold, x, &yv[0], &pv[1, 0], &sv[0], tv[i], &ov[i, 0])
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
        dyn_ad_intrp_raw(n, kold, r[1], r + 3, r + 3 + n + kold + 1, r + 3 + n, t, out)

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
    if code == DYN_AD_OK:
        code, jout = st.run(tv, Y, jout, max_steps + 1)
    if code == DYN_AD_CALLBACK:
        err = st.pop_error()
        if err is not None:
            raise err
    info = st.info()
    info.update(status=code, message=STATUS_NAMES[code], n_out=jout)
    if code == DYN_AD_NONFINITE:
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
