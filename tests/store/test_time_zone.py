"""The memory's time zone: whose calendar a memory told, or a question asked, without a time
is read in (``timezone``: local, UTC or an IANA name)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import kuzu
import pytest
from pydantic import ValidationError

from doxa.server.settings import Settings
from doxa.store import drafts, recall
from doxa.store import memory as memory_module
from doxa.store.importing import import_file
from doxa.store.memory import Memory, MemoryDraft
from doxa.store.settings import StoreSettings

#: 21:30 on Sunday 6 December in California: already the 7th in UTC.
EVENING = datetime(2026, 12, 7, 5, 30, tzinfo=UTC)
ZONES = [("America/Los_Angeles", "2026-12-07"), ("UTC", "2026-12-08")]


def opened(settings: Settings, zone: str) -> Memory:
    memory = Memory.open(settings.store.model_copy(update={"timezone": zone}))
    memory.warm_up()
    return memory


def tamper(settings: Settings, *statements: str) -> None:
    """Change the graph behind doxa's back, as a migration would (the memory is closed)."""
    database = kuzu.Database(str(Path(settings.store.data_dir) / "graph"))
    connection = kuzu.Connection(database)
    try:
        for statement in statements:
            connection.execute(statement)
    finally:
        connection.close()
        database.close()


def tomorrow(memory: Memory, observation_id: str) -> str:
    [day] = memory.evidence(observation_id)["event_times"]
    return str(day.start.date().isoformat())


@pytest.mark.parametrize(("zone", "day"), ZONES)
def test_a_memory_told_and_a_question_asked_without_a_time_are_read_in_its_calendar(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, zone: str, day: str
) -> None:
    monkeypatch.setattr(drafts, "utc_now", lambda: EVENING)
    monkeypatch.setattr(memory_module, "utc_now", lambda: EVENING)
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
    # An observation stored before its offset was kept (none stored): what a migration
    # clears is read again in the memory's zone.
    memory = opened(settings, "UTC" if zone != "UTC" else "America/Los_Angeles")
    said = "2026-11-08T05:30:00Z"  # 21:30 on 7 November in California
    [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.", observed_at=said)])
    memory.close()
    tamper(settings, "MATCH (o:Observation) SET o.event_times = NULL, o.told_offset = NULL")
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


#: 21:30 on Thursday 3 December in California ("tomorrow" is the 4th), 05:30Z on the 4th.
CALIFORNIAN = "2026-12-03T21:30:00-08:00"


def test_words_read_again_at_a_start_are_read_in_the_offset_they_were_told_in(
    settings: Settings,
) -> None:
    memory = opened(settings, "UTC")
    [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.", observed_at=CALIFORNIAN)])
    assert tomorrow(memory, done.observation_id) == "2026-12-04"
    memory.close()
    [[kept]] = graph_rows(settings, "MATCH (o:Observation) RETURN o.told_offset")
    assert kept == -480
    tamper(settings, "MATCH (o:Observation) SET o.event_times = NULL")
    memory = opened(settings, "UTC")
    try:
        assert tomorrow(memory, done.observation_id) == "2026-12-04"
    finally:
        memory.close()
    # Read once and stored again: the next start reads the same.
    [[stored]] = graph_rows(settings, "MATCH (o:Observation) RETURN o.event_times")
    assert stored is not None and "2026-12-04" in stored


def test_words_told_without_a_time_are_read_again_in_the_zone_they_were_told_in(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The memory's zone then, not now: a later change of the setting leaves them as read.
    # Told (and stamped) at 21:30 on 3 December in California, 05:30Z on the 4th.
    told = datetime(2026, 12, 4, 5, 30, tzinfo=UTC)
    monkeypatch.setattr(drafts, "utc_now", lambda: told)
    monkeypatch.setattr(memory_module, "utc_now", lambda: told)
    memory = opened(settings, "America/Los_Angeles")
    [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.")])
    memory.close()
    [[kept]] = graph_rows(settings, "MATCH (o:Observation) RETURN o.told_offset")
    assert kept == -480
    tamper(settings, "MATCH (o:Observation) SET o.event_times = NULL")
    memory = opened(settings, "UTC")
    try:
        assert tomorrow(memory, done.observation_id) == "2026-12-04"
    finally:
        memory.close()


def test_an_export_imported_again_reads_its_words_in_the_offset_they_were_told_in(
    settings: Settings, tmp_path: Path
) -> None:
    memory = opened(settings, "UTC")
    [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.", observed_at=CALIFORNIAN)])
    memory.export(str(tmp_path / "memory.jsonl"))
    memory.close()
    lines = [json.loads(line) for line in (tmp_path / "memory.jsonl").read_text().splitlines()]
    [observation] = [line for line in lines if line.get("table") == "Observation"]
    assert observation["told_offset"] == -480
    assert observation["observed_at"] == "2026-12-04T05:30:00Z"
    # Null event times are read again at import (as a file written before a migration).
    observation["event_times"] = None
    (tmp_path / "again.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    fresh = settings.store.model_copy(update={"data_dir": tmp_path / "fresh", "timezone": "UTC"})
    import_file(fresh, tmp_path / "again.jsonl")
    imported = Memory.open(fresh)
    try:
        imported.warm_up()
        assert tomorrow(imported, done.observation_id) == "2026-12-04"
    finally:
        imported.close()


def test_an_older_file_without_offsets_is_read_in_the_memorys_zone(
    settings: Settings, tmp_path: Path
) -> None:
    memory = opened(settings, "UTC")
    [done] = memory.remember([MemoryDraft("Dentist tomorrow at 9.", observed_at=CALIFORNIAN)])
    memory.export(str(tmp_path / "memory.jsonl"))
    memory.close()
    lines = [json.loads(line) for line in (tmp_path / "memory.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("table") == "Observation":
            del line["told_offset"]
            line["event_times"] = None
    (tmp_path / "older.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    fresh = settings.store.model_copy(update={"data_dir": tmp_path / "fresh", "timezone": "UTC"})
    import_file(fresh, tmp_path / "older.jsonl")
    imported = Memory.open(fresh)
    try:
        imported.warm_up()
        assert tomorrow(imported, done.observation_id) == "2026-12-05"
    finally:
        imported.close()
    [[kept]] = graph_rows(
        settings.model_copy(update={"store": fresh}), "MATCH (o:Observation) RETURN o.told_offset"
    )
    assert kept is None


def graph_rows(settings: Settings, query: str) -> list[list[object]]:
    """What ``query`` reads from the graph (the memory is closed)."""
    database = kuzu.Database(str(Path(settings.store.data_dir) / "graph"))
    connection = kuzu.Connection(database)
    try:
        result = connection.execute(query)
        assert not isinstance(result, list)
        found = []
        while result.has_next():
            found.append(list(result.get_next()))
        return found
    finally:
        connection.close()
        database.close()


@pytest.mark.parametrize("zone", ["America/Los_Angeles", "Asia/Tokyo", "UTC"])
def test_a_note_made_today_is_placed_on_the_day_of_its_zone_not_the_utc_day(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, zone: str
) -> None:
    # 21:30 on Sunday 6 December in California is 05:30Z on the 7th: a note made then was
    # made on the 6th, not "tomorrow" (the 7th there), which a question of tomorrow asked
    # then put first; in Tokyo, 14:30 on the 7th, it is no note of yesterday.
    monkeypatch.setattr(drafts, "utc_now", lambda: EVENING)
    # The memory's clock too: recorded by the real one, after EVENING, the note was not yet
    # known to a recall at EVENING once that had passed.
    monkeypatch.setattr(memory_module, "utc_now", lambda: EVENING)
    monkeypatch.setattr(recall, "utc_now", lambda: EVENING)
    memory = opened(settings, zone)
    try:
        memory.remember([MemoryDraft("The team pizza was great.")])
        local = EVENING.astimezone(ZoneInfo(zone)).date()
        asked = {
            "what did I do yesterday?": False,
            "what happened today?": True,
            "what do I have tomorrow?": False,
        }
        for query, placed in asked.items():
            [found] = memory.recall(query).results
            assert ("time" in found.scores) is placed, (query, local, found.scores)
    finally:
        memory.close()
