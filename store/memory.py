"""``Memory``: the one way into the store. It keeps the graph, the search index and the
working memory in step, and owns the locks that let calls run side by side.

A write goes graph first: one Kùzu transaction, and when it commits the working memory
mirrors it and the call answers (remember calls waiting for the graph at the same time share
one transaction). The texts are embedded after that on the embedding queue's
thread, which gives the vectors to the working memory and hands the search-index rows to
the index writer. If the process dies before those rows are written, the next start-up
finds the stores disagreeing and repairs the index from the graph (missing rows embedded,
unknown rows removed; see ``startup``).

The parts: ``startup`` (open, load, repair), ``planning`` (what a write will do, decided
from the working memory alone), ``remembering`` (a remember's graph rows, statements and
mirror), ``recall`` (filters, the second core, ranking), ``recall_log`` (recent recalls and
their events, written to the graph in batches), ``provenance`` (citations and conflicts),
``entities`` (one entity at a glance; its summary, written after the writes that change it).

Heavy work (loading the embedding model, opening the index, repairing, loading the working
memory) runs on a warm-up thread started by ``start``; operations wait for it, while a server
can answer ``initialize`` and ``tools/list`` at once.

Locks, in the order they are taken (a thread holding one takes only those below it):

1. The graph's write lock (``Graph.exclusive``, ``Graph.write``): one writer at a time,
   across remember, feedback, forget, the recall recorder and checkpoints. A writer holds it
   from planning to the end of its mirror, so what it planned against is what it changes.
2. The working memory's readers-writer lock (``ReadersWriterLock``). Recalls share it; a
   write takes it alone, only to apply what has committed (remember, forget, feedback) or
   to store delivered embeddings (the embedding queue's thread). Planning, find_conflicts'
   clashes and its descriptions read under it shared. Graph reads and writes, model calls
   and waits for embeddings happen outside it: a recall never waits for the database, the
   model or another recall, only for a write's mirror.
3. The recall log's lock: recent recalls and their unwritten events, held only to add, take
   or look one up. Events are taken for writing only under lock 1 (see ``recall_log``).

The entity summaries' thread takes 2 (shared, to compute) and then 1 (to write), never both;
the set of entities to refresh has a leaf lock, taken briefly by writes under 1.

The queues' own locks (embedding queue, index writer) are taken last and briefly, never
waited on under 1-3: ``remember`` waits for a long embedding queue before it takes any
lock, and a recall waits for its pending embeddings before it takes the read lock (their
delivery takes the write lock).
"""

from __future__ import annotations

import copy
import json
import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doxa.store import entities as entity_views
from doxa.store import names as known_names
from doxa.store import picture as pictures
from doxa.store import planning, provenance, pruning, remembering, startup
from doxa.store.details import details
from doxa.store.drafts import MemoryDraft, NewMemory, name, validate
from doxa.store.embedder import Embedder, Vectors, has_weights, make_embedder
from doxa.store.embedding_queue import EmbeddingQueue
from doxa.store.errors import InvalidInput, MemoryInUse, MemoryStoreError, NotFound
from doxa.store.event_time import EventTime, most_specific
from doxa.store.judged_queries import JudgedRecall
from doxa.store.learning import Example, Learned, RankerModel, features_of
from doxa.store.long_lived import LongLived
from doxa.store.names import MAX_NAMES, NameKind, Names
from doxa.store.passage_vectors import Passages
from doxa.store.planning import Duplicate, HeldOn, Plan, Shared, new_id
from doxa.store.progress import REMEMBER_STEPS, Progress, unheard
from doxa.store.pruning import Pruned
from doxa.store.ranking import Ranked, without_broad_topics
from doxa.store.readers_writer import ReadersWriterLock
from doxa.store.recall import (
    MAX_LIMIT,
    Plain,
    SecondCore,
    answer,
    nothing_close,
    question,
    without_days_asked,
)
from doxa.store.recall import OrderBy as OrderBy  # re-exported: callers' type of order_by
from doxa.store.recall_log import RecallLog, Recent
from doxa.store.records import Record, unmatched_where
from doxa.store.settings import StoreSettings
from doxa.store.trainer import Trainer
from doxa.store.unmatched_names import unmatched_names
from doxa.store.values import (
    from_micros,
    from_naive_utc,
    iso,
    micros,
    parse_asked_time,
    parse_limit,
    parse_time,
    utc_now,
)
from doxa.store.working_memory import NO_END, Entry, WorkingMemory, fact_key, topic_key

if TYPE_CHECKING:  # imported on the warm-up thread: lancedb alone takes most of a second
    from doxa.store.graph import Graph, GraphWriter
    from doxa.store.index import SearchIndex
    from doxa.store.index_writer import IndexWriter

log = logging.getLogger(__name__)

#: The log line of a refusal at warm-up (a ``MemoryStoreError``: what is wrong, what to do).
#: Every caller of ``wait_ready`` gets the same error, so a command that prints it drops this.
WARM_UP_FAILED = "memory warm-up failed: %s"


# The result types live here, where the relay's allow-list names them (doxa.store.relay).


@dataclass(frozen=True)
class Remembered:
    """What ``remember`` did with one memory."""

    observation_id: str
    belief_id: str
    topics: list[str]
    superseded: list[str]
    duplicate_of: str | None
    conflicts: list[str]
    #: set when another agent already held the same observation: this is a new belief in
    #: it, and these agents believed it before.
    shared_with: list[str] = field(default_factory=list)
    #: facts of the agent's, told before, that begin later and end this one (told late, it
    #: holds only until the first of them begins).
    superseded_by: list[str] = field(default_factory=list)
    #: the facts ``superseded`` names, in words ("Maya allergic to penicillin"): ids alone
    #: did not show an agent that its new fact had replaced one it still meant.
    replaced: list[str] = field(default_factory=list)
    #: (valid_until, the words it was read from) of a fact given no end whose words gave one
    #: ("until Friday", ``drafts.ended_as_told``): said, so that an agent that meant
    #: otherwise can mend it.
    ends: tuple[datetime, str] | None = None


@dataclass(frozen=True)
class Recollection:
    """One recalled observation with why it ranked."""

    observation_id: str
    belief_ids: list[str]
    text: str
    confidence: Decimal
    observed_at: datetime
    source: str | None
    episode: str | None
    topics: list[str]
    agents: list[str]
    score: float
    scores: dict[str, float]
    superseded_by: list[str]
    current: bool
    fact: dict[str, Any] | None
    #: When what it tells of happened, the most specific time its words name (``event_time``).
    happened: EventTime | None = None
    #: A structured record's type and typed fields (``records``).
    record: Record | None = None
    #: Ids of what disputes it at the recall's times, at most ``provenance.MOST_DISPUTING``:
    #: observations a standing contradiction links to it and facts that clash with it, the
    #: newest first.
    conflicts: list[str] = field(default_factory=list)
    #: Where in a long text the passage that matched best lies, (start, end) characters;
    #: None for a short text or one whose first passage matched best (``recall``).
    passage: tuple[int, int] | None = None
    #: Ids of later plain notes about the same thing with other numbers or names, that say
    #: something changed: they may update it (``updates``), newest first.
    maybe_updated_by: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RecallOutcome:
    """A recall's id (for feedback) and its results, best first; with no results, why a
    ``where`` filter can match no record, if it cannot (``records.unmatched_where``), or that
    nothing was recorded by ``known_at``; a listing cut at its limit, how many matched."""

    recall_id: str
    results: list[Recollection]
    note: str | None = None


@dataclass(frozen=True)
class Judged:
    """What ``feedback`` recorded."""

    recall_id: str
    accepted: list[str]
    rejected: list[str]
    impressions: int


@dataclass(frozen=True)
class Forgotten:
    """What ``forget`` did."""

    observation_id: str
    mode: str
    belief_ids: list[str]
    already: bool
    #: agents that still believe the observation (only the forgetting agent's belief was
    #: withdrawn); empty when the observation itself was retracted or purged.
    kept_for: list[str] = field(default_factory=list)


@dataclass
class _Remembering:
    """One remember call, until it is answered with its results or its error."""

    memories: list[NewMemory]
    batch: bool
    results: list[Remembered] | None = None
    error: BaseException | None = None

    @property
    def answered(self) -> bool:
        return self.results is not None or self.error is not None


class Memory:
    """The memory of one data directory: remember, recall, judge, cite, forget.

    Use ``Memory.open(settings)``, then ``start()`` (warm-up on a thread) or ``warm_up()``.
    Every method is thread-safe: recalls run in parallel with each other and with the
    database work of writes; writes are serialized (see the module docstring for the locks).
    """

    def __init__(
        self,
        settings: StoreSettings,
        embedder: Embedder,
        trains: bool = True,
        imported: bool = False,
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self._trains = trains
        self._imported = imported
        self._graph: Graph | None = None
        self._index: SearchIndex | None = None
        self._index_writer: IndexWriter | None = None
        self._working: WorkingMemory | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._warm_thread: threading.Thread | None = None
        self._warm_lock = threading.Lock()
        self._warm_started = False
        # Lock 2 of the module docstring: recalls share it, writes' mirrors take it alone.
        self._working_lock = ReadersWriterLock()
        # Remember calls waiting for the graph's lock, written together by the first to get
        # it (see _remember_together); a leaf lock, held only to add or take.
        self._waiting: list[_Remembering] = []
        self._waiting_lock = threading.Lock()
        # Lock 3 is the recall log's own.
        self._recalls = RecallLog(embedder.fingerprint)
        self._second_core = SecondCore()
        self._embedding_queue: EmbeddingQueue | None = None
        self._summaries: entity_views.Summaries | None = None
        # Settled by the warm-up, then only by the embedding queue's thread (_deliver).
        self._long_lived = LongLived(every=_FREEZE_EVERY_ROWS)
        # Why pruned observations were retired (the graph's retraction carries a time only).
        self._audit = pruning.AuditLog(Path(settings.data_dir).expanduser())
        #: Observations purged by this process, with their beliefs: a purge retried (its
        #: first answer lost to a stopped owner) answers ``already``, as a retraction does.
        self._purged: dict[str, list[str]] = {}
        # The ranker trained on the judgements, retrained on its own thread (``trainer``).
        self._trainer: Trainer | None = None
        #: The time judgements are stamped with and decay by (tests set a simulated clock).
        self.clock: Callable[[], datetime] = utc_now

    # ---- lifecycle --------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        settings: StoreSettings,
        embedder: Embedder | None = None,
        trains: bool = True,
        imported: bool = False,
    ) -> Memory:
        """The memory in ``settings.data_dir`` (created if absent). Cheap: the stores open,
        and migrations run, on warm-up (``start`` or ``warm_up``); a store written by another
        schema then fails every call with ``SchemaMismatch``. ``trains``: False for a process
        that only looks (``Trainer``): the kept ranker is never retrained nor rewritten.
        ``imported``: the start right after an import, whose embedding of what it brought is
        expected work, not a repair (``startup.open_stores``).
        """
        data_dir = Path(settings.data_dir).expanduser()
        data_dir.mkdir(parents=True, exist_ok=True)
        chosen = embedder or make_embedder(settings.embedding)
        return cls(settings, chosen, trains, imported)

    def _claim_warm_up(self) -> bool:
        with self._warm_lock:
            if self._warm_started:
                return False
            self._warm_started = True
            return True

    def start(self) -> None:
        """Begin warming up on a background thread (returns at once)."""
        if self._claim_warm_up():
            self._warm_thread = threading.Thread(
                target=self._warm, name="doxa-warm-up", daemon=True
            )
            self._warm_thread.start()

    def warm_up(self) -> None:
        """Warm up on this thread and wait until ready (blocking form of ``start``)."""
        if self._claim_warm_up():
            self._warm()
        self.wait_ready()

    def _warm(self) -> None:
        try:
            self._load_everything()
        except BaseException as error:  # reported to every caller of wait_ready
            if isinstance(error, MemoryStoreError):  # says what is wrong and what to do
                log.error(WARM_UP_FAILED, error)
            elif isinstance(error, Exception):  # Ctrl-C is a stop, said by whoever stops
                log.exception("memory warm-up failed")
            self._failure = error
            self._ready.set()
            if isinstance(error, KeyboardInterrupt):  # Ctrl-C on the thread warming up
                raise

    def _load_everything(self) -> None:
        """Open the stores and load the working memory (``startup``), then load the model
        and start the background threads."""
        # The model loads on the way, once the graph's rows are in (``open_stores``). A
        # one-shot command (``trains`` False) loads it with its first embedding: `doxa
        # stats`, `export` or `about` embed nothing, and spent a second and 120 MB on it.
        stores = startup.open_stores(
            self.settings,
            self.embedder,
            self._imported,
            model=self._trains and has_weights(self.embedder),
        )
        self._graph, self._index, self._working = stores.graph, stores.index, stores.working
        from doxa.store.index_writer import IndexWriter

        stores.index.maintain(self.settings.maintenance_every)
        self._index_writer = IndexWriter(stores.index, self.settings.maintenance_every)
        # Late-bound, so the embedder can be replaced (tests) without a new queue.
        self._embedding_queue = EmbeddingQueue(lambda t: self.embedder.embed(t), self._deliver)
        # A stopped process ranked them with the embedder that built the index.
        self._recalls.recover(
            stores.graph,
            Path(self.settings.data_dir).expanduser() / "recalls",
            "" if stores.index.foreign else self.embedder.fingerprint,
        )
        self._recalls.start(stores.graph)
        self._trainer = Trainer(
            Path(self.settings.data_dir).expanduser(),
            self.settings.learning,
            self._examples,
            self.settings.ranking.feedback,
            embedder=self.embedder.fingerprint,
            foreign_index=stores.index.foreign,
            trains=self._trains,
            judged_since=lambda at: _judged_after(stores.graph, at, self.embedder.fingerprint),
        )
        self._trainer.start()
        self._summaries = entity_views.Summaries(self._write_summaries)
        if stores.working.entity_facts and not stores.graph.has_summaries():
            # Just migrated to summaries of their own (schema migration 15), or imported
            # into an empty memory: every entity's is written anew, in the background.
            self._summaries.mark(set(stores.working.entity_facts))
        self._long_lived.settle(len(stores.working))
        self._ready.set()

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until warm-up has finished (starting it if nobody did).

        Raises:
            MemoryStoreError: warm-up failed or did not finish within ``timeout``.
        """
        retried = False
        while True:
            self.start()
            if not self._ready.wait(timeout):
                raise MemoryStoreError("the memory is still loading; try again in a moment")
            # Another process had the graph open (a repair, an import): it may be done now,
            # and the failure was kept for good (every call refused until a restart). Each
            # caller waits again for the warm-up it or another caller started anew.
            with self._warm_lock:
                if not self._ready.is_set():
                    continue  # another caller started warming up again meanwhile
                again = not retried and isinstance(self._failure, MemoryInUse)
                if again and self._graph is None:
                    self._failure, self._warm_started = None, False
                    self._ready.clear()
                    retried = True
                    continue
            break
        if isinstance(self._failure, MemoryStoreError):
            raise self._failure
        if self._failure is not None:
            failure = str(self._failure) or type(self._failure).__name__
            raise MemoryStoreError(f"the memory failed to load: {failure}")

    @property
    def ready(self) -> bool:
        """True once warm-up has finished successfully."""
        return self._ready.is_set() and self._failure is None

    def close(self) -> None:
        """Wait for warm-up, then release both stores."""
        if self._warm_thread is not None:
            self._warm_thread.join()
        if self._summaries is not None:
            self._summaries.close()  # writes what is marked: before the graph closes
            self._summaries = None
        if self._trainer is not None:
            self._trainer.stop()  # it reads the graph: before the graph closes
        self._recalls.stop()
        self._second_core.close()
        if self._embedding_queue is not None:
            self._embedding_queue.close()  # delivers to the index writer: close it first
            self._embedding_queue = None
        if self._index_writer is not None:
            self._index_writer.close()
            self._index_writer = None
        if self._graph is not None:
            try:
                self._recalls.record(self._graph)
            except MemoryStoreError as error:
                # The recalls' record is a log, not something acknowledged: the graph still
                # closes cleanly (a graph refusing writes would otherwise stay open).
                log.warning("recalls of this session not recorded at close: %s", error)
            self._recalls.close()
            self._graph.close()
            self._graph = None

    @property
    def graph(self) -> Graph:
        """The graph, once warm-up has opened it."""
        self.wait_ready()
        assert self._graph is not None
        return self._graph

    @property
    def _wm(self) -> WorkingMemory:
        self.wait_ready()
        assert self._working is not None
        return self._working

    @property
    def _embeddings(self) -> EmbeddingQueue:
        self.wait_ready()
        assert self._embedding_queue is not None
        return self._embedding_queue

    @property
    def _writer(self) -> IndexWriter:
        self.wait_ready()
        assert self._index_writer is not None
        return self._index_writer

    # ---- remember ---------------------------------------------------------------------------

    def remember(
        self,
        drafts: Sequence[MemoryDraft],
        batch: bool = False,
        agent: str | None = None,
        progress: Progress = unheard,
    ) -> list[Remembered]:
        """Remember one or many observations, atomically: all are written or none.

        Args:
            drafts: the memories, values as given by the caller.
            batch: name fields as ``memories[i].field`` in errors.
            agent: the believing agent for drafts that name none (default: settings.agent).
            progress: told, in steps of the whole call, when the drafts are checked and
                when they are written (one transaction: there is no step in between).

        Returns:
            One ``Remembered`` per draft, in order.

        Raises:
            InvalidInput, NotFound: a value is wrong or names nothing; nothing was written.
        """
        default_agent = name(agent, "agent", required=False) or self.settings.agent
        memories: list[NewMemory] = []
        for i, draft in enumerate(drafts):
            try:
                memories.append(validate(draft, default_agent, self.settings.timezone))
            except InvalidInput as error:
                raise (error.within(f"memories[{i}]") if batch else error) from None
        if not memories:
            return []
        progress(1, REMEMBER_STEPS, f"checked {len(memories)} memories")
        working = self._wm
        graph = self.graph
        # The texts are embedded after the write, on the embedding queue's thread (see
        # embedding_queue). A writer faster than the model waits here, before any lock: the
        # queue's thread takes the working memory's write lock to deliver.
        self._embeddings.wait_below(MAX_QUEUED_TEXTS)
        asked = _Remembering(memories, batch)
        with self._waiting_lock:
            self._waiting.append(asked)
        with graph.exclusive():
            if not asked.answered:
                # Every remember waiting now is written with this one, in one transaction
                # (see _remember_together); the others find theirs answered.
                with self._waiting_lock:
                    group, self._waiting = self._waiting, []
                try:
                    self._remember_together(group, working, graph)
                except BaseException as error:
                    for other in group:
                        if not other.answered:
                            other.error = error if other is asked else copy.copy(error)
        if asked.error is not None:
            raise asked.error
        assert asked.results is not None
        progress(REMEMBER_STEPS, REMEMBER_STEPS, f"wrote {len(memories)} memories")
        return asked.results

    def _remember_together(
        self, group: list[_Remembering], working: WorkingMemory, graph: Graph
    ) -> None:
        """Write the remember calls waiting together as one write, in the order they came:
        planned as if sent one after another (a call naming a belief or observation that
        does not exist fails alone), written in one transaction, mirrored, and queued for
        embedding. The caller holds the graph's lock.

        Under many clients the graph's lock is the bottleneck of every write, and a
        transaction's fixed cost (BEGIN, COMMIT, one statement per kind of row) is most of
        a single remember's: shared, each call pays a fraction of it.
        """
        calls = list(group)
        while True:
            with self._working_lock.reading():
                now = utc_now()
                earlier = planning.Batch()
                planned: list[list[Plan | Duplicate | Shared]] = []
                failed: tuple[_Remembering, MemoryStoreError] | None = None
                for call in calls:
                    try:
                        planned.append(
                            planning.plan(call.memories, working, now, call.batch, earlier)
                        )
                    except (NotFound, InvalidInput) as error:
                        failed = (call, error)
                        break
                if failed is None:
                    plans = [p for done in planned for p in done if isinstance(p, Plan)]
                    shares = [p for done in planned for p in done if isinstance(p, Shared)]
                    write = (
                        remembering.prepare(plans, working, utc_now(), shares)
                        if plans or shares
                        else None
                    )
                    break
            # Nothing is written for that call; the others are planned again without it.
            failed[0].error = failed[1]
            calls.remove(failed[0])
            if not calls:
                return
        if write is not None:
            graph.transact("remember", lambda w: remembering.write(w, write))
            new = remembering.entries(write)
            with self._working_lock.writing():
                remembering.apply(working, write, new)
                back = [working.row_of[fact] for p in plans for fact, *_ in p.reopens]
                back += [row for p in plans for row, *_ in p.restores]
                given_back = [working.entries[r] for r in back]
            self._facts_changed(new + given_back)
            # The graph holds the memories now and the working memory finds them by their
            # words; their embeddings follow on the queue's thread, the index rows after.
            if plans:
                self._embeddings.put(
                    [p.observation_id for p in plans], [p.memory.text for p in plans]
                )
        with self._working_lock.reading():  # what ends a new fact, as recall names it
            for call, done in zip(calls, planned, strict=True):
                call.results = [_remembered(p, working) for p in done]

    def _deliver(
        self, ids: list[str], texts: list[str], vectors: Vectors, passages: Passages
    ) -> None:
        """Embedded memories and their passages (from the embedding queue's thread): into
        the working memory, then to the index writer, unless forgotten meanwhile."""
        working = self._wm
        with self._working_lock.writing():
            rows = {
                k: row
                for k, i in enumerate(ids)
                if (row := working.row_of.get(i)) is not None and working.live[row]
            }
            if not rows:
                return
            keep = list(rows)
            working.embeddings.put(list(rows.values()), vectors[keep])
            kept = passages.of_texts(keep)
            if len(kept):
                owners = [rows[keep[int(k)]] for k in kept.of]
                working.passages.put(owners, kept.vectors, kept.numbers)
            # Under the write lock, so a forget's index delete is queued after this add.
            self._writer.add([ids[k] for k in keep], [texts[k] for k in keep], vectors[keep], kept)
            grown = len(working)
        # Outside the lock: a collection of what came since the last freeze may take a while.
        self._long_lived.settle(grown)

    # ---- recall -----------------------------------------------------------------------------

    def recall(
        self,
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
        object: str | None = None,
        episode: str | None = None,
        known_at: object = None,
        where: object = None,
    ) -> RecallOutcome:
        """Find what the memory holds about ``query``, best first.

        Args:
            query: what to look for, in words. May be empty when a filter is given.
            agent: only observations this agent believes.
            topics: only observations mentioning any of these topics.
            min_confidence: only confidence >= this exact decimal.
            as_of: answer with what was valid then (ISO 8601; a bare date is the end of that
                day in the memory's time zone); default now.
            include_superseded: also return facts no longer valid, ranked as current ones
                are, each replaced fact right after the fact that replaced it.
            limit: at most this many results (1..100).
            order_by: "relevance" (default), or present the results by "confidence",
                "newest" or "oldest" first.
            subject, predicate, object: only facts with this subject, predicate or object
                (names as topics match; predicates as ``predicate_key`` normalises them).
            episode: only observations learned in this episode.
            known_at: answer with what the memory held then (ISO 8601, record time; a bare
                date as ``as_of``'s): what it had been told and not yet retracted; ``as_of``
                defaults to it.
            where: only records whose fields hold these values, {field: value} (all of
                them; compared by type: see ``records``).

        Raises:
            InvalidInput: a filter value is wrong; nothing is recorded.
        """
        asked = question(
            query,
            agent,
            topics,
            min_confidence,
            as_of,
            include_superseded,
            limit,
            order_by,
            subject=subject,
            predicate=predicate,
            obj=object,
            episode=episode,
            known_at=known_at,
            where=where,
            zone=self.settings.timezone,
        )
        working = self._wm
        remembered = self._embeddings.queued
        vector = search = plain = None
        if query.strip():
            share = self.settings.ranking.broad_topic_share
            days_out = without_days_asked(asked)
            with self._working_lock.reading():
                focused = without_broad_topics(working, query, share)
                plain_focused = (
                    None
                    if days_out is None
                    else without_broad_topics(working, days_out, share) or days_out
                )
            texts = [query, *(t for t in (focused, plain_focused) if t is not None)]
            vectors = self.embedder.embed(texts)
            # The scan compares the focused query; feedback compares whole queries.
            vector, search = vectors[0], (None if focused is None else vectors[1])
            if days_out is not None:
                plain = Plain(days_out, vectors[-1])
        # Every memory remembered before this recall is recalled by meaning too: wait for
        # the embeddings still queued (a recall right after a remember pays what it saved).
        if not self._embeddings.wait(remembered, timeout=_EMBEDDING_WAIT_S):
            log.warning("recall: memories still being embedded are found by text only")
        # The read lock only: a recall never waits for the graph (the recorder writing recall
        # events, a remember's transaction) nor for other recalls.
        learned = Learned(self._ranker.model, micros(self.clock()), self.settings.learning)
        with self._working_lock.reading():
            ranked, current, matched = answer(
                working,
                asked,
                vector,
                self.settings.ranking,
                self._second_core,
                learned,
                search_vector=search,
                plain=plain,
            )
            known = None if asked.known_at is None else micros(asked.known_at)
            at = micros(asked.at)
            # With an agent asked, each result shows that agent's own confidence in it; with
            # none, its first believer's that holds it.
            own = (
                working.agent_confidence(asked.agent, known, at)
                if asked.agent is not None
                else {r.row: working.shown_confidence(r.row, known, at) for r in ranked}
            )
            # What disputes each result, as find_conflicts would list it asked then.
            disputed = provenance.disputing(working, [r.row for r in ranked], at, known)
            results = [
                _recollection(
                    r,
                    working,
                    bool(current[r.row]),
                    known,
                    own.get(r.row),
                    at,
                    disputed.get(r.row, []),
                )
                for r in ranked
            ]
            note = None
            if not results and asked.where:
                # Named by what holds them now: a field only retracted records hold is none
                # to suggest (at the current time).
                fields, types, type_fields = working.held_records(live=asked.known_at is None)
                if asked.known_at is not None:
                    fields, types = working.record_fields, working.record_types
                values = working.record_values
                note = unmatched_where(
                    asked.where,
                    values,
                    fields,
                    types,
                    type_fields,
                    # A value only retracted records hold is none to suggest now.
                    None
                    if asked.known_at is not None
                    else lambda key: any(working.live[row] for row in values[key]),
                )
            # A where nothing is wrong with says nothing of the time asked: known_at may be
            # why (its note was lost whenever a where was given).
            if not results and note is None and asked.known_at is not None:
                n = len(working)
                if not n or int(working.recorded_at[:n].min()) > micros(asked.known_at):
                    # The record time, not observed_at: a team telling of days gone found
                    # "we knew nothing" by a known_at before it first told anything.
                    note = (
                        "nothing was recorded by known_at (when the memory learnt things, not"
                        " when they were observed); ask with a later known_at, or as_of"
                    )
            if not results and note is None and not asked.beside_now:
                # An as_of before anything held began (a model unsure of the year): the
                # empty answer read as "nothing was so then".
                n = len(working)
                begins = working.valid_from[:n][working.held(n, known)]
                if len(begins) and int(begins.min()) > at:
                    note = (
                        "nothing held had begun by as_of (the earliest began"
                        f" {iso(from_micros(int(begins.min())))}); ask with a later as_of"
                    )
            if not results and note is None and asked.agent is not None:
                note = _unknown_agent(working, asked.agent)
            if not results and note is None:
                note = unmatched_names(
                    working,
                    asked.topics,
                    asked.subject,
                    asked.predicate,
                    asked.obj,
                    asked.episode,
                )
            if vector is None and matched > len(results):
                note = _listing_cut(matched, asked.limit)
            if note is None and vector is not None:
                note = nothing_close(ranked, asked, self.settings.ranking)
        recall_id = new_id("rec")
        self._recalls.note(
            recall_id,
            query,
            asked.agent,
            utc_now(),
            vector,
            [(r.observation_id, r.score, k.features) for r, k in zip(results, ranked, strict=True)],
        )
        return RecallOutcome(recall_id, results, note)

    # ---- feedback ---------------------------------------------------------------------------

    def feedback(
        self, recall_id: str, accepted: Sequence[str] = (), rejected: Sequence[str] = ()
    ) -> Judged:
        """Judge a recall's results; accepted ones rank higher on similar future queries.

        Every result of the recall counts one impression; accepted ones count a hit, and
        results accepted together are linked as co-activated.

        Raises:
            NotFound: no such recall.
            InvalidInput: an id was not among its results, was judged twice, or the recall
                was already judged.
        """
        recall = name(recall_id, "recall_id")
        assert recall is not None
        accepted_ids = _ids(accepted, "accepted")
        rejected_ids = _ids(rejected, "rejected")
        for obs, i in rejected_ids.items():
            if obs in accepted_ids:
                raise InvalidInput(
                    f"rejected[{i}]", f"{obs!r} is also in accepted; judge each result once"
                )
        working = self._wm
        graph = self.graph
        recent = self._recalls.find(recall)
        stored = recent is None
        if recent is None:  # older than the recent recalls, or from before a restart
            recent = self._stored_recall(graph, recall)
        if recent.judged:
            raise _already_judged()
        for field_name, ids in (("accepted", accepted_ids), ("rejected", rejected_ids)):
            for obs, i in ids.items():
                if obs not in recent.returned:
                    # A recall read back from the graph lost the links to what was purged
                    # since (one still in this process's hands leaves such a result out).
                    purged = stored and obs not in working.row_of
                    with self._working_lock.reading():
                        held = working.belief_row.get(obs)
                        of = None if held is None else working.entries[held].id
                    if of is not None:  # recall shows belief ids beside observation ids
                        problem = (
                            f"{obs!r} is a belief id; judge a result by its observation id"
                            f" (obs_…): this belief's is {of!r}"
                        )
                    elif obs.startswith("rec_"):
                        problem = f"{obs!r} is a recall id; judge its results by their ids"
                    else:
                        problem = (
                            f"{obs!r} was not returned by recall {recall}"
                            + (", or was purged since" if purged else "")
                            + "; judge only its results"
                        )
                    raise InvalidInput(f"{field_name}[{i}]", problem)
        # Under no lock: the model takes milliseconds.
        vector = recent.vector
        if vector is None:
            vector = self.embedder.embed([recent.query or " "])[0]
        judgements = {
            obs: "accepted" if obs in accepted_ids else "rejected" if obs in rejected_ids else ""
            for obs in recent.returned
        }
        pairs = [(a, b) for a in accepted_ids for b in accepted_ids if a < b]
        now = self.clock()
        with graph.exclusive():
            self._recalls.record(graph)  # the recall's event is in the graph before its judging
            # Judged once: checked again now that other writers wait.
            if recent.judged or (stored and self._stored_recall(graph, recall).judged):
                raise _already_judged()

            def judging(w: GraphWriter) -> None:
                w.judge(recall, vector, self.embedder.fingerprint, judgements, now)
                w.co_activate(pairs)

            graph.transact("feedback", judging)
            recent.judged = True
            with self._working_lock.writing():
                learned: dict[int, float] = {}
                shown: list[int] = []
                present: set[str] = set()
                counted = 0  # impressions recorded: a result retracted since counts none
                for obs, judgement in judgements.items():
                    row = working.row_of.get(obs)
                    if row is None:  # purged since the recall
                        continue
                    if not working.entries[row].retracted:  # out of use: counts kept (judge)
                        working.shown(row, judgement == "accepted")
                        counted += 1
                    shown.append(row)
                    present.add(obs)
                    if judgement == "accepted":
                        learned[row] = 1.0
                    elif judgement == "rejected":
                        learned[row] = -1.0
                judged = JudgedRecall(
                    vector, learned, micros(now), shown, details(recent.query or "")
                )
                working.learn([judged], self.settings.ranking.feedback_similarity)
                working.co_activate(
                    [working.row_of[a] for a in accepted_ids if a in working.row_of]
                )
        # A result purged since the recall keeps no judgement (its links went with it): the
        # answer says what was recorded.
        kept_accepted = [obs for obs in accepted_ids if obs in present]
        kept_rejected = [obs for obs in rejected_ids if obs in present]
        # Counted after the graph has them: a retrain they start reads them there.
        self._ranker.judged(len(kept_accepted) + len(kept_rejected))
        return Judged(recall, kept_accepted, kept_rejected, counted)

    # ---- learning ---------------------------------------------------------------------------

    @property
    def _ranker(self) -> Trainer:
        self.wait_ready()
        assert self._trainer is not None
        return self._trainer

    def _examples(self) -> list[Example]:
        """The judged results of the most recently judged recalls (``training_recalls``),
        with their features (the trainer's thread)."""
        found = []
        limit = self.settings.learning.training_recalls
        ranked_by = self.embedder.fingerprint
        for recall_id, text, accepted in self.graph.training_examples(limit, ranked_by):
            features = features_of(text)
            if features is not None:
                found.append(Example(recall_id, features, accepted))
        return found

    def retrain(self) -> int:
        """Ask for the ranker to be retrained now, in the background; the ticket to give
        ``wait_trained``."""
        return self._ranker.request()

    def wait_trained(self, ticket: int, timeout: float | None = None) -> bool:
        """Wait for the retrain ``retrain`` asked for; False if ``timeout`` passed first."""
        return self._ranker.wait(ticket, timeout)

    def ranker(self) -> RankerModel | None:
        """The last ranker trained (or kept in the data directory), used or not: see its
        ``active`` and ``held_out``; None when none was trained or its file is damaged."""
        return self._ranker.latest

    def judgements(self) -> list[dict[str, Any]]:
        """Every judged result, in the order they were judged: ``recall_id``, ``query``,
        ``agent``, ``judged_at``, ``result_id``, ``text``, ``judgement`` ("accepted" or
        "rejected"), ``rank``, ``score`` and ``features`` (the ranker's features, a dict;
        empty for results judged before they were kept)."""
        rows = self.graph.judged_results()
        for row in rows:
            row["judged_at"] = from_naive_utc(row["judged_at"])
            text = row["features"]
            row["features"] = {} if not text else json.loads(text)
        return rows

    def _stored_recall(self, graph: Graph, recall: str) -> Recent:
        """A recall as the graph holds it (its events written first).

        Raises:
            NotFound: no such recall.
        """
        self._recalls.record(graph)
        event = graph.recall_event(recall)
        if event is None:
            raise NotFound("recall_id", "recall", recall)
        query, judged, returned = event
        return Recent(query, None, returned, judged)

    # ---- forget -----------------------------------------------------------------------------

    def forget(
        self,
        observation_id: str,
        mode: str = "retract",
        agent: str | None = None,
        alone: bool = False,
    ) -> Forgotten:
        """Retract (kept for audit, never recalled) or purge (gone from both stores).

        Args:
            observation_id: what to forget.
            mode: "retract" or "purge".
            agent: the agent forgetting. When other agents believe the observation too, a
                retract withdraws only this agent's belief and the observation stays for
                them. None (an admin, or a purge): the observation itself.
            alone: refuse a purge while agents other than ``agent`` hold the observation
                (believe it, or did until a later fact of theirs): a purge would delete
                their beliefs too. Checked under the write lock, so a share that lands
                first is seen.

        Raises:
            InvalidInput: unknown mode, a belief's id (naming its observation's), or a
                purge ``alone`` of what others hold (naming them).
            NotFound: no such observation.
        """
        if mode not in ("retract", "purge"):
            raise InvalidInput("mode", f'must be "retract" or "purge", got {mode!r}')
        obs = name(observation_id, "id")
        assert obs is not None
        who = name(agent, "agent", required=False)
        working = self._wm
        graph = self.graph
        with graph.exclusive():
            if alone and mode == "purge" and who is not None and obs in working.row_of:
                others = sorted(provenance.holders(self.evidence(obs)) - {who})
                if others:
                    raise InvalidInput(
                        "mode",
                        f'"purge" deletes {obs!r} for every agent, and'
                        f" {', '.join(repr(b) for b in others)}"
                        f" {'believes' if len(others) == 1 else 'believe'} it too: retract it"
                        f" to withdraw {who!r}'s belief only, or have an admin purge it",
                    )
            with self._working_lock.reading():
                row = working.row_of.get(obs)
                if row is None:
                    if mode == "purge" and obs in self._purged:
                        return Forgotten(obs, mode, self._purged[obs], True)
                    # remember and recall return belief ids beside observation ids.
                    belief = graph.belief_target(obs)
                    if belief is not None:
                        raise InvalidInput(
                            "id",
                            f"{obs!r} is a belief id; forget takes an observation id (obs_…)"
                            f" as remember or recall return it: this belief's is {belief[1]!r}",
                        )
                    raise NotFound("id", "observation", obs)
                entry = working.entries[row]
                beliefs = list(entry.beliefs)
                if mode == "retract" and entry.retracted:
                    return Forgotten(obs, mode, beliefs, True)
                mine = working.belief_of(row, who) if who is not None else None
                others = [a for a in entry.agents if a != who]
                # A belief a later fact of the agent withdrew still holds in its history,
                # until that fact began: forgetting it takes that history back too.
                earlier = None
                # Its last believer forgetting it, others held it until later facts of
                # theirs: it stays theirs (``planning.heir``).
                heir = None
                if mode == "retract" and who is not None and not others and mine is not None:
                    heir = planning.heir(working, row, who)
                    if heir is not None:
                        others = [heir[0]]
                        withdrawing = mine
                if mode == "retract" and who is not None and others and heir is None:
                    if mine is None:
                        earlier = working.held_until_later(row, who)
                        gone = working.withdrawn_belief(row, who)
                        if earlier is None and gone is not None:  # a retried call
                            return Forgotten(obs, mode, [gone], True, others)
                        mine = earlier
                    if mine is not None:
                        withdrawing = mine
            if mode == "retract" and who is not None and others and mine is not None:
                with self._working_lock.reading():
                    # Facts this one ended for the agent alone: they hold again for it.
                    kept = [heir[0]] if heir is not None else []
                    reopened = planning.reopened(working, row, leaving=who, keeping=kept)
                    ends, links = _ends_and_links(working, reopened)
                    undone = [(obs, working.entries[r].id) for r, _, _ in reopened]
                    # Beliefs in facts others hold that this one had withdrawn for the agent.
                    restoring = _restoring(working, row, who)
                    kept_on = planning.held_on(working, [(r, a) for r, a, *_ in restoring])
                    held_on = _held_on_writes(working, kept_on)
                    given_back = [r for r, _, _ in reopened] + [r for r, *_ in restoring]
                    own: list[tuple[str, datetime | None, str | None, list[str]]] = []
                    if heir is not None:
                        restoring += _inherited(working, row, heir)
                        own = [_inherited_end(working, row, heir)]
                at = utc_now()

                def withdrawing_belief(w: GraphWriter) -> None:
                    if earlier is None:
                        w.withdraw_beliefs([(withdrawing, None)], at)
                    else:
                        w.withdraw_outright([withdrawing], at)
                    w.undo_supersessions(undone, at)
                    w.end_validity(ends)
                    w.supersede(links, at)
                    w.restore_beliefs([(old, new) for _, _, old, new, _ in restoring], at)
                    _held_on_written(w, held_on, at)
                    for held, until, ender, dropped in own:
                        w.undo_supersessions([(newer, held) for newer in dropped], at)
                        w.end_validity([(held, until)])
                        if ender is not None and until is not None:
                            w.supersede([(ender, held, until)], at)

                graph.transact("forget (withdraw a belief)", withdrawing_belief)
                with self._working_lock.writing():
                    for other, until, newer in reopened:
                        working.reopen(other, until, obs, undone=at)
                        if newer is not None and until is not None:
                            working.supersede(working.row_of[newer], other, until, at)
                    if earlier is None:
                        working.withdraw(row, withdrawing, at)
                    else:
                        working.withdraw_outright(withdrawing, micros(at))
                    remembering.restore(working, restoring, at)
                    _held_on_applied(working, kept_on, at)
                    for _, until, ender, dropped in own:
                        for newer in dropped:
                            working.reopen(row, until, newer, undone=at)
                        working.reopen(row, until, "")
                        if ender is not None and until is not None:
                            working.supersede(working.row_of[ender], row, until, at)
                changed = [r for r, _, _ in reopened] + [r for r, *_ in restoring]
                # A plan given back to the agent (its own cancellation forgotten, others
                # still telling it) ends what it had ended for the agent, as in a retract.
                ended = self._end_given_back(entry, given_back)
                self._facts_changed([entry, *(working.entries[r] for r in changed), *ended])
                return Forgotten(obs, mode, [withdrawing], False, others)
            with self._working_lock.reading():
                reopened = planning.reopened(working, row)
                ends, links = _ends_and_links(working, reopened)
                restoring = _restoring(working, row)
                # Beliefs given back in facts the others ended by a later fact of theirs
                # meanwhile: held on for the agent, ended for the others alone.
                kept_on = planning.held_on(working, [(r, a) for r, a, *_ in restoring])
                held_on = _held_on_writes(working, kept_on)
                # Plans it called off for agents a later fact of their own had withdrawn
                # them for: held again by them, they end what they had ended.
                again = planning.held_again(working, working.called_off(row), leaving=row)
                links += [
                    (working.entries[plan].id, working.entries[older].id, start)
                    for older, plan, start in again
                ]
            at = utc_now()

            def forgetting(w: GraphWriter) -> list[str]:
                held = beliefs  # a retraction keeps its beliefs; a purge deletes them
                if mode == "retract":
                    w.retract(obs, at)
                else:
                    held = w.purge(obs)
                w.end_validity(ends)
                w.supersede(links, at)
                w.restore_beliefs([(old, new) for _, _, old, new, _ in restoring], at)
                _held_on_written(w, held_on, at)
                return held

            beliefs = graph.transact(f"forget ({mode})", forgetting)
            with self._working_lock.writing():
                # After the graph commits, in order behind any write of the same row still
                # queued; under the write lock, so no embedding of it is delivered after.
                self._writer.delete([obs], scrub=mode == "purge")
                for other, until, newer in reopened:
                    working.reopen(other, until, obs)
                    if newer is not None and until is not None:
                        working.supersede(working.row_of[newer], other, until, at)
                for older, plan, start in again:
                    working.supersede(plan, older, start, at)
                if mode == "retract":
                    working.retract(row, at)
                else:
                    working.purge(row)
                remembering.restore(working, restoring, at)
                _held_on_applied(working, kept_on, at)
            if mode == "purge":
                self._audit.drop(obs)  # why a prune retired it goes with it
                self._purged[obs] = beliefs
            # A belief given back in a plan (its agent's cancellation forgotten) ends, where
            # the plan begins, what the plan had ended for that agent before.
            back = [r for r, _, _ in reopened] + [r for r, *_ in restoring]
            ended = self._end_given_back(entry, back)
            changed = [r for r, *_ in restoring] + [older for older, *_ in again]
            self._facts_changed([entry, *(working.entries[r] for r in changed), *ended])
        return Forgotten(obs, mode, beliefs, False)

    def _end_given_back(self, forgotten: Entry, reopened: Sequence[int]) -> list[Entry]:
        """End the facts that the facts a forget gave back (or gave an agent its belief in
        back) begin within, as a write of them would have (``planning.overlapping``), or
        withdraw their agents' beliefs in them where others hold them too
        (``planning.withdrawn_by``): a plan whose cancellation is forgotten ends, where it
        begins, the fact its cancellation had given back. Its own
        transaction,
        after the forget's (a crash between leaves what start-up ends the same way). The
        caller holds the graph's lock. Returns the facts ended."""
        working = self._wm
        key = fact_key(forgotten)
        if key is None or not reopened:
            return []
        with self._working_lock.reading():
            ended = [e for e in planning.overlapping(working, [key]) if e[1] in reopened]
            withdrawn = planning.withdrawn_by(working, reopened)
            # A fact another agent held until a later fact of its own, past where the one
            # given back begins: its remaining believers' beliefs end there, not the fact.
            past = [e for e in ended if planning.held_past(working, e[0], e[2])]
            ended = [e for e in ended if e not in past]
            withdrawing = {belief for _, belief, _ in withdrawn}
            withdrawn += [
                (older, belief, at)
                for older, _, at in past
                for belief in working.entries[older].beliefs
                if belief not in withdrawing  # withdrawn_by's already: once
            ]
            # Held by none of them now, its one validity ends where it ends for the agent
            # it holds for longest, as when its last believer moves on (``planning.heir``).
            for older, _, _ in past:
                last = planning.longest_held(working, older)
                if last is not None:
                    ended.append((older, *last))
        if not ended and not withdrawn:
            return []
        entries = working.entries
        links = [(entries[newer].id, entries[older].id, at) for older, newer, at in ended]
        now = utc_now()

        def ending(w: GraphWriter) -> None:
            w.supersede(links, now)
            w.withdraw_beliefs([(belief, until) for _, belief, until in withdrawn], now)

        self.graph.transact("forget (ending facts given back)", ending)
        with self._working_lock.writing():
            for older, newer, at in ended:
                working.supersede(newer, older, at, now)
            for row, belief, until in withdrawn:
                working.withdraw(row, belief, now, until)
        return [entries[row] for row, *_ in ended + withdrawn]

    # ---- prune ------------------------------------------------------------------------------

    def prune(self, rule: Mapping[str, object] | None = None, apply: bool = False) -> Pruned:
        """Retire what nobody uses and merge near-duplicates (``pruning`` has the rule).

        Retiring is a retraction, as ``forget`` makes one: out of every recall of now, kept
        for audit (``evidence`` says why, and views at an earlier ``known_at`` hold it).

        Args:
            rule: values overriding ``settings.prune`` for this call (None: keep it).
            apply: retire them; False (a dry run) only says what would be retired and
                writes nothing.

        Raises:
            InvalidInput: a rule's value is unknown or out of range (the field named).
        """
        chosen = pruning.rule_of(self.settings.prune, rule)
        # Near-duplicates are found by their vectors: memories still being embedded (just
        # remembered) are waited for, as a recall waits; any not embedded by then are left
        # for the next prune.
        self._embeddings.wait(timeout=_EMBEDDING_WAIT_S)
        working = self._wm
        graph = self.graph
        with graph.exclusive():
            # Under the write lock: what is planned is what is retired.
            evidence, argued = graph.evidence_ids(), graph.argued_ids()
            with self._working_lock.reading():
                found = pruning.plan(working, chosen, utc_now(), evidence, argued)
            retired = [r for _, r in found]
            if not apply or not found:
                return Pruned(apply, pruning.described(chosen), retired)
            at = utc_now()
            ids = [r.observation_id for r in retired]
            # Reasons first, durably: one whose transaction then fails is never shown.
            self._audit.record([(r.observation_id, pruning.why(r, chosen)) for r in retired], at)
            graph.transact("prune", lambda w: w.retract_all(ids, at))
            with self._working_lock.writing():
                self._writer.delete(ids)  # as forget: behind any queued write of those rows
                for row, _ in found:
                    working.retract(row, at)
            self._facts_changed([working.entries[row] for row, _ in found])
        return Pruned(True, pruning.described(chosen), retired, at)

    # ---- evidence and conflicts -------------------------------------------------------------

    def _asked(self, value: object, field: str) -> datetime | None:
        """The time a question is asked of (``as_of``, ``known_at``) in UTC, None if not
        given: a bare date is the end of that day in the memory's time zone."""
        if value is None:
            return None
        return parse_asked_time(value, field, self.settings.timezone)

    def evidence(self, id: str, known_at: object = None) -> dict[str, Any]:
        """Everything known about an observation or belief, for citing it; with
        ``known_at`` (ISO 8601, record time), as the memory held it then.

        Returns the observation's fields with ``cardinality`` (of a fact's predicate),
        ``believers`` (each with its own confidence and since), ``withdrawn`` (beliefs their
        agents withdrew; ``held_until``, of one a later fact of its agent withdrew: where
        recall ends it, as the agent's facts stood then or stand now), ``evidence``,
        ``supports``, ``contradictions``, ``superseded_by``, ``supersessions`` (who
        superseded it, from when, recorded when), ``supersedes``, ``supersession_chain``,
        ``retired`` (why a prune retracted it, else None), ``record`` (a structured record,
        or None), and ``belief_id`` when a belief id was given.

        Raises:
            NotFound: the id names no observation or belief.
            InvalidInput: ``known_at`` is not a time, or is before the observation was
                recorded.
        """
        key = name(id, "id")
        assert key is not None
        known = self._asked(known_at, "known_at")
        found = provenance.cite(self.graph, key, known)
        working = self._wm
        with self._working_lock.reading():
            provenance.belief_ends(found, working, known)
            predicate = found.get("predicate")
            found["cardinality"] = working.cardinality(predicate) if predicate else None
            row = working.row_of.get(found["id"])
            found["record"] = None if row is None else working.entries[row].record
        found["retired"] = self._audit.reason(found["id"], found["retracted_at"])
        return found

    def unsupported(self, agent: str, known_at: object = None) -> dict[str, Any]:
        """The agent's beliefs that no evidence supports; with ``known_at`` (ISO 8601,
        record time), those it held then that no evidence known then supported. A belief a
        later fact of the agent withdrew is among them while it holds, as recall holds it:
        until the agent's next fact begins, as its facts stand now (or stood then).

        Returns ``unsupported``: ``belief_id``, ``observation_id``, ``text``,
        ``confidence`` (the agent's) and ``since`` of each, the oldest first; and ``note``
        when none is listed because no agent of that name believes anything (a misspelt
        name), naming the agents it may have meant.

        Raises:
            InvalidInput: ``agent`` is no name, or ``known_at`` is not a time.
        """
        who = name(agent, "agent")
        assert who is not None
        known = self._asked(known_at, "known_at")
        rows = self.graph.unsupported_beliefs(who, known)
        with self._working_lock.reading():
            found = provenance.unsupported(rows, self._wm, who, known)
            # An empty list alone read as "all of it has evidence" for a name never used.
            note = None if found else _unknown_agent(self._wm, who)
        return {"unsupported": found} | ({} if note is None else {"note": note})

    def conflicts(
        self,
        agent: str | None = None,
        other_agent: str | None = None,
        topic: str | None = None,
        known_at: object = None,
        limit: int | None = None,
    ) -> dict[str, Any]:
        """Explicit contradictions and clashing facts, current or to come (a plan).

        Args:
            agent: only conflicts involving this agent's beliefs.
            other_agent: with ``agent``: only conflicts between the two agents.
            topic: only conflicts where either side mentions this topic.
            known_at: the conflicts the memory held then (ISO 8601, record time; a bare
                date is the end of that day in the memory's time zone): between what it had
                been told by then and believed current then.
            limit: describe at most this many (None: all); ``count`` still counts them all.

        Returns:
            ``count`` (all conflicts found) and ``conflicts``: contradictions first, then
            clashes in the order their facts were first stated, as dicts with ``kind``
            ("contradiction" or "clash"), ``a`` and ``b`` observation ids with their agents,
            texts and confidences, and for clashes ``subject``, ``predicate`` and
            ``begins`` (where both first hold, for a clash to come).
        """
        me = name(agent, "agent", required=False)
        other = name(other_agent, "other_agent", required=False)
        if other is not None and me is None:
            raise InvalidInput("agent", "is required when other_agent is given")
        about = name(topic, "topic", required=False)
        known = self._asked(known_at, "known_at")
        if limit is not None:
            parse_limit(limit, "limit", MAX_CONFLICTS)
        working = self._wm
        # The graph is read under no lock; the clashes, texts and topics come from the
        # working memory, under its read lock (beside recalls).
        found = provenance.contradictions(self.graph, known)
        at = known or utc_now()
        with self._working_lock.reading():
            found = provenance.unsettled(found, working, at, known, me, other)
            found += provenance.clashes(working, me, other, at, known)
            found = provenance.on_topic(found, working, about)
            # Only those answered are described: a thousand texts are slow to send and to
            # read, and no model wants them at once.
            shown = found if limit is None else found[:limit]
            answer: dict[str, Any] = {
                "count": len(found),
                "conflicts": provenance.described(shown, working, at, known, me),
            }
            # A filter naming no one believing anything, or nothing held, finds no conflict
            # whatever the memory holds: "claude" asked before acting on a plan read the
            # empty answer as "nothing disagrees".
            note = None if found else _unmatched_filter(working, me, other, about)
            if note is not None:
                answer["note"] = note
            return answer

    # ---- entities ---------------------------------------------------------------------------

    def about(self, entity: str, as_of: object = None, known_at: object = None) -> dict[str, Any]:
        """What is known about one entity: a fact's subject or object, or a topic, named
        case- and space-insensitively, a leading article aside (see ``entities``).

        Args:
            entity: its name.
            as_of: valid time (ISO 8601): facts true then; the timeline up to then.
            known_at: record time (ISO 8601): what the memory held then. ``as_of`` defaults
                to it (what was believed current then), else to now. In either, a bare date
                is the end of that day in the memory's time zone.

        Returns:
            ``entities.view``'s dict without ``ids``, plus ``conflicts`` (as ``conflicts``
            returns them) where either side names the entity.

        Raises:
            InvalidInput: a time is wrong, or no observation names the entity.
        """
        wanted = name(entity, "name")
        assert wanted is not None
        key = topic_key(wanted)
        known = self._asked(known_at, "known_at")
        at = self._asked(as_of, "as_of") or known or utc_now()
        working = self._wm
        graph = self.graph
        with self._working_lock.reading():
            if not entity_views.exists(working, key):
                meant = known_names.alike(working, "entity", wanted)
                raise InvalidInput(
                    "name",
                    f"{wanted!r} names nothing in the memory (no fact or topic); "
                    + (f"did you mean {known_names.either(meant)}? Or use" if meant else "use")
                    + " recall to search for it in words",
                )
        # The graph under no lock of ours (as conflicts reads it).
        found = provenance.contradictions(graph, known)
        clock = entity_views.Clock(
            micros(at),
            None if known is None else micros(known),
            None if as_of is None else micros(at),
        )
        with self._working_lock.reading():
            seen = entity_views.view(working, key, clock)
            ids = seen.pop("ids")
            if known is not None and not entity_views.exists(working, key, micros(known)):
                raise InvalidInput(
                    "name",
                    f"{wanted!r} named nothing in the memory at known_at (no fact or topic"
                    " recorded by then); ask with a later known_at",
                )
            found = provenance.unsettled(found, working, at, known)
            found += provenance.clashes(working, None, None, at, known)
            touching = entity_views.touching(found, ids)
            seen["conflicts"] = provenance.described(touching, working, at, known)
        return seen

    def entities(self, limit: int = entity_views.MAX_ENTITIES) -> list[dict[str, Any]]:
        """Entities with the observations mentioning them and their current facts, most
        mentioned first (at most ``limit``)."""
        working = self._wm
        with self._working_lock.reading():
            return entity_views.listing(working, micros(utc_now()), limit)

    def picture(self) -> pictures.Picture:
        """The whole memory now, bounded for a page (``doxa view``): every entity, the facts
        with both clocks, entities mentioned together, the latest notes per entity, and the
        conflicts (see ``doxa.store.picture``)."""
        working = self._wm
        now = utc_now()
        # The graph under no lock of ours (as conflicts reads it).
        found = provenance.contradictions(self.graph)
        with self._working_lock.reading():
            found = provenance.unsettled(found, working, now, None)
            found += provenance.clashes(working, None, None, now)
            shown = provenance.described(found[: pictures.MAX_CONFLICTS], working, now, None)
            taken = pictures.picture(working, micros(now), shown)
        if len(found) > len(shown):
            taken.left_out["conflicts"] = len(found) - len(shown)
        return taken

    def names(self, kind: NameKind, prefix: str = "", limit: int = MAX_NAMES) -> Names:
        """The agent, entity or topic names starting with ``prefix``, sorted (see
        ``doxa.store.names``)."""
        working = self._wm
        with self._working_lock.reading():
            return known_names.starting_with(working, kind, prefix, limit)

    def _facts_changed(self, changed: Sequence[Entry]) -> None:
        """Refresh the summaries of the entities these observations' facts name, soon (on
        the summaries' thread: the write that changed them does not wait)."""
        if self._summaries is not None:
            keys = entity_views.keys_of(changed)
            if keys:
                self._summaries.mark(keys)

    def _write_summaries(self, keys: set[str]) -> None:
        working = self._wm
        graph = self.graph
        with self._working_lock.reading():
            rows = entity_views.summaries(working, keys, micros(utc_now()))
            gone = {k for k in keys if not entity_views.exists(working, k)}
        # An entity nothing names any more (its last observation purged) keeps no summary:
        # it would hold the purged fact's words.
        stale = [t for t in graph.summary_topics() if topic_key(t) in gone] if gone else []
        if rows or stale:

            def writing(w: GraphWriter) -> None:
                w.forget_summaries(stale)
                w.summarize(rows, utc_now())

            graph.transact("entity summaries", writing)

    def wait_embedded(self, timeout: float | None = None) -> bool:
        """Wait until every memory remembered so far is recalled by meaning too (a recall
        waits for this itself). Returns False if ``timeout`` seconds passed first."""
        return self._embeddings.wait(timeout=timeout)

    def settle(self, timeout: float | None = None) -> bool:
        """Wait until every memory remembered so far is embedded and in the search index.

        Returns False if ``timeout`` seconds passed first.
        """
        deadline = None if timeout is None else time.monotonic() + timeout

        def left() -> float | None:
            return None if deadline is None else max(0.0, deadline - time.monotonic())

        return (
            self._embeddings.wait(timeout=left())
            and self._writer.wait(timeout=left())
            and (self._summaries is None or self._summaries.wait(timeout=left()))
        )

    def stats(self) -> dict[str, int]:
        """Counts of the graph's nodes and the index's rows, once the background writes
        (embeddings, index rows, entity topics and summaries) have caught up."""
        if self._index is None:
            return self.graph.counts()
        self.settle(timeout=_INDEX_WAIT_S)
        counts = self.graph.counts()
        counts["IndexRows"] = self._index.count()
        return counts

    def tallies(self) -> dict[str, int]:
        """Every node and link table's count, the index's rows, and the counts a person asks
        for (facts, retracted, judged recalls, judgements) (``doxa stats``)."""
        from doxa.store.exporting import tallies

        self._flush_recalls()
        counts = tallies(self.graph)
        counts["index rows"] = self.stats().get("IndexRows", 0)
        return counts

    def export(self, path: str) -> dict[str, Any]:
        """Write the whole memory to ``path`` as JSON Lines (``doxa.store.exporting``), one
        moment of it: writers wait meanwhile. Returns the file's header."""
        from doxa.store.exporting import write_export

        self._flush_recalls()
        graph = self.graph
        with graph.exclusive():
            return write_export(graph, Path(path), self._audit.entries())

    def backup(self, target: str) -> dict[str, Any]:
        """Copy the data directory to ``target`` (``doxa.store.backup``): with writers held
        off, the graph checkpointed and the index's queued rows written first, so the copy
        opens as the memory was at that moment."""
        from doxa.store.backup import copy_data_dir

        self._flush_recalls()
        self.settle(timeout=_BACKUP_SETTLE_S)
        graph = self.graph
        with graph.exclusive():
            # Memories remembered since the settle above are in the graph: their vectors and
            # index rows too, or the copy's index lacks them (neither needs the graph's lock;
            # entity summaries do, and a start writes any missing anew).
            deadline = time.monotonic() + _BACKUP_SETTLE_S
            if self._embeddings.wait(timeout=_BACKUP_SETTLE_S):
                self._writer.wait(timeout=max(0.0, deadline - time.monotonic()))
            graph.checkpoint()
            return copy_data_dir(Path(self.settings.data_dir).expanduser(), Path(target))

    def _flush_recalls(self) -> None:
        """Write the recalls noted since the last batch, so reads of the graph see them."""
        self._recalls.record(self.graph)


#: How long ``stats`` waits for queued index writes before counting without them.
_INDEX_WAIT_S = 2.0
#: How long a backup waits for queued embeddings and index rows (startup repairs the rest).
_BACKUP_SETTLE_S = 60.0
#: How long a recall or a prune waits for memories still being embedded (the model is failing
#: if longer).
_EMBEDDING_WAIT_S = 30.0
#: Embeddings waiting for the model before ``remember`` waits for it (about 4 s of model
#: time; a long text counts its passages: ``EmbeddingQueue.put``).
MAX_QUEUED_TEXTS = 2048
#: The heap is frozen again each time the working memory grew by this many rows (see
#: long_lived): a collection of 5,000 rows' objects takes some 40 ms.
_FREEZE_EVERY_ROWS = 5000
#: The most conflicts one call describes (``count`` counts them all).
MAX_CONFLICTS = 1000


def _unmatched_filter(
    working: WorkingMemory, agent: str | None, other_agent: str | None, topic: str | None
) -> str | None:
    """Why conflicts filtered by ``agent``, ``other_agent`` or ``topic`` found none when one
    names no agent that believes anything, or nothing the memory holds; None when each
    names something (the caller holds the read lock)."""
    for field_name, who in (("agent", agent), ("other_agent", other_agent)):
        if who is not None and (why := _unknown_agent(working, who, field_name)) is not None:
            return why
    if topic is None or entity_views.exists(working, topic_key(topic)):
        return None
    meant = known_names.alike(working, "entity", topic)
    return f"topic {topic!r} names nothing in the memory (no fact or topic)" + (
        known_names.did_you_mean(meant)
    )


def _unknown_agent(working: WorkingMemory, agent: str, field_name: str = "agent") -> str | None:
    """Why a recall of ``agent``'s beliefs found nothing when no such agent believes
    anything (an agent cannot know its own name: "claude" found nothing, read as "nothing is
    known"), with the names it may have meant; None when it does. ``field_name``: the
    argument that named it."""
    # A purged row keeps its place in the agent's rows until a restart: no belief of it.
    if known_names.held(working, working.agent_rows.get(agent, ())):
        return None
    meant = known_names.alike(working, "agent", agent) or sorted(
        a for a, rows in working.agent_rows.items() if known_names.held(working, rows)
    )
    if not meant:
        return f"no agent {agent!r} believes anything: the memory is empty"
    return (
        f"no agent {agent!r} believes anything; agents: {', '.join(meant[:5])}"
        + (" …" if len(meant) > 5 else "")
        + f" (or leave {field_name} out)"
    )


def _judged_after(graph: Graph, at: str, embedder: str) -> int:
    """Results of ``embedder``'s recalls judged after ``at`` (a kept model's ``trained_at``);
    all of them when it names no time (a model edited by hand: retrained)."""
    try:
        moment = parse_time(at, "trained_at")
    except InvalidInput:
        moment = datetime(1, 1, 2, tzinfo=UTC)
    return graph.judged_since(moment, embedder)


def _ends_and_links(
    working: WorkingMemory, reopened: Sequence[tuple[int, datetime | None, str | None]]
) -> tuple[list[tuple[str, datetime | None]], list[tuple[str, str, datetime]]]:
    """What a forget writes for the facts it reopens (``planning.reopened``): each one's new
    end, as (id, end), and the links to the facts that end them now, as (newer id, id, at)."""
    ends = [(working.entries[r].id, until) for r, until, _ in reopened]
    links = [
        (newer, working.entries[r].id, until)
        for r, until, newer in reopened
        if newer is not None and until is not None
    ]
    return ends, links


def _remembered(planned: Plan | Duplicate | Shared, working: WorkingMemory) -> Remembered:
    if isinstance(planned, Duplicate):
        return Remembered(
            planned.observation_id,
            planned.belief_id,
            planned.topics,
            [],
            planned.observation_id,
            [],
        )
    if isinstance(planned, Shared):
        return Remembered(
            planned.observation_id,
            planned.belief_id,
            planned.topics,
            [older for older, _ in planned.superseded],
            None,
            planned.conflicts,
            shared_with=sorted(set(planned.shared_with)),
            replaced=_in_words(working, planned.superseded),
            ends=_read_end(planned.memory),
        )
    return Remembered(
        planned.observation_id,
        planned.belief_id,
        list(planned.memory.topics),
        [older for older, _ in planned.superseded],
        None,
        planned.conflicts,
        # Through plans replaced before they began, as every reader names them.
        superseded_by=(
            working.superseders(working.row_of[planned.observation_id])
            if planned.superseded_by
            else []
        ),
        replaced=_in_words(working, planned.superseded),
        ends=_read_end(planned.memory),
    )


def _read_end(memory: NewMemory) -> tuple[datetime, str] | None:
    """The end ``memory``'s fact took from its words, and those words (``Remembered.ends``)."""
    fact = memory.fact
    if fact is None or not fact.until_words or fact.valid_until is None:
        return None
    return fact.valid_until, fact.until_words


def _in_words(working: WorkingMemory, superseded: Sequence[tuple[str, Any]]) -> list[str]:
    """The facts of the ``superseded`` observations, each in words."""
    return [
        entity_views.fact_words(working.entries[working.row_of[older]]) for older, _ in superseded
    ]


def _held_on_writes(
    working: WorkingMemory, kept_on: Sequence[HeldOn]
) -> list[tuple[str, str, datetime | None, datetime, list[str]]]:
    """``planning.held_on``'s facts by id: (fact id, the later fact's id, the fact's end
    without it, where that one begins, the others' beliefs)."""
    entries = working.entries
    return [
        (entries[row].id, entries[newer].id, end, start, beliefs)
        for row, newer, end, start, beliefs in kept_on
    ]


def _held_on_written(
    w: GraphWriter,
    held_on: Sequence[tuple[str, str, datetime | None, datetime, list[str]]],
    at: datetime,
) -> None:
    """Write ``_held_on_writes``' facts: the later fact no longer ends each, which ends as
    stated, and the others' beliefs in it are withdrawn where that fact begins."""
    w.undo_supersessions([(newer, fact) for fact, newer, *_ in held_on], at)
    w.end_validity([(fact, end) for fact, _, end, _, _ in held_on])
    w.withdraw_beliefs([(b, start) for *_, start, beliefs in held_on for b in beliefs], at)


def _held_on_applied(
    working: WorkingMemory,
    kept_on: Sequence[HeldOn],
    at: datetime,
) -> None:
    """Mirror ``_held_on_written`` in the working memory (after the beliefs given back)."""
    for row, newer, end, start, beliefs in kept_on:
        working.reopen(row, end, working.entries[newer].id, undone=at)
        for belief in beliefs:
            working.withdraw(row, belief, at, start)


def _restoring(
    working: WorkingMemory, row: int, leaving: str | None = None
) -> list[tuple[int, str, str, str, Decimal | None]]:
    """The beliefs a forget of the observation at ``row`` gives back (``planning.restored``),
    as (row, agent, withdrawn belief id, new belief id, its own confidence or None)."""
    return [
        (other, agent, old, new_id("bel"), working.withdrawn_confidence.get(old))
        for other, agent, old in planning.restored(working, row, leaving)
    ]


def _inherited(
    working: WorkingMemory, row: int, heir: tuple[str, str, int, int | None]
) -> list[tuple[int, str, str, str, Decimal | None]]:
    """The belief ``planning.heir`` gives back, as ``_restoring`` has them."""
    agent, old, _, _ = heir
    return [(row, agent, old, new_id("bel"), working.withdrawn_confidence.get(old))]


def _inherited_end(
    working: WorkingMemory, row: int, heir: tuple[str, str, int, int | None]
) -> tuple[str, datetime | None, str | None, list[str]]:
    """The end the observation at ``row`` has held by ``heir`` alone: where the heir's
    belief ends (or its stated end, if sooner), as (its id, that end, the id of the fact
    ending it there or None, the ids of its superseders the heir does not hold: undone)."""
    agent, _, end, ender = heir
    entry = working.entries[row]
    dropped = [
        newer
        for newer in entry.superseded_by
        if (r := working.row_of.get(newer)) is not None and agent not in working.entries[r].agents
    ]
    until = None if end == NO_END else from_micros(end)
    by = None if ender is None else working.entries[ender].id
    stated = entry.stated_until
    if stated is not None and (until is None or stated < until):
        until, by = stated, None
    return entry.id, until, by, dropped


def _recollection(
    ranked: Ranked,
    working: WorkingMemory,
    current: bool,
    known_at: int | None = None,
    confidence: Decimal | None = None,
    at: int | None = None,
    conflicts: list[str] | None = None,
) -> Recollection:
    """One result as the memory held it at ``known_at`` (microseconds; None: now), with
    ``confidence`` (default: the observation's), the agents holding it at valid time
    ``at``, and the ids of what disputes it (``provenance.disputing``)."""
    entry = working.entries[ranked.row]
    beliefs = working.believers(ranked.row, known_at, at)
    end = working.end_of(ranked.row, known_at)
    fact = None
    if entry.subject is not None:
        fact = {
            "subject": entry.subject,
            "predicate": entry.predicate,
            "object": entry.object,
            "valid_from": entry.valid_from,
            "valid_until": None if end == NO_END else from_micros(end),
            "cardinality": working.cardinality(entry.predicate or ""),
        }
    return Recollection(
        observation_id=entry.id,
        belief_ids=[b for _, b in beliefs],
        text=entry.text,
        confidence=entry.confidence if confidence is None else confidence,
        observed_at=entry.observed_at,
        source=entry.source,
        episode=entry.episode,
        topics=list(entry.topics),
        agents=list(dict.fromkeys(a for a, _ in beliefs)),
        score=round(ranked.score, 6),
        scores={k: round(v, 6) for k, v in ranked.components.items() if v},
        # Named only for a fact no longer current: a model read "superseded_by" beside a
        # fact that holds (a plan to come will end it) as news that it no longer holds.
        superseded_by=[] if current else working.superseders(ranked.row, known_at),
        current=current,
        fact=fact,
        happened=most_specific(entry.event_times),
        record=entry.record,
        conflicts=conflicts or [],
        passage=ranked.passage,
        maybe_updated_by=[working.entries[row].id for row in ranked.later],
    )


def _listing_cut(matched: int, limit: int) -> str:
    """What a listing cut at ``limit`` says: it has no relevance to put the best first, so
    what it left out may be what was wanted (150 rows matched, 100 came, and nothing said
    so)."""
    more = f"raise limit (up to {MAX_LIMIT}) or " if limit < MAX_LIMIT else ""
    return (
        f"{matched} match; the first {limit} are shown (order_by decides which): {more}narrow"
        " the filter to see the rest"
    )


def _already_judged() -> InvalidInput:
    return InvalidInput(
        "recall_id", "was already judged; call recall again and judge the new recall_id"
    )


def _ids(values: Sequence[str] | None, field_name: str) -> dict[str, int]:
    """The ids given, cleaned, each once, in order: id -> where it was first given (a
    list's membership test made 60,000 ids take 30 s before any was checked)."""
    out: dict[str, int] = {}
    for i, value in enumerate(values or []):
        cleaned = name(value, f"{field_name}[{i}]")
        assert cleaned is not None
        out.setdefault(cleaned, i)
    return out
