"""A FAKE library autotuner for tests: it picks its winner in its own loop over ``_bench`` and leaves it in
``cache`` under Triton's key, as FlagGems' ``LibTuner`` does (under the switch its base class is tritune's
stand-in, which this subclasses directly)."""

from __future__ import annotations

from typing import Any

import tritune


class OwnLoop(tritune.api.TritonAutotuner):
    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.nargs = dict(zip(self.arg_names, args))
        timings = {c: self._bench(*args, config=c, **kwargs) for c in self.prune_configs(kwargs)}
        self.best_config = min(timings, key=lambda c: timings[c][0])
        key = tuple(self.nargs[k] for k in self.keys) + tuple(str(a.dtype) for a in args if hasattr(a, "dtype"))
        self.cache[key] = self.best_config
        return self.fn.run(*args, warmup=False, **kwargs, **self.best_config.all_kwargs())
