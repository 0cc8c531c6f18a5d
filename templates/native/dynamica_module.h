/* The Python face of every generated module (dynamica): hand-written, the same for every model.

   A generated module file (templates/module.c.j2) holds the model's C entry points (or declares
   them, when another backend compiled them), one adapter per Python-callable entry with the
   uniform signature dyn_adapter below, a table of those entries, its metadata as a Python
   literal, and a PyInit function that calls dyn_module_create. Everything else is here:
   argument checking through the buffer protocol (C-contiguous float64 arrays of a fixed number of
   values, of any shape: a 6 x n Jacobian fills a (6, n) array row by row),
   one generic function object per entry, the metadata constants and the PyCapsule `rhs_capsule`
   holding `void rhs(double t, const double *y, const double *p, double *ydot)` for compiled
   integrators. Building a module is then one C compiler call, without Cython or setuptools. */
#ifndef DYNAMICA_MODULE_H
#define DYNAMICA_MODULE_H
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define DYN_MAX_ARRAYS 8

/* what comes before the arrays in a Python call */
enum { DYN_FIRST_NONE = 0, DYN_FIRST_DOUBLE = 1, DYN_FIRST_INT = 2 };

/* an entry called from Python: the scalar (t, or an int flag) and the arrays; the return value
   is the entry's own (returned to Python when `returns_int`) */
typedef int (*dyn_adapter)(double x, long i, double *const *a);

typedef struct {
    const char *name;
    dyn_adapter call;
    int first;                           /* DYN_FIRST_* */
    int returns_int;
    int n_arrays;
    Py_ssize_t sizes[DYN_MAX_ARRAYS];
    int writable[DYN_MAX_ARRAYS];
    const char *arrays;                  /* names, comma-separated: "q,qd,p,out" */
    const char *doc;
} dyn_entry;

/* a C entry point for compiled code: module attribute `attr`, a PyCapsule named `name` */
typedef struct {
    const char *attr;
    const char *name;
    void *fn;
} dyn_capsule;

typedef struct {
    const char *name;                    /* the module's name */
    const char *metadata;                /* a Python dict literal: MODEL_NAME, FORM, ... */
    const char *python;                  /* Python source run in the module's namespace ("" for none) */
    const dyn_entry *entries;
    int n_entries;
    const dyn_capsule *capsules;         /* rhs_capsule ("dynamica.rhs"), ... */
    int n_capsules;
} dyn_module_spec;

/* the k-th comma-separated name of `names`, into buf */
static void dyn_array_name(const char *names, int k, char *buf, size_t size)
{
    const char *s = names;
    for (int j = 0; j < k && s; ++j) {
        s = strchr(s, ',');
        if (s) ++s;
    }
    size_t n = 0;
    while (s && s[n] && s[n] != ',' && n + 1 < size) {
        buf[n] = s[n];
        ++n;
    }
    buf[n] = '\0';
}

static int dyn_get_array(PyObject *obj, Py_buffer *view, const dyn_entry *e, int k)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (e->writable[k] ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, view, flags) == 0) {
        const char *fmt = view->format ? view->format : "B";
        int is_double = !strcmp(fmt, "d") || !strcmp(fmt, "<d") || !strcmp(fmt, "=d") || !strcmp(fmt, "@d");
        if (view->itemsize == 8 && is_double && view->len == 8 * e->sizes[k])
            return 0;
        PyBuffer_Release(view);
    }
    char name[64];
    dyn_array_name(e->arrays, k, name, sizeof name);
    PyErr_Clear();
    PyErr_Format(PyExc_ValueError, "`%s` must be a C-contiguous float64 array of %zd values%s", name,
                 e->sizes[k], e->writable[k] ? " (writable)" : "");
    return -1;
}

static PyObject *dyn_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    const dyn_entry *e = (const dyn_entry *)PyCapsule_GetPointer(self, "dynamica.entry");
    if (e == NULL)
        return NULL;
    int lead = e->first != DYN_FIRST_NONE;
    if (nargs != lead + e->n_arrays) {
        PyErr_Format(PyExc_TypeError, "%s() takes %d arguments (%s%s), %zd given", e->name, lead + e->n_arrays,
                     e->first == DYN_FIRST_DOUBLE ? "t, " : (e->first == DYN_FIRST_INT ? "flag, " : ""),
                     e->arrays, nargs);
        return NULL;
    }
    double x = 0.0;
    long i = 0;
    if (e->first == DYN_FIRST_DOUBLE) {
        x = PyFloat_AsDouble(args[0]);
        if (x == -1.0 && PyErr_Occurred())
            return NULL;
    } else if (e->first == DYN_FIRST_INT) {
        i = PyLong_AsLong(args[0]);
        if (i == -1 && PyErr_Occurred())
            return NULL;
    }
    Py_buffer views[DYN_MAX_ARRAYS];
    double *ptr[DYN_MAX_ARRAYS];
    int got = 0;
    for (; got < e->n_arrays; ++got) {
        if (dyn_get_array(args[lead + got], &views[got], e, got) != 0)
            break;
        ptr[got] = (double *)views[got].buf;
    }
    int status = 0;
    if (got == e->n_arrays)
        status = e->call(x, i, ptr);
    for (int k = 0; k < got; ++k)
        PyBuffer_Release(&views[k]);
    if (got != e->n_arrays)
        return NULL;
    if (e->returns_int)
        return PyLong_FromLong(status);
    Py_RETURN_NONE;
}

/* Attributes of the module from its metadata literal (evaluated by ast.literal_eval). */
static int dyn_add_metadata(PyObject *module, const char *literal)
{
    PyObject *ast = PyImport_ImportModule("ast");
    if (ast == NULL)
        return -1;
    PyObject *meta = PyObject_CallMethod(ast, "literal_eval", "s", literal);
    Py_DECREF(ast);
    if (meta == NULL)
        return -1;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    int rc = 0;
    while (rc == 0 && PyDict_Next(meta, &pos, &key, &value))
        rc = PyObject_SetAttr(module, key, value);
    Py_DECREF(meta);
    return rc;
}

static PyObject *dyn_module_create(PyModuleDef *def, const dyn_module_spec *spec)
{
    PyObject *m = PyModule_Create(def);
    if (m == NULL)
        return NULL;
    PyObject *modname = PyUnicode_FromString(spec->name);
    /* function objects keep their PyMethodDef: allocated once per import, never freed */
    PyMethodDef *defs = (PyMethodDef *)PyMem_Calloc((size_t)spec->n_entries + 1, sizeof(PyMethodDef));
    if (modname == NULL || defs == NULL)
        goto fail;
    for (int k = 0; k < spec->n_entries; ++k) {
        const dyn_entry *e = &spec->entries[k];
        defs[k].ml_name = e->name;
        defs[k].ml_meth = (PyCFunction)(void (*)(void))dyn_call;
        defs[k].ml_flags = METH_FASTCALL;
        defs[k].ml_doc = e->doc;
        PyObject *self = PyCapsule_New((void *)e, "dynamica.entry", NULL);
        if (self == NULL)
            goto fail;
        PyObject *fn = PyCFunction_NewEx(&defs[k], self, modname);
        Py_DECREF(self);
        if (fn == NULL || PyModule_AddObject(m, e->name, fn) != 0) {
            Py_XDECREF(fn);
            goto fail;
        }
    }
    for (int k = 0; k < spec->n_capsules; ++k) {
        const dyn_capsule *c = &spec->capsules[k];
        PyObject *cap = PyCapsule_New(c->fn, c->name, NULL);
        if (cap == NULL || PyModule_AddObject(m, c->attr, cap) != 0) {
            Py_XDECREF(cap);
            goto fail;
        }
    }
    if (dyn_add_metadata(m, spec->metadata) != 0)
        goto fail;
    if (spec->python[0] != '\0') {
        PyObject *ns = PyModule_GetDict(m);           /* borrowed */
        if (PyDict_GetItemString(ns, "__builtins__") == NULL
                && PyDict_SetItemString(ns, "__builtins__", PyEval_GetBuiltins()) != 0)
            goto fail;
        PyObject *r = PyRun_String(spec->python, Py_file_input, ns, ns);
        if (r == NULL)
            goto fail;
        Py_DECREF(r);
    }
    Py_DECREF(modname);
    return m;
fail:
    Py_XDECREF(modname);
    Py_DECREF(m);
    return NULL;
}

#endif
