"""Every registered equation form against Pinocchio and against the numeric reference.

All forms agree with each other and with Pinocchio to 1e-10 relative in q'' (the
Hamiltonian forms in the state derivative, after conversion) at random states of chains,
stars and mixed trees with 1-, 2- and 3-DOF joints, offsets, products of inertia, prismatic
and driven joints, springs and body forces. The form list is the registry itself, so a new
form is tested without touching this file.

Oracles: Pinocchio's aba/crba for the random trees (tests/oracles/pin_trees.py), and for the
Hamiltonian forms the momenta pm = M q' and their rates pm' = M q'' + dM/dt q' (dM/dt = C + C^T of
Pinocchio's Coriolis matrix, q'' from aba); for the
bundled models with driven joints and force elements (which Pinocchio's models here do not
carry), the independent numpy reference (runtime/reference/numeric.py) via `check_against_reference`.
"""

from __future__ import annotations

import numpy as np
import pytest

import dynamica
from dynamica.generator.forms import EQUATION_FORMS
from dynamica.runtime.reference.check import check_against_reference

from helpers import rel_err as _rel
from oracles.pin_trees import mdot_v, random_tree, write_yaml

RTOL = 1e-10
FORMS = sorted(EQUATION_FORMS)

# name -> (kind, bodies, joint tokens, seed, keyword arguments)
TREES = {
    "chain6": ("chain", 6, (1, 2, 3), 401, {"prismatic": 0.3}),
    "mixed8": ("mixed", 8, (1, 2, 3, "custom", "welded"), 402, {}),
    "star10": ("star", 10, (1, 2, 3, "custom"), 403, {}),
}
SLOW_TREES = {"star10"}
BUNDLED = ("driven", "forces_demo", "governor")


@pytest.fixture(scope="module")
def tree_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("forms")
    out = {}
    for case, (kind, n, tokens, seed, kw) in TREES.items():
        tree = random_tree(kind, n, tokens, np.random.default_rng(seed), name=case, **kw)
        path = d / f"{case}.yaml"
        write_yaml(tree, path)
        out[case] = (tree, path)
    return out


def _lagrangian_vs_pinocchio(model, tree, seed):
    pin = pytest.importorskip("pinocchio")
    rng = np.random.default_rng(seed)
    order = list(model.coordinates)
    worst = 0.0
    for k in range(6):
        q, qd = tree.random_state(rng)
        ov = {} if k == 0 else tree.random_overrides(rng)
        pmodel, names = tree.to_pinocchio(tree.param_values(ov), split=True)
        data = pmodel.createData()
        qv = np.array([q[c] for c in names])
        vv = np.array([qd[c] for c in names])
        idx = [names.index(c) for c in order]
        a_full = pin.aba(pmodel, data, qv, vv, np.zeros(pmodel.nv))
        a = a_full[idx]
        M_full = pin.crba(pmodel, data, qv)
        M_full = np.triu(M_full) + np.triu(M_full, 1).T
        M = M_full[np.ix_(idx, idx)]
        qq, qqd = [q[c] for c in order], [qd[c] for c in order]
        t = 0.0 if k == 0 else float(rng.uniform(0.0, 3.0))       # no driven joints: t only passes through
        if model.kind == "hamiltonian":
            y = model.to_state(qq, qqd, t=t, params=ov or None)
            ydot = model.rhs(t, y, params=ov or None)
            worst = max(worst, _rel(y[model.n:], (M_full @ vv)[idx]),                    # pm = M q'
                        _rel(ydot[:model.n], qqd),                                       # q' back
                        _rel(ydot[model.n:], (M_full @ a_full + mdot_v(pmodel, data, qv, vv))[idx]))
        else:
            worst = max(worst, _rel(model.qdd(qq, qqd, t=t, params=ov or None), a))
        worst = max(worst, _rel(model.mass_matrix(qq, params=ov or None), M))
    return worst


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("case", [pytest.param(c, marks=[pytest.mark.slow] if c in SLOW_TREES else [])
                                  for c in TREES])
def test_random_tree_against_pinocchio(case, form, tree_files):
    tree, path = tree_files[case]
    model = dynamica.load(str(path), form=form)
    assert model.form == form
    worst = _lagrangian_vs_pinocchio(model, tree, seed=TREES[case][3] + 1)
    assert worst <= RTOL, f"{form} on {case}: worst relative error {worst:.3e}"
    rep = check_against_reference(model, samples=5, seed=7)
    assert rep.ok(RTOL), rep.text()


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("name", BUNDLED)
def test_bundled_against_reference(name, form, models_dir):
    """Driven joints, springs, dampers, body forces, vector parameters: numeric reference."""
    model = dynamica.load(str(models_dir / f"{name}.yaml"), form=form)
    rep = check_against_reference(model, samples=8, seed=3)
    assert rep.ok(RTOL), rep.text()
