#!/usr/bin/env python
"""dm_control's two largest models, dog (63 bodies, two free joints, 85 dofs) and humanoid_CMU
(32 bodies, 62 dofs), against MuJoCo: what each choice of form and mode costs to build, and the
error of its q'' and M.

For each model and variant (mode:form), in a fresh Python process with an empty cache:
  generate : dynamica's generator (the stages topology .. render), seconds
  compile  : the C compiler and the import, seconds
  q'' err  : max over 3 random states of max_k |ours_k - mujoco_k| / max(1, |mujoco_k|), with
             MuJoCo's mj_forward qacc (contacts, other constraints and actuation off, fluid forces
             off; damping, stiffness, armature on), free joints mapped to angular velocities
             (tests/oracles/mujoco_mjcf.py)
  M err    : the same for the mass matrix against mj_fullM (T^T M T)
A variant not done within --timeout is reported as such.

A plain script, run by hand:  python benchmarks/bench_mjcf_large.py [--out benchmarks/results/mjcf_large.txt]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODELS = ("humanoid_CMU", "dog")
VARIANTS = ("numeric:ltdl", "numeric:composite", "symbolic:ltdl", "symbolic:composite")
GENERATION = {"load", "topology", "kinematics", "equations", "constraints", "outputs", "states", "lower", "render"}


def suite_file(name: str) -> str:
    spec = importlib.util.find_spec("dm_control")
    if spec is None or spec.origin is None:
        sys.exit("dm_control is not installed (pip install 'dynamica[test]')")
    return os.path.join(os.path.dirname(spec.origin), "suite", f"{name}.xml")


def worker(job: dict) -> dict:
    import numpy as np

    sys.path.insert(0, str(HERE.parent / "tests"))
    import dynamica

    from helpers import max_rel_err
    from oracles.mujoco_mjcf import MujocoOracle
    stages: dict = {}
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = dynamica.load(job["path"], form=job["form"], mode=job["mode"], cache=job["cache"],
                              progress=lambda s, sec: stages.__setitem__(s, stages.get(s, 0.0) + sec),
                              contacts=False, limits=False, actuators="off")
    total = time.perf_counter() - t0
    gen = sum(v for k, v in stages.items() if k in GENERATION)
    oracle = MujocoOracle(job["path"], model.coordinates)
    rng = np.random.default_rng(12)
    err_q = err_m = 0.0
    for _ in range(3):
        q, qd = rng.uniform(-0.8, 0.8, model.n), rng.uniform(-2.0, 2.0, model.n)
        qacc, ours, M_mj, M = oracle.compare(model, q, qd)
        err_q, err_m = max(err_q, max_rel_err(ours, qacc)), max(err_m, max_rel_err(M, M_mj))
    return {"n": model.n, "generate": gen, "compile": total - gen, "err_q": err_q, "err_m": err_m}


def run_one(path: str, variant: str, timeout: float) -> dict:
    mode, form = variant.split(":")
    with tempfile.TemporaryDirectory(prefix="bench_mjcf_large_") as tmp:
        job = {"path": path, "mode": mode, "form": form, "cache": tmp}
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return {"error": f"not done in {timeout:.0f} s"}
        if r.returncode != 0:
            return {"error": f"failed: {(r.stderr.strip().splitlines() or ['?'])[-1][:100]}"}
        return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--models", nargs="+", default=list(MODELS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    lines = [f"{'model':<14} {'variant':<20} {'n':>4} {'generate s':>11} {'compile s':>10} {'q-dd err':>10} "
             f"{'M err':>10}"]
    print(lines[0], flush=True)
    for name in args.models:
        path = suite_file(name)
        for variant in args.variants:
            r = run_one(path, variant, args.timeout)
            if "error" in r:
                line = f"{name:<14} {variant:<20} {r['error']}"
            else:
                line = (f"{name:<14} {variant:<20} {r['n']:>4} {r['generate']:>11.1f} {r['compile']:>10.1f} "
                        f"{r['err_q']:>10.1e} {r['err_m']:>10.1e}")
            lines.append(line)
            print(line, flush=True)
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
