"""Costs of the module cache's safety: manifest verification on every load, and the
peak memory of long simulations whose rows stream to a CSV file.

    python benchmarks/bench_cache.py                       # both parts (the 100-body build takes minutes)
    python benchmarks/bench_cache.py --no-verify --rows 1e4 1e6

Verification: a 100-body chain (1 revolute DOF per body, symbolic mode, composite form, the largest
module of bench_scale.py) is built into a fresh cache; then `cache.verify` (sizes of every file and
the sha256 of the extension) is timed, next to a whole cache-hit `compile_bundle` and a `load`
from the index.

Memory: each run is a fresh process (`--memory-worker`) that loads a compound pendulum, then
simulates n output rows (output step 1 ms) with `simulate(out=csv)` (streamed, the default) or
`simulate(out=csv, keep=True)` (every row kept as well) or in memory only, and reports its peak
resident set (VmHWM) before and after the run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_forms import model_dict  # noqa: E402

PENDULUM = {
    "name": "pendulum",
    "parameters": {"m": {"value": 1.3}, "l": {"value": 0.9}, "J": {"value": 0.05}, "g": {"value": 9.81}},
    "gravity": [0, 0, "-g"],
    "bodies": [{"name": "rod", "parent": "ground", "joint": [{"rotate": "x", "q": "phi"}],
                "mass": "m", "com": [0, 0, "-l"], "inertia": ["J", "J", "J"]}],
    "initial": {"phi": 0.7},
}


def best_of(f, rounds=20) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.perf_counter()
        f()
        best = min(best, time.perf_counter() - t)
    return best


def verification(folder: Path, n: int) -> list:
    import dynamica
    from dynamica import build, cache
    path = folder / "chain.yaml"
    path.write_text(yaml.safe_dump(model_dict("chain", n, 1), sort_keys=False))
    cache_dir = folder / "cache"
    t = time.perf_counter()
    so = dynamica.load(path, cache=cache_dir, check_mass_matrix=False).path
    built = time.perf_counter() - t
    entry = so.parent
    m = cache.read_manifest(entry)
    total = sum(r["size"] for r in m["files"].values())
    bundle = dynamica.generate(path).bundle
    return [
        f"chain of {n} bodies, symbolic composite: generated and compiled in {built:.1f} s",
        f"  extension {so.stat().st_size / 1e6:.2f} MB, entry {total / 1e6:.2f} MB in {len(m['files'])} files",
        f"  cache.verify (all sizes + sha256 of the extension): {1e3 * best_of(lambda: cache.verify(entry)):.2f} ms",
        f"  sizes only (stat of each file):                    "
        f"{1e3 * best_of(lambda: [(entry / f).stat() for f in m['files']]):.3f} ms",
        f"  cache-hit compile_bundle (build key + verify):      "
        f"{1e3 * best_of(lambda: build.compile_bundle(bundle, cache=cache_dir), 5):.1f} ms",
        f"  load from the index (verify + import held module): "
        f"{1e3 * best_of(lambda: dynamica.load(path, cache=cache_dir, check_mass_matrix=False), 5):.1f} ms",
    ]


def peak_mb() -> float:
    """Peak resident memory of this process: VmHWM (Linux; reset by exec, unlike ru_maxrss, which
    a child inherits from the parent it was forked from), else ru_maxrss."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory_worker(args):
    import dynamica
    model = dynamica.load(args.model)
    before = peak_mb()
    t = time.perf_counter()
    out = None if args.how == "memory" else args.out
    res = dynamica.simulate(model, t_end=(args.n - 1) * 1e-3, output_step=1e-3, out=out, keep=args.how != "stream")
    print(json.dumps({"rows": res.info.get("rows", len(res.t)), "before_mb": before, "seconds": time.perf_counter() - t,
                      "peak_mb": peak_mb()}))


def memory(folder: Path, rows) -> list:
    path = folder / "pendulum.yaml"
    path.write_text(yaml.safe_dump(PENDULUM, sort_keys=False))
    lines = [f"{'rows':>9s} {'how':<16s} {'before MB':>9s} {'peak MB':>8s} {'growth MB':>9s} {'s':>7s}"]
    for n in rows:
        for how in ("stream", "keep", "memory"):
            proc = subprocess.run([sys.executable, __file__, "--memory-worker", str(path), str(int(n)), how,
                                   str(folder / "out.csv")], capture_output=True, text=True, check=True)
            r = json.loads(proc.stdout.splitlines()[-1])
            label = {"stream": "out=csv", "keep": "out=csv, keep", "memory": "in memory"}[how]
            lines.append(f"{r['rows']:>9d} {label:<16s} {r['before_mb']:9.1f} {r['peak_mb']:8.1f} "
                         f"{r['peak_mb'] - r['before_mb']:9.1f} {r['seconds']:7.2f}")
            print(lines[-1], file=sys.stderr, flush=True)
    return lines


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--memory-worker":
        a = argparse.Namespace(model=sys.argv[2], n=int(sys.argv[3]), how=sys.argv[4], out=sys.argv[5])
        return memory_worker(a)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", nargs="+", type=float, default=[1e4, 1e6])
    ap.add_argument("--bodies", type=int, default=100)
    ap.add_argument("--no-verify", action="store_true")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--out", default=str(HERE / "results" / "cache.txt"))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args()
    import dynamica
    head = [f"bench_cache: {time.strftime('%Y-%m-%d %H:%M:%S')}; {platform.platform()}, {os.cpu_count()} cores; "
            f"python {platform.python_version()}; dynamica {dynamica.__version__}", ""]
    body = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["DYNAMICA_CACHE"] = str(Path(tmp) / "cache")
        if not args.no_verify:
            body += verification(Path(tmp), args.bodies) + [""]
        if not args.no_memory:
            body += ["peak resident memory of simulate (compound pendulum, output step 1 ms, a fresh process each):"]
            body += memory(Path(tmp), args.rows)
    text = "\n".join(head + body) + "\n"
    print(text)
    if not args.no_save:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
