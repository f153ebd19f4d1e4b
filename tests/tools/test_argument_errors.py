"""Arguments that fail a tool's input schema are refused as the tools refuse bad values: a
clause per argument at fault naming its path, what it must be and what was sent, never
pydantic's report (its model name, error codes and URLs); and nothing is written."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from calls import error
from mcp.client import Client
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from pydantic import BaseModel, ConfigDict, ValidationError

from doxa.server.app import ToldTool
from doxa.server.argument_errors import told
from doxa.store import Memory

pytestmark = pytest.mark.anyio

PREFIX = "Error executing tool "


@pytest.mark.parametrize(
    ("tool", "args", "told"),
    [
        ("recall", {"query": "x", "where": [1]}, "where must be an object, got [1]"),
        ("recall", {"query": 5}, "query must be a string, got 5"),
        ("recall", {}, "query is required"),
        ("recall", {"query": "x", "limit": "ten"}, 'limit must be a whole number, got "ten"'),
        ("recall", {"query": "x", "limit": 1.5}, "limit must be a whole number, got 1.5"),
        ("recall", {"query": "x", "explain": "yes"}, 'explain must be true or false, got "yes"'),
        ("recall", {"query": "x", "topics": "a"}, 'topics must be a list, got "a"'),
        (
            "recall",
            {"query": "x", "order_by": "best"},
            "order_by must be 'relevance', 'confidence', 'newest' or 'oldest', got \"best\"",
        ),
        # A union's arms each refuse the value: one clause says what any of them takes.
        (
            "remember",
            {"text": "x", "confidence": [1]},
            "confidence must be a string or a number, got [1]",
        ),
        ("prune", {"min_age_days": "x"}, 'min_age_days must be a number, got "x"'),
        (
            "remember",
            {"text": "x", "topics": [1, "ok", 2]},
            "topics[0] must be a string, got 1; topics[2] must be a string, got 2",
        ),
        # Paths inside a batch, whose items' fields the schema describes once, at the top.
        (
            "remember",
            {"memories": [{"text": "x"}, {"text": "y", "supports": [{"belief_id": 5}]}]},
            "memories[1].supports[0].belief_id must be a string, got 5",
        ),
        (
            "remember",
            {"text": "x", "fact": {"subject": "s", "predicate": "p", "object": "o", "at": "x"}},
            "fact.at: unknown key; the keys are: subject, predicate, object, valid_from,"
            " valid_until, cardinality",
        ),
        (
            "remember",
            {"text": "x", "supports": [{"belief_id": "b", "wieght": 1}]},
            "supports[0].wieght: unknown key; the keys are: belief_id, weight",
        ),
        (
            "feedback",
            {"recall_id": "r", "accepted": "obs_1"},
            'accepted must be a list, got "obs_1"',
        ),
        (
            "forget",
            {"id": "x", "mode": "delete"},
            "mode must be 'retract' or 'purge', got \"delete\"",
        ),
        # A long value is cut short.
        (
            "recall",
            {"query": "x", "limit": "9" * 100},
            f'limit must be a whole number, got "{"9" * 58}…',
        ),
    ],
)
async def test_a_value_of_the_wrong_shape_is_told_by_its_path_and_what_it_must_be(
    memory_client: Client, memory: Memory, tool: str, args: dict[str, Any], told: str
) -> None:
    with anyio.fail_after(30):
        before = memory.stats()
        message = await error(memory_client, tool, **args)
        after = memory.stats()
    assert message == PREFIX + f"{tool}: {told}"
    assert after == before


async def test_a_whole_float_is_a_count_and_a_number_too_precise_for_a_float_is_one(
    memory_client: Client,
) -> None:
    # JSON Schema's integer takes 5.0 (clients holding numbers as floats send it), and a
    # number a float cannot carry reaches the tools as its text (server.exact): a count and
    # a cosine took neither ("limit must be a whole number, got 5.0").
    with anyio.fail_after(30):
        await memory_client.call_tool(
            "remember", {"memories": [{"text": f"Note {i} on ferries."} for i in range(4)]}
        )
        found = await memory_client.call_tool("recall", {"query": "ferries", "limit": 2.0})
        assert not found.is_error and len(found.structured_content["results"]) == 2
        conflicts = await memory_client.call_tool("find_conflicts", {"limit": 3.0})
        assert not conflicts.is_error
        pruned = await memory_client.call_tool(
            "prune",
            {"min_impressions": 3.0, "merge_similarity": "0.95000000000000000001"},
        )
        assert not pruned.is_error
        assert await error(memory_client, "recall", query="x", limit="1e400") == (
            PREFIX + 'recall: limit must be a whole number, got "1e400"'
        )
        assert await error(memory_client, "prune", merge_similarity="1e400") == (
            PREFIX + 'prune: merge_similarity must be a number, got "1e400"'
        )
        # Text a client sent stays text: only a literal a float cannot carry is a number.
        for sent in ("30", "1_000", " 7 ", "\u0663"):
            told = await error(memory_client, "prune", min_age_days=sent)
            assert told.startswith(PREFIX + "prune: min_age_days must be a number, got ")


def test_an_unpaired_surrogate_sent_is_told_as_an_escape() -> None:
    # The server refuses such strings by name before validating (test_verbatim_inputs); a
    # wrong-typed value holding one is still quoted back sendable.
    class Fact(BaseModel):
        model_config = ConfigDict(extra="forbid")
        subject: str

    with pytest.raises(ValidationError) as refused:
        Fact.model_validate({"subject": ["\ud800"]})
    message = told(refused.value, Fact.model_json_schema())
    assert message == 'subject must be a string, got ["\\ud800"]'
    message.encode("utf-8")
    # pydantic refuses a key it cannot read at no location: the arguments as a whole.
    with pytest.raises(ValidationError) as refused:
        Fact.model_validate({"subject": "s", "\ud800": 1})
    assert told(refused.value, Fact.model_json_schema()).startswith("arguments must be ")


class Out(BaseModel):
    n: int


def broken(x: int) -> Out:
    return {"n": "many"}  # type: ignore[return-value]  # a result its own model refuses


async def test_a_crash_stays_the_sdks_generic_error_and_is_not_told_as_the_arguments() -> None:
    tool = ToldTool.from_function(broken, name="broken")
    with pytest.raises(UnexpectedToolError) as crashed:
        await tool.run({"x": 1}, None, convert_result=True)  # type: ignore[arg-type]
    assert str(crashed.value) == "Error executing tool broken"
    with pytest.raises(ToolError) as refused:
        await tool.run({"x": "one"}, None, convert_result=True)  # type: ignore[arg-type]
    assert str(refused.value) == 'Error executing tool broken: x must be a whole number, got "one"'
