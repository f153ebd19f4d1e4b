"""Keeping the cyclic garbage collector off the working memory's long-lived objects.

A full (generation 2) collection walks every object the collector tracks and holds the GIL
throughout. The working memory is most of them and lives as long as the process: at 20k
facts some 250k objects, a 180 ms pause in which no recall in the process moves, and it
grows with the memory (the p99 of recalls beside writes or a ``find_conflicts``, which
allocate enough to set one off). ``gc.freeze`` moves every object alive now to a permanent
generation the collector skips; reference counting still frees them when they go, so only
garbage caught in a reference cycle at that moment would stay, and a collection runs first.
"""

from __future__ import annotations

import gc
import logging
import time

log = logging.getLogger(__name__)


class LongLived:
    """Freezes the heap once the working memory is loaded and again each time it has grown
    by ``every`` rows, so the collector's full passes only walk what came since."""

    def __init__(self, every: int) -> None:
        self._every = every
        self._frozen_at = -1

    def settle(self, rows: int) -> None:
        """The working memory holds ``rows`` rows: freeze if it grew enough since the last
        time (or this is the first)."""
        if self._frozen_at >= 0 and rows - self._frozen_at < self._every:
            return
        began = time.perf_counter()
        gc.collect()  # only what is not frozen yet: what came since the last time
        gc.freeze()
        self._frozen_at = rows
        # Counting the frozen objects walks them all (30 ms at a test process's heap, paid by
        # every start): only when the count is logged.
        if log.isEnabledFor(logging.DEBUG):
            log.debug(
                "heap frozen at %d rows (%d objects) in %.0f ms",
                rows,
                gc.get_freeze_count(),
                (time.perf_counter() - began) * 1000,
            )
