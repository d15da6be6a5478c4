"""Run tasks in worker processes: timeouts, crash retry, kill-the-tree and shutdown, written once.

Each worker is one process in a process group of its own, with ``ptxas`` and whatever else it starts:
a task past its timeout kills the whole group at once, and so does an interrupt (Ctrl-C) or any exception
while the service is open, so no worker outlives its caller or prints into the shell afterwards. A caller that
dies without closing the service (SIGKILL, or a signal it does not handle) takes its workers with it
(:mod:`tritune.workers.lifeline`). A worker
takes one task at a time, so a worker that dies (a compiler crash, an illegal address) costs exactly its
task, which is tried again ``retries`` times in a fresh worker before it is :class:`Lost`.

Workers start in one of two ways:

* :class:`Forked`: a fork of this process runs ``handler`` with everything already imported, and with this
  process's very objects (a kernel defined in a function compiles too). The garbage collector is frozen
  across the fork so a worker never finalizes an object it inherited (a CUDA tensor, say); forked workers
  never touch the GPU.
* :class:`Spawned`: ``python -P -m tritune.workers`` builds its handler from ``factory(init)``; for work
  that needs a fresh process (a CUDA context of its own, or no Triton interpreter). Nothing is imported from
  the caller's working directory.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import socket
import subprocess
import sys
import threading
import time
import warnings
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, Literal

from tritune.errors import TrituneError
from tritune.workers.child import quiet_stdout, serve
from tritune.workers.lifeline import Lifeline, hold, import_path, lifeline, worker_command
from tritune.workers.procs import kill_group

Handler = Callable[[object], object]


@dataclass(frozen=True)
class Forked:
    """Workers are forks of this process that run ``handler(payload)``."""

    handler: Handler


@dataclass(frozen=True)
class Spawned:
    """Workers are fresh interpreters that run ``factory(init)(payload)``; ``env`` overrides this process's
    environment for them (``None`` removes a variable)."""

    factory: str
    init: object = None
    env: Mapping[str, str | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Done:
    """A task's result."""

    id: Hashable
    result: object


@dataclass(frozen=True)
class Lost:
    """A task without a result: it ran past its ``timeout`` (its worker was killed), its worker ``died``
    (more than ``retries`` times), or the task ``raised`` (``error``; that worker was replaced)."""

    id: Hashable
    why: Literal["timeout", "died", "raised"]
    reason: str
    error: BaseException | None = None


@dataclass
class _Task:
    id: Hashable
    payload: object
    timeout: float | None
    tries: int = 0


_NO_TIMEOUT = object()
#: This process's ends of every worker's socket, closed in each new fork: a worker must see its own
#: socket close when the service goes, which a sibling holding a copy of it would prevent.
_PARENT_FDS: set[int] = set()
_FORK_LOCK = threading.Lock()
_LIVE: set[WorkerService] = set()
_SRC = str(Path(__file__).resolve().parents[2])


class _Worker:
    def __init__(self, start: Forked | Spawned) -> None:
        ours, theirs = socket.socketpair()
        self.proc: subprocess.Popen[bytes] | None = None
        line = lifeline()
        if isinstance(start, Forked):
            self.pid = _fork(start.handler, ours, theirs, line)
            self.ready = True
        else:
            self.proc = _spawn(start, theirs, line)
            self.pid = self.proc.pid
            self.ready = False
        theirs.close()
        self.conn = Connection(ours.detach())
        _PARENT_FDS.add(self.conn.fileno())
        if isinstance(start, Spawned):
            self.conn.send(start.init)
        self.task: _Task | None = None
        self.sent_at = 0.0
        self.started_at = time.monotonic()

    def send(self, task: _Task) -> None:
        self.task = task
        self.sent_at = time.monotonic()
        self.conn.send((task.id, task.payload))

    def exit_code(self, timeout: float = 5.0) -> int | None:
        """Wait up to ``timeout`` s for the worker to end; its exit code (negative: the signal), else None."""
        if self.proc is not None:
            try:
                return self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return None
        deadline = time.monotonic() + timeout
        while True:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:
                return None
            if pid:
                return os.waitstatus_to_exitcode(status)
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.01)

    def kill(self) -> None:
        kill_group(self.pid)
        self.exit_code()
        self.close_conn()

    def close_conn(self) -> None:
        if not self.conn.closed:
            _PARENT_FDS.discard(self.conn.fileno())
            with contextlib.suppress(OSError):
                self.conn.close()


#: How many of tritune's own ``gc.freeze`` scopes (:func:`objects_frozen`) are open in this process. A fork
#: reads this, not ``gc.get_freeze_count()``, which walks every frozen object: with a heap frozen by someone
#: else it took 33-64 ms a fork on the H200's host, 16 forks per tuned key (the libraries' cold
#: tuning). A freeze made outside tritune is thawed by the first fork.
_OWN_FREEZES = [0]


#: The interpreter's own frozen objects: Python 3.12 starts with objects in the permanent generation (375 in a
#: 3.12.1 build), 3.11 and 3.13 with none. A count above this is a caller's freeze, never thawed by tritune. Taken
#: when tritune is imported, and only if small: a server that froze its heap before importing tritune (thousands
#: of objects and more) froze them itself, so its freeze is left alone.
_FROZEN_AT_IMPORT = gc.get_freeze_count()
STARTUP_FROZEN = _FROZEN_AT_IMPORT if _FROZEN_AT_IMPORT < 2000 else 0


@contextlib.contextmanager
def objects_frozen() -> Iterator[None]:
    """Within: the objects alive on entry sit in the cyclic GC's permanent generation (``gc.freeze``); forks
    of compile workers inside keep them there; the outermost scope thaws them on exit."""
    _OWN_FREEZES[0] += 1
    if _OWN_FREEZES[0] == 1:
        gc.freeze()
    try:
        yield
    finally:
        _OWN_FREEZES[0] -= 1
        if _OWN_FREEZES[0] == 0:
            gc.unfreeze()


def freeze_more() -> bool:
    """Inside an :func:`objects_frozen` scope: move what was allocated since its entry to the permanent generation
    too (``gc.freeze`` again; the scope's exit thaws everything at once). A key's setup imports Triton's code
    generator and makes its arguments after the key's freeze; a full collection later walked all of it: 0.10-0.11 s
    inside a new key's results on the H200. Outside such a scope nothing is frozen (no one would
    thaw it). Whether it froze."""
    if _OWN_FREEZES[0] <= 0:
        return False
    gc.freeze()
    return True


#: The longest a fork waits for other threads to leave Triton's compiler or an import (:func:`_wait_for_quiet`);
#: a thread still inside after that is not waited for again until it has left.
FORK_WAIT_S = 60.0
#: Where a thread holds locks a forked worker would need: Triton's compiler (LLVM's locks, its cache's files) and
#: Python's import system (the module's import lock), by the files of their frames.
_TRITON_COMPILER = f"{os.sep}triton{os.sep}compiler{os.sep}"
_IMPORT_SYSTEM = "<frozen importlib._bootstrap"
_GAVE_UP: set[int] = set()  # threads a fork stopped waiting for


def threads_in_locking_code() -> dict[int, str]:
    """The other threads of this process whose stack is inside Triton's compiler or an import: id -> name. A thread
    waiting for a module's import lock is left out: it runs nothing, and the lock's holder (this thread, perhaps,
    forking from inside an import) is what it waits for."""
    me = threading.get_ident()
    names = {t.ident: t.name for t in threading.enumerate()}
    busy = {}
    for tid, frame in sys._current_frames().items():
        if tid == me or (frame.f_code.co_name == "acquire" and frame.f_code.co_filename.startswith(_IMPORT_SYSTEM)):
            continue
        f: Any = frame
        while f is not None:
            where = f.f_code.co_filename
            if where.startswith(_IMPORT_SYSTEM) or _TRITON_COMPILER in where:
                busy[tid] = names.get(tid, str(tid))
                break
            f = f.f_back
    return busy


def _wait_for_quiet(limit_s: float) -> None:
    """Wait until no other thread is inside Triton's compiler or an import, at most ``limit_s``.

    A fork copies every lock as it stands, held ones included, and a forked worker has none of the threads that
    would release them: a worker forked while another thread compiled a Triton kernel (tritune's timer warming
    up, whose ``zero_()`` FlagGems sends to a Triton kernel of its own, compiled on first use; a user's thread)
    can wait in its first compile on a lock nobody holds any more, until the compile timeout, config after
    config. On an H100 with FlagGems enabled, a key of tutorial 03's matmul did not finish in 425 s without this
    wait, and took 7.4 s with it (``benchmarks/real_libraries.py --widen``). A thread seen inside after ``limit_s``
    is not waited for again until it has left."""
    deadline = time.monotonic() + limit_s
    while True:
        busy = threads_in_locking_code()
        _GAVE_UP.intersection_update(busy)
        if not busy.keys() - _GAVE_UP:
            return
        if time.monotonic() >= deadline:
            _GAVE_UP.update(busy)
            return
        time.sleep(0.002)


def _fork(handler: Handler, ours: socket.socket, theirs: socket.socket, line: Lifeline) -> int:
    _wait_for_quiet(FORK_WAIT_S)
    with _FORK_LOCK:
        outer = _OWN_FREEZES[0] > 0  # a caller's freeze (tune's, per key) is the caller's to thaw
        gc.freeze()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)  # 3.12: forking with threads
                pid = os.fork()
        finally:
            if pid and not outer:
                gc.unfreeze()
    if pid == 0:  # the worker
        try:
            os.setpgid(0, 0)
            hold(line)
            ours.close()
            for fd in list(_PARENT_FDS):
                with contextlib.suppress(OSError):
                    os.close(fd)
            quiet_stdout()
            serve(Connection(theirs.detach()), handler)
        finally:
            os._exit(0)
    with contextlib.suppress(OSError):
        os.setpgid(pid, pid)  # also here, so a kill right after the fork finds the group
    return pid


def _spawn(start: Spawned, theirs: socket.socket, line: Lifeline) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    for k, v in start.env.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    env["PYTHONPATH"] = import_path(_SRC, env.get("PYTHONPATH", ""))
    fd = theirs.fileno()
    return subprocess.Popen(
        [*worker_command(), str(fd), start.factory, *line.argv()],
        stdin=subprocess.DEVNULL,
        pass_fds=(fd, line.fd),
        start_new_session=True,  # its own process group, out of reach of the terminal's Ctrl-C
        env=env,
    )


class WorkerService:
    """Up to ``jobs`` workers running submitted tasks in order (module docstring).

    ``timeout``: seconds a task may run once a worker took it (None: no limit; :meth:`submit` may set one
    per task). ``start_timeout``: seconds a spawned worker may take to get ready. A worker that cannot start
    raises its own :class:`~tritune.errors.TrituneError`, or ``start_error`` with the reason.
    Use it as a context manager, or call :meth:`close`: an exception inside kills every worker at once.
    """

    def __init__(self, start: Forked | Spawned, jobs: int, *, timeout: float | None = None, retries: int = 1,
                 start_timeout: float = 300.0, name: str = "worker",
                 start_error: type[Exception] = TrituneError) -> None:  # fmt: skip
        self.start = start
        self.jobs = max(1, int(jobs))
        self.timeout = timeout
        self.retries = retries
        self.start_timeout = start_timeout
        self.name = name
        self.start_error = start_error
        self.restarts = 0  #: workers killed or lost (each is replaced when there is work for it)
        self.killed: list[int] = []  #: process groups killed for running past a timeout
        self._queue: deque[_Task] = deque()
        self._workers: list[_Worker] = []
        self._closed = False
        _LIVE.add(self)

    # -- the caller's side ------------------------------------------------------------------------------
    def submit(self, task_id: Hashable, payload: object, timeout: float | object | None = _NO_TIMEOUT) -> None:
        """Queue a task; it starts at once when a worker is free or can be started (compiles do not wait)."""
        t = self.timeout if timeout is _NO_TIMEOUT else timeout
        self._queue.append(_Task(task_id, payload, t))  # type: ignore[arg-type]
        self._dispatch()

    @property
    def busy(self) -> int:
        """Tasks not finished yet: queued or running."""
        return len(self._queue) + sum(w.task is not None for w in self._workers)

    def results(self, wait_s: float | None = None) -> list[Done | Lost]:
        """Hand out tasks, then wait up to ``wait_s`` s (None: until something ends) for tasks to end."""
        out: list[Done | Lost] = []
        deadline = None if wait_s is None else time.monotonic() + wait_s
        while not out and self.busy:
            self._dispatch()
            now = time.monotonic()
            limit = 1.0 if deadline is None else max(0.0, deadline - now)
            for w in self._workers:
                if w.task is not None and w.task.timeout is not None:
                    limit = min(limit, max(0.0, w.sent_at + w.task.timeout - now))
                elif not w.ready:
                    limit = min(limit, max(0.0, w.started_at + self.start_timeout - now))
            ready = wait([w.conn for w in self._workers], timeout=limit)
            for w in list(self._workers):
                if w.conn in ready:
                    out += self._receive(w)
            out += self._expire()
            if deadline is not None and time.monotonic() >= deadline:
                break
        return out

    def run(self, items: Iterable[tuple[Hashable, object]] = ()) -> Iterator[Done | Lost]:
        """Submit ``items`` (id and payload pairs), then yield each task's end as it comes."""
        for k, v in items:
            self.submit(k, v)
        while self.busy:
            yield from self.results()

    def close(self, kill: bool = False) -> None:
        """End every worker: idle ones are told to stop (and reaped in the background), busy ones are
        killed with their process group (their results are wanted no more); ``kill=True`` kills all."""
        if self._closed:
            return
        self._closed = True
        _LIVE.discard(self)
        self._queue.clear()
        workers, self._workers = self._workers, []
        idle = []
        for w in workers:
            if kill or w.task is not None or not w.ready:
                w.kill()
            else:
                with contextlib.suppress(OSError, ValueError):
                    w.conn.send(None)
                idle.append(w)
        if idle:  # an interpreter's exit takes ~0.8 s: do not make the caller wait for it
            threading.Thread(target=_reap, args=(idle,), name=f"tritune-reap-{self.name}", daemon=True).start()

    def __enter__(self) -> WorkerService:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        self.close(kill=exc_type is not None)

    # -- the loop -------------------------------------------------------------------------------------
    def _dispatch(self) -> None:
        for w in self._workers:
            if self._queue and w.ready and w.task is None:
                w.send(self._queue.popleft())
        waiting = len(self._queue) - sum(1 for w in self._workers if w.task is None)
        while waiting > 0 and len(self._workers) < self.jobs:
            w = _Worker(self.start)
            self._workers.append(w)
            if w.ready:
                w.send(self._queue.popleft())
            waiting -= 1

    def _drop(self, w: _Worker) -> None:
        self._workers.remove(w)
        self.restarts += 1

    def _receive(self, w: _Worker) -> list[Done | Lost]:
        try:
            msg = w.conn.recv()
        except (EOFError, OSError):
            return self._died(w)
        kind = msg[0]
        if kind == "ready":
            w.ready = True
            return []
        if kind == "fatal":
            self.close(kill=True)
            err = msg[1]
            if isinstance(err, TrituneError):
                raise err
            raise self.start_error(f"a {self.name} could not start: {type(err).__name__}: {err}")
        task = w.task
        w.task = None
        assert task is not None and task.id == msg[1]
        if kind == "done":
            return [Done(task.id, msg[2])]
        w.kill()  # "raised": the worker exits, its state may be broken
        self._drop(w)
        err = msg[2]
        return [Lost(task.id, "raised", f"{type(err).__name__}: {err}", err)]

    def _died(self, w: _Worker) -> list[Done | Lost]:
        code = w.exit_code()
        w.kill()
        self._drop(w)
        task = w.task
        if task is None:
            if not w.ready:
                self.close(kill=True)
                raise self.start_error(f"a {self.name} died while starting (exit code {code})")
            return []
        task.tries += 1
        if task.tries <= self.retries:
            self._queue.appendleft(task)  # once more, in a fresh worker
            return []
        tries = f" ({task.tries} times)" if task.tries > 1 else ""
        return [Lost(task.id, "died", f"its {self.name} died{tries} (exit code {code})")]

    def _expire(self) -> list[Done | Lost]:
        now = time.monotonic()
        out: list[Done | Lost] = []
        for w in list(self._workers):
            task = w.task
            if task is not None and task.timeout is not None and now - w.sent_at > task.timeout:
                self.killed.append(w.pid)
                w.kill()
                self._drop(w)
                out.append(Lost(task.id, "timeout", f"no result after {task.timeout:g} s; its {self.name} "
                                                    "and everything it started were killed"))  # fmt: skip
            elif not w.ready and now - w.started_at > self.start_timeout:
                self.close(kill=True)
                raise self.start_error(f"a {self.name} did not start within {self.start_timeout:g} s")
        return out


def _reap(workers: list[_Worker], grace_s: float = 10.0) -> None:
    deadline = time.monotonic() + grace_s
    for w in workers:
        if w.exit_code(max(0.0, deadline - time.monotonic())) is None:
            w.kill()
        w.close_conn()


def _kill_all_at_exit() -> None:
    for svc in list(_LIVE):
        svc.close(kill=True)


atexit.register(_kill_all_at_exit)
