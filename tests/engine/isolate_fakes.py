"""FAKE runners for the crash-isolation tests: they stand in for kernels that crash, hang or raise.

The config's ``MODE`` meta-parameter picks the behaviour; nothing here touches a GPU.
"""

from __future__ import annotations

import os
import time

from tritune.bench import Failure, Measurement
from tritune.engine.isolate import BenchTask
from tritune.outcome import Status


def fake_runner(task: BenchTask) -> Measurement | Failure:
    mode = task.config["kwargs"].get("MODE", "ok")
    if mode == "exit":  # like an illegal memory access taking the process down
        os._exit(77)
    if mode == "hang":  # like a kernel that never finishes
        time.sleep(3600)
    if mode == "raise":
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    if mode == "nogpu":
        from tritune.errors import TimingUnavailableError

        raise TimingUnavailableError("no CUDA GPU driver is active")
    if mode == "compile":
        return Failure(Status.COMPILE_FAILED, "fake ptxas error")
    ms = float(task.config["kwargs"].get("MS", 1.0))
    return Measurement.from_samples([ms] * 10, extra={"pid": os.getpid()})
