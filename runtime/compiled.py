"""The compiled model: a generated module with named coordinates and parameters (docs/api.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from dynamica.generator.spec.model import ModelSpec, evaluate


class CompiledModel:
    """A compiled equation-of-motion module with named coordinates and parameters."""

    def __init__(self, module, spec: ModelSpec, path: Path | None = None, initial_at_defaults=None,
                 inverts_body_inertias: bool | None = None, initial_depends=None):
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
        #: the declared parameters -> default values (floats, tuples for vectors)
        self.parameters = {}
        declared = {p.name: p for p in spec.parameters}
        #: every slot of the layout -> scalar or not (the loops' references are vectors of their own)
        self._scalar = {}
        k = 0
        for name, size in self._layout:
            vals = self._defaults[k:k + size]
            vector = name not in declared or isinstance(declared[name].value, tuple)   # loop references
            self._scalar[name] = not vector
            if name in declared:
                self.parameters[name] = tuple(float(v) for v in vals) if vector else float(vals[0])
            k += size
        self._references = None              # closed loops: set by `assemble` (runtime/assembly.py)
        #: (q0, qd0, s0) at the default parameters, as `initial_state` and `initial_states` give them
        #: (given by runtime/fastload.py, which loads a model without sympy)
        self._initial_at_defaults = initial_at_defaults
        # with `initial_depends` = (coordinates', states' initial values depend on a parameter or t),
        # those that do not are the values at the defaults at any parameters (no sympy to evaluate them)
        if initial_depends is not None and initial_at_defaults is not None and not initial_depends[0]:
            self._initial_constant = (initial_at_defaults[0].copy(), initial_at_defaults[1].copy())
        if initial_depends is not None and initial_at_defaults is not None and not initial_depends[1]:
            self._states_constant = initial_at_defaults[2].copy()
        self.backend, self.mode, self.cache = "c", "symbolic", None     # set by api.load
        self.stage_of: str | None = None     # a stage's structure: its model's name (api.load_spec)
        #: where the loops' references start in p: right after the declared parameters
        self._reference_slot = sum(size for name, size in self._layout if name in declared)
        #: extra first-order states and inputs (generator/mechanics/signals.py): y = [q, qd, s]; their slots in p
        self.states = tuple(getattr(module, "STATES", ()))
        self.inputs = tuple(getattr(module, "INPUTS", ()))
        self.slots = dict(getattr(module, "SLOTS", {"states": len(self._defaults), "size": len(self._defaults)}))
        self.state_size = int(getattr(module, "STATE_SIZE", 2 * self.n))
        # (False from a load record, runtime/fastload.py, which only forms that do not invert them get)
        self._inertia_check = None if inverts_body_inertias is False else self._body_inertia_check()
        #: p at the defaults for the calls that pass no parameters, inputs or states (`_plain_p`)
        self._p_plain = None
        #: the inverse dynamics' module (runtime/kinds/inverse.py `companion`), once imported
        self._inverse: Any = None
        #: evaluations at the default parameters check the body inertias too (set by `load` after its
        #: own checks of the initial state; generator/mechanics/body_inertias.py)
        self.check_defaults = False
        #: modules built for this model on first use, by kind (runtime/kinds/derivatives.py keeps its
        #: derivatives modules under "derivatives", variant -> Derivatives)
        self.companions: dict = {}
        self._initial_references()

    def _body_inertia_check(self):
        """(checker, slots of its parameters in p) for the forms that invert every body's M_i
        (generator/mechanics/body_inertias.py), after checking the defaults; else None."""
        from dynamica.generator.mechanics import body_inertias
        if not body_inertias.inverts_body_inertias(self.form):
            return None
        check = body_inertias.BodyInertiaCheck(self.spec, self.form)
        check.check_defaults()
        if not check.symbols:
            return None                     # numbers only: checked once, no parameter changes them
        from dynamica.generator.spec import expr as ex
        slot, k = {}, 0
        for name, size in self._layout:
            if size == 1 and self._scalar[name]:
                slot[ex.param_symbol(name)] = k
            else:
                slot.update((ex.param_symbol(name, j), k + j) for j in range(size))
            k += size
        return check, np.array([slot[s] for s in check.symbols], dtype=np.intp)

    def _initial_references(self):
        """The loops' references (prismatic, weld: the relative orientation they keep) before any
        call of `assemble`: those of assembling the initial values, so that qdd, constraints,
        outputs and linearize of a fresh model see the same mechanism as simulate; where the
        initial values cannot be assembled, those at the initial values as given (assemble and
        simulate then say why)."""
        if not sum(size for _, size in self.module.INFO.get("loop_references", ())):
            return
        import warnings

        from dynamica.errors import DynamicaError
        from dynamica.runtime import assembly as loops
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                loops.assemble(self)
        except (DynamicaError, ValueError, ArithmeticError, np.linalg.LinAlgError):
            q0, _ = self.initial_state()
            refs = np.empty(max(1, sum(size for _, size in self.module.INFO["loop_references"])))
            self.module.con_refs(0.0, q0, self.param_vector(), refs)
            self.set_references(refs)

    def __repr__(self):
        return f"<dynamica model {self.name!r} form={self.form!r} n={self.n}>"

    # -- parameters
    def param_vector(self, params=None, inputs=None, s=None) -> np.ndarray:
        """The flat array p of the module: the parameters (defaults overridden by `params`), then
        the loops' references of the last assembly, the inputs' slots (`inputs`: name -> value, or
        the values in the order of `inputs`, held constant; missing ones 0: runtime/inputs.py
        input_vector) and the extra states' (`s`, default 0; the module's `rhs` takes them from y)."""
        p = self._params(params)
        if inputs is not None:
            from dynamica.runtime.inputs import input_mapping, set_inputs
            values = input_mapping(self, inputs, "inputs")
            if values:
                set_inputs(self, p, values, 0.0)
        if s is not None and self.states:
            k = self.slots["states"]
            p[k:k + len(self.states)] = self.as_vector(s, "s", len(self.states))
        return p

    @property
    def param_layout(self) -> tuple:
        """((name, size, scalar), ...) of the module's parameter array p in order: the declared
        parameters (`scalar` False for a vector one, even of size 1), then the loops' references;
        the inputs' and extra states' slots follow (`slots`)."""
        return tuple((name, size, self._scalar[name]) for name, size in self._layout)

    def _params(self, params=None) -> np.ndarray:
        p = self._defaults.copy()
        if self._references is not None:
            k = self._reference_slot
            p[k:k + len(self._references)] = self._references
        if not params:
            if self._inertia_check is not None and self.check_defaults:   # LGR, HLGR: warned at load
                check, slots = self._inertia_check
                check.check(p[slots])
            return p
        offsets, k = {}, 0
        for name, size in self._layout:
            offsets[name] = (k, size)
            k += size
        unknown = [k for k in params if k not in offsets]
        if unknown:
            raise KeyError(f"unknown parameter(s) {', '.join(map(repr, unknown))}; "
                           f"the model has {', '.join(self.parameters) or 'none'}")
        for name, value in params.items():
            k, size = offsets[name]
            arr = np.atleast_1d(np.asarray(value, dtype=float))
            if arr.shape != (size,) or (size == 1 and np.ndim(value) != 0 and self._scalar[name]):
                raise ValueError(f"parameter {name!r} expects {'a scalar' if size == 1 else f'{size} values'}, "
                                 f"got {value!r}")
            p[k:k + size] = arr
        if self._inertia_check is not None:          # LGR, HLGR: M_i^-1 at these values (cached)
            check, slots = self._inertia_check
            check.check(p[slots], params)
        return p

    # -- equations
    def as_vector(self, x, name, size=None) -> np.ndarray:
        """`x` as a contiguous float array of length `size` (default n, the coordinates'); a
        ValueError naming the argument `name` otherwise. Every evaluation checks its q, qd, y,
        ... with it (also the analyses and the derivatives module)."""
        a = np.ascontiguousarray(x, dtype=float).reshape(-1)
        n = self.n if size is None else size
        if a.shape[0] != n:
            raise ValueError(f"`{name}` has length {a.shape[0]}, expected {n} ({', '.join(self.coordinates)})")
        return a

    @property
    def hamiltonian(self) -> bool:
        """True when the state is [q, pm] with Poisson momenta pm (the Hamiltonian forms)."""
        return self.kind == "hamiltonian"

    def _p(self, params, inputs, s=None):
        """p for an evaluation at a state: inputs not given are 0 (a simulation needs every one)."""
        return self.param_vector(params, inputs, s)

    def _plain_p(self):
        """p of a call without parameters, inputs or states, made once (the kernels only read it);
        None where such a call still has work to do in Python (extra states: their initial values;
        LGR, HLGR: the inertia check at the defaults) or a closed loop's solve."""
        p = self._p_plain
        if p is None and not (self.states or self._inertia_check is not None or self.loops):
            p = self._p_plain = self._params(None)
        return p

    def qdd(self, q, qd, t=0.0, params=None, inputs=None, s=None) -> np.ndarray:
        """Generalized accelerations; `inputs` the values of the model's inputs (name -> value;
        missing ones are 0), `s` the extra states (default: their initial values)."""
        if params is None and inputs is None and s is None and not self.hamiltonian:
            p = self._p_plain if self._p_plain is not None else self._plain_p()
            if p is not None:
                out = np.empty(self.n)
                try:                    # float64 vectors of length N go to the entry as they are
                    self.module.qdd(t, q, qd, p, out)
                    return out
                except (TypeError, ValueError):
                    pass                # anything else is converted (or named in the error) below
        if self.hamiltonian:
            raise TypeError(f"form {self.form!r} is Hamiltonian (state [q, pm]): use rhs(t, y) with "
                            "y = to_state(q, qd), or a Lagrangian form for qdd")
        if self.loops:
            from dynamica.runtime import assembly as loops
            return loops.solve(self, q, qd, t, params)[0]
        out = np.empty(self.n)
        self.module.qdd(float(t), self.as_vector(q, "q"), self.as_vector(qd, "qd"),
                        self._p(params, inputs, self.extra_states(s, params)), out)
        return out

    def extra_states(self, s, params=None):
        """The extra states' vector `s` as given, or the initial ones when None (None for a model
        without extra states)."""
        if not self.states:
            return None
        return self.initial_states(params) if s is None else self.as_vector(s, "s", len(self.states))

    def state_rates(self, q, qd, s=None, t=0.0, params=None, inputs=None) -> np.ndarray:
        """s' of the extra states at (t, q, qd, s)."""
        out = np.empty(len(self.states))
        if self.states:
            self.module.states(float(t), self.as_vector(q, "q"), self.as_vector(qd, "qd"),
                               self._p(params, inputs, self.extra_states(s, params)), out)
        return out

    def inverse_dynamics(self, q, qd, qdd, t=0.0, params=None, inputs=None, s=None) -> np.ndarray:
        """The generalized forces tau with M qdd = Q(t, q, qd) + tau: what must act besides the model's
        own forces for the motion (q, qd, qdd) (recursive Newton-Euler, generator/kinds/inverse.py; the
        module is generated on first use)."""
        out = np.empty(self.n)
        if params is None and inputs is None and s is None:
            p = self._p_plain if self._p_plain is not None else self._plain_p()
            if p is not None and self._inverse is not None:
                try:                    # as in `qdd`: float64 vectors of length N as they are
                    self._inverse.inverse_dynamics(t, q, qd, qdd, p, out)
                    return out
                except (TypeError, ValueError):
                    pass
        from dynamica.runtime.kinds.inverse import companion
        self._inverse = companion(self)            # (the same module for the model's spec: kept)
        self._inverse.inverse_dynamics(float(t), self.as_vector(q, "q"), self.as_vector(qd, "qd"),
                                       self.as_vector(qdd, "qdd"),
                                       self._p(params, inputs, self.extra_states(s, params)), out)
        return out

    def frame(self, body: str, at=None):
        """The operational-space kinematics of a body (a URDF link, an MJCF body) or of a point `at`
        of it: placement, spatial velocity and acceleration, Jacobians in Pinocchio's references,
        J'q' (runtime/kinds/frames.py; the module is generated on first use)."""
        from dynamica.runtime.kinds.frames import frame
        return frame(self, body, at)

    def frame_function(self, name: str, what: str, reference="LOCAL_WORLD_ALIGNED", at=None, params=None):
        """A prepared function of one quantity of a frame (`what`: placement, jacobian, velocity,
        bias, acceleration, classical) in `reference`, checked once: f(q[, qd[, qdd]], out=None,
        t=0.0) is one compiled call (runtime/kinds/frames.py)."""
        from dynamica.runtime.kinds.frames import frame
        return frame(self, name, at).function(what, reference, params)

    def gravity_forces(self, q, t=0.0, params=None) -> np.ndarray:
        """The generalized gravity forces g(q): those that hold the system still against gravity."""
        from dynamica.runtime.kinds.inverse import companion
        out = np.empty(self.n)
        companion(self).gravity_forces(float(t), self.as_vector(q, "q"), self.param_vector(params), out)
        return out

    def mass_matrix(self, q, t=0.0, params=None) -> np.ndarray:
        out = np.empty(self.n * self.n)
        if params is None:
            p = self._p_plain if self._p_plain is not None else self._plain_p()
            if p is not None:
                try:                    # as in `qdd`: a float64 vector of length N as it is
                    self.module.mass_matrix(t, q, p, out)
                    return out.reshape(self.n, self.n)
                except (TypeError, ValueError):
                    pass
        self.module.mass_matrix(float(t), self.as_vector(q, "q"), self.param_vector(params), out)
        return out.reshape(self.n, self.n)

    def rhs(self, t, y, params=None, inputs=None) -> np.ndarray:
        """The state derivative of y = [q, qd, s] ([q, pm, s] for the Hamiltonian forms)."""
        out = np.empty(self.state_size)
        if params is None and inputs is None:
            p = self._p_plain if self._p_plain is not None else self._plain_p()
            if p is not None:
                try:                    # as in `qdd`: a float64 vector of length STATE_SIZE as it is
                    self.module.rhs(t, y, p, out)
                    return out
                except (TypeError, ValueError):
                    pass
        self.module.rhs(float(t), self.as_vector(y, "y", self.state_size), self._p(params, inputs), out)
        return out

    def split_state(self, y):
        """(q, qd or pm, s) of an integrator state y."""
        y = self.as_vector(y, "y", self.state_size)
        n = self.n
        return y[:n].copy(), y[n:2 * n].copy(), y[2 * n:].copy()

    def solver_stats(self) -> dict:
        """Counters of a form with an inner solver (the iterative one: iterations per call, fallbacks);
        empty for the direct forms."""
        return dict(self.module.itr_stats()) if hasattr(self.module, "itr_stats") else {}

    def reset_solver(self):
        """Forget state kept between calls (the iterative form's inverse estimate) and its counters."""
        if hasattr(self.module, "itr_reset"):
            self.module.itr_reset()

    def to_state(self, q, qd, t=0.0, params=None, s=None) -> np.ndarray:
        """The integrator state of (q, qd, s): [q, qd, s] (Lagrangian) or [q, pm, s] (Hamiltonian,
        (1.49)); s the extra states (default: their initial values; none for most models)."""
        q, qd = self.as_vector(q, "q"), self.as_vector(qd, "qd")
        s = self.extra_states(s, params)
        tail = [] if s is None else [s]
        if not self.hamiltonian:
            return np.concatenate([q, qd] + tail)
        pm = np.empty(self.n)
        self.module.momenta(float(t), q, qd, self.param_vector(params), pm)
        return np.concatenate([q, pm] + tail)

    def from_state(self, y, t=0.0, params=None):
        """(q, qd) of an integrator state y (inverse of `to_state`; `split_state` gives s too)."""
        y = self.as_vector(y, "y", self.state_size)
        q = y[:self.n].copy()
        if not self.hamiltonian:
            return q, y[self.n:2 * self.n].copy()
        qd = np.empty(self.n)
        self.module.velocities(float(t), q, np.ascontiguousarray(y[self.n:2 * self.n]), self.param_vector(params), qd)
        return q, qd

    def rhs_function(self, params=None, inputs=None):
        """A fast `f(t, y)` closure for scipy's integrators (parameters and inputs bound once)."""
        p = self._p(params, inputs)
        rhs, n2 = self.module.rhs, self.state_size

        def f(t, y):
            out = np.empty(n2)
            try:                        # a float64 vector of length STATE_SIZE as it is
                rhs(t, y, p, out)
            except (TypeError, ValueError):
                rhs(float(t), np.ascontiguousarray(y, dtype=float), p, out)
            return out
        return f

    @property
    def output_layout(self) -> tuple:
        """((key, shape), ...) of `outputs`, in order."""
        info = getattr(self.module, "INFO", {})
        return tuple(info.get("output_layout", (("qdd", (self.n,)),)))

    def output_slices(self) -> tuple:
        """((key, shape, start, size), ...) of the flat array of the module's `outputs`, and its size."""
        if getattr(self, "_slices", None) is None:
            slices, k = [], 0
            for key, shape in self.output_layout:
                size = int(np.prod(shape))
                slices.append((key, tuple(shape), k, size))
                k += size
            self._slices = (tuple(slices), k)
        return self._slices

    def outputs(self, t, q, qd, params=None, inputs=None, s=None) -> dict:
        """What the model's `outputs` section asks for (docs/model_format.md), plus "qdd", the extra
        states and the inputs by their names: name -> ndarray."""
        q, qd, s = self.as_vector(q, "q"), self.as_vector(qd, "qd"), self.extra_states(s, params)
        p = self._p(params, inputs, s)
        if not hasattr(self.module, "outputs"):            # no outputs section: qdd only
            out = {"qdd": self.qdd(q, qd, t, params, inputs, s) if not self.hamiltonian else np.full(self.n, np.nan)}
        else:
            slices, total = self.output_slices()
            flat = np.empty(total)
            self.module.outputs(float(t), q, qd, p, flat)
            out = {key: np.array(flat[k]) if shape == () else flat[k:k + size].reshape(shape)
                   for key, shape, k, size in slices}              # (views of this call's own array)
        if self.inputs or self.states:
            from dynamica.runtime.inputs import signal_values
            out.update({k: np.asarray(v, dtype=float) for k, v in signal_values(self, p, t).items()})
        return out                      # every value an ndarray, a scalar's of shape ()

    def output_series(self, t, Q, QD, params=None, S=None, U=None) -> dict:
        """`outputs` along a trajectory: name -> array with a leading time axis. `S` the extra
        states per row, `U` the inputs (name -> values per row)."""
        if len(t) == 0:
            return {}
        from dynamica.runtime.series import output_rows
        out = output_rows(self, t, Q, QD, params, S, U)         # every row in one call from C
        if out is not None:
            return out
        if S is not None or U is not None or self.states or self.inputs:
            rows = [self.outputs(tk, q, qd, params, None if U is None else {k: v[j] for k, v in U.items()},
                                 None if S is None else S[j]) for j, (tk, q, qd) in enumerate(zip(t, Q, QD))]
            return {k: np.array([r[k] for r in rows]) for k in rows[0]}
        if not hasattr(self.module, "outputs"):
            rows = [self.outputs(tk, q, qd, params) for tk, q, qd in zip(t, Q, QD)]
            return {k: np.array([r[k] for r in rows]) for k in rows[0]}
        Q = np.ascontiguousarray(Q, dtype=float).reshape(len(t), self.n)
        QD = np.ascontiguousarray(QD, dtype=float).reshape(len(t), self.n)
        slices, total = self.output_slices()
        flat, p, kernel = np.empty((len(t), total)), self.param_vector(params), self.module.outputs
        for j in range(len(t)):                     # one C call per row, parameters packed once
            kernel(float(t[j]), Q[j], QD[j], p, flat[j])
        return {key: flat[:, k].copy() if shape == () else flat[:, k:k + size].reshape((len(t), *shape)).copy()
                for key, shape, k, size in slices}

    # -- closed loops (runtime/assembly.py, docs/loops.md)
    @property
    def loops(self) -> bool:
        """True when the model has closed kinematic loops (its q are the tree's coordinates)."""
        return hasattr(self.module, "con_phi")

    def constraints(self, q, t=0.0, params=None) -> np.ndarray:
        """The position constraint residual phi(q) of the loops (one entry per equation)."""
        from dynamica.runtime import assembly as loops
        return loops.residual(self, q, t, params)

    def assemble(self, q=None, qd=None, t=0.0, params=None, hold=None):
        """(q, qd) satisfying the loops' position and velocity constraints, from the given values
        (default: the model's initial values) with the smallest change, `hold` (default: the
        model's `assembly.hold`: coordinates and der(coordinate)s) kept."""
        from dynamica.runtime import assembly as loops
        return loops.assemble(self, q, qd, t, params, hold)

    def set_references(self, refs):
        """The loops' references (prismatic, weld) fixed at an assembly."""
        size = sum(size for _, size in self.module.INFO.get("loop_references", ()))
        self._references = np.array(refs[:size], dtype=float) if size else None
        self._p_plain = None

    def clear_references(self):
        self._references = None
        self._p_plain = None

    # -- initial state
    def parameter_values(self, params=None) -> dict:
        """Parameter symbol (generator.expr.param_symbol) -> value at `params` (defaults overridden)."""
        from dynamica.generator.spec import expr as ex
        p = self.param_vector(params)
        subs, k = {}, 0
        for name, size in self._layout:
            if size == 1 and self._scalar[name]:
                subs[ex.param_symbol(name)] = p[k]
            else:
                for j in range(size):
                    subs[ex.param_symbol(name, j)] = p[k + j]
            k += size
        return subs

    def initial_states(self, params=None) -> np.ndarray:
        """The extra states' initial values (`states: {name: {initial: ...}}`), at the given parameters."""
        if not self.states:
            return np.zeros(0)
        if not params and self._initial_at_defaults is not None:      # a model from runtime/fastload.py
            return self._initial_at_defaults[2].copy()
        constant = getattr(self, "_states_constant", None)
        if constant is not None:                  # no state's initial value depends on a parameter (fastload.py)
            return constant.copy()
        subs = self.parameter_values(params)
        return np.array([evaluate(self.spec, [st.initial], extra=subs)[0] for st in self.spec.states])

    def initial_depends_on_parameters(self) -> tuple:
        """(whether an `initial` value of a coordinate or rate, whether an extra state's initial
        value, depends on a parameter or on t): what runtime/fastload.py records, so that a
        cached model evaluates the initial state at overridden parameters without sympy when
        they do not."""
        from dynamica.generator.spec import expr as ex
        coordinates = any(free for _, _, free in self._initial_terms()[0]) if self.spec.initial else False
        scope = self.spec.scope(time_allowed=True)
        states = any(ex.parse(st.initial, scope).free_symbols for st in self.spec.states)
        return bool(coordinates), bool(states)

    def _initial_terms(self):
        """((key, expression, its free symbols), ...) of the `initial` section, parsed once, and
        ((parameter symbol, index in the parameter vector), ...)."""
        if getattr(self, "_initial", None) is None:
            from dynamica.generator.spec import expr as ex
            scope = self.spec.scope(time_allowed=True)
            terms = []
            for key, text in self.spec.initial:
                e = ex.parse(text, scope)
                terms.append((key, e, tuple(e.free_symbols)))
            slots, k = [], 0
            for name, size in self._layout:
                if size == 1 and self._scalar[name]:
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
        if not params and self._initial_at_defaults is not None:      # a model from runtime/fastload.py
            return self._initial_at_defaults[0].copy(), self._initial_at_defaults[1].copy()
        constant = getattr(self, "_initial_constant", None)
        if constant is not None:                  # no initial value depends on a parameter: evaluated once
            return constant[0].copy(), constant[1].copy()
        import sympy as sp

        from dynamica.generator.spec import expr as ex
        terms, slots = self._initial_terms()
        if not any(free for _, _, free in terms):
            for key, e, _ in terms:
                if key.startswith("der("):
                    qd0[self.coordinates.index(key[4:-1])] = float(e)
                else:
                    q0[self.coordinates.index(key)] = float(e)
            self._initial_constant = (q0.copy(), qd0.copy())
            return q0, qd0
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
