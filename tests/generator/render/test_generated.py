"""The compiled (generated) module against the numeric reference, and its invariants."""

import os
import subprocess
import sys

import numpy as np
import pytest

import dynamica
from dynamica.runtime.reference.check import check_against_reference

from conftest import BUNDLED, MODELS


@pytest.mark.parametrize("name", BUNDLED)
def test_generated_equals_reference(bundled, name):
    """qdd and M at 10 random states and parameters (+-20%): relative 1e-10."""
    report = check_against_reference(bundled(name), samples=10, seed=3)
    assert report.ok(1e-10), report.text()


@pytest.mark.parametrize("name", BUNDLED)
def test_mass_matrix_spd(bundled, name):
    m = bundled(name)
    rng = np.random.default_rng(5)
    for _ in range(5):
        M = m.mass_matrix(rng.uniform(-1.5, 1.5, m.n), t=rng.uniform(0, 1))
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-13 * np.abs(M).max())
        assert np.linalg.eigvalsh(M).min() > 0


def _generate_in_subprocess(model, seed):
    code = ("import sys, dynamica; g = dynamica.generate(sys.argv[1]); "
            "sys.stdout.write(g.bundle.main[1])")
    env = dict(os.environ, PYTHONHASHSEED=str(seed))
    return subprocess.run([sys.executable, "-c", code, str(model)], capture_output=True, text=True,
                          env=env, check=True).stdout


@pytest.mark.parametrize("name", ["puma560", "forces_demo"])
def test_generation_is_deterministic(name):
    a = _generate_in_subprocess(MODELS / f"{name}.yaml", 1)
    b = _generate_in_subprocess(MODELS / f"{name}.yaml", 12345)
    assert a == b and len(a) > 1000


def test_parameters_are_runtime_inputs(bundled):
    """Changing a parameter changes qdd without recompiling, consistently with the reference."""
    m = bundled("double_pendulum")
    q, qd = np.array([0.4, -0.3]), np.array([0.2, 0.1])
    a0 = m.qdd(q, qd)
    a1 = m.qdd(q, qd, params={"g": 2 * m.parameters["g"]})
    assert not np.allclose(a0, a1)
    # with zero velocity, qdd is linear in g: doubling g doubles it
    np.testing.assert_allclose(m.qdd(q, 0 * qd, params={"g": 2 * m.parameters["g"]}), 2 * m.qdd(q, 0 * qd),
                               rtol=1e-12)


def test_module_metadata_and_capsule(bundled):
    m = bundled("puma560")
    mod = m.module
    assert mod.MODEL_NAME == "puma560" and mod.FORM == "composite"
    assert tuple(mod.COORDINATES) == m.coordinates and mod.N == 6
    assert len(mod.PARAMETER_DEFAULTS) == mod.NP
    assert len(mod.SIGNATURE) == 64
    import ctypes
    name = ctypes.pythonapi.PyCapsule_GetName
    name.restype, name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    assert name(mod.rhs_capsule) == b"dynamica.rhs"
    # call the C entry point through ctypes: same numbers as the Python wrapper
    getp = ctypes.pythonapi.PyCapsule_GetPointer
    getp.restype, getp.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    fn = ctypes.CFUNCTYPE(None, ctypes.c_double, ctypes.POINTER(ctypes.c_double), ctypes.POINTER(ctypes.c_double),
                          ctypes.POINTER(ctypes.c_double))(getp(mod.rhs_capsule, b"dynamica.rhs"))
    y = np.linspace(-1, 1, 12)
    p = m.param_vector()
    out = np.zeros(12)
    ptr = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))  # noqa: E731
    fn(0.5, ptr(y), ptr(p), ptr(out))
    np.testing.assert_array_equal(out, m.rhs(0.5, y))
    np.testing.assert_array_equal(out[:6], y[6:])


def test_every_grammar_function_compiles_and_matches(tmp_path):
    """Each function of the expression grammar, printed into C, equals numpy (via the reference)."""
    from conftest import write_model
    value = ("0.1*sin(a) + 0.2*cos(a) + 0.01*tan(a/3) + 0.1*asin(a/4) + 0.1*acos(a/4) + 0.1*atan(a) "
             "+ 0.1*atan2(a, 2) + 0.01*sinh(a) + 0.01*cosh(a) + 0.1*tanh(a) + 0.01*exp(a) + 0.1*log(2 + a) "
             "+ 0.1*sqrt(2 + a) + 0.1*abs(a) + 0.1*sign(der(a)) + 0.1*min(a, 0.2, k) + 0.1*max(a, -0.2) "
             "+ 0.1*heaviside(a) + k*pi - der(a)**3/(1 + a**2)")
    d = {"name": "functions", "parameters": {"k": 0.3},
         "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "z", "q": "a"}], "mass": 1.0,
                     "com": [0.5, 0, 0], "inertia": [0.1, 0.1, 0.1]}],
         "forces": [{"type": "generalized_force", "coordinate": "a", "value": value}]}
    m = dynamica.load(write_model(tmp_path, d), cache=tmp_path / "cache")
    report = check_against_reference(m, samples=20, seed=11)
    assert report.ok(1e-12), report.text()
