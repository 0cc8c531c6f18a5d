"""Hashes of the generated kernels of every bundled model, form, backend and mode: the check that a
refactoring leaves the generated code unchanged.

    python benchmarks/kernel_hashes.py --write results/kernel_hashes.json    # before
    python benchmarks/kernel_hashes.py --compare results/kernel_hashes.json  # after: lists changes

What is hashed is each generated kernel file (C header, Fortran source) with its content-signature
line removed (the signature hashes the IR's representation, which a refactoring of the IR's own
fields may change without changing a line of code); the module file (`<module>.c`) and the fixed
helper files are not generated code of the model. The hashes depend on the sympy version (term
order): compare runs of one environment.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def combos():
    from dynamica.generator.forms import EQUATION_FORMS, NUMERIC_FORMS
    for model in sorted((ROOT / "models").glob("*.yaml")):
        for form in EQUATION_FORMS:
            yield model, form, "c", "symbolic"
            if not form.startswith("iterative"):
                yield model, form, "fortran", "symbolic"
        for form in NUMERIC_FORMS:
            yield model, form, "c", "numeric"


def kernel_hashes() -> dict:
    import dynamica
    out = {}
    warnings.simplefilter("ignore")
    for model, form, backend, mode in combos():
        key = f"{model.stem}/{form}/{backend}/{mode}"
        try:
            g = dynamica.generate(str(model), form=form, backend=backend, mode=mode)
        except dynamica.DynamicaError as exc:
            out[key] = {"error": type(exc).__name__}
            continue
        except Exception as exc:                # a crash of the generator is recorded, and compared, too
            out[key] = {"crash": f"{type(exc).__name__}: {exc}"[:200]}
            print(f"crash: {key}: {out[key]['crash']}", file=sys.stderr)
            continue
        out[key] = {name: hashlib.sha256(re.sub(r"Content signature: [0-9a-f]+", "", text).encode()).hexdigest()
                    for name, text in g.bundle.files if name.endswith(("_kernels.h", ".f90"))}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = ap.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", help="write the hashes to this JSON file")
    group.add_argument("--compare", help="compare with the hashes in this JSON file")
    args = ap.parse_args(argv)
    now = kernel_hashes()
    if args.write:
        Path(args.write).write_text(json.dumps(now, indent=1, sort_keys=True) + "\n")
        print(f"{len(now)} modules hashed into {args.write}")
        return 0
    before = json.loads(Path(args.compare).read_text())
    changed = sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))
    for k in changed:
        print(f"changed: {k}")
    print(f"{len(now)} modules, {len(changed)} changed")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
