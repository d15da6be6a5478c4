"""Triton's compiler key hashed in a background thread (tritune.workers.prewarm), and forks that wait for it.

Each case runs in a fresh interpreter: the key is ``lru_cache``'d per process, and a fork's safety depends on
what the process has running when it forks."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = str(Path(__file__).resolve().parents[2] / "src")


def fresh(code: str, **env: str) -> str:
    """Run ``code`` in a new interpreter (Triton's interpreter off unless ``env`` says) and return its stdout."""
    e = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    e.update(env, PYTHONPATH=SRC)
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=e, capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_prewarm_hashes_the_key_in_a_thread_once():
    out = fresh("""
        import threading
        from triton.runtime import cache
        from tritune.workers import prewarm
        assert cache.triton_key.cache_info().currsize == 0
        t = prewarm.prewarm()
        assert t is not None and t.daemon and t.name == "tritune-triton-key"
        assert prewarm.prewarm() is t  # once per process
        prewarm.wait()
        assert not t.is_alive()
        info = cache.triton_key.cache_info()
        print(info.currsize, info.misses)
    """)
    assert out == "1 1"  # computed by the thread; the caller's next triton_key() is a cache hit


def test_prewarm_does_nothing_under_the_interpreter_or_without_triton_key():
    assert fresh("""
        from triton.runtime import cache
        from tritune.workers import prewarm
        print(prewarm.prewarm(), cache.triton_key.cache_info().currsize)
        prewarm.wait()  # nothing to wait for
    """, TRITON_INTERPRET="1") == "None 0"
    assert fresh("""
        from triton.runtime import cache
        del cache.triton_key  # a Triton without it (the name moved): silently nothing
        from tritune.workers import prewarm
        print(prewarm.prewarm())
    """) == "None"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forked workers need os.fork")
def test_a_fork_waits_for_the_thread_and_the_worker_inherits_the_key():
    """The worker service forks right after prewarm() (the thread still hashing and importing): the fork waits
    for it, so the worker finds the key computed (no second hash, no lock held by a thread it lacks) and can
    import Triton's packages; a deadlock would end the run at the timeout."""
    out = fresh("""
        import time
        from triton.runtime import cache
        from tritune.workers import Forked, WorkerService, prewarm

        def handler(payload):
            before = cache.triton_key.cache_info().currsize  # inherited from the parent at the fork
            import triton.language.extra  # a package walk_packages imports in the thread
            return before, cache.triton_key()

        t = prewarm.prewarm()
        assert t.is_alive()  # hashing ~0.6 s: the fork below comes in the middle of it
        with WorkerService(Forked(handler), 2, timeout=60) as svc:
            (a, b) = [d.result for d in svc.run([(0, None), (1, None)])]
        assert not t.is_alive()
        key = cache.triton_key()
        print(a[0], b[0], a[1] == key == b[1])
    """)
    assert out == "1 1 True"


@pytest.mark.skipif(not hasattr(os, "register_at_fork"), reason="os.register_at_fork")
def test_any_os_fork_waits_for_the_thread():
    """A bare os.fork (the user's, not the worker service's) right after prewarm(): the child has the key."""
    out = fresh("""
        import os
        from triton.runtime import cache
        from tritune.workers import prewarm

        t = prewarm.prewarm()
        assert t.is_alive()
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.write(w, str(cache.triton_key.cache_info().currsize).encode())
            os._exit(0)
        os.close(w)
        got = os.read(r, 16).decode()
        os.waitpid(pid, 0)
        print(got, t.is_alive())
    """)
    assert out == "1 False"
