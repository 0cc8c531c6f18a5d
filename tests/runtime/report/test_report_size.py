"""The report's size: a 2-body model's page at most 1.5 MB (the plots are SVG drawn by a script of
a few KB, not a plotting bundle of megabytes), the Panda of example-robot-data at most 4 MB with its
meshes simplified and quantised, and the simplification invisible: every vertex of the original
mesh within a pixel of the simplified surface, and back (trimesh's exact point-to-mesh distance as
the oracle). The view frames the bodies, not the path of a part that flies off; the floor is
normal to gravity."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
import yaml

from dynamica.runtime.cli.main import main

from conftest import MODELS, write_model

MB = 1_000_000


def _scene(text):
    return json.loads(re.search(r'<script type="application/json" id="scene-data">(.*?)</script>', text, re.S)
                      .group(1).replace("<\\/", "</"))


def test_two_body_report_is_at_most_1_5_mb(tmp_path):
    """The double pendulum over its own simulate block (10 s, 1001 rows, 31 variables plotted):
    4.8 MB with the full plotting bundle; now the run's numbers (plotted rows, animation frames)
    and a fixed part of under 100 KB."""
    out = tmp_path / "pendulum.html"
    assert main(["simulate", str(MODELS / "double_pendulum.yaml"), "--report", str(out), "-q"]) == 0
    size = out.stat().st_size
    plot = json.loads(re.search(r'id="plot-data">(.*?)</script>', out.read_text(), re.S).group(1))
    scene = _scene(out.read_text())
    data = len(plot["t"]) + sum(len(v) for v in plot["series"].values()) + len(scene["frames"]) \
        + len(json.dumps(scene["t"]))
    assert size <= 1.5 * MB, size
    assert size - data < 100_000, (size, data)           # what is not the run's numbers (rows, frames)


@pytest.fixture(scope="module")
def panda():
    from oracles.pin_urdf import robot_file
    path = robot_file("robots/panda_description/urdf/panda.urdf")
    if path is None:
        pytest.skip("example-robot-data is not installed (pip install .[test])")
    return path


def test_panda_report_is_at_most_4_mb(panda, tmp_path):
    """11.6 MB with its meshes as they are; the 10 link meshes hold 134 300 triangles."""
    out = tmp_path / "panda.html"
    assert main(["simulate", str(panda), "--t-end", "0.5", "--output-step", "0.01", "--report", str(out),
                 "-q"]) == 0
    assert out.stat().st_size <= 4 * MB, out.stat().st_size
    scene = _scene(out.read_text())
    assert len(scene["shapes"]) >= 11 and all("vertices" in s for s in scene["shapes"])


def test_simplified_meshes_stay_within_a_pixel(panda):
    """Each Panda visual mesh above MAX_TRIANGLES, simplified: the largest distance from the
    original's vertices to the simplified surface and from the simplified vertices to the original
    is under 2 mm, a pixel of the report's view of the robot (the canvas is 520 px high; the view
    spans 2 * 1.5 R tan(0.35) = 1.09 R of the robot's extent R of about 1.1 m: 2.3 mm a pixel)."""
    import trimesh

    from dynamica.runtime.report.scene import MAX_TRIANGLES, simplified
    meshes = sorted((panda.parent.parent / "meshes" / "visual").glob("*.dae"))
    assert len(meshes) == 10
    checked = 0
    for f in meshes:
        mesh = trimesh.load(str(f), force="mesh")
        notes = []
        small = simplified(mesh, notes)
        assert notes == [] and len(small.faces) <= MAX_TRIANGLES
        if len(mesh.faces) <= MAX_TRIANGLES:
            continue
        checked += 1
        rng = np.random.default_rng(0)
        pts = mesh.vertices[rng.choice(len(mesh.vertices), min(len(mesh.vertices), 6000), replace=False)]
        _, there, _ = trimesh.proximity.closest_point(small, pts)
        _, back, _ = trimesh.proximity.closest_point(mesh, small.vertices)
        assert max(there.max(), back.max()) < 2e-3, (f.name, there.max(), back.max())
    assert checked >= 5


def test_quantised_vertices_within_half_a_step():
    """16-bit coordinates: every corner within step/2 = extent / 131070 of where it was."""
    from dynamica.runtime.report.page import quantised
    tri = np.random.default_rng(1).uniform([-0.1, 0.0, 2.0], [0.1, 0.3, 2.05], size=(500, 3, 3))
    lo, step, verts, faces = quantised(tri.reshape(-1))
    back = lo + step * verts[faces].astype(float)
    assert np.all(np.abs(back - tri) <= step / 2 * (1 + 1e-9))
    assert verts.dtype == np.uint16 and np.allclose(step, np.ptp(tri.reshape(-1, 3), axis=0) / 65535)


def test_the_view_frames_the_bodies_not_a_part_that_flies_off():
    """A base at the origin and an arm 1 m long; a third body leaves to 1 km: the view is
    centred on the mechanism and spans it, not the kilometre."""
    from dynamica.runtime.report.scene import Scene
    F = 50
    origins = np.zeros((F, 3, 3))
    origins[:, 1] = [1.0, 0.0, 0.0]
    origins[:, 2, 0] = np.linspace(0.5, 1000.0, F)               # flies off along x
    frames = np.concatenate([np.tile(np.eye(3).reshape(1, 1, 9), (F, 3, 1)), origins], axis=2)
    centre, size = Scene(["a", "b", "c"], [-1, 0, 0], np.linspace(0, 1, F), np.arange(F), frames).extent
    assert np.allclose(centre, [0.5, 0, 0]) and size == pytest.approx(1.0)
    origins[:, 2, 0] = 0.5 + 0.3 * np.sin(np.linspace(0, 6, F))   # one that swings nearby is framed whole
    frames[:, :, 9:] = origins
    centre, size = Scene(["a", "b", "c"], [-1, 0, 0], np.linspace(0, 1, F), np.arange(F), frames).extent
    assert size == pytest.approx(1.0) and centre[0] == pytest.approx(0.5)


def test_the_floor_is_normal_to_gravity(tmp_path):
    """Gravity along -y: "up" is +y (the viewer draws the floor grid in the plane normal to it and
    turns the camera about it)."""
    data = yaml.safe_load((MODELS / "double_pendulum.yaml").read_text())
    data["gravity"] = [0, "-g", 0]
    model = write_model(tmp_path, data, "pendulum_y.yaml")
    out = tmp_path / "y.html"
    assert main(["simulate", str(model), "--t-end", "0.2", "--report", str(out), "-q"]) == 0
    assert np.allclose(_scene(out.read_text())["up"], [0, 1, 0])
