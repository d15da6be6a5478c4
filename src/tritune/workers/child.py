"""The worker's side of :class:`tritune.workers.WorkerService`.

A worker answers tasks ``(id, payload)`` with ``("done", id, result)``, or ``("raised", id, exception)``
and then exits (a raising task may leave the process broken: a CUDA context after an illegal address).
``None`` or a closed socket ends it. A spawned worker is ``python -P -m tritune.workers FD FACTORY LIFELINE...``
(:mod:`tritune.workers.lifeline`: it dies with its caller): it receives ``init``, builds its handler with
``FACTORY(init)`` (``"package.module:function"``), then says ``("ready",)`` or ``("fatal", exception)``.
"""

from __future__ import annotations

import importlib
import os
import pickle
from collections.abc import Callable
from multiprocessing.connection import Connection


def portable(e: BaseException) -> BaseException:
    """``e`` if it pickles (and unpickles), else a RuntimeError that carries its type and message."""
    try:
        pickle.loads(pickle.dumps(e))
        return e
    except Exception:
        return RuntimeError(f"{type(e).__name__}: {e}")


def quiet_stdout() -> None:
    """Triton prints a failing ptxas's whole PTX to stdout; the task's result carries the reason instead."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


def serve(conn: Connection, handler: Callable[[object], object]) -> None:
    """Answer tasks until ``None``, a closed socket, or a task that raised."""
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        task_id, payload = msg
        try:
            result = handler(payload)
        except BaseException as e:
            _send(conn, ("raised", task_id, portable(e)))
            return
        if not _send(conn, ("done", task_id, result)):
            return


def _send(conn: Connection, msg: object) -> bool:
    try:
        conn.send(msg)
    except (OSError, EOFError):  # the service is gone (or closed us): end quietly, print nothing
        return False
    return True


def resolve(spec: str) -> Callable[..., object]:
    module, _, name = spec.partition(":")
    fn = getattr(importlib.import_module(module), name)
    if not callable(fn):
        raise TypeError(f"{spec} is not callable")
    return fn  # type: ignore[no-any-return]


def main(argv: list[str]) -> int:
    from tritune.workers.lifeline import Lifeline, hold

    if len(argv) > 2:
        hold(Lifeline.from_argv(argv[2:5]))
    conn = Connection(int(argv[0]))
    quiet_stdout()
    try:
        init = conn.recv()
        handler = resolve(argv[1])(init)
    except (EOFError, OSError):
        return 0
    except BaseException as e:
        _send(conn, ("fatal", portable(e)))
        return 1
    if _send(conn, ("ready",)):
        serve(conn, handler)  # type: ignore[arg-type]
    return 0

