"""A stiff mechanism: the bundled four-bar with a stiff damper on its crank, integrated
by the DAE integrator `ida`, by scipy's `radau` on the index-1 ODE and by `adams`.

    python benchmarks/bench_loops_stiff.py [--damping 2000] [--t-end 20] [--out results/loops_stiff.txt]

Error: max |q - q_ref| over the outputs against radau at rtol 1e-12 (the ODE form); drift: the
largest |phi(q)| over the outputs; calls: RHS evaluations (residual evaluations for ida, IDA's
difference Jacobians included). adams gets at most 500 000 steps.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--damping", type=float, default=2000.0, help="damping of the crank's damper, N m s/rad")
    ap.add_argument("--t-end", type=float, default=20.0)
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)
    import dynamica
    from dynamica.errors import IntegrationError
    d = yaml.safe_load((ROOT / "models" / "fourbar.yaml").read_text())
    d["name"] = "fourbar_stiff"
    d.setdefault("forces", []).append({"type": "joint_spring_damper", "name": "stiff", "coordinate": "th1",
                                       "stiffness": 0.0, "damping": args.damping})
    path = Path(tempfile.mkdtemp()) / "fourbar_stiff.yaml"
    path.write_text(yaml.safe_dump(d))
    model = dynamica.load(str(path))
    kw = dict(t_end=args.t_end, output_step=args.t_end / 40)
    warnings.simplefilter("ignore")
    ref = dynamica.simulate(model, method="radau", rtol=1e-12, atol=1e-14, **kw)
    lines = [
        f"bench_loops_stiff: four-bar with a damper of {args.damping:g} N m s/rad on th1, t = 0 .. {args.t_end:g} s; "
        f"{time.strftime('%Y-%m-%d')}; {platform.platform()}, {os.cpu_count()} cores",
        f"{'method':8s} {'rtol':>7s} {'seconds':>9s} {'calls':>8s} {'error':>9s} {'drift':>9s}",
    ]
    for method, tol in [("ida", 1e-6), ("ida", 1e-8), ("radau", 1e-6), ("radau", 1e-8), ("adams", 1e-6),
                        ("adams", 1e-8)]:
        dynamica.simulate(model, method=method, rtol=tol, atol=tol * 1e-2, t_end=1e-3)     # warm up
        t0 = time.perf_counter()
        try:
            r = dynamica.simulate(model, method=method, rtol=tol, atol=tol * 1e-2, **kw)
        except IntegrationError as exc:
            lines.append(f"{method:8s} {tol:7.0e} {time.perf_counter() - t0:9.3f}  failed: {str(exc)[:90]}")
            continue
        dt = time.perf_counter() - t0
        drift = max(float(np.max(np.abs(model.constraints(q, t)))) for t, q in zip(r.t, r.q))
        lines.append(f"{method:8s} {tol:7.0e} {dt:9.3f} {r.nfev:8d} {np.max(np.abs(r.q - ref.q)):9.2e} {drift:9.2e}")
    print("\n".join(lines))
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
