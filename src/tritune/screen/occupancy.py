"""Does a compiled kernel launch on a target, and how many of its blocks fit on one SM?

The arithmetic follows the CUDA Occupancy Calculator (``cuda_occupancy.h``): registers are allocated per
warp in units of ``Target.register_unit`` across ``Target.warp_partitions`` sub-partitions, shared memory
per block in units of ``Target.shared_unit`` after adding the per-block reservation, and the block count
is the least of the warp, register, shared-memory and resident-block limits. The launch checks are the
ones the driver and Triton make when a kernel is loaded (Triton's ``OutOfResources``).
"""

from __future__ import annotations

from dataclasses import dataclass

from tritune.screen.targets import Target

#: Limiter names, in the order a tie is reported: the hard caps first, since relieving another
#: resource would not add a block while a cap binds too.
LIMITERS = ("blocks", "threads", "registers", "shared_memory")


def round_up(value: int, unit: int) -> int:
    return -(-value // unit) * unit


@dataclass(frozen=True)
class Resources:
    """What one compiled kernel needs per block: read from the compiler's metadata and the binary."""

    threads: int  #: threads per block (num_warps x warp size)
    shared: int  #: bytes of dynamic shared memory per block: Triton's ``metadata.shared``
    registers: int | None = None  #: registers per thread, from the binary; None before ptxas ran
    spilled_bytes: int | None = None  #: local memory per thread in bytes (spills), from the binary
    tensor_memory: int | None = None  #: tensor-memory columns (sm_100), None where not used
    static_shared: int = 0  #: bytes of static shared memory of the loaded function (without the reserved 1 KB)

    @property
    def shared_total(self) -> int:
        """Dynamic plus static shared memory: what the driver checks against the per-block limit."""
        return self.shared + self.static_shared


@dataclass(frozen=True)
class Violation:
    """One broken launch limit: ``rule`` is a machine name, ``reason`` the sentence for people."""

    rule: str
    reason: str


@dataclass(frozen=True)
class Occupancy:
    """Blocks of one kernel that fit on one SM under each limit, the least of them, and which limit that is."""

    blocks_per_sm: int
    limiter: str
    by_threads: int
    by_registers: int | None
    by_shared: int
    by_blocks: int


def register_limited_threads(registers: int, target: Target) -> int:
    """The most threads per block a kernel with ``registers`` per thread can launch with (the driver's figure)."""
    if registers <= 0:
        return target.threads_per_block
    per_warp = round_up(registers * target.warp_size, target.register_unit)
    warps = target.registers_per_block // per_warp
    warps -= warps % target.warp_partitions  # allocations cover all sub-partitions at once
    return min(target.threads_per_block, warps * target.warp_size)


def violations(res: Resources, target: Target) -> list[Violation]:
    """Every launch limit ``res`` breaks on ``target``; empty when the kernel launches."""
    out: list[Violation] = []
    if res.shared_total > target.shared_per_block:
        plus = f" plus {res.static_shared} B static" if res.static_shared else ""
        out.append(
            Violation(
                "shared_memory",
                f"needs {res.shared} B of shared memory{plus}; {target.sm} allows {target.shared_per_block} B per block",
            )
        )
    if res.threads > target.threads_per_block:
        out.append(
            Violation(
                "threads",
                f"needs {res.threads} threads per block; {target.sm} allows {target.threads_per_block}",
            )
        )
    if res.registers is not None:
        if res.registers > target.registers_per_thread:
            out.append(
                Violation(
                    "registers",
                    f"needs {res.registers} registers per thread; {target.sm} allows {target.registers_per_thread}",
                )
            )
        else:
            limit = register_limited_threads(res.registers, target)
            if res.threads > limit:
                needed = round_up(res.registers * target.warp_size, target.register_unit) * round_up(
                    -(-res.threads // target.warp_size), target.warp_partitions
                )
                out.append(
                    Violation(
                        "registers",
                        f"needs {needed} registers per block ({res.registers} per thread x {res.threads} threads); "
                        f"{target.sm} allows {target.registers_per_block} per block",
                    )
                )
    if (
        res.tensor_memory is not None
        and target.tensor_memory_columns is not None
        and res.tensor_memory > target.tensor_memory_columns
    ):
        out.append(
            Violation(
                "tensor_memory",
                f"needs {res.tensor_memory} columns of tensor memory; {target.sm} allows "
                f"{target.tensor_memory_columns}",
            )
        )
    return out


def occupancy(res: Resources, target: Target) -> Occupancy:
    """Resident blocks per SM for a kernel that launches (0 with the broken limit named when it does not)."""
    warps = -(-res.threads // target.warp_size)
    by_threads = target.warps_per_sm // warps if warps else target.blocks_per_sm
    by_registers: int | None = None
    if res.registers is not None and res.registers > 0:
        per_warp = round_up(res.registers * target.warp_size, target.register_unit)
        # Registers are allocated per warp; a block's warps need not fill every sub-partition
        # (H200: a 1-warp block of 48 registers/thread runs 32 blocks per SM, not 10).
        warps_alloc = warps
        if per_warp * warps_alloc > target.registers_per_block:
            by_registers = 0
        else:
            per_partition = (target.registers_per_sm // target.warp_partitions) // per_warp
            by_registers = (per_partition * target.warp_partitions) // warps_alloc
    smem = round_up(res.shared_total + target.shared_reserved_per_block, target.shared_unit)
    by_shared = target.shared_per_sm // smem if res.shared_total <= target.shared_per_block else 0
    by_blocks = target.blocks_per_sm
    limits = {
        "shared_memory": by_shared,
        "registers": by_registers if by_registers is not None else by_blocks + 1,
        "threads": by_threads,
        "blocks": by_blocks,
    }
    best = min(limits.values())
    limiter = next(name for name in LIMITERS if limits[name] == best)
    broken = violations(res, target)
    if broken:
        return Occupancy(0, broken[0].rule, by_threads, by_registers, by_shared, by_blocks)
    return Occupancy(best, limiter, by_threads, by_registers, by_shared, by_blocks)


def warnings_for(res: Resources, target: Target) -> list[str]:
    """Things that do not stop a launch but cost speed: spills."""
    out: list[str] = []
    if res.spilled_bytes:
        out.append(
            f"spills: {res.spilled_bytes} B of local memory per thread ({res.registers} registers); "
            "slower, but it launches"
        )
    return out
