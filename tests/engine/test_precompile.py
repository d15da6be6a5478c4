"""The decorator's parallel precompile: real compiles for sm_90 in spawned workers, no GPU needed."""

import pytest
import torch

from kernels import scale_kernel
from tritune import Config
from tritune.engine.precompile import _cached, _locate, precompile
from tritune.screen.specialize import cuda_target, specialize


def test_precompile_fills_tritons_cache_in_workers(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.randn(4096)
    args = (x, torch.empty_like(x), 4096)
    good = [Config({"BLOCK": b}, num_warps=w) for b in (256, 512) for w in (2, 4)]
    bad = Config({"BLOCK": 300})
    target = cuda_target(90)
    assert _locate(scale_kernel) == ("kernels", "scale_kernel")
    specs = {c: specialize(scale_kernel, args, c, target) for c in good}
    assert not any(_cached(s) for s in specs.values())
    failed = precompile(scale_kernel, [*good, bad], args, {}, target, jobs=2)
    assert set(failed) == {bad} and "power of 2" in failed[bad]
    assert all(_cached(s) for s in specs.values())  # the JIT will find exactly these binaries


def test_nothing_to_do_when_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.randn(64)
    args = (x, torch.empty_like(x), 64)
    cfg = Config({"BLOCK": 64})
    specialize(scale_kernel, args, cfg, cuda_target(90)).compile()
    assert precompile(scale_kernel, [cfg], args, {}, cuda_target(90), jobs=2) == {}


_FORKED_SCRIPT = r"""
import json, sys
import torch, triton, triton.language as tl
from tritune import Config
from tritune.screen.specialize import cuda_target, specialize
from tritune.engine import precompile as pc


def build():
    @triton.jit
    def local_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):  # defined in a function: not importable
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1.0, mask=offs < n)
    return local_kernel


k = build()
assert pc._locate(k) is None and pc._fork_ok()
x = torch.randn(4096)
args = (x, torch.empty_like(x), 4096)
cfgs = [Config({"BLOCK": b}, num_warps=w) for b in (128, 1024) for w in (1, 4)] + [Config({"BLOCK": 96})]
failed = pc.precompile(k, cfgs, args, {}, cuda_target(90), jobs=2)
print(json.dumps({"failed": [c.id for c in failed],
                  "cached": [pc._cached(specialize(k, args, c, cuda_target(90))) for c in cfgs[:4]],
                  "left": len(pc._FORKED)}))
"""


def test_forked_workers_compile_a_kernel_defined_in_a_function(tmp_path):
    """Without the interpreter (as on a GPU machine) workers are forked and compile the inherited kernel
    object itself: a kernel no worker could import still compiles in parallel."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = tmp_path / "script.py"  # Triton reads a kernel's source from its file
    script.write_text(_FORKED_SCRIPT)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert len(res["failed"]) == 1 and "BLOCK=96" in res["failed"][0]  # not a power of 2
    assert res["cached"] == [True, True, True, True]  # exactly the binaries the JIT will look for
    assert res["left"] == 0  # the kernel is not kept alive after the pool


def _fake_compile(payload):  # type: ignore[no-untyped-def]
    """FAKE compile for forked workers: sleeps ``payload`` seconds, or returns the error string it is given."""
    import time

    if isinstance(payload, str):
        return payload
    time.sleep(payload)
    return None


def test_compiling_maps_timeouts_and_errors_to_configs_and_races_what_finished():
    """FAKE compiles on the real worker service: one config is stuck past the timeout, one fails, two finish;
    the stuck one is given up as compile_timeout while the others are handed out."""
    import time

    from tritune.engine.precompile import Compiling
    from tritune.workers import Forked, WorkerService

    quick, bad, stuck, later = (Config({"BLOCK": b}) for b in (64, 128, 16384, 256))
    svc = WorkerService(Forked(_fake_compile), 2, timeout=1.0)
    for cfg, payload in ((stuck, 60.0), (quick, 0.0), (bad, "ptxas fatal: out of registers"), (later, 0.2)):
        svc.submit(cfg, payload)
    assert len(svc._workers) == 2 and svc.busy == 4  # the compiles started at submit, before anyone waits
    closed = []
    c = Compiling("k", {}, svc, [stuck, quick, bad, later], on_close=lambda: closed.append(1))
    assert c.workers == 2
    first = c.wait(1)  # everything but one straggler
    assert set(first) == {quick, later} and "out of registers" in c.failed[bad] and list(c.pending) == [stuck]
    t = time.monotonic()
    assert c.wait(0) == [] and time.monotonic() - t < 5
    assert c.timed_out == {stuck} and "compile_timeout" in c.failed[stuck] and "16384" in c.failed[stuck]
    assert not c.pending and closed == [1]


_CRASH_SCRIPT = r"""
import json, os
import torch, triton, triton.language as tl
from tritune import Config
from tritune.screen.specialize import cuda_target, specialize
from tritune.engine import precompile as pc


@triton.jit
def k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3.0, mask=offs < n)


real = pc._compile_forked
def crashing(token, sig, constexprs, attrs, options, target):  # FAKE compiler crash for BLOCK=1024
    if 1024 in constexprs.values():
        os.abort()
    return real(token, sig, constexprs, attrs, options, target)
pc._compile_forked = crashing  # forked workers inherit it

x = torch.randn(4096)
args = (x, torch.empty_like(x), 4096)
cfgs = [Config({"BLOCK": b}, num_warps=w) for b in (128, 256, 1024) for w in (1, 4)]
c = pc.start_precompile(k, cfgs, args, {}, cuda_target(90), jobs=2)
ok = c.wait(0)
one = pc.start_precompile(k, [Config({"BLOCK": 512})], args, {}, cuda_target(90), jobs=1)
print(json.dumps({"failed": {cfg.id: why for cfg, why in c.failed.items()}, "ok": [cfg.id for cfg in ok],
                  "cached": [pc._cached(specialize(k, args, cfg, cuda_target(90))) for cfg in cfgs[:4]],
                  "one_workers": one.workers, "one_ok": [cfg.id for cfg in one.wait(0)]}))
"""


@pytest.mark.long  # a subprocess whose compile workers abort and are started again
def test_a_compiler_crash_fails_only_its_config_and_one_config_still_compiles_in_a_worker(tmp_path):
    """A compile that kills its worker (FAKE: os.abort() for BLOCK=1024) costs only its config: it is tried
    once more in a fresh worker, then compile_failed. Even a single uncached config compiles in a worker
    (where it has a timeout), not in this process."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    script = tmp_path / "script.py"
    script.write_text(_CRASH_SCRIPT)
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert sorted(res["failed"]) == ["BLOCK=1024,num_warps=1,num_stages=3", "BLOCK=1024,num_warps=4,num_stages=3"]
    assert all("worker died" in why for why in res["failed"].values())
    assert len(res["ok"]) == 4 and res["cached"] == [True, True, True, True]
    assert res["one_workers"] == 1 and res["one_ok"] == ["BLOCK=512,num_warps=4,num_stages=3"]


def test_a_pre_hook_that_sets_descriptor_blocks_is_compiled_in_workers_as_the_jit_will_see_it(tmp_path, monkeypatch):
    """Host TensorDescriptors get their block shape from each config's pre_hook (FlagGems' Hopper mm, Liger's
    SwiGLU): the workers must compile each config for the descriptors AFTER its hook, and the caller's
    descriptors must not be changed by the precompile."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    from kernels import desc_copy_kernel, set_desc_blocks
    from tritune.engine.precompile import hooked_arguments

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    x = torch.randn(128, 128, dtype=torch.float16)
    y = torch.empty_like(x)
    args = (TensorDescriptor.from_tensor(x, [1, 1]), TensorDescriptor.from_tensor(y, [1, 1]))
    cfgs = [Config({"BLOCK_M": m, "BLOCK_N": n}, pre_hook=set_desc_blocks) for m, n in ((32, 64), (64, 32))]
    target = cuda_target(90)
    names = list(desc_copy_kernel.arg_names)
    hooked = {c: hooked_arguments(names, c, args, {})[0] for c in cfgs}
    assert [list(hooked[c][0].block_shape) for c in cfgs] == [[32, 64], [64, 32]]
    assert [list(a.block_shape) for a in args] == [[1, 1], [1, 1]]  # the caller's descriptors are untouched
    specs = {c: specialize(desc_copy_kernel, hooked[c], c, target) for c in cfgs}
    assert len({s.cache_hash() for s in specs.values()}) == 2
    assert specs[cfgs[0]].signature["in_desc"] == "tensordesc<fp16[32, 64]>"
    assert specs[cfgs[1]].signature["out_desc"] == "tensordesc<fp16[64, 32]>"
    failed = precompile(desc_copy_kernel, cfgs, args, {}, target, jobs=2)
    assert failed == {}
    assert all(_cached(s) for s in specs.values())  # the binaries the JIT will look up after each hook
    unhooked = specialize(desc_copy_kernel, args, cfgs[0], target)
    assert not _cached(unhooked)  # nothing was compiled for the dummy [1, 1] blocks


def test_stacked_heuristics_compile_in_workers_with_each_configs_values(tmp_path, monkeypatch):
    """FlagGems' bmm, baddbmm and var_mean stack @triton.heuristics under the autotuner: each config's
    heuristic values differ (EVEN = n % BLOCK == 0), so the workers compile each config with its own values,
    computed in the parent (Autotuned.compile_plan). Before, these kernels compiled one config after another
    in the tuning process. Without the per-config values the specialization misses EVEN and fails."""
    import triton

    import tritune
    from kernels import even_scale_kernel

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    k = tritune.autotune([Config({"BLOCK": 32}), Config({"BLOCK": 64})], ["n"])(
        triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})(even_scale_kernel))
    x = torch.randn(96)
    args = (x, torch.empty_like(x), 96)
    _, kwargs_for = k.compile_plan(args, {})
    assert kwargs_for is not None
    assert [kwargs_for(c) for c in k.candidates] == [{"EVEN": True}, {"EVEN": False}]
    target = cuda_target(90)
    specs = {c: specialize(even_scale_kernel, args, c, target, kwargs_for(c)) for c in k.candidates}
    assert len({s.cache_hash() for s in specs.values()}) == 2 and not any(_cached(s) for s in specs.values())
    without = precompile(even_scale_kernel, k.candidates, args, {}, target, jobs=2)
    assert set(without) == set(k.candidates)  # EVEN missing: the old way could not compile these in workers
    assert precompile(even_scale_kernel, k.candidates, args, {}, target, jobs=2, kwargs_for=kwargs_for) == {}
    assert all(_cached(s) for s in specs.values())  # the binaries the JIT looks up for each config's values
