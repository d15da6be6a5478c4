"""``numerics="exact"``: only configs that compute the reference config's bits may win.

A row sum that adds in chunks of BLOCK: configs that differ in BLOCK sum in another order (other float bits),
configs that differ only in ``num_warps`` compute the same bits (the interpreter ignores warps). TIMINGS ARE
SYNTHETIC (a replay timer: no GPU here) and make a config outside the reference's class the fastest; the kernel
really runs, in Triton's interpreter, for the class checks and the call.
"""

from __future__ import annotations

import torch
import triton

import tritune
from kernels import rowsum_kernel as row_sum
from library_loop import OwnLoop
from tritune.bench import ReplayTimer
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status

CONFIGS = [triton.Config({"BLOCK": b}, num_warps=w) for b in (32, 128) for w in (2, 4)]
#: SYNTHETIC: BLOCK=128 is fastest; within the reference's class (BLOCK=32), 4 warps beat 2.
TIMES = {(32, 2): 1.0, (32, 4): 0.8, (128, 2): 0.3, (128, 4): 0.4}


def _kernel(numerics: str):  # type: ignore[no-untyped-def]
    pts = [LandscapePoint(tritune.Config({"BLOCK": b}, num_warps=w), Status.MEASURED, t) for (b, w), t in TIMES.items()]
    timer = ReplayTimer(Landscape.from_points("rowsum_kernel", "synthetic", {}, pts), seed=0)
    return tritune.autotune(CONFIGS, ["n"], store=False, timer=timer, numerics=numerics)(row_sum)


def _run(k, x):  # type: ignore[no-untyped-def]
    out = torch.empty(x.shape[0])
    k[(x.shape[0],)](x, out, x.shape[1])
    return out


def test_exact_picks_the_fastest_config_that_computes_the_references_bits() -> None:
    torch.manual_seed(0)
    x = torch.randn(8, 1000)
    exact, free = _kernel("exact"), _kernel("any")
    got, fast = _run(exact, x), _run(free, x)
    assert free.best_config.kwargs["BLOCK"] == 128  # the unconstrained winner sums in another order
    assert exact.best_config.kwargs == {"BLOCK": 32} and exact.best_config.num_warps == 4
    ref = tritune.autotune([CONFIGS[0]], ["n"], store=False)(row_sum)
    assert torch.equal(got, _run(ref, x))  # bit for bit the reference config's result
    assert not torch.equal(got, fast)  # what the constraint protects against: the fastest config's other bits
    (choice,) = exact.choices().values()
    n = choice.stats["numerics"]
    assert n["reference"] == tritune.Config({"BLOCK": 32}, num_warps=2).id and n["inputs"] == 3
    assert n["class_size"] == 2 and len(n["other"]) == 2 and all("BLOCK=128" in c for c in n["other"])


def test_exact_and_any_are_different_store_keys() -> None:
    exact, free = _kernel("exact"), _kernel("any")
    keys = [k.tuner.tuning_key(k, (1000, "torch.float32", "torch.float32"), interpreter=True) for k in (exact, free)]
    assert keys[0].numerics == "exact" and keys[1].numerics == "any" and keys[0].digest != keys[1].digest


def test_a_bad_numerics_value_names_the_kernel() -> None:
    import pytest

    with pytest.raises(tritune.ConfigError, match=r"rowsum_kernel: numerics='fast'"):
        tritune.autotune(CONFIGS, ["n"], numerics="fast")(row_sum)


def _fake_do_bench(fn, quantiles=None):  # type: ignore[no-untyped-def]
    """FAKE do_bench: runs the call once, then reports SYNTHETIC times from the config the call launched."""
    fn()
    return [_fake_do_bench.next.pop(0)] * 3


def test_exact_holds_in_a_library_loop_over_bench(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TRITUNE_NUMERICS", "exact")
    torch.manual_seed(0)
    x = torch.randn(8, 1000)
    k = OwnLoop(row_sum, ["x_ptr", "out_ptr", "n"], CONFIGS, ["n"], do_bench=_fake_do_bench)
    _fake_do_bench.next = [1.0, 0.8]  # SYNTHETIC, for the two configs of the reference's class; the others never run
    got = torch.empty(8)
    k.run(x, got, 1000, grid=(8,))
    assert k.best_config.kwargs == {"BLOCK": 32} and k.best_config.num_warps == 4
    assert _fake_do_bench.next == []  # BLOCK=128 was refused (inf) before any timing
    ref = tritune.autotune([CONFIGS[0]], ["n"], store=False)(row_sum)
    assert torch.equal(got, _run(ref, x))
    # on the record: the key the loop decided, with the class its check found
    ((key, choice),) = k.choices().items()
    assert key == (1000, "torch.float32", "torch.float32")
    assert choice.source == "library" and choice.original is k.best_config
    assert choice.config == tritune.Config({"BLOCK": 32}, num_warps=4)
    n = choice.stats["numerics"]
    assert n["reference"] == tritune.Config({"BLOCK": 32}, num_warps=2).id
    assert n["class_size"] == 2 and all("BLOCK=128" in c for c in n["other"])
    (listed,) = tritune.fleet.choices([k])  # what a fleet recording of this run holds for the kernel
    assert listed["source"] == "library" and listed["key"] == repr(key)


def test_exact_serves_the_reference_when_its_check_cannot_make_inputs(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import tritune.verify.reference as reference

    def broken(args, seed):  # type: ignore[no-untyped-def]
        raise RuntimeError("FAKE: these inputs cannot be copied")

    monkeypatch.setattr(reference, "perturbed_inputs", broken)
    torch.manual_seed(0)
    x = torch.randn(8, 1000)
    k = _kernel("exact")
    got = _run(k, x)  # the call succeeds
    assert k.best_config.kwargs == {"BLOCK": 32} and k.best_config.num_warps == 2  # the reference itself
    ref = tritune.autotune([CONFIGS[0]], ["n"], store=False)(row_sum)
    assert torch.equal(got, _run(ref, x))


def test_exact_checks_tensors_passed_by_keyword() -> None:
    # fla launches its kernels with every argument by keyword (``kernel[grid](x=x, y=y, ...)``): the check copies and
    # compares those tensors as it does positional ones, so the class is what it is for a positional call
    torch.manual_seed(0)
    x = torch.randn(8, 1000)
    k = _kernel("exact")
    got = torch.empty(8)
    k[(8,)](x_ptr=x, out_ptr=got, n=1000)
    assert k.best_config.kwargs == {"BLOCK": 32} and k.best_config.num_warps == 4
    ref = tritune.autotune([CONFIGS[0]], ["n"], store=False)(row_sum)
    assert torch.equal(got, _run(ref, x))
    (choice,) = k.choices().values()
    n = choice.stats["numerics"]
    assert n["class_size"] == 2 and len(n["other"]) == 2 and all("BLOCK=128" in c for c in n["other"])
    assert all("out_ptr" in why for why in n["other"].values())  # named by the argument that differed
