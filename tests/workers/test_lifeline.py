"""Workers die with their caller however it ends, and never import from the caller's working directory.

Real processes, no mocks: a FAKE caller (``caller.py``) starts workers whose tasks start a ``sleep`` of their
own, and the test kills the caller. A worker started from the main thread is SIGKILLed by the kernel the
moment its caller dies (the parent-death signal), before it could end what it started: a ``ptxas`` of its
finishes its compile. Workers started from another thread end their whole process group (their lifeline),
and so does every worker when the caller unwinds as the CLI does on SIGTERM and SIGHUP.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from fakes import fake_handler

from proctree import alive
from tritune.workers import Done, Forked, Spawned, WorkerService

HERE = Path(__file__).resolve().parent
SRC = str(HERE.parents[1] / "src")


def _caller(mode: str, where: str) -> tuple[subprocess.Popen[str], list[int], list[int]]:
    """The caller, its workers' pids, and the pids of what they started."""
    proc = subprocess.Popen([sys.executable, "-P", str(HERE / "caller.py"), mode, where], stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": SRC})  # fmt: skip
    assert proc.stdout is not None
    workers = [int(p) for p in proc.stdout.readline().split()]
    started = [int(p) for p in proc.stdout.readline().split()]
    proc.stdout.close()
    assert len(workers) == 2 and len(started) == 2, (workers, started)
    return proc, workers, started


def _gone(pids: list[int], within: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [p for p in pids if alive(p)]
    for p in left:
        os.kill(p, signal.SIGKILL)
    return left


@pytest.mark.skipif(sys.platform != "linux", reason="process trees are read from /proc")
@pytest.mark.parametrize("mode", ["spawned", "forked"])
@pytest.mark.parametrize("where", ["main", "thread"])
def test_no_worker_outlives_a_caller_killed_with_sigkill(mode: str, where: str) -> None:
    proc, workers, started = _caller(mode, where)
    if where == "thread":
        time.sleep(0.3)
        assert all(alive(p) for p in workers)  # the thread that started them has ended: they work on
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert _gone(workers) == []
    if where == "thread":
        assert _gone(started) == []
    else:
        _gone(started, within=0)


@pytest.mark.skipif(sys.platform != "linux", reason="process trees are read from /proc")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_nothing_outlives_a_caller_stopped_by_sigterm_or_sighup(sig: int) -> None:
    proc, workers, started = _caller("spawned", "cli")
    proc.send_signal(sig)
    proc.wait(10)
    assert _gone(workers + started) == []


def test_a_spawned_worker_never_imports_from_the_working_directory(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    ran = tmp_path / "RAN"
    for name in ("json", "pickle", "socket", "fakes_helper", "tritune"):
        (tmp_path / f"{name}.py").write_text(f"open({str(ran)!r}, 'a').write({name!r})\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTHONPATH", os.pathsep + str(HERE))  # an empty entry too: the working directory
    with WorkerService(Spawned("fakes:make_fake_handler", None, {}), 1) as svc:
        (r,) = svc.run([(1, ("echo", 7))])
    assert isinstance(r, Done) and r.result[0] == 7  # type: ignore[index]
    assert not ran.exists(), ran.read_text()


def test_a_forked_worker_works_and_ends_with_the_service() -> None:
    with WorkerService(Forked(fake_handler), 1) as svc:
        (r,) = svc.run([(1, ("echo", 3))])
        pid = svc._workers[0].pid
    assert isinstance(r, Done) and r.result == (3, pid)
    assert _gone([pid]) == []
