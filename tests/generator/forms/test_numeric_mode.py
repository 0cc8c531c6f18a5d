"""mode="numeric" (generator/forms/numeric.py, templates/native/numeric_core.h) against mode="symbolic".

For every bundled model and a few random trees (tests/oracles/pin_trees.py), the numeric module
and the symbolic one agree on qdd and the mass matrix at random states, times and parameters to
1e-10 relative; the numeric module passes `check_against_reference` and a short simulation
agrees with the symbolic one. A 200-body chain generates and compiles well within two minutes
and agrees with Pinocchio's aba (slow).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import dynamica
from dynamica.runtime.reference.check import check_against_reference
from dynamica.runtime.reference.numeric import NumericReference

from conftest import REPO_ROOT
from helpers import TREES, tree_path

ROOT = REPO_ROOT
MODELS = sorted(p.stem for p in (ROOT / "models").glob("*.yaml"))
FORMS = ("composite", "articulated", "ltdl")
RTOL = 1e-10

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def rel(a, b):
    """Relative difference; infinite when either side has a NaN or an infinity (never agreement)."""
    a, b = np.asarray(a), np.asarray(b)
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))):
        return float("inf")
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def physical_draw(ref, p0, rng):
    """p0 scaled by U(0.8, 1.2), redrawn until every body inertia is positive semidefinite (by the
    independent reference): a scaled inertia about O_i can leave a negative one about the centre
    of mass (the governor's), and then M is indefinite and the Cholesky-based forms give NaN."""
    for _ in range(100):
        p = p0 * rng.uniform(0.8, 1.2, p0.shape)
        if ref.physical(p):
            return p
    raise AssertionError("no physical parameter draw")


@pytest.fixture(scope="module")
def tree_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("numeric_trees")


def model_path(name, tree_dir):
    return tree_path(name, tree_dir) if name in TREES else ROOT / "models" / f"{name}.yaml"


def compare(path, form, samples=8, seed=0):
    num = dynamica.load(path, form=form, mode="numeric")
    sym = dynamica.load(path, form=form)
    assert num.coordinates == sym.coordinates
    assert num.module.INFO.get("mode") == "numeric"
    rng = np.random.default_rng(seed)
    p0 = num.param_vector()
    ref = NumericReference(num.spec)
    e_qdd = e_M = e_out = 0.0
    for k in range(samples):
        q, qd, t = rng.uniform(-1, 1, num.n), rng.uniform(-1, 1, num.n), rng.uniform(0, 2)
        p = p0 if k == 0 else physical_draw(ref, p0, rng)
        a, b = np.empty(num.n), np.empty(num.n)
        num.module.qdd(t, q, qd, p, a)
        sym.module.qdd(t, q, qd, p, b)
        e_qdd = max(e_qdd, rel(a, b))
        Ma, Mb = np.empty(num.n ** 2), np.empty(num.n ** 2)
        num.module.mass_matrix(t, q, p, Ma)
        sym.module.mass_matrix(t, q, p, Mb)
        e_M = max(e_M, rel(Ma, Mb))
        k0, ks = num.slots["states"], len(num.states)          # extra states: y = [q, qd, s], s in p's slots
        y, yd = np.concatenate([q, qd, p[k0:k0 + ks]]), np.empty(num.state_size)
        num.module.rhs(t, y, p, yd)
        assert np.array_equal(yd[:num.n], qd) and np.array_equal(yd[num.n:2 * num.n], a)
        # the outputs section (points, reactions, forces, expressions): numeric mode takes q'' from
        # its recursion and evaluates the rest linearly; the symbolic module solves for q'' itself
        assert num.output_layout == sym.output_layout
        if hasattr(sym.module, "outputs"):
            size = sum(int(np.prod(shape)) for _, shape in sym.output_layout)
            oa, ob = np.empty(size), np.empty(size)
            num.module.outputs(t, q, qd, p, oa)
            sym.module.outputs(t, q, qd, p, ob)
            e_out = max(e_out, rel(oa, ob))
    return num, sym, e_qdd, e_M, e_out


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", MODELS + list(TREES))
def test_numeric_equals_symbolic(name, form, tree_dir):
    num, sym, e_qdd, e_M, e_out = compare(model_path(name, tree_dir), form)
    print(f"{name} {form}: qdd {e_qdd:.2e}, M {e_M:.2e}, outputs {e_out:.2e}")
    assert e_qdd < RTOL and e_M < RTOL and e_out < RTOL
    rep = check_against_reference(num, samples=10)
    assert rep.ok(), rep.text()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["double_pendulum", "forces_demo", "chain6_123"])
def test_numeric_simulation_agrees(name, form, tree_dir):
    path = model_path(name, tree_dir)
    num = dynamica.load(path, form=form, mode="numeric")
    sym = dynamica.load(path, form=form)
    q0, qd0 = num.initial_state()
    q0 = q0 + 0.1
    kw = dict(t_end=0.5, rtol=1e-10, atol=1e-12, output_step=0.05, q0=q0, qd0=qd0)
    ra, rb = dynamica.simulate(num, **kw), dynamica.simulate(sym, **kw)
    assert np.allclose(ra.q, rb.q, rtol=1e-7, atol=1e-8)
    assert np.allclose(ra.qd, rb.qd, rtol=1e-7, atol=1e-8)


def test_numeric_interface(tree_dir):
    num = dynamica.load(ROOT / "models" / "chain7.yaml", form="CBM", mode="numeric")
    sym = dynamica.load(ROOT / "models" / "chain7.yaml", form="CBM")
    m, s = num.module, sym.module
    for attr in ("MODEL_NAME", "KIND", "COORDINATES", "PARAMETERS", "PARAMETER_DEFAULTS", "N", "NP", "STATE_SIZE"):
        assert getattr(m, attr) == getattr(s, attr), attr
    assert m.FORM == "composite" and m.SIGNATURE != s.SIGNATURE
    assert "numeric_terms" in m.OPERATION_COUNTS
    assert type(m.rhs_capsule).__name__ == "PyCapsule"
    with pytest.raises(ValueError, match=rf"`q` must be a C-contiguous float64 array of {m.N} values"):
        m.qdd(0.0, np.zeros(3), np.zeros(m.N), np.zeros(m.NP), np.zeros(m.N))


def test_unsupported_form_and_mode():
    path = ROOT / "models" / "double_pendulum.yaml"
    with pytest.raises(ValueError, match="supported: composite, articulated, ltdl"):
        dynamica.load(path, form="direct", mode="numeric")
    with pytest.raises(ValueError, match="unknown mode"):
        dynamica.load(path, mode="semi")
    from dynamica.generator.pipeline import generate
    with pytest.raises(ValueError, match="supported"):
        generate(path, form="direct", mode="numeric")
    g = generate(path, form="ABM", mode="numeric")
    assert g.bundle.module_name.endswith("_articulated_numeric")
    assert g.bundle.signature == generate(path, form="ABM", mode="numeric").bundle.signature   # deterministic
    assert g.bundle.files == generate(path, form="ABM", mode="numeric").bundle.files


def chain_yaml(n: int) -> str:
    lines = ["name: chain%d" % n, "gravity: [0, 0, -9.81]", "parameters:", "  m: 1.0", "  l: 0.5",
             "  I: 0.02", "bodies:"]
    for i in range(1, n + 1):
        lines += [f"  - name: b{i}", f"    parent: {'ground' if i == 1 else f'b{i - 1}'}", "    joint:"]
        lines += ["      - translate: [0, 0, -l]"] if i > 1 else []
        lines += [f"      - rotate: {'xyz'[i % 3]}", f"        q: q{i}",
                  "    mass: m", "    com: [0, 0, -0.5*l]", "    inertia: [I, I, I, 0, 0, 0]"]
    return "\n".join(lines) + "\n"


def chain_pinocchio(n: int, m: float, l: float, inertia: float):
    """The chain of `chain_yaml` built directly as a Pinocchio model (an independent oracle)."""
    import pinocchio as pin
    model = pin.Model()
    model.gravity = pin.Motion(np.array([0.0, 0.0, -9.81]), np.zeros(3))
    parent = 0
    for i in range(1, n + 1):
        joint = (pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)[i % 3]()
        place = pin.SE3(np.eye(3), np.array([0.0, 0.0, -l if i > 1 else 0.0]))
        parent = model.addJoint(parent, joint, place, f"j{i}")
        model.appendBodyToJoint(parent, pin.Inertia(m, np.array([0.0, 0.0, -0.5 * l]), inertia * np.eye(3)),
                                pin.SE3.Identity())
    return model


@pytest.mark.slow
def test_chain200_numeric_against_pinocchio(tmp_path):
    """A 200-body chain in numeric mode generates and compiles well within two minutes, and its q''
    equals Pinocchio's aba (relative 1e-9: M of a 200-link chain is ill-conditioned) at default and
    at other parameters, at random states."""
    import pinocchio as pin

    from dynamica.build import compile_bundle, import_extension
    from dynamica.generator.pipeline import generate
    n = 200
    path = tmp_path / "chain200.yaml"
    path.write_text(chain_yaml(n))
    t0 = time.perf_counter()
    g = generate(path, form="articulated", mode="numeric")
    t1 = time.perf_counter()
    so = compile_bundle(g.bundle, cache=tmp_path / "cache")
    t2 = time.perf_counter()
    print(f"chain200 numeric: generation {t1 - t0:.2f} s, compile {t2 - t1:.2f} s, stages {g.timings}")
    assert t2 - t0 < 120
    m = import_extension(so)
    assert [name for name, _ in m.PARAMETERS] == ["m", "l", "I"]
    rng = np.random.default_rng(1)
    for params in ((1.0, 0.5, 0.02), (1.7, 0.3, 0.011)):
        pmodel = chain_pinocchio(n, *params)
        data = pmodel.createData()
        for _ in range(3):
            q, qd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
            out = np.empty(n)
            m.qdd(0.7, q, qd, np.array(params), out)
            ref = pin.aba(pmodel, data, q, qd, np.zeros(n))
            assert np.linalg.norm(out - ref) / max(1.0, np.linalg.norm(ref)) <= 1e-9
