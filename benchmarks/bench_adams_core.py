#!/usr/bin/env python
"""The compiled Adams core against another text of it, in one run: `dynamica.simulate` (method
adams, the model's own tolerances and times) of bundled models with the current core and with a
reference core built from another `adams_core.pyx` (its peer: e.g. the text before a change,
`git show REV:runtime/native/adams_core.pyx > before.pyx`), both built the same way
(build.compiled_helper's flags, into the cache).

Per model: right-hand-side evaluations and steps of each core, the best of `--runs` wall times
of a whole `simulate` call (the two cores alternating, so that both see the same load), and the
largest difference of the states on the output grid and of every output (0 when the two cores
give the same numbers bit for bit). A model with inputs gets a ramp (run_segments).

    python benchmarks/bench_adams_core.py --against before.pyx [--runs 100] [--save]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

MODELS = ("double_pendulum", "chain7", "puma560", "fourbar", "dc_motor_joint", "hydraulic_drive", "slider_crank",
          "spherical_chain")
ROOT = Path(__file__).resolve().parent.parent


def built_core(pyx: Path | None, tag: str):
    """The adams_core module built by compile_bundle from a source text (None: this checkout's),
    with the headers of this checkout."""
    from dynamica.build import compile_bundle, helper_source, import_extension
    from dynamica.generator.render import SourceBundle
    files, _ = helper_source("adams_core")
    if pyx is not None:
        files = (("adams_core.pyx", pyx.read_text()),) + tuple(f for f in files if not f[0].endswith(".pyx"))
    sha = hashlib.sha256("".join(t for _, t in files).encode()).hexdigest()
    bundle = SourceBundle(module_name="adams_core", backend="cython", files=files, signature="adams_core")
    return import_extension(compile_bundle(bundle, key_parts=(sha, tag)))


def run_with(core, model, runs):
    import dynamica
    from dynamica import build
    build._HELPERS["adams_core"] = core
    times, res = [], None
    t_end = model.spec.simulate.t_end
    # a model with inputs: a ramp to 0.3 at a quarter of the run (segments: run_segments of the core)
    inputs = {u: (np.array([0.0, 0.25 * t_end, 0.25 * t_end + 0.01, t_end]), np.array([0.0, 0.0, 0.3, 0.3]))
              for u in model.inputs} or None
    for _ in range(runs):
        t0 = time.perf_counter()
        res = dynamica.simulate(model, method="adams", inputs=inputs)
        times.append(time.perf_counter() - t0)
    rows = len(res.t)
    y = np.column_stack([res.q, res.qd] + [np.asarray(v, dtype=float).reshape(rows, -1) for v in res.outputs.values()])
    return min(times), y, {"nfev": res.nfev, "nsteps": res.info.get("steps")}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--against", type=Path, required=True, help="the reference adams_core.pyx")
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--models", nargs="*", default=list(MODELS))
    ap.add_argument("--save", action="store_true", help="write benchmarks/results/adams_core.txt")
    args = ap.parse_args(argv)
    import dynamica
    from dynamica.build import compiled_helper
    installed = compiled_helper("adams_core")
    current = built_core(None, "current")
    ref = built_core(args.against, "reference")
    lines = ["| model | n | nfev (current) | nfev (reference) | steps (current) | steps (reference) | "
             "time current s | time reference s | current/reference | max abs difference |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in args.models:
        model = dynamica.load(ROOT / "models" / f"{name}.yaml")
        run_with(ref, model, 1)                                  # warm both
        run_with(current, model, 1)
        t_ref = t_cur = float("inf")
        for _ in range(args.runs):                               # alternating: the same load for both
            t, y_ref, st_ref = run_with(ref, model, 1)
            t_ref = min(t_ref, t)
            t, y_cur, st_cur = run_with(current, model, 1)
            t_cur = min(t_cur, t)
        diff = float(np.abs(y_cur - y_ref).max()) if y_cur.shape == y_ref.shape else float("nan")
        lines.append(f"| {name} | {model.n} | {st_cur.get('nfev')} | {st_ref.get('nfev')} | {st_cur.get('nsteps')} | "
                     f"{st_ref.get('nsteps')} | {t_cur:.4f} | {t_ref:.4f} | {t_cur / t_ref:.2f} | {diff:.1e} |")
        print(lines[-1], flush=True)
    from dynamica import build
    build._HELPERS["adams_core"] = installed
    text = "\n".join([f"# the Adams core: current against {args.against.name} (best of {args.runs})", ""] + lines)
    print("\n" + text)
    if args.save:
        out = Path(__file__).resolve().parent / "results" / "adams_core.txt"
        out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
