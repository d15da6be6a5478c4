"""The end-of-command terminal tables: the right columns per command, winners, and reasons in full."""

from __future__ import annotations

import re

import pytest
from report_samples import fixture_json

from tritune.report import print_table, render_table
from tritune.report.data import parse_result, timing_of


def _words(text: str) -> str:
    """The table text with box drawing and all whitespace removed, so wrapped text can be searched."""
    return re.sub(r"[\s│┃┆─━┏┓┗┛┡┩╇┳┻╋]+", "", text)


def test_tune_table_names_winner_ties_interval_and_bandwidth():
    r = parse_result(fixture_json("tune_gelu_space.json"))
    text = render_table(r, width=120)
    assert text.count("tune: gelu_space n=") == 3
    assert (
        "winner: BLOCK=2048,num_warps=8,num_stages=3  0.006868 ms [CI 0.006834, 0.006902]  1221 GB/s" in text
    )
    assert "tied with the winner (overlapping CI): " in text
    assert "GB/s" in text and "median ms" in text and "CI ms" in text
    assert "80 candidates: 77 measured, 2 illegal, 1 compile_failed" in text
    assert "\x1b" not in text  # plain text unless color=True


@pytest.mark.parametrize("width", [60, 80, 120])
def test_long_reasons_are_shown_in_full_at_any_width(width):
    d = fixture_json("tune_gelu_space.json")
    r = parse_result(d)
    reason = next(c.reason for c in r.workloads[0].candidates if c.status.value == "compile_failed")
    assert reason is not None and len(reason) > 200
    text = render_table(r, width=width)
    assert _words(reason) in _words(text)
    assert "…" not in text  # nothing cut off with an ellipsis


def test_verify_table_has_error_unwritten_groups():
    r = parse_result(fixture_json("verify_gelu.json"))
    text = render_table(r, width=100)
    for col in ("max abs error", "unwritten", "group"):
        assert col in text
    assert "2.38e-07" in text and "all 4 compared candidates wrote bit-identical outputs" in text
    assert _words("tl.arange(0, BLOCK) needs a power-of-2 range, got 300; use 256 or 512") in _words(text)


def test_screen_table_has_resource_columns():
    r = parse_result(fixture_json("screen_gelu.json"))
    text = render_table(r, width=100)
    for col in ("smem B", "regs", "spill B", "threads", "blk/SM", "limiter"):
        assert col in text
    row = next(line for line in text.splitlines() if line.startswith(" BLOCK=2048"))
    assert row.split()[2:] == ["fits", "0", "24", "0", "256", "8", "threads"]


def test_print_table_writes_to_the_given_file(capsys):
    import io

    buf = io.StringIO()
    print_table(parse_result(fixture_json("screen_gelu.json")), file=buf)
    assert "screen: gelu n=4096" in buf.getvalue()
    assert capsys.readouterr().out == ""


def test_tune_table_states_the_measurement_policy_and_the_tie_rule():
    """The report says how candidates were timed and how a tie was settled."""
    from tritune.bench.ties import TIE_RULE_ID, TieReport
    from tritune.config import Config
    from tritune.measure import MeasurePolicy

    d = fixture_json("tune_gelu_space.json")
    r = parse_result(d)
    w = r.workloads[0]
    assert "timed " not in render_table(r, width=120)  # an old result records no policy: nothing invented
    a, b = Config({"BLOCK": 256}, num_warps=4), Config({"BLOCK": 512}, num_warps=4)
    tie = TieReport(fastest=a, picked=b, tied=(a, b), resolution=0.01, times_ms=(0.0050, 0.00501),
                    measure=MeasurePolicy.GRAPH, rule=TIE_RULE_ID, pick_within=0.005)
    w.extra["measure"] = "graph"
    w.extra["tie"] = tie.to_json()
    text = render_table(r, width=200)
    assert "timed graph: 2 configs tied within 1.0% (graph" in text
    assert f"picked {b.id} by the rule" in text
    w.extra.pop("tie")
    assert "timed graph (measurement policy; part of the store key)" in render_table(r, width=200)


def test_max_rows_shows_the_fastest_rows_and_sums_up_the_rest():
    r = parse_result(fixture_json("tune_gelu_space.json"))
    full = render_table(r, width=120)
    text = render_table(r, width=120, max_rows=5)
    w = r.workloads[0]
    timed = sorted((c for c in w.candidates if timing_of(c)), key=lambda c: timing_of(c).median_ms)
    first_table = _words(text.split("tune: gelu_space n=")[1].split("candidates not shown")[0])
    assert _words(timed[0].config.id) in first_table
    assert _words(timed[10].config.id) not in first_table
    assert "75 more candidates not shown (" in text and "--rows 0 shows every row" in text
    assert "winner: BLOCK=2048,num_warps=8,num_stages=3" in text  # the summary still covers every candidate
    assert "80 candidates: 77 measured, 2 illegal, 1 compile_failed" in text
    assert len(text) < len(full) / 3
    assert render_table(r, width=120, max_rows=None) == full
