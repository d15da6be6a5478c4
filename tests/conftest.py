import os
import sys
import threading
from pathlib import Path

import pytest

# Tests run without a GPU: Triton's interpreter executes kernels on the CPU. Set before triton is imported
# anywhere so that @triton.jit kernels defined in test modules are interpretable.
# On the GPU machine, `TRITUNE_GPU_TESTS=1 pytest -m gpu tests/gpu` runs the GPU tests on the real driver.
if os.environ.get("TRITUNE_GPU_TESTS") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # triton 3.9 warns when unset; 1 keeps the historical default

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "examples"))

#: The serving mode's helper threads, by name.
SERVING_THREADS = ("tritune-resolver", "tritune-store", "tritune-compare-prep")


@pytest.fixture(autouse=True)
def _no_background_thread_outlives_its_test():
    """The serving mode's helper threads that a test starts are stopped when it ends, as the interpreter's exit
    stops them (``stop_at_exit``); one still running after that (never registered to be stopped, or not stopping)
    fails the test, where it would otherwise run on into the next tests."""
    from tritune.serving import runtime

    with runtime._STOPPERS_LOCK:
        before = {id(r) for r in runtime._STOPPERS}
    alive = {t for t in threading.enumerate() if t.name in SERVING_THREADS}
    yield
    with runtime._STOPPERS_LOCK:
        mine = [r for r in runtime._STOPPERS if id(r) not in before]
        runtime._STOPPERS[:] = [r for r in runtime._STOPPERS if id(r) in before]
    for ref in mine:
        stop = ref()
        if stop is not None:
            stop(runtime.EXIT_WAIT_S)
    left = [t.name for t in threading.enumerate() if t.name in SERVING_THREADS and t not in alive]
    assert not left, f"threads still running after the test: {left}"
