#!/usr/bin/env python
"""Where the first build of a derivatives variant goes: cProfile of the generation (its stages and
the top functions) and the C compiler's time, for a chain of benchmarks/bench_forms.py.

    python benchmarks/profile_derivatives_build.py --n 50 --variant recursive_loops
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
os.environ["DYNAMICA_CACHE"] = tempfile.mkdtemp(prefix="dcache_prof_")

from bench_forms import write_model  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50)
    ap.add_argument("--variant", default="recursive_loops")
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args(argv)
    from dynamica.build import compile_bundle
    from dynamica.generator.pipeline import generate_derivatives
    path = write_model("chain", args.n, 1, Path(tempfile.mkdtemp(prefix="prof_")))
    print(f"load average {os.getloadavg()[0]:.2f}")
    pr = cProfile.Profile()
    t0 = time.perf_counter()
    pr.enable()
    gen = generate_derivatives(path, variant=args.variant, progress=lambda s, t: print(f"stage {s}: {t:.2f} s"))
    pr.disable()
    t1 = time.perf_counter()
    compile_bundle(gen.bundle)
    t2 = time.perf_counter()
    print(f"generation {t1 - t0:.2f} s, compile {t2 - t1:.2f} s; operations per kernel: "
          + ", ".join(f"{k.name} {k.op_count()['total']}" for k in gen.module_ir.kernels))
    pstats.Stats(pr).sort_stats("cumulative").print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
