#!/usr/bin/env python
"""Derivative kernels: the cost of the full Jacobian dq''/d[q, q'] of chains against
one right-hand side and against Pinocchio's computeABADerivatives, measured in the same run.

    python benchmarks/bench_derivatives.py                 # N = 5 10 20 40
    python benchmarks/bench_derivatives.py --sizes 20 --no-save
    python benchmarks/bench_derivatives.py --sizes 50 --springs --variants numeric recursive_loops

Model: the chains of benchmarks/bench_forms.py with 1-DOF revolute joints (x, y, x, ...; offsets
with three components, centres of mass off the axes, full inertia tensors, gravity). Per size,
into a fresh cache: dynamica generates and compiles the model (forms composite and articulated)
and its derivatives module (generator/kinds/derivatives.py); generation and compile seconds and the
operation counts of the kernels are reported. --springs: a spring-damper on every joint (stiffness
k_i, damping c_i, neutral q0_i; `joint_spring_damper`), and Pinocchio's peer computeABADerivatives at
tau = -K (q - q0) - C q' with the springs' partials added by hand (closed form: ddq_dq - M^-1 K,
ddq_dv - M^-1 C; "pin der+K" times both, the product with diagonal K, C as a column scaling).

Times per call (best of --rounds interleaved rounds, at one random state):
  - RHS C: the model's rhs_capsule in the C loop of runtime.timing (no Python per call);
  - RHS py: module.rhs(t, y, p, out) called from Python (so the binding cost is the same as for
    the Jacobian below);
  - jac py: the derivatives module's qdd_jacobian(t, q, qd, p, qdd, J) from Python: q'', M, its LU,
    J = [dr/dq | dr/dqd] and the 2n solves -M^-1 J, all in C; the variants of the module (--variants):
    the unrolled tangent program (up to --unrolled-max), the tape (partials kernel + a loop) and the
    recursive one (analytical derivatives; q'', M's L^T D L factors and J from one kernel,
    solve_jacobian, then the 2n solves);
  - kernel py: residual_jacobian alone (at a given q'');
  - pin.aba and pin.computeABADerivatives(model, data, q, v, tau) from Python.
Checks: dynamica's dq''/dq, dq''/dqd against Pinocchio's ddq_dq, ddq_dv (largest difference over
the largest entry).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
import timeit
from pathlib import Path

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")       # small matrices: threads only contend (2 shared cores)
os.environ.setdefault("OMP_NUM_THREADS", "1")
import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["DYNAMICA_CACHE"] = tempfile.mkdtemp(prefix="dcache_deriv_")

from bench_forms import model_dict, write_model  # noqa: E402
from bench_scale import pinocchio_model  # noqa: E402

VARIANTS = ("unrolled", "tape", "recursive", "recursive_loops", "numeric")


def best(f, rounds):
    t = timeit.timeit(f, number=3) / 3
    number = max(3, int(0.05 / max(t, 1e-9)))
    return min(timeit.repeat(f, number=number, repeat=rounds)) / number


def build(path, variant):
    from dynamica.build import compile_bundle, import_extension
    from dynamica.generator.pipeline import generate_derivatives
    t0 = time.perf_counter()
    gen = generate_derivatives(path, variant=variant)
    t1 = time.perf_counter()
    so = compile_bundle(gen.bundle)
    t2 = time.perf_counter()
    return import_extension(so), t1 - t0, t2 - t1, {k.name: k.op_count()["total"] for k in gen.module_ir.kernels}


def spring_laws(n):
    """Per joint (stiffness, damping, neutral) of --springs: varied, of the size of the gravity torques."""
    return [(20.0 + 5.0 * (i % 7), 0.5 + 0.1 * (i % 5), 0.1 * ((i % 3) - 1)) for i in range(n)]


def write_spring_model(n, folder):
    import yaml
    d = model_dict("chain", n, 1)
    d["name"] += "s"
    d["forces"] = [{"type": "joint_spring_damper", "coordinate": f"q{i + 1}", "stiffness": k, "damping": c,
                    "neutral": q0} for i, (k, c, q0) in enumerate(spring_laws(n))]
    path = folder / f"{d['name']}.yaml"
    with open(path, "w") as f:
        yaml.safe_dump(d, f, sort_keys=False)
    return path


def run(n, rounds, folder, unrolled_max, only=("unrolled", "tape", "recursive"), numeric_above=40, springs=False):
    import pinocchio as pin

    import dynamica
    from dynamica.runtime.integrators.timing import seconds_per_call
    from dynamica.runtime.kinds.derivatives import Derivatives
    path = write_spring_model(n, folder) if springs else write_model("chain", n, 1, folder)
    row = {"n": n}
    variants = tuple(v for v in only if v != "unrolled" or n <= unrolled_max)
    mods = {}
    for v in variants:
        mods[v], row[f"gen_{v}"], row[f"cc_{v}"], row[f"ops_{v}"] = build(path, v)
    mode = "numeric" if n > numeric_above else "symbolic"      # the RHS peers: symbolic builds take minutes at 100
    models = {f: dynamica.load(path, form=f, mode=mode) for f in ("composite", "articulated")}
    row["mode"] = mode
    rng = np.random.default_rng(n)
    q, qd = rng.uniform(-np.pi, np.pi, n), rng.uniform(-1, 1, n)
    y = np.concatenate([q, qd])
    p = models["composite"].param_vector()
    qdd, J, r, yd = np.empty(n), np.empty(2 * n * n), np.empty(n), np.empty(2 * n)
    pm = pinocchio_model(model_dict("chain", n, 1))
    pd = pm.createData()
    laws = np.array(spring_laws(n)) if springs else np.zeros((n, 3))
    K, C, q0 = laws[:, 0], laws[:, 1], laws[:, 2]
    tau = -K * (q - q0) - C * qd

    def pin_springs():          # the spring-dampers' partials by hand: - M^-1 [K | C] (diagonal: column scaling)
        pin.computeABADerivatives(pm, pd, q, qd, tau)
        Minv = np.triu(pd.Minv) + np.triu(pd.Minv, 1).T
        return pd.ddq_dq - Minv * K, pd.ddq_dv - Minv * C
    timers = {f"jac_{v}": (lambda m=m: m.qdd_jacobian(0.0, q, qd, p, qdd, J)) for v, m in mods.items()}
    timers.update({f"kernel_{v}": (lambda m=m: m.residual_jacobian(0.0, q, qd, qdd, p, r, J)) for v, m in mods.items()})
    timers.update({
        "rhs_py": lambda: models["composite"].module.rhs(0.0, y, p, yd),
        "rhs_abm_py": lambda: models["articulated"].module.rhs(0.0, y, p, yd),
        "pin_aba": lambda: pin.aba(pm, pd, q, qd, tau),
        "pin_deriv": lambda: pin.computeABADerivatives(pm, pd, q, qd, tau),
        "pin_springs": pin_springs,
    })
    times = {k: float("inf") for k in timers}
    for _ in range(rounds):
        for k, f in timers.items():
            times[k] = min(times[k], best(f, 1))
    row.update({k: v * 1e6 for k, v in times.items()})
    row["rhs_c"] = 1e6 * seconds_per_call(models["composite"], states=y[None, :])
    row["rhs_abm_c"] = 1e6 * seconds_per_call(models["articulated"], states=y[None, :])
    Pq, Pv = pin_springs()
    scale = max(np.abs(Pq).max(), np.abs(Pv).max(), 1.0)
    for v, m in mods.items():
        _, Jq, Jv = Derivatives(m, models["composite"]).qdd_jacobian(q, qd)
        row[f"err_{v}"] = max(np.abs(Jq - Pq).max(), np.abs(Jv - Pv).max()) / scale
    return row


def report(rows) -> list:
    lines = [f"{'N':>3s} {'variant':>15s} {'gen s':>6s} {'cc s':>6s} {'ops res':>8s} {'ops jac':>8s} {'RHS C':>7s} "
             f"{'ABM C':>7s} {'RHS py':>7s} {'jac py':>8s} {'kernel':>8s} {'jac/RHS':>8s} {'jac/ABM':>8s} "
             f"{'pin aba':>8s} {'pin der':>8s} {'der+K':>8s} {'jac/pin':>8s} {'err pin':>8s} {'load':>9s}"]
    for r in rows:
        for v in VARIANTS:
            if f"jac_{v}" not in r:
                continue
            ops = r[f"ops_{v}"]
            jac_ops = next(ops[k] for k in ("solve_jacobian", "residual_jacobian", "residual_partials", "pair_terms",
                                            "numeric_terms") if k in ops) + ops.get("force_jacobian", 0)
            lines.append(f"{r['n']:3d} {v:>15s} {r['gen_' + v]:6.2f} {r['cc_' + v]:6.2f} {ops.get('residual', 0):8d} "
                         f"{jac_ops:8d} {r['rhs_c']:7.2f} {r['rhs_abm_c']:7.2f} {r['rhs_py']:7.2f} "
                         f"{r['jac_' + v]:8.2f} {r['kernel_' + v]:8.2f} {r['jac_' + v] / r['rhs_py']:8.2f} "
                         f"{r['jac_' + v] / r['rhs_abm_py']:8.2f} {r['pin_aba']:8.2f} {r['pin_deriv']:8.2f} "
                         f"{r['pin_springs']:8.2f} "
                         f"{r['jac_' + v] / r['pin_deriv']:8.2f} {r['err_' + v]:8.1e} "
                         f"{r['load'][0]:4.1f}-{r['load'][1]:4.1f}")
    return lines


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[5, 10, 20, 40])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--unrolled-max", type=int, default=24, help="build the unrolled variant up to this N")
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS))
    ap.add_argument("--numeric-above", type=int, default=40,
                    help="the RHS peers (composite, articulated) in numeric mode above this N")
    ap.add_argument("--springs", action="store_true", help="a spring-damper on every joint (module docstring)")
    ap.add_argument("--no-save", action="store_true")
    ap.add_argument("--out", default="derivatives.txt", help="the file of benchmarks/results/ the table goes to")
    args = ap.parse_args(argv)
    import pinocchio

    import dynamica
    folder = Path(tempfile.mkdtemp(prefix="bench_deriv_"))
    rows = []
    for n in args.sizes:
        load0 = os.getloadavg()[0]
        print(f"[{time.strftime('%H:%M:%S')}] N = {n}", file=sys.stderr, flush=True)
        rows.append(run(n, args.rounds, folder, args.unrolled_max, tuple(args.variants), args.numeric_above,
                        args.springs))
        rows[-1]["load"] = (load0, os.getloadavg()[0])
        print(report(rows[-1:])[-len(args.variants):], file=sys.stderr, flush=True)
    head = [
        f"Derivative kernels: full Jacobian dq''/d[q, qd] of 1-DOF chains"
        f"{' with a spring-damper on every joint' if args.springs else ''}; {platform.platform()}, "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; python {platform.python_version()}, "
        f"dynamica {dynamica.__version__}, pinocchio {pinocchio.__version__}",
        "times in us per call (best of interleaved rounds); RHS/ABM C: rhs_capsule in a C loop (forms composite, "
        "articulated); RHS py, jac py, kernel, pin: called from Python (binding cost included in each);",
        "jac = derivatives module qdd_jacobian (q'', M, LU, tangent, -M^-1 J; recursive: one kernel for q'', the "
        "factors of M and J, then -M^-1 J); kernel = residual_jacobian alone (unrolled: the tangent kernel; tape: "
        "the partials kernel and the loop of dynamica_linalg.h; recursive: the analytical derivatives at given q'');",
        "ops jac: the tangent kernel (unrolled), the partials kernel (tape), the solve_jacobian kernel (recursive: "
        "q'', M's factors and J in one); jac/RHS, jac/ABM: over the composite / "
        "articulated RHS called from Python; err pin: vs computeABADerivatives (with the springs' partials "
        "added by hand: der+K; jac/pin is over pin der alone); recursive_loops: the kernel "
        "pair_terms (ops jac) gives the per-coordinate vectors, the pairs, M and its L^T D L are loops; "
        f"RHS peers in numeric mode above N = {args.numeric_above}; numeric: the generated terms kernel "
        "(ops jac, with the force_jacobian kernel of the springs) and the loops of numeric_deriv.h; gen s, cc s: "
        "first build into a fresh cache; load: the 1-minute load "
        "average before and after the size's builds and timings",
        "",
    ]
    text = "\n".join(head + report(rows))
    print(text)
    if not args.no_save:
        (HERE / "results").mkdir(exist_ok=True)
        command = f"python benchmarks/bench_derivatives.py {' '.join(argv or sys.argv[1:])}\n"
        (HERE / "results" / args.out).write_text(command + text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
