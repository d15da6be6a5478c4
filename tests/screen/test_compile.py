"""One candidate through the real compiler for sm_90: resources from the binary, the launch gate, the cache key."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from tritune.adapters.kernel import as_jit
from tritune.config import Config
from tritune.errors import KernelSpecError
from tritune.outcome import Status
from tritune.screen.candidate import FIELDS, screen_candidate, screen_spec
from tritune.screen.specialize import specialize
from tritune.screen.targets import get_target

SM90 = get_target("sm90")
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BIG = Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 128}, num_warps=4, num_stages=4)


def _screen(w, config, target=SM90, key=None):
    key = key or w.keys[0]
    return screen_candidate(w, key, w.make_args(key, "cpu"), config, target)


def test_fitting_config_reads_registers_from_the_binary(wl) -> None:
    r = _screen(wl["scale"], Config({"BLOCK": 1024}, num_warps=4, num_stages=1))
    assert r.status is Status.FITS and r.reason is None
    assert set(FIELDS) <= set(r.extra)
    assert r.extra["registers"] > 0 and r.extra["spilled_bytes"] == 0
    assert r.extra["shared"] == 0 and r.extra["threads"] == 128
    assert r.extra["blocks_per_sm"] > 0 and r.extra["limiter"]
    assert len(r.extra["hash"]) == 64


def test_front_end_and_static_rejections_are_illegal_with_reasons(wl) -> None:
    bad_block = _screen(wl["scale"], Config({"BLOCK": 300}, num_warps=4, num_stages=1))
    assert bad_block.status is Status.ILLEGAL and bad_block.extra["rule"] == "frontend"
    assert "scale_kernel does not compile with BLOCK=300" in bad_block.reason
    bad_warps = _screen(wl["scale"], Config({"BLOCK": 512}, num_warps=3, num_stages=1))
    assert bad_warps.status is Status.ILLEGAL and bad_warps.extra["rule"] == "static:num_warps"
    assert bad_warps.extra["stage"] == "static"


def test_262144_bytes_stops_before_ptxas(wl, fresh_cache: Path) -> None:
    r = _screen(wl["mm_too_big"], BIG)
    assert r.status is Status.ILLEGAL
    assert r.reason.endswith("needs 262144 B of shared memory; sm_90 allows 232448 B per block")
    assert r.extra["stage"] == "llir" and r.extra["registers"] is None
    assert not list(fresh_cache.rglob("*.cubin")) and not list(fresh_cache.rglob("*.ptx"))


def test_issue_matmul_config_needs_262144_bytes_only_with_the_jit_specialization() -> None:
    from tritune.workload import load_workloads

    (w,) = load_workloads(EXAMPLES / "matmul.py", "matmul_small")
    key = w.keys[0]
    spec = specialize(w.kernel, w.make_args(key, "cpu"), BIG, SM90.gpu_target(), w.caller_kwargs(key))
    assert spec.attrs[(0,)] == [["tt.divisibility", 16]]  # pointers carry the JIT's alignment
    # A target that allows 1 B stops every compile at the llir gate: shared memory without ptxas.
    tiny = dataclasses.replace(SM90, shared_per_block=1)
    jit_spec = screen_spec(spec, BIG, tiny)
    plain = dataclasses.replace(spec, attrs={k: [] for k in spec.attrs})
    plain_spec = screen_spec(plain, BIG, tiny)
    assert jit_spec.extra["shared"] == 262144
    assert plain_spec.extra["shared"] < 262144  # no divisibility: the pipeliner does not fire


class _FakeDriver:
    """FAKE, for this test only: answers the three questions JITFunction.run asks a driver before compiling."""

    def get_current_device(self) -> int:
        return 0

    def get_current_stream(self, device: int) -> int:
        return 0

    def get_current_target(self):
        return SM90.gpu_target()


def test_screen_compiles_under_the_jits_own_cache_key(wl, monkeypatch: pytest.MonkeyPatch) -> None:
    """The JIT's own launch path (binder, _pack_args, triton.compile) files the kernel under the screen's hash.

    What this proves on a CPU: for the same arguments and target, JITFunction.run builds the same
    signature, constants, attributes and options as the screen, so both reach the same Triton cache
    entry. What it cannot prove here: that the GPU driver reports the same target; the GPU proof script
    (benchmarks/screen_vs_launch.py) compares the launched kernel's hash too.
    """
    from triton.runtime import driver

    w = wl["scale"]
    key = w.keys[0]
    args = w.make_args(key, "cpu")
    config = Config({"BLOCK": 1024}, num_warps=4, num_stages=1)
    screened = screen_candidate(w, key, args, config, SM90)
    spec = specialize(w.kernel, args, config, SM90.gpu_target())
    monkeypatch.setattr(driver, "_active", _FakeDriver())
    jit = as_jit(w.kernel)
    kernel = jit.run(*args, grid=(1,), warmup=True, BLOCK=1024, num_warps=4, num_stages=1)
    assert kernel.hash == screened.extra["hash"] == spec.cache_hash()


@pytest.mark.slow
@pytest.mark.long  # waits out a real compile timeout and its kill
def test_jobs_1_timeout_kills_the_worker_and_ptxas(wl, fresh_cache: Path) -> None:
    """jobs=1 compiles in one forked worker (the workload object needs no file) with the same timeout."""
    import dataclasses

    from tritune.screen import screen
    from tritune.workers.procs import descendants

    w = dataclasses.replace(wl["mm_slow"])  # not a module-level object of any file
    r = screen(w, "sm90", jobs=1, compile_timeout=4.0)
    fast, slow = r.workloads[0].candidates
    assert slow.status is Status.COMPILE_TIMEOUT, slow.reason
    assert "4 s timeout" in (slow.reason or "") and "ptxas were killed" in (slow.reason or "")
    assert fast.status is Status.FITS
    assert not [p for p in descendants(os.getpid()) if "ptxas" in _comm(p)]


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def test_wrong_argument_count_names_the_kernel(wl) -> None:
    w = wl["scale"]
    x, out, _n = w.make_args({"n": 64}, "cpu")
    with pytest.raises(KernelSpecError, match="scale_kernel"):
        specialize(w.kernel, [x, out], Config({"BLOCK": 64}), SM90.gpu_target())


def test_uninferable_argument_names_kernel_and_argument(wl) -> None:
    w = wl["scale"]
    x, out, _ = w.make_args({"n": 64}, "cpu")
    with pytest.raises(KernelSpecError) as e:
        specialize(w.kernel, [x, out, object()], Config({"BLOCK": 64}), SM90.gpu_target())
    assert "scale_kernel" in str(e.value) and "n=object" in str(e.value)
