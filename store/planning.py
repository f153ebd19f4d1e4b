"""Planning a write from the working memory alone: what a remember creates, what it finds
already there (its own memory again, or another agent's observation it now believes too),
which facts it supersedes (as its predicate's cardinality says), and which facts a forget
reopens and which withdrawn beliefs it gives back.

These are pure functions over a ``WorkingMemory``: they read it and change nothing (a plan
is carried out by ``remembering``), so ``Memory`` runs them while recalls go on, and tests
run them on a bare working memory without a database. The caller keeps other writers out
while it plans and carries the plan out (``Memory`` holds the graph's write lock), so the
memory planned against is the memory written to. Several remember calls waiting at once are
planned as one write with one ``Batch``, as if they had come one after another.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from decimal import Decimal

import numpy as np

from doxa.store.drafts import FUTURE_SKEW, Fact, NewMemory
from doxa.store.errors import InvalidInput, NotFound
from doxa.store.settings import unlisted_cardinality
from doxa.store.values import from_micros, micros
from doxa.store.working_memory import (
    NO_END,
    Entry,
    WorkingMemory,
    fact_key,
    said_key,
    topic_key,
)

#: ``Held.seq`` of facts planned in the write: after every stored one.
_PLANNED = 1 << 62


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
    #: (observation id, belief id, until): this agent's beliefs in older facts it shared with
    #: other agents, withdrawn by this newer fact (the others still hold them); each held,
    #: for this agent, until this fact began. A cancellation that gives such a fact back to
    #: its agent on (``_held_on``) withdraws here the other believers' beliefs in it, until
    #: the later fact of theirs that had ended it began.
    withdraws: list[tuple[str, str, datetime]] = field(default_factory=list)
    #: (fact id, plan id, end, newer id): facts a plan this one cancels had ended, given
    #: back: that plan no longer ends them from now on, and they end at ``end`` (None: no
    #: end), where the fact ``newer`` (None: none, or their stated end) supersedes them.
    reopens: list[tuple[str, str, datetime | None, str | None]] = field(default_factory=list)
    #: (row, agent, withdrawn belief id, new belief id, its confidence): beliefs a plan this
    #: one cancels had withdrawn (in facts others hold too), held again from now on.
    restores: list[tuple[int, str, str, str, Decimal | None]] = field(default_factory=list)
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
    #: (observation id, belief id, until): this agent's beliefs in older facts others hold
    #: too, withdrawn as a new fact would withdraw them.
    withdraws: list[tuple[str, str, datetime]] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Duplicate:
    """A memory the agent already holds (stored, or earlier in the same batch): nothing is
    written for it, and its existing ids are answered."""

    observation_id: str
    belief_id: str
    topics: list[str]


@dataclass
class Held:
    """A fact of one subject and predicate as the write planned so far has it: stored, or
    planned in the write, with the end and the beliefs the memories planned before gave it.
    """

    id: str
    text_key: str  # its words, as said_key keys them (subject and predicate are the list's)
    object: str  # topic_key
    start: datetime
    until: datetime | None
    beliefs: dict[str, str]  # agent -> belief id
    topics: list[str]
    seq: int  # the order told: a stored one's seq, a planned one's after every stored one
    plan: Plan | None = None  # planned in this write
    stated: datetime | None = None  # the end it was given (``until`` may be earlier)
    #: agent -> (belief id, until): beliefs in it a later fact of their agent withdrew
    #: (others hold it on), held until that fact began.
    ended: dict[str, tuple[str, datetime | None]] = field(default_factory=dict)
    record: bool = False  # a structured record's observation
    #: Its start is only when it was told: no start was given nor read from its words (a
    #: start given equal to the time told says no more). A fact its agent places before it
    #: shows that it was stale when told (``_stale_when_told``).
    told: bool = False
    #: Superseded from its start by a fact beginning before it (``_stale_when_told``): it
    #: never held, and ends no fact told late.
    stale: bool = False
    #: agent -> its belief in it planned in this write (``Shared``), for a plan that agent
    #: calls off in the same write to undo.
    shares: dict[str, Shared] = field(default_factory=dict)

    def holds_at(self, when: datetime) -> bool:
        """Not ended by ``when`` (it may begin later)."""
        return self.until is None or self.until > when


@dataclass
class Batch:
    """What the memories planned earlier in the same write decided: plain texts planned (by
    agent and text key), and every fact of the subjects and predicates they told, as they
    have left it. Planning several calls' memories with one ``Batch`` plans them as if they
    were sent one after another."""

    seen: dict[tuple[str, str], Plan | Shared] = field(default_factory=dict)
    held: dict[tuple[str, str], list[Held]] = field(default_factory=dict)
    #: per key, the time since which its stored facts' ends are loaded (``facts``).
    loaded: dict[tuple[str, str], int] = field(default_factory=dict)
    texts: dict[str, Plan] = field(default_factory=dict)  # said key -> first plan of it
    believers: dict[str, list[str]] = field(default_factory=dict)  # planned obs -> agents
    predicates: dict[str, str] = field(default_factory=dict)  # first used in this write
    recorded: set[str] = field(default_factory=set)  # predicates a plan here records

    def facts(self, working: WorkingMemory, key: tuple[str, str], since: datetime) -> list[Held]:
        """The facts of ``key`` (subject, predicate key) as this write has them, in the
        order told: those stored that hold at ``since`` or end after it (a fact over by
        then can neither end nor be ended by one beginning then, nor be its repeat), and
        those planned in the write. A subject's long history is not read for every write.
        """
        found = self.held.setdefault(key, [])
        after = micros(since)
        loaded = self.loaded.get(key)
        if loaded is not None and loaded <= after:
            return found
        rows = np.asarray(working.fact_index.get(key, []), dtype=np.int64)
        ends = working.valid_until[rows]
        wanted = working.live[rows] & (ends >= after)
        if loaded is not None:
            wanted &= ends < loaded  # the others are in already
        self.loaded[key] = after
        entries = working.entries
        added = []
        for row in rows[wanted].tolist():
            entry = entries[row]
            beliefs: dict[str, str] = {}
            for belief in entry.beliefs:
                beliefs.setdefault(working.belief_agent.get(belief, ""), belief)
            # Where each such belief ends now: the agent's facts told late or forgotten
            # since its withdrawal move it (NO_END: none left, the belief given back).
            ended = {
                agent: (belief, _moment(working.belief_end(row, agent)))
                for agent, belief, _, _, until in working.withdrawn.get(row, ())
                if until is not None and agent not in beliefs and working.held_then(belief)
            }
            added.append(
                Held(
                    entry.id,
                    entry.text_key,
                    topic_key(entry.object or ""),
                    entry.valid_from or entry.observed_at,
                    entry.valid_until,
                    beliefs,
                    list(entry.topics),
                    entry.seq,
                    stated=entry.stated_until,
                    ended=ended,
                    record=entry.record is not None,
                    told=entry.record is None and entry.valid_from in (None, entry.observed_at),
                    stale=stale(working, row),
                )
            )
        if added:
            found.extend(added)
            found.sort(key=lambda h: h.seq)
        return found


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
            exist, or is retracted (unless the memory repeats one held); nothing is to be
            written (``earlier`` may have been changed: plan the write again without these
            memories).
        InvalidInput: a fact gives its predicate another cardinality than the one it has,
            or a memory names one belief twice in ``supports``.
    """
    planned: list[Plan | Duplicate | Shared] = []
    state = earlier if earlier is not None else Batch()

    def where(i: int, path: str) -> str:
        return f"memories[{i}].{path}" if batch else path

    for i, memory in enumerate(memories):
        cardinality = None
        if memory.fact is not None:
            cardinality = _cardinality(memory.fact, working, state, where(i, "fact.cardinality"))
        supported: dict[str, int] = {}  # belief -> the row of its observation
        for j, (belief, _) in enumerate(memory.supports):
            row = working.supportable_row(belief)
            if row is None:
                raise NotFound(where(i, f"supports[{j}].belief_id"), "belief", belief)
            if belief in supported:  # two weights for one belief: which one was meant?
                raise InvalidInput(
                    where(i, f"supports[{j}].belief_id"),
                    f"names {belief!r} again; give each belief once, with one weight",
                )
            supported[belief] = row
        for j, other in enumerate(memory.contradicts):
            if other not in working.row_of:
                raise NotFound(where(i, f"contradicts[{j}]"), "observation", other)
        if memory.fact is not None and memory.fact.from_words and cardinality == "one":
            memory = _unless_held_later(memory, working, state, memory.observed_at or now)
        if memory.fact is None:
            found = _known_plain(memory, working, state, now)
        else:
            assert cardinality is not None
            found = _known_fact(memory, cardinality, working, state, now)
        if found is not None:
            planned.append(found)
            continue
        # A repeat (a retried call) is one still, whatever was retracted since; new
        # evidence for, or a contradiction of, what was retracted is refused.
        for j, (belief, _) in enumerate(memory.supports):
            if working.entries[supported[belief]].retracted:
                raise NotFound(where(i, f"supports[{j}].belief_id"), "belief", belief, True)
        for j, other in enumerate(memory.contradicts):
            if working.entries[working.row_of[other]].retracted:
                raise NotFound(where(i, f"contradicts[{j}]"), "observation", other, True)
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
        said = _said(memory)
        if fact is None:
            state.seen[(memory.agent, said)] = new
            state.texts.setdefault(said, new)
            state.believers.setdefault(new.observation_id, [memory.agent])
        else:
            assert cardinality is not None and new.valid_from is not None
            if fact.predicate not in working.predicates and fact.predicate not in state.recorded:
                new.new_predicate = (fact.predicate, cardinality)
                state.recorded.add(fact.predicate)
            key = (topic_key(fact.subject), fact.predicate)
            facts = state.facts(working, key, _since(new.valid_from, fact))
            ending = _told_end(memory.agent, fact, facts, observed_at)
            if ending:
                # A fact the agent holds, told again with only an end: that fact's end. It
                # holds from where the agent's began, which it replaces from there (as a plan
                # replaced before it began: at an earlier ``known_at`` it held as told); one
                # that others hold too (now, or until a later fact of theirs) stays theirs,
                # the agent's belief in it withdrawn from its start, as a newer fact of its
                # own withdraws it, and the two disagree. A plan it ends before it begins is
                # cancelled so: it holds at no time, nor does the end told, begun when told
                # as one of a fact never held (an end a clock's skew ahead is taken as
                # when told: it would hold until then, before the plan).
                end = fact.valid_until
                assert end is not None  # only an end tells one
                begun = [h.start for h in ending if h.start < end]
                if begun:
                    new.valid_from = min(begun)
                elif end > observed_at:
                    fact = replace(fact, valid_until=observed_at)
                    memory = new.memory = replace(memory, fact=fact)
                    new.valid_until = observed_at
                facts = state.facts(working, key, new.valid_from)
                told = {h.id for h in ending}
                # Stored plans this end cancels (or calls off for the agent alone): none
                # ends the agent's facts any more, nor counts as what ends the facts the
                # others give back.
                cancelled = {
                    working.row_of[h.id] for h in ending if h.plan is None and h.start >= end
                }
                given: dict[str, datetime | None] = {}
                for held in ending:
                    if list(held.beliefs) == [memory.agent]:
                        new.superseded.append((held.id, held.start))
                        held.until = held.start
                        # Cancelled, it never holds: it ends no fact told later either.
                        held.stale = held.stale or held.start >= end
                        # Cancelled (ended before it begins): a plan that holds at no time
                        # ends nothing, so the facts it would have ended hold on, as
                        # forgetting it gives them back ("moving to Munich in January"
                        # called off: Berlin holds on past January).
                        if held.plan is not None:
                            held.plan.valid_until = held.start
                            if held.start >= end:
                                _unplanned(held.plan, facts, told)
                        elif held.start >= end:
                            new.reopens += _given_back(working, held, facts, told, cancelled, given)
                            restores = _beliefs_given_back(working, held, facts, told)
                            new.restores += restores
                            _held_on_all(working, restores, facts, new)
                        continue
                    if memory.agent in held.beliefs:
                        belief = held.beliefs.pop(memory.agent)
                        new.withdraws.append((held.id, belief, held.start))
                    else:
                        # Withdrawn already, by a later fact of the agent's: the end told
                        # moves its end to the plan's start (``WorkingMemory._calls_off``).
                        belief = held.ended[memory.agent][0]
                    held.ended[memory.agent] = (belief, held.start)
                    if held.beliefs:
                        new.conflicts.append(held.id)
                    if held.start >= end:
                        # A plan others hold on, called off by the agent: it holds for them,
                        # and for the agent at no time. What it ended or withdrew for the
                        # agent alone is given back, as the agent's forget of it would.
                        back = _left(working, held, memory.agent, facts, told, cancelled, given)
                        new.reopens += back[0]
                        new.restores += back[1]
                        _held_on_all(working, back[1], facts, new)
            if fact.from_words and cardinality == "one":
                # Its words place it before facts of the agent's that began only when told
                # ("My sister moved to Lisbon in March", told in June after "My sister lives
                # in Porto" on 1 June): those were stale when told.
                _stale_when_told(new, facts)
            # A fact that never holds (told with only an end already past, its start
            # unknown) ends nothing and clashes with nothing.
            if cardinality == "one" and holds_ever(new.valid_from, new.valid_until):
                ends = _end_older(memory.agent, topic_key(fact.object), new.valid_from, facts)
                new.superseded += ends[0]
                new.withdraws += ends[1]
                new.conflicts += ends[2]
                _end_by_later(new, facts)
            facts.append(
                Held(
                    new.observation_id,
                    memory.text_key,
                    topic_key(fact.object),
                    new.valid_from,
                    new.valid_until,
                    {memory.agent: new.belief_id},
                    list(memory.topics),
                    _PLANNED + len(facts),
                    new,
                    stated=fact.valid_until,
                    record=memory.record is not None,
                    told=memory.record is None and new.valid_from == observed_at,
                )
            )
        planned.append(new)
    return planned


def _known_plain(
    memory: NewMemory, working: WorkingMemory, state: Batch, now: datetime
) -> Duplicate | Shared | None:
    """What a memory without a fact finds already there: the agent's own (a repeat),
    another agent's to believe too, or nothing (a new observation)."""
    said = _said(memory)
    key = (memory.agent, said)
    existing = working.text_index.get(key)
    if existing is not None:
        entry = working.entries[existing]
        belief = working.belief_of(existing, memory.agent) or (
            entry.beliefs[0] if entry.beliefs else ""
        )
        return Duplicate(entry.id, belief, list(entry.topics))
    if key in state.seen:
        first = state.seen[key]
        topics = first.topics if isinstance(first, Shared) else first.memory.topics
        return Duplicate(first.observation_id, first.belief_id, list(topics))
    if memory.supports or memory.contradicts:
        return None  # claims of a new observation
    shared: Shared | None = None
    rows = working.held_text(said)
    if rows:
        entry = working.entries[rows[0]]
        believers = state.believers.setdefault(entry.id, list(entry.agents))
        shared = Shared(memory, entry.id, new_id("bel"), list(entry.topics), list(believers))
    elif (first_plan := state.texts.get(said)) is not None:
        believers = state.believers.setdefault(first_plan.observation_id, [first_plan.memory.agent])
        shared = Shared(
            memory,
            first_plan.observation_id,
            new_id("bel"),
            list(first_plan.memory.topics),
            list(believers),
        )
    if shared is not None:
        state.believers[shared.observation_id].append(memory.agent)
        state.seen[key] = shared
    return shared


def _known_fact(
    memory: NewMemory, cardinality: str, working: WorkingMemory, state: Batch, now: datetime
) -> Duplicate | Shared | None:
    """What a fact finds already there, as the write planned so far has it: the agent's
    own in the same words, begun and still holding when this one begins, or ending as this
    one says (a repeat: a retried call), or another agent's to believe too, or nothing (a
    new observation: also when the agent told it before and it has ended since, "busy",
    "free", "busy", or begins only later)."""
    fact = memory.fact
    assert fact is not None
    start = fact.valid_from or memory.observed_at or now
    said = (memory.text_key, topic_key(fact.object))
    key = (topic_key(fact.subject), fact.predicate)
    since = _since(start, fact)
    if fact.valid_from is None and fact.valid_until is not None:
        since = min(since, fact.valid_until - FUTURE_SKEW)  # a plan cancelled ahead
    facts = state.facts(working, key, since)
    ending = {h.id for h in _told_end(memory.agent, fact, facts, memory.observed_at or now)}
    for held in facts:
        if (held.text_key, held.object) != said or held.start > start or held.id in ending:
            continue
        if memory.agent in held.beliefs and (
            held.holds_at(start)
            or held.until == fact.valid_until
            or (not ending and _cancelled_ahead(held, fact.valid_until))
        ):
            return Duplicate(held.id, held.beliefs[memory.agent], list(held.topics))
        # Its belief in a fact others hold on, ended by a later fact of its own: repeated,
        # as the agent's own fact ended by that later fact would be.
        belief, until = held.ended.get(memory.agent, ("", start))
        if belief and (until is None or until > start or until == fact.valid_until):
            return Duplicate(held.id, belief, list(held.topics))
    if memory.supports or memory.contradicts:
        return None  # claims of a new observation
    theirs = None
    for held in [h for h in facts if (h.text_key, h.object) == said]:
        # Whether the agent's facts fit it is asked from when it began: read those too.
        facts = state.facts(working, key, min(since, held.start))
        if _may_share(memory, start, held, facts if cardinality == "one" else [], said):
            theirs = held
            break
    if theirs is None:
        return None
    shared = Shared(memory, theirs.id, new_id("bel"), list(theirs.topics), list(theirs.beliefs))
    told = memory.fact
    if cardinality == "one" and told is not None and holds_ever(start, told.valid_until):
        ends = _end_older(memory.agent, theirs.object, start, facts)
        shared.superseded, shared.withdraws, shared.conflicts = ends
    theirs.beliefs[memory.agent] = shared.belief_id
    theirs.shares[memory.agent] = shared
    return shared


def _told_end(agent: str, fact: Fact, facts: list[Held], said: datetime) -> list[Held]:
    """The facts ``fact`` (told at ``said``) tells the end of: with only a ``valid_until``
    (no start), the same value as facts that ``agent`` holds, begun before that end and
    holding on past it ("Sam works at Acme" told again ending 10 November: Sam quit), or
    plans of the agent's, still to come when it is told, that begin at or after that end
    ("We fly to Lisbon from 10 January" told again ending now: the trip is off; ``cancels``;
    one others hold too is called off for the agent alone, as is one others hold on that
    the agent held until a later fact of its own: Munich from January, then Hamburg from
    March). Told with a start it is a fact of its own. Not one the agent alone holds
    now that another held until a later fact of its own: replaced from its start, it took
    that history; with the agent's belief withdrawn, it held for nobody. Nor a record's:
    replaced, the record left every ``where`` ("order 17 is no longer on hold" took order
    17 with it)."""
    end = fact.valid_until
    if end is None or fact.valid_from is not None:
        return []
    obj = topic_key(fact.object)
    return [
        h
        for h in facts
        if h.object == obj
        and not h.record
        and (
            (
                agent in h.beliefs
                and (len(h.beliefs) > 1 or not _held_before(h))
                and (
                    (h.start < end and (h.until is None or h.until > end))
                    # A plan others hold too stays theirs: the agent's belief is withdrawn.
                    or (cancels(end, h.start, said) and holds_ever(h.start, h.until))
                )
            )
            # A plan others hold on that a later fact of the agent's ended for it (its
            # belief held until that fact began): called off, it holds for the agent at no
            # time, as when the agent alone held it.
            or (
                bool(h.beliefs)
                and _held_until_later(h, agent)
                and cancels(end, h.start, said)
                and holds_ever(h.start, h.until)
            )
        )
    ]


def cancels(end: datetime, start: datetime, said: datetime) -> bool:
    """Whether an end told at ``said`` cancels a fact of the same value beginning at
    ``start``: it is a plan still to come then, and the end comes at or before its start
    (the plan would end before it began: it is off, and held at no time) and by when it
    is told, a clock's skew aside. An end told of a later time is a fact of its own, held
    until then ("We are in Lisbon until the 20th" beside a trip there in January)."""
    return said < start and end <= start and end <= said + FUTURE_SKEW


def _given_back(
    working: WorkingMemory,
    plan: Held,
    facts: list[Held],
    told: set[str],
    cancelled: Collection[int],
    given: dict[str, datetime | None],
    leaving: str | None = None,
) -> list[tuple[str, str, datetime | None, str | None]]:
    """The facts the stored ``plan``, cancelled, had ended, with the end each has without
    it (``reopened``), as ``Plan.reopens``; ``facts`` (the write's, of the plan's subject
    and predicate) are changed to match. A fact planned earlier in the write that begins
    after one given back ends it, as it would have ended it had it held then. None of
    ``told`` (the facts whose end is told with the plan's: they end as told); ``cancelled``
    (rows of the plans cancelled, or called off for the agent alone, with it) end nothing
    either, and a fact one of them gave back already (``given``: id -> its end, filled in
    here) is given its end once. With
    ``leaving``, the plan is called off by that agent alone: only the facts none of its
    other believers holds are given back (``reopened``)."""
    out: list[tuple[str, str, datetime | None, str | None]] = []
    byid = {h.id: h for h in facts}
    for row, until, newer in reopened(working, working.row_of[plan.id], leaving, also=cancelled):
        entry = working.entries[row]
        if entry.id in told:
            continue
        if entry.id in given:  # given back by another plan cancelled with it
            out.append((entry.id, plan.id, given[entry.id], None))
            continue
        held = byid.get(entry.id)
        if held is not None:
            later = [
                h
                for h in facts
                if h.plan is not None
                and (h.object != held.object or _covers(h.stated, held.stated))
                and set(held.beliefs) <= set(h.beliefs)
                and h.start > held.start
                and holds_ever(h.start, h.stated)
                and not h.stale
                and (until is None or h.start < until)
            ]
            if later:
                first = min(later, key=lambda h: h.start)
                assert first.plan is not None
                until, newer = first.start, None
                first.plan.superseded.append((held.id, first.start))
            held.until = until
        given[entry.id] = until
        out.append((entry.id, plan.id, until, newer))
    return out


def _left(
    working: WorkingMemory,
    plan: Held,
    agent: str,
    facts: list[Held],
    told: set[str],
    cancelled: Collection[int],
    given: dict[str, datetime | None],
) -> tuple[
    list[tuple[str, str, datetime | None, str | None]],
    list[tuple[int, str, str, str, Decimal | None]],
]:
    """What ``agent`` calling off ``plan``, which others hold on, gives back: the facts the
    plan had ended for the agent alone and the agent's beliefs it had withdrawn, as
    ``Plan.reopens`` and ``Plan.restores`` (a plan stored), or undone in this write (the
    agent's belief in it planned here); ``facts`` are changed to match. ``cancelled`` and
    ``given`` as ``_given_back`` has them."""
    share = plan.shares.pop(agent, None)
    if share is not None:
        _unplanned(share, facts, told, plan.beliefs)
        if plan.plan is not None:  # what it came to end as the agent's, in this write
            _unplanned(plan.plan, facts, told, plan.beliefs, withdrawn=False)
        return [], []
    if plan.plan is not None:
        _unplanned(plan.plan, facts, told, plan.beliefs)
        return [], []
    return (
        _given_back(working, plan, facts, told, cancelled, given, agent),
        _beliefs_given_back(working, plan, facts, told, agent),
    )


def _unplanned(
    plan: Plan | Shared,
    facts: list[Held],
    told: set[str],
    keep: Collection[str] = (),
    withdrawn: bool = True,
) -> None:
    """Give back what ``plan``, told earlier in this write and cancelled in it, was to end:
    the facts it superseded end where the first later fact of their agents begins, or at
    their stated end, or not at all; the beliefs it withdrew are held again. Nothing of it
    is written yet, so its links are dropped; ``facts`` are changed to match. None of
    ``told`` (the facts whose end is told with the plan's: they end as told). ``keep``: the
    agents holding the plan on (its agent called it off alone, or a ``Shared`` belief in it
    planned here): what one of them holds it ends still. ``withdrawn``: give back the
    beliefs it withdrew too (False: its agent holds it on, and the beliefs are its own).
    """
    byid = {h.id: h for h in facts}
    keeping = set(keep)

    def theirs(fact: str) -> bool:
        held = byid.get(fact)
        return held is not None and bool(keeping & set(held.beliefs))

    kept = [(older, at) for older, at in plan.superseded if theirs(older)]
    ended = [older for older, _ in plan.superseded if not theirs(older)]
    # Facts told later in the write that began before it, which it ended as the next fact.
    for h in facts:
        if (
            h.plan is not None
            and not keeping & set(h.beliefs)
            and any(n == plan.observation_id for n, _ in h.plan.superseded_by)
        ):
            h.plan.superseded_by = [x for x in h.plan.superseded_by if x[0] != plan.observation_id]
            ended.append(h.id)
    for older in ended:
        held = byid.get(older)
        if held is None or older in told:
            continue
        later = [
            h
            for h in facts
            if h.id not in (plan.observation_id, held.id)
            and (h.object != held.object or _covers(h.stated, held.stated))
            and set(held.beliefs) <= set(h.beliefs)
            and (h.start > held.start or (h.start == held.start and h.seq > held.seq))
            and holds_ever(h.start, h.stated)
            and not h.stale
        ]
        until = held.stated
        first = min(later, key=lambda h: h.start) if later else None
        if first is not None and (until is None or first.start < until):
            until = first.start
            if first.plan is not None:
                first.plan.superseded.append((held.id, first.start))
            elif held.plan is not None:
                held.plan.superseded_by.append((first.id, first.start))
        held.until = until
        if held.plan is not None:
            held.plan.valid_until = until
    plan.superseded = kept
    if not withdrawn:
        return
    agent = plan.memory.agent
    still: list[tuple[str, str, datetime]] = []
    for older, belief, _ in plan.withdraws:
        held = byid.get(older)
        if held is None or older in told:
            continue
        # A later fact of the agent's in the write ends its belief still, from its start.
        starts = [
            h.start
            for h in facts
            if h.id not in (plan.observation_id, held.id)
            and agent in h.beliefs
            and h.object != held.object
            and h.start > held.start
            and holds_ever(h.start, h.stated)
            and not h.stale
        ]
        if starts:
            held.ended[agent] = (belief, min(starts))
            still.append((older, belief, min(starts)))
            continue
        held.ended.pop(agent, None)
        held.beliefs[agent] = belief
        _held_on(None, held, agent, facts, None)
    plan.withdraws = still


def _beliefs_given_back(
    working: WorkingMemory,
    plan: Held,
    facts: list[Held],
    told: set[str],
    leaving: str | None = None,
) -> list[tuple[int, str, str, str, Decimal | None]]:
    """The beliefs the stored ``plan``, cancelled (with ``leaving``: called off by that
    agent alone), had withdrawn in facts others hold too (``restored``), each with a new
    belief id and the withdrawn one's confidence, as ``Plan.restores``; ``facts`` are
    changed to match. None of ``told``."""
    out: list[tuple[int, str, str, str, Decimal | None]] = []
    byid = {h.id: h for h in facts}
    for row, agent, old in restored(working, working.row_of[plan.id], leaving):
        if working.entries[row].id in told:
            continue
        belief = new_id("bel")
        held = byid.get(working.entries[row].id)
        if held is not None:
            held.ended.pop(agent, None)
            held.beliefs[agent] = belief
        out.append((row, agent, old, belief, working.withdrawn_confidence.get(old)))
    return out


def _held_on_all(
    working: WorkingMemory,
    restores: list[tuple[int, str, str, str, Decimal | None]],
    facts: list[Held],
    new: Plan,
) -> None:
    """``_held_on`` for each belief ``restores`` gives back (as ``Plan.restores``)."""
    byid = {h.id: h for h in facts}
    for row, agent, *_ in restores:
        held = byid.get(working.entries[row].id)
        if held is not None:
            _held_on(working, held, agent, facts, new)


def _held_on(
    working: WorkingMemory | None, held: Held, agent: str, facts: list[Held], new: Plan | None
) -> None:
    """``agent`` holds ``held`` again (a plan it called off gave its belief back), and
    holds it on: where the others believing it ended it by a later fact of theirs while
    the agent's belief was withdrawn, that fact ends it for them alone, as it would have
    had the agent held it then (scout and medic have Sam in Berlin, scout plans Munich,
    medic tells Paris from May, scout calls Munich off: Berlin holds on for scout, for
    medic until May). The end is undone (by ``new``, the end told, when the later fact is
    stored; by the later fact itself, planned in this write) and their beliefs are
    withdrawn where it begins; ``facts`` are changed to match. Without ``working`` (a plan
    of this write given back), only a later fact planned in this write is undone."""
    until = held.until
    others = [a for a in held.beliefs if a != agent]
    if until is None or until == held.stated or not others:
        return
    target: Plan
    planned = next(
        (h for h in facts if h.plan is not None and (held.id, until) in h.plan.superseded), None
    )
    if planned is not None:
        assert planned.plan is not None
        if not set(others) <= set(planned.beliefs):
            return
        target = planned.plan
        target.superseded.remove((held.id, until))
        target.conflicts.append(held.id)
    else:
        row = None if working is None else working.row_of.get(held.id)
        if working is None or new is None or row is None:
            return
        link = working.ending_link(row)
        if link is None or working.valid_until[row] != micros(until):
            return
        newer = working.entries[link[0]]
        if not set(others) <= set(newer.agents):
            return
        target = new
        target.reopens.append((held.id, newer.id, held.stated, None))
    for other in others:
        belief = held.beliefs.pop(other)
        held.ended[other] = (belief, until)
        target.withdraws.append((held.id, belief, until))
    held.until = held.stated
    if held.plan is not None:
        held.plan.valid_until = held.stated


def _cancelled_ahead(held: Held, end: datetime | None) -> bool:
    """Whether ``held`` is the end told of a plan with an end to come (``end``, or an
    earlier one), taken as when it was told: it holds at no time, ending as it was stated
    then, and the same call retried is its repeat."""
    return (
        end is not None
        and held.stated is not None
        and held.start == held.until == held.stated
        and end > held.stated
    )


def _held_until_later(held: Held, agent: str) -> bool:
    """Whether ``agent`` held ``held`` for a while until a later fact of its own (its belief
    withdrawn there, others holding it on)."""
    belief = held.ended.get(agent)
    return belief is not None and (belief[1] is None or belief[1] > held.start)


def _held_before(held: Held) -> bool:
    """Whether another agent held ``held`` for a while until a later fact of its own (one
    withdrawn from its start, as an end it told withdraws it, held nothing)."""
    return any(until is None or until > held.start for _, until in held.ended.values())


def _moment(value: int) -> datetime | None:
    """A time in microseconds, None for NO_END (no end)."""
    return None if value == NO_END else from_micros(value)


def _unless_held_later(
    memory: NewMemory, working: WorkingMemory, state: Batch, said: datetime
) -> NewMemory:
    """``memory``, its fact beginning when it is said after all (as one given no time) if a
    fact of its agent, subject and predicate already begins after the time its words gave
    (``drafts.begun_as_told``) at a start given or read from its own words: told later, it
    is news ("Alice moved to Rome in December", told in May while Paris holds from January),
    not history that what is held ends. A fact the agent alone holds that began only when it
    was told, before ``memory`` was (``said``), counts not: it was stale when told
    (``_stale_when_told``). Decided before the
    repeats are looked for, so a repeat is found as it was told the first time."""
    fact = memory.fact
    assert fact is not None and fact.valid_from is not None
    key = (topic_key(fact.subject), fact.predicate)
    # The agent's own facts only: it supersedes no other agent's, and another's later fact
    # would make the agent's history wait for a telling of someone else's.
    agent = memory.agent
    if not any(
        h.start > fact.valid_from
        and (agent in h.beliefs or agent in h.ended)
        and not _alone_as_told(h, agent, said)
        for h in state.facts(working, key, fact.valid_from)
    ):
        return memory
    return replace(memory, fact=replace(fact, valid_from=None, from_words=False))


def _since(start: datetime, fact: Fact) -> datetime:
    """The earliest end of a fact that may matter to ``fact`` beginning at ``start``: one
    ending as it says (a retried call of a fact that ended before it was told)."""
    return start if fact.valid_until is None else min(start, fact.valid_until)


def _may_share(
    memory: NewMemory, start: datetime, held: Held, facts: list[Held], said: tuple[str, str]
) -> bool:
    """Whether ``memory`` (of a fact beginning at ``start``) is the claim of ``held``,
    another agent's fact in the same words: it holds then, ends as ``memory`` says, and this
    agent's own ``facts`` (of a single-valued predicate; none of a multi-valued one) fit it
    as they would fit a fact of its own.

    A fact replaced or ended since, or one starting after this one, is another claim:
    believing it would let the other agent's replacement end this agent's belief, or lose
    when this one's fact started. So is one that a fact of this agent's begins within (it
    would end the other agent's fact, or hold beside it), and one that began before this
    one says while the agent held another value (from when the shared fact began, the
    agent would hold both)."""
    fact = memory.fact
    assert fact is not None
    if (
        (held.text_key, held.object) != said
        or not held.beliefs
        or memory.agent in held.beliefs
        or held.start > start
        or held.until != fact.valid_until
    ):
        return False
    for other in facts:
        if memory.agent not in other.beliefs or other.object == held.object:
            continue
        if fact.valid_until is not None and other.start >= fact.valid_until:
            continue  # begins once this one is over
        if not holds_ever(other.start, other.stated):
            continue  # never holds: fits anything
        if other.start > held.start or (held.start < start and other.holds_at(held.start)):
            return False
    return True


def holds_ever(start: datetime, until: datetime | None) -> bool:
    """Whether a fact beginning at ``start`` and ending at ``until`` holds at some time: one
    told with only an end already past (its start unknown, taken as when it was told) never
    does, and ends no other fact."""
    return until is None or until > start


def _end_older(
    agent: str, obj: str, start: datetime, facts: list[Held]
) -> tuple[list[tuple[str, datetime]], list[tuple[str, str, datetime]], list[str]]:
    """What a fact of ``agent`` (object ``obj``, beginning at ``start``) does to the facts
    of its subject and predicate held before it that still hold then: it ends the agent's
    own (supersedes them), withdraws the agent's belief in those others hold too (the fact
    stays theirs, and disagrees with this one; the belief held until ``start``), and clashes
    with other agents' facts.

    Returns (superseded as (id, at), withdrawn as (observation id, belief id, until),
    conflicts); ``facts`` are changed to match: ends shortened, beliefs withdrawn.
    """
    superseded: list[tuple[str, datetime]] = []
    withdrawn: list[tuple[str, str, datetime]] = []
    conflicts: list[str] = []
    # The earliest first: an older fact ends when the first newer one begins.
    for held in sorted(facts, key=lambda h: h.start):
        if held.object == obj or not held.holds_at(start):
            continue
        if agent not in held.beliefs:
            conflicts.append(held.id)
        elif held.start > start:
            continue  # a later fact of the agent: it ends this one (_end_by_later)
        elif len(held.beliefs) > 1:
            # Others still hold the older fact: this agent's belief in it ends, the fact
            # does not, and the two now disagree.
            belief = held.beliefs.pop(agent)
            held.ended[agent] = (belief, start)
            withdrawn.append((held.id, belief, start))
            conflicts.append(held.id)
        else:
            superseded.append((held.id, start))
            held.until = start
            if held.plan is not None:
                held.plan.valid_until = start
    return superseded, withdrawn, conflicts


def _alone_as_told(held: Held, agent: str, said: datetime) -> bool:
    """Whether ``held`` began only when it was told (``Held.told``), before ``said`` (when
    the fact placed before it was told: one told after that is the news), and is
    ``agent``'s alone: no other agent holds it, nor held it until a later fact of its own
    (ending it from its start would take that history)."""
    return (
        held.told and held.start < said and list(held.beliefs) == [agent] and not _held_before(held)
    )


def _stale_when_told(plan: Plan, facts: list[Held]) -> None:
    """Supersedes, from their start, the facts of ``plan``'s agent alone with another
    object that began only when they were told, after the time ``plan``'s words place it at
    (``_alone_as_told``): "My sister lives in Porto", told on 1 June, was stale once "My
    sister moved to Lisbon in March" is told on 10 June. Such a fact never holds in valid
    time as known now: it ends where it began, as a plan replaced before it began (an end
    before its start would be an interval backwards); at an earlier ``known_at`` it holds
    as told. ``facts`` are changed to match."""
    memory = plan.memory
    assert memory.fact is not None and plan.valid_from is not None
    obj, agent = topic_key(memory.fact.object), memory.agent
    for held in facts:
        if (
            held.object == obj
            or held.start <= plan.valid_from
            or not held.holds_at(held.start)
            or not _alone_as_told(held, agent, plan.observed_at)
        ):
            continue
        plan.superseded.append((held.id, held.start))
        held.until, held.stale = held.start, True
        if held.plan is not None:
            held.plan.valid_until = held.start


def stale(working: WorkingMemory, row: int) -> bool:
    """Whether the fact at ``row`` was stale when told: superseded from its start by a fact
    beginning before it (``_stale_when_told``), so it never held in valid time as known now.
    (One replaced from its start by a fact of the same start, as a plan replaced before it
    began, is not: that one took its place.)"""
    entry = working.entries[row]
    start = entry.valid_from or entry.observed_at
    if entry.valid_until != start:
        return False
    for newer in entry.superseded_by:
        other = working.row_of.get(newer)
        if other is not None and int(working.valid_from[other]) < micros(start):
            return True
    return False


def _end_by_later(plan: Plan, facts: list[Held]) -> None:
    """An older fact arriving late is history: it ends when the first later fact of its
    agent begins, unless it ended by then (its own end). One of the same object counts
    when it holds as long (``_covers``): Paris from September told before Paris from
    January, the second holds until the first begins, not beside it (two equal values at
    once)."""
    assert plan.memory.fact is not None and plan.valid_from is not None
    obj = topic_key(plan.memory.fact.object)
    later = [
        h
        for h in facts
        if plan.memory.agent in h.beliefs
        and (h.object != obj or _covers(h.stated, plan.valid_until))
        and h.start > plan.valid_from
        and holds_ever(h.start, h.stated)
        and not h.stale
    ]
    if not later:
        return
    first = min(later, key=lambda h: h.start)
    if plan.valid_until is None or plan.valid_until > first.start:
        plan.superseded_by.append((first.id, first.start))
        plan.valid_until = first.start


def _cardinality(fact: Fact, working: WorkingMemory, state: Batch, field_name: str) -> str:
    """The cardinality of ``fact``'s predicate: as the graph records it (or this write
    decided), else as the fact gives it, else as configured, else as ``unlisted_cardinality``
    reads its words as given (``Fact.words``: "hasSister" names a sister).

    Raises:
        InvalidInput: the fact gives a cardinality other than the one its predicate has.
    """
    predicate = fact.predicate
    known = working.predicates.get(predicate) or state.predicates.get(predicate)
    if known is not None:
        if fact.cardinality is not None and fact.cardinality != known:
            raise InvalidInput(
                field_name,
                f"is {fact.cardinality!r}, but the predicate {predicate!r} is {known!r}"
                " (cardinality is set when a fact first uses a predicate);"
                f' give "{known}" or leave fact.cardinality out',
            )
        return known
    chosen = (
        fact.cardinality
        or working.configured.get(predicate)
        or unlisted_cardinality(fact.words or predicate)
    )
    state.predicates[predicate] = chosen
    return chosen


def reopened(
    working: WorkingMemory,
    row: int,
    leaving: str | None = None,
    keeping: Sequence[str] = (),
    also: Collection[int] = (),
) -> list[tuple[int, datetime | None, str | None]]:
    """Facts that the observation at ``row`` had ended, with the end they have without it,
    as (row, new end, the id of a new superseder or None). For a forget of that observation,
    or, with ``leaving``, of that agent's belief in it: then only the facts none of its
    remaining believers holds (it ends theirs still).

    The new end is the start of their next remaining superseder, or of the next fact of
    their agents that a chain had ended them before (Athens, then Bonn, then Cork: Cork
    ended Bonn, and with Bonn forgotten it ends Athens, as it would have without Bonn; it
    then supersedes Athens too), or their stated end, or None: current again. ``keeping``:
    agents holding the observation from now on besides its remaining believers (``heir``).
    ``also``: rows that end nothing any more either (plans cancelled with it).
    """
    gone = working.entries[row]
    key = fact_key(gone)
    if key is None:
        return []
    staying = set() if leaving is None else set(gone.agents) - {leaving}
    if leaving is not None:  # and those it holds for until later facts of theirs
        staying |= {
            a
            for a, b, *_, until in working.withdrawn.get(row, [])
            if until is not None and working.held_then(b)
        }
        staying.discard(leaving)
    staying |= set(keeping)
    out: list[tuple[int, datetime | None, str | None]] = []
    for other in working.fact_index.get(key, []):
        entry = working.entries[other]
        if other == row or gone.id not in entry.superseded_by or staying & set(entry.agents):
            continue
        # The end it was given, unless a remaining superseder starts earlier.
        ends = [entry.stated_until] if entry.stated_until is not None else []
        for newer in entry.superseded_by:
            newer_row = working.row_of.get(newer)
            if newer == gone.id or newer_row is None or newer_row in also:
                continue
            successor = working.entries[newer_row]
            if not successor.retracted:
                ends.append(successor.valid_from or successor.observed_at)
        after = _next_fact(working, other, row, also)
        if after is not None and (not ends or after[1] < min(ends)):
            out.append((other, after[1], working.entries[after[0]].id))
        else:
            out.append((other, min(ends) if ends else None, None))
    return out


def restored(
    working: WorkingMemory, row: int, leaving: str | None = None
) -> list[tuple[int, str, str]]:
    """Beliefs a forget of the observation at ``row`` gives back: (row, agent, belief id) of
    each belief a later fact of its agent withdrew that, without this fact (with
    ``leaving``, without that agent's belief in it), no later fact of its agent ends; it is
    held again, as if the fact had never been told. One that another later fact still ends
    stays withdrawn and holds until that one begins (``WorkingMemory.belief_end``)."""
    key = fact_key(working.entries[row])
    if key is None:
        return []
    out: dict[tuple[int, str], str] = {}
    for agent, held in working.held_before.items():
        if leaving is not None and agent != leaving:
            continue
        for other, belief, _, _ in held:
            if (
                other == row
                or not working.held_then(belief)
                or (other, agent) in out
                or fact_key(working.entries[other]) != key
                or not working.live[other]
                or working.belief_of(other, agent) is not None
            ):
                continue
            ended = working.belief_end(other, agent) != NO_END
            if ended and working.belief_end(other, agent, leaving=row) == NO_END:
                out[(other, agent)] = belief
    return [(other, agent, belief) for (other, agent), belief in out.items()]


#: A fact ``held_on`` finds: its row, the row of the later fact that ends it for the others,
#: its end without that fact (its stated end or None), where that fact begins, and the
#: others' beliefs in it (withdrawn from then).
HeldOn = tuple[int, int, datetime | None, datetime, list[str]]


def held_on(working: WorkingMemory, restoring: Iterable[tuple[int, str]]) -> list[HeldOn]:
    """Facts a forget gives an agent its belief in back (``restoring``: (row, agent), as
    ``restored`` finds them) that the others believing them ended by a later fact of theirs
    while the agent's belief was withdrawn: the agent holds the fact on, as it would have
    had it held it then, and that later fact ends it for the others alone, as a plan called
    off gives it back (``_held_on``; scout and medic have Sam in Berlin, scout alone plans
    Munich, medic tells Paris from May, scout forgets Munich: Berlin holds on for scout, for
    medic until May). Returns (row, the row of the later fact, the fact's end without it:
    its stated end or None, that fact's start, the others' beliefs: withdrawn from then)."""
    out: list[HeldOn] = []
    for row, agent in restoring:
        entry = working.entries[row]
        end = int(working.valid_until[row])
        stated = entry.stated_until
        others = [a for a in entry.agents if a != agent]
        if end == NO_END or (stated is not None and micros(stated) == end) or not others:
            continue
        link = working.ending_link(row)
        if link is None or not set(others) <= set(working.entries[link[0]].agents):
            continue
        beliefs = [b for a in others if (b := working.belief_of(row, a)) is not None]
        out.append((row, link[0], stated, from_micros(end), beliefs))
    return out


def heir(working: WorkingMemory, row: int, leaving: str) -> tuple[str, str, int, int | None] | None:
    """Who holds the observation at ``row`` in place of ``leaving``, its last believer,
    forgetting it: of the other agents whose belief in it a later fact of their own withdrew
    (it held for them until that fact began), the one it holds for longest, as if it had
    been the last believer when its later fact came (which then ended the observation); the
    others keep their withdrawn beliefs, ending sooner. None: ``leaving`` is not the last
    believer, or nobody else held it (for a while: one whose belief ends where the
    observation begins held it at no time). Returns (agent, its withdrawn belief, where that
    belief ends in microseconds or NO_END, the row of the fact ending it or None)."""
    if set(working.entries[row].agents) - {leaving}:
        return None
    found: tuple[str, str, int, int | None] | None = None
    began = int(working.valid_from[row])
    for agent, belief, _, _, until in working.withdrawn.get(row, []):
        if until is None or agent == leaving or not working.held_then(belief):
            continue
        end, ender = working.belief_ender(row, agent)
        if end <= began:
            continue  # it held for the agent at no time (a plan the agent called off)
        if found is None or end > found[2]:
            found = (agent, belief, end, ender)
    return found


def _next_fact(
    working: WorkingMemory, row: int, gone: int | None = None, also: Collection[int] = ()
) -> tuple[int, datetime] | None:
    """The fact that would supersede the one at ``row`` (had the one at ``gone`` never
    been): the earliest remaining fact of the same subject and predicate held by its
    agents that starts after it (or at once, told later). One of the same object counts
    when it holds as long (``_covers``): told while the one at ``row`` was ended, it is the
    same value told again, and from when it begins it holds the value in its place (Paris,
    Rome, Paris: with Rome forgotten, the first Paris holds until the second, not beside
    it)."""
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
            or other in also
            or newer.retracted
            or not holds_ever(start, newer.stated_until)
            or stale(working, other)  # never held (a plan cancelled): it ends nothing
            or not set(entry.agents) <= set(newer.agents)
            or (
                topic_key(newer.object or "") == topic_key(entry.object or "")
                and not _covers(newer.stated_until, entry.stated_until)
            )
            or start < began
            or (start == began and newer.seq < entry.seq)
        ):
            continue
        if found is None or start < found[1]:
            found = (other, start)
    return found


def withdrawn_by(working: WorkingMemory, rows: Iterable[int]) -> list[tuple[int, str, datetime]]:
    """The beliefs that the facts at ``rows`` (given back by a forget) withdraw, as a write
    of them would have (``_end_older``): each agent's belief in a fact of another object,
    one it holds with other agents, begun before and holding when the given-back fact of
    that agent begins. Returns (row, belief id, until: that start); ``overlapping`` ends
    the facts the agents hold alone."""
    found: dict[str, tuple[int, str, datetime]] = {}
    for row in rows:
        given = working.entries[row]
        start = given.valid_from or given.observed_at
        if not _single_valued(working, row) or not holds_ever(start, given.valid_until):
            continue
        for other, older in _held_when_begins(working, row):
            if len(older.agents) < 2:
                continue
            for agent in given.agents:
                belief = working.belief_of(other, agent)
                if belief is not None and (belief not in found or found[belief][2] > start):
                    found[belief] = (other, belief, start)
    return list(found.values())


def held_again(
    working: WorkingMemory, plans: Iterable[tuple[int, str]], leaving: int
) -> list[tuple[int, int, datetime]]:
    """The facts that plans held for an agent again begin within, as a write of them would
    have ended them: ``plans`` are (plan row, agent) that the agent's end told at row
    ``leaving`` called off (``WorkingMemory.called_off``), to be forgotten; the agent's
    belief in each, which a later fact of its own withdrew, then holds again until that fact
    begins. Each fact of the agent's (held by no other agent the plan does not hold it for)
    of another object, begun before the plan and holding when it begins, ends there.
    Returns (older row, plan row, the plan's start), as ``overlapping``."""
    found: list[tuple[int, int, datetime]] = []
    for plan, agent in plans:
        entry = working.entries[plan]
        start = entry.valid_from or entry.observed_at
        if not _single_valued(working, plan) or working.belief_end(
            plan, agent, leaving=leaving
        ) <= micros(start):
            continue
        holding = {*entry.agents, agent}
        for other, older in _held_when_begins(working, plan):
            # One held past the start by another agent is left to ``held_past``'s readers.
            if (
                agent in older.agents
                and set(older.agents) <= holding
                and not held_past(working, other, start)
            ):
                found.append((other, plan, start))
    return found


def _single_valued(working: WorkingMemory, row: int) -> bool:
    """Whether the memory at ``row`` is a fact, not retracted, of a single-valued
    predicate: one whose beginning ends another object's fact for its agents."""
    entry = working.entries[row]
    return (
        fact_key(entry) is not None
        and not entry.retracted
        and working.cardinality(entry.predicate or "") == "one"
    )


def _held_when_begins(working: WorkingMemory, row: int) -> Iterator[tuple[int, Entry]]:
    """(row, entry) of each fact, not retracted, of the same subject and predicate as the
    fact at ``row`` and another object, begun before it begins and holding then: what its
    beginning ends for the agents who hold both."""
    entries = working.entries
    fact = entries[row]
    key = fact_key(fact)
    if key is None:
        return
    start = fact.valid_from or fact.observed_at
    obj = topic_key(fact.object or "")
    for other in working.fact_index.get(key, []):
        older = entries[other]
        if (
            other == row
            or older.retracted
            or topic_key(older.object or "") == obj
            or (older.valid_from or older.observed_at) >= start
            or (older.valid_until is not None and older.valid_until <= start)
        ):
            continue
        yield other, older


def held_past(working: WorkingMemory, row: int, at: datetime) -> bool:
    """Whether an agent that no longer holds the fact at ``row`` held it until a later
    fact of its own beginning after ``at``: the fact is then that agent's still at ``at``,
    and a fact of its remaining believers beginning there withdraws their beliefs instead
    of ending it (its one validity would end it for that agent too)."""
    entry = working.entries[row]
    return any(
        agent not in entry.agents
        and until is not None
        and working.held_then(belief)
        and working.belief_end(row, agent) > micros(at)
        for agent, belief, *_, until in working.withdrawn.get(row, ())
    )


def longest_held(working: WorkingMemory, row: int) -> tuple[int, datetime] | None:
    """Of the agents that held the fact at ``row`` until later facts of their own, the
    fact ending it for the one it holds for longest, and where: (its row, its start). None:
    one holds it on with no later fact."""
    found: tuple[int, datetime] | None = None
    for agent, belief, *_, until in working.withdrawn.get(row, ()):
        if until is None or not working.held_then(belief):
            continue
        end, ender = working.belief_ender(row, agent)
        if ender is None:
            return None
        if found is None or from_micros(end) > found[1]:
            found = (ender, from_micros(end))
    return found


def _covers(later: datetime | None, until: datetime | None) -> bool:
    """Whether a fact told to end at ``later`` holds the value as long as one told to end
    at ``until`` (None: no end): then, of the same object and beginning later, it takes
    over from the other; one ending sooner does not (the other, broader, holds on)."""
    return later is None or (until is not None and later >= until)


def overlapping(
    working: WorkingMemory, keys: Iterable[tuple[str, str]] | None = None
) -> list[tuple[int, int, datetime]]:
    """Facts of a single-valued predicate that still hold when a later fact of their agents
    (another object) begins, as (older row, newer row, the newer one's start): two values
    at once for one agent. This version's writes never leave one (a newer fact of the agent
    ends the older, a forget ends what it reopens where the next fact begins, and what the
    facts it gives back begin within); forgets and sharing of earlier versions did, and so
    does an import merging another memory's facts into this one's. Start-up ends them
    (``open_stores``), as a write would have. ``keys``: only facts of these (subject,
    predicate) keys (None: all).
    """
    found: list[tuple[int, int, datetime]] = []
    entries = working.entries
    # Only subjects and predicates that ever named two objects can hold two at once.
    mixed = working.mixed_facts if keys is None else working.mixed_facts & set(keys)
    for key in mixed:
        rows = [r for r in working.fact_index.get(key, []) if not entries[r].retracted]
        if len(rows) < 2 or working.cardinality(entries[rows[0]].predicate or "") != "one":
            continue
        rows.sort(key=lambda r: (entries[r].valid_from or entries[r].observed_at, entries[r].seq))
        for i, row in enumerate(rows):
            entry = entries[row]
            agents = set(entry.agents)
            if not agents:
                continue  # held by agents until later facts of theirs: each ends it so
            obj = topic_key(entry.object or "")
            # The first fact after it (by start, then as told) of another object that all
            # its agents hold: what would have superseded it. One it superseded itself was
            # told before it (an agent coming to share a fact of the same start later).
            for newer in rows[i + 1 :]:
                later = entries[newer]
                start = later.valid_from or later.observed_at
                if (
                    topic_key(later.object or "") == obj
                    or not agents <= set(later.agents)
                    or entry.id in later.superseded_by
                    or not holds_ever(start, later.stated_until)
                    or stale(working, newer)
                ):
                    continue
                end = entry.valid_until
                if (end is None or end > start) and later.id not in entry.superseded_by:
                    found.append((row, newer, start))
                break
    return found


def _said(memory: NewMemory) -> str:
    fact = memory.fact
    if fact is None:
        return said_key(memory.text_key, None, None, None, memory.event_times)
    return said_key(memory.text_key, fact.subject, fact.predicate, fact.object, memory.event_times)
