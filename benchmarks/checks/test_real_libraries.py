"""real_libraries.py on CPU: its --cpu-smoke mode, Triton's engine, then both engines.

The two runs of the harness are in the long group (``python -m pytest -m long``), which the test command leaves
out and .ci/run runs after it.

Triton's side runs under the interpreter with the harness's FAKE timer (Triton's autotuner cannot time
on CPU). tritune's side needs ``tritune.patch_triton()``: without it the harness
must stop with a message that says so; with it, both engines must run and agree.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import tritune

ROOT = Path(__file__).resolve().parents[2]


def _run(tmp_path: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    cmd = [sys.executable, str(ROOT / "benchmarks" / "real_libraries.py"), "--cpu-smoke", "--out", str(tmp_path), *extra]
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=ROOT)


@pytest.mark.long  # about a minute: the harness tunes two ops under the interpreter
def test_triton_engine_runs_every_smoke_op(tmp_path: Path) -> None:
    p = _run(tmp_path, "--engines", "triton")
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["ops_total"] == 2 and summary["ops_run"]["triton"] == 2, summary
    for s in summary["ops"].values():
        assert s["triton_cold_s"] > 0 and s["triton_us"] > 0 and s["triton_dispatch_us"] > 0
    assert "| smoke_row_sum | 1/0 |" in p.stdout


@pytest.mark.long  # minutes: both engines tune, then each winner is pinned and re-timed
def test_both_engines(tmp_path: Path) -> None:
    p = _run(tmp_path)
    if not hasattr(tritune, "patch_triton"):
        assert p.returncode == 2
        assert "no tritune.patch_triton()" in p.stderr
        return
    assert p.returncode == 0, p.stdout + p.stderr
    summary = json.loads((tmp_path / "results.json").read_text())["summary"]
    assert summary["ops_run"] == {"triton": 2, "tritune": 2}, summary
    assert summary["ops_equal"] == 2, summary
    for name, s in summary["ops"].items():
        # each engine's winner is recorded, and both were pinned in turn and re-timed in Triton's process
        assert s["triton_config"] and s["tritune_config"], (name, s)
        assert s["winner_ratio"] is not None and s["winner_note"] is None, (name, s)
        assert s["reaches"] is True and s["tritune_reaches"] is True  # plain autotuned kernels: no libentry
    assert summary["winners_compared"] == 2 and summary["ops_reaching"] == 2
    assert "winners re-measured interleaved (warm" in p.stdout and "median over the 2 ops" in p.stdout


def test_run_counter_counts_runs_and_puts_run_back() -> None:
    """The harness's counter of autotuner runs wraps ``run`` of Triton's Autotuner and its subclasses only
    while active; ``Pinned`` pins a tuner to one config and restores its list."""
    import torch
    import triton
    import triton.language as tl
    from real_libraries import Pinned, RunCounter, describe, matching_config, original_autotuner

    @triton.jit
    def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)

    cfgs = [triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128}, num_warps=2)]
    k = triton.autotune(configs=cfgs, key=["n"], do_bench=lambda fn, quantiles=None: [1.0, 1.0, 1.0])(scale_kernel)
    before = original_autotuner().__dict__["run"]
    x = torch.randn(256)
    with RunCounter() as c:
        k[(2,)](x, torch.empty_like(x), 256)
        k[(2,)](x, torch.empty_like(x), 256)
    assert c.counts == {id(k): 2} and original_autotuner().__dict__["run"] is before
    assert matching_config(k, describe(cfgs[1])) is cfgs[1]
    assert matching_config(k, {"BLOCK": 32, "num_warps": 8}).kwargs == {"BLOCK": 32}
    p = Pinned([k])
    p.pin([cfgs[1]])
    assert k.configs == [cfgs[1]]
    p.restore()
    assert k.configs == cfgs


def test_summary_rates_same_configs_as_equal_and_dispatch_by_cpu_time() -> None:
    """The summary's rules on recorded rows (no GPU): a winner pair of the same configs counts 1.000 (the same
    kernels) while its measured ratio is kept as the judge's A/A spread; dispatch is rated by the calling
    thread's CPU time where it was recorded, with the wall-time ratio kept beside it."""
    from real_libraries import _summarize

    def side(disp: list[float], cpu: list[float], ctl: list[float]) -> dict[str, object]:
        return {"cold": {"ok": True, "cold_s": 1.0, "reaches": True, "tuners": [{"config": {"B": 1}}]},
                "us": [10.0], "us_rounds": [10.0], "dispatch_us": disp, "dispatch_cpu_us": cpu,
                "control_cpu_us": ctl, "control_us": ctl, "run_us": [5.0]}  # fmt: skip

    rows = {
        "same": {"lib": "x", "triton": side([20.0, 20.0], [10.0, 10.0], [4.0, 4.0]),
                 "tritune": side([30.0, 30.0], [6.0, 6.0], [4.4, 4.4]),
                 "winners": {"us": {"triton": 3.0, "other": 3.2}, "us_cold": {"triton": 3.6, "other": 3.8},
                             "same": [True]}},
        "differs": {"lib": "x", "triton": side([20.0], [10.0], [4.0]), "tritune": side([10.0], [7.0], [4.0]),
                    "winners": {"us": {"triton": 3.0, "other": 3.3}, "us_cold": {"triton": 3.0, "other": 2.7},
                                "same": [False]}},
    }  # fmt: skip
    t = _summarize(rows, ("triton", "tritune"))
    same, differs = t["ops"]["same"], t["ops"]["differs"]
    assert same["winner_ratio"] == same["winner_ratio_cold"] == 1.0
    assert abs(same["winner_ratio_measured"] - 3.2 / 3.0) < 1e-9
    assert abs(differs["winner_ratio"] - 1.1) < 1e-9 and abs(differs["winner_ratio_cold"] - 0.9) < 1e-9
    assert t["winners_within_1_02"] == 1 and t["winners_cold_within_1_02"] == 2
    assert sorted(round(r, 4) for r in t["judge_aa_ratios"]) == sorted([round(3.2 / 3.0, 4), round(3.8 / 3.6, 4)])
    assert abs(same["dispatch_ratio"] - 0.6) < 1e-9 and abs(same["dispatch_ratio_mean"] - 1.5) < 1e-9
    assert abs(t["dispatch_ratio_median_reaching"] - 0.65) < 1e-9
    assert abs(t["control_ratio_median"] - 1.05) < 1e-9


def test_ops_are_picked_by_name_in_order_with_variants_and_compiled_ops_only_when_asked() -> None:
    import argparse

    from real_libraries import select_ops

    def names(**kw: object) -> list[str]:
        base = {"cpu_smoke": False, "quick": False, "compile": False, "variants": False, "ops": ""}
        return [op.name for op in select_ops(argparse.Namespace(**{**base, **kw}))]

    every = names()
    assert "mm" in every and not any("@odd" in n or "+compile" in n for n in every)
    assert names(ops="fla_gla,mm,liger_dyt") == ["fla_gla", "mm", "liger_dyt"]  # exact names, in this order
    assert names(ops="fla_gla_") == ["fla_gla_bwd"] and "mm@odd" in names(ops="@odd")
    assert {"liger_dyt+compile", "fla_gla+compile"} <= set(names(compile=True))
    assert "bmm@odd" in names(variants=True)


def test_widened_winners_are_summarised_with_their_spaces_and_a_new_config_takes_the_lists_hook() -> None:
    """The summary of a --widen run on recorded rows (no GPU): every tuner's space from tritune's choices, the
    winners' median and best, the ops 5% faster; a config outside the list is pinned with the list's pre_hook."""
    from types import SimpleNamespace

    import triton
    from real_libraries import _summarize, matching_config

    def side(ratio: float | None, space: dict[str, object] | None) -> dict[str, object]:
        stats = {"(64,)": {"space": space}} if space else None
        return {"cold": {"ok": True, "cold_s": 1.0, "reaches": False, "tuners": [
            {"name": "k", "config": {"B": 1}, "stats": stats}]}, "us": [10.0], "us_rounds": [10.0]}

    space = {"source": "widened", "given": 4, "generated": 9, "legal": 13, "generated_legal": 9,
             "winner_generated": True, "winner_over_best_written": 0.93}  # fmt: skip
    rows = {op: {"lib": "x", "triton": side(None, None), "tritune": side(None, space),
                 "winners": {"us": {"triton": 10.0, "other": 10.0 * r}, "same": [r == 1.0], "other_generated": [r < 1]}}
            for op, r in (("a", 0.90), ("b", 1.0), ("c", 1.005))}  # fmt: skip
    t = _summarize(rows, ("triton", "tritune"))
    assert t["winners_faster_by_5pct"] == ["a"] and t["winners_at_most_1_01"] == 3
    assert abs(t["winner_ratio_best"] - 0.9) < 1e-9 and t["winner_ratio_median"] == 1.0
    assert t["ops"]["a"]["winner_generated"] and t["ops"]["a"]["space"][0]["winner_over_best_written"] == 0.93

    def hook(nargs: object) -> None:
        return None

    k = SimpleNamespace(configs=[triton.Config({"BLOCK": 64}, pre_hook=hook), triton.Config({"BLOCK": 128}, pre_hook=hook)])
    assert matching_config(k, {"BLOCK": 256, "num_warps": 4}).pre_hook is hook
