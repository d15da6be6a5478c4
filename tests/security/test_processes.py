"""``tritune screen`` run from a folder where another user planted modules, then ended every way a process ends:
no planted code runs (in the command or its workers), and no worker survives. The workload's workers never end
their work once they have loaded it (a compile that hangs; they sleep rather than spin, so the four commands
started at once share two cores)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from attacks import as_attacker, needs_attacker, plant

from proctree import alive, children, ppid

ROOT = Path(__file__).resolve().parents[2]
#: The command as its console script starts it: nothing imported from the working directory by the command itself.
CLI = [sys.executable, "-c", "import sys; sys.path.pop(0); from tritune.cli.main import main; sys.exit(main())"]
PLANTED = ("json", "pickle", "socket", "selectors", "subprocess", "typing", "signal", "threading")


def _spinning_workload(d: Path, marks: Path) -> Path:
    wl = d / "spin_workload.py"
    wl.write_text(
        "import os, sys\n"
        "if 'TRITON_INTERPRET' not in os.environ:  # a screen worker (the command itself runs the interpreter)\n"
        f"    open(os.path.join({str(marks)!r}, f'worker-{{os.getpid()}}'), 'w').close()\n"
        "    import time\n"
        "    while True:\n"
        "        time.sleep(1)\n"
        f"sys.path.insert(0, {str(ROOT / 'examples')!r})\n"
        "from gelu import gelu  # noqa: E402,F401\n"
    )
    return wl


@needs_attacker
@pytest.mark.long  # four CLI runs and their eight workers, each signalled
@pytest.mark.skipif(sys.platform != "linux", reason="process trees are read from /proc")
def test_screen_in_a_planted_folder_runs_no_planted_code_and_leaves_no_worker(shared: Path, tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    for name in PLANTED:  # the attacker's modules, where the victim will run the command
        code = f"open({str(marks / 'PLANTED')!r} + '-' + {name!r}, 'w').close()\n"
        assert as_attacker(plant, str(shared / f"{name}.py"), code.encode())
    wl = _spinning_workload(tmp_path, marks)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "TRITON_INTERPRET": "1"}
    runs: dict[str, subprocess.Popen[bytes]] = {}
    for how in ("SIGTERM", "SIGHUP", "SIGKILL", "timeout"):
        cmd = [*CLI, "screen", str(wl), "--key", "n=64", "--jobs", "2", "--quiet"]
        if how == "timeout":
            cmd = ["timeout", "300", *cmd]
        runs[how] = subprocess.Popen(cmd, cwd=shared, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        workers: dict[str, list[int]] = {}
        while time.monotonic() < deadline:
            pids = [int(p.name.split("-")[1]) for p in marks.glob("worker-*")]
            for how, proc in runs.items():
                parent = proc.pid if how != "timeout" else next((p for p in children(proc.pid)), -1)
                workers[how] = [p for p in pids if ppid(p) == parent]
            if all(len(w) == 2 for w in workers.values()):
                break
            time.sleep(0.1)
        assert all(len(w) == 2 for w in workers.values()), workers
        for how, proc in runs.items():
            proc.send_signal({"SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP, "SIGKILL": signal.SIGKILL,
                              "timeout": signal.SIGTERM}[how])  # fmt: skip  # timeout passes it on to the command
        for how, proc in runs.items():
            _, err = proc.communicate(timeout=60)
            assert b"Traceback" not in err, (how, err.decode())
        deadline = time.monotonic() + 10
        every = [p for w in workers.values() for p in w]
        while any(alive(p) for p in every) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = {how: [p for p in w if alive(p)] for how, w in workers.items()}
        assert not any(survivors.values()), survivors
        assert not list(marks.glob("PLANTED*")), "planted code ran"
    finally:
        for proc in runs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        for p in marks.glob("worker-*"):
            pid = int(p.name.split("-")[1])
            if alive(pid):
                os.kill(pid, signal.SIGKILL)

