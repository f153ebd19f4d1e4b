"""The working memory: an in-process mirror of what recall needs, kept in step with the graph.

The graph (Kùzu) is the source of truth and LanceDB keeps the texts and vectors; this
mirror exists so a recall touches neither database for filtering and ranking. It keeps, per
observation row, the fields results show, and as arrays the ones filters and scores read
(exact confidence as scaled integers, validity as microseconds, hits, impressions) plus the
embeddings (int8, see vector_matrix). It keeps both clocks: when each row was recorded and
retracted, the end each fact was given, and every supersession with the row that made it, so
``view`` can say what the memory held at any record time (``known_at``) as well as what was
valid at any valid time (``as_of``). ``Memory`` changes it only under the write side of its
readers-writer lock, right after a write commits, so it never shows anything the graph does
not hold; recalls read it in parallel under the read side. Nothing here locks: the methods
that change it are called with the write lock held, the readers with the read lock.
"""

from __future__ import annotations

import array
import functools
import heapq
import unicodedata
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import numpy.typing as npt

from doxa.store.drafts import predicate_key, predicate_words
from doxa.store.event_time import SLACK, EventTime, overlaps
from doxa.store.judged_queries import JudgedQueries, JudgedRecall
from doxa.store.passage_vectors import PassageVectors
from doxa.store.records import Record, WhereField, loose, meets, type_key, type_name_key
from doxa.store.settings import PredicateSettings, unlisted_cardinality
from doxa.store.text_index import TextIndex
from doxa.store.values import from_micros, micros, scaled, utc_now
from doxa.store.vector_matrix import VectorMatrix

NO_END = np.iinfo(np.int64).max
NO_START = np.iinfo(np.int64).min
_MICROSECOND = timedelta(microseconds=1)

BoolArray = npt.NDArray[np.bool_]
IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]


#: English articles a name's key leaves out before a word ("the user" is "User").
ARTICLES = frozenset({"the", "a", "an"})


@functools.lru_cache(maxsize=65536)
def topic_key(name: str) -> str:
    """Topics and fact keys match case- and space-insensitively, in either Unicode form of
    a letter (NFC: "Café" typed, or pasted with a combining accent), and without a leading
    article before a word ("The Beatles" is "Beatles"); cached: ranking asks for the keys of
    every candidate's topics.

    An article is kept where it is the name, or all that is left of it: alone ("A", a
    grade), before another article alone ("The The", a band), or before what starts with no
    letter ("The 1975", a band, is not the year). Each leading article goes ("The A Team" is
    "Team", as "A Team" is), so a key is its own key.
    """
    words = unicodedata.normalize("NFC", name).casefold().split()
    while (
        len(words) > 1
        and words[0] in ARTICLES
        and words[1][:1].isalpha()
        and (len(words) > 2 or words[1] not in ARTICLES)
    ):
        del words[0]
    return " ".join(words)


def fact_key(entry: Entry) -> tuple[str, str] | None:
    """(subject, predicate) key of a fact, or None for a plain observation (the predicate
    normalised as ``predicate_key`` does, so facts stored before it was match too)."""
    if entry.subject is None or entry.predicate is None:
        return None
    return topic_key(entry.subject), predicate_key(entry.predicate)


def told_when(when: tuple[EventTime, ...]) -> str:
    """When a memory's words place what they tell, as its key holds it (``said_key``, and
    a prune's twins): each time by its days in UTC. A time measured from when it was said
    ("for five years", "since May") moves with that moment, so a retry a moment later, the
    same day, reads the same; an open one ("since May") by its start alone, as it ends when
    it was said."""
    return " ".join(
        e.start.date().isoformat()
        if e.precision == "open"
        else f"{e.start.date().isoformat()}/{e.end.date().isoformat()}"
        for e in when
    )


def said_key(
    text_key: str,
    subject: str | None,
    predicate: str | None,
    obj: str | None,
    when: tuple[EventTime, ...] = (),
) -> str:
    """What makes two memories of one agent the same one: their words (``text_key``), when
    those place what they tell (``when``: "Dentist tomorrow at 10." said in May and in June
    tells of two appointments, not a repeat of one) and, for a fact, its subject, predicate
    and object. "Moved." told with another fact is another memory, not a repeat whose fact
    is dropped."""
    if when:
        text_key += "\n@" + told_when(when)
    if subject is None or predicate is None:
        return text_key
    return "\n".join((text_key, topic_key(subject), predicate_key(predicate), topic_key(obj or "")))


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
    stated_until: datetime | None = None  # the end it was given (valid_until may be earlier)
    event_times: tuple[EventTime, ...] = ()  # when what it tells of happened (event_time)
    retracted_at: datetime | None = None
    # Tuples, not lists: an empty tuple is shared, and the working memory shares one tuple
    # per distinct set of topics or agents (at 100k memories lists cost ~20 MB more).
    topics: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    beliefs: tuple[str, ...] = ()
    superseded_by: tuple[str, ...] = ()
    record: Record | None = None  # a structured record's type and typed fields


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
        # A long text's passages after its first (see passage_vectors), by owner row.
        self.passages = PassageVectors(dim)
        self.live: BoolArray = np.zeros(capacity, dtype=bool)  # not retracted, not purged
        self.confidence: IntArray = np.zeros(capacity, dtype=np.int64)
        self.valid_from: IntArray = np.zeros(capacity, dtype=np.int64)
        self.valid_until: IntArray = np.zeros(capacity, dtype=np.int64)
        # Record time: when each row was recorded and retracted (NO_END: not retracted; a
        # purged row is never held), and the end each fact was given when remembered.
        self.recorded_at: IntArray = np.zeros(capacity, dtype=np.int64)
        self.retracted_at: IntArray = np.full(capacity, NO_END, dtype=np.int64)
        self.stated_until: IntArray = np.full(capacity, NO_END, dtype=np.int64)
        # The span each row's event times reach, with their slack (``overlaps``; none: an
        # empty span), so a question's time is matched without reading every row's times.
        # Rows of facts told with only an end already past, never held (their end before
        # their start): a recall finds them as of a day after that end (``recall``).
        self.never_held: array.array[int] = array.array("q")
        self.told_from: IntArray = np.full(capacity, NO_END, dtype=np.int64)
        self.told_until: IntArray = np.full(capacity, NO_START, dtype=np.int64)
        # Words in each row's text (whitespace-separated, at most 65,535): the `length` ranking
        # component, without splitting texts at recall time.
        self.words: npt.NDArray[np.uint16] = np.zeros(capacity, dtype=np.uint16)
        self.hits: FloatArray = np.zeros(capacity, dtype=np.float32)
        self.impressions: FloatArray = np.zeros(capacity, dtype=np.float32)
        # Impressions since the row's last hit: what an accepted link decays with.
        self.unrewarded: FloatArray = np.zeros(capacity, dtype=np.float32)
        # The observation learned just before / after this one in its episode (-1: none), so
        # ranking can walk a conversation's neighbours with array operations.
        self.previous: IntArray = np.full(capacity, -1, dtype=np.int64)
        self.following: IntArray = np.full(capacity, -1, dtype=np.int64)
        self.agent_rows: dict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        self.topic_rows: dict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        self.topic_names: dict[str, str] = {}
        self.topic_exact: set[str] = set()  # topic names exactly as the graph holds them
        # Topics mentioned together by one live observation, and how often: the topic graph
        # that recall walks one or two hops from the topics a query names.
        self.topic_links: dict[str, dict[str, int]] = defaultdict(dict)
        # A live fact's topics and its subject and object, mentioned together, and how often
        # (``_pairs``): what about and the page relate, apart from the topic graph.
        self.fact_links: dict[str, dict[str, int]] = defaultdict(dict)
        self.episode_start: dict[str, datetime] = {}
        self.episode_rows: dict[str, list[int]] = defaultdict(list)
        #: (agent, ``said_key``) -> the live row of that agent's memory.
        self.text_index: dict[tuple[str, str], int] = {}
        # (subject, predicate) keys of facts -> rows, for superseding and clash detection.
        # Retracted facts stay (for what was held before); purged ones leave.
        self.fact_index: dict[tuple[str, str], list[int]] = defaultdict(list)
        # The keys whose rows name more than one object: the only ones that can clash, so
        # find_conflicts looks at these instead of every fact (20k facts: 10k keys, 1k here).
        self.mixed_facts: set[tuple[str, str]] = set()
        # Every supersession, retracted superseders included: older row -> [(newer row, the
        # newer fact's start, when the link was recorded, when a forget undid it or NO_END),
        # in microseconds].
        self.incoming: dict[int, list[tuple[int, int, int, int]]] = {}
        # Every contradiction, both ways, retracted sides included: row -> [(the other row,
        # when the link was recorded, in microseconds)], oldest first. Recall names a
        # result's standing ones from here: reading them from the graph (one query for all
        # the results) made a recall of 2 ms take 12.
        self.contradicting: dict[int, list[tuple[int, int]]] = {}
        # Entity key (a fact's subject or object, as topic_key) -> every fact row naming it,
        # retracted ones included (an entity's timeline shows them), and its first spelling.
        self.entity_facts: dict[str, array.array[int]] = defaultdict(lambda: array.array("q"))
        self.entity_names: dict[str, str] = {}
        self.co_activated: dict[int, dict[int, int]] = defaultdict(dict)
        # Records' field values, for where filters: (field key, class, canonical) -> rows
        # (records.Record.keys); string values casefolded, for a query's words; and how
        # many rows hold each field, so ranking knows a field name when a query says one.
        # Retracted records stay (for what was held before); purged ones leave.
        self.record_values: dict[tuple[str, str, str], array.array[int]] = defaultdict(
            lambda: array.array("q")
        )
        self.record_words: dict[tuple[str, str], array.array[int]] = defaultdict(
            lambda: array.array("q")
        )
        # Per (field key, class), each value records hold and how many keys of it there are:
        # the values a ``where`` comparison runs over.
        self.record_ordered: dict[tuple[str, str], dict[str, int]] = defaultdict(dict)
        self.record_fields: dict[str, int] = {}
        # How many records are of each type (``where`` finds them under records.type_key).
        self.record_types: dict[str, int] = {}
        # Predicate cardinalities: as the graph records them (set when a fact first used the
        # predicate), and as configured for predicates no fact has recorded yet.
        self.predicates: dict[str, str] = {}
        self.configured: dict[str, str] = dict(
            PredicateSettings().cardinalities() if cardinalities is None else cardinalities
        )
        # Beliefs recorded after their observation (another agent's belief in it): belief ->
        # (row, agent, since in microseconds). The first belief's time is the row's own.
        self.late_beliefs: dict[str, tuple[int, str, int]] = {}
        # Beliefs held with another confidence than their observation's (another agent's,
        # in the same text): belief -> its confidence (``agent_confidence``).
        self.belief_confidence: dict[str, Decimal] = {}
        # Beliefs their agent withdrew while others kept the observation: row ->
        # [(agent, belief id, since, withdrawn at, held until)], times in microseconds.
        # ``held until`` (valid time; None: withdrawn outright) is where the agent's later
        # fact began: its history keeps the belief before then.
        self.withdrawn: dict[int, list[tuple[str, str, int, int, int | None]]] = {}
        # Per agent, its withdrawn beliefs that a later fact of its own withdrew: (row,
        # belief id, since, withdrawn at), for ``agent_mask``, ``believers`` and
        # ``belief_end``.
        self.held_before: dict[str, list[tuple[int, str, int, int]]] = {}
        # Such beliefs their agent forgot since: belief -> when (record time). From then on
        # they hold at no valid time; views at an earlier record time still see them.
        self.forgotten: dict[str, int] = {}
        # The confidence of withdrawn beliefs held with one of their own: belief -> it.
        self.withdrawn_confidence: dict[str, Decimal] = {}
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

    def kept(self, row: int) -> bool:
        """Whether ``row`` is not purged: a purged row keeps its slot (and its place in the
        per-name lists) until a restart, so other rows keep their numbers."""
        return self.row_of.get(self.entries[row].id) == row

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
        self.recorded_at = grow(self.recorded_at)
        self.retracted_at = grow(self.retracted_at, NO_END)
        self.stated_until = grow(self.stated_until, NO_END)
        self.told_from = grow(self.told_from, NO_END)
        self.told_until = grow(self.told_until, NO_START)
        self.words = grow(self.words)
        self.hits = grow(self.hits)
        self.impressions = grow(self.impressions)
        self.unrewarded = grow(self.unrewarded)
        self.previous = grow(self.previous, -1)
        self.following = grow(self.following, -1)
        self._cap = cap

    # ---- writes ----------------------------------------------------------------------------

    @property
    def has_vector(self) -> BoolArray:
        """Per row: whether its embedding is there (it follows the write; see Memory)."""
        return self.embeddings.present

    def similarity(self, query: FloatArray, n: int) -> FloatArray:
        """Approximate similarity of ``query`` to rows ``0..n-1``: each row's best of its
        own vector and its passages' (``passage_vectors``)."""
        similarity = self.embeddings.similarity(query, n)
        self.passages.widen(similarity, query)
        return similarity

    def refined(self, query: FloatArray, rows: IntArray) -> FloatArray:
        """``similarity`` of ``rows`` with the query unrounded (``VectorMatrix.refined``)."""
        return self.passages.refined(query, rows, self.embeddings.refined(query, rows))

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
        self.words[row] = min(len(entry.text.split()), 65_535)
        start = entry.valid_from or entry.observed_at
        self.valid_from[row] = micros(start)
        self.valid_until[row] = NO_END if entry.valid_until is None else micros(entry.valid_until)
        self.recorded_at[row] = micros(entry.recorded_at)
        self.retracted_at[row] = (
            NO_END if entry.retracted_at is None else micros(entry.retracted_at)
        )
        self.stated_until[row] = (
            NO_END if entry.stated_until is None else micros(entry.stated_until)
        )
        if self.stated_until[row] < self.valid_from[row]:  # told with only an end gone by
            self.never_held.append(row)
        for event in entry.event_times:
            slack = SLACK.get(event.precision)
            reach = 0 if slack is None else slack // _MICROSECOND
            self.told_from[row] = min(self.told_from[row], micros(event.start) - reach)
            self.told_until[row] = max(self.told_until[row], micros(event.end) + reach)
        for topic in entry.topics:
            self._mention(row, topic)
        if not entry.retracted:
            self._link_topics(row, +1)
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
        # A retracted row keeps its words and fact key: recalls as of an earlier record time
        # find it (filters keep it out of every other recall).
        self.text.add(row, entry.text, entry.source)
        key = fact_key(entry)
        if key is not None:
            rows = self.fact_index[key]
            rows.append(row)
            if len(rows) > 1 and key not in self.mixed_facts:
                first = self.entries[rows[0]].object or ""
                if topic_key(entry.object or "") != topic_key(first):
                    self.mixed_facts.add(key)
        if entry.record is not None:
            self._index_record(row, entry.record)
        if not entry.retracted:
            self._index_texts(row)
        return row

    def _index_record(self, row: int, record: Record) -> None:
        # Each once per record: a list may hold a value twice, and counts as one field.
        for key in {*record.keys(), type_key(record.type)}:
            self.record_values[key].append(row)
        for field, cls, canonical in set(record.keys()):
            held = self.record_ordered[(field, cls)]
            held[canonical] = held.get(canonical, 0) + 1
        for field in {f.key for f in record.fields}:
            self.record_fields[field] = self.record_fields.get(field, 0) + 1
        self.record_types[record.type] = self.record_types.get(record.type, 0) + 1
        for phrase in _string_values(record):
            self.record_words[phrase].append(row)

    def _unindex_record(self, row: int, record: Record) -> None:
        for key in {*record.keys(), type_key(record.type)}:
            _drop(self.record_values, key, row)
        for field, cls, canonical in set(record.keys()):
            _count_down(self.record_ordered[(field, cls)], canonical)
        for field in {f.key for f in record.fields}:
            _count_down(self.record_fields, field)
        _count_down(self.record_types, record.type)
        for phrase in _string_values(record):
            _drop(self.record_words, phrase, row)

    def _mention(self, row: int, topic: str) -> None:
        key = topic_key(topic)
        self.topic_rows[key].append(row)
        self.topic_names.setdefault(key, topic)
        self.topic_exact.add(topic)

    def _link_topics(self, row: int, by: int) -> None:
        """Count the row's topics as mentioned together, and a fact's topics with its two
        ends (``by`` +1), or no longer (-1: it was forgotten)."""
        for index, pairs in zip((self.topic_links, self.fact_links), self._pairs(row), strict=True):
            for a, b in pairs:
                links = index[a]
                links[b] = links.get(b, 0) + by
                if links[b] <= 0:
                    del links[b]
                if not links:
                    del index[a]

    def _pairs(self, row: int) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """What the row mentions together, as ordered pairs of keys: its topics, each with
        each; and a fact's topics with its subject and object, both ways (Delta likes
        Epsilon, about zeta: zeta with Delta and Epsilon; none for an observation)."""
        entry = self.entries[row]
        topics = {topic_key(t) for t in entry.topics}
        together = [(a, b) for a in topics for b in topics - {a}]
        if entry.subject is None:
            return together, []
        ends = {topic_key(entry.subject), topic_key(entry.object or "")} - {""}
        return together, [p for t in topics - ends for e in ends for p in ((t, e), (e, t))]

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

    def _index_texts(self, row: int) -> None:
        entry = self.entries[row]
        for agent in entry.agents:
            self.text_index[(agent, _said(entry))] = row

    def _unindex_texts(self, row: int) -> None:
        entry = self.entries[row]
        for agent in entry.agents:
            if self.text_index.get((agent, _said(entry))) == row:
                del self.text_index[(agent, _said(entry))]

    def cardinality(self, predicate: str) -> str:
        """ "one" or "many": as the graph records it, else as configured, else as
        ``unlisted_cardinality``."""
        key = predicate_key(predicate)
        known = self.predicates.get(key) or self.configured.get(key)
        return known or unlisted_cardinality(predicate_words(predicate))

    def held_text(self, said: str) -> list[int]:
        """Live rows holding this memory (``said_key``), by any agent, oldest first."""
        index = self.text_index
        found = {row for agent in self.agent_rows if (row := index.get((agent, said))) is not None}
        return sorted(found)

    def belief_of(self, row: int, agent: str) -> str | None:
        """The belief by which ``agent`` holds the observation at ``row``, if it does."""
        return next(
            (b for b in self.entries[row].beliefs if self.belief_agent.get(b) == agent), None
        )

    def hold(
        self,
        row: int,
        agent: str,
        belief_id: str,
        since: datetime | None = None,
        confidence: Decimal | None = None,
    ) -> None:
        """Record that ``agent`` holds the observation at ``row`` as ``belief_id`` (since
        ``since``; default: since the observation was recorded), with ``confidence``
        (default: the observation's)."""
        entry = self.entries[row]
        if since is not None and since != entry.recorded_at:
            self.late_beliefs[belief_id] = (row, agent, micros(since))
        if confidence is not None and scaled(confidence) != self.confidence[row]:
            self.belief_confidence[belief_id] = confidence
        if agent not in entry.agents:
            entry.agents = self._shared((*entry.agents, agent))
            self.agent_rows[agent].append(row)
            if not entry.retracted:
                self.text_index[(agent, _said(entry))] = row
        entry.beliefs = (*entry.beliefs, belief_id)
        self.belief_row[belief_id] = row
        self.belief_agent[belief_id] = agent

    def withdraw(
        self, row: int, belief_id: str, at: datetime, until: datetime | None = None
    ) -> None:
        """The agent of ``belief_id`` no longer holds the observation at ``row`` (others do):
        from valid time ``until`` on (a later fact of the agent began then), or at any time
        (None: withdrawn outright)."""
        entry = self.entries[row]
        agent = self.belief_agent.pop(belief_id)
        self.belief_row.pop(belief_id, None)
        late = self.late_beliefs.pop(belief_id, None)
        own = self.belief_confidence.pop(belief_id, None)
        if own is not None:
            self.withdrawn_confidence[belief_id] = own
        since = late[2] if late is not None else micros(entry.recorded_at)
        held = None if until is None else micros(until)
        self.withdraw_later(row, agent, belief_id, since, micros(at), held)
        entry.beliefs = tuple(b for b in entry.beliefs if b != belief_id)
        if self.belief_of(row, agent) is None:
            entry.agents = self._shared(tuple(a for a in entry.agents if a != agent))
            rows = self.agent_rows[agent]
            if row in rows:
                rows.remove(row)
            if self.text_index.get((agent, _said(entry))) == row:
                del self.text_index[(agent, _said(entry))]

    def withdraw_later(
        self,
        row: int,
        agent: str,
        belief: str,
        since: int,
        at: int,
        until: int | None = None,
        confidence: Decimal | None = None,
    ) -> None:
        """Keep a withdrawn belief's times (for what the memory held before, and, with
        ``until``, what its agent held before that valid time) and its ``confidence``, when
        another than the observation's."""
        self.withdrawn.setdefault(row, []).append((agent, belief, since, at, until))
        if confidence is not None and scaled(confidence) != self.confidence[row]:
            self.withdrawn_confidence[belief] = confidence
        if until is not None:
            self.held_before.setdefault(agent, []).append((row, belief, since, at))

    def supportable_row(self, belief: str) -> int | None:
        """The row of the observation ``belief`` holds, if evidence may support it: a belief
        held now, or one a later fact of its agent withdrew, which holds until that fact
        begins (recall shows it, ``unsupported`` lists it) unless its agent forgot it."""
        row = self.belief_row.get(belief)
        if row is not None or belief in self.forgotten:
            return row
        now = micros(utc_now())
        held = (
            r
            for agent, before in self.held_before.items()
            for r, b, _, _ in before
            if b == belief and now < self.belief_end(r, agent)
        )
        return next(held, None)

    def belief_end(
        self, row: int, agent: str, known_at: int | None = None, leaving: int | None = None
    ) -> int:
        """Where the belief of ``agent`` in the fact at ``row`` that a later fact of its own
        withdrew ends for it, as known at ``known_at`` (None: now): where the agent's next
        fact of the same subject and predicate begins (NO_END: none), as it would have
        begun had that fact been told when the belief was withdrawn. The later fact may have
        been forgotten since (the belief then holds on to the next), and an earlier one told
        late ends it sooner. A plan others hold on that the agent called off (``_calls_off``)
        ends for it where it begins: it held for the agent at no time. ``leaving``: a row
        taken as not the agent's (a forget planned).
        """
        return self.belief_ender(row, agent, known_at, leaving)[0]

    def belief_ender(
        self, row: int, agent: str, known_at: int | None = None, leaving: int | None = None
    ) -> tuple[int, int | None]:
        """``belief_end``, and the row of the fact that ends the belief there (None: none)."""
        entry = self.entries[row]
        key = fact_key(entry)
        began = int(self.valid_from[row])
        end, ender = NO_END, None
        for other in self.fact_index.get(key, []) if key is not None else ():
            if other in (row, leaving):
                continue
            start = int(self.valid_from[other])
            later = self.entries[other]
            if self._calls_off(other, row, agent, known_at):
                start = began  # the plan held for the agent at no time
            elif start < began or (start == began and later.seq < entry.seq):
                continue
            elif later.stated_until is not None and micros(later.stated_until) <= start:
                continue  # never holds: ends nothing
            elif self._called_off_for(other, agent, known_at):
                continue  # a plan the agent called off held for it at no time
            if start < end and self._agent_held(other, agent, known_at):
                end, ender = start, other
        return end, ender

    def called_off(self, row: int) -> list[tuple[int, str]]:
        """(plan row, agent): the plans others hold on that the end told at ``row`` calls
        off for its agent alone (``_calls_off``)."""
        entry = self.entries[row]
        key = fact_key(entry)
        return [
            (plan, agent)
            for plan in (self.fact_index.get(key, []) if key is not None else ())
            if plan != row
            for agent in dict.fromkeys(a for a, *_ in self.withdrawn.get(plan, ()))
            if agent in entry.agents and self._calls_off(row, plan, agent)
        ]

    def _called_off_for(self, plan: int, agent: str, known_at: int | None = None) -> bool:
        """Whether ``agent`` called off the plan at ``plan``, which others hold on
        (``_calls_off``), as known at ``known_at`` (None: now): it held for the agent at no
        time, so it ends none of the agent's facts."""
        # Only a belief withdrawn for a later fact may have been called off (cheap first).
        if not any(
            a == agent and until is not None for a, *_, until in self.withdrawn.get(plan, ())
        ):
            return False
        key = fact_key(self.entries[plan])
        return any(
            end != plan
            and (
                self.live[end]
                if known_at is None
                else self.recorded_at[end] <= known_at < self.retracted_at[end]
            )
            and any(a == agent for a, _ in self.believers(end, known_at))
            and self._calls_off(end, plan, agent, known_at)
            for end in (self.fact_index.get(key, []) if key is not None else ())
        )

    def _calls_off(self, other: int, row: int, agent: str, known_at: int | None = None) -> bool:
        """Whether the fact at ``other`` is ``agent``'s end told of the plan at ``row``,
        which others hold on, before it began (the plan called off for the agent alone):
        the same value, told later but before the plan's start with only an end at or
        before that start (so it holds at no time itself), and the agent's belief in the
        plan withdrawn as it was recorded (or before, by a later fact of the agent's: it
        held until that fact began, and the end told moves its end to the plan's start),
        and not held again since (as known at ``known_at``; None: now). A plan the agent
        alone held is superseded from its start instead (its validity is the agent's)."""
        entry, end = self.entries[row], self.entries[other]
        began = int(self.valid_from[row])
        stated = end.stated_until
        told = int(self.recorded_at[other])
        # The agent's beliefs this end withdrew itself (from the plan's start).
        ended = {
            b
            for a, b, _, at, until in self.withdrawn.get(row, ())
            if a == agent and at == told and until == began
        }
        return (
            stated is not None
            and end.seq > entry.seq
            and end.record is None
            and topic_key(end.object or "") == topic_key(entry.object or "")
            and micros(stated) <= min(began, int(self.valid_from[other]))
            and micros(end.observed_at) < began
            and any(
                a == agent and at <= told and until is not None
                for a, _, _, at, until in self.withdrawn.get(row, ())
            )
            # The plan told again after it was called off holds for the agent as told then;
            # told again in the same call, it is a belief besides the one the end withdrew.
            and not any(
                (told < since or (told == since and ended and belief not in ended))
                and (known_at is None or since <= known_at)
                for belief, since in self._agent_since(row, agent)
            )
        )

    def _agent_since(self, row: int, agent: str) -> list[tuple[str, int]]:
        """Each belief of ``agent`` in the observation at ``row``, held or withdrawn, and
        when it began (microseconds)."""
        first = int(self.recorded_at[row])
        held = [
            (b, self.late_beliefs[b][2] if b in self.late_beliefs else first)
            for b in self.entries[row].beliefs
            if self.belief_agent.get(b) == agent
        ]
        withdrawn = self.withdrawn.get(row, ())
        return held + [(b, since) for a, b, since, _, _ in withdrawn if a == agent]

    def _agent_held(self, row: int, agent: str, known_at: int | None) -> bool:
        """Whether ``agent`` held the fact at ``row`` at record time ``known_at`` (None:
        now), or held it until a later fact of its own (a belief ``belief_end`` ends)."""
        if known_at is None:
            if not self.live[row]:
                return False
        elif not self.recorded_at[row] <= known_at < self.retracted_at[row]:
            return False
        if any(a == agent for a, _ in self.believers(row, known_at)):
            return True
        return any(
            r == row and (known_at is None or gone <= known_at) and self.held_then(b, known_at)
            for r, b, _, gone in self.held_before.get(agent, ())
        )

    def held_then(self, belief: str, known_at: int | None = None) -> bool:
        """Whether a belief a later fact of its agent withdrew still held until that fact
        at record time ``known_at`` (None: now): not forgotten by then."""
        forgot = self.forgotten.get(belief)
        return forgot is None or (known_at is not None and known_at < forgot)

    def _held_until_then(self, agent: str, known_at: int | None, at: int) -> list[tuple[int, str]]:
        """(row, belief id) of the beliefs of ``agent`` a later fact of its own withdrew
        that still held for it at valid time ``at``, as known at ``known_at``."""
        return [
            (row, belief)
            for row, belief, _, gone in self.held_before.get(agent, ())
            if (known_at is None or gone <= known_at)
            and self.held_then(belief, known_at)
            and at < self.belief_end(row, agent, known_at)
        ]

    def held_until_later(self, row: int, agent: str) -> str | None:
        """The belief of ``agent`` in the observation at ``row`` that a later fact of its
        own withdrew (it holds for the agent until that fact began), if any."""
        return next(
            (
                b
                for a, b, *_, until in self.withdrawn.get(row, [])
                if a == agent and until is not None and self.held_then(b)
            ),
            None,
        )

    def withdraw_outright(self, belief: str, at: int) -> None:
        """A belief ``held_until_later`` holds at no valid time from record time ``at``:
        its agent forgot it."""
        self.forgotten[belief] = at

    def withdrawn_belief(self, row: int, agent: str) -> str | None:
        """The belief ``agent`` withdrew from the observation at ``row``, if any."""
        return next((b for a, b, *_ in self.withdrawn.get(row, []) if a == agent), None)

    def superseded_by(self, row: int, newer_id: str) -> None:
        """Record that the observation ``newer_id`` superseded the one at ``row``."""
        entry = self.entries[row]
        entry.superseded_by = (*entry.superseded_by, newer_id)

    def link(
        self, newer: int, older: int, at: datetime, known: datetime, undone: datetime | None = None
    ) -> None:
        """Keep a supersession for views at a record time (``incoming``): ``newer`` ends
        ``older`` at ``at`` (the newer fact's start), from ``known`` (when the link was
        recorded: with ``newer``, or later by a share, a forget or a start) until ``newer``
        is retracted or ``undone`` (a forget of the belief that made it)."""
        until = NO_END if undone is None else micros(undone)
        self.incoming.setdefault(older, []).append((newer, micros(at), micros(known), until))

    def contradict(self, x: int, y: int, known: datetime) -> None:
        """Keep a contradiction between the rows ``x`` and ``y`` (``contradicting``),
        recorded at ``known``."""
        at = micros(known)
        self.contradicting.setdefault(x, []).append((y, at))
        self.contradicting.setdefault(y, []).append((x, at))

    def supersede(self, newer: int, older: int, at: datetime, known: datetime) -> None:
        """The fact at ``older`` stops being valid at ``at`` because of ``newer`` (recorded
        at ``known``)."""
        entry = self.entries[older]
        self.link(newer, older, at, known)
        self.superseded_by(older, self.entries[newer].id)
        at_us = micros(at)
        if self.valid_until[older] > at_us:
            self.valid_until[older] = at_us
            entry.valid_until = at

    def reopen(
        self, row: int, until: datetime | None, forgotten: str, undone: datetime | None = None
    ) -> None:
        """Give a fact a new end (None: no end) because its superseder ``forgotten`` is gone:
        retracted, or, with ``undone``, no longer held by the fact's agents from then."""
        if undone is not None:
            newer = self.row_of[forgotten]
            self.incoming[row] = [
                (n, at, known, micros(undone) if n == newer and end == NO_END else end)
                for n, at, known, end in self.incoming.get(row, [])
            ]
        entry = self.entries[row]
        entry.valid_until = until
        self.valid_until[row] = NO_END if until is None else micros(until)
        entry.superseded_by = tuple(i for i in entry.superseded_by if i != forgotten)

    def retract(self, row: int, at: datetime) -> None:
        """Hide a row from every recall of now (kept in the graph for audit, and for views
        at a record time before ``at``)."""
        self._unindex_texts(row)
        entry = self.entries[row]
        if not entry.retracted:
            self._link_topics(row, -1)
        entry.retracted = True
        entry.retracted_at = at
        self.retracted_at[row] = micros(at)
        self.live[row] = False
        # Out of the search index, as after a restart: found at an earlier ``known_at`` by
        # its words only.
        self.embeddings.clear(row)
        self.passages.clear(row)

    def purge(self, row: int) -> None:
        """Forget a row entirely (its slot stays, dead, so other rows keep their numbers)."""
        entry = self.entries[row]
        if not entry.retracted:
            self._unindex_texts(row)
            self._link_topics(row, -1)
        entry.retracted = True
        self.live[row] = False
        self.recorded_at[row] = NO_END  # held at no time
        self.text.remove(row, entry.text)
        key = fact_key(entry)
        if key is not None and row in self.fact_index.get(key, []):
            self.fact_index[key].remove(row)
            objects = {topic_key(self.entries[r].object or "") for r in self.fact_index[key]}
            if len(objects) < 2:
                self.mixed_facts.discard(key)
        if entry.record is not None:
            self._unindex_record(row, entry.record)
        self.incoming.pop(row, None)
        for side, _ in self.contradicting.pop(row, []):
            kept = [link for link in self.contradicting.get(side, []) if link[0] != row]
            if kept:
                self.contradicting[side] = kept
            else:
                self.contradicting.pop(side, None)
        for older, links in list(self.incoming.items()):
            if any(link[0] == row for link in links):
                self.incoming[older] = [link for link in links if link[0] != row]
        for other in self.entries:
            if entry.id in other.superseded_by:
                other.superseded_by = tuple(i for i in other.superseded_by if i != entry.id)
        self.row_of.pop(entry.id, None)
        for belief in entry.beliefs:
            self.belief_row.pop(belief, None)
            self.belief_agent.pop(belief, None)
            self.late_beliefs.pop(belief, None)
            self.belief_confidence.pop(belief, None)
        for agent, belief, *_ in self.withdrawn.pop(row, []):
            self.withdrawn_confidence.pop(belief, None)
            self.forgotten.pop(belief, None)
            if agent in self.held_before:
                self.held_before[agent] = [h for h in self.held_before[agent] if h[0] != row]
        # Its neighbours in the episode are next to each other now, as after a restart.
        before, after = int(self.previous[row]), int(self.following[row])
        if before >= 0:
            self.following[before] = after
        if after >= 0:
            self.previous[after] = before
        self.previous[row] = self.following[row] = -1
        if entry.episode is not None and row in self.episode_rows.get(entry.episode, ()):
            self.episode_rows[entry.episode].remove(row)
        self.embeddings.clear(row)
        self.passages.clear(row)
        self.co_activated.pop(row, None)
        for neighbours in self.co_activated.values():
            neighbours.pop(row, None)
        self.judged.forget_row(row)

    def learn(self, recalls: Sequence[JudgedRecall], alike: float) -> None:
        """Remember judged recalls, in the order they were judged: each query's vector
        against each judged row (+1 / -1); what each showed counts against the acceptances
        of earlier queries at least ``alike`` similar (``JudgedQueries.seen``)."""
        self.judged.add_all(recalls, alike)

    def shown(self, row: int, hit: bool) -> None:
        """Count one impression of ``row`` in a judged recall, and a hit if accepted."""
        self.impressions[row] += 1
        if hit:
            self.hits[row] += 1
            self.unrewarded[row] = 0
        else:
            self.unrewarded[row] += 1

    def co_activate(self, rows: list[int]) -> None:
        """Count a co-activation between every pair of rows accepted together."""
        for a in rows:
            for b in rows:
                if a != b:
                    self.co_activated[a][b] = self.co_activated[a].get(b, 0) + 1

    # ---- the two clocks: what was valid then (as_of), as the memory held it then (known_at)

    def held(self, n: int, known_at: int | None = None) -> BoolArray:
        """Rows 0..n the memory held at record time ``known_at`` (microseconds; None: now,
        the live rows): recorded by then, and not retracted by then."""
        if known_at is None:
            return self.live[:n].copy()
        return (self.recorded_at[:n] <= known_at) & (self.retracted_at[:n] > known_at)

    def ends(self, n: int, known_at: int | None = None) -> IntArray:
        """Each row's end of validity as the memory held it at ``known_at`` (None: now): the
        end it was given, or the start of a superseder held then, whichever is earlier."""
        if known_at is None:
            return self.valid_until[:n]
        until = self.stated_until[:n].copy()
        retracted = self.retracted_at
        for older, links in self.incoming.items():
            if older < n:
                for newer, at, known, undone in links:
                    if at < until[older] and known <= known_at < min(retracted[newer], undone):
                        until[older] = at
        return until

    def end_of(self, row: int, known_at: int | None = None) -> int:
        """``ends`` of one row."""
        if known_at is None:
            return int(self.valid_until[row])
        end = int(self.stated_until[row])
        for newer, at, known, undone in self.incoming.get(row, []):
            if at < end and known <= known_at < min(self.retracted_at[newer], undone):
                end = at
        return end

    def placed_in(
        self,
        start: int,
        end: int,
        rows: npt.NDArray[np.int64],
        began: tuple[int, int] | None = None,
    ) -> BoolArray:
        """Per row of ``rows``: whether it began in [start, end) (microseconds) or tells of
        an event then (with its precision's slack: "I fixed the roof yesterday", said on 8
        May, is placed on 7 May). ``began``: the span as instants, when its days are of
        another calendar than UTC's (event times are days; a beginning is an instant)."""
        first, last = (start, end) if began is None else began
        begins = self.valid_from[rows]
        inside: BoolArray = (begins >= first) & (begins < last)
        maybe = ~inside & self._may_tell_of(start, end, rows)
        if maybe.any():
            begin, finish = from_micros(start), from_micros(end)
            for i in np.flatnonzero(maybe):
                inside[i] = self._tells_of(int(rows[i]), begin, finish)
        return inside

    def held_in(
        self, first: int, last: int, rows: npt.NDArray[np.int64], ends: IntArray
    ) -> BoolArray:
        """Per row of ``rows``: whether it is a fact whose validity [begin, end) meets
        [first, last) (instants, microseconds), by ``ends`` (each row's end as the recall
        holds it: ``ends``): "Sam works at Acme", told in October, held on the Monday asked
        of. Not one ending where it began or before (stale when told, told with only an end
        gone by): it held at no time."""
        begins = self.valid_from[rows]
        until = ends[rows]
        held: BoolArray = (begins < last) & (until > first) & (until > begins)
        for i in np.flatnonzero(held):
            held[i] = self.entries[int(rows[i])].subject is not None
        return held

    def any_placed_in(
        self,
        start: int,
        end: int,
        rows: npt.NDArray[np.int64],
        began: tuple[int, int] | None = None,
    ) -> bool:
        """Whether any of ``rows`` is ``placed_in`` [start, end), stopping at the first."""
        first, last = (start, end) if began is None else began
        begins = self.valid_from[rows]
        if ((begins >= first) & (begins < last)).any():
            return True
        begin, finish = from_micros(start), from_micros(end)
        maybe = rows[self._may_tell_of(start, end, rows)]
        return any(self._tells_of(row, begin, finish) for row in maybe.tolist())

    def _may_tell_of(self, start: int, end: int, rows: npt.NDArray[np.int64]) -> BoolArray:
        """Per row: whether the span its event times reach meets [start, end)."""
        may: BoolArray = (self.told_from[rows] < end) & (self.told_until[rows] > start)
        return may

    def _tells_of(self, row: int, begin: datetime, finish: datetime) -> bool:
        """Whether one of the row's event times meets [begin, finish) (``overlaps``)."""
        return any(overlaps(e, begin, finish) for e in self.entries[row].event_times)

    def view(self, n: int, as_of: int, known_at: int | None = None) -> tuple[BoolArray, BoolArray]:
        """The rule of both clocks for rows 0..n, in one place: (seen, current). ``seen``:
        held at record time ``known_at`` (None: now) and begun by valid time ``as_of``
        (microseconds); ``current``: seen and still valid at ``as_of`` as known then."""
        seen = self.held(n, known_at) & (self.valid_from[:n] <= as_of)
        return seen, seen & (self.ends(n, known_at) > as_of)

    def held_row(self, row: int, known_at: int | None = None) -> bool:
        """``held`` for one row."""
        if known_at is None:
            return bool(self.live[row])
        return bool(self.recorded_at[row] <= known_at < self.retracted_at[row])

    def is_current(self, row: int, as_of: int, known_at: int | None = None) -> bool:
        """``view``'s ``current`` for one row."""
        return (
            self.held_row(row, known_at)
            and bool(self.valid_from[row] <= as_of)
            and as_of < self.end_of(row, known_at)
        )

    def ending_link(self, row: int, known_at: int | None = None) -> tuple[int, int] | None:
        """The supersession that ends the fact at ``row`` as held at ``known_at`` (None:
        now): (the newer row, when the link was recorded, in microseconds), or None when no
        superseder ends it (it has no end, or the end it was given)."""
        end = self.end_of(row, known_at)
        for newer, at, known, undone in self.incoming.get(row, []):
            if at != end:
                continue
            if known_at is None:
                if undone == NO_END and self.live[newer]:
                    return newer, known
            elif (
                known <= known_at < undone
                and self.recorded_at[newer] <= known_at < self.retracted_at[newer]
            ):
                return newer, known
        return None

    def ender(self, row: int, known_at: int | None = None) -> tuple[int, int] | None:
        """``ending_link``, through plans replaced before they began: Rome ended in 2030 by
        Oslo from 2030, itself replaced by Tokyo from 2030 before it began, was ended by
        Tokyo. (the row, when the memory knew it: the latest of the links followed)."""
        return self._through_plans(self.ending_link(row, known_at), known_at)

    def _through_plans(
        self, found: tuple[int, int] | None, known_at: int | None
    ) -> tuple[int, int] | None:
        """(a superseder, when known) as it ended the fact: the plan itself if it held, else
        what replaced it before it began (through plans so replaced, however many; a loop of
        them ends the walk)."""
        walked: set[int] = set()
        while found is not None:
            newer, known = found
            if newer in walked or self.end_of(newer, known_at) > self.valid_from[newer]:
                break  # it held: it is what ended the fact
            walked.add(newer)
            replaced = self.ending_link(newer, known_at)
            if replaced is None:
                break
            found = (replaced[0], max(known, replaced[1]))
        return found

    def superseders(self, row: int, known_at: int | None = None) -> list[str]:
        """Ids of the observations that had superseded the one at ``row`` at ``known_at``
        (None: now), retracted and purged ones never; a plan replaced before it began is
        named by what replaced it (``ender``'s way): it ended nothing."""
        if known_at is None:
            found = [self.row_of[i] for i in self.entries[row].superseded_by if i in self.row_of]
        else:
            found = [
                newer
                for newer, _, known, undone in self.incoming.get(row, [])
                if known <= known_at < min(self.retracted_at[newer], undone)
            ]
        named: list[str] = []
        for newer in found:
            held = self._through_plans((newer, 0), known_at)
            heir = self.entries[newer if held is None else held[0]].id
            if heir != self.entries[row].id and heir not in named:
                named.append(heir)
        return named

    def believers(
        self, row: int, known_at: int | None = None, at: int | None = None
    ) -> list[tuple[str, str]]:
        """(agent, belief id) of every belief held in the observation at ``row`` at
        ``known_at`` (None: now), in the order they were taken; with valid time ``at``,
        also the beliefs a later fact of their agent withdrew that held for it then."""
        entry = self.entries[row]
        held = [(self.belief_agent.get(b, ""), b) for b in entry.beliefs]
        gone = self.withdrawn.get(row, [])
        out = held
        if known_at is not None:
            out = [
                (a, b)
                for a, b in held
                if (late := self.late_beliefs.get(b)) is None or late[2] <= known_at
            ]
            out += [(a, b) for a, b, since, until, _ in gone if since <= known_at < until]
        if at is not None:
            out += [
                (a, b)
                for a, b, _, until, held_until in gone
                if held_until is not None
                and (known_at is None or until <= known_at)
                and self.held_then(b, known_at)
                and at < self.belief_end(row, a, known_at)
            ]
        return out

    def held_records(
        self, live: bool
    ) -> tuple[dict[str, int], dict[str, int], dict[str, tuple[str, set[str]]]]:
        """What records hold, of unretracted records only when ``live`` (what a ``where``
        can match now; ``record_fields`` and ``record_types`` count retracted records too,
        which ``known_at`` still finds): per field key and per record type, how many records
        hold it, and per record type (``records.type_name_key``) its name as stored and the
        field keys its records hold. One pass over every row: for the rare ``where`` that
        matched nothing.
        """
        fields: dict[str, int] = {}
        types: dict[str, int] = {}
        type_fields: dict[str, tuple[str, set[str]]] = {}
        for row, entry in enumerate(self.entries):
            record = entry.record
            if record is None or (live and not self.live[row]):
                continue
            keys = {f.key for f in record.fields}
            for field in keys:
                fields[field] = fields.get(field, 0) + 1
            types[record.type] = types.get(record.type, 0) + 1
            _, held = type_fields.setdefault(type_name_key(record.type), (record.type, set()))
            held.update(keys)
        return fields, types, type_fields

    def where_rows(self, condition: Sequence[WhereField]) -> IntArray:
        """Rows of the records holding a value that meets ``condition``
        (``records.conditions``): equal to its one value, or standing to every one of its
        bounds as each says (one value of a list meeting them all)."""
        first = condition[0]
        cls, value = first.value
        if first.op == "=":
            rows = self.rows_of(self.record_values, (first.key, cls, value))
            if first.also is None:
                return rows
            kept = self.rows_of(self.record_values, (first.key, "string", first.also))
            return np.union1d(rows, kept) if len(kept) else rows
        classes = {w.value[0] for w in condition}
        if "number" in classes and len(classes) > 1:
            return np.zeros(0, dtype=np.int64)  # no value is a number and a date
        # A date-time is held under its instant and its UTC day: with an instant bound, the
        # instants are the values that may meet every bound, and a date is the instant its
        # UTC day begins (5 March is >= 1 March 00:00Z: a field holding dates and date-times
        # lost its dates to a date-time bound).
        cls = "instant" if "instant" in classes else cls
        held = self.record_ordered.get((first.key, cls), {})
        found = [
            self.rows_of(self.record_values, (first.key, cls, canonical))
            for canonical in held
            if meets(cls, canonical, condition)
        ]
        if cls == "instant":
            for day in self.record_ordered.get((first.key, "day"), {}):
                if meets(cls, f"{day}T00:00:00+00:00", condition):
                    rows = self.rows_of(self.record_values, (first.key, "day", day))
                    found.append(
                        np.array(
                            [r for r in rows if self._holds_date(r, first.key, day)], dtype=np.int64
                        )
                    )
        return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)

    def _holds_date(self, row: int, key: str, day: str) -> bool:
        """Whether the record at ``row`` holds the date ``day`` (not a date-time on it) in
        its field ``key``."""
        record = self.entries[row].record
        return record is not None and any(
            f.key == key and f.kind == "date" and f.text() == day for f in record.fields
        )

    def agent_confidence(
        self, agent: str, known_at: int | None = None, at: int | None = None
    ) -> dict[int, Decimal]:
        """Rows whose observation ``agent`` held with a confidence of its own (another than
        the observation's) at record time ``known_at`` (None: now) and, for a belief a
        later fact of its own withdrew, valid time ``at``: row -> that confidence."""
        found = {
            self.belief_row[b]: c
            for b, c in self.belief_confidence.items()
            if self.belief_agent.get(b) == agent
            and b in self.belief_row
            and (
                known_at is None
                or (late := self.late_beliefs.get(b)) is None
                or late[2] <= known_at
            )
        }
        if not self.withdrawn_confidence:
            return found
        held: list[tuple[int, str]] = []
        if known_at is not None:
            held += [
                (row, b)
                for row, gone in self.withdrawn.items()
                for a, b, since, until, _ in gone
                if a == agent and since <= known_at < until
            ]
        if at is not None:
            held += self._held_until_then(agent, known_at, at)
        for row, belief in held:
            own = self.withdrawn_confidence.get(belief)
            if own is not None:
                found[row] = own
        return found

    def shown_confidence(
        self, row: int, known_at: int | None = None, at: int | None = None
    ) -> Decimal:
        """The confidence the observation at ``row`` shows when no agent is asked: that of
        the first belief holding it at record time ``known_at`` (None: now) and valid time
        ``at`` (``believers``); the observation's own (its first believer's) while that one
        holds it, or when none does. An agent's withdrawn belief no longer speaks for it."""
        entry = self.entries[row]
        gone = self.withdrawn.get(row)
        if not gone:
            return entry.confidence
        held = self.believers(row, known_at, at)
        if not held:
            return entry.confidence
        since = {b: s for _, b, s, *_ in gone}

        def began(held_by: tuple[str, str]) -> tuple[int, bool]:
            # Beliefs taken in one write begin together: the observation's own (whose
            # confidence is the observation's) comes first among them.
            belief = held_by[1]
            own = belief in self.belief_confidence or belief in self.withdrawn_confidence
            if belief in since:
                return since[belief], own
            late = self.late_beliefs.get(belief)
            return (late[2] if late is not None else micros(entry.recorded_at)), own

        first = min(held, key=began)[1]
        for mine in (self.belief_confidence, self.withdrawn_confidence):
            if (own := mine.get(first)) is not None:
                return own
        return entry.confidence

    def shown_confidences(
        self, known_at: int | None = None, at: int | None = None
    ) -> dict[int, Decimal]:
        """``shown_confidence`` of every row where it is not the observation's own: rows
        whose first believer withdrew while others kept them, and some belief holds a
        confidence of its own (few: only those can differ)."""
        found: dict[int, Decimal] = {}
        for row, gone in self.withdrawn.items():
            if not any(b in self.belief_confidence for b in self.entries[row].beliefs) and not any(
                b in self.withdrawn_confidence for _, b, *_ in gone
            ):
                continue
            shown = self.shown_confidence(row, known_at, at)
            if shown != self.entries[row].confidence:
                found[row] = shown
        return found

    def agent_mask(
        self, agent: str, n: int, known_at: int | None = None, at: int | None = None
    ) -> BoolArray:
        """Rows 0..n the agent believed at ``known_at`` (None: now); with valid time ``at``,
        also those a later fact of the agent withdrew its belief in that held for it then."""
        mask = np.zeros(n, dtype=bool)
        rows = self.rows_of(self.agent_rows, agent)
        if len(rows):
            mask[rows[rows < n]] = True
        if known_at is not None:
            for row, who, since in self.late_beliefs.values():
                if who == agent and since > known_at and row < n:
                    mask[row] = False
            for row, gone in self.withdrawn.items():
                if row < n and any(
                    who == agent and since <= known_at < until for who, _, since, until, _ in gone
                ):
                    mask[row] = True
        if at is not None:
            for row, _ in self._held_until_then(agent, known_at, at):
                if row < n:
                    mask[row] = True
        return mask

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

    def mentioned_with(
        self, key: str, known_at: int | None = None, as_of: int | None = None
    ) -> dict[str, int]:
        """The entities mentioned together with ``key`` and how often (topics of one
        observation, a fact's topics with its subject and object), by the rows held at
        record time ``known_at`` (None: now) and begun by valid time ``as_of`` (None: any)."""
        if known_at is None and as_of is None:
            counts = dict(self.topic_links.get(key, {}))
            for other, count in self.fact_links.get(key, {}).items():
                counts[other] = counts.get(other, 0) + count
            return counts
        counts = {}
        rows = {*self.topic_rows.get(key, ()), *self.entity_facts.get(key, ())}
        for row in rows:
            if self.held_row(row, known_at) and (as_of is None or self.valid_from[row] <= as_of):
                together, with_ends = self._pairs(row)
                for a, b in (*together, *with_ends):
                    if a == key:
                        counts[b] = counts.get(b, 0) + 1
        return counts

    def never_held_rows(self, n: int) -> IntArray:
        """Rows 0..n of facts told with only an end already past (``never_held``)."""
        if not self.never_held:
            return np.zeros(0, dtype=np.int64)
        rows = np.frombuffer(self.never_held, dtype=np.int64)
        return rows[rows < n]

    def rows_of(self, index: Mapping[Any, array.array[int]], key: Any) -> IntArray:
        """Rows listed under ``key`` in a topic, agent or record index, as a numpy array."""
        found = index.get(key)
        if found is None or len(found) == 0:
            return np.zeros(0, dtype=np.int64)
        return np.frombuffer(found, dtype=np.int64)


def _string_values(record: Record) -> set[tuple[str, str]]:
    """(field key, ``records.loose`` value) of each of a record's strings, as a query's words
    match them."""
    found = {(f.key, loose(f.value)) for f in record.fields if isinstance(f.value, str)}
    return {(key, words) for key, words in found if words}


def _count_down(counts: dict[str, int], key: str) -> None:
    """One fewer of ``key``, and the key out when none is left."""
    left = counts.get(key, 1) - 1
    if left:
        counts[key] = left
    else:
        counts.pop(key, None)


def _drop(index: dict[Any, array.array[int]], key: Any, row: int) -> None:
    """Take ``row`` out of ``index[key]``, and the key out when no row is left."""
    rows = index.get(key)
    if rows is not None and row in rows:
        rows.remove(row)
        if not rows:
            del index[key]


def _said(entry: Entry) -> str:
    return said_key(entry.text_key, entry.subject, entry.predicate, entry.object, entry.event_times)
