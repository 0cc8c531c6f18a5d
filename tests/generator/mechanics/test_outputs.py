"""The generated `outputs` function: points, angular velocities and
accelerations, joint reactions, force values, expressions.

Oracles: finite differences of positions along a trajectory (velocities, accelerations),
the rotation matrix recovered from three body points (angular velocity from R^T R'),
Pinocchio's transmitted joint wrenches `data.f` after `rnea` (reactions), the composite
form's q'' and closed forms of the force laws.
"""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import dynamica

from conftest import MODELS, write_model
from helpers import rel_err as _rel
from oracles.pin_trees import random_tree, write_yaml

pin = pytest.importorskip("pinocchio")
from oracles.pin_reactions import pin_solution, pin_transmitted_wrench  # noqa: E402


def _ddt(x, h):
    """Fourth-order central difference along axis 0 (drops two samples at each end)."""
    return (-x[4:] + 8 * x[3:-1] - 8 * x[1:-3] + x[:-4]) / (12 * h)


def _with_outputs(path, outputs):
    d = yaml.safe_load(open(path))
    d["outputs"] = outputs
    out = path.with_name(path.stem + "_out.yaml")
    out.write_text(yaml.safe_dump(d, sort_keys=False))
    return out


TREES = {"mixed8": ("mixed", 8, (1, 2, 3, "custom", "welded"), 501),
         "chain6": ("chain", 6, (1, 2, 3), 502),
         "star7": ("star", 7, (1, 2, 3), 503)}


@pytest.fixture(scope="module")
def tree_paths(tmp_path_factory):
    out = {}
    for case, (kind, n, tokens, seed) in TREES.items():
        tree = random_tree(kind, n, tokens, np.random.default_rng(seed), name=case)
        path = tmp_path_factory.mktemp("outputs") / f"{case}.yaml"
        write_yaml(tree, path)
        out[case] = (tree, _with_outputs(path, {"reactions": True}))
    return out


@pytest.mark.parametrize("case,form", [("mixed8", "composite"), ("mixed8", "articulated"),
                                       ("mixed8", "hamilton-composite"), ("chain6", "composite"),
                                       ("star7", "composite")])
def test_reactions_match_pinocchio(tree_paths, case, form):
    tree, path = tree_paths[case]
    model = dynamica.load(str(path), form=form)
    order = list(model.coordinates)
    rng = np.random.default_rng(3)
    for k in range(4):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        _, data, names, a = pin_solution(tree, q, qd, ov)
        out = model.outputs(0.0, [q[c] for c in order], [qd[c] for c in order], params=ov or None)
        assert _rel(out["qdd"], a[[names.index(c) for c in order]]) <= 1e-10
        for b in tree.bodies:
            if b.coords:
                jid, P = tree.pin_attach[b.name]
                f = P.actInv(data.f[jid])
                ref = np.concatenate([f.linear, f.angular])
            else:
                ref = pin_transmitted_wrench(tree, data, b.name, ov or None)
            got = np.concatenate([out[f"{b.name}.reaction_force"], out[f"{b.name}.reaction_torque"]])
            assert _rel(got, ref) <= 1e-9, (form, b.name, b.jtype, got, ref)


POINTS = {"o": [0, 0, 0], "ex": [1, 0, 0], "ey": [0, 1, 0], "tip": [0.1, -0.2, 0.3]}


@pytest.fixture(scope="module")
def demo(models_dir, tmp_path_factory):
    d = yaml.safe_load(open(models_dir / "forces_demo.yaml"))
    body = "pendulum"
    d["outputs"] = {"points": {k: {"body": body, "at": v} for k, v in POINTS.items()},
                    "angular": [body], "forces": True,
                    "expressions": {"twice_theta": "2*theta + der(theta)"}}
    path = write_model(tmp_path_factory.mktemp("demo"), d)
    return dynamica.load(str(path)), body, d


def test_point_kinematics_by_finite_differences(demo):
    model, body, _ = demo
    r = dynamica.simulate(model, t_end=1.0, output_step=1e-3, rtol=1e-13, atol=1e-13)
    h = r.t[1] - r.t[0]
    pos, vel, acc = (r.outputs[f"tip.{k}"] for k in ("position", "velocity", "acceleration"))
    scale_v, scale_a = np.abs(vel).max(), np.abs(acc).max()
    assert scale_v > 0.1 and scale_a > 0.1
    assert np.abs(_ddt(pos, h) - vel[2:-2]).max() <= 1e-7 * scale_v
    assert np.abs(_ddt(vel, h) - acc[2:-2]).max() <= 1e-7 * scale_a
    # angular velocity (body frame) from the rotation recovered from three points: w~ = R^T R'
    o, ex_, ey = (r.outputs[f"{k}.position"] for k in ("o", "ex", "ey"))
    R = np.stack([ex_ - o, ey - o, np.cross(ex_ - o, ey - o)], axis=2)       # columns: body axes in ground
    W = np.einsum("kji,kjl->kil", R[2:-2], _ddt(R, h))
    w_fd = np.stack([W[:, 2, 1], W[:, 0, 2], W[:, 1, 0]], axis=1)
    w = r.outputs[f"{body}.angular_velocity"]
    assert np.abs(w).max() > 0.1 and np.abs(w_fd - w[2:-2]).max() <= 1e-7 * np.abs(w).max()
    eps = r.outputs[f"{body}.angular_acceleration"]
    assert np.abs(_ddt(w, h) - eps[2:-2]).max() <= 1e-7 * np.abs(eps).max()
    # qdd output equals the RHS; the expression is what it says
    np.testing.assert_allclose(r.outputs["qdd"][5], model.qdd(r.q[5], r.qd[5], r.t[5]), rtol=1e-13)
    k = model.coordinates.index("theta")
    np.testing.assert_allclose(r.outputs["twice_theta"], 2 * r.q[:, k] + r.qd[:, k], rtol=1e-13, atol=1e-13)


def test_force_values(demo):
    """The spring's tension is k (L - L0) + c L' with L the distance of its end points."""
    model, _, d = demo
    spring = next(f for f in d["forces"] if f["type"] == "spring_damper")
    name = spring.get("name", f"spring_damper_{d['forces'].index(spring)}")
    r = dynamica.simulate(model, t_end=0.5, output_step=1e-3, rtol=1e-13, atol=1e-13)
    L, T = r.outputs[f"{name}.length"], r.outputs[f"{name}.tension"]
    p = model.parameters
    num = lambda x: float(x) if not isinstance(x, str) else float(p[x])  # noqa: E731
    h = r.t[1] - r.t[0]
    expect = num(spring["stiffness"]) * (L[2:-2] - num(spring["free_length"])) + num(spring.get("damping", 0)) * _ddt(
        L, h
    )
    assert np.abs(T[2:-2] - expect).max() <= 1e-7 * max(1.0, np.abs(T).max())
    assert set(model.outputs(0.0, r.q[0], r.qd[0])) >= {f"{name}.length", f"{name}.tension", "twice_theta", "qdd"}


def test_every_output_is_an_ndarray_a_scalar_of_shape_empty(tmp_path):
    """The contract: `model.outputs(...)` -> dict name -> ndarray, an expression's of shape ()
    (it was a numpy float, not an ndarray)"""
    model = dynamica.load(MODELS / "forces_demo.yaml")
    out = model.outputs(0.1, np.full(model.n, 0.1), np.zeros(model.n))
    assert out and all(isinstance(v, np.ndarray) for v in out.values())
    scalars = [k for k, v in out.items() if v.shape == ()]
    assert scalars, "forces_demo has scalar outputs"


def _row_by_row(model, t, Q, QD, S=None, U=None):
    """`model.outputs` at each row: the oracle of the batched `output_series`."""
    rows = [model.outputs(tk, q, qd, inputs=None if U is None else {k: v[j] for k, v in U.items()},
                          s=None if S is None else S[j]) for j, (tk, q, qd) in enumerate(zip(t, Q, QD))]
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def _same_outputs(batched, rows):
    assert list(batched) == list(rows)
    for k, v in rows.items():
        assert batched[k].shape == v.shape, k
        assert np.abs(batched[k] - v).max(initial=0.0) <= 1e-14 * max(1.0, np.abs(v).max(initial=0.0)), k


@pytest.mark.parametrize("name,form", [("double_pendulum.yaml", "composite"), ("fourbar.yaml", "composite"),
                                       ("double_pendulum.yaml", "hamilton-composite")])
def test_output_series_is_one_call_equal_to_row_by_row(name, form, monkeypatch):
    """`simulate`'s outputs come from one C loop over the rows (runtime/native/series_core.pyx): the
    same numbers as `outputs` called row by row (to 1e-14; bit for bit in practice), and no
    Python call of the module's `outputs` per row."""
    model = dynamica.load(MODELS / name, form=form)
    assert hasattr(model.module, "outputs_capsule")
    res = dynamica.simulate(model, t_end=0.5)
    rows = _row_by_row(model, res.t, res.q, res.qd)
    _same_outputs(res.outputs, rows)
    calls = []
    monkeypatch.setattr(model, "outputs", lambda *a, **k: calls.append(a))
    _same_outputs(model.output_series(res.t, res.q, res.qd), rows)
    assert not calls


def test_output_series_with_states_and_inputs_equal_to_row_by_row():
    """Per row: the extra states in their slots of p and the inputs (held) in theirs."""
    model = dynamica.load(MODELS / "dc_motor_joint.yaml")
    res = dynamica.simulate(model, t_end=0.2, inputs={"u": lambda t: 3.0 + np.sin(20 * t)}, sample_time=0.01)
    S = np.column_stack([res.outputs[s] for s in model.states])
    U = {"u": res.outputs["u"]}
    rows = _row_by_row(model, res.t, res.q, res.qd, S, U)
    _same_outputs(model.output_series(res.t, res.q, res.qd, S=S, U=U), rows)
    _same_outputs(res.outputs, rows)
    _same_outputs(model.output_series(res.t, res.q, res.qd), _row_by_row(model, res.t, res.q, res.qd))
    with pytest.raises(dynamica.DynamicaError, match="not an input"):
        model.output_series(res.t, res.q, res.qd, S=S, U={"v": U["u"]})
