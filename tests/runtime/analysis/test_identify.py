"""Prony analysis and parameter identification (dissertation tables 5.4 and 5.5).

Oracles: synthetic sums of damped harmonics with known frequencies, decay rates, amplitudes
and phases (the values of table 5.4), and records and modes of the two_mass model with known
parameters computed by the test from its equations (matrix exponential, eigenvalues; checked once
against the model file): the fit must recover them within the standard errors it reports.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import dynamica

from conftest import MODELS

#: table 5.4 of the dissertation: f (Hz), beta (1/s), A_psi, A_phi; phases are ours
F = np.array([1.155, 2.169, 3.179, 3.766])
BETA = np.array([-6.77, -1.52, -3.67, -1.98])
A_PSI = np.array([0.0112, 0.0046, 0.0010, 0.0035])
A_PHI = np.array([0.0055, 0.0008, 0.0062, 0.0069])
PH_PSI = np.array([0.3, -1.0, 2.0, 0.5])
PH_PHI = np.array([-0.4, 1.2, 0.1, -2.5])


def signals(t):
    def one(A, ph):
        return sum(A[k] * np.exp(BETA[k] * t) * np.cos(2 * math.pi * F[k] * t + ph[k]) for k in range(4))
    return np.column_stack([one(A_PSI, PH_PSI), one(A_PHI, PH_PHI)])


def test_prony_recovers_table_5_4_noise_free():
    t = np.arange(0.0, 1.5, 0.004)
    p = dynamica.prony(t, signals(t), 4, channels=("psi", "phi"))
    assert np.max(np.abs(p.frequencies / F - 1)) < 1e-6
    assert np.max(np.abs(p.decay_rates / BETA - 1)) < 1e-6
    assert np.max(np.abs(p.amplitudes - np.column_stack([A_PSI, A_PHI]))) < 1e-6 * A_PSI.max()
    dphase = np.angle(np.exp(1j * (p.phases - np.column_stack([PH_PSI, PH_PHI]))))
    assert np.max(np.abs(dphase)) < 1e-6
    assert np.allclose(p.half_amplitude_times, -math.log(2) / BETA, rtol=1e-6)
    assert np.all(p.correlation > 1 - 1e-12)
    assert p.suggested_modes == 4
    assert p.amplitudes.shape == (4, 2)
    T = t[-1] - t[0]
    assert np.allclose(p.mean_amplitudes[:, 0], A_PSI * (np.exp(BETA * T) - 1) / (BETA * T), rtol=1e-6)
    assert np.max(np.abs(p.fit(t) - signals(t))) < 1e-10
    text = p.table()
    assert "f, Hz" in text and "-ln2/beta" in text and "psi" in text


def test_prony_single_channel_and_errors():
    t = np.linspace(0.0, 2.0, 801)
    y = 0.3 * np.exp(-0.5 * t) * np.cos(2 * math.pi * 2.0 * t + 0.4)
    p = dynamica.prony(t, y, 1)
    assert p.amplitudes.shape == (1,) and p.frequencies[0] == pytest.approx(2.0, rel=1e-9)
    assert p.decay_rates[0] == pytest.approx(-0.5, rel=1e-9) and p.phases[0] == pytest.approx(0.4, rel=1e-9)
    with pytest.raises(ValueError, match="equally spaced"):
        dynamica.prony(np.r_[t[:10], t[11:]], np.r_[y[:10], y[11:]], 1)
    with pytest.raises(ValueError, match="need more samples"):
        dynamica.prony(t[:12], y[:12], 5)


def test_prony_degrades_gracefully_with_noise():
    """Errors grow in proportion to the noise, and stay small while the noise is below the
    weakest component."""
    t = np.arange(0.0, 1.5, 0.004)
    clean = signals(t)
    errors = []
    for sigma in (1e-7, 1e-6, 1e-5):
        rng = np.random.default_rng(11)
        p = dynamica.prony(t, clean + sigma * rng.normal(size=clean.shape), 4)
        errors.append(max(np.max(np.abs(p.frequencies - F)), np.max(np.abs(p.decay_rates - BETA)) / (2 * math.pi)))
    assert errors[-1] < 0.05
    assert 3 < errors[1] / errors[0] < 30 and 3 < errors[2] / errors[1] < 30


TRUE = {"k1": 7.2e4, "c1": 55.0, "k2": 2.3e4, "c2": 8.0}


@pytest.fixture(scope="module")
def two_mass():
    return dynamica.load(MODELS / "two_mass.yaml")


#: models/two_mass.yaml's masses and gravity (x1: the base, x2: the top relative to the base)
M1, M2, G = 20.0, 5.0, 9.81


def two_mass_matrices(k1, c1, k2, c2):
    """M x'' + C x' + K x = f of the two masses written here: the base's and the top's momentum
    balance in x1 and x1 + x2, each spring-damper on its own coordinate."""
    M = np.array([[M1 + M2, M2], [M2, M2]])
    return M, np.diag([c1, c2]), np.diag([k1, k2]), np.array([-(M1 + M2) * G, -M2 * G])


def exact_record(t):
    """x(t) from rest at x = 0 by the matrix exponential of the equations above (not dynamica's)."""
    import scipy.linalg as sla
    M, C, K, f = two_mass_matrices(TRUE["k1"], TRUE["c1"], TRUE["k2"], TRUE["c2"])
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
    xs = np.linalg.solve(K, f)                                    # the equilibrium (the sag)
    y0 = np.concatenate([-xs, [0.0, 0.0]])
    return np.array([xs + (sla.expm(A * tk) @ y0)[:2] for tk in t])


def noisy_record(model, sigma=2e-5, seed=1):
    t = np.arange(0.0, 2.0 + 1e-12, 0.002)
    X = exact_record(t)
    assert model.coordinates == ("x1", "x2")
    rng = np.random.default_rng(seed)
    return {"t": t, **{c: X[:, k] + sigma * rng.normal(size=len(t)) for k, c in enumerate(model.coordinates)}}


def test_the_record_written_here_is_the_model_file(two_mass):
    """The equations above are the bundled file's (a check of the oracle, 1e-8 m)."""
    rec = dynamica.simulate(two_mass, params=TRUE, t_end=0.5, output_step=0.01)
    assert np.max(np.abs(rec.q - exact_record(rec.t))) < 1e-8


def test_identify_from_noisy_records_within_standard_errors(two_mass):
    data = noisy_record(two_mass)
    fit = dynamica.identify(two_mass, list(TRUE), records=data)          # starts from the model's values
    assert fit.success
    for name, value in TRUE.items():
        se = fit.standard_errors[name]
        assert abs(fit.values[name] - value) <= 3 * se, (name, fit.values[name], value, se)
        assert se < 0.02 * value                              # and the errors are informative
    spread = [np.std(data[c]) for c in two_mass.coordinates]       # residuals are scaled by each column's spread
    assert 0.9 * 2e-5 / max(spread) < fit.info["sigma"] < 1.1 * 2e-5 / min(spread)
    assert all(r > 0.999 for r in fit.correlation.values())
    assert "std. error" in fit.table()


def test_identify_from_modes(two_mass):
    """Exact modes of the true model (the eigenvalues of the equations written above, not of
    dynamica's linearisation) give back the true values (4 conditions, 4 unknowns)."""
    M, C, K, _ = two_mass_matrices(TRUE["k1"], TRUE["c1"], TRUE["k2"], TRUE["c2"])
    A = np.block([[np.zeros((2, 2)), np.eye(2)], [-np.linalg.solve(M, K), -np.linalg.solve(M, C)]])
    lam = np.linalg.eigvals(A)
    lam = np.sort(lam[lam.imag > 0].copy())                       # one of each pair, by frequency
    lam = lam[np.argsort(lam.imag)]
    fit = dynamica.identify(two_mass, list(TRUE), modes={"frequencies": lam.imag / (2 * math.pi),
                                                          "decay_rates": lam.real})
    for name, value in TRUE.items():
        assert fit.values[name] == pytest.approx(value, rel=1e-6)
    assert fit.dof == 0 and all(math.isnan(v) for v in fit.standard_errors.values())


def test_prony_then_identify(two_mass):
    """Table 5.4 then table 5.5: modes identified from the noisy record, stiffnesses fitted to them."""
    data = noisy_record(two_mass)
    y = np.column_stack([data["x1"], data["x2"]])
    p = dynamica.prony(data["t"], y, 2, offset=True)
    fit = dynamica.identify(two_mass, ["k1", "k2"], modes=p, fixed={"c1": TRUE["c1"], "c2": TRUE["c2"]})
    assert fit.values["k1"] == pytest.approx(TRUE["k1"], rel=2e-3)
    assert fit.values["k2"] == pytest.approx(TRUE["k2"], rel=2e-3)


def test_identify_argument_errors(two_mass):
    with pytest.raises(ValueError, match="either modes"):
        dynamica.identify(two_mass, ["k1"])
    with pytest.raises(ValueError, match="unknown parameter 'kk'"):
        dynamica.identify(two_mass, ["kk"], modes={"frequencies": [5.0]})
    with pytest.raises(ValueError, match="no column"):
        dynamica.identify(two_mass, ["k1"], records={"t": np.arange(5.0), "x9": np.zeros(5)}, columns=["x9", "y"])
    with pytest.raises(ValueError, match="`start` names 'c1'"):
        dynamica.identify(two_mass, ["k1"], modes={"frequencies": [5.0]}, start={"c1": 3.0})
