"""The module cache as a store: entry manifests, in-use locks, listing, pruning (docs/cache.md).

An entry is a folder `<module>-<key[:24]>` published by `build.compile_bundle`. Its
`manifest.json` names every file with its size and sha256, the build key, the tool fingerprint
and the Python ABI tag; `verify` checks it before the extension is opened (sizes of all files
and the hash of the extension), because dlopen of a truncated shared object can kill the
process with SIGBUS instead of raising. A process that imported an entry holds a shared
`flock` on the entry's `in-use.lock` until it exits, and refreshes that file's mtime (the
entry's last use); `prune` and `clear` remove only entries whose lock they can take
exclusively. On systems without `fcntl` (Windows) no lock is held and every entry counts as
unused.

This module runs no compiler; it is not part of the tool fingerprint, so changing it keeps
the cache valid.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import sys
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

try:
    import fcntl
except ImportError:                     # Windows: no advisory locks, entries never count as in use
    fcntl = None

from dynamica.errors import CacheError, CacheWarning  # noqa: F401 (CacheWarning: raised via build)
from dynamica.files import is_temporary

MANIFEST = "manifest.json"
IN_USE = "in-use.lock"
#: the manifest format; an entry with another one is treated as foreign
FORMAT = 1
#: where damaged or foreign entries are moved before they are rebuilt (removed by prune/clear)
DAMAGED = ".damaged"
_ENTRY = re.compile(r"^(?P<module>.+)-(?P<key>[0-9a-f]{24})$")
#: errno values that mean "this location cannot take files"
_UNWRITABLE = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR,
               errno.EEXIST}


def abi_tag() -> str:
    """The suffix of this interpreter's extension modules (Python version, ABI, platform)."""
    return sysconfig.get_config_var("EXT_SUFFIX") or ".so"


def unwritable(cache: Path, exc: BaseException | str) -> CacheError:
    """The error of a cache location that cannot be created or written (or is full)."""
    reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
    return CacheError(f"the module cache {cache} cannot be used: {reason}. Set DYNAMICA_CACHE to a writable "
                      "directory with free space (e.g. `export DYNAMICA_CACHE=/tmp/dynamica-cache`)")


def is_unwritable(exc: OSError) -> bool:
    return isinstance(exc, OSError) and exc.errno in _UNWRITABLE


# ------------------------------------------------------------------ manifests
def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def write_manifest(folder: Path, module: str, key: str, extension: str, fingerprint: str, meta=None):
    """Record every file of a finished build (before it is published)."""
    files = {f.name: {"size": f.stat().st_size, "sha256": _sha256(f)}
             for f in sorted(folder.iterdir()) if f.is_file() and f.name not in (MANIFEST, IN_USE)}
    manifest = {"format": FORMAT, "module": module, "key": key, "extension": extension,
                "fingerprint": fingerprint, "abi": abi_tag(), "python": sys.version.split()[0],
                "created": time.time(), **(meta or {}), "files": files}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1))
    (folder / IN_USE).touch()


def read_manifest(folder: Path) -> dict | None:
    try:
        data = json.loads((Path(folder) / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def verify(folder: Path, key: str | None = None, fingerprint: str | None = None) -> str | None:
    """Why the entry `folder` must not be imported, or None when it is sound.

    Checks the manifest (present, this format, this ABI, the expected key or tool fingerprint),
    the size of every file it lists and the sha256 of the extension module.
    """
    folder = Path(folder)
    m = read_manifest(folder)
    if m is None:
        return "its manifest is missing or unreadable" if folder.exists() else "it is missing"
    try:
        if m.get("format") != FORMAT:
            return f"its manifest has format {m.get('format')!r}, not {FORMAT}"
        if m["abi"] != abi_tag():
            return f"it was built for another Python ({m['abi']}, this one is {abi_tag()})"
        if key is not None and m["key"] != key:
            return "its manifest belongs to another build (foreign entry)"
        if not folder.name.endswith("-" + m["key"][:24]):
            return "its manifest belongs to another folder (foreign entry)"
        if fingerprint is not None and m["fingerprint"] != fingerprint:
            return "it was built by another version of dynamica"
        files, ext = m["files"], m["extension"]
        if ext not in files:
            return "its manifest lists no extension module"
        for name, rec in files.items():
            try:
                size = (folder / name).stat().st_size
            except OSError:
                return f"`{name}` is missing"
            if size != rec["size"]:
                return f"`{name}` has {size} bytes, the manifest says {rec['size']}"
        if _sha256(folder / ext) != files[ext]["sha256"]:
            return f"the content of `{ext}` differs from its manifest (sha256)"
    except (KeyError, TypeError, AttributeError):
        return "its manifest is incomplete"
    return None


def move_aside(folder: Path) -> Path:
    """Move a damaged or foreign entry out of the way (into `<cache>/.damaged/`)."""
    folder = Path(folder)
    target_dir = folder.parent / DAMAGED
    target_dir.mkdir(exist_ok=True)
    target = target_dir / f"{folder.name}-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    os.rename(folder, target)
    return target


# ------------------------------------------------------------------ in-use locks
#: entry folder -> open file descriptor holding LOCK_SH (kept until the process exits)
_HELD: dict = {}


def hold(folder: Path) -> bool:
    """Hold a shared lock on the entry `folder` for the life of this process (and mark it used now).

    False when the entry vanished meanwhile (moved by a prune or a rebuild): it must be found again.
    A folder that is not a cache entry (no manifest) needs no lock: True.
    """
    folder = Path(folder)
    real = str(folder.resolve())
    if real in _HELD:
        return True
    if not (folder / MANIFEST).exists():
        return folder.exists()
    lock = folder / IN_USE
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        if exc.errno in (errno.EMFILE, errno.ENFILE):   # out of descriptors (one per loaded module):
            return folder.exists()                       # the module is used without its lock
        try:                                        # a read-only cache: lock what is there
            fd = os.open(lock, os.O_RDONLY)
        except OSError:
            return folder.exists()
    if fcntl is not None:
        fcntl.flock(fd, fcntl.LOCK_SH)
    try:
        same = os.stat(lock).st_ino == os.fstat(fd).st_ino
    except OSError:
        same = False
    if not same:                                    # pruned between our look and our lock
        os.close(fd)
        return False
    try:
        os.utime(fd if os.utime in os.supports_fd else lock)
    except OSError:
        pass                                        # read-only cache: last use not recorded
    _HELD[real] = fd
    return True


def _try_exclusive(folder: Path):
    """An fd holding LOCK_EX on the entry, or None when a process has it loaded."""
    lock = Path(folder) / IN_USE
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError:
        return None
    if str(Path(folder).resolve()) in _HELD:                     # loaded by this very process
        os.close(fd)
        return None
    if fcntl is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return None
    return fd


def status(folder: Path, fingerprint: str) -> str:
    """"ok", "stale" (built by another version of dynamica: it will not be used again) or
    "damaged: why"."""
    why = verify(folder)
    if why is not None:
        return f"damaged: {why}"
    fp = (read_manifest(folder) or {}).get("fingerprint", "")
    return "ok" if fp == fingerprint or fp.startswith("parts:") else "stale"


def in_use(folder: Path) -> bool:
    fd = _try_exclusive(folder)
    if fd is None:
        return True
    os.close(fd)
    return False


# ------------------------------------------------------------------ listing
@dataclass
class Entry:
    path: Path
    module: str
    model: str
    form: str
    backend: str
    mode: str
    size: int
    created: float
    last_used: float
    manifest: dict | None
    stage_of: str = ""          #: the model whose stage's structure this module is ("": none)

    @property
    def name(self) -> str:
        return self.path.name


def _tree_size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_size
            except OSError:
                pass
    return total


def _entry(folder: Path) -> Entry:
    m = read_manifest(folder) or {}
    mod = m.get("module") or _ENTRY.match(folder.name).group("module")
    created = m.get("created") or folder.stat().st_mtime
    try:
        used = (folder / IN_USE).stat().st_mtime
    except OSError:
        used = created
    return Entry(path=folder, module=mod, model=m.get("model") or mod, form=m.get("form", ""),
                 backend=m.get("backend", ""), mode=m.get("mode", ""), size=_tree_size(folder),
                 created=created, last_used=used, manifest=m or None, stage_of=m.get("stage_of") or "")


#: the name of a stage's structure: the model's name and 10 hex digits (generator/mechanics/stages.py
#: `derive`), for entries whose manifest predates its `stage_of`
_STAGE_NAME = re.compile(r"^(?P<model>.+)_[0-9a-f]{10}$")


def _of_model(e: Entry, model: str) -> bool:
    if model in (e.model, e.module) or e.stage_of == model:
        return True
    m = _STAGE_NAME.match(e.model)
    return not e.stage_of and m is not None and m.group("model") == model


def entries(cache: Path, model: str | None = None) -> list:
    """The published entries of the cache (optionally of one model, by model or module name, its
    stages' modules included), least recently used first."""
    cache = Path(cache)
    if not cache.is_dir():
        return []
    found = [_entry(f) for f in cache.iterdir() if f.is_dir() and _ENTRY.match(f.name)]
    if model is not None:
        found = [e for e in found if _of_model(e, model)]
    return sorted(found, key=lambda e: e.last_used)


def leftovers(cache: Path) -> list:
    """Paths that are not entries: damaged entries moved aside, trash of an interrupted removal,
    build folders of killed builders (only those nobody is building now)."""
    cache = Path(cache)
    if not cache.is_dir():
        return []
    out = [p for p in (cache / DAMAGED).iterdir()] if (cache / DAMAGED).is_dir() else []
    for p in cache.iterdir():
        if p.name.startswith(".trash-"):
            out.append(p)
        elif p.name.startswith(".build-") and not _being_built(cache, p):
            out.append(p)
    return out


def build_dir_prefix(entry_name: str) -> str:
    """Prefix of the private build folders of one entry (the builder's pid follows)."""
    return f".build-{entry_name}-"


def _being_built(cache: Path, build_dir: Path) -> bool:
    """True when a builder holds the entry's build lock (its folder is not an orphan)."""
    from filelock import FileLock, Timeout
    m = re.match(r"^\.build-(.+-[0-9a-f]{24})-\d+-", build_dir.name)
    if not m:
        return time.time() - build_dir.stat().st_mtime < 86400
    try:
        with FileLock(str(cache / m.group(1)) + ".lock", timeout=0):
            return False
    except Timeout:
        return True
    except OSError:
        return True


@dataclass
class Info:
    location: Path
    size: int
    entries: list
    leftover_size: int
    index_files: int

    def by_model(self) -> dict:
        out: dict = {}
        for e in self.entries:
            n, s = out.get(e.model, (0, 0))
            out[e.model] = (n + 1, s + e.size)
        return dict(sorted(out.items()))


def info(cache: Path) -> Info:
    cache = Path(cache)
    es = entries(cache)
    index = [f for f in (cache / "index").glob("*.json") if not is_temporary(f)] if (cache / "index").is_dir() else []
    rest = sum(_tree_size(p) for p in leftovers(cache))
    return Info(location=cache, size=_tree_size(cache) if cache.is_dir() else 0, entries=es, leftover_size=rest,
                index_files=len(index))


# ------------------------------------------------------------------ removal
@dataclass
class Removal:
    removed: list          # entries removed
    kept_in_use: list      # entries that matched but are loaded by a running process
    freed: int             # bytes


def _remove_entry(cache: Path, e: Entry) -> bool:
    fd = _try_exclusive(e.path)
    if fd is None:
        return False
    trash = cache / f".trash-{e.name}-{os.getpid()}"
    try:
        os.rename(e.path, trash)                 # while locked: a loader that locks later sees it gone
    except OSError as exc:
        os.close(fd)
        if is_unwritable(exc):
            raise unwritable(cache, exc) from None
        return False
    os.close(fd)
    shutil.rmtree(trash, ignore_errors=True)
    _remove_build_lock(cache, e.name)
    return True


def _remove_build_lock(cache: Path, name: str):
    """Remove the build lock file of a removed entry, unless a builder holds it (a builder that
    loses the race of a removed lock file finds the entry published and keeps it: build.py)."""
    from filelock import FileLock, Timeout
    path = cache / f"{name}.lock"
    try:
        with FileLock(str(path), timeout=0):
            path.unlink(missing_ok=True)
    except (Timeout, OSError):
        pass


def _remove_leftovers(cache: Path) -> int:
    freed = 0
    for p in leftovers(cache):
        freed += _tree_size(p)
        shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink(missing_ok=True)
    return freed


def _clean_index(cache: Path):
    """Drop index files that point at modules no longer in the cache."""
    folder = cache / "index"
    if not folder.is_dir():
        return
    for f in folder.iterdir():
        try:
            record = json.loads(f.read_text())
            stale = not (cache / record["entry"] / record["file"]).exists()
        except (OSError, ValueError, KeyError, TypeError):
            stale = not is_temporary(f) or time.time() - f.stat().st_mtime > 3600
        if stale:
            f.unlink(missing_ok=True)


def _remove(cache: Path, chosen) -> Removal:
    rem = Removal([], [], 0)
    for e in chosen:
        if _remove_entry(cache, e):
            rem.removed.append(e)
            rem.freed += e.size
        else:
            rem.kept_in_use.append(e)
    rem.freed += _remove_leftovers(cache)
    for lock in cache.glob("*.lock"):                # of entries removed earlier
        if _ENTRY.match(lock.stem) and not (cache / lock.stem).exists():
            _remove_build_lock(cache, lock.stem)
    _clean_index(cache)
    return rem


def clear(cache: Path, model: str | None = None) -> Removal:
    """Remove every entry (of `model`) that no running process has loaded, and the leftovers."""
    return _remove(Path(cache), entries(cache, model))


def prune(cache: Path, max_size: int | None = None, older_than: float | None = None, keep=()) -> Removal:
    """Remove entries unused for more than `older_than` seconds, then least recently used ones
    until the cache is at most `max_size` bytes; never an entry in use or one of `keep`."""
    cache = Path(cache)
    keep = {Path(k).resolve() for k in keep}
    es = [e for e in entries(cache) if e.path.resolve() not in keep]
    now = time.time()
    chosen = [e for e in es if older_than is not None and now - e.last_used > older_than]
    rem = _remove(cache, chosen)
    if max_size is not None:
        total = _tree_size(cache)
        tried = {e.path for e in chosen}
        for e in es:
            if total <= max_size:
                break
            if e.path in tried:
                continue
            if _remove_entry(cache, e):
                rem.removed.append(e)
                rem.freed += e.size
                total -= e.size
            else:
                rem.kept_in_use.append(e)
        _clean_index(cache)
    return rem


# ------------------------------------------------------------------ sizes and ages on the command line
_SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024 ** 2, "g": 1024 ** 3, "t": 1024 ** 4}
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_size(text: str) -> int:
    """'1G', '500M', '200k', '1048576' -> bytes (binary units; a trailing 'B' or 'iB' is allowed)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(text), re.I)
    if not m:
        raise ValueError(f"size {text!r}: expected a number with an optional unit K, M, G or T (e.g. 1G)")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])


def parse_age(text: str) -> float:
    """'30d', '12h', '90m', '45s', '2w' -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", str(text), re.I)
    if not m:
        raise ValueError(f"age {text!r}: expected a number with a unit s, m, h, d or w (e.g. 30d)")
    return float(m.group(1)) * _AGE_UNITS[m.group(2).lower()]


def size_cap() -> int | None:
    """`$DYNAMICA_CACHE_MAX` (a size such as 2G), applied after each build; None when unset."""
    text = os.environ.get("DYNAMICA_CACHE_MAX")
    if not text:
        return None
    try:
        return parse_size(text)
    except ValueError as exc:
        raise CacheError(f"DYNAMICA_CACHE_MAX: {exc}") from None


def human(n: float) -> str:
    for unit in ("B", "K", "M", "G"):
        if abs(n) < 1024 or unit == "G":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} G"
