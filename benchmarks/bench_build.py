"""Cold-cache build time of a module: generation and compilation, against the previous route.

    python benchmarks/bench_build.py [--repeat 3] [--out results/build.txt]

Each model is generated once; its bundle is then compiled into an empty cache `repeat` times
(the median is reported). The peer, measured in the same run on the same generated kernels, is
the route dynamica used before: a Cython module around the kernel header,
cythonized and compiled through setuptools in a subprocess (what build.py did for every model).
Models: the bundled double pendulum and chains of 10 and 20 revolute links (generated here).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _peers import write_table

ROOT = Path(__file__).resolve().parent.parent

#: the old per-model route: a Cython wrapper of the entry points, built by setuptools
PEER_SCRIPT = r"""
import sys
from setuptools import Distribution, Extension
from Cython.Build import cythonize
ext = Extension(sys.argv[2], [sys.argv[1]], extra_compile_args=["-O2", "-fno-math-errno"])
exts = cythonize([ext], quiet=True, language_level=3)
dist = Distribution({"ext_modules": exts, "script_name": "build", "script_args": ["build_ext", "--inplace"]})
dist.parse_command_line()
dist.run_commands()
"""


def chain_model(n: int, folder: Path) -> Path:
    bodies = []
    for i in range(n):
        joint = ([{"translate": [0, 0, -0.5]}] if i else []) + [{"rotate": "y" if i % 2 else "x", "q": f"q{i}"}]
        bodies.append({"name": f"link{i}", "parent": "ground" if i == 0 else f"link{i - 1}", "joint": joint,
                       "mass": "m", "com": [0, 0, -0.25], "inertia": ["m*0.5**2/12", "m*0.5**2/12", 0.001]})
    path = folder / f"chain{n}.yaml"
    path.write_text(yaml.safe_dump({"name": f"chain{n}", "parameters": {"m": 1.0}, "gravity": [0, 0, -9.81],
                                    "bodies": bodies}, sort_keys=False))
    return path


def peer_pyx(bundle) -> str:
    """The Cython wrapper the previous route generated: qdd, mass_matrix, rhs over the header."""
    header = next(name for name, _ in bundle.files if name.endswith("_kernels.h"))
    return f'''# cython: language_level=3, boundscheck=False, wraparound=False
cdef extern from "{header}" nogil:
    void dyn_qdd(double t, const double *q, const double *qd, const double *p, double *qdd)
    void dyn_mass_matrix(double t, const double *q, const double *p, double *M)
    void dyn_rhs(double t, const double *y, const double *p, double *ydot)

def qdd(double t, double[::1] q, double[::1] qd, double[::1] p, double[::1] out):
    dyn_qdd(t, &q[0], &qd[0], &p[0], &out[0])

def mass_matrix(double t, double[::1] q, double[::1] p, double[::1] out):
    dyn_mass_matrix(t, &q[0], &p[0], &out[0])

def rhs(double t, double[::1] y, double[::1] p, double[::1] out):
    dyn_rhs(t, &y[0], &p[0], &out[0])
'''


def time_ours(bundle, repeat: int) -> float:
    from dynamica.build import compile_bundle
    times = []
    for _ in range(repeat):
        cache = Path(tempfile.mkdtemp(prefix="bench-build-"))
        t0 = time.perf_counter()
        compile_bundle(bundle, cache=cache)
        times.append(time.perf_counter() - t0)
        shutil.rmtree(cache)
    return statistics.median(times)


def time_peer(bundle, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        work = Path(tempfile.mkdtemp(prefix="bench-build-peer-"))
        for name, text in bundle.files[1:]:
            (work / name).write_text(text)
        name = f"{bundle.module_name}_peer"
        (work / f"{name}.pyx").write_text(peer_pyx(bundle))
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", PEER_SCRIPT, f"{name}.pyx", name], cwd=work, check=True,
                       capture_output=True)
        times.append(time.perf_counter() - t0)
        shutil.rmtree(work)
    return statistics.median(times)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", help="also write the table to this file")
    args = ap.parse_args(argv)
    import dynamica
    from dynamica.generator.pipeline import generate
    folder = Path(tempfile.mkdtemp(prefix="bench-build-models-"))
    models = [ROOT / "models" / "double_pendulum.yaml", chain_model(10, folder), chain_model(20, folder)]
    rows = []
    for path in models:
        t0 = time.perf_counter()
        g = generate(str(path))
        gen = time.perf_counter() - t0
        ours, peer = time_ours(g.bundle, args.repeat), time_peer(g.bundle, args.repeat)
        rows.append((path.stem, g.bundle.op_count, gen, ours, peer))
    head = (f"dynamica {dynamica.__version__}, Python {sys.version.split()[0]}, median of {args.repeat} cold "
            f"builds (composite form, C backend)")
    lines = [head, f"{'model':<18}{'ops':>8}{'generate s':>12}{'compile s':>11}{'gen+compile s':>15}"
                   f"{'old route s':>13}{'old/new':>9}"]
    for name, ops, gen, ours, peer in rows:
        lines.append(f"{name:<18}{ops:>8}{gen:>12.2f}{ours:>11.2f}{gen + ours:>15.2f}{peer:>13.2f}{peer / ours:>9.1f}")
    write_table(lines, args.out)
    shutil.rmtree(folder)


if __name__ == "__main__":
    main()
