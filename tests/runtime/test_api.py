"""The Python API of docs/api.md and the simulation result."""

import numpy as np
import pytest

import dynamica
from dynamica.runtime.results.result import SimulationResult


def test_model_object(bundled):
    m = bundled("double_pendulum")
    assert m.name == "double_pendulum" and m.form == "composite" and m.n == 2
    assert m.coordinates == ("phi1", "phi2")
    assert isinstance(m.parameters, dict) and isinstance(m.parameters["g"], float)
    y = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_array_equal(m.rhs(0.0, y), np.concatenate([y[2:], m.qdd(y[:2], y[2:])]))
    assert m.mass_matrix(y[:2]).shape == (2, 2)


def test_vector_parameters(bundled):
    m = bundled("chain7")
    vec = [k for k, v in m.parameters.items() if isinstance(v, tuple)]
    assert vec, "chain7 is expected to use a vector parameter"
    name = vec[0]
    new = tuple(1.1 * x for x in m.parameters[name])
    q = np.linspace(-0.5, 0.5, m.n)
    assert not np.allclose(m.qdd(q, 0 * q), m.qdd(q, 0 * q, params={name: new}))
    with pytest.raises(ValueError, match="expects"):
        m.qdd(q, 0 * q, params={name: 1.0})


def test_bad_arguments(bundled):
    m = bundled("double_pendulum")
    with pytest.raises(KeyError, match="unknown parameter"):
        m.qdd([0, 0], [0, 0], params={"nope": 1.0})
    with pytest.raises(ValueError, match="length 3, expected 2"):
        m.qdd([0, 0, 0], [0, 0])


def test_simulate_and_csv_roundtrip(bundled, tmp_path):
    m = bundled("double_pendulum")
    r = dynamica.simulate(m, t_end=1.0, output_step=0.1, rtol=1e-10, atol=1e-12)
    assert r.t.shape == (11,) and r.q.shape == (11, 2) and r.qd.shape == (11, 2)
    np.testing.assert_allclose(r.t, np.linspace(0, 1, 11), atol=1e-14)
    q0, qd0 = m.initial_state()
    np.testing.assert_allclose(r.q[0], q0)
    r.to_csv(tmp_path / "out.csv")
    back = SimulationResult.read_csv(tmp_path / "out.csv")
    np.testing.assert_array_equal(back.q, r.q)
    assert back.coordinates == r.coordinates


def test_simulate_options_after_t_end_are_keyword_only(bundled):
    """docs/api.md: `model` and `t_end` by position, every other option by keyword (a third
    positional argument would silently be read as the method)."""
    import inspect

    from dynamica.runtime.integrators.simulate import simulate_stage
    from dynamica.runtime.studies.sweep import sweep
    m = bundled("double_pendulum")
    a = dynamica.simulate(m, 0.5, output_step=0.25)
    b = dynamica.simulate(m, t_end=0.5, output_step=0.25)
    np.testing.assert_array_equal(a.q, b.q)
    with pytest.raises(TypeError):
        dynamica.simulate(m, 0.5, "DOP853")
    for fn, positional in ((dynamica.simulate, ["model", "t_end"]), (simulate_stage, ["model", "t_end"]),
                           (sweep, ["model", "cases", "t_end", "outputs", "scheduler"])):
        kinds = {p.name: p.kind for p in inspect.signature(fn).parameters.values()}
        assert [k for k, v in kinds.items() if v is inspect.Parameter.POSITIONAL_OR_KEYWORD] == positional
        assert all(v is inspect.Parameter.KEYWORD_ONLY for k, v in kinds.items() if k not in positional)


def test_simulate_matches_scipy_dop853(bundled):
    """Two different integrators (LSODA behind 'adams', DOP853) agree on the same compiled RHS."""
    m = bundled("chain7")
    a = dynamica.simulate(m, t_end=1.0, output_step=0.5, rtol=1e-11, atol=1e-12)
    b = dynamica.simulate(m, t_end=1.0, output_step=0.5, method="DOP853", rtol=1e-12, atol=1e-13)
    np.testing.assert_allclose(a.q, b.q, atol=1e-7)


def test_simulate_methods_agree(bundled):
    """Compiled Adams, Stoermer-6 and scipy DOP853 on the same compiled RHS agree."""
    m = bundled("double_pendulum")
    ref = dynamica.simulate(m, t_end=1.0, output_step=0.25, method="DOP853", rtol=1e-13, atol=1e-13)
    a = dynamica.simulate(m, t_end=1.0, output_step=0.25, method="adams", rtol=1e-11, atol=1e-11)
    s = dynamica.simulate(m, t_end=1.0, output_step=0.25, method="stoermer6", step=2e-3)
    assert a.info["steps"] > 10 and a.nfev > a.info["steps"]
    np.testing.assert_allclose(a.q, ref.q, atol=1e-8)
    np.testing.assert_allclose(s.q, ref.q, atol=1e-8)
    np.testing.assert_allclose(s.qd, ref.qd, atol=1e-8)


def test_model_format_integrators_are_the_runtime_registry():
    """Every integrator a model file may name is one `simulate` runs, and vice versa."""
    from dynamica.generator.spec.model import INTEGRATORS as NAMES
    from dynamica.runtime.integrators.simulate import INTEGRATORS
    assert set(NAMES) == set(INTEGRATORS)
