"""Identification (dissertation 5.2.5, tables 5.4 and 5.5): Prony analysis of free
oscillations and the fitting of model parameters to them.

`prony(t, y, n_modes)`: y(t) = sum_k A_k exp(beta_k (t - t0)) cos(2 pi f_k (t - t0) + phi_k) for
one or several channels sharing the poles, by the matrix pencil (Hua and Sarkar): the Hankel
matrices of the channels, stacked, are reduced by their SVD to rank 2 n_modes (the singular
values suggest the order: `suggested_modes`), the poles z_k = exp(s_k dt) are the eigenvalues of
the pencil of the shifted right singular vectors, and amplitudes and phases follow by linear
least squares. The result has the columns of table 5.4: f_k (Hz), beta_k (1/s, negative for a
decaying oscillation), -ln 2 / beta_k (s), the amplitudes per channel, their means over the
interval, and the correlation of data and fit per channel.

`identify(model, params, modes=... | records=...)`: the chosen parameters (runtime inputs of the
compiled model: no recompilation) adjusted by nonlinear least squares (scipy least_squares, trust
region, finite-difference sensitivities of the compiled model) so that the model's modes match
identified frequencies and decay rates (about its equilibrium), or its simulated response matches
records; reported like table 5.5 with standard errors from the Jacobian at the solution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np


# ------------------------------------------------------------------ Prony analysis
@dataclass
class PronyResult:
    frequencies: np.ndarray        # Hz, ascending
    decay_rates: np.ndarray        # 1/s (the dissertation's beta_k)
    amplitudes: np.ndarray         # (n_modes,) or (n_modes, k): A of A exp(beta t) cos(2 pi f t + phi)
    phases: np.ndarray             # radians at t0
    mean_amplitudes: np.ndarray    # mean of A exp(beta (t - t0)) over the interval
    correlation: np.ndarray        # per channel: data vs fit (table 5.4's K)
    singular_values: np.ndarray    # of the stacked Hankel matrix, descending
    suggested_modes: int           # from the largest gap of the singular values
    t0: float
    dt: float
    channels: tuple = ()
    poles: np.ndarray = None       # complex s_k = beta_k + i 2 pi f_k of the oscillatory terms
    extra: dict = field(default_factory=dict)   # real poles and their amplitudes, residual

    @property
    def half_amplitude_times(self) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return -math.log(2) / self.decay_rates

    @property
    def log_decrements(self) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return -self.decay_rates / self.frequencies

    def fit(self, t) -> np.ndarray:
        """The fitted signal at times t, shaped like the data."""
        t = np.asarray(t, dtype=float) - self.t0
        A = self.amplitudes.reshape(len(self.frequencies), -1)
        ph = self.phases.reshape(A.shape)
        out = np.zeros((len(t), A.shape[1]))
        for k, (b, f) in enumerate(zip(self.decay_rates, self.frequencies)):
            out += A[k] * np.exp(b * t)[:, None] * np.cos(2 * math.pi * f * t[:, None] + ph[k])
        for s, amp in zip(self.extra.get("real_poles", ()), self.extra.get("real_amplitudes", ())):
            out += np.exp(s * t)[:, None] * amp
        return out[:, 0] if self.amplitudes.ndim == 1 else out

    def table(self) -> str:
        A = self.amplitudes.reshape(len(self.frequencies), -1)
        Am = self.mean_amplitudes.reshape(A.shape)
        names = self.channels or tuple(f"y{c}" for c in range(A.shape[1]))
        head = f"{'k':>3s} {'f, Hz':>10s} {'beta, 1/s':>11s} {'-ln2/beta, s':>13s}" + "".join(
            f" {'A ' + c:>12s}" for c in names) + "".join(f" {'mean A ' + c:>14s}" for c in names)
        lines = [head]
        for k in range(len(self.frequencies)):
            lines.append(f"{k + 1:3d} {self.frequencies[k]:10.5g} {self.decay_rates[k]:11.5g} "
                         f"{self.half_amplitude_times[k]:13.5g}" + "".join(f" {a:12.5g}" for a in A[k])
                         + "".join(f" {a:14.5g}" for a in Am[k]))
        lines.append(
            "correlation of data and fit: " + ", ".join(f"{c} {r:.5f}" for c, r in zip(names, self.correlation))
        )
        sv = self.singular_values[:min(len(self.singular_values), 2 * len(self.frequencies) + 6)]
        lines.append(f"singular values (relative): {', '.join(f'{s / sv[0]:.2e}' for s in sv)}; suggested modes: "
                     f"{self.suggested_modes}")
        return "\n".join(lines)

    def to_csv(self, path):
        from dynamica.files import write_atomic
        A = self.amplitudes.reshape(len(self.frequencies), -1)
        Am = self.mean_amplitudes.reshape(A.shape)
        ph = self.phases.reshape(A.shape)
        names = self.channels or tuple(f"y{c}" for c in range(A.shape[1]))
        cols = ["k", "f_Hz", "beta_1_s", "half_amplitude_s"] + [f"A[{c}]" for c in names] + \
               [f"phase[{c}]" for c in names] + [f"mean_A[{c}]" for c in names]
        rows = [[k + 1, self.frequencies[k], self.decay_rates[k], self.half_amplitude_times[k], *A[k], *ph[k], *Am[k]]
                for k in range(len(self.frequencies))]
        write_atomic(path, ",".join(cols) + "\n" + "".join(",".join(f"{v:.12g}" for v in r) + "\n" for r in rows))


def _spacing(t) -> float:
    t = np.asarray(t, dtype=float)
    if t.ndim != 1 or len(t) < 4:
        raise ValueError("t must be a 1-D array of at least 4 equally spaced times")
    dt = np.diff(t)
    if not (np.all(dt > 0) and np.max(np.abs(dt - dt.mean())) <= 1e-6 * dt.mean()):
        raise ValueError("the samples must be equally spaced in time (Prony's method works on a uniform grid)")
    return float((t[-1] - t[0]) / (len(t) - 1))


def suggest_order(singular_values, max_order=None) -> int:
    """The number of singular values before their largest relative gap (the signal's rank)."""
    s = np.asarray(singular_values, dtype=float)
    s = s[: max_order + 1 if max_order else len(s)]
    if s.size < 2 or not s[0] > 0:
        return int(s.size)
    s = np.maximum(s, s[0] * 1e-14)              # roundoff floor: an exact rank shows as the largest gap
    return int(np.argmax(np.log(s[:-1] / s[1:])) + 1)


def _pencil_roots(Y, L, n_modes, offset):
    """The matrix pencil: the Hankel matrix of every channel (pencil L), its singular values s,
    the suggested number of modes, the number used and the p = 2 n_modes (+1) signal roots z."""
    m = Y.shape[0]
    H = np.vstack([np.array([Y[i:i + L + 1, c] for i in range(m - L)]) for c in range(Y.shape[1])])
    _, s, Vh = np.linalg.svd(H, full_matrices=False)
    suggested = max((suggest_order(s, 4 * 40) - (1 if offset else 0)) // 2, 1)
    n_modes = suggested if n_modes is None else int(n_modes)
    p = 2 * n_modes + (1 if offset else 0)
    if n_modes < 1 or p > min(L, m - L - 1):
        raise ValueError(f"{n_modes} modes need more samples: {m} samples allow at most {min(L, m - L - 1) // 2}")
    V = Vh[:p].conj().T
    return s, suggested, n_modes, np.linalg.eigvals(np.linalg.pinv(V[:-1]) @ V[1:])


def prony(t, y, n_modes=None, offset=False, pencil=None, channels=()) -> PronyResult:
    """Prony analysis by the matrix pencil (module docstring). n_modes=None: the suggested order."""
    dt = _spacing(t)
    t = np.asarray(t, dtype=float)
    Y = np.asarray(y, dtype=float)
    single = Y.ndim == 1
    Y = Y.reshape(len(t), -1)
    if Y.shape[0] != len(t) or not np.all(np.isfinite(Y)):
        raise ValueError(f"y must be finite with one row per time ({len(t)}), got shape {np.shape(y)}")
    m = len(t)
    s, suggested, n_modes, z = _pencil_roots(Y, int(pencil or m // 3), n_modes, offset)
    Z = z[None, :] ** np.arange(m)[:, None]
    amp = np.linalg.lstsq(Z, Y.astype(complex), rcond=None)[0]              # (p, k)
    fit = (Z @ amp).real
    poles = np.log(z.astype(complex)) / dt
    osc = np.flatnonzero(poles.imag > 1e-9 / dt)
    real = np.flatnonzero(np.abs(poles.imag) <= 1e-9 / dt)
    if osc.size == 0:
        raise ValueError("no oscillatory component found: the signal has no damped harmonics at this order "
                         f"(singular values suggest {suggested} modes)")
    # energy of each term over the record (a term fitting noise is weak over it)
    energy = np.sum(np.abs(amp[osc]) ** 2, axis=1) * np.sum(np.abs(Z[:, osc]) ** 2, axis=0)
    osc = osc[np.argsort(-energy)][:n_modes]
    osc = osc[np.argsort(poles[osc].imag)]
    s_k = poles[osc]
    A = 2 * np.abs(amp[osc])
    phases = np.angle(amp[osc])
    beta = s_k.real
    T = t[-1] - t[0]
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(np.abs(beta * T) > 1e-12, (np.exp(beta * T) - 1) / (beta * T), 1.0)[:, None] * A
    corr = np.array([np.corrcoef(Y[:, c], fit[:, c])[0, 1] if np.std(Y[:, c]) > 0 else 1.0 for c in range(Y.shape[1])])
    shape = (lambda a: a[:, 0]) if single else (lambda a: a)
    return PronyResult(
        frequencies=s_k.imag / (2 * math.pi),
        decay_rates=beta,
        amplitudes=shape(A),
        phases=shape(phases),
        mean_amplitudes=shape(mean),
        correlation=corr,
        singular_values=s,
        suggested_modes=suggested,
        t0=float(t[0]),
        dt=dt,
        channels=tuple(channels),
        poles=s_k,
        extra={
            "real_poles": poles[real].real,
            "real_amplitudes": amp[real].real,
            "rms_residual": float(np.sqrt(np.mean((fit - Y) ** 2))),
            "missing_modes": n_modes - len(osc),
        },
    )


# ------------------------------------------------------------------ parameter identification
@dataclass
class Identification:
    names: tuple
    values: dict                   # fitted
    initial: dict
    standard_errors: dict
    residual: np.ndarray           # at the solution (scaled, dimensionless)
    residual_norm: float
    dof: int
    nfev: int
    success: bool
    message: str
    correlation: dict = field(default_factory=dict)      # records: data vs fit per column
    info: dict = field(default_factory=dict)

    def table(self) -> str:
        lines = [f"{'parameter':>14s} {'initial':>14s} {'fitted':>14s} {'std. error':>12s} {'rel. error, %':>13s}"]
        for k in self.names:
            v, se = self.values[k], self.standard_errors[k]
            lines.append(
                f"{k:>14s} {self.initial[k]:14.6g} {v:14.8g} {se:12.4g} {100 * se / abs(v) if v else math.nan:13.4g}"
            )
        lines.append(f"residual norm {self.residual_norm:.6g} ({len(self.residual)} residuals, {self.dof} degrees of "
                     f"freedom); {self.nfev} evaluations; {self.message}")
        if self.correlation:
            lines.append(
                "correlation of data and fit: " + ", ".join(f"{c} {r:.5f}" for c, r in self.correlation.items())
            )
        return "\n".join(lines)


def _param_slots(model, names) -> list:
    """[(name, key, index)] for names `p` (a scalar parameter) or `p[k]` (a component of a vector one)."""
    out = []
    for name in names:
        base, idx = (name.split("[")[0], int(name.split("[")[1].rstrip("]"))) if "[" in name else (name, None)
        if base not in model.parameters:
            raise ValueError(f"unknown parameter {name!r}; the model {model.name!r} has "
                             f"{', '.join(model.parameters) or 'none'}")
        value = model.parameters[base]
        if isinstance(value, tuple) != (idx is not None) or (idx is not None and not 0 <= idx < len(value)):
            raise ValueError(f"parameter {name!r}: {base!r} is " + (f"a vector of {len(value)}: name a component "
                             f"{base}[k]" if isinstance(value, tuple) else "a scalar"))
        out.append((name, base, idx))
    return out


def _overrides(model, slots, values, fixed) -> dict:
    params = dict(fixed or {})
    for (name, base, idx), v in zip(slots, values):
        if idx is None:
            params[base] = float(v)
        else:
            vec = list(params.get(base, model.parameters[base]))
            vec[idx] = float(v)
            params[base] = tuple(vec)
    return params


def _modes_residual(model, slots, target, fixed, q, state):
    """Relative frequency errors and decay-rate errors over 2 pi f (a damping-ratio scale)."""
    from dynamica.runtime.analysis.linear import linearize
    f_t = np.asarray(target["frequencies"], dtype=float)
    b_t = np.asarray(target.get("decay_rates", np.full(len(f_t), np.nan)), dtype=float)

    def res(values):
        md = linearize(model, q=q, params=_overrides(model, slots, values, fixed)).modes()
        if "index" not in state:                     # which model mode each target is, fixed once
            from scipy.optimize import linear_sum_assignment
            f_m = md.frequencies
            cost = np.abs(np.log(np.maximum(f_m, 1e-300))[None, :] - np.log(f_t)[:, None])
            rows, cols = linear_sum_assignment(cost)
            state["index"] = cols[np.argsort(rows)]
        k = state["index"]
        out = [md.frequencies[k] / f_t - 1.0]
        has_b = np.isfinite(b_t)
        out.append((md.decay_rates[k][has_b] - b_t[has_b]) / (2 * math.pi * f_t[has_b]))
        return np.concatenate(out)
    return res


def _read_records(records, columns):
    """(t, {column: values}) from a mapping with "t", a SimulationResult or a CSV file (a "t" column)."""
    from dynamica.runtime.results.result import SimulationResult
    if isinstance(records, (str, bytes)) or hasattr(records, "__fspath__"):
        data = np.genfromtxt(records, delimiter=",", names=True, deletechars="", dtype=float)
        records = {k: data[k] for k in data.dtype.names}
    if isinstance(records, SimulationResult):
        records = records.series() | {"t": records.t}
    if "t" not in records:
        raise ValueError("records need a column `t` (times) and the measured columns")
    names = [c for c in records if c != "t"] if columns is None else list(columns)
    missing = [c for c in names if c not in records]
    if missing:
        raise ValueError(f"records have no column(s) {', '.join(map(repr, missing))}; they have "
                         f"{', '.join(k for k in records if k != 't')}")
    return np.asarray(records["t"], dtype=float), {c: np.asarray(records[c], dtype=float) for c in names}


def _records_residual(model, slots, t, data, fixed, q0, qd0, sim_kw):
    from dynamica.runtime.integrators.simulate import simulate
    from dynamica.runtime.results.result import series
    scale = {c: max(float(np.std(v)), 1e-300) for c, v in data.items()}
    dt = float(np.min(np.diff(t)))

    def simulated(values):
        params = _overrides(model, slots, values, fixed)
        res = simulate(model, t_end=float(t[-1]), t0=float(t[0]), output_step=dt, q0=q0, qd0=qd0, params=params,
                       **sim_kw)
        sr = series(res)
        unknown = [c for c in data if c not in sr]
        if unknown:
            raise ValueError(
                f"the model has no series {', '.join(map(repr, unknown))} (coordinates, der(...), outputs)"
            )
        return {c: np.interp(t, res.t, np.asarray(sr[c]).reshape(len(res.t))) for c in data}

    def res(values):
        sim = simulated(values)
        return np.concatenate([(sim[c] - data[c]) / scale[c] for c in data])
    return res, simulated


def _initial_values(model, slots, start, fixed) -> np.ndarray:
    """The fitted parameters' starting values: `start`, else `fixed`, else the model's."""
    base = {**model.parameters, **(fixed or {})}
    p0 = np.array([base[b] if i is None else base[b][i] for _, b, i in slots], dtype=float)
    unknown = [k for k in (start or {}) if k not in [s[0] for s in slots]]
    if unknown:
        raise ValueError(f"`start` names {', '.join(map(repr, unknown))}, which are not among the fitted parameters")
    for k, (name, _, _) in enumerate(slots):
        if start and name in start:
            p0[k] = float(start[name])
    return p0


def _standard_errors(J, r, p, s2) -> np.ndarray:
    """sqrt(diag(s^2 (J^T J)^-1)) of the fit's Jacobian J = d r / d p; NaN with no spread to
    estimate (as many conditions as unknowns), inf where J^T J is singular."""
    if len(r) <= len(p):
        return np.full(len(p), np.nan)
    try:
        return np.sqrt(np.maximum(np.diag(s2 * np.linalg.inv(J.T @ J)), 0.0))
    except np.linalg.LinAlgError:
        return np.full(len(p), np.inf)


def identify(model, params, modes=None, records=None, *, columns=None, start=None, fixed=None, q=None, q0=None,
             qd0=None, log=True, method="adams", rtol=1e-10, atol=1e-12, max_nfev=200) -> Identification:
    """Fit `params` (names of model parameters, `p` or `p[k]`) to identified `modes` (a PronyResult
    or a mapping with "frequencies" (Hz) and optional "decay_rates" (1/s), matched to the model's
    modes about its equilibrium, or about q) or to `records` (a mapping with "t" and columns named
    like the model's series, a SimulationResult or a CSV file; simulated from q0, qd0, default the
    model's initial values). `start`: initial guesses {name: value} (default: the model's values);
    `fixed`: values of other parameters during the fit. log=True fits log(p) (positive values)."""
    from scipy.optimize import least_squares
    if (modes is None) == (records is None):
        raise ValueError("identify needs either modes=... (identified frequencies and decay rates) or records=...")
    slots = _param_slots(model, [params] if isinstance(params, str) else list(params))
    p0 = _initial_values(model, slots, start, fixed)
    use_log = bool(log) and np.all(p0 > 0)
    to_p = (lambda x: np.exp(x)) if use_log else (lambda x: x)
    x0 = np.log(p0) if use_log else p0.copy()
    corr = {}
    if modes is not None:
        target = (
            modes if isinstance(modes, dict) else {"frequencies": modes.frequencies, "decay_rates": modes.decay_rates}
        )
        fun = _modes_residual(model, slots, target, fixed, q, {})
        simulated = None
    else:
        t, data = _read_records(records, columns)
        fun, simulated = _records_residual(model, slots, t, data, fixed, q0, qd0,
                                           {"method": method, "rtol": rtol, "atol": atol})
    sol = least_squares(lambda x: fun(to_p(x)), x0, method="trf", x_scale="jac", diff_step=1e-6, max_nfev=max_nfev,
                        xtol=1e-10, ftol=1e-10, gtol=1e-10)
    p = to_p(sol.x)
    r = sol.fun
    dof = len(r) - len(p)
    s2 = float(r @ r) / max(dof, 1)
    se = _standard_errors(sol.jac / (p[None, :] if use_log else 1.0), r, p, s2)   # d r / d p = (d r / d log p) / p
    if simulated is not None:
        sim = simulated(p)
        corr = {c: float(np.corrcoef(data[c], sim[c])[0, 1]) for c in data}
    names = tuple(s[0] for s in slots)
    return Identification(
        names=names,
        values=dict(zip(names, map(float, p))),
        initial=dict(zip(names, map(float, p0))),
        standard_errors=dict(zip(names, map(float, se))),
        residual=r,
        residual_norm=float(np.linalg.norm(r)),
        dof=dof,
        nfev=int(sol.nfev),
        success=bool(sol.success),
        message=str(sol.message),
        correlation=corr,
        info={"log_parameters": use_log, "sigma": math.sqrt(s2), "target": "modes" if modes is not None else "records"},
    )
