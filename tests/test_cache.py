"""The module cache under faults: damaged entries are rebuilt with one warning instead
of crashing the process, concurrent builders survive one of them being killed, prune never takes
a module a running process holds, and a cache that cannot be written is one clear error.

The loads that meet a damaged entry run in subprocesses: the old failure was a SIGBUS of the
process, which only an exit status can show. Numbers are checked against the closed form of a
compound pendulum, phi'' = -m g l sin(phi) / (J + m l^2).
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import dynamica
from dynamica import build, cache
from dynamica.errors import BuildError, CacheError

from conftest import write_model
from helpers import PENDULUM, G, J, L, M

ANGLES = (0.3, -1.1, 2.0)


def closed_form_qdd(phi):
    return -M * G * L * math.sin(phi) / (J + M * L * L)


LOAD = """
import json, sys, warnings
warnings.simplefilter("always")
import dynamica
m = dynamica.load(sys.argv[1], form=sys.argv[2] if len(sys.argv) > 2 else None)
print(json.dumps([float(m.qdd([a], [0.0])[0]) for a in %r]))
""" % (ANGLES,)


def run_python(code, *args, cache_dir, timeout=300, **kw):
    env = {**os.environ, "DYNAMICA_CACHE": str(cache_dir)}
    env.pop("DYNAMICA_CACHE_MAX", None)
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], env=env, capture_output=True, text=True,
                          timeout=timeout, **kw)


def entry_dirs(cache_dir):
    return [p for p in Path(cache_dir).iterdir() if p.is_dir() and cache._ENTRY.match(p.name)]


def copy_cache(src: Path, dst: Path) -> Path:
    """A copy of a cache (as to a cluster node): its index names entries relative to the cache."""
    shutil.copytree(src, dst)
    return dst


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    """(model file, cache with the pendulum's composite and direct modules), built in a subprocess
    so that this process holds no lock on them."""
    root = tmp_path_factory.mktemp("cache_pristine")
    model = write_model(root, PENDULUM, "pendulum.yaml")
    cache_dir = root / "cache"
    for form in ("composite", "direct"):
        proc = run_python(LOAD, model, form, cache_dir=cache_dir)
        assert proc.returncode == 0, proc.stderr
    return model, cache_dir


def the_entry(cache_dir, form="composite") -> Path:
    (found,) = [e for e in entry_dirs(cache_dir) if e.name.startswith(f"pendulum_{form}-")]
    return found


def extension(entry: Path) -> Path:
    return entry / cache.read_manifest(entry)["extension"]


# ------------------------------------------------------------------ damaged entries
def truncate_half(entry):
    so = extension(entry)
    os.truncate(so, so.stat().st_size // 2)


def empty(entry):
    os.truncate(extension(entry), 0)


def flip_one_byte(entry):
    so = extension(entry)
    data = bytearray(so.read_bytes())
    data[len(data) // 2] ^= 0xFF
    so.write_bytes(bytes(data))


def delete_extension(entry):
    extension(entry).unlink()


def delete_header(entry):
    next(entry.glob("*_kernels.h")).unlink()


def delete_manifest(entry):
    (entry / cache.MANIFEST).unlink()


def foreign_python(entry):
    m = json.loads((entry / cache.MANIFEST).read_text())
    m["abi"] = ".cpython-39-aarch64-linux-gnu.so"           # copied from another machine
    (entry / cache.MANIFEST).write_text(json.dumps(m))


DAMAGE = {  # damage -> what the warning says
    "truncated": (truncate_half, "bytes, the manifest says"),
    "empty": (empty, "has 0 bytes"),
    "one byte changed": (flip_one_byte, "sha256"),
    "extension deleted": (delete_extension, "is missing"),
    "header deleted": (delete_header, "_kernels.h` is missing"),
    "manifest deleted": (delete_manifest, "manifest is missing"),
    "foreign python": (foreign_python, "another Python"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_entry_is_rebuilt_with_one_warning(pristine, tmp_path, damage):
    model, src = pristine
    cache_dir = copy_cache(src, tmp_path / "cache")
    harm, why = DAMAGE[damage]
    harm(the_entry(cache_dir))
    proc = run_python(LOAD, model, cache_dir=cache_dir)
    assert proc.returncode == 0, (proc.returncode, proc.stderr)           # old code: -7 (SIGBUS) or 1
    assert proc.stderr.count("CacheWarning") == 1, proc.stderr
    assert why in proc.stderr and "rebuilding" in proc.stderr, proc.stderr
    got = json.loads(proc.stdout)
    for a, v in zip(ANGLES, got):
        assert v == pytest.approx(closed_form_qdd(a), rel=1e-12, abs=1e-12)
    entry = the_entry(cache_dir)
    assert cache.verify(entry) is None
    assert len(list((cache_dir / cache.DAMAGED).iterdir())) == 1          # moved aside, not deleted
    again = run_python(LOAD, model, cache_dir=cache_dir)                    # and now a plain cache hit
    assert again.returncode == 0 and "Warning" not in again.stderr, again.stderr


def test_an_extension_that_does_not_import_is_a_build_error(tmp_path):
    """A file that passes its manifest but is no loadable library: BuildError with dlopen's message."""
    entry = tmp_path / f"junk_composite-{'0' * 24}"
    entry.mkdir()
    so = entry / f"junk_composite{cache.abi_tag()}"
    so.write_bytes(b"not an ELF file" * 300)
    cache.write_manifest(entry, "junk_composite", "0" * 64, so.name, "x")
    assert cache.verify(entry) is None
    with pytest.raises(BuildError) as info:
        build.import_extension(so)
    assert str(so) in str(info.value) and "cannot be imported" in str(info.value)
    assert "ELF" in str(info.value) or "too short" in str(info.value)          # the loader's own words


# ------------------------------------------------------------------ concurrent builders
BUILD = """
import sys
import dynamica
from dynamica.build import compile_bundle
g = dynamica.generate(sys.argv[1])
print(compile_bundle(g.bundle, cache=sys.argv[2]))
"""


#: BUILD with its compiler call held at a gate: it marks `started-<pid>` (its build folder exists by
#: then) and waits for the file `go`, so that a test can act mid-build without racing a fast compiler
BUILD_HELD = """
import os
import sys
import time
from pathlib import Path

from dynamica import build

gate, real = Path(sys.argv[3]), build._run


def held(cmd, work, *args, **kw):
    (gate / f"started-{os.getpid()}").write_text(str(work))
    deadline = time.monotonic() + 300
    while not (gate / "go").exists() and time.monotonic() < deadline:
        time.sleep(0.01)
    return real(cmd, work, *args, **kw)


build._run = held
""" + BUILD


def test_three_builders_one_killed_mid_build(tmp_path):
    model = write_model(tmp_path, PENDULUM, "pendulum.yaml")
    cache_dir, gate = tmp_path / "cache", tmp_path / "gate"
    cache_dir.mkdir()
    gate.mkdir()
    env = {**os.environ, "DYNAMICA_CACHE": str(cache_dir)}
    procs = [subprocess.Popen([sys.executable, "-c", BUILD_HELD, str(model), str(cache_dir), str(gate)], env=env,
                              text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
             for _ in range(3)]
    by_pid = {p.pid: p for p in procs}
    victim, deadline = None, time.monotonic() + 120
    while victim is None and time.monotonic() < deadline:     # a builder at its compiler call: kill it there
        started = list(gate.glob("started-*"))
        if started:
            pid = int(started[0].name.split("-")[1])
            assert any(int(d.name.rsplit("-", 2)[-2]) == pid for d in cache_dir.glob(".build-*"))
            victim = by_pid[pid]
            os.killpg(pid, signal.SIGKILL)                     # the builder (and a compiler, if any)
            victim.wait(timeout=60)
        time.sleep(0.01)
    assert victim is not None, "no builder reached its compiler call"
    (gate / "go").write_text("")                              # the others compile
    outs = {p.pid: p.communicate(timeout=300) for p in procs}
    assert victim.returncode == -signal.SIGKILL
    survivors = [p for p in procs if p is not victim]
    assert all(p.returncode == 0 for p in survivors), [outs[p.pid][1] for p in survivors]
    paths = {outs[p.pid][0].strip() for p in survivors}
    assert len(paths) == 1
    assert not list(cache_dir.glob(".build-*"))             # the killed builder's folder was removed
    (entry,) = entry_dirs(cache_dir)
    assert cache.verify(entry) is None
    from dynamica.generator.spec.model import load_model
    from dynamica.runtime.api import CompiledModel
    m = CompiledModel(build.import_extension(Path(paths.pop())), load_model(model))
    assert m.qdd([0.3], [0.0])[0] == pytest.approx(closed_form_qdd(0.3), rel=1e-12)


# ------------------------------------------------------------------ management
HOLD = LOAD + """
print("ready", flush=True)
sys.stdin.readline()
"""


def test_prune_and_clear_leave_a_module_a_running_process_holds(pristine, tmp_path):
    model, src = pristine
    cache_dir = copy_cache(src, tmp_path / "cache")
    env = {**os.environ, "DYNAMICA_CACHE": str(cache_dir)}
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(model)], env=env, text=True,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        holder.stdout.readline()
        assert holder.stdout.readline().strip() == "ready"
        held = the_entry(cache_dir, "composite")
        assert cache.in_use(held) and not cache.in_use(the_entry(cache_dir, "direct"))
        rem = cache.prune(cache_dir, max_size=0, older_than=0)
        assert [e.path for e in rem.kept_in_use] == [held]
        assert [e.name for e in rem.removed] == [the_entry(src, "direct").name]
        assert cache.clear(cache_dir).kept_in_use[0].path == held
        assert cache.verify(held) is None                    # still whole
    finally:
        holder.communicate("\n", timeout=60)
    assert holder.returncode == 0
    rem = cache.prune(cache_dir, max_size=0)                # released at exit: now it goes
    assert [e.path for e in rem.removed] == [held] and not entry_dirs(cache_dir)
    assert not list((cache_dir / "index").glob("*.json"))   # index files of removed modules too


def _age(entry: Path, days: float):
    t = time.time() - days * 86400
    os.utime(entry / cache.IN_USE, (t, t))


def test_prune_by_age_and_size_least_recently_used_first(pristine, tmp_path):
    model, src = pristine
    for label in ("age", "size"):
        cache_dir = copy_cache(src, tmp_path / label)
        _age(the_entry(cache_dir, "composite"), 40)
        _age(the_entry(cache_dir, "direct"), 1)
        if label == "age":
            rem = cache.prune(cache_dir, older_than=cache.parse_age("30d"))
        else:                                                # one byte too many: one entry goes, the LRU
            rem = cache.prune(cache_dir, max_size=cache._tree_size(cache_dir) - 1)
        assert [e.name for e in rem.removed] == [the_entry(src, "composite").name], label
        assert [e.name for e in entry_dirs(cache_dir)] == [the_entry(src, "direct").name]
    proc = run_python(LOAD, model, cache_dir=tmp_path / "size")   # the pruned one is simply rebuilt
    assert proc.returncode == 0 and "Warning" not in proc.stderr, proc.stderr


def test_cache_size_cap_applies_after_each_build(tmp_path, monkeypatch):
    model = write_model(tmp_path, PENDULUM, "pendulum.yaml")
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("DYNAMICA_CACHE_MAX", "1k")
    first = build.compile_bundle(dynamica.generate(model, form="composite").bundle, cache=cache_dir)
    second = build.compile_bundle(dynamica.generate(model, form="direct").bundle, cache=cache_dir)
    assert [e.name for e in entry_dirs(cache_dir)] == [second.parent.name]   # the new one is never pruned
    assert not first.exists()


def test_cache_commands(pristine, tmp_path, capsys):
    from dynamica.runtime.cli import main as cli
    model, src = pristine
    cache_dir = copy_cache(src, tmp_path / "cache")
    _age(the_entry(cache_dir, "composite"), 40)
    assert cli.main(["cache", "--cache", str(cache_dir), "info"]) == 0
    out = capsys.readouterr().out
    assert str(cache_dir) in out and "2 module(s)" in out and "pendulum" in out
    assert cli.main(["cache", "--cache", str(cache_dir), "list", "pendulum"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "pendulum_composite-" in lines[1] and "pendulum_direct-" in lines[2]      # least recently used first
    assert cli.main(["cache", "--cache", str(cache_dir), "list", "other"]) == 0
    assert "no cached modules" in capsys.readouterr().out
    assert cli.main(["cache", "--cache", str(cache_dir), "prune", "--older-than", "30d"]) == 0
    assert "removed 1 module(s)" in capsys.readouterr().out
    assert cli.main(["cache", "--cache", str(cache_dir), "prune", "--max-size", "lots"]) == 2
    assert "expected a number" in capsys.readouterr().err
    assert cli.main(["cache", "--cache", str(cache_dir), "clear", "pendulum"]) == 0
    assert "removed 1 module(s)" in capsys.readouterr().out and not entry_dirs(cache_dir)


def test_sizes_and_ages():
    assert cache.parse_size("1G") == 1 << 30 and cache.parse_size("500M") == 500 << 20
    assert cache.parse_size("200k") == 200 << 10 and cache.parse_size("1.5GiB") == 3 << 29
    assert cache.parse_size("4096") == 4096
    assert cache.parse_age("30d") == 30 * 86400 and cache.parse_age("12h") == 43200
    for bad in ("", "1X", "-1G"):
        with pytest.raises(ValueError):
            cache.parse_size(bad)
    with pytest.raises(ValueError):
        cache.parse_age("30")


# ------------------------------------------------------------------ locations that cannot take the cache
def _no_partial_builds(cache_dir):
    return not list(Path(cache_dir).glob(".build-*")) and not (Path(cache_dir).exists() and entry_dirs(cache_dir))


def _assert_names_cache(exc, cache_dir):
    msg = str(exc)
    assert str(cache_dir) in msg and "DYNAMICA_CACHE" in msg, msg


def test_a_cache_that_cannot_be_created(tmp_path, monkeypatch, capsys):
    from dynamica.runtime.cli import main as cli
    model = write_model(tmp_path, PENDULUM, "pendulum.yaml")
    (tmp_path / "file").write_text("")
    cache_dir = tmp_path / "file" / "cache"                  # under a regular file: even root cannot
    with pytest.raises(CacheError) as info:
        dynamica.load(model, cache=cache_dir)
    _assert_names_cache(info.value, cache_dir)
    monkeypatch.setenv("DYNAMICA_CACHE", str(cache_dir))
    assert cli.main(["compile", str(model), "-q"]) == 2
    err = capsys.readouterr().err
    assert ("\n" + err).count(
        "\ndynamica: error: the module cache"
    ) == 1 and "Traceback" not in err  # on a line of its own
    _assert_names_cache(err, cache_dir)


def _permission_denied(*a, **k):
    raise PermissionError(errno.EACCES, "Permission denied", str(k.get("dir", "")))


@pytest.mark.parametrize("where", ["build folder", "build lock"])
def test_a_cache_that_cannot_be_written(tmp_path, monkeypatch, where):
    model = write_model(tmp_path, PENDULUM, "pendulum.yaml")
    cache_dir = tmp_path / "cache"
    cache_dir.mkdir()
    if os.geteuid() != 0 and where == "build folder":
        cache_dir.chmod(0o555)                               # a real read-only directory
    elif where == "build folder":                            # root writes anywhere: the error it would get
        monkeypatch.setattr(build.tempfile, "mkdtemp", _permission_denied)
    else:
        class NoLock:
            def __init__(self, path):
                pass

            def __enter__(self):
                raise PermissionError(errno.EACCES, "Permission denied")

            def __exit__(self, *exc):
                pass
        import filelock
        monkeypatch.setattr(filelock, "FileLock", NoLock)            # (build.py imports it to build)
    try:
        with pytest.raises(CacheError) as info:
            dynamica.load(model, cache=cache_dir)
    finally:
        cache_dir.chmod(0o755)
    _assert_names_cache(info.value, cache_dir)
    assert "Permission denied" in str(info.value)
    assert _no_partial_builds(cache_dir)


def _fills_the_disk(bundle, work, compile_args):
    (work / f"{bundle.module_name}{cache.abi_tag()}").write_bytes(b"\x7fELF" + b"\0" * 100)   # a partial output
    raise OSError(errno.ENOSPC, "No space left on device")


def _compiler_finds_the_disk_full(bundle, work, compile_args):
    raise BuildError("compiling module failed (exit code 1)",
                     "$ cc ...\n/usr/bin/ld: final link failed: No space left on device\n")


@pytest.mark.parametrize("builder", [_fills_the_disk, _compiler_finds_the_disk_full])
def test_a_disk_that_fills_during_a_build(tmp_path, monkeypatch, builder):
    model = write_model(tmp_path, PENDULUM, "pendulum.yaml")
    cache_dir = tmp_path / "cache"
    monkeypatch.setitem(build.BUILDERS, ".c", builder)
    with pytest.raises(CacheError) as info:
        dynamica.load(model, cache=cache_dir)
    _assert_names_cache(info.value, cache_dir)
    assert "No space left" in str(info.value) or "disk is full" in str(info.value)
    assert _no_partial_builds(cache_dir)


def test_cache_actions_have_help_and_are_documented(capsys):
    """test_docs checks the first level of subcommands; the actions of `cache` are one deeper."""
    import re

    from dynamica.runtime.cli import main as cli

    from conftest import ROOT
    doc = (ROOT / "docs" / "api.md").read_text()
    for action in ("info", "list", "clear", "prune"):
        with pytest.raises(SystemExit) as info:
            cli.main(["cache", action, "--help"])
        assert info.value.code == 0
        options = set(re.findall(r"(--[a-z][a-z-]*)", capsys.readouterr().out)) - {"--help"}
        assert f"dynamica cache [--cache DIR] {action}" in doc
        assert all(f"`{o}" in doc for o in options), options
