"""Facts as agents mean them, on a real memory (Kùzu, LanceDB, hash embedder): predicate
cardinality (given per fact, configured, persisted, normalised), one observation believed by
several agents, forgetting one agent's belief, and provenance after a retraction."""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from doxa.server.settings import Settings
from doxa.store import FactDraft, InvalidInput, Memory, MemoryDraft, SupportDraft, drafts
from doxa.store.drafts import predicate_words, validate
from doxa.store.memory import Remembered
from doxa.store.settings import unlisted_cardinality
from doxa.store.values import iso, utc_now
from tests.conftest import hash_settings


def said(
    memory: Memory,
    subject: str,
    predicate: str,
    obj: str,
    agent: str = "scout",
    when: str = "2024-05-01T08:00:00Z",
    text: str | None = None,
    **fact: Any,
) -> str:
    """Remember one fact; its observation id."""
    [done] = memory.remember(
        [
            MemoryDraft(
                text=text or f"{subject} {predicate} {obj}.",
                agent=agent,
                observed_at=when,
                fact=FactDraft(subject, predicate, obj, **fact),
            )
        ]
    )
    return done.observation_id


def alice_in(
    memory: Memory, city: str, agent: str, confidence: str, since: str | None = None
) -> str:
    """Remember that Alice lives in ``city``, told by ``agent`` at ``confidence`` (valid from
    ``since``); the observation id."""
    fact = FactDraft("Alice", "lives in", city, valid_from=since)
    draft = MemoryDraft(f"Alice lives in {city}.", agent=agent, confidence=confidence)
    [done] = memory.remember([replace(draft, fact=fact)])
    return done.observation_id


def current(memory: Memory, query: str, **filters: Any) -> dict[str, bool]:
    """Text -> current, of the facts a recall returns about the query's first word (superseded
    ones included)."""
    found = memory.recall(query, include_superseded=True, **filters)
    subject = query.split()[0]
    return {r.text: r.current for r in found.results if r.text.startswith(subject)}


def clashes(memory: Memory, **filters: Any) -> list[dict[str, Any]]:
    return [c for c in memory.conflicts(**filters)["conflicts"] if c["kind"] == "clash"]


def open_memory(settings: Settings) -> Memory:
    opened = Memory.open(settings.store)
    opened.warm_up()
    return opened


# ---- cardinality ----------------------------------------------------------------------------


def test_a_multi_valued_predicate_accumulates_a_single_valued_one_supersedes(
    memory: Memory,
) -> None:
    said(memory, "Alice", "likes", "jazz", when="2024-05-01T08:00:00Z")
    said(memory, "Alice", "likes", "hiking", when="2024-05-02T08:00:00Z")
    paris = said(memory, "Alice", "lives in", "Paris", when="2024-05-01T08:00:00Z")
    berlin = said(memory, "Alice", "lives in", "Berlin", when="2024-05-02T08:00:00Z")
    found = current(memory, "Alice likes", limit=10)
    assert found["Alice likes jazz."] is True and found["Alice likes hiking."] is True
    assert current(memory, "Alice lives in", limit=10)["Alice lives in Paris."] is False
    [paris_row] = [r for r in memory.recall("Paris", include_superseded=True).results
                   if r.observation_id == paris]  # fmt: skip
    assert paris_row.superseded_by == [berlin]
    assert paris_row.fact is not None and paris_row.fact["cardinality"] == "one"
    [jazz] = [r for r in memory.recall("jazz").results if r.text == "Alice likes jazz."]
    assert jazz.fact is not None and jazz.fact["cardinality"] == "many"
    assert memory.evidence(paris)["cardinality"] == "one"


def test_an_unlisted_predicate_of_what_one_has_several_of_accumulates(memory: Memory) -> None:
    # As "one", "Maya allergic to shellfish" replaced "… penicillin" and "Am I allergic to
    # penicillin?" found nothing current; kin, friends, pets, languages alike.
    said(memory, "Maya", "allergic to", "penicillin", when="2024-05-01T08:00:00Z")
    said(memory, "Maya", "allergic to", "shellfish", when="2024-05-02T08:00:00Z")
    said(memory, "Maya", "has sister", "Anna", when="2024-05-01T08:00:00Z")
    said(memory, "Maya", "has sister", "Clara", when="2024-05-02T08:00:00Z")
    found = current(memory, "Maya allergic to", limit=10)
    assert found["Maya allergic to penicillin."] is True
    assert found["Maya allergic to shellfish."] is True
    assert current(memory, "Maya has sister", limit=10)["Maya has sister Anna."] is True
    # One of them ("best friend") is one, and so is any other unlisted predicate.
    said(memory, "Maya", "best friend", "Tom", when="2024-05-01T08:00:00Z")
    said(memory, "Maya", "best friend", "Leo", when="2024-05-02T08:00:00Z")
    said(memory, "Maya", "drives", "a Golf", when="2024-05-01T08:00:00Z")
    said(memory, "Maya", "drives", "a Polo", when="2024-05-02T08:00:00Z")
    assert current(memory, "Maya best friend", limit=10)["Maya best friend Tom."] is False
    assert current(memory, "Maya drives", limit=10)["Maya drives a Golf."] is False


@pytest.mark.parametrize(
    ("predicate", "cardinality"),
    [
        ("allergic_to", "many"),
        ("has_sister", "many"),
        ("sister_of", "many"),
        ("current_pets", "many"),
        ("speaks_language", "many"),
        ("is_allergic_to", "many"),
        ("is_sister_of", "many"),
        ("languages_spoken", "many"),
        ("sister_in_law", "many"),
        # Whom or what one is with, and what one depends on: Raj replaced Ana as whom the user
        # works with, pandas numpy as what the project depends on.
        ("works_with", "many"),
        ("collaborates_with", "many"),
        ("lives_with", "many"),
        ("dietary_restriction", "many"),
        ("dependencies", "many"),
        ("requirement", "many"),
        # What it names is counted, measured or one of them; or it names something else.
        ("number_of_children", "one"),
        ("interest_rate", "one"),
        ("skill_level", "one"),
        ("dog_age", "one"),
        ("native_language", "one"),
        ("best_friend", "one"),
        ("drives", "one"),
    ],
)
def test_an_unlisted_predicate_is_many_by_what_it_names(predicate: str, cardinality: str) -> None:
    assert unlisted_cardinality(predicate) == cardinality


@pytest.mark.parametrize("predicate", ["depends on", "requires"])
def test_what_a_project_depends_on_accumulates(memory: Memory, predicate: str) -> None:
    said(memory, "doxa", predicate, "numpy", when="2024-05-01T08:00:00Z")
    said(memory, "doxa", predicate, "pandas", when="2024-05-02T08:00:00Z")
    found = current(memory, f"doxa {predicate}", limit=10)
    assert found[f"doxa {predicate} numpy."] is True
    assert found[f"doxa {predicate} pandas."] is True


@pytest.mark.parametrize(
    ("predicate", "words"),
    [
        ("hasSister", "has_sister"),
        ("favoriteColor", "favorite_color"),
        ("numberOfChildren", "number_of_children"),
        ("HTMLParser", "html_parser"),
        ("has2Kids", "has2_kids"),
        ("lives in", "lives_in"),
        ("LIVES_IN", "lives_in"),
        ("hassister", "hassister"),
    ],
)
def test_a_predicate_in_camel_case_is_read_as_its_words(predicate: str, words: str) -> None:
    assert predicate_words(predicate) == words


def test_a_camel_case_predicate_has_the_cardinality_of_its_words_and_keeps_its_name(
    memory: Memory,
) -> None:
    # "hasSister" was read as one word, "hassister", which names nothing one has several of:
    # Clara replaced Anna. Its name stays ``hassister``, as stored facts have it.
    said(memory, "Maya", "hasSister", "Anna", when="2024-05-01T08:00:00Z")
    last = said(memory, "Maya", "hasSister", "Clara", when="2024-05-02T08:00:00Z")
    found = current(memory, "Maya hasSister", limit=10)
    assert found["Maya hasSister Anna."] is True
    assert found["Maya hasSister Clara."] is True
    cited = memory.evidence(last)
    assert (cited["predicate"], cited["cardinality"]) == ("hassister", "many")
    said(memory, "Maya", "favoriteColor", "red", when="2024-05-01T08:00:00Z")
    said(memory, "Maya", "favoriteColor", "blue", when="2024-05-02T08:00:00Z")
    found = current(memory, "Maya favoriteColor", limit=10)
    assert found["Maya favoriteColor red."] is False
    assert found["Maya favoriteColor blue."] is True


def test_different_objects_of_a_multi_valued_predicate_never_clash_across_agents(
    memory: Memory,
) -> None:
    said(memory, "Alice", "likes", "hiking", agent="scout")
    said(memory, "Alice", "likes", "chess", agent="driver")
    assert clashes(memory) == []
    said(memory, "Alice", "lives_in", "Paris", agent="scout")
    said(memory, "Alice", "lives_in", "Berlin", agent="driver")
    [clash] = clashes(memory)
    assert clash["predicate"] == "lives_in"
    assert {*clash["a_agents"], *clash["b_agents"]} == {"scout", "driver"}


def test_predicates_are_normalised_and_stored_normalised(memory: Memory) -> None:
    first = said(memory, "Alice", "lives in", "Paris", when="2024-05-01T08:00:00Z")
    said(memory, "Alice", "Lives-In", "Rome", when="2024-05-02T08:00:00Z")
    said(memory, "Alice", " LIVES   in ", "Oslo", when="2024-05-03T08:00:00Z")
    last = said(memory, "Alice", "lives_in", "Berlin", when="2024-05-04T08:00:00Z")
    cited = memory.evidence(last)
    assert cited["predicate"] == "lives_in"
    assert [s["object"] for s in cited["supersession_chain"]] == ["Paris", "Rome", "Oslo"]
    # Either Unicode form of a letter: "é" typed, or pasted as "e" and a combining accent.
    said(memory, "Bob", "est n\u00e9 \u00e0", "Lyon", when="2024-05-01T08:00:00Z")
    pasted = said(memory, "Bob", "est ne\u0301 a\u0300", "Nice", when="2024-05-02T08:00:00Z")
    assert [s["object"] for s in memory.evidence(pasted)["supersession_chain"]] == ["Lyon"]
    assert memory.evidence(first)["valid_until"] is not None
    with pytest.raises(InvalidInput) as caught:
        said(memory, "Alice", " _-_ ", "nowhere")
    assert caught.value.field == "fact.predicate"


def test_cardinality_given_with_the_first_fact_holds_and_another_is_refused(
    memory: Memory,
) -> None:
    said(memory, "Bob", "collects", "stamps", cardinality="many")
    said(memory, "Bob", "collects", "coins", when="2024-05-02T08:00:00Z")
    found = current(memory, "Bob collects")
    assert found == {"Bob collects stamps.": True, "Bob collects coins.": True}
    said(memory, "Bob", "Collects", "shells", cardinality="many")  # the same one: fine
    before = memory.stats()["Observation"]
    with pytest.raises(InvalidInput) as caught:
        said(memory, "Bob", "collects", "fossils", cardinality="one")
    assert caught.value.field == "fact.cardinality"
    assert str(caught.value).startswith(
        "fact.cardinality is 'one', but the predicate 'collects' is 'many'"
    )
    assert memory.stats()["Observation"] == before
    with pytest.raises(InvalidInput) as caught:
        memory.remember(
            [
                MemoryDraft(text="ok", fact=FactDraft("Bob", "collects", "cards")),
                MemoryDraft(text="no", fact=FactDraft("Bob", "collects", "x", cardinality="one")),
            ],
            batch=True,
        )
    assert caught.value.field == "memories[1].fact.cardinality"
    with pytest.raises(InvalidInput) as caught:
        said(memory, "Bob", "naps", "daily", cardinality="sometimes")
    assert caught.value.field == "fact.cardinality"
    assert memory.stats()["Observation"] == before


def test_cardinality_set_early_in_a_batch_governs_the_rest_of_it(memory: Memory) -> None:
    done = memory.remember(
        [
            MemoryDraft(
                text="Cleo grows tomatoes.",
                observed_at="2024-05-01T08:00:00Z",
                fact=FactDraft("Cleo", "grows", "tomatoes", cardinality="many"),
            ),
            MemoryDraft(
                text="Cleo grows basil.",
                observed_at="2024-05-02T08:00:00Z",
                fact=FactDraft("Cleo", "grows", "basil"),
            ),
        ],
        batch=True,
    )
    assert [d.superseded for d in done] == [[], []]
    assert current(memory, "Cleo grows") == {
        "Cleo grows tomatoes.": True,
        "Cleo grows basil.": True,
    }


def test_configured_cardinality_and_the_recorded_one_survive_a_restart(tmp_path: Path) -> None:
    settings = hash_settings(
        tmp_path / "memory", predicates={"one": ["status"], "many": ["collects"]}
    )
    memory = open_memory(settings)
    try:
        said(memory, "Bob", "collects", "stamps")
        said(memory, "Bob", "collects", "coins", when="2024-05-02T08:00:00Z")
        said(memory, "Dan", "plays with", "Eve", cardinality="many")
        assert current(memory, "Bob collects") == {
            "Bob collects stamps.": True,
            "Bob collects coins.": True,
        }
    finally:
        memory.close()
    # Configuration changes later; what the graph recorded stays.
    later = hash_settings(tmp_path / "memory", predicates={"one": ["collects"], "many": []})
    memory = open_memory(later)
    try:
        said(memory, "Bob", "collects", "shells", when="2024-05-03T08:00:00Z")
        said(memory, "Dan", "plays_with", "Fay", when="2024-05-03T08:00:00Z")
        assert all(current(memory, "Bob collects").values())
        assert all(current(memory, "Dan plays with").values())
        with pytest.raises(InvalidInput):
            said(memory, "Dan", "plays with", "Gus", cardinality="one")
    finally:
        memory.close()


# ---- shared beliefs -------------------------------------------------------------------------


def test_the_same_text_from_a_second_agent_is_its_belief_in_the_same_observation(
    memory: Memory,
) -> None:
    [first] = memory.remember([MemoryDraft(text="The ferry leaves at 9.", agent="scout",
                                           confidence="0.9")])  # fmt: skip
    [second] = memory.remember(
        [MemoryDraft(text="The ferry  leaves at 9.", agent="driver", confidence="0.6")]
    )
    assert second.observation_id == first.observation_id
    assert second.belief_id != first.belief_id
    assert second.duplicate_of is None and second.shared_with == ["scout"]
    [again] = memory.remember([MemoryDraft(text="The ferry leaves at 9.", agent="driver")])
    assert again.duplicate_of == first.observation_id and again.belief_id == second.belief_id
    cited = memory.evidence(first.observation_id)
    assert [(b["agent"], str(b["confidence"])) for b in cited["believers"]] == [
        ("scout", "0.900000000000000000"),
        ("driver", "0.600000000000000000"),
    ]
    assert cited["believers"][0]["since"] < cited["believers"][1]["since"]
    [found] = memory.recall("ferry").results
    assert found.agents == ["scout", "driver"]
    assert set(found.belief_ids) == {first.belief_id, second.belief_id}
    assert [r.observation_id for r in memory.recall("ferry", agent="driver").results] == [
        first.observation_id
    ]
    counts = memory.stats()
    assert (counts["Observation"], counts["Belief"]) == (1, 2)


def test_a_clash_side_lists_every_agent_that_believes_it(memory: Memory) -> None:
    paris = said(memory, "Alice", "lives in", "Paris", agent="scout", text="Alice lives in Paris.")
    again = said(memory, "Alice", "lives in", "Paris", agent="driver", text="Alice lives in Paris.")
    assert again == paris
    said(memory, "Alice", "lives in", "Berlin", agent="medic")
    [clash] = clashes(memory, agent="medic", other_agent="driver")
    sides = {clash["a"]: clash["a_agents"], clash["b"]: clash["b_agents"]}
    assert sides[paris] == ["driver", "scout"]


def test_a_second_agent_changing_its_mind_leaves_the_first_agents_fact_standing(
    memory: Memory,
) -> None:
    paris = said(memory, "Alice", "lives in", "Paris", agent="scout", text="Alice lives in Paris.")
    said(memory, "Alice", "lives in", "Paris", agent="driver", text="Alice lives in Paris.")
    [done] = memory.remember(
        [
            MemoryDraft(
                text="Alice moved to Berlin.",
                agent="driver",
                observed_at="2024-06-01T08:00:00Z",
                fact=FactDraft("Alice", "lives in", "Berlin"),
            )
        ]
    )
    assert done.superseded == [] and done.conflicts == [paris]
    cited = memory.evidence(paris)
    assert [b["agent"] for b in cited["believers"]] == ["scout"]
    assert [b["agent"] for b in cited["withdrawn"]] == ["driver"]
    assert cited["valid_until"] is None


def test_a_belief_a_later_fact_withdrew_stays_in_its_agents_history(
    settings: Settings, memory: Memory
) -> None:
    """driver shared scout's Paris, then moved Alice to Berlin from June: Paris stays
    scout's, and held for driver until June, in recall, believers and citations, after a
    restart too; a later fact told to begin in the future leaves the belief held now."""
    paris = said(memory, "Alice", "lives in", "Paris", agent="scout", text="Alice lives in Paris.")
    said(memory, "Alice", "lives in", "Paris", agent="driver", text="Alice lives in Paris.")
    berlin = said(
        memory, "Alice", "lives in", "Berlin", agent="driver", valid_from="2024-06-01T00:00:00Z"
    )
    rome = said(memory, "Bob", "lives in", "Rome", agent="scout", text="Bob lives in Rome.")
    said(memory, "Bob", "lives in", "Rome", agent="driver", text="Bob lives in Rome.")
    said(memory, "Bob", "lives in", "Oslo", agent="driver", valid_from="2999-01-01T00:00:00Z")
    may, july = "2024-05-15T00:00:00Z", "2024-07-01T00:00:00Z"
    bob_now = {r.observation_id for r in memory.recall("", subject="Bob", agent="driver").results}
    assert rome in bob_now  # Oslo only begins in 2999
    for opened in (memory, None):  # None: the same memory after a restart
        if opened is None:
            memory.close()
            opened = open_memory(settings)
        try:
            in_may = opened.recall("", subject="Alice", agent="driver", as_of=may).results
            in_july = opened.recall("", subject="Alice", agent="driver", as_of=july).results
            assert [r.observation_id for r in in_may] == [paris]
            assert in_may[0].agents == ["scout", "driver"] and in_may[0].current
            assert [r.observation_id for r in in_july] == [berlin]
            scouts = opened.recall("", subject="Alice", agent="scout", as_of=july).results
            assert [r.observation_id for r in scouts] == [paris]
            assert scouts[0].agents == ["scout"]
            [withdrawn] = opened.evidence(paris)["withdrawn"]
            assert withdrawn["agent"] == "driver"
            assert withdrawn["held_until"].isoformat().startswith("2024-06-01")
            # Known before driver's Berlin was told, Paris was driver's in July too.
            told = opened.evidence(berlin)["recorded_at"]
            for known, want in ((told - timedelta(microseconds=1), paris), (told, berlin)):
                asked = opened.recall(
                    "", subject="Alice", agent="driver", as_of=july, known_at=known
                )
                assert [r.observation_id for r in asked.results] == [want]
        finally:
            if opened is not memory:
                opened.close()


@pytest.mark.parametrize("until", [None, "2024-01-05T00:00:00Z"])
def test_a_fact_repeated_after_a_later_one_withdrew_its_shared_belief_is_a_duplicate(
    settings: Settings, memory: Memory, until: str | None
) -> None:
    """b told Paris, a shared it, b's Berlin withdrew b's belief; b's same call again (a
    retry) is the memory b has, as it is when nobody shares it: it made a second Paris that
    b held beside the first. In one batch too."""
    ends = {} if until is None else {"valid_until": until}

    def paris(agent: str) -> MemoryDraft:
        fact = FactDraft("Alice", "lives in", "Paris", valid_from="2024-01-02T00:00:00Z", **ends)
        return MemoryDraft(text="Alice lives in Paris.", agent=agent, fact=fact)

    berlin = MemoryDraft(
        text="Alice lives in Berlin.",
        agent="b",
        fact=FactDraft("Alice", "lives in", "Berlin", valid_from="2024-01-03T00:00:00Z"),
    )
    [first] = memory.remember([paris("b")])
    memory.remember([paris("a")])
    memory.remember([berlin])
    [again] = memory.remember([paris("b")])
    assert again.duplicate_of == first.observation_id
    assert again.belief_id == first.belief_id
    [withdrawn] = memory.evidence(first.observation_id)["withdrawn"]
    assert withdrawn["agent"] == "b"
    held = memory.recall("", subject="Alice", agent="b", as_of="2024-01-02T12:00:00Z").results
    assert [r.observation_id for r in held] == [first.observation_id]
    subject = {"subject": "Carol"}  # the same, told in one batch
    batch = [
        MemoryDraft(
            text=d.text.replace("Alice", "Carol"),
            agent=d.agent,
            fact=FactDraft(**{**vars(d.fact), **subject}),
        )
        for d in (paris("b"), paris("a"), berlin, paris("b"))
    ]
    told = memory.remember(batch)
    assert told[3].duplicate_of == told[0].observation_id


@pytest.mark.parametrize("shared", [False, True])
@pytest.mark.parametrize(
    ("late", "forgets", "again_from", "duplicate"),
    [
        # Rome from March, told late, ends Paris for driver in March: Paris from June is new.
        ([("Berlin", "2030-01-01"), ("Rome", "2024-03-01")], False, "2024-06-01", False),
        # Berlin from June forgotten, Oslo from September: Paris holds for driver in July.
        ([("Berlin", "2024-06-01"), ("Oslo", "2024-09-01")], True, "2024-07-01", True),
    ],
)
def test_a_repeat_is_a_duplicate_while_the_belief_holds_as_its_agents_facts_now_end_it(
    memory: Memory,
    shared: bool,
    late: list[tuple[str, str]],
    forgets: bool,
    again_from: str,
    duplicate: bool,
) -> None:
    """Shared or not, driver's Paris told again is the memory it has exactly while Paris
    holds for driver then, as driver's facts end it now (not where the fact that withdrew
    the shared belief first ended it)."""

    def lives(city: str, since: str, agent: str = "driver") -> Any:
        fact = FactDraft("Alice", "lives in", city, valid_from=f"{since}T00:00:00Z")
        text = f"Alice lives in {city}."
        [done] = memory.remember([MemoryDraft(text=text, agent=agent, fact=fact)])
        return done

    if shared:
        lives("Paris", "2024-01-01", agent="scout")
    first = lives("Paris", "2024-01-01")
    later = [lives(city, since) for city, since in late]
    if forgets:
        memory.forget(later[0].observation_id)
    again = lives("Paris", again_from)
    assert (again.duplicate_of == first.observation_id) is duplicate
    assert (again.observation_id == first.observation_id) is duplicate


def test_a_belief_held_until_a_later_fact_begins_is_listed_unsupported_till_then(
    memory: Memory,
) -> None:
    """driver's Berlin from 2999 leaves the Paris it shares with scout driver's now (recall
    says so): unsupported left it out, as if withdrawn outright."""
    said(memory, "Alice", "lives in", "Paris", agent="scout", text="Alice lives in Paris.")
    said(memory, "Alice", "lives in", "Paris", agent="driver", text="Alice lives in Paris.")
    said(memory, "Alice", "lives in", "Berlin", agent="driver", valid_from="2999-01-01T00:00:00Z")
    lisbon = said(memory, "Bob", "lives in", "Lisbon", agent="scout", text="Bob in Lisbon.")
    said(memory, "Bob", "lives in", "Lisbon", agent="driver", text="Bob in Lisbon.")
    said(memory, "Bob", "lives in", "Porto", agent="driver", valid_from="2024-06-01T00:00:00Z")
    texts = [u["text"] for u in memory.unsupported("driver")["unsupported"]]
    assert "Alice lives in Paris." in texts and "Bob in Lisbon." not in texts
    assert lisbon in [r.observation_id for r in memory.recall("", subject="Bob").results]


def test_a_forget_of_a_belief_held_until_a_later_fact_keeps_the_history_known_before_it(
    settings: Settings, memory: Memory
) -> None:
    """ann shared bob's Paris from January and told Rome from March, then forgot Paris: she
    holds nothing in February now, but as known before the forget she held Paris then (the
    forget had erased that history from every view), after a restart too."""
    paris = said(memory, "Kim", "lives in", "Paris", agent="bob", valid_from="2024-01-01")
    said(memory, "Kim", "lives in", "Paris", agent="ann", valid_from="2024-01-01")
    said(memory, "Kim", "lives in", "Rome", agent="ann", valid_from="2024-03-01")
    [gone] = memory.evidence(paris)["withdrawn"]
    known = gone["retracted_at"] + timedelta(microseconds=1)
    memory.forget(paris, agent="ann")
    february = "2024-02-01T00:00:00Z"
    for opened in (memory, None):  # None: the same memory after a restart
        if opened is None:
            memory.close()
            opened = open_memory(settings)
        try:
            then = opened.recall("", subject="Kim", agent="ann", as_of=february, known_at=known)
            now = opened.recall("", subject="Kim", agent="ann", as_of=february)
            assert [r.observation_id for r in then.results] == [paris]
            assert now.results == []
            [then] = opened.evidence(paris, known)["withdrawn"]
            assert then["held_until"] is not None and then["forgotten_at"] is None
            assert opened.evidence(paris)["withdrawn"][0]["held_until"] is None
        finally:
            if opened is not memory:
                opened.close()


def test_a_belief_a_forget_gives_back_keeps_its_evidence(memory: Memory) -> None:
    """driver's belief in the Paris it shares with scout had a doorbell for evidence; Berlin
    withdrew it and was forgotten: the belief given back (a new one) was unsupported."""
    paris = said(memory, "Alice", "lives in", "Paris", agent="scout", text="Alice lives in Paris.")
    [shared] = memory.remember(
        [
            MemoryDraft(
                text="Alice lives in Paris.",
                agent="driver",
                observed_at="2024-05-01T08:00:00Z",
                fact=FactDraft("Alice", "lives in", "Paris"),
            )
        ]
    )
    [bell] = memory.remember(
        [
            MemoryDraft(
                text="Alice's name is on a Paris doorbell.",
                agent="driver",
                supports=[SupportDraft(shared.belief_id, "0.8")],
            )
        ]
    )
    before = memory.evidence(bell.observation_id)["recorded_at"]
    berlin = said(memory, "Alice", "lives in", "Berlin", agent="driver", valid_from="2024-06-01")
    withdrawn = memory.evidence(berlin)["recorded_at"]
    memory.forget(berlin)
    # As known before the forget, the evidence was the withdrawn belief's (the new one was not).
    for known in (before, withdrawn):
        [then] = memory.evidence(paris, known)["evidence"]
        assert then["belief_id"] == shared.belief_id
        [given] = memory.evidence(bell.observation_id, known)["supports"]
        assert given["belief_id"] == shared.belief_id
    texts = [u["text"] for u in memory.unsupported("driver")["unsupported"]]
    assert "Alice lives in Paris." not in texts
    assert "Alice lives in Paris." not in [
        u["text"] for u in memory.unsupported("driver", before)["unsupported"]
    ]
    cited = memory.evidence(paris)
    assert [e["observation_id"] for e in cited["evidence"]] == [bell.observation_id]
    [given] = memory.evidence(bell.observation_id)["supports"]
    assert given["belief_id"] != shared.belief_id and given["agent"] == "driver"


def shared_paris(memory: Memory, **more: Any) -> tuple[str, Remembered]:
    """scout's Paris since January, and driver's belief in it (driver's own ``more``)."""
    jan = "2024-01-01T00:00:00Z"
    paris = said(memory, "Alice", "lives in", "Paris", agent="scout", when=jan)
    fact = FactDraft("Alice", "lives in", "Paris")
    draft = MemoryDraft(text="Alice lives in Paris.", agent="driver", observed_at=jan, fact=fact)
    [shared] = memory.remember([replace(draft, **more)])
    assert shared.observation_id == paris
    return paris, shared


def test_a_belief_given_back_stands_alone_for_its_agent(settings: Settings, memory: Memory) -> None:
    """Given back by a forget, driver's belief in Paris was listed beside the withdrawn one
    it replaced (two belief ids, two withdrawn entries for one claim); views before the
    forget keep the withdrawn one alone."""
    paris, shared = shared_paris(memory)
    berlin = said(memory, "Alice", "lives in", "Berlin", agent="driver", valid_from="2024-06-01")
    before = memory.evidence(berlin)["recorded_at"]
    memory.forget(berlin)
    for opened in (memory, None):  # None: the same memory after a restart
        if opened is None:
            memory.close()
            opened = open_memory(settings)
        try:
            [found] = opened.recall("", subject="Alice", agent="driver").results
            scouts, given = found.belief_ids
            assert given != shared.belief_id
            cited = opened.evidence(paris)
            assert [b["belief_id"] for b in cited["believers"]] == [scouts, given]
            assert [w["held_until"] for w in cited["withdrawn"]] == [None]  # holds no more
            [then] = opened.recall(
                "", subject="Alice", agent="driver", as_of="2024-03-01", known_at=before
            ).results
            assert then.belief_ids == [scouts, shared.belief_id]
            [withdrawn] = opened.evidence(paris, before)["withdrawn"]
            assert withdrawn["belief_id"] == shared.belief_id
        finally:
            if opened is not memory:
                opened.close()


def test_forgetting_the_fact_that_withdrew_a_belief_gives_it_back(
    settings: Settings, memory: Memory
) -> None:
    """driver shared scout's Paris since January and told Berlin from May, then Oslo from
    July; Rome from March is told late. Rome ends Paris for driver in March; forgetting Rome
    and Berlin lets Paris hold for driver until July; forgetting Oslo too gives the belief
    back, with driver's own confidence, after a restart too; earlier record times keep what
    they held."""
    paris, shared = shared_paris(memory, confidence="0.4")
    assert shared.observation_id == paris
    berlin = said(
        memory, "Alice", "lives in", "Berlin", agent="driver", when="2024-05-01T00:00:00Z"
    )
    oslo = said(memory, "Alice", "lives in", "Oslo", agent="driver", when="2024-07-01T00:00:00Z")
    rome = said(memory, "Alice", "lives in", "Rome", agent="driver", when="2024-03-01T00:00:00Z")

    def drivers(opened: Memory, when: str, **clock: Any) -> list[str]:
        found = opened.recall("", subject="Alice", agent="driver", as_of=when, **clock)
        return [r.observation_id for r in found.results]

    assert drivers(memory, "2024-02-01") == [paris]
    assert drivers(memory, "2024-04-01") == [rome]  # told late, it ends Paris for driver
    memory.forget(rome)
    memory.forget(berlin)
    assert drivers(memory, "2024-06-01") == [paris]
    assert drivers(memory, "2024-08-01") == [oslo]
    assert [b["agent"] for b in memory.evidence(paris)["believers"]] == ["scout"]
    before = memory.evidence(oslo)["recorded_at"]
    memory.forget(oslo)
    memory.close()
    reopened = open_memory(settings)
    try:
        [found] = reopened.recall("", subject="Alice", agent="driver").results
        assert found.observation_id == paris and found.confidence == Decimal("0.4")
        assert found.agents == ["scout", "driver"]
        cited = reopened.evidence(paris)
        assert [b["agent"] for b in cited["believers"]] == ["scout", "driver"]
        assert drivers(reopened, "2024-08-01", known_at=before) == [oslo]
    finally:
        reopened.close()


def test_forgetting_a_fact_a_later_one_withdrew_takes_back_its_history_too(
    settings: Settings, memory: Memory
) -> None:
    """scout told Oslo from February, driver shared it in July, and scout's Rome from June,
    told after, withdrew scout's belief (Oslo held for scout until June). scout forgetting
    Oslo takes that history back, as if scout had never told it; driver keeps Oslo, and a
    retried forget changes nothing, after a restart too."""
    oslo = said(memory, "Alice", "lives in", "Oslo", agent="scout", when="2024-02-01T00:00:00Z")
    said(memory, "Alice", "lives in", "Oslo", agent="driver", when="2024-07-01T00:00:00Z")
    rome = said(memory, "Alice", "lives in", "Rome", agent="scout", when="2024-06-01T00:00:00Z")

    def held(opened: Memory, agent: str, when: str) -> list[str]:
        found = opened.recall("", subject="Alice", agent=agent, as_of=when).results
        return [r.observation_id for r in found if r.current]

    assert held(memory, "scout", "2024-03-01") == [oslo]
    done = memory.forget(oslo, agent="scout")
    assert (done.already, done.kept_for) == (False, ["driver"])
    assert memory.forget(oslo, agent="scout").already is True
    memory.close()
    reopened = open_memory(settings)
    try:
        assert held(reopened, "scout", "2024-03-01") == []
        assert held(reopened, "scout", "2024-08-01") == [rome]
        assert held(reopened, "driver", "2024-08-01") == [oslo]
        assert reopened.forget(oslo, agent="scout").already is True
    finally:
        reopened.close()


def test_a_purge_alone_is_refused_while_another_agent_holds_the_observation(
    memory: Memory,
) -> None:
    """Checked by the store under its write lock (a token's purge tool checked first and
    purged after, so a share landing between took the other agent's belief with it): driver
    believing Oslo, or holding it until a later fact of its own, refuses scout's purge
    ``alone`` and nothing is written; without ``alone`` (an admin) it is purged."""
    feb = "2024-02-01T00:00:00Z"
    oslo = said(memory, "Alice", "lives in", "Oslo", agent="scout", when=feb)
    assert said(memory, "Alice", "lives in", "Oslo", agent="driver", when=feb) == oslo
    with pytest.raises(InvalidInput) as refused:
        memory.forget(oslo, "purge", agent="scout", alone=True)
    assert refused.value.field == "mode"
    assert f"deletes {oslo!r} for every agent, and 'driver' believes it too" in str(refused.value)
    # Withdrawn for driver by its Rome from June: driver still holds Oslo until then.
    said(memory, "Alice", "lives in", "Rome", agent="driver", when="2024-06-01T00:00:00Z")
    with pytest.raises(InvalidInput, match="'driver' believes it too"):
        memory.forget(oslo, "purge", agent="scout", alone=True)
    assert [b["agent"] for b in memory.evidence(oslo)["believers"]] == ["scout"]
    assert memory.forget(oslo, "purge", agent="scout").mode == "purge"
    found = memory.recall("", subject="Alice", include_superseded=True).results
    assert oslo not in [r.observation_id for r in found] and found


def test_the_last_believer_forgetting_leaves_the_fact_to_those_it_held_for_until_later(
    settings: Settings, memory: Memory
) -> None:
    """scout and driver told Oslo from February (one observation); scout's Rome from June
    withdrew scout's belief. driver, its last believer, forgetting Oslo leaves it scout's
    until June (ended there by Rome), as if driver had never told it, after a restart too;
    not retracted, which took scout's history of it too."""
    feb = "2024-02-01T00:00:00Z"
    oslo = said(memory, "Alice", "lives in", "Oslo", agent="scout", when=feb)
    assert said(memory, "Alice", "lives in", "Oslo", agent="driver", when=feb) == oslo
    rome = said(memory, "Alice", "lives in", "Rome", agent="scout", when="2024-06-01T00:00:00Z")
    done = memory.forget(oslo, agent="driver")
    assert (done.already, done.kept_for) == (False, ["scout"])
    memory.close()
    reopened = open_memory(settings)
    try:

        def held(agent: str, when: str) -> list[str]:
            found = reopened.recall("", subject="Alice", agent=agent, as_of=when).results
            return [r.observation_id for r in found if r.current]

        assert held("scout", "2024-03-01") == [oslo]
        assert held("scout", "2024-07-01") == [rome]
        assert held("driver", "2024-03-01") == []
        cited = reopened.evidence(oslo)
        assert [b["agent"] for b in cited["believers"]] == ["scout"]
        assert cited["superseded_by"] == [rome]
        assert reopened.forget(oslo, agent="driver").already is True
    finally:
        reopened.close()


def test_a_withdrawn_belief_keeps_ending_its_agents_older_fact_when_another_forgets(
    memory: Memory,
) -> None:
    """scout: Paris from January, Berlin from February (ending Paris), shared by driver
    and pilot, then Oslo from March (scout's belief in Berlin held until then). pilot
    forgetting Berlin leaves Paris ended for scout: Berlin still held for it in February."""
    paris = said(memory, "Alice", "lives in", "Paris", when="2024-01-01T00:00:00Z")
    feb = "2024-02-01T00:00:00Z"
    berlin = said(memory, "Alice", "lives in", "Berlin", when=feb)
    for agent in ("driver", "pilot"):
        assert said(memory, "Alice", "lives in", "Berlin", agent=agent, when=feb) == berlin
    said(memory, "Alice", "lives in", "Oslo", when="2024-03-01T00:00:00Z")
    memory.forget(berlin, agent="pilot")
    found = memory.recall("", subject="Alice", agent="scout", as_of="2024-02-15").results
    assert [r.observation_id for r in found if r.current] == [berlin]
    assert memory.evidence(paris)["superseded_by"] == [berlin]


def alices(memory: Memory, when: str) -> list[str]:
    """The ids of scout's facts about Alice current at ``when``."""
    found = memory.recall("", subject="Alice", agent="scout", as_of=when).results
    return [r.observation_id for r in found if r.current]


def test_a_fact_a_forget_reopens_ends_where_its_agent_told_it_again(memory: Memory) -> None:
    """Paris from January, Rome from May, Paris again from September (a new observation:
    the first had ended). Forgetting Rome reopens the first Paris until the second begins:
    one Paris at a time, as if Rome had never been told (the second Paris would have been
    the first told again); forgetting the second Paris too leaves the first current."""
    paris = said(memory, "Alice", "lives in", "Paris", when="2024-01-01T00:00:00Z")
    rome = said(memory, "Alice", "lives in", "Rome", when="2024-05-01T00:00:00Z")
    again = said(memory, "Alice", "lives in", "Paris", when="2024-09-01T00:00:00Z")
    assert again != paris

    memory.forget(rome)
    assert alices(memory, "2024-06-01") == [paris]
    assert alices(memory, "2024-10-01") == [again]
    memory.forget(again)
    assert alices(memory, "2024-10-01") == [paris]


def test_a_value_told_late_before_the_same_value_holds_until_that_one_begins(
    memory: Memory,
) -> None:
    """Paris from September, then Paris from January told late (a new observation: the
    first began later): the late one holds until September and the first from then, one
    Paris at a time; forgetting the September one leaves the January one current."""
    september = said(memory, "Alice", "lives in", "Paris", when="2024-09-01T00:00:00Z")
    january = said(memory, "Alice", "lives in", "Paris", when="2024-01-01T00:00:00Z")
    assert january != september

    assert alices(memory, "2024-03-01") == [january]
    assert alices(memory, "2024-10-01") == [september]
    memory.forget(september)
    assert alices(memory, "2024-10-01") == [january]


def test_an_agents_own_confidence_is_the_one_it_held_at_known_at(memory: Memory) -> None:
    [first] = memory.remember(
        [MemoryDraft(text="The harvest was small.", agent="driver", confidence="0.3")]
    )
    memory.remember([MemoryDraft(text="The harvest was small.", agent="scout", confidence="0.9")])
    then = memory.evidence(first.observation_id)["believers"][-1]["since"]
    memory.forget(first.observation_id, agent="scout")
    found = memory.recall("", agent="scout", min_confidence="0.8", known_at=then).results
    assert [(r.observation_id, r.confidence) for r in found] == [
        (first.observation_id, Decimal("0.9"))
    ]


def test_without_an_agent_a_shared_fact_shows_the_confidence_of_its_first_believer_left(
    memory: Memory,
) -> None:
    # driver told Paris at 0.3, scout shared it at 0.9, then driver forgot it: recall showed
    # (and min_confidence filtered by) driver's 0.3 though only scout's 0.9 held it.
    paris = alice_in(memory, "Paris", "driver", "0.3")
    alice_in(memory, "Paris", "scout", "0.9")
    alice_in(memory, "Rome", "carol", "0.5")
    then = memory.evidence(paris)["believers"][-1]["since"]
    memory.forget(paris, agent="driver")

    def shown(**asked: Any) -> dict[str, Decimal]:
        found = memory.recall("", subject="Alice", **asked).results
        return {r.observation_id: r.confidence for r in found}

    assert shown()[paris] == Decimal("0.9")
    assert list(shown(min_confidence="0.8")) == [paris]
    assert next(iter(shown(order_by="confidence"))) == paris
    # As the memory held it before the forget: driver's, first, and not above 0.8.
    assert shown(known_at=then)[paris] == Decimal("0.3")
    assert paris not in shown(known_at=then, min_confidence="0.8")
    # The better supported value first: scout's 0.9 over carol's Rome at 0.5.
    lives = memory.about("Alice")["facts"]["lives_in"]
    assert [(v["object"], v["confidence"]) for v in lives] == [
        ("Paris", Decimal("0.9")),
        ("Rome", Decimal("0.5")),
    ]
    [clash] = clashes(memory)
    side = "a" if clash["a"] == paris else "b"
    assert clash[f"{side}_confidence"] == Decimal("0.9")
    [fact] = [f for f in memory.picture().facts if f.id == paris]
    assert fact.confidence == "0.9"


def test_find_conflicts_with_an_agent_shows_its_own_confidence_on_its_side(
    memory: Memory,
) -> None:
    # driver shares scout's Paris at 0.5; carol's Rome clashes. Asked for driver's conflicts,
    # the Paris side showed scout's 0.9, as recall with agent="driver" does not.
    paris = alice_in(memory, "Paris", "scout", "0.9")
    alice_in(memory, "Paris", "driver", "0.5")
    alice_in(memory, "Rome", "carol", "0.6")

    def paris_side(**asked: Any) -> Decimal:
        [clash] = clashes(memory, **asked)
        side = "a" if clash["a"] == paris else "b"
        confidence: Decimal = clash[f"{side}_confidence"]
        return confidence

    assert paris_side(agent="driver") == Decimal("0.5")
    assert paris_side(agent="scout") == paris_side() == Decimal("0.9")
    assert paris_side(agent="carol") == Decimal("0.9")  # not carol's side: as without agent


def test_a_shared_fact_its_first_believer_moved_on_from_shows_the_others_confidence(
    memory: Memory,
) -> None:
    # scout told Paris at 0.4, driver shared it at 0.8, scout told Berlin from June: from
    # June the fact is driver's alone, before then scout's too (the first believer).
    paris = alice_in(memory, "Paris", "scout", "0.4", "2024-01-01T00:00:00Z")
    alice_in(memory, "Paris", "driver", "0.8")
    alice_in(memory, "Berlin", "scout", "0.6", "2024-06-01T00:00:00Z")

    def paris_shows(as_of: str | None = None) -> Decimal:
        found = memory.recall("", subject="Alice", as_of=as_of).results
        return next(r.confidence for r in found if r.observation_id == paris)

    assert paris_shows() == Decimal("0.8")
    assert paris_shows("2024-03-01T00:00:00Z") == Decimal("0.4")


def test_beliefs_taken_in_one_write_show_the_observations_own_confidence_first(
    memory: Memory,
) -> None:
    # scout (0.4) and driver (0.8) told Paris in one batch; scout moved to Berlin from June.
    # Before June, and as the memory held it then, the fact showed driver's 0.8 (the two
    # beliefs began together and the later one won), though recall then showed 0.4.
    fact = FactDraft("Alice", "lives in", "Paris", valid_from="2024-01-01T00:00:00Z")
    told = [
        MemoryDraft("Alice lives in Paris.", agent=a, confidence=c, fact=fact)
        for a, c in (("scout", "0.4"), ("driver", "0.8"))
    ]
    [paris, _] = memory.remember(told, batch=True)
    then = memory.evidence(paris.observation_id)["believers"][0]["since"]
    berlin = FactDraft("Alice", "lives in", "Berlin", valid_from="2024-06-01T00:00:00Z")
    memory.remember([MemoryDraft("Alice moved to Berlin.", agent="scout", fact=berlin)])

    def shown(**asked: Any) -> Decimal:
        found = memory.recall("", subject="Alice", include_superseded=True, **asked).results
        return next(r.confidence for r in found if r.observation_id == paris.observation_id)

    assert shown(as_of="2024-03-01T00:00:00Z") == Decimal("0.4")
    assert shown(known_at=then) == Decimal("0.4")
    assert shown() == Decimal("0.8")


def test_forgetting_by_one_of_two_believers_withdraws_only_its_belief(
    settings: Settings, memory: Memory
) -> None:
    [first] = memory.remember([MemoryDraft(text="Gulls nest on the pier.", agent="scout")])
    [second] = memory.remember([MemoryDraft(text="Gulls nest on the pier.", agent="driver")])
    done = memory.forget(first.observation_id, agent="driver")
    assert (done.belief_ids, done.already, done.kept_for) == ([second.belief_id], False, ["scout"])
    assert memory.forget(first.observation_id, agent="driver").already is True
    [found] = memory.recall("gulls").results
    assert found.agents == ["scout"] and found.belief_ids == [first.belief_id]
    assert memory.recall("gulls", agent="driver").results == []
    cited = memory.evidence(first.observation_id)
    assert [b["agent"] for b in cited["believers"]] == ["scout"]
    [withdrawn] = cited["withdrawn"]
    assert withdrawn["agent"] == "driver" and withdrawn["retracted_at"] is not None
    # Driver may come to believe it again: a new belief.
    memory.close()
    reopened = open_memory(settings)
    try:
        [found] = reopened.recall("gulls").results
        assert found.agents == ["scout"]
        assert reopened.forget(first.observation_id, agent="driver").already is True
        # The last believer's forget retracts the observation itself.
        gone = reopened.forget(first.observation_id, agent="scout")
        assert gone.kept_for == [] and reopened.recall("gulls").results == []
    finally:
        reopened.close()


# ---- provenance after a retraction ----------------------------------------------------------


def test_retracting_the_newer_fact_leaves_no_trace_of_it_as_a_superseder(memory: Memory) -> None:
    paris = said(memory, "Alice", "lives in", "Paris", when="2024-05-01T08:00:00Z")
    berlin = said(memory, "Alice", "lives in", "Berlin", when="2024-05-02T08:00:00Z")
    assert memory.evidence(paris)["superseded_by"] == [berlin]
    memory.forget(berlin)
    cited = memory.evidence(paris)
    assert cited["superseded_by"] == []
    assert cited["valid_until"] is None
    [found] = memory.recall("Alice lives in").results
    assert found.observation_id == paris and found.current and found.superseded_by == []
    chain = {c["observation_id"]: c for c in cited["supersession_chain"]}
    assert chain[berlin]["retracted_at"] is not None


def _held_at(memory: Memory, when: str) -> list[str]:
    """The objects of the project's current `uses_database` facts at valid time ``when``."""
    facts = memory.about("project", as_of=when)["facts"].get("uses_database", [])
    return [f["object"] for f in facts]


def test_a_fact_given_no_time_begins_when_its_words_place_it(memory: Memory) -> None:
    """ "We moved to SQLite in March", told in May: from 1 March (from May, as_of April
    answered Postgres while its `happened` said March). Told again, it is a repeat."""
    said(memory, "project", "uses database", "Postgres", when="2026-01-10T09:00:00Z")
    moved = said(
        memory,
        "project",
        "uses database",
        "SQLite",
        when="2026-05-10T09:00:00Z",
        text="We moved to SQLite in March.",
    )
    assert _held_at(memory, "2026-02-15T00:00:00Z") == ["Postgres"]
    assert _held_at(memory, "2026-04-01T00:00:00Z") == ["SQLite"]
    [entry] = memory.about("project", as_of="2026-04-01T00:00:00Z")["facts"]["uses_database"]
    assert entry["since"].isoformat() == "2026-03-01T00:00:00+00:00"
    [again] = memory.remember(
        [
            MemoryDraft(
                text="We moved to SQLite in March.",
                agent="scout",
                observed_at="2026-05-11T09:00:00Z",
                fact=FactDraft("project", "uses database", "SQLite"),
            )
        ]
    )
    assert again.duplicate_of == moved


def test_a_start_read_from_words_is_that_day_on_the_clock_they_were_told_on(
    tmp_path: Path,
) -> None:
    """Told at -07:00, "in March" begins at midnight on 1 March on that clock (07:00 UTC),
    as the words' days are that clock's and an end read from words is; it began at midnight
    UTC, so on the evening of 28 February there the move had already happened. Told with no
    time, the memory's zone is the clock, at the offset it has on that day (winter time)."""
    memory = open_memory(hash_settings(tmp_path / "m", timezone="America/Los_Angeles"))
    try:
        said(
            memory,
            "project",
            "uses database",
            "SQLite",
            when="2026-05-10T09:00:00-07:00",
            text="We moved to SQLite in March.",
        )
        assert _held_at(memory, "2026-03-01T06:00:00Z") == []  # 23:00 on 28 February there
        [entry] = memory.about("project", as_of="2026-03-01T07:00:00Z")["facts"]["uses_database"]
        assert entry["since"].isoformat() == "2026-03-01T07:00:00+00:00"
        # Told with no time, on the memory's clock: its zone's midnight too.
        memory.remember(
            [
                MemoryDraft(
                    text="We moved to Postgres in February 2026.",
                    agent="scout",
                    fact=FactDraft("team", "uses database", "Postgres"),
                )
            ]
        )
        [team] = memory.about("team", as_of="2026-02-15T00:00:00Z")["facts"]["uses_database"]
        assert team["since"].isoformat() == "2026-02-01T08:00:00+00:00"
    finally:
        memory.close()


def test_a_start_at_the_calendars_first_day_told_east_of_utc_is_that_day_in_utc(
    memory: Memory,
) -> None:
    """Midnight of 1 January of year 1 at +08:00 is before the first day UTC can hold (the
    call failed, "date value out of range"): it begins then, as if told in UTC."""
    said(
        memory,
        "project",
        "uses database",
        "SQLite",
        when="2026-05-10T09:00:00+08:00",
        text="We moved to SQLite on 1 January 0001.",
    )
    [entry] = memory.about("project")["facts"]["uses_database"]
    assert entry["since"].isoformat() == "0001-01-01T00:00:00+00:00"


def test_words_told_now_in_the_machines_zone_are_read_at_its_offset_on_their_day(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Told now (21 October, summer time) to a memory whose zone is the machine's (``local``,
    here Berlin's): "in March" began at midnight there in winter time, and "until Monday"
    (the 26th, after the clocks went back) ends at that Tuesday's midnight in winter time,
    as for a zone named (a fixed offset, summer's, was an hour out both ways)."""
    monkeypatch.setattr(drafts, "utc_now", lambda: datetime(2026, 10, 21, 10, tzinfo=UTC))
    monkeypatch.setenv("TZ", "Europe/Berlin")
    time.tzset()
    try:
        told = [
            validate(MemoryDraft(text, fact=FactDraft(*fact)), "scout", "local").fact
            for text, fact in [
                ("Sam is in Berlin until Monday.", ("Sam", "located in", "Berlin")),
                ("We moved to SQLite in March.", ("project", "uses database", "SQLite")),
            ]
        ]
    finally:
        monkeypatch.undo()
        time.tzset()
    [until, since] = told
    assert until is not None and until.valid_until == datetime(2026, 10, 26, 23, tzinfo=UTC)
    assert since is not None and since.valid_from == datetime(2026, 2, 28, 23, tzinfo=UTC)


@pytest.mark.parametrize(
    "text", ["In March, we moved to SQLite.", "Tests were slow. Since March, we have used SQLite."]
)
def test_a_time_opening_the_sentence_before_its_comma_begins_the_fact(
    memory: Memory, text: str
) -> None:
    """A time that opens its sentence is the clause's, its comma no break: "Since 2019, Bob
    has worked at Acme" began in 2019, not when told."""
    said(memory, "project", "uses database", "Postgres", when="2026-01-10T09:00:00Z")
    said(memory, "project", "uses database", "SQLite", when="2026-05-10T09:00:00Z", text=text)
    assert _held_at(memory, "2026-04-01T00:00:00Z") == ["SQLite"]


@pytest.mark.parametrize(
    "postgres",
    [
        {"valid_from": "2026-01-05T00:00:00Z"},
        {"text": "We moved to Postgres in January."},
    ],
)
def test_a_fact_whose_words_place_it_before_what_is_held_is_news_not_history(
    memory: Memory, postgres: dict[str, Any]
) -> None:
    """Told in May that the move was in December, while Postgres holds from January (given,
    or placed so by its words): the newer telling wins from when it is told, as a fact given
    no time (the words' December would have made it history that Postgres ended)."""
    said(memory, "project", "uses database", "Postgres", when="2026-01-10T09:00:00Z", **postgres)
    said(
        memory,
        "project",
        "uses database",
        "SQLite",
        when="2026-05-10T09:00:00Z",
        text="We moved to SQLite in December.",
    )
    assert _held_at(memory, "2026-06-01T00:00:00Z") == ["SQLite"]
    assert _held_at(memory, "2026-04-01T00:00:00Z") == ["Postgres"]


@pytest.mark.parametrize(
    "text",
    [
        "We move to SQLite next Monday.",  # a time to come: a plan may be put off
        "We left Oracle in 2019 and moved to SQLite in March.",  # which time it began at?
        "We use SQLite.",  # no time at all
        # A time told of something else: another sentence, clause or line.
        "We use SQLite. Ana joined the team in March.",
        "The team, formed in March, uses SQLite.",
        "In March, Ana joined and we moved to SQLite.",
        "In March, Ana joined. We use SQLite.",
        "Tests, in March, were slow with SQLite.",
        "We hired Ana in March and use SQLite.",
        "We moved to SQLite\nin March.",
        # Letters that casefold to two ("ß" is "ss") before both: where the two were found
        # in the folded text is not where they stand in the text.
        "Weiß, Strauß, Groß and Roß: we use SQLite. In March the office closed.",
    ],
)
def test_a_fact_whose_words_give_no_one_past_time_begins_when_told(
    memory: Memory, text: str
) -> None:
    said(memory, "project", "uses database", "Postgres", when="2026-01-10T09:00:00Z")
    said(memory, "project", "uses database", "SQLite", when="2026-05-10T09:00:00Z", text=text)
    assert _held_at(memory, "2026-05-01T00:00:00Z") == ["Postgres"]
    assert _held_at(memory, "2026-05-11T00:00:00Z") == ["SQLite"]


def test_another_agents_later_fact_leaves_the_words_time_to_this_agents_fact(
    memory: Memory,
) -> None:
    """Only the agent's own facts make its words' time news from when it is told (it
    supersedes only its own): another agent's MySQL from April left scout's SQLite, moved to
    in March, beginning in May, and scout's Postgres held in April."""
    said(memory, "project", "uses database", "Postgres", when="2026-01-10T09:00:00Z")
    said(memory, "project", "uses database", "MySQL", agent="other", when="2026-04-10T09:00:00Z")
    said(
        memory,
        "project",
        "uses database",
        "SQLite",
        when="2026-05-10T09:00:00Z",
        text="We moved to SQLite in March.",
    )
    assert _held_at(memory, "2026-04-01T00:00:00Z") == ["SQLite"]


def _sister_in(memory: Memory, as_of: str) -> list[str]:
    """The objects of the sister's current `lives_in` facts at valid time ``as_of``."""
    facts = memory.about("sister", as_of=as_of)["facts"].get("lives_in", [])
    return [f["object"] for f in facts]


def test_a_fact_placed_before_one_begun_only_when_told_holds_from_its_words(
    memory: Memory,
) -> None:
    """Porto, told on 1 June with no time, began only when told; "My sister moved to Lisbon
    in March", told on 10 June, holds from 1 March and Porto, stale when told, never held in
    valid time as known now (it began 10 June before: news, as if Porto had begun on 1
    June). What the memory believed on 5 June is still Porto."""
    porto = said(memory, "sister", "lives in", "Porto", when="2026-06-01T09:00:00Z")
    believed = iso(utc_now())
    [lisbon] = memory.remember(
        [
            MemoryDraft(
                text="My sister moved to Lisbon in March.",
                agent="scout",
                observed_at="2026-06-10T09:00:00Z",
                fact=FactDraft("sister", "lives in", "Lisbon"),
            )
        ]
    )
    assert lisbon.superseded == [porto] and lisbon.superseded_by == []
    for as_of in ("2026-04-15T00:00:00Z", "2026-06-05T00:00:00Z", "2026-06-11T00:00:00Z"):
        assert _sister_in(memory, as_of) == ["Lisbon"], as_of
    [entry] = memory.about("sister", as_of="2026-06-05T00:00:00Z")["facts"]["lives_in"]
    assert entry["since"].isoformat() == "2026-03-01T00:00:00+00:00"
    # What was believed before Lisbon was told: Porto, from when it was told.
    then = memory.about("sister", as_of="2026-06-05T00:00:00Z", known_at=believed)
    assert [f["object"] for f in then["facts"]["lives_in"]] == ["Porto"]
    # Porto never held: it ends no fact told late ("moved to Faro in April" holds on).
    said(
        memory,
        "sister",
        "lives in",
        "Faro",
        when="2026-06-12T09:00:00Z",
        text="My sister moved to Faro in April.",
    )
    assert _sister_in(memory, "2026-03-15T00:00:00Z") == ["Lisbon"]
    assert _sister_in(memory, "2026-06-05T00:00:00Z") == ["Faro"]


@pytest.mark.parametrize(
    "porto",
    [
        {"valid_from": "2026-04-01T00:00:00Z"},
        {"text": "My sister moved to Porto in April."},
    ],
)
def test_a_fact_placed_before_a_start_given_is_still_news_from_when_told(
    memory: Memory, porto: dict[str, Any]
) -> None:
    """Porto from April, given or read from its words: a real start, so Lisbon "in March",
    told on 10 June, is news from 10 June, not history that Porto ended."""
    said(memory, "sister", "lives in", "Porto", when="2026-06-01T09:00:00Z", **porto)
    said(
        memory,
        "sister",
        "lives in",
        "Lisbon",
        when="2026-06-10T09:00:00Z",
        text="My sister moved to Lisbon in March.",
    )
    assert _sister_in(memory, "2026-05-01T00:00:00Z") == ["Porto"]
    assert _sister_in(memory, "2026-06-05T00:00:00Z") == ["Porto"]
    assert _sister_in(memory, "2026-06-11T00:00:00Z") == ["Lisbon"]


def test_another_agents_fact_begun_when_told_is_not_ended_by_a_fact_placed_before_it(
    memory: Memory,
) -> None:
    """driver's Porto, told on 1 June, is driver's: scout's Lisbon "in March" holds from
    March, clashes with it, and ends none of driver's facts."""
    porto = said(memory, "sister", "lives in", "Porto", agent="driver", when="2026-06-01T09:00:00Z")
    [lisbon] = memory.remember(
        [
            MemoryDraft(
                text="My sister moved to Lisbon in March.",
                agent="scout",
                observed_at="2026-06-10T09:00:00Z",
                fact=FactDraft("sister", "lives in", "Lisbon"),
            )
        ]
    )
    assert lisbon.superseded == [] and lisbon.conflicts == [porto]
    assert _sister_in(memory, "2026-04-15T00:00:00Z") == ["Lisbon"]
    assert sorted(_sister_in(memory, "2026-06-05T00:00:00Z")) == ["Lisbon", "Porto"]


def test_a_fact_begun_when_told_that_another_agent_holds_too_is_news_from_when_told(
    memory: Memory,
) -> None:
    """Porto, told on 1 June by scout and driver alike, is not scout's alone: ending it from
    its start would take driver's, so scout's Lisbon "in March" is news from 10 June, as
    after a start given; driver still holds Porto, and the two clash."""
    porto = said(memory, "sister", "lives in", "Porto", when="2026-06-01T09:00:00Z")
    shared = said(
        memory, "sister", "lives in", "Porto", agent="driver", when="2026-06-02T09:00:00Z"
    )
    assert shared == porto
    [lisbon] = memory.remember(
        [
            MemoryDraft(
                text="My sister moved to Lisbon in March.",
                agent="scout",
                observed_at="2026-06-10T09:00:00Z",
                fact=FactDraft("sister", "lives in", "Lisbon"),
            )
        ]
    )
    assert lisbon.superseded == [] and lisbon.conflicts == [porto]
    scouts = memory.recall("", agent="scout", subject="sister", as_of="2026-06-05T00:00:00Z")
    assert [r.text for r in scouts.results] == ["sister lives in Porto."]
    assert sorted(_sister_in(memory, "2026-06-11T00:00:00Z")) == ["Lisbon", "Porto"]


def test_a_fact_told_after_one_placed_before_it_is_not_stale(memory: Memory) -> None:
    """Lisbon "in March", told on 10 June, reaches the memory after Porto, told (with no
    time) on 20 June: Porto was told later, so it is the news, not stale when told (it was
    superseded from its start and Lisbon came back as current). Porto holds from 20 June
    and ends Lisbon then."""
    porto = said(memory, "sister", "lives in", "Porto", when="2026-06-20T09:00:00Z")
    [lisbon] = memory.remember(
        [
            MemoryDraft(
                text="My sister moved to Lisbon in March.",
                agent="scout",
                observed_at="2026-06-10T09:00:00Z",
                fact=FactDraft("sister", "lives in", "Lisbon"),
            )
        ]
    )
    assert porto not in lisbon.superseded
    assert lisbon.superseded_by == [porto]
    assert _sister_in(memory, "2026-06-15T00:00:00Z") == ["Lisbon"]
    assert _sister_in(memory, "2026-06-25T00:00:00Z") == ["Porto"]


def test_a_question_of_a_time_leaves_out_a_fact_stale_when_told(memory: Memory) -> None:
    """Porto, told on 1 June, was stale when told (Lisbon "in March", told on 10 June): it
    never held, so "Where did my sister live in June?" does not bring it back as a fact
    that held then."""
    porto = said(memory, "sister", "lives in", "Porto", when="2026-06-01T09:00:00Z")
    said(
        memory,
        "sister",
        "lives in",
        "Lisbon",
        when="2026-06-10T09:00:00Z",
        text="My sister moved to Lisbon in March.",
    )
    found = memory.recall("Where did my sister live in June?", as_of="2026-12-06T12:00:00Z")
    assert porto not in [r.observation_id for r in found.results]


#: Friday 4 December 2026: "on Monday" asked then is 30 November.
FRIDAY = "2026-12-04T12:00:00Z"


def _monday_notes(memory: Memory) -> None:
    """Notes made on Monday 30 November that share words with questions about Sam."""
    memory.remember(
        [
            MemoryDraft(text=text, agent="scout", observed_at="2026-11-30T10:00:00Z")
            for text in (
                "The team met on Monday about the release.",
                "Did Sam live stream the talk? yes",
                "Sam had lunch with Ana.",
                "Sam was late to the standup.",
            )
        ]
    )


def test_a_question_of_a_time_lifts_a_fact_that_held_all_through_it(memory: Memory) -> None:
    """Sam works at Acme, told in October, held on Monday: it is placed then (``time``)
    as much as a note made on Monday, and comes before them; a note made before Monday is
    not (a note's time is when it was made or what it tells of), and a question with no
    time lifts nothing by time."""
    acme = said(memory, "Sam", "works at", "Acme", when="2026-10-03T09:00:00Z")
    [before] = memory.remember(
        [MemoryDraft(text="Sam likes coffee.", agent="scout", observed_at="2026-11-20T09:00:00Z")]
    )
    _monday_notes(memory)
    found = memory.recall("Where did Sam work on Monday?", as_of=FRIDAY, limit=10)
    first = found.results[0]
    assert first.observation_id == acme
    assert first.current is True
    assert first.scores["time"] > 0
    [coffee] = [r for r in found.results if r.observation_id == before.observation_id]
    assert "time" not in coffee.scores
    now = memory.recall("Where does Sam work?", as_of=FRIDAY)
    assert now.results[0].observation_id == acme
    assert all("time" not in r.scores for r in now.results)


def test_a_question_of_a_time_brings_the_fact_that_held_then_first_though_replaced_since(
    memory: Memory,
) -> None:
    """Sam lived in Berlin from 1 November and moved to Munich on Wednesday 2 December:
    "Where did Sam live on Monday?" (30 November) is answered by Berlin, placed then by its
    validity, before notes made on Monday and marked replaced; Munich began after Monday
    and is not placed then. Asked of now, Munich alone."""
    berlin = said(
        memory, "Sam", "lives in", "Berlin", when="2026-11-03T09:00:00Z", valid_from="2026-11-01"
    )
    munich = said(
        memory, "Sam", "lives in", "Munich", when="2026-12-03T09:00:00Z", valid_from="2026-12-02"
    )
    _monday_notes(memory)
    found = memory.recall("Where did Sam live on Monday?", as_of=FRIDAY, limit=3)
    first = found.results[0]
    assert (first.observation_id, first.current) == (berlin, False)
    assert first.superseded_by == [munich]
    assert first.scores["time"] > 0
    for r in found.results:
        if r.observation_id == munich:
            assert "time" not in r.scores
    now = memory.recall("Where does Sam live?", as_of=FRIDAY)
    assert now.results[0].observation_id == munich
    assert berlin not in [r.observation_id for r in now.results]
    assert all("time" not in r.scores for r in now.results)


def test_a_history_question_of_a_time_brings_the_fact_that_held_then_first(
    memory: Memory,
) -> None:
    """With ``include_superseded``, "Where did Sam live on Monday?" still puts Berlin, which
    held on Monday, first, and Munich, which replaced it after Monday, right after: the fact
    that held then waits for no fact that began later; Paris, replaced before Monday by
    Berlin, comes after Berlin. Asked of no time, the history reads as before: Munich, then
    Berlin."""
    paris = said(
        memory, "Sam", "lives in", "Paris", when="2026-06-03T09:00:00Z", valid_from="2026-06-01"
    )
    berlin = said(
        memory, "Sam", "lives in", "Berlin", when="2026-11-03T09:00:00Z", valid_from="2026-11-01"
    )
    munich = said(
        memory, "Sam", "lives in", "Munich", when="2026-12-03T09:00:00Z", valid_from="2026-12-02"
    )
    _monday_notes(memory)
    found = memory.recall(
        "Where did Sam live on Monday?", as_of=FRIDAY, limit=10, include_superseded=True
    )
    facts = [r.observation_id for r in found.results if r.observation_id in (paris, berlin, munich)]
    assert found.results[0].observation_id == berlin
    assert facts == [berlin, munich, paris] or facts == [berlin, paris, munich]
    [first] = [r for r in found.results if r.observation_id == berlin]
    assert (first.current, first.superseded_by) == (False, [munich])
    history = memory.recall("Where has Sam lived?", as_of=FRIDAY, limit=10, include_superseded=True)
    ids = [r.observation_id for r in history.results]
    assert ids.index(munich) < ids.index(berlin) < ids.index(paris)


def test_a_standing_fact_that_only_shares_a_name_with_a_question_of_a_time_is_not_placed_then(
    memory: Memory,
) -> None:
    """Sam's standing facts, told in October, held on Monday, and each says "Sam" (or
    "Rex"): placed then by that one word, all three came before the lunch note made on
    Monday for "What did Sam eat on Monday?", and "Sam's dog is called Rex" before Rex's
    trip to the vet. A question of a time places a fact that held then only when it names
    the fact (or, with a model, is close to it in meaning), not by a name they share."""
    standing = [
        said(memory, "Sam", "works at", "Acme", when="2026-10-05T09:00:00Z"),
        said(memory, "Sam", "lives in", "Berlin", when="2026-10-05T09:00:00Z"),
        said(
            memory,
            "Sam",
            "has dog",
            "Rex",
            when="2026-10-05T09:00:00Z",
            text="Sam's dog is called Rex.",
        ),
    ]
    lunch, vet = (
        r.observation_id
        for r in memory.remember(
            [
                MemoryDraft(text=text, agent="scout", observed_at="2026-11-30T12:00:00Z")
                for text in (
                    "Sam and Ana had lunch at the Thai place.",
                    "Rex ate a sock and went to the vet.",
                )
            ]
        )
    )
    for query, answer in (
        ("What did Sam eat on Monday?", lunch),
        ("What happened to Rex on Monday?", vet),
    ):
        found = memory.recall(query, as_of=FRIDAY, limit=5)
        assert found.results[0].observation_id == answer, query
        for r in found.results:
            if r.observation_id in standing:
                assert "time" not in r.scores, (query, r.text)


def test_a_question_asked_by_the_speaker_names_no_one_else(memory: Memory) -> None:
    """ "What did I eat yesterday?" names the predicate of the user's fact told yesterday
    and no other person: "I" (me, my, we, our) is the one asking, not a name, though it is
    written in capitals. The ramen, told yesterday, comes first (found by its fact too),
    before notes of other days that say "I", "eat" or "yesterday" (of another day)."""
    ramen = said(
        memory, "user", "eats", "ramen", when="2026-12-03T13:00:00Z",
        text="I had ramen for lunch.",
    )  # fmt: skip
    memory.remember(
        [
            MemoryDraft(text=text, agent="scout", observed_at=when)
            for text, when in (
                ("I should eat more vegetables.", "2026-11-20T09:00:00Z"),
                ("Yesterday I did the laundry.", "2026-11-12T09:00:00Z"),
                ("I went swimming yesterday.", "2026-10-30T09:00:00Z"),
            )
        ]
    )
    for query in ("What did I eat yesterday?", "What did we eat yesterday?"):
        found = memory.recall(query, as_of=FRIDAY, limit=4)
        assert found.results[0].observation_id == ramen, query
        assert found.results[0].scores.keys() >= {"time", "fact"}


def test_a_fact_is_placed_in_a_time_it_held_and_not_in_one_after_its_end(memory: Memory) -> None:
    """Sam worked at Initech from January until 1 November: placed in October, when it
    held, and not on Monday 30 November, after its end."""
    initech = said(
        memory,
        "Sam",
        "works at",
        "Initech",
        when="2026-10-03T09:00:00Z",
        valid_from="2026-01-01",
        valid_until="2026-11-01",
    )
    found = memory.recall("Where did Sam work on Monday?", as_of=FRIDAY, limit=10)
    for r in found.results:
        if r.observation_id == initech:
            assert "time" not in r.scores
    october = memory.recall("Where did Sam work in October?", as_of=FRIDAY, limit=10)
    [held] = [r for r in october.results if r.observation_id == initech]
    assert held.scores["time"] > 0


def test_a_fact_that_held_then_is_placed_then_only_when_the_question_finds_it_otherwise(
    memory: Memory,
) -> None:
    """A standing fact holds in any time asked of: "Sam works at Acme" shares no word, topic
    or meaning with "What did the neighbour's dog eat on Monday?", so it is not lifted by the
    time alone above the notes, and the answer still says nothing there is close."""
    acme = said(memory, "Sam", "works at", "Acme", when="2026-10-03T09:00:00Z")
    memory.remember(
        [
            MemoryDraft(text=text, agent="scout", observed_at="2026-10-20T10:00:00Z")
            for text in ("The invoice for the printer is paid.", "Ana prefers tea.")
        ]
    )
    found = memory.recall("What did the neighbour's dog eat on Monday?", as_of=FRIDAY, limit=3)
    assert all("time" not in r.scores for r in found.results)
    assert found.results[0].observation_id != acme
    assert found.note is not None and found.note.startswith("nothing shares a word")
