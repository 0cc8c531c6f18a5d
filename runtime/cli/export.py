"""`dynamica export MODEL --c DIR | --fmu OUT.fmu [--kind me|cs|both]` (docs/export.md)."""

from __future__ import annotations

import sys


def cmd_export(args):
    from dynamica.runtime.cli.main import load_for_command
    from dynamica.runtime.export import ExportError
    if not args.c and not args.fmu:
        raise ExportError("say what to export: --c DIR (the C library) and/or --fmu OUT.fmu (an FMI 2.0 FMU)")
    if args.fmu and args.backend != "c":
        raise ExportError(f"the FMU is made of the C backend's kernels; --backend {args.backend} exports only --c")
    model = load_for_command(args)
    if args.c:
        from dynamica.runtime.export.c_library import export_c
        out = export_c(model, args.c).resolve()
        print(f"C library of {model.name!r} written to {out}: `make -C {out}` builds it and the example "
              f"{model.name}_main", file=sys.stderr)
    if args.fmu:
        from dynamica.runtime.export.fmu import export_fmu
        out = export_fmu(model, args.fmu, kind=args.kind, rtol=args.rtol, atol=args.atol, fmi=args.fmi).resolve()
        print(f"FMI {args.fmi}.0 FMU ({args.kind}) of {model.name!r} written to {out}", file=sys.stderr)
    return 0


def add_parser(sub, common):
    from dynamica.runtime.cli.main import number
    from dynamica.runtime.export.fmu import CS_ATOL, CS_RTOL, VERSIONS
    p = sub.add_parser("export", help="the equations as a standalone C library (--c) or an FMI 2.0 FMU (--fmu)",
                       description="Export a model's generated equations for use outside Python (docs/export.md).")
    common(p)
    p.add_argument("--c", metavar="DIR", help="write the standalone C99 library (header, sources, Makefile, "
                   "CMakeLists.txt, example main.c) into DIR")
    p.add_argument("--fmu", metavar="OUT.fmu",
                   help="write an FMI 2.0 (or, with --fmi 3, 3.0) FMU (linux64 binary and sources)")
    p.add_argument("--fmi", choices=tuple(VERSIONS), default="2",
                   help="the FMI version of the FMU: 2 (FMI 2.0, default) or 3 (FMI 3.0)")
    p.add_argument("--kind", choices=("me", "cs", "both"), default="both",
                   help="Model Exchange, Co-Simulation or both in one FMU (default both)")
    p.add_argument("--rtol", type=number("positive"), default=CS_RTOL,
                   help=f"Co-Simulation integrator's relative tolerance (default {CS_RTOL:g}; an importer's "
                   "tolerance overrides it)")
    p.add_argument("--atol", type=number("positive"), default=CS_ATOL,
                   help=f"Co-Simulation integrator's absolute tolerance (default {CS_ATOL:g})")
    p.set_defaults(fn=cmd_export)
