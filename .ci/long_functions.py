"""List the functions longer than a limit (default 60 lines of code: decorators and signature
included, the docstring not) in generator/ and runtime/, longest first:
`python .ci/long_functions.py [--limit N] [--most N] [--check]`. A long function is a place to
split into named passes; with --check (run by .ci/run) any such function fails the run."""
from __future__ import annotations

import argparse
import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FOLDERS = ("generator", "runtime")


def _docstring_lines(fn) -> int:
    body = fn.body
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        return (body[0].end_lineno or body[0].lineno) - body[0].lineno + 1
    return 0


def long_functions(limit: int = 60, root: Path = ROOT) -> list[tuple[int, str, str]]:
    """(lines, file, qualified name) of every function in FOLDERS over `limit` lines."""
    found = []
    for folder in FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            stack: list[tuple[ast.AST, str]] = [(tree, "")]
            while stack:
                node, prefix = stack.pop()
                for child in ast.iter_child_nodes(node):
                    if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                        name = f"{prefix}{child.name}"
                        if not isinstance(child, ast.ClassDef):
                            first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                            size = (child.end_lineno or child.lineno) - first + 1 - _docstring_lines(child)
                            if size > limit:
                                found.append((size, str(path.relative_to(root)), name))
                        stack.append((child, name + "."))
    return sorted(found, key=lambda row: (-row[0], row[1], row[2]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--limit", type=int, default=60, help="lines above which a function is listed")
    ap.add_argument("--most", type=int, default=0, help="rows at the most (0: all)")
    ap.add_argument("--check", action="store_true", help="exit 1 when any function is over the limit")
    args = ap.parse_args()
    rows = long_functions(args.limit)
    print(f"{len(rows)} functions over {args.limit} lines of code in {', '.join(FOLDERS)}")
    for size, path, name in rows[: args.most or None]:
        print(f"{size:5d}  {path}:{name}")
    if args.check and rows:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
