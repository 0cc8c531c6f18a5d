"""The model as plain data: ModelSpec and its parts, and what is computed from it at the
parameters' defaults (values, the physics warnings).

`load_model(path)` reads and validates a model file (generator/spec/loader.py: the YAML reader and
one method per section; joints.py and forces.py: the registries of joint shorthands and force
types) and returns frozen data (no sympy): expressions stay as the model's text (or numbers)
after being checked by the restricted parser, and every problem in the file is collected into
one `ModelError` naming the entry path and what was expected (docs/model_format.md).
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np

from dynamica.errors import Problem
from dynamica.generator.spec import integrators

if TYPE_CHECKING:
    from dynamica.generator.spec import expr as ex

# sympy and the expression parser (generator/spec/expr.py) are imported where they are used: a
# ModelSpec is plain data, and a model loaded from the cache (runtime/fastload.py) never needs them

IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
AXES = {"x": (1, 0, 0), "y": (0, 1, 0), "z": (0, 0, 1),
        "-x": (-1, 0, 0), "-y": (0, -1, 0), "-z": (0, 0, -1)}
INERTIA_KEYS = ("Ixx", "Iyy", "Izz", "Ixy", "Iyz", "Ixz")
#: integrators `simulate` accepts: the names of their records (generator/spec/integrators.py)
INTEGRATORS = tuple(integrators.INTEGRATORS)


class DynamicaWarning(UserWarning):
    """Physically dubious but allowed input (negative mass, indefinite inertia, ...)."""


# ---------------------------------------------------------------- plain data
@dataclass(frozen=True)
class Parameter:
    name: str
    value: float | tuple            # float, or tuple of floats for a vector parameter
    unit: str = ""
    description: str = ""

    @property
    def size(self) -> int:
        return len(self.value) if isinstance(self.value, tuple) else 1


@dataclass(frozen=True)
class Transform:
    """One elementary transform of a joint: `rotate`/`translate` along a unit axis by `q`
    (a coordinate) or `by` (an expression of t and parameters), a `screw` (translation s along
    the axis with the rotation 2 pi s / pitch about it), or a constant `offset`."""

    kind: str                       # "rotate" | "translate" | "screw" | "offset"
    vector: tuple                   # axis (3 expressions, normalised later) or the offset
    q: str | None = None
    by: object = None
    path: str = ""
    pitch: object = None            # screw: the translation per turn (an expression of parameters)


@dataclass(frozen=True)
class Body:
    name: str
    parent: str
    joint: tuple                    # of Transform
    mass: object
    com: tuple
    inertia: tuple                  # [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] about the com, body axes
    path: str = ""
    visual: tuple = ()              # of generator.visuals.Visual (drawing only)

    @property
    def coordinates(self) -> tuple:
        return tuple(tr.q for tr in self.joint if tr.q is not None)


@dataclass(frozen=True)
class Force:
    type: str
    fields: tuple                   # ((key, value), ...) with defaults filled in
    path: str = ""

    def __getitem__(self, key):
        return dict(self.fields)[key]


@dataclass(frozen=True)
class Shape:
    """A collision shape fixed in a body (`contact.shapes`, generator/spec/contact_sections.py):
    numbers only, in the body frame. `axes` is the rotation shape -> body (row-major; its columns
    are the shape's x, y, z axes in the body frame): a capsule's axis and a plane's normal are its
    z axis."""
    name: str
    kind: str                       # sphere | capsule | cylinder | box | plane
    body: str                       # a body or "ground"
    at: tuple = (0.0, 0.0, 0.0)     # the shape's centre (a plane: a point of it), body frame
    axes: tuple = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
    radius: float = 0.0             # sphere, capsule, cylinder
    length: float = 0.0             # capsule: distance between the centres of its end spheres; cylinder: its length
    half: tuple = (0.0, 0.0, 0.0)   # box: half edge lengths along the shape's axes
    path: str = ""

    def axis(self, k: int) -> tuple:
        """The shape's axis k (0: x, 1: y, 2: z) in the body frame."""
        return tuple(self.axes[3 * r + k] for r in range(3))

    @property
    def bounding_radius(self) -> float:
        """The radius of a sphere about `at` holding the shape (inf for a plane)."""
        if self.kind == "plane":
            return math.inf
        if self.kind == "box":
            return math.sqrt(sum(h * h for h in self.half))
        if self.kind == "cylinder":
            return math.hypot(self.radius, self.length / 2)
        return self.radius + self.length / 2


@dataclass(frozen=True)
class State:
    """An extra first-order state (`states:`): s' = der(t, q, q', s, inputs, parameters)."""
    name: str
    initial: object                 # expression of the parameters
    der: object                     # expression (forces' scope)
    unit: str = ""
    description: str = ""
    path: str = ""


@dataclass(frozen=True)
class Outputs:
    points: tuple = ()              # ((name, body, at), ...)
    angular: tuple = ()             # body names
    reactions: bool = False
    expressions: tuple = ()         # ((name, text), ...)
    forces: bool = False            # the value of every force element
    energy: bool = False            # kinetic, potential, total energy and non-conservative power


@dataclass(frozen=True)
class Simulate:
    t_end: float = 10.0
    output_step: float | None = None
    integrator: str = "adams"
    rtol: float = 1e-8
    atol: float = 1e-10
    form: str | None = None


@dataclass(frozen=True)
class Loop:
    """A joint that closes a kinematic loop between two bodies of the tree (generator/mechanics/loops.py)."""
    name: str
    type: str                       # a key of loops.LOOP_TYPES
    body_a: str                     # a body or "ground"
    point_a: tuple                  # 3 expressions, body_a's frame
    body_b: str
    point_b: tuple                  # 3 expressions, body_b's frame
    axis: tuple = ()                # 3 expressions (body_a's frame) where the type has an axis
    axis_b: tuple = ()              # 3 expressions (body_b's frame); default: axis
    length: object = None           # distance loops
    path: str = ""


@dataclass(frozen=True)
class ModelSpec:
    name: str
    file: str
    parameters: tuple               # of Parameter
    gravity: tuple                  # 3 expressions
    bodies: tuple                   # of Body, in file order
    initial: tuple                  # ((key, value), ...): key `q` or `der(q)`
    forces: tuple = ()
    outputs: Outputs = field(default_factory=Outputs)
    simulate: Simulate = field(default_factory=Simulate)
    description: str = ""
    loops: tuple = ()               # of Loop (closed kinematic loops)
    assembly_hold: tuple = ()       # coordinates and der(coordinates) held at their initial values
    stages: tuple = ()              # of stages.Stage (the cyclogram; empty: one dynamics stage)
    functions: tuple = ()           # of tables.TabulatedFunction
    states: tuple = ()              # of State
    inputs: tuple = ()              # names of the signals from outside
    shapes: tuple = ()              # of Shape (contact.shapes)
    #: contact.broad_phase: True, False or "auto" (docs/contact.md, generator/mechanics/broad_phase.py)
    broad_phase: object = "auto"
    ranges: tuple = ()              # ((coordinate, lower, upper), ...): warned about, no force
    #: ((name, body, (x, y, z), (roll, pitch, yaw)), ...): frames declared on bodies (model.frame)
    frames: tuple = ()
    #: ((column, unit, factor to SI), ...): the coordinates (and rates) whose initial values the file
    #: writes in other units than SI ("30 deg"), shown in those units by tables and plots
    display_units: tuple = ()
    #: ((input, value), ...): the value a simulation holds for an input it is not given
    input_defaults: tuple = ()

    @cached_property
    def coordinates(self) -> tuple:
        return tuple(c for b in self.bodies for c in b.coordinates)

    @cached_property
    def _base_scope(self) -> ex.Scope:
        from dynamica.generator.mechanics.tables import scope_functions
        from dynamica.generator.spec import expr as ex
        scalars = frozenset(p.name for p in self.parameters if p.size == 1 and not isinstance(p.value, tuple))
        vectors = {p.name: p.size for p in self.parameters if isinstance(p.value, tuple)}
        return ex.Scope(scalars=scalars, vectors=vectors, coordinates=frozenset(self.coordinates),
                        states=frozenset(s.name for s in self.states), inputs=frozenset(self.inputs),
                        functions=scope_functions(self.functions))

    def scope(self, **kw) -> ex.Scope:
        return self._base_scope.child(**kw)

    def defaults(self) -> dict:
        """Symbol -> default value, for every parameter slot."""
        from dynamica.generator.spec import expr as ex
        out = {}
        for p in self.parameters:
            if isinstance(p.value, tuple):
                for k, v in enumerate(p.value):
                    out[ex.param_symbol(p.name, k)] = v
            else:
                out[ex.param_symbol(p.name)] = p.value
        return out


# ---------------------------------------------------------------- loading
def load_model(source, **import_options) -> ModelSpec:
    """Read and validate a model file (a path) or an already-parsed mapping.

    Whatever the file holds, the result is a ModelSpec or one ModelError naming the file, the
    entries and what was expected (tests/test_fuzz_models.py). Other description
    formats (a URDF robot, generator/importers/urdf.py) take `import_options` (floating, mimic, limits).
    """
    from dynamica.generator.spec.loader import load
    return load(source, **import_options)


#: output keys the tool always writes (docs/api.md): an expression cannot take them
OUTPUT_KEYS_RESERVED = ("qdd",)

def scope_of(params, coords) -> ex.Scope:
    """The expression scope of a model: its parameters (scalars and vectors) and coordinates."""
    from dynamica.generator.spec import expr as ex
    return ex.Scope(scalars=frozenset(p.name for p in params if not isinstance(p.value, tuple)),
                    vectors={p.name: p.size for p in params if isinstance(p.value, tuple)},
                    coordinates=coords, values={p.name: p.value for p in params})


def evaluate(spec: ModelSpec, texts, extra=None) -> np.ndarray:
    """Evaluate parameter-only expressions at the parameters' default values."""
    return _evaluator(spec, extra)(texts)


def _evaluator(spec: ModelSpec, extra=None):
    """`evaluate` with the scope and substitutions prepared once (for per-body loops)."""
    import sympy as sp

    from dynamica.generator.spec import expr as ex
    scope = spec.scope(time_allowed=True)
    subs = spec.defaults()
    subs[ex.T] = 0.0
    if extra:
        subs.update(extra)
    subs = {k: sp.Float(v) for k, v in subs.items()}
    return lambda texts: np.array([float(ex.parse(t, scope).xreplace(subs)) for t in texts])


def default_value(spec: ModelSpec):
    """text -> its value at the parameters' defaults (None when it is not a number there)."""
    evaluate_ = _evaluator(spec)

    def value(text):
        try:
            return float(evaluate_([text])[0])
        except (TypeError, ValueError):
            return None
    return value


def _mass_properties(spec: ModelSpec, value=None):
    """(body, mass, eigenvalues of the inertia about the com scaled by its largest entry, their
    tolerance, principal moments) at the default parameters, for the bodies whose values are
    numbers there; `value(text)` as the loader's (default: evaluated here)."""
    value = value or default_value(spec)
    for b in spec.bodies:
        vals = [value(x) for x in (b.mass, *b.inertia)]
        if any(v is None for v in vals):
            continue
        m, ixx, iyy, izz, ixy, iyz, ixz = vals
        I = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
        scale = abs(I).max() or 1.0             # eigenvalues of I / scale: no overflow for huge entries
        ev = np.linalg.eigvalsh(I / scale)
        with np.errstate(over="ignore"):
            moments = (scale * ev).tolist()
        yield b, m, ev, 1e-12 * max(1.0 / scale, abs(ev).max()), moments


def negative_bodies(spec: ModelSpec) -> list:
    """Names of the bodies with a negative mass or an indefinite inertia (default parameters)."""
    return [b.name for b, m, ev, tol, _ in _mass_properties(spec) if m < 0 or ev.min() < -tol]


def physics_warnings(spec: ModelSpec, value):
    """Negative mass, indefinite inertia, triangle inequality: warnings naming the body.
    `value(text)` is an entry's value at the parameters' defaults (finite: checked at loading)."""
    for b, m, ev, tol, moments in _mass_properties(spec, value):
        if m < 0:
            warn_model(spec, f"body `{b.name}` has negative mass {m}")
        if ev.min() < -tol:
            warn_model(spec, f"inertia of body `{b.name}` is indefinite (principal moments {moments})")
        elif ev[2] > ev[0] + ev[1] + tol:
            warn_model(spec, f"inertia of body `{b.name}` violates the triangle inequality "
                             f"(principal moments {moments})")


def overflow_problem(spec: ModelSpec) -> Problem:
    """Generated code with a constant that is not a finite double: every entry's constants are
    finite (load_model checks them), so the equations multiply them beyond the double range.
    Names the entries with the most extreme constants."""
    import sympy as sp

    from dynamica.generator.mechanics.forces import LAW_LOCALS
    from dynamica.generator.spec import expr as ex
    scope = spec.scope(coordinates_allowed=True, local=LAW_LOCALS)
    extremes = []
    for path, text in _entries(spec):
        try:
            e = ex.parse(text, scope)
        except ex.ExpressionError:           # a body or coordinate name, not an expression
            continue
        sizes = [abs(math.log10(abs(float(n)))) for n in e.atoms(sp.Number) if n != 0]
        if sizes:
            extremes.append((max(sizes), path))
    extremes.sort(key=lambda x: -x[0])
    where = ", ".join(f"`{p}` (10^{s:.0f})" for s, p in extremes[:3])
    return Problem(extremes[0][1] if extremes else "",
                   "a constant of the generated equations of motion is not a finite double: the model's "
                   f"constants multiply up beyond the double range (1.8e308); the most extreme are at {where}. "
                   "Use other units, or parameters")


def _entries(spec: ModelSpec):
    """(path, expression or name) of every entry of a loaded model."""
    yield from ((f"gravity[{k}]", g) for k, g in enumerate(spec.gravity))
    for b in spec.bodies:
        yield f"{b.path}.mass", b.mass
        yield from ((f"{b.path}.com[{k}]", c) for k, c in enumerate(b.com))
        yield from ((f"{b.path}.inertia[{k}]", c) for k, c in enumerate(b.inertia))
        for tr in b.joint:
            if tr.by is not None:
                yield f"{tr.path}.by", tr.by
            if tr.pitch is not None:
                yield f"{tr.path}.pitch", tr.pitch
            yield from ((f"{tr.path}.axis[{k}]", c) for k, c in enumerate(tr.vector))
    yield from ((f"initial.{k}", v) for k, v in spec.initial)
    for st in spec.states:
        yield f"{st.path}.initial", st.initial
        yield f"{st.path}.der", st.der
    for f in spec.forces:
        for key, v in f.fields:
            if isinstance(v, Shape):         # numbers, checked finite by the loader
                continue
            items = enumerate(v) if isinstance(v, tuple) else [(None, v)]
            yield from ((f"{f.path}.{key}" + ("" if k is None else f"[{k}]"), x) for k, x in items)
    for name, _, at in spec.outputs.points:
        yield from ((f"outputs.points.{name}.at[{k}]", c) for k, c in enumerate(at))
    yield from ((f"outputs.expressions.{name}", e) for name, e in spec.outputs.expressions)


def warn_model(spec, message):
    """A warning attributed to the model file (not to a line of dynamica's code)."""
    warnings.warn_explicit(f"{spec.file}: {message}", DynamicaWarning, filename=spec.file, lineno=0,
                           module="dynamica.model")
