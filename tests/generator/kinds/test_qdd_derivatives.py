"""dq''/d[q, q'], dq''/du and M^-1 from one factorisation (Derivatives.qdd_derivatives):

  * URDF robots with their joint torques as inputs (UR5, Panda) against Pinocchio's
    computeABADerivatives (ddq_dq, ddq_dv and Minv = ddq_dtau) at random states, 1e-10 scaled:
    both are analytical, measured agreement 1e-13; the URDF's damping d and friction f tanh(v/v_s)
    are joint torques that depend on v, added to ddq_dv as Minv (-d - f/v_s sech^2(v/v_s)) in
    closed form;
  * dq''/dtau of the joint torque inputs equals M^-1's columns exactly (to 1e-12), and
    dq''/du of a model with inputs entering nonlinearly equals central differences of
    model.qdd (h = 1e-6, 1e-7 scaled: the truncation error h^2 q''' ~ 1e-12 and round-off
    1e-16 / h ~ 1e-10), in every variant (recursive: the L^T D L factors; unrolled and tape: LU).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import dynamica
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.kinds.derivatives import derivatives

from oracles.pin_urdf import FRICTION_VELOCITY, coordinate_map, pin_model, pin_state, robot_file, to_pinocchio

ROBOTS = {"ur5": "robots/ur_description/urdf/ur5_robot.urdf", "panda": "robots/panda_description/urdf/panda.urdf"}


def scaled_err(a, b):
    return float(np.max(np.abs(a - b)) / max(1.0, np.max(np.abs(b))))


def _robot(name):
    pytest.importorskip("pinocchio")
    pytest.importorskip("yourdfpy")
    path = robot_file(ROBOTS[name])
    if path is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)            # the Panda's mimic finger
        return path, dynamica.load(path, limits=False)              # (Pinocchio models no stops)


@pytest.mark.parametrize("name", list(ROBOTS))
def test_qdd_derivatives_against_pinocchio(name):
    import pinocchio as pin
    path, model = _robot(name)
    pmodel = pin_model(path)
    data = pmodel.createData()
    cmap = coordinate_map(pmodel, list(model.coordinates))
    order = np.zeros(model.n, dtype=int)              # dynamica's coordinate k is Pinocchio's v index order[k]
    for _, iv, _, idx in cmap:
        order[idx] = np.arange(iv, iv + len(idx))
    d = derivatives(model)
    index = {c: k for k, c in enumerate(model.coordinates)}
    cols = [index[u[len("tau_"):]] for u in model.inputs]
    rng = np.random.default_rng(4)
    for _ in range(4):
        q, qd = rng.uniform(-1.2, 1.2, model.n), rng.uniform(-1.5, 1.5, model.n)
        tau = rng.uniform(-5, 5, model.n)
        u = tau[cols]
        out = d.qdd_derivatives(q, qd, u)
        qp, vp = pin_state(pmodel, cmap, q, qd)
        damping, friction = np.asarray(pmodel.damping), np.asarray(pmodel.friction)
        tau_p = to_pinocchio(cmap, tau, pmodel.nv) - damping * vp - friction * np.tanh(vp / FRICTION_VELOCITY)
        pin.computeABADerivatives(pmodel, data, qp, vp, tau_p)
        Minv = np.triu(data.Minv) + np.triu(data.Minv, 1).T
        dtau_dv = -damping - friction / FRICTION_VELOCITY / np.cosh(vp / FRICTION_VELOCITY) ** 2
        ddq_dv = data.ddq_dv + Minv * dtau_dv
        ix = np.ix_(order, order)
        assert scaled_err(out["qdd"], pin.aba(pmodel, pmodel.createData(), qp, vp, tau_p)[order]) < 1e-10
        assert scaled_err(out["qdd_q"], data.ddq_dq[ix]) < 1e-10
        assert scaled_err(out["qdd_qd"], ddq_dv[ix]) < 1e-10
        assert scaled_err(out["Minv"], Minv[ix]) < 1e-10
        assert np.array_equal(out["qdd_tau"], out["Minv"])
        assert scaled_err(out["qdd_u"], out["Minv"][:, cols]) < 1e-12          # tau_j on coordinate j: M^-1 e_j
        by_name = d.qdd_derivatives(q, qd, dict(zip(model.inputs, u)))
        assert np.array_equal(by_name["qdd_u"], out["qdd_u"])


NONLINEAR = """
name: driven_pair
parameters: {m1: 1.0, m2: 0.5, l: 0.4, g: 9.81, k: 2.0}
gravity: [0, 0, -g]
inputs: [u, v]
bodies:
  - {name: a, parent: ground, joint: [{rotate: y, q: th}], mass: m1, com: [l, 0, 0], inertia: [0.01, 0.02, 0.02]}
  - {name: b, parent: a, joint: [{translate: [0.8, 0, 0]}, {translate: x, q: s}], mass: m2, com: [0, 0, 0],
     inertia: [0.001, 0.001, 0.001]}
forces:
  - {type: generalized_force, coordinate: th, value: "k*u**3 + sin(v)*th"}
  - {type: generalized_force, coordinate: s, value: "u*v - 0.3*der(s)"}
"""


@pytest.mark.parametrize("variant", ["recursive", "unrolled", "tape"])
def test_input_jacobian_against_central_differences(tmp_path, variant):
    path = tmp_path / "driven_pair.yaml"
    path.write_text(NONLINEAR)
    model = dynamica.load(path)
    d = derivatives(model, variant=variant)
    q, qd, u = np.array([0.4, 0.1]), np.array([-0.7, 0.3]), np.array([0.8, -1.1])
    out = d.qdd_derivatives(q, qd, u)
    h = 1e-6
    fd = np.array([(model.qdd(q, qd, inputs=dict(zip(model.inputs, u + h * e)))
                    - model.qdd(q, qd, inputs=dict(zip(model.inputs, u - h * e)))) / (2 * h)
                   for e in np.eye(2)]).T
    assert scaled_err(out["qdd_u"], fd) < 1e-7
    assert np.abs(out["qdd_u"]).max() > 0.1
    M = model.mass_matrix(q)
    assert scaled_err(out["Minv"] @ M, np.eye(2)) < 1e-12
    qdd, Jq, Jqd = d.qdd_jacobian(q, qd, u=u)
    assert scaled_err(out["qdd"], qdd) < 1e-14 and scaled_err(out["qdd_q"], Jq) < 1e-12
    assert scaled_err(out["qdd_qd"], Jqd) < 1e-12
    with pytest.raises(ValueError, match="'w' not inputs of the model"):
        d.qdd_derivatives(q, qd, {"w": 1.0})
