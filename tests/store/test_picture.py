"""``Memory.picture``: every entity, every fact with both clocks and its supersession, the
entities mentioned together, the latest notes, and the conflicts, with the bounds counted."""

from __future__ import annotations

import pytest
from calls import LATER

from doxa.store import Memory, MemoryDraft
from doxa.store import picture as pictures
from doxa.store.drafts import FactDraft


def test_picture_holds_entities_facts_with_their_times_and_both_kinds_of_conflict(
    memory: Memory,
) -> None:
    first = memory.remember(
        [
            MemoryDraft(
                text="Alice lives in Berlin.",
                agent="scout",
                observed_at="2026-01-05T10:00:00Z",
                fact=FactDraft("Alice", "lives in", "Berlin"),
            ),
            MemoryDraft(text="Acme is in Berlin.", fact=FactDraft("Acme", "based in", "Berlin")),
            MemoryDraft(text="Lunch with Alice at Acme.", topics=["Alice", "Acme"]),
        ],
        batch=True,
    )
    moved = memory.remember(
        [
            MemoryDraft(
                text="Alice moved to Hamburg in March.",
                agent="scout",
                observed_at="2026-03-10T10:00:00Z",
                fact=FactDraft("Alice", "lives in", "Hamburg"),
            )
        ]
    )[0]
    memory.remember(
        [
            MemoryDraft(
                text="Alice lives in Munich.",
                agent="critic",
                fact=FactDraft("Alice", "lives in", "Munich"),
            )
        ]
    )
    memory.remember(
        [MemoryDraft(text="Acme is not in Berlin.", contradicts=[first[1].observation_id])]
    )
    taken = memory.picture()

    assert taken.observations == 6
    assert [(e.name, e.observations, e.facts) for e in taken.entities[:2]] == [
        ("Alice", 4, 2),
        ("Acme", 2, 1),
    ]
    assert {e.name for e in taken.entities} == {"Alice", "Acme", "Berlin", "Hamburg", "Munich"}
    berlin = next(f for f in taken.facts if f.object == "Berlin" and f.subject == "Alice")
    assert berlin.predicate == "lives_in" and berlin.subject_key == "alice"
    assert berlin.superseded_by == (moved.observation_id,) and not berlin.current
    assert berlin.start.isoformat() == "2026-01-05T10:00:00+00:00"
    # "Alice moved to Hamburg in March": Hamburg holds from 1 March, as its words place it.
    assert berlin.end is not None and berlin.end.isoformat() == "2026-03-01T00:00:00+00:00"
    hamburg = next(f for f in taken.facts if f.object == "Hamburg")
    assert hamburg.current and hamburg.agents == ("scout",) and hamburg.events == ("2026-03",)
    assert ("acme", "alice", 1) in taken.mentioned_together
    assert [(n.text, n.about) for n in taken.notes] == [
        ("Lunch with Alice at Acme.", ("acme", "alice"))
    ]
    kinds = {c.kind: c for c in taken.conflicts}
    assert kinds["contradiction"].about == ("acme", "berlin")
    assert kinds["clash"].about == ("alice", "hamburg", "munich")
    assert {kinds["clash"].a_text, kinds["clash"].b_text} == {
        "Alice lives in Munich.",
        "Alice moved to Hamburg in March.",
    }
    assert taken.left_out == {"facts": 0, "notes": 0, "conflicts": 0}


def test_picture_counts_what_its_bounds_leave_out(
    memory: Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pictures, "MAX_FACTS", 2)
    monkeypatch.setattr(pictures, "NOTES_PER_ENTITY", 1)
    memory.remember(
        [MemoryDraft(text=f"Ferry note {i}.", topics=["Ferry"]) for i in range(3)]
        + [
            MemoryDraft(text=f"Ferry {i} docks.", fact=FactDraft(f"Ferry {i}", "docks at", "Pier"))
            for i in range(3)
        ],
        batch=True,
    )
    taken = memory.picture()
    assert [f.subject for f in taken.facts] == ["Ferry 1", "Ferry 2"]  # the latest kept
    assert [n.text for n in taken.notes] == ["Ferry note 2."]
    assert taken.left_out == {"facts": 1, "notes": 2, "conflicts": 0}


def test_a_supersession_shows_when_it_was_recorded_and_a_later_fact_is_no_old_one(
    memory: Memory,
) -> None:
    # The page showed a supersession at its older fact's record time (before the newer fact
    # was known), and struck through a fact that only begins later, as if replaced.
    def told(text: str, obj: str, agent: str, **fact: str) -> None:
        memory.remember(
            [MemoryDraft(text=text, agent=agent, fact=FactDraft("Ana", "lives in", obj, **fact))]
        )

    told("Ana lives in Athens.", "Athens", "bob", valid_from="2024-01-01T00:00:00Z")
    told("Ana lives in Bonn.", "Bonn", "alice", valid_from="2024-03-01T00:00:00Z")
    told("Ana lives in Bonn.", "Bonn", "bob", valid_from="2024-03-01T00:00:00Z")  # shared later
    told("Ana will live in Cork.", "Cork", "alice", valid_from="2999-01-01T00:00:00Z")
    facts = {f.object: f for f in memory.picture().facts}
    athens, bonn, cork = facts["Athens"], facts["Bonn"], facts["Cork"]
    assert athens.superseded_by == (bonn.id,)
    assert athens.superseded_known is not None and athens.superseded_known > bonn.recorded_at
    assert bonn.superseded_known is None  # bob does not hold Cork: a clash, not its end
    assert (cork.current, cork.later) == (False, True)
    assert (athens.later, bonn.later, bonn.current) == (False, False, True)
    assert athens.ended_by == bonn.id and bonn.ended_by is None


def test_a_plan_replaced_before_it_began_never_held_and_ended_nothing(memory: Memory) -> None:
    # Oslo from a later year, replaced by Tokyo from that year before it began, was shown as
    # upcoming (in italics), as started, and as what ended Rome.
    for city, start in (("Rome", 2020), ("Oslo", LATER), ("Tokyo", LATER)):
        memory.remember(
            [
                MemoryDraft(
                    text=f"Alice lives in {city} from {start}.",
                    fact=FactDraft("Alice", "lives in", city, valid_from=f"{start}-01-01"),
                )
            ]
        )
    facts = {f.object: f for f in memory.picture().facts}
    rome, oslo, tokyo = facts["Rome"], facts["Oslo"], facts["Tokyo"]
    assert (oslo.held, oslo.later, oslo.ended_by) == (False, False, tokyo.id)
    assert (tokyo.held, tokyo.later) == (True, True)
    assert rome.ended_by == tokyo.id
    assert rome.superseded_known is not None and rome.superseded_known >= tokyo.recorded_at


def test_a_facts_topics_are_mentioned_together_with_its_two_ends_both_ways(
    memory: Memory,
) -> None:
    # about Delta named zeta as mentioned with it, about zeta named nobody, and the page drew
    # no line between them: only topics of one observation were paired.
    [told] = memory.remember(
        [
            MemoryDraft(
                text="Delta likes epsilon.",
                topics=["zeta"],
                fact=FactDraft("Delta", "likes", "Epsilon"),
            )
        ]
    )

    def related(name: str) -> dict[str, list[str]]:
        return {r["name"]: r["via"] for r in memory.about(name).get("related", [])}

    assert related("zeta") == {
        "Delta": ["zeta mentioned with Delta"],
        "Epsilon": ["zeta mentioned with Epsilon"],
    }
    assert related("Delta")["zeta"] == ["Delta mentioned with zeta"]
    pairs = memory.picture().mentioned_together
    assert ("delta", "zeta", 1) in pairs and ("epsilon", "zeta", 1) in pairs
    memory.forget(told.observation_id)
    assert memory.picture().mentioned_together == ()
    # A fact that has ended is still a mention the memory holds: about relates it as the
    # page draws it (about counted current facts' only, the page every live one).
    memory.remember(
        [
            MemoryDraft(
                text="Gamma liked theta in 2020.",
                topics=["iota"],
                fact=FactDraft("Gamma", "liked", "Theta", "2020-01-01", "2021-01-01"),
            )
        ]
    )
    assert set(related("iota")) == {"Gamma", "Theta"}
    assert ("gamma", "iota", 1) in memory.picture().mentioned_together
