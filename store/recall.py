"""One recall over the working memory: what it asks (``question``), the rows its filters
allow, the full-text search beside the vector scan, and the ranking (``ranking.rank``).

``Memory.recall`` embeds the query and waits for pending embeddings first, under no lock,
then runs ``answer`` under the working memory's read lock: recalls run side by side, and a
recall touches no database.

The full-text search runs on a second core while the recall's own thread scans the vectors
(ONNX Runtime lets go of the GIL during the scan; see vector_matrix). ``SecondCore`` has one
thread per core; when all are busy with other recalls, a recall searches the text itself
after its scan, since the cores are busy anyway and a queue behind other recalls' searches
would serialize parallel recalls again.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from decimal import Decimal
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from doxa.store import updates
from doxa.store.details import details
from doxa.store.drafts import name, predicate_key, unicode_text
from doxa.store.errors import InvalidInput
from doxa.store.fact_questions import (
    names_fact,
    names_only_relation,
    names_relation,
    question_words,
)
from doxa.store.learning import Learned
from doxa.store.question_shape import asks_for_many
from doxa.store.ranking import Ranked, named_fields, query_topics, rank
from doxa.store.records import WhereField, conditions, parse_where
from doxa.store.settings import RankingWeights
from doxa.store.text_index import passage_span
from doxa.store.timewords import (
    asks_when,
    relative_window,
    time_window,
    without_days_from_today,
)
from doxa.store.values import (
    in_zone,
    micros,
    parse_asked_moment,
    parse_limit,
    parse_unit_decimal,
    scaled,
    utc_now,
)
from doxa.store.working_memory import BoolArray, IntArray, WorkingMemory, fact_key, topic_key

OrderBy = Literal["relevance", "confidence", "newest", "oldest"]
MAX_QUERY = 4_000
MAX_LIMIT = 100

T = TypeVar("T")


@dataclass(frozen=True)
class Question:
    """A recall's request, validated: the query and its filters."""

    query: str
    agent: str | None
    topics: list[str]
    minimum: Decimal | None
    at: datetime
    include_superseded: bool
    limit: int
    order_by: OrderBy
    #: (start, end) in microseconds of the time the query's words name, or None: days of the
    #: calendar asked in, as event times are kept (a note's "tomorrow" is a day, not an
    #: instant).
    window: tuple[int, int] | None
    #: Exact filters on a fact's parts and on the episode (matched as topics are).
    subject: str | None = None
    predicate: str | None = None
    obj: str | None = None
    episode: str | None = None
    #: Record time: answer with what the memory held then (None: now).
    known_at: datetime | None = None
    #: The query asks when something happened or how long it lasted (``asks_when``).
    asks_when: bool = False
    #: Records' fields that must hold these values.
    where: tuple[WhereField, ...] = ()
    #: Facts that begin after ``at`` come too, as not current (no ``as_of`` was asked:
    #: "Hal moves to Tokyo in 2030" is known now, and was found by nothing but as_of).
    #: Facts over by ``at`` at the end they were given come whatever was asked.
    beside_now: bool = False
    #: ``window`` is named from the day asked ("tomorrow", "last week": ``relative_window``).
    from_today: bool = False
    #: ``window`` as instants, for what began then (an observation made, a fact's start):
    #: its days in the calendar asked in. None: ``window`` (asked in UTC).
    instants: tuple[int, int] | None = None

    @property
    def began(self) -> tuple[int, int] | None:
        """``instants``, or ``window`` where they are one."""
        return self.window if self.instants is None else self.instants


def question(
    query: str,
    agent: str | None = None,
    topics: Sequence[str] | None = None,
    min_confidence: object = None,
    as_of: object = None,
    include_superseded: bool = False,
    limit: int = 10,
    order_by: OrderBy = "relevance",
    subject: str | None = None,
    predicate: str | None = None,
    obj: str | None = None,
    episode: str | None = None,
    known_at: object = None,
    where: object = None,
    zone: str = "UTC",
) -> Question:
    """Validate a recall's arguments (see ``Memory.recall``; ``obj`` is its ``object``;
    ``zone``: the memory's time zone, whose calendar a question asked without a time is
    read in, and a bare date ``as_of`` or ``known_at``, which ends that day on its clock).

    Raises:
        InvalidInput: naming the argument and the fix.
    """
    if not isinstance(query, str):
        raise InvalidInput("query", "must be a string: what to look for, in words")
    if len(query) > MAX_QUERY:
        # A pasted log or stack trace is the usual one: its key lines find what it would.
        raise InvalidInput(
            "query",
            f"is {len(query)} characters long; the limit is {MAX_QUERY}: ask with its key"
            " words (an error line, a name, a path), not a whole log or document",
        )
    # The recall is recorded in the graph, which stores UTF-8: a surrogate would fail the
    # recorder's whole batch later, far from this call.
    unicode_text(query, "query")
    agent_name = name(agent, "agent", required=False)
    topic_names: list[str] = []
    for i, topic in enumerate(topics or []):
        cleaned = name(topic, f"topics[{i}]")
        assert cleaned is not None
        topic_names.append(cleaned)
    parts = {
        field_name: name(value, field_name, required=False)
        for field_name, value in (
            ("subject", subject),
            ("predicate", predicate),
            ("object", obj),
            ("episode", episode),
        )
    }
    fields = () if where is None else tuple(parse_where(where))
    narrowed = agent_name is not None or topic_names or any(parts.values()) or fields
    if not query.strip() and not narrowed:
        raise InvalidInput(
            "query",
            "must not be empty unless a filter (agent, topics, subject, predicate, object,"
            " episode, where) narrows the recall",
        )
    minimum = (
        None if min_confidence is None else parse_unit_decimal(min_confidence, "min_confidence")
    )
    # A bare date is the end of that day in the memory's time zone: "as of the 3rd" is by
    # the end of the 3rd, not its first instant in UTC.
    told_known = None if known_at is None else parse_asked_moment(known_at, "known_at", zone)
    known = None if told_known is None else told_known[1]
    # What was believed current then, unless a valid time is asked for too.
    told = parse_asked_moment(as_of, "as_of", zone) if as_of is not None else told_known
    at = utc_now() if told is None else told[1]
    # Days the query names ("tomorrow") are read in the calendar of the offset the time was
    # given in, as a note's are at remember: 21:00 at -08:00 is 05:00Z the next day; a bare
    # date's, and a question asked without a time, in the memory's time zone (``zone``).
    asked_in = in_zone(at, zone) if told is None else told[0]
    wall = asked_in.replace(tzinfo=UTC)
    parse_limit(limit, "limit", MAX_LIMIT)
    if order_by not in ("relevance", "confidence", "newest", "oldest"):
        raise InvalidInput("order_by", "must be one of relevance, confidence, newest, oldest")
    window = time_window(query, wall)
    instants = None if window is None else _instants(window, asked_in)
    return Question(
        query=query,
        agent=agent_name,
        topics=topic_names,
        minimum=minimum,
        at=at,
        include_superseded=include_superseded,
        limit=limit,
        order_by=order_by,
        window=None if window is None else (micros(window[0]), micros(window[1])),
        subject=parts["subject"],
        predicate=parts["predicate"],
        obj=parts["object"],
        episode=parts["episode"],
        beside_now=as_of is None,
        known_at=known,
        asks_when=asks_when(query),
        where=fields,
        from_today=relative_window(query, wall) is not None,
        instants=instants,
    )


def _instants(window: tuple[datetime, datetime], asked_in: datetime) -> tuple[int, int] | None:
    """The days of ``window`` (read in the calendar of ``asked_in``) as instants: "what do I
    have tomorrow?" asked at 21:30 in California is of 08:00Z on the 7th to 08:00Z on the
    8th, and a note made at 05:30Z on the 7th was made the day before. None in UTC."""
    zone = asked_in.tzinfo
    try:
        instants = tuple(micros(end.replace(tzinfo=zone)) for end in window)
    except (OverflowError, ValueError):
        # A span reaching the years' end (9999) read in a zone west of UTC: kept as days.
        return None
    start, end = instants
    return None if (start, end) == (micros(window[0]), micros(window[1])) else (start, end)


#: Components that find a result by something the query names (``ranking.rank``).
_FOUND_BY_NAME = ("text", "topic", "time", "fact", "field")


def nothing_close(ranked: Sequence[Ranked], asked: Question, weights: RankingWeights) -> str | None:
    """The note of a recall whose results are only the nearest: none shares a word with
    the query, none is ``weights.close_meaning`` alike to it in meaning, and none was found
    by a topic, time, fact or field the query names, or by feedback (with ten unrelated
    notes, "neighbour divorce" came back with ten answers and no word that none was about
    it); None otherwise, for a listing, or with a filter (what it selects is what was
    asked)."""
    filtered = asked.agent or asked.topics or asked.subject or asked.predicate or asked.obj
    if not ranked or not asked.query.strip() or filtered or asked.episode or asked.where:
        return None
    if weights.close_meaning <= 0 or weights.vector <= 0:
        return None
    nearest = 0.0
    for r in ranked:
        scores = r.components
        if any(scores.get(k, 0.0) > 0 for k in _FOUND_BY_NAME) or scores.get("feedback", 0) > 0:
            return None
        nearest = max(nearest, scores.get("vector", 0.0) / weights.vector)
    if nearest >= weights.close_meaning:
        return None
    return (
        f"nothing shares a word with the query or is close in meaning (nearest {nearest:.2f}"
        " alike): these are only the nearest, and what was asked may not be in the memory"
    )


def without_days_asked(asked: Question) -> str | None:
    """The query without its words naming days from today (``Question.from_today``), or None.

    "What do I have tomorrow?": notes of other weeks saying "tomorrow" told of other days,
    yet matched the word (by text and meaning) better than the plan for tomorrow matched the
    question's time. ``answer`` searches and compares by these words when the recall may
    return something placed in the time they name; with nothing placed then, the words are
    all there is to go by ("What did Joanna write yesterday?" asked long after: her
    "yesterday" is the one to find).
    """
    if not asked.from_today or asked.window is None:
        return None
    return without_days_from_today(asked.query)


@dataclass(frozen=True)
class Plain:
    """A query without its days from today (``without_days_asked``): its words, and the
    vector the scan compares for it."""

    words: str
    vector: npt.NDArray[np.float32]


class SecondCore:
    """Runs a recall's full-text search on another thread while the recall scans, when one
    of its threads is free (see the module docstring).

    Args:
        threads: how many searches may run beside scans at once (default: one per core).
    """

    def __init__(self, threads: int | None = None) -> None:
        size = threads or os.cpu_count() or 2
        self._free = threading.Semaphore(size)
        self._pool = ThreadPoolExecutor(max_workers=size, thread_name_prefix="doxa-recall")

    def start(self, work: Callable[[], T]) -> Callable[[], T]:
        """Begin ``work`` on a free thread; returns what gives its result (doing the work
        on the calling thread if no thread was free)."""
        if not self._free.acquire(blocking=False):
            return work
        try:
            future: Future[T] = self._pool.submit(work)
        except BaseException:
            self._free.release()
            raise
        future.add_done_callback(lambda _: self._free.release())
        return future.result

    def close(self) -> None:
        """Finish running searches and stop the threads."""
        self._pool.shutdown(wait=True)


def answer(
    working: WorkingMemory,
    asked: Question,
    vector: npt.NDArray[np.float32] | None,
    weights: RankingWeights,
    second_core: SecondCore,
    learned: Learned | None = None,
    search_vector: npt.NDArray[np.float32] | None = None,
    plain: Plain | None = None,
) -> tuple[list[Ranked], BoolArray, int]:
    """Rank the working memory for one recall: at most ``asked.limit`` rows in the order
    asked for, with each row's currency (``current[row]``: valid at ``asked.at``; facts no
    longer valid come last, unless replaced ones were asked for: ``_timeline``), and, for a
    listing (no ``vector``), how many rows match in all (else how many were ranked). The
    caller holds the working memory's read lock.

    Args:
        working: the working memory.
        asked: the recall.
        vector: the embedded query, or None for a query without words.
        weights: the ranking weights.
        second_core: where the full-text search runs during the vector scan.
        learned: the trained ranker and the clock judgements decay by (``learning``).
        search_vector: the vector the scan compares, when not ``vector`` (the query without
            its broad topics: ``ranking.without_broad_topics``).
        plain: the query without its days from today (``without_days_asked``): searched and
            compared instead when a row the recall may return is placed in their time.
    """
    n = len(working)
    query = asked.query
    at_us = micros(asked.at)
    known_us = None if asked.known_at is None else micros(asked.known_at)
    # Held at the record time and begun by the valid time; valid then, as known then.
    mask, valid = working.view(n, at_us, known_us)
    # Facts over by then at their own end come at any time asked ("did Sam still own it on
    # 20 November?" found nothing where a recall of now found the sale); those that begin
    # later only when no ``as_of`` was asked.
    ends = working.ends(n, known_us)  # once: at a known_at it walks every supersession
    # One told with only an end already past, of a fact never held, begins when it was told
    # (after its end): asked as of a day between the two, the end was known and found by none.
    seen = mask
    never = working.never_held_rows(n)
    if len(never):
        holds = (
            working.live[never]
            if known_us is None
            else (working.recorded_at[never] <= known_us) & (working.retracted_at[never] > known_us)
        )
        seen = mask.copy()
        seen[never[holds & (working.stated_until[never] <= at_us)]] = True
    beside = _ended(working, seen, valid, ends)
    if asked.beside_now:
        beside |= _upcoming(working, n, at_us, known_us, ends)
    # A question of a time ("Where did Alice live in March?") is asked of what held then:
    # a fact replaced since comes too (it was found by nothing but ``as_of``), and each fact
    # is ordered as if then were now (``_beside_current``); of a time to come, a plan then
    # comes too, also asked ``as_of`` now. Not one ending where it began (stale when told, a
    # plan replaced before it began) or before (told with only an end past): it held at no
    # time.
    then = None
    began = asked.began
    if began is not None:
        begins = working.valid_from[:n]
        then = working.held(n, known_us) & (begins < began[1]) & (ends > began[0]) & (ends > begins)
        if not asked.include_superseded:
            beside |= then & ~valid
    mask |= beside
    if asked.agent is not None:
        mask &= working.agent_mask(asked.agent, n, known_us, at_us)
    if asked.topics:
        # What mentions a topic, or a fact naming it (a person told of only in facts is one
        # the agent tracks too, as about and find_conflicts read a name).
        any_topic = np.zeros(n, dtype=bool)
        for topic in asked.topics:
            key = topic_key(topic)
            any_topic |= _member(working.rows_of(working.topic_rows, key), n)
            any_topic |= _member(working.rows_of(working.entity_facts, key), n)
        mask &= any_topic
    # The confidence results show where it is not the observation's: the asked agent's own,
    # or with none asked, the first believer's still holding it (needed here only to filter
    # or order by it; results show it per row).
    own = {}
    if asked.agent is not None:
        own = working.agent_confidence(asked.agent, known_us, at_us)
    elif asked.minimum is not None or asked.order_by == "confidence":
        own = working.shown_confidences(known_us, at_us)
    if asked.minimum is not None:
        confidence = working.confidence[:n]
        if own:  # a belief of its own, or a first believer gone
            confidence = confidence.copy()
            for row, held in own.items():
                if row < n:
                    confidence[row] = scaled(held)
        mask &= confidence >= scaled(asked.minimum)
    for part, wanted in (("subject", asked.subject), ("object", asked.obj)):
        if wanted is not None:
            mask &= _member(_fact_rows(working, part, wanted), n)
    if asked.predicate is not None:
        mask &= _member(_predicate_rows(working, asked.predicate), n)
    if asked.episode is not None:
        mask &= _member(_episode_rows(working, asked.episode), n)
    for condition in conditions(asked.where):
        mask &= _member(working.where_rows(condition), n)
    current = mask & valid
    if not asked.include_superseded:
        mask = current | (mask & beside)
    # Days from today left out once a row the recall may return is placed then (``Plain``).
    words = query
    window = asked.window
    if (
        plain is not None
        and window
        and began is not None
        and (
            working.any_placed_in(*window, np.flatnonzero(mask), asked.instants)
            or (then is not None and _names_a_fact_held(working, query, mask & then))
        )
    ):
        words, search_vector = plain.words, plain.vector
    # Full text among the rows the filters allow, so a filter never starves the pool.
    searching: Callable[[], list[tuple[int, float]]] | None = None
    if weights.text_pool and query.strip():
        allowed, pool = mask, weights.text_pool
        searching = second_core.start(lambda: working.text.search(words, pool, allowed))
    try:
        scanned = vector if search_vector is None else search_vector
        similarity = None if scanned is None else working.similarity(scanned, n)
    finally:
        # Always collected, even if the scan failed: the search reads the working memory,
        # and the caller's read lock must outlast it.
        hits = searching() if searching is not None else []
    limit = asked.limit
    ranked = rank(
        working,
        mask,
        vector,
        hits,
        query_topics(working, query) if query.strip() else [],
        asked.window,
        weights,
        # A listing and a history rank all; otherwise the limit and as many again for the
        # facts not valid now (a plan, one over at its own end: they stand where they rank,
        # ``_beside_current``), so that many facts over by now never make every recall rank
        # them all; an order other than relevance puts current ones first, so it ranks them
        # all (the current ones then fill the limit).
        n
        if vector is None or asked.include_superseded
        else limit
        + (
            min(limit, int(np.count_nonzero(mask & ~current)))
            if asked.order_by == "relevance"
            else int(np.count_nonzero(mask & ~current))
        ),
        similarity=similarity,
        question=question_words(query) if query.strip() else None,
        asks_when=asked.asks_when,
        fields_named=named_fields(working, query) if query.strip() else None,
        learned=learned,
        search_vector=search_vector,
        asks_many=asks_for_many(query),
        query_details=details(query) if len(working.judged) else None,
        began=asked.instants,
        ends=ends,
    )
    if vector is None:  # a listing: everything matching is ordered as asked
        ranked.sort(key=lambda r: -working.entries[r.row].seq)
    elif asked.order_by != "relevance":
        # The ``limit`` most relevant (current first, unless replaced ones were asked for),
        # then ordered as asked: a newer or surer row that matches less never displaces one.
        if not asked.include_superseded:
            ranked = sorted(ranked, key=lambda r: not current[r.row])
        ranked = ranked[:limit]
    if asked.include_superseded:
        shown = _timeline(ranked, working, asked.order_by, own, known_us, current, then)
        total = len(shown)
    else:
        shown = _order(ranked, working, asked.order_by, own, current, then)
        total = len(ranked)
    shown = _with_later_notes(
        shown[:limit],
        working,
        updates.candidates(similarity, mask, [row for row, _ in hits], weights.pool),
        weights,
        reorder=vector is not None and asked.order_by == "relevance",
    )
    return _with_passages(shown, working, words, scanned, hits, weights), current, total


def _names_a_fact_held(working: WorkingMemory, query: str, held: BoolArray) -> bool:
    """Whether a fact of the rows ``held`` (those the recall allows that held in the time
    asked), which the question names (as ranking's ``fact`` component reads it: its subject
    or object and its predicate, or its predicate and no other name): ranking places it
    then, found by the fact named whatever words are searched ("Where did Sam live
    yesterday?", Munich from Wednesday asked on Friday). Only the facts of the names the
    question holds, or, when it holds none, of the predicates it names, are looked at:
    every standing fact holds in any time asked of."""
    n = len(held)
    question = question_words(query)
    named = (
        working.entries[row]
        for key in query_topics(working, query, working.entity_facts)
        for row in working.entity_facts[key]
        if row < n and held[row]
    )
    if any(
        names_fact(question, entry.subject, entry.predicate, entry.object)
        or names_only_relation(question, entry.subject, entry.predicate, entry.object)
        for entry in named
        if entry.subject is not None and entry.predicate is not None
    ):
        return True
    if question.names:
        # A fact named by its predicate alone must hold every name asked: one of those
        # names' own facts, looked at above.
        return False
    relations = {p for p in working.predicates if names_relation(question, p)}
    if not relations:
        return False
    # With no name asked, every held fact of a predicate named is named (``names_only_relation``):
    # the first found ends the look.
    return any(
        row < n and held[row]
        for (_, predicate), found in working.fact_index.items()
        if predicate in relations
        for row in found
    )


def _with_later_notes(
    ranked: list[Ranked],
    working: WorkingMemory,
    among: npt.NDArray[np.int64],
    weights: RankingWeights,
    reorder: bool,
) -> list[Ranked]:
    """``ranked`` with each plain note's later notes that may update it (``updates``),
    found ``among`` the rows the recall allows, and, when ``reorder`` (by relevance), each
    later note that is among them placed above the note it may update."""
    later = updates.later_notes(
        working,
        [r.row for r in ranked],
        among,
        weights.update_alike,
        weights.update_alike_strict,
    )
    if not later:
        return ranked
    if reorder:
        ranked = updates.newer_first(ranked, later)
    return [replace(r, later=tuple(later[r.row])) if r.row in later else r for r in ranked]


#: How much more than a long text's first passage another must score to be shown instead of
#: its start (as much as a cosine 0.05 higher): notes alike all through scored 0.41 at their
#: start and 0.42 at their end, and were shown from the middle of a line for no gain.
_CLEARLY_BETTER = 0.05


def _with_passages(
    ranked: list[Ranked],
    working: WorkingMemory,
    words: str,
    vector: npt.NDArray[np.float32] | None,
    hits: list[tuple[int, float]],
    weights: RankingWeights,
) -> list[Ranked]:
    """``ranked`` with the passage that matched of each long text (``matched_passage``)."""
    if vector is None:  # a listing: nothing was matched
        return ranked
    best_text = max((score for _, score in hits), default=0.0)
    out = []
    for r in ranked:
        span = matched_passage(working, r.row, words, vector, best_text, weights)
        out.append(r if span is None else replace(r, passage=span))
    return out


def matched_passage(
    working: WorkingMemory,
    row: int,
    words: str,
    vector: npt.NDArray[np.float32],
    best_text: float,
    weights: RankingWeights,
) -> tuple[int, int] | None:
    """Where in ``row``'s text the passage lies that matched the query best, scored as
    ranking scores a row (``ranking.rank``'s base: its vector similarity and its BM25
    score over the recall's best, weighted) as if the passage were the text; None for a text
    of one passage, or when none matched clearly better than its first (``_CLEARLY_BETTER``).

    Only a long text's, one that has passage vectors (the recall waited for them), and its
    words are looked for only when a passage other than the first won. The passage's own
    words are scored (``TextIndex.passage_scores``), and its vector (``PassageVectors``); the
    first passage's similarity is its text's own vector's where that is higher (the model
    reads a text's first 256 tokens).
    """
    count = working.passages.count(row)
    if count < 2:
        return None
    score = np.zeros(count, dtype=np.float64)
    if best_text > 0 and weights.text:
        score += weights.text * working.text.passage_scores(row, words, count) / best_text
    similarity = working.passages.scores(row, vector)[:count]
    own = float(working.embeddings.refined(vector, np.array([row], dtype=np.int64))[0])
    similarity[0] = max(similarity[0], own)
    score[: len(similarity)] += weights.vector * np.maximum(similarity, 0.0)
    best = int(np.argmax(score))
    if score[best] - score[0] < _CLEARLY_BETTER:
        return None
    return passage_span(working.entries[row].text, best, count)


def _upcoming(
    working: WorkingMemory, n: int, at: int, known_at: int | None, ends: IntArray
) -> BoolArray:
    """Rows 0..n of the facts held at ``known_at`` that begin after ``at`` (and hold then,
    by their ``ends`` as held at ``known_at``)."""
    begins = working.valid_from[:n]
    # A plan replaced before it began (Tokyo from 2030, then Rome instead) never holds.
    later = working.held(n, known_at) & (begins > at) & (ends > begins)
    for row in np.flatnonzero(later):
        if working.entries[row].subject is None:  # an observation said to be seen later
            later[row] = False
    return later


def _ended(working: WorkingMemory, seen: BoolArray, valid: BoolArray, ends: IntArray) -> BoolArray:
    """Of the ``seen`` rows not ``valid`` then, the facts over at the end they were given
    ("Sam quit Acme on 10 November": the news of the end was found by nothing but
    ``include_superseded``), by their ``ends`` as held then; also one told with only an end
    already past, which never held ("Sam sold his VW Golf on 10 November", of a car the
    memory never heard of). Not one a newer fact ended: a replaced one stays out. Only
    facts end: an observation's validity has no end."""
    over: BoolArray = seen & ~valid & (ends == working.stated_until[: len(seen)])
    return over


def _fact_rows(working: WorkingMemory, part: str, wanted: str) -> npt.NDArray[np.int64]:
    """Rows of the facts whose ``part`` ("subject" or "object") is ``wanted``."""
    key = topic_key(wanted)
    rows = [
        row
        for row in working.entity_facts.get(key, ())
        if topic_key(getattr(working.entries[row], part) or "") == key
    ]
    return np.array(rows, dtype=np.int64)


def _predicate_rows(working: WorkingMemory, wanted: str) -> npt.NDArray[np.int64]:
    """Rows of the live facts with this predicate (``predicate_key``: "lives in" is
    "lives_in")."""
    key = predicate_key(wanted)
    rows = [
        row
        for (_, predicate), found in working.fact_index.items()
        if predicate_key(predicate) == key
        for row in found
    ]
    return np.array(rows, dtype=np.int64)


def _episode_rows(working: WorkingMemory, wanted: str) -> npt.NDArray[np.int64]:
    """Rows learned in the episode ``wanted`` (named as topics are, ``topic_key``)."""
    key = topic_key(wanted)
    rows = [
        row
        for episode, found in working.episode_rows.items()
        if topic_key(episode) == key
        for row in found
    ]
    return np.array(rows, dtype=np.int64)


def _member(rows: npt.NDArray[np.int64], n: int) -> BoolArray:
    mask = np.zeros(n, dtype=bool)
    if len(rows):
        mask[rows[rows < n]] = True
    return mask


def _order(
    ranked: list[Ranked],
    working: WorkingMemory,
    order_by: OrderBy,
    own: dict[int, Decimal],
    current: BoolArray | None,
    then: BoolArray | None = None,
) -> list[Ranked]:
    """Present results in the requested order (by confidence: ``own`` where a result shows
    another than its observation's); facts not valid now (not ``current``) come last, but by
    relevance each stands where it ranks, only never before a current fact of its own
    subject and predicate (``_beside_current``; of a question of a time, before one that
    held ``then``)."""
    entries = working.entries
    if order_by == "confidence":
        ranked = sorted(
            ranked,
            key=lambda r: (-own.get(r.row, entries[r.row].confidence), -r.score),
        )
    elif order_by == "newest":
        ranked = sorted(ranked, key=lambda r: (-micros(entries[r.row].observed_at), -r.score))
    elif order_by == "oldest":
        ranked = sorted(ranked, key=lambda r: (micros(entries[r.row].observed_at), -r.score))
    if current is None:
        return ranked
    if order_by == "relevance":
        return _beside_current(ranked, working, current if then is None else then)
    return sorted(ranked, key=lambda r: not current[r.row])


def _beside_current(
    ranked: list[Ranked], working: WorkingMemory, current: BoolArray
) -> list[Ranked]:
    """Facts not valid now (a plan, one over at its own end) where they rank among the
    results, except that the current fact of the same subject and predicate, when found,
    comes first: the two stand where the better ranked would, as ``_timeline`` places a
    replaced fact ("Geneva" asked: "Mia lives in Lyon", then "Mia moves to Geneva in
    2027"). After every current result, ten notes that only shared a word with the
    question kept "Sam sold his VW Golf" out of every answer."""
    entries = working.entries
    first: dict[tuple[str, str], Ranked] = {}  # fact key -> its first current result
    for r in ranked:
        key = fact_key(entries[r.row])
        if current[r.row] and key is not None:
            first.setdefault(key, r)
    ordered: list[Ranked] = []
    placed: set[int] = set()
    for r in ranked:
        if r.row in placed:
            continue
        key = fact_key(entries[r.row])
        held = first.get(key) if key is not None and not current[r.row] else None
        for shown in (held, r):
            if shown is not None and shown.row not in placed:
                ordered.append(shown)
                placed.add(shown.row)
    return ordered


def _timeline(
    ranked: list[Ranked],
    working: WorkingMemory,
    order_by: OrderBy,
    own: dict[int, Decimal],
    known_at: int | None,
    current: BoolArray,
    then: BoolArray | None = None,
) -> list[Ranked]:
    """Present a recall that asked for replaced facts too: a history question ranks them
    as it ranks current ones (after every current one, a small ``limit`` saw none), except
    that a fact no longer valid (not ``current``) comes right after the fact that replaced
    it when both are found, so what replaced it is never read below it: the two stand
    where the better ranked of them would ("Paris" asked, the replaced Paris brings Berlin
    up with it rather than waiting below every other match for it); a current fact never
    waits (for a plan that will replace it, say), nor, of a question of a time, one that
    held ``then`` (Berlin, asked of the Monday it held, before Munich from Wednesday).
    ``order_by`` other than relevance orders as asked (``newest`` and ``oldest`` read as a
    timeline)."""
    if order_by != "relevance":
        return _order(ranked, working, order_by, own, None)
    place = {r.row: i for i, r in enumerate(ranked)}
    # Each found replaced fact waits for the first found of its heirs.
    waiting: dict[int, list[Ranked]] = {}
    for r in ranked:
        if current[r.row] or (then is not None and then[r.row]):
            continue
        heirs = [
            place[row]
            for i in working.superseders(r.row, known_at)
            if (row := working.row_of.get(i, -1)) in place and row != r.row
        ]
        if heirs:
            waiting.setdefault(ranked[min(heirs)].row, []).append(r)
    waits = {r.row for held in waiting.values() for r in held}
    # Each fact no other waits on stands at the best place of the facts that wait on it,
    # through their chains (a walk up each chain; a loop of heirs ends it).
    heir_of = {r.row: heir for heir, held in waiting.items() for r in held}
    root_of: dict[int, int] = {}  # each walk's end, kept: a long chain is walked once
    best: dict[int, int] = {}
    for r in ranked:
        row, walked = r.row, []
        while row in heir_of and row not in root_of and row not in walked:
            walked.append(row)
            row = heir_of[row]
        root = root_of.get(row, row)
        root_of.update(dict.fromkeys(walked, root))
        best[root] = min(best.get(root, place[root]), place[r.row])
    roots = sorted((r for r in ranked if r.row not in waits), key=lambda r: best[r.row])
    ordered: list[Ranked] = []
    shown: set[int] = set()
    # Heirs that wait on each other (each told to replace the other) wait for nobody: all
    # are presented in rank order at the end. A stack, not recursion: a fact replaced a
    # thousand times is a chain that long.
    for r in [*roots, *ranked]:
        stack = [r]
        while stack:
            top = stack.pop()
            if top.row in shown:
                continue
            shown.add(top.row)
            ordered.append(top)
            stack.extend(reversed(waiting.pop(top.row, [])))
    return ordered
