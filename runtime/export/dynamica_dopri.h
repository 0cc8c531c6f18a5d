/* The embedded explicit Runge-Kutta pair of Dormand and Prince, 5(4) with local extrapolation
   (Hairer, Norsett & Wanner, Solving ODE I, II.5; the tableau of scipy's RK45 and MATLAB's
   ode45), with the usual step control: the error estimate of the embedded 4th-order solution,
   weighted by atol + rtol max(|y_n|, |y_n+1|) in the RMS norm, h_new = h min(5, max(0.2,
   0.9 err^-1/5)), a step with err > 1 rejected. Plain C99, hand-written and the same for every
   model (dynamica, docs/export.md): the integrator of the exported library's main.c (the
   Co-Simulation FMU integrates with dynamica's Adams core, runtime/native/dynamica_adams.h).
   No global state: the caller owns the dyn_dp record and its work space.

   dyn_dp_integrate(s, f, project, ctx, &t, y, t_end) advances (t, y) to t_end exactly (the last
   step is cut to land there; the step size proposed before it is kept for the next call). The
   right-hand side returns nonzero when it cannot be evaluated (non-finite numbers): a trial
   step is then rejected and retried four times shorter. `project` (may be NULL) moves y onto
   the constraint manifolds after every accepted step (closed loops); the first stage of the
   next step is then evaluated anew (else it is the last one of the step: FSAL). */
#ifndef DYNAMICA_DOPRI_H
#define DYNAMICA_DOPRI_H
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <string.h>

typedef int (*dyn_dp_rhs_fn)(void *ctx, double t, const double *y, double *ydot);
typedef int (*dyn_dp_project_fn)(void *ctx, double t, double *y);

enum { DYN_DP_OK = 0, DYN_DP_RHS_FAILED = 1, DYN_DP_STEP_TOO_SMALL = 2, DYN_DP_MAX_STEPS = 3,
       DYN_DP_PROJECT_FAILED = 4, DYN_DP_BAD_INPUT = 5 };

/* doubles of work space for n states */
#define DYN_DP_WORK(n) (9 * (size_t)(n))

typedef struct {
    int n;
    double rtol, atol;          /* the error test, per component: atol + rtol max(|y_n|, |y_n+1|) */
    double h;                   /* the next step's size; <= 0: chosen at the next call */
    double hmax;                /* largest step; <= 0: no limit */
    long max_steps;             /* steps per call of dyn_dp_integrate (accepted and rejected) */
    long steps, rejected, evaluations;   /* counters over every call */
    double *work;               /* DYN_DP_WORK(n) doubles, the caller's */
} dyn_dp;

/* a record with the given tolerances over the caller's work space */
static void dyn_dp_init(dyn_dp *s, int n, double rtol, double atol, double *work)
{
    s->n = n;
    s->rtol = rtol;
    s->atol = atol;
    s->h = 0.0;
    s->hmax = 0.0;
    s->max_steps = 10000000L;
    s->steps = s->rejected = s->evaluations = 0;
    s->work = work;
}

static double dyn_dp_norm(int n, const double *x, const double *y, const double *y1, double rtol, double atol)
{
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
        double a = fabs(y[i]), b = y1 ? fabs(y1[i]) : a;
        double sc = atol + rtol * (a > b ? a : b), r = x[i] / sc;
        sum += r * r;
    }
    return n > 0 ? sqrt(sum / n) : 0.0;
}

static int dyn_dp_integrate(dyn_dp *s, dyn_dp_rhs_fn f, dyn_dp_project_fn project, void *ctx, double *t,
                            double *y, double t_end)
{
    static const double c2 = 1.0 / 5, c3 = 3.0 / 10, c4 = 4.0 / 5, c5 = 8.0 / 9;
    static const double a21 = 1.0 / 5;
    static const double a31 = 3.0 / 40, a32 = 9.0 / 40;
    static const double a41 = 44.0 / 45, a42 = -56.0 / 15, a43 = 32.0 / 9;
    static const double a51 = 19372.0 / 6561, a52 = -25360.0 / 2187, a53 = 64448.0 / 6561, a54 = -212.0 / 729;
    static const double a61 = 9017.0 / 3168, a62 = -355.0 / 33, a63 = 46732.0 / 5247, a64 = 49.0 / 176,
                        a65 = -5103.0 / 18656;
    static const double a71 = 35.0 / 384, a73 = 500.0 / 1113, a74 = 125.0 / 192, a75 = -2187.0 / 6784,
                        a76 = 11.0 / 84;
    static const double e1 = 71.0 / 57600, e3 = -71.0 / 16695, e4 = 71.0 / 1920, e5 = -17253.0 / 339200,
                        e6 = 22.0 / 525, e7 = -1.0 / 40;
    const int n = s->n;
    double *k1 = s->work, *k2 = k1 + n, *k3 = k2 + n, *k4 = k3 + n, *k5 = k4 + n, *k6 = k5 + n, *k7 = k6 + n;
    double *yt = k7 + n, *yn = yt + n;
    if (!(t_end >= *t) || !isfinite(t_end) || !(s->rtol >= 0.0) || !(s->atol >= 0.0) || s->rtol + s->atol <= 0.0)
        return DYN_DP_BAD_INPUT;
    if (t_end == *t)
        return DYN_DP_OK;
    s->evaluations++;
    if (f(ctx, *t, y, k1) != 0)
        return DYN_DP_RHS_FAILED;
    if (!(s->h > 0.0)) {                       /* first step: 1 % of |y| / |y'| in the weighted norm */
        double d0 = dyn_dp_norm(n, y, y, NULL, s->rtol, s->atol), d1 = dyn_dp_norm(n, k1, y, NULL, s->rtol, s->atol);
        s->h = (d0 < 1e-5 || d1 < 1e-5) ? 1e-6 : 0.01 * d0 / d1;
    }
    long taken = 0;
    int rejected_last = 0;
    while (*t < t_end) {
        if (taken++ >= s->max_steps)
            return DYN_DP_MAX_STEPS;
        double h = s->h;
        if (s->hmax > 0.0 && h > s->hmax)
            h = s->hmax;
        int last = 0;
        if (*t + 1.01 * h >= t_end) {           /* land on t_end (no sliver of a step after it) */
            h = t_end - *t;
            last = 1;
        }
        if (h <= 8.0 * DBL_EPSILON * fabs(*t))
            return DYN_DP_STEP_TOO_SMALL;
        const double t0 = *t;
        int bad = 0;
        for (int i = 0; i < n; ++i) yt[i] = y[i] + h * (a21 * k1[i]);
        bad |= f(ctx, t0 + c2 * h, yt, k2);
        for (int i = 0; i < n; ++i) yt[i] = y[i] + h * (a31 * k1[i] + a32 * k2[i]);
        bad |= f(ctx, t0 + c3 * h, yt, k3);
        for (int i = 0; i < n; ++i) yt[i] = y[i] + h * (a41 * k1[i] + a42 * k2[i] + a43 * k3[i]);
        bad |= f(ctx, t0 + c4 * h, yt, k4);
        for (int i = 0; i < n; ++i) yt[i] = y[i] + h * (a51 * k1[i] + a52 * k2[i] + a53 * k3[i] + a54 * k4[i]);
        bad |= f(ctx, t0 + c5 * h, yt, k5);
        for (int i = 0; i < n; ++i)
            yt[i] = y[i] + h * (a61 * k1[i] + a62 * k2[i] + a63 * k3[i] + a64 * k4[i] + a65 * k5[i]);
        bad |= f(ctx, t0 + h, yt, k6);
        for (int i = 0; i < n; ++i)
            yn[i] = y[i] + h * (a71 * k1[i] + a73 * k3[i] + a74 * k4[i] + a75 * k5[i] + a76 * k6[i]);
        bad |= f(ctx, t0 + h, yn, k7);
        s->evaluations += 6;
        double err = HUGE_VAL;
        if (!bad) {
            for (int i = 0; i < n; ++i)    /* the error estimate, in yt */
                yt[i] = h * (e1 * k1[i] + e3 * k3[i] + e4 * k4[i] + e5 * k5[i] + e6 * k6[i] + e7 * k7[i]);
            err = dyn_dp_norm(n, yt, y, yn, s->rtol, s->atol);
        }
        if (!(err <= 1.0)) {                   /* rejected (or not evaluable: NaN, a failed solve) */
            s->rejected++;
            double fac = (bad || !isfinite(err)) ? 0.25 : 0.9 * pow(err, -0.2);
            s->h = h * (fac < 0.2 ? 0.2 : (fac > 0.9 ? 0.9 : fac));
            rejected_last = 1;
            continue;
        }
        s->steps++;
        double fac = err == 0.0 ? 5.0 : 0.9 * pow(err, -0.2);
        fac = fac < 0.2 ? 0.2 : (fac > 5.0 ? 5.0 : fac);
        if (rejected_last && fac > 1.0)        /* no growth right after a rejection */
            fac = 1.0;
        rejected_last = 0;
        const double h_new = h * fac;
        if (!last || h_new < s->h)
            s->h = h_new;
        *t = last ? t_end : t0 + h;
        memcpy(y, yn, (size_t)n * sizeof(double));
        if (project != NULL) {
            if (project(ctx, *t, y) != 0)
                return DYN_DP_PROJECT_FAILED;
            if (*t < t_end) {
                s->evaluations++;
                if (f(ctx, *t, y, k1) != 0)
                    return DYN_DP_RHS_FAILED;
            }
        } else {
            memcpy(k1, k7, (size_t)n * sizeof(double));
        }
    }
    return DYN_DP_OK;
}

#endif
