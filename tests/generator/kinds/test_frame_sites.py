"""Declared frames (`frames:` of a model file) and MJCF sites (generator/importers/mjcf.py:
site_pos and site_quat read from MuJoCo's compiled model, defaults applied) against MuJoCo on the
same file: at random states the site's position and axes (site_xpos, site_xmat after mj_forward),
its Jacobian (mj_jacSite: [jacp; jacr], ground axes at the site, i.e. LOCAL_WORLD_ALIGNED, and
turned into the site's axes, LOCAL), its spatial velocity (mj_objectVelocity, both) and J'q'
(mj_jacDot applied to MuJoCo's qvel, plus J times the rate of the map of the rates), MuJoCo's
dofs mapped to dynamica's coordinates as oracles/mujoco_mjcf.py does (a ball's and a free joint's
angular velocity w = E(q) q'). Both are exact recursions in double precision: 1e-10 scaled
(measured ~1e-15). A frame written in a model file with a rotation (rpy) is the same frame as the
site it was converted from; bad entries are one ModelError naming them."""

from __future__ import annotations

import warnings
from functools import lru_cache

import numpy as np
import pytest

mujoco = pytest.importorskip("mujoco")

import dynamica  # noqa: E402
from dynamica.errors import ModelError  # noqa: E402
from dynamica.generator.spec.model import DynamicaWarning  # noqa: E402

from oracles.mujoco_mjcf import MujocoOracle  # noqa: E402

TOL = 1e-10

# a free torso, a ball-jointed arm, a hinge and a slide; sites with pos, quat, euler (degrees),
# axisangle, zaxis, xyaxes and a defaults class (its pos and euler applied)
SITES = """
<mujoco model="sites">
  <compiler angle="degree"/>
  <option gravity="0 0 -9.81"/>
  <default>
    <site size="0.01"/>
    <default class="marker"><site pos="0.01 0.02 0.03" euler="10 -20 30"/></default>
  </default>
  <worldbody>
    <site name="fixed" pos="1 0 0"/>
    <body name="torso" pos="0.3 -0.2 1.2" euler="10 -20 40">
      <freejoint name="root"/>
      <geom type="box" size="0.2 0.1 0.15" mass="4"/>
      <site name="imu" pos="0.05 0.02 0.1" quat="0.9 0.1 -0.2 0.3"/>
      <site class="marker"/>
      <body name="arm" pos="0.25 0 0.1">
        <joint name="shoulder" type="ball" pos="-0.05 0 0"/>
        <geom type="cylinder" fromto="0 0 0 0.4 0 0" size="0.04" mass="0.8"/>
        <site name="elbow_site" pos="0.4 0 0" axisangle="1 2 3 50"/>
        <body name="hand" pos="0.4 0 0" euler="0 30 0">
          <joint name="wrist" type="hinge" axis="0 0.6 0.8"/>
          <joint name="extend" type="slide" axis="1 0 0"/>
          <geom type="box" size="0.05 0.02 0.02" pos="0.05 0 0" mass="0.2"/>
          <site name="tcp" pos="0.1 0.01 -0.02" zaxis="0 1 1"/>
          <site name="torso" class="marker" xyaxes="0 1 0 -1 0 0"/>
        </body>
      </body>
    </body>
  </worldbody>
</mujoco>"""


@lru_cache(maxsize=None)
def _sites_model(folder):
    path = folder / "sites.xml"
    path.write_text(SITES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        return path, dynamica.load(path, contacts=False, limits=False)


@pytest.fixture(scope="module")
def sites(tmp_path_factory):
    return _sites_model(tmp_path_factory.mktemp("sites"))


def scaled_err(a, b):
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, np.max(np.abs(b))))


def _site_names(m):
    return [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, s) or f"site{s}" for s in range(m.nsite)]


def test_sites_are_the_frames(sites):
    _, model = sites
    # every site on a body is a frame; a site named like a body gets a suffix
    assert {f[0] for f in model.spec.frames} == {"imu", "site2", "elbow_site", "tcp", "torso_2"}
    assert "fixed" not in {f[0] for f in model.spec.frames}  # on the world body: fixed, left out


# each site's module compiles in ~6 s: the fast set checks the deepest site (behind the free, ball,
# hinge and slide joints, zaxis), the slow set the others (quat, a defaults class, axisangle, xyaxes)
@pytest.mark.parametrize("site", ["tcp"] + [pytest.param(s, marks=pytest.mark.slow)
                                            for s in ("imu", "site2", "elbow_site", "torso")])
def test_sites_match_mujoco(sites, site):
    path, model = sites
    oracle = MujocoOracle(path, model.coordinates)
    m, d = oracle.m, oracle.d
    names = _site_names(m)
    rng = np.random.default_rng(3)
    worst, checked = 0.0, 0
    for s, raw in enumerate(names):
        if m.site_bodyid[s] == 0 or raw != site:
            continue
        name = "torso_2" if raw == "torso" else raw
        f = model.frame(name)
        for _ in range(3):
            q, qd = rng.uniform(-1.2, 1.2, model.n), rng.uniform(-2, 2, model.n)
            qpos, qvel, T = oracle.state(q, qd)
            d.qpos[:], d.qvel[:] = qpos, qvel
            d.qacc[:] = 0.0
            mujoco.mj_forward(m, d)
            R = d.site_xmat[s].reshape(3, 3)
            pos, Rf = f.placement(q)
            jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacSite(m, d, jacp, jacr, s)
            J = np.vstack([jacp, jacr]) @ T                 # LOCAL_WORLD_ALIGNED, dynamica's coordinates
            Jl = np.vstack([R.T @ jacp, R.T @ jacr]) @ T    # LOCAL
            v6 = np.zeros(6)
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, s, v6, 0)     # [w; v], ground axes
            jdp, jdr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
            mujoco.mj_jacDot(m, d, jdp, jdr, d.site_xpos[s], int(m.site_bodyid[s]))
            tdot = oracle.bias_rate(q, qd)
            bias = np.concatenate([jdp @ qvel + jacp @ tdot, jdr @ qvel + jacr @ tdot])
            errs = [scaled_err(pos, d.site_xpos[s]), scaled_err(Rf, R),
                    scaled_err(f.jacobian(q, "LOCAL_WORLD_ALIGNED"), J), scaled_err(f.jacobian(q, "LOCAL"), Jl),
                    scaled_err(model.frame_function(name, "jacobian", "LOCAL")(q), Jl),
                    scaled_err(f.velocity(q, qd, "LOCAL_WORLD_ALIGNED"), np.concatenate([v6[3:], v6[:3]])),
                    scaled_err(f.velocity(q, qd, "LOCAL"), np.concatenate([R.T @ v6[3:], R.T @ v6[:3]])),
                    scaled_err(f.bias(q, qd, "LOCAL_WORLD_ALIGNED"), bias)]
            worst = max(worst, *errs)
            checked += 1
            assert max(errs) < TOL, (name, errs)
    assert checked == 3 and worst < TOL                      # the site was found and checked


def test_converted_frames_are_the_sites(sites, tmp_path):
    """`dynamica convert` writes the sites as `frames:` (rpy); the model file gives the same
    frames (the numbers of the MJCF load, to rounding of the rpy written)."""
    from dynamica.runtime.cli.main import main
    path, model = sites
    out = tmp_path / "sites.yaml"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DynamicaWarning)
        assert main(["convert", str(path), "-o", str(out), "--no-contacts", "--no-limits"]) == 0
        again = dynamica.load(out)
    assert again.spec.frames == model.spec.frames
    q = np.linspace(-0.7, 0.9, model.n)
    for name in ("imu", "tcp", "torso_2"):
        pa, Ra = again.frame(name).placement(q)
        pb, Rb = model.frame(name).placement(q)
        assert scaled_err(pa, pb) < 1e-14 and scaled_err(Ra, Rb) < 1e-14


BAD = [
    ({"tip": {"body": "nobody"}}, r"`frames\.tip\.body`: no body named `nobody`"),
    ({"tip": {"body": "link", "rpy": [0, 1]}}, r"`frames\.tip\.rpy`: expected 3 numbers"),
    ({"tip": {"body": "link", "at": [0, "x", 0]}}, r"`frames\.tip\.at\[1\]`: expected a finite number"),
    ({"tip": {"body": "link", "axes": [0, 0, 0]}}, r"`frames\.tip\.axes`: unknown key"),
    ({"link": {"body": "link"}}, r"`frames\.link`: `link` is a body's name"),
    ({"tip": [1, 2]}, r"`frames\.tip`: expected a mapping"),
]


@pytest.mark.parametrize("frames, message", BAD)
def test_bad_frames_are_one_error_naming_the_entry(tmp_path, frames, message):
    import yaml
    doc = {"name": "one", "parameters": {"m": 1.0}, "gravity": [0, 0, -9.81],
           "bodies": [{"name": "link", "parent": "ground", "joint": [{"rotate": "y", "q": "th"}], "mass": "m",
                       "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.1]}],
           "frames": frames}
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ModelError, match=message):
        dynamica.load(path)


def test_declared_frame_with_rotation_in_a_model_file(tmp_path):
    """A frame written in a YAML model at a point of a pendulum's link with rpy: its placement
    and LOCAL Jacobian in closed form (the link turns about y by q: R = Ry(q) Rz(yaw) Ry(pitch)
    Rx(roll), p = Ry(q) at; the Jacobian in ground axes [w x p; w] with w = [0, 1, 0])."""
    import yaml
    at, rpy = [0.1, 0.2, -0.5], [0.3, -0.4, 0.5]
    doc = {"name": "one", "parameters": {"m": 1.0}, "gravity": [0, 0, -9.81],
           "bodies": [{"name": "link", "parent": "ground", "joint": [{"rotate": "y", "q": "th"}], "mass": "m",
                       "com": [0, 0, -0.5], "inertia": [0.1, 0.1, 0.1]}],
           "frames": {"tip": {"body": "link", "at": at, "rpy": rpy}}}
    path = tmp_path / "one.yaml"
    path.write_text(yaml.safe_dump(doc))
    model = dynamica.load(path)

    def rot(axis, a):
        c, s = np.cos(a), np.sin(a)
        return {"x": np.array([[1, 0, 0], [0, c, -s], [0, s, c]]), "y": np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]]),
                "z": np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])}[axis]
    q = np.array([0.7])
    R = rot("y", q[0]) @ rot("z", rpy[2]) @ rot("y", rpy[1]) @ rot("x", rpy[0])
    p = rot("y", q[0]) @ np.array(at)
    pos, Rf = model.frame("tip").placement(q)
    assert scaled_err(pos, p) < 1e-14 and scaled_err(Rf, R) < 1e-14
    w = np.array([0.0, 1.0, 0.0])
    J_lwa = np.concatenate([np.cross(w, p), w])
    assert scaled_err(model.frame("tip").jacobian(q, "LOCAL").ravel(),
                      np.concatenate([R.T @ J_lwa[:3], R.T @ J_lwa[3:]])) < 1e-14
    with pytest.raises(ModelError, match=r"frame\('tip'\)\.at`: a declared frame has its own origin"):
        model.frame("tip", at=[0, 0, 1])
