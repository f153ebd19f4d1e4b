"""The recall log: recent recalls kept for feedback, their events written in batches, and
never taken for writing behind a writer's back (a feedback would judge a recall the graph
does not hold yet, and its judging would be lost)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from doxa.store.recall_log import Event, RecallLog, Recent

AT = datetime(2024, 5, 1, tzinfo=UTC)
LIMIT_S = 10.0


class FakeGraph:
    """The part of ``Graph`` the log uses: a reentrant write lock and a transaction that
    records recall events (failing when told to)."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.written: list[Event] = []
        self.fail = False
        self.embedder = ""
        self.asking: dict[str, threading.Event] = {}

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        self._asked()
        with self.lock:
            yield

    def transact(self, operation: str, body: Callable[[FakeGraph], None]) -> None:
        self._asked()
        with self.lock:
            body(self)

    def _asked(self) -> None:
        asking = self.asking.get(threading.current_thread().name)
        if asking is not None:
            asking.set()

    def record_recalls(self, batch: list[Event], embedder: str) -> None:
        self.embedder = embedder
        if self.fail:
            raise RuntimeError("disk full")
        self.written.extend(batch)


def ids(events: list[Event]) -> list[str]:
    return [event[0] for event in events]


def test_a_recall_is_kept_for_its_feedback_with_its_results_in_order() -> None:
    log = RecallLog("hash-v1:4")
    vector = np.ones(4, dtype=np.float32)
    log.note("rec_1", "red boat", "scout", AT, vector, [("obs_a", 1.5, ""), ("obs_b", 0.7, "")])
    found = log.find("rec_1")
    assert found == Recent("red boat", vector, ["obs_a", "obs_b"], judged=False)
    assert log.find("rec_2") is None
    graph = FakeGraph()
    log.record(graph)
    assert graph.written == [
        ("rec_1", "red boat", "scout", AT, [("obs_a", 0, 1.5, ""), ("obs_b", 1, 0.7, "")])
    ]
    assert graph.embedder == "hash-v1:4"  # each recall says what ranked it


def test_only_the_most_recent_recalls_are_kept() -> None:
    log = RecallLog("hash-v1:4", recent=2)
    for k in range(3):
        log.note(f"rec_{k}", "q", None, AT, None, [])
    assert [log.find(f"rec_{k}") is not None for k in range(3)] == [False, True, True]


def test_events_that_failed_to_be_written_are_written_first_next_time() -> None:
    log = RecallLog("hash-v1:4")
    graph = FakeGraph()
    log.note("rec_1", "q", None, AT, None, [])
    graph.fail = True
    with pytest.raises(RuntimeError):
        log.record(graph)
    log.note("rec_2", "q", None, AT, None, [])
    graph.fail = False
    log.record(graph)
    assert ids(graph.written) == ["rec_1", "rec_2"]


def test_events_are_not_taken_while_another_writer_holds_the_graph() -> None:
    log = RecallLog("hash-v1:4")
    graph = FakeGraph()
    log.note("rec_1", "q", None, AT, None, [])
    graph.asking["recorder"] = asking = threading.Event()
    with graph.exclusive():  # a feedback, say, holds the graph's lock
        recorder = threading.Thread(target=log.record, args=(graph,), name="recorder")
        recorder.start()
        assert asking.wait(LIMIT_S)  # the recorder waits for the lock ...
        log.record(graph)  # ... so the writer finds the event and writes it itself
        assert ids(graph.written) == ["rec_1"]
    recorder.join(LIMIT_S)
    assert not recorder.is_alive()
    assert ids(graph.written) == ["rec_1"]  # and only once


def test_recording_runs_on_its_own_thread_until_stopped(monkeypatch: pytest.MonkeyPatch) -> None:
    from doxa.store import recall_log

    monkeypatch.setattr(recall_log, "RECORD_EVERY_S", 0.01)
    written = threading.Event()

    class Graph(FakeGraph):
        def record_recalls(self, batch: list[Event], embedder: str) -> None:
            super().record_recalls(batch, embedder)
            written.set()

        def checkpoint_if_due(self) -> bool:
            return False

    graph: Any = Graph()
    log = RecallLog("hash-v1:4")
    log.start(graph)
    try:
        log.note("rec_1", "q", None, AT, None, [])
        assert written.wait(LIMIT_S)
    finally:
        log.stop()
    assert ids(graph.written) == ["rec_1"]


def test_recalls_that_returned_nothing_are_recorded_with_no_features(tmp_path: Path) -> None:
    # A batch of recall events none of which kept features bound its empty lists as text,
    # which the STRING[] column refused (found by the fuzz test: "expected STRING[]").
    from doxa.store.graph import Graph

    graph = Graph(tmp_path / "graph")
    try:
        now = datetime.now(UTC)
        with graph.write("recording recalls") as w:
            w.record_recalls(
                [("rec_a", "q", None, now, []), ("rec_b", "q", "scout", now, [])], "hash-v1:4"
            )
        found = graph.read("MATCH (r:Recall) RETURN r.id, r.features ORDER BY r.id")
        assert found == [["rec_a", None], ["rec_b", None]]
    finally:
        graph.close()
