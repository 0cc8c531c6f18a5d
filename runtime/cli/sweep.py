"""`dynamica sweep`: parameter studies from the command line (docs/sweep.md, docs/api.md)."""

from __future__ import annotations

import sys
from pathlib import Path

from dynamica.runtime.studies import cases as sweep_cases


def _cases(args):
    """The case table of the options: the grid, the samples and the file, crossed."""
    parts = []
    if args.grid:
        parts.append(sweep_cases.grid(dict(sweep_cases.parse_grid(g) for g in args.grid)))
    if args.dist and not args.samples:
        raise ValueError("--dist needs --samples N (or --sobol N)")
    if args.samples and not args.dist:
        if not args.grid:
            raise ValueError("--samples needs the distributions to draw from (--dist NAME=normal(mu,sigma) ...) "
                             "or a --grid to draw cases from")
        grid = parts.pop()                 # N cases of the grid, drawn without replacement (--seed)
        if args.samples > len(grid):
            raise ValueError(f"--samples {args.samples}: the grid has {len(grid)} cases")
        parts.append(grid.sample(n=args.samples, random_state=args.seed).sort_index().reset_index(drop=True))
    elif args.samples:
        parts.append(sweep_cases.sample(dict(sweep_cases.parse_dist(d) for d in args.dist), args.samples,
                                        args.design, args.seed))
    if args.cases:
        parts.append(sweep_cases.case_table(args.cases))
    if not parts:
        raise ValueError("no cases: give --grid NAME=VALUES, --samples N with --dist, --cases FILE or --sobol N")
    table = parts[0]
    for part in parts[1:]:
        clash = set(table.columns) & set(part.columns)
        if clash:
            raise ValueError(f"{', '.join(sorted(clash))} given twice (grid, samples, cases file)")
        table = table.merge(part, how="cross")
    return table


def _options(args):
    return dict(method=args.method, rtol=args.rtol, atol=args.atol, output_step=args.output_step,
                reductions=tuple(r.strip() for r in args.reduce.split(",") if r.strip()),
                out=args.out, trajectories=args.trajectories, resume=not args.restart, batch_size=args.batch_size,
                workers=args.workers, modules=args.modules, form=args.form, backend=args.backend, mode=args.mode,
                progress=(not args.quiet) and (args.progress if args.progress is not None else sys.stderr.isatty()))


def _report(table):
    import pandas as pd
    st = table.attrs.get("study", {})
    failed = table[table["status"] != "ok"]
    print(f"{len(table)} cases ({st.get('ran', len(table))} run now, {len(table) - len(failed)} ok, "
          f"{len(failed)} failed) in {st.get('seconds', 0.0):.2f} s on {st.get('workers', 0)} worker(s)")
    with pd.option_context("display.max_rows", 12, "display.max_columns", 10, "display.width", 120):
        print(table.drop(columns=["worker"]))
    for case, status in failed["status"].head(5).items():
        print(f"  case {case}: {status}")


def cmd_sweep(args):
    from dynamica.runtime.studies.sweep import sweep
    outputs = args.outputs.split(",") if args.outputs else None
    try:
        if args.sobol:
            from dynamica.runtime.studies.sensitivity import sobol
            if args.grid or args.samples or args.cases:
                raise ValueError("--sobol makes its own design from --dist: it takes no --grid, --samples or --cases")
            if not args.dist:
                raise ValueError("--sobol needs the distributions of the inputs: --dist NAME=uniform(a,b) ...")
            dists = dict(sweep_cases.parse_dist(d) for d in args.dist)
            indices, table = sobol(args.model, dists, args.sobol, t_end=args.t_end, outputs=outputs,
                                   scheduler=args.scheduler, seed=args.seed, **_options(args))
        else:
            indices, table = None, sweep(args.model, _cases(args), t_end=args.t_end, outputs=outputs,
                                         scheduler=args.scheduler, **_options(args))
    except KeyboardInterrupt:
        if args.out:
            print(f"dynamica: the rows finished so far are kept in {args.out}.partial; the same command "
                  "resumes the study", file=sys.stderr)
        raise
    _report(table)
    if args.out:
        print(f"table written to {args.out}")
    if args.trajectories:
        print(f"trajectories written to {Path(args.trajectories)}/case-NNNNNN.parquet")
    if indices is not None:
        print("Sobol indices (S1 first order, ST total, with confidence half-widths):")
        print(indices.to_string(float_format=lambda v: f"{v:8.4f}"))
        if args.indices:
            indices.to_csv(args.indices)
            print(f"indices written to {args.indices}")
    return 0


def add_parser(sub, common):
    """The `sweep` subcommand, with the options every model command has (`common`)."""
    from dynamica.runtime.studies.cases import DESIGNS
    from dynamica.runtime.studies.worker import MODULES, REDUCTIONS
    p = sub.add_parser("sweep", help="a parameter study (grid, samples, table of cases, Sobol indices) on a Dask "
                       "cluster (a local one by default)",
                       description="Runs one simulation per case on a Dask cluster; writes one row per case: "
                       "its inputs, the final state, reduced outputs, wall time and status (docs/sweep.md).")
    common(p)
    p.add_argument("--grid", action="append", metavar="NAME=VALUES", help="an axis of the grid of all combinations: "
                   "NAME=1,2,3 or NAME=start:stop:count (repeatable)")
    p.add_argument("--samples", type=int, metavar="N", help="N cases drawn from the --dist distributions")
    p.add_argument("--dist", action="append", metavar="NAME=DIST", help="distribution of an input, e.g. "
                   "k=normal(2,0.1) (normal, uniform, lognormal, loguniform, triangular, truncnormal; repeatable)")
    p.add_argument("--design", default="sobol", choices=tuple(DESIGNS), help="how --samples are drawn "
                   "(default sobol: scrambled Sobol, best with N a power of 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the samples (default 0)")
    p.add_argument("--cases", metavar="FILE", help="a CSV or Parquet table of cases, one row a case")
    p.add_argument("--sobol", type=int, metavar="N", help="Sobol indices of every result over the --dist inputs "
                   "from a Saltelli design of N (D + 2) cases")
    p.add_argument("--indices", metavar="FILE", help="write the Sobol indices to this CSV file")
    p.add_argument("--t-end", type=float, default=None, help="final time (default: the model's simulate.t_end)")
    p.add_argument("--outputs", metavar="KEYS", help="comma-separated outputs to reduce over each run: output "
                   "keys (a vector key gives every component), key[j], coordinates, der(coordinate)")
    p.add_argument("--reduce", default=",".join(REDUCTIONS), metavar="R1,R2",
                   help=f"reductions of the --outputs (default {','.join(REDUCTIONS)})")
    p.add_argument("--method", default=None, help="integrator (default: the model's, else adams)")
    p.add_argument("--rtol", type=float, default=None)
    p.add_argument("--atol", type=float, default=None)
    p.add_argument("--output-step", type=float, default=None, help="spacing of the output points the reductions "
                   "and trajectories use (default: the model's)")
    p.add_argument("--scheduler", metavar="WHERE", help="processes (default: local worker processes), serial "
                   "(in this process), dask (a local Dask cluster) or a running Dask scheduler, e.g. tcp://host:8786")
    p.add_argument("--workers", type=int, help="local worker processes (processes, dask; default: one per core)")
    p.add_argument("--modules", default="ship", choices=tuple(MODULES), help="ship: compile here and send the "
                   "module to the workers (default); build: each worker compiles it into its own cache")
    p.add_argument("--batch-size", type=int, help="cases per task (default: chosen from the cases and workers)")
    p.add_argument("--out", metavar="FILE", help="the table: Parquet, or CSV for a .csv name; written as the study "
                   "goes (FILE.partial/), so that the same command resumes an interrupted study")
    p.add_argument("--trajectories", metavar="DIR", help="write every run to DIR/case-NNNNNN.parquet")
    p.add_argument("--restart", action="store_true", help="discard the rows of an interrupted study instead of "
                   "resuming it")
    p.add_argument("--progress", dest="progress", action="store_true", default=None,
                   help="show a progress bar of completed cases (default: when stderr is a terminal)")
    p.add_argument("--no-progress", dest="progress", action="store_false")
    p.set_defaults(fn=cmd_sweep)
