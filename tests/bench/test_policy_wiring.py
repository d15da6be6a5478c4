"""The policy through the decorator: ``measure=`` / ``$TRITUNE_MEASURE`` choose the key; choices() show the
policy and the tie report. TIMINGS ARE SYNTHETIC (a made-up landscape replayed through ``Tuner(timer=...)``,
a FAKE timer); the kernel really runs, in Triton's interpreter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
import triton

import tritune
from kernels import scale_kernel
from tritune.bench import ReplayTimer
from tritune.errors import ConfigError
from tritune.landscape import Landscape, LandscapePoint
from tritune.measure import ENV_VAR
from tritune.outcome import Status
from tritune.store import open_store

N = 1000
CONFIGS = [tritune.Config({"BLOCK": b}, num_warps=w) for b in (128, 256) for w in (1, 4)]
# SYNTHETIC: the two BLOCK=256 configs are 0.3% apart (tied at 1% resolution), the others 20% slower.
TIMES = {CONFIGS[0]: 0.012, CONFIGS[1]: 0.0121, CONFIGS[2]: 0.0100, CONFIGS[3]: 0.01003}


class FakeReplay:
    """FAKE timer: replays TIMES through ReplayTimer.measure_config (no GPU)."""

    def __init__(self) -> None:
        pts = [LandscapePoint(c, Status.MEASURED, t) for c, t in TIMES.items()]
        self.replay = ReplayTimer(Landscape.from_points("scale_kernel", "synthetic", {"n": N}, pts), noise=0.001, seed=0)

    def measure_config(self, config: tritune.Config, budget_s: float) -> Any:
        return self.replay.measure_config(config, budget_s)


def _run(store: str, **kw: Any) -> tritune.Choice:
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=store, timer=FakeReplay(), precompile=False, **kw)(scale_kernel)
    x = torch.randn(N)
    out = torch.empty_like(x)
    k[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, out, N)
    torch.testing.assert_close(out, 2 * x)
    (choice,) = k.choices().values()
    return choice


def test_policy_keys_the_store_and_shows_in_choices(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_VAR, raising=False)
    store = str(tmp_path / "s.db")
    warm = _run(store, measure="warm")
    assert warm.source == "replayed" and warm.stats is not None and warm.stats["measure"] == "warm"
    tie = warm.stats["tie"]
    assert {tritune.Config.from_json(c) for c in tie["tied"]} == {CONFIGS[2], CONFIGS[3]}
    assert tritune.Config.from_json(tie["picked"]) == warm.config  # the rule's pick is what runs
    assert warm.config == CONFIGS[2]  # no binary facts here (interpreter), no other policies: the faster median
    monkeypatch.setenv(ENV_VAR, "graph")
    graph = _run(store)  # the environment's policy: a different key, so it is tuned again
    assert graph.source == "replayed" and graph.stats is not None and graph.stats["measure"] == "graph"
    assert _run(store, measure="warm").source == "store"  # the run's policy wins over the environment
    measures = sorted(e.key.measure.value for e in open_store(store).entries())
    assert measures == ["graph", "warm"]


def test_bad_policy_names_the_kernel(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"scale_kernel: @autotune\(measure=...\)='hot'"):
        _run(str(tmp_path / "s.db"), measure="hot")


def test_cli_tune_takes_measure(capsys: pytest.CaptureFixture[str]) -> None:
    from tritune.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["tune", "examples/gelu.py", "--measure", "hot"])
    assert e.value.code == 2 and "--measure" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tune", "--help"])
    assert "--measure {cold,warm,graph}" in capsys.readouterr().out


def test_session_records_policy_and_tie_in_result_store_and_landscape(tmp_path: Path) -> None:
    """``tritune tune``'s session with TuneOptions(measure=...): a SYNTHETIC landscape replayed (FAKE timer)."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "ranks"))
    import session_workers as sw

    from tritune.engine.options import TuneOptions
    from tritune.offline.tune import landscapes, tune

    wl = sw.gelu()
    store = open_store(str(tmp_path / "s.db"))
    res = tune([wl], keys=[sw.KEY], ceilings=False, verify=False, options=TuneOptions(race=sw.OPTS, measure="graph"),
               store=store, timer=sw.replay_timer(wl, 0), target=None,  # type: ignore[arg-type]  # None: no compile
               device="cpu", group=None)  # fmt: skip
    (w,) = res.workloads
    assert w.extra["measure"] == "graph" and w.extra["tie"]["measure"] == "graph"
    assert w.extra["winner"] == w.extra["tie"]["picked"]
    (entry,) = store.entries()
    assert entry.key.measure.value == "graph" and entry.winner is not None
    assert entry.winner.config.to_json() == w.extra["winner"]
    (ls,) = landscapes(res)
    assert ls.measure.value == "graph" and ls.to_json()["measure"] == "graph"
