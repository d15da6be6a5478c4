"""The commands' words: help texts state true defaults and name their choices; progress counts what it counts;
what is said once in a header is not repeated on every row."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tritune.cli.main import build_parser, main
from tritune.search.registry import DEFAULT, names

ROOT = Path(__file__).resolve().parents[2]
GELU = str(ROOT / "examples" / "gelu.py")
LANDSCAPE = str(ROOT / "benchmarks" / "landscapes" / "gelu_h200_n2e20.json")


def _help(*command: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("COLUMNS", "10000")  # one line per option: phrases are not broken across lines
    with pytest.raises(SystemExit):
        build_parser().parse_args([*command, "--help"])
    return capsys.readouterr().out


def test_tune_help_states_the_budgets_default_from_its_constants(capsys, monkeypatch):
    from tritune.engine.plan import DEFAULT_MAX, DEFAULT_MIN, DEFAULT_SHARE

    text = _help("tune", capsys=capsys, monkeypatch=monkeypatch)
    assert f"default: {DEFAULT_SHARE * 100:g}% of the legal configs, at least {DEFAULT_MIN} and at most {DEFAULT_MAX}" in text
    assert "10% of the space" not in text


def test_tune_help_names_the_strategies_and_explains_every_option(capsys, monkeypatch):
    text = _help("tune", capsys=capsys, monkeypatch=monkeypatch)
    for name in names():
        assert name in text, name
    assert "simulate --help" not in text
    assert re.search(r"--compile-timeout SECONDS\s+give up on a candidate", text) and "(default: 60)" in text
    assert "--sweep" in text and "--graph" not in text and "--exhaustive" not in text


def test_the_duplicate_flags_are_gone_and_exhaustive_says_what_replaces_it(capsys):
    with pytest.raises(SystemExit) as info:
        main(["tune", GELU, "--graph"])
    assert info.value.code == 2
    assert main(["tune", GELU, "--no-store", "--exhaustive"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == ("tritune: error: --exhaustive is now --sweep (time every legal candidate to completion, no "
                       "racing); --strategy exhaustive races every legal config without searching")  # fmt: skip


def test_simulate_help_names_its_defaults(capsys, monkeypatch):
    text = _help("simulate", capsys=capsys, monkeypatch=monkeypatch)
    assert "tritune's default" not in text and f"(default: {DEFAULT}," in text
    for name in names():
        assert name in text, name
    assert "(default 0: each time replayed as recorded)" in text
    assert "H200" not in text and "16-core" not in text and "whatever this machine's cores" in text


def test_simulate_progress_counts_seeds(capsys):
    assert main(["simulate", LANDSCAPE, "--seeds", "2", "--strategy", "random"]) == 0
    err = capsys.readouterr().err
    assert "done: 2 seeds" in err and "candidates" not in err, err


def test_cache_help_shows_no_markup(capsys, monkeypatch):
    text = _help("cache", capsys=capsys, monkeypatch=monkeypatch)
    assert "``" not in text and ":func:" not in text
    assert "--store PATH" in text


def test_tune_without_a_gpu_says_why_nothing_was_timed_once(capsys):
    assert main(["tune", GELU, "--no-store", "--key", "n=64"]) == 1
    out = capsys.readouterr().out
    assert out.count("NO TIMING HAPPENED") == 1
    assert "not timed:" not in out and "but not timed" not in out, out
