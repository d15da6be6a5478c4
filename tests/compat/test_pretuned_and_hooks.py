"""Pretuned files that cannot serve a kernel, and when a Config.pre_hook runs relative to the checks made before launch."""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch
import triton
import triton.language as tl
from kernels_compat import add_kernel, grid1

import tritune
from tritune import Config

pytestmark = pytest.mark.filterwarnings("ignore::tritune.UntunedWarning")


class FakePretuned:
    """A FAKE pretuned layer: serves one fixed winner for every key (the real one reads an export file)."""

    def __init__(self, config: Config) -> None:
        self.config = config

    def resolve(self, key: Any) -> Any:
        return SimpleNamespace(config=self.config, key=SimpleNamespace(device="fake-device"))


def with_pretuned(configs: list[Any], winner: Config, **kw: Any) -> Any:
    k = tritune.autotune(configs, ["n"], **kw)(add_kernel)
    k.tuner.pretuned = "fake.json"
    k.tuner._pretuned = FakePretuned(winner)
    return k


def call(k: Any, n: int = 300) -> torch.Tensor:
    x, y = torch.randn(n), torch.randn(n)
    out = torch.empty(n)
    k[grid1(n)](x, y, out, n)
    assert torch.equal(out, x + y)
    return out


def test_pretuned_winner_served_when_legal() -> None:
    k = with_pretuned([Config({"BLOCK": 64}), Config({"BLOCK": 128})], Config({"BLOCK": 128}))
    call(k)
    assert [c.source for c in k.choices().values()] == ["pretuned"]
    assert k.best_config == Config({"BLOCK": 128})


@pytest.mark.parametrize("why", ["pruned", "illegal"])
def test_pretuned_winner_outside_the_pruned_legal_list_is_ignored_with_one_warning(why: str) -> None:
    if why == "pruned":  # removed by the user's early_config_prune for this call (two are left: one would be used)
        configs = [Config({"BLOCK": 64}), Config({"BLOCK": 128}), Config({"BLOCK": 256})]
        k = with_pretuned(configs, Config({"BLOCK": 64}),
                          prune_configs_by={"early_config_prune": lambda cs, nargs, **kw: cs[1:]})  # fmt: skip
    else:  # listed, but tl.arange needs a power of 2: every launch would fail
        configs = [Config({"BLOCK": 300}), Config({"BLOCK": 128})]
        k = with_pretuned(configs, Config({"BLOCK": 300}))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        call(k, 300)
        call(k, 600)  # another key: no second warning
    ignored = [w for w in rec if issubclass(w.category, tritune.PretunedIgnoredWarning)]
    assert len(ignored) == 1 and "ignored" in str(ignored[0].message)
    assert k.best_config == Config({"BLOCK": 128})
    assert {c.source for c in k.choices().values()} == {"untuned"}


def test_pretuned_file_errors_surface_at_decoration(tmp_path: Path) -> None:
    bad = tmp_path / "pretuned.json"
    bad.write_text("{not json")
    for path in (bad, tmp_path / "missing.json"):
        with pytest.raises(tritune.StoreError, match=str(path.name)):
            tritune.autotune([Config({"BLOCK": 64})], ["n"], pretuned=path)(add_kernel)


def test_config_pre_hook_runs_before_the_front_end_check(monkeypatch: pytest.MonkeyPatch) -> None:
    order: list[str] = []

    def hook(nargs: dict[str, Any]) -> None:
        assert nargs["BLOCK"] == 64 and "x_ptr" in nargs
        order.append("pre_hook")

    specialize = importlib.import_module("tritune.screen.specialize")
    real = specialize.frontend_rejection

    def spy(*args: Any, **kwargs: Any) -> Any:  # a spy: records the order, then runs the real check
        order.append("front_end")
        return real(*args, **kwargs)

    monkeypatch.setattr(specialize, "frontend_rejection", spy)
    configs = [triton.Config({"BLOCK": 64}, pre_hook=hook), triton.Config({"BLOCK": 128})]  # a lone config is not checked
    k = tritune.autotune(configs, ["n"])(add_kernel)
    call(k)
    assert order[:3] == ["pre_hook", "front_end", "pre_hook"]  # before the check, and before the launch
    call(k)
    assert order[3:] == ["pre_hook"]  # cached: before each launch only, as Triton


def test_configs_timings_and_bench_time_after_a_replayed_tuning() -> None:
    from tritune.bench import Measurement

    class FakeTimer:
        """A FAKE timer (no GPU): BLOCK=128 takes 1 ms, BLOCK=64 takes 2 ms, every sample alike."""

        def measure_config(self, config: Config, budget_s: float) -> Measurement:
            return Measurement.from_samples([1.0 if config.kwargs["BLOCK"] == 128 else 2.0] * 10)

    k = tritune.autotune([Config({"BLOCK": 64}), Config({"BLOCK": 128})], ["n"], store=False,
                         timer=FakeTimer())(add_kernel)  # fmt: skip
    call(k)
    assert k.best_config == Config({"BLOCK": 128})
    assert {c.kwargs["BLOCK"]: t[0] for c, t in k.configs_timings.items()} == {64: 2.0, 128: 1.0}
    assert all(isinstance(c, triton.Config) for c in k.configs_timings)
    assert k.bench_time > 0


def _pretuned_file(tmp_path: Path, edit: Any = None) -> Path:
    """A real export file: add_kernel tuned for n=300 with a FAKE replay timer, exported, then edited."""
    import json

    from tritune.bench import Measurement
    from tritune.store import SQLiteStore

    class FakeTimer:
        """A FAKE timer (no GPU): BLOCK=128 takes 1 ms, BLOCK=64 takes 2 ms."""

        def measure_config(self, config: Config, budget_s: float) -> Measurement:
            return Measurement.from_samples([1.0 if config.kwargs["BLOCK"] == 128 else 2.0] * 10)

    db, out = tmp_path / "made.sqlite", tmp_path / "pretuned.json"
    call(tritune.autotune(CONFIGS, ["n"], store=str(db), timer=FakeTimer())(add_kernel))
    with SQLiteStore(db) as s:
        s.export(out)
    data = json.loads(out.read_text())
    for e in data["entries"]:
        if edit is not None:
            edit(e["key"])
    out.write_text(json.dumps(data))
    return out


CONFIGS = [Config({"BLOCK": 64}), Config({"BLOCK": 128})]


def _decorate_and_call(path: Path) -> tuple[Any, list[str], list[str]]:
    with warnings.catch_warnings(record=True) as at_decoration:
        warnings.simplefilter("always")
        k = tritune.autotune(CONFIGS, ["n"], pretuned=path, store=False)(add_kernel)
    with warnings.catch_warnings(record=True) as at_calls:
        warnings.simplefilter("always")
        call(k, 300)
        call(k, 600)
    said = [[str(w.message) for w in ws if issubclass(w.category, tritune.PretunedIgnoredWarning)]
            for ws in (at_decoration, at_calls)]  # fmt: skip
    return k, said[0], said[1]


def test_a_matching_pretuned_file_is_served_without_a_word(tmp_path: Path) -> None:
    k, decorated, called = _decorate_and_call(_pretuned_file(tmp_path))
    assert decorated == [] and called == []
    assert k.choices()[next(iter(k.choices()))].source == "pretuned"


def test_pretuned_entries_of_another_kernel_source_are_reported_at_decoration(tmp_path: Path) -> None:
    path = _pretuned_file(tmp_path, lambda key: key.update(source_hash="0" * 64))  # the kernel was edited since
    _k, decorated, called = _decorate_and_call(path)
    assert len(decorated) == 1 and called == []
    assert "another version of its source" in decorated[0] and str(path) in decorated[0]
    assert "tritune cache export" in decorated[0]


def test_a_pretuned_file_without_this_kernel_is_reported_at_decoration(tmp_path: Path) -> None:
    path = _pretuned_file(tmp_path, lambda key: key.update(kernel="other_kernel"))
    _k, decorated, called = _decorate_and_call(path)
    assert len(decorated) == 1 and called == []
    assert "no entries for this kernel" in decorated[0] and "other_kernel" in decorated[0]


def test_pretuned_entries_for_this_key_but_other_dtypes_are_reported_once(tmp_path: Path) -> None:
    path = _pretuned_file(tmp_path, lambda key: key.update(dtypes=["torch.float16"] * len(key["dtypes"])))
    k, decorated, called = _decorate_and_call(path)
    assert decorated == [] and len(called) == 1  # n=600 has no entry at all: nothing more to say
    assert "n=300" in called[0] or "'n': 300" in called[0]
    assert "dtypes" in called[0] and "torch.float16" in called[0] and "ignored" in called[0]
    assert {c.source for c in k.choices().values()} == {"untuned"}


@triton.jit
def scale_per_256(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """Each program scales BLOCK elements starting at 256 * pid: right only when BLOCK is 256, as its grid assumes."""
    offs = tl.program_id(0) * 256 + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


def test_a_pretuned_winner_that_computes_other_results_is_refused_and_the_key_tuned() -> None:
    """A pretuned file (FAKE layer here) naming a listed config that writes only half the output at this call: its
    outputs are checked against the first legal config's on copies of the call's arguments before it serves, it is
    refused with one warning naming the kernel, the config and what differed, and the call's output is right."""
    configs = [Config({"BLOCK": 256}), Config({"BLOCK": 128})]
    k = tritune.autotune(configs, ["n"])(scale_per_256)
    k.tuner.pretuned, k.tuner._pretuned = "fake.json", FakePretuned(Config({"BLOCK": 128}))
    x = torch.randn(1000)
    out = torch.zeros(1000)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        k[lambda meta: (triton.cdiv(1000, 256),)](x, out, 1000)
    refused = [str(w.message) for w in rec if issubclass(w.category, tritune.PretunedIgnoredWarning)]
    assert len(refused) == 1 and "scale_per_256" in refused[0] and "BLOCK=128" in refused[0]
    assert "differ" in refused[0] and "BLOCK=256" in refused[0]
    assert torch.equal(out, x * 2) and k.best_config == Config({"BLOCK": 256})
    assert {c.source for c in k.choices().values()} == {"untuned"}


def test_a_pretuned_winner_that_agrees_with_the_reference_serves() -> None:
    """The same check passes a pretuned winner whose outputs match the first legal config's: it serves, silently."""
    configs = [Config({"BLOCK": 256}), Config({"BLOCK": 256}, num_warps=8)]
    k = tritune.autotune(configs, ["n"])(scale_per_256)
    k.tuner.pretuned, k.tuner._pretuned = "fake.json", FakePretuned(configs[1])
    x = torch.randn(1000)
    out = torch.zeros(1000)
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        k[lambda meta: (triton.cdiv(1000, 256),)](x, out, 1000)
    assert not [w for w in rec if issubclass(w.category, tritune.PretunedIgnoredWarning)]
    assert torch.equal(out, x * 2) and k.best_config == configs[1]
    assert {c.source for c in k.choices().values()} == {"pretuned"}
