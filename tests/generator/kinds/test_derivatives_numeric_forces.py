"""The derivatives variant "numeric" with generalized forces that depend on q and q' (joint springs
and dampers, MJCF stiffness, damping and frictionloss, any `generalized_force` expression): their
partials come from the generated kernel `force_jacobian` and start J in numeric_deriv.h.

  * a chain of revolute and prismatic joints with a spring-damper on each coordinate against
    Pinocchio: computeABADerivatives at tau = -K (q - q0) - C q' gives dq''/d[q, q'] at fixed tau,
    to which the springs add M^-1 dtau/d[q, q'] = -M^-1 [K | C] (closed form); 1e-9 relative, as the
    force-free comparison of test_derivatives_numeric.py (two exact formulas in double precision);
  * the same chain with nonlinear, coupled laws (a tanh friction, a torque of sin(q_a - q_b), a
    damper quadratic in q') against central differences of the model's own q'' (1e-6 relative:
    h = 1e-6, the tanh's third derivative of order f/eps^3 leaves up to about 1e-7) and equal to
    the variant "recursive_loops" (the generated tangent of the same residual; 1e-10 relative);
  * an MJCF chain with damping, stiffness (springref), limits and frictionloss: equal to
    "recursive_loops" (1e-10) and to central differences (1e-6);
  * body forces that depend on q and q' (spring-dampers between bodies and to the ground, a bushing,
    a body force with a velocity law in body axes, one in ground axes) on a mixed tree of 1-, 2- and
    3-DOF joints: their partials from the kernel `wrench_jacobian`, carried to the ground frame and
    summed over subtrees in numeric_deriv.h; equal to "recursive_loops" (1e-10) and to central
    differences (1e-6), and the bundled forces_demo equal to "recursive_loops";
  * the module has the kernels `force_jacobian` / `wrench_jacobian` only when some generalized
    force / body force moves.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamica
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.kinds.derivatives import derivatives

from helpers import central, scaled_err
from oracles.pin_trees import random_tree, write_yaml

RTOL_FD = 1e-6


def _spring_tree(seed=311, nb=7):
    tree = random_tree("chain", nb, (1,), np.random.default_rng(seed), name="springs", prismatic=0.3)
    rng = np.random.default_rng(seed + 1)
    laws = {c: (float(rng.uniform(5, 50)), float(rng.uniform(0.5, 5)), float(rng.uniform(-0.5, 0.5)))
            for c in tree.coordinates}
    tree.model_dict["forces"] = [{"type": "joint_spring_damper", "coordinate": c, "stiffness": k, "damping": d,
                                  "neutral": q0} for c, (k, d, q0) in laws.items()]
    return tree, laws


@pytest.fixture(scope="module")
def spring_chain(tmp_path_factory):
    tree, laws = _spring_tree()
    path = tmp_path_factory.mktemp("numeric_forces") / "springs.yaml"
    write_yaml(tree, path)
    return tree, laws, dynamica.load(path)


def test_springs_and_dampers_against_pinocchio(spring_chain):
    pin = pytest.importorskip("pinocchio")
    tree, laws, model = spring_chain
    d = derivatives(model, "numeric")
    pmodel, names = tree.to_pinocchio(tree.param_values({}))
    K = np.diag([laws[c][0] for c in names])
    C = np.diag([laws[c][1] for c in names])
    q0 = np.array([laws[c][2] for c in names])
    rng = np.random.default_rng(5)
    order = [names.index(c) for c in model.coordinates]
    for _ in range(3):
        qn, qdn = tree.random_state(rng)
        pq, pv = np.array([qn[c] for c in names]), np.array([qdn[c] for c in names])
        tau = -K @ (pq - q0) - C @ pv
        data = pmodel.createData()
        pin.computeABADerivatives(pmodel, data, pq, pv, tau)
        Minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
        Pq, Pv = data.ddq_dq - Minv @ K, data.ddq_dv - Minv @ C
        q = np.array([qn[c] for c in model.coordinates])
        qd = np.array([qdn[c] for c in model.coordinates])
        qdd, Jq, Jv = d.qdd_jacobian(q, qd)
        assert scaled_err(qdd, data.ddq[order]) < 1e-10
        assert scaled_err(Jq, Pq[np.ix_(order, order)]) < 1e-9
        assert scaled_err(Jv, Pv[np.ix_(order, order)]) < 1e-9


def _nonlinear_tree():
    tree, _ = _spring_tree(seed=317, nb=6)
    c = tree.coordinates
    tree.model_dict["forces"] += [
        {"type": "generalized_force", "coordinate": c[0], "value": f"-0.4*tanh(der({c[0]})/0.05)"},
        {"type": "generalized_force", "coordinate": c[2], "value": f"3*sin({c[2]} - {c[4]})"},
        {"type": "generalized_force", "coordinate": c[4], "value": f"-3*sin({c[2]} - {c[4]})"},
        {"type": "generalized_force", "coordinate": c[1],
         "value": f"-0.7*der({c[1]})*abs(der({c[1]})) + {c[3]}*der({c[5]})"},
    ]
    return tree


def _compare(model, rng, states=2, t=0.2, peer=True):
    """numeric against central differences of model.qdd and (peer) the variant recursive_loops."""
    dn = derivatives(model, "numeric")
    dr = derivatives(model, "recursive_loops") if peer else None
    n = model.n
    for _ in range(states):
        q, qd, x = rng.uniform(-0.5, 0.5, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        qdd, Jq, Jv = dn.qdd_jacobian(q, qd, t)
        if dr is not None:
            for a, b in zip(dn.residual_jacobian(q, qd, x, t), dr.residual_jacobian(q, qd, x, t)):
                assert scaled_err(a, b) < 1e-10
            for a, b in zip((qdd, Jq, Jv), dr.qdd_jacobian(q, qd, t)):
                assert scaled_err(a, b) < 1e-10
        assert scaled_err(qdd, model.qdd(q, qd, t)) < 1e-12
        assert scaled_err(Jq, central(lambda y: model.qdd(y, qd, t), q)) < RTOL_FD
        assert scaled_err(Jv, central(lambda y: model.qdd(q, y, t), qd)) < RTOL_FD


def test_nonlinear_coupled_laws_against_central_differences_and_recursive_loops(tmp_path):
    tree = _nonlinear_tree()
    path = tmp_path / "laws.yaml"
    write_yaml(tree, path)
    model = dynamica.load(path)
    _compare(model, np.random.default_rng(23))
    # the coupling sin(q_a - q_b) must appear off the diagonal (a test that can fail on a diagonal-only J)
    Jq = derivatives(model, "numeric").residual_jacobian(np.zeros(model.n), np.zeros(model.n), np.zeros(model.n))[1]
    c = tree.coordinates
    a, b = model.coordinates.index(c[2]), model.coordinates.index(c[4])
    assert abs(Jq[a, b] - 3.0) < 1e-12           # dr_a/dq_b = -dQ_a/dq_b = -3 cos(0) * (-1)


MJCF_CHAIN = """
<mujoco><compiler angle="degree"/><worldbody>
  <body name="l1"><joint name="j1" axis="0 1 0" damping="0.3" stiffness="4" springref="10" range="-80 80"
      frictionloss="0.2"/>
    <geom type="capsule" fromto="0 0 0 0.4 0 0" size="0.02" mass="1"/>
    <body name="l2" pos="0.4 0 0"><joint name="j2" axis="0 0 1" damping="0.1" stiffness="2"/>
      <geom type="capsule" fromto="0 0 0 0.3 0 0" size="0.02" mass="0.6"/>
      <body name="l3" pos="0.3 0 0"><joint name="s3" type="slide" axis="1 0 0" damping="1" frictionloss="0.5"/>
        <geom type="sphere" size="0.05" mass="0.3"/></body></body></body>
</worldbody></mujoco>"""


def test_mjcf_damping_stiffness_frictionloss(tmp_path):
    path = tmp_path / "chain.xml"
    path.write_text(MJCF_CHAIN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        model = dynamica.load(path, frictionloss=True, contacts=False, torques="off")
    _compare(model, np.random.default_rng(29))


def test_force_kernel_only_when_a_generalized_force_moves(tmp_path, spring_chain):
    from dynamica.generator.pipeline import generate_derivatives
    tree, _ = _spring_tree()
    tree.model_dict.pop("forces")
    write_yaml(tree, tmp_path / "plain.yaml")
    plain = {k.name for k in generate_derivatives(tmp_path / "plain.yaml", variant="numeric").module_ir.kernels}
    tree, _ = _spring_tree()
    write_yaml(tree, tmp_path / "springs.yaml")
    springs = {k.name for k in generate_derivatives(tmp_path / "springs.yaml", variant="numeric").module_ir.kernels}
    assert plain == {"numeric_terms"}
    assert springs == {"numeric_terms", "force_jacobian"}


def _body_force_tree():
    tree = random_tree("mixed", 5, (1, 2, 3), np.random.default_rng(331), name="wrenches")
    b = [body["name"] for body in tree.model_dict["bodies"]]
    c = tree.coordinates
    tree.model_dict["forces"] = [
        {"type": "spring_damper", "body_a": b[2], "point_a": [0.1, 0, 0], "body_b": b[4], "point_b": [0, 0.05, 0.1],
         "stiffness": 40.0, "damping": 2.0, "free_length": 0.2},
        {"type": "spring_damper", "body_a": "ground", "point_a": [0.3, 0.2, 0.5], "body_b": b[3],
         "point_b": [0, 0, 0.1], "stiffness": 25.0, "damping": 1.5, "free_length": 0.1},
        {"type": "bushing", "body_a": b[1], "body_b": b[4], "stiffness": [30, 20, 10], "damping": [1, 2, 3],
         "rotational_stiffness": [2, 3, 4], "rotational_damping": [0.1, 0.2, 0.3]},
        {"type": "body_force", "body": b[3], "point": [0, 0.1, 0], "frame": "body",
         "force": [f"-2*der({c[1]})*{c[0]}", f"sin({c[3]})", 0], "torque": [0, 0, f"-0.5*der({c[-1]})"]},
        {"type": "body_force", "body": b[4], "point": [0.05, 0, 0], "frame": "ground",
         "force": [0, 0, f"-3*tanh(der({c[2]}))"], "torque": [0.2, 0, 0]},
    ]
    return tree


@pytest.fixture(scope="module")
def wrench_tree(tmp_path_factory):
    path = tmp_path_factory.mktemp("numeric_wrenches") / "wrenches.yaml"
    write_yaml(_body_force_tree(), path)
    return path


def test_body_forces_depending_on_the_state(wrench_tree):
    from dynamica.generator.pipeline import generate_derivatives
    kernels = {k.name for k in generate_derivatives(wrench_tree, variant="numeric").module_ir.kernels}
    assert kernels == {"numeric_terms", "wrench_jacobian"}
    _compare(dynamica.load(wrench_tree), np.random.default_rng(37), states=3, peer=False)


@pytest.mark.slow
def test_body_forces_equal_to_recursive_loops(wrench_tree):
    """(slow: the recursive_loops build of this tree takes about 15 s)"""
    _compare(dynamica.load(wrench_tree), np.random.default_rng(43), states=2)


def test_forces_demo_equal_to_recursive_loops(bundled):
    _compare(bundled("forces_demo"), np.random.default_rng(41))
