"""The screen's task handler, built in each spawned worker of :class:`tritune.screen.pool.CompilePool`.

``handler((path, name, target_json, gate))`` imports the workload file itself (workloads hold lambdas,
which do not pickle) and returns the function that screens one ``(key, config_json)`` task into a
candidate's JSON. Errors while loading reach the caller as they are (a WorkloadLoadError, say).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any


def handler(init: tuple[str, str, str, bool]) -> Callable[[object], object]:
    path, name, target_json, gate = init
    os.environ.pop("TRITON_INTERPRET", None)
    from triton.compiler import make_backend

    from tritune.config import Config
    from tritune.screen.candidate import quiet_triton, screen_candidate
    from tritune.screen.targets import Target
    from tritune.workload import load_workloads

    target = Target(**json.loads(target_json))
    with quiet_triton():
        workload = load_workloads(path, name)[0]
        make_backend(target.gpu_target()).hash()  # runs ptxas --version now, not inside a timed compile
    args_by_key: dict[str, Any] = {}

    def screen_one(task: object) -> object:
        assert isinstance(task, tuple)
        key: dict[str, Any] = task[0]
        config_json: dict[str, Any] = task[1]
        kid = json.dumps(key, sort_keys=True)
        if kid not in args_by_key:
            args_by_key.clear()  # one key's tensors at a time
            args_by_key[kid] = workload.make_args(key, "cpu")
        config = Config.from_json(config_json)
        result = screen_candidate(workload, key, args_by_key[kid], config, target, gate=gate)
        return result.to_json()

    return screen_one
