"""Search-index writes applied in order on a background thread, behind the graph.

The graph is the memory's truth, and the working memory answers recall (vectors and full
text) the moment a write commits. The search index (LanceDB) keeps the vectors so a restart
need not embed every memory again; nothing reads it while the server runs. Appending to it
costs about 3 ms per call (a new fragment and a new manifest), a third of a single
``remember``. So ``Memory`` commits the graph, updates the working memory and hands the index
rows to this writer, which applies them in order, a batch at a time: it waits up to
``delay_s`` (or until ``batch_rows`` rows are queued, or someone waits for them) and writes
everything queued as one append, then compacts the index when it is idle.

If the process dies with writes still queued, the start-up repair finds the rows the graph
holds and the index lacks, and embeds them again: at most ``delay_s`` of writes.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from doxa.store.embedder import Vectors
from doxa.store.index import SearchIndex

log = logging.getLogger(__name__)

#: Rows per append when much is queued (a larger batch holds more memory for little gain).
MAX_BATCH_ROWS = 4096


@dataclass
class _Write:
    ticket: int
    kind: str  # "add" or "delete"
    ids: list[str]
    texts: list[str]
    vectors: Vectors | None


class IndexWriter:
    """Applies ``add`` and ``delete`` to a ``SearchIndex`` in order, on its own thread.

    Args:
        index: the search index it owns from now on (nobody else writes to it).
        maintenance_every: compact the index after this many changed rows.
        retry_s: pause before retrying a write that failed.
        delay_s: how long a write may wait for others to share its append.
        batch_rows: queued rows that start an append without waiting.
    """

    def __init__(
        self,
        index: SearchIndex,
        maintenance_every: int,
        retry_s: float = 1.0,
        delay_s: float = 0.5,
        batch_rows: int = 512,
    ) -> None:
        self._index = index
        self._maintenance_every = maintenance_every
        self._retry_s = retry_s
        self._delay_s = delay_s
        self._batch_rows = batch_rows
        self._queued_rows = 0
        self._first_queued_at = 0.0
        self._waiters = 0
        self._queue: deque[_Write] = deque()
        self._changed = threading.Condition()
        self._queued = 0  # ticket of the last write queued
        self._applied = 0  # ticket of the last write applied
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="doxa-index", daemon=True)
        self._thread.start()

    # ---- the caller's side -------------------------------------------------------------------

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: Vectors) -> int:
        """Queue rows to add; returns the write's ticket."""
        return self._enqueue("add", list(ids), list(texts), vectors)

    def delete(self, ids: Sequence[str]) -> int:
        """Queue rows to remove; returns the write's ticket."""
        return self._enqueue("delete", list(ids), [], None)

    @property
    def pending(self) -> int:
        """Writes queued and not yet applied."""
        with self._changed:
            return self._queued - self._applied

    def wait(self, ticket: int | None = None, timeout: float | None = None) -> bool:
        """Block until the write ``ticket`` (default: every write queued so far) is applied.

        Returns False if ``timeout`` seconds passed first (the index is failing; the writes
        stay queued and are retried).
        """
        with self._changed:
            target = self._queued if ticket is None else ticket
            self._waiters += 1
            self._changed.notify_all()  # someone is waiting: write now, not after the delay
            try:
                return self._changed.wait_for(lambda: self._applied >= target, timeout)
            finally:
                self._waiters -= 1

    def close(self, timeout: float = 30.0) -> None:
        """Apply what is queued (retrying failures until ``timeout``), then stop.

        Writes still failing then are dropped with a warning: the graph holds them, and the
        start-up repair puts them back into the index.
        """
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout)
        with self._changed:
            if self._queue:
                log.warning(
                    "search index: %d queued writes could not be applied; the next start "
                    "repairs the index from the graph",
                    len(self._queue),
                )
                self._queue.clear()
                self._queued_rows = 0
                self._applied = self._queued
                self._changed.notify_all()

    def _enqueue(self, kind: str, ids: list[str], texts: list[str], vectors: Vectors | None) -> int:
        with self._changed:
            if self._closing:
                raise RuntimeError("the search-index writer is closed")
            if not ids:  # nothing to write: waiting on the last ticket still orders reads
                return self._queued
            self._queued += 1
            first = not self._queue
            if first:
                self._first_queued_at = time.monotonic()
            self._queue.append(_Write(self._queued, kind, ids, texts, vectors))
            self._queued_rows += len(ids)
            if first or self._queued_rows >= self._batch_rows:
                self._changed.notify_all()  # the writer starts its delay, or writes now
            return self._queued

    # ---- the writer thread -------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._queue) or self._closing)
                if not self._queue:
                    return
                # Let more writes join this append, unless enough are queued or awaited.
                while not (
                    self._closing
                    or self._waiters
                    or self._queued_rows >= self._batch_rows
                    or time.monotonic() - self._first_queued_at >= self._delay_s
                ):
                    self._changed.wait(self._first_queued_at + self._delay_s - time.monotonic())
                batch = self._take()
                self._queued_rows -= sum(len(w.ids) for w in batch)
                if self._queue:
                    self._first_queued_at = time.monotonic()
            try:
                self._apply(batch)
            except Exception:
                log.exception("search index: a write failed; retrying in %.1f s", self._retry_s)
                with self._changed:
                    self._queue.extendleft(reversed(batch))
                    self._queued_rows += sum(len(w.ids) for w in batch)
                    self._first_queued_at = time.monotonic() - self._delay_s  # retry is due
                    if self._closing:  # tried once more after close; the repair does the rest
                        return
                    self._changed.wait(self._retry_s)  # close() wakes it for a last attempt
                continue
            with self._changed:
                self._applied = batch[-1].ticket
                self._changed.notify_all()
                idle = not self._queue
            if idle:
                self._maintain()

    def _take(self) -> list[_Write]:
        """The writes at the head of the queue that can be applied as one call."""
        first = self._queue.popleft()
        batch = [first]
        rows = len(first.ids)
        while (
            self._queue
            and self._queue[0].kind == first.kind
            and rows + len(self._queue[0].ids) <= MAX_BATCH_ROWS
        ):
            write = self._queue.popleft()
            batch.append(write)
            rows += len(write.ids)
        return batch

    def _apply(self, batch: list[_Write]) -> None:
        ids = [i for write in batch for i in write.ids]
        if not ids:
            return
        if batch[0].kind == "delete":
            self._index.delete(ids)
            return
        texts = [t for write in batch for t in write.texts]
        vectors = np.concatenate([w.vectors for w in batch if w.vectors is not None])
        self._index.add(ids, texts, vectors)

    def _maintain(self) -> None:
        try:
            if self._index.maintain(self._maintenance_every):
                log.info("search index compacted")
        except Exception:  # compaction is an optimisation: the index stays usable without it
            log.exception("search index: maintenance failed")
