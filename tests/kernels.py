"""Small real Triton kernels used by the tests, each built to produce one verify outcome."""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def half_writer_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Bug on purpose: with BLOCK >= 512 only the first half of each block is written.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    limit = pid * BLOCK + BLOCK // 2 if BLOCK >= 512 else pid * BLOCK + BLOCK
    m = (offs < n) & (offs < limit)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2.0, mask=m)


@triton.jit
def wrong_value_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Bug on purpose: BLOCK=1024 computes 2.5*x instead of 2*x.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    f = 2.5 if BLOCK == 1024 else 2.0
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * f, mask=m)


@triton.jit
def asm_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Compiles for sm_90, but Triton's interpreter cannot run inline PTX.
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.inline_asm_elementwise("mov.b32 $0, $1;", "=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)
    tl.store(out_ptr + offs, y, mask=m)


@triton.jit
def rowsum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # One program sums a whole row in chunks of BLOCK: the summation order depends on BLOCK,
    # so results are correct within tolerance but not bit-identical across BLOCK values.
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n, BLOCK):
        offs = start + tl.arange(0, BLOCK)
        acc += tl.load(x_ptr + row * n + offs, mask=offs < n, other=0.0)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))


def elementwise_args(key, device):
    x = torch.randn(key["n"], device=device)
    return x, torch.empty_like(x), key["n"]


def elementwise_workload(name, kernel, blocks=(256, 512, 1024), **kw):
    return tritune.Workload(
        name=name,
        kernel=kernel,
        configs=[tritune.Config({"BLOCK": b}, num_warps=4) for b in blocks],
        args=elementwise_args,
        grid=lambda meta, key: (triton.cdiv(key["n"], meta["BLOCK"]),),
        outputs=[1],
        oracle=lambda args: [args[0] * 2.0],
        keys=[{"n": 3000}],
        **kw,
    )


def rowsum_workload():
    return tritune.Workload(
        name="rowsum",
        kernel=rowsum_kernel,
        configs=[tritune.Config({"BLOCK": b}, num_warps=4) for b in (32, 64, 128, 256)],
        args=lambda key, device: (
            torch.randn(key["rows"], key["n"], device=device),
            torch.empty(key["rows"], device=device),
            key["n"],
        ),
        grid=lambda meta, key: (key["rows"],),
        outputs=[1],
        oracle=lambda args: [args[0].double().sum(dim=1).float()],
        keys=[{"rows": 4, "n": 1000}],
        atol=1e-4,
        rtol=1e-4,
    )


@triton.jit
def desc_copy_kernel(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Copies tiles through host TensorDescriptors whose block shape a config's pre_hook sets (Liger, FlagGems)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    out_desc.store([pm * BLOCK_M, pn * BLOCK_N], in_desc.load([pm * BLOCK_M, pn * BLOCK_N]))


@triton.jit
def desc_flat_double_kernel(in_desc, out_desc, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """Doubles tiles through host TensorDescriptors, flattened in between as Liger's SwiGLU reshapes its loads: it
    compiles only when the descriptors' block shape is the config's tile (a pre_hook sets it)."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    flat = tl.reshape(in_desc.load([pm * BLOCK_M, pn * BLOCK_N]), [BLOCK_M * BLOCK_N])
    out_desc.store([pm * BLOCK_M, pn * BLOCK_N], tl.reshape(flat * 2, [BLOCK_M, BLOCK_N]))


def set_desc_blocks(nargs):
    """A config pre_hook in the libraries' style: the descriptors' block shape is the config's tile."""
    for name in ("in_desc", "out_desc"):
        nargs[name].block_shape = [nargs["BLOCK_M"], nargs["BLOCK_N"]]


@triton.jit
def even_scale_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    """For ``@triton.heuristics({"EVEN": n % BLOCK == 0})`` stacked under the decorator (FlagGems' bmm style)."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if EVEN:
        tl.store(out_ptr + offs, tl.load(x_ptr + offs) * 2)
    else:
        m = offs < n
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)
