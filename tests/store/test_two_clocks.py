"""Two clocks on a real memory: ``as_of`` (valid time: what was true then, as known now) and
``known_at`` (record time: what the memory held then), for recall, conflicts and citations,
before and after a restart."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from doxa.server.settings import Settings
from doxa.store import FactDraft, InvalidInput, Memory, MemoryDraft
from doxa.store.values import utc_now


def fact(memory: Memory, text: str, obj: str, since: str, agent: str = "scout", **more: Any) -> str:
    [done] = memory.remember(
        [
            MemoryDraft(
                text=text,
                agent=agent,
                observed_at=since,
                fact=FactDraft("Alice", "lives in", obj, valid_from=since),
                **more,
            )
        ]
    )
    return done.observation_id


def moment() -> datetime:
    """A record time strictly between the writes before and after it."""
    time.sleep(0.01)
    now = utc_now()
    time.sleep(0.01)
    return now


def lives(memory: Memory, **when: Any) -> dict[str, bool]:
    """Text -> current, of the facts about where Alice lives a recall returns."""
    found = memory.recall("Alice lives", include_superseded=True, **when)
    return {r.text: r.current for r in found.results}


def reopen(memory: Memory, settings: Settings) -> Memory:
    memory.close()
    opened = Memory.open(settings.store)
    opened.warm_up()
    return opened


def test_a_fact_learned_late_never_rewrites_what_was_believed_before(
    settings: Settings, memory: Memory
) -> None:
    berlin = fact(memory, "Alice moved to Berlin.", "Berlin", "2024-03-01T00:00:00Z")
    t = moment()
    lisbon = fact(
        memory, "Alice has lived in Lisbon since September.", "Lisbon", "2024-09-01T00:00:00Z"
    )
    for _ in range(2):  # and again after a restart
        # True then, as known now: Lisbon.
        assert lives(memory, as_of=t) == {
            "Alice has lived in Lisbon since September.": True,
            "Alice moved to Berlin.": False,
        }
        # What the memory held then: Berlin, with no end.
        assert lives(memory, known_at=t) == {"Alice moved to Berlin.": True}
        assert lives(memory, as_of=t, known_at=t) == {"Alice moved to Berlin.": True}
        assert lives(memory, as_of="2024-10-01T00:00:00Z", known_at=t) == {
            "Alice moved to Berlin.": True
        }
        [then] = memory.recall("Alice lives", known_at=t).results
        assert then.fact is not None and then.fact["valid_until"] is None
        assert then.superseded_by == []
        cited = memory.evidence(berlin, known_at=t)
        assert cited["valid_until"] is None and cited["superseded_by"] == []
        now = memory.evidence(berlin)
        assert now["superseded_by"] == [lisbon]
        [by] = now["supersessions"]
        assert by["observation_id"] == lisbon and by["recorded_at"] > t.replace(tzinfo=None)
        with pytest.raises(InvalidInput) as caught:
            memory.evidence(lisbon, known_at=t)
        assert caught.value.field == "known_at"
        memory = reopen(memory, settings)
    memory.close()


def test_a_retraction_and_a_supersession_exist_from_their_record_time(
    settings: Settings, memory: Memory
) -> None:
    paris = fact(memory, "Alice lives in Paris.", "Paris", "2024-01-01T00:00:00Z")
    before = moment()
    berlin = fact(memory, "Alice lives in Berlin.", "Berlin", "2024-03-01T00:00:00Z")
    superseded = moment()
    memory.forget(berlin)
    retracted = moment()
    for _ in range(2):
        assert lives(memory, known_at=before) == {"Alice lives in Paris.": True}
        assert lives(memory, known_at=superseded) == {
            "Alice lives in Berlin.": True,
            "Alice lives in Paris.": False,
        }
        assert lives(memory, known_at=retracted) == {"Alice lives in Paris.": True}
        assert lives(memory) == {"Alice lives in Paris.": True}
        [old] = [
            r
            for r in memory.recall(
                "Alice lives", known_at=superseded, include_superseded=True
            ).results
            if r.observation_id == paris
        ]
        assert old.superseded_by == [berlin]
        then = memory.evidence(paris, known_at=superseded)
        assert then["superseded_by"] == [berlin]
        assert then["valid_until"] == datetime(2024, 3, 1)
        assert memory.evidence(berlin, known_at=superseded)["retracted_at"] is None
        assert memory.evidence(berlin)["retracted_at"] is not None
        after = memory.evidence(paris, known_at=retracted)
        assert after["superseded_by"] == [] and after["valid_until"] is None
        memory = reopen(memory, settings)
    memory.close()


def test_conflicts_as_the_memory_held_them(memory: Memory) -> None:
    fact(memory, "Alice lives in Paris.", "Paris", "2024-01-01T00:00:00Z", agent="scout")
    before = moment()
    fact(memory, "Alice lives in Rome.", "Rome", "2024-02-01T00:00:00Z", agent="driver")
    [opened] = memory.remember([MemoryDraft(text="The bridge is open.", agent="driver")])
    [closed] = memory.remember(
        [
            MemoryDraft(
                text="The bridge is closed.", agent="scout", contradicts=[opened.observation_id]
            )
        ]
    )
    both = moment()
    memory.forget(closed.observation_id)
    assert [c["kind"] for c in memory.conflicts(known_at=before)["conflicts"]] == []
    assert sorted(c["kind"] for c in memory.conflicts(known_at=both)["conflicts"]) == [
        "clash",
        "contradiction",
    ]
    assert [c["kind"] for c in memory.conflicts()["conflicts"]] == ["clash"]
    with pytest.raises(InvalidInput) as caught:
        memory.conflicts(known_at="last Tuesday")
    assert caught.value.field == "known_at"


def test_a_belief_counts_from_when_it_was_taken_until_it_was_withdrawn(memory: Memory) -> None:
    [first] = memory.remember([MemoryDraft(text="Gulls nest on the pier.", agent="scout")])
    alone = moment()
    memory.remember([MemoryDraft(text="Gulls nest on the pier.", agent="driver")])
    shared = moment()
    memory.forget(first.observation_id, agent="driver")
    for when, agents in ((alone, ["scout"]), (shared, ["scout", "driver"]), (None, ["scout"])):
        [found] = memory.recall("gulls", known_at=when).results
        assert found.agents == agents
        driver = memory.recall("gulls", agent="driver", known_at=when).results
        assert len(driver) == ("driver" in agents)
        cited = memory.evidence(first.observation_id, known_at=when)
        assert [b["agent"] for b in cited["believers"]] == agents
    with pytest.raises(InvalidInput) as caught:
        memory.recall("gulls", known_at="not a time")
    assert caught.value.field == "known_at"


def test_an_agent_withdrawing_a_shared_fact_holds_its_own_older_one_again(
    settings: Settings, memory: Memory
) -> None:
    # Bob lived in Athens, then came to share Alice's Bonn, which ended his Athens; he takes
    # Bonn back. Athens is his again, from then on; Alice keeps Bonn, so they clash again.
    athens = fact(memory, "Alice lives in Athens.", "Athens", "2024-01-01T00:00:00Z", agent="bob")
    bonn = fact(memory, "Alice lives in Bonn.", "Bonn", "2024-03-01T00:00:00Z", agent="alice")
    fact(memory, "Alice lives in Bonn.", "Bonn", "2024-03-01T00:00:00Z", agent="bob")
    shared = moment()
    memory.forget(bonn, agent="bob")
    withdrawn = moment()
    ended = {"Alice lives in Athens.": False, "Alice lives in Bonn.": True}
    for _ in range(2):
        assert lives(memory, agent="bob") == {"Alice lives in Athens.": True}
        assert lives(memory, agent="alice") == {"Alice lives in Bonn.": True}
        assert lives(memory, agent="bob", known_at=shared) == ended
        assert lives(memory, agent="bob", known_at=withdrawn) == {"Alice lives in Athens.": True}
        then = memory.evidence(athens, known_at=shared)
        assert then["superseded_by"] == [bonn] and then["valid_until"] == datetime(2024, 3, 1)
        now = memory.evidence(athens)
        assert now["superseded_by"] == [] and now["valid_until"] is None
        assert now["supersessions"] == []
        assert [c["observation_id"] for c in now["supersession_chain"]] == [bonn]
        assert [c["kind"] for c in memory.conflicts(known_at=shared)["conflicts"]] == []
        [clash] = memory.conflicts()["conflicts"]
        assert {clash["a"], clash["b"]} == {athens, bonn}
        events = [(e["event"], e["id"]) for e in memory.about("Alice")["timeline"]]
        assert ("superseded", athens) not in events
        memory = reopen(memory, settings)
    memory.close()


def test_entities_are_related_by_a_mention_only_while_the_memory_holds_it(
    settings: Settings, memory: Memory
) -> None:
    # about's "mentioned with" counted every mention ever loaded: a link named an entity
    # about then refused at that known_at, and a forgotten mention linked on for good.
    def related(memory: Memory, **when: Any) -> set[str]:
        return {r["name"] for r in memory.about("Zed", **when).get("related", [])}

    def mention(text: str, *topics: str) -> str:
        [done] = memory.remember([MemoryDraft(text=text, topics=["Zed", *topics])])
        return done.observation_id

    mention("Zed is tall.")
    before = moment()
    met = mention("Zed met Yara at the conference.", "Yara")
    office = mention("Zed and Xia share an office.", "Xia")
    both = moment()
    assert related(memory, known_at=before) == set()
    memory.forget(met)
    assert related(memory) == {"Xia"}
    assert related(memory, known_at=both) == {"Xia", "Yara"}
    memory = reopen(memory, settings)  # a retracted mention loaded links nothing either
    try:
        assert related(memory) == {"Xia"}
        assert related(memory, known_at=both) == {"Xia", "Yara"}
        memory.forget(office, mode="purge")
        assert related(memory) == set()
        assert related(memory, known_at=both) == {"Yara"}
    finally:
        memory.close()
