"""Closed kinematic loops (docs/loops.md) against independent oracles:
sympy.physics.mechanics.KanesMethod with dependent coordinates and speeds (planar four-bar), closed
forms (slider-crank, Freudenstein's four-bar positions), energy and constraint drift over 10 s,
Newton-Euler balance of the reactions, and random mechanisms whose loops are closed by an
independent numpy composition of the joints (tests/oracles/pin_trees.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.runtime import assembly as loops

from conftest import LOOP_MODELS, MODELS, write_model
from oracles.pin_trees import random_tree, yaml_body_placements

L1, L2, L3, L0, MASS, G = 0.2, 0.6, 0.5, 0.55, 1.0, 9.81
FOURBAR = MODELS / "fourbar.yaml"
RTOL = 1e-10


@pytest.fixture(scope="module")
def kane():
    from oracles.kane_loops import fourbar
    return fourbar(L1, L2, L3, L0, MASS, G)


def fourbar_states(model, count=6, seed=3):
    """Assembled states: the crank angle and rate held at random values, the others solved."""
    rng = np.random.default_rng(seed)
    out = []
    q, qd = model.initial_state()
    for _ in range(count):
        q = q.copy()
        q[0] += rng.uniform(-0.6, 0.6)
        qd = np.array([rng.uniform(-3, 3), 0.0, 0.0])
        out.append(model.assemble(q, qd, hold=["th1", "der(th1)"]))
        q = out[-1][0]
    return out


@pytest.mark.parametrize("form, backend, mode", [
    ("composite", "c", "symbolic"), ("articulated", "c", "symbolic"), ("ltdl", "c", "symbolic"),
    ("direct", "c", "symbolic"), ("composite", "fortran", "symbolic"), ("composite", "c", "numeric"),
    ("articulated", "c", "numeric")])
def test_fourbar_matches_kane(kane, form, backend, mode):
    if backend == "fortran":
        import shutil
        if shutil.which("gfortran") is None:
            pytest.skip("gfortran is not installed")
    model = dynamica.load(str(FOURBAR), form=form, backend=backend, mode=mode)
    for q, qd in fourbar_states(model):
        assert np.abs(model.constraints(q)).max() < 1e-12
        ref = kane(q, qd)
        got = model.qdd(q, qd)
        assert np.linalg.norm(got - ref) <= RTOL * max(1.0, np.linalg.norm(ref)), (q, qd, got, ref)


def _fourbar_cut(tmp_path, loop):
    d = _yaml(FOURBAR)
    d["name"] = f"fourbar_{loop['type']}"
    d["loops"] = [{"name": "pin", "body_a": "coupler", "point_a": ["l2", 0, 0], "body_b": "rocker",
                   "point_b": ["l3", 0, 0], **loop}]
    return dynamica.load(str(write_model(tmp_path, d, f"{d['name']}.yaml")))


def _yaml(path):
    import yaml
    return yaml.safe_load(path.read_text())


def test_redundant_equations_give_the_same_motion(tmp_path, kane):
    """A planar four-bar cut at a pin written as a 3-D revolute (5 equations, 3 of them redundant),
    a spherical joint (3, 1 redundant) and a cylindrical one along z (4, 2 redundant): one motion."""
    models = [_fourbar_cut(tmp_path, cut) for cut in
              ({"type": "revolute", "axis": "z"}, {"type": "spherical"}, {"type": "cylindrical", "axis": "z"})]
    for q, qd in fourbar_states(models[0], count=4, seed=5):
        ref = kane(q, qd)
        for m in models:
            assert np.linalg.norm(m.qdd(q, qd) - ref) <= RTOL * np.linalg.norm(ref)
    q0, qd0 = models[0].assemble()                   # one start (each cut would assemble its own point)
    runs = [dynamica.simulate(m, t_end=1.0, rtol=1e-12, atol=1e-12, output_step=0.1, q0=q0, qd0=qd0)
            for m in models]
    for r in runs[1:]:
        assert np.abs(r.q - runs[0].q).max() < 1e-9


def slider_crank_closed_form(t, r=0.1, L=0.35, w=20.0):
    """Piston position, velocity and acceleration of the slider-crank with crank angle w t."""
    th = w * t
    root = math.sqrt(L * L - (r * math.sin(th)) ** 2)
    s = r * math.cos(th) + root
    ds = -r * w * math.sin(th) - r * r * w * math.sin(th) * math.cos(th) / root
    h = 1e-5                                        # its derivative by a 4th-order difference
    f = lambda tt: (-r * w * math.sin(w * tt) - r * r * w * math.sin(w * tt) * math.cos(w * tt)  # noqa: E731
                    / math.sqrt(L * L - (r * math.sin(w * tt)) ** 2))
    dds = (f(t - 2 * h) - 8 * f(t - h) + 8 * f(t + h) - f(t + 2 * h)) / (12 * h)
    return s, ds, dds


def test_slider_crank_follows_its_closed_form():
    model = dynamica.load(str(MODELS / "slider_crank.yaml"))
    for t in (0.0, 0.1, 0.37, 0.8):
        s, ds, dds = slider_crank_closed_form(t)
        q, qd = model.assemble([-20.0 * t, s + 0.01], t=t)     # a guess on the right branch
        assert q[1] == pytest.approx(s, abs=1e-12) and qd[1] == pytest.approx(ds, abs=1e-10)
        assert model.qdd(q, qd, t)[1] == pytest.approx(dds, rel=1e-8, abs=1e-7)
    res = dynamica.simulate(model, t_end=1.0, output_step=0.01)
    ref = np.array([slider_crank_closed_form(t)[0] for t in res.t])
    assert np.abs(res.q[:, 1] - ref).max() < 1e-9
    assert max(np.abs(model.constraints(q, t)).max() for t, q in zip(res.t, res.q)) < 1e-10


def test_fourbar_positions_follow_freudenstein():
    """The rocker angle of an assembled four-bar against the intersection of two circles."""
    model = dynamica.load(str(FOURBAR))
    q = model.initial_state()[0]
    for th1 in np.linspace(0.0, 2 * np.pi, 13):
        q[0] = th1
        q, _ = model.assemble(q, hold=["th1"])
        P, D = np.array([L1 * np.cos(th1), L1 * np.sin(th1)]), np.array([L0, 0.0])
        d = np.linalg.norm(P - D)
        base = math.atan2(*(P - D)[::-1])
        off = math.acos((L3 ** 2 + d ** 2 - L2 ** 2) / (2 * L3 * d))
        branches = [base + off, base - off]
        assert min(abs(math.remainder(q[2] - b, 2 * math.pi)) for b in branches) < 1e-10


def test_energy_and_constraints_are_kept_over_ten_seconds():
    model = dynamica.load(str(FOURBAR))
    res = dynamica.simulate(model, t_end=10.0, rtol=1e-12, atol=1e-12, output_step=0.05)

    def energy(q, qd):                               # V from the rods' centres (closed form), T from M
        y = [L1 / 2 * math.sin(q[0]), L1 * math.sin(q[0]) + L2 / 2 * math.sin(q[0] + q[1]), L3 / 2 * math.sin(q[2])]
        return 0.5 * qd @ model.mass_matrix(q) @ qd + MASS * G * sum(y)
    E = np.array([energy(q, qd) for q, qd in zip(res.q, res.qd)])
    assert np.abs(E - E[0]).max() <= 1e-8 * abs(E[0])
    assert max(np.abs(model.constraints(q)).max() for q in res.q) <= 1e-10
    J = [loops.jacobian(model, q)[0] for q in res.q[::20]]
    assert max(np.abs(j @ qd).max() for j, qd in zip(J, res.qd[::20])) <= 1e-9


def test_reactions_balance_the_rocker(tmp_path):
    """Newton-Euler for the rocker: its joint reaction (from the ground, body frame, at O), the
    loop's reaction (from the coupler, ground frame, at the pin) and gravity give m a_c, and
    their moments about the centre give I_zz alpha."""
    d = _yaml(FOURBAR)
    d["name"] = "fourbar_balance"
    d["outputs"] = {"reactions": True, "angular": ["rocker"], "points": {"c": {"body": "rocker", "at": ["l3/2", 0, 0]}}}
    model = dynamica.load(str(write_model(tmp_path, d, "balance.yaml")))
    for q, qd in fourbar_states(model, count=4, seed=9):
        out = model.outputs(0.0, q, qd)
        th = q[2]
        R = np.array([[math.cos(th), -math.sin(th), 0], [math.sin(th), math.cos(th), 0], [0, 0, 1]])  # body -> ground
        f_joint, t_joint = R @ out["rocker.reaction_force"], R @ out["rocker.reaction_torque"]
        f_loop, t_loop = out["pin.reaction_force"], out["pin.reaction_torque"]
        a_c = out["c.acceleration"]
        total = f_joint + f_loop + MASS * np.array([0, -G, 0])
        assert np.abs(total - MASS * a_c).max() < 1e-9 * max(1.0, np.abs(f_joint).max())
        c = out["c.position"]
        O, tip = np.array([L0, 0, 0]), np.array([L0 + L3 * math.cos(th), L3 * math.sin(th), 0])
        moment = t_joint + np.cross(O - c, f_joint) + t_loop + np.cross(tip - c, f_loop)
        alpha = out["rocker.angular_acceleration"][2]
        assert moment[2] == pytest.approx(MASS * L3 ** 2 / 12 * alpha, rel=1e-8, abs=1e-9)


# ------------------------------------------------------------------ random mechanisms
def _rot(placements, body):
    return np.eye(4) if body == "ground" else placements[body]


@pytest.mark.parametrize("seed", range(6))
def test_random_loops_close_and_differentiate(tmp_path, seed):
    """Random trees with a loop of every type between two random bodies, its points and axes chosen
    so that it is closed at a random configuration q* (by the numpy composition of the joints, not
    by dynamica): phi(q*) = 0; J against central differences of phi; phi'' at q'' = 0 against a
    second difference of phi along q + h q'."""
    rng = np.random.default_rng(100 + seed)
    tree = random_tree("mixed", 6, (1, 2, 3, "custom"), rng, parametric=False, name=f"loopy{seed}")
    qstar = {c: float(rng.uniform(*tree.coord_ranges[c])) for c in tree.coordinates}
    T = yaml_body_placements(tree.model_dict, {}, qstar)
    names = [b.name for b in tree.bodies]
    d = dict(tree.model_dict)
    d["loops"] = []
    for k, kind in enumerate(("spherical", "revolute", "universal", "cylindrical", "prismatic", "weld", "distance")):
        a, b = rng.choice(names + ["ground"], size=2, replace=False)
        Ta, Tb = _rot(T, a), _rot(T, b)
        pa = rng.uniform(-0.3, 0.3, 3)
        x = Ta[:3, :3] @ pa + Ta[:3, 3]
        pb = Tb[:3, :3].T @ (x - Tb[:3, 3]) if kind != "distance" else rng.uniform(-0.3, 0.3, 3)
        loop = {"name": f"l{k}", "type": kind, "body_a": str(a), "point_a": pa.round(12).tolist(),
                "body_b": str(b), "point_b": [float(v) for v in pb]}
        if kind in ("revolute", "universal", "cylindrical", "prismatic"):
            ua = rng.normal(size=3)
            ua /= np.linalg.norm(ua)
            ub = Tb[:3, :3].T @ Ta[:3, :3] @ ua
            if kind == "universal":                       # a perpendicular axis of b
                ub = np.cross(ub, rng.normal(size=3))
            loop["axis"], loop["axis_b"] = ua.tolist(), [float(v) for v in ub]
        if kind == "distance":
            xb = Tb[:3, :3] @ pb + Tb[:3, 3]
            loop["length"] = float(np.linalg.norm(xb - x))
        d["loops"].append(loop)
    model = dynamica.load(str(write_model(tmp_path, d, f"loopy{seed}.yaml")), check_mass_matrix=False)
    q = np.array([qstar[c] for c in model.coordinates])
    refs = np.empty(9)
    model.module.con_refs(0.0, q, model.param_vector(), refs)
    model.set_references(refs)
    p = model.param_vector()
    assert np.abs(model.constraints(q)).max() < 1e-12
    for trial in range(3):
        qx = q + (0 if trial == 0 else rng.normal(scale=0.3, size=q.size))
        qd = rng.normal(size=q.size)
        J, phit = loops.jacobian(model, qx)
        h = 1e-6
        Jfd = np.array([(model.constraints(qx + h * e) - model.constraints(qx - h * e)) / (2 * h)
                        for e in np.eye(q.size)]).T
        assert np.abs(J - Jfd).max() < 1e-7 * max(1.0, np.abs(J).max())
        assert np.abs(phit).max() == 0.0                  # no driven joint
        gamma = np.empty(len(phit))
        model.module.con_bias(0.0, qx, qd, p, gamma)
        h = 1e-4
        second = (model.constraints(qx + h * qd) - 2 * model.constraints(qx) + model.constraints(qx - h * qd)) / h**2
        assert np.abs(-gamma - second).max() < 1e-5 * max(1.0, np.abs(second).max())


# ------------------------------------------------------------------ bad input
def _loop_model(tmp_path, **loop):
    d = _yaml(FOURBAR)
    d["loops"] = [{"name": "pin", "type": "revolute", "body_a": "coupler", "point_a": ["l2", 0, 0],
                   "body_b": "rocker", "point_b": ["l3", 0, 0], "axis": "z", **loop}]
    return write_model(tmp_path, d)


@pytest.mark.parametrize("change, entry, message", [
    ({"body_b": "coupler"}, "loops[0].body_b", "two different bodies"),
    ({"body_a": "crank_arm"}, "loops[0].body_a", "unknown body"),
    ({"axis": [0, 0, 0]}, "loops[0].axis", "zero axis"),
    ({"type": "hinge"}, "loops[0].type", "unknown loop type"),
    ({"name": "rocker"}, "loops[0].name", "already the name"),
    ({"length": 1.0}, "loops[0].length", "unknown key"),
])
def test_bad_loops_are_model_errors(tmp_path, change, entry, message):
    with pytest.raises(ModelError) as info:
        dynamica.load(str(_loop_model(tmp_path, **change)))
    assert any(p.path == entry and message in p.message for p in info.value.problems), str(info.value)


def test_a_revolute_loop_needs_its_axis(tmp_path):
    d = _yaml(FOURBAR)
    del d["loops"][0]["axis"]
    with pytest.raises(ModelError, match=r"`loops\[0\]`: missing required key `axis`"):
        dynamica.load(str(write_model(tmp_path, d)))


def test_points_that_cannot_meet_name_the_loop(tmp_path):
    d = _yaml(FOURBAR)
    d["parameters"]["l2"]["value"] = 0.05                # l1 + l2 + l3 < l0: the loop cannot close
    d["parameters"]["l3"]["value"] = 0.1
    model = dynamica.load(str(write_model(tmp_path, d)), check_mass_matrix=False)
    with pytest.raises(ModelError, match=r"`loops\[0\]`: the mechanism cannot be assembled.*`pin`"):
        model.assemble()


def test_hold_is_kept_exactly():
    model = dynamica.load(str(FOURBAR))
    q0 = np.array([0.7, -0.3, 1.4])
    q, qd = model.assemble(q0, [1.5, 0, 0], hold=["th1", "der(th1)"])
    assert q[0] == 0.7 and qd[0] == 1.5 and np.abs(model.constraints(q)).max() < 1e-12
    with pytest.raises(ValueError, match="unknown coordinate"):
        model.assemble(q0, hold=["th9"])


def test_hamiltonian_forms_refuse_loops():
    with pytest.raises(ModelError, match="cannot take closed loops"):
        dynamica.load(str(FOURBAR), form="hamilton-composite")


@pytest.mark.parametrize("name", ["fourbar", "rssr"])
def test_against_pinocchio_constraint_dynamics(name, monkeypatch):
    """q'' against pin.constraintDynamics with the loop as a CONTACT_3D rigid constraint (the
    Pinocchio models of benchmarks/bench_loops.py, built there independently of dynamica)."""
    pytest.importorskip("pinocchio")
    import importlib.util
    monkeypatch.syspath_prepend(str(MODELS.parent / "benchmarks"))   # its helper benchmarks/_peers.py
    spec = importlib.util.spec_from_file_location("bench_loops", MODELS.parent / "benchmarks" / "bench_loops.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    pc = bench.PinConstrained(getattr(bench, f"pin_{name}"))
    model = dynamica.load(str(MODELS / f"{name}.yaml"))
    rng = np.random.default_rng(4)
    q, qd = model.assemble()
    for _ in range(4):
        q, qd = model.assemble(q + rng.normal(scale=0.1, size=model.n), rng.normal(size=model.n),
                               hold=[model.coordinates[0], f"der({model.coordinates[0]})"])
        ref = pc.qdd(q, qd)
        assert np.linalg.norm(model.qdd(q, qd) - ref) <= 1e-9 * max(1.0, np.linalg.norm(ref))


@pytest.mark.parametrize("form", ["composite", "articulated"])
@pytest.mark.parametrize("name", LOOP_MODELS)
def test_bundled_loops_against_the_tree_reference(name, form):
    """Every bundled model with loops, at assembled random states: the constraint accelerations
    vanish (second central difference of phi along the motion, h = 1e-4: O(h^2)) and M q'' - Q of
    the numeric reference (the tree, runtime/reference/numeric.py) lies in the range of J^T (J by central
    differences of phi): the loops' forces are constraint forces only."""
    from dynamica.runtime.reference.numeric import NumericReference
    model = dynamica.load(str(MODELS / f"{name}.yaml"), form=form)
    ref = NumericReference(model.spec)
    perm = [ref.coordinates.index(c) for c in model.coordinates]
    declared = len(ref.defaults)
    rng = np.random.default_rng(11)
    t = 0.3
    q, qd = model.assemble(t=t)
    n = model.n
    for _ in range(3):
        q, qd = model.assemble(q + rng.normal(scale=0.05, size=n), rng.normal(scale=0.5, size=n), t, hold=[])
        qdd = model.qdd(q, qd, t)
        h = 1e-4
        phi = [model.constraints(q + s * h * qd + 0.5 * (s * h) ** 2 * qdd, t + s * h) for s in (-1, 0, 1)]
        acc = (phi[0] - 2 * phi[1] + phi[2]) / h ** 2
        assert np.max(np.abs(acc)) <= 1e-5 * max(1.0, np.max(np.abs(qdd))), acc
        J = np.column_stack([(model.constraints(q + e * 1e-6, t) - model.constraints(q - e * 1e-6, t)) / 2e-6
                             for e in np.eye(n)])
        qr, qdr, qddr = (np.empty(n) for _ in range(3))
        qr[perm], qdr[perm], qddr[perm] = q, qd, qdd
        M, Q = ref.equations(qr, qdr, t, model.param_vector()[:declared])
        r = (M @ qddr - Q)[perm]
        lam, *_ = np.linalg.lstsq(J.T, r, rcond=None)
        assert np.linalg.norm(J.T @ lam - r) <= 1e-6 * max(1.0, np.linalg.norm(r)), (name, r, J.T @ lam)


@pytest.mark.parametrize("name", LOOP_MODELS)
def test_ida_follows_adams_on_the_bundled_loops(name):
    """The DAE integrator (GGL index 2, SUNDIALS IDA) against the compiled Adams method with
    projection at a tight tolerance; its constraints hold without projection."""
    model = dynamica.load(str(MODELS / f"{name}.yaml"))
    a = dynamica.simulate(model, t_end=1.0, output_step=0.05, rtol=1e-12, atol=1e-13)
    b = dynamica.simulate(model, t_end=1.0, output_step=0.05, method="ida", rtol=1e-10, atol=1e-12)
    assert b.method == "ida" and len(b.t) == len(a.t)
    assert np.max(np.abs(b.q - a.q)) < 1e-5 and np.max(np.abs(b.qd - a.qd)) < 1e-4
    assert max(np.max(np.abs(model.constraints(q, t))) for t, q in zip(b.t, b.q)) < 1e-9


def test_ida_on_a_stiff_fourbar(tmp_path):
    """A damper of 2000 N m s/rad on the crank: adams reports stiffness and gives up within its
    step budget; ida and radau (index-1 ODE) agree with a tight radau reference."""
    import yaml

    from dynamica.errors import IntegrationError
    d = yaml.safe_load(FOURBAR.read_text())
    d["name"] = "fourbar_stiff"
    d.setdefault("forces", []).append({"type": "joint_spring_damper", "coordinate": "th1", "stiffness": 0.0,
                                       "damping": 2000.0})
    model = dynamica.load(write_model(tmp_path, d))
    kw = dict(t_end=2.0, output_step=0.1)
    ref = dynamica.simulate(model, method="radau", rtol=1e-12, atol=1e-14, **kw)
    ida = dynamica.simulate(model, method="ida", rtol=1e-9, atol=1e-11, **kw)
    assert np.max(np.abs(ida.q - ref.q)) < 1e-6 and ida.nfev < 5000
    with pytest.warns(Warning, match="stiff"), pytest.raises(IntegrationError, match="radau"):
        dynamica.simulate(model, method="adams", rtol=1e-8, atol=1e-10, t_end=20.0, output_step=1.0)


def test_ida_is_for_loops_only():
    model = dynamica.load(str(MODELS / "double_pendulum.yaml"))
    with pytest.raises(ValueError, match="closed loops"):
        dynamica.simulate(model, method="ida", t_end=0.1)


def _welded_block(loop, extra=""):
    """A body on a free joint at the ground origin, held there by a `loop` joint (a contract
    check's model, written from the model format)."""
    text = f"""name: held_{loop}
gravity: [0, 0, -9.81]
bodies:
  - name: b
    parent: ground
    joint: {{type: free, q: [x, y, z, rx, ry, rz]}}
    mass: 1
    com: [0.5, 0, 0]
    inertia: [0.1, 0.2, 0.3]
loops:
  - {{name: w, type: {loop}, body_a: ground, point_a: [0, 0, 0], body_b: b, point_b: [0, 0, 0]{extra}}}
outputs: {{reactions: true}}
"""
    import yaml
    return yaml.safe_load(text)


def test_weld_and_prismatic_loops_hold_on_a_fresh_model(tmp_path):
    """A contract check: before any assemble(), the orientation conditions of weld and prismatic
    loops were left out (their references zero), so qdd, outputs and linearize of a freshly loaded
    model described another mechanism; and model.parameters listed the internal references"""
    weld = dynamica.load(str(write_model(tmp_path, _welded_block("weld"), "weld.yaml")))
    assert weld.parameters == {}
    z = np.zeros(6)
    assert np.max(np.abs(weld.qdd(z, z))) < 1e-10                       # welded: nothing moves
    torque = weld.outputs(0.0, z, z)["w.reaction_torque"]
    assert np.allclose(torque, [0.0, -0.5 * 9.81, 0.0], atol=1e-10)    # carries m g times the arm 0.5
    assert dynamica.linearize(weld, q=z).coordinates == ()
    assert np.max(np.abs(weld.constraints(np.array([0, 0, 0, 0.3, 0, 0])))) > 0.1
    prism = dynamica.load(str(write_model(tmp_path, _welded_block("prismatic", ", axis: x"), "prism.yaml")))
    assert dynamica.linearize(prism, q=z).coordinates == ("x",)
