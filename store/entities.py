"""Entities: one name at a glance, from the working memory.

An entity is any name the memory holds something about: a fact's subject or object, or a
topic, matched as topics are (``topic_key``: case- and space-insensitively, a leading article
before a word aside: "the user" is "User"). So the fact ``{Bob, manager of, Alice}`` is about
Alice too, though Alice was never a topic.

``view`` gathers what is known about one entity: its current facts grouped by predicate (as
subject and as object), its timeline (facts started, superseded, ended, retracted, in valid
time order, each with its record time), the entities within two hops (through facts, and
through topics mentioned together) with what links them, counts, and a summary built without
a model from its best-supported current facts (``summary``). ``listing`` ranks every entity
by the observations mentioning it.

Two clocks, as recall keeps them (``WorkingMemory.view``): ``at`` is valid time (what was
true then), ``known`` record time (what the memory held then: facts recorded later,
supersessions recorded later, beliefs taken later and retractions made later are not seen).

Every function here reads the working memory and changes nothing: the caller holds its read
lock. ``Summaries`` keeps each entity's summary in the graph (``Topic.summary``), refreshed
on its own thread after the writes that change the entity's facts.
"""

from __future__ import annotations

import heapq
import logging
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any

import numpy as np

from doxa.store.drafts import predicate_key
from doxa.store.values import from_micros, micros
from doxa.store.working_memory import NO_END, Entry, WorkingMemory, topic_key

log = logging.getLogger(__name__)

#: How many entities ``listing`` returns at most, and ``related`` per hop.
MAX_ENTITIES = 500
MAX_RELATED = 20
#: An entity linked to more than this many others is a hub (the user of an assistant, a
#: team): what else it links to is not two hops from each of its neighbours ("about Anna",
#: the user's sister, listed the user's allergies, milk and seat).
HUB_LINKS = 8
#: Timeline events shown (the latest); the count of all is in ``counts``.
MAX_EVENTS = 40
#: Values shown per predicate (the best supported); ``counts["unlisted"]`` counts the rest.
MAX_VALUES = 20
#: What a summary names: predicates, values per predicate, incoming facts, characters.
_SUMMARY_PREDICATES = 6
_SUMMARY_VALUES = 3
_SUMMARY_INCOMING = 3
_SUMMARY_CHARS = 400
#: Topics mentioned together taken per entity reached in one hop, when walking on to the
#: second (each of the entity's own is taken, up to ``MAX_RELATED``).
_CO_MENTIONS = 5


def exists(working: WorkingMemory, key: str, known: int | None = None) -> bool:
    """Whether any observation (retracted or not, but not purged) names the entity; with
    ``known`` (record time, microseconds), one recorded by then."""
    return any(
        working.kept(row) and (known is None or working.recorded_at[row] <= known)
        for index in (working.entity_facts, working.topic_rows)
        for row in index.get(key, ())
    )


def display_name(working: WorkingMemory, key: str) -> str:
    """The entity's name as first written in a fact, else as a topic."""
    return working.entity_names.get(key) or working.topic_names.get(key) or key


@dataclass(frozen=True)
class Clock:
    """The two times a view is taken at, in microseconds: valid time ``at`` and record time
    ``known`` (None: now). ``until``: show timeline events up to then (None: all)."""

    at: int
    known: int | None = None
    until: int | None = None


@dataclass
class _Fact:
    """One fact row as the clock sees it."""

    row: int
    entry: Entry
    start: int
    end: int
    held: bool  # recorded by then, and not retracted by then
    superseded_by: int | None  # the row whose start ended it, if a supersession did
    superseded_known: int | None  # when that supersession was recorded (microseconds)


def _start(entry: Entry) -> datetime:
    return entry.valid_from or entry.observed_at


def _held(working: WorkingMemory, row: int, known: int | None) -> bool:
    """Whether the memory held the observation at ``row`` at record time ``known``."""
    if known is None:
        return bool(working.live[row])
    return bool(working.recorded_at[row] <= known < working.retracted_at[row])


def _fact(working: WorkingMemory, row: int, clock: Clock) -> _Fact | None:
    """The fact at ``row`` as ``clock`` sees it, or None if purged or not yet recorded."""
    entry = working.entries[row]
    known = clock.known
    if working.row_of.get(entry.id) != row:
        return None
    if known is not None and working.recorded_at[row] > known:
        return None
    end = working.end_of(row, known)
    # A plan replaced before it began (Oslo from 2030, then Tokyo from 2030) ended nothing:
    # the fact that replaced it did.
    link = working.ender(row, known)
    by, by_since = link if link is not None else (None, None)
    held = _held(working, row, known)
    return _Fact(row, entry, int(working.valid_from[row]), end, held, by, by_since)


def _facts(working: WorkingMemory, key: str, clock: Clock) -> list[_Fact]:
    found = (_fact(working, row, clock) for row in working.entity_facts.get(key, ()))
    return [f for f in found if f is not None]


def _agents(working: WorkingMemory, row: int, clock: Clock) -> list[str]:
    """The agents believing the observation at ``row`` at the clock's two times."""
    return list(dict.fromkeys(a for a, _ in working.believers(row, clock.known, clock.at)))


def _current(facts: Iterable[_Fact], clock: Clock) -> list[_Fact]:
    return [f for f in facts if f.held and f.start <= clock.at < f.end]


def _held_rows(working: WorkingMemory, rows: Iterable[int], clock: Clock) -> list[int]:
    """Rows of observations the memory held (unretracted) at the clock's record time."""
    return [row for row in rows if _held(working, row, clock.known)]


@dataclass
class _Value:
    """One object (or subject) of a predicate, merged over the observations stating it."""

    name: str
    best: Entry
    confidence: Decimal  # the best's, as recall shows it (``WorkingMemory.shown_confidence``)
    since: datetime
    agents: set[str] = field(default_factory=set)

    def rank(self) -> tuple[Decimal, int, int]:
        """Best supported first: confidence, then believers, then the most recent."""
        return (-self.confidence, -len(self.agents), -micros(self.since))


def _grouped(
    working: WorkingMemory, facts: list[_Fact], key: str, outgoing: bool, clock: Clock
) -> dict[str, list[_Value]]:
    """Current facts by predicate (as first written), values merged by name, best first."""
    by_predicate: dict[str, dict[str, _Value]] = {}
    names: dict[str, str] = {}
    for f in facts:
        e = f.entry
        assert e.subject is not None and e.predicate is not None and e.object is not None
        if (topic_key(e.subject) == key) != outgoing:
            continue
        other = e.object if outgoing else e.subject
        pkey = predicate_key(e.predicate)
        names.setdefault(pkey, e.predicate)
        values = by_predicate.setdefault(pkey, {})
        okey = topic_key(other)
        value = values.get(okey)
        start = _start(e)
        agents = _agents(working, f.row, clock)
        shown = working.shown_confidence(f.row, clock.known, clock.at)
        if value is None:
            value = values[okey] = _Value(other, e, shown, start)
        elif (-shown, -len(agents)) < (-value.confidence, -len(value.agents)):
            value.best, value.confidence = e, shown
        value.since = min(value.since, start)
        value.agents.update(agents)
    ordered = {p: sorted(v.values(), key=_Value.rank) for p, v in by_predicate.items()}
    return {names[p]: ordered[p] for p in sorted(ordered, key=lambda p: ordered[p][0].rank())}


def _value_out(value: _Value, side: str) -> dict[str, Any]:
    return {
        side: value.name,
        "id": value.best.id,
        "confidence": value.confidence,
        "agents": sorted(value.agents),
        "since": value.since,
    }


def summary(
    name: str,
    outgoing: dict[str, list[_Value]],
    incoming: dict[str, list[_Value]],
    facts: int,
    agents: int,
    mentions: int = 0,
) -> str:
    """A line saying what is known, best-supported first, e.g. ``Alice: lives in Berlin;
    likes jazz, hiking; Bob manager of Alice (4 facts, 2 agents)``."""
    parts = []
    for predicate, values in list(outgoing.items())[:_SUMMARY_PREDICATES]:
        said = ", ".join(v.name for v in values[:_SUMMARY_VALUES])
        more = f" (+{len(values) - _SUMMARY_VALUES})" if len(values) > _SUMMARY_VALUES else ""
        parts.append(f"{_spoken(predicate)} {said}{more}")
    if len(outgoing) > _SUMMARY_PREDICATES:
        parts.append("…")
    told = [(p, v) for p, values in incoming.items() for v in values]
    told.sort(key=lambda pv: pv[1].rank())
    parts += [f"{v.name} {_spoken(p)} {name}" for p, v in told[:_SUMMARY_INCOMING]]
    if not parts:
        return f"{name}: no current facts; in {mentions} observation{'s' * (mentions != 1)}"
    counted = f" ({facts} fact{'s' * (facts != 1)}, {agents} agent{'s' * (agents != 1)})"
    text = f"{name}: " + "; ".join(parts)
    if len(text) > _SUMMARY_CHARS:
        text = text[: _SUMMARY_CHARS - 1].rstrip() + "…"
    return text + counted


def _spoken(predicate: str) -> str:
    return predicate.replace("_", " ")


def fact_words(entry: Entry) -> str:
    """An observation's fact in words: "Maya allergic to penicillin"."""
    return f"{entry.subject} {_spoken(entry.predicate or '')} {entry.object}"


def _links(
    working: WorkingMemory, key: str, clock: Clock, co_mentions: int = _CO_MENTIONS
) -> dict[str, list[str]]:
    """Entities one step from ``key``: their key -> what links them (the current facts
    naming both, as triples, then being mentioned together by what the memory held then,
    the ``co_mentions`` most often, as the page draws it), most linked first."""
    links: dict[str, list[str]] = defaultdict(list)
    for f in _current(_facts(working, key, clock), clock):
        e = f.entry
        ends = {topic_key(e.subject or ""), topic_key(e.object or "")} - {key}
        for other in ends:
            if fact_words(e) not in links[other]:
                links[other].append(fact_words(e))
    co = working.mentioned_with(key, clock.known, clock.until)
    co.pop(key, None)
    me = display_name(working, key)
    # Ties by key: in the counts' own order they came as a set of strings iterates, which
    # the hash seed changes from one process to the next (`doxa about` differed each run).
    for other in heapq.nlargest(co_mentions, sorted(co), key=co.__getitem__):
        links[other].append(f"{me} mentioned with {display_name(working, other)}")
    return dict(sorted(links.items(), key=lambda kv: -len(kv[1])))


def _related(working: WorkingMemory, key: str, clock: Clock) -> list[dict[str, Any]]:
    """Entities within two hops of ``key`` and the links that reach them."""
    # Every one mentioned with it is one hop away (only the five most often were: a sixth
    # was listed two hops away, through another, or not at all).
    first = _links(working, key, clock, MAX_RELATED)
    out: list[dict[str, Any]] = []
    for other, via in list(first.items())[:MAX_RELATED]:
        out.append({"name": display_name(working, other), "hops": 1, "via": via[:3]})
    seen = {key, *first, *working.mentioned_with(key, clock.known, clock.until)}
    second = 0
    for near, via in list(first.items())[:MAX_RELATED]:
        onwards = _links(working, near, clock)
        if len(onwards) > HUB_LINKS:
            continue
        for far, onward in onwards.items():
            if far in seen or second >= MAX_RELATED:
                continue
            seen.add(far)
            second += 1
            out.append({"name": display_name(working, far), "hops": 2, "via": [via[0], onward[0]]})
    return out


def _timeline(facts: list[_Fact], working: WorkingMemory, clock: Clock) -> list[dict[str, Any]]:
    """What happened to the facts, in valid-time order, each with its record time (at the
    same time, what ended before what started, then in the order recorded). A cancelled plan
    shows once: superseded by the cancellation, when that was told."""
    events: list[tuple[int, bool, int, dict[str, Any]]] = []
    enders = {f.superseded_by for f in facts if f.superseded_known is not None}

    def add(at: datetime, event: str, f: _Fact, recorded: datetime, **more: str) -> None:
        at_us = micros(at)
        if clock.until is not None and at_us > clock.until:
            return
        item = {"at": at, "event": event, "fact": fact_words(f.entry), "id": f.entry.id}
        starts = event != "superseded" and event != "ended"
        events.append((at_us, starts, micros(recorded), {**item, **more, "recorded": recorded}))

    for f in facts:
        e = f.entry
        # A fact that never held (a plan replaced before it began, or one told with only an
        # end already past: its start unknown) did not start.
        if f.start < f.end:
            add(_start(e), "started", f, e.recorded_at)
        if f.superseded_by is not None and f.superseded_known is not None:
            newer = working.entries[f.superseded_by]
            # Recorded with the later of the two facts (an older one can arrive late), or
            # later still (a share, a forget or a start linked them).
            recorded = from_micros(f.superseded_known)
            add(_start(newer), "superseded", f, recorded, by=newer.id)
        elif f.end != NO_END and (f.start < f.end or f.row not in enders):
            # An end that held at no time but ended a plan (a cancellation) is told by the
            # plan's ``superseded``: its own ``ended``, at the end given, came a moment
            # before it (told "now" by the agent's clock) and said the same thing twice.
            add(from_micros(f.end), "ended", f, e.recorded_at)
        if e.retracted_at is not None and not f.held:
            add(e.retracted_at, "retracted", f, e.retracted_at)
    events.sort(key=lambda ev: ev[:3])
    return [ev[3] for ev in events]


def view(working: WorkingMemory, key: str, clock: Clock) -> dict[str, Any]:
    """What is known about the entity ``key`` at ``clock`` (see the module docstring).

    Returns a dict: ``name``, ``summary``, ``facts`` and ``incoming`` (predicate -> values
    with ``object`` or ``subject``, ``id``, ``confidence``, ``agents``, ``since``: the
    first ``MAX_VALUES`` per predicate), ``timeline`` (the latest ``MAX_EVENTS``:
    ``at``, ``event``, ``fact``, ``id``, ``recorded``, ``by``), ``related`` (``name``,
    ``hops``, ``via``), ``counts`` (``observations``, ``facts``, ``believers``, ``events``,
    ``unlisted``: values left out) and ``ids`` (every observation held that names it, for
    the conflicts touching it).
    """
    name = display_name(working, key)
    facts = _facts(working, key, clock)
    current = _current(facts, clock)
    outgoing = _grouped(working, current, key, True, clock)
    incoming = _grouped(working, current, key, False, clock)
    rows = _held_rows(
        working,
        {*working.entity_facts.get(key, ()), *working.topic_rows.get(key, ())},
        clock,
    )
    believers = {a for row in rows for a in _agents(working, row, clock)}
    fact_agents = {a for f in current for a in _agents(working, f.row, clock)}
    timeline = _timeline(facts, working, clock)
    return {
        "name": name,
        "summary": summary(name, outgoing, incoming, len(current), len(fact_agents), len(rows)),
        "facts": {
            p: [_value_out(v, "object") for v in vs[:MAX_VALUES]] for p, vs in outgoing.items()
        },
        "incoming": {
            p: [_value_out(v, "subject") for v in vs[:MAX_VALUES]] for p, vs in incoming.items()
        },
        "timeline": timeline[-MAX_EVENTS:],
        "related": _related(working, key, clock),
        "counts": {
            "observations": len(rows),
            "facts": len(current),
            "believers": len(believers),
            "events": len(timeline),
            "unlisted": sum(
                max(0, len(vs) - MAX_VALUES) for g in (outgoing, incoming) for vs in g.values()
            ),
        },
        "ids": {working.entries[row].id for row in rows},
    }


def touching(conflicts: list[dict[str, Any]], ids: set[str]) -> list[dict[str, Any]]:
    """The conflicts one of whose sides is among ``ids``."""
    return [c for c in conflicts if c["a"] in ids or c["b"] in ids]


def listing(working: WorkingMemory, at: int, limit: int = MAX_ENTITIES) -> list[dict[str, Any]]:
    """Entities with the observations mentioning them and their current facts, most
    mentioned first (then by name), at most ``limit``."""
    n = len(working)
    live = working.live[:n]
    current = live & (working.valid_from[:n] <= at) & (working.valid_until[:n] > at)
    found: list[tuple[int, int, str]] = []
    for key in working.topic_rows.keys() | working.entity_facts.keys():
        facts = working.rows_of(working.entity_facts, key)
        rows = np.union1d(facts, working.rows_of(working.topic_rows, key))
        mentions = int(live[rows].sum())
        if mentions:
            found.append((mentions, int(current[facts].sum()), key))
    best = heapq.nsmallest(limit, found, key=lambda m: (-m[0], display_name(working, m[2])))
    return [
        {"name": display_name(working, key), "observations": mentions, "facts": facts}
        for mentions, facts, key in best
    ]


def summaries(working: WorkingMemory, keys: Iterable[str], at: int) -> list[tuple[str, str, bool]]:
    """What to write for ``keys``: (Topic name, summary, whether the node may be created).

    A summary goes to every Topic node of the entity (one per spelling), and to the node
    named as the entity was first written as a fact's subject, created (kind ``entity``) if
    it is not a topic. An entity that was only ever an object and never a topic keeps its
    summary in the view alone.
    """
    wanted = {k for k in keys if exists(working, k)}
    spellings: dict[str, list[str]] = defaultdict(list)
    if wanted:
        for topic in working.topic_exact:
            if topic_key(topic) in wanted:
                spellings[topic_key(topic)].append(topic)
    clock = Clock(at)
    out: list[tuple[str, str, bool]] = []
    for key in sorted(wanted):
        name = display_name(working, key)
        current = _current(_facts(working, key, clock), clock)
        outgoing = _grouped(working, current, key, True, clock)
        incoming = _grouped(working, current, key, False, clock)
        agents = {a for f in current for a in _agents(working, f.row, clock)}
        mentions = _held_rows(
            working,
            {*working.entity_facts.get(key, ()), *working.topic_rows.get(key, ())},
            clock,
        )
        line = summary(name, outgoing, incoming, len(current), len(agents), len(mentions))
        out += [(topic, line, False) for topic in sorted(spellings[key])]
        first = working.entity_names.get(key)
        if first is not None and first not in spellings[key] and _ever_subject(working, key):
            out.append((first, line, True))
    return out


def _ever_subject(working: WorkingMemory, key: str) -> bool:
    return any(
        topic_key(working.entries[row].subject or "") == key
        for row in working.entity_facts.get(key, ())
    )


def keys_of(entries: Iterable[Entry]) -> set[str]:
    """The entities a write of these observations' facts changes."""
    keys: set[str] = set()
    for entry in entries:
        if entry.subject is not None:
            keys.add(topic_key(entry.subject))
            keys.add(topic_key(entry.object or ""))
    keys.discard("")
    return keys


class Summaries:
    """Entity summaries kept in the graph, refreshed on a thread of their own after writes.

    A write marks the entities whose facts it changed (``mark``, a set under a leaf lock);
    the thread gathers what was marked over a moment, and ``refresh`` computes and writes
    those summaries in one transaction of its own, so no write waits for them.

    Args:
        refresh: computes and writes the summaries of the given entity keys.
        gather_s: how long the thread waits for more marks before refreshing.
    """

    def __init__(self, refresh: Callable[[set[str]], None], gather_s: float = 0.05) -> None:
        self._refresh = refresh
        self._gather_s = gather_s
        self._dirty: set[str] = set()
        self._busy = False
        self._closed = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="doxa-summaries", daemon=True)
        self._thread.start()

    def mark(self, keys: Iterable[str]) -> None:
        """Refresh these entities' summaries soon."""
        with self._changed:
            if not self._closed:
                self._dirty.update(keys)
                self._changed.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every marked summary is written; False if ``timeout`` passed first."""
        with self._changed:
            return self._changed.wait_for(lambda: not self._dirty and not self._busy, timeout)

    def close(self) -> None:
        """Write what is marked, then stop the thread."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._dirty) or self._closed)
                if not self._dirty:
                    return
                # Gather the marks of a burst of writes (a close cuts it short).
                self._changed.wait_for(lambda: self._closed, timeout=self._gather_s)
                keys, self._dirty = self._dirty, set()
                self._busy = True
            try:
                self._refresh(keys)
            except Exception:
                log.exception("entity summaries were not written")
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
