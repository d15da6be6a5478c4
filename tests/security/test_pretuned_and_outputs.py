"""Another user tries to pick your kernels' configs through a pretuned file, or to make your outputs overwrite
your own files through a symlink. Asserted: the attacker's file is refused with one line (nothing of it is
served), your files keep every byte, no traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from attacks import EVIL, as_attacker, mkdir, needs_attacker, plant, symlink

import tritune
from tritune.cli.main import main
from tritune.config import Config
from tritune.errors import StoreError
from tritune.outcome import Status
from tritune.store import CandidateRecord, PretunedStore, SQLiteStore
from tritune.testing.store_contract import make_test_key

ROOT = Path(__file__).resolve().parents[2]
GELU = str(ROOT / "examples" / "gelu.py")


def _export(tmp_path: Path, config: Config = EVIL) -> bytes:
    with SQLiteStore(tmp_path / "made.sqlite") as s:
        s.record(make_test_key("scale_kernel"), [CandidateRecord(config, Status.MEASURED, 0.001)], winner=config)
        s.export(tmp_path / "made.json")
    return (tmp_path / "made.json").read_bytes()


def _decorate(pretuned: str) -> object:
    from kernels import scale_kernel

    return tritune.autotune(configs=[Config({"BLOCK": 64}), Config({"BLOCK": 128})], key=["n"], store=False,
                            pretuned=pretuned)(scale_kernel)  # fmt: skip


@needs_attacker
def test_a_pretuned_file_another_user_controls_is_refused(shared: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    evil = _export(tmp_path)
    theirs = shared / "configs.json"
    assert as_attacker(plant, str(theirs), evil)  # theirs, in /tmp
    mine = tmp_path / "mine" / "configs.json"
    mine.parent.mkdir()
    mine.write_bytes(_export(tmp_path / "mine", Config({"BLOCK": 64})))
    link = shared / "link.json"
    assert as_attacker(symlink, str(mine), str(link))  # their symlink to my own file
    their_dir = shared / "theirs"
    assert as_attacker(mkdir, str(their_dir), 0o755)
    assert as_attacker(plant, str(their_dir / "configs.json"), evil)
    cases = {str(theirs): "the file is owned by uid 54321", str(link): "it is a symlink owned by uid 54321"}
    for path, why in cases.items():
        with pytest.raises(StoreError, match=why) as e:
            PretunedStore(path)
        assert "\n" not in str(e.value) and "refusing the pretuned file" in str(e.value)
        with pytest.raises(StoreError, match=why):
            _decorate(path)  # at decoration: no call ever runs the attacker's config
    monkeypatch.chdir(their_dir)  # a relative path, in a folder the attacker owns
    with pytest.raises(StoreError, match=r"its directory .*theirs is owned by uid 54321"):
        PretunedStore("configs.json")
    assert PretunedStore(mine).lookup_winner(make_test_key("scale_kernel")).config == Config({"BLOCK": 64})  # type: ignore[union-attr]


def test_a_pretuned_file_in_a_folder_anyone_may_rename_is_refused(tmp_path: Path) -> None:
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    open_dir.chmod(0o777)
    (open_dir / "configs.json").write_bytes(_export(tmp_path))
    with pytest.raises(StoreError, match="world-writable without the sticky bit"):
        PretunedStore(open_dir / "configs.json")


@needs_attacker
def test_outputs_never_follow_a_symlink_another_user_planted(shared: Path, tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    mine = tmp_path / "mine.json"
    mine.write_text('{"mine": 1}\n')
    source = tmp_path / "kernels.py"
    source.write_text("print('mine')\n")
    store = tmp_path / "s.sqlite"
    with SQLiteStore(store) as s:
        s.record(make_test_key("gelu"), [CandidateRecord(EVIL, Status.MEASURED, 1.0)], winner=EVIL)
    for target, name in ((mine, "result.json"), (source, "export.json")):
        assert as_attacker(symlink, str(target), str(shared / name))
    runs = [["verify", GELU, "--key", "n=64", "--json", str(shared / "result.json")],
            ["cache", "export", str(shared / "export.json"), "--store", str(store)],
            ["cache", "export", str(source), "--store", str(store)]]  # fmt: skip
    for argv in runs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and ("symlink" in err or "refusing to overwrite" in err), err
    assert mine.read_text() == '{"mine": 1}\n' and source.read_text() == "print('mine')\n"
    theirs_out = shared / "report"
    assert as_attacker(symlink, str(tmp_path), str(theirs_out))
    res = tmp_path / "r.json"
    res.write_text("{}\n")
    assert main(["report", str(res), "--out", str(theirs_out)]) == 2
    assert "is a symlink" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/dev/full"), reason="a device node needs root")
def test_an_export_onto_a_device_leaves_the_device(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev = tmp_path / "full"
    st = os.stat("/dev/full")
    os.mknod(dev, st.st_mode, st.st_rdev)
    store = tmp_path / "s.sqlite"
    with SQLiteStore(store) as s:
        s.record(make_test_key("gelu"), [CandidateRecord(EVIL, Status.MEASURED, 1.0)], winner=EVIL)
    assert main(["cache", "export", str(dev), "--store", str(store)]) == 2
    assert "not a regular file" in capsys.readouterr().err and not dev.is_file() and dev.exists()


@needs_attacker
def test_an_imported_kernel_name_reaches_the_terminal_escaped(shared: Path, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    evil_name = "gelu\x1b[2J\x1b]0;owned\x07[bold]x"
    text = _export(tmp_path).decode().replace('"scale_kernel"', '"gelu\\u001b[2J\\u001b]0;owned\\u0007[bold]x"')
    assert as_attacker(plant, str(shared / "gift.json"), text.encode())
    store = tmp_path / "s.sqlite"
    assert main(["cache", "import", str(shared / "gift.json"), "--store", str(store)]) == 0
    for argv in (["ls"], ["show", evil_name], ["show", evil_name, "--candidates"], ["check"]):
        main(["cache", *argv, "--store", str(store)])
        cap = capsys.readouterr()
        assert "\x1b" not in cap.out + cap.err and "\x07" not in cap.out + cap.err, argv
