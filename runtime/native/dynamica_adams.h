/* dynamica_adams.h: the variable-step, variable-order Adams PECE method of Shampine & Gordon
   (1975), STEP and INTRP, in plain C99: the one implementation behind the compiled integrator
   (runtime/native/adams_core.pyx wraps it for Python; docs/adams.md gives the formulas) and the
   Co-Simulation FMU (templates/export/dynamica_fmi2.h). No Python, no global mutable state: one
   dyn_ad_state per integration.

   dyn_ad_step_core is STEP (block 0 checks and start, block 1 coefficients, block 2 predictor and
   error estimates at orders k-2..k, block 3 failure handling, block 4 corrector, order selection
   with the k+1 estimate, step selection, round-off floor with STEP's compensated summation);
   dyn_ad_intrp_raw is INTRP; dyn_ad_step_one adds the weights, the projection of closed loops,
   the counters, DDES's stiffness test (with a stability check) and the dense record;
   dyn_ad_run is a DE-like driver filling outputs by INTRP.

   Arrays are 1-based as in STEP (row/index 0 unused); phi is a (17, n) row-major block.

   Use: dyn_ad_init(s, n, work, rtol, atol) (work: DYN_AD_WORK(n) doubles, zeroed by init; rtol,
   atol: n each, kept by pointer), set s->fn and s->par (or s->call and s->ctx), s->x, s->tb,
   s->h, s->max_step, s->max_steps and y (s->y, n values), then dyn_ad_begin(s) (f at the start)
   and dyn_ad_run or dyn_ad_step_one. */
#ifndef DYNAMICA_ADAMS_H
#define DYNAMICA_ADAMS_H

#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define DYN_AD_MAXORD 12
#define DYN_AD_STIFF_RUN 50
#define DYN_AD_STIFF_BLOCK 500
#define DYN_AD_STIFF_ORDER 4
#define DYN_AD_STIFF_GAP 6
/* doubles of work space of an integration of n equations: 7 rows and the 17 rows of phi */
#define DYN_AD_WORK(n) ((n) * (7 + 17))

/* status codes (runtime/native/adams_core.pyx exports them to Python) */
enum {
    DYN_AD_OK = 0, DYN_AD_CRASH_TOL = 1, DYN_AD_CRASH_STEP = 2, DYN_AD_NONFINITE = 3, DYN_AD_CALLBACK = 4,
    DYN_AD_MAXSTEPS = 5, DYN_AD_WTZERO = 6, DYN_AD_STIFF = 7, DYN_AD_NOMEM = 8, DYN_AD_WATCH = 9
};

#define DYN_AD_U DBL_EPSILON
#define DYN_AD_TWOU (2.0 * DBL_EPSILON)
#define DYN_AD_FOURU (4.0 * DBL_EPSILON)
/* min and max as Cython's (the first argument unless the second is smaller / larger) */
#define DYN_AD_MIN(a, b) ((b) < (a) ? (b) : (a))
#define DYN_AD_MAX(a, b) ((b) > (a) ? (b) : (a))
/* the watch's look-ahead in steps (dyn_ad_watched); 2 moved a hand-over of the A02 N four-bar (N = 1,
   rtol 1e-12, 20 s: 1.05e-9 m against 3.3e-10, measured before adams_across's `_few`), 1 leaves its runs
   at rtol 1e-10 and 1e-12 as they were */
#define DYN_AD_WATCH_AHEAD 1.0
/* A step counts as stability-limited when h rho >= DYN_AD_STIFF_FRAC B_k (docs/adams.md, stiffness). */
#define DYN_AD_STIFF_FRAC 0.5

/* the right-hand side: a compiled function of (t, y, p), or a callback with a context that returns
   nonzero on an error of its own (the Python callable of adams_core.pyx) */
typedef void (*dyn_ad_rhs_fn)(double t, const double *y, const double *p, double *ydot);
typedef int (*dyn_ad_call_fn)(void *ctx, double t, const double *y, double *ydot);
/* closed loops (templates/native/dynamica_constraints.h): y onto the constraint manifolds after a step */
typedef int (*dyn_ad_project_fn)(double t, double *y, const double *p, double tol);
/* closed loops: how near their Jacobian is to losing rank at (t, y) (dyn_con_measure), with w its data */
typedef double (*dyn_ad_watch_fn)(double t, const double *y, const double *p, const double *w);

typedef struct {
    int n;
    /* solution, work rows */
    double *y;
    double *ynew;
    double *pp;          /* predicted value */
    double *yp;          /* derivative at the end of the last step / at the prediction */
    double *psum;
    double *temp4;
    double *rwt;
    double *phi;         /* 17 rows of n */
    double psi[DYN_AD_MAXORD + 1];
    double alpha[DYN_AD_MAXORD + 1];
    double beta[DYN_AD_MAXORD + 1];
    double sig[DYN_AD_MAXORD + 2];
    double g[DYN_AD_MAXORD + 2];
    double w[DYN_AD_MAXORD + 2];
    double x;
    double t_old;
    double h;
    double hold;
    double tb;
    double max_step;     /* the cap applied: DYN_AD_STEP_CAP times the max_step asked for */
    double eps_factor;
    int k;
    int kold;
    int ns;
    int phase1;
    int nornd;
    int start;
    int h_given;
    int force_k;         /* test hook: > 0 forces the order ramp up to force_k, accepts every step */
    int done;            /* run: ended by extrapolation within 4u|t| of tb (x unchanged) */
    long nfev;
    long nrejected;
    long nsteps;
    long max_steps;
    long hist[DYN_AD_MAXORD + 2];
    /* stiffness test (DDES's, with the stability check): h |lambda| of the last step, run counters */
    double hrho;
    int nstab;
    int nfree;
    int stiff;
    int ksteps;
    long nstiff;
    double stiff_t;
    /* tolerances (per component) */
    const double *rtol;
    const double *atol;
    /* right-hand side: fn (with par), else call (with ctx) */
    dyn_ad_rhs_fn fn;
    dyn_ad_call_fn call;
    void *ctx;
    dyn_ad_project_fn proj;   /* NULL, or called on y after every accepted step (drift of closed loops) */
    double proj_tol;
    dyn_ad_watch_fn watch;    /* NULL, or after every accepted step: below watch_level the run stops (WATCH) */
    const double *watch_w;
    double watch_level;
    double watch_prev;        /* the watch after the step before (< 0: none) */
    const double *par;
    /* dense record: per accepted step [t_old, x, kold, y(n), psi(0..kold), phi rows 1..kold+1] */
    int record;
    double *rec;
    ptrdiff_t reclen;
    ptrdiff_t reccap;
    ptrdiff_t *recoff;
    ptrdiff_t nrec;
    ptrdiff_t offcap;
    /* failure report */
    double bad_t;
    double bad_h;
    double bad_val;
    int bad_i;
    int nbad;
    /* tables, 1-based: gstr[i] = |gamma*_i| (exact, runtime/integrators/adams.py gamma_star), two[i] = 2**i */
    double gstr[DYN_AD_MAXORD + 2];
    double two[DYN_AD_MAXORD + 2];
} dyn_ad_state;

/* Length of the real stability interval (-B_k, 0) of the PECE pair of order k (Adams-Bashforth
   of order k predicting, the (k+1)-point Adams-Moulton corrector, constant steps); index 0
   unused. tests/runtime/integrators/test_adams_nonsmooth.py recomputes them from the
   characteristic polynomial. */
static inline double dyn_ad_stab_b(int k)
{
    static const double b[DYN_AD_STIFF_ORDER + 1] = {0.0, 2.0, 2.4, 1.934, 1.411};
    return b[k];
}

/* max_step (and a given first_step) are applied as DYN_AD_STEP_CAP times their value: a mesh of
   capped steps does not land on the round multiples of max_step where a periodic forcing of that
   period looks constant (docs/adams.md, non-smooth right-hand sides). */
static inline double dyn_ad_step_cap(void)
{
    return 0.9 + 0.01 * (pow(5.0, 0.5) - 2.0);
}

static inline void dyn_ad_tables(double *gstr, double *two)
{
    double gs[DYN_AD_MAXORD + 2];
    double acc;
    int i, j;
    gs[0] = 1.0;
    for (j = 1; j < DYN_AD_MAXORD + 2; ++j) {
        acc = 0.0;
        for (i = 0; i < j; ++i)
            acc = acc + gs[i] / (j + 1 - i);
        gs[j] = -acc;
    }
    for (j = 0; j < DYN_AD_MAXORD + 2; ++j) {
        gstr[j] = fabs(gs[j]);
        two[j] = pow(2.0, j);
    }
    gstr[0] = 0.0;
}

/* Order 1, phase 1 (the order may rise), rounding control on, no previous step; `start` says
   whether the next step still has to choose its first step size. */
static inline void dyn_ad_order_one(dyn_ad_state *s, int start)
{
    s->hold = 0.0;
    s->k = 1;
    s->kold = 0;
    s->start = start;
    s->phase1 = 1;
    s->nornd = 1;
}

/* A fresh state of n equations over `work` (DYN_AD_WORK(n) doubles, zeroed here): order 1,
   at the start; the caller sets the right-hand side, x, tb, h, max_step, max_steps and y. */
static inline void dyn_ad_init(dyn_ad_state *s, int n, double *work, const double *rtol, const double *atol)
{
    memset(s, 0, sizeof *s);
    memset(work, 0, sizeof(double) * (size_t)DYN_AD_WORK(n));
    s->n = n;
    s->y = work;
    s->ynew = work + n;
    s->pp = work + 2 * n;
    s->yp = work + 3 * n;
    s->psum = work + 4 * n;
    s->temp4 = work + 5 * n;
    s->rwt = work + 6 * n;
    s->phi = work + 7 * n;
    s->rtol = rtol;
    s->atol = atol;
    s->max_step = HUGE_VAL;
    s->max_steps = 500000;
    s->watch_prev = -1.0;
    dyn_ad_order_one(s, 1);
    s->eps_factor = 1.0;
    dyn_ad_tables(s->gstr, s->two);
}

/* RHS with immediate NaN/inf detection (records t, h, first bad component). */
static inline int dyn_ad_feval(dyn_ad_state *s, double t, double *yin, double *out, double h)
{
    int i, nb = 0;
    s->nfev += 1;
    if (s->fn != NULL)
        s->fn(t, yin, s->par, out);
    else if (s->call(s->ctx, t, yin, out) != 0)
        return DYN_AD_CALLBACK;
    for (i = 0; i < s->n; ++i) {
        if (!isfinite(out[i])) {
            if (nb == 0) {
                s->bad_i = i;
                s->bad_val = out[i];
            }
            nb += 1;
        }
    }
    if (nb) {
        s->bad_t = t;
        s->bad_h = h;
        s->nbad = nb;
        return DYN_AD_NONFINITE;
    }
    return DYN_AD_OK;
}

static inline double dyn_ad_wnorm(const double *a, const double *rwt, int n)
{
    double acc = 0.0, v;
    int l;
    for (l = 0; l < n; ++l) {
        v = a[l] * rwt[l];
        acc += v * v;
    }
    return sqrt(acc);
}

/* STEP block 1 for k >= ns: psi, alpha, beta, sigma for this step and g(1..k+1).

   psi(i) = x_{n+1} - x_{n+1-i}, alpha(i) = h / psi(i),
   beta(i) = prod_{j<i} psi_j(n+1) / psi_j(n)  (phi*_i = beta_i phi_i),
   sig(i+1) = i alpha(i) sig(i),
   g(i) = g_{i,1} with g_{1,q} = 1/q, g_{2,q} = 1/(q(q+1)), g_{i,q} = g_{i-1,q} - alpha_{i-1} g_{i-1,q+1}.

   Entries with index < ns are those of constant steps and are kept from earlier steps. STEP
   updates g incrementally through its array v; here the triangle g_{i,q} is rebuilt from the
   alphas (at most 66 multiply-adds): the same numbers, no state to keep consistent when the
   order changes. */
static inline void dyn_ad_coefficients(int k, int ns, double h, double *psi, double *alpha, double *beta,
                                       double *sig, double *g, double *w)
{
    int i, q;
    double temp1, temp2, a;
    beta[ns] = 1.0;
    alpha[ns] = 1.0 / ns;
    temp1 = h * ns;
    sig[ns + 1] = 1.0;
    for (i = ns + 1; i < k + 1; ++i) {
        temp2 = psi[i - 1];
        psi[i - 1] = temp1;
        beta[i] = beta[i - 1] * psi[i - 1] / temp2;
        temp1 = temp2 + h;
        alpha[i] = h / temp1;
        sig[i + 1] = i * alpha[i] * sig[i];
    }
    psi[k] = temp1;
    g[1] = 1.0;
    g[2] = 0.5;
    for (q = 1; q < k + 1; ++q)
        w[q] = 1.0 / (q * (q + 1));
    for (i = 3; i < k + 2; ++i) {
        a = alpha[i - 1];
        for (q = 1; q < k + 3 - i; ++q)
            w[q] -= a * w[q + 1];
        g[i] = w[1];
    }
}

/* INTRP: y(xout) from the Adams interpolant of a step ending at x with value y.

   phi1 points at row 1 of the modified divided differences (row i at phi1 + (i-1) n,
   i = 1..kold+1), psi is 1-based (psi[1..kold]). The derivative interpolates f at
   x, x - psi_1, ..., x - psi_kold; y(xout) = y + hi sum_i g_i(hi) phi_i with hi = xout - x. */
static inline void dyn_ad_intrp_raw(int n, int kold, double x, const double *y, const double *phi1,
                                    const double *psi, double xout, double *out)
{
    int ki = kold + 1, i, j, l;
    double hi = xout - x, term = 0.0, gamma, eta, psijm1, acc;
    double w[DYN_AD_MAXORD + 3];
    double gi[DYN_AD_MAXORD + 3];
    for (i = 1; i < ki + 1; ++i)
        w[i] = 1.0 / i;
    gi[1] = 1.0;
    for (j = 2; j < ki + 1; ++j) {
        psijm1 = psi[j - 1];
        gamma = (hi + term) / psijm1;
        eta = hi / psijm1;
        for (i = 1; i < ki + 2 - j; ++i)
            w[i] = gamma * w[i] - eta * w[i + 1];
        gi[j] = w[1];
        term = psijm1;
    }
    for (l = 0; l < n; ++l) {
        acc = 0.0;
        for (i = 1; i < ki + 1; ++i)
            acc += phi1[(i - 1) * n + l] * gi[i];
        out[l] = y[l] + hi * acc;
    }
}

static inline void dyn_ad_intrp(const dyn_ad_state *s, double xout, double *out)
{
    dyn_ad_intrp_raw(s->n, s->kold, s->x, s->y, s->phi + s->n, s->psi, xout, out);
}

/* Bound the first step by the curvature of the solution (one extra evaluation).

   STEP's first step, 0.25 / sqrt(||f0||), sees only f0: where f0 = 0 it takes the whole
   interval (or max_step), and a forcing that is zero at both ends of it looks absent. As in
   Hairer, Norsett & Wanner I (II.4) and Gladwell, Shampine & Brankin 1987: probe with
   h0 = 0.01 ||y0|| / ||f0|| (1e-6 when either is below 1e-5), estimate
   ||y''|| = ||f(x0 + h0, y0 + h0 f0) - f0|| / h0, and take at most 100 h0 and
   sqrt(0.5 / ||y''||) (the step whose order-1 error estimate, h^2/2 ||y''||, is 1/4). */
static inline int dyn_ad_start_bound(dyn_ad_state *s, double h, double sn, double *absh)
{
    int n = s->n, l, code;
    double d0 = dyn_ad_wnorm(s->y, s->rwt, n), h0, d2, acc, v;
    double hmin = 16.0 * DYN_AD_FOURU * fabs(s->x);
    h0 = (d0 < 1e-5 || sn < 1e-5) ? 1e-6 : 0.01 * d0 / sn;
    h0 = DYN_AD_MIN(DYN_AD_MAX(h0, hmin), fabs(h));
    for (l = 0; l < n; ++l)
        s->pp[l] = s->y[l] + copysign(h0, h) * s->yp[l];
    code = dyn_ad_feval(s, s->x + copysign(h0, h), s->pp, s->temp4, h0);
    if (code != DYN_AD_OK)
        return code;
    acc = 0.0;
    for (l = 0; l < n; ++l) {
        v = (s->temp4[l] - s->yp[l]) * s->rwt[l];
        acc += v * v;
    }
    d2 = sqrt(acc) / h0;
    if (d2 > 0.0)
        absh[0] = DYN_AD_MIN(absh[0], sqrt(0.5 / d2));
    absh[0] = DYN_AD_MIN(absh[0], 100.0 * h0);
    return DYN_AD_OK;
}

/* One call of STEP: a successful step from s->x (retrying after failures).

   s->rwt must hold 1 / (rtol |y| + atol). Returns DYN_AD_OK or an error code; block numbers
   follow Shampine & Gordon (and runtime/integrators/adams.py Adams._step_core). */
static inline int dyn_ad_step_core(dyn_ad_state *s)
{
    const double *GSTR = s->gstr, *TWO = s->two;
    int n = s->n, l, i, code, ifail, knew, action;
    int k, kold, ns, phase1, nornd, kp1, kp2, km1, km2, nsp1;
    double *phi = s->phi;
    double *psi = s->psi;
    double *beta = s->beta;
    double *sig = s->sig;
    double *g = s->g;
    double *y = s->y;
    double *rwt = s->rwt;
    double *pp = s->pp;
    double *yp = s->yp;
    double *psum = s->psum;
    double *temp4 = s->temp4;
    double *ynew = s->ynew;
    double *swap;
    double x = s->x, h = s->h, tb = s->tb, xnew, xold, hold;
    double eps = 1.0, p5eps, round_, sn, absh, acc, v, tau, rho, dfs;
    double erkm2, erkm1, erk, erkp1, err, temp1, temp2, temp5, hnew, r;

    /* Block 0: step size and tolerance checks, start. */
    if (fabs(h) < DYN_AD_FOURU * fabs(x)) {
        s->h = copysign(DYN_AD_FOURU * fabs(x), h);
        s->eps_factor = 1.0;
        return DYN_AD_CRASH_STEP;
    }
    p5eps = 0.5 * eps;
    round_ = DYN_AD_TWOU * dyn_ad_wnorm(y, rwt, n);
    if (p5eps < round_) {
        s->eps_factor = 2.0 * round_ * (1.0 + DYN_AD_FOURU);
        return DYN_AD_CRASH_TOL;
    }
    g[1] = 1.0;
    g[2] = 0.5;
    sig[1] = 1.0;
    if (s->start) {
        for (l = 0; l < n; ++l) {
            phi[n + l] = yp[l];
            phi[2 * n + l] = 0.0;
        }
        sn = dyn_ad_wnorm(yp, rwt, n);
        absh = fabs(h);
        if (!(s->force_k || s->h_given)) {
            if (eps < 16.0 * sn * h * h)
                absh = 0.25 * sqrt(eps / sn);
            code = dyn_ad_start_bound(s, h, sn, &absh);
            if (code != DYN_AD_OK)
                return code;
        }
        h = copysign(DYN_AD_MAX(absh, DYN_AD_FOURU * fabs(x)), h);
        dyn_ad_order_one(s, 0);
        if (p5eps <= 100.0 * round_) {
            s->nornd = 0;
            for (l = 0; l < n; ++l)
                phi[15 * n + l] = 0.0;
        }
    }
    k = s->k;
    kold = s->kold;
    ns = s->ns;
    hold = s->hold;
    phase1 = s->phase1;
    nornd = s->nornd;
    ifail = 0;

    for (;;) {
        /* Never step beyond t_bound (DE's tstop) nor beyond max_step. */
        if (fabs(h) > s->max_step)
            h = copysign(s->max_step, h);
        if (fabs(h) >= fabs(tb - x)) {
            h = tb - x;
            xnew = tb;
        } else {
            xnew = x + h;
        }

        /* Block 1: coefficients. */
        kp1 = k + 1;
        kp2 = k + 2;
        km1 = k - 1;
        km2 = k - 2;
        if (h != hold)
            ns = 0;
        if (ns <= kold)
            ns += 1;
        nsp1 = ns + 1;
        if (k >= ns)
            dyn_ad_coefficients(k, ns, h, psi, s->alpha, beta, sig, g, s->w);

        /* Block 2: predict, evaluate, estimate. */
        if (k >= nsp1)
            for (i = nsp1; i < kp1; ++i)
                for (l = 0; l < n; ++l)
                    phi[i * n + l] *= beta[i];
        for (l = 0; l < n; ++l) {
            phi[kp2 * n + l] = phi[kp1 * n + l];
            phi[kp1 * n + l] = 0.0;
        }
        for (l = 0; l < n; ++l) {
            acc = 0.0;
            for (i = 1; i < kp1; ++i)
                acc += g[i] * phi[i * n + l];
            psum[l] = acc;
        }
        for (i = k - 1; i > 0; --i)
            for (l = 0; l < n; ++l)
                phi[i * n + l] = phi[(i + 1) * n + l] + phi[i * n + l];
        if (nornd) {
            for (l = 0; l < n; ++l)
                pp[l] = y[l] + h * psum[l];
        } else {
            for (l = 0; l < n; ++l) {
                tau = h * psum[l] - phi[15 * n + l];
                pp[l] = y[l] + tau;
                phi[16 * n + l] = (pp[l] - y[l]) - tau;
            }
        }
        xold = x;
        x = xnew;
        absh = fabs(h);
        code = dyn_ad_feval(s, x, pp, yp, h);
        if (code != DYN_AD_OK)
            return code;

        for (l = 0; l < n; ++l)
            temp4[l] = yp[l] - phi[n + l];
        erkm2 = 0.0;
        erkm1 = 0.0;
        if (km2 > 0) {
            acc = 0.0;
            for (l = 0; l < n; ++l) {
                v = (phi[km1 * n + l] + temp4[l]) * rwt[l];
                acc += v * v;
            }
            erkm2 = absh * sig[km1] * GSTR[km2] * sqrt(acc);
        }
        if (km2 >= 0) {
            acc = 0.0;
            for (l = 0; l < n; ++l) {
                v = (phi[k * n + l] + temp4[l]) * rwt[l];
                acc += v * v;
            }
            erkm1 = absh * sig[k] * GSTR[km1] * sqrt(acc);
        }
        temp5 = absh * dyn_ad_wnorm(temp4, rwt, n);
        err = temp5 * (g[k] - g[kp1]);
        erk = temp5 * sig[kp1] * GSTR[k];
        knew = k;
        if (km2 > 0) {
            if (DYN_AD_MAX(erkm1, erkm2) <= erk)
                knew = km1;
        } else if (km2 == 0) {
            if (erkm1 <= 0.5 * erk)
                knew = km1;
        }

        if (err <= eps || s->force_k)
            break;

        /* Block 3: unsuccessful step; restore x, phi, psi; halve (order 1 after 3 failures). */
        s->nrejected += 1;
        phase1 = 0;
        x = xold;
        for (i = 1; i < kp1; ++i)
            for (l = 0; l < n; ++l)
                phi[i * n + l] = (phi[i * n + l] - phi[(i + 1) * n + l]) / beta[i];
        for (i = 2; i < kp1; ++i)
            psi[i - 1] = psi[i] - h;
        ifail += 1;
        temp2 = 0.5;
        if (ifail > 3 && p5eps < 0.25 * erk)
            temp2 = sqrt(p5eps / erk);
        if (ifail >= 3)
            knew = 1;
        h = temp2 * h;
        k = knew;
        if (fabs(h) < DYN_AD_FOURU * fabs(x)) {
            s->h = copysign(DYN_AD_FOURU * fabs(x), h);
            s->eps_factor = 2.0;
            s->k = k;
            s->ns = ns;
            s->phase1 = phase1;
            return DYN_AD_CRASH_STEP;
        }
    }

    /* Block 4: successful step; correct, evaluate, update differences. */
    kold = k;
    hold = h;
    temp1 = h * g[kp1];
    if (nornd) {
        for (l = 0; l < n; ++l)
            ynew[l] = pp[l] + temp1 * (yp[l] - phi[n + l]);
    } else {
        for (l = 0; l < n; ++l) {
            rho = temp1 * (yp[l] - phi[n + l]) - phi[16 * n + l];
            ynew[l] = pp[l] + rho;
            phi[15 * n + l] = (ynew[l] - pp[l]) - rho;
        }
    }
    code = dyn_ad_feval(s, x, ynew, yp, h);
    if (code != DYN_AD_OK)
        return code;
    /* f was evaluated twice at x, at the prediction and at the correction: the ratio of the
       differences estimates |lambda| of the Jacobian in the direction of the correction (a jump
       of f in t cancels). temp4 = f^p - phi^p_1, so f_{n+1} - f^p = (f_{n+1} - phi^p_1) - temp4. */
    acc = 0.0;
    dfs = 0.0;
    for (l = 0; l < n; ++l) {
        v = (ynew[l] - pp[l]) * rwt[l];
        acc += v * v;
        v = (yp[l] - phi[n + l] - temp4[l]) * rwt[l];
        dfs += v * v;
    }
    s->hrho = acc > 0.0 ? absh * sqrt(dfs / acc) : 0.0;
    for (l = 0; l < n; ++l) {
        phi[kp1 * n + l] = yp[l] - phi[n + l];
        phi[kp2 * n + l] = phi[kp1 * n + l] - phi[kp2 * n + l];
    }
    for (i = 1; i < kp1; ++i)
        for (l = 0; l < n; ++l)
            phi[i * n + l] += phi[kp1 * n + l];

    /* Order for the next step (0 keep, 1 raise, -1 lower). */
    erkp1 = 0.0;
    if (knew == km1 || k == DYN_AD_MAXORD)
        phase1 = 0;
    if (s->force_k) {
        k = DYN_AD_MIN(kp1, s->force_k);
        action = 0;
    } else if (phase1) {
        action = 1;
    } else if (knew == km1) {
        action = -1;
    } else if (kp1 > ns) {
        action = 0;
    } else {
        erkp1 = absh * GSTR[kp1] * dyn_ad_wnorm(phi + kp2 * n, rwt, n);
        if (k > 1) {
            if (erkm1 <= DYN_AD_MIN(erk, erkp1))
                action = -1;
            else if (erkp1 >= erk || k == DYN_AD_MAXORD)
                action = 0;
            else
                action = 1;
        } else {
            action = erkp1 >= 0.5 * erk ? 0 : 1;
        }
    }
    if (action == 1) {
        k = kp1;
        erk = erkp1;
    } else if (action == -1) {
        k = km1;
        erk = erkm1;
    }

    /* Step size for the next step: double, keep, or reduce to [0.5, 0.9] h. */
    hnew = h + h;
    if (!phase1 && !s->force_k && p5eps < erk * TWO[k + 1]) {
        hnew = h;
        if (p5eps < erk) {
            r = pow(p5eps / erk, 1.0 / (k + 1));
            hnew = absh * DYN_AD_MAX(0.5, DYN_AD_MIN(0.9, r));
            hnew = copysign(DYN_AD_MAX(hnew, DYN_AD_FOURU * fabs(x)), h);
        }
    }

    s->t_old = xold;
    s->x = x;
    swap = s->y;
    s->y = s->ynew;
    s->ynew = swap;
    s->h = hnew;
    s->hold = hold;
    s->k = k;
    s->kold = kold;
    s->ns = ns;
    s->phase1 = phase1;
    return DYN_AD_OK;
}

/* Append the interpolant of the last step to the dense record. */
static inline int dyn_ad_record_step(dyn_ad_state *s)
{
    int n = s->n, kold = s->kold, i;
    ptrdiff_t size = 3 + n + (kold + 1) + (ptrdiff_t)(kold + 1) * n, cap;
    double *r;
    ptrdiff_t *o;
    if (s->reclen + size > s->reccap) {
        cap = DYN_AD_MAX(2 * s->reccap, s->reclen + size + 1024);
        r = (double *)realloc(s->rec, sizeof(double) * (size_t)cap);
        if (r == NULL)
            return DYN_AD_NOMEM;
        s->rec = r;
        s->reccap = cap;
    }
    if (s->nrec + 2 > s->offcap) {
        cap = DYN_AD_MAX(2 * s->offcap, 256);
        o = (ptrdiff_t *)realloc(s->recoff, sizeof(ptrdiff_t) * (size_t)cap);
        if (o == NULL)
            return DYN_AD_NOMEM;
        s->recoff = o;
        s->offcap = cap;
    }
    r = s->rec + s->reclen;
    r[0] = s->t_old;
    r[1] = s->x;
    r[2] = kold;
    memcpy(r + 3, s->y, sizeof(double) * (size_t)n);
    for (i = 0; i < kold + 1; ++i)
        r[3 + n + i] = s->psi[i];
    memcpy(r + 3 + n + kold + 1, s->phi + n, sizeof(double) * (size_t)n * (size_t)(kold + 1));
    s->recoff[s->nrec] = s->reclen;
    s->nrec += 1;
    s->reclen += size;
    return DYN_AD_OK;
}

/* The watch of closed loops after an accepted step: below its level, or falling so fast that its
   straight line through the last two steps reaches zero (the crossing) within DYN_AD_WATCH_AHEAD next
   steps: a window around a crossing narrower than a step (the N four-bar started 0.03 rad from the
   horizontal has ones 0.001 ... 0.003 rad wide, its steps were up to 0.019 rad) is not jumped. */
static inline int dyn_ad_watched(dyn_ad_state *s)
{
    double w = s->watch(s->x, s->y, s->par, s->watch_w), prev = s->watch_prev;
    double hl = fabs(s->x - s->t_old), hn = DYN_AD_MIN(fabs(s->h), s->max_step);
    s->watch_prev = w;
    if (w < s->watch_level)
        return 1;
    return s->watch_level > 0.0 && prev > w && hl > 0.0 && w < DYN_AD_WATCH_AHEAD * (prev - w) * hn / hl;
}

/* Weights, one STEP, the projection (closed loops), counters, DDES stiffness test, dense record.
   Returns DYN_AD_OK, DYN_AD_STIFF (step accepted; the stiffness test fired on it), DYN_AD_WATCH
   (step accepted; the watch fell below its level) or an error code. */
static inline int dyn_ad_step_one(dyn_ad_state *s)
{
    int n = s->n, l, code, watched;
    double wt;
    for (l = 0; l < n; ++l) {
        wt = s->rtol[l] * fabs(s->y[l]) + s->atol[l];
        if (wt <= 0) {
            s->bad_i = l;
            s->bad_t = s->x;
            return DYN_AD_WTZERO;
        }
        s->rwt[l] = 1.0 / wt;
    }
    code = dyn_ad_step_core(s);
    if (code != DYN_AD_OK)
        return code;
    if (s->proj != NULL)
        s->proj(s->x, s->y, s->par, s->proj_tol);
    watched = s->watch != NULL && dyn_ad_watched(s);
    s->nsteps += 1;
    s->hist[s->kold] += 1;
    if (s->record) {
        code = dyn_ad_record_step(s);
        if (code != DYN_AD_OK)
            return code;
    }
    /* DDES: a run of 50 steps at order <= 4 within a block of 500 steps, where a step counts
       only if it is also limited by stability, h |lambda| >= STIFF_FRAC B_k (low order after a
       discontinuity comes with small steps and does not count); a run survives up to
       STIFF_GAP - 1 steps that do not count (Hairer's rule in DOPRI5). */
    if (s->kold <= DYN_AD_STIFF_ORDER && s->hrho >= DYN_AD_STIFF_FRAC * dyn_ad_stab_b(s->kold)) {
        s->nstab += 1;
        s->nfree = 0;
        if (s->nstab >= DYN_AD_STIFF_RUN && !s->stiff) {
            s->stiff = 1;
            if (s->nstiff == 0)
                s->stiff_t = s->x;
        }
    } else {
        s->nfree += 1;
        if (s->nfree >= DYN_AD_STIFF_GAP)
            s->nstab = 0;
    }
    s->ksteps += 1;
    if (s->ksteps >= DYN_AD_STIFF_BLOCK) {
        s->ksteps = 0;
        if (s->stiff) {
            s->stiff = 0;
            s->nstab = 0;
            s->nstiff += 1;
            return DYN_AD_STIFF;
        }
    }
    return watched ? DYN_AD_WATCH : DYN_AD_OK;
}

/* DE-like driver: at most nmax steps towards s->tb, filling Y[j * n + l] = y_l(tout[j]) for the
   m output times tout from *jout on (*jout: the number filled on return). DYN_AD_STIFF is
   returned (after the step) only when stiff_raise; DYN_AD_WATCH (after the step, its outputs filled)
   when the watch of closed loops fell below its level. */
static inline int dyn_ad_run(dyn_ad_state *s, const double *tout, int m, double *Y, int *jout, long nmax,
                             int stiff_raise)
{
    int n = s->n, code, j = jout[0];
    long taken = 0;
    double d = s->tb >= s->x ? 1.0 : -1.0;
    while (d * (s->x - s->tb) < 0 && !s->done && taken < nmax) {
        if (fabs(s->tb - s->x) <= DYN_AD_FOURU * fabs(s->x)) {
            /* DE: too close to the end for a step: extrapolate with the interpolant. */
            while (j < m && d * (tout[j] - s->tb) <= 0) {
                dyn_ad_intrp(s, tout[j], Y + (ptrdiff_t)j * n);
                j += 1;
            }
            s->done = 1;
            break;
        }
        if (s->nsteps >= s->max_steps) {
            jout[0] = j;
            return DYN_AD_MAXSTEPS;
        }
        code = dyn_ad_step_one(s);
        taken += 1;
        if (code == DYN_AD_OK || code == DYN_AD_STIFF || code == DYN_AD_WATCH) {
            while (j < m && d * (tout[j] - s->x) <= 0) {
                dyn_ad_intrp(s, tout[j], Y + (ptrdiff_t)j * n);
                j += 1;
            }
        }
        if (code == DYN_AD_STIFF && !stiff_raise)
            code = DYN_AD_OK;
        if (code != DYN_AD_OK) {
            jout[0] = j;
            return code;
        }
    }
    jout[0] = j;
    return DYN_AD_OK;
}

/* f at the current point (x, y) into yp and phi row 1 (so that the interpolant is defined
   before the first step); returns the status of the evaluation. */
static inline int dyn_ad_begin(dyn_ad_state *s)
{
    int code = dyn_ad_feval(s, s->x, s->y, s->yp, s->h), l;
    if (code == DYN_AD_OK)
        for (l = 0; l < s->n; ++l)
            s->phi[s->n + l] = s->yp[l];
    return code;
}

/* Start again at order 1 from (t, y) (y: NULL keeps the current one) towards tb, in the direction
   of tb; the counters go on. Returns the status of the evaluation of f at (t, y). */
static inline int dyn_ad_resume(dyn_ad_state *s, double t, const double *y, double tb)
{
    int l;
    if (y != NULL)
        for (l = 0; l < s->n; ++l)
            s->y[l] = y[l];
    s->x = t;
    s->t_old = t;
    s->tb = tb;
    s->h = copysign(DYN_AD_MIN(DYN_AD_MAX(fabs(tb - t), DYN_AD_FOURU * fabs(t)), s->max_step), tb - t);
    s->h_given = 0;
    s->start = 1;
    s->kold = 0;
    s->done = 0;
    return dyn_ad_begin(s);
}

#endif
