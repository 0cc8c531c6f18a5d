"""Module kinds (generator/ir/kinds.py): the records of the kinds the equation forms make
(lagrangian, numeric, hamiltonian, iterative: declared here from their parts in forms and render)
and the kinds beside the equations of motion, each declared in its own file: the derivatives
module (residual and Jacobian, by the tape or by recursive derivatives of inverse dynamics),
inverse dynamics and the frames of one body. Importing this package registers every kind.

May import: the rest of dynamica.generator. Never the runtime.
"""

from dynamica.generator.forms import hamiltonian_kernels, lagrangian_kernels
from dynamica.generator.ir.kinds import ModuleKind, register_kind
from dynamica.generator.render import c, fortran, module

register_kind(ModuleKind(
    "lagrangian", lagrangian_kernels, module.lagrangian_entries,
    {"c": c.lagrangian_entries, "fortran": fortran.lagrangian_entries},
    description="q'' and M of a Lagrangian form"))
register_kind(ModuleKind(
    "numeric", lambda eom: [], module.lagrangian_entries, {"c": c.numeric_entries},
    preambles={"c": c.numeric_preamble},
    description="a numeric-mode form: its recursion as loops over the generated joint kernels"))
register_kind(ModuleKind(
    "hamiltonian", hamiltonian_kernels, module.hamiltonian_entries,
    {"c": c.hamiltonian_entries, "fortran": fortran.hamiltonian_entries},
    description="q' and p' of a Hamiltonian form, the momenta and M"))
register_kind(ModuleKind(
    "iterative", lagrangian_kernels, module.iterative_entries, {"c": c.iterative_entries},
    preambles={"c": c.iterative_preamble}, python_code="itr_controls.py",
    description="q'' of the iterative forms; the solver's controls in Python at import"))

from dynamica.generator.kinds import derivatives, frames, inverse  # noqa: E402,F401  (each registers its kind)
