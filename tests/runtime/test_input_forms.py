"""Inputs given to an evaluation (`model.qdd(inputs=...)`, `rhs`, `outputs`, the derivatives' `u=`,
`statics(u=)`) as a mapping name -> value or as values in the model's order: the same numbers
everywhere, against the closed form of the oscillator (tests/helpers.py) m x'' = -k x - c x' + u;
a wrong key, length or value is one InputError naming the model file and what is wrong."""

import numpy as np
import pytest

import dynamica
from dynamica.errors import InputError
from dynamica.runtime.kinds.derivatives import derivatives

from helpers import oscillator

m, k, c = 2.0, 50.0, 0.3                   # the oscillator's parameters (tests/helpers.py)
X, XD, U = 0.12, -0.7, 3.5


def qdd_closed_form(x, xd, u):
    return (-k * x - c * xd + u) / m


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return dynamica.load(str(oscillator(tmp_path_factory.mktemp("osc_u"), inputs=True)))


FORMS = [{"u": U}, [U], (U,), np.array([U]), U]


@pytest.mark.parametrize("given", FORMS, ids=["dict", "list", "tuple", "array", "scalar"])
def test_every_evaluation_takes_both_forms(model, given):
    """1e-13: one division and three products of O(10) numbers in double precision."""
    expect = qdd_closed_form(X, XD, U)
    assert model.qdd([X], [XD], inputs=given)[0] == pytest.approx(expect, rel=1e-13)
    assert model.rhs(0.0, [X, XD], inputs=given)[1] == pytest.approx(expect, rel=1e-13)
    assert model.outputs(0.0, [X], [XD], inputs=given)["u"] == pytest.approx(U, rel=1e-15)
    d = derivatives(model)
    assert d.qdd([X], [XD], u=given)[0] == pytest.approx(expect, rel=1e-13)
    qdd, Jq, Jqd = d.qdd_jacobian([X], [XD], u=given)
    assert qdd[0] == pytest.approx(expect, rel=1e-13)
    assert (Jq[0, 0], Jqd[0, 0]) == pytest.approx((-k / m, -c / m), rel=1e-13)
    assert d.residual([X], [XD], [0.0], u=given)[0] == pytest.approx(-m * expect, rel=1e-13)
    J = d.signal_jacobian([X], [XD], [0.0], u=given)
    assert J["r"][0] == pytest.approx(-m * expect, rel=1e-13) and J["r_u"][0, 0] == pytest.approx(-1.0, rel=1e-13)
    assert dynamica.statics(model, u=given).q[0] == pytest.approx(U / k, rel=1e-10)   # k x = u


def test_no_inputs_or_empty_ones_are_zeros(model):
    for given in (None, {}, []):
        assert model.qdd([X], [XD], inputs=given)[0] == pytest.approx(qdd_closed_form(X, XD, 0.0), rel=1e-13)
        assert derivatives(model).qdd([X], [XD], u=given)[0] == pytest.approx(qdd_closed_form(X, XD, 0.0), rel=1e-13)


@pytest.mark.parametrize("given, match", [
    ({"v": 1.0}, r"oscillator_u\.yaml: `(inputs|u)`: unknown input\(s\) `v`; the model's inputs are u"),
    ([1.0, 2.0], r"oscillator_u\.yaml: `(inputs|u)` has 2 value\(s\), expected 1: one per input of the model, "
                 r"in the order u"),
    ({"u": float("nan")}, r"input `u` \(`(inputs|u)`\): the value nan is not finite"),
    (["a"], r"input `u` \(`(inputs|u)`\): expected a number, found str 'a'"),
    ("u", r"`(inputs|u)`: expected a mapping \{input name: value\} or a sequence"),
    ([[1.0], [2.0]], r"`(inputs|u)`: expected a mapping \{input name: value\} or a flat sequence"),
])
def test_a_wrong_key_length_or_value_is_named(model, given, match):
    with pytest.raises(InputError, match=match):
        model.qdd([X], [XD], inputs=given)
    with pytest.raises(InputError, match=match):
        derivatives(model).qdd([X], [XD], u=given)
    with pytest.raises(InputError, match=match):
        derivatives(model).signal_jacobian([X], [XD], [0.0], u=given)
