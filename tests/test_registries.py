"""Every registry is complete: what a form, a force type or an integrator needs elsewhere is part
of its one record, and the consumers read the record (docs/design.md, "How to add ...").

  - every registered form has an acronym, a flop formula or the explicit NO_FORMULA, and states
    how its solve meets M's pivots and whether it inverts the body inertias;
  - every force type has a potential (or the explicit NO_POTENTIAL) and a law in the numeric
    reference whose fields are the loader's, and the reference raises on a type it has no law for;
  - every integrator name the loader accepts is one simulate runs, and runs it: the result agrees
    with scipy's DOP853 at tight tolerances (an independent integrator of the same RHS).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from dynamica.generator.cost import flops
from dynamica.generator.forms import ALIASES, EQUATION_FORMS, FORM_INFO, NUMERIC_FORMS
from dynamica.generator.mechanics import forces
from dynamica.generator.spec.model import load_model


def test_every_form_has_its_record():
    assert set(FORM_INFO) == set(EQUATION_FORMS) and set(NUMERIC_FORMS) <= set(FORM_INFO)
    for name, info in FORM_INFO.items():
        assert info.name == name and info.acronym and info.acronym == info.acronym.upper(), name
        assert all(ALIASES[a] == name for a in info.acronyms), name
        assert isinstance(info.pivots_of_m, bool), name
        assert info.cost is flops.NO_FORMULA or (callable(info.cost.flops) and info.cost.equation), name
        if info.inverts_body_inertias:
            equation, alternatives = info.inverts_body_inertias
            assert equation.startswith("(") and all(
                a.strip() in EQUATION_FORMS for a in alternatives.replace(" or ", ", ").split(",")), name
            assert not info.pivots_of_m, f"{name} inverts the body inertias, so it factors another matrix than M"


def test_every_formula_counts_and_the_table_order_is_chapter_4():
    # chapter 4's order of the formulas (4.1)-(4.7), written out here
    assert flops.FORMS == ("direct", "composite", "lagrange1", "iterative-m", "iterative-g", "articulated", "ltdl")
    t = flops.chain(3, 2)
    for f in flops.FORMS:
        c = flops.count(t, form=f, K=2)
        assert isinstance(c, Fraction) and c > 0, f
        assert flops.form_name(FORM_INFO[f].acronym) == f
    with pytest.raises(ValueError, match="needs K"):
        flops.count(t, form=flops.ITERATIVE[0])
    for f in set(FORM_INFO) - set(flops.FORMS):
        assert FORM_INFO[f].cost is flops.NO_FORMULA
        with pytest.raises(ValueError, match="unknown form"):
            flops.count(t, form=f)


#: the loader's field kinds that are scalar expressions ("constant": one without time or state) and 3-vectors
_SCALAR_KINDS, _VECTOR_KINDS = ("expr", "constant"), ("vector", "point")


def test_every_force_type_has_a_potential_and_a_reference_law():
    from dynamica.runtime.reference.forces import LAWS
    assert set(LAWS) == set(forces.FORCE_TYPES)
    for name, ft in forces.FORCE_TYPES.items():
        assert ft.potential is forces.NO_POTENTIAL or callable(ft.potential), name
        law = LAWS[name]
        # the reference declares its fields itself: they must be the loader's, kind by kind
        assert set(law.scalars) == {k for k, (kind, _) in ft.schema.items() if kind in _SCALAR_KINDS}, name
        assert set(law.vectors) == {k for k, (kind, _) in ft.schema.items() if kind in _VECTOR_KINDS}, name
        # a conservative element has its energy in the reference too; an applied force none (the
        # armatures' energy is kinetic: no potential in the generator, 1/2 a q'^2 or 1/2 a |w|^2 in the reference)
        kinetic = name in forces.ARMATURE_TYPES
        assert (law.energy is None) == (ft.potential is forces.NO_POTENTIAL and not kinetic), name


def test_every_contact_pair_type_has_its_reference_contact():
    """Each pair of shapes the loader accepts has its narrow phase in the generator, its own contact
    in the numeric reference (a plane against any shape one function), and the broad phase knows
    its point count."""
    from dynamica.generator.mechanics.broad_phase import POINTS
    from dynamica.generator.mechanics.contact import PAIRS
    from dynamica.generator.spec.contact_sections import PAIR_TYPES
    from dynamica.runtime.reference import forces as reference
    assert set(PAIRS) == set(PAIR_TYPES)
    for a, b in PAIR_TYPES:
        assert a == "plane" or (a, b) in reference._PAIRS, (a, b)
        assert (a, b) in POINTS, (a, b)


def _one_slider(force):
    return load_model({"name": "slider", "parameters": {"m": 2.0},
                       "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
                                   "mass": "m", "com": [0, 0, 0], "inertia": [1, 1, 1]}],
                       "forces": [force]})


def test_the_reference_raises_on_a_force_type_it_has_no_law_for(monkeypatch):
    from dynamica.runtime.reference.numeric import NumericReference
    monkeypatch.setitem(forces.FORCE_TYPES, "test_push", forces.ForceType(
        "test_push", {"coordinate": ("coordinate", forces.REQUIRED), "value": ("expr", forces.REQUIRED)},
        build=lambda ctx, f: {}, potential=forces.NO_POTENTIAL))
    spec = _one_slider({"type": "test_push", "name": "push", "coordinate": "x", "value": "3"})
    with pytest.raises(ValueError, match="`test_push`"):
        NumericReference(spec)
    # a known type goes through: the slider's q'' = F / m (a closed form)
    ref = NumericReference(_one_slider({"type": "generalized_force", "name": "push", "coordinate": "x",
                                        "value": "3"}))
    assert abs(ref.qdd([0.1], [0.2])[0] - 1.5) < 1e-14


def test_every_integrator_the_loader_accepts_is_one_simulate_runs(bundled):
    import dynamica
    from dynamica.errors import ModelError
    from dynamica.generator.spec.integrators import INTEGRATORS as RECORDS
    from dynamica.generator.spec.model import INTEGRATORS as NAMES
    from dynamica.runtime.integrators.simulate import INTEGRATORS, RUNNERS
    assert NAMES == tuple(RECORDS) and set(NAMES) == set(INTEGRATORS)
    assert all(r.kind in RUNNERS for r in RECORDS.values())
    base = {"name": "p", "bodies": [{"name": "b", "parent": "ground", "joint": [{"rotate": "x", "q": "a"}],
                                     "mass": 1, "com": [0, 0, -1], "inertia": [0, 0, 0]}]}
    for name in NAMES:
        assert load_model({**base, "simulate": {"integrator": name}}).simulate.integrator == name
    with pytest.raises(ModelError, match="unknown integrator"):
        load_model({**base, "simulate": {"integrator": "euler"}})
    tree, loops = bundled("double_pendulum"), bundled("slider_crank")
    for name, rec in RECORDS.items():
        m = loops if rec.kind == "ida" else tree
        ref = dynamica.simulate(m, t_end=0.5, output_step=0.25, method="DOP853", rtol=1e-12, atol=1e-12)
        r = dynamica.simulate(m, t_end=0.5, output_step=0.25, method=name, rtol=1e-9, atol=1e-9,
                              step=1e-3 if rec.kind == "stoermer" else None)
        # 1e-6: the tolerances above leave 1e-9..1e-8 of global error; a wrong runner is off by O(1)
        assert r.method == name and np.abs(r.q[-1] - ref.q[-1]).max() < 1e-6, name
