"""Statics: the equilibrium of a model (D90's static equilibrium, dissertation 5.2).

At rest (q' = 0, q'' = 0) the generalized forces vanish: with the residual of the equations of
motion r(t, q, q', q'') = M q'' - Q (generator/kinds/derivatives.py), an equilibrium solves

    g(q_f) = r(t, q, 0, 0)_f = -Q(t, q, 0)_f = 0          for the free coordinates f,

the held coordinates keeping their values. g is solved by Newton's method damped by step
halving, and when that stalls by scipy's trust-region reflective least squares
(`least_squares(method="trf")`), both with the generated Jacobian dg/dq_f = K_ff, K = dr/dq
the stiffness matrix, and where both stall, again from starts with one coordinate moved a little
(`_solve`). At the solution the eigenvalues of the symmetric part of K_ff are
reported: a negative one is an unstable equilibrium (a warning names the coordinates its
eigenvector moves), a zero one a neutral direction.

    eq = statics(model, q0=None, free=None, t=0.0, params=None)    # an Equilibrium
    q = equilibrium(model, ...)                                     # its q (docs/api.md)

`free`: names of the coordinates to solve for (default: all); the others are held at q0 (the
model's initial values unless given). Failures are a StaticsError naming the residual and the
coordinates that carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dynamica.errors import DynamicaError

#: an equilibrium: |g|_inf <= TOL * max(|g(q0)|_inf, |K(q0)|_inf) (a force within TOL of the
#: stiffness times one unit of displacement)
TOL = 1e-10
#: eigenvalues of K_ff below -STABLE_RTOL * max |eigenvalue| make the equilibrium unstable
STABLE_RTOL = 1e-9


class StaticsError(DynamicaError):
    """No equilibrium was found (the message names the residual and the coordinates)."""


@dataclass
class Equilibrium:
    """An equilibrium of a model and what characterizes it."""
    q: np.ndarray                  # all coordinates (held ones at their given values)
    coordinates: tuple
    free: tuple                    # names solved for
    held: tuple                    # names held fixed
    q0: np.ndarray                 # the starting configuration
    residual: np.ndarray           # g = -Q of the free coordinates at q
    stiffness: np.ndarray          # K_ff = dg/dq_f at q
    eigenvalues: np.ndarray        # of (K_ff + K_ff^T)/2, ascending
    eigenvectors: np.ndarray       # columns, over the free coordinates
    iterations: int
    tolerance: float               # the largest of the free coordinates' (info["tolerances"])
    info: dict = field(default_factory=dict)

    @property
    def stable(self) -> bool:
        return not self.unstable_directions()

    def unstable_directions(self) -> list:
        """[(eigenvalue, names of the coordinates its eigenvector moves)] for negative eigenvalues."""
        big = float(np.max(np.abs(self.eigenvalues))) if self.eigenvalues.size else 0.0
        out = []
        for k, lam in enumerate(self.eigenvalues):
            if lam < -STABLE_RTOL * big:
                out.append((float(lam), _moved(self.free, self.eigenvectors[:, k])))
        return out

    def neutral_directions(self) -> list:
        big = float(np.max(np.abs(self.eigenvalues))) if self.eigenvalues.size else 0.0
        return [_moved(self.free, self.eigenvectors[:, k]) for k, lam in enumerate(self.eigenvalues)
                if abs(lam) <= STABLE_RTOL * big]

    def text(self) -> str:
        lines = [f"{'coordinate':>16s} {'start':>14s} {'equilibrium':>16s}  {'generalized force':>17s}"]
        g = dict(zip(self.free, self.residual))
        for name, a, b in zip(self.coordinates, self.q0, self.q):
            force = f"{-g[name]: .3e}" if name in g else "held"
            lines.append(f"{name:>16s} {a: 14.8g} {b: 16.10g}  {force:>17s}")
        lines.append(f"iterations: {self.iterations}; |Q| of the free coordinates "
                     f"{np.max(np.abs(self.residual), initial=0):.3e} (tolerance {self.tolerance:.3e})")
        head = (f"stiffness eigenvalues on the loops' constraint manifold (independent coordinates "
                f"{', '.join(self.info['independent'])}): " if self.info.get("manifold") else
                "stiffness eigenvalues (symmetric part of dr/dq, free coordinates): ")
        lines.append(head + ", ".join(f"{x:.6g}" for x in self.eigenvalues))
        unstable = self.unstable_directions()
        if unstable:
            lines += [f"UNSTABLE: eigenvalue {lam:.6g} along {', '.join(names)}" for lam, names in unstable]
        else:
            lines.append("stable" + (" (neutral along " + "; ".join(", ".join(n) for n in self.neutral_directions())
                                     + ")" if self.neutral_directions() else ""))
        return "\n".join(lines)


def _moved(names, vector, share=0.3) -> tuple:
    """The names whose entries of `vector` are at least `share` of its largest."""
    v = np.abs(vector)
    top = v.max() if v.size else 0.0
    return tuple(n for n, x in zip(names, v) if top > 0 and x >= share * top)


def _free_indices(model, free) -> list:
    if free is None:
        return list(range(model.n))
    names = [free] if isinstance(free, str) else list(free)
    unknown = [c for c in names if c not in model.coordinates]
    if unknown:
        raise ValueError(f"unknown coordinate(s) {', '.join(map(repr, unknown))} in `free`; the model "
                         f"{model.name!r} has {', '.join(model.coordinates)}")
    return sorted({model.coordinates.index(c) for c in names})


def statics(model, q0=None, free=None, t=0.0, params=None, tol=TOL, max_iter=200, u=None) -> Equilibrium:
    """The equilibrium reached from q0 (default: the model's initial values); see the module
    docstring. u: the model's inputs (`inputs:`), held at these values (default 0)."""
    from dynamica.runtime.kinds.derivatives import derivatives
    u = input_values(model, u)
    if getattr(model, "states", ()):
        return _statics_with_states(model, q0, free, t, params, tol, max_iter, u)
    if getattr(model, "loops", False):
        return _statics_with_loops(model, q0, free, t, params, tol, max_iter)
    d = derivatives(model)
    start = model.initial_state(params)[0] if q0 is None else model.as_vector(q0, "q0").copy()
    idx = _free_indices(model, free)
    zero = np.zeros(model.n)

    def full(x):
        q = start.copy()
        q[idx] = x
        return q

    def g_and_K(x):
        r, K, _ = d.residual_jacobian(full(x), zero, zero, t, params, u=u)
        return r[idx], K[np.ix_(idx, idx)]

    names = [model.coordinates[k] for k in idx]
    x, g, K, iterations, message, tolerance = _solve(
        model, g_and_K, start[idx], (len(idx),), tol, max_iter, names,
        failure=lambda g, tolv, msg: _failure(model, idx, g, tolv, msg))
    return _equilibrium(model, full(x), idx, start, g, K, iterations, tolerance,
                        {"message": message, "t": t})


def _equilibrium(model, q, idx, start, g, K, iterations, tolerance, info, basis=None) -> Equilibrium:
    """The Equilibrium at q (free coordinates idx; residual g over them, stiffness K), with the
    eigen-decomposition of K's symmetric part; an unstable one is a warning naming its directions.
    basis: K is T^T K_ff T on the loops' constraint manifold, the eigenvectors are given as T v.
    tolerance: those of the free coordinates' forces (`info["tolerances"]`; `tolerance` the largest)."""
    tolerance = np.asarray(tolerance, dtype=float)
    lam, vec = np.linalg.eigh((K + K.T) / 2) if len(K) else (np.zeros(0), np.zeros((0, 0)))
    where = "the stiffness"
    if basis is not None:
        vec, where = basis @ vec, "the stiffness on the loops' constraint manifold"
    eq = Equilibrium(q=q, coordinates=model.coordinates, free=tuple(model.coordinates[k] for k in idx),
                     held=tuple(c for k, c in enumerate(model.coordinates) if k not in idx), q0=start,
                     residual=g, stiffness=K, eigenvalues=lam, eigenvectors=vec, iterations=iterations,
                     tolerance=float(np.max(tolerance, initial=0.0)),
                     info={**info, "tolerances": dict(zip((model.coordinates[k] for k in idx), map(float, tolerance))),
                           "asymmetry": float(np.max(np.abs(K - K.T), initial=0.0))})
    for lam_k, names in eq.unstable_directions():
        from dynamica.generator.spec.model import warn_model
        warn_model(model.spec, f"the equilibrium found is unstable: {where} has the negative eigenvalue {lam_k:.4g} "
                          f"along {', '.join(f'`{c}`' for c in names)}")
    return eq


def _statics_with_states(model, q0, free, t, params, tol, max_iter, u) -> Equilibrium:
    """A model with extra states (`states:`): the free coordinates and the states together, with
    g = -Q(q, 0, s) = 0 and s' = 0 (the inputs held at u, default 0), on the generated Jacobians
    of r and s' (generator/kinds/derivatives.py signal_kernels), by `_solve`. `info["states"]` holds the
    states; the stiffness is dg/dq_f at those states."""
    from dynamica.runtime.kinds.derivatives import derivatives
    d = derivatives(model)
    start = model.initial_state(params)[0] if q0 is None else model.as_vector(q0, "q0").copy()
    s0 = model.initial_states(params)
    idx = _free_indices(model, free)
    nf, zero = len(idx), np.zeros(model.n)

    def split(x):
        q = start.copy()
        q[idx] = x[:nf]
        return q, x[nf:]

    def g_and_K(x):
        q, s = split(x)
        J = d.signal_jacobian(q, zero, zero, s, u, t, params)
        g = np.concatenate([J["r"][idx], J["sd"]])
        top = np.hstack([J["r_q"][np.ix_(idx, idx)], J["r_s"][idx]])
        return g, np.vstack([top, np.hstack([J["sd_q"][:, idx], J["sd_s"]])])

    names = [model.coordinates[j] for j in idx] + [f"der({n}) = 0" for n in model.states]
    x, g, K, iterations, message, tolerance = _solve(model, g_and_K, np.concatenate([start[idx], s0]),
                                                     (nf, len(s0)), tol, max_iter, names)
    q, s = split(x)
    return _equilibrium(model, q, idx, start, g[:nf], K[:nf, :nf], iterations, tolerance[:nf],
                        {"message": message, "t": t, "states": dict(zip(model.states, map(float, s)))})


def _solve(model, g_and_K, x0, blocks, tol, max_iter, names, failure=None):
    """g(x) = 0 by the damped Newton, then the trust region, each row to its own tolerance: TOL x
    the larger of its residual and its row of the Jacobian at the start, and at least ROUNDOFF x
    the largest of these in its block (sizes `blocks`: forces, then rates or constraints, in their
    own units). Where both stall (a start where
    the Jacobian is singular is a stationary point of |g|: a link exactly horizontal under
    gravity), again from starts with one coordinate moved by RESTART_STEP (x max(1, |x_j|)), in
    turn. (x, g, K, iterations, message, tolerances per row); a StaticsError (`failure(g,
    tolerances, message)`, or one naming the largest residuals) if none is found."""
    g0, K0 = g_and_K(x0)
    tolerance, k = np.empty(len(g0)), 0
    for size in blocks:
        rows = slice(k, k + size)
        # each row to its own scale: a force within tol of its row's stiffness times one unit of
        # displacement, so that a soft coordinate is found as accurately as a stiff one
        scale = np.maximum(np.abs(np.nan_to_num(g0[rows])),
                           np.max(np.abs(np.nan_to_num(K0[rows])), axis=1, initial=0.0))
        tolerance[rows] = np.maximum(
            tol * scale, ROUNDOFF * max(float(np.max(scale, initial=0.0)), np.finfo(float).tiny)
        )
        k += size

    def fail(g, message):
        if failure is not None:
            return StaticsError(failure(g, tolerance, message))
        ratio = np.nan_to_num(np.abs(g) / tolerance, nan=np.inf)
        worst = ", ".join(f"`{names[j]}` {g[j]:.3e} (tolerance {tolerance[j]:.1e})" for j in np.argsort(-ratio)[:5])
        return StaticsError(f"{model.name}: no equilibrium found ({message}); the residuals that remain, largest "
                            f"first: {worst}; try another start q0 or hold coordinates with `free`")

    if not np.all(np.isfinite(g0)):
        raise fail(g0, "the equations are not finite at the start")
    if np.all(np.abs(g0) <= tolerance):
        return x0, g0, K0, 0, "already in equilibrium", tolerance
    starts = [(x0, "")]
    for j in range(blocks[0]):
        h = RESTART_STEP * max(1.0, abs(float(x0[j])))
        for sign in (1.0, -1.0):
            x1 = x0.copy()
            x1[j] += sign * h
            starts.append((x1, f"; from a start with `{names[j]}` {'+' if sign > 0 else '-'}{h:g}"))
    total, message = 0, ""
    for xs, how in starts:
        x, iterations, message = _attempt(g_and_K, xs, tolerance, max_iter)
        total += iterations
        g, K = g_and_K(x)
        if np.all(np.isfinite(g)) and np.all(np.abs(g) <= tolerance):
            return x, g, K, total, message + how, tolerance
    raise fail(g_and_K(x0)[0] if not np.all(np.isfinite(g)) else g, message)


#: the move of one coordinate for a new start when the solver stalls (x max(1, |q_j|))
RESTART_STEP = 0.1
#: the least tolerance of a row, relative to the largest scale of its block (rounding in forces
#: of that size)
ROUNDOFF = 1e-14
#: once within the tolerance, full Newton steps go on while each halves the largest |g_i| /
#: tolerance_i, until it is below PRECISION (|g_i| near rounding: the Newton step of a converged
#: equilibrium changes no coordinate beyond its last digits)
PRECISION = 1e-5


def _attempt(g_and_K, x0, tolerance, max_iter):
    """(x, evaluations, message) of the damped Newton from x0, then the trust region."""
    from scipy.optimize import least_squares
    x, iterations, done = _damped_newton(g_and_K, x0, tolerance, max_iter)
    message = "damped Newton"
    if not done:
        w = 1.0 / tolerance
        try:
            sol = least_squares(lambda x: w * g_and_K(x)[0], x, jac=lambda x: w[:, None] * g_and_K(x)[1],
                                method="trf", x_scale="jac", xtol=1e-15, ftol=1e-15, gtol=1e-15, max_nfev=max_iter)
            x, iterations, message = sol.x, iterations + int(sol.nfev), f"trust region: {sol.message}"
        except (ValueError, np.linalg.LinAlgError) as exc:      # not finite on its way
            message = f"trust region: {exc}"
    return x, iterations, message


def input_values(model, u):
    """The inputs of the model as an array (None: every input 0): a mapping name -> value (missing
    ones 0) or the values in the order of the model's `inputs:` (runtime/inputs.py input_vector)."""
    from dynamica.runtime.inputs import input_vector
    return input_vector(model, u, "u")


def _statics_with_loops(model, q0, free, t, params, tol, max_iter) -> Equilibrium:
    """A model with closed loops: the free coordinates q_f and the multipliers lam together, with

        g = (r(q, 0, 0) - Phi_q^T lam)_f = 0,   phi(q) = 0,

    by `_solve` on the Jacobian [[K - H, -Phi_q^T]_f, [Phi_q]_f, 0]] (H = d(Phi_q^T lam)/dq:
    generator/kinds/derivatives.py loop_kernels; least-squares steps, as redundant loop equations make
    it singular). The stiffness reported is that on the constraint manifold, T^T (K - H) T in
    independent coordinates of the free ones (runtime/assembly.py; `info["independent"]` names them,
    as `linearize` does); the eigenvectors are given over the free coordinates (T times those of
    the reduced stiffness)."""
    from dynamica.runtime import assembly as loops
    from dynamica.runtime.kinds.derivatives import derivatives
    d = derivatives(model)
    start = model.initial_state(params)[0] if q0 is None else model.as_vector(q0, "q0").copy()
    idx = _free_indices(model, free)
    layout = loops.layout(model)
    m, nf, zero = len(layout), len(idx), np.zeros(model.n)

    def full(x):
        q = start.copy()
        q[idx] = x[:nf]
        return q

    def g_and_K(x):
        q, lam = full(x), x[nf:]
        r, K, _ = d.residual_jacobian(q, zero, zero, t, params)
        J = loops.jacobian(model, q, t, params)[0]
        H = d.constraint_force_jacobian(q, lam, t=t, params=params)[1]
        g = np.concatenate([(r - J.T @ lam)[idx], loops.residual(model, q, t, params)])
        top = np.hstack([(K - H)[np.ix_(idx, idx)], -J.T[idx]])
        return g, np.vstack([top, np.hstack([J[:, idx], np.zeros((m, m))])])

    r0 = d.residual_jacobian(start, zero, zero, t, params)[0]
    J0 = loops.jacobian(model, start, t, params)[0]
    x0 = np.concatenate([start[idx], np.linalg.lstsq(J0.T[idx], r0[idx], rcond=None)[0] if nf else np.zeros(m)])
    names = [model.coordinates[k] for k in idx] + [f"loop {lp} ({w})" for lp, w in layout]
    x, g, G, iterations, message, tolerance = _solve(model, g_and_K, x0, (nf, m), tol, max_iter, names)
    q, lam = full(x), x[nf:]
    T, ind = loops.independent_columns(G[nf:, :nf])            # G = [[(K - H)_ff, .], [Phi_q f, 0]]
    Kz = T.T @ G[:nf, :nf] @ T
    return _equilibrium(model, q, idx, start, g[:nf], Kz, iterations, tolerance[:nf],
                        {"message": message, "t": t, "multipliers": lam, "basis": T, "manifold": True,
                         "independent": tuple(model.coordinates[idx[k]] for k in ind)}, basis=T)


def _damped_newton(g_and_K, x, tolerance, max_iter):
    """Newton steps -K^-1 g (least squares for a singular K), halved until |g| decreases;
    (x, evaluations, converged)."""
    g, K = g_and_K(x)
    norm = float(np.linalg.norm(g))
    evaluations = 1
    while evaluations < max_iter:
        if np.all(np.abs(g) <= tolerance):
            return _polish(g_and_K, x, g, K, tolerance, evaluations, max_iter)
        if not (np.all(np.isfinite(g)) and np.all(np.isfinite(K))):
            return x, evaluations, False
        step = np.linalg.lstsq(K, -g, rcond=None)[0]
        for _ in range(30):
            trial = x + step
            g_t, K_t = g_and_K(trial)
            evaluations += 1
            if np.all(np.isfinite(g_t)) and np.linalg.norm(g_t) < norm:
                break
            step = step / 2
        else:
            return x, evaluations, False
        x, g, K, norm = trial, g_t, K_t, float(np.linalg.norm(g_t))
    return x, evaluations, bool(np.all(np.abs(g) <= tolerance))


def _polish(g_and_K, x, g, K, tolerance, evaluations, max_iter):
    """From x within the tolerance, full Newton steps while each halves the largest |g_i| /
    tolerance_i, until that is below PRECISION (quadratic convergence takes one or two);
    (x, evaluations, True)."""
    worst = float(np.max(np.abs(g) / tolerance, initial=0.0))
    while worst > PRECISION and evaluations < max_iter:
        trial = x + np.linalg.lstsq(K, -g, rcond=None)[0]
        g_t, K_t = g_and_K(trial)
        evaluations += 1
        worst_t = float(np.max(np.nan_to_num(np.abs(g_t) / tolerance, nan=np.inf), initial=0.0))
        if not (worst_t <= worst / 2 and np.all(np.isfinite(K_t))):
            break
        x, g, K, worst = trial, g_t, K_t, worst_t
    return x, evaluations, True


def _failure(model, idx, g, tolerance, message) -> str:
    names = [model.coordinates[k] for k in idx]
    order = np.argsort(-np.abs(np.nan_to_num(g, nan=np.inf)))[:5]
    worst = ", ".join(f"`{names[k]}` {-g[k]:.3e} (tolerance {tolerance[k]:.1e})" for k in order)
    return (f"{model.name}: no equilibrium found ({message}); the generalized forces that remain, largest first: "
            f"{worst}; try another start q0, hold coordinates with `free`, or check "
            "that springs or stops restrain every free coordinate")


def equilibrium(model, q0=None, free=None, t=0.0, params=None, **kw) -> np.ndarray:
    """q of the equilibrium reached from q0 (docs/api.md): `statics(...).q`."""
    return statics(model, q0=q0, free=free, t=t, params=params, **kw).q
