"""A memo of Triton's ``triton_key()`` on disk, so a fresh process does not hash ``libtriton.so`` again.

Why: every compile and every lookup in Triton's cache needs ``triton.runtime.cache.triton_key()``, which
sha256-hashes ``runtime/cache.py``, every module of Triton's ``compiler``, ``backends`` and ``language``
packages and the whole ``_C/libtriton.so`` (500 MB in triton 3.9), once per process: 0.39 s on the H200's host
(cProfile), 0.38-0.39 s on the 2-core dev machine with the library in the page cache (1.24 s with it cold).
That is a fifth of a new key's search in a fresh process (1.8 s). Its inputs are files, so the computed key is
kept in ``<user cache dir>/tritune/triton_key.json`` under a fingerprint of those files' metadata and read
back: on the dev machine (triton 3.9, fresh processes, medians of 7) Triton's function took 443 ms and the
warm memo 6.1 ms (ratio 0.014), of which the fingerprint is 1.8 ms and importing ``platformdirs`` for the
cache dir 4.6 ms where nothing else has imported it yet (the default store does). The first process with a new
fingerprint pays the hash plus about 3 ms for the fingerprint and the write.

The fingerprint (:func:`triton_files_fingerprint`) covers a superset of what ``triton_key`` reads: the path,
size, ``st_mtime_ns``, ``st_ctime_ns`` and inode of ``runtime/cache.py``, of ``_C/libtriton.<ext>``
and of every importable file (``.py``, ``.pyc``, extension modules; ``__pycache__`` left out) under
``compiler/``, ``backends/`` and ``language/``, found by ``os.walk``; plus ``triton.__version__``,
``sys.executable`` and ``EXT_SUFFIX``. Triton 3.6 (the device's) and 3.9 hash the same inputs; a layout
without ``libtriton`` or without an unpatched ``triton_key`` is left alone.

**What it trusts, plainly:** a file changed in place so that its size, mtime, ctime and inode all stay
the same is not noticed, and the old key is served: Triton then reuses binaries that the old compiler
built. Writing a file moves its ctime, and ``os.utime``/``touch`` cannot set ctime back, so with ordinary
tools this takes a filesystem that does not keep ctime, a same-size write within the same tick of the
kernel's coarse clock (a few ms on Linux) as the fingerprint's stat (an install running while a process
fingerprints), or editing the disk image under the filesystem. Inputs that are not files are assumed
fixed: ``triton_key`` finds subpackages by importing each package (in 3.9 ``import triton`` has imported
all of them already, so one that fails to import fails that first). The device number is left out on
purpose: a container's overlay may report another one at each start, which would only cost a hash per
start. Delete the memo file to recompute once, or set ``TRITUNE_TRITON_KEY_MEMO=0`` to use Triton's own
function. Where the original has already run in this process (its ``lru_cache`` holds the value), that
value is served and written, never the memo's. Checked on both versions: the 3.6.0 wheel and the installed
3.9.0 give the same key through the memo as without it.

Installing (:func:`install_triton_key_memo`, called where tritune first compiles or looks up Triton's cache:
``Specialization.cache_hash``/``compile``, the compile workers, the decorator's miss) replaces
``triton.runtime.cache.triton_key`` and every imported ``triton.*`` module attribute that holds the original
function (``triton.runtime.autotuner`` imports it by name), as Triton's own warm-up pool does in its
workers. The replacement resolves the key once per process; forked workers inherit it, value included. A
memo file that is unreadable, corrupt, not the user's own or writable by others means one recompute, never
an error; writes go to a temporary file and ``os.replace``.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.machinery
import json
import os
import stat
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tritune.paths import user_cache_dir

__all__ = [
    "ENV_VAR",
    "MemoizedTritonKey",
    "install_triton_key_memo",
    "installed_triton_key_memo",
    "memo_path",
    "triton_files_fingerprint",
    "uninstall_triton_key_memo",
]

ENV_VAR = "TRITUNE_TRITON_KEY_MEMO"
#: Bumped when the fingerprint or the file's shape changes: an older file is then read as empty.
MEMO_FORMAT = 1
#: Fingerprints kept in the file: several Triton installs (virtualenvs) of one user share it.
MAX_ENTRIES = 16
_TREES = ("compiler", "backends", "language")
_SUFFIXES = tuple(importlib.machinery.all_suffixes())
_MAX_BYTES = 1 << 20


def memo_path() -> Path:
    return user_cache_dir() / "triton_key.json"


def _raise(err: OSError) -> None:
    raise err


def triton_files_fingerprint(root: str | os.PathLike[str], cache_file: str | os.PathLike[str],
                             version: str) -> str | None:  # fmt: skip
    """sha256 over the metadata of every file ``triton_key`` reads (a superset) under the Triton package
    ``root``; ``None`` when a file cannot be listed or stat'ed (the original function then runs)."""
    root = os.path.abspath(root)
    ext = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    rows = [f"format {MEMO_FORMAT}", f"version {version}", f"python {sys.executable} {ext}", f"root {root}"]

    def add(path: str) -> None:
        st = os.stat(path)
        rows.append(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ctime_ns}\0{st.st_ino}")

    try:
        add(os.path.abspath(cache_file))
        add(os.path.join(root, "_C", f"libtriton.{ext.split('.')[-1]}"))
        for tree in _TREES:
            top = os.path.join(root, tree)
            if not os.path.isdir(top):
                rows.append(f"absent {top}")
                continue
            for dirpath, dirnames, filenames in os.walk(top, onerror=_raise, followlinks=True):
                dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
                for name in sorted(filenames):
                    if name.endswith(_SUFFIXES):
                        add(os.path.join(dirpath, name))
    except OSError:
        return None
    return hashlib.sha256("\n".join(rows).encode("utf-8", "surrogateescape")).hexdigest()


def _read(path: Path) -> dict[str, str]:
    """The memo's entries; empty where the file is missing, unreadable, corrupt or not safely the user's."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return {}
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_BYTES or st.st_mode & 0o022:
            return {}
        if hasattr(os, "getuid") and st.st_uid != os.getuid():
            return {}
        with os.fdopen(os.dup(fd), "rb") as f:
            data = json.loads(f.read(_MAX_BYTES + 1))
    except (OSError, ValueError):
        return {}
    finally:
        os.close(fd)
    keys = data.get("keys") if isinstance(data, dict) and data.get("format") == MEMO_FORMAT else None
    if not isinstance(keys, dict):
        return {}
    return {k: v for k, v in keys.items() if isinstance(k, str) and isinstance(v, str)}


def _write(path: Path, entries: dict[str, str]) -> None:
    """Replace the memo file atomically; a memo that cannot be written costs the next process one hash."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".triton_key.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump({"format": MEMO_FORMAT, "keys": entries}, f, sort_keys=False)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError:
        pass


def _cached_in_process(original: Callable[[], str]) -> bool:
    info = getattr(original, "cache_info", None)
    try:
        return info is not None and info().currsize > 0
    except Exception:
        return False


class MemoizedTritonKey:
    """Stands in for ``triton_key``: the memo's value for the current fingerprint, else the original's (then
    written to the memo). Resolved once per process, like the ``lru_cache`` it replaces (``cache_clear``)."""

    def __init__(self, original: Callable[[], str], root: str, cache_file: str, version: str,
                 memo: Path | None = None) -> None:  # fmt: skip
        self.original = original
        self.__wrapped__ = original
        self.root = root
        self.cache_file = cache_file
        self.version = version
        self.memo = memo
        #: Where the value came from: "memo", "computed" (original, memo written), "process" (the original's
        #: own cache), "unfingerprinted" (original, no memo); None before the first call.
        self.source: str | None = None
        self._value: str | None = None
        self._lock = threading.Lock()

    def __call__(self) -> str:
        value = self._value
        if value is None:
            with self._lock:
                if self._value is None:
                    self._value = self._resolve()
                value = self._value
        return value

    def cache_clear(self) -> None:
        self._value = None
        self.source = None

    def _valid(self, value: object) -> bool:
        return isinstance(value, str) and value.startswith(self.version) and len(value) > len(self.version)

    def _resolve(self) -> str:
        fp = triton_files_fingerprint(self.root, self.cache_file, self.version)
        if fp is None:
            self.source = "unfingerprinted"
            return self.original()
        path = self.memo if self.memo is not None else memo_path()
        entries = _read(path)
        known = entries.get(fp)
        in_process = _cached_in_process(self.original)
        if not in_process and known is not None and self._valid(known):
            self.source = "memo"
            return known
        self.source = "process" if in_process else "computed"
        value = self.original()
        if value != known:
            entries.pop(fp, None)
            entries[fp] = value
            _write(path, dict(list(entries.items())[-MAX_ENTRIES:]))
        return value


_installed: MemoizedTritonKey | None = None
_decided = False
_install_lock = threading.Lock()


def _triton_namespaces() -> list[tuple[Any, dict[str, Any]]]:
    """Every imported ``triton.*`` module with its namespace (read without the module's ``__getattr__``)."""
    return [(m, vars(m)) for name, m in list(sys.modules.items())
            if (name == "triton" or name.startswith("triton.")) and isinstance(getattr(m, "__dict__", None), dict)]  # fmt: skip


def _is_original(fn: object, cache: Any) -> bool:
    """Triton's own function (3.6-3.9: an ``lru_cache`` over a function of ``triton.runtime.cache``), not a
    stand-in that someone (Triton's warm-up pool, another tool) has set already."""
    return (callable(fn) and getattr(fn, "__name__", None) == "triton_key"
            and getattr(fn, "__module__", None) == getattr(cache, "__name__", None))  # fmt: skip


def install_triton_key_memo(memo: Path | None = None) -> bool:
    """Put the memo in place of ``triton_key`` for this process; True when it is (now or before).

    Decided once per process: off under ``TRITUNE_TRITON_KEY_MEMO=0`` (or false/no/off), and where Triton's
    layout is not the known one. Cheap to call again (one flag). ``memo``: the file (tests).
    """
    global _installed, _decided
    if _decided:
        return _installed is not None
    with _install_lock:
        if _decided:
            return _installed is not None
        _decided = True
        if os.environ.get(ENV_VAR, "").strip().lower() in ("0", "false", "no", "off"):
            return False
        try:
            import triton.runtime.cache as cache
        except Exception:
            return False
        original = vars(cache).get("triton_key")
        version = vars(cache).get("__version__") or getattr(sys.modules.get("triton"), "__version__", None)
        cache_file = vars(cache).get("__file__")
        if not _is_original(original, cache) or not isinstance(version, str) or not isinstance(cache_file, str):
            return False
        assert original is not None
        root = os.path.dirname(os.path.dirname(os.path.abspath(cache_file)))
        memo_fn = MemoizedTritonKey(original, root, cache_file, version, memo)
        for module, names in _triton_namespaces():
            if names.get("triton_key") is original:
                module.triton_key = memo_fn
        _installed = memo_fn
        return True


def installed_triton_key_memo() -> MemoizedTritonKey | None:
    return _installed


def uninstall_triton_key_memo() -> None:
    """Put Triton's own function back wherever the memo stands in for it, and forget this process's decision."""
    global _installed, _decided
    with _install_lock:
        memo_fn = _installed
        original = memo_fn.original if memo_fn is not None else None
        if memo_fn is not None:
            for module, names in _triton_namespaces():
                if names.get("triton_key") is memo_fn:
                    module.triton_key = original
        _installed = None
        _decided = False


def _after_fork_in_child() -> None:
    global _install_lock
    _install_lock = threading.Lock()
    if _installed is not None:
        _installed._lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
