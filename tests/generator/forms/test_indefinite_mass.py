"""Negative masses: random trees with cut-outs and with bodies of negative
mass and negative definite inertia, against Pinocchio, in every form, mode and backend.

The model format allows a negative mass (a cut-out subtracted from a body). Two situations:
  * cut-outs welded to heavier bodies: every body inertia of the combined system is physical
    and M is positive definite, but single body inertias M_i are negative definite, which the
    forms that invert them (lagrange1, hamilton-lagrange1) must take;
  * bodies of negative mass on joints of their own: M is regular but indefinite, which the
    root-free factorization M = L^T D L (generator/forms/parts/cholesky.py) solves where the old
    square-root L^T L could not (loading failed).
Singular mass matrices stay errors naming the coordinates, and a zero pivot of the
factorization of a regular indefinite M is an error naming the coordinate.

Oracle: Pinocchio, with the model built by `RandomTree.to_pinocchio(signed=True)` (inertias from
their dynamic parameters; pin.Inertia's constructor wants a positive inertia and its operator+=
divides by max(total mass, eps)). pin.crba sums inertias with that operator, so M is taken from
pin.rnea (M e_k = rnea(q, 0, e_k) - rnea(q, 0, 0)); q'' from pin.aba (6x6 matrices, no
Inertia sums). The Hamiltonian forms' pm' = dT/dq - g (Lagrange, no forces but gravity) takes
dT/dq by 4th-order central differences (h = 1e-3) of pin.computeKineticEnergy (linear in the
inertias; about 1e-13 accurate here): pin.computeCoriolisMatrix and the kinematic derivatives
disagree with dT/dq for Pinocchio's composite joints, which the random trees use.
The first layer checks these against each other, against the default builder (positive
masses), against pin.computeCoriolisMatrix where it applies (1-DOF joints) and against the
numpy kinetic energy of the YAML bodies. Relative tolerance 1e-10 (|a - b| / max(1, |b|)), as
tests/test_oracle_pinocchio.py.
"""

from __future__ import annotations

import re
import shutil
import warnings

import numpy as np
import pytest

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.spec.model import DynamicaWarning

pin = pytest.importorskip("pinocchio")

from conftest import write_model  # noqa: E402
from oracles.pin_trees import Body, random_tree, write_yaml, yaml_body_mass_props, yaml_kinetic_energy  # noqa: E402

RTOL = 1e-10
N_STATES = 6

LAGRANGIAN = ("composite", "direct", "lagrange1", "iterative-m", "iterative-g", "articulated", "ltdl")
HAMILTONIAN = ("hamilton-composite", "hamilton-lagrange1", "hamilton-articulated", "hamilton-ltdl")
NUMERIC = ("composite", "articulated", "ltdl")
#: (case, form, mode/backend) run by default: on the indefinite chain one form per
#: factorization (sparse M, joint blocks, H of Lagrange I, the iterative solver, a Hamiltonian
#: sweep), numeric mode and Fortran; on the cut-outs the form that inverts body inertias; the
#: rest is marked slow (`pytest -m slow`)
DEFAULT = {("negative_chain6", f, "") for f in ("composite", "articulated", "lagrange1", "iterative-m",
                                                 "hamilton-ltdl")} | {
    ("negative_chain6", "ltdl", "numeric"), ("negative_chain6", "composite", "fortran"),
    ("cutouts_mixed7", "lagrange1", "")}

# name -> (kind, bodies, joint tokens, seed, random_tree keywords, negated bodies, cut-outs,
#          expected sign pattern of M: "definite" or "indefinite")
CASES = {
    "cutouts_mixed7": ("mixed", 7, (1, 2, 3), 1201, {}, 0, 3, "definite"),
    "negative_chain6": ("chain", 6, (1, 2, "custom"), 1202, {"parametric": False}, 2, 1, "indefinite"),
    "negative_star7_free": ("star", 7, (1, 2, 3), 1203, {"base_joint": "free"}, 2, 0, "indefinite"),
}


# ------------------------------------------------------------------------------------------
# trees with negative masses

def _negate_entry(tree, body, key, factor):
    """Multiply a body's mass or inertia by `factor` (< 0), as a literal or in its parameter."""
    expr = getattr(body, key)
    if isinstance(expr, str) and expr in tree.defaults:                 # a parameter
        v = tree.defaults[expr]
        new = tuple(factor * x for x in v) if isinstance(v, tuple) else factor * v
        tree.defaults[expr] = new
        spec = tree.model_dict["parameters"][expr]
        val = list(new) if isinstance(new, tuple) else new
        if isinstance(spec, dict):
            spec["value"] = val
        else:
            tree.model_dict["parameters"][expr] = val
        return
    if isinstance(expr, dict):
        new = {k: factor * v for k, v in expr.items()}
    elif isinstance(expr, list):
        new = [factor * v for v in expr]
    else:
        new = factor * float(expr)
    setattr(body, key, new)
    next(b for b in tree.model_dict["bodies"] if b["name"] == body.name)[key] = new


def _cutout(tree, parent, rng):
    """A welded child of `parent` with a negative fraction of its mass and inertia, at a small
    offset from its centre of mass: a hole, so the combined body stays physical."""
    m, c, Ic = yaml_body_mass_props(tree.model_dict, tree.param_values())[parent.name]
    f = float(rng.uniform(0.15, 0.35))
    at = [round(float(x), 6) for x in c + rng.uniform(-0.04, 0.04, size=3)]
    inertia = [round(float(-f ** (5 / 3) * x), 9) for x in (Ic[0, 0], Ic[1, 1], Ic[2, 2], Ic[0, 1], Ic[1, 2], Ic[0, 2])]
    name = f"cut_{parent.name}"
    joint = [{"translate": at}]
    body = Body(name, parent.name, "welded", joint, joint, round(float(-f * m), 6), [0.0, 0.0, 0.0], inertia)
    tree.bodies.insert(tree.bodies.index(parent) + 1, body)
    tree.model_dict["bodies"].append({"name": name, "parent": parent.name, "joint": joint, "mass": body.mass,
                                      "com": body.com, "inertia": inertia})


def make_tree(case):
    kind, n, tokens, seed, kw, n_neg, n_cut, _ = CASES[case]
    rng = np.random.default_rng(seed)
    tree = random_tree(kind, n, tokens, rng, name=case, **kw)
    jointed = [b for b in tree.bodies if b.coords]
    for b in rng.choice(np.array(jointed[1:], dtype=object), size=n_neg, replace=False):
        factor = -float(rng.uniform(0.3, 0.8))
        _negate_entry(tree, b, "mass", factor)
        _negate_entry(tree, b, "inertia", factor)
    tree.fixed = set()                  # parameters `overrides` leaves alone: those of the holed bodies
    for b in rng.choice(np.array(jointed, dtype=object), size=n_cut, replace=False):
        _cutout(tree, b, rng)
        tree.fixed |= {p for p in (f"m_{b.name}", f"c_{b.name}", f"I_{b.name}") if p in tree.defaults}
    return tree


def overrides(tree, rng):
    """Random parameter values that keep the signs of the masses and inertias."""
    ov = {k: v for k, v in tree.random_overrides(rng).items() if k not in getattr(tree, "fixed", ())}
    for name, v in list(ov.items()):
        kind = tree.param_kinds[name][0]
        old = tree.defaults[name]
        if kind == "mass" and old < 0:
            ov[name] = -v
        elif kind == "inertia" and old[0] < 0:
            ov[name] = tuple(-x for x in v)
    return ov


def states(tree, seed, n=N_STATES):
    """(q, qd, overrides): the first at the default parameters."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(n):
        q, qd = tree.random_state(rng)
        out.append((q, qd, {} if k == 0 else overrides(tree, rng)))
    return out


def rel_err(a, b):
    return float(np.linalg.norm(np.asarray(a) - np.asarray(b)) / max(1.0, np.linalg.norm(b)))


class Oracle:
    """Pinocchio's answers at one state, in the coordinate order `order`."""

    def __init__(self, tree, q, qd, ov, order):
        pmodel, names = tree.to_pinocchio(tree.param_values(ov), signed=True)
        data = pmodel.createData()
        qv = np.array([q[c] for c in names])
        vv = np.array([qd[c] for c in names])
        z = np.zeros(pmodel.nv)
        idx = [names.index(c) for c in order]
        self.M = self._mass(pmodel, data, qv)[np.ix_(idx, idx)]
        self.qdd = pin.aba(pmodel, data, qv, vv, z)[idx]
        self.pmd = self._momentum_rate(pmodel, data, qv, vv)[idx]
        self.qd = vv[idx]

    @staticmethod
    def _mass(pmodel, data, qv):
        z = np.zeros(pmodel.nv)
        b0 = pin.rnea(pmodel, data, qv, z, z).copy()
        return np.column_stack([pin.rnea(pmodel, data, qv, z, e) - b0 for e in np.eye(pmodel.nv)])

    @staticmethod
    def _momentum_rate(pmodel, data, qv, vv, h=1e-3):
        """pm' = dT/dq - g: T by pin.computeKineticEnergy, dT/dq by the 4th-order stencil."""
        T = lambda x: pin.computeKineticEnergy(pmodel, data, x, vv)  # noqa: E731
        dT = [(T(qv - 2 * h * e) - 8 * T(qv - h * e) + 8 * T(qv + h * e) - T(qv + 2 * h * e)) / (12 * h)
              for e in np.eye(pmodel.nv)]
        z = np.zeros(pmodel.nv)
        return np.array(dT) - pin.rnea(pmodel, data, qv, z, z)


_CASES = {}


def case_files(name, tmp_path_factory):
    """(tree, path of its YAML) of a case, built once per session."""
    if name not in _CASES:
        tree = make_tree(name)
        path = tmp_path_factory.mktemp("indefinite") / f"{name}.yaml"
        write_yaml(tree, path)
        _CASES[name] = tree, path
    return _CASES[name]


def params(forms, variant=""):
    """(case, form) pairs, slow unless in DEFAULT."""
    return [pytest.param(c, f, id=f"{c}-{f}", marks=[] if (c, f, variant) in DEFAULT else [pytest.mark.slow])
            for c in CASES for f in forms]


_MODELS = {}


def load(path, form, **kw):
    key = (str(path), form, tuple(sorted(kw.items())))
    if key not in _MODELS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DynamicaWarning)
            _MODELS[key] = dynamica.load(path, form=form, **kw)
    return _MODELS[key]


# ------------------------------------------------------------------------------------------
# layer 1: the signed Pinocchio model against itself, the default builder and numpy

@pytest.mark.parametrize("tokens", [(1, "welded"), (1, 2, 3, "custom", "welded")], ids=["1dof", "multidof"])
def test_signed_builder_equals_default_builder_for_positive_masses(tokens):
    """M (rnea columns) and aba of the signed model == crba and aba of the default builder; with
    1-DOF joints pm' (differences of T) == C^T q' - g of pin.computeCoriolisMatrix."""
    tree = random_tree("mixed", 8, tokens, np.random.default_rng(1299))
    for q, qd, ov in states(tree, 5, 3):
        vals = tree.param_values(ov)
        (a, na), (b, nb) = tree.to_pinocchio(vals), tree.to_pinocchio(vals, signed=True)
        assert na == nb
        da, db = a.createData(), b.createData()
        qv, vv = np.array([q[c] for c in na]), np.array([qd[c] for c in na])
        M = pin.crba(a, da, qv)
        M = np.triu(M) + np.triu(M, 1).T
        assert rel_err(Oracle._mass(b, db, qv), M) < 1e-13
        assert rel_err(pin.aba(b, db, qv, vv, np.zeros(b.nv)), pin.aba(a, da, qv, vv, np.zeros(a.nv))) < 1e-12
        if tokens[0] == 1 and len(tokens) == 2:
            C = pin.computeCoriolisMatrix(a, da, qv, vv)
            want = C.T @ vv - pin.computeGeneralizedGravity(a, da, qv)
            assert rel_err(Oracle._momentum_rate(b, db, qv, vv), want) < 1e-11


@pytest.mark.parametrize("name", CASES)
def test_signed_builder_with_negative_masses(name, tmp_path_factory):
    """0.5 v'Mv == pin.computeKineticEnergy == kinetic energy of the YAML bodies (numpy); aba
    solves M qdd = -nle; pm' of the oracle == M q'' + M' q' with M' by differences of M along q';
    M has the sign pattern the case is about and is not ill-conditioned."""
    tree, _ = case_files(name, tmp_path_factory)
    want = CASES[name][-1]
    for k, (q, qd, ov) in enumerate(states(tree, 7)):
        vals = tree.param_values(ov)
        pmodel, names = tree.to_pinocchio(vals, signed=True)
        data = pmodel.createData()
        qv, vv, z = np.array([q[c] for c in names]), np.array([qd[c] for c in names]), np.zeros(pmodel.nv)
        M = Oracle._mass(pmodel, data, qv)
        w = np.linalg.eigvalsh(M)
        assert (w.min() > 0) == (want == "definite"), f"{name} state {k}: eigenvalues {w}"
        assert np.abs(w).min() > 1e-6 * np.abs(w).max(), f"{name} state {k}: ill-conditioned, {w}"
        T = 0.5 * vv @ M @ vv
        assert T == pytest.approx(pin.computeKineticEnergy(pmodel, data, qv, vv), rel=1e-12)
        assert T == pytest.approx(yaml_kinetic_energy(tree.model_dict, vals, q, qd), rel=1e-7)
        nle = pin.rnea(pmodel, data, qv, vv, z)
        a = pin.aba(pmodel, data, qv, vv, z)
        assert rel_err(a, np.linalg.solve(M, -nle)) < 1e-9
        h = 1e-3
        Mt = lambda t: Oracle._mass(pmodel, data, qv + t * vv)  # noqa: E731
        dM = (Mt(-2 * h) - 8 * Mt(-h) + 8 * Mt(h) - Mt(2 * h)) / (12 * h)
        assert rel_err(Oracle._momentum_rate(pmodel, data, qv, vv), M @ a + dM @ vv) < 1e-9
    masses = yaml_body_mass_props(tree.model_dict, tree.param_values())
    assert any(m < 0 for m, _, _ in masses.values()), "the case has no body of negative mass"


# ------------------------------------------------------------------------------------------
# layer 2: dynamica against Pinocchio

def _check_lagrangian(model, tree, name, tag):
    for k, (q, qd, ov) in enumerate(states(tree, 11)):
        o = Oracle(tree, q, qd, ov, model.coordinates)
        qv, vv = [q[c] for c in model.coordinates], [qd[c] for c in model.coordinates]
        assert rel_err(model.mass_matrix(qv, params=ov), o.M) <= RTOL, f"{name} {tag} state {k}: M"
        e = rel_err(model.qdd(qv, vv, params=ov), o.qdd)
        assert e <= RTOL, f"{name} {tag} state {k}: qdd rel. error {e:.2e}"


@pytest.mark.parametrize("name, form", params(LAGRANGIAN))
def test_lagrangian_forms(name, form, tmp_path_factory):
    tree, path = case_files(name, tmp_path_factory)
    _check_lagrangian(load(path, form), tree, name, form)


@pytest.mark.parametrize("name, form", params(HAMILTONIAN))
def test_hamiltonian_forms(name, form, tmp_path_factory):
    """rhs at [q, pm = M q'] gives back q' and pm' = dT/dq - g."""
    tree, path = case_files(name, tmp_path_factory)
    model = load(path, form)
    n = model.n
    for k, (q, qd, ov) in enumerate(states(tree, 11)):
        o = Oracle(tree, q, qd, ov, model.coordinates)
        qv = np.array([q[c] for c in model.coordinates])
        assert rel_err(model.mass_matrix(qv, params=ov), o.M) <= RTOL, f"{name} {form} state {k}: M"
        ydot = model.rhs(0.0, np.concatenate([qv, o.M @ o.qd]), params=ov)
        assert rel_err(ydot[:n], o.qd) <= RTOL, f"{name} {form} state {k}: q'"
        assert rel_err(ydot[n:], o.pmd) <= RTOL, f"{name} {form} state {k}: pm'"


@pytest.mark.parametrize("name, form", params(NUMERIC, "numeric"))
def test_numeric_mode(name, form, tmp_path_factory):
    tree, path = case_files(name, tmp_path_factory)
    _check_lagrangian(load(path, form, mode="numeric"), tree, name, f"numeric {form}")


needs_gfortran = pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran is not installed")


@needs_gfortran
@pytest.mark.parametrize("name, form", params(("composite", "lagrange1", "articulated", "ltdl"), "fortran"))
def test_fortran_backend(name, form, tmp_path_factory):
    tree, path = case_files(name, tmp_path_factory)
    _check_lagrangian(load(path, form, backend="fortran"), tree, name, f"fortran {form}")


def test_iterative_form_iterates_on_an_indefinite_mass_matrix(tmp_path_factory):
    """Nearby states: after the first (direct) solve the quasi-Newton iteration (2.29) does the
    work, with an indefinite M, and q'' is Pinocchio's to 1e-10."""
    tree, path = case_files("negative_chain6", tmp_path_factory)
    model = load(path, "iterative-g")
    model.reset_solver()
    q0, qd0 = tree.random_state(np.random.default_rng(3))
    rng = np.random.default_rng(4)
    for k in range(12):
        q = {c: v + 1e-3 * k * rng.normal() for c, v in q0.items()}
        o = Oracle(tree, q, qd0, {}, model.coordinates)
        assert np.linalg.eigvalsh(o.M).min() < 0
        got = model.qdd([q[c] for c in model.coordinates], [qd0[c] for c in model.coordinates])
        assert rel_err(got, o.qdd) <= RTOL, f"step {k}"
    st = model.solver_stats()
    assert st["directs"] == 1 and st["iterations"] > 0, st


# ------------------------------------------------------------------------------------------
# singular and indefinite: what loading says

def _pendulum(second, params=None):
    """Two links on parallel x axes; the second link's entries replaced by `second`."""
    link2 = {"name": "link2", "parent": "link1", "joint": [{"translate": [0, 0, -1.0]}, {"rotate": "x", "q": "b"}],
             "mass": 1.0, "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01]}
    link2.update(second)
    d = {"name": "pendulum2", "gravity": [0, 0, -9.81], "bodies": [
        {"name": "link1", "parent": "ground", "joint": [{"rotate": "x", "q": "a"}],
         "mass": 2.0, "com": [0, 0, -0.5], "inertia": [0.2, 0.2, 0.02]}, link2],
        "initial": {"a": 0.3, "b": 0.4}}
    if params:
        d["parameters"] = params
    return d


def _cut_out_all_of_link2():
    """link2 and a welded hole that removes it exactly (the hole's mass a parameter, so the sum
    does not fold to zero when the code is generated): `b` moves no mass, M is singular."""
    d = _pendulum({})
    d["parameters"] = {"mh": -1.0, "Ih": [-0.1, -0.1, -0.01]}
    d["bodies"].append({"name": "hole", "parent": "link2", "joint": [{"translate": [0, 0, 0]}],
                        "mass": "mh", "com": [0, 0, -0.5], "inertia": "Ih"})
    return d


@pytest.mark.parametrize("form", ["composite", "articulated", "hamilton-ltdl"])
def test_singular_mass_matrix_is_an_error_naming_the_coordinate(tmp_path, form):
    path = write_model(tmp_path, _cut_out_all_of_link2())
    with pytest.warns(DynamicaWarning), pytest.raises(ModelError) as err:
        dynamica.load(path, form=form)
    text = str(err.value)
    assert "singular" in text and "`b`" in text and "`a`" not in text.split("null vector")[1]
    assert "`hole`" in text and "massless" not in text                 # the cause, not the old hint


def test_singular_mass_matrix_of_positive_masses_keeps_the_massless_hint(tmp_path):
    path = write_model(tmp_path, _pendulum({"mass": "m2", "inertia": [0, 0, 0]}, params={"m2": 0.0}))
    with pytest.raises(ModelError, match=r"singular.*`b`.*massless"):
        dynamica.load(path)


def test_indefinite_mass_matrix_warns_and_loads(tmp_path):
    path = write_model(tmp_path, _pendulum({"mass": -0.5, "inertia": [-0.05, -0.05, -0.005]}))
    with pytest.warns(DynamicaWarning) as caught:
        model = dynamica.load(path)
    assert any(re.search(r"mass matrix is indefinite.*`link2`", str(w.message)) for w in caught)
    assert np.linalg.eigvalsh(model.mass_matrix([0.3, 0.4])).min() < 0


def test_zero_pivot_of_a_regular_indefinite_mass_matrix_is_an_error(tmp_path):
    """link2 has no inertia about its own axis (I_xx = -m r^2, a parameter so nothing folds)
    while it couples to link1: M = [[x, y], [y, 0]] is regular, its last pivot is zero."""
    path = write_model(tmp_path, _pendulum({"inertia": ["Ixx", 0.1, 0.01]}, params={"Ixx": -0.25}))
    with pytest.warns(DynamicaWarning, match="indefinite"), pytest.raises(ModelError, match=r"zero pivot.*`b`"):
        dynamica.load(path, form="composite")
    model = load(path, "lagrange1")                                    # another matrix, no zero pivot
    M = model.mass_matrix([0.3, 0.4])
    assert abs(M[1, 1]) < 1e-14 and abs(np.linalg.det(M)) > 0.1


def test_structural_zero_pivot_names_the_negative_bodies(tmp_path):
    """The same with literal numbers: the pivot folds to 0 when the code is generated."""
    path = write_model(tmp_path, _pendulum({"inertia": [-0.25, 0.1, 0.01]}))
    with pytest.warns(DynamicaWarning), pytest.raises(ModelError, match=r"coordinate `b` moves no mass.*`link2`"):
        dynamica.generate(path, form="composite")


def test_lagrange1_takes_negative_definite_body_inertias(tmp_path):
    """A welded cut-out has an invertible (negative definite) M_i: hamilton-lagrange1 used to
    call it singular, lagrange1 returned NaN."""
    d = _pendulum({})
    d["bodies"].append({"name": "hole", "parent": "link2", "joint": [{"translate": [0, 0.02, -0.6]}],
                        "mass": -0.2, "com": [0, 0, 0], "inertia": [-0.002, -0.002, -0.001]})
    path = write_model(tmp_path, d)
    q, qd = [0.3, 0.4], [0.7, -0.2]
    got = load(path, "lagrange1").qdd(q, qd)
    assert np.all(np.isfinite(got)) and rel_err(got, load(path, "composite").qdd(q, qd)) <= RTOL
    m = load(path, "hamilton-lagrange1")
    assert rel_err(m.rhs(0.0, m.to_state(q, qd))[:2], qd) <= RTOL


@pytest.mark.parametrize("form", ["lagrange1", "hamilton-lagrange1"])
def test_a_massless_body_with_parameter_inertia_is_an_error_of_the_forms_that_invert_it(tmp_path, form):
    """A body of literal zero mass whose inertia is given by parameters (a reflected rotor): no
    value makes M_i invertible, so the forms of (2.24) and (1.64) refuse it when generated, naming
    the body (hamilton-lagrange1 crashed in lowering on the symbolic inverse, 1/0 = zoo)."""
    path = write_model(tmp_path, {
        "name": "rotor_link", "parameters": {"J": 2e-5, "N": 50.0},
        "gravity": [0, 0, -9.81],
        "bodies": [{"name": "link", "parent": "ground", "joint": [{"rotate": "y", "q": "phi"}], "mass": 1.0,
                    "com": [0.5, 0, 0], "inertia": [0.01, 0.08, 0.08]},
                   {"name": "rotor", "parent": "link", "joint": [], "mass": 0,
                    "com": [0, 0, 0], "inertia": [0, "N**2*J", 0]}]}, "rotor_link.yaml")
    with pytest.raises(ModelError, match=r"body `rotor`"):
        dynamica.generate(str(path), form=form)
