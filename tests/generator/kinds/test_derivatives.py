"""Generated derivative kernels: the tangent program and the derivatives module.

  * the tangent of every IR function and operator against central differences of the IR
    interpreter (ir.interpret), so each derivative rule is checked on its own;
  * dq''/dq, dq''/dqd of random trees (chains, stars, mixed; 1-, 2-, 3-DOF, prismatic, custom
    and welded joints, a free base) against central differences of the model's own module
    (relative 1e-7) and against Pinocchio: computeABADerivatives on trees of 1-DOF joints
    (relative 1e-9), central differences of pin.aba on trees of composite joints (1e-7);
  * dQ/dq, dQ/dqd and the residual of models with every force type and a driven joint
    against central differences of Q = M q'' built from the main module;
  * the Fortran backend gives the C backend's numbers; the tangent's size grows with the
    sum of the dependency sets (quadratically along a chain), not exponentially;
  * the variant "recursive" (analytical recursive derivatives, generator/kinds/derivatives_recursive.py)
    runs the same checks as "unrolled" and equals it (1e-12) on every bundled model the
    derivatives module takes and on joints that mix coordinates, driven motions and screws;
  * the variant "recursive_loops" (the same formulas, the pairs of coordinates, M and its
    L^T D L in loops of the module file) runs the checks of "unrolled" too (central differences,
    Pinocchio, forces, a singular M), equals "recursive" on the bundled models, and its
    generated kernel grows linearly along a chain.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.generator.ir import nodes as ir
from dynamica.generator.ir.tangent import tangent_kernel
from dynamica.runtime.kinds.derivatives import derivatives

from conftest import MODELS, PLAIN_MODELS
from helpers import TREES, central, scaled_err, tree_path
from oracles.pin_trees import random_tree, write_yaml

RTOL_FD = 1e-7


# ------------------------------------------------------------------ the tangent of each rule
def _kernel_of(expr):
    """A kernel of two inputs x[0], x[1] storing `expr` (and using an intermediate)."""
    body = (ir.Assign("a", expr), ir.Store("out", 0, ir.Mul((ir.Var("a"), ir.Num(1.5)))),
            ir.Store("out", 1, ir.Add((ir.Var("a"), ir.Arg("x", 0)))))
    return ir.Kernel("k", (ir.Input("x", 2),), (ir.Output("out", 2),), ("a",), body)


X, Y = ir.Arg("x", 0), ir.Arg("x", 1)
RULES = {
    "add_mul": ir.Add((ir.Mul((X, Y, X)), ir.Mul((ir.Num(-2.0), Y)))),
    "pow_int": ir.Pow(X, ir.Num(3.0)),
    "pow_neg": ir.Mul((Y, ir.Pow(X, ir.Num(-2.0)))),
    "pow_real": ir.Pow(X, ir.Num(0.7)),
    "pow_var": ir.Pow(X, Y),
    **{f: ir.Call(f, (ir.Mul((ir.Num(0.4), X, Y)),))
       for f in ("sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "exp", "sqrt", "fabs")},
    "log": ir.Call("log", (ir.Add((X, Y)),)),
    "atan2": ir.Call("atan2", (Y, X)),
    "fmin": ir.Call("fmin", (ir.Mul((X, X)), Y)),
    "fmax": ir.Call("fmax", (ir.Mul((X, X)), Y)),
    "sign_heaviside": ir.Mul((ir.Call("sign", (Y,)), ir.Call("heaviside", (X,)), X)),
}


@pytest.mark.parametrize("rule", RULES)
def test_tangent_rules_against_central_differences(rule):
    k = _kernel_of(RULES[rule])
    tk = tangent_kernel(k, ("x",))
    x0 = np.array([0.83, 0.41])
    J = np.array(ir.interpret(tk, {"x": x0})["J"]).reshape(2, 2)
    assert ir.interpret(tk, {"x": x0})["out"] == ir.interpret(k, {"x": x0})["out"]
    fd = central(lambda x: ir.interpret(k, {"x": x})["out"], x0, 1e-6)
    assert np.max(np.abs(J - fd)) < 1e-8 * max(1.0, np.max(np.abs(fd))), (rule, J, fd)


def test_tangent_keeps_sparsity_and_rejects_unknown_inputs():
    # out0 depends on x0 only: its x1 entry is a literal zero, no statement computes it
    body = (ir.Store("out", 0, ir.Call("sin", (X,))), ir.Store("out", 1, ir.Mul((X, Y))))
    k = ir.Kernel("k", (ir.Input("x", 2),), (ir.Output("out", 2),), (), body)
    tk = tangent_kernel(k, ("x",))
    stores = {st.index: st.value for st in tk.body if isinstance(st, ir.Store) and st.array == "J"}
    assert stores[1] == ir.Num(0.0)
    with pytest.raises(ValueError, match="no input array 'q'"):
        tangent_kernel(k, ("q",))


# ------------------------------------------------------------------ random trees
@pytest.fixture(scope="module")
def tree_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("trees")
    return {name: dynamica.load(tree_path(name, folder)) for name in TREES}


#: the variants whose Jacobian kernels are exact formulas (the tape equals the unrolled one, below)
EXACT = ("unrolled", "recursive", "recursive_loops")


@pytest.mark.parametrize("variant", EXACT)
@pytest.mark.parametrize("name", list(TREES))
def test_qdd_jacobian_of_random_trees_against_central_differences(tree_models, name, variant):
    model = tree_models[name]
    d = derivatives(model, variant)
    rng = np.random.default_rng(7)
    n = model.n
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        qdd, Jq, Jv = d.qdd_jacobian(q, qd, t=0.3)
        assert scaled_err(qdd, model.qdd(q, qd, 0.3)) < 1e-12
        fd_q = central(lambda x: model.qdd(x, qd, 0.3), q)
        fd_v = central(lambda x: model.qdd(q, x, 0.3), qd)
        assert scaled_err(Jq, fd_q) < RTOL_FD
        assert scaled_err(Jv, fd_v) < RTOL_FD
        # the state Jacobian is [[0, E], [dq''/dq, dq''/dqd]]
        A = d.state_jacobian(0.3, np.concatenate([q, qd]))
        assert np.array_equal(A[:n, :n], np.zeros((n, n))) and np.array_equal(A[:n, n:], np.eye(n))
        assert scaled_err(A[n:], np.hstack([Jq, Jv])) < 1e-13
        assert scaled_err(d.mass_matrix(q, 0.3), model.mass_matrix(q, 0.3)) < 1e-12
        # the residual vanishes at the main module's accelerations
        assert scaled_err(d.residual(q, qd, model.qdd(q, qd, 0.3), 0.3), np.zeros(n)) < 1e-10


#: Pinocchio's analytic derivatives hold for its 1-DOF joints; for a JointModelComposite (our
#: 2- and 3-DOF and custom joints) pin 4.1's computeABADerivatives disagrees with central
#: differences of its own aba by O(10) (the motion subspace of a composite joint varies with
#: its coordinates), so those trees are checked against central differences of pin.aba
PIN_CASES = {"chain8_rev_prism": ("chain", 8, (1,), 301, {"prismatic": 0.3}, "analytic"),
             "mixed10_rev_prism": ("mixed", 10, (1,), 304, {"prismatic": 0.2}, "analytic"),
             "mixed9_123_custom": ("mixed", 9, (1, 2, 3, "custom", "welded"), 302, {}, "aba"),
             "star8_free_base": ("star", 8, (1, 2, 3), 303, {"base_joint": "free"}, "aba")}


def _pin_jacobians(pin, pmodel, q, qd, how):
    data = pmodel.createData()
    tau = np.zeros(pmodel.nv)
    if how == "analytic":
        pin.computeABADerivatives(pmodel, data, q, qd, tau)
        return data.ddq_dq.copy(), data.ddq_dv.copy()
    aba = lambda qq, vv: pin.aba(pmodel, pmodel.createData(), qq, vv, tau).copy()    # noqa: E731
    return central(lambda x: aba(x, qd), q), central(lambda x: aba(q, x), qd)


@pytest.mark.parametrize("variant", EXACT)
@pytest.mark.parametrize("case", list(PIN_CASES))
def test_qdd_jacobian_against_pinocchio(tmp_path, case, variant):
    pin = pytest.importorskip("pinocchio")
    kind, nb, tokens, seed, kw, how = PIN_CASES[case]
    tree = random_tree(kind, nb, tokens, np.random.default_rng(seed), name=case, **kw)
    write_yaml(tree, tmp_path / f"{case}.yaml")
    model = dynamica.load(tmp_path / f"{case}.yaml")
    d = derivatives(model, variant)
    rng = np.random.default_rng(seed)
    tol = 1e-9 if how == "analytic" else RTOL_FD
    for k in range(3):
        qn, qdn = tree.random_state(rng)
        overrides = {} if k == 0 else tree.random_overrides(rng)
        pmodel, names = tree.to_pinocchio(tree.param_values(overrides))
        Pq, Pv = _pin_jacobians(pin, pmodel, np.array([qn[c] for c in names]), np.array([qdn[c] for c in names]), how)
        order = [names.index(c) for c in model.coordinates]          # pinocchio's order -> ours
        q = np.array([qn[c] for c in model.coordinates])
        qd = np.array([qdn[c] for c in model.coordinates])
        _, Jq, Jv = d.qdd_jacobian(q, qd, params=overrides)
        assert scaled_err(Jq, Pq[np.ix_(order, order)]) < tol, case
        assert scaled_err(Jv, Pv[np.ix_(order, order)]) < tol, case


# ------------------------------------------------------------------ forces and driven joints
@pytest.mark.parametrize("variant", EXACT)
@pytest.mark.parametrize("name", ["forces_demo", "governor", "driven", "chain7"])
def test_force_jacobian_against_central_differences(bundled, name, variant):
    model = bundled(name)
    d = derivatives(model, variant)
    rng = np.random.default_rng(3)
    n, t = model.n, 0.7
    q0, qd0 = model.initial_state()
    q, qd = q0 + rng.uniform(-0.2, 0.2, n), qd0 + rng.uniform(-0.5, 0.5, n)

    def Q(qq, vv):          # generalized forces from the main module: M q''
        return model.mass_matrix(qq, t) @ model.qdd(qq, vv, t)

    F, Kq, Cv = d.force_jacobian(q, qd, t)
    assert scaled_err(F, Q(q, qd)) < 1e-10
    assert scaled_err(Kq, central(lambda x: Q(x, qd), q)) < RTOL_FD
    assert scaled_err(Cv, central(lambda x: Q(q, x), qd)) < RTOL_FD
    _, Jq, Jv = d.qdd_jacobian(q, qd, t)
    assert scaled_err(Jq, central(lambda x: model.qdd(x, qd, t), q)) < RTOL_FD
    assert scaled_err(Jv, central(lambda x: model.qdd(q, x, t), qd)) < RTOL_FD


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran not installed")
def test_fortran_derivatives_equal_c(tmp_path):
    path = tree_path("chain6_123", tmp_path)
    mc, mf = dynamica.load(path), dynamica.load(path, backend="fortran")
    rng = np.random.default_rng(5)
    q, qd = rng.uniform(-1, 1, mc.n), rng.uniform(-1, 1, mc.n)
    for variant in ("unrolled", "tape", "recursive"):
        dc, df = derivatives(mc, variant), derivatives(mf, variant)
        assert df.module.BACKEND == "fortran"
        for a, b in zip(dc.qdd_jacobian(q, qd, 0.1), df.qdd_jacobian(q, qd, 0.1)):
            assert scaled_err(a, b) < 1e-13


@pytest.mark.parametrize("name", ["mixed8_custom_welded", "star9_free"])
def test_tape_variant_equals_the_unrolled_tangent(tree_models, name):
    """The tape (partials generated, tangents carried by the loop of dynamica_linalg.h) gives the
    unrolled tangent's Jacobian, and its generated code grows like the residual, not like n^2."""
    model = tree_models[name]
    du, dt = derivatives(model, "unrolled"), derivatives(model, "tape")
    assert dt.module.__name__.endswith("_derivatives_tape") and dt is derivatives(model, "tape")
    rng = np.random.default_rng(9)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n)
        for a, b in zip(dt.qdd_jacobian(q, qd, 0.2), du.qdd_jacobian(q, qd, 0.2)):
            assert scaled_err(a, b) < 1e-12
        for a, b in zip(dt.residual_jacobian(q, qd, q, 0.2), du.residual_jacobian(q, qd, q, 0.2)):
            assert scaled_err(a, b) < 1e-12
    ops = dt.module.OPERATION_COUNTS
    assert ops["residual_partials"]["total"] < 3 * ops["residual"]["total"]
    with pytest.raises(ValueError, match="unknown derivatives variant"):
        derivatives(model, "dense")


#: every bundled model the derivatives module takes (no tabulated functions, extra states, loops)
DERIVATIVE_MODELS = [n for n in PLAIN_MODELS if "functions" not in yaml.safe_load((MODELS / f"{n}.yaml").read_text())]


def _same_jacobians(da, db, n, seed, t, tol=1e-12):
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q, qd, x = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        for a, b in zip(da.residual_jacobian(q, qd, x, t), db.residual_jacobian(q, qd, x, t)):
            assert scaled_err(a, b) < tol
        for a, b in zip(da.qdd_jacobian(q, qd, t), db.qdd_jacobian(q, qd, t)):
            assert scaled_err(a, b) < tol


@pytest.mark.parametrize("name", DERIVATIVE_MODELS)
def test_recursive_variant_equals_the_unrolled_tangent_on_bundled_models(bundled, name):
    """The analytical recursive derivatives (and the tangent of the active forces they leave to
    it) give the tangent's r and J at random states, trial accelerations and a time t != 0
    (driven joints, time-dependent forces)."""
    model = bundled(name)
    _same_jacobians(derivatives(model, "recursive"), derivatives(model, "unrolled"), model.n, 11, 0.37)


def test_recursive_variant_on_joints_mixing_coordinates_driven_motions_and_screws(tmp_path):
    """Joints whose elementary motions interleave coordinates, driven motions (rotations,
    translations, a screw, by expressions of t) and offsets: each motion is an axis of its own in
    the recursions (generator/kinds/derivatives_recursive.py), in its order within the joint."""
    bodies = [
        {
            "name": "a",
            "parent": "ground",
            "mass": 1.2,
            "com": [0.1, -0.05, 0.2],
            "inertia": [0.1, 0.08, 0.06, 0.01, 0.0, -0.02],
            "joint": [
                {"rotate": "z", "by": "0.7*t"},
                {"rotate": [0.3, 0.4, 0.5], "q": "a1"},
                {"translate": [0.2, 0.0, -0.1]},
                {"translate": "x", "by": "0.3*sin(2*t)"},
                {"translate": [0.0, 1.0, 1.0], "q": "a2"},
            ],
        },
        {
            "name": "b",
            "parent": "a",
            "mass": 0.8,
            "com": [0.0, 0.1, -0.1],
            "inertia": [0.05, 0.04, 0.03, 0.0, 0.005, 0.0],
            "joint": [
                {"screw": "y", "pitch": 0.4, "q": "b1"},
                {"rotate": "x", "by": "0.2*t**2"},
                {"rotate": "z", "q": "b2"},
                {"screw": [1, 0, 1], "pitch": -0.3, "by": "0.1*cos(t)"},
            ],
        },
        {
            "name": "c",
            "parent": "b",
            "mass": 0.5,
            "com": [0.05, 0.0, 0.1],
            "inertia": [0.02, 0.03, 0.01, 0.001, 0.0, 0.002],
            "joint": {"type": "helical", "axis": "z", "pitch": 0.25, "q": "c1", "offset": [0.1, 0.2, 0.0]},
        },
        {
            "name": "d",
            "parent": "a",
            "mass": 0.6,
            "com": [0.0, 0.0, -0.2],
            "inertia": [0.02, 0.02, 0.01],
            "joint": {"type": "spherical", "q": ["d1", "d2", "d3"], "offset": [0.0, 0.3, 0.0]},
        },
    ]
    path = tmp_path / "mixed_joints.yaml"
    path.write_text(yaml.safe_dump({"name": "mixed_joints", "gravity": [0.3, -0.2, -9.81], "bodies": bodies,
                                    "forces": [{"type": "joint_spring_damper", "coordinate": "b2", "stiffness": 3.0,
                                                "damping": 0.2}]}))
    model = dynamica.load(path)
    dr = derivatives(model, "recursive")
    _same_jacobians(dr, derivatives(model, "unrolled"), model.n, 12, 0.9)
    rng = np.random.default_rng(13)
    q, qd, t = rng.uniform(-1, 1, model.n), rng.uniform(-1, 1, model.n), 0.6
    _, Jq, Jv = dr.qdd_jacobian(q, qd, t)
    assert scaled_err(Jq, central(lambda x: model.qdd(x, qd, t), q)) < RTOL_FD
    assert scaled_err(Jv, central(lambda x: model.qdd(q, x, t), qd)) < RTOL_FD


@pytest.mark.parametrize("variant", EXACT)
def test_singular_mass_matrix_gives_nan(tmp_path, variant):
    """M singular at run time (the last body's mass and inertia set to 0): NaN, whether q'' and
    the factors come from the module file's LU (unrolled) or from the recursive variant's kernel
    (its L^T D L meets 1/0)."""
    bodies = [{"name": f"b{i}", "parent": "ground" if i == 1 else f"b{i - 1}", "mass": f"m{i}",
               "com": [0.0, 0.0, -0.3], "inertia": [f"i{i}", f"i{i}", f"i{i}"],
               "joint": [{"translate": [0.0, 0.0, -0.5]}, {"rotate": "x", "q": f"q{i}"}]} for i in (1, 2, 3)]
    params = {f"{k}{i}": v for i in (1, 2, 3) for k, v in (("m", 1.0), ("i", 0.02))}
    path = tmp_path / "sing.yaml"
    path.write_text(yaml.safe_dump({"name": "sing", "parameters": params, "gravity": [0, 0, -9.81], "bodies": bodies}))
    model = dynamica.load(path)
    d = derivatives(model, variant)
    q, qd = np.array([0.3, -0.2, 0.5]), np.array([0.1, 0.4, -0.3])
    assert all(np.all(np.isfinite(a)) for a in d.qdd_jacobian(q, qd))
    out = d.qdd_jacobian(q, qd, params={"m3": 0.0, "i3": 0.0})
    assert all(np.all(np.isnan(a)) for a in out)


def test_recursive_kernel_is_smaller_than_the_tangent_along_a_chain(tmp_path):
    """The recursive kernel grows as n^2 with a few inner products per pair of coordinates on a
    path; the forward tangent as n^2 with a body's whole program per pair."""
    from dynamica.generator.pipeline import generate_derivatives
    bodies = [{"name": f"b{i}", "parent": "ground" if i == 1 else f"b{i - 1}",
               "joint": [{"translate": [0.1, 0.0, -0.4]}, {"rotate": "xy"[i % 2], "q": f"q{i}"}],
               "mass": 1.0, "com": [0.02, 0.0, -0.2], "inertia": [0.05, 0.04, 0.03, 0.001, 0.0, 0.002]}
              for i in range(1, 13)]
    path = tmp_path / "c12.yaml"
    path.write_text(yaml.safe_dump({"name": "c12", "gravity": [0, 0, -9.81], "bodies": bodies}))
    ops = {v: {k.name: k.op_count()["total"] for k in generate_derivatives(path, variant=v).module_ir.kernels}
           for v in EXACT}
    assert ops["recursive"]["residual_jacobian"] < 0.5 * ops["unrolled"]["residual_jacobian"], (
        ops
    )  # 0.46 (0.28 at n = 20)


def test_default_variant_is_recursive_up_to_its_size_limit(bundled):
    """recursive up to RECURSIVE_MAX_COORDINATES, numeric above (the C backend;
    runtime/kinds/derivatives.py)."""
    from dynamica.runtime.kinds import derivatives as rd
    chain = bundled("chain7")
    assert rd.default_variant(chain) == "recursive"
    assert derivatives(chain).module.INFO["variant"] == "recursive"

    class Big:
        n = rd.RECURSIVE_MAX_COORDINATES + 1
    assert rd.default_variant(Big()) == "numeric"


def test_numeric_mode_model_gets_the_same_derivatives(bundled):
    sym = bundled("chain7")
    num = dynamica.load(sym.spec.file, mode="numeric")
    assert derivatives(num).module is derivatives(sym).module


def test_tangent_size_grows_quadratically_along_a_chain(tmp_path):
    """Forward mode with per-value dependency sets: a chain's body k carries 2k directions in
    its forward quantities and 2n in its backward ones, so the Jacobian kernel grows as n^2
    (the full Jacobian has 2n^2 entries), far below D = 2n times the residual's size."""
    from dynamica.generator.pipeline import generate_derivatives
    ops = {}
    for n in (4, 8, 16):
        bodies = [{"name": f"b{i}", "parent": "ground" if i == 1 else f"b{i - 1}",
                   "joint": [{"translate": [0.1, 0.0, -0.4]}, {"rotate": "xy"[i % 2], "q": f"q{i}"}],
                   "mass": 1.0, "com": [0.02, 0.0, -0.2], "inertia": [0.05, 0.04, 0.03, 0.001, 0.0, 0.002]}
                  for i in range(1, n + 1)]
        path = tmp_path / f"c{n}.yaml"
        path.write_text(yaml.safe_dump({"name": f"c{n}", "gravity": [0, 0, -9.81], "bodies": bodies}))
        counts = {k.name: k.op_count()["total"] for k in generate_derivatives(path).module_ir.kernels}
        ops[n] = counts
        assert counts["residual_jacobian"] < 2 * n * counts["residual"]
    growth = ops[16]["residual_jacobian"] / ops[8]["residual_jacobian"]
    assert 3.0 < growth < 4.5, ops
    assert math.isfinite(growth)


def test_radau_uses_the_generated_jacobian(bundled):
    """simulate(method="radau") passes d[q', q'']/d[q, q'] to scipy (jacobian="analytic", the
    default); the motion agrees with DOP853 at tight tolerances and with radau on scipy's own
    finite-difference Jacobian."""
    model = bundled("chain7")
    kw = dict(t_end=2.0, output_step=0.1, rtol=1e-10, atol=1e-12)
    ana = dynamica.simulate(model, method="radau", **kw)
    num = dynamica.simulate(model, method="radau", jacobian="numeric", **kw)
    ref = dynamica.simulate(model, method="DOP853", **kw)
    assert ana.info["jacobian"] == "analytic" and num.info["jacobian"] == "numeric" and ana.info["njev"] > 0
    assert np.max(np.abs(ana.q - ref.q)) < 1e-7 and np.max(np.abs(num.q - ref.q)) < 1e-7
    # radau converges with any reasonable Jacobian: the one it is given must itself be right, against
    # central differences of the main module's rhs (1e-6 of the largest entry) at states of the motion
    from dynamica.runtime.integrators.simulate import _jacobian
    jac = _jacobian(model, "Radau", None, None)
    h = 1e-6
    for k in (0, len(ana.t) // 2, len(ana.t) - 1):
        y = np.concatenate([ana.q[k], ana.qd[k]])
        fd = np.array([(model.rhs(ana.t[k], y + h * e) - model.rhs(ana.t[k], y - h * e)) / (2 * h)
                       for e in np.eye(y.size)]).T
        assert np.max(np.abs(jac(ana.t[k], y) - fd)) < 1e-6 * np.max(np.abs(fd))
    with pytest.raises(ValueError, match="jacobian must be"):
        dynamica.simulate(model, method="radau", jacobian="exact", **kw)


# ------------------------------------------------------------------ the module file's dense solves
#: coordinates of the chains below: 2n right-hand sides 2, 4, 6, 10, 14, 18, 24 cover every block
#: width of templates/native/dynamica_linalg.h (16, 8 and 4 columns with AVX2, 8 and 1 without) and its
#: leftover single row (odd n)
SOLVE_SIZES = (1, 2, 3, 5, 7, 9, 12)

_GENERIC_SCRIPT = """
import json, sys
import numpy as np
import dynamica
from dynamica.runtime.kinds.derivatives import derivatives
out = {}
for path, variant, q, qd in json.loads(sys.argv[1]):
    _, Jq, Jv = derivatives(dynamica.load(path), variant).qdd_jacobian(np.array(q), np.array(qd))
    out[path + variant] = np.hstack([Jq, Jv]).tolist()
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def solve_chains(tmp_path_factory):
    folder = tmp_path_factory.mktemp("solve_chains")
    paths = {}
    for n in SOLVE_SIZES:
        paths[n] = folder / f"solve_chain{n}.yaml"
        write_yaml(random_tree("chain", n, (1,), np.random.default_rng(900 + n), name=f"solve_chain{n}"), paths[n])
    paths["star"] = tree_path("star9_free", folder)
    return paths


def test_dense_solves_against_numpy_and_the_generic_path(solve_chains):
    """dq''/d[q, q'] = -M^-1 J of the module file (the L^T D L solve of the variant recursive, the
    LU of the unrolled one) against numpy's solve with M and J from the module's own kernels, on
    chains of every block width and on a star (zeros of the factors skipped), 1e-11; and the same
    in a process with DYNAMICA_LA_GENERIC=1 (the portable path; the vectorized one where the CPU
    has AVX2 and FMA), 1e-12"""
    cases = [(str(p), "recursive") for p in solve_chains.values()]
    cases += [(str(solve_chains[k]), "unrolled") for k in (3, "star")]
    rng = np.random.default_rng(17)
    here, args = {}, []
    for path, variant in cases:
        model = dynamica.load(path)
        d = derivatives(model, variant)
        q, qd = rng.uniform(-1.5, 1.5, model.n), rng.uniform(-1, 1, model.n)
        qdd, Jq, Jv = d.qdd_jacobian(q, qd)
        _, Rq, Rv = d.residual_jacobian(q, qd, qdd)
        expected = -np.linalg.solve(d.mass_matrix(q), np.hstack([Rq, Rv]))
        assert scaled_err(np.hstack([Jq, Jv]), expected) < 1e-11, (path, variant)
        here[path + variant] = np.hstack([Jq, Jv])
        args.append((path, variant, q.tolist(), qd.tolist()))
    env = dict(os.environ, DYNAMICA_LA_GENERIC="1")
    run = subprocess.run([sys.executable, "-c", _GENERIC_SCRIPT, json.dumps(args)], env=env, capture_output=True,
                         text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    generic = json.loads(run.stdout.strip().splitlines()[-1])
    for key, J in here.items():
        assert scaled_err(J, np.array(generic[key])) < 1e-12, key


@pytest.mark.parametrize("name", DERIVATIVE_MODELS)
def test_recursive_loops_equal_the_recursive_kernel_on_bundled_models(bundled, name):
    """The pairs, M and its factors formed by the loops of dynamica_linalg.h give the generated
    recursive kernel's r, J, M and dq''/d[q, q'] (1e-12 relative: the same formulas, summed in
    another order) at random states, trial accelerations and t != 0."""
    model = bundled(name)
    dl, dr_ = derivatives(model, "recursive_loops"), derivatives(model, "recursive")
    _same_jacobians(dl, dr_, model.n, 17, 0.41)
    q = np.random.default_rng(3).uniform(-1, 1, model.n)
    assert scaled_err(dl.mass_matrix(q, 0.41), model.mass_matrix(q, 0.41)) < 1e-12


def test_recursive_loops_kernel_grows_linearly_along_a_chain(tmp_path):
    """The generated part of "recursive_loops" is O(n): doubling a chain (8 -> 16 bodies) doubles
    its operations (ratio 2.0-2.2 measured; the recursive kernel's ratio is 3.3: n^2 pairs)."""
    from dynamica.generator.pipeline import generate_derivatives

    def ops(nb, variant):
        bodies = [{"name": f"b{i}", "parent": "ground" if i == 1 else f"b{i - 1}",
                   "joint": [{"translate": [0.1, 0.0, -0.4]}, {"rotate": "xy"[i % 2], "q": f"q{i}"}],
                   "mass": 1.0, "com": [0.02, 0.0, -0.2], "inertia": [0.05, 0.04, 0.03, 0.001, 0.0, 0.002]}
                  for i in range(1, nb + 1)]
        path = tmp_path / f"c{nb}.yaml"
        path.write_text(yaml.safe_dump({"name": f"c{nb}", "gravity": [0, 0, -9.81], "bodies": bodies}))
        kernels = {k.name: k.op_count()["total"] for k in generate_derivatives(path, variant=variant).module_ir.kernels}
        return kernels["pair_terms" if variant == "recursive_loops" else "solve_jacobian"]
    loops = ops(16, "recursive_loops") / ops(8, "recursive_loops")
    rec = ops(16, "recursive") / ops(8, "recursive")
    assert loops < 2.5 < rec, (loops, rec)


def test_recursive_loops_has_no_fortran_backend(tmp_path):
    """The loops are C (the module file's): asking for them with the Fortran backend is one
    clear error, and a Fortran model's default above the recursive variant's limit is the tape."""
    from dynamica.generator.pipeline import generate_derivatives
    from dynamica.runtime.kinds import derivatives as rd
    with pytest.raises(ValueError, match="recursive_loops.*no 'fortran' backend"):
        generate_derivatives(tree_path("chain6_123", tmp_path), backend="fortran", variant="recursive_loops")

    class Module:
        BACKEND = "fortran"

    class Big:
        n = rd.RECURSIVE_MAX_COORDINATES + 1
        module = Module()
    assert rd.default_variant(Big()) == "tape"
