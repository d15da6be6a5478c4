"""serving.py --interleave: chunks taken in turn, the order rotated, and an incremental engine charged
the CPU time its own threads used during the other engines' chunks (the CPU clocks of real threads)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import ClassVar

import pytest


@pytest.fixture(scope="module")
def serving():
    import serving as mod

    return mod


def _busy(cpu_s: float, started: threading.Event, go: threading.Event, done: threading.Event,
          leave: threading.Event) -> None:  # fmt: skip
    started.set()
    go.wait()
    t0 = time.thread_time()
    while time.thread_time() - t0 < cpu_s:  # this thread's own CPU time, however loaded the machine
        pass
    done.set()
    leave.wait()  # alive (its clock readable) until the test has read it


def test_a_threads_cpu_time_is_read_from_its_clock_and_an_ended_thread_is_left_out(serving) -> None:
    started, go, done, leave = (threading.Event() for _ in range(4))
    t = threading.Thread(target=_busy, args=(0.05, started, go, done, leave))
    t.start()
    started.wait()
    before = serving.threads_cpu_s([t])
    assert set(before) == {t.ident}
    go.set()
    assert done.wait(30.0)
    used = serving.cpu_between(before, serving.threads_cpu_s([t]))
    leave.set()
    t.join()
    assert 0.05 <= used < 5.0  # the 50 ms it spun (and little else: it waited on events the rest of the time)
    assert serving.threads_cpu_s([t]) == {}  # ended: its clock is gone


def test_cpu_between_counts_a_new_thread_whole_and_never_goes_negative(serving) -> None:
    assert serving.cpu_between({1: 2.0, 2: 5.0}, {1: 2.5, 3: 0.25}) == pytest.approx(0.75)  # 2 ended, 3 is new
    assert serving.cpu_between({1: 2.0}, {1: 1.0}) == 0.0  # an ident reused by a younger thread: not negative


class FakeRun:
    """FAKE StreamRun: records which engine ran which calls; an incremental one has background threads whose CPU
    time the test sets (no kernels, no GPU)."""

    log: ClassVar[list[tuple[str, int, int]]] = []
    clocks: ClassVar[dict[str, float]] = {}

    def __init__(self, engine, w, tensors, stream, out, dry, watchdog_ms) -> None:
        self.engine = engine
        self.inc = object() if engine.startswith("incremental") else None
        self.charged_s = 0.0
        FakeRun.clocks.setdefault(engine, 0.0)

    def background_cpu(self) -> dict[int, float]:
        return {1: FakeRun.clocks[self.engine]} if self.inc is not None else {}

    def run(self, lo: int, hi: int) -> None:
        FakeRun.log.append((self.engine, lo, hi))
        if self.engine == "untuned":  # while the untuned engine runs, the incremental one's thread uses 2 ms
            FakeRun.clocks["incremental"] += 0.002

    def finish(self) -> dict[str, float]:
        return {"charged_s": self.charged_s}


def test_engines_take_chunks_in_turn_rotated_and_the_background_is_charged_to_its_owner(serving, monkeypatch) -> None:
    FakeRun.log, FakeRun.clocks = [], {}
    monkeypatch.setattr(serving, "StreamRun", FakeRun)
    monkeypatch.setattr(serving.torch, "manual_seed", lambda s: None)
    got = serving.run_interleaved(["untuned", "incremental", "pretuned"], None, [], [0] * 7, Path("."), True, 3, 0)
    assert FakeRun.log == [
        ("untuned", 0, 3), ("incremental", 0, 3), ("pretuned", 0, 3),
        ("incremental", 3, 6), ("pretuned", 3, 6), ("untuned", 3, 6),
        ("pretuned", 6, 7), ("untuned", 6, 7), ("incremental", 6, 7),
    ]  # fmt: skip
    # three untuned chunks ran while the incremental engine was not running: 3 x 2 ms charged to it, none to others
    assert got["incremental"]["charged_s"] == pytest.approx(0.006)
    assert got["untuned"]["charged_s"] == 0.0 and got["pretuned"]["charged_s"] == 0.0


class _FakeWorkload:
    """FAKE (logic only): a workload whose launch logs (bucket, BLOCK) and spins BLOCK x 20 us, no kernel."""

    def __init__(self) -> None:
        import triton

        self.jit = None
        self.configs = [triton.Config({"BLOCK": 16}, num_warps=1), triton.Config({"BLOCK": 64}, num_warps=1)]
        self.log: list[tuple[int, int]] = []

    def launch(self, k, t) -> None:
        self.log.append((t[0], k.cfg.kwargs["BLOCK"]))
        end = time.perf_counter() + k.cfg.kwargs["BLOCK"] * 20e-6
        while time.perf_counter() < end:
            pass


def test_the_stream_judge_replays_the_stream_once_per_pick_and_pairs_each_buckets_values_by_chunk(serving) -> None:
    w = _FakeWorkload()
    from tritune.decorator.triton_surface import from_triton

    small, big = (from_triton(c).id for c in w.configs)
    stream = [0, 1, 0, 2, 1, 0, 0, 2, 1, 0, 0, 0]  # chunks of 4: bucket 2 is absent from the last one
    tensors = [(0,), (1,), (2,)]
    picks = {0: [small, big], 1: [big], 2: [small, big]}
    got = serving.stream_judge(w, tensors, stream, picks, True, calls=len(stream), chunk=4)
    assert set(got) == {"0", "1", "2"}
    assert {c: len(v) for c, v in got["0"].items()} == {small: 3, big: 3}  # in all 3 chunks, one value each
    assert {c: len(v) for c, v in got["2"].items()} == {small: 2, big: 2}  # absent from one chunk: none there
    assert {c: len(v) for c, v in got["1"].items()} == {big: 3}  # its one pick, in every assignment
    replay = w.log[sum(len(v) for v in picks.values()):]  # after the warm-up launch of every pick
    assert len(replay) == 2 * len(stream)  # each chunk once per assignment (2: the most picks of a bucket)
    assert [b for b, _ in replay[:8]] == stream[:4] * 2  # a chunk, then the same chunk again
    assert {blk for b, blk in replay if b == 1} == {64}  # a bucket with one pick always runs it
    first = [blk for b, blk in replay[:4] if b == 0]
    second = [blk for b, blk in replay[4:8] if b == 0]
    assert len(set(first)) == 1 and len(set(second)) == 1 and first[0] != second[0]  # one config per pass
    # The spin makes BLOCK=64 4x slower: the pairs read it, chunk by chunk.
    ratio = serving.paired_ratio(got["0"], big, small)[0]
    assert ratio > 2.0


def test_stream_picks_take_every_engines_and_repetitions_promoted_configs_only(serving) -> None:
    kd = {"engines": {"pretuned": {"final": {"0": "A", "1": "B"}}, "incremental": {"final": {"0": "tuning:A",
                                                                                               "1": "C"}}},
          "repeats": [{"incremental": {"final": {"0": "D", "1": "?"}}, "order": ["incremental"]}]}
    assert serving.stream_picks(kd, [0, 1]) == {0: ["A", "D"], 1: ["B", "C"]}


class _FakeHeld:
    """FAKE (logic only): HeldSpans' device calls scripted: ``ahead`` answers in turn (then True), a span is the
    attempt number, and every hold and launch is logged."""

    def __init__(self, serving, ahead, **kw) -> None:
        outer = self

        class Fake(serving.HeldSpans):
            def _hold(self, ms):
                outer.log.append(("hold", ms))

            def _ahead(self):
                outer.attempt += 1
                return outer.ahead.pop(0) if outer.ahead else True

            def _record(self, i, which):
                pass

            def _sync(self):
                outer.log.append(("sync",))

            def _elapsed(self, i):
                return float(outer.attempt)

        self.log, self.ahead, self.attempt = [], list(ahead), 0
        self.spans = Fake(**kw)


def test_held_spans_rerun_a_sub_batch_whose_hold_ended_before_it_was_queued_with_the_hold_doubled(serving) -> None:
    fake = _FakeHeld(serving, [False, False, True], sub=3, hold_ms=1.0)
    ran = []
    fns = [lambda i=i: ran.append(i) for i in range(5)]  # sub-batches [0, 1, 2] and [3, 4]
    ms = fake.spans.run(fns)
    assert ran == [0, 1, 2] * 3 + [3, 4]  # the first sub-batch queued 3 times, until the hold outlasted it
    assert [x for x in fake.log if x[0] == "hold"] == [("hold", 1.0), ("hold", 2.0), ("hold", 4.0), ("hold", 4.0)]
    assert ms == [3.0, 3.0, 3.0, 4.0, 4.0]  # the spans of the run that was ahead, not of the runs before it
    assert fake.spans.stats() == {"sub": 3, "hold_ms": 4.0, "sub_batches": 2, "redone": 2, "behind": 0}


def test_held_spans_keep_and_count_a_sub_batch_never_ahead_and_cap_the_hold(serving) -> None:
    fake = _FakeHeld(serving, [False] * 10, sub=2, hold_ms=1.0, tries=3, max_hold_ms=3.0)
    ms = fake.spans.run([lambda: None] * 2)
    assert [x[1] for x in fake.log if x[0] == "hold"] == [1.0, 2.0, 3.0]  # doubled, capped at 3
    assert ms == [3.0, 3.0] and fake.spans.behind == 1 and fake.spans.redone == 2


def test_the_stream_judge_times_device_calls_through_its_spans(serving) -> None:
    """With a spans object (here the FAKE), the judge's values are its spans, not the host clock's."""
    w = _FakeWorkload()
    from tritune.decorator.triton_surface import from_triton

    small, big = (from_triton(c).id for c in w.configs)
    fake = _FakeHeld(serving, [], sub=4)
    stats = {}
    got = serving.stream_judge(w, [(0,), (1,)], [0, 1, 0, 1], {0: [small, big], 1: [big]}, True, calls=4,
                               chunk=4, spans=fake.spans, stats=stats)  # fmt: skip
    # passes 1 and 2 (the FAKE span is the pass's number); bucket 1's one pick runs in both: their median
    assert got == {"0": {small: [1.0], big: [2.0]}, "1": {big: [serving.pct([1.0, 2.0], 0.5)]}}
    assert stats["sub_batches"] == 2 and stats["redone"] == 0


def test_the_stream_judge_starts_no_chunk_past_its_deadline_and_keeps_the_chunks_it_timed_paired(serving) -> None:
    w = _FakeWorkload()
    from tritune.decorator.triton_surface import from_triton

    small, big = (from_triton(c).id for c in w.configs)
    stream = [0, 1] * 6  # 3 chunks of 4
    stats: dict = {}
    got = serving.stream_judge(w, [(0,), (1,)], stream, {0: [small, big], 1: [big]}, True, calls=len(stream),
                               chunk=4, stats=stats, deadline_s=0.0)  # fmt: skip
    assert stats["chunks"] == 1 and "cut_at_s" in stats  # the first chunk runs; none starts after the deadline
    assert {c: len(v) for c, v in got["0"].items()} == {small: 1, big: 1}  # still paired: one value each
    full: dict = {}
    serving.stream_judge(w, [(0,), (1,)], stream, {0: [small, big], 1: [big]}, True, calls=len(stream), chunk=4,
                         stats=full)  # fmt: skip
    assert full["chunks"] == 3 and "cut_at_s" not in full


def test_held_spans_launch_the_sleep_once_before_timing_it_for_the_calibration(serving, monkeypatch) -> None:
    """FAKE torch (logic only): the calibration's timed sleep comes after an untimed one and a synchronize, so the
    sleep kernel's first load in a process is not timed as sleep (on an H100 that read 7.03e4 cycles per ms instead of ~2e6)."""
    log: list[tuple] = []

    class Event:
        def __init__(self, enable_timing: bool = False) -> None:
            self.name = f"e{sum(1 for x in log if x[0] == 'new')}"
            log.append(("new", self.name))

        def record(self) -> None:
            log.append(("record", self.name))

        def synchronize(self) -> None:
            log.append(("event-sync", self.name))

        def elapsed_time(self, other) -> float:
            return 1.0  # 2,000,000 cycles in 1 ms: a 2 GHz clock

        def query(self) -> bool:
            return False

    class Cuda:
        @staticmethod
        def _sleep(cycles: int) -> None:
            log.append(("sleep", cycles))

        @staticmethod
        def synchronize() -> None:
            log.append(("sync",))

    class Torch:
        cuda = Cuda

    Cuda.Event = Event  # type: ignore[attr-defined]

    monkeypatch.setattr(serving, "torch", Torch)
    monkeypatch.setattr(serving.GpuHold, "_cycles_per_ms", None)  # measured afresh with the FAKE device
    spans = serving.HeldSpans(sub=2, hold_ms=1.0)
    spans._hold(1.0)
    sleeps = [i for i, x in enumerate(log) if x[0] == "sleep"]
    first_record = next(i for i, x in enumerate(log) if x[0] == "record")
    assert sleeps[0] < first_record and ("sync",) in log[sleeps[0]:first_record]  # warmed, then timed
    assert log[sleeps[1]] == ("sleep", 2_000_000) and sleeps[1] > first_record  # the timed one, between a and b
    assert serving.GpuHold._cycles_per_ms == 2_000_000 and log[sleeps[2]] == ("sleep", 2_000_000)  # 1 ms at 2 GHz
