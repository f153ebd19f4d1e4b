"""The ``recall`` tool, driven through a real in-memory MCP client."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from calls import LATER, error, ok, seed_bridge
from mcp.client import Client

from doxa.server.app import create_server
from doxa.store import Memory

pytestmark = pytest.mark.anyio

HOSTILE = [
    "x'); MATCH (n) DETACH DELETE n; //",
    '" OR 1=1 --',
    "id IN ('a') OR TRUE",
    "'; DROP TABLE observations; --",
    "Ünïcödé ✓ 🧠 中文 עברית \u202e",
    "line one\nline two\r\nline three\tend",
    'AND OR NOT title:foo "unterminated',
]


def alice(city: str, observed_at: str, agent: str = "a") -> dict[str, Any]:
    return {
        "text": f"Alice lives in {city}.",
        "agent": agent,
        "observed_at": observed_at,
        "fact": {"subject": "Alice", "predicate": "lives in", "object": city},
    }


def later(city: str, valid_from: str) -> dict[str, Any]:
    """Alice's move told in 2024, to a city she lives in from ``valid_from``."""
    told = alice(city, "2024-07-01")
    return told | {
        "text": f"Alice will move to {city}.",
        "fact": told["fact"] | {"valid_from": valid_from},
    }


def counts(memory: Memory) -> dict[str, int]:
    """Nodes and index rows, without recall events (they are written in the background)."""
    return {k: v for k, v in memory.stats().items() if k != "Recall"}


# ---- ranking ----------------------------------------------------------------------------------


async def test_recall_ranks_the_matching_observation_first_and_says_why(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", text="The harbour master owns a red boat.")
        target = await ok(client, "remember", text="Zanzibar cloves smell wonderful in spring.")
        await ok(client, "remember", text="The printer on floor two is jammed again.")
        found = await ok(client, "recall", query="Zanzibar cloves", explain=True)
    assert found["recall_id"].startswith("rec_")
    first = found["results"][0]
    assert first["observation_id"] == target["observation_id"]
    assert first["scores"]["vector"] > 0
    assert first["scores"]["text"] > 0
    assert first["score"] == pytest.approx(sum(first["scores"].values()), abs=1e-5)
    scores = [r["score"] for r in found["results"]]
    assert scores == sorted(scores, reverse=True)


async def test_recall_boosts_observations_made_in_the_time_the_query_names(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        august = await ok(
            client, "remember", text="Team meeting about the budget.", observed_at="2023-08-10"
        )
        may = await ok(
            client, "remember", text="Team meeting about the roadmap.", observed_at="2023-05-10"
        )
        found = await ok(client, "recall", query="team meeting in May 2023", explain=True)
    by_id = {r["observation_id"]: r for r in found["results"]}
    assert found["results"][0]["observation_id"] == may["observation_id"]
    assert by_id[may["observation_id"]]["scores"]["time"] > 0
    assert "time" not in by_id[august["observation_id"]]["scores"]


async def test_neighbours_in_the_same_episode_lift_each_other(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            memories=[
                {"text": "What is your favourite colour?", "episode": "chat-1"},
                {"text": "Blue, like the sea.", "episode": "chat-1"},
                {"text": "The printer is jammed.", "episode": "chat-2"},
            ],
        )
        found = await ok(client, "recall", query="favourite colour", explain=True)
    question, answer, printer = (r["observation_id"] for r in done["remembered"])
    by_id = {r["observation_id"]: r for r in found["results"]}
    assert [r["observation_id"] for r in found["results"]][:2] == [question, answer]
    assert by_id[answer]["scores"]["neighbourhood"] > 0
    assert "neighbourhood" not in by_id[printer]["scores"]
    assert by_id[answer]["episode"] == "chat-1"


async def test_topics_named_in_the_query_lift_what_mentions_them(client: Client) -> None:
    with anyio.fail_after(30):
        # the same words (another text: the same one would be y's belief in x's observation),
        # so only the topic tells them apart (the later one wins ties)
        tagged = await ok(
            client, "remember", text="Adores jazz records.", topics=["Alice"], agent="x"
        )
        plain = await ok(client, "remember", text="Adores jazz records!", agent="y")
        found = await ok(client, "recall", query="what records does alice adore", explain=True)
    by_id = {r["observation_id"]: r for r in found["results"]}
    assert found["results"][0]["observation_id"] == tagged["observation_id"]
    assert by_id[tagged["observation_id"]]["scores"]["topic"] > 0
    assert "topic" not in by_id[plain["observation_id"]]["scores"]


async def test_limit_caps_the_number_of_results(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(
            client,
            "remember",
            memories=[{"text": f"Lighthouse log entry {i}.", "topics": ["log"]} for i in range(8)],
        )
        found = await ok(client, "recall", query="lighthouse log entry", limit=3)
        everything = await ok(client, "recall", query="", topics=["log"], limit=100)
    assert len(found["results"]) == 3
    assert len(everything["results"]) == 8


# ---- filters and order ------------------------------------------------------------------------


async def test_recall_by_topic_ordered_by_confidence(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        await ok(client, "remember", text="Unrelated: the weather is fine.", confidence="1")
        found = await ok(client, "recall", query="", topics=["bridge"], order_by="confidence")
    assert [r["confidence"] for r in found["results"]] == ["0.9", "0.8", "0.7"]
    assert [r["observation_id"] for r in found["results"]] == [
        ids["closed"],
        ids["open"],
        ids["sign"],
    ]


async def test_recall_ordered_by_newest_and_oldest(client: Client) -> None:
    with anyio.fail_after(30):
        for day in ("2024-03-02", "2024-03-01", "2024-03-03"):
            await ok(client, "remember", text=f"Diary of {day}.", topics=["diary"], observed_at=day)
        newest = await ok(client, "recall", query="", topics=["diary"], order_by="newest")
        oldest = await ok(client, "recall", query="diary", topics=["diary"], order_by="oldest")
    assert [r["observed_at"] for r in newest["results"]] == [
        "2024-03-03T00:00:00Z",
        "2024-03-02T00:00:00Z",
        "2024-03-01T00:00:00Z",
    ]
    assert [r["observed_at"] for r in oldest["results"]] == [
        "2024-03-01T00:00:00Z",
        "2024-03-02T00:00:00Z",
        "2024-03-03T00:00:00Z",
    ]


async def test_an_order_with_a_query_orders_the_most_relevant_and_nothing_else(
    client: Client,
) -> None:
    # With include_superseded every match was ordered, then cut: "newest" answered a history
    # question with the newest notes of anything; without it, facts beginning later (four
    # plans about a dentist) widened the pool that was ordered before the cut.
    with anyio.fail_after(30):
        for city, since in (("Paris", "2023-01-01"), ("Berlin", "2024-01-01")):
            fact = {"subject": "Alice", "predicate": "lives in", "object": city}
            await ok(
                client,
                "remember",
                text=f"Alice lives in {city}.",
                fact=fact,
                observed_at=since,  # the notes below are newer
            )
        await ok(
            client,
            "remember",
            memories=[
                {"text": "kite " * (10 - i) + f"note {i}", "observed_at": f"2024-05-{i + 1:02d}"}
                for i in range(10)
            ],
        )
        history = await ok(
            client,
            "recall",
            query="where has Alice lived",
            include_superseded=True,
            limit=2,
            order_by="newest",
        )
        kites = await ok(client, "recall", query="kite", limit=3, order_by="newest")
        plans = [
            {
                "text": f"Dentist appointment {j} is booked.",
                "fact": {
                    "subject": f"dentist {j}",
                    "predicate": "status",
                    "object": "booked",
                    "valid_from": f"{LATER}-01-01",
                },
            }
            for j in range(4)
        ]
        await ok(client, "remember", memories=plans)
        kites_beside_plans = await ok(client, "recall", query="kite", limit=3, order_by="newest")
    assert [r["text"] for r in history["results"]] == [
        "Alice lives in Berlin.",
        "Alice lives in Paris.",
    ]
    assert [r["text"][-6:] for r in kites["results"]] == ["note 2", "note 1", "note 0"]
    assert kites_beside_plans["results"] == kites["results"]


async def test_topic_filter_is_any_of_and_ignores_case(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        weather = await ok(client, "remember", text="Rain tomorrow.", topics=["Weather"])
        found = await ok(client, "recall", query="", topics=["ROUTE-9", "weather"], limit=10)
    assert {r["observation_id"] for r in found["results"]} == {
        ids["closed"],
        ids["open"],
        weather["observation_id"],
    }


async def test_topic_filter_finds_facts_naming_the_topic(client: Client) -> None:
    # The recall prompt says to add topics when the question names people: a person told of
    # only in facts was found by about and find_conflicts, and by no topics filter.
    with anyio.fail_after(30):
        zoe = await ok(
            client,
            "remember",
            **alice("Madrid", "2024-01-01")
            | {
                "text": "Zoe lives in Madrid.",
                "fact": {"subject": "Zoe", "predicate": "lives in", "object": "Madrid"},
            },
        )
        await ok(client, "remember", text="Madrid is hot in summer.", topics=["weather"])
        asked = await ok(client, "recall", query="Where does Zoe live?", topics=["zoe"])
        by_object = await ok(client, "recall", query="", topics=["MADRID"])
    assert [r["observation_id"] for r in asked["results"]] == [zoe["observation_id"]]
    assert [r["observation_id"] for r in by_object["results"]] == [zoe["observation_id"]]


async def test_agent_filter_returns_only_that_agents_beliefs(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        scout = await ok(client, "recall", query="bridge", agent="scout", explain=True)
        driver = await ok(client, "recall", query="bridge", agent="driver")
        nobody = await ok(client, "recall", query="bridge", agent="nobody")
    assert {r["observation_id"] for r in scout["results"]} == {ids["closed"], ids["sign"]}
    assert [r["observation_id"] for r in driver["results"]] == [ids["open"]]
    assert all(r["agents"] == ["scout"] for r in scout["results"])
    assert nobody["results"] == []


async def test_min_confidence_is_an_exact_inclusive_threshold(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        found = await ok(client, "recall", query="bridge", min_confidence="0.8")
        as_float = await ok(client, "recall", query="bridge", min_confidence=0.8)
        top = await ok(client, "recall", query="bridge", min_confidence="0.9")
        above = await ok(client, "recall", query="bridge", min_confidence="0.900000000000000001")
    assert {r["observation_id"] for r in found["results"]} == {ids["closed"], ids["open"]}
    assert {r["observation_id"] for r in as_float["results"]} == {ids["closed"], ids["open"]}
    assert [r["observation_id"] for r in top["results"]] == [ids["closed"]]
    assert above["results"] == []


async def test_min_confidence_given_as_a_json_float_is_read_through_its_shortest_repr(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        done = await ok(
            client,
            "remember",
            memories=[
                {"text": "exactly three tenths", "confidence": "0.3"},
                {"text": "a float sum", "confidence": "0.30000000000000004"},
                {"text": "just below", "confidence": "0.299999999999999999"},
            ],
        )
        three_tenths = await ok(client, "recall", query="", agent="default", min_confidence=0.3)
        float_sum = await ok(client, "recall", query="", agent="default", min_confidence=0.1 + 0.2)
    exact, float_sum_id, below = (r["observation_id"] for r in done["remembered"])
    assert {r["observation_id"] for r in three_tenths["results"]} == {exact, float_sum_id}
    assert below not in {r["observation_id"] for r in three_tenths["results"]}
    assert [r["observation_id"] for r in float_sum["results"]] == [float_sum_id]
    assert {r["confidence"] for r in three_tenths["results"]} == {"0.3", "0.30000000000000004"}


# ---- time: superseded facts and as_of ---------------------------------------------------------


async def test_recall_returns_the_current_fact_not_the_superseded_one(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", **alice("Paris", "2024-01-01"))
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        found = await ok(client, "recall", query="Where does Alice live?", explain=True)
    assert [r["observation_id"] for r in found["results"]] == [berlin["observation_id"]]
    [item] = found["results"]
    assert "current" not in item  # current is the default: left out
    assert "superseded_by" not in item
    # an open-ended fact leaves valid_until out
    assert item["fact"] == {
        "subject": "Alice",
        "predicate": "lives_in",  # stored normalised
        "object": "Berlin",
        "valid_from": "2024-06-01T00:00:00Z",
        "cardinality": "one",
    }


async def test_recall_as_of_answers_with_what_was_valid_then(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        march = await ok(
            client, "recall", query="Where does Alice live?", as_of="2024-03-01", explain=True
        )
        before = await ok(client, "recall", query="Where does Alice live?", as_of="2023-12-31")
    assert [r["observation_id"] for r in march["results"]] == [paris["observation_id"]]
    assert march["results"][0].get("current", True) is True
    assert march["results"][0]["fact"]["valid_until"] == "2024-06-01T00:00:00Z"
    assert before["results"] == []


async def test_a_fact_that_begins_later_comes_after_the_current_one(client: Client) -> None:
    # Only an as_of from its start on found it: an agent told of a planned move could not get
    # it back.
    with anyio.fail_after(30):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        tokyo = await ok(
            client,
            "remember",
            **later("Tokyo", f"{LATER}-01-01T00:00:00Z"),
        )
        found = await ok(client, "recall", query="Alice will move to Tokyo.")
        listed = await ok(client, "recall", query="", object="Tokyo")
        then = await ok(client, "recall", query="Alice will move", as_of="2026-01-01")
    assert [r["observation_id"] for r in found["results"]] == [
        berlin["observation_id"],
        tokyo["observation_id"],
    ]
    assert found["results"][1]["current"] is False
    assert [r["observation_id"] for r in listed["results"]] == [tokyo["observation_id"]]
    # What was true on a day asked for holds what began by then, no plan after it.
    assert [r["observation_id"] for r in then["results"]] == [berlin["observation_id"]]


async def test_a_plan_replaced_before_it_began_does_not_come(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        tokyo = await ok(client, "remember", **later("Tokyo", f"{LATER}-01-01T00:00:00Z"))
        rome = await ok(client, "remember", **later("Rome", f"{LATER}-01-01T00:00:00Z"))
        found = await ok(client, "recall", query="", subject="Alice")
    shown = [r["observation_id"] for r in found["results"]]
    assert rome["observation_id"] in shown and tokyo["observation_id"] not in shown


async def test_a_fact_a_replaced_plan_would_have_ended_names_what_replaced_the_plan(
    client: Client,
) -> None:
    # recall and cite_evidence named the Tokyo plan (it never held) as Berlin's superseder,
    # where about named Rome.
    with anyio.fail_after(30):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        tokyo = await ok(client, "remember", **later("Tokyo", f"{LATER}-01-01T00:00:00Z"))
        planned = datetime.now(UTC).isoformat()
        await anyio.sleep(0.01)
        rome = await ok(client, "remember", **later("Rome", f"{LATER}-01-01T00:00:00Z"))
        # As of a day past the plan's start: a fact that still holds names no superseder.
        found = await ok(
            client,
            "recall",
            query="",
            subject="Alice",
            as_of=f"{LATER + 1}-01-01",
            include_superseded=True,
        )
        now = await ok(client, "recall", query="", subject="Alice")
        cited = {
            name: await ok(client, "cite_evidence", id=told["observation_id"])
            for name, told in (("berlin", berlin), ("tokyo", tokyo), ("rome", rome))
        }
        then = await ok(client, "cite_evidence", id=berlin["observation_id"], known_at=planned)
        then_found = await ok(
            client,
            "recall",
            query="",
            subject="Alice",
            include_superseded=True,
            known_at=planned,
            as_of=f"{LATER + 1}-01-01",
        )
    ids = {
        k: v["observation_id"] for k, v in (("berlin", berlin), ("tokyo", tokyo), ("rome", rome))
    }
    shown = {r["observation_id"]: r.get("superseded_by") for r in found["results"]}
    assert shown[ids["berlin"]] == [ids["rome"]]
    # Today Berlin holds: "superseded_by" beside it was read as news that it no longer did.
    assert now["results"][0].get("superseded_by") is None
    assert cited["berlin"]["superseded_by"] == [ids["rome"]]
    assert cited["tokyo"]["superseded_by"] == [ids["rome"]]
    assert (
        ids["rome"] in cited["berlin"]["citation"]
        and ids["tokyo"] not in cited["berlin"]["citation"]
    )
    # Before Rome was told, the Tokyo plan was what would end Berlin.
    assert then["superseded_by"] == [ids["tokyo"]]
    then_shown = {r["observation_id"]: r.get("superseded_by") for r in then_found["results"]}
    assert then_shown[ids["berlin"]] == [ids["tokyo"]]


async def test_a_long_chain_of_replaced_plans_is_followed_to_its_end_by_every_tool(
    client: Client,
) -> None:
    # recall, about and the page stopped after ten plans (naming one that never held), where
    # cite_evidence went on to the last.
    with anyio.fail_after(60):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        plans = [
            await ok(client, "remember", **later(f"City{i}", f"{LATER}-01-01T00:00:00Z"))
            for i in range(13)
        ]
        found = await ok(
            client,
            "recall",
            query="",
            subject="Alice",
            as_of=f"{LATER + 1}-01-01",
            include_superseded=True,
            limit=20,
        )
        cited = await ok(client, "cite_evidence", id=berlin["observation_id"])
        seen = await ok(client, "about", name="Alice")
    last = plans[-1]["observation_id"]
    [shown] = [r for r in found["results"] if r["observation_id"] == berlin["observation_id"]]
    assert shown["superseded_by"] == cited["superseded_by"] == [last]
    [ended] = [
        e for e in seen["timeline"] if e["event"] == "superseded" and e["fact"].endswith("Berlin")
    ]
    assert ended["by"] == last


async def test_include_superseded_ranks_replaced_facts_after_current_ones(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        # a query that matches the old fact's words better than the current one's
        found = await ok(
            client,
            "recall",
            query="Alice lives in Paris.",
            include_superseded=True,
            explain=True,
        )
    assert [r["observation_id"] for r in found["results"]] == [
        berlin["observation_id"],
        paris["observation_id"],
    ]
    assert "current" not in found["results"][0]
    old = found["results"][1]
    assert old["current"] is False
    assert old["superseded_by"] == [berlin["observation_id"]]
    assert old["score"] > found["results"][0]["score"]


async def test_include_superseded_never_crowds_out_the_current_fact(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", **alice("Paris", "2024-01-01"))
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        found = await ok(
            client, "recall", query="Alice lives in Paris.", include_superseded=True, limit=1
        )
    assert [r["observation_id"] for r in found["results"]] == [berlin["observation_id"]]


async def test_older_fact_arriving_late_is_history_not_current(client: Client) -> None:
    with anyio.fail_after(30):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        now = await ok(client, "recall", query="Where does Alice live?")
        then = await ok(client, "recall", query="Where does Alice live?", as_of="2024-02-01")
    assert [r["observation_id"] for r in now["results"]] == [berlin["observation_id"]]
    assert [r["observation_id"] for r in then["results"]] == [paris["observation_id"]]


# ---- bad input --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"query": ""}, "query must not be empty unless a filter (agent, topics, subject,"),
        ({"query": "   "}, "query must not be empty unless a filter (agent, topics, subject,"),
        (
            {"query": "q" * 4001},
            "query is 4001 characters long; the limit is 4000: ask with its key words (an error"
            " line, a name, a path), not a whole log or document",
        ),
        ({"query": "x", "min_confidence": 2}, "min_confidence must be between 0 and 1, got 2"),
        ({"query": "x", "min_confidence": "most"}, "min_confidence must be a decimal number"),
        ({"query": "x", "as_of": "last spring"}, "as_of must be an ISO 8601 time"),
        ({"query": "x", "topics": ["ok", ""]}, "topics[1] must not be empty"),
        ({"query": "x", "agent": "a" * 201}, "agent is 201 characters long; the limit is 200"),
        ({"query": "x", "limit": 0}, "limit must be a whole number from 1 to 100, got 0"),
        ({"query": "x", "limit": 101}, "limit must be a whole number from 1 to 100, got 101"),
        ({"query": "x", "order_by": "random"}, "order_by"),
    ],
)
async def test_bad_input_is_an_error_naming_the_field_and_records_nothing(
    memory_client: Client, memory: Memory, args: dict[str, Any], message: str
) -> None:
    with anyio.fail_after(30):
        done = await ok(memory_client, "remember", text="Something to find.")
        before = counts(memory)
        text = await error(memory_client, "recall", **args)
        after = counts(memory)
        good = await ok(memory_client, "recall", query="something")
        # feedback writes every pending recall event first: only the good recall is there
        await ok(
            memory_client,
            "feedback",
            recall_id=good["recall_id"],
            accepted=[done["observation_id"]],
        )
    assert message in text
    assert after == before
    assert memory.stats()["Recall"] == 1


@pytest.mark.parametrize("field", ["limit", "min_confidence"])
async def test_a_boolean_limit_or_threshold_is_refused(client: Client, field: str) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", text="Something to find.")
        result = await client.call_tool("recall", {"query": "something", field: True})
    assert result.is_error is True
    assert field in result.content[0].text


async def test_each_recall_is_recorded_for_feedback(memory_client: Client, memory: Memory) -> None:
    with anyio.fail_after(30):
        await ok(memory_client, "remember", text="Something to find.")
        first = await ok(memory_client, "recall", query="something")
        second = await ok(memory_client, "recall", query="something")
        judged = await ok(memory_client, "feedback", recall_id=first["recall_id"])
    assert first["recall_id"] != second["recall_id"]
    assert judged["impressions"] == 1
    assert memory.stats()["Recall"] == 2


# ---- hostile strings are data -----------------------------------------------------------------


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_hostile_query_agent_and_topics_are_data(
    memory_client: Client, memory: Memory, hostile: str
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        mine = await ok(memory_client, "remember", text=hostile, topics=[hostile], agent=hostile)
        before = counts(memory)
        by_query = await ok(memory_client, "recall", query=hostile)
        by_agent = await ok(memory_client, "recall", query="", agent=hostile)
        by_topic = await ok(memory_client, "recall", query=hostile, topics=[hostile], explain=True)
        everything = await ok(memory_client, "recall", query="", topics=["bridge"])
    assert by_query["results"][0]["observation_id"] == mine["observation_id"]
    assert by_query["results"][0]["text"] == hostile
    assert [r["observation_id"] for r in by_agent["results"]] == [mine["observation_id"]]
    assert [r["observation_id"] for r in by_topic["results"]] == [mine["observation_id"]]
    assert by_topic["results"][0]["topics"] == [hostile]
    assert {r["observation_id"] for r in everything["results"]} == {
        ids["closed"],
        ids["sign"],
        ids["open"],
    }
    assert counts(memory) == before


@pytest.mark.parametrize(
    ("tool", "read_only"),
    [
        ("recall", True),
        ("find_conflicts", True),
        ("cite_evidence", True),
        ("remember", False),
        ("feedback", False),
        ("forget", False),
    ],
)
async def test_read_tools_are_marked_read_only_and_every_tool_has_an_output_schema(
    client: Client, tool: str, read_only: bool
) -> None:
    with anyio.fail_after(30):
        listed = await client.list_tools()
    [found] = [t for t in listed.tools if t.name == tool]
    assert found.annotations is not None
    assert found.annotations.read_only_hint is read_only
    assert found.output_schema is not None
    assert found.output_schema["type"] == "object"
    assert found.description


async def test_a_known_at_before_anything_was_recorded_says_so(client: Client) -> None:
    # known_at is record time: a recall before the memory first learnt anything found
    # nothing and said nothing ("we knew nothing", where nothing had been told yet).
    with anyio.fail_after(30):
        await ok(client, "remember", text="The SOTA on MMLU is 86.4%.", observed_at="2024-03-01")
        before = await ok(client, "recall", query="MMLU", known_at="2020-01-01T00:00:00Z")
        now = await ok(client, "recall", query="MMLU")
    assert before["results"] == []
    assert before["note"].startswith("nothing was recorded by known_at")
    assert "note" not in now


async def test_an_as_of_before_anything_held_began_says_so(client: Client) -> None:
    # A model unsure of the year asked as_of 2024 of a memory begun in 2026: the empty
    # answer read as "nothing was decided then", and said nothing of the year.
    with anyio.fail_after(30):
        await ok(client, "remember", text="We use Postgres.", observed_at="2026-11-03T10:00:00Z")
        await ok(client, "remember", text="We use Redis.", observed_at="2026-11-05T10:00:00Z")
        before = await ok(client, "recall", query="Postgres", as_of="2024-11-04")
        between = await ok(client, "recall", query="Postgres", as_of="2026-11-04")
    assert before["results"] == []
    assert before["note"] == (
        "nothing held had begun by as_of (the earliest began 2026-11-03T10:00:00Z); ask with"
        " a later as_of"
    )
    assert between["results"] and "note" not in between


async def test_a_known_at_before_anything_was_recorded_says_so_beside_a_where(
    client: Client,
) -> None:
    # With a where nothing is wrong with, the answer was empty and said nothing.
    with anyio.fail_after(30):
        await ok(client, "remember", record={"type": "Customer", "fields": {"country": "Brazil"}})
        before = await ok(
            client, "recall", query="", where={"country": "Brazil"}, known_at="2020-01-01T00:00:00Z"
        )
        wrong = await ok(
            client,
            "recall",
            query="",
            where={"countryy": "Brazil"},
            known_at="2020-01-01T00:00:00Z",
        )
    assert before["results"] == []
    assert before["note"].startswith("nothing was recorded by known_at")
    assert wrong["note"] == 'where.countryy: no record has this field; did you mean "country"?'


async def test_a_listing_cut_at_its_limit_and_its_texts_cut_says_both(client: Client) -> None:
    words = " ".join(f"harbour{i}" for i in range(600))  # 5,389 characters
    await ok(
        client,
        "remember",
        memories=[{"text": f"Report {i}: {words}", "topics": ["harbour"]} for i in range(6)],
    )
    found = await ok(client, "recall", query="", topics=["harbour"], limit=5)
    assert found["note"].startswith("6 match; the first 5 are shown")
    assert "; 5 of the texts cut to about 4,000 characters" in found["note"]


async def test_long_texts_are_cut_to_keep_the_answer_within_its_budget(client: Client) -> None:
    """Ten results of 5,000 characters made an answer of 50,000, past what clients pass a
    model: the longest texts are cut to one length, a short one stays whole, the note says
    so, and cite_evidence gives a cut one whole."""
    words = " ".join(f"harbour{i}" for i in range(600))  # 5,389 characters
    longs = [f"Report {i} on the harbour: {words}" for i in range(9)]
    short = "The harbour opens at dawn."
    await ok(client, "remember", memories=[{"text": t} for t in [*longs, short]])
    found = await ok(client, "recall", query="harbour report", limit=10)
    texts = {r["observation_id"]: r["text"] for r in found["results"]}
    assert len(texts) == 10
    assert short in texts.values()
    cut = [t for t in texts.values() if t != short]
    assert all(t.endswith("…") and 2_000 <= len(t) <= 2_220 for t in cut)
    assert all(any(whole.startswith(t[:-1]) for whole in longs) for t in cut)
    assert sum(map(len, texts.values())) <= 20_000
    assert found["note"] == (
        "9 of the texts cut to about 2,219 characters (ending in …) to keep the answer "
        "within 20,000; cite_evidence(id) gives one whole"
    )
    first = next(i for i, t in texts.items() if t != short)
    cited = await ok(client, "cite_evidence", id=first)
    assert cited["observation"]["text"] in longs


def test_the_budget_holds_for_a_hundred_long_texts_and_cuts_end_cleanly() -> None:
    from doxa.tools.recall import RecalledItem, within_budget

    def item(text: str) -> RecalledItem:
        return RecalledItem(observation_id="obs_1", text=text, confidence="1", observed_at="")

    # A hundred texts of 32,000 characters: 200 each (the budget held; it came to 40,000).
    kept, note = within_budget([item("word " * 6_400) for _ in range(100)])
    assert sum(len(i.text) for i in kept) <= 20_000 and note is not None
    assert note.startswith("100 of the texts cut to about 200 characters")
    # A run of spaces near the cut does not eat the text; an accent stays with its letter.
    [spaced], _ = within_budget([item("a" + " " * 29_998 + "b")])
    assert len(spaced.text) == 20_000 and spaced.text.endswith("…")
    accents = "e\u0301" * 15_000
    [accented], _ = within_budget([item(accents)])
    assert accented.text[-2] == "\u0301" and accented.text.endswith("…")
    # nor between a joiner and what it joins
    [joined], _ = within_budget([item("x" + "\U0001f468\u200d" * 15_000)])
    assert joined.text[-2] != "\u200d" and joined.text.endswith("…")


async def test_an_answer_within_its_budget_is_whole(client: Client) -> None:
    texts = [f"Note {i}: " + "tide " * 300 for i in range(6)]  # 6 x 1,508 characters
    await ok(client, "remember", memories=[{"text": t.strip()} for t in texts])
    found = await ok(client, "recall", query="tide note", limit=10)
    assert sorted(r["text"] for r in found["results"]) == sorted(t.strip() for t in texts)
    assert "note" not in found


async def test_a_recall_finds_a_note_by_the_words_of_its_source_also_after_a_restart(
    settings: Any,
) -> None:
    cited = [
        ("Retrieval quality saturates beyond 10B parameters.", "arxiv:2501.01234"),
        ("Retrieval quality keeps improving up to 70B parameters.", "arxiv:2606.04321"),
        ("Lunch with the team on Friday.", "calendar"),
    ]
    memories = [{"text": text, "source": source} for text, source in cited]
    for attempt in range(2):  # the second server reads the memory the first one wrote
        async with Client(create_server(settings)) as client:
            if attempt == 0:
                await ok(client, "remember", memories=memories)
            found = await ok(client, "recall", query="what did arxiv 2606.04321 say?")
            assert found["results"][0]["source"] == "arxiv:2606.04321"
            assert "note" not in found  # a word of the query was found: no mere nearest
            forgotten = found["results"][0]["observation_id"]
            if attempt == 1:
                await ok(client, "forget", id=forgotten, mode="purge")
                again = await ok(client, "recall", query="2606.04321")
                assert forgotten not in {r["observation_id"] for r in again["results"]}


async def test_a_question_of_a_time_gone_finds_the_fact_that_held_then_though_replaced_since(
    client: Client,
) -> None:
    paris = await ok(
        client,
        "remember",
        text="Alice lives in Paris.",
        observed_at="2026-01-10T09:00:00Z",
        fact={"subject": "Alice", "predicate": "lives in", "object": "Paris"},
    )
    berlin = await ok(
        client,
        "remember",
        text="Alice lives in Berlin now.",
        observed_at="2026-06-02T09:00:00Z",
        fact={
            "subject": "Alice",
            "predicate": "lives in",
            "object": "Berlin",
            "valid_from": "2026-06-01T00:00:00Z",
        },
    )
    now = "2026-12-06T12:00:00Z"

    def shown(found: dict[str, Any]) -> list[tuple[str, bool]]:
        return [(r["observation_id"], r.get("current", True)) for r in found["results"]]

    march = await ok(client, "recall", query="Where did Alice live in March?", as_of=now)
    # Paris held in March: it comes first, marked replaced; Berlin, which began after, next.
    assert shown(march)[:2] == [
        (paris["observation_id"], False),
        (berlin["observation_id"], True),
    ]
    assert march["results"][0]["superseded_by"] == [berlin["observation_id"]]
    # Asked of now, or of a time after Paris ended, the replaced fact stays out.
    for query in ("Where does Alice live?", "Where did Alice live last week?"):
        found = await ok(client, "recall", query=query, as_of=now)
        assert paris["observation_id"] not in dict(shown(found))


@pytest.mark.parametrize("history", [False, True])
async def test_a_question_of_a_day_finds_the_fact_that_held_then_before_notes_made_that_day(
    client: Client, history: bool
) -> None:
    """Berlin from 1 November, Munich from Wednesday 2 December: "Where did Sam live on
    Monday?" asked on Friday is answered by Berlin, which held on Monday, though notes made
    on Monday share its words and Berlin began long before; with ``include_superseded``
    too (Munich, which replaced it, waited above it)."""
    berlin = await ok(
        client,
        "remember",
        text="Sam lives in Berlin.",
        observed_at="2026-11-03T09:00:00Z",
        fact={
            "subject": "Sam",
            "predicate": "lives in",
            "object": "Berlin",
            "valid_from": "2026-11-01T00:00:00Z",
        },
    )
    await ok(
        client,
        "remember",
        text="Sam moved to Munich.",
        observed_at="2026-12-03T09:00:00Z",
        fact={
            "subject": "Sam",
            "predicate": "lives in",
            "object": "Munich",
            "valid_from": "2026-12-02T00:00:00Z",
        },
    )
    for text in ("The team met on Monday about the release.", "Did Sam live stream the talk?"):
        await ok(client, "remember", text=text, observed_at="2026-11-30T10:00:00Z")
    found = await ok(
        client,
        "recall",
        query="Where did Sam live on Monday?",
        as_of="2026-12-04T12:00:00Z",
        include_superseded=history,
    )
    first = found["results"][0]
    assert first["observation_id"] == berlin["observation_id"]
    assert first["current"] is False


async def test_a_question_of_a_time_to_come_finds_the_plan_then_also_asked_as_of_now(
    client: Client,
) -> None:
    await ok(
        client,
        "remember",
        text="Mia lives in Lyon.",
        observed_at="2026-01-10T09:00:00Z",
        fact={"subject": "Mia", "predicate": "lives in", "object": "Lyon"},
    )
    geneva = await ok(
        client,
        "remember",
        text="Mia moves to Geneva in March 2027.",
        observed_at="2026-11-02T09:00:00Z",
        fact={
            "subject": "Mia",
            "predicate": "lives in",
            "object": "Geneva",
            "valid_from": "2027-03-01T00:00:00Z",
        },
    )
    # as_of asks of now, so a plan was left out; the question names April 2027.
    found = await ok(
        client, "recall", query="Where will Mia live in April 2027?", as_of="2026-12-06T12:00:00Z"
    )
    first = found["results"][0]
    assert first["observation_id"] == geneva["observation_id"]
    assert first["current"] is False
    # Asked of now, the plan stays out.
    now = await ok(client, "recall", query="Where does Mia live?", as_of="2026-12-06T12:00:00Z")
    assert geneva["observation_id"] not in {r["observation_id"] for r in now["results"]}


def tables(clicks: int = 237) -> str:
    """A catalogue of 239 tables in about 29,000 characters, one section each; the one
    numbered ``clicks`` alone holds the click stream."""
    sections = [
        f"## events_{i:03d} table: holds the audit stream number {i}, partitioned by hour, "
        f"owner team-{i % 7}, retention {i} days, cols a, b."
        for i in range(1, 240)
    ]
    sections[clicks - 1] = (
        f"## events_{clicks:03d} table: holds the click stream, partitioned by day, "
        "owner data-eng, retention 90 days, cols id, url."
    )
    return "\n\n".join(sections)


async def test_a_cut_long_text_shows_the_part_that_matched(client: Client) -> None:
    """A document whose matching section lies far past its start was cut from its start,
    and the section never shown: it is cut around the passage that matched instead."""
    document = tables()
    assert 28_000 < len(document) < 32_000
    await ok(client, "remember", text=document)
    found = await ok(client, "recall", query="events_237 table")
    [shown] = found["results"]
    text = shown["text"]
    assert "## events_237 table: holds the click stream" in text
    assert text.startswith("…") and len(text) <= 20_000
    # What it shows is the document's own words, whole at both ends.
    inner = text.strip("…")
    assert inner in document
    start = document.index(inner)
    assert document[start - 1].isspace()
    assert document.endswith(inner) or document[start + len(inner)].isspace()
    assert found["note"] == (
        "1 of the texts cut to about 20,000 characters, to the part that matched (… where"
        " cut), to keep the answer within 20,000; cite_evidence(id) gives one whole"
    )
    cited = await ok(client, "cite_evidence", id=shown["observation_id"])
    assert cited["observation"]["text"] == document
    # A query matching its start still shows its start.
    start_found = await ok(client, "recall", query="events_001 table")
    first = start_found["results"][0]["text"]
    assert first.startswith("## events_001 table") and first.endswith("…")
    assert "events_237" not in first
    assert "(ending in …)" in start_found["note"]


async def test_texts_cut_to_a_small_share_show_their_matching_parts_within_the_budget(
    client: Client,
) -> None:
    """Twelve catalogues share the budget (about 1,666 characters each): each shows the
    section the query named, the answer keeps its budget, and a short text stays whole."""
    documents = [
        tables(150).replace("click stream", f"click stream of shop {i}") for i in range(12)
    ]
    short = "The click stream of shop 99 is archived."
    await ok(client, "remember", memories=[{"text": t} for t in [*documents, short]])
    found = await ok(client, "recall", query="events_150 click stream", limit=13)
    texts = [r["text"] for r in found["results"]]
    assert short in texts
    cut = [t for t in texts if t != short]
    assert len(cut) == 12
    assert sum(map(len, texts)) <= 20_000
    assert all(t.startswith("…") and t.endswith("…") and len(t) <= 1_666 for t in cut)
    assert all("## events_150 table: holds the click stream of shop" in t for t in cut)
    assert found["note"].startswith(
        "12 of the texts cut to about 1,663 characters, to the part that matched"
    )
