"""The autotuners behind a library op, for ``real_libraries.py``: which ones a call reaches, what each chose,
and both engines' winners timed against each other in one process.

- :class:`RunCounter` wraps ``run`` of Triton's ``Autotuner`` and every subclass (tritune's stand-in, FlagGems'
  ``LibTuner``) while it is active, counting calls per tuner object; it is off during every timed loop.
- :func:`describe` gives a config as JSON (``all_kwargs``: meta-parameters and launch options), the form in
  which the tritune child sends its winners to the Triton child.
- :func:`remeasure_winners` pins each tuner to one config (``tuner.configs = [cfg]``: with one config both
  Triton's ``Autotuner.run`` and ``LibTuner.run`` launch it without tuning), clears the compiled-kernel cache of
  any ``libentry`` wrapper over it, and times blocks of calls of the op, alternating the two engines' winners.
"""

from __future__ import annotations

import gc
import statistics
from collections.abc import Callable, Iterator
from typing import Any


def original_autotuner() -> type:
    """Triton's own ``Autotuner`` class, also while ``tritune.patch_triton()`` has put its stand-in in its place."""
    try:
        from tritune.decorator.triton_surface import ORIGINAL_AUTOTUNER

        return ORIGINAL_AUTOTUNER  # type: ignore[no-any-return]
    except ImportError:
        from triton.runtime.autotuner import Autotuner

        return Autotuner


def _classes(base: type) -> Iterator[type]:
    seen: set[type] = set()
    todo = [base]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        yield cls
        todo.extend(type.__subclasses__(cls))


def tuner_name(t: Any) -> str:
    fn = getattr(t, "base_fn", None) or getattr(t, "fn", None)
    while fn is not None and not callable(getattr(fn, "__code__", None)) and hasattr(fn, "fn"):
        fn = fn.fn
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', getattr(t, '__name__', '?'))}"


class RunCounter:
    """``with RunCounter() as c: ...`` counts ``run`` calls per autotuner object (``c.counts``, ``c.objects``)."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}
        self.objects: dict[int, Any] = {}
        self._saved: list[tuple[type, Any]] = []

    def __enter__(self) -> RunCounter:
        for cls in _classes(original_autotuner()):
            orig = cls.__dict__.get("run")
            if orig is None:
                continue
            self._saved.append((cls, orig))
            cls.run = self._wrap(orig)
        return self

    def _wrap(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        counts, objects = self.counts, self.objects

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            counts[id(tuner)] = counts.get(id(tuner), 0) + 1
            objects[id(tuner)] = tuner
            return orig(tuner, *args, **kwargs)

        return run

    def __exit__(self, *exc: object) -> None:
        for cls, orig in self._saved:
            cls.run = orig
        self._saved.clear()

    def tuners(self) -> list[Any]:
        return [self.objects[i] for i in self.counts]


class RunTimer(RunCounter):
    """A :class:`RunCounter` that also sums the host seconds spent inside the outermost ``run`` calls
    (``seconds``): the part of an op's call that an autotuner engine owns (a stacked wrapper's nested ``run``
    is not counted twice). The wrapper itself adds ~0.5 us a call to both engines alike."""

    def __init__(self) -> None:
        super().__init__()
        self.seconds = 0.0
        self._depth = 0

    def _wrap(self, orig: Callable[..., Any]) -> Callable[..., Any]:
        import time

        counted = super()._wrap(orig)

        def run(tuner: Any, *args: Any, **kwargs: Any) -> Any:
            if self._depth:
                return counted(tuner, *args, **kwargs)
            self._depth += 1
            t0 = time.perf_counter()
            try:
                return counted(tuner, *args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - t0
                self._depth -= 1

        return run


def describe(cfg: Any) -> dict[str, Any] | None:
    """A config's meta-parameters and launch options as JSON-able values (None for no config)."""
    if cfg is None:
        return None
    kw = cfg.all_kwargs() if hasattr(cfg, "all_kwargs") else {**cfg.kwargs, "num_warps": cfg.num_warps,
                                                                "num_stages": cfg.num_stages}
    return {k: v if isinstance(v, (bool, int, float, str, type(None))) else repr(v) for k, v in sorted(kw.items())}


def matching_config(tuner: Any, want: dict[str, Any]) -> Any:
    """The tuner's own config (with its pre_hook) whose description is ``want``; else a new ``triton.Config``."""
    for c in tuner.configs:
        if describe(c) == want:
            return c
    import triton

    kw = dict(want)
    opts = {k: kw.pop(k) for k in ("num_warps", "num_stages", "num_ctas", "maxnreg") if k in kw}
    return triton.Config(kw, **opts)


def _libentries_over(tuner: Any) -> list[Any]:
    out = []
    for o in gc.get_objects():
        if type(o).__name__ != "LibEntry":
            continue
        fn = getattr(o, "fn", None)
        for _ in range(8):
            if fn is tuner:
                out.append(o)
                break
            fn = getattr(fn, "fn", None)
    return out


class Pinned:
    """Pin tuners to chosen configs (and back); a libentry wrapper's compiled-kernel cache is cleared each time."""

    def __init__(self, tuners: list[Any]) -> None:
        self.tuners = tuners
        self.original = [t.configs for t in tuners]
        self.entries = [e for t in tuners for e in _libentries_over(t)]

    def pin(self, configs: list[Any]) -> None:
        for t, c in zip(self.tuners, configs):
            t.configs = [c]
        self._clear_entries()

    def restore(self) -> None:
        for t, cs in zip(self.tuners, self.original):
            t.configs = cs
        self._clear_entries()

    def _clear_entries(self) -> None:
        for e in self.entries:
            for d in e.kernel_cache:
                d.clear()


def remeasure_winners(torch: Any, fn: Callable[..., Any], args: tuple[Any, ...], tuners: list[Any],
                      sides: dict[str, list[Any]], blocks: int = 24, calls: int = 10,
                      cuda: bool = True, cold_calls: int = 0) -> dict[str, Any]:  # fmt: skip
    """GPU microseconds per call of ``fn(*args)`` with each side's configs pinned, blocks alternating sides
    (the first side alternates too). A sleep kernel ahead of each block keeps the GPU busy while the host
    queues the block, so host dispatch time is not counted. Returns each side's median (``us``: warm, the
    calls back to back). With ``cold_calls`` each block also times that many calls one at a time, each after
    an L2 flush (zeroing twice the L2) and a sleep kernel that covers its queueing (``us_cold``: the cache
    state both engines tuned in, since Triton's ``do_bench`` and tritune's default policy flush).
    ``cuda=False`` (the CPU smoke run) times host wall time instead, which means nothing but exercises the
    pinning."""
    import time

    if not cuda:
        blocks, calls, cold_calls = 2, 2, 0
    pinned = Pinned(tuners)
    per: dict[str, list[float]] = {s: [] for s in sides}
    per_cold: dict[str, list[float]] = {s: [] for s in sides}
    names = list(sides)
    flush = None
    if cold_calls:
        l2 = int(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "L2_cache_size", 0))
        flush = torch.empty(max(2 * l2, 1 << 26) // 4, dtype=torch.int32, device="cuda")
    try:
        for b in range(blocks):
            for side in names if b % 2 == 0 else names[::-1]:
                pinned.pin(sides[side])
                fn(*args)  # the re-entered wrappers compile or load, and launch once: untimed
                if not cuda:
                    t0 = time.perf_counter()
                    for _ in range(calls):
                        fn(*args)
                    per[side].append((time.perf_counter() - t0) * 1e6 / calls)
                    continue
                torch.cuda.synchronize()
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                torch.cuda._sleep(5_000_000)
                start.record()
                for _ in range(calls):
                    fn(*args)
                end.record()
                end.synchronize()
                per[side].append(start.elapsed_time(end) * 1e3 / calls)
                if flush is not None:
                    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                          for _ in range(cold_calls)]  # fmt: skip
                    for s0, e0 in ev:
                        flush.zero_()
                        torch.cuda._sleep(1_000_000)  # ~0.5 ms: the host queues the call behind it
                        s0.record()
                        fn(*args)
                        e0.record()
                    ev[-1][1].synchronize()
                    per_cold[side].append(statistics.median(s0.elapsed_time(e0) * 1e3 for s0, e0 in ev))
    finally:
        pinned.restore()
    out: dict[str, Any] = {"us": {s: statistics.median(v) for s, v in per.items()}, "blocks": blocks,
                           "calls_per_block": calls}  # fmt: skip
    if flush is not None:
        out["us_cold"] = {s: statistics.median(v) for s, v in per_cold.items()}
        out["cold_calls_per_block"] = cold_calls
    return out
