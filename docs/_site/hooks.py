"""MkDocs hooks of the documentation site (mkdocs.yml `hooks:`).

- The gallery: every script in docs/gallery/ runs at build time (two at a time, each in a fresh
  folder), and the pictures and pages it writes join the site under gallery/; the page
  gallery.md is written from the scripts: the first docstring line a title, the rest its text,
  then the picture and the code. A script that fails fails the build with its output.
- Links from a page to files of the repository outside docs/ (`../models/README.md`) become the
  path in the repository as text: the site holds only docs/.
"""

from __future__ import annotations

import ast
import concurrent.futures as cf
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

OUTPUTS = (".png", ".html", ".svg")
#: the order of the gallery (scripts not named here follow, by name)
ORDER = ("pendulum", "fourbar", "launcher", "robot_report", "sweep", "mode_shape")


def _scripts(docs: Path) -> list:
    found = sorted((docs / "gallery").glob("*.py"))
    rank = {n: k for k, n in enumerate(ORDER)}
    return sorted(found, key=lambda p: (rank.get(p.stem, len(ORDER)), p.stem))


def _run(script: Path, env: dict) -> tuple:
    """(script, {output name: bytes}, seconds, stdout) of one run in a fresh folder."""
    with tempfile.TemporaryDirectory(prefix="dynamica-gallery-") as tmp:
        t0 = time.perf_counter()
        proc = subprocess.run([sys.executable, str(script)], cwd=tmp, env=env, capture_output=True, text=True,
                              timeout=600)
        if proc.returncode != 0:
            raise PluginError(f"gallery script {script.name} failed (exit {proc.returncode}):\n"
                              f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        outputs = {p.name: p.read_bytes() for p in sorted(Path(tmp).iterdir()) if p.suffix in OUTPUTS}
        if not any(name.endswith(".png") for name in outputs):
            raise PluginError(f"gallery script {script.name} wrote no picture (.png) in its folder")
        return script, outputs, time.perf_counter() - t0, proc.stdout


def _section(script: Path, outputs: dict, seconds: float, stdout: str) -> str:
    text = script.read_text(encoding="utf-8")
    doc = ast.get_docstring(ast.parse(text)) or script.stem
    title, _, body = doc.partition("\n")
    code = text.split('"""', 2)[2].lstrip("\n") if text.lstrip().startswith('"""') else text
    pictures = "\n\n".join(f"![{title}](gallery/{name})" for name in outputs if name.endswith(".png"))
    printed = f"\n\nIt printed:\n\n```text\n{stdout.strip()[-2500:]}\n```" if stdout.strip() else ""
    return (f"## {title.strip()}\n\n{body.strip()}\n\n{pictures}{printed}\n\n"
            f"??? example \"The script: `docs/gallery/{script.name}` (ran in {seconds:.1f} s)\"\n\n"
            + "\n".join("    " + line if line else "" for line in ["```python", *code.rstrip().splitlines(), "```"])
            + "\n")


def on_files(files, config):
    docs = Path(config["docs_dir"])
    scripts = _scripts(docs)
    env = dict(os.environ, MPLBACKEND="Agg")
    root = os.environ.get("DYNAMICA_DOCS_IMPORT")
    if root:                                  # `import dynamica` from this checkout, installed or not
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    with cf.ThreadPoolExecutor(max_workers=2) as pool:
        runs = list(pool.map(lambda s: _run(s, env), scripts))
    page = ["# Gallery\n\nExamples run when the site is built (`docs/gallery/*.py`, each in a fresh folder): "
            "the pictures below are what they drew, from the bundled models and example-robot-data's robots. "
            "Run one yourself with `python docs/gallery/NAME.py`.\n"]
    for script, outputs, seconds, stdout in runs:
        page.append(_section(script, outputs, seconds, stdout))
        for name, data in outputs.items():
            files.append(File.generated(config, f"gallery/{name}", content=data))
    files.append(File.generated(config, "gallery.md", content="\n".join(page)))
    return files


_OUTSIDE = re.compile(r"\[([^\]]+)\]\(\.\./([^)#\s]+)\)")


def on_page_markdown(markdown, page, config, files):
    return _OUTSIDE.sub(lambda m: f"{m.group(1)} (`{m.group(2)}` in the repository)", markdown)
