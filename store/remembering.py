"""Carrying out a remember's plans: the rows the graph is given, the graph transaction's
statements, and the working memory's mirror of what committed.

``Memory.remember`` runs these in order with the graph's write lock held throughout:
``prepare`` reads the working memory (under its read lock, beside recalls), ``write`` runs
inside one graph transaction (under no working-memory lock: recalls go on while the database
works), and ``apply`` changes the working memory once the transaction has committed (under
its write lock, briefly: the entries are built before it is taken).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from doxa.store import event_time
from doxa.store.planning import Plan, Shared
from doxa.store.values import micros
from doxa.store.working_memory import Entry, WorkingMemory

if TYPE_CHECKING:
    from doxa.store.graph import GraphWriter


@dataclass
class Write:
    """Everything one remember writes: its plans, their observation rows (with their
    sequence numbers), the beliefs other agents take in observations already held (or
    planned here), and the agents, topics and episodes the graph does not hold yet."""

    plans: list[Plan]
    observations: list[dict[str, Any]]
    agents: list[str]
    topics: list[str]
    episodes: dict[str, datetime]  # episode -> its earliest observation, where that moved
    at: datetime
    shares: list[Shared] = field(default_factory=list)


def prepare(
    plans: list[Plan], working: WorkingMemory, now: datetime, shares: Sequence[Shared] = ()
) -> Write:
    """The rows for the graph of ``plans`` and ``shares``, written at ``now``."""
    seq = working.next_seq
    observations = []
    for offset, plan in enumerate(plans):
        m, fact = plan.memory, plan.memory.fact
        observations.append(
            {
                "id": plan.observation_id,
                "seq": seq + offset,
                "text": m.text,
                "text_key": m.text_key,
                "observed_at": plan.observed_at,
                "recorded_at": now,
                "confidence": m.confidence,
                "source": m.source,
                "kind": "fact" if fact else "record" if m.record else "observation",
                "subject": fact.subject if fact else None,
                "predicate": fact.predicate if fact else None,
                "object": fact.object if fact else None,
                "valid_from": plan.valid_from,
                "valid_until": plan.valid_until,
                "stated_until": fact.valid_until if fact else None,
                "event_times": event_time.stored(m.event_times),
                "told_offset": m.told_offset,
            }
        )
    # Agents, topics and episodes the memory already holds need no MERGE (a statement
    # saved is a tenth of a single remember's database time).
    first_seen: dict[str, datetime] = {}
    for plan in plans:
        if plan.memory.episode is not None:
            ep = plan.memory.episode
            first_seen[ep] = min(first_seen.get(ep, plan.observed_at), plan.observed_at)
    first_seen = {
        ep: at
        for ep, at in first_seen.items()
        if ep not in working.episode_start or at < working.episode_start[ep]
    }
    topics = sorted({t for p in plans for t in p.memory.topics} - working.topic_exact)
    named = {p.memory.agent for p in plans} | {s.memory.agent for s in shares}
    agents = sorted(a for a in named if a not in working.agent_rows)
    return Write(plans, observations, agents, topics, first_seen, now, list(shares))


def write(w: GraphWriter, write: Write) -> None:
    """The statements of one remember, inside its graph transaction."""
    plans, now = write.plans, write.at
    w.ensure_agents(write.agents)
    w.ensure_topics(write.topics)
    w.ensure_episodes(write.episodes)
    w.ensure_predicates([p.new_predicate for p in plans if p.new_predicate is not None], now)
    w.create_observations(
        [
            {
                **row,
                "agent": p.memory.agent,
                "belief": p.belief_id,
                "since": now,
                "topics": list(p.memory.topics),
            }
            for row, p in zip(write.observations, plans, strict=True)
        ]
    )
    w.hold_beliefs(
        [
            (s.memory.agent, s.belief_id, s.observation_id, now, s.memory.confidence)
            for s in write.shares
        ]
    )
    withdrawn = [(b, until) for p in plans for _, b, until in p.withdraws]
    w.withdraw_beliefs(
        withdrawn + [(b, until) for s in write.shares for _, b, until in s.withdraws], now
    )
    w.learned_in([(p.observation_id, p.memory.episode) for p in plans if p.memory.episode])
    w.support(
        [
            (p.observation_id, belief, format(weight, "f"))
            for p in plans
            for belief, weight in p.memory.supports
        ]
    )
    w.contradict([(p.observation_id, other, now) for p in plans for other in p.memory.contradicts])
    w.create_records([(p.observation_id, p.memory.record) for p in plans if p.memory.record])
    # Facts a cancelled plan had ended, given back (before the links below, which may end
    # one again where a fact of this write begins).
    reopens = [r for p in plans for r in p.reopens]
    w.undo_supersessions([(plan, fact) for fact, plan, _, _ in reopens], now)
    w.end_validity([(fact, until) for fact, _, until, _ in reopens])
    w.restore_beliefs([(old, new) for p in plans for _, _, old, new, _ in p.restores], now)
    w.supersede(
        [(p.observation_id, older, at) for p in plans for older, at in p.superseded]
        + [(newer, p.observation_id, at) for p in plans for newer, at in p.superseded_by]
        + [(s.observation_id, older, at) for s in write.shares for older, at in s.superseded]
        + [(newer, fact, until) for fact, _, until, newer in reopens if newer and until],
        now,
    )


def entries(write: Write) -> list[Entry]:
    """The working memory's entries of a committed write (built before its lock is taken)."""
    out = []
    for plan, row in zip(write.plans, write.observations, strict=True):
        m = plan.memory
        out.append(
            Entry(
                id=plan.observation_id,
                seq=row["seq"],
                text=m.text,
                text_key=m.text_key,
                confidence=m.confidence,
                observed_at=plan.observed_at,
                recorded_at=write.at,
                source=m.source,
                kind=row["kind"],
                subject=row["subject"],
                predicate=row["predicate"],
                object=row["object"],
                valid_from=plan.valid_from,
                valid_until=plan.valid_until,
                stated_until=row["stated_until"],
                event_times=m.event_times,
                episode=m.episode,
                topics=tuple(sorted(m.topics)),
                record=m.record,
            )
        )
    return out


def apply(working: WorkingMemory, write: Write, new: list[Entry]) -> None:
    """Mirror a committed write in the working memory (the vectors follow): its ``new``
    entries (from ``entries``), their beliefs, the beliefs shared and withdrawn, the
    predicates first used, the facts cancelled plans give back, and supersessions."""
    rows: dict[str, int] = {}
    for plan, entry in zip(write.plans, new, strict=True):
        r = working.add(entry)
        working.hold(r, plan.memory.agent, plan.belief_id)
        rows[plan.observation_id] = r
        if plan.new_predicate is not None:
            name, cardinality = plan.new_predicate
            working.predicates[name] = cardinality
    for share in write.shares:
        row = rows.get(share.observation_id, working.row_of.get(share.observation_id))
        assert row is not None
        working.hold(row, share.memory.agent, share.belief_id, write.at, share.memory.confidence)
    withdrawn = [w for p in write.plans for w in p.withdraws]
    for older, belief, until in withdrawn + [w for s in write.shares for w in s.withdraws]:
        working.withdraw(working.row_of[older], belief, write.at, until)
    for plan in write.plans:
        for other in plan.memory.contradicts:
            other_row = rows.get(other, working.row_of.get(other))
            assert other_row is not None
            working.contradict(rows[plan.observation_id], other_row, write.at)
    for plan in write.plans:
        restore(working, plan.restores, write.at)
        for fact, cancelled, end, newer in plan.reopens:
            fact_row = working.row_of[fact]
            working.reopen(fact_row, end, cancelled, undone=write.at)
            if newer is not None and end is not None:
                working.supersede(working.row_of[newer], fact_row, end, write.at)
    # After the facts given back, as the graph links them: a plan shared after its
    # cancellation in the same write ends again what the cancellation gave back.
    for share in write.shares:
        row = rows.get(share.observation_id, working.row_of.get(share.observation_id))
        assert row is not None
        for older, at in share.superseded:
            working.supersede(row, working.row_of[older], at, write.at)
    for plan in write.plans:
        for older, at in plan.superseded:
            older_row = rows.get(older, working.row_of.get(older))
            assert older_row is not None
            working.supersede(rows[plan.observation_id], older_row, at, write.at)
        for newer, at in plan.superseded_by:
            newer_row = rows.get(newer, working.row_of.get(newer))
            assert newer_row is not None
            working.link(newer_row, rows[plan.observation_id], at, write.at)
            working.superseded_by(rows[plan.observation_id], newer)


def restore(
    working: WorkingMemory,
    restoring: Sequence[tuple[int, str, str, str, Decimal | None]],
    at: datetime,
) -> None:
    """Hold restored beliefs in the working memory, as the graph's ``restore_beliefs`` did:
    (row, agent, withdrawn belief id, new belief id, confidence); the withdrawn one, held
    until a later fact, holds no more from ``at``."""
    for other, agent, old, new, confidence in restoring:
        withdrawn = working.withdrawn.get(other, [])
        until_later = any(b == old and until is not None for _, b, *_, until in withdrawn)
        if until_later and working.held_then(old):
            working.withdraw_outright(old, micros(at))
        working.hold(other, agent, new, at, confidence)
