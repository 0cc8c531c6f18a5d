"""A four-bar linkage (a closed loop)

The bundled `models/fourbar.yaml`: a crank-rocker in the x-y plane under gravity along -y, its
loop closed by a pin between coupler and rocker (three coordinates, two loop equations, one
degree of freedom). Drawn at a few instants from its coordinates, beside the crank and rocker
angles.
"""

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dynamica

MODELS = Path(__file__).resolve().parents[2] / "models"

model = dynamica.load(MODELS / "fourbar.yaml")
res = dynamica.simulate(model, t_end=3.0, output_step=0.01)
p = model.parameters
th1, th2, th3 = (res.q[:, res.coordinates.index(c)] for c in ("th1", "th2", "th3"))

fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
for k in np.linspace(0, len(res.t) - 1, 6).astype(int):
    crank = p["l1"] * np.array([np.cos(th1[k]), np.sin(th1[k])])
    pin = crank + p["l2"] * np.array([np.cos(th1[k] + th2[k]), np.sin(th1[k] + th2[k])])
    rocker = np.array([p["l0"], 0.0]) + p["l3"] * np.array([np.cos(th3[k]), np.sin(th3[k])])
    xs = [0.0, crank[0], pin[0], rocker[0], p["l0"]]
    ys = [0.0, crank[1], pin[1], rocker[1], 0.0]
    a.plot(xs, ys, "o-", alpha=0.35 + 0.65 * k / (len(res.t) - 1), label=f"t = {res.t[k]:.1f} s")
a.set_aspect("equal")
a.set_xlabel("x [m]")
a.set_ylabel("y [m]")
a.legend(fontsize=7)
b.plot(res.t, th1, label="th1 (crank)")
b.plot(res.t, th3, label="th3 (rocker)")
b.set_xlabel("t [s]")
b.set_ylabel("angle [rad]")
b.legend()
fig.savefig("fourbar.png", dpi=100)
