"""Fixtures of the conformance suite: each pattern runs through ``triton.autotune`` and through tritune."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from tritune.decorator.triton_surface import ORIGINAL_AUTOTUNER


@pytest.fixture
def fake_triton_bench(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """A FAKE timer for Triton's own autotuner, which cannot time more than one config on CPU ("0 active
    drivers"). It runs each benchmark call once (so hooks fire as they do on a GPU) and reports a time that
    grows with every call, so Triton picks the first config it benchmarks: the first of the pruned list,
    the same config tritune runs untuned on CPU. Yields the list of benchmark calls made."""
    calls: list[Any] = []
    counter = itertools.count(1)

    def fake_do_bench(self: Any, kernel_call: Any, quantiles: Any = None) -> list[float]:
        kernel_call()
        calls.append(kernel_call)
        t = float(next(counter))
        return [t, t, t]

    monkeypatch.setattr(ORIGINAL_AUTOTUNER, "do_bench", fake_do_bench)
    yield calls
