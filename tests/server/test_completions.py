"""Completions through a real MCP client: the names the memory knows, for the prompt and
resource arguments that take one."""

from __future__ import annotations

import anyio
import pytest
from calls import ok, seed_bridge
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, PromptReference, ResourceTemplateReference

pytestmark = pytest.mark.anyio

ENTITY = ResourceTemplateReference(uri="doxa://entity/{name}")
REVIEW = PromptReference(name="review-conflicts")


async def test_the_review_prompt_completes_agent_and_topic_names_by_prefix(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await seed_bridge(client)
        await ok(client, "remember", text="Roads are busy.", topics=["Rush hour"], agent="dispatch")
        # find_conflicts(topic=...) also finds a fact's subject: the prompt completes it too.
        await ok(
            client,
            "remember",
            text="Rita lives in Rome.",
            fact={"subject": "Rita", "predicate": "lives in", "object": "Rome"},
            agent="scout",
        )
        agents = await client.complete(REVIEW, {"name": "agent", "value": "D"})
        every_agent = await client.complete(REVIEW, {"name": "agent", "value": ""})
        topics = await client.complete(REVIEW, {"name": "topic", "value": "r"})
    assert agents.completion.values == ["dispatch", "driver"]
    assert agents.completion.total == 2 and agents.completion.has_more is False
    assert every_agent.completion.values == ["dispatch", "driver", "scout"]
    assert topics.completion.values == ["Rita", "Rome", "route-9", "Rush hour"]


async def test_the_entity_resource_completes_the_names_facts_and_topics_give(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        await ok(
            client,
            "remember",
            text="Alice lives in Paris.",
            topics=["Alps trip"],
            fact={"subject": "Alice", "predicate": "lives in", "object": "Paris"},
        )
        names = await client.complete(ENTITY, {"name": "name", "value": "al"})
        none = await client.complete(ENTITY, {"name": "name", "value": "zz"})
    assert names.completion.values == ["Alice", "Alps trip"]
    assert none.completion.values == [] and none.completion.total == 0


async def test_completions_stop_at_100_names_and_say_how_many_there_are(
    client: Client,
) -> None:
    memories = [{"text": f"Note {i}.", "topics": [f"topic {i:03}"]} for i in range(130)]
    with anyio.fail_after(60):
        await ok(client, "remember", memories=memories)
        topics = await client.complete(REVIEW, {"name": "topic", "value": "topic"})
    assert len(topics.completion.values) == 100
    assert topics.completion.values[:2] == ["topic 000", "topic 001"]
    assert topics.completion.total == 130 and topics.completion.has_more is True


async def test_free_text_arguments_complete_to_nothing(client: Client) -> None:
    with anyio.fail_after(30):
        await seed_bridge(client)
        question = await client.complete(
            PromptReference(name="recall-before-answering"), {"name": "question", "value": "b"}
        )
    assert question.completion.values == []


@pytest.mark.parametrize(
    ("ref", "argument", "told"),
    [
        (
            PromptReference(name="nope"),
            "x",
            "unknown prompt 'nope'; the prompts are: recall-before-answering,"
            " remember-after-conversation, review-conflicts",
        ),
        (
            REVIEW,
            "agnet",
            "the prompt 'review-conflicts' has no argument 'agnet'; its arguments: agent, topic",
        ),
        (
            ResourceTemplateReference(uri="doxa://nope/{x}"),
            "x",
            "unknown resource template 'doxa://nope/{x}'; the templates are: doxa://entity/{name}",
        ),
        (
            ENTITY,
            "id",
            "the resource template 'doxa://entity/{name}' has no argument 'id'; its arguments:"
            " name",
        ),
    ],
)
async def test_an_unknown_prompt_template_or_argument_is_refused_naming_it(
    client: Client, ref: PromptReference | ResourceTemplateReference, argument: str, told: str
) -> None:
    # They completed to nothing, as a free-text argument does: a typo went unnoticed.
    with anyio.fail_after(30), pytest.raises(MCPError) as caught:
        await client.complete(ref, {"name": argument, "value": ""})
    assert (caught.value.error.code, caught.value.error.message) == (INVALID_PARAMS, told)
