"""The worker service with FAKE handlers (tests/workers/fakes.py): results, timeouts that kill the whole
process group, a crash that costs only its task, errors, start failures, and shutdown."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from fakes import fake_handler

from tritune.errors import WorkloadLoadError
from tritune.workers import Done, Forked, Lost, Spawned, WorkerService
from tritune.workers.procs import descendants

HERE = str(Path(__file__).parent)
SPAWNED = Spawned("fakes:make_fake_handler", None, {"PYTHONPATH": HERE})


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except FileNotFoundError:
        return False
    return state != "Z"


@pytest.mark.parametrize("start", [Forked(fake_handler), SPAWNED], ids=["forked", "spawned"])
def test_results_timeout_crash_and_error_each_cost_only_their_task(start: Forked | Spawned) -> None:
    with WorkerService(start, 2, timeout=30.0, retries=1) as svc:
        got = {r.id: r for r in svc.run((i, ("echo", i)) for i in range(5))}
        assert {i: r.result[0] for i, r in got.items()} == {i: i for i in range(5)}  # type: ignore[union-attr]
        assert len({r.result[1] for r in got.values()}) <= 2 and os.getpid() not in {r.result[1] for r in got.values()}  # type: ignore[union-attr]
        svc.submit("slow", ("grandchild", None), timeout=1.0)
        svc.submit("crash", ("abort", None))
        svc.submit("bad", ("raise", 7))
        svc.submit("after", ("echo", "still here"))
        out = {r.id: r for r in svc.run()}
    slow, crash, bad, after = out["slow"], out["crash"], out["bad"], out["after"]
    assert isinstance(slow, Lost) and slow.why == "timeout" and "after 1 s" in slow.reason
    assert isinstance(crash, Lost) and crash.why == "died" and "2 times" in crash.reason and "exit code -6" in crash.reason
    assert isinstance(bad, Lost) and bad.why == "raised" and "illegal memory access was encountered (7)" in bad.reason
    assert isinstance(bad.error, RuntimeError)
    assert isinstance(after, Done) and after.result[0] == "still here"  # type: ignore[index]
    assert len(svc.killed) == 1 and not _alive(svc.killed[0])
    assert svc.restarts >= 3  # the timed-out worker, the crashed one (twice) and the raising one were replaced


def test_the_clock_of_a_task_starts_when_a_worker_takes_it() -> None:
    """One worker: A sleeps past its 1 s timeout, B (queued behind it) needs 0.5 s of its own 1 s."""
    with WorkerService(Forked(fake_handler), 1, timeout=1.0) as svc:
        t = time.monotonic()
        out = {r.id: r for r in svc.run([("a", ("sleep", 30)), ("b", ("sleep", 0.5))])}
    assert isinstance(out["a"], Lost) and out["a"].why == "timeout"
    assert isinstance(out["b"], Done) and time.monotonic() - t >= 1.5


def test_a_worker_that_cannot_start_raises_its_own_error() -> None:
    bad = Spawned("fakes:make_fake_handler", "fail", {"PYTHONPATH": HERE})
    with pytest.raises(WorkloadLoadError, match="could not be loaded"), WorkerService(bad, 1) as svc:
        list(svc.run([(1, ("echo", 1))]))


def test_close_kills_busy_workers_and_their_children_at_once() -> None:
    svc = WorkerService(Forked(fake_handler), 2)
    svc.submit(1, ("grandchild", None))
    svc.submit(2, ("grandchild", None))
    assert svc.results(wait_s=0.5) == []
    pids = [w.pid for w in svc._workers]
    deadline = time.monotonic() + 10
    while sum(len(descendants(p)) for p in pids) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    kids = [k for p in pids for k in descendants(p)]
    assert len(kids) == 2
    t = time.monotonic()
    svc.close()
    assert time.monotonic() - t < 5
    time.sleep(0.2)
    assert not any(_alive(p) for p in (*pids, *kids))


def test_kill_tree_stops_a_process_and_its_children() -> None:
    import subprocess

    from tritune.workers.procs import children, kill_tree

    proc = subprocess.Popen(["sh", "-c", "sleep 60 & sleep 60 & wait"])
    deadline = time.monotonic() + 10
    while len(children(proc.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    kids = children(proc.pid)
    assert len(kids) == 2
    t = time.monotonic()
    kill_tree(proc.pid)
    proc.wait(5)  # gone at once, not after its 60 s
    assert time.monotonic() - t < 5
    time.sleep(0.2)
    assert not any(_alive(k) for k in kids)


def test_a_spawned_worker_starts_without_a_warning(capfd: pytest.CaptureFixture[str]) -> None:
    """Workers share the terminal's stderr: `python -m` of a module its package already imported would print
    runpy's RuntimeWarning there once per worker, into every ``tritune screen`` (noise)."""
    with WorkerService(SPAWNED, 2) as svc:
        got = list(svc.run((i, ("echo", i)) for i in range(2)))
    assert all(isinstance(r, Done) for r in got)
    err = capfd.readouterr().err
    assert "Warning" not in err, err


def test_a_fork_keeps_a_callers_gc_freeze_and_thaws_its_own() -> None:
    """``tune`` freezes the objects alive at each key's start (``session.old_objects_frozen``): a compile worker's
    fork inside must not thaw them, and a fork outside leaves nothing frozen, as before."""
    import gc

    from tritune.offline.tune import old_objects_frozen

    gc.unfreeze()  # (Python 3.12 starts with objects frozen: each test starts from none)
    assert gc.get_freeze_count() == 0
    with old_objects_frozen():
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with WorkerService(Forked(fake_handler), 1) as svc:
            (r,) = svc.run([("x", ("echo", 1))])
        assert isinstance(r, Done) and gc.get_freeze_count() > frozen // 2  # (refcounting still frees frozen ones)
    assert gc.get_freeze_count() == 0
    with WorkerService(Forked(fake_handler), 1) as svc:
        (r,) = svc.run([("y", ("echo", 2))])
    assert isinstance(r, Done) and gc.get_freeze_count() == 0
    gc.freeze()  # a caller's own freeze is left to the caller
    try:
        with old_objects_frozen():
            pass
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_a_fork_never_counts_the_frozen_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gc.get_freeze_count()`` walks every frozen object (33-64 ms a call on the H200's host with a heap frozen
    by someone else, once per fork: ~1 s of a library op's cold tuning on an H200). A fork reads tritune's own
    freeze depth instead: inside ``objects_frozen`` it keeps the freeze, outside it leaves nothing frozen."""
    import gc

    from tritune.workers import objects_frozen

    def counted() -> int:
        raise AssertionError("a fork counted the frozen objects")

    real = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", counted)
    with objects_frozen():
        with objects_frozen():  # nested: the outer scope thaws
            with WorkerService(Forked(fake_handler), 1) as svc:
                (r,) = svc.run([("x", ("echo", 1))])
        assert isinstance(r, Done) and real() > 0
    assert real() == 0
    with WorkerService(Forked(fake_handler), 1) as svc:
        (r,) = svc.run([("y", ("echo", 2))])
    assert isinstance(r, Done) and real() == 0


def test_freezing_more_inside_a_scope_is_thawed_with_it_and_never_outside() -> None:
    """``freeze_more`` (a key's imports and arguments, made after its freeze): frozen too inside an
    ``objects_frozen`` scope, and thawed at its exit; outside any scope nothing is frozen."""
    import gc

    from tritune.workers import freeze_more, objects_frozen

    gc.unfreeze()  # (Python 3.12 starts with objects frozen: each test starts from none)
    assert gc.get_freeze_count() == 0
    assert freeze_more() is False and gc.get_freeze_count() == 0
    with objects_frozen():
        before = gc.get_freeze_count()
        made = [[i] for i in range(2000)]  # new container objects, tracked by the collector
        assert freeze_more() is True
        assert gc.get_freeze_count() >= before + 1500  # (frozen objects freed meanwhile leave the count)
        del made
    assert gc.get_freeze_count() == 0


def test_the_interpreters_own_frozen_objects_are_no_callers_freeze(monkeypatch: pytest.MonkeyPatch) -> None:
    """Python 3.12 starts with objects in the permanent generation (``service.STARTUP_FROZEN``): a key must still
    freeze its own (an older rule left every key on an H200 host's Python 3.12 unfrozen). A freeze above that count is
    a caller's, left alone."""
    import gc

    from tritune.offline.tune import old_objects_frozen
    from tritune.workers import freeze_more, service

    gc.unfreeze()  # (Python 3.12 starts with objects frozen: each test starts from none)
    assert gc.get_freeze_count() == 0
    gc.freeze()  # stands for the interpreter's startup freeze (3.12)
    try:
        monkeypatch.setattr(service, "STARTUP_FROZEN", gc.get_freeze_count())
        with old_objects_frozen():
            assert service._OWN_FREEZES[0] == 1 and freeze_more() is True  # the key's own scope
        assert service._OWN_FREEZES[0] == 0
        gc.freeze()
        keep = [[i] for i in range(100)]
        gc.freeze()  # a caller's freeze on top: theirs
        monkeypatch.setattr(service, "STARTUP_FROZEN", 0)
        with old_objects_frozen():
            assert service._OWN_FREEZES[0] == 0 and freeze_more() is False
        assert gc.get_freeze_count() > 0 and keep
    finally:
        gc.unfreeze()


def test_the_fake_crash_is_silent_even_with_faulthandler_on():
    """A passing test run prints no "Fatal Python error": the FAKE crash dies of SIGABRT without a stack dump."""
    import signal
    import subprocess
    import sys

    code = "import faulthandler; faulthandler.enable(); from fakes import fake_handler; fake_handler(('abort', None))"
    p = subprocess.run([sys.executable, "-c", code], cwd=HERE, capture_output=True, text=True, timeout=60)
    assert p.returncode == -signal.SIGABRT
    assert "Fatal Python error" not in p.stderr and p.stderr == ""


def test_a_fork_waits_while_another_thread_imports_holding_a_lock(tmp_path: Path) -> None:
    """Another thread is inside an import that holds a lock (FAKE: ``fakes.HELD``, standing in for LLVM's or a
    module's import lock). A worker forked meanwhile would inherit the lock held, with no thread left to release it;
    the fork waits for the import to end instead, and the worker's "compile" gets the lock."""
    import importlib
    import sys
    import threading

    import fakes

    (tmp_path / "fake_slow_import.py").write_text(
        "import time\nimport fakes\nwith fakes.HELD:\n    fakes.IMPORTING.set()\n    time.sleep(0.5)\n")
    sys.path.insert(0, str(tmp_path))
    fakes.IMPORTING = threading.Event()
    try:
        t = threading.Thread(target=importlib.import_module, args=("fake_slow_import",))
        t.start()
        assert fakes.IMPORTING.wait(5)
        with WorkerService(Forked(fake_handler), 1) as svc:
            (got,) = list(svc.run([("compile", ("lock", 2.0))]))
        t.join()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fake_slow_import", None)
    assert isinstance(got, Done) and got.result[0] is True  # type: ignore[index]


def test_a_fork_from_inside_an_import_does_not_wait_for_a_thread_blocked_on_that_import(tmp_path: Path) -> None:
    """A module whose import starts workers (Triton's tutorial 03 tunes at import) while another thread waits to
    import the same module: that thread waits for the forking one, so the fork must not wait for it."""
    import sys

    (tmp_path / "fake_forking_import.py").write_text(
        "import importlib, threading, time\n"
        "from fakes import fake_handler\n"
        "from tritune.workers import Forked, WorkerService\n"
        "blocked = threading.Thread(target=importlib.import_module, args=('fake_forking_import',), daemon=True)\n"
        "blocked.start()\n"
        "time.sleep(0.2)  # the thread is now waiting for this module's import lock\n"
        "t0 = time.monotonic()\n"
        "with WorkerService(Forked(fake_handler), 1) as svc:\n"
        "    RESULT = [r.result[0] for r in svc.run([('e', ('echo', 5))])]\n"
        "FORK_S = time.monotonic() - t0\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import fake_forking_import as m  # type: ignore[import-not-found]

        m.blocked.join(10)  # its import ends with this one's
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("fake_forking_import", None)
    assert m.RESULT == [5] and m.FORK_S < 10


def test_a_thread_inside_tritons_compiler_is_seen(tmp_path: Path) -> None:
    """What a fork waits for: a thread compiling a real kernel for sm90 (no GPU needed) is inside Triton's
    compiler until the compile returns; this thread, which asks, never counts. In a fresh process without the
    interpreter: a process that has run interpreted kernels (this suite's) can leave ``triton.language`` unfit for
    a real compile."""
    import subprocess
    import sys

    code = """
import threading, time
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from tritune.workers.service import threads_in_locking_code

@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)

src = ASTSource(add_one, {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128})
t = threading.Thread(target=triton.compile, args=(src,), kwargs={"target": GPUTarget("cuda", 90, 32)},
                     name="compiling")
seen = False
t.start()
while t.is_alive() and not seen:
    seen = "compiling" in threads_in_locking_code().values()
    time.sleep(0.001)
t.join()
after = threads_in_locking_code()
print("seen", seen, "self", threading.get_ident() in after, "after", "compiling" in after.values())
"""
    (tmp_path / "compile_in_a_thread.py").write_text(code)  # Triton reads a kernel's source from its file
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, str(tmp_path / "compile_in_a_thread.py")], cwd=HERE, env=env,
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["seen", "True", "self", "False", "after", "False"], p.stdout
