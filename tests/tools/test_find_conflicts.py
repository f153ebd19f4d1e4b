"""The ``find_conflicts`` tool, driven through a real in-memory MCP client."""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from calls import LATER, error, ok, seed_bridge
from mcp.client import Client

from doxa.store import Memory

pytestmark = pytest.mark.anyio

ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

HOSTILE = [
    "x'); MATCH (n) DETACH DELETE n; //",
    '" OR 1=1 --',
    "id IN ('a') OR TRUE",
    "Ünïcödé ✓ 🧠\nnew line",
]


def alice(city: str, observed_at: str, agent: str) -> dict[str, Any]:
    return {
        "text": f"Alice lives in {city}.",
        "agent": agent,
        "topics": ["Alice"],
        "observed_at": observed_at,
        "fact": {"subject": "Alice", "predicate": "lives in", "object": city},
    }


def pairs(found: dict[str, Any]) -> set[tuple[str, frozenset[str]]]:
    return {
        (c["kind"], frozenset((c["a"]["observation_id"], c["b"]["observation_id"])))
        for c in found["conflicts"]
    }


async def test_contradiction_between_two_agents_is_found(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        for_scout = await ok(client, "find_conflicts", agent="scout")
        between = await ok(client, "find_conflicts", agent="scout", other_agent="driver")
        reversed_ = await ok(client, "find_conflicts", agent="driver", other_agent="scout")
        everyone = await ok(client, "find_conflicts")
    expected = {("contradiction", frozenset((ids["open"], ids["closed"])))}
    assert pairs(for_scout) == pairs(between) == pairs(reversed_) == pairs(everyone) == expected
    assert between["count"] == 1
    [conflict] = between["conflicts"]
    assert conflict["a"] == {
        "observation_id": ids["open"],
        "text": "The bridge on Route 9 is open.",
        "confidence": "0.8",
        "agents": ["driver"],
    }
    assert conflict["b"] == {
        "observation_id": ids["closed"],
        "text": "The bridge on Route 9 is closed for repairs.",
        "confidence": "0.9",
        "agents": ["scout"],
    }
    assert ISO_Z.match(conflict["since"])
    assert "subject" not in conflict and "predicate" not in conflict


async def test_agents_outside_a_conflict_see_none(client: Client) -> None:
    with anyio.fail_after(30):
        await seed_bridge(client)
        await ok(client, "remember", text="Trains run on time.", agent="clerk")
        clerk = await ok(client, "find_conflicts", agent="clerk")
        scout_and_clerk = await ok(client, "find_conflicts", agent="scout", other_agent="clerk")
        unknown = await ok(client, "find_conflicts", agent="nobody-at-all")
    assert clerk == {"conflicts": [], "count": 0}
    assert scout_and_clerk == {"conflicts": [], "count": 0}
    assert unknown["conflicts"] == [] and unknown["count"] == 0
    assert unknown["note"].startswith("no agent 'nobody-at-all' believes anything; agents: ")


async def test_topic_narrows_conflicts_to_either_side_mentioning_it(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        bridge = await ok(client, "find_conflicts", topic="Bridge")
        route = await ok(client, "find_conflicts", topic="route-9")
        weather = await ok(client, "find_conflicts", topic="weather")
    expected = {("contradiction", frozenset((ids["open"], ids["closed"])))}
    assert pairs(bridge) == pairs(route) == expected
    assert weather["count"] == 0


async def test_clashing_current_facts_of_two_agents_are_a_clash(client: Client) -> None:
    with anyio.fail_after(30):
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01", "a"))
        rome = await ok(client, "remember", **alice("Rome", "2024-07-01", "b"))
        between = await ok(client, "find_conflicts", agent="a", other_agent="b")
        for_b = await ok(client, "find_conflicts", agent="b")
        on_topic = await ok(client, "find_conflicts", topic="alice")
    assert rome["conflicts"] == [berlin["observation_id"]]
    expected = {("clash", frozenset((berlin["observation_id"], rome["observation_id"])))}
    assert pairs(between) == pairs(for_b) == pairs(on_topic) == expected
    [clash] = between["conflicts"]
    assert clash["subject"] == "Alice"
    assert clash["predicate"] == "lives_in"
    assert "since" not in clash
    assert {clash["a"]["text"], clash["b"]["text"]} == {
        "Alice lives in Berlin.",
        "Alice lives in Rome.",
    }
    assert {tuple(clash["a"]["agents"]), tuple(clash["b"]["agents"])} == {("a",), ("b",)}


async def test_topic_finds_a_clash_of_facts_naming_it_without_topics(client: Client) -> None:
    # about("Carol") showed the clash; find_conflicts(topic="Carol") found none, and the
    # review-conflicts prompt makes that call.
    def lives(city: str, agent: str) -> dict[str, Any]:
        return alice(city, "2024-06-01", agent) | {"topics": [], "text": f"Carol: {city}."}

    with anyio.fail_after(30):
        milan = await ok(client, "remember", **lives("Milan", "a") | {"fact": carol("Milan")})
        oslo = await ok(client, "remember", **lives("Oslo", "b") | {"fact": carol("Oslo")})
        subject = await ok(client, "find_conflicts", topic="carol")
        obj = await ok(client, "find_conflicts", topic="Oslo")
        about = await ok(client, "about", name="Carol")
    expected = {("clash", frozenset((milan["observation_id"], oslo["observation_id"])))}
    assert pairs(subject) == pairs(obj) == expected
    assert len(about["conflicts"]) == 1


def carol(city: str) -> dict[str, str]:
    return {"subject": "Carol", "predicate": "lives in", "object": city}


async def test_a_superseded_fact_does_not_clash(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", **alice("Paris", "2024-01-01", "a"))
        await ok(client, "remember", **alice("Berlin", "2024-06-01", "a"))
        same_agent = await ok(client, "find_conflicts")
        rome = await ok(client, "remember", **alice("Rome", "2024-07-01", "b"))
        with_rome = await ok(client, "find_conflicts")
    assert same_agent["count"] == 0
    assert with_rome["count"] == 1
    assert rome["observation_id"] in {
        with_rome["conflicts"][0]["a"]["observation_id"],
        with_rome["conflicts"][0]["b"]["observation_id"],
    }


async def test_agreeing_facts_do_not_clash(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", **alice("Berlin", "2024-06-01", "a"))
        agree = await ok(
            client,
            "remember",
            text="Alice is living in berlin.",
            agent="b",
            fact={"subject": "ALICE", "predicate": "lives in", "object": "berlin"},
        )
        found = await ok(client, "find_conflicts")
    assert "conflicts" not in agree
    assert found["count"] == 0


async def test_retracted_side_is_no_longer_a_conflict(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        await ok(client, "forget", id=ids["open"])
        found = await ok(client, "find_conflicts", agent="scout")
    assert found == {"conflicts": [], "count": 0}


async def test_a_contradiction_a_newer_fact_settled_is_no_longer_a_conflict(
    client: Client,
) -> None:
    # Doing as the review prompt says (a newer fact superseding the old one) left the
    # conflict listed against a bridge no longer said to be closed.
    def bridge(status: str, at: str, **more: Any) -> dict[str, Any]:
        fact = {"subject": "Route 9 bridge", "predicate": "status", "object": status}
        return {"text": f"The Route 9 bridge is {status}.", "observed_at": at, "fact": fact | more}

    closed = await ok(client, "remember", **bridge("closed", "2024-05-01T08:00:00Z"))
    crossing = {"text": "Traffic is crossing the Route 9 bridge.", "agent": "driver"}
    await ok(client, "remember", **crossing, contradicts=[closed["observation_id"]])
    # A fact that ended as told, or begins later, is still a side.
    works = {"subject": "Route 9 bridge", "predicate": "works", "object": "painting"}
    told = await ok(
        client,
        "remember",
        text="The bridge was being painted in April.",
        fact=works | {"valid_from": "2024-04-01T00:00:00Z", "valid_until": "2024-05-01T00:00:00Z"},
    )
    planned = await ok(
        client,
        "remember",
        text=f"The bridge gets new lights in {LATER}.",
        fact=works | {"object": "lighting", "valid_from": f"{LATER}-01-01T00:00:00Z"},
    )
    for said, when in ((told, "in April"), (planned, f"in {LATER}")):
        nobody = f"Nobody works on the bridge {when}."
        await ok(
            client, "remember", text=nobody, agent="driver", contradicts=[said["observation_id"]]
        )
    before = await ok(client, "find_conflicts")
    moment = datetime.now(UTC).isoformat()
    opened = await ok(client, "remember", **bridge("open", "2024-05-03T08:00:00Z"))
    assert opened["superseded"] == [closed["observation_id"]]
    after = await ok(client, "find_conflicts")
    then = await ok(client, "find_conflicts", known_at=moment)
    about = await ok(client, "about", name="Route 9 bridge")
    sides = {c["b"]["observation_id"] for c in after["conflicts"]}
    assert before["count"] == 3 and after["count"] == 2 == len(about["conflicts"])
    assert sides == {told["observation_id"], planned["observation_id"]}
    assert then["count"] == 3  # as the memory held them before the bridge opened


async def test_other_agent_without_agent_is_an_error(client: Client) -> None:
    with anyio.fail_after(30):
        text = await error(client, "find_conflicts", other_agent="driver")
    assert "agent is required when other_agent is given" in text


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_hostile_filters_are_data_and_touch_nothing(
    memory_client: Client, memory: Memory, hostile: str
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        before = memory.stats()
        by_agent = await ok(memory_client, "find_conflicts", agent=hostile)
        between = await ok(memory_client, "find_conflicts", agent="scout", other_agent=hostile)
        by_topic = await ok(memory_client, "find_conflicts", topic=hostile)
        everyone = await ok(memory_client, "find_conflicts")
    assert by_agent["count"] == between["count"] == by_topic["count"] == 0
    assert pairs(everyone) == {("contradiction", frozenset((ids["open"], ids["closed"])))}
    assert memory.stats() == before


async def test_limit_caps_the_conflicts_described_and_count_tells_them_all(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        for city, agent in (("Paris", "scout"), ("Rome", "driver"), ("Oslo", "pilot")):
            await ok(client, "remember", **alice(city, "2024-05-01T08:00:00Z", agent))
        everything = await ok(client, "find_conflicts")
        first = await ok(client, "find_conflicts", limit=1)
        refused = await error(client, "find_conflicts", limit=0)
    assert everything["count"] == len(everything["conflicts"]) == 3  # three pairs
    assert first["count"] == 3
    assert first["conflicts"] == everything["conflicts"][:1]
    assert "limit" in refused and "1 to 1000" in refused


async def test_a_name_in_either_unicode_form_is_one_entity(client: Client) -> None:
    # "Café Müller" typed (NFC) and pasted with combining accents (NFD) look the same and
    # were two entities: their facts did not clash, and about found half of them.
    typed, pasted = (unicodedata.normalize(form, "Café Müller") for form in ("NFC", "NFD"))
    assert typed != pasted
    with anyio.fail_after(30):
        for who, name, status in (("reader", typed, "closed"), ("checker", pasted, "open")):
            await ok(
                client,
                "remember",
                text=f"{name} is {status}.",
                agent=who,
                fact={"subject": name, "predicate": "status", "object": status},
            )
        found = await ok(client, "find_conflicts")
        seen = await ok(client, "about", name=pasted)
    assert [c["kind"] for c in found["conflicts"]] == ["clash"]
    assert sorted(f["object"] for f in seen["facts"]["status"]) == ["closed", "open"]


async def test_a_side_lists_an_agent_that_holds_it_until_its_next_fact_begins(
    client: Client,
) -> None:
    # reader shares Paris with editor and tells Berlin from later on: recall and about show reader
    # holding Paris until then; find_conflicts left reader out of the side, and its filter
    # by reader found nothing.
    def paris(agent: str) -> dict[str, Any]:
        return {
            "text": "Alice lives in Paris.",
            "agent": agent,
            "fact": {"subject": "Alice", "predicate": "lives in", "object": "Paris",
                     "valid_from": "2024-01-01T00:00:00Z"},
        }  # fmt: skip

    with anyio.fail_after(30):
        held = await ok(client, "remember", **paris("reader"))
        await ok(client, "remember", **paris("editor"))
        await ok(
            client,
            "remember",
            text=f"Alice will move to Berlin in {LATER}.",
            agent="reader",
            fact={"subject": "Alice", "predicate": "lives in", "object": "Berlin",
                  "valid_from": f"{LATER}-01-01T00:00:00Z"},
        )  # fmt: skip
        await ok(
            client,
            "remember",
            text="Alice never lived in Paris.",
            agent="checker",
            contradicts=[held["observation_id"]],
        )
        recalled = await ok(
            client, "recall", query="", subject="Alice", agent="reader", explain=True
        )
        mine = await ok(client, "find_conflicts", agent="reader")
        seen = await ok(client, "about", name="Alice")
    assert recalled["results"][0]["observation_id"] == held["observation_id"]
    assert recalled["results"][0]["agents"] == ["editor", "reader"]
    said = [c for c in mine["conflicts"] if c["kind"] == "contradiction"]
    [side] = [c["b"] if c["a"]["agents"] == ["checker"] else c["a"] for c in said]
    assert side["agents"] == ["editor", "reader"]
    [about] = [c for c in seen["conflicts"] if c["kind"] == "contradiction"]
    assert ["editor", "reader"] in (about["a"]["agents"], about["b"]["agents"])
    # From Berlin on, reader and editor disagree: a clash to come, listed now.
    [coming] = [c for c in mine["conflicts"] if c["kind"] == "clash"]
    assert coming["begins"].startswith(f"{LATER}-01-01")
    assert {*coming["a"]["agents"], *coming["b"]["agents"]} == {"editor", "reader"}


async def test_conflicts_over_long_texts_are_cut_to_the_budget(client: Client) -> None:
    """Six reviews contradicting one long design document repeated it in every conflict
    (130,000 characters): the sides' texts are cut, each to one length, and the note says
    so; about's conflicts alike."""
    words = " ".join(f"cache{i}" for i in range(1_200))  # 10,889 characters
    design = await ok(client, "remember", text=f"Caching design: {words}", topics=["caching"])
    for i in range(6):
        await ok(
            client,
            "remember",
            text=f"Review {i}: the caching design is wrong. {words}",
            agent="reviewer",
            contradicts=[design["observation_id"]],
        )
    found = await ok(client, "find_conflicts")
    assert found["count"] == 6
    texts = [c[side]["text"] for c in found["conflicts"] for side in ("a", "b")]
    assert all(t.endswith("…") for t in texts) and sum(map(len, texts)) <= 20_000
    assert found["note"].startswith("12 of the texts cut to about 1,666 characters")
    seen = await ok(client, "about", name="caching")
    texts = [c[side]["text"] for c in seen["conflicts"] for side in ("a", "b")]
    assert len(texts) == 12 and sum(map(len, texts)) <= 20_000
    assert seen["note"] == found["note"]


async def test_a_filter_naming_nothing_held_says_so(client: Client) -> None:
    """An agent cannot know its own name: "claude" found no conflict and read it as "nothing
    disagrees" before acting on a plan. A filter naming no agent that believes anything, or
    no topic or entity, says so in a note, with the names it may have meant."""
    await seed_bridge(client)
    found = await ok(client, "find_conflicts", agent="claude")
    assert found == {
        "conflicts": [],
        "count": 0,
        "note": "no agent 'claude' believes anything; agents: driver, scout (or leave agent out)",
    }
    found = await ok(client, "find_conflicts", agent="scout", other_agent="drivr")
    assert found["note"] == (
        "no agent 'drivr' believes anything; agents: driver (or leave other_agent out)"
    )
    found = await ok(client, "find_conflicts", topic="bridges")
    assert found["note"] == (
        "topic 'bridges' names nothing in the memory (no fact or topic); did you mean 'bridge'?"
    )
    # Names that are held, with no conflict among them, say nothing more.
    await ok(client, "remember", text="The canteen opens at 8.", agent="carol", topics=["canteen"])
    found = await ok(client, "find_conflicts", agent="carol", topic="canteen")
    assert found == {"conflicts": [], "count": 0}
