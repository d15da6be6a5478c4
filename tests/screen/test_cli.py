"""``tritune screen``: exit codes, the printed summary and the JSON shape."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritune.cli.main import main

from .conftest import WORKLOADS


def test_screen_writes_verify_shaped_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "screen.json"
    rc = main(
        [
            "screen",
            str(WORKLOADS),
            "--workload",
            "scale",
            "--target",
            "sm90",
            "--jobs",
            "1",
            "--key",
            "n=4096",
            "--json",
            str(out),
            "--quiet",
        ]
    )
    assert rc == 0
    data = json.loads(out.read_text())
    assert data["command"] == "screen" and data["target"]["name"] == "sm90"
    (w,) = data["workloads"]
    assert w["name"] == "scale" and w["key"] == {"n": 4096}
    for c in w["candidates"]:
        assert {
            "config",
            "status",
            "reason",
            "shared",
            "registers",
            "spilled_bytes",
            "threads",
            "blocks_per_sm",
            "limiter",
            "compile_s",
            "warnings",
        } <= set(c)
        assert c["status"] in ("fits", "illegal", "compile_failed", "compile_timeout")
    assert "4 candidates for sm90: 2 fit, 2 illegal" in capsys.readouterr().out


def test_json_to_stdout_parses(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(
        ["screen", str(WORKLOADS), "--workload", "scale", "--jobs", "1", "--key", "n=64", "--json", "-"]
    )
    assert rc == 0
    assert json.loads(capsys.readouterr().out)["command"] == "screen"


def test_nothing_fits_exits_1(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["screen", str(WORKLOADS), "--workload", "mm_too_big", "--jobs", "1"])
    assert rc == 1
    assert "needs 262144 B of shared memory" in capsys.readouterr().out


def test_unknown_target_exits_2_and_lists_targets(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["screen", str(WORKLOADS), "--target", "sm75"]) == 2
    err = capsys.readouterr().err
    assert "unknown target 'sm75'" in err and "sm80" in err and "sm100" in err and "auto" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["screen", "/no/such/file.py"], "no such file"),
        (["screen", str(WORKLOADS), "--workload", "nope"], "no workload named 'nope'"),
        (["screen", str(WORKLOADS), "--jobs", "0"], "--jobs must be at least 1"),
        (["screen", str(WORKLOADS), "--compile-timeout", "0"], "--compile-timeout must be positive"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    assert message in capsys.readouterr().err
