"""A model's equations as a standalone C99 library (docs/export.md): no Python headers, no global
mutable state.

The library is made of the same generated kernels as the Python module (the C backend's
`<module>_kernels.h`, generator/render/c.py) and the same layers (the closed loops' solve,
generator/render/constrained.py); `<name>.c` wraps their entry points as the public functions
of `<name>.h` (templates/export/library.*.j2), which return 0 when every number they wrote is
finite. The iterative forms keep their inverse estimate in a caller-owned workspace
(`<name>_workspace_new`) instead of the module's static one.

Inverse dynamics (`<name>_inverse_dynamics`, `<name>_gravity_forces`) come from the kernels of the
module kind "inverse" (generator/kinds/inverse.py), the same the Python module's `inverse_dynamics`
compiles, in a translation unit of their own (`<name>_inverse.c` over `<name>_inverse_kernels.h`:
the two kernel headers use the same static names).

Files: <name>.h, <name>.c, <name>_kernels.h, <name>_inverse.c, <name>_inverse_kernels.h, the fixed
headers they include, dynamica_dopri.h (the embedded Dormand-Prince 5(4) integrator of main.c; the
Co-Simulation FMU integrates with dynamica's Adams core instead, fmu.py), main.c, Makefile,
CMakeLists.txt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np

from dynamica.runtime.export import ExportError
from dynamica.version import __version__

#: module kinds (ModuleIR.entries) that export
KINDS = ("lagrangian", "numeric", "iterative")
#: the fixed header of the embedded integrator (this package)
DOPRI = "dynamica_dopri.h"
#: the C standard and warnings the library is written for (tests/test_export_c.py)
CFLAGS = "-std=c99 -O2 -Wall -Wextra -pedantic"


@dataclass
class Library:
    """Everything the exporters need to know of one model's library."""
    name: str                 # C prefix (the model's name as an identifier)
    model: object             # the CompiledModel
    mod: object               # its ModuleIR
    files: dict               # file name -> text
    p_names: tuple            # a name per slot of p
    p_default: np.ndarray
    y0: np.ndarray
    output_names: tuple       # a name per entry of the outputs (empty: no outputs function)
    iterative: bool
    loops: bool

    @property
    def n(self) -> int:
        return self.model.n

    @property
    def ny(self) -> int:
        return self.model.state_size


def c_identifier(name: str) -> str:
    """The C prefix of a model's functions: its name with every other character than letters,
    digits and _ replaced by _, a leading digit prefixed, the kernels' own prefix `dyn` avoided."""
    ident = re.sub(r"\W", "_", name, flags=re.ASCII)
    if not re.match(r"[A-Za-z_]", ident) or ident == "dyn" or ident.startswith("dyn_"):
        ident = f"model_{ident}"
    return ident


def _c_double(x: float) -> str:
    x = float(x)
    if np.isnan(x):
        return "NAN"
    if np.isinf(x):
        return "HUGE_VAL" if x > 0 else "-HUGE_VAL"
    return repr(x)


def _c_str(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def load_model(model, form=None, backend="c"):
    """A CompiledModel from a file name (loaded with `form` and `backend`) or as given."""
    from dynamica.runtime.compiled import CompiledModel
    if isinstance(model, CompiledModel):
        if form is not None and form != model.form:
            raise ExportError(f"the model was loaded with form {model.form!r}; form={form!r} needs "
                              f"dynamica.load(path, form={form!r}) or the file name")
        return model
    if not isinstance(model, (str, Path)):
        raise ExportError(f"expected a model file name or a model from dynamica.load, not {type(model).__name__}")
    from dynamica.generator.spec.model import load_model as read
    spec = read(model)
    if spec.stages:                      # before compiling anything
        raise ExportError(_STAGES.format(where=f"model {spec.name!r}"))
    from dynamica.runtime.api import load
    return load(model, form=form, backend=backend)


def parameter_names(model) -> tuple:
    """A name per slot of p: the parameters (`name` or `name[j]` for vectors), the loops'
    references, then the inputs `u`, their rates `rate(u)`, `t_segment` and the extra states."""
    out = []
    scalar = {name: sc for name, _, sc in model.param_layout}
    for name, size in model.module.PARAMETERS:
        if size == 1 and scalar.get(name, True):
            out.append(name)
        else:
            out += [f"{name}[{j}]" for j in range(size)]
    out += list(model.inputs) + [f"rate({u})" for u in model.inputs]
    if model.inputs:
        out.append("t_segment")
    out += list(model.states)
    if len(out) != len(model.module.PARAMETER_DEFAULTS):
        raise ExportError(f"internal: {len(out)} names for {len(model.module.PARAMETER_DEFAULTS)} slots of p")
    return tuple(out)


def output_names(model) -> tuple:
    """A name per entry of the flat outputs (`key`, `key[i]`, `key[i,j]`), if the module has them."""
    if not hasattr(model.module, "outputs"):
        return ()
    out = []
    for key, shape in model.output_layout:
        for idx in np.ndindex(*shape):
            out.append(key if not idx else f"{key}[{','.join(map(str, idx))}]")
    return tuple(out)


def initial_state(model) -> np.ndarray:
    """y0 = [q0, qd0, s0] of the model's `initial` section (assembled when it has loops)."""
    if model.loops:
        q0, qd0 = model.assemble()
    else:
        q0, qd0 = model.initial_state()
    return np.concatenate([q0, qd0, model.initial_states()])


_STAGES = ("{where} has stages (a cyclogram): each stage is a system of its own structure, which one C library "
           "or FMU does not hold; export a model file of one stage's structure instead")


def check_exportable(model, mod):
    where = f"model {model.name!r}"
    if model.spec.stages:
        raise ExportError(_STAGES.format(where=where))
    if mod.entries not in KINDS:
        raise ExportError(f"{where}: form {model.form!r} ({mod.entries} module) does not export; the exports take "
                          "a Lagrangian state [q, q'] (forms composite, direct, articulated, ltdl, iterative-m, ...)")
    if mod.entries == "iterative" and mod.constrained:
        raise ExportError(f"{where}: an iterative form with closed loops does not export; use form composite")


def _iterative_context(ctx: dict) -> dict:
    """The kernel header of an iterative module with the solver's state passed by the caller
    (`dyn_itr_ws`) instead of the module's static `dyn_itr_st`."""
    entries = ctx["entries"]
    name = {id(e): re.match(r"\w+ (dyn_\w+)\(", e["signature"]).group(1) for e in entries}
    ws = {name[id(e)] for e in entries if any("dyn_itr_st" in line for line in e["lines"])}
    while True:                                   # every entry that calls one of them needs it too
        more = {name[id(e)] for e in entries if any(re.search(rf"\b{w}\(", line) for line in e["lines"] for w in ws)}
        if more <= ws:
            break
        ws |= more
    out = []
    for e in entries:
        if name[id(e)] not in ws:
            out.append(e)
            continue
        lines = [line.replace("&dyn_itr_st", "dyn_itr_ws") for line in e["lines"]]
        for w in ws:
            lines = [re.sub(rf"\b{w}\(", f"{w}(dyn_itr_ws, ", line) for line in lines]
        sig = e["signature"].replace(f"{name[id(e)]}(", f"{name[id(e)]}(dyn_itr_state *dyn_itr_ws, ", 1)
        out.append({"signature": sig, "lines": lines})
    preamble = [line for line in ctx["preamble"] if line.startswith("#include")]
    return dict(ctx, entries=out, preamble=preamble), ws


def _symbols(mod, symbol) -> tuple:
    """({entry name: C function}, C lines of the layers) as the module file binds them;
    `symbol(entry)` is the backend's C name of an entry point."""
    from dynamica.generator.render.module import layered_entries
    ents, functions, _ = layered_entries(mod, symbol)
    return {e.name: e.symbol or symbol(e.entry or e.name) for e in ents}, functions


def _fortran_kernels(mod, name) -> tuple:
    """The Fortran backend's kernels (docs/fortran.md): ({file name: text}, C declarations, symbol)."""
    from dynamica.generator.render import BACKENDS
    from dynamica.generator.render.common import env
    b = BACKENDS["fortran"]
    files = {}
    for template, pattern, context, _language in b.templates:
        files[pattern.format(module=name)] = env().get_template(template).render(**context(mod))
    return files, list(b.declarations(mod)), lambda entry: b.entry_symbol(mod, entry)


def inverse_files(model, name: str, context: dict) -> dict:
    """`<name>_inverse_kernels.h` (the C backend's kernels of the module kind "inverse", as the
    Python module's `inverse_dynamics` compiles them) and `<name>_inverse.c` over it."""
    from dynamica.generator.ir.lower import lower
    from dynamica.generator.kinds.inverse import inverse_equations
    from dynamica.generator.mechanics.topology import build_topology
    from dynamica.generator.render import c as c_backend
    from dynamica.generator.render.common import env
    from dynamica.generator.render.module import metadata
    spec = model.spec
    inv = lower(inverse_equations(spec, build_topology(spec)), spec)
    own = metadata(inv, "c")
    if own["NP"] != model.module.NP or own["SLOTS"] != model.module.SLOTS:
        raise ExportError(f"model {model.name!r}: internal: the inverse-dynamics kernels lay out p differently "
                          f"({own['NP']} slots, {own['SLOTS']}) from the equations ({model.module.NP}, "
                          f"{model.module.SLOTS})")
    ctx = c_backend.header_context(inv)
    ctx["guard"] = f"DYNAMICA_EXPORT_{name.upper()}_INVERSE_KERNELS_H"
    return {f"{name}_inverse_kernels.h": env().get_template("kernels.h.j2").render(**ctx),
            f"{name}_inverse.c": env().get_template("export/inverse.c.j2").render(**context)}


def build_library(model, form=None, backend="c") -> Library:
    """The library's files for a model (file name or CompiledModel); backend "fortran": the
    kernels in Fortran (`<name>_f.f90`, gfortran), the rest in C."""
    from dynamica.generator.pipeline import generate
    from dynamica.generator.render import c as c_backend
    from dynamica.generator.render.common import env, helper_files
    model = load_model(model, form, backend)
    fortran = model.backend == "fortran"
    gen = generate(model.spec, form=model.form, backend=model.backend, mode=model.mode)
    mod = gen.module_ir
    check_exportable(model, mod)
    name = c_identifier(model.name)
    iterative = mod.entries == "iterative"
    ws = set()
    if fortran:
        kernel_files, declarations, symbol = _fortran_kernels(mod, name)
    else:
        ctx = c_backend.header_context(mod)
        if iterative:
            ctx, ws = _iterative_context(ctx)
        ctx["guard"] = f"DYNAMICA_EXPORT_{name.upper()}_KERNELS_H"
        kernel_files = {f"{name}_kernels.h": env().get_template("kernels.h.j2").render(**ctx)}
        declarations, symbol = [f'#include "{name}_kernels.h"'], (lambda entry: f"dyn_{entry}")
    symbols, functions = _symbols(mod, symbol)
    lib = Library(name=name, model=model, mod=mod, files={}, p_names=parameter_names(model),
                  p_default=model.param_vector(), y0=initial_state(model), output_names=output_names(model),
                  iterative=iterative, loops=bool(mod.constrained))
    helpers = ["dynamica_helpers.h"]
    if mod.constrained:
        helpers.append("dynamica_constraints.h")
    if iterative:
        helpers.append("dynamica_itr.h")
    if mod.entries == "numeric":
        helpers.append("numeric_core.h")
    if mod.constrained or mod.entries == "numeric":
        helpers.append("dynamica_tree_ldl.h")                # included by both
    if dict(mod.info).get("broad_phase"):
        helpers.append("dynamica_broad.h")                   # the contacts' broad phase (docs/contact.md)
    context = library_context(lib, symbols, functions, ws)
    context.update(declarations=declarations, fortran=sorted(f for f in kernel_files if f.endswith(".f90")))
    files = {f"{name}.h": env().get_template("export/library.h.j2").render(**context),
             f"{name}.c": env().get_template("export/library.c.j2").render(**context), **kernel_files,
             **inverse_files(model, name, context)}
    files.update(dict(helper_files(helpers)))
    files[DOPRI] = resources.files("dynamica.runtime.export").joinpath(DOPRI).read_text()
    files["main.c"] = env().get_template("export/main.c.j2").render(**context)
    files["Makefile"] = env().get_template("export/Makefile.j2").render(**context)
    files["CMakeLists.txt"] = env().get_template("export/CMakeLists.txt.j2").render(**context)
    lib.files = files
    return lib


#: public functions: (name, arguments, entry of the module, output array, its size (of n, ny, nout, ns))
PUBLIC = (
    ("rhs", "double t, const double *y, const double *p, double *ydot", "rhs", "ydot", "ny"),
    ("qdd", "double t, const double *q, const double *qd, const double *p, double *qdd", "qdd", "qdd", "n"),
    ("mass_matrix", "double t, const double *q, const double *p, double *M", "mass_matrix", "M", "nn"),
    ("outputs", "double t, const double *q, const double *qd, const double *p, double *out", "outputs", "out", "nout"),
    ("state_rates", "double t, const double *q, const double *qd, const double *p, double *sd", "states", "sd", "ns"),
)


def _publics(lib: Library, symbols: dict, ws: set) -> list:
    sizes = {"ny": lib.ny, "n": lib.n, "nn": lib.n * lib.n, "nout": len(lib.output_names),
             "ns": len(lib.model.states)}
    out = []
    for name, decl, entry, array, size in PUBLIC:
        if entry not in symbols or (name == "outputs" and not lib.output_names):
            continue
        args = ", ".join(a.split()[-1].lstrip("*") for a in decl.split(","))
        out.append({"name": name, "decl": decl, "args": args, "fn": symbols[entry], "ws": symbols[entry] in ws,
                    "out": array, "size": sizes[size]})
    return out


def library_context(lib: Library, symbols: dict, functions: list, ws: set) -> dict:
    model, mod = lib.model, lib.mod
    n, np_ = model.n, len(lib.p_default)
    units = {p.name: (p.unit or "", p.description or "") for p in model.spec.parameters}
    return {
        "version": __version__, "name": lib.name, "NAME": lib.name.upper(), "model_name": model.name,
        "form": model.form, "signature": mod.signature, "n": n, "ny": lib.ny, "np": np_,
        "nout": len(lib.output_names), "nstates": len(model.states), "ninputs": len(model.inputs),
        "slots": model.slots, "iterative": lib.iterative, "loops": lib.loops,
        "coordinates": [_c_str(c) for c in model.coordinates], "states": list(model.states),
        "inputs": list(model.inputs),
        "p_names": [_c_str(s) for s in lib.p_names], "p_default": [_c_double(x) for x in lib.p_default],
        "y0": [_c_double(x) for x in lib.y0], "output_names": [_c_str(s) for s in lib.output_names],
        "units": units, "sym": symbols, "functions": functions, "cflags": CFLAGS, "dopri": DOPRI,
        "nc": len(dict(mod.info).get("constraints", ())) if lib.loops else 0,
        "has_states_fn": "states" in symbols, "publics": _publics(lib, symbols, ws),
    }


def export_c(model, directory, form=None, backend="c") -> Path:
    """Write the standalone C library of a model into `directory` (created if missing); returns it.
    backend="fortran" (or a model loaded with it): the kernels from the Fortran backend."""
    lib = build_library(model, form, backend)
    out = Path(directory)
    if out.exists() and not out.is_dir():
        raise ExportError(f"{out} exists and is not a directory")
    out.mkdir(parents=True, exist_ok=True)
    for fname, text in lib.files.items():
        (out / fname).write_text(text)
    return out
