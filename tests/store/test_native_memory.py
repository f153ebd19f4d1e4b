"""Giving freed native memory back: at once after a reopening, at most every EVERY_S after
checkpoints, and nothing where the C library cannot."""

from __future__ import annotations

import pytest

from doxa.store import native_memory


def test_trims_now_or_at_most_every_so_often(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def trim(pad: int) -> int:
        calls.append(pad)
        return 1

    monkeypatch.setattr(native_memory, "_malloc_trim", lambda: trim)
    monkeypatch.setattr(native_memory, "_last", -native_memory.EVERY_S)
    native_memory.give_back(now=False)
    native_memory.give_back(now=False)  # too soon: skipped
    native_memory.give_back()  # a reopening: at once
    assert calls == [0, 0]
    monkeypatch.setattr(native_memory, "_last", -native_memory.EVERY_S)
    native_memory.give_back(now=False)
    assert calls == [0, 0, 0]


def test_without_glibc_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(native_memory, "_malloc_trim", lambda: None)
    native_memory.give_back()


def test_the_real_call_runs() -> None:
    native_memory.give_back()  # glibc here: returns what it can, raises nothing
