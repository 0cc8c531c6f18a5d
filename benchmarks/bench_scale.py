#!/usr/bin/env python
"""Scale benchmark: both modes and both backends on chains and stars of N = 10..1000
bodies, next to Pinocchio (ABA; CRBA + Cholesky) and MuJoCo (mj_forward) measured in the same run.

    python benchmarks/bench_scale.py                       # N = 10 50 100 200 500 1000, chain and star
    python benchmarks/bench_scale.py --sizes 10 100 --shapes chain --variants num:articulated --no-save

Models: the chains and stars of benchmarks/bench_forms.py with 1-DOF revolute joints (offsets with
three components, masses, centres of mass off the axes, full inertia tensors; gravity [0, 0, -g]).

Variants `mode:form[:backend]` (default below): every build runs in a subprocess of its own
(`--worker`), which generates (dynamica.generate), then compiles (build.compile_bundle) in a
fresh small process of its own (`--compile-worker`) into a fresh cache directory, and reports
generation and compile seconds, the peak resident memory of the generator (VmHWM) and of the
largest compiler process (RUSAGE_CHILDREN of the compile worker; an upper bound, as a child's
peak includes the ~100 MB of the Python that forked it), the size of the generated sources and
the operation count of the RHS kernels. A build is killed at --timeout. Within a series (variant, shape) the sizes run
in increasing order; when generation + compile of one size took longer than --budget seconds, or the
growth of the last two sizes predicts more than twice the budget for the next, the larger sizes
are reported as skipped.

Per-call times, all in this process, interleaved per size in --rounds rounds (best kept):
  - dynamica: runtime.timing.seconds_per_call, a C loop over the module's rhs_capsule on 8 random
    states (no Python per call);
  - pin.aba(model, data, q, v, tau) and pin.crba + pin.nonLinearEffects + pin.cholesky.decompose/
    solve, from Python (timeit; includes ~1 us of binding overhead per pinocchio call);
  - mujoco.mj_forward(m, d) from Python (contacts disabled; mj_forward also computes positions and
    velocities), with the model built through MjSpec from the same numbers.
Each is checked: q'' of every peer against dynamica's at one random state (relative 2-norm).
Pinocchio's Data holds nv^3 tensors (~64 N^3 bytes: 4 GB at N = 400, 64 GB at N = 1000, in pin
2.7, 3.9 and 4.1 alike), so it runs only up to --pin-max-gb; MuJoCo runs at every size.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_forms import model_dict  # noqa: E402

SIZES = (10, 50, 100, 200, 500, 1000)
SHAPES = ("chain", "star")
VARIANTS = ("numeric:articulated", "numeric:ltdl", "numeric:composite",
            "symbolic:articulated", "symbolic:composite", "symbolic:articulated:fortran")
BUDGET = 300.0
TIMEOUT = 900.0


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ build
def _hwm_mb() -> float:
    """Peak resident memory of this process since its exec (VmHWM). ru_maxrss is not used for
    that: on Linux it carries the parent's peak across fork + exec."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def worker(job: dict) -> dict:
    """Generate one variant (runs in its own process), then compile it in a fresh small process,
    so the compiler's memory is measured without the generator's."""
    import pickle

    import dynamica
    t0 = time.perf_counter()
    g = dynamica.generate(job["model"], form=job["form"], backend=job["backend"], mode=job["mode"])
    t1 = time.perf_counter()
    gen_mb = _hwm_mb()
    bundle_file = Path(job["cache"]).with_suffix(".bundle.pickle")
    bundle_file.parent.mkdir(parents=True, exist_ok=True)
    bundle_file.write_bytes(pickle.dumps(g.bundle))
    from dynamica.runtime.analysis.selection import rhs_ops
    ops = rhs_ops(g.module_ir)          # what one RHS call runs, as `dynamica select` reports it
    src_kb = sum(len(t) for _, t in g.bundle.files) / 1024.0
    stages = dict(g.timings)
    del g
    cmd = [sys.executable, str(Path(__file__).resolve()), "--compile-worker",
           json.dumps({"bundle": str(bundle_file), "cache": job["cache"]})]
    r = subprocess.run(cmd, capture_output=True, text=True, check=True)
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return {"gen": t1 - t0, "compile": res["compile"], "gen_mb": gen_mb, "cc_mb": res["cc_mb"], "so": res["so"],
            "src_kb": src_kb, "ops": ops, "stages": stages}


def compile_worker(job: dict) -> dict:
    import pickle

    from dynamica.build import compile_bundle
    bundle = pickle.loads(Path(job["bundle"]).read_bytes())
    t0 = time.perf_counter()
    so = compile_bundle(bundle, cache=Path(job["cache"]))
    t1 = time.perf_counter()
    # the compiler processes (cythonize's Python, cc1 / gfortran) are children of this small process
    cc_mb = max(_hwm_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0)
    return {"compile": t1 - t0, "cc_mb": cc_mb, "so": str(so)}


def build(job: dict, timeout: float) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(job)]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)          # the worker and the compilers it started
        proc.communicate()
        return {"error": f"timeout ({timeout:.0f} s)", "wall": time.perf_counter() - t0}
    if proc.returncode != 0:
        tail = (err or out).strip().splitlines()[-1:] or ["?"]
        return {"error": f"failed (exit {proc.returncode}): {tail[0][:120]}", "wall": time.perf_counter() - t0}
    return json.loads(out.strip().splitlines()[-1])


# ------------------------------------------------------------------------------------------ peers
def _sym_inertia(xx, yy, zz, xy, yz, xz):
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]], dtype=float)


def _parts(b):
    off = next(t["translate"] for t in b["joint"] if "translate" in t)
    axis = next(t["rotate"] for t in b["joint"] if "rotate" in t)
    return np.array(off, dtype=float), axis


def pinocchio_model(d: dict):
    import pinocchio as pin
    model, ids = pin.Model(), {"ground": 0}
    for b in d["bodies"]:
        off, axis = _parts(b)
        joint = {"x": pin.JointModelRX, "y": pin.JointModelRY, "z": pin.JointModelRZ}[axis]()
        jid = model.addJoint(ids[b["parent"]], joint, pin.SE3(np.eye(3), off), b["name"])
        model.appendBodyToJoint(jid, pin.Inertia(b["mass"], np.array(b["com"], dtype=float),
                                                 _sym_inertia(*b["inertia"])), pin.SE3.Identity())
        ids[b["name"]] = jid
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    return model


def mujoco_model(d: dict):
    """The same tree through MuJoCo's MjSpec (MJCF nests bodies, and its parser stops at depth ~500)."""
    import mujoco
    spec = mujoco.MjSpec()
    spec.option.gravity = [0.0, 0.0, -9.81]
    spec.option.disableflags |= int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    bodies = {"ground": spec.worldbody}
    for b in d["bodies"]:
        off, axis = _parts(b)
        xx, yy, zz, xy, yz, xz = b["inertia"]
        body = bodies[b["parent"]].add_body(name=b["name"], pos=list(off))
        body.add_joint(type=mujoco.mjtJoint.mjJNT_HINGE, axis={"x": [1, 0, 0], "y": [0, 1, 0], "z": [0, 0, 1]}[axis])
        body.explicitinertial = True
        body.mass, body.ipos = b["mass"], list(map(float, b["com"]))
        body.fullinertia = [xx, yy, zz, xy, xz, yz]
        bodies[b["name"]] = body
    m = spec.compile()
    return m, mujoco.MjData(m)


def best_timeit(f, rounds: int) -> float:
    t = timeit.timeit(f, number=3) / 3
    number = max(3, int(0.05 / max(t, 1e-9)))
    return min(timeit.repeat(f, number=number, repeat=rounds)) / number


class Peers:
    """Pinocchio and MuJoCo on one model: per-call timers and q'' at a state."""

    def __init__(self, d: dict, with_pinocchio: bool = True):
        import mujoco
        import pinocchio as pin
        self.pin, self.mj = pin, mujoco
        self.names = ["aba", "crba", "mj"] if with_pinocchio else ["mj"]
        if with_pinocchio:
            self.pm = pinocchio_model(d)
            self.pd = self.pm.createData()
        self.mm, self.md = mujoco_model(d)
        self.tau = np.zeros(len(d["bodies"]))

    def set_state(self, q, v):
        self.q, self.v = q, v
        self.md.qpos[:], self.md.qvel[:] = q, v

    def call(self, name):
        return {"aba": self.aba, "crba": self.crba, "mj": self.mj_forward}[name]

    def aba(self):
        return self.pin.aba(self.pm, self.pd, self.q, self.v, self.tau)

    def crba(self):
        pin = self.pin
        pin.crba(self.pm, self.pd, self.q)
        b = self.tau - pin.nonLinearEffects(self.pm, self.pd, self.q, self.v)
        pin.cholesky.decompose(self.pm, self.pd)
        return pin.cholesky.solve(self.pm, self.pd, b)

    def mj_forward(self):
        self.mj.mj_forward(self.mm, self.md)
        return self.md.qacc

    def qdd(self):
        return {k: np.array(self.call(k)()) for k in self.names}


def pinocchio_bytes(n: int) -> float:
    """Memory of pinocchio's Data for n degrees of freedom: it holds nv x nv x nv tensors (the
    second-order derivatives), measured here as ~64 n^3 bytes (n = 400: 4.1 GB) for pin 2.7, 3.9, 4.1."""
    return 64.0 * n ** 3


# ------------------------------------------------------------------------------------------ run
def rel(a, b):
    return float(np.linalg.norm(a - b) / max(1.0, np.linalg.norm(b)))


def parse_variant(v: str):
    parts = v.split(":")
    mode, form = parts[0], parts[1]
    backend = parts[2] if len(parts) > 2 else "cython"
    return mode, form, backend


def label(v: str) -> str:
    mode, form, backend = parse_variant(v)
    from dynamica.generator.forms import resolve
    acr = {"articulated": "ABM", "ltdl": "DEC", "composite": "CBM"}.get(resolve(form), form)
    return f"{'num' if mode == 'numeric' else 'sym'}-{'F' if backend == 'fortran' else 'C'} {acr}"


def run(args, partial=None) -> list:
    import yaml

    from dynamica.build import import_extension
    from dynamica.generator.spec.model import load_model
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.integrators.timing import seconds_per_call
    rows, tmp = [], Path(tempfile.mkdtemp(prefix="bench_scale_"))
    try:
        for shape in args.shapes:
            stopped = {}                                   # variant -> reason larger sizes are skipped
            history = {v: [] for v in args.variants}       # (n, build seconds)
            for n in args.sizes:
                d = model_dict(shape, n, 1)
                path = tmp / f"{shape}{n}.yaml"
                path.write_text(yaml.safe_dump(d, sort_keys=False))
                spec = load_model(path)
                rng = np.random.default_rng(n)
                states = np.concatenate([rng.uniform(-1, 1, (8, n)), rng.uniform(-1, 1, (8, n))], axis=1)
                q, v = states[0, :n], states[0, n:]
                models = {}
                for var in args.variants:
                    row = {"shape": shape, "n": n, "variant": var}
                    rows.append(row)
                    if var in stopped:
                        row["error"] = stopped[var]
                        continue
                    mode, form, backend = parse_variant(var)
                    log(f"{shape} N={n} {label(var)}: building")
                    res = build({"model": str(path), "form": form, "mode": mode, "backend": backend,
                                 "cache": str(tmp / f"cache_{shape}_{n}_{var.replace(':', '_')}")}, args.timeout)
                    row.update(res)
                    if "error" in res:
                        log(f"  {res['error']}")
                        stopped[var] = f"skipped (N={n}: {res['error']})"
                        continue
                    total = res["gen"] + res["compile"]
                    log(f"  gen {res['gen']:.1f} s, compile {res['compile']:.1f} s, {res['ops']} ops, "
                        f"peak {res['gen_mb']:.0f} / {res['cc_mb']:.0f} MB")
                    history[var].append((n, total))
                    if total > args.budget:
                        stopped[var] = f"skipped (budget: {total:.0f} s at N={n})"
                    elif len(history[var]) >= 2:
                        (n1, t1), (n2, t2) = history[var][-2:]
                        nxt = next((m for m in args.sizes if m > n), None)
                        if nxt and t1 > 0 and t2 > t1:
                            p = math.log(t2 / t1) / math.log(n2 / n1)
                            if t2 * (nxt / n2) ** p > 2 * args.budget:
                                stopped[var] = f"skipped (predicted {t2 * (nxt / n2) ** p:.0f} s)"
                    try:
                        models[var] = CompiledModel(import_extension(Path(res["so"])), spec, Path(res["so"]))
                    except Exception as exc:                        # noqa: BLE001 - reported in the table
                        row["error"] = f"import failed: {exc}"
                # the peers after the builds (pinocchio's Data is large; not held while compiling)
                with_pin = pinocchio_bytes(n) <= args.pin_max_gb * 1e9
                if not with_pin:
                    log(f"{shape} N={n}: pinocchio not run (its Data would need ~{pinocchio_bytes(n) / 1e9:.0f} GB)")
                peers = Peers(d, with_pinocchio=with_pin)
                peers.set_state(q, v)
                ref = peers.qdd()
                for row in rows:
                    if row["shape"] == shape and row["n"] == n and row["variant"] in models:
                        row["err"] = max(rel(models[row["variant"]].qdd(q, v), ref[k]) for k in ref)
                # interleaved timing rounds: every dynamica module and the peers
                best = {k: float("inf") for k in list(models) + peers.names}
                for _ in range(args.rounds):
                    for var, m in models.items():
                        best[var] = min(best[var], seconds_per_call(m, states=states, budget=args.time_budget,
                                                                    rounds=2))
                    for k in peers.names:
                        best[k] = min(best[k], best_timeit(peers.call(k), 2))
                for row in rows:
                    if row["shape"] == shape and row["n"] == n:
                        row.update({f"{k}_us": best[k] * 1e6 if k in best else None for k in ("aba", "crba", "mj")})
                        if row["variant"] in models:
                            row["rhs_us"] = best[row["variant"]] * 1e6
                log(f"{shape} N={n}: " + ", ".join(f"{label(k) if ':' in k else k} {t * 1e6:.1f} us"
                                                   for k, t in best.items()))
                models.clear()
                del peers
                if partial:                                  # rows so far, in case a later size fails
                    Path(partial).write_text(json.dumps(rows, indent=1))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return rows


# ------------------------------------------------------------------------------------------ report
HEAD = (f"{'shape':<6} {'N':>5} {'variant':<10} {'gen s':>7} {'compile s':>9} {'gen MB':>7} {'cc MB':>6} {'src kB':>8} "
        f"{'ops':>8} {'RHS us':>10} {'/aba':>6} {'/crba':>6} {'/mj':>6} {'max rel err':>11}")


def fmt(r) -> str:
    lead = f"{r['shape']:<6} {r['n']:>5} {label(r['variant']):<10} "
    if "error" in r:
        return lead + r["error"]
    us = r.get("rhs_us", float("nan"))
    ratio = lambda k: f"{us / r[k]:>6.2f}" if r.get(k) else f"{'-':>6}"  # noqa: E731
    return lead + (f"{r['gen']:>7.2f} {r['compile']:>9.2f} {r['gen_mb']:>7.0f} {r['cc_mb']:>6.0f} {r['src_kb']:>8.0f} "
                   f"{r['ops']:>8} {us:>10.2f} {ratio('aba_us')} {ratio('crba_us')} {ratio('mj_us')} "
                   f"{r['err']:>11.1e}")


def peers_table(rows) -> list:
    seen, out = set(), [f"{'shape':<6} {'N':>5} {'pin.aba us':>11} {'pin crba+chol us':>16} {'mj_forward us':>14}"]
    num = lambda x, w: f"{x:>{w}.2f}" if x else f"{'not run':>{w}}"  # noqa: E731
    for r in rows:
        key = (r["shape"], r["n"])
        if key in seen or "mj_us" not in r:
            continue
        seen.add(key)
        out.append(f"{r['shape']:<6} {r['n']:>5} {num(r['aba_us'], 11)} {num(r['crba_us'], 16)} {num(r['mj_us'], 14)}")
    return out


def verdict(rows) -> list:
    def get(shape, n, var):
        return next((r for r in rows if r["shape"] == shape and r["n"] == n and r["variant"] == var
                     and "error" not in r), None)
    out = ["Targets:"]
    r = get("chain", 1000, "numeric:articulated")
    if r:
        tot = r["gen"] + r["compile"]
        out.append(f"  numeric chain N=1000 generate + compile < 60 s: {tot:.1f} s "
                   f"({'met' if tot < 60 else 'NOT met'})")
        if r.get("aba_us"):
            ratio = r["rhs_us"] / r["aba_us"]
            out.append(f"  numeric chain N=1000 RHS within 2x of pin.aba: {ratio:.2f}x "
                       f"({'met' if ratio <= 2 else 'NOT met'})")
        else:
            big = max((x for x in rows if x["shape"] == "chain" and x.get("aba_us") and "rhs_us" in x
                       and x["variant"] == "numeric:articulated"), key=lambda x: x["n"], default=None)
            out.append("  numeric chain N=1000 RHS within 2x of pin.aba: pinocchio not measurable at N=1000 "
                       f"(Data ~{pinocchio_bytes(1000) / 1e9:.0f} GB); mj_forward ratio {r['rhs_us'] / r['mj_us']:.2f}"
                       + (f"; pin.aba ratio at N={big['n']}: {big['rhs_us'] / big['aba_us']:.2f}" if big else ""))
    else:
        r = next(
            (r for r in rows if r["shape"] == "chain" and r["n"] == 1000 and r["variant"] == "numeric:articulated"),
            None,
        )
        out.append("  numeric chain N=1000 (articulated): " + (r["error"] if r else "not in this run"))
    for var in ("symbolic:articulated", "symbolic:composite"):
        r = get("chain", 100, var)
        if r:
            tot = r["gen"] + r["compile"]
            cmp = (f"RHS / pin.aba {r['rhs_us'] / r['aba_us']:.2f} ({'met' if r['rhs_us'] < r['aba_us'] else 'NOT met'}"
                   ": < 1)") if r.get("aba_us") else "pin.aba not measured"
            out.append(f"  {label(var)} chain N=100: generate + compile {tot:.0f} s "
                       f"({'met' if tot < 300 else 'NOT met'}: < 5 min), {cmp}")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), help="mode:form[:backend]")
    ap.add_argument("--budget", type=float, default=BUDGET, help="generation + compile seconds after which the "
                    "next size of a series is skipped (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per build (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timing rounds (default %(default)s)")
    ap.add_argument("--time-budget", type=float, default=0.1, help="seconds per dynamica timing (default %(default)s)")
    ap.add_argument("--pin-max-gb", type=float, default=10.0, help="run pinocchio only where its Data needs at "
                    "most this many GB (~64 N^3 bytes; default %(default)s: N <= 500)")
    ap.add_argument("--out", default=str(HERE / "results" / "scale.txt"))
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--merge", help="JSON rows of an earlier run (results/scale.json): its rows of the shapes not "
                    "run now are reported first")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--compile-worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(json.loads(args.worker))))
        return 0
    if args.compile_worker:
        print(json.dumps(compile_worker(json.loads(args.compile_worker))))
        return 0
    import mujoco
    import pinocchio

    import dynamica
    start, load0 = time.strftime("%Y-%m-%d %H:%M:%S"), os.getloadavg()[0]
    args.sizes = sorted(set(args.sizes))
    rows = run(args, partial=None if args.no_save else str(Path(args.out).with_suffix(".partial.json")))
    rev = subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True).stdout.strip()
    run_line = (f"run {start} .. {time.strftime('%H:%M:%S')} (load average {load0:.2f} .. {os.getloadavg()[0]:.2f}); "
                f"{platform.platform()}, {os.cpu_count()} cores; python {platform.python_version()}; dynamica "
                f"{dynamica.__version__} ({rev}), pinocchio {pinocchio.__version__}, mujoco {mujoco.__version__}")
    for r in rows:
        r["run"] = run_line
    if args.merge:                            # rows of an earlier run for the shapes this one did not run
        earlier = [r for r in json.loads(Path(args.merge).read_text()) if r["shape"] not in args.shapes]
        rows = earlier + rows
    lines = [__doc__.strip().splitlines()[0], ""]
    for shape in args.shapes + sorted({r["shape"] for r in rows} - set(args.shapes)):
        lines.append(f"{shape}: " + next((r.get("run", "run not recorded") for r in rows if r["shape"] == shape), ""))
    lines += [
             "variant: sym/num = mode symbolic/numeric, C/F = backend Cython/Fortran, form acronym. gen/compile: "
             "seconds in a fresh process and cache;",
             "gen MB / cc MB: peak resident memory of the generator / of the largest compiler process; RHS us: C loop "
             "over rhs_capsule; /aba, /crba, /mj: RHS over",
             "pin.aba, pin crba+nle+cholesky, mujoco mj_forward (all three from Python, best of rounds); max rel err: "
             "q'' against all three peers.", "",
             HEAD] + [fmt(r) for r in rows] + ["", "Peers (us per call):"] + peers_table(rows) + [""] + verdict(rows)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(text)
        Path(args.out).with_suffix(".json").write_text(json.dumps(rows, indent=1))
        Path(args.out).with_suffix(".partial.json").unlink(missing_ok=True)
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
