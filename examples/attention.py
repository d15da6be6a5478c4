"""Flash-attention forward (non-causal, fp16, head dim 64), 192 configs.

Each program holds a ``BLOCK_M`` block of queries and streams keys and values in ``BLOCK_N`` blocks with
the online softmax. Its landscape has a narrow optimum: tensor-core tiles want big blocks, registers
and shared memory punish them, and pipelining depth interacts with both::

    tritune tune examples/attention.py --workload attention --sweep --record attn.json       # GPU
    tritune verify examples/attention.py --workload attention_small                         # any machine

``attention`` has the GPU key Z*H=32 heads of N_CTX=4096; ``attention_small`` (2 heads of 256) is for
CPU verification under Triton's interpreter. N_CTX must be a multiple of 256, the largest block, so the
loop needs no masks (and both keys specialize alike).
"""

import torch
import triton
import triton.language as tl

import tritune


@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, sm_scale, N_CTX, HEAD_DIM: tl.constexpr,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    head = tl.program_id(1).to(tl.int64) * N_CTX * HEAD_DIM
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :])
    m_i = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # exp(x) = exp2(x * log2(e))
    for start_n in range(0, N_CTX, BLOCK_N):
        cols = start_n + offs_n
        k = tl.load(k_ptr + head + cols[None, :] * HEAD_DIM + offs_d[:, None])
        qk = tl.dot(q, k) * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        p = tl.math.exp2(qk - m_new[:, None])
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + head + cols[:, None] * HEAD_DIM + offs_d[None, :])
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(o_ptr + head + offs_m[:, None] * HEAD_DIM + offs_d[None, :], acc.to(tl.float16))


HEAD_DIM = 64


def attention_args(key, device):
    heads, n = key["heads"], key["N_CTX"]
    if n % 256:
        raise ValueError(f"attention: N_CTX={n} must be a multiple of 256 (the largest block)")
    gen = torch.Generator(device="cpu").manual_seed(0)
    q, k, v = (torch.randn(heads, n, HEAD_DIM, generator=gen).to(device=device, dtype=torch.float16)
               for _ in range(3))
    o = torch.empty_like(q)
    return q, k, v, o, HEAD_DIM**-0.5, n


def attention_oracle(args):
    q, k, v = (a.float() for a in args[:3])
    return [torch.softmax(q @ k.transpose(1, 2) * args[4], dim=-1) @ v]


ATTENTION_SPACE = tritune.Space(
    {
        "BLOCK_M": [32, 64, 128, 256],
        "BLOCK_N": [16, 32, 64, 128],
        "num_warps": [2, 4, 8],
        "num_stages": [1, 2, 3, 4],
    }
)


def _workload(name, keys):
    return tritune.Workload(
        name=name,
        kernel=attention_kernel,
        configs=ATTENTION_SPACE,
        args=attention_args,
        grid=lambda meta, key: (key["N_CTX"] // meta["BLOCK_M"], key["heads"]),
        outputs=[3],
        oracle=attention_oracle,
        keys=keys,
        kwargs={"HEAD_DIM": HEAD_DIM},
        # fp16 probabilities and output: a few ulps of values below ~1.
        atol=5e-3,
        rtol=5e-3,
        bytes=lambda key: 4 * 2 * key["heads"] * key["N_CTX"] * HEAD_DIM,
        flops=lambda key: 4 * key["heads"] * key["N_CTX"] ** 2 * HEAD_DIM,
    )


attention = _workload("attention", [{"heads": 32, "N_CTX": 4096}])
attention_small = _workload("attention_small", [{"heads": 2, "N_CTX": 256}])
