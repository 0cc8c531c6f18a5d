"""The compiled model: a generated module with named coordinates and parameters (docs/api.md)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from dynamica.generator.model import ModelSpec


class CompiledModel:
    """A compiled equation-of-motion module with named coordinates and parameters."""

    def __init__(self, module, spec: ModelSpec, path: Path | None = None):
        self.module = module
        self.spec = spec
        self.path = path
        self.name = module.MODEL_NAME
        self.form = module.FORM
        self.kind = module.KIND
        self.coordinates = tuple(module.COORDINATES)
        self.n = int(module.N)
        self._layout = tuple(module.PARAMETERS)                    # ((name, size), ...)
        self._defaults = np.array(module.PARAMETER_DEFAULTS, dtype=float)
        self.parameters = {}
        k = 0
        for name, size in self._layout:
            vals = self._defaults[k:k + size]
            p = next(p for p in spec.parameters if p.name == name)
            self.parameters[name] = tuple(float(v) for v in vals) if isinstance(p.value, tuple) else float(vals[0])
            k += size

    def __repr__(self):
        return f"<dynamica model {self.name!r} form={self.form!r} n={self.n}>"

    # -- parameters
    def param_vector(self, params=None) -> np.ndarray:
        """The flat parameter array of the module, defaults overridden by `params`."""
        p = self._defaults.copy()
        if not params:
            return p
        offsets, k = {}, 0
        for name, size in self._layout:
            offsets[name] = (k, size)
            k += size
        unknown = [k for k in params if k not in offsets]
        if unknown:
            raise KeyError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; "
                           f"the model has {', '.join(offsets) or 'none'}")
        for name, value in params.items():
            k, size = offsets[name]
            arr = np.atleast_1d(np.asarray(value, dtype=float))
            if arr.shape != (size,) or (size == 1 and np.ndim(value) != 0 and isinstance(self.parameters[name], float)):
                raise ValueError(f"parameter {name!r} expects {'a scalar' if size == 1 else f'{size} values'}, "
                                 f"got {value!r}")
            p[k:k + size] = arr
        return p

    # -- equations
    def _vec(self, x, name, size=None):
        a = np.ascontiguousarray(x, dtype=float).reshape(-1)
        n = self.n if size is None else size
        if a.shape[0] != n:
            raise ValueError(f"`{name}` has length {a.shape[0]}, expected {n} ({', '.join(self.coordinates)})")
        return a

    @property
    def hamiltonian(self) -> bool:
        """True when the state is [q, pm] with Poisson momenta pm (the Hamiltonian forms)."""
        return self.kind == "hamiltonian"

    def qdd(self, q, qd, t=0.0, params=None) -> np.ndarray:
        if self.hamiltonian:
            raise TypeError(f"form {self.form!r} is Hamiltonian (state [q, pm]): use rhs(t, y) with "
                            "y = to_state(q, qd), or a Lagrangian form for qdd")
        out = np.empty(self.n)
        self.module.qdd(float(t), self._vec(q, "q"), self._vec(qd, "qd"), self.param_vector(params), out)
        return out

    def mass_matrix(self, q, t=0.0, params=None) -> np.ndarray:
        out = np.empty(self.n * self.n)
        self.module.mass_matrix(float(t), self._vec(q, "q"), self.param_vector(params), out)
        return out.reshape(self.n, self.n)

    def rhs(self, t, y, params=None) -> np.ndarray:
        out = np.empty(2 * self.n)
        self.module.rhs(float(t), self._vec(y, "y", 2 * self.n), self.param_vector(params), out)
        return out

    def solver_stats(self) -> dict:
        """Counters of a form with an inner solver (the iterative one: iterations per call, fallbacks);
        empty for the direct forms."""
        return dict(self.module.itr_stats()) if hasattr(self.module, "itr_stats") else {}

    def reset_solver(self):
        """Forget state kept between calls (the iterative form's inverse estimate) and its counters."""
        if hasattr(self.module, "itr_reset"):
            self.module.itr_reset()

    def to_state(self, q, qd, t=0.0, params=None) -> np.ndarray:
        """The integrator state of (q, qd): [q, qd] (Lagrangian) or [q, pm] (Hamiltonian, (1.49))."""
        q, qd = self._vec(q, "q"), self._vec(qd, "qd")
        if not self.hamiltonian:
            return np.concatenate([q, qd])
        pm = np.empty(self.n)
        self.module.momenta(float(t), q, qd, self.param_vector(params), pm)
        return np.concatenate([q, pm])

    def from_state(self, y, t=0.0, params=None):
        """(q, qd) of an integrator state y (inverse of `to_state`)."""
        y = self._vec(y, "y", 2 * self.n)
        q = y[:self.n].copy()
        if not self.hamiltonian:
            return q, y[self.n:].copy()
        qd = np.empty(self.n)
        self.module.velocities(float(t), q, np.ascontiguousarray(y[self.n:]), self.param_vector(params), qd)
        return q, qd

    def rhs_function(self, params=None):
        """A fast `f(t, y)` closure for scipy's integrators (parameters bound once)."""
        p = self.param_vector(params)
        rhs, n2 = self.module.rhs, 2 * self.n

        def f(t, y):
            out = np.empty(n2)
            rhs(float(t), np.ascontiguousarray(y, dtype=float), p, out)
            return out
        return f

    @property
    def output_layout(self) -> tuple:
        """((key, shape), ...) of `outputs`, in order."""
        info = getattr(self.module, "INFO", {})
        return tuple(info.get("output_layout", (("qdd", (self.n,)),)))

    def _output_slices(self) -> tuple:
        """((key, shape, start, size), ...) of the flat array of the module's `outputs`, and its size."""
        if getattr(self, "_slices", None) is None:
            slices, k = [], 0
            for key, shape in self.output_layout:
                size = int(np.prod(shape))
                slices.append((key, tuple(shape), k, size))
                k += size
            self._slices = (tuple(slices), k)
        return self._slices

    def outputs(self, t, q, qd, params=None) -> dict:
        """What the model's `outputs` section asks for (docs/model_format.md), plus "qdd": name -> ndarray."""
        q, qd = self._vec(q, "q"), self._vec(qd, "qd")
        if not hasattr(self.module, "outputs"):            # no outputs section: qdd only
            return {"qdd": self.qdd(q, qd, t, params)}
        slices, total = self._output_slices()
        flat = np.empty(total)
        self.module.outputs(float(t), q, qd, self.param_vector(params), flat)
        return {key: flat[k] if shape == () else flat[k:k + size].reshape(shape).copy()
                for key, shape, k, size in slices}

    def output_series(self, t, Q, QD, params=None) -> dict:
        """`outputs` along a trajectory: name -> array with a leading time axis."""
        if len(t) == 0:
            return {}
        if not hasattr(self.module, "outputs"):
            rows = [self.outputs(tk, q, qd, params) for tk, q, qd in zip(t, Q, QD)]
            return {k: np.array([r[k] for r in rows]) for k in rows[0]}
        Q = np.ascontiguousarray(Q, dtype=float).reshape(len(t), self.n)
        QD = np.ascontiguousarray(QD, dtype=float).reshape(len(t), self.n)
        slices, total = self._output_slices()
        flat, p, kernel = np.empty((len(t), total)), self.param_vector(params), self.module.outputs
        for j in range(len(t)):                     # one C call per row, parameters packed once
            kernel(float(t[j]), Q[j], QD[j], p, flat[j])
        return {key: flat[:, k].copy() if shape == () else flat[:, k:k + size].reshape((len(t), *shape)).copy()
                for key, shape, k, size in slices}

    # -- initial state
    def _initial_terms(self):
        """((key, expression, its free symbols), ...) of the `initial` section, parsed once, and
        ((parameter symbol, index in the parameter vector), ...)."""
        if getattr(self, "_initial", None) is None:
            from dynamica.generator import expr as ex
            scope = self.spec.scope(time_allowed=True)
            terms = []
            for key, text in self.spec.initial:
                e = ex.parse(text, scope)
                terms.append((key, e, tuple(e.free_symbols)))
            slots, k = [], 0
            for name, size in self._layout:
                if size == 1 and isinstance(self.parameters[name], float):
                    slots.append((ex.param_symbol(name), k))
                else:
                    slots += [(ex.param_symbol(name, j), k + j) for j in range(size)]
                k += size
            self._initial = (tuple(terms), tuple(slots))
        return self._initial

    def initial_state(self, params=None):
        """(q0, qd0) from the model's `initial` section (default 0), at the given parameters
        (each expression evaluated as `generator.model.evaluate` does: sympy Floats substituted)."""
        q0, qd0 = np.zeros(self.n), np.zeros(self.n)
        if not self.spec.initial:
            return q0, qd0
        import sympy as sp
        from dynamica.generator import expr as ex
        terms, slots = self._initial_terms()
        p = self.param_vector(params)
        values = {ex.T: 0.0, **{sym: float(p[k]) for sym, k in slots}}
        for key, e, free in terms:
            val = float(e.xreplace({s: sp.Float(values[s]) if s in values else s for s in free}) if free else e)
            if key.startswith("der("):
                qd0[self.coordinates.index(key[4:-1])] = val
            else:
                q0[self.coordinates.index(key)] = val
        return q0, qd0


# ------------------------------------------------------------------ load
