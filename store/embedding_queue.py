"""Remembered texts embedded on a background thread, in batches, after their graph write.

Embedding a memory's text takes about 3 ms of the model on both cores; the graph write that
makes the memory durable about 1.5 ms. So ``Memory.remember`` commits the graph and the
working memory (the memory is found by its words at once), queues the text here and
answers. This thread waits ``delay_s`` (2 ms) for more texts, so that a burst of remembers,
an agent storing several things from one turn, shares one forward pass, and so the
remember's answer leaves before the model takes both cores; then it embeds everything
queued as one batch, gives the vectors to the working memory and hands the rows to the
index writer (see ``Memory._deliver``).

A recall first waits for every embedding queued before it began, so it never misses a memory
by meaning: what was remembered is recalled, and a recall right after a remember waits about
what the remember no longer does. ``wait_below`` keeps the queue bounded: a writer faster
than the model waits before its write, not after.

If the model fails twice on a batch, the batch is dropped with an error in the log: its
memories are in the graph and found by their words until the next start, whose repair
embeds what the search index lacks.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from doxa.store.embedder import Vectors

log = logging.getLogger(__name__)


@dataclass
class _Texts:
    ticket: int
    ids: list[str]
    texts: list[str]


class EmbeddingQueue:
    """Embeds queued texts in order, a batch at a time, on its own thread.

    Args:
        embed: texts -> unit vectors (the memory's embedder).
        deliver: called on this thread with (ids, texts, vectors) of each embedded batch.
        delay_s: how long the first text queued waits for others to share its batch.
        batch_rows: texts that start a batch at once (a batch takes whole puts).
        retry_s: pause before the one retry of a failed embedding.
    """

    def __init__(
        self,
        embed: Callable[[list[str]], Vectors],
        deliver: Callable[[list[str], list[str], Vectors], None],
        delay_s: float = 0.002,
        batch_rows: int = 256,
        retry_s: float = 0.5,
    ) -> None:
        self._embed = embed
        self._deliver = deliver
        self._delay_s = delay_s
        self._batch_rows = batch_rows
        self._retry_s = retry_s
        self._queue: deque[_Texts] = deque()
        self._changed = threading.Condition()
        self._queued = 0  # ticket of the last put
        self._done = 0  # ticket of the last put delivered (or given up)
        self._rows = 0  # texts queued or being embedded
        self._first_queued_at = 0.0
        self._waiters = 0
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="doxa-embed", daemon=True)
        self._thread.start()

    # ---- the caller's side -------------------------------------------------------------------

    def put(self, ids: Sequence[str], texts: Sequence[str]) -> int:
        """Queue texts to embed; returns the ticket to ``wait`` for. Never blocks."""
        with self._changed:
            if self._closing:
                raise RuntimeError("the embedding queue is closed")
            if not ids:
                return self._queued
            self._queued += 1
            if not self._queue:
                self._first_queued_at = time.monotonic()
            self._queue.append(_Texts(self._queued, list(ids), list(texts)))
            self._rows += len(ids)
            self._changed.notify_all()
            return self._queued

    @property
    def queued(self) -> int:
        """The ticket of the last put (``wait`` for it to see everything queued so far)."""
        with self._changed:
            return self._queued

    @property
    def pending_rows(self) -> int:
        """Texts queued or being embedded."""
        with self._changed:
            return self._rows

    def wait(self, ticket: int | None = None, timeout: float | None = None) -> bool:
        """Block until ``ticket`` (default: everything queued so far) is delivered; a waiter
        cuts the batching delay short. Returns False if ``timeout`` seconds passed first."""
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
        """Block while ``rows`` or more texts are queued (backpressure for writers)."""
        with self._changed:
            return self._changed.wait_for(lambda: self._rows < rows, timeout)

    def close(self, timeout: float = 60.0) -> None:
        """Embed and deliver what is queued, then stop."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join(timeout)
        with self._changed:
            if self._queue:
                log.warning(
                    "embedding: %d queued memories were not embedded before close; the next "
                    "start embeds them",
                    sum(len(t.ids) for t in self._queue),
                )
                self._queue.clear()
                self._rows = 0
                self._done = self._queued
                self._changed.notify_all()

    # ---- the embedding thread ----------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._queue) or self._closing)
                if not self._queue:
                    return
                while not (
                    self._closing
                    or self._waiters
                    or sum(len(t.ids) for t in self._queue) >= self._batch_rows
                    or time.monotonic() - self._first_queued_at >= self._delay_s
                ):
                    self._changed.wait(self._first_queued_at + self._delay_s - time.monotonic())
                batch = [self._queue.popleft()]
                rows = len(batch[0].ids)
                while self._queue and rows + len(self._queue[0].ids) <= self._batch_rows:
                    rows += len(self._queue[0].ids)
                    batch.append(self._queue.popleft())
                if self._queue:
                    self._first_queued_at = time.monotonic()
            ids = [i for t in batch for i in t.ids]
            texts = [text for t in batch for text in t.texts]
            try:
                self._deliver(ids, texts, self._embedding(texts))
            except Exception:
                log.exception(
                    "embedding: %d memories are found by their words only until the next start",
                    len(ids),
                )
            with self._changed:
                self._done = batch[-1].ticket
                self._rows -= rows
                self._changed.notify_all()

    def _embedding(self, texts: list[str]) -> Vectors:
        try:
            return self._embed(texts)
        except Exception:
            log.exception("embedding failed; retrying in %.1f s", self._retry_s)
        with self._changed:
            self._changed.wait(self._retry_s)  # close() wakes it early
        return self._embed(texts)
