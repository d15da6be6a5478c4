"""Chapter 18.2, redone: @tritune.autotune does not crash with "0 active drivers" when there is no GPU.

It runs the first legal config, labelled untuned, and says plainly that nothing was timed.
With on_no_gpu="error" it raises TimingUnavailableError instead, explaining what to do.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

import warnings

import torch
import triton
import triton.language as tl

import tritune

configs = [
    triton.Config({"BLOCK": 300}, num_warps=4),  # illegal: never launched
    triton.Config({"BLOCK": 256}, num_warps=2),
    triton.Config({"BLOCK": 512}, num_warps=4),
    triton.Config({"BLOCK": 1024}, num_warps=8),
]


def gelu_body(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    x = tl.load(x_ptr + offsets, mask=mask, other=0.0)
    SQRT_2_INV: tl.constexpr = 0.7071067811865476
    out = x * (0.5 * (1.0 + tl.math.erf(x * SQRT_2_INV)))
    tl.store(out_ptr + offsets, out, mask=mask)


gelu_autotuned = tritune.autotune(configs=configs, key=["n"])(triton.jit(gelu_body))
gelu_strict = tritune.autotune(configs=configs, key=["n"], on_no_gpu="error")(triton.jit(gelu_body))

torch.manual_seed(0)
n = 4096
x = torch.randn(n)
out = torch.empty_like(x)
grid = lambda meta: (triton.cdiv(n, meta["BLOCK"]),)  # noqa: E731

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    gelu_autotuned[grid](x, out, n)
    gelu_autotuned[grid](x, out, n)  # same key: reuses the choice, no second warning
untuned = [w for w in caught if issubclass(w.category, tritune.UntunedWarning)]
print("ran; untuned warnings:", len(untuned))
print("warning:", untuned[0].message)
choice = gelu_autotuned.choices()[next(iter(gelu_autotuned.choices()))]
print("config in use:", choice.config.id, "| chosen by:", choice.source)
print("correct?", torch.allclose(out, torch.nn.functional.gelu(x), atol=1e-5))

try:
    gelu_strict[grid](x, out, n)
except tritune.TimingUnavailableError as e:
    print("strict mode:", type(e).__name__, "(a RuntimeError:", isinstance(e, RuntimeError), ")")
    print(str(e).split(". ")[0] + ".")
