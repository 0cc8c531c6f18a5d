"""Inverse dynamics in the standalone C library (`<name>_inverse_dynamics`, `<name>_gravity_forces`;
runtime/export/c_library.py, docs/export.md): compiled from the exported files only by gcc (and
clang when installed) with -std=c99 -Wall -Wextra -pedantic and no warning; at random states
(inputs and extra states in their slots of p, parameters changed) equal to the Python module's
`inverse_dynamics` and `gravity_forces` (the same kernels: 1e-12 relative, what the other
functions of the library are held to), and on a random chain equal to Pinocchio's `rnea` and
`computeGeneralizedGravity` (1e-10 relative, the bound of the Python module against Pinocchio in
tests/generator/kinds/test_inverse_dynamics.py)."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import dynamica
from dynamica.runtime.export import export_c

from helpers import C_COMPILERS, C_FLAGS, TREES, rel_err, tree_path

pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
COMPILERS, FLAGS = C_COMPILERS, C_FLAGS

#: reads samples (t, q, qd, qdd, p) from stdin, prints the status and tau of both functions
DRIVER = r"""
#include <stdio.h>
#include "NAME.h"
static void show(const double *x, int n) { for (int k = 0; k < n; ++k) printf("%.17g ", x[k]); printf("\n"); }
int main(void)
{
    int count;
    if (scanf("%d", &count) != 1) return 2;
    for (int s = 0; s < count; ++s) {
        double t, q[UP_NQ], qd[UP_NQ], qdd[UP_NQ], p[UP_NP + 1], tau[UP_NQ];
        if (scanf("%lf", &t) != 1) return 2;
        for (int k = 0; k < UP_NQ; ++k) if (scanf("%lf", &q[k]) != 1) return 2;
        for (int k = 0; k < UP_NQ; ++k) if (scanf("%lf", &qd[k]) != 1) return 2;
        for (int k = 0; k < UP_NQ; ++k) if (scanf("%lf", &qdd[k]) != 1) return 2;
        for (int k = 0; k < UP_NP; ++k) if (scanf("%lf", &p[k]) != 1) return 2;
        printf("%d\n", NAME_inverse_dynamics(t, q, qd, qdd, p, tau)); show(tau, UP_NQ);
        printf("%d\n", NAME_gravity_forces(t, q, p, tau)); show(tau, UP_NQ);
    }
    return 0;
}
"""


def _build(model, folder):
    """The library exported into `folder`, the driver compiled by every compiler (no warning)."""
    export_c(model, folder)
    name = model.name
    (folder / "driver.c").write_text(DRIVER.replace("NAME", name).replace("UP_", f"{name.upper()}_"))
    for cc in COMPILERS:
        cmd = [cc, *FLAGS, "-I.", "driver.c", f"{name}.c", f"{name}_inverse.c", "-lm", "-o", f"driver_{cc}"]
        proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", f"{cc}: {proc.stderr}"


def _run(folder, rows, n):
    """[(tau, g)] of each compiler's driver for the samples (t, q, qd, qdd, p); gcc's and clang's agree
    to 1e-13."""
    text = f"{len(rows)}\n" + "\n".join(" ".join(repr(float(x)) for x in [t, *q, *qd, *a, *p])
                                        for t, q, qd, a, p in rows)
    results = []
    for cc in COMPILERS:
        proc = subprocess.run([str(folder / f"driver_{cc}")], input=text, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert len(lines) == 4 * len(rows)
        assert all(int(lines[k]) == 0 for k in range(0, len(lines), 2))        # finite: status 0
        vals = [np.array(lines[k].split(), dtype=float) for k in range(1, len(lines), 2)]
        assert all(v.shape == (n,) for v in vals)
        results.append(list(zip(vals[0::2], vals[1::2])))
    for other in results[1:]:
        for (a, b), (c, d) in zip(results[0], other):
            assert rel_err(c, a) <= 1e-13 and rel_err(d, b) <= 1e-13
    return results[0]


#: model, form, parameters changed, inputs given
CASES = [
    ("double_pendulum", "composite", {"l2": 0.9, "m1": 1.3}, {}),
    ("dc_motor_joint", "composite", {"R": 1.5}, {"u": 3.0}),        # an extra state and an input in p
    ("hydraulic_drive", "composite", {}, {"u": 0.3}),                # two extra states, an input
    ("fourbar", "composite", {}, {}),                                # loops: the tree's inverse dynamics
    ("chain7", "iterative-m", {}, {}),                               # every form has the same inverse
]


@pytest.mark.parametrize("name,form,params,inputs", CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_inverse_dynamics_equal_the_module(tmp_path, bundled, name, form, params, inputs):
    model = bundled(name, form)
    _build(model, tmp_path / "lib")
    rng = np.random.default_rng(11)
    rows, refs = [], []
    for _ in range(5):
        n = model.n
        q, qd, a = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n), rng.normal(0.0, 3.0, n)
        s = rng.uniform(-1, 1, len(model.states))
        t = float(rng.uniform(0, 2))
        p = model.param_vector(params, inputs, s if model.states else None)
        rows.append((t, q, qd, a, p))
        refs.append((model.inverse_dynamics(q, qd, a, t, params=params or None, inputs=inputs or None,
                                            s=s if model.states else None),
                     model.gravity_forces(q, t, params=params or None)))
    for (tau, g), (tau_ref, g_ref) in zip(_run(tmp_path / "lib", rows, model.n), refs):
        np.testing.assert_allclose(tau, tau_ref, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(tau_ref).max()))
        np.testing.assert_allclose(g, g_ref, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(g_ref).max()))
    # a state whose acceleration is the model's own needs no extra force (a test that can fail:
    # tau = 0 only when the exported kernels and the module's forward dynamics agree)
    q, qd = rows[0][1], rows[0][2]
    if not model.loops and not model.states and not model.inputs:
        a = model.qdd(q, qd, rows[0][0], params=params or None)
        (tau, _), = _run(tmp_path / "lib", [(rows[0][0], q, qd, a, rows[0][4])], model.n)
        assert np.abs(tau).max() <= 1e-10 * max(1.0, np.abs(model.mass_matrix(q, params=params or None)).max())


def test_inverse_dynamics_equal_pinocchio(tmp_path):
    """A random chain of 6 bodies with joints of 1, 2 and 3 coordinates (tests/oracles/pin_trees.py)
    against Pinocchio's rnea and computeGeneralizedGravity, parameters overridden in p."""
    pin = pytest.importorskip("pinocchio")
    from oracles.pin_trees import random_tree
    kind, n, tokens, seed, kw = TREES["chain6_123"]
    tree = random_tree(kind, n, tokens, np.random.default_rng(seed), name="chain6_123", **kw)
    model = dynamica.load(tree_path("chain6_123", tmp_path))
    _build(model, tmp_path / "lib")
    order = list(model.coordinates)
    rng = np.random.default_rng(41)
    rows, refs = [], []
    for k in range(6):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        a = dict(zip(order, rng.normal(0.0, 2.0, model.n)))
        pmodel, names = tree.to_pinocchio(tree.param_values(ov))
        data = pmodel.createData()
        qv, vv, av = (np.array([x[c] for c in names]) for x in (q, qd, a))
        idx = [names.index(c) for c in order]
        refs.append((pin.rnea(pmodel, data, qv, vv, av)[idx], pin.computeGeneralizedGravity(pmodel, data, qv)[idx]))
        rows.append((0.0, *(np.array([x[c] for c in order]) for x in (q, qd, a)), model.param_vector(ov or None)))
    for (tau, g), (tau_ref, g_ref) in zip(_run(tmp_path / "lib", rows, model.n), refs):
        assert rel_err(tau, tau_ref) <= 1e-10, rel_err(tau, tau_ref)
        assert rel_err(g, g_ref) <= 1e-10, rel_err(g, g_ref)


def test_makefile_builds_the_inverse(tmp_path, bundled):
    """`make` puts the inverse dynamics into lib<name>.a (its symbols defined there)."""
    if shutil.which("make") is None or shutil.which("nm") is None:
        pytest.skip("make or nm not installed")
    folder = export_c(bundled("double_pendulum"), tmp_path / "lib")
    proc = subprocess.run(["make"], cwd=folder, capture_output=True, text=True)
    assert proc.returncode == 0 and "warning" not in proc.stderr, proc.stderr
    symbols = subprocess.run(["nm", "libdouble_pendulum.a"], cwd=folder, capture_output=True, text=True).stdout
    for fn in ("double_pendulum_inverse_dynamics", "double_pendulum_gravity_forces"):
        assert f" T {fn}" in symbols
