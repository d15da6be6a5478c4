"""A compile worker: ``python -m tritune.screen.worker RESULT_FD PATH NAME TARGET_JSON [nogate]``.

Started by :class:`tritune.screen.pool.CompilePool`. It imports the workload file itself (workloads hold
lambdas, which do not pickle), then reads tasks ``[id, key, config]`` as JSON lines on stdin and writes
``["ready"]``, ``["done", id, candidate]``, ``["fatal", error class, message]`` or ``["crash", ...]``
as JSON lines to ``RESULT_FD``. It exits when stdin closes.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def main(argv: list[str]) -> int:
    fd, path, name, target_json = int(argv[0]), argv[1], argv[2], argv[3]
    gate = len(argv) < 5 or argv[4] != "nogate"
    out = os.fdopen(fd, "w", buffering=1)

    def send(*msg: Any) -> None:
        out.write(json.dumps(list(msg)) + "\n")
        out.flush()

    os.environ.pop("TRITON_INTERPRET", None)
    from tritune import errors

    try:
        from tritune.config import Config
        from tritune.screen.candidate import quiet_triton, screen_candidate
        from tritune.screen.targets import Target
        from tritune.workload import load_workloads

        target = Target(**json.loads(target_json))
        with quiet_triton():
            workload = load_workloads(path, name)[0]
            from triton.compiler import make_backend

            make_backend(target.gpu_target()).hash()  # runs ptxas --version now, not inside a timed compile
        send("ready")
        args_by_key: dict[str, Any] = {}
        for line in sys.stdin:
            if not line.strip():
                continue
            task_id, key, config_json = json.loads(line)
            kid = json.dumps(key, sort_keys=True)
            if kid not in args_by_key:
                args_by_key.clear()  # one key's tensors at a time
                args_by_key[kid] = workload.make_args(key, "cpu")
            config = Config.from_json(config_json)
            result = screen_candidate(
                workload, key, args_by_key[kid], config, target, timeout=None, gate=gate
            )
            send("done", task_id, result.to_json())
    except errors.TrituneError as e:
        send("fatal", type(e).__name__, str(e))
        return 1
    except Exception as e:  # the pool marks the task compile_failed with this and carries on
        send("crash", type(e).__name__, str(e))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
