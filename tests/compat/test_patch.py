"""The process-wide switch (``tritune.patch_triton``), a LibTuner-style subclass of Triton's Autotuner, and
``python -m tritune run``."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
from kernels_compat import accumulate_kernel, add_kernel, grid1

import tritune
from tritune.decorator.triton_surface import ORIGINAL_AUTOTUNER

pytestmark = pytest.mark.filterwarnings("ignore::tritune.UntunedWarning")

CONFIGS = [triton.Config({"BLOCK": 64}, num_warps=2), triton.Config({"BLOCK": 128}, num_warps=4)]
SITES = [(triton, "autotune"), (triton.runtime, "autotune"), (triton.runtime.autotuner, "autotune"),
         (triton.runtime, "Autotuner"), (triton.runtime.autotuner, "Autotuner")]  # fmt: skip


def test_patch_and_unpatch_every_site() -> None:
    before = [getattr(m, a) for m, a in SITES]
    with tritune.patched_triton():
        assert tritune.api.is_patched()
        assert all(getattr(m, a) is not b for (m, a), b in zip(SITES, before))
        k = triton.autotune(configs=CONFIGS, key=["n"])(add_kernel)  # what a library imported now would do
        assert isinstance(k, tritune.TritonAutotuner)
        assert isinstance(k, triton.runtime.Autotuner)
        x, y = torch.randn(300), torch.randn(300)
        out = torch.empty(300)
        k[grid1(300)](x, y, out, 300)
        assert torch.equal(out, x + y)
        assert {c.source for c in k.choices().values()} == {"untuned"}  # tritune's engine chose
    assert [getattr(m, a) for m, a in SITES] == before
    assert not tritune.api.is_patched()
    assert isinstance(k, triton.runtime.Autotuner)  # still a Triton autotuner once the switch is off


def test_stand_in_recognizes_tuners_of_both_engines() -> None:
    original = triton.autotune(configs=CONFIGS, key=["n"])(add_kernel)
    with tritune.patched_triton():
        assert isinstance(original, triton.runtime.Autotuner)
        assert isinstance(tritune.autotune(CONFIGS, ["n"])(add_kernel), triton.runtime.Autotuner)
        assert not isinstance(add_kernel, triton.runtime.Autotuner)


def define_libtuner_style(base: type) -> type:
    """A subclass written the way FlagGems' LibTuner is: Triton's positional constructor, its own ``run``
    that loops over ``prune_configs()`` and ``_bench``, then launches ``self.fn.run`` with the winner."""

    class LibTunerStyle(base):  # type: ignore[misc,valid-type]
        def __init__(self, fn: Any, arg_names: Any, configs: Any, key: Any, reset_to_zero: Any, restore_value: Any,
                     pre_hook: Any = None, post_hook: Any = None, prune_configs_by: Any = None, warmup: Any = None,
                     rep: Any = None, use_cuda_graph: bool = False, do_bench: Any = None) -> None:  # fmt: skip
            super().__init__(fn, arg_names, configs, key, reset_to_zero, restore_value, pre_hook, post_hook,
                             prune_configs_by, warmup, rep, use_cuda_graph)  # fmt: skip
            self.__name__ = self.base_fn.__name__
            self.table: dict[Any, Any] = {}

        def run(self, *args: Any, **kwargs: Any) -> Any:
            self.nargs = dict(zip(self.arg_names, args))
            key = tuple(self.nargs[k] for k in self.keys)
            if key not in self.table:
                timings = {c: self._bench(*args, config=c, **kwargs) for c in self.prune_configs(kwargs)}
                self.table[key] = min(timings, key=lambda c: timings[c][0])
                self.configs_timings = timings
                self.pre_hook({**self.nargs, **kwargs, **self.table[key].all_kwargs()}, reset_only=True)
            config = self.best_config = self.table[key]
            ret = self.fn.run(*args, **kwargs, **config.all_kwargs())
            self.nargs = None
            return ret

    return LibTunerStyle


def run_libtuner(cls: type, fake_bench: Any) -> tuple[torch.Tensor, Any]:
    k = cls(accumulate_kernel, accumulate_kernel.arg_names, CONFIGS, ["n"], ["acc_ptr"], None)
    k.do_bench = fake_bench
    x = torch.arange(300, dtype=torch.float32)
    acc = torch.full((300,), 3.0)
    k[grid1(300)](x, acc, 300)
    k[grid1(300)](x, acc, 300)
    return acc, k


def test_libtuner_style_subclass_gets_tritune_under_the_switch() -> None:
    ran: list[int] = []

    def fake_bench(kernel_call: Any, quantiles: Any = None) -> list[float]:  # a FAKE timer: order of calls
        kernel_call()
        ran.append(1)
        return [float(len(ran))] * 3

    triton_acc, triton_k = run_libtuner(define_libtuner_style(ORIGINAL_AUTOTUNER), fake_bench)
    with tritune.patched_triton():
        cls = define_libtuner_style(triton.runtime.Autotuner)  # the library's class body runs while patched
    assert issubclass(cls, tritune.Autotuned)
    tritune_acc, tritune_k = run_libtuner(cls, fake_bench)
    assert torch.equal(triton_acc, 2 * torch.arange(300, dtype=torch.float32))
    assert torch.equal(tritune_acc, triton_acc)
    assert tritune_k.best_config.all_kwargs() == triton_k.best_config.all_kwargs()
    assert isinstance(tritune_k, triton.runtime.Autotuner)


def test_bench_without_gpu_or_do_bench_says_so() -> None:
    k = tritune.TritonAutotuner(add_kernel, add_kernel.arg_names, CONFIGS, ["n"])
    x, y, out = torch.randn(300), torch.randn(300), torch.empty(300)
    with pytest.raises(tritune.TimingUnavailableError, match=r"add_kernel.*do_bench"):
        k._bench(x, y, out, 300, config=CONFIGS[0], grid=(3,))


def test_tritune_run_script(tmp_path: Path) -> None:
    script = tmp_path / "lib_user.py"
    script.write_text(textwrap.dedent("""
        import sys
        import triton
        import tritune

        print("patched", triton.autotune is tritune.api.triton_autotune, sys.argv[1:])
        sys.exit(3)
    """))
    env = dict(os.environ, TRITON_INTERPRET="1", PYTHONPATH=str(Path(tritune.__file__).parents[1]))
    p = subprocess.run([sys.executable, "-m", "tritune", "run", str(script), "a", "--b"], capture_output=True,
                       text=True, env=env, timeout=300)  # fmt: skip
    assert p.returncode == 3, p.stderr
    assert p.stdout.strip() == "patched True ['a', '--b']"
    missing = subprocess.run([sys.executable, "-m", "tritune", "run", str(tmp_path / "nope.py")], capture_output=True,
                             text=True, env=env, timeout=300)  # fmt: skip
    assert missing.returncode == 2 and "no such file" in missing.stderr


def test_unknown_key_name_behaves_as_the_installed_triton() -> None:
    try:
        triton.autotune(configs=CONFIGS, key=["nope"])(add_kernel)
        triton_raises = None
    except Exception as e:  # triton >= 3.7 refuses it; 3.6 drops it
        triton_raises = type(e)
    with tritune.patched_triton():
        if triton_raises is None:
            with pytest.warns(UserWarning, match="add_kernel.*nope"):
                k = triton.autotune(configs=CONFIGS, key=["nope"])(add_kernel)
            assert k.keys == []
        else:
            with pytest.raises(triton_raises, match="add_kernel"):
                triton.autotune(configs=CONFIGS, key=["nope"])(add_kernel)


def test_subclass_without_its_own_run_gets_the_whole_engine() -> None:
    class TableCache:  # a library's own cache object (not a dict), as FlagGems' LibTuner installs one
        def __init__(self) -> None:
            self.rows: dict[Any, Any] = {}

        def get(self, key: Any, default: Any = None) -> Any:
            return self.rows.get(key, default)

        def __setitem__(self, key: Any, value: Any) -> None:
            self.rows[key] = value

        def __contains__(self, key: Any) -> bool:
            return key in self.rows

    with tritune.patched_triton():

        class Minimal(triton.runtime.Autotuner):  # type: ignore[misc,name-defined]
            def __init__(self, fn: Any, arg_names: Any, configs: Any, key: Any, *rest: Any) -> None:
                super().__init__(fn, arg_names, configs, key, *rest)
                self.cache = TableCache()

    k = Minimal(add_kernel, add_kernel.arg_names, CONFIGS, ["n"], None, None)
    x, y, out = torch.randn(300), torch.randn(300), torch.empty(300)
    k[grid1(300)](x, y, out, 300)
    assert torch.equal(out, x + y)
    assert {c.source for c in k.choices().values()} == {"untuned"}
    (shown,) = k.cache.rows.values()
    assert shown.all_kwargs() == k.best_config.all_kwargs()


def test_environment_variable_patches_at_import() -> None:
    env = dict(os.environ, TRITON_INTERPRET="1", TRITUNE_PATCH_TRITON="1",
               PYTHONPATH=str(Path(tritune.__file__).parents[1]))  # fmt: skip
    code = "import tritune, triton; print(triton.runtime.Autotuner is tritune.TritonAutotuner)"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert p.stdout.strip() == "True", p.stderr


def libtuner_loop_at_300(configs: list[Any]) -> tuple[Any, torch.Tensor, torch.Tensor]:
    """A LibTuner-style subclass of the patched Autotuner over ``accumulate_kernel``, inside its loop for
    n = 300 (``nargs`` set, as a library's run does before timing); the tuner and the call's tensors."""
    with tritune.patched_triton():
        cls = define_libtuner_style(triton.runtime.Autotuner)
    k = cls(accumulate_kernel, accumulate_kernel.arg_names, configs, ["n"], ["acc_ptr"], None)
    x, acc = torch.arange(300, dtype=torch.float32), torch.zeros(300)
    k.nargs = dict(zip(k.arg_names, (x, acc, 300)))
    return k, x, acc


def test_library_loop_compiles_the_pruned_configs_once_per_key() -> None:
    """A LibTuner-style loop times config after config through ``_bench``; before its first timing for a key,
    every pruned config that passes the static rules goes to the compile workers at once (here a FAKE
    compiler records the list), and a second ``_bench`` for the same key sends nothing again."""
    from tritune.decorator.timing import precompile_for_library_loop

    seen: list[list[Any]] = []
    k, x, acc = libtuner_loop_at_300(CONFIGS)
    pruned = k.prune_configs({})
    sent = precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append)
    assert sent is not None and len(seen) == 1
    assert [c.kwargs for c in seen[0]] == [dict(c.kwargs) for c in pruned]
    assert precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append) is None and len(seen) == 1
    y, acc2 = torch.arange(600, dtype=torch.float32), torch.zeros(600)  # another key: compiled again
    assert precompile_for_library_loop(k, (y, acc2, 600), {}, compile_all=seen.append) is not None
    assert len(seen) == 2


def test_a_widened_library_loop_compiles_the_written_configs_then_the_neighbours_it_will_time(
        monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    """Widened (``TRITUNE_WIDEN=1``), a LibTuner-style loop's first ``_bench`` for a key sends only the written
    configs to the compile workers (a FAKE compiler records the lists); once they are timed (FAKE measurements: BLOCK=64
    1.0 ms, BLOCK=128 3.0 ms, out of the race), the call for the first neighbour the loop meets sends every neighbour
    of BLOCK=64 at once, never those whose only origin is BLOCK=128, and nothing is sent twice."""
    from tritune.bench.stats import Measurement
    from tritune.decorator.timing import precompile_for_library_loop, race_in_library_loop

    def fake_measure(ms: float) -> Any:  # FAKE timer: 1% spread around ms
        return lambda **options: Measurement.from_samples([ms * (1 + 0.005 * (i % 3 - 1)) for i in range(8)])

    monkeypatch.setenv("TRITUNE_WIDEN", "1")
    seen: list[list[Any]] = []
    k, x, acc = libtuner_loop_at_300(CONFIGS)
    k.prune_configs({})
    written = [c for c in k.candidates if c not in k.generated]
    assert len(written) == 2 and k.generated_origins
    precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append)
    assert seen == [written]
    key = k.key_spec.of((x, acc, 300), {})
    for c, t in zip(written, (1.0, 3.0)):
        race_in_library_loop(k, key, fake_measure(t), config=c)
    near = {c for c, o in k.generated_origins.items() if written[0] in o}
    far = next(c for c in k.generated_origins if c not in near)
    assert precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append, config=far) is None
    precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append, config=next(iter(near)))
    assert len(seen) == 2 and set(seen[1]) == near  # every admitted neighbour at once, at the first one the loop meets
    for c in near:  # nothing twice
        assert precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append, config=c) is None
    assert len(seen) == 2


def test_a_library_loops_check_is_prepared_beside_its_first_compiles() -> None:
    """``beside`` (the output check's preparation, in ``_bench``) starts on a helper thread as a key's first batch goes
    to the compile workers (a FAKE compiler that waits until it has started), once a key."""
    import threading

    from tritune.decorator.timing import precompile_for_library_loop

    started, threads = threading.Event(), []

    def prepare() -> None:
        threads.append(threading.current_thread().name)
        started.set()

    def compile_all(cfgs: list[Any]) -> None:  # FAKE: the preparation runs while the compiles do
        assert started.wait(10)

    k, x, acc = libtuner_loop_at_300(CONFIGS)
    k.prune_configs({})
    assert precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=compile_all, beside=prepare) is not None
    assert precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=compile_all, beside=prepare) is None
    assert threads == ["tritune-check-prep"]


def test_library_loop_precompiles_configs_with_a_pre_hook_too() -> None:
    """FlagGems' Hopper mm gives every config a pre_hook (it sets host descriptors' block shapes): those
    configs go to the compile workers as well (each specialized after its hook), not one by one in-process."""
    from tritune.decorator.timing import precompile_for_library_loop

    def hook(nargs: dict[str, Any]) -> None:
        pass

    hooked = [triton.Config(dict(c.kwargs), num_warps=c.num_warps, pre_hook=hook) for c in CONFIGS]
    seen: list[list[Any]] = []
    k, x, acc = libtuner_loop_at_300(hooked)
    k.prune_configs({})
    sent = precompile_for_library_loop(k, (x, acc, 300), {}, compile_all=seen.append)
    assert sent is not None and [c.pre_hook for c in seen[0]] == [hook, hook]


def test_assigning_configs_leaves_a_subclass_own_cache_alone() -> None:
    """FlagGems' LibTuner puts its own sqlite-backed table (no ``clear()``) in ``self.cache``; Triton's
    ``configs`` is a plain attribute, so assigning it must neither fail nor wipe that table."""

    class OwnTable:  # a mapping without clear(), as LibTuner's ConfigCache
        def __init__(self) -> None:
            self.rows = {("k",): CONFIGS[0]}

    with tritune.patched_triton():
        cls = define_libtuner_style(triton.runtime.Autotuner)
    k = cls(accumulate_kernel, accumulate_kernel.arg_names, CONFIGS, ["n"], ["acc_ptr"], None)
    k.cache = OwnTable()
    k.configs = [CONFIGS[1]]
    assert k.configs == [CONFIGS[1]] and k.cache.rows == {("k",): CONFIGS[0]}
