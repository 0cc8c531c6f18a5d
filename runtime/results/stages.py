"""The stages of a result (the D90 cyclogram, dissertation 5.2.4): which rows belong to a stage,
choosing stages by position, name or pattern (`--stages 3:5`), and marking stage boundaries on
plot panels.

A staged result has `result.stage` (the stage name of every row) and `result.stages` (one record
per stage: name, type, t_start, t_end, reason). A boundary's time appears twice: as the last row
of one stage and the first row of the next. A result without stages is one dynamics stage,
`RUN`, spanning every row.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

import numpy as np

#: the name of the single stage of a result without stages
RUN = "run"


def stage_records(result) -> list:
    """`result.stages`, or one dynamics stage spanning the run for a result without stages."""
    if getattr(result, "stage", None) is not None and result.stages:
        return list(result.stages)
    t = np.asarray(result.t)
    return [{"name": RUN, "type": "dynamics", "t_start": float(t[0]) if len(t) else 0.0,
             "t_end": float(t[-1]) if len(t) else 0.0, "reason": "time"}]


def stage_rows(result, record) -> np.ndarray:
    """Boolean mask of the rows of one stage: its name within [t_start, t_end] (the interval
    separates two stages of the same name)."""
    t = np.asarray(result.t)
    if getattr(result, "stage", None) is None or not result.stages:
        return np.ones(len(t), dtype=bool)
    return (np.asarray(result.stage) == record["name"]) & (t >= record["t_start"]) & (t <= record["t_end"])


# ------------------------------------------------------------------ choosing stages
@dataclass(frozen=True)
class StageSpec:
    """A parsed stage selection: items of (first, last) endpoints, each a 1-based position (int),
    a name (str) or None (open end); a single item has first == last; a pattern (`launch_*`)
    is an item of its own."""
    text: str
    items: tuple

    def resolve(self, names) -> list:
        """0-based indices into `names` (the stages in order), sorted, each once."""
        names = list(names)
        chosen = set()
        for first, last in self.items:
            if isinstance(first, str) and _is_pattern(first):
                hits = [k for k, n in enumerate(names) if fnmatch.fnmatchcase(n, first)]
                if not hits:
                    raise self._error(f"no stage matches {first!r}", names)
                chosen.update(hits)
                continue
            lo = 0 if first is None else self._index(first, names)
            hi = len(names) - 1 if last is None else self._index(last, names)
            if lo > hi:
                raise self._error(f"range {_show(first)}:{_show(last)} runs backwards (stage {lo + 1} "
                                  f"comes after stage {hi + 1})", names)
            chosen.update(range(lo, hi + 1))
        return sorted(chosen)

    def _index(self, end, names) -> int:
        if isinstance(end, int):
            if not 1 <= end <= len(names):
                raise self._error(f"position {end} is not a stage (there are {len(names)})", names)
            return end - 1
        if end not in names:
            raise self._error(f"no stage is named {end!r}", names)
        return names.index(end)

    def _error(self, what, names) -> ValueError:
        return ValueError(f"stages {self.text!r}: {what}; {listing(names)}")


def listing(names) -> str:
    """`stages: 1 'settle', 2 'burn'`: the positions and names an error message offers."""
    return "stages: " + ", ".join(f"{k + 1} {n!r}" for k, n in enumerate(names))


def _show(end) -> str:
    return "" if end is None else str(end)


def _is_pattern(text: str) -> bool:
    return any(c in text for c in "*?[")


def _endpoint(token: str, text: str):
    token = token.strip()
    if not token:
        return None
    if token.lstrip("+-").isdigit():
        if int(token) < 1:
            raise ValueError(f"stages {text!r}: positions count from 1 (got {token})")
        return int(token)
    return token


def parse_stages(text: str) -> StageSpec:
    """`"3:5"` (positions 3 to 5, from 1, inclusive), `"2"`, `"launch_1:launch_4"` (by name),
    `"3:"`, `":2"`, `":"` (all), `"launch_*"` (a shell pattern), and lists of these separated by commas.
    Syntax errors are one ValueError naming the text; names are checked by `resolve`."""
    text = str(text)
    items = []
    for chunk in text.split(","):
        parts = chunk.split(":")
        if not chunk.strip() or len(parts) > 2:
            raise ValueError(f"stages {text!r}: expected positions or names like 3:5, 2, launch_1:launch_4 "
                             f"or launch_*, separated by commas (got {chunk.strip()!r})")
        ends = [_endpoint(p, text) for p in parts]
        if len(ends) == 2 and any(isinstance(e, str) and _is_pattern(e) for e in ends):
            raise ValueError(f"stages {text!r}: a pattern cannot be the end of a range ({chunk.strip()!r})")
        items.append((ends[0], ends[-1]))
    return StageSpec(text, tuple(items))


def select_stages(result, stages=None, *, default="all") -> list:
    """The records of the chosen stages, in order. `stages`: None (`default`: "all" stages or only
    the "dynamics" ones), a string as `parse_stages` takes, a `StageSpec`, a slice of
    `result.stages` (0-based, as Python slices), or a list of names, 1-based positions and
    strings as above."""
    records = stage_records(result)
    names = [r["name"] for r in records]
    if stages is None:
        keep = range(len(records)) if default == "all" else [k for k, r in enumerate(records)
                                                              if r.get("type", "dynamics") in ("dynamics", "")]
    elif isinstance(stages, slice):
        keep = range(len(records))[stages]
    else:
        spec = stages if isinstance(stages, StageSpec) else _spec_of(stages)
        keep = spec.resolve(names)
    chosen = [records[k] for k in keep]
    if not chosen:
        raise ValueError(f"stages {stages!r}: no stage chosen; {listing(names)}")
    return chosen


def _spec_of(stages) -> StageSpec:
    if isinstance(stages, str):
        return parse_stages(stages)
    items = ",".join(str(s) for s in stages)
    return parse_stages(items)


def selection_rows(result, records) -> np.ndarray:
    """Boolean mask of the rows of any of `records`."""
    mask = np.zeros(len(result.t), dtype=bool)
    for r in records:
        mask |= stage_rows(result, r)
    return mask


# ------------------------------------------------------------------ plots
def boundaries(records) -> list:
    """(time, "name1, name2") per distinct start time of `records` (a statics stage and the stage
    after it start at the same time)."""
    out = []
    for r in records:
        if out and out[-1][0] == r["t_start"]:
            out[-1] = (out[-1][0], f"{out[-1][1]}, {r['name']}")
        else:
            out.append((r["t_start"], r["name"]))
    return out


def mark_boundaries(ax, marks, *, label=False):
    """Thin vertical lines at the stage starts; with `label`, the names in the top margin."""
    for t, names in marks:
        ax.axvline(t, color="0.35", lw=0.7, ls="--", zorder=1)
        if label:
            ax.text(t, 1.02, names, transform=ax.get_xaxis_transform(), rotation=90, fontsize="x-small",
                    ha="center", va="bottom", clip_on=False)


@dataclass
class PlotView:
    """What `results.plot_pages` needs of the stages: the rows to draw, the boundary marks and the
    time span of the chosen stages."""
    rows: np.ndarray
    marks: list
    span: tuple | None

    def curve(self, y, deviation=False) -> np.ndarray:
        """y on the chosen rows (NaN elsewhere: gaps), as x - x(first drawn value) with `deviation`."""
        y = np.where(self.rows, np.asarray(y, dtype=float), np.nan)
        if deviation:
            finite = y[np.isfinite(y)]
            y = y - (finite[0] if finite.size else 0.0)
        return y

    def decorate(self, ax, top=False):
        """Boundary lines on every panel, the stage names above the top one."""
        mark_boundaries(ax, self.marks, label=top)
        if self.span is not None and self.span[1] > self.span[0]:
            ax.set_xlim(*self.span)


def plot_view(result, stages=None) -> PlotView:
    """All rows and no marks for a result without stages (unless `stages` restricts it)."""
    if (getattr(result, "stage", None) is None or not result.stages) and stages is None:
        return PlotView(np.ones(len(result.t), dtype=bool), [], None)
    records = select_stages(result, stages)
    span = (records[0]["t_start"], records[-1]["t_end"]) if stages is not None else None
    marks = boundaries(records) if getattr(result, "stage", None) is not None and result.stages else []
    return PlotView(selection_rows(result, records), marks, span)
