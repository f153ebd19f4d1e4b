"""Vectors of a long text's passages, so it is found by the meaning of any of its parts.

The model reads a text's first 256 tokens (about 190 words): a design document, transcript or
log was found by meaning only through its beginning. A text longer than one passage of the
full-text index (``text_index.passages``: 150 words, the next 100 words on) gets one vector
per passage besides its own, and a row's similarity to a query is the best of its own
vector's and its passages'. Measured with the bundled model on LoCoMo's sessions stored as
one transcript each (128 texts, median 518 words; 599 questions whose answer lies in one
session; rank of that session by cosine): R@3 0.449 by the text's vector alone, 0.668 with
its passages (0.141 and 0.714 for questions about a session's later half). The first passage
has a vector too, though the text's own covers its words: without it R@3 was 0.651, and 0.552
for questions about a session's first fifth (0.657 with it).

The text's own vector stays what it was: learning, pruning's near-duplicates and feedback
read it alone. Passages are kept in the working memory (``PassageVectors``, int8 like the
rows' own) and in the search index's ``passages`` table, beside its rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from doxa.store.embedder import Vectors
from doxa.store.text_index import PASSAGE_STEP, PASSAGE_WORDS, passages
from doxa.store.vector_matrix import VectorMatrix

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

#: A text of more than ``PASSAGE_WORDS`` words holds more characters than this (a letter and a
#: space each): a shorter one is not split to learn it is one passage.
_SHORTEST_LONG = 2 * PASSAGE_WORDS


def extra_passages(text: str) -> list[str]:
    """The passages of ``text`` that get a vector of their own, numbered from 0: none for a
    text of one passage (at most ``text_index.PASSAGE_WORDS`` words)."""
    found = passages(text)
    return found if len(found) > 1 else []


def embeddings_of(text: str) -> int:
    """How many vectors ``text`` is embedded as: its own and one per ``extra_passages``
    (counted without making them)."""
    if len(text) <= _SHORTEST_LONG:
        return 1
    words = len(text.split())
    if words <= PASSAGE_WORDS:
        return 1
    return 2 + len(range(0, words - PASSAGE_WORDS, PASSAGE_STEP))


@dataclass(frozen=True)
class Passages:
    """Passage vectors of some texts: ``vectors[i]`` is passage ``numbers[i]`` of the text at
    position ``of[i]`` of the texts they were embedded with."""

    of: IntArray
    numbers: IntArray
    vectors: Vectors

    @staticmethod
    def none(dim: int) -> Passages:
        """No passages."""
        return Passages(
            np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros((0, dim), np.float32)
        )

    def __len__(self) -> int:
        return len(self.of)

    def of_texts(self, keep: Sequence[int]) -> Passages:
        """The passages of the texts at positions ``keep``, ``of`` renumbered to positions
        in ``keep``."""
        position = {k: i for i, k in enumerate(keep)}
        chosen = np.array([int(k) in position for k in self.of], dtype=bool).reshape(-1)
        return Passages(
            np.array([position[int(k)] for k in self.of[chosen]], dtype=np.int64),
            self.numbers[chosen],
            self.vectors[chosen],
        )


def embed_with_passages(
    embed: Callable[[list[str]], Vectors], texts: list[str], own: bool = True
) -> tuple[Vectors, Passages]:
    """Embed ``texts`` and their passages (``extra_passages``) in one call to ``embed``.
    ``own`` False: the passages alone (the texts' own vectors returned are then empty)."""
    of: list[int] = []
    numbers: list[int] = []
    extra: list[str] = []
    for position, text in enumerate(texts):
        found = extra_passages(text) if len(text) > _SHORTEST_LONG else []
        of += [position] * len(found)
        numbers += range(len(found))
        extra += found
    mine = texts if own else []
    vectors = embed(mine + extra)
    return vectors[: len(mine)], Passages(
        np.array(of, dtype=np.int64), np.array(numbers, dtype=np.int64), vectors[len(mine) :]
    )


def is_long(text: str) -> bool:
    """Whether ``text`` has passages (``extra_passages``), checked cheaply for short texts."""
    return len(text) > _SHORTEST_LONG and len(passages(text)) > 1


class PassageVectors:
    """Passage vectors of the working memory's rows, each slot owned by one row.

    Slots are never reused (a forgotten row's stay, as zeros owned by no row), as the rows'
    own are not.

    Args:
        dim: embedding dimension.
    """

    def __init__(self, dim: int) -> None:
        self.dim = dim
        # Made with the first passage: a memory of short texts holds none, and scans nothing.
        self._matrix: VectorMatrix | None = None
        self._owner: IntArray = np.zeros(0, dtype=np.int64)  # -1: forgotten
        self._number: IntArray = np.zeros(0, dtype=np.int64)  # of the passage in its text
        self._count = 0
        self._slots: dict[int, IntArray] = {}
        # Per row: whether it holds passages (the pool's rows are looked up at once).
        self._holding: npt.NDArray[np.bool_] = np.zeros(1, dtype=bool)

    def __len__(self) -> int:
        """Passages held (forgotten ones not counted)."""
        return sum(len(s) for s in self._slots.values())

    def count(self, row: int) -> int:
        """How many passages ``row`` holds."""
        slots = self._slots.get(row)
        return 0 if slots is None else len(slots)

    def put(
        self, owners: IntArray | list[int], vectors: FloatArray, numbers: IntArray | list[int]
    ) -> None:
        """Add passage vectors, ``owners[i]``'s passage ``numbers[i]`` (numbered from 0 in its
        text: ``extra_passages``) in ``vectors[i]`` (to those a row holds: ``clear`` it first
        to replace them)."""
        owners = np.asarray(owners, dtype=np.int64).reshape(-1)
        if len(owners) == 0:
            return
        if self._matrix is None:
            self._matrix = VectorMatrix(self.dim, max(len(owners), 1024))
        slots = np.arange(self._count, self._count + len(owners), dtype=np.int64)
        self._matrix.put(slots, vectors)
        if len(self._owner) < self._count + len(owners):
            grown = np.full(max(2 * len(self._owner), self._count + len(owners)), -1, np.int64)
            grown[: self._count] = self._owner[: self._count]
            self._owner = grown
            grown_numbers = np.zeros(len(grown), np.int64)
            grown_numbers[: self._count] = self._number[: self._count]
            self._number = grown_numbers
        self._owner[slots] = owners
        self._number[slots] = np.asarray(numbers, dtype=np.int64).reshape(-1)
        self._count += len(owners)
        if len(self._holding) <= int(owners.max()):
            grown_rows = np.zeros(max(2 * len(self._holding), int(owners.max()) + 1), dtype=bool)
            grown_rows[: len(self._holding)] = self._holding
            self._holding = grown_rows
        self._holding[owners] = True
        for row in np.unique(owners):
            held = self._slots.get(int(row))
            mine = slots[owners == row]
            self._slots[int(row)] = mine if held is None else np.concatenate([held, mine])

    def clear(self, row: int) -> None:
        """Forget ``row``'s passages (forgotten or purged)."""
        slots = self._slots.pop(row, None)
        if slots is None or self._matrix is None:
            return
        self._holding[row] = False
        for slot in slots:
            self._matrix.clear(int(slot))
        self._owner[slots] = -1

    def scores(self, row: int, query: FloatArray) -> FloatArray:
        """Similarity of ``query`` (unrounded) to each passage ``row`` holds, by passage
        number (0 for one it lacks); empty when it holds none."""
        slots = self._slots.get(row)
        if slots is None or self._matrix is None:
            return np.zeros(0, dtype=np.float32)
        numbers = self._number[slots]
        out = np.zeros(int(numbers.max()) + 1, dtype=np.float32)
        out[numbers] = self._matrix.refined(query, slots)
        return out

    def widen(self, similarity: FloatArray, query: FloatArray) -> None:
        """Raise each row's entry of ``similarity`` (rows ``0..len-1``, scanned) to its best
        passage's, where that is higher."""
        if self._matrix is None or not self._slots:
            return
        count = self._count
        scores = self._matrix.similarity(query, count)
        owners = self._owner[:count]
        keep = (owners >= 0) & (owners < len(similarity))
        np.maximum.at(similarity, owners[keep], scores[keep])

    def refined(self, query: FloatArray, rows: IntArray, scores: FloatArray) -> FloatArray:
        """``scores`` (of ``rows``, by their own vectors) raised to each row's best passage
        scored with the unrounded query (``VectorMatrix.refined``)."""
        if self._matrix is None or not self._slots or len(rows) == 0:
            return scores
        holding = self._holding[np.minimum(rows, len(self._holding) - 1)] & (
            rows < len(self._holding)
        )
        if not holding.any():
            return scores
        # Each slot's place in ``rows`` (-1: not asked), with no loop over the rows.
        place = np.full(int(rows.max()) + 1, -1, dtype=np.int64)
        place[rows[holding]] = np.flatnonzero(holding)
        owners = self._owner[: self._count]
        slots = np.flatnonzero((owners >= 0) & (owners < len(place)))
        where = place[owners[slots]]
        slots, where = slots[where >= 0], where[where >= 0]
        best = scores.copy()
        np.maximum.at(best, where, self._matrix.refined(query, slots))
        return best
