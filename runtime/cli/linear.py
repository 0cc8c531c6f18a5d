"""The command line of statics, linear analysis and identification (dissertation 5.2):

    dynamica statics MODEL [--free a,b] [--time T] [--set name=value ...] [--input u=1 ...] [--start q=0.3 ...]
                   [--out eq.csv]
    dynamica modes MODEL [--at equilibrium|initial] [--input u=1 ...] [--start q=0.3 ...] [--table modes.csv]
                   [--plot shapes.png]
                         [--response INPUT --outputs a,b --response-plot afc.png --response-table afc.csv]
    dynamica prony DATA.csv --columns a,b [--modes N] [--t-column t] [--start T0] [--end T1] [--offset]
                   [--table prony.csv] [--plot fit.png]
    dynamica identify MODEL --params k,c (--records DATA.csv [--columns x1,x2] | --frequencies f1,f2
                      [--decay-rates b1,b2]) [--start-values k=1e4,c=5] [--set name=value ...]

Registered by runtime/cli/main.py (`add_commands`); errors are printed without a traceback there.
"""

from __future__ import annotations

import numpy as np


def _names(text):
    return [x.strip() for x in text.split(",") if x.strip()] if text else None


def _params(model, args) -> dict | None:
    """The parameter values of `--set NAME=VALUE ...` (runtime/paramsets.py: vectors, NAME[K]), or None."""
    from dynamica.runtime.paramsets import parse_assignments
    return parse_assignments(args.set, dict(model.parameters)) or None


def _inputs(model, args) -> dict | None:
    """The held inputs of `--input NAME=VALUE ...`, or None."""
    from dynamica.runtime.paramsets import scalar_values
    return scalar_values(args.input, "--input", model.inputs, "input") or None


def _load(args):
    from dynamica.runtime.api import load
    return load(args.model, form=args.form, backend=args.backend, mode=args.mode)


def _start(model, args):
    """q0 of `--start name=value ...` (the others at their initial values), or None."""
    from dynamica.runtime.paramsets import scalar_values
    given = scalar_values(args.start, "--start", model.coordinates, "coordinate")
    if not given:
        return None
    q0 = model.initial_state()[0]
    for c, v in given.items():
        q0[model.coordinates.index(c)] = v
    return q0


def cmd_statics(args):
    from dynamica.runtime.analysis.statics import statics
    model = _load(args)
    eq = statics(model, q0=_start(model, args), free=_names(args.free), t=args.time,
                 params=_params(model, args), u=_inputs(model, args))
    print(f"equilibrium of {model.name} at t = {args.time:g}")
    print(eq.text())
    if "states" in eq.info:
        print("extra states: " + ", ".join(f"{k} = {v:.10g}" for k, v in eq.info["states"].items()))
    if args.out:
        from dynamica.files import write_atomic
        write_atomic(args.out, "coordinate,start,equilibrium,held\n" + "".join(
            f"{c},{a:.17g},{b:.17g},{int(c in eq.held)}\n" for c, a, b in zip(eq.coordinates, eq.q0, eq.q)))
        print(f"written to {args.out}")
    return 0


def cmd_modes(args):
    from dynamica.runtime.analysis.linear import linearize
    model = _load(args)
    params = _params(model, args)
    u = _inputs(model, args)
    if args.at == "equilibrium":
        lin = linearize(model, t=args.time, params=params, u=u, q0=_start(model, args),
                        independent=_names(args.independent))
        where = "the equilibrium found from " + ("the start given (--start)" if args.start else "the initial values")
    else:
        q0, qd0 = model.initial_state(params)
        where = "the initial state"
        if model.loops:                       # onto the loops' constraint manifold
            q0, qd0 = model.assemble(q0, qd0, t=args.time, params=params)
            where = "the initial state, assembled on the loops"
        lin = linearize(model, q=q0, qd=qd0, t=args.time, params=params, u=u, independent=_names(args.independent))
    md = lin.modes()
    # the response's names are checked before anything is printed
    fr = lin.frequency_response(_names(args.response), _names(args.outputs)) if args.response else None
    print(f"modes of {model.name} about {where}:")
    print("  " + ", ".join(f"{c} = {v:.8g}" for c, v in zip(model.coordinates, lin.q)))
    qdd = np.asarray(lin.qdd, dtype=float) if getattr(lin, "qdd", None) is not None else np.zeros(0)
    if qdd.size and np.max(np.abs(qdd)) > 1e-8:
        k = int(np.argmax(np.abs(qdd)))
        print(f"  not an equilibrium: the accelerations there reach {qdd[k]:.4g} ({model.coordinates[k]}); the "
              "modes describe small motions about this state only for as long as it lasts")
    print(md.table())
    if args.table:
        md.to_csv(args.table)
        print(f"table written to {args.table}")
    if args.plot:
        md.plot(args.plot)
        print(f"mode shapes plotted to {args.plot}")
    if fr is not None:
        for i, name in enumerate(fr.inputs):
            for o, out in enumerate(fr.outputs):
                peaks = ", ".join(f"{f:.5g}" for f in fr.peaks(o, i)) or "none"
                print(f"response {out} / {name}: " + (f"peaks at {peaks} Hz" if peaks != "none" else
                                                         "no peak in the frequency range"))
        if args.response_plot:
            fr.plot(args.response_plot)
            print(f"amplitude-frequency characteristic plotted to {args.response_plot}")
        if args.response_table:
            fr.to_csv(args.response_table)
            print(f"frequency response written to {args.response_table}")
    return 0


def _read_columns(path, t_column, columns):
    data = np.genfromtxt(path, delimiter=",", names=True, deletechars="", dtype=float)
    names = data.dtype.names or ()
    want = [t_column] + (columns or [c for c in names if c != t_column])
    missing = [c for c in want if c not in names]
    if missing:
        raise ValueError(f"{path}: no column(s) {', '.join(map(repr, missing))}; it has {', '.join(names)}")
    return data[t_column], np.column_stack([data[c] for c in want[1:]]), want[1:]


def cmd_prony(args):
    from dynamica.runtime.analysis.identify import prony
    t, Y, names = _read_columns(args.data, args.t_column, _names(args.columns))
    keep = np.ones(len(t), dtype=bool)
    if args.start is not None:
        keep &= t >= args.start
    if args.end is not None:
        keep &= t <= args.end
    t, Y = t[keep], Y[keep]
    p = prony(t, Y, args.modes, offset=args.offset, channels=tuple(names))
    print(f"Prony analysis of {', '.join(names)} on [{t[0]:g}, {t[-1]:g}] s ({len(t)} samples):")
    print(p.table())
    if args.table:
        p.to_csv(args.table)
        print(f"table written to {args.table}")
    if args.plot:
        _plot_fit(args.plot, t, Y, p.fit(t).reshape(len(t), -1), names)
        print(f"data and fit plotted to {args.plot}")
    return 0


def _plot_fit(path, t, Y, F, names):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from dynamica.runtime.analysis.modes import save_figure
    fig, axes = plt.subplots(len(names), 1, figsize=(7.0, 2.4 * len(names)), squeeze=False, sharex=True)
    for k, (ax, name) in enumerate(zip(axes[:, 0], names)):
        ax.plot(t, Y[:, k], ".", ms=2, label=f"{name} (data)")
        ax.plot(t, F[:, k], "-", lw=1, label="fit")
        ax.legend(fontsize=8)
    axes[-1, 0].set_xlabel("t, s")
    fig.tight_layout()
    save_figure(fig, path)


def cmd_identify(args):
    from dynamica.runtime.analysis.identify import identify
    model = _load(args)
    params = _names(args.params)
    if not params:
        raise ValueError("identify needs --params NAME,NAME,... (the parameters to fit)")
    from dynamica.runtime.paramsets import scalar_values
    kw = {"start": scalar_values(args.start_values, "--start-values") or None, "fixed": _params(model, args)}
    if (args.records is None) == (args.frequencies is None):
        raise ValueError("identify needs either --records DATA.csv or --frequencies F1,F2,... (Hz)")
    if args.records:
        fit = identify(model, params, records=args.records, columns=_names(args.columns), **kw)
        what = f"records {args.records}"
    else:
        target = {"frequencies": [float(x) for x in _names(args.frequencies)]}
        if args.decay_rates:
            target["decay_rates"] = [float(x) for x in _names(args.decay_rates)]
            if len(target["decay_rates"]) != len(target["frequencies"]):
                raise ValueError("--decay-rates needs one value per frequency")
        fit = identify(model, params, modes=target, **kw)
        what = "the modes " + ", ".join(f"{f:g} Hz" for f in target["frequencies"])
    print(f"{model.name}: {', '.join(params)} fitted to {what}")
    print(fit.table())
    return 0 if fit.success else 1


def add_commands(sub, common, epilog):
    """The subparsers of this module; `common(p)` adds MODEL, --form, --backend, --mode, -q."""
    for add in (_add_statics, _add_modes, _add_prony, _add_identify):
        add(sub, common, epilog)


def _setting(p):
    from dynamica.runtime.cli.main import number
    p.add_argument("--set", action="extend", nargs="+", metavar="NAME=VALUE", help="parameter values (repeatable)")
    p.add_argument("--time", type=number(), default=0.0, help="the time t of driven joints and forces (default 0)")


def _operating(p):
    p.add_argument("--input", action="extend", nargs="+", metavar="NAME=VALUE",
                   help="inputs of the model (`inputs:`) held at these values (repeatable; default 0)")
    p.add_argument("--start", action="extend", nargs="+", metavar="COORDINATE=VALUE",
                   help="where the search for the equilibrium starts (repeatable; default: the initial values)")


def _add_statics(sub, common, epilog):
    p = sub.add_parser("statics", help="the equilibrium reached from the initial values (generalized forces at rest "
                       "vanish), its stiffness eigenvalues and stability", epilog=epilog)
    common(p)
    _setting(p)
    _operating(p)
    p.add_argument("--free", help="comma-separated coordinates to solve for (default: all; the others are held)")
    p.add_argument("--out", help="write coordinate, start, equilibrium to this CSV file")
    p.set_defaults(fn=cmd_statics)


def _add_modes(sub, common, epilog):
    p = sub.add_parser("modes", help="natural frequencies, damping, decrements and mode shapes about the "
                       "equilibrium; frequency response", epilog=epilog)
    common(p)
    _setting(p)
    _operating(p)
    p.add_argument("--at", choices=("equilibrium", "initial"), default="equilibrium",
                   help="linearize about the equilibrium (default) or the initial state")
    p.add_argument("--independent", help="closed loops: comma-separated coordinates to keep independent (default: "
                   "chosen by QR pivoting of the constraint Jacobian)")
    p.add_argument("--table", help="write the modal table to this CSV file")
    p.add_argument("--plot", help="plot the mode shapes to this file (PNG, PDF, SVG)")
    p.add_argument("--response", help="comma-separated inputs of the frequency response: unit generalized forces "
                   "on these coordinates, or the model's inputs (`inputs:`)")
    p.add_argument("--outputs", help="comma-separated outputs of the response: coordinates, der(<coordinate>) or "
                   "extra states (default: all coordinates)")
    p.add_argument("--response-plot", help="plot the amplitude-frequency characteristic to this file")
    p.add_argument("--response-table", help="write amplitudes and phases against frequency to this CSV file")
    p.set_defaults(fn=cmd_modes)


def _add_prony(sub, common, epilog):
    from dynamica.runtime.cli.main import count, number
    p = sub.add_parser("prony", help="frequencies, decay rates, amplitudes and phases of damped oscillations in "
                       "recorded signals (Prony by the matrix pencil; table 5.4)", epilog=epilog)
    p.add_argument("data", help="a CSV file with a header row and a time column")
    p.add_argument("--columns", help="comma-separated signal columns (default: every column but time)")
    p.add_argument("--t-column", default="t", help="the time column (default t)")
    p.add_argument("--modes", type=count, default=None, help="number of damped harmonics (default: suggested by the "
                   "singular values)")
    p.add_argument("--start", type=number(), default=None, help="analyse from this time on")
    p.add_argument("--end", type=number(), default=None, help="analyse up to this time")
    p.add_argument("--offset", action="store_true", help="also fit a constant (a static offset of the signals)")
    p.add_argument("--table", help="write the table to this CSV file")
    p.add_argument("--plot", help="plot data and fit to this file")
    p.set_defaults(fn=cmd_prony)


def _add_identify(sub, common, epilog):
    p = sub.add_parser("identify", help="fit model parameters to records or to identified modes by nonlinear "
                       "least squares (table 5.5)", epilog=epilog)
    common(p)
    p.add_argument("--params", help="comma-separated parameters to fit")
    p.add_argument("--records", help="a CSV file with a column t and columns named like the model's series "
                   "(coordinates, der(...), outputs)")
    p.add_argument("--columns", help="comma-separated record columns to fit (default: all)")
    p.add_argument("--frequencies", help="comma-separated identified natural frequencies, Hz")
    p.add_argument("--decay-rates", help="comma-separated identified decay rates, 1/s (negative when decaying)")
    p.add_argument("--start-values", help="initial guesses NAME=VALUE,... (default: the model's values)")
    p.add_argument(
        "--set", action="extend", nargs="+", metavar="NAME=VALUE", help="fixed parameter values (repeatable)"
    )
    p.set_defaults(fn=cmd_identify)
