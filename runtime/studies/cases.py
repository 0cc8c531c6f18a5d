"""The cases of a parameter study (docs/sweep.md): grids, samples from distributions, tables.

A case table is a pandas DataFrame, one row a case, one column per varied input. Inputs are
named as the model names them: a parameter `k` (a component of a vector parameter `r` as
`r[1]`), an initial coordinate `phi1`, an initial rate `der(phi1)`. `roles` checks the names
against a model and says what each column sets.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynamica.runtime.paramsets import read_number, split_assignment


# ------------------------------------------------------------------ distributions
def _normal(mu, sigma):
    from scipy import stats
    return stats.norm(loc=mu, scale=sigma)


def _uniform(a, b):
    from scipy import stats
    return stats.uniform(loc=a, scale=b - a)


def _lognormal(mu, sigma):
    """ln X ~ normal(mu, sigma)."""
    from scipy import stats
    return stats.lognorm(s=sigma, scale=np.exp(mu))


def _loguniform(a, b):
    from scipy import stats
    return stats.loguniform(a, b)


def _triangular(a, c, b):
    """Lower limit a, mode c, upper limit b."""
    from scipy import stats
    return stats.triang(c=(c - a) / (b - a), loc=a, scale=b - a)


def _truncnormal(mu, sigma, a, b):
    """normal(mu, sigma) restricted to [a, b]."""
    from scipy import stats
    return stats.truncnorm((a - mu) / sigma, (b - mu) / sigma, loc=mu, scale=sigma)


#: name -> (constructor of a frozen scipy.stats distribution, its arguments as documented)
DISTRIBUTIONS = {
    "normal": (_normal, "mu, sigma"),
    "uniform": (_uniform, "a, b"),
    "lognormal": (_lognormal, "mu, sigma (of ln x)"),
    "loguniform": (_loguniform, "a, b"),
    "triangular": (_triangular, "a, mode, b"),
    "truncnormal": (_truncnormal, "mu, sigma, a, b"),
}

_CALL = re.compile(r"^\s*([a-z]+)\s*\((.*)\)\s*$")


def distribution(text: str):
    """A frozen scipy.stats distribution from text such as `normal(2, 0.1)`."""
    m = _CALL.match(text)
    known = ", ".join(f"{k}({args})" for k, (_, args) in DISTRIBUTIONS.items())
    if not m or m.group(1) not in DISTRIBUTIONS:
        raise ValueError(f"distribution {text!r}: expected one of {known}")
    make, args = DISTRIBUTIONS[m.group(1)]
    try:
        values = [float(v) for v in m.group(2).split(",")]
    except ValueError:
        raise ValueError(f"distribution {text!r}: its arguments must be numbers ({m.group(1)}({args}))") from None
    if len(values) != args.count(",") + 1:
        raise ValueError(f"distribution {text!r}: {m.group(1)} takes {args.count(',') + 1} numbers ({args})")
    dist = make(*values)
    if not np.all(np.isfinite(dist.ppf([0.25, 0.75]))):
        raise ValueError(f"distribution {text!r}: invalid arguments ({m.group(1)}({args}))")
    return dist


def parse_dist(text: str):
    """`k=normal(2,0.1)` -> ("k", frozen distribution)."""
    name, value = split_assignment(text, "--dist", "NAME=DIST, e.g. k=normal(2,0.1)")
    return name, distribution(value)


def parse_grid(text: str):
    """`k=1,2,3` (values) or `l=0.5:1.0:6` (start:stop:count, both ends included) -> (name, values)."""
    name, value = split_assignment(text, "--grid", "NAME=v1,v2,... or NAME=start:stop:count")
    try:
        if ":" in value:
            start, stop, count = value.split(":")
            if int(count) < 1 or float(count) != int(count):
                raise ValueError
            return name, np.linspace(read_number(start), read_number(stop), int(count))
        return name, np.array([read_number(v) for v in value.split(",")])
    except ValueError:                       # (ExpressionError is one)
        raise ValueError(f"--grid {text!r}: expected NAME=v1,v2,... or NAME=start:stop:count "
                         "(count a positive integer)") from None


# ------------------------------------------------------------------ designs
def _unit_sobol(n, d, seed):
    import warnings

    from scipy.stats import qmc
    with warnings.catch_warnings():                  # n not a power of 2: less balanced, still valid
        warnings.simplefilter("ignore", UserWarning)
        return qmc.Sobol(d, scramble=True, seed=seed).random(n)


def _unit_lhs(n, d, seed):
    from scipy.stats import qmc
    return qmc.LatinHypercube(d, seed=seed).random(n)


def _unit_halton(n, d, seed):
    from scipy.stats import qmc
    return qmc.Halton(d, scramble=True, seed=seed).random(n)


def _unit_random(n, d, seed):
    return np.random.default_rng(seed).random((n, d))


#: design -> (n, dimension, seed) -> points in the unit cube, shape (n, dimension)
DESIGNS = {"sobol": _unit_sobol, "lhs": _unit_lhs, "halton": _unit_halton, "random": _unit_random}


def frozen_distribution(dist):
    """A frozen scipy.stats distribution from one (returned as is) or its text (`distribution`)."""
    if isinstance(dist, str):
        return distribution(dist)
    if not hasattr(dist, "ppf"):
        raise TypeError(f"a distribution is text such as 'normal(2, 0.1)' or a frozen scipy.stats "
                        f"distribution, not {dist!r}")
    return dist


def sample(dists: dict, n: int, design: str = "sobol", seed=0):
    """n cases drawn from `dists` (name -> text such as "normal(2, 0.1)" or a frozen scipy.stats
    distribution) by `design`: "sobol" (scrambled; best balanced for n a power of 2), "lhs"
    (Latin hypercube), "halton" or "random". Points of the unit cube mapped by each ppf."""
    if design not in DESIGNS:
        raise ValueError(f"unknown design {design!r}; available: {', '.join(DESIGNS)}")
    if int(n) < 1:
        raise ValueError(f"the number of samples must be positive, not {n}")
    import pandas as pd
    frozen = {name: frozen_distribution(d) for name, d in dists.items()}
    if not frozen:
        raise ValueError("sampling needs at least one distribution (--dist NAME=normal(mu,sigma) ...)")
    u = DESIGNS[design](int(n), len(frozen), seed)
    return pd.DataFrame({name: d.ppf(u[:, j]) for j, (name, d) in enumerate(frozen.items())})


def grid(axes: dict):
    """Every combination of the values of `axes` (name -> sequence), the first axis slowest."""
    import pandas as pd
    names = list(axes)
    values = [np.atleast_1d(np.asarray(axes[k], dtype=float)) for k in names]
    empty = [k for k, v in zip(names, values) if v.size == 0]
    if empty:
        raise ValueError(f"grid axis {', '.join(map(repr, empty))} has no values")
    rows = list(itertools.product(*values))
    return pd.DataFrame(rows, columns=names, dtype=float)


def case_table(cases):
    """The cases as a DataFrame numbered 0..N-1: a dict (name -> values: the full grid), a
    DataFrame (one row a case) or the path of a CSV or Parquet file of one."""
    import pandas as pd
    if isinstance(cases, dict):
        table = grid(cases)
    elif isinstance(cases, pd.DataFrame):
        table = cases.copy()
    elif isinstance(cases, (str, Path)):
        path = Path(cases)
        if not path.is_file():
            raise FileNotFoundError(f"cases file {path} does not exist")
        table = pd.read_parquet(path) if path.suffix == ".parquet" else pd.read_csv(path)
    else:
        raise TypeError(f"cases must be a dict of name -> values, a pandas DataFrame or a CSV file, "
                        f"not {type(cases).__name__}")
    if len(table) == 0 or len(table.columns) == 0:
        raise ValueError("the study has no cases (an empty table)")
    bad = [str(c) for c in table.columns if not pd.api.types.is_numeric_dtype(table[c])]
    if bad:
        raise ValueError(f"case column(s) {', '.join(map(repr, bad))} are not numeric")
    table.columns = [str(c) for c in table.columns]
    table.index = pd.RangeIndex(len(table), name="case")
    return table.astype(float)


# ------------------------------------------------------------------ what a column sets
@dataclass(frozen=True)
class Role:
    """What a case column sets: a parameter (`index` None, or the component of a vector
    parameter), the initial value of a coordinate ("q0") or of its rate ("qd0")."""

    kind: str          # "param", "q0", "qd0"
    name: str          # parameter or coordinate name
    index: int | None  # component of a vector parameter; coordinate index for q0/qd0


def input_column(column: str, role: Role) -> str:
    """The name of an input in the result table: parameters as given, initial values as
    `phi1(0)` and `der(phi1)(0)` (the bare names are the final state)."""
    return column if role.kind == "param" else f"{column}(0)"


def roles(model, columns) -> dict:
    """column -> Role, checked against the model; one error naming every unknown column."""
    out, unknown = {}, []
    vectors = {k: len(v) for k, v in model.parameters.items() if isinstance(v, tuple)}
    for col in columns:
        m = re.fullmatch(r"(\w+)\[(\d+)\]", col)
        if col in model.parameters and col not in vectors:
            out[col] = Role("param", col, None)
        elif m and m.group(1) in vectors and int(m.group(2)) < vectors[m.group(1)]:
            out[col] = Role("param", m.group(1), int(m.group(2)))
        elif col in model.coordinates:
            out[col] = Role("q0", col, model.coordinates.index(col))
        elif col.startswith("der(") and col.endswith(")") and col[4:-1] in model.coordinates:
            out[col] = Role("qd0", col[4:-1], model.coordinates.index(col[4:-1]))
        else:
            unknown.append(col)
    if unknown:
        names = [k if k not in vectors else f"{k}[0..{vectors[k] - 1}]" for k in model.parameters]
        raise ValueError(f"case column(s) {', '.join(map(repr, unknown))} name nothing of model "
                         f"{model.name!r}: its parameters are {', '.join(names) or 'none'}; initial values are "
                         f"named as coordinates ({', '.join(model.coordinates)}) and der(coordinate)")
    return out
