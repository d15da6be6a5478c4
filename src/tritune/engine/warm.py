"""The warm check: a generated winner against the best config someone wrote, with the L2 warm.

Candidates are timed as Triton times them, with the L2 flushed before each call. A config nobody wrote (a widened
list's neighbour, a derived space's) can win that race and still be slower than the written configs when calls come
back to back with their data left in the L2: on an H100, FlagGems ``mv``'s widened winner ran 0.9% faster than the
list's best with the flush and 16% slower without it (``benchmarks/real_libraries.py --widen``). A widened list
promises never to serve slower than the list's own winner, so a generated winner serves only if, timed again with
the L2 warm and interleaved with the fastest written config, it is at most :data:`WARM_MARGIN` slower there too;
otherwise the written config serves. The key's race (:func:`~tritune.engine.key.tune_key`) and a library's own loop
over ``_bench`` (:func:`~tritune.decorator.timing.race_in_library_loop`) apply the same margin. A key tuned over
the ranks of a group keeps the race's pick: each rank's own warm looks could decide differently.
"""

from __future__ import annotations

from typing import Any

from tritune.bench.timer import ConfigMeasure, Failure
from tritune.config import Config

#: How much slower than the best written config, with the L2 warm, a generated winner may be and still serve.
WARM_MARGIN = 0.01
#: Each look's time budget; the two configs are looked at in turn, :data:`WARM_ROUNDS` times each.
WARM_LOOK_S = 0.05
WARM_ROUNDS = 2


def warm_refuses(warm_ms: float, written_warm_ms: float) -> bool:
    """Whether a generated config timed ``warm_ms`` with the L2 warm is too slow against the written config's."""
    return warm_ms > written_warm_ms * (1 + WARM_MARGIN)


def warm_check(measure_warm: ConfigMeasure, winner: Config, written: Config) -> dict[str, Any]:
    """Time ``winner`` and ``written`` with the L2 warm, interleaved; what was found, ``kept`` False when the
    written config is to serve instead. A failed look keeps the winner (its race stands), with the reason."""
    got: dict[Config, Any] = {}
    for _ in range(WARM_ROUNDS):
        for cfg in (winner, written):
            m = measure_warm(cfg, WARM_LOOK_S)
            if isinstance(m, Failure):
                return {"winner": winner.id, "written": written.id, "kept": True,
                        "failed": f"{cfg.id}: {m.reason or m.status.value}"}  # fmt: skip
            got[cfg] = m if cfg not in got else got[cfg].merged(m)
    a, b = got[winner].median_ms, got[written].median_ms
    return {"winner": winner.id, "written": written.id, "warm_ms": a, "written_warm_ms": b,
            "kept": not warm_refuses(a, b)}  # fmt: skip
