"""Fast dispatch for configs with a ``pre_hook`` and for host TensorDescriptor arguments (Liger's
SwiGLU MLP sets descriptor block shapes in its configs' pre_hook and passes ``gate_multiplier=`` by keyword,
so every cached call took Triton's slow path). The real FastLauncher needs a GPU: these tests stand FAKE
launchers in for it (labelled below) and count which path each call takes."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest
import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

import tritune
import tritune.decorator.autotuned as autotune_module
import tritune.decorator.dispatch as dispatch
from tritune import Config
from tritune.decorator.keys import KeySpec


class FakeFastLauncher:
    """FAKE FastLauncher: records the argument list it was built for and every launch; launches nothing."""

    made: ClassVar[list[FakeFastLauncher]] = []

    def __init__(self, jit: Any, cfg: Any, args: Any, defaults: Any) -> None:
        self.built = list(args)
        self.launched: list[list[Any]] = []
        self.launch = lambda a, grid: self.launched.append(list(a)) or "fast"
        FakeFastLauncher.made.append(self)


class FakeJit:
    arg_names = ("d_in", "d_out", "n", "BLOCK", "SCALE")


def _desc(block: int = 16) -> TensorDescriptor:
    return TensorDescriptor.from_tensor(torch.empty(64, 64), [block, block])


@pytest.fixture
def fake_launcher(monkeypatch: pytest.MonkeyPatch) -> type[FakeFastLauncher]:
    FakeFastLauncher.made = []
    monkeypatch.setattr(dispatch, "FastLauncher", FakeFastLauncher)
    return FakeFastLauncher


def test_hooked_launcher_runs_the_hook_once_per_call_and_builds_for_what_it_leaves(fake_launcher: Any) -> None:
    calls: list[dict[str, Any]] = []

    def hook(nargs: dict[str, Any]) -> None:
        calls.append(dict(nargs))
        nargs["d_in"].block_shape = [nargs["BLOCK"], nargs["BLOCK"]]
        nargs["d_out"].block_shape = [nargs["BLOCK"], nargs["BLOCK"]]

    slow: list[Any] = []
    cfg = Config({"BLOCK": 32}, num_warps=8, pre_hook=hook)
    d_in, d_out = _desc(), _desc()
    launch = dispatch.make_fast_hooked(FakeJit(), cfg, [d_in, d_out, 64], {"SCALE": 2},
                                       {}, lambda a, kw, g: slow.append(a) or "slow")  # fmt: skip
    assert launch is not None
    # built on copies: the caller's descriptors are as they were, the binary's are as the hook leaves them
    assert d_in.block_shape == [16, 16] and d_out.block_shape == [16, 16]
    built = fake_launcher.made[0].built
    assert [tuple(d.block_shape) for d in built[:2]] == [(32, 32), (32, 32)] and built[2:] == [64, 32, 2]
    calls.clear()
    assert launch([d_in, d_out, 64], {"SCALE": 3}, (4,)) == "fast"
    assert len(calls) == 1  # once per call, with Triton's dict: arguments, keywords, config kwargs, options
    assert set(calls[0]) == {"d_in", "d_out", "n", "SCALE", "BLOCK", "num_warps", "num_stages"}
    assert calls[0]["SCALE"] == 3 and calls[0]["num_warps"] == 8
    assert d_in.block_shape == [32, 32]  # the real launch's hook changed the caller's descriptor, as Triton's
    assert fake_launcher.made[0].launched == [[d_in, d_out, 64, 32, 3]] and slow == []


def test_a_hook_that_leaves_other_facts_falls_back_without_running_twice(fake_launcher: Any) -> None:
    block = [32]
    runs = [0]

    def hook(nargs: dict[str, Any]) -> None:
        runs[0] += 1
        nargs["d_in"].block_shape = [block[0], block[0]]

    slow: list[Any] = []
    cfg = Config({"BLOCK": 32}, pre_hook=hook)
    launch = dispatch.make_fast_hooked(FakeJit(), cfg, [_desc(), _desc(), 64], {"SCALE": 1}, {},
                                       lambda a, kw, g: slow.append(a) or "slow")  # fmt: skip
    assert launch is not None
    block[0] = 64  # this call's hook sets another block shape than the binary was built for
    runs[0] = 0
    assert launch([_desc(), _desc(), 64], {"SCALE": 1}, (1,)) == "slow"
    assert runs[0] == 1 and len(slow) == 1 and fake_launcher.made[0].launched == []


def test_a_hook_that_raises_while_building_gives_no_launcher(fake_launcher: Any) -> None:
    def hook(nargs: dict[str, Any]) -> None:
        raise RuntimeError("boom")

    assert dispatch.make_fast_hooked(FakeJit(), Config({"BLOCK": 32}, pre_hook=hook), [_desc(), _desc(), 64],
                                     {"SCALE": 1}, {}, lambda a, kw, g: None) is None  # fmt: skip
    assert fake_launcher.made == []


def test_descriptor_facts_enter_the_call_key_and_the_generated_key_agrees() -> None:
    spec = KeySpec.build("k", ["d", "x", "n"], ["n"])
    x = torch.empty(8)
    d16, d32 = _desc(16), _desc(32)
    d16h = TensorDescriptor.from_tensor(torch.empty(64, 64, dtype=torch.float16), [16, 16])
    assert spec.call_key([d16, x, 8]) != spec.call_key([d32, x, 8])  # block shape selects the binary
    assert spec.call_key([d16, x, 8]) != spec.call_key([d16h, x, 8])  # so does the dtype
    assert spec.call_key([d16, x, 8]) == spec.call_key([_desc(16), x, 8])
    fast = spec.compiled_call_key([d16, x, 8])
    for args in ([d16, x, 8], [d32, x, 8], [d16h, x, 8], [x, x, 8], [d16, d16, 8], [3.5, x, 8], [None, x, 8]):
        assert fast(args) == spec.call_key(args), args
    other = spec.compiled_call_key([3.5, x, 8])  # first built for a float: a descriptor must not key as its type
    assert other([d16, x, 8]) == spec.call_key([d16, x, 8])
    kw = spec.compiled_kw_call_key([x], {"d": d16, "n": 8})
    for d in (d16, d32, d16h):
        assert kw([x], {"d": d, "n": 8}) == spec.kw_call_key([x], {"d": d, "n": 8})


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * factor, mask=m)


@pytest.mark.parametrize("by_keyword", [False, True])
def test_cached_calls_with_a_config_pre_hook_take_the_fast_path(monkeypatch: pytest.MonkeyPatch,
                                                                by_keyword: bool) -> None:  # fmt: skip
    """Through Autotuned.run, with the GPU-only fast path switched on and a FAKE FastLauncher that launches
    through the interpreter: after the first call (which chooses) every call takes the fast path, the config's
    hook runs once per call, none goes to Triton's launch path, and the outputs are right."""
    fast: list[int] = []

    class InterpretingFastLauncher:  # FAKE: launches the interpreted kernel, counting launches
        def __init__(self, jit: Any, cfg: Any, args: Any, defaults: Any) -> None:
            opts = cfg.launch_options()

            def launch(a: Any, grid: Any) -> Any:
                fast.append(1)
                return jit.run(*a, grid=grid, warmup=False, **opts)

            self.launch = launch

    monkeypatch.setattr(dispatch, "FastLauncher", InterpretingFastLauncher)
    slow = [0]
    real_launch = autotune_module.Autotuned.launch

    def counting_launch(self: Any, *a: Any) -> Any:
        slow[0] += 1
        return real_launch(self, *a)

    monkeypatch.setattr(autotune_module.Autotuned, "launch", counting_launch)
    hooked = [0]

    def hook(nargs: dict[str, Any]) -> None:
        hooked[0] += 1
        assert nargs["BLOCK"] == 64

    k = tritune.autotune([triton.Config({"BLOCK": 64}, pre_hook=hook)], ["n"])(scale_kernel)
    k._fast_ok = True  # as on a GPU
    n = 200
    for i in range(4):
        x = torch.randn(n)
        out = torch.full((n,), -1.0)
        if by_keyword:
            k[(triton.cdiv(n, 64),)](x, out, n, factor=2.0)
        else:
            k[(triton.cdiv(n, 64),)](x, out, n, 2.0)
        assert torch.equal(out, x * 2.0), i
        if i == 0:  # the first call also ran the hook on copies (the checks before launch, the build)
            assert hooked[0] >= 1
            hooked[0] = 0
    assert hooked[0] == 3  # then once per call
    assert len(fast) == 4 and slow[0] == 0  # the first call's launch already went through the built launcher


def test_each_configs_hook_runs_before_its_compile_check_in_the_replay_mode() -> None:
    """Without a GPU the compiler's front end checks each candidate; a config's ``pre_hook`` that sets the
    descriptors' block shape runs first, as before a GPU compile, so the written configs compile (they did not
    when the front end saw the dummy block the caller made the descriptors with). TIMINGS ARE SYNTHETIC (a FAKE
    timer); the kernel runs in the interpreter."""
    from kernels import desc_flat_double_kernel, set_desc_blocks
    from tritune.bench import Measurement

    class FakeTimer:  # FAKE: the larger tile, the faster
        def measure_config(self, config: Config, budget_s: float) -> Measurement:
            return Measurement.from_samples([1.0 / config.kwargs["BLOCK_M"]] * 8, stop="budget")

    written = [triton.Config({"BLOCK_M": m, "BLOCK_N": 16}, pre_hook=set_desc_blocks) for m in (16, 32)]
    k = tritune.autotune(written, [], store=False, timer=FakeTimer())(desc_flat_double_kernel)
    x, out = torch.randn(64, 32), torch.zeros(64, 32)
    d_in, d_out = TensorDescriptor.from_tensor(x, [1, 1]), TensorDescriptor.from_tensor(out, [1, 1])
    k[lambda meta: (64 // meta["BLOCK_M"], 32 // meta["BLOCK_N"])](d_in, d_out)
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert choice.config.kwargs["BLOCK_M"] == 32 and choice.source == "replayed"
