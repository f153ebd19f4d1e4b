"""What feedback taught recall: the query of every judged recall (and when it was judged), and
each judged result with its sign (+1 accepted, -1 rejected) and, for an acceptance, how many
times since a recall alike to its query showed the result without accepting it (``seen``).

A judged recall's query vector is kept once, however many results were judged, and both
tables grow by doubling: a feedback loop used to copy every vector learned so far on each
call (quadratic time; after 5,000 feedbacks each call copied 30 MB) and to keep one copy of
the query per judged result.

Two queries count as alike (``alike``) only if their details do not differ too
(``details.differ``): "what is the total of invoice 98?" is 0.95 alike to "… invoice 99?",
and what was accepted for the one is no answer to the other. A judged query alike by its
vector but with other details is likened 0: it lends nothing, neither to the base ranking
nor as a link the trained model weighs (likened just below ``alike``, it had made the
strongest "far" link there is, and the model lifted invoice 98's total for invoice 99).
"""

from __future__ import annotations

import array
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from doxa.store.details import Details, differ

FloatArray = npt.NDArray[np.float32]
IntArray = npt.NDArray[np.int64]
A = TypeVar("A", bound=npt.NDArray[np.generic])


@dataclass(frozen=True)
class JudgedRecall:
    """A judged recall to learn (``JudgedQueries.add_all``): its query's vector, each judged
    row's sign, when it was judged (microseconds), every row it showed and its query's
    details (None: not known: no details differ)."""

    vector: FloatArray
    judged: dict[int, float]
    at: int
    shown: list[int]
    details: Details | None = None


@dataclass(frozen=True)
class Judgements:
    """Every judgement, by the query judged (``JudgedQueries.every``): each judged query's
    likeness to a new one and when it was judged (microseconds); each judgement's row, sign,
    query (an index into the first two) and impressions without a hit since (``seen``).

    Per query, not per judgement: what depends on the query (likeness, age, decay) is
    computed once for its ten or so judged results, and the judgements of queries that lend
    nothing are never gathered.
    """

    similarity: FloatArray
    judged_at: IntArray
    rows: IntArray
    signs: FloatArray
    query_of: IntArray
    unrewarded: FloatArray

    def on(self, queries: npt.NDArray[np.bool_]) -> tuple[IntArray, FloatArray, IntArray]:
        """The judgements made on the chosen ``queries`` (a mask over them): (rows, signs,
        their queries)."""
        keep = queries[self.query_of]
        return self.rows[keep], self.signs[keep], self.query_of[keep]

    def unrewarded_on(self, queries: npt.NDArray[np.bool_]) -> FloatArray:
        """The impressions without a hit of the judgements ``on`` the chosen ``queries``."""
        return self.unrewarded[queries[self.query_of]]


class JudgedQueries:
    """Query vectors of judged recalls and the (row, sign) judgements made on each.

    Args:
        dim: the embedding dimension.
    """

    def __init__(self, dim: int) -> None:
        self._queries: FloatArray = np.zeros((16, dim), dtype=np.float32)
        self._judged_at: IntArray = np.zeros(16, dtype=np.int64)
        # For ``_kin`` over thousands of queries at once: per query, how many details it
        # has; per detail, the queries having it; per word, the queries with details
        # saying it.
        self._detail_count: IntArray = np.zeros(16, dtype=np.int64)
        self._by_detail: dict[str, array.array[int]] = {}
        self._by_word: dict[str, array.array[int]] = {}
        self._n_queries = 0
        self._rows: IntArray = np.zeros(64, dtype=np.int64)
        self._signs: FloatArray = np.zeros(64, dtype=np.float32)
        self._query_of: IntArray = np.zeros(64, dtype=np.int64)
        self._unrewarded: FloatArray = np.zeros(64, dtype=np.float32)
        self._n = 0

    def __len__(self) -> int:
        """How many judgements are held."""
        return self._n

    def add(
        self,
        query_vector: FloatArray,
        judged: dict[int, float],
        at: int = 0,
        details: Details | None = None,
    ) -> None:
        """Learn one judged recall: its query, when it was judged (microseconds), each
        judged row's sign and its query's details."""
        if not judged:
            return
        # A query without details never differs: counted as none, as are the many such.
        kept = details if details is not None and details[0] else None
        if self._n_queries == len(self._queries):
            self._queries = _grown(self._queries)
            self._judged_at = _grown(self._judged_at)
            self._detail_count = _grown(self._detail_count)
        self._detail_count[self._n_queries] = 0 if kept is None else len(kept[0])
        if kept is not None:
            for index, words in ((self._by_detail, kept[0]), (self._by_word, kept[1])):
                for word in words:
                    index.setdefault(word, array.array("q")).append(self._n_queries)
        self._queries[self._n_queries] = query_vector
        self._judged_at[self._n_queries] = at
        k = len(judged)
        while self._n + k > len(self._rows):
            self._rows, self._signs = _grown(self._rows), _grown(self._signs)
            self._query_of, self._unrewarded = _grown(self._query_of), _grown(self._unrewarded)
        end = self._n + k
        self._rows[self._n : end] = np.fromiter(judged.keys(), dtype=np.int64, count=k)
        self._signs[self._n : end] = np.fromiter(judged.values(), dtype=np.float32, count=k)
        self._query_of[self._n : end] = self._n_queries
        self._unrewarded[self._n : end] = 0
        self._n, self._n_queries = end, self._n_queries + 1

    def seen(
        self,
        query_vector: FloatArray,
        shown: IntArray,
        accepted: IntArray,
        alike: float,
        details: Details | None = None,
    ) -> None:
        """A judged recall of ``query_vector`` (with ``details``) showed ``shown`` and accepted
        ``accepted`` (rows): each earlier acceptance of a row shown, on a query at least
        ``alike`` similar (and whose details do not differ), counts one impression without a
        hit, or none since if the row was accepted again.

        Per acceptance, not per row: a result accepted for one question and shown for
        unrelated others is no less the answer to the first."""
        if self._n == 0 or len(shown) == 0:
            return
        # The acceptances of the rows shown first: only their queries need a likeness.
        linked = np.flatnonzero(
            (self._signs[: self._n] > 0) & np.isin(self._rows[: self._n], shown)
        )
        if len(linked) == 0:
            return
        linked = linked[self._queries[self._query_of[linked]] @ query_vector >= alike]
        linked = linked[self._kin(self._query_of[linked], details)]
        hit = np.isin(self._rows[linked], accepted)
        self._unrewarded[linked[~hit]] += 1
        self._unrewarded[linked[hit]] = 0

    def add_all(self, recalls: Sequence[JudgedRecall], alike: float) -> None:
        """Learn ``recalls`` in the order they were judged, as ``seen`` then ``add`` for each
        would, in time that grows with each row's impressions times its acceptances rather
        than with the square of the recalls (a start replays every judged recall)."""
        if self._n:  # what is held would have to see them too: one at a time
            for recall in recalls:
                accepted = [row for row, sign in recall.judged.items() if sign > 0]
                shown, hits = np.asarray(recall.shown), np.asarray(accepted)
                self.seen(recall.vector, shown, hits, alike, recall.details)
                self.add(recall.vector, recall.judged, recall.at, recall.details)
            return
        if not recalls:
            return
        vectors = np.stack([recall.vector for recall in recalls]).astype(np.float32, copy=False)
        # Per row, every recall that showed it (in order) and whether it accepted it; per
        # acceptance, where its judgement is kept.
        shown_by: dict[int, list[tuple[int, bool]]] = defaultdict(list)
        kept_at: dict[tuple[int, int], int] = {}
        for k, recall in enumerate(recalls):
            first = self._n
            self.add(recall.vector, recall.judged, recall.at, recall.details)
            for offset, (row, sign) in enumerate(recall.judged.items()):
                if sign > 0:
                    kept_at[(k, row)] = first + offset
            for row in recall.shown:
                shown_by[row].append((k, recall.judged.get(row, 0.0) > 0))
        for row, events in shown_by.items():
            by = np.array([k for k, _ in events], dtype=np.int64)
            hits = np.array([hit for _, hit in events], dtype=bool)
            for i in np.flatnonzero(hits[:-1]).tolist():
                position = kept_at.get((int(by[i]), row))
                if position is None:
                    continue
                close = vectors[by[i + 1 :]] @ vectors[by[i]] >= alike
                accepting = recalls[int(by[i])].details
                if accepting is not None:
                    for j in np.flatnonzero(close).tolist():
                        asked = recalls[int(by[i + 1 + j])].details
                        close[j] = asked is None or not differ(accepting, asked)
                later = hits[i + 1 :]
                again = np.flatnonzero(close & later)
                since = int(again[-1]) + 1 if len(again) else 0
                self._unrewarded[position] = np.count_nonzero(close[since:] & ~later[since:])

    def forget_row(self, row: int) -> None:
        """Drop every judgement of a purged row (its query vectors stay: they are shared)."""
        keep = self._rows[: self._n] != row
        kept = int(np.count_nonzero(keep))
        if kept == self._n:
            return
        for column in (self._rows, self._signs, self._query_of, self._unrewarded):
            column[:kept] = column[: self._n][keep]
        self._n = kept

    def similar(
        self, query_vector: FloatArray, threshold: float, details: Details | None = None
    ) -> tuple[IntArray, FloatArray, FloatArray]:
        """Judgements made on queries at least ``threshold`` alike to ``query_vector`` (with
        ``details``: ``likeness``): (rows, signs, similarities), one entry per judgement."""
        similarity = self.likeness(query_vector, details, threshold)
        per_judgement = similarity[self._query_of[: self._n]]
        close = per_judgement >= threshold
        return self._rows[: self._n][close], self._signs[: self._n][close], per_judgement[close]

    def every(
        self, query_vector: FloatArray, details: Details | None = None, alike: float = 1.0
    ) -> Judgements:
        """Every judgement, with its query's likeness to ``query_vector`` (``likeness``)."""
        return Judgements(
            self.likeness(query_vector, details, alike),
            self._judged_at[: self._n_queries],
            self._rows[: self._n],
            self._signs[: self._n],
            self._query_of[: self._n],
            self._unrewarded[: self._n],
        )

    def likeness(
        self, query_vector: FloatArray, details: Details | None, alike: float
    ) -> FloatArray:
        """Each judged query's cosine to ``query_vector``; one at least ``alike`` whose
        details differ from ``details`` (when both are known) is likened 0: a question
        about something else, however alike its words, that lends nothing."""
        similarity = self._queries[: self._n_queries] @ query_vector
        close = np.flatnonzero(similarity >= alike)
        other = close[~self._kin(close, details)]
        similarity[other] = 0.0
        return similarity

    def _kin(self, queries: IntArray, details: Details | None) -> npt.NDArray[np.bool_]:
        """Whether each of ``queries`` (indices) has details that do not differ from
        ``details`` (``differ``: neither's details are all words of the other), counted over
        every judged query at once: a loop over them took 5 ms at 5,000 judged queries."""
        if details is None or not details[0] or len(queries) == 0:
            return np.ones(len(queries), dtype=bool)
        n = self._n_queries
        # Its details all words of this query (none: never differs).
        said_here = np.zeros(n, dtype=np.int64)
        for word in details[1]:
            having = self._by_detail.get(word)
            if having is not None:
                said_here[np.frombuffer(having, dtype=np.int64)] += 1
        # This query's details all words of it.
        said_there = np.zeros(n, dtype=np.int64)
        for word in details[0]:
            saying = self._by_word.get(word)
            if saying is not None:
                said_there[np.frombuffer(saying, dtype=np.int64)] += 1
        kin = (said_here == self._detail_count[:n]) | (said_there == len(details[0]))
        out: npt.NDArray[np.bool_] = kin[queries]
        return out


def _grown(array: A) -> A:
    bigger = np.zeros_like(array, shape=(len(array) * 2, *array.shape[1:]))
    bigger[: len(array)] = array
    return bigger  # type: ignore[return-value]  # zeros_like keeps the dtype
