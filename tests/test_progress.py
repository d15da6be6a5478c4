"""Progress displays: plain lines without control characters, rich bars on a terminal, silence when quiet."""

from __future__ import annotations

import io

import pytest

from tritune.outcome import Status
from tritune.progress import PlainProgress, QuietProgress, RichProgress, make_progress


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def _drive(p) -> None:
    with p:
        p.stage("compiling", total=3)
        p.step("BLOCK=128,num_warps=1,num_stages=1", Status.FITS)
        p.step("BLOCK=300,num_warps=4,num_stages=2", "illegal", "BLOCK must be a power of 2")
        p.step("evil\x1b[31mlabel\r", Status.COMPILE_FAILED, "line1\nline2\x07")
        p.stage("timing", total=2)
        p.step("BLOCK=128,num_warps=1,num_stages=1", Status.MEASURED)
        p.best("BLOCK=128,num_warps=1,num_stages=1", 0.0123, 0.0120, 0.0126)
        p.note("tuning n=4096")
        p.step("BLOCK=256,num_warps=2,num_stages=1", Status.LAUNCH_FAILED, "out of resources")


def test_plain_lines_have_no_control_characters_and_count_failures():
    out = io.StringIO()
    p = make_progress(stream=out)
    assert isinstance(p, PlainProgress)
    _drive(p)
    text = out.getvalue()
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    lines = text.splitlines()
    # one line per stage start, per candidate, per stage end, plus the best and the note
    assert len(lines) == 2 + 5 + 2 + 2
    assert lines[0] == "tritune: compiling: 3 candidates"
    assert (
        "compiling 2/3 BLOCK=300,num_warps=4,num_stages=2: illegal (BLOCK must be a power of 2)" in lines[2]
    )
    assert "[failures 1, 1 left, eta" in lines[2]
    assert "compiling 3/3 evil [31mlabel : compile_failed (line1 line2 ) [failures 2]" in lines[3]
    assert lines[4] == lines[4].split(" done:")[0] + " done: 3 candidates, 2 failed, 0s"
    assert "best so far: BLOCK=128,num_warps=1,num_stages=1 0.0123 ms [0.012, 0.0126]" in text
    assert "tritune: tuning n=4096" in lines
    assert lines[-1].startswith("tritune: timing done: 2 candidates, 1 failed")
    assert p.total_failures == 3


def test_quiet_prints_nothing():
    out = _Tty()
    p = make_progress(quiet=True, stream=out)
    assert isinstance(p, QuietProgress)
    _drive(p)
    assert out.getvalue() == ""
    assert p.total_failures == 3  # it still counts


def test_default_stream_is_stderr(capsys):
    with make_progress() as p:
        p.stage("verifying", total=1)
        p.step("a", "correct")
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "verifying 1/1 a: correct" in cap.err


def test_terminal_gets_rich_bars_with_eta_failures_and_best():
    out = _Tty()
    p = make_progress(stream=out)
    assert isinstance(p, RichProgress)
    _drive(p)
    text = out.getvalue()
    assert "\x1b[" in text  # a real terminal display
    assert "timing" in text and "compiling" in text
    assert "2/2" in text and "3/3" in text
    assert "1 failed" in text and "2 failed" in text
    assert "best so far: BLOCK=128,num_warps=1,num_stages=1 0.0123 ms [0.012, 0.0126]" in text
    assert "tuning n=4096" in text
    assert "eta" in text


def test_unknown_status_is_a_clear_error():
    p = make_progress(stream=io.StringIO())
    p.stage("verifying", total=1)
    with pytest.raises(ValueError, match="not a tritune Status; use one of: fits, correct"):
        p.step("a", "skipped")


def test_step_without_stage_and_overrun_are_tolerated():
    out = io.StringIO()
    with make_progress(stream=out) as p:
        p.step("a", "measured")
        p.stage("timing", total=1)
        p.step("b", "measured")
        p.step("c", "measured")  # more than announced
    text = out.getvalue()
    assert "working 1 a: measured" in text and "unknown number" not in text
    assert "timing 2/2 c: measured" in text
    p.close()  # closing twice is harmless


def test_a_stage_of_unknown_size_gets_its_total_later():
    """Screen starts before it has counted: its first line is the count, once known; no "0 candidates", no
    "1/0" lines and no line about an unknown number."""
    out = io.StringIO()
    with make_progress(stream=out) as p:
        p.stage("compiling for sm90", None)
        p.set_total(3)
        for label in "abc":
            p.step(label, "fits")
    lines = out.getvalue().splitlines()
    assert lines[0] == "tritune: compiling for sm90: 3 candidates"
    assert lines[1].startswith("tritune: compiling for sm90 1/3 a: fits")
    assert not any(" 0 candidates" in line or "/0 " in line for line in lines)


def test_a_stage_counts_in_its_own_unit():
    """simulate's stage counts seeds, not candidates."""
    out = io.StringIO()
    with make_progress(stream=out) as p:
        p.stage("simulating", 2, unit="seeds")
        p.step("seed 0", "measured")
        p.step("seed 1", "measured")
    lines = out.getvalue().splitlines()
    assert lines[0] == "tritune: simulating: 2 seeds"
    assert lines[-1].startswith("tritune: simulating done: 2 seeds, 0 failed")
    assert "candidates" not in out.getvalue()
