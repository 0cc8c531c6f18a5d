#!/usr/bin/env python
"""Start-up: 1 s of the double pendulum as a fresh process, dynamica against MuJoCo and Pinocchio.

Each row is a new Python process, started REPEATS times (wall time, best of them):

    python -c pass                 the interpreter alone
    import numpy                   what every row below pays
    dynamica simulate (CLI)        `dynamica simulate models/double_pendulum.yaml --t-end 1 -q`, the
                                   module already in the cache (a warm-up run first)
    dynamica load + simulate       `m = dynamica.load(path); dynamica.simulate(m, t_end=1)`; the
                                   process also reports the time of `load` alone (in-process,
                                   after `import numpy`: with the imports `load` makes itself)
    MuJoCo script                  the double pendulum in MJCF (two hinges), mj_step at 1 ms to 1 s
    Pinocchio + scipy script       the same two links, pin.aba in solve_ivp (LSODA, rtol 1e-8) to 1 s

`--before DIR` adds the two dynamica rows for another checkout (DIR holds its `dynamica`
package folder: e.g. `git archive <commit>` unpacked there, with the compiled runtime/*.so
copied in), with its own cache, in the same run. A plain script, run by hand:
python benchmarks/bench_startup.py [--before DIR]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = HERE.parent / "models" / "double_pendulum.yaml"
REPEATS = 7

CLI = ("import sys\nfrom dynamica.runtime.cli.main import main\n"
       "sys.exit(main(['simulate', sys.argv[1], '--t-end', '1', '-q']))")
API = ("import sys, time\nimport numpy\nimport dynamica\nt0 = time.perf_counter()\nm = dynamica.load(sys.argv[1])\n"
       "t1 = time.perf_counter()\ndynamica.simulate(m, t_end=1.0)\nprint('LOAD', t1 - t0)")
MUJOCO = """
import mujoco
xml = '''<mujoco><option timestep="0.001" gravity="0 0 -9.81"/><worldbody>
<body name="link1"><joint type="hinge" axis="1 0 0"/>
<geom type="capsule" fromto="0 0 0 0 0 -1" size="0.02" mass="1"/>
<body name="link2" pos="0 0 -1"><joint type="hinge" axis="0 1 0"/>
<geom type="capsule" fromto="0 0 0 0 0 -0.7" size="0.02" mass="0.8"/></body></body>
</worldbody></mujoco>'''
m = mujoco.MjModel.from_xml_string(xml)
d = mujoco.MjData(m)
d.qpos[:] = [0.6, -0.4]
d.qvel[:] = [0.0, 1.5]
while d.time < 1.0:
    mujoco.mj_step(m, d)
"""
PINOCCHIO = """
import numpy as np
import pinocchio as pin
from scipy.integrate import solve_ivp
model = pin.Model()
model.gravity.linear = np.array([0.0, 0.0, -9.81])
j1 = model.addJoint(0, pin.JointModelRX(), pin.SE3.Identity(), "phi1")
model.appendBodyToJoint(j1, pin.Inertia(1.0, np.array([0, 0, -0.5]), np.diag([0.0834, 0.0834, 0.0002])),
                        pin.SE3.Identity())
j2 = model.addJoint(j1, pin.JointModelRY(), pin.SE3(np.eye(3), np.array([0, 0, -1.0])), "phi2")
model.appendBodyToJoint(j2, pin.Inertia(0.8, np.array([0, 0, -0.35]), np.diag([0.0328, 0.0328, 0.00016])),
                        pin.SE3.Identity())
data = model.createData()
tau = np.zeros(2)
f = lambda t, y: np.concatenate([y[2:], pin.aba(model, data, y[:2], y[2:], tau)])
solve_ivp(f, (0, 1), [0.6, -0.4, 0.0, 1.5], method="LSODA", rtol=1e-8, atol=1e-10, t_eval=np.linspace(0, 1, 101))
"""


#: the processes keep their bytecode (in a folder of their own), as an installed package has it
PYC = tempfile.mkdtemp(prefix="bench_startup_pyc_")


def run(code, args=(), env=None, repeats=REPEATS):
    """(best wall time, best in-process `load` time or None) over `repeats` processes (after one
    that writes the bytecode)."""
    env = {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = PYC
    subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, env=env, cwd=PYC)
    walls, loads = [], []
    for _ in range(repeats):                # (cwd: not the checkout, whose `dynamica` would be imported)
        t0 = time.perf_counter()
        r = subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True, env=env,
                           cwd=PYC)
        walls.append(time.perf_counter() - t0)
        if r.returncode != 0:
            raise SystemExit(f"failed: {code[:60]!r}\n{r.stderr}")
        loads += [float(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("LOAD ")]
    return min(walls), (min(loads) if loads else None)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", help="a folder holding another checkout's `dynamica` package")
    ap.add_argument("--out", default=str(HERE / "results" / "startup.txt"))
    ap.add_argument("--no-save", action="store_true")
    args = ap.parse_args(argv)
    import platform

    import mujoco
    import pinocchio

    import dynamica
    trees = [("this tree", os.environ.get("PYTHONPATH", ""))]
    if args.before:
        trees.append(("before", str(Path(args.before).resolve())))
    rows = [("python -c pass", *run("pass")), ("import numpy", *run("import numpy"))]
    for label, pythonpath in trees:
        env = {**os.environ, "PYTHONPATH": pythonpath,
               "DYNAMICA_CACHE": tempfile.mkdtemp(prefix="bench_startup_")}
        run(API, [MODEL], env, repeats=2)               # builds, then the cache's records
        rows.append((f"dynamica simulate CLI ({label})", *run(CLI, [MODEL], env)))
        rows.append((f"dynamica load + simulate ({label})", *run(API, [MODEL], env)))
    rows.append(("MuJoCo script", *run(MUJOCO)))
    rows.append(("Pinocchio + scipy script", *run(PINOCCHIO)))
    mj, pn = rows[-2][1], rows[-1][1]
    lines = [f"# start-up, 1 s of the double pendulum in a fresh process: dynamica {dynamica.__version__}, "
             f"mujoco {mujoco.__version__}, pinocchio {pinocchio.__version__}, Python {platform.python_version()}",
             f"# wall time of the process, best of {REPEATS}; load: dynamica.load of the cached model, in-process",
             "", "run | wall s | vs MuJoCo | vs Pinocchio | load ms", "--- | --- | --- | --- | ---"]
    for name, wall, load in rows:
        lines.append(f"{name} | {wall:.3f} | {wall / mj:.2f} | {wall / pn:.2f} | "
                     + ("-" if load is None else f"{1e3 * load:.1f}"))
    print("\n".join(lines))
    if not args.no_save:
        Path(args.out).write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
