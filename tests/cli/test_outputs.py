"""Output paths are checked before any work starts; a source file is never overwritten."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tritune.cli.common import output_path_problem
from tritune.cli.main import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GELU = os.path.join(ROOT, "examples", "gelu.py")


def test_json_onto_the_workload_source_is_refused_and_the_file_is_intact(tmp_path, tritune_cli):
    src = tmp_path / "gelu_copy.py"
    text = Path(GELU).read_text()
    src.write_text(text)
    run = tritune_cli("verify", str(src), "--json", str(src))
    assert run.returncode == 2
    assert "refusing to overwrite an existing .py file" in run.stderr
    assert "verifying" not in run.stderr  # refused before any work
    assert src.read_text() == text


@pytest.mark.parametrize("command", ["verify", "tune", "screen"])
def test_json_into_a_missing_folder_fails_before_work(tmp_path, tritune_cli, command):
    target = tmp_path / "no" / "such" / "r.json"
    run = tritune_cli(command, GELU, "--json", str(target), "--key", "n=64")
    assert run.returncode == 2, run.stderr
    lines = [ln for ln in run.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "does not exist" in lines[0] and "mkdir -p" in lines[0], run.stderr
    assert "FileNotFoundError" not in run.stderr


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only folder; the check is os.access")
def test_json_into_a_read_only_folder_fails_before_work(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        assert main(["verify", GELU, "--json", str(ro / "r.json")]) == 2
    finally:
        ro.chmod(0o700)
    err = capsys.readouterr().err
    assert "is not writable" in err


def test_output_path_problems(tmp_path):
    (tmp_path / "k.py").write_text("x = 1\n")
    (tmp_path / "old.json").write_text("{}\n")
    assert "is a directory" in (output_path_problem("--json", str(tmp_path)) or "")
    assert "refusing to overwrite" in (output_path_problem("--json", str(tmp_path / "k.py")) or "")
    assert output_path_problem("--json", str(tmp_path / "old.json")) is None  # results may be replaced
    assert output_path_problem("--json", str(tmp_path / "new.py")) is None  # a new file is fine
    assert "does not exist" in (output_path_problem("--record", str(tmp_path / "a" / "b.json")) or "")
    assert "not a directory" in (output_path_problem("--out", str(tmp_path / "k.py"), directory=True) or "")
    assert output_path_problem("--out", str(tmp_path / "new_dir"), directory=True) is None


def test_record_path_is_checked_before_tuning(tmp_path, capsys):
    assert main(["tune", GELU, "--no-store", "--record", str(tmp_path / "none" / "l.json")]) == 2
    assert "--record" in capsys.readouterr().err


def test_report_out_onto_a_file_is_refused(tmp_path, capsys):
    res = tmp_path / "r.json"
    assert main(["verify", GELU, "--key", "n=64", "--json", str(res), "--quiet"]) == 0
    not_a_dir = tmp_path / "notes.py"
    not_a_dir.write_text("keep me\n")
    assert main(["report", str(res), "--out", str(not_a_dir)]) == 2
    assert "is not a directory" in capsys.readouterr().err
    assert not_a_dir.read_text() == "keep me\n"


def test_a_write_that_fails_after_the_checks_keeps_the_result(capsys):
    """/proc passes the writability check (even for root) but no file can be created there."""
    assert main(["verify", GELU, "--key", "n=64", "--json", "/proc/tritune-r.json", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "could not write the result" in err and "saved to " in err
    kept = Path(err.split("saved to ")[1].split(" instead")[0])
    try:
        data = json.loads(kept.read_text())
        assert data["command"] == "verify" and data["workloads"][0]["key"] == {"n": 64}
    finally:
        kept.unlink()
