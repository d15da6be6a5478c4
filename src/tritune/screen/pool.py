"""Screen candidates of one workload file in parallel, on the worker service (:mod:`tritune.workers`).

Workers are spawned (``python -m tritune.workers``), never forked: they rebuild the workload by
importing its file (workloads hold lambdas, which do not pickle), the caller's ``__main__`` is never
re-imported (a script without an ``if __name__ == "__main__"`` guard can call ``screen()``), and they
never see ``TRITON_INTERPRET``, so a workload file written for the interpreter still compiles for the
target. A compile past the timeout is killed with its ``ptxas`` (the worker's whole process group) and
gets ``compile_timeout``; a worker that dies costs only its candidate (``compile_failed``).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune import errors
from tritune.config import Config
from tritune.outcome import Status
from tritune.results import CandidateResult
from tritune.screen.candidate import FIELDS
from tritune.screen.targets import Target
from tritune.workers import Done, Lost, Spawned, WorkerService


@dataclass(frozen=True)
class Task:
    """One compile: the candidate ``config`` of the pool's workload at ``key``."""

    id: int
    key: Mapping[str, Any]
    config: Config


class CompilePool:
    """``jobs`` worker processes screening candidates of one workload file for one target."""

    def __init__(self, path: str, name: str, target: Target, jobs: int, gate: bool = True) -> None:
        self.path = str(path)
        self.name = name
        self.target = target
        self.gate = gate
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
        init = (self.path, self.name, json.dumps(self.target.to_json()), self.gate)
        start = Spawned("tritune.screen.worker:handler", init, {"TRITON_INTERPRET": None})
        by_id = {t.id: t for t in tasks}
        results: dict[int, CandidateResult] = {}
        svc = WorkerService(start, self.jobs, timeout=timeout, name="compile worker",
                            start_error=errors.WorkloadLoadError)  # fmt: skip
        with svc:
            payloads = {t.id: (dict(t.key), t.config.to_json()) for t in tasks}
            for end in svc.run(payloads.items()):
                task = by_id[int(end.id)]  # type: ignore[call-overload]
                result = pool_result(task, end, timeout)
                results[task.id] = result
                if on_result is not None:
                    on_result(task, result)
        self.restarts, self.killed = svc.restarts, svc.killed
        return results


def pool_result(task: Task, end: Done | Lost, timeout: float | None) -> CandidateResult:
    """The candidate's result from a worker task's end: its own, or compile_timeout/compile_failed."""
    if isinstance(end, Done):
        return CandidateResult.from_json(end.result)  # type: ignore[arg-type]
    extra: dict[str, Any] = dict.fromkeys(FIELDS)
    extra["warnings"] = []
    cid = task.config.id
    if end.why == "timeout":
        extra["compile_s"] = round(timeout or 0.0, 3)
        why = f"{cid}: the compile ran past the {timeout:g} s timeout; its worker and ptxas were killed"
        return CandidateResult(task.config, Status.COMPILE_TIMEOUT, why, extra)
    return CandidateResult(task.config, Status.COMPILE_FAILED, f"{cid}: {end.reason}", extra)
