"""A kernel copy's view of its module's globals: read live, with jitted functions converted.

:func:`tritune.adapters.kernel.as_jit` and :func:`tritune.adapters.kernel.as_interpreted` rebuild a kernel for the
compiler or for the CPU interpreter. The rebuilt function must resolve names as Triton resolves the
original's: at launch, not when the kernel was decorated (tutorial 03 defines ``leaky_relu`` after the
matmul kernel that calls it), and through module attributes (``tle.program_id(...)`` where ``tle`` is
a module of ``@triton.jit`` helpers, as FlagGems does). :class:`LiveGlobals` is that view:

- a lookup reads the module's own dict first, so a global defined or rebound later is seen;
- a jitted function found there is converted (to a JITFunction or an interpreter function);
- a module found there is replaced by a proxy module whose attributes are converted the same way
  (Triton's own modules are left alone: both Triton's interpreter and its compiler look for them).

Both Triton's interpreter (``_patch_lang`` reads ``__globals__.items()``, and ``exec`` defines the
rewritten kernel in it) and its compiler (``CodeGenerator`` copies ``gscope.items()``;
``JITFunction.get_capture_scope`` merges it with ``|``) read the dict itself, so its entries are
refreshed from the module on every ``items()`` call and whenever :meth:`LiveGlobals.sync` is called.
Names that Triton's interpreter adds to a kernel's globals land here, not in the user's module.
"""

from __future__ import annotations

import threading
import types
from collections.abc import Callable, ItemsView, Iterator
from typing import Any

Convert = Callable[[Any], Any]  # returns the converted value, or None to keep the value as it is

_PROXIES: dict[tuple[int, int], tuple[types.ModuleType, Convert, types.ModuleType]] = {}
_PROXY_LOCK = threading.Lock()
_MISSING = object()


def global_names(code: types.CodeType) -> frozenset[str]:
    """Every name ``code`` (and any code nested in it) may load as a global or an attribute."""
    names: set[str] = set()
    stack = [code]
    while stack:
        c = stack.pop()
        names.update(c.co_names)
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))
    return frozenset(names)


def _is_triton_module(mod: types.ModuleType) -> bool:
    name = getattr(mod, "__name__", "") or ""
    return name == "triton" or name.startswith("triton.")


def converted(value: Any, convert: Convert) -> Any:
    """``value`` as a rebuilt kernel should see it: jitted functions converted, modules proxied."""
    if type(value) is types.ModuleType and not _is_triton_module(value):
        return module_proxy(value, convert)
    conv = convert(value)
    return value if conv is None else conv


def module_proxy(mod: types.ModuleType, convert: Convert) -> types.ModuleType:
    """A plain module (Triton's compiler requires ``type(m) is ModuleType``) reading ``mod`` live.

    Its attributes come from ``mod`` on each access (a PEP 562 module ``__getattr__``), converted as
    :func:`converted` does; one proxy per module and conversion, so Triton's check that a global has
    not changed since compiling sees the same object every time.
    """
    key = (id(mod), id(convert))
    with _PROXY_LOCK:
        hit = _PROXIES.get(key)
        if hit is not None and hit[0] is mod and hit[1] is convert:
            return hit[2]
        proxy = types.ModuleType(mod.__name__, getattr(mod, "__doc__", None))

        def __getattr__(name: str) -> Any:
            try:
                value = getattr(mod, name)
            except AttributeError:
                raise AttributeError(f"module {mod.__name__!r} has no attribute {name!r}") from None
            return converted(value, convert)

        proxy.__dict__["__getattr__"] = __getattr__
        for attr in ("__file__", "__package__", "__path__", "__spec__"):
            if attr in vars(mod):
                proxy.__dict__[attr] = vars(mod)[attr]
        proxy.__dict__["__tritune_proxy_of__"] = mod
        _PROXIES[key] = (mod, convert, proxy)  # modules live for the process; so may their proxies
        return proxy


class LiveGlobals(dict[str, Any]):
    """The globals of a rebuilt kernel: ``source`` (the original's module dict), read live and converted."""

    def __init__(self, source: dict[str, Any], convert: Convert, names: frozenset[str]) -> None:
        super().__init__()
        self._source = source
        self._convert = convert
        self._names = names
        self._own: set[str] = set()  # names set on this dict itself (by Triton's interpreter), not in source
        # raw for now: converting callees here could reach this kernel again before it is memoized
        dict.update(self, dict(source))

    def sync(self) -> None:
        """Refresh the entries from ``source``: its current values, converted where the code uses them."""
        src = dict(self._source)  # another thread may be defining globals
        dict.update(self, src)
        for name in self._names:
            if name in src:
                dict.__setitem__(self, name, converted(src[name], self._convert))

    def __getitem__(self, name: str) -> Any:
        if name not in self._own:
            value = self._source.get(name, _MISSING)
            if value is not _MISSING:
                return converted(value, self._convert)
        return dict.__getitem__(self, name)

    def __setitem__(self, name: str, value: Any) -> None:
        self._own.add(name)
        dict.__setitem__(self, name, value)

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        try:
            return self[name]
        except KeyError:
            return default

    def __contains__(self, name: object) -> bool:
        return name in self._source or dict.__contains__(self, name)

    def items(self) -> ItemsView[str, Any]:  # type: ignore[override]
        self.sync()
        return dict.items(self)

    def __iter__(self) -> Iterator[str]:
        self.sync()
        return dict.__iter__(self)
