import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))  # jitlib and kernels_late import each other by plain name
