"""Build exactly what Triton's JIT would compile at launch, from real arguments, without a GPU.

Triton's launcher specializes each argument (integers equal to 1 become constants, pointers and
integers divisible by 16 carry ``tt.divisibility``) before compiling. Compiling from a plain
signature skips that, the software pipeliner does not fire, and shared memory is underestimated.
This module reuses Triton's own binder (``create_function_from_signature`` with the target's
backend) and ``JITFunction._pack_args``, present with the same shape from triton 3.6 on, so the
signature, constants, attributes and options are the JIT's own; the resulting ``ASTSource`` has
the same cache key the JIT computes on the GPU machine.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tritune.adapters.kernel import as_jit
from tritune.adapters.triton_key import install_triton_key_memo
from tritune.config import Config
from tritune.device import cuda_target
from tritune.errors import KernelSpecError
from tritune.screen.compile_errors import compile_error_words

#: Keyed by ``id(jit)`` and holding the kernel itself: a hit counts only when it is the same object, so a
#: freed kernel's id, once reused by another kernel, can never hand out the first kernel's binder.
__all__ = [
    "Specialization",
    "compile_error_reason",
    "cuda_target",
    "frontend_rejection",
    "launch_kwargs",
    "specialize",
]

_BINDERS: dict[tuple[int, str], tuple[Any, Any, Any]] = {}
_LOCK = threading.Lock()


def _binder(jit: Any, target: Any) -> tuple[Any, Any]:
    from triton.compiler import make_backend
    from triton.runtime.jit import create_function_from_signature

    key = (id(jit), repr(target))
    with _LOCK:
        hit = _BINDERS.get(key)
        if hit is None or hit[0] is not jit:
            backend = make_backend(target)
            hit = (jit, backend, create_function_from_signature(jit.signature, jit.params, backend))
            _BINDERS[key] = hit
    return hit[1], hit[2]


def launch_kwargs(jit: Any, config: Config, caller_kwargs: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The keyword arguments the JIT sees for a launch of ``config``, including the options it adds itself."""
    from triton import knobs

    kw: dict[str, Any] = dict(caller_kwargs or {})
    kw.update(config.kwargs)
    kw.update(num_warps=config.num_warps, num_stages=config.num_stages, num_ctas=config.num_ctas)
    if config.maxnreg is not None:
        kw["maxnreg"] = config.maxnreg
    kw["debug"] = kw.get("debug", getattr(jit, "debug", None)) or knobs.runtime.debug
    # Options newer Triton releases add inside JITFunction.run; present only where the release has them.
    for name in ("instrumentation_mode", "fpsan_homomorphic_casts"):
        if hasattr(knobs.compilation, name):
            kw[name] = getattr(knobs.compilation, name)
    return kw


@dataclass
class Specialization:
    """Everything ``triton.compile`` needs for one (kernel, arguments, config, target)."""

    jit: Any
    target: Any
    backend: Any
    options: Any
    signature: dict[str, str]
    constexprs: dict[Any, Any]
    attrs: dict[Any, Any]

    @property
    def kernel_name(self) -> str:
        return str(self.jit.__name__)

    def source(self) -> Any:
        from triton.compiler import ASTSource

        return ASTSource(self.jit, self.signature, self.constexprs, self.attrs)

    def frontend(self) -> Any:
        """Run only the language front end (Python AST to TTIR): catches constexpr errors in milliseconds."""
        from triton._C.libtriton import ir

        from tritune.adapters.interpreter import compiler_language

        with compiler_language():
            ctx = ir.context()
            ir.load_dialects(ctx)
            self.backend.load_dialects(ctx)
            codegen = self.backend.get_codegen_implementation(self.options)
            return self.source().make_ir(
                self.target, self.options, codegen, self.backend.get_module_map(), ctx
            )

    def cache_hash(self) -> str:
        """The hash ``triton.compile`` files this compile under in Triton's cache, computed as it computes it.

        Two Specializations with equal hashes compile to the same binary, so the screen compiles once.
        """
        import hashlib

        from triton._C.libtriton import get_cache_invalidating_env_vars
        from triton.runtime.cache import get_cache_key

        install_triton_key_memo()  # the key's first use in a process: read back, not hashed again
        src = self.source()
        options = self.backend.parse_options(dict(self.options.__dict__, **src.parse_options()))
        key = get_cache_key(src, self.backend, options, env_vars=get_cache_invalidating_env_vars())
        return hashlib.sha256(key.encode("utf-8")).hexdigest()

    def compile(self) -> Any:
        """Full compile through ``triton.compile`` (fills and reuses Triton's on-disk cache)."""
        import triton

        from tritune.adapters.interpreter import compiler_language

        install_triton_key_memo()
        with compiler_language():
            return triton.compile(self.source(), target=self.target, options=self.options.__dict__)


def specialize(
    kernel: Any,
    args: Sequence[Any],
    config: Config,
    target: Any,
    caller_kwargs: Mapping[str, Any] | None = None,
) -> Specialization:
    """Specialize ``kernel`` for ``args`` (CPU tensors are fine) exactly as the JIT would on ``target``."""
    jit = as_jit(kernel)
    backend, binder = _binder(jit, target)
    kw = launch_kwargs(jit, config, caller_kwargs)
    try:
        bound, spec, opts = binder(*args, **kw)
    except Exception as e:
        bad = _first_bad_argument(jit, backend, args)
        if isinstance(e, TypeError) and bad is None:
            raise KernelSpecError(
                f"kernel {jit.__name__}: the arguments do not match its signature: {e}"
            ) from None
        what = f"argument {bad}" if bad else "an argument"
        raise KernelSpecError(
            f"kernel {jit.__name__}: cannot infer the Triton type of {what} ({type(e).__name__}: {e}); "
            "pass tensors, ints, floats, bools or None"
        ) from None
    try:
        options, signature, constexprs, attrs = jit._pack_args(backend, kw, bound, spec, opts)
    except KeyError as e:
        raise KernelSpecError(f"kernel {jit.__name__}: {e.args[0] if e.args else e}") from None
    return Specialization(jit, target, backend, options, signature, constexprs, attrs)


def _first_bad_argument(jit: Any, backend: Any, args: Sequence[Any]) -> str | None:
    from triton._C.libtriton import native_specialize_impl

    for name, value in zip(jit.arg_names, args, strict=False):
        try:
            native_specialize_impl(type(backend), value, False, True, True)
        except Exception:
            return f"{name}={type(value).__name__}"
    return None


def compile_error_reason(exc: BaseException) -> str:
    """A one-line reason from a Triton compile error: its type and Triton's own words
    (:func:`~tritune.screen.compile_errors.compile_error_words`), never the source excerpt or its caret."""
    return f"{type(exc).__name__}: {compile_error_words(exc)}"


def frontend_rejection(
    kernel: Any,
    args: Sequence[Any],
    config: Config,
    target: Any,
    caller_kwargs: Mapping[str, Any] | None = None,
) -> str | None:
    """``None`` if the kernel's front end accepts these constexprs for ``target``; else the reason."""
    from triton.compiler.errors import CompilationError

    spec = specialize(kernel, args, config, target, caller_kwargs)
    try:
        spec.frontend()
    except CompilationError as e:
        return f"{spec.kernel_name} does not compile with {config.id}: {compile_error_reason(e)}"
    return None
