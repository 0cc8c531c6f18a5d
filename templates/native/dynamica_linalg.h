/* Dense solves of a derivatives module (generator/kinds/derivatives.py): hand-written, the
   same for every model and backend. The module's generated entry points give the residual
   r = M(q) x - Q(t, q, q'), its Jacobian J = [dr/dq | dr/dq'] at fixed x, and M; from them

     q''               = -M^-1 r(t, q, q', 0)                     (r is affine in x, slope M)
     dq''/d[q, q']     = -M^-1 J(t, q, q', q'')                   (implicit function theorem)
     d[q', q'']/d[q, q'] = [[0, E], [dq''/dq, dq''/dq']]           (the state Jacobian)

   M is factored by LU with partial pivoting (M may be indefinite: negative masses are allowed);
   a singular M gives NaN outputs. Work space is taken from the heap per call. */
#ifndef DYNAMICA_LINALG_H
#define DYNAMICA_LINALG_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* the dense loops are compiled with full optimization (vectorized) even in a module built at -O1 */
#if defined(__GNUC__) && !defined(__clang__)
#define DYN_LA_FAST __attribute__((optimize("O3")))
#else
#define DYN_LA_FAST
#endif

typedef void (*dyn_residual_fn)(double t, const double *q, const double *qd, const double *x, const double *p,
                                double *r);
typedef void (*dyn_residual_jacobian_fn)(double t, const double *q, const double *qd, const double *x,
                                         const double *p, double *r, double *J);
typedef void (*dyn_mass_fn)(double t, const double *q, const double *p, double *M);

typedef void (*dyn_mass_times_fn)(double t, const double *q, const double *x, const double *p, double *Mx);

/* M column by column: M e_j by the recursions (2.54)-(2.55) (the tape variant's mass matrix) */
static void dyn_dv_mass_by_columns(int n, dyn_mass_times_fn mass_times, double t, const double *q, const double *p,
                                   double *M)
{
    double *x = (double *)calloc((size_t)(2 * n > 0 ? 2 * n : 1), sizeof(double));
    if (x == NULL) {
        for (int k = 0; k < n * n; ++k)
            M[k] = NAN;
        return;
    }
    double *col = x + n;
    for (int j = 0; j < n; ++j) {
        x[j] = 1.0;
        mass_times(t, q, x, p, col);
        x[j] = 0.0;
        for (int i = 0; i < n; ++i)
            M[(size_t)i * n + j] = col[i];
    }
    for (int i = 0; i < n; ++i)              /* symmetric to the last bit */
        for (int j = 0; j < i; ++j)
            M[(size_t)i * n + j] = M[(size_t)j * n + i] = 0.5 * (M[(size_t)i * n + j] + M[(size_t)j * n + i]);
    free(x);
}

/* A = P^T L U in place (row-major n x n); 0, or k + 1 when pivot k vanishes */
static DYN_LA_FAST int dyn_lu(int n, double *A, int *piv)
{
    for (int k = 0; k < n; ++k) {
        int m = k;
        double big = fabs(A[k * n + k]);
        for (int i = k + 1; i < n; ++i)
            if (fabs(A[i * n + k]) > big) {
                big = fabs(A[i * n + k]);
                m = i;
            }
        piv[k] = m;
        if (!(big > 0.0))
            return k + 1;
        if (m != k)
            for (int j = 0; j < n; ++j) {
                double s = A[k * n + j];
                A[k * n + j] = A[m * n + j];
                A[m * n + j] = s;
            }
        double inv = 1.0 / A[k * n + k];
        for (int i = k + 1; i < n; ++i) {
            double l = A[i * n + k] *= inv;
            if (l != 0.0)
                for (int j = k + 1; j < n; ++j)
                    A[i * n + j] -= l * A[k * n + j];
        }
    }
    return 0;
}

/* Triangular solves with many right-hand sides (B row-major n x nrhs; the 2n columns of a
   Jacobian). A sweep visits the rows in order, down (i = 0 .. n-1 over k < i) or up (i = n-1 .. 0
   over k > i):  B[i] = post_i (pre_i B[i] - sum_k F[i ri + k rk] B[k]),  pre_i the constant pre or
   the diagonal F_ii, post_i 1 or 1 / F_ii. A row is accumulated in registers over k for a block of
   columns and stored once; zeros of F (tree sparsity) are skipped. Each add waits for the one
   before it on the same accumulator, so the speed is set by how many accumulators are in flight:
   on x86-64 with AVX2 and FMA (checked at run time) two rows of up to 16 columns at a time
   (8 accumulators: the 40 columns of a 20-coordinate chain's Jacobian in 1.2 us against 2.2 us
   for one row of 8 columns, SSE2; benchmarks/bench_derivatives.py); elsewhere, or with
   DYNAMICA_LA_GENERIC set in the environment, one row of DYN_LA_BLOCK columns. */
#define DYN_LA_BLOCK 8

typedef struct {
    const double *F;
    size_t ri, rk;
    int up, pre_diag, post_inv;
    double pre;
} dyn_la_tri;

/* one row over the columns j0 .. j0 + w - 1 of B (w <= DYN_LA_BLOCK); inlined with a constant w,
   the j loops unroll */
static inline DYN_LA_FAST void dyn_la_row(const double *F, size_t ri, size_t rk, int i, int k0, int k1, double pre,
                                          double post, int nrhs, int j0, int w, double *B)
{
    double acc[DYN_LA_BLOCK], *bi = B + (size_t)i * nrhs + j0;
    for (int j = 0; j < w; ++j)
        acc[j] = pre * bi[j];
    for (int k = k0; k < k1; ++k) {
        double l = F[(size_t)i * ri + (size_t)k * rk];
        const double *bk = B + (size_t)k * nrhs + j0;
        if (l != 0.0)
            for (int j = 0; j < w; ++j)
                acc[j] -= l * bk[j];
    }
    for (int j = 0; j < w; ++j)
        bi[j] = acc[j] * post;
}

static inline __attribute__((always_inline)) DYN_LA_FAST void
dyn_la_sweep_as(const dyn_la_tri *T, int up, size_t ri, size_t rk, int n, int nrhs, double *B, int j0, int w)
{
    for (int s = 0; s < n; ++s) {
        int i = up ? n - 1 - s : s;
        double d = T->F[(size_t)i * n + i];
        dyn_la_row(T->F, ri, rk, i, up ? i + 1 : 0, up ? n : i, T->pre_diag ? d : T->pre,
                   T->post_inv ? 1.0 / d : 1.0, nrhs, j0, w, B);
    }
}

/* f(T, up, ri, rk, n, ...) with the sweep's direction and layout as constants (the three of the
   LU and L^T D L solves), so that the inlined loops see them as such */
#define DYN_LA_SPECIALISED(f, T, n, ...)                                                                \
    do {                                                                                                \
        if ((T)->up && (T)->ri == 1)                                                                    \
            f(T, 1, 1, (size_t)(n), n, __VA_ARGS__);                                                    \
        else if ((T)->up)                                                                               \
            f(T, 1, (size_t)(n), 1, n, __VA_ARGS__);                                                    \
        else                                                                                            \
            f(T, 0, (size_t)(n), 1, n, __VA_ARGS__);                                                    \
    } while (0)

static inline __attribute__((always_inline)) DYN_LA_FAST void
dyn_la_sweep(const dyn_la_tri *T, int n, int nrhs, double *B, int j0, int w)
{
    DYN_LA_SPECIALISED(dyn_la_sweep_as, T, n, nrhs, B, j0, w);
}

/* x86-64 with GCC or clang; not MinGW (64-bit Windows GCC does not realign the stack for the
   32-byte spills of the vector registers) */
#if defined(__has_builtin)
#define DYN_LA_HAS_BUILTIN(x) __has_builtin(x)
#else
#define DYN_LA_HAS_BUILTIN(x) 1
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32) \
    && DYN_LA_HAS_BUILTIN(__builtin_cpu_supports)
#define DYN_LA_X86 1
typedef double dyn_v4 __attribute__((vector_size(32), aligned(8), may_alias));
#define DYN_LA_AVX2 __attribute__((target("avx2,fma")))

/* rows i and then i2 (the next in the sweep's order, which also takes F[i2, i] B[i]), or row i
   alone (two = 0), over 4 nv columns from j0 */
static inline __attribute__((always_inline)) DYN_LA_FAST DYN_LA_AVX2 void
dyn_la_rows_avx2(const dyn_la_tri *T, int up, size_t ri, size_t rk, int n, int i, int i2, int two, int nv, int nrhs,
                 int j0, double *B)
{
    const double *F = T->F;
    int k0 = up ? i + 1 : 0, k1 = up ? n : i;
    double d = F[(size_t)i * n + i], d2 = two ? F[(size_t)i2 * n + i2] : 1.0;
    double pre = T->pre_diag ? d : T->pre, pre2 = T->pre_diag ? d2 : T->pre;
    double *bi = B + (size_t)i * nrhs + j0, *bi2 = B + (size_t)(two ? i2 : i) * nrhs + j0;
    dyn_v4 a[4], b[4];
    for (int j = 0; j < nv; ++j) {
        a[j] = pre * *(const dyn_v4 *)(bi + 4 * j);
        b[j] = pre2 * *(const dyn_v4 *)(bi2 + 4 * j);
    }
    for (int k = k0; k < k1; ++k) {          /* a zero of F skipped for its row only, as dyn_la_row */
        double l = F[(size_t)i * ri + (size_t)k * rk], l2 = two ? F[(size_t)i2 * ri + (size_t)k * rk] : 0.0;
        const double *bk = B + (size_t)k * nrhs + j0;
        if (l != 0.0 && l2 != 0.0) {
            for (int j = 0; j < nv; ++j) {
                dyn_v4 x = *(const dyn_v4 *)(bk + 4 * j);
                a[j] -= l * x;
                b[j] -= l2 * x;
            }
        } else if (l != 0.0) {
            for (int j = 0; j < nv; ++j)
                a[j] -= l * *(const dyn_v4 *)(bk + 4 * j);
        } else if (l2 != 0.0) {
            for (int j = 0; j < nv; ++j)
                b[j] -= l2 * *(const dyn_v4 *)(bk + 4 * j);
        }
    }
    double post = T->post_inv ? 1.0 / d : 1.0;
    for (int j = 0; j < nv; ++j)
        *(dyn_v4 *)(bi + 4 * j) = a[j] = post * a[j];
    if (two) {
        double m = F[(size_t)i2 * ri + (size_t)i * rk], post2 = T->post_inv ? 1.0 / d2 : 1.0;
        if (m != 0.0)
            for (int j = 0; j < nv; ++j)
                b[j] -= m * a[j];
        for (int j = 0; j < nv; ++j)
            *(dyn_v4 *)(bi2 + 4 * j) = post2 * b[j];
    }
}

static inline __attribute__((always_inline)) DYN_LA_FAST DYN_LA_AVX2 void
dyn_la_sweep_avx2_as(const dyn_la_tri *T, int up, size_t ri, size_t rk, int n, int nrhs, double *B, int j0, int nv)
{
    int s = 0;
    for (; s + 1 < n; s += 2) {
        int i = up ? n - 1 - s : s;
        dyn_la_rows_avx2(T, up, ri, rk, n, i, up ? i - 1 : i + 1, 1, nv, nrhs, j0, B);
    }
    if (s < n)
        dyn_la_rows_avx2(T, up, ri, rk, n, up ? 0 : n - 1, 0, 0, nv, nrhs, j0, B);
}

static inline __attribute__((always_inline)) DYN_LA_FAST DYN_LA_AVX2 void
dyn_la_sweep_avx2(const dyn_la_tri *T, int n, int nrhs, double *B, int j0, int nv)
{
    DYN_LA_SPECIALISED(dyn_la_sweep_avx2_as, T, n, nrhs, B, j0, nv);
}

/* both sweeps on blocks of 16, 8 and 4 columns; the number of columns done */
static DYN_LA_FAST DYN_LA_AVX2 int dyn_la_solve_avx2(const dyn_la_tri *T, int n, int nrhs, double *B)
{
    int j0 = 0;
    for (; j0 + 16 <= nrhs; j0 += 16) {
        dyn_la_sweep_avx2(T, n, nrhs, B, j0, 4);
        dyn_la_sweep_avx2(T + 1, n, nrhs, B, j0, 4);
    }
    if (j0 + 8 <= nrhs) {
        dyn_la_sweep_avx2(T, n, nrhs, B, j0, 2);
        dyn_la_sweep_avx2(T + 1, n, nrhs, B, j0, 2);
        j0 += 8;
    }
    if (j0 + 4 <= nrhs) {
        dyn_la_sweep_avx2(T, n, nrhs, B, j0, 1);
        dyn_la_sweep_avx2(T + 1, n, nrhs, B, j0, 1);
        j0 += 4;
    }
    return j0;
}

static int dyn_la_use_avx2(void)
{
    static int use = -1;                     /* decided once per module (atomic: threads may race to it) */
    int u = __atomic_load_n(&use, __ATOMIC_RELAXED);
    if (u < 0) {
        const char *generic = getenv("DYNAMICA_LA_GENERIC");
        __builtin_cpu_init();
        u = (generic == NULL || generic[0] == '\0' || generic[0] == '0') && __builtin_cpu_supports("avx2")
            && __builtin_cpu_supports("fma");
        __atomic_store_n(&use, u, __ATOMIC_RELAXED);
    }
    return u;
}
#endif

/* B := the two sweeps T[0] then T[1] applied to B, block by block of columns */
static DYN_LA_FAST void dyn_la_solve(const dyn_la_tri *T, int n, int nrhs, double *B)
{
    int j0 = 0;
#ifdef DYN_LA_X86
    if (nrhs >= 4 && dyn_la_use_avx2())
        j0 = dyn_la_solve_avx2(T, n, nrhs, B);
#endif
    for (; j0 + DYN_LA_BLOCK <= nrhs; j0 += DYN_LA_BLOCK) {
        dyn_la_sweep(T, n, nrhs, B, j0, DYN_LA_BLOCK);
        dyn_la_sweep(T + 1, n, nrhs, B, j0, DYN_LA_BLOCK);
    }
    for (; j0 < nrhs; ++j0) {                /* the remaining columns one by one */
        dyn_la_sweep(T, n, nrhs, B, j0, 1);
        dyn_la_sweep(T + 1, n, nrhs, B, j0, 1);
    }
}

/* B := A^-1 B, A factored by dyn_lu: L y = B (unit L) then U x = y */
static DYN_LA_FAST void dyn_lu_solve(int n, const double *LU, const int *piv, int nrhs, double *B)
{
    for (int k = 0; k < n; ++k)
        if (piv[k] != k)
            for (int j = 0; j < nrhs; ++j) {
                double s = B[k * nrhs + j];
                B[k * nrhs + j] = B[piv[k] * nrhs + j];
                B[piv[k] * nrhs + j] = s;
            }
    const dyn_la_tri T[2] = {{LU, (size_t)n, 1, 0, 0, 0, 1.0}, {LU, (size_t)n, 1, 1, 0, 1, 1.0}};
    dyn_la_solve(T, n, nrhs, B);
}

static void dyn_fill_nan(double *out, int size)
{
    for (int k = 0; k < size; ++k)
        out[k] = NAN;
}

/* q'' into qdd and the factored M into M (work: n doubles); 0 on success */
static int dyn_dv_solve_qdd(int n, dyn_residual_fn residual, dyn_mass_fn mass, double t, const double *q,
                            const double *qd, const double *p, double *qdd, double *M, int *piv, double *work)
{
    memset(work, 0, (size_t)n * sizeof(double));
    residual(t, q, qd, work, p, qdd);
    mass(t, q, p, M);
    if (dyn_lu(n, M, piv) != 0)
        return -1;
    for (int k = 0; k < n; ++k)
        qdd[k] = -qdd[k];
    dyn_lu_solve(n, M, piv, 1, qdd);
    return 0;
}

static void dyn_dv_qdd(int n, dyn_residual_fn residual, dyn_mass_fn mass, double t, const double *q,
                       const double *qd, const double *p, double *qdd)
{
    double *M = (double *)malloc(((size_t)n * n + n) * sizeof(double));
    int *piv = (int *)malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (M == NULL || piv == NULL || dyn_dv_solve_qdd(n, residual, mass, t, q, qd, p, qdd, M, piv, M + n * n) != 0)
        dyn_fill_nan(qdd, n);
    free(M);
    free(piv);
}

/* dq''/d[q, q'] (row-major n x 2n) into out; q'' into qdd when it is not NULL */
static void dyn_dv_qdd_jacobian(int n, dyn_residual_fn residual, dyn_residual_jacobian_fn jacobian,
                                dyn_mass_fn mass, double t, const double *q, const double *qd, const double *p,
                                double *out, double *qdd_out)
{
    double *M = (double *)malloc(((size_t)n * n + 3 * (size_t)n) * sizeof(double));
    int *piv = (int *)malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    double *qdd = M + (size_t)n * n, *r = qdd + n, *work = r + n;
    if (M == NULL || piv == NULL || dyn_dv_solve_qdd(n, residual, mass, t, q, qd, p, qdd, M, piv, work) != 0) {
        dyn_fill_nan(out, 2 * n * n);
        if (qdd_out != NULL)
            dyn_fill_nan(qdd_out, n);
    } else {
        jacobian(t, q, qd, qdd, p, r, out);
        for (int k = 0; k < 2 * n * n; ++k)
            out[k] = -out[k];
        dyn_lu_solve(n, M, piv, 2 * n, out);
        if (qdd_out != NULL)
            memcpy(qdd_out, qdd, (size_t)n * sizeof(double));
    }
    free(M);
    free(piv);
}

/* dyn_dv_qdd_jacobian, and M^-1 (row-major n x n) into minv from the same LU factors of M */
static void dyn_dv_qdd_derivatives(int n, dyn_residual_fn residual, dyn_residual_jacobian_fn jacobian,
                                   dyn_mass_fn mass, double t, const double *q, const double *qd, const double *p,
                                   double *out, double *qdd_out, double *minv)
{
    double *M = (double *)malloc(((size_t)n * n + 3 * (size_t)n) * sizeof(double));
    int *piv = (int *)malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    double *qdd = M + (size_t)n * n, *r = qdd + n, *work = r + n;
    if (M == NULL || piv == NULL || dyn_dv_solve_qdd(n, residual, mass, t, q, qd, p, qdd, M, piv, work) != 0) {
        dyn_fill_nan(out, 2 * n * n);
        dyn_fill_nan(qdd_out, n);
        dyn_fill_nan(minv, n * n);
    } else {
        jacobian(t, q, qd, qdd, p, r, out);
        for (int k = 0; k < 2 * n * n; ++k)
            out[k] = -out[k];
        dyn_lu_solve(n, M, piv, 2 * n, out);
        memset(minv, 0, (size_t)n * n * sizeof(double));
        for (int k = 0; k < n; ++k)
            minv[(size_t)k * n + k] = 1.0;
        dyn_lu_solve(n, M, piv, n, minv);
        memcpy(qdd_out, qdd, (size_t)n * sizeof(double));
    }
    free(M);
    free(piv);
}

/* B := sign M^-1 B for B row-major n x nrhs, M = L^T D L given as F (row-major n x n: L below the
   diagonal, 1/d_i on it; the variant recursive's solve_jacobian kernel): L^T y = sign B from the
   last row up (F[k n + i], k > i: the column i of L below it), then L x = D^-1 y */
static DYN_LA_FAST void dyn_ldl_solve(int n, const double *F, int nrhs, double *B, double sign)
{
    const dyn_la_tri T[2] = {{F, 1, (size_t)n, 1, 0, 0, sign}, {F, (size_t)n, 1, 0, 1, 0, 1.0}};
    dyn_la_solve(T, n, nrhs, B);
}

typedef void (*dyn_solve_jacobian_fn)(double t, const double *q, const double *qd, const double *p, double *qdd,
                                      double *F, double *J);

/* 1 when every 1/d_i on the diagonal of the L^T D L factors F (row-major n x n) is finite, else 0
   (a zero pivot) */
static int dyn_ldl_pivots_finite(int n, const double *F)
{
    for (int i = 0; i < n; ++i)
        if (!isfinite(F[(size_t)i * n + i]))
            return 0;
    return 1;
}

/* dq''/d[q, q'] = -M^-1 J into out (and q'' into qdd_out unless NULL) from the kernel that gives
   q'', the factors F of M and J at q'' in one call; a zero pivot (1/d_i not finite) gives NaN */
static void dyn_dv_ldl_qdd_derivatives(int n, dyn_solve_jacobian_fn solve, double t, const double *q,
                                       const double *qd, const double *p, double *out, double *qdd_out,
                                       double *minv);

static void dyn_dv_ldl_qdd_jacobian(int n, dyn_solve_jacobian_fn solve, double t, const double *q, const double *qd,
                                    const double *p, double *out, double *qdd_out)
{
    dyn_dv_ldl_qdd_derivatives(n, solve, t, q, qd, p, out, qdd_out, NULL);
}

/* dyn_dv_ldl_qdd_jacobian, and (minv not NULL) M^-1 (row-major n x n) into minv from the same L^T D L
   factors F */
static void dyn_dv_ldl_qdd_derivatives(int n, dyn_solve_jacobian_fn solve, double t, const double *q,
                                       const double *qd, const double *p, double *out, double *qdd_out,
                                       double *minv)
{
    double local[32 * 32 + 32];             /* small models: no allocation per call */
    double *F = n <= 32 ? local : (double *)malloc(((size_t)n * n + n) * sizeof(double));
    if (F == NULL) {
        dyn_fill_nan(out, 2 * n * n);
        if (qdd_out != NULL)
            dyn_fill_nan(qdd_out, n);
        if (minv != NULL)
            dyn_fill_nan(minv, n * n);
        return;
    }
    double *qdd = F + (size_t)n * n;
    solve(t, q, qd, p, qdd, F, out);
    if (!dyn_ldl_pivots_finite(n, F)) {
        dyn_fill_nan(out, 2 * n * n);
        dyn_fill_nan(qdd, n);
        if (minv != NULL)
            dyn_fill_nan(minv, n * n);
    } else {
        dyn_ldl_solve(n, F, 2 * n, out, -1.0);
        if (minv != NULL) {
            memset(minv, 0, (size_t)n * n * sizeof(double));
            for (int k = 0; k < n; ++k)
                minv[(size_t)k * n + k] = 1.0;
            dyn_ldl_solve(n, F, n, minv, 1.0);
        }
    }
    if (qdd_out != NULL)
        memcpy(qdd_out, qdd, (size_t)n * sizeof(double));
    if (F != local)
        free(F);
}

static void dyn_dv_ldl_state_jacobian(int n, dyn_solve_jacobian_fn solve, double t, const double *y, const double *p,
                                      double *out)
{
    int m = 2 * n;
    memset(out, 0, (size_t)n * m * sizeof(double));
    for (int k = 0; k < n; ++k)
        out[k * m + n + k] = 1.0;
    dyn_dv_ldl_qdd_jacobian(n, solve, t, y, y + n, p, out + (size_t)n * m, NULL);
}

/* The tape of a large derivatives module (generator/ir/tangent.py tape_kernel): the generated kernel
   gives the local partials P of every statement; here the tangents are carried statement by
   statement, each value's row of D directions over its dependency range [lo, hi) only, and the
   output rows are spread into J (n x 2n row-major: dr/dq, then dr/dqd; the directions of the
   tape interleave q_j -> 2j, qd_j -> 2j + 1). T: rows x D doubles. */
static DYN_LA_FAST void dyn_tape_jacobian(const int *meta, const int *stmt, const int *edge, const int *out,
                                          const double *P, double *T, double *J)
{
    int ns = meta[0], D = meta[3], nout = meta[4], n = D / 2;
    for (int s = 0; s < ns; ++s) {
        const int *st = stmt + 4 * s;
        double *row = T + (size_t)st[0] * D;
        for (int d = st[1]; d < st[2]; ++d)
            row[d] = 0.0;
        int end = (s + 1 < ns) ? stmt[4 * (s + 1) + 3] : stmt[4 * ns];
        for (int e = st[3]; e < end; ++e) {
            const int *ed = edge + 3 * e;
            double p = P[e];
            if (ed[0] < 0) {
                row[-ed[0] - 1] += p;
            } else {
                const double *x = T + (size_t)ed[0] * D;
                for (int d = ed[1]; d < ed[2]; ++d)
                    row[d] += p * x[d];
            }
        }
    }
    for (int i = 0; i < nout; ++i) {
        const int *o = out + 3 * i;
        double *Ji = J + (size_t)i * 2 * n;
        for (int j = 0; j < 2 * n; ++j)
            Ji[j] = 0.0;
        if (o[0] < 0)
            continue;
        const double *row = T + (size_t)o[0] * D;
        for (int d = o[1]; d < o[2]; ++d)
            Ji[(d % 2) * n + d / 2] = row[d];
    }
}

/* the state Jacobian d[q', q'']/d[q, q'] (row-major 2n x 2n) into out */
static void dyn_dv_state_jacobian(int n, dyn_residual_fn residual, dyn_residual_jacobian_fn jacobian,
                                  dyn_mass_fn mass, double t, const double *y, const double *p, double *out)
{
    int m = 2 * n;
    memset(out, 0, (size_t)n * m * sizeof(double));
    for (int k = 0; k < n; ++k)
        out[k * m + n + k] = 1.0;
    dyn_dv_qdd_jacobian(n, residual, jacobian, mass, t, y, y + n, p, out + (size_t)n * m, NULL);
}
/* The variant recursive_loops (generator/kinds/derivatives_recursive.py pair_terms): the kernel gives
   r, the per-coordinate 6-vectors V = [S | Sd | Sdd | a | b | g | k] (n of each), the armature D
   and J holding the active forces' tangent; the inner products of the pairs of coordinates on a
   path (pred: each coordinate's predecessor, -1 at the root) are added here. */
typedef void (*dyn_pair_terms_fn)(double t, const double *q, const double *qd, const double *x, const double *p,
                                  double *r, double *V, double *D, double *J);
/* r at x = 0, the blocks S and a = IC S of V (SA), the armature D */
typedef void (*dyn_pair_mass_fn)(double t, const double *q, const double *qd, const double *p, double *r, double *SA,
                                 double *D);

static inline double dyn_rl_dot6(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

/* J += the inertial part: dr_e/dq_c = S_e.g_c, dr_e/dq'_c = S_e.k_c (e <= c on the path of c),
   dr_c/dq_e = Sdd_e.a_c + Sd_e.b_c, dr_c/dq'_e = S_e.b_c + 2 Sd_e.a_c (e < c) */
static DYN_LA_FAST void dyn_rl_pairs(int n, const int *pred, const double *V, double *J)
{
    const size_t n6 = 6 * (size_t)n, m = 2 * (size_t)n;
    const double *S = V, *Sd = V + n6, *Sdd = V + 2 * n6, *al = V + 3 * n6, *be = V + 4 * n6, *g = V + 5 * n6,
                 *kk = V + 6 * n6;
    for (int c = 0; c < n; ++c) {
        const double *gc = g + 6 * c, *kc = kk + 6 * c, *ac = al + 6 * c, *bc = be + 6 * c;
        for (int e = c; e >= 0; e = pred[e]) {
            const double *se = S + 6 * e;
            J[e * m + c] += dyn_rl_dot6(se, gc);
            J[e * m + n + c] += dyn_rl_dot6(se, kc);
            if (e != c) {
                J[c * m + e] += dyn_rl_dot6(Sdd + 6 * e, ac) + dyn_rl_dot6(Sd + 6 * e, bc);
                J[c * m + n + e] += dyn_rl_dot6(se, bc) + 2.0 * dyn_rl_dot6(Sd + 6 * e, ac);
            }
        }
    }
}

/* M (row-major n x n): M_ce = M_ec = S_e.a_c for e on the path of c, + D_c on the diagonal */
static DYN_LA_FAST void dyn_rl_mass(int n, const int *pred, const double *S, const double *al, const double *D,
                                    double *M)
{
    memset(M, 0, (size_t)n * n * sizeof(double));
    for (int c = 0; c < n; ++c) {
        M[(size_t)c * n + c] = dyn_rl_dot6(S + 6 * c, al + 6 * c) + D[c];
        for (int e = pred[c]; e >= 0; e = pred[e])
            M[(size_t)c * n + e] = M[(size_t)e * n + c] = dyn_rl_dot6(S + 6 * e, al + 6 * c);
    }
}

/* M = L^T D L in place along the tree (Featherstone, Rigid Body Dynamics Algorithms, 6.5, with
   pred as lambda): L (unit) below the diagonal, then 1/d_i on it (the layout of dyn_ldl_solve).
   The path of i is walked in runs of consecutive coordinates (run[j]: the first of j's run; a
   chain is one run), so that the inner update is a contiguous, vectorized loop. */
static DYN_LA_FAST void dyn_rl_ldl(int n, const int *pred, double *H)
{
    int local[256];
    int *run = n <= 256 ? local : (int *)malloc((size_t)n * sizeof(int));
    if (run == NULL) {
        dyn_fill_nan(H, n * n);
        return;
    }
    for (int j = 0; j < n; ++j)
        run[j] = (j > 0 && pred[j] == j - 1) ? run[j - 1] : j;
    for (int k = n - 1; k >= 0; --k) {
        double *Hk = H + (size_t)k * n;
        const double dk = Hk[k];
        for (int i = pred[k]; i >= 0; i = pred[i]) {
            double *Hi = H + (size_t)i * n;
            const double a = Hk[i] / dk;
            for (int j = i; j >= 0; j = pred[run[j]])
                for (int m = run[j]; m <= j; ++m)
                    Hi[m] -= a * Hk[m];
            Hk[i] = a;
        }
    }
    if (run != local)
        free(run);
    for (int k = 0; k < n; ++k) {
        H[(size_t)k * n + k] = 1.0 / H[(size_t)k * n + k];
        for (int j = k + 1; j < n; ++j)
            H[(size_t)k * n + j] = 0.0;
    }
}

static void dyn_rl_residual_jacobian(int n, int nv, const int *pred, dyn_pair_terms_fn terms, double t,
                                     const double *q, const double *qd, const double *x, const double *p, double *r,
                                     double *J)
{
    double *V = (double *)malloc(((size_t)nv + n) * sizeof(double));
    if (V == NULL) {
        dyn_fill_nan(r, n);
        dyn_fill_nan(J, 2 * n * n);
        return;
    }
    terms(t, q, qd, x, p, r, V, V + nv, J);
    dyn_rl_pairs(n, pred, V, J);
    free(V);
}

static void dyn_rl_mass_matrix(int n, const int *pred, dyn_pair_mass_fn mass, double t, const double *q,
                               const double *p, double *M)
{
    double *SA = (double *)malloc(15 * (size_t)n * sizeof(double));
    if (SA == NULL) {
        dyn_fill_nan(M, n * n);
        return;
    }
    double *D = SA + 12 * (size_t)n, *z = D + n, *r = z + n;
    memset(z, 0, (size_t)n * sizeof(double));
    mass(t, q, z, p, r, SA, D);                         /* S and a_c depend on q only */
    dyn_rl_mass(n, pred, SA, SA + 6 * (size_t)n, D, M);
    free(SA);
}

/* q'', the factors F of M and J at q'' (dyn_solve_jacobian_fn): the mass terms give r(0) and
   M, q'' = -M^-1 r(0), the terms at x = q'' give J */
static void dyn_rl_solve_jacobian(int n, int nv, const int *pred, dyn_pair_terms_fn terms, dyn_pair_mass_fn mass,
                                  double t, const double *q, const double *qd, const double *p, double *qdd, double *F,
                                  double *J)
{
    double *V = (double *)malloc(((size_t)nv + 2 * (size_t)n) * sizeof(double));
    if (V == NULL) {
        dyn_fill_nan(qdd, n);
        dyn_fill_nan(F, n * n);
        return;
    }
    double *D = V + nv, *r = D + n;
    mass(t, q, qd, p, qdd, V, D);                       /* r(0) into qdd; S and a_c into V's blocks 0 and 1 */
    dyn_rl_mass(n, pred, V, V + 6 * (size_t)n, D, F);
    dyn_rl_ldl(n, pred, F);
    dyn_ldl_solve(n, F, 1, qdd, -1.0);
    terms(t, q, qd, qdd, p, r, V, D, J);
    dyn_rl_pairs(n, pred, V, J);
    free(V);
}
#endif
