"""The matrix-exponential integrator for linear multi-mass chains (Grigoriev, Gevorkyan 2011) for linear systems

    M x'' + C x' + K x = f(t)                                                    (1)

with a wide spectrum (chains: railway trains, chain drives), where explicit schemes need
tiny steps and implicit ones smear the high frequencies. One step of length h is exact up to
the forcing's polynomial approximation b(t) = sum_k b_k (t_{j+1} - t)^(k-1) on the step:

    y_{j+1} = D_0 y_j + sum_{k=1..p} h^k D_k b_k                                   (7)
    D_0 = exp(B h),  D_k = int_0^1 exp(B h s) s^(k-1) ds                           (8)

The D_k are formed once: by the truncated series on the fractional step Delta = h / 2^m,
D_k = sum_{l=0..r} (B Delta)^l / (l! (l + k))  (9), and m doublings
D_k(2 Delta) = 2^-k [D_k + sum_{l=1..k} C(k-1, l-1) D_l D_0],  D_0(2 Delta) = D_0^2  (10)-(12),
carried as D^_0 = D_0 - E, D^_k = D_k - E/k so that no accuracy is lost. The order r and
the number of doublings come from the optimal fractional step (18)-(19) of the method's published table:
omega_M Delta = (r + 2)/2^(r+1) with error eps_m = ((r + 2)/2^(r+1))^r / (r + 1)!, omega_M
the spectral bound sqrt(tr M^-1 C)^2 + tr M^-1 K) (the trace of a positive matrix bounds its
largest eigenvalue; seed, after (17)).

Symmetric M, C, K use the method's structure (13)-(15): in mass-normalized variables y = [L^T x;
L^T x'] (M = L L^T), B = [[0, E], [-C^, -F^]] with symmetric C^ = L^-1 K L^-T, F^ = L^-1 C L^-T,
and every function of B is [[U + W F^, W], [-W C^, U]] with two symmetric n x n blocks: a
product is W = U1 W2 + W1 U2 + W1 F^ W2, U = U1 U2 - W1 C^ W2 (15), half the work of 2n x 2n
products. Banded C^, F^ (chains) keep U, W banded for the first doublings: they are sparse
matrices until their fill passes DENSE_FILL. Only the columns of D_k (k >= 1) that meet the
forcing's channels are carried (the method's truncated matrices). Other systems (non-symmetric
K or C, from a linearization with follower forces or gyroscopic terms) run the same doublings
on the 2n x 2n matrix A.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sps

#: a sparse block becomes dense when this share of its entries is filled
DENSE_FILL = 0.2
#: the largest series order considered
MAX_ORDER = 12


# ------------------------------------------------------------------ the optimal fractional step (18)-(19)
def fractional_step(r: int) -> float:
    """omega_M Delta of the optimal fractional step for series order r, (18)."""
    return (r + 2) / 2 ** (r + 1)


def step_error(r: int) -> float:
    """The relative error eps_m of one step at the optimal fractional step, (19)."""
    return fractional_step(r) ** r / math.factorial(r + 1)


def order_for(tol: float) -> int:
    """The least series order r whose error (19) is at most tol."""
    for r in range(1, MAX_ORDER + 1):
        if step_error(r) <= tol:
            return r
    return MAX_ORDER


def doublings(omega_max: float, h: float, r: int) -> int:
    """m with omega_M h / 2^m <= (18)'s fractional step."""
    x = omega_max * h / fractional_step(r)
    return 0 if x <= 1.0 else int(math.ceil(math.log2(x)))


def spectral_bound(M, C, K) -> float:
    """omega_M >= |lambda| for every eigenvalue of the pencil lambda^2 M + lambda C + K: for
    symmetric positive semidefinite C^, K^ the method's trace bound sqrt(tr F^^2 + tr C^)
    (|Im lambda| <= sqrt |C^|, |Re lambda| <= |F^|); otherwise the largest |eigenvalue| of A."""
    M, C, K = (np.asarray(x, dtype=float) for x in (M, C, K))
    if _symmetric(K) and _symmetric(C) and _symmetric(M):
        L = np.linalg.cholesky(M)
        Ch, Fh = _normalized(L, K), _normalized(L, C)
        lo_c, lo_f = np.linalg.eigvalsh(Ch)[0], np.linalg.eigvalsh(Fh)[0]
        if lo_c >= -1e-12 * max(1.0, np.trace(Ch)) and lo_f >= -1e-12 * max(1.0, np.trace(Fh)):
            return float(math.sqrt(max(np.trace(Fh), 0.0) ** 2 + max(np.trace(Ch), 0.0)))
    return float(np.max(np.abs(np.linalg.eigvals(state_matrix(M, C, K)))))


def state_matrix(M, C, K) -> np.ndarray:
    """A = [[0, E], [-M^-1 K, -M^-1 C]] of x' = A x, x = [q, q']."""
    n = len(M)
    lu = sla.lu_factor(M)
    return np.block([[np.zeros((n, n)), np.eye(n)], [-sla.lu_solve(lu, K), -sla.lu_solve(lu, C)]])


def _symmetric(X, rtol=1e-12) -> bool:
    X = np.asarray(X)
    return bool(np.max(np.abs(X - X.T), initial=0.0) <= rtol * max(np.max(np.abs(X), initial=0.0), 1e-300))


def _normalized(L, X, Linv=None):
    """L^-1 X L^-T, symmetrized."""
    Linv = sla.solve_triangular(L, np.eye(len(L)), lower=True) if Linv is None else Linv
    Y = Linv @ X @ Linv.T
    return (Y + Y.T) / 2


# ------------------------------------------------------------------ sparse-or-dense blocks
def _compact(X):
    """X as a CSR matrix while it is sparse, else as a dense array."""
    if sps.issparse(X):
        n = X.shape[0] * X.shape[1]
        return X.toarray() if n and X.nnz > DENSE_FILL * n else X.tocsr()
    return X


def _dense(X):
    return X.toarray() if sps.issparse(X) else np.asarray(X)


def _mm(a, b):
    out = a @ b
    return _compact(out) if sps.issparse(out) else np.asarray(out)


class _Blocks:
    """Functions of B = [[0, E], [-Ch, -Fh]] as (U, W): [[U + W Fh, W], [-W Ch, U]] (13)-(15)."""

    def __init__(self, Ch, Fh):
        self.Ch, self.Fh = _compact(sps.csr_matrix(Ch)), _compact(sps.csr_matrix(Fh))
        self.n = Ch.shape[0]

    def product(self, g1, g2):
        (U1, W1), (U2, W2) = g1, g2
        W1F = _mm(W1, self.Fh)
        W = _add(_add(_mm(U1, W2), _mm(W1, U2)), _mm(W1F, W2))
        U = _add(_mm(U1, U2), -_mm(_mm(W1, self.Ch), W2))
        return U, W

    def apply(self, g, X):
        """G X for a 2n x k array X."""
        U, W = g
        a, b = X[:self.n], X[self.n:]
        top = _dense(_mm(U, a)) + _dense(_mm(_mm(W, self.Fh), a)) + _dense(_mm(W, b))
        bottom = -_dense(_mm(_mm(W, self.Ch), a)) + _dense(_mm(U, b))
        return np.vstack([top, bottom])

    def series(self, delta, r, k):
        """Hat series: sum_{l=1..r} Delta^l / (l! (l + k)) (B Delta)^l's (U, W) (k = 0: 1/l!)."""
        n = self.n
        V_prev, V = sps.csr_matrix((n, n)), sps.identity(n, format="csr")       # V_0, V_1
        U = W = sps.csr_matrix((n, n))
        for l in range(1, r + 1):
            V_next = _add(-_mm(self.Ch, V_prev), -_mm(self.Fh, V))          # V_{l+1}
            c = delta ** l / math.factorial(l) / (l + k if k else 1)
            U, W = _add(U, c * V_next), _add(W, c * V)
            V_prev, V = V, V_next
        return _compact(U), _compact(W)

    def series_columns(self, delta, r, k, P):
        """Hat series applied to the 2n x c input columns P = [0; G]: sum c_l [V_l G; V_{l+1} G]."""
        G = P[self.n:]
        Vp, V = np.zeros_like(G), G.copy()
        out = np.zeros_like(P)
        for l in range(1, r + 1):
            Vn = -_dense(_mm(self.Ch, Vp)) - _dense(_mm(self.Fh, V))
            c = delta ** l / math.factorial(l) / (l + k)
            out[:self.n] += c * V
            out[self.n:] += c * Vn
            Vp, V = V, Vn
        return out

    def scale_add(self, a, g1, b, g2):
        return _add(a * g1[0], b * g2[0]), _add(a * g1[1], b * g2[1])

    def is_sparse(self, g) -> bool:
        return sps.issparse(g[0]) and sps.issparse(g[1])

    def matrix(self, g) -> np.ndarray:
        U, W = _dense(g[0]), _dense(g[1])
        return np.block([[U + _dense(_mm(W, self.Fh)), W], [-_dense(_mm(W, self.Ch)), U]])


class _Dense:
    """Functions of a general 2n x 2n matrix A, as dense matrices."""

    def __init__(self, A):
        self.A = np.asarray(A, dtype=float)

    def product(self, g1, g2):
        return g1 @ g2

    def apply(self, g, X):
        return g @ X

    def series(self, delta, r, k):
        term, out = np.eye(len(self.A)), np.zeros_like(self.A)
        for l in range(1, r + 1):
            term = term @ self.A * (delta / l)
            out += term / (l + k if k else 1)
        return out

    def series_columns(self, delta, r, k, P):
        term, out = P.copy(), np.zeros_like(P)
        for l in range(1, r + 1):
            term = self.A @ term * (delta / l)
            out += term / (l + k)
        return out

    def scale_add(self, a, g1, b, g2):
        return a * g1 + b * g2

    def matrix(self, g) -> np.ndarray:
        return g

    def is_sparse(self, g) -> bool:
        return False


def _add(a, b):
    if sps.issparse(a) and sps.issparse(b):
        return _compact(a + b)
    return _dense(a) + _dense(b)


# ------------------------------------------------------------------ the propagator
@dataclass
class Propagator:
    """exp(A h) and the forcing integrals of one step (7)-(8), formed by (9)-(12)."""
    algebra: object
    D0hat: object              # D_0 - E in the algebra's representation
    T: list                    # T[k-1] = D_k P (k = 1..p), 2n x c
    P: np.ndarray              # input columns in the state y
    h: float
    r: int
    m: int
    omega_max: float
    structured: bool
    matrix: np.ndarray = None  # D_0 - E as a dense 2n x 2n matrix, for the steps
    sparse_doublings: int = 0  # doublings done on banded (sparse) blocks

    @property
    def predicted_error(self) -> float:
        """eps of (19) scaled to the actual fractional step: 2^m (omega_M Delta)^(r+1) / (r+1)!."""
        delta = self.h / 2 ** self.m
        return 2 ** self.m * (self.omega_max * delta) ** (self.r + 1) / math.factorial(self.r + 1)

    def step(self, y, coefficients=()):
        """y_{j+1} = D_0 y_j + sum_k h^k D_k b_k (7); b_k the input values (c,) of coefficient k."""
        out = y + self.matrix @ y
        for k, b in enumerate(coefficients, start=1):
            out = out + self.h ** k * (self.T[k - 1] @ b)
        return out


def propagator(h, omega_max, r, algebra, P=None, p=0, m=None) -> Propagator:
    """D_0 (and D_k P, k = 1..p) of step h by m doublings of the order-r series (9)-(12)."""
    m = doublings(omega_max, h, r) if m is None else m
    delta = h / 2 ** m
    D0 = algebra.series(delta, r, 0)
    T = [algebra.series_columns(delta, r, k, P) for k in range(1, p + 1)] if p else []
    binom = [[math.comb(k - 1, l - 1) for l in range(1, k + 1)] for k in range(1, p + 1)]
    sparse = 0
    for _ in range(m):
        sparse += algebra.is_sparse(D0)
        if p:
            D0P = [algebra.apply(D0, t) for t in T]            # D^_0 D^_l P (the D_l commute)
            D0cols = algebra.apply(D0, P)                       # D^_0 P
            T = [0.5 ** k * (T[k - 1] + sum(binom[k - 1][l - 1] * (T[l - 1] + D0P[l - 1] + D0cols / l)
                                            for l in range(1, k + 1)))
                 for k in range(1, p + 1)]
        D0 = algebra.scale_add(2.0, D0, 1.0, algebra.product(D0, D0))          # (E + D^)^2 - E
    T = [t + P / k for k, t in enumerate(T, start=1)]                            # D_k = D^_k + E/k
    return Propagator(algebra, D0, T, P if P is not None else np.zeros((0, 0)), h, r, m, omega_max,
                      isinstance(algebra, _Blocks), algebra.matrix(D0), sparse)


# ------------------------------------------------------------------ integration of M x'' + C x' + K x = f(t)
def _poly_coefficients(f, t0, h, p):
    """b_k of b(t) = sum_k b_k (t0 + h - t)^(k-1) on [t0, t0 + h] (the method's quadrature): p = 1
    the midpoint value, p = 2 the chord of the end values, p = 3 the parabola through both ends
    and the midpoint."""
    if p == 1:
        return [f(t0 + h / 2)]
    fa, fb = f(t0), f(t0 + h)
    if p == 2:
        return [fb, (fa - fb) / h]
    fm = f(t0 + h / 2)
    b3 = 2 * (fa + fb - 2 * fm) / h ** 2
    return [fb, (fa - fb - b3 * h ** 2) / h, b3]


def integrate(M, C, K, x0, t_end, output_step, forcing=None, inputs=None, order=3, tol=1e-13, step=None,
              t0=0.0):
    """Outputs of M x'' + C x' + K x = f(t) from x0 = [x, x'] at t0, t0 + output_step, ... t_end.

    forcing: f(t) -> (n,) generalized forces, or, with `inputs` (an n x c matrix B), u(t) -> (c,)
    and f = B u. order: p, the forcing polynomial's number of coefficients (1, 2 or 3); tol: the
    error per step (19) that chooses the series order r. Returns (t, X (len(t), 2n), info).
    """
    M, C, K = (np.asarray(a, dtype=float) for a in (M, C, K))
    n = len(M)
    x0 = np.asarray(x0, dtype=float).reshape(-1)
    if x0.shape != (2 * n,):
        raise ValueError(f"x0 has {x0.shape[0]} entries, expected 2n = {2 * n} ([q, qd] deviations)")
    h, stride, steps = _stepping(order, step, output_step, t_end, t0)
    r = order_for(tol)
    omega = spectral_bound(M, C, K)
    structured = _symmetric(M) and _symmetric(C) and _symmetric(K) and np.all(np.linalg.eigvalsh(M) > 0)
    B = np.eye(n) if inputs is None else np.asarray(inputs, dtype=float).reshape(n, -1)
    if structured:                       # y = [L^T x; L^T x'], M = L L^T
        L = np.linalg.cholesky(M)
        Linv = sla.solve_triangular(L, np.eye(n), lower=True)
        algebra = _Blocks(_normalized(L, K, Linv), _normalized(L, C, Linv))
        to_y = lambda x: np.concatenate([L.T @ x[:n], L.T @ x[n:]])                      # noqa: E731
        back = Linv.T                    # x = L^-T y, applied to all outputs at once
        G = Linv @ B
    else:
        algebra = _Dense(state_matrix(M, C, K))
        to_y = lambda x: x                                                              # noqa: E731
        back = None
        G = sla.lu_solve(sla.lu_factor(M), B)
    P = np.vstack([np.zeros_like(G), G])
    ts, X, info = _run(algebra, P, omega, r, to_y(x0), x0, forcing, order, h, stride, steps, t0)
    if back is not None:
        X[1:] = np.hstack([X[1:, :n] @ back.T, X[1:, n:] @ back.T])
    return ts, X, info


def _stepping(order, step, output_step, t_end, t0) -> tuple:
    """(h, outputs every `stride` steps, steps) of an integration, the arguments checked."""
    if order not in (1, 2, 3):
        raise ValueError(f"order (the forcing polynomial's coefficients) must be 1, 2 or 3, not {order!r}")
    h = float(step or output_step)
    stride = int(round(output_step / h))
    if stride < 1 or abs(stride * h - output_step) > 1e-9 * output_step:
        raise ValueError(f"step {h} must divide output_step {output_step}")
    return h, stride, int(math.floor((t_end - t0) / h + 1e-9))


def integrate_state(A, x0, t_end, output_step, forcing=None, inputs=None, order=3, tol=1e-13, step=None, t0=0.0):
    """integrate() for a first-order linear model x' = A x + B u (the linearisation of a
    model with extra states, x = [q, q', s]): forcing u(t) -> (c,) with `inputs` B (N x c), or
    f(t) -> (N,) added to x' without it. The series and the doublings as integrate's, the
    spectral bound the largest |eigenvalue| of A."""
    A = np.asarray(A, dtype=float)
    N = len(A)
    x0 = np.asarray(x0, dtype=float).reshape(-1)
    if x0.shape != (N,):
        raise ValueError(f"x0 has {x0.shape[0]} entries, expected {N} (the deviations of the state)")
    h, stride, steps = _stepping(order, step, output_step, t_end, t0)
    P = np.eye(N) if inputs is None else np.asarray(inputs, dtype=float).reshape(N, -1)
    omega = float(np.max(np.abs(np.linalg.eigvals(A)), initial=0.0))
    return _run(_Dense(A), P, omega, order_for(tol), x0.copy(), x0, forcing, order, h, stride, steps, t0)


def _run(algebra, P, omega, r, y, x0, forcing, order, h, stride, steps, t0):
    """The steps of the propagator from y (x0 in the user's variables), outputs every `stride`."""
    p = order if forcing is not None else 0
    prop = propagator(h, omega, r, algebra, P, p)
    ts, X = [t0], [x0.copy()]
    u = (lambda t: np.asarray(forcing(t), dtype=float).reshape(-1)) if forcing is not None else None
    for j in range(steps):
        tj = t0 + j * h
        y = prop.step(y, _poly_coefficients(u, tj, h, p) if p else ())
        if (j + 1) % stride == 0:
            ts.append(t0 + (j + 1) * h)
            X.append(y)
    X = np.array(X)
    info = {"integrator": "matrix exponential with step doubling", "step": h, "series_order": r,
            "doublings": prop.m, "omega_max": omega, "predicted_step_error": prop.predicted_error,
            "table_error": step_error(r), "structured": prop.structured, "sparse_doublings": prop.sparse_doublings,
            "forcing_order": p, "steps": steps}
    return np.array(ts), X, info
