"""The component tables of chapter 4 (tables 4.1-4.7, appendix B): the rows whose sums the flop
formulas (4.1)-(4.7) of cost.py are, the entries where a printed formula is not that sum
(`TABLE_VS_FORMULA`), and polynomial fits of counts (the closed forms of tables 4.3-4.11).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from dynamica.generator.cost.flops import ITERATIVE, F, Tree, count_arguments, cube_sq_lin, form_name, iterations_of

__all__ = ["Row", "breakdown", "fit_polynomial", "TABLE_VS_FORMULA"]


# ---------------------------------------------------------------- the component tables
@dataclass(frozen=True)
class Row:
    """One row of a component table: `times` evaluations of muls + adds flops (muls/adds are
    None for the (B.8) solve rows, which the dissertation counts as one total)."""

    table: str
    obj: str
    equation: str
    muls: Fraction | None
    adds: Fraction | None
    total: Fraction
    times: Fraction = Fraction(1)

    @property
    def flops(self) -> Fraction:
        return self.total * self.times


def _row(table, obj, eq, mul, add, times=1):
    return Row(table, obj, eq, F(mul), F(add), F(mul) + F(add), F(times))


def _solve_row(table, obj, eq, total):
    return Row(table, obj, eq, None, None, F(total), F(1))


def _chol(x):
    """Solve cost of one block row of width x of the factor, summed over its rows, (B.8):
    sum_{k=1}^{w} [(x-k+1)^2 + 4(x-k+1) - 2] = G(x) - G(x-w), G(x) = x^3/3 + 5x^2/2 + x/6."""
    return cube_sq_lin(x, F(5, 2), F(1, 6), 0)


def breakdown(parents, dofs=None, form=None, K=None) -> list:
    """The rows of the component tables whose sum the formula (4.1)-(4.7) is. For ITR-M/ITR-G
    the multiplicities (`times`) of the rows of tables 4.6/4.7 are a reconstruction: the ones
    with which the rows add up to (4.4)/(4.5). Non-root counts (N-1 in the tables) are
    N - R. See `TABLE_VS_FORMULA` for the two forms whose printed formula is not the sum."""
    t, form = count_arguments(parents, dofs, form)
    if not isinstance(t, Tree):
        raise TypeError("breakdown needs a Tree (the tables' rows read the parent array)")
    f = form_name(form)
    N, n, R = t.N, t.n, len(t.roots)
    Nn = N - R                                  # bodies with a parent body (the tables' N - 1)
    eta, tau, kap, d = t.eta, t.tau, t.kappa, t.dofs
    nonroot = [i for i in t.bodies if kap[i] != 0]
    kin41 = [_row("4.1", "v", "(1.11)", 24 * N, 24 * N), _row("4.1", "w^", "(1.33)", 36 * N, 39 * N),
             _row("4.1", "F^", "(2.14)", 54 * N, 45 * N)]
    chol_M = _solve_row("B", "qdd (sparse Cholesky of M)", "(B.8)",
                        sum(_chol(eta[i]) for i in t.bodies) - sum(_chol(eta[kap[i]]) for i in nonroot))
    dE = sum(eta[i] ** 2 - eta[kap[i]] ** 2 for i in t.bodies)
    sum_tau, sum_eta = sum(tau[1:]), sum(eta[1:])
    sum_etak = sum(eta[kap[i]] for i in nonroot)
    M_cbm = _row("4.2", "M", "(2.19)", 3 * (dE + 8 * sum_tau + n), 3 * (dE + 6 * sum_tau + n))
    Fstar = _row("4.2", "F^*", "(2.22)", 24 * Nn, 24 * Nn)
    Mstar = _row("4.2", "M^*", "(2.20)", 87 * Nn, 70 * Nn)
    Q_cbm = _row("4.2", "Q", "(2.21)", 6 * n, 6 * n)
    if f == "direct":
        return kin41 + [
            _row("4.2", "B", "(1.31)", 24 * sum_etak, 18 * sum_etak),
            _row("4.2", "Q", "(2.12)", 6 * sum_eta, 6 * sum_eta),
            _row(
                "4.2", "M", "(2.11)", 3 * sum(e * e + 8 * e for e in eta[1:]), 3 * sum(e * e + 6 * e for e in eta[1:])
            ),
            chol_M,
        ]
    if f == "composite":
        return kin41 + [Fstar, Mstar, Q_cbm, M_cbm, chol_M]
    if f == "lagrange1":
        mu, m = t.mu, t.m
        mm = 6 * N - n
        return [
            _row("4.4", "v", "(1.11)", 24 * N, 24 * N),
            _row("4.4", "w'", "(1.12)", 30 * N, 27 * N),
            _row("4.4", "F'", "(1.36)", 30 * N, 21 * N),
            _row(
                "4.4", "H", "(2.24)", sum(3 * x * x + 27 * x for x in mu[1:]), sum(3 * x * x + 21 * x for x in mu[1:])
            ),
            _row("4.4", "R", "(2.25)", sum(6 * x + 24 for x in mu[1:]), sum(6 * x + 24 for x in mu[1:])),
            _solve_row(
                "4.4",
                "lambda (sparse Cholesky of H)",
                "(B.8)",
                sum(_chol(x) for x in mu[1:]) - sum(_chol(m[i]) for i in nonroot),
            ),
            _row("4.4", "w", "(1.45)", 6 * mm + 48 * N - 24 * R, 6 * mm + 42 * N - 24 * R),
            _row("4.4", "qdd", "(1.44)", 6 * n + 24 * N, 6 * n + 30 * N),
        ]
    if f in ITERATIVE:
        K = iterations_of(K, f)
        common = [
            _row("4.6", "v, w^, F^ (table 4.1)", "", 114 * N, 108 * N),
            _row("4.6", "F^*, Q (table 4.2)", "", 6 * n + 24 * Nn, 6 * n + 24 * Nn)]
        tail = [
            _row("4.7", "x_0", "(2.30)", n * n, n * n - n),
            _row("4.7", "r_k^T r_k", "(2.28)", n, n - 1, K + 1),
            _row("4.7", "s_k, y_k", "(2.29)", n * n, n * n, K),
            _row("4.7", "H_k", "(2.29)", n * n + 2 * n + 1, n * n + n - 1, K),
            _row("4.7", "x_k", "(2.29)", 2 * n + 1, 2 * n, K)]
        if f == "iterative-m":
            return common + [
                _row("4.6", "M^*, M (table 4.2)", "", 3 * (dE + 8 * sum_tau + n) + 87 * Nn,
                     3 * (dE + 6 * sum_tau + n) + 70 * Nn),
                _row("4.6", "r_k", "(2.53)", dE, dE, K)] + tail
        return common + [
            _row("4.6", "u_k", "(2.54)", 6 * n + 24 * N - 24 * R, 6 * n + 18 * N - 24 * R, K + 1),
            _row("4.6", "r_k", "(2.55)", 6 * n + 48 * N - 24 * R, 6 * n + 45 * N - 24 * R, K + 1)] + tail
    kin = _row(f"4.{9 if f == 'articulated' else 10}", "v, w', F' (table 4.4)", "", 84 * N, 72 * N)
    if f == "articulated":
        return [kin,
                _row("4.9", "D, U", "(3.7)", sum(F(x ** 3 + 57 * x * x + 236 * x, 6) for x in d[1:]),
                     sum(F(x ** 3 + 48 * x * x + 161 * x, 6) for x in d[1:])),
                _row("4.9", "H, M^*, F^*", "(3.7)", sum(36 * d[i] + 600 for i in nonroot),
                     sum(36 * d[i] + 522 for i in nonroot)),
                _row("4.9", "qdd, w", "(3.8)", sum(12 * x + 60 for x in d[1:]), sum(11 * x + 60 for x in d[1:]))]
    return [kin,
            _row("4.10", "L, U, u", "(3.30)", sum(F(x ** 3 + 60 * x * x + 233 * x, 6) for x in d[1:]),
                 sum(F(x ** 3 + 51 * x * x + 230 * x, 6) for x in d[1:])),
            _row("4.10", "H, h, M^*, F^*", "(3.30)", sum(42 * d[i] + 348 for i in nonroot),
                 sum(42 * d[i] + 312 for i in nonroot)),
            _row("4.10", "qdd, w", "(3.31)", sum(F(x * x + 23 * x + 48, 2) for x in d[1:]),
                 sum(F(x * x + 25 * x + 48, 2) for x in d[1:]))]


#: sum(breakdown) - formula, where it is not 0 (as functions of the tree): the printed (4.6)
#: lacks the first row of table 4.9 (84N + 72N = 156N, the kinematics, which (4.7) does include
#: in its 864); the rows of table 4.10 sum to 1111/6 n_i where (4.7) has 1105/6 n_i.
TABLE_VS_FORMULA = {
    "articulated": lambda t: 156 * t.N,
    "ltdl": lambda t: t.n,
}


# ---------------------------------------------------------------- closed forms
def fit_polynomial(f, degree: int, points=None) -> tuple:
    """Exact coefficients (c_0, ..., c_degree) of the polynomial through (x, f(x)) at
    degree + 1 points (default 1..degree+1), e.g. the closed form in N of a family of trees:
    fit_polynomial(lambda N: count(chain(N, 1), "CBM"), 3). Check with extra points yourself."""
    xs = list(points) if points is not None else list(range(1, degree + 2))
    if len(xs) != degree + 1:
        raise ValueError("need degree + 1 points")
    A = [[F(x) ** k for k in range(degree + 1)] + [F(f(x))] for x in xs]
    size = degree + 1
    for c in range(size):                   # Gauss-Jordan, exact
        p = next(r for r in range(c, size) if A[r][c] != 0)
        A[c], A[p] = A[p], A[c]
        A[c] = [v / A[c][c] for v in A[c]]
        for r in range(size):
            if r != c and A[r][c] != 0:
                A[r] = [a - A[r][c] * b for a, b in zip(A[r], A[c])]
    return tuple(A[k][size] for k in range(size))
