# Hand-written numeric helpers cimported by every generated Cython module (dynamica).
# Kept out of the templates on purpose (STYLE.md, "Templates stay thin").

cdef inline double dyn_sign(double x) noexcept nogil:
    return (x > 0) - (x < 0)


cdef inline double dyn_heaviside(double x) noexcept nogil:
    # sympy's Heaviside convention at 0 is 1/2
    if x > 0:
        return 1.0
    if x < 0:
        return 0.0
    return 0.5


cdef inline const double* dptr(const double[::1] a) noexcept:
    """Data pointer of a contiguous array, NULL if it is empty."""
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline double* wptr(double[::1] a) noexcept:
    return &a[0] if a.shape[0] > 0 else NULL


cdef inline int check_len(const double[::1] a, Py_ssize_t n, str name) except -1:
    if a.shape[0] != n:
        raise ValueError(f"`{name}` has length {a.shape[0]}, expected {n}")
    return 0
