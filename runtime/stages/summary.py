"""Summary tables of a staged run (D90, dissertation 5.2.4, figs. 5.5-5.7).

For chosen variables (names as in `results.series`), one table per kind:

- `start` (fig. 5.5, "at the start"): the value at each stage's first row;
- `end` (fig. 5.6, "at the exit"): the value at each stage's last row (its end time or event);
- `max` (fig. 5.7): the largest |x - x_initial| over each stage's rows. Every entry of fig. 5.7
  is positive, also for variables whose values at the start and the exit are negative, so the
  figure tabulates the absolute deviation; so does this table.

Each table opens with the initial value (fig. "Начальное положение": the value at the first row
of the chosen stages, or of the whole run with initial="run"), then one row per stage, then the
statistics across the stage rows (figs. 5.5, 5.6): mean, standard deviation about the mean
("СКД", population: numpy ddof=0, which reproduces fig. 5.6), root-mean-square deviation from
the initial value ("Начальное СКД") and range (max - min); the `max` table has mean, standard
deviation and range of the deviations. Last come the same four statistics over every row of the
chosen stages (fig. 5.7's rows "в залпе": mean, СКД, range over the whole time series; a
boundary's time is a row of both stages it joins).

A variable that does not exist in a stage is NaN in its rows: NaN rows are skipped, and a stage
in which the variable never exists has a NaN (empty) cell.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass

import numpy as np

from dynamica.files import atomic_path
from dynamica.runtime.results.result import series
from dynamica.runtime.results.stages import select_stages, selection_rows, stage_rows


# ------------------------------------------------------------------ statistics on arrays
def _finite(v):
    v = np.asarray(v, dtype=float)
    return v[np.isfinite(v)]


def _first(v, x0):
    f = _finite(v)
    return f[0] if f.size else math.nan


def _last(v, x0):
    f = _finite(v)
    return f[-1] if f.size else math.nan


def _max_abs_deviation(v, x0):
    f = _finite(v)
    return float(np.max(np.abs(f - x0))) if f.size else math.nan


#: statistic -> (row label, f(finite values, initial value)), D90's rows of figs. 5.5-5.7
STATISTICS = {
    "mean": ("mean", lambda v, x0: float(np.mean(v))),                            # Среднее значение
    "std": ("std", lambda v, x0: float(np.std(v))),                               # СКД (ddof=0)
    "initial_rms": ("initial RMS", lambda v, x0: float(np.sqrt(np.mean((v - x0) ** 2)))),  # Начальное СКД
    "range": ("range", lambda v, x0: float(np.max(v) - np.min(v))),               # Размах
}


def statistics(values, initial, which=tuple(STATISTICS)) -> dict:
    """name -> ndarray (nv,): the statistics of each column of `values` (k, nv) over its finite
    entries, with `initial` (nv,) the initial values; NaN for a column with none."""
    values = np.asarray(values, dtype=float).reshape(len(values), -1)
    initial = np.broadcast_to(np.asarray(initial, dtype=float), values.shape[1:])
    out = {}
    for name in which:
        fn = STATISTICS[name][1]
        col = []
        for j in range(values.shape[1]):
            f = _finite(values[:, j])
            col.append(fn(f, initial[j]) if f.size and math.isfinite(initial[j]) else math.nan)
        out[name] = np.array(col)
    return out


@dataclass(frozen=True)
class Kind:
    """One kind of summary table: its title, the value of a stage, the statistics across stages."""
    title: str
    value: object           # f(values of the stage's rows, initial) -> float
    across: tuple           # keys of STATISTICS


#: the tables of D90 (figs. 5.5, 5.6, 5.7), by the name `at=` and `--summary-at` take
KINDS = {
    "start": Kind("values at the start of each stage (fig. 5.5)", _first, tuple(STATISTICS)),
    "end": Kind("values at the end (or event) of each stage (fig. 5.6)", _last, tuple(STATISTICS)),
    "max": Kind("maximum |deviation| from the initial value in each stage (fig. 5.7)", _max_abs_deviation,
                ("mean", "std", "range")),
}
#: statistics over every row of the chosen stages, closing each table (fig. 5.7)
SERIES_STATISTICS = tuple(STATISTICS)
SERIES_SUFFIX = " (all rows)"


# ------------------------------------------------------------------ tables
@dataclass
class StageTable:
    """One table: rows `labels` (initial, stages, statistics) by columns `variables`."""
    kind: str
    title: str
    variables: list
    labels: list
    values: np.ndarray      # (len(labels), len(variables))

    def row(self, label) -> np.ndarray:
        return self.values[self.labels.index(label)]


@dataclass
class StageSummary:
    variables: list
    stages: list            # names of the chosen stages
    initial: np.ndarray
    tables: list            # StageTable per kind

    def table(self, kind) -> StageTable:
        return next(t for t in self.tables if t.kind == kind)

    def to_csv(self, path):
        """Columns `table` (start, end, max), `row` (initial, a stage name, a statistic), then one
        per variable at full precision; an empty cell where a variable has no value."""
        with atomic_path(path) as tmp, open(tmp, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(["table", "row", *self.variables])
            for tab in self.tables:
                for label, vals in zip(tab.labels, tab.values):
                    w.writerow([tab.kind, label, *("" if math.isnan(x) else repr(float(x)) for x in vals)])

    def markdown(self) -> str:
        parts = []
        for tab in self.tables:
            rule = ["---"] + ["---:"] * len(tab.variables)
            rows = [[label, *(fmt7(x) for x in vals)] for label, vals in zip(tab.labels, tab.values)]
            parts.append(
                "\n".join([f"**{tab.title}**", "", *(_md_row(r) for r in (["", *tab.variables], rule, *rows))])
            )
        return "\n\n".join(parts) + "\n"

    def text(self) -> str:
        """Aligned plain tables (labels left, numbers right; "-" where a variable has no value)."""
        parts = []
        for tab in self.tables:
            rows = [["", *tab.variables]]
            rows += [[label, *(fmt7(x) or "-" for x in vals)] for label, vals in zip(tab.labels, tab.values)]
            widths = [max(len(c) for c in col) for col in zip(*rows)]
            rows.insert(1, ["-" * w for w in widths])
            lines = ["  ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:]))]) for r in rows]
            parts.append("\n".join([tab.title, *lines]))
        return "\n\n".join(parts)

    def write(self, path):
        """A markdown file for a `.md` name, else CSV; written atomically."""
        if str(path).lower().endswith(".md"):
            with atomic_path(path) as tmp:
                tmp.write_text(self.markdown(), encoding="utf-8")
        else:
            self.to_csv(path)


def _md_row(cells) -> str:
    return "| " + " | ".join(cells) + " |"


def fmt7(x) -> str:
    """7 significant digits as D90 prints them: fixed for 0.1 <= |x| < 1e7, else exponent
    (0.7853645, 2.928378E-03, 0.000000E+00); NaN as an empty string."""
    x = float(x)
    if math.isnan(x):
        return ""
    if 0.1 <= abs(x) < 1e7:
        return f"{x:.{6 - math.floor(math.log10(abs(x)))}f}"
    return f"{x:.6E}"


def summary_variables(vars, data, default) -> list:
    """Names from a list or a string ('a,b der(a)': commas, spaces or ';'); None: `default`."""
    if vars is None:
        return list(default)
    names = vars.replace(";", " ").replace(",", " ").split() if isinstance(vars, str) else list(vars)
    unknown = [v for v in names if v not in data]
    if unknown:
        raise ValueError(f"unknown variable(s) {', '.join(map(repr, unknown))}; available: {', '.join(data)}")
    if not names:
        raise ValueError("no variables to tabulate")
    return names


def stage_summary(result, vars=None, *, at="all", stages=None, initial="selection") -> StageSummary:
    """The summary tables of `result` for `vars` (default: the coordinates).

    at: "start", "end", "max", "all" or a list of these. stages: which stages take part (see
    `staged.select_stages`; default: every dynamics stage). initial: "selection" (the first value
    in the chosen stages) or "run" (the first value of the whole result).
    """
    data = series(result)
    names = summary_variables(vars, data, result.coordinates)
    kinds = list(KINDS) if at == "all" else [at] if isinstance(at, str) else list(at)
    bad = [k for k in kinds if k not in KINDS]
    if bad:
        raise ValueError(f"summary table {', '.join(map(repr, bad))}: expected one of {', '.join(KINDS)} or 'all'")
    if initial not in INITIAL:
        raise ValueError(f"initial={initial!r}: expected one of {', '.join(INITIAL)}")
    records = select_stages(result, stages, default="dynamics")
    chosen = selection_rows(result, records)
    cols = np.column_stack([np.asarray(data[v], dtype=float) for v in names])
    x0 = np.array([_first(cols[INITIAL[initial](chosen), j], None) for j in range(len(names))])
    per_stage = [cols[stage_rows(result, r)] for r in records]
    tables = [_table(kind, names, records, per_stage, x0, cols[chosen]) for kind in kinds]
    return StageSummary(names, [r["name"] for r in records], x0, tables)


#: where the initial value is read: the rows of the chosen stages, or every row
INITIAL = {"selection": lambda chosen: chosen, "run": lambda chosen: np.ones_like(chosen)}


def _table(kind, names, records, per_stage, x0, rows) -> StageTable:
    spec = KINDS[kind]
    stage_values = np.array([[spec.value(block[:, j], x0[j]) if math.isfinite(x0[j]) else math.nan
                              for j in range(len(names))] for block in per_stage]).reshape(len(records), len(names))
    across = statistics(stage_values, x0, spec.across)
    whole = statistics(rows, x0, SERIES_STATISTICS)
    labels = ["initial", *(r["name"] for r in records), *(STATISTICS[s][0] for s in across),
              *(STATISTICS[s][0] + SERIES_SUFFIX for s in whole)]
    values = np.vstack([x0, stage_values, *across.values(), *whole.values()])
    return StageTable(kind, spec.title, list(names), labels, values)
