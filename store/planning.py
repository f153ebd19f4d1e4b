"""Planning a write from the working memory alone: what a remember creates, what it finds
already there, which facts it supersedes, and which facts a forget reopens.

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

from doxa.store.drafts import NewMemory
from doxa.store.errors import NotFound
from doxa.store.working_memory import WorkingMemory, fact_key, topic_key


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

    seen: dict[tuple[str, str], Plan] = field(default_factory=dict)
    facts: dict[tuple[str, str], list[Plan]] = field(default_factory=dict)
    ended: dict[str, datetime] = field(default_factory=dict)


def plan(
    memories: Sequence[NewMemory],
    working: WorkingMemory,
    now: datetime,
    batch: bool = False,
    earlier: Batch | None = None,
) -> list[Plan | Duplicate]:
    """Decide what remembering ``memories`` (in order, as one write) does.

    Args:
        memories: validated memories.
        working: the memory as it is now.
        now: the time of the write (an observation's time when it names none).
        batch: name fields as ``memories[i].field`` in errors.
        earlier: what other memories of the same write planned before these (updated).

    Returns:
        One ``Plan`` (to write) or ``Duplicate`` (already held) per memory, in order.

    Raises:
        NotFound: a memory supports a belief or contradicts an observation that does not
            exist (or is retracted); nothing is to be written (``earlier`` may have been
            changed: plan the write again without these memories).
    """
    planned: list[Plan | Duplicate] = []
    state = earlier if earlier is not None else Batch()
    seen, facts_in_batch, ended = state.seen, state.facts, state.ended

    def where(i: int, path: str) -> str:
        return f"memories[{i}].{path}" if batch else path

    for i, memory in enumerate(memories):
        key = (memory.agent, memory.text_key)
        existing = working.text_index.get(key)
        if existing is not None:
            entry = working.entries[existing]
            belief = next(
                (b for b in entry.beliefs if working.belief_agent.get(b) == memory.agent),
                entry.beliefs[0] if entry.beliefs else "",
            )
            planned.append(Duplicate(entry.id, belief, list(entry.topics)))
            continue
        if key in seen:
            first = seen[key]
            planned.append(
                Duplicate(first.observation_id, first.belief_id, list(first.memory.topics))
            )
            continue
        for j, (belief, _) in enumerate(memory.supports):
            if belief not in working.belief_row:
                raise NotFound(where(i, f"supports[{j}].belief_id"), "belief", belief)
        for j, other in enumerate(memory.contradicts):
            row = working.row_of.get(other)
            if row is None or working.entries[row].retracted:
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
        )
        if fact is not None:
            _supersede(new, working, facts_in_batch, ended)
        seen[key] = new
        planned.append(new)
    return planned


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
    key = (topic_key(fact.subject), topic_key(fact.predicate))
    new_object = topic_key(fact.object)
    start = plan.valid_from

    def current(obs: str, until: datetime | None) -> bool:
        ends = [t for t in (until, ended.get(obs)) if t is not None]
        return not ends or min(ends) > start

    candidates: list[tuple[str, str, datetime, tuple[str, ...]]] = []
    for row in working.fact_index.get(key, []):
        entry = working.entries[row]
        if not entry.retracted and current(entry.id, entry.valid_until):
            older_from = entry.valid_from or entry.observed_at
            candidates.append((entry.id, entry.object or "", older_from, entry.agents))
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
    for other_id, other_object, other_from, agents in candidates:
        if topic_key(other_object) == new_object:
            continue
        if plan.memory.agent not in agents:
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
        else:
            # An older fact arriving late is history: it ended when the newer one began.
            plan.superseded_by.append((other_id, other_from))
            if plan.valid_until is None or plan.valid_until > other_from:
                plan.valid_until = other_from
    facts_in_batch.setdefault(key, []).append(plan)


def reopened(working: WorkingMemory, row: int) -> list[tuple[int, datetime | None]]:
    """Facts that the observation at ``row`` had ended, with the end they have without it
    (the start of their next remaining superseder, or None: current again), as
    (row, new end). For a forget of that observation."""
    gone = working.entries[row]
    key = fact_key(gone)
    if key is None:
        return []
    out: list[tuple[int, datetime | None]] = []
    for other in working.fact_index.get(key, []):
        entry = working.entries[other]
        if other == row or gone.id not in entry.superseded_by:
            continue
        ends = []
        for newer in entry.superseded_by:
            newer_row = working.row_of.get(newer)
            if newer == gone.id or newer_row is None:
                continue
            successor = working.entries[newer_row]
            if not successor.retracted:
                ends.append(successor.valid_from or successor.observed_at)
        out.append((other, min(ends) if ends else None))
    return out
