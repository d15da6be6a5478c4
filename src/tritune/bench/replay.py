"""The replay timer: timings read from a recorded landscape, with seeded noise, so tuning runs on CPU.

It plays the part of a GPU for :mod:`tritune.engine.race`, search strategies and the store's tests: asked
to time a config for ``budget_s`` seconds, it draws samples ``t * exp(N(0, noise))`` (lognormal, median
exactly the recorded ``t``) until the median's interval meets ``rel_tol`` or the *simulated* device time,
``t + overhead_ms`` per sample, reaches the budget. A config the landscape records as failed yields that
failure, never a time.

``look_noise`` adds an error per *look* (per ``measure_config`` call): every sample of one call is scaled by
one draw of ``exp(N(0, look_noise))``, so more samples narrow the look's interval but not its offset. That
is the noise a race's confirmation looks exist for (a short kernel's whole look read 3% slow on the H200,
:mod:`tritune.engine.race`), and the noise ``tritune simulate --noise`` gives each evaluation.

``drift`` (a :class:`GpuDrift`, or any function of the simulated device seconds spent so far) scales every look
by the GPU's state at its start, the same for every config: a heavy kernel's clocks settling under the power
limit after an idle moment, then wandering (:mod:`tritune.engine.race`, "Drift").
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

from tritune.bench.stats import Measurement, relative_halfwidth
from tritune.bench.timer import Failure
from tritune.config import as_config
from tritune.errors import ConfigError
from tritune.landscape import Landscape
from tritune.outcome import Status


class GpuDrift:
    """SYNTHETIC common drift of a GPU under a heavy kernel, a factor on every time as a function of the device
    seconds ``t`` since the load began: ``(1 - ramp * exp(-t / ramp_s)) * exp(swing * w(t))``, where ``w`` is a
    smooth wander of unit spread (three sines of periods between ``swing_s`` and 4 ``swing_s``, random phases).

    The defaults follow what an H100 at its 700 W limit measured under a 0.65 ms fp16 matmul: looks 7-13% fast in
    the first ~250 ms of load, then all configs moving together by 3-8% from one round of looks (~60 ms) to the
    next."""

    def __init__(self, *, ramp: float = 0.10, ramp_s: float = 0.1, swing: float = 0.03, swing_s: float = 0.05,
                 seed: int = 0) -> None:  # fmt: skip
        if not (0 <= ramp < 1 and ramp_s > 0 and swing >= 0 and swing_s > 0):
            raise ValueError("GpuDrift needs 0 <= ramp < 1, ramp_s > 0, swing >= 0 and swing_s > 0")
        self.ramp, self.ramp_s, self.swing = ramp, ramp_s, swing
        rng = random.Random(seed)
        self._waves = [(swing_s * (1 + 3 * rng.random()), 2 * math.pi * rng.random()) for _ in range(3)]

    def __call__(self, t: float) -> float:
        w = sum(math.sin(2 * math.pi * t / p + ph) for p, ph in self._waves) / math.sqrt(1.5)  # unit spread
        return (1 - self.ramp * math.exp(-t / self.ramp_s)) * math.exp(self.swing * w)


class ReplayTimer:
    """Serves a :class:`~tritune.landscape.Landscape` as if it were timed. Deterministic for a seed.

    ``measure_config`` has the :class:`~tritune.bench.timer.ConfigMeasure` shape, so it can be handed
    to the race as is. ``device_s`` is the simulated device time spent so far and ``calls`` the number
    of measurements made, which tests compare between strategies.
    """

    name = "replay"

    def __init__(
        self,
        landscape: Landscape,
        *,
        noise: float = 0.02,
        seed: int = 0,
        overhead_ms: float = 0.03,
        batch: int = 10,
        confidence: float = 0.95,
        look_noise: float = 0.0,
        drift: Callable[[float], float] | None = None,
    ) -> None:
        if noise < 0:
            raise ValueError(f"noise is a relative standard deviation and must be >= 0, got {noise}")
        if not look_noise >= 0:
            raise ValueError(f"look_noise is a relative standard deviation, must be >= 0, got {look_noise}")
        if overhead_ms < 0 or batch < 1:
            raise ValueError("overhead_ms must be >= 0 and batch >= 1")
        self.landscape = landscape
        self.noise = noise
        self.seed = seed
        self.overhead_ms = overhead_ms
        self.batch = batch
        self.confidence = confidence
        self.look_noise = look_noise
        self.drift = drift
        self._rng = random.Random(seed)
        self.device_s = 0.0
        self.calls = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "timer": self.name,
            "noise": self.noise,
            "noise_model": "lognormal, median = recorded time",
            "look_noise": self.look_noise,
            "drift": None if self.drift is None else type(self.drift).__name__,
            "seed": self.seed,
            "overhead_ms": self.overhead_ms,
            "confidence": self.confidence,
            "landscape": {
                "kernel": self.landscape.kernel,
                "device": self.landscape.device,
                "key": self.landscape.key,
            },
        }

    def measure_config(
        self,
        config: Any,
        budget_s: float = 0.05,
        *,
        rel_tol: float = 0.01,
        min_samples: int = 5,
        max_samples: int = 100_000,
    ) -> Measurement | Failure:
        """Replay ``config``'s recorded time with noise, or its recorded failure."""
        config = as_config(config)
        point = self.landscape.lookup(config)
        if point is None:
            raise ConfigError(
                f"config {config.id} is not in the landscape of {self.landscape.kernel!r} at key "
                f"{self.landscape.key}; replay only configs the landscape records"
            )
        self.calls += 1
        if point.status is not Status.MEASURED or point.time_ms is None:
            status = point.status if not point.status.ok else Status.NOT_TIMED
            return Failure(
                status, point.reason or f"{config.id}: recorded as {point.status.value} in the landscape"
            )
        if budget_s <= 0 or min_samples < 1 or max_samples < min_samples:
            raise ValueError("need budget_s > 0 and 1 <= min_samples <= max_samples")
        # the device time is the kernel's, not the look's offset
        cost_s = (point.time_ms + self.overhead_ms) / 1000.0
        t = point.time_ms * (self._rng.lognormvariate(0.0, self.look_noise) if self.look_noise else 1.0)
        if self.drift is not None:  # the GPU's state at the look's start, common to every config
            t *= self.drift(self.device_s)
        samples: list[float] = []
        spent = 0.0
        while True:
            # batches grow with n, so checking the interval stays cheap for long measurements
            k = min(max(self.batch, len(samples) // 4), max_samples - len(samples))
            samples.extend(t * self._rng.lognormvariate(0.0, self.noise) for _ in range(k))
            spent += k * cost_s
            n = len(samples)
            if n >= min_samples and relative_halfwidth(samples, self.confidence) <= rel_tol:
                stop = "converged"
                break
            if spent >= budget_s or n >= max_samples:
                stop = "budget"
                break
        self.device_s += spent
        return Measurement.from_samples(
            samples,
            rel_tol=rel_tol,
            confidence=self.confidence,
            stop=stop,  # type: ignore[arg-type]
            elapsed_s=spent,
            extra={"timer": "replay"},
        )
