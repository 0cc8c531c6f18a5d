"""The documentation site's sources (mkdocs.yml; .ci/run builds it with `mkdocs build --strict`,
the gallery included): every name `import dynamica` exports has an entry in the API reference
that names the very object, every page under docs/ is in the navigation, every gallery script
has a title and writes its picture, and the README links the site."""

from __future__ import annotations

import ast
import importlib
import re

import yaml

import dynamica

from conftest import REPO_ROOT

DOCS = REPO_ROOT / "docs"


def _directives():
    return [m.group(1) for f in sorted((DOCS / "reference").glob("*.md"))
            for m in re.finditer(r"^::: ([\w.]+)", f.read_text(), re.M)]


def _resolve(path):
    parts = path.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            obj = getattr(obj, attr)
        return obj
    raise ImportError(path)


def test_every_public_name_is_in_the_api_reference():
    documented = {}
    for d in _directives():
        obj = _resolve(d)                               # a stale entry fails here
        documented[id(obj)] = d
        if isinstance(obj, type(dynamica)):             # a whole module: its members
            for v in vars(obj).values():
                documented[id(v)] = d
    missing = [n for n in dynamica.__all__ if n != "__version__" and id(getattr(dynamica, n)) not in documented]
    assert missing == [], f"not in docs/reference/: {missing}"


def _nav_pages(nav):
    for item in nav:
        if isinstance(item, str):
            yield item
        else:
            for v in item.values():
                yield from (_nav_pages(v) if isinstance(v, list) else [v])


class _Loader(yaml.SafeLoader):
    pass


_Loader.add_constructor("!ENV", lambda loader, node: None)


def test_every_page_is_in_the_navigation():
    config = yaml.load((REPO_ROOT / "mkdocs.yml").read_text(), Loader=_Loader)
    pages = set(_nav_pages(config["nav"]))
    on_disk = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "_site" not in p.parts}
    assert on_disk - pages == set(), "pages left out of mkdocs.yml's nav"
    assert pages - on_disk == {"gallery.md"}          # written by docs/_site/hooks.py at build time


def test_gallery_scripts_have_a_title_and_draw_a_picture():
    scripts = sorted((DOCS / "gallery").glob("*.py"))
    assert {p.stem for p in scripts} >= {"pendulum", "fourbar", "launcher", "robot_report", "sweep", "mode_shape"}
    for p in scripts:
        text = p.read_text()
        doc = ast.get_docstring(ast.parse(text))
        assert doc and "\n\n" in doc, p.name                 # a title line, then the text
        assert f'savefig("{p.stem}.png"' in text, p.name


def test_readme_links_the_site_and_keeps_its_two_commands():
    text = (REPO_ROOT / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    assert setup.count("```bash") == 2
    assert "mkdocs.yml" in text and "docs/_site/build.py" in text


def _hooks():
    import importlib.util

    import pytest
    pytest.importorskip("mkdocs", reason="the docs extra is not installed (pip install .[docs])")
    spec = importlib.util.spec_from_file_location("site_hooks", DOCS / "_site" / "hooks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_a_failing_gallery_script_fails_the_build(tmp_path):
    """The build stops with the script's output (not a page without its picture)."""
    import os

    import pytest
    hooks = _hooks()
    bad = tmp_path / "bad.py"
    bad.write_text('"""Bad\n\nfails."""\nraise SystemExit("no model here")\n')
    with pytest.raises(hooks.PluginError, match="(?s)bad.py failed.*no model here"):
        hooks._run(bad, dict(os.environ))
    quiet = tmp_path / "quiet.py"
    quiet.write_text('"""Quiet\n\ndraws nothing."""\nprint("done")\n')
    with pytest.raises(hooks.PluginError, match="wrote no picture"):
        hooks._run(quiet, dict(os.environ))


def test_links_outside_docs_become_repository_paths():
    hooks = _hooks()
    text = "see [the models](../models/README.md) and [the API](api.md#load)"
    assert hooks.on_page_markdown(text, None, None, None) == \
        "see the models (`models/README.md` in the repository) and [the API](api.md#load)"
