"""``verify``: run every candidate of a workload for every key and check it, with no timing at all.

On a GPU the kernel runs there; without one it runs in Triton's CPU interpreter. Each candidate is
first checked for legality (static rules, then the compiler front end for the target), its inputs are
restored and its outputs poisoned before it runs, and its outputs are compared with the oracle.
Correct candidates of one key are then grouped by the exact bytes of their outputs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Hashable, Iterator, Mapping, Sequence
from typing import Any, Protocol

from tritune.adapters.interpreter import as_interpreted
from tritune.adapters.kernel import as_jit
from tritune.config import Config
from tritune.device import gpu_unavailable_reason, interpreter_on
from tritune.errors import KernelSpecError, WorkloadError
from tritune.outcome import Status
from tritune.progress import Laps
from tritune.results import CandidateResult, RunResult, WorkloadResult
from tritune.screen.compile_errors import compile_error_words
from tritune.screen.specialize import cuda_target, frontend_rejection
from tritune.space import check_static
from tritune.verify.agreement import AgreementGroups, label
from tritune.verify.compare import compare, digest, poison, still_poisoned
from tritune.workload import Workload, output_tensor

NO_TIMING = "no timing: verify checks correctness only and never times a candidate"


class Pace(Protocol):
    """Told where a check is (:class:`tritune.verify.estimate.RunClock`): each key's start, then each candidate."""

    def start(self, workload: str, key: Mapping[str, Any], total: int) -> None: ...

    def step(self, done: int) -> None: ...


class VerifyReport(RunResult):
    """The result of :func:`verify`: a :class:`RunResult` with ``ok`` and ``failures`` for assertions.

    >>> report = tritune.verify(my_workload)   # doctest: +SKIP
    >>> assert report.ok, report.summary()
    """

    @property
    def failures(self) -> list[tuple[WorkloadResult, CandidateResult]]:
        """Candidates not correct, and with no oracle every candidate of a key whose candidates disagree."""
        out = []
        for w in self.workloads:
            split = len(w.extra.get("agreement_groups") or ()) > 1
            for c in w.candidates:
                if c.status is Status.CORRECT or (c.status is Status.COMPARED and not split):
                    continue
                out.append((w, c))
        return out

    @property
    def ok(self) -> bool:
        return not self.failures

    def passes(self, *, allow_illegal: bool = False) -> bool:
        """``ok``; with ``allow_illegal``, also when every failure is a candidate found ``illegal`` before it ran
        (a config the static rules or the compiler reject), as a space with known-bad configs expects."""
        return all(allow_illegal and c.status is Status.ILLEGAL for _, c in self.failures)

    def summary(self) -> str:
        lines = []
        for w, c in self.failures:
            lines.append(f"{w.name} {w.key} {c.config.id}: {c.status.value}: {c.reason}")
        return "\n".join(lines) if lines else "every candidate is correct"




@contextlib.contextmanager
def _quiet_numpy() -> Iterator[None]:
    # The interpreter runs kernels through numpy; masked-off lanes may overflow harmlessly.
    import numpy as np

    with np.errstate(all="ignore"):
        yield


def clone_arg(a: Any) -> Any:
    """A copy of one kernel argument whose tensor ``check_candidate`` can restore from: a tensor's clone; a tensor
    descriptor's copy around a clone of its ``base``; anything else as it is."""
    import copy

    import torch

    if isinstance(a, torch.Tensor):
        return a.clone()
    base = output_tensor(a)
    if base is not a:
        dup = copy.copy(a)
        dup.base = base.clone()
        return dup
    return a


def verify_key(
    workload: Workload,
    key: Mapping[str, Any],
    *,
    device: str,
    target: Any,
    configs: Sequence[Config] | None = None,
    progress: Any = None,
    seed: int = 0,
    pace: Pace | None = None,
) -> WorkloadResult:
    """Verify every candidate of ``workload`` at one ``key``; ``pace`` is told the key's start and each candidate
    (it may stop the run by raising)."""
    import torch

    on_cpu = device == "cpu"
    torch.manual_seed(seed)
    args = workload.make_args(key, device)
    pristine = [clone_arg(a) for a in args]
    caller_kw = workload.caller_kwargs(key)
    expected = workload.expected_outputs([clone_arg(a) for a in pristine])
    runner = as_interpreted(workload.kernel) if on_cpu else as_jit(workload.kernel)
    aliased = _aliased_outputs(args, workload.outputs)
    results: list[CandidateResult] = []
    digests: dict[str, list[str]] = {}
    agreement = AgreementGroups(workload.atol, workload.rtol) if expected is None else None
    kname = workload.info.name
    #: On the CPU, the run of each group of configs the interpreter runs alike: its result, its outputs' digest
    #: and (without an oracle) a copy of its outputs for the agreement groups.
    ran: dict[Hashable, tuple[CandidateResult, str | None, list[Any] | None]] = {}
    cands = list(configs) if configs is not None else workload.candidates()
    if pace is not None:
        pace.start(workload.name, key, len(cands))
    for cfg in cands:
        group = interpreted_alike(workload, cfg, key) if on_cpu else None
        res = legality_failure(workload, cfg, args, caller_kw, target) if target is not None else None
        dig: str | None = None
        outs: list[Any] | None = None
        if res is None and group in ran:
            first, dig, outs = ran[group]
            res = ran_alike(first, cfg)
        elif res is None:
            res = check_candidate(workload, key, cfg, args, pristine, caller_kw, expected, runner, on_cpu, aliased)
            if res.status in (Status.CORRECT, Status.COMPARED):
                outs = workload.output_tensors(args)
                dig = digest(outs)
                if agreement is not None and group is not None:  # kept for the configs that share this run
                    outs = [o.clone() for o in outs]
            if group is not None:
                ran[group] = (res, dig, outs)
        if outs is not None and dig is not None:  # a correct (or, without an oracle, compared) run
            if agreement is not None:
                agreement.add(cfg.id, outs)
            digests.setdefault(dig, []).append(cfg.id)
        results.append(res)
        if progress is not None:
            progress.step(f"{kname} {_key_str(key)} {cfg.id}", res.status.value, res.reason or "")
        if pace is not None:
            pace.step(len(results))
    groups = list(digests.values())
    extra: dict[str, Any] = {
        "bitwise_identical": (len(groups) == 1) if groups else None,
        "groups": groups,
        "reference": "oracle" if expected is not None else None,
    }
    if agreement is not None:
        results = label(results, agreement)
        extra["oracle"] = False
        extra["agreement_groups"] = agreement.members
    return WorkloadResult(workload.name, dict(key), results, extra)


def check_candidate(
    workload: Workload,
    key: Mapping[str, Any],
    cfg: Config,
    args: list[Any],
    pristine: list[Any],
    caller_kw: dict[str, Any],
    expected: list[Any] | None,
    runner: Any,
    on_cpu: bool,
    aliased: frozenset[int] | None = None,
    *,
    target: Any = None,
    parts: dict[str, float] | None = None,
) -> CandidateResult:
    """The one correctness check of ``verify`` and ``tune``: restore the inputs, poison the outputs that alias
    no input, launch ``cfg`` once and compare its outputs with ``expected``, the oracle's.

    ``correct``, ``incorrect`` or ``error`` (the launch raised), with ``max_abs_error`` and ``unwritten``.
    With no oracle (``expected`` None): ``incorrect`` when an output was left unwritten, else ``compared``.
    Given a ``target`` (``verify`` passes one; ``tune`` has screened its candidates already), ``cfg`` is first
    checked for legality: the static rules, then the compiler front end for that target (``illegal``, or
    ``error`` when the kernel's spec is at fault).
    ``parts``: the seconds of each step are added there: ``check_restore_s`` (inputs restored, outputs
    poisoned), ``check_run_s`` (the launch and the wait for the device), ``check_compare_s`` (the comparison with
    the oracle). On an H200 a check of a 6144^3 matmul candidate cost 22 ms, unattributed without them.
    """
    import torch

    step = Laps(parts)

    kname = workload.info.name
    if target is not None:
        rejected = legality_failure(workload, cfg, args, caller_kw, target)
        if rejected is not None:
            return rejected
    if aliased is None:
        aliased = _aliased_outputs(args, workload.outputs)
    for a, p in zip(args, pristine):
        t = output_tensor(a)  # a tensor, or a descriptor's base
        if isinstance(t, torch.Tensor):
            t.copy_(output_tensor(p))
    for i in workload.outputs:
        if i not in aliased:
            poison(output_tensor(args[i]))
    step("check_restore_s")
    try:
        grid = workload.grid_for(cfg, key)
        run_args, run_kw = workload.hooked(cfg, args, caller_kw)
    except WorkloadError as e:
        return _unrun(cfg, Status.ERROR, str(e))
    try:
        with _quiet_numpy():
            runner[grid](*run_args, **run_kw, **cfg.kwargs, **cfg.launch_options())
        if not on_cpu:
            torch.cuda.synchronize()
    except Exception as e:
        where = (
            " under Triton's CPU interpreter, which cannot run every kernel that compiles: this says nothing "
            "about the kernel on a GPU"
            if on_cpu
            else " on the GPU"
        )
        msg = compile_error_words(e)
        return _unrun(cfg, Status.ERROR, f"{kname} raised {type(e).__name__} while running {cfg.id}{where}: {msg}")
    step("check_run_s")
    outs = workload.output_tensors(args)
    if expected is None:
        return _check_written(kname, cfg, workload.outputs, outs)
    worst = 0.0
    unwritten = 0
    reasons = []
    for pos, (i, out) in enumerate(zip(workload.outputs, outs)):
        cmp = compare(out, expected[pos], atol=workload.atol, rtol=workload.rtol, name=f"args[{i}]")
        worst = max(worst, cmp.max_abs_error)
        unwritten += cmp.unwritten
        if not cmp.ok:
            reasons.append(cmp.detail)
    extra = {"max_abs_error": worst, "unwritten": unwritten}
    step("check_compare_s")
    if reasons:
        return CandidateResult(cfg, Status.INCORRECT, f"{kname} {cfg.id} vs the oracle: " + "; ".join(reasons), extra)
    return CandidateResult(cfg, Status.CORRECT, None, extra)


def legality_failure(
    workload: Workload, cfg: Config, args: Sequence[Any], caller_kw: Mapping[str, Any], target: Any
) -> CandidateResult | None:
    """``cfg``'s legality for ``target``, checked before it runs: the static rules, then the compiler front end.
    ``None`` when it is legal; else the ``illegal`` result (``error`` when the kernel's spec is at fault)."""
    rej = check_static(cfg, workload.info, caller_kw, workload.space)
    if rej is not None:
        return _unrun(cfg, Status.ILLEGAL, rej.reason)
    try:
        h_args, h_kw = workload.hooked(cfg, args, caller_kw)
        why = frontend_rejection(workload.kernel, h_args, cfg, target, h_kw)
    except KernelSpecError as e:
        return _unrun(cfg, Status.ERROR, str(e))
    if why is not None:
        return _unrun(cfg, Status.ILLEGAL, why)
    return None


#: The launch options Triton's interpreter drops before it runs a kernel (unless the kernel takes one by name).
LAUNCH_OPTIONS = frozenset({"num_warps", "num_stages", "num_ctas", "maxnreg"})


def interpreted_alike(workload: Workload, cfg: Config, key: Mapping[str, Any]) -> Hashable | None:
    """What decides ``cfg``'s run in Triton's CPU interpreter: its meta-parameters and its grid. The interpreter
    runs every program of the grid in turn and drops the launch options (``num_warps``, ``num_stages``...), so
    configs that differ only in those compute the same bytes, and one run answers for all of them.

    ``None`` (run it on its own) when a pre-hook could see the launch options, when the kernel takes one of
    them as an argument, or when the grid cannot be computed."""
    if workload.pre_hook is not None or cfg.pre_hook is not None:
        return None
    if LAUNCH_OPTIONS & set(workload.info.arg_names):
        return None
    try:
        grid = workload.grid_for(cfg, key)
        return (tuple(sorted((k, repr(v)) for k, v in cfg.kwargs.items())), grid)
    except WorkloadError:
        return None


def ran_alike(first: CandidateResult, cfg: Config) -> CandidateResult:
    """``first``'s result as ``cfg``'s, whose run in the interpreter is the same (:func:`interpreted_alike`)."""
    reason = first.reason.replace(first.config.id, cfg.id) if first.reason else first.reason
    return CandidateResult(cfg, first.status, reason, {**first.extra, "interpreted_as": first.config.id})


def _unrun(cfg: Config, status: Status, reason: str) -> CandidateResult:
    """A candidate whose outputs were never compared: no error to report and no count of unwritten elements."""
    return CandidateResult(cfg, status, reason, {"max_abs_error": None, "unwritten": None})


def _check_written(kname: str, cfg: Config, positions: Sequence[int], outs: Sequence[Any]) -> CandidateResult:
    """No oracle: an output left (partly) unwritten is incorrect; otherwise the candidate is ``compared``."""
    unwritten = 0
    reasons = []
    for i, out in zip(positions, outs):
        n = still_poisoned(out)
        unwritten += n
        if n:
            reasons.append(f"{n} of {out.numel()} elements of args[{i}] were never written (still poisoned)")
    extra = {"max_abs_error": None, "unwritten": unwritten}
    if reasons:
        return CandidateResult(cfg, Status.INCORRECT, f"{kname} {cfg.id}: " + "; ".join(reasons), extra)
    return CandidateResult(cfg, Status.COMPARED, None, extra)


def _aliased_outputs(args: Sequence[Any], outputs: Sequence[int]) -> frozenset[int]:
    """Outputs that share memory with an input: written in place, so they cannot be poisoned."""
    import torch

    out: set[int] = set()
    args = [output_tensor(a) for a in args]  # a tensor descriptor's base
    for i in outputs:
        o = args[i]
        for j, a in enumerate(args):
            if j in outputs or not isinstance(a, torch.Tensor) or not isinstance(o, torch.Tensor):
                continue
            if a.untyped_storage().data_ptr() == o.untyped_storage().data_ptr():
                out.add(i)
    return frozenset(out)


def _key_str(key: Mapping[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in key.items())


def _no_gpu_reason() -> str | None:
    """Why there is no GPU; when the CLI itself turned the interpreter on, its reason, not "TRITON_INTERPRET=1"."""
    import os

    why = gpu_unavailable_reason()
    if why is not None and interpreter_on():
        return os.environ.get("TRITUNE_INTERPRET_REASON") or why
    return why


def verify(
    workload: Workload | Sequence[Workload],
    *,
    keys: Sequence[Mapping[str, Any]] | None = None,
    target: Any = None,
    progress: Any = None,
    seed: int = 0,
    pace: Pace | None = None,
) -> VerifyReport:
    """Check every candidate of one or more workloads for every key; no timing is ever done.

    Runs on the GPU when one is usable, else in Triton's CPU interpreter. ``target`` (a GPUTarget) is
    what the legality check compiles for: the current GPU's, or sm_90 without one. ``pace``
    (:class:`tritune.verify.estimate.RunClock`) may stop a run that is slower than its caller allows.
    """
    workloads = [workload] if isinstance(workload, Workload) else list(workload)
    why_no_gpu = _no_gpu_reason()
    device = "cpu" if why_no_gpu else "cuda"
    if target is None:
        from tritune.device import current_target

        target = current_target() if not why_no_gpu else cuda_target(90)
    entries: list[WorkloadResult] = []
    for w in workloads:
        use_keys = list(keys) if keys is not None else list(w.keys)
        if not use_keys:
            raise KernelSpecError(f"workload {w.name!r} has no keys to verify; give it keys=[{{...}}]")
        cands = w.candidates()
        if progress is not None:
            progress.stage(f"verifying {w.name}", len(cands) * len(use_keys))
        for key in use_keys:
            entries.append(verify_key(w, key, device=device, target=target, configs=cands, progress=progress, seed=seed,
                                      pace=pace))  # fmt: skip
    if why_no_gpu:
        timing = f"{NO_TIMING}. No GPU here ({why_no_gpu}): every candidate ran in Triton's CPU interpreter."
        shared = sum("interpreted_as" in c.extra for e in entries for c in e.candidates)
        if shared:
            timing += (f" The interpreter ignores launch options ({', '.join(sorted(LAUNCH_OPTIONS))}): {shared} "
                       "candidates that differ from another only in those were not run again and share its "
                       "result.")  # fmt: skip
    else:
        timing = f"{NO_TIMING}. Candidates ran on the GPU, untimed."
    prov = {"device": device, "target": f"{getattr(target, 'backend', '')}:{getattr(target, 'arch', '')}"}
    return VerifyReport("verify", timing, entries, provenance=prov)
