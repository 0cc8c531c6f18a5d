"""`dynamica simulate MODEL --report report.html`: one self-contained HTML file (docs/report.md).

No network when it is opened, and small (a 2-body model's page is about 100 KB): the plots are
SVG drawn by a script of our own (runtime/report/plots.js) and the 3-D view is a small WebGL
viewer of our own (runtime/report/viewer.js) over the scene of runtime/report/scene.py, whose
meshes are simplified and quantised. The page has
  - interactive plots (zoom, hover, toggle a curve in the legend): one panel per unit, axis
    labels with units, legends beside their panels, stage boundaries as dashed lines and the
    animation's time as a moving line;
  - the run (model, form, integrator, RHS calls), the summary table, the parameters (the run's
    values, defaults, units, descriptions);
  - the 3-D animation of the mechanism with play/pause, a time slider and the speed.
"""

from __future__ import annotations

import base64
import html
import json
from pathlib import Path

import numpy as np

from dynamica.files import atomic_path
from dynamica.runtime.results.result import parse_vars, series, summary_table
from dynamica.runtime.results.units import group_by_unit, label, variable_units


def default_panels(names, units) -> list:
    """Every variable, one panel per unit: coordinates and rates first, outputs after."""
    return group_by_unit([list(names)], units)


def boundaries_of(result) -> list:
    """(time, label) of the stage boundaries of a result (`result.stages`, docs/api.md)."""
    stages = getattr(result, "stages", None) or []
    return [(float(s["t_start"]), str(s.get("name", ""))) for s in stages[1:]]


def axis_title(panel, units) -> str:
    """The y-axis title of a panel: its variable (or "value" for several) and the unit."""
    unit = units.get(panel[0], "") if panel else ""
    name = panel[0] if len(panel) == 1 else "value"
    return name + (label(unit) if unit else "")


def _f64(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f8").tobytes()).decode()


def _f32(a) -> str:
    return base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()


def plot_data(result, panels, units, boundaries=()) -> dict:
    """What runtime/report/plots.js draws: the times as float64 and each plotted variable as
    float32 (base64: 5.3 bytes a value, 7 significant digits, more than a plot or its hover shows),
    the panels (curve names, the axis title with the unit) and the stage boundaries."""
    data = series(result)
    names = list(dict.fromkeys(n for panel in panels for n in panel))
    return {"t": _f64(result.t), "series": {n: _f32(data[n]) for n in names},
            "panels": [{"names": list(panel), "title": axis_title(panel, units)} for panel in panels],
            "xtitle": "t [s]", "boundaries": [{"t": float(t), "label": str(name)} for t, name in boundaries]}


def _table(header, rows) -> str:
    th = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _fmt(x) -> str:
    if isinstance(x, (tuple, list)):
        return "[" + ", ".join(_fmt(v) for v in x) + "]"
    return f"{x:.6g}" if isinstance(x, float) else str(x)


def _in_unit(value, unit_text):
    """An SI value (what the model holds) in its parameter's declared unit (converted at load:
    generator/spec/units.py), for the table that shows that unit."""
    from dynamica.generator.spec.units import UnitError, unit
    try:
        f = unit(unit_text.strip()).factor if unit_text.strip() else 1.0
    except UnitError:
        f = 1.0
    if f == 1.0:
        return value
    return tuple(v / f for v in value) if isinstance(value, tuple) else value / f


def parameter_rows(model, params) -> list:
    spec = {p.name: p for p in model.spec.parameters}
    rows = []
    for name, default in model.parameters.items():
        value = (params or {}).get(name, default)
        value = tuple(value) if isinstance(value, (list, tuple)) else value
        default = tuple(default) if isinstance(default, (list, tuple)) else default
        changed = value != default
        value, default = _in_unit(value, spec[name].unit), _in_unit(default, spec[name].unit)
        rows.append(
            (name, _fmt(value), _fmt(default) if changed else "", spec[name].unit, spec[name].description)
        )
    return rows


def summary_rows(result, names, units) -> list:
    tab = summary_table(result, names)
    return [(n, units.get(n, ""), _fmt(i), _fmt(dv), _fmt(tt), _fmt(m), _fmt(s))
            for n, i, dv, tt, m, s in zip(tab.names, tab.initial, tab.max_dev, tab.t_max_dev, tab.mean, tab.std)]


def stage_tables(result, names) -> str:
    """D90's summary tables across the stages (runtime/stages/summary.py, figs. 5.5-5.7) as HTML, or ""
    for a run without stages."""
    if getattr(result, "stage", None) is None or not result.stages:
        return ""
    from dynamica.runtime.stages.summary import fmt7, stage_summary
    summ = stage_summary(result, names, at="all")
    return "".join(f"<h3>{html.escape(tab.title)}</h3>" + _table(["", *tab.variables], [
        [label, *(fmt7(x) or "-" for x in vals)] for label, vals in zip(tab.labels, tab.values)])
        for tab in summ.tables)


def quantised(triangles):
    """Triangles (K*9 floats) as an indexed mesh with 16-bit coordinates: (lo, step, vertices as
    uint16 (V, 3), faces as indices (K, 3)); a vertex is lo + step * q, within step / 2 of where it was
    (under 2 micrometres for a part 0.2 m across)."""
    tri = np.asarray(triangles, dtype=float).reshape(-1, 3)
    lo, hi = tri.min(axis=0), tri.max(axis=0)
    step = np.maximum(hi - lo, 1e-12) / 65535.0
    q = np.round((tri - lo) / step).astype(np.uint16)
    verts, faces = np.unique(q, axis=0, return_inverse=True)
    return lo, step, verts, faces.reshape(-1, 3)


def scene_json(scene) -> str:
    b64 = lambda a, t: base64.b64encode(np.ascontiguousarray(a, dtype=t).tobytes()).decode()   # noqa: E731
    centre, radius = scene.extent
    shapes = []
    for s in scene.shapes:
        lo, step, verts, faces = quantised(s["triangles"])
        wide = len(verts) > 65535
        shapes.append({"body": s["body"], "color": [float(c) for c in s["color"]], "lo": lo.tolist(),
                       "step": step.tolist(), "vertices": b64(verts, "<u2"), "wide": wide,
                       "faces": b64(faces, "<u4" if wide else "<u2")})
    data = {"names": scene.names, "parents": scene.parents, "t": [float(x) for x in scene.t],
            "frames": b64(scene.frames, "<f4"), "center": [float(x) for x in centre], "radius": float(radius),
            "up": [float(x) for x in scene.up], "shapes": shapes}
    return json.dumps(data).replace("</", "<\\/")


def write_report(model, result, path, params=None, variables=None, boundaries=None, title=None) -> Path:
    """Write the report page of a run to `path` (atomically); returns the path."""
    import jinja2

    from dynamica.runtime.report.scene import build_scene
    units = variable_units(model)
    data = series(result)
    panels = group_by_unit(parse_vars(variables, data), units) if variables else default_panels(list(data), units)
    bounds = list(boundaries) if boundaries is not None else boundaries_of(result)
    title = title or f"{model.name} ({model.form})"
    plots = json.dumps(plot_data(result, panels, units, bounds)).replace("</", "<\\/")
    scene = build_scene(model, result, params)
    coords = getattr(result, "columns", None) or model.coordinates       # a cyclogram: every stage's columns
    names = [*coords, *(f"der({c})" for c in coords)]
    run = [
        ("model", f"{model.name} ({model.spec.file})"),
        ("form", model.form),
        ("coordinates", ", ".join(model.coordinates)),
        ("integrator", result.method),
        ("time span", f"{result.t[0]:g} .. {result.t[-1]:g} s"),
        ("output points", len(result.t)),
        ("RHS calls", result.nfev),
    ]
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(Path(__file__).resolve().parent)),
                             autoescape=False)
    page = env.get_template("report.html.j2").render(
        title=html.escape(title), run=_table(("", ""), run),
        summary=_table(("variable", "unit", "initial", "max deviation", "at t", "mean", "std"),
                       summary_rows(result, names, units)),
        stages=stage_tables(result, list(coords)),
        parameters=_table(("parameter", "value", "default (if changed)", "unit", "description"),
                          parameter_rows(model, params)),
        notes=[html.escape(n) for n in scene.notes], plots=plots, scene=scene_json(scene),
        boundaries=json.dumps([t for t, _ in bounds]),
        viewer=(Path(__file__).resolve().parent / "viewer.js").read_text(),
        plotter=(Path(__file__).resolve().parent / "plots.js").read_text())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(page, encoding="utf-8")
    return path
