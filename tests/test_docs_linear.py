"""docs/linear.md stays true: its worked example runs and prints what the page shows.

The example's python block runs from a scratch directory; the equilibrium, the modes, the
Prony table and the fitted parameters it prints are compared with the page, number by number
(relative 1e-4: the record's noise and the fit are deterministic, the last digits may move with
the platform's floating point)."""

from __future__ import annotations

import contextlib
import io
import re

import pytest

from test_docs import DOCS, ROOT, fenced_blocks

PAGE = DOCS / "linear.md"


def _numbers(text):
    return [float(x) for x in re.findall(r"[-+]?\d+\.\d+(?:e[-+]\d+)?|[-+]?\d+e[-+]\d+", text)]


def test_worked_example_runs_and_prints_the_page(tmp_path, monkeypatch):
    blocks = fenced_blocks(PAGE, marker="<!-- signature -->")
    runnable = [(body, nxt) for lang, body, signature, nxt in blocks if lang == "python" and not signature]
    assert len(runnable) == 1
    code, shown = runnable[0]
    (tmp_path / "models").symlink_to(ROOT / "models")
    monkeypatch.chdir(tmp_path)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "linear_example"})
    assert (tmp_path / "shapes.png").exists() and (tmp_path / "afc.png").exists()
    printed = [line for line in out.getvalue().splitlines() if not line.startswith("singular values")]
    expected = [line for line in shown.splitlines() if not line.startswith("singular values")]
    assert len(printed) == len(expected)
    for got, want in zip(printed, expected):
        a, b = _numbers(got), _numbers(want)
        assert len(a) == len(b), (got, want)
        for x, y in zip(a, b):
            assert x == pytest.approx(y, rel=1e-4, abs=1e-12), (got, want)
