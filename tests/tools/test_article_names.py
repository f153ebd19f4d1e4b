"""Names that differ only by a leading article ("the user" and "User", "The Beatles" and
"Beatles") are one entity, through the MCP client: one fact key for superseding, one entity
for ``about``, one name for recall's filters and one topic; "A" alone and "The The" keep
their article."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from calls import error, ok
from mcp.client import Client
from mcp.types import ResourceTemplateReference

pytestmark = pytest.mark.anyio

ENTITY = ResourceTemplateReference(uri="doxa://entity/{name}")


async def fact(client: Client, s: str, p: str, o: str, **more: Any) -> dict[str, Any]:
    return await ok(
        client,
        "remember",
        text=f"{s} {p} {o}.",
        fact={"subject": s, "predicate": p, "object": o},
        **more,
    )


def found(result: dict[str, Any]) -> set[str]:
    return {r["observation_id"] for r in result["results"]}


async def test_a_fact_about_the_user_is_superseded_by_one_about_user(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await fact(client, "the user", "lives in", "Paris", observed_at="2024-01-01")
        berlin = await fact(client, "User", "lives in", "Berlin", observed_at="2024-03-01")
        current = await ok(client, "recall", query="", subject="user", predicate="lives in")
    assert berlin["superseded"] == [paris["observation_id"]]
    assert found(current) == {berlin["observation_id"]}


async def test_about_user_shows_the_facts_told_of_the_user(client: Client) -> None:
    with anyio.fail_after(30):
        await fact(client, "the user", "likes", "tea")
        await fact(client, "User", "works at", "Acme")
        await fact(client, "Sam", "sibling of", "The User")
        by_name = await ok(client, "about", name="User")
        by_article = await ok(client, "about", name="the user")
    assert by_name == by_article
    assert by_name["name"] == "the user"  # as it was first written
    assert {p: [f["object"] for f in fs] for p, fs in by_name["facts"].items()} == {
        "likes": ["tea"],
        "works_at": ["Acme"],
    }
    assert [f["subject"] for f in by_name["incoming"]["sibling_of"]] == ["Sam"]


async def test_recall_filters_by_subject_and_object_with_or_without_the_article(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        tea = await fact(client, "the user", "likes", "tea")
        acme = await fact(client, "User", "works at", "Acme")
        court = await fact(client, "the court", "sits in", "the Hague")
        embassy = await fact(client, "embassy", "is in", "Hague")
        by_subject = await ok(client, "recall", query="", subject="User")
        by_article = await ok(client, "recall", query="", subject="THE  user")
        by_object = await ok(client, "recall", query="", object="Hague")
        by_topic = await ok(client, "recall", query="", topics=["the Hague"])
    assert found(by_subject) == found(by_article) == {tea["observation_id"], acme["observation_id"]}
    both = {court["observation_id"], embassy["observation_id"]}
    assert found(by_object) == found(by_topic) == both


async def test_the_beatles_and_beatles_are_one_topic(client: Client) -> None:
    with anyio.fail_after(30):
        abbey = await ok(
            client, "remember", text="Abbey Road came out in 1969.", topics=["The Beatles"]
        )
        help_ = await ok(client, "remember", text="Help! is a film too.", topics=["Beatles"])
        listed = await ok(client, "recall", query="", topics=["beatles"])
        seen = await ok(client, "about", name="Beatles")
        named = await client.complete(ENTITY, {"name": "name", "value": "beat"})
        spelt = await client.complete(ENTITY, {"name": "name", "value": "the b"})
    assert found(listed) == {abbey["observation_id"], help_["observation_id"]}
    assert seen["name"] == "The Beatles" and seen["counts"]["observations"] == 2
    assert named.completion.values == spelt.completion.values == ["The Beatles"]


async def test_a_completion_ending_in_a_space_ends_a_word(client: Client) -> None:
    # "the " keyed as "the" offered Theo: the space typed says the word is whole.
    with anyio.fail_after(30):
        for name in ("Theo", "the user", "The Beatles", "Anne"):
            await fact(client, name, "likes", "tea")
        the = await client.complete(ENTITY, {"name": "name", "value": "the "})
        a = await client.complete(ENTITY, {"name": "name", "value": "a "})
    assert the.completion.values == ["The Beatles", "the user"]
    assert a.completion.values == []


async def test_a_name_that_names_nothing_is_offered_what_it_is_spelt_like_without_the_article(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await fact(client, "Beatles", "formed in", "Liverpool")
        await fact(client, "Ringo Starr", "plays", "drums")
        misspelt = await error(client, "about", name="the Beatle")
        part = await ok(client, "recall", query="", subject="the Ringo")
    assert "did you mean 'Beatles'?" in misspelt
    assert (
        part["note"]
        == "subject: no fact has 'the Ringo' as its subject; did you mean 'Ringo Starr'?"
    )


async def test_a_lone_article_and_the_the_keep_their_article(client: Client) -> None:
    with anyio.fail_after(30):
        band = await ok(client, "remember", text="Matt Johnson leads it.", topics=["The The"])
        word = await ok(client, "remember", text="The commonest word.", topics=["The"])
        grade = await ok(client, "remember", text="Top mark.", topics=["A"])
        alias = await ok(client, "remember", text="Known by another name.", topics=["a.k.a."])
        year = await ok(client, "remember", text="A good year.", topics=["1975"])
        the_band = await ok(client, "recall", query="", topics=["the the"])
        the_word = await ok(client, "recall", query="", topics=["THE"])
        a_grade = await ok(client, "recall", query="", topics=["a"])
        akas = await ok(client, "recall", query="", topics=["A.K.A."])
        years = await ok(client, "recall", query="", topics=["The 1975"])
    assert found(the_band) == {band["observation_id"]}
    assert found(the_word) == {word["observation_id"]}
    assert found(a_grade) == {grade["observation_id"]}
    assert found(akas) == {alias["observation_id"]}
    # "The 1975" (a band) is not the year: an article is dropped only before a word.
    assert year["observation_id"] not in found(years)
