"""The one worker service: every piece of work tritune runs in another process goes through it.

``service.py`` runs typed tasks (a compile, a screen, a timing under isolation) in worker processes,
each in a process group of its own, with timeouts, crash retry, kill-the-tree and shutdown written once;
``child.py`` is the worker's side; ``procs.py`` walks and kills process trees through ``/proc``.

The package sits low: it imports only ``tritune.errors``. ``screen``, ``tune`` and ``dist`` configure it.
"""

from __future__ import annotations

from tritune.workers.service import Done, Forked, Lost, Spawned, WorkerService, freeze_more, objects_frozen

__all__ = ["Done", "Forked", "Lost", "Spawned", "WorkerService", "freeze_more", "objects_frozen"]
