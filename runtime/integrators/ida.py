"""The implicit DAE integrator of models with closed loops: `simulate(model, method="ida")`.

The constrained equations in the stabilized index-2 form of Gear, Gupta and Leimkuhler (GGL), on
y = [q, v, lambda, mu] (n + n + r + r):

    q' - v + J^T mu = 0                   (mu = 0 on the exact solution: it keeps q on phi = 0)
    M(q) v' - Q(t, q, v) + J^T lambda = 0
    J(q) v + phi_t = 0                    (the velocity constraints)
    phi(q, t) = 0                         (the position constraints)

integrated by SUNDIALS IDA (variable-order BDF, through the maintained binding scikit-sundae)
for mechanisms that are stiff (stiff springs or dampers), where the explicit Adams method needs
steps limited by stability. The rows of phi are the independent subset of the loops' equations
at the start (QR with column pivoting of J^T: a planar linkage written with 3-D joints repeats
its out-of-plane conditions, and IDA's iteration matrix must stay regular); the rank must not
change during the run. lambda and mu are algebraic and left out of the error test (their
absolute tolerance is huge: index-2 variables need not be accurate to the tolerance of q).

The residual is evaluated in Python from the module's entry points: the tree's mass matrix,
its inverse dynamics at zero acceleration (-Q, runtime/kinds/inverse.py), and the loops' kernels
(phi, J, phi_t; runtime/assembly.py); IDA differences it for its Jacobian. Each call costs tens of
microseconds, so the method pays off where Adams' stability limit costs far more steps
(benchmarks/bench_loops.py).
"""

from __future__ import annotations

import numpy as np


def independent_rows(J) -> np.ndarray:
    """Indices of a maximal independent subset of the rows of J (sorted)."""
    from dynamica.runtime.assembly import pivoted_columns
    return np.sort(np.array(pivoted_columns(J.T), dtype=int))


def run_ida(model, t0, t_end, y0, t_eval, rtol, atol, params, step, events=None, jacobian=None):
    """The `ida` entry of simulate's INTEGRATORS (module docstring); y0 = [q, qd] assembled."""
    from dynamica.errors import DynamicaError, IntegrationError
    try:
        from sksundae.ida import IDA
    except ImportError:
        raise DynamicaError("method 'ida' needs SUNDIALS through scikit-sundae: pip install 'dynamica[dae]' "
                            "(or scikit-sundae); radau is the other implicit method") from None
    from dynamica.runtime import assembly as loops
    from dynamica.runtime.integrators.simulate import simulation_result
    if not model.loops:
        raise ValueError("method 'ida' integrates the differential-algebraic equations of a model with closed "
                         "loops; this model has none: use 'radau' or 'BDF' for a stiff tree")
    if events:
        raise ValueError("method 'ida' does not locate events; use adams or a scipy method")
    n = model.n
    q0, v0 = np.array(y0[:n], dtype=float), np.array(y0[n:2 * n], dtype=float)
    zero = np.zeros(n)
    J0, _ = loops.jacobian(model, q0, t0, params)
    rows = independent_rows(J0)
    r = len(rows)
    qdd0 = model.qdd(q0, v0, t0, params)
    tau0 = model.inverse_dynamics(q0, v0, zero, t0, params)             # M q'' - Q at q'' = 0: -Q
    lam0 = np.linalg.lstsq(J0[rows].T, -(model.mass_matrix(q0, t0, params) @ qdd0 + tau0), rcond=None)[0] \
        if r else np.zeros(0)
    calls = [0]

    def residual(t, y, yp, out):
        calls[0] += 1
        q, v, lam, mu = y[:n], y[n:2 * n], y[2 * n:2 * n + r], y[2 * n + r:]
        J, phit = loops.jacobian(model, q, t, params)
        J, phit = J[rows], phit[rows]
        out[:n] = yp[:n] - v + J.T @ mu
        out[n:2 * n] = model.mass_matrix(q, t, params) @ yp[n:2 * n] + model.inverse_dynamics(q, v, zero, t, params) \
            + J.T @ lam
        out[2 * n:2 * n + r] = J @ v + phit
        out[2 * n + r:] = loops.residual(model, q, t, params)[rows]

    yy0 = np.concatenate([q0, v0, lam0, np.zeros(r)])
    yp0 = np.concatenate([v0, qdd0, np.zeros(2 * r)])
    algebraic = list(range(2 * n, 2 * n + 2 * r))
    tol = np.full(len(yy0), float(atol))
    tol[algebraic] = 1e10                        # left out of the error test (module docstring)
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    t_eval = np.asarray(t_eval, dtype=float)
    if t_eval[0] > t0:
        t_eval = np.concatenate([[t0], t_eval])
    options = {"rtol": float(rtol), "atol": tol, "algebraic_idx": algebraic or None, "max_num_steps": 100000}
    if step:
        options["max_step"] = float(step)
    sol = IDA(residual, **options).solve(t_eval, yy0, yp0)
    if not sol.success:
        raise IntegrationError(f"ida failed at t = {float(np.asarray(sol.t)[-1]):g}: {sol.message}")
    Y = np.asarray(sol.y)
    keep = np.isin(np.asarray(sol.t), t_eval)
    info = {"integrator": "SUNDIALS IDA (BDF orders 1-5) on the GGL index-2 equations (runtime/integrators/ida.py)",
            "constraint_rows": tuple(int(k) for k in rows), "residual_calls": calls[0]}
    return simulation_result(model, np.asarray(sol.t)[keep], Y[keep, :2 * n], "ida", calls[0], info,
                             str(sol.message), params=params)
