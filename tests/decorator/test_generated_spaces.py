"""Spaces nobody wrote, through the decorator: ``configs=None`` derives the candidates from the kernel's source,
``widen=True`` adds each given config's neighbours, and a generated config serves only after its outputs agree
with the first legal config's.

TIMINGS ARE SYNTHETIC: a FAKE timer gives every config a time from its values (no GPU here), so the test can make a
generated config the fastest; the kernels really run, in Triton's interpreter, for the checks and the calls.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch
import triton
import triton.language as tl

import tritune
from tritune.bench import Measurement
from tritune.config import Config


@triton.jit
def scale(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def scale_whole_blocks(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Right only when BLOCK divides n: its grid (n // BLOCK) leaves the tail unwritten otherwise."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)


class FakeTimer:
    """FAKE timings: the larger the block, the faster (so a generated, larger block wins when it may)."""

    def __init__(self) -> None:
        self.timed: list[Config] = []

    def measure_config(self, config: Config, budget_s: float) -> Measurement:
        self.timed.append(config)
        t = 1.0 / config.kwargs.get("BLOCK", 1) + 0.0001 * config.num_warps
        return Measurement.from_samples([t] * 8, stop="budget")


class WarmTwinTimer(FakeTimer):
    """FAKE timings with a warm twin (``measure_config_warm``): flushed, larger blocks are faster; warm, blocks
    above ``warm_best`` are ``warm_penalty`` times slower than it."""

    def __init__(self, warm_best: int, warm_penalty: float) -> None:
        super().__init__()
        self.warm_best, self.warm_penalty = warm_best, warm_penalty
        self.warm: list[Config] = []

    def measure_config_warm(self, config: Config, budget_s: float) -> Measurement:
        self.warm.append(config)
        t = 1.0 if config.kwargs["BLOCK"] <= self.warm_best else self.warm_penalty
        return Measurement.from_samples([t] * 8, stop="budget")


def _call(k: Any, n: int, grid: Any) -> tuple[torch.Tensor, torch.Tensor]:
    x = torch.randn(n)
    out = torch.full((n,), -1.0)
    k[grid](x, out, n)
    return x, out


def test_configs_none_derives_a_space_from_the_kernel_and_tunes_it() -> None:
    timer = FakeTimer()
    k = tritune.autotune(key=["n"], store=False, timer=timer)(scale)
    x, out = _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    assert torch.equal(out, x * 2)
    assert k.space_source == "derived" and len(k.configs) > 10
    blocks = {c.kwargs["BLOCK"] for c in k.candidates}
    assert all(b & (b - 1) == 0 for b in blocks) and max(blocks) <= 4096  # powers of 2, bounded by n
    (choice,) = k.choices().values()
    space = choice.stats["space"]
    assert space["source"] == "derived" and "BLOCK" in space["how"] and space["legal"] > 0
    assert choice.stats["checked"]["mode"] == "agree" and choice.stats["checked"]["checked"] >= 1
    assert set(choice.stats["checked"]["s"]) == {"inputs", "checks"} and choice.stats["checked"]["s"]["checks"] > 0


def test_a_generated_winner_slower_with_the_l2_warm_gives_way_to_the_written_config() -> None:
    """Widened: BLOCK=256 (generated) wins the FAKE flushed race; timed warm against the written BLOCK=128 it is 16%
    slower, so 128 serves, and the check is in the choice's stats; with a warm twin that agrees, 256 serves."""
    timer = WarmTwinTimer(warm_best=128, warm_penalty=1.16)
    k = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, timer=timer, widen=True)(scale)
    x, out = _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    assert torch.equal(out, x * 2) and k.best_config.kwargs["BLOCK"] == 128
    (choice,) = k.choices().values()
    check = choice.stats["warm_check"]
    assert not check["kept"] and check["written"].startswith("BLOCK=128,") and check["warm_ms"] > check["written_warm_ms"]
    assert {c.kwargs["BLOCK"] for c in timer.warm} == {128, int(check["winner"].split(",")[0].split("=")[1])}

    timer = WarmTwinTimer(warm_best=4096, warm_penalty=1.16)
    k = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, timer=timer, widen=True)(scale)
    _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    (choice,) = k.choices().values()
    assert choice.stats["warm_check"]["kept"] and k.best_config.kwargs["BLOCK"] > 128


class TiedTimer(FakeTimer):
    """FAKE timings: every BLOCK=128 config (the written one and its generated warps and stages variants) 1.0, every
    BLOCK=256 config ``neighbour``, the rest 1.5; the warm twin gives the same times."""

    def __init__(self, neighbour: float) -> None:
        super().__init__()
        self.neighbour = neighbour

    def measure_config(self, config: Config, budget_s: float) -> Measurement:
        self.timed.append(config)
        t = {128: 1.0, 256: self.neighbour}.get(config.kwargs["BLOCK"], 1.5)
        return Measurement.from_samples([t] * 8, stop="budget")

    measure_config_warm = measure_config


def test_a_generated_config_tied_with_the_written_one_does_not_serve() -> None:
    """Widened around BLOCK=128: its generated neighbours at BLOCK=256, 0.2% faster (within half the race's 1%
    resolution: tied), and its own warps and stages variants, as fast as it, lose the tie to the written config;
    2% faster, a neighbour wins (and passes the warm check)."""
    timer = TiedTimer(neighbour=0.998)
    k = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, timer=timer, widen=True)(scale)
    x, out = _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert k.best_config.kwargs["BLOCK"] == 128 and not choice.stats["space"]["winner_generated"]
    assert choice.config not in k.generated and len(choice.stats["tie"]["tied"]) > 2
    assert "warm_check" not in choice.stats  # a written winner

    timer = TiedTimer(neighbour=0.98)
    k = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, timer=timer, widen=True)(scale)
    _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    (choice,) = k.choices().values()
    assert k.best_config.kwargs["BLOCK"] == 256 and choice.stats["space"]["winner_generated"]
    assert choice.stats["warm_check"]["kept"]


def test_widen_two_reaches_two_steps_from_each_given_config(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``widen=2``: the one-step neighbours and theirs (BLOCK 128 -> 512, a block doubled with its warps halved; the
    kernel's bounds leave out blocks below 128 at 4 warps); the
    space says how far it reached; ``$TRITUNE_WIDEN`` takes a number of steps and names itself when it cannot."""
    from tritune.api import _widen

    grid = lambda meta: (triton.cdiv(3000, meta["BLOCK"]),)  # noqa: E731
    k1 = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, timer=FakeTimer(), widen=True)(scale)
    k2 = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, timer=FakeTimer(), widen=2)(scale)
    for k in (k1, k2):
        x, out = _call(k, 3000, grid)
        assert torch.equal(out, x * 2)
    one, two = set(k1.candidates), set(k2.candidates)
    assert one < two and 512 in {c.kwargs["BLOCK"] for c in two - one}
    assert any(c.kwargs["BLOCK"] == 256 and c.num_warps == 2 for c in two - one)
    (choice,) = k2.choices().values()
    assert "up to 2 steps" in choice.stats["space"]["how"] and choice.stats["space"]["generated"] == len(two) - 1
    # scale has no loop: every num_stages is the same binary, so none is generated, and the space says why
    assert choice.stats["space"]["stages_kept"] == "the kernel has no loop to pipeline"
    assert {c.num_stages for c in two} == {next(iter(one)).num_stages}
    for value, radius in (("2", 2), ("on", 1), ("1", 1), ("off", 0), ("", 0)):
        monkeypatch.setenv("TRITUNE_WIDEN", value)
        assert _widen(None) == radius
    monkeypatch.setenv("TRITUNE_WIDEN", "far")
    with pytest.raises(tritune.ConfigError, match=r"\$TRITUNE_WIDEN='far'"):
        _widen(None)
    with pytest.raises(tritune.ConfigError, match=r"^scale: \$TRITUNE_WIDEN='far'"):
        tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False)(scale)
    with pytest.raises(tritune.ConfigError, match=r"^scale: widen=-1"):
        tritune.autotune([triton.Config({"BLOCK": 128})], ["n"], store=False, widen=-1)(scale)


def test_a_written_winner_needs_no_warm_check() -> None:
    timer = WarmTwinTimer(warm_best=128, warm_penalty=1.16)
    k = tritune.autotune([triton.Config({"BLOCK": 1024}, num_warps=1, num_stages=1)], ["n"], store=False,
                         timer=timer, widen=True)(scale)  # fmt: skip
    _call(k, 600, lambda meta: (triton.cdiv(600, meta["BLOCK"]),))  # n=600: no larger block; the fewest warps
    (choice,) = k.choices().values()
    assert len(k.candidates) > 1 and k.best_config.kwargs["BLOCK"] == 1024 and k.best_config.num_warps == 1
    assert "warm_check" not in choice.stats and timer.warm == []


def test_a_kernel_with_nothing_to_derive_says_so_in_one_line() -> None:
    @triton.jit
    def fixed(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

    k = tritune.autotune(key=["n"], store=False, timer=FakeTimer())(fixed)
    x = torch.randn(64)
    out = torch.empty(64)
    try:
        k[(1,)](x, out, 64, BLOCK=64)  # the caller passes the only constexpr
    except tritune.ConfigError as e:
        assert "fixed" in str(e) and "Pass configs=[...]" in str(e) and "\n" not in str(e)
    else:
        raise AssertionError("a kernel with no free constexpr must say it cannot derive a space")


def test_widened_neighbours_that_compute_wrong_results_are_caught_and_never_serve() -> None:
    """The trap: the given blocks 4 and 8 divide n=200; the widened neighbour 16 does not, leaves the tail
    unwritten, and would win on (FAKE) speed. The check against the first given config stops it."""
    timer = FakeTimer()
    k = tritune.autotune([triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], ["n"], store=False,
                         timer=timer, widen=True)(scale_whole_blocks)  # fmt: skip
    x, out = _call(k, 200, lambda meta: (200 // meta["BLOCK"],))
    assert torch.equal(out, x * 2)
    assert k.best_config.kwargs["BLOCK"] in (4, 8)
    (choice,) = k.choices().values()
    checked, space = choice.stats["checked"], choice.stats["space"]
    assert checked["reference"].startswith("BLOCK=4,")  # a config someone wrote
    wrong = [c for c in checked["other"] if c.startswith("BLOCK=16,")]
    assert wrong and all("differ" in checked["other"][c] for c in wrong)
    assert space["source"] == "widened" and space["generated"] >= 2 and space["given"] == 2
    assert not any(c.kwargs["BLOCK"] == 16 for c in timer.timed)  # failed before any timing


def test_widened_neighbours_that_agree_may_win_and_say_so() -> None:
    timer = FakeTimer()
    k = tritune.autotune([triton.Config({"BLOCK": 256})], ["n"], store=False, timer=timer, widen=True)(scale)
    x, out = _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    space = choice.stats["space"]
    assert k.best_config.kwargs["BLOCK"] == 512 and space["winner_generated"]  # a neighbour, faster (FAKE)
    assert space["best_written"]["config"].startswith("BLOCK=256") and space["winner_over_best_written"] < 1


def test_a_widened_list_is_searched_outward_from_its_configs_near_the_best() -> None:
    """A widened list's key is searched from the written configs (``tritune.search.rings``): the neighbours of the
    fast written config are compiled, checked and timed, those of the slow one never are; with ``widen=2`` the second
    ring follows the first where it is near the best. SYNTHETIC times (FakeTimer: larger blocks faster)."""
    grid = lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)  # noqa: E731
    written = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 512})]
    for steps in (1, 2):
        timer = FakeTimer()
        k = tritune.autotune(written, ["n"], store=False, timer=timer, widen=steps)(scale)
        x, out = _call(k, 4096, grid)
        assert torch.equal(out, x * 2)
        timed = {c.kwargs["BLOCK"] for c in timer.timed}
        assert {16, 512, 1024} <= timed and not timed & {8, 32}, timed  # 16's neighbours: out of the race
        assert (2048 in timed) == (steps == 2)  # the second ring: a neighbour of 1024, near the best
        assert k.best_config.kwargs["BLOCK"] == (2048 if steps == 2 else 1024)
        (choice,) = k.choices().values()
        search, space = choice.stats["search"], choice.stats["space"]
        assert search["strategy"] == "rings" and search["stopped"] == "exhausted", search
        untimed = space["generated_legal"] - space["generated_timed"]
        assert untimed > 0 and search["untimed"] == untimed, (search, space)
        assert space["winner_generated"] and space["best_written"]["config"].startswith("BLOCK=512")
        assert "searched" in choice.detail and "rings" in choice.detail


def test_a_named_search_or_budget_takes_a_widened_list_as_any_space() -> None:
    """``search="exhaustive"`` races every config of the widened list, neighbours of the slow written config too."""
    timer = FakeTimer()
    written = [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 512})]
    k = tritune.autotune(written, ["n"], store=False, timer=timer, widen=True, search="exhaustive")(scale)
    x, out = _call(k, 4096, lambda meta: (triton.cdiv(4096, meta["BLOCK"]),))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert {8, 32} <= {c.kwargs["BLOCK"] for c in timer.timed} and "search" not in choice.stats
    assert choice.stats["space"]["generated_timed"] == choice.stats["space"]["generated_legal"]


def test_a_generated_block_right_on_the_tuning_input_but_wrong_at_the_buckets_edge_never_serves_the_bucket() -> None:
    """The trap of a bucketed key: at n=256 every block size divides n, so the widened neighbour 16 computes the
    same as the given 4 and 8; at n=255, also in the bucket 129..256 that the winner serves, it leaves 15 elements
    unwritten where 4 leaves 3. The check runs the bucket's edge sizes too and stops it before any timing."""
    timer = FakeTimer()
    k = tritune.autotune([triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], {"n": tritune.bucket.pow2},
                         store=False, timer=timer, widen=True)(scale_whole_blocks)  # fmt: skip
    x, out = _call(k, 256, lambda meta: (meta["n"] // meta["BLOCK"],))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    checked = choice.stats["checked"]
    wrong = {c: why for c, why in checked["other"].items() if c.startswith("BLOCK=16,")}
    assert wrong and all("the bucket's sizes n=255" in why for why in wrong.values())
    assert not any(c.kwargs["BLOCK"] == 16 for c in timer.timed)
    assert k.best_config.kwargs["BLOCK"] in (4, 8)


def test_a_call_by_keyword_is_checked_as_a_positional_one_bucket_edges_included() -> None:
    """The same trap launched as fla launches its kernels, every argument by keyword: the check copies, runs and
    compares the tensors given by keyword, and takes the bucketed ``n`` from the keywords for the edge sizes."""
    timer = FakeTimer()
    k = tritune.autotune([triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], {"n": tritune.bucket.pow2},
                         store=False, timer=timer, widen=True)(scale_whole_blocks)  # fmt: skip
    x, out = torch.randn(256), torch.full((256,), -1.0)
    k[lambda meta: (meta["n"] // meta["BLOCK"],)](x_ptr=x, out_ptr=out, n=256)
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    wrong = {c: why for c, why in choice.stats["checked"]["other"].items() if c.startswith("BLOCK=16,")}
    assert wrong and all("the bucket's sizes n=255" in why and "out_ptr" in why for why in wrong.values())
    assert not any(c.kwargs["BLOCK"] == 16 for c in timer.timed)
    assert k.best_config.kwargs["BLOCK"] in (4, 8)


def test_an_exact_key_checks_only_its_own_size_so_the_same_block_may_serve_it() -> None:
    """The control: with ``key=["n"]`` the winner serves n=256 alone, where block 16 is right, so it passes."""
    timer = FakeTimer()
    k = tritune.autotune([triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})], ["n"], store=False, timer=timer,
                         widen=True)(scale_whole_blocks)  # fmt: skip
    x, out = _call(k, 256, lambda meta: (meta["n"] // meta["BLOCK"],))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert not any(c.startswith("BLOCK=16,") for c in choice.stats["checked"]["other"])
    assert any(c.kwargs["BLOCK"] == 16 for c in timer.timed)


class _OwnLoop(tritune.api.TritonAutotuner):
    """A library autotuner that picks its winner in its own loop over ``_bench``, as FlagGems' ``LibTuner`` does
    (under the switch its base class is tritune's stand-in). Its do_bench is FAKE (it runs the call once); the loop
    then takes SYNTHETIC times, larger blocks faster, for every config ``_bench`` did not refuse with ``inf``."""

    def run(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        self.nargs = dict(zip(self.arg_names, args))
        self.benched = {}
        for c in self.prune_configs(kwargs):
            got = self._bench(*args, config=c, **kwargs)
            self.benched[c.kwargs["BLOCK"]] = got[0] if got[0] == float("inf") else 1.0 / c.kwargs["BLOCK"]
        best = min((c for c in self.configs if c.kwargs["BLOCK"] in self.benched),
                   key=lambda c: self.benched[c.kwargs["BLOCK"]])  # fmt: skip
        self.best_config = best
        return self.fn.run(*args, warmup=False, **kwargs, **best.all_kwargs())


def _fake_do_bench(fn, quantiles=None):  # type: ignore[no-untyped-def]
    fn()
    return [1.0] * 3


def test_a_library_loop_times_widened_neighbours_only_after_they_agree(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("TRITUNE_WIDEN", "1")
    k = _OwnLoop(scale_whole_blocks, ["x_ptr", "out_ptr", "n"], [triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})],
                 ["n"], do_bench=_fake_do_bench)  # fmt: skip
    x, out = torch.randn(200), torch.full((200,), -1.0)
    k.run(x, out, 200, grid=lambda meta: (200 // meta["BLOCK"],))
    assert k.benched[16] == float("inf") and k.benched[4] < float("inf")  # the trap: refused before any timing
    assert k.best_config.kwargs["BLOCK"] in (4, 8) and torch.equal(out, x * 2)

    ok = _OwnLoop(scale, ["x_ptr", "out_ptr", "n"], [triton.Config({"BLOCK": 128})], ["n"], do_bench=_fake_do_bench)
    x, out = torch.randn(600), torch.full((600,), -1.0)
    ok.run(x, out, 600, grid=lambda meta: (triton.cdiv(600, meta["BLOCK"]),))
    assert ok.best_config.kwargs["BLOCK"] == 256 and torch.equal(out, x * 2)  # a neighbour that agrees may win


def test_a_library_loop_gives_inf_to_a_widened_neighbour_that_cannot_run_here(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A neighbour whose binary needs more shared memory than the GPU has meets it at its first launch, the check's
    (FlagGems' addmm under widening on an H100: 294,912 B against 232,448): the loop gets ``inf`` for it, as Triton's
    ``_bench`` gives such a config, and the call succeeds. The out-of-resources error is FAKE (the interpreter has
    no shared memory), raised by the launch of the largest block."""
    from triton.runtime.errors import OutOfResources

    import tritune.decorator.timing as timing

    real = timing.run_once

    def run_once(tuned, cfg, args, kwargs, grid):  # type: ignore[no-untyped-def]
        if cfg.kwargs["BLOCK"] == 256:
            raise OutOfResources(294912, 232448, "shared memory")  # FAKE
        real(tuned, cfg, args, kwargs, grid)

    monkeypatch.setattr(timing, "run_once", run_once)
    monkeypatch.setenv("TRITUNE_WIDEN", "1")
    k = _OwnLoop(scale, ["x_ptr", "out_ptr", "n"], [triton.Config({"BLOCK": 128})], ["n"], do_bench=_fake_do_bench)
    x, out = torch.randn(600), torch.full((600,), -1.0)
    k.run(x, out, 600, grid=lambda meta: (triton.cdiv(600, meta["BLOCK"]),))
    assert k.benched[256] == float("inf") and k.benched[128] < float("inf")
    assert k.best_config.kwargs["BLOCK"] != 256 and torch.equal(out, x * 2)


@triton.jit
def add_bias(x_ptr, b_ptr, out_ptr, n, stride_b, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs * stride_b, mask=m), mask=m)


def test_inputs_that_share_memory_are_checked_and_the_call_succeeds() -> None:
    """A broadcast bias (``expand``: stride 0, as FlagGems' addmm passes it): the check's perturbed copies refill its
    storage instead of writing one value over another, and the call returns the right result."""
    k = tritune.autotune([triton.Config({"BLOCK": 256})], ["n"], store=False, timer=FakeTimer(),
                         widen=True)(add_bias)  # fmt: skip
    x, b = torch.randn(3000), torch.randn(1).expand(3000)
    out = torch.empty(3000)
    k[lambda meta: (triton.cdiv(3000, meta["BLOCK"]),)](x, b, out, 3000, b.stride(0))
    assert torch.equal(out, x + b)
    (choice,) = k.choices().values()
    assert choice.stats["checked"]["inputs"] == 3 and choice.stats["checked"]["passed"]


def test_a_check_that_cannot_make_its_inputs_refuses_the_generated_configs_and_the_call_still_succeeds(
        monkeypatch) -> None:  # type: ignore[no-untyped-def]  # fmt: skip
    import tritune.verify.reference as reference

    def broken(args: Any, seed: int) -> Any:
        raise RuntimeError("FAKE: these inputs cannot be copied")

    monkeypatch.setattr(reference, "perturbed_inputs", broken)
    timer = FakeTimer()
    k = tritune.autotune([triton.Config({"BLOCK": 256})], ["n"], store=False, timer=timer, widen=True)(scale)
    x, out = _call(k, 3000, lambda meta: (triton.cdiv(3000, meta["BLOCK"]),))
    assert torch.equal(out, x * 2) and k.best_config.kwargs["BLOCK"] == 256  # the written config serves
    (choice,) = k.choices().values()
    assert all("could not be made (RuntimeError: FAKE" in why for why in choice.stats["checked"]["other"].values())
    assert {c.kwargs["BLOCK"] for c in timer.timed} == {256}


def test_widen_derived_adds_the_kernels_derived_space_to_the_list_and_checks_it() -> None:
    """``widen="derived"``: the written configs first, then every config of the space derived from the kernel's
    source at the call's sizes that the list lacks, labelled as derived and checked against a written config before
    any timing; the trap's blocks that leave a tail unwritten are refused, and the fastest (FAKE) block that agrees
    serves. ``$TRITUNE_WIDEN=derived`` and ``widen="Derived"`` name the same mode."""
    from tritune.api import _widen
    from tritune.space import derive_space

    timer = FakeTimer()
    written = [triton.Config({"BLOCK": 4}), triton.Config({"BLOCK": 8})]
    k = tritune.autotune(written, ["n"], store=False, timer=timer, widen="derived")(scale_whole_blocks)
    x, out = _call(k, 200, lambda meta: (200 // meta["BLOCK"],))
    assert torch.equal(out, x * 2)
    derived = derive_space(scale_whole_blocks, passed=["x_ptr", "out_ptr", "n"], sizes={"n": 200}).space
    assert derived is not None
    cands = list(k.candidates)
    assert [c.kwargs["BLOCK"] for c in cands[:2]] == [4, 8]  # the written configs first
    assert set(cands[2:]) == set(derived.configs()) - set(cands[:2]) and len(cands) > 10
    (choice,) = k.choices().values()
    space, checked = choice.stats["space"], choice.stats["checked"]
    assert space["source"] == "derived around the list" and space["given"] == 2 and "configs of" in space["how"]
    assert space["generated"] == len(cands) - 2
    assert checked["reference"].startswith("BLOCK=4,")
    refused = {int(c.split(",")[0].split("=")[1]) for c in checked["other"]}
    assert refused and all(200 % b for b in refused)  # every refused block leaves a tail; no divisor is refused
    assert 200 % k.best_config.kwargs["BLOCK"] == 0
    assert not any(c.kwargs["BLOCK"] in refused for c in timer.timed)  # refused before any timing
    assert _widen("Derived") == "derived"


def test_widen_derived_configs_carry_the_lists_pre_hook_and_it_runs_before_each_is_prepared() -> None:
    """A list whose configs share a ``pre_hook`` (Liger's SwiGLU and Triton's tutorial 06 set a host descriptor's
    block shape from the config there): the derived configs carry the same hook, and it runs for each candidate
    before its compile check (here the compiler front end of the CPU replay mode), as Triton runs it before a
    benchmark; a list whose configs carry different hooks is widened one step instead, and says why."""
    seen: list[int] = []

    def hook(nargs: dict[str, Any]) -> None:
        seen.append(nargs["BLOCK"])

    def other(nargs: dict[str, Any]) -> None:
        return None

    written = [triton.Config({"BLOCK": 4}, pre_hook=hook), triton.Config({"BLOCK": 8}, pre_hook=hook)]
    k = tritune.autotune(written, ["n"], store=False, timer=FakeTimer(), widen="derived")(scale_whole_blocks)
    x, out = _call(k, 200, lambda meta: (200 // meta["BLOCK"],))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert choice.stats["space"]["source"] == "derived around the list"
    derived = list(k.candidates)[2:]
    assert derived and all(c.pre_hook is hook for c in derived)
    assert {c.kwargs["BLOCK"] for c in derived} <= set(seen)  # every derived block went through the hook

    mixed = [triton.Config({"BLOCK": 4}, pre_hook=hook), triton.Config({"BLOCK": 8}, pre_hook=other)]
    k = tritune.autotune(mixed, ["n"], store=False, timer=FakeTimer(), widen="derived")(scale_whole_blocks)
    x, out = _call(k, 200, lambda meta: (200 // meta["BLOCK"],))
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    assert "different pre_hooks" in choice.stats["space"]["not_derived"]


def test_widen_derived_without_a_derived_space_widens_one_step_and_says_why(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A kernel whose block sizes the caller passes has no derived space: ``widen="derived"`` then widens the list
    one step (here: warps), and the space report names why; in a library's own loop, a derived space larger than
    ``OWN_LOOP_DERIVED_MAX`` configs is left out the same way (the loop would time every config)."""
    from tritune.decorator import autotuned

    @triton.jit
    def passed_block(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)

    k = tritune.autotune([triton.Config({}, num_warps=4)], ["n"], store=False, timer=FakeTimer(),
                         widen="derived")(passed_block)  # fmt: skip
    x, out = torch.randn(300), torch.full((300,), -1.0)
    k[(3,)](x, out, 300, BLOCK=128)
    assert torch.equal(out, x * 2)
    (choice,) = k.choices().values()
    space = choice.stats["space"]
    assert space["source"] == "widened" and "widened one step instead" in space["not_derived"]
    assert {c.num_warps for c in k.candidates} >= {2, 4}  # the one-step neighbours (warps halved)

    monkeypatch.setenv("TRITUNE_WIDEN", "derived")
    monkeypatch.setattr(autotuned, "OWN_LOOP_DERIVED_MAX", 3)
    loop = _OwnLoop(scale, ["x_ptr", "out_ptr", "n"], [triton.Config({"BLOCK": 128})], ["n"], do_bench=_fake_do_bench)
    x, out = torch.randn(600), torch.full((600,), -1.0)
    loop.run(x, out, 600, grid=lambda meta: (triton.cdiv(600, meta["BLOCK"]),))
    assert torch.equal(out, x * 2)
    assert "library's own loop times every config" in loop.space_report["not_derived"]
    assert loop.space_report["source"] == "widened"
