"""Kernels for the space tests, written after the patterns of Triton's tutorials and of FlagGems, Liger and fla.

Each has the parameter conventions of the code it follows: which constexprs the caller passes, which a heuristic
sets and which a config list tunes. The tests derive spaces from their sources, run some under the interpreter
and compile some through the screen's front end.
"""

import triton
import triton.language as tl

# -- Triton tutorial 01: vector add ---------------------------------------------------------------------------


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)


ADD_CALL = ("x_ptr", "y_ptr", "out_ptr", "n_elements")


# -- Triton tutorial 02: fused softmax (a whole row per program, programs loop over rows) ----------------------


@triton.jit
def fused_softmax_kernel(out_ptr, in_ptr, in_row_stride, out_row_stride, n_rows, n_cols,
                         BLOCK_SIZE: tl.constexpr, num_stages: tl.constexpr):  # fmt: skip
    first = tl.program_id(0)
    step = tl.num_programs(0)
    for row in tl.range(first, n_rows, step, num_stages=num_stages):
        row_in = in_ptr + row * in_row_stride
        cols = tl.arange(0, BLOCK_SIZE)
        ok = cols < n_cols
        x = tl.load(row_in + cols, mask=ok, other=-float("inf"))
        shifted = x - tl.max(x, axis=0)
        num = tl.exp(shifted)
        y = num / tl.sum(num, axis=0)
        tl.store(out_ptr + row * out_row_stride + cols, y, mask=ok)


#: The tutorial's call passes everything but the block (its caller sets BLOCK_SIZE = next_power_of_2(n_cols)).
SOFTMAX_CALL = ("out_ptr", "in_ptr", "in_row_stride", "out_row_stride", "n_rows", "n_cols", "num_stages")


# -- Triton tutorial 03: matmul with grouped ordering and an optional activation -------------------------------


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def grouped_matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm,
                          stride_cn, BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                          BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):  # fmt: skip
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    per_group = GROUP_SIZE_M * num_pid_n
    group = pid // per_group
    first_m = group * GROUP_SIZE_M
    rows_in_group = min(num_pid_m - first_m, GROUP_SIZE_M)
    pid_m = first_m + ((pid % per_group) % rows_in_group)
    pid_n = (pid % per_group) // rows_in_group
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    acc = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        acc = leaky_relu(acc)
    c = acc.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    tl.store(c_ptrs, c, mask=(offs_cm[:, None] < M) & (offs_cn[None, :] < N))


#: The tutorial's call: the tensors, sizes and strides positionally, ACTIVATION by keyword; its configs set the rest.
MATMUL_CALL = ("a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_ak", "stride_bk", "stride_bn",
               "stride_cm", "stride_cn", "ACTIVATION")  # fmt: skip


# -- Triton tutorial 05: layer norm forward (a row per program, in blocks of the row) -------------------------


@triton.jit
def layer_norm_fwd_kernel(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    total = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        total += tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
    mean = tl.sum(total, axis=0) / N
    sq = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.0).to(tl.float32)
        d = tl.where(cols < N, x - mean, 0.0)
        sq += d * d
    rstd = 1 / tl.sqrt(tl.sum(sq, axis=0) / N + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        ok = cols < N
        w = tl.load(W + cols, mask=ok)
        b = tl.load(B + cols, mask=ok)
        x = tl.load(X + cols, mask=ok, other=0.0).to(tl.float32)
        tl.store(Y + cols, (x - mean) * rstd * w + b, mask=ok)


LAYER_NORM_CALL = ("X", "Y", "W", "B", "Mean", "Rstd", "stride", "N", "eps")


# -- Triton tutorial 06: flash attention forward (tensor descriptors, the inner loop in a helper) -------------


@triton.jit
def _attn_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, start_m, qk_scale, BLOCK_M: tl.constexpr,
                BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr, offs_m: tl.constexpr, offs_n: tl.constexpr,
                N_CTX: tl.constexpr):  # fmt: skip
    hi = (start_m + 1) * BLOCK_M if CAUSAL else N_CTX
    for start_n in range(0, hi, BLOCK_N):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        k = k_desc.load([row0 + start_n, 0]).T
        qk = tl.dot(q, k)
        if CAUSAL:
            keep = offs_m[:, None] >= (start_n + offs_n[None, :])
            qk = qk * qk_scale + tl.where(keep, 0, -1.0e6)
        else:
            qk = qk * qk_scale
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        qk -= m_new[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = v_desc.load([row0 + start_n, 0])
        acc = tl.dot(p.to(tl.float16), v, acc)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attn_fwd_kernel(Q, K, V, Out, sm_scale, Z_H, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                    BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):  # fmt: skip
    start_m = tl.program_id(0)
    row0 = tl.program_id(1) * N_CTX
    rows = Z_H * N_CTX
    q_desc = tl.make_tensor_descriptor(Q, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_M, HEAD_DIM])
    k_desc = tl.make_tensor_descriptor(K, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    v_desc = tl.make_tensor_descriptor(V, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1], block_shape=[BLOCK_N, HEAD_DIM])
    o_desc = tl.make_tensor_descriptor(Out, shape=[rows, HEAD_DIM], strides=[HEAD_DIM, 1],
                                       block_shape=[BLOCK_M, HEAD_DIM])  # fmt: skip
    offs_m = start_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    q = q_desc.load([row0 + start_m * BLOCK_M, 0])
    acc, l_i, m_i = _attn_inner(acc, l_i, m_i, q, k_desc, v_desc, row0, start_m, sm_scale * 1.44269504, BLOCK_M,
                                BLOCK_N, CAUSAL, offs_m, offs_n, N_CTX)  # fmt: skip
    o_desc.store([row0 + start_m * BLOCK_M, 0], (acc / l_i[:, None]).to(tl.float16))


#: The tutorial's call: the tensors (heads flattened into rows), the scale, the sizes and the causal switch.
ATTN_CALL = ("Q", "K", "V", "Out", "sm_scale", "Z_H", "N_CTX", "HEAD_DIM", "CAUSAL")


# -- FlagGems' pattern: a reduction whose one-tile case a heuristic picks, the tile a config sets --------------


@triton.heuristics({"ONE_TILE_PER_CTA": lambda args: args["TILE_N"] >= args["N"]})
@triton.jit
def row_softmax_kernel(out_ptr, in_ptr, M, N, TILE_N: tl.constexpr, ONE_TILE_PER_CTA: tl.constexpr):
    row = tl.program_id(0)
    if ONE_TILE_PER_CTA:
        cols = tl.arange(0, TILE_N)
        ok = cols < N
        x = tl.load(in_ptr + row * N + cols, mask=ok, other=-float("inf")).to(tl.float32)
        e = tl.exp(x - tl.max(x, 0))
        tl.store(out_ptr + row * N + cols, e / tl.sum(e, 0), mask=ok)
    else:
        run_max = tl.full([TILE_N], -float("inf"), tl.float32)
        run_sum = tl.zeros([TILE_N], tl.float32)
        for start in range(0, N, TILE_N):
            cols = start + tl.arange(0, TILE_N)
            x = tl.load(in_ptr + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
            new_max = tl.maximum(run_max, x)
            run_sum = run_sum * tl.exp(run_max - new_max) + tl.exp(x - new_max)
            run_max = new_max
        top = tl.max(run_max, 0)
        total = tl.sum(run_sum * tl.exp(run_max - top), 0)
        for start in range(0, N, TILE_N):
            cols = start + tl.arange(0, TILE_N)
            x = tl.load(in_ptr + row * N + cols, mask=cols < N, other=-float("inf")).to(tl.float32)
            tl.store(out_ptr + row * N + cols, tl.exp(x - top) / total, mask=cols < N)


ROW_SOFTMAX_CALL = ("out_ptr", "in_ptr", "M", "N")


@triton.heuristics({"TILE_K": lambda args: min(triton.next_power_of_2(args["K"]), 64)})
@triton.jit
def sum_dim_kernel(out_ptr, in_ptr, M, N, K, TILE_N: tl.constexpr, TILE_K: tl.constexpr):
    """FlagGems' reduction over the middle dim of (M, N, K): the heuristic sets the K tile, a config the N tile."""
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    offs_k = pid_k * TILE_K + tl.arange(0, TILE_K)
    acc = tl.zeros([TILE_N, TILE_K], dtype=tl.float32)
    for start in range(0, N, TILE_N):
        offs_n = start + tl.arange(0, TILE_N)
        ok = (offs_n[:, None] < N) & (offs_k[None, :] < K)
        acc += tl.load(in_ptr + pid_m * N * K + offs_n[:, None] * K + offs_k[None, :], mask=ok, other=0.0)
    tl.store(out_ptr + pid_m * K + offs_k, tl.sum(acc, axis=0), mask=offs_k < K)


SUM_DIM_CALL = ("out_ptr", "in_ptr", "M", "N", "K")


# -- Liger's pattern: the caller computes the block and the warps from the row length -------------------------


@triton.jit
def liger_rms_norm_kernel(Y, Y_stride, X, X_stride, W, RSTD, n_cols, eps, offset, casting_mode: tl.constexpr,
                          BLOCK_SIZE: tl.constexpr):  # fmt: skip
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    ok = cols < n_cols
    x = tl.load(X + row * X_stride + cols, mask=ok, other=0.0)
    w = tl.load(W + cols, mask=ok, other=0.0)
    if casting_mode == 1:
        x = x.to(tl.float32)
    rstd = tl.math.rsqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(RSTD + row, rstd)
    tl.store(Y + row * Y_stride + cols, x * rstd * (offset + w), mask=ok)


#: Liger's call binds every parameter, BLOCK_SIZE included (``calculate_settings(n_cols)``).
LIGER_RMS_CALL = ("Y", "Y_stride", "X", "X_stride", "W", "RSTD", "n_cols", "eps", "offset", "casting_mode",
                  "BLOCK_SIZE")  # fmt: skip


# -- fla's pattern: chunked kernels over (T, K) and (T, V) blocks through block pointers ----------------------
# Triton 3.9's compiler no longer takes block pointers (it asks for tensor descriptors): this one is read, not run.


@triton.heuristics({"IS_VARLEN": lambda args: args["cu_seqlens"] is not None})
@triton.jit(do_not_specialize=["T"])
def chunk_fwd_o_kernel(q, k, v, o, cu_seqlens, scale, T, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                       BT: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, IS_VARLEN: tl.constexpr):  # fmt: skip
    i_v, i_t, i_bh = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    i_b, i_h = i_bh // H, i_bh % H
    if IS_VARLEN:
        bos, eos = tl.load(cu_seqlens + i_b).to(tl.int32), tl.load(cu_seqlens + i_b + 1).to(tl.int32)
        T = eos - bos
    else:
        bos, eos = i_b * T, i_b * T + T
    o_t = i_t * BT + tl.arange(0, BT)
    b_o = tl.zeros([BT, BV], dtype=tl.float32)
    b_s = tl.zeros([BT, BT], dtype=tl.float32)
    for i_k in range(tl.cdiv(K, BK)):
        p_q = tl.make_block_ptr(q + (bos * H + i_h) * K, (T, K), (H * K, 1), (i_t * BT, i_k * BK), (BT, BK), (1, 0))
        p_k = tl.make_block_ptr(k + (bos * H + i_h) * K, (K, T), (1, H * K), (i_k * BK, i_t * BT), (BK, BT), (0, 1))
        b_q = tl.load(p_q, boundary_check=(0, 1))
        b_k = tl.load(p_k, boundary_check=(0, 1))
        b_s += tl.dot(b_q, b_k)
    b_s = tl.where(o_t[:, None] >= o_t[None, :], b_s * scale, 0)
    p_v = tl.make_block_ptr(v + (bos * H + i_h) * V, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
    b_v = tl.load(p_v, boundary_check=(0, 1))
    b_o += tl.dot(b_s.to(b_v.dtype), b_v)
    p_o = tl.make_block_ptr(o + (bos * H + i_h) * V, (T, V), (H * V, 1), (i_t * BT, i_v * BV), (BT, BV), (1, 0))
    tl.store(p_o, b_o.to(p_o.dtype.element_ty), boundary_check=(0, 1))


#: fla's call passes the head count, head dims and chunk size as constexprs; its autotune configs set BK and BV.
CHUNK_CALL = ("q", "k", "v", "o", "cu_seqlens", "scale", "T", "H", "K", "V", "BT")


# -- small cases: free flags, defaults, a helper that shapes the block ----------------------------------------


@triton.jit
def flagged_kernel(x_ptr, n, BLOCK: tl.constexpr, REVERSE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if REVERSE:
        x = -x
    tl.store(x_ptr + offs, x, mask=offs < n)


@triton.jit
def defaults_kernel(x_ptr, n, BLOCK: tl.constexpr = 256, SCALE: tl.constexpr = 4, EXACT: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n)
    if EXACT:
        x = x + 0.0
    tl.store(x_ptr + offs, x * SCALE, mask=offs < n)


@triton.jit
def _tile_of(ptr, start, n, WIDTH: tl.constexpr):
    offs = start + tl.arange(0, WIDTH)
    return tl.load(ptr + offs, mask=offs < n, other=0.0)


@triton.jit
def helper_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr, HALF: tl.constexpr = 2):
    start = tl.program_id(0) * BLOCK
    x = _tile_of(x_ptr, start, n, BLOCK)
    pairs = tl.reshape(x, (BLOCK // HALF, HALF))
    tl.store(y_ptr + tl.program_id(0) * (BLOCK // HALF) + tl.arange(0, BLOCK // HALF), tl.sum(pairs, axis=1))


@triton.jit
def _row_total(ptr, n, WIDTH: tl.constexpr):
    acc = tl.zeros([WIDTH], dtype=tl.float32)
    for start in range(0, n, WIDTH):
        acc += _tile_of(ptr, start, n, WIDTH)
    return tl.sum(acc)


@triton.jit
def looping_helper_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    """Its only loop is in a helper: num_stages may change its binary."""
    row = tl.program_id(0)
    tl.store(y_ptr + row, _row_total(x_ptr + row * n, n, BLOCK))


@triton.jit
def scalar_kernel(x_ptr, y_ptr, n):
    i = tl.program_id(0)
    tl.store(y_ptr + i, tl.load(x_ptr + i) * 2)


@triton.jit
def persistent_kernel(x_ptr, n, BLOCK: tl.constexpr, NUM_SMS: tl.constexpr):
    tiles = tl.cdiv(n, BLOCK)
    for tile in tl.range(tl.program_id(0), tiles, NUM_SMS):
        offs = tile * BLOCK + tl.arange(0, BLOCK)
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
