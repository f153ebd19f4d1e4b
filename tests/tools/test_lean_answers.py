"""Lean answers: models pay for every token a tool list or a tool answer takes.

Answers are compact JSON without the fields that hold their default (the structured content
is the same dict), ``recall`` says why a result ranked only with ``explain``, one memory is
answered once, the tool list a model reads stays small, and an argument a tool does not take
is refused naming it and the ones it does take.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from calls import error, ok
from mcp.client import Client
from mcp.types import CallToolResult, TextContent

from doxa.store import Memory

pytestmark = pytest.mark.anyio

NOTES = [
    "Alice moved to Berlin in March.",
    "Bob is Alice's manager at Northwind.",
    "The Route 9 bridge is closed for repairs.",
    "Alice likes jazz and hiking.",
    "The quarterly review is on Friday at 10.",
    "Carol prefers tea over coffee.",
    "The staging server runs Postgres 16.",
    "Dave is allergic to peanuts.",
    "The team agreed to ship doxa 1.0 in May.",
    "Alice's sister lives in Lisbon.",
]

#: The notes whose words place their event in time: their results say when (``happened``).
DATED = {
    "Alice moved to Berlin in March.",
    "The quarterly review is on Friday at 10.",
    "The team agreed to ship doxa 1.0 in May.",
}

#: What a recall result carries only with ``explain``.
EXPLAINED = {"score", "scores", "belief_ids", "topics", "agents", "episode", "fact"}

#: The model-facing size of ``tools/list``, all tools together (eight tools with ``prune``).
TOOL_LIST_BUDGET = 8_000


def compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def text_of(result: CallToolResult) -> str:
    assert not result.is_error, result.content
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


async def remember_notes(client: Client) -> list[str]:
    """The ten notes, with topics and an episode (which a lean recall leaves out)."""
    done = await ok(
        client,
        "remember",
        memories=[{"text": t, "topics": ["notes"], "episode": "chat-1"} for t in NOTES],
    )
    return [r["observation_id"] for r in done["remembered"]]


def schema_keywords(node: Any, in_properties: bool = False) -> Iterator[tuple[str, Any]]:
    """Every (keyword, value) in a schema; property names are not keywords."""
    if isinstance(node, dict):
        for key, value in node.items():
            if not in_properties:
                yield key, value
            yield from schema_keywords(value, key == "properties" and not in_properties)
    elif isinstance(node, list):
        for item in node:
            yield from schema_keywords(item)


async def test_a_recall_answer_is_compact_json_within_its_budget(client: Client) -> None:
    with anyio.fail_after(30):
        await remember_notes(client)
        result = await client.call_tool(
            "recall", {"query": "What do we know about Alice?", "limit": 10}
        )
    text = text_of(result)
    answer = result.structured_content
    assert isinstance(answer, dict)
    results = answer["results"]
    assert len(results) == 10
    # the same dict as compact JSON: no indentation, no line breaks, no spaces after separators
    # (no note holds ", " or ": ")
    assert "\n" not in text and ": " not in text and ", " not in text
    assert json.loads(text) == answer
    assert text == compact(answer)
    texts = sum(len(r["text"]) for r in results)
    assert len(text) <= 2 * texts + 120 * len(results), (len(text), texts)


async def test_explain_adds_why_each_result_ranked_and_is_left_out_otherwise(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        ids = await remember_notes(client)
        lean = await ok(client, "recall", query="Alice", limit=10)
        explained = await ok(client, "recall", query="Alice", limit=10, explain=True)
    assert lean["results"] and explained["results"]
    for item in lean["results"]:
        # ``happened`` only where the words place the event in time ("in March", "on Friday").
        dated = {"happened"} if item["text"] in DATED else set()
        assert set(item) == {"observation_id", "text", "confidence", "observed_at", *dated}, item
    assert [r["observation_id"] for r in explained["results"]] == [
        r["observation_id"] for r in lean["results"]
    ]
    for item in explained["results"]:
        assert isinstance(item["score"], float)
        assert item["scores"] and item["score"] == pytest.approx(
            sum(item["scores"].values()), abs=1e-3
        )
        assert len(item["belief_ids"]) == 1 and item["belief_ids"][0].startswith("bel_")
        assert item["topics"] == ["notes"]
        assert item["agents"] == ["default"]
        assert item["episode"] == "chat-1"
        assert "fact" not in item  # none of the notes is a fact
        assert item["observation_id"] in ids
        dated = {"happened"} if item["text"] in DATED else set()
        lean_keys = {"observation_id", "text", "confidence", "observed_at", *dated}
        assert set(item) - EXPLAINED == lean_keys


async def test_one_memory_is_answered_once_and_a_batch_only_in_remembered(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        one = await client.call_tool(
            "remember", {"text": "Erin runs the night shift.", "topics": ["Erin"]}
        )
        batch = await client.call_tool(
            "remember", {"memories": [{"text": "Frank fixes bikes."}, {"text": "Gina sings."}]}
        )
    single, text = one.structured_content, text_of(one)
    assert isinstance(single, dict)
    assert set(single) == {"observation_id", "belief_id", "topics"}
    assert single["topics"] == ["Erin"]
    assert json.loads(text) == single
    assert text.count(single["observation_id"]) == 1
    assert text.count(single["belief_id"]) == 1

    many, text = batch.structured_content, text_of(batch)
    assert isinstance(many, dict)
    assert set(many) == {"remembered"}
    assert [set(r) for r in many["remembered"]] == [{"observation_id", "belief_id"}] * 2
    assert json.loads(text) == many
    for item in many["remembered"]:
        assert text.count(item["observation_id"]) == 1
        assert text.count(item["belief_id"]) == 1


async def test_the_tool_list_a_model_reads_is_small_and_says_nothing_twice(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        tools = (await client.list_tools()).tools
    assert len(tools) == 8
    sizes = {
        t.name: len(t.name) + len(t.description or "") + len(compact(t.input_schema)) for t in tools
    }
    assert sum(sizes.values()) <= TOOL_LIST_BUDGET, sizes
    for tool in tools:
        keywords = list(schema_keywords(tool.input_schema))
        assert "title" not in {k for k, _ in keywords}, tool.name
        assert "anyOf" not in {k for k, _ in keywords}, tool.name
        types = [v for k, v in keywords if k == "type"]
        assert types, tool.name
        for value in types:
            assert "null" not in (value if isinstance(value, list) else [value]), tool.name
        # an optional parameter is one that is not required, not one whose default is null
        assert all(v is not None for k, v in keywords if k == "default"), tool.name


async def test_an_unknown_argument_is_a_tool_error_naming_it_and_the_arguments(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", text="Something to find.")
        message = await error(client, "recall", query="something", relation="x")
    assert message.startswith(
        "Error executing tool recall: relation: unknown argument; the arguments are: query,"
        " agent, topics,"
    ), message
    for name in ("query", "limit", "order_by", "explain"):
        assert name in message.split("the arguments are: ", 1)[1], message


async def test_a_misspelt_argument_on_remember_writes_nothing(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        before = memory.stats()
        message = await error(
            memory_client,
            "remember",
            text="Hana moved to Osaka.",
            topic=["Hana"],
            confidance="0.4",
        )
        found = await ok(memory_client, "recall", query="Hana Osaka")
    assert message.startswith(
        "Error executing tool remember: topic, confidance: unknown argument; the arguments are:"
    ), message
    assert "the arguments are: text, topics, agent, confidence," in message
    assert found["results"] == []
    assert memory.stats()["Observation"] == before["Observation"] == 0
    assert {k: v for k, v in memory.stats().items() if k != "Recall"} == {
        k: v for k, v in before.items() if k != "Recall"
    }
