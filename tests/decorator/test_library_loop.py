"""A library's own loop over ``_bench`` (FlagGems' LibTuner) raced one config at a time.

The timings here come from a FAKE measure function (fixed per-config sample sets), labelled as such: the
race logic is what is under test, not a GPU timer."""

from __future__ import annotations

from typing import Any

from tritune.bench.stats import Measurement
from tritune.decorator.timing import FIRST_LOOK, FULL_LOOK, race_in_library_loop


class _Tuned:
    """Stands in for a decorated kernel: ``race_in_library_loop`` keeps its per-key best in ``__dict__``."""

    user_do_bench = None  # timed by tritune's race, not a kernel's own do_bench


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


def test_a_generated_config_faster_only_with_the_l2_flushed_does_not_beat_the_written_best() -> None:
    """A widened list in a library loop: the written best is timed warm too; a generated config that beats it with
    the L2 flushed (FAKE 0.9 against 1.0 ms) but is 16% slower warm (FAKE 1.16 against 1.0 ms) gets the written
    best's time scaled by 1 + WARM_MARGIN, so the loop's min keeps the written config; one that is faster both ways
    keeps its own time."""
    from tritune.engine.warm import WARM_MARGIN

    tuned, calls, warm_calls = _Tuned(), [], []
    written = race_in_library_loop(tuned, ("k",), _fake_measure(1.0, calls), measure_warm=_fake_measure(1.0, warm_calls))
    slow_warm = race_in_library_loop(tuned, ("k",), _fake_measure(0.9, calls), generated="BLOCK=64",
                                     measure_warm=_fake_measure(1.16, warm_calls))  # fmt: skip
    assert slow_warm.median_ms == written.median_ms * (1 + WARM_MARGIN) > written.median_ms
    refused = tuned.__dict__["_library_loop_refused"][("k",)]["BLOCK=64"]
    assert refused["warm_ms"] > refused["written_warm_ms"] and refused["flushed_ms"] < refused["written_flushed_ms"]

    both = race_in_library_loop(tuned, ("k",), _fake_measure(0.85, calls), generated="BLOCK=128",
                                measure_warm=_fake_measure(0.9, warm_calls))  # fmt: skip
    assert both.median_ms < written.median_ms and "BLOCK=128" not in tuned.__dict__["_library_loop_refused"][("k",)]
    assert tuned.__dict__["_library_loop_refused"][("k",)]["BLOCK=64"]["why"] == "slower with the L2 warm"
    # warm looks: the written best, and each generated config that beat it with the flush
    assert [t for t, _ in warm_calls] == [1.0, 1.16, 0.9]


def test_a_generated_config_tied_with_the_written_best_does_not_beat_it() -> None:
    """A generated config 0.2% faster than the written best with the flush (FAKE 0.998 against 1.0 ms: within the tie
    rule's band, half the 1% resolution) gets the written best's time scaled by 1 + WARM_MARGIN, and is not timed
    warm; one 2% faster keeps its own time."""
    from tritune.engine.warm import WARM_MARGIN

    tuned, calls, warm_calls = _Tuned(), [], []
    written = race_in_library_loop(tuned, ("k",), _fake_measure(1.0, calls), measure_warm=_fake_measure(1.0, warm_calls))
    tied = race_in_library_loop(tuned, ("k",), _fake_measure(0.998, calls), generated="BLOCK=64",
                                measure_warm=_fake_measure(0.998, warm_calls))  # fmt: skip
    assert tied.median_ms == written.median_ms * (1 + WARM_MARGIN)
    assert tuned.__dict__["_library_loop_refused"][("k",)]["BLOCK=64"]["why"] == "tied with the written best"
    faster = race_in_library_loop(tuned, ("k",), _fake_measure(0.98, calls), generated="BLOCK=256",
                                  measure_warm=_fake_measure(0.98, warm_calls))  # fmt: skip
    assert faster.median_ms == 0.98 and "BLOCK=256" not in tuned.__dict__["_library_loop_refused"][("k",)]
    assert [t for t, _ in warm_calls] == [1.0, 0.98]  # the written best, then the one that beat it beyond the band


def test_the_warm_check_times_only_the_written_best_and_generated_configs_that_beat_it() -> None:
    tuned, calls, warm_calls = _Tuned(), [], []
    for t, gen in ((1.2, None), (1.0, None), (1.1, None), (1.3, "BLOCK=32")):
        race_in_library_loop(tuned, ("k",), _fake_measure(t, calls), generated=gen,
                             measure_warm=_fake_measure(t, warm_calls))  # fmt: skip
    # each new written best (1.2, then 1.0) is timed warm; 1.1 (written, not the best) and 1.3 (generated, slower
    # with the flush) are not
    assert [t for t, _ in warm_calls] == [1.2, 1.0]
    assert "_library_loop_refused" not in tuned.__dict__


def test_a_widened_neighbour_is_timed_only_where_a_config_one_step_nearer_the_list_stays_near_the_best() -> None:
    """A widened list in a library loop that times every config (FlagGems' LibTuner): the written configs first
    (FAKE 1.0, 1.3, 3.0 ms), then their neighbours. A neighbour of the 1.0 ms config is timed; one whose only origin
    is the 3.0 ms config (clearly more than 20% slower than the best: ``ADMIT_MARGIN``) is not, and says why; one
    neighbouring both is timed. A second ring's config is decided when the loop meets it, by its first-ring
    origin's own measurement."""
    from tritune.config import Config
    from tritune.decorator.timing import admitted_in_library_loop, untimed_neighbours

    w = [Config({"BLOCK": b}) for b in (64, 256, 1024)]
    fast_n, slow_n, both, ring2 = (Config({"BLOCK": b}) for b in (32, 2048, 128, 16))
    tuned, calls = _Tuned(), []
    tuned.generated_origins = {fast_n: (w[0],), slow_n: (w[2],), both: (w[2], w[0]), ring2: (fast_n,)}
    for c, t in zip(w, (1.0, 1.3, 3.0)):
        race_in_library_loop(tuned, ("k",), _fake_measure(t, calls), config=c)
    assert admitted_in_library_loop(tuned, ("k",), fast_n) and admitted_in_library_loop(tuned, ("k",), both)
    assert not admitted_in_library_loop(tuned, ("k",), slow_n)
    assert admitted_in_library_loop(tuned, ("k",), w[1])  # a written config is always timed
    why = untimed_neighbours(tuned, ("k",))  # what the key's choice lists as generated_untimed
    assert list(why) == [slow_n.id] and "BLOCK=1024" in why[slow_n.id] and "20%" in why[slow_n.id]
    assert not admitted_in_library_loop(tuned, ("k",), ring2)  # its origin was admitted but is not timed yet
    race_in_library_loop(tuned, ("k",), _fake_measure(0.9, calls), config=fast_n)
    assert not admitted_in_library_loop(tuned, ("k",), ring2)  # decided once a key: the loop met it already
    assert admitted_in_library_loop(tuned, ("k2",), w[0])  # another key decides on its own
    assert list(untimed_neighbours(tuned, ("k",))) == [slow_n.id, ring2.id] and not untimed_neighbours(
        tuned, ("k2",))


def test_a_neighbours_admission_counts_a_first_look_within_the_margin() -> None:
    """An origin measured only at its first look (FAKE 1.15 ms against a 1.0 ms best: out of the loop's race at 5%,
    its first look all it gets, but within the admission margin, 20%) admits its neighbour; one 1.5 ms does not."""
    from tritune.config import Config
    from tritune.decorator.timing import admitted_in_library_loop

    a, b, c = (Config({"BLOCK": x}) for x in (64, 128, 256))
    near_n, far_n = Config({"BLOCK": 32}, num_warps=8), Config({"BLOCK": 512}, num_warps=8)
    tuned, calls = _Tuned(), []
    tuned.generated_origins = {near_n: (b,), far_n: (c,)}
    for cfg, t in ((a, 1.0), (b, 1.15), (c, 1.5)):
        race_in_library_loop(tuned, ("k",), _fake_measure(t, calls), config=cfg)
    assert admitted_in_library_loop(tuned, ("k",), near_n) and not admitted_in_library_loop(tuned, ("k",), far_n)
