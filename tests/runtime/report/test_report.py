"""The HTML report (runtime/report/page.py): one self-contained file, checked in a real headless
browser (the distribution's Chromium driven by Playwright; skipped with a message where there
is none): it loads with no console errors and no network request, the canvas draws, and moving
the time slider moves the mechanism (two screenshots of the canvas differ; the same frame
twice gives the same picture). Also what the page holds (plots with units, one panel per unit,
stage boundaries, parameters of the run) and the 3-D placements against the model's outputs."""

from __future__ import annotations

import json
import os
import re
import shutil

import numpy as np
import pytest
import yaml

import dynamica
from dynamica.runtime.cli.main import main

from conftest import REPO_ROOT

ROOT = str(REPO_ROOT)
PENDULUM = os.path.join(ROOT, "models", "double_pendulum.yaml")


def chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "pendulum.html"
    assert main(["simulate", PENDULUM, "--t-end", "3", "--output-step", "0.01", "--report", str(out),
                 "--set", "l2=0.9", "-q"]) == 0
    return out


def test_report_is_self_contained(report):
    text = report.read_text()
    assert "<script src=" not in text and "<link " not in text           # nothing fetched
    assert not re.search(r"""<(script|link|img|iframe)\b[^>]*(src|href)=["']https?://""", text)
    assert 'id="plot-data"' in text and "window.dynamicaPlots" in text
    assert '<canvas id="scene"' in text and 'type="range"' in text and 'id="play"' in text


def _figure(text):
    """The plots' data (runtime/report/plots.js draws it): panels, axis titles, boundaries."""
    m = re.search(r'<script type="application/json" id="plot-data">(.*?)</script>', text, re.S)
    return json.loads(m.group(1))


def test_plots_have_units_and_one_panel_per_unit(report):
    fig = _figure(report.read_text())
    titles = [p["title"] for p in fig["panels"]]
    assert any("[rad]" in t for t in titles) and any("[rad/s]" in t for t in titles)
    assert any("[m]" in t for t in titles) and any("[J]" in t for t in titles)       # tip position; energy
    assert any("[rad/s^2]" in t for t in titles)                                      # angular accelerations
    assert fig["xtitle"] == "t [s]"
    assert ["phi1", "phi2"] in [p["names"] for p in fig["panels"]]
    # the curves are the result's values exactly (float64), read back as the browser does
    import base64
    res_t = np.frombuffer(base64.b64decode(fig["t"]), dtype="<f8")
    phi1 = np.frombuffer(base64.b64decode(fig["series"]["phi1"]), dtype="<f4")
    # float32: within 2^-24 relative of the model's phi1(0) = 0.6
    assert len(res_t) == 301 and res_t[-1] == 3.0 and len(phi1) == 301 and abs(phi1[0] - 0.6) <= 0.6 * 2.0 ** -24


def test_parameters_of_the_run(report):
    text = report.read_text()
    row = re.search(r"<tr><td>l2</td><td>([^<]*)</td><td>([^<]*)</td><td>([^<]*)</td>", text)
    assert row.groups() == ("0.9", "0.7", "m")


def test_stage_boundaries_are_marked(tmp_path):
    from dynamica.runtime.report.page import write_report
    model = dynamica.load(PENDULUM)
    res = dynamica.simulate(model, t_end=2.0, output_step=0.01)
    out = write_report(model, res, tmp_path / "r.html", boundaries=[(0.5, "release"), (1.5, "lock")])
    fig = _figure(out.read_text())
    assert {(b["t"], b["label"]) for b in fig["boundaries"]} == {(0.5, "release"), (1.5, "lock")}


def test_scene_placements_match_the_outputs():
    """The report's body frames (numpy composition of the joints) put the pendulum's tip where
    the compiled outputs do (tip = origin of link2 + R (0, 0, -l2))."""
    from dynamica.runtime.report.scene import placements
    model = dynamica.load(PENDULUM)
    res = dynamica.simulate(model, t_end=1.0, output_step=0.05)
    rows = np.arange(len(res.t))
    R, p = placements(model, res, rows)
    k = [b.name for b in model.spec.bodies].index("link2")
    tip = p[:, k] + R[:, k] @ np.array([0.0, 0.0, -model.parameters["l2"]])
    assert np.max(np.abs(tip - res.outputs["tip.position"])) < 1e-12
    # and the frames themselves against the pendulum's closed form, its lengths read from the file
    # with yaml (not through the loader's parser both sides above share): link2's frame is
    # R_x(phi1) R_y(phi2) at R_x(phi1) (0, 0, -l1)
    par = yaml.safe_load(open(PENDULUM, encoding="utf-8"))["parameters"]
    l1 = float(par["l1"]["value"])
    rx = lambda a: np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]])  # noqa: E731
    ry = lambda a: np.array([[np.cos(a), 0, np.sin(a)], [0, 1, 0], [-np.sin(a), 0, np.cos(a)]])  # noqa: E731
    phi1, phi2 = res.q[:, res.coordinates.index("phi1")], res.q[:, res.coordinates.index("phi2")]
    for f in range(len(rows)):
        assert np.max(np.abs(R[f, k] - rx(phi1[f]) @ ry(phi2[f]))) < 1e-14
        assert np.max(np.abs(p[f, k] - rx(phi1[f]) @ [0.0, 0.0, -l1])) < 1e-14


def test_equivalent_inertia_box():
    """A uniform box's inertia gives back its edges (closed form I = m (b^2 + c^2) / 12)."""
    from dynamica.runtime.report.scene import equivalent_box
    m, a, b, c = 2.0, 0.3, 0.2, 0.1
    I = np.diag([m * (b * b + c * c), m * (a * a + c * c), m * (a * a + b * b)]) / 12
    edges, _ = equivalent_box(m, I)
    assert np.allclose(sorted(edges), sorted([a, b, c]), rtol=1e-12)


# ---------------------------------------------------------------- in a real browser
BROWSER_ARGS = ["--use-angle=swiftshader", "--enable-unsafe-swiftshader", "--no-sandbox"]


@pytest.fixture(scope="module")
def page_of():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install .[test])")
    exe = chromium()
    if exe is None:
        pytest.skip("no Chromium on this machine (apt-get install chromium; .ci/run installs it)")
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=exe, args=BROWSER_ARGS)

        def open_page(path):
            page = browser.new_page(viewport={"width": 1300, "height": 900})
            page.problems, page.requests = [], []
            page.on("console", lambda m: page.problems.append(m.text) if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: page.problems.append(str(e)))
            page.on("request", lambda r: page.requests.append(r.url))
            page.goto(path.as_uri())
            page.wait_for_function("document.getElementById('scene-status').textContent.length > 0")
            _painted(page)
            return page
        yield open_page
        browser.close()


def _painted(page):
    """Wait (on a condition, not a clock) until the browser has presented what was last drawn: two
    animation frames after the draw, which the viewer does synchronously on every change."""
    page.evaluate("() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))")


def _canvas_png(page):
    return page.locator("#scene").screenshot()


def _pixels(png):
    import io

    from PIL import Image
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=int)


def test_report_in_a_browser(report, page_of):
    page = page_of(report)
    assert page.problems == []
    assert all(u.startswith(("file:", "data:", "blob:", "about:")) for u in page.requests), page.requests
    assert "WebGL is not available" not in page.inner_text("#scene-status")
    first = _pixels(_canvas_png(page))
    background = np.array([247, 247, 250])
    assert np.mean(np.any(np.abs(first - background) > 30, axis=2)) > 0.01          # the canvas draws
    page.locator("#frame").fill("150")
    page.wait_for_function("document.getElementById('time').textContent.startsWith('t = 1.5')")
    _painted(page)
    moved = _pixels(_canvas_png(page))
    assert np.mean(np.any(np.abs(moved - first) > 30, axis=2)) > 0.002              # the slider moves it
    page.locator("#frame").fill("0")
    page.wait_for_function("document.getElementById('time').textContent.startsWith('t = 0.000')")
    _painted(page)
    assert np.array_equal(_pixels(_canvas_png(page)), first)                          # and back
    page.click("#play")
    page.wait_for_function("+document.getElementById('frame').value > 0", timeout=10000)      # playing advances
    page.click("#play")
    assert page.problems == []
    page.close()


def test_plots_in_a_browser(report, page_of):
    """The SVG plots: a curve per variable, a legend entry hides its curve, dragging zooms the time
    axis and a double-click resets it, the animation's time is a line in every panel."""
    page = page_of(report)
    fig = _figure(report.read_text())
    curves = sum(len(p["names"]) for p in fig["panels"])
    assert page.locator("#plots svg path.curve").count() == curves
    page.locator("#plots .legend .item").first.click()
    assert page.locator("#plots svg path.curve").count() == curves - 1
    page.locator("#plots .legend .item").first.click()
    box = page.locator("#plots svg").first.bounding_box()
    page.mouse.move(box["x"] + 0.3 * box["width"], box["y"] + 0.5 * box["height"])
    page.mouse.down()
    page.mouse.move(box["x"] + 0.6 * box["width"], box["y"] + 0.5 * box["height"], steps=4)
    page.mouse.up()
    lo, hi = page.evaluate("window.dynamicaPlots.range()")
    assert 0 < lo < hi < 3.0 and hi - lo < 1.5
    page.locator("#plots svg").first.dblclick()
    assert page.evaluate("window.dynamicaPlots.range()") == [0.0, 3.0]
    page.locator("#frame").fill("100")
    page.wait_for_function("document.getElementById('time').textContent.startsWith('t = 1.0')")
    xs = page.evaluate("[...document.querySelectorAll('#plots line.now')].map((l) => +l.getAttribute('x1'))")
    assert len(xs) == len(fig["panels"]) and len(set(xs)) == 1       # the same time in every panel
    assert page.problems == []
    page.close()


if os.environ.get("DYNAMICA_SCREENSHOT"):      # a tool, collected only when asked: refreshes docs/'s screenshot
    def test_docs_screenshot(page_of, tmp_path):
        from oracles.pin_urdf import robot_file
        urdf = robot_file("robots/ur_description/urdf/ur5_robot.urdf")
        out = tmp_path / "ur5.html"
        assert main(["simulate", str(urdf), "--torques", "off", "--t-end", "2", "--output-step", "0.01", "--report",
                     str(out), "-q"]) == 0
        page = page_of(out)
        page.locator("#frame").fill("120")
        _painted(page)
        page.screenshot(path=os.environ["DYNAMICA_SCREENSHOT"], full_page=False)
        assert page.problems == []
