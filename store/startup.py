"""Start-up: open the graph (migrating it), load the working memory from it, and repair the
search index from the graph.

The graph is the source of truth. The working memory is rebuilt from it at every start; the
search index (LanceDB) only saves re-embedding every memory, and is made to hold exactly the
graph's current observations: rows it lacks (a crash before the index writer wrote them, or
an embedding that failed) are embedded again, rows the graph does not hold are removed, and
rows whose vectors are not embeddings are replaced; a long text's passage vectors likewise
(a text without them, as every long text of a memory made before they were kept, gets them).
A graph that is empty while its index is not is refused instead: that repair would delete
the only other copy of the texts. What judged recalls taught is learned with each query's
vector as this embedder gives it: a vector of another embedder, or none kept (none is read
from before schema migration 14, when Kùzu could garble them), is embedded again from the
recall's words and kept (``learn_judged``).
Recalls recorded before schema migration 10 are stamped with the embedder that ranked them
(the ranker learns only from this embedder's).

All of this runs on the memory's warm-up thread, before any call is served.
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
from collections.abc import Iterator
from dataclasses import dataclass, replace
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import numpy.typing as npt

from doxa.store import event_time, native_memory, planning
from doxa.store.backup import unfinished
from doxa.store.details import details
from doxa.store.drafts import fact_times, memory_key, predicate_key
from doxa.store.embedder import Embedder, are_embeddings
from doxa.store.errors import DamagedStore, MemoryStoreError
from doxa.store.event_time import EventTime
from doxa.store.judged_queries import JudgedRecall
from doxa.store.passage_vectors import (
    embed_with_passages,
    embeddings_of,
    extra_passages,
    is_long,
)
from doxa.store.records import Record, RecordField, type_name, value_node
from doxa.store.settings import StoreSettings
from doxa.store.values import from_naive_utc, micros, told_in, utc_now
from doxa.store.working_memory import Entry, WorkingMemory

if TYPE_CHECKING:  # imported on the warm-up thread: lancedb alone takes most of a second
    from datetime import datetime

    from doxa.store.graph import Graph
    from doxa.store.index import SearchIndex

log = logging.getLogger(__name__)

#: Observations whose values one transaction of ``refill`` stores.
_REFILL_BATCH = 2000

#: Buffer pool of the opening that replays a write-ahead log left by a crash.
REPLAY_POOL = 2 * 1024 * 1024 * 1024


@dataclass
class Stores:
    """The opened stores of a data directory and the working memory loaded from them."""

    graph: Graph
    index: SearchIndex
    working: WorkingMemory


def open_stores(
    settings: StoreSettings, embedder: Embedder, imported: bool = False, model: bool = False
) -> Stores:
    """Open the graph (migrating it), open the index, load the working memory from the
    graph, and repair the index. The embedder must give its dimension without loading
    (it embeds only what the index lacks). ``imported``: the first start after an import,
    whose observations and judged queries are expected to lack vectors (said at INFO, not
    as the warning a crash's gaps are). ``model``: load the embedder's model on the way (a
    process that serves), where the process is smallest.

    Raises:
        SchemaMismatch, DamagedStore, MemoryStoreError: the graph cannot be served; every
            store opened here is closed again.
    """
    from doxa.store import importing
    from doxa.store.graph import Graph, wal_file
    from doxa.store.index import SearchIndex

    data_dir = Path(settings.data_dir).expanduser()
    if unfinished(data_dir):
        raise MemoryStoreError(cut_off_backup(data_dir))
    if importing.unfinished(data_dir):
        raise MemoryStoreError(importing.cut_off_import(data_dir))
    if not (data_dir / "graph").exists():
        # Refused before the graph is made: a refusal leaves the directory as it was.
        refuse_if_graph_missing(data_dir, embedder)
    pool = settings.buffer_pool_mb * 1024 * 1024
    every = settings.checkpoint_every
    # A write-ahead log left by a crash is replayed into the pool when the database
    # opens; a pool sized for normal work can be too small for that, and the first
    # restart failed. The pool is only reserved address space until used, and this
    # opening closes (checkpointing the log) before the one that serves.
    replay = pool if not wal_file(data_dir / "graph").exists() else max(pool, REPLAY_POOL)
    ceiling = max(replay, settings.buffer_pool_max_mb << 20)
    graph = Graph(
        data_dir / "graph",
        buffer_pool_bytes=replay,
        checkpoint_every=every,
        buffer_pool_max_bytes=ceiling,
    )
    try:
        dim = embedder.dim  # the ONNX runtime reads it from its export, loading nothing
        index = SearchIndex(data_dir / "index", dim, embedder.fingerprint)
        with graph.exclusive():
            # Sized to the memory (plus room to grow) rather than doubled into place.
            working = WorkingMemory(
                dim,
                capacity=graph.observation_count() + 1024,
                cardinalities=settings.predicates.cardinalities(),
            )
            computed, judged, recomposed = load(working, graph, settings.timezone)
            refill(graph, computed)
            refile_fields(graph, recomposed)
    finally:
        # Kùzu keeps every page the load read in its buffer pool (about 150 MB at 100k
        # memories) and never gives one back; the working memory holds what they held now.
        # Reopening the database starts with an empty pool.
        graph.close()
    if model:
        # Its load briefly takes ~125 MB more than it keeps (the file read whole, then
        # parsed). Here the graph's rows are loaded and their database closed, the index's
        # vectors not yet read: at 100k memories ~420 MB, against ~590 MB once served.
        native_memory.give_back()
        embedder.load()
    # Its schema was checked (and migrated) by the opening above: reading it again is ~25
    # ms of every start.
    graph = Graph(
        data_dir / "graph",
        buffer_pool_bytes=pool,
        checkpoint_every=every,
        reopen_every=settings.reopen_every,
        buffer_pool_max_bytes=ceiling,
        checked=True,
    )
    if not model:
        # With no model to load, what the closed database freed goes back once the new one
        # is open: before it, the opening took ~80 MB anew, ~70 ms of page faults.
        native_memory.give_back()
    try:
        refuse_if_graph_lost(data_dir, working, index)
        if index.problem is not None:
            index.reset(f"it cannot be read ({index.problem})")
        with graph.exclusive():
            repair(index, working, embedder, imported)
            if judged:
                alike = settings.ranking.feedback_similarity
                learn_judged(graph, working, embedder, judged, alike, imported)
            ended = planning.overlapping(working)
            if ended:
                end_overlaps(graph, working, ended)
            if graph.unstamped_recalls():
                # Ranked by the embedder that built the index: this one, unless it was not.
                ranked_by = "" if index.foreign else embedder.fingerprint
                graph.transact("stamping recalls", lambda w: w.stamp_recalls(ranked_by))
    except BaseException:
        graph.close()
        raise
    return Stores(graph, index, working)


def load(
    working: WorkingMemory, graph: Graph, zone: str = "UTC"
) -> tuple[dict[str, list[tuple[str, str]]], dict[str, JudgedQuery], set[str]]:
    """Fill an empty working memory from the graph: observations (with their records),
    beliefs (held and withdrawn), predicates' cardinalities, supersessions, co-activations
    and impressions (the observations' vectors come from the index: ``repair``), and read
    the judged recalls.

    Returns:
        What was computed again for observations a migration cleared it of, for the graph
        to keep (``refill``): per column, (id, value): ``event_times`` (migrations 3, 11,
        12, 20, 21, 22) and records' ``text_key`` (13); the judged recalls by id, learned
        once the embedder is known to fit them (``learn_judged``); and the ids of the records
        kept in another Unicode form than they are compared in (``records_of``).
    """
    # Topic, agent, episode, kind, source and fact names and event times repeat across
    # many observations, and the database hands out a new string (and a new Decimal) for
    # every row: sharing one object per distinct value saves ~75 MB at 100k memories.
    shared: dict[Any, Any] = {}
    one = shared.setdefault
    records, recomposed = records_of(graph)
    unread: list[tuple[str, str]] = []
    rekeyed: list[tuple[str, str]] = []
    # A range of observations at a time, with their topics and episodes: Kùzu keeps the
    # memory of a result to the end of loading, and the 100k rows read at once held ~100 MB
    # more there (``Graph.seq_ranges``); as Python dicts, a batch at a time.
    for seqs in graph.seq_ranges():
        topics: dict[str, list[str]] = {}
        for obs, topic in graph.mentions(seqs):
            topics.setdefault(obs, []).append(one(topic, topic))
        episodes = {obs: one(episode, episode) for obs, episode in graph.episode_links(seqs)}
        table = graph.observations(seqs)
        for row in (row for batch in table.to_batches(4096) for row in batch.to_pylist()):
            record = records.get(row["id"])
            if row["id"] in recomposed:
                # Kept before types and string values were composed: keyed as remember keys
                # it now, so the same record told again is a repeat. At each start, never
                # written back: Kùzu 0.11.3 garbles a string set in place
                # (``Graph.summarize``), and such records are few.
                row["text_key"] = memory_key(row["text"], records[row["id"]])
            entry = Entry(
                id=row["id"],
                seq=int(row["seq"]),
                text=row["text"],
                text_key=row["text_key"] or _rekeyed(row, record, rekeyed),
                confidence=one(("confidence", row["confidence"]), Decimal(row["confidence"])),
                observed_at=_aware(row["observed_at"]),
                # One remember gives its memories one time: share it as the strings.
                recorded_at=one(("recorded", row["recorded_at"]), _aware(row["recorded_at"])),
                source=one(row["source"], row["source"]),
                kind=one(row["kind"], row["kind"]),
                subject=one(row["subject"], row["subject"]),
                predicate=one(row["predicate"], row["predicate"]),
                object=one(row["object"], row["object"]),
                valid_from=from_naive_utc(row["valid_from"]),
                valid_until=from_naive_utc(row["valid_until"]),
                retracted=row["retracted_at"] is not None,
                retracted_at=from_naive_utc(row["retracted_at"]),
                stated_until=from_naive_utc(row["stated_until"]),
                event_times=_event_times(row, record, unread, shared, zone),
                episode=episodes.get(row["id"]),
                topics=tuple(sorted(topics.get(row["id"], []))),
                record=record,
            )
            r = working.add(entry)
            working.hits[r] = row["hits"] or 0
            working.impressions[r] = row["impressions"] or 0
        del table
    for agent, belief, obs, since, withdrawn, confidence, until, forgot in graph.beliefs():
        row = working.row_of[obs]
        if withdrawn is None:
            # Most beliefs were taken with their observation: the time shared above.
            taken = shared.get(("recorded", since)) or from_naive_utc(since)
            working.hold(row, one(agent, agent), belief, taken, confidence)
        else:
            began = micros(_aware(since or working.entries[row].recorded_at))
            held = None if until is None else micros(_aware(until))
            gone = micros(_aware(withdrawn))
            working.withdraw_later(row, one(agent, agent), belief, began, gone, held, confidence)
            if forgot is not None:
                working.withdraw_outright(belief, micros(_aware(forgot)))
    del shared
    for predicate, cardinality in graph.predicates():
        # Keyed as facts look it up: earlier versions imported names such as "Works At".
        working.predicates[predicate_key(predicate)] = cardinality
    for x, y, known in graph.contradiction_links():
        rows = working.row_of[x], working.row_of[y]
        # A link of unknown time is as old as the later of its sides.
        told = max(working.entries[row].recorded_at for row in rows)
        working.contradict(*rows, told if known is None else _aware(known))
    for newer, older, at, known, undone in graph.supersessions():
        newer_row, older_row = working.row_of[newer], working.row_of[older]
        # It ended the older fact from when it was recorded while its newer end was held,
        # until a forget undid it.
        working.link(newer_row, older_row, _aware(at), _aware(known), undone and _aware(undone))
        # A retracted superseder is kept for audit but no longer ends anything now.
        if not working.entries[newer_row].retracted and undone is None:
            working.superseded_by(older_row, newer)
    for a, b, count in graph.co_activations():
        ra, rb = working.row_of.get(a), working.row_of.get(b)
        if ra is None or rb is None:  # an imported file may pair observations it lacks
            continue
        working.co_activated[ra][rb] = count
        working.co_activated[rb][ra] = count
    judged = {
        recall: JudgedQuery(
            JudgedRecall(vector, {}, 0 if at is None else micros(_aware(at)), [], details(words)),
            embedder,
            words,
        )
        for recall, (vector, embedder, at, words) in graph.judged_queries().items()
    }
    # Impressions since each row's last hit, replayed in the order they were judged.
    for recall, obs, judgement in graph.impressions_in_order():
        seen = working.row_of.get(obs)
        if seen is None:
            continue
        working.unrewarded[seen] = 0 if judgement == "accepted" else working.unrewarded[seen] + 1
        query = judged.get(recall)
        if query is not None:
            query.recall.shown.append(seen)
            if judgement:
                query.recall.judged[seen] = 1.0 if judgement == "accepted" else -1.0
    return {"event_times": unread, "text_key": rekeyed}, judged, recomposed


@dataclass(frozen=True)
class JudgedQuery:
    """A judged recall as the graph keeps it (its query's vector as stored, its judgements,
    every row it showed, its query's details), the embedder that embedded its query (None:
    no vector kept) and the query's words (to embed it again)."""

    recall: JudgedRecall
    embedder: str | None
    query: str


def usable_as_kept(
    vector: npt.NDArray[np.float32], made_by: str | None, embedder: Embedder
) -> bool:
    """Whether a judged query's stored vector can be compared with ``embedder``'s: made by
    it and of its size (zeros too: a query of no words the embedder knows, embedded again
    to zeros)."""
    return made_by == embedder.fingerprint and vector.shape == (embedder.dim,)


def learn_judged(
    graph: Graph,
    working: WorkingMemory,
    embedder: Embedder,
    judged: dict[str, JudgedQuery],
    alike: float,
    imported: bool = False,
) -> None:
    """Learn what the judged recalls taught, in the order they were judged (what each showed
    counts against the acceptances of earlier queries at least ``alike`` similar:
    ``WorkingMemory.learn``), each query's vector as the current embedder gives it. A vector
    embedded by another embedder (the model changed), of another size, or none kept (judged
    before schema migration 14, or imported) is embedded again from the recall's query and
    kept with the embedder's fingerprint. A query whose embedding is zeros itself (no words)
    teaches nothing. ``imported``: right after an import (an export keeps no vectors), so
    embedding them is expected and said at INFO."""
    fingerprint = embedder.fingerprint
    stamped: dict[str, npt.NDArray[np.float32]] = {}
    vectors: dict[str, npt.NDArray[np.float32]] = {}
    again: list[str] = []
    for recall, query in judged.items():
        vector = query.recall.vector
        if not usable_as_kept(vector, query.embedder, embedder):
            again.append(recall)
        elif vector.any():
            vectors[recall] = vector
    if again:
        embedded = embedder.embed([judged[r].query or " " for r in again])
        for recall, vector in zip(again, embedded, strict=True):
            stamped[recall] = vector  # kept even as zeros, so the next start need not again
            if vector.any():
                vectors[recall] = vector
        log.log(
            logging.INFO if imported else logging.WARNING,
            "feedback: %d judged queries embedded again (another embedder's, or none kept)",
            len(again),
        )
    working.learn(
        [
            replace(judged[r].recall, vector=vectors[r])
            for r in sorted(vectors, key=lambda r: (judged[r].recall.at, r))
        ],
        alike,
    )
    if stamped:
        graph.transact(
            "keeping query vectors", lambda w: w.keep_query_vectors(stamped, fingerprint)
        )


def records_of(graph: Graph) -> tuple[dict[str, Record], set[str]]:
    """Every record the graph holds, by observation id, its fields typed again and its type
    as it is kept now (``records.type_name``: one remembered before types were normalised
    may be in another Unicode form, and is counted and shown as the same type); and the ids
    of those whose type the graph keeps so, or a string value in another Unicode form than
    it is compared in (``Record.in_another_form``: kept as given, but keyed as given before
    strings were compared composed)."""
    fields: dict[str, list[RecordField]] = {}
    for obs, _, field_name, kind, text in graph.record_fields():
        fields.setdefault(obs, []).append(RecordField.loaded(field_name, kind, text))
    records: dict[str, Record] = {}
    recomposed: set[str] = set()
    for obs, kind in graph.record_types():
        records[obs] = Record(type_name(kind), tuple(fields.get(obs, ())))
        if records[obs].type != kind or records[obs].in_another_form():
            recomposed.add(obs)
    return records, recomposed


def refile_fields(graph: Graph, recomposed: set[str]) -> None:
    """Link the fields of records kept in another Unicode form (``records_of``) to the
    ``FieldValue`` their value is compared under now, once (the next start finds them so):
    an earlier version keyed a string as given, and "Björk" typed and pasted with a
    combining accent were two values. A memory an import wrote is opened, and so refiled."""
    if not recomposed:
        return
    moved = [
        link
        for link in graph.field_links(sorted(recomposed))
        if value_node(RecordField.loaded(*link[2:5]))[0] != link[5]
    ]
    if moved:
        graph.transact("keying field values as they are compared", lambda w: w.move_fields(moved))
        log.info("linked %d record fields to their values as compared now", len(moved))


def _event_times(
    row: dict[str, Any],
    record: Record | None,
    unread: list[tuple[str, str]],
    shared: dict[Any, Any],
    zone: str,
) -> tuple[EventTime, ...]:
    """A loaded observation's event times: as stored (one tuple in ``shared`` for each
    stored value), or read now from its words (and added to ``unread``) when they were read
    by an earlier version, or never, in the calendar they were told in (the UTC offset kept
    with it, ``told_offset``), or, for one stored before offsets were kept, of the memory's
    time zone ``zone``. A record's own words (``Record.line``) tell of no time, and a fact's
    times say which year its words' dates mean, as at remember (its start, given or not, is
    no other year's)."""
    stored = row["event_times"]
    if stored is not None:
        key = ("event_times", stored)
        times: tuple[EventTime, ...] | None = shared.get(key)
        if times is None:
            times = shared[key] = event_time.loaded(stored)
        return times
    told = "" if record is not None and record.is_in_words(row["text"]) else row["text"]
    stated = fact_times(from_naive_utc(row["valid_from"]), from_naive_utc(row["stated_until"]))
    said = told_in(_aware(row["observed_at"]), row["told_offset"], zone)
    times = tuple(event_time.event_times(told, said, stated))
    unread.append((row["id"], event_time.stored(times)))
    return times


def _rekeyed(row: dict[str, Any], record: Record | None, rekeyed: list[tuple[str, str]]) -> str:
    """The duplicate key of an observation a migration cleared it of (a record's, 13),
    computed again and added to ``rekeyed``."""
    key = memory_key(row["text"], record)
    rekeyed.append((row["id"], key))
    return key


def end_overlaps(
    graph: Graph, working: WorkingMemory, ended: list[tuple[int, int, datetime]]
) -> None:
    """End facts that hold beside a later fact of their agents (``planning.overlapping``),
    as a forget now ends them: the later fact supersedes each from its start."""
    entries = working.entries
    links = [(entries[newer].id, entries[older].id, at) for older, newer, at in ended]
    now = utc_now()
    graph.transact("ending facts held beside later ones", lambda w: w.supersede(links, now))
    for older, newer, at in ended:
        working.supersede(newer, older, at, now)
    log.warning(
        "ended %d facts that held beside a later fact of their agents (left by an earlier"
        " version, or by an import merging two memories' facts): %s",
        len(ended),
        ", ".join(entries[older].id for older, _, _ in ended[:5])
        + (", …" if len(ended) > 5 else ""),
    )


def refill(graph: Graph, computed: dict[str, list[tuple[str, str]]]) -> None:
    """Store what ``load`` computed again, per column, in batches (once: the next start
    finds it stored)."""
    if not any(computed.values()):
        return
    for column, rows in computed.items():
        if rows:
            log.info("computed %s again for %d observations", column, len(rows))
        for start in range(0, len(rows), _REFILL_BATCH):
            with graph.write(column) as w:
                w.refill(column, rows[start : start + _REFILL_BATCH])
    graph.checkpoint()


def repair(
    index: SearchIndex, working: WorkingMemory, embedder: Embedder, imported: bool = False
) -> None:
    """Load the index's vectors into the working memory, in the same pass learn which
    rows the index holds, then make it hold exactly the graph's current observations.
    Observations it lacks are a warning (a crash lost them) unless the index held no row
    (new, or just reset, which says why) or an import brought them (``imported``): then
    embedding them is the expected work, said at INFO."""
    from doxa.store.index import error_line

    wanted = {e.id for e in working.entries if not e.retracted}
    present: set[str] = set()
    malformed: list[str] = []
    try:
        for ids, vectors in index.vectors():
            # Rows no embedder wrote are embedded again.
            sound = are_embeddings(vectors)
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
        log.warning("search index: %d rows hold vectors that are not embeddings", len(malformed))
        index.delete(sorted(set(malformed)))
    extra = sorted(present - wanted)
    missing = sorted(wanted - present)
    if extra:
        log.warning("search index: removing %d rows the graph does not hold", len(extra))
        index.delete(extra)
    unpassaged = load_passages(index, working, wanted, set(missing))
    if missing:
        expected = imported or not (present or malformed)
        log.log(
            logging.INFO if expected else logging.WARNING,
            "search index: embedding %d observations it lacks",
            len(missing),
        )
        for ids in _by_embeddings(missing, working, own=True):
            rows = np.array([working.row_of[i] for i in ids], dtype=np.int64)
            texts = [working.entries[r].text for r in rows]
            vectors, passages = embed_with_passages(embedder.embed, texts)
            index.add_passages(
                [ids[k] for k in passages.of], passages.numbers.tolist(), passages.vectors
            )
            index.add(ids, texts, vectors)
            working.embeddings.put(rows, vectors)
            working.passages.put(rows[passages.of], passages.vectors, passages.numbers)
    if unpassaged:
        log.info("search index: embedding the passages of %d long texts", len(unpassaged))
        for ids in _by_embeddings(unpassaged, working, own=False):
            rows = np.array([working.row_of[i] for i in ids], dtype=np.int64)
            texts = [working.entries[r].text for r in rows]
            passages = embed_with_passages(embedder.embed, texts, own=False)[1]
            index.add_passages(
                [ids[k] for k in passages.of], passages.numbers.tolist(), passages.vectors
            )
            working.passages.put(rows[passages.of], passages.vectors, passages.numbers)
    n = len(working)
    loaded = int(np.count_nonzero(working.has_vector[:n] & working.live[:n]))
    if loaded != len(wanted):  # the ranges did not tile the table: never hide it
        log.error(
            "search index: vectors for %d of %d observations; the rest are found by text"
            " only until the next start",
            loaded,
            len(wanted),
        )
    release_free_memory()


#: Embeddings per call of the start's repair: a long text counts its passages
#: (``embeddings_of``): 1,024 texts of 5,000 words were ~55,000 embeddings in one call, ~260 MB
#: of passages, tokens and vectors (an import of long documents is all embedded at its first
#: start).
_REPAIR_EMBEDDINGS = 1024


def _by_embeddings(ids: list[str], working: WorkingMemory, own: bool) -> Iterator[list[str]]:
    """``ids`` in runs of at most ``_REPAIR_EMBEDDINGS`` embeddings (a text longer alone, alone):
    each text's own and its passages', or (``own`` False) its passages alone."""
    run: list[str] = []
    size = 0
    for i in ids:
        n = embeddings_of(working.entries[working.row_of[i]].text) - (0 if own else 1)
        if run and size + n > _REPAIR_EMBEDDINGS:
            yield run
            run, size = [], 0
        run.append(i)
        size += n
    if run:
        yield run


def load_passages(
    index: SearchIndex, working: WorkingMemory, wanted: set[str], missing: set[str]
) -> list[str]:
    """Load the index's passage vectors into the working memory and remove the ones it
    should not hold (of observations not ``wanted``, or ``missing``: embedded again with
    them), or holds only in part or twice (a write cut short).

    Returns:
        The ids of the long texts (``passage_vectors``) among ``wanted`` and not ``missing``
        whose passages the index lacks now, to embed.
    """
    from doxa.store.index import error_line

    numbers: dict[str, list[int]] = {}
    try:
        for ids, batch_numbers, batch in index.passage_vectors():
            sound = are_embeddings(batch)
            rows = np.fromiter(
                (
                    working.row_of.get(i, -1) if i in wanted and i not in missing else -1
                    for i in ids
                ),
                dtype=np.int64,
                count=len(ids),
            )
            for i, number, ok in zip(ids, batch_numbers, sound, strict=True):
                numbers.setdefault(i, []).append(number if ok else -1)
            # Put as they come (the whole table at once as float32 would be four times the
            # int8 it becomes); a row whose set turns out wrong is cleared below.
            known = (rows >= 0) & sound
            working.passages.put(
                rows[known], batch[known], np.asarray(batch_numbers, dtype=np.int64)[known]
            )
    except (OSError, RuntimeError, ValueError) as error:  # as the rows': embedded again
        log.warning(
            "search index: passages cannot be read (%s); embedding them again",
            error_line(error),
        )
        index.clear_passages()
        for i in numbers:
            if i in working.row_of:
                working.passages.clear(working.row_of[i])
        numbers = {}
    stale: list[str] = []
    for i, held in numbers.items():
        row = working.row_of.get(i)
        if i not in wanted or i in missing or row is None:
            stale.append(i)
            continue
        expected = len(extra_passages(working.entries[row].text))
        if sorted(held) != list(range(expected)):
            stale.append(i)  # a passage missing, doubled or no embedding: all again
            working.passages.clear(row)
    if stale:
        index.delete(sorted(stale), rows=False)
    return sorted(
        i
        for i in wanted - missing
        if working.passages.count(working.row_of[i]) == 0
        and is_long(working.entries[working.row_of[i]].text)
    )


def release_free_memory() -> None:
    """Hand freed heap back to the OS after loading (glibc keeps it otherwise)."""
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to do
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def refuse_if_graph_lost(data_dir: Path, working: WorkingMemory, index: SearchIndex) -> None:
    """Refuse to open a memory whose graph is empty while its search index is not: the
    graph file was emptied, replaced or lost, and the start-up repair would delete the
    index's rows, the only other copy of the texts.

    Raises:
        DamagedStore: so; nothing was changed.
    """
    if len(working):
        return
    held = _index_holds(index)
    if held is not None:
        _refuse_lost_graph(data_dir, f"its graph holds no memories but {held}")


def cut_off_backup(data_dir: Path) -> str:
    """What to say of a data directory that is a backup stopped midway (``backup.unfinished``)."""
    return (
        f"{data_dir} is a backup that stopped midway (its copy was cut off): it is no"
        " memory; make the backup again"
    )


def refuse_if_graph_missing(data_dir: Path, embedder: Embedder) -> None:
    """Refuse to open a memory that has a search index but no graph file, as
    ``refuse_if_graph_lost`` refuses an empty graph, before anything is written: opening
    would make an empty graph file (and an index built by another model would be dropped).
    The index is only read.

    Raises:
        DamagedStore: so; nothing was changed.
    """
    from doxa.store.index import SearchIndex

    if not (data_dir / "index").is_dir():
        return
    index = SearchIndex(data_dir / "index", embedder.dim, embedder.fingerprint, read_only=True)
    if index.problem == "it has no table yet":
        return
    held = _index_holds(index)
    if held is not None:
        where = "its graph holds no memories (it has no graph file)"
        _refuse_lost_graph(data_dir, f"{where} but {held}")


def _index_holds(index: SearchIndex) -> str | None:
    """What a search index beside a graph without memories holds that may be their only
    copy (rows, or data it cannot read), in words; None when it is empty."""
    if index.problem is not None:
        return f"its search index cannot be read ({index.problem})"
    if index.count():
        return f"its search index holds {index.count()} memories"
    return None


def _refuse_lost_graph(data_dir: Path, found: str) -> NoReturn:
    raise DamagedStore(
        str(data_dir),
        f"{found}; the graph file may have been emptied, replaced or lost",
        "Nothing was changed. Put the graph file back from a backup. If the memory really is"
        " empty (everything was purged), `doxa repair --force` rebuilds the search index from"
        " the graph, dropping its rows",
    )


def _aware(moment: datetime | None) -> datetime:
    value = from_naive_utc(moment)
    assert value is not None
    return value
