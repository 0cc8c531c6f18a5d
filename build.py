"""Building generated sources into importable extension modules (the only code that runs compilers).

Builds are cached by a content signature: the generated sources, the tool version, the Cython
and Python versions, the platform and the compiler flags. A build happens in a private
temporary directory inside the cache and is moved into place with one atomic `rename`, under a
file lock, so several processes building the same model at once neither corrupt the cache nor
duplicate work; a failed build leaves nothing behind and raises `BuildError` with the log.
Each published entry carries a manifest that is verified before the extension is opened
(cache.py); a damaged entry is moved aside and rebuilt.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.machinery
import importlib.util
import os
import platform
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import warnings
from pathlib import Path

from dynamica import cache as cache_store
from dynamica.errors import BuildError, user_stacklevel
from dynamica.version import __version__

COMPILE_ARGS = ("-O2", "-fno-math-errno", "-Wno-unused-variable", "-Wno-unused-function")
#: above this many operations, -O1: for long straight-line code it runs as fast as -O2
#: (measured: chain of 20, 3.12 vs 3.14 us per RHS) and compiles about a quarter faster
LARGE_PROGRAM_OPS = 20000
COMPILE_ARGS_LARGE = ("-O1",) + COMPILE_ARGS[1:]


def default_compile_args(bundle) -> tuple:
    return COMPILE_ARGS_LARGE if getattr(bundle, "op_count", 0) > LARGE_PROGRAM_OPS else COMPILE_ARGS

_CYTHON_SCRIPT = r"""
import sys
from setuptools import Distribution, Extension
from Cython.Build import cythonize
src, name, args = sys.argv[1], sys.argv[2], sys.argv[3:]
ext = Extension(name, [src], extra_compile_args=list(args))
exts = cythonize([ext], quiet=True, language_level=3, include_path=["."])
dist = Distribution({"ext_modules": exts, "script_name": "build", "script_args": ["build_ext", "--inplace"]})
dist.parse_command_line()
dist.run_commands()
"""


#: gfortran flags of the Fortran backend
FORTRAN_ARGS = ("-O2", "-Wno-unused-dummy-argument", "-Wno-unused-variable")
FORTRAN_ARGS_LARGE = ("-O1",) + FORTRAN_ARGS[1:]


def fortran_compile_args(bundle) -> tuple:
    return FORTRAN_ARGS_LARGE if getattr(bundle, "op_count", 0) > LARGE_PROGRAM_OPS else FORTRAN_ARGS


def _gfortran() -> str:
    gf = shutil.which(os.environ.get("FC", "gfortran"))
    if gf is None:
        raise BuildError("backend 'fortran' needs gfortran (e.g. `apt-get install -y gfortran`), "
                         "which is not on PATH", "")
    return gf


def fortran_toolchain() -> str:
    """gfortran's version: part of the build key of Fortran modules."""
    gf = _gfortran()
    out = subprocess.run([gf, "--version"], capture_output=True, text=True).stdout.splitlines()
    return out[0] if out else gf


def _run(cmd, work: Path, log: list, what: str):
    proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    log.append(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}")
    if proc.returncode != 0:
        raise BuildError(f"{what} failed (exit code {proc.returncode})", "".join(log))


def _compile_fortran(name: str, work: Path, bundle, log: list) -> list:
    """gfortran -c: an object file, and the link arguments of the Fortran runtime library."""
    gf = _gfortran()
    obj = Path(name).with_suffix(".o").name
    _run([gf, "-c", "-fPIC", *fortran_compile_args(bundle), name, "-o", obj], work, log,
         f"gfortran on `{name}`")
    lib = subprocess.run([gf, "-print-file-name=libgfortran.so"], capture_output=True, text=True).stdout.strip()
    libdir = [f"-L{Path(lib).parent}"] if os.path.isabs(lib) else []
    return [obj, *libdir, "-lgfortran"]


#: language of a separately compiled source -> (file name, work dir, bundle, log) -> link arguments
COMPILERS = {"fortran": _compile_fortran}


def _build_c(bundle, work: Path, compile_args) -> str:
    """The module file and the backend's other sources in one extension: the other sources
    compiled by their compilers (`COMPILERS`), then one call of the C compiler that compiles the
    module file and links (Python's own LDSHARED, so the flags suit this interpreter)."""
    log: list = []
    link = []
    for name, language in bundle.compiled:
        if language not in COMPILERS:
            raise BuildError(f"no compiler for {language!r} sources (`{name}`)", "")
        link += COMPILERS[language](name, work, bundle, log)
    cfg = sysconfig.get_config_var
    ldshared = shlex.split(cfg("LDSHARED") or f"{cfg('CC') or 'cc'} -shared")
    includes = {sysconfig.get_paths()["include"], sysconfig.get_paths()["platinclude"]}
    out = f"{bundle.module_name}{cfg('EXT_SUFFIX') or '.so'}"
    cmd = [*ldshared, *shlex.split(cfg("CCSHARED") or "-fPIC"), *compile_args, *(f"-I{i}" for i in sorted(includes)),
           "-I.", bundle.main[0], *link, "-lm", "-o", out]
    _run(cmd, work, log, f"compiling module `{bundle.module_name}`")
    return "".join(log)


def _build_cython(bundle, work: Path, compile_args) -> str:
    """A Cython source (dynamica's fixed parts, `compiled_helper`), through setuptools."""
    proc = subprocess.run([sys.executable, "-c", _CYTHON_SCRIPT, bundle.main[0], bundle.module_name, *compile_args],
                          cwd=work, capture_output=True, text=True)
    if proc.returncode != 0:
        raise BuildError(f"compiling module `{bundle.module_name}` failed (exit code {proc.returncode})",
                         proc.stdout + proc.stderr)
    shutil.rmtree(work / "build", ignore_errors=True)
    return proc.stdout + proc.stderr


#: suffix of a bundle's main file -> builder(bundle, work dir, compile args) -> log
BUILDERS = {".c": _build_c, ".pyx": _build_cython}


def cache_root() -> Path:
    """`$DYNAMICA_CACHE`, else `$XDG_CACHE_HOME/dynamica`, else `~/.cache/dynamica`."""
    env = os.environ.get("DYNAMICA_CACHE")
    if env:
        return Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dynamica"


_FINGERPRINT = None


#: the files whose content shapes generated modules: the generator, the code-generation templates, the
#: generated-code support copied into every build (templates/native) and this file; nothing of the runtime (the
#: report's page, the CLI, an analysis rebuild no module). tests/test_build.py checks that every template and
#: helper a backend uses is here.
_FINGERPRINTED = ("generator/**/*.py", "templates/*.j2", "templates/native/*.h", "templates/native/*.py", "build.py")


def fingerprint_files(root: Path) -> list:
    """The files under `root` (the package's folder) that the tool fingerprint hashes, sorted."""
    return sorted({f for pattern in _FINGERPRINTED for f in root.glob(pattern) if "__pycache__" not in f.parts})


def fingerprint_of(root: Path, version: str = __version__) -> str:
    """Hash of the version and of the names and contents of `fingerprint_files(root)`."""
    h = hashlib.sha256(version.encode())
    for f in fingerprint_files(root):
        h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def tool_fingerprint() -> str:
    """Hash of what shapes generated modules: any change to it invalidates the caches."""
    global _FINGERPRINT
    if _FINGERPRINT is None:
        _FINGERPRINT = fingerprint_of(Path(__file__).resolve().parent)
    return _FINGERPRINT


def build_key(bundle, compile_args, key_parts=None) -> str:
    """Content key of a build: the sources, the toolchain, the flags and `key_parts` (default:
    the tool fingerprint, which every generated module depends on)."""
    from importlib.metadata import version
    h = hashlib.sha256()
    for part in (
        *(key_parts if key_parts is not None else (tool_fingerprint(),)),
        version("Cython"),
        sys.version,
        platform.platform(),
        sysconfig.get_config_var("EXT_SUFFIX") or "",
        repr(tuple(compile_args)),
        bundle.backend,
    ):
        h.update(part.encode())
        h.update(b"\0")
    if bundle.backend == "fortran":
        for part in (fortran_toolchain(), repr(fortran_compile_args(bundle))):
            h.update(part.encode())
            h.update(b"\0")
    for name, text in bundle.files:
        h.update(name.encode() + b"\0" + text.encode() + b"\0")
    return h.hexdigest()


def _find_extension(folder: Path, module_name: str) -> Path | None:
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        p = folder / f"{module_name}{suffix}"
        if p.exists():
            return p
    return None


def _sound_extension(final: Path, key: str) -> tuple:
    """(path of the extension, None) when the entry `final` verifies against its manifest, else
    (None, why not); (None, None) when there is no entry."""
    if not final.exists():
        return None, None
    why = cache_store.verify(final, key=key)
    if why is not None:
        return None, why
    return final / cache_store.read_manifest(final)["extension"], None


def _writable_root(cache: Path):
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise cache_store.unwritable(cache, exc) from None
    if not cache.is_dir():
        raise cache_store.unwritable(cache, "it is not a directory")


#: what a compiler prints when the disk fills under it
_DISK_FULL = ("No space left on device", "Disk quota exceeded")


def compile_bundle(bundle, cache: Path | None = None, compile_args=None, progress=None, key_parts=None,
                   meta=None) -> Path:
    """Compile `bundle` (or find it in the cache); return the path of the extension module.

    A cached entry is used only when it verifies against its manifest (cache.py); a damaged or
    foreign one is moved aside with one `CacheWarning` saying why, and rebuilt. `meta` (model,
    form, backend, mode) goes into the manifest for `dynamica cache list`. A cache location that
    cannot be created or written, or a disk that fills, is a `CacheError` naming it.
    """
    if compile_args is None:
        compile_args = default_compile_args(bundle)
    cache = Path(cache) if cache is not None else cache_root()
    key = build_key(bundle, compile_args, key_parts)
    final = cache / f"{bundle.module_name}-{key[:24]}"
    found, _ = _sound_extension(final, key)
    if found:
        return found
    _writable_root(cache)
    fingerprint = tool_fingerprint() if key_parts is None else \
        "parts:" + hashlib.sha256("\0".join(key_parts).encode()).hexdigest()
    from filelock import FileLock  # (here: a cache hit takes no lock, and filelock's import costs 20 ms)
    try:
        with FileLock(str(final) + ".lock"):
            found = _build_locked(bundle, cache, final, key, compile_args, progress,
                                  {"fingerprint": fingerprint, "meta": meta})
    except OSError as exc:
        if cache_store.is_unwritable(exc):
            raise cache_store.unwritable(cache, exc) from None
        raise
    except BuildError as exc:
        if any(s in exc.log for s in _DISK_FULL):
            raise cache_store.unwritable(cache, "the disk is full (the compiler could not write)") from exc
        raise
    cap = cache_store.size_cap()
    if cap is not None:
        cache_store.prune(cache, max_size=cap, keep=(final,))
    return found


def _build_locked(bundle, cache: Path, final: Path, key: str, compile_args, progress, record) -> Path:
    """Under the entry's build lock: use a sound entry, or move a damaged one aside and build."""
    found, why = _sound_extension(final, key)       # another process may have won the race
    if found:
        return found
    if why is not None:
        aside = cache_store.move_aside(final)
        warnings.warn(cache_store.CacheWarning(
            f"the cached module `{final.name}` in {cache} is damaged or foreign: {why}; "
            f"moved it to {aside} and rebuilding it"), stacklevel=user_stacklevel())
    prefix = cache_store.build_dir_prefix(final.name)
    for orphan in cache.glob(prefix + "*"):           # left by a killed builder (we hold the lock)
        shutil.rmtree(orphan, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix=f"{prefix}{os.getpid()}-", dir=cache))
    try:
        for name, text in bundle.files:
            (work / name).write_text(text)
        t0 = time.perf_counter()
        builder = BUILDERS[Path(bundle.main[0]).suffix]
        log = builder(bundle, work, compile_args)
        ext = _find_extension(work, bundle.module_name)
        if ext is None:
            raise BuildError(f"the build of `{bundle.module_name}` produced no extension module", log)
        (work / "build.log").write_text(log)
        cache_store.write_manifest(work, bundle.module_name, key, ext.name, record["fingerprint"],
                                   {"backend": bundle.backend, **(record["meta"] or {})})
        if progress is not None:
            progress("compile", time.perf_counter() - t0)
        try:
            os.rename(work, final)                                 # atomic publish
        except OSError:
            theirs, _ = _sound_extension(final, key)   # published meanwhile by a builder that
            if theirs is None:                         # locked a removed lock file (cache.prune)
                raise
            return theirs
    finally:
        if work.exists():
            shutil.rmtree(work, ignore_errors=True)
    return final / ext.name


class EntryVanished(BuildError):
    """The cache entry was removed (pruned) between finding it and locking it: find it again."""


def import_extension(path: Path):
    """Import a compiled module from its file, under a name unique to that file.

    A module in the cache is held with a shared lock while this process lives (cache.hold), so
    `dynamica cache prune` leaves it alone. A module that fails to import is a `BuildError`
    with the loader's message. The caller has verified the file (`compile_bundle` does): dlopen
    of a truncated file can end the process with SIGBUS.
    """
    path = Path(path)
    name = path.name.split(".")[0]
    unique = f"{name}__{hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]}"
    if unique in sys.modules:
        return sys.modules[unique]
    if not cache_store.hold(path.parent):
        raise EntryVanished(f"the cached module {path} was removed while it was being loaded")
    loader = importlib.machinery.ExtensionFileLoader(name, str(path))
    spec = importlib.util.spec_from_file_location(name, str(path), loader=loader)
    try:
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except (ImportError, OSError) as exc:
        raise BuildError(f"the compiled module {path} cannot be imported: {exc}") from None
    sys.modules[unique] = module
    return module


_HELPERS: dict = {}
_HELPERS_LOCK = threading.Lock()


#: the plain-C headers (runtime/native) a helper's .pyx includes: part of its source, so of its SOURCE_SHA
HELPER_HEADERS = {"adams_core": ("dynamica_adams.h",)}


def helper_source(name: str) -> tuple:
    """((file name, text), ...) of a fixed compiled part: its .pyx and the headers it includes, and
    their SHA-256 (the .pyx's text followed by the headers', as setup.py computes it)."""
    from importlib import resources
    files = [(f"{name}.pyx", resources.files("dynamica.runtime.native").joinpath(f"{name}.pyx").read_text())]
    files += [(h, resources.files("dynamica.runtime.native").joinpath(h).read_text())
              for h in HELPER_HEADERS.get(name, ())]
    return tuple(files), hashlib.sha256("".join(text for _, text in files).encode()).hexdigest()


def compiled_helper(name: str):
    """A fixed compiled part of dynamica (`runtime/<name>.pyx`: `adams_core`, `ctiming`, `series_core`).

    Normally the extension built at install time (setup.py). When it is missing, or was built
    from another text of its source (a development checkout whose .pyx was edited after
    installing), the source is built like a generated module: once, into the cache.
    """
    mod = _HELPERS.get(name)
    if mod is not None:
        return mod
    with _HELPERS_LOCK:
        if name not in _HELPERS:
            files, sha = helper_source(name)
            try:
                mod = importlib.import_module(f"dynamica.runtime.native.{name}")
            except ImportError:
                mod = None
            if mod is None or getattr(mod, "SOURCE_SHA", None) != sha:
                from dynamica.generator.render import SourceBundle
                bundle = SourceBundle(module_name=name, backend="cython", files=files, signature=name)
                mod = import_extension(compile_bundle(bundle, key_parts=(sha,)))
            _HELPERS[name] = mod
    return _HELPERS[name]
