"""Regular body inertias for the forms that invert them, at the parameters actually used.

lagrange1 applies M_i^-1 of every body in (2.24) and hamilton-lagrange1 in (1.64); M_i is
invertible iff m_i != 0 and Theta_c (about the centre of mass) is regular (the Schur complement
of m_i E in M_i is Theta_c). A literal zero is caught when the form is generated; a parameter's
value is caught here: at load (the defaults) and on every parameter override
(CompiledModel._params), else the module returns NaN q'' without a word.

The numbers are computed once per distinct value of the parameters the inertias depend on
(a dict keyed by their bytes), so repeated calls with the same overrides cost a lookup; the
bodies whose mass and inertia are numbers are checked once, when the checker is built.
"""

from __future__ import annotations

import numpy as np

from dynamica.errors import ModelError, Problem


def inverts_body_inertias(form: str) -> bool:
    """Whether `form` applies M_i^-1 of every body: registered with the form
    (`@register(..., inverts_body_inertias=(equation, alternatives))`, generator/forms/)."""
    from dynamica.generator.forms import FORM_INFO
    info = FORM_INFO.get(form)
    return bool(info is not None and info.inverts_body_inertias)

#: smallest |eigenvalue| of Theta_c <= RTOL * largest: singular (the module's M_i^-1 is not finite)
RTOL = 1e-12


def singular(m, theta) -> bool:
    """True when M_i = [[m E, -h~], [h~, Theta_O]] is not invertible: m = 0 or Theta_c singular."""
    theta = np.asarray(theta, dtype=float)
    if not (np.isfinite(m) and np.all(np.isfinite(theta))):
        return False                        # not a question of regularity (a NaN parameter says itself)
    w = np.abs(np.linalg.eigvalsh(theta))
    return m == 0 or w.max() == 0 or w.min() <= RTOL * w.max()


def _tensor(entries) -> np.ndarray:
    """Theta_c from [Ixx, Iyy, Izz, Ixy, Iyz, Ixz] (docs/model_format.md, "Inertia")."""
    ixx, iyy, izz, ixy, iyz, ixz = map(float, entries)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


class BodyInertiaCheck:
    """M_i invertible for every body of `spec` at given parameter values (the module docstring)."""

    def __init__(self, spec, form: str):
        # imported here: the module's constants are read without sympy (a cached model, runtime/fastload.py)
        import sympy as sp

        from dynamica.generator.spec import expr as ex
        self.spec, self.form = spec, form
        from dynamica.generator.forms import FORM_INFO
        info = FORM_INFO[form]
        self.acronym = info.acronym
        self.equation, self.alternatives = info.inverts_body_inertias
        scope = spec.scope(time_allowed=True)
        fixed, varying = [], []              # bodies of numbers; (body, m, Theta_c) with parameters
        parsed = {}                          # text -> expression: bodies repeat their formulas

        def parse(text):
            if text not in parsed:
                parsed[text] = ex.parse(text, scope).xreplace({ex.T: 0})
            return parsed[text]
        for body in spec.bodies:
            m, th = parse(body.mass), [parse(x) for x in body.inertia]          # Ixx Iyy Izz Ixy Iyz Ixz
            if m.is_number and all(x.is_number for x in th):
                if singular(float(m), _tensor([float(x) for x in th])):
                    fixed.append(body)
            elif m == 0 or sp.expand(sp.Matrix([[th[0], th[3], th[5]], [th[3], th[1], th[4]],
                                                [th[5], th[4], th[2]]]).det()) == 0:
                fixed.append(body)          # singular whatever the parameters: a literal zero mass or det Theta_c = 0
            else:
                varying.append((body, m, th))
        self._fixed = tuple(fixed)
        self._bodies = tuple(b for b, _, _ in varying)
        syms = set().union(*[sp.Matrix([m, *th]).free_symbols for _, m, th in varying]) if varying else set()
        #: the parameter symbols the inertias depend on, in a fixed order
        self.symbols = tuple(sorted(syms, key=lambda s: s.name))
        # scalars and the math module: no array printer, no numpy namespace to import at load
        self._fn = sp.lambdify([self.symbols], [[m, *th] for _, m, th in varying], "math") if varying else None
        self._known = {}

    def bad_bodies(self, values) -> tuple:
        """Names of the bodies whose M_i is singular at `values` (of `symbols`, in their order)."""
        values = np.asarray(values, dtype=float)
        key = values.tobytes()                  # the exact doubles: a cheap key of the distinct vectors
        bad = self._known.get(key)
        if bad is None:
            bad = [b.name for b in self._fixed]
            if self._fn is not None:
                try:
                    numbers = self._fn(values.tolist())
                except (ArithmeticError, ValueError):   # e.g. 1/0 of a parameter: not this check's to say
                    numbers = ()
                for body, (m, *th) in zip(self._bodies, numbers):
                    if singular(float(m), _tensor(th)):
                        bad.append(body.name)
            bad = self._known[key] = tuple(bad)
        return bad

    def check(self, values, given=None):
        """ModelError naming the file, the bodies and the forms that take them, when a M_i is
        singular; `given`: the overrides (name -> value) the values come from, for the message."""
        bad = self.bad_bodies(values)
        if not bad:
            return
        by_name = {b.name: b for b in self.spec.bodies}
        at = (f"with the parameters given ({', '.join(f'{k} = {v}' for k, v in given.items())})" if given
              else "at the default parameters")
        raise ModelError(self.spec.file, [Problem(
            f"{by_name[b].path}.inertia",
            f"the form `{self.form}` ({self.acronym}) needs M_i^-1 of every body "
            f"{self.equation}: body `{b}` has zero mass or a singular inertia about its centre of mass {at}; "
            f"use {self.alternatives}") for b in bad])

    def check_defaults(self):
        """The check at the model's default parameter values: a DynamicaWarning naming the bodies
        when they are singular there through a parameter's value (the model may be meant for
        other values: every evaluation at singular values raises, `check`); a ModelError when
        their mass and inertia are numbers (no parameter can make them regular)."""
        d = self.spec.defaults()
        try:
            self.check([d[s] for s in self.symbols])
        except ModelError as exc:
            if not self.symbols or self._fixed:     # no parameter value makes these bodies regular
                raise
            import warnings

            from dynamica.generator.spec.model import DynamicaWarning
            warnings.warn(DynamicaWarning(f"{exc} (evaluating at these values raises this error; give other "
                                          "values of the parameters)"), stacklevel=3)
