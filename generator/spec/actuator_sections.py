"""The loader's sections for actuators and signals (mixed into loader._Loader): `functions`
(tabulated functions, generator/mechanics/tables.py), `inputs` (signals from outside) and `states` (extra
first-order states). docs/model_format.md documents them.

Table files are read relative to the model file; every problem (a missing or malformed file,
knots that do not increase, a state without `der`) is one Problem naming the entry.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path

from dynamica.generator.mechanics.tables import EXTRAPOLATIONS, INTERPOLATIONS, INTERPOLATIONS_2D, TabulatedFunction
from dynamica.generator.spec import expr as ex
from dynamica.generator.spec.expr import found, join_path
from dynamica.generator.spec.model import IDENT, State

FUNCTION_KEYS = {"table", "columns", "x", "y", "z", "interpolation", "extrapolation", "description"}
STATE_KEYS = {"initial", "der", "unit", "description"}
#: knots of one variable at most (a table is constant data of the compiled module)
MAX_POINTS = 1_000_000


class TableFileError(ValueError):
    """A table file that cannot be used (the message says where in the file)."""


def read_columns(path: Path, columns) -> tuple:
    """Two columns of a CSV file (`columns`: two header names or 0-based indices; default the
    first two) as lists of floats, the first strictly increasing. Blank lines and lines starting
    with `#` are skipped; a first row that is not numeric is the header."""
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TableFileError("not a UTF-8 text file") from None
    rows = [(k + 1, r) for k, r in enumerate(csv.reader(text.splitlines()))
            if r and any(c.strip() for c in r) and not r[0].lstrip().startswith("#")]
    if not rows:
        raise TableFileError("the file has no rows")
    header = None
    if not _numeric(rows[0][1]):
        header = [c.strip() for c in rows[0][1]]
        rows = rows[1:]
    picks = []
    for c in columns if columns is not None else (0, 1):
        if isinstance(c, str):
            if header is None or c not in header:
                have = f"its header has {', '.join(header)}" if header else "it has no header row"
                raise TableFileError(f"no column `{c}` ({have})")
            picks.append(header.index(c))
        else:
            picks.append(c)
    out, lines = ([], []), []
    for line, row in rows:
        lines.append(line)
        for k, col in enumerate(picks):
            if col >= len(row):
                raise TableFileError(f"line {line} has {len(row)} column(s), column {col + 1} is needed")
            cell = row[col].strip()
            try:
                v = float(cell)
            except ValueError:
                raise TableFileError(f"line {line}, column {col + 1}: {ex.shown(cell, 40)} is not a number") from None
            if not math.isfinite(v):
                raise TableFileError(f"line {line}, column {col + 1}: {cell} is not a finite number")
            out[k].append(v)
    if len(out[0]) < 2:
        raise TableFileError(f"{len(out[0])} row(s) of numbers: a table needs at least 2")
    for k in range(1, len(out[0])):
        if not out[0][k] > out[0][k - 1]:
            raise TableFileError(f"the first column must increase strictly: {out[0][k]!r} at line {lines[k]} after "
                                 f"{out[0][k - 1]!r} at line {lines[k - 1]}")
    return out


def _numeric(row) -> bool:
    try:
        [float(c) for c in row if c.strip()]
        return True
    except ValueError:
        return False


class _Unusable:
    """A function whose table has errors (already reported): calls of it still parse."""

    def __init__(self, name, arity):
        self.name, self.arity = name, arity

    def sympy(self, *args):
        import sympy as sp
        return sp.Function(f"bad:{self.name}")(*args)

    def value(self, *args):
        return 0.0


class ActuatorSections:
    """`functions`, `inputs` and `states` (the loader provides err, keys, ident, expression, ...)."""

    # -- functions
    def functions(self, d: dict) -> list:
        """The valid tables; the names of the others go to `self.unusable_functions` (name ->
        number of variables), so that a call of one is not reported again as unknown."""
        out = []
        self.unusable_functions = {}
        for name, f in d.items():
            path = self.entry = join_path("functions", name)
            if not self.ident(name, path, "a function name"):
                continue
            if name in ex.FUNCTIONS:
                self.err(path, f"`{name}` is a function of the grammar; choose another name")
                continue
            if not isinstance(f, dict):
                self.err(path, "expected {table: FILE, columns: [x, y]}, {x: [...], y: [...]} or "
                               f"{{x: [...], y: [...], z: [[...], ...]}}, found {found(f)}")
                continue
            self.keys(f, path, FUNCTION_KEYS)
            tf = self.table_function(name, f, path)
            if tf is not None:
                out.append(tf)
            else:
                self.unusable_functions[name] = _Unusable(name, 2 if "z" in f else 1)
        return out

    def table_function(self, name, f, path):
        if ("table" in f) == ("x" in f):
            self.err(path, "give either `table` (a CSV file) or the knots `x` and `y`, not "
                           + ("both" if "table" in f else "neither"))
            return None
        if "columns" in f and "table" not in f:
            self.err(f"{path}.columns", "`columns` belongs to a `table` file")
        two = "z" in f
        interp = f.get("interpolation", "linear")
        allowed = INTERPOLATIONS_2D if two else tuple(INTERPOLATIONS)
        ok = True
        if interp not in allowed:
            self.err(f"{path}.interpolation", f"expected one of {', '.join(allowed)}"
                     + (" (a function of two variables is bilinear)" if two else "") + f", found {found(interp)}")
            ok = False
        extra = f.get("extrapolation", "hold")
        if extra not in EXTRAPOLATIONS:
            self.err(f"{path}.extrapolation", f"expected one of {', '.join(EXTRAPOLATIONS)}, found {found(extra)}")
            ok = False
        if "table" in f:
            knots = self.table_file(f.get("table"), f.get("columns"), path)
        elif two:
            knots = self.grid(f, path)
        else:
            knots = self.knots(f.get("x"), f"{path}.x"), self.knots(f.get("y"), f"{path}.y", increasing=False)
            if None not in knots and len(knots[0]) != len(knots[1]):
                self.err(f"{path}.y", f"has {len(knots[1])} values for {len(knots[0])} knots `x`")
                knots = None
        if knots is None or None in knots or not ok:
            return None
        x, y, *z = knots
        return TabulatedFunction(name, tuple(x), tuple(y), tuple(z[0]) if z else (), interp, extra,
                                 source=str(f.get("table", "")), path=path)

    def table_file(self, table, columns, path):
        """(x, y) from a CSV file, relative to the model file."""
        if not isinstance(table, str) or not table.strip():
            self.err(f"{path}.table", f"expected a file name, found {found(table)}")
            return None
        if columns is not None and not (isinstance(columns, list) and len(columns) == 2 and all(
                (isinstance(c, str) and c) or (type(c) is int and c >= 0) for c in columns)):
            self.err(f"{path}.columns", f"expected two column names (or 0-based indices), found {found(columns)}")
            return None
        base = Path(self.file).parent if self.file != "<dict>" else Path.cwd()
        file = base / table
        if not file.is_file():
            self.err(f"{path}.table", f"file not found: {table} (looked for {file}; a table file is named "
                                      "relative to the model file)")
            return None
        try:
            x, y = read_columns(file, columns)
        except TableFileError as exc:
            self.err(f"{path}.table", f"{table}: {exc}")
            return None
        except OSError as exc:
            self.err(f"{path}.table", f"{table}: cannot read the file ({exc.strerror or exc})")
            return None
        return x, y

    def knots(self, values, path, increasing=True, at_least=2):
        """A list of finite numbers (strictly increasing knots when `increasing`)."""
        if not isinstance(values, list) or len(values) < at_least:
            self.err(path, f"expected a list of at least {at_least} numbers, found {found(values)}")
            return None
        if len(values) > MAX_POINTS:
            self.err(path, f"more than {MAX_POINTS} values")
            return None
        out = [self.number(v, f"{path}[{k}]") for k, v in enumerate(values)]
        if any(v is None for v in out):
            return None
        return self.increasing(out, path, "the knots") if increasing else out

    def increasing(self, x, path, what):
        for k in range(1, len(x)):
            if not x[k] > x[k - 1]:
                self.err(path, f"{what} must increase strictly: [{k}] = {x[k]!r} after [{k - 1}] = {x[k - 1]!r}")
                return None
        return x

    def grid(self, f, path):
        """(x, y, z flat) of a function of two variables: z[i][j] is the value at (x[i], y[j])."""
        x, y = self.knots(f.get("x"), f"{path}.x"), self.knots(f.get("y"), f"{path}.y")
        if x is None or y is None:
            return None
        z = f.get("z")
        if not isinstance(z, list) or len(z) != len(x):
            self.err(f"{path}.z", f"expected {len(x)} rows (one per knot of `x`) of {len(y)} numbers, found {found(z)}")
            return None
        flat = []
        for i, row in enumerate(z):
            if not isinstance(row, list) or len(row) != len(y):
                self.err(f"{path}.z[{i}]", f"expected {len(y)} numbers (one per knot of `y`), found {found(row)}")
                return None
            vals = [self.number(v, f"{path}.z[{i}][{j}]") for j, v in enumerate(row)]
            if any(v is None for v in vals):
                return None
            flat += vals
        return x, y, flat

    # -- inputs and states
    def inputs(self, lst) -> list:
        """The input names; an entry {name: NAME, default: NUMBER} also gives the value a simulation
        holds when the input is not supplied (self.input_defaults)."""
        out = []
        self.input_defaults = []
        for k, name in enumerate(lst):
            path = self.entry = f"inputs[{k}]"
            if isinstance(name, dict):
                self.keys(name, path, ("name", "default"), required=("name", "default"))
                default = self.number(name.get("default"), f"{path}.default") if "default" in name else None
                name = name.get("name")
                if default is not None and isinstance(name, str):
                    self.input_defaults.append((name, default))
            if self.ident(name, path, "an input name"):
                if name in out:
                    self.err(path, f"input `{name}` is declared twice")
                else:
                    out.append(name)
        return out

    def state_names(self, d) -> list:
        return [k for k in d if isinstance(k, str) and IDENT.match(k)] if isinstance(d, dict) else []

    def states(self, d: dict) -> list:
        out = []
        for name, st in d.items():
            path = self.entry = join_path("states", name)
            if not self.ident(name, path, "a state name"):
                continue
            if not isinstance(st, dict):
                self.err(path, f"expected {{initial: VALUE, der: EXPRESSION}}, found {found(st)}")
                continue
            self.keys(st, path, STATE_KEYS, required=("der",))
            if "der" not in st:
                continue
            initial = self.expression(st.get("initial", 0), f"{path}.initial", self.pscope.child(time_allowed=False))
            der = self.expression(st["der"], f"{path}.der", self.fscope)
            unit = self.text(st.get("unit", ""), f"{path}.unit")
            description = self.text(st.get("description", ""), f"{path}.description")
            if initial is not None and der is not None:
                out.append(State(name, initial, der, unit, description, path))
        return out

    def distinct_names(self, params, coords, functions, inputs, states, expressions):
        """Parameters, coordinates, tabulated functions, inputs and states share the expressions'
        namespace (and coordinates, states and inputs the results' columns with the named
        expressions)."""
        seen = {}
        groups = (("parameter", "parameters", [p.name for p in params]), ("joint coordinate", "bodies", coords),
                  ("function", "functions", [f.name for f in functions]), ("input", "inputs", inputs),
                  ("state", "states", [s.name for s in states]))
        for what, section, names in groups:
            for name in names:
                pair = {seen[name][0], what} if name in seen else set()
                if len(pair) == 2 and pair != {"parameter", "joint coordinate"}:      # that pair: loader.run
                    article = "an" if what[0] in "aeiou" else "a"
                    self.err(section, f"`{name}` is both a {seen[name][0]} and {article} {what}")
                seen.setdefault(name, (what, section))
        for name, _ in expressions:         # one column per name in the results
            if name in seen and seen[name][0] in ("input", "state", "joint coordinate"):
                what = seen[name][0]
                article = "an" if what[0] in "aeiou" else "a"
                self.err(join_path("outputs.expressions", name),
                         f"`{name}` is the name of {article} {what}, which the results carry under that name")
