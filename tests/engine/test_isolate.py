"""Crash isolation on CPU, with FAKE runners (tests/engine/isolate_fakes.py) that exit, hang or raise."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from tritune.bench import Failure, Measurement
from tritune.config import Config
from tritune.engine.isolate import BenchTask, IsolatedBench, resolve_runner
from tritune.engine.race import RaceOptions, race
from tritune.errors import TimingUnavailableError
from tritune.outcome import Status

FAKES = f"{Path(__file__).parent / 'isolate_fakes.py'}:fake_runner"


def _task(mode: str, ms: float = 1.0) -> BenchTask:
    return BenchTask.of("unused.py", "fake", {"n": 1}, Config({"MODE": mode, "MS": ms}), 0.01)


def _pid(r: Measurement | Failure) -> int:
    assert isinstance(r, Measurement)
    return int(r.extra["pid"])


def test_task_is_plain_picklable_data() -> None:
    t = _task("ok")
    assert pickle.loads(pickle.dumps(t)) == t
    assert t.config_obj == Config({"MODE": "ok", "MS": 1.0})


@pytest.mark.long  # waits out a real hang's 2-second timeout and restarts workers
def test_worker_is_replaced_after_crash_hang_and_error() -> None:
    with IsolatedBench(FAKES, timeout_s=2.0) as iso:
        first = iso.run(_task("ok", 2.0))
        assert isinstance(first, Measurement) and first.median_ms == 2.0
        pid0 = _pid(first)
        assert _pid(iso.run(_task("ok"))) == pid0  # one worker serves many tasks

        crashed = iso.run(_task("exit"))
        assert isinstance(crashed, Failure) and crashed.status is Status.LAUNCH_FAILED
        assert "exit code 77" in crashed.reason and "MODE='exit'" in crashed.reason
        pid1 = _pid(iso.run(_task("ok")))
        assert pid1 != pid0 and iso.restarts == 1

        hung = iso.run(_task("hang"), timeout_s=1.0)
        assert (
            isinstance(hung, Failure)
            and hung.status is Status.LAUNCH_FAILED
            and "no result after 1 s" in hung.reason
        )
        pid2 = _pid(iso.run(_task("ok")))
        assert pid2 not in (pid0, pid1) and iso.restarts == 2

        raised = iso.run(_task("raise"))
        assert isinstance(raised, Failure) and "illegal memory access" in raised.reason
        assert iso.restarts == 3

        compile_failed = iso.run(_task("compile"))  # a runner's own Failure passes through, worker kept
        assert compile_failed == Failure(Status.COMPILE_FAILED, "fake ptxas error") and iso.restarts == 3

        with pytest.raises(TimingUnavailableError):
            iso.run(_task("nogpu"))


def test_race_goes_on_through_isolated_crashes() -> None:
    configs = [
        Config({"MODE": m, "MS": ms}) for m, ms in [("ok", 1.0), ("exit", 0.5), ("ok", 3.0), ("raise", 0.1)]
    ]
    with IsolatedBench(FAKES, timeout_s=5.0) as iso:
        res = race(configs, iso.measure_for("unused.py", "fake", {"n": 1}), RaceOptions())
    assert res.winner == configs[0]
    assert res.outcome(configs[1]).status is Status.LAUNCH_FAILED
    assert res.outcome(configs[3]).status is Status.LAUNCH_FAILED
    assert res.outcome(configs[2]).eliminated_round == 0


def test_bad_runner_specs() -> None:
    with pytest.raises(ValueError, match="module:function"):
        resolve_runner("no_colon")
    with pytest.raises(ValueError, match="no function"):
        resolve_runner(f"{Path(__file__).parent / 'isolate_fakes.py'}:missing")
    assert callable(resolve_runner("tritune.engine.isolate:gpu_runner"))


def test_gpu_runner_says_why_it_cannot_time_here(monkeypatch: pytest.MonkeyPatch) -> None:
    from tritune.engine.isolate import gpu_runner

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    with pytest.raises(TimingUnavailableError, match="cannot time on a GPU"):
        gpu_runner(_task("ok"))


@pytest.mark.gpu
def test_gpu_runner_times_gelu_in_a_worker() -> None:
    from tritune.device import gpu_unavailable_reason

    reason = gpu_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    gelu = Path(__file__).resolve().parents[2] / "examples" / "gelu.py"
    with IsolatedBench(timeout_s=120.0) as iso:
        r = iso.run(BenchTask.of(gelu, "gelu", {"n": 1 << 20}, Config({"BLOCK": 1024}, num_warps=4), 0.05))
    assert isinstance(r, Measurement) and r.median_ms > 0
