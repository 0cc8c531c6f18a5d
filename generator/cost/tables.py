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
    if f not in COMPONENT_TABLES:
        raise ValueError(f"form `{form}` has no component tables in chapter 4 (tables for: "
                         f"{', '.join(COMPONENT_TABLES)})")
    return COMPONENT_TABLES[f](_Sums(t), iterations_of(K, f) if f in ITERATIVE else None)


class _Sums:
    """The tree's counts and sums that the rows read: N, n, R roots, Nn = N - R bodies with a
    parent body (the tables' N - 1), eta/tau/kappa/dofs per body, and their sums."""

    def __init__(self, t: Tree):
        self.t, self.N, self.n, self.R = t, t.N, t.n, len(t.roots)
        self.Nn = self.N - self.R
        eta, tau, kap = t.eta, t.tau, t.kappa
        self.nonroot = [i for i in t.bodies if kap[i] != 0]
        self.dE = sum(eta[i] ** 2 - eta[kap[i]] ** 2 for i in t.bodies)
        self.sum_tau, self.sum_eta = sum(tau[1:]), sum(eta[1:])
        self.sum_etak = sum(eta[kap[i]] for i in self.nonroot)

    def kin41(self):
        N = self.N
        return [_row("4.1", "v", "(1.11)", 24 * N, 24 * N), _row("4.1", "w^", "(1.33)", 36 * N, 39 * N),
                _row("4.1", "F^", "(2.14)", 54 * N, 45 * N)]

    def chol_M(self):
        eta, kap = self.t.eta, self.t.kappa
        return _solve_row("B", "qdd (sparse Cholesky of M)", "(B.8)",
                          sum(_chol(eta[i]) for i in self.t.bodies) - sum(_chol(eta[kap[i]]) for i in self.nonroot))

    def M_cbm(self):
        return _row("4.2", "M", "(2.19)", 3 * (self.dE + 8 * self.sum_tau + self.n),
                    3 * (self.dE + 6 * self.sum_tau + self.n))


def _direct(s: _Sums, K):                                   # DRT: tables 4.1, 4.2, (B.8)
    eta = s.t.eta
    return s.kin41() + [
        _row("4.2", "B", "(1.31)", 24 * s.sum_etak, 18 * s.sum_etak),
        _row("4.2", "Q", "(2.12)", 6 * s.sum_eta, 6 * s.sum_eta),
        _row("4.2", "M", "(2.11)", 3 * sum(e * e + 8 * e for e in eta[1:]), 3 * sum(e * e + 6 * e for e in eta[1:])),
        s.chol_M(),
    ]


def _composite(s: _Sums, K):                                # CBM: tables 4.1, 4.2, (B.8)
    return s.kin41() + [_row("4.2", "F^*", "(2.22)", 24 * s.Nn, 24 * s.Nn),
                        _row("4.2", "M^*", "(2.20)", 87 * s.Nn, 70 * s.Nn),
                        _row("4.2", "Q", "(2.21)", 6 * s.n, 6 * s.n), s.M_cbm(), s.chol_M()]


def _lagrange1(s: _Sums, K):                                # LGR: table 4.4, (B.8)
    N, R, mu, m = s.N, s.R, s.t.mu, s.t.m
    mm = 6 * N - s.n
    return [
        _row("4.4", "v", "(1.11)", 24 * N, 24 * N),
        _row("4.4", "w'", "(1.12)", 30 * N, 27 * N),
        _row("4.4", "F'", "(1.36)", 30 * N, 21 * N),
        _row("4.4", "H", "(2.24)", sum(3 * x * x + 27 * x for x in mu[1:]), sum(3 * x * x + 21 * x for x in mu[1:])),
        _row("4.4", "R", "(2.25)", sum(6 * x + 24 for x in mu[1:]), sum(6 * x + 24 for x in mu[1:])),
        _solve_row("4.4", "lambda (sparse Cholesky of H)", "(B.8)",
                   sum(_chol(x) for x in mu[1:]) - sum(_chol(m[i]) for i in s.nonroot)),
        _row("4.4", "w", "(1.45)", 6 * mm + 48 * N - 24 * R, 6 * mm + 42 * N - 24 * R),
        _row("4.4", "qdd", "(1.44)", 6 * s.n + 24 * N, 6 * s.n + 30 * N),
    ]


def _iterative_common(s: _Sums):                            # ITR: the first rows of table 4.6
    return [_row("4.6", "v, w^, F^ (table 4.1)", "", 114 * s.N, 108 * s.N),
            _row("4.6", "F^*, Q (table 4.2)", "", 6 * s.n + 24 * s.Nn, 6 * s.n + 24 * s.Nn)]


def _iterative_tail(s: _Sums, K):                           # ITR: table 4.7, K iterations
    n = s.n
    return [_row("4.7", "x_0", "(2.30)", n * n, n * n - n),
            _row("4.7", "r_k^T r_k", "(2.28)", n, n - 1, K + 1),
            _row("4.7", "s_k, y_k", "(2.29)", n * n, n * n, K),
            _row("4.7", "H_k", "(2.29)", n * n + 2 * n + 1, n * n + n - 1, K),
            _row("4.7", "x_k", "(2.29)", 2 * n + 1, 2 * n, K)]


def _iterative_m(s: _Sums, K):                              # ITR-M: residual with M (2.53)
    return _iterative_common(s) + [
        _row("4.6", "M^*, M (table 4.2)", "", 3 * (s.dE + 8 * s.sum_tau + s.n) + 87 * s.Nn,
             3 * (s.dE + 6 * s.sum_tau + s.n) + 70 * s.Nn),
        _row("4.6", "r_k", "(2.53)", s.dE, s.dE, K)] + _iterative_tail(s, K)


def _iterative_g(s: _Sums, K):                              # ITR-G: recursive residual (2.54)-(2.55)
    n, N, R = s.n, s.N, s.R
    return _iterative_common(s) + [
        _row("4.6", "u_k", "(2.54)", 6 * n + 24 * N - 24 * R, 6 * n + 18 * N - 24 * R, K + 1),
        _row("4.6", "r_k", "(2.55)", 6 * n + 48 * N - 24 * R, 6 * n + 45 * N - 24 * R, K + 1)] + _iterative_tail(s, K)


def _articulated(s: _Sums, K):                              # ABM: table 4.9
    d = s.t.dofs
    return [_row("4.9", "v, w', F' (table 4.4)", "", 84 * s.N, 72 * s.N),
            _row("4.9", "D, U", "(3.7)", sum(F(x ** 3 + 57 * x * x + 236 * x, 6) for x in d[1:]),
                 sum(F(x ** 3 + 48 * x * x + 161 * x, 6) for x in d[1:])),
            _row("4.9", "H, M^*, F^*", "(3.7)", sum(36 * d[i] + 600 for i in s.nonroot),
                 sum(36 * d[i] + 522 for i in s.nonroot)),
            _row("4.9", "qdd, w", "(3.8)", sum(12 * x + 60 for x in d[1:]), sum(11 * x + 60 for x in d[1:]))]


def _ltdl(s: _Sums, K):                                     # DEC: table 4.10
    d = s.t.dofs
    return [_row("4.10", "v, w', F' (table 4.4)", "", 84 * s.N, 72 * s.N),
            _row("4.10", "L, U, u", "(3.30)", sum(F(x ** 3 + 60 * x * x + 233 * x, 6) for x in d[1:]),
                 sum(F(x ** 3 + 51 * x * x + 230 * x, 6) for x in d[1:])),
            _row("4.10", "H, h, M^*, F^*", "(3.30)", sum(42 * d[i] + 348 for i in s.nonroot),
                 sum(42 * d[i] + 312 for i in s.nonroot)),
            _row("4.10", "qdd, w", "(3.31)", sum(F(x * x + 23 * x + 48, 2) for x in d[1:]),
                 sum(F(x * x + 25 * x + 48, 2) for x in d[1:]))]


#: form -> its component tables' rows `(sums, K) -> [Row]` (K: iterations, for the iterative forms)
COMPONENT_TABLES = {"direct": _direct, "composite": _composite, "lagrange1": _lagrange1,
                    "iterative-m": _iterative_m, "iterative-g": _iterative_g,
                    "articulated": _articulated, "ltdl": _ltdl}


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
