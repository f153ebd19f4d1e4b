"""The ``Memory`` service: exact values through Kùzu, persistence across restarts, the two
stores kept in step (and repaired after a crash between them), and serialized writes."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import kuzu
import lancedb
import numpy as np
import pyarrow as pa
import pytest
from calls import LATER, ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings, load_settings
from doxa.store import FactDraft, Memory, MemoryDraft, SupportDraft
from doxa.store.embedder import HashEmbedder
from doxa.store.errors import StorageError
from doxa.store.graph import GraphWriter
from doxa.store.index import SearchIndex
from doxa.store.settings import StoreSettings

QUERY = "ferry timetable"


def lance_table(settings: Settings) -> Any:
    """The search index's LanceDB table, opened behind the memory's back."""
    return lancedb.connect(str(Path(settings.store.data_dir) / "index")).open_table("observations")


def index_ids(settings: Settings) -> set[str]:
    return {str(i) for i in lance_table(settings).to_arrow().column("id").to_pylist()}


def reopen(settings: Settings) -> Memory:
    memory = Memory.open(settings.store)
    memory.warm_up()
    return memory


# ---- exact values through Kùzu ----------------------------------------------------------------


@pytest.mark.parametrize(
    "given", ["0.1", 0.1, "0.123456789012345678", "1", "0", "0.0000001", 0.30000000000000004]
)
def test_confidence_round_trips_through_kuzu_exactly(settings: Settings, given: object) -> None:
    expected = Decimal(repr(given)) if isinstance(given, float) else Decimal(str(given))
    memory = reopen(settings)
    try:
        [done] = memory.remember([MemoryDraft(text="A measured belief.", confidence=given)])
        stored = memory.evidence(done.observation_id)["confidence"]
        before = memory.recall("measured belief").results[0].confidence
    finally:
        memory.close()
    memory = reopen(settings)
    try:
        after = memory.recall("measured belief").results[0].confidence
        at_least = memory.recall("measured belief", min_confidence=str(expected)).results
        above = (
            memory.recall("measured belief", min_confidence=expected + Decimal("1e-18")).results
            if expected < 1
            else []
        )
    finally:
        memory.close()
    assert Decimal(stored) == expected
    assert isinstance(before, Decimal)
    assert isinstance(after, Decimal)
    assert before == expected
    assert after == expected
    assert [r.observation_id for r in at_least] == [done.observation_id]
    assert above == []


def test_support_weight_round_trips_exactly(settings: Settings) -> None:
    memory = reopen(settings)
    try:
        [belief] = memory.remember([MemoryDraft(text="The bridge is closed.", agent="scout")])
        memory.remember(
            [
                MemoryDraft(
                    text="A sign says so.",
                    agent="scout",
                    supports=[SupportDraft(belief.belief_id, 0.6)],
                )
            ]
        )
    finally:
        memory.close()
    memory = reopen(settings)
    try:
        [evidence] = memory.evidence(belief.belief_id)["evidence"]
    finally:
        memory.close()
    assert Decimal(evidence["weight"]) == Decimal("0.6")
    assert Decimal(evidence["confidence"]) == Decimal("1")


def test_times_are_stored_in_utc_and_returned_aware(settings: Settings) -> None:
    memory = reopen(settings)
    try:
        [done] = memory.remember(
            [MemoryDraft(text="Tea at half past four.", observed_at="2024-05-01T16:30:00+02:00")]
        )
        before = memory.recall("tea").results[0].observed_at
    finally:
        memory.close()
    memory = reopen(settings)
    try:
        after = memory.recall("tea").results[0].observed_at
        stored = memory.evidence(done.observation_id)["observed_at"]
    finally:
        memory.close()
    moment = datetime(2024, 5, 1, 14, 30, tzinfo=UTC)
    assert before == after == moment
    assert after.tzinfo is not None
    assert after.utcoffset() == moment.utcoffset()
    assert stored.replace(tzinfo=UTC) == moment


def test_the_smallest_allowed_page_cache_can_cite_a_superseded_fact(settings: Settings) -> None:
    # The smallest pool the settings accept (below it, Kùzu's own tables leave no room).
    smallest = StoreSettings.model_json_schema()["properties"]["buffer_pool_mb"]["minimum"]
    small = settings.store.model_copy(update={"buffer_pool_mb": smallest})
    memory = Memory.open(small)
    memory.warm_up()
    try:
        [paris] = memory.remember(
            [
                MemoryDraft(
                    text="Alice lives in Paris.",
                    observed_at="2024-01-01",
                    fact=FactDraft("Alice", "lives in", "Paris"),
                )
            ]
        )
        [berlin] = memory.remember(
            [
                MemoryDraft(
                    text="Alice lives in Berlin.",
                    observed_at="2024-06-01",
                    fact=FactDraft("Alice", "lives in", "Berlin"),
                )
            ]
        )
        chain = memory.evidence(paris.observation_id)["supersession_chain"]
    finally:
        memory.close()
    assert [link["observation_id"] for link in chain] == [berlin.observation_id]


@pytest.mark.anyio
async def test_tools_return_times_as_utc_iso_with_a_z(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            text="Tea at half past four.",
            observed_at="2024-05-01T11:30:00-03:00",
            fact={
                "subject": "tea",
                "predicate": "served at",
                "object": "16:30",
                "valid_from": "2024-05-01T16:30:00+02:00",
                "valid_until": "2024-05-02",
            },
        )
        found = await ok(client, "recall", query="tea", as_of="2024-05-01T15:00:00Z", explain=True)
        cited = await ok(client, "cite_evidence", id=done["observation_id"])
    [item] = found["results"]
    assert item["observed_at"] == "2024-05-01T14:30:00Z"
    assert item["fact"]["valid_from"] == "2024-05-01T14:30:00Z"
    assert item["fact"]["valid_until"] == "2024-05-02T00:00:00Z"
    assert cited["observation"]["observed_at"] == "2024-05-01T14:30:00Z"
    assert cited["observation"]["valid_from"] == "2024-05-01T14:30:00Z"
    assert cited["observation"]["valid_until"] == "2024-05-02T00:00:00Z"
    assert cited["believers"][0]["since"].endswith("Z")


# ---- restart keeps everything -----------------------------------------------------------------


@pytest.mark.anyio
async def test_restart_keeps_memories_evidence_supersession_and_feedback(
    settings: Settings,
) -> None:
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as first:
            closed = await ok(
                first,
                "remember",
                text="The bridge on Route 9 is closed for repairs.",
                topics=["route-9", "bridge"],
                agent="scout",
                confidence="0.9",
                observed_at="2024-05-01T08:00:00+02:00",
            )
            sign = await ok(
                first,
                "remember",
                text="A road sign says: bridge closed until Friday.",
                topics=["bridge"],
                agent="scout",
                confidence="0.7",
                supports=[{"belief_id": closed["belief_id"], "weight": "0.6"}],
            )
            opened = await ok(
                first,
                "remember",
                text="The bridge on Route 9 is open.",
                agent="driver",
                confidence="0.8",
                contradicts=[closed["observation_id"]],
            )
            paris, berlin = [
                await ok(
                    first,
                    "remember",
                    text=f"Alice lives in {city}.",
                    agent="scout",
                    observed_at=day,
                    fact={"subject": "Alice", "predicate": "lives in", "object": city},
                )
                for city, day in (("Paris", "2024-01-01"), ("Berlin", "2024-06-01"))
            ]
            ferries = await ok(
                first,
                "remember",
                memories=[
                    {
                        "text": "Ferry timetable: the harbour ferry timetable is posted.",
                        "topics": ["ferry"],
                    },
                    {
                        "text": "The ferry timetable changes for the winter season.",
                        "topics": ["ferry"],
                    },
                    {
                        "text": "A ferry ticket costs five euros on the harbour ferry line.",
                        "topics": ["ferry"],
                    },
                ],
            )
            judged_before = await ok(first, "recall", query=QUERY, topics=["ferry"])
            target = judged_before["results"][-1]["observation_id"]
            await ok(first, "feedback", recall_id=judged_before["recall_id"], accepted=[target])
            unjudged = await ok(first, "recall", query="bridge")

        async with Client(create_server(settings)) as second:
            bridge = await ok(second, "recall", query="", topics=["bridge"], order_by="confidence")
            cited = await ok(second, "cite_evidence", id=closed["belief_id"])
            alice = await ok(second, "recall", query="Where does Alice live?")
            then = await ok(second, "recall", query="Where does Alice live?", as_of="2024-03-01")
            conflicts = await ok(second, "find_conflicts", agent="scout", other_agent="driver")
            ferry = await ok(second, "recall", query=QUERY, topics=["ferry"], explain=True)
            boosted = await ok(second, "cite_evidence", id=target)
            late = await ok(second, "feedback", recall_id=unjudged["recall_id"], accepted=[])
            again = await second.call_tool(
                "feedback", {"recall_id": judged_before["recall_id"], "accepted": [target]}
            )
            duplicate = await ok(
                second,
                "remember",
                text="The bridge on Route 9 is closed for repairs.",
                agent="scout",
            )

    assert [r["observation_id"] for r in bridge["results"]] == [
        closed["observation_id"],
        sign["observation_id"],
    ]
    assert bridge["results"][0]["observed_at"] == "2024-05-01T06:00:00Z"
    assert bridge["results"][0]["confidence"] == "0.9"
    assert [(e["observation_id"], e["weight"]) for e in cited["evidence"]] == [
        (sign["observation_id"], "0.6")
    ]
    assert [c["observation_id"] for c in cited["contradictions"]] == [opened["observation_id"]]
    assert [b["agent"] for b in cited["believers"]] == ["scout"]
    assert alice["results"][0]["observation_id"] == berlin["observation_id"]
    assert paris["observation_id"] not in {r["observation_id"] for r in alice["results"]}
    assert [r["observation_id"] for r in then["results"]] == [paris["observation_id"]]
    assert conflicts["count"] == 1
    ranked = [r["observation_id"] for r in ferry["results"]]
    before = [r["observation_id"] for r in judged_before["results"]]
    assert ranked.index(target) < before.index(target)
    assert (
        next(r for r in ferry["results"] if r["observation_id"] == target)["scores"]["feedback"] > 0
    )
    assert {r["observation_id"] for r in ferry["results"]} == {
        r["observation_id"] for r in ferries["remembered"]
    }
    assert (boosted["observation"]["hits"], boosted["observation"]["impressions"]) == (1, 1)
    assert late["impressions"] == len(unjudged["results"])
    assert again.is_error is True
    assert "was already judged" in again.content[0].text
    assert duplicate["duplicate_of"] == closed["observation_id"]


# ---- repair after a crash between the stores --------------------------------------------------


@pytest.mark.anyio
async def test_rows_missing_from_the_index_are_restored_at_start_up(settings: Settings) -> None:
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as first:
            done = await ok(
                first,
                "remember",
                memories=[
                    {"text": "Zanzibar cloves smell wonderful."},
                    {"text": "The harbour master owns a red boat."},
                    {"text": "The printer on floor two is jammed."},
                ],
            )
        ids = [r["observation_id"] for r in done["remembered"]]
        lance_table(settings).delete(f"id IN ('{ids[0]}', '{ids[1]}')")
        assert index_ids(settings) == {ids[2]}
        async with Client(create_server(settings)) as second:
            cloves = await ok(second, "recall", query="Zanzibar cloves", explain=True)
            boat = await ok(second, "recall", query="red boat harbour master")
    assert index_ids(settings) == set(ids)
    assert cloves["results"][0]["observation_id"] == ids[0]
    assert cloves["results"][0]["scores"]["vector"] > 0.5
    assert boat["results"][0]["observation_id"] == ids[1]


@pytest.mark.anyio
async def test_index_rows_the_graph_does_not_hold_are_never_recalled_and_removed(
    settings: Settings,
) -> None:
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as first:
            done = await ok(first, "remember", text="The harbour master owns a red boat.")
            table = lance_table(settings)
            vector = np.zeros(settings.store.embedding.dim, dtype=np.float32)
            vector[0] = 1.0
            table.add(
                pa.table(
                    {
                        "id": ["obs_ghost000000000000"],
                        "text": ["Zanzibar ghost row the harbour master never wrote."],
                        "vector": pa.FixedSizeListArray.from_arrays(
                            pa.array(vector), settings.store.embedding.dim
                        ),
                    },
                    schema=table.schema,
                )
            )
            while_running = await ok(first, "recall", query="Zanzibar ghost harbour master")
        async with Client(create_server(settings)) as second:
            after = await ok(second, "recall", query="Zanzibar ghost harbour master")
    assert [r["observation_id"] for r in while_running["results"]] == [done["observation_id"]]
    assert [r["observation_id"] for r in after["results"]] == [done["observation_id"]]
    assert index_ids(settings) == {done["observation_id"]}


@pytest.mark.anyio
async def test_an_index_row_of_a_retracted_observation_is_removed_at_start_up(
    settings: Settings,
) -> None:
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as first:
            kept = await ok(first, "remember", text="The harbour master owns a red boat.")
            gone = await ok(first, "remember", text="The harbour master owns a blue boat.")
            await ok(first, "forget", id=gone["observation_id"])
        table = lance_table(settings)
        row = pa.table(
            {
                "id": [gone["observation_id"]],
                "text": ["The harbour master owns a blue boat."],
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(np.full(settings.store.embedding.dim, 0.05, dtype=np.float32)),
                    settings.store.embedding.dim,
                ),
            },
            schema=table.schema,
        )
        table.add(row)
        async with Client(create_server(settings)) as second:
            found = await ok(second, "recall", query="harbour master blue boat")
    assert [r["observation_id"] for r in found["results"]] == [kept["observation_id"]]
    assert index_ids(settings) == {kept["observation_id"]}


def test_an_index_built_by_another_embedder_is_rebuilt(settings: Settings) -> None:
    memory = reopen(settings)
    try:
        [done] = memory.remember([MemoryDraft(text="Zanzibar cloves smell wonderful.")])
    finally:
        memory.close()
    other = load_settings(
        environ={},
        overrides={
            ("store", "data_dir"): str(settings.store.data_dir),
            ("store", "embedding", "kind"): "hash",
            ("store", "embedding", "dim"): 64,
        },
    )
    memory = reopen(other)
    try:
        [found] = memory.recall("Zanzibar cloves").results
    finally:
        memory.close()
    assert found.observation_id == done.observation_id
    assert found.scores["vector"] > 0.5
    vectors = lance_table(settings).to_arrow().column("vector")
    assert vectors.type.list_size == 64


@pytest.mark.anyio
async def test_a_failing_index_write_loses_nothing_and_is_retried(
    memory_client: Client, memory: Memory, settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = SearchIndex.add
    attempts: list[int] = []

    def fails_once(self: SearchIndex, ids: Any, texts: Any, vectors: Any) -> None:
        attempts.append(len(ids))
        if len(attempts) == 1:
            raise OSError("No space left on device")
        original(self, ids, texts, vectors)

    with anyio.fail_after(30):
        monkeypatch.setattr(SearchIndex, "add", fails_once)
        done = await ok(memory_client, "remember", text="Kept through the failure.", agent="a")
        # Recalled by meaning and by agent while the index write is still failing.
        by_agent = await ok(memory_client, "recall", query="", agent="a")
        stats = memory.stats()  # waits for the index writer: the retry has landed
    assert [r["observation_id"] for r in by_agent["results"]] == [done["observation_id"]]
    assert len(attempts) == 2
    assert stats["Observation"] == stats["IndexRows"] == 1
    assert index_ids(settings) == {done["observation_id"]}
    [found] = memory.recall("Kept through the failure").results
    assert found.observation_id == done["observation_id"] and found.scores["text"] > 0


def test_index_writes_still_failing_at_close_are_repaired_at_start_up(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: SearchIndex, ids: Any, texts: Any, vectors: Any) -> None:
        raise OSError("No space left on device")

    memory = reopen(settings)
    with monkeypatch.context() as patch:
        patch.setattr(SearchIndex, "add", broken)
        [done] = memory.remember([MemoryDraft(text="Zanzibar cloves smell wonderful.")])
        memory.close()  # the writer gives up: the graph has the memory, the index does not
    assert index_ids(settings) == set()
    memory = reopen(settings)
    try:
        [found] = memory.recall("Zanzibar cloves").results
        stats = memory.stats()
    finally:
        memory.close()
    assert found.observation_id == done.observation_id and found.scores["text"] > 0
    assert stats["IndexRows"] == 1
    assert index_ids(settings) == {done.observation_id}


def test_a_failed_graph_statement_writes_nothing_and_the_memory_keeps_working(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = GraphWriter.create_observations

    def create_then_fail(self: GraphWriter, rows: Any) -> None:
        created(self, rows)  # written inside the transaction, then a statement fails
        self._run("RETURN CAST('not a number' AS INT64)", {})

    memory.remember([MemoryDraft(text="Kept before the failure.")])
    before = memory.stats()
    with monkeypatch.context() as patch:
        patch.setattr(GraphWriter, "create_observations", create_then_fail)
        with pytest.raises(StorageError, match="during remember"):
            memory.remember([MemoryDraft(text="Lost in the failure.", topics=["t"])])
    after = memory.stats()
    [later] = memory.remember([MemoryDraft(text="Lost in the failure.", topics=["t"])])
    assert after == before
    assert later.duplicate_of is None
    assert memory.stats()["Observation"] == 2


def test_a_failed_graph_statement_reports_its_own_error(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: GraphWriter, rows: Any) -> None:
        self._run("RETURN CAST('not a number' AS INT64)", {})

    monkeypatch.setattr(GraphWriter, "create_observations", failing)
    with pytest.raises(StorageError) as caught:
        memory.remember([MemoryDraft(text="Lost in the failure.", topics=["t"])])
    assert caught.value.operation == "remember"
    assert "ROLLBACK" not in str(caught.value)
    assert "not a number" in str(caught.value) or "Conversion" in str(caught.value)


# ---- writes are serialized --------------------------------------------------------------------


@pytest.mark.anyio
async def test_concurrent_calls_all_succeed(memory_client: Client, memory: Memory) -> None:
    results: list[dict[str, Any]] = []

    async def remember(i: int) -> None:
        results.append(
            await ok(memory_client, "remember", text=f"Concurrent note {i}.", topics=["busy"])
        )

    async def recall() -> None:
        await ok(memory_client, "recall", query="concurrent note")

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for i in range(16):
                group.start_soon(remember, i)
                group.start_soon(recall)
        found = await ok(memory_client, "recall", query="", topics=["busy"], limit=50)
    assert len({r["observation_id"] for r in results}) == 16
    assert len(found["results"]) == 16
    assert memory.stats()["Observation"] == 16
    assert memory.stats()["IndexRows"] == 16


@pytest.mark.anyio
async def test_concurrent_duplicates_store_one_observation(
    memory_client: Client, memory: Memory
) -> None:
    results: list[dict[str, Any]] = []

    async def remember() -> None:
        results.append(
            await ok(memory_client, "remember", text="Said at the same time.", agent="echo")
        )

    with anyio.fail_after(60):
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(remember)
    assert len({r["observation_id"] for r in results}) == 1
    assert sum("duplicate_of" not in r for r in results) == 1
    assert memory.stats()["Observation"] == 1


def test_a_recall_does_not_wait_for_a_graph_write_in_progress(memory: Memory) -> None:
    """The recall recorder (or any graph writer) holding the graph's lock does not stall
    recall, which reads only the working memory; a remember waits for it."""
    memory.remember([MemoryDraft(text="The harbour master owns a red boat.")])
    holding, release = threading.Event(), threading.Event()

    def long_graph_write() -> None:
        with memory.graph.exclusive():
            holding.set()
            release.wait(10)

    writer = threading.Thread(target=long_graph_write)
    writer.start()
    assert holding.wait(10)
    try:
        began = time.monotonic()
        [found] = memory.recall("red boat").results
        assert time.monotonic() - began < 5
        assert found.text == "The harbour master owns a red boat."
        remembered: list[Any] = []
        blocked = threading.Thread(
            target=lambda: remembered.extend(memory.remember([MemoryDraft(text="Blue boat.")]))
        )
        blocked.start()
        blocked.join(0.3)
        assert blocked.is_alive() and not remembered  # writes are serialized with the graph
    finally:
        release.set()
        writer.join(10)
    blocked.join(10)
    assert len(remembered) == 1


def test_start_up_loads_every_vector_of_an_index_read_in_ranges(settings: Settings) -> None:
    memory = reopen(settings)
    texts = [
        f"Note {i}: the {i}th harbour crane was inspected by team {i % 7}." for i in range(5000)
    ]
    try:
        memory.remember([MemoryDraft(text=t) for t in texts], batch=True)
        memory.stats()  # the index writer has written every row
    finally:
        memory.close()
    memory = reopen(settings)
    try:
        working = memory._wm
        n = len(working)
        assert n == 5000 and working.has_vector[:n].all()
        # Each memory, in every range, is the int8 scan's best match for its own text.
        for i in (0, 2047, 2048, 4095, 4999):
            vector = memory.embedder.embed([texts[i]])[0]
            best = int(np.argmax(working.embeddings.similarity(vector, n)))
            assert working.entries[best].text == texts[i]
            assert memory.recall(texts[i], limit=1).results[0].text == texts[i]
    finally:
        memory.close()


def test_start_up_reads_the_graph_in_ranges_of_observations_as_it_read_it_whole(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Kùzu keeps the memory of a whole result to the end of loading (~100 MB at 100k
    # observations): the observations, their topics and episodes are read a range of seq
    # at a time, and load as one read of them all did (order, topics, episodes, agents),
    # across the gap a purge leaves.
    import doxa.store.graph as graph_module

    memory = reopen(settings)
    try:
        done = memory.remember(
            [
                MemoryDraft(
                    text=f"Dock note {i}: crane {i % 4} moved pallets.",
                    topics=[f"crane {i % 4}", "dock"],
                    agent=f"scout {i % 3}",
                    episode=f"shift {i // 5}",
                    fact=FactDraft(f"crane {i}", "stands at", f"berth {i % 2}")
                    if i % 6 == 0
                    else None,
                )
                for i in range(23)
            ],
            batch=True,
        )
        memory.forget(done[7].observation_id, mode="purge")
        memory.forget(done[11].observation_id)
        memory.settle()
    finally:
        memory.close()

    def loaded() -> list[tuple[Any, ...]]:
        memory = reopen(settings)
        try:
            return [
                (e.id, e.seq, e.topics, e.episode, e.agents, e.beliefs, e.retracted)
                for e in memory._wm.entries
            ]
        finally:
            memory.close()

    whole = loaded()
    read: list[tuple[int, int] | None] = []
    observations = graph_module.Graph.observations

    def spied(graph: Any, seqs: tuple[int, int] | None = None) -> Any:
        read.append(seqs)
        return observations(graph, seqs)

    monkeypatch.setattr(graph_module, "_SEQ_RANGE", 5)
    monkeypatch.setattr(graph_module.Graph, "observations", spied)
    assert loaded() == whole and len(whole) == 22
    assert len(read) >= 5 and None not in read


def test_ranges_of_observations_are_cut_where_they_are(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Order numbers far apart (an import moves its own past the memory's last, a file may
    # hold any) make no run of empty ranges: each range starts at an observation.
    import doxa.store.graph as graph_module

    memory = reopen(settings)
    try:
        done = memory.remember([MemoryDraft(text=f"Berth note {i}.") for i in range(12)])
    finally:
        memory.close()
    database = kuzu.Database(str(settings.store.data_dir / "graph"))
    connection = kuzu.Connection(database)
    far = {d.observation_id: 10**12 + i for i, d in enumerate(done[8:])}
    for obs, seq in far.items():
        connection.execute(
            "MATCH (o:Observation {id: $id}) SET o.seq = $seq", {"id": obs, "seq": seq}
        )
    connection.close()
    database.close()
    monkeypatch.setattr(graph_module, "_SEQ_RANGE", 5)
    memory = reopen(settings)
    try:
        assert len(memory.graph.seq_ranges()) == 3
        assert [e.id for e in memory._wm.entries] == [d.observation_id for d in done]
        assert memory._wm.entries[-1].seq == 10**12 + 3
    finally:
        memory.close()


def test_start_up_shares_one_object_for_a_repeated_source_fact_and_event_time(
    settings: Settings,
) -> None:
    # The database hands out new objects for every row: at 100k memories 5 sources and
    # 6,653 distinct event times took ~17 MB as 100k copies each.
    memory = reopen(settings)
    try:
        memory.remember(
            [
                MemoryDraft(
                    text=f"On 7 November 2022 crane {i} moved to berth {i % 2}.",
                    source="harbour log",
                    fact=FactDraft(f"crane {i}", "stands at", f"berth {i % 2}"),
                )
                for i in range(4)
            ],
            batch=True,
        )
    finally:
        memory.close()
    memory = reopen(settings)
    try:
        first, _, third, _ = memory._wm.entries
        assert first.event_times and first.event_times == third.event_times
        assert first.event_times is third.event_times
        assert first.source is third.source and first.object is third.object
        assert first.predicate is third.predicate
    finally:
        memory.close()


def test_the_model_loads_while_the_process_is_smallest_and_only_to_serve(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Loading the ONNX model briefly takes ~125 MB more than it keeps (the file read whole,
    # then parsed): between the graph's rows loaded (their database closed) and the index's
    # vectors read, not on top of the whole served state, where it was the 100k peak.
    import doxa.store.graph as graph_module
    import doxa.store.index as index_module

    filled = reopen(settings)
    try:
        filled.remember([MemoryDraft(text=f"Quay note {i}: crane {i} idle.") for i in range(5)])
    finally:
        filled.close()
    steps: list[str] = []
    close, vectors = graph_module.Graph.close, index_module.SearchIndex.vectors

    def closing(graph: Any) -> None:
        steps.append("graph closed")
        close(graph)

    def reading(index: Any, *args: Any) -> Any:
        steps.append("vectors read")
        return vectors(index, *args)

    monkeypatch.setattr(graph_module.Graph, "close", closing)
    monkeypatch.setattr(index_module.SearchIndex, "vectors", reading)
    for trains in (True, False):
        steps.clear()
        embedder = HashEmbedder(settings.store.embedding.dim)
        monkeypatch.setattr(embedder, "load", lambda: steps.append("model loaded"))
        monkeypatch.setattr(embedder, "weights", True)  # standing for a model's
        memory = Memory.open(settings.store, embedder=embedder, trains=trains)
        memory.warm_up()
        memory.close()
        expected = ["graph closed", *(["model loaded"] if trains else []), "vectors read"]
        assert steps[: len(expected)] == expected


def test_without_a_model_to_load_the_graph_reopens_before_its_freed_memory_goes_back(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given back first, the reopening took ~80 MB anew: ~70 ms of page faults every start.
    # A model to load goes first (test above), on the smallest process.
    import doxa.store.graph as graph_module
    import doxa.store.startup as startup_module

    reopen(settings).close()
    steps: list[str] = []
    close, give_back = graph_module.Graph.close, startup_module.native_memory.give_back

    def closing(graph: Any) -> None:
        steps.append("graph closed")
        close(graph)

    def opening(database: Any, read_only: bool) -> Any:
        steps.append("graph opened")
        return kuzu.Database(str(database._path), buffer_pool_size=database._buffer_pool_bytes)

    def giving_back(now: bool = True) -> None:
        steps.append("given back")
        give_back(now)

    monkeypatch.setattr(graph_module.Graph, "close", closing)
    monkeypatch.setattr(graph_module.Graph, "_open_database", opening)
    monkeypatch.setattr(startup_module.native_memory, "give_back", giving_back)
    for trains in (True, False):  # the hash embedder has nothing to load either way
        steps.clear()
        memory = Memory.open(settings.store, trains=trains)
        memory.warm_up()
        memory.close()
        assert steps[:4] == ["graph opened", "graph closed", "graph opened", "given back"]


def test_remember_answers_before_its_embedding_and_a_recall_waits_for_it(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    embed = memory.embedder.embed
    gate = threading.Event()

    text = "The lighthouse keeper feeds the gulls."

    def slow(texts: list[str]) -> Any:
        if text in texts:  # the memory's embedding waits; the recall's query does not
            assert gate.wait(10)
        return embed(texts)

    monkeypatch.setattr(memory.embedder, "embed", slow)
    [kept] = memory.remember([MemoryDraft(text=text)])
    # Answered while the model is still held: the graph has it, its vector does not exist.
    assert memory.stats()["Observation"] == 1
    found: list[Any] = []
    recall = threading.Thread(
        target=lambda: found.append(memory.recall("lighthouse keeper gulls", limit=1))
    )
    recall.start()
    recall.join(0.3)
    assert recall.is_alive() and not found  # waiting for the embedding queued before it
    gate.set()
    recall.join(10)
    [result] = found[0].results
    assert result.observation_id == kept.observation_id and result.scores["vector"] > 0


def test_a_failed_embedding_leaves_the_memory_found_by_its_words_until_the_next_start(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(texts: list[str]) -> Any:
        raise RuntimeError("model failed")

    memory = reopen(settings)
    try:
        with monkeypatch.context() as patch:
            patch.setattr(memory.embedder, "embed", lambda texts: broken(texts))
            [kept] = memory.remember([MemoryDraft(text="Quokkas smile on Rottnest Island.")])
            memory.wait_embedded()
        [found] = memory.recall("quokkas Rottnest", limit=1).results
        assert found.observation_id == kept.observation_id
        assert found.scores["text"] > 0 and found.scores.get("vector", 0) == 0
    finally:
        memory.close()
    assert index_ids(settings) == set()
    memory = reopen(settings)  # the repair embeds what the index lacks
    try:
        [found] = memory.recall("quokkas Rottnest", limit=1).results
        assert found.scores["vector"] > 0
        assert memory.stats()["IndexRows"] == 1
    finally:
        memory.close()


def test_a_memory_forgotten_before_its_embedding_never_reaches_the_index(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = reopen(settings)
    embed = memory.embedder.embed
    gate = threading.Event()

    def held(texts: list[str]) -> Any:
        assert gate.wait(10)
        return embed(texts)

    try:
        monkeypatch.setattr(memory.embedder, "embed", held)
        [gone] = memory.remember([MemoryDraft(text="A secret the agent must not keep.")])
        memory.forget(gone.observation_id, mode="purge")
        gate.set()
        assert memory.settle(10)
        assert memory.recall("secret the agent must not keep").results == []
    finally:
        gate.set()
        memory.close()
    assert index_ids(settings) == set()


# ---- the same answers before and after a restart ---------------------------------------------


def scores(memory: Memory, query: str, **asked: Any) -> dict[str, dict[str, float]]:
    """Text -> component scores of a recall's results."""
    return {r.text: r.scores for r in memory.recall(query, **asked).results}


def test_a_purge_or_a_retraction_ranks_as_it_will_after_a_restart(settings: Settings) -> None:
    """A purged memory no longer sits between its episode's neighbours, and a retracted
    one found at an earlier known_at has left the vector search, before a restart as after."""
    memory = reopen(settings)
    try:
        told = [
            memory.remember([MemoryDraft(text=text, episode="e1")])[0]
            for text in ("The violin is in the harbor.", "Lunch was soup.", "The stone is grey.")
        ]
        [gone] = memory.remember([MemoryDraft(text="The marble harbor stone is grey.")])
        memory.settle()
        then = datetime.now(UTC)
        memory.forget(told[1].observation_id, mode="purge")
        memory.forget(gone.observation_id)
        before = scores(memory, "violin harbor"), scores(memory, "marble stone", known_at=then)
    finally:
        memory.close()
    memory = reopen(settings)
    try:
        after = scores(memory, "violin harbor"), scores(memory, "marble stone", known_at=then)
    finally:
        memory.close()
    assert before == after
    assert "vector" not in before[1]["The marble harbor stone is grey."]


def test_a_fact_that_begins_later_never_takes_its_current_facts_place(memory: Memory) -> None:
    # It stands where it ranks, marked not current (after every current result, notes that
    # only shared a word kept it out of the answer), but never above the current fact of
    # its subject and predicate.
    memory.remember([MemoryDraft(text="Alice bought a violin case.", observed_at="2024-01-01")])
    memory.remember(
        [
            MemoryDraft(
                text="Violin lessons: Alice will teach violin.",
                fact=FactDraft("Alice", "role", "violin teacher", valid_from=f"{LATER}-01-01"),
            )
        ]
    )
    [first] = memory.recall("violin", limit=1).results
    assert first.text == "Violin lessons: Alice will teach violin." and not first.current
    memory.remember(
        [MemoryDraft(text="Alice is a cellist.", fact=FactDraft("Alice", "role", "cellist"))]
    )
    first, second = memory.recall("violin", limit=2).results
    assert (first.text, first.current) == ("Alice is a cellist.", True)
    assert (second.text, second.current) == ("Violin lessons: Alice will teach violin.", False)


def test_ctrl_c_while_warming_up_stops_it_without_a_logged_traceback(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Ctrl-C during `doxa import` logged "memory warm-up failed" and a traceback of 50-100
    # lines before the command's one line, "interrupted".
    def interrupted(self: Memory) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(Memory, "_load_everything", interrupted)
    memory = Memory.open(settings.store)
    with pytest.raises(KeyboardInterrupt):
        memory.warm_up()
    assert not [r for r in caplog.records if "warm-up failed" in r.getMessage()]


class _CountedLoads(HashEmbedder):
    """The hash embedder, counting the loads asked of it, standing for a model to load."""

    weights = True

    def __init__(self) -> None:
        super().__init__()
        self.loads = 0

    def load(self) -> None:
        self.loads += 1


@pytest.mark.parametrize("trains", [True, False])
def test_a_one_shot_memory_loads_the_model_only_to_embed(settings: Settings, trains: bool) -> None:
    """A server (``trains``) loads the model as it warms up, for its first call not to wait;
    a one-shot command loads it with its first embedding: `doxa stats`, `export` and `about`
    embed nothing, and spent a second and 120 MB on it."""
    embedder = _CountedLoads()
    memory = Memory.open(settings.store, embedder=embedder, trains=trains)
    try:
        memory.warm_up()
        assert embedder.loads == (1 if trains else 0)
        memory.remember([MemoryDraft(text="The ferry leaves at nine.")])
        assert memory.recall("ferry").results
    finally:
        memory.close()
