"""Reading results for reports: tolerant parsing, clear errors, influence, heatmap cell states."""

from __future__ import annotations

import pytest
from report_samples import FIXTURES, fixture_json

from tritune.config import Config
from tritune.errors import ReportInputError
from tritune.outcome import Status
from tritune.report.data import (
    bitwise_sentence,
    ceilings_of,
    gbps_of,
    group_letters,
    influence,
    load_result,
    parse_result,
    timing_of,
    winner,
)
from tritune.report.fig_tune import heatmap_cells
from tritune.results import CandidateResult, WorkloadResult


def cand(
    block: int, warps: int, status: str = "measured", ms: float | None = None, **extra
) -> CandidateResult:
    if ms is not None:
        extra["measurement"] = {"median_ms": ms, "ci_low_ms": ms * 0.99, "ci_high_ms": ms * 1.01}
    return CandidateResult(Config({"BLOCK": block}, num_warps=warps), Status(status), None, extra)


def test_fixtures_load_and_unknown_fields_are_ignored():
    d = fixture_json("tune_gelu_space.json")
    d["future_field"] = {"x": 1}
    d["workloads"][0]["candidates"][0]["new_metric"] = 3
    r = parse_result(d)
    assert r.command == "tune" and len(r.workloads) == 3
    assert [len(w.candidates) for w in r.workloads] == [80, 80, 74]
    for name in ("verify_gelu.json", "screen_gelu.json"):
        assert load_result(FIXTURES / name).workloads


def test_missing_optional_fields_are_tolerated():
    r = parse_result(
        {
            "command": "tune",
            "workloads": [{"name": "k", "candidates": [{"config": {"kwargs": {}}, "status": "measured"}]}],
        }
    )
    w = r.workloads[0]
    assert w.key == {} and timing_of(w.candidates[0]) is None and winner(w) is None
    assert ceilings_of(r) is None and r.timing == ""


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not JSON"),
        ("[1, 2]", "a tritune result is a JSON object"),
        ('{"workloads": []}', "no 'command' field"),
        (
            '{"command": "tune", "workloads": [{"name": "k"}]}',
            r"workloads\[0\] needs 'name' and a 'candidates' list",
        ),
        (
            '{"command": "tune", "workloads": [{"name": "k", "candidates": [{"status": "measured"}]}]}',
            "malformed",
        ),
    ],
)
def test_bad_input_is_a_clear_error_naming_the_file(tmp_path, text, match):
    p = tmp_path / "r.json"
    p.write_text(text)
    with pytest.raises(ReportInputError, match=match) as e:
        load_result(p)
    assert str(p) in str(e.value)


def test_winner_is_the_recorded_one_else_the_fastest():
    a, b = cand(128, 1, ms=2.0), cand(256, 1, ms=1.0)
    w = WorkloadResult("k", {}, [a, b])
    assert winner(w) is b
    w.extra["winner"] = a.config.to_json()
    assert winner(w) is a


def test_gbps_recorded_or_derived():
    c = cand(128, 1, ms=1.0)
    w = WorkloadResult("k", {}, [c], {"bytes": 2e9})
    assert gbps_of(c, w) == pytest.approx(2000.0)
    c2 = cand(128, 1, ms=1.0, gbps=5.0)
    assert gbps_of(c2, w) == 5.0


def test_influence_ranks_by_spread_of_best_time():
    # BLOCK changes the best time 4x, num_warps only 1.25x.
    cands = [
        cand(128, 1, ms=4.0),
        cand(128, 2, ms=5.0),
        cand(256, 1, ms=1.0),
        cand(256, 2, ms=1.25),
        cand(512, 4, "illegal"),
    ]
    ranked = influence(cands)
    assert [p for p, _ in ranked] == ["BLOCK", "num_warps"]
    assert ranked[0][1] == pytest.approx(4.0)  # best(BLOCK=128)=4.0 / best(BLOCK=256)=1.0
    assert ranked[1][1] == pytest.approx(1.25)  # best(num_warps=2)=1.25 / best(num_warps=1)=1.0


def test_influence_ignores_parameters_with_one_timed_value():
    assert influence([cand(128, 1, ms=1.0), cand(256, 1, ms=2.0), cand(256, 2, "illegal")]) == [
        ("BLOCK", pytest.approx(2.0))
    ]


def test_heatmap_cells_tell_illegal_failed_and_unmeasured_apart():
    cands = [
        cand(128, 1, ms=3.0),
        CandidateResult(
            Config({"BLOCK": 128}, num_warps=1, num_stages=1),
            Status.MEASURED,
            None,
            {"measurement": {"median_ms": 2.0}},
        ),  # best over num_stages is taken
        cand(128, 2, "illegal"),
        cand(256, 1, "compile_failed"),
        cand(256, 4, ms=1.0),
    ]
    grid = heatmap_cells(cands, ("BLOCK", [128, 256]), ("num_warps", [1, 2, 4]), cands[4].config.id)
    states = [[c.state for c in row] for row in grid]
    assert states == [["measured", "illegal", "not measured"], ["compile_failed", "not measured", "measured"]]
    assert grid[0][0].value == 2.0 and grid[1][2].winner and not grid[0][0].winner


def test_groups_and_bitwise_sentences():
    ids = ["BLOCK=128,num_warps=1,num_stages=3", "BLOCK=256,num_warps=1,num_stages=3"]
    w = WorkloadResult(
        "k",
        {"n": 1},
        [],
        {"bitwise_identical": False, "groups": [[ids[0]], [{"kwargs": {"BLOCK": 256}, "num_warps": 1}]]},
    )
    assert group_letters(w) == {ids[0]: "A", ids[1]: "B"}
    assert bitwise_sentence(w) == "outputs differ bitwise: 2 groups of sizes 1, 1"
    w.extra.update(bitwise_identical=True, groups=[ids])
    assert bitwise_sentence(w) == "all 2 compared candidates wrote bit-identical outputs"
    assert bitwise_sentence(WorkloadResult("k", {}, [])) == "bit-identity not recorded"


def test_ceilings_read_from_the_result_only():
    r = parse_result(fixture_json("tune_gelu_space.json"))
    c = ceilings_of(r)
    assert c is not None and c.copy_gbps == 3600.0 and c.matmul_tflops is None
    d = fixture_json("tune_gelu_space.json")
    d["ceilings"] = {"copy_gbps": None, "matmul_tflops": None, "device": "x"}
    assert ceilings_of(parse_result(d)) is None
