"""Registry of equation forms (docs/design.md, "Equations: forms and modes").

Each form is a function `form(kin) -> EquationsOfMotion`, registered with `@register(name,
*acronyms, cost=..., pivots_of_m=..., inverts_body_inertias=...)` in a module of this package
(its `FormInfo`: the flop formula, how its solve meets M's pivots, whether it inverts the body
inertias); every module here is imported on first use, so a new form is a new file. Aliases are
the dissertation's acronyms.

What a module computes is a set of kernels (straight-line functions of named inputs) fixed
by the form's `kind`:

  kind "lagrangian" (state y = [q, qd]):
    dynamics (t, q, qd, p) -> qdd [, M]     M joins when `mass_in_dynamics` (ITR-M: no
                                            kernel of its own for M; its iterative entry
                                            points take M from `itr_terms`)
    mass     (t, q, p)     -> M             otherwise; CBM and DRT compute M on the way to
                                            qdd too, but an RHS that also writes all N^2
                                            entries of M costs more than a second kernel
                                            (a 500-body star's CBM RHS: 2.5x slower)
  kind "derivatives" (generator/kinds/derivatives.py): the residual r = M x - Q, its Jacobian by
    q and qd (a tangent kernel) and M; built apart from the model's module, on demand
  kind "hamiltonian" (state y = [q, pm], pm the Poisson momenta (1.49)):
    hamilton (t, q, pm, p) -> qd, pmd       the state derivative; qd symbols are aliased
                                            to the form's solution for them
    momenta  (t, q, qd, p) -> pm            p = B^T M v (1.49)
    mass     (t, q, p)     -> M
A form may add kernels of its own (`extra_kernels`), e.g. the residual of the iterative
solver; the renderer's entry points for the module kind (`entries`) decide how they are called.

Generation modes (`MODES`): "symbolic" unrolls the whole form (`EQUATION_FORMS`); "numeric"
(forms/numeric.py, `NUMERIC_FORMS`) generates only the per-joint terms and runs the form's
recursion as the hand-written loops of templates/native/numeric_core.h (module kind "numeric").

`form_equations` is a pure stage: the form works on its own copy of the kinematics' program.
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from dataclasses import dataclass, field

from dynamica.generator.ir.program import Program

EQUATION_FORMS: dict = {}
ALIASES: dict = {}
#: form -> FormInfo: everything known about a form besides its equations, registered with it
FORM_INFO: dict = {}
#: forms with a numeric-mode variant (forms/numeric.py): name -> form(kin)
NUMERIC_FORMS: dict = {}
#: generation mode -> its registry of forms
MODES = {"symbolic": EQUATION_FORMS, "numeric": NUMERIC_FORMS}


@dataclass
class EquationsOfMotion:
    """What a form produces: a program and the expressions of each module output."""

    form: str
    kind: str                        # "lagrangian" (state [q, qd]) or "hamiltonian" (state [q, pm])
    program: Program
    coordinates: tuple               # names, state order
    q: tuple                         # symbols
    qd: tuple                        # symbols
    outputs: dict = field(default_factory=dict)
    # lagrangian: "qdd": [n], "mass_matrix": [n*n row-major]
    # hamiltonian: "qd": [n], "pmd": [n], "momenta": [n], "mass_matrix": [n*n]
    mass_in_dynamics: bool = False   # lagrangian: M is an output of the dynamics kernel
    pm: tuple = ()                   # hamiltonian: momentum symbols (inputs of `hamilton`)
    aliases: dict = field(default_factory=dict)   # hamiltonian: qd symbol -> program symbol
    extra_kernels: tuple = ()        # KernelSpec of form-specific kernels
    info: dict = field(default_factory=dict)      # form-specific metadata exported by the module
    entries: str = ""                # module kind (generator/ir/kinds.py); default: `kind`
    mode: str = "symbolic"           # generation mode (MODES): part of the module's name
    tables: tuple = ()               # ((name, integers), ...): constant tables of the module (numeric mode)
    constrained: bool = False        # closed loops: the entry points solve with the loops' kernels


@dataclass(frozen=True)
class KernelSpec:
    """A kernel to lower: inputs by role (t, q, qd, pm, x, p), outputs (array, expressions)."""
    name: str
    inputs: tuple                    # e.g. ("t", "q", "qd", "p")
    outputs: tuple                   # ((array name, [expressions]), ...)
    aliases: tuple = ()              # ((input symbol, program symbol), ...) replaced in this kernel
    symbols: tuple = ()              # ((role, (symbols...)), ...) for roles beyond t/q/qd/pm/p
    program: object = None           # the program its expressions live in (default: the form's)
    skip_zero_stores: bool = False   # stores of the literal 0 are left out (the caller clears the array)
    hints: tuple = ()                # to the backend, e.g. "O1": compile with less optimization
    export: bool = False             # an entry point of the module with the kernel's own arguments
    tangent: tuple = ()              # input roles: the kernel also gets the Jacobian of its outputs
                                     # by these inputs, as output `J` (generator/ir/tangent.py)
    tangent_add: tuple = ()          # (output a, output J): with `tangent`, the Jacobian of a is
                                     # added into J and a dropped (tangent.tangent_added)
    tape: tuple = ()                 # input roles: the kernel also gets its statements' local
                                     # partials `P`, and the module the tables of tangent.tape_kernel


def lagrangian_kernels(eom: EquationsOfMotion) -> list:
    o = eom.outputs
    if eom.mass_in_dynamics:
        return [KernelSpec("dynamics", ("t", "q", "qd", "p"), (("qdd", o["qdd"]), ("M", o["mass_matrix"])))]
    return [KernelSpec("dynamics", ("t", "q", "qd", "p"), (("qdd", o["qdd"]),)),
            KernelSpec("mass", ("t", "q", "p"), (("M", o["mass_matrix"]),))]


def hamiltonian_kernels(eom: EquationsOfMotion) -> list:
    o = eom.outputs
    return [KernelSpec("hamilton", ("t", "q", "pm", "p"), (("qd", o["qd"]), ("pmd", o["pmd"])),
                       aliases=tuple(eom.aliases.items())),
            KernelSpec("momenta", ("t", "q", "qd", "p"), (("pm", o["momenta"]),)),
            KernelSpec("mass", ("t", "q", "p"), (("M", o["mass_matrix"]),))]


def kernel_specs(eom: EquationsOfMotion) -> tuple:
    """The kernels of a module (see the module docstring): those of its kind (generator/ir/kinds.py)
    and the form's own."""
    from dynamica.generator.ir.kinds import module_kind
    return tuple(module_kind(eom.entries or eom.kind).kernels(eom)) + tuple(eom.extra_kernels)


@dataclass(frozen=True)
class FormInfo:
    """What the rest of the tool reads about a form, given where the form is registered.

    acronyms: the dissertation's acronym first (printed in tables), then other aliases.
    cost: its flop formula (generator/cost/flops.py `Formula`), or `flops.NO_FORMULA`.
    pivots_of_m: its solve for q'' eliminates M's coordinates from the last to the first (the tree
      L^T D L of forms/parts/cholesky.py, the joint blocks of the sweeps, the iterative forms'
      direct solve), so it meets the pivots runtime/api.py `_reverse_pivots` computes.
    inverts_body_inertias: (the equation that applies M_i^-1 of every body, the forms that take a
      singular body inertia instead), or () (generator/mechanics/body_inertias.py).
    """

    name: str
    acronyms: tuple
    cost: object
    pivots_of_m: bool
    inverts_body_inertias: tuple = ()

    @property
    def acronym(self) -> str:
        return self.acronyms[0] if self.acronyms else ""


def register(name: str, *aliases: str, cost, pivots_of_m: bool, inverts_body_inertias: tuple = ()):
    """Register a form `fn(kin) -> EquationsOfMotion` under `name` and its acronyms, with its
    `FormInfo` (every field but `inverts_body_inertias` must be given: a new form states each)."""
    def deco(fn):
        EQUATION_FORMS[name] = fn
        FORM_INFO[name] = FormInfo(name, tuple(aliases), cost, pivots_of_m, tuple(inverts_body_inertias))
        for a in aliases:
            ALIASES[a] = name
        return fn
    return deco


def resolve(name: str) -> str:
    """Canonical form name for a name or an acronym (raises KeyError listing the choices)."""
    if name in EQUATION_FORMS:
        return name
    if name in ALIASES:
        return ALIASES[name]
    raise KeyError(f"unknown equation form {name!r}; available: "
                   + ", ".join(f"{k} ({a})" for a, k in ALIASES.items()))


def forms_of(mode: str) -> dict:
    """The registry of forms of a generation mode (ValueError listing the modes)."""
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; available: {', '.join(MODES)}")
    return MODES[mode]


def check_form(form: str, mode: str = "symbolic") -> str:
    """Canonical name of `form`, which `mode` must have (ValueError listing what it has)."""
    name = resolve(form)
    if name not in forms_of(mode):
        raise ValueError(f"form {form!r} is not available in {mode} mode; supported: "
                         f"{', '.join(forms_of(mode))} (use mode='symbolic' for the others)")
    return name


def form_equations(kin, form: str = "composite", mode: str = "symbolic") -> EquationsOfMotion:
    """The equations of `form` in `mode`; `kin` is left as it is (the form extends a copy of its program)."""
    name = check_form(form, mode)
    fn = forms_of(mode)[name]
    _check_armature(kin, name, mode)
    return fn(dataclasses.replace(kin, program=kin.program.fork()))


def _check_armature(kin, name, mode):
    """`armature` elements (MuJoCo's armature, a term on M's diagonal) are taken by the forms of
    forces.ARMATURE_FORMS (in numeric mode, every form it has: numeric_core.h adds them to M's
    diagonal); `rotation_armature` (a block a W^T W of M) by the same forms in symbolic mode, on a
    joint with rotations and no driven motion; anything else is refused naming the elements."""
    from dynamica.generator.mechanics.forces import ARMATURE_FORMS, ARMATURE_TYPES
    spec = getattr(kin, "spec", None)
    found = [f for f in getattr(spec, "forces", ()) if f.type in ARMATURE_TYPES]
    if not found:
        return
    from dynamica.errors import ModelError, Problem
    problems = [Problem(f.path, f"the form `{name}` ({mode} mode) does not take `{f.type}` elements; use one of "
                                f"{', '.join(ARMATURE_FORMS)}") for f in found if name not in ARMATURE_FORMS]
    for f in found:
        if f.type != "rotation_armature" or name not in ARMATURE_FORMS:
            continue
        jk = kin.joints[kin.topo.index(f["body"])]
        if mode != "symbolic":
            problems.append(Problem(f.path, f"`rotation_armature` is taken in symbolic mode only (the form `{name}` "
                                            f"in {mode} mode has armature on single coordinates only)"))
        elif not any(e != 0 for col in jk.A for e in col[3:]):
            problems.append(Problem(f.path, f"the joint of body `{f['body']}` has no rotation: use `armature` on "
                                            "its coordinates"))
        elif jk.driven or any(e != 0 for e in jk.vr_hat):
            problems.append(Problem(f.path, f"the joint of body `{f['body']}` has a driven motion: its relative "
                                            "angular velocity is not W q', which `rotation_armature` needs"))
    if problems:
        raise ModelError(spec.file, problems)


def _discover():
    """Import every form module of this folder once: each registers its forms (numeric.py registers
    numeric mode's variants); parts/ registers nothing."""
    for info in pkgutil.iter_modules(__path__):
        if not info.ispkg:
            importlib.import_module(f"{__name__}.{info.name}")


_discover()
