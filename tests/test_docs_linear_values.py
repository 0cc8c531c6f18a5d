"""The numbers docs/linear.md prints for its worked example (models/two_mass.yaml) against the
two-mass equations written here, not against dynamica's own output (which tests/test_docs_linear.py
compares the page with):

    M = [[m1 + m2, m2], [m2, m2]],  C = diag(c1, c2),  K = diag(k1, k2),  f = [-(m1 + m2) g, -m2 g]

(x1 the base, x2 the top relative to it): the equilibrium K^-1 f (to the printed digits), the modes
(damped frequency, decay rate, damping ratio) from the eigenvalues of [[0, E], [-M^-1 K, -M^-1 C]],
the undamped angular frequency from K phi = w^2 M phi (to the 4-5 printed digits), the Prony
table's frequencies and decay rates of the noisy record near those of the true parameters, and the
fitted parameters within 3 of their printed standard errors of the true ones."""

from __future__ import annotations

import math
import re

import numpy as np
from test_docs import DOCS, fenced_blocks

M1, M2, G = 20.0, 5.0, 9.81
DEFAULTS = {"k1": 8.0e4, "c1": 40.0, "k2": 2.0e4, "c2": 10.0}
TRUE = {"k1": 7.2e4, "c1": 55.0, "k2": 2.3e4, "c2": 8.0}


def _modes(k1, c1, k2, c2):
    M = np.array([[M1 + M2, M2], [M2, M2]])
    C, K = np.diag([c1, c2]), np.diag([k1, k2])
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
    lam = np.linalg.eigvals(A)
    lam = lam[lam.imag > 0]
    return lam[np.argsort(lam.imag)]


def _printed():
    blocks = fenced_blocks(DOCS / "linear.md", marker="<!-- signature -->")
    (shown,) = [nxt for lang, body, signature, nxt in blocks if lang == "python" and not signature]
    return shown.splitlines()


def _row(lines, pattern):
    (line,) = [x for x in lines if re.match(pattern, x)]
    return line.split()


def test_the_pages_equilibrium_and_modes_are_the_two_mass_equations():
    lines = _printed()
    k1, k2 = DEFAULTS["k1"], DEFAULTS["k2"]
    x1 = float(_row(lines, r"\s+x1\s+0\s")[2])
    x2 = float(_row(lines, r"\s+x2\s+0\s")[2])
    assert abs(x1 - (-(M1 + M2) * G / k1)) < 1e-12 and abs(x2 - (-M2 * G / k2)) < 1e-12
    lam = _modes(**DEFAULTS)
    M = np.array([[M1 + M2, M2], [M2, M2]])
    omega0 = np.sqrt(np.sort(np.linalg.eigvals(np.linalg.solve(M, np.diag([k1, k2]))).real))   # K phi = w^2 M phi
    for k in (1, 2):
        row = _row(lines, rf"\s+{k}\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+\S+\s+x1 ")
        f, omega, beta, zeta = (float(v) for v in row[1:5])
        want = lam[k - 1]
        assert abs(f - want.imag / (2 * math.pi)) < 1e-4 * f
        assert abs(omega - omega0[k - 1]) < 1e-4 * omega
        assert abs(beta - want.real) < 1e-3 * abs(beta)
        assert abs(zeta - (-want.real / abs(want))) < 1e-3 * zeta


def test_the_pages_prony_and_fit_are_near_the_true_parameters():
    lines = _printed()
    lam = _modes(**TRUE)
    start = next(i for i, x in enumerate(lines) if "A x1" in x)
    for k in (1, 2):
        row = lines[start + k].split()
        f, beta = float(row[1]), float(row[2])
        want = lam[k - 1]
        assert abs(f - want.imag / (2 * math.pi)) < 1e-2 * f                # noise 2e-5 on mm-size motion
        assert abs(beta - want.real) < 0.1 * abs(want.real)
    head = next(i for i, x in enumerate(lines) if "std. error" in x)
    for line in lines[head + 1:head + 5]:
        name, _, fitted, se = line.split()[:4]
        assert abs(float(fitted) - TRUE[name]) < 3 * float(se), line
