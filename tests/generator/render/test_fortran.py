"""The Fortran backend (docs/fortran.md): the same IR printed as Fortran 2008, compiled by gfortran
behind the same module file; differential tests against the C backend's module."""

import shutil

import numpy as np
import pytest

import dynamica
from dynamica.generator.ir import nodes as ir
from dynamica.generator.render.fortran import FortranPrinter, fortran_wrap
from dynamica.runtime.reference.check import check_against_reference

from conftest import MODELS, SIGNAL_MODELS
from helpers import TREES, tree_path

needs_gfortran = pytest.mark.skipif(shutil.which("gfortran") is None,
                                    reason="gfortran is not installed (apt-get install -y gfortran)")

_PAIRS = {}


def pair(name, form):
    """(Fortran model, C model) of a bundled model or a random tree (TREES), compiled once per session."""
    key = (name, form)
    if key not in _PAIRS:
        path = _tree(name) if name in TREES else MODELS / f"{name}.yaml"
        _PAIRS[key] = (dynamica.load(path, form=form, backend="fortran"), dynamica.load(path, form=form))
    return _PAIRS[key]


_TREE_DIR = []


def _tree(name):
    if not _TREE_DIR:
        import atexit
        import tempfile
        _TREE_DIR.append(tempfile.mkdtemp(prefix="dyn_fortran_trees_"))
        atexit.register(shutil.rmtree, _TREE_DIR[0], True)
    return tree_path(name, _TREE_DIR[0])


def _close(a, b, rtol=1e-12):
    a, b = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    assert np.array_equal(np.isnan(a), np.isnan(b)), (a, b)         # NaN where C has NaN (e.g. sqrt(<0))
    a, b = a[~np.isnan(b)], b[~np.isnan(b)]
    scale = max(1.0, float(np.abs(b).max())) if b.size else 1.0
    err = float(np.abs(a - b).max()) / scale if b.size else 0.0
    assert err <= rtol, f"relative difference {err:.3g} > {rtol}"
    return err


def _random_params(model, rng):
    params = {}
    for name, value in model.parameters.items():
        if isinstance(value, tuple):
            params[name] = tuple(v * (1 + 0.2 * rng.uniform(-1, 1)) for v in value)
        else:
            params[name] = value * (1 + 0.2 * rng.uniform(-1, 1))
    return params


FAST = [("double_pendulum", "composite"), ("forces_demo", "composite"), ("governor", "articulated"),
        ("driven", "hamilton-composite")]
SLOW = [("double_pendulum", "articulated"), ("double_pendulum", "hamilton-composite"),
        ("forces_demo", "articulated"), ("forces_demo", "hamilton-composite"), ("governor", "composite"),
        ("governor", "hamilton-composite"), ("driven", "composite"), ("driven", "articulated")]
# every bundled model and the random trees (differential tests on all of them)
_COVERED = {name for name, _ in FAST + SLOW}
EVERY = [(m.stem, "composite") for m in sorted(MODELS.glob("*.yaml")) if m.stem not in _COVERED | set(SIGNAL_MODELS)] \
    + [(t, "composite") for t in TREES] + [(t, "articulated") for t in TREES]
FAST.append(("mixed8_custom_welded", "ltdl"))
CASES = FAST + [pytest.param(*c, marks=pytest.mark.slow) for c in SLOW + EVERY]


# ------------------------------------------------------------------ printer and source (no compiler needed)
def test_printer_literals_powers_and_helpers():
    pr = FortranPrinter()
    x = ir.Var("x")
    assert pr.doprint(ir.Num(1e-5)) == "1d-05"
    assert pr.doprint(ir.Num(-3.0)) == "(-3.0d0)"
    assert pr.doprint(ir.Pow(x, ir.Num(7.0))) == "x**7"
    assert pr.doprint(ir.Pow(x, ir.Num(-2.0))) == "1.0d0/(x*x)"
    assert pr.doprint(ir.Mul((ir.Num(-1.0), ir.Pow(x, ir.Num(-1.0))))) == "-1.0d0/x"
    assert pr.doprint(ir.Pow(x, ir.Num(0.5))) == "x**0.5d0"
    assert pr.doprint(ir.Arg("q", 3)) == "q(3)"
    for f, name in (("sign", "dyn_sign"), ("heaviside", "dyn_heaviside"), ("fmin", "dyn_fmin"),
                    ("fmax", "dyn_fmax"), ("fabs", "abs")):
        assert pr.doprint(ir.Call(f, (x, x)[:2 if f in ("fmin", "fmax") else 1])).startswith(name + "(")


def test_long_statements_become_continuation_lines():
    text = "x = " + " + ".join(f"v{k}*in_q({k % 7})" for k in range(200))
    lines = fortran_wrap(text)
    assert len(lines) > 1 and all(len(line) <= 132 for line in lines)
    assert "".join(line.strip().strip("&") for line in lines) == text


def test_generated_fortran_respects_the_line_limit():
    g = dynamica.generate(MODELS / "puma560.yaml", backend="fortran")
    for name, text in g.bundle.files:
        if name.endswith(".f90"):
            assert max(len(line) for line in text.splitlines()) <= 132, name


def test_iterative_forms_are_refused_clearly():
    with pytest.raises(ValueError, match="use backend 'c'"):
        dynamica.generate(MODELS / "double_pendulum.yaml", form="iterative", backend="fortran")


# ------------------------------------------------------------------ compiled: Fortran == C
@needs_gfortran
@pytest.mark.parametrize("name, form", CASES)
def test_fortran_equals_c(name, form):
    mf, mc = pair(name, form)
    for attr in ("name", "form", "kind", "coordinates", "n", "_layout"):
        assert getattr(mf, attr) == getattr(mc, attr)
    assert mf.module.OPERATION_COUNTS == mc.module.OPERATION_COUNTS and mf.module.INFO == mc.module.INFO
    assert mf.module.BACKEND == "fortran" and hasattr(mf.module, "rhs_capsule")
    rng = np.random.default_rng(6)
    n = mf.n
    for _ in range(5):
        params = _random_params(mc, rng)
        q, qd, t = rng.uniform(-2, 2, n), rng.uniform(-2, 2, n), float(rng.uniform(0, 3))
        _close(mf.mass_matrix(q, t, params), mc.mass_matrix(q, t, params))
        if mc.hamiltonian:
            y = mc.to_state(q, qd, t, params)
            _close(mf.to_state(q, qd, t, params), y)
            _close(mf.from_state(y, t, params)[1], mc.from_state(y, t, params)[1])
        else:
            _close(mf.qdd(q, qd, t, params), mc.qdd(q, qd, t, params))
            y = np.concatenate([q, qd])
        _close(mf.rhs(t, y, params), mc.rhs(t, y, params))
        of, oc = mf.outputs(t, q, qd, params), mc.outputs(t, q, qd, params)
        assert of.keys() == oc.keys()
        for k in oc:
            _close(of[k], oc[k])
    # and against the numeric reference (runtime/reference/numeric.py), independently of the C module
    rep = check_against_reference(mf, samples=5)
    assert rep.ok(), rep.text()


@needs_gfortran
@pytest.mark.parametrize("name, form", [("forces_demo", "composite"), ("driven", "hamilton-composite")])
def test_fortran_simulation_agrees(name, form):
    mf, mc = pair(name, form)
    rf = dynamica.simulate(mf, t_end=1.0, method="adams", rtol=1e-10, atol=1e-10, output_step=0.1)
    rc = dynamica.simulate(mc, t_end=1.0, method="adams", rtol=1e-10, atol=1e-10, output_step=0.1)
    assert np.allclose(rf.t, rc.t)
    assert np.abs(rf.q - rc.q).max() < 1e-7 and np.abs(rf.qd - rc.qd).max() < 1e-7
    for k in rc.outputs:
        assert np.allclose(rf.outputs[k], rc.outputs[k], rtol=1e-6, atol=1e-7), k
    rs = dynamica.simulate(mf, t_end=1.0, method="RK45", rtol=1e-10, atol=1e-10, output_step=0.1)
    assert np.abs(rs.q - rc.q).max() < 1e-6


@needs_gfortran
def test_interface_errors():
    mf, mc = pair("double_pendulum", "composite")
    with pytest.raises(ValueError, match="`out` must be"):
        mf.module.qdd(0.0, np.zeros(2), np.zeros(2), mf.param_vector(), np.zeros(3))
    with pytest.raises(ValueError, match="`q` must be"):
        mf.module.qdd(0.0, np.zeros(2, dtype=np.float32), np.zeros(2), mf.param_vector(), np.zeros(2))
    with pytest.raises(TypeError, match="takes 5 arguments"):
        mf.module.qdd(0.0, np.zeros(2))
    q, qd, p = np.array([0.3, -0.2]), np.array([0.1, 0.5]), mf.param_vector()
    out = np.zeros(2)
    mf.module.qdd(0.0, q, qd, p, out)
    _close(out, mc.qdd(q, qd))


@needs_gfortran
@pytest.mark.slow
def test_split_fortran_kernels_compute_the_same(tmp_path, monkeypatch):
    """Kernels cut into many procedures (shared workspace) and sums cut into several statements."""
    from dynamica.build import compile_bundle, import_extension
    from dynamica.generator.render import common, fortran
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.reference.check import check_against_reference
    monkeypatch.setattr(common, "CHUNK", 7)
    monkeypatch.setattr(fortran, "FORTRAN_MAX_CONTINUATIONS", 1)
    g = dynamica.generate(MODELS / "double_pendulum.yaml", backend="fortran")
    src = dict(g.bundle.files)["double_pendulum_composite_f.f90"]
    assert src.count("_p") > 10 and "dyn_w(" in src
    mod = import_extension(compile_bundle(g.bundle, cache=tmp_path / "cache"))
    report = check_against_reference(CompiledModel(mod, g.spec), samples=5)
    assert report.ok(1e-10), report.text()
