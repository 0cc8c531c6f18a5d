/* The broad phase of contact (dynamica, docs/contact.md "Broad phase"; the tables and the per-pair-type
   functions are generated: generator/mechanics/broad_phase.py). Plain C99, no Python.

   shapes: per shape 18 numbers: its body's slot in `poses` (-1: the ground), its type, its centre and
   its axes (row-major rotation shape -> body) in the body frame, its three sizes, its bounding radius
   about the centre (-1: a plane, a half-space).
   pairs: per pair 19 numbers: shape a, shape b, its pair type (index into `fns`), the law k, c, e, mu,
   v_s, the offsets in `out` of its force, distance, normal_velocity, penetration and normal_force (-1:
   not an output), its number of contact points, and per law field its slot in p (-1: the number given).
   poses: per body slot 18 numbers: R_0i (ground -> body, row-major), r_0i, velocity and angular velocity
   (ground axes).
   wrench: per body slot 6 numbers written: the force and the torque at O_i on the body, body axes; then
   the pairs' elastic energy and its rate (2).
   out: the outputs (or NULL): each pair's values; a pair whose bounding spheres are apart has zero force
   and for distance the gap of the bounding spheres (a plane: of the other's sphere), which is a lower
   bound of every contact point's distance, and for normal_velocity that gap's rate. */
#ifndef DYNAMICA_BROAD_H
#define DYNAMICA_BROAD_H
#include <math.h>
#include <string.h>

typedef void (*dyn_pair_fn)(const double *in_s, double *out_o);

#define DYN_CB_SHAPE 18
#define DYN_CB_PAIR 19
#define DYN_CB_POSE 18
#define DYN_CB_IN 53
/* the most contact points of a pair type (broad_phase.py POINTS; the module defines it before this header) */
#ifndef DYN_CB_MAX_POINTS
#define DYN_CB_MAX_POINTS 17
#endif
#define DYN_CB_OUT (14 + 4 * DYN_CB_MAX_POINTS)

/* a shape's centre (3), axes as rows (9), sizes (3) in s; its body's origin, velocity, angular velocity
   (ground) in b; the velocity of the material point at its centre in vc */
static void dyn_cb_place(const double *shape, const double *poses, double *s, double *b, double *vc)
{
    int body = (int)shape[0];
    const double *at = shape + 2, *A = shape + 5;
    if (body < 0) {
        for (int k = 0; k < 3; ++k) {
            s[k] = at[k];
            for (int j = 0; j < 3; ++j) s[3 + 3 * k + j] = A[3 * j + k];
        }
        for (int k = 0; k < 9; ++k) b[k] = 0.0;
        for (int k = 0; k < 3; ++k) vc[k] = 0.0;
    } else {
        const double *P = poses + DYN_CB_POSE * body, *R = P, *r0 = P + 9, *v = P + 12, *w = P + 15;
        double d[3];
        for (int k = 0; k < 3; ++k)                    /* centre = r0 + R^T at */
            d[k] = R[k] * at[0] + R[3 + k] * at[1] + R[6 + k] * at[2];
        for (int k = 0; k < 3; ++k) s[k] = r0[k] + d[k];
        for (int k = 0; k < 3; ++k)                    /* axis k = R^T (column k of A) */
            for (int j = 0; j < 3; ++j)
                s[3 + 3 * k + j] = R[j] * A[k] + R[3 + j] * A[3 + k] + R[6 + j] * A[6 + k];
        for (int k = 0; k < 3; ++k) { b[k] = r0[k]; b[3 + k] = v[k]; b[6 + k] = w[k]; }
        vc[0] = v[0] + w[1] * d[2] - w[2] * d[1];
        vc[1] = v[1] + w[2] * d[0] - w[0] * d[2];
        vc[2] = v[2] + w[0] * d[1] - w[1] * d[0];
    }
    for (int k = 0; k < 3; ++k) s[12 + k] = shape[14 + k];
}

/* placed: scratch of DYN_CB_PLACED numbers per shape (each shape is placed once per call) */
#define DYN_CB_PLACED 27
static void dyn_cb_run(int n_pairs, const double *pairs, int n_shapes, const double *shapes, const dyn_pair_fn *fns,
                       int n_bodies, const double *poses, const double *p, double *wrench, double *out, double *placed)
{
    double s[DYN_CB_IN], o[DYN_CB_OUT];
    memset(wrench, 0, (size_t)(6 * n_bodies + 2) * sizeof(double));    /* ground axes until the end */
    for (int k = 0; k < n_shapes; ++k) {
        double *x = placed + DYN_CB_PLACED * k;
        dyn_cb_place(shapes + DYN_CB_SHAPE * k, poses, x, x + 15, x + 24);
    }
    for (int k = 0; k < n_pairs; ++k) {
        const double *P = pairs + DYN_CB_PAIR * k;
        const double *A = shapes + DYN_CB_SHAPE * (int)P[0], *B = shapes + DYN_CB_SHAPE * (int)P[1];
        const double *xa = placed + DYN_CB_PLACED * (int)P[0], *xb = placed + DYN_CB_PLACED * (int)P[1];
        const double *vca = xa + 24, *vcb = xb + 24;
        int np = (int)P[13];
        double gap, rate;
        if (A[17] < 0) {                               /* a plane (always a): b's sphere above it */
            const double *n = xa + 9;
            gap = n[0] * (xb[0] - xa[0]) + n[1] * (xb[1] - xa[1]) + n[2] * (xb[2] - xa[2]) - B[17];
            rate = n[0] * (vcb[0] - vca[0]) + n[1] * (vcb[1] - vca[1]) + n[2] * (vcb[2] - vca[2]);
        } else {
            double dx = xb[0] - xa[0], dy = xb[1] - xa[1], dz = xb[2] - xa[2];
            double L = sqrt(dx * dx + dy * dy + dz * dz);
            gap = L - A[17] - B[17];
            rate = L > 0 ? (dx * (vcb[0] - vca[0]) + dy * (vcb[1] - vca[1]) + dz * (vcb[2] - vca[2])) / L : 0.0;
        }
        if (gap > 0) {                                 /* apart: every point's distance is positive */
            if (out != NULL) {
                if (P[8] >= 0) memset(out + (long)P[8], 0, 3 * sizeof(double));
                for (int j = 0; j < np; ++j) {
                    if (P[9] >= 0) out[(long)P[9] + j] = gap;
                    if (P[10] >= 0) out[(long)P[10] + j] = rate;
                    if (P[11] >= 0) out[(long)P[11] + j] = 0.0;
                    if (P[12] >= 0) out[(long)P[12] + j] = 0.0;
                }
            }
            continue;
        }
        memcpy(s, xa, 15 * sizeof(double));
        memcpy(s + 15, xb, 15 * sizeof(double));
        memcpy(s + 30, xa + 15, 9 * sizeof(double));
        memcpy(s + 39, xb + 15, 9 * sizeof(double));
        for (int j = 0; j < 5; ++j) s[48 + j] = P[14 + j] >= 0 ? p[(long)P[14 + j]] : P[3 + j];
        fns[(int)P[2]](s, o);
        int ba = (int)A[0], bb = (int)B[0];
        if (ba >= 0) for (int j = 0; j < 6; ++j) wrench[6 * ba + j] += o[j];
        if (bb >= 0) for (int j = 0; j < 6; ++j) wrench[6 * bb + j] += o[6 + j];
        wrench[6 * n_bodies] += o[12];
        wrench[6 * n_bodies + 1] += o[13];
        if (out != NULL) {
            if (P[8] >= 0) for (int j = 0; j < 3; ++j) out[(long)P[8] + j] = o[6 + j];
            for (int q = 0; q < 4; ++q)
                if (P[9 + q] >= 0) for (int j = 0; j < np; ++j) out[(long)P[9 + q] + j] = o[14 + 4 * j + q];
        }
    }
    for (int b = 0; b < n_bodies; ++b) {               /* to body axes: R_0i f, R_0i tau */
        const double *R = poses + DYN_CB_POSE * b;
        double *W = wrench + 6 * b, x[6];
        for (int h = 0; h < 2; ++h)
            for (int r = 0; r < 3; ++r)
                x[3 * h + r] = R[3 * r] * W[3 * h] + R[3 * r + 1] * W[3 * h + 1] + R[3 * r + 2] * W[3 * h + 2];
        memcpy(W, x, sizeof x);
    }
}
#endif
