"""``python -m tritune`` (also under ``torchrun ... -m tritune``)."""

import sys

from tritune.cli.main import main

sys.exit(main())
