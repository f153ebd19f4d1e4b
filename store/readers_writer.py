"""A readers-writer lock: any number of readers at once, or one writer alone.

The working memory is read by every recall and changed by every write. Recalls must run side
by side (16 clients, one lock: recall p99 626 ms), and a write must never show a recall half
of its change. Writers are preferred: once one waits, new readers wait behind it, so a steady
stream of recalls cannot starve a remember (each write holds the lock for well under a
millisecond per memory, so readers wait little).

Not reentrant: a thread holding it must not ask for it again (a reader that asked again
while a writer waits would wait for that writer, which waits for the reader).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ReadersWriterLock:
    """Shared (``reading``) or exclusive (``writing``) access, writers first."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._readers = 0
        self._writing = False
        self._readers_waiting = 0
        self._writers_waiting = 0

    @property
    def readers(self) -> int:
        """How many threads hold it for reading now (for tests and diagnostics)."""
        return self._readers

    @property
    def written(self) -> bool:
        """Whether a writer holds it now (for tests and diagnostics)."""
        return self._writing

    @property
    def readers_waiting(self) -> int:
        """How many readers wait for it now (for tests and diagnostics)."""
        return self._readers_waiting

    @property
    def writers_waiting(self) -> int:
        """How many writers wait for it now (for tests and diagnostics)."""
        return self._writers_waiting

    def acquire_read(self, timeout: float | None = None) -> bool:
        """Take it for reading, waiting while a writer holds it or waits for it.

        Returns False if ``timeout`` seconds passed first.
        """
        with self._changed:
            if self._writing or self._writers_waiting:
                self._readers_waiting += 1
                try:
                    if not self._changed.wait_for(
                        lambda: not self._writing and not self._writers_waiting, timeout
                    ):
                        return False
                finally:
                    self._readers_waiting -= 1
            self._readers += 1
            return True

    def release_read(self) -> None:
        """Give back a read taken with ``acquire_read``."""
        with self._changed:
            self._readers -= 1
            if self._readers == 0:
                self._changed.notify_all()

    def acquire_write(self, timeout: float | None = None) -> bool:
        """Take it alone, waiting for the readers and the writer holding it.

        Returns False if ``timeout`` seconds passed first.
        """
        with self._changed:
            self._writers_waiting += 1
            try:
                if not self._changed.wait_for(
                    lambda: not self._writing and not self._readers, timeout
                ):
                    return False
            finally:
                self._writers_waiting -= 1
                if not self._writers_waiting:
                    # Readers held back for a writer that gave up (or got it) may check again.
                    self._changed.notify_all()
            self._writing = True
            return True

    def release_write(self) -> None:
        """Give back the lock taken with ``acquire_write``."""
        with self._changed:
            self._writing = False
            self._changed.notify_all()

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Hold it for reading for the block."""
        self.acquire_read()
        try:
            yield
        finally:
            self.release_read()

    @contextmanager
    def writing(self) -> Iterator[None]:
        """Hold it alone for the block."""
        self.acquire_write()
        try:
            yield
        finally:
            self.release_write()
