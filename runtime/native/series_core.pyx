# cython: language_level=3, boundscheck=False, wraparound=False
"""The outputs of a whole trajectory in one call: a C loop over its rows calling the module's
`outputs_capsule` (`void outputs(double t, const double *q, const double *qd, const double *p,
double *out)`), so that `CompiledModel.output_series` costs a kernel call per row and no Python.

Compiled at install time (setup.py); see build.compiled_helper.
"""
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid

ctypedef void (*outputs_fn)(double t, const double *q, const double *qd, const double *p, double *out) noexcept

cdef double _EMPTY[1]


def output_rows(capsule, const double[::1] t, const double[:, ::1] Q, const double[:, ::1] QD,
                const double[:, ::1] P, double[:, ::1] out):
    """out[j] = outputs(t[j], Q[j], QD[j], P[j or 0]) for every row j: P has one row per row of
    t, or a single row for all of them. The arrays' widths are the module's (the caller checks
    them against N, NP and the size of the outputs)."""
    if not PyCapsule_IsValid(capsule, b"dynamica.outputs"):
        raise TypeError("expected a PyCapsule named 'dynamica.outputs'")
    cdef Py_ssize_t rows = t.shape[0], j
    if Q.shape[0] != rows or QD.shape[0] != rows or out.shape[0] != rows or Q.shape[1] != QD.shape[1]:
        raise ValueError("t, Q, QD and out must have one row per time")
    if P.shape[0] != rows and P.shape[0] != 1:
        raise ValueError("P must have one row per time, or one row")
    if rows == 0:
        return
    cdef outputs_fn f = <outputs_fn>PyCapsule_GetPointer(capsule, b"dynamica.outputs")
    cdef Py_ssize_t n = Q.shape[1], np_ = P.shape[1], size = out.shape[1]
    cdef Py_ssize_t pstep = np_ if P.shape[0] == rows else 0
    cdef const double *qp = &Q[0, 0] if n > 0 else _EMPTY
    cdef const double *qdp = &QD[0, 0] if n > 0 else _EMPTY
    cdef const double *pp = &P[0, 0] if np_ > 0 else _EMPTY
    cdef double *op = &out[0, 0] if size > 0 else _EMPTY
    cdef Py_ssize_t ostep = size if size > 0 else 0
    for j in range(rows):           # with the GIL: a form that keeps state between calls is not re-entered
        f(t[j], qp + j * n, qdp + j * n, pp + j * pstep, op + j * ostep)


# build.compiled_helper tells an installed extension from one built from an older source.
cdef extern from *:
    """
    #ifndef DYN_SOURCE_SHA
    #define DYN_SOURCE_SHA ""
    #endif
    """
    const char *DYN_SOURCE_SHA
SOURCE_SHA = DYN_SOURCE_SHA.decode()
