"""``python -P -m tritune.workers FD FACTORY LIFELINE...``: a spawned worker (see :mod:`tritune.workers.child`).

The entry point lives here and not in ``child.py``: the package imports ``child`` (through ``service``), and
``python -m`` of a module already imported makes runpy print a RuntimeWarning into the shared stderr.
"""

import sys

from tritune.workers.child import main

sys.exit(main(sys.argv[1:]))
