"""``tritune cache``: every action, its output and its exit code."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.outcome import Status
from tritune.store import CandidateRecord, SQLiteStore
from tritune.testing.store_contract import make_test_key

A, B = Config({"BLOCK": 1024}, num_warps=8), Config({"BLOCK": 300})


@pytest.fixture(autouse=True)
def wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "240")  # rich tables on one line each


@pytest.fixture
def store_path(tmp_path: Path) -> Path:
    path = tmp_path / "store.sqlite"
    with SQLiteStore(path) as s:
        for n in (4096, 8192):
            s.record(make_test_key("gelu", n), [CandidateRecord(A, Status.MEASURED, n / 1e4),
                                                CandidateRecord(B, Status.ILLEGAL, reason="BLOCK not a power of 2")],
                     winner=A)  # fmt: skip
        s.record(
            make_test_key("mm", 64, buckets={"n": "multiple(32)"}), [CandidateRecord(A, Status.MEASURED, 1.0)]
        )
    return path


def test_ls(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "ls", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    rows = [line.split("│")[1:-1] for line in out.splitlines() if line.startswith("│")]
    assert [[c.strip() for c in r] for r in rows] == [["gelu", "2", "2", "4"], ["mm", "1", "0", "1"]]


def test_store_option_before_the_action(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "--store", str(store_path), "ls"]) == 0
    assert "gelu" in capsys.readouterr().out


def test_show_lists_buckets_winners_and_candidates(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cache", "show", "gelu", "--candidates", "--store", str(store_path)]) == 0
    out = capsys.readouterr().out
    assert "n=4096 (pow2: 2049..4096)" in out and "n=8192 (pow2: 4097..8192)" in out
    assert A.id in out and "0.4096" in out and "1/2" in out and "NVIDIA H200 (cuda:90)" in out
    assert f"{A.id} *" in out and "BLOCK not a power of 2" in out and "illegal" in out
    assert main(["cache", "show", "mm", "--store", str(store_path)]) == 0
    assert "n=64 (multiple(32): 33..64)" in capsys.readouterr().out


def test_show_unknown_kernel_is_usage_error(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "show", "nope", "--store", str(store_path)]) == 2
    err = capsys.readouterr().err
    assert "no entries for kernel 'nope'" in err and "kernels there: gelu, mm" in err


def test_export_import_clear(store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "gelu.json"
    assert main(["cache", "export", str(out), "--kernel", "gelu", "--store", str(store_path)]) == 0
    assert [e["key"]["kernel"] for e in json.loads(out.read_text())["entries"]] == ["gelu", "gelu"]
    other = tmp_path / "other.sqlite"
    assert main(["cache", "import", str(out), "--store", str(other)]) == 0
    assert "imported 2 entries" in capsys.readouterr().out
    with SQLiteStore(other) as s:
        assert [k.kernel for k in s.kernels()] == ["gelu"]
        assert s.lookup_winner(make_test_key("gelu", 4096)).config == A  # type: ignore[union-attr]
    assert main(["cache", "clear", "--kernel", "gelu", "--yes", "--store", str(store_path)]) == 0
    assert "removed 2 entries (kernel 'gelu')" in capsys.readouterr().out
    assert main(["cache", "clear", "-y", "--store", str(store_path)]) == 0
    assert "removed 1 entries (all kernels)" in capsys.readouterr().out


def test_export_to_stdout_is_pure_json(store_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cache", "export", "-", "--store", str(store_path)]) == 0
    assert len(json.loads(capsys.readouterr().out)["entries"]) == 3


def test_import_of_a_bad_file_exits_2_with_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"format": "tritune.store/1",\n "entries": [\n  {"key": 3, "candidates": []}]}\n')
    store = tmp_path / "s.sqlite"
    assert main(["cache", "import", str(bad), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert "line 3, entries[0].key: expected an object, got a number" in err
    with SQLiteStore(store) as s:
        assert s.entries() == []


def test_check_ok_missing_and_corrupt(
    store_path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cache", "check", "--store", str(store_path)]) == 0
    assert f"ok: {store_path} (3 entries)" in capsys.readouterr().out
    missing = tmp_path / "none.sqlite"
    assert main(["cache", "check", "--store", str(missing)]) == 0 and not missing.exists()
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(os.urandom(4096))
    before = junk.read_bytes()
    assert main(["cache", "check", "--store", str(junk)]) == 1
    out = capsys.readouterr().out
    assert "not a tritune store" in out and "junk.sqlite" in out
    assert main(["cache", "ls", "--store", str(junk)]) == 2
    assert "not a tritune store" in capsys.readouterr().err
    assert junk.read_bytes() == before


def test_ls_of_missing_store_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "new.sqlite"
    assert main(["cache", "ls", "--store", str(path)]) == 0
    assert f"no entries in {path}" in capsys.readouterr().out and not path.exists()


def test_env_var_selects_the_store(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TRITUNE_STORE", str(store_path))
    assert main(["cache", "ls"]) == 0
    assert "gelu" in capsys.readouterr().out


def test_missing_action_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["cache"])
    assert info.value.code == 2


class _Stdin:
    """A FAKE stdin: a terminal (or not) that answers ``answer``."""

    def __init__(self, answer: str, tty: bool) -> None:
        self.answer, self.tty = answer, tty

    def isatty(self) -> bool:
        return self.tty

    def readline(self) -> str:
        return self.answer + "\n"


def _kernels(path: Path) -> list[str]:
    with SQLiteStore(path) as s:
        return [k.kernel for k in s.kernels()]


def test_clear_without_yes_refuses_when_stdin_is_not_a_terminal(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin("y", tty=False))
    assert main(["cache", "clear", "--store", str(store_path)]) == 2
    err = capsys.readouterr().err
    assert "remove 3 entries (all kernels)" in err and "--yes" in err and "nothing was removed" in err
    assert _kernels(store_path) == ["gelu", "mm"]


def test_clear_asks_on_a_terminal(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr("sys.stdin", _Stdin("n", tty=True))
    assert main(["cache", "clear", "--store", str(store_path)]) == 1
    assert "[y/N]" in capsys.readouterr().out and _kernels(store_path) == ["gelu", "mm"]
    monkeypatch.setattr("sys.stdin", _Stdin("y", tty=True))
    assert main(["cache", "clear", "--kernel", "mm", "--store", str(store_path)]) == 0
    assert "removed 1 entries (kernel 'mm')" in capsys.readouterr().out and _kernels(store_path) == ["gelu"]


def test_clear_of_an_unknown_kernel_fails_saying_nothing_matched(
    store_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["cache", "clear", "--kernel", "nope", "--yes", "--store", str(store_path)]) == 2
    err = capsys.readouterr().err
    assert "nothing to clear: no entries for kernel 'nope'" in err and "kernels there: gelu, mm" in err


def test_show_piped_never_wraps_a_cell(
    store_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("COLUMNS", "40")  # a narrow terminal width must not apply to piped output
    assert main(["cache", "show", "gelu", "--candidates", "--store", str(store_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(
        A.id in ln and "NVIDIA H200 (cuda:90)" in ln and "n=4096 (pow2: 2049..4096)" in ln for ln in lines
    )
    assert any("BLOCK not a power of 2" in ln and B.id in ln for ln in lines)


@pytest.mark.parametrize("problem", ["missing", "directory", "bad"])
def test_a_failed_import_creates_no_store(tmp_path: Path, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The import file is read and validated before the store is opened: a failure leaves no new file behind."""
    src = tmp_path / "in.json"
    if problem == "directory":
        src.mkdir()
    elif problem == "bad":
        src.write_text('{"format": "tritune.store/1", "entries": [{"key": 3, "candidates": []}]}\n')
    store = tmp_path / "new" / "store.sqlite"
    assert main(["cache", "import", str(src), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") >= 1 and str(src) in err and "Traceback" not in err
    assert not store.parent.exists()
