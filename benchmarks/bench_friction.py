#!/usr/bin/env python
"""URDF Coulomb friction that simulates: the UR5 (example-robot-data) falling from one pose for
3 s with `adams` (rtol, atol of the model file's defaults), in one run on the same machine:

    without friction : <dynamics damping="0.5" friction="0"/> on every joint
    with friction    : <dynamics damping="0.5" friction="2.0"/>, the law -f tanh(q'/v_s)
                       (docs/urdf.md#friction) at several stiction velocities v_s
                       (`friction_velocity`, the default among them)

Each row: the shortest wall time of 11 runs (after one warm-up; the runs of all rows
interleaved, so that a burst of load on a shared machine hits every row alike, and the shortest
the least disturbed), the right-hand side evaluations, and the ratio to the run without friction.
The visuals are stripped from the copy of the file (meshes play no part in the dynamics). The
sign law -f sign(q') of before is not a row: no integrator got past the first reversals of q'
in minutes.

A plain script, run by hand:  python benchmarks/bench_friction.py [--out benchmarks/results/friction.txt]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from _peers import write_table

from oracles.pin_urdf import robot_file

Q0 = np.array([0.1, -1.0, 1.2, -0.5, 0.4, 0.2])
VELOCITIES = (0.01, 0.03, 0.1, 0.2, 0.3)


def ur5_copy(folder: Path, damping: float, friction: float) -> Path:
    src = robot_file("robots/ur_description/urdf/ur5_robot.urdf")
    if src is None:
        raise SystemExit("example-robot-data is not installed (pip install example-robot-data)")
    text = re.sub(r"<visual>.*?</visual>|<collision>.*?</collision>", "", src.read_text(), flags=re.S)
    text = text.replace('<dynamics damping="0.0" friction="0.0"/>',
                        f'<dynamics damping="{damping}" friction="{friction}"/>')
    out = folder / f"ur5_d{damping}_f{friction}.urdf"
    out.write_text(text)
    return out


def timed(cases, repeats=11):
    """[(shortest time, nfev)] of each (model, params), their runs interleaved."""
    import dynamica
    for model, params in cases:
        dynamica.simulate(model, t_end=3.0, q0=Q0, params=params)
    times, nfev = [[] for _ in cases], [0] * len(cases)
    for _ in range(repeats):
        for k, (model, params) in enumerate(cases):
            t = time.perf_counter()
            res = dynamica.simulate(model, t_end=3.0, q0=Q0, params=params, output_step=0.01)
            times[k].append(time.perf_counter() - t)
            nfev[k] = res.nfev
    return [(min(ts), n) for ts, n in zip(times, nfev)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)
    import dynamica
    from dynamica.generator.importers import URDF_FRICTION_VELOCITY
    with tempfile.TemporaryDirectory() as tmp:
        plain = dynamica.load(ur5_copy(Path(tmp), 0.5, 0.0), torques="off")
        rough = dynamica.load(ur5_copy(Path(tmp), 0.5, 2.0), torques="off")
        measured = timed([(plain, None)] + [(rough, {"friction_velocity": vs}) for vs in VELOCITIES])
        base = measured[0][0]
        rows = [("without friction", "-", *measured[0])]
        for vs, (t, nfev) in zip(VELOCITIES, measured[1:]):
            mark = " (default)" if vs == URDF_FRICTION_VELOCITY else ""
            rows.append((f"friction 2 N m{mark}", f"{vs:g}", t, nfev))
    lines = ["UR5, 3 s with adams from one pose; damping 0.5 N m s/rad on every joint",
             f"{'case':<28} {'v_s rad/s':>10} {'time s':>10} {'RHS evals':>10} {'time ratio':>11}"]
    for name, vs, t, nfev in rows:
        lines.append(f"{name:<28} {vs:>10} {t:>10.4f} {nfev:>10d} {t / base:>11.1f}")
    write_table(lines, args.out)


if __name__ == "__main__":
    main()
