"""A launcher's cyclogram (stages)

The launcher of `models/launcher.py` with one mock-up (the bundled file has four; one keeps the
build short): statics on the wheels, on the jacks and at the aiming angles, then a hold, a slide
along the helical guide and the flight as a released free body, each stage a model of its own
joined at the boundaries. The base's pitch and the elevation drive's deflection from where the
statics left them, over the launch stages, their boundaries dashed.
"""

import importlib.util
from pathlib import Path

import matplotlib
import numpy as np
import yaml

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dynamica

MODELS = Path(__file__).resolve().parents[2] / "models"

spec = importlib.util.spec_from_file_location("launcher", MODELS / "launcher.py")
launcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launcher)
Path("launcher_1.yaml").write_text(yaml.safe_dump(launcher.model(1), sort_keys=False))

res = dynamica.simulate(dynamica.load("launcher_1.yaml"))
names = [c for c in ("pitch_b", "theta") if c in res.coordinates]
hold = next(s for s in res.stages if s["name"].startswith("hold"))            # the statics are done
t0 = hold["t_start"]
rows = np.arange(len(res.t)) >= np.nonzero(res.stage == hold["name"])[0][0]
fig, axes = plt.subplots(len(names), 1, figsize=(10, 2.2 * len(names) + 0.6), sharex=True, constrained_layout=True)
for ax, name in zip(axes, names):
    q = res.q[rows, res.coordinates.index(name)]
    ax.plot(res.t[rows], q - q[0])
    ax.set_ylabel(f"{name} - at launch [rad]")
    for s in res.stages:
        if s["t_start"] > t0:
            ax.axvline(s["t_start"], ls="--", color="0.6", lw=0.8)
            ax.text(s["t_start"], 1.0, " " + s["name"], transform=ax.get_xaxis_transform(), fontsize=8, va="top")
axes[-1].set_xlabel("t [s]")
fig.savefig("launcher.png", dpi=100)
print(", ".join(s["name"] for s in res.stages))
