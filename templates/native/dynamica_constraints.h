/* Constrained dynamics of closed loops (cut joints with Lagrange multipliers; docs/loops.md), hand-written and the same for
   every model. The module file binds a dyn_con_spec to the generated kernels: the tree's own q''
   (the form's solve, any form), M, the loops' residual phi, their Jacobian J with phi_t and the
   acceleration term gamma (generator/mechanics/constraints.py). Then

       M q'' + J^T lambda = Q,  J q'' = gamma
       =>  q'' = q''_free - M^-1 J_K^T (J_K M^-1 J_K^T)^-1 (J q''_free - gamma)_K

   over the equations K kept. M is factored once per call as the tree-sparse L^T D L of (2.23)
   (the elimination from the last coordinate to the first along the tree: `lambda_` gives each
   coordinate's predecessor towards the root), M^-1 = W W^T with W = L^-1 D^-1/2. The rows of
   J W, scaled to unit length, are factored by Householder QR with column pivoting: the rank is
   decided on the singular values of J itself, and J M^-1 J^T (whose pivots go like their
   squares) is never formed. Redundant equations (a planar linkage written with 3-D joints,
   over-constrained mechanisms) are left out (multipliers 0); a left-out equation that the
   solution does not satisfy is not redundant but inconsistent: status DYN_CON_INCONSISTENT,
   with the equation's index. Near singular configurations see dyn_con_weak.

   dyn_con_project moves (q, q') back onto the constraint manifolds (drift after a step): Newton
   steps on the positions, then the velocities, each the M-weighted minimum-norm correction. */
#ifndef DYNAMICA_CONSTRAINTS_H
#define DYNAMICA_CONSTRAINTS_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynamica_tree_ldl.h"

/* Tolerances (each may be set with -D for an experiment). On the N four-bar of the IFToMM
   benchmark library (benchmarks/bench_singular.py):
   RANK_TOL     |R_kk| of unit rows below which an equation is dependent on those kept: a row at
                d = 1e-12 from the singular configuration is kept, exactly dependent rows (|R_kk|
                ~ 1e-16) are not;
   ZERO_TOL     a row shorter than this times the longest is zero (rows of a loop at d >= 1e-12
                from the N four-bar's singular configuration are 1e-12 long; rounding, 1e-16);
   CONSISTENT   a left-out equation's residual, relative to its terms and the largest equation's:
                a dependent row at RANK_TOL leaves about 1e-12;
   PROJECT_RANK the projection's rank test: a correction along a row within 1e-8 of the others
                would move the state by 1e8 times its defect;
   DEFECT_RANK  off the constraint manifold the rank test and the consistency test allow for the
                position defect dq = max |phi_a| / max |J_a|: an equation that is redundant on the
                manifold (an over-constrained mechanism: Bricard's, IFToMM A04) keeps a part of
                its unit row of about 0.3 dq outside the span of the others there (measured on
                Bricard's mechanism at dq = 1e-14 ... 1e-8), along a direction without meaning;
                kept, it imposes a spurious equation on the motion (q'' off by O(1) at dq = 1e-10,
                "inconsistent" at 1e-8). Rows within DEFECT_RANK dq of the span are dependent,
                and their residual may reach 100 DEFECT_RANK max(dq, dv) of the terms (dv =
                max |J_a q' + phi_t,a| / (max |J_a| max |q'_k|), the velocity defect). On the
                manifold (dq, dv ~ 1e-16) nothing changes; nor at a state off it by more than
                DEFECT_CAP (no integrator's defect: a state given as it is, whose equations are
                judged as they stand).
   WEAK_TOL, KAPPA, PROJECT_WEAK, ROUNDING: dyn_con_weak. WEAK_TOL 1e-10 and KAPPA 10 (with 1e-6
                or KAPPA 30 the rtol 1e-12 runs lost 1e-6 m of B0 or took 60 000 steps; from
                1e-9 to 1e-12 the errors were within 2x of each other). */
#ifndef DYN_CON_RANK_TOL
#define DYN_CON_RANK_TOL 1e-12
#endif
#ifndef DYN_CON_ZERO_TOL
#define DYN_CON_ZERO_TOL 1e-14
#endif
#ifndef DYN_CON_CONSISTENT_TOL
#define DYN_CON_CONSISTENT_TOL 1e-9
#endif
#ifndef DYN_CON_PROJECT_RANK_TOL
#define DYN_CON_PROJECT_RANK_TOL 1e-8
#endif
#ifndef DYN_CON_DEFECT_RANK
#define DYN_CON_DEFECT_RANK 10.0
#endif
#ifndef DYN_CON_DEFECT_CAP
#define DYN_CON_DEFECT_CAP 1e-4
#endif
#ifndef DYN_CON_WEAK_TOL
#define DYN_CON_WEAK_TOL 1e-10
#endif
#ifndef DYN_CON_KAPPA
#define DYN_CON_KAPPA 10.0
#endif
#ifndef DYN_CON_PROJECT_WEAK
#define DYN_CON_PROJECT_WEAK 1e-2
#endif
#ifndef DYN_CON_ROUNDING
#define DYN_CON_ROUNDING 1.8e-15
#endif
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
        const double mkk = M[(size_t)k * n + k];
        if (!(mkk > 0.0) || !isfinite(mkk))                 /* M is positive definite */
            return DYN_CON_SINGULAR;
        dyn_tree_ldl_pivot(lam, n, M, k);
    }
    return DYN_CON_OK;
}

/* x = M^-1 x with the factor of dyn_con_factor (L^T y = x (2.8), then L x = D^-1 y (2.9)) */
static void dyn_con_solve(const int *lam, int n, const double *LD, double *x)
{
    dyn_tree_ldl_solve(lam, n, LD, x);
}

/* y = D^-1/2 L^-T x: the rows of J M^-1/2 (M^-1 = W W^T, W = L^-1 D^-1/2), first pass of (2.8) */
static void dyn_con_half_t(const int *lam, int n, const double *LD, double *x)
{
    for (int i = n - 1; i >= 0; --i) {
        const double *Li = LD + (size_t)i * n;
        for (int j = lam[i]; j >= 0; j = lam[j])
            x[j] -= Li[j] * x[i];
    }
    for (int i = 0; i < n; ++i)
        x[i] *= sqrt(LD[(size_t)i * n + i]);
}

/* x = W z = L^-1 D^-1/2 z (the second pass of (2.9) with D^-1/2) */
static void dyn_con_half(const int *lam, int n, const double *LD, double *x)
{
    for (int i = 0; i < n; ++i) {
        const double *Li = LD + (size_t)i * n;
        x[i] *= sqrt(Li[i]);
        for (int j = lam[i]; j >= 0; j = lam[j])
            x[i] -= Li[j] * x[j];
    }
}

/* ------------------------------------------------------------------ the multipliers */
/* With A = J W (row a: equation a in the mass-weighted metric, scaled to unit length by c_a), the
   system of the multipliers is A A^T (the old J M^-1 J^T up to the scaling): it is never formed.
   A^T is factored by Householder QR with column pivoting, A^T P = Q R, so the rank is decided on
   the singular values of J itself (|R_kk|, relative to unit rows), not on their squares: an
   equation is left out only when its row is within DYN_CON_RANK_TOL of the span of those kept.
   The factor overwrites the rows of A (Householder vectors) and fills R: R[i * m + a] is row i of
   the factor in the column of equation a. */
typedef struct {
    double *M, *J, *A, *R, *tau, *c, *phit, *gamma, *rhs, *z;
    int *perm;
} dyn_con_work;

/* Workspace: M (n n), J and A (m n each), R (m m), tau, c, phit, gamma, rhs (5 m), z (n), perm (m) */
#define DYN_CON_WORK(n, m) ((size_t)(n) * (n) + 2 * (size_t)(m) * (n) + (size_t)(m) * (m) + 6 * (size_t)(m) \
                            + (size_t)(n) + 1)

static void dyn_con_layout(int n, int m, double *w, dyn_con_work *W)
{
    W->M = w;
    W->J = W->M + (size_t)n * n;
    W->A = W->J + (size_t)m * n;
    W->R = W->A + (size_t)m * n;
    W->tau = W->R + (size_t)m * m;
    W->c = W->tau + m;
    W->phit = W->c + m;
    W->gamma = W->phit + m;
    W->rhs = W->gamma + m;
    W->z = W->rhs + m;
    W->perm = (int *)(W->z + n);                /* m ints in the last m doubles */
}

/* Householder QR with column pivoting of the m vectors A_a (length n); returns the rank r:
   perm[0..r) are the equations kept, in pivot order. */
static int dyn_con_qr(int n, int m, dyn_con_work *W, double rank_tol)
{
    double *A = W->A, *R = W->R;
    int *perm = W->perm, active = 0;
    for (int a = 0; a < m; ++a)                          /* the rows left out (c_a = 0) last */
        if (W->c[a] != 0.0)
            perm[active++] = a;
    for (int a = 0, k = active; a < m; ++a)
        if (W->c[a] == 0.0)
            perm[k++] = a;
    const int kmax = n < active ? n : active;
    int r = 0;
    for (; r < kmax; ++r) {
        int best = -1;                                   /* the largest remaining part */
        double bn = -1.0;
        for (int i = r; i < active; ++i) {
            const double *Ai = A + (size_t)perm[i] * n;
            double s = 0.0;
            for (int k = r; k < n; ++k)
                s += Ai[k] * Ai[k];
            if (s > bn) { bn = s; best = i; }
        }
        if (!(sqrt(bn) > rank_tol))
            break;
        const int pb = perm[best];
        perm[best] = perm[r];
        perm[r] = pb;
        double *v = A + (size_t)pb * n;
        const double norm = sqrt(bn), alpha = v[r] > 0 ? -norm : norm;
        v[r] -= alpha;                                   /* v = x - alpha e_r, H = I - tau v v^T */
        const double vtv = bn - 2.0 * alpha * (v[r] + alpha) + alpha * alpha;
        W->tau[r] = 2.0 / vtv;
        R[(size_t)r * m + pb] = alpha;
        for (int i = r + 1; i < active; ++i) {
            double *x = A + (size_t)perm[i] * n, d = 0.0;
            for (int k = r; k < n; ++k)
                d += v[k] * x[k];
            d *= W->tau[r];
            for (int k = r; k < n; ++k)
                x[k] -= d * v[k];
            R[(size_t)r * m + perm[i]] = x[r];
        }
    }
    return r;
}

/* The minimum-norm correction of the kept equations, in the metric of M: with b (m, original
   units) the equations' defects, dx = M^-1 J_K^T (J_K M^-1 J_K^T)^-1 b_K = W Q R^-T (c b)_K is
   subtracted from x, and lam = C R^-1 R^-T (c b)_K (0 for the equations left out). */
static void dyn_con_correct(const dyn_con_spec *s, int rank, dyn_con_work *W, const double *b, double *x,
                            double *lam)
{
    const int n = s->n, m = s->m;
    double *y = W->rhs, *z = W->z;
    const double *R = W->R;
    for (int i = 0; i < rank; ++i) {                     /* R^T y = (c b)_K */
        double v = W->c[W->perm[i]] * b[W->perm[i]];
        for (int j = 0; j < i; ++j)
            v -= R[(size_t)j * m + W->perm[i]] * y[j];
        y[i] = v / R[(size_t)i * m + W->perm[i]];
    }
    for (int k = 0; k < n; ++k)
        z[k] = k < rank ? y[k] : 0.0;
    for (int i = rank - 1; i >= 0; --i) {                /* z = Q [y; 0] = H_0 ... H_{r-1} [y; 0] */
        const double *v = W->A + (size_t)W->perm[i] * n;
        double d = 0.0;
        for (int k = i; k < n; ++k)
            d += v[k] * z[k];
        d *= W->tau[i];
        for (int k = i; k < n; ++k)
            z[k] -= d * v[k];
    }
    dyn_con_half(s->lambda_, n, W->M, z);
    for (int k = 0; k < n; ++k)
        x[k] -= z[k];
    if (lam == NULL)
        return;
    for (int i = rank - 1; i >= 0; --i) {                /* R lam_K = y */
        double v = y[i];
        for (int j = i + 1; j < rank; ++j)
            v -= R[(size_t)i * m + W->perm[j]] * y[j];
        y[i] = v / R[(size_t)i * m + W->perm[i]];
    }
    for (int a = 0; a < m; ++a)
        lam[a] = 0.0;
    for (int i = 0; i < rank; ++i)
        lam[W->perm[i]] = W->c[W->perm[i]] * y[i];
}

/* M factored (L^T D L), J and phi_t at (t, q). Returns DYN_CON_OK or DYN_CON_SINGULAR. */
static int dyn_con_eval(const dyn_con_spec *s, double t, const double *q, const double *p, dyn_con_work *W)
{
    s->mass(t, q, p, W->M);
    s->jac(t, q, p, W->J, W->phit);
    return dyn_con_factor(s->lambda_, s->n, W->M);
}

/* The rows of J W, scaled to unit length, factored; rows with skip[a] != 0 (or negligible against
   the largest) are left out. Returns the rank. */
static int dyn_con_prepare(const dyn_con_spec *s, dyn_con_work *W, double rank_tol, const double *skip)
{
    const int n = s->n, m = s->m;
    double largest = 0.0;
    for (int a = 0; a < m; ++a) {
        double *Aa = W->A + (size_t)a * n, s2 = 0.0;
        memcpy(Aa, W->J + (size_t)a * n, (size_t)n * sizeof(double));
        int nonzero = 0;
        for (int k = 0; k < n && !nonzero; ++k)
            nonzero = Aa[k] != 0.0;
        if (nonzero)                                     /* (a structurally zero row stays zero) */
            dyn_con_half_t(s->lambda_, n, W->M, Aa);
        for (int k = 0; k < n; ++k)
            s2 += Aa[k] * Aa[k];
        W->c[a] = sqrt(s2);
        if (W->c[a] > largest)
            largest = W->c[a];
    }
    for (int a = 0; a < m; ++a) {
        double *Aa = W->A + (size_t)a * n;
        const double len = W->c[a];
        W->c[a] = len > DYN_CON_ZERO_TOL * largest && !(skip != NULL && skip[a] != 0.0) ? 1.0 / len : 0.0;
        for (int k = 0; k < n; ++k)
            Aa[k] *= W->c[a];
    }
    return dyn_con_qr(n, m, W, rank_tol);
}

static double *dyn_con_alloc(size_t size, double *stack)
{
    return size <= DYN_CON_STACK ? stack : (double *)malloc(size * sizeof(double));
}

/* ------------------------------------------------------------------ singular configurations */
/* Near a singular configuration rows of J shrink (the N four-bar's loops when all rods lie on one
   line: |J_a| ~ the distance d from it) while their derivatives do not: the unit normal
   J_a / |J_a| turns fast, kappa_a = |dJ_a/dt| / (w |J_a|) ~ 1 / d per radian of motion
   (w = max |q'_k|; a row of a regular configuration turns at kappa ~ 1, whatever its length).
   On the constraint manifold J q'' = gamma still gives the motion of the branch to full
   accuracy (rows are kept down to DYN_CON_ZERO_TOL), but a defect of the position,
   dq_a = |phi_a| / |J_a| along the normal, or of the velocity, dv_a = |J_a q' + phi_t,a| / |J_a|,
   moves the acceleration along the normal by about

       E_a = w^2 dq_a kappa_a^2 + w dv_a kappa_a

   (measured on the N four-bar: the error of q'' at a random defect dq follows dq / d^2); the
   exact solution of the perturbed equations follows a level set phi_a = const, which near a
   crossing of branches turns onto another branch (a hyperbola) at forces without bound, and
   an integrator that resolves it fails ("step size too small") or jumps branch. dyn_con_weak
   gives E_a for the rows with kappa_a > DYN_CON_KAPPA (0 elsewhere) and kappa_a. Its users
   leave such a defect alone: the acceleration solve scales gamma_a by
   1 / (1 + (E_a / (DYN_CON_WEAK_TOL A))^2), A = w^2 + max |q''_free|, smoothly towards
   J_a q'' = 0 (the velocity along the normal is held: inertia carries the motion through the
   singular point; exact on the N four-bar, whose normal keeps its direction along the branch);
   the velocity projection does not correct rows with dv_a kappa_a > DYN_CON_PROJECT_WEAK w (its
   correction would turn the velocity onto the nearest branch's).
   On the manifold E = 0 and nothing changes: defects below DYN_CON_ROUNDING (8 u) times the
   size of the equations' terms (the longest row, times w for velocities) count as none. */
static void dyn_con_weak(int n, int m, const double *J, const double *Jdot, const double *phi, const double *e,
                         double w, double *E, double *kappa)
{
    double jmax = 0.0;
    for (int a = 0; a < m; ++a) {
        double s2 = 0.0;
        for (int k = 0; k < n; ++k)
            s2 += J[(size_t)a * n + k] * J[(size_t)a * n + k];
        E[a] = sqrt(s2);
        if (E[a] > jmax) jmax = E[a];
    }
    for (int a = 0; a < m; ++a) {
        const double len = E[a];
        E[a] = kappa[a] = 0.0;
        if (!(len > 0.0) || !(w > 0.0))
            continue;
        double s2 = 0.0;
        for (int k = 0; k < n; ++k)
            s2 += Jdot[(size_t)a * n + k] * Jdot[(size_t)a * n + k];
        kappa[a] = sqrt(s2) / (w * len);
        if (!(kappa[a] > DYN_CON_KAPPA))
            continue;
        /* defects at the level of rounding (of terms the size of jmax, resp. jmax w) are none */
        const double fq = DYN_CON_ROUNDING * jmax, fv = DYN_CON_ROUNDING * jmax * w;
        const double dq = phi != NULL && fabs(phi[a]) > fq ? fabs(phi[a]) / len : 0.0;
        const double dv = e != NULL && fabs(e[a]) > fv ? fabs(e[a]) / len : 0.0;
        E[a] = w * w * dq * kappa[a] * kappa[a] + w * dv * kappa[a];
    }
}

/* Jdot = dJ/dt along (1, q') at (t, q), by a first difference (the estimate of dyn_con_weak) */
static void dyn_con_jdot(const dyn_con_spec *s, double t, const double *q, const double *qd, const double *p,
                         const dyn_con_work *W, double *Jdot, double *qh, double *phit)
{
    const int n = s->n, m = s->m;
    double qmax = 0.0, w = 0.0;
    for (int k = 0; k < n; ++k) {
        if (fabs(q[k]) > qmax) qmax = fabs(q[k]);
        if (fabs(qd[k]) > w) w = fabs(qd[k]);
    }
    const double h = 1.5e-8 * (1.0 + qmax) / (w > 1.0 ? w : 1.0);
    for (int k = 0; k < n; ++k)
        qh[k] = q[k] + h * qd[k];
    s->jac(t + h, qh, p, Jdot, phit);
    for (size_t i = 0; i < (size_t)m * n; ++i)
        Jdot[i] = (Jdot[i] - W->J[i]) / h;
}

static double dyn_con_amax(int n, const double *x)
{
    double v = 0.0;
    for (int k = 0; k < n; ++k)
        if (fabs(x[k]) > v) v = fabs(x[k]);
    return v;
}

/* e = J q' + phi_t with the evaluated J; returns max |q'_k| */
static double dyn_con_velocity_defect(int n, int m, const dyn_con_work *W, const double *qd, double *e)
{
    double w = 1e-300;
    for (int k = 0; k < n; ++k)
        if (fabs(qd[k]) > w) w = fabs(qd[k]);
    for (int a = 0; a < m; ++a) {
        double v = W->phit[a];
        for (int k = 0; k < n; ++k)
            v += W->J[(size_t)a * n + k] * qd[k];
        e[a] = v;
    }
    return w;
}

/* ------------------------------------------------------------------ the projection */
/* the longest row of J (m x n) */
static double dyn_con_jmax(int n, int m, const double *J)
{
    double jmax = 0.0;
    for (int a = 0; a < m; ++a) {
        double s2 = 0.0;
        for (int k = 0; k < n; ++k)
            s2 += J[(size_t)a * n + k] * J[(size_t)a * n + k];
        if (s2 > jmax) jmax = s2;
    }
    return sqrt(jmax);
}

/* Scratch of dyn_con_project_in beyond dyn_con_work: four vectors of m */
#define DYN_CON_PROJECT_EXTRA(m) (4 * (size_t)(m))

/* y = [q, q'] onto phi = 0, then J q' + phi_t = 0, in place. Positions: Newton steps, each the
   M-weighted minimum-norm correction, towards max |phi| <= the rounding level of dyn_con_weak
   (DYN_CON_ROUNDING times the longest row), at most `iters` (the defect after a step is within
   the linear region of every row: no test needed more); it succeeds when that level or `tol` is
   reached. Then, when J q' + phi_t exceeds the rounding level (DYN_CON_ROUNDING times the
   longest row times w) or tol, the same correction of the velocities, leaving alone the weak
   rows (dv_a kappa_a > DYN_CON_PROJECT_WEAK w, dyn_con_weak), whose velocity the solve holds.
   Why the rounding level and not tol alone: near a singular configuration the solve reads any
   defect above that level as real (dyn_con_weak) and scales the weak rows' gamma by it, so a
   defect left between the two (measured on a change-point four-bar: |phi| ~ 3e-13 after each
   step at rtol 1e-12, tol 1e-12) made q'' jump with the defect from step to step, and adams
   rejected every other step at h ~ 1e-9 until max_steps. */
static int dyn_con_project_in(const dyn_con_spec *s, double t, double *y, const double *p, double tol, int iters,
                              dyn_con_work *W, double *scratch, int weak_rows)
{
    const int n = s->n, m = s->m;
    double *phi = scratch, *weak = phi + m, *e = weak + m, *kappa = e + m;
    int status = DYN_CON_NOT_CONVERGED, evaluated = 0;
    const double w = dyn_con_amax(n, y + n);
    double level = -1.0, prev = INFINITY;                  /* the rounding level, from the first J */
    for (int it = 0; it <= iters; ++it) {
        s->phi(t, y, p, phi);
        double err = 0.0;
        for (int a = 0; a < m; ++a)
            if (!(fabs(phi[a]) <= err)) err = fabs(phi[a]);
        /* done at the rounding level; or within tol once Newton stalls (rounding of phi above
           the level: a converging step divides the defect by far more than 4) */
        if (err <= level || err == 0.0 || (err <= tol && err > 0.25 * prev)) {
            status = DYN_CON_OK;
            break;
        }
        prev = err;
        if (!isfinite(err))
            break;
        const int st = dyn_con_eval(s, t, y, p, W);
        if (st != DYN_CON_OK)
            return st;
        evaluated = 1;
        if (level < 0.0) {
            level = DYN_CON_ROUNDING * dyn_con_jmax(n, m, W->J);
            if (err <= level) {
                status = DYN_CON_OK;
                break;
            }
        }
        if (it == iters) {
            if (err <= tol)
                status = DYN_CON_OK;
            break;
        }
        const int rank = dyn_con_prepare(s, W, DYN_CON_PROJECT_RANK_TOL, NULL);
        dyn_con_correct(s, rank, W, phi, y, NULL);
        evaluated = 0;
    }
    if (status != DYN_CON_OK)
        return status;
    if (!evaluated) {
        const int st = dyn_con_eval(s, t, y, p, W);
        if (st != DYN_CON_OK)
            return st;
    }
    dyn_con_velocity_defect(n, m, W, y + n, e);
    double err = 0.0;
    for (int a = 0; a < m; ++a)
        if (!(fabs(e[a]) <= err)) err = fabs(e[a]);
    const double vlevel = DYN_CON_ROUNDING * dyn_con_jmax(n, m, W->J) * w;
    if (err > (vlevel < tol ? vlevel : tol)) {
        if (weak_rows) {
            dyn_con_jdot(s, t, y, y + n, p, W, W->A, W->z, W->tau);
            dyn_con_weak(n, m, W->J, W->A, NULL, e, w, weak, kappa);
            for (int a = 0; a < m; ++a)                    /* weak: dv_a kappa_a > DYN_CON_PROJECT_WEAK w */
                weak[a] = weak[a] > DYN_CON_PROJECT_WEAK * w * w ? 1.0 : 0.0;
        }
        const int rank = dyn_con_prepare(s, W, DYN_CON_PROJECT_RANK_TOL, weak_rows ? weak : NULL);
        dyn_con_correct(s, rank, W, e, y + n, NULL);
    }
    return status;
}

/* The entry point of the integrators after a step (docs/loops.md): dyn_con_project_in; weak_rows = 0
   corrects the velocity along every row (adams, which steps across singular configurations). */
static int dyn_con_project(const dyn_con_spec *s, double t, double *y, const double *p, double tol, int iters,
                           int weak_rows)
{
    const int n = s->n, m = s->m;
    double stack[DYN_CON_STACK];
    const size_t size = DYN_CON_WORK(n, m) + DYN_CON_PROJECT_EXTRA(m);
    double *w = dyn_con_alloc(size, stack);
    if (w == NULL)
        return DYN_CON_NOMEM;
    dyn_con_work W;
    dyn_con_layout(n, m, w, &W);
    const int status = dyn_con_project_in(s, t, y, p, tol, iters, &W, w + DYN_CON_WORK(n, m), weak_rows);
    if (w != stack)
        free(w);
    return status;
}

/* ------------------------------------------------------------------ nearness to a singular configuration */
/* How near J is to losing rank, cheaply, for a test after every accepted step (the step across of
   runtime/integrators/singular.py decides on J's singular values): the rows of J at (t, q), row a scaled
   by w[1 + a] (its length at the start of the run inverted; 0 leaves it out), factored by QR with column
   pivoting; returns |R_rr| / |R_11| with r = w[0], the rank at the start. With sigma_k the singular values
   of the scaled rows, |R_11| <= sigma_1 and |R_rr| >= sigma_r / sqrt(m - r + 1) (the trailing block's
   largest column bounds its norm), so the ratio is at least sigma_r / sigma_1 / sqrt(m). 1 without a rank
   to lose; 0 when the factorization ends before r; -1 without memory. */
static double dyn_con_measure(const dyn_con_spec *s, double t, const double *q, const double *p, const double *w)
{
    const int n = s->n, m = s->m, rank = (int)w[0];
    if (rank <= 0)
        return 1.0;
    double stack[DYN_CON_STACK];
    double *work = dyn_con_alloc(DYN_CON_WORK(n, m), stack);
    if (work == NULL)
        return -1.0;
    dyn_con_work W;
    dyn_con_layout(n, m, work, &W);
    s->jac(t, q, p, W.J, W.phit);
    for (int a = 0; a < m; ++a) {
        W.c[a] = w[1 + a];
        for (int k = 0; k < n; ++k)
            W.A[(size_t)a * n + k] = W.J[(size_t)a * n + k] * w[1 + a];
    }
    const int r = dyn_con_qr(n, m, &W, 0.0);
    double ratio = 0.0;
    if (r >= rank)
        ratio = fabs(W.R[(size_t)(rank - 1) * m + W.perm[rank - 1]]) / fabs(W.R[W.perm[0]]);
    if (work != stack)
        free(work);
    return ratio;
}

/* ------------------------------------------------------------------ the constrained solve */
/* Scratch of dyn_con_qdd beyond dyn_con_work: b, phi, e, E, kappa (m each) */
#define DYN_CON_QDD_EXTRA(m) (5 * (size_t)(m))

/* q'' and lambda of M q'' + J^T lambda = Q, J q'' = gamma at (t, q, q'); near a singular
   configuration gamma_a of the weak rows is scaled (dyn_con_weak) unless weak_rows = 0 (adams,
   which steps across singular configurations: runtime/integrators/adams_across.py). */
static int dyn_con_qdd(const dyn_con_spec *s, double t, const double *q, const double *qd, const double *p,
                       double *qdd, double *lam, dyn_con_report *rep, int weak_rows)
{
    const int n = s->n, m = s->m;
    double stack[DYN_CON_STACK];
    const size_t size = DYN_CON_WORK(n, m) + DYN_CON_QDD_EXTRA(m);
    double *w = dyn_con_alloc(size, stack);
    rep->row = -1;
    rep->residual = 0.0;
    rep->rank = 0;
    if (w == NULL) {
        for (int k = 0; k < n; ++k) qdd[k] = NAN;
        rep->status = DYN_CON_NOMEM;
        return DYN_CON_NOMEM;
    }
    dyn_con_work W;
    dyn_con_layout(n, m, w, &W);
    double *b = w + DYN_CON_WORK(n, m), *phi = b + m, *e = phi + m, *E = e + m, *kappa = E + m;
    int status = dyn_con_eval(s, t, q, p, &W), rank = 0;
    if (status != DYN_CON_OK) {
        for (int k = 0; k < n; ++k) qdd[k] = NAN;
    } else {
        s->qdd_free(t, q, qd, p, qdd);
        s->bias(t, q, qd, p, W.gamma);
        const double vmax = dyn_con_velocity_defect(n, m, &W, qd, e);
        s->phi(t, q, p, phi);
        double jmax = 0.0, fmax = 0.0, emax = 0.0;         /* the defects dq and dv (DEFECT_RANK) */
        for (int a = 0; a < m; ++a) {
            double s2 = 0.0;
            for (int k = 0; k < n; ++k)
                s2 += W.J[(size_t)a * n + k] * W.J[(size_t)a * n + k];
            if (s2 > jmax) jmax = s2;
            if (fabs(phi[a]) > fmax) fmax = fabs(phi[a]);
            if (fabs(e[a]) > emax) emax = fabs(e[a]);
        }
        jmax = sqrt(jmax);
        const double dq = jmax > 0.0 ? fmax / jmax : 0.0, dv = jmax > 0.0 && vmax > 0.0 ? emax / (jmax * vmax) : 0.0;
        const double dmax = dq > dv ? dq : dv;
        const double rank_tol = dmax <= DYN_CON_DEFECT_CAP && DYN_CON_DEFECT_RANK * dq > DYN_CON_RANK_TOL
                                ? DYN_CON_DEFECT_RANK * dq : DYN_CON_RANK_TOL;
        const double consistent_tol = dmax <= DYN_CON_DEFECT_CAP && 100.0 * DYN_CON_DEFECT_RANK * dmax > DYN_CON_CONSISTENT_TOL
                                      ? 100.0 * DYN_CON_DEFECT_RANK * dmax : DYN_CON_CONSISTENT_TOL;
        if (weak_rows && vmax > 0.0) {                     /* the weak rows */
            dyn_con_jdot(s, t, q, qd, p, &W, W.A, W.z, b);
            dyn_con_weak(n, m, W.J, W.A, phi, e, vmax, E, kappa);
            const double accel = DYN_CON_WEAK_TOL * (vmax * vmax + dyn_con_amax(n, qdd));
            for (int a = 0; a < m; ++a)
                if (E[a] > 0.0) {
                    const double r = E[a] / accel;
                    W.gamma[a] /= 1.0 + r * r;
                }
        }
        rank = dyn_con_prepare(s, &W, rank_tol, NULL);
        for (int a = 0; a < m; ++a) {                      /* b = J q''_free - gamma */
            double v = -W.gamma[a];
            for (int k = 0; k < n; ++k)
                v += W.J[(size_t)a * n + k] * qdd[k];
            b[a] = v;
        }
        dyn_con_correct(s, rank, &W, b, qdd, lam);
        /* the equations left out: redundant (satisfied by the result, as the rank test implies to
           about DYN_CON_RANK_TOL) or inconsistent (reported, never absorbed) */
        double *scale = e, largest = 0.0;                  /* the size of each equation's terms */
        for (int a = 0; a < m; ++a) {
            double v = fabs(W.gamma[a]);
            for (int k = 0; k < n; ++k)
                v += fabs(W.J[(size_t)a * n + k] * qdd[k]);
            scale[a] = v;
            if (v > largest)
                largest = v;
        }
        for (int i = rank; i < m; ++i) {
            const int a = W.perm[i];
            double v = -W.gamma[a];
            for (int k = 0; k < n; ++k)                    /* J_a q'' - gamma_a */
                v += W.J[(size_t)a * n + k] * qdd[k];
            if (!(fabs(v) <= consistent_tol * (scale[a] + largest)) && fabs(v) > rep->residual) {
                status = DYN_CON_INCONSISTENT;
                rep->row = a;
                rep->residual = fabs(v);
            }
        }
    }
    rep->status = status;
    rep->rank = rank;
    if (w != stack)
        free(w);
    return status;
}

#endif
