"""The package and its documentation speak of what the code does, not of how it came to be.

Tracker numbers ("issue 16") and the labels of the source documents ("seed 003") mean nothing to
a user: the code cites the dissertation's chapters and equations or the published source, and the
history lives in CHANGELOG.md. Documents that are not in the repository are not cited either.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: what users and maintainers read: the package's code, templates and documentation
SCANNED = ["generator", "runtime", "templates", "docs", "build.py", "cache.py", "errors.py", "files.py", "__init__.py",
           "README.md"]
TEXT_SUFFIXES = {".py", ".md", ".j2", ".h", ".pyx", ".js", ".f90", ".c", ".toml", ".yaml", ".txt"}
EXCLUDED = {"CHANGELOG.md"}
FORBIDDEN = [
    (re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE), "a tracker number"),
    (re.compile(r"\bseeds?[\s_-]*0\d+", re.IGNORECASE), "a source document's label"),
    (re.compile(r"\b(?:STYLE|GUIDE|API|MODEL_FORMAT)\.md\b"), "a document that is not in the repository"),
]


def scanned_files() -> list:
    files = []
    for name in SCANNED:
        path = ROOT / name
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [f for f in candidates if f.is_file() and f.suffix in TEXT_SUFFIXES and f.name not in EXCLUDED
                  and "__pycache__" not in f.parts]
    return files


def violations(text: str) -> list:
    """(line number, what, line) of every forbidden reference in `text`."""
    found = []
    for lineno, line in enumerate(text.splitlines(), 1):
        for rx, what in FORBIDDEN:
            if rx.search(line):
                found.append((lineno, what, line.strip()))
    return found


@pytest.mark.parametrize("text", ["see issue 14", "(issues 16, 19)", "Issue #3", "seed 003's screw pair",
                                  "(seed 004)", "the seed-003 contact law", "seed 000_6c16", "(STYLE.md)",
                                  "MODEL_FORMAT.md, version 1"])
def test_the_check_finds_references(text):
    assert violations(text)


@pytest.mark.parametrize("text", ["rng = np.random.default_rng(seed)", "--seed 0", "tissue 3",
                                  "docs/model_format.md", "docs/api.md", "dissertation (2.23), Ch. 5.2"])
def test_the_check_passes_plain_text(text):
    assert not violations(text)


def test_no_history_references():
    files = scanned_files()
    assert any(f.name == "expm.py" for f in files) and any(f.suffix == ".j2" for f in files)
    bad = [f"{f.relative_to(ROOT)}:{lineno}: {what}: {line}"
           for f in files for lineno, what, line in violations(f.read_text(encoding="utf-8"))]
    assert not bad, "\n".join(bad)


def test_version_is_pyprojects():
    """`dynamica.__version__` (also part of the tool fingerprint) is the version pyproject.toml declares."""
    import dynamica
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib
        declared = tomllib.loads(text)["project"]["version"]
    except ModuleNotFoundError:                                 # Python 3.10: no tomllib
        declared = re.search(r'(?m)^version\s*=\s*"([^"]+)"', text).group(1)
    assert dynamica.__version__ == declared
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert f"## [{declared}]" in changelog


def test_every_package_folder_is_installed_and_says_what_it_holds():
    """pyproject.toml lists every folder with an __init__.py (an unlisted one is missing from a
    wheel), and each opens with a docstring saying what it holds (docs/contributing.md)."""
    import ast
    try:
        import tomllib
    except ModuleNotFoundError:                                 # Python 3.10
        pytest.skip("tomllib needs Python 3.11")
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["packages"])
    found = {"dynamica"} | {"dynamica." + ".".join(p.parent.relative_to(ROOT).parts)
                            for top in ("generator", "runtime", "templates") for p in (ROOT / top).rglob("__init__.py")
                            if "__pycache__" not in p.parts}
    assert listed == found, (sorted(found - listed), sorted(listed - found))
    for name in sorted(found - {"dynamica"}):
        init = ROOT.joinpath(*name.split(".")[1:], "__init__.py")
        assert ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))), f"{init.relative_to(ROOT)}: no docstring"


def test_every_planted_bug_still_applies():
    """Each mutation of benchmarks/mutation_run.py names a file and a text found there exactly
    once (four had gone stale when their code moved: they planted nothing), and its tests exist."""
    import importlib.util
    import sys
    spec = importlib.util.spec_from_file_location("mutation_run", ROOT / "benchmarks" / "mutation_run.py")
    mr = importlib.util.module_from_spec(spec)
    sys.modules["mutation_run"] = mr
    try:
        spec.loader.exec_module(mr)
    finally:
        sys.modules.pop("mutation_run", None)
    bad = [(m.name, m.file) for m in mr.MUTATIONS
           if not (ROOT / m.file).is_file() or (ROOT / m.file).read_text(encoding="utf-8").count(m.old) != 1]
    bad += [(m.name, t) for m in mr.MUTATIONS for t in (m.tests or ()) if not (ROOT / t.split("::")[0]).exists()]
    assert not bad, bad
