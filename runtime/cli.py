"""The `dynamica` command line: compile, simulate, check.

Errors are printed without a traceback and the exit code is non-zero.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path


from dynamica.errors import DynamicaError


def _progress(verbose):
    def report(stage, seconds):
        if verbose:
            print(f"[dynamica] {stage:<10s} {seconds:8.3f} s", file=sys.stderr, flush=True)
    return report


def cmd_compile(args):
    import importlib.machinery
    from dynamica.runtime.api import load
    print(f"[dynamica] generating and compiling {args.model} ...", file=sys.stderr, flush=True)
    model = load(args.model, form=args.form, progress=_progress(not args.quiet), check_mass_matrix=False)
    src = Path(model.path)
    where = src.parent
    if args.output:
        where = Path(args.output)
        where.mkdir(parents=True, exist_ok=True)
        keep = tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".pyx", ".pxd", ".h")
        for f in src.parent.iterdir():
            if f.name.endswith(keep):
                shutil.copy2(f, where / f.name)
    modname = src.name.split(".")[0]
    print(f"module `{modname}` (form {model.form}; {model.n} coordinates: {', '.join(model.coordinates)}) "
          f"is in {where}")
    print(f"use it with:  import sys; sys.path.insert(0, {str(where)!r}); import {modname}")
    print(f"  {modname}.rhs(t, y, p, ydot)  |  {modname}.rhs_capsule (C entry point)  |  "
          f"{modname}.PARAMETER_DEFAULTS")
    return 0


def cmd_simulate(args):
    from dynamica.runtime.api import load, simulate
    model = load(args.model, form=args.form, progress=_progress(not args.quiet))
    t0 = time.perf_counter()
    res = simulate(model, t_end=args.t_end, method=args.method, rtol=args.rtol, atol=args.atol,
                   output_step=args.output_step, step=args.step)
    dt = time.perf_counter() - t0
    print(f"simulated {model.name} to t = {res.t[-1]:g} with {res.method} "
          f"({res.nfev} RHS calls, {dt:.3f} s, {len(res.t)} output points)")
    if args.out:
        res.to_csv(args.out)
        print(f"results written to {args.out}")
    if args.plot:
        plot_result(res, args.plot, model.name)
        print(f"plot written to {args.plot}")
    if not args.out and not args.plot:
        k = len(res.t) - 1
        for name, qv, qdv in zip(res.coordinates, res.q[k], res.qd[k]):
            print(f"  {name:>12s} = {qv: .10g}   der = {qdv: .10g}")
    return 0


def plot_result(res, path, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 1, figsize=(8, 6), sharex=True)
    for k, name in enumerate(res.coordinates):
        axes[0].plot(res.t, res.q[:, k], label=name)
        axes[1].plot(res.t, res.qd[:, k], label=f"der({name})")
    axes[0].set_ylabel("coordinates")
    axes[1].set_ylabel("rates")
    axes[1].set_xlabel("t [s]")
    axes[0].set_title(title)
    for ax in axes:
        ax.grid(True)
        ax.legend(fontsize="small", ncol=3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def cmd_check(args):
    from dynamica.runtime.api import load
    from dynamica.runtime.check import check_against_reference
    model = load(args.model, form=args.form, progress=_progress(not args.quiet))
    report = check_against_reference(model, samples=args.samples, seed=args.seed)
    print(report.text())
    return 0 if report.ok(args.rtol) else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="dynamica", description="Equations of motion of rigid-body trees "
                                 "as compiled extensions (after Dynamica90).")
    ap.add_argument("--version", action="version", version=f"dynamica {__import__('dynamica').__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p):
        p.add_argument("model", help="model file (YAML, see MODEL_FORMAT.md)")
        p.add_argument("--form", default=None, help="equation form (composite/CBM, or auto); default: "
                       "the model's simulate.form, else composite")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")

    p = sub.add_parser("compile", help="generate and compile the module of a model")
    common(p)
    p.add_argument("-o", "--output", help="directory to copy the compiled module (and its source) to")
    p.set_defaults(fn=cmd_compile)

    p = sub.add_parser("simulate", help="integrate a model and write/plot the results")
    common(p)
    p.add_argument("--t-end", type=float, default=None, help="final time (default: the model's simulate.t_end)")
    p.add_argument("--method", default=None, help="integrator: adams (default, compiled), stoermer6 (fixed step, "
                   "see --step), radau, RK45, DOP853, LSODA, BDF")
    p.add_argument("--step", type=float, default=None, help="step of stoermer6 (default: the output step)")
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--atol", type=float, default=None)
    p.add_argument("--output-step", type=float, default=None, help="spacing of output points")
    p.add_argument("--out", help="write results to this CSV file")
    p.add_argument("--plot", help="write a plot of coordinates and rates (PNG/PDF/SVG)")
    p.set_defaults(fn=cmd_simulate)

    p = sub.add_parser("check", help="compare the compiled RHS with the numeric reference at random states")
    common(p)
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtol", type=float, default=1e-10)
    p.set_defaults(fn=cmd_check)

    args = ap.parse_args(argv)
    import warnings
    warnings.showwarning = lambda msg, cat, *a, **k: print(f"dynamica: warning: {msg}", file=sys.stderr)
    try:
        return args.fn(args)
    except DynamicaError as exc:
        print(f"dynamica: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, KeyError, ValueError) as exc:
        print(f"dynamica: error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:          # output piped into `head` and the like
        return 0


if __name__ == "__main__":
    sys.exit(main())
