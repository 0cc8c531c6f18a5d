"""A parameter sweep

`dynamica.sweep` runs the double pendulum over a Latin hypercube of 60 cases of the rod
lengths (here in this process, `scheduler="serial"`; a Dask cluster takes the same call) and
tabulates reductions of outputs over each run: the highest point the tip reaches against the
total length, coloured by the lower rod's share.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

import dynamica
from dynamica.runtime.studies.sweep import sample

MODELS = Path(__file__).resolve().parents[2] / "models"

cases = sample({"l1": "uniform(0.6, 1.4)", "l2": "uniform(0.4, 1.0)"}, 60, design="lhs", seed=1)
table = dynamica.sweep(MODELS / "double_pendulum.yaml", cases, t_end=3.0, outputs=["tip.position[2]", "phi2"],
                       reductions=("max", "rms"), scheduler="serial")
print(table.drop(columns=["worker"], errors="ignore").head().to_string())

fig, ax = plt.subplots(figsize=(7, 4), constrained_layout=True)
sc = ax.scatter(table["l1"] + table["l2"], table["max(tip.position[2])"], c=table["l2"] / (table["l1"] + table["l2"]),
                cmap="viridis", s=18)
fig.colorbar(sc, ax=ax, label="l2 / (l1 + l2)")
ax.set_xlabel("l1 + l2 [m]")
ax.set_ylabel("highest tip z over 3 s [m]")
fig.savefig("sweep.png", dpi=100)
