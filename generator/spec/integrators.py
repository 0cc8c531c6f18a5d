"""The integrators a model may name (`simulate.integrator`) and `simulate(method=...)` runs: one
`Integrator` record each, read by the loader (which names it accepts) and by
runtime/integrators/simulate.py (which runner runs it, with which options).

`kind` selects the runner of runtime/integrators/simulate.py `RUNNERS`, `options` configure it:

  "adams"     the compiled variable-order Adams PECE loop (runtime/native/adams_core.pyx)
  "stoermer"  the fixed-step 6th-order Stoermer-Cowell method (runtime/integrators/stoermer.py)
  "scipy"     scipy's method `options["method"]`, stepped one by one; `jacobian`: it uses a
              Jacobian (the generated one unless simulate(jacobian="numeric")); `one_step`: a
              one-step method, so a model with closed loops is projected onto the loops'
              constraints after each step (a multistep method's history would no longer match);
              `across`: a model's singular configurations are stepped over
              (runtime/integrators/singular.py: the implicit route, whose Newton iteration fails there)
  "ida"       SUNDIALS IDA on the constrained equations (runtime/integrators/ida.py)

A new integrator of an existing kind is one record here; a new kind is a runner in
simulate.py `RUNNERS` too. tests/test_registries.py checks that simulate runs every name.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Integrator:
    name: str
    kind: str                     # "adams", "stoermer", "scipy", "ida": simulate.py RUNNERS
    options: dict = field(default_factory=dict)
    doc: str = ""


#: integrator name -> its record, in the order the loader lists them
INTEGRATORS: dict = {}


def register(integrator: Integrator) -> Integrator:
    INTEGRATORS[integrator.name] = integrator
    return integrator


register(Integrator("adams", "adams", doc="compiled Adams-Bashforth-Moulton PECE, variable step and order 1-12"))
register(Integrator("stoermer6", "stoermer", doc="fixed-step 6th-order Stoermer-Cowell (the timing experiments)"))
register(Integrator("radau", "scipy", {"method": "Radau", "jacobian": True, "one_step": True, "across": True},
                    doc="scipy's Radau IIA (5th order, implicit)"))
register(Integrator("RK45", "scipy", {"method": "RK45", "jacobian": False, "one_step": True},
                    doc="scipy's Runge-Kutta 5(4)"))
register(Integrator("DOP853", "scipy", {"method": "DOP853", "jacobian": False, "one_step": True},
                    doc="scipy's Runge-Kutta 8(5,3)"))
register(Integrator("LSODA", "scipy", {"method": "LSODA", "jacobian": True, "one_step": False},
                    doc="scipy's LSODA (Adams/BDF switching)"))
register(Integrator("BDF", "scipy", {"method": "BDF", "jacobian": True, "one_step": False},
                    doc="scipy's variable-order BDF"))
register(Integrator("Radau", "scipy", {"method": "Radau", "jacobian": True, "one_step": True, "across": True},
                    doc="scipy's Radau IIA, by scipy's name"))
register(Integrator("ida", "ida", doc="SUNDIALS IDA on the constrained equations of a model with loops"))
