"""Giving freed native memory back to the operating system.

glibc's allocator keeps the pages of freed blocks for reuse, so memory that Kùzu frees (when
its database closes, after a checkpoint, a long read's result) stays in the process's RSS.
``malloc_trim(0)`` returns those pages: 45-90 MB (10-17%) of a process that had run 1,000 to
4,000 remember -> recall -> feedback loops, 32-73 MB of an HTTP server after 150 s of 8
clients. It walks the free lists (20-60 ms for a few hundred MB here, off the GIL, on the
thread that checkpoints), so it runs at most every ``EVERY_S``. Elsewhere than glibc this
does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import threading
import time
from collections.abc import Callable

#: Seconds between two trims that ``give_back(now=False)`` allows.
EVERY_S = 30.0

_last = -EVERY_S
_lock = threading.Lock()


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):  # not glibc (macOS, musl without it)
        return None
    return trim


def give_back(now: bool = True) -> None:
    """Return the freed pages of the process's heap to the operating system, if the C
    library can (glibc). With ``now`` False, only if the last time was ``EVERY_S`` ago."""
    global _last
    trim = _malloc_trim()
    if trim is None:
        return
    with _lock:
        moment = time.monotonic()
        if not now and moment - _last < EVERY_S:
            return
        _last = moment
    trim(0)
