"""The constrained accelerations of cylindrical, prismatic, weld and universal loops (the types the
bundled models do not use) against an oracle written here: Pinocchio's mass matrix and bias forces of
the tree (built by tests/oracles/pin_trees.py from its own numbers, not by the loader), and the loop's
conditions written from their definitions on Pinocchio's body placements (a point on a line, parallel
or perpendicular axes, a relative rotation kept), not dynamica's atoms. Their Jacobian and their
second derivative along q + h q' (the acceleration term at q'' = 0) are central differences of those
conditions; the constrained solve is the null-space one: q'' = q''_p + N z with J q''_p = gamma,
N^T M N z = N^T (-b - M q''_p)."""

from __future__ import annotations

import numpy as np
import pytest

import dynamica

from conftest import write_model
from oracles.pin_trees import random_tree

KINDS = ("cylindrical", "prismatic", "weld", "universal")
#: central differences: h = 1e-6 for J, 1e-4 for the second derivative (truncation ~h^2, rounding
#: ~eps/h^2, both ~1e-8 of the O(1) terms); the solve amplifies by cond(N^T M N) ~ 10-100
RTOL = 2e-5


def _placement(pmodel, data, attach, body):
    import pinocchio as pin
    if body == "ground":
        return np.eye(3), np.zeros(3)
    jid, place = attach[body]
    T = data.oMi[jid] * place if jid else place
    assert isinstance(T, pin.SE3)
    return T.rotation.copy(), T.translation.copy()


class Oracle:
    """The tree in Pinocchio and the loop's conditions from their definitions."""

    def __init__(self, tree, loop, C0=None):
        import pinocchio as pin
        self.pin = pin
        self.pmodel, self.names = tree.to_pinocchio()
        self.attach = tree.pin_attach
        self.data = self.pmodel.createData()
        self.loop = loop
        self.C0 = C0

    def frames(self, q):
        self.pin.forwardKinematics(self.pmodel, self.data, q)
        lp = self.loop
        Ra, ta = _placement(self.pmodel, self.data, self.attach, lp["body_a"])
        Rb, tb = _placement(self.pmodel, self.data, self.attach, lp["body_b"])
        return Ra, ta, Rb, tb

    def phi(self, q):
        lp = self.loop
        Ra, ta, Rb, tb = self.frames(q)
        d = (Rb @ np.array(lp["point_b"]) + tb) - (Ra @ np.array(lp["point_a"]) + ta)
        kind = lp["type"]
        if kind == "weld":
            return np.concatenate([d, (Ra.T @ Rb - self.C0).ravel()])
        ua, ub = Ra @ np.array(lp["axis"]), Rb @ np.array(lp["axis_b"])
        if kind == "universal":                               # the points meet, the axes perpendicular
            return np.concatenate([d, [ua @ ub]])
        off_line = d - (d @ ua) * ua                          # x_b on the line through x_a along u_a
        if kind == "cylindrical":
            return np.concatenate([off_line, np.cross(ua, ub)])
        return np.concatenate([off_line, (Ra.T @ Rb - self.C0).ravel()])    # prismatic: no relative rotation

    def qdd(self, q, qd):
        pin = self.pin
        n = q.size
        h = 1e-6
        J = np.array([(self.phi(q + h * e) - self.phi(q - h * e)) / (2 * h) for e in np.eye(n)]).T
        h = 1e-4
        gamma = -(self.phi(q + h * qd) - 2 * self.phi(q) + self.phi(q - h * qd)) / h**2
        U, S, Vt = np.linalg.svd(J)
        r = int(np.sum(S > 1e-6 * S[0]))
        qp = Vt[:r].T @ ((U[:, :r].T @ gamma) / S[:r])
        N = Vt[r:].T
        M = pin.crba(self.pmodel, self.data, q)
        M = np.triu(M) + np.triu(M, 1).T
        b = pin.rnea(self.pmodel, self.data, q, qd, np.zeros(n))
        z = np.linalg.solve(N.T @ M @ N, N.T @ (-b - M @ qp))
        return qp + N @ z, J, r


def _loop(kind, rng, pmodel, data, attach, a, bodies):
    b = str(rng.choice([x for x in bodies if x != a]))
    Ra, ta = _placement(pmodel, data, attach, a)
    Rb, tb = _placement(pmodel, data, attach, b)
    pa = rng.uniform(-0.3, 0.3, 3)
    x = Ra @ pa + ta
    ua = rng.normal(size=3)
    ua /= np.linalg.norm(ua)
    pb = Rb.T @ (x - tb)
    if kind in ("cylindrical", "prismatic"):                 # anywhere on the line
        pb = Rb.T @ (x + 0.2 * (Ra @ ua) - tb)
    loop = {"name": "cut", "type": kind, "body_a": a, "point_a": [float(v) for v in pa],
            "body_b": b, "point_b": [float(v) for v in pb]}
    if kind != "weld":
        ub = Rb.T @ Ra @ ua
        if kind == "universal":
            ub = np.cross(ub, rng.normal(size=3))
            ub /= np.linalg.norm(ub)
        loop["axis"], loop["axis_b"] = [float(v) for v in ua], [float(v) for v in ub]
    return loop


def _closed_model(tmp_path, kind, seed):
    """A random tree (two branches from the ground) and one loop of `kind` between two bodies of it,
    its points and axes chosen so that it is closed at a random configuration q0."""
    import pinocchio as pin
    rng = np.random.default_rng(seed)
    tree = random_tree("star", 6, (1, 2, 3), rng, parametric=False, name=f"{kind}_loop")
    pmodel, names = tree.to_pinocchio()
    data = pmodel.createData()
    q0 = np.array([rng.uniform(*tree.coord_ranges[c]) for c in names])
    pin.forwardKinematics(pmodel, data, q0)
    bodies = [b.name for b in tree.bodies]
    depth = {b.name: 0 for b in tree.bodies}
    for b in tree.bodies:                                   # depth-first: parents first
        depth[b.name] = 0 if b.parent == "ground" else depth[b.parent] + 1
    deep = [b for b in bodies if depth[b] >= 1]
    full = {"cylindrical": 4, "prismatic": 5, "weld": 6, "universal": 4}[kind]
    for _ in range(50):                  # two bodies whose relative motion the loop constrains fully
        loop = _loop(kind, rng, pmodel, data, tree.pin_attach, str(rng.choice(deep)), bodies)
        _, J, r = Oracle(tree, loop, np.eye(3)).qdd(q0, np.zeros(q0.size))
        if r == full and r < q0.size:
            break
    else:                                                   # pragma: no cover
        raise AssertionError("no pair of bodies for the loop")
    Ra, _ = _placement(pmodel, data, tree.pin_attach, loop["body_a"])
    Rb, _ = _placement(pmodel, data, tree.pin_attach, loop["body_b"])
    d = dict(tree.model_dict)
    d["loops"] = [loop]
    d["initial"] = {c: float(v) for c, v in zip(names, q0)}
    path = write_model(tmp_path, d, f"{kind}_{seed}.yaml")
    return tree, loop, names, q0, Ra.T @ Rb, path


@pytest.mark.parametrize("seed", (1,))
@pytest.mark.parametrize("kind", KINDS)
def test_loop_types_against_pinocchio_and_the_definitions(tmp_path, kind, seed):
    rng = np.random.default_rng(1000 + seed)
    tree, loop, names, q0, C0, path = _closed_model(tmp_path, kind, seed)
    oracle = Oracle(tree, loop, C0)
    assert np.abs(oracle.phi(q0)).max() < 1e-12                   # closed at q0 (the oracle's own check)
    model = dynamica.load(str(path), check_mass_matrix=False)
    perm = [names.index(c) for c in model.coordinates]            # dynamica's order -> pinocchio's
    assert np.abs(model.constraints(q0[perm])).max() < 1e-10
    _, J, r = oracle.qdd(q0, np.zeros(q0.size))
    assert r == {"cylindrical": 4, "prismatic": 5, "weld": 6, "universal": 4}[kind]
    N = np.linalg.svd(J)[2][r:].T
    for _ in range(2):
        qd = N @ rng.normal(size=N.shape[1]) * 1.5                # on the velocity manifold
        expected, _, _ = oracle.qdd(q0, qd)
        got = model.qdd(q0[perm], qd[perm])
        scale = max(1.0, np.abs(expected).max())
        assert np.all(np.isfinite(got))
        assert np.abs(got - expected[perm]).max() < RTOL * scale, (kind, got, expected[perm])
