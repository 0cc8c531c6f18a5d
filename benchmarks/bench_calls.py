#!/usr/bin/env python
"""Python call overhead of the model's methods against Pinocchio's, on the N-link chain of
bench_spine.py with outputs (bench_outputs.py), default form, at a random state.

For each method: microseconds per call from Python (best of REPEATS timeit runs), the module's
entry called directly with prepared arrays (`module.<entry>(t, ..., p, out)`: the C wrapper and
the kernel, no Python of dynamica's), and the kernel alone timed from C (`rhs_capsule` through
runtime/native/ctiming.pyx: what `rhs` and `qdd` compute). The peers: pin.aba (q''), pin.rnea (inverse
dynamics), pin.crba (mass matrix), each from Python. "converted": the same call with `params={}`,
which takes the path every call took before (arguments converted, p made per call; the
previous closure for rhs_function). A plain script, run by hand:
python benchmarks/bench_calls.py [--sizes 7 20]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import timeit
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_outputs as bo
import bench_spine as bs

HERE = Path(__file__).resolve().parent
REPEATS = 7


def per_call(fn, number=20000) -> float:
    """Microseconds per call, best of REPEATS."""
    return min(timeit.repeat(fn, number=number, repeat=REPEATS)) / number * 1e6


def measure(n: int, folder: Path) -> list:
    import pinocchio as pin

    import dynamica
    from dynamica.runtime.integrators.timing import ctiming
    model = dynamica.load(bo.chain_with_outputs(n, folder))
    rng = np.random.default_rng(n)
    q, qd, qdd = rng.uniform(-1, 1, n), rng.uniform(-1, 1, n), rng.uniform(-1, 1, n)
    y = np.concatenate([q, qd])
    p, out, out2, mm = model.param_vector(), np.empty(n), np.empty(2 * n), np.empty(n * n)
    mod = model.module
    model.inverse_dynamics(q, qd, qdd)                        # its module, generated once
    from dynamica.runtime.kinds.inverse import companion
    inv = companion(model)
    flat = np.empty(model.output_slices()[1])
    f = model.rhs_function()
    rhs = mod.rhs

    def previous_f(t, y):               # rhs_function's closure before it passed arrays as they are
        o = np.empty(2 * n)
        rhs(float(t), np.ascontiguousarray(y, dtype=float), p, o)
        return o
    kernel = min(ctiming().rhs_seconds_per_call(mod.rhs_capsule, 0.0, y, p, out2, 200000) for _ in range(5)) * 1e6
    pm = bs.pinocchio_chain(n)
    pd = pm.createData()
    zero = np.zeros(n)
    assert np.allclose(model.qdd(q, qd), pin.aba(pm, pd, q, qd, zero), rtol=1e-10, atol=1e-10)
    rows = [
        ("qdd", per_call(lambda: model.qdd(q, qd)), per_call(lambda: model.qdd(q, qd, params={})),
         per_call(lambda: mod.qdd(0.0, q, qd, p, out)), kernel, "pin.aba",
         per_call(lambda: pin.aba(pm, pd, q, qd, zero))),
        ("rhs", per_call(lambda: model.rhs(0.0, y)), per_call(lambda: model.rhs(0.0, y, params={})),
         per_call(lambda: mod.rhs(0.0, y, p, out2)), kernel, "pin.aba", None),
        ("rhs_function f(t, y)", per_call(lambda: f(0.0, y)), per_call(lambda: previous_f(0.0, y)), None, kernel,
         "pin.aba", None),
        ("inverse_dynamics", per_call(lambda: model.inverse_dynamics(q, qd, qdd)),
         per_call(lambda: model.inverse_dynamics(q, qd, qdd, params={})),
         per_call(lambda: inv.inverse_dynamics(0.0, q, qd, qdd, p, out)), None,
         "pin.rnea", per_call(lambda: pin.rnea(pm, pd, q, qd, qdd))),
        ("mass_matrix", per_call(lambda: model.mass_matrix(q)), per_call(lambda: model.mass_matrix(q, params={})),
         per_call(lambda: mod.mass_matrix(0.0, q, p, mm)), None, "pin.crba", per_call(lambda: pin.crba(pm, pd, q))),
        ("outputs", per_call(lambda: model.outputs(0.0, q, qd), number=5000), None,
         per_call(lambda: mod.outputs(0.0, q, qd, p, flat)), None, "-", None),
    ]
    peers = {r[5]: r[6] for r in rows if r[6] is not None}
    return [(n, name, py, conv, raw, ker, peer, peers.get(peer)) for name, py, conv, raw, ker, peer, _ in rows]


def report(rows, info) -> list:
    head = ("N", "call", "Python us", "converted us", "entry us", "kernel us (C)", "Python - entry", "peer",
            "peer us", "Python / peer", "converted / peer")
    lines = info + ["", " | ".join(head), " | ".join("---" for _ in head)]

    def f(x, spec=".3f"):
        return "-" if x is None else format(x, spec)
    for n, name, py, conv, raw, ker, peer, pus in rows:
        lines.append(" | ".join([str(n), name, f(py), f(conv), f(raw), f(ker), f(None if raw is None else py - raw),
                                 peer, f(pus), f(None if pus is None else py / pus, ".2f"),
                                 f(None if pus is None or conv is None else conv / pus, ".2f")]))
    return lines


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="*", default=[7])
    ap.add_argument("--out", default=str(HERE / "results" / "calls.txt"))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import platform

    import pinocchio

    import dynamica
    tmp = Path(tempfile.mkdtemp(prefix="bench_calls_"))
    rows = [r for n in args.sizes for r in measure(n, tmp)]
    info = [f"# Python call overhead: dynamica {dynamica.__version__}, pinocchio {pinocchio.__version__}, "
            f"Python {platform.python_version()}, {platform.machine()}",
            f"# the chain of bench_spine.py with outputs, default form; best of {REPEATS} timeit runs"]
    lines = report(rows, info)
    print("\n".join(lines))
    if not args.no_save:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
