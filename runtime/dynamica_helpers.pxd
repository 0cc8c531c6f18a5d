# Hand-written helpers cimported by every generated Cython module (dynamica).
# Kept out of the templates on purpose (STYLE.md, "Templates stay thin"). Arrays are taken
# through the buffer protocol (not typed memoryviews), which keeps generated C small.

from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_ANY_CONTIGUOUS, PyBUF_FORMAT, PyBUF_WRITABLE


cdef inline int get_buffer(object obj, Py_buffer* view, Py_ssize_t n, str name, bint writable) except -1:
    """A C-contiguous float64 buffer of length n (ValueError naming the argument otherwise)."""
    cdef int flags = PyBUF_ANY_CONTIGUOUS | PyBUF_FORMAT
    if writable:
        flags |= PyBUF_WRITABLE
    PyObject_GetBuffer(obj, view, flags)
    cdef bytes fmt = view.format if view.format != NULL else b"B"
    if view.ndim != 1 or view.itemsize != 8 or fmt not in (b"d", b"<d", b"=d", b"@d") or view.len != 8 * n:
        PyBuffer_Release(view)
        raise ValueError(f"`{name}` must be a contiguous 1-D float64 array of length {n}")
    return 0
