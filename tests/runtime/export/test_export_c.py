"""The standalone C library (runtime/export/c_library.py, docs/export.md): built with only the
exported files by gcc (and clang when installed) with -std=c99 -Wall -Wextra -pedantic and no
warning, its functions against the Python module's (itself checked against Pinocchio and
sympy) at random states to 1e-12 relative, and its example main.c (the embedded Dormand-Prince
integrator) against scipy's DOP853 on the Python module's rhs and dynamica.simulate (1e-10)."""

from __future__ import annotations

import shutil
import subprocess
import sys

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import dynamica
from dynamica.runtime.export import ExportError, export_c
from dynamica.runtime.export.c_library import build_library

from conftest import MODELS
from helpers import C_COMPILERS, C_FLAGS

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
COMPILERS, FLAGS = C_COMPILERS, C_FLAGS

#: a C driver: reads samples (t, y, p) from stdin, prints rhs, qdd, M, outputs and state rates
DRIVER = r"""
#include <stdio.h>
#include "NAME.h"
static void show(const double *x, int n) { for (int k = 0; k < n; ++k) printf("%.17g ", x[k]); printf("\n"); }
int main(void)
{
    int count;
    if (scanf("%d", &count) != 1) return 2;
    for (int s = 0; s < count; ++s) {
        double t, y[UP_NY], p[UP_NP], ydot[UP_NY], qdd[UP_NQ], M[UP_NQ * UP_NQ + 1];
        if (scanf("%lf", &t) != 1) return 2;
        for (int k = 0; k < UP_NY; ++k) if (scanf("%lf", &y[k]) != 1) return 2;
        for (int k = 0; k < UP_NP; ++k) if (scanf("%lf", &p[k]) != 1) return 2;
        printf("%d\n", NAME_rhs(t, y, p, ydot)); show(ydot, UP_NY);
        printf("%d\n", NAME_qdd(t, y, y + UP_NQ, p, qdd)); show(qdd, UP_NQ);
        printf("%d\n", NAME_mass_matrix(t, y, p, M)); show(M, UP_NQ * UP_NQ);
#if UP_NOUT > 0
        { double out[UP_NOUT]; printf("%d\n", NAME_outputs(t, y, y + UP_NQ, p, out)); show(out, UP_NOUT); }
#endif
#if UP_NS > 0
        { double sd[UP_NS + 1]; printf("%d\n", NAME_state_rates(t, y, y + UP_NQ, p, sd)); show(sd, UP_NS); }
#endif
    }
    return 0;
}
"""

#: model, form, parameters changed, inputs given
CASES = [
    ("double_pendulum", "composite", {"l2": 0.9, "m1": 1.3}, {}),          # a tree with outputs
    ("chain7", "articulated", {}, {}),
    ("fourbar", "composite", {}, {}),                                        # closed loop: the C constraint layer
    ("dc_motor_joint", "composite", {"R": 1.5}, {"u": 3.0}),                 # an extra state, an input
    ("double_pendulum", "iterative-m", {}, {}),                              # workspace of the iterative form
    ("thrust_launch", "composite", {}, {}),                                  # a tabulated function (pchip)
    ("hydraulic_drive", "composite", {}, {"u": 0.3}),                        # two extra states, an input
    ("spherical_chain", "articulated@numeric", {}, {}),                      # numeric mode: numeric_core.h
    ("double_pendulum", "composite#fortran", {"l2": 0.9}, {}),               # the Fortran backend's kernels
    ("fourbar", "composite#fortran", {}, {}),
    ("dc_motor_joint", "composite#fortran", {"R": 1.5}, {"u": 3.0}),
    *(("chain7", form, {}, {}) for form in ("direct", "ltdl", "lagrange1", "iterative-g")),   # the other forms
]


def _compile(cc, folder, sources, out, extra=(), libs=()):
    cmd = [cc, *FLAGS, *extra, "-I.", *sources, *libs, "-lm", "-o", out]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return proc.stderr


def _samples(model, params, inputs, rng, count=5):
    base = model.param_vector(params, inputs)
    rows = []
    for _ in range(count):
        q0, qd0 = model.initial_state()
        if model.loops:
            q, qd = model.assemble(q0 + 0.1 * rng.standard_normal(model.n), rng.standard_normal(model.n))
        else:
            q, qd = rng.uniform(-2, 2, model.n), rng.uniform(-2, 2, model.n)
        s = rng.uniform(-1, 1, len(model.states))
        t = float(rng.uniform(0, 2))
        p = base.copy()
        if model.states:
            p[model.slots["states"]:model.slots["states"] + len(s)] = s
        rows.append((t, np.concatenate([q, qd, s]), p, s))
    return rows


#: the developer's fast subset runs these; the others are marked slow (CI runs every one)
FAST = {("double_pendulum", "composite"), ("fourbar", "composite"), ("dc_motor_joint", "composite"),
        ("double_pendulum", "iterative-m"), ("double_pendulum", "composite#fortran")}


@pytest.mark.parametrize("name,form,params,inputs", [
    pytest.param(*c, id=f"{c[0]}-{c[1]}", marks=() if c[:2] in FAST else pytest.mark.slow) for c in CASES])
def test_library_matches_module(tmp_path, bundled, name, form, params, inputs):
    objects, libs = [], []
    if "#" in form:                          # the Fortran backend's kernels (gfortran), the rest C
        if shutil.which("gfortran") is None:
            pytest.skip("gfortran not installed")
        form, backend = form.split("#")
        model = dynamica.load(MODELS / f"{name}.yaml", form=form, backend=backend)
        objects, libs = [f"{name}_f.o"], ["-lgfortran"]
    elif "@" in form:
        form, mode = form.split("@")
        model = dynamica.load(MODELS / f"{name}.yaml", form=form, mode=mode)
    else:
        model = bundled(name, form)
    folder = export_c(model, tmp_path / "lib")
    cname = model.name
    up = cname.upper()
    if objects:
        subprocess.run(["gfortran", "-O2", "-c", f"{name}_f.f90", "-o", objects[0]], cwd=folder, check=True)
    (folder / "driver.c").write_text(DRIVER.replace("NAME", cname).replace("UP_", f"{up}_"))
    for cc in COMPILERS:
        warnings = _compile(cc, folder, ["driver.c", f"{cname}.c", *objects], f"driver_{cc}", libs=libs)
        assert warnings == "", f"{cc}: {warnings}"
    rng = np.random.default_rng(7)
    rows = _samples(model, params, inputs, rng)
    text = f"{len(rows)}\n" + "\n".join(" ".join(repr(float(x)) for x in [t, *y, *p]) for t, y, p, _ in rows)
    runs = [subprocess.run([str(folder / f"driver_{cc}")], input=text, capture_output=True, text=True)
            for cc in COMPILERS]
    assert all(r.returncode == 0 for r in runs), [r.stderr for r in runs]
    lines = runs[0].stdout.splitlines()
    for other in runs[1:]:          # clang's build gives the same numbers as gcc's (1e-13)
        for a, b in zip(lines, other.stdout.splitlines(), strict=True):
            ref = np.array(a.split(), dtype=float)
            np.testing.assert_allclose(np.array(b.split(), dtype=float), ref, rtol=1e-13,
                                       atol=1e-13 * max(1.0, np.abs(ref).max(initial=0.0)))
    k = 0

    def take():
        nonlocal k
        status, values = int(lines[k]), np.array(lines[k + 1].split(), dtype=float)
        k += 2
        return status, values

    tol = dict(rtol=1e-12)
    for t, y, p, s in rows:
        n = model.n
        q, qd = y[:n], y[n:2 * n]
        ref_rhs = model.rhs(t, y, params, inputs)
        st, rhs = take()
        assert st == 0
        np.testing.assert_allclose(rhs, ref_rhs, atol=1e-12 * np.abs(ref_rhs).max(), **tol)
        st, qdd = take()
        ref_qdd = model.qdd(q, qd, t, params, inputs, s=s if model.states else None)
        assert st == 0
        np.testing.assert_allclose(qdd, ref_qdd, atol=1e-12 * max(1, np.abs(ref_qdd).max()), **tol)
        st, M = take()
        ref_M = model.mass_matrix(q, t, params).ravel()
        np.testing.assert_allclose(M, ref_M, atol=1e-12 * np.abs(ref_M).max(), **tol)
        if hasattr(model.module, "outputs"):
            st, out = take()
            ref = np.empty_like(out)
            model.module.outputs(float(t), q, qd, p, ref)
            assert st == 0
            np.testing.assert_allclose(out, ref, atol=1e-12 * max(1, np.abs(ref).max()), **tol)
        if model.states:
            st, sd = take()
            ref = model.state_rates(q, qd, s, t, params, inputs)
            np.testing.assert_allclose(sd, ref, atol=1e-12 * max(1, np.abs(ref).max()), **tol)
    assert k == len(lines)


def _run_example(folder, cname, extra=(), t_end=2.0, step=0.5):
    _compile("gcc", folder, ["main.c", f"{cname}.c"], "example", extra)
    proc = subprocess.run(["./example", str(t_end), str(step), "1e-12", "1e-14"], cwd=folder, capture_output=True,
                          text=True)
    assert proc.returncode == 0, proc.stderr
    rows = np.array([line.split() for line in proc.stdout.splitlines() if not line.startswith("#")], dtype=float)
    return rows


@pytest.mark.parametrize("name", ["double_pendulum", "dc_motor_joint"])
def test_example_integrates_like_scipy(tmp_path, bundled, name):
    """main.c (Dormand-Prince 5(4), rtol 1e-12, atol 1e-14) against scipy's DOP853 at rtol 1e-13 on
    the module's rhs from the same initial state and against dynamica.simulate (Adams, rtol 1e-12):
    1e-10 absolute over 2 s (measured: 3.4e-12 for the double pendulum)."""
    model = bundled(name)
    lib = build_library(model)
    folder = export_c(model, tmp_path / "lib")
    rows = _run_example(folder, model.name)
    ref = solve_ivp(model.rhs_function(inputs={u: 0.0 for u in model.inputs}), (0, 2.0), lib.y0, method="DOP853",
                    rtol=1e-13, atol=1e-14, t_eval=rows[:, 0])
    np.testing.assert_allclose(rows[:, 1:], ref.y.T, rtol=0, atol=1e-10)
    if not model.inputs:
        sim = dynamica.simulate(model, t_end=2.0, output_step=0.5, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(rows[:, 1:], np.column_stack([sim.q, sim.qd]), rtol=0, atol=1e-10)


@pytest.mark.skipif(sys.platform != "linux", reason="sanitizers: linux")
def test_example_under_sanitizers(tmp_path, bundled):
    """The loop model's example (constraint layer, projection) under -fsanitize=address,undefined."""
    model = bundled("fourbar")
    folder = export_c(model, tmp_path / "lib")
    rows = _run_example(folder, model.name, ("-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-g"),
                        t_end=0.5, step=0.25)
    q = rows[-1, 1:1 + model.n]
    assert np.abs(model.constraints(q)).max() < 1e-10


def test_library_has_no_writable_globals(tmp_path, bundled):
    """Thread safety by construction: the object file of the library has nothing in writable data
    (.data, .bss; the tables of names are in .data.rel.ro, read-only once relocated)."""
    if shutil.which("objdump") is None:
        pytest.skip("objdump not installed")
    for name, form in (("fourbar", "composite"), ("double_pendulum", "iterative-m")):
        folder = export_c(bundled(name, form), tmp_path / name)
        subprocess.run(["gcc", *FLAGS, "-c", f"{name}.c", "-o", "lib.o"], cwd=folder, check=True)
        table = subprocess.run(["objdump", "-t", "lib.o"], cwd=folder, capture_output=True, text=True,
                               check=True).stdout
        writable = [line for line in table.splitlines() if any(f" {sec}" in line and f" {sec}." not in line
                                                               for sec in (".data", ".bss"))]
        sizes = [int(line.split()[-2], 16) for line in writable]
        assert sum(sizes) == 0, writable


def test_makefile_builds(tmp_path, bundled):
    if shutil.which("make") is None:
        pytest.skip("make not installed")
    folder = export_c(bundled("double_pendulum"), tmp_path / "lib")
    proc = subprocess.run(["make"], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "warning" not in proc.stderr
    out = subprocess.run(["./double_pendulum_main", "0.1", "0.05"], cwd=folder, capture_output=True, text=True)
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 4


def test_unexportable_forms_say_why(tmp_path):
    with pytest.raises(ExportError, match="Lagrangian state"):
        export_c(MODELS / "double_pendulum.yaml", tmp_path / "h", form="hamilton-composite")
    with pytest.raises(ExportError, match="has stages"):
        export_c(MODELS / "launcher" / "launcher.yaml", tmp_path / "l")
    with pytest.raises(ExportError, match="model file name or a model"):
        export_c(42, tmp_path / "x")


def test_command_line(tmp_path, capsys):
    from dynamica.runtime.cli.main import main
    assert main(["export", str(MODELS / "double_pendulum.yaml"), "--c", str(tmp_path / "lib"), "-q"]) == 0
    assert (tmp_path / "lib" / "double_pendulum.h").is_file()
    assert main(["export", str(MODELS / "double_pendulum.yaml"), "-q"]) == 2
    assert "say what to export" in capsys.readouterr().err


def test_c_names():
    from dynamica.runtime.export.c_library import c_identifier
    assert c_identifier("double_pendulum") == "double_pendulum"
    assert c_identifier("7dof arm-2") == "model_7dof_arm_2"
    assert c_identifier("dyn") == "model_dyn" and c_identifier("dyn_x") == "model_dyn_x"
    assert c_identifier("bras\u00e9") == "bras_"


#: four threads integrate the same motion at once (each with its own integrator record and, for an
#: iterative form, its own workspace) and one alone: the same numbers, bit for bit
THREADS = r"""
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "NAME.h"
#include "dynamica_dopri.h"
typedef struct {
    double y[UP_NY];
    int rc;
#if UP_ITERATIVE
    NAME_workspace *w;
#endif
} job;
static int rhs(void *ctx, double t, const double *y, double *ydot)
{
    job *j = (job *)ctx;
#if UP_ITERATIVE
    return NAME_rhs_ws(j->w, t, y, NAME_p_default, ydot);
#else
    (void)j;
    return NAME_rhs(t, y, NAME_p_default, ydot);
#endif
}
#if UP_LOOPS
static int project(void *ctx, double t, double *y) { (void)ctx; return NAME_project(t, y, NAME_p_default, 1e-12); }
#define PROJECT project
#else
#define PROJECT NULL
#endif
static void *run(void *arg)
{
    job *j = (job *)arg;
    double work[DYN_DP_WORK(UP_NY)], t = 0.0;
    dyn_dp s;
    memcpy(j->y, NAME_y0, sizeof j->y);
#if UP_ITERATIVE
    j->w = NAME_workspace_new();
#endif
    dyn_dp_init(&s, UP_NY, 1e-10, 1e-12, work);
    j->rc = dyn_dp_integrate(&s, rhs, PROJECT, j, &t, j->y, 0.5);
#if UP_ITERATIVE
    NAME_workspace_free(j->w);
#endif
    return NULL;
}
int main(void)
{
    job jobs[5];
    pthread_t th[4];
    run(&jobs[4]);
    for (int k = 0; k < 4; ++k) pthread_create(&th[k], NULL, run, &jobs[k]);
    for (int k = 0; k < 4; ++k) pthread_join(th[k], NULL);
    for (int k = 0; k < 5; ++k)
        if (jobs[k].rc != 0 || memcmp(jobs[k].y, jobs[4].y, sizeof jobs[4].y) != 0) { printf("differ\n"); return 1; }
    printf("same\n");
    return 0;
}
"""


@pytest.mark.skipif(sys.platform != "linux", reason="pthreads and the thread sanitizer: linux")
@pytest.mark.parametrize("name,form", [("fourbar", "composite"), ("double_pendulum", "iterative-m")])
def test_threads_under_the_thread_sanitizer(tmp_path, bundled, name, form):
    model = bundled(name, form)
    folder = export_c(model, tmp_path / "lib")
    (folder / "threads.c").write_text(THREADS.replace("NAME", name).replace("UP_", f"{name.upper()}_"))
    cmd = ["gcc", "-std=c99", "-O1", "-g", "-fsanitize=thread", "-pthread", "-I.", "threads.c", f"{name}.c", "-lm",
           "-o", "threads"]
    proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
    if proc.returncode != 0 and "tsan" in proc.stderr.lower():
        pytest.skip("the thread sanitizer's library is not installed")
    assert proc.returncode == 0, proc.stderr
    run = subprocess.run(["./threads"], cwd=folder, capture_output=True, text=True)
    assert run.returncode == 0 and run.stdout.strip() == "same", run.stdout + run.stderr
    assert "WARNING: ThreadSanitizer" not in run.stderr


def test_model_without_parameters(tmp_path):
    """NP = 0: the arrays keep one unused slot (ISO C has no zero-size arrays), no warning."""
    from conftest import write_model
    path = write_model(tmp_path, {
        "name": "bare", "gravity": [0, 0, -9.81], "initial": {"phi": 0.3},
        "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}], "mass": 1.0,
                    "com": [0, 0, -0.25], "inertia": [0.02, 0.02, 0.001]}]})
    folder = export_c(path, tmp_path / "lib")
    for cc in COMPILERS:
        assert _compile(cc, folder, ["main.c", "bare.c"], f"example_{cc}") == ""
    out = subprocess.run(["./example_gcc", "0.5", "0.5"], cwd=folder, capture_output=True, text=True)
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 3


def test_fortran_library_makefile(tmp_path):
    """The Fortran flavour's Makefile (gfortran for the kernels) builds the example, whose rows
    equal the C flavour's to 1e-12."""
    if shutil.which("gfortran") is None or shutil.which("make") is None:
        pytest.skip("gfortran or make not installed")
    rows = {}
    for backend in ("c", "fortran"):
        folder = export_c(MODELS / "double_pendulum.yaml", tmp_path / backend, backend=backend)
        subprocess.run(["make"], cwd=folder, check=True, capture_output=True)
        out = subprocess.run(["./double_pendulum_main", "1", "0.25"], cwd=folder, capture_output=True, text=True,
                             check=True).stdout
        rows[backend] = np.array([line.split() for line in out.splitlines()[1:]], dtype=float)
    np.testing.assert_allclose(rows["fortran"], rows["c"], rtol=1e-12, atol=1e-12)


@pytest.mark.skipif(shutil.which("cmake") is None, reason="cmake not installed")
def test_cmake_builds(tmp_path, bundled):
    folder = export_c(bundled("double_pendulum"), tmp_path / "lib")
    build = str(tmp_path / "build")
    for cmd in (["cmake", "-S", str(folder), "-B", build], ["cmake", "--build", build]):
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    out = subprocess.run([str(tmp_path / "build" / "double_pendulum_main"), "0.1", "0.05"], capture_output=True,
                         text=True)
    assert out.returncode == 0 and len(out.stdout.splitlines()) == 4
