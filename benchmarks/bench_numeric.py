#!/usr/bin/env python
"""Numeric mode (issue 6, part 1) on long chains, next to Pinocchio's ABA measured in the same run.

    python benchmarks/bench_numeric.py                         # N = 10 50 100 200 500 1000
    python benchmarks/bench_numeric.py --sizes 10 100 --forms articulated --no-save

For each N, the chain of benchmarks/bench_forms.py (1-DOF revolute joints about x, y, x, ...,
offsets with three components, full inertia tensors) is generated in numeric mode
(`dynamica.generate(..., mode="numeric")`), compiled into a fresh private cache (so compile
seconds are always measured), and its RHS timed from C (runtime.timing.seconds_per_call: a C
loop over `rhs_capsule` on 64 states along a short trajectory). The same chain is built directly
as a pinocchio model; `pin.aba` is timed from Python with timeit (so it includes about a
microsecond of Python call overhead) and its q'' is compared with the numeric module's.
Writes benchmarks/results/numeric.txt unless --no-save.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import timeit
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_forms import model_dict  # noqa: E402


def pinocchio_chain(d: dict):
    """The chain of `model_dict("chain", n, 1)` as a pinocchio model (None if pinocchio is missing)."""
    try:
        import pinocchio as pin
    except ImportError:
        return None
    model = pin.Model()
    parent = 0
    for b in d["bodies"]:
        (off,), (rot,) = [t["translate"] for t in b["joint"] if "translate" in t], \
                         [t["rotate"] for t in b["joint"] if "rotate" in t]
        joint = {"x": pin.JointModelRX, "y": pin.JointModelRY, "z": pin.JointModelRZ}[rot]()
        jid = model.addJoint(parent, joint, pin.SE3(np.eye(3), np.array(off, dtype=float)), b["name"])
        xx, yy, zz, xy, yz, xz = b["inertia"]
        Ic = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        model.appendBodyToJoint(jid, pin.Inertia(b["mass"], np.array(b["com"], dtype=float), Ic), pin.SE3.Identity())
        parent = jid
    model.gravity.linear = np.array([0.0, 0.0, -9.81])
    return model


def time_pinocchio(model, q, v, number=None):
    import pinocchio as pin
    data = model.createData()
    tau = np.zeros(model.nv)
    f = lambda: pin.aba(model, data, q, v, tau)  # noqa: E731
    if number is None:
        t = timeit.timeit(f, number=10)
        number = max(10, int(0.05 / max(t / 10, 1e-9)))
    best = min(timeit.repeat(f, number=number, repeat=5)) / number
    return best, pin.aba(model, data, q, v, tau).copy()


def run(sizes, forms, budget):
    import yaml

    import dynamica
    from dynamica.build import compile_bundle, import_extension
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.timing import seconds_per_call
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_numeric_") as tmp:
        tmp = Path(tmp)
        for n in sizes:
            d = model_dict("chain", n, 1)
            path = tmp / f"chain{n}.yaml"
            path.write_text(yaml.safe_dump(d, sort_keys=False))
            pmodel = pinocchio_chain(d)
            rng = np.random.default_rng(n)
            q, v = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
            t_pin, a_pin = time_pinocchio(pmodel, q, v) if pmodel is not None else (float("nan"), None)
            for form in forms:
                t0 = time.perf_counter()
                g = dynamica.generate(path, form=form, mode="numeric")
                t1 = time.perf_counter()
                so = compile_bundle(g.bundle, cache=tmp / f"cache_{form}_{n}")
                t2 = time.perf_counter()
                model = CompiledModel(import_extension(so), g.spec, so)
                us = seconds_per_call(model, budget=budget) * 1e6
                a = model.qdd(q, v)
                err = float(np.linalg.norm(a - a_pin) / max(1.0, np.linalg.norm(a_pin))) if a_pin is not None \
                    else float("nan")
                src = sum(len(text) for _, text in g.bundle.files)
                row = dict(n=n, form=form, gen=t1 - t0, compile=t2 - t1, rhs_us=us, pin_us=t_pin * 1e6,
                           ratio=us / (t_pin * 1e6), err=err, src_kb=src / 1024,
                           ops=g.bundle.op_count)
                rows.append(row)
                print(fmt_row(row), flush=True)
    return rows


HEAD = (f"{'N':>5} {'form':<12} {'gen s':>7} {'compile s':>9} {'src kB':>7} {'kernel ops':>10} "
        f"{'RHS us':>9} {'pin.aba us':>10} {'ratio':>6} {'|qdd-aba| rel':>13}")


def fmt_row(r):
    return (f"{r['n']:>5} {r['form']:<12} {r['gen']:>7.2f} {r['compile']:>9.2f} {r['src_kb']:>7.0f} {r['ops']:>10} "
            f"{r['rhs_us']:>9.2f} {r['pin_us']:>10.2f} {r['ratio']:>6.2f} {r['err']:>13.1e}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100, 200, 500, 1000])
    ap.add_argument("--forms", nargs="+", default=["articulated", "composite"])
    ap.add_argument("--budget", type=float, default=0.3, help="seconds of RHS timing per module")
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    print(HEAD, flush=True)
    rows = run(args.sizes, args.forms, args.budget)
    if not args.no_save:
        import pinocchio
        lines = ["Numeric mode (mode='numeric') on chains of N bodies, 1-DOF revolute joints (bench_forms.py chain),",
                 "next to pinocchio's aba (called from Python via timeit, best of 5; includes ~1 us call overhead).",
                 "gen: dynamica.generate; compile: build.compile_bundle into a fresh cache; RHS: C loop over",
                 "rhs_capsule (runtime.timing.seconds_per_call); ratio = RHS / pin.aba; last column: relative",
                 "difference of q'' from pin.aba at a random state.",
                 f"machine: {platform.platform()}, {os.cpu_count()} cores (shared), python {platform.python_version()}, "
                 f"pinocchio {pinocchio.__version__}; {time.strftime('%Y-%m-%d %H:%M')}", "",
                 HEAD] + [fmt_row(r) for r in rows]
        out = HERE / "results" / "numeric.txt"
        out.parent.mkdir(exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
