"""The worker pool: same verdicts as in-process, per-key specialization, and a timeout that really kills ptxas."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tritune.outcome import Status
from tritune.screen import screen
from tritune.screen.pool import CompilePool, Task
from tritune.screen.targets import get_target

from .conftest import WORKLOADS


def _view(result):
    return [
        [(c.config.id, c.status.value, c.extra.get("registers"), c.extra.get("shared")) for c in w.candidates]
        for w in result.workloads
    ]


def test_pool_agrees_with_in_process_and_keeps_keys_apart(wl) -> None:
    pooled = screen(WORKLOADS, "sm90", name="scale", jobs=2)
    inproc = screen(wl["scale"], "sm90", jobs=1)
    assert _view(pooled) == _view(inproc)
    assert pooled.command == "screen" and [w.key for w in pooled.workloads] == [{"n": 4096}, {"n": 4097}]
    statuses = [c.status for c in pooled.workloads[0].candidates]
    assert statuses == [Status.FITS, Status.FITS, Status.ILLEGAL, Status.ILLEGAL]
    # n=4096 is divisible by 16 and n=4097 is not: the JIT compiles different binaries, and so does the screen.
    h = [w.candidates[0].extra["hash"] for w in pooled.workloads]
    assert h[0] != h[1]


def test_a_workload_object_without_a_file_needs_jobs_1(wl) -> None:
    import dataclasses

    from tritune.errors import WorkloadError

    clone = dataclasses.replace(wl["scale"])  # not a module-level object of any file
    with pytest.raises(WorkloadError, match="jobs=1"):
        screen(clone, "sm90", jobs=2)


@pytest.mark.slow
@pytest.mark.long  # waits out a compile timeout; test_compile.py's jobs=1 timeout stays in the test command
def test_timeout_kills_worker_and_ptxas_and_the_rest_goes_on(wl, fresh_cache) -> None:
    w = wl["mm_slow"]
    fast, slow = w.candidates()
    pool = CompilePool(str(WORKLOADS), "mm_slow", get_target("sm90"), jobs=1)
    got = pool.run([Task(0, w.keys[0], slow), Task(1, w.keys[0], fast)], timeout=6.0)
    assert got[0].status is Status.COMPILE_TIMEOUT and "6 s timeout" in got[0].reason
    assert got[1].status is Status.FITS and got[1].extra["registers"] > 0
    assert len(pool.killed) == 1 and pool.restarts == 1
    # SIGKILL is delivered at once, but the orphaned ptxas is reaped by whoever adopts it: allow a moment
    deadline = time.monotonic() + 5.0
    while _processes_in_group(pool.killed[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _processes_in_group(pool.killed[0])


def _processes_in_group(pgid: int) -> list[int]:
    """Live processes of group ``pgid`` (a zombie, killed and not yet reaped by its adopter, is not one)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if os.getpgid(int(entry.name)) == pgid:
                    state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
                    if state != "Z":
                        out.append(int(entry.name))
            except (OSError, IndexError):
                continue
    return out


@pytest.mark.slow
@pytest.mark.long  # runs ptxas on a block too big to launch, in two workers
def test_gate_false_reaches_the_workers(wl, fresh_cache) -> None:
    """``gate=False`` with jobs > 1 runs ptxas for a block that cannot launch (the flag was once lost)."""
    gated = screen(WORKLOADS, "sm90", name="mm_too_big", jobs=2)
    ungated = screen(WORKLOADS, "sm90", name="mm_too_big", jobs=2, gate=False)
    (g,) = gated.workloads[0].candidates
    (u,) = ungated.workloads[0].candidates
    assert g.status is Status.ILLEGAL and g.extra["stage"] == "llir"
    assert u.status is Status.ILLEGAL and u.extra["stage"] == "cubin" and u.extra["registers"] > 0
