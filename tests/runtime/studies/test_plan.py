"""The cases of a study with what they share prepared once (runtime/studies/plan.py,
runtime/integrators/repeated.py).

Oracles: the same case through `simulate` (`run_case_values`, the path every case took before
plan.py, whose rows test_sweep.py checks against explicit trapezoidal sums and a Dask cluster),
which the fast path must equal bit for bit: it makes the same calls of the compiled code with
the same arguments, so any difference (one unit in the last place: a matrix of another layout is
summed by BLAS in another order) is a bug; and the closed form of a body falling freely.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import dynamica
from dynamica.generator.spec.model import DynamicaWarning
from dynamica.runtime.integrators import simulate as simulate_module
from dynamica.runtime.integrators.repeated import plain_adams
from dynamica.runtime.studies import cases as sweep_cases
from dynamica.runtime.studies.plan import CasePlan
from dynamica.runtime.studies.sweep import _series, sweep
from dynamica.runtime.studies.worker import RunSettings, run_case_values

from conftest import write_model

#: every output of the double pendulum and two coordinates, every reduction
OUTPUTS = ["tip.position", "elbow.position", "link2.angular_velocity", "potential_energy", "qdd", "phi1",
           "der(phi2)"]


@pytest.fixture(scope="module")
def pendulum(bundled):
    return bundled("double_pendulum")


@pytest.fixture
def simulate_calls(monkeypatch):
    """The number of `simulate` calls (the general path) made since the fixture was taken."""
    calls = []
    real = simulate_module.simulate

    def counted(*args, **kw):
        calls.append(1)
        return real(*args, **kw)
    monkeypatch.setattr(simulate_module, "simulate", counted)
    return calls


def settings_of(model, outputs, **kw):
    return RunSettings(series=_series(model, outputs), reductions=("final", "min", "max", "rms"), **kw)


def general(model, names, values, settings):
    """The oracle: each case through simulate (values, status) as the study's rows had them."""
    roles = sweep_cases.roles(model, names)
    rows = [run_case_values(model, dict(zip(names, v.tolist())), roles, settings) for v in values]
    return rows


def test_rows_equal_simulate_case_by_case_bit_for_bit(pendulum, simulate_calls):
    """12 cases setting a parameter, an initial angle and an initial rate, output times that do
    not divide t_end (the last row appended), tolerances given: one case through simulate (the
    plan learns from it), the other 11 on the fast path, every value equal to simulate's."""
    names = ["l2", "m2", "phi1", "der(phi2)"]
    rng = np.random.default_rng(7)
    values = np.column_stack([rng.uniform(0.5, 1.0, 12), rng.uniform(0.3, 1.2, 12), rng.uniform(-1, 1, 12),
                              rng.uniform(-2, 2, 12)])
    settings = settings_of(pendulum, OUTPUTS, t_end=0.5, rtol=1e-7, atol=1e-9, output_step=0.013)
    plan = CasePlan(pendulum, names, sweep_cases.roles(pendulum, names), settings)
    assert plan.fast
    out, wall, status, extra = plan.block(names, values)
    assert len(simulate_calls) == 1 and plan.runs is not None
    assert status == ["ok"] * 12 and not any(extra) and np.all(wall > 0)
    assert len(plan.runs.t) == 40 and plan.runs.t[-1] == 0.5         # 0, 0.013, ..., 0.494, then 0.5
    ref = general(pendulum, names, values, settings)
    for k, (vals, _, _, st, _) in enumerate(ref):
        assert st == "ok"
        assert np.array_equal(out[k], vals), (k, np.flatnonzero(out[k] != vals))


def test_a_failing_case_has_the_status_simulate_gives_and_the_others_run_on(pendulum, simulate_calls):
    """A NaN length in the middle of a block: its status is simulate's error with simulate's hint
    (the fast path runs it again through simulate); the cases after it stay on the fast path."""
    values = np.array([[0.7], [0.8], [np.nan], [0.9], [0.6]])
    settings = settings_of(pendulum, ["tip.position"], t_end=0.2)
    plan = CasePlan(pendulum, ["l2"], sweep_cases.roles(pendulum, ["l2"]), settings)
    out, _, status, _ = plan.block(["l2"], values)
    assert len(simulate_calls) == 2                   # the first case, and the failing one again
    ref = general(pendulum, ["l2"], values, settings)
    assert status[2] == ref[2][3] and status[2].startswith("IntegrationError")
    assert "mass matrix is singular" in status[2]
    assert np.all(np.isnan(out[2]))
    for k in (0, 1, 3, 4):
        assert status[k] == "ok" and np.array_equal(out[k], ref[k][0])


def test_a_coordinate_reduced_by_final_is_one_column_the_final_state(pendulum):
    """`outputs=["phi1"]` with "final": the column `phi1` once (it is the final state), equal to
    simulate's last row; min(phi1) beside it."""
    table = sweep(pendulum, {"l2": [0.6, 0.8]}, 0.3, outputs=["phi1", "der(phi2)"], scheduler="serial")
    assert list(table.columns).count("phi1") == 1 and list(table.columns).count("der(phi2)") == 1
    for k, l2 in enumerate([0.6, 0.8]):
        ref = dynamica.simulate(pendulum, t_end=0.3, params={"l2": l2})
        assert table.loc[k, "phi1"] == ref.q[-1, 0] and table.loc[k, "der(phi2)"] == ref.qd[-1, 1]
        assert table.loc[k, "min(phi1)"] == ref.q[:, 0].min()


def test_what_simulate_does_more_for_runs_every_case_through_simulate(pendulum, bundled, simulate_calls):
    """Another integrator, trajectories, extra columns, closed loops: no fast path, every case
    through simulate."""
    roles = sweep_cases.roles(pendulum, ["l2"])
    for settings in (settings_of(pendulum, ["tip.position"], t_end=0.1, method="radau"),
                     settings_of(pendulum, ["tip.position"], t_end=0.1, trajectories=True),
                     settings_of(pendulum, ["tip.position"], t_end=0.1, extra_columns=lambda r, c: {"n": len(r.t)})):
        assert not CasePlan(pendulum, ["l2"], roles, settings).fast
    assert not plain_adams(bundled("fourbar"), None)
    assert plain_adams(pendulum, None) and plain_adams(pendulum, "adams") and not plain_adams(pendulum, "dop853")
    settings = settings_of(pendulum, ["tip.position"], t_end=0.1, method="radau")
    plan = CasePlan(pendulum, ["l2"], roles, settings)
    out, _, status, _ = plan.block(["l2"], np.array([[0.6], [0.7], [0.8]]))
    assert len(simulate_calls) == 3 and status == ["ok"] * 3


FALL = {"name": "fall", "gravity": [-9.81, 0, 0],
        "bodies": [{"name": "b", "parent": "ground", "joint": [{"translate": "x", "q": "x"}],
                    "mass": "m", "com": [0, 0, 0], "inertia": [1, 1, 1]}],
        "parameters": {"m": 1.0}, "ranges": {"x": [-0.1, 1.0]},
        "simulate": {"t_end": 0.5, "rtol": 1e-10, "atol": 1e-12, "output_step": 0.05}}


def test_free_fall_without_outputs_against_its_closed_form_and_its_range_warned_per_case(tmp_path):
    """A body falling from rest: x(T) = x0 - g T^2 / 2, x'(T) = x0' - g T for any mass, a
    polynomial that Adams integrates to round-off (tolerance 1e-12 relative). The model has no
    outputs section (no outputs kernel) and a range of x that every case leaves: each case warns,
    on the fast path as through simulate."""
    model = dynamica.load(write_model(tmp_path, FALL))
    T, g = 0.5, 9.81
    cases = pd.DataFrame({"m": [0.5, 1.0, 2.0, 3.0], "der(x)": [0.0, 1.0, -1.0, 0.5]})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = sweep(model, cases, outputs=["x"], scheduler="serial")
    ranges = [w for w in caught if issubclass(w.category, DynamicaWarning) and "leave their limits" in str(w.message)]
    assert len(ranges) == 4                      # one a case (the first through simulate, the others fast)
    assert (table["status"] == "ok").all()
    for k, v0 in enumerate(cases["der(x)"]):
        x, v = v0 * T - g * T * T / 2, v0 - g * T
        assert table.loc[k, "x"] == pytest.approx(x, rel=1e-12)
        assert table.loc[k, "der(x)"] == pytest.approx(v, rel=1e-12)
        assert table.loc[k, "min(x)"] == pytest.approx(min(0.0, x), rel=1e-12, abs=1e-15)


def test_blocks_in_threads_have_their_own_workspace(pendulum):
    """A Dask worker may run two batches of a study at once in threads (the compiled Adams loop
    releases the GIL): each thread has its own plan and workspace, and the rows are those of the
    blocks run one after the other."""
    from concurrent.futures import ThreadPoolExecutor

    from dynamica.runtime.studies.worker import run_block
    names, roles = ["l2"], sweep_cases.roles(pendulum, ["l2"])
    settings = settings_of(pendulum, ["tip.position", "potential_energy"], t_end=0.3)
    blocks = [np.linspace(0.5, 0.7, 40)[:, None], np.linspace(0.8, 1.0, 40)[:, None]]
    alone = [run_block(pendulum, np.arange(40), b, names, roles, settings).values for b in blocks]
    with ThreadPoolExecutor(2) as pool:
        for _ in range(3):
            both = list(pool.map(lambda b: run_block(pendulum, np.arange(40), b, names, roles, settings).values,
                                 blocks))
            assert all(np.array_equal(a, b) for a, b in zip(alone, both))
