"""The launcher's cyclogram: build, simulation and switching times, and the RHS per call
of its structures against the flop formulas of table 5.2 and against Pinocchio's ABA.

    python benchmarks/bench_stages.py            # N = 12 mock-ups (41 coordinates, 39 stages)
    python benchmarks/bench_stages.py --n 4      # the bundled models/launcher/launcher.yaml's size

Steps, each printed as a table (results/stages.txt holds a saved run):
  1. build: every distinct structure of the cyclogram compiled into an empty cache (cold: the
     base module by `dynamica.load`, the others in parallel processes by runtime/cyclogram.build),
     then the same in a fresh process with the cache filled (cached: import only);
  2. the whole cyclogram simulated (structures already built), its time split into integration
     (simulate_stage), statics (runtime/statics.statics) and the rest, the switching: mapping the
     state across boundaries, releases, events' set-up, result tables;
  3. per distinct structure: its coordinates, the flops of CBM, LGR, ITR-G (K = 2) and DEC by
     generator/cost/flops.py (equal to table 5.2's formulas for CBM, LGR and DEC on the full structure:
     tests/runtime/stages/test_stages.py), dynamica's RHS per call (C entry point, composite form) and
     Pinocchio's `aba` per call from Python on the same tree (its joints one Pinocchio joint per
     elementary motion, the screw as HelicalUnaligned, intermediate frames massless; gravity
     only, so a lower bound of its work) in the same run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parents[1]


def launcher_module():
    spec = importlib.util.spec_from_file_location("launcher", ROOT / "models" / "launcher.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build_times(path: Path) -> dict:
    """{'load': s, 'structures': s, 'count': k} of load + cyclogram.build in this process."""
    import dynamica
    from dynamica.generator.mechanics.stages import structures
    from dynamica.runtime.stages import cyclogram
    t0 = time.perf_counter()
    model = dynamica.load(str(path))
    t1 = time.perf_counter()
    built = cyclogram.build(model, structures(model.spec))
    t2 = time.perf_counter()
    return {"load": t1 - t0, "structures": t2 - t1, "count": len(built)}


def cached_build_times(path: Path, cache: str) -> dict:
    code = ("import json, sys; sys.path.insert(0, %r); from bench_stages import build_times; "
            "print(json.dumps(build_times(%r)))" % (str(ROOT / "benchmarks"), str(path)))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "DYNAMICA_CACHE": cache})
    return json.loads(out.stdout.strip().splitlines()[-1])


def timed_run(path: Path) -> tuple:
    """(result, seconds in total, in integration, in statics) of the whole cyclogram."""
    import dynamica
    import dynamica.runtime.analysis.statics as statics_module
    import dynamica.runtime.integrators.simulate as simulate_module
    spent = {"integration": 0.0, "statics": 0.0}

    def timed(fn, key):
        def wrapper(*a, **k):
            t0 = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                spent[key] += time.perf_counter() - t0
        return wrapper

    model = dynamica.load(str(path))
    stage_fn, statics_fn = simulate_module.simulate_stage, statics_module.statics
    simulate_module.simulate_stage = timed(stage_fn, "integration")
    statics_module.statics = timed(statics_fn, "statics")
    try:
        t0 = time.perf_counter()
        res = dynamica.simulate(model)
        total = time.perf_counter() - t0
    finally:
        simulate_module.simulate_stage, statics_module.statics = stage_fn, statics_fn
    return res, total, spent["integration"], spent["statics"]


def pinocchio_of(spec):
    """A Pinocchio model of the ModelSpec's tree: one joint per elementary motion (an offset is
    the placement of the next joint), the body's inertia on its last joint."""
    import pinocchio as pin

    from dynamica.generator.spec.model import evaluate
    value = lambda texts: np.array(evaluate(spec, list(texts)), dtype=float)   # noqa: E731
    model, ids = pin.Model(), {"ground": 0}
    for body in spec.bodies:
        parent, offset, k = ids[body.parent], np.zeros(3), 0
        motions = [tr for tr in body.joint if tr.kind != "offset"]
        for tr in body.joint:
            vec = value(tr.vector)
            if tr.kind == "offset":
                offset = offset + vec
                continue
            u = vec / np.linalg.norm(vec)
            if tr.kind == "rotate":
                joint = pin.JointModelRevoluteUnaligned(u)
            elif tr.kind == "translate":
                joint = pin.JointModelPrismaticUnaligned(u)
            else:
                joint = pin.JointModelHelicalUnaligned(u, float(value([tr.pitch])[0]) / (2 * np.pi))
            parent = model.addJoint(parent, joint, pin.SE3(np.eye(3), offset), f"{body.name}_{k}")
            offset, k = np.zeros(3), k + 1
            if tr is not motions[-1]:
                model.appendBodyToJoint(parent, pin.Inertia.Zero(), pin.SE3.Identity())
        m = float(value([body.mass])[0])
        com = value(body.com)
        ixx, iyy, izz, ixy, iyz, ixz = value(body.inertia)
        inertia = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        model.appendBodyToJoint(parent, pin.Inertia(m, com, inertia), pin.SE3.Identity())   # about the centre of mass
        ids[body.name] = parent
    model.gravity.linear = value(spec.gravity)
    return model


def pinocchio_seconds(spec, rounds=5) -> float:
    import timeit

    import pinocchio as pin
    pm = pinocchio_of(spec)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q, v, tau = rng.uniform(-0.3, 0.3, pm.nq), rng.uniform(-0.5, 0.5, pm.nv), np.zeros(pm.nv)
    f = lambda: pin.aba(pm, pd, q, v, tau)          # noqa: E731
    n = max(100, int(0.05 / max(timeit.timeit(f, number=20) / 20, 1e-9)))
    return min(timeit.repeat(f, number=n, repeat=rounds)) / n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=12, help="mock-ups (default 12)")
    ap.add_argument("--out", help="also write the tables to this file")
    args = ap.parse_args(argv)
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from dynamica.generator.cost import flops as cost
    from dynamica.generator.mechanics.stages import structures
    from dynamica.runtime.integrators.timing import seconds_per_call
    from dynamica.runtime.stages import cyclogram
    lines = []

    def say(text=""):
        print(text, flush=True)
        lines.append(text)

    work = Path(tempfile.mkdtemp(prefix="bench_stages_"))
    path = work / f"launcher_{args.n}.yaml"
    path.write_text(yaml.safe_dump(launcher_module().model(args.n), sort_keys=False))
    cache = str(work / "cache")
    os.environ["DYNAMICA_CACHE"] = cache
    say(f"bench_stages: launcher with N = {args.n} mock-ups; {time.strftime('%Y-%m-%d %H:%M')}; "
        f"{platform.platform()}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    cold = build_times(path)
    warm = cached_build_times(path, cache)
    say("\n1. build of every distinct structure (composite form, C backend), seconds")
    say(f"   {'':8s} {'structures':>10s} {'load (base)':>12s} {'the others':>11s} {'total':>8s}")
    for name, b in (("cold", cold), ("cached", warm)):
        say(f"   {name:8s} {b['count']:10d} {b['load']:12.2f} {b['structures']:11.2f} "
            f"{b['load'] + b['structures']:8.2f}")

    res, total, integ, stat = timed_run(path)
    switching = total - integ - stat
    say(f"\n2. the cyclogram ({len(res.stages)} stages, t = 0 .. {res.t[-1]:g} s, {len(res.t)} rows), seconds")
    say(f"   total {total:.2f}: integration {integ:.2f}, statics {stat:.2f} (the first builds the derivatives module), "
        f"switching and tables {switching:.2f} "
        f"({switching / max(1, len(res.stages) - 1) * 1e3:.1f} ms per boundary)")
    say(
        "   " + ", ".join(f"{r['name']} {r['t_end']:.4f} ({r['reason']})" for r in res.stages if r["type"] != "statics")
    )

    import dynamica
    model = dynamica.load(str(path))
    built = cyclogram.build(model, structures(model.spec))
    say("\n3. RHS per call of each distinct structure: flops (generator/cost/flops.py, K = 2 for ITR-G), dynamica's")
    say("   composite module (C entry point) and Pinocchio's aba from Python on the same tree")
    say(f"   {'structure':34s} {'n':>3s} {'CBM':>7s} {'LGR':>7s} {'ITR-G':>7s} {'DEC':>7s} {'dynamica us':>12s} "
        f"{'ns/flop':>8s} {'pin.aba us':>11s} {'pin/dyn':>8s}")
    for struct, b in built.items():
        spec = b.model.spec
        flops = {f: float(cost.count(cost.from_spec(spec), form=f, K=2)) for f in ("CBM", "LGR", "ITR-G", "DEC")}
        dyn = seconds_per_call(b.model)
        pin_s = pinocchio_seconds(spec)
        removed, released = sorted(struct.removed), list(struct.released)
        label = "base" if struct.is_base else ", ".join(
            ([f"removed {len(removed)}"] if removed else []) + ([f"free {released[-1]}"] if released else []))
        label = (label[:31] + "...") if len(label) > 34 else label
        say(f"   {label:34s} {b.model.n:3d} {flops['CBM']:7.0f} {flops['LGR']:7.0f} {flops['ITR-G']:7.0f} "
            f"{flops['DEC']:7.0f} {dyn * 1e6:12.2f} {dyn * 1e9 / flops['CBM']:8.2f} {pin_s * 1e6:11.2f} "
            f"{pin_s / dyn:8.1f}")
    N = args.n
    say(
        f"\n   table 5.2 at N = {N}: CBM {1757 + 1446 * N}, "
        f"LGR {4538 + 2329 * N / 2 + 243 * N * N / 2 + 9 * N**3:.0f}, "
        f"ITR {1943 + 1004 * N + 45 * N * N}, DEC {2825 + 1601 * N} (the base structure above)"
    )
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
