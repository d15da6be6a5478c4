"""``tritune pin``: pinned tables across a fleet.

* ``tritune pin merge RECORDING... --out TABLE``: merge the ranks' recordings (``$TRITUNE_RECORD``, or
  ``tritune.fleet.record_choices``) by majority per store key into a pinned table, a ``tritune.store/1`` file to use
  as ``pretuned=`` with ``pinned=True`` (or ``$TRITUNE_PINNED=1``): a run then times nothing.
* ``tritune pin stale TABLE``: what differs between the run that made the table and this environment (Triton, torch,
  the GPU, a library's version); exit 1 when something does.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tritune.cli.common import EXIT_FAILED, EXIT_OK, fail_usage


def add_parser(sub: Any) -> None:
    p = sub.add_parser("pin", help="merge the ranks' recorded choices into a pinned table; check a table's staleness",
                       description=(__doc__ or "").split("\n\n", 1)[-1].replace("``", ""),
                       formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    m = verbs.add_parser("merge", help="majority per store key over recordings -> a pinned table (tritune.store/1)")
    m.add_argument("recordings", nargs="+", metavar="RECORDING", help="tritune.choices/1 files, one per rank or run")
    m.add_argument("--out", required=True, metavar="TABLE", help="the pinned table to write (not overwritten if it is a "
                   "source file, a symlink or not a regular file)")  # fmt: skip
    s = verbs.add_parser("stale", help="what changed since a pinned table was made (exit 1 when something did)")
    s.add_argument("table", metavar="TABLE")


def run(args: argparse.Namespace) -> int:
    from tritune.errors import TrituneError
    from tritune.fleet import merge_recordings, stale

    if args.verb == "merge":
        from tritune.paths import write_output

        try:
            doc = merge_recordings(args.recordings)
        except (OSError, ValueError, TrituneError) as e:
            return fail_usage(f"tritune pin merge: {e}")
        try:
            write_output(args.out, json.dumps(doc, indent=1, sort_keys=True) + "\n")
        except OSError as e:
            return fail_usage(f"tritune pin merge: --out {args.out}: {e}")
        split = sum(1 for e in doc["entries"] if len(e["winner"]["provenance"]["votes"]) > 1)
        print(f"{args.out}: {len(doc['entries'])} keys pinned from {len(args.recordings)} recordings"
              + (f"; {split} keys were chosen differently by some recordings (majority kept)" if split else ""))
        return EXIT_OK
    try:
        changed = stale(args.table)
    except (OSError, ValueError) as e:
        return fail_usage(f"tritune pin stale: {args.table}: {e}")
    for line in changed:
        print(line)
    if not changed:
        print(f"{args.table}: made with this environment's Triton, torch, GPU and libraries")
    return EXIT_FAILED if changed else EXIT_OK
