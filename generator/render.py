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


def _c_args(kernel: ir.Kernel) -> str:
    args = []
    for inp in kernel.inputs:
        args.append(f"double in_{inp.name}" if inp.size is None else f"const double* in_{inp.name}")
    args += [f"double* out_{o.name}" for o in kernel.outputs]
    return ", ".join(args)


def _decls(names, per_line=16):
    names = list(names)
    return [f"cdef double {', '.join(names[k:k + per_line])}" for k in range(0, len(names), per_line)]


def kernel_context(kernel: ir.Kernel, printer_cls) -> dict:
    arrays = {i.name: f"in_{i.name}" for i in kernel.inputs} | {o.name: f"out_{o.name}" for o in kernel.outputs}
    pr = printer_cls(arrays)
    lines = []
    for st in kernel.body:
        if isinstance(st, ir.Assign):
            lines.append(f"{st.target} = {pr.doprint(st.value)}")
        elif isinstance(st, ir.Store):
            lines.append(f"out_{st.array}[{st.index}] = {pr.doprint(st.value)}")
        else:
            raise TypeError(f"unknown statement {type(st).__name__}")
    return {"cname": f"_k_{kernel.name}", "c_args": _c_args(kernel), "decls": _decls(kernel.temps),
            "lines": lines}


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
    }


TEMPLATES = {"cython": "cython_module.pyx.j2"}
HELPERS = {"cython": ("dynamica_helpers.pxd",)}


def render(mod: ir.ModuleIR, backend: str = "cython") -> SourceBundle:
    if backend not in TEMPLATES:
        raise ValueError(f"unknown backend {backend!r}; available: {', '.join(TEMPLATES)}")
    text = _env().get_template(TEMPLATES[backend]).render(**template_context(mod, PRINTERS[backend]))
    files = [(f"{mod.module_name}.pyx", text)]
    for h in HELPERS[backend]:
        files.append((h, resources.files("dynamica.runtime").joinpath(h).read_text()))
    return SourceBundle(module_name=mod.module_name, backend=backend, files=tuple(files),
                        signature=mod.signature)
