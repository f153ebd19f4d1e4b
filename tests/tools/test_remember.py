"""The ``remember`` tool, driven through a real in-memory MCP client."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anyio
import pytest
from calls import LATER, error, ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory
from doxa.store.drafts import predicate_key

pytestmark = pytest.mark.anyio

HOSTILE = [
    "x'); MATCH (n) DETACH DELETE n; //",
    '" OR 1=1 --',
    "id IN ('a') OR TRUE",
    "'; DROP TABLE observations; --",
    "Ünïcödé ✓ 🧠 中文 עברית \u202e",
    "line one\nline two\r\nline three\tend",
    "$id {id: 'x'} `OF` \\ backslash %s {0}",
    "nul\x00byte",
]


def alice(city: str, observed_at: str, agent: str = "a") -> dict[str, Any]:
    return {
        "text": f"Alice lives in {city}.",
        "agent": agent,
        "observed_at": observed_at,
        "fact": {"subject": "Alice", "predicate": "lives in", "object": city},
    }


# ---- happy path -------------------------------------------------------------------------------


async def test_remember_returns_new_ids_and_echoes_topics(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            text="The bridge on Route 9 is closed for repairs.",
            topics=["route-9", "bridge"],
            agent="scout",
            confidence="0.9",
        )
    assert done["observation_id"].startswith("obs_")
    assert done["belief_id"].startswith("bel_")
    assert done["topics"] == ["route-9", "bridge"]
    # nothing superseded, no duplicate, no conflict: left out; one memory is said once
    assert set(done) == {"observation_id", "belief_id", "topics"}


async def test_remembered_observation_is_recalled_with_every_field(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            text="Bob prefers tea over coffee.",
            topics=["Bob", "drinks"],
            agent="host",
            confidence=0.75,
            observed_at="2024-05-01T16:30:00+02:00",
            source="conversation with Bob",
            episode="session-42",
        )
        found = await ok(client, "recall", query="what does Bob drink", agent="host", explain=True)
    [item] = found["results"]
    assert item["observation_id"] == done["observation_id"]
    assert item["belief_ids"] == [done["belief_id"]]
    assert item["text"] == "Bob prefers tea over coffee."
    assert item["confidence"] == "0.75"
    assert item["observed_at"] == "2024-05-01T14:30:00Z"
    assert item["source"] == "conversation with Bob"
    assert item["episode"] == "session-42"
    assert item["topics"] == ["Bob", "drinks"]
    assert item["agents"] == ["host"]
    assert "current" not in item  # current: the default, left out
    assert "fact" not in item


async def test_agent_defaults_to_the_servers_agent(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", text="The default agent remembers this.")
        found = await ok(client, "recall", query="", agent="default")
    assert [r["text"] for r in found["results"]] == ["The default agent remembers this."]


async def test_confidence_is_returned_exactly_as_given(client: Client) -> None:
    with anyio.fail_after(30):
        for text, given in [
            ("one tenth", "0.1"),
            ("float tenth", 0.1),
            ("whole", 1),
            ("zero", "0"),
            ("a millionth", "0.000001"),
            ("trailing zeros", "0.800"),
        ]:
            await ok(client, "remember", text=f"confidence {text}", confidence=given)
        found = await ok(client, "recall", query="", agent="default", limit=10)
    by_text = {r["text"]: r["confidence"] for r in found["results"]}
    assert by_text == {
        "confidence one tenth": "0.1",
        "confidence float tenth": "0.1",
        "confidence whole": "1",
        "confidence zero": "0",
        "confidence a millionth": "0.000001",
        "confidence trailing zeros": "0.8",
    }


@pytest.mark.parametrize("given", ["0.0000001", 1e-7, "0.000000000000000001"])
async def test_confidence_below_a_millionth_is_stored_exactly(
    client: Client, given: str | float
) -> None:
    with anyio.fail_after(30):
        done = await ok(client, "remember", text="A very unlikely rumour.", confidence=given)
        cited = await ok(client, "cite_evidence", id=done["observation_id"])
    assert cited["observation"]["confidence"] == format(
        Decimal(repr(given) if isinstance(given, float) else given), "f"
    )


# ---- bad input: a tool error naming the field and the fix, and nothing written ---------------


def counts(memory: Memory) -> dict[str, int]:
    """Nodes and index rows, without recall events (they are written in the background)."""
    return {k: v for k, v in memory.stats().items() if k != "Recall"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"text": "x", "confidence": 1.5}, "confidence must be between 0 and 1, got 1.5"),
        ({"text": "x", "confidence": "-0.1"}, "confidence must be between 0 and 1"),
        (
            {"text": "x", "confidence": "high"},
            'confidence must be a decimal number between 0 and 1 such as "0.8"',
        ),
        ({"text": "x", "confidence": "NaN"}, "confidence must be between 0 and 1"),
        (
            {"text": "x", "confidence": "0.1234567890123456789"},
            "confidence has more than 18 decimal places",
        ),
        ({"text": ""}, "text must be a non-empty string"),
        ({"text": "   \n "}, "text must be a non-empty string"),
        ({"text": "x" * 32_001}, "text is 32001 characters long; the limit is 32000: split it"),
        ({"text": "x", "topics": ["ok", " "]}, "topics[1] must not be empty"),
        (
            {"text": "x", "topics": ["t" * 201]},
            "topics[0] is 201 characters long; the limit is 200",
        ),
        (
            {"text": "x", "topics": [f"t{i}" for i in range(51)]},
            "topics has 51 items; the limit is 50",
        ),
        ({"text": "x", "source": "s" * 2001}, "source is 2001 characters long; the limit is 2000"),
        ({"text": "x", "observed_at": "yesterday"}, "observed_at must be an ISO 8601 time"),
        # Local time given without its offset is read as UTC: hours ahead, and then no recall
        # of now found it.
        (
            {"text": "x", "observed_at": "2999-01-01T00:00:00"},
            "days in the future (2999-01-01T00:00:00Z): a time without an offset is UTC",
        ),
        (
            {"text": "x", "fact": {"subject": "", "predicate": "p", "object": "o"}},
            "fact.subject must not be empty",
        ),
        (
            {
                "text": "x",
                "fact": {
                    "subject": "s",
                    "predicate": "p",
                    "object": "o",
                    "valid_from": "2024-02-01",
                    "valid_until": "2024-01-01",
                },
            },
            "fact.valid_until must be later than fact.valid_from",
        ),
        (
            {
                "text": "x",
                "fact": {"subject": "s", "predicate": "p", "object": "o", "valid_from": "soon"},
            },
            "fact.valid_from must be an ISO 8601 time",
        ),
        (
            {"text": "x", "supports": [{"belief_id": "bel_nope", "weight": "0.5"}]},
            "supports[0].belief_id: no belief with id 'bel_nope'",
        ),
        (
            {"text": "x", "contradicts": ["obs_nope"]},
            "contradicts[0]: no observation with id 'obs_nope'",
        ),
        # An id of the other kind (remember answers both) is named as such.
        (
            {"text": "x", "contradicts": ["bel_nope"]},
            "contradicts[0]: 'bel_nope' is a belief id, not an observation id (obs_…); use one",
        ),
        (
            {"text": "x", "supports": [{"belief_id": "obs_nope"}]},
            "supports[0].belief_id: 'obs_nope' is an observation id, not a belief id (bel_…);",
        ),
        ({}, "text: give the text to remember, a record, or memories: [...] for many"),
        (
            {"text": "x", "memories": [{"text": "y"}]},
            "text: give either text or record (one memory) or memories (many)",
        ),
        ({"memories": []}, "memories: give at least one memory"),
        # Given beside memories, these were dropped without a word.
        (
            {"memories": [{"text": "y"}], "topics": ["important"]},
            "topics: with memories, give it in each memory (memories[i].topics); only agent"
            " applies to them all",
        ),
        ({"memories": [{"text": "y"}], "confidence": "0.2"}, "confidence: with memories"),
        ({"memories": [{"text": "y"}], "confidence": 0.9}, "confidence: with memories"),
        ({"memories": [{"text": "y"}], "source": "meeting"}, "source: with memories"),
        ({"memories": [{"text": "y"}], "episode": "ep7"}, "episode: with memories"),
        (
            {
                "memories": [{"text": "y"}],
                "fact": {"subject": "A", "predicate": "likes", "object": "B"},
            },
            "fact: with memories",
        ),
        ({"memories": [{"text": "y"}], "contradicts": ["obs_x"]}, "contradicts: with memories"),
    ],
)
async def test_bad_input_is_an_error_naming_the_field_and_writes_nothing(
    memory_client: Client, memory: Memory, args: dict[str, Any], message: str
) -> None:
    with anyio.fail_after(30):
        await ok(memory_client, "remember", text="Already here.", topics=["kept"], agent="keeper")
        before = counts(memory)
        text = await error(memory_client, "remember", agent="newcomer", **args)
        after = counts(memory)
        found = await ok(memory_client, "recall", query="", agent="newcomer")
    assert message in text
    assert after == before
    assert found["results"] == []


async def test_a_time_ahead_given_with_its_offset_is_not_told_to_give_its_offset(
    client: Client,
) -> None:
    # "a time without an offset is UTC, so give its offset" told a model that had given
    # one to do what it had done.
    for given, utc in (
        ("2999-01-01T00:00:00+02:00", "2998-12-31T22:00:00Z"),
        ("2999-01-01T00:00:00Z", "2999-01-01T00:00:00Z"),
    ):
        text = await error(client, "remember", text="x", observed_at=given)
        assert "observed_at is " in text and f"in the future ({utc})" in text
        assert "without an offset" not in text
        assert "leave observed_at out (now); for a fact that begins later" in text


async def test_a_boolean_confidence_is_refused(memory_client: Client, memory: Memory) -> None:
    with anyio.fail_after(30):
        result = await memory_client.call_tool("remember", {"text": "x", "confidence": True})
    assert result.is_error is True
    assert "confidence" in result.content[0].text
    assert memory.stats()["Observation"] == 0


async def test_bad_support_weight_names_the_link_and_writes_nothing(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        first = await ok(memory_client, "remember", text="The bridge is closed.", agent="scout")
        before = counts(memory)
        text = await error(
            memory_client,
            "remember",
            text="A sign says so.",
            agent="scout",
            supports=[{"belief_id": first["belief_id"], "weight": 2}],
        )
        evidence = await ok(memory_client, "cite_evidence", id=first["belief_id"])
    assert "supports[0].weight must be between 0 and 1, got 2" in text
    assert counts(memory) == before
    assert "evidence" not in evidence


# ---- batches ----------------------------------------------------------------------------------


async def test_batch_remembers_every_memory_and_lists_each(
    memory_client: Client, memory: Memory
) -> None:
    memories = [
        {
            "text": f"Fact number {i} about the harbour.",
            "topics": ["harbour"],
            "confidence": f"0.{i}",
        }
        for i in range(12)
    ]
    with anyio.fail_after(30):
        done = await ok(memory_client, "remember", memories=memories, agent="importer")
        found = await ok(
            memory_client, "recall", query="", topics=["harbour"], limit=50, explain=True
        )
    assert set(done) == {"remembered"}
    remembered = done["remembered"]
    assert len(remembered) == 12
    assert len({r["observation_id"] for r in remembered}) == 12
    assert len({r["belief_id"] for r in remembered}) == 12
    assert all("duplicate_of" not in r and r["topics"] == ["harbour"] for r in remembered)
    assert {r["observation_id"] for r in found["results"]} == {
        r["observation_id"] for r in remembered
    }
    assert {r["agents"][0] for r in found["results"]} == {"importer"}
    stats = memory.stats()
    assert stats["Observation"] == 12
    assert stats["IndexRows"] == 12


async def test_batch_items_may_name_their_own_agents(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            agent="fallback",
            memories=[
                {"text": "Said by ann.", "agent": "ann"},
                {"text": "Said by nobody in particular."},
            ],
        )
        ann = await ok(client, "recall", query="", agent="ann")
        fallback = await ok(client, "recall", query="", agent="fallback")
    assert [r["observation_id"] for r in ann["results"]] == [
        done["remembered"][0]["observation_id"]
    ]
    assert [r["observation_id"] for r in fallback["results"]] == [
        done["remembered"][1]["observation_id"]
    ]


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"confidence": 1.5}, "memories[7].confidence must be between 0 and 1"),
        ({"topics": ["fine", ""]}, "memories[7].topics[1] must not be empty"),
        ({"observed_at": "last Tuesday"}, "memories[7].observed_at must be an ISO 8601 time"),
        (
            {"supports": [{"belief_id": "bel_missing"}]},
            "memories[7].supports[0].belief_id: no belief with id 'bel_missing'",
        ),
        ({"contradicts": ["obs_missing"]}, "memories[7].contradicts[0]: no observation"),
    ],
)
async def test_one_bad_memory_in_a_batch_stores_none_and_names_its_index(
    memory_client: Client, memory: Memory, bad: dict[str, Any], message: str
) -> None:
    memories: list[dict[str, Any]] = [
        {"text": f"Batch item {i}.", "topics": [f"topic-{i}"]} for i in range(10)
    ]
    memories[7].update(bad)
    with anyio.fail_after(30):
        before = counts(memory)
        text = await error(memory_client, "remember", memories=memories, agent="batcher")
        found = await ok(memory_client, "recall", query="Batch item", agent="batcher")
    assert message in text
    assert counts(memory) == before
    assert found["results"] == []


async def test_batch_errors_read_as_the_readme_shows(client: Client) -> None:
    memories: list[dict[str, Any]] = [{"text": f"Item {i}."} for i in range(4)]
    memories[3]["fact"] = {
        "subject": "s",
        "predicate": "p",
        "object": "o",
        "valid_from": "2024-02-01",
        "valid_until": "2024-01-01",
    }
    with anyio.fail_after(30):
        batch = await error(client, "remember", memories=memories)
        single = await error(
            client, "remember", text="x", supports=[{"belief_id": "bel_x", "weight": "0.5"}]
        )
    assert "memories[3].fact.valid_until must be later than fact.valid_from; to end" in batch
    assert single.endswith(
        "supports[0].belief_id: no belief with id 'bel_x'; use an id returned by remember or recall"
    )


async def test_batch_item_missing_its_text_is_rejected_naming_it(
    memory_client: Client, memory: Memory
) -> None:
    # A batch item may leave its text out only for a record (whose words are then the text).
    with anyio.fail_after(30):
        text = await error(
            memory_client, "remember", memories=[{"text": "fine"}, {"topics": ["no text"]}]
        )
    assert "memories[1].text must be a non-empty string" in text
    assert memory.stats()["Observation"] == 0


# ---- duplicates -------------------------------------------------------------------------------


async def test_same_text_from_same_agent_returns_the_existing_ids(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        first = await ok(memory_client, "remember", text="The ferry leaves at noon.", agent="scout")
        again = await ok(
            memory_client, "remember", text="  The ferry   leaves at noon. ", agent="scout"
        )
    assert again["duplicate_of"] == first["observation_id"]
    assert again["observation_id"] == first["observation_id"]
    assert again["belief_id"] == first["belief_id"]
    assert memory.stats()["Observation"] == 1
    assert memory.stats()["Belief"] == 1


async def test_the_same_text_told_with_another_fact_is_another_memory(
    memory_client: Client, memory: Memory
) -> None:
    # It was taken for a repeat: the new fact was dropped, and Eve still lived in Berlin.
    async def moved(city: str, since: str) -> dict[str, Any]:
        fact = {"subject": "Eve", "predicate": "lives in", "object": city, "valid_from": since}
        return await ok(memory_client, "remember", text="Moved.", fact=fact)

    with anyio.fail_after(30):
        berlin = await moved("Berlin", "2024-01-01")
        paris = await moved("Paris", "2024-06-01")
        again = await moved("Paris", "2024-06-01")
        about = await ok(memory_client, "about", name="Eve")
    assert "duplicate_of" not in paris and paris["superseded"] == [berlin["observation_id"]]
    assert again["duplicate_of"] == paris["observation_id"]  # a retry is still one memory
    assert [f["object"] for f in about["facts"]["lives_in"]] == ["Paris"]
    assert memory.stats()["Observation"] == 2


async def test_a_fact_told_again_after_it_ended_is_the_current_one_again(
    memory_client: Client, memory: Memory
) -> None:
    # "busy", "free", "busy": the last was taken for a repeat of the first, and Ana stayed free.
    async def status(state: str) -> dict[str, Any]:
        fact = {"subject": "Ana", "predicate": "status", "object": state}
        return await ok(memory_client, "remember", text=f"Ana is {state}.", fact=fact)

    with anyio.fail_after(30):
        busy = await status("busy")
        free = await status("free")
        again = await status("busy")
        retried = await status("busy")
        about = await ok(memory_client, "about", name="Ana")
    assert "duplicate_of" not in again and again["observation_id"] != busy["observation_id"]
    assert again["superseded"] == [free["observation_id"]]
    assert retried["duplicate_of"] == again["observation_id"]
    assert [f["object"] for f in about["facts"]["status"]] == ["busy"]


async def test_a_repeat_naming_a_belief_that_does_not_exist_is_refused(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        await ok(memory_client, "remember", text="The ferry leaves at noon.")
        message = await error(
            memory_client,
            "remember",
            text="The ferry leaves at noon.",
            supports=[{"belief_id": "bel_nope", "weight": "0.5"}],
        )
    assert "supports[0].belief_id" in message and "bel_nope" in message
    assert (memory.stats()["Observation"], memory.stats()["Belief"]) == (1, 1)


async def test_a_default_confidence_beside_memories_in_any_form_is_no_refusal(
    memory_client: Client,
) -> None:
    # A client filling in defaults sends 1.0: the same value as the default 1.
    with anyio.fail_after(30):
        for one in (1, 1.0, "1", "1.0", "1.000"):
            done = await ok(
                memory_client, "remember", memories=[{"text": f"y {one}"}], confidence=one
            )
            assert len(done["remembered"]) == 1


async def test_one_belief_supported_twice_in_one_memory_is_refused(
    memory_client: Client, memory: Memory
) -> None:
    # Both links were stored; a citation showed one weight, the other stayed unseen.
    with anyio.fail_after(30):
        claim = await ok(memory_client, "remember", text="The ferry leaves at noon.")
        before = memory.stats()
        twice = [
            {"belief_id": claim["belief_id"], "weight": "0.9"},
            {"belief_id": claim["belief_id"], "weight": "0.1"},
        ]
        message = await error(memory_client, "remember", text="A timetable.", supports=twice)
        after = memory.stats()
    assert message.endswith(
        f"supports[1].belief_id names {claim['belief_id']!r} again; give each belief once,"
        " with one weight"
    )
    assert after == before


async def test_a_repeat_whose_contradiction_was_retracted_since_is_still_a_repeat(
    memory_client: Client, memory: Memory
) -> None:
    # A retried call must not be refused (nor applied twice) for what changed in between.
    with anyio.fail_after(30):
        a = await ok(memory_client, "remember", text="The ferry is late.")
        told = {"text": "The ferry is on time.", "contradicts": [a["observation_id"]]}
        b = await ok(memory_client, "remember", **told)
        await ok(memory_client, "forget", id=a["observation_id"])
        again = await ok(memory_client, "remember", **told)
        refused = await error(
            memory_client, "remember", text="Another view.", contradicts=[a["observation_id"]]
        )
    assert again["duplicate_of"] == b["observation_id"]
    assert "contradicts[0]" in refused


async def test_same_text_from_another_agent_is_its_belief_in_the_same_observation(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        first = await ok(
            memory_client, "remember", text="The ferry leaves at noon.", agent="scout",
            confidence="0.9",
        )  # fmt: skip
        other = await ok(
            memory_client, "remember", text="The ferry leaves at noon.", agent="driver",
            confidence="0.5",
        )  # fmt: skip
    assert "duplicate_of" not in other
    assert other["observation_id"] == first["observation_id"]
    assert other["belief_id"] != first["belief_id"]
    assert (memory.stats()["Observation"], memory.stats()["Belief"]) == (1, 2)
    believers = memory.evidence(first["observation_id"])["believers"]
    assert [(b["agent"], b["belief_id"], Decimal(b["confidence"])) for b in believers] == [
        ("scout", first["belief_id"], Decimal("0.9")),
        ("driver", other["belief_id"], Decimal("0.5")),
    ]


async def test_duplicate_inside_one_batch_points_at_the_first(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        done = await ok(
            memory_client,
            "remember",
            memories=[
                {"text": "Said twice."},
                {"text": "Something else."},
                {"text": "Said twice."},
            ],
        )
    first, _, third = done["remembered"]
    assert third["duplicate_of"] == first["observation_id"]
    assert third["observation_id"] == first["observation_id"]
    assert "duplicate_of" not in first
    assert memory.stats()["Observation"] == 2


async def test_the_same_words_placing_their_event_on_another_day_are_another_memory(
    settings: Settings,
) -> None:
    # "Tomorrow" said in May and in June was taken as a repeat: June's appointment was lost,
    # and a recall of June found only May's.
    dentist = "Dentist appointment tomorrow at 10."

    def said(at: str, text: str = dentist, agent: str = "me") -> dict[str, Any]:
        return {"text": text, "observed_at": at, "agent": agent}

    async with Client(create_server(settings)) as client:
        may = await ok(client, "remember", **said("2024-05-06T09:00:00Z"))
        june = await ok(client, "remember", **said("2024-06-10T09:00:00Z"))
        shared = await ok(client, "remember", **said("2024-06-10T11:00:00Z", agent="other"))
        gym = [
            await ok(client, "remember", **said(at, "I went to the gym."))
            for at in ("2024-05-06T09:00:00Z", "2024-05-09T09:00:00Z")
        ]
        answer = await ok(client, "recall", query="dentist", as_of="2024-06-10T12:00:00Z")
    assert "duplicate_of" not in june and june["observation_id"] != may["observation_id"]
    assert shared["shared_with"] == ["me"] and shared["observation_id"] == june["observation_id"]
    assert gym[1]["duplicate_of"] == gym[0]["observation_id"]  # no word places it in time
    found = {r["observation_id"]: r["happened"] for r in answer["results"] if r.get("happened")}
    assert found == {may["observation_id"]: "2024-05-07", june["observation_id"]: "2024-06-11"}
    async with Client(create_server(settings)) as client:  # as a restart reads them again
        again = await ok(client, "remember", **said("2024-05-06T17:00:00Z"))
        later = await ok(client, "remember", **said("2024-05-07T09:00:00Z"))
    assert again["duplicate_of"] == may["observation_id"]  # the same day, said again
    assert "duplicate_of" not in later
    # A time measured from the moment it is said moves with it: a retry is still a repeat.
    async with Client(create_server(settings)) as client:
        vegan = [
            await ok(client, "remember", text="I have been vegan for five years.", agent=who)
            for who in ("me", "me", "other")
        ]
    assert vegan[1]["duplicate_of"] == vegan[0]["observation_id"]
    assert vegan[2]["observation_id"] == vegan[0]["observation_id"]


async def test_texts_differing_in_case_are_not_duplicates(client: Client) -> None:
    with anyio.fail_after(30):
        first = await ok(client, "remember", text="Meet at the Gate.")
        other = await ok(client, "remember", text="Meet at the gate.")
    assert "duplicate_of" not in other
    assert other["observation_id"] != first["observation_id"]


# ---- facts: superseding and conflicts ---------------------------------------------------------


async def test_newer_fact_supersedes_older(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
    assert "superseded" not in paris and "replaced" not in paris
    assert berlin["superseded"] == [paris["observation_id"]]
    # Said in words too: ids alone did not show an agent what its new fact had replaced.
    assert berlin["replaced"] == ["Alice lives in Paris"]
    assert "conflicts" not in berlin


async def test_newer_fact_in_the_same_batch_supersedes_older(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            memories=[alice("Paris", "2024-01-01"), alice("Berlin", "2024-06-01")],
        )
        found = await ok(client, "recall", query="Where does Alice live?")
    paris, berlin = done["remembered"]
    assert berlin["superseded"] == [paris["observation_id"]]
    assert berlin["replaced"] == ["Alice lives in Paris"]
    assert [r["observation_id"] for r in found["results"]] == [berlin["observation_id"]]


async def test_a_batch_supersedes_like_the_same_facts_one_by_one(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        done = await ok(
            client,
            "remember",
            memories=[alice("Berlin", "2024-06-01"), alice("Rome", "2024-09-01")],
        )
        found = await ok(client, "recall", query="Alice lives in", include_superseded=True)
    berlin, rome = done["remembered"]
    by_id = {r["observation_id"]: r for r in found["results"]}
    assert berlin["superseded"] == [paris["observation_id"]]
    assert rome["superseded"] == [berlin["observation_id"]]
    assert by_id[paris["observation_id"]]["superseded_by"] == [berlin["observation_id"]]
    assert by_id[berlin["observation_id"]]["superseded_by"] == [rome["observation_id"]]


async def test_same_object_again_supersedes_nothing(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", **alice("Paris", "2024-01-01"))
        again = await ok(
            client,
            "remember",
            text="Alice still lives in paris.",
            agent="a",
            observed_at="2024-06-01",
            fact={"subject": "alice", "predicate": "Lives  In", "object": "PARIS"},
        )
    assert "superseded" not in again
    assert "conflicts" not in again


async def test_another_agents_different_fact_is_a_conflict_not_a_replacement(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        rome = await ok(client, "remember", **alice("Rome", "2024-07-01", agent="b"))
        found = await ok(client, "recall", query="Alice lives in", limit=10)
    assert "superseded" not in rome
    assert rome["conflicts"] == [berlin["observation_id"]]
    assert {r["observation_id"]: r.get("current", True) for r in found["results"]} == {
        berlin["observation_id"]: True,
        rome["observation_id"]: True,
    }


async def test_older_fact_arriving_late_does_not_replace_the_current_one(client: Client) -> None:
    with anyio.fail_after(30):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        found = await ok(
            client, "recall", query="Alice lives in", include_superseded=True, explain=True
        )
    assert "superseded" not in paris
    by_id = {r["observation_id"]: r for r in found["results"]}
    assert "current" not in by_id[berlin["observation_id"]]
    assert "superseded_by" not in by_id[berlin["observation_id"]]
    assert by_id[paris["observation_id"]]["current"] is False
    assert by_id[paris["observation_id"]]["superseded_by"] == [berlin["observation_id"]]
    assert by_id[paris["observation_id"]]["fact"]["valid_until"] == "2024-06-01T00:00:00Z"


# ---- hostile strings are data -----------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_hostile_strings_in_every_field_are_stored_exactly_and_touch_nothing_else(
    memory_client: Client, memory: Memory, hostile: str
) -> None:
    with anyio.fail_after(30):
        bystander = await ok(
            memory_client, "remember", text="An innocent bystander.", topics=["calm"], agent="calm"
        )
        before = memory.stats()
        done = await ok(
            memory_client,
            "remember",
            text=f"Text {hostile}",
            topics=[hostile, f"topic {hostile}"],
            agent=hostile,
            source=hostile,
            episode=hostile,
            fact={"subject": hostile, "predicate": f"p {hostile}", "object": f"o {hostile}"},
        )
        found = await ok(memory_client, "recall", query="", agent=hostile, explain=True)
        cited = await ok(memory_client, "cite_evidence", id=done["observation_id"])
        still = await ok(memory_client, "cite_evidence", id=bystander["observation_id"])
    [item] = found["results"]
    assert item["text"] == f"Text {hostile}"
    assert item["agents"] == [hostile]
    assert sorted(item["topics"]) == sorted([hostile, f"topic {hostile}"])
    assert item["source"] == hostile
    assert item["episode"] == hostile
    assert item["fact"]["subject"] == hostile
    assert item["fact"]["predicate"] == predicate_key(f"p {hostile}")  # stored normalised
    assert item["fact"]["object"] == f"o {hostile}"
    assert cited["observation"]["text"] == f"Text {hostile}"
    assert cited["observation"]["episode"] == hostile
    assert cited["believers"][0]["agent"] == hostile
    assert still["observation"]["text"] == "An innocent bystander."
    after = memory.stats()
    assert after["Observation"] == before["Observation"] + 1
    assert after["Belief"] == before["Belief"] + 1
    assert after["Agent"] == before["Agent"] + 1
    assert after["Topic"] == before["Topic"] + 2
    assert after["Episode"] == before["Episode"] + 1
    assert after["IndexRows"] == before["IndexRows"] + 1


def lives(city: str, since: str) -> dict[str, Any]:
    """Ada's home, a fact from ``since``."""
    fact = {"subject": "Ada", "predicate": "lives in", "object": city, "valid_from": since}
    return {"text": f"Ada lives in {city}.", "fact": fact}


async def test_a_fact_told_after_one_that_begins_later_names_what_ends_it(
    client: Client,
) -> None:
    # Oslo from March, told after Rome from June, answered as a current fact would: nothing
    # told the agent that Rome already ends it.
    with anyio.fail_after(30):
        rome = await ok(client, "remember", **lives("Rome", "2024-06-01"))
        oslo = await ok(client, "remember", **lives("Oslo", "2024-03-01"))
        batch = await ok(client, "remember", memories=[lives("Bern", "2024-01-01")])
        later = await ok(client, "remember", **lives("Lima", "2025-01-01"))
    assert "superseded_by" not in rome
    assert oslo["superseded_by"] == [rome["observation_id"]]
    assert batch["remembered"][0]["superseded_by"] == [oslo["observation_id"]]
    assert "superseded_by" not in later and later["superseded"] == [rome["observation_id"]]


async def test_a_fact_told_late_names_what_replaced_a_plan_as_recall_does(
    client: Client,
) -> None:
    # Oslo from a later year, then Tokyo from then instead (Oslo never holds): Rome from 2020, told
    # last, answered superseded_by Oslo, where recall and cite_evidence said Tokyo.
    with anyio.fail_after(30):
        await ok(client, "remember", **lives("Oslo", f"{LATER}-01-01"))
        tokyo = await ok(client, "remember", **lives("Tokyo", f"{LATER}-01-01"))
        rome = await ok(client, "remember", **lives("Rome", "2020-01-01"))
        cited = await ok(client, "cite_evidence", id=rome["observation_id"])
    assert rome["superseded_by"] == cited["superseded_by"] == [tokyo["observation_id"]]
