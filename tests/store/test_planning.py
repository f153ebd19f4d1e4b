"""Planning a write on a bare working memory, without a database: duplicates, supersession
(in order, late, in a batch), conflicts between agents, and facts reopened by a forget."""

from __future__ import annotations

import random
from datetime import UTC, datetime
from unittest.mock import ANY

import pytest

from doxa.store import planning, remembering
from doxa.store.drafts import FactDraft, MemoryDraft, SupportDraft, validate
from doxa.store.errors import NotFound
from doxa.store.planning import Duplicate, Plan, Shared
from doxa.store.values import micros
from doxa.store.working_memory import WorkingMemory

T1, T2, T3 = (datetime(2024, 5, d, 8, tzinfo=UTC) for d in (1, 2, 3))
NOW = datetime(2024, 6, 1, tzinfo=UTC)


def fact(obj: str, at: datetime, agent: str = "scout") -> MemoryDraft:
    """The bridge's status, as ``agent`` saw it at ``at``."""
    return MemoryDraft(
        text=f"The bridge is {obj} (seen {at:%d %B}).",
        agent=agent,
        observed_at=at.isoformat(),
        fact=FactDraft("bridge", "status", obj),
    )


def remember(working: WorkingMemory, *drafts: MemoryDraft) -> list[Plan | Duplicate | Shared]:
    """Plan ``drafts`` as one write and apply it, as ``Memory.remember`` does once the graph
    has committed."""
    memories = [validate(d, "default") for d in drafts]
    planned = planning.plan(memories, working, NOW, batch=len(drafts) > 1)
    plans = [p for p in planned if isinstance(p, Plan)]
    shares = [p for p in planned if isinstance(p, Shared)]
    write = remembering.prepare(plans, working, NOW, shares)
    remembering.apply(working, write, remembering.entries(write))
    return planned


def only_plan(planned: list[Plan | Duplicate | Shared]) -> Plan:
    [plan] = planned
    assert isinstance(plan, Plan)
    return plan


def forget(working: WorkingMemory, observation_id: str) -> None:
    """Retract an observation as ``Memory.forget`` does after the graph commits."""
    row = working.row_of[observation_id]
    for other, until, newer in planning.reopened(working, row):
        working.reopen(other, until, observation_id)
        if newer is not None and until is not None:
            working.supersede(working.row_of[newer], other, until, NOW)
    working.retract(row, NOW)


def withdraw(working: WorkingMemory, observation_id: str, agent: str) -> None:
    """Withdraw ``agent``'s belief in an observation others hold too, as ``Memory.forget``
    does after the graph commits."""
    row = working.row_of[observation_id]
    for other, until, newer in planning.reopened(working, row, leaving=agent):
        working.reopen(other, until, observation_id, undone=NOW)
        if newer is not None and until is not None:
            working.supersede(working.row_of[newer], other, until, NOW)
    belief = working.belief_of(row, agent)
    assert belief is not None
    working.withdraw(row, belief, NOW)


@pytest.fixture
def working() -> WorkingMemory:
    return WorkingMemory(dim=8)


def test_the_same_text_from_the_same_agent_is_a_duplicate_of_the_stored_one(
    working: WorkingMemory,
) -> None:
    stored = only_plan(remember(working, MemoryDraft(text="Gulls nest on the pier.", agent="a")))
    again = MemoryDraft(text="  Gulls nest on the pier. ", agent="a", topics=["pier"])
    [planned] = planning.plan([validate(again, "default")], working, NOW)
    assert planned == Duplicate(stored.observation_id, stored.belief_id, [])


def test_the_same_text_from_another_agent_is_a_new_belief_in_the_same_observation(
    working: WorkingMemory,
) -> None:
    first = only_plan(remember(working, MemoryDraft(text="Gulls nest on the pier.", agent="a")))
    [planned] = planning.plan(
        [validate(MemoryDraft(text="Gulls nest on the pier.", agent="b"), "default")], working, NOW
    )
    assert isinstance(planned, Shared)
    assert planned.observation_id == first.observation_id
    assert planned.belief_id.startswith("bel_") and planned.belief_id != first.belief_id
    assert planned.shared_with == ["a"]


def test_the_same_text_with_another_fact_or_links_is_a_new_observation(
    working: WorkingMemory,
) -> None:
    remember(working, fact("closed", T1, agent="a"))
    other_fact = MemoryDraft(
        text="The bridge is closed (seen 01 May).",
        agent="b",
        observed_at=T1.isoformat(),
        fact=FactDraft("bridge", "status", "open"),
    )
    with_links = MemoryDraft(text="The bridge is closed (seen 01 May).", agent="c")
    stored = only_plan(remember(working, MemoryDraft(text="Evidence.", agent="c")))
    with_links.supports = [SupportDraft(stored.belief_id, "0.5")]
    planned = planning.plan([validate(d, "x") for d in (other_fact, with_links)], working, NOW)
    assert all(isinstance(p, Plan) for p in planned)


def test_a_shared_text_in_one_batch_is_one_observation_with_two_beliefs(
    working: WorkingMemory,
) -> None:
    drafts = [
        MemoryDraft(text="Fog at dawn.", agent="a"),
        MemoryDraft(text="Fog at dawn.", agent="b"),
    ]
    first, second = remember(working, *drafts)
    assert isinstance(first, Plan) and isinstance(second, Shared)
    row = working.row_of[first.observation_id]
    assert working.entries[row].agents == ("a", "b")
    assert set(working.entries[row].beliefs) == {first.belief_id, second.belief_id}


def test_a_text_repeated_in_one_batch_is_planned_once(working: WorkingMemory) -> None:
    drafts = [MemoryDraft(text="Twice said.", topics=["echo"]), MemoryDraft(text="Twice said.")]
    first, second = planning.plan([validate(d, "a") for d in drafts], working, NOW, batch=True)
    assert isinstance(first, Plan)
    assert second == Duplicate(first.observation_id, first.belief_id, ["echo"])


def test_planning_changes_nothing_in_the_working_memory(working: WorkingMemory) -> None:
    remember(working, fact("closed", T1))
    before = (
        len(working),
        working.next_seq,
        dict(working.text_index),
        working.valid_until[:1].tolist(),
    )
    planned = only_plan(planning.plan([validate(fact("open", T2), "x")], working, NOW))
    assert planned.superseded  # it would end the stored fact ...
    after = (
        len(working),
        working.next_seq,
        dict(working.text_index),
        working.valid_until[:1].tolist(),
    )
    assert after == before  # ... but only the write does
    assert working.entries[0].valid_until is None and working.entries[0].superseded_by == ()


def test_a_newer_fact_supersedes_the_current_one_of_the_same_agent(
    working: WorkingMemory,
) -> None:
    closed = only_plan(remember(working, fact("closed", T1)))
    opened = only_plan(remember(working, fact("open", T2)))
    assert opened.superseded == [(closed.observation_id, T2)]
    assert opened.conflicts == [] and opened.superseded_by == []
    old = working.entries[working.row_of[closed.observation_id]]
    assert old.valid_until == T2
    assert old.superseded_by == (opened.observation_id,)


def test_another_agents_different_object_is_a_conflict_not_a_supersession(
    working: WorkingMemory,
) -> None:
    closed = only_plan(remember(working, fact("closed", T1, agent="scout")))
    opened = only_plan(remember(working, fact("open", T2, agent="driver")))
    assert opened.conflicts == [closed.observation_id]
    assert opened.superseded == []
    assert working.entries[working.row_of[closed.observation_id]].valid_until is None


def test_the_same_object_again_supersedes_nothing(working: WorkingMemory) -> None:
    remember(working, fact("closed", T1))
    again = only_plan(remember(working, fact("Closed", T2)))  # objects match case-insensitively
    assert again.superseded == [] and again.conflicts == []


def test_an_older_fact_arriving_late_becomes_history(working: WorkingMemory) -> None:
    opened = only_plan(remember(working, fact("open", T2)))
    late = only_plan(remember(working, fact("closed", T1)))
    assert late.superseded == []
    assert late.superseded_by == [(opened.observation_id, T2)]
    assert late.valid_until == T2
    assert working.entries[working.row_of[opened.observation_id]].valid_until is None


def test_a_batch_of_facts_links_supersessions_as_the_same_facts_one_by_one() -> None:
    drafts = [fact("closed", T1), fact("open", T3), fact("half open", T2)]
    one_by_one, batched = WorkingMemory(dim=8), WorkingMemory(dim=8)
    for draft in drafts:
        remember(one_by_one, draft)
    remember(batched, *drafts)

    def shape(working: WorkingMemory) -> list[tuple[str, datetime | None, list[str]]]:
        text_of = {e.id: e.text for e in working.entries}
        return [
            (e.text, e.valid_until, sorted(text_of[i] for i in e.superseded_by))
            for e in working.entries
        ]

    assert shape(batched) == shape(one_by_one)
    closed, opened, half = shape(batched)
    assert closed[1] == T2  # ended by the half-open fact, the first to follow it
    assert half[1] == T3 and half[2] == [opened[0]]
    assert opened[1] is None


def test_forgetting_the_superseder_makes_the_fact_current_again(working: WorkingMemory) -> None:
    closed = only_plan(remember(working, fact("closed", T1)))
    opened = only_plan(remember(working, fact("open", T2)))
    row = working.row_of[closed.observation_id]
    assert planning.reopened(working, working.row_of[opened.observation_id]) == [(row, None, None)]
    forget(working, opened.observation_id)
    assert working.entries[row].valid_until is None
    assert working.entries[row].superseded_by == ()


def test_forgetting_one_of_two_superseders_ends_the_fact_at_the_other(
    working: WorkingMemory,
) -> None:
    closed = only_plan(remember(working, fact("closed", T1)))
    opened = only_plan(remember(working, fact("open", T3)))
    half = only_plan(remember(working, fact("half open", T2)))  # late: ends "closed" at T2
    row = working.row_of[closed.observation_id]
    assert set(working.entries[row].superseded_by) == {opened.observation_id, half.observation_id}
    assert working.entries[row].valid_until == T2
    assert planning.reopened(working, working.row_of[half.observation_id]) == [(row, T3, None)]
    forget(working, half.observation_id)
    assert working.entries[row].valid_until == T3
    assert working.entries[row].superseded_by == (opened.observation_id,)


def test_a_plain_observation_reopens_nothing(working: WorkingMemory) -> None:
    note = only_plan(remember(working, MemoryDraft(text="Just a note.")))
    assert planning.reopened(working, working.row_of[note.observation_id]) == []


def test_supporting_an_unknown_belief_names_the_field_within_the_batch(
    working: WorkingMemory,
) -> None:
    drafts = [
        MemoryDraft(text="Fine."),
        MemoryDraft(text="Evidence.", supports=[SupportDraft(belief_id="bel_nowhere")]),
    ]
    with pytest.raises(NotFound) as caught:
        planning.plan([validate(d, "a") for d in drafts], working, NOW, batch=True)
    assert caught.value.field == "memories[1].supports[0].belief_id"
    assert (caught.value.kind, caught.value.id) == ("belief", "bel_nowhere")


def test_contradicting_a_retracted_observation_is_not_found(working: WorkingMemory) -> None:
    gone = only_plan(remember(working, MemoryDraft(text="Soon retracted.")))
    forget(working, gone.observation_id)
    draft = MemoryDraft(text="Disagrees.", contradicts=[gone.observation_id])
    with pytest.raises(NotFound) as caught:
        planning.plan([validate(draft, "a")], working, NOW)
    assert caught.value.field == "contradicts[0]"
    assert caught.value.id == gone.observation_id


def test_a_write_gets_the_next_sequence_numbers_and_only_new_names(
    working: WorkingMemory,
) -> None:
    remember(working, MemoryDraft(text="First.", agent="a", topics=["harbour"], episode="e1"))
    memories = [
        validate(MemoryDraft(text="Second.", agent="a", topics=["harbour", "boats"]), "x"),
        validate(MemoryDraft(text="Third.", agent="b", episode="e2"), "x"),
    ]
    plans = [p for p in planning.plan(memories, working, NOW) if isinstance(p, Plan)]
    write = remembering.prepare(plans, working, NOW)
    assert [row["seq"] for row in write.observations] == [2, 3]
    assert (write.agents, write.topics, list(write.episodes)) == (["b"], ["boats"], ["e2"])


def test_only_keys_whose_facts_name_two_objects_can_clash(working: WorkingMemory) -> None:
    """``mixed_facts`` (the keys find_conflicts looks at) follows adds and purges."""
    remember(working, fact("open", T1), fact("Open", T2, agent="driver"))
    assert working.mixed_facts == set()  # the same object, spelled otherwise
    remember(working, fact("closed", T3, agent="driver"))
    assert working.mixed_facts == {("bridge", "status")}
    working.purge(len(working) - 1)
    assert working.mixed_facts == set()


def told(
    agent: str, obj: str, day: int, until: int | None = None, plain: bool = False
) -> MemoryDraft:
    """``agent`` tells where Ana lives from day ``day`` of May (until ``until`` days on),
    naming the day in its words unless ``plain`` (then the same words begin on any day)."""
    at = datetime(2024, 5, day, tzinfo=UTC)
    end = None if until is None else datetime(2024, 5, day + until, tzinfo=UTC).isoformat()
    return MemoryDraft(
        text=f"Ana lives in {obj}." if plain else f"Ana lives in {obj} (day {day}).",
        agent=agent,
        observed_at=at.isoformat(),
        fact=FactDraft("Ana", "lives_in", obj, valid_until=end),
    )


def state(working: WorkingMemory) -> list[tuple[str, tuple[str, ...], str, tuple[str, ...]]]:
    """Every fact as its words, believers, end, and superseders' words."""
    words = {e.id: e.text for e in working.entries}
    return sorted(
        (
            e.text,
            tuple(sorted(e.agents)),
            str(e.valid_until),
            tuple(sorted(map(words.get, e.superseded_by))),
        )  # type: ignore[arg-type]
        for e in working.entries
    )


def holding(working: WorkingMemory) -> dict[str, list[str]]:
    """Per agent, the places it holds Ana lives in now."""
    out: dict[str, list[str]] = {}
    for row, e in enumerate(working.entries):
        if working.is_current(row, micros(NOW)):
            for agent in e.agents:
                out.setdefault(agent, []).append(e.object or "")
    return {agent: sorted(set(places)) for agent, places in out.items()}


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_plans_as_the_same_memories_one_by_one_and_an_agent_holds_one_place(
    seed: int,
) -> None:
    # Random tellings by three agents, some the same words (a shared belief), some ending:
    # one write of them all leaves what the same calls one after another leave, and each
    # agent holds one place (the one it told last begins last), as a fact of its own would.
    rng = random.Random(seed)
    for _ in range(150):
        plain = rng.random() < 0.5
        drafts = [
            told(
                rng.choice("abc"),
                rng.choice("XYZ"),
                rng.randint(1, 4),
                rng.choice([None, 2]),
                plain,
            )
            for _ in range(rng.randint(2, 7))
        ]
        one_by_one, together = WorkingMemory(dim=8), WorkingMemory(dim=8)
        for d in drafts:
            remember(one_by_one, d)
        remember(together, *drafts)
        assert state(together) == state(one_by_one), drafts
        held = holding(together)
        assert all(len(places) == 1 for places in held.values()), (drafts, held)
        if not plain and all(d.fact is not None and d.fact.valid_until is None for d in drafts):
            last = {d.agent: d for d in sorted(drafts, key=lambda d: d.observed_at)}
            assert held == {a: [d.fact.object] for a, d in last.items() if d.fact}, drafts
        # Nothing for a start to mend (``overlapping``), before and after a forget.
        assert planning.overlapping(together) == [], drafts
        alone = [e.id for e in together.entries if len(e.agents) == 1 and not e.retracted]
        if alone:
            forget(together, rng.choice(alone))
            assert planning.overlapping(together) == [], drafts


def test_sharing_a_fact_withdraws_the_agents_belief_in_an_older_one_others_hold(
    working: WorkingMemory,
) -> None:
    paris = remember(working, told("bob", "Paris", 1), told("carol", "Paris", 1))[0]
    berlin = only_plan(remember(working, told("alice", "Berlin", 3)))
    [shared] = remember(working, told("bob", "Berlin", 3))
    assert isinstance(paris, Plan) and isinstance(shared, Shared)
    assert shared.observation_id == berlin.observation_id
    assert shared.superseded == [] and shared.conflicts == [paris.observation_id]
    # Paris held for bob until his Berlin began.
    assert shared.withdraws == [(paris.observation_id, ANY, berlin.valid_from)]
    assert holding(working) == {"alice": ["Berlin"], "bob": ["Berlin"], "carol": ["Paris"]}


def test_a_fact_the_agents_own_later_fact_ends_is_its_own_observation_not_a_share(
    working: WorkingMemory,
) -> None:
    tokyo = only_plan(remember(working, told("bob", "Tokyo", 4)))
    berlin = only_plan(remember(working, told("alice", "Berlin", 2)))
    own = only_plan(remember(working, told("bob", "Berlin", 2)))
    assert own.observation_id != berlin.observation_id
    assert own.superseded_by == [(tokyo.observation_id, datetime(2024, 5, 4, tzinfo=UTC))]
    row = working.row_of[berlin.observation_id]
    assert working.entries[row].valid_until is None  # alice's Berlin is not ended
    assert holding(working) == {"alice": ["Berlin"], "bob": ["Tokyo"]}


def test_in_a_batch_an_agent_does_not_take_on_a_fact_the_batch_ended(
    working: WorkingMemory,
) -> None:
    berlin, rome, bobs = remember(
        working, told("alice", "Berlin", 1), told("alice", "Rome", 2), told("bob", "Berlin", 1)
    )
    assert isinstance(bobs, Plan) and isinstance(berlin, Plan) and isinstance(rome, Plan)
    assert holding(working) == {"alice": ["Rome"], "bob": ["Berlin"]}


def test_a_retried_fact_that_ended_before_it_was_told_is_a_repeat(working: WorkingMemory) -> None:
    # "Ana lived in Rome until April": it ended before it was told, and a retried call
    # of it is a repeat still, not a second observation.
    draft = MemoryDraft(
        text="Ana lived in Rome until April.",
        fact=FactDraft("Ana", "lives_in", "Rome", valid_until="2024-04-01T00:00:00Z"),
    )
    first = only_plan(remember(working, draft))
    [again] = remember(working, draft)
    assert again == Duplicate(first.observation_id, first.belief_id, [])


def test_the_same_fact_told_as_beginning_earlier_is_no_repeat(working: WorkingMemory) -> None:
    # Oslo from the 3rd until the 5th, then Oslo from the 1st with no end: a broader claim,
    # not a repeat of the one that had not begun (it was lost after the 5th).
    june = only_plan(remember(working, told("b", "Oslo", 3, until=2, plain=True)))
    broader = only_plan(remember(working, told("b", "Oslo", 1, plain=True)))
    assert broader.observation_id != june.observation_id
    assert holding(working) == {"b": ["Oslo"]}


def test_a_multi_valued_fact_is_shared_whatever_else_the_agent_holds(
    working: WorkingMemory,
) -> None:
    def likes(agent: str, what: str, day: int) -> MemoryDraft:
        at = datetime(2024, 5, day, tzinfo=UTC).isoformat()
        fact = FactDraft("Ana", "likes", what, cardinality="many")
        return MemoryDraft(text=f"Ana likes {what}.", agent=agent, observed_at=at, fact=fact)

    remember(working, likes("b", "jazz", 1))
    chess = only_plan(remember(working, likes("a", "chess", 2)))
    [shared] = remember(working, likes("b", "chess", 3))
    assert isinstance(shared, Shared) and shared.observation_id == chess.observation_id


def test_withdrawing_a_shared_fact_gives_the_agent_its_own_older_one_again(
    working: WorkingMemory,
) -> None:
    remember(working, told("bob", "Athens", 1))
    bonn = only_plan(remember(working, told("alice", "Bonn", 3)))
    remember(working, told("bob", "Bonn", 3))  # bob shares it: his Athens ends on day 3
    assert holding(working) == {"alice": ["Bonn"], "bob": ["Bonn"]}
    withdraw(working, bonn.observation_id, "bob")
    assert holding(working) == {"alice": ["Bonn"], "bob": ["Athens"]}
    [athens] = [e for e in working.entries if e.object == "Athens"]
    assert athens.valid_until is None and athens.superseded_by == ()
    assert planning.overlapping(working) == []


def test_withdrawing_leaves_ended_what_the_remaining_believers_held(
    working: WorkingMemory,
) -> None:
    # Both hold Bonn, then both say they lived in Athens before (each its own Athens, ended
    # by Bonn): bob's forget of Bonn gives him his Athens back, and alice's stays ended.
    remember(working, told("alice", "Bonn", 3), told("bob", "Bonn", 3))
    remember(working, told("bob", "Athens", 1), told("alice", "Athens", 1))
    [bonn] = [e for e in working.entries if e.object == "Bonn"]
    withdraw(working, bonn.id, "bob")
    assert holding(working) == {"alice": ["Bonn"], "bob": ["Athens"]}
    ends = {e.agents: e.valid_until for e in working.entries if e.object == "Athens"}
    assert ends == {("bob",): None, ("alice",): datetime(2024, 5, 3, tzinfo=UTC)}
    assert planning.overlapping(working) == []


def test_a_fact_that_never_holds_ends_nothing(working: WorkingMemory) -> None:
    # "Carol was busy until 1 May", told on the 6th (its start unknown, taken as the 6th):
    # it ended Carol's current "free", or, shared, was mended by the next start.
    def status(agent: str, obj: str, day: int, until: int | None = None) -> MemoryDraft:
        end = None if until is None else datetime(2024, 5, until, tzinfo=UTC).isoformat()
        return MemoryDraft(
            text=f"Carol is {obj}.",
            agent=agent,
            observed_at=datetime(2024, 5, day, tzinfo=UTC).isoformat(),
            fact=FactDraft("Carol", "status", obj, valid_until=end),
        )

    remember(working, status("a", "free", 2), status("b", "free", 2))
    [busy] = remember(working, status("b", "busy", 6, until=1))
    assert isinstance(busy, Plan)
    assert (busy.superseded, busy.withdraws, busy.conflicts) == ([], [], [])
    assert holding(working) == {"a": ["free"], "b": ["free"]}
    assert planning.overlapping(working) == []
