"""The `dynamica` command line: compile, simulate, check, select, cache; statics, modes, prony and
identify are in runtime/cli/linear.py.

Errors are printed without a traceback and the exit code is non-zero.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

import numpy as np

from dynamica.errors import DynamicaError

#: the reference documentation in the repository
MODEL_DOC = "docs/model_format.md"
API_DOC = "docs/api.md"


def number(kind: str = "finite"):
    """An argparse type: a finite float, "positive" (> 0) or "nonnegative" (>= 0); a bad value
    is argparse's one-line error naming the option, before any work is done."""
    def parse(text):
        try:
            x = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"a number is expected, got {text!r}") from None
        if not np.isfinite(x) or (kind == "positive" and not x > 0) or (kind == "nonnegative" and not x >= 0):
            raise argparse.ArgumentTypeError(f"a {'' if kind == 'finite' else kind + ' '}finite number is expected, "
                                             f"got {text!r}")
        return x
    return parse


def count(text):
    """An argparse type: a positive integer."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"a positive integer is expected, got {text!r}") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"a positive integer is expected, got {text!r}")
    return k


def times(text):
    """An argparse type: comma-separated finite times."""
    return [number()(x) for x in text.split(",") if x.strip()]


def load_for_command(args, progress=True, **kw):
    """dynamica.load with the command's options; prints nothing for a cached module."""
    from dynamica import load
    from dynamica.runtime.cli.models import import_options
    from dynamica.runtime.cli.terminal import BuildProgress
    bar = BuildProgress(args.model, enabled=progress and not args.quiet)
    try:
        return load(args.model, form=args.form, backend=args.backend, mode=args.mode, progress=bar,
                    **import_options(args), **kw)
    finally:
        bar.close()


def cmd_compile(args):
    import importlib.machinery
    model = load_for_command(args, check_mass_matrix=False)
    src = Path(model.path)
    where = src.parent
    if args.output:
        where = Path(args.output)
        where.mkdir(parents=True, exist_ok=True)
        keep = tuple(importlib.machinery.EXTENSION_SUFFIXES) + (".c", ".h", ".f90")
        for f in src.parent.iterdir():
            if f.name.endswith(keep):
                shutil.copy2(f, where / f.name)
    where = where.resolve()
    modname = src.name.split(".")[0]
    print(f"module `{modname}` (form {model.form}; {model.n} coordinates: {', '.join(model.coordinates)}) "
          f"is in {where}")
    print("use it from Python:")
    print(f"    import sys; sys.path.insert(0, {str(where)!r}); import {modname}")
    print(f"    {modname}.rhs(t, y, p, ydot)  |  {modname}.rhs_capsule (C entry point)  |  "
          f"{modname}.PARAMETER_DEFAULTS")
    print(f"or, with names and checks:  import dynamica; model = dynamica.load({str(Path(args.model).resolve())!r})")
    return 0


def _check_vars(model, args):
    """--vars and --summary-vars name series the run will have (every stage's coordinates, their
    rates, outputs, extra states, inputs)."""
    from dynamica.runtime.results.result import parse_vars
    coords = list(model.coordinates)
    if model.spec.stages:                   # the results carry every stage's coordinates
        from dynamica.generator.mechanics.stages import result_columns
        coords = list(result_columns(model.spec, model.coordinates))
    for text in (args.vars, args.summary_vars):
        if text:
            outs = [k if shape == () else f"{k}[{j}]" for k, shape in model.output_layout
                    for j in range(len(coords) if k == "qdd" else int(np.prod(shape)) if shape != () else 1)
                    ] if hasattr(model.module, "outputs") else []
            parse_vars(text, [*coords, *(f"der({c})" for c in coords), *outs, *model.states, *model.inputs])


def _plot_and_table(model, res, args, stages):
    """--plot and --table of `simulate`, with the variables' units (units.py imports sympy: only here)."""
    from dynamica.runtime.results.result import plot_pages, summary_table
    from dynamica.runtime.results.units import display_units, variable_units
    shown = display_units(model)
    if args.plot:
        rep = plot_pages(res, args.plot, args.vars, deviation=args.deviation, title=f"{model.name} ({model.form})",
                         panels_per_page=args.panels, stages=stages,
                         units={**variable_units(model), **{c: u for c, (u, _) in shown.items()}},
                         scales={c: f for c, (_, f) in shown.items()})
        print(f"plot: {rep.pages} page(s), {rep.panels} panel(s) in {', '.join(map(str, rep.files))}")
    if args.table:
        names = [v for p in args.vars.replace(";", " ").split() for v in p.split(",") if v] if args.vars else None
        times = args.table_times or []
        tab = summary_table(res, names, times, units={**variable_units(model), **shown})
        tab.to_csv(args.table)
        print(tab.text())
        print(f"summary table written to {args.table}")


def cmd_simulate(args):
    from dynamica import simulate
    from dynamica.runtime.cli.terminal import SimulationProgress
    from dynamica.runtime.paramsets import overrides, split_assignment
    from dynamica.runtime.results.stages import parse_stages
    stages = parse_stages(args.stages) if args.stages else None        # syntax checked before the run
    model = load_for_command(args)
    params = overrides(args, model, report=None if args.quiet else lambda line: print(line, file=sys.stderr)) or None
    _check_vars(model, args)                        # fail before a long run, not after it
    from dynamica.runtime.integrators.simulate import prepare
    t_start = time.perf_counter()
    prepare(model, args.method, params)           # imports, a Jacobian module: timed apart from the integration
    t0 = time.perf_counter()
    show = (not args.quiet) and (args.progress if args.progress is not None else sys.stderr.isatty())
    t_end = args.t_end if args.t_end is not None else model.spec.simulate.t_end
    bar = SimulationProgress(0.0, t_end, show)
    keep = bool(args.plot or args.table or args.report or args.summary) or not args.out   # --out alone: streamed
    inputs = dict(split_assignment(x, "--input", "NAME=FILE.csv") for x in args.input or [])   # runtime/paramsets.py
    driven = bool(model.inputs or inputs)                     # in segments: not streamed, no progress bar
    try:
        res = simulate(model, t_end=args.t_end, method=args.method, rtol=args.rtol, atol=args.atol,
                       output_step=args.output_step, step=args.step, out=None if driven else args.out,
                       keep=True if driven else keep, params=params, inputs=inputs or None,
                       progress=(lambda res, new: bar.update(res.t[-1])) if show and not driven else None)
    finally:
        bar.close()
    dt = time.perf_counter() - t0
    if driven and args.out:
        res.to_csv(args.out)
    print(f"simulated {model.name} to t = {res.t[-1]:g} with {res.method} "
          f"({res.nfev} RHS calls, {res.info.get('rows', len(res.t))} output points) in {dt:.3f} s; "
          f"start-up {t0 - t_start:.3f} s")
    if args.out:
        print(f"results written to {args.out}")
    if args.plot or args.table:
        _plot_and_table(model, res, args, stages)
    if args.report:
        from dynamica.runtime.report.page import write_report
        rep = write_report(model, res, args.report, params=params, variables=args.vars)
        print(f"report written to {rep}")
    if args.summary:
        _write_summary(res, args, stages)
    if not args.out and not args.plot and not args.table and not args.report and not args.summary:
        k = len(res.t) - 1
        for name, qv, qdv in zip(res.coordinates, res.q[k], res.qd[k]):
            print(f"  {name:>12s} = {qv: .10g}   der = {qdv: .10g}")
    return 0


def _write_summary(res, args, stages):
    """The D90 summary tables (runtime/stages/summary.py): printed, and written as CSV or markdown (.md)."""
    from dynamica.runtime.stages.summary import stage_summary
    text = args.summary_vars or args.vars
    names = [v for p in text.replace(";", " ").split() for v in p.split(",") if v] if text else None
    summ = stage_summary(res, names, at=args.summary_at, stages=stages)
    summ.write(args.summary)
    print(summ.text())
    print(f"summary tables ({args.summary_at}) written to {args.summary}")


def cmd_check(args):
    from dynamica.runtime.paramsets import overrides
    from dynamica.runtime.reference.check import check_against_reference
    model = load_for_command(args)
    report = check_against_reference(model, samples=args.samples, seed=args.seed, params=overrides(args, model) or None)
    print(report.text())
    return 0 if report.ok(args.rtol) else 1


def cmd_select(args):
    from dynamica.runtime.analysis.selection import diagram, select
    if args.diagram:
        grids = diagram(args.diagram, max_chains=args.max_chains, max_length=args.max_length, K=args.K)
        print(f"fig. 4.8 analogue ({', '.join(f'{k}-DOF' for k in grids)} joints) written to {args.diagram}")
        if not args.model:
            return 0
    if not args.model:
        print("dynamica: error: a model file is needed (or --diagram FILE alone)", file=sys.stderr)
        return 2

    def progress(form, row):
        if not args.quiet:
            print(f"[dynamica] {form:<22s} done", file=sys.stderr, flush=True)
    forms = args.forms.split(",") if args.forms else None
    from dynamica.runtime.analysis.selection import MODES
    modes = tuple(m.strip() for m in args.modes.split(",")) if args.modes else MODES
    rep = select(args.model, forms=forms, measure=args.measure, K=args.K, progress=progress, modes=modes)
    print(rep.text())
    return 0


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(t))


def _cache_dir(args) -> Path:
    from dynamica.build import cache_root
    return Path(args.cache) if args.cache else cache_root()


def cmd_cache_info(args):
    from dynamica import cache
    rep = cache.info(_cache_dir(args))
    print(f"location: {rep.location}{'' if rep.location.is_dir() else ' (does not exist yet)'}")
    print(f"size:     {cache.human(rep.size)} in {len(rep.entries)} module(s); {rep.index_files} index file(s); "
          f"{cache.human(rep.leftover_size)} in leftovers (damaged entries, interrupted builds)")
    if rep.entries:
        print(f"oldest:   {_when(rep.entries[0].last_used)}  {rep.entries[0].name}  (last use)")
        print(f"newest:   {_when(rep.entries[-1].last_used)}  {rep.entries[-1].name}")
        print("by model:")
        for model, (n, size) in rep.by_model().items():
            print(f"  {model:<32s} {n:4d} module(s) {cache.human(size):>10s}")
    return 0


def cmd_cache_list(args):
    from dynamica import cache
    es = cache.entries(_cache_dir(args), args.model)
    if not es:
        print("no cached modules" + (f" of model {args.model!r}" if args.model else ""))
        return 0
    from dynamica.build import tool_fingerprint
    fp = tool_fingerprint()
    head = ("last use", "size", "model", "form", "backend", "mode", "in use", "status", "entry")
    rows, notes = [], []
    for e in es:
        state = cache.status(e.path, fp)
        if state.startswith("damaged"):
            notes.append(f"{e.name}: {state}")
        model = f"{e.model} (stage of {e.stage_of})" if e.stage_of else e.model
        rows.append((_when(e.last_used), cache.human(e.size), model, e.form, e.backend, e.mode,
                     "yes" if cache.in_use(e.path) else "no", state.split(":")[0], e.name))
    print(_columns(head, rows, right=(1,)))
    for note in notes:
        print(note)
    states = {r[7] for r in rows}
    legend = [text for word, text in (("stale", "stale: built by another version of dynamica, never used again"),
                                      ("damaged", "damaged: rebuilt on the next load")) if word in states]
    if legend:
        print(f"({'; '.join(legend)})")
    return 0


def _columns(head, rows, right=()) -> str:
    """A table of text columns as wide as their longest cell (right-aligned where `right` says),
    the last column unpadded."""
    widths = [max(len(str(r[k])) for r in (head, *rows)) for k in range(len(head))]

    def line(cells):
        out = [f"{c:>{w}s}" if k in right else f"{c:<{w}s}" for k, (c, w) in enumerate(zip(cells[:-1], widths))]
        return "  ".join([*out, cells[-1]])
    return "\n".join(line(r) for r in (head, *rows))


def _report_removal(rem):
    from dynamica import cache
    print(f"removed {len(rem.removed)} module(s), freed {cache.human(rem.freed)}")
    if rem.kept_in_use:
        print(f"kept {len(rem.kept_in_use)} module(s) loaded by running processes: "
              f"{', '.join(e.name for e in rem.kept_in_use)}")
    return 0


def cmd_cache_clear(args):
    from dynamica import cache
    return _report_removal(cache.clear(_cache_dir(args), args.model))


def cmd_cache_prune(args):
    from dynamica import cache
    if args.max_size is None and args.older_than is None:
        raise ValueError(
            "cache prune needs --max-size SIZE and/or --older-than AGE (e.g. --max-size 1G --older-than 30d)"
        )
    max_size = cache.parse_size(args.max_size) if args.max_size is not None else None
    older = cache.parse_age(args.older_than) if args.older_than is not None else None
    return _report_removal(cache.prune(_cache_dir(args), max_size=max_size, older_than=older))


def _cache_parser(sub):
    doc = "docs/cache.md"
    p = sub.add_parser("cache", help="inspect and trim the cache of compiled modules (info, list, clear, prune)",
                       description=f"The cache of compiled modules ({doc}): $DYNAMICA_CACHE, else "
                       "$XDG_CACHE_HOME/dynamica, else ~/.cache/dynamica.",
                       epilog=f"Model files: {MODEL_DOC}. Commands and the Python API: {API_DOC}.")
    p.add_argument("--cache", metavar="DIR", help="the cache directory (default: $DYNAMICA_CACHE, else "
                   "$XDG_CACHE_HOME/dynamica, else ~/.cache/dynamica)")
    csub = p.add_subparsers(dest="cache_command", required=True, metavar="ACTION")
    q = csub.add_parser("info", help="location, size, modules by model, oldest and newest")
    q.set_defaults(fn=cmd_cache_info)
    q = csub.add_parser("list", help="the cached modules (of MODEL), least recently used first")
    q.add_argument("model", nargs="?", metavar="MODEL", help="a model name (as in the file's `name`)")
    q.set_defaults(fn=cmd_cache_list)
    q = csub.add_parser("clear", help="remove the cached modules (of MODEL) not loaded by a running process")
    q.add_argument("model", nargs="?", metavar="MODEL", help="a model name (as in the file's `name`)")
    q.set_defaults(fn=cmd_cache_clear)
    q = csub.add_parser("prune", help="remove least recently used modules, never one loaded by a running process")
    q.add_argument("--max-size", metavar="SIZE", help="shrink the cache to at most SIZE (e.g. 500M, 1G)")
    q.add_argument("--older-than", metavar="AGE", help="remove modules unused for longer than AGE (e.g. 30d, 12h)")
    q.set_defaults(fn=cmd_cache_prune)


class _Backends:
    """The names `--backend` accepts, found when first needed (generator/render imports jinja2 and
    the backends: a run of a cached model does without them)."""

    def _names(self):
        from dynamica.generator.render import backend_names
        return backend_names()

    def __contains__(self, name):
        return name in self._names()

    def __iter__(self):
        return iter(self._names())


def _simulate_parser(sub, common) -> None:
    """`dynamica simulate`: its options."""
    from dynamica.runtime import paramsets
    p = sub.add_parser("simulate", help="integrate a model and write/plot the results")
    common(p)
    p.add_argument("--t-end", type=number(), default=None, help="final time (default: the model's simulate.t_end)")
    p.add_argument("--method", default=None, help="integrator: adams (default, compiled), stoermer6 (fixed step, "
                   "see --step), radau, RK45, DOP853, LSODA, BDF; ida (models with loops: the DAE)")
    p.add_argument("--step", type=number("positive"), default=None, help="step of stoermer6 (default: the output step)")
    p.add_argument("--rtol", type=number("nonnegative"), default=None)
    p.add_argument("--atol", type=number("nonnegative"), default=None)
    p.add_argument("--output-step", type=number("positive"), default=None, help="spacing of output points")
    p.add_argument("--out", help="write results to this CSV file")
    p.add_argument("--plot", help="write pages of time plots: PDF (one multi-page file) or PNG/SVG (a file "
                   "per page)")
    p.add_argument("--vars", help="what to plot/tabulate: panels separated by spaces or ';', curves in a panel "
                   "by ',', e.g. 'q1,q2 der(q1)' (default: coordinates, rates)")
    p.add_argument("--deviation", action="store_true", help="plot deviations from the initial values")
    p.add_argument("--panels", type=count, default=4, help="panels per plot page (default 4)")
    p.add_argument("--table", help="write a summary table (initial value, values at --table-times, maximum "
                   "deviation, mean, std) to this CSV file and print it")
    p.add_argument("--table-times", type=times, help="comma-separated times for the summary table")
    p.add_argument("--summary", metavar="FILE", help="write the D90 summary tables of the stages (values at their "
                   "start and end, maximum deviation, mean, std, RMS from the initial value, range) to this CSV "
                   "(or .md) file and print them")
    p.add_argument("--summary-vars", metavar="VARS", help="variables of the summary tables, e.g. 'q1,q2,der(q1)' "
                   "(default: the names in --vars, else the coordinates)")
    p.add_argument("--summary-at", default="all", choices=("start", "end", "max", "all"),
                   help="which summary table: at the stages' start, end, maximum deviation, or all (default)")
    p.add_argument("--stages", metavar="STAGES", help="plot and summarize only these stages: positions from 1 "
                   "(3:5, 2), names (launch_1:launch_4), patterns (launch_*), separated by commas")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.add_argument("--report", metavar="HTML", help="write one self-contained HTML page: interactive plots, "
                   "tables, parameters and a 3-D animation (docs/report.md)")
    paramsets.add_options(p)
    p.add_argument("--input", action="append", metavar="NAME=FILE.csv",
                   help="an input of the model from a CSV file of two columns t, value (linear between the "
                        "points); repeat for each input")
    p.set_defaults(fn=cmd_simulate)


def _select_parser(sub) -> None:
    """`dynamica select`: its options."""
    p = sub.add_parser("select", help="predicted flops, generated operations and (--measure) time per RHS "
                       "call of every equation form; recommends the cheapest")
    p.add_argument("model", nargs="?", help=f"model file (YAML, {MODEL_DOC})")
    p.add_argument("--forms", help="comma-separated forms (default: all registered)")
    p.add_argument("--measure", action="store_true", help="compile every form and time its RHS (C level)")
    p.add_argument(
        "--K", type=number("positive"), default=2, help="iterations assumed for ITR in the prediction (default 2)"
    )
    p.add_argument("--modes", help="comma-separated modes to report (default: symbolic,numeric)")
    p.add_argument("--diagram", help="draw the fig. 4.8 analogue (chains x chain length, per joint DOF, "
                   "coloured by the cheapest form) to this file")
    p.add_argument("--max-chains", type=count, default=20)
    p.add_argument("--max-length", type=count, default=20)
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(fn=cmd_select)


def _check_parser(sub, common) -> None:
    """`dynamica check`: its options."""
    from dynamica.runtime import paramsets
    p = sub.add_parser("check", help="compare the compiled RHS with the numeric reference at random states")
    common(p)
    p.add_argument("--samples", type=count, default=20)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--rtol", type=number("positive"), default=1e-10)
    paramsets.add_options(p)
    p.set_defaults(fn=cmd_check)


def _run(args) -> int:
    """Run the chosen command; an error the user can act on is one line and exit code 2."""
    import warnings

    from dynamica.runtime.cli.terminal import WarningsOnce, warning_cache
    shown = WarningsOnce(warning_cache(), show_all=getattr(args, "warnings", False))
    saved = warnings.showwarning
    warnings.showwarning = shown
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
    except KeyboardInterrupt:        # results written so far stay in <out>.partial
        print("dynamica: interrupted", file=sys.stderr)
        return 130
    finally:
        shown.summary()
        warnings.showwarning = saved


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="dynamica", description="Equations of motion of rigid-body trees "
                                 "as compiled extensions (after Dynamica90).",
                                 epilog=f"Model files: {MODEL_DOC}. Commands and the Python API: {API_DOC}. "
                                 "Each command has its own --help.")
    ap.add_argument("--version", action="version", version=f"dynamica {__import__('dynamica').__version__}")
    backend_choices = _Backends()
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(p):
        p.add_argument("model", help=f"model file (YAML, {MODEL_DOC})")
        p.add_argument("--form", default=None, help="equation form (composite/CBM, or auto); default: "
                       "the model's simulate.form, else composite (ltdl for large trees: docs/api.md)")
        p.add_argument("--backend", default="c", choices=backend_choices, metavar="BACKEND",
                       help="c (default; alias cython) or fortran (gfortran, docs/fortran.md)")
        p.add_argument("--mode", default="symbolic", choices=("symbolic", "numeric"),
                       help="symbolic (default: everything unrolled) or numeric (joint kinematics generated, "
                       "recursions as compiled loops; composite, articulated, ltdl)")
        p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
        cli_models.add_import_options(p)

    from dynamica.runtime.cli import models as cli_models
    p = sub.add_parser("compile", help="generate and compile the module of a model")
    common(p)
    p.add_argument("-o", "--output", help="directory to copy the compiled module (and its source) to")
    p.set_defaults(fn=cmd_compile)

    _simulate_parser(sub, common)
    _select_parser(sub)
    _check_parser(sub, common)

    cli_models.add_parsers(sub, common)
    from dynamica.runtime.cli import sweep as sweep_cli
    sweep_cli.add_parser(sub, common)
    from dynamica.runtime.cli import export as export_cli
    export_cli.add_parser(sub, common)
    _cache_parser(sub)
    from dynamica.runtime.cli.linear import add_commands
    add_commands(sub, common, f"Model files: {MODEL_DOC}. Commands and the Python API: {API_DOC}.")

    return _run(ap.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
