"""Freezing the heap once the working memory is loaded (``store/long_lived.py``)."""

from __future__ import annotations

import gc
import logging

import pytest

from doxa.store.long_lived import LongLived


def _uncounted() -> int:
    raise AssertionError("the frozen objects were counted")


def test_a_start_does_not_count_the_frozen_objects_unless_the_count_is_logged(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Counting walks every frozen object: 30 ms a start in a test process, for a debug line.
    monkeypatch.setattr(gc, "get_freeze_count", _uncounted)
    caplog.set_level(logging.INFO, logger="doxa.store.long_lived")
    LongLived(every=10).settle(5)
    assert not [r for r in caplog.records if r.name == "doxa.store.long_lived"]


def test_the_count_is_logged_at_debug_and_a_small_growth_does_not_freeze_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="doxa.store.long_lived")
    kept = LongLived(every=10)
    kept.settle(5)
    kept.settle(14)  # grew by 9 < 10: not again
    kept.settle(15)
    said = [r.getMessage() for r in caplog.records if r.name == "doxa.store.long_lived"]
    assert len(said) == 2
    assert said[0].startswith("heap frozen at 5 rows (") and " objects) in " in said[0]
    assert said[1].startswith("heap frozen at 15 rows (")
