"""Joint kinematics: transforms composed through frames (generator) equal the definitions
(1.2)-(1.5) by differentiation of rho_i(q, t), G_i(q, t) (the numeric reference)."""

import numpy as np
import pytest
import sympy as sp

from dynamica.generator.mechanics.kinematics import derive_kinematics, numeric_values
from dynamica.generator.mechanics.topology import build_topology
from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.model import load_model
from dynamica.runtime.reference.numeric import NumericReference

from conftest import MODELS, write_model

MIXED = {
    "name": "mixed_joints",
    "parameters": {"a": 0.3, "w": 1.7, "ax": [1.0, 2.0, -0.5]},
    "bodies": [
        {"name": "b1", "parent": "ground", "mass": 1.0, "com": [0.1, 0.2, 0.3], "inertia": [1, 1, 1],
         "joint": [{"translate": [0.1, "a", 0.0]}, {"rotate": "ax", "q": "q1"}, {"translate": "z", "q": "s1"},
                   {"rotate": [0, 1, 1], "by": "w*t + 0.2*sin(3*t)"}, {"translate": "-x", "by": "a*t**2"},
                   {"rotate": "y", "q": "q2"}, {"translate": [0.2, 0.0, -0.1]}]},
        {"name": "b2", "parent": "b1", "mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1],
         "joint": {"type": "free", "q": ["x", "y", "z", "r1", "r2", "r3"], "offset": [0, 0, 0.5]}},
        {"name": "b3", "parent": "b2", "mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1],
         "joint": {"type": "spherical", "q": ["s_a", "s_b", "s_c"]}},
    ],
}


@pytest.mark.parametrize("source", ["mixed", "governor", "puma560", "driven", "spherical_chain"])
def test_joint_quantities_match_definitions(tmp_path, source):
    path = write_model(tmp_path, MIXED) if source == "mixed" else MODELS / f"{source}.yaml"
    spec = load_model(path)
    topo = build_topology(spec)
    kin = derive_kinematics(spec, topo)
    ref = NumericReference(spec)
    rng = np.random.default_rng(7)
    for trial in range(3):
        t = rng.uniform(0, 2)
        p = ref.defaults * rng.uniform(0.8, 1.2, ref.defaults.shape)
        subs = {ex.T: t}
        for k, (name, index) in enumerate(ref.slots):
            subs[ex.param_symbol(name, index)] = p[k]
        for jk in kin.joints[1:]:
            for q, qd in zip(jk.q, jk.qd):
                subs[q], subs[qd] = rng.uniform(-1, 1), rng.uniform(-1, 1)
        vals = numeric_values(kin.program, subs)
        num = lambda e: float(sp.sympify(e).xreplace(vals))  # noqa: E731
        for i in range(1, topo.n_bodies + 1):
            jk = kin.joints[i]
            qi = np.array([float(subs[q]) for q in jk.q])
            qdi = np.array([float(subs[q]) for q in jk.qd])
            rho, G, A, vh, wh = ref.joint_fns[i](qi, qdi, t, p)
            np.testing.assert_allclose([num(x) for x in jk.rho], np.ravel(rho), atol=1e-12)
            np.testing.assert_allclose([[num(jk.G[r, c]) for c in range(3)] for r in range(3)], G, atol=1e-12)
            if jk.A:
                A_gen = np.array([[num(col[r]) for col in jk.A] for r in range(6)])
                np.testing.assert_allclose(A_gen, np.reshape(A, A_gen.shape), atol=1e-12)
            np.testing.assert_allclose([num(x) for x in jk.vr_hat], np.ravel(vh), atol=1e-12)
            np.testing.assert_allclose([num(x) for x in jk.wr_hat], np.ravel(wh), atol=1e-11)


def test_inertia_about_origin(tmp_path):
    """Theta_O = Theta_c + m (|r|^2 E - r r^T) (parallel axes, tensor components)."""
    d = {"name": "one", "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "x", "q": "a"}],
                                     "mass": 2.0, "com": [0.1, -0.2, 0.3], "inertia": [2, 2, 3, 0.1, 0.2, 0.3]}]}
    spec = load_model(write_model(tmp_path, d))
    kin = derive_kinematics(spec, build_topology(spec))
    vals = numeric_values(kin.program, {})
    th = np.array([[float(sp.sympify(kin.inertia[1].theta[r, c]).xreplace(vals)) for c in range(3)] for r in range(3)])
    r = np.array([0.1, -0.2, 0.3])
    Ic = np.array([[2, 0.1, 0.3], [0.1, 2, 0.2], [0.3, 0.2, 3]])
    np.testing.assert_allclose(th, Ic + 2.0 * (r @ r * np.eye(3) - np.outer(r, r)), atol=1e-14)
