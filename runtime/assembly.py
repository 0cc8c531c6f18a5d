"""Closed loops at run time (docs/loops.md): assembly of a state that satisfies the constraints,
the constraint residual, and the solve's report.

The module of a model with `loops` exports the loops' kernels (con_phi, con_jac, con_bias,
con_refs) and the constrained solve (con_qdd, project: generator/render/constrained.py). The
assembly (`assemble`) solves phi(q) = 0 by Gauss-Newton steps on the coordinates that are not
held (`assembly: {hold: [...]}`), each the minimum-norm correction (lstsq), then fixes the
references of prismatic and weld loops at the assembled configuration, then solves
J q' + phi_t = 0 for the rates that are not held, again with the smallest change.
"""

from __future__ import annotations

import numpy as np

from dynamica.errors import DynamicaError, ModelError, Problem

#: the assembly stops when max |phi| is below this (m for points, 1 for directions, m^2 for
#: distances), or when a Newton step no longer reduces it below ASSEMBLY_ACCEPT
ASSEMBLY_TOL = 1e-12
ASSEMBLY_ACCEPT = 1e-9
ASSEMBLY_ITERATIONS = 60
#: the projection after a step (docs/loops.md): max |phi| reached, Newton steps at most; the
#: compiled adams uses the same (compiled_adams.solve's project_tol, the module's project_capsule)
PROJECT_TOL, PROJECT_ITERATIONS = 1e-12, 8
#: the solve's status codes (templates/native/dynamica_constraints.h)
STATUS = {
    0: "ok",
    1: "inconsistent constraints",
    2: "mass matrix singular or not positive definite",
    3: "out of memory",
    4: "not converged",
}


class ConstraintError(DynamicaError):
    """The loops' equations have no solution (inconsistent, not merely redundant)."""


def layout(model) -> tuple:
    """((loop, what), ...) of the constraint equations."""
    return tuple(model.module.INFO["constraints"])


def residual(model, q, t=0.0, params=None) -> np.ndarray:
    """phi(q): the constraint residual of every equation (model.constraints)."""
    out = np.empty(len(layout(model)))
    model.module.con_phi(float(t), model.as_vector(q, "q"), model.param_vector(params), out)
    return out


def jacobian(model, q, t=0.0, params=None):
    """(J, phi_t) at q: J q' + phi_t = 0 on the constraint manifold."""
    m, n = len(layout(model)), model.n
    J, phit = np.empty(m * n), np.empty(m)
    model.module.con_jac(float(t), model.as_vector(q, "q"), model.param_vector(params), J, phit)
    return J.reshape(m, n), phit


def _loops_of(model, rows):
    names = []
    for r in rows:
        name = layout(model)[r][0]
        if name not in names:
            names.append(name)
    return names


def _fail(model, rows, values, what):
    by_name = {lp.name: lp for lp in model.spec.loops}
    names = _loops_of(model, rows)
    detail = ", ".join(f"`{layout(model)[r][0]}` ({layout(model)[r][1]}: {v:.3g})" for r, v in zip(rows, values))
    return ModelError(model.spec.file, [Problem(by_name[names[0]].path if names else "loops",
                                                f"the mechanism cannot be assembled: {what}; residual {detail}")])


def assemble(model, q=None, qd=None, t=0.0, params=None, hold=None):
    """(q, qd) near the given ones (default: the model's initial values) that satisfy the position
    and velocity constraints, holding `hold` (coordinate names and der(name)s; default: what the
    model's `assembly.hold` lists); sets the model's loop references."""
    iq, iqd = model.initial_state(params)
    q = np.array(iq if q is None else model.as_vector(q, "q"), dtype=float)
    qd = np.array(iqd if qd is None else model.as_vector(qd, "qd"), dtype=float)
    hold = set(model.spec.assembly_hold if hold is None else hold)
    unknown = hold - set(model.coordinates) - {f"der({c})" for c in model.coordinates}
    if unknown:
        raise ValueError(f"hold: unknown coordinate(s) {sorted(unknown)}; the model has {', '.join(model.coordinates)}")
    free_q = [k for k, c in enumerate(model.coordinates) if c not in hold]
    free_qd = [k for k, c in enumerate(model.coordinates) if f"der({c})" not in hold]
    ref_rows = set(model.module.INFO.get("reference_rows", ()))
    rows = [r for r in range(len(layout(model))) if r not in ref_rows]
    model.clear_references()
    p = model.param_vector(params)
    phi = residual(model, q, t, params)[rows]
    err = float(np.abs(phi).max()) if rows else 0.0
    for _ in range(ASSEMBLY_ITERATIONS):
        if err <= ASSEMBLY_TOL or not free_q:
            break
        J = jacobian(model, q, t, params)[0][np.ix_(rows, free_q)]
        step = np.linalg.lstsq(J, -phi, rcond=1e-12)[0]
        for _ in range(30):                          # backtracking: |phi| must go down
            trial = q.copy()
            trial[free_q] += step
            tphi = residual(model, trial, t, params)[rows]
            terr = float(np.abs(tphi).max())
            if terr < err or not np.isfinite(err):
                break
            step = step / 2
        else:
            break
        converged_slowly = terr > 0.5 * err
        q, phi, err = trial, tphi, terr
        if converged_slowly and err <= ASSEMBLY_ACCEPT:
            break
    if not err <= ASSEMBLY_ACCEPT:
        worst = [rows[k] for k in np.argsort(-np.abs(phi))[:3]]
        raise _fail(model, worst, [float(residual(model, q, t, params)[r]) for r in worst],
                    "the loops cannot close from the initial values (points that cannot meet, or a hold "
                    "that forbids it)")
    refs = np.empty(max(1, sum(size for _, size in model.module.INFO.get("loop_references", ()))))
    model.module.con_refs(float(t), q, p, refs)
    model.set_references(refs)
    J, phit = jacobian(model, q, t, params)
    r = -(J @ qd + phit)
    if free_qd and np.abs(r).max() > 0:
        qd[free_qd] += np.linalg.lstsq(J[:, free_qd], r, rcond=1e-12)[0]
    vres = J @ qd + phit
    scale = 1.0 + np.abs(J).max() * (np.abs(qd).max() if qd.size else 0.0)
    if np.abs(vres).max() > 1e-9 * scale:
        worst = list(np.argsort(-np.abs(vres))[:3])
        raise _fail(model, worst, [float(vres[k]) for k in worst],
                    "the held rates violate the velocity constraints")
    return q, qd


def solve(model, q, qd, t=0.0, params=None):
    """(q'', lambda) of the constrained system; ConstraintError if the equations are inconsistent."""
    n, m = model.n, len(layout(model))
    qdd, lam, report = np.empty(n), np.empty(m), np.empty(4)
    status = model.module.con_qdd(float(t), model.as_vector(q, "q"), model.as_vector(qd, "qd"),
                                  model.param_vector(params), qdd, lam, report)
    if status == 1:
        loop, what = layout(model)[int(report[1])]
        raise ConstraintError(f"{model.spec.file}: the equations of loop `{loop}` ({what}) are inconsistent, not "
                              f"redundant, at this state (residual {report[3]:.3g}): no motion satisfies every loop")
    if status:
        raise ConstraintError(f"{model.spec.file}: the constrained solve failed: {STATUS.get(status, status)}")
    return qdd, lam


#: relative rank threshold of the loops' Jacobian (|R_kk| of its pivoted QR against the largest)
RANK_RTOL = 1e-10


def pivoted_columns(A, rtol=RANK_RTOL) -> list:
    """A maximal set of independent columns of A, the best conditioned first (QR with column
    pivoting; rank: |R_kk| > rtol |R_00|)."""
    import scipy.linalg as sla
    if A.size == 0:
        return []
    _, R, piv = sla.qr(A, pivoting=True, mode="economic")
    d = np.abs(np.diag(R))
    rank = int(np.sum(d > rtol * d[0])) if d.size and d[0] > 0 else 0
    return [int(k) for k in piv[:rank]]


def independent_columns(J, rtol=RANK_RTOL, independent=None):
    """(T, ind): a basis of the null space of J (J T = 0) in independent coordinates: QR with
    column pivoting picks the dependent columns (the best conditioned of J, as many as its rank),
    the others `ind` are independent, with unit rows in T (q = q* + T z moves each independent
    coordinate by its z, the dependent ones as J requires). `independent`: column indices to
    keep independent (the dependent ones are then picked among the others); a ValueError names
    them when the others cannot take up the constraints."""
    n = J.shape[1]
    if J.size == 0:
        return np.eye(n), list(range(n))

    def pivoted(cols):
        picked = pivoted_columns(J[:, cols], rtol) if cols else []
        return len(picked), [cols[k] for k in picked]
    rank, dep = pivoted(list(range(n)))
    if independent:
        kept = sorted(set(independent))
        rank_others, dep = pivoted([k for k in range(n) if k not in kept])
        if rank_others < rank:
            raise ValueError("the loops leave these coordinates no freedom to be independent together: the others "
                             "cannot take up all the loop equations")
    dep = sorted(dep)
    ind = [k for k in range(n) if k not in dep]
    T = np.zeros((n, len(ind)))
    T[ind, range(len(ind))] = 1.0
    if dep:
        T[dep] = -np.linalg.lstsq(J[:, dep], J[:, ind], rcond=None)[0]
    return T, ind


def independent_basis(model, q, t=0.0, params=None, independent=None):
    """(T, names) of `independent_columns` for the loops' Jacobian at q, the independent
    coordinates naming the columns of T; `independent`: names to keep among them."""
    chosen = None
    if independent:
        names = [independent] if isinstance(independent, str) else list(independent)
        unknown = [c for c in names if c not in model.coordinates]
        if unknown:
            raise ValueError(f"unknown coordinate(s) {', '.join(map(repr, unknown))} in `independent`; the model "
                             f"{model.name!r} has {', '.join(model.coordinates)}")
        chosen = [model.coordinates.index(c) for c in names]
    try:
        T, ind = independent_columns(jacobian(model, q, t, params)[0], independent=chosen)
    except ValueError as exc:
        raise ValueError(
            f"{model.name}: {', '.join(independent if not isinstance(independent, str) else [independent])}: {exc}"
        ) from None
    return T, tuple(model.coordinates[j] for j in ind)
