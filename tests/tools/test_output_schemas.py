"""The published output schemas: compact (no ``$ref``, no ``anyOf``), portable (no ``null``
in a type list), valid for every real result, and accepting exactly what pydantic's own
schemas accept but ``null`` for the optional fields the answers leave out instead."""

from __future__ import annotations

import copy
import importlib
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from calls import ok, seed_bridge
from jsonschema import exceptions as jsonschema_exceptions
from jsonschema.protocols import Validator
from jsonschema.validators import validator_for
from mcp.client import Client
from mcp.server.mcpserver.tools import Tool
from referencing import Registry

from doxa.server.app import _TOOLS
from doxa.tools.schema import compact, left_out_when_null

pytestmark = pytest.mark.anyio

TOOL_NAMES = [name for name, *_ in _TOOLS]


def validator(schema: dict[str, Any]) -> Validator:
    """The validator the MCP client builds for an output schema (mcp.client.session)."""
    cls = validator_for(schema)
    cls.check_schema(schema)
    return cls(schema, registry=Registry())


def derived_schema(name: str) -> dict[str, Any]:
    """The schema the SDK derives from the tool's return annotation, before ``compact``,
    without ``null`` for the optional fields defaulting to it (``left_out_when_null``)."""
    module = importlib.import_module(f"doxa.tools.{name}")
    schema = Tool.from_function(getattr(module, name), name=name).output_schema
    assert schema is not None
    return left_out_when_null(schema)


def null_type_lists(node: Any, where: str = "") -> Iterator[str]:
    """Where a schema says ``type: [..., "null"]``."""
    if isinstance(node, dict):
        types = node.get("type")
        if isinstance(types, list) and "null" in types:
            yield where
        for key, value in node.items():
            yield from null_type_lists(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from null_type_lists(item, f"{where}/{i}")


def keys(node: Any) -> Iterator[str]:
    """Every key anywhere in a JSON value."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from keys(item)


def annotations(node: Any, keyword: str) -> list[str]:
    """Every value of ``keyword`` (title, description) in a schema, sorted."""
    found: list[str] = []

    def walk(n: Any, in_properties: bool) -> None:
        if isinstance(n, dict):
            for key, value in n.items():
                # Under "properties" the keys are field names, not keywords.
                if key == keyword and not in_properties and isinstance(value, str):
                    found.append(value)
                walk(value, key == "properties" and not in_properties)
        elif isinstance(n, list):
            for item in n:
                walk(item, False)

    walk(node, False)
    return sorted(set(found))


def mutants(value: Any) -> Iterator[Any]:
    """Copies of ``value`` with one place changed: a key dropped or added, a value replaced
    by null or by a value of another type, an item appended to a list."""
    replacements: list[Any] = [None, 0, 1.5, "x", True, [], {}, ["x"], [None], {"k": None}]

    def at(path: tuple[Any, ...]) -> Iterator[Any]:
        node = value
        for step in path:
            node = node[step]
        if path:
            for replacement in replacements:
                changed = copy.deepcopy(value)
                parent = changed
                for step in path[:-1]:
                    parent = parent[step]
                parent[path[-1]] = replacement
                yield changed
        if isinstance(node, dict):
            for key in [*node, "unexpected"]:
                changed = copy.deepcopy(value)
                target = changed
                for step in path:
                    target = target[step]
                if key in target:
                    del target[key]
                else:
                    target[key] = None
                yield changed
            for key in node:
                yield from at((*path, key))
        elif isinstance(node, list):
            for extra in (None, "x", 1, {}):
                changed = copy.deepcopy(value)
                target = changed
                for step in path:
                    target = target[step]
                target.append(extra)
                yield changed
            for index in range(len(node)):
                yield from at((*path, index))

    yield from at(())


async def every_result(client: Client) -> dict[str, list[dict[str, Any]]]:
    """Real results of every tool, covering nulls and filled optional fields alike."""
    bridge = await seed_bridge(client)
    results: dict[str, list[dict[str, Any]]] = {name: [] for name in TOOL_NAMES}
    for agent, city, when in [
        ("a", "Paris", "2024-01-01T00:00:00Z"),
        ("b", "Rome", "2024-02-01T00:00:00Z"),
        ("a", "Berlin", "2024-03-01T00:00:00Z"),
    ]:
        results["remember"].append(
            await ok(
                client,
                "remember",
                text=f"Alice lives in {city}.",
                agent=agent,
                observed_at=when,
                fact={"subject": "Alice", "predicate": "lives in", "object": city},
            )
        )
    results["remember"].append(
        await ok(client, "remember", memories=[{"text": "Bob likes tea."}, {"text": "Bob."}])
    )
    paris = results["remember"][0]["observation_id"]
    for args in [
        {"query": "Route 9 bridge"},
        {"query": "Where does Alice live?", "include_superseded": True},
        {"query": "Alice", "as_of": "2024-01-15T00:00:00Z"},
        {"query": "", "topics": ["bridge"], "order_by": "newest"},
        {"query": "nothing matches zzqx", "agent": "nobody"},
        # explain: scores, ids, topics, agents, episode and fact (a replaced one too)
        {"query": "Route 9 bridge", "explain": True},
        {"query": "Where does Alice live?", "include_superseded": True, "explain": True},
    ]:
        results["recall"].append(await ok(client, "recall", **args))
    results["find_conflicts"].append(await ok(client, "find_conflicts"))
    results["find_conflicts"].append(await ok(client, "find_conflicts", agent="nobody"))
    results["about"].append(await ok(client, "about", name="Alice"))
    results["about"].append(await ok(client, "about", name="bridge", as_of="2024-06-01"))
    for cited in [bridge["closed_belief"], bridge["open"], paris]:
        results["cite_evidence"].append(await ok(client, "cite_evidence", id=cited))
    results["cite_evidence"].append(
        await ok(client, "cite_evidence", agent="scout", unsupported=True)
    )
    first = results["recall"][0]
    results["feedback"].append(
        await ok(
            client,
            "feedback",
            recall_id=first["recall_id"],
            accepted=[first["results"][0]["observation_id"]],
        )
    )
    results["forget"].append(await ok(client, "forget", id=bridge["sign"]))
    results["forget"].append(await ok(client, "forget", id=bridge["sign"]))
    results["forget"].append(await ok(client, "forget", id=paris, mode="purge"))
    # Nothing to prune, then a near-duplicate merged (its listing's optional fields filled).
    results["prune"].append(await ok(client, "prune"))
    await ok(client, "remember", text="Bob likes tea!")
    results["prune"].append(await ok(client, "prune", dry_run=False))
    return results


async def test_published_schemas_are_compact_and_keep_every_title_and_description(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        listed = {t.name: t.output_schema for t in (await client.list_tools()).tools}
    assert sorted(listed) == sorted(TOOL_NAMES)
    for name, published in listed.items():
        assert published is not None
        assert published["type"] == "object"
        found = set(keys(published))
        assert not found & {"$ref", "$defs", "anyOf"}, name
        derived = derived_schema(name)
        assert published == left_out_when_null(compact(derived))
        for keyword in ("title", "description"):
            assert annotations(published, keyword) == annotations(derived, keyword), name


async def test_real_results_validate_and_every_variant_gets_the_same_verdict(
    client: Client,
) -> None:
    with anyio.fail_after(60):
        listed = {t.name: t.output_schema for t in (await client.list_tools()).tools}
        results = await every_result(client)
    assert all(results.values())
    for name, instances in results.items():
        published = listed[name]
        assert published is not None
        fast, reference = validator(published), validator(derived_schema(name))
        for instance in instances:
            assert jsonschema_exceptions.best_match(fast.iter_errors(instance)) is None
            verdicts = {True: 0, False: 0}
            for variant in mutants(instance):
                verdict = fast.is_valid(variant)
                assert verdict == reference.is_valid(variant), (name, variant)
                verdicts[verdict] += 1
            # The mutations reach both sides: the schemas are not trivially permissive.
            assert verdicts[False] > 0 and verdicts[True] > 0, name


def test_nullable_unions_become_type_lists() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}], "title": "S"},
            "e": {"anyOf": [{"enum": ["a", "b"], "type": "string"}, {"type": "null"}]},
            "c": {"anyOf": [{"const": "a", "type": "string"}, {"type": "null"}]},
            "n": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "m": {"anyOf": [{"$ref": "#/$defs/M"}, {"type": "null"}], "description": "field"},
        },
        "$defs": {"M": {"type": "object", "title": "M", "description": "model", "required": []}},
    }
    before = copy.deepcopy(schema)
    out = compact(schema)
    assert schema == before  # the input is left alone
    assert out == {
        "type": "object",
        "properties": {
            "s": {"type": ["string", "null"], "maxLength": 3, "title": "S"},
            "e": {"enum": ["a", "b", None], "type": ["string", "null"]},
            "c": {"enum": ["a", None], "type": ["string", "null"]},
            "n": {"type": ["integer", "string", "null"]},
            "m": {"type": ["object", "null"], "title": "M", "description": "field", "required": []},
        },
    }


def test_unions_that_a_type_list_cannot_say_are_kept() -> None:
    kept = [
        {"anyOf": [{"type": "string"}, {"type": "integer", "minimum": 0}]},
        {"anyOf": [{"not": {"type": "string"}}, {"type": "null"}]},
        {"anyOf": [{"allOf": [{"type": "string"}]}, {"type": "null"}]},
        {"anyOf": [{"type": "string"}, {"type": "null"}], "minLength": 2},
        {"anyOf": [{"type": "string", "enum": ["a", "b"], "const": "a"}, {"type": "null"}]},
    ]
    for schema in kept:
        assert compact({"type": "object", "properties": {"x": schema}})["properties"]["x"] == schema


def test_recursive_and_foreign_references_are_refused() -> None:
    recursive = {
        "type": "object",
        "properties": {"child": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
    }
    with pytest.raises(ValueError, match="recursive"):
        compact(recursive)
    with pytest.raises(ValueError, match="only references into"):
        compact({"type": "object", "properties": {"x": {"$ref": "https://example.com/x"}}})
    with pytest.raises(ValueError, match="override"):
        compact(
            {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/X", "type": "string"}},
                "$defs": {"X": {"type": "integer"}},
            }
        )


async def test_no_published_schema_has_a_type_list_with_null(client: Client) -> None:
    with anyio.fail_after(30):
        tools = (await client.list_tools()).tools
    found = {
        t.name: [*null_type_lists(t.output_schema), *null_type_lists(t.input_schema)] for t in tools
    }
    assert found == {t.name: [] for t in tools}


def test_optional_fields_defaulting_to_null_lose_null_and_others_keep_it() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a": {"type": ["string", "null"], "default": None, "description": "A"},
            "b": {"anyOf": [{"$ref": "#/$defs/B"}, {"type": "null"}], "default": None},
            "c": {"enum": ["x", None], "type": ["string", "null"], "default": None},
            "required": {"type": ["string", "null"]},
            "other_default": {"type": ["integer", "null"], "default": 3},
        },
        "required": ["required"],
    }
    before = copy.deepcopy(schema)
    assert left_out_when_null(schema)["properties"] == {
        "a": {"type": "string", "description": "A"},
        "b": {"$ref": "#/$defs/B"},
        "c": {"enum": ["x"], "type": "string"},
        "required": {"type": ["string", "null"]},
        "other_default": {"type": ["integer", "null"], "default": 3},
    }
    assert schema == before
