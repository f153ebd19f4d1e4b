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
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from doxa.store.batch_queue import BatchQueue, Queued
from doxa.store.embedder import Vectors
from doxa.store.index import SearchIndex
from doxa.store.passage_vectors import Passages

log = logging.getLogger(__name__)

#: Rows per append when much is queued (a larger batch holds more memory for little gain).
MAX_BATCH_ROWS = 4096


@dataclass
class _Write:
    kind: str  # "add" or "delete"
    ids: list[str]
    texts: list[str]
    vectors: Vectors | None
    scrub: bool = False  # a delete whose rows must leave the index's files too
    passages: Passages | None = None  # an add's passages (``of``: positions in ``ids``)


class IndexWriter(BatchQueue[_Write]):
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
        super().__init__("doxa-index", delay_s, batch_rows, retry_s)

    def add(
        self,
        ids: Sequence[str],
        texts: Sequence[str],
        vectors: Vectors,
        passages: Passages | None = None,
    ) -> int:
        """Queue rows to add, with their ``passages``; returns the write's ticket."""
        rows = len(ids) + (0 if passages is None else len(passages))
        return self._enqueue(_Write("add", list(ids), list(texts), vectors, False, passages), rows)

    def delete(self, ids: Sequence[str], scrub: bool = False) -> int:
        """Queue rows to remove; returns the write's ticket. ``scrub``: then write the table
        anew (``SearchIndex.scrub``), so the rows' words leave its files and its earlier
        versions at once (a purge), not at some later maintenance."""
        return self._enqueue(_Write("delete", list(ids), [], None, scrub), len(ids))

    def close(self, timeout: float = 30.0) -> None:
        """Apply what is queued (retrying failures until ``timeout``), then stop.

        Writes still failing then are dropped with a warning: the graph holds them, and the
        start-up repair puts them back into the index.
        """
        super().close(timeout)

    def _abandon(self, items: list[_Write]) -> None:
        log.warning(
            "search index: %d queued writes could not be applied; the next start repairs the "
            "index from the graph",
            len(items),
        )

    def _take(self) -> list[Queued[_Write]]:
        """The writes at the head of the queue that can be applied as one call."""
        first = self._queue.popleft()
        batch = [first]
        rows = first.rows
        while (
            self._queue
            and self._queue[0].item.kind == first.item.kind
            and rows + self._queue[0].rows <= MAX_BATCH_ROWS
        ):
            write = self._queue.popleft()
            batch.append(write)
            rows += write.rows
        return batch

    def _process(self, items: list[_Write]) -> bool:
        try:
            self._apply(items)
        except Exception:
            log.exception("search index: a write failed; retrying in %.1f s", self._retry_s)
            return False
        return True

    def _apply(self, batch: list[_Write]) -> None:
        ids = [i for write in batch for i in write.ids]
        if not ids:
            return
        if batch[0].kind == "delete":
            self._index.delete(ids)
            if any(write.scrub for write in batch):
                self._index.scrub()
            return
        texts = [t for write in batch for t in write.texts]
        vectors = np.concatenate([w.vectors for w in batch if w.vectors is not None])
        passages = [
            (w.ids, w.passages) for w in batch if w.passages is not None and len(w.passages)
        ]
        if passages:
            # Before the rows: a row written is taken as whole. Should the rows' append then
            # fail, its retry appends the passages again, and the repair at the next start
            # finds a row's passages doubled and embeds them anew.
            self._index.add_passages(
                [ids_of[int(k)] for ids_of, p in passages for k in p.of],
                [int(n) for _, p in passages for n in p.numbers],
                np.concatenate([p.vectors for _, p in passages]),
            )
        self._index.add(ids, texts, vectors)

    def _idle(self) -> None:
        try:
            if self._index.maintain(self._maintenance_every):
                log.info("search index compacted")
        except Exception:  # compaction is an optimisation: the index stays usable without it
            log.exception("search index: maintenance failed")
