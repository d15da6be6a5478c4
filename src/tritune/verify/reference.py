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

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.config import Config
from tritune.verify.compare import compare

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

    identical, reasons = True, []
    for i, r in ref.items():
        g = got[i]
        name = names[i] if i < len(names) else f"argument {i}"
        same = g.shape == r.shape and g.dtype == r.dtype and bool(torch.equal(g, r) or _same_bits(g, r))
        if same:
            continue
        identical = False
        atol, rtol = tolerance(r.dtype)
        c = compare(g, r, atol=atol, rtol=rtol, name=name)
        if not c.ok:
            reasons.append(c.detail)
    return Agreement(identical, not reasons, "; ".join(reasons) or None)


def _same_bits(a: Any, b: Any) -> bool:
    """Equal bit for bit, NaNs in the same places included (``torch.equal`` says NaN differs from NaN)."""
    import torch

    if not (a.dtype.is_floating_point or a.dtype.is_complex):
        return False
    itemsize = a.element_size()
    view = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(itemsize)
    if view is None or a.dtype.is_complex:
        return False
    return bool(torch.equal(a.contiguous().view(view), b.contiguous().view(view)))


def _is_tensor(a: Any) -> bool:
    return hasattr(a, "clone") and hasattr(a, "dtype") and hasattr(a, "shape")


def perturbed_inputs(args: Sequence[Any], seed: int) -> list[Any]:
    """``args`` with every floating tensor refilled, reproducibly from ``seed``: normal values at a scale that
    changes with the seed (16 for seed 1, 1/16 for seed 2, ...), a quarter of them zero. Integer and boolean tensors
    (indices, masks, counts) and everything else are kept as they are. A second and third input on which two configs
    must agree bit for bit: configs that sum in another order often agree on one input by chance, rarely on three."""
    import torch

    gen = torch.Generator(device="cpu").manual_seed(1_000_003 * seed)
    scale = 16.0 ** (1 if seed % 2 else -1) * (seed // 2 + 1)
    out: list[Any] = []
    for a in args:
        if _is_tensor(a) and a.dtype.is_floating_point and a.numel():
            vals = torch.randn(a.shape, generator=gen, dtype=torch.float32) * scale
            vals[torch.rand(a.shape, generator=gen) < 0.25] = 0.0
            fresh = torch.empty_strided(a.shape, a.stride(), dtype=a.dtype, device=a.device)
            fresh.copy_(vals)
            out.append(fresh)
        else:
            out.append(a)
    return out
