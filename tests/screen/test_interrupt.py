"""Ctrl-C during ``tritune screen`` stops every compile worker, and nothing is printed afterwards.

A real ``python -m tritune screen`` with two workers compiling ``mm_slow`` (ptxas runs for seconds on its
big tile, from an empty Triton cache) gets SIGINT, as a terminal's Ctrl-C sends it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tritune.workers.procs import descendants

from .conftest import WORKLOADS

SRC = Path(__file__).resolve().parents[2] / "src"


def _compiling(pid: int) -> bool:
    """``pid`` is a ptxas at work on a candidate (not the ``ptxas --version`` a worker runs as it starts)."""
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return bool(cmd) and b"ptxas" in cmd[0].rsplit(b"/", 1)[-1] and b"--version" not in cmd


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.slow
@pytest.mark.long  # a real screen in a subprocess, interrupted once its workers run
def test_ctrl_c_stops_every_worker_and_prints_nothing_afterwards(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")])
    proc = subprocess.Popen(
        [sys.executable, "-m", "tritune", "screen", str(WORKLOADS), "--workload", "mm_slow", "--jobs", "2"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    workers: list[int] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        workers = descendants(proc.pid)
        if any(_compiling(p) for p in workers):  # a worker is in the middle of a candidate's ptxas
            break
        time.sleep(0.05)
    assert proc.poll() is None and any(_compiling(p) for p in workers), "no compile in flight to interrupt"
    proc.send_signal(signal.SIGINT)
    t = time.monotonic()
    # communicate() returns only once every holder of the pipes is gone: an orphaned worker would keep them.
    _out, err = proc.communicate(timeout=60)
    assert time.monotonic() - t < 5, "a worker outlived the interrupted screen"
    assert proc.returncode == 130
    assert err.strip().splitlines()[-1] == "tritune: interrupted"
    assert "Traceback" not in err and "BrokenPipeError" not in err
    time.sleep(1.0)
    assert not [p for p in workers if _alive(p)]
