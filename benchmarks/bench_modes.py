#!/usr/bin/env python
"""Modes of long chains: statics, linearisation and eigenanalysis of the N-body chains
of benchmarks/bench_forms.py (1-DOF revolute joints about x, y, x, ...; centres of mass off the
axes, so the hanging equilibrium is not q = 0), checked against Pinocchio.

    python benchmarks/bench_modes.py                    # N = 20 50 100
    python benchmarks/bench_modes.py --sizes 100 --no-save

Per size, into a fresh cache, in this process: the model's module is compiled in numeric mode
(form articulated, fast to build); its derivatives module is generated (the tape variant above
24 coordinates, generator/ir/tangent.py) and compiled; then

  statics    dynamica.statics from q = 0: Newton iterations on r(q, 0, 0) with K = dr/dq
  linearize  dynamica.linearize about that equilibrium (M, C, K from the derivatives module)
  modes      lin.modes(): eigh(K, M) and the eigenvalues of A
  fd         for comparison: K by central differences of the main module (M q'' at rest, 2N calls)

Checks against Pinocchio at dynamica's equilibrium q*: |rnea(q*, 0, 0)| (the gravity torque
there, should vanish), M against crba, K against computeGeneralizedGravityDerivatives, and the
natural frequencies from eigh(K_pin, M_pin) (largest relative difference).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ["DYNAMICA_CACHE"] = tempfile.mkdtemp(prefix="dcache_modes_")
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_forms import model_dict, write_model  # noqa: E402
from bench_scale import pinocchio_model  # noqa: E402


def timed(f):
    t0 = time.perf_counter()
    out = f()
    return out, time.perf_counter() - t0


def run(n, folder):
    import pinocchio as pin
    import scipy.linalg as sla

    import dynamica
    from dynamica.runtime.kinds.derivatives import derivatives
    path = write_model("chain", n, 1, folder)
    model, t_load = timed(lambda: dynamica.load(path, form="articulated", mode="numeric"))
    d, t_deriv = timed(lambda: derivatives(model))
    eq, t_statics = timed(lambda: dynamica.statics(model, q0=np.zeros(n)))
    lin, t_lin = timed(lambda: dynamica.linearize(model, q=eq.q))
    md, t_modes = timed(lin.modes)

    def Q(q):
        return model.mass_matrix(q) @ model.qdd(q, np.zeros(n))
    h = 1e-6
    K_fd, t_fd = timed(lambda: -np.array([(Q(eq.q + h * e) - Q(eq.q - h * e)) / (2 * h) for e in np.eye(n)]).T)
    pm = pinocchio_model(model_dict("chain", n, 1))
    pd = pm.createData()
    g_res = np.max(np.abs(pin.rnea(pm, pd, eq.q, np.zeros(n), np.zeros(n))))
    M_pin = pin.crba(pm, pd, eq.q)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    K_pin = pin.computeGeneralizedGravityDerivatives(pm, pd, eq.q)
    w_pin = np.sqrt(np.maximum(sla.eigh((K_pin + K_pin.T) / 2, M_pin, eigvals_only=True), 0.0))
    return {"n": n, "variant": d.module.INFO.get("variant", "?"), "load": t_load, "deriv": t_deriv,
            "statics": t_statics, "iterations": eq.iterations, "lin": t_lin, "modes": t_modes, "fd": t_fd,
            "f": md.frequencies, "g_res": g_res, "err_M": np.max(np.abs(lin.M - M_pin)) / np.max(np.abs(M_pin)),
            "err_K": np.max(np.abs(lin.K - K_pin)) / np.max(np.abs(K_pin)),
            "err_Kfd": np.max(np.abs(K_fd - K_pin)) / np.max(np.abs(K_pin)),
            "err_w": np.max(np.abs(md.angular_frequencies / w_pin - 1)), "stable": eq.stable,
            "ops": {k: v["total"] for k, v in d.module.OPERATION_COUNTS.items()}}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20, 50, 100])
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import pinocchio

    import dynamica
    folder = Path(tempfile.mkdtemp(prefix="bench_modes_"))
    rows = []
    for n in args.sizes:
        print(f"[{time.strftime('%H:%M:%S')}] N = {n}", file=sys.stderr, flush=True)
        rows.append(run(n, folder))
    head = [
        f"Modes of N-body chains; {platform.platform()}, {os.cpu_count()} cores, load average "
        f"{os.getloadavg()[0]:.2f}; python {platform.python_version()}, dynamica {dynamica.__version__}, "
        f"pinocchio {pinocchio.__version__}",
        "seconds: load = main module (numeric mode, articulated), derivatives = generate + compile the derivatives "
        "module, statics (Newton iterations), linearize, modes (eigenproblems), fd = K by 2N central differences;",
        "errors relative to Pinocchio at dynamica's equilibrium q*: |rnea(q*, 0, 0)|, M vs crba, K vs "
        "computeGeneralizedGravityDerivatives, K by central differences vs the same, natural frequencies",
        "",
        f"{'N':>4s} {'variant':>8s} {'load':>6s} {'deriv':>7s} {'statics':>8s} {'it':>3s} {'lin':>6s} {'modes':>6s} "
        f"{'fd':>6s} {'f1 Hz':>8s} {'f2 Hz':>8s} {'fN Hz':>9s} {'|g(q*)|':>8s} {'M err':>8s} {'K err':>8s} "
        f"{'K fd err':>8s} {'w err':>8s}",
    ]
    lines = [
        f"{r['n']:4d} {r['variant']:>8s} {r['load']:6.2f} {r['deriv']:7.2f} {r['statics']:8.3f} {r['iterations']:3d} "
        f"{r['lin']:6.3f} {r['modes']:6.3f} {r['fd']:6.3f} {r['f'][0]:8.4f} {r['f'][1]:8.4f} {r['f'][-1]:9.3f} "
        f"{r['g_res']:8.1e} {r['err_M']:8.1e} {r['err_K']:8.1e} {r['err_Kfd']:8.1e} {r['err_w']:8.1e}"
        for r in rows
    ]
    ops = [f"  N = {r['n']}: derivatives module operations {r['ops']}" for r in rows]
    text = "\n".join(head + lines + [""] + ops)
    print(text)
    if not args.no_save:
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "modes.txt").write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
