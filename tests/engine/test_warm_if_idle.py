"""The GPU warm-up before a tuning runs only when tritune has not timed on the GPU within the last second.

The timer here is a FAKE that records ``warm_device`` calls: what is under test is when the warm-up runs."""

from __future__ import annotations

from tritune.engine import timing as job


class _FakeTimer:
    def __init__(self) -> None:
        self.warmed: list[float] = []

    def warm_device(self, seconds: float) -> None:
        self.warmed.append(seconds)


def test_warms_when_idle_and_not_right_after_a_timing(monkeypatch) -> None:
    clock = [100.0]
    monkeypatch.setattr(job.time, "monotonic", lambda: clock[0])
    monkeypatch.setattr(job, "_last_busy", [float("-inf")])
    t = _FakeTimer()
    assert job.warm_if_idle(t) is True and t.warmed == [0.05]  # first tuning of the process: warm
    clock[0] += 0.3
    job.note_gpu_busy()  # a timing ended
    clock[0] += 0.5
    assert job.warm_if_idle(t) is False and t.warmed == [0.05]  # the next key's tuning, 0.5 s later: still warm
    clock[0] += job.WARM_FOR_S + 0.01
    assert job.warm_if_idle(t) is True and t.warmed == [0.05, 0.05]  # idle for longer: warm again
