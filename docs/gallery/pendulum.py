"""A double pendulum

The bundled `models/double_pendulum.yaml` (two rods on revolute joints) released from 0.6 and
-0.4 rad: its angles over 10 s and the path of its tip, a model output, in the x-z plane.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dynamica

MODELS = Path(__file__).resolve().parents[2] / "models"

model = dynamica.load(MODELS / "double_pendulum.yaml")
res = dynamica.simulate(model, t_end=10.0, output_step=0.005)

fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8), constrained_layout=True)
for name in ("phi1", "phi2"):
    a.plot(res.t, res.q[:, res.coordinates.index(name)], label=name)
a.set_xlabel("t [s]")
a.set_ylabel("angle [rad]")
a.legend()
tip = res.outputs["tip.position"]
b.plot(tip[:, 0], tip[:, 2], lw=0.8)
b.set_aspect("equal")
b.set_xlabel("tip x [m]")
b.set_ylabel("tip z [m]")
fig.savefig("pendulum.png", dpi=100)
print(f"{len(res.t)} rows, {res.nfev} RHS calls")
