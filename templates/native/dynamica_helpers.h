/* Hand-written numeric helpers included by every generated kernel file (dynamica).
   Kept out of the templates on purpose (docs/design.md, "Rendering: backends"). */
#ifndef DYNAMICA_HELPERS_H
#define DYNAMICA_HELPERS_H
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* parts of a split kernel stay separate functions, so the compiler's work stays bounded */
#if defined(__GNUC__)
#define DYN_NOINLINE __attribute__((noinline))
#else
#define DYN_NOINLINE
#endif

/* kernels hinted "O1" (long straight-line code of cheap statements, e.g. numeric mode's terms):
   -O1 compiles them several times faster than -O2 and they run as fast */
#if defined(__GNUC__) && !defined(__clang__)
#define DYN_O1 __attribute__((optimize("O1")))
#else
#define DYN_O1
#endif

static inline double dyn_sign(double x) { return (double)((x > 0) - (x < 0)); }

/* sympy's Heaviside convention: H(0) = 1/2 */
static inline double dyn_heaviside(double x) { return x > 0 ? 1.0 : (x < 0 ? 0.0 : 0.5); }

/* Tabulated functions (generator/mechanics/tables.py): the interval of v among the knots x[0..n-1] as
   scipy's find_interval with extrapolation: x[i] <= v < x[i+1], the last interval at and after
   the last knot, the first before the first knot (and for NaN) */
static inline int dyn_interval(const double *x, int n, double v)
{
    if (v >= x[n - 1])
        return n - 2;
    if (!(v >= x[0]))
        return 0;
    int lo = 0, hi = n - 1;                 /* x[lo] <= v < x[hi] */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (v >= x[mid])
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* a piecewise polynomial of degree k in scipy's PPoly layout (piece i: c[i*(k+1) + j] is the
   coefficient of (v - x[i])^(k-j)), summed lowest power first as scipy's evaluate_poly1; outside
   the knots ext = 0 continues the end piece, 1 holds the end value, 2 is zero (the derivative of
   a held function) */
static inline double dyn_ppoly(const double *x, const double *c, int n, int k, int ext, double v)
{
    if (ext && !(v >= x[0] && v <= x[n - 1]) && v == v) {
        if (ext == 2)
            return 0.0;
        v = v < x[0] ? x[0] : x[n - 1];
    }
    int i = dyn_interval(x, n, v);
    const double *ci = c + (size_t)i * (size_t)(k + 1);
    double dx = v - x[i], z = 1.0, res = 0.0;
    for (int j = k; j >= 0; --j) {
        res = res + ci[j] * z;
        z = z * dx;
    }
    return res;
}

/* bilinear interpolation on the grid xg (nx) x yg (ny) of z[i*ny + j] (scipy's
   RegularGridInterpolator, method linear) or its derivative (dx, dy in {0, 1}); ext = 1 holds
   the border values (a derivative across a held border is zero), 0 continues the end cells */
static inline double dyn_grid2(const double *xg, int nx, const double *yg, int ny, const double *z, int ext,
                               int dx, int dy, double u, double w)
{
    if (ext) {
        int out_x = !(u >= xg[0] && u <= xg[nx - 1]) && u == u, out_y = !(w >= yg[0] && w <= yg[ny - 1]) && w == w;
        if ((dx && out_x) || (dy && out_y))
            return 0.0;
        if (out_x)
            u = u < xg[0] ? xg[0] : xg[nx - 1];
        if (out_y)
            w = w < yg[0] ? yg[0] : yg[ny - 1];
    }
    int i = dyn_interval(xg, nx, u), j = dyn_interval(yg, ny, w);
    double hx = xg[i + 1] - xg[i], hy = yg[j + 1] - yg[j];
    double tx = (u - xg[i]) / hx, ty = (w - yg[j]) / hy;
    const double *r0 = z + (size_t)i * (size_t)ny + j, *r1 = r0 + ny;
    if (dx && dy)
        return (((r1[1] - r1[0]) - r0[1]) + r0[0]) / (hx * hy);
    if (dx)
        return ((r1[0] - r0[0]) * (1.0 - ty) + (r1[1] - r0[1]) * ty) / hx;
    if (dy)
        return ((r0[1] - r0[0]) * (1.0 - tx) + (r1[1] - r1[0]) * tx) / hy;
    return r0[0] * ((1.0 - tx) * (1.0 - ty)) + r0[1] * ((1.0 - tx) * ty) + r1[0] * (tx * (1.0 - ty))
        + r1[1] * (tx * ty);
}

#endif
