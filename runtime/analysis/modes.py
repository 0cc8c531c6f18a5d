"""Modes and frequency response of a linear model M q'' + C q' + K q = f (dissertation 5.2).

Undamped modes: the generalized eigenproblem K phi = omega^2 M phi (omega in rad/s, the
`angular_frequencies` of docs/api.md). Damped modes: the eigenvalues lambda = beta + i omega_d of
A = [[0, E], [-M^-1 K, -M^-1 C]], matched one to one to the undamped modes (the assignment
nearest to -zeta omega + i omega sqrt(1 - zeta^2) with the modal damping zeta = phi^T C phi /
(2 omega phi^T M phi)); per mode:

    frequencies        omega_d / 2 pi, Hz (damped)       decay_rates      beta = Re lambda, 1/s
    damping_ratios     -Re lambda / |lambda|             log_decrements   2 pi |beta| / omega_d
    half_amplitude_times  -ln 2 / beta (the dissertation's table 5.4 column: the time the amplitude halves)
    shapes             phi, normalized to a largest entry of +1, one column per mode

A decay rate within rounding of the eigensolver (|beta| <= ZERO_DECAY x the largest |lambda|:
an undamped mode of a model whose A is solved by a general eigensolver) is 0 (`undamped`): its
damping ratio and log decrement 0, its half-amplitude time inf, in the API, the tables and the
plots alike.

The frequency response H(i w) = (K - w^2 M + i w C)^-1 B between named inputs (unit
generalized forces on coordinates, or given columns of B) and outputs (coordinates, or
`der(<coordinate>)` for rates) gives the amplitude-frequency characteristic of the
dissertation's fig. 5.8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import scipy.linalg as sla

from dynamica.files import atomic_path, write_atomic

#: |Re lambda| at most this times the largest |lambda| is rounding of the eigensolver: 0
#: (compute_state_modes also calls a root growing only above it)
ZERO_DECAY = 1e-12


def undamped(lam) -> np.ndarray:
    """The eigenvalues lam with the real parts within rounding (|Re| <= ZERO_DECAY x max |lam|)
    set to 0: the one rule of zero damping of every mode's decay rate, damping ratio, log
    decrement and half-amplitude time."""
    lam = np.asarray(lam, dtype=complex)
    scale = float(np.max(np.abs(lam), initial=0.0))
    return np.where(np.abs(lam.real) <= ZERO_DECAY * scale, 0.0 + 1j * lam.imag, lam)


@dataclass
class Modes:
    coordinates: tuple
    angular_frequencies: np.ndarray     # rad/s, undamped (nan: an unstable mode, omega^2 < 0)
    omega_squared: np.ndarray           # the eigenvalues of (K, M)
    eigenvalues: np.ndarray             # complex lambda of A matched to each mode
    shapes: np.ndarray                  # (n, modes), real, largest entry +1
    complex_shapes: np.ndarray          # (n, modes), the q-part of A's eigenvectors, largest entry 1
    info: dict = field(default_factory=dict)

    def __len__(self):
        return len(self.angular_frequencies)

    @property
    def decay_rates(self) -> np.ndarray:
        return self.eigenvalues.real

    @property
    def frequencies(self) -> np.ndarray:
        return np.abs(self.eigenvalues.imag) / (2 * math.pi)

    @property
    def damping_ratios(self) -> np.ndarray:
        mag = np.abs(self.eigenvalues)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(mag > 0, -self.eigenvalues.real / mag + 0.0, np.nan)

    @property
    def log_decrements(self) -> np.ndarray:
        wd = np.abs(self.eigenvalues.imag)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(wd > 0, -2 * math.pi * self.eigenvalues.real / wd + 0.0, np.inf)

    @property
    def half_amplitude_times(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.where(self.eigenvalues.real != 0, -math.log(2) / self.eigenvalues.real, np.inf)

    def dominant(self, k, share=0.3) -> tuple:
        """The coordinates mode k moves most (entries at least `share` of its largest)."""
        v = np.abs(self.shapes[:, k])
        return tuple(c for c, x in zip(self.coordinates, v) if x >= share * v.max())

    def rows(self) -> list:
        return [{"mode": k + 1, "f_Hz": self.frequencies[k], "omega_rad_s": self.angular_frequencies[k],
                 "decay_1_s": self.decay_rates[k], "damping_ratio": self.damping_ratios[k],
                 "log_decrement": self.log_decrements[k], "half_amplitude_s": self.half_amplitude_times[k],
                 **{f"shape[{c}]": self.shapes[j, k] for j, c in enumerate(self.coordinates)}}
                for k in range(len(self))]

    def table(self) -> str:
        head = (f"{'k':>3s} {'f, Hz':>11s} {'omega, rad/s':>13s} {'beta, 1/s':>11s} {'zeta':>9s} {'log dec':>9s} "
                f"{'-ln2/beta, s':>12s}  shape (entries >= 0.3 x the largest)")
        lines = [head]
        for k in range(len(self)):
            shape = ", ".join(f"{c} {self.shapes[self.coordinates.index(c), k]:+.3f}" for c in self.dominant(k))
            lines.append(f"{k + 1:3d} {self.frequencies[k]:11.5g} {self.angular_frequencies[k]:13.6g} "
                         f"{self.decay_rates[k] + 0.0:11.4g} {self.damping_ratios[k] + 0.0:9.4g} "
                         f"{self.log_decrements[k] + 0.0:9.4g} "
                         f"{self.half_amplitude_times[k]:12.4g}  {shape}")
        return "\n".join(lines)

    def to_csv(self, path):
        rows = self.rows()
        keys = list(rows[0]) if rows else ["mode"]
        text = ",".join(keys) + "\n" + "".join(",".join(f"{r[k]:.12g}" for k in keys) + "\n" for r in rows)
        write_atomic(path, text)

    def plot(self, path, modes=None):
        """Bar charts of the mode shapes, one panel per mode (default: up to the first 8)."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        ks = list(range(min(len(self), 8))) if modes is None else list(modes)
        fig, axes = plt.subplots(len(ks), 1, figsize=(max(6.0, 0.35 * len(self.coordinates) + 2), 1.8 * len(ks) + 0.6),
                                 squeeze=False)
        x = np.arange(len(self.coordinates))
        for ax, k in zip(axes[:, 0], ks):
            ax.bar(x, self.shapes[:, k], color="tab:blue")
            ax.axhline(0.0, color="black", lw=0.5)
            ax.set_ylabel(f"mode {k + 1}")
            ax.set_title(f"f = {self.frequencies[k]:.4g} Hz, zeta = {self.damping_ratios[k]:.3g}", fontsize=9)
            ax.set_xticks(x)
            ax.set_xticklabels(self.coordinates if ax is axes[-1, 0] else [], rotation=90 if len(x) > 8 else 0)
        fig.tight_layout()
        save_figure(fig, path)


def save_figure(fig, path):
    """A matplotlib figure to `path` (format by its suffix) under a temporary name, renamed when
    complete (dynamica.files.atomic_path), and closed: every plot of the analyses is saved here."""
    import matplotlib.pyplot as plt
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=str(path).rsplit(".", 1)[-1])
    plt.close(fig)


def _normalize(v) -> np.ndarray:
    """v scaled so that its entry of largest magnitude is +1 (complex: real and positive)."""
    k = int(np.argmax(np.abs(v)))
    return v / v[k] if v[k] != 0 else v


def compute_modes(M, C, K, coordinates) -> Modes:
    """The modes of M q'' + C q' + K q = 0 (module docstring), sorted by undamped frequency."""
    M, C, K = (np.asarray(a, dtype=float) for a in (M, C, K))
    n = len(M)
    if n == 0:
        empty = np.zeros(0)
        return Modes(
            tuple(coordinates), empty, empty, empty.astype(complex), np.zeros((0, 0)), np.zeros((0, 0), complex)
        )
    symmetric = np.allclose(K, K.T, rtol=1e-10, atol=1e-12 * max(1.0, np.abs(K).max()))
    if symmetric:
        w2, phi = sla.eigh((K + K.T) / 2, M)
    else:
        w2, phi = sla.eig(K, M)
        order = np.argsort(w2.real)
        w2, phi = w2[order].real, phi[:, order].real
    omega = np.where(w2 >= 0, np.sqrt(np.abs(w2)), np.nan)
    if not np.any(C):              # undamped: lambda = i omega (or the growing root) exactly
        lam = np.where(w2 >= 0, 1j * np.sqrt(np.abs(w2)), np.sqrt(np.abs(w2)) + 0j)
        vec = np.vstack([phi, phi * lam[None, :]]).astype(complex)
    else:
        from dynamica.runtime.analysis.expm import state_matrix
        lam, vec = sla.eig(state_matrix(M, C, K))
        lam, vec = _match(lam, vec, w2, phi, M, C, n)
    shapes = np.array([_normalize(phi[:, k]) for k in range(n)]).T
    cshapes = np.array([_normalize(vec[:n, k]) for k in range(n)]).T
    return Modes(tuple(coordinates), omega, w2, undamped(lam), shapes, cshapes,
                 info={"symmetric_stiffness": bool(symmetric)})


def _match(lam, vec, w2, phi, M, C, n):
    """The eigenvalue of A (Im >= 0) of each undamped mode: nearest to the modal-damping guess."""
    from scipy.optimize import linear_sum_assignment
    scale = max(float(np.max(np.abs(lam), initial=0.0)), 1e-300)
    keep = lam.imag >= -1e-10 * scale
    cand, cvec = lam[keep], vec[:, keep]
    guess = np.empty(n, dtype=complex)
    for k in range(n):
        p = phi[:, k]
        w = math.sqrt(abs(w2[k]))
        zeta = float(p @ C @ p) / (2 * w * float(p @ M @ p)) if w > 0 else 0.0
        if w2[k] < 0:
            guess[k] = w                                  # unstable: the growing real root
        elif zeta < 1:
            guess[k] = w * complex(-zeta, math.sqrt(1 - zeta ** 2))
        else:
            guess[k] = -w * (zeta - math.sqrt(zeta ** 2 - 1))
    cost = np.abs(guess[:, None] - cand[None, :]) / np.maximum(np.abs(guess)[:, None], 1e-12 * scale)
    if cand.size < n:                                     # cannot happen for real M, C, K; be safe
        raise ValueError("fewer eigenvalues than modes")
    rows, cols = linear_sum_assignment(cost)
    out = np.empty(n, dtype=complex)
    outv = np.empty((vec.shape[0], n), dtype=complex)
    out[rows], outv[:, rows] = cand[cols], cvec[:, cols]
    return out, outv


# ------------------------------------------------------------------ frequency response
@dataclass
class FrequencyResponse:
    frequencies: np.ndarray          # Hz
    inputs: tuple
    outputs: tuple
    response: np.ndarray             # complex (len(frequencies), len(outputs), len(inputs))

    @property
    def amplitude(self) -> np.ndarray:
        return np.abs(self.response)

    @property
    def phase(self) -> np.ndarray:
        """Degrees, unwrapped along frequency."""
        return np.degrees(np.unwrap(np.angle(self.response), axis=0))

    def peaks(self, output=0, input=0) -> np.ndarray:
        """Frequencies (Hz) of the local maxima of one amplitude curve."""
        a = self.amplitude[:, output, input]
        k = np.flatnonzero((a[1:-1] > a[:-2]) & (a[1:-1] >= a[2:])) + 1
        return self.frequencies[k]

    def to_csv(self, path):
        cols = [f"|{o}/{i}|" for i in self.inputs for o in self.outputs] + \
               [f"phase({o}/{i}) deg" for i in self.inputs for o in self.outputs]
        amp, ph = self.amplitude, self.phase
        lines = ["f_Hz," + ",".join(cols)]
        for k, f in enumerate(self.frequencies):
            vals = [amp[k, o, i] for i in range(len(self.inputs)) for o in range(len(self.outputs))]
            vals += [ph[k, o, i] for i in range(len(self.inputs)) for o in range(len(self.outputs))]
            lines.append(f"{f:.10g}," + ",".join(f"{v:.10g}" for v in vals))
        write_atomic(path, "\n".join(lines) + "\n")

    def plot(self, path, log=True):
        """The amplitude-frequency characteristic (fig. 5.8): one panel per input, a curve per output."""
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(len(self.inputs), 1, figsize=(7.0, 3.0 * len(self.inputs)), squeeze=False)
        for i, ax in enumerate(axes[:, 0]):
            for o, name in enumerate(self.outputs):
                ax.plot(self.frequencies, self.amplitude[:, o, i], label=name)
            if log:
                ax.set_yscale("log")
            ax.set_xlabel("frequency, Hz")
            ax.set_ylabel(f"amplitude per unit {self.inputs[i]}")
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        fig.tight_layout()
        save_figure(fig, path)


def input_matrix(coordinates, inputs, basis=None) -> tuple:
    """(names, B (n, k)) of inputs: coordinate names (a unit generalized force each) or a
    mapping name -> a column of n generalized forces. basis (T, names of the model's coordinates)
    of a model linearised in independent coordinates z (q = q* + T z, closed loops): a unit force
    on any of the model's coordinates, T^T e_j (e_j itself for an independent one)."""
    n = len(coordinates)
    if isinstance(inputs, str):
        inputs = [inputs]
    if isinstance(inputs, dict):
        names = tuple(inputs)
        cols = [np.asarray(v, dtype=float).reshape(-1) for v in inputs.values()]
        bad = [k for k, c in zip(names, cols) if c.shape != (n,)]
        if bad:
            raise ValueError(f"input {bad[0]!r} must be {n} generalized forces ({', '.join(coordinates)})")
        return names, np.array(cols).T.reshape(n, len(cols))
    names = tuple(inputs)
    T, full = basis if basis is not None and basis[0] is not None else (None, ())
    unknown = [c for c in names if c not in coordinates and c not in full]
    if unknown:
        also = (f" or of the model ({', '.join(full)}: forces on them act through the loops)"
                if T is not None and tuple(full) != tuple(coordinates) else "")
        raise ValueError(f"unknown input(s) {', '.join(map(repr, unknown))}: an input is a coordinate (a unit "
                         f"generalized force on it) of {', '.join(coordinates)}{also}, or a mapping name -> forces")
    B = np.zeros((n, len(names)))
    for j, c in enumerate(names):
        if c in coordinates:
            B[coordinates.index(c), j] = 1.0
        else:
            B[:, j] = T[list(full).index(c)]
    return names, B


def output_matrix(coordinates, outputs, basis=None) -> tuple:
    """(names, Cq, Cv): output = Cq q + Cv q' for coordinates and `der(<coordinate>)`; with a
    basis (as `input_matrix`), any of the model's coordinates: the row of T."""
    n = len(coordinates)
    T, full = basis if basis is not None and basis[0] is not None else (None, ())
    names = (outputs,) if isinstance(outputs, str) else tuple(outputs)
    Cq, Cv = np.zeros((len(names), n)), np.zeros((len(names), n))
    for k, name in enumerate(names):
        rate = name.startswith("der(") and name.endswith(")")
        c = name[4:-1] if rate else name
        if c in coordinates:
            (Cv if rate else Cq)[k, coordinates.index(c)] = 1.0
        elif c in full:
            (Cv if rate else Cq)[k] = T[list(full).index(c)]
        else:
            also = (
                f" or of the model ({', '.join(full)})" if T is not None and tuple(full) != tuple(coordinates) else ""
            )
            raise ValueError(f"unknown output {name!r}: an output is a coordinate or der(<coordinate>) of "
                             f"{', '.join(coordinates)}{also}")
    return names, Cq, Cv


def default_frequencies(modes: Modes, count=2000) -> np.ndarray:
    """Hz: from a tenth of the lowest to twice the highest natural frequency, denser near each."""
    f = modes.angular_frequencies[np.isfinite(modes.angular_frequencies)] / (2 * math.pi)
    f = f[f > 0]
    if f.size == 0:
        return np.linspace(0.01, 10.0, count)
    grid = np.geomspace(f.min() / 10, f.max() * 2, count)
    zeta = np.nan_to_num(np.abs(modes.damping_ratios), nan=0.0)
    near = [fk * (1 + np.linspace(-5, 5, 101) * max(z, 1e-4)) for fk, z in
            zip(modes.angular_frequencies / (2 * math.pi), zeta) if np.isfinite(fk) and fk > 0]
    out = np.unique(np.concatenate([grid] + near))
    return out[(out >= grid[0]) & (out <= grid[-1])]           # heavy damping: not below the grid, not <= 0


def frequency_response(M, C, K, coordinates, inputs, outputs=None, frequencies=None, modes=None,
                       basis=None) -> FrequencyResponse:
    """H(i w) = C (K - w^2 M + i w C)^-1 B at `frequencies` (Hz; default around the modes); basis:
    (T, the model's coordinate names) of independent coordinates, see `input_matrix`."""
    M, C, K = (np.asarray(a, dtype=float) for a in (M, C, K))
    in_names, B = input_matrix(coordinates, inputs, basis)
    out_names, Cq, Cv = output_matrix(coordinates, coordinates if outputs is None else outputs, basis)
    if frequencies is None:
        frequencies = default_frequencies(modes if modes is not None else compute_modes(M, C, K, coordinates))
    f = np.asarray(frequencies, dtype=float).reshape(-1)
    H = np.empty((len(f), len(out_names), len(in_names)), dtype=complex)
    for k, fk in enumerate(f):
        w = 2 * math.pi * fk
        X = np.linalg.solve(K - w * w * M + 1j * w * C, B)
        H[k] = Cq @ X + 1j * w * (Cv @ X)
    return FrequencyResponse(f, in_names, out_names, H)


# ------------------------------------------------------------------ first-order models (extra states and inputs)
def compute_state_modes(A, coordinates, states) -> Modes:
    """The modes of x' = A x, x = [q, q', s] (the linearisation of a model with extra states):
    one per complex pair (Im lambda > 0) and one per real eigenvalue, sorted by |lambda|;
    `angular_frequencies` |lambda| (the undamped frequency of a pair; of a real root, its rate;
    nan for a growing one, as for an unstable second-order mode),
    shapes over the coordinates and the states (the q and s parts of the eigenvector)."""
    A = np.asarray(A, dtype=float)
    n, k = len(coordinates), len(states)
    lam, vec = sla.eig(A)
    scale = max(float(np.max(np.abs(lam), initial=0.0)), 1e-300)
    real = np.abs(lam.imag) <= 1e-10 * scale
    keep = real | (lam.imag > 0)
    lam, vec = undamped(np.where(real, lam.real + 0j, lam))[keep], vec[:, keep]
    order = np.lexsort((lam.real, np.abs(lam)))
    lam, vec = lam[order], vec[:, order]
    parts = np.vstack([vec[:n], vec[2 * n:2 * n + k]])
    cshapes = np.array([_normalize(parts[:, j]) for j in range(len(lam))]).T.reshape(n + k, len(lam))
    shapes = np.array([_normalize(parts[:, j].real if np.any(parts[:, j].real) else parts[:, j].imag)
                       for j in range(len(lam))]).T.reshape(n + k, len(lam))
    mag = np.abs(lam)
    growing = lam.real > 1e-12 * scale
    w2 = np.where(growing, -mag ** 2, mag ** 2)                 # < 0 and omega nan: an unstable mode
    return Modes(tuple(coordinates) + tuple(states), np.where(growing, np.nan, mag), w2, lam, shapes, cshapes,
                 info={"first_order": True, "state_size": len(A)})


def state_frequency_response(
    A, B, state_names, inputs, outputs=None, frequencies=None, modes=None
) -> FrequencyResponse:
    """H(i w) = C (i w E - A)^-1 B of x' = A x + B u: `inputs` the names of the columns of B,
    outputs state names ([q, der(q), s]; default the coordinates' entries)."""
    ins = (inputs,) if isinstance(inputs, str) else tuple(inputs)
    outs = tuple(state_names) if outputs is None else ((outputs,) if isinstance(outputs, str) else tuple(outputs))
    bad = [o for o in outs if o not in state_names]
    if bad:
        raise ValueError(f"unknown output(s) {', '.join(map(repr, bad))}: an output is one of {', '.join(state_names)}")
    Bu = np.asarray(B, dtype=float).reshape(len(A), len(ins))
    rows = [state_names.index(o) for o in outs]
    if frequencies is None:
        frequencies = default_frequencies(modes)
    f = np.asarray(frequencies, dtype=float).reshape(-1)
    E = np.eye(len(A))
    H = np.empty((len(f), len(outs), len(ins)), dtype=complex)
    for j, fk in enumerate(f):
        try:
            H[j] = np.linalg.solve(2j * math.pi * fk * E - A, Bu)[rows]
        except np.linalg.LinAlgError:
            raise ValueError(f"the response is unbounded at {fk:g} Hz: i 2 pi f is an eigenvalue of A there (a "
                             "rigid-body or integrating mode at 0 Hz); leave that frequency out") from None
    return FrequencyResponse(f, ins, outs, H)
