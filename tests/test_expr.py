"""The restricted expression parser: the grammar of MODEL_FORMAT.md and nothing else."""

import pytest
import sympy as sp

from dynamica.generator import expr as ex

SCOPE = ex.Scope(scalars=frozenset({"m", "l", "g"}), vectors={"rc": 3}, coordinates=frozenset({"phi"}))
FORCE = SCOPE.child(coordinates_allowed=True)


@pytest.mark.parametrize("text, expected", [
    ("m*l**2/12", ex.param_symbol("m") * ex.param_symbol("l") ** 2 / 12),
    ("-rc[2] + 1", 1 - ex.param_symbol("rc", 2)),
    ("sin(t)*cos(pi/2)", sp.Integer(0)),
    ("atan2(m, l)", sp.atan2(ex.param_symbol("m"), ex.param_symbol("l"))),
    ("max(m, l, g)", sp.Max(ex.param_symbol("m"), ex.param_symbol("l"), ex.param_symbol("g"))),
    (2.5, sp.Float(2.5)),
    (3, sp.Integer(3)),
])
def test_accepts_grammar(text, expected):
    assert sp.simplify(ex.parse(text, SCOPE) - expected) == 0


def test_coordinates_and_rates_only_in_forces():
    e = ex.parse("-0.1*der(phi) + phi", FORCE)
    assert e.free_symbols == {ex.rate_symbol("phi"), ex.coord_symbol("phi")}
    with pytest.raises(ex.ExpressionError, match="allowed only in forces and outputs"):
        ex.parse("phi", SCOPE)
    with pytest.raises(ex.ExpressionError, match="allowed only in forces"):
        ex.parse("der(phi)", SCOPE)


@pytest.mark.parametrize("text, message", [
    ("__import__('os').system('true')", "only calls of the grammar's functions are allowed"),
    ("__import__('os')", "call of unknown function `__import__`"),
    ("m.__class__", "`Attribute` is not allowed"),
    ("lambda: 1", "`Lambda` is not allowed"),
    ("'abc'", "is not a number"),
    ("mm*2", "unknown name `mm` (did you mean `m`?)"),
    ("rc[3]", "index 3 out of range"),
    ("rc", "needs an index"),
    ("l[0]", "indexing is allowed only on vector parameters"),
    ("sin(m, l)", "takes 1 argument"),
    ("m +", "cannot parse"),
    ("m if l else g", "`IfExp` is not allowed"),
    ("[m, l]", "`List` is not allowed"),
    ("m // l", "operator `FloorDiv` is not allowed"),
    ("m / 0", "division by zero"),
    ("sqrt(x=1)", "keyword arguments"),
])
def test_rejects_everything_else(text, message):
    with pytest.raises(ex.ExpressionError) as info:
        ex.parse(text, SCOPE)
    assert message in str(info.value)
    assert repr(text) in str(info.value)


def test_never_evaluates(monkeypatch):
    import builtins
    monkeypatch.setattr(builtins, "eval", lambda *a, **k: pytest.fail("eval called"))
    monkeypatch.setattr(sp, "sympify", lambda *a, **k: pytest.fail("sympify called"))
    assert ex.parse("m*g*l*cos(t)", SCOPE) is not None
