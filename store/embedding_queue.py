"""Remembered texts embedded on a background thread, in batches, after their graph write.

Embedding a memory's text takes about 3 ms of the model on both cores; the graph write that
makes the memory durable about 1.5 ms. So ``Memory.remember`` commits the graph and the
working memory (the memory is found by its words at once), queues the text here and
answers. This thread waits ``delay_s`` (2 ms) for more texts, so that a burst of remembers,
an agent storing several things from one turn, shares one forward pass, and so the
remember's answer leaves before the model takes both cores; then it embeds everything
queued as one batch (a long text's passages with it: ``passage_vectors``), gives the
vectors to the working memory and hands the rows to the index writer (see
``Memory._deliver``). A recall's wait for embeddings so covers a long text's passages too.

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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from doxa.store.batch_queue import BatchQueue
from doxa.store.embedder import Vectors
from doxa.store.passage_vectors import Passages, embed_with_passages, embeddings_of

log = logging.getLogger(__name__)


@dataclass
class _Texts:
    ids: list[str]
    texts: list[str]


class EmbeddingQueue(BatchQueue[_Texts]):
    """Embeds queued texts in order, a batch at a time, on its own thread.

    Args:
        embed: texts -> unit vectors (the memory's embedder).
        deliver: called on this thread with (ids, texts, vectors, passages) of each
            embedded batch.
        delay_s: how long the first text queued waits for others to share its batch.
        batch_rows: texts that start a batch at once (a batch takes whole puts).
        retry_s: pause before the one retry of a failed embedding.
    """

    def __init__(
        self,
        embed: Callable[[list[str]], Vectors],
        deliver: Callable[[list[str], list[str], Vectors, Passages], None],
        delay_s: float = 0.002,
        batch_rows: int = 256,
        retry_s: float = 0.5,
    ) -> None:
        self._embed = embed
        self._deliver = deliver
        super().__init__("doxa-embed", delay_s, batch_rows, retry_s)

    def put(self, ids: Sequence[str], texts: Sequence[str]) -> int:
        """Queue texts to embed; returns the ticket to ``wait`` for. Never blocks.

        Counted as the vectors they take (a long text's passages too: ``embeddings_of``), so
        batches and ``wait_below`` bound the model's work and memory, not the texts: a text
        at the 32,000-character limit is 54 embeddings of prose, 161 of one-letter words."""
        return self._enqueue(
            _Texts(list(ids), list(texts)), sum(embeddings_of(text) for text in texts)
        )

    def close(self, timeout: float = 60.0) -> None:
        """Embed and deliver what is queued, then stop."""
        super().close(timeout)

    def _abandon(self, items: list[_Texts]) -> None:
        log.warning(
            "embedding: %d queued memories were not embedded before close; the next start "
            "embeds them",
            sum(len(t.ids) for t in items),
        )

    def _process(self, items: list[_Texts]) -> bool:
        ids = [i for t in items for i in t.ids]
        texts = [text for t in items for text in t.texts]
        try:
            self._deliver(ids, texts, *embed_with_passages(self._embedding, texts))
        except Exception:
            log.exception(
                "embedding: %d memories are found by their words only until the next start",
                len(ids),
            )
        return True  # done or given up: a failing model must not hold every recall

    def _embedding(self, texts: list[str]) -> Vectors:
        try:
            return self._embed(texts)
        except Exception:
            log.exception("embedding failed; retrying in %.1f s", self._retry_s)
        self._pause(self._retry_s)
        return self._embed(texts)
