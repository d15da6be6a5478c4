"""A compile error's reason is Triton's own words, wherever a compile error becomes a reason."""

from __future__ import annotations

import pytest
import torch
from triton.compiler.errors import CompilationError

from kernels import rowsum_kernel
from tritune import Config
from tritune.screen.compile_errors import compile_error_words
from tritune.screen.specialize import cuda_target, frontend_rejection, specialize

POWER_OF_2 = "Shape element 0 must be a power of 2"
NUMEL = "numel (2097152) exceeds triton maximum tensor numel (1048576)"


def _args() -> tuple:
    x = torch.randn(4, 256)
    return x, torch.empty(4), 256


def _frontend_error(block: int) -> CompilationError:
    spec = specialize(rowsum_kernel, _args(), Config({"BLOCK": block}), cuda_target(90))
    with pytest.raises(CompilationError) as info:
        spec.frontend()
    return info.value


@pytest.mark.parametrize(("block", "words"), [(300, POWER_OF_2), (2**21, NUMEL)])
def test_an_accumulators_error_is_found_in_the_cause_not_the_caret(block, words):
    e = _frontend_error(block)
    assert str(e).rstrip().endswith("^")  # the caller's error holds only the kernel's line and its caret
    assert compile_error_words(e) == words


@pytest.mark.parametrize(("block", "words"), [(300, POWER_OF_2), (2**21, NUMEL)])
def test_the_front_ends_rejection_quotes_triton(block, words):
    why = frontend_rejection(rowsum_kernel, _args(), Config({"BLOCK": block}), cuda_target(90))
    assert why is not None and why.endswith(f"CompilationError: {words}")


def test_a_message_on_the_error_itself_and_errors_of_other_kinds():
    direct = CompilationError("def k():\n    x = 1\n", None, "arange's range must be a power of 2")
    assert compile_error_words(direct) == "arange's range must be a power of 2"
    assert compile_error_words(RuntimeError("PassManager::run failed\nerror: out of registers")) == (
        "error: out of registers"
    )
    try:
        try:
            raise ValueError("the inner words")
        except ValueError as inner:
            raise RuntimeError("   ^") from inner
    except RuntimeError as outer:
        assert compile_error_words(outer) == "the inner words"
    assert compile_error_words(RuntimeError("")) == "RuntimeError"


def test_a_worker_compile_reports_the_same_words():
    from tritune.adapters.interpreter import compiler_language
    from tritune.engine.precompile import _compile_task

    spec = specialize(rowsum_kernel, _args(), Config({"BLOCK": 300}), cuda_target(90))
    target = (spec.target.backend, spec.target.arch, spec.target.warp_size)
    with compiler_language():  # as in a compile worker, which runs the compiler's language, not the interpreter's
        why = _compile_task("kernels", "rowsum_kernel", [], spec.signature, spec.constexprs, spec.attrs,
                            spec.options.__dict__, target)  # fmt: skip
    assert why == f"CompilationError: {POWER_OF_2}"
