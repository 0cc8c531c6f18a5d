"""No private reach-ins across modules: a name that starts with `_` is used only in the module
that defines it. What another module needs has a public, documented name (`CompiledModel.as_vector`,
`param_layout`, `companions`; `runtime.api.index_path`, ...)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = [p for d in ("generator", "runtime") for p in (ROOT / d).rglob("*.py")] + \
          [ROOT / n for n in ("build.py", "cache.py", "files.py", "errors.py", "__init__.py")]


def _private_imports(path: Path) -> list:
    """`line: from dynamica... import _name` of every private name a file imports from dynamica."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [f"{node.lineno}: from {node.module} import {alias.name}" for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("dynamica")
            for alias in node.names if alias.name.startswith("_") and not alias.name.startswith("__")]


def test_no_private_name_is_imported_from_another_module():
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in PACKAGE for line in _private_imports(p)]
    assert not bad, "\n".join(bad)


#: `<name>._private` where <name> is not self/cls (another module or another object's privates)
REACH_IN = re.compile(r"(?<![\w.])(?!self\b|cls\b)([A-Za-z_]\w*)\._[a-z]\w*")


def test_the_runtime_reaches_into_no_other_objects_privates():
    bad = []
    for p in (ROOT / "runtime").rglob("*.py"):
        for k, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#", 1)[0]
            if code.lstrip().startswith(("from ", "import ")):     # third-party module paths (scipy's _ivp)
                continue
            if REACH_IN.search(code):
                bad.append(f"{p.relative_to(ROOT)}:{k}: {line.strip()}")
    assert not bad, "\n".join(bad)


def test_the_checks_find_reach_ins(tmp_path):
    f = tmp_path / "m.py"
    f.write_text("from dynamica.runtime.api import _indexed, load\nfrom dynamica import __version__\n")
    assert _private_imports(f) == ["1: from dynamica.runtime.api import _indexed"]
    assert REACH_IN.search("    q = model._vec(q)") and REACH_IN.search("x = api._index_path(c, k)")
    assert not REACH_IN.search("    self._vec = 1") and not REACH_IN.search("    cls._registry[k] = v")
