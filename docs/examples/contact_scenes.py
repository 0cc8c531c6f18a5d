"""The examples of docs/contact.md: a ball bouncing, a box sliding to rest, a sphere rolling down
an incline (each against its closed form) and Gymnasium's MJCF hopper falling to rest (against
MuJoCo running the same file).

    python docs/examples/contact_scenes.py

Writes contact_scenes.png next to this script and prints one line per scene.
"""

from __future__ import annotations

import importlib.util
import math
import tempfile
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
G = 9.81


def planar(name, shape, inertia, gravity=(0, 0, -G), initial=None, law=None):
    """One body on x, z, pitch over the floor z = 0 carrying `shape`."""
    return {"name": name, "gravity": list(gravity),
            "bodies": [{"name": "b", "parent": "ground",
                        "joint": [{"translate": "x", "q": "x"}, {"translate": "z", "q": "z"},
                                  {"rotate": "y", "q": "th"}],
                        "mass": 1.0, "com": [0, 0, 0], "inertia": list(inertia)}],
            "initial": initial or {},
            "contact": {"shapes": {"floor": {"type": "plane", "body": "ground"}, "s": {"body": "b", **shape}},
                        "defaults": law or {}}}


def load(d, folder):
    import yaml

    import dynamica
    path = Path(folder) / f"{d['name']}.yaml"
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return dynamica.load(path)


def main():
    import dynamica
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        ball = load(planar("ball", {"type": "sphere", "radius": 0.1}, (0.004,) * 3, initial={"z": 1.0},
                           law={"damping": 0.2}), folder)
        r = dynamica.simulate(ball, 3.0, output_step=0.002)
        out["ball"] = r
        starts = [c[0] for c in r.info["contacts"] if c[3] == 1]
        print(f"ball: {len(starts)} impacts in 3 s, the first at t = {starts[0]:.5f} s "
              f"(free fall: {math.sqrt(2 * 0.9 / G):.5f} s)")

        box = load(planar("box", {"type": "box", "size": [0.2, 0.2, 0.1]}, (0.0042, 0.0042, 0.0067),
                          initial={"z": 0.05}, law={"friction": 0.5}), folder)
        r = dynamica.simulate(box, 1.0, qd0=[2.0, 0, 0], output_step=0.002)
        out["box"] = r
        print(f"box: stops after {r.q[-1, 0]:.5f} m (v0^2 / (2 mu g) = {4 / (2 * 0.5 * G):.5f} m)")

        th = math.radians(20)
        roll = load(planar("roll", {"type": "sphere", "radius": 0.1}, (0.004,) * 3,
                           gravity=(G * math.sin(th), 0, -G * math.cos(th)), initial={"z": 0.1},
                           law={"damping": 2.0}), folder)
        r = dynamica.simulate(roll, 1.0, output_step=0.002)
        out["roll"] = r
        sel = r.t > 0.2
        a = np.polyfit(r.t[sel], r.qd[sel, 0], 1)[0]
        print(f"sphere: rolls at {a:.5f} m/s^2 ((5/7) g sin(theta) = {5 / 7 * G * math.sin(th):.5f})")

    spec = importlib.util.find_spec("gymnasium")
    if spec is not None and importlib.util.find_spec("mujoco") is not None:
        path = Path(spec.origin).parent / "envs" / "mujoco" / "assets" / "hopper.xml"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")              # what the import leaves out, named once
            hopper = dynamica.load(path, actuators="off")
        r = dynamica.simulate(hopper, 3.0, output_step=0.005, rtol=1e-6, atol=1e-8)
        out["hopper"] = (r, mujoco_hopper(path, 3.0))
        print(f"hopper: comes to rest with rootz = {r.q[-1, 1]:.4f} m (MuJoCo: {out['hopper'][1][1][-1]:.4f} m); "
              f"{r.info['restarts']} contact events")
    plot(out, HERE / "contact_scenes.png")


def mujoco_hopper(path, t_end):
    """MuJoCo on the same file, actuation off: (t, rootz) every 5 ms."""
    import mujoco
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.disableflags |= mujoco.mjtDisableBit.mjDSBL_ACTUATION
    d = mujoco.MjData(m)
    ts, zs = [0.0], [float(d.qpos[1])]
    every = max(1, round(0.005 / m.opt.timestep))
    k = 0
    while d.time < t_end - 1e-12:
        mujoco.mj_step(m, d)
        k += 1
        if k % every == 0:
            ts.append(d.time), zs.append(float(d.qpos[1]))
    return np.array(ts), np.array(zs)


def plot(out, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), constrained_layout=True)
    a = axes[0, 0]
    r = out["ball"]
    a.plot(r.t, r.q[:, 1] - 0.1, lw=1)
    a.set(xlabel="t [s]", ylabel="height of the ball's lowest point [m]",
          title="a ball dropped from 0.9 m (damping c = 0.2 s/m)")
    a = axes[0, 1]
    r = out["box"]
    a.plot(r.t, r.q[:, 0], label="x [m]")
    a.plot(r.t, r.qd[:, 0], label="x' [m/s]")
    a.axhline(4 / (2 * 0.5 * G), color="k", ls=":", lw=1, label="v0^2 / (2 mu g)")
    a.set(xlabel="t [s]", title="a box given 2 m/s slides to rest (mu = 0.5)")
    a.legend()
    a = axes[1, 0]
    r = out["roll"]
    th = math.radians(20)
    a.plot(r.t, r.qd[:, 0], label="x' (dynamica)")
    a.plot(r.t, 5 / 7 * G * math.sin(th) * r.t, "k:", label="(5/7) g sin(theta) t")
    a.set(xlabel="t [s]", ylabel="[m/s]", title="a sphere rolls down a 20 degree incline")
    a.legend()
    a = axes[1, 1]
    if "hopper" in out:
        r, (tm, zm) = out["hopper"]
        a.plot(r.t, r.q[:, 1], label="dynamica")
        a.plot(tm, zm, "--", label="MuJoCo")
        a.set(xlabel="t [s]", ylabel="rootz [m]", title="Gymnasium's hopper (MJCF) falls to rest")
        a.legend()
    fig.savefig(path, dpi=90)


if __name__ == "__main__":
    main()
