"""Tabulated functions (`functions:`, generator/mechanics/tables.py) against scipy's interpolators.

The compiled module's values, at the knots, between them and outside, equal scipy's
`interp1d` (linear and cubic), `CubicSpline`, `PchipInterpolator` and `RegularGridInterpolator`
to 1e-14 of the table's scale; their derivatives (a table driving a joint: the point's velocity
and acceleration are the first and second derivatives) equal the scipy splines' derivatives;
the IR interpreter equals the compiled code; table files are read relative to the model file and
are part of its cache key; bad tables are named in one ModelError.
"""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest
from scipy.interpolate import CubicSpline, PchipInterpolator, RegularGridInterpolator, interp1d, make_interp_spline

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.ir import nodes as ir
from dynamica.generator.spec.model import load_model

from conftest import write_model

RNG = np.random.default_rng(17)
X = np.cumsum(RNG.uniform(0.2, 1.0, 9)) - 1.0            # uneven knots from about -0.5 to 4
Y = RNG.normal(0.0, 2.0, 9)
GX, GY = np.array([-1.0, -0.2, 0.5, 1.5]), np.array([0.0, 0.3, 1.1])
GZ = RNG.normal(0.0, 1.0, (4, 3))
INTERPOLATIONS = ("linear", "cubic", "pchip")
EXTRAPOLATIONS = ("hold", "extrapolate")


def _pendulum(functions, expressions, bodies=None, outputs=None):
    out = {"expressions": expressions, **(outputs or {})}
    return {"name": "tables", "parameters": {"g": 9.81}, "gravity": [0, 0, "-g"], "functions": functions,
            "bodies": bodies or [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}],
                                  "mass": 1.0, "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01]}],
            "outputs": out}


@pytest.fixture(scope="module")
def tables_model(tmp_path_factory):
    fns, exprs = {}, {}
    for interp in INTERPOLATIONS:
        for ext in EXTRAPOLATIONS:
            name = f"f_{interp}_{ext}"
            fns[name] = {"x": X.tolist(), "y": Y.tolist(), "interpolation": interp, "extrapolation": ext}
            exprs[name] = f"{name}(t)"
    for ext in EXTRAPOLATIONS:
        fns[f"g_{ext}"] = {"x": GX.tolist(), "y": GY.tolist(), "z": GZ.tolist(), "extrapolation": ext}
        exprs[f"g_{ext}"] = f"g_{ext}(t, 3*t - 2)"
    path = write_model(tmp_path_factory.mktemp("tables"), _pendulum(fns, exprs))
    return dynamica.load(path)


def _at(model, t, key):
    return np.array([model.outputs(tk, [0.0], [0.0])[key] for tk in t])


#: where the tables are evaluated: the knots, midpoints, random points and both sides outside
T1 = np.concatenate([X, (X[1:] + X[:-1]) / 2, RNG.uniform(X[0], X[-1], 40), [X[0] - 1.3, X[0] - 1e-9, X[-1] + 1e-9,
                                                                              X[-1] + 2.2]])


def _scipy_1d(interp, ext, t):
    hold = ext == "hold"
    tt = np.clip(t, X[0], X[-1]) if hold else t
    if interp == "linear":
        return [interp1d(X, Y, fill_value="extrapolate")(tt)]
    if interp == "cubic":
        return [CubicSpline(X, Y)(tt), interp1d(X, Y, kind="cubic", fill_value="extrapolate")(tt)]
    return [PchipInterpolator(X, Y)(tt)]


@pytest.mark.parametrize("interp", INTERPOLATIONS)
@pytest.mark.parametrize("ext", EXTRAPOLATIONS)
def test_one_variable_equals_scipy(tables_model, interp, ext):
    """At and between the knots every oracle to 1e-14 of the table's scale; outside them (`hold`:
    scipy at the nearest knot; `extrapolate`: the end piece continued) the PPoly oracles to 1e-14
    of the value there (interp1d's B-spline cubic differs from CubicSpline by 2e-14 far outside)."""
    got = _at(tables_model, T1, f"f_{interp}_{ext}")
    scale = np.abs(Y).max()
    inside = (T1 >= X[0]) & (T1 <= X[-1])
    refs = _scipy_1d(interp, ext, T1)
    for ref in refs:
        err = np.abs(got - ref)[inside].max() / scale
        assert err <= 1e-14, (interp, ext, err)
    outside = np.abs(got - refs[0])[~inside] / np.maximum(scale, np.abs(refs[0][~inside]))
    assert outside.max() <= 1e-14, (interp, ext, outside)


@pytest.mark.parametrize("ext", EXTRAPOLATIONS)
def test_two_variables_equal_regular_grid_interpolator(tables_model, ext):
    # (t, 3 t - 2) runs from below both grids to above them, through knots of x and y
    t = np.concatenate([GX, (GY + 2) / 3, np.linspace(-1.5, 2.5, 57)])
    got = _at(tables_model, t, f"g_{ext}")
    pts = np.stack([t, 3 * t - 2], axis=-1)
    if ext == "hold":
        pts = np.stack([np.clip(pts[:, 0], GX[0], GX[-1]), np.clip(pts[:, 1], GY[0], GY[-1])], axis=-1)
    ref = RegularGridInterpolator((GX, GY), GZ, bounds_error=False, fill_value=None)(pts)
    assert np.abs(got - ref).max() <= 1e-14 * np.abs(GZ).max()


def test_derivatives_through_a_driven_joint(tmp_path):
    """A table as a driven motion: the point's position, velocity and acceleration are the table
    and its first two derivatives (sympy differentiates `by:` through the derivative tables)."""
    fns = {f"p_{i}": {"x": X.tolist(), "y": Y.tolist(), "interpolation": i, "extrapolation": "hold"}
           for i in INTERPOLATIONS}
    bodies, points = [], {}
    for k, i in enumerate(INTERPOLATIONS):
        bodies.append({"name": f"slider_{i}", "parent": "ground", "joint": [{"translate": "x", "by": f"p_{i}(t)"}],
                       "mass": 1.0, "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]})
        points[f"at_{i}"] = {"body": f"slider_{i}"}
    bodies.append({"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}], "mass": 1.0,
                   "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01]})
    m = dynamica.load(write_model(tmp_path, _pendulum(fns, {}, bodies, {"points": points})))
    t = np.concatenate([RNG.uniform(X[0], X[-1], 30), [X[0] - 0.5, X[-1] + 0.5]])
    lin = make_interp_spline(X, Y, k=1)
    oracles = {"linear": lambda v, nu: lin(v) if nu < 2 else 0.0 * v, "cubic": CubicSpline(X, Y),
               "pchip": PchipInterpolator(X, Y)}
    inside = (t >= X[0]) & (t <= X[-1])
    rows = [m.outputs(tk, [0.0], [0.0]) for tk in t]
    for i in INTERPOLATIONS:
        for nu, what in enumerate(("position", "velocity", "acceleration")):
            got = np.array([r[f"at_{i}.{what}"][0] for r in rows])
            f = oracles[i]
            ref = f(np.clip(t, X[0], X[-1]), 0) if nu == 0 else np.where(inside, f(t, nu) if i != "linear" else
                                                                         lin.derivative(1)(t) if nu == 1 else 0.0, 0.0)
            scale = max(1.0, np.abs(ref).max())
            assert np.abs(got - ref).max() <= 1e-12 * scale, (i, what, np.abs(got - ref).max())


def test_two_variable_derivatives(tmp_path):
    """d/dt g(t, 2 t) = g_x + 2 g_y of the bilinear grid, against central differences of
    RegularGridInterpolator inside one cell (where the interpolant is bilinear: exact but for
    rounding)."""
    fns = {"grid": {"x": GX.tolist(), "y": GY.tolist(), "z": GZ.tolist()}}
    bodies = [{"name": "slider", "parent": "ground", "joint": [{"translate": "x", "by": "grid(t, 2*t)"}], "mass": 1.0,
               "com": [0, 0, 0], "inertia": [0.1, 0.1, 0.1]},
              {"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}], "mass": 1.0,
               "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.01]}]
    m = dynamica.load(write_model(tmp_path, _pendulum(fns, {}, bodies, {"points": {"s": {"body": "slider"}}})))
    rgi = RegularGridInterpolator((GX, GY), GZ)

    def g(t):
        return rgi([[t, 2 * t]])[0]
    for t in (0.05, 0.2, 0.4, 0.52):            # inside cells of both grids along (t, 2t)
        out = m.outputs(t, [0.0], [0.0])
        h = 1e-6
        fd = (g(t + h) - g(t - h)) / (2 * h)
        assert abs(out["s.velocity"][0] - fd) <= 1e-8 * max(1.0, abs(fd)), (t, out["s.velocity"][0], fd)
        h = 1e-4                                 # along the line g is quadratic in t: the second difference is exact
        fd2 = (g(t + h) - 2 * g(t) + g(t - h)) / h ** 2
        assert abs(out["s.acceleration"][0] - fd2) <= 1e-5 * max(1.0, abs(fd2)), (t, out["s.acceleration"][0], fd2)


def test_interpreter_equals_compiled(tables_model):
    """ir.interpret (the reference of the printers) over the module's tables = the compiled code."""
    gen = dynamica.generate(tables_model.spec)
    mod = gen.module_ir
    kernel = next(k for k in mod.kernels if k.name == "outputs")
    p = tables_model.param_vector()
    for t in T1[::5]:
        ref = ir.interpret(kernel, {"t": t, "q": [0.0], "qd": [0.0], "p": p}, mod.tables)["out"]
        flat = np.empty(len(ref))
        tables_model.module.outputs(float(t), np.zeros(1), np.zeros(1), p, flat)
        assert np.array_equal(flat, np.array(ref)), t


CSV = "# thrust curve\nt,F,ignored\n0.0,0.0,1\n0.5,100.0,1\n1.0,80.0,1\n\n2.0,0.0,1\n"


def test_table_file_relative_to_the_model_and_in_the_cache_key(tmp_path, monkeypatch):
    folder = tmp_path / "model"
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "thrust.csv").write_text(CSV)
    fns = {"thrust": {"table": "data/thrust.csv", "columns": ["t", "F"]}}
    path = write_model(folder, _pendulum(fns, {"F": "thrust(t)"}))
    monkeypatch.chdir(tmp_path)                     # not the model's folder
    m = dynamica.load(path)
    assert m.outputs(0.75, [0.0], [0.0])["F"] == pytest.approx(90.0, abs=1e-12)
    (folder / "data" / "thrust.csv").write_text(CSV.replace("100.0", "120.0"))
    m2 = dynamica.load(path)                        # same model file, new data: a new module
    assert m2.outputs(0.75, [0.0], [0.0])["F"] == pytest.approx(100.0, abs=1e-12)
    shutil.move(folder / "data", tmp_path / "elsewhere")
    with pytest.raises(ModelError, match=r"functions\.thrust\.table`: file not found: data/thrust\.csv"):
        dynamica.load(path)


BAD = {
    "missing": ({"table": "nowhere.csv"}, r"`functions.missing.table`: file not found: nowhere.csv"),
    "malformed": ({"table": "bad.csv"}, r"`functions.malformed.table`: bad.csv: line 4, column 2: 'x' is not a number"),
    "nocolumn": ({"table": "good.csv", "columns": ["t", "G"]}, r"`functions.nocolumn.table`: good.csv: no column `G`"),
    "backwards": ({"table": "back.csv"}, r"`functions.backwards.table`: back.csv: the first column must increase "
                                         r"strictly: 0.5 at line 4 after 1.0 at line 3"),
    "short": ({"x": [0.0], "y": [1.0]}, r"`functions.short.x`: expected a list of at least 2 numbers"),
    "unsorted": ({"x": [0.0, 2.0, 1.0], "y": [0, 1, 2]}, r"`functions.unsorted.x`: the knots must increase strictly"),
    "lengths": ({"x": [0.0, 1.0], "y": [0, 1, 2]}, r"`functions.lengths.y`: has 3 values for 2 knots"),
    "both": ({"table": "good.csv", "x": [0, 1], "y": [0, 1]}, r"`functions.both`: give either `table`"),
    "grid": ({"x": [0, 1], "y": [0, 1], "z": [[0, 1], [2]]}, r"`functions.grid.z\[1\]`: expected 2 numbers"),
    "interp": ({"x": [0, 1], "y": [0, 1], "interpolation": "spline"}, r"`functions.interp.interpolation`: expected one "
                                                                       r"of linear, cubic, pchip"),
    "ext": ({"x": [0, 1], "y": [0, 1], "extrapolation": "zero"}, r"`functions.ext.extrapolation`: expected one of "
                                                                  r"extrapolate, hold"),
    "sin": ({"x": [0, 1], "y": [0, 1]}, r"`functions.sin`: `sin` is a reserved name"),
}


def test_bad_tables_and_states_are_named_in_one_error(tmp_path):
    (tmp_path / "bad.csv").write_text("t,F\n0,1\n1,2\n2,x\n")
    (tmp_path / "good.csv").write_text("t,F\n0,1\n1,2\n")
    (tmp_path / "back.csv").write_text("t,F\n0,1\n1,2\n0.5,3\n")
    data = _pendulum({k: v for k, (v, _) in BAD.items()}, {})
    data["states"] = {"nodER": {"initial": 1.0}, "ok": {"der": "-ok"}}
    data["forces"] = [{"type": "generalized_force", "coordinate": "phi", "value": "unsorted(t, t)"}]
    with pytest.raises(ModelError) as info:
        load_model(write_model(tmp_path, data))
    text = str(info.value)
    for _, message in BAD.values():
        assert re.search(message, text), (message, text)
    assert "`states.nodER`: missing required key `der`" in text
    assert "`forces[0].value`: `unsorted` is a tabulated function of 1 variable(s)" in text
    assert "unknown function" not in text              # an invalid table is not reported twice


def test_names_do_not_collide(tmp_path):
    data = _pendulum({"g": {"x": [0, 1], "y": [0, 1]}}, {"u": "1.0"})
    data["inputs"] = ["u", "phi"]
    with pytest.raises(ModelError) as info:
        load_model(write_model(tmp_path, data))
    text = str(info.value)
    assert "`g` is both a parameter and a function" in text
    assert "`phi` is both a joint coordinate and an input" in text
    assert "`outputs.expressions.u`: `u` is the name of an input" in text


def test_an_output_expression_may_not_take_a_coordinates_name(tmp_path):
    """A new user's case: an expression named like a coordinate replaced the coordinate's column in
    the results (CSV, tables, series) silently"""
    data = _pendulum({}, {"phi": "2*t", "w": "phi + 1"})
    with pytest.raises(ModelError) as info:
        load_model(write_model(tmp_path, data))
    text = str(info.value)
    assert "`outputs.expressions.phi`: `phi` is the name of a joint coordinate" in text
    assert "outputs.expressions.w" not in text


@pytest.mark.skipif(shutil.which("gfortran") is None, reason="gfortran is not installed")
def test_fortran_backend_equals_c(tmp_path):
    fns = {"f": {"x": X.tolist(), "y": Y.tolist(), "interpolation": "pchip"},
           "grid": {"x": GX.tolist(), "y": GY.tolist(), "z": GZ.tolist(), "extrapolation": "extrapolate"}}
    data = _pendulum(fns, {"F": "f(t) + grid(phi, t)"})
    data["forces"] = [{"type": "generalized_force", "coordinate": "phi", "value": "f(phi)*grid(t, der(phi))"}]
    path = write_model(tmp_path, data)
    c, f = dynamica.load(path), dynamica.load(path, backend="fortran")
    for t, q, qd in RNG.uniform(-2, 3, (12, 3)):
        assert np.array_equal(c.rhs(t, [q, qd]), f.rhs(t, [q, qd]))
        assert c.outputs(t, [q], [qd])["F"] == f.outputs(t, [q], [qd])["F"]


def test_jacobians_see_the_derivative_tables():
    """What a Jacobian kernel does: differentiate a force with a table with respect to a
    coordinate, lower it and evaluate it: d/dq [f(q) q] = f'(q) q + f(q), with f' the derivative
    table (pchip; its derivative against scipy's), and d2/dq2 through the second derivative table."""
    import sympy as sp

    from dynamica.generator.ir.lower import lower_kernel
    from dynamica.generator.ir.program import Program
    from dynamica.generator.mechanics.tables import module_tables
    from dynamica.generator.spec import expr as ex
    spec = load_model(_pendulum({"f": {"x": X.tolist(), "y": Y.tolist(), "interpolation": "pchip"}}, {}))
    q = ex.coord_symbol("phi")
    e = ex.parse("f(phi)*phi", spec.scope(coordinates_allowed=True))
    lookups = set()
    kernel = lower_kernel("jac", Program(), (ir.Input("q", 1),), [("J", [sp.diff(e, q), sp.diff(e, q, 2)])],
                          {q: ir.Arg("q", 0)}, lookups=lookups)
    tables = module_tables(lookups)
    pchip = PchipInterpolator(X, Y)
    for v in RNG.uniform(X[0], X[-1], 20):
        d1, d2 = ir.interpret(kernel, {"q": [v]}, tables)["J"]
        assert abs(d1 - (pchip(v, 1) * v + pchip(v))) <= 1e-12 * max(1.0, abs(d1))
        assert abs(d2 - (pchip(v, 2) * v + 2 * pchip(v, 1))) <= 1e-12 * max(1.0, abs(d2))
