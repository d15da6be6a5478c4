"""The incremental mode's background threads stop at the interpreter's exit, before it finalizes.

A daemon thread that comes back from a CUDA call (an event's ``synchronize`` releases the interpreter's lock
in PyTorch's C++) after finalization began is ended by ``pthread_exit`` and aborts the process ("terminate
called without an active exception", status 134, seen in the serving benchmark on an H200). These
tests use a FAKE clock whose ``elapsed_ms`` sleeps with the lock released, as a real event wait does."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time

from tritune.serving import runtime as rt


class SleepyClock:  # FAKE: "waits for the device" by sleeping without the interpreter's lock
    def __init__(self, wait_s: float) -> None:
        self.wait_s = wait_s

    def elapsed_ms(self, handle: object) -> float:
        time.sleep(self.wait_s)
        return 1.0


def test_close_resolves_what_was_queued_then_stops_the_thread() -> None:
    got: list[float] = []
    r = rt.Resolver(SleepyClock(0.01), batch_s=0.0)  # type: ignore[arg-type]
    for _ in range(5):
        r.submit(object(), got.append)
    r.close(timeout_s=5.0)
    assert got == [1.0] * 5
    assert r._thread is not None and not r._thread.is_alive()


def test_worker_compiles_close_stops_a_waiting_thread() -> None:
    wc = rt.WorkerCompiles()
    wc._thread = threading.Thread(target=wc._loop, daemon=True)
    wc._thread.start()
    wc.close(timeout_s=5.0)
    assert not wc._thread.is_alive()
    assert wc.next_job() is None  # closed: no job is handed out, nothing waits


def test_registered_stops_run_at_exit_and_are_held_weakly() -> None:
    calls: list[float] = []

    class Owner:
        def stop(self, timeout_s: float) -> None:
            calls.append(timeout_s)

    kept, dropped = Owner(), Owner()
    saved = list(rt._STOPPERS)
    try:
        rt.stop_at_exit(kept.stop)
        rt.stop_at_exit(dropped.stop)
        del dropped
        rt._stop_all()
        assert rt.EXITING.is_set()
        assert len(calls) == 1 and 0 < calls[0] <= rt.EXIT_WAIT_S
    finally:
        rt.EXITING.clear()
        rt._STOPPERS[:] = saved


def test_a_process_exits_with_the_resolver_stopped_first() -> None:
    """In a child process: the resolver is busy in a lock-releasing wait when the main thread returns; by the
    time the interpreter finalizes (the first-registered atexit callback runs last) its thread has ended."""
    script = textwrap.dedent("""
        import atexit, threading
        def check():
            alive = [t.name for t in threading.enumerate() if t.name.startswith("tritune-")]
            print("ALIVE", alive, flush=True)
        atexit.register(check)  # registered first: runs after tritune's own exit hook
        import time
        from tritune.serving.runtime import Resolver
        class SleepyClock:  # FAKE
            def elapsed_ms(self, handle):
                time.sleep(0.05)
                return 1.0
        r = Resolver(SleepyClock(), batch_s=0.0)
        done = []
        for _ in range(4):
            r.submit(object(), done.append)
        time.sleep(0.01)  # the thread is inside its first wait now
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "ALIVE []" in out.stdout, out.stdout


def test_incremental_close_writes_what_was_queued() -> None:
    from tritune.serving.incremental import Incremental
    from tritune.serving.state import IncrementalOptions

    inc = Incremental(IncrementalOptions(), clock=SleepyClock(0.0), compiler=rt.WorkerCompiles(), thread=False,  # type: ignore[arg-type]
                      store_thread=True)  # fmt: skip
    wrote: list[int] = []
    for i in range(3):
        inc._write(lambda i=i: (time.sleep(0.02), wrote.append(i)))  # type: ignore[misc]
    inc.close(timeout_s=5.0)
    assert wrote == [0, 1, 2]
    assert inc._writer is not None and not inc._writer.is_alive()
