"""The fast launcher's direct call of a compiled kernel's ``launch`` (bypassing ``CudaLauncher.__call__``) passes
exactly what ``CudaLauncher.__call__`` itself passes, for the Triton installed here. On CPU: a real
``CudaLauncher`` object built without compiling (its ``launch`` a recording FAKE), driven once through its own
``__call__`` and once through tritune's generated launcher; the two recorded calls must be equal."""

from __future__ import annotations

from typing import Any

import pytest

from tritune.decorator.dispatch import FastLauncher, launcher_layout

driver_mod = pytest.importorskip("triton.backends.nvidia.driver")


class _Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def __call__(self, *args: Any) -> None:
        self.calls.append(args)


def _launcher(**over: Any) -> Any:
    run = object.__new__(driver_mod.CudaLauncher)
    fields = dict(launch=_Recorder(), global_scratch_size=0, global_scratch_align=1, profile_scratch_size=0,
                  profile_scratch_align=1, launch_cooperative_grid=False, launch_pdl=True, num_ctas=1,
                  arg_annotations=("ann",), kernel_signature=b"sig", gsan_enabled=False)  # fmt: skip
    fields.update(over)
    for k, v in fields.items():
        setattr(run, k, v)
    return run


class _Hooks:
    launch_enter_hook = None
    launch_exit_hook = None


class _Kernel:
    name = "k"

    def __init__(self, run: Any) -> None:
        self.run = run

    def launch_metadata(self, *a: Any) -> None:  # only read when an enter hook is set
        raise AssertionError("no hook is set")


def _fast(run: Any, n_pos: int, tail: tuple[Any, ...]) -> FastLauncher:
    fl = object.__new__(FastLauncher)
    fl.n_pos, fl.tail, fl.arg_names = n_pos, tail, [f"p{i}" for i in range(n_pos + len(tail))]
    fl.kernel, fl.run, fl.function, fl.packed = _Kernel(run), run, "FUNCTION", "PACKED"
    fl._knobs, fl._device, fl._stream = _Hooks(), (lambda: 0), (lambda dev: "STREAM")
    fl.launch = fl._generate()
    return fl


@pytest.mark.parametrize("n_pos,tail", [(3, (64,)), (0, ()), (2, ())])
def test_direct_launch_passes_what_the_launchers_own_call_passes(n_pos: int, tail: tuple[Any, ...],
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    from triton.runtime import driver

    # the launcher's own call reads the active driver (3.9) though a kernel without scratch uses none of it:
    # a FAKE stands in, as no GPU driver is active on CPU
    monkeypatch.setattr(driver, "_active", object())
    run = _launcher()
    layout = launcher_layout(run)
    if layout is None:
        pytest.fail(f"this Triton's CudaLauncher.__call__ is not a known source: add its hash to _KNOWN_LAUNCHERS "
                    f"after checking what it does per call ({driver_mod.__file__})")
    args = tuple(range(10, 10 + n_pos))
    own = _Recorder()
    run.launch = own
    run(4, 2, 1, "STREAM", "FUNCTION", "PACKED", None, None, None, *args, *tail)  # CudaLauncher.__call__ itself
    fast = _fast(run, n_pos, tail)
    run.launch = direct = _Recorder()
    fast.launch = fast._generate()  # binds run.launch at generation, as at build
    fast(args, (4, 2))
    assert direct.calls == own.calls and len(own.calls) == 1


def test_scratch_or_an_unknown_launcher_keeps_the_launchers_own_call() -> None:
    assert launcher_layout(_launcher(global_scratch_size=128)) is None
    assert launcher_layout(_launcher(profile_scratch_size=8)) is None
    assert launcher_layout(_launcher(gsan_enabled=True)) is None

    class Other:
        global_scratch_size = profile_scratch_size = 0

        def __call__(self, *a: Any) -> None:
            pass

    assert launcher_layout(Other()) is None
    calls = _Recorder()

    class Plain(Other):
        def __call__(self, *a: Any) -> None:
            calls(*a)

    _fast(Plain(), 1, ())((7,), (3,))
    assert calls.calls == [(3, 1, 1, "STREAM", "FUNCTION", "PACKED", None, None, None, 7)]
