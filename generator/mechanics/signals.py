"""Extra first-order states and inputs from outside in the generated module.

The kernels of every form, mode and backend read one array `p` besides t, q, q' (and pm):
the parameters, then the slots of the signals (`SlotLayout`):

    p = [parameters (NP0) | u_0 .. u_{m-1}, du_0 .. du_{m-1}, t_k | s_0 .. s_{k-1}]

An input u_j is held first order between updates: u_j(t) = p[u_j] + p[du_j] (t - p[t_k]) (a
controller's zero-order hold has du_j = 0; a signal given as data is linear between its
points). The extra states s live in y = [q, q', s] (or [q, pm, s]); the module's `rhs` copies
them into their slots and appends s' (the `states` kernel, (t, q, q', p) -> s') to ydot, so
`rhs(t, y, p, ydot)` stays the one entry point of the integrators, over the whole state
(render/signals.py). No form changes: a state or an input is one more runtime input of the
expressions, like a parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from dynamica.generator.ir import nodes as ir
from dynamica.generator.spec import expr as ex


@dataclass(frozen=True)
class SlotLayout:
    """Where the inputs and the extra states live in the p array."""
    parameters: int               # NP0: the model's parameter slots
    inputs: tuple                 # names
    states: tuple                 # names

    @property
    def input_values(self) -> int:
        return self.parameters

    @property
    def input_rates(self) -> int:
        return self.parameters + len(self.inputs)

    @property
    def segment_start(self) -> int:
        """The slot of t_k, the time the inputs' values refer to."""
        return self.parameters + 2 * len(self.inputs)

    @property
    def state_values(self) -> int:
        return self.segment_start + (1 if self.inputs else 0)

    @property
    def size(self) -> int:
        return self.state_values + len(self.states)

    def metadata(self) -> dict:
        """The module's SLOTS constant (docs/api.md): offsets of each block in p."""
        return {"inputs": self.input_values, "input_rates": self.input_rates, "segment_start": self.segment_start,
                "states": self.state_values, "size": self.size}


def slot_layout(spec, n_parameters: int) -> SlotLayout:
    return SlotLayout(n_parameters, tuple(spec.inputs), tuple(s.name for s in spec.states))


def slot_symbols(layout: SlotLayout) -> dict:
    """sympy symbol -> IR expression of every input and state (lower.parameter_layout)."""
    out = {}
    t_k = ir.Arg("p", layout.segment_start)
    for j, name in enumerate(layout.inputs):
        rate = ir.Mul((ir.Arg("p", layout.input_rates + j), ir.Add((ir.Arg("t"), ir.Mul((ir.Num(-1.0), t_k))))))
        out[ex.input_symbol(name)] = ir.Add((ir.Arg("p", layout.input_values + j), rate))
    for j, name in enumerate(layout.states):
        out[ex.state_symbol(name)] = ir.Arg("p", layout.state_values + j)
    return out


def state_rates(spec) -> list:
    """s' of every extra state, as sympy expressions of t, q, q', the slots and the parameters."""
    scope = spec.scope(coordinates_allowed=True)
    return [ex.parse(s.der, scope) for s in spec.states]


def attach_states(eom, spec):
    """The form's equations with the `states` kernel (t, q, qd, p) -> sd (s' of the extra states)."""
    import dataclasses

    from dynamica.generator.forms import KernelSpec
    from dynamica.generator.ir.program import Program
    prog = Program()
    qs = tuple(ex.coord_symbol(c) for c in eom.coordinates)
    qds = tuple(ex.rate_symbol(c) for c in eom.coordinates)
    ks = KernelSpec("states", ("t", "q", "qd", "p"), (("sd", [sp.sympify(e) for e in state_rates(spec)]),),
                    program=prog, symbols=(("q", qs), ("qd", qds)))
    return dataclasses.replace(eom, extra_kernels=tuple(eom.extra_kernels) + (ks,))
