"""Oracle comparisons where the other suites do not reach.

1. Every function of the expression grammar (docs/model_format.md), in forces, a driven joint, an
   axis and the mass properties, against sympy.physics.mechanics' KanesMethod (tests/oracles/spm.py),
   including their values at 0 and at kinks (heaviside(0) = 1/2, sign(0) = 0, abs, min and max
   at ties), and against the numeric reference at random states.
2. Pinocchio at t != 0 with driven joints (a rotation and a translation by functions of t, one with
   a parameter whose default is 0), joint forces (a generalized force, a joint spring-damper and a
   `limit`: Pinocchio's tau) and body forces in the body and the ground frame (Pinocchio's fext), with
   parameter draws that change signs and move zero defaults. Pinocchio sees the driven transforms
   as joints with prescribed q, v, a: M_ff a_f = tau_f - b_f - M_fd a_d, with b = rnea(q, v, 0,
   fext). Every registered form: the Lagrangian ones in q'' and the mass matrix; the Hamiltonian
   ones in the momenta pm = (M v)_f and their rates pm' = (M a + dM/dt v)_f, dM/dt = C + C^T of
   Pinocchio's Coriolis matrix (on a model without composite joints, see pin_trees.to_pinocchio).
Tolerance 1e-10 relative (||a - b|| / max(1, ||b||)).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.generator.forms import EQUATION_FORMS
from dynamica.runtime.reference.check import check_against_reference

from helpers import rel_err
from oracles.pin_trees import expand_joint, mdot_v, random_tree, yaml_body_mass_props
from oracles.spm import kane_qdd_function

pin = pytest.importorskip("pinocchio")

RTOL = 1e-10
FORMS = sorted(EQUATION_FORMS)

# --------------------------------------------------------------------------- 1. the grammar

GRAMMAR = {
    "name": "grammar",
    "description": "every function of the expression grammar (tests/test_oracle_coverage.py)",
    "parameters": {"m1": 1.5, "m2": 0.8, "l": 0.6, "g": 9.81, "c": 0.0, "a": 0.5, "k": [0.4, 0.3]},
    "gravity": [0, "0.3*sin(a)", "-g"],
    "bodies": [
        {"name": "cart", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
         "mass": "sqrt(m1**2)", "com": [0, 0, "0.1*cosh(a) - 0.1"],
         "inertia": ["0.1*exp(a)", "0.1 + 0.05*tanh(a)", "0.2*log(1 + a)", 0, 0, 0]},
        {"name": "pend", "parent": "cart",
         "joint": [{"translate": "z", "by": "0.05*sin(2*t) + 0.02*atan(t)"},
                   {"rotate": [1, "0.2*sinh(a)", 0], "q": "th"}],
         "mass": "m2", "com": [0, 0, "-l"], "inertia": [0.01, 0.012, "0.003*cos(a)", 0, 0, 0]},
    ],
    "forces": [
        {"type": "generalized_force", "coordinate": "x",
         "value": "heaviside(x) + 2*sign(x) - 0.5*abs(der(x)) + 0.7*min(x, 0, th) - 0.4*max(x, 0, -th)"
                  " + heaviside(t - 1) + 0.3*sign(der(th)) + abs(th)*c"},
        {"type": "generalized_force", "coordinate": "th",
         "value": "0.3*sin(th) + 0.2*cos(x)*tan(0.3*th) + 0.1*asin(0.5*sin(th)) + 0.1*acos(0.4*cos(x))"
                  " + 0.2*atan(der(th)) + 0.05*atan2(sin(th), 2 + cos(x)) + 0.1*sinh(0.5*x)"
                  " - 0.1*cosh(0.2*th) - 0.2*tanh(der(x)) + 0.1*exp(-x**2) + 0.05*log(2 + cos(th))"
                  " + 0.1*sqrt(1 + th**2) + 0.01*pi + k[1]*t"},
        {"type": "body_force", "body": "pend", "point": [0, 0.05, "-l"], "frame": "body",
         "force": ["0.2*max(0, sin(t))", 0, "-0.1*heaviside(th)"], "torque": [0, "0.05*min(der(th), 0)", 0]},
        {"type": "joint_spring_damper", "coordinate": "th", "stiffness": "k[0]", "damping": "c + 0.05"},
    ],
}

#: (x, th, x', th', t): every kink argument exactly 0 in some state (x, th, x', th', t - 1, sin t)
KINKS = [(0.0, 0.0, 0.0, 0.0, 1.0), (0.0, 0.4, 0.3, 0.0, 1.0), (0.0, -0.4, 0.0, 0.5, 0.5),
         (0.2, 0.0, -0.3, 0.0, 0.0), (-0.3, 0.0, 0.0, -0.2, 1.0), (0.25, 0.25, 0.1, 0.1, 2.0)]


@pytest.fixture(scope="module")
def grammar_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("grammar") / "grammar.yaml"
    path.write_text(yaml.safe_dump(GRAMMAR, sort_keys=False))
    return path


def test_grammar_functions_vs_kane(grammar_path):
    model = dynamica.load(grammar_path)
    oracle = kane_qdd_function(GRAMMAR)
    assert tuple(model.coordinates) == oracle.coordinates == ("x", "th")
    rng = np.random.default_rng(21)
    states = KINKS + [tuple(rng.uniform(-1, 1, 4)) + (float(rng.uniform(0, 3)),) for _ in range(4)]
    for k, (x, th, xd, thd, t) in enumerate(states):
        params = None if k < len(KINKS) else {"c": float(rng.uniform(-0.2, 0.2)), "a": float(rng.uniform(0.3, 0.7)),
                                               "k": tuple(rng.uniform(-0.5, 0.5, 2))}
        got = model.qdd([x, th], [xd, thd], t=t, params=params)
        expect = oracle([x, th], [xd, thd], t, params)
        assert rel_err(got, expect) <= RTOL, (k, (x, th, xd, thd, t), got, expect)


def test_grammar_functions_vs_reference(grammar_path):
    for form in ("composite", "hamilton-composite"):
        rep = check_against_reference(dynamica.load(grammar_path, form=form), samples=8, seed=5)
        assert rep.ok(RTOL), rep.text()


def test_kink_values_are_the_documented_ones():
    """The oracle's own conventions, so that the comparison above pins them: H(0) = 1/2, sign(0) = 0."""
    one = {"name": "k", "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
                                    "mass": 1.0, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
           "forces": [{"type": "generalized_force", "coordinate": "x",
                       "value": "heaviside(x) + 10*sign(x) + 100*min(x, 1) + 1000*max(x, -1)"}]}
    f = kane_qdd_function(one)
    assert f([0.0], [0.0], 0.0)[0] == pytest.approx(0.5)
    assert f([0.5], [0.0], 0.0)[0] == pytest.approx(1 + 10 + 50 + 500)
    assert f([-2.0], [0.0], 0.0)[0] == pytest.approx(0 - 10 - 200 - 1000)


# --------------------------------------------------------------------------- 2. Pinocchio, driven and forced

#: parameters the test adds to the random tree; Z's default is 0 (a term that a multiplicative draw never moves)
EXTRA = {"W": 0.7, "A": 0.3, "w": 2.1, "B": 0.15, "Z": 0.0, "F0": 0.8, "F1": 1.3, "k1": 2.0, "d1": 0.3,
         "kl": 0.6, "mul": 0.4}


def _drive_rot(p, t):
    """W t + A sin(w t) + Z t^2 and its first two derivatives."""
    W, A, w, Z = p["W"], p["A"], p["w"], p["Z"]
    return (W * t + A * np.sin(w * t) + Z * t * t, W + A * w * np.cos(w * t) + 2 * Z * t,
            -A * w * w * np.sin(w * t) + 2 * Z)


def _drive_trans(p, t):
    B, w = p["B"], p["w"]
    return B * np.cos(w * t), -B * w * np.sin(w * t), -B * w * w * np.cos(w * t)


class DrivenTree:
    """A random tree with a driven rotation before the first body's joint and a driven translation
    before the last body's, a generalized force, a joint spring-damper and two body forces."""

    def __init__(self, seed):
        tree = copy.deepcopy(random_tree("mixed", 6, (1, 2, 3, "custom"), np.random.default_rng(seed),
                                         name="driven_forced"))
        md = tree.model_dict
        ybodies = {b["name"]: b for b in md["bodies"]}
        self.drives = {"drv_r": (tree.bodies[0], {"rotate": "z", "by": "W*t + A*sin(w*t) + Z*t**2"}, _drive_rot),
                       "drv_t": (tree.bodies[-1], {"translate": "x", "by": "B*cos(w*t)"}, _drive_trans)}
        for name, (body, tr, _) in self.drives.items():
            ybodies[body.name]["joint"] = [tr] + expand_joint(ybodies[body.name]["joint"])
            kind = "rotate" if "rotate" in tr else "translate"
            body.transforms.insert(0, {kind: tr[kind], "q": name})     # a joint for Pinocchio
            body.coords.insert(0, name)
            tree.coord_ranges[name] = (0.0, 0.0)
        md.setdefault("parameters", {}).update(EXTRA)
        tree.defaults.update(EXTRA)
        free = [c for c in tree.coordinates if c not in self.drives]
        self.gen_coord, self.spring_coord, self.limit_coord = free[0], free[-1], free[1]
        self.fb_body, self.fg_body = tree.bodies[1].name, tree.bodies[-1].name
        self.point = [0.1, -0.05, 0.2]
        md["forces"] = [
            {"type": "generalized_force", "coordinate": self.gen_coord, "value": f"F1*sin(t) - 0.4*{self.gen_coord}"},
            {"type": "joint_spring_damper", "coordinate": self.spring_coord, "stiffness": "k1", "damping": "d1",
             "neutral": 0.1},
            {"type": "limit", "coordinate": self.limit_coord, "lower": -0.2, "upper": 0.3, "stiffness": "kl",
             "damping": "mul", "decay": 3.0},
            {"type": "body_force", "body": self.fb_body, "frame": "body", "point": self.point,
             "force": ["F0", 0, "F1*cos(t) + Z"], "torque": [0, 0.2, "Z*t"]},
            {"type": "body_force", "body": self.fg_body, "frame": "ground",      # at the centre of mass
             "force": [0, "F0", 0.3], "torque": [0.1, 0, "0.2*sin(t)"]},
        ]
        self.tree, self.free = tree, free

    def draw(self, rng):
        """Parameter overrides: the tree's own redraw (signs of offsets and centres of mass change),
        masses over three decades (0.03 to 30 times the tree's draw), and the added ones scaled,
        shifted and of either sign (Z moves off 0)."""
        ov = self.tree.random_overrides(rng)
        for name, (kind, _) in self.tree.param_kinds.items():
            if kind == "mass":
                ov[name] = float(ov.get(name, self.tree.defaults[name]) * 10 ** rng.uniform(-1.5, 1.5))
        for name, v in EXTRA.items():
            ov[name] = float(rng.choice([-1.0, 1.0]) * v * rng.uniform(0.8, 1.2) + rng.uniform(-0.3, 0.3))
        return ov

    def pinocchio(self, q, qd, t, ov):
        """(a_f, M_ff, pm_f, pm'_f) over the free coordinates (their names: self.free)."""
        vals = self.tree.param_values(ov)
        pmodel, names = self.tree.to_pinocchio(vals, split=True)
        data = pmodel.createData()
        qv, vv, ad = np.zeros(len(names)), np.zeros(len(names)), np.zeros(len(names))
        for k, c in enumerate(names):
            if c in self.drives:
                qv[k], vv[k], ad[k] = self.drives[c][2](vals, t)
            else:
                qv[k], vv[k] = q[c], qd[c]
        tau = np.zeros(len(names))
        g = names.index(self.gen_coord)
        tau[g] += vals["F1"] * np.sin(t) - 0.4 * qv[g]
        s = names.index(self.spring_coord)
        tau[s] += -vals["k1"] * (qv[s] - 0.1) - vals["d1"] * vv[s]
        c = names.index(self.limit_coord)           # docs/model_format.md, `limit`
        kl, mul = vals["kl"], vals["mul"]
        tau[c] += (kl - mul * vv[c]) * np.exp(-3.0 * (qv[c] + 0.2)) - (kl + mul * vv[c]) * np.exp(3.0 * (qv[c] - 0.3))
        fext = self._fext(pmodel, data, qv, vals, t)
        M = pin.crba(pmodel, data, qv)
        M = np.triu(M) + np.triu(M, 1).T
        b = pin.rnea(pmodel, data, qv, vv, np.zeros(len(names)), fext)
        f = [k for k, c in enumerate(names) if c not in self.drives]
        d = [k for k, c in enumerate(names) if c in self.drives]
        a = ad.copy()
        a[f] = np.linalg.solve(M[np.ix_(f, f)], tau[f] - b[f] - M[np.ix_(f, d)] @ ad[d])
        order = [names.index(c) for c in self.free]
        return a[order], M[np.ix_(order, order)], (M @ vv)[order], (M @ a + mdot_v(pmodel, data, qv, vv))[order]

    def _fext(self, pmodel, data, qv, vals, t):
        """The two body forces as Pinocchio's fext: spatial forces in each joint's frame about its origin."""
        pin.forwardKinematics(pmodel, data, qv)
        fext = [pin.Force.Zero() for _ in range(pmodel.njoints)]
        com = yaml_body_mass_props(self.tree.model_dict, vals)[self.fg_body][1]
        for body, frame, point, force, torque in (
                (self.fb_body, "body", np.array(self.point), [vals["F0"], 0.0, vals["F1"] * np.cos(t) + vals["Z"]],
                 [0.0, 0.2, vals["Z"] * t]),
                (self.fg_body, "ground", com, [0.0, vals["F0"], 0.3], [0.1, 0.0, 0.2 * np.sin(t)])):
            jid, P = self.tree.pin_attach[body]
            force, torque = np.array(force), np.array(torque)
            if frame == "ground":           # components along the ground axes -> the body's axes
                R = (data.oMi[jid] * P).rotation
                force, torque = R.T @ force, R.T @ torque
            fext[jid] = fext[jid] + P.act(pin.Force(force, torque + np.cross(point, force)))
        return fext


@pytest.fixture(scope="module")
def driven_tree(tmp_path_factory):
    dt = DrivenTree(2101)
    path = tmp_path_factory.mktemp("driven_forced") / "driven_forced.yaml"
    path.write_text(yaml.safe_dump(dt.tree.model_dict, sort_keys=False))
    return dt, path


@pytest.mark.parametrize("form", FORMS)
def test_driven_forced_tree_vs_pinocchio(form, driven_tree):
    dt, path = driven_tree
    model = dynamica.load(path, form=form)
    assert sorted(model.coordinates) == sorted(dt.free)
    rng = np.random.default_rng(2102 + FORMS.index(form))
    for k in range(5):
        q, qd = dt.tree.random_state(rng)
        t = float(rng.uniform(0.3, 3.0))
        ov = {} if k == 0 else dt.draw(rng)
        params = dt.tree.param_values(ov)
        qq, qqd = [q[c] for c in model.coordinates], [qd[c] for c in model.coordinates]
        order = [dt.free.index(c) for c in model.coordinates]
        a, M, pm, pmd = (x[np.ix_(order, order)] if x.ndim == 2 else x[order] for x in dt.pinocchio(q, qd, t, ov))
        assert rel_err(model.mass_matrix(qq, t=t, params=params), M) <= RTOL, (form, k)
        if model.hamiltonian:
            y = model.to_state(qq, qqd, t=t, params=params)
            assert rel_err(y[model.n:], pm) <= RTOL, (form, k, "momenta")
            ydot = model.rhs(t, y, params=params)
            assert rel_err(ydot[:model.n], qqd) <= RTOL, (form, k, "q'")
            assert rel_err(ydot[model.n:], pmd) <= RTOL, (form, k, "pm'")
        else:
            assert rel_err(model.qdd(qq, qqd, t=t, params=params), a) <= RTOL, (form, k)
