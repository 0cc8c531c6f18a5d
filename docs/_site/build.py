"""Build the documentation site into site/ (or serve it: `python docs/_site/build.py serve`).

    pip install -e ".[docs]"
    python docs/_site/build.py            # mkdocs build --strict: a warning fails the build

mkdocstrings reads the package's source where a folder named `dynamica` holds it: this script
makes one in a temporary folder, of links to the package's own modules and subpackages (not
tests/, benchmarks/, models/ or docs/: reading those too took griffe 110 s instead of 3), and
points mkdocs.yml's DYNAMICA_DOCS_ROOT at it; the gallery's scripts (docs/gallery/, run during
the build by docs/_site/hooks.py) import this checkout through DYNAMICA_DOCS_IMPORT, a link
`dynamica` to the whole repository (as .ci/run does for mypy).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def main(argv=None) -> int:
    args = list(sys.argv[1:] if argv is None else argv) or ["build", "--strict"]
    with tempfile.TemporaryDirectory(prefix="dynamica-docs-") as tmp:
        api, full = Path(tmp) / "api", Path(tmp) / "full"
        (api / "dynamica").mkdir(parents=True)
        full.mkdir()
        os.symlink(REPO, full / "dynamica")
        for p in REPO.iterdir():                 # the package: its modules and subpackages
            if (p.suffix == ".py" and p.name != "setup.py") or (
                    p.is_dir() and not p.is_symlink() and (p / "__init__.py").is_file() and p.name != "tests"):
                os.symlink(p, api / "dynamica" / p.name)
        env = dict(os.environ, DYNAMICA_DOCS_ROOT=str(api), DYNAMICA_DOCS_IMPORT=str(full), NO_MKDOCS_2_WARNING="1")
        return subprocess.call([sys.executable, "-m", "mkdocs", *args, "-f", str(REPO / "mkdocs.yml")],
                               cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main())
