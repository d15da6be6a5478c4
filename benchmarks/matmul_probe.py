"""Issue 16 probe: which Triton fp16 matmul schedule closes the last few percent to cuBLAS on an H200.

    PYTHONPATH=src python3 benchmarks/matmul_probe.py --out DIR            # on the GPU (~4 min)
    TRITON_INTERPRET=1 python3 benchmarks/matmul_probe.py --check-cpu      # here, without a GPU

What it measures: C = A @ B, fp16 in and out, fp32 accumulation, M=N=K=4096 (``--size``). For every variant
and config, the median ms over interleaved rounds (rotating order; each round times every contestant with
CUDA events, L2 flushed before each call, and with ``triton.testing.do_bench``, as
benchmarks/matmul_vs_cublas.py and benchmarks/search_tune.py do), TFLOP/s, and cuBLAS / variant, where cuBLAS
is ``torch.matmul`` on the SAME layout the variant reads: ``torch.matmul(a, b)`` with b (K, N) row-major, or
``torch.matmul(a, bt.T)`` with bt (N, K) row-major (B K-major). Each variant is first compiled, launched once
and checked against an fp32 product (atol = rtol = 1e-2 on the fp16 output; max abs error reported) in a
separate worker process, several at once: a compiler abort, a hang or a wrong result costs that config only.
Survivors are checked again in this process after timing (which also catches state that a repeated launch
corrupts). ``--budget-s`` (200) bounds the run: no new config is tried after ~55% of it, no new timing round
starts after it, and what was measured is printed either way. ``--out DIR`` writes ``DIR/matmul_probe.json``
(every row, every failure, provenance: GPU, driver, torch, triton, date, command line).

Variants (the suspected losses of examples/matmul_tma.py's best, 0.964 of cuBLAS: wave quantization,
device-side descriptor creation, schedule):

* ``repo``: examples/matmul_tma.py's kernel itself (imported by path, device-side descriptors) at its best
  configs (128x256x64, GROUP_M 8/16, 8 warps, 3/4 stages, split epilogue, maxnreg 168), its
  warp-specialized default, and one program per tile instead of one per SM.
* ``host_kn`` / ``host_nk``: tutorial 09's ``matmul_kernel_tma_persistent`` shape with HOST
  ``TensorDescriptor`` arguments (no per-program descriptor creation, no scratch allocator), B as (K, N)
  row-major or as (N, K) K-major (``tl.dot(a, b.T)``, the tutorial's and cuBLAS's usual TN layout); 128x256 and
  256x128 tiles, a 2x-SMs grid and a tile grid.
* ``wsdev_nk`` / ``wsdev_kn``: ``tl.range(..., warp_specialize=True)`` persistent loop with DEVICE descriptors
  (B K-major or not): Hopper's pass wants ``num_warps=4`` (a producer and two consumer warp groups) and no
  flattened loop, and it splits the tile's rows over the consumers, re-boxing the A loads and C stores, which
  a host descriptor's fixed box forbids; 128x256x64 s3 and 128x128x64 s4.
* ``ws_nk`` / ``ws_kn`` / ``ws_flat``: the host-descriptor kernel with ``warp_specialize=True``: with 4 warps
  this fails to compile on triton 3.9 (the re-boxing above), kept to see what 3.6 does; with 8 warps the
  pass does not apply (software pipelining only); ``ws_flat`` is tutorial 09's ``flatten=True,
  warp_specialize=True`` as written.
* ``streamk``: wave quantization is the loss no tile shape fixes: 4096^2 / (128x256) = 512 tiles on 132 SMs is
  3.88 waves, so the last one runs 116 of 132 SMs, and 2^k tiles always give 2^(k-2)/33 (0.97 efficiency for
  128x128, 128x256, 256x256). The hybrid data-parallel + Stream-K schedule (Osama et al., PPoPP 2023) runs the
  full waves as ordinary persistent tiles (``rem``: all full waves; ``rem1``: one wave fewer; ``all``: none)
  and splits the K iterations of the remaining tiles evenly over all programs (116x64 iterations / 132 = 56.2
  each instead of one whole 64-iteration tile on 116 SMs). A partial tile's fp32 sum goes to a per-program
  workspace slot (plain stores; at most two partial tiles per program); an atomic per-tile counter of
  finished K iterations tells its last contributor to add the other slots and store C, then reset the counter.
  Nobody waits on anybody, so no co-residency assumption, no deadlock. Best case ~3% faster than ``rem``'s
  plain schedule; the fixup's 128 KB stores and loads per partial tile cost some of it back.

``--check-cpu`` runs every variant's kernel (each distinct code path: variant, tile, flags, grid kind) under
``TRITON_INTERPRET=1`` on CPU tensors at 512x512x256 with the persistent grids capped at 3 programs (so
programs loop over several tiles and Stream-K ranges cross tile boundaries) against torch.matmul, then, in
worker processes without the interpreter, ``triton.compile``s every GPU config for sm_90 (``GPUTarget("cuda",
90, 32)``: no GPU needed) and prints its shared memory, registers and spills, or its compile error. Only
wrong results or interpreter errors in kernels the interpreter supports fail the check (exit status 1); the
sm_90 compile uses this machine's triton, which may differ from the device's.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import importlib.util
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

if "--check-cpu" in sys.argv and "--worker" not in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")  # must precede importing triton

import torch
import triton
import triton.language as tl

try:
    from triton.tools.tensor_descriptor import TensorDescriptor

    HOST_DESC_ERR: str | None = None
except Exception as exc:  # older triton: no host tensor descriptors
    TensorDescriptor = None
    HOST_DESC_ERR = f"triton.tools.tensor_descriptor.TensorDescriptor unavailable: {exc!r}"

ROOT = Path(__file__).resolve().parent.parent
SM90_SMEM = 232448  # bytes of shared memory one block may use on sm_90
H200_SMS = 132
ATOL = RTOL = 1e-2
INTERPRET = os.environ.get("TRITON_INTERPRET") == "1"


# ---------------------------------------------------------------------------------------------- kernels
@triton.jit
def _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    # Grouped order (tutorial 09's _compute_pid): GROUP_M rows of tiles share their B columns in L2.
    num_pid_in_group = GROUP_M * num_pid_n
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.jit
def _store_tile(c_desc, acc, offs_m, offs_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                EPILOGUE_SUBTILE: tl.constexpr):  # fmt: skip
    if EPILOGUE_SUBTILE == 2:
        acc = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        acc0, acc1 = tl.split(acc)
        c_desc.store([offs_m, offs_n], acc0.to(tl.float16))
        c_desc.store([offs_m, offs_n + BLOCK_N // 2], acc1.to(tl.float16))
    else:
        c_desc.store([offs_m, offs_n], acc.to(tl.float16))


@triton.jit
def probe_persistent_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    B_KMAJOR: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr,
    FLATTEN: tl.constexpr,
):
    """Tutorial 09's matmul_kernel_tma_persistent with host descriptors; B (K, N) or, B_KMAJOR, (N, K)."""
    start_pid = tl.program_id(0)
    programs = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - programs  # the epilogue's own counter (tutorial 09: helps the pipeliner)
    for tile_id in tl.range(start_pid, num_tiles, programs, flatten=FLATTEN, warp_specialize=WARP_SPECIALIZE):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            if B_KMAJOR:
                b = b_desc.load([offs_n, ki * BLOCK_K])
                acc = tl.dot(a, b.T, acc)
            else:
                b = b_desc.load([ki * BLOCK_K, offs_n])
                acc = tl.dot(a, b, acc)
        tile_id_c += programs
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        _store_tile(c_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)


@triton.jit
def probe_ws_device_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    B_KMAJOR: tl.constexpr,
):
    """Warp-specialized persistent loop with DEVICE descriptors, B (K, N) or (N, K): on Hopper the pass
    splits a tile's rows over two consumer warp groups and re-boxes the A loads and C stores, which a host
    descriptor's fixed box does not allow (triton 3.9: 'descriptor block and tensor must have the same number
    of elements'), so this is the way to warp-specialize the K-major layout (examples/matmul_tma.py covers (K, N))."""
    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_M, BLOCK_K])
    if B_KMAJOR:
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_N, BLOCK_K]
        )
    else:
        b_desc = tl.make_tensor_descriptor(
            b_ptr, shape=[K, N], strides=[N, 1], block_shape=[BLOCK_K, BLOCK_N]
        )
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1],
                                       block_shape=[BLOCK_M, BLOCK_N // EPILOGUE_SUBTILE])  # fmt: skip
    start_pid = tl.program_id(0)
    programs = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n
    tile_id_c = start_pid - programs
    for tile_id in tl.range(start_pid, num_tiles, programs, warp_specialize=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            if B_KMAJOR:
                b = b_desc.load([offs_n, ki * BLOCK_K])
                acc = tl.dot(a, b.T, acc)
            else:
                b = b_desc.load([ki * BLOCK_K, offs_n])
                acc = tl.dot(a, b, acc)
        tile_id_c += programs
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        _store_tile(c_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)


@triton.jit
def probe_streamk_kernel(
    a_desc,
    b_desc,
    c_desc,
    ws_ptr,
    cnt_ptr,
    M,
    N,
    K,
    DP_TILES,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr,
    EPILOGUE_SUBTILE: tl.constexpr,
    B_KMAJOR: tl.constexpr,
):
    """Hybrid data-parallel + Stream-K: tiles [0, DP_TILES) persistent, the rest split by K iterations.

    ws_ptr: fp32, 2 * programs tiles (slot 0: the tile a program's range starts in, slot 1: the tile it
    ends in). cnt_ptr: int32 per Stream-K tile, zero between launches (its last contributor resets it).
    """
    pid = tl.program_id(0)
    programs = tl.num_programs(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    num_tiles = num_pid_m * num_pid_n

    tile_id_c = pid - programs
    for tile_id in tl.range(pid, DP_TILES, programs, flatten=True):
        pid_m, pid_n = _tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k_tiles):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            if B_KMAJOR:
                b = b_desc.load([offs_n, ki * BLOCK_K])
                acc = tl.dot(a, b.T, acc)
            else:
                b = b_desc.load([ki * BLOCK_K, offs_n])
                acc = tl.dot(a, b, acc)
        tile_id_c += programs
        pid_m, pid_n = _tile_coords(tile_id_c, num_pid_m, num_pid_n, GROUP_M)
        _store_tile(c_desc, acc, pid_m * BLOCK_M, pid_n * BLOCK_N, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)

    total = (num_tiles - DP_TILES) * k_tiles  # Stream-K iterations, split evenly over the programs
    start = pid * total // programs
    end = (pid + 1) * total // programs
    rows = tl.arange(0, BLOCK_M)
    cols = tl.arange(0, BLOCK_N)
    tile_offs = rows[:, None] * BLOCK_N + cols[None, :]
    it = start
    while it < end:
        t = it // k_tiles
        k0 = it - t * k_tiles
        k1 = tl.minimum(k_tiles, k0 + (end - it))
        pid_m, pid_n = _tile_coords(DP_TILES + t, num_pid_m, num_pid_n, GROUP_M)
        offs_m = pid_m * BLOCK_M
        offs_n = pid_n * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for ki in range(k0, k1):
            a = a_desc.load([offs_m, ki * BLOCK_K])
            if B_KMAJOR:
                b = b_desc.load([offs_n, ki * BLOCK_K])
                acc = tl.dot(a, b.T, acc)
            else:
                b = b_desc.load([ki * BLOCK_K, offs_n])
                acc = tl.dot(a, b, acc)
        if (k0 == 0) & (k1 == k_tiles):
            _store_tile(c_desc, acc, offs_m, offs_n, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)
        else:
            slot = (start < t * k_tiles).to(tl.int32)
            tl.store(ws_ptr + (pid * 2 + slot).to(tl.int64) * (BLOCK_M * BLOCK_N) + tile_offs, acc)
            tl.debug_barrier()  # every thread's partial stored before the counter says so
            done = tl.atomic_add(cnt_ptr + t, k1 - k0, sem="acq_rel", scope="gpu") + (k1 - k0)
            if done == k_tiles:  # the last contributor: add the others' slots, store C, reset the counter
                p_lo = ((t * k_tiles + 1) * programs - 1) // total
                p_hi = ((t + 1) * k_tiles * programs - 1) // total
                for q in range(p_lo, p_hi + 1):
                    if q != pid:
                        q_slot = (q * total // programs < t * k_tiles).to(tl.int32)
                        part = ws_ptr + (q * 2 + q_slot).to(tl.int64) * (BLOCK_M * BLOCK_N) + tile_offs
                        acc += tl.load(part, cache_modifier=".cg")
                _store_tile(c_desc, acc, offs_m, offs_n, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)
                tl.atomic_xchg(cnt_ptr + t, 0)
        it = t * k_tiles + k1


# ---------------------------------------------------------------------------------------------- variants
_REPO: Any = None
_REPO_ERR: str | None = None


def repo_module() -> Any:
    """examples/matmul_tma.py, imported by path (it imports tritune: PYTHONPATH=src, or src is added here)."""
    global _REPO, _REPO_ERR
    if _REPO is None and _REPO_ERR is None:
        try:
            if str(ROOT / "src") not in sys.path:
                sys.path.insert(0, str(ROOT / "src"))
            spec = importlib.util.spec_from_file_location(
                "probe_matmul_tma", ROOT / "examples" / "matmul_tma.py"
            )
            assert spec is not None and spec.loader is not None
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            _REPO = mod
        except Exception as exc:
            _REPO_ERR = f"cannot import examples/matmul_tma.py: {exc!r}"
    if _REPO is None:
        raise RuntimeError(_REPO_ERR)
    return _REPO


def _task(variant: str, bm: int, bn: int, bk: int, g: int, w: int, s: int, epi: int = 1, grid: str = "sms",
          maxnreg: int | None = None, **extra: Any) -> dict[str, Any]:  # fmt: skip
    cfg = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": g, "EPILOGUE_SUBTILE": epi}
    opts: dict[str, Any] = {"num_warps": w, "num_stages": s}
    if maxnreg:
        opts["maxnreg"] = maxnreg
    t = {"variant": variant, "cfg": cfg, "opts": opts, "grid": grid, **extra}
    t["layout"] = "nk" if variant.endswith("_nk") or extra.get("kmajor") else "kn"
    parts = [f"{bm}x{bn}x{bk}", f"G{g}", f"w{w}", f"s{s}", f"epi{epi}", f"grid={grid}"]
    parts += [f"{k}={v}" for k, v in sorted(extra.items())] + ([f"maxnreg={maxnreg}"] if maxnreg else [])
    t["config"] = ",".join(parts)
    t["id"] = f"{variant}:{t['config']}"
    return t


def gpu_tasks() -> list[dict[str, Any]]:
    """The configs tried on the GPU (35), in the order they are tried (the likeliest winners first)."""
    ts = [
        # examples/matmul_tma.py at last session's best (0.2171 ms) and its neighbours
        _task("repo", 128, 256, 64, 16, 8, 3, 2, ws=0),
        _task("repo", 128, 256, 64, 16, 8, 3, 1, ws=0),
        _task("repo", 128, 256, 64, 16, 8, 3, 2, ws=0, maxnreg=168),
        _task("repo", 128, 256, 64, 8, 8, 4, 2, ws=0),
        _task("repo", 128, 256, 64, 16, 8, 4, 2, ws=0),
        _task("repo", 128, 256, 64, 16, 8, 3, 2, "tiles", ws=0),
        _task("repo", 128, 256, 64, 8, 4, 3, 1, "tiles", ws=1),
        _task("repo", 128, 256, 64, 8, 4, 3, 1, ws=1),
    ]
    for sk in ("rem", "rem1", "all"):
        ts.append(_task("streamk", 128, 256, 64, 16, 8, 3, 1, sk=sk))
    ts += [
        _task("streamk", 128, 256, 64, 16, 8, 3, 2, sk="rem"),
        _task("streamk", 128, 256, 64, 16, 8, 4, 2, sk="rem"),
        _task("streamk", 128, 256, 64, 16, 8, 3, 1, sk="rem", kmajor=1),
    ]
    for lay in ("kn", "nk"):
        ts += [
            _task(f"host_{lay}", 128, 256, 64, 16, 8, 3, 1),
            _task(f"host_{lay}", 128, 256, 64, 16, 8, 3, 2),
            _task(f"host_{lay}", 128, 256, 64, 16, 8, 4, 2),
            _task(f"host_{lay}", 128, 256, 64, 8, 8, 4, 2),
            _task(f"host_{lay}", 256, 128, 64, 16, 8, 3, 1),
        ]
    ts += [
        _task("host_kn", 128, 256, 64, 16, 8, 3, 2, "tiles"),
        _task("host_kn", 128, 128, 64, 8, 4, 4, 1),
        _task("host_kn", 128, 128, 64, 8, 4, 3, 2, "2sms"),
    ]
    for lay in ("nk", "kn"):
        ts += [
            _task(f"wsdev_{lay}", 128, 256, 64, 16, 4, 3, 1),
            _task(f"wsdev_{lay}", 128, 128, 64, 8, 4, 4, 1),
        ]
    ts += [
        _task("ws_nk", 128, 256, 64, 16, 4, 3, 1),  # host descriptors + Hopper WS: fails to compile on 3.9
        _task("ws_kn", 128, 256, 64, 16, 4, 3, 1),
        _task("ws_kn", 128, 256, 64, 16, 8, 3, 1),
        _task("ws_kn", 128, 128, 64, 8, 8, 4, 1),
        _task("ws_flat", 128, 256, 64, 16, 4, 3, 1),
    ]
    return ts


def smem_estimate(t: dict[str, Any]) -> int:
    c = t["cfg"]
    stage = 2 * (c["BLOCK_M"] * c["BLOCK_K"] + c["BLOCK_K"] * c["BLOCK_N"])
    return t["opts"]["num_stages"] * stage + 2 * c["BLOCK_M"] * c["BLOCK_N"] // c["EPILOGUE_SUBTILE"]


def grid_size(t: dict[str, Any], tiles: int, sms: int) -> int:
    g = t["grid"]
    return tiles if g == "tiles" else min(tiles, 2 * sms if g == "2sms" else sms)


def dp_tiles(mode: str, tiles: int, programs: int) -> int:
    full = tiles // programs
    return {"rem": full, "rem1": max(0, full - 1), "all": 0}[mode] * programs


def desc_blocks(t: dict[str, Any]) -> dict[str, list[int]]:
    """Host descriptors' block shapes (whole tiles; the C box halved by EPILOGUE_SUBTILE=2)."""
    c = t["cfg"]
    bm, bn, bk, epi = c["BLOCK_M"], c["BLOCK_N"], c["BLOCK_K"], c["EPILOGUE_SUBTILE"]
    return {
        "a_desc": [bm, bk],
        "b_desc": [bn, bk] if t["layout"] == "nk" else [bk, bn],
        "c_desc": [bm, bn // epi],
    }


def make_inputs(m: int, n: int, k: int, device: str) -> dict[str, torch.Tensor]:
    """Seeded inputs scaled as matmul_tma_args does (|C| ~ 1), B in both layouts, and the fp32 product."""
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = (torch.randn(m, k, generator=gen) / k**0.25).to(device=device, dtype=torch.float16)
    b = (torch.randn(k, n, generator=gen) / k**0.25).to(device=device, dtype=torch.float16)
    bt = b.T.contiguous()
    ref = torch.matmul(a.float(), b.float())
    return {"a": a, "b": b, "bt": bt, "ref": ref, "c": torch.empty(m, n, device=device, dtype=torch.float16)}


def make_launch(t: dict[str, Any], x: dict[str, torch.Tensor], sms: int) -> Any:
    """A no-argument callable launching task ``t`` on inputs ``x`` (writes x["c"]); returns the launch's result."""
    a, c = x["a"], x["c"]
    m, k = a.shape
    n = c.shape[1]
    cfg, opts, var = dict(t["cfg"]), dict(t["opts"]), t["variant"]
    bm, bn = cfg["BLOCK_M"], cfg["BLOCK_N"]
    tiles = triton.cdiv(m, bm) * triton.cdiv(n, bn)
    grid = (grid_size(t, tiles, sms),)
    if var == "repo":
        kern = repo_module().matmul_tma_kernel[grid]
        b = x["b"]
        kw = {**cfg, "WARP_SPECIALIZE": t["ws"], **opts}
        return lambda: kern(a, b, c, m, n, k, a.stride(0), b.stride(0), c.stride(0), **kw)
    if var.startswith("wsdev"):
        kern = probe_ws_device_kernel[grid]
        bmat = x["bt"] if t["layout"] == "nk" else x["b"]
        kw = {**cfg, "B_KMAJOR": int(t["layout"] == "nk"), **opts}
        return lambda: kern(a, bmat, c, m, n, k, **kw)
    if TensorDescriptor is None:
        raise RuntimeError(HOST_DESC_ERR)
    kmajor = t["layout"] == "nk"
    blocks = desc_blocks(t)
    a_d = TensorDescriptor(a, [m, k], [k, 1], blocks["a_desc"])
    if kmajor:
        b_d = TensorDescriptor(x["bt"], [n, k], [k, 1], blocks["b_desc"])
    else:
        b_d = TensorDescriptor(x["b"], [k, n], [n, 1], blocks["b_desc"])
    c_d = TensorDescriptor(c, [m, n], [n, 1], blocks["c_desc"])
    if var == "streamk":
        programs = grid[0]
        dp = dp_tiles(t["sk"], tiles, programs)
        ws = torch.empty(programs * 2 * bm * bn, device=a.device, dtype=torch.float32)
        cnt = torch.zeros(max(1, tiles - dp), device=a.device, dtype=torch.int32)
        kern = probe_streamk_kernel[grid]
        kw = {**cfg, "B_KMAJOR": int(kmajor), **opts}
        return lambda: kern(a_d, b_d, c_d, ws, cnt, m, n, k, dp, **kw)
    ws_flag = int(var.startswith("ws"))
    flat = int(not ws_flag or var == "ws_flat")
    kern = probe_persistent_kernel[grid]
    kw = {**cfg, "B_KMAJOR": int(kmajor), "WARP_SPECIALIZE": ws_flag, "FLATTEN": flat, **opts}
    return lambda: kern(a_d, b_d, c_d, m, n, k, **kw)


def check(x: dict[str, torch.Tensor]) -> tuple[bool, float]:
    out = x["c"].float()
    err = float((out - x["ref"]).abs().max())
    ok = bool(torch.allclose(out, x["ref"], atol=ATOL, rtol=RTOL)) and bool(torch.isfinite(out).all())
    return ok, err


def kernel_meta(k: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {}
    for name in ("n_regs", "n_spills"):
        v = getattr(k, name, None)
        if isinstance(v, int):
            meta[name] = v
    md = getattr(k, "metadata", None)
    shared = getattr(md, "shared", None) if md is not None else None
    if isinstance(shared, int):
        meta["shared"] = shared
    return meta


# ---------------------------------------------------------------------------------------------- sm_90 compile
def compile_sm90(t: dict[str, Any], size: int) -> dict[str, Any]:
    """triton.compile of task ``t`` for sm_90 without a GPU: shared memory, registers, spills."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    cfg, var = dict(t["cfg"]), t["variant"]
    sig: dict[str, str] = {}
    if var in ("repo", "wsdev_kn", "wsdev_nk"):
        fn = repo_module().matmul_tma_kernel if var == "repo" else probe_ws_device_kernel
        const = (
            {**cfg, "WARP_SPECIALIZE": t["ws"]}
            if var == "repo"
            else {**cfg, "B_KMAJOR": int(t["layout"] == "nk")}
        )
        for name in fn.arg_names:
            sig[name] = "constexpr" if name in const else ("*fp16" if name.endswith("_ptr") else "i32")
    else:
        kmajor = t["layout"] == "nk"
        fn = probe_streamk_kernel if var == "streamk" else probe_persistent_kernel
        const = {**cfg, "B_KMAJOR": int(kmajor)}
        if var != "streamk":
            ws_flag = int(var.startswith("ws"))
            const.update(WARP_SPECIALIZE=ws_flag, FLATTEN=int(not ws_flag or var == "ws_flat"))
        descs = desc_blocks(t)
        for name in fn.arg_names:
            if name in const:
                sig[name] = "constexpr"
            elif name in descs:
                sig[name] = "tensordesc<fp16[{}]>".format(",".join(map(str, descs[name])))
            else:
                sig[name] = {"ws_ptr": "*fp32", "cnt_ptr": "*i32"}.get(name, "i32")
    # the JIT's specialization at 4096^3: pointers and ints divisible by 16
    attrs = {(i,): [["tt.divisibility", 16]] for i, name in enumerate(fn.arg_names)
             if sig[name].startswith("*") or (sig[name] == "i32" and name != "DP_TILES")}  # fmt: skip
    src = ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs)
    t0 = time.perf_counter()
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32), options=dict(t["opts"]))
    meta = kernel_meta(k)
    asm = getattr(k, "asm", {}) or {}
    if "n_regs" not in meta and isinstance(asm.get("ptx"), str):
        import re

        regs = [int(v) for v in re.findall(r"\.maxnreg\s+(\d+)", asm["ptx"])]
        if regs:
            meta["ptx_maxnreg"] = regs[0]
    return {"status": "ok", "compile_s": round(time.perf_counter() - t0, 2), **meta}


# ---------------------------------------------------------------------------------------------- workers
def worker(mode: str, size: int) -> None:
    """Runs tasks read from stdin (JSON lines); one JSON result line each on the original stdout."""
    res = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # anything else printed (compiler dumps, warnings) goes to stderr
    sys.stdout = sys.stderr
    x: dict[str, torch.Tensor] | None = None
    sms = H200_SMS
    if mode == "gpu":
        triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
        x = make_inputs(size, size, size, "cuda")
        sms = torch.cuda.get_device_properties(0).multi_processor_count
    for line in sys.stdin:
        t = json.loads(line)
        try:
            if mode == "compile":
                out = compile_sm90(t, size)
            else:
                assert x is not None
                x["c"].fill_(float("nan"))
                fn = make_launch(t, x, sms)
                t0 = time.perf_counter()
                k = fn()
                torch.cuda.synchronize()
                compile_s = time.perf_counter() - t0
                ok, err = check(x)
                # a rough screen: 5 launches, events (no L2 flush)
                e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                e0.record()
                for _ in range(5):
                    fn()
                e1.record()
                torch.cuda.synchronize()
                ok2, err2 = check(x)
                out = {"status": "ok" if ok and ok2 else "wrong", "max_abs_err": max(err, err2),
                       "compile_s": round(compile_s, 2), "screen_ms": e0.elapsed_time(e1) / 5, **kernel_meta(k)}  # fmt: skip
        except Exception as exc:
            out = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:2000],
                   "traceback": traceback.format_exc()[-3000:]}  # fmt: skip
        res.write(json.dumps(out) + "\n")


def _readline(fd: int, timeout: float) -> str | None:
    buf = b""
    end = time.monotonic() + timeout
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        if not ready:
            return None
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return None
        buf += chunk
        if buf.endswith(b"\n"):
            return buf.decode(errors="replace")


def run_pool(tasks: list[dict[str, Any]], mode: str, jobs: int, deadline: float, task_timeout: float,
             size: int, env: dict[str, str]) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Each task in a worker process, ``jobs`` at once; a worker that dies or hangs is replaced."""
    results: dict[str, dict[str, Any]] = {}
    queue = list(tasks)
    lock = threading.Lock()
    logdir = Path(tempfile.mkdtemp(prefix="matmul_probe_"))

    def slot(idx: int) -> None:
        proc: subprocess.Popen[bytes] | None = None
        errpath = logdir / "none"
        spawned = 0
        while True:
            with lock:
                if not queue or time.monotonic() > deadline:
                    break
                t = queue.pop(0)
            if proc is None:
                spawned += 1
                errpath = logdir / f"worker{idx}-{spawned}.err"
                cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", mode, "--size", str(size)]
                with open(errpath, "wb") as errf:
                    proc = subprocess.Popen(
                        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errf, env=env
                    )
            assert proc.stdin is not None and proc.stdout is not None
            t0 = time.monotonic()
            try:
                proc.stdin.write((json.dumps(t) + "\n").encode())
                proc.stdin.flush()
                line = _readline(proc.stdout.fileno(), task_timeout)
            except (BrokenPipeError, OSError):
                line = None
            if line is None:
                hung = proc.poll() is None
                if hung:
                    proc.kill()
                proc.wait()
                tail = errpath.read_text(errors="replace")[-1500:] if errpath.exists() else ""
                r = {"status": "timeout" if hung else "crashed", "rc": proc.returncode, "stderr_tail": tail}
                proc = None
            else:
                r = json.loads(line)
            r["worker_s"] = round(time.monotonic() - t0, 2)
            with lock:
                results[t["id"]] = r
                print(f"  [{len(results)}/{len(tasks)}] {r['status']:8s} {t['id']}"
                      + (f"  ({r.get('error', r.get('stderr_tail', ''))[:160]!r})" if r["status"] in ("error", "crashed", "timeout") else "")
                      + (f"  err {r['max_abs_err']:.2e}" if "max_abs_err" in r else ""), flush=True)  # fmt: skip
        if proc is not None:
            assert proc.stdin is not None
            proc.stdin.close()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    threads = [threading.Thread(target=slot, args=(i,), daemon=True) for i in range(max(1, jobs))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    for t in tasks:
        results.setdefault(
            t["id"], {"status": "not tried", "reason": "budget spent before this config's turn"}
        )
    return results


# ---------------------------------------------------------------------------------------------- timing
class Timer:
    """CUDA-event times of single calls, L2 flushed (a 256 MB memset) before each; median of ``reps``."""

    def __init__(self) -> None:
        self.flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")

    def event_ms(self, fn: Any, reps: int) -> float:
        fn()
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
        for i in range(reps):
            self.flush.zero_()
            starts[i].record()
            fn()
            ends[i].record()
        torch.cuda.synchronize()
        return statistics.median(s.elapsed_time(e) for s, e in zip(starts, ends))

    @staticmethod
    def do_bench_ms(fn: Any) -> float | None:
        try:
            return float(triton.testing.do_bench(fn, warmup=5, rep=25, return_mode="median"))
        except TypeError:  # a triton without return_mode
            return float(triton.testing.do_bench(fn, warmup=5, rep=25, quantiles=[0.5]))


def provenance() -> dict[str, Any]:
    p: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": [sys.executable, *sys.argv],
        "cwd": os.getcwd(),
        "host": platform.node(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "triton": triton.__version__,
        "script_sha256": hashlib.sha256(Path(__file__).read_bytes()).hexdigest(),
    }
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        p.update(gpu=props.name, sms=props.multi_processor_count, capability=list(torch.cuda.get_device_capability(0)),
                 gpu_memory_gib=round(props.total_memory / 2**30, 1))  # fmt: skip
    try:
        q = "name,driver_version,clocks.max.sm,clocks.sm,power.limit,temperature.gpu,persistence_mode"
        out = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20).stdout.strip()  # fmt: skip
        p["nvidia_smi"] = (
            dict(zip(q.split(","), [v.strip() for v in out.splitlines()[0].split(",")])) if out else None
        )
    except Exception as exc:
        p["nvidia_smi"] = f"unavailable: {exc!r}"
    try:
        p["git_head"] = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                       text=True, timeout=10).stdout.strip()  # fmt: skip
    except Exception:
        p["git_head"] = None
    return p


def gpu_main(a: argparse.Namespace) -> int:
    t_start = time.monotonic()
    budget_end = t_start + a.budget_s
    prov = provenance()
    print(json.dumps(prov), flush=True)
    sms = prov.get("sms", H200_SMS)
    size = a.size
    flops = 2.0 * size**3
    tasks = [t for t in gpu_tasks() if not a.only or any(s in t["id"] for s in a.only)]
    results: dict[str, dict[str, Any]] = {}
    runnable = []
    for t in tasks:
        if smem_estimate(t) > SM90_SMEM:
            results[t["id"]] = {
                "status": "skipped",
                "reason": f"smem estimate {smem_estimate(t)} > {SM90_SMEM}",
            }
        elif t["variant"] not in ("repo", "wsdev_kn", "wsdev_nk") and TensorDescriptor is None:
            results[t["id"]] = {"status": "skipped", "reason": HOST_DESC_ERR}
        else:
            runnable.append(t)
    if any(t["variant"] == "repo" for t in runnable):
        try:
            repo_module()
        except Exception as exc:
            for t in [t for t in runnable if t["variant"] == "repo"]:
                results[t["id"]] = {"status": "skipped", "reason": str(exc)}
            runnable = [t for t in runnable if t["variant"] != "repo"]

    # 1. compile + launch + check, each config in a worker process
    print(f"compiling and checking {len(runnable)} configs in {a.jobs} worker processes ...", flush=True)
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    pool_deadline = t_start + a.compile_frac * a.budget_s
    results.update(run_pool(runnable, "gpu", a.jobs, pool_deadline, a.task_timeout, size, env))
    print(f"workers done at {time.monotonic() - t_start:.0f} s", flush=True)

    # 2. this process: inputs, cuBLAS for both layouts, launchers for the configs that passed
    triton.set_allocator(lambda n, align, stream: torch.empty(n, device="cuda", dtype=torch.int8))
    x = make_inputs(size, size, size, "cuda")
    c_blas = torch.empty_like(x["c"])
    fns: dict[str, Any] = {
        "cublas_kn": lambda: torch.matmul(x["a"], x["b"], out=c_blas),
        "cublas_nk": lambda: torch.matmul(x["a"], x["bt"].T, out=c_blas),
    }
    bufs: dict[str, dict[str, torch.Tensor]] = {}
    by_id = {t["id"]: t for t in tasks}
    for t in runnable:
        r = results[t["id"]]
        if r["status"] != "ok":
            continue
        try:
            xi = {**x, "c": torch.empty_like(x["c"])}
            fn = make_launch(t, xi, sms)
            fn()
            torch.cuda.synchronize()
            ok, err = check(xi)
            if not ok:
                r.update(status="wrong", max_abs_err=err, where="main process, first launch")
                continue
            fns[t["id"]], bufs[t["id"]] = fn, xi
        except Exception as exc:
            r.update(status="error", error=f"main process: {type(exc).__name__}: {exc}"[:2000])
    for name in ("cublas_kn", "cublas_nk"):
        fns[name]()
    torch.cuda.synchronize()

    # 3. interleaved rounds, rotating order
    timer = Timer()
    warm_end = time.monotonic() + 1.0
    while time.monotonic() < warm_end:  # clocks up
        fns["cublas_kn"]()
    torch.cuda.synchronize()
    names = list(fns)
    ev: dict[str, list[float]] = {n: [] for n in names}
    db: dict[str, list[float]] = {n: [] for n in names}
    rounds = 0
    while rounds < a.rounds and (rounds < a.min_rounds or time.monotonic() < budget_end):
        rot = rounds % len(names)
        for n in names[rot:] + names[:rot]:
            try:
                ev[n].append(timer.event_ms(fns[n], a.reps))
                d = Timer.do_bench_ms(fns[n])
                if d is not None:
                    db[n].append(d)
            except Exception as exc:
                results.setdefault(n, {}).update(status="error", error=f"timing: {exc!r}"[:2000])
        rounds += 1
        print(f"round {rounds} done at {time.monotonic() - t_start:.0f} s", flush=True)

    # 3b. --paired N: each variant against cuBLAS on its layout in N adjacent pairs (one clock per pair)
    pairs_out: dict[str, dict[str, Any]] = {}
    if a.paired:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from _timing import paired

        for n in names:
            if n.startswith("cublas_"):
                continue
            blas_fn = fns[f"cublas_{by_id[n]['layout']}"]
            t_v, t_b = paired(fns[n], blas_fn, a.paired)
            rs = sorted(b / v for v, b in zip(t_v, t_b))
            pairs_out[n] = {"median": statistics.median(rs), "p01": rs[len(rs) // 100], "p99": rs[-1 - len(rs) // 100],
                            "variant_ms": statistics.median(t_v), "cublas_ms": statistics.median(t_b)}  # fmt: skip
            print(f"paired {a.paired}: cuBLAS / {n} = {pairs_out[n]['median']:.3f} "
                  f"({pairs_out[n]['variant_ms']:.4f} vs {pairs_out[n]['cublas_ms']:.4f} ms)", flush=True)  # fmt: skip

    # 4. correctness once more, after all those launches (Stream-K's counters must have reset each time)
    for n, xi in bufs.items():
        try:
            xi["c"].fill_(float("nan"))
            fns[n]()
            torch.cuda.synchronize()
            ok, err = check(xi)
            results[n]["final_check"] = {"ok": ok, "max_abs_err": err}
            if not ok:
                results[n]["status"] = "wrong"
        except Exception as exc:
            results[n]["final_check"] = {"ok": False, "error": repr(exc)}
            results[n]["status"] = "error"

    def med(v: list[float]) -> float | None:
        return statistics.median(v) if v else None

    blas = {lay: med(ev[f"cublas_{lay}"]) for lay in ("kn", "nk")}
    blas_db = {lay: med(db[f"cublas_{lay}"]) for lay in ("kn", "nk")}
    rows = []
    for n in names:
        ms = med(ev[n])
        if ms is None:
            continue
        if n.startswith("cublas_"):
            lay = n[-2:]
            row = {"name": n, "variant": "cublas", "layout": lay, "config": f"torch.matmul, B {lay}"}
        else:
            t = by_id[n]
            lay = t["layout"]
            row = {"name": n, "variant": t["variant"], "layout": lay, "config": t["config"], **results[n]}
        bm = blas[lay]
        row.update(ms=ms, do_bench_ms=med(db[n]), tflops=flops / ms / 1e9, rounds_ms=ev[n],
                   cublas_over_variant=(bm / ms) if bm else None,
                   cublas_over_variant_do_bench=(blas_db[lay] / med(db[n])) if blas_db[lay] and db[n] else None,
                   best_cublas_over_variant=min(v for v in blas.values() if v) / ms)  # fmt: skip
        rows.append(row)
    rows.sort(key=lambda r: r["ms"])
    print(f"\n{rounds} rounds x {a.reps} flushed event-timed calls (+ do_bench median) per contestant, "
          f"M=N=K={size}, {sms} SMs; ratio = cuBLAS (same layout) / variant, event medians")  # fmt: skip
    hdr = f"{'variant':9s} {'config':62s} {'ms':>8s} {'db_ms':>8s} {'TFLOP/s':>8s} {'ratio':>6s} {'db_rat':>6s} correct  err      regs/spill/smem"
    print(hdr)
    for r in rows:
        ok = "yes" if r["variant"] == "cublas" else ("yes" if r.get("final_check", {}).get("ok") else "NO")
        res = "/".join(str(r.get(k, "-")) for k in ("n_regs", "n_spills", "shared"))
        err = f"{r['max_abs_err']:.1e}" if "max_abs_err" in r else "-"
        dbm = f"{r['do_bench_ms']:.4f}" if r["do_bench_ms"] else "-"
        rat = f"{r['cublas_over_variant']:.3f}" if r["cublas_over_variant"] else "-"
        drat = f"{r['cublas_over_variant_do_bench']:.3f}" if r["cublas_over_variant_do_bench"] else "-"
        print(
            f"{r['variant']:9s} {r['config'][:62]:62s} {r['ms']:8.4f} {dbm:>8s} {r['tflops']:8.1f} {rat:>6s} {drat:>6s} {ok:7s} {err:8s} {res}"
        )
    failed = {n: r for n, r in results.items() if n not in fns or r.get("status") != "ok"}
    if failed:
        print("\nnot timed / failed:")
        for n, r in failed.items():
            why = r.get("reason") or r.get("error") or r.get("stderr_tail", "")[-300:] or ""
            extra = f" max_abs_err {r['max_abs_err']:.2e}" if "max_abs_err" in r else ""
            print(f"  {r.get('status', '?'):9s} {n}{extra}  {why[:300]!r}")
    wall = time.monotonic() - t_start
    print(f"\nwall {wall:.0f} s", flush=True)
    if a.out:
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        doc = {"provenance": prov, "size": size, "rounds": rounds, "reps": a.reps, "wall_s": wall,
               "budget_s": a.budget_s, "cublas_ms": blas, "cublas_do_bench_ms": blas_db, "rows": rows,
               "results": results, "tasks": tasks, "paired": pairs_out}  # fmt: skip
        (out / "matmul_probe.json").write_text(json.dumps(doc, indent=1, default=str))
        print(f"wrote {out / 'matmul_probe.json'}")
    return 0


# ---------------------------------------------------------------------------------------------- CPU checks
def cpu_main(a: argparse.Namespace) -> int:
    if not INTERPRET:
        print("--check-cpu needs TRITON_INTERPRET=1 set before triton is imported", file=sys.stderr)
        return 2
    m, n, k = 512, 512, 256
    x = make_inputs(m, n, k, "cpu")
    failures = 0
    seen: set[str] = set()
    tasks = [t for t in gpu_tasks() if not a.only or any(s in t["id"] for s in a.only)]
    # Stream-K with small tiles (64 tiles of 64x64, 8 K iterations) on 5, 7 and 13 programs: up to 3
    # contributors per tile, ranges inside one tile, and the counters' reset (each is launched twice).
    extra = [(_task("streamk", 64, 64, 32, 4, 4, 2, epi, sk=mode, kmajor=km), p)
             for mode in ("rem", "rem1", "all") for p in (5, 7, 13) for epi, km in ((1, 0), (2, 1))]  # fmt: skip
    print(f"interpreter: M={m} N={n} K={k}, persistent grids capped at 3 programs ('2sms': 6)")
    for t, progs in [(t, 3) for t in tasks] + extra:
        # the code path: everything but launch options (warps, stages, maxnreg) and the GPU grid size
        key = f"{progs}:{t['variant']}:{t['layout']}:{json.dumps(t['cfg'], sort_keys=True)}:{t['grid']}:{t.get('sk')}:{t.get('ws')}"
        if key in seen:
            continue
        seen.add(key)
        needs = []
        if t["variant"] not in ("repo", "wsdev_kn", "wsdev_nk"):
            needs.append("host TensorDescriptor")
        if t["variant"].startswith("ws") or t.get("ws"):
            needs.append("warp_specialize")
        t0 = time.perf_counter()
        try:
            fn = make_launch(t, x, sms=progs)
            ok, err = True, 0.0
            for _ in range(2 if t["variant"] == "streamk" else 1):
                x["c"].fill_(float("nan"))
                fn()
                ok_i, err_i = check(x)
                ok, err = ok and ok_i, max(err, err_i)
            status = "ok" if ok else "WRONG"
            failures += not ok
            msg = f"max abs err {err:.2e}"
        except Exception as exc:
            if needs:
                status, msg = (
                    "n/a",
                    f"not checkable on CPU (needs {', '.join(needs)}): {type(exc).__name__}: {exc}",
                )
            else:
                status, msg = "ERROR", f"{type(exc).__name__}: {exc}"
                failures += 1
        print(
            f"  {status:5s} {t['id'] + ('' if progs == 3 else f',programs={progs}'):80s} {msg[:200]}  ({time.perf_counter() - t0:.1f} s)",
            flush=True,
        )
    if a.no_compile:
        return 1 if failures else 0
    print("\nsm_90 triton.compile (this machine's triton " + triton.__version__ + "; the device may differ):")
    env = dict(os.environ)
    env.pop("TRITON_INTERPRET", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), *filter(None, [env.get("PYTHONPATH")])])
    res = run_pool(tasks, "compile", a.jobs, time.monotonic() + 900, a.task_timeout, a.size, env)
    print()
    for t in tasks:
        r = res[t["id"]]
        est = smem_estimate(t)
        if r["status"] == "ok":
            sh = r.get("shared")
            flag = "  OVER SM90 LIMIT" if isinstance(sh, int) and sh > SM90_SMEM else ""
            print(f"  ok    {t['id']:80s} shared {sh} (est {est}) regs {r.get('n_regs', r.get('ptx_maxnreg'))} "
                  f"spills {r.get('n_spills')} {r['compile_s']} s{flag}")  # fmt: skip
        else:
            why = r.get("error") or r.get("stderr_tail", "") or r.get("reason", "")
            print(f"  {r['status']:5s} {t['id']:80s} (est smem {est}) {why[-300:]!r}")
    return 1 if failures else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="directory for matmul_probe.json (default: print only)")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--budget-s", type=float, default=200.0, help="no new timing round after this (s)")
    ap.add_argument("--compile-frac", type=float, default=0.55,
                    help="no new config is tried after this fraction of the budget")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=12, help="at most this many interleaved rounds")
    ap.add_argument("--min-rounds", type=int, default=3, help="at least this many, budget or not")
    ap.add_argument("--reps", type=int, default=10, help="flushed event-timed calls per contestant per round")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 1), help="worker processes")
    ap.add_argument("--task-timeout", type=float, default=120.0, help="s per config in a worker (hang guard)")
    ap.add_argument("--only", action="append", help="only config ids containing this (repeatable)")
    ap.add_argument("--paired", type=int, default=0, metavar="N",
                    help="then each variant against cuBLAS on its layout in N adjacent pairs (_timing.paired)")  # fmt: skip
    ap.add_argument("--check-cpu", action="store_true", help="interpreter + sm_90 compile checks, no GPU")
    ap.add_argument("--no-compile", action="store_true", help="with --check-cpu: skip the sm_90 compiles")
    ap.add_argument("--worker", choices=["gpu", "compile"], help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.size)
        return 0
    if a.check_cpu:
        return cpu_main(a)
    if not torch.cuda.is_available():
        print("no CUDA GPU: run with --check-cpu here", file=sys.stderr)
        return 2
    return gpu_main(a)


if __name__ == "__main__":
    sys.exit(main())
