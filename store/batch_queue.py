"""Work done in order on a background thread, a batch at a time.

The memory puts two kinds of work behind its answers: embedding remembered texts
(``embedding_queue``) and writing the search index (``index_writer``). Both are queues of
this kind: callers ``_enqueue`` an item and get a ticket; the thread waits up to ``delay_s``
after the first item queued (or until ``batch_rows`` rows are queued, someone ``wait``s, or
the queue closes) so later items can share the batch, takes a batch (``_take``) and hands it
to ``_process``. A batch ``_process`` could not do goes back to the head of the queue and is
tried again after ``retry_s``; ``close`` gives it one more try, then abandons what is left.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class Queued(Generic[T]):
    """One item, its ticket and how many rows it counts for."""

    ticket: int
    rows: int
    item: T


class BatchQueue(Generic[T]):
    """Items done in order, a batch at a time, on a thread (see the module docstring).

    Subclasses implement ``_process`` and may override ``_take``, ``_idle`` and
    ``_abandon``; they set their own attributes before calling ``__init__``, which starts
    the thread.

    Args:
        name: the thread's name.
        delay_s: how long the first item queued waits for others to share its batch.
        batch_rows: queued rows that start a batch without waiting.
        retry_s: pause before a batch that failed is tried again.
    """

    def __init__(self, name: str, delay_s: float, batch_rows: int, retry_s: float) -> None:
        self._delay_s = delay_s
        self._batch_rows = batch_rows
        self._retry_s = retry_s
        self._queue: deque[Queued[T]] = deque()
        self._changed = threading.Condition()
        self._queued = 0  # ticket of the last item queued
        self._done = 0  # ticket of the last item done (or abandoned)
        self._queued_rows = 0  # rows in the queue
        self._pending_rows = 0  # rows in the queue or being processed
        self._first_queued_at = 0.0
        self._waiters = 0
        self._closing = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    # ---- the caller's side -------------------------------------------------------------------

    def _enqueue(self, item: T, rows: int) -> int:
        """Queue ``item``; returns its ticket (the last ticket when ``rows`` is 0: waiting
        on it still orders a reader after every item queued before)."""
        with self._changed:
            if self._closing:
                raise RuntimeError(f"{self._thread.name} is closed")
            if rows == 0:
                return self._queued
            self._queued += 1
            first = not self._queue
            if first:
                self._first_queued_at = time.monotonic()
            self._queue.append(Queued(self._queued, rows, item))
            self._queued_rows += rows
            self._pending_rows += rows
            if first or self._queued_rows >= self._batch_rows:
                self._changed.notify_all()  # the thread starts its delay, or works now
            return self._queued

    @property
    def queued(self) -> int:
        """The ticket of the last item queued (``wait`` for it to see all queued so far)."""
        with self._changed:
            return self._queued

    @property
    def pending(self) -> int:
        """Items queued and not yet done."""
        with self._changed:
            return self._queued - self._done

    @property
    def pending_rows(self) -> int:
        """Rows queued or being processed."""
        with self._changed:
            return self._pending_rows

    def wait(self, ticket: int | None = None, timeout: float | None = None) -> bool:
        """Block until the item ``ticket`` (default: every item queued so far) is done; a
        waiter cuts the batching delay short. Returns False if ``timeout`` passed first."""
        with self._changed:
            target = self._queued if ticket is None else ticket
            if self._done >= target:
                return True
            self._waiters += 1
            self._changed.notify_all()
            try:
                return self._changed.wait_for(lambda: self._done >= target, timeout)
            finally:
                self._waiters -= 1

    def wait_below(self, rows: int, timeout: float | None = None) -> bool:
        """Block while ``rows`` or more rows are pending (backpressure for producers)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._pending_rows < rows, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Do what is queued (a failing batch gets one more try), then stop; what is still
        queued after ``timeout`` is abandoned (``_abandon``)."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout)
        with self._changed:
            if self._queue:
                self._abandon([q.item for q in self._queue])
                self._queue.clear()
                self._queued_rows = self._pending_rows = 0
                self._done = self._queued
                self._changed.notify_all()

    # ---- for subclasses ------------------------------------------------------------------------

    def _process(self, items: list[T]) -> bool:
        """Do one batch; False when it failed and should be tried again."""
        raise NotImplementedError

    def _take(self) -> list[Queued[T]]:
        """The items at the head of the queue that make one batch (called with the lock
        held): whole items up to ``batch_rows`` rows, and at least one."""
        batch = [self._queue.popleft()]
        rows = batch[0].rows
        while self._queue and rows + self._queue[0].rows <= self._batch_rows:
            rows += self._queue[0].rows
            batch.append(self._queue.popleft())
        return batch

    def _idle(self) -> None:
        """Called on the thread whenever the queue has just become empty."""

    def _abandon(self, items: list[T]) -> None:
        """Called by ``close`` with the items it could not do (the lock is held)."""

    def _pause(self, seconds: float) -> None:
        """Sleep on the thread; ``close`` wakes it early."""
        with self._changed:
            if not self._closing:
                self._changed.wait(seconds)

    # ---- the thread ----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._queue) or self._closing)
                if not self._queue:
                    return
                # Let more items join this batch, unless enough are queued or awaited.
                while not (
                    self._closing
                    or self._waiters
                    or self._queued_rows >= self._batch_rows
                    or time.monotonic() - self._first_queued_at >= self._delay_s
                ):
                    self._changed.wait(self._first_queued_at + self._delay_s - time.monotonic())
                batch = self._take()
                rows = sum(q.rows for q in batch)
                self._queued_rows -= rows
                if self._queue:
                    self._first_queued_at = time.monotonic()
            done = self._process([q.item for q in batch])
            with self._changed:
                if not done:
                    self._queue.extendleft(reversed(batch))
                    self._queued_rows += rows
                    self._first_queued_at = time.monotonic() - self._delay_s  # a retry is due
                    if self._closing:  # tried once more after close: close abandons the rest
                        return
                    self._changed.wait(self._retry_s)  # close() wakes it for a last try
                    continue
                self._done = batch[-1].ticket
                self._pending_rows -= rows
                self._changed.notify_all()
                idle = not self._queue
            if idle:
                self._idle()
