"""The launcher's cyclogram (models/launcher.py, N = 2) simulated end to end: at each release the
linear and angular momentum of the whole machine are the same on both sides of the boundary. The
momenta are Pinocchio's (centroidal momentum) on trees read from the model file by
tests/oracles/pin_yaml.py: before the release the file's tree without the removed mock-ups, after it
the same with the released mock-up on a free joint to the ground as docs/stages.md defines it
(origin along the ground axes, then Cardan angles R = Rx Ry Rz), not dynamica's derived specs.
D90's summary tables (runtime/stages/summary.py) of the `fly` stages against the same numbers computed
here from the result's rows: the values at each stage's first and last row, the largest deviation
from the initial value, mean, population std, RMS about the initial value and range (1e-14)."""

from __future__ import annotations

import copy
import importlib.util

import numpy as np
import pytest
import yaml

import dynamica

from conftest import MODELS


def _launcher(n):
    spec = importlib.util.spec_from_file_location("launcher", MODELS / "launcher.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.model(n)


def _structure(data, removed, free):
    """The model file's dict with the removed mock-ups dropped and `free` on a free joint."""
    d = copy.deepcopy(data)
    d["bodies"] = [b for b in d["bodies"] if b["name"] not in removed]
    for b in d["bodies"]:
        if b["name"] == free:
            b["parent"] = "ground"
            b["joint"] = [{"translate": a, "q": f"{free}_{a}"} for a in "xyz"] + \
                         [{"rotate": a, "q": f"{free}_r{a}"} for a in "xyz"]
    d.pop("stages", None)
    return d


def _momentum(tmp_path, d, name, res, row, values):
    """(linear, angular about the centre of mass) momentum of tree `d` at result row `row`."""
    import pinocchio as pin

    from oracles.pin_yaml import pinocchio_from_file
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    pm, names, screw = pinocchio_from_file(path, values)
    pd = pm.createData()
    cols = [res.coordinates.index(c) for c in names]
    scale = np.array([screw.get(c, 1.0) for c in names])
    q, v = res.q[row, cols] / scale, res.qd[row, cols] / scale
    assert np.all(np.isfinite(q)) and np.all(np.isfinite(v)), name
    h = pin.computeCentroidalMomentum(pm, pd, q, v)
    return np.array(h.linear), np.array(h.angular), float(pd.mass[0])


@pytest.mark.slow
def test_momentum_across_each_release_of_the_launcher(tmp_path):
    data = _launcher(2)
    path = tmp_path / "launcher_2.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    res = dynamica.simulate(str(path))
    names = [s["name"] for s in res.stages]
    assert names[-1] == "fly_2" and all(np.all(np.isfinite(res.q[res.stage == s, 0])) for s in names)
    params = {k: (v["value"] if isinstance(v, dict) else v) for k, v in data["parameters"].items()}
    for k, removed in ((1, ()), (2, ("mock_1",))):
        fly = f"fly_{k}"
        b = int(np.nonzero(res.stage == fly)[0][0])                 # the first row of fly_k; b - 1: the last before
        assert res.stage[b - 1] == f"slide_{k}" and res.t[b - 1] == res.t[b]
        values = dict(params)
        for st in data["stages"][:names.index(fly) + 1]:            # the parameters set up to this stage
            values.update({p: float(x) for p, x in (st.get("set") or {}).items()})
        P0, H0, m0 = _momentum(tmp_path, _structure(data, removed, None), f"before_{k}", res, b - 1, values)
        P1, H1, m1 = _momentum(tmp_path, _structure(data, removed, f"mock_{k}"), f"after_{k}", res, b, values)
        assert m0 == pytest.approx(m1, rel=1e-14)
        assert np.linalg.norm(P1 - P0) < 1e-10 * np.linalg.norm(P0), (k, P0, P1)
        assert np.linalg.norm(H1 - H0) < 1e-10 * np.linalg.norm(H0), (k, H0, H1)
        assert np.linalg.norm(P0) > 1.0                            # the mock-up moves: a momentum to keep

    # the summary tables of the fly stages, by hand from the rows
    from dynamica.runtime.stages.summary import stage_summary
    variables = ["z_b", "pitch_b", "roll_b", "psi", "theta"]
    summ = stage_summary(res, variables, at=["start", "end", "max"], stages="fly_*")
    assert summ.stages == ["fly_1", "fly_2"]
    cols = [res.coordinates.index(v) for v in variables]
    rows = {s: np.nonzero(res.stage == s)[0] for s in summ.stages}
    x0 = res.q[rows["fly_1"][0], cols]
    by_hand = {"start": np.array([res.q[r[0], cols] for r in rows.values()]),
               "end": np.array([res.q[r[-1], cols] for r in rows.values()]),
               "max": np.array([np.max(np.abs(res.q[r][:, cols] - x0), axis=0) for r in rows.values()])}
    for kind, table in by_hand.items():
        got = summ.table(kind)
        assert np.array_equal(got.row("initial" if "initial" in got.labels else got.labels[0]), x0)
        for k, stage in enumerate(summ.stages):
            assert np.max(np.abs(got.row(stage) - table[k])) <= 1e-14 * np.max(np.abs(table)), (kind, stage)
        stats = {"mean": table.mean(axis=0), "std": table.std(axis=0), "range": table.max(axis=0) - table.min(axis=0)}
        if kind != "max":
            stats["initial RMS"] = np.sqrt(np.mean((table - x0) ** 2, axis=0))
        for label, want in stats.items():
            assert np.max(np.abs(got.row(label) - want)) <= 1e-12 * np.max(np.abs(table)), (kind, label)
