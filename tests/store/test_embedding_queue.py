"""The embedding queue: order, batches, waiting, backpressure, failures and close."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import pytest

from doxa.store.embedding_queue import EmbeddingQueue


class Recorder:
    """An embedder that can be held and made to fail, and a deliver that records batches."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()  # set when the model is first asked
        self.failures = 0
        self.calls: list[list[str]] = []
        self.delivered: list[tuple[list[str], list[str], Any]] = []

    def embed(self, texts: list[str]) -> Any:
        self.entered.set()
        assert self.gate.wait(10)
        self.calls.append(list(texts))
        if self.failures:
            self.failures -= 1
            raise RuntimeError("model failed")
        return np.array([[float(len(t))] for t in texts], dtype=np.float32)

    def deliver(self, ids: list[str], texts: list[str], vectors: Any, passages: Any) -> None:
        self.delivered.append((ids, texts, vectors))


@contextmanager
def running(recorder: Recorder, **options: Any) -> Iterator[EmbeddingQueue]:
    queue = EmbeddingQueue(recorder.embed, recorder.deliver, **options)
    try:
        yield queue
    finally:
        queue.close()


def test_texts_are_delivered_in_order_with_their_vectors() -> None:
    recorder = Recorder()
    with running(recorder) as queue:
        first = queue.put(["a", "b"], ["x", "yy"])
        second = queue.put(["c"], ["zzz"])
        assert queue.wait(second, timeout=5)
        assert first < second and queue.pending_rows == 0
        ids = [i for batch in recorder.delivered for i in batch[0]]
        vectors = np.concatenate([batch[2] for batch in recorder.delivered])
        assert ids == ["a", "b", "c"] and vectors[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_puts_within_the_delay_share_one_forward_pass() -> None:
    recorder = Recorder()
    with running(recorder, delay_s=0.2) as queue:
        for k in range(5):
            queue.put([f"id{k}"], [f"text {k}"])
        assert queue.wait(timeout=5)
        assert recorder.calls == [[f"text {k}" for k in range(5)]]


def test_a_waiter_cuts_the_delay_short() -> None:
    recorder = Recorder()
    with running(recorder, delay_s=30.0) as queue:
        queue.put(["a"], ["x"])
        began = time.monotonic()
        assert queue.wait(timeout=5)
        assert time.monotonic() - began < 5


def test_a_batch_takes_whole_puts_up_to_batch_rows() -> None:
    recorder = Recorder()
    recorder.gate.clear()
    with running(recorder, delay_s=0.0, batch_rows=3) as queue:
        queue.put(["h"], ["held"])  # the thread takes it and waits at the gate
        assert recorder.entered.wait(5)
        queue.put(["a", "b"], ["1", "2"])
        queue.put(["c", "d"], ["3", "4"])  # would make 4 > 3: the next batch
        queue.put(["e"], ["5"])
        recorder.gate.set()
        assert queue.wait(timeout=5)
        assert recorder.calls == [["held"], ["1", "2"], ["3", "4", "5"]]


def test_wait_below_holds_a_writer_while_too_much_is_queued() -> None:
    recorder = Recorder()
    recorder.gate.clear()
    with running(recorder, delay_s=0.0) as queue:
        queue.put([str(k) for k in range(10)], ["t"] * 10)
        assert not queue.wait_below(5, timeout=0.1)
        recorder.gate.set()
        assert queue.wait_below(5, timeout=5)


def test_a_failed_embedding_is_retried_once() -> None:
    recorder = Recorder()
    recorder.failures = 1
    with running(recorder, retry_s=0.01) as queue:
        queue.put(["a"], ["x"])
        assert queue.wait(timeout=5)
        assert len(recorder.calls) == 2 and [b[0] for b in recorder.delivered] == [["a"]]


def test_a_batch_failing_twice_is_dropped_and_waiters_are_released(
    caplog: pytest.LogCaptureFixture,
) -> None:
    recorder = Recorder()
    recorder.failures = 2
    with running(recorder, retry_s=0.01) as queue:
        queue.put(["a"], ["x"])
        assert queue.wait(timeout=5)
        assert recorder.delivered == [] and queue.pending_rows == 0
        assert "found by their words only" in caplog.text
        queue.put(["b"], ["y"])  # the queue keeps working
        assert queue.wait(timeout=5)
        assert [b[0] for b in recorder.delivered] == [["b"]]


def test_close_delivers_what_is_queued_then_refuses_more() -> None:
    recorder = Recorder()
    queue = EmbeddingQueue(recorder.embed, recorder.deliver, delay_s=30.0)
    queue.put(["a"], ["x"])
    queue.put(["b"], ["y"])
    queue.close()
    assert [i for batch in recorder.delivered for i in batch[0]] == ["a", "b"]
    with pytest.raises(RuntimeError, match="closed"):
        queue.put(["c"], ["z"])


def test_a_long_text_counts_as_the_embeddings_it_takes() -> None:
    # 400 words: its own vector and 4 passages'. Backpressure and batches count the model's
    # work: two such texts fill a batch of 8 rows no more than 10 short ones do.
    long_text = " ".join(f"w{k}" for k in range(400))
    recorder = Recorder()
    recorder.gate.clear()
    with running(recorder, delay_s=0.0, batch_rows=8) as queue:
        queue.put(["h"], ["held"])  # the thread takes it and waits at the gate
        assert recorder.entered.wait(5)
        queue.put(["a"], [long_text])
        queue.put(["b"], [long_text])  # 5 + 5 > 8: the next batch
        try:
            assert queue.pending_rows == 1 + 5 + 5
            assert not queue.wait_below(6, timeout=0.05)
        finally:
            recorder.gate.set()
        assert queue.wait(timeout=5)
        assert [len(call) for call in recorder.calls] == [1, 5, 5]
