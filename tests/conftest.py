import os
import sys
from pathlib import Path

# Tests run without a GPU: Triton's interpreter executes kernels on the CPU. Set before triton is imported
# anywhere so that @triton.jit kernels defined in test modules are interpretable.
# On the GPU machine, `TRITUNE_GPU_TESTS=1 pytest -m gpu tests/gpu` runs the GPU tests on the real driver.
if os.environ.get("TRITUNE_GPU_TESTS") != "1":
    os.environ.setdefault("TRITON_INTERPRET", "1")
os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")  # triton 3.9 warns when unset; 1 keeps the historical default

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(ROOT / "examples"))
