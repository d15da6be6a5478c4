"""Rank processes for ``incremental=True, distributed=True``: gloo on CPU, kernels in Triton's interpreter,
timings from the FAKE clock (seeded differently per rank) and compiles from the FAKE compile service, which
finishes at a different call on each rank. Each rank writes what it launched to ``<dir>/rank<r>.json``."""

from __future__ import annotations

import json
import sys
import traceback
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

TIMES = {128: 1.0, 256: 0.8, 512: 0.5, 1024: 0.9}


def run(rank: int, world: int, init_file: str, out_dir: str) -> None:
    import torch
    import torch.distributed as dist
    import triton
    from incremental_fakes import FakeClock, FakeCompiles

    import tritune
    from kernels import scale_kernel
    from tritune.serving.incremental import Incremental
    from tritune.serving.state import IncrementalOptions
    from tritune.store import MemoryStore

    data: dict[str, Any] = {"rank": rank}
    try:
        dist.init_process_group("gloo", init_method=f"file://{init_file}", rank=rank, world_size=world,
                                timeout=timedelta(seconds=60))  # fmt: skip
        clock, comp = FakeClock(TIMES, noise=0.02, seed=rank), FakeCompiles()
        promoted: list[int] = []
        inc = Incremental(IncrementalOptions(sync_every=4), clock=clock, compiler=comp, thread=False,
                          distributed=True, on_promote=lambda key, ch: promoted.append(calls))  # fmt: skip
        configs = [triton.Config({"BLOCK": b}) for b in TIMES]
        k = tritune.autotune(configs=configs, key=["n"], store=MemoryStore(), distributed=True,
                             incremental=inc)(scale_kernel)  # fmt: skip
        grid = lambda meta: (triton.cdiv(meta["n"], meta["BLOCK"]),)  # noqa: E731
        wrong = 0
        calls = 0
        for calls in range(1, 400):
            if calls == (2 if rank == 0 else 23):  # rank 1's compiles finish much later
                comp.finish()
            x = torch.randn(1000)
            out = torch.empty(1000)
            k[grid](x, out, 1000)
            inc.resolver().poll()
            wrong += int(not torch.equal(out, x * 2))
            if promoted:
                break
        data.update(log=[c.id for c in clock.log], promoted_at=promoted, wrong=wrong,
                    winner=k.best_config.kwargs["BLOCK"], first_other=next(
                        (i for i, c in enumerate(clock.log) if c.kwargs["BLOCK"] != 128), None))  # fmt: skip
        dist.barrier()
    except BaseException:
        data["exception"] = traceback.format_exc()
    finally:
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(data))
        if dist.is_initialized():
            dist.destroy_process_group()
