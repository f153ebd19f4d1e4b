"""The working memory's readers-writer lock: readers share it, a writer has it alone, and a
waiting writer holds back new readers (so recalls cannot starve a remember)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable

from doxa.store.readers_writer import ReadersWriterLock

#: Long enough for any thread here to get going on a loaded machine; only failures wait it.
LIMIT_S = 10.0


def until(condition: Callable[[], bool], limit_s: float = LIMIT_S) -> None:
    """Return once ``condition()`` holds; fail after ``limit_s`` seconds."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        os.sched_yield()


def test_readers_hold_it_together() -> None:
    lock = ReadersWriterLock()
    assert lock.acquire_read(timeout=LIMIT_S)
    assert lock.acquire_read(timeout=LIMIT_S)
    assert lock.readers == 2
    lock.release_read()
    lock.release_read()
    assert lock.readers == 0


def test_a_writer_waits_for_the_readers() -> None:
    lock = ReadersWriterLock()
    lock.acquire_read()
    assert not lock.acquire_write(timeout=0.05)
    lock.release_read()
    assert lock.acquire_write(timeout=LIMIT_S)
    assert lock.written


def test_readers_and_writers_wait_for_a_writer() -> None:
    lock = ReadersWriterLock()
    lock.acquire_write()
    assert not lock.acquire_read(timeout=0.05)
    assert not lock.acquire_write(timeout=0.05)
    lock.release_write()
    assert lock.acquire_read(timeout=LIMIT_S)


def test_a_waiting_writer_holds_new_readers_back_and_goes_first() -> None:
    lock = ReadersWriterLock()
    order: list[str] = []
    lock.acquire_read()

    def write() -> None:
        assert lock.acquire_write(timeout=LIMIT_S)
        order.append("writer")
        lock.release_write()

    def read() -> None:
        assert lock.acquire_read(timeout=LIMIT_S)
        order.append("reader")
        lock.release_read()

    writer = threading.Thread(target=write)
    writer.start()
    until(lambda: lock.writers_waiting == 1)
    reader = threading.Thread(target=read)
    reader.start()
    until(lambda: lock.readers_waiting == 1)  # held back although only a reader holds it
    assert order == []
    lock.release_read()
    writer.join(LIMIT_S)
    reader.join(LIMIT_S)
    assert order == ["writer", "reader"]


def test_a_writer_that_gives_up_lets_the_held_back_readers_in() -> None:
    lock = ReadersWriterLock()
    lock.acquire_read()
    got: list[bool] = []
    reader = threading.Thread(target=lambda: got.append(lock.acquire_read(timeout=LIMIT_S)))
    gave_up = threading.Event()

    def impatient_writer() -> None:
        assert not lock.acquire_write(timeout=0.2)
        gave_up.set()

    writer = threading.Thread(target=impatient_writer)
    writer.start()
    until(lambda: lock.writers_waiting == 1)
    reader.start()
    writer.join(LIMIT_S)
    reader.join(LIMIT_S)
    assert gave_up.is_set() and got == [True]
    assert lock.readers == 2 and lock.writers_waiting == 0
