"""Build the documentation site into site/ (or serve it: `python docs/_site/build.py serve`).

    pip install -e ".[docs]"
    python docs/_site/build.py            # mkdocs build --strict: a warning fails the build

mkdocstrings reads the package's source where a folder named `dynamica` holds it: this script
makes one (a temporary folder with a link `dynamica` to this repository, as .ci/run does for
mypy), points mkdocs.yml's DYNAMICA_DOCS_ROOT at it and runs mkdocs; the gallery's scripts
(docs/gallery/) run during the build (docs/_site/hooks.py).
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
        os.symlink(REPO, Path(tmp) / "dynamica")
        env = dict(os.environ, DYNAMICA_DOCS_ROOT=tmp, NO_MKDOCS_2_WARNING="1")
        return subprocess.call([sys.executable, "-m", "mkdocs", *args, "-f", str(REPO / "mkdocs.yml")],
                               cwd=REPO, env=env)


if __name__ == "__main__":
    sys.exit(main())
