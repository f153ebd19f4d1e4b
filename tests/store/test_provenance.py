"""Conflicts: clashes found in the working memory alone (current facts sharing a subject and
predicate, objects differing), the same as the graph's current facts give, and described
with texts, confidences and topics."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from doxa.store import Memory, planning, provenance, remembering
from doxa.store.drafts import FactDraft, MemoryDraft, validate
from doxa.store.planning import Plan
from doxa.store.working_memory import WorkingMemory, topic_key

NOW = datetime(2024, 6, 1, tzinfo=UTC)


def fact(agent: str, subject: str, obj: str, day: int = 1, **more: Any) -> MemoryDraft:
    return MemoryDraft(
        text=f"{agent}: {subject} is {obj} (day {day}).",
        agent=agent,
        observed_at=datetime(2024, 5, day, tzinfo=UTC).isoformat(),
        fact=FactDraft(subject, "status", obj),
        **more,
    )


def remember(working: WorkingMemory, *drafts: MemoryDraft) -> list[str]:
    """Plan and apply, as ``Memory.remember`` does after the graph commits; the new ids."""
    planned = planning.plan([validate(d, "x") for d in drafts], working, NOW)
    plans = [p for p in planned if isinstance(p, Plan)]
    write = remembering.prepare(plans, working, NOW)
    remembering.apply(working, write, remembering.entries(write))
    return [p.observation_id for p in plans]


def pairs(found: list[dict[str, Any]]) -> set[frozenset[str]]:
    return {frozenset((c["a"], c["b"])) for c in found}


def test_current_facts_of_two_agents_with_different_objects_clash() -> None:
    working = WorkingMemory(dim=8)
    closed, opened, same = remember(
        working,
        fact("scout", "bridge", "closed"),
        fact("driver", "Bridge", "open"),
        fact("medic", "bridge ", "Closed"),
    )
    found = provenance.clashes(working, None, None, NOW)
    assert pairs(found) == {frozenset((closed, opened)), frozenset((opened, same))}
    first = next(c for c in found if {c["a"], c["b"]} == {closed, opened})
    assert first["kind"] == "clash" and first["predicate"] == "status"
    assert {*first["a_agents"], *first["b_agents"]} == {"scout", "driver"}


def test_agent_filters_keep_the_clashes_of_one_agent_or_between_two() -> None:
    working = WorkingMemory(dim=8)
    scout, driver, medic = remember(
        working,
        fact("scout", "bridge", "closed"),
        fact("driver", "bridge", "open"),
        fact("medic", "bridge", "flooded"),
    )
    assert pairs(provenance.clashes(working, "medic", None, NOW)) == {
        frozenset((scout, medic)),
        frozenset((driver, medic)),
    }
    assert pairs(provenance.clashes(working, "scout", "driver", NOW)) == {
        frozenset((scout, driver))
    }


def test_superseded_and_retracted_facts_do_not_clash_and_one_to_come_says_where_it_begins() -> None:
    working = WorkingMemory(dim=8)
    old, _ = remember(
        working, fact("scout", "bridge", "closed", 1), fact("scout", "bridge", "open", 2)
    )
    [gone] = remember(working, fact("driver", "bridge", "flooded", 3))
    working.retract(working.row_of[gone], NOW)
    remember(working, fact("medic", "bridge", "closed", 4))
    later = datetime(2024, 5, 4, tzinfo=UTC)
    found = provenance.clashes(working, None, None, later)
    assert all(old not in (c["a"], c["b"]) for c in found)  # superseded by its own agent
    assert all(gone not in (c["a"], c["b"]) for c in found)
    assert len(found) == 1  # open (scout) against closed (medic)
    # Before medic's fact begins, the clash is one to come, listed with where it begins.
    [coming] = provenance.clashes(working, None, None, datetime(2024, 5, 3, tzinfo=UTC))
    assert {coming["a"], coming["b"]} == {found[0]["a"], found[0]["b"]}
    assert found[0]["begins"] is None and coming["begins"] == later.replace(day=4, hour=0)


def test_described_conflicts_carry_texts_and_keep_those_on_the_topic() -> None:
    working = WorkingMemory(dim=8)
    remember(
        working,
        fact("scout", "bridge", "closed", topics=["route-9"]),
        fact("driver", "bridge", "open"),
        fact("scout", "ferry", "late"),
        fact("driver", "ferry", "on time"),
    )
    found = provenance.clashes(working, None, None, NOW)
    assert len(found) == 2
    on_topic = provenance.on_topic(found, working, "Route-9")
    [on_route] = provenance.described(on_topic, working, NOW, None)
    assert {on_route["a_text"], on_route["b_text"]} == {
        "scout: bridge is closed (day 1).",
        "driver: bridge is open (day 1).",
    }
    assert on_route["a_confidence"] == on_route["b_confidence"] == 1


def test_clashes_from_the_working_memory_equal_those_of_the_graphs_current_facts(
    memory: Memory,
) -> None:
    drafts = [fact(a, f"gate {s}", o, d) for s in range(6) for a, o, d in _story(s)]
    for draft in drafts:
        memory.remember([draft])
    [retracted] = memory.remember([fact("medic", "gate 5", "rusted", 9)])
    memory.forget(retracted.observation_id)
    now = datetime.now(UTC)
    from_graph = _graph_clashes(memory.graph.current_facts(now))
    with memory._working_lock.reading():
        from_working = provenance.clashes(memory._wm, None, None, now)
    assert pairs(from_working) == pairs(from_graph)
    assert len(from_working) == len(from_graph) > 3


def _story(s: int) -> list[tuple[str, str, int]]:
    """Who said what about gate ``s``, on which day: agreements, clashes, supersessions."""
    return [
        ("scout", "open", 1),
        ("driver", "open" if s % 2 else "closed", 2),
        ("scout", "closed", 3) if s % 3 == 0 else ("medic", "open", 3),
    ]


def _graph_clashes(facts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Clashes the way they were found before: grouping the graph's current facts."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for f in facts:
        groups.setdefault((topic_key(f["subject"]), topic_key(f["predicate"])), []).append(f)
    return [
        {"a": x["observation_id"], "b": y["observation_id"]}
        for group in groups.values()
        for i, x in enumerate(group)
        for y in group[i + 1 :]
        if topic_key(x["object"]) != topic_key(y["object"])
    ]
