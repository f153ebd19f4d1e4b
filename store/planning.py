"""Planning a write from the working memory alone: what a remember creates, what it finds
already there (its own memory again, or another agent's observation it now believes too),
which facts it supersedes (as its predicate's cardinality says), and which facts a forget
reopens.

These are pure functions over a ``WorkingMemory``: they read it and change nothing (a plan
is carried out by ``remembering``), so ``Memory`` runs them while recalls go on, and tests
run them on a bare working memory without a database. The caller keeps other writers out
while it plans and carries the plan out (``Memory`` holds the graph's write lock), so the
memory planned against is the memory written to. Several remember calls waiting at once are
planned as one write with one ``Batch``, as if they had come one after another.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from doxa.store.drafts import Fact, NewMemory, predicate_key
from doxa.store.errors import InvalidInput, NotFound
from doxa.store.working_memory import Entry, WorkingMemory, fact_key, said_key, topic_key


def new_id(prefix: str) -> str:
    """A fresh id: a readable prefix and 16 hex digits."""
    return f"{prefix}_{uuid.uuid4().hex[:16]}"


@dataclass
class Plan:
    """One new observation to write: its ids, times, and the facts it ends or is ended by."""

    memory: NewMemory
    observation_id: str
    belief_id: str
    observed_at: datetime
    valid_from: datetime | None
    valid_until: datetime | None
    superseded: list[tuple[str, datetime]] = field(default_factory=list)  # (older id, at)
    superseded_by: list[tuple[str, datetime]] = field(default_factory=list)  # (newer id, at)
    conflicts: list[str] = field(default_factory=list)
    #: (observation id, belief id): this agent's beliefs in older facts it shared with other
    #: agents, withdrawn by this newer fact (the others still hold them).
    withdraws: list[tuple[str, str]] = field(default_factory=list)
    #: (predicate, cardinality) when this fact is the first to use its predicate.
    new_predicate: tuple[str, str] | None = None
    #: the predicate's cardinality ("one" or "many"), for a fact.
    cardinality: str | None = None


@dataclass
class Shared:
    """Another agent's memory of an observation already held (same text, same fact, no
    links of its own): a new belief of its agent in that observation, with its own
    confidence and time, instead of a copy."""

    memory: NewMemory
    observation_id: str
    belief_id: str
    topics: list[str]
    shared_with: list[str]  # the agents believing it before
    #: (older id, at): this agent's own facts the shared one ends, as a new fact would.
    superseded: list[tuple[str, datetime]] = field(default_factory=list)


@dataclass(frozen=True)
class Duplicate:
    """A memory the agent already holds (stored, or earlier in the same batch): nothing is
    written for it, and its existing ids are answered."""

    observation_id: str
    belief_id: str
    topics: list[str]


@dataclass
class Batch:
    """What the memories planned earlier in the same write decided: texts planned (by agent
    and text key), facts planned (by subject and predicate key), and the ends given to facts.
    Planning several calls' memories with one ``Batch`` plans them as if they were sent one
    after another."""

    seen: dict[tuple[str, str], Plan | Shared] = field(default_factory=dict)
    facts: dict[tuple[str, str], list[Plan]] = field(default_factory=dict)
    ended: dict[str, datetime] = field(default_factory=dict)
    texts: dict[str, Plan] = field(default_factory=dict)  # said key -> first plan of it
    believers: dict[str, list[str]] = field(default_factory=dict)  # planned obs -> agents
    predicates: dict[str, str] = field(default_factory=dict)  # first used in this write
    recorded: set[str] = field(default_factory=set)  # predicates a plan here records


def plan(
    memories: Sequence[NewMemory],
    working: WorkingMemory,
    now: datetime,
    batch: bool = False,
    earlier: Batch | None = None,
) -> list[Plan | Duplicate | Shared]:
    """Decide what remembering ``memories`` (in order, as one write) does.

    Args:
        memories: validated memories.
        working: the memory as it is now.
        now: the time of the write (an observation's time when it names none).
        batch: name fields as ``memories[i].field`` in errors.
        earlier: what other memories of the same write planned before these (updated).

    Returns:
        One ``Plan`` (to write), ``Duplicate`` (already held by the agent) or ``Shared``
        (held by other agents: a new belief in it) per memory, in order.

    Raises:
        NotFound: a memory supports a belief or contradicts an observation that does not
            exist (or is retracted); nothing is to be written (``earlier`` may have been
            changed: plan the write again without these memories).
        InvalidInput: a fact gives its predicate another cardinality than the one it has.
    """
    planned: list[Plan | Duplicate | Shared] = []
    state = earlier if earlier is not None else Batch()
    seen, facts_in_batch, ended = state.seen, state.facts, state.ended

    def where(i: int, path: str) -> str:
        return f"memories[{i}].{path}" if batch else path

    for i, memory in enumerate(memories):
        cardinality = None
        if memory.fact is not None:
            cardinality = _cardinality(memory.fact, working, state, where(i, "fact.cardinality"))
        for j, (belief, _) in enumerate(memory.supports):
            if belief not in working.belief_row:
                raise NotFound(where(i, f"supports[{j}].belief_id"), "belief", belief)
        for j, other in enumerate(memory.contradicts):
            if other not in working.row_of:
                raise NotFound(where(i, f"contradicts[{j}]"), "observation", other)
        said = _said(memory)
        key = (memory.agent, said)
        existing = working.text_index.get(key)
        if existing is not None and _ended_by_then(memory, working.entries[existing], now):
            existing = None  # told again after it ended ("busy", "free", "busy"): anew
        if existing is not None:
            entry = working.entries[existing]
            belief = working.belief_of(existing, memory.agent) or (
                entry.beliefs[0] if entry.beliefs else ""
            )
            planned.append(Duplicate(entry.id, belief, list(entry.topics)))
            continue
        if key in seen:
            first = seen[key]
            topics = first.topics if isinstance(first, Shared) else first.memory.topics
            planned.append(Duplicate(first.observation_id, first.belief_id, list(topics)))
            continue
        shared = _shared(memory, working, state, now)
        if shared is not None:
            if memory.fact is not None and cardinality == "one":
                shared.superseded = _own_ended(memory, working, shared.observation_id, now)
            seen[key] = shared
            planned.append(shared)
            continue
        for j, other in enumerate(memory.contradicts):
            # A repeat (a retried call) is one still, whatever was retracted since.
            if working.entries[working.row_of[other]].retracted:
                raise NotFound(where(i, f"contradicts[{j}]"), "observation", other)
        observed_at = memory.observed_at or now
        fact = memory.fact
        new = Plan(
            memory=memory,
            observation_id=new_id("obs"),
            belief_id=new_id("bel"),
            observed_at=observed_at,
            valid_from=(fact.valid_from or observed_at) if fact else None,
            valid_until=fact.valid_until if fact else None,
            cardinality=cardinality,
        )
        if fact is not None:
            assert cardinality is not None
            if fact.predicate not in working.predicates and fact.predicate not in state.recorded:
                new.new_predicate = (fact.predicate, cardinality)
                state.recorded.add(fact.predicate)
            _supersede(new, working, facts_in_batch, ended)
        seen[key] = new
        state.texts.setdefault(said, new)
        state.believers.setdefault(new.observation_id, [memory.agent])
        planned.append(new)
    return planned


def _cardinality(fact: Fact, working: WorkingMemory, state: Batch, field_name: str) -> str:
    """The cardinality of ``fact``'s predicate: as the graph records it (or this write
    decided), else as the fact gives it, else as configured, else "one".

    Raises:
        InvalidInput: the fact gives a cardinality other than the one its predicate has.
    """
    predicate = fact.predicate
    known = working.predicates.get(predicate) or state.predicates.get(predicate)
    if known is not None:
        if fact.cardinality is not None and fact.cardinality != known:
            raise InvalidInput(
                field_name,
                f"the predicate {predicate!r} is {known!r} (cardinality is set when a fact"
                f' first uses a predicate); give "{known}" or leave fact.cardinality out',
            )
        return known
    chosen = fact.cardinality or working.configured.get(predicate, "one")
    state.predicates[predicate] = chosen
    return chosen


def _same_fact(
    fact: Fact | None, subject: str | None, predicate: str | None, obj: str | None
) -> bool:
    if fact is None or subject is None or predicate is None or obj is None:
        return fact is None and subject is None
    return (
        topic_key(fact.subject) == topic_key(subject)
        and fact.predicate == predicate_key(predicate)
        and topic_key(fact.object) == topic_key(obj)
    )


def _shared(
    memory: NewMemory, working: WorkingMemory, state: Batch, now: datetime
) -> Shared | None:
    """Another agent's observation of the same text (and the same fact, holding when this
    one starts and ending as this one does), to believe instead of copying; None when there
    is none, or when this memory links evidence or contradictions of its own (those are
    claims of a new observation).

    A fact replaced or ended since, or one starting after this one, is another claim:
    believing it would let the other agent's replacement end this agent's belief, or lose
    when this one's fact started."""
    if memory.supports or memory.contradicts:
        return None
    fact = memory.fact
    start = None
    if fact is not None:
        start = fact.valid_from or memory.observed_at or now
    said = _said(memory)
    for row in working.held_text(said):
        entry = working.entries[row]
        if not _same_fact(fact, entry.subject, entry.predicate, entry.object):
            continue
        if not _holds_for(fact, start, entry.valid_from or entry.observed_at, entry.valid_until):
            continue
        believers = state.believers.setdefault(entry.id, list(entry.agents))
        shared = Shared(memory, entry.id, new_id("bel"), list(entry.topics), list(believers))
        believers.append(memory.agent)
        return shared
    first = state.texts.get(said)
    earlier = first.memory.fact if first is not None else None
    if (
        first is not None
        and _same_fact(
            fact,
            earlier.subject if earlier else None,
            earlier.predicate if earlier else None,
            earlier.object if earlier else None,
        )
        and (
            earlier is None
            or _holds_for(
                fact,
                start,
                earlier.valid_from or first.memory.observed_at or now,
                earlier.valid_until,
            )
        )
    ):
        believers = state.believers.setdefault(first.observation_id, [first.memory.agent])
        shared = Shared(
            memory, first.observation_id, new_id("bel"), list(first.memory.topics), list(believers)
        )
        believers.append(memory.agent)
        return shared
    return None


def _ended_by_then(memory: NewMemory, entry: Entry, now: datetime) -> bool:
    """Whether the agent's fact held in the same words had ended when ``memory``'s begins:
    then ``memory`` is no repeat (a retried call finds its fact still holding)."""
    fact = memory.fact
    if fact is None or entry.valid_until is None:
        return False
    return entry.valid_until <= (fact.valid_from or memory.observed_at or now)


def _own_ended(
    memory: NewMemory, working: WorkingMemory, shared: str, now: datetime
) -> list[tuple[str, datetime]]:
    """The facts of ``memory``'s agent alone (same subject and predicate, another object)
    that still hold when the fact it shares with other agents begins: ended then, as a new
    fact of its own would end them (sharing left them current beside it: bob lived in
    Paris and in Berlin)."""
    fact = memory.fact
    assert fact is not None
    start = fact.valid_from or memory.observed_at or now
    ended: list[tuple[str, datetime]] = []
    for row in working.fact_index.get((topic_key(fact.subject), fact.predicate), []):
        entry = working.entries[row]
        if (
            entry.retracted
            or entry.id == shared
            or entry.agents != (memory.agent,)
            or topic_key(entry.object or "") == topic_key(fact.object)
            or (entry.valid_from or entry.observed_at) > start
            or (entry.valid_until is not None and entry.valid_until <= start)
        ):
            continue
        ended.append((entry.id, start))
    return ended


def _holds_for(
    fact: Fact | None, start: datetime | None, began: datetime, until: datetime | None
) -> bool:
    """Whether another agent's observation of the same fact (or none), valid from ``began``
    until ``until`` (its end as known now), may be believed for ``fact`` starting at
    ``start``: it holds then and ends as ``fact`` says."""
    return fact is None or start is None or (began <= start and until == fact.valid_until)


def _supersede(
    plan: Plan,
    working: WorkingMemory,
    facts_in_batch: dict[tuple[str, str], list[Plan]],
    ended: dict[str, datetime],
) -> None:
    """A newer fact with the same agent, subject and predicate ends the older one.

    ``ended`` holds the end this batch already gave to facts (stored or earlier in the
    batch), so a batch links supersessions exactly as the same facts sent one by one.
    """
    fact = plan.memory.fact
    assert fact is not None and plan.valid_from is not None
    key = (topic_key(fact.subject), fact.predicate)
    if plan.cardinality == "many":
        # Objects accumulate: a different one neither supersedes nor clashes.
        facts_in_batch.setdefault(key, []).append(plan)
        return
    new_object = topic_key(fact.object)
    start = plan.valid_from
    shared_by: dict[str, str] = {}  # older observations others hold too -> this agent's belief

    def current(obs: str, until: datetime | None) -> bool:
        ends = [t for t in (until, ended.get(obs)) if t is not None]
        return not ends or min(ends) > start

    candidates: list[tuple[str, str, datetime, tuple[str, ...]]] = []
    for row in working.fact_index.get(key, []):
        entry = working.entries[row]
        if not entry.retracted and current(entry.id, entry.valid_until):
            older_from = entry.valid_from or entry.observed_at
            candidates.append((entry.id, entry.object or "", older_from, entry.agents))
            if len(entry.agents) > 1 and plan.memory.agent in entry.agents:
                belief = working.belief_of(row, plan.memory.agent)
                if belief is not None:
                    shared_by.setdefault(entry.id, belief)
    for earlier in facts_in_batch.get(key, []):
        assert earlier.memory.fact is not None and earlier.valid_from is not None
        if current(earlier.observation_id, earlier.valid_until):
            candidates.append(
                (
                    earlier.observation_id,
                    earlier.memory.fact.object,
                    earlier.valid_from,
                    (earlier.memory.agent,),
                )
            )
    # The earliest first: an older fact arriving late ends when the first newer one begins,
    # and a later one cuts nothing that was over by then.
    candidates.sort(key=lambda c: c[2])
    for other_id, other_object, other_from, agents in candidates:
        if topic_key(other_object) == new_object:
            continue
        if plan.memory.agent not in agents:
            plan.conflicts.append(other_id)
            continue
        if other_id in shared_by and start >= other_from:
            # Others still hold the older fact: this agent's belief in it ends, the fact
            # does not, and the two now disagree.
            plan.withdraws.append((other_id, shared_by[other_id]))
            plan.conflicts.append(other_id)
            continue
        if start >= other_from:
            plan.superseded.append((other_id, start))
            ended[other_id] = min(ended.get(other_id, start), start)
            for earlier in facts_in_batch.get(key, []):
                if earlier.observation_id == other_id and (
                    earlier.valid_until is None or earlier.valid_until > start
                ):
                    earlier.valid_until = start
        elif plan.valid_until is None or plan.valid_until > other_from:
            # An older fact arriving late is history: it ended when the newer one began
            # (unless it ended by then, as its own end or an earlier newer one says).
            plan.superseded_by.append((other_id, other_from))
            if plan.valid_until is None or plan.valid_until > other_from:
                plan.valid_until = other_from
    facts_in_batch.setdefault(key, []).append(plan)


def reopened(working: WorkingMemory, row: int) -> list[tuple[int, datetime | None, str | None]]:
    """Facts that the observation at ``row`` had ended, with the end they have without it,
    as (row, new end, the id of a new superseder or None). For a forget of that observation.

    The new end is the start of their next remaining superseder, or of the next fact of
    their agents that a chain had ended them before (Athens, then Bonn, then Cork: Cork
    ended Bonn, and with Bonn forgotten it ends Athens, as it would have without Bonn; it
    then supersedes Athens too), or their stated end, or None: current again.
    """
    gone = working.entries[row]
    key = fact_key(gone)
    if key is None:
        return []
    out: list[tuple[int, datetime | None, str | None]] = []
    for other in working.fact_index.get(key, []):
        entry = working.entries[other]
        if other == row or gone.id not in entry.superseded_by:
            continue
        # The end it was given, unless a remaining superseder starts earlier.
        ends = [entry.stated_until] if entry.stated_until is not None else []
        for newer in entry.superseded_by:
            newer_row = working.row_of.get(newer)
            if newer == gone.id or newer_row is None:
                continue
            successor = working.entries[newer_row]
            if not successor.retracted:
                ends.append(successor.valid_from or successor.observed_at)
        after = _next_fact(working, other, row)
        if after is not None and (not ends or after[1] < min(ends)):
            out.append((other, after[1], working.entries[after[0]].id))
        else:
            out.append((other, min(ends) if ends else None, None))
    return out


def _next_fact(
    working: WorkingMemory, row: int, gone: int | None = None
) -> tuple[int, datetime] | None:
    """The fact that would supersede the one at ``row`` (had the one at ``gone`` never
    been): the earliest remaining fact of the same subject and predicate, of another
    object, held by its agents, that starts after it (or at once, told later)."""
    entry = working.entries[row]
    key = fact_key(entry)
    assert key is not None
    began = entry.valid_from or entry.observed_at
    found: tuple[int, datetime] | None = None
    for other in working.fact_index.get(key, []):
        newer = working.entries[other]
        start = newer.valid_from or newer.observed_at
        if (
            other in (row, gone)
            or newer.retracted
            or topic_key(newer.object or "") == topic_key(entry.object or "")
            or not set(entry.agents) <= set(newer.agents)
            or start < began
            or (start == began and newer.seq < entry.seq)
        ):
            continue
        if found is None or start < found[1]:
            found = (other, start)
    return found


def overlapping(working: WorkingMemory) -> list[tuple[int, int, datetime]]:
    """Facts of a single-valued predicate reopened by the retraction of their superseder
    that still hold when a later fact of their agents (another object) begins, as (older
    row, newer row, the newer one's start). Versions before forget ended a chain's first
    fact where the next remaining one begins left it current for good, beside the last:
    start-up ends it (``open_stores``), as a forget does now. Only such facts, which this
    version's forget no longer leaves: a memory it wrote reads the same after a restart."""
    found: list[tuple[int, int, datetime]] = []
    # Only facts ever superseded have links in: a pass over them, not over every fact.
    for row, links in working.incoming.items():
        entry = working.entries[row]
        if (
            entry.retracted
            or entry.predicate is None
            or working.cardinality(entry.predicate) != "one"
            or not any(working.entries[newer].retracted for newer, _ in links)
        ):
            continue
        after = _next_fact(working, row)
        if after is None:
            continue
        newer, start = after
        end = entry.valid_until
        if (end is None or end > start) and working.entries[newer].id not in entry.superseded_by:
            found.append((row, newer, start))
    return found


def _said(memory: NewMemory) -> str:
    fact = memory.fact
    if fact is None:
        return memory.text_key
    return said_key(memory.text_key, fact.subject, fact.predicate, fact.object)
