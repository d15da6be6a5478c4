"""widen: the given configs first and never dropped, each neighbour one step along one axis and labelled with its
origin; given the kernel, only block parameters, within their derived bounds."""

from __future__ import annotations

from pathlib import Path

import pytest
import space_kernels as K
from hypothesis import given, settings
from hypothesis import strategies as st

from tritune import Config, ConfigError
from tritune.space import Launch, check_static_all, widen
from tritune.space.bounds import is_pow2, next_pow2, prev_pow2

MATMUL_LIST = [
    Config({"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8}, num_warps=8,
           num_stages=3),
    Config({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8}, num_warps=4,
           num_stages=4),
]  # fmt: skip


def _axes(a: Config, b: Config) -> list[str]:
    """The parameters (meta-parameters and launch options) in which two configs differ."""
    da, db = a.as_dict(), b.as_dict()
    return sorted(k for k in set(da) | set(db) if da.get(k) != db.get(k))


configs_st = st.lists(
    st.builds(
        lambda m, n, w, s, g: Config({"BLOCK_M": m, "BLOCK_N": n, "GROUP": g, "EVEN": True}, num_warps=w, num_stages=s),
        st.sampled_from([16, 32, 48, 64, 96, 128, 256]),
        st.sampled_from([1, 2, 8, 64, 100, 512]),
        st.sampled_from([1, 2, 4, 8, 16]),
        st.integers(1, 5),
        st.sampled_from([4, 8]),
    ),
    min_size=1,
    max_size=6,
)


@settings(max_examples=60, deadline=None)
@given(configs=configs_st, factor=st.sampled_from([2, 4]))
def test_laws_of_widening(configs: list[Config], factor: int) -> None:
    w = widen(configs, factor=factor)
    given_once = list(dict.fromkeys(configs))
    out = w.configs()
    assert out[: len(given_once)] == given_once  # the given configs, first, in order, none dropped
    assert list(w.given) == given_once
    assert len(out) == len(set(out))  # no duplicates
    assert w.space.configs() == out
    for e in w.generated:
        assert e.origin in given_once and e.config not in given_once
        (axis,) = _axes(e.config, e.origin)  # one axis at a time
        old, new = e.origin.as_dict()[axis], e.config.as_dict()[axis]
        assert e.change == f"{axis} {old}->{new}"
        if axis == "num_warps":
            assert new in (old // 2, old * 2) and 1 <= new <= 16
        elif axis == "num_stages":
            assert abs(new - old) == 1 and 1 <= new <= 5
        else:
            assert axis in ("BLOCK_M", "BLOCK_N", "GROUP")  # GROUP varies or not: never the bool EVEN
            if is_pow2(old):
                assert new in (old // factor, old * factor)
            else:
                assert new in (prev_pow2(old), next_pow2(old))
            assert is_pow2(new)
    for g in given_once:  # every given config a generated one neighbours is among its origins, and only those
        for n in widen([g], factor=factor, params=w.params).generated:
            if n.config not in given_once:
                assert g in w.entry(n.config).origins
    for e in w.generated:
        assert e.origins[0] == e.origin and len(set(e.origins)) == len(e.origins)
        assert all(len(_axes(e.config, o)) == 1 and o in given_once for o in e.origins)


@settings(max_examples=40, deadline=None)
@given(configs=configs_st)
def test_a_radius_of_two_is_the_neighbours_and_their_own_neighbours(configs: list[Config]) -> None:
    """``radius=2``: the one-step list, in its order, then the one-step neighbours of its generated configs; every
    config two steps from a given one (a block doubled with the warps halved) is in it unless a bound skipped it."""
    one, two = widen(configs), widen(configs, radius=2)
    assert two.configs()[: len(one.configs())] == one.configs() and two.radius == 2 and one.radius == 1
    ring1 = {e.config for e in one.generated}
    for e in two.generated:
        assert e.origin in set(one.given) | ring1  # one step from a given config or from the first ring
        if e.config not in ring1:
            assert e.origin in ring1 and len(_axes(e.config, e.origin)) == 1
            assert all(o in ring1 for o in e.origins)  # a second ring's origins are all of the first
    assert set(two.configs()) == set(one.configs()) | {
        n.config for r in one.generated for n in widen([r.config], params=two.params).generated} - {c for c, _ in two.skipped}
    assert "up to 2 steps" in two.explain() and "steps" not in one.explain().splitlines()[0]


def test_without_a_kernel_ints_named_like_blocks_or_varied_by_the_list_are_widened() -> None:
    w = widen(MATMUL_LIST)
    assert w.params == ("BLOCK_SIZE_K", "BLOCK_SIZE_M", "BLOCK_SIZE_N")  # GROUP_SIZE_M is 8 in both: not widened
    assert len(w.given) == 2
    assert {e.change for e in w.generated if e.origin == MATMUL_LIST[0]} == {
        "BLOCK_SIZE_K 64->32", "BLOCK_SIZE_K 64->128", "BLOCK_SIZE_M 128->64", "BLOCK_SIZE_M 128->256",
        "BLOCK_SIZE_N 256->128", "BLOCK_SIZE_N 256->512", "num_warps 8->4", "num_warps 8->16",
        "num_stages 3->2", "num_stages 3->4",
    }  # fmt: skip
    # The second config's neighbour BLOCK_SIZE_M 64->128 differs from the first config: it is generated once.
    assert len(w.configs()) == len(set(w.configs()))


def test_the_kernel_limits_widening_to_its_block_parameters_and_their_bounds() -> None:
    w = widen(MATMUL_LIST, kernel=K.grouped_matmul_kernel, sizes={"M": 512, "N": 256, "K": 4096})
    assert w.params == ("BLOCK_SIZE_K", "BLOCK_SIZE_M", "BLOCK_SIZE_N")
    assert all(e.config["BLOCK_SIZE_N"] <= 256 for e in w.generated)
    skipped = dict(w.skipped)
    bad = MATMUL_LIST[0].replace(BLOCK_SIZE_N=512)
    assert skipped[bad].startswith("BLOCK_SIZE_N=512 is outside 16..256")
    assert "bounded by N=256" in skipped[bad]


def test_given_configs_outside_the_bounds_are_kept() -> None:
    odd = Config({"BLOCK_SIZE_M": 512, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 8, "GROUP_SIZE_M": 8}, num_warps=4)
    w = widen([odd], kernel=K.grouped_matmul_kernel, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert w.configs()[0] == odd
    assert odd.replace(BLOCK_SIZE_K=16) in w.configs()  # back into the dot's range
    assert odd.replace(BLOCK_SIZE_K=4) in dict(w.skipped)


def test_a_heuristic_set_parameter_is_the_callers_and_the_tile_bounded_by_the_row() -> None:
    library = [Config({"TILE_N": 1024}, num_warps=4, num_stages=1), Config({"TILE_N": 4096}, num_warps=8, num_stages=1)]
    w = widen(library, kernel=K.row_softmax_kernel, sizes={"N": 3000})
    assert w.params == ("TILE_N",)
    assert max(c["TILE_N"] for c in w.configs()) == 4096  # 8192 is above next_pow2(3000)
    assert Config({"TILE_N": 512}, num_warps=4, num_stages=1) in w.configs()


def test_launch_bounds_the_warps_and_stages() -> None:
    w = widen([Config({"BLOCK": 128}, num_warps=4, num_stages=2)], launch=Launch(num_warps=(4, 8), num_stages=(2, 3)))
    assert {c.num_warps for c in w.configs()} == {4, 8}
    assert {c.num_stages for c in w.configs()} == {2, 3}


def test_num_stages_is_widened_only_where_the_kernel_has_a_loop_to_pipeline() -> None:
    flat = widen([Config({"BLOCK_SIZE": 1024}, num_warps=4, num_stages=2)], kernel=K.add_kernel,
                 sizes={"n_elements": 100_000})  # fmt: skip
    assert {c.num_stages for c in flat.configs()} == {2}
    assert {c.num_warps for c in flat.configs()} == {2, 4, 8} and {c["BLOCK_SIZE"] for c in flat.configs()} == {512, 1024, 2048}
    assert flat.stages_kept == "the kernel has no loop to pipeline"
    assert "widened: BLOCK_SIZE, num_warps; num_stages kept: the kernel has no loop to pipeline" in flat.explain()
    # a loop in the kernel, or in a helper it calls, is pipelined: num_stages is widened there
    looping = Config({"BLOCK": 256}, num_warps=4, num_stages=3)
    for kernel, origin in ((K.grouped_matmul_kernel, MATMUL_LIST[0]), (K.looping_helper_kernel, looping)):
        looped = widen([origin], kernel=kernel, sizes={"M": 4096, "N": 4096, "K": 4096, "n": 4096})
        assert looped.stages_kept is None and {c.num_stages for c in looped.configs()} == {2, 3, 4}, kernel
        assert "num_warps, num_stages" in looped.explain()
    # without the kernel nothing is known: num_stages is widened
    assert {c.num_stages for c in widen([Config({"BLOCK_SIZE": 1024}, num_warps=4, num_stages=2)]).configs()} == {1, 2, 3}


def test_a_helper_the_reading_cannot_enter_counts_as_a_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake (labelled): the reader is made to fail entering every helper, as it does past its depth limit or for a
    helper whose source it cannot read. A loop there cannot be ruled out, so num_stages is widened."""
    from tritune.space import reading

    monkeypatch.setattr(reading._Reader, "enter", lambda self, fn, call, scope: None)
    w = widen([Config({"BLOCK": 256}, num_warps=4, num_stages=2)], kernel=K.helper_kernel, sizes={"n": 4096})
    assert w.stages_kept is None and {c.num_stages for c in w.configs()} == {1, 2, 3}


def test_without_a_loop_every_num_stages_compiles_to_the_same_binary(tmp_path: Path) -> None:
    """The premise of keeping num_stages: real Triton compilation for sm_90 (no GPU needed) of a loop-free kernel
    gives the same cubin at every num_stages. In a fresh process without the interpreter (which this suite's other
    tests run, and which leaves ``triton.language`` unfit for compiling) and with an empty Triton cache."""
    import os
    import subprocess
    import sys

    script = """
import hashlib, sys
import triton
from triton.backends.compiler import GPUTarget
import space_kernels as K
sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "n_elements": "i32", "BLOCK_SIZE": "constexpr"}
for stages in (1, 2, 3):
    src = triton.compiler.ASTSource(fn=K.add_kernel, signature=sig, constexprs={"BLOCK_SIZE": 1024})
    done = triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": stages})
    print(hashlib.sha1(done.asm["cubin"]).hexdigest())
"""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(TRITON_CACHE_DIR=str(tmp_path), PYTHONPATH=os.pathsep.join([str(Path(__file__).parent), *sys.path]))
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    hashes = out.stdout.split()
    assert len(hashes) == 3 and len(set(hashes)) == 1


def test_explicit_params_and_kernel_examples() -> None:
    import gelu

    w = widen(gelu.gelu.configs, kernel=gelu.gelu_forward_kernel, sizes={"n": 10_000})
    assert w.params == ("BLOCK",)
    assert w.configs()[:4] == list(gelu.gelu.configs)
    info = gelu.gelu.info
    assert all(r is None for r in check_static_all(w.configs(), info))
    only = widen(MATMUL_LIST, params=("GROUP_SIZE_M",))
    assert only.params == ("GROUP_SIZE_M",)
    assert {e.change.split()[0] for e in only.generated} == {"GROUP_SIZE_M", "num_warps", "num_stages"}


def test_pre_hooks_travel_with_the_neighbours_and_triton_configs_are_taken() -> None:
    import triton

    def hook(nargs):
        return None

    w = widen([triton.Config({"BLOCK": 64}, num_warps=2, num_stages=1, pre_hook=hook)])
    assert all(c.pre_hook is hook for c in w.configs())
    entry = w.entry(Config({"BLOCK": 128}, num_warps=2, num_stages=1))
    assert entry is not None and entry.change == "BLOCK 64->128" and not entry.given
    assert "BLOCK 64->128 from BLOCK=64" in w.explain()


def test_refusals() -> None:
    with pytest.raises(ConfigError, match="at least one config"):
        widen([])
    with pytest.raises(ConfigError, match="power of 2"):
        widen(MATMUL_LIST, factor=3)
    for radius in (0, True, 1.5):
        with pytest.raises(ConfigError, match="radius"):
            widen(MATMUL_LIST, radius=radius)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="no given config sets BLOCK"):
        widen(MATMUL_LIST, params=("BLOCK",))
    with pytest.raises(ConfigError, match="has no parameter BLOCK"):
        widen([Config({"BLOCK": 64})], kernel=K.grouped_matmul_kernel)


@settings(max_examples=25, deadline=None)
@given(
    blocks=st.lists(st.tuples(*(st.sampled_from([16, 32, 64, 128, 256]) for _ in range(3))), min_size=1, max_size=4),
    m=st.integers(1, 1 << 13),
    n=st.integers(1, 1 << 13),
)
def test_kernel_informed_steps_stay_within_the_dot_and_size_bounds(blocks, m: int, n: int) -> None:
    library = [Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8}, num_warps=4)
               for bm, bn, bk in blocks]  # fmt: skip
    w = widen(library, kernel=K.grouped_matmul_kernel, sizes={"M": m, "N": n, "K": 4096})
    assert w.configs()[: len(set(library))] == list(dict.fromkeys(library))
    hi = {"BLOCK_SIZE_M": max(16, min(256, next_pow2(m))), "BLOCK_SIZE_N": max(16, min(256, next_pow2(n))),
          "BLOCK_SIZE_K": 256}  # fmt: skip
    for e in w.generated:
        name = e.change.split()[0]
        if name in hi:
            assert 16 <= e.config[name] <= hi[name], e
        assert "GROUP_SIZE_M" not in e.change
    for c, why in w.skipped:
        assert c not in w.configs() and why


def test_a_neighbour_of_two_given_configs_names_both_as_its_origins() -> None:
    """BLOCK=64 is one step from both BLOCK=32 and BLOCK=128: it appears once, with both as origins (a library
    loop times it if either stays near the best); BLOCK=16 and BLOCK=256 each have one."""
    w = widen([Config({"BLOCK": 32}, num_warps=4, num_stages=2), Config({"BLOCK": 128}, num_warps=4, num_stages=2)],
              params=["BLOCK"], launch=Launch(num_warps=(4,), num_stages=(2,)))  # fmt: skip
    origins = {e.config.kwargs["BLOCK"]: [o.kwargs["BLOCK"] for o in e.origins] for e in w.generated}
    assert origins == {16: [32], 64: [32, 128], 256: [128]}
    assert w.entry(Config({"BLOCK": 64}, num_warps=4, num_stages=2)).origin.kwargs["BLOCK"] == 32  # the first stays the origin
    assert w.entry(Config({"BLOCK": 32}, num_warps=4, num_stages=2)).origins == ()
