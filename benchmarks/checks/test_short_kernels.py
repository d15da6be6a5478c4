"""short_kernels.py on CPU: the dry run, and the tune-and-judge logic driven by a FAKE timer."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import short_kernels as sk

from tritune.bench import Measurement
from tritune.config import Config


def test_dry_run_lists_the_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sk.main(["--dry-run", "--quick", "--out", str(tmp_path)]) == 0
    plan = json.loads((tmp_path / "short_kernels_plan.json").read_text())
    names = [c["case"] for c in plan["cases"]]
    assert len(names) >= 4 and {"rmsnorm_64x2048", "rmsnorm_1024x4096", "gelu_2^20", "matmul_512"} <= set(names)
    assert all(c["configs"] >= 10 for c in plan["cases"]) and plan["rounds"] == 5
    # the minimum coverage, in the quick run too: 4 kernels x 3 tunings x 3 policies, judged under each
    assert plan["reps"] >= 3 and set(plan["judged_under"]) == {"cold", "warm", "graph"}
    assert {"cold", "warm", "graph", "default"} <= set(plan["methods"])
    assert "rmsnorm_64x2048" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        sk.main(["--dry-run", "--out", str(tmp_path), "--cases", "nope"])


class FakePolicyTimer:
    """FAKE timer: ``fn()`` returns each policy's true time (ms); samples add 0.1% seeded noise."""

    def __init__(self, policy: str, seed: int) -> None:
        self.policy, self.rng = policy, random.Random(seed)

    def measure(self, fn: Any, *, budget_s: float = 1.0, rel_tol: float = 0.01, min_samples: int = 10,
                max_samples: int = 100_000, warmup_s: float | None = None) -> Measurement:  # fmt: skip
        t = fn()[self.policy]
        return Measurement.from_samples([t * (1 + self.rng.gauss(0, 0.001)) for _ in range(30)], elapsed_s=budget_s)

    def to_json(self) -> dict[str, Any]:
        return {"timer": "fake"}


def test_run_case_judges_winners_under_every_policy() -> None:
    # Cold favours the wide block, warm and graph the narrow one: a cold winner costs 20% when judged warm.
    configs = [Config({"B": b}, num_warps=w) for b in (256, 1024) for w in (2, 4, 8)]
    truth = {c: {"cold": 5.0 - (c.kwargs["B"] == 1024) - 0.1 * c.num_warps,
                 "warm": 1.8 + 0.4 * (c.kwargs["B"] == 1024) + 0.01 * c.num_warps} for c in configs}  # fmt: skip
    for c in configs:
        truth[c]["graph"] = truth[c]["warm"]
    def launch_of(c: Config) -> Callable[[], object]:
        return lambda: truth[c]

    fns = {c: launch_of(c) for c in configs}
    seeds = iter(range(1000))
    res = sk.run_case("fake", configs, fns, lambda m: FakePolicyTimer(sk.judged_as(m), next(seeds)),
                      reps=2, rounds=2, judge_budget_s=0.01, top_k=3)  # fmt: skip
    best_cold = Config({"B": 1024}, num_warps=8)
    best_warm = Config({"B": 256}, num_warps=2)
    assert {t["winner"] for t in res["tunings"] if t["method"] in ("cold", "default")} == {best_cold.id}
    assert {t["winner"] for t in res["tunings"] if t["method"] in ("warm", "graph")} == {best_warm.id}
    for m in sk.METHODS:
        assert all(q == pytest.approx(1.0, abs=0.005) for q in res["own_quality"][m])
        assert all(q == pytest.approx(1.0, abs=0.005) for q in res["picked_own_quality"][m])  # no ties here
    cold_judged_warm = res["quality"]["cold"]["warm"]
    assert all(q == pytest.approx(truth[best_cold]["warm"] / truth[best_warm]["warm"], rel=0.01) for q in cold_judged_warm)
    assert res["judged"]["cold"]["best_ms"] == pytest.approx(truth[best_cold]["cold"], rel=0.005)
    assert res["tunings"][0]["tie_report"]["measure"] in ("cold", "warm", "graph")
    text = sk.tables([res])
    assert "cross-policy matrix" in text and "summary over cases" in text and "<-- above 1.01" not in text
    print(text)


def test_gpu_fns_checks_every_config_against_the_oracle() -> None:
    """The launch builder, run in Triton's interpreter: a config whose block misses part of a row is dropped."""
    from softmax import softmax

    good_cfg = Config({"BLOCK_N": 128}, num_warps=1, num_stages=1)
    short_cfg = Config({"BLOCK_N": 32}, num_warps=1, num_stages=1)  # covers 32 of 100 columns: wrong
    case = sk.Case("softmax_tiny", softmax, {"rows": 3, "cols": 100}, (good_cfg, short_cfg))
    good, fns, dropped = sk.gpu_fns(case, device="cpu")
    assert good == [good_cfg] and set(fns) == {good_cfg}
    assert list(dropped) == [short_cfg.id] and dropped[short_cfg.id].startswith("incorrect")


def test_the_tie_rule_picks_from_the_binaries_facts() -> None:
    """FAKE timer, two configs 0.2% apart under every policy: tied; the slower one has fewer registers, so the
    rule keeps it (what the tuner would), and its quality is judged too."""
    a, b = Config({"B": 1}, num_warps=4), Config({"B": 2}, num_warps=4)
    truth = {a: {"cold": 5.0, "warm": 2.0, "graph": 2.0}, b: {"cold": 5.01, "warm": 2.004, "graph": 2.004}}
    fns = {c: (lambda c=c: truth[c]) for c in (a, b)}
    facts = {a: {"registers": 64, "shared": 0}, b: {"registers": 32, "shared": 0}}
    seeds = iter(range(1000))
    res = sk.run_case("fake", [a, b], fns, lambda m: FakePolicyTimer(sk.judged_as(m), next(seeds)),
                      reps=1, rounds=2, judge_budget_s=0.01, top_k=2, facts=facts)  # fmt: skip
    for t in res["tunings"]:
        assert t["tie_report"] is not None and len(t["tie_report"]["tied"]) == 2
        assert t["picked"] == b.id and t["top10_calls_est_us"][0][0] in (a.id, b.id)
    assert res["facts"][b.id]["registers"] == 32
    assert all(q == pytest.approx(1.002, abs=0.002) for m in sk.METHODS for q in res["picked_own_quality"][m])
    assert "kept quality" in sk.tables([res])


def test_binary_facts_reads_registers_and_shared() -> None:
    from types import SimpleNamespace

    kernel = SimpleNamespace(n_regs=40, metadata=SimpleNamespace(shared=2048))  # FAKE compiled kernel
    assert sk.binary_facts(kernel) == {"registers": 40, "shared": 2048}
    assert sk.binary_facts(None) == {}  # the interpreter's launch returns no compiled kernel
