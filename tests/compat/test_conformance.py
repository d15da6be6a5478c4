"""Each pattern through ``triton.autotune`` and through ``tritune.autotune``, side by side on CPU: outputs,
the attributes callers read, and exception types must agree. Triton's timer is the FAKE of conftest.py."""

from __future__ import annotations

from typing import Any

import pytest
import torch
import triton
from kernels_compat import accumulate_kernel, add_kernel, bias_kernel, grid1, scale_kernel

import tritune

pytestmark = pytest.mark.filterwarnings("ignore::tritune.UntunedWarning")

CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)]
ENGINES = {"triton": triton.autotune, "tritune": tritune.autotune}


def both(**kw: Any) -> dict[str, Any]:
    """A decorator factory per engine, with the same triton.autotune arguments."""
    return {name: (lambda fn, make=make: make(**kw)(fn)) for name, make in ENGINES.items()}


def add_inputs(n: int = 300, dtype: torch.dtype = torch.float32) -> tuple[torch.Tensor, ...]:
    torch.manual_seed(0)
    return torch.randn(n).to(dtype), torch.randn(n).to(dtype), torch.empty(n, dtype=dtype)


def test_is_a_triton_autotuner_with_its_surface(fake_triton_bench: list[Any]) -> None:
    seen: dict[str, dict[str, Any]] = {}
    for name, deco in both(configs=CONFIGS, key=["n"]).items():
        k = deco(add_kernel)
        assert isinstance(k, triton.runtime.Autotuner)
        assert isinstance(k, triton.runtime.autotuner.Autotuner)
        x, y, out = add_inputs()
        k[grid1(300)](x, y, out, 300)
        assert torch.equal(out, x + y)
        assert isinstance(k.best_config, triton.Config)
        assert callable(k.pre_hook) and callable(k.post_hook) and callable(k.prune_configs)
        assert k.nargs is None  # reset after the call, as Triton does
        assert k.base_fn is add_kernel.fn
        assert k.fn is add_kernel and k.arg_names == add_kernel.arg_names and k.keys == ["n"]
        assert k.bench_time > 0  # seconds the last tuning took
        seen[name] = {
            "best": k.best_config.all_kwargs(),
            "cache": {key: c.all_kwargs() for key, c in k.cache.items()},
            "configs": k.configs,
            "attrs": {a: hasattr(k, a) for a in ("bench_time", "configs_timings", "cache_results", "warmup",
                                                 "reset_to_zero", "restore_value", "do_bench")},
        }
    assert seen["tritune"] == seen["triton"]
    assert seen["tritune"]["configs"] == CONFIGS


def test_cache_is_live_and_configs_assignable() -> None:
    k = tritune.autotune(configs=CONFIGS, key=["n"])(add_kernel)
    x, y, out = add_inputs()
    k[grid1(300)](x, y, out, 300)
    assert len(k.cache) == 1 and len(k.choices()) == 1
    k.cache.clear()
    assert k.choices() == {}
    only = triton.Config({"BLOCK": 32}, num_warps=1)
    k.configs = [only]  # as a user reassigns Triton's list: a lone config runs, untuned, and never enters the cache
    k[grid1(300)](x, y, out, 300)
    assert k.best_config is only and torch.equal(out, x + y)
    assert dict(k.cache) == {}
    k.configs = CONFIGS
    k[grid1(300)](x, y, out, 300)
    (key,) = k.cache
    forced = triton.Config({"BLOCK": 256}, num_warps=4)
    k.cache[key] = forced  # a caller forcing a config for a key: that very object is used
    k[grid1(300)](x, y, out, 300)
    assert k.best_config is forced and torch.equal(out, x + y)


class Entry(triton.KernelInterface):
    """A libentry-style wrapper (after FlagGems' pattern): walks the wrapper chain with isinstance checks,
    launches through ``.run(*args, grid=g, warmup=False)``, and keeps what that returns."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.arg_names = fn.arg_names
        self.returned: list[Any] = []
        self.constexprs: dict[str, Any] = {}

    def run(self, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        ret = self.fn.run(*args, grid=grid, warmup=warmup, **kwargs)
        self.returned.append(ret)
        fn = self.fn
        while not isinstance(fn, triton.runtime.JITFunction):
            if isinstance(fn, triton.runtime.Autotuner):
                cfg = fn.best_config
                self.constexprs.update(cfg.kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
            elif isinstance(fn, triton.runtime.Heuristics):
                pass
            elif not hasattr(fn, "fn"):
                raise RuntimeError("Invalid Runtime Function")
            fn = getattr(fn, "fn", None)
            if fn is None or type(fn).__name__ == "function":
                break
        return ret


def test_libentry_style_wrapper(fake_triton_bench: list[Any]) -> None:
    results = {}
    for name, deco in both(configs=CONFIGS, key=["n"]).items():
        entry = Entry(deco(add_kernel))
        x, y, out = add_inputs()
        entry[grid1(300)](x, y, out, 300)
        entry[grid1(300)](x, y, out, 300)
        results[name] = (out.clone(), entry.constexprs, entry.returned)
    assert torch.equal(results["tritune"][0], results["triton"][0])
    assert results["tritune"][1] == results["triton"][1]
    assert results["tritune"][2] == results["triton"][2]  # what run returns (None under the interpreter)


def test_run_returns_what_the_jit_run_returns() -> None:
    k = tritune.autotune(configs=CONFIGS, key=["n"])(add_kernel)
    sentinel = object()

    class FakeLauncher:  # a FAKE JIT launcher: returns a sentinel as the JIT returns its compiled kernel
        arg_names = add_kernel.arg_names

        def run(self, *args: Any, grid: Any, warmup: Any, **kwargs: Any) -> Any:
            return sentinel

    k._runner = FakeLauncher()
    x, y, out = add_inputs()
    assert k.run(x, y, out, 300, grid=grid1(300), warmup=False) is sentinel


@pytest.mark.parametrize("order", ["autotune_over_heuristics", "heuristics_over_autotune"])
def test_stacks_with_heuristics(order: str, fake_triton_bench: list[Any]) -> None:
    outs = {}
    for name, deco in both(configs=CONFIGS, key=["n"]).items():
        if order == "autotune_over_heuristics":  # the heuristic sees the config's BLOCK
            k = deco(triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})(scale_kernel))
        else:
            k = triton.heuristics({"EVEN": lambda a: a["n"] % 64 == 0})(deco(scale_kernel))
        outs[name] = []
        for n in (256, 300):
            x, _, out = add_inputs(n)
            k[grid1(n)](x, out, n, FACTOR=3)
            outs[name].append(out.clone())
            assert torch.equal(out, x * 3)
    assert all(torch.equal(a, b) for a, b in zip(outs["tritune"], outs["triton"]))


def test_reset_to_zero_accumulates_twice_to_2x(fake_triton_bench: list[Any]) -> None:
    accs = {}
    for name, deco in both(configs=CONFIGS, key=["n"], reset_to_zero=["acc_ptr"]).items():
        k = deco(accumulate_kernel)
        x = torch.arange(300, dtype=torch.float32)
        acc = torch.full((300,), 7.0)
        k[grid1(300)](x, acc, 300)  # tuning: acc is zeroed before each benchmark run and once after
        k[grid1(300)](x, acc, 300)  # cached: no reset, the kernel accumulates
        accs[name] = acc
    assert torch.equal(accs["triton"], 2 * torch.arange(300, dtype=torch.float32))
    assert torch.equal(accs["tritune"], accs["triton"])


def test_restore_value_leaves_one_update(fake_triton_bench: list[Any]) -> None:
    accs = {}
    for name, deco in both(configs=CONFIGS, key=["n"], restore_value=["acc_ptr"]).items():
        k = deco(accumulate_kernel)
        x = torch.ones(300)
        acc = torch.full((300,), 5.0)
        k[grid1(300)](x, acc, 300)
        accs[name] = acc
    assert torch.equal(accs["triton"], torch.full((300,), 6.0))
    assert torch.equal(accs["tritune"], accs["triton"])


def test_none_argument_with_reset_to_zero(fake_triton_bench: list[Any]) -> None:
    outs = {}
    for name, deco in both(configs=CONFIGS, key=["n"], reset_to_zero=["bias_ptr"]).items():
        k = deco(bias_kernel)
        x, _, out = add_inputs()
        k[grid1(300)](x, None, out, 300, HAS_BIAS=False)
        outs[name] = out
        assert torch.equal(out, x)
    assert torch.equal(outs["tritune"], outs["triton"])


def test_launch_options_inside_the_kwargs_dict(fake_triton_bench: list[Any]) -> None:
    configs = [triton.Config({"BLOCK": 64, "num_warps": 8, "num_stages": 4}), triton.Config({"BLOCK": 128})]
    best = {}
    for name, deco in both(configs=configs, key=["n"]).items():
        k = deco(add_kernel)  # Triton accepts it at decoration; so must tritune
        x, y, out = add_inputs()
        k[grid1(300)](x, y, out, 300)
        assert torch.equal(out, x + y)
        best[name] = k.best_config.all_kwargs()
    assert best["tritune"] == best["triton"]  # Triton's all_kwargs(): the attributes win over the dict


def test_early_prune_that_adds_and_reorders(fake_triton_bench: list[Any]) -> None:
    new = triton.Config({"BLOCK": 32}, num_warps=1)

    def prune(configs: list[Any], nargs: dict[str, Any], **kwargs: Any) -> list[Any]:
        assert "x_ptr" in nargs
        return [new, *reversed(configs)]

    best = {}
    for name, deco in both(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": prune}).items():
        k = deco(add_kernel)
        x, y, out = add_inputs()
        k[grid1(300)](x, y, out, 300)
        assert torch.equal(out, x + y)
        best[name] = k.best_config.all_kwargs()
        k.nargs = {"x_ptr": x}  # Triton's prune_configs(kwargs) reads the named arguments from nargs
        assert k.prune_configs({})[0] is new
    assert best["tritune"] == best["triton"] == new.all_kwargs()


def test_perf_model_top_k(fake_triton_bench: list[Any]) -> None:
    configs = [triton.Config({"BLOCK": b}) for b in (32, 64, 128, 256)]
    prune = {"perf_model": lambda **kw: -kw["BLOCK"], "top_k": 2}
    best = {}
    for name, deco in both(configs=configs, key=["n"], prune_configs_by=prune).items():
        k = deco(add_kernel)
        x, y, out = add_inputs()
        k[grid1(300)](x, y, out, 300)
        best[name] = k.best_config.kwargs
    assert best["tritune"] == best["triton"] == {"BLOCK": 256}


def test_keyword_tensors_of_two_dtypes_get_two_entries(fake_triton_bench: list[Any]) -> None:
    caches = {}
    for name, deco in both(configs=CONFIGS, key=["n"]).items():
        k = deco(add_kernel)
        for dtype in (torch.float32, torch.float16):
            x, y, out = add_inputs(dtype=dtype)
            k[grid1(300)](x_ptr=x, y_ptr=y, out_ptr=out, n=300)
            assert torch.equal(out, x + y)
        caches[name] = set(k.cache)
    assert len(caches["triton"]) == 2
    assert caches["tritune"] == caches["triton"]


@pytest.mark.parametrize("configs", [CONFIGS, CONFIGS[:1]], ids=["several", "one"])
def test_conflicting_meta_parameter(configs: list[Any], fake_triton_bench: list[Any]) -> None:
    errors = {}
    for name, deco in both(configs=configs, key=["n"]).items():
        k = deco(add_kernel)
        x, y, out = add_inputs()
        with pytest.raises(Exception) as e:
            k[grid1(300)](x, y, out, 300, BLOCK=64)
        errors[name] = type(e.value)
        if len(configs) > 1:
            assert "Conflicting meta-parameters: BLOCK" in str(e.value)
    assert errors["tritune"] is errors["triton"]


def test_empty_config_list_uses_triton_default(fake_triton_bench: list[Any]) -> None:
    best = {}
    for name, deco in both(configs=[], key=["n"]).items():
        k = deco(add_kernel)
        x, y, out = add_inputs()
        k[grid1(300)](x, y, out, 300, BLOCK=128)
        assert torch.equal(out, x + y)
        best[name] = k.best_config.all_kwargs()
    assert best["tritune"] == best["triton"]


def test_positional_arguments_and_use_cuda_graph() -> None:
    k = tritune.autotune(CONFIGS, ["n"], None, ["out_ptr"], use_cuda_graph=True)(add_kernel)
    assert k.reset_to_zero == ["out_ptr"] and k.use_cuda_graph
    x, y, out = add_inputs()
    k[grid1(300)](x, y, out, 300)
    assert torch.equal(out, x + y)


def test_unknown_reset_name_names_the_kernel_and_unknown_prune_entries_are_ignored() -> None:
    with pytest.raises(ValueError, match=r"add_kernel.*parameters"):
        tritune.autotune(CONFIGS, ["n"], reset_to_zero=["nope"])(add_kernel)
    # As Triton: only perf_model, top_k and early_config_prune are read (torch.compile passes configs_top_k).
    k = tritune.autotune(CONFIGS, ["n"], prune_configs_by={"early_prune": None, "configs_top_k": 0.5})(add_kernel)
    assert (k.perf_model, k.configs_top_k, k.early_config_prune) == (None, 1.0, None)


def test_warmup_compiles_every_pruned_config() -> None:
    k = tritune.autotune(CONFIGS, ["n"])(add_kernel)
    x, y, out = add_inputs()
    assert len(k.warmup(x, y, out, 300, grid=(1,))) == 2


def test_heuristics_under_the_decorator_recomputed_per_call_on_the_fast_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU-only fast path for @autotune over @heuristics, driven on CPU with a FAKE fast launcher that
    launches through the interpreter: heuristic values are recomputed for every call and select their own
    launcher, so EVEN (n % BLOCK == 0) is right for n = 256 and n = 320, which share one tuning key."""
    import tritune.decorator.autotuned as autotune_module

    built: list[dict[str, Any]] = []

    def fake_make_fast_kw(jit: Any, cfg: Any, args: Any, kwargs: Any, defaults: Any) -> Any:
        built.append(dict(kwargs))
        return lambda a, kw, grid: jit.run(*a, grid=grid, warmup=False, **kw, **cfg.kwargs, **cfg.launch_options())

    monkeypatch.setattr(autotune_module, "make_fast_kw", fake_make_fast_kw)
    k = tritune.autotune([triton.Config({"BLOCK": 128})], [])(
        triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0})(scale_kernel))
    k._heur_fast = True  # as on a GPU
    for n in (256, 320, 256, 320):
        x, _, out = add_inputs(n)
        out.fill_(-1.0)
        k[grid1(n)](x, out, n, FACTOR=2)
        assert torch.equal(out, x * 2), n
    # the first call tunes (Triton's path); then one launcher per heuristic value, each built once and reused
    assert [b["EVEN"] for b in built] == [False, True]


def test_prune_to_nothing_raises_autotuner_error(fake_triton_bench: list[Any]) -> None:
    errors = {}
    for name, deco in both(configs=CONFIGS, key=["n"], prune_configs_by={"early_config_prune": lambda c, a, **k: []}
                           ).items():  # fmt: skip
        k = deco(add_kernel)
        x, y, out = add_inputs()
        with pytest.raises(Exception) as e:
            k[grid1(300)](x, y, out, 300)
        errors[name] = type(e.value)
    assert errors["tritune"] is errors["triton"] is triton.runtime.errors.AutotunerError


def test_hooks_see_what_triton_gives_them(fake_triton_bench: list[Any]) -> None:
    seen: dict[str, dict[str, set[str]]] = {}
    for name in ENGINES:
        log: dict[str, set[str]] = {}

        def cfg_hook(nargs: dict[str, Any], log: dict[str, set[str]] = log) -> None:
            log.setdefault("config.pre_hook", set()).update(nargs)

        def pre(nargs: dict[str, Any], reset_only: bool = False, log: dict[str, set[str]] = log) -> None:
            log.setdefault("pre_hook", set()).update(nargs)

        def post(nargs: dict[str, Any], exception: Any, log: dict[str, set[str]] = log) -> None:
            log.setdefault("post_hook", set()).update(nargs)

        configs = [triton.Config({"BLOCK": 64}, pre_hook=cfg_hook), triton.Config({"BLOCK": 128}, pre_hook=cfg_hook)]
        k = ENGINES[name](configs=configs, key=["n"], pre_hook=pre, post_hook=post)(add_kernel)
        x, y, out = add_inputs()
        k[grid1(300)](x, y, out, 300)
        assert torch.equal(out, x + y)
        seen[name] = log
    assert seen["triton"]["config.pre_hook"] >= {"x_ptr", "n", "BLOCK", "num_warps"}
    for hook in ("config.pre_hook", "pre_hook"):
        assert seen["tritune"][hook] >= {"x_ptr", "y_ptr", "out_ptr", "n", "BLOCK", "num_warps", "num_stages"}, hook
    assert "pre_hook" in seen["triton"]  # Triton calls it (reset_only) after benchmarking, before the launch


def test_user_functions_get_triton_configs_even_from_tritune_configs() -> None:
    seen: list[Any] = []

    def prune(configs: list[Any], nargs: dict[str, Any], **kwargs: Any) -> list[Any]:
        seen.extend(configs)
        return [c for c in configs if c.all_kwargs()["BLOCK"] == 128]

    k = tritune.autotune([tritune.Config({"BLOCK": 64}), tritune.Config({"BLOCK": 128})], ["n"],
                         prune_configs_by={"early_config_prune": prune})(add_kernel)  # fmt: skip
    x, y, out = add_inputs()
    k[grid1(300)](x, y, out, 300)
    assert all(isinstance(c, triton.Config) for c in seen) and len(seen) == 2
    assert k.best_config == tritune.Config({"BLOCK": 128}) and torch.equal(out, x + y)
    assert k.configs == [tritune.Config({"BLOCK": 64}), tritune.Config({"BLOCK": 128})]


@pytest.mark.parametrize("bad", ["missing_argument", "constexpr_twice"])
def test_bad_calls_raise_tritons_exception_types(bad: str, fake_triton_bench: list[Any]) -> None:
    errors = {}
    for name, deco in both(configs=CONFIGS, key=["n"]).items():
        k = deco(add_kernel)
        x, y, out = add_inputs()
        with pytest.raises(Exception) as e:
            if bad == "missing_argument":
                k[grid1(300)](x, y, out)
            else:  # BLOCK positionally, and from the config
                k[grid1(300)](x, y, out, 300, 64)
        errors[name] = (type(e.value), str(e.value))
    assert errors["tritune"] == errors["triton"]


def test_heuristics_positional_fast_path_keeps_per_call_values_and_follows_the_cache(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Positional calls under @heuristics find their choice by the generated call key and launch
    through a launcher holding the heuristics' values as constants; driven on CPU with a FAKE
    fast launcher that launches through the interpreter. Heuristic values are still computed
    per call (EVEN differs for n = 256 and 320, one tuning key), and setting ``kernel.cache[key]`` makes the
    next call use that config, as under Triton."""
    import tritune.decorator.autotuned as autotune_module

    built: list[tuple[dict[str, Any], dict[str, Any]]] = []

    def fake_make_fast_const(jit: Any, cfg: Any, args: Any, consts: Any, defaults: Any) -> Any:
        built.append((dict(consts), dict(cfg.kwargs)))
        return lambda a, grid: jit.run(*a, grid=grid, warmup=False, **consts, **cfg.kwargs, **cfg.launch_options())

    monkeypatch.setattr(autotune_module, "make_fast_const", fake_make_fast_const)
    heur = {"EVEN": lambda a: a["n"] % a["BLOCK"] == 0, "FACTOR": lambda a: 3}
    k = tritune.autotune([triton.Config({"BLOCK": 128}), triton.Config({"BLOCK": 64})], [])(
        triton.heuristics(heur)(scale_kernel))
    k._heur_fast = True  # as on a GPU
    for n in (256, 320, 256, 320):
        x, _, out = add_inputs(n)
        out.fill_(-1.0)
        k[grid1(n)](x, out, n)
        assert torch.equal(out, x * 3), n
    assert [(b[0]["EVEN"], b[1]["BLOCK"]) for b in built] == [(False, 128), (True, 128)]
    first = k.best_config.kwargs["BLOCK"]
    (key,) = k.choices()
    k.cache[key] = triton.Config({"BLOCK": 64})
    x, _, out = add_inputs(320)
    k[grid1(320)](x, out, 320)
    assert torch.equal(out, x * 3)
    assert first == 128 and k.best_config.kwargs["BLOCK"] == 64


def test_heuristics_positional_fast_path_computes_one_generated_key_per_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Cached positional calls under @heuristics build neither the generic call key nor a second key over the
    heuristics' keywords (an identity test on a bound method never matched, so every call built the
    generic key, ~3 us on the H200). FAKE fast launcher as above; the generic keys are counted."""
    import tritune.decorator.autotuned as autotune_module

    monkeypatch.setattr(autotune_module, "make_fast_const", lambda jit, cfg, args, consts, defaults: (
        lambda a, grid: jit.run(*a, grid=grid, warmup=False, **consts, **cfg.kwargs, **cfg.launch_options())))
    from tritune.decorator.keys import KeySpec

    generic: list[str] = []
    for name in ("call_key", "kw_call_key"):
        real = getattr(KeySpec, name)
        monkeypatch.setattr(KeySpec, name, lambda *a, _real=real, _name=name: (generic.append(_name), _real(*a))[1])
    k = tritune.autotune([triton.Config({"BLOCK": 128})], ["n"])(
        triton.heuristics({"EVEN": lambda a: a["n"] % a["BLOCK"] == 0, "FACTOR": lambda a: 3})(scale_kernel))
    k._heur_fast = True  # as on a GPU
    x, _, out = add_inputs(256)
    k[grid1(256)](x, out, 256)  # tunes: Triton's path
    generic.clear()
    for _ in range(3):
        out.fill_(-1.0)
        k[grid1(256)](x, out, 256)
        assert torch.equal(out, x * 3)
    assert generic == [], generic
