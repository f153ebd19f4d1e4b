"""The memory's time zone: whose calendar a memory told, or a question asked, without a time
is read in (``timezone``: local, UTC or an IANA name)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import kuzu
import pytest
from pydantic import ValidationError

from doxa.server.settings import Settings
from doxa.store import drafts, recall
from doxa.store.memory import Memory, MemoryDraft
from doxa.store.settings import StoreSettings

#: 21:30 on Sunday 6 December in California: already the 7th in UTC.
EVENING = datetime(2026, 12, 7, 5, 30, tzinfo=UTC)
ZONES = [("America/Los_Angeles", "2026-12-07"), ("UTC", "2026-12-08")]


def opened(settings: Settings, zone: str) -> Memory:
    memory = Memory.open(settings.store.model_copy(update={"timezone": zone}))
    memory.warm_up()
    return memory


def tomorrow(memory: Memory, observation_id: str) -> str:
    [day] = memory.evidence(observation_id)["event_times"]
    return str(day.start.date().isoformat())


@pytest.mark.parametrize(("zone", "day"), ZONES)
def test_a_memory_told_and_a_question_asked_without_a_time_are_read_in_its_calendar(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, zone: str, day: str
) -> None:
    monkeypatch.setattr(drafts, "utc_now", lambda: EVENING)
    monkeypatch.setattr(recall, "utc_now", lambda: EVENING)
    memory = opened(settings, zone)
    try:
        [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.")])
        assert tomorrow(memory, done.observation_id) == day
        asked = recall.question("what do I have tomorrow?", zone=zone)
        assert asked.window is not None
        start = datetime.fromtimestamp(asked.window[0] / 1e6, UTC)
        end = datetime.fromtimestamp(asked.window[1] / 1e6, UTC)
        assert start.date().isoformat() <= day < end.date().isoformat()
        assert memory.recall("what do I have tomorrow?").results[0].observation_id == (
            done.observation_id
        )
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("zone", "day"), [("America/Los_Angeles", "2026-11-08"), ("UTC", "2026-11-09")]
)
def test_words_read_again_at_a_start_are_read_in_its_calendar(
    settings: Settings, zone: str, day: str
) -> None:
    # The graph keeps no offset: what a migration clears is read again in the memory's zone.
    memory = opened(settings, "UTC" if zone != "UTC" else "America/Los_Angeles")
    said = "2026-11-08T05:30:00Z"  # 21:30 on 7 November in California
    [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.", observed_at=said)])
    memory.close()
    database = kuzu.Database(str(Path(settings.store.data_dir) / "graph"))
    connection = kuzu.Connection(database)
    connection.execute("MATCH (o:Observation) SET o.event_times = NULL")
    connection.close()
    database.close()
    memory = opened(settings, zone)
    try:
        assert tomorrow(memory, done.observation_id) == day
    finally:
        memory.close()


@pytest.mark.parametrize("zone", ["Mars/Olympus", "../etc/passwd", " "])
def test_a_time_zone_that_names_none_is_refused_saying_what_to_give(
    tmp_path: Path, zone: str
) -> None:
    with pytest.raises(ValidationError) as caught:
        StoreSettings(data_dir=tmp_path, timezone=zone)
    assert "'local' (the machine's), 'UTC' or an IANA name such as 'Europe/Paris'" in str(
        caught.value
    )


def test_local_and_utc_are_read_in_any_case(tmp_path: Path) -> None:
    assert StoreSettings(data_dir=tmp_path, timezone="Local").timezone == "local"
    assert StoreSettings(data_dir=tmp_path, timezone=" utc ").timezone == "UTC"
