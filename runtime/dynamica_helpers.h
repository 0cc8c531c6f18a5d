/* Hand-written numeric helpers included by every generated kernel file (dynamica).
   Kept out of the templates on purpose (STYLE.md, "Templates stay thin"). */
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

#endif
