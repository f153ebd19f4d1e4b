"""The recall journal: each recall's event appended to a file as the recall answers, so a
process killed before its events reach the graph loses none of them.

The recall log writes events to the graph in batches every 0.25 s (``recall_log``); a process
killed with -9 in between took those events with it, and a feedback its client then sent to
the next process ("no recall with id …") failed. Appending a line to a file costs a system
call (microseconds), and what a killed process wrote is in the operating system's page cache,
not lost with it (a power cut may lose the last lines; the recall still answered, only its
feedback would fail).

Lines go to numbered segments in ``<data dir>/recalls/``: taking a batch for the graph starts
a new segment (``rotate``), and once that batch is committed every segment up to it is
removed (``drop_through``). The next opening writes what the segments still hold and is not
yet in the graph (``pending``, then ``clear``). One process writes the journal: the one
that owns the data directory.
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

#: (recall id, query, agent, at, [(observation id, rank, score, features)]) as
#: ``GraphWriter.record_recalls`` takes it; features as ``learning.features_text`` writes
#: them, or "".
Event = tuple[str, str, str | None, datetime, list[tuple[str, int, float, str]]]

_SUFFIX = ".jsonl"


def line_of(event: Event) -> bytes:
    """One event as a line of JSON."""
    recall_id, query, agent, at, results = event
    return (
        json.dumps(
            [recall_id, query, agent, at.isoformat(), [list(r) for r in results]],
            ensure_ascii=False,
            separators=(",", ":"),
        )
        + "\n"
    ).encode()


def event_of(line: str) -> Event:
    """The event a line holds.

    Raises:
        ValueError: the line is not one (a process killed in the middle of writing it).
    """
    data: Any = json.loads(line)
    recall_id, query, agent, at, results = data
    return (
        str(recall_id),
        str(query),
        None if agent is None else str(agent),
        datetime.fromisoformat(at),
        [(str(o), int(rank), float(score), str(f)) for o, rank, score, f in results],
    )


class RecallJournal:
    """Segments of recall events in ``folder``; not thread-safe (the recall log's lock
    guards it).

    Args:
        folder: where the segments are kept (created if absent).
    """

    def __init__(self, folder: Path) -> None:
        self._folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        numbers = self._numbers()
        self._segment = max(numbers, default=0) + 1
        # The first segment that may still be on disk (``drop_through`` counts from it).
        self._oldest = min(numbers, default=self._segment)
        self._fd: int | None = None

    def append(self, event: Event) -> None:
        """Append ``event`` to the current segment."""
        if self._fd is None:
            path = self._path(self._segment)
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        os.write(self._fd, line_of(event))

    def rotate(self) -> int:
        """Close the current segment (the next event starts another) and return its
        number: the events appended so far are in it or in earlier ones. With nothing
        appended since the last rotation, the number stays: an idle process batches every
        0.25 s, and each spent number is a file ``drop_through`` would remove."""
        if self._fd is None:
            return self._segment - 1
        self._close()
        closed = self._segment
        self._segment += 1
        return closed

    def drop_through(self, segment: int) -> None:
        """Remove the segments up to ``segment``: their events are in the graph. Numbers
        are tracked, not listed: this runs at every batch, four times a second."""
        for number in range(self._oldest, segment + 1):
            self._path(number).unlink(missing_ok=True)
        self._oldest = max(self._oldest, segment + 1)

    def pending(self) -> list[Event]:
        """The events of every segment, oldest first; a line that cannot be read (the last
        one, when a process was killed while writing it) is skipped with a warning."""
        events: list[Event] = []
        for number in sorted(self._numbers()):
            if number >= self._segment:
                continue
            for text in self._path(number).read_text(errors="replace").splitlines():
                if not text.strip():
                    continue
                try:
                    events.append(event_of(text))
                except (ValueError, TypeError) as error:
                    log.warning("recall journal %s: a line left unreadable (%s)", number, error)
        return events

    def clear(self) -> None:
        """Remove every segment written before this journal was opened."""
        self.drop_through(self._segment - 1)

    def close(self) -> None:
        """Close the current segment's file."""
        self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _path(self, number: int) -> Path:
        return self._folder / f"{number:012d}{_SUFFIX}"

    def _numbers(self) -> list[int]:
        found = []
        for path in self._folder.glob(f"*{_SUFFIX}"):
            if path.stem.isdigit():
                found.append(int(path.stem))
        return found
