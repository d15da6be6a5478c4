"""The on-disk memo of Triton's ``triton_key()`` (``tritune.adapters.triton_key``).

The memo must return exactly what Triton's function returns, recompute when a file it hashes changes or the
memo file is bad, leave Triton alone when switched off, and put everything back when uninstalled.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import types
from collections.abc import Iterator
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
import triton.runtime.autotuner as autotuner
import triton.runtime.cache as cache

import tritune.adapters.triton_key as tk
from tritune.config import Config
from tritune.screen.specialize import cuda_target, specialize

ROOT = Path(__file__).resolve().parents[2]
#: Triton's own function, whatever this process had installed before the tests here ran.
ORIGINAL = (tk.installed_triton_key_memo() or types.SimpleNamespace(original=cache.triton_key)).original


@pytest.fixture(autouse=True)
def _no_memo_installed() -> Iterator[None]:
    tk.uninstall_triton_key_memo()
    assert cache.triton_key is ORIGINAL
    yield
    tk.uninstall_triton_key_memo()


def _fake_triton(root: Path) -> Path:
    """A triton-like tree with the files ``triton_key`` reads; returns its ``runtime/cache.py``."""
    for rel in ("runtime/cache.py", "_C/libtriton.so", "compiler/compiler.py", "backends/nvidia/__init__.py",
                "backends/nvidia/compiler.py", "language/core.py"):  # fmt: skip
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f"# {rel}\n")
    return root / "runtime" / "cache.py"


class _Counting:
    """A FAKE original ``triton_key``: counts its calls, returns ``version + counter``."""

    def __init__(self, version: str = "9.9.9") -> None:
        self.version = version
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        return f"{self.version}-key{self.calls}"


def _memo(fake: _Counting, root: Path, cache_file: Path, memo: Path) -> tk.MemoizedTritonKey:
    return tk.MemoizedTritonKey(fake, str(root), str(cache_file), fake.version, memo)


def test_the_memo_serves_exactly_tritons_key(tmp_path: Path) -> None:
    memo = tmp_path / "memo.json"
    expected = ORIGINAL()
    assert tk.install_triton_key_memo(memo)
    assert cache.triton_key() == expected
    assert tk.installed_triton_key_memo().source in ("computed", "process")  # type: ignore[union-attr]
    # A second process's view: a new stand-in over the file just written, with no value in the original's cache.
    fresh = tk.MemoizedTritonKey(ORIGINAL.__wrapped__, *_layout(), memo)
    assert fresh() == expected and fresh.source == "memo"


def _layout() -> tuple[str, str, str]:
    root = os.path.dirname(os.path.dirname(os.path.abspath(cache.__file__)))
    return root, cache.__file__, cache.__version__


def test_a_fresh_process_reads_back_the_key_its_triton_computes(tmp_path: Path) -> None:
    """End to end, in fresh interpreters: computed once, then read back, equal to Triton's own (memo off)."""
    code = ("import triton.runtime.cache as c, tritune.adapters.triton_key as tk; tk.install_triton_key_memo(); "
            "k = c.triton_key(); m = tk.installed_triton_key_memo(); print(m.source if m else 'off'); print(k)")  # fmt: skip
    path = os.pathsep.join([str(ROOT / "src"), *filter(None, [os.environ.get("PYTHONPATH")])])
    env = {**os.environ, "PYTHONPATH": path, "XDG_CACHE_HOME": str(tmp_path), "HOME": str(tmp_path)}

    def run(**extra: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", code], env={**env, **extra}, capture_output=True, text=True,
                             timeout=300, check=True)  # fmt: skip
        return out.stdout.split()

    first, second, off = run(), run(), run(TRITUNE_TRITON_KEY_MEMO="0")
    assert (first[0], second[0], off[0]) == ("computed", "memo", "off")
    assert first[1] == second[1] == off[1]
    assert list(tmp_path.rglob("triton_key.json"))


def test_a_changed_file_changes_the_fingerprint(tmp_path: Path) -> None:
    cache_file = _fake_triton(tmp_path)
    base = tk.triton_files_fingerprint(tmp_path, cache_file, "1.0")
    assert base is not None and base == tk.triton_files_fingerprint(tmp_path, cache_file, "1.0")
    assert tk.triton_files_fingerprint(tmp_path, cache_file, "1.1") != base
    compiler = tmp_path / "compiler" / "compiler.py"
    st = compiler.stat()
    time.sleep(0.05)  # past the kernel's coarse clock tick, so the ctime below moves
    os.utime(compiler, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    assert tk.triton_files_fingerprint(tmp_path, cache_file, "1.0") != base
    # Put the mtime back: the ctime moved, so the edit is still seen.
    os.utime(compiler, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert compiler.stat().st_mtime_ns == st.st_mtime_ns
    moved = tk.triton_files_fingerprint(tmp_path, cache_file, "1.0")
    assert compiler.stat().st_ctime_ns != st.st_ctime_ns and moved != base
    (tmp_path / "language" / "extra.py").write_text("# new module\n")
    added = tk.triton_files_fingerprint(tmp_path, cache_file, "1.0")
    assert added != moved
    # Files triton_key never reads do not count.
    (tmp_path / "language" / "__pycache__").mkdir()
    (tmp_path / "language" / "__pycache__" / "core.cpython-311.pyc").write_bytes(b"x")
    (tmp_path / "backends" / "nvidia" / "notes.txt").write_text("x")
    assert tk.triton_files_fingerprint(tmp_path, cache_file, "1.0") == added
    (tmp_path / "_C" / "libtriton.so").write_bytes(b"a new build")
    assert tk.triton_files_fingerprint(tmp_path, cache_file, "1.0") != added


def test_no_library_means_no_fingerprint(tmp_path: Path) -> None:
    cache_file = _fake_triton(tmp_path)
    (tmp_path / "_C" / "libtriton.so").unlink()
    assert tk.triton_files_fingerprint(tmp_path, cache_file, "1.0") is None
    fake = _Counting()
    m = _memo(fake, tmp_path, cache_file, tmp_path / "memo.json")
    assert m() == "9.9.9-key1" and m.source == "unfingerprinted" and not (tmp_path / "memo.json").exists()


def test_a_changed_fingerprint_recomputes(tmp_path: Path) -> None:
    cache_file, memo, fake = _fake_triton(tmp_path), tmp_path / "memo.json", _Counting()
    assert _memo(fake, tmp_path, cache_file, memo)() == "9.9.9-key1"
    again = _memo(fake, tmp_path, cache_file, memo)
    assert again() == "9.9.9-key1" and again.source == "memo" and fake.calls == 1
    assert again() == "9.9.9-key1" and fake.calls == 1  # once per process
    lib = tmp_path / "_C" / "libtriton.so"
    st = lib.stat()
    os.utime(lib, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    changed = _memo(fake, tmp_path, cache_file, memo)
    assert changed() == "9.9.9-key2" and changed.source == "computed" and fake.calls == 2
    assert len(json.loads(memo.read_text())["keys"]) == 2  # the old install's entry is kept beside it
    changed.cache_clear()
    assert changed() == "9.9.9-key2" and changed.source == "memo" and fake.calls == 2


@pytest.mark.parametrize("content", [b"", b"{not json", b"\xff\xfe", b"[]", b'{"format": 1, "keys": []}',
                                     b'{"format": 99, "keys": {}}', b"null"])  # fmt: skip
def test_a_corrupt_memo_recomputes(tmp_path: Path, content: bytes) -> None:
    cache_file, memo, fake = _fake_triton(tmp_path), tmp_path / "memo.json", _Counting()
    memo.write_bytes(content)
    m = _memo(fake, tmp_path, cache_file, memo)
    assert m() == "9.9.9-key1" and m.source == "computed"
    assert _memo(fake, tmp_path, cache_file, memo)() == "9.9.9-key1" and fake.calls == 1  # rewritten, whole


def test_a_memo_value_of_another_version_or_type_recomputes(tmp_path: Path) -> None:
    cache_file, memo, fake = _fake_triton(tmp_path), tmp_path / "memo.json", _Counting()
    fp = tk.triton_files_fingerprint(tmp_path, cache_file, fake.version)
    for bad in ("3.6.0-other", 42, ""):
        memo.write_text(json.dumps({"format": tk.MEMO_FORMAT, "keys": {fp: bad}}))
        m = _memo(fake, tmp_path, cache_file, memo)
        assert m().startswith("9.9.9") and m.source == "computed"


def test_a_memo_others_can_write_is_not_read(tmp_path: Path) -> None:
    cache_file, memo, fake = _fake_triton(tmp_path), tmp_path / "memo.json", _Counting()
    _memo(fake, tmp_path, cache_file, memo)()
    memo.chmod(0o666)
    m = _memo(fake, tmp_path, cache_file, memo)
    assert m() == "9.9.9-key2" and m.source == "computed"
    assert memo.stat().st_mode & 0o777 == 0o600  # replaced by a file of our own


def test_an_unwritable_memo_is_no_error(tmp_path: Path) -> None:
    cache_file, fake = _fake_triton(tmp_path), _Counting()
    (tmp_path / "memo.json").mkdir()  # a directory where the file should be: neither read nor replaced
    m = _memo(fake, tmp_path, cache_file, tmp_path / "memo.json")
    assert m() == "9.9.9-key1" and m.source == "computed"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    assert _memo(fake, tmp_path, cache_file, blocker / "sub" / "memo.json")() == "9.9.9-key2"
    assert not list(tmp_path.glob(".triton_key.*.tmp"))


def test_the_original_value_in_this_process_wins_over_the_memo(tmp_path: Path) -> None:
    memo = tmp_path / "memo.json"
    fp = tk.triton_files_fingerprint(*_layout())
    memo.write_text(json.dumps({"format": tk.MEMO_FORMAT, "keys": {fp: cache.__version__ + "stale"}}))
    expected = ORIGINAL()  # the original's lru_cache now holds the value
    m = tk.MemoizedTritonKey(ORIGINAL, *_layout(), memo)
    assert m() == expected and m.source == "process"
    assert json.loads(memo.read_text())["keys"][fp] == expected


def test_the_switch_off_leaves_triton_untouched(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(tk.ENV_VAR, "0")
    assert not tk.install_triton_key_memo(tmp_path / "memo.json")
    assert cache.triton_key is ORIGINAL and autotuner.triton_key is ORIGINAL
    assert tk.installed_triton_key_memo() is None
    cache.triton_key()
    assert not (tmp_path / "memo.json").exists()


def test_install_patches_every_triton_module_and_uninstall_restores(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    holder = types.ModuleType("triton.fake_holder")
    holder.triton_key = ORIGINAL  # type: ignore[attr-defined]
    outsider = types.ModuleType("not_triton_holder")
    outsider.triton_key = ORIGINAL  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "triton.fake_holder", holder)
    monkeypatch.setitem(sys.modules, "not_triton_holder", outsider)
    assert tk.install_triton_key_memo(tmp_path / "memo.json")
    memo = tk.installed_triton_key_memo()
    assert isinstance(memo, tk.MemoizedTritonKey) and memo.original is ORIGINAL
    assert cache.triton_key is memo and autotuner.triton_key is memo and holder.triton_key is memo  # type: ignore[attr-defined]
    assert outsider.triton_key is ORIGINAL  # type: ignore[attr-defined]
    assert tk.install_triton_key_memo() and tk.installed_triton_key_memo() is memo  # idempotent
    tk.uninstall_triton_key_memo()
    assert cache.triton_key is ORIGINAL and autotuner.triton_key is ORIGINAL and holder.triton_key is ORIGINAL  # type: ignore[attr-defined]


def test_a_stand_in_already_there_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Triton's warm-up pool sets ``triton_key = lambda: key`` in its workers: an unknown layout, do nothing."""
    def stand_in() -> str:
        return "set by someone else"

    monkeypatch.setattr(cache, "triton_key", stand_in)
    assert not tk.install_triton_key_memo(tmp_path / "memo.json")
    assert cache.triton_key is stand_in and autotuner.triton_key is ORIGINAL


def test_a_forked_child_inherits_the_resolved_key(tmp_path: Path) -> None:
    assert tk.install_triton_key_memo(tmp_path / "memo.json")
    expected = cache.triton_key()
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            m = tk.installed_triton_key_memo()
            ok = m is not None and cache.triton_key is m and m._value == expected and m() == expected
            os.write(w, b"1" if ok else b"0")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 1)
    os.close(r)
    os.waitpid(pid, 0)
    assert got == b"1"


@triton.jit
def _fill(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


def test_the_screens_cache_lookup_installs_the_memo() -> None:
    spec = specialize(_fill, (torch.empty(64),), Config({"BLOCK": 64}), cuda_target(90))
    assert tk.installed_triton_key_memo() is None
    spec.cache_hash()
    assert isinstance(cache.triton_key, tk.MemoizedTritonKey)


def test_the_decorators_first_call_of_a_key_installs_the_memo() -> None:
    import tritune
    from kernels import scale_kernel

    k = tritune.autotune(configs=[Config({"BLOCK": 256})], key=["n"])(scale_kernel)
    x = torch.randn(256)
    assert tk.installed_triton_key_memo() is None
    k[(1,)](x, torch.empty_like(x), 256)  # a lone config: launched untuned, as Triton does, and compiled all the same
    assert isinstance(cache.triton_key, tk.MemoizedTritonKey)


def test_the_cache_dir_honours_xdg_cache_home_without_platformdirs(monkeypatch, tmp_path):
    """The H200's Python has no platformdirs: the fallback must still follow $XDG_CACHE_HOME (the memo benchmark
    points it at a fresh folder; a GPU run once found the user's warm memo instead)."""
    import builtins

    from tritune.paths import user_cache_dir

    real_import = builtins.__import__

    def no_platformdirs(name, *a, **kw):
        if name == "platformdirs":
            raise ImportError(name)
        return real_import(name, *a, **kw)

    monkeypatch.setattr(builtins, "__import__", no_platformdirs)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert user_cache_dir() == tmp_path / "tritune"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert user_cache_dir().parent.name == ".cache"
