"""Choices across a fleet: record each rank's choices, merge them by majority into a pinned table, run pinned (no
timing at all) with the recording run's bits, see what changed since a table was made, draw configs for a
sensitivity run, and check that ranks chose alike.

The kernel runs in Triton's interpreter. TIMINGS ARE SYNTHETIC: a replay timer (which counts what it times) stands
in for the GPU, so "nothing was timed" is a count of zero.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch
import triton

import tritune
from kernels import rowsum_kernel as row_sum
from library_loop import OwnLoop
from tritune import fleet
from tritune.bench import ReplayTimer
from tritune.cli.main import main as cli
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status

CONFIGS = [triton.Config({"BLOCK": b}) for b in (32, 64, 128)]


class CountingReplay(ReplayTimer):
    """SYNTHETIC timings (BLOCK=64 fastest) that count every config timed."""

    def __init__(self, fastest: int = 64) -> None:
        pts = [LandscapePoint(tritune.Config({"BLOCK": b}), Status.MEASURED, 0.5 if b == fastest else 1.0 + b / 1000)
               for b in (32, 64, 128)]  # fmt: skip
        super().__init__(Landscape.from_points("rowsum_kernel", "synthetic", {}, pts), seed=0)
        self.timed = 0

    def measure_config(self, config: Any, budget_s: float) -> Any:
        self.timed += 1
        return super().measure_config(config, budget_s)


def _run(k: Any, cols: int = 1000, seed: int = 0) -> torch.Tensor:
    torch.manual_seed(seed)
    x = torch.randn(4, cols)
    out = torch.empty(4)
    k[(4,)](x, out, cols)
    return out


def _recording(tmp_path: Path, name: str, fastest: int, rank: int = 0) -> Path:
    """A recording of a run whose (SYNTHETIC) fastest config is ``fastest``, as rank ``rank`` wrote it."""
    k = tritune.autotune(CONFIGS, ["n"], store=False, timer=CountingReplay(fastest))(row_sum)
    _run(k)
    path = fleet.record_choices(tmp_path / name, kernels=[k])
    doc = json.loads(path.read_text())
    doc["provenance"]["rank"] = rank  # as rank ``rank`` of a job would have written it
    path.write_text(json.dumps(doc))
    return path


def test_choices_list_every_kernel_reached_and_how_each_key_was_chosen(tmp_path: Path) -> None:
    k = tritune.autotune(CONFIGS, ["n"], store=False, timer=CountingReplay())(row_sum)
    _run(k, 1000)
    _run(k, 500)
    mine = fleet.choices([k])
    assert sorted(c["key"] for c in mine) == [f"({n}, 'torch.float32', 'torch.float32')" for n in (1000, 500)]
    assert {c["source"] for c in mine} == {"replayed"} and all(c["tuning_key"]["kernel"] == "rowsum_kernel" for c in mine)
    assert k in fleet.autotuners()
    doc = json.loads(fleet.record_choices(tmp_path / "r{rank}.json").read_text())
    assert (tmp_path / "r0.json").exists() and doc["format"] == fleet.RECORDING
    assert {"gpu", "triton", "torch", "libraries", "rank"} <= set(doc["provenance"])


def test_merge_keeps_the_majority_and_breaks_a_tie_by_the_lowest_rank(tmp_path: Path) -> None:
    recs = [_recording(tmp_path, "a.json", 64, rank=2), _recording(tmp_path, "b.json", 64, rank=1),
            _recording(tmp_path, "c.json", 128, rank=0)]  # fmt: skip
    doc = fleet.merge_recordings(recs)
    (entry,) = doc["entries"]
    assert entry["winner"]["config"]["kwargs"] == {"BLOCK": 64}  # 2 of 3
    assert entry["winner"]["provenance"]["votes"] == {"BLOCK=128,num_warps=4,num_stages=3": 1,
                                                      "BLOCK=64,num_warps=4,num_stages=3": 2}
    tie = fleet.merge_recordings(recs[1:])  # 64 (rank 1) against 128 (rank 0): rank 0's choice
    assert tie["entries"][0]["winner"]["config"]["kwargs"] == {"BLOCK": 128}


def test_a_pinned_run_times_nothing_and_computes_the_recording_runs_bits(tmp_path: Path) -> None:
    rec = _recording(tmp_path, "rank0.json", 128)
    table = tmp_path / "pinned.json"
    assert cli(["pin", "merge", str(rec), "--out", str(table)]) == 0
    timer = CountingReplay(fastest=32)  # this run's own timing would pick BLOCK=32: it must not be asked
    pinned = tritune.autotune(CONFIGS, ["n"], store=False, timer=timer, pretuned=table, pinned=True)(row_sum)
    got = _run(pinned)
    recorded = tritune.autotune([CONFIGS[2]], ["n"], store=False)(row_sum)
    assert timer.timed == 0 and pinned.best_config.kwargs == {"BLOCK": 128}
    assert torch.equal(got, _run(recorded))
    other = _run(pinned, cols=777)  # a key the table does not hold: the stated rule, the first legal config
    assert timer.timed == 0 and pinned.best_config.kwargs == {"BLOCK": 32} and other.shape == (4,)
    assert {c.source for c in pinned.choices().values()} == {"pretuned", "pinned"}


def test_stale_names_what_changed_since_the_table_was_made(tmp_path: Path) -> None:
    rec = _recording(tmp_path, "rank0.json", 64)
    table = tmp_path / "pinned.json"
    doc = fleet.merge_recordings([rec])
    table.write_text(json.dumps(doc))
    assert fleet.stale(table) == []
    doc["provenance"][0]["torch"] = "1.0.0"
    table.write_text(json.dumps(doc))
    assert len(fleet.stale(table)) == 1 and "torch 1.0.0" in fleet.stale(table)[0]
    assert cli(["pin", "stale", str(table)]) == 1


def test_sensitivity_draws_a_correct_config_reproducibly_without_timing() -> None:
    picks = {}
    for seed in range(6):
        timer = CountingReplay()
        k = tritune.autotune(CONFIGS, ["n"], store=False, timer=timer, sensitivity=seed)(row_sum)
        out = _run(k)
        torch.manual_seed(0)
        assert torch.allclose(out, torch.randn(4, 1000).sum(1), atol=1e-4) and timer.timed == 0
        picks[seed] = k.best_config.kwargs["BLOCK"]
        assert next(iter(k.choices().values())).source == "sensitivity"
    again = tritune.autotune(CONFIGS, ["n"], store=False, sensitivity=3)(row_sum)
    _run(again)
    assert again.best_config.kwargs["BLOCK"] == picks[3]  # reproducible
    assert len(set(picks.values())) > 1  # the seeds spread over the configs


def test_pinned_and_sensitivity_exclude_each_other() -> None:
    with pytest.raises(tritune.ConfigError, match="rowsum_kernel: pinned and sensitivity"):
        tritune.autotune(CONFIGS, ["n"], pinned=True, sensitivity=1)(row_sum)


def _ranks_choose(rank: int, world: int, init_file: str, out_dir: str, differ: bool) -> None:
    """Rank process: tune one key (replayed), then check that the ranks chose alike."""
    import sys
    from datetime import timedelta

    import torch.distributed as dist

    data: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))  # fmt: skip
        fastest = 128 if (differ and rank == 1) else 64
        k = tritune.autotune(CONFIGS, ["n"], store=False, timer=CountingReplay(fastest))(row_sum)
        _run(k)
        try:
            data["digest"] = fleet.check_choices()
        except tritune.TrituneError as e:
            data["raised"] = str(e)
    except BaseException:
        import traceback

        data["exception"] = traceback.format_exc()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(data))
    sys.stdout.flush()
    os._exit(0)


@pytest.mark.parametrize("differ", [False, True])
def test_ranks_that_chose_alike_agree_and_a_rank_that_did_not_is_named(tmp_path: Path, differ: bool) -> None:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))
    from ranks import run_ranks

    out = tmp_path / "out"
    out.mkdir()
    res = run_ranks(_ranks_choose, 2, out, (str(tmp_path / "rdv"), str(out), differ),
                    ["torch.distributed", "triton", "tritune"])  # fmt: skip
    if not differ:
        assert res[0]["digest"] == res[1]["digest"] and "raised" not in res[0]
    else:
        assert all("rank 1" in r["raised"] and "rowsum_kernel" in r["raised"] and "BLOCK=128" in r["raised"] for r in res)


def test_a_pinned_run_steers_a_librarys_own_loop_from_the_environment_without_timing(tmp_path: Path,
                                                                                  monkeypatch: Any) -> None:  # fmt: skip
    table = tmp_path / "pinned.json"
    assert cli(["pin", "merge", str(_recording(tmp_path, "rank0.json", 128)), "--out", str(table)]) == 0
    monkeypatch.setenv("TRITUNE_PINNED", "1")
    monkeypatch.setenv("TRITUNE_PRETUNED", str(table))  # how a pinned table reaches the switch's kernels
    benched: list[Any] = []

    def do_bench(fn, quantiles=None):  # type: ignore[no-untyped-def]  # FAKE: counts; a pinned run must not call it
        benched.append(fn)
        return [1.0, 1.0, 1.0]

    k = OwnLoop(row_sum, ["x_ptr", "out_ptr", "n"], CONFIGS, ["n"], do_bench=do_bench)
    x, got = torch.randn(4, 1000), torch.empty(4)
    k.run(x, got, 1000, grid=(4,))
    assert benched == [] and k.best_config.kwargs == {"BLOCK": 128}  # the table's config, nothing timed
    k.run(torch.randn(4, 777), torch.empty(4), 777, grid=(4,))  # a key the table does not hold: the stated rule
    assert benched == [] and k.best_config.kwargs == {"BLOCK": 32}
    assert {c["source"] for c in fleet.choices([k])} == {"pretuned", "pinned"}
    recorded = tritune.autotune([CONFIGS[2]], ["n"], store=False)(row_sum)
    out = torch.empty(4)
    recorded[(4,)](x, out, 1000)
    assert torch.equal(got, out)  # the recording run's bits


def test_a_sensitivity_run_steers_a_librarys_own_loop_to_its_draw_without_timing(monkeypatch: Any) -> None:
    benched: list[Any] = []

    def do_bench(fn, quantiles=None):  # type: ignore[no-untyped-def]  # FAKE: counts; the run must not call it
        benched.append(fn)
        return [1.0, 1.0, 1.0]

    picks = {}
    for seed in range(6):
        monkeypatch.setenv("TRITUNE_SENSITIVITY", str(seed))
        k = OwnLoop(row_sum, ["x_ptr", "out_ptr", "n"], CONFIGS, ["n"], do_bench=do_bench)
        torch.manual_seed(0)
        x, out = torch.randn(4, 1000), torch.empty(4)
        k.run(x, out, 1000, grid=(4,))
        assert benched == [] and torch.allclose(out, x.sum(1), atol=1e-4)
        picks[seed] = k.best_config.kwargs["BLOCK"]
        assert {c["source"] for c in fleet.choices([k])} == {"sensitivity"}
    monkeypatch.setenv("TRITUNE_SENSITIVITY", "3")  # read when the autotuner is made, as a library makes it
    again = OwnLoop(row_sum, ["x_ptr", "out_ptr", "n"], CONFIGS, ["n"], do_bench=do_bench)
    again.run(torch.randn(4, 1000), torch.empty(4), 1000, grid=(4,))
    assert again.best_config.kwargs["BLOCK"] == picks[3]  # reproducible
    assert len(set(picks.values())) > 1  # the seeds spread over the configs


def test_a_pinned_table_entry_with_other_results_is_ignored_in_a_librarys_own_loop(tmp_path: Path,
                                                                                   monkeypatch: Any) -> None:  # fmt: skip
    from kernels import wrong_value_kernel

    configs = [triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 1024})]  # BLOCK=1024 computes 2.5*x
    pts = [LandscapePoint(tritune.Config({"BLOCK": b}), Status.MEASURED, 0.5 if b == 1024 else 1.0) for b in (256, 1024)]
    timer = ReplayTimer(Landscape.from_points("wrong_value_kernel", "synthetic", {}, pts), seed=0)  # SYNTHETIC
    made = tritune.autotune(configs, ["n"], store=False, timer=timer)(wrong_value_kernel)
    x = torch.randn(4096)
    made[(4,)](x, torch.empty_like(x), 4096)
    assert made.best_config.kwargs == {"BLOCK": 1024}  # a table someone made from a run that never checked it
    table = tmp_path / "pinned.json"
    assert cli(["pin", "merge", str(fleet.record_choices(tmp_path / "r.json", kernels=[made])), "--out",
                str(table)]) == 0  # fmt: skip
    monkeypatch.setenv("TRITUNE_PINNED", "1")
    monkeypatch.setenv("TRITUNE_PRETUNED", str(table))
    k = OwnLoop(wrong_value_kernel, ["x_ptr", "out_ptr", "n"], configs, ["n"],
                 do_bench=lambda fn, quantiles=None: pytest.fail("a pinned run timed a config"))  # fmt: skip
    out = torch.empty_like(x)
    with pytest.warns(tritune.PretunedIgnoredWarning, match="BLOCK=1024.*computes other results than BLOCK=256"):
        k.run(x, out, 4096, grid=(16,))  # 16 blocks of 256
    assert k.best_config.kwargs == {"BLOCK": 256} and torch.equal(out, x * 2.0)
    assert [c["source"] for c in fleet.choices([k])] == ["pinned"]


def _ranks_record(rank: int, world: int, init_file: str, out_dir: str) -> None:
    """Rank process of a gloo job: tune one key (replayed: rank 1's fastest config differs from rank 0's), record
    the choices to ``choices-{rank}.json`` (the rank from torch.distributed), and keep the output's bytes."""
    import sys
    from datetime import timedelta

    import torch.distributed as dist

    data: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))  # fmt: skip
        k = tritune.autotune(CONFIGS, ["n"], store=False, timer=CountingReplay(128 if rank == 0 else 64))(row_sum)
        data["out"] = _run(k).numpy().tobytes().hex()
        data["recording"] = str(fleet.record_choices(Path(out_dir) / "choices-{rank}.json"))
        dist.barrier()
    except BaseException:
        import traceback

        data["exception"] = traceback.format_exc()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(data))
    sys.stdout.flush()
    os._exit(0)


def test_two_ranks_record_a_merge_pins_and_the_pinned_run_times_nothing_and_computes_rank_0s_bits(
        tmp_path: Path) -> None:  # fmt: skip
    """Two gloo ranks on the CPU, each recording its own choice (rank 0: BLOCK=128, rank 1: BLOCK=64); ``tritune pin
    merge`` breaks the 1-1 tie by the lowest rank; a run pinned to the table times nothing (counted) and computes the
    bits rank 0 computed."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))
    from ranks import run_ranks

    out = tmp_path / "out"
    out.mkdir()
    res = run_ranks(_ranks_record, 2, out, (str(tmp_path / "rdv"), str(out)), ["torch.distributed", "triton", "tritune"])
    assert [Path(r["recording"]).name for r in res] == ["choices-0.json", "choices-1.json"]
    assert res[0]["out"] != res[1]["out"]  # the two choices sum the rows in other orders
    table = tmp_path / "pinned.json"
    assert cli(["pin", "merge", *(r["recording"] for r in res), "--out", str(table)]) == 0
    timer = CountingReplay(fastest=32)
    pinned = tritune.autotune(CONFIGS, ["n"], store=False, timer=timer, pretuned=table, pinned=True)(row_sum)
    got = _run(pinned)
    assert timer.timed == 0 and pinned.best_config.kwargs == {"BLOCK": 128}
    assert got.numpy().tobytes().hex() == res[0]["out"]
