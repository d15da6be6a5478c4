"""Comparing outputs: poison before a run, count what stayed unwritten, compare in chunks, group bit-identical."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

_CHUNK = 1 << 22  # elements per comparison chunk: bounded temporary memory on large outputs
#: (output dtype, expected dtype) pairs whose comparison kernel failed to run in this process: torch's ops compare them
_KERNEL_FAILED: set[tuple[Any, Any]] = set()


def on_gpu(t: Any) -> bool:
    """Whether ``t`` lives where tritune's own kernels fill and compare (a CUDA or ROCm device)."""
    return bool(t.device.type == "cuda")


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
    #: whether the output equals the expected value bit for bit (NaNs in the same places included), where the
    #: comparison learnt it on the way (tritune's kernel on a GPU, same dtypes); None where it did not look
    identical: bool | None = None

    @property
    def reason(self) -> str | None:
        return None if self.ok else self.detail


def compare(out: Any, expected: Any, *, atol: float, rtol: float, name: str = "output") -> Comparison:
    """Compare ``out`` with ``expected`` within ``atol + rtol*|expected|``, counting still-poisoned elements.

    An element is *unwritten* when it still holds the poison while the expected value is not the poison.
    NaN where NaN is expected, and equal infinities, count as equal, and only the same infinity agrees with an
    infinite expected value (``torch.isclose(equal_nan=True)``; the bare bound would call equal infinities
    different, inf - inf being NaN, and let any number agree with an infinity).
    Floats are compared in float64, large tensors chunk by chunk; the counts and the largest error stay on
    the device until the end, so a comparison waits for the device once (the first differing element is looked
    up only when something differs). Waiting chunk by chunk instead cost three waits per chunk of a 6144x6144
    output (9 chunks) in each check of a new key's 8 opening candidates on an H200.

    On a GPU, tensors of the usual dtypes are compared by tritune's own kernel instead
    (:mod:`tritune.verify.compare_kernel`: one launch, no torch op a library may have replaced), which also tells
    whether the two are the same bit for bit (:attr:`Comparison.identical`). Two tensors of one dtype it does not
    read as numbers (float8) have their bits compared by it first; only bits that differ reach torch's ops.
    """
    import torch

    expected = torch.as_tensor(expected).to(out.device)
    if tuple(out.shape) != tuple(expected.shape):
        return Comparison(False, float("inf"), 0, out.numel(), None,
                          f"{name} has shape {tuple(out.shape)}, the oracle gave {tuple(expected.shape)}")
    flat_o, flat_e = out.reshape(-1), expected.reshape(-1)
    if on_gpu(flat_o):
        from tritune.verify import compare_kernel

        pair = (flat_o.dtype, flat_e.dtype)
        if pair not in _KERNEL_FAILED and compare_kernel.takes(flat_o, flat_e):  # no torch op a library may replace
            try:
                poisoned = None if out.dtype.is_floating_point or out.dtype == torch.bool else sentinel(out.dtype)
                got = compare_kernel.counts(flat_o, flat_e, atol=atol, rtol=rtol, poisoned=poisoned)
            except Exception:  # a target or dtype the kernel does not compile for: torch's ops compare, as on the CPU
                _KERNEL_FAILED.add(pair)
            else:
                same = got[4] == 0 if out.dtype == expected.dtype else None
                return _described(flat_o, flat_e, name, atol, rtol, *got[:4], same)
        elif pair not in _KERNEL_FAILED and _same_bits_by_kernel(flat_o, flat_e):
            # a dtype the kernel does not read as numbers (float8): equal bits agree, with no torch op
            return Comparison(True, 0.0, 0, 0, None, "", True)
    floating = out.dtype.is_floating_point
    parts: list[Any] = []  # per chunk: a float64 tensor [unwritten, mismatched, max error], read once at the end
    starts = range(0, flat_o.numel(), _CHUNK)
    for start in starts:
        unw, bad, err = _chunk(flat_o, flat_e, start, floating, atol, rtol)
        parts.append(torch.stack([unw.sum().double(), bad.sum().double(), err.double()]))
    if not parts:
        return Comparison(True, 0.0, 0, 0, None, "")
    cols = torch.stack(parts).cpu()
    unwritten, mismatched = int(cols[:, 0].sum()), int(cols[:, 1].sum())
    max_err = float(cols[:, 2].max())
    first_bad: int | None = None
    for k, start in enumerate(starts):
        if mismatched and cols[k, 1] > 0:  # the first chunk with a mismatch: compared once more, for its first index
            _, bad, _ = _chunk(flat_o, flat_e, start, floating, atol, rtol)
            first_bad = start + int(torch.nonzero(bad)[0])
            break
    return _described(flat_o, flat_e, name, atol, rtol, unwritten, mismatched, max_err, first_bad, None)


def _described(flat_o: Any, flat_e: Any, name: str, atol: float, rtol: float, unwritten: int, mismatched: int,
               max_err: float, first_bad: int | None, identical: bool | None) -> Comparison:  # fmt: skip
    """The :class:`Comparison` of these counts, with its one-line detail where something differs."""
    if mismatched == 0:
        return Comparison(True, max_err, 0, 0, None, "", identical)
    parts_txt = []
    if unwritten:
        parts_txt.append(f"{unwritten} of {flat_o.numel()} elements of {name} were never written")
    wrong = mismatched - unwritten
    if wrong:
        i = first_bad if first_bad is not None else 0
        parts_txt.append(
            f"{wrong} elements of {name} differ beyond atol={atol:g}, rtol={rtol:g} (max abs error {max_err:.3g}; "
            f"first at flat index {i}: got {flat_o[i].item()!r}, expected {flat_e[i].item()!r})"
        )
    return Comparison(False, max_err, unwritten, mismatched, first_bad, "; ".join(parts_txt), identical)


#: (dtype, device) pairs whose comparison :func:`warm_compare` has run in this process (its kernels are loaded).
_WARMED: set[tuple[Any, Any]] = set()


def warm_compare(outputs: Sequence[Any], *, atol: float, rtol: float) -> int:
    """Run :func:`compare` once on small tensors of each CUDA output's dtype and device, on a side stream, and wait:
    the comparison's kernel (:mod:`tritune.verify.compare_kernel`) is compiled, or read from Triton's cache, and
    loaded at its first launch for a dtype (torch's ops, for dtypes it does not take, load their device code at
    their first launch too: CUDA's lazy loading). Run aside beside a key's setup (``tune_key``), that load leaves the first
    candidate's check: on the H200 a new key's 8 opening checks of a 6144^3 matmul spent 0.21 s in the comparison,
    about 0.16 s of it once per process, against ~5 ms a comparison after. Once per process and (dtype, device): the
    loads are done then, and a later key's warm-up would only repeat them (on the H200, in one ``tritune tune`` of
    three keys, 0.020-0.025 s of the helper thread for each later key). The number of dtypes warmed now (outputs on
    the CPU, and dtypes warmed before in this process, are skipped)."""
    import torch

    pairs = [(t.dtype, t.device) for t in outputs if isinstance(t, torch.Tensor) and t.device.type == "cuda"]
    return warm_compare_dtypes(pairs, atol=atol, rtol=rtol)


def warm_compare_dtypes(pairs: Sequence[tuple[Any, Any]], *, atol: float = 0.0, rtol: float = 0.0) -> int:
    """:func:`warm_compare` by ``(dtype, device)`` pairs, before any output exists: a floating dtype's comparison
    runs in float64 (:func:`_chunk`), so warming one floating dtype loads all of its kernels but the cast from
    the output's dtype. ``tune_key`` warms float32 this way at its start, beside the arguments, when this
    process has compared nothing on the device yet: the outputs' own warm-up, which must wait for the arguments,
    then has only their casts left (on the H200 the comparison's warm-up took 0.11-0.14 s of a fresh process
    from the arguments' end, and the first check waited 0.04-0.06 s of it). The number warmed now."""
    import torch

    warmed = 0
    for dtype, dev in pairs:
        dev = torch.device(dev)
        if dev.type != "cuda":
            continue
        if dev.index is None:
            dev = torch.device("cuda", torch.cuda.current_device())
        if (dtype, dev) in _WARMED:
            continue
        _WARMED.add((dtype, dev))
        warmed += 1
        try:  # each dtype alone: one that the comparison cannot take (it says so at the check) stops no other
            side = torch.cuda.Stream(device=dev)
            with torch.cuda.stream(side):
                a = torch.zeros(4096, dtype=dtype, device=dev)
                compare(a, a.clone(), atol=atol, rtol=rtol, name="warm-up")
            side.synchronize()
        except Exception:  # a warm-up only
            continue
    return warmed


def compare_warmed(device: Any) -> bool:
    """Whether this process has warmed a comparison on ``device`` (a ``torch.device``) already."""
    return any(d == device for _, d in _WARMED)


def _chunk(flat_o: Any, flat_e: Any, start: int, floating: bool, atol: float,
           rtol: float) -> tuple[Any, Any, Any]:  # fmt: skip
    """The chunk of the flat output and oracle at ``start`` (never empty): its unwritten mask, mismatch mask and
    largest error (a 0-d tensor), all on the device."""
    import torch

    o = flat_o[start : start + _CHUNK]
    e = flat_e[start : start + _CHUNK]
    if floating:
        o64, e64 = _float64(o), _float64(e)
        on, en = torch.isnan(o64), torch.isnan(e64)
        unw = on & ~en
        err = (o64 - e64).abs_()
        # (an infinite expected value has an infinite tolerance: only the same infinity agrees with it)
        ok = ((err <= e64.abs().mul_(rtol).add_(atol)) & torch.isfinite(e64)) | (o64 == e64) | (on & en)
        # the largest finite-or-infinite error of the written elements (NaN errors: a NaN on one side only)
        return unw, ~ok, torch.nan_to_num(err, nan=0.0, posinf=math.inf).max()
    e = e.to(o.dtype)
    if o.dtype == torch.bool:
        unw = torch.zeros_like(o, dtype=torch.bool)
    else:
        s = sentinel(o.dtype)
        unw = (o == s) & (e != s)
    diff = (o.long() - e.long()).abs()
    bad = diff > atol + rtol * e.long().abs()
    return unw, bad, torch.where(unw, 0, diff).max()


def bits_dtype(t: Any) -> Any:
    """The integer dtype of ``t``'s element width (its bits, viewed: ``t.view(bits_dtype(t))``), or None for a width
    with none (complex128's 16 bytes)."""
    import torch

    return {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(t.element_size())


def _same_bits_by_kernel(flat_o: Any, flat_e: Any) -> bool:
    """Whether two flat GPU tensors of one dtype are equal bit for bit, compared as integers of their width by
    tritune's kernel; False where the kernel cannot tell (other dtypes or widths, or it failed to run: the pair is
    then compared by torch's ops). Under ``flag_gems.enable()`` torch's ops on float8 tensors (Triton's matmul
    tutorial's inputs, compared by the check as every tensor argument is) are FlagGems' kernels."""
    from tritune.verify import compare_kernel

    width = bits_dtype(flat_o)
    if flat_o.dtype != flat_e.dtype or flat_o.dtype.is_complex or width is None:
        return False
    o, e = flat_o.contiguous().view(width), flat_e.contiguous().view(width)
    if not compare_kernel.takes(o, e):
        return False
    try:
        got = compare_kernel.counts(o, e, atol=0.0, rtol=0.0)
    except Exception:  # the kernel does not compile here: torch's ops compare, as on the CPU
        _KERNEL_FAILED.add((flat_o.dtype, flat_e.dtype))
        return False
    return got[1] == 0


def _float64(t: Any) -> Any:
    """``t`` in float64, a float narrower than 32 bits through float32 first (exact either way). Where a library
    replaced torch's copy kernels (``flag_gems.enable()``), the direct float8-to-float64 copy failed to compile on
    an H100 (Triton 3.6: ``PassManager::run failed``) while checking Triton's matmul tutorial, whose inputs are
    float8; float8 to float32 is a conversion the GPU has."""
    return (t.float() if t.dtype.itemsize < 4 else t).double()


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
