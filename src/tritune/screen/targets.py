"""Resource limits of the NVIDIA GPU architectures tritune screens for, and reading them from a device.

Sources, cited per number below as:

* [CPG] CUDA C++ Programming Guide, "Compute Capabilities" appendix, table "Technical Specifications
  per Compute Capability" (https://docs.nvidia.com/cuda/cuda-c-programming-guide/#features-and-technical-specifications),
  and its per-architecture "Shared Memory" sections (1 KB reserved per block from 8.x on).
* [OCC] CUDA Occupancy Calculator / ``cuda_occupancy.h`` in the CUDA Toolkit: registers are allocated
  per warp in units of 256, across 4 warp sub-partitions; shared memory in units of 128 B from 8.x on.
* [A100] NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs on A100).
* [GA102] NVIDIA Ampere GA102 GPU Architecture whitepaper (82 SMs on GeForce RTX 3090).
* [ADA] NVIDIA Ada GPU Architecture whitepaper (128 SMs on GeForce RTX 4090).
* [H100] NVIDIA H100 Tensor Core GPU Architecture whitepaper (132 SMs on H100 SXM5; H200 uses the same GH100 configuration).
* [BW] NVIDIA Blackwell tuning guide / Blackwell architecture technical brief (148 SMs on B200),
  and the NVIDIA RTX Blackwell GPU Architecture whitepaper (170 SMs on GeForce RTX 5090).
* [PTX] PTX ISA, "Tensor Memory": 512 columns of 128 lanes per SM on sm_100 (Triton checks the same 512).

The SM count is a fact of one product, not of the architecture; it is informational only (no verdict
depends on it). Where a device is present, :func:`target_from_device` reads the limits from it, and
the device wins wherever it disagrees with this table.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from tritune.errors import UnknownTargetError


@dataclass(frozen=True)
class Target:
    """The resource limits of one GPU architecture that decide whether a kernel launches, and how many blocks fit."""

    name: str  #: tritune's name, e.g. ``sm90``
    arch: int  #: compute capability as Triton spells it: 90 for 9.0
    shared_per_block: int  #: bytes a block may use, with the opt-in (cudaDevAttrMaxSharedMemoryPerBlockOptin)
    shared_per_sm: int  #: bytes of shared memory per SM (cudaDevAttrMaxSharedMemoryPerMultiprocessor)
    shared_reserved_per_block: (
        int  #: bytes the system reserves in each block (cudaDevAttrReservedSharedMemoryPerBlock)
    )
    registers_per_sm: int  #: 32-bit registers per SM
    registers_per_block: int  #: 32-bit registers one block may use
    registers_per_thread: int  #: most registers one thread may use
    threads_per_block: int
    threads_per_sm: int
    blocks_per_sm: int  #: most resident blocks per SM
    warp_size: int = 32
    register_unit: int = 256  #: registers are allocated per warp, rounded up to this many
    warp_partitions: int = 4  #: the register file is split across this many warp schedulers
    shared_unit: int = 128  #: shared memory is allocated per block, rounded up to this many bytes
    tensor_memory_columns: int | None = None  #: tensor memory per SM in columns (sm_100), None where absent
    sm_count: int | None = None  #: SMs on the common part named in ``part``
    part: str = ""
    source: str = "table"  #: "table", or "device" when read from a GPU

    @property
    def sm(self) -> str:
        """The name NVIDIA's tools use, e.g. ``sm_90``: the one in verdict sentences."""
        return f"sm_{self.arch}"

    @property
    def warps_per_sm(self) -> int:
        return self.threads_per_sm // self.warp_size

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def gpu_target(self) -> Any:
        """Triton's ``GPUTarget`` for this architecture."""
        from tritune.screen.specialize import cuda_target

        return cuda_target(self.arch, self.warp_size)


_KB = 1024
# Every field of every row cites its source: [CPG] unless marked otherwise. The register file, the block
# register limit and the per-thread limit are the same from 8.0 to 12.0 ([CPG]: 64 K, 64 K, 255).
TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target(
            name="sm80",
            arch=80,
            shared_per_block=163 * _KB,  # [CPG] 8.0: 163 KB per block (opt-in)
            shared_per_sm=164 * _KB,  # [CPG] 8.0: 164 KB per SM
            shared_reserved_per_block=1 * _KB,  # [CPG] 8.x: 1 KB reserved per block
            registers_per_sm=64 * _KB,  # [CPG] 64 K 32-bit registers per SM
            registers_per_block=64 * _KB,  # [CPG] 64 K per block
            registers_per_thread=255,  # [CPG] 255 per thread
            threads_per_block=1024,  # [CPG] 1024 threads per block
            threads_per_sm=2048,  # [CPG] 8.0: 64 warps = 2048 threads per SM
            blocks_per_sm=32,  # [CPG] 8.0: 32 resident blocks per SM
            sm_count=108,  # [A100]
            part="A100",
        ),
        Target(
            name="sm86",
            arch=86,
            shared_per_block=99 * _KB,  # [CPG] 8.6: 99 KB per block (opt-in)
            shared_per_sm=100 * _KB,  # [CPG] 8.6: 100 KB per SM
            shared_reserved_per_block=1 * _KB,  # [CPG] 8.x: 1 KB reserved per block
            registers_per_sm=64 * _KB,  # [CPG]
            registers_per_block=64 * _KB,  # [CPG]
            registers_per_thread=255,  # [CPG]
            threads_per_block=1024,  # [CPG]
            threads_per_sm=1536,  # [CPG] 8.6: 48 warps = 1536 threads per SM
            blocks_per_sm=16,  # [CPG] 8.6: 16 resident blocks per SM
            sm_count=82,  # [GA102]
            part="GeForce RTX 3090",
        ),
        Target(
            name="sm89",
            arch=89,
            shared_per_block=99 * _KB,  # [CPG] 8.9: 99 KB per block (opt-in)
            shared_per_sm=100 * _KB,  # [CPG] 8.9: 100 KB per SM
            shared_reserved_per_block=1 * _KB,  # [CPG] 8.x: 1 KB reserved per block
            registers_per_sm=64 * _KB,  # [CPG]
            registers_per_block=64 * _KB,  # [CPG]
            registers_per_thread=255,  # [CPG]
            threads_per_block=1024,  # [CPG]
            threads_per_sm=1536,  # [CPG] 8.9: 48 warps = 1536 threads per SM
            blocks_per_sm=24,  # [CPG] 8.9: 24 resident blocks per SM
            sm_count=128,  # [ADA]
            part="GeForce RTX 4090",
        ),
        Target(
            name="sm90",
            arch=90,
            shared_per_block=227 * _KB,  # [CPG] 9.0: 227 KB = 232448 B per block (opt-in)
            shared_per_sm=228 * _KB,  # [CPG] 9.0: 228 KB per SM
            shared_reserved_per_block=1 * _KB,  # [CPG] 9.0: 1 KB reserved per block
            registers_per_sm=64 * _KB,  # [CPG]
            registers_per_block=64 * _KB,  # [CPG]
            registers_per_thread=255,  # [CPG]
            threads_per_block=1024,  # [CPG]
            threads_per_sm=2048,  # [CPG] 9.0: 64 warps = 2048 threads per SM
            blocks_per_sm=32,  # [CPG] 9.0: 32 resident blocks per SM
            sm_count=132,  # [H100] H100 SXM5 and H200
            part="H100 SXM5 / H200",
        ),
        Target(
            name="sm100",
            arch=100,
            shared_per_block=227 * _KB,  # [CPG] 10.0: 227 KB per block (opt-in)
            shared_per_sm=228 * _KB,  # [CPG] 10.0: 228 KB per SM
            shared_reserved_per_block=1 * _KB,  # [CPG] 10.0: 1 KB reserved per block
            registers_per_sm=64 * _KB,  # [CPG]
            registers_per_block=64 * _KB,  # [CPG]
            registers_per_thread=255,  # [CPG]
            threads_per_block=1024,  # [CPG]
            threads_per_sm=2048,  # [CPG] 10.0: 64 warps = 2048 threads per SM
            blocks_per_sm=32,  # [CPG] 10.0: 32 resident blocks per SM
            tensor_memory_columns=512,  # [PTX]
            sm_count=148,  # [BW] B200
            part="B200",
        ),
        Target(
            name="sm120",
            arch=120,
            shared_per_block=99 * _KB,  # [CPG] 12.0: 99 KB per block (opt-in)
            shared_per_sm=100 * _KB,  # [CPG] 12.0: 100 KB per SM
            shared_reserved_per_block=1 * _KB,  # [CPG] 12.0: 1 KB reserved per block
            registers_per_sm=64 * _KB,  # [CPG]
            registers_per_block=64 * _KB,  # [CPG]
            registers_per_thread=255,  # [CPG]
            threads_per_block=1024,  # [CPG]
            threads_per_sm=1536,  # [CPG] 12.0: 48 warps = 1536 threads per SM
            blocks_per_sm=32,  # [CPG] 12.0: 32 resident blocks per SM
            sm_count=170,  # [BW] GeForce RTX 5090
            part="GeForce RTX 5090",
        ),
    )
}


def known_targets() -> list[str]:
    """The names :func:`get_target` accepts, plus ``auto``."""
    return [*TARGETS, "auto"]


def get_target(name: str | Target) -> Target:
    """The limits for ``name`` (``sm90``, ``sm_90``, ``90`` or ``9.0`` alike), or ``auto`` for the local GPU."""
    if isinstance(name, Target):
        return name
    text = str(name).strip().lower()
    if text == "auto":
        return target_from_device()
    norm = text.replace("sm_", "").replace("sm", "").replace(".", "")
    if norm.isdigit() and f"sm{norm}" in TARGETS:
        return TARGETS[f"sm{norm}"]
    raise UnknownTargetError(
        f"unknown target {name!r}; known targets: {', '.join(known_targets())} "
        "(auto reads the limits of the GPU on this machine)"
    )


def target_from_device(device: int = 0) -> Target:
    """The limits of the local CUDA GPU, read from the device; the table fills only what the device does not report.

    Raises :class:`UnknownTargetError` where there is no GPU, with the reason.
    """
    from tritune.device import gpu_unavailable_reason

    why = gpu_unavailable_reason()
    if why is not None:
        raise UnknownTargetError(f"--target auto needs a GPU: {why}; name one of {', '.join(TARGETS)}")
    import torch

    props = torch.cuda.get_device_properties(device)
    arch = props.major * 10 + props.minor
    base = TARGETS.get(f"sm{arch}") or _nearest(arch)
    read: dict[str, Any] = {"name": f"sm{arch}", "arch": arch, "source": "device", "part": str(props.name)}
    for field_name, attr in (
        ("shared_per_block", "shared_memory_per_block_optin"),
        ("shared_per_sm", "shared_memory_per_multiprocessor"),
        ("registers_per_sm", "regs_per_multiprocessor"),
        ("threads_per_sm", "max_threads_per_multi_processor"),
        ("sm_count", "multi_processor_count"),
        ("warp_size", "warp_size"),
    ):
        value = getattr(props, attr, None)
        if isinstance(value, int) and value > 0:
            read[field_name] = value
    try:  # Triton's driver reports what Triton itself checks at launch.
        from triton.runtime import driver

        tprops = driver.active.utils.get_device_properties(device)
        read["shared_per_block"] = int(tprops["max_shared_mem"])
        read["registers_per_block"] = int(tprops["max_num_regs"])
        read["sm_count"] = int(tprops["multiprocessor_count"])
    except Exception:  # pragma: no cover - torch's figures stand
        pass
    return replace(base, **read)


def _nearest(arch: int) -> Target:
    """The table row of the closest lower architecture, for a device newer than the table."""
    rows = sorted(TARGETS.values(), key=lambda t: t.arch)
    lower = [t for t in rows if t.arch <= arch]
    return lower[-1] if lower else rows[0]
