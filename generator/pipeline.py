"""The pipeline (docs/design.md): one pure function per stage, chained here.

    load_model(path) -> ModelSpec             plain data; ModelError lists every problem
    build_topology(spec) -> Topology          ints only: kappa, children, paths, subtrees
    derive_kinematics(spec, topo) -> Kinematics   sympy; per-body named intermediates
    form_equations(kin, form, mode) -> EquationsOfMotion   registries of equation forms (per mode)
    attach_constraints(eom, spec, topo) -> EquationsOfMotion   closed loops: their kernels
    attach_outputs(eom, spec, topo) -> EquationsOfMotion   the model's `outputs` as one more kernel
    attach_states(eom, spec) -> EquationsOfMotion   s' of the extra states (generator/mechanics/signals.py)
    lower(eom, spec) -> ModuleIR              DCE, sympy -> IR, CSE (value numbering)
    render(mod, backend) -> SourceBundle      printer + jinja2
    compile_bundle(bundle) -> Path            build.py: the only code that runs compilers
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from dynamica.errors import ModelError
from dynamica.generator.forms import check_form, form_equations
from dynamica.generator.ir.lower import lower
from dynamica.generator.ir.nodes import ModuleIR
from dynamica.generator.mechanics import broad_phase
from dynamica.generator.mechanics.constraints import attach_constraints
from dynamica.generator.mechanics.kinematics import derive_kinematics
from dynamica.generator.mechanics.outputs import attach_outputs, wanted
from dynamica.generator.mechanics.signals import attach_states
from dynamica.generator.mechanics.topology import build_topology
from dynamica.generator.render import render
from dynamica.generator.render.printers import NonFiniteConstant
from dynamica.generator.spec.model import load_model, overflow_problem

log = logging.getLogger("dynamica")


@dataclass
class Generated:
    """Every intermediate of one generation (Devito's `IRs`), for tests and curious users."""
    spec: object
    topology: object
    kinematics: object
    equations: object
    module_ir: ModuleIR
    bundle: object
    timings: dict


def generate(model, form: str = "composite", backend: str = "c", progress=None,
             mode: str = "symbolic") -> Generated:
    """Run the pipeline up to source text. `progress(stage, seconds)` is called per stage.

    mode="symbolic" unrolls the whole form; mode="numeric" (forms/numeric.py) generates only the
    joint kinematics, inertias and forces and runs the form's recursion as hand-written loops.
    """
    return _guarded(model, form, backend, progress, mode, None)


def generate_derivatives(model, backend: str = "c", progress=None, variant: str = "unrolled") -> Generated:
    """The derivatives module of a model (generator/kinds/derivatives.py: the residual r = M x - Q,
    its Jacobian by q and q' and M), whatever form its main module has; `variant`: a name of
    generator/kinds/derivatives.py VARIANTS ("unrolled", "tape", "recursive", "recursive_loops", "numeric")."""
    from dynamica.generator.kinds.derivatives import VARIANTS, derivative_equations
    if variant in VARIANTS and backend not in VARIANTS[variant].backends:
        raise ValueError(f"the derivatives variant {variant!r} has no {backend!r} backend; it has "
                         f"{', '.join(VARIANTS[variant].backends)}")
    return _guarded(model, "derivatives", backend, progress, "symbolic",
                    lambda kin: derivative_equations(kin, variant))


def _guarded(model, form, backend, progress, mode, equations) -> Generated:
    try:
        return _generate(model, form, backend, progress, mode, equations)
    except NonFiniteConstant:
        # each entry's constants are finite (load_model); their products in the equations are not
        spec = model if hasattr(model, "bodies") else load_model(model)
        raise ModelError(spec.file, [overflow_problem(spec)]) from None


def _generate(model, form, backend, progress, mode, equations=None) -> Generated:
    timings = {}

    def stage(name, fn, *args):
        t0 = time.perf_counter()
        out = fn(*args)
        timings[name] = time.perf_counter() - t0
        log.info("%s: %.3f s", name, timings[name])
        if progress is not None:
            progress(name, timings[name])
        return out

    if equations is None:
        form = check_form(form, mode)
    spec = model if hasattr(model, "bodies") else stage("load", load_model, model)
    topo = stage("topology", build_topology, spec)
    if broad_phase.used(spec) and (equations is not None or (
            spec.broad_phase == "auto" and not broad_phase.takes(form, backend, mode, spec))):
        import dataclasses  # this module keeps the pairs in its equations
        spec = dataclasses.replace(spec, broad_phase=broad_phase.kept(spec.broad_phase))
    kin = stage("kinematics", derive_kinematics, spec, topo)
    if equations is None:
        eom = stage("equations", form_equations, kin, form, mode)
        if spec.loops:
            eom = stage("constraints", attach_constraints, eom, spec, topo)
    else:
        eom = stage("equations", equations, kin)
    if equations is None and (wanted(spec) or eom.kind == "hamiltonian"):
        eom = stage("outputs", attach_outputs, eom, spec, topo)
    if equations is None and broad_phase.used(spec):
        eom = stage("broad phase", broad_phase.attach_broad_phase, eom, spec, topo, backend)
    if spec.states and eom.kind != "derivatives":        # (which has its own kernels of the states)
        eom = stage("states", attach_states, eom, spec)
    mod = stage("lower", lower, eom, spec)
    bundle = stage("render", render, mod, backend)
    return Generated(spec, topo, kin, eom, mod, bundle, timings)
