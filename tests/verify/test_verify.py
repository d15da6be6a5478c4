import json
from typing import Any

import pytest
import torch
import triton

import tritune
from kernels import (
    asm_kernel,
    elementwise_workload,
    half_writer_kernel,
    rowsum_workload,
    scale_kernel,
    wrong_value_kernel,
)
from tritune import Config, Status


def statuses(report):
    return [c.status for c in report.workloads[0].candidates]


def test_all_correct_and_bitwise_identical():
    r = tritune.verify(elementwise_workload("scale", scale_kernel))
    assert statuses(r) == [Status.CORRECT] * 3
    assert r.ok and r.workloads[0].extra["bitwise_identical"] is True
    assert "no timing" in r.timing and "interpreter" in r.timing


def test_unwritten_elements_are_caught_even_after_a_correct_candidate():
    # BLOCK=256 runs first and writes every element; the buffer is poisoned again before BLOCK=512.
    r = tritune.verify(elementwise_workload("half", half_writer_kernel))
    c256, c512, _c1024 = r.workloads[0].candidates
    assert c256.status is Status.CORRECT
    assert c512.status is Status.INCORRECT and c512.extra["unwritten"] > 0
    assert "never written" in c512.reason
    assert not r.ok


def test_wrong_value_is_incorrect_with_error_size():
    r = tritune.verify(elementwise_workload("wrong", wrong_value_kernel))
    bad = r.workloads[0].candidates[2]
    assert bad.status is Status.INCORRECT and bad.extra["unwritten"] == 0
    assert bad.extra["max_abs_error"] > 0.1 and "differ beyond" in bad.reason


def test_interpreter_limitation_is_error_not_incorrect():
    r = tritune.verify(elementwise_workload("asm", asm_kernel, blocks=(256,)))
    (c,) = r.workloads[0].candidates
    assert c.status is Status.ERROR
    assert "interpreter" in c.reason and "says nothing about the kernel on a GPU" in c.reason


def test_illegal_candidates_never_run():
    w = tritune.Workload(
        name="mixed",
        kernel=scale_kernel,
        configs=[Config({"BLOCK": 300}), Config({"BLOCK": 256}, num_warps=3), Config({"BLOCK": 256})],
        args=lambda key, device: (torch.randn(1000), torch.empty(1000), 1000),
        grid=lambda meta, key: (triton.cdiv(1000, meta["BLOCK"]),),
        outputs=[1],
        oracle=lambda args: [args[0] * 2],
        keys=[{}],
    )
    cands = tritune.verify(w).workloads[0].candidates
    assert [c.status for c in cands] == [Status.ILLEGAL, Status.ILLEGAL, Status.CORRECT]
    assert "power of 2" in cands[0].reason and "num_warps=3" in cands[1].reason


def test_constraint_violation_is_illegal():
    space = tritune.Space({"BLOCK": [256, 512]}, constraints=[tritune.Constraint("small", lambda c: c["BLOCK"] < 512)])
    w = elementwise_workload("c", scale_kernel)
    w2 = tritune.Workload(name="c", kernel=scale_kernel, configs=space, args=w.args, grid=w.grid,
                          outputs=[1], oracle=w.oracle, keys=w.keys)
    cands = tritune.verify(w2).workloads[0].candidates
    assert [c.status for c in cands] == [Status.CORRECT, Status.ILLEGAL]
    assert "small" in cands[1].reason


def test_correct_but_not_bitwise_identical_groups():
    r = tritune.verify(rowsum_workload())
    e = r.workloads[0]
    assert all(c.status is Status.CORRECT for c in e.candidates)
    assert e.extra["bitwise_identical"] is False and len(e.extra["groups"]) >= 2


def test_oracle_sees_pristine_inputs_for_in_place_kernels():
    # out == x (in place): the oracle must see x before any kernel ran, and every candidate gets x back.
    w = tritune.Workload(
        name="inplace",
        kernel=scale_kernel,
        configs=[Config({"BLOCK": 256}), Config({"BLOCK": 512})],
        args=lambda key, device: (lambda x: (x, x, 1000))(torch.randn(1000)),
        grid=lambda meta, key: (triton.cdiv(1000, meta["BLOCK"]),),
        outputs=[1],
        oracle=lambda args: [args[0] * 2],
        keys=[{}],
    )
    # The output aliases the input, so it is not poisoned (that would destroy the input); the input is
    # restored before each candidate, so the second one does not double an already-doubled x.
    assert all(c.status is Status.CORRECT for c in tritune.verify(w).workloads[0].candidates)


def test_json_shape():
    r = tritune.verify(elementwise_workload("scale", scale_kernel))
    d = json.loads(r.dumps())
    assert d["tritune"] == tritune.__version__ and d["command"] == "verify" and "no timing" in d["timing"]
    (entry,) = d["workloads"]
    assert entry["name"] == "scale" and entry["key"] == {"n": 3000} and entry["bitwise_identical"] is True
    c = entry["candidates"][0]
    assert c == {
        "config": {"kwargs": {"BLOCK": 256}, "num_warps": 4, "num_stages": 3},
        "status": "correct",
        "reason": None,
        "max_abs_error": 0.0,
        "unwritten": 0,
    }
    assert tritune.RunResult.from_json(d).to_json() == d


def test_no_oracle_labels_agreement_groups_not_correctness():
    w = elementwise_workload("noora", wrong_value_kernel)
    w2 = tritune.Workload(name="noora", kernel=wrong_value_kernel, configs=w.configs, args=w.args, grid=w.grid,
                          outputs=[1], keys=w.keys)
    report = tritune.verify(w2)
    e = report.workloads[0]
    assert [c.status for c in e.candidates] == [Status.COMPARED] * 3
    assert [c.extra["agreement_group"] for c in e.candidates] == [1, 1, 2]
    assert e.extra["agreement_groups"] == [["BLOCK=256,num_warps=4,num_stages=3", "BLOCK=512,num_warps=4,num_stages=3"],
                                           ["BLOCK=1024,num_warps=4,num_stages=3"]]
    assert e.extra["reference"] is None and e.extra["oracle"] is False
    assert not report.ok and len(report.failures) == 3  # a disagreement fails every candidate of the key


def test_workload_validation_messages():
    with pytest.raises(tritune.WorkloadError, match=r"not a @triton\.jit kernel"):
        tritune.Workload(name="x", kernel=lambda: 0, configs=[Config()], args=lambda k, d: (), grid=lambda m, k: (1,))
    with pytest.raises(tritune.WorkloadError, match="outputs"):
        tritune.Workload(name="x", kernel=scale_kernel, configs=[Config()], args=lambda k, d: (),
                         grid=lambda m, k: (1,), oracle=lambda a: [])


def _configs_workload(kernel, configs, **kw):
    import dataclasses

    return dataclasses.replace(elementwise_workload("w", kernel, **kw), configs=configs)


def _counting_runs(monkeypatch):
    import importlib

    run = importlib.import_module("tritune.verify.run")  # tritune.verify is also the function
    runs = []
    real = run.check_candidate

    def counted(workload, key, cfg, *a, **kw):
        runs.append(cfg.id)
        return real(workload, key, cfg, *a, **kw)

    monkeypatch.setattr(run, "check_candidate", counted)
    return runs


def test_the_interpreter_runs_configs_that_differ_only_in_launch_options_once(monkeypatch):
    runs = _counting_runs(monkeypatch)
    configs = [Config({"BLOCK": b}, num_warps=w, num_stages=s) for b in (256, 1024) for w in (2, 4) for s in (1, 3)]
    r = tritune.verify(_configs_workload(wrong_value_kernel, configs))
    assert len(runs) == 2  # one per BLOCK
    by_block = {}
    for c in r.workloads[0].candidates:
        by_block.setdefault(c.config.kwargs["BLOCK"], []).append(c)
    assert all(c.status is Status.CORRECT for c in by_block[256])
    assert all(c.status is Status.INCORRECT and c.config.id in c.reason for c in by_block[1024])
    assert r.workloads[0].extra["groups"] == [[c.config.id for c in by_block[256]]]
    assert "6 candidates that differ from another only in those were not run again" in r.timing


def test_each_config_is_still_checked_for_legality_and_a_hook_runs_every_config(monkeypatch):
    runs = _counting_runs(monkeypatch)
    configs = [Config({"BLOCK": 256}, num_warps=w) for w in (2, 3, 4)]  # num_warps=3 is illegal
    r = tritune.verify(_configs_workload(scale_kernel, configs))
    assert statuses(r) == [Status.CORRECT, Status.ILLEGAL, Status.CORRECT] and len(runs) == 1
    runs.clear()
    hooked = _configs_workload(scale_kernel, configs, pre_hook=lambda nargs: None)
    assert statuses(tritune.verify(hooked)) == [Status.CORRECT, Status.ILLEGAL, Status.CORRECT]
    assert len(runs) == 2  # a pre_hook sees num_warps: each config runs


def test_allow_illegal_passes_illegal_but_not_incorrect():
    ok = tritune.verify(_configs_workload(scale_kernel, [Config({"BLOCK": b}) for b in (256, 300)]))
    assert not ok.ok and ok.passes(allow_illegal=True) and not ok.passes()
    bad = tritune.verify(_configs_workload(wrong_value_kernel, [Config({"BLOCK": b}) for b in (1024, 300)]))
    assert not bad.passes(allow_illegal=True)


def test_perturbed_inputs_refill_floating_tensors_on_their_device_reproducibly() -> None:
    """The output check's second and third inputs: every floating tensor refilled from the seed (the same values for
    the same seed, others for another, at the seed's scale, a quarter of them zero), in its own dtype, device and
    strides; integer tensors and plain values kept; a broadcast tensor (stride 0) refilled through its storage."""
    from tritune.verify.reference import perturbed_inputs

    x = torch.ones(64, 96, dtype=torch.float16)
    t = torch.ones(96, 64, dtype=torch.bfloat16).t()  # not contiguous
    idx = torch.arange(10)
    bias = torch.ones(8).expand(4, 8)
    a = perturbed_inputs([x, t, idx, bias, 7], seed=1)
    b = perturbed_inputs([x, t, idx, bias, 7], seed=1)
    c = perturbed_inputs([x, t, idx, bias, 7], seed=2)
    assert all(torch.equal(p, q) for p, q in zip(a[:4], b[:4])) and a[4] == 7
    assert not torch.equal(a[0], c[0])
    assert a[0].dtype == torch.float16 and a[0].device == x.device
    assert a[1].dtype == torch.bfloat16 and a[1].stride() == t.stride()
    assert a[2] is idx
    assert a[3].stride() == (0, 1) and torch.equal(a[3][0], a[3][3])
    zeros = (a[0] == 0).float().mean().item()
    assert 0.2 < zeros < 0.3
    big, small = a[0].float().abs().max().item(), c[0].float().abs().max().item()
    assert big > 16 and small < 1  # 16x the unit scale for seed 1, 1/16 for seed 2


def test_fill_kernel_draws_seeded_values_with_zeros_in_the_tensors_dtype() -> None:
    """The output check's GPU values come from tritune's own Triton kernel (run here by the interpreter on CPU
    tensors): the same values for the same seed, others for another, normal at the given scale, the given share
    zero, stored in the tensor's dtype, and not one element past the end (a tail shorter than a block)."""
    from tritune.verify.fill import BLOCK, fill_normal

    n = 3 * BLOCK + 37
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        buf = torch.full((n + 5,), 7.0, dtype=dtype)
        fill_normal(buf[:n], seed=11, scale=2.0, zeros=0.25)
        again = torch.full((n,), 7.0, dtype=dtype)
        fill_normal(again, seed=11, scale=2.0, zeros=0.25)
        other = torch.full((n,), 7.0, dtype=dtype)
        fill_normal(other, seed=12, scale=2.0, zeros=0.25)
        assert torch.equal(buf[:n], again) and not torch.equal(again, other)
        assert torch.equal(buf[n:], torch.full((5,), 7.0, dtype=dtype))  # past the end: untouched
        vals = again.float()
        assert not (vals == 7.0).any()
        assert 0.2 < (vals == 0).float().mean().item() < 0.3
        nonzero = vals[vals != 0]
        assert abs(nonzero.mean().item()) < 0.15 and 1.8 < nonzero.std().item() < 2.2  # normal, times 2


def test_perturbed_inputs_use_the_fill_kernel_on_a_gpu_never_torchs_random_ops(monkeypatch: Any) -> None:
    """Labelled fake: a tensor that says it lives on a CUDA device (a CPU tensor, the kernel run by the interpreter)
    is refilled by tritune's kernel, whatever torch's random ops do; a library's overrides of them (here: ops that
    raise) are never called."""
    from tritune.verify import reference

    x = torch.ones(40, 50)
    calls: list[tuple[int, float]] = []

    def fake_is_cuda(t: Any) -> bool:
        return True

    import tritune.verify.fill as fill

    real = fill.fill_normal

    def recording(flat: Any, seed: int, scale: float, zeros: float) -> None:
        calls.append((flat.numel(), scale))
        real(flat, seed, scale, zeros)

    def refuse(*a: Any, **k: Any) -> Any:
        raise AssertionError("the check drew with torch's random ops")

    monkeypatch.setattr(fill, "fill_normal", recording)
    monkeypatch.setattr(reference, "on_gpu", fake_is_cuda)
    monkeypatch.setattr(torch, "randn", refuse)
    monkeypatch.setattr(torch, "rand", refuse)
    a = reference.perturbed_inputs([x], seed=1)
    assert calls == [(2000, 16.0)] and a[0].shape == x.shape and (a[0] == 0).any()


def test_output_check_prepares_once_from_the_snapshot_and_a_check_waits_for_it(monkeypatch: Any) -> None:
    """OutputCheck.prepare, run on a helper thread as beside a key's compiles: the perturbed inputs come from the
    call's arguments as they were when the check was made (a later write to them changes nothing), are made once,
    and a check that starts while they are being made waits for them (labelled fake: a slow perturbed_inputs, and
    plain torch code as the kernel). A generated config that disagrees on them is still refused."""
    import threading
    import time

    from tritune.config import Config
    from tritune.outcome import Status
    from tritune.verify import reference

    x, idx, out = torch.arange(8, dtype=torch.float32), torch.tensor([3, 1]), torch.zeros(2)
    ref, gen = Config({"B": 1}), Config({"B": 2})

    def launch(cfg: Any, a: list[Any]) -> None:  # out = x[idx] * 2, whichever the config
        a[2].copy_(a[0][a[1]] * 2)

    seen: list[list[int]] = []
    real = reference.perturbed_inputs

    def slow(args: Any, seed: int) -> list[Any]:
        seen.append(args[1].tolist())
        time.sleep(0.2)
        return real(args, seed)

    monkeypatch.setattr(reference, "perturbed_inputs", slow)
    names = ["x", "idx", "out"]
    check = reference.OutputCheck("k", launch, [x, idx, out], names, exact=False, references=[ref], only=[gen])
    idx[0] = 7  # the caller's arguments change after the snapshot
    helper = threading.Thread(target=check.prepare)
    helper.start()
    time.sleep(0.05)
    assert check.check(gen) is None
    assert seen == [[3, 1], [3, 1]]  # both perturbed inputs were made before the check compared anything
    helper.join()
    check.prepare()
    assert len(seen) == 2 and check.summary()["inputs"] == 3 and check.summary()["passed"] == [gen.id]

    def wrong_on_perturbed(cfg: Any, a: list[Any]) -> None:  # right on the call's arguments only
        a[2].copy_(a[0][a[1]] * (2 if cfg == ref or a[0].sum() == 28 else 3))

    other = reference.OutputCheck("k", wrong_on_perturbed, [x, idx, out], names, exact=False, references=[ref],
                                  only=[gen])  # fmt: skip
    got = other.check(gen)
    assert got is not None and got[0] is Status.INCORRECT and "perturbed input 1" in got[1]
