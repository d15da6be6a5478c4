"""The fixed cost of a torchrun job on this host, for comparison with the farm's walls.

    torchrun --nproc-per-node=N benchmarks/empty_job.py

Each rank imports torch, triton and tritune (as ``python -m tritune tune`` does), starts CUDA and the
NCCL process group, meets the other ranks at a barrier, and leaves: what every farm run pays before
and after its tuning.
"""

from __future__ import annotations

import os


def main() -> None:
    import torch
    import torch.distributed as dist
    import triton  # noqa: F401

    import tritune  # noqa: F401

    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl", device_id=torch.device("cuda", local))
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
