"""Read a compiled kernel's registers, local memory and static shared memory from its cubin.

Triton's ``n_regs``/``n_spills`` are filled only when a kernel is loaded on a GPU, so the screen asks
the binary itself: ``cuobjdump --dump-resource-usage`` from the CUDA tools Triton bundles. Its ``REG``
is what the driver reports as ``CU_FUNC_ATTRIBUTE_NUM_REGS`` and its ``LOCAL`` what it reports as
``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES`` (Triton's ``n_spills`` is that number divided by 4).
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

_FUNC = re.compile(r"^\s*Function\s+(\S+?):?\s*$")
_FIELD = re.compile(r"\b(REG|STACK|SHARED|LOCAL):(\d+)")


@dataclass(frozen=True)
class BinaryResources:
    """Per-thread registers, per-thread local memory (spills) and static shared memory of one kernel."""

    registers: int
    local_bytes: int
    static_shared: int
    stack: int


def cuobjdump_path() -> str:
    """The ``cuobjdump`` Triton bundles (or the one ``TRITON_CUOBJDUMP_PATH`` names)."""
    from triton import knobs

    return str(knobs.nvidia.cuobjdump.path)


def parse_resource_usage(text: str, kernel_name: str) -> BinaryResources:
    """Parse ``cuobjdump --dump-resource-usage`` output for the function named ``kernel_name``."""
    current: str | None = None
    found: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        m = _FUNC.match(line)
        if m:
            current = m.group(1)
            continue
        if current is not None and "REG:" in line:
            found[current] = {k: int(v) for k, v in _FIELD.findall(line)}
            current = None
    fields = found.get(kernel_name)
    if fields is None and len(found) == 1:
        fields = next(iter(found.values()))
    if fields is None:
        raise ValueError(
            f"cuobjdump lists no resource usage for {kernel_name!r} (functions: {', '.join(found) or 'none'})"
        )
    return BinaryResources(
        registers=fields.get("REG", 0),
        # The driver's CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES (Triton's n_spills * 4) is the stack frame, where
        # spills live; cuobjdump reports it as STACK with LOCAL often 0 (seen on the H200: STACK 720, LOCAL 0).
        local_bytes=max(fields.get("LOCAL", 0), fields.get("STACK", 0)),
        static_shared=fields.get("SHARED", 0),
        stack=fields.get("STACK", 0),
    )


def read_cubin(cubin: bytes, kernel_name: str, timeout: float = 60.0) -> BinaryResources:
    """Run ``cuobjdump --dump-resource-usage`` on ``cubin`` and parse the line for ``kernel_name``."""
    fd, path = tempfile.mkstemp(suffix=".cubin", prefix="tritune-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(cubin)
        proc = subprocess.run(
            [cuobjdump_path(), "--dump-resource-usage", path],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise RuntimeError(f"cuobjdump failed ({proc.returncode}): {proc.stderr.strip()}")
    return parse_resource_usage(proc.stdout, kernel_name)
