"""Screen one candidate: static rules, then Triton's own compile, stopped after LLVM IR when shared memory is over.

The compile is ``triton.compile`` itself (:meth:`Specialization.compile`), so a candidate that fits leaves
in Triton's on-disk cache exactly the binary the JIT loads at launch, under the JIT's cache key. Shared
memory is known once the ``llir`` stage has run; a gate put into Triton's stage list through its
``add_stages_inspection_hook`` knob stops the compile there when the block cannot launch, so such a
config never pays for ``ptxas``. The gate adds nothing to the cache key (Triton 3.9 appends the hook's
key, and the gate's key is empty; Triton 3.6 does not consult it), so the survivors' hashes are the JIT's.
"""

from __future__ import annotations

import contextlib
import io
import threading
import time
import warnings
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from tritune.adapters.interpreter import compiler_language
from tritune.config import Config
from tritune.outcome import Status
from tritune.results import CandidateResult
from tritune.screen.binary import read_cubin
from tritune.screen.occupancy import Resources, occupancy, violations, warnings_for
from tritune.screen.specialize import Specialization, compile_error_reason, specialize
from tritune.screen.targets import Target
from tritune.space import check_static

#: The resource fields every screened candidate carries in ``extra`` (None where not known).
FIELDS = (
    "shared",
    "static_shared",
    "registers",
    "spilled_bytes",
    "threads",
    "blocks_per_sm",
    "limiter",
    "compile_s",
    "warnings",
)


class _OverLimit(Exception):
    """Raised inside Triton's pipeline by the gate: the block cannot launch, stop before ptxas."""

    def __init__(self, shared: int, tensor_memory: int | None) -> None:
        super().__init__(f"shared={shared}")
        self.shared = shared
        self.tensor_memory = tensor_memory


class _LaunchGate:
    """Triton stage hook: after ``llir``, raise :class:`_OverLimit` when shared or tensor memory is over."""

    def __init__(self, target: Target) -> None:
        self.target = target

    def __call__(self, *hook_args: Any) -> Any:
        if not hook_args:  # triton.compile asks for a cache-key suffix: none, so the key stays the JIT's
            return "", ""
        _backend, stages, *_rest = hook_args
        llir = stages.get("llir")
        if llir is None:  # pragma: no cover - every NVIDIA pipeline from 3.6 on has this stage
            return None
        target = self.target

        def gated(src: Any, metadata: dict[str, Any]) -> Any:
            out = llir(src, metadata)
            shared = int(metadata.get("shared", 0) or 0)
            tmem = metadata.get("tmem_size")
            over_tmem = (
                tmem is not None
                and target.tensor_memory_columns is not None
                and int(tmem) > target.tensor_memory_columns
            )
            if shared > target.shared_per_block or over_tmem:
                raise _OverLimit(shared, int(tmem) if tmem is not None else None)
            return out

        stages["llir"] = gated
        return None


_HOOK_LOCK = threading.Lock()


@contextlib.contextmanager
def launch_gate(target: Target) -> Iterator[None]:
    """Install :class:`_LaunchGate` as Triton's stage hook for the duration of one compile."""
    from triton import knobs

    with _HOOK_LOCK:
        before = knobs.runtime.add_stages_inspection_hook
        knobs.runtime.add_stages_inspection_hook = _LaunchGate(target)
        try:
            yield
        finally:
            knobs.runtime.add_stages_inspection_hook = before


@contextlib.contextmanager
def quiet_triton() -> Iterator[None]:
    """Silence Triton 3.9's notice about TRITON_DEFAULT_FP_FUSION, which says nothing about a config."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*TRITON_DEFAULT_FP_FUSION.*")
        yield


def _result(config: Config, status: Status, reason: str | None, **fields: Any) -> CandidateResult:
    extra: dict[str, Any] = dict.fromkeys(FIELDS)
    extra["warnings"] = []
    extra.update(fields)
    return CandidateResult(config, status, reason, extra)


def screen_spec(spec: Specialization, config: Config, target: Target, gate: bool = True) -> CandidateResult:
    """Compile one specialized candidate for ``target`` and judge it against the target's limits.

    This compiles in the calling process, with no timeout: :func:`tritune.screen.screen` runs it on the
    worker service, where a compile past its timeout is killed with its ptxas.

    ``gate=False`` runs ptxas even for a block that cannot launch (the verdict is the same; the GPU
    proof script uses it so that every binary is in Triton's cache before it launches them).
    """
    from triton.compiler.errors import CompilationError

    threads = config.num_warps * target.warp_size
    name = spec.kernel_name
    t0 = time.perf_counter()
    try:
        # Triton prints a failing ptxas's whole PTX to stdout; the reason below carries the error instead.
        gate_cm = launch_gate(target) if gate else contextlib.nullcontext()
        with quiet_triton(), compiler_language(), gate_cm:
            with contextlib.redirect_stdout(io.StringIO()):
                kernel = spec.compile()
    except _OverLimit as e:
        res = Resources(threads=threads, shared=e.shared, tensor_memory=e.tensor_memory)
        broken = violations(res, target)
        return _result(
            config,
            Status.ILLEGAL,
            f"{name} {config.id}: {broken[0].reason}",
            rule=broken[0].rule,
            shared=e.shared,
            threads=threads,
            blocks_per_sm=0,
            limiter=broken[0].rule,
            compile_s=round(time.perf_counter() - t0, 3),
            stage="llir",
        )
    except CompilationError as e:
        return _result(
            config,
            Status.ILLEGAL,
            f"{name} does not compile with {config.id}: {compile_error_reason(e)}",
            rule="frontend",
            threads=threads,
            compile_s=round(time.perf_counter() - t0, 3),
            stage="frontend",
        )
    except Exception as e:
        elapsed = round(time.perf_counter() - t0, 3)
        return _result(
            config,
            Status.COMPILE_FAILED,
            f"{name} {config.id}: {compile_error_reason(e)}",
            threads=threads,
            compile_s=elapsed,
        )
    compile_s = round(time.perf_counter() - t0, 3)
    return judge_kernel(kernel, config, target, compile_s)


def judge_kernel(kernel: Any, config: Config, target: Target, compile_s: float) -> CandidateResult:
    """The verdict for a kernel that compiled: resources from its metadata and its cubin."""
    meta = kernel.metadata
    name = str(meta.name)
    threads = int(meta.num_warps) * target.warp_size
    try:
        binres = read_cubin(kernel.asm["cubin"], name)
    except Exception as e:
        return _result(
            config,
            Status.COMPILE_FAILED,
            f"{name} {config.id}: compiled, but its binary could not be read: {e}",
            threads=threads,
            compile_s=compile_s,
            hash=kernel.hash,
        )
    tmem = getattr(meta, "tmem_size", None)
    res = Resources(
        threads=threads,
        shared=int(meta.shared),
        # cuobjdump's SHARED counts the 1 KB the driver reserves per block on sm_80+; the loaded function's
        # static shared memory (CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES) does not (H200: 1024 vs 0).
        static_shared=max(0, binres.static_shared - target.shared_reserved_per_block),
        registers=binres.registers,
        spilled_bytes=binres.local_bytes,
        tensor_memory=int(tmem) if tmem else None,
    )
    occ = occupancy(res, target)
    broken = violations(res, target)
    fields: dict[str, Any] = {
        "shared": res.shared,
        "static_shared": res.static_shared,
        "registers": res.registers,
        "spilled_bytes": res.spilled_bytes,
        "threads": threads,
        "blocks_per_sm": occ.blocks_per_sm,
        "limiter": occ.limiter,
        "compile_s": compile_s,
        "warnings": warnings_for(res, target),
        "n_spills": binres.local_bytes // 4,
        "hash": kernel.hash,
        "stage": "cubin",
    }
    if broken:
        return _result(
            config, Status.ILLEGAL, f"{name} {config.id}: {broken[0].reason}", rule=broken[0].rule, **fields
        )
    return _result(config, Status.FITS, None, **fields)


def screen_candidate(
    workload: Any,
    key: Mapping[str, Any],
    args: Sequence[Any],
    config: Config,
    target: Target,
    gate: bool = True,
) -> CandidateResult:
    """Static rules, then :func:`screen_spec`. ``args`` are ``workload``'s arguments for ``key`` (CPU is fine).

    Raises :class:`tritune.errors.KernelSpecError` when the kernel cannot be built for any config
    (its signature does not take the arguments, or an argument's type cannot be inferred).
    """
    caller_kwargs = workload.caller_kwargs(key)
    rejection = check_static(config, workload.info, caller_kwargs, workload.space)
    if rejection is not None:
        return _result(
            config,
            Status.ILLEGAL,
            rejection.reason,
            rule=f"static:{rejection.rule}",
            threads=config.num_warps * target.warp_size,
            stage="static",
        )
    h_args, h_kw = workload.hooked(config, args, caller_kwargs)
    with quiet_triton():
        spec = specialize(workload.kernel, h_args, config, target.gpu_target(), h_kw)
    return screen_spec(spec, config, target, gate)
