"""Linux process facts read from /proc, for the tests that check which processes outlive their caller."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (state first); empty when the process is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, IndexError):
        return []


def alive(pid: int) -> bool:
    """Running (a zombie, which only waits to be reaped, counts as gone)."""
    fields = _stat(pid)
    return bool(fields) and fields[0] != "Z"


def ppid(pid: int) -> int:
    """The parent's pid; -1 when the process is gone."""
    fields = _stat(pid)
    try:
        return int(fields[1])
    except (IndexError, ValueError):
        return -1


def children(pid: int) -> list[int]:
    try:
        return [int(x) for x in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except (FileNotFoundError, ValueError):
        return []
