"""The entity summaries' thread: marks gathered into one refresh, nothing lost on close, a
failing refresh logged and the thread still serving."""

from __future__ import annotations

import threading

from doxa.store.entities import Summaries


def test_marks_made_together_are_refreshed_together_and_wait_sees_them_written() -> None:
    batches: list[set[str]] = []
    summaries = Summaries(batches.append, gather_s=0.05)
    try:
        summaries.mark({"alice"})
        summaries.mark({"bob", "alice"})
        assert summaries.wait(timeout=5)
        assert batches == [{"alice", "bob"}]
        summaries.mark(set())
        assert summaries.wait(timeout=5)
    finally:
        summaries.close()


def test_close_writes_what_is_marked_and_later_marks_are_ignored() -> None:
    batches: list[set[str]] = []
    summaries = Summaries(batches.append, gather_s=10.0)  # close must not wait for it
    summaries.mark({"carol"})
    summaries.close()
    summaries.mark({"dave"})
    assert batches == [{"carol"}]


def test_a_failing_refresh_does_not_stop_the_thread() -> None:
    done = threading.Event()

    def refresh(keys: set[str]) -> None:
        if "bad" in keys:
            raise RuntimeError("the graph said no")
        done.set()

    summaries = Summaries(refresh, gather_s=0.0)
    try:
        summaries.mark({"bad"})
        assert summaries.wait(timeout=5)
        summaries.mark({"good"})
        assert done.wait(timeout=5)
    finally:
        summaries.close()
