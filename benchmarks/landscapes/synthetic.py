"""SYNTHETIC landscapes: analytic models that imitate GPU tuning landscapes. Not measurements.

They exist to develop and test search strategies on CPU before real H200 landscapes are recorded with
``tritune tune --record``. Every file written here says ``"synthetic": true`` in its provenance and
``device: "synthetic (H200-like model)"``, so it can never pass for a recording.

Each model has the features real landscapes show: a multiplicative structure over log2 tile sizes,
warps and stages; cliffs (configs that exceed shared memory are ``illegal``, as screening reports them;
register spills are slow); a few unpredictable ``compile_failed``/``launch_failed`` configs; and
seeded per-config roughness that no smooth model explains.

    python benchmarks/landscapes/synthetic.py --out /tmp/synthetic-landscapes
"""

from __future__ import annotations

import argparse
import itertools
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from tritune.config import Config
from tritune.landscape import Landscape, LandscapePoint
from tritune.outcome import Status

SMEM_BYTES = 232_448  # H200: 227 KiB per block
SMS = 132
DEVICE = "synthetic (H200-like model)"


def _landscape(
    name: str, key: dict[str, Any], points: list[LandscapePoint], seed: int, about: str
) -> Landscape:
    land = Landscape.from_points(name, DEVICE, key, points)
    land.provenance = {
        "synthetic": True,
        "generator": f"benchmarks/landscapes/synthetic.py:{name}",
        "seed": seed,
        "about": about,
    }
    return land


def _rough(rng: np.random.Generator, sigma: float) -> float:
    return float(np.exp(rng.normal(0.0, sigma)))


def matmul(
    seed: int = 0, size: int = 4096, name: str = "synthetic_matmul", grid: dict[str, list[int]] | None = None
) -> Landscape:
    """fp16 GEMM: roofline over tile intensity, warp fit, pipelining, wave quantization, smem and spill cliffs."""
    rng = np.random.default_rng(seed)
    m = n = k = size
    ideal_ms = 2 * m * n * k / 800e12 * 1e3
    # Unmodelled per-(tile, warps) effects, shared by all stages and GROUP_M of that shape.
    shape_noise: dict[tuple[int, int, int, int], float] = {}
    points = []
    g = grid or {
        "BM": [32, 64, 128, 256],
        "BN": [32, 64, 128, 256],
        "BK": [32, 64, 128],
        "num_warps": [2, 4, 8],
        "num_stages": [2, 3, 4, 5],
        "GROUP_M": [1, 8],
    }
    for bm, bn, bk, warps, stages, group in itertools.product(
        g["BM"], g["BN"], g["BK"], g["num_warps"], g["num_stages"], g["GROUP_M"]
    ):
        cfg = Config({"BM": bm, "BN": bn, "BK": bk, "GROUP_M": group}, num_warps=warps, num_stages=stages)
        smem = (bm * bk + bk * bn) * 2 * stages
        if smem > SMEM_BYTES:
            points.append(LandscapePoint(cfg, Status.ILLEGAL, None, "shared memory"))
            continue
        if rng.random() < 0.01:
            points.append(LandscapePoint(cfg, Status.COMPILE_FAILED, None, "synthetic failure"))
            continue
        intensity = bm * bn / (bm + bn)
        eff = intensity / (intensity + 24.0)
        ideal_warps = max(1.0, bm * bn / 4096)
        eff *= math.exp(-0.25 * (math.log2(warps) - math.log2(ideal_warps)) ** 2)
        eff *= 1 - 0.6 * math.exp(-(stages - 1) * bk / 64)
        acc_regs = bm * bn / (32 * warps)
        if acc_regs > 256:
            eff /= 3.0  # spills: a cliff
        elif acc_regs > 128:
            eff /= 1.25
        per_sm = max(1, min(SMEM_BYTES // smem, 2048 // (32 * warps), 4))
        tiles = math.ceil(m / bm) * math.ceil(n / bn)
        waves = tiles / (SMS * per_sm)
        eff *= waves / math.ceil(waves)
        eff *= 1.0 if group == 8 else (0.93 if tiles > 256 else 1.0)
        key = (bm, bn, bk, warps)
        if key not in shape_noise:
            shape_noise[key] = _rough(rng, 0.05)
        t = ideal_ms / eff * shape_noise[key] * _rough(rng, 0.02)
        points.append(LandscapePoint(cfg, Status.MEASURED, round(t, 6)))
    return _landscape(name, {"M": m, "N": n, "K": k}, points, seed, matmul.__doc__ or "")


def softmax(seed: int = 0) -> Landscape:
    """Row softmax over 4096 x 8192 fp16, chunked: memory-bound, a wide plateau, vectorization and spill cliffs."""
    rng = np.random.default_rng(seed)
    rows, cols = 4096, 8192
    ideal_ms = 2 * rows * cols * 2 / 4.8e12 * 1e3
    points = []
    for block, warps, stages, rpp in itertools.product(
        [256, 512, 1024, 2048, 4096, 8192, 16384], [1, 2, 4, 8, 16, 32], [1, 2, 3, 4], [1, 2, 4]
    ):
        cfg = Config({"BLOCK": block, "ROWS": rpp}, num_warps=warps, num_stages=stages)
        per_thread = block * rpp / (32 * warps)
        if per_thread > 512:
            points.append(LandscapePoint(cfg, Status.COMPILE_FAILED, None, "synthetic: too many registers"))
            continue
        if block * rpp * 2 * stages > SMEM_BYTES:
            points.append(LandscapePoint(cfg, Status.ILLEGAL, None, "shared memory"))
            continue
        eff = min(1.0, per_thread / 8) ** 0.25  # vector width
        if per_thread > 64:
            eff /= 1 + (per_thread - 64) / 128  # spills
        chunks = max(1, cols // block)
        programs = rows / rpp
        in_flight = programs * min(stages, chunks) * block * rpp * 2
        eff *= min(1.0, in_flight / 64e6) ** 0.3
        eff *= min(1.0, programs / (SMS * 4)) ** 0.5
        eff *= 1.0 if block >= cols or stages > 1 else 0.85
        t = ideal_ms / eff * _rough(rng, 0.03)
        points.append(LandscapePoint(cfg, Status.MEASURED, round(t, 6)))
    return _landscape("synthetic_softmax", {"rows": rows, "cols": cols}, points, seed, softmax.__doc__ or "")


def near_ties(seed: int = 0) -> Landscape:
    """An elementwise kernel: most configs within a few percent of each other, winners decided by noise."""
    rng = np.random.default_rng(seed)
    points = []
    for block, warps, stages, evict in itertools.product(
        [128, 256, 512, 1024, 2048, 4096, 8192, 16384], [1, 2, 4, 8, 16], [1, 2, 3, 4], [0, 1]
    ):
        cfg = Config({"BLOCK": block, "EVICT": evict}, num_warps=warps, num_stages=stages)
        per_thread = block / (32 * warps)
        if per_thread < 1:
            points.append(LandscapePoint(cfg, Status.ILLEGAL, None, "fewer elements than threads"))
            continue
        slow = 1.0 + 0.04 * abs(math.log2(per_thread) - 3) + (0.25 if per_thread > 64 else 0.0)
        slow *= 1.0 - 0.01 * evict
        t = 0.05 * slow * _rough(rng, 0.012)
        points.append(LandscapePoint(cfg, Status.MEASURED, round(t, 6)))
    return _landscape("synthetic_near_ties", {"n": 1 << 24}, points, seed, near_ties.__doc__ or "")


def attention(seed: int = 0) -> Landscape:
    """Flash-attention forward: a narrow optimum, many smem-illegal configs, rough surface, some launch failures."""
    rng = np.random.default_rng(seed)
    head_dim = 128
    points = []
    for bm, bn, warps, stages in itertools.product(
        [16, 32, 64, 128, 256], [16, 32, 64, 128, 256], [2, 4, 8, 16], [1, 2, 3, 4, 5]
    ):
        cfg = Config({"BLOCK_M": bm, "BLOCK_N": bn}, num_warps=warps, num_stages=stages)
        smem = (bm * head_dim + 2 * bn * head_dim * stages) * 2
        if smem > SMEM_BYTES:
            points.append(LandscapePoint(cfg, Status.ILLEGAL, None, "shared memory"))
            continue
        if bm < 16 * warps // 4 or rng.random() < 0.02:
            points.append(LandscapePoint(cfg, Status.LAUNCH_FAILED, None, "synthetic: warps exceed tile"))
            continue
        lm, ln, lw, ls = math.log2(bm), math.log2(bn), math.log2(warps), stages
        eff = math.exp(-0.5 * ((lm - 7) / 0.7) ** 2 - 0.5 * ((ln - 6) / 0.8) ** 2)
        eff *= math.exp(-0.5 * ((lw - (lm - 4)) / 0.6) ** 2)
        eff *= math.exp(-0.5 * ((ls - 3) / 1.2) ** 2)
        if bm * head_dim / (32 * warps) > 256:
            eff /= 2.5
        t = 0.4 / (0.4 + eff) * _rough(rng, 0.05)
        points.append(LandscapePoint(cfg, Status.MEASURED, round(t, 6)))
    return _landscape(
        "synthetic_attention",
        {"B": 4, "H": 32, "S": 4096, "D": head_dim},
        points,
        seed,
        attention.__doc__ or "",
    )


def short_elementwise(seed: int = 0, n: int = 1 << 20) -> Landscape:
    """A ~6 us elementwise kernel (GELU at n = 2^20): a launch floor, waves of few programs, vector width.

    Few programs fill the GPU badly (wave quantization), small blocks pay per-program latency, and
    threads with under 4 elements lose vector width: an irregular top where one or two configs win by
    a few percent over the rest, as close as timing noise.
    """
    rng = np.random.default_rng(seed)
    launch_ms, bytes_moved = 0.0035, 8 * n  # fp32 in and out
    points = []
    for block, warps, stages in itertools.product([128 << i for i in range(8)], [1, 2, 4, 8, 16], [1, 3]):
        cfg = Config({"BLOCK": block}, num_warps=warps, num_stages=stages)
        per_thread = block / (32 * warps)
        programs = math.ceil(n / block)
        resident = max(1, min(32, 64 // warps))  # blocks per SM, limited by warps per SM
        waves = programs / (SMS * resident)
        fill = min(1.0, programs / SMS)  # fewer programs than SMs leave SMs idle
        eff = fill * (waves / math.ceil(waves)) * min(1.0, per_thread / 8) ** 0.25
        if per_thread > 64:
            eff /= 1 + (per_thread - 64) / 64  # register pressure
        per_program_ms = 0.0012 * math.ceil(waves)  # scheduling latency per wave
        t = launch_ms + bytes_moved / 4.0e12 * 1e3 / eff + per_program_ms
        t *= (1.004 if stages == 3 else 1.0) * _rough(rng, 0.015)
        points.append(LandscapePoint(cfg, Status.MEASURED, round(t, 7)))
    return _landscape(
        "synthetic_short_elementwise", {"n": n}, points, seed, short_elementwise.__doc__ or ""
    )


GENERATORS: dict[str, Callable[[int], Landscape]] = {
    "synthetic_matmul": matmul,
    "synthetic_matmul_small": lambda seed: matmul(seed, size=1024, name="synthetic_matmul_small"),
    # 216 configs, the size of examples/matmul.py's fp16 matmul space.
    "synthetic_matmul_216": lambda seed: matmul(
        seed,
        size=8192,
        name="synthetic_matmul_216",
        grid={
            "BM": [64, 128, 256],
            "BN": [64, 128, 256],
            "BK": [32, 64, 128],
            "num_warps": [4, 8],
            "num_stages": [2, 3, 4, 5],
            "GROUP_M": [8],
        },
    ),
    # 1,728 configs (1,400 legal): GROUP_M 1/4/8, the widest space of the held-out suite.
    "synthetic_matmul_wide": lambda seed: matmul(
        seed,
        size=6144,
        name="synthetic_matmul_wide",
        grid={
            "BM": [32, 64, 128, 256],
            "BN": [32, 64, 128, 256],
            "BK": [32, 64, 128],
            "num_warps": [2, 4, 8],
            "num_stages": [2, 3, 4, 5],
            "GROUP_M": [1, 4, 8],
        },
    ),
    "synthetic_softmax": softmax,
    "synthetic_near_ties": near_ties,
    "synthetic_attention": attention,
    "synthetic_short_elementwise": short_elementwise,
}


def generate_all(seed: int = 0) -> list[Landscape]:
    """Every synthetic landscape for one seed."""
    return [gen(seed) for gen in GENERATORS.values()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="folder to write the synthetic landscape JSON files into")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for land in generate_all(args.seed):
        path = out / f"{land.kernel}.json"
        land.write(path)
        legal = sum(p.status is not Status.ILLEGAL for p in land.points)
        print(f"{path}: {len(land.points)} configs, {legal} legal, {len(land.measured)} measured (SYNTHETIC)")


if __name__ == "__main__":
    main()
