"""Linearisation (issue 16, API.md version 2): M dq'' + C dq' + K dq = 0 about a state.

With the residual r(t, q, q', q'') = M(q) q'' - Q(t, q, q') of the derivatives module
(generator/derivatives.py), a state (q*, q'*) and its accelerations q''* = q''(q*, q'*):

    M = M(q*),   C = dr/dq' (q*, q'*, q''*),   K = dr/dq (q*, q'*, q''*),
    A = d[q', q'']/d[q, q'] = [[0, E], [-M^-1 K, -M^-1 C]]

exactly (no finite differences): K and C come from the forward-mode tangent of r. By default
the state is the equilibrium reached from the model's initial values (runtime/statics.py) at
rest. About a state that is not an equilibrium, x' = A x is the variational equation of the
motion through it (q''* is not zero there).

Independent coordinates: `basis` (an n x m matrix T, or a pair (T, names)) restricts the
linearisation to q = q* + T z: M_z = T^T M T, C_z = T^T C T, K_z = T^T K T. Without it, a model
that can say which motions its constraints admit (closed loops: a method
`constraint_basis(q, t, params) -> (T, names)`, a basis of the null space of the constraint
Jacobian) is linearised in that basis; every other model in its own coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynamica.runtime.expm import state_matrix
from dynamica.runtime.modes import compute_modes, frequency_response, input_matrix


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

    @property
    def A(self) -> np.ndarray:
        """d[q', q'']/d[q, q'] = [[0, E], [-M^-1 K, -M^-1 C]]."""
        if "A" not in self.info:
            self.info["A"] = state_matrix(self.M, self.C, self.K)
        return self.info["A"]

    @property
    def n(self) -> int:
        return len(self.M)

    def modes(self):
        """Undamped and damped frequencies, damping, decrements, shapes (runtime/modes.py)."""
        if "modes" not in self.info:
            self.info["modes"] = compute_modes(self.M, self.C, self.K, self.coordinates)
        return self.info["modes"]

    def frequency_response(self, inputs, outputs=None, frequencies=None):
        """H(i w) from named inputs (coordinates: unit generalized forces; or name -> n forces)
        to outputs (coordinates, der(<coordinate>)), frequencies in Hz (default: around the modes)."""
        return frequency_response(self.M, self.C, self.K, self.coordinates, inputs, outputs, frequencies,
                                  self.modes() if frequencies is None else None)

    def simulate(self, t_end, x0, output_step, method="expm", forcing=None, inputs=None, order=3, tol=1e-13,
                 step=None, t0=0.0):
        """The linear model's motion from the deviation x0 = [dq, dq'] (result.q, result.qd are the
        deviations from the operating point). method "expm": the seed-004 integrator (runtime/expm.py);
        forcing f(t) -> generalized forces (n,), or with `inputs` (names as in frequency_response)
        u(t) -> one value per input."""
        from dynamica.runtime import expm
        from dynamica.runtime.results import SimulationResult
        if method not in LINEAR_METHODS:
            raise ValueError(f"unknown method {method!r} for a linear model; available: {', '.join(LINEAR_METHODS)}")
        B = None if inputs is None else input_matrix(self.coordinates, inputs)[1]
        t, X, info = expm.integrate(self.M, self.C, self.K, x0, t_end, output_step, forcing=forcing, inputs=B,
                                    order=order, tol=tol, step=step, t0=t0)
        n = self.n
        return SimulationResult(t=t, q=X[:, :n].copy(), qd=X[:, n:].copy(), coordinates=self.coordinates,
                                method=method, nfev=0, info={**info, "deviations": True,
                                                             "operating_point": (self.q.copy(), self.qd.copy())})


LINEAR_METHODS = ("expm",)


def _basis(model, q, t, params, basis):
    """(T, names) of the independent coordinates (module docstring), or (None, coordinates)."""
    if basis is None and hasattr(model, "constraint_basis"):
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


def linearize(model, q=None, qd=None, t=0.0, params=None, basis=None) -> LinearModel:
    """M, C, K and A of `model` about (q, qd) (module docstring); q=None: the equilibrium found
    from the model's initial values (qd then defaults to rest)."""
    from dynamica.runtime.derivatives import derivatives
    from dynamica.runtime.statics import statics
    d = derivatives(model)
    info = {}
    if q is None:
        eq = statics(model, t=t, params=params)
        q, info["equilibrium"] = eq.q, eq
    q = model._vec(q, "q").copy()
    qd = np.zeros(model.n) if qd is None else model._vec(qd, "qd").copy()
    qdd = d.qdd(q, qd, t, params)
    _, K, C = d.residual_jacobian(q, qd, qdd, t, params)
    M = d.mass_matrix(q, t, params)
    T, names = _basis(model, q, t, params, basis)
    if T is not None:
        M, C, K = (T.T @ X @ T for X in (M, C, K))
    return LinearModel(M=M, C=C, K=K, coordinates=names, q=q, qd=qd, qdd=qdd, t=float(t), basis=T, model=model,
                       params=params, info=info)
