"""The recall journal: a recall's event survives its process being killed before the event
reached the graph, and the next opening writes it, so the recall can still be judged."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from doxa.store import Memory, MemoryDraft
from doxa.store.recall_journal import Event, RecallJournal, line_of
from tests.conftest import hash_settings

AT = datetime(2026, 12, 4, 9, 30, tzinfo=UTC)


def event(n: int) -> Event:
    return (f"rec_{n}", f"query {n}", None if n % 2 else "scout", AT, [("obs_1", 0, 0.5, "")])


def test_segments_hold_what_the_graph_has_not_got(tmp_path: Path) -> None:
    journal = RecallJournal(tmp_path / "recalls")
    journal.append(event(1))
    first = journal.rotate()  # taken for the graph
    journal.append(event(2))
    journal.close()

    # Opened again (another process): both are pending, oldest first.
    again = RecallJournal(tmp_path / "recalls")
    assert again.pending() == [event(1), event(2)]

    journal = RecallJournal(tmp_path / "recalls")
    journal.drop_through(first)  # the first batch committed
    assert [e[0] for e in journal.pending()] == ["rec_2"]
    journal.clear()
    assert journal.pending() == []
    assert not list((tmp_path / "recalls").iterdir())


def test_an_idle_rotation_spends_no_segment(tmp_path: Path) -> None:
    journal = RecallJournal(tmp_path / "recalls")
    journal.append(event(1))
    first = journal.rotate()
    assert journal.rotate() == journal.rotate() == first  # nothing appended since
    journal.append(event(2))
    assert journal.rotate() == first + 1


def test_a_line_cut_short_by_a_kill_is_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "recalls"
    folder.mkdir()
    (folder / "000000000007.jsonl").write_bytes(line_of(event(1)) + line_of(event(2))[:25])
    journal = RecallJournal(folder)
    assert journal.pending() == [event(1)]
    journal.append(event(3))  # a new segment after the ones found
    assert sorted(p.name for p in folder.iterdir()) == ["000000000007.jsonl", "000000000008.jsonl"]
    journal.close()


def test_the_graph_write_empties_the_journal(tmp_path: Path) -> None:
    memory = Memory.open(hash_settings(tmp_path / "m").store)
    memory.warm_up()
    try:
        memory.remember([MemoryDraft(text="The ferry leaves at nine.")])
        memory.recall("ferry")
        assert list((tmp_path / "m" / "recalls").glob("*.jsonl"))
    finally:
        memory.close()
    assert not list((tmp_path / "m" / "recalls").glob("*.jsonl"))


KILLED_AFTER_RECALL = """
import os, sys
from doxa.store import Memory, MemoryDraft
from tests.conftest import hash_settings
memory = Memory.open(hash_settings(sys.argv[1]).store)
memory.warm_up()
[stored] = memory.remember([MemoryDraft(text="The ferry leaves at nine.")])
memory._recalls.stop()  # as if killed before the next batch reached the graph
outcome = memory.recall("ferry")
print(outcome.recall_id, stored.observation_id, flush=True)
os._exit(0)
"""


def test_a_recall_of_a_killed_process_can_be_judged_by_the_next(tmp_path: Path) -> None:
    data_dir = tmp_path / "m"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_RECALL, str(data_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    recall_id, observation_id = done.stdout.split()

    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        judged = memory.feedback(recall_id, accepted=[observation_id])
        assert judged.accepted == [observation_id]
        assert not list((data_dir / "recalls").glob("*.jsonl"))
    finally:
        memory.close()
