"""A FAKE caller for the lifeline tests: starts workers of the service, prints their pids, then waits to be killed.

``python caller.py MODE WHERE`` with MODE ``spawned`` or ``forked`` and WHERE ``main``, ``thread`` (the workers
started from a thread that has ended by the time the pids are printed) or ``cli`` (main, with SIGTERM and
SIGHUP handled as the ``tritune`` command handles them). Each worker sleeps in a ``grandchild`` task, which
starts a ``sleep 60`` of its own. Prints the workers' pids on one line, then every other descendant's.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from pathlib import Path

HERE = str(Path(__file__).resolve().parent)
sys.path.insert(0, HERE)

from fakes import fake_handler  # noqa: E402

from tritune.cli.main import stop_signals_raise  # noqa: E402
from tritune.workers import Forked, Spawned, WorkerService  # noqa: E402
from tritune.workers.procs import descendants  # noqa: E402


def start(mode: str) -> WorkerService:
    how = Forked(fake_handler) if mode == "forked" else Spawned("fakes:make_fake_handler", None, {"PYTHONPATH": HERE})
    svc = WorkerService(how, 2)
    svc.submit(1, ("grandchild", None))
    svc.submit(2, ("grandchild", None))
    deadline = time.monotonic() + 30
    while len(descendants(os.getpid())) < 4 and time.monotonic() < deadline:  # 2 workers, 2 sleeps
        svc.results(wait_s=0.05)  # (a spawned worker gets its task once it said it is ready)
    return svc


def main() -> None:
    mode, where = sys.argv[1], sys.argv[2]
    held: list[WorkerService] = []
    if where == "thread":
        t = threading.Thread(target=lambda: held.append(start(mode)))
        t.start()
        t.join()
    else:
        held.append(start(mode))
    if where == "cli":  # as a shell starts a command: under nohup (SIGHUP ignored, inherited) tritune keeps it so
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
    scope = stop_signals_raise() if where == "cli" else contextlib.nullcontext()
    with scope, held[0]:
        workers = [w.pid for w in held[0]._workers]
        print(" ".join(map(str, workers)), flush=True)
        print(" ".join(str(p) for p in descendants(os.getpid()) if p not in workers), flush=True)
        time.sleep(120)


if __name__ == "__main__":
    main()
