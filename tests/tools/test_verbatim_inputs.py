"""What a client sends is what is stored, through a real in-memory MCP client.

Strings arrive as sent (the SDK would json-parse ``"null"`` or ``"[1, 2, 3]"`` sent for a
``str | None`` parameter), booleans are JSON ``true``/``false`` only, texts keep their
whitespace while names are stripped, unknown keys and unpaired surrogates are refused, and
times at the edges of what the store can hold are kept or refused naming the field.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import anyio
import pytest
from calls import error, ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory
from doxa.store.drafts import MemoryDraft, predicate_key, validate
from doxa.store.errors import InvalidInput
from doxa.store.values import EARLIEST, LATEST, parse_time

pytestmark = pytest.mark.anyio

#: Strings that are valid JSON of another type: each must be stored as the string it is.
JSON_LOOKING = ["null", "true", "false", "[1, 2, 3]", "[]", "{}", '{"a": 1}', '"quoted"', "1"]

RANGE = "must be a time from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z (in UTC)"
FIRST = "0001-01-01T00:00:00Z"
LAST = "9999-12-31T23:59:59.999999Z"


def counts(memory: Memory) -> dict[str, int]:
    return {k: v for k, v in memory.stats().items() if k != "SchemaMigration"}


def names_field(message: str, field: str) -> bool:
    """The message is a tool error about ``field``: one of its clauses (``field must …``,
    ``field: …``) starts with it."""
    body = message.split(": ", 1)[1] if message.startswith("Error executing tool") else message
    return any(clause.startswith(field) for clause in body.split("; "))


# ---- strings arrive verbatim ------------------------------------------------------------------


@pytest.mark.parametrize("value", JSON_LOOKING)
async def test_json_looking_strings_are_stored_as_the_strings_they_are(
    memory_client: Client, value: str
) -> None:
    with anyio.fail_after(30):
        done = await ok(
            memory_client,
            "remember",
            text=value,
            agent=value,
            source=value,
            episode=value,
            topics=[value],
            fact={"subject": value, "predicate": value, "object": value},
        )
        found = await ok(memory_client, "recall", query="", agent=value, explain=True)
        cited = await ok(memory_client, "cite_evidence", id=done["observation_id"])
    [item] = found["results"]
    assert item["observation_id"] == done["observation_id"]
    assert (item["text"], item["agents"], item["source"], item["episode"]) == (
        value,
        [value],
        value,
        value,
    )
    assert item["topics"] == [value]
    assert item["fact"]["subject"] == item["fact"]["object"] == value
    assert item["fact"]["predicate"] == predicate_key(value)  # a predicate is stored normalised
    assert cited["observation"]["text"] == cited["observation"]["source"] == value
    assert [b["agent"] for b in cited["believers"]] == [value]


async def test_an_agent_named_null_is_that_agent_in_every_tool(memory_client: Client) -> None:
    with anyio.fail_after(30):
        mine = await ok(memory_client, "remember", text="Held by the default agent.")
        theirs = await ok(memory_client, "remember", text="Held by null.", agent="null")
        await ok(
            memory_client,
            "remember",
            text="The default agent disagrees.",
            contradicts=[mine["observation_id"]],
        )
        recalled = await ok(memory_client, "recall", query="", agent="null")
        unsupported = await ok(memory_client, "cite_evidence", agent="null", unsupported=True)
        conflicts = await ok(memory_client, "find_conflicts", agent="null")
        everyone = await ok(memory_client, "find_conflicts")
    assert [r["observation_id"] for r in recalled["results"]] == [theirs["observation_id"]]
    assert unsupported["agent"] == "null"
    assert [u["observation_id"] for u in unsupported["unsupported"]] == [theirs["observation_id"]]
    assert conflicts["count"] == 0  # not "no filter": null is in no conflict
    assert everyone["count"] == 1


async def test_list_and_object_parameters_still_take_json_text(client: Client) -> None:
    with anyio.fail_after(30):
        first = await ok(client, "remember", text="The bridge is closed.", agent="scout")
        done = await ok(
            client,
            "remember",
            text="A sign says the bridge is closed.",
            agent="scout",
            topics='["bridge", " route-9 "]',
            fact='{"subject": "bridge", "predicate": "state", "object": "closed"}',
            supports=f'[{{"belief_id": "{first["belief_id"]}", "weight": "0.5"}}]',
            contradicts="[]",
        )
        batch = await ok(client, "remember", memories='[{"text": "From a batch as text."}]')
        found = await ok(client, "recall", query="bridge", topics='["bridge"]', agent="scout")
        judged = await ok(
            client,
            "feedback",
            recall_id=found["recall_id"],
            accepted=f'["{done["observation_id"]}"]',
        )
        cited = await ok(client, "cite_evidence", id=first["belief_id"])
    assert done["topics"] == ["bridge", "route-9"]
    assert len(batch["remembered"]) == 1
    assert [r["observation_id"] for r in found["results"]] == [done["observation_id"]]
    assert judged["accepted"] == [done["observation_id"]]
    assert [e["weight"] for e in cited["evidence"]] == ["0.5"]


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("remember", {"text": "x", "topics": "null"}, "topics"),
        ("remember", {"text": "x", "topics": '"bridge"'}, "topics"),
        ("remember", {"text": "x", "topics": "bridge"}, "topics"),
        ("remember", {"text": "x", "fact": "null"}, "fact"),
        ("remember", {"memories": "null"}, "memories"),
        ("remember", {"text": "x", "confidence": "[0.5]"}, "confidence"),
        ("recall", {"query": "x", "topics": "null"}, "topics"),
        ("recall", {"query": "x", "limit": "5"}, "limit"),
        ("feedback", {"recall_id": "rec_x", "accepted": "null"}, "accepted"),
        ("forget", {"id": "obs_x", "mode": '"purge"'}, "mode"),
    ],
)
async def test_text_that_is_not_what_a_parameter_takes_is_refused_naming_it(
    memory_client: Client, memory: Memory, tool: str, args: dict[str, Any], field: str
) -> None:
    with anyio.fail_after(30):
        before = counts(memory)
        message = await error(memory_client, tool, **args)
    assert names_field(message, field), message
    assert counts(memory) == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"confidence": "1e-400"}, "confidence has more than 18 decimal places: 1e-400"),
        ({"confidence": "0.5 "}, None),
        ({"confidence": 0.1}, None),
    ],
)
async def test_a_confidence_sent_as_text_is_read_exactly_or_refused_naming_it(
    client: Client, args: dict[str, Any], message: str | None
) -> None:
    with anyio.fail_after(30):
        if message is not None:
            assert message in await error(client, "remember", text="x", **args)
            return
        await ok(client, "remember", text="x", agent="exact", **args)
        [item] = (await ok(client, "recall", query="", agent="exact"))["results"]
    assert item["confidence"] == str(args["confidence"]).strip()


# ---- booleans are strict ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["yes", "true", "false", "1", 1, 0, None, [True], {}])
@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("recall", {"query": "bridge"}, "include_superseded"),
        ("cite_evidence", {"agent": "scout"}, "unsupported"),
    ],
)
async def test_a_boolean_is_json_true_or_false_only(
    memory_client: Client,
    memory: Memory,
    tool: str,
    args: dict[str, Any],
    field: str,
    value: object,
) -> None:
    with anyio.fail_after(30):
        await ok(memory_client, "remember", text="The bridge is closed.", agent="scout")
        before = counts(memory)
        message = await error(memory_client, tool, **args, **{field: value})
        after = counts(memory)
        await ok(memory_client, tool, **args, **{field: True})
    assert names_field(message, field), message
    assert f"{field} must be true or false, got " in message
    assert after == before


# ---- texts verbatim, names stripped -----------------------------------------------------------


async def test_texts_keep_their_whitespace_and_names_are_stripped(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        done = await ok(
            memory_client,
            "remember",
            text="  The bridge is closed.\n",
            source="\tradio, 7:40  ",
            agent=" scout ",
            topics=[" bridge ", "route-9\n"],
            episode=" patrol-1 ",
            fact={"subject": " bridge ", "predicate": " state", "object": "closed "},
        )
        batch = await ok(
            memory_client,
            "remember",
            agent="  scout",
            memories=[{"text": "\n\nIn a batch too. ", "source": " s ", "episode": "e "}],
        )
        found = await ok(memory_client, "recall", query="", agent="scout", explain=True)
    assert done["topics"] == ["bridge", "route-9"]
    by_id = {r["observation_id"]: r for r in found["results"]}
    one = by_id[done["observation_id"]]
    assert (one["text"], one["source"], one["agents"], one["episode"]) == (
        "  The bridge is closed.\n",
        "\tradio, 7:40  ",
        ["scout"],
        "patrol-1",
    )
    assert sorted(one["topics"]) == ["bridge", "route-9"]
    assert (one["fact"]["subject"], one["fact"]["predicate"], one["fact"]["object"]) == (
        "bridge",
        "state",
        "closed",
    )
    [remembered] = batch["remembered"]
    two = by_id[remembered["observation_id"]]
    assert (two["text"], two["source"], two["episode"]) == ("\n\nIn a batch too. ", " s ", "e")
    stored = memory.graph.observation(done["observation_id"])
    assert stored is not None
    assert (stored["text"], stored["source"]) == ("  The bridge is closed.\n", "\tradio, 7:40  ")


@pytest.mark.parametrize("source", ["", " ", "\n\t"])
async def test_a_blank_source_is_refused_not_dropped(
    memory_client: Client, memory: Memory, source: str
) -> None:
    with anyio.fail_after(30):
        before = counts(memory)
        message = await error(memory_client, "remember", text="x", source=source)
    assert "source must be a non-empty string; leave it out when there is none" in message
    assert counts(memory) == before


async def test_a_text_differing_only_in_whitespace_is_a_duplicate_of_the_first(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        first = await ok(client, "remember", text="The  bridge is closed.", agent="a")
        again = await ok(client, "remember", text=" The bridge\nis closed. ", agent="a")
        found = await ok(client, "recall", query="", agent="a")
    assert again["duplicate_of"] == first["observation_id"]
    assert [r["text"] for r in found["results"]] == ["The  bridge is closed."]


# ---- unknown keys and unpaired surrogates -----------------------------------------------------


#: How an unknown top-level argument is refused: named, with the arguments there are.
UNKNOWN_ARGUMENT = "unknown argument; the arguments are: "


@pytest.mark.parametrize(
    ("tool", "args", "field", "refusal"),
    [
        (
            "remember",
            {"text": "x", "confidance": "0.3"},
            "confidance",
            UNKNOWN_ARGUMENT + "text, topics, agent, confidence,",
        ),
        (
            "remember",
            {"memories": [{"text": "x", "confidance": "0.3"}]},
            "memories[0].confidance",
            "unknown key; the keys are: text, topics, agent, confidence,",
        ),
        (
            "remember",
            {"text": "x", "fact": {"subject": "s", "predicate": "p", "object": "o", "at": "x"}},
            "fact.at",
            "unknown key; the keys are: subject, predicate, object, valid_from,",
        ),
        (
            "remember",
            {"text": "x", "supports": [{"belief_id": "b", "wieght": 1}]},
            "supports[0].wieght",
            "unknown key; the keys are: belief_id, weight",
        ),
        ("recall", {"query": "x", "agents": ["a"]}, "agents", UNKNOWN_ARGUMENT + "query, agent,"),
        (
            "find_conflicts",
            {"topics": ["a"]},
            "topics",
            UNKNOWN_ARGUMENT + "agent, other_agent, topic, known_at",
        ),
        (
            "cite_evidence",
            {"observation_id": "obs_x"},
            "observation_id",
            UNKNOWN_ARGUMENT + "id, agent, unsupported, known_at",
        ),
        (
            "feedback",
            {"recall_id": "rec_x", "acepted": []},
            "acepted",
            UNKNOWN_ARGUMENT + "recall_id, accepted, rejected",
        ),
        ("forget", {"id": "obs_x", "purge": True}, "purge", UNKNOWN_ARGUMENT + "id, mode"),
    ],
)
async def test_an_unknown_key_is_refused_naming_it_not_dropped(
    memory_client: Client,
    memory: Memory,
    tool: str,
    args: dict[str, Any],
    field: str,
    refusal: str,
) -> None:
    with anyio.fail_after(30):
        before = counts(memory)
        message = await error(memory_client, tool, **args)
    assert message.startswith(f"Error executing tool {tool}: {field}: "), message
    assert refusal in message, message
    assert counts(memory) == before


def object_schemas(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema with ``properties`` in a schema, by where it is."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            found.append((path, node))
            for name, prop in node["properties"].items():
                found.extend(object_schemas(prop, f"{path}.{name}"))
        for key, value in node.items():
            if key != "properties":
                found.extend(object_schemas(value, f"{path}/{key}"))
    elif isinstance(node, list):
        for index, item in enumerate(node):
            found.extend(object_schemas(item, f"{path}[{index}]"))
    return found


async def test_published_input_schemas_say_unknown_keys_are_refused(client: Client) -> None:
    with anyio.fail_after(30):
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert len(tools) == 8
    for tool in tools.values():
        assert tool.input_schema["additionalProperties"] is False, tool.name
    nested = object_schemas(tools["remember"].input_schema)
    where = {path for path, _ in nested}
    # fact, a support and a memory (and whatever they spell out): all closed
    assert {".fact", ".supports/items", ".memories/items"} <= where
    assert {path: schema.get("additionalProperties") for path, schema in nested} == {
        path: False for path in where
    }


@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("remember", {"text": "a\ud800b"}, "text"),
        ("remember", {"text": "x", "agent": "\udfff"}, "agent"),
        ("remember", {"text": "x", "topics": ["ok", "t\udc00"]}, "topics[1]"),
        ("remember", {"text": "x", "topics": '["\\ud800"]'}, "topics[0]"),
        ("remember", {"memories": [{"text": "x", "source": "\ud800"}]}, "memories[0].source"),
        (
            "remember",
            {"text": "x", "fact": {"subject": "s", "predicate": "p", "object": "\ud800"}},
            "fact.object",
        ),
        ("recall", {"query": "q\ud800"}, "query"),
        ("find_conflicts", {"topic": "\ud800"}, "topic"),
        ("cite_evidence", {"id": "obs_\ud800"}, "id"),
        ("feedback", {"recall_id": "rec_x", "rejected": ["\ud800"]}, "rejected[0]"),
        ("forget", {"id": "\ud800"}, "id"),
    ],
)
async def test_an_unpaired_surrogate_is_refused_naming_the_field(
    memory_client: Client, memory: Memory, tool: str, args: dict[str, Any], field: str
) -> None:
    with anyio.fail_after(30):
        before = counts(memory)
        message = await error(memory_client, tool, **args)
        # The recall recorder writes every pending recall: none of them holds the query.
        await ok(memory_client, "remember", text="After the refusal.")
        found = await ok(memory_client, "recall", query="refusal")
        await ok(memory_client, "feedback", recall_id=found["recall_id"])
    assert names_field(message, field), message
    assert "holds an unpaired surrogate" in message
    message.encode("utf-8")  # the error itself can be sent as JSON
    assert counts(memory)["Observation"] == before["Observation"] + 1


def test_the_store_refuses_unpaired_surrogates_itself() -> None:
    with pytest.raises(InvalidInput) as caught:
        validate(MemoryDraft(text="x", episode="e\ud800"), "default")
    assert caught.value.field == "episode"
    assert str(caught.value) == (
        "episode holds an unpaired surrogate (U+D800) at character 1: send valid Unicode text"
    )


# ---- times at the edges of the range ----------------------------------------------------------


#: Times at the edges as sent, and as the store keeps them (UTC).
EDGES = {
    FIRST: FIRST,
    "0001-01-01T05:00:00+05:00": FIRST,
    LAST: LAST,
    "9999-12-31T18:59:59.999999-05:00": LAST,
}


async def test_times_at_the_edges_are_kept_exactly_across_a_restart(settings: Settings) -> None:
    """Kùzu's TIMESTAMP holds the whole range a datetime holds, and gives it back, also
    through the arrow reads that load the working memory at start-up (observed_at at the
    last edge is in the future, refused: a fact's valid_from holds that edge)."""

    async def remember_edges(client: Client) -> None:
        for i, given in enumerate(EDGES):
            fact = {"subject": f"s{i}", "predicate": "p", "object": "o", "valid_from": given}
            if EDGES[given] == FIRST:
                await ok(client, "remember", text=f"edge {i}", observed_at=given, agent="a")
            await ok(client, "remember", text=f"fact {i}", fact=fact, agent="a")

    async def recall_edges(client: Client) -> Any:
        return await ok(client, "recall", query="", agent="a", as_of=LAST, limit=100, explain=True)

    with anyio.fail_after(60):
        memory = Memory.open(settings.store)
        try:
            async with Client(create_server(settings, memory=memory)) as client:
                await remember_edges(client)
                before = await recall_edges(client)
        finally:
            memory.close()
        memory = Memory.open(settings.store)
        try:
            async with Client(create_server(settings, memory=memory)) as client:
                after = await recall_edges(client)
        finally:
            memory.close()
    for found in (before, after):
        by_text = {r["text"]: r for r in found["results"]}
        for i, stored in enumerate(EDGES.values()):
            if stored == FIRST:
                assert by_text[f"edge {i}"]["observed_at"] == stored
            assert by_text[f"fact {i}"]["fact"]["valid_from"] == stored


BEYOND = ["0001-01-01T00:00:00+05:00", "9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+00:01"]


@pytest.mark.parametrize("value", BEYOND)
@pytest.mark.parametrize(
    ("tool", "args", "field"),
    [
        ("remember", {"text": "x", "observed_at": "{v}"}, "observed_at"),
        (
            "remember",
            {
                "text": "x",
                "fact": {"subject": "s", "predicate": "p", "object": "o", "valid_from": "{v}"},
            },
            "fact.valid_from",
        ),
        (
            "remember",
            {
                "text": "x",
                "fact": {"subject": "s", "predicate": "p", "object": "o", "valid_until": "{v}"},
            },
            "fact.valid_until",
        ),
        (
            "remember",
            {"memories": [{"text": "x", "observed_at": "{v}"}]},
            "memories[0].observed_at",
        ),
        ("recall", {"query": "x", "as_of": "{v}"}, "as_of"),
        ("remember", {"record": {"type": "T", "fields": {"at": "{v}"}}}, "record.fields.at"),
        ("recall", {"query": "", "where": {"at": "{v}"}}, "where.at"),
    ],
)
async def test_a_time_beyond_the_range_in_utc_is_refused_naming_the_field_and_the_range(
    memory_client: Client,
    memory: Memory,
    tool: str,
    args: dict[str, Any],
    field: str,
    value: str,
) -> None:
    def fill(node: Any) -> Any:
        if isinstance(node, dict):
            return {k: fill(v) for k, v in node.items()}
        if isinstance(node, list):
            return [fill(v) for v in node]
        return value if node == "{v}" else node

    with anyio.fail_after(30):
        before = counts(memory)
        message = await error(memory_client, tool, **fill(args))
    assert f"{field} {RANGE}, got {value!r}" in message
    assert counts(memory) == before


@pytest.mark.parametrize(
    "moment",
    [
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
        datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-2))),
    ],
)
def test_parse_time_refuses_a_datetime_beyond_the_range_in_utc(moment: datetime) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_time(moment, "observed_at")
    assert caught.value.field == "observed_at"
    assert str(caught.value).startswith(f"observed_at {RANGE}")


def test_the_range_is_what_a_datetime_holds_in_utc() -> None:
    assert parse_time(FIRST, "t") == EARLIEST == datetime.min.replace(tzinfo=UTC)
    assert parse_time(LAST, "t") == LATEST == datetime.max.replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "as_of"),
    [
        ("what happened 9999 years ago", None),
        ("anything in December 9999", None),
        ("what was on 9999-12-31", None),
        ("what happened yesterday", FIRST),
        ("anything this year", LAST),
        ("what happened in May", FIRST),
    ],
)
async def test_time_words_beyond_the_range_answer_without_a_time_boost(
    client: Client, query: str, as_of: str | None
) -> None:
    with anyio.fail_after(30):
        await ok(client, "remember", text="Something happened.", observed_at=FIRST)
        args: dict[str, Any] = {"as_of": as_of} if as_of else {}
        found = await ok(client, "recall", query=query, explain=True, **args)
    assert found["results"]
    assert all(r["scores"].get("time", 0) == 0 for r in found["results"])
