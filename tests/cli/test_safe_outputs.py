"""Every output goes through one safe write (``tritune.paths.write_output``): never through a symlink, never over
a source file or a non-regular file; and data from files reaches the terminal escaped. Real files, no mocks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tritune.cli.main import main
from tritune.config import Config
from tritune.errors import OutputPathError
from tritune.outcome import Status
from tritune.paths import write_output
from tritune.store import CandidateRecord, SQLiteStore
from tritune.terminal import printable
from tritune.testing.store_contract import make_test_key

A = Config({"BLOCK": 1024}, num_warps=8)


def _store(path: Path, kernel: str = "gelu") -> Path:
    with SQLiteStore(path) as s:
        s.record(make_test_key(kernel), [CandidateRecord(A, Status.MEASURED, 1.0)], winner=A)
    return path


def test_write_output_replaces_a_regular_file_and_nothing_else(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / "link.json").symlink_to(victim)
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "kernel.py").write_text("x = 1\n")
    (tmp_path / "README").write_text("read me\n")
    for name, why in [("link.json", "is a symlink"), ("fifo.json", "not a regular file"),
                      ("kernel.py", "refusing to overwrite"), ("README", "refusing to overwrite")]:  # fmt: skip
        with pytest.raises(OutputPathError, match=why):
            write_output(tmp_path / name, "{}\n")
    assert victim.read_text() == "keep me\n" and (tmp_path / "kernel.py").read_text() == "x = 1\n"
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "README").read_text() == "read me\n"
    old = tmp_path / "old.json"
    old.write_text("old\n")
    write_output(old, "new\n")
    assert old.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["victim.txt", "link.json", "fifo.json", "kernel.py", "README", "old.json"])  # no temporary file left


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/full"), reason="a device node needs root")
def test_a_device_is_never_replaced(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev = tmp_path / "full"
    st = os.stat("/dev/full")
    os.mknod(dev, st.st_mode, st.st_rdev)
    store = _store(tmp_path / "s.sqlite")
    assert main(["cache", "export", str(dev), "--store", str(store)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert dev.exists() and not dev.is_file()


def test_cache_export_refuses_a_symlink_and_a_source_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "s.sqlite")
    src = tmp_path / "kernels.py"
    src.write_text("print('mine')\n")
    link = tmp_path / "export.json"
    link.symlink_to(src)
    for dest in (src, link):
        assert main(["cache", "export", str(dest), "--store", str(store)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and str(dest) in err and "Traceback" not in err
    assert src.read_text() == "print('mine')\n" and link.is_symlink()


def test_json_output_never_follows_a_symlink(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mine.json"
    target.write_text('{"mine": true}\n')
    link = tmp_path / "result.json"
    link.symlink_to(target)
    gelu = str(Path(__file__).resolve().parents[2] / "examples" / "gelu.py")
    assert main(["verify", gelu, "--key", "n=64", "--json", str(link), "--quiet"]) == 2
    assert "is a symlink" in capsys.readouterr().err
    assert target.read_text() == '{"mine": true}\n'


def test_printable_escapes_control_characters_and_keeps_text() -> None:
    assert printable("gelu\x1b[2J\x07") == "gelu\\x1b[2J\\x07"
    assert printable("añ中\u202egelu") == "añ中\\u202egelu"
    assert printable("a\nb", lines=True) == "a\nb" and printable("a\nb") == "a\\x0ab"


def test_kernel_names_from_a_store_reach_the_terminal_escaped(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    store = _store(tmp_path / "s.sqlite", kernel="evil\x1b]0;owned\x07\x1b[2J[bold red]x[/]")
    for action in (["ls"], ["show", "evil\x1b]0;owned\x07\x1b[2J[bold red]x[/]"], ["show", "nothing"]):
        code = main(["cache", *action, "--store", str(store)])
        cap = capsys.readouterr()
        text = cap.out + cap.err
        assert code in (0, 2) and "\x1b" not in text and "\x07" not in text, text
        assert "Traceback" not in text
    main(["cache", "ls", "--store", str(store)])
    assert "evil\\x1b]0;owned\\x07\\x1b[2J[bold red]x[/]" in capsys.readouterr().out
