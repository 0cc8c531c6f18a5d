/* Constrained dynamics of closed loops (dynamica; seed 003 (14)-(17), docs/loops.md),
   hand-written and the same for every model. The module file binds a dyn_con_spec to the
   generated kernels: the tree's own q'' (the form's solve, any form), M, the loops' Jacobian J
   with phi_t and the acceleration term gamma (generator/constraints.py). Then

       M q'' + J^T lambda = Q,  J q'' = gamma
       =>  q'' = q''_free - Y lambda,  Y = M^-1 J^T,  (J Y) lambda = J q''_free - gamma,

   with M factored once per call as the tree-sparse L^T D L of (2.23) (the elimination from the
   last coordinate to the first along the tree: `lambda_` gives each coordinate's predecessor
   towards the root) and applied to the m columns of J^T; no inverse is formed. J Y is the
   m x m system of the multipliers; redundant equations (a planar linkage written with 3-D joints,
   over-constrained mechanisms) make it singular, so it is factored by Cholesky with diagonal
   pivoting and the equations whose pivots fall below DYN_CON_RANK_TOL of the largest are left
   out (their multipliers are 0). A left-out equation that the solution does not satisfy is not
   redundant but inconsistent: status DYN_CON_INCONSISTENT, with the equation's index.

   dyn_con_project moves (q, q') back onto the constraint manifolds (drift after a step):
   q -= Y (J Y)^+ phi by Newton steps, then q' -= Y (J Y)^+ (J q' + phi_t) (mass-weighted,
   minimum-norm corrections). */
#ifndef DYNAMICA_CONSTRAINTS_H
#define DYNAMICA_CONSTRAINTS_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define DYN_CON_RANK_TOL 1e-10
#define DYN_CON_CONSISTENT_TOL 1e-6
#define DYN_CON_STACK 16384
enum { DYN_CON_OK = 0, DYN_CON_INCONSISTENT = 1, DYN_CON_SINGULAR = 2, DYN_CON_NOMEM = 3, DYN_CON_NOT_CONVERGED = 4 };

typedef void (*dyn_con_qdd_fn)(double t, const double *q, const double *qd, const double *p, double *qdd);
typedef void (*dyn_con_mass_fn)(double t, const double *q, const double *p, double *M);
typedef void (*dyn_con_phi_fn)(double t, const double *q, const double *p, double *phi);
typedef void (*dyn_con_jac_fn)(double t, const double *q, const double *p, double *J, double *phit);
typedef void (*dyn_con_bias_fn)(double t, const double *q, const double *qd, const double *p, double *gamma);

typedef struct {
    int n, m;
    const int *lambda_;          /* predecessor of each coordinate towards the root, -1 at the root */
    dyn_con_qdd_fn qdd_free;
    dyn_con_mass_fn mass;
    dyn_con_phi_fn phi;
    dyn_con_jac_fn jac;
    dyn_con_bias_fn bias;
} dyn_con_spec;

/* the last call's outcome: status, the equation it concerns, the rank used (read by Python) */
typedef struct { int status, row, rank; double residual; } dyn_con_report;

/* ------------------------------------------------------------------ M = L^T D L (2.23) */
/* In place: the strict lower triangle of M holds L (on the tree's pattern), the diagonal 1/d. */
static int dyn_con_factor(const int *lam, int n, double *M)
{
    for (int k = n - 1; k >= 0; --k) {
        double *Mk = M + (size_t)k * n;
        if (Mk[k] == 0.0 || !isfinite(Mk[k]))
            return DYN_CON_SINGULAR;
        const double dinv = 1.0 / Mk[k];
        Mk[k] = dinv;
        for (int i = lam[k]; i >= 0; i = lam[i]) {
            double *Mi = M + (size_t)i * n;
            const double w = Mk[i], l = w * dinv;
            Mk[i] = l;
            Mi[i] -= l * w;
            for (int j = lam[i]; j >= 0; j = lam[j])
                Mi[j] -= l * Mk[j];
        }
    }
    return DYN_CON_OK;
}

/* x = M^-1 x with the factor of dyn_con_factor (L^T y = x (2.8), then L x = D^-1 y (2.9)) */
static void dyn_con_solve(const int *lam, int n, const double *LD, double *x)
{
    for (int i = n - 1; i >= 0; --i) {
        const double *Li = LD + (size_t)i * n;
        for (int j = lam[i]; j >= 0; j = lam[j])
            x[j] -= Li[j] * x[i];
    }
    for (int i = 0; i < n; ++i) {
        const double *Li = LD + (size_t)i * n;
        x[i] *= Li[i];
        for (int j = lam[i]; j >= 0; j = lam[j])
            x[i] -= Li[j] * x[j];
    }
}

/* ------------------------------------------------------------------ the multipliers */
/* Cholesky of the symmetric positive semi-definite S (m x m, overwritten) with diagonal pivoting;
   perm[0..rank) are the equations kept. Returns the rank. */
static int dyn_con_pivoted_cholesky(int m, double *S, int *perm)
{
    double dmax = 0.0;
    for (int i = 0; i < m; ++i) {
        perm[i] = i;
        if (S[(size_t)i * m + i] > dmax)
            dmax = S[(size_t)i * m + i];
    }
    const double tol = DYN_CON_RANK_TOL * (dmax > 0 ? dmax : 1.0);
    int r = 0;
    for (; r < m; ++r) {
        int best = r;                     /* the largest remaining diagonal entry */
        for (int i = r + 1; i < m; ++i)
            if (S[(size_t)perm[i] * m + perm[i]] > S[(size_t)perm[best] * m + perm[best]])
                best = i;
        const int pb = perm[best];
        if (!(S[(size_t)pb * m + pb] > tol))
            break;
        perm[best] = perm[r];
        perm[r] = pb;
        const double piv = sqrt(S[(size_t)pb * m + pb]);
        S[(size_t)pb * m + pb] = piv;
        for (int i = r + 1; i < m; ++i) {               /* column r of the factor */
            const int pi = perm[i];
            S[(size_t)pi * m + pb] /= piv;
        }
        for (int i = r + 1; i < m; ++i) {               /* update of the remaining block */
            const int pi = perm[i];
            const double lir = S[(size_t)pi * m + pb];
            for (int j = r + 1; j <= i; ++j) {
                const int pj = perm[j];
                const double v = S[(size_t)pi * m + pj] - lir * S[(size_t)pj * m + pb];
                S[(size_t)pi * m + pj] = v;
                S[(size_t)pj * m + pi] = v;
            }
        }
    }
    return r;
}

/* S_kk x_k = b_k on the kept equations (rank r, factor of dyn_con_pivoted_cholesky), x = 0 elsewhere */
static void dyn_con_pivoted_solve(int m, int r, const double *S, const int *perm, const double *b, double *x)
{
    double y[m > 0 ? m : 1];
    for (int i = 0; i < r; ++i) {                         /* L y = b */
        const int pi = perm[i];
        double s = b[pi];
        for (int j = 0; j < i; ++j)
            s -= S[(size_t)pi * m + perm[j]] * y[j];
        y[i] = s / S[(size_t)perm[i] * m + perm[i]];
    }
    for (int i = r - 1; i >= 0; --i) {                    /* L^T x = y */
        const int pi = perm[i];
        double s = y[i];
        for (int j = i + 1; j < r; ++j)
            s -= S[(size_t)perm[j] * m + pi] * y[j];
        y[i] = s / S[(size_t)pi * m + pi];
    }
    for (int i = 0; i < m; ++i)
        x[i] = 0.0;
    for (int i = 0; i < r; ++i)
        x[perm[i]] = y[i];
}

/* Workspace: M (n n), J (m n), Y (n m), S (m m), phit, gamma, rhs (3 m), perm (m ints as doubles) */
#define DYN_CON_WORK(n, m) ((size_t)(n) * (n) + 2 * (size_t)(m) * (n) + (size_t)(m) * (m) + 4 * (size_t)(m) + 1)

typedef struct {
    double *M, *J, *Y, *S, *phit, *gamma, *rhs;
    int *perm;
} dyn_con_work;

static void dyn_con_layout(int n, int m, double *w, dyn_con_work *W)
{
    W->M = w;
    W->J = W->M + (size_t)n * n;
    W->Y = W->J + (size_t)m * n;
    W->S = W->Y + (size_t)m * n;
    W->phit = W->S + (size_t)m * m;
    W->gamma = W->phit + m;
    W->rhs = W->gamma + m;
    W->perm = (int *)(W->rhs + m);                /* m ints in the last m doubles */
}

/* M factored, J (and phi_t) at (t, q); Y = M^-1 J^T (columns), S = J Y. Returns the rank or < 0. */
static int dyn_con_system(const dyn_con_spec *s, double t, const double *q, const double *p, dyn_con_work *W)
{
    const int n = s->n, m = s->m;
    s->mass(t, q, p, W->M);
    s->jac(t, q, p, W->J, W->phit);
    if (dyn_con_factor(s->lambda_, n, W->M) != DYN_CON_OK)
        return -DYN_CON_SINGULAR;
    for (int r = 0; r < m; ++r) {                          /* column r of Y, stored as row r */
        double *Yr = W->Y + (size_t)r * n;
        memcpy(Yr, W->J + (size_t)r * n, (size_t)n * sizeof(double));
        dyn_con_solve(s->lambda_, n, W->M, Yr);
    }
    for (int a = 0; a < m; ++a)
        for (int b = 0; b <= a; ++b) {
            double v = 0.0;
            const double *Ja = W->J + (size_t)a * n, *Yb = W->Y + (size_t)b * n;
            for (int k = 0; k < n; ++k)
                v += Ja[k] * Yb[k];
            W->S[(size_t)a * m + b] = W->S[(size_t)b * m + a] = v;
        }
    return dyn_con_pivoted_cholesky(m, W->S, W->perm);
}

/* x -= Y (J Y)^+ r (the kept equations), lam = (J Y)^+ r */
static void dyn_con_correct(int n, int m, int rank, dyn_con_work *W, const double *r, double *x, double *lam)
{
    dyn_con_pivoted_solve(m, rank, W->S, W->perm, r, lam);
    for (int a = 0; a < m; ++a) {
        if (lam[a] == 0.0)
            continue;
        const double *Ya = W->Y + (size_t)a * n;
        for (int k = 0; k < n; ++k)
            x[k] -= Ya[k] * lam[a];
    }
}

static double *dyn_con_alloc(size_t size, double *stack)
{
    return size <= DYN_CON_STACK ? stack : (double *)malloc(size * sizeof(double));
}

/* q'' and lambda of M q'' + J^T lambda = Q, J q'' = gamma at (t, q, q'). */
static int dyn_con_qdd(const dyn_con_spec *s, double t, const double *q, const double *qd, const double *p,
                       double *qdd, double *lam, dyn_con_report *rep)
{
    const int n = s->n, m = s->m;
    double stack[DYN_CON_STACK];
    const size_t size = DYN_CON_WORK(n, m);
    double *w = dyn_con_alloc(size, stack);
    if (w == NULL) {
        for (int k = 0; k < n; ++k) qdd[k] = NAN;
        rep->status = DYN_CON_NOMEM;
        return DYN_CON_NOMEM;
    }
    dyn_con_work W;
    dyn_con_layout(n, m, w, &W);
    s->qdd_free(t, q, qd, p, qdd);
    s->bias(t, q, qd, p, W.gamma);
    int rank = dyn_con_system(s, t, q, p, &W), status = DYN_CON_OK;
    rep->row = -1;
    rep->residual = 0.0;
    if (rank < 0) {
        status = -rank;
        for (int k = 0; k < n; ++k) qdd[k] = NAN;
    } else {
        for (int a = 0; a < m; ++a) {                      /* J q''_free - gamma */
            double v = -W.gamma[a];
            for (int k = 0; k < n; ++k)
                v += W.J[(size_t)a * n + k] * qdd[k];
            W.rhs[a] = v;
        }
        dyn_con_correct(n, m, rank, &W, W.rhs, qdd, lam);
        for (int i = rank; i < m; ++i) {                   /* the equations left out: redundant? */
            const int a = W.perm[i];
            double v = -W.gamma[a], scale = fabs(W.gamma[a]);
            for (int k = 0; k < n; ++k) {
                v += W.J[(size_t)a * n + k] * qdd[k];
                scale += fabs(W.J[(size_t)a * n + k] * qdd[k]);
            }
            if (fabs(v) > DYN_CON_CONSISTENT_TOL * (1.0 + scale) && fabs(v) > rep->residual) {
                status = DYN_CON_INCONSISTENT;
                rep->row = a;
                rep->residual = fabs(v);
            }
        }
    }
    rep->status = status;
    rep->rank = rank < 0 ? 0 : rank;
    if (w != stack)
        free(w);
    return status;
}

/* (q, q') of y = [q, q'] onto phi = 0 and J q' + phi_t = 0: at most `iters` Newton steps until
   |phi| <= tol (max norm), then the velocities. */
static int dyn_con_project(const dyn_con_spec *s, double t, double *y, const double *p, double tol, int iters)
{
    const int n = s->n, m = s->m;
    double stack[DYN_CON_STACK];
    const size_t size = DYN_CON_WORK(n, m) + 2 * (size_t)m;
    double *w = dyn_con_alloc(size, stack);
    if (w == NULL)
        return DYN_CON_NOMEM;
    dyn_con_work W;
    dyn_con_layout(n, m, w, &W);
    double *phi = w + DYN_CON_WORK(n, m), *lam = phi + m;
    int status = DYN_CON_NOT_CONVERGED;
    for (int it = 0; it <= iters; ++it) {
        s->phi(t, y, p, phi);
        double e = 0.0;
        for (int a = 0; a < m; ++a)
            if (fabs(phi[a]) > e) e = fabs(phi[a]);
        if (e <= tol) {
            status = DYN_CON_OK;
            break;
        }
        if (it == iters)
            break;
        int rank = dyn_con_system(s, t, y, p, &W);
        if (rank < 0) {
            status = -rank;
            break;
        }
        dyn_con_correct(n, m, rank, &W, phi, y, lam);
    }
    if (status == DYN_CON_OK) {
        int rank = dyn_con_system(s, t, y, p, &W);
        if (rank < 0) {
            status = -rank;
        } else {
            for (int a = 0; a < m; ++a) {                  /* J q' + phi_t */
                double v = W.phit[a];
                for (int k = 0; k < n; ++k)
                    v += W.J[(size_t)a * n + k] * y[n + k];
                W.rhs[a] = v;
            }
            dyn_con_correct(n, m, rank, &W, W.rhs, y + n, lam);
        }
    }
    if (w != stack)
        free(w);
    return status;
}

#endif
