"""Run rank processes for the dist tests and collect what each wrote to ``<out>/rank<r>.json``."""

from __future__ import annotations

import json
import multiprocessing
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def run_ranks(target: Callable[..., None], world: int, out: Path, args: Sequence[Any], preload: Sequence[str],
              timeout_s: float = 120.0) -> list[dict[str, Any]]:
    """Start ``target(rank, world, *args)`` per rank, fail if any hangs or raised, return each rank's JSON."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(list(preload))
    procs = [ctx.Process(target=target, args=(r, world, *args)) for r in range(world)]
    for p in procs:
        p.start()
    deadline = time.monotonic() + timeout_s
    for p in procs:
        p.join(max(0.1, deadline - time.monotonic()))
    alive = [p for p in procs if p.is_alive()]
    for p in alive:
        p.kill()
    assert not alive, "a rank hung"
    res = [json.loads((out / f"rank{r}.json").read_text()) for r in range(world)]
    for r in res:
        assert "exception" not in r, r["exception"]
    return res
