"""Arguments that fail a tool's input schema, told as the tools tell their own errors.

The SDK reports them as pydantic does: the argument model's name, a block per error with its
code, the input and its type, and a URL. A model pays for all of it and is not told what to
send instead. Here each argument at fault is one clause that names its path as the tools' own
errors do (``memories[0].fact.at``), what it must be, and what was sent:
``where must be an object, got [1]``; ``fact.at: unknown key; the keys are: subject, …``.
A union's arms each refuse a value: those make one clause (``must be a string or a number``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import ValidationError

from doxa.store.drafts import sent

#: What a pydantic error type says the value must be.
_EXPECTED = {
    "string_type": "a string",
    "int_type": "a whole number",
    "int_parsing": "a whole number",
    "int_from_float": "a whole number",
    "float_type": "a number",
    "float_parsing": "a number",
    "decimal_type": "a number",
    "decimal_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "list_type": "a list",
}


def told(error: ValidationError, schema: Mapping[str, Any]) -> str:
    """``error`` (of arguments validated against ``schema``, the argument model's JSON schema,
    ``$defs`` included) as clauses, one per argument path at fault, in the order pydantic
    found them."""
    expected: dict[str, list[str]] = {}
    others: dict[str, str] = {}
    sent: dict[str, Any] = {}
    for problem in error.errors(include_url=False):
        path, parent = _path(problem["loc"], schema, problem["type"] == "extra_forbidden")
        kind = problem["type"]
        sent.setdefault(path, problem.get("input"))
        if kind in _EXPECTED:
            expected.setdefault(path, [])
            if _EXPECTED[kind] not in expected[path]:
                expected[path].append(_EXPECTED[kind])
            if "a number" in expected[path] and "a whole number" in expected[path]:
                expected[path].remove("a whole number")  # a union of both: any number
        elif path not in others:
            others[path] = _clause(kind, problem["msg"], parent, schema)
    # Per clause, the paths it is said of: paths refused in the same words are named together
    # (``topic, confidance: unknown argument; the arguments are: …``, said once).
    clauses: dict[str, list[str]] = {}
    for path in dict.fromkeys([*expected, *others]):
        if path in others:
            clause = others[path]
            if clause.startswith("must"):
                clause = f"{clause}, got {_shown(sent[path])}"
        else:
            clause = f"must be {' or '.join(expected[path])}, got {_shown(sent[path])}"
        clauses.setdefault(clause, []).append(path)
    return "; ".join(
        f"{', '.join(paths)} {clause}"
        if clause.startswith(("must ", "is "))
        else f"{', '.join(paths)}: {clause}"
        for clause, paths in clauses.items()
    )


def _path(
    loc: Sequence[str | int], schema: Mapping[str, Any], extra: bool
) -> tuple[str, Mapping[str, Any]]:
    """The argument path of ``loc`` (``memories[0].fact``) without pydantic's union-arm tags,
    and the schema of the object holding its last part (an unknown key's siblings are listed
    from it). ``extra``: the last part is a key the schema does not have."""
    path = ""
    node: Mapping[str, Any] = schema
    parent: Mapping[str, Any] = schema
    for i, part in enumerate(loc):
        # The first part is an argument's name, sent or not (an unknown one is refused by
        # name); an unknown key is the last part of an extra_forbidden error.
        named = i == 0 or (extra and i == len(loc) - 1)
        if isinstance(part, int):
            path += f"[{part}]"
            parent, node = node, _arm(node, "items", schema).get("items", {})
            continue
        properties = _arm(node, "properties", schema).get("properties", {})
        if named or part in properties:
            path += f".{printable(part)}" if path else printable(part)
            # A field said once: the items of ``memories`` are each like one call, and their
            # schema leaves the fields the call's own schema describes empty.
            inner = properties.get(part) or schema.get("properties", {}).get(part, {})
            parent, node = node, inner
        # else: a union arm's tag (``str``, ``function-after[…]``): no part of the path.
    return path or "arguments", parent


def _arm(node: Mapping[str, Any], key: str, schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node`` (its ``$ref`` followed), or the arm of its ``anyOf`` that has ``key``; empty
    when none has it."""
    node = _followed(node, schema)
    if key in node:
        return node
    for arm in node.get("anyOf", ()):
        arm = _followed(arm, schema)
        if key in arm:
            return arm
    return {}


def _followed(node: Mapping[str, Any], schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """``node``, or the definition its ``$ref`` (``#/$defs/Name``) names."""
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found: Mapping[str, Any] = schema.get("$defs", {}).get(ref.removeprefix("#/$defs/"), {})
        return found
    return node


def _clause(kind: str, message: str, parent: Mapping[str, Any], schema: Mapping[str, Any]) -> str:
    """A clause for an error that is not a wrong type."""
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        keys = ", ".join(_arm(parent, "properties", schema).get("properties", {}))
        return f"unknown key; the keys are: {keys}" if keys else "unknown key; leave it out"
    if message.startswith("Input should be "):
        return "must be " + message.removeprefix("Input should be ")
    # doxa's own refusals (an unknown argument, an unpaired surrogate) say it all already.
    return message


def _shown(value: Any) -> str:
    """A sent value, as JSON, cut short (as the store's own errors show one)."""
    return printable(sent(value))


def printable(text: str) -> str:
    """``text`` with unpaired surrogates written as escapes, so an error can be sent as JSON."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
