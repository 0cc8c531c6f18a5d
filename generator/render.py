"""Rendering: ModuleIR -> SourceBundle (printer + jinja2). No sympy past this point.

All text the template shows is prepared here as plain strings; the template only places it.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources

import jinja2

from dynamica import __version__
from dynamica.generator import ir
from dynamica.generator.printers import PRINTERS


@dataclass(frozen=True)
class SourceBundle:
    module_name: str
    backend: str
    files: tuple            # ((filename, text), ...); the first is the main source
    signature: str

    @property
    def main(self) -> tuple:
        return self.files[0]


def _env() -> jinja2.Environment:
    path = resources.files("dynamica.templates")
    return jinja2.Environment(loader=jinja2.FileSystemLoader(str(path)), undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


PREFIX = "dyn_k_"
#: statements per C function: bounds the C compiler's time and memory on large programs
CHUNK = 1500
#: workspaces up to this many doubles live on the stack, larger ones on the heap
STACK_DOUBLES = 16384


def _c_args(kernel: ir.Kernel) -> str:
    args = []
    for inp in kernel.inputs:
        args.append(f"double in_{inp.name}" if inp.size is None else f"const double *in_{inp.name}")
    args += [f"double *out_{o.name}" for o in kernel.outputs]
    return ", ".join(args)


def _decls(names, per_line=16):
    names = list(names)
    return [f"double {', '.join(names[k:k + per_line])};" for k in range(0, len(names), per_line)]


def _vars(node, acc):
    if isinstance(node, ir.Var):
        acc.add(node.name)
    for k in getattr(node, "terms", ()) or getattr(node, "factors", ()) or getattr(node, "args", ()):
        _vars(k, acc)
    if isinstance(node, ir.Pow):
        _vars(node.base, acc)
        _vars(node.exp, acc)
    return acc


def split_kernel(kernel: ir.Kernel, chunk: int = CHUNK):
    """Cut the straight-line body into functions of at most `chunk` statements.

    Temporaries used outside the part that defines them move to a workspace `dyn_w`.
    Returns (parts, shared) with parts a list of statement tuples and shared the workspace
    index of each shared temporary.
    """
    body = kernel.body
    parts = [body[k:k + chunk] for k in range(0, len(body), chunk)] or [()]
    home = {}
    for ci, part in enumerate(parts):
        for st in part:
            if isinstance(st, ir.Assign):
                home[st.target] = ci
    shared = {}
    for ci, part in enumerate(parts):
        for st in part:
            for v in sorted(_vars(st.value, set()), key=lambda v: (home[v], v)):
                if home[v] != ci and v not in shared:
                    shared[v] = None
    order = sorted(shared, key=lambda v: (home[v], [st.target for st in parts[home[v]]
                                                    if isinstance(st, ir.Assign)].index(v)))
    return parts, {v: k for k, v in enumerate(order)}


def kernel_context(kernel: ir.Kernel, printer_cls) -> dict:
    arrays = {i.name: f"in_{i.name}" for i in kernel.inputs} | {o.name: f"out_{o.name}" for o in kernel.outputs}
    parts, shared = split_kernel(kernel, CHUNK)
    pr = printer_cls(arrays, {v: f"dyn_w[{k}]" for v, k in shared.items()})
    cname = f"{PREFIX}{kernel.name}"
    out_parts = []
    for ci, part in enumerate(parts):
        lines, local = [], []
        for st in part:
            if isinstance(st, ir.Assign):
                target = pr.var(st.target)
                if st.target not in shared:
                    local.append(st.target)
                lines.append(f"{target} = {pr.doprint(st.value)};")
            elif isinstance(st, ir.Store):
                lines.append(f"out_{st.array}[{st.index}] = {pr.doprint(st.value)};")
            else:
                raise TypeError(f"unknown statement {type(st).__name__}")
        out_parts.append({"name": f"{cname}_part{ci}", "decls": _decls(local), "lines": lines})
    call_args = ", ".join([f"in_{i.name}" for i in kernel.inputs] + [f"out_{o.name}" for o in kernel.outputs])
    nw = len(shared)
    if nw == 0:
        driver = ["double *dyn_w = NULL;"]
    elif nw <= STACK_DOUBLES:
        driver = [f"double dyn_w[{nw}];"]
    else:
        driver = [f"double *dyn_w = (double *)malloc({nw} * sizeof(double));",
                  "if (dyn_w == NULL) {"]
        driver += [f"    for (int k = 0; k < {o.size}; ++k) out_{o.name}[k] = NAN;" for o in kernel.outputs]
        driver += ["    return;", "}"]
    driver += [f"{p['name']}({call_args}, dyn_w);" for p in out_parts]
    if nw > STACK_DOUBLES:
        driver.append("free(dyn_w);")
    return {"cname": cname, "c_args": _c_args(kernel), "parts": out_parts, "driver": driver}


def rhs_lines(mod: ir.ModuleIR) -> list:
    """The C entry point of a Lagrangian module: y = [q, qd] -> [qd, qdd]."""
    n = len(mod.coordinates)
    return [f"memcpy(ydot, y + {n}, {n} * sizeof(double));",
            f"{PREFIX}qdd(t, y, y + {n}, p, ydot + {n});"]


def template_context(mod: ir.ModuleIR, printer_cls) -> dict:
    n = len(mod.coordinates)
    return {
        "version": __version__,
        "model_name": mod.model_name,
        "form": mod.form,
        "signature": mod.signature,
        "model_name_literal": repr(mod.model_name),
        "form_literal": repr(mod.form),
        "kind_literal": repr(mod.kind),
        "signature_literal": repr(mod.signature),
        "version_literal": repr(__version__),
        "coordinates_literal": repr(tuple(mod.coordinates)),
        "parameters_literal": repr(tuple(mod.parameters)),
        "defaults_literal": repr(tuple(float(x) for x in mod.parameter_defaults)),
        "op_counts_literal": repr({k.name: k.op_count() for k in mod.kernels}),
        "n": n,
        "np": len(mod.parameter_defaults),
        "kernels": [kernel_context(k, printer_cls) for k in mod.kernels],
        "prefix": PREFIX,
        "rhs_lines": rhs_lines(mod),
        "kernels_header": f"{mod.module_name}_kernels.h",
        "guard": f"DYNAMICA_{mod.module_name.upper()}_KERNELS_H",
    }


#: backend -> ((template, output file name pattern), ...); the first output is the main source
TEMPLATES = {"cython": (("cython_module.pyx.j2", "{module}.pyx"), ("kernels.h.j2", "{module}_kernels.h"))}
HELPERS = {"cython": ("dynamica_helpers.pxd", "dynamica_helpers.h")}


def render(mod: ir.ModuleIR, backend: str = "cython") -> SourceBundle:
    if backend not in TEMPLATES:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(TEMPLATES)}")
    ctx = template_context(mod, PRINTERS[backend])
    env = _env()
    files = [(pattern.format(module=mod.module_name), env.get_template(tpl).render(**ctx))
             for tpl, pattern in TEMPLATES[backend]]
    for h in HELPERS[backend]:
        files.append((h, resources.files("dynamica.runtime").joinpath(h).read_text()))
    return SourceBundle(module_name=mod.module_name, backend=backend, files=tuple(files),
                        signature=mod.signature)
