"""Choosing the cheapest equation form (dissertation 4.2 and 5.2.3; fig. 4.8).

For a model: per registered form, the flops the formulas (4.1)-(4.7) predict
(generator/cost/flops.py), the arithmetic operations of the generated code after CSE, and on
request the measured time per RHS call of each compiled variant (runtime/integrators/timing.py). The
recommendation is the cheapest predicted form among the section 4.2 candidates (CBM, LGR,
ITR-G, DEC), or the fastest measured one.

Both modes are reported (dissertation 5.1.3): `symbolic` unrolls the form (every structural zero
exploited; the row's generated ops are the whole RHS) and `numeric` generates only the joint
terms (its generated ops) and runs the recursion as compiled loops (the flops the formulas
predict, with no zero exploited). The predicted choice: the cheapest predicted form in symbolic
mode, unless its symbolic RHS program (generated, or else predicted) exceeds NUMERIC_ABOVE
operations; then the C compiler's time and memory decide, and the cheapest predicted form that
numeric mode has is recommended in numeric mode. With measure=True: the fastest measured pair.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

from dynamica.errors import ModelError
from dynamica.generator.cost import flops as cost
from dynamica.generator.cost.flops import DEFAULT_K
from dynamica.generator.forms import MODES, NUMERIC_FORMS  # the generation modes and numeric mode's forms
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.api import FORM_CHOOSERS

#: operations of the symbolic RHS program above which numeric mode is recommended: a chain of 100
#: bodies in the sweep form has 54 000 (265 000 with its separate mass-matrix kernel) and its module
#: takes about a minute of C compiler time and 1.2 GB (benchmarks/results/scale.txt)
NUMERIC_ABOVE = 200_000


@dataclass
class FormRow:
    form: str
    acronym: str
    mode: str = "symbolic"
    kind: str = ""
    predicted: float | None = None       # flops, formulas (4.1)-(4.7)
    generated: int | None = None         # operations of the generated RHS kernels after CSE
    seconds: float | None = None         # measured time per RHS call (C level)
    note: str = ""
    applicable: bool = True              # False: the form cannot take this model (why: `note`)


@dataclass
class SelectReport:
    model: str
    n: int
    bodies: int
    K: float
    rows: list = field(default_factory=list)
    recommended: str = ""
    recommended_mode: str = "symbolic"
    mode_reason: str = ""
    basis: str = "predicted"
    excluded: tuple = ()                 # acronyms of the forms that are not applicable

    def text(self) -> str:
        head = f"{self.model}: {self.bodies} bodies, {self.n} coordinates (ITR predicted with K = {self.K:g})"
        cols = ["form", "acronym", "mode", "predicted flops", "generated ops", "measured us/call", "note"]
        body = []
        for r in self.rows:
            body.append([r.form, r.acronym, r.mode, "-" if r.predicted is None else f"{r.predicted:.0f}",
                         "-" if r.generated is None else str(r.generated),
                         "-" if r.seconds is None else f"{r.seconds * 1e6:.3f}", r.note])
        w = [max(len(c), *(len(b[k]) for b in body)) for k, c in enumerate(cols)]
        fmt = lambda row: "  ".join(s.ljust(w[k]) if k in (0, 1, 2, 6) else s.rjust(w[k])  # noqa: E731
                                    for k, s in enumerate(row)).rstrip()
        lines = [head, fmt(cols), fmt(["-" * x for x in w])] + [fmt(b) for b in body]
        out = f"; not applicable: {', '.join(self.excluded)}" if self.excluded else ""
        if self.basis == "measured":
            lines.append(f"recommended: {self.recommended}, mode {self.recommended_mode} (fastest measured{out})")
        else:
            cands = ", ".join(cost.ACRONYMS[f] for f in cost.SELECTION)
            why = f" ({self.mode_reason})" if self.mode_reason else ""
            lines.append(f"recommended: {self.recommended} (cheapest predicted among the candidates of "
                         f"section 4.2: {cands}{out}), mode {self.recommended_mode}{why}")
        return "\n".join(lines)


def rhs_ops(module_ir) -> int:
    """Operations of the kernels one RHS call runs (not the separate mass matrix, conversions, outputs)."""
    return sum(k.op_count()["total"] for k in module_ir.kernels if k.name not in ("mass", "momenta", "outputs"))


#: the section 4.2 choice by the formulas (generator/cost/flops.py), by the names this module had
predicted_best, _inverts_body_inertias = cost.cheapest_form, cost.inverts_body_inertias
default_form = cost.default_form


def _symbolic_size(rep, form):
    """Operations of the symbolic RHS program of `form`: generated if the report has it, else the
    flops the formulas predict (an upper bound: generation exploits zeros)."""
    row = next((r for r in rep.rows if r.form == form and r.mode == "symbolic"), None)
    if row is not None and row.generated is not None:
        return row.generated
    row = next((r for r in rep.rows if r.form == form), None)
    return None if row is None else row.predicted


def select(path, forms=None, measure=False, K=DEFAULT_K, generate_code=True, progress=None,
           modes=MODES) -> SelectReport:
    """Predicted flops, generated operations and (measure=True) measured us per call of each form,
    in each of `modes` (numeric mode only for the forms it has: forms.NUMERIC_FORMS)."""
    from dynamica.generator.forms import EQUATION_FORMS, FORM_INFO, resolve
    from dynamica.generator.mechanics.topology import build_topology
    from dynamica.generator.spec.model import load_model
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        raise ValueError(f"unknown mode(s) {unknown}; available: {', '.join(MODES)}")
    spec = load_model(path)
    topo = build_topology(spec)
    tree = cost.from_topology(topo, spec)
    order = {f: k for k, f in enumerate(cost.FORMS)}
    names = [resolve(f) for f in forms] if forms else sorted(EQUATION_FORMS, key=lambda f: (order.get(f, 99), f))
    rep = SelectReport(model=spec.name, n=len(spec.coordinates), bodies=topo.n_bodies, K=K)
    lgr_ok = _inverts_body_inertias(spec)
    for f in names:
        for mode in modes:
            if mode == "numeric" and f not in NUMERIC_FORMS:
                continue
            row = _form_row(path, spec, tree, f, mode, FORM_INFO[f].acronym if f in FORM_INFO else "", K,
                            lgr_ok, generate_code, measure)
            if progress is not None:
                progress(f if mode == "symbolic" else f"{f} ({mode})", row)
            rep.rows.append(row)
    _recommend(rep, spec, names, modes, K, measure)
    rep.excluded = tuple(r.acronym or r.form for r in rep.rows if not r.applicable and r.mode == "symbolic")
    return rep


def _form_row(path, spec, tree, f, mode, acronym, K, lgr_ok, generate_code, measure) -> FormRow:
    """One form in one mode: its predicted flops, its generated operations (or why the form
    cannot take the model) and, with `measure`, its seconds per call."""
    from dynamica.generator.mechanics import body_inertias
    row = FormRow(form=f, acronym=acronym, mode=mode)
    try:
        row.predicted = float(cost.count(tree, form=f, K=K))
    except (KeyError, ValueError):
        row.note = "no flop formula in the dissertation"
    if body_inertias.inverts_body_inertias(f) and not lgr_ok:
        check = body_inertias.BodyInertiaCheck(spec, f)
        defaults = spec.defaults()
        bad = check.bad_bodies([defaults[x] for x in check.symbols])
        row.applicable = False
        row.note = (f"not applicable: body {', '.join(f'`{b}`' for b in bad)} massless or its inertia "
                    f"singular at the default parameters ({check.equation} inverts every M_i)")
        return row
    if generate_code or measure:
        from dynamica.generator.pipeline import generate
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DynamicaWarning)   # said once, in the row
                g = generate(spec, form=f, mode=mode)
        except ModelError as exc:           # the form cannot take this model
            row.applicable = False
            row.note = "not applicable: " + "; ".join(p.message for p in exc.problems)
            return row
        row.kind = g.equations.kind
        row.generated = rhs_ops(g.module_ir)
        if mode == "numeric":
            row.note = "generated: joint terms only; the recursion runs as loops"
    if measure and row.applicable:
        from dynamica.runtime.api import load
        from dynamica.runtime.integrators.timing import seconds_per_call
        model = load(path, form=f, mode=mode, check_mass_matrix=False)
        row.seconds = seconds_per_call(model)
    return row


def _recommend(rep, spec, names, modes, K, measure):
    """The recommended form and mode: the fastest measured, or the cheapest predicted (numeric
    mode's cheapest where the symbolic program would be too large to compile comfortably)."""
    if measure:
        best = min((r for r in rep.rows if r.seconds is not None), key=lambda r: r.seconds)
        rep.recommended, rep.recommended_mode, rep.basis = best.form, best.mode, "measured"
        return
    usable = [f for f in names if all(r.applicable for r in rep.rows if r.form == f and r.mode == "symbolic")]
    rep.recommended = predicted_best(spec, K, available=usable)
    rep.recommended_mode, rep.mode_reason = "symbolic", ""
    size = _symbolic_size(rep, rep.recommended)
    numeric_forms = [f for f in names if f in NUMERIC_FORMS]
    if "numeric" in modes and numeric_forms and size is not None and size > NUMERIC_ABOVE:
        # too large a program to compile comfortably: the cheapest form numeric mode has
        rep.recommended = predicted_best(spec, K, available=numeric_forms)
        rep.recommended_mode = "numeric"
        rep.mode_reason = f"the symbolic program would have ~{size:.0f} operations > {NUMERIC_ABOVE}"


# ------------------------------------------------------------------ fig. 4.8
def diagram(path, max_chains=20, max_length=20, dofs=(1, 2, 3), K=DEFAULT_K, candidates=cost.SELECTION):
    """The analogue of fig. 4.8: for a base body carrying c chains of l bodies (joints of n_J
    DOFs), the cheapest form by the formulas, one panel per n_J. Returns {n_J: 2-D array of form
    indices} and writes the figure to `path`."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np
    from matplotlib.colors import ListedColormap
    from matplotlib.patches import Patch

    cands = [cost.form_name(f) for f in candidates]
    grids = {}
    for nJ in dofs:
        g = np.zeros((max_chains, max_length), dtype=int)
        for c in range(1, max_chains + 1):
            for ln in range(1, max_length + 1):
                g[c - 1, ln - 1] = cands.index(cost.best(cost.star_of_chains(c, ln, nJ), K=K, forms=cands))
        grids[nJ] = g
    colours = ["#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3"][:len(cands)]
    cmap = ListedColormap(colours)
    fig, axes = plt.subplots(1, len(dofs), figsize=(4.2 * len(dofs), 4.2), squeeze=False)
    for ax, nJ in zip(axes[0], dofs):
        ax.pcolormesh(np.arange(0.5, max_length + 1), np.arange(0.5, max_chains + 1), grids[nJ],
                      cmap=cmap, vmin=-0.5, vmax=len(cands) - 0.5)
        ax.set_title(f"{nJ}-DOF joints")
        ax.set_xlabel("chain length (bodies)")
        ax.set_ylabel("number of chains")
    fig.legend(handles=[Patch(color=colours[k], label=f"{f} ({cost.ACRONYMS[f]})") for k, f in enumerate(cands)],
               loc="lower center", ncol=len(cands))
    fig.suptitle(f"cheapest form by the flop formulas (4.1)-(4.7), ITR with K = {K:g} (cf. fig. 4.8)")
    fig.tight_layout(rect=(0, 0.08, 1, 0.95))
    fig.savefig(path)
    plt.close(fig)
    return grids


def _measured(path, spec) -> str:
    return select(path, measure=True).recommended


FORM_CHOOSERS["measured"] = _measured      # load(form="auto", select_by="measured")
