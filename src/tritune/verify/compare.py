"""Comparing outputs: poison before a run, count what stayed unwritten, compare in chunks, group bit-identical."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_CHUNK = 1 << 22  # elements per comparison chunk: bounded temporary memory on large outputs


def poison(t: Any) -> None:
    """Fill ``t`` with a value no correct kernel writes by accident: NaN for floats, a sentinel for ints."""
    import torch

    if t.dtype.is_floating_point or t.dtype.is_complex:
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    else:
        t.fill_(sentinel(t.dtype))


def still_poisoned(t: Any) -> int:
    """How many elements of ``t`` still hold the poison (NaN, or the integer sentinel): never written.

    With no oracle this is all tritune can tell about unwritten elements, so a kernel that legitimately
    writes NaN needs an oracle (where NaN expected counts as written).
    """
    import torch

    if t.dtype == torch.bool:
        return 0
    if t.dtype.is_floating_point or t.dtype.is_complex:
        return int(torch.isnan(t).sum())
    return int((t == sentinel(t.dtype)).sum())


def sentinel(dtype: Any) -> int:
    import torch

    return int(torch.iinfo(dtype).min) if dtype.is_signed else int(torch.iinfo(dtype).max)


@dataclass(frozen=True)
class Comparison:
    """How one output compares with its expected value."""

    ok: bool
    max_abs_error: float
    unwritten: int
    mismatched: int
    first_bad_index: int | None
    detail: str

    @property
    def reason(self) -> str | None:
        return None if self.ok else self.detail


def compare(out: Any, expected: Any, *, atol: float, rtol: float, name: str = "output") -> Comparison:
    """Compare ``out`` with ``expected`` within ``atol + rtol*|expected|``, counting still-poisoned elements.

    An element is *unwritten* when it still holds the poison while the expected value is not the poison.
    NaN where NaN is expected counts as equal. Large tensors are compared chunk by chunk.
    """
    import torch

    expected = torch.as_tensor(expected).to(out.device)
    if tuple(out.shape) != tuple(expected.shape):
        return Comparison(False, float("inf"), 0, out.numel(), None,
                          f"{name} has shape {tuple(out.shape)}, the oracle gave {tuple(expected.shape)}")
    flat_o, flat_e = out.reshape(-1), expected.reshape(-1)
    floating = out.dtype.is_floating_point
    unwritten = mismatched = 0
    max_err = 0.0
    first_bad: int | None = None
    for start in range(0, flat_o.numel(), _CHUNK):
        o = flat_o[start : start + _CHUNK]
        e = flat_e[start : start + _CHUNK].to(o.dtype) if not floating else flat_e[start : start + _CHUNK]
        if floating:
            o64, e64 = o.double(), e.double()
            both_nan = torch.isnan(o64) & torch.isnan(e64)
            unw = torch.isnan(o64) & ~torch.isnan(e64)
            err = (o64 - e64).abs()
            err = torch.where(both_nan, torch.zeros_like(err), err)
            bad = (err > atol + rtol * e64.abs()) | unw | (torch.isnan(err) & ~both_nan)
            finite = err[~unw & ~torch.isnan(err)]
            if finite.numel():
                max_err = max(max_err, float(finite.max()))
        else:
            if out.dtype == torch.bool:
                unw = torch.zeros_like(o, dtype=torch.bool)
            else:
                s = sentinel(out.dtype)
                unw = (o == s) & (e != s)
            diff = (o.long() - e.long()).abs()
            bad = diff > atol + rtol * e.long().abs()
            if diff.numel():
                max_err = max(max_err, float(diff[~unw].max()) if (~unw).any() else 0.0)
        n_unw, n_bad = int(unw.sum()), int(bad.sum())
        unwritten += n_unw
        mismatched += n_bad
        if n_bad and first_bad is None:
            first_bad = start + int(torch.nonzero(bad)[0])
    if mismatched == 0:
        return Comparison(True, max_err, 0, 0, None, "")
    parts = []
    if unwritten:
        parts.append(f"{unwritten} of {flat_o.numel()} elements of {name} were never written")
    wrong = mismatched - unwritten
    if wrong:
        i = first_bad if first_bad is not None else 0
        parts.append(
            f"{wrong} elements of {name} differ beyond atol={atol:g}, rtol={rtol:g} (max abs error {max_err:.3g}; "
            f"first at flat index {i}: got {flat_o[i].item()!r}, expected {flat_e[i].item()!r})"
        )
    return Comparison(False, max_err, unwritten, mismatched, first_bad, "; ".join(parts))


def digest(tensors: Sequence[Any]) -> str:
    """A hash of the exact bytes of ``tensors``: equal digests mean bit-for-bit identical outputs."""
    h = hashlib.blake2b(digest_size=16)
    for t in tensors:
        c = t.detach().contiguous().cpu()
        h.update(str((tuple(c.shape), str(c.dtype))).encode())
        h.update(c.view(-1).view(_byte_dtype()).numpy().tobytes() if c.numel() else b"")
    return h.hexdigest()


def _byte_dtype() -> Any:
    import torch

    return torch.uint8
