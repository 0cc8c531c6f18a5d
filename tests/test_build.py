"""Build and cache: content-keyed, atomic under concurrency, failures carry the compiler log."""

import hashlib
import multiprocessing as mp
import re
from pathlib import Path

import jinja2
import jinja2.meta
import pytest

import dynamica
from dynamica.build import compile_bundle, import_extension
from dynamica.errors import BuildError
from dynamica.generator.render import BACKENDS, SourceBundle, backend_names
from dynamica.generator.render.common import env
from dynamica.generator.render.module import module_context

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
    bundle = SourceBundle(module_name="broken", backend="c",
                          files=(("broken.c", "double f(: {\n"),), signature="x")
    with pytest.raises(BuildError) as info:
        compile_bundle(bundle, cache=cache)
    assert "broken.c" in info.value.log and "error" in info.value.log
    assert not [p for p in cache.iterdir() if p.is_dir()]      # nothing half-built left behind


@pytest.mark.parametrize("backend", [b for b in backend_names() if b in BACKENDS])
def test_template_variables_equal_context_keys(backend):
    """Templates stay thin: each shows exactly what its context prepares (docs/design.md)."""
    g = dynamica.generate(MODELS / "double_pendulum.yaml", backend=backend)
    b = BACKENDS[backend]
    pairs = [(t, context(g.module_ir)) for t, _, context, _ in b.templates]
    pairs.append(("module.c.j2", module_context(g.module_ir, backend, b.declarations(g.module_ir),
                                                lambda name: b.entry_symbol(g.module_ir, name))))
    for template, ctx in pairs:
        e = env()
        used = jinja2.meta.find_undeclared_variables(e.parse(e.loader.get_source(e, template)[0]))
        assert used == set(ctx), (template, used ^ set(ctx))


def test_split_kernels_compute_the_same(tmp_path, monkeypatch):
    """A kernel cut into many C functions (shared temporaries in a workspace) is unchanged."""
    from dynamica.generator.render import common
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.reference.check import check_against_reference
    monkeypatch.setattr(common, "CHUNK", 7)
    g = dynamica.generate(MODELS / "puma560.yaml")
    header = dict(g.bundle.files)["puma560_composite_kernels.h"]
    assert header.count("_part") > 20 and "dyn_w[" in header
    mod = import_extension(compile_bundle(g.bundle, cache=tmp_path / "cache"))
    report = check_against_reference(CompiledModel(mod, g.spec), samples=5)
    assert report.ok(1e-10), report.text()


def test_zero_runs_only_takes_runs_of_single_zero_stores():
    from dynamica.generator.ir import nodes as ir
    from dynamica.generator.render.common import zero_runs
    zero, one = ir.Num(0.0), ir.Num(1.0)
    body = ([ir.Store("M", i, zero) for i in range(0, 5)]          # a run of 5
            + [ir.Store("M", 5, one)]
            + [ir.Store("M", i, zero) for i in range(6, 9)]        # a run of 3, the minimum below
            + [ir.Store("M", i, zero) for i in (12, 10, 11, 13)]   # out of order: 10-12 is a run
            + [ir.Store("M", 13, one)]                             # 13 stored twice: not a zero
            + [ir.Store("x", 0, zero)]                             # a run of 1
            + [ir.Store("y", i, ir.Num(-0.0)) for i in range(4)])  # -0.0 is not all-bits zero
    k = ir.Kernel("k", (ir.Input("q", 2),), (ir.Output("M", 16), ir.Output("x", 1), ir.Output("y", 4)), (),
                  tuple(body))
    kept, runs = zero_runs(k, 3)
    assert runs == [("M", 0, 5), ("M", 6, 3), ("M", 10, 3)]
    kept_stores = [(st.array, st.index) for st in kept.body]
    assert kept_stores == [("M", 5), ("M", 13), ("M", 13), ("x", 0)] + [("y", i) for i in range(4)]
    assert zero_runs(k, 6) == (k, [])


@pytest.mark.parametrize("backend", ["c", "fortran"])
def test_zero_runs_compute_the_same(tmp_path, monkeypatch, backend):
    """Output entries stored as 0 in runs (the structural zeros of a star's M) are filled once after
    the kernel's parts instead of one store each; the module computes the same."""
    import shutil

    from dynamica.generator.render import common
    from dynamica.runtime.api import CompiledModel
    from dynamica.runtime.reference.check import check_against_reference
    if backend == "fortran" and shutil.which("gfortran") is None:
        pytest.skip("gfortran is not installed")
    monkeypatch.setattr(common, "ZERO_RUN", 2)
    g = dynamica.generate(MODELS / "star.yaml", backend=backend)
    text = "\n".join(t for _, t in g.bundle.files)
    fill = r"memset\(out_M \+ \d+, 0, \d+ \*" if backend == "c" else r"out_M\(\d+:\d+\) = 0\.0d0"
    assert len(re.findall(fill, text)) >= 8, len(re.findall(fill, text))
    mod = import_extension(compile_bundle(g.bundle, cache=tmp_path / "cache"))
    report = check_against_reference(CompiledModel(mod, g.spec), samples=5)
    assert report.ok(1e-10), report.text()


def test_fixed_parts_are_built_at_install_time():
    """The integrator core, the timing loop and the outputs loop are ordinary extensions of the installed package
    (setup.py), built from the source they ship with: the first `simulate` compiles nothing."""
    import importlib
    from importlib import resources

    from dynamica.build import compiled_helper, helper_source
    for name in ("adams_core", "ctiming", "series_core"):
        installed = importlib.import_module(f"dynamica.runtime.native.{name}")
        files, sha = helper_source(name)
        text = resources.files("dynamica.runtime.native").joinpath(f"{name}.pyx").read_text()
        assert files[0] == (f"{name}.pyx", text)
        # the hash of the .pyx followed by the plain-C headers it includes (runtime/native/dynamica_adams.h)
        headers = "".join(resources.files("dynamica.runtime.native").joinpath(h).read_text() for h, _ in files[1:])
        assert sha == hashlib.sha256((text + headers).encode()).hexdigest()
        assert installed.SOURCE_SHA == sha
        assert compiled_helper(name) is installed


def test_a_stale_fixed_part_is_rebuilt_into_the_cache(tmp_path, monkeypatch):
    """An installed extension built from another text of its source is not used: the source is
    built into the cache instead (a development checkout whose .pyx was edited)."""
    import importlib

    from dynamica import build
    real = importlib.import_module("dynamica.runtime.native.ctiming")
    monkeypatch.setattr(real, "SOURCE_SHA", "0" * 64)
    monkeypatch.setattr(build, "_HELPERS", {})
    monkeypatch.setenv("DYNAMICA_CACHE", str(tmp_path))
    mod = build.compiled_helper("ctiming")
    assert mod is not real and Path(mod.__file__).is_relative_to(tmp_path)
    assert mod.SOURCE_SHA == "" and callable(mod.rhs_seconds_per_call)


def _fake_package(root: Path) -> None:
    """A package folder with one file of each kind the fingerprint sees, and the report's template."""
    for name, text in [("generator/pipeline.py", "x = 1\n"), ("generator/forms/composite.py", "y = 2\n"),
                       ("templates/module.c.j2", "{{ a }}\n"), ("templates/kernels.h.j2", "{{ b }}\n"),
                       ("runtime/report/report.html.j2", "<html>{{ c }}</html>\n"),
                       ("templates/native/dynamica_helpers.h", "\n"),
                       ("runtime/report/page.py", "z = 3\n"), ("build.py", "\n")]:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_fingerprint_covers_code_generation_only(tmp_path):
    """Editing the HTML report, the CLI, an analysis or an integrator keeps every cached module;
    editing a code-generation template, the generated-code support or a generator file invalidates them."""
    from dynamica.build import fingerprint_of
    _fake_package(tmp_path)
    base = fingerprint_of(tmp_path)
    assert fingerprint_of(tmp_path) == base
    for name in ("runtime/report/report.html.j2", "runtime/report/page.py", "runtime/cli/main.py",
                 "runtime/analysis/statics.py", "runtime/integrators/adams.py", "runtime/native/adams_core.pyx",
                 "generator/__pycache__/pipeline.cpython.pyc"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("changed\n")
        assert fingerprint_of(tmp_path) == base, name
    for name in ("templates/module.c.j2", "templates/kernels.h.j2", "generator/forms/composite.py",
                 "templates/native/dynamica_helpers.h", "build.py"):
        before = fingerprint_of(tmp_path)
        (tmp_path / name).write_text((tmp_path / name).read_text() + "// edited\n")
        assert fingerprint_of(tmp_path) != before, name
    (tmp_path / "generator/forms/new_form.py").write_text("w = 4\n")        # a new generator file counts
    assert fingerprint_of(tmp_path) != before
    assert fingerprint_of(tmp_path, version="9.9.9") != fingerprint_of(tmp_path)


def test_fingerprint_lists_every_file_a_build_uses():
    """Every template and fixed file of every backend is fingerprinted; the report's page is not."""
    from dynamica.build import fingerprint_files
    from dynamica.generator.render import MODULE_HELPERS
    root = Path(dynamica.__file__).resolve().parent
    files = {f.relative_to(root).as_posix() for f in fingerprint_files(root)}
    assert "runtime/report/report.html.j2" not in files
    backend_names()                                                         # registers every backend
    used = {"templates/module.c.j2"} | {f"templates/native/{h}" for h in MODULE_HELPERS}
    for b in BACKENDS.values():
        used |= {f"templates/{t}" for t, _, _, _ in b.templates} | {f"templates/native/{h}" for h in b.helpers}
    assert used <= files, used - files
    assert {"build.py", "generator/pipeline.py", "generator/render/c.py"} <= files
