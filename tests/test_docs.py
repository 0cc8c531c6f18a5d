"""The user documentation stays true: its examples load, its links resolve, it covers every key.

- every ```yaml block of docs/model_format.md and README.md that is a complete model (has `name`
  and `bodies`) loads with `load_model` without a warning, generates, and has a positive definite
  mass matrix at q = 0 (numeric reference); a block preceded by `<!-- error -->` raises ModelError,
  and when the next block starts with `<file>:` that block is the error message, line for line;
- every relative Markdown link of README.md, models/README.md and docs/*.md points to an
  existing file (and, with `#anchor` into a Markdown file, to one of its headings);
- the repository's own docs and help texts do not point outside it (`../shared`);
- the ```python examples of docs/api.md run, in order, from a scratch directory (slow: they
  compile models); blocks marked `<!-- signature -->` are signatures, not examples;
- every section, key, force type, joint shorthand, function and reserved name the loader knows
  is named in docs/model_format.md; every subcommand and option of the command line is named in
  docs/api.md, and `--help` works for each.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import yaml

from dynamica.errors import ModelError
from dynamica.generator.mechanics import forces, joints
from dynamica.generator.pipeline import generate
from dynamica.generator.spec import expr, loader, model
from dynamica.runtime.cli import main as cli
from dynamica.runtime.reference.numeric import NumericReference

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MODEL_FORMAT = DOCS / "model_format.md"
API = DOCS / "api.md"
MARKDOWN = [ROOT / "README.md", ROOT / "models" / "README.md", *sorted(DOCS.glob("*.md"))]
EXAMPLE_SOURCES = [MODEL_FORMAT, ROOT / "README.md"]
FENCE = re.compile(r"^```(\S*)\n(.*?)^```\s*$", re.M | re.S)


def fenced_blocks(path: Path, marker="<!-- error -->"):
    """(language, text, is_marked, next_block_text) of every fenced block, in order; a block is
    marked when the line before it is `marker`."""
    text = path.read_text(encoding="utf-8")
    found = list(FENCE.finditer(text))
    out = []
    for k, m in enumerate(found):
        before = text[:m.start()].rstrip().splitlines()
        marked = bool(before) and before[-1].strip() == marker
        nxt = found[k + 1].group(2) if k + 1 < len(found) else ""
        out.append((m.group(1), m.group(2), marked, nxt))
    return out


def yaml_examples():
    cases = []
    for path in EXAMPLE_SOURCES:
        for lang, body, is_error, nxt in fenced_blocks(path):
            if lang != "yaml":
                continue
            data = yaml.safe_load(body)
            if is_error or (isinstance(data, dict) and "name" in data and "bodies" in data):
                label = f"{path.name}:{data.get('name') if isinstance(data, dict) else '?'}"
                cases.append(pytest.param(body, is_error, nxt, id=label))
    return cases


EXAMPLES = yaml_examples()


def test_examples_were_found():
    assert sum(1 for c in EXAMPLES if not c.values[1]) >= 7
    assert sum(1 for c in EXAMPLES if c.values[1]) >= 2


@pytest.mark.parametrize("body, is_error, next_block", EXAMPLES)
def test_yaml_example(tmp_path, body, is_error, next_block):
    f = tmp_path / "example.yaml"
    f.write_text(body, encoding="utf-8")
    with warnings.catch_warnings():
        warnings.simplefilter("error", model.DynamicaWarning)     # examples are physically valid
        if not is_error:
            spec = model.load_model(f)
            generate(spec)                       # a tree, independent joint coordinates
            ref = NumericReference(spec)         # regular mass matrix at the initial state
            assert np.linalg.eigvalsh(ref.mass_matrix(np.zeros(len(ref.coordinates)))).min() > 0
            return
        with pytest.raises(ModelError) as info:
            model.load_model(f)
    if next_block.startswith("<file>:"):
        shown = next_block.replace("<file>", str(f)).strip().splitlines()
        assert str(info.value).splitlines() == shown


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to hyphens."""
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")


def _anchors(path: Path) -> set:
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
#: pages the documentation site writes at build time (docs/_site/hooks.py: the gallery from its scripts)
GENERATED = {ROOT / "docs" / "gallery.md"}


@pytest.mark.parametrize("path", MARKDOWN, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    bad = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):              # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if dest in GENERATED:
            assert (ROOT / "docs" / "_site" / "hooks.py").read_text().count(f'"{dest.name}"'), dest
            continue
        if not dest.exists():
            bad.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            bad.append(f"{target}: no heading with anchor #{anchor}")
    assert not bad, f"{path.name}: " + "; ".join(bad)


def test_nothing_points_outside_the_repository():
    """Docs, code, tests and benchmarks name no file outside the repository (`pytest` passes in a
    bare clone: the test data live in tests/data)."""
    code = [p for d in ("runtime", "generator", "tests", "benchmarks") for p in (ROOT / d).rglob("*.py")]
    files = [*MARKDOWN, *code, ROOT / ".ci" / "run"]
    bad = [f"{p.relative_to(ROOT)}: {needle}" for p in files if p != Path(__file__).resolve()
           for needle in ("../shared", "/work/", '"shared"') if needle in p.read_text(encoding="utf-8")]
    assert not bad


def _unnamed(doc: str, words) -> list:
    """The words that appear in no inline code span of `doc` (outside fenced blocks)."""
    spans = re.findall(r"`([^`\n]+)`", FENCE.sub("", doc))
    tokens = set(re.findall(r"[A-Za-z_][\w-]*", " ".join(spans)))
    return [w for w in words if w not in tokens]


def test_model_format_names_every_key():
    doc = MODEL_FORMAT.read_text(encoding="utf-8")
    keys = set(loader._Loader.TOP) | set(model.INERTIA_KEYS) | set(joints.JOINT_TYPES)
    keys |= {"rotate", "translate", "q", "by", "offset", "axis", "axes", "parent", "mass", "com",
             "inertia", "value", "unit", "points", "angular", "reactions", "expressions", "at"}
    keys |= set(forces.FORCE_TYPES) | {k for t in forces.FORCE_TYPES.values() for k in t.schema}
    keys |= set(forces.LAW_LOCALS) | set(model.INTEGRATORS) | set(model.OUTPUT_KEYS_RESERVED)
    keys |= set(expr.FUNCTIONS) | set(expr.RESERVED)
    keys |= {"t_end", "output_step", "integrator", "rtol", "atol", "form"}
    from dynamica.generator.forms import EQUATION_FORMS
    keys |= set(EQUATION_FORMS)
    from dynamica.generator.mechanics import tables
    from dynamica.generator.spec import actuator_sections
    keys |= actuator_sections.FUNCTION_KEYS | actuator_sections.STATE_KEYS | {"energy"}
    keys |= set(tables.INTERPOLATIONS) | set(tables.EXTRAPOLATIONS)
    assert not _unnamed(doc, sorted(keys))


def _help(argv, capsys) -> str:
    with pytest.raises(SystemExit) as info:
        cli.main(argv)
    assert info.value.code == 0
    return capsys.readouterr().out


def test_cli_help_and_api_doc_cover_every_subcommand_and_option(capsys):
    top = _help(["--help"], capsys)
    subcommands = re.findall(r"^ {4}(\w+) {2,}", top, re.M)
    assert {"compile", "simulate", "check", "select"} <= set(subcommands)
    doc = API.read_text(encoding="utf-8")
    missing = []
    for sub in subcommands:
        text = _help([sub, "--help"], capsys)
        assert "docs/model_format.md" in text
        if f"dynamica {sub}" not in doc:
            missing.append(f"dynamica {sub}")
        options = set(re.findall(r"(--[a-z][a-z-]*)", text)) - {"--help"}
        missing += [f"{sub} {o}" for o in sorted(options) if f"`{o}" not in doc]
    assert not missing


@pytest.mark.slow
def test_api_examples_run(tmp_path, monkeypatch):
    blocks = fenced_blocks(API, marker="<!-- signature -->")
    code = "\n".join(body for lang, body, signature, _ in blocks if lang == "python" and not signature)
    (tmp_path / "models").symlink_to(ROOT / "models")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(API), "exec"), {"__name__": "api_examples"})
    assert (tmp_path / "pendulum.csv").exists() and (tmp_path / "summary.csv").exists()
