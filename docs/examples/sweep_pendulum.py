"""The example of docs/sweep.md: 500 cases of the double pendulum over three parameters on
local worker processes (or a Dask cluster), its table and a plot.

    python docs/examples/sweep_pendulum.py [--scheduler tcp://host:8786]

Writes sweep_pendulum.parquet (the table), sweep_pendulum_head.csv (its first rows) and
sweep_pendulum.png next to this script.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL = HERE.parents[1] / "models" / "double_pendulum.yaml"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scheduler", default=None, help="a Dask scheduler address (default: local worker processes)")
    args = ap.parse_args()

    import dynamica
    from dynamica.runtime.studies.sweep import sample
    cases = sample({"l1": "uniform(0.6, 1.4)", "l2": "uniform(0.4, 1.0)", "m2": "lognormal(-0.2, 0.3)"},
                   500, design="lhs", seed=1)
    table = dynamica.sweep(MODEL, cases, t_end=5.0, outputs=["tip.position[2]", "phi2"],
                           reductions=("final", "max", "rms"), scheduler=args.scheduler,
                           out=HERE / "sweep_pendulum.parquet", progress=True)
    st = table.attrs["study"]
    print(f"{st['cases']} cases, {st['failed']} failed, {st['seconds']:.1f} s on {st['workers']} workers")
    head = table.drop(columns=["worker"]).head(5)
    head.to_csv(HERE / "sweep_pendulum_head.csv", float_format="%.6g")
    print(head.to_string())
    plot(table, HERE / "sweep_pendulum.png")


def plot(table, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4), constrained_layout=True)
    sc = a.scatter(table["l1"] + table["l2"], table["max(tip.position[2])"], c=table["m2"], s=10, cmap="viridis")
    fig.colorbar(sc, ax=a, label="m2 [kg]")
    a.set_xlabel("l1 + l2 [m]")
    a.set_ylabel("highest tip position over 5 s, z [m]")
    a.set_title("double pendulum, 500 cases (Latin hypercube)")
    sc = b.scatter(table["m2"], table["rms(phi2)"], c=table["l2"], s=10, cmap="plasma")
    fig.colorbar(sc, ax=b, label="l2 [m]")
    b.set_xlabel("m2 [kg]")
    b.set_ylabel("RMS of phi2 over 5 s [rad]")
    fig.savefig(path, dpi=110)


if __name__ == "__main__":                   # the local cluster's workers import this file
    main()
