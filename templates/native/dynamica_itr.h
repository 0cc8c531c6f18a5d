/* Hand-written solver of the iterative forms ITR-M / ITR-G (dynamica), dissertation 2.3.

   Solves M x = Q (x = q'') given
     b  = Q                                   (generated kernel `itr_terms`, once per call)
     mx(ws, x) = M x                          (generated kernel `itr_mx`, once per iteration;
                                               ITR-M: sparse product with M (2.53),
                                               ITR-G: recursions (2.54)-(2.55), M never formed)
   so that the residual (antigradient) is r(x) = b - M x.  The inverse estimate H_k lives in a
   `dyn_itr_state` that the generated module keeps in static storage, so every call starts
   from the inverse left by the previous one: that is the point of the method (2.3.1).

   One call (dyn_itr_solve):
     x_0 = H b, r_{-1} = b, r_0 = b - M x_0                                        (2.30)
     check of (2.43) (to which the step-size conditions (2.51)-(2.52) reduce):
         rho_0 = |r_0| / |b| is a lower bound of ||E - M H_0||; if rho_0 >= rho_max
         the condition is violated: (2.33) instead of (2.29), as 2.3.3 prescribes
     k = 0, 1, ...:                                                                (2.29)
         stop if r_k^T r_k < eps^2, eps = eps_abs + eps_rel |b|                     (2.28)
         s_k = H_k r_k; stop (x += s_k) if |s_k| <= rtol |x_k| + atol  (s_k is the
               Newton correction with the current inverse: an estimate of x* - x_k)
         y_k = r_{k-1} - r_k
         H_{k+1} = H_k + s_k s_k^T / (s_k^T y_k)
         x_{k+1} = x_k + (1 + s_k^T r_k / s_k^T y_k) s_k
         r_{k+1} = b - M x_{k+1}
     if (2.43) fails, or (2.29) breaks down (|s^T y| <= 1e-8 |s| |y|), overflows or needs more
     than max_iter iterations (default n + 1, the finite bound of 2.3.2): the Powell-Broyden
     method (2.33) from the best point so far (x_0, 0 or an iterate of (2.29)) with the same H
     (exact line search on f = x^T M x / 2 - x^T b, so |x - x*|_M decreases monotonically), at
     most max_iter_pb iterations (default n + 1); if that fails too: direct solve.
   Defaults: rtol = atol = 1e-12, eps_abs = 0, eps_rel = 1e-15, rho_max = 1, max_iter =
   max_iter_pb = n + 1 (all settable at run time: the module's itr_settings()).
   Direct solve (dyn_itr_direct, also the first call and after a reset): M = L^T D L (L unit
   lower, from the last row up as (2.23), root-free: an indefinite M with nonzero pivots is
   solved too), x by substitution, and H = M^{-1} = L^{-1} D^{-1} L^{-T} in place, which
   restarts (2.29). (2.29) itself needs no definiteness; (2.33) minimizes x^T M x / 2 - x^T b
   and stops where M is not positive along its direction, which leads to the direct solve.

   Iteration counts: `iterations` counts residual evaluations after r_0 (the K of (4.4)-(4.5)),
   of (2.29) and (2.33) alike.  Not thread-safe: the state is per module, shared by every
   caller (one integration at a time per compiled module).  Every loop here is over n, so the
   code is the same for every model; n is a run-time value. */
#ifndef DYNAMICA_ITR_H
#define DYNAMICA_ITR_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef void (*dyn_itr_mx_fn)(const double *ws, const double *x, double *mx);

enum { DYN_ITR_QN = 0, DYN_ITR_PB = 1, DYN_ITR_DIRECT = 2, DYN_ITR_INIT = 3, DYN_ITR_FAILED = 4 };

/* number of settings / statistics exchanged with the Python wrappers */
#define DYN_ITR_NSET 7
#define DYN_ITR_NSTAT 14
/* |s^T y| <= DYN_ITR_BREAKDOWN |s| |y|: the rank-one update is undefined (the usual SR1 guard) */
#define DYN_ITR_BREAKDOWN 1e-8
/* doubles of work space dyn_itr_solve needs */
#define DYN_ITR_WORK(n) (8 * (n))

typedef struct {
    int n;
    double *H;                  /* n*n, row-major, symmetric: the persistent inverse estimate */
    int have_h;                 /* H holds an inverse estimate (else the next call solves directly) */
    /* settings */
    double rtol, atol;          /* correction test |s| <= rtol |x| + atol */
    double eps_abs, eps_rel;    /* (2.28): r^T r < (eps_abs + eps_rel |b|)^2 */
    double rho_max;             /* (2.43) check: (2.33) instead of (2.29) when |r_0| / |b| >= rho_max */
    int max_iter;               /* iterations of (2.29) per call before (2.33); < 0: n + 1 */
    int max_iter_pb;            /* iterations of (2.33) before the direct solve; < 0: n + 1 */
    /* statistics */
    long calls, iterations, residuals, pb_calls, pb_iterations, fallbacks, directs, inits;
    long last_iterations, last_method;
    double last_rho, max_rho;
} dyn_itr_state;

#define DYN_ITR_STATE(n, H) {(n), (H), 0, 1e-12, 1e-12, 0.0, 1e-15, 1.0, -1, -1, \
                             0, 0, 0, 0, 0, 0, 0, 0, 0, DYN_ITR_INIT, 0.0, 0.0}

static inline double dyn_itr_dot(int n, const double *a, const double *b)
{
    double s = 0.0;
    for (int i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

/* y = H x (H full, row-major) */
static inline void dyn_itr_symv(int n, const double *H, const double *x, double *y)
{
    for (int i = 0; i < n; ++i) {
        const double *h = H + (size_t)i * n;
        double s = 0.0;
        for (int j = 0; j < n; ++j) s += h[j] * x[j];
        y[i] = s;
    }
}

/* H += c u u^T, computed on the lower triangle and mirrored (H stays exactly symmetric) */
static inline void dyn_itr_rank1(int n, double *H, double c, const double *u)
{
    for (int i = 0; i < n; ++i) {
        double ci = c * u[i];
        double *hi = H + (size_t)i * n;
        for (int j = 0; j <= i; ++j) {
            double v = hi[j] + ci * u[j];
            hi[j] = v;
            H[(size_t)j * n + i] = v;
        }
    }
}

/* Direct solve of M x = b and H = M^{-1} (root-free M = L^T D L, in place in H). 0 on success;
   when a pivot is zero (M singular, or a zero pivot of this order) or M is not finite, x is
   NaN, H is dropped and -1 is returned. */
static int dyn_itr_direct(dyn_itr_state *st, const double *b, const double *M, double *x)
{
    const int n = st->n;
    double *L = st->H;
    st->directs++;
    st->have_h = 0;
    memcpy(L, M, (size_t)n * n * sizeof(double));
    /* M = L^T D L from the last row up: row k of the lower triangle holds W_kj = d_k L_kj
       (j < k) until row k is scaled; 1/d_k is kept on the diagonal */
    for (int k = n - 1; k >= 0; --k) {
        double *lk = L + (size_t)k * n;
        const double d = lk[k];
        if (d == 0.0 || !isfinite(d)) {
            for (int i = 0; i < n; ++i) x[i] = NAN;
            st->last_method = DYN_ITR_FAILED;
            return -1;
        }
        const double dinv = 1.0 / d;
        lk[k] = dinv;
        for (int i = k - 1; i >= 0; --i) {
            double *li = L + (size_t)i * n;
            const double w = lk[i], l = w * dinv;
            lk[i] = l;
            li[i] -= l * w;
            for (int j = 0; j < i; ++j) li[j] -= l * lk[j];
        }
    }
    for (int i = 0; i < n; ++i) x[i] = b[i];
    for (int i = n - 1; i >= 0; --i) {                /* L^T y = b */
        const double *li = L + (size_t)i * n;
        for (int j = 0; j < i; ++j) x[j] -= li[j] * x[i];
    }
    for (int i = 0; i < n; ++i) {                     /* L x = D^{-1} y */
        const double *li = L + (size_t)i * n;
        double s = li[i] * x[i];
        for (int j = 0; j < i; ++j) s -= li[j] * x[j];
        x[i] = s;
    }
    /* W = L^{-1} in place (unit lower), column by column from the left: column j reads columns
       > j of L (not yet overwritten) and the part of column j already computed */
    for (int j = 0; j < n; ++j) {
        for (int i = j + 1; i < n; ++i) {
            const double *li = L + (size_t)i * n;
            double s = li[j];
            for (int k = j + 1; k < i; ++k) s += li[k] * L[(size_t)k * n + j];
            L[(size_t)i * n + j] = -s;
        }
    }
    /* H = W D^{-1} W^T in place, rows descending and columns descending in each row: entry
       (i, j) reads W_ik, W_jk and 1/d_k for k <= j only, which rows < i and the columns < j of
       row i still hold (W_ii = 1: the diagonal slot holds 1/d_i until (i, i) is written) */
    for (int i = n - 1; i >= 0; --i) {
        double *li = L + (size_t)i * n;
        for (int j = i; j >= 0; --j) {
            const double *lj = L + (size_t)j * n;
            double s = j == i ? li[i] : li[j] * lj[j];     /* k = j: W_ij W_jj / d_j, W_jj = 1 */
            for (int k = 0; k < j; ++k) s += li[k] * L[(size_t)k * n + k] * lj[k];
            li[j] = s;
        }
    }
    for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) L[(size_t)i * n + j] = L[(size_t)j * n + i];
    st->have_h = 1;
    return 0;
}

static inline int dyn_itr_small(int n, const double *s, const double *x, const dyn_itr_state *st)
{
    return sqrt(dyn_itr_dot(n, s, s)) <= st->rtol * sqrt(dyn_itr_dot(n, x, x)) + st->atol;
}

/* One solve of M x = b. Returns 0 when x holds the solution, 1 when the caller must form M
   and call dyn_itr_direct (first call, (2.43) violated, or no convergence). */
static int dyn_itr_solve(dyn_itr_state *st, const double *b, const double *ws, dyn_itr_mx_fn mx,
                         double *x, double *work)
{
    const int n = st->n;
    double *r = work, *rp = work + n, *s = work + 2 * n, *y = work + 3 * n;
    double *u = work + 4 * n, *xb = work + 5 * n, *rb = work + 6 * n, *t = work + 7 * n;
    double *H = st->H;
    int k;
    st->calls++;
    st->last_iterations = 0;
    st->last_method = DYN_ITR_QN;
    if (!st->have_h) {
        st->inits++;
        st->last_method = DYN_ITR_INIT;
        return 1;
    }
    const double bb = dyn_itr_dot(n, b, b);
    if (!isfinite(bb)) {                       /* NaN in the forces: propagate, keep H */
        for (int i = 0; i < n; ++i) x[i] = NAN;
        return 0;
    }
    if (bb == 0.0) {
        memset(x, 0, (size_t)n * sizeof(double));
        return 0;
    }
    const double bnorm = sqrt(bb);
    const double eps = st->eps_abs + st->eps_rel * bnorm;
    /* (2.30) */
    dyn_itr_symv(n, H, b, x);
    mx(ws, x, t);
    st->residuals++;
    for (int i = 0; i < n; ++i) r[i] = b[i] - t[i];
    double rr = dyn_itr_dot(n, r, r), best = rr;
    st->last_rho = sqrt(rr) / bnorm;
    if (st->last_rho > st->max_rho) st->max_rho = st->last_rho;
    if (rr < bb) {                               /* best point so far: x_0 or 0 */
        memcpy(xb, x, (size_t)n * sizeof(double));
        memcpy(rb, r, (size_t)n * sizeof(double));
    } else {
        best = bb;
        memset(xb, 0, (size_t)n * sizeof(double));
        memcpy(rb, b, (size_t)n * sizeof(double));
    }
    if (!(st->last_rho < st->rho_max))           /* (2.43) violated ((2.51)-(2.52)): go to (2.33) */
        goto powell_broyden;
    memcpy(rp, b, (size_t)n * sizeof(double));   /* r_{-1} = b */
    const int kmax_qn = st->max_iter < 0 ? n + 1 : st->max_iter;   /* n + 1: the bound of 2.3.2 */
    /* ---------------------------------------------------------------- (2.29) */
    for (k = 0;; ++k) {
        if (rr < eps * eps) return 0;                                   /* (2.28) */
        dyn_itr_symv(n, H, r, s);
        if (dyn_itr_small(n, s, x, st)) {
            for (int i = 0; i < n; ++i) x[i] += s[i];
            return 0;
        }
        if (k >= kmax_qn) break;
        for (int i = 0; i < n; ++i) y[i] = rp[i] - r[i];
        const double d = dyn_itr_dot(n, s, y);
        if (!(fabs(d) > DYN_ITR_BREAKDOWN * sqrt(dyn_itr_dot(n, s, s) * dyn_itr_dot(n, y, y)))) break;
        const double alpha = 1.0 + dyn_itr_dot(n, s, r) / d;
        dyn_itr_rank1(n, H, 1.0 / d, s);
        for (int i = 0; i < n; ++i) x[i] += alpha * s[i];
        double *tmp = rp; rp = r; r = tmp;
        mx(ws, x, t);
        st->residuals++;
        for (int i = 0; i < n; ++i) r[i] = b[i] - t[i];
        rr = dyn_itr_dot(n, r, r);
        st->iterations++;
        st->last_iterations++;
        if (rr < best) {
            best = rr;
            memcpy(xb, x, (size_t)n * sizeof(double));
            memcpy(rb, r, (size_t)n * sizeof(double));
        }
        if (!isfinite(rr)) break;
        /* no test of |r| against |b| here: the unit steps of (2.29) may raise the residual for
           an iteration when M - H_k^{-1} is indefinite (a small s^T y) and finish the next */
    }
    /* ---------------------------------------------------------------- (2.33) */
powell_broyden:
    st->fallbacks++;
    st->pb_calls++;
    st->last_method = DYN_ITR_PB;
    memcpy(x, xb, (size_t)n * sizeof(double));
    memcpy(r, rb, (size_t)n * sizeof(double));
    rr = best;
    const int kmax = st->max_iter_pb < 0 ? n + 1 : st->max_iter_pb;
    for (k = 0;; ++k) {
        if (rr < eps * eps) return 0;                                   /* (2.28) */
        dyn_itr_symv(n, H, r, s);
        double sr = dyn_itr_dot(n, s, r);
        if (sr > 0.0 && dyn_itr_small(n, s, x, st)) {
            for (int i = 0; i < n; ++i) x[i] += s[i];
            return 0;
        }
        if (k >= kmax) break;
        if (!(sr > 0.0)) {                       /* not a descent direction: steepest descent */
            memcpy(s, r, (size_t)n * sizeof(double));
            sr = rr;
        }
        mx(ws, s, t);                            /* t = M s */
        st->residuals++;
        const double sms = dyn_itr_dot(n, s, t);
        if (!(sms > 0.0) || !isfinite(sms)) break;
        const double lam = sr / sms;             /* argmin_l f(x + l s) */
        for (int i = 0; i < n; ++i) {
            s[i] *= lam;                         /* s* */
            t[i] *= lam;                         /* y = M s* */
            x[i] += s[i];
            r[i] -= t[i];
        }
        rr = dyn_itr_dot(n, r, r);
        st->iterations++;
        st->last_iterations++;
        st->pb_iterations++;
        dyn_itr_symv(n, H, t, u);                /* u = s* - H y */
        for (int i = 0; i < n; ++i) u[i] = s[i] - u[i];
        const double d = dyn_itr_dot(n, u, t);
        if (fabs(d) > DYN_ITR_BREAKDOWN * sqrt(dyn_itr_dot(n, u, u) * dyn_itr_dot(n, t, t)))
            dyn_itr_rank1(n, H, 1.0 / d, u);
    }
    st->last_method = DYN_ITR_DIRECT;
    return 1;
}

/* settings: rtol, atol, eps_abs, eps_rel, rho_max, max_iter, max_iter_pb (NaN: unchanged) */
static void dyn_itr_configure(dyn_itr_state *st, const double *in, double *out)
{
    if (in != NULL) {
        if (!isnan(in[0])) st->rtol = in[0];
        if (!isnan(in[1])) st->atol = in[1];
        if (!isnan(in[2])) st->eps_abs = in[2];
        if (!isnan(in[3])) st->eps_rel = in[3];
        if (!isnan(in[4])) st->rho_max = in[4];
        if (!isnan(in[5])) st->max_iter = (int)in[5];
        if (!isnan(in[6])) st->max_iter_pb = (int)in[6];
    }
    if (out != NULL) {
        out[0] = st->rtol; out[1] = st->atol; out[2] = st->eps_abs; out[3] = st->eps_rel;
        out[4] = st->rho_max; out[5] = st->max_iter; out[6] = st->max_iter_pb;
    }
}

static void dyn_itr_read_stats(const dyn_itr_state *st, double *out)
{
    out[0] = (double)st->calls; out[1] = (double)st->iterations; out[2] = (double)st->residuals;
    out[3] = (double)st->fallbacks; out[4] = (double)st->pb_calls; out[5] = (double)st->pb_iterations;
    out[6] = (double)st->directs; out[7] = (double)st->inits; out[8] = (double)st->last_iterations;
    out[9] = (double)st->last_method; out[10] = st->last_rho; out[11] = st->max_rho;
    out[12] = (double)st->have_h; out[13] = (double)st->n;
}

/* what: 1 forget the inverse (the next call solves directly), 2 clear the statistics */
static void dyn_itr_clear(dyn_itr_state *st, int what)
{
    if (what & 1) st->have_h = 0;
    if (what & 2) {
        st->calls = st->iterations = st->residuals = st->pb_calls = st->pb_iterations = 0;
        st->fallbacks = st->directs = st->inits = st->last_iterations = 0;
        st->last_method = DYN_ITR_INIT;
        st->last_rho = st->max_rho = 0.0;
    }
}

/* copy of the inverse estimate; returns whether there is one */
static int dyn_itr_copy_inverse(const dyn_itr_state *st, double *out)
{
    if (st->have_h) memcpy(out, st->H, (size_t)st->n * st->n * sizeof(double));
    else for (int i = 0; i < st->n * st->n; ++i) out[i] = NAN;
    return st->have_h;
}

#endif
