"""The restricted expression parser: the grammar of docs/model_format.md and nothing else."""

import math

import pytest
import sympy as sp

from dynamica.generator.spec import expr as ex

from helpers import within_bound

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


# ---------------------------------------------------------------- bounds
VALUED = SCOPE.child(values={"m": 1.0, "l": 2.0, "g": 9.81, "rc": (0.5, 0.25, -4.0)})


@pytest.mark.parametrize("text, message", [
    ("9**9**9**9", "the exponent of `9**9**9` is too large"),
    ("10**10**10", "the exponent of `10**10**10` is too large"),
    ("(2*m)**10**10", "is too large (at most 1000)"),        # sympy would distribute: 2**(10**10) * m**(10**10)
    ("2**-10**8", "is too large (at most 1000)"),
    ("10**400", "`10**400` is too large a constant to fold exactly (more than 331 digits)"),
    ("(1/10)**400", "`(1/10)**400` is too small a constant to fold exactly"),
    ("(1/3 + 1/7)**-300", "is too large a constant to fold exactly"),
    ("(" + "+".join(f"1/{p}" for p in sp.primerange(2, 1000)) + ")*m", "an exact constant too large to fold"),
    ("1e400", "`1e400` is too large: not a finite double"),
    ("10**300*10**300", "`10**300*10**300` is too large"),
    ("exp(exp(exp(10)))", "`exp(exp(10))` is too large"),
    ("exp(10**300*log(2))", "is too large"),                   # sympy would rewrite it as 2**(10**300)
    ("1" + "0" * 400, "is too large"),
    ("1" + "0" * 5000, "cannot parse"),                        # Python's own limit on integer literals
    ("m*10**200*10**200", "a constant is too large"),          # folded by sympy's Mul, not by the twin
    ("sqrt(-1)", "`sqrt(-1)` is not a finite real number"),
    ("log(0)", "`log(0)` is not a finite real number"),
    ("(-8)**(1/3)", "is not a finite real number"),
    ("0**-1", "division by zero"),
    ("tan(pi/2)", "a pole or an undefined value"),
    ("atan2(0, 0)", "not a finite real number"),
    ("-" * 200 + "1", "nesting deeper than 100"),
    ("(" * 1000 + "1" + ")" * 1000, "cannot parse"),
    ("1+" * 4000 + "1", "too deeply nested for Python's parser"),
    ("m" * 10001, "longer than 10000 characters"),
], ids=range(25))
def test_bounded(text, message):
    def refused():
        with pytest.raises(ex.ExpressionError) as info:
            ex.parse(text, SCOPE)
        return info.value
    error = within_bound(refused, 0.5)
    assert message in str(error), str(error)
    assert len(str(error)) < 500


@pytest.mark.parametrize("text, value", [
    ("2**1000", 2.0 ** 1000),
    ("(1/2)**1000", 0.5 ** 1000),
    ("sin(1)" + "+sin(1)" * 1200, 1201 * math.sin(1)),        # a long sum is flat, not a deep recursion
    ("1e-400", 0.0),
    ("m*l**2/12 + rc[2]", 1.0 * 2.0 ** 2 / 12 - 4.0),
    ("heaviside(m - 1) + sign(-l) + min(m, l, g) + abs(-g)", 0.5 - 1 + 1 + 9.81),
    ("-(" * 90 + "m" + ")" * 90, 1.0),
], ids=range(7))
def test_value_in_double_arithmetic(text, value):
    e, v = ex.parse_value(text, VALUED)
    assert v == pytest.approx(value, rel=1e-13, abs=1e-300)
    if e.free_symbols == set():
        assert float(e) == pytest.approx(value, rel=1e-13, abs=1e-300)


@pytest.mark.parametrize("text, message", [
    ("1/(m - 1)", "division by zero in `1/(m - 1)` (with the parameters at their default values)"),
    ("sqrt(m - l)", "`sqrt(m - l)` is not a finite real number (with the parameters"),
    ("exp(1000*m)", "`exp(1000*m)` is too large"),
    ("rc[1]**-m + log(rc[2])", "`log(rc[2])` is not a finite real number"),
])
def test_value_at_defaults_is_finite(text, message):
    ex.parse(text, SCOPE)                    # fine without values: the expression itself is legal
    with pytest.raises(ex.ExpressionError) as info:
        ex.parse_value(text, VALUED)
    assert message in str(info.value), str(info.value)


def test_no_value_without_one_for_every_name():
    assert ex.parse_value("m*t + 1", VALUED)[1] is None
    assert ex.parse_value("phi + m", FORCE.child(values=VALUED.values))[1] is None
    assert ex.parse_value("m*l", SCOPE)[1] is None
