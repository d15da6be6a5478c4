"""A Workload's ``pre_hook``: host TensorDescriptors shaped per config (Triton's tutorial 09), on every path of
``tritune verify``/``screen``/``tune`` that compiles or launches a config, on copies of the caller's descriptors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tritune.config import Config, hooked_arguments
from tritune.errors import WorkloadError
from tritune.space import check_static
from tritune.verify.run import verify_key
from tritune.workload import Workload, output_tensor

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
sys.path.insert(0, str(EXAMPLES))

import matmul_tma_wide as wide  # noqa: E402


def _pick(w: Workload, n: int, **values: int) -> list[Config]:
    legal = [c for c in w.candidates() if check_static(c, w.info, {}, w.space) is None]
    return [c for c in legal if all(c[k] == v for k, v in values.items())][:n]


def test_host_descriptor_configs_verify_correct_and_the_callers_descriptors_stay_as_made() -> None:
    w = wide.matmul_tma_wide_host_small
    args = w.make_args(w.keys[0], "cpu")
    before = [list(a.block_shape) for a in args[:3]]
    cfgs = _pick(w, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, EPILOGUE_SUBTILE=1) + _pick(
        w, 1, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, EPILOGUE_SUBTILE=2
    )
    assert len(cfgs) == 2
    r = verify_key(w, w.keys[0], device="cpu", configs=cfgs, target=None)
    assert [c.status.value for c in r.candidates] == ["correct", "correct"]
    h_args, _ = w.hooked(cfgs[1], args, {})
    assert [list(a.block_shape) for a in h_args[:3]] == [[64, 32], [32, 128], [64, 64]]  # C split in two
    assert h_args[0] is not args[0] and h_args[0].base is args[0].base  # a copy of the descriptor, same tensor
    assert [list(a.block_shape) for a in args[:3]] == before  # the workload's own are untouched


def test_without_the_hook_the_placeholder_blocks_fail_the_check() -> None:
    w = wide.matmul_tma_wide_host_small
    bare = Workload(name="no_hook", kernel=w.kernel, configs=w.space, args=w.args, grid=w.grid, outputs=[2],
                    oracle=w.oracle, keys=w.keys, atol=w.atol, rtol=w.rtol)  # fmt: skip
    cfg = _pick(bare, 1, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, EPILOGUE_SUBTILE=1)
    r = verify_key(bare, bare.keys[0], device="cpu", configs=cfg, target=None)
    assert r.candidates[0].status.value != "correct"  # [16, 16] blocks under a 64x64 tile: wrong or refused


def test_the_screen_specializes_each_config_for_its_hooked_descriptors() -> None:
    from tritune.screen.candidate import screen_candidate
    from tritune.screen.targets import get_target

    key = {"M": 4096, "N": 4096, "K": 4096}
    host, dev = wide.matmul_tma_wide_host, wide.matmul_tma_wide
    cfg = _pick(host, 1, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, EPILOGUE_SUBTILE=2, GROUP_M=16, num_warps=8,
                num_stages=3)[0]  # fmt: skip
    got = {w.name: screen_candidate(w, key, w.make_args(key, "cpu"), cfg, get_target("sm90")) for w in (host, dev)}
    assert {r.status.value for r in got.values()} == {"fits"}
    # The same tiles staged: the host kernel's shared memory is the device kernel's (a 16x16 block would not be).
    assert got[host.name].extra["shared"] == got[dev.name].extra["shared"] > 0


def test_host_descriptors_with_warp_specialization_are_rejected_by_a_rule_with_the_fix() -> None:
    w = wide.matmul_tma_wide_host
    dev = wide.matmul_tma_wide  # a config the device kernel's rules allow
    cfg = next(c for c in w.candidates() if c["WARP_SPECIALIZE"] == 1 and check_static(c, dev.info, {}, dev.space) is None)
    rej = check_static(cfg, w.info, {}, w.space)
    assert rej is not None and rej.rule == "constraint" and "host TensorDescriptors" in rej.reason
    assert "WARP_SPECIALIZE=0" in rej.reason


def test_a_hook_that_raises_names_the_workload_and_the_config() -> None:
    w = wide.matmul_tma_wide_host_small

    def broken(nargs: dict) -> None:
        raise KeyError("BLOCK_Q")

    bad = Workload(name="broken_hook", kernel=w.kernel, configs=w.space, args=w.args, grid=w.grid, outputs=[2],
                   pre_hook=broken, keys=w.keys)  # fmt: skip
    cfg = _pick(bad, 1)[0]
    with pytest.raises(WorkloadError, match=r"broken_hook.*pre_hook raised KeyError.*" + cfg.id.split(",")[0]):
        bad.hooked(cfg, bad.make_args(bad.keys[0], "cpu"), {})


def test_a_pre_hook_must_be_callable() -> None:
    w = wide.matmul_tma_wide_host_small
    with pytest.raises(WorkloadError, match="pre_hook must be a callable"):
        Workload(name="x", kernel=w.kernel, configs=w.space, args=w.args, grid=w.grid, pre_hook="set_blocks")


def test_a_configs_own_hook_wins_and_no_hook_passes_the_arguments_through() -> None:
    seen: list[str] = []
    own = Config({"B": 1}, pre_hook=lambda nargs: seen.append("own"))
    plain = Config({"B": 2})
    hooked_arguments(["x"], own, [object()], {}, lambda nargs: seen.append("workload"))
    hooked_arguments(["x"], plain, [object()], {}, lambda nargs: seen.append("workload"))
    x = object()
    assert hooked_arguments(["x"], plain, [x], {})[0][0] is x
    assert seen == ["own", "workload"]


def test_an_output_descriptor_is_checked_through_its_base_tensor() -> None:
    w = wide.matmul_tma_wide_host_small
    args = w.make_args(w.keys[0], "cpu")
    assert w.output_tensors(args) == [args[2].base]
    assert output_tensor(args[0].base) is args[0].base and output_tensor(7) == 7


def test_a_descriptor_input_the_kernel_clobbers_is_restored_before_each_config() -> None:
    """A kernel that writes ``2x`` to its output and ``x + 1`` back into its input, both through host descriptors:
    each config must start from the inputs as ``args`` made them (the input descriptor's base restored), or the
    second config would write ``2 (x + 1)``."""
    import torch
    import triton
    import triton.language as tl
    from triton.tools.tensor_descriptor import TensorDescriptor

    @triton.jit
    def double_and_clobber(x_desc, y_desc, BM: tl.constexpr, BN: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        v = x_desc.load([pm * BM, pn * BN])
        y_desc.store([pm * BM, pn * BN], v * 2)
        x_desc.store([pm * BM, pn * BN], v + 1)

    def set_blocks(nargs: dict) -> None:
        for name in ("x_desc", "y_desc"):
            nargs[name].block_shape = [nargs["BM"], nargs["BN"]]

    def make(key: dict, device: str) -> tuple:
        x = torch.randn(64, 64, device=device)
        return tuple(TensorDescriptor.from_tensor(t, [16, 16]) for t in (x, torch.empty_like(x)))

    w = Workload(
        name="double_and_clobber",
        kernel=double_and_clobber,
        configs=[Config({"BM": 16, "BN": 32}), Config({"BM": 32, "BN": 16})],
        args=make,
        grid=lambda meta, key: (64 // meta["BM"], 64 // meta["BN"]),
        outputs=[1],
        oracle=lambda args: [args[0].base * 2],
        pre_hook=set_blocks,
        keys=[{"n": 64}],
    )
    r = verify_key(w, w.keys[0], device="cpu", target=None)
    assert [c.status.value for c in r.candidates] == ["correct", "correct"]
    assert r.extra["bitwise_identical"] is True


def test_tritune_screen_compiles_each_config_with_its_own_descriptor_blocks() -> None:
    """``tritune screen``'s plan (one compile per distinct specialization, in workers): the two epilogue splits
    stage different C tiles, so their binaries' shared memory differs by the half tile."""
    from tritune.screen.run import _screen_workload
    from tritune.screen.targets import get_target

    w = wide.matmul_tma_wide_host
    cfgs = _pick(w, 1, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, EPILOGUE_SUBTILE=1, GROUP_M=8, num_warps=8, num_stages=3)
    cfgs += _pick(w, 1, BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, EPILOGUE_SUBTILE=2, GROUP_M=8, num_warps=8, num_stages=3)
    (res,) = _screen_workload(w, EXAMPLES / "matmul_tma_wide.py", get_target("sm90"), 1, 120,
                              [{"M": 4096, "N": 4096, "K": 4096}], None, only=cfgs)  # fmt: skip
    shared = [c.extra.get("shared") for c in res.candidates]
    assert [c.status.value for c in res.candidates] == ["fits", "fits"]
    assert shared[0] - shared[1] == 2 * 128 * 256 // 2  # fp16 C: the whole tile staged against half of it


def test_a_hook_that_refuses_one_config_costs_that_config_only() -> None:
    w = wide.matmul_tma_wide_host_small
    cfgs = _pick(w, 2, BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, EPILOGUE_SUBTILE=1)
    refused = cfgs[1]

    def picky(nargs: dict) -> None:
        if all(nargs.get(k) == v for k, v in {**refused.kwargs, **refused.launch_options()}.items()):
            raise ValueError("no descriptor for this one")
        wide.set_descriptor_blocks(nargs)

    picky_w = Workload(name="picky_hook", kernel=w.kernel, configs=w.space, args=w.args, grid=w.grid, outputs=[2],
                       oracle=w.oracle, pre_hook=picky, keys=w.keys, atol=w.atol, rtol=w.rtol)  # fmt: skip
    r = verify_key(picky_w, picky_w.keys[0], device="cpu", configs=cfgs, target=None)
    assert [c.status.value for c in r.candidates] == ["correct", "error"]
    assert "picky_hook" in r.candidates[1].reason and "no descriptor for this one" in r.candidates[1].reason
