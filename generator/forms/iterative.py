"""The iterative forms ITR-M and ITR-G (dissertation 2.3, (2.27)-(2.55)).

Lagrange II, M q'' = Q, solved at every call by the quasi-Newton method (2.29) whose inverse
estimate H_k is kept by the compiled module between calls, so that each integration step
starts from the inverse the previous one left (2.3.1). The iteration is hand-written C
(templates/native/dynamica_itr.h): it is the same for every model. What depends on the model is
generated, as straight-line kernels:

  itr_terms (t, q, qd, p) -> Q [n], ws [S]   once per call: Q of (2.21) (composite bias
                                             forces F_hat*, (2.22)) and the state-dependent
                                             data `ws` the residual needs
  itr_mx    (ws, x)       -> mx [n]          once per iteration: M x for a trial acceleration
                                             x, so that the antigradient is r(x) = Q - M x

  ITR-M (2.53): ws = M by composite bodies (2.19)-(2.20), row-major n*n; itr_mx multiplies
        by the structural nonzeros of M only (the sparsity of 2.3.4, first way) and the direct
        solve / the first inverse use ws itself.
  ITR-G (2.54)-(2.55): M is never formed on the normal path. ws holds, per body, the
        non-constant entries of G_i, rho_i, G_i rho_i, the joint basis A_i and the inertia M_i
        (constant entries stay literal, so structural zeros fold); itr_mx is
            u_i = C_i u_kappa_i + A_i x_i            (u = T A x,  (2.54))
            f*_i = M_i u_i + sum_{j in S_i} C_j^T f*_j,  (M x)_i = A_i^T f*_i   ((2.55))
        i.e. the inverse-dynamics recursion with zero velocities and no gravity; M from a
        `mass` kernel (composite bodies) serves only the first inverse, the direct fallback
        and the module's mass_matrix.

The kind is "lagrangian", so the kernel `dynamics` exists; there is no closed-form q'', so it
computes nothing (0 operations): the entry points (render.iterative_entries) call the kernels
above and the solver. See templates/native/dynamica_itr.h for the iteration, the stopping rule (2.28),
the check of (2.43)/(2.51)-(2.52), the fallbacks ((2.33), direct) and the counters.
"""

from __future__ import annotations

import sympy as sp

from dynamica.generator.cost.flops import Formula
from dynamica.generator.forms import EquationsOfMotion, KernelSpec, register
from dynamica.generator.forms.parts.common import bias_forces, forward_pass, lagrangian_equations
from dynamica.generator.forms.parts.spatial import (
    apply_C,
    apply_CT,
    composite_forces,
    composite_inertias,
    coordinate_layout,
    full_matrix,
    inertia_times,
    mass_matrix,
    mass_matrix_rows,
)
from dynamica.generator.ir.program import dot, fold_vectors, mul, neg, total
from dynamica.generator.mechanics.forces import active_forces

#: names of the symbols of the kernel inputs that are not program quantities
WS_NAME, X_NAME = "ITRws", "ITRx"


class Cache:
    """The array `ws` from itr_terms to itr_mx: one slot per distinct non-constant expression.

    Calling it on an expression returns what itr_mx uses in its place: the expression itself
    when it is a number (so zeros and ones fold), else the symbol of its slot (a negated
    symbol shares the slot of the symbol).
    """

    def __init__(self):
        self.values: list = []
        self.symbols: list = []
        self._slot: dict = {}

    def __call__(self, e):
        e = sp.sympify(e)
        if e.is_Number:
            return e
        if e.is_Mul and len(e.args) == 2 and e.args[0] == -1:
            return neg(self(e.args[1]))
        if e not in self._slot:
            self._slot[e] = len(self.values)
            self.values.append(e)
            self.symbols.append(sp.Symbol(f"{WS_NAME}{len(self.symbols)}", real=True))
        return self.symbols[self._slot[e]]


def generalized_forces(kin):
    """Q of (2.21) by composite bias forces (2.22), as in the composite form."""
    prog = kin.program
    fp = forward_pass(kin)
    F_active, gen, _ = active_forces(kin, fp)
    F_hat = bias_forces(kin, fp, F_active)
    Fstar = composite_forces(kin, F_hat)
    owner, local, _ = coordinate_layout(kin)
    return fp, [prog.let(f"Q{idx}", dot(kin.joints[i].A[c], Fstar[i]) + gen[kin.coordinates[idx]])
                for idx, (i, c) in enumerate(zip(owner, local))]


def trial_symbols(n):
    return tuple(sp.Symbol(f"{X_NAME}{j}", real=True) for j in range(n))


def sparse_mx(Mfull, n, x):
    """(2.53): M x over the structural nonzeros of M, M read from ws (row-major, lower half).

    Returns (ws symbols, expressions of M x); constant entries of M stay literal."""
    ws = [sp.Symbol(f"{WS_NAME}{k}", real=True) for k in range(n * n)]
    out = []
    for i in range(n):
        terms = []
        for j in range(n):
            r, c = max(i, j), min(i, j)
            e = Mfull[r * n + c]
            if e == 0:
                continue
            terms.append(mul(e if e.is_Number else ws[r * n + c], x[j]))
        out.append(total(terms))
    return ws, out


def recursive_mx(kin, fp, cache: Cache, x):
    """(2.54)-(2.55): M x = A^T T^T M T A x by two recursions over the bodies (no M)."""
    prog, topo = kin.program, kin.topo
    N = topo.n_bodies
    _, _, first = coordinate_layout(kin)
    zero6 = [sp.Integer(0)] * 6
    G = [None] * (N + 1)
    rho = [None] * (N + 1)
    u = [zero6] + [None] * N
    for i in range(1, N + 1):                                   # u = T A x   (2.54)
        jk, k = kin.joints[i], topo.kappa[i]
        G[i] = sp.Matrix(3, 3, lambda r, c: cache(jk.G[r, c]))
        rho[i] = [cache(e) for e in jk.rho]
        if all(e == 0 for e in u[k]):
            acc = list(zero6)
        else:
            acc = apply_C(G[i], [cache(e) for e in fp.rho_p[i]], u[k])
        for c, col in enumerate(jk.A):
            acc = [total([a, mul(cache(e), x[first[i] + c])]) for a, e in zip(acc, col)]
        u[i] = prog.let_vector(f"ITRu{i}", acc)
    acc = [None]
    for i in range(1, N + 1):
        bi = kin.inertia[i]
        inert = (cache(bi.mass), [cache(e) for e in bi.h], sp.Matrix(3, 3, lambda r, c: cache(bi.theta[r, c])))
        acc.append([inertia_times(inert, u[i])])     # children's terms summed once (fold_vectors)
    f = [None] * (N + 1)
    for i in range(N, 0, -1):                                   # r = ... A^T T^T M u   (2.55)
        f[i] = prog.let_vector(f"ITRf{i}", fold_vectors(acc[i]))
        k = topo.kappa[i]
        if k > 0:
            acc[k].append(apply_CT(G[i], rho[i], f[i]))
    from dynamica.generator.mechanics.forces import armature_blocks
    arm = armature_blocks(kin)                                  # + the joints' armature blocks x
    out = []
    for i in range(1, N + 1):
        for c, col in enumerate(kin.joints[i].A):
            row = arm[i][c] if i in arm else ()
            extra = [mul(cache(a), x[first[i] + k]) for k, a in enumerate(row) if a != 0]
            out.append(dot([cache(e) for e in col], f[i]) + sum(extra))
    return out


def flops_m(c, K):
    """(4.4): sum_i [(2K+6)(eta^2 - eta_k^2) + 42 tau] + (4K+2) n^2 + (9K+19) n + 427 N - 205 R - 1."""
    n = c.n
    s = sum((2 * K + 6) * (e * e - (ek or 0) ** 2) + 42 * tau for e, ek, tau in zip(c.eta, c.eta_parent, c.tau))
    return s + (4 * K + 2) * n * n + (9 * K + 19) * n + 427 * c.N - 205 * c.R - 1


@register("iterative-m", "ITR-M", "ITR", "iterative", cost=Formula("(4.4)", flops_m, iterative=True),
          pivots_of_m=True)
def iterative_m(kin) -> EquationsOfMotion:
    """ITR-M: residual (2.53) with the mass matrix of composite bodies."""
    n = len(kin.coordinates)
    _, Q = generalized_forces(kin)
    Mfull = full_matrix(mass_matrix_rows(kin, composite_inertias(kin)))   # (2.19)-(2.20)
    x = trial_symbols(n)
    ws, mx = sparse_mx(Mfull, n, x)
    nnz = sum(1 for e in Mfull if e != 0)
    return lagrangian_equations(
        kin, "iterative-m", [], [], mass_in_dynamics=True, entries="iterative",
        extra_kernels=(KernelSpec("itr_terms", ("t", "q", "qd", "p"), (("Q", Q), ("ws", Mfull))),
                       KernelSpec("itr_mx", ("ws", "x"), (("mx", mx),),
                                  symbols=(("ws", tuple(ws)), ("x", x)))),
        info={"solver": "quasi-Newton (2.29), inverse kept between calls", "residual": "(2.53) with M",
              "ws": "mass matrix, row-major", "ws_size": n * n, "mass_nonzeros": nnz})


def flops_g(c, K):
    """(4.5): 2 n^2 + 37 n + 405 N - 144 R - 1 + (4 n^2 + 33 n + 135 N - 96 R) K."""
    n, N, R = c.n, c.N, c.R
    return 2 * n * n + 37 * n + 405 * N - 144 * R - 1 + (4 * n * n + 33 * n + 135 * N - 96 * R) * K


@register("iterative-g", "ITR-G", cost=Formula("(4.5)", flops_g, iterative=True, candidate=True), pivots_of_m=True)
def iterative_g(kin) -> EquationsOfMotion:
    """ITR-G: residual by the recursions (2.54)-(2.55), the mass matrix never formed per call."""
    n = len(kin.coordinates)
    fp, Q = generalized_forces(kin)
    x = trial_symbols(n)
    cache = Cache()
    mx = recursive_mx(kin, fp, cache, x)
    M = mass_matrix(kin)                       # first inverse, direct fallback, mass_matrix
    return lagrangian_equations(
        kin, "iterative-g", [], M, entries="iterative",
        extra_kernels=(KernelSpec("itr_terms", ("t", "q", "qd", "p"), (("Q", Q), ("ws", list(cache.values)))),
                       KernelSpec("itr_mx", ("ws", "x"), (("mx", mx),),
                                  symbols=(("ws", tuple(cache.symbols)), ("x", x)))),
        info={"solver": "quasi-Newton (2.29), inverse kept between calls",
              "residual": "(2.54)-(2.55) recursive, M not formed", "ws": "per-body G, rho, G rho, A, M_i",
              "ws_size": len(cache.values)})
