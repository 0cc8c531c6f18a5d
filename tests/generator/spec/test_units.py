"""Units at load (generator/spec/units.py): declared units and quantities written as text are
converted to SI, checked against closed forms of the conversions (math.radians, powers of ten);
every bundled model keeps its numbers exactly (the file itself the oracle: its units are SI);
a unit of the wrong dimension or one pint cannot read is a ModelError naming the entry."""

import copy
import math

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.errors import ModelError
from dynamica.generator.spec.loader import load

from conftest import ALL_BUNDLED, MODELS, write_model
from helpers import G, J, L, M

BASE = {"name": "units", "parameters": {"m": {"value": 250, "unit": "g"}, "l": "250 mm",
                                        "J": {"value": 1.5, "unit": "kg*m^2"}, "a": {"value": [10, 20], "unit": "mm"},
                                        "k": {"value": 3.0, "unit": "N/mm"}, "c": {"value": 0.4, "unit": "N m s/rad"}},
        "gravity": [0, 0, "-9.81 m/s^2"],
        "bodies": [{"name": "rod", "parent": "ground",
                    "joint": [{"rotate": "x", "q": "phi"}, {"translate": "z", "q": "z"}],
                    "mass": "m", "com": [0, 0, "-l"], "inertia": ["J", "J", "2 g*m^2"]}],
        "initial": {"phi": "30 deg", "der(phi)": "90 deg/s", "z": "5 cm", "der(z)": "-36 km/h"},
        "simulate": {"t_end": "2 min"}}


def test_declared_units_and_quantities_are_converted_to_si():
    s = load(copy.deepcopy(BASE), file="units.yaml")
    p = {x.name: x for x in s.parameters}
    assert p["m"].value == pytest.approx(0.25, rel=1e-15) and p["m"].unit == "g"
    assert p["l"].value == pytest.approx(0.25, rel=1e-15) and p["l"].unit == "mm"   # the quantity's unit shown
    assert p["J"].value == 1.5                                  # an SI unit: the number as written
    assert p["a"].value == pytest.approx((0.01, 0.02), rel=1e-15)
    assert p["k"].value == pytest.approx(3000.0, rel=1e-15) and p["c"].value == 0.4
    initial = dict(s.initial)
    assert initial["phi"] == pytest.approx(math.radians(30), rel=1e-15)
    assert initial["der(phi)"] == pytest.approx(math.radians(90), rel=1e-15)
    assert initial["z"] == pytest.approx(0.05, rel=1e-15) and initial["der(z)"] == pytest.approx(-10.0, rel=1e-15)
    assert s.gravity[2] == pytest.approx(-9.81, rel=1e-15)
    assert s.bodies[0].inertia[2] == pytest.approx(0.002, rel=1e-15)
    assert s.simulate.t_end == pytest.approx(120.0, rel=1e-15)


@pytest.mark.parametrize("name", ALL_BUNDLED)
def test_bundled_models_keep_their_numbers(name):
    """Their units are SI: every parameter has exactly the value the file writes."""
    raw = yaml.safe_load((MODELS / f"{name}.yaml").read_text())["parameters"]
    spec = load(MODELS / f"{name}.yaml")
    for p in spec.parameters:
        v = raw[p.name]["value"] if isinstance(raw[p.name], dict) else raw[p.name]
        assert p.value == (tuple(float(x) for x in v) if isinstance(v, list) else float(v)), p.name


@pytest.mark.parametrize("where, value, message", [
    (("bodies", 0, "mass"), "2 m", r"`bodies\[0\]\.mass`: `2 m` is not a mass"),
    (("parameters", "m"), {"value": 1, "unit": "m"},
     r"`bodies\[0\]\.mass`: parameter `m` is in m, but this entry is a mass"),
    (("bodies", 0, "com"), [0, 0, "3 kg"], r"`bodies\[0\]\.com\[2\]`: `3 kg` is not a length"),
    (("bodies", 0, "inertia"), ["J", "J", "2 kg*m"], r"`bodies\[0\]\.inertia\[2\]`: `2 kg\*m` is not a moment"),
    (("initial", "phi"), "3 m", r"`initial\.phi`: `3 m` is not a value of coordinate `phi`"),
    (("initial", "der(z)"), "3 m", r"`initial\.der\(z\)`: `3 m` is not the rate of coordinate `z`"),
    (("parameters", "l"), {"value": "3 kg", "unit": "m"}, r"`parameters\.l\.value`: `3 kg` is not in m"),
    (("parameters", "m"), {"value": 1, "unit": "blorps"}, r"`parameters\.m\.unit`: unknown unit `blorps`"),
    (("parameters", "m"), "1 blorps", r"`parameters\.m`: unknown unit `blorps`"),
    (("parameters", "m"), {"value": 1, "unit": "degC"}, r"`parameters\.m\.unit`: the unit `degC` has an offset"),
    (("parameters", "m"), {"value": 1, "unit": "kg**9**9**9"},
     r"`parameters\.m\.unit`: `kg\*\*9\*\*9\*\*9` is not a unit"),
    (("parameters", "m"), {"value": 1, "unit": "(" * 500 + "kg" + ")" * 500}, r"`parameters\.m\.unit`: `\(+` is not"),
])
def test_a_unit_that_cannot_be_converted_is_named(where, value, message):
    d = copy.deepcopy(BASE)
    t = d
    for k in where[:-1]:
        t = t[k]
    t[where[-1]] = value
    with pytest.raises(ModelError, match=r"units\.yaml: 1 problem\(s\)[\s\S]*" + message):
        load(d, file="units.yaml")


def test_a_pendulum_in_mm_g_and_degrees_moves_as_in_si(tmp_path):
    """helpers.PENDULUM (m, l, J, g) written in g, mm, g*m^2 and cm/s^2, started at 40 deg: its
    initial state and q'' there are the closed form's in SI, -m g l sin(phi) / (J + m l^2)
    (1e-13: a few roundings of the conversions and of the compiled q'')."""
    data = {"name": "pendulum_units",
            "parameters": {"m": {"value": M * 1e3, "unit": "g"}, "l": {"value": L * 1e3, "unit": "mm"},
                           "J": {"value": J * 1e3, "unit": "g*m^2"}, "g": {"value": G * 100, "unit": "cm/s^2"}},
            "gravity": [0, 0, "-g"],
            "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}],
                        "mass": "m", "com": [0, 0, "-l"], "inertia": ["J", "J", "J"]}],
            "initial": {"phi": "40 deg", "der(phi)": "-30 deg/s"}}
    model = dynamica.load(str(write_model(tmp_path, data, "pendulum_units.yaml")))
    q0, qd0 = model.initial_state()
    phi = math.radians(40)
    assert q0[0] == pytest.approx(phi, rel=1e-15) and qd0[0] == pytest.approx(math.radians(-30), rel=1e-15)
    expect = -M * G * L * math.sin(phi) / (J + M * L ** 2)
    assert model.qdd(q0, qd0)[0] == pytest.approx(expect, rel=1e-13)
    assert model.parameters["l"] == pytest.approx(L, rel=1e-15)
    assert np.isclose(model.qdd(q0, qd0, params={"l": 2 * L})[0],       # params= of a run are SI
                      -M * G * 2 * L * math.sin(phi) / (J + M * 4 * L ** 2), rtol=1e-13)


def test_coordinates_given_in_other_units_are_shown_in_them():
    s = load(copy.deepcopy(BASE), file="units.yaml")
    shown = {c: (u, f) for c, u, f in s.display_units}
    assert set(shown) == {"phi", "der(phi)", "z", "der(z)"}
    assert shown["phi"][0] == "deg" and shown["phi"][1] == pytest.approx(math.pi / 180, rel=1e-15)
    assert shown["der(phi)"][0] == "deg/s" and shown["z"] == ("cm", pytest.approx(0.01, rel=1e-15))
    assert shown["der(z)"] == ("km/h", pytest.approx(1 / 3.6, rel=1e-15))
    d = copy.deepcopy(BASE)
    d["initial"] = {"phi": "30 deg", "z": 0.1}               # a rate follows its coordinate; SI is not listed
    shown = {c: u for c, u, _ in load(d, file="units.yaml").display_units}
    assert shown == {"phi": "deg", "der(phi)": "deg/s"}


def test_tables_plots_and_report_show_the_declared_units(tmp_path, capsys):
    """The command line's summary table has a unit column and the coordinate started at 40 deg
    in degrees (its initial value 40 to 1e-12: math.degrees the oracle); the report's parameter
    table shows each parameter in its declared unit (l = 900 mm)."""
    from dynamica.runtime.cli.main import main
    from dynamica.runtime.report.page import parameter_rows
    data = {"name": "pendulum_deg",
            "parameters": {"m": {"value": M * 1e3, "unit": "g"}, "l": {"value": L * 1e3, "unit": "mm"},
                           "J": J, "g": G},
            "gravity": [0, 0, "-g"],
            "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}],
                        "mass": "m", "com": [0, 0, "-l"], "inertia": ["J", "J", "J"]}],
            "initial": {"phi": "40 deg"}}
    path = write_model(tmp_path, data, "pendulum_deg.yaml")
    assert main(["simulate", str(path), "--t-end", "0.5", "-q", "--table", str(tmp_path / "t.csv"),
                 "--plot", str(tmp_path / "p.pdf")]) == 0
    rows = [line.split(",") for line in (tmp_path / "t.csv").read_text().splitlines()]
    assert rows[0][:3] == ["variable", "unit", "initial"]
    table = {r[0]: r for r in rows[1:]}
    assert table["phi"][1] == "deg" and float(table["phi"][2]) == pytest.approx(40.0, rel=1e-12)
    assert table["der(phi)"][1] == "deg/s"
    assert "deg" in capsys.readouterr().out
    model = dynamica.load(str(path))
    params = {r[0]: r for r in parameter_rows(model, None)}
    assert params["l"][1] == f"{L * 1e3:.6g}" and params["l"][3] == "mm"
    assert params["m"][1] == f"{M * 1e3:.6g}" and params["m"][3] == "g"
