"""Force elements beyond the first model format: joint limits with the peer package's contact
law, spring-dampers with a nonlinear law, and 6-DOF bushings.

Oracles: the sympy.physics.mechanics (Kane) model of tests/oracles/spm.py, which computes
the bushing deflection rates by differentiating the components in time and the relative
angular velocity with sympy's frames (the generator uses closed-form transfer formulas);
and energy: with the dampers off the total energy (kinetic, gravity, the springs', the
limits' and the bushing's potentials, all computed here from the oracle's frames) is
conserved; with them on, dE/dt equals the power of the dampers.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import sympy as sp
import sympy.physics.mechanics as me
from scipy.integrate import cumulative_simpson

import dynamica
from dynamica.errors import ModelError

try:
    from tests.oracles.spm import build_kane, kane_qdd_function
except ImportError:
    from oracles.spm import build_kane, kane_qdd_function

from conftest import write_model
from helpers import max_rel_err as _rel

MODEL = {
    "name": "forces_v2",
    "parameters": {"g": 9.81, "kl": 3.0, "mul": 0.4, "al": 25.0, "k1": 40.0, "k3": 400.0, "c1": 0.7,
                   "kb": [30.0, 20.0, 50.0], "cb": [0.3, 0.2, 0.5], "kr": 6.0, "cr": 0.05},
    "gravity": [0, 0, "-g"],
    "bodies": [
        {"name": "arm", "parent": "ground", "joint": {"type": "revolute", "axis": "y", "q": "a"},
         "mass": 1.5, "com": [0.3, 0, 0], "inertia": [0.01, 0.05, 0.05, 0.001, 0, 0.002]},
        {"name": "slider", "parent": "arm", "joint": [{"translate": [0.6, 0, 0]}, {"translate": "x", "q": "s"}],
         "mass": 0.8, "com": [0, 0.02, 0], "inertia": [0.002, 0.003, 0.003]},
        {"name": "pod", "parent": "slider",
         "joint": [{"translate": [0.1, 0, -0.2]}, {"translate": "z", "q": "z"}, {"rotate": "x", "q": "r1"},
                   {"rotate": "y", "q": "r2"}, {"rotate": "z", "q": "r3"}],
         "mass": 0.5, "com": [0.01, 0, -0.05], "inertia": [0.004, 0.005, 0.003, 0.0005, 0, 0]},
    ],
    "forces": [
        {"type": "limit", "name": "stop_a", "coordinate": "a", "lower": -0.6, "upper": 0.8,
         "stiffness": "kl", "damping": "mul", "decay": "al"},
        {"type": "limit", "coordinate": "s", "lower": -0.05, "stiffness": 2.0, "decay": 40.0},
        {"type": "spring_damper", "name": "cubic", "body_a": "ground", "point_a": [0.5, 0, 0.4],
         "body_b": "slider", "point_b": [0, 0, 0], "free_length": 0.3,
         "law": "k1*elongation + k3*elongation**3 + c1*elongation_rate"},
        {"type": "bushing", "name": "mount", "body_a": "slider", "point_a": [0.1, 0, -0.15],
         "body_b": "pod", "point_b": [0, 0, 0.05], "stiffness": "kb", "damping": "cb",
         "rotational_stiffness": ["kr", "kr", "kr"], "rotational_damping": ["cr", "cr", "cr"]},
    ],
}
DAMPERS = {"mul": 0.0, "c1": 0.0, "cb": [0.0, 0.0, 0.0], "cr": 0.0}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = write_model(tmp_path_factory.mktemp("f2"), MODEL)
    return dynamica.load(str(path))


def test_against_kane(model):
    kane = kane_qdd_function(copy.deepcopy(MODEL))
    perm = [kane.coordinates.index(c) for c in model.coordinates]
    rng = np.random.default_rng(5)
    for k in range(8):
        q, qd = rng.uniform(-0.7, 0.7, model.n), rng.uniform(-1, 1, model.n)
        params = None if k == 0 else {"kl": rng.uniform(1, 5), "al": rng.uniform(10, 30), "k3": rng.uniform(100, 500),
                                      "kb": list(rng.uniform(10, 60, 3)), "cr": rng.uniform(0, 0.1)}
        qk, qdk = np.empty(model.n), np.empty(model.n)
        qk[perm], qdk[perm] = q, qd
        ref = np.asarray(kane(qk, qdk, 0.0, params), dtype=float).ravel()[perm]
        got = model.qdd(q, qd, params=params)
        assert _rel(got, ref) <= 1e-10, (k, got, ref)


def _energy_function(mdl):
    """E(q, qd) and P_dampers(q, qd) from the oracle's frames and points, in the oracle's coordinate order."""
    d = build_kane(copy.deepcopy(mdl))
    env, N, O, qs, frames, origins = d["env"], d["N"], d["O"], d["q"], d["frames"], d["origins"]
    us = [sp.Symbol(f"u{i}") for i in range(len(qs))]
    qsym = [sp.Symbol(f"q{i}") for i in range(len(qs))]
    T = me.dynamicsymbols._t
    sub = {q.diff(T): u for q, u in zip(qs, us)}
    sub.update(dict(zip(qs, qsym)))
    def val(x):
        if isinstance(x, list) or x in env.vectors:
            return env.vec3(x, "test")
        return env.expr(x, "test")

    P = dict(mdl["parameters"])
    num = lambda e: e.xreplace({s: P[n] for n, s in env.scalars.items()}).xreplace(  # noqa: E731
        {s: P[n][i] for n, ss in env.vectors.items() for i, s in enumerate(ss)})
    KE = sum(rb.kinetic_energy(N) for rb in d["bodies"])
    g = d["gravity"]
    V = -sum(rb.mass * g.dot(rb.masscenter.pos_from(O)) for rb in d["bodies"])
    coords = list(d["coordinates"])
    Pd = 0
    for fd in mdl["forces"]:
        if fd["type"] == "limit":
            x = qs[coords.index(fd["coordinate"])]
            k, a = val(fd["stiffness"]), val(fd["decay"])
            mu = val(fd.get("damping", 0))
            if "lower" in fd:
                V += k / a * sp.exp(-a * (x - fd["lower"]))
                Pd += -mu * x.diff(T) ** 2 * sp.exp(-a * (x - fd["lower"]))
            if "upper" in fd:
                V += k / a * sp.exp(a * (x - fd["upper"]))
                Pd += -mu * x.diff(T) ** 2 * sp.exp(a * (x - fd["upper"]))
        elif fd["type"] == "spring_damper":
            pa = origins[fd["body_a"]].locatenew("pa", sum((c * e for c, e in zip(fd["point_a"], frames[fd["body_a"]])),
                                                           0 * N.x))
            pb = origins[fd["body_b"]].locatenew("pb", sum((c * e for c, e in zip(fd["point_b"], frames[fd["body_b"]])),
                                                           0 * N.x))
            r = pb.pos_from(pa)
            x = sp.sqrt(r.dot(r)) - fd["free_length"]
            V += val("k1") * x ** 2 / 2 + val("k3") * x ** 4 / 4
            Pd += -val("c1") * x.diff(T) ** 2
        elif fd["type"] == "bushing":
            A, B = frames[fd["body_a"]], frames[fd["body_b"]]
            pa = origins[fd["body_a"]].locatenew("ba", sum((c * e for c, e in zip(fd["point_a"], A)), 0 * N.x))
            pb = origins[fd["body_b"]].locatenew("bb", sum((c * e for c, e in zip(fd["point_b"], B)), 0 * N.x))
            r = pb.pos_from(pa)
            dvec = [r.dot(e) for e in (A.x, A.y, A.z)]
            kb, cb = val(fd["stiffness"]), val(fd["damping"])
            V += sum(kb[j] * dvec[j] ** 2 / 2 for j in range(3))
            Pd += -sum(cb[j] * dvec[j].diff(T) ** 2 for j in range(3))
            kr, cr = val(fd["rotational_stiffness"])[0], val(fd["rotational_damping"])[0]
            R = A.dcm(B)
            V += kr * (1 - (R.trace() - 1) / 2)          # isotropic: k (1 - cos phi)
            w = B.ang_vel_in(A)
            Pd += -cr * w.dot(w)
    E = me.msubs(num(KE + V), sub)
    Pd = me.msubs(num(Pd), sub)
    fE = sp.lambdify([qsym, us], E, "numpy")
    fP = sp.lambdify([qsym, us], Pd, "numpy")
    return coords, fE, fP


@pytest.mark.slow
def test_energy_balance(tmp_path):
    """No dampers: E conserved (relative drift <= 1e-8 over 2 s). Dampers on: E(t) - E(0) equals
    the integral of the dampers' power (Simpson's rule on a 1 ms grid; relative 1e-7)."""
    for damped in (False, True):
        mdl = copy.deepcopy(MODEL)
        if not damped:
            mdl["parameters"].update(DAMPERS)
        m = dynamica.load(str(write_model(tmp_path, mdl, name=f"e{int(damped)}.yaml")))
        coords, fE, fP = _energy_function(mdl)
        perm = [m.coordinates.index(c) for c in coords]
        r = dynamica.simulate(m, t_end=2.0, output_step=0.001, method="DOP853", rtol=1e-12, atol=1e-12,
                              q0=[0.5, 0.0, 0.02, 0.1, -0.1, 0.2], qd0=[1.0, 0.5, -0.3, 1.0, 0.5, -1.0])
        E = np.array([fE(q[perm], qd[perm]) for q, qd in zip(r.q, r.qd)])
        P = np.array([fP(q[perm], qd[perm]) for q, qd in zip(r.q, r.qd)])
        scale = np.abs(E).max()
        if not damped:
            assert np.abs(E - E[0]).max() / scale <= 1e-8
        else:
            work = cumulative_simpson(P, x=r.t, initial=0.0)
            assert (E[-1] - E[0]) < -1e-3 * scale                       # it does dissipate
            assert np.abs((E - E[0]) - work).max() / scale <= 1e-7


def test_model_errors(tmp_path):
    bad = copy.deepcopy(MODEL)
    bad["forces"] = [{"type": "limit", "coordinate": "a", "stiffness": 1, "decay": 2},
                     {"type": "spring_damper", "body_a": "ground", "point_a": [0, 0, 0], "body_b": "arm",
                      "point_b": [0, 0, 0], "free_length": 0.1, "stiffness": 1, "law": "elongation"},
                     {"type": "spring_damper", "body_a": "ground", "point_a": [0, 0, 0], "body_b": "arm",
                      "point_b": [0, 0, 0], "free_length": 0.1, "law": "elongaton * 2"},
                     {"type": "bushing", "body_a": "arm", "body_b": "pod", "stiffness": [1, 2]}]
    with pytest.raises(ModelError) as e:
        dynamica.load(str(write_model(tmp_path, bad)))
    text = str(e.value)
    assert "forces[0]" in text and "needs `lower`, `upper` or both" in text
    assert "forces[1]" in text and "not both" in text
    assert "forces[2].law" in text and "did you mean `elongation`" in text
    assert "forces[3].stiffness" in text


def test_numeric_reference_knows_the_new_forces(model):
    """`dynamica check` (numeric reference) on a model with limits, a law spring and a bushing."""
    from dynamica.runtime.reference.check import check_against_reference
    rep = check_against_reference(model, samples=6, seed=2)
    assert rep.ok(1e-10), rep.text()
