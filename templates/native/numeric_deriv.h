/* The derivatives variant "numeric" of dynamica (generator/kinds/derivatives.py): the analytical
   derivatives of inverse dynamics (Carpentier and Mansard, "Analytical derivatives of rigid body
   dynamics algorithms", RSS 2018) as hand-written loops over per-body arrays, fed by the
   generated per-joint terms kernel of numeric mode (numeric_core.h: G_i, rho_i, the body
   inertias, A per coordinate, the generalized forces, gravity, the armature).

   The formulas are those of generator/kinds/derivatives_recursive.py (variant recursive_loops),
   evaluated numerically: ground frame, Pluecker at the ground origin, [lin; ang];
     R_i = G_i R_kappa(i), p_i = p_kappa(i) + R_kappa(i)^T rho_i           (pose of body i)
     S_c = world twist of A_c; Sd_c = v^-_c x S_c; Sdd_c = a^-_c x S_c + v^-_c x Sd_c
     v, a: + q'_c S_c, + x_c S_c + q'_c Sd_c per coordinate (a_0 = [-g; 0])
     I_i (world), Id_i = v x* I - I v x, f_i = I a + v x* I v - F_i (F_i the active wrench)
     IC, IdC, HC (= sum I v), FC: sums over the subtree
     r_c = S_c . FC - Q_c + armature_c x_c
   and the per-coordinate vectors V = [S | Sd | Sdd | a = IC S | b = IdC S - S x* HC |
   g = S x* FC + IC Sdd + IdC Sd + Sd x* HC | k = IdC S + S x* HC + 2 IC Sd] that
   dynamica_linalg.h dyn_rl_* turns into J = [dr/dq | dr/dq'], M and its L^T D L factors.
   The pairs carry each body's wrench rigidly with it, as the inertial forces; what the active
   forces' values add when they depend on q or q' (generalized forces Q_c, body wrenches F_i)
   comes from generated kernels (`dyn_nd_force_start`), which fill J before the pairs add theirs. */
#ifndef DYNAMICA_NUMERIC_DERIV_H
#define DYNAMICA_NUMERIC_DERIV_H
#include "numeric_core.h"
#include "dynamica_linalg.h"

/* per body: R (9), p (3), v (6), a (6), IC (10), IdC (10), HC (6), FC (6), then (not summed) the
   body's own inertia (10), da (6), dF (6) of `dyn_nd_update` */
#define DYN_ND_PB 78
#define DYN_ND_SUMMED 56

static inline void dyn_nd_crossm(const double *a, const double *b, double *c)   /* motion a x b */
{
    double t1[3], t2[3], t3[3];
    dyn_nm_cross(a + 3, b, t1);
    dyn_nm_cross(a, b + 3, t2);
    dyn_nm_cross(a + 3, b + 3, t3);
    c[0] = t1[0] + t2[0]; c[1] = t1[1] + t2[1]; c[2] = t1[2] + t2[2];
    c[3] = t3[0]; c[4] = t3[1]; c[5] = t3[2];
}

static inline void dyn_nd_crossf(const double *a, const double *f, double *c)   /* a x* f */
{
    double t1[3], t2[3], t3[3];
    dyn_nm_cross(a + 3, f, t1);
    dyn_nm_cross(a, f, t2);
    dyn_nm_cross(a + 3, f + 3, t3);
    c[0] = t1[0]; c[1] = t1[1]; c[2] = t1[2];
    c[3] = t2[0] + t3[0]; c[4] = t2[1] + t3[1]; c[5] = t2[2] + t3[2];
}

/* Id = v x* I - I v x of a world inertia I (10): (0, h', Theta') with h' = w x h + m v_lin,
   Theta' = X + X^T - h v^T - v h^T + 2 (v . h) E, X = w~ Theta */
static inline void dyn_nd_inertia_rate(const double *I, const double *v, double *Id)
{
    const double m = I[0], *h = I + 1, *th = I + 4, *vl = v, *w = v + 3;
    const double T[9] = {th[0], th[1], th[2], th[1], th[3], th[4], th[2], th[4], th[5]};
    double X[9], t[3];
    for (int r = 0; r < 3; ++r)
        for (int c = 0; c < 3; ++c)
            X[3 * r + c] = w[(r + 1) % 3] * T[3 * ((r + 2) % 3) + c] - w[(r + 2) % 3] * T[3 * ((r + 1) % 3) + c];
    dyn_nm_cross(w, h, t);
    Id[0] = 0.0;
    for (int k = 0; k < 3; ++k)
        Id[1 + k] = t[k] + m * vl[k];
    const double vh = vl[0] * h[0] + vl[1] * h[1] + vl[2] * h[2];
    static const int idx[6][2] = {{0, 0}, {0, 1}, {0, 2}, {1, 1}, {1, 2}, {2, 2}};
    for (int k = 0; k < 6; ++k) {
        int r = idx[k][0], c = idx[k][1];
        double e = X[3 * r + c] + X[3 * c + r] - h[r] * vl[c] - vl[r] * h[c];
        if (r == c)
            e += 2.0 * vh;
        Id[4 + k] = e;
    }
}

/* The passes at trial accelerations x: r (n) and, when V is not NULL, the blocks of V (42 n);
   D (n) the armature. T: the terms (DYN_NM_NTERMS), W: DYN_ND_PB (nb + 1) doubles. */
static void dyn_nd_passes(const dyn_nm_topo *tp, const double *T, const double *qd, const double *x, double *r,
                          double *V, double *D, double *W)
{
    const int nb = tp->nb, n = tp->n;
    const size_t n6 = 6 * (size_t)n;
    const double *Aall = T + DYN_NM_TB * nb, *gen = Aall + 6 * n, *g = gen + n, *arm = g + 3;
    double *S = V, *Sd = V ? V + n6 : NULL, *Sdd = V ? V + 2 * n6 : NULL, *al = V ? V + 3 * n6 : NULL,
           *be = V ? V + 4 * n6 : NULL, *gg = V ? V + 5 * n6 : NULL, *kk = V ? V + 6 * n6 : NULL;
    double *W0 = W;
    memset(W0, 0, DYN_ND_PB * sizeof(double));
    W0[0] = W0[4] = W0[8] = 1.0;                                   /* R_0 = E, p_0 = 0, v_0 = 0 */
    W0[18] = -g[0]; W0[19] = -g[1]; W0[20] = -g[2];                /* a_0 = [-g; 0] */
    for (int i = 1; i <= nb; ++i) {                                /* forward: poses, twists, v, a, I, Id, f */
        const double *b = T + DYN_NM_TB * (i - 1), *G = b, *rho = b + 9, *F = b + 34;
        const double *Wk = W + DYN_ND_PB * (size_t)tp->kappa[i];
        double *Wi = W + DYN_ND_PB * (size_t)i, *R = Wi, *p = Wi + 9, *v = Wi + 12, *a = Wi + 18, *IC = Wi + 24,
               *IdC = Wi + 34, *HC = Wi + 44, *FC = Wi + 50;
        double t3[3], t6[6], u6[6];
        dyn_nm_mm3(G, Wk, R);
        dyn_nm_mtv(Wk, rho, t3);
        for (int k = 0; k < 3; ++k)
            p[k] = Wk[9 + k] + t3[k];
        for (int k = 0; k < 6; ++k) {
            v[k] = Wk[12 + k];
            a[k] = Wk[18 + k];
        }
        for (int c = tp->first[i]; c < tp->first[i] + tp->ndof[i]; ++c) {
            const double *col = Aall + 6 * c;
            double sl[6], *s = V ? S + 6 * c : sl, sdl[6], *sd = V ? Sd + 6 * c : sdl, sddl[6],
                   *sdd = V ? Sdd + 6 * c : sddl;
            dyn_nm_mtv(R, col + 3, s + 3);                         /* S_c = to_world(R, p, A_c) */
            dyn_nm_mtv(R, col, s);
            dyn_nm_cross(p, s + 3, t3);
            s[0] += t3[0]; s[1] += t3[1]; s[2] += t3[2];
            dyn_nd_crossm(v, s, sd);                               /* v^-_c x S_c */
            dyn_nd_crossm(a, s, sdd);                              /* a^-_c x S_c + v^-_c x Sd_c */
            dyn_nd_crossm(v, sd, t6);
            for (int k = 0; k < 6; ++k) {
                sdd[k] += t6[k];
                a[k] += x[c] * s[k] + qd[c] * sd[k];
                v[k] += qd[c] * s[k];
            }
        }
        memset(IC, 0, 10 * sizeof(double));
        dyn_nm_add_transfer10(R, p, b + 24, IC);                   /* the body's inertia, world */
        memcpy(Wi + DYN_ND_SUMMED, IC, 10 * sizeof(double));
        dyn_nd_inertia_rate(IC, v, IdC);
        dyn_nm_inertia_times(IC, v, HC);
        dyn_nm_inertia_times(IC, a, FC);
        dyn_nd_crossf(v, HC, t6);
        dyn_nm_mtv(R, F, u6);                                      /* the active wrench, world */
        dyn_nm_mtv(R, F + 3, u6 + 3);
        dyn_nm_cross(p, u6, t3);
        for (int k = 0; k < 3; ++k)
            u6[3 + k] += t3[k];
        for (int k = 0; k < 6; ++k)
            FC[k] += t6[k] - u6[k];
    }
    for (int i = nb; i >= 1; --i) {                                /* backward: subtree sums, r, V */
        double *Wi = W + DYN_ND_PB * (size_t)i, *IC = Wi + 24, *IdC = Wi + 34, *HC = Wi + 44, *FC = Wi + 50;
        const int k = tp->kappa[i];
        if (k > 0) {
            double *Wk = W + DYN_ND_PB * (size_t)k;
            for (int e = 24; e < DYN_ND_SUMMED; ++e)
                Wk[e] += Wi[e];
        }
        for (int c = tp->first[i]; c < tp->first[i] + tp->ndof[i]; ++c) {
            D[c] = arm[c];
            if (V == NULL) {                                       /* r only: S_c again */
                const double *col = Aall + 6 * c, *R = Wi, *p = Wi + 9;
                double s[6], t3[3];
                dyn_nm_mtv(R, col + 3, s + 3);
                dyn_nm_mtv(R, col, s);
                dyn_nm_cross(p, s + 3, t3);
                s[0] += t3[0]; s[1] += t3[1]; s[2] += t3[2];
                r[c] = dyn_nm_dot6(s, FC) - gen[c] + arm[c] * x[c];
                continue;
            }
            const double *s = S + 6 * c, *sd = Sd + 6 * c, *sdd = Sdd + 6 * c;
            double *ac = al + 6 * c, *bc = be + 6 * c, *gc = gg + 6 * c, *kc = kk + 6 * c, t6[6], u6[6], w6[6];
            r[c] = dyn_nm_dot6(s, FC) - gen[c] + arm[c] * x[c];
            dyn_nm_inertia_times(IC, s, ac);
            dyn_nm_inertia_times(IdC, s, t6);                      /* IdC S */
            dyn_nd_crossf(s, HC, u6);                              /* S x* HC */
            for (int e = 0; e < 6; ++e) {
                bc[e] = t6[e] - u6[e];
                kc[e] = t6[e] + u6[e];
            }
            dyn_nm_inertia_times(IC, sd, w6);
            for (int e = 0; e < 6; ++e)
                kc[e] += 2.0 * w6[e];
            dyn_nd_crossf(s, FC, gc);
            dyn_nm_inertia_times(IC, sdd, t6);
            dyn_nm_inertia_times(IdC, sd, u6);
            dyn_nd_crossf(sd, HC, w6);
            for (int e = 0; e < 6; ++e)
                gc[e] += t6[e] + u6[e] + w6[e];
        }
    }
}

/* The x-dependent parts after `dyn_nd_passes` at x = 0 (W and V as it left them), for x: a
   changes by da_i = da_kappa(i) + sum of x_c S_c, Sdd_c by da^-_c x S_c, FC by the subtree sum
   of I da, so r_c by S_c . dFC and g_c by S_c x* dFC + IC dSdd_c (all linear in x). */
static void dyn_nd_update(const dyn_nm_topo *tp, const double *T, const double *x, double *r, double *V,
                          double *W)
{
    const int nb = tp->nb, n = tp->n;
    const size_t n6 = 6 * (size_t)n;
    const double *arm = T + DYN_NM_TB * nb + 7 * n + 3;
    double *S = V, *Sdd = V + 2 * n6, *gg = V + 5 * n6;
    memset(W + DYN_ND_SUMMED + 10, 0, 12 * sizeof(double));         /* da_0 = 0 */
    for (int i = 1; i <= nb; ++i) {
        double *Wi = W + DYN_ND_PB * (size_t)i, *da = Wi + DYN_ND_SUMMED + 10, *dF = da + 6;
        const double *dak = W + DYN_ND_PB * (size_t)tp->kappa[i] + DYN_ND_SUMMED + 10;
        double t6[6];
        for (int k = 0; k < 6; ++k)
            da[k] = dak[k];
        for (int c = tp->first[i]; c < tp->first[i] + tp->ndof[i]; ++c) {
            const double *s = S + 6 * c;
            dyn_nd_crossm(da, s, t6);                              /* dSdd_c, kept in g_c's place below */
            for (int k = 0; k < 6; ++k) {
                Sdd[6 * c + k] += t6[k];
                da[k] += x[c] * s[k];
            }
            double *IC = Wi + 24, u6[6];
            dyn_nm_inertia_times(IC, t6, u6);                      /* IC: the subtree's, after the passes */
            for (int k = 0; k < 6; ++k)
                gg[6 * c + k] += u6[k];
        }
        dyn_nm_inertia_times(Wi + DYN_ND_SUMMED, da, dF);
    }
    for (int i = nb; i >= 1; --i) {
        double *Wi = W + DYN_ND_PB * (size_t)i, *dF = Wi + DYN_ND_SUMMED + 16;
        const int k = tp->kappa[i];
        if (k > 0) {
            double *dFk = W + DYN_ND_PB * (size_t)k + DYN_ND_SUMMED + 16;
            for (int e = 0; e < 6; ++e)
                dFk[e] += dF[e];
        }
        for (int c = tp->first[i]; c < tp->first[i] + tp->ndof[i]; ++c) {
            double t6[6];
            r[c] += dyn_nm_dot6(S + 6 * c, dF) + arm[c] * x[c];
            dyn_nd_crossf(S + 6 * c, dF, t6);
            for (int e = 0; e < 6; ++e)
                gg[6 * c + e] += t6[e];
        }
    }
}

/* The generated partials of the active forces (`force_jacobian`, `wrench_jacobian` of
   generator/kinds/derivatives.py; NULL: the forces are free of the state): J = -dQ/d[q, q']
   (2 n n, row-major n x 2n) and B = dF_i/d[q, q'] (12 nb n: body i's wrench [force; torque] in
   its frame, row 6 (i - 1) + e, row-major 6 nb x 2n); their structural zeros are not written. */
typedef void (*dyn_nd_force_fn)(double t, const double *q, const double *qd, const double *p, double *out);

/* J cleared, then the active forces' part: -dQ/d[q, q'] and -S_c . sum over the subtree of
   X_j^* dF_j/d[q, q'] (the wrench's partials at a fixed pose, carried to the ground frame as
   `dyn_nd_passes` carries F; its motion with the body is the pairs' part). S: V's first block, W:
   the poses of `dyn_nd_passes`. */
static void dyn_nd_force_start(const dyn_nm_topo *tp, dyn_nd_force_fn force, dyn_nd_force_fn wrench, double t,
                               const double *q, const double *qd, const double *p, const double *S,
                               const double *W, double *J)
{
    const int nb = tp->nb, n = tp->n;
    const size_t m = 2 * (size_t)n;
    memset(J, 0, m * n * sizeof(double));
    if (force != NULL)
        force(t, q, qd, p, J);
    if (wrench == NULL)
        return;
    double *B = (double *)calloc(6 * (size_t)nb * m, sizeof(double));
    if (B == NULL) {
        dyn_fill_nan(J, (int)(m * n));
        return;
    }
    wrench(t, q, qd, p, B);
    for (int i = 1; i <= nb; ++i) {                                /* to the ground frame, column by column */
        const double *R = W + DYN_ND_PB * (size_t)i, *pos = R + 9;
        double *Bi = B + 6 * (size_t)(i - 1) * m;
        for (size_t k = 0; k < m; ++k) {
            double f[3] = {Bi[k], Bi[m + k], Bi[2 * m + k]}, tq[3] = {Bi[3 * m + k], Bi[4 * m + k], Bi[5 * m + k]};
            double fw[3], tw[3], t3[3];
            dyn_nm_mtv(R, f, fw);
            dyn_nm_mtv(R, tq, tw);
            dyn_nm_cross(pos, fw, t3);
            for (int e = 0; e < 3; ++e) {
                Bi[e * m + k] = fw[e];
                Bi[(3 + e) * m + k] = tw[e] + t3[e];
            }
        }
    }
    for (int i = nb; i >= 1; --i) {                                /* subtree sums, then -S_c . sum */
        const double *Bi = B + 6 * (size_t)(i - 1) * m;
        const int k = tp->kappa[i];
        if (k > 0) {
            double *Bk = B + 6 * (size_t)(k - 1) * m;
            for (size_t e = 0; e < 6 * m; ++e)
                Bk[e] += Bi[e];
        }
        for (int c = tp->first[i]; c < tp->first[i] + tp->ndof[i]; ++c) {
            const double *s = S + 6 * (size_t)c;
            double *Jc = J + (size_t)c * m;
            for (int e = 0; e < 6; ++e)
                for (size_t col = 0; col < m; ++col)
                    Jc[col] -= s[e] * Bi[e * m + col];
        }
    }
    free(B);
}

/* dyn_solve_jacobian_fn of dynamica_linalg.h in one pass of the terms: the passes at x = 0 give
   r(0), S and IC S (M, its L^T D L factors F, q'' = -M^-1 r(0)), `dyn_nd_update` moves them to
   x = q'', J starts from the active forces' part (`dyn_nd_force_start`), the pairs add theirs.
   pred: dyn_rl_pred. */
static void dyn_nd_solve_jacobian(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, dyn_nd_force_fn force,
                                  dyn_nd_force_fn wrench, const int *pred, double t,
                                  const double *q, const double *qd, const double *p, double *qdd, double *F,
                                  double *J)
{
    const int nb = tp->nb, n = tp->n;
    const size_t nt = (size_t)DYN_NM_NTERMS(nb, n), nw = DYN_ND_PB * ((size_t)nb + 1);
    double *T = (double *)malloc((nt + nw + 45 * (size_t)n) * sizeof(double));
    if (T == NULL) {
        dyn_fill_nan(qdd, n);
        dyn_fill_nan(F, n * n);
        dyn_fill_nan(J, 2 * n * n);
        return;
    }
    double *W = T + nt, *V = W + nw, *D = V + 42 * (size_t)n, *z = D + n, *r = z + n;
    memset(z, 0, (size_t)n * sizeof(double));
    dyn_nm_terms(tp, terms, t, q, qd, p, T);
    dyn_nd_passes(tp, T, qd, z, qdd, V, D, W);                     /* r(0) into qdd */
    dyn_rl_mass(n, pred, V, V + 18 * (size_t)n, D, F);
    dyn_rl_ldl(n, pred, F);
    dyn_ldl_solve(n, F, 1, qdd, -1.0);
    memset(r, 0, (size_t)n * sizeof(double));
    dyn_nd_update(tp, T, qdd, r, V, W);
    dyn_nd_force_start(tp, force, wrench, t, q, qd, p, V, W, J);
    dyn_rl_pairs(n, pred, V, J);
    free(T);
}

/* dyn_pair_terms_fn of dynamica_linalg.h over the terms kernel: r, V (42 n), D (n), J the active
   forces' part (2 n n; NULL: not written) */
static void dyn_nd_pair_terms(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, dyn_nd_force_fn force,
                              dyn_nd_force_fn wrench, double t, const double *q,
                              const double *qd, const double *x, const double *p, double *r, double *V, double *D,
                              double *J)
{
    const int nb = tp->nb, n = tp->n;
    const size_t size = (size_t)DYN_NM_NTERMS(nb, n) + DYN_ND_PB * ((size_t)nb + 1);
    double *T = (double *)malloc(size * sizeof(double));
    if (T == NULL) {
        for (int k = 0; k < n; ++k)
            r[k] = NAN;
        return;
    }
    dyn_nm_terms(tp, terms, t, q, qd, p, T);
    dyn_nd_passes(tp, T, qd, x, r, V, D, T + DYN_NM_NTERMS(nb, n));
    if (J != NULL && V != NULL)
        dyn_nd_force_start(tp, force, wrench, t, q, qd, p, V, T + DYN_NM_NTERMS(nb, n), J);
    free(T);
}

/* dyn_pair_mass_fn: r at x = 0, SA = [S | IC S] (12 n), D */
static void dyn_nd_pair_mass(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                             const double *qd, const double *p, double *r, double *SA, double *D)
{
    const int n = tp->n;
    double *V = (double *)malloc(43 * (size_t)n * sizeof(double));
    if (V == NULL) {
        for (int k = 0; k < n; ++k)
            r[k] = NAN;
        return;
    }
    double *z = V + 42 * (size_t)n;
    memset(z, 0, (size_t)n * sizeof(double));
    dyn_nd_pair_terms(tp, terms, NULL, NULL, t, q, qd, z, p, r, V, D, NULL);
    memcpy(SA, V, 6 * (size_t)n * sizeof(double));
    memcpy(SA + 6 * (size_t)n, V + 18 * (size_t)n, 6 * (size_t)n * sizeof(double));
    free(V);
}

/* r alone (the module's residual) */
static void dyn_nd_residual(const dyn_nm_topo *tp, dyn_nm_terms_fn terms, double t, const double *q,
                            const double *qd, const double *x, const double *p, double *r)
{
    const int n = tp->n;
    double *D = (double *)malloc((size_t)n * sizeof(double));
    if (D == NULL) {
        for (int k = 0; k < n; ++k)
            r[k] = NAN;
        return;
    }
    dyn_nd_pair_terms(tp, terms, NULL, NULL, t, q, qd, x, p, r, NULL, D, NULL);
    free(D);
}
#endif
