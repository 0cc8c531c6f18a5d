/* The symbolic-numeric mode of dynamica (dissertation 5.1.3): hand-written recursions over
   per-body arrays, written once and shared by every numeric-mode module. Only the relative
   kinematics of each joint, the body inertias and the active forces are generated per model
   (the `numeric_terms` kernel, generator/numeric.py); everything here runs as loops.

   Spatial 6-vectors are [translational; angular], frame of the body, at its origin O_i.

   Terms array T (written by the generated kernel), per body i = 1..nb at T + (i-1)*DYN_NM_TB:
     [0..8]   G_i, parent frame -> frame i, row-major                (1.1)
     [9..11]  rho_i, O_i in the parent's frame                       (1.1)
     [12..17] vr_hat_i                                               (1.4)
     [18..23] wr_hat_i (depends on q')                               (1.5)
     [24]     m_i; [25..27] h_i = m_i r_c; [28..33] Theta_i about O_i (xx, xy, xz, yy, yz, zz)
     [34..39] active wrench F_i at O_i, frame i                      (1.36)
   then A (6 per coordinate, column k of coordinate k, frame of its body) at T + nb*DYN_NM_TB,
   the generalized forces per coordinate (n), gravity g (3, ground frame) and the armature per
   coordinate (n: MuJoCo's dof_armature, added to M's diagonal, to the joint blocks D_i in the sweeps).

   Topology (regular numbering, kappa[i] < i): kappa, first coordinate and number of
   coordinates of each body (index 0 unused), lambda[k]: the coordinate preceding k on the
   path to the root (-1 if none) -- the sparsity of the tree-sparse factorisation (2.23).

   Forms:
     composite (CBM):   forward pass, composite inertias (2.20) and bias forces (2.22),
                        mass matrix (2.19), right-hand side (2.21), M = L^T D L (2.23)
     articulated (ABM): forward pass, backward pass of articulated inertias (3.7),
                        forward pass of accelerations (3.8)
     ltdl (DEC):        forward pass, reduction to triangular form (3.30), triangular solves (3.31)
   Every factorization is the root-free L^T D L (L unit lower, D diagonal) formed from the last
   row up, as generator/forms/parts/cholesky.py: the joint blocks A^T M* A too. It needs nonzero
   pivots only, not a positive definite matrix (negative masses), and no square roots.
   Workspaces are passed in (sizes: the DYN_NM_WORK_* macros), so nothing here allocates. */
#ifndef DYNAMICA_NUMERIC_CORE_H
#define DYNAMICA_NUMERIC_CORE_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dynamica_tree_ldl.h"

#define DYN_NM_TB 40
#define DYN_NM_NTERMS(nb, n) (DYN_NM_TB * (nb) + 8 * (n) + 3)
/* terms + zero rates + forward pass (v, w_hat: 6 each, rp: 3) */
#define DYN_NM_WORK_BASE(nb, n) (DYN_NM_NTERMS(nb, n) + (n) + 15 * ((nb) + 1))
/* + composite inertias (10) and forces (6) per body, Q, the n x n matrix */
#define DYN_NM_WORK_COMPOSITE(nb, n) (DYN_NM_WORK_BASE(nb, n) + 16 * ((nb) + 1) + (n) + (n) * (n))
/* + articulated inertia (36), bias force (6), Y (36), factor of D (36), u (6), dw (6) per body */
#define DYN_NM_WORK_ARTICULATED(nb, n) (DYN_NM_WORK_BASE(nb, n) + 126 * ((nb) + 1))
/* the L^T D L form keeps U (36), L (36), u (6) per body: the same sizes */
#define DYN_NM_WORK_LTDL(nb, n) DYN_NM_WORK_ARTICULATED(nb, n)
#define DYN_NM_WORK_MASS(nb, n) (DYN_NM_NTERMS(nb, n) + (n) + 10 * ((nb) + 1))
/* workspaces up to this many doubles live on the stack */
#define DYN_NM_STACK 16384

typedef struct {
    int nb, n;
    const int *kappa, *first, *ndof, *lambda;
} dyn_nm_topo;

/* the generated kernel is long straight-line code of cheap statements: -O1 compiles it several
   times faster than -O2 and it runs as fast; the loops here keep the module's -O2 */
#if defined(__GNUC__) && !defined(__clang__)
#define DYN_NM_KERNEL_ATTR __attribute__((optimize("O1")))
#else
#define DYN_NM_KERNEL_ATTR
#endif

typedef void (*dyn_nm_terms_fn)(double t, const double *q, const double *qd, const double *p, double *out);

/* Run CALL with `work` of SIZE doubles (stack when small, else heap; NaN in OUT if that fails). */
#define DYN_NM_WITH_WORK(SIZE, CALL, OUT, NOUT) do {                                          \
        double dyn_nm_stack_[(SIZE) <= DYN_NM_STACK ? (SIZE) : 1];                            \
        double *work = dyn_nm_stack_;                                                         \
        if ((SIZE) > DYN_NM_STACK) {                                                          \
            work = (double *)malloc((size_t)(SIZE) * sizeof(double));                        \
            if (work == NULL) {                                                               \
                for (int k_ = 0; k_ < (NOUT); ++k_) (OUT)[k_] = NAN;                          \
                break;                                                                        \
            }                                                                                 \
        }                                                                                     \
        CALL;                                                                                 \
        if ((SIZE) > DYN_NM_STACK) free(work);                                                \
    } while (0)

/* ------------------------------------------------------------------ 3-vectors, 3x3 */
static inline void dyn_nm_mv(const double *G, const double *x, double *y)      /* y = G x */
{
    y[0] = G[0] * x[0] + G[1] * x[1] + G[2] * x[2];
    y[1] = G[3] * x[0] + G[4] * x[1] + G[5] * x[2];
    y[2] = G[6] * x[0] + G[7] * x[1] + G[8] * x[2];
}

static inline void dyn_nm_mtv(const double *G, const double *x, double *y)     /* y = G^T x */
{
    y[0] = G[0] * x[0] + G[3] * x[1] + G[6] * x[2];
    y[1] = G[1] * x[0] + G[4] * x[1] + G[7] * x[2];
    y[2] = G[2] * x[0] + G[5] * x[1] + G[8] * x[2];
}

static inline void dyn_nm_cross(const double *a, const double *b, double *c)   /* c = a x b */
{
    double c0 = a[1] * b[2] - a[2] * b[1], c1 = a[2] * b[0] - a[0] * b[2], c2 = a[0] * b[1] - a[1] * b[0];
    c[0] = c0; c[1] = c1; c[2] = c2;
}

static inline double dyn_nm_dot6(const double *a, const double *b)
{
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2] + a[3] * b[3] + a[4] * b[4] + a[5] * b[5];
}

/* Theta (6 unique, xx xy xz yy yz zz) times x */
static inline void dyn_nm_symv3(const double *th, const double *x, double *y)
{
    y[0] = th[0] * x[0] + th[1] * x[1] + th[2] * x[2];
    y[1] = th[1] * x[0] + th[3] * x[1] + th[4] * x[2];
    y[2] = th[2] * x[0] + th[4] * x[1] + th[5] * x[2];
}

/* C = A B (3x3, row-major); C may not alias A or B */
static inline void dyn_nm_mm3(const double *A, const double *B, double *C)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            C[3 * r + c] = A[3 * r] * B[c] + A[3 * r + 1] * B[3 + c] + A[3 * r + 2] * B[6 + c];
}

/* C = A^T B */
static inline void dyn_nm_mtm3(const double *A, const double *B, double *C)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            C[3 * r + c] = A[r] * B[c] + A[3 + r] * B[3 + c] + A[6 + r] * B[6 + c];
}

static inline void dyn_nm_skew(const double *r, double *S)       /* S x = r x x */
{
    S[0] = 0.0;   S[1] = -r[2]; S[2] = r[1];
    S[3] = r[2];  S[4] = 0.0;   S[5] = -r[0];
    S[6] = -r[1]; S[7] = r[0];  S[8] = 0.0;
}

/* ------------------------------------------------------------------ spatial operations */
/* y = C_i x for a parent spatial vector x, rp = G rho (frame i) */
static inline void dyn_nm_apply_C(const double *G, const double *rp, const double *x, double *y)
{
    double lin[3], ang[3], t[3];
    dyn_nm_mv(G, x, lin);
    dyn_nm_mv(G, x + 3, ang);
    dyn_nm_cross(ang, rp, t);
    y[0] = lin[0] + t[0]; y[1] = lin[1] + t[1]; y[2] = lin[2] + t[2];
    y[3] = ang[0]; y[4] = ang[1]; y[5] = ang[2];
}

/* acc += C_i^T f: a wrench at O_i (frame i) moved to the parent's origin and axes */
static inline void dyn_nm_add_CT(const double *G, const double *rho, const double *f, double *acc)
{
    double fp[3], tp[3], t[3];
    dyn_nm_mtv(G, f, fp);
    dyn_nm_mtv(G, f + 3, tp);
    dyn_nm_cross(rho, fp, t);
    acc[0] += fp[0]; acc[1] += fp[1]; acc[2] += fp[2];
    acc[3] += t[0] + tp[0]; acc[4] += t[1] + tp[1]; acc[5] += t[2] + tp[2];
}

/* y = M a for a rigid inertia M = [[m E, -h~], [h~, Theta]] given as 10 numbers (m, h, Theta) */
static inline void dyn_nm_inertia_times(const double *I, const double *a, double *y)
{
    double t[3], u[3];
    dyn_nm_cross(I + 1, a + 3, t);
    dyn_nm_cross(I + 1, a, u);
    double w[3];
    dyn_nm_symv3(I + 4, a + 3, w);
    y[0] = I[0] * a[0] - t[0]; y[1] = I[0] * a[1] - t[1]; y[2] = I[0] * a[2] - t[2];
    y[3] = u[0] + w[0]; y[4] = u[1] + w[1]; y[5] = u[2] + w[2];
}

/* acc += C^T M C for a rigid/composite inertia (10 numbers, (2.20)), G and rho of the joint:
   h' = G^T h, h -> m rho + h', Theta -> G^T Theta G + m (|rho|^2 E - rho rho^T)
   + 2 (rho . h') E - (h' rho^T + rho h'^T) */
static inline void dyn_nm_add_transfer10(const double *G, const double *rho, const double *I, double *acc)
{
    double m = I[0], hr[3], T[9], P[9], R[9];
    dyn_nm_mtv(G, I + 1, hr);
    const double *th = I + 4;
    T[0] = th[0]; T[1] = th[1]; T[2] = th[2];
    T[3] = th[1]; T[4] = th[3]; T[5] = th[4];
    T[6] = th[2]; T[7] = th[4]; T[8] = th[5];
    dyn_nm_mm3(T, G, P);
    dyn_nm_mtm3(G, P, R);
    double rr = rho[0] * rho[0] + rho[1] * rho[1] + rho[2] * rho[2];
    double rh = rho[0] * hr[0] + rho[1] * hr[1] + rho[2] * hr[2];
    static const int idx[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
    acc[0] += m;
    for (int k = 0; k < 3; ++k)
        acc[1 + k] += m * rho[k] + hr[k];
    for (int k = 0; k < 6; ++k) {
        int r = idx[k][0], c = idx[k][1];
        double e = R[3 * r + c] - m * rho[r] * rho[c] - hr[r] * rho[c] - rho[r] * hr[c];
        if (r == c)
            e += m * rr + 2.0 * rh;
        acc[4 + k] += e;
    }
}

/* the 6x6 (row-major) of a rigid inertia given as 10 numbers */
static inline void dyn_nm_rigid6(const double *I, double *M)
{
    const double m = I[0], *h = I + 1, *th = I + 4;
    memset(M, 0, 36 * sizeof(double));
    M[0] = M[7] = M[14] = m;
    double S[9];
    dyn_nm_skew(h, S);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            M[6 * r + 3 + c] = -S[3 * r + c];     /* -h~ */
            M[6 * (3 + r) + c] = S[3 * r + c];     /*  h~ */
        }
    M[21] = th[0]; M[22] = th[1]; M[23] = th[2];
    M[27] = th[1]; M[28] = th[3]; M[29] = th[4];
    M[33] = th[2]; M[34] = th[4]; M[35] = th[5];
}

static inline void dyn_nm_block_get(const double *M, int br, int bc, double *B)
{
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            B[3 * r + c] = M[6 * (3 * br + r) + 3 * bc + c];
}

/* acc += C^T I C for a symmetric 6x6 I (row-major), C = diag(G, G) [[E, -rho~], [0, E]]:
   with I' = diag(G^T, G^T) I diag(G, G) = [[A, B], [B^T, D]]:
   C^T I C = [[A, B - A r~], [., D + r~ B - B^T r~ - r~ A r~]] */
static inline void dyn_nm_add_transfer6(const double *G, const double *rho, const double *I, double *acc)
{
    double X[9], P[9], A[9], B[9], D[9], S[9], AS[9], R12[9], R22[9], T[9];
    dyn_nm_block_get(I, 0, 0, X); dyn_nm_mm3(X, G, P); dyn_nm_mtm3(G, P, A);
    dyn_nm_block_get(I, 0, 1, X); dyn_nm_mm3(X, G, P); dyn_nm_mtm3(G, P, B);
    dyn_nm_block_get(I, 1, 1, X); dyn_nm_mm3(X, G, P); dyn_nm_mtm3(G, P, D);
    dyn_nm_skew(rho, S);
    dyn_nm_mm3(A, S, AS);                                  /* A r~ */
    for (int k = 0; k < 9; ++k)
        R12[k] = B[k] - AS[k];                             /* B - A r~ */
    /* R22 = D + r~ (B - A r~) - B^T r~ = D + S R12 + (S B)^T  (since -B^T r~ = (r~ B)^T) */
    dyn_nm_mm3(S, R12, R22);
    dyn_nm_mm3(S, B, T);
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            R22[3 * r + c] += D[3 * r + c] + T[3 * c + r];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c) {
            acc[6 * r + c] += A[3 * r + c];
            acc[6 * r + 3 + c] += R12[3 * r + c];
            acc[6 * (3 + c) + r] += R12[3 * r + c];
        }
    /* symmetrise the angular block (it is symmetric up to rounding) */
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            acc[6 * (3 + r) + 3 + c] += 0.5 * (R22[3 * r + c] + R22[3 * c + r]);
}

static inline void dyn_nm_symv6(const double *M, const double *x, double *y)
{
    for (int r = 0; r < 6; ++r)
        y[r] = dyn_nm_dot6(M + 6 * r, x);
}

/* ------------------------------------------------------------------ shared passes */
/* The generated kernel stores only the entries that are not structurally zero. */
static inline void dyn_nm_terms(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                                const double *qd, const double *p, double *T)
{
    memset(T, 0, (size_t)DYN_NM_NTERMS(tp->nb, tp->n) * sizeof(double));
    terms(t, q, qd, p, T);
}

/* Velocities v_i (1.13) and bias accelerations w_hat_i (1.33) with the accelerated ground
   w_hat_0 = [-g; 0]; rp_i = G_i rho_i. v, wh: 6 (nb + 1), rp: 3 (nb + 1). */
static void dyn_nm_forward(const dyn_nm_topo *tp, const double *T, const double *qd, double *v, double *wh,
                           double *rp)
{
    const int nb = tp->nb;
    const double *Aall = T + DYN_NM_TB * nb, *g = T + DYN_NM_TB * nb + 7 * tp->n;
    for (int k = 0; k < 6; ++k)
        v[k] = wh[k] = 0.0;
    wh[0] = -g[0]; wh[1] = -g[1]; wh[2] = -g[2];
    for (int i = 1; i <= nb; ++i) {
        const double *b = T + DYN_NM_TB * (i - 1), *G = b, *rho = b + 9, *vrh = b + 12, *wrh = b + 18;
        const int k = tp->kappa[i], f = tp->first[i], ni = tp->ndof[i];
        double *r = rp + 3 * i, *vi = v + 6 * i, *wi = wh + 6 * i;
        const double *vk = v + 6 * k;
        double vr[6], wk[3], t[3], u[3];
        dyn_nm_mv(G, rho, r);
        for (int c = 0; c < 6; ++c)
            vr[c] = vrh[c];
        for (int c = 0; c < ni; ++c) {
            const double *a = Aall + 6 * (f + c), s = qd[f + c];
            for (int e = 0; e < 6; ++e)
                vr[e] += s * a[e];
        }
        dyn_nm_mv(G, vk + 3, wk);
        dyn_nm_mv(G, vk, vi);
        dyn_nm_cross(wk, r, t);
        for (int e = 0; e < 3; ++e) {
            vi[e] += t[e] + vr[e];
            vi[3 + e] = wk[e] + vr[3 + e];
        }
        /* w_hat_i = C_i w_hat_k + wc + wr_hat, wc = [wk x (wk x rp) + 2 wk x vr_lin; wk x vr_ang] */
        dyn_nm_apply_C(G, r, wh + 6 * k, wi);
        double wc[6];
        dyn_nm_cross(wk, t, wc);
        dyn_nm_cross(wk, vr, u);
        wc[0] += 2.0 * u[0]; wc[1] += 2.0 * u[1]; wc[2] += 2.0 * u[2];
        dyn_nm_cross(wk, vr + 3, wc + 3);
        for (int e = 0; e < 6; ++e)
            wi[e] += wc[e] + wrh[e];
    }
}

/* F_hat_i = F^c_i + F_i - M_i w_hat_i (2.14), F^c = [-w x (w x h); -w x (Theta w)] */
static inline void dyn_nm_bias(const double *b, const double *v, const double *wh, double *F)
{
    const double *I = b + 24, *h = b + 25, *th = b + 28, *Fa = b + 34, *w = v + 3;
    double t[3], u[3], Mw[6];
    dyn_nm_cross(w, h, t);
    dyn_nm_cross(w, t, u);
    F[0] = -u[0]; F[1] = -u[1]; F[2] = -u[2];
    dyn_nm_symv3(th, w, t);
    dyn_nm_cross(w, t, u);
    F[3] = -u[0]; F[4] = -u[1]; F[5] = -u[2];
    dyn_nm_inertia_times(I, wh, Mw);
    for (int e = 0; e < 6; ++e)
        F[e] += Fa[e] - Mw[e];
}

/* Composite inertias M*_i (2.20) as 10 numbers per body: Ms 10 (nb + 1) */
static void dyn_nm_composite_inertias(const dyn_nm_topo *tp, const double *T, double *Ms)
{
    const int nb = tp->nb;
    for (int i = 1; i <= nb; ++i)
        memcpy(Ms + 10 * i, T + DYN_NM_TB * (i - 1) + 24, 10 * sizeof(double));
    for (int i = nb; i >= 1; --i) {
        const int k = tp->kappa[i];
        if (k > 0) {
            const double *b = T + DYN_NM_TB * (i - 1);
            dyn_nm_add_transfer10(b, b + 9, Ms + 10 * i, Ms + 10 * k);
        }
    }
}

/* The mass matrix (2.19), full n x n row-major, from the composite inertias */
static void dyn_nm_mass_blocks(const dyn_nm_topo *tp, const double *T, const double *Ms, double *M)
{
    const int nb = tp->nb, n = tp->n;
    const double *Aall = T + DYN_NM_TB * nb, *arm = Aall + 7 * n + 3;
    memset(M, 0, (size_t)n * (size_t)n * sizeof(double));
    for (int i = 1; i <= nb; ++i) {
        const int ni = tp->ndof[i], fi = tp->first[i];
        if (ni == 0)
            continue;
        double f[36];
        for (int c = 0; c < ni; ++c)
            dyn_nm_inertia_times(Ms + 10 * i, Aall + 6 * (fi + c), f + 6 * c);
        for (int c = 0; c < ni; ++c)
            for (int c2 = 0; c2 <= c; ++c2) {
                double x = dyn_nm_dot6(Aall + 6 * (fi + c2), f + 6 * c) + (c2 == c ? arm[fi + c] : 0.0);
                M[(size_t)(fi + c) * n + fi + c2] = x;
                M[(size_t)(fi + c2) * n + fi + c] = x;
            }
        int j = i;
        while (tp->kappa[j] > 0) {
            const double *b = T + DYN_NM_TB * (j - 1);
            for (int c = 0; c < ni; ++c) {
                double g[6] = {0, 0, 0, 0, 0, 0};
                dyn_nm_add_CT(b, b + 9, f + 6 * c, g);
                memcpy(f + 6 * c, g, sizeof g);
            }
            j = tp->kappa[j];
            const int nj = tp->ndof[j], fj = tp->first[j];
            for (int c = 0; c < ni; ++c)
                for (int c2 = 0; c2 < nj; ++c2) {
                    double x = dyn_nm_dot6(Aall + 6 * (fj + c2), f + 6 * c);
                    M[(size_t)(fi + c) * n + fj + c2] = x;
                    M[(size_t)(fj + c2) * n + fi + c] = x;
                }
        }
    }
}

/* Solve M x = b in place (x = b on entry) with M = L^T D L, L unit lower triangular with the
   sparsity of the tree (2.23), root-free: H is factorised in place (its lower triangle: L_kj
   below the diagonal, 1/d_k on it). Pivot k eliminated, the rows of its ancestors i get
   H_ij -= L_ki W_kj with W_kj = d_k L_kj (j on the path from i; still unscaled in row k). */
static void dyn_nm_ldl_solve(const dyn_nm_topo *tp, double *H, double *x)
{
    for (int k = tp->n - 1; k >= 0; --k)
        dyn_tree_ldl_pivot(tp->lambda, tp->n, H, k);
    dyn_tree_ldl_solve(tp->lambda, tp->n, H, x);
}

/* A joint block D = A^T Y + diag(arm) (ni x ni, A the columns of A_i, Y = M* A, arm the joint's
   armatures) as D = L^T diag(d) L from the last row up: L unit lower row-major in 6 x 6
   (L[6 r + c], c < r), 1/d_r at L[6 r + r]. */
static void dyn_nm_ldl_block(int ni, const double *A, const double *Y, const double *arm, double *L)
{
    double W[36];                                          /* W[6 m + c] = d_m L_mc */
    for (int r = ni - 1; r >= 0; --r)
        for (int c = r; c >= 0; --c) {
            double s = dyn_nm_dot6(A + 6 * r, Y + 6 * c) + (c == r ? arm[r] : 0.0);
            for (int m = r + 1; m < ni; ++m)
                s -= L[6 * m + r] * W[6 * m + c];
            if (c == r) {
                L[6 * r + r] = 1.0 / s;
            } else {
                W[6 * r + c] = s;
                L[6 * r + c] = s * L[6 * r + r];
            }
        }
}

/* L^T X = X in place for ni rows X_r of `len` numbers (stride `stride`), from the last up */
static inline void dyn_nm_ldl_block_solve_T(int ni, const double *L, double *X, int len, int stride)
{
    for (int r = ni - 1; r >= 0; --r)
        for (int m = r + 1; m < ni; ++m) {
            const double l = L[6 * m + r];
            for (int e = 0; e < len; ++e)
                X[stride * r + e] -= l * X[stride * m + e];
        }
}

/* ------------------------------------------------------------------ entry points */
/* The mass matrix at (t, q): terms at zero rates, composite inertias, (2.19) */
static void dyn_nm_mass(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q, const double *p,
                        double *M, double *work)
{
    const int nb = tp->nb, n = tp->n;
    double *T = work, *zero = T + DYN_NM_NTERMS(nb, n), *Ms = zero + n;
    memset(zero, 0, (size_t)n * sizeof(double));
    dyn_nm_terms(tp, terms, t, q, zero, p, T);
    dyn_nm_composite_inertias(tp, T, Ms);
    dyn_nm_mass_blocks(tp, T, Ms, M);
}

/* CBM: q'' from M q'' = Q, (2.19)-(2.23) */
static void dyn_nm_composite_qdd(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                                 const double *qd, const double *p, double *qdd, double *work)
{
    const int nb = tp->nb, n = tp->n;
    double *T = work, *v = T + DYN_NM_NTERMS(nb, n) + n, *wh = v + 6 * (nb + 1), *rp = wh + 6 * (nb + 1);
    double *Ms = rp + 3 * (nb + 1), *Fs = Ms + 10 * (nb + 1), *M = Fs + 6 * (nb + 1);
    const double *Aall = T + DYN_NM_TB * nb, *gen = Aall + 6 * n;
    dyn_nm_terms(tp, terms, t, q, qd, p, T);
    dyn_nm_forward(tp, T, qd, v, wh, rp);
    for (int i = 1; i <= nb; ++i)
        dyn_nm_bias(T + DYN_NM_TB * (i - 1), v + 6 * i, wh + 6 * i, Fs + 6 * i);
    dyn_nm_composite_inertias(tp, T, Ms);
    for (int i = nb; i >= 1; --i) {                       /* (2.22) */
        const int k = tp->kappa[i];
        if (k > 0) {
            const double *b = T + DYN_NM_TB * (i - 1);
            dyn_nm_add_CT(b, b + 9, Fs + 6 * i, Fs + 6 * k);
        }
    }
    for (int i = 1; i <= nb; ++i)                         /* (2.21) */
        for (int c = 0; c < tp->ndof[i]; ++c) {
            const int idx = tp->first[i] + c;
            qdd[idx] = dyn_nm_dot6(Aall + 6 * idx, Fs + 6 * i) + gen[idx];
        }
    dyn_nm_mass_blocks(tp, T, Ms, M);                     /* (2.19) */
    dyn_nm_ldl_solve(tp, M, qdd);                         /* (2.23) */
}

/* The sweep of the extended system, ABM (3.7)-(3.8) and DEC (3.30)-(3.31) in one pass pair.
   D_i = A_i^T M*_i A_i + diag(armatures of joint i) = L_i^T diag(d_i) L_i (L_i unit lower, from
   the last row), Z_i = L_i^-T Y_i^T (rows, Y_i = M*_i A_i), z_i = L_i^-T u_i (u_i = A_i^T F*_i + Q_i); H_i = M*_i - Z^T diag(d)^-1 Z
   and h_i = F*_i - Z^T diag(d)^-1 z go to the parent; q''_i = L_i^-1 diag(d_i)^-1 (z_i - Z_i a_i).
   `reduced`: DEC keeps Z_i, z_i for the forward solve (3.31); ABM keeps Y_i, u_i and reduces
   them again there (3.8). The same numbers either way. */
static void dyn_nm_sweep_qdd(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                             const double *qd, const double *p, double *qdd, double *work, int reduced)
{
    const int nb = tp->nb, n = tp->n;
    double *T = work, *v = T + DYN_NM_NTERMS(nb, n) + n, *wh = v + 6 * (nb + 1), *rp = wh + 6 * (nb + 1);
    double *IA = rp + 3 * (nb + 1), *pA = IA + 36 * (nb + 1), *Y = pA + 6 * (nb + 1), *Lf = Y + 36 * (nb + 1);
    double *u = Lf + 36 * (nb + 1), *dw = u + 6 * (nb + 1);
    const double *Aall = T + DYN_NM_TB * nb, *gen = Aall + 6 * n, *arm = gen + n + 3;
    dyn_nm_terms(tp, terms, t, q, qd, p, T);
    dyn_nm_forward(tp, T, qd, v, wh, rp);
    for (int i = 1; i <= nb; ++i) {
        const double *b = T + DYN_NM_TB * (i - 1);
        dyn_nm_rigid6(b + 24, IA + 36 * i);
        dyn_nm_bias(b, v + 6 * i, wh + 6 * i, pA + 6 * i);
    }
    for (int i = nb; i >= 1; --i) {                       /* backward pass (3.7), (3.30) */
        const int ni = tp->ndof[i], fi = tp->first[i], k = tp->kappa[i];
        double *Ii = IA + 36 * i, *Fi = pA + 6 * i, *Yi = Y + 36 * i, *L = Lf + 36 * i, *ui = u + 6 * i;
        for (int c = 0; c < ni; ++c) {
            const double *a = Aall + 6 * (fi + c);
            dyn_nm_symv6(Ii, a, Yi + 6 * c);
            ui[c] = dyn_nm_dot6(a, Fi) + gen[fi + c];
        }
        dyn_nm_ldl_block(ni, Aall + 6 * fi, Yi, arm + fi, L);
        if (k == 0 && !reduced)
            continue;
        double Z[36], z[6];
        memcpy(Z, Yi, (size_t)(6 * ni) * sizeof(double));
        memcpy(z, ui, (size_t)ni * sizeof(double));
        dyn_nm_ldl_block_solve_T(ni, L, Z, 6, 6);
        dyn_nm_ldl_block_solve_T(ni, L, z, 1, 1);
        if (reduced) {
            memcpy(Yi, Z, (size_t)(6 * ni) * sizeof(double));
            memcpy(ui, z, (size_t)ni * sizeof(double));
        }
        if (k == 0)
            continue;
        double H[36], h[6];
        memcpy(H, Ii, sizeof H);
        memcpy(h, Fi, sizeof h);
        for (int c = 0; c < ni; ++c) {
            const double *Zc = Z + 6 * c, dinv = L[6 * c + c];
            for (int r = 0; r < 6; ++r) {
                const double zr = dinv * Zc[r];
                h[r] -= zr * z[c];
                for (int s = 0; s < 6; ++s)
                    H[6 * r + s] -= zr * Zc[s];
            }
        }
        const double *b = T + DYN_NM_TB * (i - 1);
        dyn_nm_add_transfer6(b, b + 9, H, IA + 36 * k);
        dyn_nm_add_CT(b, b + 9, h, pA + 6 * k);
    }
    for (int e = 0; e < 6; ++e)
        dw[e] = 0.0;
    for (int i = 1; i <= nb; ++i) {                       /* forward pass (3.8), (3.31) */
        const int ni = tp->ndof[i], fi = tp->first[i], k = tp->kappa[i];
        const double *b = T + DYN_NM_TB * (i - 1), *Yi = Y + 36 * i, *L = Lf + 36 * i, *ui = u + 6 * i;
        double a[6], x[6];
        dyn_nm_apply_C(b, rp + 3 * i, dw + 6 * k, a);
        for (int c = 0; c < ni; ++c)                     /* z - Z a (reduced), else u - Y^T a */
            x[c] = ui[c] - dyn_nm_dot6(Yi + 6 * c, a);
        if (!reduced)
            dyn_nm_ldl_block_solve_T(ni, L, x, 1, 1);    /* L^T y = u - Y^T a */
        for (int c = 0; c < ni; ++c) {                   /* L x = D^-1 y */
            double s = L[6 * c + c] * x[c];
            for (int m = 0; m < c; ++m)
                s -= L[6 * c + m] * x[m];
            x[c] = s;
        }
        double *di = dw + 6 * i;
        for (int e = 0; e < 6; ++e)
            di[e] = a[e];
        for (int c = 0; c < ni; ++c) {
            const double *A = Aall + 6 * (fi + c);
            qdd[fi + c] = x[c];
            for (int e = 0; e < 6; ++e)
                di[e] += x[c] * A[e];
        }
    }
}

/* ABM: the sweep (3.7)-(3.8) */
static void dyn_nm_articulated_qdd(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                                   const double *qd, const double *p, double *qdd, double *work)
{
    dyn_nm_sweep_qdd(tp, terms, t, q, qd, p, qdd, work, 0);
}

/* DEC: L^T D L of the extended system, (3.30)-(3.31) */
static void dyn_nm_ltdl_qdd(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                            const double *qd, const double *p, double *qdd, double *work)
{
    dyn_nm_sweep_qdd(tp, terms, t, q, qd, p, qdd, work, 1);
}

#endif
