"""Workers die with their caller, however the caller ends, and start without the caller's working directory.

Two mechanisms, because neither covers every case alone:

* **The parent-death signal** (Linux ``prctl(PR_SET_PDEATHSIG, SIGKILL)``): the kernel kills the worker the
  moment the thread that started it ends, even when the caller was SIGKILLed. It is tied to that *thread*, not
  to the process, so it is set only for workers started from the main thread (which lives as long as the
  process); a worker started from another thread would die whenever that thread ended.
* **A lifeline pipe**: each process that starts workers makes one pipe and keeps its write end, which no other
  process holds (it is closed in every fork and never inherited across ``exec``). Every worker watches the read
  end in a thread; when the caller dies the kernel closes the write end, the worker reads end-of-file and kills
  its own process group: itself and whatever it started (``ptxas``).

Spawned workers run ``python -P`` (or, before Python 3.11, a bootstrap that drops ``sys.path[0]``): the caller's
working directory is never on their import path, so a ``json.py`` that another user left in a shared directory
never runs. They also run ``-s`` (no user site-packages) unless the caller imports from its own user site.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import sys
import threading
from dataclasses import dataclass

_PR_SET_PDEATHSIG = 1
_LOCK = threading.Lock()
#: ``(pid, read end, write end)`` of this process's lifeline; remade in a process that forked from another.
_LINE: list[tuple[int, int, int]] = []


@dataclass(frozen=True)
class Lifeline:
    """What a worker needs to die with its caller: the pipe's read end, the caller's pid, and whether the
    parent-death signal is safe to set (the worker was started from the caller's main thread)."""

    fd: int
    parent: int
    pdeathsig: bool

    def argv(self) -> list[str]:
        return [str(self.fd), str(self.parent), "1" if self.pdeathsig else "0"]

    @classmethod
    def from_argv(cls, argv: list[str]) -> Lifeline:
        fd, parent, pdeath = argv
        return cls(int(fd), int(parent), pdeath == "1")


def _forget_in_child() -> None:
    """After any fork: the child must not hold its parent's write end (or the parent's death would go unseen)."""
    if _LINE:
        _, _, w = _LINE.pop()
        with contextlib.suppress(OSError):
            os.close(w)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def lifeline() -> Lifeline:
    """This process's lifeline for a worker started now (the pipe is made on first use)."""
    with _LOCK:
        pid = os.getpid()
        if not _LINE or _LINE[0][0] != pid:
            _LINE.clear()
            r, w = os.pipe()  # both ends non-inheritable: only pass_fds hands the read end to a spawned worker
            _LINE.append((pid, r, w))
        fd = _LINE[0][1]
    return Lifeline(fd, pid, threading.current_thread() is threading.main_thread())


def _set_pdeathsig() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):  # no prctl: the lifeline alone
        pass


def _kill_own_group() -> None:
    """Kill this worker's process group (itself and what it started); only its own group, never the caller's."""
    me = os.getpid()
    if os.getpgrp() == me:
        with contextlib.suppress(OSError):
            os.killpg(me, signal.SIGKILL)
    os.kill(me, signal.SIGKILL)


def _watch(fd: int) -> None:
    try:
        while os.read(fd, 1):  # nobody writes: this returns only at end-of-file, when the caller is gone
            pass
    except OSError:
        pass
    _kill_own_group()


def hold(line: Lifeline) -> None:
    """In a worker, first thing: die with the caller (see the module docstring)."""
    if line.pdeathsig:
        _set_pdeathsig()
    if os.getppid() != line.parent:  # the caller died before the signal was set
        _kill_own_group()
    threading.Thread(target=_watch, args=(line.fd,), name="tritune-lifeline", daemon=True).start()


def _user_site_is_ours() -> bool:
    """Whether this process imports from its user site-packages and that folder is this user's own."""
    if sys.flags.no_user_site:
        return False
    try:
        import site

        if not site.ENABLE_USER_SITE:
            return False
        user_site = site.getusersitepackages()
        st = os.stat(user_site)
    except (OSError, AttributeError):
        return False
    if user_site not in sys.path:
        return False
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


#: ``-c`` before Python 3.11, which has no ``-P``: ``sys.path[0]`` (the working directory) is dropped before
#: anything is imported from it.
_BOOTSTRAP = (
    "import sys; del sys.path[0]; import runpy; runpy.run_module('tritune.workers', run_name='__main__', alter_sys=True)"
)


def worker_command() -> list[str]:
    """The interpreter command line of a spawned worker (its arguments follow)."""
    flags = [] if _user_site_is_ours() else ["-s"]
    if sys.version_info >= (3, 11):
        return [sys.executable, *flags, "-P", "-m", "tritune.workers"]
    return [sys.executable, *flags, "-c", _BOOTSTRAP]


def import_path(*entries: str) -> str:
    """A ``PYTHONPATH`` of ``entries`` (in order), without empty entries: an empty entry means the working
    directory (a ``PYTHONPATH=$PYTHONPATH:/x`` with nothing set before), which a worker must not import from."""
    parts = [p for e in entries for p in e.split(os.pathsep)]
    return os.pathsep.join(p for p in parts if p)
