"""incremental=True on a real GPU (CUDA events, the engine's compile workers): `TRITUNE_GPU_TESTS=1 python -m
pytest -m gpu tests/serving`; skips at run time without a driver."""

from __future__ import annotations

import time

import pytest
import torch
import triton
import triton.language as tl

import tritune
from tritune.device import gpu_unavailable_reason

pytestmark = pytest.mark.gpu


@triton.jit
def _double(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 256, 1024, 4096) for w in (1, 4, 8)]


def _tuned_double(tmp_path, incremental):
    """_double under tritune.autotune in incremental mode, and the list its promotions go to."""
    promoted = []
    k = tritune.autotune(configs=CONFIGS, key=["n"], store=str(tmp_path / "s.db"), incremental=incremental,
                         on_promote=lambda key, ch: promoted.append(ch))(_double)  # fmt: skip
    return k, promoted


def test_serves_at_once_then_promotes_and_capture_records_the_provisional(tmp_path):
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    k, promoted = _tuned_double(tmp_path, True)
    n = 1 << 22
    x = torch.randn(n, device="cuda")
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731
    k[grid](x, out, n)
    torch.cuda.synchronize()
    assert torch.equal(out, x * 2)
    (ch,) = k.choices().values()
    assert ch.source == "provisional"
    # A graph captured while the key tunes holds the provisional config and replays correctly.
    g = torch.cuda.CUDAGraph()
    out_g = torch.zeros_like(x)
    with torch.cuda.graph(g):
        k[grid](x, out_g, n)
    g.replay()
    torch.cuda.synchronize()
    assert torch.equal(out_g, x * 2) and k.best_config.kwargs["BLOCK"] == 64
    deadline = time.monotonic() + 120
    while not promoted and time.monotonic() < deadline:
        out.zero_()
        k[grid](x, out, n)
        torch.cuda.synchronize()
        assert torch.equal(out, x * 2)
    assert promoted, k.choices()
    assert promoted[0].source == "incremental" and promoted[0].config.kwargs["BLOCK"] != 64
    # The promotion handed the winner's racing launcher to the dispatch table: no call after it built one.
    inc = k._incremental
    inc.flush()
    hot = [v for v in k._hot.values() if v[0].source == "incremental"]
    assert hot and all(v[1] in set(inc._fast.values()) for v in hot), (hot, inc._fast)
    assert not inc.store_errors
    extra = k._incremental.budget.extra_fraction
    assert 0 < extra <= 0.10 + 0.02  # one scratch run may overshoot its estimate


@pytest.mark.parametrize("dtype", [torch.float16, torch.int32])
def test_the_fused_comparison_launches_through_a_prebuilt_launcher(dtype):
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    from tritune.serving.check import _FAST_DIFFER, compare_outputs, prepare_fused

    dev = torch.device("cuda", torch.cuda.current_device())
    assert prepare_fused(str(dtype), dev) is None
    assert (str(dtype), dev.index) in _FAST_DIFFER
    x = (torch.arange(100_003, device=dev) % 7).to(dtype)
    y = x.clone()
    assert compare_outputs({"o": x}, {"o": y}, None, None, {str(dtype)})() is None
    y[77_777] += 1
    why_not = compare_outputs({"o": x}, {"o": y}, None, None, {str(dtype)})()
    assert why_not is not None and "1 of 100003 elements differ" in why_not


def test_driver_event_calls_give_torchs_milliseconds_without_blocking():
    """CudaClock.ready_ms (the driver's cuEventQuery/cuEventElapsedTime, keeping the interpreter's lock) against
    torch's synchronize + elapsed_time on the same real event pairs."""
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    from tritune.serving.runtime import cuda_clock

    clock = cuda_clock(spin_idle=True)
    assert clock._drv is not None  # a machine with a GPU has the driver library
    x = torch.randn(1 << 22, device="cuda")
    out = torch.empty_like(x)
    grid = lambda meta: (triton.cdiv(x.numel(), meta["BLOCK"]),)  # noqa: E731
    pairs = []
    for _ in range(20):
        t = clock.start(None)
        _double[grid](x, out, x.numel(), BLOCK=1024)
        pairs.append(clock.stop(t))
    torch.cuda._sleep(200_000_000)  # ~0.1 s: the next pair cannot have been passed when it is asked
    t = clock.start(None)
    h = clock.stop(t)
    assert clock.ready_ms(h) is None
    torch.cuda.synchronize()
    for a, b, late in pairs:
        want = float(a.elapsed_time(b))
        got = clock.ready_ms((a, b, late))
        assert got is not None and got == pytest.approx(want, rel=1e-6)
    assert clock.ready_ms(h) is not None and clock.driver_fallbacks == 0


def test_a_gated_span_holds_no_host_time_and_an_abandoned_one_does_not_block_the_stream():
    """DriverClock's gate (cuStreamWaitValue32 on a pinned counter): 0.2 ms of host work between the start and
    the launch (less than the watch's 0.5 ms) is not in the span (torch's clock without the spin times it), and
    a span abandoned (its launch raised) leaves the stream running."""
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    import threading

    from tritune.serving.runtime import CudaClock, DriverClock, driver_event_calls

    drv = driver_event_calls()
    assert drv is not None
    gated = DriverClock(drv, spin_idle=True)
    assert gated._gate_ok
    plain = CudaClock(spin_idle=False)
    cfg = object()
    x = torch.zeros(1, device="cuda")
    x.add_(1.0)  # the kernel's first launch loads its module (lazily): not inside a gated span (seen on an H200)
    torch.cuda.synchronize()
    gated.stop(gated.start(cfg))  # a config's first span spins; its later ones are gated

    def span(clock):
        torch.cuda.synchronize()
        t = clock.start(cfg)
        end = time.perf_counter() + 0.0002
        while time.perf_counter() < end:  # host work inside the span
            pass
        x.add_(1.0)
        return clock.elapsed_ms(clock.stop(t))

    # A gated span whose host side (0.2 ms of work, a launch) is preempted past the watch's 0.5 ms is opened by
    # the watch and is no sample (on an H200: once in one run). Up to 3 tries, one of which must be
    # released by the host; a gate that never holds, or that the watch always opens, still fails.
    tries = 0
    while True:
        tries += 1
        gated_ms = span(gated)
        if gated.released_early < tries or tries == 3:
            break
    assert gated.gates == tries and gated.released_early < tries, (gated.released_early, gated.gate_off)
    plain_ms = span(plain)
    assert plain_ms > 0.15  # the idle stream passed the start event at once: the host work is inside
    assert gated_ms < 0.1  # start, launch and stop ran back to back once released
    t = gated.start(cfg)
    gated.abandon(t)
    done = threading.Event()
    threading.Thread(target=lambda: (torch.cuda.synchronize(), done.set()), daemon=True).start()
    assert done.wait(10.0), "the stream still waits on an abandoned span's gate"
    assert torch.equal(x, torch.full_like(x, 2.0 + tries))  # the warm-up's add and the spans'


def test_a_gated_span_whose_host_work_waits_for_the_device_is_opened_by_the_watch():
    """The watch (GateWatch): a synchronize inside a gated span waits for a device that waits for the gate; the
    watch opens it after its timeout, so the synchronize returns, and the span is late (no sample). Before the
    watch this hung the stream on an H200."""
    why = gpu_unavailable_reason()
    if why is not None:
        pytest.skip(f"needs a GPU: {why}")
    from tritune.serving.runtime import DriverClock, driver_event_calls

    drv = driver_event_calls()
    assert drv is not None
    clock = DriverClock(drv, spin_idle=True)
    cfg = object()
    x = torch.zeros(1, device="cuda")
    clock.stop(clock.start(cfg))  # its first span spins (and loads the watch at the next)
    torch.cuda.synchronize()
    h = clock.stop(clock.start(cfg))
    assert clock.gates == 1 and clock.gate_off == "" and not clock.late(h), clock.gate_off
    t0 = time.perf_counter()
    t = clock.start(cfg)
    x.add_(1.0)
    torch.cuda.synchronize()  # inside the gated span: only the watch can open it
    waited = time.perf_counter() - t0
    h = clock.stop(t)
    assert clock.late(h) and clock.released_early == 1
    assert 0.0004 < waited < 0.5, waited  # the watch's 0.5 ms, not a hang
    torch.cuda.synchronize()
    assert torch.equal(x, torch.ones_like(x))
