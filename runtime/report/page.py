"""`dynamica simulate MODEL --report report.html`: one self-contained HTML file (docs/report.md).

No network when it is opened: plotly.js is bundled inline (`include_plotlyjs=True`) and the 3-D
view is a small WebGL viewer of our own (runtime/report/viewer.js) over the scene of
runtime/report/scene.py. The page has
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


def figure(result, panels, units, boundaries=(), title=""):
    """The plotly figure: one row per panel sharing the time axis, a legend beside each row."""
    from plotly.subplots import make_subplots
    data = series(result)
    rows = max(len(panels), 1)
    fig = make_subplots(rows=rows, cols=1, shared_xaxes=True, vertical_spacing=min(0.06, 0.3 / rows))
    t = np.asarray(result.t)
    for r, panel in enumerate(panels, start=1):
        legend = "legend" if r == 1 else f"legend{r}"
        for name in panel:
            fig.add_trace(dict(type="scattergl" if len(t) > 5000 else "scatter", x=t, y=np.asarray(data[name]),
                               name=name, mode="lines", legend=legend,
                               hovertemplate=f"{html.escape(name)}: %{{y:.6g}}{html.escape(label(units.get(name, '')))}"
                                             "<br>t = %{x:.4g} s<extra></extra>"), row=r, col=1)
        unit = units.get(panel[0], "") if panel else ""
        fig.update_yaxes(title_text=(", ".join(panel) if len(panel) == 1 else "value") + label(unit)
                         if unit else (panel[0] if len(panel) == 1 else "value"), row=r, col=1)
    fig.update_xaxes(title_text="t [s]", row=rows, col=1)
    layout = {"height": 230 * rows + 120, "margin": dict(l=70, r=230, t=50, b=50), "title": title,
              "hovermode": "x unified", "template": "plotly_white"}
    for r in range(1, rows + 1):
        dom = fig.layout[f"yaxis{'' if r == 1 else r}"].domain
        layout["legend" if r == 1 else f"legend{r}"] = dict(x=1.02, y=dom[1], xanchor="left", yanchor="top",
                                                          bgcolor="rgba(255,255,255,0.8)")
    fig.update_layout(**layout)
    for tb, name in boundaries:
        fig.add_vline(x=tb, line_dash="dash", line_color="#888", annotation_text=name, annotation_position="top")
    return fig


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


def scene_json(scene) -> str:
    b64 = lambda a: base64.b64encode(np.ascontiguousarray(a, dtype="<f4").tobytes()).decode()   # noqa: E731
    centre, radius = scene.extent
    data = {"names": scene.names, "parents": scene.parents, "t": [float(x) for x in scene.t],
            "frames": b64(scene.frames), "center": [float(x) for x in centre], "radius": float(radius),
            "shapes": [{"body": s["body"], "color": [float(c) for c in s["color"]], "triangles": b64(s["triangles"])}
                       for s in scene.shapes]}
    return json.dumps(data).replace("</", "<\\/")


def write_report(model, result, path, params=None, variables=None, boundaries=None, title=None) -> Path:
    """Write the report page of a run to `path` (atomically); returns the path."""
    import jinja2
    from plotly.offline import get_plotlyjs  # noqa: F401 (fails early when plotly is missing)

    from dynamica.runtime.report.scene import build_scene
    units = variable_units(model)
    data = series(result)
    panels = group_by_unit(parse_vars(variables, data), units) if variables else default_panels(list(data), units)
    bounds = list(boundaries) if boundaries is not None else boundaries_of(result)
    title = title or f"{model.name} ({model.form})"
    fig = figure(result, panels, units, bounds, title)
    plots = fig.to_html(full_html=False, include_plotlyjs=True, div_id="plots", config={"displaylogo": False})
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
        viewer=(Path(__file__).resolve().parent / "viewer.js").read_text())
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(page, encoding="utf-8")
    return path
