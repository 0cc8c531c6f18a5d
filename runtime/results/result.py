"""What a simulation reports: the result and its files (CSV, NPZ), named time series, plot pages
and summary tables (D90, 5.2.4).

D90 shows results as pages of time plots (several panels per page, several curves per
panel, absolute or as deviations from the initial value, figs. 5.4-5.5) and as summary
tables at chosen instants with the maximum deviation, mean and standard deviation (figs.
5.6-5.7, appendix B). Both work on the `series` of a result: coordinates by name, rates as
`der(name)`, and every computed output (`result.outputs`) by its key.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from dynamica.files import atomic_path
from dynamica.runtime.results.stages import plot_view


# ------------------------------------------------------------------ the result of a simulation and its files
@dataclass
class SimulationResult:
    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    coordinates: tuple
    method: str
    nfev: int = 0
    success: bool = True
    message: str = ""
    info: dict = field(default_factory=dict)
    outputs: dict = field(default_factory=dict)     # name -> array over t (model `outputs`)
    #: a model with `stages` (runtime/stages/cyclogram.py): the stage name of every row (None otherwise);
    #: a boundary's time appears twice, as the last row of one stage and the first of the next
    stage: np.ndarray | None = None
    #: per stage, {"name", "type", "t_start", "t_end", "reason"} (reason: "time", "event", "statics")
    stages: list = field(default_factory=list)

    @property
    def columns(self) -> tuple:
        """Names of the columns of q and qd (across all stages for a model with stages)."""
        return tuple(self.coordinates)

    def to_csv(self, path):
        """Columns: t, (stage: for a model with stages), each coordinate, der(coordinate), then the
        outputs (`name` or `name[k]`). Written under a temporary name and renamed: an existing file is
        replaced only when the new one is complete."""
        with CsvWriter(path, self.coordinates, output_columns(self.outputs), keep_partial=False,
                       staged=self.stage is not None) as w:
            w.write(self.t, self.q, self.qd, self.outputs, stage=self.stage)

    def to_npz(self, path):
        """Every array (t, q, qd, outputs) with the coordinate names, in numpy's npz format
        (`.npz` is appended to a name without it, as numpy does); written atomically."""
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        with atomic_path(path) as tmp, open(tmp, "wb") as fh:
            staged = {} if self.stage is None else {"stage": np.asarray(self.stage, dtype=str),
                                                     "stages": _stages_array(self.stages)}
            np.savez(fh, t=self.t, q=self.q, qd=self.qd, coordinates=np.array(self.coordinates),
                     method=np.array(self.method), nfev=np.array(self.nfev), **staged,
                     **{f"out:{k}": np.asarray(v) for k, v in self.outputs.items()})

    @classmethod
    def read_npz(cls, path):
        with np.load(path, allow_pickle=False) as z:
            staged = {}
            if "stage" in z.files:
                staged = {"stage": z["stage"].astype(str), "stages": _stages_list(z["stages"])}
            return cls(t=z["t"], q=z["q"], qd=z["qd"], coordinates=tuple(str(c) for c in z["coordinates"]),
                       method=str(z["method"]), nfev=int(z["nfev"]), **staged,
                       outputs={k[4:]: z[k] for k in z.files if k.startswith("out:")})

    def series(self) -> dict:
        """name -> time series (coordinates, der(...), outputs)."""
        return series(self)

    @classmethod
    def read_csv(cls, path):
        """A result from a CSV file of `to_csv`/`CsvWriter`, or from the `.partial` file an
        interrupted run left: an incomplete last row (cut by the interruption) is dropped and
        `info["partial"]` is True."""
        with open(path, newline="") as fh:
            text = fh.read()
        rows = list(csv.reader(text.splitlines()))
        if not rows:
            raise ValueError(f"{path}: empty results file (no header)")
        header, body = rows[0], rows[1:]
        cut = bool(body) and (not text.endswith("\n") or len(body[-1]) != len(header))
        if cut:
            body = body[:-1]
        stage = None
        if len(header) > 1 and header[1] == "stage":        # a model with stages: the names column
            stage = np.array([r[1] for r in body], dtype=str)
            header, body = header[:1] + header[2:], [r[:1] + r[2:] for r in body]
        data = np.array(body, dtype=float).reshape(len(body), len(header))
        n = sum(1 for h in header if h.startswith("der("))
        outputs, k = {}, 1 + 2 * n
        while k < len(header):
            key = header[k].split("[")[0]
            j = k
            while j < len(header) and header[j].split("[")[0] == key and (j == k or "[" in header[j]):
                j += 1
            outputs[key] = data[:, k] if "[" not in header[k] else data[:, k:j]
            k = j
        partial = cut or str(path).endswith(PARTIAL)
        return cls(t=data[:, 0], q=data[:, 1:1 + n], qd=data[:, 1 + n:1 + 2 * n], coordinates=tuple(header[1:1 + n]),
                   method="csv", outputs=outputs, info={"partial": partial} if partial else {}, stage=stage,
                   stages=_stages_of_rows(data[:, 0], stage) if stage is not None else [])


#: the fields of a `stages` record, in the order the NPZ file stores them
STAGE_FIELDS = ("name", "type", "t_start", "t_end", "reason")


def _stages_array(stages) -> np.ndarray:
    return np.array([[str(s.get(k, "")) for k in STAGE_FIELDS] for s in stages], dtype=str).reshape(
        -1, len(STAGE_FIELDS)
    )


def _stages_list(arr) -> list:
    out = []
    for row in np.asarray(arr).reshape(-1, len(STAGE_FIELDS)):
        d = dict(zip(STAGE_FIELDS, (str(x) for x in row)))
        d["t_start"], d["t_end"] = float(d["t_start"]), float(d["t_end"])
        out.append(d)
    return out


def _stages_of_rows(t, stage) -> list:
    """`stages` as far as a CSV file tells it: each run of equal names (type and reason unknown)."""
    out = []
    for k, name in enumerate(stage):
        if not out or out[-1]["name"] != name or k == 0:
            out.append({"name": str(name), "type": "", "t_start": float(t[k]), "t_end": float(t[k]), "reason": ""})
        out[-1]["t_end"] = float(t[k])
    return out


#: suffix of a results file being written: renamed to its name when complete, left as a
#: readable prefix when the run is interrupted
PARTIAL = ".partial"


def output_columns(outputs) -> list:
    """(key, column names) per output: `key` for a scalar series, `key[j]` for vector components."""
    cols = []
    for key, arr in outputs.items():
        arr = np.asarray(arr)
        width = int(np.prod(arr.shape[1:]))
        cols.append((key, [key] if arr.ndim == 1 else [f"{key}[{j}]" for j in range(width)]))
    return cols


class CsvWriter:
    """Results written row by row and flushed. The rows go to `<path>.partial`, renamed to `path`
    by `close()`; an interrupted run (an exception inside `with`, a kill) leaves the previous
    `path` untouched and the rows so far in `<path>.partial` (`keep_partial=False`: removed)."""

    def __init__(self, path, coordinates, output_columns=(), keep_partial=True, staged=False):
        self.path = Path(path)
        self.staged = staged
        self.partial = self.path.with_name(self.path.name + PARTIAL)
        self.keep_partial = keep_partial
        self.rows = 0
        self.fh = open(self.partial, "w", newline="")
        self.w = csv.writer(self.fh)
        self.keys = [k for k, _ in output_columns]
        self.w.writerow(["t", *(["stage"] if staged else []), *coordinates, *(f"der({c})" for c in coordinates),
                         *(c for _, cols in output_columns for c in cols)])

    def write(self, t, q, qd, outputs=None, stage=None):
        outs = [np.asarray(outputs[k]).reshape(len(t), -1) for k in self.keys] if self.keys else []
        for k in range(len(t)):
            self.w.writerow([repr(float(t[k])), *([str(stage[k])] if self.staged else []),
                             *(repr(float(x)) for x in q[k]), *(repr(float(x)) for x in qd[k]),
                             *(repr(float(x)) for o in outs for x in o[k])])
        self.fh.flush()
        self.rows += len(t)

    def close(self):
        """Finish: the complete file takes the name `path`."""
        if not self.fh.closed:
            self.fh.close()
            os.replace(self.partial, self.path)

    def abort(self):
        """Stop without publishing: the prefix stays in `<path>.partial` (or is removed)."""
        if not self.fh.closed:
            self.fh.close()
            if not self.keep_partial:
                self.partial.unlink(missing_ok=True)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        self.abort() if exc_type is not None else self.close()


# ------------------------------------------------------------------ series, plots and tables
def series(result) -> dict:
    """name -> 1-D array over result.t: coordinates, der(coordinate), scalar outputs and the
    components of vector outputs as `name[k]`."""
    out = {}
    for k, c in enumerate(result.coordinates):
        out[c] = result.q[:, k]
    for k, c in enumerate(result.coordinates):
        out[f"der({c})"] = result.qd[:, k]
    for name, arr in (getattr(result, "outputs", None) or {}).items():
        arr = np.asarray(arr)
        if arr.ndim == 1:
            out[name] = arr
        else:
            flat = arr.reshape(arr.shape[0], -1)
            for j in range(flat.shape[1]):
                out[f"{name}[{j}]"] = flat[:, j]
    return out


def parse_vars(text: str | None, available) -> list:
    """Panels from a --vars string: panels separated by ';' or spaces, curves by ','.

    `q1,q2 der(q1)` -> [["q1", "q2"], ["der(q1)"]]. None -> one panel of coordinates and one
    of rates. Unknown names are an error listing what there is.
    """
    available = list(available)
    if not text:
        coords = [v for v in available if not v.startswith("der(") and "[" not in v and "." not in v]
        rates = [v for v in available if v.startswith("der(")]
        return [p for p in (coords, rates) if p]
    panels = [[v.strip() for v in chunk.split(",") if v.strip()]
              for chunk in text.replace(";", " ").split()]
    unknown = [v for p in panels for v in p if v not in available]
    if unknown:
        raise ValueError(f"unknown variable(s) {', '.join(map(repr, unknown))}; available: {', '.join(available)}")
    return [p for p in panels if p]


@dataclass
class PlotReport:
    files: list
    pages: int
    panels: int


def _plot_page(plt, result, data, view, page, deviation, units, scales):
    """One page of `plot_pages`: a panel per group of variables, sharing the time axis."""
    from dynamica.runtime.results.units import label
    fig, axes = plt.subplots(max(len(page), 1), 1, figsize=(10.5, 2.6 * max(len(page), 1) + 0.6),
                             sharex=True, squeeze=False)
    for ax, panel in zip(axes[:, 0], page):
        for name in panel:
            y = data[name] if name not in (scales or {}) else np.asarray(data[name]) / scales[name]
            ax.plot(result.t, view.curve(y, deviation), label=name)
        view.decorate(ax, top=ax is axes[0, 0])
        ax.grid(True)
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
        what = "deviation" if deviation else (panel[0] if len(panel) == 1 else "value")
        ax.set_ylabel(what + label(units.get(panel[0], "") if panel else ""))
    axes[-1, 0].set_xlabel("t [s]")
    return fig


def plot_pages(result, path, vars=None, *, deviation=False, panels_per_page=4, title=None, units=None,
               boundaries=None, stages=None, scales=None) -> PlotReport:
    """Pages of time plots. PDF: one multi-page file; other formats (PNG, SVG): one file per
    page, `name.png`, `name_2.png`, ... `deviation=True` plots x(t) - x(t0). `units` (variable ->
    unit, runtime/results/units.py): axis labels with units and one panel per unit (a panel of --vars
    mixing units is split); `scales` (variable -> factor to SI, runtime/results/units.py display_units):
    those variables plotted in their declared units (value / factor). A result with stages has its
    stage boundaries marked (`boundaries`:
    other (time, label) pairs instead); `stages` (as `staged.select_stages`) plots only those.
    Legends stand beside the panels, outside the data."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    from dynamica.runtime.results.units import group_by_unit

    data = series(result)
    panels = parse_vars(vars, data) if not isinstance(vars, list) else vars
    units = units or {}
    panels = group_by_unit(panels, units) if units else panels
    view = plot_view(result, stages)
    if boundaries is not None:
        view.marks = list(boundaries)
    path = Path(path)
    pages = [panels[k:k + panels_per_page] for k in range(0, len(panels), panels_per_page)] or [[]]
    files = []
    with contextlib.ExitStack() as stack:          # every file written under a temporary name
        pdf = None
        if path.suffix.lower() == ".pdf":
            pdf = PdfPages(stack.enter_context(atomic_path(path)))
            stack.callback(pdf.close)              # closed before the rename
            files.append(path)
        for pno, page in enumerate(pages):
            fig = _plot_page(plt, result, data, view, page, deviation, units, scales)
            head = title or ""
            if len(pages) > 1:
                head = f"{head}  (page {pno + 1}/{len(pages)})".strip()
            if head:
                fig.suptitle(head)
            fig.tight_layout()
            if pdf:
                pdf.savefig(fig, bbox_inches="tight")
            else:
                f = path if pno == 0 else path.with_name(f"{path.stem}_{pno + 1}{path.suffix}")
                with atomic_path(f) as tmp:
                    fig.savefig(tmp, bbox_inches="tight")
                files.append(f)
            plt.close(fig)
    return PlotReport(files=files, pages=len(pages), panels=sum(len(p) for p in pages))


@dataclass
class SummaryTable:
    """Rows per variable: initial value, values at the chosen times, maximum deviation from the
    initial value (signed, with its time), mean and standard deviation over the output points
    where the variable exists (NaN elsewhere: the bodies a stage separates or removes)."""
    names: list
    times: list
    initial: list
    at_times: list          # per variable, per time
    max_dev: list
    t_max_dev: list
    mean: list
    std: list
    units: list = field(default_factory=list)    # per variable, when the table was given units

    def header(self):
        return (["variable"] + (["unit"] if self.units else []) + ["initial"] + [f"t={t:g}" for t in self.times]
                + ["max deviation", "t of max deviation", "mean", "std"])

    def rows(self):
        for k, name in enumerate(self.names):
            yield [name, *([self.units[k]] if self.units else []), self.initial[k], *self.at_times[k],
                   self.max_dev[k], self.t_max_dev[k], self.mean[k], self.std[k]]

    def to_csv(self, path):
        lead = 2 if self.units else 1
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(self.header())
            for r in self.rows():
                w.writerow([*r[:lead], *(repr(float(x)) for x in r[lead:])])

    def text(self) -> str:
        head = self.header()
        lead = 2 if self.units else 1
        body = [[*r[:lead], *(f"{x:.6g}" for x in r[lead:])] for r in self.rows()]
        widths = [max(len(str(c)) for c in col) for col in zip(head, *body)]
        fmt = lambda row: "  ".join(str(c).rjust(w) for c, w in zip(row, widths))  # noqa: E731
        return "\n".join([fmt(head), fmt(["-" * w for w in widths])] + [fmt(r) for r in body])


def summary_table(result, vars=None, times=(), units=None) -> SummaryTable:
    """The summary table of `vars` (names; default all coordinates and rates); values at
    `times` are linearly interpolated between output points (times outside are an error).
    `units` (variable -> unit label, or (label, factor to SI) for a variable shown in its declared
    unit: runtime/results/units.py): a unit column, the values in those units."""
    data = series(result)
    names = list(vars) if vars else [v for v in data if "[" not in v]
    unknown = [v for v in names if v not in data]
    if unknown:
        raise ValueError(f"unknown variable(s) {', '.join(map(repr, unknown))}; available: {', '.join(data)}")
    t = np.asarray(result.t)
    for tt in times:
        if not t[0] - 1e-12 <= tt <= t[-1] + 1e-12:
            raise ValueError(f"table time {tt} is outside the simulated interval [{t[0]}, {t[-1]}]")
    tab = SummaryTable(names, list(times), [], [], [], [], [], [])
    for name in names:
        y = np.asarray(data[name], dtype=float)
        if units is not None:
            u = units.get(name, "")
            label, factor = u if isinstance(u, tuple) else (u, 1.0)
            tab.units.append(label)
            y = y / factor if factor != 1.0 else y
        tab.at_times.append([float(np.interp(tt, t, y)) for tt in times])
        # over the points where the variable exists (a stage's separated bodies and removed
        # coordinates are NaN elsewhere): its first value there is the initial one
        defined = np.isfinite(y)
        yd, td = y[defined], t[defined]
        if not len(yd):
            for col in (tab.initial, tab.max_dev, tab.t_max_dev, tab.mean, tab.std):
                col.append(math.nan)
            continue
        dev = yd - yd[0]
        k = int(np.argmax(np.abs(dev)))
        tab.initial.append(float(yd[0]))
        tab.max_dev.append(float(dev[k]))
        tab.t_max_dev.append(float(td[k]))
        tab.mean.append(float(np.mean(yd)))
        tab.std.append(float(np.std(yd)) if len(yd) > 1 else math.nan)
    return tab
