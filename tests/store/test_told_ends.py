"""A fact the agent holds, told again with only an end: that fact's end ("Sam quit Acme")."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path

import pytest
from calls import LATER
from conftest import hash_settings

from doxa.server.settings import Settings
from doxa.store import FactDraft, Memory, MemoryDraft
from doxa.store.exporting import ImportRefused
from doxa.store.importing import import_file
from doxa.store.values import iso, utc_now
from tests.store.test_facts import open_memory

OCT = "2026-10-05T09:00:00Z"
NOV = "2026-11-10T00:00:00Z"
DEC = "2026-12-03T09:00:00Z"


def tell(
    memory: Memory,
    text: str,
    obj: str = "Acme",
    when: str = OCT,
    agent: str = "scout",
    predicate: str = "works at",
    **times: str,
) -> tuple[str, list[str]]:
    """Remember Sam's fact; its observation id and what it superseded."""
    [done] = memory.remember(
        [
            MemoryDraft(
                text=text,
                agent=agent,
                observed_at=when,
                fact=FactDraft("Sam", predicate, obj, **times),
            )
        ]
    )
    return done.observation_id, list(done.superseded)


def current(memory: Memory, **asked: str) -> list[str]:
    found = memory.recall("", subject="Sam", **asked).results  # type: ignore[arg-type]
    return sorted(r.text for r in found if r.current)


#: Each agent's one fact of Sam (agent, as_of, text) when scout's Munich plan, shared with
#: driver, holds for scout until scout's Hamburg from March 2030.
MUNICH_UNTIL_HAMBURG = (
    ("scout", "2029-06-01", "Sam lives in Berlin."),
    ("scout", "2030-02-01", "Sam moves to Munich."),
    ("scout", "2030-06-01", "Sam moves to Hamburg."),
    ("driver", "2030-02-01", "Sam moves to Munich."),
    ("driver", "2030-06-01", "Sam moves to Munich."),
)


def holds_across_restart(
    memory: Memory, settings: Settings, *expected: tuple[str, str, str]
) -> Memory:
    """Assert each (agent, as_of, fact text) is the agent's one current fact of Sam then, in
    ``memory`` and again after a restart; returns the reopened memory (the caller closes it)."""
    for restarted in (False, True):
        if restarted:
            memory.close()
            memory = open_memory(settings)
        for agent, when, fact in expected:
            assert current(memory, agent=agent, as_of=when) == [fact], (agent, when, restarted)
    return memory


def test_an_end_told_later_ends_the_fact_the_agent_holds_and_keeps_its_past(
    settings: Settings, memory: Memory
) -> None:
    """Sam worked at Acme from October (owns is many-valued: only an end ends it); told in
    December that he quit on 10 November, the job holds until then and no longer, as known
    now; what the memory held before the end was told is unchanged; after a restart too."""
    works, _ = tell(memory, "Sam works at Acme.")
    told_at = memory.evidence(works)["recorded_at"]
    owns, _ = tell(memory, "Sam owns a VW Golf.", "VW Golf", predicate="owns")
    quit, ended = tell(memory, "Sam quit his job at Acme.", when=DEC, valid_until=NOV)
    sold, ended_car = tell(
        memory, "Sam sold his VW Golf.", "VW Golf", when=DEC, predicate="owns", valid_until=NOV
    )
    assert (ended, ended_car) == ([works], [owns])
    for opened in (memory, None):
        if opened is None:
            memory.close()
            opened = open_memory(settings)
        try:
            assert current(opened) == []
            assert current(opened, as_of="2026-10-20") == [
                "Sam quit his job at Acme.",
                "Sam sold his VW Golf.",
            ]
            # Before the end was told, the memory held the job as told: open.
            assert current(opened, known_at=told_at, as_of="2026-11-20") == ["Sam works at Acme."]
            about = opened.about("Sam")
            assert about["facts"] == {}
            events = [(e["event"], e["fact"]) for e in about["timeline"]]
            assert ("ended", "Sam works at Acme") in events
            cited = opened.evidence(works)
            assert cited["superseded_by"] == [quit]
        finally:
            if opened is not memory:
                opened.close()
    assert sold


def test_an_end_told_again_is_a_repeat_and_the_same_words_end_the_fact_too(
    memory: Memory,
) -> None:
    """The agent's own words again, now with an end, end the fact (they were taken for a
    repeat, and the end was lost); the same call retried is a repeat of the ending."""
    works, _ = tell(memory, "Sam works at Acme.")
    again, ended = tell(memory, "Sam works at Acme.", when=DEC, valid_until=NOV)
    assert again != works and ended == [works]
    retried, _ = tell(memory, "Sam works at Acme.", when=DEC, valid_until=NOV)
    assert retried == again
    assert current(memory) == [] and current(memory, as_of="2026-11-01") == ["Sam works at Acme."]


def test_an_end_ends_only_what_holds_past_it_and_for_others_only_the_agents_belief(
    memory: Memory,
) -> None:
    """A fact another agent holds too stays theirs (scout's belief withdrawn, the two
    disagreeing; nothing changed, and scout's recall still had Sam at Acme); one that ended
    before the end told and another value are left as they were (one that begins after it
    is a plan, cancelled); a forget of the ending gives the fact back."""
    tell(memory, "Sam works at Acme.", agent="driver")
    shared, _ = tell(memory, "Sam works at Acme.")  # shared by scout
    [left] = memory.remember(
        [
            MemoryDraft(
                text="Sam left Acme.",
                agent="scout",
                observed_at=DEC,
                fact=FactDraft("Sam", "works at", "Acme", valid_until=NOV),
            )
        ]
    )
    assert left.superseded == [] and left.conflicts == [shared]
    assert current(memory) == ["Sam works at Acme."]
    assert current(memory, agent="scout") == []
    assert current(memory, agent="driver") == ["Sam works at Acme."]
    back_then = memory.recall("", subject="Sam", agent="scout", as_of="2026-10-20").results
    assert [(r.text, r.current) for r in back_then] == [("Sam left Acme.", True)]
    short, _ = tell(memory, "Sam ran Globex.", "Globex", valid_until="2026-10-20T00:00:00Z")
    later, _ = tell(memory, "Sam will run Initech.", "Initech", valid_from="2027-01-01")
    _, ended = tell(memory, "Sam stopped at Globex.", "Globex", when=DEC, valid_until=NOV)
    assert ended == []
    # One that begins after the end told is a plan: cancelled (see test_a_plan_cancelled…).
    _, ended = tell(memory, "Sam left Initech.", "Initech", when=DEC, valid_until=NOV)
    assert ended == [later]
    mine, _ = tell(memory, "Sam works at Umbrella.", "Umbrella")
    quit, ended = tell(memory, "Sam quit Umbrella.", "Umbrella", when=DEC, valid_until=NOV)
    assert ended == [mine]
    memory.forget(quit, agent="scout")
    assert "Sam works at Umbrella." in current(memory)
    assert shared and short and later


def test_an_end_leaves_a_fact_another_agent_held_until_a_later_fact_of_its_own(
    memory: Memory,
) -> None:
    """x and y told Acme from January; y's Globex from June withdrew y's belief (y held Acme
    until June). x's end of Acme replaced it from its start, and y's January to June went
    with it; now it is left as it was (x's end a fact of its own)."""
    tell(memory, "Sam works at Acme.", agent="x", when="2026-01-05T00:00:00Z")
    tell(memory, "Sam works at Acme.", agent="y", when="2026-01-06T00:00:00Z")
    tell(memory, "Sam works at Globex.", "Globex", agent="y", when="2026-06-01T00:00:00Z")
    _, ended = tell(memory, "Sam works at Acme.", agent="x", when=DEC, valid_until=NOV)
    assert ended == []
    found = memory.recall("", subject="Sam", agent="y", as_of="2026-03-01").results
    assert [(r.text, r.current) for r in found] == [("Sam works at Acme.", True)]


def test_a_fact_not_current_stands_where_it_ranks_but_after_its_own_current_fact(
    memory: Memory,
) -> None:
    """Asked of Geneva, the plan ranks above the fact that holds, which is brought up to
    stand first; a note that ranks below the plan stays below both."""
    lyon, _ = tell(memory, "Mia lives in Lyon.", "Lyon", predicate="lives in")
    geneva, _ = tell(
        memory,
        "Mia will move to Geneva, the city of lakes.",
        "Geneva",
        predicate="lives in",
        valid_from=f"{LATER}-01-01",
    )
    [note] = memory.remember([MemoryDraft(text="A note about lunch.", observed_at=OCT)])
    found = memory.recall("Geneva city of lakes", limit=3).results
    assert [r.observation_id for r in found] == [lyon, geneva, note.observation_id]
    assert [r.current for r in found] == [True, False, True]


def test_an_end_of_a_fact_never_held_and_an_end_before_as_of_come_back_not_current(
    memory: Memory,
) -> None:
    """ "Sam sold his VW Golf on 10 November", of a car the memory never heard of, was found
    by no recall but with include_superseded; and asked as of a day after an end, the fact
    that ended was found by none, where a recall of now found it."""
    sold, ended = tell(
        memory, "Sam sold his VW Golf.", "VW Golf", when=DEC, predicate="owns", valid_until=NOV
    )
    assert ended == []
    found = memory.recall("Sam's VW Golf").results
    assert [(r.observation_id, r.current) for r in found] == [(sold, False)]
    # Asked as of a day after the sale and before it was told: the sale is known now.
    then = memory.recall("Sam's VW Golf", as_of="2026-11-20").results
    assert [(r.observation_id, r.current) for r in then] == [(sold, False)]
    assert memory.recall("Sam's VW Golf", as_of="2026-11-01").results == []  # not yet over
    tell(memory, "Sam works at Acme.")
    quit, _ = tell(memory, "Sam quit Acme.", when=DEC, valid_until=NOV)
    asked = memory.recall("Sam Acme job", as_of="2026-11-20").results
    assert (quit, False) in [(r.observation_id, r.current) for r in asked]


def test_an_end_told_of_a_records_fact_leaves_the_record(memory: Memory) -> None:
    """ "Order 17 is no longer on hold" replaced the record's observation from its start:
    ``where`` found order 17 no more."""
    [order] = memory.remember(
        [
            MemoryDraft(
                None,
                agent="scout",
                observed_at=OCT,
                record={"type": "Order", "fields": {"order_id": 17, "item": "standing desk"}},
                fact=FactDraft("order 17", "status", "on hold"),
            )
        ]
    )
    [ended] = memory.remember(
        [
            MemoryDraft(
                "Order 17 is no longer on hold.",
                agent="scout",
                observed_at=DEC,
                fact=FactDraft("order 17", "status", "on hold", valid_until=NOV),
            )
        ]
    )
    assert ended.superseded == []
    found = memory.recall("", where={"order_id": 17}).results
    assert [r.observation_id for r in found] == [order.observation_id]


def test_a_shared_fact_both_agents_end_is_over(memory: Memory) -> None:
    """scout's end withdrew its belief from the fact's start; driver's end then matched
    nothing (scout's withdrawn belief was taken for a history of its own), and the fact
    stayed current for good."""
    tell(memory, "Sam works at Acme.", agent="driver")
    shared, _ = tell(memory, "Sam works at Acme.")
    tell(memory, "Sam left Acme.", when=DEC, valid_until=NOV)
    _, ended = tell(memory, "Sam left Acme for good.", agent="driver", when=DEC, valid_until=NOV)
    assert ended == [shared]
    assert current(memory) == []


def test_an_order_other_than_relevance_puts_current_facts_first_whatever_is_over(
    memory: Memory,
) -> None:
    """Three facts over at their own end ranked above the current one: with a pool of the
    limit and as many again, ordered newest first, the current fact was not among them."""
    for i, year in enumerate((2019, 2020, 2021)):
        memory.remember(
            [
                MemoryDraft(
                    text=f"Sam played guitar in the band Violet Harbor number {i}.",
                    agent="scout",
                    observed_at=OCT,
                    fact=FactDraft(
                        f"Band{i}",
                        "member",
                        "Sam",
                        valid_from=f"{year}-01-01T00:00:00Z",
                        valid_until=f"{year}-06-01T00:00:00Z",
                    ),
                )
            ]
        )
    [now] = memory.remember(
        [
            MemoryDraft(
                text="Sam plays in Violet Harbor now.",
                agent="scout",
                observed_at=OCT,
                fact=FactDraft("Violet Harbor", "member", "Sam"),
            )
        ]
    )
    asked = "Sam played guitar in the band Violet Harbor"
    for order in ("newest", "confidence"):
        [first] = memory.recall(asked, limit=1, order_by=order).results  # type: ignore[arg-type]
        assert (first.observation_id, first.current) == (now.observation_id, True), order


def test_an_end_of_a_fact_never_held_survives_an_export_and_an_import(
    settings: Settings, memory: Memory, tmp_path: Path
) -> None:
    """A fact told with only an end already past ends before it was told: the export of
    such a memory was refused by import (its end before its start), and with it the whole
    memory, and the export into a new directory that leaves no purged bytes."""
    sold, _ = tell(
        memory, "Sam sold his VW Golf.", "VW Golf", when=DEC, predicate="owns", valid_until=NOV
    )
    tell(memory, "Sam likes chess.", "chess", when=DEC, predicate="likes", valid_from=DEC)
    stopped, _ = tell(
        memory, "Sam stopped liking chess.", "chess", when=DEC, predicate="likes", valid_until=NOV
    )
    memory.export(str(tmp_path / "sam.jsonl"))
    into = hash_settings(tmp_path / "copy")
    import_file(into.store, tmp_path / "sam.jsonl")
    copy = Memory.open(into.store)
    try:
        for ids in ([sold], [stopped]):
            assert copy.evidence(ids[0])["valid_until"] == memory.evidence(ids[0])["valid_until"]
        assert current(copy) == current(memory)
    finally:
        copy.close()


def test_an_import_refuses_an_end_before_a_start_given(memory: Memory, tmp_path: Path) -> None:
    """Only the fact remember writes so (its start when it was told) may end before it
    begins: one given a later start is refused, as remember refuses it."""
    sold, _ = tell(
        memory, "Sam sold his VW Golf.", "VW Golf", when=DEC, predicate="owns", valid_until=NOV
    )
    memory.export(str(tmp_path / "sam.jsonl"))
    lines = [json.loads(line) for line in (tmp_path / "sam.jsonl").read_text().splitlines()]
    for line in lines:
        if line.get("id") == sold:
            line["valid_from"] = "2027-01-01T00:00:00Z"
    (tmp_path / "moved.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    with pytest.raises(ImportRefused, match=r"stated_until .* must be later than valid_from"):
        import_file(hash_settings(tmp_path / "copy").store, tmp_path / "moved.jsonl")


def test_a_plan_cancelled_holds_at_no_time_and_comes_back_when_the_end_is_forgotten(
    settings: Settings, memory: Memory, tmp_path: Path
) -> None:
    """Sam's move to Rome from January, told in October, called off in December (an end
    told before the move begins): it held at no time, after a restart and an export and
    import too, while at a known_at before the end was told it was the plan; an end told
    of a later time (Sam in Rome until 20 November, told on 5 October) is a stint of its own
    and leaves the plan; a plan another agent holds too stays theirs, called off for scout
    alone; forgetting the end gives the plan back."""
    [move] = memory.remember(
        [
            MemoryDraft(
                text="Sam moves to Rome in January.",
                agent="scout",
                observed_at=OCT,
                fact=FactDraft("Sam", "lives in", "Rome", valid_from="2027-01-04"),
            )
        ]
    )
    stint, ended = tell(
        memory, "Sam is in Rome until 20 November.", "Rome", predicate="lives in",
        valid_until="2026-11-20T00:00:00Z",
    )  # fmt: skip
    assert ended == []
    told_at = memory.evidence(stint)["recorded_at"]
    off, ended = tell(
        memory, "Sam's move to Rome is off.", "Rome", when=DEC, predicate="lives in",
        valid_until=DEC,
    )  # fmt: skip
    assert ended == [move.observation_id]
    memory.export(str(tmp_path / "sam.jsonl"))
    into = hash_settings(tmp_path / "copy")
    import_file(into.store, tmp_path / "sam.jsonl")
    memory.close()
    for path in (settings, into):
        opened = open_memory(path)
        try:
            for when in ("2026-11-01", "2027-01-10", "2027-06-01"):
                assert current(opened, as_of=when) == (
                    ["Sam is in Rome until 20 November."] if when == "2026-11-01" else []
                )
            found = opened.recall("", subject="Sam", known_at=told_at, as_of="2027-01-10")
            assert [r.text for r in found.results if r.current] == ["Sam moves to Rome in January."]
            assert opened.evidence(move.observation_id)["superseded_by"] == [off]
        finally:
            opened.close()
    again = open_memory(settings)
    try:
        again.forget(off, agent="scout")
        assert current(again, as_of="2027-01-10") == ["Sam moves to Rome in January."]
        tell(again, "Sam will work at Initech.", "Initech", valid_from="2027-02-01")
        plan, _ = tell(
            again, "Sam will work at Initech.", "Initech", agent="driver", valid_from="2027-02-01"
        )
        _, ended = tell(again, "Initech is off.", "Initech", when=DEC, valid_until=DEC)
        assert ended == [] and plan
        for agent, holds in (("scout", False), ("driver", True)):
            held = current(again, as_of="2027-03-01", agent=agent)
            assert ("Sam will work at Initech." in held) is holds
    finally:
        again.close()


def test_a_cancelled_plans_timeline_says_once_that_it_was_called_off(memory: Memory) -> None:
    """The Rome move called off by an end told a moment before the call (the agent's own
    clock): the timeline shows the plan superseded by the cancellation, one event, not the
    cancellation's own end first (a fact that held at no time, as the plan never started);
    an end told that cancels nothing keeps its own ``ended``."""
    [move] = memory.remember(
        [
            MemoryDraft(
                text="Sam moves to Rome in January.",
                agent="scout",
                observed_at=OCT,
                fact=FactDraft("Sam", "lives in", "Rome", valid_from="2027-01-04"),
            )
        ]
    )
    off, ended = tell(
        memory, "Sam's move to Rome is off.", "Rome", when=DEC, predicate="lives in",
        valid_until="2026-12-03T08:59:55Z",
    )  # fmt: skip
    assert ended == [move.observation_id]
    lone, _ = tell(memory, "Sam left Acme.", when=DEC, valid_until="2026-09-01T00:00:00Z")
    events = [(e["event"], e["id"], e.get("by")) for e in memory.about("Sam")["timeline"]]
    assert events == [
        ("ended", lone, None),
        ("superseded", move.observation_id, off),
    ]


def test_a_plan_cancelled_in_a_batch_gives_back_what_it_ended_until_a_later_fact_there(
    memory: Memory,
) -> None:
    """Sam lives in Berlin, plans a move to Munich from January of a later year (Berlin ends
    there), then one call tells a move to Paris from March and calls Munich off: Berlin holds until
    Paris begins, as when the two are told one by one."""
    berlin, _ = tell(memory, "Sam lives in Berlin.", "Berlin", predicate="lives in")
    munich, ended = tell(
        memory, "Sam moves to Munich.", "Munich", predicate="lives in", valid_from=f"{LATER}-01-10"
    )
    assert ended == [berlin]
    off = iso(utc_now())
    paris, cancelled = memory.remember(
        [
            MemoryDraft(
                text=f"Sam moves to Paris in March {LATER}.",
                agent="scout",
                fact=FactDraft("Sam", "lives in", "Paris", valid_from=f"{LATER}-03-01"),
            ),
            MemoryDraft(
                text="Sam's move to Munich is off.",
                agent="scout",
                fact=FactDraft("Sam", "lives in", "Munich", valid_until=off),
            ),
        ]
    )
    assert cancelled.superseded == [munich]
    assert current(memory, as_of=f"{LATER}-02-01") == ["Sam lives in Berlin."]
    assert current(memory, as_of=f"{LATER}-04-01") == [f"Sam moves to Paris in March {LATER}."]
    assert memory.evidence(berlin)["superseded_by"] == [paris.observation_id]


def test_a_plan_cancelled_gives_back_the_agents_belief_in_a_fact_others_hold_too(
    settings: Settings, memory: Memory
) -> None:
    """scout and driver both hold "Sam lives in Berlin"; driver's plan of a move to Munich
    from January 2030 withdraws driver's belief there (Berlin stays scout's); driver calls
    the move off: driver holds Berlin past January again, with its own confidence, as
    remembered and after a restart."""
    berlin, _ = tell(memory, "Sam lives in Berlin.", "Berlin", predicate="lives in")
    [shared] = memory.remember(
        [
            MemoryDraft(
                text="Sam lives in Berlin.",
                agent="driver",
                confidence="0.6",
                observed_at=OCT,
                fact=FactDraft("Sam", "lives in", "Berlin"),
            )
        ]
    )
    assert shared.observation_id == berlin
    munich, _ = tell(
        memory, "Sam moves to Munich.", "Munich", agent="driver", predicate="lives in",
        valid_from="2030-01-10",
    )  # fmt: skip
    assert current(memory, as_of="2030-06-01", agent="driver") == ["Sam moves to Munich."]
    off, ended = tell(
        memory, "Sam's move to Munich is off.", "Munich", agent="driver", when=DEC,
        predicate="lives in", valid_until=DEC,
    )  # fmt: skip
    assert ended == [munich]
    for again in (memory, None):
        if again is None:
            memory.close()
            again = open_memory(settings)
        try:
            assert current(again, as_of="2030-06-01", agent="driver") == ["Sam lives in Berlin."]
            found = again.recall("", subject="Sam", agent="driver", as_of="2030-06-01")
            assert [r.confidence for r in found.results if r.current] == [Decimal("0.6")]
            believers = [b["agent"] for b in again.evidence(berlin)["believers"]]
            assert sorted(believers) == ["driver", "scout"]
            if again is not memory:
                # Forgetting the cancellation gives the plan back, and with it the end of
                # driver's belief in Berlin.
                again.forget(off, agent="driver")
                for agent, when, held in (
                    ("driver", "2029-06-01", "Sam lives in Berlin."),
                    ("driver", "2030-06-01", "Sam moves to Munich."),
                    ("scout", "2030-06-01", "Sam lives in Berlin."),
                ):
                    assert current(again, as_of=when, agent=agent) == [held]
        finally:
            if again is not memory:
                again.close()


def test_a_plan_told_and_cancelled_in_one_batch_leaves_what_it_ended_as_one_by_one(
    tmp_path: Path,
) -> None:
    """Sam lives in Berlin, moves to Munich from a later January, and the move is called off:
    told in one call (a conversation's memories), Berlin holds on past January, as when the
    three are told one by one (it was ended in January, Sam living nowhere)."""
    off = iso(utc_now())
    drafts = [
        MemoryDraft(
            text="Sam lives in Berlin.",
            agent="scout",
            observed_at=OCT,
            fact=FactDraft("Sam", "lives in", "Berlin"),
        ),
        MemoryDraft(
            text="Sam moves to Munich.",
            agent="scout",
            observed_at=OCT,
            fact=FactDraft("Sam", "lives in", "Munich", valid_from=f"{LATER}-01-10"),
        ),
        MemoryDraft(
            text="Sam's move to Munich is off.",
            agent="scout",
            fact=FactDraft("Sam", "lives in", "Munich", valid_until=off),
        ),
    ]
    held = []
    for together in (True, False):
        memory = open_memory(hash_settings(tmp_path / str(together)))
        try:
            if together:
                memory.remember(drafts)
            else:
                for draft in drafts:
                    memory.remember([draft])
            held.append(current(memory, as_of=f"{LATER}-06-01"))
        finally:
            memory.close()
    assert held == [["Sam lives in Berlin."]] * 2


def test_an_end_told_of_a_plan_and_of_the_same_fact_held_now_ends_both_as_told(
    settings: Settings, memory: Memory
) -> None:
    """scout tells Sam lives in Cork from 2030, then from January and from June 2026 (each
    ending at the next as the same value told later); one end told now ends all three: the
    plan is cancelled and the two held end as told, not given back as the plan's (they were
    ended twice over, and read otherwise after a restart)."""
    for start in ("2030-01-10", "2026-01-10", "2026-06-01"):
        tell(memory, f"Sam lives in Cork from {start}.", "Cork", when="2026-12-01T00:00:00Z",
             predicate="lives in", valid_from=start)  # fmt: skip
    _, ended = tell(
        memory, "Sam's Cork plan is off.", "Cork", when=DEC, predicate="lives in",
        valid_until=DEC,
    )  # fmt: skip
    assert len(ended) == 3
    seen = []
    for again in (memory, None):
        if again is None:
            memory.close()
            again = open_memory(settings)
        seen.append([current(again, as_of=day) for day in ("2026-02-01", "2026-08-01")])
        if again is not memory:
            again.close()
    assert seen[0] == seen[1]
    assert seen[0][0] == ["Sam's Cork plan is off."]


@pytest.mark.parametrize("together", [False, True])
def test_a_cancelled_plan_ends_no_fact_told_late_and_two_cancelled_at_once_end_nothing(
    tmp_path: Path, together: bool
) -> None:
    """A fact told late (Sam lived in Cork from January 2026, told after a move to Athens
    in a later year was planned) ends where the plan begins, and holds on once the plan is
    called off, whether the plan is cancelled before or after it is told; Bonn planned twice
    (from January and from March of that year) and called off by one end ends Cork at
    neither. Told one by one or in one call alike (each was ended at a cancelled plan's
    start, or not, as told)."""
    off = iso(utc_now())

    def fact(text: str, obj: str, **times: str) -> MemoryDraft:
        return MemoryDraft(
            text=text, agent="scout", observed_at=DEC if "valid_from" in times else None,
            fact=FactDraft("Sam", "lives in", obj, **times),
        )  # fmt: skip

    tellings = {
        "late": [
            fact("Sam moves to Athens.", "Athens", valid_from=f"{LATER}-06-01"),
            fact("Sam lives in Cork.", "Cork", valid_from="2026-01-10"),
            fact("Athens is off.", "Athens", valid_until=off),
        ],
        "after": [
            fact("Sam moves to Athens.", "Athens", valid_from=f"{LATER}-06-01"),
            fact("Athens is off.", "Athens", valid_until=off),
            fact("Sam lives in Cork.", "Cork", valid_from="2026-01-10"),
        ],
        "twice": [
            fact("Sam lives in Cork.", "Cork", valid_from="2026-01-10"),
            fact("Sam moves to Bonn in March.", "Bonn", valid_from=f"{LATER}-03-01"),
            fact("Sam moves to Bonn in January.", "Bonn", valid_from=f"{LATER}-01-10"),
            fact("Bonn is off.", "Bonn", valid_until=off),
        ],
    }
    for name, drafts in tellings.items():
        memory = open_memory(hash_settings(tmp_path / name))
        try:
            if together:
                memory.remember(drafts)
            else:
                for draft in drafts:
                    memory.remember([draft])
            assert current(memory, as_of=f"{LATER}-12-01") == ["Sam lives in Cork."], name
        finally:
            memory.close()


def sam_lives_in(text: str, obj: str, agent: str = "scout", **times: str) -> MemoryDraft:
    """A fact of where Sam lives, told by ``agent``: observed in December when it tells an
    end (a cancellation), in October otherwise."""
    return MemoryDraft(
        text=text, agent=agent, observed_at=DEC if "valid_until" in times else OCT,
        fact=FactDraft("Sam", "lives in", obj, **times),
    )  # fmt: skip


@pytest.mark.parametrize("first", ["scout", "driver"])
@pytest.mark.parametrize("together", [False, True])
def test_a_plan_two_agents_hold_called_off_by_one_is_withdrawn_for_it_alone(
    tmp_path: Path, together: bool, first: str
) -> None:
    """scout has Sam living in Berlin; scout and driver tell his move to Munich from January
    2030 (for scout, Berlin ends there); scout calls it off. scout's belief in the plan is
    withdrawn (it held for scout at no time) and Berlin holds on for scout; driver still
    holds the plan, and the two disagree; at a known_at before the cancellation scout held
    the plan. Whoever told the plan first, told one by one or in one call, and after a
    restart, alike; the cancellation retried is a repeat, and forgetting it gives scout the
    plan back, and with it Berlin's end in January."""
    settings = hash_settings(tmp_path / "memory")

    plans = [
        sam_lives_in("Sam moves to Munich.", "Munich", agent=agent, valid_from="2030-01-10")
        for agent in ("scout", "driver")
    ]
    off = sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC)
    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        *(plans if first == "scout" else plans[::-1]),
        off,
    ]
    memory = open_memory(settings)
    try:
        if together:
            done = memory.remember(drafts)
        else:
            done = [memory.remember([d])[0] for d in drafts[:3]]
            before = iso(utc_now())
            done += memory.remember(drafts[3:])
        berlin, munich, shared, called_off = done
        assert shared.observation_id == munich.observation_id
        assert called_off.superseded == [] and called_off.conflicts == [munich.observation_id]
        [retried] = memory.remember([off])
        assert retried.duplicate_of == called_off.observation_id
    finally:
        memory.close()
    for restarted in (False, True):
        memory = open_memory(settings)
        try:
            june = {"as_of": "2030-06-01"}
            assert current(memory, agent="scout", **june) == ["Sam lives in Berlin."]
            assert current(memory, agent="driver", **june) == ["Sam moves to Munich."]
            assert current(memory, **june) == ["Sam lives in Berlin.", "Sam moves to Munich."]
            assert memory.evidence(berlin.observation_id).get("superseded_by", []) == []
            believers = memory.evidence(munich.observation_id)["believers"]
            assert [b["agent"] for b in believers] == ["driver"]
            if not together:
                held = current(memory, agent="scout", known_at=before, **june)
                assert held == ["Sam moves to Munich."]
            if restarted:
                memory.forget(called_off.observation_id, agent="scout")
                for agent, when, fact in (
                    ("scout", "2029-06-01", "Sam lives in Berlin."),
                    ("scout", "2030-06-01", "Sam moves to Munich."),
                    ("driver", "2030-06-01", "Sam moves to Munich."),
                ):
                    assert current(memory, agent=agent, as_of=when) == [fact], (agent, when)
        finally:
            memory.close()


@pytest.mark.parametrize("together", [False, True])
def test_a_plan_called_off_by_one_of_two_gives_it_back_its_belief_in_a_fact_others_hold(
    tmp_path: Path, together: bool
) -> None:
    """scout and medic hold Berlin; scout's plan of a move to Munich from January 2030
    withdraws scout's belief there (Berlin stays medic's); driver tells the plan too, and
    scout calls it off: scout holds Berlin past January again, and driver the plan."""
    settings = hash_settings(tmp_path / "memory")

    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        sam_lives_in("Sam lives in Berlin.", "Berlin", agent="medic"),
        sam_lives_in("Sam moves to Munich.", "Munich", valid_from="2030-01-10"),
        sam_lives_in("Sam moves to Munich.", "Munich", agent="driver", valid_from="2030-01-10"),
        sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC),
    ]
    memory = open_memory(settings)
    try:
        for told in [drafts] if together else [[d] for d in drafts]:
            memory.remember(told)
        for restarted in (False, True):
            if restarted:
                memory.close()
                memory = open_memory(settings)
            for agent, fact in (
                ("scout", "Sam lives in Berlin."),
                ("medic", "Sam lives in Berlin."),
                ("driver", "Sam moves to Munich."),
            ):
                assert current(memory, agent=agent, as_of="2030-06-01") == [fact], agent
    finally:
        memory.close()


@pytest.mark.parametrize("together", [False, True])
def test_one_end_calling_off_a_shared_plan_and_one_of_its_own_gives_back_what_both_ended(
    tmp_path: Path, together: bool
) -> None:
    """scout plans Sam's move to Athens in January 2030, then to Bonn in March (Athens ends
    there; driver tells the Bonn plan too) and to Bonn in January (Athens ends at its start);
    scout calls Bonn off: neither Bonn plan ends Athens for scout any more (each counted
    the other as what ends it), told one by one or in one call alike."""
    settings = hash_settings(tmp_path / "memory")

    drafts = [
        sam_lives_in("Sam moves to Athens.", "Athens", valid_from="2030-01-10"),
        sam_lives_in("Sam moves to Bonn in March.", "Bonn", valid_from="2030-03-10"),
        sam_lives_in(
            "Sam moves to Bonn in March.", "Bonn", agent="driver", valid_from="2030-03-10"
        ),
        sam_lives_in("Sam moves to Bonn in January.", "Bonn", valid_from="2030-01-10"),
        sam_lives_in("Bonn is off.", "Bonn", valid_until=DEC),
    ]
    memory = open_memory(settings)
    try:
        for told in [drafts] if together else [[d] for d in drafts]:
            memory.remember(told)
        for when in ("2030-02-01", "2030-06-01"):
            assert current(memory, agent="scout", as_of=when) == ["Sam moves to Athens."]
        assert current(memory, agent="driver", as_of="2030-06-01") == [
            "Sam moves to Bonn in March."
        ]
    finally:
        memory.close()


@pytest.mark.parametrize("together", [False, True])
def test_a_plan_shared_and_called_off_in_one_call_gives_back_what_it_came_to_end(
    tmp_path: Path, together: bool
) -> None:
    """scout lives Sam in Athens and plans Bonn from March 2030 (Athens ends there); driver
    plans Bonn from January, scout tells that plan too and calls Bonn off: Athens holds on
    for scout, told one by one or in one call alike (in one call, driver's plan, which came
    to end Athens once scout's March plan was off, ended it still)."""
    settings = hash_settings(tmp_path / "memory")

    drafts = [
        sam_lives_in("Sam moves to Bonn in March.", "Bonn", valid_from="2030-03-10"),
        sam_lives_in(
            "Sam moves to Bonn in January.", "Bonn", agent="driver", valid_from="2030-01-10"
        ),
        sam_lives_in("Sam lives in Athens.", "Athens"),
        sam_lives_in("Sam moves to Bonn in January.", "Bonn", valid_from="2030-01-10"),
        sam_lives_in("Bonn is off.", "Bonn", valid_until=DEC),
    ]
    memory = open_memory(settings)
    try:
        for told in [drafts] if together else [[d] for d in drafts]:
            memory.remember(told)
        for when in ("2030-02-01", "2030-06-01"):
            assert current(memory, agent="scout", as_of=when) == ["Sam lives in Athens."]
        assert current(memory, agent="driver", as_of="2030-06-01") == [
            "Sam moves to Bonn in January."
        ]
    finally:
        memory.close()


@pytest.mark.parametrize("together", [False, True])
def test_a_shared_plan_a_later_fact_of_the_agent_ended_is_called_off_for_it_alone(
    tmp_path: Path, together: bool
) -> None:
    """scout has Sam in Berlin; scout and driver tell his move to Munich from January 2030;
    scout then tells a move to Hamburg from March 2030 (its belief in Munich holds until
    then) and calls Munich off: for scout, Berlin holds until Hamburg; driver keeps Munich.
    So it reads when scout alone held the plan, told one by one or in one call, and after a
    restart alike; the cancellation retried is a repeat, and forgetting it gives scout the
    plan back until Hamburg (and with it Berlin's end in January)."""
    settings = hash_settings(tmp_path / "memory")

    def draft(
        text: str, obj: str, agent: str = "scout", when: str = OCT, **times: str
    ) -> MemoryDraft:
        fact = FactDraft("Sam", "lives in", obj, **times)
        return MemoryDraft(text=text, agent=agent, observed_at=when, fact=fact)

    drafts = [
        draft("Sam lives in Berlin.", "Berlin"),
        draft("Sam moves to Munich.", "Munich", valid_from="2030-01-10"),
        draft("Sam moves to Munich.", "Munich", agent="driver", valid_from="2030-01-10"),
        draft("Sam moves to Hamburg.", "Hamburg", when=NOV, valid_from="2030-03-01"),
        draft("Sam's move to Munich is off.", "Munich", when=DEC, valid_until=DEC),
    ]
    memory = open_memory(settings)
    try:
        for told in [drafts] if together else [[d] for d in drafts]:
            *_, called_off = memory.remember(told)
        [retried] = memory.remember(drafts[-1:])
        assert retried.duplicate_of == called_off.observation_id
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", "2029-06-01", "Sam lives in Berlin."),
            ("scout", "2030-02-01", "Sam lives in Berlin."),
            ("scout", "2030-06-01", "Sam moves to Hamburg."),
            ("driver", "2030-02-01", "Sam moves to Munich."),
            ("driver", "2030-06-01", "Sam moves to Munich."),
        )
        memory.forget(called_off.observation_id, agent="scout")
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", "2029-06-01", "Sam lives in Berlin."),
            ("scout", "2030-02-01", "Sam moves to Munich."),
            ("scout", "2030-06-01", "Sam moves to Hamburg."),
            ("driver", "2030-06-01", "Sam moves to Munich."),
        )
    finally:
        memory.close()


def test_a_shared_plan_called_off_then_told_again_holds_until_the_agents_next_fact(
    tmp_path: Path,
) -> None:
    """scout and driver plan Sam's move to Munich from January 2030; scout calls it off,
    then tells it again, then tells a move to Hamburg from March: for scout, Munich holds
    from January until March (the cancellation withdrew its first belief, not the one told
    again), as when scout alone held the plan; at a known_at between the cancellation and
    the plan told again, scout held Berlin. After a restart alike."""
    settings = hash_settings(tmp_path / "memory")

    def draft(text: str, obj: str, when: str, agent: str = "scout", **times: str) -> MemoryDraft:
        fact = FactDraft("Sam", "lives in", obj, **times)
        return MemoryDraft(text=text, agent=agent, observed_at=when, fact=fact)

    memory = open_memory(settings)
    try:
        for told in (
            draft("Sam lives in Berlin.", "Berlin", OCT),
            draft("Sam moves to Munich.", "Munich", OCT, valid_from="2030-01-10"),
            draft("Sam moves to Munich.", "Munich", OCT, agent="driver", valid_from="2030-01-10"),
            draft("Sam's move to Munich is off.", "Munich", DEC, valid_until=DEC),
        ):
            memory.remember([told])
        between = iso(utc_now())
        for told in (
            draft(
                "Sam moves to Munich.", "Munich", "2026-12-04T09:00:00Z", valid_from="2030-01-10"
            ),
            draft(
                "Sam moves to Hamburg.", "Hamburg", "2026-12-05T09:00:00Z", valid_from="2030-03-01"
            ),
        ):
            memory.remember([told])
        held_then = {"agent": "scout", "as_of": "2030-02-01", "known_at": between}
        assert current(memory, **held_then) == ["Sam lives in Berlin."]
        memory = holds_across_restart(memory, settings, *MUNICH_UNTIL_HAMBURG)
        assert current(memory, **held_then) == ["Sam lives in Berlin."]
    finally:
        memory.close()


def test_a_shared_plan_one_agent_called_off_forgotten_by_the_other_is_kept_for_nobody(
    tmp_path: Path,
) -> None:
    """scout and driver plan Sam's move to Munich from January 2030; scout calls it off;
    driver forgets the plan: it is kept for nobody (scout held it at no time), scout holds
    Berlin and driver nothing, after a restart too."""
    settings = hash_settings(tmp_path / "memory")
    memory = open_memory(settings)
    try:
        _, munich, _, _ = (
            memory.remember([draft])[0]
            for draft in (
                sam_lives_in("Sam lives in Berlin.", "Berlin"),
                sam_lives_in("Sam moves to Munich.", "Munich", valid_from="2030-01-10"),
                sam_lives_in("Sam moves to Munich.", "Munich", "driver", valid_from="2030-01-10"),
                sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC),
            )
        )
        forgotten = memory.forget(munich.observation_id, agent="driver")
        assert forgotten.kept_for == []
        for restarted in (False, True):
            if restarted:
                memory.close()
                memory = open_memory(settings)
            for agent, fact in (("scout", ["Sam lives in Berlin."]), ("driver", [])):
                assert current(memory, agent=agent, as_of="2030-06-01") == fact, agent
    finally:
        memory.close()


@pytest.mark.parametrize("together", ["again", "all"])
def test_a_shared_plan_called_off_and_told_again_in_one_call_holds_as_told_one_by_one(
    tmp_path: Path, together: str
) -> None:
    """As ``test_a_shared_plan_called_off_then_told_again_holds_until_the_agents_next_fact``,
    with the cancellation and the plan told again in one call (or every telling in one):
    for scout, Munich holds from January until Hamburg in March; driver keeps Munich. After
    a restart alike."""
    settings = hash_settings(tmp_path / "memory")

    def draft(text: str, obj: str, when: str, agent: str = "scout", **times: str) -> MemoryDraft:
        fact = FactDraft("Sam", "lives in", obj, **times)
        return MemoryDraft(text=text, agent=agent, observed_at=when, fact=fact)

    drafts = [
        draft("Sam lives in Berlin.", "Berlin", OCT),
        draft("Sam moves to Munich.", "Munich", OCT, valid_from="2030-01-10"),
        draft("Sam moves to Munich.", "Munich", OCT, agent="driver", valid_from="2030-01-10"),
        draft("Sam's move to Munich is off.", "Munich", DEC, valid_until=DEC),
        draft("Sam moves to Munich.", "Munich", "2026-12-04T09:00:00Z", valid_from="2030-01-10"),
        draft("Sam moves to Hamburg.", "Hamburg", "2026-12-05T09:00:00Z", valid_from="2030-03-01"),
    ]
    calls = [drafts] if together == "all" else [*([d] for d in drafts[:3]), drafts[3:5], drafts[5:]]
    memory = open_memory(settings)
    try:
        for told in calls:
            memory.remember(told)
        memory = holds_across_restart(
            memory,
            settings,
            *MUNICH_UNTIL_HAMBURG,
        )
    finally:
        memory.close()


def test_a_shared_plans_cancellation_others_told_too_forgotten_by_one_ends_its_fact_again(
    tmp_path: Path,
) -> None:
    """scout has Sam in Berlin; scout and driver plan his move to Munich from January; scout
    and medic tell that the move is off (one observation, two beliefs); scout forgets its
    cancellation: scout holds the plan again, and Berlin ends for scout where Munich begins,
    as when scout alone had called it off. After a restart alike."""
    settings = hash_settings(tmp_path / "memory")
    off = "Sam's move to Munich is off."
    memory = open_memory(settings)
    try:
        *_, called_off, shared = (
            memory.remember([draft])[0]
            for draft in (
                sam_lives_in("Sam lives in Berlin.", "Berlin"),
                sam_lives_in("Sam moves to Munich.", "Munich", valid_from=f"{LATER}-01-10"),
                sam_lives_in(
                    "Sam moves to Munich.", "Munich", "driver", valid_from=f"{LATER}-01-10"
                ),
                sam_lives_in(off, "Munich", valid_until=DEC),
                sam_lives_in(off, "Munich", "medic", valid_until=DEC),
            )
        )
        assert shared.observation_id == called_off.observation_id
        assert memory.forget(called_off.observation_id, agent="scout").kept_for == ["medic"]
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", f"{LATER - 1}-06-01", "Sam lives in Berlin."),
            ("scout", f"{LATER}-06-01", "Sam moves to Munich."),
            ("driver", f"{LATER}-06-01", "Sam moves to Munich."),
        )
    finally:
        memory.close()


@pytest.mark.parametrize("together", [False, True])
def test_a_fact_shared_with_an_agent_that_never_planned_ends_for_each_where_its_facts_end_it(
    tmp_path: Path, together: bool
) -> None:
    """scout and medic have Sam in Berlin; scout and driver plan his move to Munich from
    January; scout tells a move to Hamburg from March and calls Munich off: scout holds
    Berlin until Hamburg (not until the plan it called off), medic, who never planned a
    move, holds Berlin on, driver keeps Munich. scout forgets its cancellation: scout holds
    Munich from January until Hamburg, medic Berlin. Told one by one or in one call, and
    after a restart, alike."""
    settings = hash_settings(tmp_path / "memory")
    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        sam_lives_in("Sam lives in Berlin.", "Berlin", "medic"),
        sam_lives_in("Sam moves to Munich.", "Munich", valid_from=f"{LATER}-01-10"),
        sam_lives_in("Sam moves to Munich.", "Munich", "driver", valid_from=f"{LATER}-01-10"),
        sam_lives_in("Sam moves to Hamburg.", "Hamburg", valid_from=f"{LATER}-03-01"),
        sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC),
    ]
    february, june = f"{LATER}-02-01", f"{LATER}-06-01"
    memory = open_memory(settings)
    try:
        for told in [drafts] if together else [[d] for d in drafts]:
            *_, called_off = memory.remember(told)
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", february, "Sam lives in Berlin."),
            ("scout", june, "Sam moves to Hamburg."),
            ("medic", june, "Sam lives in Berlin."),
            ("driver", june, "Sam moves to Munich."),
        )
        memory.forget(called_off.observation_id, agent="scout")
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", february, "Sam moves to Munich."),
            ("scout", june, "Sam moves to Hamburg."),
            ("medic", february, "Sam lives in Berlin."),
            ("medic", june, "Sam lives in Berlin."),
            ("driver", june, "Sam moves to Munich."),
        )
    finally:
        memory.close()


@pytest.mark.parametrize("paris", ["before", "after"])
def test_a_fact_shared_with_an_agent_that_never_planned_ends_where_its_own_next_fact_begins(
    tmp_path: Path, paris: str
) -> None:
    """scout has Sam in Berlin; scout and driver plan his move to Munich from January; medic
    tells Berlin too and a move to Paris from May, before or after scout calls Munich off:
    Berlin holds past May for scout, until May for medic. scout forgets its cancellation:
    Berlin ends for scout in January, for medic still in May. After a restart alike."""
    settings = hash_settings(tmp_path / "memory")
    medics = [
        sam_lives_in("Sam lives in Berlin.", "Berlin", "medic"),
        sam_lives_in("Sam moves to Paris.", "Paris", "medic", valid_from=f"{LATER}-05-01"),
    ]
    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        *(medics if paris == "before" else []),
        sam_lives_in("Sam moves to Munich.", "Munich", valid_from=f"{LATER}-01-10"),
        sam_lives_in("Sam moves to Munich.", "Munich", "driver", valid_from=f"{LATER}-01-10"),
        sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC),
        *(medics if paris == "after" else []),
    ]
    february, june = f"{LATER}-02-01", f"{LATER}-06-01"
    memory = open_memory(settings)
    try:
        done = [memory.remember([draft])[0] for draft in drafts]
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", june, "Sam lives in Berlin."),
            ("medic", february, "Sam lives in Berlin."),
            ("medic", june, "Sam moves to Paris."),
        )
        memory.forget(done[-1 if paris == "before" else -3].observation_id, agent="scout")
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", february, "Sam moves to Munich."),
            ("medic", february, "Sam lives in Berlin."),
            ("medic", june, "Sam moves to Paris."),
        )
        # Held by no agent past May, it is not Sam's home then for anyone.
        assert current(memory, as_of=june) == ["Sam moves to Munich.", "Sam moves to Paris."]
    finally:
        memory.close()


@pytest.mark.parametrize("together", [False, True])
def test_a_fact_shared_with_an_agent_that_never_planned_and_ended_by_it_holds_on_for_the_other(
    tmp_path: Path, together: bool
) -> None:
    """scout and medic have Sam in Berlin; scout and driver plan his move to Munich from
    January (scout's belief in the shared Berlin is withdrawn from then); medic tells a move
    to Paris from May; then scout calls Munich off: scout, who never moved, holds Berlin on
    (not until medic's Paris), medic until May, driver keeps Munich. scout forgets its
    cancellation: Berlin ends for scout in January again, for medic in May, and holds for
    nobody past May. Told one by one or in one call, and after a restart, alike."""
    settings = hash_settings(tmp_path / "memory")
    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        sam_lives_in("Sam lives in Berlin.", "Berlin", "medic"),
        sam_lives_in("Sam moves to Munich.", "Munich", valid_from=f"{LATER}-01-10"),
        sam_lives_in("Sam moves to Munich.", "Munich", "driver", valid_from=f"{LATER}-01-10"),
        sam_lives_in("Sam moves to Paris.", "Paris", "medic", valid_from=f"{LATER}-05-01"),
        sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC),
    ]
    february, june = f"{LATER}-02-01", f"{LATER}-06-01"
    memory = open_memory(settings)
    try:
        for told in [drafts] if together else [[d] for d in drafts]:
            *_, called_off = memory.remember(told)
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", february, "Sam lives in Berlin."),
            ("scout", june, "Sam lives in Berlin."),
            ("medic", february, "Sam lives in Berlin."),
            ("medic", june, "Sam moves to Paris."),
            ("driver", june, "Sam moves to Munich."),
        )
        memory.forget(called_off.observation_id, agent="scout")
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", february, "Sam moves to Munich."),
            ("medic", february, "Sam lives in Berlin."),
            ("medic", june, "Sam moves to Paris."),
        )
        # Held by no agent past May, it is not Sam's home then for anyone.
        assert current(memory, as_of=june) == ["Sam moves to Munich.", "Sam moves to Paris."]
    finally:
        memory.close()


def test_agents_disagreeing_about_a_time_to_come_are_listed_as_a_clash_now(
    tmp_path: Path,
) -> None:
    """scout has Sam in Berlin; scout and driver plan his move to Munich from January;
    scout calls it off: from January scout holds Berlin and driver Munich, and
    find_conflicts lists the clash now, before the plan begins, with where it begins; at a
    known_at before the cancellation (scout held the plan too) there was none. scout alone
    planning Paris (Berlin ends for scout where Paris begins) makes no clash."""
    settings = hash_settings(tmp_path / "memory")
    memory = open_memory(settings)
    try:
        berlin, munich, _ = (
            memory.remember([draft])[0]
            for draft in (
                sam_lives_in("Sam lives in Berlin.", "Berlin"),
                sam_lives_in("Sam moves to Munich.", "Munich", valid_from=f"{LATER}-01-10"),
                sam_lives_in(
                    "Sam moves to Munich.", "Munich", "driver", valid_from=f"{LATER}-01-10"
                ),
            )
        )
        before = iso(utc_now())
        memory.remember([sam_lives_in("Sam's move to Munich is off.", "Munich", valid_until=DEC)])
        found = memory.conflicts(agent="scout", other_agent="driver")
        assert found["count"] == 1
        [clash] = found["conflicts"]
        assert clash["kind"] == "clash"
        sides = {clash["a"]: clash["a_agents"], clash["b"]: clash["b_agents"]}
        assert sides == {berlin.observation_id: ["scout"], munich.observation_id: ["driver"]}
        assert iso(clash["begins"]).startswith(f"{LATER}-01-10")
        assert memory.conflicts(agent="scout", known_at=before)["count"] == 0
        memory.remember(
            [
                MemoryDraft(
                    text=text, agent="scout", observed_at=OCT,
                    fact=FactDraft("Tom", "lives in", obj, **times),
                )
                for text, obj, times in (
                    ("Tom lives in Rome.", "Rome", {}),
                    ("Tom moves to Paris.", "Paris", {"valid_from": f"{LATER}-03-01"}),
                )
            ]
        )  # fmt: skip
        assert memory.conflicts()["count"] == 1
    finally:
        memory.close()


@pytest.mark.parametrize(
    ("text", "when", "ends"),
    [
        # Next week begins on Monday, next month on the first, on the clock it was told on.
        ("Sam is in Berlin until next week.", "2026-10-07T10:00:00Z", "2026-10-12T00:00:00Z"),
        ("Sam is in Berlin until next week.", "2026-10-07T10:00:00-05:00", "2026-10-12T05:00:00Z"),
        ("Sam is in Berlin until next month.", "2026-10-07T10:00:00Z", "2026-11-01T00:00:00Z"),
        (
            "Sam is in Berlin until the end of the month.",
            "2026-10-07T10:00:00Z",
            "2026-11-01T00:00:00Z",
        ),
        (
            "Sam is in Berlin until the end of next week.",
            "2026-10-07T10:00:00Z",
            "2026-10-19T00:00:00Z",
        ),
        # Next weekend begins on its Saturday (the weekend of next week, as a note reads it).
        ("Sam is in Berlin until next weekend.", "2026-10-07T10:00:00Z", "2026-10-17T00:00:00Z"),
        (
            "Sam is in Berlin until next weekend.",
            "2026-10-07T10:00:00-05:00",
            "2026-10-17T05:00:00Z",
        ),
        (
            "Sam is in Berlin until the end of next weekend.",
            "2026-10-07T10:00:00Z",
            "2026-10-19T00:00:00Z",
        ),
        # This weekend begins on this week's Saturday and ends on the Monday after.
        ("Sam is in Berlin until this weekend.", "2026-10-07T10:00:00Z", "2026-10-10T00:00:00Z"),
        (
            "Sam is in Berlin until this weekend.",
            "2026-10-07T10:00:00-05:00",
            "2026-10-10T05:00:00Z",
        ),
        (
            "Sam is in Berlin until the end of this weekend.",
            "2026-10-07T10:00:00Z",
            "2026-10-12T00:00:00Z",
        ),
        # "the coming weekend" as "this weekend": ends when it begins.
        (
            "Sam is in Berlin until the coming weekend.",
            "2026-10-07T10:00:00Z",
            "2026-10-10T00:00:00Z",
        ),
        # Told once it has begun (on its Saturday), through it, as before.
        ("Sam is in Berlin until this weekend.", "2026-10-10T10:00:00Z", "2026-10-12T00:00:00Z"),
    ],
)
def test_a_fact_until_next_week_or_month_ends_when_it_begins_or_at_the_end_told(
    memory: Memory, text: str, when: str, ends: str
) -> None:
    [done] = memory.remember(
        [MemoryDraft(text=text, observed_at=when, fact=FactDraft("Sam", "located in", "Berlin"))]
    )
    assert done.ends is not None
    assert (iso(done.ends[0]), done.ends[1]) == (ends, text.removeprefix("Sam is in Berlin ")[:-1])


@pytest.mark.parametrize(
    "text",
    [
        "Sam won't be in Berlin until next week.",
        "Sam lived in Berlin until last week.",
        "Sam won't be in Berlin until next weekend.",
        "Sam lived in Berlin until last weekend.",
        "Sam lived in Berlin until the end of last weekend.",
        "Sam won't be in Berlin until this weekend.",
        "Sam lived in Berlin until this weekend.",
        "Sam lived in Berlin until the end of this weekend.",
    ],
)
def test_a_negated_or_gone_next_week_gives_no_end(memory: Memory, text: str) -> None:
    [done] = memory.remember(
        [MemoryDraft(text=text, observed_at=OCT, fact=FactDraft("Sam", "located in", "Berlin"))]
    )
    assert done.ends is None


@pytest.mark.parametrize("driver", [False, True])
@pytest.mark.parametrize("paris", ["before", "after"])
def test_a_shared_fact_ended_for_an_agent_by_its_plan_it_forgets_holds_on_for_it(
    tmp_path: Path, paris: str, driver: bool
) -> None:
    """scout and medic have Sam in Berlin; scout plans his move to Munich from January
    (scout's belief in Berlin is withdrawn from then), alone or with driver; medic tells a
    move to Paris from May, before or after scout forgets its Munich: scout, as if it never
    planned, holds Berlin past May, medic until May (as when scout calls Munich off), and
    Paris ends Berlin for nobody. After a restart alike."""
    settings = hash_settings(tmp_path / "memory")
    paris_told = sam_lives_in("Sam moves to Paris.", "Paris", "medic", valid_from=f"{LATER}-05-01")
    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        sam_lives_in("Sam lives in Berlin.", "Berlin", "medic"),
        sam_lives_in("Sam moves to Munich.", "Munich", valid_from=f"{LATER}-01-10"),
        *(
            [sam_lives_in("Sam moves to Munich.", "Munich", "driver", valid_from=f"{LATER}-01-10")]
            if driver
            else []
        ),
    ]
    february, june = f"{LATER}-02-01", f"{LATER}-06-01"
    memory = open_memory(settings)
    try:
        berlin, _, munich, *_ = (memory.remember([draft])[0] for draft in drafts)
        if paris == "before":
            memory.remember([paris_told])
        memory.forget(munich.observation_id, agent="scout")
        if paris == "after":
            memory.remember([paris_told])
        memory = holds_across_restart(
            memory,
            settings,
            ("scout", february, "Sam lives in Berlin."),
            ("scout", june, "Sam lives in Berlin."),
            ("medic", february, "Sam lives in Berlin."),
            ("medic", june, "Sam moves to Paris."),
            *([("driver", june, "Sam moves to Munich.")] if driver else []),
        )
        held = {
            f["object"]: f["agents"] for f in memory.about("Sam", as_of=june)["facts"]["lives_in"]
        }
        assert held == {
            "Berlin": ["scout"],
            "Paris": ["medic"],
            **({"Munich": ["driver"]} if driver else {}),
        }
        # Paris ends Berlin for medic alone: the timeline has no end of Berlin.
        timeline = memory.about("Sam", as_of=june)["timeline"]
        assert [e["event"] for e in timeline if e["id"] == berlin.observation_id] == ["started"]
        cited = memory.evidence(berlin.observation_id)
        assert cited["superseded_by"] == []
        assert [
            (w["agent"], iso(w["held_until"])) for w in cited["withdrawn"] if w["held_until"]
        ] == [("medic", f"{LATER}-05-01T00:00:00Z")]
    finally:
        memory.close()


@pytest.mark.parametrize("paris_first", [False, True])
@pytest.mark.parametrize("forgets", ["scout", "medic", "driver"])
def test_a_fact_three_agents_share_ends_for_each_where_its_own_later_fact_begins(
    tmp_path: Path, forgets: str, paris_first: bool
) -> None:
    """scout, medic and driver have Sam in Berlin; scout tells a move to Hamburg from March,
    medic one to Paris from May (told after Hamburg or before), driver nothing: Berlin holds
    for scout until March, for medic until May, for driver on. One of them forgets its
    move (driver: Berlin): it holds as if that was never told (driver: nothing), and the
    others' histories stay; ``about`` in June names each fact's holders, and Berlin ends
    for nobody while driver holds it (at medic's Paris once driver forgets it). After a
    restart alike."""
    settings = hash_settings(tmp_path / "memory")
    april, june = f"{LATER}-04-01", f"{LATER}-06-01"
    moves = [
        sam_lives_in("Sam moves to Hamburg.", "Hamburg", valid_from=f"{LATER}-03-01"),
        sam_lives_in("Sam moves to Paris.", "Paris", "medic", valid_from=f"{LATER}-05-01"),
    ]
    drafts = [
        sam_lives_in("Sam lives in Berlin.", "Berlin"),
        sam_lives_in("Sam lives in Berlin.", "Berlin", "medic"),
        sam_lives_in("Sam lives in Berlin.", "Berlin", "driver"),
        *(moves[::-1] if paris_first else moves),
    ]
    memory = open_memory(settings)
    try:
        done = {d.agent: memory.remember([d])[0] for d in drafts}
        berlin, hamburg, paris = (
            "Sam lives in Berlin.",
            "Sam moves to Hamburg.",
            "Sam moves to Paris.",
        )
        held = {
            "scout": {april: hamburg, june: hamburg},
            "medic": {april: berlin, june: paris},
            "driver": {april: berlin, june: berlin},
        }
        memory = holds_across_restart(
            memory,
            settings,
            *((agent, when, fact) for agent, facts in held.items() for when, fact in facts.items()),
        )
        memory.forget(done[forgets].observation_id, agent=forgets)
        held[forgets] = {april: berlin, june: berlin} if forgets != "driver" else {}
        memory = holds_across_restart(
            memory,
            settings,
            *((agent, when, fact) for agent, facts in held.items() for when, fact in facts.items()),
        )
        if forgets == "driver":
            for when in (april, june):
                assert current(memory, agent="driver", as_of=when) == []
        facts = memory.about("Sam", as_of=june)["facts"]["lives_in"]
        holders: dict[str, list[str]] = {}
        for agent, fact in ((a, f[june]) for a, f in held.items() if f):
            holders.setdefault(fact, []).append(agent)
        assert {f["object"]: f["agents"] for f in facts} == {
            fact.split()[-1].rstrip("."): sorted(agents) for fact, agents in holders.items()
        }
        # Held by driver on, it ends for nobody; forgotten by driver, it holds for medic
        # longest, and ends where medic's Paris begins.
        assert memory.evidence(done["driver"].observation_id)["superseded_by"] == (
            [done["medic"].observation_id] if forgets == "driver" else []
        )
    finally:
        memory.close()
