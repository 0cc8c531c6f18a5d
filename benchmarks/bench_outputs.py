#!/usr/bin/env python
"""Outputs along a trajectory: one call from C for every row against one Python call per row.

For the double pendulum (models/double_pendulum.yaml: two points, two bodies' angular motion, an
expression) and the N-link chain of bench_spine.py with outputs (the last link's centre of mass:
position, velocity, acceleration; every link's angular velocity and acceleration), 1 s with the
model's settings (compiled adams, 101 rows for the pendulum, 201 for the chains):

    simulate          dynamica.simulate(model, t_end=1) with its outputs (what users call)
    integration       the compiled Adams run alone (runtime/compiled_adams.solve, no outputs)
    outputs batched   model.output_series over the rows (runtime/native/series_core.pyx: a C loop)
    outputs per row   model.outputs called row by row (the path output_series took before)
    pin per row       the peer: pin.aba + pin.forwardKinematics(q, v, a) per row from Python (the
                      chain's positions, velocities, accelerations and q'' of every row)

Times are the best of REPEATS runs of LOOPS calls. The batched outputs are checked equal to the
row-by-row ones (bit for bit). A plain script, run by hand:  python benchmarks/bench_outputs.py
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_spine as bs

HERE = Path(__file__).resolve().parent
REPEATS, LOOPS = 7, 20


def best(fn, loops=LOOPS, repeats=REPEATS) -> float:
    """Seconds per call: the best of `repeats` runs of `loops` calls."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(loops):
            fn()
        out.append((time.perf_counter() - t0) / loops)
    return min(out)


def chain_with_outputs(n: int, folder: Path) -> Path:
    import yaml
    d = bs.chain_model(n)
    d["name"] = f"spine{n}_outputs"
    d["initial"] = {f"q{i}": float(0.4 * np.cos(i - 1)) for i in range(1, n + 1)}
    d["outputs"] = {"points": {"tip": {"body": f"link{n}", "at": list(bs.COM)}},
                    "angular": [f"link{i}" for i in range(1, n + 1)]}
    d["simulate"] = {"t_end": 1.0, "output_step": 0.005, "integrator": "adams", "rtol": 1e-8, "atol": 1e-10}
    path = folder / f"spine{n}_outputs.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


def per_row(model, res):
    rows = [model.outputs(tk, q, qd) for tk, q, qd in zip(res.t, res.q, res.qd)]
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


def measure(label, path, n_pin=None) -> dict:
    import dynamica
    from dynamica.runtime.integrators.compiled_adams import solve
    model = dynamica.load(path)
    sim = model.spec.simulate
    res = dynamica.simulate(model, t_end=1.0)
    rows = len(res.t)
    batched = model.output_series(res.t, res.q, res.qd)
    ref = per_row(model, res)
    same = all(np.array_equal(batched[k], ref[k]) for k in ref) and batched.keys() == ref.keys()
    y0 = model.to_state(*model.initial_state())
    p = model.param_vector()
    t_eval = np.minimum(sim.output_step * np.arange(rows), 1.0)
    r = {"model": label, "rows": rows, "same": same,
         "simulate": best(lambda: dynamica.simulate(model, t_end=1.0)),
         "integration": best(lambda: solve(model, (0.0, 1.0), y0, t_eval=t_eval, params_array=p, rtol=sim.rtol,
                                           atol=sim.atol)),
         "batched": best(lambda: model.output_series(res.t, res.q, res.qd)),
         "per_row": best(lambda: per_row(model, res), loops=3)}
    if n_pin:
        import pinocchio as pin
        pm = bs.pinocchio_chain(n_pin)
        pd = pm.createData()
        zero = np.zeros(n_pin)

        def pin_rows():
            for q, qd in zip(res.q, res.qd):
                a = pin.aba(pm, pd, q, qd, zero)
                pin.forwardKinematics(pm, pd, q, qd, a)
        r["pin"] = best(pin_rows, loops=5)
    return r


def report(results, info) -> list:
    head = ("model", "rows", "simulate ms", "integration ms", "sim/integr", "batched us/row", "per row us/row",
            "per row/batched", "pin us/row", "pin/batched", "equal")
    lines = info + ["", " | ".join(head), " | ".join("---" for _ in head)]
    for r in results:
        k = r["rows"]
        pin = r.get("pin")
        lines.append(" | ".join([
            r["model"], str(k), f"{1e3 * r['simulate']:.3f}", f"{1e3 * r['integration']:.3f}",
            f"{r['simulate'] / r['integration']:.2f}", f"{1e6 * r['batched'] / k:.3f}", f"{1e6 * r['per_row'] / k:.2f}",
            f"{r['per_row'] / r['batched']:.0f}", "-" if pin is None else f"{1e6 * pin / k:.2f}",
            "-" if pin is None else f"{pin / r['batched']:.1f}", "yes" if r["same"] else "NO"]))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[2, 20])
    ap.add_argument("--out", default=str(HERE / "results" / "outputs.txt"))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import platform

    import pinocchio

    import dynamica
    tmp = Path(tempfile.mkdtemp(prefix="bench_outputs_"))
    results = [measure("double_pendulum", HERE.parent / "models" / "double_pendulum.yaml")]
    for n in args.sizes:
        results.append(measure(f"chain N={n}", chain_with_outputs(n, tmp), n_pin=n))
    info = [f"# outputs along a trajectory: dynamica {dynamica.__version__}, pinocchio {pinocchio.__version__}, "
            f"Python {platform.python_version()}, {platform.machine()}",
            "# 1 s runs with the model's settings (compiled adams); best of "
            f"{REPEATS} runs; 'equal': batched == row by row, bit for bit"]
    lines = report(results, info)
    print("\n".join(lines))
    if not args.no_save:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0 if all(r["same"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
