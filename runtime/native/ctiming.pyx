# cython: language_level=3, boundscheck=False, wraparound=False
"""Time a dynamica module's C entry point (`rhs_capsule`) from C, without Python call overhead.

Compiled at install time (setup.py); see build.compiled_helper.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC

ctypedef void (*rhs_fn)(double t, const double *y, const double *p, double *ydot) noexcept nogil


def rhs_seconds_per_call(capsule, double t, double[::1] y, double[::1] p, double[::1] ydot, long repeat):
    """Call the capsule's `rhs(t, y, p, ydot)` `repeat` times in a C loop; seconds per call."""
    if not PyCapsule_IsValid(capsule, b"dynamica.rhs"):
        raise TypeError("expected a PyCapsule named 'dynamica.rhs'")
    if ydot.shape[0] != y.shape[0]:
        raise ValueError("y and ydot must have the same length")
    if repeat < 1:
        raise ValueError("repeat must be >= 1")
    cdef rhs_fn f = <rhs_fn>PyCapsule_GetPointer(capsule, b"dynamica.rhs")
    cdef const double *yp = &y[0]
    cdef const double *pp = &p[0] if p.shape[0] > 0 else NULL
    cdef double *op = &ydot[0]
    cdef timespec t0, t1
    cdef long i
    with nogil:
        clock_gettime(CLOCK_MONOTONIC, &t0)
        for i in range(repeat):
            f(t, yp, pp, op)
        clock_gettime(CLOCK_MONOTONIC, &t1)
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / repeat


def rhs_seconds_per_call_states(capsule, double t, double[:, ::1] ys, double[::1] p, double[::1] ydot, long repeat):
    """Like `rhs_seconds_per_call`, cycling through the rows of `ys` (forms that keep state between
    calls, the iterative one, are then timed on a moving state, as inside an integration)."""
    if not PyCapsule_IsValid(capsule, b"dynamica.rhs"):
        raise TypeError("expected a PyCapsule named 'dynamica.rhs'")
    if ydot.shape[0] != ys.shape[1] or ys.shape[0] < 1:
        raise ValueError("ys must be (k >= 1, len(ydot))")
    if repeat < 1:
        raise ValueError("repeat must be >= 1")
    cdef rhs_fn f = <rhs_fn>PyCapsule_GetPointer(capsule, b"dynamica.rhs")
    cdef const double *pp = &p[0] if p.shape[0] > 0 else NULL
    cdef double *op = &ydot[0]
    cdef long k = ys.shape[0], i
    cdef timespec t0, t1
    with nogil:
        clock_gettime(CLOCK_MONOTONIC, &t0)
        for i in range(repeat):
            f(t, &ys[i % k, 0], pp, op)
        clock_gettime(CLOCK_MONOTONIC, &t1)
    return ((t1.tv_sec - t0.tv_sec) + 1e-9 * (t1.tv_nsec - t0.tv_nsec)) / repeat


# The SHA-256 of this file's text when built at install time (setup.py), else "": how
# build.compiled_helper tells an installed extension from one built from an older source.
cdef extern from *:
    """
    #ifndef DYN_SOURCE_SHA
    #define DYN_SOURCE_SHA ""
    #endif
    """
    const char *DYN_SOURCE_SHA
SOURCE_SHA = DYN_SOURCE_SHA.decode()
