"""The constrained solve near and at singular configurations of planar mechanisms, against an
independent reference (tests/oracles/planar_loops.py: the Lagrangian of the planar bodies and
the loop-closure equations written by hand in sympy, the accelerations by the null-space method
in mpmath at 40 digits, which holds where the loops' Jacobian J loses rank).

Mechanisms (model files written here; revolute joints about z, gravity along -y):

- change-point four-bars (Grashof with s + l = p + q: a parallelogram, a kite and one with
  random binary-fraction lengths, l0 + l2 = l1 + l3), at their flattened configuration, where J
  loses rank and two branches cross, and at crank-angle distances d = 1e-1 ... 1e-9 from it on
  one branch (closed-form positions: intersection of two circles, at 100 digits);
- slider-cranks at their two dead centres (crank and rod aligned): J keeps its rank;
- a five-bar at a type-2 (parallel) singularity, the two distal links aligned: the map from the
  cranks' rates to the rest is singular there, but J on all four tree coordinates keeps rank 2.

Velocities lie in J's null space: the branch's tangent (a difference quotient at 100 digits), so
that at the flattened configuration gamma is consistent (u^T gamma = -q'^T (sum u_a Hess phi_a)
q' = 0 for u spanning J's left null space: checked on the reference).

What sets the tolerance. The reference is q'' of the float64 state given, exact to ~1e-30, so
the error measured is dynamica's own rounding. Near the flattened configuration J's smallest
singular value is s_min = c d (c = 0.18-0.55 here), and the rounding of J, gamma and the
multipliers (relative eps = 2.2e-16) reaches q'' amplified by 1/s_min: a correct float64 solve
has an error growing like eps/d. Measured, |q''_dyn - q''_ref| / max(1, |q''_ref|) with
|q''_ref| = 3-45:

    d             1e-1     1e-3     1e-5     1e-7     1e-9     0
    parallelogram 9.2e-16  3.5e-14  1.9e-12  2.7e-10  3.2e-10  4.3e-16
    antiparallel. 2.2e-16  2.2e-16  2.2e-16  2.2e-16  0        5.3e-16
    kite          3.0e-15  1.3e-14  7.4e-13  2.2e-10  5.1e-11  2.5e-15
    random        3.7e-16  3.2e-15  1.6e-12  2.9e-11  3.0e-09  7.7e-17

i.e. at most 0.16 eps/d near the singularity (d <= 1e-3) and 3e-15 at regular states and at
d = 0 (the rank decision leaves out the vanishing row; the solve is then well conditioned); the
slider-cranks and the five-bar (J of full rank, s_min >= 0.69) stay below 1.7e-15. Tolerance:
TOL_FLOOR + TOL_SLOPE eps/d, TOL_FLOOR = 3e-14 and TOL_SLOPE = 2, each about 10x the worst
measured (TOL_FLOOR alone where J keeps its rank and at d = 0).

Note: at d = 0 the null-space q'' (the reference's, and dynamica's) is not the limit of q''(d)
along the branch as d -> 0 (they differ by O(1): the multipliers grow like 1/d on the branch and
hold q'' to its curvature, which the rank-deficient J at d = 0 no longer does); both are checked
as they are defined, not against each other. Between d ~ 1e-11 and 1e-14 (s_min at 1e-11 to
1e-14 of s_max) the answer of the float state is itself uncertain by eps/d ~ 1e-5 to 1: not
checked.
"""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import dynamica
from dynamica.runtime.assembly import ConstraintError

from conftest import write_model
from oracles import planar_loops as pl

G = 9.81
EPS = np.finfo(float).eps
TOL_FLOOR = 3e-14
TOL_SLOPE = 2.0
DISTANCES = [1e-1, 1e-3, 1e-5, 1e-7, 1e-9, 0.0]


def tolerance(d: float, singular: bool) -> float:
    if not singular or d == 0.0:
        return TOL_FLOOR
    return TOL_FLOOR + TOL_SLOPE * EPS / d


def random_bodies(rng, lengths):
    """(m, I_zz, cx, cy) per link: random masses, inertias and centres off the link's line."""
    return [(float(rng.uniform(0.3, 3.0)), float(rng.uniform(0.005, 0.1)), float(L * rng.uniform(0.1, 0.9)),
             float(rng.uniform(-0.1, 0.1))) for L in lengths]


def body(name, parent, joint, b):
    m, inertia, cx, cy = b
    return {"name": name, "parent": parent, "joint": joint, "mass": m, "com": [cx, cy, 0.0],
            "inertia": [inertia / 2, inertia / 2, inertia]}           # a plate in x-y: Ixx + Iyy = Izz


def revolute(q, offset=(0.0, 0.0)):
    return {"type": "revolute", "axis": "z", "q": q, "offset": [float(offset[0]), float(offset[1]), 0.0]}


def pin(name, body_a, point_a, body_b, point_b, kind="revolute"):
    loop = {"name": name, "type": kind, "body_a": body_a, "point_a": [float(point_a), 0.0, 0.0],
            "body_b": body_b, "point_b": [float(point_b), 0.0, 0.0]}
    return {**loop, "axis": "z"} if kind == "revolute" else loop


def model_file(name, bodies, loops, initial):
    return {"name": name, "gravity": [0, -G, 0], "bodies": bodies, "loops": loops, "initial": initial}


# --- mechanisms: the model file, the reference and the states -----------------------------------

def _random_change_point(rng):
    """Lengths in 1/256 m with l0 + l2 = l1 + l3 exactly (a Grashof change-point four-bar)."""
    while True:
        l0, l1, l3 = (int(k) / 256 for k in rng.integers(40, 256, 3))
        l2 = l1 + l3 - l0
        if l2 > 0.1 and len({l0, l1, l2, l3}) == 4:
            return l0, l1, l2, l3


FOURBARS = {   # name: (lengths l0 ground, l1 crank, l2 coupler, l3 rocker; the loop's type; branch sign)
    "parallelogram": ((0.75, 0.25, 0.75, 0.25), "revolute", 1),
    "antiparallelogram": ((0.75, 0.25, 0.75, 0.25), "revolute", -1),
    "kite": ((0.25, 0.25, 0.75, 0.75), "spherical", -1),
    "random": (_random_change_point(np.random.default_rng(7)), "revolute", 1),
}


class Mechanism:
    """A compiled model, its reference and a function d -> (q, q') in the reference's order."""

    def __init__(self, model, ref, states, singular):
        self.model, self.ref, self.states, self.singular = model, ref, states, singular
        self.perm = [ref.coords.index(c) for c in model.coordinates]

    def compare(self, d):
        q, qd = self.states(d)
        jq = np.array(self.ref.jacobian(q).tolist(), dtype=float) @ qd
        assert np.abs(jq).max() < 1e-13 * max(1.0, np.abs(qd).max()), "the state's velocity is off J's null space"
        want, info = self.ref.qdd(q, qd)
        got = self.model.qdd(q[self.perm], qd[self.perm])
        assert np.all(np.isfinite(got)), (d, got)
        err = np.abs(got - want[self.perm]).max() / max(1.0, np.abs(want).max())
        return err, info


def _branch_state(q_of, d, rate, q0):
    """(q, q') at distance d along a branch q_of (mpmath, 100 digits): q' its tangent by a
    one-sided difference of step 1e-25 (error ~1e-25), times `rate`; at d = 0 the exact q0."""
    with mp.workdps(100):
        h = mp.mpf(10) ** -25
        qa = [mp.mpf(x) for x in q0] if d == 0 else q_of(mp.mpf(d))
        qb = q_of(mp.mpf(d) + h)
        qd = [(b - a) / h * rate for a, b in zip(qa, qb)]
        return np.array([float(x) for x in qa]), np.array([float(x) for x in qd])


_CACHE: dict = {}


def _cached(key, make):
    if key not in _CACHE:
        _CACHE[key] = make()
    return _CACHE[key]


def fourbar(name, tmp_path_factory):
    def make():
        (l0, l1, l2, l3), kind, sign = FOURBARS[name]
        bodies = random_bodies(np.random.default_rng(sum(map(ord, name))), [l1, l2, l3])
        ref = pl.fourbar(l0, l1, l2, l3, bodies, G)
        data = model_file(f"singular_fourbar_{name}", [
            body("crank", "ground", revolute("th1"), bodies[0]),
            body("coupler", "crank", revolute("th2", (l1, 0)), bodies[1]),
            body("rocker", "ground", revolute("th3", (l0, 0)), bodies[2])],
            [pin("pin", "coupler", l2, "rocker", l3, kind)], {"th1": 0.1, "th2": 0.1, "th3": 0.1})
        model = dynamica.load(str(write_model(tmp_path_factory.mktemp("m"), data, f"{data['name']}.yaml")),
                              check_mass_matrix=False)
        with mp.workdps(100):                        # the branch passes through the flattened configuration
            q_flat = pl.fourbar_flat(l0, l1, l2, l3)
            q_of = pl.fourbar_branch(l0, l1, l2, l3, q_flat, sign)
            assert max(abs(a - b) for a, b in zip(q_of(mp.mpf(10) ** -30), q_flat)) < 1e-25
        return Mechanism(model, ref, lambda d: _branch_state(q_of, d, 1.7, q_flat), singular=True)
    return _cached(("fourbar", name), make)


SLIDER_CRANK = (0.25, 0.6)                       # crank r, rod L


def slider_crank(tmp_path_factory):
    def make():
        r, L = SLIDER_CRANK
        bodies = random_bodies(np.random.default_rng(11), [r, L, 0.2])
        ref = pl.slider_crank(r, L, bodies, G)
        data = model_file("singular_slider_crank", [
            body("crank", "ground", revolute("th1"), bodies[0]),
            body("rod", "crank", revolute("th2", (r, 0)), bodies[1]),
            body("slider", "ground", {"type": "prismatic", "axis": "x", "q": "s"}, bodies[2])],
            [pin("wrist", "rod", L, "slider", 0.0)], {"th1": 0.1, "th2": -0.05, "s": r + L})
        model = dynamica.load(str(write_model(tmp_path_factory.mktemp("m"), data, f"{data['name']}.yaml")),
                              check_mass_matrix=False)
        return model, ref
    return _cached(("slider_crank",), make)


#: the five-bar: pivots 2 m apart, cranks and distal links 0.625 m; at the type-2 singularity the
#: cranks' tips are B1 = (0.375, 0.5), B2 = (1.625, 0.5) and the distal links meet at C = (1, 0.5)
FIVEBAR = {"l0": 2.0, "c1": 0.625, "d1": 0.625, "c2": 0.625, "d2": 0.625}
FIVEBAR_C = (1.0, 0.5)


def fivebar(tmp_path_factory):
    def make():
        f = FIVEBAR
        bodies = random_bodies(np.random.default_rng(13), [f["c1"], f["d1"], f["c2"], f["d2"]])
        ref = pl.fivebar(f["l0"], f["c1"], f["d1"], f["c2"], f["d2"], bodies, G)
        data = model_file("singular_fivebar", [
            body("crank1", "ground", revolute("a1"), bodies[0]),
            body("distal1", "crank1", revolute("b1", (f["c1"], 0)), bodies[1]),
            body("crank2", "ground", revolute("a2", (f["l0"], 0)), bodies[2]),
            body("distal2", "crank2", revolute("b2", (f["c2"], 0)), bodies[3])],
            [pin("tip", "distal1", f["d1"], "distal2", f["d2"])], {"a1": 0.9, "b1": -0.9, "a2": 2.2, "b2": 0.9})
        model = dynamica.load(str(write_model(tmp_path_factory.mktemp("m"), data, f"{data['name']}.yaml")),
                              check_mass_matrix=False)
        ik = pl.fivebar_ik(f["l0"], f["c1"], f["d1"], f["c2"], f["d2"], modes=(1, -1))
        rng = np.random.default_rng(17)
        z = rng.uniform(-2, 2, 2)

        def states(d):
            with mp.workdps(60):
                q = ik((mp.mpf(FIVEBAR_C[0]), mp.mpf(FIVEBAR_C[1]) + d))
                N, _, _ = ref.null_space([float(x) for x in q])
                qd = N * mp.matrix(list(z))
                return np.array([float(x) for x in q]), np.array([float(x) for x in qd])
        return Mechanism(model, ref, states, singular=False)
    return _cached(("fivebar",), make)


# --- the tests -----------------------------------------------------------------------------------

@pytest.mark.parametrize("d", DISTANCES)
@pytest.mark.parametrize("name", list(FOURBARS))
def test_change_point_fourbar(tmp_path_factory, name, d):
    mech = fourbar(name, tmp_path_factory)
    err, info = mech.compare(d)
    if d == 0.0:                                     # the oracle: J has lost rank, gamma is consistent
        assert info["rank"] == 1 and info["left_out"] < 1e-13, info
    else:
        assert info["rank"] == 2 and info["s"][1] < 2 * d, info
    assert err <= tolerance(d, True), (name, d, err, info)


@pytest.mark.parametrize("d", DISTANCES + [-1e-5, -1e-9])
@pytest.mark.parametrize("dead", [0.0, math.pi], ids=["outer", "inner"])
def test_slider_crank_dead_centres(tmp_path_factory, dead, d):
    model, ref = slider_crank(tmp_path_factory)
    r, L = SLIDER_CRANK
    q, qd = _branch_state(pl.slider_crank_branch(r, L, dead), d, -2.3, pl.slider_crank_branch(r, L, dead)(0))
    want, info = ref.qdd(q, qd)
    assert info["rank"] == 2 and info["s"][1] > 0.1, info     # J keeps its rank at a dead centre
    perm = [ref.coords.index(c) for c in model.coordinates]
    got = model.qdd(q[perm], qd[perm])
    assert np.all(np.isfinite(got))
    err = np.abs(got - want[perm]).max() / max(1.0, np.abs(want).max())
    assert err <= tolerance(d, False), (dead, d, err)


@pytest.mark.parametrize("d", DISTANCES)
def test_fivebar_type2_singularity(tmp_path_factory, d):
    mech = fivebar(tmp_path_factory)
    err, info = mech.compare(d)
    assert info["rank"] == 2, info
    assert err <= tolerance(d, False), (d, err, info)


def test_the_branch_tangents_make_gamma_consistent(tmp_path_factory):
    """At the flattened configuration: u^T gamma = 0 for u spanning J's left null space along
    the branch tangent used above; along another null-space direction it is not (the state would
    be inconsistent, and no q'' exists): the reference's premise for the d = 0 cases."""
    mech = fourbar("random", tmp_path_factory)
    q, qd = mech.states(0.0)
    with mp.workdps(pl.DPS):
        U, _, Vt = mp.svd_r(mech.ref.jacobian(q), full_matrices=True)
        u = [U[a, 1] for a in range(2)]
        N = Vt.T[:, 1:]
    assert abs(mech.ref.inconsistency(q, qd, u)) < 1e-13 * np.abs(qd).max() ** 2
    H = sum(u[a] * mp.matrix(mech.ref.hessians[a]([mp.mpf(x) for x in q])) for a in range(2))
    other = N * mp.matrix([1, 0])
    other = np.array([float(x) for x in other])
    if abs(float((N.T * H * N)[0, 0])) > 1e-3:       # this null-space direction is not a tangent
        assert abs(mech.ref.inconsistency(q, other, u)) > 1e-3
        with pytest.raises(ConstraintError):
            mech.model.qdd(q[mech.perm], other[mech.perm])


# --- inconsistent loops ---------------------------------------------------------------------------

def test_inconsistent_loops_raise(tmp_path):
    """A slider on x held by two distance loops of length 1 to the ground points x = -1 and
    x = +1, at x = 0: J = [2, -2]^T has rank 1 (the equations are redundant at rest) and
    gamma = [-2 x'^2, -2 x'^2]: with x' = 1, 2 x'' = -2 and -2 x'' = -2 have no common solution.
    At x' = 0 the accelerations exist (x'' = 0: gravity is along -y)."""
    data = model_file("singular_two_rods", [body("slider", "ground", {"type": "prismatic", "axis": "x", "q": "x"},
                                                 (1.3, 0.02, 0.0, 0.0))],
                      [{"name": "left", "type": "distance", "body_a": "ground", "point_a": [-1.0, 0.0, 0.0],
                        "body_b": "slider", "point_b": [0.0, 0.0, 0.0], "length": 1.0},
                       {"name": "right", "type": "distance", "body_a": "ground", "point_a": [1.0, 0.0, 0.0],
                        "body_b": "slider", "point_b": [0.0, 0.0, 0.0], "length": 1.0}], {"x": 0.0})
    model = dynamica.load(str(write_model(tmp_path, data, "two_rods.yaml")), check_mass_matrix=False)
    (x,), _ = pl.Planar.symbols(["x"])
    ref = pl.Planar(["x"], [(1.3, 0.02, (x, 0), 0)], [(x + 1) ** 2 - 1, (x - 1) ** 2 - 1], G)
    want, info = ref.qdd([0.0], [0.0])
    got = model.qdd([0.0], [0.0])
    assert info["rank"] == 1 and np.all(np.isfinite(got)) and np.abs(got - want).max() <= TOL_FLOOR
    _, info = ref.qdd([0.0], [1.0])
    assert info["left_out"] > 1.0                    # the reference sees it too: |u^T gamma| = 2 sqrt(2)
    with pytest.raises(ConstraintError):
        model.qdd([0.0], [1.0])
