"""A pool of compile worker processes, each of which can be killed with its ``ptxas`` when a compile runs too long.

``concurrent.futures`` cannot stop one running task, and a runaway ``ptxas`` is a grandchild process.
Each worker here is a ``python -m tritune.screen.worker`` process in a session of its own; when its task
passes the timeout, the pool kills the whole process group (worker and ``ptxas``) and starts a
replacement. Plain subprocesses rather than ``multiprocessing`` also mean the caller's ``__main__`` is
never re-imported, so a script without an ``if __name__ == "__main__"`` guard can call ``screen()``. Workers rebuild
the workload by importing its file (workloads hold lambdas, which do not pickle) and never see
``TRITON_INTERPRET``, so a workload file written for the interpreter still compiles for the target.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

from tritune import errors
from tritune.config import Config
from tritune.outcome import Status
from tritune.results import CandidateResult
from tritune.screen.targets import Target


@dataclass(frozen=True)
class Task:
    """One compile: the candidate ``config`` of the pool's workload at ``key``."""

    id: int
    key: dict[str, Any]
    config: Config


class _Worker:
    """One ``python -m tritune.screen.worker`` process: tasks in on stdin, results out on its own pipe."""

    def __init__(self, path: str, name: str, target: Target, gate: bool = True) -> None:
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env.pop("TRITON_INTERPRET", None)  # workers compile for a GPU target; the interpreter cannot
        src = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "tritune.screen.worker",
                    str(write_fd),
                    path,
                    name,
                    json.dumps(target.to_json()),
                    *(() if gate else ("nogate",)),
                ],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,  # Triton prints failing PTX to stdout; the reason carries the error
                pass_fds=(write_fd,),
                start_new_session=True,  # its own process group: killed with its ptxas in one call
                env=env,
                text=True,
            )
        finally:
            os.close(write_fd)
        self.fd = read_fd
        self._buf = b""
        self.ready = False
        self.task: Task | None = None
        self.sent_at = 0.0

    def send(self, task: Task) -> None:
        self.task = task
        self.sent_at = time.monotonic()
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps([task.id, task.key, task.config.to_json()]) + "\n")
        self.proc.stdin.flush()

    def read(self) -> list[Any] | None:
        """Messages that have arrived in full; None when the worker closed its pipe (it exited)."""
        chunk = os.read(self.fd, 1 << 16)
        if not chunk:
            return None
        self._buf += chunk
        *lines, self._buf = self._buf.split(b"\n")
        return [json.loads(line) for line in lines if line.strip()]

    def kill(self) -> None:
        """Kill the worker's process group: the worker and the ptxas it started, nothing else."""
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._close()

    def _close(self) -> None:
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        with contextlib.suppress(OSError, ValueError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)
        self.fd = -1


def _stop_all(workers: Sequence[_Worker], grace_s: float = 10.0) -> None:
    """Stop every worker at once, without waiting for them: close all their inputs (each then exits), and
    reap them on a background thread, killing any still alive after ``grace_s``. A Python interpreter's
    exit takes about 0.8 s; stopping 16 workers one after another cost 13 s before the session could go on."""
    for w in workers:
        with contextlib.suppress(OSError, ValueError):
            assert w.proc.stdin is not None
            w.proc.stdin.close()

    def reap() -> None:
        deadline = time.monotonic() + grace_s
        for w in workers:
            try:
                w.proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                w.kill()
                continue
            w._close()

    threading.Thread(target=reap, name="tritune-reap-compile-workers", daemon=True).start()


class CompilePool:
    """``jobs`` worker processes screening candidates of one workload file for one target."""

    def __init__(self, path: str, name: str, target: Target, jobs: int, gate: bool = True) -> None:
        self.gate = gate
        self.path = str(path)
        self.name = name
        self.target = target
        self.jobs = max(1, int(jobs))
        self.restarts = 0
        self.killed: list[int] = []  #: process-group ids killed for running past the timeout

    def run(
        self,
        tasks: Sequence[Task],
        timeout: float | None,
        on_result: Callable[[Task, CandidateResult], None] | None = None,
    ) -> dict[int, CandidateResult]:
        """Screen every task; a task past ``timeout`` seconds is killed and gets ``compile_timeout``."""
        pending = list(tasks)
        pending.reverse()
        results: dict[int, CandidateResult] = {}
        workers: list[_Worker] = []

        def finish(task: Task, result: CandidateResult) -> None:
            results[task.id] = result
            if on_result is not None:
                on_result(task, result)

        try:
            workers = [self._spawn() for _ in range(min(self.jobs, len(pending)))]
            while pending or any(w.task is not None for w in workers):
                for w in workers:
                    if w.ready and w.task is None and pending:
                        w.send(pending.pop())
                wait_s = 1.0
                if timeout is not None:
                    now = time.monotonic()
                    for w in workers:
                        if w.task is not None:
                            wait_s = min(wait_s, max(0.0, w.sent_at + timeout - now))
                ready = wait([w.fd for w in workers], timeout=wait_s)
                for w in list(workers):
                    if w.fd in ready:
                        self._receive(w, workers, finish, pending)
                if timeout is not None:
                    now = time.monotonic()
                    for w in list(workers):
                        if w.task is not None and now - w.sent_at > timeout:
                            task = w.task
                            self.killed.append(w.proc.pid)
                            w.kill()
                            finish(task, _timeout_result(task, timeout))
                            self._replace(w, workers, pending)
        finally:
            _stop_all(workers)
        return results

    def _spawn(self) -> _Worker:
        return _Worker(self.path, self.name, self.target, self.gate)

    def _replace(self, old: _Worker, workers: list[_Worker], pending: list[Task]) -> None:
        workers.remove(old)
        busy = sum(1 for w in workers if w.task is not None)
        if pending and len(workers) < min(self.jobs, len(pending) + busy):
            self.restarts += 1
            workers.append(self._spawn())

    def _receive(
        self,
        w: _Worker,
        workers: list[_Worker],
        finish: Callable[[Task, CandidateResult], None],
        pending: list[Task],
    ) -> None:
        msgs = w.read()
        if msgs is None:
            code = w.proc.wait()
            w.kill()
            if w.task is not None:
                finish(w.task, _crash_result(w.task, f"the compile worker died (exit code {code})"))
            elif not w.ready:
                raise errors.WorkloadLoadError(
                    f"{self.path}: a compile worker died while loading workload {self.name!r} (exit code {code})"
                )
            self._replace(w, workers, pending)
            return
        for msg in msgs:
            kind = msg[0]
            if kind == "ready":
                w.ready = True
            elif kind == "done":
                _, task_id, data = msg
                task = w.task
                w.task = None
                assert task is not None and task.id == task_id
                finish(task, CandidateResult.from_json(data))
            elif kind == "fatal":
                _, cls_name, message = msg
                cls = getattr(errors, cls_name, errors.TrituneError)
                raise cls(message)
            else:  # "crash": an unexpected exception in the worker, which then exits
                _, cls_name, message = msg
                task = w.task
                w.kill()
                if task is None:
                    raise errors.WorkloadLoadError(
                        f"{self.path}: a compile worker failed: {cls_name}: {message}"
                    )
                finish(task, _crash_result(task, f"{cls_name}: {message}"))
                self._replace(w, workers, pending)
                return


def _timeout_result(task: Task, timeout: float) -> CandidateResult:
    from tritune.screen.candidate import FIELDS

    extra: dict[str, Any] = dict.fromkeys(FIELDS)
    extra.update(warnings=[], compile_s=round(timeout, 3))
    return CandidateResult(
        task.config,
        Status.COMPILE_TIMEOUT,
        f"{task.config.id}: the compile ran past the {timeout:g} s timeout; its worker and ptxas were killed",
        extra,
    )


def _crash_result(task: Task, why: str) -> CandidateResult:
    from tritune.screen.candidate import FIELDS

    extra: dict[str, Any] = dict.fromkeys(FIELDS)
    extra["warnings"] = []
    return CandidateResult(task.config, Status.COMPILE_FAILED, f"{task.config.id}: {why}", extra)
