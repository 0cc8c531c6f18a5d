"""What the command line shows on the terminal: progress of generation and simulation (tqdm
bars on a terminal, plain lines otherwise) and warnings printed once per model.

- Generation: nothing is printed for a module found in the cache; a build announces itself
  ("generating and compiling MODEL") on its first stage, then one bar step (or line) per stage.
- Warnings: each distinct warning about a model is printed the first time a command meets it;
  later commands on the same model say how many were shown before (`--warnings` shows them
  again). Seen warnings are remembered in the cache directory (`warned/`).
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

#: the stages of a build, in order (pipeline.generate's, then build.compile_bundle's)
STAGES = ("load", "topology", "kinematics", "equations", "outputs", "lower", "render", "compile")


def _tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


class BuildProgress:
    """progress(stage, seconds) for `dynamica.load`: silent until a stage runs (a cached module
    runs none)."""

    def __init__(self, model: str, enabled: bool = True, bar: bool | None = None):
        self.model, self.enabled = str(model), enabled
        self.bar_wanted = _tty() if bar is None else bar
        self.bar = None
        self.started = False

    def __call__(self, stage: str, seconds: float):
        if not self.enabled:
            return
        if not self.started:
            self.started = True
            print(f"[dynamica] generating and compiling {self.model} ...", file=sys.stderr, flush=True)
            if self.bar_wanted:
                from tqdm import tqdm
                self.bar = tqdm(
                    total=len(STAGES),
                    desc="[dynamica] build",
                    unit="stage",
                    file=sys.stderr,
                    leave=False,
                    bar_format="{desc}: {bar} {n_fmt}/{total_fmt} stages [{elapsed}] {postfix}",
                )
        if self.bar is not None:
            self.bar.set_postfix_str(f"{stage} {seconds:.2f} s", refresh=False)
            self.bar.update(STAGES.index(stage) + 1 - self.bar.n if stage in STAGES else 1)
            if stage == "compile":
                self.close()
        else:
            print(f"[dynamica] {stage:<10s} {seconds:8.3f} s", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
            self.bar = None


class SimulationProgress:
    """A tqdm bar over the simulated time, for simulate(progress=...)."""

    def __init__(self, t0: float, t_end: float, enabled: bool):
        self.t0, self.t_end, self.enabled = float(t0), float(t_end), enabled
        self.bar = None
        if enabled:
            from tqdm import tqdm
            self.bar = tqdm(total=self.t_end - self.t0, desc="[dynamica] simulate", unit="s(model)", file=sys.stderr,
                            bar_format="{desc}: {percentage:5.1f}% |{bar}| t = {postfix} [{elapsed}<{remaining}]")

    def update(self, t: float):
        if self.bar is not None:
            self.bar.set_postfix_str(f"{t:.4g}", refresh=False)
            self.bar.update(min(t, self.t_end) - self.t0 - self.bar.n)

    def close(self):
        if self.bar is not None:
            self.bar.close()


class WarningsOnce:
    """warnings.showwarning for the command line: a warning is printed the first time (per
    process and, through marker files in the cache, per model across commands)."""

    def __init__(self, cache: Path | None, show_all: bool = False):
        self.cache, self.show_all = cache, show_all
        self.seen: set = set()
        self.suppressed = 0

    def _marker(self, text: str) -> Path | None:
        if self.cache is None:
            return None
        return self.cache / "warned" / hashlib.sha256(text.encode()).hexdigest()[:32]

    def __call__(self, message, category, *args, **kwargs):
        text = str(message)
        if text in self.seen:
            return
        self.seen.add(text)
        marker = self._marker(text)
        if not self.show_all and marker is not None and marker.exists():
            self.suppressed += 1
            return
        print(f"dynamica: warning: {text}", file=sys.stderr)
        if marker is not None:
            try:
                marker.parent.mkdir(parents=True, exist_ok=True)
                marker.write_text(f"{time.time():.0f}\n{text}\n")
            except OSError:
                pass

    def summary(self):
        if self.suppressed:
            print(f"dynamica: {self.suppressed} warning(s) about this model were shown by an earlier command "
                  "(--warnings shows them again)", file=sys.stderr)


def warning_cache() -> Path | None:
    try:
        from dynamica.build import cache_root
        return cache_root()
    except Exception:                        # noqa: BLE001 (no usable cache: every warning is shown)
        return None if "DYNAMICA_CACHE" not in os.environ else Path(os.environ["DYNAMICA_CACHE"])
