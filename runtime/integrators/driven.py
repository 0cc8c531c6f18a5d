"""Runs with inputs from outside (docs/api.md): the segments between the points where a signal
changes slope and the controller's sample times (runtime/inputs.py: the signals, the slots and the
Drive), each integrated with no Python per step; at each boundary the slots are updated in place
and the integrator restarted.
"""

from __future__ import annotations

import numpy as np

from dynamica.runtime.inputs import Drive


def run_driven(model, t0, t_end, y0, t_eval, rtol, atol, params, method, inputs, controller, sample_time):
    """simulate() with inputs: (t, Y, nfev, info, input series) over the segments of the Drive."""
    drive = Drive(model, inputs, controller, sample_time, t0, t_end, params)
    p = model.param_vector(params)
    if t_eval is None:
        t_eval = np.linspace(t0, t_end, 201)
    runner = SEGMENT_RUNNERS.get(method, _scipy_segments)
    t, Y, nfev, info = runner(model, drive, p, y0, np.asarray(t_eval, dtype=float), rtol, atol, method)
    info.update(segments=len(drive.b) - 1, controller_calls=drive.calls)
    return t, Y, nfev, info, drive.series(t)


def _adams_segments(model, drive, p, y0, tv, rtol, atol, method):
    """One compiled Adams stepper over all segments: its p is the array updated in place."""
    from dynamica.runtime.integrators.compiled_adams import check_status, core
    b, nmax = drive.b, 500_000
    drive.update(p, 0, y0)
    f = drive.live_rhs(p) or model.module.rhs_capsule         # live inputs: Python per evaluation
    st = core().Stepper(f, b[0], y0, b[1], p, rtol, atol, None, np.inf, nmax, False)
    Y = np.full((len(tv), len(y0)), np.nan)
    j = 0
    while j < len(tv) and tv[j] == b[0]:
        Y[j] = y0
        j += 1
    check_status(st, st.begin(), rtol, atol, nmax)
    code, j, _ = st.run_segments(tv, Y, j, np.array(b), drive.values, drive.rates, drive.held_mask,
                                 drive.sampled_mask, drive.sample, p, drive.slot_u, drive.slot_du, drive.slot_t, nmax)
    if code:
        check_status(st, code, rtol, atol, nmax)
    info = st.info()
    return tv[:j], Y[:j], info["nfev"], {"integrator": "compiled Adams PECE (Shampine-Gordon), restarted at each "
                                                       "segment" + (", inputs evaluated by Python at every step"
                                                                    if drive.live else ""),
                                         "steps": info["nsteps"]}


def _scipy_segments(model, drive, p, y0, tv, rtol, atol, method):
    """scipy's solve_ivp per segment, on the module's rhs with the slots of p."""
    from scipy.integrate import solve_ivp

    from dynamica.runtime.integrators.simulate import SCIPY_METHODS, solve_ivp_error
    if method not in SCIPY_METHODS:
        raise ValueError(f"method {method!r} does not take inputs or a controller; use adams or one of "
                         f"{', '.join(SCIPY_METHODS)}")
    rhs, size = model.module.rhs, model.state_size

    def f(t, y):
        out = np.empty(size)
        rhs(float(t), np.ascontiguousarray(y, dtype=float), p, out)
        return out
    f = drive.live_rhs(p) or f
    b, y, nfev = drive.b, np.asarray(y0, dtype=float), 0
    T, Y = [], []
    for k in range(len(b) - 1):
        drive.update(p, k, y)
        inside = tv[(tv >= b[k]) & (tv <= b[k + 1])] if k == 0 else tv[(tv > b[k]) & (tv <= b[k + 1])]
        sol = solve_ivp(f, (b[k], b[k + 1]), y, method=SCIPY_METHODS[method], rtol=rtol, atol=atol,
                        t_eval=np.concatenate([inside, [b[k + 1]]]) if not len(inside) or inside[-1] != b[k + 1]
                        else inside)
        if sol.status < 0:
            raise solve_ivp_error(sol, b[k], SCIPY_METHODS[method])
        nfev += sol.nfev
        y = sol.y[:, -1]
        keep = np.isin(sol.t, inside)
        T.append(sol.t[keep])
        Y.append(sol.y.T[keep])
    return np.concatenate(T), np.concatenate(Y), nfev, {"integrator": f"scipy solve_ivp {SCIPY_METHODS[method]} "
                                                                      "per segment"}


#: integrator -> runner(model, drive, p, y0, t_eval, rtol, atol, method) -> (t, Y, nfev, info)
SEGMENT_RUNNERS = {"adams": _adams_segments}
