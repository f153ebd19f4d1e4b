"""A picture of the memory: every entity, every fact with both clocks, which entities are
mentioned together, a few notes per entity, and the conflicts, as plain values a page can
draw (``doxa view``, ``/view``).

Read from the working memory, which already holds all of it indexed (no graph query: the
conflicts' explicit contradictions come from ``provenance``, like ``conflicts``). Every
function here reads and changes nothing: the caller holds the working memory's read lock.

What a page can afford is bounded here, not in the page: facts beyond ``MAX_FACTS`` (the
oldest first), notes beyond ``NOTES_PER_ENTITY`` per entity, co-mentions beyond
``CO_MENTIONS`` per entity and conflicts beyond ``MAX_CONFLICTS`` are left out and counted
(``Picture.left_out``). Every entity stays: the page draws the most mentioned and finds the
rest by search.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from doxa.store.event_time import shown
from doxa.store.values import decimal_text, from_micros
from doxa.store.working_memory import NO_END, Entry, WorkingMemory, topic_key

#: Facts pictured at most (the most recently recorded kept).
MAX_FACTS = 50_000
#: The latest notes (observations that are not facts) kept per entity, and their length.
NOTES_PER_ENTITY = 3
NOTE_CHARS = 280
#: Entities mentioned together kept per entity (the most often first).
CO_MENTIONS = 5
#: Conflicts pictured at most.
MAX_CONFLICTS = 1000


@dataclass(frozen=True)
class PicturedEntity:
    """One entity: a fact's subject or object, or a topic (``doxa.store.entities``).

    Attributes:
        key: its name as matched (``topic_key``: case- and space-insensitive, a leading
            article aside).
        name: as first written.
        observations: unretracted observations naming it.
        facts: its current facts (as subject or object).
    """

    key: str
    name: str
    observations: int
    facts: int


@dataclass(frozen=True)
class PicturedFact:
    """One fact, current or not, with its times.

    Attributes:
        id: the observation's id.
        subject, predicate, object: the triple as written; ``subject_key`` and
            ``object_key`` name the entities.
        confidence: exact, as text.
        agents: who believes it.
        start: valid from (or observed at); ``end``: valid until, as known now (None: open).
        observed_at, recorded_at: when it was said, and when the memory learnt it.
        retracted_at: when it was retracted (None: held).
        superseded_by: the ids of the facts that superseded it.
        ended_by: the id of the fact that ended it (through plans replaced before they
            began: ``WorkingMemory.ender``), or None; ``superseded_known``: when the memory
            knew it (later than both facts when a share, a forget or a start linked them).
        current: held and valid now; ``later``: held, and it holds only after now.
        held: it holds at some time (a plan replaced before it began never does).
        events: when what it tells of happened, as its words placed it (shown).
    """

    id: str
    subject: str
    subject_key: str
    predicate: str
    object: str
    object_key: str
    confidence: str
    agents: tuple[str, ...]
    start: datetime
    end: datetime | None
    observed_at: datetime
    recorded_at: datetime
    retracted_at: datetime | None
    superseded_by: tuple[str, ...]
    ended_by: str | None
    superseded_known: datetime | None
    current: bool
    later: bool
    held: bool
    events: tuple[str, ...]


@dataclass(frozen=True)
class PicturedNote:
    """An observation that is not a fact, named by the entities it mentions (``about``)."""

    id: str
    text: str
    observed_at: datetime
    about: tuple[str, ...]


@dataclass(frozen=True)
class PicturedConflict:
    """A conflict as ``Memory.conflicts`` describes it: ``kind`` "contradiction" (explicit)
    or "clash" (facts of one subject and single-valued predicate with different objects,
    holding at one time, now or to come), the two observations with their texts and
    believers, the entities either side names (``about``), and, for a clash to come,
    where both sides first hold (``begins``)."""

    kind: str
    a: str
    b: str
    a_text: str
    b_text: str
    a_agents: tuple[str, ...]
    b_agents: tuple[str, ...]
    about: tuple[str, ...]
    begins: datetime | None = None


@dataclass(frozen=True)
class Picture:
    """The whole memory at ``taken_at``, bounded for a page (see the module docstring).

    Attributes:
        entities: most mentioned first (then by name).
        facts: in the order recorded.
        mentioned_together: (entity key, entity key, how many observations name both).
        notes: the latest few per entity.
        conflicts: contradictions first, then clashes.
        observations: every unretracted observation.
        left_out: how many the bounds left out, by kind ("facts", "notes", "conflicts").
    """

    taken_at: datetime
    observations: int
    entities: tuple[PicturedEntity, ...]
    facts: tuple[PicturedFact, ...]
    mentioned_together: tuple[tuple[str, str, int], ...]
    notes: tuple[PicturedNote, ...]
    conflicts: tuple[PicturedConflict, ...]
    left_out: dict[str, int]


def entities(working: WorkingMemory, at: int) -> list[PicturedEntity]:
    """Every entity some observation (retracted or not) names, most mentioned first."""
    n = len(working)
    # Python lists and sets: most entities have a few rows, where numpy's per-call cost
    # (a union of two arrays) dominated, 2 s over 10k entities.
    live = working.live[:n].tolist()
    current = (
        working.live[:n] & (working.valid_from[:n] <= at) & (working.valid_until[:n] > at)
    ).tolist()
    found: list[PicturedEntity] = []
    for key in working.topic_rows.keys() | working.entity_facts.keys():
        facts = set(working.entity_facts.get(key, ()))
        rows = facts.union(working.topic_rows.get(key, ()))
        if not rows:
            continue
        name = working.entity_names.get(key) or working.topic_names.get(key) or key
        mentions = sum(1 for row in rows if live[row])
        found.append(PicturedEntity(key, name, mentions, sum(1 for r in facts if current[r])))
    # Names of a count alphabetically in any case, as the Markdown index lists them ("active"
    # came after "Zoë"); the key keeps the order one where two differ in case alone.
    found.sort(key=lambda e: (-e.observations, e.name.casefold(), e.key))
    return found


def _fact(working: WorkingMemory, row: int, entry: Entry, at: int) -> PicturedFact:
    end = working.end_of(row)
    start = entry.valid_from or entry.observed_at
    link = working.ender(row)
    holds = end > int(working.valid_from[row])
    return PicturedFact(
        id=entry.id,
        subject=entry.subject or "",
        subject_key=topic_key(entry.subject or ""),
        predicate=entry.predicate or "",
        object=entry.object or "",
        object_key=topic_key(entry.object or ""),
        confidence=decimal_text(working.shown_confidence(row, None, at)),
        agents=entry.agents,
        start=start,
        end=None if end == NO_END else from_micros(end),
        observed_at=entry.observed_at,
        recorded_at=entry.recorded_at,
        retracted_at=entry.retracted_at,
        superseded_by=tuple(working.superseders(row)),
        ended_by=None if link is None else working.entries[link[0]].id,
        superseded_known=None if link is None else from_micros(link[1]),
        current=working.is_current(row, at),
        later=bool(working.live[row]) and holds and int(working.valid_from[row]) > at,
        held=holds,
        events=tuple(shown(e) for e in entry.event_times),
    )


def _rows(working: WorkingMemory) -> list[tuple[int, Entry]]:
    """Every observation not purged, with its row, in the order recorded."""
    return [
        (row, entry)
        for row, entry in enumerate(working.entries[: len(working)])
        if working.kept(row)
    ]


def _notes(working: WorkingMemory, counted: dict[str, int]) -> list[PicturedNote]:
    """The latest ``NOTES_PER_ENTITY`` unretracted notes of each entity, each note once."""
    taken: dict[int, set[str]] = {}
    for key, topic_rows in working.topic_rows.items():
        kept = 0
        for row in reversed(topic_rows):
            entry = working.entries[row]
            if entry.subject is not None or not working.live[row]:
                continue
            if working.row_of.get(entry.id) != row:
                continue
            if kept == NOTES_PER_ENTITY:
                counted["notes"] += 1
                continue
            kept += 1
            taken.setdefault(row, set()).add(key)
    notes = []
    for row in sorted(taken):
        entry = working.entries[row]
        text = entry.text if len(entry.text) <= NOTE_CHARS else entry.text[: NOTE_CHARS - 1] + "…"
        notes.append(PicturedNote(entry.id, text, entry.observed_at, tuple(sorted(taken[row]))))
    return notes


def _mentioned_together(working: WorkingMemory) -> list[tuple[str, str, int]]:
    """Pairs of entities mentioned together (``WorkingMemory.mentioned_with``: topics of one
    live observation, and a live fact's topics with its two ends), each entity's
    ``CO_MENTIONS`` most frequent."""
    pairs: dict[tuple[str, str], int] = {}
    for key in working.topic_links.keys() | working.fact_links.keys():
        others = working.mentioned_with(key)
        for other in heapq.nlargest(CO_MENTIONS, others, key=others.__getitem__):
            if other != key:
                pair = (key, other) if key < other else (other, key)
                pairs[pair] = max(pairs.get(pair, 0), others[other])
    return [(a, b, count) for (a, b), count in sorted(pairs.items())]


def _named(working: WorkingMemory, observation_id: str) -> set[str]:
    row = working.row_of.get(observation_id)
    if row is None:
        return set()
    entry = working.entries[row]
    named = {topic_key(t) for t in entry.topics}
    if entry.subject is not None:
        named |= {topic_key(entry.subject), topic_key(entry.object or "")}
    return named - {""}


def conflicts(working: WorkingMemory, found: list[dict[str, Any]]) -> list[PicturedConflict]:
    """``found`` (described conflicts, as ``Memory.conflicts`` returns them) as values."""
    return [
        PicturedConflict(
            kind=c["kind"],
            a=c["a"],
            b=c["b"],
            a_text=c["a_text"],
            b_text=c["b_text"],
            a_agents=tuple(c.get("a_agents") or ()),
            b_agents=tuple(c.get("b_agents") or ()),
            about=tuple(sorted(_named(working, c["a"]) | _named(working, c["b"]))),
            begins=c.get("begins"),
        )
        for c in found[:MAX_CONFLICTS]
    ]


def picture(working: WorkingMemory, at: int, found_conflicts: list[dict[str, Any]]) -> Picture:
    """The memory at ``at`` (microseconds, now), with ``found_conflicts`` described (see
    ``Memory.picture``). The caller holds the read lock."""
    left_out = {"facts": 0, "notes": 0, "conflicts": max(0, len(found_conflicts) - MAX_CONFLICTS)}
    rows = _rows(working)
    fact_rows = [(row, e) for row, e in rows if e.subject is not None]
    if len(fact_rows) > MAX_FACTS:
        left_out["facts"] = len(fact_rows) - MAX_FACTS
        fact_rows = fact_rows[-MAX_FACTS:]
    n = len(working)
    return Picture(
        taken_at=from_micros(at),
        observations=int(working.live[:n].sum()),
        entities=tuple(entities(working, at)),
        facts=tuple(_fact(working, row, e, at) for row, e in fact_rows),
        mentioned_together=tuple(_mentioned_together(working)),
        notes=tuple(_notes(working, left_out)),
        conflicts=tuple(conflicts(working, found_conflicts)),
        left_out=left_out,
    )
