"""Linearisation (dissertation 5.2; docs/linear.md): M dq'' + C dq' + K dq = 0 about a state.

With the residual r(t, q, q', q'') = M(q) q'' - Q(t, q, q') of the derivatives module
(generator/kinds/derivatives.py), a state (q*, q'*) and its accelerations q''* = q''(q*, q'*):

    M = M(q*),   C = dr/dq' (q*, q'*, q''*),   K = dr/dq (q*, q'*, q''*),
    A = d[q', q'']/d[q, q'] = [[0, E], [-M^-1 K, -M^-1 C]]

exactly (no finite differences): K and C come from the forward-mode tangent of r. By default
the state is the equilibrium reached from the model's initial values (runtime/analysis/statics.py) at
rest. About a state that is not an equilibrium, x' = A x is the variational equation of the
motion through it (q''* is not zero there).

Extra states and inputs: a model with `states:` is linearised to the first-order
model x' = A x + B u over x = [q, q', s] from the Jacobians of its residual and of its states'
rates s'(q, q', s, u) (generator/kinds/derivatives.py signal_kernels):

    A = [[0, E, 0], [-M^-1 K, -M^-1 C, -M^-1 R_s], [G_q, G_q', G_s]],   B = [[0], [-M^-1 R_u], [G_u]]

(R_s, R_u = dr/ds, dr/du; G = ds'/d.); M, C, K are the mechanical part at fixed states. Without
states, the inputs' B is [[0], [-M^-1 R_u]] over [q, q'] and `input_forces` = -R_u the
generalized forces per unit input. The modes of a first-order model are the eigenvalues of A
(runtime/analysis/modes.py compute_state_modes), its frequency response C (i w E - A)^-1 B.

Closed loops: with the constraint Jacobian Phi_q and a basis T of its null space,
the multipliers of the operating point lam = (Phi_q^T)^+ r(q*, q'*, q''*), and the curvature of
the constraints H = d(Phi_q^T lam)/dq at fixed lam (generator/kinds/derivatives.py loop_kernels):

    M_z = T^T M T,   C_z = T^T C T,   K_z = T^T (K - H) T

(T^T r = 0 on the manifold; differentiating T(q)^T r along q = q* + T z leaves
dT^T r = dT^T Phi_q^T lam = -T^T H T z, as Phi_q T = 0); about states at rest (q' = 0). Away
from an equilibrium (q''* != 0) K also gets M W, W dq the change of the dependent coordinates'
accelerations with the configuration (Phi_q W dq = -d(Phi_q q''*)/dq dq; in the default
independent coordinates only: `basis` is refused there).

Independent coordinates: `basis` (an n x m matrix T, or a pair (T, names)) restricts the
linearisation to q = q* + T z: M_z = T^T M T, C_z = T^T C T, K_z = T^T K T. Without it, a model with
closed loops is linearised in independent coordinates (runtime/assembly.py independent_basis), a
model with a method `constraint_basis(q, t, params) -> (T, names)` in that basis, every other
model in its own coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynamica.runtime.analysis.expm import state_matrix
from dynamica.runtime.analysis.modes import (
    compute_modes,
    compute_state_modes,
    frequency_response,
    input_matrix,
    state_frequency_response,
)


@dataclass
class LinearModel:
    """M dq'' + C dq' + K dq = B u of a model about an operating point."""
    M: np.ndarray
    C: np.ndarray
    K: np.ndarray
    coordinates: tuple              # names of the (independent) coordinates of dq
    q: np.ndarray                   # the operating point, in the model's coordinates
    qd: np.ndarray
    qdd: np.ndarray
    t: float = 0.0
    basis: np.ndarray | None = None    # T of q = q* + T z, None: the model's own coordinates
    model: object = None
    params: dict | None = None
    info: dict = field(default_factory=dict)
    states: tuple = ()                 # names of the extra states s (a first-order model)
    s: np.ndarray | None = None        # their values at the operating point
    inputs: tuple = ()                 # names of the model's inputs u (columns of B)
    B: np.ndarray | None = None        # dx'/du over x = [q, q', s]
    input_forces: np.ndarray | None = None   # -dr/du: generalized forces per unit input

    @property
    def first_order(self) -> bool:
        """True for a model with extra states: x' = A x + B u over x = [q, q', s]."""
        return bool(self.states)

    @property
    def state_names(self) -> tuple:
        """Names of the entries of x: the coordinates, der(<coordinate>) and the states."""
        return tuple(self.coordinates) + tuple(f"der({c})" for c in self.coordinates) + tuple(self.states)

    @property
    def A(self) -> np.ndarray:
        """d[q', q'']/d[q, q'] = [[0, E], [-M^-1 K, -M^-1 C]] (with states: the module docstring's)."""
        if "A" not in self.info:
            self.info["A"] = state_matrix(self.M, self.C, self.K)
        return self.info["A"]

    @property
    def n(self) -> int:
        return len(self.M)

    def modes(self):
        """Undamped and damped frequencies, damping, decrements, shapes (runtime/analysis/modes.py)."""
        if "modes" not in self.info:
            self.info["modes"] = (compute_state_modes(self.A, self.coordinates, self.states) if self.first_order
                                  else compute_modes(self.M, self.C, self.K, self.coordinates))
        return self.info["modes"]

    def frequency_response(self, inputs, outputs=None, frequencies=None):
        """H(i w) from named inputs (coordinates: unit generalized forces; or name -> n forces; or the
        model's inputs) to outputs (coordinates, der(<coordinate>); with states also the states),
        frequencies in Hz (default: around the modes)."""
        if self._state_space(inputs):
            names, B = self._state_inputs(inputs)
            return state_frequency_response(self.A, B, self.state_names, names,
                                            outputs if outputs is not None else self.coordinates, frequencies,
                                            self.modes() if frequencies is None else None)
        return frequency_response(self.M, self.C, self.K, self.coordinates, inputs, outputs, frequencies,
                                  self.modes() if frequencies is None else None, self._full_basis())

    def _full_basis(self):
        """(T, the model's coordinates) when linearised in independent coordinates, else None."""
        if self.basis is None or self.model is None:
            return None
        return self.basis, tuple(self.model.coordinates)

    def _state_space(self, inputs) -> bool:
        """Whether the first-order model x' = A x + B u serves: with states, or for the model's inputs."""
        names = () if inputs is None or isinstance(inputs, dict) else \
            ((inputs,) if isinstance(inputs, str) else tuple(inputs))
        return self.first_order or any(u in self.inputs for u in names)

    def _state_inputs(self, inputs) -> tuple:
        """(names, columns of dx'/d(input)) of inputs over x = [q, q', s]: the model's inputs (columns
        of B), coordinates (a unit generalized force each) or a mapping name -> n generalized forces."""
        n, k = self.n, len(self.states)
        if isinstance(inputs, dict):
            names, forces = input_matrix(self.coordinates, inputs)
        else:
            names = (inputs,) if isinstance(inputs, str) else tuple(inputs)
            unknown = [u for u in names if u not in self.inputs and u not in self.coordinates]
            if unknown:
                raise ValueError(f"unknown input(s) {', '.join(map(repr, unknown))}: an input is one of the model's "
                                 f"inputs ({', '.join(self.inputs) or 'none'}), a coordinate (a unit generalized force "
                                 f"on it: {', '.join(self.coordinates)}) or a mapping name -> forces")
            forces = np.zeros((n, len(names)))
            for j, c in enumerate(names):
                if c not in self.inputs:
                    forces[self.coordinates.index(c), j] = 1.0
        B = np.vstack([np.zeros_like(forces), np.linalg.solve(self.M, forces), np.zeros((k, forces.shape[1]))])
        for j, u in enumerate(names):
            if not isinstance(inputs, dict) and u in self.inputs:
                B[:, j] = self.B[:, self.inputs.index(u)]
        return names, B

    def simulate(self, t_end, x0, output_step, method="expm", forcing=None, inputs=None, order=3, tol=1e-13,
                 step=None, t0=0.0):
        """The linear model's motion from the deviation x0 = [dq, dq'] ([dq, dq', ds] with states;
        result.q, result.qd are the deviations from the operating point, with states
        result.info["states"] theirs). method "expm": the matrix-exponential integrator (runtime/analysis/expm.py);
        forcing f(t) -> generalized forces (n,), or with `inputs` (names as in frequency_response)
        u(t) -> one value per input."""
        from dynamica.runtime.analysis import expm
        from dynamica.runtime.results.result import SimulationResult
        if callable(inputs):
            raise TypeError("inputs names the inputs (the model's, or coordinates); their values over time come from "
                            "forcing: simulate(..., inputs=['u'], forcing=lambda t: [u_of_t])")
        if method not in LINEAR_METHODS:
            raise ValueError(f"unknown method {method!r} for a linear model; available: {', '.join(LINEAR_METHODS)}")
        n = self.n
        if self._state_space(inputs):     # x = [dq, dq', ds]
            B = self._state_inputs(self.coordinates if inputs is None else inputs)[1]
            t, X, info = expm.integrate_state(self.A, x0, t_end, output_step, forcing=forcing, inputs=B, order=order,
                                              tol=tol, step=step, t0=t0)
            if self.first_order:
                info["states"] = X[:, 2 * n:].copy()
        else:
            B = None if inputs is None else input_matrix(self.coordinates, inputs, self._full_basis())[1]
            t, X, info = expm.integrate(self.M, self.C, self.K, x0, t_end, output_step, forcing=forcing, inputs=B,
                                        order=order, tol=tol, step=step, t0=t0)
        return SimulationResult(t=t, q=X[:, :n].copy(), qd=X[:, n:2 * n].copy(), coordinates=self.coordinates,
                                method=method, nfev=0, info={**info, "deviations": True,
                                                             "operating_point": (self.q.copy(), self.qd.copy())})


LINEAR_METHODS = ("expm",)


def _basis(model, q, t, params, basis, independent=None):
    """(T, names) of the independent coordinates (module docstring), or (None, coordinates)."""
    if basis is None and getattr(model, "loops", False):
        from dynamica.runtime.assembly import independent_basis
        basis = independent_basis(model, q, t, params, independent)
    elif independent:
        raise ValueError(f"{model.name}: `independent` chooses among the coordinates of closed loops; this model has "
                         "none (its coordinates are all independent)")
    elif basis is None and hasattr(model, "constraint_basis"):
        basis = model.constraint_basis(q, t=t, params=params)
    if basis is None:
        return None, tuple(model.coordinates)
    if isinstance(basis, tuple) and len(basis) == 2 and not isinstance(basis[0], (int, float)):
        T, names = np.asarray(basis[0], dtype=float), tuple(basis[1])
    else:
        T = np.asarray(basis, dtype=float)
        names = tuple(f"z{k}" for k in range(T.shape[1] if T.ndim == 2 else 0))
    if T.ndim != 2 or T.shape[0] != model.n or len(names) != T.shape[1]:
        raise ValueError(f"basis must be an n x m matrix (n = {model.n}) with m names, got shape {T.shape} "
                         f"and {len(names)} names")
    return T, names


def linearize(model, q=None, qd=None, t=0.0, params=None, basis=None, s=None, u=None, q0=None,
              independent=None) -> LinearModel:
    """M, C, K and A of `model` about (q, qd) (module docstring); q=None: the equilibrium found
    from q0 (default: the model's initial values; qd then defaults to rest; the states to the
    equilibrium's). s, u: the extra states (default: the equilibrium's, or the initial values
    when q is given) and the inputs (a list in the order of `inputs:` or a mapping name -> value;
    default 0) of the operating point. independent: with closed loops, coordinates to keep among
    the independent ones (default: chosen by QR pivoting)."""
    from dynamica.runtime.analysis.statics import input_values, statics
    from dynamica.runtime.kinds.derivatives import derivatives
    d = derivatives(model)
    u = input_values(model, u)
    info = {}
    if basis is not None and (model.states or model.spec.inputs):
        raise ValueError(f"{model.name}: `basis` is for second-order models; a model with extra states or inputs is "
                         "linearised over all of [q, q', s]")
    if q is None:
        eq = statics(model, q0=q0, t=t, params=params, u=u)
        q, info["equilibrium"] = eq.q, eq
        if s is None and model.states:
            s = [eq.info["states"][name] for name in model.states]
    q = model.as_vector(q, "q").copy()
    qd = np.zeros(model.n) if qd is None else model.as_vector(qd, "qd").copy()
    if model.states or model.spec.inputs:
        return _linearize_signals(model, d, q, qd, t, params, s, u, info)
    M = d.mass_matrix(q, t, params)
    if model.loops:
        return _linearize_loops(model, d, q, qd, t, params, basis, M, info, independent)
    if independent:
        _basis(model, q, t, params, None, independent)          # (says why not)
    qdd = d.qdd(q, qd, t, params)
    _, K, C = d.residual_jacobian(q, qd, qdd, t, params)
    T, names = _basis(model, q, t, params, basis)
    if T is not None:
        M, C, K = (T.T @ X @ T for X in (M, C, K))
    return LinearModel(M=M, C=C, K=K, coordinates=names, q=q, qd=qd, qdd=qdd, t=float(t), basis=T, model=model,
                       params=params, info=info)


def _linearize_signals(model, d, q, qd, t, params, s, u, info) -> LinearModel:
    """A model with extra states or inputs (module docstring): the first-order A, B."""
    k, m = len(model.states), len(model.spec.inputs)
    s = model.initial_states(params) if s is None else model.as_vector(s, "s", k)
    u = np.zeros(m) if u is None else model.as_vector(u, "u", m)
    fo = d.first_order(q, qd, s, u, t, params)
    M, qdd, J = fo["M"], fo["qdd"], fo["J"]
    K, C = J["r_q"], J["r_qd"]
    info["A"] = fo["A"]
    if k:
        info["state_rates"] = J["sd"]
    return LinearModel(M=M, C=C, K=K, coordinates=tuple(model.coordinates), q=q, qd=qd, qdd=qdd, t=float(t),
                       model=model, params=params, info=info, states=tuple(model.states), s=np.array(s, dtype=float),
                       inputs=tuple(model.spec.inputs), B=fo["B"],
                       input_forces=-J["r_u"] if m else None)


def _linearize_loops(model, d, q, qd, t, params, basis, M, info, independent=None) -> LinearModel:
    """A model with closed loops (module docstring): in a basis of the constraint null space,
    with the constraints' curvature weighted by the multipliers of the operating point."""
    if np.any(qd):
        raise ValueError(f"{model.name}: a model with closed loops is linearised about states at rest (qd = 0); "
                         "about a motion, the basis of the constraint null space moves with it")
    from dynamica.runtime import assembly as loops
    phi = loops.residual(model, q, t, params)
    if phi.size and np.max(np.abs(phi)) > 1e-8 * max(1.0, float(np.max(np.abs(q), initial=0.0))):
        raise ValueError(f"{model.name}: q is not on the loops' constraint manifold (largest |phi| "
                         f"{np.max(np.abs(phi)):.3g}); assemble it first: q = model.assemble(q)[0]")
    qdd = loops.solve(model, q, qd, t, params)[0]
    r, K, C = d.residual_jacobian(q, qd, qdd, t, params)
    Phi = loops.jacobian(model, q, t, params)[0]
    lam = np.linalg.lstsq(Phi.T, r, rcond=None)[0]
    _, H, _, Hx = d.constraint_force_jacobian(q, lam, qdd, t, params)
    # away from equilibrium (q''* != 0) the dependent coordinates' accelerations also move with
    # z: Phi_q dq'' = -d(Phi_q q''*)/dq dq, the independent ones' rows of dq'' being z''
    moving = bool(np.max(np.abs(qdd), initial=0.0) > 1e-9 * max(1.0, float(np.max(np.abs(M @ qdd - r), initial=0.0))))
    if moving and basis is not None:
        raise ValueError(f"{model.name}: `basis` is taken at an equilibrium only for a model with closed loops (here "
                         f"q'' = {np.round(qdd, 6).tolist()}); away from it, the default independent coordinates")
    T, names = _basis(model, q, t, params, basis, independent)
    W = np.zeros((model.n, model.n))
    if moving:
        ind = [model.coordinates.index(c) for c in names]
        dep = [k for k in range(model.n) if k not in ind]
        if dep:
            W[dep] = -np.linalg.lstsq(Phi[:, dep], Hx, rcond=None)[0]
    info.update({"multipliers": lam, "constraint_curvature": H,
                 "loop_residual": float(np.max(np.abs(r - Phi.T @ lam), initial=0.0))})
    Kc = K - H + M @ W
    return LinearModel(M=T.T @ M @ T, C=T.T @ C @ T, K=T.T @ Kc @ T, coordinates=names, q=q, qd=qd, qdd=qdd,
                       t=float(t), basis=T, model=model, params=params, info=info)
