"""Joint limits as one-sided compliant stops (the `stop` force; docs/urdf.md, docs/mjcf.md): no
force inside the range (q'' there is the robot's without limits, bit for bit), the law beyond a
bound against its closed form, the Panda's fingers and joints within their limits over 2 s of
falling, and a warning naming the coordinates that leave their limits when they are off.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

import dynamica
from dynamica.generator.spec.model import DynamicaWarning

from conftest import write_model
from oracles.pin_urdf import robot_file


def _slider(tmp_path, **stop):
    d = {"name": "slider", "gravity": [0, 0, 0],
         "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
                     "mass": 2.0, "com": [0, 0, 0], "inertia": [1, 1, 1]}],
         "forces": [{"type": "stop", "name": "lim", "coordinate": "x", **stop}]}
    return dynamica.load(write_model(tmp_path, d))


def test_stop_law_against_its_closed_form(tmp_path):
    """Inside [lower, upper] no force; beyond by delta at rate delta': max(0, k delta (1 + 3/2 c delta'))
    pushing back (written out here: k = 100, c = 0.2, mass 2)."""
    model = _slider(tmp_path, lower=-0.5, upper=0.5, stiffness=100, damping=0.2)
    for x, v in ((0.0, 3.0), (0.49, -7.0), (-0.5, 1.0)):
        assert model.qdd([x], [v])[0] == 0.0
    for x, v, Q in ((0.6, 1.0, -100 * 0.1 * (1 + 0.3 * 1.0)), (0.6, -1.0, -100 * 0.1 * (1 - 0.3)),
                    (-0.7, -2.0, 100 * 0.2 * (1 + 0.3 * 2.0)), (0.6, -5.0, 0.0)):
        assert model.qdd([x], [v])[0] == pytest.approx(Q / 2.0, rel=1e-14, abs=1e-300)


def test_a_stop_is_located_and_rebounds_as_the_law_predicts(tmp_path):
    """A slider hits its upper stop at 1 m/s: the contact start and end are located (events) and it
    leaves at the restitution of the law with exponent 1 (docs/contact.md's formula, which holds
    for any exponent), within 1e-6."""
    from scipy.optimize import brentq
    model = _slider(tmp_path, upper=0.1, stiffness=1e4, damping=0.2)
    r = dynamica.simulate(model, 0.3, qd0=[1.0], output_step=0.01, rtol=1e-11, atol=1e-13)
    lam = 0.3
    lhs = 1 / lam - math.log1p(lam) / lam ** 2
    e = brentq(lambda w: -w / lam - math.log1p(-lam * w) / lam ** 2 - lhs, 1e-9, (1 - 1e-12) / lam)
    assert abs(-r.qd[-1, 0] - e) < 1e-6
    assert [c[3] for c in r.info["contacts"]] == [1, -1] and abs(r.info["contacts"][0][0] - 0.1) < 1e-9


PANDA = "robots/panda_description/urdf/panda.urdf"


@pytest.fixture(scope="module")
def panda():
    path = robot_file(PANDA)
    if path is None:
        pytest.skip("example-robot-data is not installed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)         # its mimic joint
        return dynamica.load(path), dynamica.load(path, limits=False)


def test_panda_inside_its_limits_is_the_robot_without_them(panda):
    """q'' with the stops equals q'' without them inside the limits (bit for bit), and the start
    pose (fingers exactly on their lower bound) feels no stop force."""
    on, off = panda
    lo, hi = _bounds(on)
    rng = np.random.default_rng(0)
    for _ in range(3):
        q = lo + (hi - lo) * rng.uniform(0.05, 0.95, on.n)
        qd = rng.normal(0, 1, on.n)
        assert np.array_equal(on.qdd(q, qd), off.qdd(q, qd))
    q0, qd0 = on.initial_state()
    out = on.outputs(0.0, q0, qd0)
    assert all(float(out[f"{f['name']}.generalized_force"]) == 0.0 for f in on.spec.forces if f.type == "stop")


def _bounds(model):
    lo = np.full(model.n, -np.inf)
    hi = np.full(model.n, np.inf)
    values = model.parameter_values()
    for f in model.spec.forces:
        if f.type == "stop":
            k = model.coordinates.index(f["coordinate"])
            lo[k], hi[k] = float(f["lower"]), float(f["upper"])
    assert values                                   # (the stops' parameters are the model's)
    return lo, hi


def test_panda_fingers_stay_within_their_limits_over_2_s(panda):
    """Falling under gravity from its start pose for 2 s: every coordinate stays within its limits
    up to the stops' compliance: a body meeting a stop of stiffness k at speed v sinks about
    v sqrt(m / k), 1.2 mm for a 15 g finger flung out at 1 m/s with k = 1e4 N/m (bound: 2 mm, 5 % of
    the fingers' 4 cm range); joints 0.05 rad. Without limits the fingers leave them by more than
    1 cm (and a warning names the coordinates that did)."""
    on, off = panda
    lo, hi = _bounds(on)
    r = dynamica.simulate(on, 2.0, output_step=0.01, rtol=1e-6, atol=1e-8)
    fingers = [k for k, c in enumerate(on.coordinates) if "finger" in c]
    assert fingers
    beyond = np.maximum(lo - r.q, r.q - hi).max(axis=0)
    assert beyond[fingers].max() < 2e-3, beyond
    assert beyond.max() < 0.05, beyond
    with pytest.warns(DynamicaWarning, match="leave their limits") as caught:
        r_off = dynamica.simulate(off, 2.0, output_step=0.01, rtol=1e-6, atol=1e-8)
    beyond_off = np.maximum(lo - r_off.q, r_off.q - hi).max(axis=0)
    assert beyond_off[fingers].max() > 0.01
    message = str(caught[0].message)
    assert all(on.coordinates[k] in message for k in fingers)


def test_ranges_errors_name_the_entry():
    from dynamica.errors import ModelError
    from dynamica.generator.spec.model import load_model
    base = {"name": "m", "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
                                     "mass": 1, "com": [0, 0, 0], "inertia": [1, 1, 1]}]}
    for ranges, path, words in (({"y": [0, 1]}, "ranges.y", "unknown coordinate"),
                                ({"x": [1, 0]}, "ranges.x", "lower < upper"),
                                ({"x": [0]}, "ranges.x", "[lower, upper]"),
                                ({"x": ["a", 1]}, "ranges.x[0]", "finite number")):
        with pytest.raises(ModelError) as info:
            load_model({**base, "ranges": ranges})
        assert any(p.path == path and words in p.message for p in info.value.problems), info.value.problems
    assert load_model({**base, "ranges": {"x": [-1, 2.5]}}).ranges == (("x", -1, 2.5),)


def test_no_limits_on_the_command_line():
    import argparse

    from dynamica.runtime.cli.models import add_import_options, import_options
    p = argparse.ArgumentParser()
    add_import_options(p)
    assert import_options(p.parse_args([])) == {}
    assert import_options(p.parse_args(["--no-limits"])) == {"limits": False}
    assert import_options(p.parse_args(["--limits"])) == {"limits": True}
