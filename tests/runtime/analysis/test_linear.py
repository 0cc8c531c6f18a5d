"""Linearisation and modes (dynamica.linearize, lin.modes(), frequency response).

Oracles: closed forms (the N-link pendulum of equal point masses, omega_k^2 = g/l x_k with x_k
the zeros of the Laguerre polynomial L_N; the free-free chain of equal masses and springs,
omega_k = 2 sqrt(c/m) sin(k pi / 2n); a damped oscillator's damping ratio, decrement and
receptance), and sympy.physics.mechanics: KanesMethod.linearize of small models (test oracle
tests/oracles/spm.py) at moving states.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp
import yaml
from numpy.polynomial import laguerre

import dynamica

from conftest import write_model
from helpers import n_pendulum

G_, L_, M_ = 9.81, 0.7, 1.3


@pytest.mark.parametrize("N", [2, 3])
def test_n_link_pendulum_frequencies_are_laguerre_zeros(tmp_path, N):
    model = dynamica.load(n_pendulum(tmp_path, N))
    lin = dynamica.linearize(model)                 # about the equilibrium found from a1 = -0.2, ...
    assert np.max(np.abs(lin.q)) < 1e-12
    x = np.sort(laguerre.lagroots([0] * N + [1]))
    exact = np.sqrt(G_ / L_ * x)
    md = lin.modes()
    assert np.max(np.abs(md.angular_frequencies / exact - 1)) < 1e-10
    assert np.max(np.abs(md.frequencies * 2 * math.pi / exact - 1)) < 1e-10     # undamped: the same
    assert np.all(md.damping_ratios == 0) and np.all(md.log_decrements == 0)
    assert md.shapes.shape == (N, N) and np.allclose(np.max(md.shapes, axis=0), 1.0)
    # each shape solves (K - w^2 M) phi = 0
    for k in range(N):
        r = (lin.K - md.angular_frequencies[k] ** 2 * lin.M) @ md.shapes[:, k]
        assert np.max(np.abs(r)) < 1e-9 * np.max(np.abs(lin.K))


def spring_chain(tmp_path, n, m=2.0, c=50.0, damping=0.0, name="chain"):
    """n equal masses on a line, each on a slider relative to the previous one (free-free):
    the relative coordinate q_i carries the spring between masses i-1 and i."""
    bodies = [{"name": f"m{i}", "parent": "ground" if i == 1 else f"m{i - 1}",
               "joint": [{"translate": "x", "q": f"x{i}"}], "mass": "m", "com": [0, 0, 0],
               "inertia": [0.01, 0.01, 0.01]} for i in range(1, n + 1)]
    forces = [{"type": "joint_spring_damper", "coordinate": f"x{i}", "stiffness": "c", "damping": "d"}
              for i in range(2, n + 1)]
    return write_model(tmp_path, {"name": name, "parameters": {"m": m, "c": c, "d": damping}, "gravity": [0, 0, 0],
                                  "bodies": bodies, "forces": forces}, f"{name}.yaml")


def test_free_free_spring_mass_chain(tmp_path):
    n, m, c = 8, 2.0, 50.0
    model = dynamica.load(spring_chain(tmp_path, n, m, c))
    lin = dynamica.linearize(model, q=np.zeros(n))
    w = lin.modes().angular_frequencies
    exact = 2 * math.sqrt(c / m) * np.sin(np.arange(n) * math.pi / (2 * n))
    assert abs(w[0]) < 1e-6                                    # the rigid-body mode
    assert np.max(np.abs(w[1:] / exact[1:] - 1)) < 1e-10


@pytest.mark.parametrize("n, variant", [(16, "recursive"), (32, "numeric")])
def test_long_chain_uses_the_recursive_or_numeric_variant_and_keeps_the_closed_form(tmp_path, n, variant):
    """Up to RECURSIVE_MAX_COORDINATES (30) coordinates a chain's derivatives module is the
    recursive variant, above it the numeric one on the C backend (its springs' partials from a
    generated kernel, the recursions as loops); both give the closed form."""
    from dynamica.runtime.kinds.derivatives import RECURSIVE_MAX_COORDINATES, derivatives
    assert (n <= RECURSIVE_MAX_COORDINATES) == (variant == "recursive")
    m, c = 1.5, 80.0
    model = dynamica.load(spring_chain(tmp_path, n, m, c, name=f"chain{n}"), mode="numeric")
    assert derivatives(model).module.INFO["variant"] == variant
    w = dynamica.linearize(model, q=np.zeros(n)).modes().angular_frequencies
    exact = 2 * math.sqrt(c / m) * np.sin(np.arange(n) * math.pi / (2 * n))
    assert abs(w[0]) < 1e-5 and np.max(np.abs(w[1:] / exact[1:] - 1)) < 1e-9


def oscillator(tmp_path, m=1.5, k=600.0, c=3.0):
    return write_model(tmp_path, {"name": "osc", "parameters": {"m": m, "k": k, "c": c}, "gravity": [0, 0, 0],
                                  "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
                                              "mass": "m", "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]}],
                                  "forces": [{"type": "joint_spring_damper", "coordinate": "x", "stiffness": "k",
                                              "damping": "c"}]}, "osc.yaml")


def test_damped_oscillator_damping_decrement_and_receptance(tmp_path):
    m, k, c = 1.5, 600.0, 3.0
    lin = dynamica.linearize(dynamica.load(oscillator(tmp_path, m, k, c)))
    md = lin.modes()
    wn = math.sqrt(k / m)
    zeta = c / (2 * math.sqrt(k * m))
    wd = wn * math.sqrt(1 - zeta ** 2)
    assert md.angular_frequencies[0] == pytest.approx(wn, rel=1e-12)
    assert md.frequencies[0] == pytest.approx(wd / (2 * math.pi), rel=1e-12)
    assert md.damping_ratios[0] == pytest.approx(zeta, rel=1e-12)
    assert md.log_decrements[0] == pytest.approx(2 * math.pi * zeta / math.sqrt(1 - zeta ** 2), rel=1e-12)
    assert md.decay_rates[0] == pytest.approx(-zeta * wn, rel=1e-12)
    assert md.half_amplitude_times[0] == pytest.approx(math.log(2) / (zeta * wn), rel=1e-12)
    f = np.array([0.5, 3.0, wd / (2 * math.pi), 10.0])
    fr = lin.frequency_response("x", ["x", "der(x)"], frequencies=f)
    w = 2 * math.pi * f
    amp = 1 / np.sqrt((k - m * w ** 2) ** 2 + (c * w) ** 2)
    assert np.max(np.abs(fr.amplitude[:, 0, 0] / amp - 1)) < 1e-12
    assert np.max(np.abs(fr.amplitude[:, 1, 0] / (w * amp) - 1)) < 1e-12
    peak = lin.frequency_response("x").peaks()
    assert peak[0] == pytest.approx(math.sqrt(wn ** 2 - 2 * (zeta * wn) ** 2) / (2 * math.pi), rel=1e-3)


def test_tables_plots_and_files(tmp_path):
    lin = dynamica.linearize(dynamica.load(spring_chain(tmp_path, 4, damping=0.4, name="c4")), q=np.zeros(4))
    md = lin.modes()
    text = md.table()
    assert "f, Hz" in text and "log dec" in text and len(text.splitlines()) == 5
    md.to_csv(tmp_path / "modes.csv")
    rows = (tmp_path / "modes.csv").read_text().splitlines()
    assert rows[0].startswith("mode,f_Hz,omega_rad_s") and len(rows) == 5
    md.plot(tmp_path / "shapes.png")
    fr = lin.frequency_response(["x1"], ["x2", "x4"])
    fr.plot(tmp_path / "afc.png")
    fr.to_csv(tmp_path / "afc.csv")
    assert (tmp_path / "shapes.png").stat().st_size > 1000 and (tmp_path / "afc.png").stat().st_size > 1000
    with pytest.raises(ValueError, match="unknown input.*'nope'"):
        lin.frequency_response("nope")
    with pytest.raises(ValueError, match="unknown output"):
        lin.frequency_response("x1", ["der(q)"])


def test_basis_restricts_to_independent_coordinates(tmp_path):
    model = dynamica.load(spring_chain(tmp_path, 3, name="c3"))
    full = dynamica.linearize(model, q=np.zeros(3))
    T = np.array([[1.0, 0.0], [0.0, 0.0], [0.0, 1.0]])          # x2 held: coordinates x1, x3
    sub = dynamica.linearize(model, q=np.zeros(3), basis=(T, ("x1", "x3")))
    assert sub.coordinates == ("x1", "x3")
    for a, b in ((sub.M, full.M), (sub.C, full.C), (sub.K, full.K)):
        assert np.array_equal(a, T.T @ b @ T)
    assert sub.A.shape == (4, 4)
    with pytest.raises(ValueError, match="basis must be an n x m matrix"):
        dynamica.linearize(model, q=np.zeros(3), basis=np.ones((2, 2)))


# ------------------------------------------------------------------ against sympy.physics.mechanics
SPM_MODELS = {
    "pendulum_spring": {
        "name": "pendulum_spring", "parameters": {"k": 40.0, "c": 0.7},
        "gravity": [0, 0, -9.81],
        "bodies": [
            {"name": "a", "parent": "ground", "joint": [{"rotate": "x", "q": "q1"}], "mass": 1.2,
             "com": [0.02, 0.0, -0.3], "inertia": [0.05, 0.04, 0.02, 0.003, 0.0, 0.001]},
            {"name": "b", "parent": "a", "joint": [{"translate": [0, 0.1, -0.6]}, {"rotate": "y", "q": "q2"}],
             "mass": 0.8, "com": [0.0, 0.05, -0.25], "inertia": [0.03, 0.02, 0.01, 0.0, 0.002, 0.0]}],
        "forces": [{"type": "spring_damper", "body_a": "ground", "point_a": [0.3, 0.2, 0.0], "body_b": "b",
                    "point_b": [0, 0, -0.5], "stiffness": "k", "damping": "c", "free_length": 0.4}]},
    "universal_slider": {
        "name": "universal_slider", "gravity": [0.5, 0, -9.81],
        "bodies": [
            {"name": "s", "parent": "ground", "joint": [{"translate": "y", "q": "y"}], "mass": 2.0,
             "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]},
            {"name": "u", "parent": "s", "joint": [{"rotate": "x", "q": "u1"}, {"rotate": "z", "q": "u2"}],
             "mass": 0.9, "com": [0.1, 0.0, -0.4], "inertia": [0.04, 0.03, 0.02, 0.0, 0.001, 0.002]}],
        "forces": [{"type": "spring_damper", "body_a": "ground", "point_a": [0, 0.5, 0], "body_b": "s",
                    "point_b": [0, 0, 0], "stiffness": 30.0, "damping": 0.5, "free_length": 0.3},
                   {"type": "bushing", "body_a": "s", "body_b": "u", "rotational_stiffness": [5.0, 2.0, 3.0],
                    "rotational_damping": [0.1, 0.2, 0.1]}]},
}


def _sympy_state_matrix(model_dict, q, qd):
    """A = d[q', u']/d[q, u] by KanesMethod.linearize at (q, u = qd, u' = the oracle's q'')."""
    from oracles.spm import build_kane, kane_qdd_function
    d = build_kane(model_dict)
    km, qs, us = d["kane"], d["q"], d["u"]
    t = sp.Symbol("t")
    from sympy.physics.mechanics import dynamicsymbols
    qdd = kane_qdd_function(model_dict)(q, qd)
    ud = [u.diff(dynamicsymbols._t) for u in us]
    op = {**dict(zip(qs, q)), **dict(zip(us, qd)), **dict(zip(ud, qdd))}
    params = {sym: val for name, val in d["env"].defaults.items() if name in d["env"].scalars
              for sym in [d["env"].scalars[name]]}
    A, _ = km.linearize(A_and_B=True, op_point=op)[:2]
    A = sp.Matrix(A).xreplace(params).xreplace({t: 0})
    return np.array(A.evalf(), dtype=float), d["coordinates"]


@pytest.mark.parametrize("name", list(SPM_MODELS))
def test_linearization_against_sympy_kanes_method(tmp_path, name):
    data = SPM_MODELS[name]
    model = dynamica.load(write_model(tmp_path, data, f"{name}.yaml"))
    rng = np.random.default_rng(4)
    q, qd = rng.uniform(-0.6, 0.6, model.n), rng.uniform(-1.0, 1.0, model.n)    # a moving state
    A_ref, names = _sympy_state_matrix(yaml.safe_load(yaml.safe_dump(data)), q, qd)
    assert tuple(names) == model.coordinates
    lin = dynamica.linearize(model, q=q, qd=qd)
    assert np.max(np.abs(lin.A - A_ref)) < 1e-9 * max(1.0, np.max(np.abs(A_ref)))
    assert np.max(np.abs(lin.qdd - model.qdd(q, qd))) < 1e-11
