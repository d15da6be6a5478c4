import warnings

import pytest
import torch
import triton

import tritune
from kernels import scale_kernel
from tritune import Config


def make(configs=None, **kw):
    configs = configs or [Config({"BLOCK": 300}), triton.Config({"BLOCK": 256}, num_warps=2), Config({"BLOCK": 512})]
    return tritune.autotune(configs=configs, key=["n"], **kw)(scale_kernel)


def launch(k, n=1000):
    x = torch.randn(n)
    out = torch.empty_like(x)
    k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
    return x, out


def test_runs_first_legal_untuned_and_warns_once_per_kernel():
    k = make()
    with pytest.warns(tritune.UntunedWarning, match="no timing is possible without a GPU") as rec:
        x, out = launch(k)
        launch(k, 1000)
        launch(k, 2000)  # a new key: still no second warning for this kernel
    assert len([w for w in rec if issubclass(w.category, tritune.UntunedWarning)]) == 1
    assert torch.equal(out, x * 2)
    assert k.best_config == Config({"BLOCK": 256}, num_warps=2)  # BLOCK=300 is illegal, never launched
    assert {c.source for c in k.choices().values()} == {"untuned"}
    assert len(k.cache) == 2


def test_on_no_gpu_error_raises_timing_unavailable():
    k = make(on_no_gpu="error")
    with pytest.raises(tritune.TimingUnavailableError, match="tritune verify") as e:
        launch(k)
    assert isinstance(e.value, RuntimeError)


def test_env_var_selects_error(monkeypatch):
    monkeypatch.setenv("TRITUNE_ON_NO_GPU", "error")
    with pytest.raises(tritune.TimingUnavailableError):
        launch(make())


def test_bad_on_no_gpu_value():
    with pytest.raises(tritune.ConfigError, match="on_no_gpu"):
        make(on_no_gpu="maybe")


def test_unknown_key_name_is_an_error():
    with pytest.raises(tritune.WorkloadError, match="'m' are not parameters"):
        tritune.autotune(configs=[Config({"BLOCK": 256})], key=["m"])(scale_kernel)


def test_all_illegal_raises_with_reasons():
    k = make([Config({"BLOCK": 300}), Config({"BLOCK": 256}, num_warps=3)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", tritune.UntunedWarning)
        with pytest.raises(tritune.NoLegalConfigError) as e:
            launch(k)
    assert "power of 2" in str(e.value) and "num_warps=3" in str(e.value)


def test_configs_and_key_dtype_like_triton():
    k = make()
    assert isinstance(k.configs[1], triton.Config)  # the configs as given, as Triton keeps them
    assert k.candidates[1] == Config({"BLOCK": 256}, num_warps=2)
    with pytest.warns(tritune.UntunedWarning):
        launch(k, 100)
    (key,) = k.cache
    assert key == (100, "torch.float32", "torch.float32")


def test_untuned_warning_claims_nothing_unchecked():
    k = make()
    with pytest.warns(tritune.UntunedWarning) as rec:
        launch(k)
    msg = str(rec[0].message)
    assert "not timed" in msg and "not checked" in msg
    assert "correct to use" not in msg
