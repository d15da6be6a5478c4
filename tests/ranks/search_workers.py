"""Rank processes for the shared-search tests: gloo on CPU, one search over a SYNTHETIC landscape.

Nothing is measured: the timings are made up (``synthetic_landscape``) and replayed WITHOUT noise by
``ReplayTimer`` (a labelled fake), so a config's measurement is the same on any rank and in one process,
and the one strategy's proposals can be compared with a single-process search. Each rank writes what it
saw to ``<dir>/rank<r>.json`` and leaves with ``os._exit``.
"""

from __future__ import annotations

import json
import os
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

from tritune.bench import Failure, ReplayTimer, synthetic_landscape
from tritune.config import Config
from tritune.engine.race import RaceOptions
from tritune.errors import TimingUnavailableError
from tritune.landscape import Landscape
from tritune.outcome import Status
from tritune.search import Budget, SearchDriver, get
from tritune.space import Space

OPTS = RaceOptions(brief_budget_s=0.001, round_budget_s=0.003)
BUDGET = 24
WIDTH = 4  # each rank's compile pool; the batches are 8 wide


def landscape() -> Landscape:
    """SYNTHETIC: 120 configs with a clear best, three that fail their check."""
    return synthetic_landscape(120, seed=11, near=(0.03, 0.05), failures={Status.ILLEGAL: 3})


class FakeMeasure:
    """FAKE timing: the landscape replayed without noise; counts calls, raises at call ``fail_at``."""

    def __init__(self, land: Landscape, fail_at: int | None = None) -> None:
        self.timer = ReplayTimer(land, noise=0.0, seed=0)
        self.calls: dict[str, int] = {}
        self.fail_at = fail_at

    def __call__(self, config: Config, budget_s: float) -> Any:
        self.calls[config.id] = self.calls.get(config.id, 0) + 1
        if self.fail_at is not None and sum(self.calls.values()) >= self.fail_at:
            raise TimingUnavailableError("FAKE: this rank's GPU went away mid-search")
        return self.timer.measure_config(config, budget_s)


def prepare_for(land: Landscape) -> Any:
    """The binary check of the pipeline, faked: the landscape's failed configs fail it."""

    def prepare(c: Config) -> Failure | None:
        p = land.lookup(c)
        return None if p is not None and p.status is Status.MEASURED else Failure(Status.ILLEGAL, "FAKE: too big")

    return prepare


def make_driver(legal: list[Config], strategy: str, seed: int) -> Any:
    def make(width: int) -> tuple[SearchDriver, dict[str, Any]]:
        # "surrogate:probe=1": the surrogate with finalist probes; "random+confirm": a driver that stops when the
        # strategy confirms its start (a transfer's; random never does), so its first batch is an opening
        spec, _, confirm = strategy.partition("+")
        name, _, opt = spec.partition(":")
        options = {"probe": float(opt.split("=")[1])} if opt.startswith("probe=") else {}
        s = get(name, Space.from_configs(legal), seed=seed, **options)
        driver = SearchDriver(s, Budget(evaluations=BUDGET), width=width, confirm=confirm == "confirm")
        return driver, {"strategy": strategy}

    return make


def shared(rank: int, world: int, init_file: str, out_dir: str, strategy: str, fail_rank: int | None) -> None:
    """One shared search; ``fail_rank`` (if any) raises from its measure at its third timing."""
    import torch.distributed as dist

    from tritune.engine.loop import Parts, run_batches
    from tritune.ranks import RanksField, TuningGroup

    data: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))  # fmt: skip
        tg = TuningGroup.create(30.0)
        land = landscape()
        legal = list(land.configs)
        measure = FakeMeasure(land, fail_at=3 if rank == fail_rank else None)
        ss = RanksField.start(tg, "synthetic search", legal, WIDTH)
        driver, info = ss.start_driver(make_driver(legal, strategy, seed=5))
        stats: dict[str, Any] = {}
        try:
            res = run_batches(driver, Parts(prepare_for(land), measure, OPTS), field=ss, stats=stats)
            ss.share_summary(driver)
        except Exception as e:
            data["raised"] = f"{type(e).__name__}: {e}"
        else:
            assert res is not None
            data.update(winner=res.winner.id if res.winner else None, info=info, summary=driver.summary(),
                        batches=[[c.id for c in b] for b in ss.batches], calls=sorted(measure.calls),
                        measured_on=dict(res.measured_on), tried=[o.config.id for o in res.outcomes],
                        retimed=res.retimed is not None,
                        budgets=[b.get("budget_per_candidate_s") for b in stats["batches"]])  # fmt: skip
    except BaseException:
        data["exception"] = traceback.format_exc()
    (Path(out_dir) / f"rank{rank}.json").write_text(json.dumps(data, default=str))
    os._exit(0)
