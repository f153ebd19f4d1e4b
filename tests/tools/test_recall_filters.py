"""recall's exact filters on a fact's parts and on the episode, through the MCP client: with
a query they narrow the ranking, without one they list what matches."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from calls import error, ok
from mcp.client import Client

pytestmark = pytest.mark.anyio


async def seed(client: Client) -> dict[str, str]:
    ids: dict[str, str] = {}
    for key, s, p, o, episode in [
        ("bob_alice", "Bob", "manager of", "Alice", "standup"),
        ("alice_berlin", "Alice", "lives in", "Berlin", "standup"),
        ("carol_berlin", "Carol", "lives_in", "Berlin", None),
        ("alice_jazz", "Alice", "likes", "jazz", None),
    ]:
        done = await ok(
            client,
            "remember",
            text=f"{s} {p} {o}.",
            fact={"subject": s, "predicate": p, "object": o},
            **({"episode": episode} if episode else {}),
        )
        ids[key] = done["observation_id"]
    note = await ok(client, "remember", text="Alice talked about Berlin.", episode="Standup")
    ids["note"] = note["observation_id"]
    return ids


def found(result: dict[str, Any]) -> set[str]:
    return {r["observation_id"] for r in result["results"]}


async def test_fact_and_episode_filters_list_what_matches_without_a_query(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        ids = await seed(client)
        by_subject = await ok(client, "recall", query="", subject=" alice ")
        by_object = await ok(client, "recall", query="", object="BERLIN")
        by_predicate = await ok(client, "recall", query="", predicate="Lives In")
        by_episode = await ok(client, "recall", query="", episode="STANDUP")
        both = await ok(client, "recall", query="", subject="Alice", object="Berlin")
        nothing = await ok(client, "recall", query="", subject="Berlin")
    assert found(by_subject) == {ids["alice_berlin"], ids["alice_jazz"]}
    assert found(by_object) == {ids["alice_berlin"], ids["carol_berlin"]}
    # "lives in" and "lives_in" are one predicate.
    assert found(by_predicate) == {ids["alice_berlin"], ids["carol_berlin"]}
    # Episodes are named as topics are: "standup" and "Standup" are one.
    assert found(by_episode) == {ids["bob_alice"], ids["alice_berlin"], ids["note"]}
    assert found(both) == {ids["alice_berlin"]}
    assert found(nothing) == set()


async def test_fact_filters_narrow_a_query(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed(client)
        unfiltered = await ok(client, "recall", query="Alice Berlin")
        as_object = await ok(client, "recall", query="Alice Berlin", object="Alice")
        in_episode = await ok(client, "recall", query="Berlin", episode="standup")
        by_predicate = await ok(client, "recall", query="Berlin", predicate="lives_in")
    assert {ids["note"], ids["alice_berlin"]} <= found(unfiltered)
    assert found(as_object) == {ids["bob_alice"]}
    assert ids["alice_berlin"] in found(in_episode)
    assert found(in_episode) <= {ids["alice_berlin"], ids["bob_alice"], ids["note"]}
    assert found(by_predicate) == {ids["alice_berlin"], ids["carol_berlin"]}


async def test_an_empty_query_without_any_filter_is_refused_naming_them(client: Client) -> None:
    with anyio.fail_after(30):
        message = await error(client, "recall", query=" ")
        blank = await error(client, "recall", query="", subject="  ")
    for text in (message, blank):
        assert "query" in text and "subject" in text and "episode" in text


async def test_an_agent_that_believes_nothing_is_named_with_those_that_do(client: Client) -> None:
    # An agent cannot know its own name: "claude" found nothing and no note, read as
    # "nothing is known".
    await ok(client, "remember", text="Maya's sister is Anna.", agent="claude-desktop")
    await ok(client, "remember", text="Maya runs.", agent="cursor")
    found = await ok(client, "recall", query="sister", agent="claude")
    assert found["results"] == []
    assert found["note"] == (
        "no agent 'claude' believes anything; agents: claude-desktop (or leave agent out)"
    )
    other = await ok(client, "recall", query="sister", agent="zed")
    assert other["note"] == (
        "no agent 'zed' believes anything; agents: claude-desktop, cursor (or leave agent out)"
    )
    known = await ok(client, "recall", query="nothing like it", agent="cursor", limit=1)
    assert "note" not in known


async def test_a_name_filter_naming_nothing_held_says_so(client: Client) -> None:
    """A model guesses the names it filters by: predicate "status" where facts say "state"
    found nothing and no note, read as "nothing is known". Each name filter naming nothing
    held says so, with the names it may have meant."""
    await seed(client)
    await ok(
        client,
        "remember",
        text="Ticket PROJ-7 is open.",
        topics=["tickets"],
        fact={"subject": "PROJ-7", "predicate": "state", "object": "open"},
    )

    async def note(**filters: Any) -> str | None:
        found = await ok(client, "recall", query="", **filters)
        assert found["results"] == []
        return found.get("note")

    assert await note(predicate="status") == (
        "predicate: no fact has the predicate 'status'; did you mean 'state'?"
    )
    assert await note(subject="PROJ7") == (
        "subject: no fact has 'PROJ7' as its subject; did you mean 'PROJ-7'?"
    )
    assert await note(object="Berlinn") == (
        "object: no fact has 'Berlinn' as its object; did you mean 'Berlin'?"
    )
    assert await note(topics=["ticket", "nothing"]) == (
        "topics: no topic or fact names 'ticket' or 'nothing'; did you mean 'tickets'?"
    )
    assert await note(episode="stand-up") == (
        "episode: no memory has the episode 'stand-up'; did you mean 'standup'?"
    )
    # Names that are held but hold nothing together say nothing: the filter is no mistake.
    assert await note(subject="PROJ-7", predicate="lives in") is None
    with anyio.fail_after(10):
        found = await ok(client, "recall", query="where", subject="Carol", predicate="likes")
    assert found["results"] == [] and "note" not in found


async def test_a_name_typed_without_its_accents_is_offered_with_them(client: Client) -> None:
    # "zoe" for "Zoë" was too unlike by spelling (0.67) to be offered: the note said only
    # that nothing was named, and the model read "nothing is known about her".
    await ok(client, "remember", text="Zoë prefers oat milk.", topics=["Zoë", "Café Müller"])
    found = await ok(client, "recall", query="milk", topics=["zoe"])
    assert found["results"] == []
    assert found["note"] == "topics: no topic or fact names 'zoe'; did you mean 'Zoë'?"
    cafe = await ok(client, "recall", query="milk", topics=["cafe muller"])
    assert cafe["note"].endswith("did you mean 'Café Müller'?")


async def test_a_purged_name_is_no_name_a_note_may_have_meant(client: Client) -> None:
    """A purge leaves no trace a tool reads: the names of a purged fact and its topics were
    still offered as what a filter naming nothing may have meant (recall's, find_conflicts'
    and about's "did you mean 'Zorblax'?")."""
    said = await ok(
        client,
        "remember",
        text="Zorblax owns the vault.",
        topics=["Project Nightjar"],
        fact={"subject": "Zorblax", "predicate": "owns", "object": "vault"},
    )
    await ok(client, "remember", text="Anna likes tea.", topics=["misc"])
    await ok(client, "forget", id=said["observation_id"], mode="purge")
    notes = [
        (await ok(client, "recall", query="", **filters)).get("note") or ""
        for filters in (
            {"subject": "Zorblx"},
            {"object": "vaul"},
            {"topics": ["Project Nightjr"]},
        )
    ]
    notes.append((await ok(client, "find_conflicts", topic="Nightjar")).get("note") or "")
    notes.append(await error(client, "about", name="Zorblx"))
    assert notes[0] == "subject: no fact has 'Zorblx' as its subject"
    meant = ("'Zorblax'", "'Project Nightjar'", "'vault'")
    assert not any(name in note for note in notes for name in meant), notes
    # Named as written, a purged fact's subject is no subject held either.
    found = await ok(client, "recall", query="", subject="Zorblax")
    assert found.get("note") == "subject: no fact has 'Zorblax' as its subject"


async def test_an_agent_whose_every_memory_was_purged_believes_nothing(client: Client) -> None:
    said = await ok(client, "remember", text="The vault code is 4411.", agent="ghost")
    await ok(client, "remember", text="Anna likes tea.", agent="cursor")
    await ok(client, "forget", id=said["observation_id"], mode="purge")
    found = await ok(client, "recall", query="vault", agent="ghost")
    assert found.get("note") == (
        "no agent 'ghost' believes anything; agents: cursor (or leave agent out)"
    )
    conflicts = await ok(client, "find_conflicts", agent="ghst")
    assert conflicts.get("note") == (
        "no agent 'ghst' believes anything; agents: cursor (or leave agent out)"
    )
