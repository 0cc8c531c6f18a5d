"""The sweep forms of the extended system (1.38): ABM (`articulated`, (3.7)-(3.8)) and DEC
(`ltdl`, (3.30)-(3.31)).

  * q'' of the compiled modules against Pinocchio's `aba` on random trees (revolute,
    prismatic, universal, spherical, free, custom multi-transform and welded joints,
    parameters overridden at run time) and against the composite form on bundled models;
  * the joint reactions R_i (program intermediates listed in INFO["reactions"]), evaluated
    from the program (`numeric_values`, compiled to Python for speed), against Pinocchio's
    joint wrenches `data.f` after `rnea`, against the Newton-Euler balance of every body and
    against the joint equations A_i^T R_i = Q_i;
  * a massless body mid-chain and a point mass (singular M*_i, regular D_i) at the leaf,
    a massless leaf (structurally singular D_i) as a ModelError;
  * generated operation counts grow linearly along a chain (slow).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import sympy as sp

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.forms import resolve
from dynamica.generator.forms.parts.common import bias_forces, forward_pass
from dynamica.generator.mechanics.forces import active_forces
from dynamica.generator.mechanics.kinematics import derive_kinematics, numeric_values
from dynamica.generator.spec import expr as ex

from conftest import BUNDLED, write_model
from helpers import rel_err

pin = pytest.importorskip("pinocchio")

from oracles.pin_reactions import pin_solution, pin_transmitted_wrench  # noqa: E402
from oracles.pin_trees import random_tree, write_yaml  # noqa: E402

FORMS = ("articulated", "ltdl")
RTOL = 1e-10

# name -> (kind, n_bodies, joint tokens, seed, keyword arguments); each is compiled per form
TREES = {
    "mixed10_custom_welded": ("mixed", 10, (1, 2, 3, "custom", "welded"), 104, {}),
    "chain20_123": ("chain", 20, (1, 2, 3), 106, {}),
    "star9_free_base": ("star", 9, (1, 2, 3), 103, {"base_joint": "free"}),
    "mixed20_all": ("mixed", 20, (1, 2, 3, "custom", "welded"), 108, {}),
}
FAST_TREES = {"mixed10_custom_welded"}


def make_tree(case):
    kind, n, tokens, seed, kw = TREES[case]
    return random_tree(kind, n, tokens, np.random.default_rng(seed), name=case, **kw)


def skew(r):
    return np.array([[0.0, -r[2], r[1]], [r[2], 0.0, -r[0]], [-r[1], r[0], 0.0]])


# ------------------------------------------------------------------------------------------
# numeric evaluation of a generated program (no compiler)

_MATH = {"sin", "cos", "tan", "asin", "acos", "atan", "atan2", "exp", "log", "sinh", "cosh", "tanh"}


def _py(e, index) -> str:
    """Python source of an expression whose symbols are slots x[k] of one list."""
    if e.is_Symbol:
        return index[e]
    if e.is_Number:
        return repr(float(e))
    if e.is_Add:
        return "(" + " + ".join(_py(a, index) for a in e.args) + ")"
    if e.is_Mul:
        return "(" + " * ".join(_py(a, index) for a in e.args) + ")"
    if e.is_Pow:
        return f"({_py(e.base, index)} ** {_py(e.exp, index)})"
    if isinstance(e, sp.Abs):
        return f"abs({_py(e.args[0], index)})"
    name = type(e).__name__
    if name in _MATH:
        return f"math.{name}(" + ", ".join(_py(a, index) for a in e.args) + ")"
    raise NotImplementedError(name)


def program_values(prog, subs: dict) -> dict:
    """Every intermediate of `prog` at the numbers `subs`: `numeric_values` compiled to Python
    (test_program_values_equal_numeric_values checks the two agree)."""
    index = {s: f"x[{k}]" for k, s in enumerate(subs)}
    lines = ["def run(x):"]
    for k, (sym, e) in enumerate(prog.assignments):
        lines.append(f"    x.append({_py(e, index)})")
        index[sym] = f"x[{len(subs) + k}]"
    ns = {"math": math}
    exec(compile("\n".join(lines + ["    return x"]), "<program>", "exec"), ns)  # noqa: S102
    x = ns["run"]([float(v) for v in subs.values()])
    return dict(zip(index, x))


class Evaluated:
    """Every intermediate of `dynamica.generate(path, form)` at one state (default parameters)."""

    def __init__(self, gen, q: dict, qd: dict, t=0.0):
        self.gen, self.kin, self.eom = gen, gen.kinematics, gen.equations
        subs = {k: float(v) for k, v in gen.spec.defaults().items()}
        subs[ex.T] = float(t)
        for jk in self.kin.joints[1:]:
            for c, s, sd in zip(jk.coordinates, jk.q, jk.qd):
                subs[s], subs[sd] = float(q[c]), float(qd[c])
        self.subs = subs
        self.vals = program_values(self.eom.program, subs)
        self.names = {str(k): k for k in self.vals}

    def num(self, e, vals=None):
        vals = self.vals if vals is None else vals
        e = sp.sympify(e)
        if e.is_Number:
            return float(e)
        if e.is_Symbol:
            return vals[e]
        return float(e.xreplace({x: sp.Float(vals[x]) for x in e.free_symbols}))

    def arr(self, es, vals=None):
        return np.array([self.num(e, vals) for e in es], dtype=float)

    def by_name(self, text):
        return self.num(sp.sympify(text, locals=self.names))

    def qdd(self):
        return dict(zip(self.eom.coordinates, self.arr(self.eom.outputs["qdd"])))

    def reactions(self):
        """body name -> R_i (6,), from INFO["reactions"]."""
        return {b: np.array([self.by_name(s) for s in syms]) for b, syms in self.eom.info["reactions"]}

    def joint(self, i):
        jk = self.kin.joints[i]
        G = np.array([[self.num(jk.G[r, c]) for c in range(3)] for r in range(3)])
        rho = self.arr(jk.rho)
        A = np.array([self.arr(col) for col in jk.A]).reshape(len(jk.A), 6).T
        return G, rho, A

    def inertia6(self, i):
        b = self.kin.inertia[i]
        m, h = self.num(b.mass), self.arr(b.h)
        th = np.array([[self.num(b.theta[r, c]) for c in range(3)] for r in range(3)])
        return np.block([[m * np.eye(3), -skew(h)], [skew(h), th]])

    def common_terms(self):
        """(F_hat_i (2.14) per body, Q per coordinate name) from a fresh derivation, independent
        of the form's program."""
        kin = derive_kinematics(self.gen.spec, self.gen.topology)
        fp = forward_pass(kin)
        F, gen, _ = active_forces(kin, fp)
        F_hat = bias_forces(kin, fp, F)
        vals = program_values(kin.program, self.subs)
        return [None] + [self.arr(f, vals) for f in F_hat[1:]], {c: self.num(e, vals) for c, e in gen.items()}


def transfer_matrix(G, rho):
    """C = [[G, -G rho~], [0, G]] (docs/design.md)."""
    return np.block([[G, -G @ skew(rho)], [np.zeros((3, 3)), G]])


def check_balance(ev: Evaluated, tol=1e-10):
    """Newton-Euler for every body with the accelerated ground (docs/design.md, common.py):
    M_i dw_i = F_hat_i + R_i - sum_j C_j^T R_j, dw_i = C_i dw_k + A_i q''_i, and the joint
    equations A_i^T R_i = Q_i (F_hat_i and Q_i from common.py, derived afresh)."""
    kin, topo = ev.kin, ev.gen.topology
    N = topo.n_bodies
    qdd = ev.qdd()
    Rb = ev.reactions()
    R = [None] + [Rb[topo.names[i]] for i in range(1, N + 1)]
    F_hat, Q = ev.common_terms()
    dw = [np.zeros(6)] + [None] * N
    C = [None] * (N + 1)
    scale = max(1.0, max(np.abs(r).max() for r in R[1:]))
    for i in range(1, N + 1):
        G, rho, A = ev.joint(i)
        C[i] = transfer_matrix(G, rho)
        qi = np.array([qdd[c] for c in kin.joints[i].coordinates])
        dw[i] = C[i] @ dw[topo.kappa[i]] + (A @ qi if qi.size else 0.0)
        AtR = A.T @ R[i]
        Qi = np.array([Q[c] for c in kin.joints[i].coordinates])
        assert np.allclose(AtR, Qi, rtol=0, atol=tol * scale), (topo.names[i], AtR, Qi)
    for i in range(1, N + 1):
        lhs = ev.inertia6(i) @ dw[i]
        rhs = F_hat[i] + R[i] - sum((C[j].T @ R[j] for j in topo.children[i]), np.zeros(6))
        assert np.abs(lhs - rhs).max() <= tol * scale, (topo.names[i], lhs, rhs)


# ------------------------------------------------------------------------------------------
# registry and kernels

def test_program_values_equal_numeric_values(models_dir):
    g = dynamica.generate(models_dir / "forces_demo.yaml", form="ltdl")
    q = {"xc": 0.2, "theta": -0.4, "s": 0.3}
    qd = {"xc": -0.5, "theta": 1.1, "s": 0.2}
    ev = Evaluated(g, q, qd, t=0.9)
    ref = numeric_values(g.equations.program, ev.subs)
    for sym, _ in g.equations.program.assignments:
        assert ev.vals[sym] == pytest.approx(float(ref[sym]), rel=1e-12, abs=1e-12), sym


@pytest.mark.parametrize("form,acronym", [("articulated", "ABM"), ("ltdl", "DEC")])
def test_registered_with_mass_kernel(form, acronym, models_dir):
    assert resolve(acronym) == form
    g = dynamica.generate(models_dir / "double_pendulum.yaml", form=acronym)
    eom = g.equations
    assert eom.form == form and eom.kind == "lagrangian" and not eom.mass_in_dynamics
    kernels = {k.name: [o.name for o in k.outputs] for k in g.module_ir.kernels}
    assert kernels["dynamics"] == ["qdd"] and kernels["mass"] == ["M"]
    prefix = {"articulated": "ab_R", "ltdl": "dc_R"}[form]
    react = dict(eom.info["reactions"])
    assert set(react) == {"link1", "link2"}
    for syms in react.values():   # a bound `{prefix}{i}_{k}` unless the entry folds to 0 or -x
        assert len(syms) == 6 and any(s.startswith(prefix) for s in syms)
        assert all(s.startswith((prefix, "-")) or s == "0" for s in syms)


# ------------------------------------------------------------------------------------------
# compiled q'' against Pinocchio's aba (random trees)

TREE_PARAMS = [pytest.param((c, f), id=f"{c}-{f}", marks=[] if c in FAST_TREES else [pytest.mark.slow])
               for c in TREES for f in FORMS]


@pytest.fixture(scope="module", params=TREE_PARAMS)
def compiled_tree(request, tmp_path_factory):
    case, form = request.param
    tree = make_tree(case)
    path = tmp_path_factory.mktemp("sweep") / f"{case}.yaml"
    write_yaml(tree, path)
    return case, form, tree, dynamica.load(str(path), form=form)


def test_qdd_matches_pinocchio(compiled_tree):
    case, form, tree, model = compiled_tree
    assert model.form == form
    order = list(model.coordinates)
    rng = np.random.default_rng(7)
    worst = 0.0
    for k in range(8):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        pmodel, _, names, a = pin_solution(tree, q, qd, ov)
        idx = [names.index(c) for c in order]
        ref = a[idx]
        dyn = model.qdd([q[c] for c in order], [qd[c] for c in order], 0.0, params=ov or None)
        err = rel_err(dyn, ref)
        worst = max(worst, err)
        assert err <= RTOL, f"{case} {form} state {k}: rel. error {err:.3e}\n{dyn}\n{ref}"
        # the mass kernel (composite's code) with the sweep's q'': M q'' = -nle
        M = model.mass_matrix([q[c] for c in order], 0.0, params=ov or None)
        nle = pin.rnea(pmodel, pmodel.createData(), np.array([q[c] for c in names]),
                       np.array([qd[c] for c in names]), np.zeros(pmodel.nv))[idx]
        assert rel_err(M @ dyn, -nle) <= RTOL
    print(f"[{case} {form}] qdd worst rel. error vs pinocchio {worst:.2e}")


# ------------------------------------------------------------------------------------------
# compiled q'' against the composite form (bundled models)

FAST_BUNDLED = {"forces_demo"}
BUNDLED_PARAMS = [pytest.param(m, f, id=f"{m}-{f}", marks=[] if m in FAST_BUNDLED else [pytest.mark.slow])
                  for m in BUNDLED for f in FORMS]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("name,form", BUNDLED_PARAMS)
def test_qdd_matches_composite(name, form, bundled):
    ref_model, model = bundled(name, "composite"), bundled(name, form)
    assert model.coordinates == ref_model.coordinates
    rng = np.random.default_rng(11)
    worst = 0.0
    for k in range(10):
        q, qd = rng.uniform(-1.5, 1.5, model.n), rng.normal(0.0, 1.0, model.n)
        t = float(rng.uniform(0.0, 5.0))
        ref = ref_model.qdd(q, qd, t)
        dyn = model.qdd(q, qd, t)
        err = rel_err(dyn, ref)
        worst = max(worst, err)
        assert err <= RTOL, f"{name} {form} state {k}: rel. error {err:.3e}\n{dyn}\n{ref}"
        np.testing.assert_allclose(model.mass_matrix(q, t), ref_model.mass_matrix(q, t), rtol=1e-12, atol=1e-12)
    print(f"[{name} {form}] qdd worst rel. error vs composite {worst:.2e}")


# ------------------------------------------------------------------------------------------
# reactions

@pytest.fixture(scope="module")
def mixed_tree_generated(tmp_path_factory):
    tree = make_tree("mixed10_custom_welded")
    path = tmp_path_factory.mktemp("sweep_react") / "mixed10_custom_welded.yaml"
    write_yaml(tree, path)
    return tree, {f: dynamica.generate(path, form=f) for f in FORMS}


@pytest.mark.parametrize("form", FORMS)
def test_reactions_match_pinocchio(form, mixed_tree_generated):
    """R_i == pinocchio's joint wrench data.f (moved from the joint frame to the body frame);
    welded bodies (merged into the parent's pinocchio joint) by summing their subtree."""
    tree, gens = mixed_tree_generated
    rng = np.random.default_rng(5)
    kinds = set()
    for k in range(2):
        q, qd = tree.random_state(rng)
        ev = Evaluated(gens[form], q, qd)
        _, data, names, a = pin_solution(tree, q, qd, {})
        qdd = ev.qdd()
        assert rel_err([qdd[c] for c in names], a) <= RTOL
        R = ev.reactions()
        for b in tree.bodies:
            if b.coords:
                jid, P = tree.pin_attach[b.name]
                f = P.actInv(data.f[jid])
                ref = np.concatenate([f.linear, f.angular])
                sub = pin_transmitted_wrench(tree, data, b.name)
                assert rel_err(sub, ref) <= 1e-9          # the oracle against itself
            else:
                ref = pin_transmitted_wrench(tree, data, b.name)
            kinds.add(b.jtype)
            assert rel_err(R[b.name], ref) <= RTOL, (form, b.name, b.jtype, R[b.name], ref)
    assert {"welded", "custom", "spherical", "universal"} <= kinds


@pytest.mark.parametrize("form", FORMS)
def test_reactions_balance_random_tree(form, mixed_tree_generated):
    tree, gens = mixed_tree_generated
    q, qd = tree.random_state(np.random.default_rng(9))
    check_balance(Evaluated(gens[form], q, qd))


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", ["forces_demo", "governor"])
def test_reactions_balance_with_forces(name, form, models_dir):
    """All force types (joint springs, generalized forces with der(), body forces, spring-dampers)
    and a 3-coordinate joint: the reactions satisfy Newton-Euler and A_i^T R_i = Q_i != 0."""
    g = dynamica.generate(models_dir / f"{name}.yaml", form=form)
    rng = np.random.default_rng(3)
    coords = g.equations.coordinates
    q = dict(zip(coords, rng.uniform(-1.0, 1.0, len(coords))))
    qd = dict(zip(coords, rng.normal(0.0, 1.0, len(coords))))
    ev = Evaluated(g, q, qd, t=0.7)
    assert any(abs(v) > 1e-3 for v in ev.common_terms()[1].values())
    check_balance(ev)
    # and q'' is the composite form's
    ref = Evaluated(dynamica.generate(models_dir / f"{name}.yaml", form="composite"), q, qd, t=0.7).qdd()
    assert rel_err([ev.qdd()[c] for c in coords], [ref[c] for c in coords]) <= RTOL


# ------------------------------------------------------------------------------------------
# massless bodies

def _massless_model(leaf_mass):
    """base (revolute z) -> massless link (revolute y, no com/inertia) -> leaf (revolute x)."""
    leaf = {"name": "leaf", "parent": "link", "joint": [{"translate": [0.1, 0.0, -0.4]}, {"rotate": "x", "q": "c"}],
            "mass": leaf_mass}
    if leaf_mass:
        leaf.update(com=[0.05, 0.2, -0.1], inertia=[0.0, 0.0, 0.0])       # a point mass
    return {"name": "massless", "gravity": [0, 0, -9.81], "bodies": [
        {"name": "base", "parent": "ground", "joint": {"type": "revolute", "axis": "z", "q": "a"},
         "mass": 2.0, "com": [0.1, 0.0, 0.0], "inertia": [0.02, 0.03, 0.04]},
        {"name": "link", "parent": "base", "joint": [{"translate": [0.3, 0.0, 0.0]}, {"rotate": "y", "q": "b"}],
         "mass": 0},
        leaf]}


@pytest.mark.parametrize("form", FORMS)
def test_massless_link_and_point_mass_leaf(form, tmp_path):
    """M*_leaf (a point mass) is singular, D_leaf is not; the massless link has M_i = 0."""
    path = write_model(tmp_path, _massless_model(1.5))
    q, qd = {"a": 0.3, "b": -0.7, "c": 1.1}, {"a": 0.5, "b": -1.2, "c": 0.8}
    ev = Evaluated(dynamica.generate(path, form=form), q, qd)
    ref = Evaluated(dynamica.generate(path, form="composite"), q, qd).qdd()
    assert rel_err(list(ev.qdd().values()), [ref[c] for c in ev.qdd()]) <= RTOL
    check_balance(ev)


@pytest.mark.parametrize("form", FORMS)
def test_massless_leaf_is_singular(form, tmp_path):
    path = write_model(tmp_path, _massless_model(0))
    with pytest.raises(ModelError, match="coordinate `c` moves no mass"):
        dynamica.generate(path, form=form)


# ------------------------------------------------------------------------------------------
# cost

@pytest.mark.slow
@pytest.mark.parametrize("form", FORMS)
def test_operation_count_linear_along_chain(form, tmp_path):
    """O(N) for the sweep forms, O(N^2) (and more) for composite: 20 vs 10 revolute links."""
    ops = {}
    for n in (10, 20):
        tree = random_tree("chain", n, ("revolute",), np.random.default_rng(5), name=f"c{n}", parametric=False)
        path = tmp_path / f"c{n}.yaml"
        write_yaml(tree, path)
        for f in (form, "composite"):
            g = dynamica.generate(path, form=f)
            ops[f, n] = next(k for k in g.module_ir.kernels if k.name == "dynamics").op_count()["total"]
    assert ops[form, 20] < 2.4 * ops[form, 10]
    assert ops[form, 20] < 0.7 * ops["composite", 20]
