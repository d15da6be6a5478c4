"""FAKES for the incremental tests: a fake clock (times from a table, no GPU) and a fake compile service
(compiles "finish" when the test says so). They test the state machine's logic, never a real timing."""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from tritune.config import Config


class FakeClock:
    """FAKE timer: a launch of a config "takes" ``times[BLOCK]`` ms, times a seeded noise of +-``noise``.
    ``log`` lists every config started, in order; ``capture`` pretends a CUDA graph is being captured.
    A span started with ``start(None)`` (a check's copies, or its scratch run and comparison) "takes"
    ``span_ms`` plus the fake time of every config started inside it, plus ``host_ms`` of FAKE host time for
    every clock call after its start (an idle device's events measure the host's gaps between launches)."""

    def __init__(self, times: Mapping[int, float], noise: float = 0.01, seed: int = 0, span_ms: float = 0.0,
                 host_ms: float = 0.0) -> None:  # fmt: skip
        self.times = dict(times)
        self.noise = noise
        self.span_ms = span_ms
        self.host_ms = host_ms
        self._calls = 0  # clock calls so far (each one "takes" host_ms)
        self.rng = random.Random(seed)
        self.log: list[Config] = []
        self.capture = False
        self._spent: list[float] = []  # fake time of every config stopped, in order

    def start(self, cfg: Config | None) -> Any:
        self._calls += 1
        if cfg is None:
            return ("span", len(self._spent), self._calls)
        self.log.append(cfg)
        return cfg

    def stop(self, token: Any) -> Any:
        self._calls += 1
        if isinstance(token, tuple):
            return self.span_ms + sum(self._spent[token[1]:]) + self.host_ms * (self._calls - token[2])
        base = self.times[token.kwargs["BLOCK"]]
        ms = base * (1 + self.rng.uniform(-self.noise, self.noise))
        self._spent.append(ms)
        return ms

    def elapsed_ms(self, handle: Any) -> float:
        return float(handle)

    def capturing(self) -> bool:
        return self.capture


class FakeCompiles:
    """FAKE compile service: records what it was asked to compile; ``finish()`` delivers the results."""

    def __init__(self) -> None:
        self.asked: list[Config] = []
        self._deliver: list[Callable[[Config, str | None], None]] = []

    def start(self, tuned: Any, configs: Sequence[Config], args: Sequence[Any], kwargs: Mapping[str, Any],
              grid: Any, deliver: Callable[[Config, str | None], None]) -> None:  # fmt: skip
        self.asked.extend(configs)
        self._deliver.append(deliver)
        self._pending = list(configs)

    def finish(self, failed: Mapping[int, str] | None = None) -> None:
        for cfg in self._pending:
            why = (failed or {}).get(cfg.kwargs["BLOCK"])
            for d in self._deliver:
                d(cfg, why)
        self._pending = []


def serve_one_key(clock: Any, blocks: Sequence[int], calls: int, options: Any = None,
                  host: Callable[[], float] | None = None, compiled_at: int = 0,
                  poll_every: int = 1) -> tuple[Any, int | None]:  # fmt: skip
    """Serve ``calls`` calls of one key of ``scale_kernel`` tuned over BLOCK in ``blocks``, with a FAKE clock,
    FAKE compiles (finished after call ``compiled_at``, by default the first) and a FAKE launch (the clock
    alone says what a call took), the FAKE resolver polled every ``poll_every`` calls (a batch); returns the
    Incremental and the call at which the key was promoted (None: still tuning)."""
    import torch
    import triton

    import tritune
    from kernels import scale_kernel
    from tritune.serving.incremental import Incremental
    from tritune.serving.state import IncrementalOptions
    from tritune.store import MemoryStore

    comp = FakeCompiles()
    inc = Incremental(options or IncrementalOptions(), clock=clock, compiler=comp, thread=False)
    if host is not None:
        inc.host_clock = host
    configs = [triton.Config({"BLOCK": b}) for b in blocks]
    k = tritune.autotune(configs=configs, key=["n"], store=MemoryStore(), incremental=inc)(scale_kernel)
    k.launch = lambda *a, **kw: None
    x, out = torch.zeros(64), torch.zeros(64)
    for i in range(calls):
        k[(1,)](x, out, 64)
        if i == compiled_at:
            comp.finish()
        if (i + 1) % poll_every == 0:
            inc.resolver().poll()
        if inc.promoted:
            return inc, i
    return inc, None
