"""The ``about`` tool and the entity resources, through the MCP client: facts on both sides,
relations two hops away, the timeline, the summary kept in the graph, conflicts, both clocks,
and an unknown name."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import pytest
from calls import LATER, error, ok
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from doxa.store import Memory

pytestmark = pytest.mark.anyio


def spoken(groups: dict[str, Any]) -> dict[str, Any]:
    """Facts by predicate, the predicate in words ("manager_of" -> "manager of")."""
    return {predicate.replace("_", " "): values for predicate, values in groups.items()}


async def fact(
    client: Client, s: str, p: str, o: str, agent: str = "a", **more: Any
) -> dict[str, Any]:
    return await ok(
        client,
        "remember",
        text=f"{s} {p} {o}.",
        agent=agent,
        fact={"subject": s, "predicate": p, "object": o, **more.pop("fact", {})},
        **more,
    )


async def test_facts_where_the_entity_is_the_object_show_though_it_was_never_a_topic(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await fact(client, "Bob", "manager of", "Alice", agent="hr")
        await fact(client, "Alice", "lives in", "Berlin")
        seen = await ok(client, "about", name="  ALICE ")
    assert seen["name"] == "Alice"
    [incoming] = spoken(seen["incoming"])["manager of"]
    assert incoming["subject"] == "Bob" and incoming["agents"] == ["hr"]
    assert incoming["observation_id"].startswith("obs_")
    [lives] = spoken(seen["facts"])["lives in"]
    assert lives["object"] == "Berlin"
    assert seen["counts"] == {"observations": 2, "facts": 2, "believers": 2}
    assert seen["summary"] == "Alice: lives in Berlin; Bob manager of Alice (2 facts, 2 agents)"
    # Lean: nothing empty, nothing null.
    assert "conflicts" not in seen
    assert "null" not in json.dumps(seen)


async def test_related_entities_two_hops_away_with_the_links_that_reach_them(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await fact(client, "Bob", "manager of", "Alice")
        await fact(client, "Bob", "works on", "doxa")
        await fact(client, "Carol", "mentor of", "Bob")
        await fact(client, "doxa", "written in", "Python")  # three hops: not shown
        await ok(
            client,
            "remember",
            text="Alice and Dave planned the offsite.",
            topics=["Alice", "offsite"],
        )
        seen = await ok(client, "about", name="Alice")
    related = {r["name"]: r for r in seen["related"]}
    assert related["Bob"] == {"name": "Bob", "hops": 1, "via": ["Bob manager of Alice"]}
    assert related["offsite"]["hops"] == 1
    assert related["offsite"]["via"] == ["Alice mentioned with offsite"]
    assert related["doxa"] == {
        "name": "doxa",
        "hops": 2,
        "via": ["Bob manager of Alice", "Bob works on doxa"],
    }
    assert related["Carol"]["hops"] == 2
    assert related["Carol"]["via"] == ["Bob manager of Alice", "Carol mentor of Bob"]
    assert "Python" not in related


async def test_nothing_is_two_hops_away_through_a_hub(client: Client) -> None:
    # "about Anna", the user's sister, listed the user's allergies, milk and seat.
    await fact(client, "Anna", "sister of", "Maya")
    for i in range(9):
        await fact(client, "Maya", "likes", f"thing {i}")
    related = {r["name"]: r["hops"] for r in (await ok(client, "about", name="Anna"))["related"]}
    assert related == {"Maya": 1}
    assert len((await ok(client, "about", name="thing 0"))["related"]) == 1


async def test_every_topic_mentioned_with_it_is_one_hop_away(client: Client) -> None:
    # Seven topics mentioned with acme-api, deploy and ci once each: only the five most
    # often were one hop away (ci was two, through bugs; deploy not listed).
    notes = [
        {"text": f"note {i} about {t}", "topics": ["acme-api", t]}
        for t in ("database", "auth", "todo", "bugs", "releases")
        for i in range(3)
    ]
    notes.append({"text": "Deploy with fly deploy.", "topics": ["acme-api", "deploy"]})
    notes.append({"text": "CI runs on Buildkite.", "topics": ["acme-api", "ci", "bugs"]})
    with anyio.fail_after(30):
        await ok(client, "remember", memories=notes)
        seen = await ok(client, "about", name="acme-api")
    hops = {r["name"]: r["hops"] for r in seen["related"]}
    assert hops == {t: 1 for t in ("database", "auth", "todo", "bugs", "releases", "deploy", "ci")}


async def test_timeline_in_valid_time_order_with_record_times(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await fact(client, "Alice", "lives in", "Paris", observed_at="2024-01-01")
        berlin = await fact(client, "Alice", "lives in", "Berlin", observed_at="2024-03-01")
        # Learned last, true first: history, ended when Paris began.
        lyon = await fact(client, "Alice", "lives in", "Lyon", observed_at="2023-06-01")
        seen = await ok(client, "about", name="alice")
    events = [(e["event"], e["observation_id"], e["at"]) for e in seen["timeline"]]
    assert events == [
        ("started", lyon["observation_id"], "2023-06-01T00:00:00Z"),
        ("superseded", lyon["observation_id"], "2024-01-01T00:00:00Z"),
        ("started", paris["observation_id"], "2024-01-01T00:00:00Z"),
        ("superseded", paris["observation_id"], "2024-03-01T00:00:00Z"),
        ("started", berlin["observation_id"], "2024-03-01T00:00:00Z"),
    ]
    by_id = {(e["event"], e["observation_id"]): e for e in seen["timeline"]}
    assert by_id[("superseded", paris["observation_id"])]["by"] == berlin["observation_id"]
    assert by_id[("superseded", lyon["observation_id"])]["by"] == paris["observation_id"]
    assert by_id[("started", lyon["observation_id"])]["fact"] == "Alice lives in Lyon"
    recorded = {
        i: by_id[("started", i)]["recorded"]
        for i in (paris["observation_id"], lyon["observation_id"])
    }
    assert recorded[lyon["observation_id"]] > recorded[paris["observation_id"]]
    # A retraction is an event of its own, at the time it was made.
    with anyio.fail_after(30):
        await ok(client, "forget", id=berlin["observation_id"])
        after = await ok(client, "about", name="alice")
    last = after["timeline"][-1]
    assert (last["event"], last["observation_id"]) == ("retracted", berlin["observation_id"])
    assert last["at"] == last["recorded"] > "2025"
    assert spoken(after["facts"])["lives in"][0]["object"] == "Paris"


async def test_the_summary_is_written_to_the_graph_and_refreshed_when_a_fact_supersedes(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        await fact(memory_client, "Alice", "lives in", "Paris", observed_at="2024-01-01")
        await fact(memory_client, "Alice", "likes", "jazz", agent="b", confidence="0.8")
        await ok(memory_client, "remember", text="Topic note.", topics=["bob"])
        await fact(memory_client, "Bob", "likes", "tea")
        assert memory.settle(timeout=10)
    stored = memory.graph.topic_summaries(["Alice", "bob"])
    first, first_at = stored["Alice"]
    assert first == "Alice: lives in Paris; likes jazz (2 facts, 2 agents)"
    assert stored["bob"][0] == "Bob: likes tea (1 fact, 1 agent)"  # the topic's own node
    with anyio.fail_after(30):
        await fact(memory_client, "Alice", "lives in", "Berlin", observed_at="2024-03-01")
        assert memory.settle(timeout=10)
        seen = await ok(memory_client, "about", name="Alice")
    text, at = memory.graph.topic_summaries(["Alice"])["Alice"]
    assert text == "Alice: lives in Berlin; likes jazz (2 facts, 2 agents)" == seen["summary"]
    assert at > first_at


async def test_purging_the_last_fact_naming_an_entity_takes_its_summary_with_it(
    memory_client: Client, memory: Memory, tmp_path: Path
) -> None:
    with anyio.fail_after(30):
        zed = await fact(memory_client, "Zed", "likes", "tea")
        await fact(memory_client, "Ann", "likes", "tea")
        assert memory.settle(timeout=10)
        before = memory.graph.topic_summaries(["Zed", "Ann"])
        await ok(memory_client, "forget", id=zed["observation_id"], mode="purge")
        assert memory.settle(timeout=10)
    after = memory.graph.topic_summaries(["Zed", "Ann"])
    memory.export(str(tmp_path / "memory.jsonl"))
    assert set(before) == {"Zed", "Ann"}
    assert set(after) == {"Ann"}  # Ann's own, still named
    assert "Zed: likes" not in (tmp_path / "memory.jsonl").read_text()


async def test_conflicts_touching_the_entity(client: Client) -> None:
    with anyio.fail_after(30):
        berlin = await fact(client, "Alice", "lives in", "Berlin", agent="a")
        rome = await fact(client, "Alice", "lives in", "Rome", agent="b")
        note = await ok(client, "remember", text="Bob is on leave.", topics=["Bob"])
        await ok(
            client,
            "remember",
            text="Bob is at work today.",
            topics=["Bob"],
            contradicts=[note["observation_id"]],
        )
        alice = await ok(client, "about", name="Alice")
        bob = await ok(client, "about", name="bob")
        carol = await fact(client, "Carol", "lives in", "Oslo")
        quiet = await ok(client, "about", name="Carol")
    [clash] = alice["conflicts"]
    assert clash["kind"] == "clash"
    assert {clash["a"]["observation_id"], clash["b"]["observation_id"]} == {
        berlin["observation_id"],
        rome["observation_id"],
    }
    [contradiction] = bob["conflicts"]
    assert contradiction["kind"] == "contradiction"
    assert note["observation_id"] in {
        contradiction["a"]["observation_id"],
        contradiction["b"]["observation_id"],
    }
    assert "conflicts" not in quiet and carol["observation_id"]


async def test_as_of_and_known_at_are_two_clocks(client: Client) -> None:
    with anyio.fail_after(30):
        await fact(client, "Alice", "lives in", "Berlin", observed_at="2024-03-01")
        believed = datetime.now(UTC).isoformat()
        await anyio.sleep(0.01)
        # Learned after `believed`, true since before it.
        await fact(client, "Alice", "lives in", "Lisbon", fact={"valid_from": "2024-09-01"})
        now = await ok(client, "about", name="Alice")
        then_known = await ok(client, "about", name="Alice", known_at=believed)
        then_true = await ok(client, "about", name="Alice", as_of=believed)
        in_may = await ok(client, "about", name="Alice", as_of="2024-05-01")
    assert spoken(now["facts"])["lives in"][0]["object"] == "Lisbon"
    assert spoken(then_true["facts"])["lives in"][0]["object"] == "Lisbon"
    assert spoken(then_known["facts"])["lives in"][0]["object"] == "Berlin"
    assert [e["event"] for e in then_known["timeline"]] == ["started"]
    assert spoken(in_may["facts"])["lives in"][0]["object"] == "Berlin"
    # as_of also ends the timeline there.
    assert [e["event"] for e in in_may["timeline"]] == ["started"]


async def test_as_of_relates_what_was_mentioned_together_by_then(client: Client) -> None:
    with anyio.fail_after(30):
        await fact(client, "Alice", "lives in", "Berlin", observed_at="2024-03-01")
        await ok(
            client,
            "remember",
            text="Alice planned the offsite.",
            topics=["Alice", "offsite"],
            observed_at="2024-06-01T00:00:00Z",
        )
        in_may = await ok(client, "about", name="Alice", as_of="2024-05-01")
        in_july = await ok(client, "about", name="Alice", as_of="2024-07-01")
    assert [r["name"] for r in in_may["related"]] == ["Berlin"]  # the offsite came later
    assert {r["name"] for r in in_july["related"]} == {"Berlin", "offsite"}


async def test_known_at_before_a_retraction_still_holds_the_fact(client: Client) -> None:
    with anyio.fail_after(30):
        jazz = await fact(client, "Alice", "likes", "jazz")
        before = datetime.now(UTC).isoformat()
        await anyio.sleep(0.01)
        await ok(client, "forget", id=jazz["observation_id"])
        held = await ok(client, "about", name="Alice", known_at=before)
        now = await ok(client, "about", name="Alice")
    assert spoken(held["facts"])["likes"][0]["object"] == "jazz"
    assert [e["event"] for e in held["timeline"]] == ["started"]
    assert "facts" not in now
    assert [e["event"] for e in now["timeline"]] == ["started", "retracted"]
    assert now["summary"] == "Alice: no current facts; in 0 observations"


async def test_an_unknown_entity_is_an_error_naming_it_and_pointing_to_recall(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await fact(client, "Alice", "lives in", "Berlin")
        message = await error(client, "about", name="Zed")
        bad_time = await error(client, "about", name="Alice", known_at="yesterday")
    assert "name" in message and "'Zed'" in message and "recall" in message
    assert "did you mean" not in message
    assert "known_at" in bad_time


async def test_an_unknown_entity_names_those_it_may_mean(client: Client) -> None:
    # "Raj" named nothing, and the agent was not told of "Raj Patel" (nor "Ana" of "Anna").
    await fact(client, "Raj Patel", "works at", "Northwind")
    await fact(client, "Anna", "lives in", "Porto")
    raj = await error(client, "about", name="Raj")
    ana = await error(client, "about", name="ana")
    assert "did you mean 'Raj Patel'? Or use recall" in raj
    assert "did you mean 'Anna'?" in ana


async def test_an_entity_first_named_after_known_at_is_unknown_then(client: Client) -> None:
    # It was answered as an entity "in 0 observations", where about at that time had said
    # that the name names nothing.
    with anyio.fail_after(30):
        await fact(client, "Alice", "lives in", "Berlin")
        before = datetime.now(UTC).isoformat()
        then = await error(client, "about", name="Bob")
        await anyio.sleep(0.01)
        await fact(client, "Bob", "lives in", "Rome")
        bob = await error(client, "about", name="Bob", known_at=before)
        rome = await error(client, "about", name="Rome", known_at=before)
        alice = await ok(client, "about", name="Alice", known_at=before)
    assert "'Bob' names nothing in the memory" in then
    assert "'Bob' named nothing in the memory at known_at" in bob
    assert "'Rome' named nothing" in rome
    assert spoken(alice["facts"])["lives in"][0]["object"] == "Berlin"


async def test_entity_resources_list_and_read(client: Client) -> None:
    with anyio.fail_after(30):
        await fact(client, "Bob", "manager of", "Alice")
        await fact(client, "Alice", "lives in", "Berlin")
        await ok(client, "remember", text="Alice's birthday is in May.", topics=["alice"])
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        listed = await client.read_resource("doxa://entities")
        one = await client.read_resource("doxa://entity/alice")
        stats = await client.read_resource("doxa://stats")
        tool = await ok(client, "about", name="alice")
        with pytest.raises(MCPError, match="'Zed'"):
            await client.read_resource("doxa://entity/Zed")
    assert [str(r.uri) for r in resources] == ["doxa://entities", "doxa://stats"]
    counts = json.loads(stats.contents[0].text)["counts"]  # type: ignore[union-attr]
    assert counts["Observation"] == 3 and counts["Belief"] == 3 and counts["Topic"] == 3
    assert [t.uri_template for t in templates] == ["doxa://entity/{name}"]
    entities = json.loads(listed.contents[0].text)["entities"]  # type: ignore[union-attr]
    assert entities[0] == {"name": "Alice", "observations": 3, "facts": 2}
    assert {e["name"] for e in entities} == {"Alice", "Bob", "Berlin"}
    assert one.contents[0].mime_type == "application/json"
    assert json.loads(one.contents[0].text) == tool  # type: ignore[union-attr]


async def test_a_predicate_of_many_values_lists_twenty_and_counts_the_rest(
    client: Client,
) -> None:
    # 1,000 likes came back whole (145 KB) while the timeline showed 40.
    likes = {"subject": "Ana", "predicate": "likes", "cardinality": "many"}
    with anyio.fail_after(60):
        await ok(
            client,
            "remember",
            memories=[
                {"text": f"Ana likes song {i}.", "fact": {**likes, "object": f"song {i}"}}
                for i in range(26)
            ],
        )
        seen = await ok(client, "about", name="Ana")
    assert len(seen["facts"]["likes"]) == 20
    assert seen["counts"]["facts"] == 26 and seen["counts"]["unlisted"] == 6


async def test_a_fact_that_never_held_does_not_start_nor_end_another(client: Client) -> None:
    # Oslo from a later year was replaced by Tokyo from then before it began: the timeline said Oslo
    # started, and named it as Rome's superseder. A fact told with only an end already past
    # ("busy until 2020", its start unknown) was shown starting when it was told, after it
    # ended.
    lives = {"subject": "Rita", "predicate": "lives in"}
    with anyio.fail_after(30):
        await ok(client, "remember", text="Rita lives in Rome.", fact={**lives, "object": "Rome"})
        for city in ("Oslo", "Tokyo"):
            await ok(
                client,
                "remember",
                text=f"Rita will live in {city} from {LATER}.",
                fact={**lives, "object": city, "valid_from": f"{LATER}-01-01T00:00:00Z"},
            )
        await ok(
            client,
            "remember",
            text="Rita was busy until 2020.",
            fact={
                "subject": "Rita",
                "predicate": "status",
                "object": "busy",
                "valid_until": "2020-01-01T00:00:00Z",
            },
        )
        seen = await ok(client, "about", name="Rita")
    events = [(e["event"], e["fact"], e.get("by")) for e in seen["timeline"]]
    ids = {e["fact"]: e["observation_id"] for e in seen["timeline"]}
    assert ("started", "Rita lives in Oslo", None) not in events
    assert ("superseded", "Rita lives in Rome", ids["Rita lives in Tokyo"]) in events
    assert ("superseded", "Rita lives in Oslo", ids["Rita lives in Tokyo"]) in events
    assert [e for e in events if e[1] == "Rita status busy"] == [
        ("ended", "Rita status busy", None)
    ]
    # Recorded once Tokyo was known: not when Oslo's link was.
    timeline = {(e["event"], e["fact"]): e["recorded"] for e in seen["timeline"]}
    started = timeline[("started", "Rita lives in Tokyo")]
    assert timeline[("superseded", "Rita lives in Rome")] >= started
