#!/usr/bin/env python
"""Equation-form benchmark: every registered form on chains and stars of N bodies.

A plain script, run by hand (not in CI); see benchmarks/README.md, section "Equation forms".

    python benchmarks/bench_forms.py                              # everything, ~40 min on 2 cores
    python benchmarks/bench_forms.py --sizes 5 10 --shapes chain --dofs 1 --forms CBM ABM --no-save
    python benchmarks/bench_forms.py --budget 30 --jobs 1

For each shape (chain: body i on body i-1; star: body 1 on the ground, bodies 2..N on body 1, as
`generator.cost.chain` / `cost.star`), joint type (1 DOF: a revolute joint; 2 DOF: a universal
joint, rotations about x then y; 3 DOF: a spherical joint, Cardan rotations x, y, z) and size N,
a model file is written to a temporary directory (offsets with all three components, masses,
centres of mass off the joint axes, full inertia tensors with products of inertia, gravity
[0, 0, -g] with the runtime parameter g) and every registered equation form is

  1. generated and compiled (in a subprocess per build, `--jobs` at a time, killed at
     `--timeout`), into the benchmark's own cache DYNAMICA_CACHE (default /tmp/dcache_bench);
  2. checked: q'' against the articulated-body form (Hamiltonian forms: the velocities their
     state gives back and the momentum rate against a central difference of p(q, qd) along
     the reference motion);
  3. timed at the C level (`runtime.timing.seconds_per_call`, a C loop over the module's
     `rhs_capsule` cycling through 64 states along a short trajectory), best of `--rounds`
     rounds interleaved over the forms of one model.

Within a series (form, shape, DOF) the sizes run in increasing order; when generation + compile
of one size took more than `--budget` seconds (or the growth of the last two sizes predicts more
than twice the budget for the next size) the remaining sizes are reported as `skipped (budget)`.
A build's generation and compile seconds are kept in the cache directory (bench_forms_builds.json),
so a rerun times the modules again without rebuilding them (`--rebuild` to redo the builds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DYNAMICA_CACHE", "/tmp/dcache_bench")

import numpy as np

HERE = Path(__file__).resolve().parent
SIZES = (5, 10, 20, 40, 70, 100)
SHAPES = ("chain", "star")
DOFS = (1, 2, 3)
BUDGET = 90.0            # s of generation + compile of one size before the next size is skipped
TIMEOUT = 600.0          # s per build (subprocess killed)
ROUNDS = 5               # interleaved timing rounds per model; the best is kept
ROUND_BUDGET = 0.06      # s of C loop per seconds_per_call in one round
K_ITR = 2                # the iteration count the dissertation assumes for ITR (tables 5.2, 5.3)
G = 9.81
CHECK_TOL = 1e-8         # q'' relative to the articulated form
HAM_TOL = 1e-5           # momentum rate vs central difference (h = 1e-5)
RPM_FILE = "bench_forms_builds.json"
SKIP_KERNELS = ("mass", "momenta", "outputs")
HAM_ACR = {"hamilton-composite": "HCBM", "hamilton-lagrange1": "HLGR", "hamilton-articulated": "HABM",
           "hamilton-ltdl": "HDEC"}


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------ models
def _inertia(i: int) -> list:
    """A full, positive definite inertia tensor about the centre of mass (products of inertia
    nonzero), varied a little per body: [Ixx, Iyy, Izz, Ixy, Iyz, Ixz]."""
    s = 1.0 + 0.01 * (i % 7)
    return [round(v * s, 6) for v in (0.060, 0.050, 0.030, 0.004, -0.003, 0.002)]


def _joint(i: int, dof: int, offset: list) -> list:
    tr = [{"translate": offset}]
    if dof == 1:
        return tr + [{"rotate": "xyz"[(i - 1) % 2], "q": f"q{i}"}]       # x, y, x, y, ...
    if dof == 2:
        return tr + [{"rotate": "x", "q": f"q{i}a"}, {"rotate": "y", "q": f"q{i}b"}]
    return tr + [{"rotate": "x", "q": f"q{i}a"}, {"rotate": "y", "q": f"q{i}b"}, {"rotate": "z", "q": f"q{i}c"}]


def model_dict(shape: str, n: int, dof: int) -> dict:
    bodies = []
    for i in range(1, n + 1):
        if shape == "chain" or i == 1:
            parent = "ground" if i == 1 else f"b{i - 1}"
            offset = [0.05, 0.02, -0.5] if i > 1 else [0.0, 0.0, 0.0]
        else:                                   # star: satellites around body 1
            a = 2 * math.pi * (i - 2) / max(1, n - 1)
            parent = "b1"
            offset = [round(0.3 * math.cos(a), 6), round(0.3 * math.sin(a), 6), -0.2]
        bodies.append({
            "name": f"b{i}", "parent": parent, "joint": _joint(i, dof, offset),
            "mass": round(1.0 + 0.05 * (i % 5), 6),
            "com": [0.03, -0.02, -0.25],
            "inertia": _inertia(i),
        })
    return {"name": f"{shape}{dof}d{n}", "parameters": {"g": G}, "gravity": [0, 0, "-g"], "bodies": bodies}


def write_model(shape: str, n: int, dof: int, folder: Path) -> Path:
    import yaml
    path = folder / f"{shape}{dof}d{n}.yaml"
    if not path.exists():
        with open(path, "w") as f:
            yaml.safe_dump(model_dict(shape, n, dof), f, sort_keys=False)
    return path


def cost_tree(shape: str, n: int, dof: int):
    from dynamica.generator.cost import flops as cost
    return cost.chain(n, dof) if shape == "chain" else cost.star(n, dof)


def predicted(form: str, shape: str, n: int, dof: int):
    from dynamica.generator.cost import flops as cost
    try:
        return float(cost.count(cost_tree(shape, n, dof), form=form, K=K_ITR))
    except (KeyError, ValueError):
        return None                              # no flop formula (the Hamiltonian forms)


def acronym(form: str) -> str:
    from dynamica.generator.cost import flops as cost
    from dynamica.generator.forms import ALIASES
    if form in cost.ACRONYMS:
        return cost.ACRONYMS[form]
    if form in HAM_ACR:
        return HAM_ACR[form]
    return next((a for a, f in ALIASES.items() if f == form and a.isupper()), form)


def all_forms() -> list:
    from dynamica.generator.cost import flops as cost
    from dynamica.generator.forms import EQUATION_FORMS
    order = {f: k for k, f in enumerate(cost.FORMS)}
    return sorted(EQUATION_FORMS, key=lambda f: (f.startswith("hamilton"), order.get(f, 99), f))


def rhs_ops(counts: dict) -> int:
    return int(sum(v["total"] for k, v in counts.items() if k not in SKIP_KERNELS))


# ------------------------------------------------------------------------------------------ builds
def worker(job_file: str) -> None:
    """`--worker JOB.json`: generate and compile one (model, form); the result next to the job."""
    job = json.loads(Path(job_file).read_text())
    out = Path(job["result"])
    res = {"stage": "generate"}
    out.write_text(json.dumps(res))
    from dynamica import build
    from dynamica.generator.pipeline import generate
    res["fingerprint"] = build.tool_fingerprint()
    res["record_key"] = record_key(Path(job["model"]), job["form"])
    t0 = time.perf_counter()
    gen = generate(job["model"], form=job["form"])
    res["generate_s"] = time.perf_counter() - t0
    res["stages"] = dict(gen.timings)
    res["ops"] = rhs_ops({k.name: k.op_count() for k in gen.module_ir.kernels})
    res["kernels"] = {k.name: k.op_count()["total"] for k in gen.module_ir.kernels}
    args = build.default_compile_args(gen.bundle)
    res["opt"] = next((a for a in args if a.startswith("-O")), "?")
    key = build.build_key(gen.bundle, args)
    final = Path(build.cache_root()) / f"{gen.bundle.module_name}-{key[:24]}"
    res["cached"] = build._find_extension(final, gen.bundle.module_name) is not None
    res["stage"] = "compile"
    out.write_text(json.dumps(res))
    same = None if res["cached"] else same_sources(gen.bundle, res["opt"], job.get("earlier", {}))
    if same is not None:
        # the generator changed (other sessions edit it) but not what it writes for this model:
        # the module an earlier build compiled from identical sources and flags is this module
        res["so"], res["compile_s"], res["same_sources"] = same[0], same[1], True
    else:
        t0 = time.perf_counter()
        so = build.compile_bundle(gen.bundle)
        res["compile_s"] = time.perf_counter() - t0
        res["so"] = str(so)
    res["stage"] = "done"
    out.write_text(json.dumps(res))


def same_sources(bundle, opt, earlier: dict):
    """(so, compile seconds) of an earlier build of the same module name whose folder holds exactly
    `bundle`'s files and was compiled with the same optimisation level, else None."""
    for so, (compile_s, old_opt) in earlier.items():
        folder = Path(so).parent
        if old_opt != opt or not Path(so).exists() or not folder.name.startswith(bundle.module_name + "-"):
            continue
        try:
            if all((folder / name).read_text() == text for name, text in bundle.files):
                return so, compile_s
        except OSError:
            continue
    return None


def record_key(model_path: Path, form: str) -> str:
    from dynamica.build import tool_fingerprint
    return hashlib.sha256(b"\0".join([tool_fingerprint().encode(), model_path.read_bytes(),
                                      form.encode()])).hexdigest()


class Records:
    """Generation/compile seconds of earlier builds (a cache hit has no compile time of its own)."""

    def __init__(self, path: Path, use: bool):
        self.path, self.use = path, use
        try:
            self.data = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            self.data = {}

    def get(self, key):
        r = self.data.get(key) if self.use else None
        return r if r and Path(r.get("so", "")).exists() else None

    def compile_time_of(self, so):
        """The compile seconds recorded for this extension file by an earlier build, if any."""
        return next((r["compile_s"] for r in self.data.values() if r.get("so") == so and r.get("compile_s", 0) > 0.05),
                    None)

    def put(self, key, res):
        self.data[key] = res
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, indent=0))
        os.replace(tmp, self.path)


def build_all(series: list, sizes: list, workdir: Path, args) -> dict:
    """Run the builds; returns {(form, shape, dof, n): result dict}. `series`: (form, shape, dof)."""
    cache = Path(os.environ["DYNAMICA_CACHE"])
    cache.mkdir(parents=True, exist_ok=True)
    records = Records(cache / RPM_FILE, use=not args.rebuild)
    results = {}
    nxt = {s: 0 for s in series}                 # index of the next size per series
    running = {}                                 # series -> (proc, job, t0, result path, log)
    done_series = set()

    def skip_rest(s, why):
        for n in sizes[nxt[s]:]:
            results[(*s, n)] = {"status": why}
        nxt[s] = len(sizes)
        done_series.add(s)

    def finish(s, res):
        form, shape, dof = s
        n = sizes[nxt[s]]
        results[(*s, n)] = res
        nxt[s] += 1
        if res["status"] != "ok":
            skip_rest(s, "skipped (after error)" if not res["status"].startswith("timeout") else "skipped (budget)")
            return
        took = res["generate_s"] + res["compile_s"]
        if nxt[s] >= len(sizes):
            done_series.add(s)
            return
        if took > args.budget:
            skip_rest(s, "skipped (budget)")
            return
        # growth seen so far: extrapolate to the next size; skip when it would exceed the timeout
        prev = [(m, results[(*s, m)]) for m in sizes[:nxt[s]] if results.get((*s, m), {}).get("status") == "ok"]
        if len(prev) >= 2:
            (n1, r1), (n2, r2) = prev[-2], prev[-1]
            t1, t2 = r1["generate_s"] + r1["compile_s"], r2["generate_s"] + r2["compile_s"]
            if t2 > 10 and t1 > 0:
                p = max(1.0, math.log(t2 / t1) / math.log(n2 / n1))
                est = t2 * (sizes[nxt[s]] / n2) ** p
                if est > 2 * args.budget:
                    skip_rest(s, "skipped (budget)")

    def start(s):
        form, shape, dof = s
        n = sizes[nxt[s]]
        path = write_model(shape, n, dof, workdir)
        key = record_key(path, form)
        rec = records.get(key)
        if rec is not None:
            res = dict(rec, status="ok", reused=True)
            log(f"{acronym(form):>5} {shape} {dof}-DOF N={n}: reused build "
                f"({res['generate_s']:.1f} + {res['compile_s']:.1f} s)")
            finish(s, res)
            return
        jobdir = Path(tempfile.mkdtemp(prefix=f"{form}-{shape}{dof}-{n}-", dir=workdir))
        prefix = f"{path.stem}_{form.replace('-', '_')}-"
        earlier = {r["so"]: (r["compile_s"], r["opt"]) for r in records.data.values()
                   if Path(r.get("so", "")).parent.name.startswith(prefix)}
        job = {"model": str(path), "form": form, "result": str(jobdir / "result.json"), "earlier": earlier}
        (jobdir / "job.json").write_text(json.dumps(job))
        wlog = open(jobdir / "worker.log", "w")
        proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--worker", str(jobdir / "job.json")],
                                stdout=wlog, stderr=subprocess.STDOUT, start_new_session=True)
        running[s] = (proc, job, time.perf_counter(), jobdir, wlog, key)

    def collect(s, timed_out):
        proc, job, t0, jobdir, wlog, key = running.pop(s)
        wlog.close()
        form, shape, dof = s
        n = sizes[nxt[s]]
        rfile = jobdir / "result.json"
        res = json.loads(rfile.read_text()) if rfile.exists() else {"stage": "start"}
        res["wall_s"] = time.perf_counter() - t0
        if timed_out:
            res["status"] = f"timeout after {args.timeout:.0f} s in {res['stage']}"
        elif proc.returncode != 0 or res.get("stage") != "done":
            tail = (jobdir / "worker.log").read_text().strip().splitlines()
            last = next((ln for ln in reversed(tail) if ln.strip()), f"exit {proc.returncode}")
            res["status"] = f"error: {res.get('stage')}: {last.strip()[:160]}"
            res["log"] = "\n".join(tail[-40:])
        else:
            res["status"] = "ok"
            if res.get("cached"):
                # compiled by an earlier run (the generator fingerprint changed in between, so the
                # record is under another key): take its recorded compile time
                earlier = records.compile_time_of(res["so"])
                if earlier is not None:
                    res["compile_s"] = earlier
                else:
                    res["compile_s_note"] = "cache hit, compile time unknown"
            rec = {
                k: res[k] for k in ("generate_s", "compile_s", "ops", "kernels", "opt", "so", "stages", "fingerprint")
            }
            records.put(key, rec)
            if res.get("record_key") and res["record_key"] != key:
                records.put(res["record_key"], rec)
        extra = (f"{res['generate_s']:.1f} + {res['compile_s']:.1f} s, {res['ops']} ops, {res['opt']}"
                 + (" (sources unchanged since an earlier build: its module and compile time)"
                    if res.get("same_sources") else "")
                 if res["status"] == "ok" else res["status"])
        log(f"{acronym(form):>5} {shape} {dof}-DOF N={n}: {extra}")
        finish(s, res)

    try:
        _schedule(series, running, done_series, nxt, start, collect, args)
    finally:
        for proc, *_ in running.values():           # interrupted: stop the builds we started
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return results


def _schedule(series, running, done_series, nxt, start, collect, args):
    sizes_left = lambda s: nxt[s] < len(args.sizes)  # noqa: E731
    while len(done_series) < len(series):
        # start ready series, smallest pending size first
        ready = [s for s in series if s not in done_series and s not in running and sizes_left(s)]
        ready.sort(key=lambda s: (nxt[s], series.index(s)))
        for s in ready:
            if len(running) >= args.jobs:
                break
            start(s)
        if not running:
            continue
        time.sleep(0.2)
        for s in list(running):
            proc, job, t0 = running[s][:3]
            if proc.poll() is not None:
                collect(s, False)
            elif time.perf_counter() - t0 > args.timeout:
                os.killpg(proc.pid, signal.SIGKILL)          # the worker and its compiler
                proc.wait()
                collect(s, True)


# ------------------------------------------------------------------------------------------ timing
def time_group(shape, dof, n, forms, builds, workdir, rounds) -> None:
    """Check and time every built form of one model; results are added to the build dicts."""
    from dynamica.build import import_extension
    from dynamica.generator.spec.model import load_model
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.integrators.timing import seconds_per_call, trajectory_states
    path = write_model(shape, n, dof, workdir)
    spec = load_model(path)
    models = {}
    for f in forms:
        r = builds.get((f, shape, dof, n))
        if not r or r["status"] != "ok":
            continue
        try:
            models[f] = CompiledModel(import_extension(Path(r["so"])), spec, Path(r["so"]))
        except Exception as exc:          # noqa: BLE001 - reported in the table
            r["status"] = f"error: import: {type(exc).__name__}: {exc}"[:200]
    if not models:
        return
    lag = [f for f in models if not models[f].hamiltonian]
    ref = "articulated" if "articulated" in lag else (lag[0] if lag else None)
    rng = np.random.default_rng(1000 * n + 10 * dof + (shape == "star"))
    q = rng.uniform(-1.0, 1.0, models[next(iter(models))].n)
    qd = rng.uniform(-1.0, 1.0, q.size)
    qdd_ref = models[ref].qdd(q, qd) if ref else None
    # states along a short trajectory of the reference (Lagrangian) model, converted per form
    base = models[ref] if ref else next(iter(models.values()))
    try:
        ys_base = trajectory_states(base)
    except Exception as exc:                  # noqa: BLE001
        for f in models:
            builds[(f, shape, dof, n)]["status"] = f"error: trajectory: {type(exc).__name__}: {exc}"[:200]
        return
    qs = [base.from_state(y) for y in ys_base]
    states = {}
    for f, m in list(models.items()):
        r = builds[(f, shape, dof, n)]
        try:
            if m.hamiltonian:
                y = m.to_state(q, qd)
                yd = m.rhs(0.0, y)
                err_v = float(np.linalg.norm(yd[:m.n] - qd) / max(1.0, np.linalg.norm(qd)))
                err = err_v
                if qdd_ref is not None:
                    h = 1e-5
                    pp = m.to_state(q + h * qd + 0.5 * h * h * qdd_ref, qd + h * qdd_ref)[m.n:]
                    pm = m.to_state(q - h * qd + 0.5 * h * h * qdd_ref, qd - h * qdd_ref)[m.n:]
                    fd = (pp - pm) / (2 * h)
                    err = max(err_v, float(np.linalg.norm(yd[m.n:] - fd) / max(1.0, np.linalg.norm(fd))))
                r["check"] = err
                ok = err_v < CHECK_TOL and err < HAM_TOL
            else:
                out = m.qdd(q, qd)
                err = float(np.linalg.norm(out - qdd_ref) / max(1.0, np.linalg.norm(qdd_ref)))
                r["check"] = err
                ok = err < CHECK_TOL
            if not np.isfinite(err) or not ok:
                r["status"] = f"error: wrong result (rel. err {err:.1e} vs {acronym(ref)})"
                # still timed: the number is reported next to the error
            states[f] = np.ascontiguousarray([m.to_state(qq, vv) for qq, vv in qs]) if m.hamiltonian \
                else np.ascontiguousarray(ys_base)
        except Exception as exc:              # noqa: BLE001
            r["status"] = f"error: check: {type(exc).__name__}: {exc}"[:200]
            del models[f]
    itr = {f: m for f, m in models.items() if hasattr(m.module, "itr_stats")}
    for m in itr.values():
        m.module.itr_reset(inverse=False, stats=True)
    best = {f: float("inf") for f in models}
    for _ in range(rounds):
        for f, m in models.items():
            best[f] = min(best[f], seconds_per_call(m, states=states[f], budget=ROUND_BUDGET, rounds=3))
    for f, m in models.items():
        r = builds[(f, shape, dof, n)]
        r["us"] = best[f] * 1e6
        if f in itr:
            st = m.module.itr_stats()
            calls = max(1, st["calls"])
            r["itr"] = {"K": st["iterations"] / calls, "fallback": st["fallbacks"] / calls,
                        "direct": st["directs"] / calls, "calls": st["calls"]}


# ------------------------------------------------------------------------------------------ report
def fmt_num(x, kind):
    if x is None:
        return "-"
    if kind == "us":
        return f"{x:.3g}" if x < 100 else f"{x:.0f}"
    if kind == "int":
        return f"{x:,.0f}".replace(",", " ")
    if kind == "s":
        return f"{x:.1f}"
    if kind == "k":
        return f"{x:.2f}"
    return str(x)


def table(header, rows) -> list:
    widths = [max(len(h), *(len(r[k]) for r in rows)) if rows else len(h) for k, h in enumerate(header)]
    line = lambda cells: " | ".join(c.rjust(w) for c, w in zip(cells, widths)).rstrip()   # noqa: E731
    return [line(header), "-+-".join("-" * w for w in widths)] + [line(r) for r in rows]


def cell(r, key, kind):
    if r is None:
        return "-"
    st = r["status"]
    if st.startswith("skipped"):
        return "skip" if key != "us" else st.replace("skipped", "skip").replace("(after error)", "(err)")
    if st != "ok" and key == "us" and r.get("us") is None:
        return "ERR"
    v = r.get(key)
    if v is None:
        return "ERR" if st != "ok" else "-"
    s = fmt_num(v, kind)
    return s + ("!" if st != "ok" and key != "pred" else "")     # a prediction needs no build


def fit_exponent(ns, vs, last=3):
    pts = [(n, v) for n, v in zip(ns, vs) if v is not None and v > 0][-last:]
    if len(pts) < 2:
        return None, None
    x = np.log([p[0] for p in pts])
    y = np.log([p[1] for p in pts])
    slope = float(np.polyfit(x, y, 1)[0])
    return slope, (pts[0][0], pts[-1][0])


def report(builds, forms, shapes, dofs, sizes, header_lines) -> tuple:
    lines = list(header_lines)
    acr = {f: acronym(f) for f in forms}
    # one flops-per-second rate for the whole run: median of predicted flops / measured time
    rates = [r["pred"] / (r["us"] * 1e-6) for r in builds.values()
             if r.get("pred") and r.get("us") and r["status"] == "ok"]
    rate = float(np.median(rates)) if rates else None
    if rate:
        lines.append(f"fitted rate: {rate / 1e9:.2f} Gflop/s (median of predicted flops / measured time over "
                     f"all {len(rates)} points with a prediction); it scales the dashed lines of forms.png")
    lines.append("")
    expo = []
    for shape in shapes:
        for dof in dofs:
            get = lambda f, n: builds.get((f, shape, dof, n))   # noqa: E731
            lines.append(f"=== {shape}, {dof}-DOF joints ({ {1: 'revolute', 2: 'universal', 3: 'spherical'}[dof]}) ===")
            hdr = ["N", "n"] + [acr[f] for f in forms]
            for title, key, kind in (("time per RHS call, us (C level, best of rounds)", "us", "us"),
                                     ("predicted flops, (4.1)-(4.7), K = 2 for ITR", "pred", "int"),
                                     ("generated operations of the RHS kernels (after CSE)", "ops", "int"),
                                     ("generation + compile, s", "build_s", "s")):
                lines.append(f"-- {title}")
                rows = [[str(n), str(n * dof)] + [cell(get(f, n), key, kind) for f in forms] for n in sizes]
                lines += table(hdr, rows)
            itr_forms = [f for f in forms if any((get(f, n) or {}).get("itr") for n in sizes)]
            if itr_forms:
                lines.append("-- iterative forms: mean iterations per call K (fallbacks, direct solves per call)")
                rows = [[str(n), str(n * dof)] + [
                    (lambda r: f"{r['itr']['K']:.2f} ({r['itr']['fallback']:.2f}, {r['itr']['direct']:.3f})"
                     if r and r.get("itr") else "-")(get(f, n)) for f in itr_forms] for n in sizes]
                lines += table(["N", "n"] + [acr[f] for f in itr_forms], rows)
            errs = [(f, n, get(f, n)["status"]) for f in forms for n in sizes
                    if get(f, n) and get(f, n)["status"].startswith(("error", "timeout"))]
            for f, n, st in errs:
                lines.append(f"   {acr[f]} N={n}: {st}")
            lines.append("")
            for f in forms:
                us = [(get(f, n) or {}).get("us") if (get(f, n) or {}).get("status") == "ok" else None for n in sizes]
                e_t, rng_ = fit_exponent(sizes, us)
                if e_t is None:
                    continue
                sub = [n for n in sizes if rng_[0] <= n <= rng_[1]]
                e_p, _ = fit_exponent(sub, [(get(f, n) or {}).get("pred") for n in sub], last=99)
                e_o, _ = fit_exponent(sub, [(get(f, n) or {}).get("ops") for n in sub], last=99)
                expo.append((shape, dof, acr[f], rng_, e_t, e_o, e_p))
    lines.append("=== growth exponents: slope of log(value) vs log(N) over the largest (up to 3) measured sizes ===")
    rows = [[s, str(d), a, f"{r[0]}-{r[1]}", f"{et:.2f}", "-" if eo is None else f"{eo:.2f}",
             "-" if ep is None else f"{ep:.2f}"] for s, d, a, r, et, eo, ep in expo]
    lines += table(["shape", "DOF", "form", "N range", "time", "gen. ops", "predicted"], rows)
    lines.append("")
    lines.append(
        "cells: `skip (budget)` = not built: the previous size exceeded the generation + compile budget "
        "(or the growth of the last two sizes predicts more than twice the budget for this one); "
        "`skip (err)` = after an error; `ERR` = failed (see the lines under the table); "
        "`!` = measured but the result check failed; `-` = no value (no flop formula)."
    )
    return lines, rate, expo


def plot(builds, forms, shapes, dofs, sizes, rate, path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"] + ["#000000", "#7f7f7f", "#bcbd22"]
    fig, axes = plt.subplots(len(shapes), len(dofs), figsize=(4.6 * len(dofs), 4.0 * len(shapes)),
                             squeeze=False, sharex=True)
    handles = {}
    for a, shape in enumerate(shapes):
        for b, dof in enumerate(dofs):
            ax = axes[a][b]
            for k, f in enumerate(forms):
                c = colours[k % len(colours)]
                pts = [(n, builds[(f, shape, dof, n)]) for n in sizes if (f, shape, dof, n) in builds]
                meas = [(n, r["us"]) for n, r in pts if r.get("us") and r["status"] == "ok"]
                style = "-" if not f.startswith("hamilton") else ":"
                if meas:
                    h, = ax.plot(*zip(*meas), style, marker="o", ms=3, color=c, label=acronym(f))
                    handles[acronym(f)] = h
                pred = [(n, r["pred"] / rate * 1e6) for n, r in pts if r.get("pred") and rate]
                if pred:
                    ax.plot(*zip(*pred), "--", color=c, lw=0.8, alpha=0.7)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(f"{shape}, {dof}-DOF joints")
            ax.grid(True, which="both", lw=0.3, alpha=0.5)
            if b == 0:
                ax.set_ylabel("us per RHS call (C)")
            if a == len(shapes) - 1:
                ax.set_xlabel("N bodies")
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=min(11, len(handles)))
    fig.suptitle("time per RHS call (solid; dotted: Hamiltonian forms); dashed: predicted flops / "
                 + (f"{rate / 1e9:.2f} Gflop/s" if rate else "-"))
    fig.tight_layout(rect=(0, 0.06, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def machine_info(args) -> list:
    import dynamica
    from dynamica.build import tool_fingerprint
    root = Path(dynamica.__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", ".", ":!benchmarks"], cwd=root,
                               capture_output=True, text=True).stdout.strip()
        git = f"{head}{' + uncommitted changes' if dirty else ''}"
    except OSError:
        git = "unknown"
    cpu = "unknown"
    try:
        cpu = next(ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                   if ln.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return [
        "Equation forms on chains and stars (benchmarks/bench_forms.py)",
        f"date:     {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        f"machine:  {os.cpu_count()} cpus, {cpu}; {platform.platform()}; python {sys.version.split()[0]}",
        f"dynamica: git {git}; generator fingerprint {tool_fingerprint()[:12]}",
        f"run:      sizes {' '.join(map(str, args.sizes))}; budget {args.budget:.0f} s; timeout {args.timeout:.0f} s; "
        f"{args.jobs} build jobs; timing best of {args.rounds} interleaved rounds of seconds_per_call "
        f"(~{ROUND_BUDGET} s each, 64 trajectory states); cache {os.environ['DYNAMICA_CACHE']}",
    ]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    ap.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=SHAPES)
    ap.add_argument("--dofs", type=int, nargs="+", default=list(DOFS), choices=DOFS)
    ap.add_argument("--forms", nargs="+", default=None, help="names or acronyms (default: every registered form)")
    ap.add_argument("--budget", type=float, default=BUDGET, help="generation + compile seconds after which the "
                    "next size of a series is skipped (default %(default)s)")
    ap.add_argument("--timeout", type=float, default=TIMEOUT, help="seconds per build (default %(default)s)")
    ap.add_argument("--jobs", type=int, default=2, help="builds at a time (default %(default)s)")
    ap.add_argument("--rounds", type=int, default=ROUNDS, help="timing rounds (default %(default)s)")
    ap.add_argument("--rebuild", action="store_true", help="do not reuse recorded builds of earlier runs")
    ap.add_argument("--out", default=str(HERE / "results" / "forms.txt"))
    ap.add_argument("--plot", default=None, help="default: --out with .png")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.worker)
        return 0

    from dynamica.generator.forms import resolve
    forms = [resolve(f) for f in args.forms] if args.forms else all_forms()
    sizes = sorted(set(args.sizes))
    log(f"forms: {', '.join(f'{f} ({acronym(f)})' for f in forms)}; cache {os.environ['DYNAMICA_CACHE']}")
    header = machine_info(args)
    load0 = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="bench_forms-"))
    series = [(f, shape, dof) for shape in args.shapes for dof in args.dofs for f in forms]
    signal.signal(signal.SIGTERM, lambda *a: (_ for _ in ()).throw(KeyboardInterrupt()))
    args.sizes = sizes
    t_start = time.perf_counter()
    builds = build_all(series, sizes, workdir, args)
    t_build = time.perf_counter() - t_start
    log(f"builds done in {t_build:.0f} s; timing")
    from dynamica.runtime.integrators.timing import ctiming
    ctiming()
    for (f, shape, dof, n), r in builds.items():
        r["pred"] = predicted(f, shape, n, dof)
        if r["status"] == "ok":
            r["build_s"] = r["generate_s"] + r["compile_s"]
    for shape in args.shapes:
        for dof in args.dofs:
            for n in sizes:
                t0 = time.perf_counter()
                time_group(shape, dof, n, forms, builds, workdir, args.rounds)
                log(f"timed {shape} {dof}-DOF N={n} ({time.perf_counter() - t0:.1f} s)")
    load1 = os.getloadavg()
    prints = sorted({r["fingerprint"][:12] for r in builds.values() if r.get("fingerprint")})
    reused = sum(1 for r in builds.values() if r.get("same_sources"))
    if reused:
        header.append(f"note:     {reused} builds found the module of an earlier build generated from identical "
                      "sources (the generator had changed elsewhere): their compile seconds are those of that build")
    if len(prints) > 1:
        header.append(f"note:     the generator changed during the builds (fingerprints {', '.join(prints)}): "
                      "other sessions were editing it; each build used the version it found")
    header.append(f"load:     {load0[0]:.2f} at start, {load1[0]:.2f} at end; builds {t_build / 60:.1f} min, "
                  f"total {(time.perf_counter() - t_start) / 60:.1f} min")
    lines, rate, _ = report(builds, forms, args.shapes, args.dofs, sizes, header)
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_save:
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        png = Path(args.plot) if args.plot else out.with_suffix(".png")
        plot(builds, forms, args.shapes, args.dofs, sizes, rate, png)
        (workdir / "builds.json").write_text(json.dumps({"|".join(map(str, k)): v for k, v in builds.items()},
                                                        indent=1, default=str))
        log(f"wrote {out} and {png}; raw data {workdir / 'builds.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
