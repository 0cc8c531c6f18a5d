"""Result files, plot pages and summary tables and the CLI flags for them."""

from __future__ import annotations

import re

import numpy as np
import pytest

import dynamica
from dynamica.runtime.cli.main import main
from dynamica.runtime.results.result import SimulationResult, parse_vars, plot_pages, series, summary_table


def synthetic():
    """q1 = sin t, q2 = 1 + t^2 on [0, 2 pi]: every table entry is known in closed form."""
    t = np.linspace(0.0, 2 * np.pi, 2001)
    q = np.column_stack([np.sin(t), 1 + t ** 2])
    qd = np.column_stack([np.cos(t), 2 * t])
    return SimulationResult(t=t, q=q, qd=qd, coordinates=("a", "b"), method="test",
                            outputs={"tip.position": np.column_stack([t, 2 * t, 3 * t]), "energy": 5 + 0 * t})


def _pdf_pages(path):
    return len(re.findall(rb"/Type\s*/Page[^s]", path.read_bytes()))


def test_series_names():
    s = series(synthetic())
    assert list(s)[:4] == ["a", "b", "der(a)", "der(b)"]
    np.testing.assert_array_equal(s["tip.position[1]"], 2 * synthetic().t)
    assert "energy" in s


def test_parse_vars():
    avail = ["a", "b", "der(a)", "der(b)"]
    assert parse_vars("a,b der(a)", avail) == [["a", "b"], ["der(a)"]]
    assert parse_vars("a;b", avail) == [["a"], ["b"]]
    assert parse_vars(None, avail) == [["a", "b"], ["der(a)", "der(b)"]]
    with pytest.raises(ValueError, match="unknown variable.*'c'.*available: a, b"):
        parse_vars("a,c", avail)


def test_summary_table_closed_form(tmp_path):
    tab = summary_table(synthetic(), ["a", "b", "der(a)"], times=[np.pi / 2, np.pi])
    a, b, da = 0, 1, 2
    assert tab.initial[a] == 0.0 and tab.initial[b] == 1.0 and tab.initial[da] == 1.0
    np.testing.assert_allclose(tab.at_times[a], [1.0, 0.0], atol=1e-5)
    np.testing.assert_allclose(tab.at_times[b], [1 + np.pi ** 2 / 4, 1 + np.pi ** 2], rtol=1e-5)
    # sin: largest deviation from 0 is +-1 (first reached at pi/2); cos: -2 at pi
    assert abs(abs(tab.max_dev[a]) - 1) < 1e-6 and tab.t_max_dev[a] == pytest.approx(np.pi / 2, abs=5e-3)
    assert tab.max_dev[da] == pytest.approx(-2.0, abs=1e-6) and tab.t_max_dev[da] == pytest.approx(np.pi, abs=5e-3)
    assert tab.max_dev[b] == pytest.approx(4 * np.pi ** 2) and tab.t_max_dev[b] == pytest.approx(2 * np.pi)
    # mean and std over uniform samples: mean(sin) = 0, std(sin) = 1/sqrt(2); mean(1+t^2) = 1 + 4 pi^2/3
    assert tab.mean[a] == pytest.approx(0.0, abs=1e-3) and tab.std[a] == pytest.approx(2 ** -0.5, rel=1e-3)
    assert tab.mean[b] == pytest.approx(1 + 4 * np.pi ** 2 / 3, rel=1e-3)
    tab.to_csv(tmp_path / "t.csv")
    rows = (tmp_path / "t.csv").read_text().splitlines()
    assert rows[0].startswith("variable,initial,t=1.5708,t=3.14159,max deviation") and len(rows) == 4
    assert "der(a)" in tab.text()
    with pytest.raises(ValueError, match="outside the simulated interval"):
        summary_table(synthetic(), ["a"], times=[7.0])


def test_summary_table_over_the_points_where_a_variable_exists():
    """A staged run's columns are NaN where a stage has no such coordinate (a new user's case:
    the statistics of a coordinate that ends at a release were NaN, its time of largest deviation
    that of the release); here a = sin t exists for t < pi only, b = t^2 from t = 1 on"""
    res = synthetic()
    t = res.t
    res.q[:, 0] = np.where(t < np.pi, np.sin(t), np.nan)
    res.q[:, 1] = np.where(t >= 1.0, t ** 2, np.nan)
    tab = summary_table(res, ["a", "b"], times=[0.5, 4.0])
    assert tab.initial == [0.0, pytest.approx(1.0, abs=5e-3)]
    assert tab.max_dev[0] == pytest.approx(1.0, abs=1e-6) and tab.t_max_dev[0] == pytest.approx(np.pi / 2, abs=5e-3)
    assert tab.max_dev[1] == pytest.approx(4 * np.pi**2 - 1, abs=2e-2) and tab.t_max_dev[1] == pytest.approx(2 * np.pi)
    assert tab.mean[0] == pytest.approx(2 / np.pi, rel=1e-3)              # mean of sin over [0, pi)
    assert np.isfinite(tab.std[0]) and np.isfinite(tab.std[1])
    assert np.isnan(tab.at_times[0][1]) and np.isnan(tab.at_times[1][0])   # not there at those times
    res.q[:, 0] = np.nan
    assert np.isnan(summary_table(res, ["a"]).initial[0])


def test_plot_pages_pdf_and_png(tmp_path):
    res = synthetic()
    rep = plot_pages(res, tmp_path / "p.pdf", "a,b der(a) der(b) energy tip.position[0],tip.position[2]",
                     panels_per_page=2, deviation=True)
    assert rep.pages == 3 and rep.panels == 5
    assert _pdf_pages(tmp_path / "p.pdf") == 3
    rep = plot_pages(res, tmp_path / "p.png", "a b der(a)", panels_per_page=2)
    assert [f.name for f in rep.files] == ["p.png", "p_2.png"]
    for f in rep.files:
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 5000


def test_npz_and_csv_round_trip(tmp_path):
    res = synthetic()
    res.to_npz(tmp_path / "r.npz")
    back = SimulationResult.read_npz(tmp_path / "r.npz")
    np.testing.assert_array_equal(back.q, res.q)
    np.testing.assert_array_equal(back.outputs["tip.position"], res.outputs["tip.position"])
    assert back.coordinates == res.coordinates
    res.to_csv(tmp_path / "r.csv")
    back = SimulationResult.read_csv(tmp_path / "r.csv")
    np.testing.assert_array_equal(back.qd, res.qd)


def test_segmented_run_equals_one_piece(models_dir):
    """progress= runs the integration in pieces (restarts): same trajectory to tolerance,
    and the callback sees the rows in order exactly once."""
    model = dynamica.load(str(models_dir / "double_pendulum.yaml"))
    whole = dynamica.simulate(model, t_end=3.0, rtol=1e-10, atol=1e-12, output_step=0.05)
    seen = []
    parts = dynamica.simulate(model, t_end=3.0, rtol=1e-10, atol=1e-12, output_step=0.05, segments=7,
                              progress=lambda res, new: seen.append(res.t[new]))
    np.testing.assert_array_equal(parts.t, whole.t)
    np.testing.assert_array_equal(np.concatenate(seen), whole.t)
    assert len(seen) == 7
    assert np.abs(parts.q - whole.q).max() < 1e-8


def test_cli_pages_table_and_flushed_csv(tmp_path, models_dir, capsys):
    rc = main(["simulate", str(models_dir / "double_pendulum.yaml"), "--t-end", "2", "-q",
               "--out", str(tmp_path / "r.csv"), "--plot", str(tmp_path / "p.pdf"), "--vars", "phi1,phi2 der(phi1)",
               "--deviation", "--table", str(tmp_path / "s.csv"), "--table-times", "0.5,1"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "1 page(s), 2 panel(s)" in out and "max deviation" in out
    r = SimulationResult.read_csv(tmp_path / "r.csv")
    assert r.t[-1] == pytest.approx(2.0) and np.all(np.diff(r.t) > 0)
    assert _pdf_pages(tmp_path / "p.pdf") == 1
    assert len((tmp_path / "s.csv").read_text().splitlines()) == 4
    rc = main(["simulate", str(models_dir / "double_pendulum.yaml"), "--t-end", "1", "-q", "--vars", "theta1",
               "--plot", str(tmp_path / "x.pdf")])
    assert rc == 2 and "unknown variable(s) 'theta1'" in capsys.readouterr().err
    assert not (tmp_path / "x.pdf").exists()


def test_simulate_passes_events(models_dir):
    """Zero crossings of the first coordinate located by simulate on the compiled Adams path,
    the same as with scipy's DOP853 (1e-7 at these tolerances), and a terminal event stops it."""
    model = dynamica.load(str(models_dir / "double_pendulum.yaml"))

    def cross(t, y):
        return y[0]
    a = dynamica.simulate(model, t_end=4.0, rtol=1e-11, atol=1e-12, output_step=0.1, events=[cross])
    b = dynamica.simulate(model, t_end=4.0, rtol=1e-11, atol=1e-12, output_step=0.1, events=[cross], method="DOP853")
    ta, tb = a.info["t_events"][0], b.info["t_events"][0]
    assert len(ta) >= 2 and len(ta) == len(tb)
    np.testing.assert_allclose(ta, tb, atol=1e-7)
    cross.terminal = True
    c = dynamica.simulate(model, t_end=4.0, rtol=1e-11, atol=1e-12, output_step=0.1, events=[cross])
    assert c.info["status"] == 1 and c.t[-1] <= ta[0] + 1e-12
