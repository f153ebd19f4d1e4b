"""Nothing lost, whatever happens to the data directory: a feedback loop keeps Kùzu's pool
bounded, a damaged graph is refused before anything is changed, a damaged search index is
rebuilt from the graph, and ``check`` / ``repair`` tell and mend."""

from __future__ import annotations

import glob
import logging
import os
import subprocess
import sys
import threading
from datetime import UTC, datetime
from pathlib import Path

import kuzu
import lancedb
import numpy as np
import pytest
from calls import error, ok
from conftest import OtherEmbedder, hash_settings
from mcp.client import Client

from doxa.server.settings import Settings
from doxa.store import Memory, MemoryDraft
from doxa.store.embedder import HashEmbedder, Vectors
from doxa.store.errors import DamagedStore, MemoryStoreError
from doxa.store.health import check, repair
from doxa.store.index import SearchIndex


def opened(settings: Settings) -> Memory:
    memory = Memory.open(settings.store)
    memory.warm_up()
    return memory


def filled(settings: Settings, n: int = 30) -> list[str]:
    """A closed memory holding ``n`` notes, each in the graph and the index; their ids."""
    memory = opened(settings)
    try:
        done = memory.remember(
            [MemoryDraft(text=f"Harbour note {i}: the blue boat {i} left.") for i in range(n)],
            batch=True,
        )
        assert memory.settle(timeout=30)
    finally:
        memory.close()
    return [d.observation_id for d in done]


def index_rows(settings: Settings) -> int:
    table = lancedb.connect(str(settings.store.data_dir / "index")).open_table("observations")
    return int(table.count_rows())


def fragment(settings: Settings) -> str:
    [found] = glob.glob(str(settings.store.data_dir / "index/observations.lance/data/*.lance"))
    return found


# ---- Kùzu's pool stays bounded under feedback --------------------------------------------------


def test_a_feedback_loop_on_the_smallest_pool_never_fails(tmp_path: Path) -> None:
    # Without checkpoints this loop filled a 64 MB pool in under 250 rounds; with the
    # ranker's features on each RETURNED edge, a checkpoint found it full at ~750.
    settings = hash_settings(tmp_path / "m", buffer_pool_mb=64)
    memory = opened(settings)
    wal: list[int] = []
    try:
        for i in range(1000):
            memory.remember([MemoryDraft(text=f"Note {i} on topic {i % 37}, weather {i % 11}.")])
            out = memory.recall(f"topic {i % 37} weather", limit=10)
            ids = [r.observation_id for r in out.results]
            memory.feedback(out.recall_id, accepted=ids[:2], rejected=ids[2:4])
            wal.append(memory.graph.wal_bytes())
    finally:
        memory.close()
    assert max(wal) < 8 * 1024 * 1024
    assert not (settings.store.data_dir / "graph.wal").exists()
    assert check(settings.store).healthy


def test_a_failed_write_replaces_the_connection_and_the_next_call_works(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    graph = memory.graph
    before = graph._writer
    with monkeypatch.context() as patch:
        patch.setattr(graph, "_wrote", lambda: (_ for _ in ()).throw(AssertionError))

        def fail(_: object, rows: object) -> None:
            raise RuntimeError("Buffer manager exception: Unable to allocate memory!")

        patch.setattr("doxa.store.graph.GraphWriter.create_observations", fail)
        with pytest.raises(MemoryStoreError, match="during remember: Buffer manager"):
            memory.remember([MemoryDraft(text="Lost.")])
    assert graph._writer is not before
    [done] = memory.remember([MemoryDraft(text="Kept.")])
    assert memory.recall("Kept").results[0].observation_id == done.observation_id


# ---- a damaged graph is refused, the index untouched -------------------------------------------


@pytest.mark.parametrize("damage", ["emptied", "removed"])
def test_a_lost_graph_is_refused_and_the_index_kept(settings: Settings, damage: str) -> None:
    filled(settings)
    graph = settings.store.data_dir / "graph"
    if damage == "emptied":
        graph.write_bytes(b"")
    else:
        graph.unlink()
    memory = Memory.open(settings.store)
    try:
        with pytest.raises(DamagedStore) as refused:
            memory.warm_up()
    finally:
        memory.close()
    no_file = " (it has no graph file)" if damage == "removed" else ""
    assert f"graph holds no memories{no_file} but its search index holds 30" in str(refused.value)
    assert (damage == "removed") is not graph.exists()  # no empty graph made in its place
    assert "doxa repair --force" in refused.value.remedy
    assert index_rows(settings) == 30
    with pytest.raises(DamagedStore):
        repair(settings.store)
    assert index_rows(settings) == 30
    found = check(settings.store)
    assert not found.healthy
    if damage == "removed":  # it said the directory held no memory yet
        assert found.problems[0] == (
            "no graph, but the search index holds 30 rows: the graph was lost or moved; put it"
            " back from a backup (the index holds the texts)"
        )


def test_an_unreadable_graph_is_refused_naming_the_file(settings: Settings) -> None:
    filled(settings)
    with (settings.store.data_dir / "graph").open("r+b") as f:
        f.write(os.urandom(8192))
    memory = Memory.open(settings.store)
    try:
        with pytest.raises(DamagedStore, match=r"graph database \(graph\) cannot be read"):
            memory.warm_up()
    finally:
        memory.close()
    assert index_rows(settings) == 30
    health = check(settings.store)
    assert any("cannot be read" in p for p in health.problems)


# ---- a damaged index is rebuilt from the graph -------------------------------------------------


@pytest.mark.parametrize("damage", ["missing", "short", "overwritten"])
def test_a_damaged_index_fragment_is_rebuilt_from_the_graph(
    settings: Settings, damage: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = filled(settings)
    path = fragment(settings)
    if damage == "missing":
        os.remove(path)
    elif damage == "short":
        os.truncate(path, os.path.getsize(path) // 2)
    else:
        with open(path, "r+b") as f:
            f.seek(200)
            f.write(os.urandom(os.path.getsize(path) // 2))
    assert not check(settings.store).healthy
    memory = opened(settings)
    try:
        [found, *_] = memory.recall("the blue boat 7 left").results
        stats = memory.stats()
    finally:
        memory.close()
    assert "rebuilding it from the graph" in caplog.text
    assert found.observation_id == ids[7] and found.scores["vector"] > 0.5
    assert stats["IndexRows"] == 30
    assert check(settings.store).healthy


def test_vectors_that_are_not_embeddings_are_embedded_again(settings: Settings) -> None:
    ids = filled(settings, 5)
    table = lancedb.connect(str(settings.store.data_dir / "index")).open_table("observations")
    table.update(where=f"id = '{ids[2]}'", values={"vector": [3.0] * 384})
    health = check(settings.store)
    assert health.index["not_unit"] == 1 and not health.healthy
    memory = opened(settings)
    try:
        [found, *_] = memory.recall("Harbour note 2: the blue boat 2 left.").results
    finally:
        memory.close()
    assert found.observation_id == ids[2]
    assert found.scores["vector"] == pytest.approx(1.0, abs=0.03)  # the int8 scan's rounding
    assert check(settings.store).healthy


# ---- check and repair --------------------------------------------------------------------------


def test_check_reports_counts_and_orphans_without_changing_anything(settings: Settings) -> None:
    ids = filled(settings, 4)
    index = SearchIndex(settings.store.data_dir / "index", 384, HashEmbedder(384).fingerprint)
    index.delete([ids[0]])
    index.add(["obs_unknown"], ["a stray row"], np.eye(1, 384, dtype=np.float32))
    del index
    health = check(settings.store)
    assert health.graph["Observation"] == 4 and health.graph["wal_bytes"] == 0
    assert health.index == {"rows": 4, "not_unit": 0, "foreign": 0}
    assert health.orphans == {"index_rows_unknown": 1, "observations_unindexed": 1}
    assert check(settings.store).orphans == health.orphans  # read-only: nothing repaired
    repaired = repair(settings.store)
    assert repaired.healthy, repaired.problems
    assert repaired.orphans == {"index_rows_unknown": 0, "observations_unindexed": 0}


def test_check_refuses_a_directory_in_use(memory: Memory, settings: Settings) -> None:
    memory.stats()
    with pytest.raises(MemoryStoreError, match=r"in use by another process|already open"):
        check(settings.store)


def test_repair_force_rebuilds_the_index_of_an_empty_graph(settings: Settings) -> None:
    filled(settings, 3)
    (settings.store.data_dir / "graph").write_bytes(b"")
    health = repair(settings.store, force=True)
    assert health.healthy, health.problems
    assert index_rows(settings) == 0


@pytest.mark.anyio
async def test_an_unforeseen_failure_is_a_tool_error_naming_it(
    memory_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_: object, **__: object) -> None:
        raise KeyError("obs_gone")

    monkeypatch.setattr(Memory, "feedback", broken)
    done = await ok(memory_client, "remember", text="Something to judge.")
    found = await ok(memory_client, "recall", query="something to judge")
    message = await error(
        memory_client, "feedback", recall_id=found["recall_id"], accepted=[done["observation_id"]]
    )
    assert "failed unexpectedly during this call (KeyError: 'obs_gone')" in message
    assert "doxa check" in message


def test_a_recall_query_with_an_unpaired_surrogate_is_refused_by_the_store(
    memory: Memory,
) -> None:
    with pytest.raises(MemoryStoreError, match="query holds an unpaired surrogate"):
        memory.recall("boat \ud800")
    memory.recall("boat")  # the recorder was not broken
    memory.close()  # and closing (which flushes the recorder) does not fail


def test_a_checkpoint_that_finds_the_page_cache_full_at_its_ceiling_stops_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Kùzu's next write after such a checkpoint crashed the process (a soak, 64 MB): at the
    ceiling, writes are refused instead, naming the setting; reads go on."""
    memory = opened(hash_settings(tmp_path / "m", buffer_pool_mb=64, buffer_pool_max_mb=64))
    [kept] = memory.remember([MemoryDraft(text="Written before the cache ran out.")])
    graph = memory.graph
    writer = graph._writer
    real = writer.execute

    def full_at_checkpoint(query: object, *args: object) -> object:
        if query == "CHECKPOINT":
            raise RuntimeError(
                "Buffer manager exception: Unable to allocate memory! The buffer pool is full"
                " and no memory could be freed!"
            )
        return real(query, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(writer, "execute", full_at_checkpoint)
    assert graph.checkpoint() is False
    with pytest.raises(MemoryStoreError) as refused:
        memory.remember([MemoryDraft(text="Not written.")])
    assert "buffer_pool_max_mb" in str(refused.value) and "restart" in str(refused.value)
    found = memory.recall("written before the cache ran out", limit=5).results
    assert [r.observation_id for r in found] == [kept.observation_id]
    assert memory.graph.observation_count() == 1
    memory.close()


def test_a_page_cache_found_full_grows_and_no_call_fails(tmp_path: Path) -> None:
    """Real Kùzu with a cache far too small (16 MB, below what the settings accept): the
    graph reopens with a larger one, the write that met the full cache runs again, and
    every acknowledged memory is there, also after a restart."""
    settings = hash_settings(tmp_path / "m")
    tiny = settings.store.model_copy(update={"buffer_pool_mb": 16})
    memory = Memory.open(tiny)
    memory.warm_up()
    kept: list[str] = []
    try:
        for i in range(300):
            [done] = memory.remember(
                [MemoryDraft(text=f"Note {i} on topic {i % 37}, weather {i % 11}.")]
            )
            kept.append(done.observation_id)
            out = memory.recall(f"topic {i % 37} weather", limit=10)
            ids = [r.observation_id for r in out.results]
            memory.feedback(out.recall_id, accepted=ids[:2], rejected=ids[2:4])
            if memory.graph.pool_growths and i >= 20:
                break
        assert memory.graph.pool_growths >= 1
        assert memory.graph.pool_mb >= 32
    finally:
        memory.close()
    again = opened(settings)
    try:
        assert again.graph.observation_count() == len(kept)
    finally:
        again.close()


def test_each_opening_sizes_the_page_cache_to_the_graph_file(tmp_path: Path) -> None:
    """Within the ceiling: a checkpoint rewrites relationship lists that grow with the
    memory, so a cache smaller than the file is where "buffer pool is full" came from."""
    from doxa.store.graph import Graph

    filled(hash_settings(tmp_path / "m"), n=50)
    path = tmp_path / "m" / "graph"
    size_mb = -(-path.stat().st_size // (1 << 20))
    graph = Graph(path, buffer_pool_bytes=1 << 20, buffer_pool_max_bytes=1 << 30)
    try:
        # The opening itself may find the file's size too small, and double it.
        assert graph.pool_mb in (size_mb, 2 * size_mb)
        assert graph.observation_count() == 50
    finally:
        graph.close()
    with pytest.raises(MemoryStoreError, match="buffer_pool_max_mb"):
        Graph(path, buffer_pool_bytes=1 << 20, buffer_pool_max_bytes=1 << 20)


def test_the_graph_reopens_after_its_checkpoints_while_reads_and_writes_go_on(
    tmp_path: Path,
) -> None:
    """Kùzu keeps native memory per checkpoint until the database closes: the graph reopens
    itself every ``reopen_every`` checkpoints, and no call on other threads notices."""
    import threading

    settings = hash_settings(tmp_path / "m", checkpoint_every=2, reopen_every=3)
    memory = opened(settings)
    failures: list[BaseException] = []
    stop = threading.Event()

    def reading() -> None:
        while not stop.is_set():
            try:
                memory.graph.observation_count()
                memory.recall("note weather", limit=5)
            except BaseException as error:  # collected for the assertion below
                failures.append(error)
                return

    readers = [threading.Thread(target=reading) for _ in range(2)]
    try:
        for thread in readers:
            thread.start()
        for i in range(40):
            memory.remember([MemoryDraft(text=f"Note {i}, weather {i % 5}.")])
            out = memory.recall(f"weather {i % 5}", limit=5)
            ids = [r.observation_id for r in out.results]
            memory.feedback(out.recall_id, accepted=ids[:1], rejected=ids[1:3])
            memory.graph.checkpoint()
    finally:
        stop.set()
        for thread in readers:
            thread.join()
        reopenings = memory.graph.reopenings
        memory.close()
    assert failures == []
    assert reopenings >= 10
    again = opened(settings)
    try:
        assert again.graph.observation_count() == 40
        assert len(again.graph.judgements()) >= 40
    finally:
        again.close()


def test_long_reads_come_in_pages_and_training_reads_the_latest_recalls(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kùzu holds a whole result in its page cache: every judged recall's vector in one
    # result filled it at 13,000 judged recalls. Reads of them are paged, and a retrain
    # reads only the most recent ones.
    import doxa.store.graph as graph_module

    memory.remember([MemoryDraft(text=f"Quay note {i}: crane {i} idle.") for i in range(12)])
    recalls = []
    for i in range(5):
        out = memory.recall(f"crane {i} quay", limit=4)
        ids = [r.observation_id for r in out.results]
        memory.feedback(out.recall_id, accepted=ids[:1], rejected=ids[1:3])
        recalls.append(out.recall_id)
    monkeypatch.setattr(graph_module, "_PAGE", 4)
    graph = memory.graph
    assert len(graph.judgements()) == 15 and len(graph.judged_results()) == 15
    assert {j["recall_id"] for j in graph.judged_results()} == set(recalls)
    assert all(j["features"] for j in graph.judged_results())
    latest = graph.training_examples(2, memory.embedder.fingerprint)
    assert [r for r, _, _ in latest] == [recalls[3]] * 3 + [recalls[4]] * 3
    assert sum(accepted for _, _, accepted in latest) == 2


def test_a_new_graph_whose_schema_does_not_fit_the_page_cache_grows_it(tmp_path: Path) -> None:
    """Creating the schema fills a tiny cache: the migration is rolled back and runs again
    in a larger one; at the ceiling the error names the setting to raise."""
    from doxa.store.graph import Graph

    graph = Graph(
        tmp_path / "a" / "graph", buffer_pool_bytes=1 << 20, buffer_pool_max_bytes=1 << 30
    )
    try:
        assert graph.pool_growths >= 1
        assert graph.observation_count() == 0
    finally:
        graph.close()
    with pytest.raises(MemoryStoreError, match="buffer_pool_max_mb"):
        Graph(tmp_path / "b" / "graph", buffer_pool_bytes=1 << 20, buffer_pool_max_bytes=2 << 20)


def test_judged_queries_survive_a_checkpoint_and_a_restart(settings: Settings) -> None:
    # Kùzu 0.11.3 read a FLOAT[] list written after a checkpoint back as zeros once the next
    # checkpoint ran, when the lists before were mostly zeros (as hash-embedded queries are):
    # after a restart those queries' feedback was gone (schema migration 8).
    memory = opened(settings)
    try:
        words = [f"w0x{i} w1x{i} w2x{i}" for i in range(32)]
        memory.remember([MemoryDraft(text=text) for text in words])
        for i, query in enumerate(words):
            if i == 24:  # before it, 24 judged queries; 8 after
                assert memory.graph.checkpoint()
            found = memory.recall(query, limit=3)
            memory.feedback(found.recall_id, accepted=[found.results[0].observation_id])
        judged = memory._working.judged
        queries = judged._queries[: judged._n_queries].copy()
    finally:
        memory.close()
    again = opened(settings)
    try:
        judged = again._working.judged
        reloaded = judged._queries[: judged._n_queries].copy()
    finally:
        again.close()
    assert len(queries) == len(reloaded) == 32
    # The same vectors (loaded in the order of their recalls' ids), none of them zeros.
    assert sorted(q.tobytes() for q in reloaded) == sorted(q.tobytes() for q in queries)
    assert np.linalg.norm(reloaded, axis=1).min() > 0.99


@pytest.mark.parametrize("before", [5, 43])
def test_a_query_judged_after_a_checkpoint_keeps_its_vector(
    settings: Settings, before: int
) -> None:
    # Kùzu 0.11.3 garbled STRING values set (SET) on rows a checkpoint had written without
    # one: a recall recorded, checkpointed, then judged, then one more recall and the
    # checkpoints of an idle moment and of closing, and every judged query read another's
    # vector (schema migration 14). Seen through MCP in about one session in four.
    memory = opened(settings)
    try:
        words = [f"w0x{i} w1x{i} w2x{i}" for i in range(before + 2)]
        memory.remember([MemoryDraft(text=text) for text in words])
        for query in words[:before]:
            found = memory.recall(query, limit=3)
            memory.feedback(found.recall_id, accepted=[found.results[0].observation_id])
        late = memory.recall(words[before], limit=3)
        memory._recalls.record(memory.graph)  # what the recorder thread does within 0.25 s
        assert memory.graph.checkpoint()
        memory.feedback(late.recall_id, accepted=[late.results[0].observation_id])
        assert memory.graph.checkpoint()
        memory.recall(words[before + 1], limit=3)  # recorded at close, then checkpointed
    finally:
        memory.close()
    again = opened(settings)
    try:
        kept = {rid: vector for rid, vector, *_ in again.graph.judgements()}
        queries = {r["recall_id"]: r["query"] for r in again.judgements()}
    finally:
        again.close()
    assert len(kept) == before + 1
    embedder = HashEmbedder()
    for rid, vector in kept.items():
        assert np.array_equal(vector, embedder.embed([queries[rid]])[0]), rid


@pytest.mark.parametrize("before", [5, 43])
def test_a_summary_written_after_a_checkpoint_keeps_its_text(tmp_path: Path, before: int) -> None:
    # The same garbling (schema migration 15): topics created, a checkpoint, one's summary
    # written, a checkpoint, one more topic, and every summary read another's.
    from doxa.store.graph import Graph

    at = datetime(2026, 1, 1, tzinfo=UTC)
    texts = {f"T{i}": f"T{i}: likes thing number {i} (1 fact, 1 agent)" for i in range(before + 1)}
    graph = Graph(tmp_path / "graph")
    try:
        for name, text in list(texts.items())[:before]:
            with graph.write() as w:
                w.ensure_topics([name])
            with graph.write() as w:
                w.summarize([(name, text, False)], at)
        with graph.write() as w:
            w.ensure_topics([f"T{before}"])
        assert graph.checkpoint()
        with graph.write() as w:
            w.summarize([(f"T{before}", texts[f"T{before}"], False)], at)
        assert graph.checkpoint()
        with graph.write() as w:
            w.ensure_topics(["one more"])
    finally:
        graph.close()
    again = Graph(tmp_path / "graph")
    try:
        written = again.topic_summaries(list(texts))
    finally:
        again.close()
    assert {name: text for name, (text, _) in written.items()} == texts


def test_a_judged_query_that_embeds_to_zeros_is_kept_once(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # "???" holds no word the hash embedder knows: its vector is zeros, teaches nothing, and
    # is no vector to embed again at every start (doxa check called it a problem forever).
    memory = opened(settings)
    try:
        memory.remember([MemoryDraft(text="The bridge is closed.", topics=["bridge"])])
        found = memory.recall("???", topics=["bridge"])
        memory.feedback(found.recall_id, accepted=[found.results[0].observation_id])
    finally:
        memory.close()
    assert check(settings.store).graph["judged_queries_to_embed"] == 0
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        opened(settings).close()
    assert "embedded again" not in caplog.text


def judge_crane(settings: Settings) -> str:
    """A memory with one judged recall ("harbour crane"); the id it accepted."""
    memory = opened(settings)
    try:
        memory.remember([MemoryDraft(text=t) for t in ("The harbour crane is red.", "Boats.")])
        found = memory.recall("harbour crane")
        answer = found.results[0].observation_id
        memory.feedback(found.recall_id, accepted=[answer])
    finally:
        memory.close()
    return answer


@pytest.mark.parametrize("changed", ["size", "model"])
def test_a_new_embedding_model_embeds_the_judged_queries_again(
    settings: Settings, changed: str, caplog: pytest.LogCaptureFixture
) -> None:
    # A judged query's vector is only a likeness to compare under the model that embedded it:
    # another size failed the whole start ("could not broadcast input array"), another model
    # of the same size compared unrelated spaces.
    answer = judge_crane(settings)
    embedder = HashEmbedder(256) if changed == "size" else OtherEmbedder()
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        again = Memory.open(settings.store, embedder=embedder)
        again.warm_up()
    try:
        [(_, vector, fingerprint, *_)] = again.graph.judgements()
        found = again.recall("harbour crane")
    finally:
        again.close()
    assert "1 judged queries embedded again" in caplog.text
    assert fingerprint == embedder.fingerprint
    assert np.array_equal(vector, embedder.embed(["harbour crane"])[0])
    assert found.results[0].observation_id == answer
    assert found.results[0].scores["feedback"] > 0


def test_a_damaged_judged_query_is_embedded_again(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    judge_crane(settings)
    database = kuzu.Database(str(Path(settings.store.data_dir) / "graph"))
    connection = kuzu.Connection(database)
    connection.execute("MATCH (q:JudgedQuery) SET q.vector = 'not a vector!'")
    connection.close()
    database.close()
    health = check(settings.store)
    assert health.graph["judged_queries_to_embed"] == 1
    assert "1 judged queries' vectors are another embedding model's or not kept" in (
        " ".join(health.problems)
    )
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        again = opened(settings)
    try:
        [(_, vector, *_)] = again.graph.judgements()
        found = again.recall("harbour crane")
    finally:
        again.close()
    assert "1 judged queries embedded again" in caplog.text
    assert np.array_equal(vector, HashEmbedder().embed(["harbour crane"])[0])
    assert found.results[0].scores["feedback"] > 0
    assert check(settings.store).graph["judged_queries_to_embed"] == 0


def test_a_fact_an_earlier_version_reopened_beside_a_later_one_is_ended_at_start(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # Before forget ended a chain's first fact where the next remaining one began, retracting
    # Bonn (between Athens and Cork) left Athens current for good: two homes, a clash with
    # itself. Such a memory, upgraded, is mended at its next start.
    from doxa.store.drafts import FactDraft

    def lives(city: str, since: str) -> MemoryDraft:
        return MemoryDraft(text=f"Jo: {city}.", fact=FactDraft("Jo", "lives in", city, since))

    memory = opened(settings)
    try:
        athens, bonn, cork = (
            r.observation_id
            for r in memory.remember(
                [
                    lives("Athens", "2024-01-01T00:00:00Z"),
                    lives("Bonn", "2024-03-01T00:00:00Z"),
                    lives("Cork", "2024-06-01T00:00:00Z"),
                ]
            )
        )
        at = datetime(2024, 12, 1, tzinfo=UTC)

        def as_before(w: object) -> None:  # what that forget wrote: Athens with no end
            w.retract(bonn, at)  # type: ignore[attr-defined]
            w.end_validity([(athens, None)])  # type: ignore[attr-defined]

        memory.graph.transact("an earlier version's forget", as_before)
    finally:
        memory.close()
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        again = opened(settings)
    try:
        now = again.recall("", subject="Jo", predicate="lives in").results
        cited = again.evidence(athens)
        clashes = again.conflicts()
    finally:
        again.close()
    assert [r.observation_id for r in now] == [cork]
    assert cited["superseded_by"] == [cork]
    assert cited["valid_until"] == datetime(2024, 6, 1)  # as the graph keeps it: naive UTC
    assert clashes["count"] == 0
    assert "ended 1 facts that held beside a later fact" in caplog.text


def test_a_start_changes_no_fact_this_version_wrote(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # The start's mending of reopened facts also ended alice's Paris here, which sharing
    # bob's Berlin in the same batch had left current: recall answered otherwise after a
    # restart. It mends only facts a retraction reopened.
    from doxa.store.drafts import FactDraft

    def lives(city: str, agent: str) -> MemoryDraft:
        said = f"Xena lives in {city}."
        return MemoryDraft(text=said, agent=agent, fact=FactDraft("Xena", "lives in", city))

    memory = opened(settings)
    try:
        memory.remember([lives("Paris", "alice"), lives("Berlin", "bob"), lives("Berlin", "alice")])
        before = [
            r.observation_id for r in memory.recall("", subject="Xena", agent="alice").results
        ]
    finally:
        memory.close()
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        again = opened(settings)
    try:
        after = [r.observation_id for r in again.recall("", subject="Xena", agent="alice").results]
    finally:
        again.close()
    assert after == before
    assert "held beside a later fact" not in caplog.text


def test_a_link_made_before_migration_16_counts_from_the_later_of_its_facts(
    settings: Settings,
) -> None:
    # Links made before supersessions had a record time of their own count from the time
    # their facts were both recorded: a late older fact's from its own, not from the newer
    # fact's, which came before it (the timeline had it superseded before it was told).
    from doxa.store.drafts import FactDraft

    def lives(city: str, since: str) -> MemoryDraft:
        return MemoryDraft(text=f"Eve: {city}.", fact=FactDraft("Eve", "lives in", city, since))

    memory = opened(settings)
    try:
        memory.remember([lives("Lisbon", "2024-09-01T00:00:00Z")])
        [late] = memory.remember([lives("Berlin", "2024-03-01T00:00:00Z")])
        memory.graph.transact(  # as a version before migration 16 wrote it
            "an earlier version's link",
            lambda w: w.run("MATCH ()-[s:SUPERSEDES]->() SET s.known = NULL", {}),
        )
    finally:
        memory.close()
    again = opened(settings)
    try:
        told = again.evidence(late.observation_id)["recorded_at"]
        events = again.about("Eve")["timeline"]
    finally:
        again.close()
    [ended] = [e for e in events if e["event"] == "superseded"]
    assert ended["recorded"] == told.replace(tzinfo=UTC)


_PURGE_THEN_DIE = """
import os, sys
from doxa.server.settings import load_settings
from doxa.store import Memory, MemoryDraft
from doxa.store.drafts import FactDraft, SupportDraft

settings = load_settings(environ={}, overrides={
    ("store", "data_dir"): sys.argv[1], ("store", "embedding", "kind"): "hash"})
memory = Memory.open(settings.store)
memory.warm_up()
kept = memory.remember([
    MemoryDraft(text="Ana lives in Rome.", fact=FactDraft("Ana", "lives in", "Rome")),
    MemoryDraft(text="A ticket to Rome.", topics=["ana"]),
    MemoryDraft(text="Track 1", record={"type": "Track", "fields": {"album_id": 176}}),
])
gone = memory.remember([MemoryDraft(
    text="Ana lives in Oslo.", topics=["ana", "oslo"], episode="trip",
    fact=FactDraft("Ana", "lives in", "Oslo"),
    supports=[SupportDraft(kept[0].belief_id, "0.5")], contradicts=[kept[1].observation_id],
    record={"type": "Track", "fields": {"album_id": 176, "name": "Oslo"}})])[0]
memory.remember([MemoryDraft(text="Ana lives in Oslo.", agent="bob",
                             fact=FactDraft("Ana", "lives in", "Oslo"))])
memory.remember([MemoryDraft(text="Oslo is far.", supports=[SupportDraft(gone.belief_id, "1")])])
found = memory.recall("Ana Oslo", limit=5)
memory.feedback(found.recall_id, accepted=[r.observation_id for r in found.results[:2]])
memory.settle(timeout=30)
memory.graph.checkpoint()
memory.forget(gone.observation_id, mode="purge")
print(" ".join(k.observation_id + ":" + k.belief_id for k in kept), flush=True)
os._exit(0)  # killed before the next checkpoint: the purge is in the write-ahead log only
"""


def test_a_purge_replayed_after_a_kill_leaves_every_other_memory_whole(tmp_path: Path) -> None:
    # Kùzu replayed a DETACH DELETE from its log wrongly: after a kill, another belief's
    # link to its observation was gone, one way round.
    settings = hash_settings(tmp_path / "m")
    done = subprocess.run(
        [sys.executable, "-c", _PURGE_THEN_DIE, str(settings.store.data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    kept = [pair.split(":") for pair in done.stdout.split()]
    found = check(settings.store)
    assert not [p for p in found.problems if "search index" not in p], found.problems
    memory = opened(settings)
    try:
        for observation_id, belief_id in kept:
            assert memory.evidence(belief_id)["id"] == observation_id
        mine = memory.recall("", agent="default", limit=10).results
    finally:
        memory.close()
    assert {o for o, _ in kept} < {r.observation_id for r in mine}


_TELL_THEN_DIE = """
import os, sys
from doxa.server.settings import load_settings
from doxa.store import Memory, MemoryDraft
from doxa.store.graph import Graph

Graph.checkpoint_if_due = lambda self, idle_s=1.0: False  # the log keeps what follows
settings = load_settings(environ={}, overrides={
    ("store", "data_dir"): sys.argv[1], ("store", "embedding", "kind"): "hash"})
memory = Memory.open(settings.store)
memory.warm_up()
[told] = memory.remember([MemoryDraft(text="Herons nest by the weir.")])
memory.settle(timeout=30)  # in the search index too
print(told.observation_id, flush=True)
os._exit(0)  # killed before a checkpoint: the write is in the write-ahead log only
"""


def test_a_log_kuzu_crashes_replaying_is_refused_and_repair_sets_it_aside(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kùzu 0.11.3 can crash (SIGSEGV) replaying a log left by a kill during a checkpoint:
    # every command died with it, check and repair too. Such a crash stands in here for it.
    from doxa.store import graph

    kept = filled(settings, 3)
    done = subprocess.run(
        [sys.executable, "-c", _TELL_THEN_DIE, str(settings.store.data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    lost = done.stdout.strip()
    log = settings.store.data_dir / "graph.wal"
    assert log.stat().st_size > 0
    # A log Kùzu replays is not set aside: that would lose its writes for nothing.
    with pytest.raises(DamagedStore, match="write-ahead log replays"):
        repair(settings.store, set_aside_log=True)
    assert log.stat().st_size > 0 and not (settings.store.data_dir / "set-aside").exists()
    # Crashes while the log is there.
    crash = "import os, sys\nif os.path.exists(sys.argv[1] + '.wal'): os.kill(os.getpid(), 11)\n"
    monkeypatch.setattr(graph, "_PROBE", crash)
    memory = Memory.open(settings.store)
    try:
        with pytest.raises(DamagedStore, match=r"Kùzu crashes \(signal 11\) replaying") as caught:
            memory.warm_up()
    finally:
        memory.close()
    assert "`doxa repair --set-aside-log`" in caught.value.remedy
    assert any("replaying its graph's write-ahead log" in p for p in check(settings.store).problems)
    with pytest.raises(DamagedStore):
        repair(settings.store)
    assert log.exists()  # nothing was changed
    health = repair(settings.store, set_aside_log=True)
    assert health.healthy, health.problems
    folder = Path(str(health.set_aside["folder"]))
    assert health.set_aside["lost"] == 1 and not log.exists()
    assert (folder / "graph.wal").exists()
    saved = (folder / "lost.jsonl").read_text(encoding="utf-8")
    assert saved == f'{{"observation_id": "{lost}", "text": "Herons nest by the weir."}}\n'
    memory = opened(settings)
    try:
        found = {r.observation_id for r in memory.recall("", agent="default", limit=10).results}
    finally:
        memory.close()
    assert found == set(kept)


def test_a_graph_file_kuzu_crashes_opening_is_a_problem_check_names(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A damaged graph file (no log) crashed doxa check with the process.
    from doxa.store import graph

    filled(settings, 3)
    monkeypatch.setattr(graph, "_PROBE", "import os, signal\nos.kill(os.getpid(), 11)\n")
    [problem] = check(settings.store).problems
    assert problem.startswith("Kùzu crashes (signal 11) opening its graph database (graph)")


def test_a_graph_this_user_cannot_write_is_no_damage_to_restore_over(settings: Settings) -> None:
    # Made immutable, the graph was called unreadable and a backup put over it, and check
    # called the directory healthy.
    filled(settings, 3)
    graph_file = settings.store.data_dir / "graph"
    if subprocess.run(["chattr", "+i", str(graph_file)], capture_output=True).returncode:
        pytest.skip("chattr +i is not allowed here")
    try:
        memory = Memory.open(settings.store)
        try:
            with pytest.raises(MemoryStoreError) as caught:
                memory.warm_up()
        finally:
            memory.close()
        problems = check(settings.store).problems
    finally:
        subprocess.run(["chattr", "-i", str(graph_file)], check=True)
    assert not isinstance(caught.value, DamagedStore)
    assert "cannot be opened for writing" in str(caught.value)
    assert "backup" not in str(caught.value)
    assert problems == [
        "the graph database (graph) cannot be opened for writing (Operation not permitted): no"
        " server can serve it; let this user write it and its directory"
    ]


def test_check_names_an_owner_lock_that_is_no_file(settings: Settings) -> None:
    # It printed a traceback.
    filled(settings, 3)
    lock = settings.store.data_dir / "owner.lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    assert check(settings.store).problems == [
        f"{lock} is not a file: no process can own the memory; remove it"
    ]


class _HeldEmbedder(HashEmbedder):
    """The hash embedder, held while ``gate`` is clear (a slow model still embedding)."""

    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()

    def embed(self, texts: list[str]) -> Vectors:
        assert self.gate.wait(30)
        return super().embed(texts)


@pytest.mark.parametrize("mode", ["retract", "purge"])
def test_forgetting_a_memory_whose_embedding_has_not_landed_succeeds(
    settings: Settings, mode: str
) -> None:
    """A forget right after a large batch, before the model had embedded its last memory
    (beyond the vectors' room): the graph committed, then clearing the vector raised, and the
    caller was told the forget failed (a purge retried answered that no such id existed)."""
    held = _HeldEmbedder()
    memory = Memory.open(settings.store, embedder=held)
    memory.warm_up()
    try:
        held.gate.clear()
        done = memory.remember(
            [MemoryDraft(text=f"Harbour note {i}: the blue boat {i} left.") for i in range(1500)],
            batch=True,
        )
        last = done[-1].observation_id
        forgotten = memory.forget(last, mode)
        assert forgotten.already is False
        assert memory.forget(last, mode).already is True
        held.gate.set()
        assert memory.settle(timeout=60)
        found = memory.recall("Harbour note 1499: the blue boat 1499 left.", limit=3).results
        assert last not in [r.observation_id for r in found]
        assert memory.stats()["IndexRows"] == 1499
    finally:
        held.gate.set()
        memory.close()


#: Stands in for Kùzu's refusal, read-only, of a log whose checkpoint was cut short after
#: writing its shadow pages (seen about once in 60 kills of a large memory, never on demand):
#: a read-only probe refuses while ``graph.shadow`` is there; one for writing opens.
_SHADOW_PROBE = (
    "import os, sys, kuzu\n"
    "if sys.argv[3] == 'ro' and os.path.exists(sys.argv[1] + '.shadow'):\n"
    '    sys.exit("RuntimeError: Couldn\'t replay shadow pages under read-only mode.")\n'
    "kuzu.Database(sys.argv[1], buffer_pool_size=int(sys.argv[2]), read_only=sys.argv[3] == 'ro')\n"
)


def test_a_log_only_an_opening_for_writing_replays_is_not_set_aside(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Such a log replays at the next start, which keeps its writes: it was taken for one
    Kùzu cannot replay, and ``repair --set-aside-log`` set it aside (its writes with it). Now
    it is replayed on a copy, which opens, and the repair refuses, changing nothing."""
    from doxa.store import graph

    filled(settings, 3)
    subprocess.run(
        [sys.executable, "-c", _TELL_THEN_DIE, str(settings.store.data_dir)],
        capture_output=True,
        timeout=120,
        check=True,
    )
    data_dir = settings.store.data_dir
    (data_dir / "graph.shadow").write_bytes(b"")
    monkeypatch.setattr(graph, "_PROBE", _SHADOW_PROBE)
    pool = settings.store.buffer_pool_mb << 20
    refusal = graph._probe(data_dir / "graph", pool, read_only=True)
    assert isinstance(refusal, str) and graph.needs_writing_to_replay(refusal)
    assert graph.opens(data_dir / "graph", pool) is None
    with pytest.raises(DamagedStore, match="write-ahead log replays"):
        repair(settings.store, set_aside_log=True)
    assert (data_dir / "graph.wal").stat().st_size > 0 and (data_dir / "graph.shadow").exists()
    assert not (data_dir / "set-aside").exists()
