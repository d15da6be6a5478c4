"""A library's own loop over ``_bench`` (FlagGems' LibTuner) raced one config at a time.

The timings here come from a FAKE measure function (fixed per-config sample sets), labelled as such: the
race logic is what is under test, not a GPU timer."""

from __future__ import annotations

from typing import Any

from tritune.bench.stats import Measurement
from tritune.decorator.timing import FIRST_LOOK, FULL_LOOK, race_in_library_loop


class _Tuned:
    """Stands in for a decorated kernel: ``race_in_library_loop`` keeps its per-key best in ``__dict__``."""


def _fake_measure(true_ms: float, calls: list[tuple[float, dict[str, Any]]]) -> Any:
    """FAKE timer: samples spread 1% around ``true_ms``; records each call's options."""

    def measure(**options: Any) -> Measurement:
        calls.append((true_ms, options))
        n = 20 if options.get("budget_s") == FULL_LOOK["budget_s"] else 6
        return Measurement.from_samples([true_ms * (1 + 0.01 * ((i % 5) - 2) / 2) for i in range(n)])

    return measure


def test_clear_losers_get_only_the_first_look_and_the_loop_still_finds_the_fastest() -> None:
    tuned, calls = _Tuned(), []
    times = [2.0, 1.5, 3.0, 1.0, 1.02, 5.0, 1.2]
    results = {t: race_in_library_loop(tuned, ("k",), _fake_measure(t, calls)) for t in times}
    assert min(results, key=lambda t: results[t].median_ms) == 1.0  # the library's min() picks the fastest
    full = [t for t, opts in calls if opts == FULL_LOOK]
    # measured in full: the first config, every new best, and a config within the margin of the best (1.02)
    assert full == [2.0, 1.5, 1.0, 1.02]
    assert sum(1 for _, opts in calls if opts == FIRST_LOOK) == len(times)
    assert results[5.0].n == 6 and results[1.0].n == 26  # a loser's first look; the winner's merged samples


def test_each_key_races_on_its_own() -> None:
    tuned, calls = _Tuned(), []
    race_in_library_loop(tuned, ("a",), _fake_measure(1.0, calls))
    race_in_library_loop(tuned, ("b",), _fake_measure(3.0, calls))  # slower, but the first of its key
    assert [opts for _, opts in calls].count(FULL_LOOK) == 2
