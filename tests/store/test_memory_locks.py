"""The memory's locks (memory.py's docstring): recalls run in parallel, a write's mirror
waits for the recalls running and recalls wait for it, find_conflicts and feedback read the
graph and run the model without the working memory's lock, and remember calls waiting for
the graph are written together. Real stores, hash embedder; threads meet on events, and
every wait has a time limit."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from doxa.server.settings import Settings
from doxa.store import FactDraft, Memory, MemoryDraft, SupportDraft, recall, remembering
from doxa.store.errors import NotFound, StorageError
from doxa.store.graph import Graph, GraphWriter
from doxa.store.readers_writer import ReadersWriterLock

LIMIT_S = 10.0


def until(condition: Callable[[], bool], limit_s: float = LIMIT_S) -> None:
    """Return once ``condition()`` holds; fail after ``limit_s`` seconds."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        os.sched_yield()


def lock_of(memory: Memory) -> ReadersWriterLock:
    lock = memory._working_lock
    assert isinstance(lock, ReadersWriterLock)
    return lock


class Worker(threading.Thread):
    """A thread that keeps its function's result or error for the test to check."""

    def __init__(self, name: str, work: Callable[[], Any]) -> None:
        super().__init__(name=name, daemon=True)
        self._work = work
        self.result: Any = None
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self.result = self._work()
        except BaseException as error:
            self.error = error

    def outcome(self) -> Any:
        self.join(LIMIT_S)
        assert not self.is_alive(), f"{self.name} did not finish"
        if self.error is not None:
            raise self.error
        return self.result


def test_two_recalls_rank_at_the_same_time(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    [boat] = memory.remember([MemoryDraft(text="The harbour master owns a red boat.")])
    # Each recall waits inside the ranking for the other to get there (only recalls that
    # run in parallel both get through), counts the readers, and waits again, so that
    # neither leaves the lock before both have counted.
    met, counted = threading.Barrier(2, timeout=LIMIT_S), threading.Barrier(2, timeout=LIMIT_S)
    readers_met: list[int] = []
    rank = recall.rank

    def meet_the_other(*args: Any, **kwargs: Any) -> Any:
        try:
            met.wait()
        except threading.BrokenBarrierError:
            raise AssertionError("a recall ranked alone: recalls are serialized") from None
        readers_met.append(lock_of(memory).readers)
        counted.wait()
        return rank(*args, **kwargs)

    monkeypatch.setattr(recall, "rank", meet_the_other)
    workers = [Worker(n, lambda: memory.recall("red boat", limit=3)) for n in ("first", "second")]
    for worker in workers:
        worker.start()
    outcomes = [worker.outcome() for worker in workers]
    assert [[r.observation_id for r in o.results] for o in outcomes] == [[boat.observation_id]] * 2
    assert readers_met == [2, 2]
    assert outcomes[0].recall_id != outcomes[1].recall_id


def test_a_remember_applies_only_after_the_recalls_running_finish(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.remember([MemoryDraft(text="The harbour master owns a red boat.")])
    ranking, release = threading.Event(), threading.Event()
    rank = recall.rank

    def held(*args: Any, **kwargs: Any) -> Any:
        ranking.set()
        assert release.wait(LIMIT_S)
        return rank(*args, **kwargs)

    monkeypatch.setattr(recall, "rank", held)
    reader = Worker("recall", lambda: memory.recall("boat"))
    reader.start()
    assert ranking.wait(LIMIT_S)
    lock = lock_of(memory)
    writer = Worker("remember", lambda: memory.remember([MemoryDraft(text="A blue boat came in.")]))
    writer.start()
    until(lambda: lock.writers_waiting == 1)  # committed to the graph, waiting to mirror it
    assert writer.is_alive() and len(memory._wm) == 1
    assert memory.graph.counts()["Observation"] == 2
    release.set()
    [during] = reader.outcome().results
    [blue] = writer.outcome()
    assert during.text == "The harbour master owns a red boat."  # it began before the write
    monkeypatch.setattr(recall, "rank", rank)
    after = memory.recall("blue boat").results
    assert blue.observation_id in [r.observation_id for r in after]


def test_a_recall_waits_for_a_remember_mirroring_its_write(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    applying, release = threading.Event(), threading.Event()
    apply = remembering.apply

    def held(*args: Any, **kwargs: Any) -> None:
        applying.set()
        assert release.wait(LIMIT_S)
        apply(*args, **kwargs)

    monkeypatch.setattr(remembering, "apply", held)
    writer = Worker(
        "remember", lambda: memory.remember([MemoryDraft(text="The ferry leaves at noon.")])
    )
    writer.start()
    assert applying.wait(LIMIT_S)
    lock = lock_of(memory)
    assert lock.written
    reader = Worker("recall", lambda: memory.recall("ferry noon"))
    reader.start()
    until(lambda: lock.readers_waiting == 1)
    assert reader.is_alive()
    release.set()
    [ferry] = writer.outcome()
    [found] = reader.outcome().results  # it waited, so it sees the write whole
    assert found.observation_id == ferry.observation_id
    assert found.belief_ids == [ferry.belief_id]


def test_find_conflicts_reads_the_graph_without_the_working_memory_lock(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    fact = FactDraft(subject="bridge", predicate="status", object="closed")
    [closed] = memory.remember([MemoryDraft(text="Bridge closed.", agent="scout", fact=fact)])
    fact = FactDraft(subject="bridge", predicate="status", object="open")
    [opened] = memory.remember([MemoryDraft(text="Bridge open.", agent="driver", fact=fact)])
    reading, release = threading.Event(), threading.Event()
    contradictions = Graph.contradictions

    def slow_read(self: Graph, known_at: Any = None) -> Any:
        reading.set()
        assert release.wait(LIMIT_S)
        return contradictions(self, known_at)

    monkeypatch.setattr(Graph, "contradictions", slow_read)
    finder = Worker("find_conflicts", lambda: memory.conflicts(agent="scout")["conflicts"])
    finder.start()
    assert reading.wait(LIMIT_S)
    lock = lock_of(memory)
    assert (lock.readers, lock.written) == (0, False)
    # A remember (which takes the lock alone) and a recall both finish meanwhile.
    writer = Worker("remember", lambda: memory.remember([MemoryDraft(text="Ferry on time.")]))
    writer.start()
    [later] = writer.outcome()
    [found] = memory.recall("ferry on time", limit=1).results
    assert found.observation_id == later.observation_id
    release.set()
    [clash] = finder.outcome()
    assert clash["kind"] == "clash"
    assert {clash["a"], clash["b"]} == {closed.observation_id, opened.observation_id}
    assert {clash["a_text"], clash["b_text"]} == {"Bridge closed.", "Bridge open."}


def test_feedback_reads_the_graph_and_embeds_without_the_working_memory_lock(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = Memory.open(settings.store)
    memory.warm_up()
    try:
        [boat] = memory.remember([MemoryDraft(text="The harbour master owns a red boat.")])
        asked = memory.recall("red boat")
    finally:
        memory.close()
    memory = Memory.open(settings.store)  # the recall is in the graph only now
    memory.warm_up()
    try:
        lock = lock_of(memory)
        seen: list[tuple[str, int, bool]] = []
        embed, recall_event = memory.embedder.embed, Graph.recall_event

        def watched_embed(texts: list[str]) -> Any:
            seen.append(("embed", lock.readers, lock.written))
            return embed(texts)

        def watched_read(self: Graph, recall_id: str) -> Any:
            seen.append(("graph", lock.readers, lock.written))
            return recall_event(self, recall_id)

        monkeypatch.setattr(memory.embedder, "embed", watched_embed)
        monkeypatch.setattr(Graph, "recall_event", watched_read)
        judged = memory.feedback(asked.recall_id, accepted=[boat.observation_id])
    finally:
        memory.close()
    assert judged.accepted == [boat.observation_id] and judged.impressions == 1
    assert {step for step, _, _ in seen} == {"embed", "graph"}
    assert all((readers, written) == (0, False) for _, readers, written in seen)


# ---- remember calls waiting together are written together ----------------------------------


def remember_while_the_graph_is_held(
    memory: Memory, drafts: list[MemoryDraft], monkeypatch: pytest.MonkeyPatch
) -> tuple[list[Worker], list[str]]:
    """Start one remember per draft while the test holds the graph's lock, let them all
    queue, release: returns the workers and the graph writes that followed."""
    writes: list[str] = []
    write = Graph.write

    def counted(self: Graph, operation: str = "a write") -> Any:
        writes.append(operation)
        return write(self, operation)

    monkeypatch.setattr(Graph, "write", counted)
    workers = [
        Worker(f"remember-{k}", lambda d=draft: memory.remember([d]))
        for k, draft in enumerate(drafts)
    ]
    with memory.graph.exclusive():
        for worker in workers:
            worker.start()
        until(lambda: len(memory._waiting) == len(drafts))
    for worker in workers:
        worker.join(LIMIT_S)
    return workers, writes


def test_remember_calls_waiting_together_are_written_in_one_transaction(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafts = [MemoryDraft(text=f"Crate {k} was unloaded at the pier.") for k in range(5)]
    workers, writes = remember_while_the_graph_is_held(memory, drafts, monkeypatch)
    done = [worker.outcome()[0] for worker in workers]
    assert writes.count("remember") == 1
    assert len({d.observation_id for d in done}) == 5
    assert all(d.duplicate_of is None for d in done)
    found = memory.recall("crate unloaded pier", limit=10).results
    assert {r.observation_id for r in found} == {d.observation_id for d in done}
    assert memory.stats()["Observation"] == 5


def test_a_call_naming_a_missing_belief_fails_alone_among_those_waiting(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafts = [
        MemoryDraft(text="The tide turns at six."),
        MemoryDraft(text="Evidence for nothing.", supports=[SupportDraft(belief_id="bel_x")]),
        MemoryDraft(text="The tide is low at noon."),
    ]
    workers, writes = remember_while_the_graph_is_held(memory, drafts, monkeypatch)
    first, missing, last = workers
    with pytest.raises(NotFound) as caught:
        missing.outcome()
    assert caught.value.field == "supports[0].belief_id"
    assert [first.outcome()[0].duplicate_of, last.outcome()[0].duplicate_of] == [None, None]
    assert writes.count("remember") == 1
    assert memory.stats()["Observation"] == 2


def test_the_same_text_from_calls_waiting_together_is_stored_once(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    drafts = [MemoryDraft(text="Said twice at once.", agent="echo") for _ in range(3)]
    workers, _ = remember_while_the_graph_is_held(memory, drafts, monkeypatch)
    done = [worker.outcome()[0] for worker in workers]
    assert len({d.observation_id for d in done}) == 1
    assert sorted(d.duplicate_of is None for d in done) == [False, False, True]
    assert memory.stats()["Observation"] == 1


def test_a_failed_transaction_fails_every_call_written_with_it_and_writes_nothing(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    def failing(self: GraphWriter, rows: Any) -> None:
        raise RuntimeError("Buffer manager exception: Unable to allocate memory!")

    drafts = [MemoryDraft(text=f"Lost note {k}.") for k in range(3)]
    with monkeypatch.context() as patch:
        patch.setattr(GraphWriter, "create_observations", failing)
        workers, writes = remember_while_the_graph_is_held(memory, drafts, patch)
        for worker in workers:
            with pytest.raises(StorageError, match="during remember"):
                worker.outcome()
    assert writes.count("remember") == 1
    assert memory.stats()["Observation"] == 0
    [kept] = memory.remember([MemoryDraft(text="Lost note 1.")])
    assert kept.duplicate_of is None
