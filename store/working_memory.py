"""The working memory: an in-process mirror of what recall needs, kept in step with the graph.

The graph (Kùzu) is the source of truth and LanceDB keeps the texts and vectors; this
mirror exists so a recall touches neither database for filtering and ranking. It keeps, per
observation row, the fields results show, and as arrays the ones filters and scores read
(exact confidence as scaled integers, validity as microseconds, hits, impressions) plus the
embeddings (int8, see vector_matrix). ``Memory`` changes it only under the write side of its
readers-writer lock, right after a write commits, so it never shows anything the graph does
not hold; recalls read it in parallel under the read side. Nothing here locks: the methods
that change it are called with the write lock held, the readers with the read lock.
"""

from __future__ import annotations

import array
import functools
import heapq
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

import numpy as np
import numpy.typing as npt

from doxa.store.drafts import predicate_key
from doxa.store.judged_queries import JudgedQueries
from doxa.store.settings import PredicateSettings
from doxa.store.text_index import TextIndex
from doxa.store.values import micros, scaled
from doxa.store.vector_matrix import VectorMatrix

NO_END = np.iinfo(np.int64).max
NO_START = np.iinfo(np.int64).min

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]


@functools.lru_cache(maxsize=65536)
def topic_key(name: str) -> str:
    """Topics and fact keys match case- and space-insensitively (cached: ranking asks for
    the keys of every candidate's topics)."""
    return " ".join(name.casefold().split())


def fact_key(entry: Entry) -> tuple[str, str] | None:
    """(subject, predicate) key of a fact, or None for a plain observation (the predicate
    normalised as ``predicate_key`` does, so facts stored before it was match too)."""
    if entry.subject is None or entry.predicate is None:
        return None
    return topic_key(entry.subject), predicate_key(entry.predicate)


@dataclass(slots=True)
class Entry:
    """One observation as results show it."""

    id: str
    seq: int
    text: str
    text_key: str
    confidence: Decimal
    observed_at: datetime
    recorded_at: datetime
    source: str | None
    kind: str
    subject: str | None
    predicate: str | None
    object: str | None
    valid_from: datetime | None
    valid_until: datetime | None
    retracted: bool = False
    episode: str | None = None
    # Tuples, not lists: an empty tuple is shared, and the working memory shares one tuple
    # per distinct set of topics or agents (at 100k memories lists cost ~20 MB more).
    topics: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    beliefs: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()


class WorkingMemory:
    """Rows of observations with arrays for fast filtering and a (quantized) embedding matrix."""

    def __init__(
        self, dim: int, capacity: int = 1024, cardinalities: Mapping[str, str] | None = None
    ) -> None:
        self.dim = dim
        self.entries: list[Entry] = []
        self.row_of: dict[str, int] = {}
        self.belief_row: dict[str, int] = {}
        self.belief_agent: dict[str, str] = {}
        self._cap = capacity
        # Embeddings as int8, scanned by ONNX Runtime (a quarter of float32's memory).
        self.embeddings = VectorMatrix(dim, capacity)
        self.live: BoolArray = np.zeros(capacity, dtype=bool)  # not retracted, not purged
        self.confidence: IntArray = np.zeros(capacity, dtype=np.int64)
        self.valid_from: IntArray = np.zeros(capacity, dtype=np.int64)
        self.valid_until: IntArray = np.zeros(capacity, dtype=np.int64)
        self.hits: FloatArray = np.zeros(capacity, dtype=np.float32)
        self.impressions: FloatArray = np.zeros(capacity, dtype=np.float32)
        # The observation learned just before / after this one in its episode (-1: none), so
        # ranking can walk a conversation's neighbours with array operations.
        self.previous: IntArray = np.full(capacity, -1, dtype=np.int64)
        self.following: IntArray = np.full(capacity, -1, dtype=np.int64)
        self.agent_rows: dict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        self.topic_rows: dict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        self.topic_names: dict[str, str] = {}
        self.topic_exact: set[str] = set()  # topic names exactly as the graph holds them
        # Topics mentioned together by one observation, and how often: the topic graph that
        # recall walks one or two hops from the topics a query names.
        self.topic_links: dict[str, dict[str, int]] = defaultdict(dict)
        self.episode_start: dict[str, datetime] = {}
        self.episode_rows: dict[str, list[int]] = defaultdict(list)
        self.text_index: dict[tuple[str, str], int] = {}
        # (subject, predicate) keys of facts -> rows, for superseding and clash detection.
        self.fact_index: dict[tuple[str, str], list[int]] = defaultdict(list)
        # Entity key (a fact's subject or object, as topic_key) -> every fact row naming it,
        # retracted ones included (an entity's timeline shows them), and its first spelling.
        self.entity_facts: dict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        self.entity_names: dict[str, str] = {}
        self.co_activated: dict[int, dict[int, int]] = defaultdict(dict)
        # Predicate cardinalities: as the graph records them (set when a fact first used the
        # predicate), and as configured for predicates no fact has recorded yet.
        self.predicates: dict[str, str] = {}
        self.configured: dict[str, str] = dict(
            PredicateSettings().cardinalities() if cardinalities is None else cardinalities
        )
        # Beliefs recorded after their observation (another agent's belief in it): belief ->
        # (row, agent, since in microseconds). The first belief's time is the row's own.
        self.late_beliefs: dict[str, tuple[int, str, int]] = {}
        # Beliefs their agent withdrew while others kept the observation: row ->
        # [(agent, belief id, since, withdrawn at)], times in microseconds.
        self.withdrawn: dict[int, list[tuple[str, str, int, int]]] = {}
        # Feedback learned from judged recalls: query vectors, the rows judged, +1 or -1.
        self.judged = JudgedQueries(dim)
        # Full text of the live rows (BM25), updated with every other index here.
        self.text = TextIndex()
        self.next_seq = 1
        self._tuples: dict[tuple[str, ...], tuple[str, ...]] = {}

    def _shared(self, values: tuple[str, ...]) -> tuple[str, ...]:
        return self._tuples.setdefault(values, values)

    def __len__(self) -> int:
        return len(self.entries)

    # ---- growth ----------------------------------------------------------------------------

    def _ensure_capacity(self, needed: int) -> None:
        if needed <= self._cap:
            return
        cap = max(needed, self._cap * 2)

        def grow(values: np.ndarray, fill: int = 0) -> np.ndarray:
            shape = (cap, *values.shape[1:])
            bigger = np.full(shape, fill, dtype=values.dtype)
            bigger[: len(self.entries)] = values[: len(self.entries)]
            return bigger

        self.live = grow(self.live)
        self.confidence = grow(self.confidence)
        self.valid_from = grow(self.valid_from)
        self.valid_until = grow(self.valid_until)
        self.hits = grow(self.hits)
        self.impressions = grow(self.impressions)
        self.previous = grow(self.previous, -1)
        self.following = grow(self.following, -1)
        self._cap = cap

    # ---- writes ----------------------------------------------------------------------------

    @property
    def has_vector(self) -> BoolArray:
        """Per row: whether its embedding is there (it follows the write; see Memory)."""
        return self.embeddings.present

    def add(self, entry: Entry) -> int:
        """Add one observation (already committed to the graph); returns its row. Its
        embedding comes later, through ``embeddings.put``."""
        row = len(self.entries)
        self._ensure_capacity(row + 1)
        entry.topics = self._shared(tuple(entry.topics))
        entry.agents = self._shared(tuple(entry.agents))
        self.entries.append(entry)
        self.row_of[entry.id] = row
        self.next_seq = max(self.next_seq, entry.seq + 1)
        self.live[row] = not entry.retracted
        self.confidence[row] = scaled(entry.confidence)
        start = entry.valid_from or entry.observed_at
        self.valid_from[row] = micros(start)
        self.valid_until[row] = NO_END if entry.valid_until is None else micros(entry.valid_until)
        for topic in entry.topics:
            self._mention(row, topic)
        keys = {topic_key(t) for t in entry.topics}
        for a in keys:
            for b in keys - {a}:
                self.topic_links[a][b] = self.topic_links[a].get(b, 0) + 1
        for agent in entry.agents:
            self.agent_rows[agent].append(row)
        if entry.subject is not None:
            self._name_in_fact(row, entry.subject)
            if entry.object is not None and topic_key(entry.object) != topic_key(entry.subject):
                self._name_in_fact(row, entry.object)
        if entry.episode is not None:
            self._place_in_episode(row, entry.episode)
            began = self.episode_start.get(entry.episode)
            if began is None or entry.observed_at < began:
                self.episode_start[entry.episode] = entry.observed_at
        if not entry.retracted:
            self._index_keys(row)
            self.text.add(row, entry.text)
        return row

    def _mention(self, row: int, topic: str) -> None:
        key = topic_key(topic)
        self.topic_rows[key].append(row)
        self.topic_names.setdefault(key, topic)
        self.topic_exact.add(topic)

    def _name_in_fact(self, row: int, entity: str) -> None:
        key = topic_key(entity)
        self.entity_facts[key].append(row)
        self.entity_names.setdefault(key, entity)

    def _place_in_episode(self, row: int, episode: str) -> None:
        rows = self.episode_rows[episode]
        if rows:
            self.previous[row] = rows[-1]
            self.following[rows[-1]] = row
        rows.append(row)

    def _index_keys(self, row: int) -> None:
        entry = self.entries[row]
        for agent in entry.agents:
            self.text_index[(agent, entry.text_key)] = row
        key = fact_key(entry)
        if key is not None:
            self.fact_index[key].append(row)

    def _unindex_keys(self, row: int) -> None:
        entry = self.entries[row]
        for agent in entry.agents:
            if self.text_index.get((agent, entry.text_key)) == row:
                del self.text_index[(agent, entry.text_key)]
        key = fact_key(entry)
        if key is not None and row in self.fact_index.get(key, []):
            self.fact_index[key].remove(row)

    def cardinality(self, predicate: str) -> str:
        """ "one" or "many": as the graph records it, else as configured, else "one"."""
        key = predicate_key(predicate)
        return self.predicates.get(key) or self.configured.get(key, "one")

    def held_text(self, text_key: str) -> list[int]:
        """Live rows holding this text (by any agent), oldest first."""
        found = {
            row
            for agent in self.agent_rows
            if (row := self.text_index.get((agent, text_key))) is not None
        }
        return sorted(found)

    def belief_of(self, row: int, agent: str) -> str | None:
        """The belief by which ``agent`` holds the observation at ``row``, if it does."""
        return next(
            (b for b in self.entries[row].beliefs if self.belief_agent.get(b) == agent), None
        )

    def hold(self, row: int, agent: str, belief_id: str, since: datetime | None = None) -> None:
        """Record that ``agent`` holds the observation at ``row`` as ``belief_id`` (since
        ``since``; default: since the observation was recorded)."""
        entry = self.entries[row]
        if since is not None and since != entry.recorded_at:
            self.late_beliefs[belief_id] = (row, agent, micros(since))
        if agent not in entry.agents:
            entry.agents = self._shared((*entry.agents, agent))
            self.agent_rows[agent].append(row)
            if not entry.retracted:
                self.text_index[(agent, entry.text_key)] = row
        entry.beliefs = (*entry.beliefs, belief_id)
        self.belief_row[belief_id] = row
        self.belief_agent[belief_id] = agent

    def withdraw(self, row: int, belief_id: str, at: datetime) -> None:
        """The agent of ``belief_id`` no longer holds the observation at ``row`` (others do)."""
        entry = self.entries[row]
        agent = self.belief_agent.pop(belief_id)
        self.belief_row.pop(belief_id, None)
        late = self.late_beliefs.pop(belief_id, None)
        since = late[2] if late is not None else micros(entry.recorded_at)
        self.withdraw_later(row, agent, belief_id, since, micros(at))
        entry.beliefs = tuple(b for b in entry.beliefs if b != belief_id)
        if self.belief_of(row, agent) is None:
            entry.agents = self._shared(tuple(a for a in entry.agents if a != agent))
            rows = self.agent_rows[agent]
            if row in rows:
                rows.remove(row)
            if self.text_index.get((agent, entry.text_key)) == row:
                del self.text_index[(agent, entry.text_key)]

    def withdraw_later(self, row: int, agent: str, belief: str, since: int, at: int) -> None:
        """Keep a withdrawn belief's times (for what the memory held before)."""
        self.withdrawn.setdefault(row, []).append((agent, belief, since, at))

    def withdrawn_belief(self, row: int, agent: str) -> str | None:
        """The belief ``agent`` withdrew from the observation at ``row``, if any."""
        return next((b for a, b, _, _ in self.withdrawn.get(row, []) if a == agent), None)

    def superseded_by(self, row: int, newer_id: str) -> None:
        """Record that the observation ``newer_id`` superseded the one at ``row``."""
        entry = self.entries[row]
        entry.superseded_by = (*entry.superseded_by, newer_id)

    def supersede(self, newer: int, older: int, at: datetime) -> None:
        """The fact at ``older`` stops being valid at ``at`` because of ``newer``."""
        entry = self.entries[older]
        self.superseded_by(older, self.entries[newer].id)
        at_us = micros(at)
        if self.valid_until[older] > at_us:
            self.valid_until[older] = at_us
            entry.valid_until = at

    def reopen(self, row: int, until: datetime | None, forgotten: str) -> None:
        """Give a fact a new end (None: no end) because its superseder ``forgotten`` is gone."""
        entry = self.entries[row]
        entry.valid_until = until
        self.valid_until[row] = NO_END if until is None else micros(until)
        entry.superseded_by = tuple(i for i in entry.superseded_by if i != forgotten)

    def retract(self, row: int) -> None:
        """Hide a row from every recall (kept in the graph for audit)."""
        self._unindex_keys(row)
        self.text.remove(row, self.entries[row].text)
        self.entries[row].retracted = True
        self.live[row] = False

    def purge(self, row: int) -> None:
        """Forget a row entirely (its slot stays, dead, so other rows keep their numbers)."""
        self.retract(row)
        entry = self.entries[row]
        for other in self.entries:
            if entry.id in other.superseded_by:
                other.superseded_by = tuple(i for i in other.superseded_by if i != entry.id)
        self.row_of.pop(entry.id, None)
        for belief in entry.beliefs:
            self.belief_row.pop(belief, None)
            self.belief_agent.pop(belief, None)
            self.late_beliefs.pop(belief, None)
        self.withdrawn.pop(row, None)
        self.embeddings.clear(row)
        self.co_activated.pop(row, None)
        for neighbours in self.co_activated.values():
            neighbours.pop(row, None)
        self.judged.forget_row(row)

    def learn(self, query_vector: npt.NDArray[np.float32], judged: dict[int, float]) -> None:
        """Remember a judged recall: its query vector against each judged row (+1 / -1)."""
        self.judged.add(query_vector.astype(np.float32, copy=False), judged)

    def co_activate(self, rows: list[int]) -> None:
        """Count a co-activation between every pair of rows accepted together."""
        for a in rows:
            for b in rows:
                if a != b:
                    self.co_activated[a][b] = self.co_activated[a].get(b, 0) + 1

    # ---- reads -----------------------------------------------------------------------------

    def related_topics(self, keys: list[str], hops: int, fan_out: int = 5) -> list[list[str]]:
        """Topics linked to ``keys`` by co-mention: one list per hop (1..hops), each holding
        at most ``fan_out`` topics per topic of the hop before, most co-mentioned first."""
        seen = set(keys)
        frontier = list(keys)
        found: list[list[str]] = []
        for _ in range(hops):
            layer: list[str] = []
            for key in frontier:
                linked = self.topic_links.get(key, {})
                for other in heapq.nlargest(fan_out, linked, key=linked.__getitem__):
                    if other not in seen:
                        seen.add(other)
                        layer.append(other)
            found.append(layer)
            frontier = layer
        return found

    def rows_of(self, index: dict[str, array.array[int]], key: str) -> IntArray:
        """Rows listed under ``key`` in a topic or agent index, as a numpy array."""
        found = index.get(key)
        if found is None or len(found) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.frombuffer(found, dtype=np.int64)
