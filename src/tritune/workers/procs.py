"""Process trees on Linux: the children of a process (from ``/proc``), and killing a tree or a group."""

from __future__ import annotations

import contextlib
import os
import signal


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (every thread's), from ``/proc/<pid>/task/*/children``."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                out += [int(x) for x in f.read().split()]
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, deepest last."""
    out: list[int] = []
    todo = children(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo += children(p)
    return out


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every process below it, the descendants first."""
    for p in (*reversed(descendants(pid)), pid):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(p, signal.SIGKILL)


def kill_group(pgid: int) -> None:
    """SIGKILL the process group ``pgid`` (a worker and the ``ptxas`` it started), and any stray descendant."""
    kill_tree(pgid)  # a child that has not joined the group yet, or left it
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
