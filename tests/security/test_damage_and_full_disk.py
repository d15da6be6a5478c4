"""A damaged store and a full disk: never a traceback, never a kernel call that fails because the store did, and
the error names the resource. The full disk is a small tmpfs where mounting one is allowed (root with the
capability), else a file size limit (``RLIMIT_FSIZE``) in a child process."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore, StoreFailureWarning, open_store
from tritune.testing.store_contract import make_test_key

SRC = str(Path(__file__).resolve().parents[2] / "src")
A, B = Config({"BLOCK": 64}), Config({"BLOCK": 128})


def test_a_damaged_store_never_makes_a_reading_command_or_a_lookup_raise(tmp_path: Path,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.sqlite"
    with SQLiteStore(path) as s:
        for k in ("gelu", "relu"):
            s.record(make_test_key(k), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    conn = sqlite3.connect(path)
    conn.execute("UPDATE winners SET ties='[{' WHERE digest=(SELECT digest FROM keys WHERE kernel='gelu')")
    conn.execute("UPDATE keys SET key_json='[' WHERE kernel='relu'")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    for argv in (["ls"], ["show", "gelu"], ["export", "-"], ["check"]):
        code = main(["cache", *argv, "--store", str(path)])
        cap = capsys.readouterr()
        assert code in (0, 1) and "Traceback" not in cap.out + cap.err, argv
    with open_store(path, tolerant=True) as st, pytest.warns(StoreFailureWarning):
        assert st.lookup_winner(make_test_key("gelu")) is None  # the call tunes instead of raising
    assert path.read_bytes() == before


@contextlib.contextmanager
def _small_disk(tmp_path: Path) -> Iterator[Path | None]:
    """A 256 KiB tmpfs, or None where it cannot be mounted."""
    d = tmp_path / "disk"
    d.mkdir()
    ok = os.geteuid() == 0 and subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(d)],
                                              capture_output=True, check=False).returncode == 0  # fmt: skip
    try:
        yield d if ok else None
    finally:
        if ok:
            subprocess.run(["umount", str(d)], check=False)


def _child(code: str, limit: int | None) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a Python child, under a file size limit of ``limit`` bytes when given."""
    head = "import resource, signal, sys, warnings\n"
    if limit is not None:
        head += (f"signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
                 f"resource.setrlimit(resource.RLIMIT_FSIZE, ({limit}, resource.RLIM_INFINITY))\n")  # fmt: skip
    return subprocess.run([sys.executable, "-c", head + code], env={**os.environ, "PYTHONPATH": SRC},
                          capture_output=True, text=True, timeout=300, check=False)  # fmt: skip


def _fill(d: Path) -> None:
    fd = os.open(d / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * 4096)
    finally:
        os.close(fd)


def test_a_full_disk_is_named_leaves_no_new_store_and_fails_no_kernel_call(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with SQLiteStore(tmp_path / "big.sqlite") as s:
        for i in range(300):
            s.record(make_test_key("gelu", 1000 + i), [CandidateRecord(A, Status.MEASURED, 1.0, reason="x" * 300)],
                     winner=A)  # fmt: skip
        s.export(big)
    with _small_disk(tmp_path) as disk:
        d = disk if disk is not None else tmp_path / "limited"
        d.mkdir(exist_ok=True)
        new_limit = None if disk is not None else 0
        if disk is not None:
            _fill(d)
        store = d / "s.sqlite"
        cli = "from tritune.cli.main import main\nsys.exit(main(sys.argv[1:]))\n"
        run = _child(f"sys.argv = ['tritune', 'cache', 'import', {str(big)!r}, '--store', {str(store)!r}]\n" + cli,
                     new_limit)  # fmt: skip
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert run.stderr.count("\n") == 1 and f"no space left on device: {store}" in run.stderr, run.stderr
        assert sorted(p.name for p in d.iterdir()) == (["filler"] if disk is not None else [])  # nothing left behind
        if disk is not None:
            (d / "filler").unlink()
        with SQLiteStore(store) as s:  # a store that fits, then a disk that fills
            s.record(make_test_key("relu"), [CandidateRecord(B, Status.MEASURED, 2.0)], winner=B)
        full_limit = None if disk is not None else store.stat().st_size
        if disk is not None:
            _fill(d)
        before = store.read_bytes()
        run = _child(f"sys.argv = ['tritune', 'cache', 'import', {str(big)!r}, '--store', {str(store)!r}]\n" + cli,
                     full_limit)  # fmt: skip
        assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
        assert f"no space left on device: {store}" in run.stderr and run.stderr.count("\n") == 1, run.stderr
        call = _child(
            "from tritune.store import open_store, CandidateRecord, StoreFailureWarning\n"
            "from tritune.config import Config\nfrom tritune.outcome import Status\n"
            "from tritune.testing.store_contract import make_test_key\n"
            "warnings.simplefilter('always')\n"
            f"with open_store({str(store)!r}, tolerant=True) as st:\n"
            "    for i in range(200):\n"
            "        k = make_test_key('silu', i)\n"
            "        st.record(k, [CandidateRecord(Config({'BLOCK': 64}), Status.MEASURED, 1.0, reason='x' * 2000)],"
            " winner=Config({'BLOCK': 64}))\n"
            "        assert st.lookup_winner(k) is not None\n"
            "    print('served', st.lookup_winner(make_test_key('relu')).config.id)\n",
            full_limit,
        )
        assert call.returncode == 0 and "Traceback" not in call.stderr, call.stderr
        assert "served BLOCK=128" in call.stdout
        assert call.stderr.count("StoreFailureWarning") == 1 and "in memory" in call.stderr, call.stderr
        if disk is not None:
            (d / "filler").unlink()
        with SQLiteStore(store) as s:
            assert s.lookup_winner(make_test_key("relu")).config == B  # type: ignore[union-attr]
        assert store.read_bytes()[:100] == before[:100]
    warnings.simplefilter("default")
