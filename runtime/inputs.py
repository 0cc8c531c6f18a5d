"""Inputs from outside at run time: signals and a sampled controller (docs/api.md).

A model's inputs (`inputs: [u, ...]`) live in slots of the parameter array p
(generator/mechanics/signals.py): u(t) = p[u] + p[du] (t - p[t_k]). A run with inputs is cut into segments
at the points where a signal changes slope (its data points, the samples of a callable) and at
the controller's sample times t_k = t0 + k Ts; between them the compiled integrator runs on
the module's C entry point with no Python, and at each boundary the slots are updated in place
and the integrator restarted (a new first step at order 1: the right-hand side is not smooth
there). The controller `f(t, q, qd, s) -> {"u": value}` is called exactly at the sample times,
with the state there, and its values are held (zero-order hold) until the next sample: the
results do not depend on the integrator's steps.

Signals (`inputs={"u": ...}`): a callable u(t), data `(t_array, values)` or a CSV file of two
columns t, value (linear between the points, the end values held outside). A callable is
evaluated where the integrator evaluates the right-hand side (exact: the run integrates the
model with u(t) itself; `Drive.live`, one Python call of u and of the module's rhs per
evaluation), or, with `sample_time`, sampled every `sample_time` and linear between samples
(a Signal: no Python between the samples).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dynamica.errors import InputError


# ------------------------------------------------------------------ the slots
def _fail(model, message):
    raise InputError(f"{model.spec.file}: {message}")


def require_inputs(model, given, where):
    """Every input of the model is in `given` (InputError naming the missing ones)."""
    missing = [u for u in model.inputs if u not in (given or {})]
    if missing:
        names = ", ".join(f"`{u}`" for u in missing)
        _fail(model, f"input(s) {names} of the model (entry `inputs`) not supplied for {where}; the model's "
                     f"inputs are {', '.join(model.inputs)}: pass inputs={{name: value}}"
                     + (" (simulate: a signal, or a controller that returns them; the command line: "
                        "--input NAME=FILE.csv)" if "simulat" in where else ""))


def input_value(model, name, v, when=""):
    """The value `v` given for input `name` as a finite float (an InputError naming the input otherwise)."""
    try:
        x = float(v)
    except (TypeError, ValueError):
        _fail(model, f"input `{name}`{when}: expected a number, found {type(v).__name__} {v!r:.60}")
    if not math.isfinite(x):
        _fail(model, f"input `{name}`{when}: the value {x} is not finite")
    return x


def input_vector(model, given, where="inputs"):
    """The values of the model's inputs given in either form every evaluation takes (`qdd(inputs=)`,
    `rhs`, `outputs`, the derivatives' `u=`, `statics`, `linearize`): a mapping name -> value (the
    inputs not named are 0) or a sequence of values in the order of the model's `inputs:` (a
    scalar for a model of one input). None (or an empty mapping or sequence) -> None: every input
    0. An InputError names the model file, the argument `where` and the key or length that is
    wrong, or the value that is not a finite number."""
    if given is None:
        return None
    names = tuple(model.inputs)
    if isinstance(given, Mapping):
        if not given:
            return None
        unknown = [k for k in given if k not in names]
        if unknown:
            _fail(model, f"`{where}`: unknown input(s) {', '.join(f'`{k}`' for k in unknown)}; the model's inputs "
                         f"are {', '.join(names) or 'none'}")
        return np.array([input_value(model, k, given[k], f" (`{where}`)") if k in given else 0.0 for k in names])
    if isinstance(given, (str, bytes)) or callable(given):
        _fail(model, f"`{where}`: expected a mapping {{input name: value}} or a sequence of values in the order "
                     f"of the model's inputs ({', '.join(names) or 'none'}), found {type(given).__name__}")
    try:
        arr = np.asarray(given, dtype=object)
    except (TypeError, ValueError):
        arr = None
    if arr is None or arr.ndim > 1:
        _fail(model, f"`{where}`: expected a mapping {{input name: value}} or a flat sequence of values, "
                     f"found {type(given).__name__}")
    values = arr.reshape(-1)
    if len(values) == 0:
        return None
    if len(values) != len(names):
        _fail(model, f"`{where}` has {len(values)} value(s), expected {len(names)}: one per input of the model, "
                     f"in the order {', '.join(names) or '(the model has none)'}")
    return np.array([input_value(model, k, v, f" (`{where}`)") for k, v in zip(names, values)])


def input_mapping(model, given, where="inputs"):
    """`input_vector` as a mapping name -> value (None when no input is given)."""
    u = input_vector(model, given, where)
    return None if u is None else dict(zip(model.inputs, u.tolist()))


def set_inputs(model, p, values: dict, t_k: float, rates=None):
    """Write input values (and their rates, default 0: held) valid from t_k into the slots of p."""
    slots = model.slots
    for name, v in values.items():
        if name not in model.inputs:
            _fail(model, f"`{name}` is not an input of the model; its inputs are {', '.join(model.inputs) or 'none'}")
        j = model.inputs.index(name)
        p[slots["inputs"] + j] = input_value(model, name, v)
        p[slots["input_rates"] + j] = 0.0 if rates is None else rates.get(name, 0.0)
    if model.inputs:
        p[slots["segment_start"]] = t_k


def signal_values(model, p, t) -> dict:
    """The inputs at t and the extra states, from their slots of p (for the outputs)."""
    slots, out = model.slots, {}
    for j, name in enumerate(model.inputs):
        out[name] = p[slots["inputs"] + j] + p[slots["input_rates"] + j] * (t - p[slots["segment_start"]])
    for j, name in enumerate(model.states):
        out[name] = p[slots["states"] + j]
    return out


# ------------------------------------------------------------------ signals given in advance
@dataclass
class Signal:
    """A signal linear between its points (t strictly increasing), the end values held outside."""
    name: str
    t: np.ndarray
    values: np.ndarray

    def at(self, t):
        return np.interp(t, self.t, self.values)


def make_signal(model, name, given, t0, t_end, sample_time) -> Signal:
    """A Signal from a callable sampled every sample_time (given), (t, values) or a CSV file."""
    where = f"input `{name}`"
    if callable(given):
        t = sample_times(t0, t_end, sample_time, with_end=True)
        vals = []
        for tk in t:
            vals.append(input_value(model, name, given(float(tk)), f" at t = {tk!r}"))
        return Signal(name, t, np.array(vals))
    if isinstance(given, (str, Path)):
        from dynamica.generator.spec.actuator_sections import TableFileError, read_columns
        path = Path(given)
        if not path.is_file():
            _fail(model, f"{where}: file not found: {given}")
        try:
            t, vals = read_columns(path, None)
        except (TableFileError, OSError) as exc:
            _fail(model, f"{where}: {given}: {exc}")
        given = (t, vals)
    try:
        t_arr, v_arr = (np.asarray(x, dtype=float).reshape(-1) for x in given)
    except (TypeError, ValueError):
        _fail(model, f"{where}: expected a callable u(t), (t_array, values) or a CSV file name, found "
                     f"{type(given).__name__}")
    if t_arr.shape != v_arr.shape or len(t_arr) < 1:
        _fail(model, f"{where}: (t, values) of lengths {len(t_arr)} and {len(v_arr)}: expected equal lengths >= 1")
    if not (np.all(np.isfinite(t_arr)) and np.all(np.isfinite(v_arr))):
        _fail(model, f"{where}: the times and values must be finite numbers")
    if np.any(np.diff(t_arr) <= 0):
        k = int(np.argmax(np.diff(t_arr) <= 0)) + 1
        _fail(model, f"{where}: the times must increase strictly (t[{k}] = {t_arr[k]!r} after {t_arr[k - 1]!r})")
    return Signal(name, t_arr, v_arr)


def sample_times(t0, t_end, sample_time, with_end=False) -> np.ndarray:
    """t0 + k Ts for t0 + k Ts < t_end (and t_end itself with `with_end`)."""
    if not (isinstance(sample_time, (int, float)) and math.isfinite(sample_time) and sample_time > 0):
        raise ValueError(f"sample_time must be a positive number, not {sample_time!r}")
    k = int(math.ceil((t_end - t0) / sample_time - 1e-9))
    t = t0 + sample_time * np.arange(max(k, 1))
    return np.append(t, t_end) if with_end else t


# ------------------------------------------------------------------ the segmented run
class Drive:
    """What drives the inputs of one run: signals and a controller, cut into segments at the
    boundaries b[0] = t0 < b[1] < ... < b[-1] = t_end. The signals' values and rates per segment
    are computed once; per sample only the controller runs (its answer checked, then written to
    the slots): the loop that calls Python at the samples stays a few microseconds."""

    def __init__(self, model, inputs, controller, sample_time, t0, t_end, params=None):
        inputs = dict(inputs or {})
        if controller is not None and not callable(controller):
            raise TypeError("controller must be a callable f(t, q, qd, s) -> {input name: value}")
        if controller is not None and not sample_time:
            raise ValueError("a controller needs sample_time (its fixed sampling period)")
        for name in inputs:
            if name not in model.inputs:
                _fail(model, f"`{name}` is not an input of the model; its inputs are "
                             f"{', '.join(model.inputs) or 'none'}")
        defaults = dict(getattr(model.spec, "input_defaults", ()))
        if controller is None:                         # an input with a default, not given: held at it
            inputs = {**{u: (np.array([t0, t_end]), np.array([d, d])) for u, d in defaults.items()
                         if u not in inputs}, **inputs}
            require_inputs(model, inputs, "this simulation")
        self.defaults = defaults
        self.model, self.controller, self.params = model, controller, params
        #: the callables evaluated where the integrator asks (no sample_time): (name, index, u)
        self.live = [(k, model.inputs.index(k), v) for k, v in inputs.items() if callable(v) and not sample_time]
        live = {k for k, _, _ in self.live}
        signals = [make_signal(model, k, v, t0, t_end, sample_time) for k, v in inputs.items() if k not in live]
        self.controlled = [u for u in model.inputs if u not in inputs]
        samples = sample_times(t0, t_end, sample_time) if controller is not None else np.zeros(0)
        cuts = [t0, t_end] + [float(x) for x in samples] + [float(x) for s in signals for x in s.t]
        b = np.unique([c for c in cuts if t0 <= c <= t_end])
        self.b = [float(x) for x in b]
        on_sample = set(float(x) for x in samples)
        self.sampled = [x in on_sample for x in self.b]
        m = len(model.inputs)
        self.values, self.rates = np.zeros((len(b) - 1, m)), np.zeros((len(b) - 1, m))
        for sig in signals:                            # linear on every segment: its points are boundaries
            j = model.inputs.index(sig.name)
            va, vb = sig.at(b[:-1]), sig.at(b[1:])
            self.values[:, j], self.rates[:, j] = va, (vb - va) / np.diff(b)
        self.held = [(name, model.inputs.index(name)) for name in self.controlled]
        self.held_mask = np.array([u in self.controlled for u in model.inputs], dtype=np.uint8)
        self.sampled_mask = np.array(self.sampled, dtype=np.uint8)
        sl = model.slots
        self.slot_u, self.slot_du = sl.get("inputs", 0), sl.get("input_rates", 0)
        self.slot_t = sl.get("segment_start", 0)
        self.calls = 0

    def live_rhs(self, p):
        """f(t, y) of the module's rhs with the live inputs u(t) written into their slots of p at
        every evaluation (value u(t), rate 0), the other slots as `update` set them; None without
        live inputs (the compiled rhs then runs with no Python)."""
        if not self.live:
            return None
        model, rhs, size = self.model, self.model.module.rhs, self.model.state_size
        su, sd, live = self.slot_u, self.slot_du, self.live

        def f(t, y):
            t = float(t)
            for name, j, u in live:
                p[su + j] = input_value(model, name, u(t), f" at t = {t!r}")
                p[sd + j] = 0.0
            out = np.empty(size)
            rhs(t, np.ascontiguousarray(y, dtype=float), p, out)
            return out
        return f

    def update(self, p, k, y):
        """Set the slots of p for segment k, [b[k], b[k+1]]; y is the state at b[k] (what the
        compiled loop of runtime/native/adams_core.pyx `run_segments` does, for the other integrators)."""
        if self.sampled[k]:
            self.sample(k, y)
        elif k > 0:
            for _, j in self.held:
                self.values[k, j] = self.values[k - 1, j]
        su, sd = self.slot_u, self.slot_du
        for j in range(self.values.shape[1]):
            p[su + j] = self.values[k, j]
            p[sd + j] = self.rates[k, j]
        p[self.slot_t] = self.b[k]

    def sample(self, k, y):
        """The controller at boundary k with the state y there: its answers into row k of values."""
        t, model, n = self.b[k], self.model, self.model.n
        y = y.copy()                                              # the controller may keep what it gets
        q, qd = model.from_state(y, t, self.params) if model.hamiltonian else (y[:n], y[n:2 * n])
        out = self.controller(t, q, qd, y[2 * n:])
        self.calls += 1
        try:
            if type(out) is not dict or len(out) != len(self.held):
                raise ValueError
            row = self.values[k]
            for name, j in self.held:
                x = float(out[name])
                if x - x != 0.0:                                   # inf - inf and nan are not 0
                    raise ValueError
                row[j] = x
        except (KeyError, TypeError, ValueError):
            self._answer(out, t)                  # raises, naming what is wrong, unless the answer leaves
            row = self.values[k]                  # out only inputs with defaults: they keep their values
            for name, j in self.held:
                row[j] = input_value(model, name, out[name], f" (controller at t = {t!r})") if name in out else \
                    self.values[k - 1, j] if k > 0 else self.defaults[name]

    def _answer(self, out, t):
        """The InputError of a controller's answer that is not a dict of finite numbers for exactly
        the inputs it drives."""
        model = self.model
        if not isinstance(out, dict):
            _fail(model, f"the controller returned {type(out).__name__} at t = {t!r}: expected a dict "
                         f"{{input name: value}} of the inputs {', '.join(self.controlled)}")
        extra = [k for k in out if k not in self.controlled]
        if extra:
            what = "given as signals" if any(k in model.inputs for k in extra) else "not inputs of the model"
            _fail(model, f"the controller returned {', '.join(f'`{k}`' for k in extra)} at t = {t!r}: {what}; "
                         f"it drives {', '.join(self.controlled)}")
        missing = [u for u in self.controlled if u not in out and u not in self.defaults]
        if missing:
            _fail(model, f"input(s) {', '.join(f'`{u}`' for u in missing)} of the model (entry `inputs`) not "
                         f"supplied: neither a signal nor returned by the controller at t = {t!r}")
        for k, v in out.items():
            input_value(model, k, v, f" (controller at t = {t!r})")

    def series(self, t) -> dict:
        """The inputs along the output times: name -> values (right-continuous at the boundaries)."""
        seg = np.clip(np.searchsorted(self.b, t, side="right") - 1, 0, len(self.b) - 2)
        dt = np.asarray(t) - np.asarray(self.b)[seg]
        out = {u: self.values[seg, j] + self.rates[seg, j] * dt for j, u in enumerate(self.model.inputs)}
        for name, _, u in self.live:
            out[name] = np.array([input_value(self.model, name, u(float(tk)), f" at t = {float(tk)!r}")
                                  for tk in np.asarray(t, dtype=float).reshape(-1)])
        return out
