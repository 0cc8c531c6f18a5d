"""The derivatives variant "numeric": numeric mode's generated per-joint terms and the analytical
recursive derivatives as the loops of templates/native/numeric_deriv.h.

  * dq''/d[q, q'] of random trees (chains, stars, mixed; 1-, 2-, 3-DOF, prismatic, custom and
    welded joints, a free base) against central differences of the model's own q'' (relative
    1e-7: the step 1e-6 leaves a truncation and rounding error near 1e-9 of the largest entry);
  * against Pinocchio: computeABADerivatives on trees of 1-DOF joints (1e-9 relative: two
    exact formulas in double precision, differing by summation order), central differences of
    pin.aba on trees of composite joints (1e-7);
  * equal to the variant "recursive" (r, J, dq''/d[q, q'], M: 1e-10 relative) on every bundled model
    it takes; every other bundled model gets one ModelError naming the entry and the variants
    that take it;
  * its generated kernel grows linearly along a chain.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.errors import ModelError
from dynamica.runtime.kinds.derivatives import derivatives

from conftest import MODELS, PLAIN_MODELS
from helpers import TREES, central, scaled_err, tree_path
from oracles.pin_trees import random_tree, write_yaml

RTOL_FD = 1e-7


@pytest.fixture(scope="module")
def tree_models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("numeric_trees")
    return {name: dynamica.load(tree_path(name, folder)) for name in TREES}


@pytest.mark.parametrize("name", list(TREES))
def test_random_trees_against_central_differences(tree_models, name):
    model = tree_models[name]
    d = derivatives(model, "numeric")
    rng = np.random.default_rng(8)
    n = model.n
    for _ in range(2):
        q, qd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        qdd, Jq, Jv = d.qdd_jacobian(q, qd, t=0.3)
        assert scaled_err(qdd, model.qdd(q, qd, 0.3)) < 1e-12
        assert scaled_err(Jq, central(lambda x: model.qdd(x, qd, 0.3), q)) < RTOL_FD
        assert scaled_err(Jv, central(lambda x: model.qdd(q, x, 0.3), qd)) < RTOL_FD
        assert scaled_err(d.mass_matrix(q, 0.3), model.mass_matrix(q, 0.3)) < 1e-12
        assert scaled_err(d.residual(q, qd, model.qdd(q, qd, 0.3), 0.3), np.zeros(n)) < 1e-10


PIN_CASES = {"chain8_rev_prism": ("chain", 8, (1,), 301, {"prismatic": 0.3}, "analytic"),
             "mixed10_rev_prism": ("mixed", 10, (1,), 304, {"prismatic": 0.2}, "analytic"),
             "chain12_rev": ("chain", 12, (1,), 305, {}, "analytic"),
             "mixed9_123_custom": ("mixed", 9, (1, 2, 3, "custom", "welded"), 302, {}, "aba")}


@pytest.mark.parametrize("case", list(PIN_CASES))
def test_against_pinocchio(tmp_path, case):
    pin = pytest.importorskip("pinocchio")
    kind, nb, tokens, seed, kw, how = PIN_CASES[case]
    tree = random_tree(kind, nb, tokens, np.random.default_rng(seed), name=case, **kw)
    write_yaml(tree, tmp_path / f"{case}.yaml")
    model = dynamica.load(tmp_path / f"{case}.yaml")
    d = derivatives(model, "numeric")
    rng = np.random.default_rng(seed)
    tol = 1e-9 if how == "analytic" else RTOL_FD
    for k in range(2):
        qn, qdn = tree.random_state(rng)
        overrides = {} if k == 0 else tree.random_overrides(rng)
        pmodel, names = tree.to_pinocchio(tree.param_values(overrides))
        pq, pv = np.array([qn[c] for c in names]), np.array([qdn[c] for c in names])
        data, tau = pmodel.createData(), np.zeros(pmodel.nv)
        if how == "analytic":
            pin.computeABADerivatives(pmodel, data, pq, pv, tau)
            Pq, Pv = data.ddq_dq.copy(), data.ddq_dv.copy()
        else:
            aba = lambda qq, vv: pin.aba(pmodel, pmodel.createData(), qq, vv, tau).copy()    # noqa: E731
            Pq, Pv = central(lambda x: aba(x, pv), pq), central(lambda x: aba(pq, x), pv)
        order = [names.index(c) for c in model.coordinates]
        q = np.array([qn[c] for c in model.coordinates])
        qd = np.array([qdn[c] for c in model.coordinates])
        _, Jq, Jv = d.qdd_jacobian(q, qd, params=overrides)
        assert scaled_err(Jq, Pq[np.ix_(order, order)]) < tol, case
        assert scaled_err(Jv, Pv[np.ix_(order, order)]) < tol, case


DERIVATIVE_MODELS = [n for n in PLAIN_MODELS if "functions" not in yaml.safe_load((MODELS / f"{n}.yaml").read_text())]
#: the bundled models without driven motions: these must be taken (forces_demo, governor and two_mass
#: with springs and dampers: active forces depending on q and q')
TAKEN = {"cardan_chain", "chain7", "double_pendulum", "forces_demo", "governor", "puma560", "spherical_chain", "star",
         "two_mass"}


@pytest.mark.parametrize("name", DERIVATIVE_MODELS)
def test_equal_to_recursive_on_bundled_models_or_one_clear_error(bundled, name):
    model = bundled(name)
    try:
        dn = derivatives(model, "numeric")
    except ModelError as e:
        assert name not in TAKEN, str(e)
        text = str(e)
        assert text.startswith(str(MODELS / f"{name}.yaml")) and "'recursive_loops'" in text
        assert "driven" in text, text
        return
    dr_ = derivatives(model, "recursive")
    rng = np.random.default_rng(19)
    n, t = model.n, 0.43
    for _ in range(2):
        q, qd, x = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        for a, b in zip(dn.residual_jacobian(q, qd, x, t), dr_.residual_jacobian(q, qd, x, t)):
            assert scaled_err(a, b) < 1e-10
        for a, b in zip(dn.qdd_jacobian(q, qd, t), dr_.qdd_jacobian(q, qd, t)):
            assert scaled_err(a, b) < 1e-10
        assert scaled_err(dn.mass_matrix(q, t), model.mass_matrix(q, t)) < 1e-10


def test_generated_kernel_grows_linearly_along_a_chain(tmp_path):
    """The generated part (numeric mode's terms kernel) is O(n): doubling a chain (8 -> 16 bodies)
    at most doubles its operations (plus 10 %)."""
    from dynamica.generator.pipeline import generate_derivatives

    def ops(nb):
        path = tmp_path / f"c{nb}.yaml"
        write_yaml(random_tree("chain", nb, (1,), np.random.default_rng(5), name=f"c{nb}"), path)
        gen = generate_derivatives(path, variant="numeric")
        return {k.name: k.op_count()["total"] for k in gen.module_ir.kernels}["numeric_terms"]
    assert ops(16) <= 2.2 * ops(8)


def test_default_above_the_limit_is_numeric_or_its_fallback(bundled, monkeypatch):
    """Above RECURSIVE_MAX_COORDINATES the default is "numeric", also for springs and dampers
    (two_mass, forces_demo); a model it does not take (a driven motion in `driven`) gets
    "recursive_loops" instead, no error."""
    from dynamica.runtime.kinds import derivatives as rd
    monkeypatch.setattr(rd, "RECURSIVE_MAX_COORDINATES", 0)
    chain, forces, springs = bundled("chain7"), bundled("driven"), bundled("two_mass")
    for m in (chain, forces, springs):
        m.companions.pop("derivatives", None)
    assert derivatives(chain).module.INFO["variant"] == "numeric"
    assert derivatives(springs).module.INFO["variant"] == "numeric"
    assert derivatives(forces).module.INFO["variant"] == "recursive_loops"
    assert derivatives(forces) is derivatives(forces)
    with pytest.raises(ModelError, match="recursive_loops"):
        derivatives(forces, "numeric")
