"""Build and cache: content-keyed, atomic under concurrency, failures carry the compiler log."""

import multiprocessing as mp
from pathlib import Path

import jinja2
import jinja2.meta
import pytest

import dynamica
from dynamica.build import compile_bundle, import_extension
from dynamica.errors import BuildError
from dynamica.generator.render import SourceBundle, TEMPLATES, _env, template_context
from dynamica.generator.printers import PRINTERS

from conftest import MODELS


def _build(args):
    model, cache = args
    g = dynamica.generate(model)
    return str(compile_bundle(g.bundle, cache=cache))


def test_concurrent_builds_share_one_cache_entry(tmp_path):
    cache = tmp_path / "cache"
    model = str(MODELS / "double_pendulum.yaml")
    with mp.get_context("spawn").Pool(2) as pool:
        paths = pool.map(_build, [(model, cache)] * 2)
    assert paths[0] == paths[1]
    entries = [p for p in cache.iterdir() if p.is_dir()]
    assert len(entries) == 1, entries            # no leftover temporary build folders
    mod = import_extension(Path(paths[0]))
    assert mod.MODEL_NAME == "double_pendulum"


def test_cache_hit_does_not_rebuild(tmp_path):
    cache = tmp_path / "cache"
    g = dynamica.generate(MODELS / "double_pendulum.yaml")
    p1 = compile_bundle(g.bundle, cache=cache)
    mtime = p1.stat().st_mtime_ns
    p2 = compile_bundle(g.bundle, cache=cache)
    assert p1 == p2 and p2.stat().st_mtime_ns == mtime


def test_failed_compile_raises_with_log(tmp_path):
    cache = tmp_path / "cache"
    bundle = SourceBundle(module_name="broken", backend="cython",
                          files=(("broken.pyx", "cdef double f(:\n"),), signature="x")
    with pytest.raises(BuildError) as info:
        compile_bundle(bundle, cache=cache)
    assert "broken.pyx" in info.value.log
    assert not [p for p in cache.iterdir() if p.is_dir()]      # nothing half-built left behind


@pytest.mark.parametrize("backend", sorted(TEMPLATES))
def test_template_variables_equal_context_keys(backend):
    env = _env()
    used = set()
    for template, _ in TEMPLATES[backend]:
        src = env.loader.get_source(env, template)[0]
        used |= jinja2.meta.find_undeclared_variables(env.parse(src))
    g = dynamica.generate(MODELS / "double_pendulum.yaml", backend=backend)
    ctx = template_context(g.module_ir, PRINTERS[backend])
    assert used == set(ctx), (used ^ set(ctx))


def test_split_kernels_compute_the_same(tmp_path, monkeypatch):
    """A kernel cut into many C functions (shared temporaries in a workspace) is unchanged."""
    import dynamica.generator.render as render
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.check import check_against_reference
    monkeypatch.setattr(render, "CHUNK", 7)
    g = dynamica.generate(MODELS / "puma560.yaml")
    header = dict(g.bundle.files)["puma560_composite_kernels.h"]
    assert header.count("_part") > 20 and "dyn_w[" in header
    mod = import_extension(compile_bundle(g.bundle, cache=tmp_path / "cache"))
    report = check_against_reference(CompiledModel(mod, g.spec), samples=5)
    assert report.ok(1e-10), report.text()
