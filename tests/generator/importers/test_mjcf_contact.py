"""MJCF geoms as collision shapes (generator/importers/mjcf.py, docs/contact.md): the same MJCF
scene run in MuJoCo (its own soft contacts, elliptic friction cone, time step 0.25 ms) and in
dynamica (the file's geoms as shapes, its friction, the `contact` law): a box given v0 stops at
the same distance and a sphere rolls down an incline at the same acceleration, within 2 % of
MuJoCo's (the two laws differ in their compliance: MuJoCo's solref/solimp against Hunt-Crossley;
each is also within 1 % of the closed form). The pair filters: contype/conaffinity, exclude,
a body and its parent, explicit pairs and their friction.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import dynamica  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning, load_model  # noqa: E402

G = 9.81


def _scene(body, gravity=f"0 0 -{G}", friction=0.5):
    return f"""
<mujoco model="scene">
  <option timestep="0.00025" gravity="{gravity}" cone="elliptic"/>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="{friction} 0.005 0.0001"/>
    {body}
  </worldbody>
</mujoco>"""


def _mujoco_run(path, t_end, qvel=None):
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    if qvel is not None:
        d.qvel[:len(qvel)] = qvel
    ts, xs, vs = [], [], []
    while d.time < t_end - 1e-12:
        mujoco.mj_step(m, d)
        ts.append(d.time), xs.append(d.qpos[0]), vs.append(d.qvel[0])
    return np.array(ts), np.array(xs), np.array(vs)


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        return dynamica.load(path)


def test_box_stopping_distance_as_mujoco(tmp_path):
    """v0 = 2 m/s, mu = 0.5: x_stop = v0^2 / (2 mu g) = 0.4077 m; dynamica within 2 % of MuJoCo."""
    path = tmp_path / "box.xml"
    path.write_text(_scene('<body name="box" pos="0 0 0.05"><freejoint name="box"/>'
                           '<geom name="bx" type="box" size="0.1 0.1 0.05" mass="1" friction="0.5 0.005 0.0001"/>'
                           '</body>'))
    _, xm, _ = _mujoco_run(path, 1.2, qvel=[2.0, 0, 0, 0, 0, 0])
    model = _load(path)
    assert [f["name"] for f in model.spec.forces if f.type == "contact"] == ["contact_floor_bx"]
    r = dynamica.simulate(model, 1.2, qd0=[2.0, 0, 0, 0, 0, 0], output_step=0.01, rtol=1e-8, atol=1e-10)
    x_stop = 2.0 ** 2 / (2 * 0.5 * G)
    assert abs(xm[-1] - x_stop) < 0.01 * x_stop                    # MuJoCo itself: the closed form
    assert abs(r.q[-1, 0] - xm[-1]) < 0.02 * xm[-1]


def test_rolling_acceleration_as_mujoco(tmp_path):
    """A solid sphere on a 20 degree incline (gravity tilted), mu = 0.5: (5/7) g sin(theta);
    dynamica's acceleration within 2 % of MuJoCo's."""
    th = math.radians(20)
    gravity = f"{G * math.sin(th)!r} 0 {-G * math.cos(th)!r}"
    path = tmp_path / "roll.xml"
    path.write_text(_scene('<body name="ball" pos="0 0 0.1"><freejoint name="ball"/>'
                           '<geom name="s" type="sphere" size="0.1" mass="1"/></body>', gravity=gravity))
    tm, _, vm = _mujoco_run(path, 1.0)
    sel = tm > 0.2
    am = np.polyfit(tm[sel], vm[sel], 1)[0]
    r = dynamica.simulate(_load(path), 1.0, output_step=0.01, rtol=1e-9, atol=1e-11)
    sel = r.t > 0.2
    a = np.polyfit(r.t[sel], r.qd[sel, 0], 1)[0]
    assert abs(am - 5 / 7 * G * math.sin(th)) < 0.01 * am
    assert abs(a - am) < 0.02 * am


def test_pair_filters_as_mujoco(tmp_path):
    """contype/conaffinity, exclude, a body and its (non-world) parent, explicit pairs and the
    larger friction of two geoms: the pairs are those MuJoCo's collision finds (written here
    from the MJCF documentation's rules)."""
    path = tmp_path / "filters.xml"
    path.write_text("""
<mujoco>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" friction="0.7 0 0"/>
    <body name="a" pos="0 0 1"><freejoint/>
      <geom name="ga" type="sphere" size="0.1" friction="0.2 0 0"/>
      <body name="child" pos="0 0 0.3"><joint type="hinge"/>
        <geom name="gc" type="capsule" size="0.05 0.1"/>
      </body>
    </body>
    <body name="b" pos="1 0 1"><freejoint/>
      <geom name="gb" type="sphere" size="0.1" contype="2" conaffinity="2"/>
    </body>
    <body name="c" pos="2 0 1"><freejoint/>
      <geom name="gx" type="sphere" size="0.1"/>
    </body>
  </worldbody>
  <contact>
    <exclude body1="c" body2="a"/>
    <pair geom1="gb" geom2="floor" friction="0.3 0.3 0 0 0"/>
  </contact>
</mujoco>""")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        spec = load_model(path)
    pairs = {(f["a"].name, f["b"].name): f["friction"] for f in spec.forces if f.type == "contact"}
    # floor-ga: max(0.7, 0.2); floor-gc, floor-gx, gc-gx; gb only through its explicit pair;
    # ga-gc parent and child; ga-gx excluded; gb with others: contype 2 meets conaffinity 1
    assert pairs == {("floor", "gb"): 0.3, ("floor", "ga"): 0.7, ("floor", "gc"): 1, ("floor", "gx"): 1,
                     ("gx", "gc"): 1}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        assert not any(f.type == "contact" for f in load_model(path, contacts=False).forces)


def test_a_dropped_box_rests_at_mujocos_height_within_the_penetrations(tmp_path):
    """A box dropped from 0.2 m comes to rest: its height in dynamica and in MuJoCo differ by less
    than the two codes' resting penetrations together (each law sinks the box its own way; the
    oracle is MuJoCo's run of the same file)."""
    import mujoco as mj
    path = tmp_path / "drop.xml"
    path.write_text(_scene('<body name="box" pos="0 0 0.25"><freejoint name="box"/>'
                           '<geom name="bx" type="box" size="0.1 0.1 0.05" mass="1"/></body>'))
    m = mj.MjModel.from_xml_path(str(path))
    d = mj.MjData(m)
    while d.time < 3.5:
        mj.mj_step(m, d)
    z_mj, sink_mj = float(d.qpos[2]), -float(min(d.contact.dist[:d.ncon]))
    r = dynamica.simulate(_load(path), 3.5, output_step=0.01, rtol=1e-8, atol=1e-10)
    z = r.q[-1, 2]                              # (the light damping of the law's vertical mode: 3 s to settle)
    sink = float(np.max(r.outputs["contact_floor_bx.penetration"][-1]))
    assert abs(r.qd[-1]).max() < 1e-3 and abs(d.qvel).max() < 1e-3          # both at rest
    assert abs(z - z_mj) < sink + sink_mj
    assert sink > 0 and sink_mj > 0
