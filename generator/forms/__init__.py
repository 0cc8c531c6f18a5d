"""Registry of equation forms (GUIDE.md, "The equation forms").

Each form is a function `form(kin) -> EquationsOfMotion`. Aliases are the seeds' acronyms.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from dynamica.generator.program import Program

EQUATION_FORMS: dict = {}
ALIASES: dict = {}


@dataclass
class EquationsOfMotion:
    """What a form produces: a program and the expressions of each module output."""

    form: str
    kind: str                        # "lagrangian" (state [q, qd]); later "hamiltonian"
    program: Program
    coordinates: tuple               # names, state order
    q: tuple                         # symbols
    qd: tuple                        # symbols
    outputs: dict = field(default_factory=dict)   # "qdd": [...], "mass_matrix": [... n*n row-major]


def register(name: str, *aliases: str):
    def deco(fn):
        EQUATION_FORMS[name] = fn
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


def form_equations(kin, form: str = "composite") -> EquationsOfMotion:
    return EQUATION_FORMS[resolve(form)](kin)


from dynamica.generator.forms import composite  # noqa: E402,F401  (registers itself)
