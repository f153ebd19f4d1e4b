"""recall says when its results are only the nearest: nothing shares a word with the query,
is close to it in meaning, or was found by a name, a time or feedback."""

from __future__ import annotations

import pytest
from calls import ok
from mcp.client import Client

pytestmark = pytest.mark.anyio

NOTES = [
    "I switched to oat milk.",
    "My sister Anna moved to Lisbon in March.",
    "Dentist appointment next Friday at 9.",
    "I'm allergic to penicillin.",
    "We adopted a cat named Miso.",
    "The car needs new tyres before winter.",
]
NEAREST = "nothing shares a word with the query or is close in meaning (nearest "


async def told(client: Client) -> None:
    await ok(
        client, "remember", memories=[{"text": t, "topics": ["home"]} for t in NOTES], agent="me"
    )


async def test_results_that_match_nothing_asked_are_said_to_be_only_the_nearest(
    client: Client,
) -> None:
    await told(client)
    found = await ok(client, "recall", query="neighbour divorce")
    assert len(found["results"]) == len(NOTES)
    assert found["note"].startswith(NEAREST)
    assert found["note"].endswith(
        " alike): these are only the nearest, and what was asked may not be in the memory"
    )


@pytest.mark.parametrize(
    "asked",
    [
        {"query": "oat milk"},  # a word shared
        {"query": "neighbour divorce", "topics": ["home"]},  # a filter chose them
        {"query": "neighbour divorce", "agent": "me"},
    ],
)
async def test_results_found_by_the_query_or_a_filter_say_nothing_of_it(
    client: Client, asked: dict[str, object]
) -> None:
    await told(client)
    found = await ok(client, "recall", **asked)
    assert found["results"] and "note" not in found


async def test_a_result_accepted_for_the_query_is_no_mere_nearest(client: Client) -> None:
    await told(client)
    first = await ok(client, "recall", query="neighbour divorce", limit=1)
    [shown] = first["results"]
    await ok(client, "feedback", recall_id=first["recall_id"], accepted=[shown["observation_id"]])
    again = await ok(client, "recall", query="neighbour divorce")
    assert again["results"][0]["observation_id"] == shown["observation_id"]
    assert "note" not in again
