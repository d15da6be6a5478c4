"""``Workload``: everything needed to run one kernel for a tuning key, in one object, and its loader."""

from __future__ import annotations

import importlib.util
import inspect
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tritune.adapters.kernel import KernelInfo
from tritune.config import Config, as_config, hooked_arguments
from tritune.errors import TrituneError, WorkloadError, WorkloadLoadError
from tritune.space import Space

Key = Mapping[str, Any]


@dataclass(eq=False)
class Workload:
    """One kernel, its candidate configs, and how to build, launch and check it for each key.

    ``args(key, device)`` returns the launch arguments; ``grid`` the launch grid, in either of two forms:
    ``grid(meta, key)``, where ``meta`` holds the config's meta-parameters and launch options, or Triton's
    ``grid(meta)``, where ``meta`` also holds the kernel's scalar arguments by name (ints, floats, bools, strings
    and ``None``, as ``args`` made them for the key) and ``kwargs``, as in ``kernel[lambda meta: ...]``; the
    form is read from the callable's signature once, and any other signature is refused when the workload is
    made. ``outputs`` are the positions
    in ``args`` the kernel writes; ``oracle(args)`` returns the expected outputs in that order,
    computed from the inputs as ``args`` made them, before any kernel ran.
    ``bytes(key)``/``flops(key)`` feed achieved-bandwidth and roofline figures.
    ``pre_hook(nargs)``: called before each compile and launch of a config with one dict, the kernel's
    arguments by name plus the config's meta-parameters and launch options, as ``triton.Config(pre_hook=...)``
    is: it may set what the compile depends on, such as a host ``TensorDescriptor``'s ``block_shape`` (Triton's
    tutorial 09). It runs on copies of the non-tensor arguments (:func:`tritune.config.hooked_arguments`), so
    each config keeps its own descriptors and the arguments ``args`` made stay as they were. An output may be
    such a descriptor: its ``base`` tensor is what is checked against the oracle.
    """

    name: str
    kernel: Any
    configs: Sequence[Any] | Space
    args: Callable[[Key, str], Sequence[Any]]
    grid: Callable[[Mapping[str, Any], Key], tuple[int, ...]]
    outputs: Sequence[int] = ()
    oracle: Callable[[Sequence[Any]], Sequence[Any]] | None = None
    keys: Sequence[Key] = field(default_factory=list)
    atol: float = 1e-5
    rtol: float = 1e-5
    bytes: Callable[[Key], float] | None = None
    flops: Callable[[Key], float] | None = None
    kwargs: Mapping[str, Any] | Callable[[Key], Mapping[str, Any]] | None = None
    description: str = ""
    pre_hook: Callable[[dict[str, Any]], Any] | None = None

    def __post_init__(self) -> None:
        where = f"workload {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise WorkloadError("a Workload needs a non-empty name")
        try:
            self.info = KernelInfo.of(self.kernel)
        except WorkloadError as e:
            raise WorkloadError(f"{where}: {e}") from None
        for fname in ("args", "grid"):
            if not callable(getattr(self, fname)):
                raise WorkloadError(f"{where}: {fname} must be a callable")
        self.grid_takes_key = grid_takes_key(self.grid, where)
        self._scalars: dict[str, dict[str, Any]] = {}
        if self.pre_hook is not None and not callable(self.pre_hook):
            raise WorkloadError(f"{where}: pre_hook must be a callable of one dict (the arguments by name and the "
                                "config's values), as triton.Config's")  # fmt: skip
        if self.oracle is not None and not callable(self.oracle):
            raise WorkloadError(f"{where}: oracle must be a callable of args returning the expected outputs")
        self.outputs = tuple(self.outputs)
        for i in self.outputs:
            if not isinstance(i, int) or isinstance(i, bool):
                raise WorkloadError(f"{where}: outputs must be argument positions (ints), got {i!r}")
        if self.oracle is not None and not self.outputs:
            raise WorkloadError(f"{where}: an oracle needs outputs=[positions of the arguments the kernel writes]")
        self.keys = [dict(k) for k in self.keys]
        if isinstance(self.configs, Space):
            self.space: Space = self.configs
        else:
            cfgs = [as_config(c) for c in self.configs]
            if not cfgs:
                raise WorkloadError(f"{where}: configs is empty")
            self.space = Space.from_configs(cfgs)

    # -- candidates --------------------------------------------------------------------------------
    def candidates(self) -> list[Config]:
        """Every candidate with its constraint outcome decided later: all listed or enumerated configs."""
        return list(self.space.all_configs())

    # -- building a launch --------------------------------------------------------------------------
    def call_user(self, what: str, fn: Callable[..., Any], *a: Any) -> Any:
        """Call the user's ``fn``; an exception it raises becomes a one-line :class:`WorkloadError`
        naming the workload, ``what`` was called and the user's own frame (file:line)."""
        try:
            return fn(*a)
        except TrituneError:
            raise
        except Exception as e:
            raise WorkloadError(f"workload {self.name!r}: {what} raised {describe_exception(e)}") from e

    def _sequence(self, what: str, value: Any, wanted: str) -> list[Any]:
        """``value`` as a list, or a one-line :class:`WorkloadError` saying what ``what`` returned instead."""
        if isinstance(value, Iterable) and not isinstance(value, (str, bytes, Mapping)):
            return list(value)
        raise WorkloadError(f"workload {self.name!r}: {what} returned {_short(value)}; return {wanted}")

    def make_args(self, key: Key, device: str) -> list[Any]:
        what = f"args({_key_text(key)}, {device!r})"
        args = self._sequence(what, self.call_user(what, self.args, key, device),
                              "a tuple or list of the kernel's arguments")  # fmt: skip
        for i in self.outputs:
            if not -len(args) <= i < len(args):
                raise WorkloadError(
                    f"workload {self.name!r}: output position {i} is outside the {len(args)} arguments args() made"
                )
        if len(args) > len(self.info.arg_names):
            raise WorkloadError(
                f"workload {self.name!r}: args() made {len(args)} arguments but {self.info.name} takes "
                f"{len(self.info.arg_names)} ({', '.join(self.info.arg_names)})"
            )
        self._scalars[_key_text(key)] = scalar_arguments(self.info.arg_names, args)
        return args

    def caller_kwargs(self, key: Key) -> dict[str, Any]:
        if self.kwargs is None:
            return {}
        what = f"kwargs({_key_text(key)})"
        kw = self.call_user(what, self.kwargs, key) if callable(self.kwargs) else self.kwargs
        if not isinstance(kw, Mapping):
            raise WorkloadError(f"workload {self.name!r}: {what} returned {_short(kw)}; return a dict of "
                                "keyword arguments for the kernel")  # fmt: skip
        return dict(kw)

    def expected_outputs(self, args: Sequence[Any]) -> list[Any] | None:
        """The oracle's outputs for ``args`` (``None`` without an oracle), checked against ``outputs``."""
        if self.oracle is None:
            return None
        expected = self._sequence("the oracle", self.call_user("the oracle", self.oracle, args),
                                  "a list of expected tensors, one per output")  # fmt: skip
        if len(expected) != len(self.outputs):
            raise WorkloadError(
                f"workload {self.name!r}: the oracle returned {len(expected)} values for {len(self.outputs)} "
                f"outputs {list(self.outputs)}; return one expected tensor per output, in that order"
            )
        return expected

    def hooked(self, config: Config, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """The arguments as ``config``'s launch sees them: after its own ``pre_hook`` or this workload's, on
        copies of the non-tensor arguments (:func:`~tritune.config.hooked_arguments`); as given without a hook.
        A hook that raises becomes a one-line :class:`WorkloadError` naming the workload and the config."""
        if self.pre_hook is None and config.pre_hook is None:
            return list(args), dict(kwargs)
        try:
            a, kw = hooked_arguments(self.info.arg_names, config, args, kwargs, self.pre_hook)
        except TrituneError:
            raise
        except Exception as e:
            raise WorkloadError(f"workload {self.name!r}: the pre_hook raised {describe_exception(e)} for "
                                f"{config.id}; it must accept every config of the space") from e  # fmt: skip
        return list(a), kw

    def output_tensors(self, args: Sequence[Any]) -> list[Any]:
        """The tensors the kernel writes: ``args[i]`` for each output, or its ``base`` where it is a tensor
        descriptor (a host ``TensorDescriptor``)."""
        return [output_tensor(args[i]) for i in self.outputs]

    def grid_for(self, config: Config, key: Key) -> tuple[int, ...]:
        """The launch grid of ``config`` at ``key``: ``grid(meta, key)``, or Triton's ``grid(meta)`` with the
        kernel's scalar arguments and ``kwargs`` in ``meta`` (see the class)."""
        if self.grid_takes_key:
            what = f"grid(meta of {config.id}, {_key_text(key)})"
            g = self.call_user(what, self.grid, config.as_dict(), key)
        else:
            what = f"grid(meta of {config.id} at {_key_text(key)})"
            g = self.call_user(what, self.grid, self.triton_meta(config, key))
        if isinstance(g, int):
            return (g,)
        try:
            grid = tuple(int(x) for x in g)
        except (TypeError, ValueError):
            grid = ()
        if not 1 <= len(grid) <= 3:
            raise WorkloadError(f"workload {self.name!r}: {what} returned {_short(g)}; return a tuple of 1 to 3 "
                                "ints (programs along each axis)")  # fmt: skip
        if any(not 0 <= n <= limit for n, limit in zip(grid, GRID_LIMITS)):
            raise WorkloadError(
                f"workload {self.name!r}: {what} returned {_short(g)}: no launch takes more than "
                f"{GRID_LIMITS[0]:,} programs along x or {GRID_LIMITS[1]:,} along y and z (nor fewer than 0), so "
                f"{config.id} is not launched"
            )
        return grid

    def triton_meta(self, config: Config, key: Key) -> dict[str, Any]:
        """The ``meta`` a Triton-style ``grid(meta)`` sees: the kernel's scalar arguments by name (as ``args``
        made them for ``key``; made on the CPU once if no launch made them yet), the caller's keyword
        arguments, then the config's meta-parameters and launch options."""
        text = _key_text(key)
        if text not in self._scalars:
            self.make_args(key, "cpu")
        return {**self._scalars[text], **self.caller_kwargs(key), **config.as_dict()}

    def bytes_for(self, key: Key) -> float | None:
        return float(self.bytes(key)) if self.bytes is not None else None

    def flops_for(self, key: Key) -> float | None:
        return float(self.flops(key)) if self.flops is not None else None

    def __repr__(self) -> str:
        return f"Workload({self.name!r}, kernel={self.info.name}, {len(self.candidates())} candidates, keys={self.keys})"


def grid_takes_key(grid: Callable[..., Any], where: str) -> bool:
    """``True`` for ``grid(meta, key)``, ``False`` for Triton's ``grid(meta)``, read from the signature;
    a :class:`WorkloadError` for a callable that can be called neither way."""
    try:
        sig = inspect.signature(grid)
    except (TypeError, ValueError):  # a callable without a signature: the two-argument form is assumed
        return True
    params = list(sig.parameters.values())
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return True
    positional = [p for p in params if p.kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)]  # fmt: skip
    required = [p for p in params if p.default is inspect.Parameter.empty
                and p.kind is not inspect.Parameter.VAR_KEYWORD]  # fmt: skip
    if positional and len(required) <= 2 and all(p in positional for p in required):
        return len(positional) >= 2
    raise WorkloadError(
        f"{where}: grid{sig} cannot be called as grid(meta) (Triton's form) nor as grid(meta, key); "
        "take one or two positional arguments"
    )


def scalar_arguments(names: Sequence[str], args: Sequence[Any]) -> dict[str, Any]:
    """The kernel's arguments by name that are ints, floats, bools, strings or ``None`` (no tensors are kept)."""
    return {
        n: a for n, a in zip(names, args)
        if a is None or isinstance(a, (bool, int, float, str))
    }


#: The most programs a launch takes along x, y and z (CUDA's grid limits, which Triton's launcher passes on). A
#: bigger grid is refused before the launch: the GPU would reject it, and Triton's interpreter would run it for ever.
GRID_LIMITS = (2**31 - 1, 65535, 65535)


def output_tensor(value: Any) -> Any:
    """``value``, or its ``base`` tensor where it is a tensor descriptor (has ``base`` and ``block_shape``)."""
    if not hasattr(value, "data_ptr") and hasattr(value, "block_shape"):
        base = getattr(value, "base", None)
        if hasattr(base, "data_ptr"):
            return base
    return value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"a {type(value).__name__}"


def _key_text(key: Key) -> str:
    return "{" + ", ".join(f"{k}={v!r}" for k, v in key.items()) + "}"


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs.add(os.path.dirname(os.path.abspath(__file__)))  # tritune itself, also when installed editable
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


def user_frame(exc: BaseException) -> str | None:
    """``file:line in function`` of the innermost frame of ``exc`` in the user's own code, if any."""
    libs = _library_dirs()
    frames = traceback.extract_tb(exc.__traceback__)
    for fs in reversed(frames):
        if not os.path.realpath(fs.filename).startswith(libs) and not fs.filename.startswith("<"):
            return f"{fs.filename}:{fs.lineno} in {fs.name}"
    return None


def describe_exception(exc: BaseException) -> str:
    """One line: the exception's type, the first line of its message and the user's frame."""
    lines = str(exc).strip().splitlines()
    text = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    where = user_frame(exc)
    return f"{text} (at {where})" if where else text


def load_workloads(path: str | Path, name: str | None = None) -> list[Workload]:
    """Import a Python file and return its module-level ``Workload`` objects (one, if ``name`` is given).

    Import errors are raised as :class:`WorkloadLoadError`, one line naming the user's frame.
    """
    path = Path(path)
    if path.is_dir():
        raise WorkloadLoadError(f"{path}: is a directory; pass the Python file that defines the workloads")
    if not path.exists():
        raise WorkloadLoadError(f"{path}: no such file")
    if not path.is_file():
        raise WorkloadLoadError(f"{path}: not a regular file; pass the Python file that defines the workloads")
    mod_name = f"tritune_workload_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise WorkloadLoadError(f"{path}: not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise WorkloadLoadError(
            f"{path}: importing it failed: {describe_exception(e)}; `python {path}` shows the whole traceback"
        ) from e
    finally:
        sys.path.pop(0)
    found = [v for v in vars(module).values() if isinstance(v, Workload)]
    if not found:
        raise WorkloadLoadError(f"{path}: defines no module-level tritune.Workload")
    if name is not None:
        chosen = [w for w in found if w.name == name]
        if not chosen:
            raise WorkloadLoadError(
                f"{path}: no workload named {name!r}; it defines {', '.join(w.name for w in found)}"
            )
        return chosen
    return found
