"""The dense solves of templates/native/dynamica_linalg.h (the derivatives module's -M^-1 J), driven by
tests/c/la_solve.c: the L^T D L solve (factors as the variant recursive's kernel gives them) and
the LU solve against numpy's solve of the assembled matrix, dense and tree-sparse factors, every
block width (nrhs 0 ... 33) and odd and even n; the vectorized path (AVX2 and FMA, where the
processor has them) against the portable one (DYNAMICA_LA_GENERIC=1); and a non-finite entry of
B reaches only the rows that depend on it, on both paths (zeros of the factors are skipped)."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from conftest import REPO_ROOT

ROOT = REPO_ROOT
pytestmark = pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")

SIZES = [(0, 4), (1, 1), (1, 5), (2, 4), (3, 6), (5, 10), (6, 3), (7, 14), (8, 16), (9, 17), (12, 24), (13, 33),
         (20, 40), (25, 9)]


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    exe = tmp_path_factory.mktemp("la") / "la_solve"
    subprocess.run(
        [
            "gcc",
            "-O1",
            "-fno-math-errno",
            "-I",
            str(ROOT / "templates" / "native"),
            str(ROOT / "tests" / "c" / "la_solve.c"),
            "-lm",
            "-o",
            str(exe),
        ],
        check=True,
        capture_output=True,
    )
    return exe


def _text(case):
    kind, n, nrhs, sign, F, B = case
    parts = [f"{kind} {n} {nrhs} {float(sign)!r}", " ".join(repr(float(x)) for x in F.ravel()),
             " ".join(repr(float(x)) for x in B.ravel())]
    return "\n".join(parts) + "\n"


def _run(driver, cases, generic=False):
    env = dict(os.environ)
    env.pop("DYNAMICA_LA_GENERIC", None)
    if generic:
        env["DYNAMICA_LA_GENERIC"] = "1"
    out = subprocess.run([str(driver)], input="".join(map(_text, cases)), capture_output=True, text=True, env=env,
                         check=True).stdout.splitlines()
    assert len(out) == len(cases)
    return [np.array([float(x) for x in line.split()]).reshape(c[1], c[2]) for line, c in zip(out, cases)]


def _ldl_case(rng, n, nrhs, sparse):
    """F: L (unit lower, strictly below the diagonal) and 1/d_i on the diagonal; M = L^T D L."""
    L = np.tril(rng.uniform(-0.4, 0.4, (n, n)), -1)
    if sparse:
        L[rng.random((n, n)) < 0.6] = 0.0
        if n > 2:
            L[:, n // 2] = 0.0                      # a whole column of zeros below the diagonal
    d = rng.uniform(0.5, 2.0, n) * rng.choice([-1.0, 1.0], n)
    F = L + np.diag(1.0 / d)
    Lu = L + np.eye(n)
    return F, Lu.T @ np.diag(d) @ Lu


def _cases(rng):
    cases, expected = [], []
    for n, nrhs in SIZES:
        for sparse in (False, True):
            F, M = _ldl_case(rng, n, nrhs, sparse)
            B = rng.normal(size=(n, nrhs))
            sign = rng.choice([-1.0, 1.0])
            cases.append((1, n, nrhs, sign, F, B))
            expected.append(sign * np.linalg.solve(M, B) if n else B)
            A = rng.normal(size=(n, n)) + 3 * np.eye(n)
            if sparse:
                A[rng.random((n, n)) < 0.5] = 0.0
                A += 3 * np.eye(n)
            cases.append((2, n, nrhs, 1.0, A, B))
            expected.append(np.linalg.solve(A, B) if n else B)
    return cases, expected


def test_solves_against_numpy_on_both_paths(driver):
    cases, expected = _cases(np.random.default_rng(5))
    fast, generic = _run(driver, cases), _run(driver, cases, generic=True)
    for case, x, y, ref in zip(cases, fast, generic, expected):
        scale = max(1.0, np.abs(ref).max(initial=0.0))
        assert np.abs(x - ref).max(initial=0.0) < 1e-12 * scale, case[:3]
        assert np.abs(y - ref).max(initial=0.0) < 1e-12 * scale, case[:3]


def test_a_non_finite_entry_reaches_only_the_rows_that_depend_on_it(driver):
    """L^T D L with L = I except F[3, 0]: row 0 of the solution depends on rows 0 and 3 of B,
    row 3 on both too, the others on themselves only; B's row 1 is inf. LU with unit L having
    L[3, 0] = 1 only: an inf in row 0 reaches row 3 and no other."""
    n, nrhs = 6, 8
    F = np.eye(n)
    F[3, 0] = 0.5
    B = np.arange(1.0, n * nrhs + 1).reshape(n, nrhs)
    B[1] = np.inf
    A = np.eye(n)
    A[3, 0] = 1.0
    C = np.arange(1.0, n * nrhs + 1).reshape(n, nrhs)
    C[0] = np.inf
    cases = [(1, n, nrhs, -1.0, F, B), (2, n, nrhs, 1.0, A, C)]
    for x_ldl, x_lu in zip(*[iter(_run(driver, cases) + _run(driver, cases, generic=True))] * 2):
        assert np.all(np.isinf(x_ldl[1])) and np.all(np.isfinite(np.delete(x_ldl, 1, axis=0)))
        assert np.all(np.isinf(x_lu[0])) and np.all(np.isinf(x_lu[3]))
        np.testing.assert_array_equal(np.delete(x_lu, [0, 3], axis=0), np.delete(C, [0, 3], axis=0))
