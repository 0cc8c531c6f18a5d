"""Inverse dynamics (generator/kinds/inverse.py): `model.inverse_dynamics(q, qd, qdd)` and
`model.gravity_forces(q)` against Pinocchio's `rnea` and `computeGeneralizedGravity` on random
trees (oracles/pin_trees.py: chains, stars with a free base, mixed trees with custom and welded
joints; parameters overridden at run time), relative 1e-10; and with force elements and inputs,
qdd(inverse_dynamics(q, qd, a)) == a."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import dynamica

from conftest import MODELS, write_model
from helpers import rel_err, tree_path
from oracles.pin_trees import random_tree

pin = pytest.importorskip("pinocchio")

RTOL = 1e-10
TREES = ("chain6_123", "mixed8_custom_welded", "star9_free")


@pytest.fixture(scope="module", params=TREES)
def tree_model(request, tmp_path_factory):
    from helpers import TREES as SPECS
    kind, n, tokens, seed, kw = SPECS[request.param]
    tree = random_tree(kind, n, tokens, np.random.default_rng(seed), name=request.param, **kw)
    return tree, dynamica.load(tree_path(request.param, tmp_path_factory.mktemp("inverse")))


def test_inverse_dynamics_and_gravity_equal_pinocchio(tree_model):
    tree, model = tree_model
    order = list(model.coordinates)
    rng = np.random.default_rng(31)
    for k in range(8):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        a = dict(zip(order, rng.normal(0.0, 2.0, model.n)))
        pmodel, names = tree.to_pinocchio(tree.param_values(ov))
        data = pmodel.createData()
        qv, vv, av = (np.array([x[c] for c in names]) for x in (q, qd, a))
        idx = [names.index(c) for c in order]
        tau_ref = pin.rnea(pmodel, data, qv, vv, av)[idx]
        g_ref = pin.computeGeneralizedGravity(pmodel, data, qv)[idx]
        args = [np.array([x[c] for c in order]) for x in (q, qd, a)]
        tau = model.inverse_dynamics(*args, params=ov or None)
        g = model.gravity_forces(args[0], params=ov or None)
        assert rel_err(tau, tau_ref) <= RTOL, (k, rel_err(tau, tau_ref))
        assert rel_err(g, g_ref) <= RTOL, (k, rel_err(g, g_ref))
        # and the forward dynamics of the same module close the loop: M a + h = tau
        assert rel_err(np.linalg.solve(model.mass_matrix(args[0], params=ov or None), tau)
                       + model.qdd(args[0], args[1], params=ov or None), args[2]) <= RTOL


def test_qdd_of_inverse_dynamics_is_the_acceleration(tmp_path):
    """forces_demo (every force type) with an input torque on each coordinate: tau =
    inverse_dynamics(q, qd, a) applied as the inputs gives qdd == a; and the model's own qdd
    needs no extra force."""
    data = yaml.safe_load((MODELS / "forces_demo.yaml").read_text())
    coords = ["xc", "theta", "s"]
    data["inputs"] = [f"tau_{c}" for c in coords]
    data["forces"] += [{"type": "generalized_force", "coordinate": c, "value": f"tau_{c}"} for c in coords]
    model = dynamica.load(write_model(tmp_path, data))
    assert sorted(model.coordinates) == sorted(coords)
    rng = np.random.default_rng(5)
    for form in ("composite", "articulated", "lagrange1"):
        m = dynamica.load(write_model(tmp_path, data), form=form)
        for _ in range(5):
            q, qd, a, t = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.normal(0, 3, 3), rng.uniform(0, 2)
            tau = m.inverse_dynamics(q, qd, a, t)
            inputs = {f"tau_{c}": tau[k] for k, c in enumerate(m.coordinates)}
            assert rel_err(m.qdd(q, qd, t, inputs=inputs), a) <= RTOL
            assert np.abs(m.inverse_dynamics(q, qd, m.qdd(q, qd, t), t)).max() <= 1e-10 * max(1.0, np.abs(tau).max())


def test_inverse_dynamics_with_extra_states(tmp_path):
    """The motor's current (a state) acts in the inverse dynamics as in qdd."""
    m = dynamica.load(MODELS / "dc_motor_joint.yaml")
    q, qd, s = np.array([0.4]), np.array([-1.0]), np.array([2.5])
    a = m.qdd(q, qd, s=s)
    assert abs(m.inverse_dynamics(q, qd, a, s=s)[0]) <= 1e-12
    N, k_t = m.parameters["N"], m.parameters["k_t"]
    assert m.inverse_dynamics(q, qd, a, s=[0.0])[0] == pytest.approx(N * k_t * 2.5, rel=1e-12)
