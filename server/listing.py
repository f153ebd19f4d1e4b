"""``doxa recall --all``: every observation the memory holds, newest first.

The recall tool answers a question: at most 100 results, and an empty query needs a filter,
so it cannot list a whole memory. The export can: this command exports the memory to a
scratch file (through the server that owns the data directory when one does, as ``doxa
export`` does) and reads the observations back with who believes them, their topics, what
replaced them, when what they tell of happened and the records they are, as recall shows
them. Retracted observations are left out, as recall leaves them out.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from doxa.server.markdown_export import (
    fact_state,
    holders,
    moment,
    read_tables,
    shown_confidence,
    superseders,
    withdrawn_from,
)
from doxa.server.settings import Settings
from doxa.store.event_time import loaded, most_specific, shown
from doxa.store.exporting import records_in


def listing(settings: Settings, limit: int | None = None) -> dict[str, Any]:
    """Every unretracted observation, newest first (observed time, then the order they were
    remembered in); the first ``limit`` when given. Returns ``total`` (how many the memory
    holds) and ``results`` (shaped as a recall's results, with topics and agents)."""
    from doxa.store.sharing import SharedMemory

    with tempfile.TemporaryDirectory() as scratch:
        export = Path(scratch) / "memory.jsonl"
        shared = SharedMemory(settings.store, trains=False)
        try:
            shared.export(export)
        finally:
            shared.close()
        tables = read_tables(export)
    live = [o for o in tables["Observation"] if not o.get("retracted_at")]
    live.sort(key=lambda o: (moment(o["observed_at"]), o.get("seq") or 0), reverse=True)
    shown = live if limit is None else live[:limit]
    links = _Links(tables)
    return {"total": len(live), "results": [links.item(o) for o in shown]}


class _Links:
    """Topics, believing agents, replacements and records per observation id, from an
    export."""

    def __init__(self, tables: dict[str, list[dict[str, Any]]]) -> None:
        self.records = records_in(tables)
        self.topics: dict[str, set[str]] = defaultdict(set)
        for link in tables["MENTIONS"]:
            self.topics[link["from"]].add(link["to"])
        self.now = datetime.now(UTC)
        # As recall names them now: a belief a later fact of its agent withdrew too, while
        # that agent's facts hold it.
        self.agents = holders(tables, self.now)
        self.withdrawn = withdrawn_from(tables)
        self.superseded_by = superseders(tables)

    def item(self, observation: dict[str, Any]) -> dict[str, Any]:
        """One observation as a recall's result shows it, with its topics and agents."""
        oid = observation["id"]
        record = self.records.get(oid)
        item: dict[str, Any] = {"observation_id": oid}
        # The record says it once, as a recall shows it: its line in words would say it twice.
        if record is None or not record.is_in_words(observation["text"]):
            item["text"] = observation["text"]
        held = self.agents.get(oid, {})
        item |= {
            "confidence": shown_confidence(observation, held, self.withdrawn),
            "observed_at": observation["observed_at"],
        }
        if record is not None:
            item["record"] = {"type": record.type, "fields": record.shown_fields()}
        happened = most_specific(loaded(observation.get("event_times")))
        if happened is not None:
            item["happened"] = shown(happened)
        if observation.get("source"):
            item["source"] = observation["source"]
        replaced = self.superseded_by.get(oid, [])
        # As recall tells it now: valid now (one ended or beginning later is not current).
        item["current"] = not observation.get("subject") or (
            fact_state(observation, replaced, self.now) == "current"
        )
        if replaced:
            item["superseded_by"] = replaced
        item["topics"] = sorted(self.topics.get(oid, ()))
        item["agents"] = sorted(held)
        return item
