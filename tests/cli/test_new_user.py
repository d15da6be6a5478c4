"""A new user's first kernel: a row sum with an accumulator shaped by BLOCK_N and Triton's ``grid(meta)``.

Legal configs are correct; BLOCK_N=300 and BLOCK_N=2**21 are illegal, each with Triton's own words (not the
caret under the source line), in verify, screen and tune alike, with no traceback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tritune.cli.main import main

ROWSUM = str(Path(__file__).resolve().parents[2] / "examples" / "rowsum.py")
POWER_OF_2 = "Shape element 0 must be a power of 2"
NUMEL = "numel (2097152) exceeds triton maximum tensor numel (1048576)"


def _by_block(path: Path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for w in json.loads(path.read_text())["workloads"]:
        for c in w["candidates"]:
            out.setdefault(c["config"]["kwargs"]["BLOCK_N"], []).append(c)
    return out


def _check_reasons(cands: dict[int, list[dict]], legal: str) -> None:
    for block, cs in cands.items():
        for c in cs:
            if block == 300:
                assert c["status"] == "illegal" and POWER_OF_2 in c["reason"], c
            elif block == 2**21:
                assert c["status"] == "illegal" and NUMEL in c["reason"], c
            else:
                assert c["status"] == legal, c
            assert not (c["reason"] or "").rstrip().endswith("^"), c


def test_verify_says_why_in_tritons_words_and_the_legal_configs_are_correct(tmp_path, capsys):
    out = tmp_path / "v.json"
    assert main(["verify", ROWSUM, "--json", str(out)]) == 1  # illegal configs fail verify by default
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    cands = _by_block(out)
    assert set(cands) == {64, 256, 1024, 300, 2**21}
    _check_reasons(cands, "correct")


def test_allow_illegal_lets_a_space_with_known_bad_configs_pass(capsys):
    assert main(["verify", ROWSUM, "--allow-illegal", "--quiet"]) == 0
    assert "4 illegal candidates accepted (--allow-illegal)" in capsys.readouterr().err


def test_allow_illegal_does_not_accept_an_incorrect_candidate(tmp_path, capsys):
    from cli_workloads import scale_workload, workload_file

    path = workload_file(tmp_path, scale_workload(kernel="wrong_value_kernel", configs=(
        "[tritune.Config({'BLOCK': b}) for b in (256, 1024, 300)]")))  # fmt: skip
    assert main(["verify", str(path), "--allow-illegal", "--quiet"]) == 1
    assert "accepted" not in capsys.readouterr().err


@pytest.mark.parametrize("command", ["screen", "tune"])
def test_screen_and_tune_give_the_same_reasons(command, tmp_path, capsys):
    out = tmp_path / f"{command}.json"
    extra = ["--jobs", "1"] if command == "screen" else ["--no-store"]
    assert main([command, ROWSUM, "--json", str(out), "--quiet", *extra]) == (0 if command == "screen" else 1)
    captured = capsys.readouterr()
    assert "Traceback" not in captured.out + captured.err
    _check_reasons(_by_block(out), "fits" if command == "screen" else "not_timed")
