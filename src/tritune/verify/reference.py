"""A config's outputs against a reference config's, on one call's inputs: what the decorator checks before it
serves a config nobody timed in this process (a pretuned file's entry), and the comparison that tells which configs
compute the same bits.

The call's tensor arguments are copied once, before any run (:class:`ReferenceRun`); every run, the reference's
included, starts from fresh copies of them, so a kernel that writes in place or accumulates (``reset_to_zero``)
sees the inputs the caller gave. After a run every tensor argument is compared with the reference run's (the
kernel's outputs are among them; an argument it only reads compares equal): bit for bit, and within a tolerance of
the output dtype (:func:`tolerance`: 8 units in the last place, as two configs that sum in different orders round
apart by one or two).
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.config import Config
from tritune.outcome import Status
from tritune.verify.compare import bits_dtype, compare, on_gpu

#: Runs ``config`` on the given arguments (fresh copies of the call's), the kernel's hooks included.
Launch = Callable[[Config, list[Any]], None]


def tolerance(dtype: Any) -> tuple[float, float]:
    """``(atol, rtol)`` for two configs' outputs of ``dtype``: 8 units in the last place of the dtype (2**-7 for
    float16, 2**-4 for bfloat16, 2**-3 for 8-bit floats), 1e-4 for float32 and 1e-10 for float64; exact for
    integers and booleans. Configs of one kernel differ in the order of their sums (block sizes, split-K), which
    moves a result rounded to the output dtype by one or two ulps; a wrong value (a missed block, a bad mask) is off
    by far more."""
    name = str(dtype).replace("torch.", "")
    if name == "float64":
        return 1e-10, 1e-10
    if name == "float32":
        return 1e-4, 1e-4
    if name == "float16":
        return 2.0**-7, 2.0**-7
    if name == "bfloat16":
        return 2.0**-4, 2.0**-4
    if name.startswith("float8"):
        return 2.0**-3, 2.0**-3
    return 0.0, 0.0


@dataclass(frozen=True)
class Agreement:
    """How a config's outputs compare with the reference's: ``identical`` bit for bit, ``close`` within
    :func:`tolerance`; ``reason`` says what differed (the argument, how many elements, the largest error)."""

    identical: bool
    close: bool
    reason: str | None = None
    #: The arguments whose bits differ from the reference's.
    differing: tuple[str, ...] = ()


class ReferenceRun:
    """The outputs of a reference config on one call's arguments, and other configs' against them (module
    docstring). ``launch(config, args)`` runs a config; ``names`` are the kernel's parameter names (for messages);
    ``outputs``: the names of the arguments to compare (default: every tensor argument)."""

    def __init__(self, launch: Launch, args: Sequence[Any], names: Sequence[str],
                 outputs: Collection[str] | None = None) -> None:  # fmt: skip
        self._launch = launch
        self._names = list(names)
        tensors = [i for i, a in enumerate(args) if _is_tensor(a)]
        if outputs is not None:
            tensors = [i for i in tensors if i < len(self._names) and self._names[i] in outputs]
        self._compared = tensors
        self._args = list(args)
        self._pristine = {i: args[i].detach().clone() for i in tensors}
        self._reference: dict[int, Any] | None = None
        self.config: Config | None = None

    def outputs(self, config: Config) -> dict[int, Any]:
        """Run ``config`` on fresh copies of the call's arguments; its tensors after the run, by position."""
        scratch = list(self._args)
        for i, t in self._pristine.items():
            scratch[i] = t.clone()
        self._launch(config, scratch)
        return {i: scratch[i] for i in self._compared}

    def pristine_args(self) -> list[Any]:
        """The call's arguments as they were when this run was made (its own copies of the tensors; never run on)."""
        return [self._pristine.get(i, a) for i, a in enumerate(self._args)]

    def set_reference(self, config: Config) -> None:
        """Run the reference ``config`` once; later :meth:`check` calls compare with its outputs."""
        self._reference = self.outputs(config)
        self.config = config

    def check(self, config: Config) -> Agreement:
        """``config``'s outputs against the reference's (:meth:`set_reference` first)."""
        if self._reference is None:
            raise RuntimeError("ReferenceRun.check before set_reference")
        if config == self.config:
            return Agreement(True, True)
        got = self.outputs(config)
        return agreement(got, self._reference, self._names)


def agreement(got: dict[int, Any], ref: dict[int, Any], names: Sequence[str]) -> Agreement:
    """Bit-for-bit and within-tolerance agreement of two runs' tensors, by position (:class:`Agreement`)."""
    import torch

    differing, reasons = [], []
    for i, r in ref.items():
        g = got[i]
        name = names[i] if i < len(names) else f"argument {i}"
        atol, rtol = tolerance(r.dtype)
        c = None
        if on_gpu(g) and g.shape == r.shape and g.dtype == r.dtype:
            c = compare(g, r, atol=atol, rtol=rtol, name=name)  # on a GPU its kernel tells the bits apart too
        if c is not None and c.identical is not None:
            same = c.identical
        else:
            same = g.shape == r.shape and g.dtype == r.dtype and bool(torch.equal(g, r) or _same_bits(g, r))
        if same:
            continue
        differing.append(name)
        c = c if c is not None else compare(g, r, atol=atol, rtol=rtol, name=name)
        if not c.ok:
            reasons.append(c.detail)
    return Agreement(not differing, not reasons, "; ".join(reasons) or None, tuple(differing))


def _same_bits(a: Any, b: Any) -> bool:
    """Equal bit for bit, NaNs in the same places included (``torch.equal`` says NaN differs from NaN)."""
    import torch

    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        return False
    view = bits_dtype(a)
    if view is None or a.dtype.is_complex:
        return False
    return bool(torch.equal(a.contiguous().view(view), b.contiguous().view(view)))


def _is_tensor(a: Any) -> bool:
    return hasattr(a, "clone") and hasattr(a, "dtype") and hasattr(a, "shape")


#: The share of a perturbed input's values that are zero.
_ZEROS = 0.25


def _stream_of(args: Sequence[Any]) -> Any:
    """The calling thread's current CUDA stream on the device of the first CUDA tensor in ``args``; None without."""
    for a in args:
        if _is_tensor(a) and on_gpu(a):
            import torch

            return torch.cuda.current_stream(a.device)
    return None


def _on_stream(stream: Any) -> Any:
    """A context that queues CUDA work on ``stream`` (nothing when None)."""
    if stream is None:
        return contextlib.nullcontext()
    import torch

    return torch.cuda.stream(stream)


def perturbed_inputs(args: Sequence[Any], seed: int) -> list[Any]:
    """``args`` with every floating tensor refilled, reproducibly from ``seed``: normal values at a scale that
    changes with the seed (16 for seed 1, 1/16 for seed 2, ...), a quarter of them zero. Integer and boolean tensors
    (indices, masks, counts) and everything else are kept as they are. A second and third input on which two configs
    must agree bit for bit: configs that sum in another order often agree on one input by chance, rarely on three.

    Each tensor is a fresh one of the same shape, strides and dtype on the same device, its whole storage span
    filled (so a broadcast tensor, stride 0, stays one). On a GPU the values come from tritune's own Triton kernel
    (:mod:`tritune.verify.fill`): drawn on the host and copied, a large activation's values cost seconds of a
    tuning's first call, and drawn with torch on the device, they run whatever kernels a library registered for
    torch's random ops (FlagGems' autotuned ``randn``). Elsewhere (CPU tensors) torch draws them."""
    import torch

    scale = 16.0 ** (1 if seed % 2 else -1) * (seed // 2 + 1)
    out: list[Any] = []
    for i, a in enumerate(args):
        if not (_is_tensor(a) and a.dtype.is_floating_point and a.numel()):
            out.append(a)
            continue
        fresh = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device)
        span = 1 + sum((n - 1) * st for n, st in zip(a.shape, a.stride()))
        flat = fresh.as_strided((span,), (1,))
        own_seed = (1_000_003 * seed + 7_919 * i) % (2**31 - 1)
        if on_gpu(a):
            from tritune.verify.fill import fill_normal

            fill_normal(flat, own_seed, scale, _ZEROS)
        else:
            gen = torch.Generator(device=a.device).manual_seed(own_seed)
            native = a.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.float64)
            vals = torch.randn((span,), generator=gen, device=a.device, dtype=a.dtype if native else torch.float32)
            vals.mul_(scale)
            vals[torch.rand((span,), generator=gen, device=a.device, dtype=vals.dtype) < _ZEROS] = 0.0
            flat.copy_(vals)
        out.append(fresh)
    return out


def tail_value(lo: int, value: int) -> int | None:
    """The value in ``[lo, value)`` with the most trailing one bits (``value`` rounded down to a multiple of a power of
    two, minus one): every power-of-two block leaves a different remainder there, so a block size that mishandles a
    tail shows; None when ``lo >= value``."""
    if lo >= value:
        return None
    best = value - 1
    for t in range(1, value.bit_length() + 1):
        v = (value >> t << t) - 1
        if v < lo:
            break
        best = v
    return best


def bucket_edge_inputs(args: Sequence[Any], spans: Mapping[int, tuple[int, int]],
                       names: Sequence[str]) -> list[tuple[str, list[Any]]]:  # fmt: skip
    """Inputs at the edges of the key's buckets, for configs that will serve every value of a bucket.
    ``spans``: position of a bucketed integer argument -> (its bucket's smallest value, the call's value). Two
    inputs: every such argument at its bucket's smallest value, then at :func:`tail_value`; the tensors stay the
    call's (at least as large as the smaller sizes need). Each is labelled with the sizes it sets."""
    out: list[tuple[str, list[Any]]] = []
    for pick in (lambda lo, v: lo, tail_value):
        changed = {i: pick(lo, v) for i, (lo, v) in spans.items()}
        changed = {i: x for i, x in changed.items() if x is not None and x != args[i]}
        if not changed:
            continue
        new = list(args)
        for i, x in changed.items():
            new[i] = x
        label = ", ".join(f"{names[i] if i < len(names) else i}={x}" for i, x in sorted(changed.items()))
        if all(label != seen for seen, _ in out):
            out.append((label, new))
    return out


class OutputCheck:
    """The check of candidates' outputs against a reference config's (the first legal config that runs) before they
    are timed, on the call's arguments, on two perturbed copies of them (:func:`perturbed_inputs`) and on ``edges``
    (:func:`bucket_edge_inputs`: the sizes at the edges of the key's buckets); every run is on fresh copies
    (:class:`ReferenceRun`), the caller's arguments are never written. ``launch(config, args)`` runs one config;
    ``references``: the configs that may be the reference, in order (a widened list's written configs). Where the
    inputs cannot be made (``broken``), every checked config fails except, under ``exact``, the first reference: only
    configs someone wrote serve, and the check never fails the call it serves.

    * ``exact`` (``numerics="exact"``): every candidate must compute the reference's bits; one outside the class is
      ``other_numerics``.
    * otherwise the configs in ``only`` (generated: derived from the kernel or widened from a list) must agree with
      the reference within the output dtype's tolerance; one that does not is ``incorrect`` (a block size that does
      not divide the size, a missing mask): a config nobody wrote never serves unchecked.
    """

    def __init__(self, name: str, launch: Launch, args: Sequence[Any], names: Sequence[str], *, exact: bool,
                 references: Sequence[Config], only: Collection[Config] | None = None, inputs: int = 3,
                 edges: Sequence[tuple[str, Sequence[Any]]] = ()) -> None:  # fmt: skip
        self.name = name
        self.exact = exact
        self._references = list(references)
        self._inputs = inputs
        self._where = ["the call's arguments", *(f"perturbed input {i}" for i in range(1, inputs)),
                       *(f"the bucket's sizes {label}" for label, _ in edges)]  # fmt: skip
        #: Why the inputs could not be made, if so: then only the first reference may serve (never a call's failure).
        self.broken: str | None = None
        #: Wall seconds spent making the inputs (here and in :meth:`prepare`) and in :meth:`check` (the reference's
        #: runs included, and any wait for :meth:`prepare` on another thread), for the summary.
        self.seconds = {"inputs": 0.0, "checks": 0.0}
        started = time.perf_counter()
        try:  # snapshots of the call's arguments now, before any candidate runs on them
            runs = [ReferenceRun(launch, args, names), *(ReferenceRun(launch, list(a), names) for _, a in edges)]
        except Exception as e:
            self.broken, runs = f"{type(e).__name__}: {e}", []
        self.seconds["inputs"] = time.perf_counter() - started
        self._launch, self._names = launch, list(names)
        # the stream the check's runs are queued on: the inputs made on another thread are queued there too
        self._stream = _stream_of(args)
        self._only = None if only is None else set(only)
        self.reference: Config | None = references[0] if references else None
        self._runs = runs
        self._prepared = self.broken is not None or inputs < 2
        self._prep_lock = threading.Lock()
        self._ready = False
        self.members: list[Config] = []
        self.others: dict[Config, str] = {}

    def prepare(self) -> None:
        """Make the perturbed inputs (from the snapshot of the call's arguments) and load the comparison's device
        code for the arguments' dtypes (:func:`~tritune.verify.compare.warm_compare`): the first check in a
        process otherwise waits for CUDA's lazy loading of about twenty kernels, or, where a library has replaced
        torch's ops with Triton kernels of its own (``flag_gems.enable()``), for their compiles. Run it beside a
        key's compiles (``decorator.miss``); :meth:`check` runs it, or waits for it, if it has not finished. Once."""
        with self._prep_lock:
            if self._prepared:
                return
            started = time.perf_counter()
            try:
                with _on_stream(self._stream):
                    base = self._runs[0].pristine_args()
                    made = [ReferenceRun(self._launch, perturbed_inputs(base, seed), self._names)
                            for seed in range(1, self._inputs)]  # fmt: skip
                self._runs[1:1] = made
            except Exception as e:
                self.broken = f"{type(e).__name__}: {e}"
            finally:
                self._prepared = True
                self.seconds["inputs"] += time.perf_counter() - started
            if self.broken is None:
                from tritune.verify.compare import warm_compare

                with contextlib.suppress(Exception):  # a warm-up only: the check itself says what fails
                    warm_compare(self._runs[0].pristine_args(), atol=0.0, rtol=0.0)

    def check(self, cfg: Config) -> tuple[Status, str] | None:
        """None when ``cfg`` passes (class docstring), else the status and reason to record."""
        if self._only is not None and cfg not in self._only:
            return None
        started = time.perf_counter()
        try:
            return self._check(cfg)
        finally:
            self.seconds["checks"] += time.perf_counter() - started

    def _check(self, cfg: Config) -> tuple[Status, str] | None:
        self.prepare()
        if self.broken is not None:
            if self.exact and self._references and cfg == self._references[0]:
                return None
            self.others[cfg] = f"the check's inputs could not be made ({self.broken})"
            status = Status.OTHER_NUMERICS if self.exact else Status.INCORRECT
            only = "the first written config" if self.exact else "the configs someone wrote"
            return status, f"{self.name} {cfg.id}: {self.others[cfg]}; only {only} may serve"
        if not self._ready:
            self._set_reference()
        if self.reference is None:
            self.others[cfg] = "no written config ran here to check it against"
            return Status.INCORRECT, f"{self.name} {cfg.id} (generated): {self.others[cfg]}"
        for i, r in enumerate(self._runs):
            got = r.check(cfg)
            if got.identical or (not self.exact and got.close):
                continue
            what = got.reason or f"{', '.join(got.differing)} within the output's tolerance, but not bit for bit"
            where = self._where[i]
            self.others[cfg] = f"{what} (on {where})"
            if self.exact:
                return Status.OTHER_NUMERICS, (f"{self.name} {cfg.id} computes other bits than the reference "
                                               f"{self.reference.id} on {where}: {what}")  # fmt: skip
            return Status.INCORRECT, (f"{self.name} {cfg.id} (generated) disagrees with {self.reference.id} on {where}: "
                                      f"{what}")  # fmt: skip
        self.members.append(cfg)
        return None

    def _set_reference(self) -> None:
        """The reference: the first of the references that runs here (a config whose binary this GPU refuses cannot
        be one); None when none does."""
        self._ready = True
        self.reference = None
        for cfg in self._references:
            try:
                for r in self._runs:
                    r.set_reference(cfg)
            except Exception as e:  # it cannot run here: the next legal config is the reference
                self.others[cfg] = f"cannot be the reference: {type(e).__name__}: {e}"
                continue
            self.reference = cfg
            return
        if self.exact:
            raise RuntimeError(f"{self.name}: no legal config runs here, so no config can be the numerics reference")

    def summary(self) -> dict[str, Any]:
        """For ``choices()``: the reference, the configs that passed and those left out, with what differed."""
        out = {"mode": "exact" if self.exact else "agree", "inputs": len(self._runs),
               "reference": None if self.reference is None else self.reference.id,
               "class": [c.id for c in self.members], "class_size": len(self.members),
               "other": {c.id: why for c, why in self.others.items()},
               "s": {k: round(v, 4) for k, v in self.seconds.items()}}  # fmt: skip
        if not self.exact:
            out = {**out, "passed": out.pop("class"), "checked": len(self.members) + len(self.others)}
            out.pop("class_size")
        return out
