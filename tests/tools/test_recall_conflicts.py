"""A recalled result names what disputes it (``conflicts``): observations it contradicts or
that contradict it, and other current facts that clash with it, as ``find_conflicts`` finds
them, at the recall's times. Driven through a real in-memory MCP client."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from calls import ok, seed_bridge
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings

pytestmark = pytest.mark.anyio


def wifi(password: str, agent: str, observed_at: str) -> dict[str, Any]:
    return {
        "text": f"The office wifi password is {password}.",
        "agent": agent,
        "observed_at": observed_at,
        "fact": {"subject": "office wifi", "predicate": "password", "object": password},
    }


def shown(found: dict[str, Any]) -> dict[str, list[str]]:
    """Each result's id and the ids it names in ``conflicts`` (none: left out)."""
    return {r["observation_id"]: r.get("conflicts", []) for r in found["results"]}


async def test_a_clash_between_two_agents_is_named_on_both_sides(client: Client) -> None:
    # alice-bot's old password ranked first with no word that bob-bot's current fact says
    # otherwise: an agent that only recalls never learnt of the clash.
    with anyio.fail_after(30):
        tulip = await ok(client, "remember", **wifi("Tulip42", "alice-bot", "2024-05-01T09:00Z"))
        before_bob = datetime.now(UTC).isoformat()
        orchid = await ok(client, "remember", **wifi("Orchid7", "bob-bot", "2024-06-01T09:00Z"))
        now = await ok(client, "recall", query="office wifi password")
        told_then = await ok(client, "recall", query="office wifi password", known_at=before_bob)
        valid_then = await ok(client, "recall", query="office wifi password", as_of="2024-05-15")
    old, new = tulip["observation_id"], orchid["observation_id"]
    assert orchid["conflicts"] == [old]
    assert shown(now) == {old: [new], new: [old]}
    assert now["results"][0]["conflicts"]  # whichever ranks first says it is disputed
    # Before bob-bot told it, or before its fact began, nothing disputed alice-bot's.
    assert shown(told_then) == {old: []}
    assert shown(valid_then) == {old: []}


async def test_a_contradiction_is_named_on_both_sides_until_a_side_is_forgotten(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        linked = await ok(client, "recall", query="Route 9 bridge")
        before_forget = datetime.now(UTC).isoformat()
        await ok(client, "forget", id=ids["open"])
        after = await ok(client, "recall", query="Route 9 bridge")
        then = await ok(client, "recall", query="Route 9 bridge", known_at=before_forget)
    closed, opened, sign = ids["closed"], ids["open"], ids["sign"]
    assert shown(linked) == {closed: [opened], opened: [closed], sign: []}
    assert shown(after) == {closed: [], sign: []}
    assert shown(then) == {closed: [opened], opened: [closed], sign: []}


async def test_a_contradiction_is_named_after_a_restart_and_not_once_a_side_is_purged(
    settings: Settings,
) -> None:
    # The working memory keeps the contradictions recall names: filled from the graph at
    # start-up, and left by what a purge deletes.
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            ids = await seed_bridge(client)
        async with Client(create_server(settings)) as client:
            restarted = await ok(client, "recall", query="Route 9 bridge")
            await ok(client, "forget", id=ids["open"], mode="purge")
            purged = await ok(client, "recall", query="Route 9 bridge")
    closed, opened, sign = ids["closed"], ids["open"], ids["sign"]
    assert shown(restarted) == {closed: [opened], opened: [closed], sign: []}
    assert shown(purged) == {closed: [], sign: []}


async def test_a_contradiction_a_newer_fact_settled_is_not_named(client: Client) -> None:
    def bridge(status: str, at: str) -> dict[str, Any]:
        fact = {"subject": "Route 9 bridge", "predicate": "status", "object": status}
        return {"text": f"The Route 9 bridge is {status}.", "observed_at": at, "fact": fact}

    with anyio.fail_after(30):
        closed = await ok(client, "remember", **bridge("closed", "2024-05-01T08:00:00Z"))
        crossing = await ok(
            client,
            "remember",
            text="Traffic is crossing the Route 9 bridge.",
            agent="driver",
            contradicts=[closed["observation_id"]],
        )
        disputed = await ok(client, "recall", query="Route 9 bridge")
        before_opened = datetime.now(UTC).isoformat()
        opened = await ok(client, "remember", **bridge("open", "2024-05-03T08:00:00Z"))
        settled = await ok(client, "recall", query="Route 9 bridge", include_superseded=True)
        then = await ok(client, "recall", query="Route 9 bridge", known_at=before_opened)
    old, note, new = (x["observation_id"] for x in (closed, crossing, opened))
    assert opened["superseded"] == [old]
    assert shown(disputed) == {old: [note], note: [old]}
    assert shown(settled) == {old: [], note: [], new: []}
    assert shown(then) == {old: [note], note: [old]}  # as the memory held it then


async def test_different_objects_of_a_many_valued_predicate_are_not_named(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        for food, agent in (("jazz", "a"), ("hiking", "b")):
            await ok(
                client,
                "remember",
                text=f"Alice likes {food}.",
                agent=agent,
                fact={"subject": "Alice", "predicate": "likes", "object": food},
            )
        found = await ok(client, "recall", query="What does Alice like?")
        listed = await ok(client, "find_conflicts")
    assert len(found["results"]) == 2
    assert all("conflicts" not in r for r in found["results"])
    assert listed["count"] == 0


async def test_a_result_names_at_most_five_that_dispute_it(client: Client) -> None:
    with anyio.fail_after(60):
        told = [
            await ok(client, "remember", **wifi(f"Pass{i}", f"bot-{i}", f"2024-06-0{i + 1}"))
            for i in range(7)
        ]
        found = await ok(client, "recall", query="office wifi password")
    ids = [t["observation_id"] for t in told]
    assert {r["observation_id"] for r in found["results"]} == set(ids)
    for result in found["results"]:
        named = result["conflicts"]
        assert len(named) == 5 and result["observation_id"] not in named
        assert set(named) < set(ids)


async def test_a_result_names_the_newest_disputes_first(settings: Settings) -> None:
    # Six notes contradicted alice-bot's password, then bob-bot told another: the five named
    # were the oldest links, so the clash told last (and the newest note) went unnamed.
    with anyio.fail_after(90):
        async with Client(create_server(settings)) as client:
            tulip = await ok(client, "remember", **wifi("Tulip42", "alice-bot", "2024-05-01"))
            old = tulip["observation_id"]
            notes = [
                await ok(
                    client,
                    "remember",
                    text=f"Tulip42 failed at desk {i}.",
                    agent="checker",
                    contradicts=[old],
                )
                for i in range(6)
            ]
            orchid = await ok(client, "remember", **wifi("Orchid7", "bob-bot", "2024-06-01"))
            found = await ok(client, "recall", query="", subject="office wifi")
        async with Client(create_server(settings)) as client:
            restarted = await ok(client, "recall", query="", subject="office wifi")
    newest = [orchid["observation_id"], *[n["observation_id"] for n in notes[:0:-1]]][:5]
    for answer in (found, restarted):
        assert shown(answer)[old] == newest
