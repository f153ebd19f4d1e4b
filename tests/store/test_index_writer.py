"""The search-index writer: writes applied in order, coalesced, waited for, and flushed or
handed to the start-up repair at close. Against a real LanceDB index."""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from doxa.store.embedder import HashEmbedder
from doxa.store.index import SearchIndex
from doxa.store.index_writer import IndexWriter

EMBEDDER = HashEmbedder(32)


def rows(*texts: str) -> tuple[list[str], list[str], Any]:
    ids = [f"obs_{abs(hash(t)) % 10**12:012d}" for t in texts]
    return ids, list(texts), EMBEDDER.embed(list(texts))


@pytest.fixture
def index(tmp_path: Path) -> SearchIndex:
    return SearchIndex(tmp_path / "index", 32, EMBEDDER.fingerprint)


def test_writes_apply_in_order_and_a_wait_sees_them(index: SearchIndex) -> None:
    writer = IndexWriter(index, maintenance_every=1000)
    kept, gone = rows("the red boat"), rows("the blue boat")
    writer.add(*kept)
    writer.add(*gone)
    ticket = writer.delete(gone[0])
    assert writer.wait(ticket, timeout=10)
    assert set(index.ids()) == set(kept[0])
    writer.close()


def test_writes_queued_while_one_is_applied_become_one_append(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = SearchIndex.add
    gate = threading.Event()
    calls: list[int] = []

    def slow_add(self: SearchIndex, ids: Any, texts: Any, vectors: Any) -> None:
        calls.append(len(ids))
        gate.wait(10)
        original(self, ids, texts, vectors)

    monkeypatch.setattr(SearchIndex, "add", slow_add)
    writer = IndexWriter(index, maintenance_every=1000)
    writer.add(*rows("first"))
    started = threading.Event()
    while not calls:  # the first append is under way (held at the gate)
        started.wait(0.01)
    for k in range(5):
        writer.add(*rows(f"queued {k}"))
    gate.set()
    assert writer.wait(timeout=10)
    assert calls == [1, 5]
    assert writer.pending == 0
    assert len(index.ids()) == 6
    writer.close()


def test_close_applies_what_is_queued(index: SearchIndex) -> None:
    writer = IndexWriter(index, maintenance_every=1000)
    for k in range(20):
        writer.add(*rows(f"memory {k}"))
    writer.close()
    assert len(index.ids()) == 20
    with pytest.raises(RuntimeError, match="closed"):
        writer.add(*rows("too late"))


def test_a_wait_on_a_failing_index_times_out_and_the_write_stays_queued(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: SearchIndex, ids: Any, texts: Any, vectors: Any) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr(SearchIndex, "add", broken)
    writer = IndexWriter(index, maintenance_every=1000, retry_s=0.05)
    ticket = writer.add(*rows("waiting"))
    assert writer.wait(ticket, timeout=0.3) is False
    assert writer.pending == 1
    writer.close()  # gives up: the start-up repair puts the row back from the graph
    assert writer.pending == 0
    assert index.ids() == []


def test_nothing_to_write_queues_nothing(index: SearchIndex) -> None:
    writer = IndexWriter(index, maintenance_every=1000)
    assert writer.delete([]) == 0
    assert writer.add([], [], np.zeros((0, 32), dtype=np.float32)) == 0
    assert writer.wait(timeout=1)
    writer.close()


def test_writes_within_the_delay_share_one_append_and_a_wait_does_not_wait_for_it(
    index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    original = SearchIndex.add
    calls: list[int] = []

    def counted(self: SearchIndex, ids: Any, texts: Any, vectors: Any) -> None:
        calls.append(len(ids))
        original(self, ids, texts, vectors)

    monkeypatch.setattr(SearchIndex, "add", counted)
    writer = IndexWriter(index, maintenance_every=1000, delay_s=60.0)
    for k in range(3):
        writer.add(*rows(f"memory {k}"))
    assert calls == []  # held back for companions
    began = time.monotonic()
    assert writer.wait(timeout=10)
    assert time.monotonic() - began < 5  # a reader asked: written now, not after a minute
    assert calls == [3]
    writer.add(*rows("later"))
    writer.close()  # close writes what is queued
    assert calls == [3, 1]


def test_enough_queued_rows_are_written_without_waiting_for_the_delay(
    index: SearchIndex,
) -> None:
    writer = IndexWriter(index, maintenance_every=1000, delay_s=60.0, batch_rows=4)
    for k in range(4):
        writer.add(*rows(f"memory {k}"))
    deadline = time.monotonic() + 10
    while writer.pending and time.monotonic() < deadline:
        time.sleep(0.01)
    assert writer.pending == 0
    assert len(index.ids()) == 4
    writer.close()


def test_a_scrub_that_fails_leaves_the_table_whole_and_its_retry_keeps_every_row(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Written in several commits, a scrub that failed after the first (a full disk) left
    # the table holding part of its rows, and the purge's retry dropped the earlier versions.
    index = SearchIndex(tmp_path / "index", 8, "fp")
    n = 20_000
    ids = [f"obs_{i}" for i in range(n)]
    index.add(ids, [f"note {i}" for i in range(n)], np.ones((n, 8), dtype=np.float32))
    index.delete(["obs_3"])
    table = index._table
    real_add = table.add

    def full_disk_after_a_commit(data: Any, mode: str = "append", **kwargs: Any) -> Any:
        if mode != "append":
            return real_add(data, mode=mode, **kwargs)
        monkeypatch.setattr(table, "add", real_add)  # the disk has room again afterwards
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(table, "add", full_disk_after_a_commit)
    with contextlib.suppress(OSError):
        index.scrub()
    index.scrub()  # the purge retried
    assert index.count() == n - 1 and "obs_3" not in index.ids()
