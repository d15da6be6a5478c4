"""derive_space on Triton's tutorials and the patterns of FlagGems, Liger and fla: which parameters are free, which
shape blocks, their power-of-2 ranges and the evidence, the bounds from sizes, and what cannot be derived."""

from __future__ import annotations

import pytest
import space_kernels as K
from hypothesis import given, settings
from hypothesis import strategies as st
from space_support import line_of

import tritune
from tritune import ConfigError, Space
from tritune.space import DerivedSpace, Launch, Limits, derive_space
from tritune.space.bounds import TRITON_MAX_TENSOR_NUMEL, is_pow2, next_pow2


def _values(d: DerivedSpace, name: str) -> list:
    return list(d.param(name).values)


def _evidence(d: DerivedSpace, name: str) -> str:
    return "\n".join(d.param(name).evidence)


def test_the_tile_cap_default_is_tritons_own_tensor_limit_or_below() -> None:
    import triton.language as tl

    assert tl.TRITON_MAX_TENSOR_NUMEL == TRITON_MAX_TENSOR_NUMEL
    assert Limits().tile_cap <= TRITON_MAX_TENSOR_NUMEL
    assert Limits(max_tile=1 << 22).tile_cap == TRITON_MAX_TENSOR_NUMEL


# -- tutorial 01: vector add ----------------------------------------------------------------------------------


def test_vector_add_block_is_a_power_of_2_range_bounded_by_the_size_with_its_evidence() -> None:
    d = derive_space(K.add_kernel, passed=K.ADD_CALL, sizes={"n_elements": 98432})
    assert d.ok and d.blocks == ("BLOCK_SIZE",)
    assert _values(d, "BLOCK_SIZE") == [1 << i for i in range(5, 17)]  # 32 (one warp) .. next_pow2(98432)
    ev = _evidence(d, "BLOCK_SIZE")
    assert f"tl.arange(0, BLOCK_SIZE) at add_kernel line {line_of(K.add_kernel, 'tl.arange(0, BLOCK_SIZE)')}" in ev
    assert f"bounded by n_elements=98432 (offsets < n_elements at add_kernel line {line_of(K.add_kernel, 'mask =')})" in ev
    assert _values(d, "num_stages") == [1]  # nothing to pipeline
    assert "no loop" in d.param("num_stages").why
    for c in d.space:
        assert 32 * c.num_warps <= c["BLOCK_SIZE"] <= 256 * 32 * c.num_warps
    assert len(d.space) == 44


def test_a_small_size_bounds_the_block_and_no_size_leaves_the_tile_cap() -> None:
    small = derive_space(K.add_kernel, passed=K.ADD_CALL, sizes={"n_elements": 100})
    assert _values(small, "BLOCK_SIZE") == [32, 64, 128]
    free = derive_space(K.add_kernel, passed=K.ADD_CALL)
    assert max(_values(free, "BLOCK_SIZE")) == Limits().tile_cap
    assert "bounded by" not in _evidence(free, "BLOCK_SIZE")


# -- tutorial 02: fused softmax --------------------------------------------------------------------------------


def test_softmax_block_must_cover_the_row_so_it_is_exactly_its_next_power_of_2() -> None:
    d = derive_space(K.fused_softmax_kernel, passed=K.SOFTMAX_CALL, sizes={"n_cols": 781, "n_rows": 1823})
    assert _values(d, "BLOCK_SIZE") == [1024]
    assert "covers all of n_cols=781 in one block" in _evidence(d, "BLOCK_SIZE")
    assert _values(d, "num_stages") == [1, 2, 3, 4, 5]  # the row loop pipelines
    assert {c.num_warps for c in d.space} == {1, 2, 4, 8, 16}


def test_softmax_without_the_row_length_says_the_block_must_cover_it() -> None:
    d = derive_space(K.fused_softmax_kernel, passed=K.SOFTMAX_CALL)
    assert d.ok
    assert "must cover all of n_cols in one block" in _evidence(d, "BLOCK_SIZE")


def test_a_free_parameter_named_like_a_launch_option_cannot_be_derived() -> None:
    d = derive_space(K.fused_softmax_kernel, passed=K.SOFTMAX_CALL[:-1], sizes={"n_cols": 781})
    assert d.space is None
    assert d.reason == (
        "fused_softmax_kernel: cannot derive a space: num_stages is a kernel parameter named like a launch option: "
        "a config cannot set it"
    )


# -- tutorial 03: matmul ---------------------------------------------------------------------------------------


def test_matmul_tiles_are_dot_operands_of_16_to_256_and_group_size_gets_the_small_set() -> None:
    d = derive_space(K.grouped_matmul_kernel, passed=K.MATMUL_CALL, sizes={"M": 512, "N": 512, "K": 512})
    assert d.blocks == ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K")
    for name in d.blocks:
        assert "tl.dot operand: tl.dot(a, b, acc)" in _evidence(d, name)
        assert set(_values(d, name)) <= {16, 32, 64, 128, 256}
    assert _values(d, "GROUP_SIZE_M") == [4, 8]  # of Limits.other_ints, the first values trimmed
    assert "ACTIVATION" not in d.space.params  # passed by keyword
    names = {c.name for c in d.space.constraints}
    tiles = ("tile(BLOCK_SIZE_M, BLOCK_SIZE_N)", "tile(BLOCK_SIZE_M, BLOCK_SIZE_K)", "tile(BLOCK_SIZE_K, BLOCK_SIZE_N)")
    assert set(tiles) <= names
    assert "bounded by K=512 (tl.cdiv(K, BLOCK_SIZE_K)" in _evidence(d, "BLOCK_SIZE_K")
    assert len(d.space) <= Limits().max_configs
    (note,) = d.notes  # 4 x 5^3 x 25 combinations are trimmed, and it says which
    assert note.endswith("dropped GROUP_SIZE_M=1, GROUP_SIZE_M=2, BLOCK_SIZE_M=16")


def test_matmul_sizes_below_a_dot_tile_keep_the_dot_minimum() -> None:
    d = derive_space(K.grouped_matmul_kernel, passed=K.MATMUL_CALL, sizes={"M": 8, "N": 40, "K": 4096})
    assert _values(d, "BLOCK_SIZE_M") == [16]
    assert _values(d, "BLOCK_SIZE_N") == [16, 32, 64]


# -- tutorial 05 and 06: layer norm, attention -----------------------------------------------------------------


def test_layer_norm_block_tiles_the_row_in_a_loop() -> None:
    d = derive_space(K.layer_norm_fwd_kernel, passed=K.LAYER_NORM_CALL, sizes={"N": 8192})
    assert _values(d, "BLOCK_SIZE") == [1 << i for i in range(5, 14)]
    assert "bounded by N=8192 (range(0, N, BLOCK_SIZE)" in _evidence(d, "BLOCK_SIZE")
    assert _values(d, "num_stages") == [1, 2, 3, 4, 5]


def test_attention_blocks_are_read_through_descriptors_and_the_helper_loop() -> None:
    sizes = {"Z_H": 16, "N_CTX": 128, "HEAD_DIM": 64, "CAUSAL": 0}
    d = derive_space(K.attn_fwd_kernel, passed=K.ATTN_CALL, sizes=sizes)
    assert d.blocks == ("BLOCK_M", "BLOCK_N")
    assert _values(d, "BLOCK_N") == [16, 32, 64, 128]  # range(0, N_CTX, BLOCK_N) in the helper
    ev = _evidence(d, "BLOCK_N")
    assert f"at _attn_inner line {line_of(K._attn_inner, 'qk = tl.dot(q, k)')}" in ev
    assert "block shape: tl.make_tensor_descriptor(K, shape=[rows, HEAD_DIM]" in ev
    assert "bounded by N_CTX=128 (range(0, hi, BLOCK_N) at _attn_inner line" in ev
    # BLOCK_M is tied only to the descriptor's rows, Z_H * N_CTX: the expression's value bounds it, not N_CTX.
    assert "bounded by Z_H * N_CTX=2048" in _evidence(d, "BLOCK_M")
    assert _values(d, "BLOCK_M") == [16, 32, 64, 128, 256]
    assert "tile(BLOCK_M, HEAD_DIM)" in {c.name for c in d.space.constraints}
    assert "CAUSAL" not in "".join(d.param("BLOCK_N").evidence)  # a mode switch is no size


def test_a_passed_head_dim_sizes_the_tiles_and_so_the_warps() -> None:
    sizes = {"Z_H": 32, "N_CTX": 4096, "HEAD_DIM": 256, "CAUSAL": 0}
    d = derive_space(K.attn_fwd_kernel, passed=K.ATTN_CALL, sizes=sizes)
    for c in d.space:
        assert c["BLOCK_M"] * 256 <= 256 * 32 * c.num_warps  # the (BLOCK_M, HEAD_DIM) accumulator per thread
        assert c["BLOCK_M"] * 256 <= Limits().tile_cap
    assert (256, 1) not in {(c["BLOCK_M"], c.num_warps) for c in d.space}


# -- the examples, called as their workloads call them ----------------------------------------------------------

EXAMPLE_KERNELS = [
    ("gelu.py", "gelu", {"BLOCK"}),
    ("softmax.py", "softmax", {"BLOCK_N"}),
    ("rowsum.py", "rowsum", {"BLOCK_N"}),
    ("rmsnorm.py", "rmsnorm", {"BLOCK_N"}),
    ("layernorm.py", "layernorm", {"ROWS", "BLOCK_N"}),
    ("matmul.py", "matmul", {"BLOCK_M", "BLOCK_N", "BLOCK_K"}),
    ("attention.py", "attention", {"BLOCK_M", "BLOCK_N"}),
]


@pytest.fixture(scope="module")
def example_workloads():
    from space_support import EXAMPLES

    from tritune.workload import load_workloads

    return {name: load_workloads(EXAMPLES / file, name)[0] for file, name, _ in EXAMPLE_KERNELS}


@pytest.mark.parametrize(("file", "name", "blocks"), EXAMPLE_KERNELS)
def test_each_example_derives_its_hand_written_block_parameters(example_workloads, file, name, blocks) -> None:
    from space_support import first_call

    from tritune.space import check_static_all

    w = example_workloads[name]
    passed, sizes, _, kwargs = first_call(w, w.keys[0])
    d = derive_space(w.kernel, passed=passed, sizes=sizes)
    assert d.ok, d.reason
    assert set(d.blocks) == blocks
    assert set(d.space.params) - {"num_warps", "num_stages"} == blocks
    assert all(r is None for r in check_static_all(d.space.configs(), w.info, kwargs, d.space))
    hand = w.configs if isinstance(w.configs, Space) else Space.from_configs(w.configs)
    for b in blocks:  # the hand-written legal values the derived range can hold are in it
        legal = {v for v in hand.params[b] if is_pow2(v) and v <= Limits().tile_cap}
        derived = set(_values(d, b))
        assert {v for v in legal if min(derived) <= v <= max(derived)} <= derived


def test_matmul_tma_derives_once_its_mode_switches_are_passed() -> None:
    import matmul_tma

    call = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bk", "stride_cm")
    refused = derive_space(matmul_tma.matmul_tma_kernel, passed=call, sizes={"M": 4096, "N": 4096, "K": 4096})
    assert refused.space is None
    assert "EPILOGUE_SUBTILE has no default and is a mode switch" in refused.reason
    assert any("WARP_SPECIALIZE" in u for u in refused.unresolved)
    host = derive_space(matmul_tma.matmul_tma_host_kernel, passed=("a_desc", "b_desc", "c_desc", "M", "N", "K",
                        "EPILOGUE_SUBTILE", "WARP_SPECIALIZE"), sizes={"M": 4096, "N": 4096, "K": 4096,
                        "EPILOGUE_SUBTILE": 1, "WARP_SPECIALIZE": 0})  # fmt: skip
    assert host.blocks == ("BLOCK_M", "BLOCK_N", "BLOCK_K")
    # The host descriptors' blocks are set by a pre_hook; their loads' offsets show BLOCK_K is the dot's K.
    assert set(_values(host, "BLOCK_K")) <= {16, 32, 64, 128, 256}
    assert "tl.dot operand" in _evidence(host, "BLOCK_K")


# -- FlagGems, Liger, fla ---------------------------------------------------------------------------------------


def test_heuristics_wrapping_the_kernel_are_not_free_and_the_tile_is_bounded_by_the_row() -> None:
    d = derive_space(K.row_softmax_kernel, passed=K.ROW_SOFTMAX_CALL, sizes={"N": 3000})
    assert "ONE_TILE_PER_CTA" not in d.space.params
    assert _values(d, "TILE_N") == [1 << i for i in range(5, 13)]  # a loop over N too: not one tile per row
    same = derive_space(K.row_softmax_kernel, passed=K.ROW_SOFTMAX_CALL, heuristics=("ONE_TILE_PER_CTA",),
                        sizes={"N": 3000})  # fmt: skip
    assert same.space.configs() == d.space.configs()


def test_a_heuristic_block_leaves_the_config_block_bounded_alone() -> None:
    d = derive_space(K.sum_dim_kernel, passed=K.SUM_DIM_CALL, sizes={"N": 512, "K": 64})
    assert d.blocks == ("TILE_N",)
    assert "TILE_K" not in d.space.params
    assert _values(d, "TILE_N") == [32, 64, 128, 256, 512]
    # The (TILE_N, TILE_K) tile is sized once TILE_K's value is known.
    sized = derive_space(K.sum_dim_kernel, passed=K.SUM_DIM_CALL, sizes={"N": 1 << 20, "K": 64, "TILE_K": 64})
    assert "tile(TILE_N, TILE_K)" in {c.name for c in sized.space.constraints}
    assert max(c["TILE_N"] for c in sized.space) * 64 <= Limits().tile_cap


def test_a_kernel_whose_constexprs_the_caller_passes_keeps_its_list_with_one_line() -> None:
    d = derive_space(K.liger_rms_norm_kernel, passed=K.LIGER_RMS_CALL, sizes={"n_cols": 4096})
    assert d.space is None
    assert d.reason == (
        "liger_rms_norm_kernel: no tunable tl.constexpr parameter (casting_mode, BLOCK_SIZE are passed by the "
        "caller); keep its config list"
    )
    assert "\n" not in d.reason
    with pytest.raises(ConfigError, match=r"no tunable tl\.constexpr parameter"):
        Space.auto(K.liger_rms_norm_kernel, passed=K.LIGER_RMS_CALL)


def test_launch_only_tunes_the_warps_against_the_passed_block() -> None:
    d = derive_space(K.liger_rms_norm_kernel, passed=K.LIGER_RMS_CALL, sizes={"BLOCK_SIZE": 65536},
                     launch_only=True)  # fmt: skip
    assert list(d.space.params) == ["num_warps", "num_stages"]
    assert {c.num_warps for c in d.space} == {8, 16}  # 65536 elements, at most 256 per thread


def test_fla_chunk_blocks_through_positional_block_pointers() -> None:
    sizes = {"K": 64, "V": 128, "BT": 64, "H": 4, "T": 1000}
    d = derive_space(K.chunk_fwd_o_kernel, passed=K.CHUNK_CALL, sizes=sizes)
    assert d.blocks == ("BK", "BV")
    assert "IS_VARLEN" not in d.space.params  # set by the heuristic around the kernel
    assert _values(d, "BK") == [16, 32, 64]
    assert _values(d, "BV") == [16, 32, 64, 128]
    assert "bounded by V=128 (tl.make_block_ptr(v" in _evidence(d, "BV")
    assert {"tile(BT, BK)", "tile(BT, BV)"} <= {c.name for c in d.space.constraints}


# -- small cases -------------------------------------------------------------------------------------------------


def test_a_free_flag_without_default_is_not_derivable_and_defaults_are_kept_or_tuned() -> None:
    flag = derive_space(K.flagged_kernel, passed=("x_ptr", "n"))
    assert flag.space is None and "REVERSE has no default and is a mode switch" in flag.reason
    d = derive_space(K.defaults_kernel, passed=("x_ptr", "n"), sizes={"n": 1000})
    assert _values(d, "SCALE") == [2, 4, 8]
    assert d.param("EXACT").values == (False,) and "EXACT" not in d.space.params
    assert 256 in _values(d, "BLOCK")


def test_blocks_shaped_inside_a_helper_are_found_with_the_helpers_line() -> None:
    d = derive_space(K.helper_kernel, passed=("x_ptr", "y_ptr", "n"), sizes={"n": 4096})
    ev = _evidence(d, "BLOCK")
    assert f"tl.arange(0, WIDTH) at _tile_of line {line_of(K._tile_of, 'tl.arange(0, WIDTH)')}" in ev
    assert "bounded by n=4096 (offs < n at _tile_of line" in ev
    assert "tile(BLOCK // HALF, HALF)" in {c.name for c in d.space.constraints}
    for c in d.space:
        assert c["BLOCK"] // c["HALF"] >= 1 and is_pow2(c["BLOCK"] // c["HALF"])


def test_a_kernel_without_constexprs_says_so() -> None:
    d = derive_space(K.scalar_kernel, passed=("x_ptr", "y_ptr", "n"))
    assert d.reason == (
        "scalar_kernel: no tunable tl.constexpr parameter (it has no tl.constexpr parameter); keep its config list"
    )


def test_names_the_kernel_does_not_have_are_refused() -> None:
    with pytest.raises(ConfigError, match="add_kernel has no parameter BLOCK \\(passed\\)"):
        derive_space(K.add_kernel, passed=("BLOCK",))
    with_launch = derive_space(K.add_kernel, passed=(*K.ADD_CALL, "num_warps"))  # a launch option is no parameter
    assert with_launch.blocks == ("BLOCK_SIZE",)
    with pytest.raises(ConfigError, match="power of 2"):
        Limits(max_tile=1000)
    with pytest.raises(ConfigError, match="powers of 2"):
        Launch(num_warps=(3,))


def test_space_auto_is_the_derived_space_and_carries_its_derivation() -> None:
    s = tritune.Space.auto(K.add_kernel, passed=K.ADD_CALL, sizes={"n_elements": 4096})
    d = derive_space(K.add_kernel, passed=K.ADD_CALL, sizes={"n_elements": 4096})
    assert s.configs() == d.space.configs()
    assert s.derivation.param("BLOCK_SIZE").values == d.param("BLOCK_SIZE").values
    assert "add_kernel:" in s.derivation.explain()


def test_launch_sets_are_a_parameter() -> None:
    d = derive_space(K.layer_norm_fwd_kernel, passed=K.LAYER_NORM_CALL, sizes={"N": 4096},
                     launch=Launch(num_warps=(4, 8), num_stages=(2, 3), maxnreg=(None, 128)))  # fmt: skip
    assert {c.num_warps for c in d.space} == {4, 8}
    assert {c.num_stages for c in d.space} == {2, 3}
    assert {c.maxnreg for c in d.space} == {None, 128}


def test_the_cap_trims_free_ints_then_small_blocks_and_says_so() -> None:
    d = derive_space(K.grouped_matmul_kernel, passed=K.MATMUL_CALL, sizes={"M": 4096, "N": 4096, "K": 4096},
                     limits=Limits(max_configs=500))  # fmt: skip
    assert len(d.space) <= 500
    (note,) = d.notes
    assert note.startswith(f"trimmed to {len(d.space)} configs (Limits.max_configs=500): "
                           "dropped GROUP_SIZE_M=1, GROUP_SIZE_M=2, BLOCK_SIZE_M=16, BLOCK_SIZE_N=16")  # fmt: skip
    assert 256 in _values(d, "BLOCK_SIZE_M")


# -- laws ------------------------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 1 << 22), max_tile=st.sampled_from([1 << 10, 1 << 14, 1 << 16, 1 << 20]))
def test_every_block_value_is_a_power_of_2_within_its_bounds(n: int, max_tile: int) -> None:
    d = derive_space(K.layer_norm_fwd_kernel, passed=K.LAYER_NORM_CALL, sizes={"N": n},
                     limits=Limits(max_tile=max_tile))  # fmt: skip
    hi = min(max_tile, next_pow2(n), 256 * 32 * 16)  # the tile cap, the size, 256 per thread of 16 warps
    assert _values(d, "BLOCK_SIZE") == [v for v in (1 << i for i in range(21)) if min(32, hi) <= v <= hi]
    assert all(c["BLOCK_SIZE"] >= 32 * c.num_warps or c.num_warps == 1 for c in d.space)


@settings(max_examples=6, deadline=None)
@given(m=st.integers(1, 1 << 14), n=st.integers(1, 1 << 14), k=st.integers(1, 1 << 14))
def test_matmul_blocks_keep_to_the_dot_bounds_and_the_sizes(m: int, n: int, k: int) -> None:
    d = derive_space(K.grouped_matmul_kernel, passed=K.MATMUL_CALL, sizes={"M": m, "N": n, "K": k})
    for name, size in (("BLOCK_SIZE_M", m), ("BLOCK_SIZE_N", n), ("BLOCK_SIZE_K", k)):
        values = _values(d, name)
        assert all(is_pow2(v) and 16 <= v <= 256 for v in values)
        assert max(values) <= max(16, next_pow2(size))
    for c in d.space:
        assert c["BLOCK_SIZE_M"] * c["BLOCK_SIZE_N"] <= 256 * 32 * c.num_warps


@settings(max_examples=10, deadline=None)
@given(n=st.integers(1, 1 << 20))
def test_derivation_is_deterministic(n: int) -> None:
    a = derive_space(K.row_softmax_kernel, passed=K.ROW_SOFTMAX_CALL, sizes={"N": n})
    b = derive_space(K.row_softmax_kernel, passed=K.ROW_SOFTMAX_CALL, sizes={"N": n})
    assert a.explain() == b.explain()
    assert [c.id for c in a.space] == [c.id for c in b.space]


# -- the derived configs run and compile ------------------------------------------------------------------------


def test_derived_vector_add_configs_compute_the_sum_under_the_interpreter() -> None:
    import torch

    n = 1000
    d = derive_space(K.add_kernel, passed=K.ADD_CALL, sizes={"n_elements": n})
    x, y = torch.randn(n), torch.randn(n)
    for c in (d.space.configs()[0], d.space.configs()[-1]):
        out = torch.empty(n)
        K.add_kernel[(triton_cdiv(n, c["BLOCK_SIZE"]),)](x, y, out, n, **c.kwargs, **c.launch_options())
        assert torch.equal(out, x + y), c.id


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def test_derived_softmax_config_is_right_and_a_block_short_of_the_row_would_not_be() -> None:
    import torch

    rows, cols = 4, 300
    d = derive_space(K.fused_softmax_kernel, passed=K.SOFTMAX_CALL, sizes={"n_cols": cols, "n_rows": rows})
    (block,) = _values(d, "BLOCK_SIZE")
    x = torch.randn(rows, cols)
    for b, right in ((block, True), (block // 2, False)):
        y = torch.empty_like(x)
        K.fused_softmax_kernel[(2,)](y, x, x.stride(0), y.stride(0), rows, cols, BLOCK_SIZE=b, num_stages=1)
        assert torch.allclose(y, torch.softmax(x, dim=1), atol=1e-6) is right


def test_a_loop_over_programs_is_no_block_tiling() -> None:
    d = derive_space(K.persistent_kernel, passed=("x_ptr", "n"), sizes={"n": 1 << 20})
    assert d.blocks == ("BLOCK",)
    assert d.param("NUM_SMS").why == "a free int without a default: the small set Limits.other_ints"


def test_a_source_that_cannot_be_read_is_a_reason_not_a_crash() -> None:
    from tritune.space.reading import read_kernel

    scope: dict = {}
    exec("def made(x, BLOCK):\n    return x\n", scope)
    reading = read_kernel(scope["made"], ("x", "BLOCK"), frozenset({"BLOCK"}))
    assert reading.error is not None and reading.error.startswith("its source cannot be read (OSError")
