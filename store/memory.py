"""``Memory``: the one way into the store. It keeps the graph, the search index and the
working memory in step.

Writes go graph first, inside one Kùzu transaction that also writes the search-index rows
before it commits: if the index write fails the graph rolls back; if the commit fails the index
rows are deleted again. If the process dies in between, the next start-up finds the stores
disagreeing and repairs the index from the graph (missing rows embedded, unknown rows removed).

Heavy work (loading the embedding model, opening the index, repairing, loading the working
memory) runs on a warm-up thread started by ``start``; operations wait for it, while a server
can answer ``initialize`` and ``tools/list`` at once.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from doxa.store import provenance
from doxa.store.drafts import MemoryDraft, NewMemory, name, validate
from doxa.store.embedder import Embedder, Vectors, make_embedder
from doxa.store.embedding_queue import EmbeddingQueue
from doxa.store.errors import DamagedStore, InvalidInput, MemoryStoreError, NotFound
from doxa.store.ranking import Ranked, query_topics, rank
from doxa.store.settings import StoreSettings
from doxa.store.timewords import time_window
from doxa.store.values import (
    from_naive_utc,
    micros,
    parse_time,
    parse_unit_decimal,
    scaled,
    utc_now,
)
from doxa.store.working_memory import Entry, WorkingMemory, fact_key, topic_key

if TYPE_CHECKING:  # imported on the warm-up thread: lancedb alone takes most of a second
    from doxa.store.graph import Graph
    from doxa.store.index import SearchIndex
    from doxa.store.index_writer import IndexWriter

log = logging.getLogger(__name__)

OrderBy = Literal["relevance", "confidence", "newest", "oldest"]
MAX_QUERY = 4_000
MAX_LIMIT = 100
_RECENT_RECALLS = 4_096


def new_id(prefix: str) -> str:
    """A fresh id: a readable prefix and 16 hex digits."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@dataclass(frozen=True)
class Remembered:
    """What ``remember`` did with one memory."""

    observation_id: str
    belief_id: str
    topics: list[str]
    superseded: list[str]
    duplicate_of: str | None
    conflicts: list[str]


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


@dataclass(frozen=True)
class RecallOutcome:
    """A recall's id (for feedback) and its results, best first."""

    recall_id: str
    results: list[Recollection]


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


@dataclass
class _Recent:
    query: str
    vector: npt.NDArray[np.float32] | None
    returned: list[str]
    judged: bool = False


@dataclass
class _Plan:
    memory: NewMemory
    observation_id: str
    belief_id: str
    observed_at: datetime
    valid_from: datetime | None
    valid_until: datetime | None
    superseded: list[tuple[str, datetime]] = field(default_factory=list)  # (older id, at)
    superseded_by: list[tuple[str, datetime]] = field(default_factory=list)  # (newer id, at)
    conflicts: list[str] = field(default_factory=list)


class Memory:
    """The memory of one data directory: remember, recall, judge, cite, forget.

    Use ``Memory.open(settings)``, then ``start()`` (warm-up on a thread) or ``warm_up()``.
    Every method is thread-safe; writes are serialized.
    """

    def __init__(self, settings: StoreSettings, embedder: Embedder) -> None:
        self.settings = settings
        self.embedder = embedder
        self._graph: Graph | None = None
        self._index: SearchIndex | None = None
        self._index_writer: IndexWriter | None = None
        self._working: WorkingMemory | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._warm_thread: threading.Thread | None = None
        self._warm_lock = threading.Lock()
        self._warm_started = False
        self._recent: OrderedDict[str, _Recent] = OrderedDict()
        # Guards the working memory and recent recalls. Writers take it, then the graph's
        # lock; recall takes only this one; the recall recorder only the graph's.
        self._state = threading.RLock()
        # Recall events are written to the graph in batches by a background thread, off the
        # request path; feedback flushes them first.
        self._unrecorded: list[tuple[str, str, str | None, datetime, list[tuple[str, int, float]]]]
        self._unrecorded = []
        self._unrecorded_lock = threading.Lock()
        self._stopping = threading.Event()
        self._recorder: threading.Thread | None = None
        # Recall's second core: the full-text search, during the vector scan.
        self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="doxa-recall")
        self._embedding_queue: EmbeddingQueue | None = None

    # ---- lifecycle --------------------------------------------------------------------------

    @classmethod
    def open(cls, settings: StoreSettings, embedder: Embedder | None = None) -> Memory:
        """The memory in ``settings.data_dir`` (created if absent). Cheap: the stores open,
        and migrations run, on warm-up (``start`` or ``warm_up``); a store written by another
        schema then fails every call with ``SchemaMismatch``.
        """
        data_dir = Path(settings.data_dir).expanduser()
        data_dir.mkdir(parents=True, exist_ok=True)
        chosen = embedder or make_embedder(settings.embedding)
        return cls(settings, chosen)

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
            log.exception("memory warm-up failed")
            self._failure = error
            self._ready.set()

    def _load_everything(self) -> None:
        """Open the graph (migrating it), open the index, load the working memory from the
        graph, repair the index, and load the model."""
        from doxa.store.graph import Graph, wal_file
        from doxa.store.index import SearchIndex
        from doxa.store.index_writer import IndexWriter

        data_dir = Path(self.settings.data_dir).expanduser()
        pool = self.settings.buffer_pool_mb * 1024 * 1024
        every = self.settings.checkpoint_every
        # A write-ahead log left by a crash is replayed into the pool when the database
        # opens; a pool sized for normal work can be too small for that, and the first
        # restart failed. The pool is only reserved address space until used, and this
        # opening closes (checkpointing the log) before the one that serves.
        replay = pool if not wal_file(data_dir / "graph").exists() else max(pool, _REPLAY_POOL)
        graph = Graph(data_dir / "graph", buffer_pool_bytes=replay, checkpoint_every=every)
        self._graph = graph
        dim = self.embedder.dim  # the ONNX runtime reads it from its export, loading nothing
        index = SearchIndex(data_dir / "index", dim, self.embedder.fingerprint)
        with graph.exclusive():
            # Sized to the memory (plus room to grow) rather than doubled into place.
            working = WorkingMemory(dim, capacity=graph.observation_count() + 1024)
            self._load(working, graph)
        # Kùzu keeps every page the load read in its buffer pool (about 150 MB at 100k
        # memories) and never gives one back; the working memory holds what they held now.
        # Reopening the database starts with an empty pool.
        self._graph = None  # closed: close() must not close it again if the reopen fails
        graph.close()
        graph = Graph(data_dir / "graph", buffer_pool_bytes=pool, checkpoint_every=every)
        self._graph = graph
        _refuse_if_graph_lost(data_dir, working, index)
        if index.problem is not None:
            index.reset(f"it cannot be read ({index.problem})")
        with graph.exclusive():
            self._repair(index, working)
            self._index, self._working = index, working
        # The model last: its ~120 MB need not sit under the transients of loading above
        # (the graph's rows, the index's ranges of vectors).
        self.embedder.load()
        index.maintain(self.settings.maintenance_every)
        self._index_writer = IndexWriter(index, self.settings.maintenance_every)
        # Late-bound, so the embedder can be replaced (tests) without a new queue.
        self._embedding_queue = EmbeddingQueue(lambda t: self.embedder.embed(t), self._deliver)
        self._recorder = threading.Thread(
            target=self._record_loop, name="doxa-recalls", daemon=True
        )
        self._recorder.start()
        self._ready.set()

    def _record_loop(self) -> None:
        while not self._stopping.wait(0.25):
            try:
                self._record_recalls()
            except Exception:  # the events stay queued and are retried
                log.exception("could not record recall events")
            graph = self._graph
            if graph is not None:
                # Off the writers' path: a checkpoint takes tens of milliseconds or more.
                graph.checkpoint_if_due()

    def _record_recalls(self) -> None:
        """Write queued recall events to the graph (one transaction)."""
        with self._unrecorded_lock:
            batch, self._unrecorded = self._unrecorded, []
        if not batch:
            return
        graph = self._graph
        assert graph is not None
        try:
            with graph.write("recording recalls") as w:
                w.record_recalls(batch)
        except BaseException:
            with self._unrecorded_lock:
                self._unrecorded = batch + self._unrecorded
            raise

    def wait_ready(self, timeout: float | None = None) -> None:
        """Block until warm-up has finished (starting it if nobody did).

        Raises:
            MemoryStoreError: warm-up failed or did not finish within ``timeout``.
        """
        self.start()
        if not self._ready.wait(timeout):
            raise MemoryStoreError("the memory is still loading; try again in a moment")
        if isinstance(self._failure, MemoryStoreError):
            raise self._failure
        if self._failure is not None:
            raise MemoryStoreError(f"the memory failed to load: {self._failure}")

    @property
    def ready(self) -> bool:
        """True once warm-up has finished successfully."""
        return self._ready.is_set() and self._failure is None

    def close(self) -> None:
        """Wait for warm-up, then release both stores."""
        if self._warm_thread is not None:
            self._warm_thread.join()
        self._stopping.set()
        if self._recorder is not None:
            self._recorder.join()
            self._recorder = None
        self._helper.shutdown(wait=True)
        if self._embedding_queue is not None:
            self._embedding_queue.close()  # delivers to the index writer: close it first
            self._embedding_queue = None
        if self._index_writer is not None:
            self._index_writer.close()
            self._index_writer = None
        if self._graph is not None:
            self._record_recalls()
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

    # ---- loading and repair -----------------------------------------------------------------

    def _load(self, working: WorkingMemory, graph: Graph) -> None:
        table = graph.observations()
        # Topic, agent, episode and kind names repeat across many observations, and the
        # database hands out a new string (and a new Decimal) for every row: sharing one
        # object per distinct value saves ~60 MB at 100k memories.
        shared: dict[Any, Any] = {}
        one = shared.setdefault
        topics: dict[str, list[str]] = {}
        for obs, topic in graph.mentions():
            topics.setdefault(obs, []).append(one(topic, topic))
        episodes = {obs: one(episode, episode) for obs, episode in graph.episode_links()}
        # A batch of rows at a time: 100k rows as Python dicts at once cost ~150 MB of peak.
        for row in (row for batch in table.to_batches(4096) for row in batch.to_pylist()):
            entry = Entry(
                id=row["id"],
                seq=int(row["seq"]),
                text=row["text"],
                text_key=row["text_key"],
                confidence=one(("confidence", row["confidence"]), Decimal(row["confidence"])),
                observed_at=_aware(row["observed_at"]),
                # One remember gives its memories one time: share it as the strings.
                recorded_at=one(("recorded", row["recorded_at"]), _aware(row["recorded_at"])),
                source=row["source"],
                kind=one(row["kind"], row["kind"]),
                subject=row["subject"],
                predicate=row["predicate"],
                object=row["object"],
                valid_from=from_naive_utc(row["valid_from"]),
                valid_until=from_naive_utc(row["valid_until"]),
                retracted=row["retracted_at"] is not None,
                episode=episodes.get(row["id"]),
                topics=tuple(sorted(topics.get(row["id"], []))),
            )
            r = working.add(entry)
            working.hits[r] = row["hits"] or 0
            working.impressions[r] = row["impressions"] or 0
        for agent, belief, obs in graph.beliefs():
            working.hold(working.row_of[obs], one(agent, agent), belief)
        del shared
        for newer, older in graph.supersessions():
            # A retracted superseder is kept for audit but no longer ends anything.
            if not working.entries[working.row_of[newer]].retracted:
                working.superseded_by(working.row_of[older], newer)
        for a, b, count in graph.co_activations():
            ra, rb = working.row_of[a], working.row_of[b]
            working.co_activated[ra][rb] = count
            working.co_activated[rb][ra] = count
        by_recall: dict[str, tuple[list[float], dict[int, float]]] = {}
        for recall, vector, obs, judgement in graph.judgements():
            judged = by_recall.setdefault(recall, (vector, {}))[1]
            judged[working.row_of[obs]] = 1.0 if judgement == "accepted" else -1.0
        for vector, judged in by_recall.values():
            working.learn(np.asarray(vector, dtype=np.float32), judged)

    def _repair(self, index: SearchIndex, working: WorkingMemory) -> None:
        """Load the index's vectors into the working memory, in the same pass learn which
        rows the index holds, then make it hold exactly the graph's current observations."""
        from doxa.store.index import error_line

        wanted = {e.id for e in working.entries if not e.retracted}
        present: set[str] = set()
        malformed: list[str] = []
        try:
            for ids, vectors in index.vectors():
                # Embeddings are unit length (or zero, for a text without words); anything
                # else was not written by an embedder: re-embed those rows.
                norms = np.linalg.norm(vectors, axis=1)
                sound = (np.abs(norms - 1.0) < _UNIT_TOLERANCE) | (norms == 0.0)
                malformed += [i for i, ok in zip(ids, sound, strict=True) if not ok]
                present.update(i for i, ok in zip(ids, sound, strict=True) if ok)
                rows = np.fromiter(
                    (working.row_of.get(i, -1) for i in ids), dtype=np.int64, count=len(ids)
                )
                known = (rows >= 0) & sound
                working.embeddings.put(rows[known], vectors[known])
        except (OSError, RuntimeError, ValueError) as error:  # a fragment missing or damaged
            index.reset(f"reading it failed ({error_line(error)})")
            present, malformed = set(), []
        if malformed:
            log.warning(
                "search index: %d rows hold vectors that are not embeddings", len(malformed)
            )
            index.delete(sorted(set(malformed)))
        extra = sorted(present - wanted)
        missing = sorted(wanted - present)
        if extra:
            log.warning("search index: removing %d rows the graph does not hold", len(extra))
            index.delete(extra)
        if missing:
            log.warning("search index: embedding %d observations it lacks", len(missing))
            batch = 1024
            for start in range(0, len(missing), batch):
                ids = missing[start : start + batch]
                rows = np.array([working.row_of[i] for i in ids], dtype=np.int64)
                texts = [working.entries[r].text for r in rows]
                vectors = self.embedder.embed(texts)
                index.add(ids, texts, vectors)
                working.embeddings.put(rows, vectors)
        n = len(working)
        loaded = int(np.count_nonzero(working.has_vector[:n] & working.live[:n]))
        if loaded != len(wanted):  # the ranges did not tile the table: never hide it
            log.error(
                "search index: vectors for %d of %d observations; the rest are found by text"
                " only until the next start",
                loaded,
                len(wanted),
            )
        _release_free_memory()

    # ---- remember ---------------------------------------------------------------------------

    def remember(
        self, drafts: Sequence[MemoryDraft], batch: bool = False, agent: str | None = None
    ) -> list[Remembered]:
        """Remember one or many observations, atomically: all are written or none.

        Args:
            drafts: the memories, values as given by the caller.
            batch: name fields as ``memories[i].field`` in errors.
            agent: the believing agent for drafts that name none (default: settings.agent).

        Returns:
            One ``Remembered`` per draft, in order.

        Raises:
            InvalidInput, NotFound: a value is wrong or names nothing; nothing was written.
        """
        default_agent = name(agent, "agent", required=False) or self.settings.agent
        memories: list[NewMemory] = []
        for i, draft in enumerate(drafts):
            try:
                memories.append(validate(draft, default_agent))
            except InvalidInput as error:
                raise (error.within(f"memories[{i}]") if batch else error) from None
        if not memories:
            return []
        working = self._wm
        # The texts are embedded after the write, on the embedding queue's thread (see
        # embedding_queue). A writer faster than the model waits here, before any lock: the
        # queue's thread takes the state lock to deliver.
        self._embeddings.wait_below(MAX_QUEUED_TEXTS)
        with self._state, self.graph.exclusive():
            results, plans = self._plan(memories, batch, working)
            if plans:
                self._write(plans, working)
        return results

    def _plan(
        self,
        memories: list[NewMemory],
        batch: bool,
        working: WorkingMemory,
    ) -> tuple[list[Remembered], list[_Plan]]:
        now = utc_now()
        results: list[Remembered] = []
        plans: list[_Plan] = []
        seen: dict[tuple[str, str], _Plan] = {}
        facts_in_batch: dict[tuple[str, str], list[_Plan]] = {}
        ended: dict[str, datetime] = {}

        def where(i: int, path: str) -> str:
            return f"memories[{i}].{path}" if batch else path

        for i, memory in enumerate(memories):
            key = (memory.agent, memory.text_key)
            existing = working.text_index.get(key)
            if existing is not None:
                entry = working.entries[existing]
                belief = next(
                    (b for b in entry.beliefs if working.belief_agent.get(b) == memory.agent),
                    entry.beliefs[0] if entry.beliefs else "",
                )
                results.append(Remembered(entry.id, belief, list(entry.topics), [], entry.id, []))
                continue
            if key in seen:
                earlier = seen[key]
                results.append(
                    Remembered(
                        earlier.observation_id,
                        earlier.belief_id,
                        list(earlier.memory.topics),
                        [],
                        earlier.observation_id,
                        [],
                    )
                )
                continue
            for j, (belief, _) in enumerate(memory.supports):
                if belief not in working.belief_row:
                    raise NotFound(where(i, f"supports[{j}].belief_id"), "belief", belief)
            for j, other in enumerate(memory.contradicts):
                row = working.row_of.get(other)
                if row is None or working.entries[row].retracted:
                    raise NotFound(where(i, f"contradicts[{j}]"), "observation", other)
            observed_at = memory.observed_at or now
            fact = memory.fact
            plan = _Plan(
                memory=memory,
                observation_id=new_id("obs"),
                belief_id=new_id("bel"),
                observed_at=observed_at,
                valid_from=(fact.valid_from or observed_at) if fact else None,
                valid_until=fact.valid_until if fact else None,
            )
            if fact is not None:
                self._plan_supersession(plan, working, facts_in_batch, ended)
            seen[key] = plan
            plans.append(plan)
            results.append(
                Remembered(
                    plan.observation_id,
                    plan.belief_id,
                    list(memory.topics),
                    [older for older, _ in plan.superseded],
                    None,
                    plan.conflicts,
                )
            )
        return results, plans

    def _plan_supersession(
        self,
        plan: _Plan,
        working: WorkingMemory,
        facts_in_batch: dict[tuple[str, str], list[_Plan]],
        ended: dict[str, datetime],
    ) -> None:
        """A newer fact with the same agent, subject and predicate ends the older one.

        ``ended`` holds the end this batch already gave to facts (stored or earlier in the
        batch), so a batch links supersessions exactly as the same facts sent one by one.
        """
        fact = plan.memory.fact
        assert fact is not None and plan.valid_from is not None
        key = (topic_key(fact.subject), topic_key(fact.predicate))
        new_object = topic_key(fact.object)
        start = plan.valid_from

        def current(obs: str, until: datetime | None) -> bool:
            ends = [t for t in (until, ended.get(obs)) if t is not None]
            return not ends or min(ends) > start

        candidates: list[tuple[str, str, datetime, tuple[str, ...]]] = []
        for row in working.fact_index.get(key, []):
            entry = working.entries[row]
            if not entry.retracted and current(entry.id, entry.valid_until):
                older_from = entry.valid_from or entry.observed_at
                candidates.append((entry.id, entry.object or "", older_from, entry.agents))
        for earlier in facts_in_batch.get(key, []):
            assert earlier.memory.fact is not None and earlier.valid_from is not None
            if current(earlier.observation_id, earlier.valid_until):
                candidates.append(
                    (
                        earlier.observation_id,
                        earlier.memory.fact.object,
                        earlier.valid_from,
                        (earlier.memory.agent,),
                    )
                )
        for other_id, other_object, other_from, agents in candidates:
            if topic_key(other_object) == new_object:
                continue
            if plan.memory.agent not in agents:
                plan.conflicts.append(other_id)
                continue
            if start >= other_from:
                plan.superseded.append((other_id, start))
                ended[other_id] = min(ended.get(other_id, start), start)
                for earlier in facts_in_batch.get(key, []):
                    if earlier.observation_id == other_id and (
                        earlier.valid_until is None or earlier.valid_until > start
                    ):
                        earlier.valid_until = start
            else:
                # An older fact arriving late is history: it ended when the newer one began.
                plan.superseded_by.append((other_id, other_from))
                if plan.valid_until is None or plan.valid_until > other_from:
                    plan.valid_until = other_from
        facts_in_batch.setdefault(key, []).append(plan)

    def _write(self, plans: list[_Plan], working: WorkingMemory) -> None:
        now = utc_now()
        seq = working.next_seq
        observations = []
        for offset, plan in enumerate(plans):
            m, fact = plan.memory, plan.memory.fact
            observations.append(
                {
                    "id": plan.observation_id,
                    "seq": seq + offset,
                    "text": m.text,
                    "text_key": m.text_key,
                    "observed_at": plan.observed_at,
                    "recorded_at": now,
                    "confidence": m.confidence,
                    "source": m.source,
                    "kind": "fact" if fact else "observation",
                    "subject": fact.subject if fact else None,
                    "predicate": fact.predicate if fact else None,
                    "object": fact.object if fact else None,
                    "valid_from": plan.valid_from,
                    "valid_until": plan.valid_until,
                }
            )
        # Agents, topics and episodes the memory already holds need no MERGE (a statement
        # saved is a tenth of a single remember's database time).
        first_seen: dict[str, datetime] = {}
        for plan in plans:
            if plan.memory.episode is not None:
                ep = plan.memory.episode
                first_seen[ep] = min(first_seen.get(ep, plan.observed_at), plan.observed_at)
        first_seen = {
            ep: at
            for ep, at in first_seen.items()
            if ep not in working.episode_start or at < working.episode_start[ep]
        }
        topics = sorted({t for p in plans for t in p.memory.topics} - working.topic_exact)
        agents = sorted({p.memory.agent for p in plans if p.memory.agent not in working.agent_rows})
        with self.graph.write("remember") as w:
            w.ensure_agents(agents)
            w.ensure_topics(topics)
            w.ensure_episodes(first_seen)
            w.create_observations(
                [
                    {
                        **row,
                        "agent": p.memory.agent,
                        "belief": p.belief_id,
                        "since": now,
                        "topics": list(p.memory.topics),
                    }
                    for row, p in zip(observations, plans, strict=True)
                ]
            )
            w.learned_in([(p.observation_id, p.memory.episode) for p in plans if p.memory.episode])
            w.support(
                [
                    (p.observation_id, belief, format(weight, "f"))
                    for p in plans
                    for belief, weight in p.memory.supports
                ]
            )
            w.contradict(
                [(p.observation_id, other, now) for p in plans for other in p.memory.contradicts]
            )
            w.supersede(
                [(p.observation_id, older, at) for p in plans for older, at in p.superseded]
                + [(newer, p.observation_id, at) for p in plans for newer, at in p.superseded_by]
            )
        self._apply(plans, observations, working, now)
        # The graph holds the memory now and the working memory finds it by its words; its
        # embedding follows on the queue's thread, and the index rows after it.
        self._embeddings.put([p.observation_id for p in plans], [p.memory.text for p in plans])

    def _deliver(self, ids: list[str], texts: list[str], vectors: Vectors) -> None:
        """Embedded memories (from the embedding queue's thread): into the working memory,
        then to the index writer, unless forgotten meanwhile."""
        with self._state:
            working = self._wm
            rows = {
                k: row
                for k, i in enumerate(ids)
                if (row := working.row_of.get(i)) is not None and working.live[row]
            }
            if not rows:
                return
            keep = list(rows)
            working.embeddings.put(list(rows.values()), vectors[keep])
            # Under the state lock, so a forget's index delete is queued after this add.
            self._writer.add([ids[k] for k in keep], [texts[k] for k in keep], vectors[keep])

    def _apply(
        self,
        plans: list[_Plan],
        observations: list[dict[str, Any]],
        working: WorkingMemory,
        now: datetime,
    ) -> None:
        """Mirror a committed write in the working memory (the vectors follow)."""
        rows: dict[str, int] = {}
        for plan, row in zip(plans, observations, strict=True):
            m = plan.memory
            entry = Entry(
                id=plan.observation_id,
                seq=row["seq"],
                text=m.text,
                text_key=m.text_key,
                confidence=m.confidence,
                observed_at=plan.observed_at,
                recorded_at=now,
                source=m.source,
                kind=row["kind"],
                subject=row["subject"],
                predicate=row["predicate"],
                object=row["object"],
                valid_from=plan.valid_from,
                valid_until=plan.valid_until,
                episode=m.episode,
                topics=tuple(sorted(m.topics)),
            )
            r = working.add(entry)
            working.hold(r, m.agent, plan.belief_id)
            rows[plan.observation_id] = r
        for plan in plans:
            for older, at in plan.superseded:
                older_row = rows.get(older, working.row_of.get(older))
                assert older_row is not None
                working.supersede(rows[plan.observation_id], older_row, at)
            for newer, _ in plan.superseded_by:
                working.superseded_by(rows[plan.observation_id], newer)

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
    ) -> RecallOutcome:
        """Find what the memory holds about ``query``, best first.

        Args:
            query: what to look for, in words. May be empty when a filter is given.
            agent: only observations this agent believes.
            topics: only observations mentioning any of these topics.
            min_confidence: only confidence >= this exact decimal.
            as_of: answer with what was valid then (ISO 8601); default now.
            include_superseded: also return facts no longer valid (ranked after current ones).
            limit: at most this many results (1..100).
            order_by: "relevance" (default), or present the results by "confidence",
                "newest" or "oldest" first.

        Raises:
            InvalidInput: a filter value is wrong; nothing is recorded.
        """
        if not isinstance(query, str):
            raise InvalidInput("query", "must be a string: what to look for, in words")
        if len(query) > MAX_QUERY:
            raise InvalidInput(
                "query", f"is {len(query)} characters long; the limit is {MAX_QUERY}"
            )
        agent_name = name(agent, "agent", required=False)
        topic_names: list[str] = []
        for i, topic in enumerate(topics or []):
            cleaned = name(topic, f"topics[{i}]")
            assert cleaned is not None
            topic_names.append(cleaned)
        if not query.strip() and agent_name is None and not topic_names:
            raise InvalidInput(
                "query", "must not be empty unless agent or topics narrow the recall"
            )
        minimum = (
            None if min_confidence is None else parse_unit_decimal(min_confidence, "min_confidence")
        )
        at = utc_now() if as_of is None else parse_time(as_of, "as_of")
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
            raise InvalidInput(
                "limit", f"must be a whole number from 1 to {MAX_LIMIT}, got {limit!r}"
            )
        if order_by not in ("relevance", "confidence", "newest", "oldest"):
            raise InvalidInput("order_by", "must be one of relevance, confidence, newest, oldest")
        working = self._wm
        weights = self.settings.ranking
        remembered = self._embeddings.queued
        vector = self.embedder.embed([query])[0] if query.strip() else None
        # Every memory remembered before this recall is recalled by meaning too: wait for
        # the embeddings still queued (a recall right after a remember pays what it saved).
        if not self._embeddings.wait(remembered, timeout=_EMBEDDING_WAIT_S):
            log.warning("recall: memories still being embedded are found by text only")
        window = time_window(query, at)
        # The working memory's lock only: a recall never waits for the graph, e.g. for the
        # recorder writing recall events (15-30 ms every 0.25 s under load).
        with self._state:
            n = len(working)
            at_us = micros(at)
            mask = working.live[:n].copy()
            if agent_name is not None:
                mask &= _member(working.rows_of(working.agent_rows, agent_name), n)
            if topic_names:
                any_topic = np.zeros(n, dtype=bool)
                for topic in topic_names:
                    any_topic |= _member(working.rows_of(working.topic_rows, topic_key(topic)), n)
                mask &= any_topic
            if minimum is not None:
                mask &= working.confidence[:n] >= scaled(minimum)
            mask &= working.valid_from[:n] <= at_us
            current = mask & (working.valid_until[:n] > at_us)
            if not include_superseded:
                mask = current
            # Full text among the rows the filters allow, so a filter never starves the pool.
            # It runs on a second core while this one scans the vectors (ONNX Runtime lets go
            # of the GIL; see vector_matrix).
            searching = (
                self._helper.submit(working.text.search, query, weights.text_pool, mask)
                if weights.text_pool and query.strip()
                else None
            )
            similarity = None if vector is None else working.embeddings.similarity(vector, n)
            hits = searching.result() if searching is not None else []
            ranked = rank(
                working,
                mask,
                vector,
                hits,
                query_topics(working, query) if query.strip() else [],
                None if window is None else (micros(window[0]), micros(window[1])),
                weights,
                # Replaced facts rank after every current one: rank them all, then order.
                limit if vector is not None and not include_superseded else n,
                similarity=similarity,
            )
            if vector is None:
                ranked.sort(key=lambda r: -working.entries[r.row].seq)
            ranked = _order(ranked, working, order_by, current)[:limit]
            recall_id = new_id("rec")
            results = [self._recollection(r, working, bool(current[r.row])) for r in ranked]
            with self._unrecorded_lock:
                self._unrecorded.append(
                    (
                        recall_id,
                        query,
                        agent_name,
                        utc_now(),
                        [(res.observation_id, k, res.score) for k, res in enumerate(results)],
                    )
                )
            self._recent[recall_id] = _Recent(query, vector, [r.observation_id for r in results])
            while len(self._recent) > _RECENT_RECALLS:
                self._recent.popitem(last=False)
        return RecallOutcome(recall_id, results)

    def _recollection(self, ranked: Ranked, working: WorkingMemory, current: bool) -> Recollection:
        entry = working.entries[ranked.row]
        fact = None
        if entry.subject is not None:
            fact = {
                "subject": entry.subject,
                "predicate": entry.predicate,
                "object": entry.object,
                "valid_from": entry.valid_from,
                "valid_until": entry.valid_until,
            }
        return Recollection(
            observation_id=entry.id,
            belief_ids=list(entry.beliefs),
            text=entry.text,
            confidence=entry.confidence,
            observed_at=entry.observed_at,
            source=entry.source,
            episode=entry.episode,
            topics=list(entry.topics),
            agents=list(entry.agents),
            score=round(ranked.score, 6),
            scores={k: round(v, 6) for k, v in ranked.components.items() if v},
            superseded_by=list(entry.superseded_by),
            current=current,
            fact=fact,
        )

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
        both = set(accepted_ids) & set(rejected_ids)
        if both:
            raise InvalidInput(
                "rejected", f"{sorted(both)[0]!r} is also in accepted; judge each result once"
            )
        working = self._wm
        with self._state, self.graph.exclusive():
            self._record_recalls()
            recent = self._recent.get(recall)
            if recent is None:
                event = self.graph.recall_event(recall)
                if event is None:
                    raise NotFound("recall_id", "recall", recall)
                query, judged, returned = event
                recent = _Recent(query, None, returned, judged)
            if recent.judged:
                raise InvalidInput(
                    "recall_id",
                    "was already judged; call recall again and judge the new recall_id",
                )
            for field_name, ids in (("accepted", accepted_ids), ("rejected", rejected_ids)):
                for i, obs in enumerate(ids):
                    if obs not in recent.returned:
                        raise InvalidInput(
                            f"{field_name}[{i}]",
                            f"{obs!r} was not returned by recall {recall}; judge only its results",
                        )
            vector = recent.vector
            if vector is None:
                vector = self.embedder.embed([recent.query or " "])[0]
            judgements = {
                obs: "accepted"
                if obs in accepted_ids
                else "rejected"
                if obs in rejected_ids
                else ""
                for obs in recent.returned
            }
            pairs = [(a, b) for a in accepted_ids for b in accepted_ids if a < b]
            with self.graph.write("feedback") as w:
                w.judge(recall, [float(x) for x in vector], judgements, utc_now())
                w.co_activate(pairs)
            recent.judged = True
            learned: dict[int, float] = {}
            for obs, judgement in judgements.items():
                row = working.row_of.get(obs)
                if row is None:
                    continue
                working.impressions[row] += 1
                if judgement == "accepted":
                    working.hits[row] += 1
                    learned[row] = 1.0
                elif judgement == "rejected":
                    learned[row] = -1.0
            working.learn(vector, learned)
            working.co_activate([working.row_of[a] for a in accepted_ids if a in working.row_of])
        return Judged(recall, accepted_ids, rejected_ids, len(recent.returned))

    # ---- forget -----------------------------------------------------------------------------

    def forget(self, observation_id: str, mode: str = "retract") -> Forgotten:
        """Retract (kept for audit, never recalled) or purge (gone from both stores).

        Raises:
            InvalidInput: unknown mode. NotFound: no such observation.
        """
        if mode not in ("retract", "purge"):
            raise InvalidInput("mode", f'must be "retract" or "purge", got {mode!r}')
        obs = name(observation_id, "id")
        assert obs is not None
        working = self._wm
        with self._state, self.graph.exclusive():
            row = working.row_of.get(obs)
            if row is None:
                raise NotFound("id", "observation", obs)
            entry = working.entries[row]
            if mode == "retract" and entry.retracted:
                return Forgotten(obs, mode, list(entry.beliefs), True)
            reopened = self._reopened(row, working)
            with self.graph.write(f"forget ({mode})") as w:
                if mode == "retract":
                    w.retract(obs, utc_now())
                    beliefs = list(entry.beliefs)
                else:
                    beliefs = w.purge(obs)
                w.end_validity([(working.entries[r].id, until) for r, until in reopened])
            # After the graph commits, in order behind any write of the same row still queued.
            self._writer.delete([obs])
            for other, until in reopened:
                working.reopen(other, until, obs)
            if mode == "retract":
                working.retract(row)
            else:
                working.purge(row)
            return Forgotten(obs, mode, beliefs, False)

    def _reopened(self, row: int, working: WorkingMemory) -> list[tuple[int, datetime | None]]:
        """Facts that the observation at ``row`` had ended, with the end they have without it
        (the start of their next remaining superseder, or none: current again)."""
        gone = working.entries[row]
        key = fact_key(gone)
        if key is None:
            return []
        out: list[tuple[int, datetime | None]] = []
        for other in working.fact_index.get(key, []):
            entry = working.entries[other]
            if other == row or gone.id not in entry.superseded_by:
                continue
            ends = []
            for newer in entry.superseded_by:
                newer_row = working.row_of.get(newer)
                if newer == gone.id or newer_row is None:
                    continue
                successor = working.entries[newer_row]
                if not successor.retracted:
                    ends.append(successor.valid_from or successor.observed_at)
            out.append((other, min(ends) if ends else None))
        return out

    # ---- evidence and conflicts -------------------------------------------------------------

    def evidence(self, id: str) -> dict[str, Any]:
        """Everything known about an observation or belief, for citing it.

        Returns the observation's fields with ``believers``, ``evidence``, ``supports``,
        ``contradictions``, ``superseded_by``, ``supersession_chain``, and ``belief_id``
        when a belief id was given.

        Raises:
            NotFound: the id names no observation or belief.
        """
        key = name(id, "id")
        assert key is not None
        return provenance.cite(self.graph, key)

    def unsupported(self, agent: str) -> list[dict[str, Any]]:
        """The agent's beliefs that no evidence supports."""
        who = name(agent, "agent")
        assert who is not None
        return self.graph.unsupported_beliefs(who)

    def conflicts(
        self,
        agent: str | None = None,
        other_agent: str | None = None,
        topic: str | None = None,
    ) -> list[dict[str, Any]]:
        """Explicit contradictions and clashing current facts.

        Args:
            agent: only conflicts involving this agent's beliefs.
            other_agent: with ``agent``: only conflicts between the two agents.
            topic: only conflicts where either side mentions this topic.

        Returns:
            Dicts with ``kind`` ("contradiction" or "clash"), ``a`` and ``b`` observation ids
            with their agents, texts and confidences, and for clashes ``subject`` and
            ``predicate``.
        """
        me = name(agent, "agent", required=False)
        other = name(other_agent, "other_agent", required=False)
        if other is not None and me is None:
            raise InvalidInput("agent", "is required when other_agent is given")
        about = name(topic, "topic", required=False)
        working = self._wm
        with self._state:
            return provenance.conflicts(self.graph, working, me, other, about)

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

        return self._embeddings.wait(timeout=left()) and self._writer.wait(timeout=left())

    def stats(self) -> dict[str, int]:
        """Counts of the graph's nodes and the index's rows."""
        counts = self.graph.counts()
        if self._index is not None:
            self.settle(timeout=_INDEX_WAIT_S)
            counts["IndexRows"] = self._index.count()
        return counts


#: How far from 1 an embedding's length may be (float32 rounding is about 1e-7).
_UNIT_TOLERANCE = 1e-3
#: Buffer pool of the opening that replays a write-ahead log left by a crash.
_REPLAY_POOL = 2 * 1024 * 1024 * 1024
#: How long ``stats`` waits for queued index writes before counting without them.
_INDEX_WAIT_S = 2.0
#: How long a recall waits for memories still being embedded (the model is failing if longer).
_EMBEDDING_WAIT_S = 30.0
#: Texts waiting for the model before ``remember`` waits for it (about 4 s of model time).
MAX_QUEUED_TEXTS = 2048


def _release_free_memory() -> None:
    """Hand freed heap back to the OS after loading (glibc keeps it otherwise)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _refuse_if_graph_lost(data_dir: Path, working: WorkingMemory, index: SearchIndex) -> None:
    """Refuse to open a memory whose graph is empty while its search index is not: the
    graph file was emptied, replaced or lost, and the start-up repair would delete the
    index's rows, the only other copy of the texts."""
    if len(working):
        return
    if index.problem is not None:
        held = f"its search index cannot be read ({index.problem})"
    elif index.count():
        held = f"its search index holds {index.count()} memories"
    else:
        return
    raise DamagedStore(
        str(data_dir),
        f"its graph holds no memories but {held}; the graph file may have been emptied,"
        " replaced or lost",
        "Nothing was changed. Put the graph file back from a backup. If the memory really is"
        " empty (everything was purged), `doxa repair --force` rebuilds the search index from"
        " the graph, dropping its rows",
    )


def _aware(moment: datetime | None) -> datetime:
    value = from_naive_utc(moment)
    assert value is not None
    return value


def _member(rows: npt.NDArray[np.int64], n: int) -> npt.NDArray[np.bool_]:
    mask = np.zeros(n, dtype=bool)
    if len(rows):
        mask[rows[rows < n]] = True
    return mask


def _ids(values: Sequence[str] | None, field_name: str) -> list[str]:
    out: list[str] = []
    for i, value in enumerate(values or []):
        cleaned = name(value, f"{field_name}[{i}]")
        assert cleaned is not None
        if cleaned not in out:
            out.append(cleaned)
    return out


def _order(
    ranked: list[Ranked], working: WorkingMemory, order_by: OrderBy, current: npt.NDArray[np.bool_]
) -> list[Ranked]:
    """Present results in the requested order; facts no longer valid always come last."""
    entries = working.entries
    if order_by == "confidence":
        ranked = sorted(ranked, key=lambda r: (-entries[r.row].confidence, -r.score))
    elif order_by == "newest":
        ranked = sorted(ranked, key=lambda r: (-micros(entries[r.row].observed_at), -r.score))
    elif order_by == "oldest":
        ranked = sorted(ranked, key=lambda r: (micros(entries[r.row].observed_at), -r.score))
    return sorted(ranked, key=lambda r: not current[r.row])
