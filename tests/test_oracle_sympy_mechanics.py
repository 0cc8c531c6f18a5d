"""dynamica vs an independent sympy.physics.mechanics (KanesMethod) oracle.

Part 1 (no dynamica needed): self-tests of the oracle against hand-derived closed forms, so a
failure in part 2 can be localised to dynamica or to the oracle.
Part 2: small models (written here) and the bundled models, compiled by dynamica and compared
with the oracle at random states / parameters, |diff| / max(1, |oracle|) <= 1e-10.
"""

from __future__ import annotations

import copy
import math
import pathlib

import numpy as np
import pytest
import yaml

from helpers import max_rel_err as rel_err
from helpers import model_free_body, model_universal_spherical
from oracles.spm import OracleModelError, kane_qdd_function

REPO = pathlib.Path(__file__).resolve().parents[1]
RTOL = 1e-10


# =====================================================================================
# Part 1: oracle self-tests (closed forms)
# =====================================================================================

def _pendulum_model(inertia=(0, 0, 0)):
    return {
        "name": "pend",
        "parameters": {"m": 1.3, "c": 0.7, "g": 9.81},
        "gravity": [0, 0, "-g"],
        "bodies": [{
            "name": "link", "parent": "ground",
            "joint": [{"rotate": "x", "q": "phi"}],
            "mass": "m", "com": [0, 0, "-c"], "inertia": list(inertia),
        }],
    }


def test_oracle_simple_pendulum():
    f = kane_qdd_function(_pendulum_model(inertia=["0.2", 0.1, 0.05]))
    assert f.coordinates == ("phi",)
    rng = np.random.default_rng(1)
    for _ in range(5):
        phi, phid = rng.uniform(-2, 2, 2)
        m, c, g = rng.uniform(0.5, 2, 3)
        expect = -m * g * c * math.sin(phi) / (m * c**2 + 0.2)
        got = f([phi], [phid], 0.0, {"m": m, "c": c, "g": g})
        assert rel_err(got, [expect]) < 1e-12


def test_oracle_rotation_sign():
    """rotate: x by +q turns body y toward ground z: a point at body (0,0,-l) is at ground
    (0, l sin q, -l cos q).  A ground-y force F there gives m l^2 q'' = F l cos q."""
    model = {
        "name": "sign",
        "parameters": {"m": 2.0, "l": 0.5, "F": 3.0},
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "x", "q": "q"}],
                    "mass": "m", "com": [0, 0, "-l"], "inertia": [0, 0, 0]}],
        "forces": [{"type": "body_force", "body": "b", "force": [0, "F", 0]}],
    }
    f = kane_qdd_function(model)
    for q in (0.3, -1.1, 2.0):
        expect = 3.0 * math.cos(q) / (2.0 * 0.5)
        assert rel_err(f([q], [0.7], 0.0), [expect]) < 1e-12
    # same with the axis given as a vector and the point given explicitly; -x flips the sign
    model["bodies"][0]["joint"] = [{"rotate": [-2, 0, 0], "q": "q"}]
    model["forces"][0]["point"] = [0, 0, "-l"]
    f = kane_qdd_function(model)
    for q in (0.3, -1.1):
        expect = -3.0 * math.cos(q) / (2.0 * 0.5)
        assert rel_err(f([q], [0.7], 0.0), [expect]) < 1e-12


def test_oracle_double_pendulum_2d():
    """Point masses, relative angle phi2; the classical closed form in absolute angles."""
    model = {
        "name": "dp2",
        "parameters": {"m1": 1.0, "m2": 0.7, "l1": 1.1, "l2": 0.8, "g": 9.81},
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "a", "parent": "ground", "joint": [{"rotate": "x", "q": "phi1"}],
             "mass": "m1", "com": [0, 0, "-l1"], "inertia": [0, 0, 0]},
            {"name": "b", "parent": "a",
             "joint": [{"translate": "z", "by": "-l1"}, {"rotate": "x", "q": "phi2"}],
             "mass": "m2", "com": [0, 0, "-l2"], "inertia": [0, 0, 0]},
        ],
    }
    f = kane_qdd_function(model)
    assert f.coordinates == ("phi1", "phi2")
    rng = np.random.default_rng(2)
    for _ in range(5):
        p1, p2, w1, w2 = rng.uniform(-2, 2, 4)
        m1, m2, l1, l2 = rng.uniform(0.5, 2, 4)
        g = 9.81
        t1, t2, d1, d2 = p1, p1 + p2, w1, w1 + w2
        den = 2 * m1 + m2 - m2 * math.cos(2 * t1 - 2 * t2)
        a1 = (-g * (2 * m1 + m2) * math.sin(t1) - m2 * g * math.sin(t1 - 2 * t2)
              - 2 * math.sin(t1 - t2) * m2 * (d2**2 * l2 + d1**2 * l1 * math.cos(t1 - t2))) / (l1 * den)
        a2 = (2 * math.sin(t1 - t2) * (d1**2 * l1 * (m1 + m2) + g * (m1 + m2) * math.cos(t1)
              + d2**2 * l2 * m2 * math.cos(t1 - t2))) / (l2 * den)
        got = f([p1, p2], [w1, w2], 0.0, {"m1": m1, "m2": m2, "l1": l1, "l2": l2})
        assert rel_err(got, [a1, a2 - a1]) < 1e-10


def test_oracle_inertia_component_order():
    """Spinning about a fixed unit axis n under unit generalized force: q'' = 1 / (n.I.n),
    n.I.n for n = (1,1,0)/sqrt2 is (Ixx+Iyy)/2 + Ixy, etc.  Also the mapping form."""
    I = [2.0, 3.0, 5.0, 0.3, -0.4, 0.7]       # Ixx Iyy Izz Ixy Iyz Ixz
    for axis, nIn in (([1, 1, 0], (I[0] + I[1]) / 2 + I[3]),
                      ([0, 1, 1], (I[1] + I[2]) / 2 + I[4]),
                      ([1, 0, 1], (I[0] + I[2]) / 2 + I[5]),
                      ("y", I[1])):
        for inertia in (I, dict(zip(["Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz"], I))):
            model = {
                "name": "spin",
                "bodies": [{"name": "b", "parent": "ground",
                            "joint": [{"rotate": axis, "q": "a"}],
                            "mass": 1.0, "com": [0, 0, 0], "inertia": inertia}],
                "forces": [{"type": "generalized_force", "coordinate": "a", "value": 1}],
            }
            f = kane_qdd_function(model)
            assert rel_err(f([0.4], [1.3], 0.0), [1.0 / nIn]) < 1e-12, axis


def test_oracle_spring_damper_and_joint_spring():
    model = {
        "name": "sd",
        "parameters": {"m": 2.0, "k": 30.0, "d": 0.5, "L0": 0.4, "k2": 3.0, "d2": 0.2},
        "bodies": [{"name": "b", "parent": "ground",
                    "joint": {"type": "prismatic", "axis": "z", "q": "s"},
                    "mass": "m", "inertia": [0, 0, 0]}],
        "forces": [
            {"type": "spring_damper", "body_a": "ground", "point_a": [0, 0, 0],
             "body_b": "b", "point_b": [0, 0, 0], "stiffness": "k", "damping": "d",
             "free_length": "L0"},
            {"type": "joint_spring_damper", "coordinate": "s", "stiffness": "k2",
             "damping": "d2", "neutral": 0.1},
        ],
    }
    f = kane_qdd_function(model)
    for s, sd in ((0.7, 0.3), (0.2, -1.0), (1.5, 2.0)):
        expect = (-(30 * (s - 0.4) + 0.5 * sd) - 3 * (s - 0.1) - 0.2 * sd) / 2.0
        assert rel_err(f([s], [sd], 0.0), [expect]) < 1e-12


def test_oracle_rheonomic():
    """Bead on a rod turning at Omega: r'' = Omega^2 r.  Pendulum with a vertically
    oscillating pivot z = A sin(w t): phi'' = -(g + z'')/l sin(phi)."""
    bead = {
        "name": "bead", "parameters": {"Omega": 1.7},
        "bodies": [{"name": "b", "parent": "ground",
                    "joint": [{"rotate": "z", "by": "Omega*t"}, {"translate": "x", "q": "r"}],
                    "mass": 1.0, "inertia": [0.1, 0.2, 0.3]}],
    }
    f = kane_qdd_function(bead)
    assert rel_err(f([0.6], [0.2], 0.37), [1.7**2 * 0.6]) < 1e-12
    kap = {
        "name": "kapitza", "parameters": {"A": 0.1, "w": 7.0, "g": 9.81, "l": 0.5},
        "gravity": [0, 0, "-g"],
        "bodies": [{"name": "b", "parent": "ground",
                    "joint": [{"translate": "z", "by": "A*sin(w*t)"}, {"rotate": "x", "q": "phi"}],
                    "mass": 1.0, "com": [0, 0, "-l"], "inertia": [0, 0, 0]}],
    }
    f = kane_qdd_function(kap)
    for t, phi in ((0.1, 0.4), (0.9, -2.0)):
        zdd = -0.1 * 49.0 * math.sin(7.0 * t)
        assert rel_err(f([phi], [0.3], t), [-(9.81 + zdd) / 0.5 * math.sin(phi)]) < 1e-12


def test_oracle_body_force_frames():
    """Turntable about z; force F along x at body point (0, r, 0): in the body frame the
    moment about z is -r F, in the ground frame -r cos(q) F.  Plus a z torque tau."""
    for frame, moment in (("body", lambda q: -0.5 * 2.0),
                          ("ground", lambda q: -0.5 * math.cos(q) * 2.0)):
        model = {
            "name": "tt", "parameters": {"F": 2.0, "tau": 0.3, "v": [0.0, 0.5, 0.0]},
            "bodies": [{"name": "b", "parent": "ground",
                        "joint": {"type": "revolute", "axis": "z", "q": "q"},
                        "mass": 1.0, "inertia": [1, 1, 4.0]}],
            "forces": [{"type": "body_force", "body": "b", "point": "v", "force": ["F", 0, 0],
                        "torque": [0, 0, "tau"], "frame": frame}],
        }
        f = kane_qdd_function(model)
        for q in (0.2, 1.3):
            assert rel_err(f([q], [0.5], 0.0), [(moment(q) + 0.3) / 4.0]) < 1e-12, frame


def test_oracle_expressions():
    model = _pendulum_model()
    model["parameters"]["rc"] = [0.0, 0.0, -0.7]
    model["bodies"][0]["com"] = "rc"
    model["forces"] = [{"type": "generalized_force", "coordinate": "phi",
                        "value": "-0.5*der(phi) + max(abs(rc[2]), 0)*sqrt(t) + pi*heaviside(t)"}]
    f = kane_qdd_function(model)
    phi, phid, t = 0.3, 0.8, 0.64
    expect = (-1.3 * 9.81 * 0.7 * math.sin(phi) - 0.5 * phid + 0.7 * 0.8 + math.pi) / (1.3 * 0.49)
    assert rel_err(f([phi], [phid], t), [expect]) < 1e-12
    for bad in ("__import__('os')", "foo(phi)", "unknown*2", "rc.real", "der(t)"):
        model["forces"][0]["value"] = bad
        with pytest.raises(OracleModelError):
            kane_qdd_function(model)


def test_oracle_energy_conservation_3d():
    """Universal + spherical joints, products of inertia, gravity only: the oracle's qdd
    must make d(T + V)/dt vanish (checks the 3-D rotational terms end to end)."""
    import sympy as sp
    from sympy.physics import mechanics as me

    model = model_universal_spherical()
    del model["forces"]
    f = kane_qdd_function(model)
    d = f.symbolic
    env, N, O, t = d["env"], d["N"], d["O"], me.dynamicsymbols._t
    E = sum(me.kinetic_energy(N, rb) - rb.mass * d["gravity"].dot(rb.masscenter.pos_from(O))
            for rb in d["bodies"])
    qs = d["q"]
    n = len(qs)
    qv, qdv, qddv = (sp.symbols(f"{c}0:{n}") for c in "abc")
    Edot = E.diff(t)
    Edot = me.msubs(Edot, dict(zip([x.diff(t, 2) for x in qs], qddv)))
    Edot = me.msubs(Edot, dict(zip([x.diff(t) for x in qs], qdv)))
    Edot = me.msubs(Edot, dict(zip(qs, qv)))
    psyms = [s for nm in f.parameters
             for s in (env.vectors[nm] if nm in env.vectors else [env.scalars[nm]])]
    fn = sp.lambdify([qv, qdv, qddv, psyms], Edot, "numpy")
    pv = [x for v in f.parameters.values() for x in (v if isinstance(v, tuple) else (v,))]
    rng = np.random.default_rng(3)
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
        qdd = f(q, qd, 0.0)
        scale = float(np.sum(np.abs(qdd)) + np.sum(np.abs(qd)))
        assert abs(fn(q, qd, qdd, pv)) < 1e-11 * max(1.0, scale)
    # a wrong qdd must be detected (the check is not vacuous)
    assert abs(fn(q, qd, qdd + 1e-3, pv)) > 1e-8


# =====================================================================================
# Part 2: dynamica vs the oracle
# =====================================================================================

def model_3d_double_pendulum():
    return {
        "name": "dp3d",
        "description": "two rods in 3-D, general axes, full inertia tensors",
        "parameters": {
            "m1": 1.2, "m2": 0.8, "l": 1.0, "g": 9.81,
            "rc": [0.02, -0.03, -0.5],
            "I2": {"value": [0.07, 0.06, 0.02, 0.004, -0.002, 0.003], "unit": "kg m^2"},
        },
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "link1", "parent": "ground",
             "joint": [{"translate": [0, 0, 0]},
                       {"rotate": "x", "q": "phi1"},
                       {"rotate": "-y", "q": "theta1"}],
             "mass": "m1", "com": "rc",
             "inertia": ["m1*l**2/12", "m1*l**2/12*1.05", "m1*l**2/12*0.2", 0.001, -0.0005,
                         0.0007]},
            {"name": "link2", "parent": "link1",
             "joint": [{"translate": "z", "by": "-l"},
                       {"rotate": [1, 1, 0.5], "q": "phi2"}],
             "mass": "m2", "com": [0.01, "rc[0]", "-l/2"], "inertia": "I2"},
        ],
    }


def model_prismatic_all_forces():
    return {
        "name": "cart_forces",
        "parameters": {
            "mc": 2.0, "mp": 0.6, "l": 0.8, "g": 9.81, "k1": 20.0, "d1": 0.4, "s0": 0.1,
            "c": 0.3, "F0": 1.5, "w": 2.3, "T0": 0.2, "ks": 15.0, "ds": 0.7, "L0": 0.5,
            "pa": [0.3, 0.2, 0.4],
        },
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "cart", "parent": "ground",
             "joint": {"type": "prismatic", "axis": [1, 0.2, 0], "q": "s", "offset": [0, 0, 0.1]},
             "mass": "mc", "com": [0, 0, 0.05], "inertia": [0.1, 0.2, 0.25]},
            {"name": "pole", "parent": "cart",
             "joint": {"type": "revolute", "axis": "y", "q": "th", "offset": [0.1, 0, 0.2]},
             "mass": "mp", "com": [0, 0.02, "-l/2"],
             "inertia": {"Ixx": "mp*l**2/12", "Iyy": "mp*l**2/12", "Izz": 0.001, "Ixz": 0.0004}},
        ],
        "forces": [
            {"type": "joint_spring_damper", "coordinate": "s", "stiffness": "k1",
             "damping": "d1", "neutral": "s0"},
            {"type": "joint_spring_damper", "coordinate": "th", "stiffness": 1.5},
            {"type": "generalized_force", "coordinate": "th",
             "value": "-c*der(th)*abs(der(th)) + 0.1*sin(t)*cos(s)"},
            {"type": "body_force", "body": "pole", "point": [0, 0, "-l"],
             "force": ["F0*sin(w*t)", 0, "0.3*der(s)"], "torque": [0, "T0", 0], "frame": "ground"},
            {"type": "body_force", "body": "pole", "force": [0.2, 0, "-0.4*th"],
             "torque": [0.05, 0, "T0*cos(t)"], "frame": "body"},
            {"type": "body_force", "body": "cart", "force": [0, 0.3, 0]},
            {"type": "spring_damper", "body_a": "ground", "point_a": "pa",
             "body_b": "pole", "point_b": [0, 0, "-l"], "stiffness": "ks", "damping": "ds",
             "free_length": "L0"},
            {"type": "spring_damper", "body_a": "cart", "point_a": [-0.2, 0, 0.3],
             "body_b": "pole", "point_b": [0, 0, "-l/2"], "stiffness": 8.0,
             "free_length": 0.3},
        ],
    }


def model_driven_turntable():
    return {
        "name": "turntable",
        "parameters": {"Omega": 1.3, "r0": 0.4, "m": 0.9, "l": 0.6, "g": 9.81,
                       "F0": 0.8, "w": 3.1, "A": 0.05, "wz": 5.0},
        "gravity": [0, 0, "-g"],
        "bodies": [
            {"name": "table", "parent": "ground",
             "joint": [{"translate": "z", "by": "A*sin(wz*t)"},
                       {"rotate": "z", "by": "Omega*t"}],
             "mass": 3.0, "com": [0, 0, 0], "inertia": [0.5, 0.5, 0.9]},
            {"name": "bob", "parent": "table",
             "joint": [{"translate": ["r0", 0, 0.1]},
                       {"rotate": "x", "q": "phi"},
                       {"rotate": "y", "q": "psi"}],
             "mass": "m", "com": [0, 0, "-l"], "inertia": [0.01, 0.012, 0.003, 0, 0.001, 0]},
        ],
        "forces": [
            {"type": "body_force", "body": "bob", "force": ["F0*sin(w*t)", "0.2*t", 0],
             "torque": [0, 0, "0.1*cos(w*t)"], "frame": "body"},
        ],
    }


def _draw(x, rng):
    """Scaled by U(0.8, 1.2) and shifted: by U(-0.01, 0.01), or by U(-0.1, 0.1) when |x| < 0.1, so a
    zero default moves and a small value (an offset, a product of inertia) may change sign."""
    return float(x * rng.uniform(0.8, 1.2) + rng.uniform(-1, 1) * (0.1 if abs(x) < 0.1 else 0.01))


def _random_params(defaults, rng):
    return {name: tuple(_draw(x, rng) for x in v) if isinstance(v, tuple) else _draw(v, rng)
            for name, v in defaults.items()}


def _physical_params(oracle, q, t, rng):
    """A draw of `_random_params` at which the oracle's mass matrix is positive definite (a shifted
    product of inertia can make a body inertia indefinite; such a system is not simulated)."""
    for _ in range(30):
        params = _random_params(oracle.parameters, rng)
        if np.linalg.eigvalsh(oracle.mass_matrix(q, t, params)).min() > 1e-9:
            return params
    raise AssertionError("no draw of the parameters with a positive definite mass matrix")


def compare_with_oracle(model_dict, path, seed, n_states=5, mass_matrix=True):
    import dynamica
    oracle = kane_qdd_function(model_dict)      # an unsupported model is a failure, not a skip
    m = dynamica.load(str(path))
    names = tuple(m.coordinates)
    assert sorted(names) == sorted(oracle.coordinates), (names, oracle.coordinates)
    assert m.n == len(names)
    perm = [oracle.coordinates.index(nm) for nm in names]   # module index -> oracle index
    rng = np.random.default_rng(seed)
    failures = []
    for k in range(n_states):
        q = rng.uniform(-1.2, 1.2, len(names))
        qd = rng.uniform(-1.5, 1.5, len(names))
        t = float(rng.uniform(0.0, 3.0))
        qo = np.empty(len(names))
        qdo = np.empty(len(names))
        qo[perm] = q
        qdo[perm] = qd
        params = _physical_params(oracle, qo, t, rng) if k > 0 else None
        expect = oracle(qo, qdo, t, params)[perm]
        got = np.asarray(m.qdd(q, qd, t=t, params=params), dtype=float)
        err = rel_err(got, expect)
        if not err <= RTOL:
            failures.append(f"qdd  state {k}: coords={names} q={q.tolist()} qd={qd.tolist()} "
                            f"t={t!r} params={params}\n  dynamica={got.tolist()}\n"
                            f"  oracle  ={expect.tolist()}\n  rel err={err:.3e}")
        if mass_matrix and hasattr(m, "mass_matrix"):
            Mo = oracle.mass_matrix(qo, t, params)[np.ix_(perm, perm)]
            Mg = np.asarray(m.mass_matrix(q, t=t, params=params), dtype=float)
            errm = rel_err(Mg, Mo)
            if not errm <= RTOL:
                failures.append(f"mass_matrix state {k}: q={q.tolist()} t={t!r} "
                                f"params={params}\n  dynamica={Mg.tolist()}\n"
                                f"  oracle  ={Mo.tolist()}\n  rel err={errm:.3e}")
    assert not failures, f"{model_dict['name']} ({path}):\n" + "\n".join(failures)


def _write(tmp_path_factory, model):
    d = tmp_path_factory.mktemp(model["name"])
    p = d / f"{model['name']}.yaml"
    p.write_text(yaml.safe_dump(copy.deepcopy(model), sort_keys=False))
    return p


@pytest.mark.parametrize("builder,seed", [
    (model_3d_double_pendulum, 11),
    (model_prismatic_all_forces, 12),
    (model_driven_turntable, 13),
    (model_universal_spherical, 14),
])
def test_small_models_vs_oracle(builder, seed, tmp_path_factory):
    model = builder()
    compare_with_oracle(model, _write(tmp_path_factory, model), seed)


@pytest.mark.slow
def test_free_body_vs_oracle(tmp_path_factory):
    model = model_free_body()
    compare_with_oracle(model, _write(tmp_path_factory, model), 15)


#: every bundled model; the oracle's symbolic derivation takes 30-60 s for the 6-9 coordinate
#: chains, so those run in the slow set (which CI runs)
#: the oracle builds trees of bodies with closed-form forces: models with loops (every one in
#: tests/runtime/test_loops.py, against the tree reference under the constraint conditions), tabulated
#: functions, inputs or extra states (the numeric reference in tests/generator/render/test_generated.py, and
#: test_tables.py, test_states_inputs.py: scipy's interpolators, hand-written equations) are not its
OTHER_ORACLES = {"loops", "functions", "inputs", "states"}
ALL = sorted(p.stem for p in (REPO / "models").glob("*.yaml"))
BUNDLED = [n for n in ALL if not OTHER_ORACLES & set(yaml.safe_load((REPO / "models" / f"{n}.yaml").read_text()))]
SLOW_BUNDLED = {"puma560", "chain7", "cardan_chain", "spherical_chain"}


def test_every_bundled_model_is_compared():
    assert len(BUNDLED) >= 9 and {"governor", "puma560", "star", "chain7"} <= set(BUNDLED)


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n in SLOW_BUNDLED else [])
                                  for n in BUNDLED])
def test_bundled_models_vs_oracle(name):
    path = REPO / "models" / f"{name}.yaml"
    model = yaml.safe_load(path.read_text())
    compare_with_oracle(model, path, 100 + BUNDLED.index(name))
