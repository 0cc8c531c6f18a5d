"""Sensitivity of a model's results to its inputs (docs/sweep.md, "Sensitivity").

- Global: first-order and total Sobol indices from a Saltelli design (SALib: the design of
  Saltelli 2010 on a scrambled Sobol sequence, the estimators of Saltelli 2010 (S1) and
  Jansen 1999 (ST), bootstrap confidence intervals), the design run as a `sweep`.
- Local: derivatives of every result by central differences about a point, the 2k+1 runs as a
  `sweep`.
"""

from __future__ import annotations

import warnings

import numpy as np

from dynamica.runtime.studies import cases as sweep_cases

#: columns of a sweep table that are not results
NOT_RESULTS = ("wall_time", "worker", "status")


def sobol_design(dists: dict, n: int, seed=0, second_order=False):
    """The Saltelli design for `dists` (name -> distribution, as `sample` takes them): n (D + 2)
    cases (n (2D + 2) with second order) in SALib's order, n best a power of 2."""
    import pandas as pd
    from SALib.sample import sobol as saltelli
    frozen = {name: sweep_cases.frozen_distribution(d) for name, d in dists.items()}
    if not frozen:
        raise ValueError("Sobol indices need at least one distribution")
    problem = {"num_vars": len(frozen), "names": list(frozen), "bounds": [[0.0, 1.0]] * len(frozen)}
    with warnings.catch_warnings():                # n not a power of 2: SALib warns, still valid
        warnings.simplefilter("ignore", UserWarning)
        u = saltelli.sample(problem, int(n), calc_second_order=second_order, scramble=True, seed=seed)
    u = np.clip(u, 1e-12, 1 - 1e-12)               # ppf(0) of an unbounded distribution is infinite
    return pd.DataFrame({name: d.ppf(u[:, j]) for j, (name, d) in enumerate(frozen.items())})


#: an output whose spread over the design is below this times its largest value is constant (the
#: rounding of a sum of a few terms; the indices of a constant are 0/0)
CONSTANT = 64 * np.finfo(float).eps


def sobol_indices(results, names, outputs=None, second_order=False, seed=0, num_resamples=100, conf_level=0.95):
    """First-order (S1) and total (ST) Sobol indices with their confidence half-widths, one row
    per (output, input): `results` holds the outputs of the cases of `sobol_design` in its order
    (a DataFrame; `outputs`: which columns, default all numeric ones)."""
    import pandas as pd
    from SALib.analyze import sobol as analyze
    names = list(names)
    per = 2 * len(names) + 2 if second_order else len(names) + 2
    if len(results) % per:
        raise ValueError(f"{len(results)} results are not a Saltelli design of {len(names)} inputs "
                         f"(a multiple of {per})")
    outputs = list(outputs) if outputs is not None else [c for c in results.columns
                                                          if pd.api.types.is_numeric_dtype(results[c])]
    problem = {"num_vars": len(names), "names": names, "bounds": [[0.0, 1.0]] * len(names)}
    rows, constant = [], []
    for out in outputs:
        y = np.asarray(results[out], dtype=float)
        if not np.all(np.isfinite(y)):
            raise ValueError(f"output {out!r} is not finite in {int(np.sum(~np.isfinite(y)))} case(s): Sobol indices "
                             "need every case of the design")
        if np.ptp(y) <= CONSTANT * np.abs(y).max():    # no variance to apportion: no indices, said
            constant.append(out)
            continue
        with warnings.catch_warnings(), np.errstate(divide="ignore", invalid="ignore"):
            si = analyze.analyze(problem, y, calc_second_order=second_order, num_resamples=num_resamples,
                                 conf_level=conf_level, seed=seed)
        for j, name in enumerate(names):
            rows.append({"output": out, "input": name, "S1": si["S1"][j], "S1_conf": si["S1_conf"][j],
                         "ST": si["ST"][j], "ST_conf": si["ST_conf"][j]})
    if constant:
        from dynamica.generator.spec.model import DynamicaWarning
        warnings.warn(f"Sobol indices: output(s) {', '.join(constant)} do not vary over the design (their indices "
                      "are undefined: 0/0) and are left out of the table", DynamicaWarning, stacklevel=2)
    table = pd.DataFrame(rows, columns=["output", "input", "S1", "S1_conf", "ST", "ST_conf"])
    table = table.set_index(["output", "input"])
    table.attrs["constant"] = constant
    return table


def _results(table):
    inputs = set(table.attrs.get("study", {}).get("inputs", ()))
    return [c for c in table.columns if c not in inputs and c not in NOT_RESULTS]


def _all_ok(table):
    failed = table[table["status"] != "ok"]
    if len(failed):
        raise ValueError(f"{len(failed)} of {len(table)} cases failed (case {failed.index[0]}: "
                         f"{failed['status'].iloc[0]}); the analysis needs every case")


def sobol(model, dists: dict, n: int, t_end=None, outputs=None, scheduler=None, *, seed=0, second_order=False,
          num_resamples=100, conf_level=0.95, **sweep_options):
    """Sobol indices of every result of a sweep (final state, reduced outputs) over the inputs
    `dists` (name -> distribution): (indices, table). The design has n (D + 2) cases."""
    from dynamica.runtime.studies.sweep import sweep
    design = sobol_design(dists, n, seed=seed, second_order=second_order)
    table = sweep(model, design, t_end=t_end, outputs=outputs, scheduler=scheduler, **sweep_options)
    _all_ok(table)
    indices = sobol_indices(table[_results(table)], list(design.columns), second_order=second_order, seed=seed,
                            num_resamples=num_resamples, conf_level=conf_level)
    return indices, table


def local_derivatives(model, names, t_end=None, params=None, outputs=None, scheduler=None, *, rel_step=1e-4,
                      **sweep_options):
    """d(result)/d(input) by central differences about a point: a DataFrame, one row per result
    (final state, reduced outputs), one column per input of `names` (parameters, coordinates
    and der(coordinate) for initial values). The point: the model's values, overridden by
    `params` (name -> value). Step h = rel_step |x| (rel_step for x = 0); the error is
    O(h^2) plus the integrator's error over h, so run with tolerances well below rel_step^2."""
    import pandas as pd

    from dynamica.runtime.api import load
    from dynamica.runtime.compiled import CompiledModel
    from dynamica.runtime.studies.sweep import sweep
    if not isinstance(model, CompiledModel):
        model = load(model, form=sweep_options.pop("form", None), backend=sweep_options.pop("backend", "c"),
                     mode=sweep_options.pop("mode", "symbolic"))
    names = list(names)
    point = dict(params or {})
    sweep_cases.roles(model, list(dict.fromkeys([*names, *point])))            # every name known
    base = {**{k: v for k, v in model.parameters.items() if not isinstance(v, tuple)}, **point}
    q0, qd0 = model.initial_state({k: v for k, v in base.items() if k in model.parameters})
    base.update({c: q0[i] for i, c in enumerate(model.coordinates)})
    base.update({f"der({c})": qd0[i] for i, c in enumerate(model.coordinates)})
    x = {k: float(base[k]) for k in dict.fromkeys([*names, *point])}
    steps = {k: rel_step * (abs(x[k]) if x[k] != 0 else 1.0) for k in names}
    rows = [dict(x)]
    for k in names:
        rows += [{**x, k: x[k] + steps[k]}, {**x, k: x[k] - steps[k]}]
    table = sweep(model, pd.DataFrame(rows), t_end=t_end, outputs=outputs, scheduler=scheduler, **sweep_options)
    _all_ok(table)
    res = table[_results(table)].to_numpy()
    deriv = pd.DataFrame({k: (res[1 + 2 * j] - res[2 + 2 * j]) / (2 * steps[k]) for j, k in enumerate(names)},
                         index=pd.Index(_results(table), name="result"))
    deriv.attrs["point"], deriv.attrs["steps"] = x, steps
    return deriv
