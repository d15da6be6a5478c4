"""What the decorator's parts see of a decorated kernel: :class:`TunedKernel`, the part of
:class:`~tritune.decorator.autotuned.Autotuned` that the miss handler, the timed call, the untuned path and the
Triton surface use. A protocol, so that those modules sit below the class that puts them together."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

from tritune.adapters.kernel import KernelInfo
from tritune.config import Config
from tritune.decorator.keys import KeySpec


class TunedKernel(Protocol):
    """A decorated kernel as its parts see it (module docstring)."""

    fn: Any
    info: KernelInfo
    key_spec: KeySpec
    tuner: Any
    restore_value: list[str]
    restore_copies: dict[str, Any]
    pre_hook: Callable[..., Any]
    post_hook: Callable[..., Any]
    on_no_gpu: str
    nargs: dict[str, Any] | None
    #: The generated candidates of the last call's space (derived or widened): config -> where it came from.
    generated: dict[Config, str]
    #: A widened list's generated configs -> the configs one step nearer the list that they neighbour.
    generated_origins: dict[Config, tuple[Config, ...]]
    #: How the last call's space was made (None for a given list).
    space_report: dict[str, Any] | None
    #: Where the candidates come from: ``"given"``, ``"derived"`` or ``"widened"``.
    space_source: str

    @property
    def configs(self) -> list[Any]: ...
    @property
    def candidates(self) -> list[Config]: ...
    @property
    def user_do_bench(self) -> Callable[..., Any] | None: ...
    def named_args(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]: ...
    def launcher(self) -> Any: ...
    def launch_kwargs(self, cfg: Config, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]: ...
    def compile_plan(self, args: Sequence[Any], kwargs: Mapping[str, Any]
                     ) -> tuple[Any, Callable[[Config], Mapping[str, Any]] | None]: ...  # fmt: skip
    def warn_once(self, what: str, message: str, category: type[Warning], stacklevel: int = 6) -> None: ...
    def forget(self, public_key: Any = None) -> None: ...
