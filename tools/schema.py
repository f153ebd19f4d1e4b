"""The output schemas doxa publishes: pydantic's schemas, rewritten to validate fast.

MCP clients check every structured result against the tool's ``outputSchema`` (the Python
SDK with ``jsonschema``, per call). Two shapes of pydantic's schemas make that slow without
saying anything a simpler schema cannot: ``$ref`` into ``$defs`` (each one a lookup through
the referencing registry) and ``anyOf: [X, {"type": "null"}]`` for ``X | None`` (every branch
is tried, and a failed branch builds an error object, so each ``null`` costs an exception).
``compact`` inlines the references and turns nullable unions into type lists; the schema it
returns accepts exactly the same instances and keeps every title and description.
"""

from __future__ import annotations

from typing import Any

#: Keywords that never constrain an instance (annotations): safe to move between schemas.
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"}
    | {"$comment"}
)

#: Keywords that constrain only instances of one JSON type, so ``null`` passes them: a schema
#: made only of these (and ``type``) may take ``"null"`` into its ``type`` list unchanged.
_TYPE_SPECIFIC = frozenset(
    {"properties", "required", "additionalProperties", "patternProperties", "propertyNames"}
    | {"minProperties", "maxProperties", "dependentRequired"}
    | {"items", "prefixItems", "minItems", "maxItems", "uniqueItems"}
    | {"contains", "minContains", "maxContains"}
    | {"minLength", "maxLength", "pattern", "format"}
    | {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}
)

_DEFS_PREFIX = "#/$defs/"
_NULL: dict[str, Any] = {"type": "null"}


def compact(schema: dict[str, Any]) -> dict[str, Any]:
    """The same schema with ``$ref``s inlined, ``$defs`` dropped and nullable unions flattened.

    ``{"anyOf": [X, {"type": "null"}]}`` becomes X with ``"null"`` added to its ``type`` when
    every other keyword of X applies to one type only (``properties``, ``items``,
    ``maxLength``...), so ``null`` still passes exactly as before; an ``enum`` or ``const``
    gets ``None`` added to its values. A union of bare ``{"type": ...}`` schemas becomes one
    type list. Any other ``anyOf`` is kept as it is. The input is not modified.

    Raises:
        ValueError: a ``$ref`` that is not local to ``$defs``, a recursive definition (it
            cannot be inlined), or a ``$ref`` whose siblings would override a validation
            keyword of its definition.
    """
    defs: dict[str, Any] = schema.get("$defs", {})
    body = {key: value for key, value in schema.items() if key != "$defs"}
    inlined = _inline(body, defs, ())
    assert isinstance(inlined, dict)
    return inlined


def _inline(node: Any, defs: dict[str, Any], seen: tuple[str, ...]) -> Any:
    """``node`` with every ``$ref`` replaced by its definition, bottom-up compacted."""
    if isinstance(node, list):
        return [_inline(item, defs, seen) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str):
        if not ref.startswith(_DEFS_PREFIX) or ref.removeprefix(_DEFS_PREFIX) not in defs:
            raise ValueError(f"cannot inline {ref!r}: only references into $defs are supported")
        name = ref.removeprefix(_DEFS_PREFIX)
        if name in seen:
            raise ValueError(f"cannot inline {ref!r}: the definition is recursive")
        target = _inline(defs[name], defs, (*seen, name))
        siblings = {k: _inline(v, defs, seen) for k, v in node.items() if k != "$ref"}
        # A $ref's siblings apply together with its target; merging is only the same schema
        # when they add annotations (a field's description over the model's docstring).
        clash = {k for k in siblings if k in target and k not in _ANNOTATIONS}
        if clash:
            raise ValueError(f"cannot inline {ref!r}: siblings override {sorted(clash)}")
        return {**target, **siblings}
    out = {key: _inline(value, defs, seen) for key, value in node.items()}
    branches = out.get("anyOf")
    if isinstance(branches, list):
        return _flatten_union(out, branches)
    return out


def _flatten_union(node: dict[str, Any], branches: list[Any]) -> dict[str, Any]:
    """``node`` (which holds ``anyOf: branches``) as one schema, or unchanged if that would
    change what it accepts."""
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    if any(key not in _ANNOTATIONS for key in rest):
        return node  # the union is combined with other constraints: leave it alone
    if all(isinstance(b, dict) and set(b) == {"type"} for b in branches):
        types: list[str] = []
        for branch in branches:
            for t in _types(branch):
                if t not in types:
                    types.append(t)
        return {**rest, "type": types[0] if len(types) == 1 else types}
    others = [b for b in branches if b != _NULL]
    if len(others) != 1 or len(others) == len(branches):
        return node  # not "one schema or null"
    merged = _nullable(others[0])
    if merged is None:
        return node
    # The field's own annotations (its description, its default) win over the branch's
    # (the model's title and docstring).
    return {**merged, **rest}


def _nullable(branch: Any) -> dict[str, Any] | None:
    """``branch`` also accepting ``null``, or None if that cannot be said without ``anyOf``."""
    if not isinstance(branch, dict) or "type" not in branch:
        return None
    allowed = _ANNOTATIONS | _TYPE_SPECIFIC | {"type", "enum", "const"}
    if any(key not in allowed for key in branch) or {"enum", "const"} <= set(branch):
        return None
    types = _types(branch)
    out = dict(branch)
    out["type"] = types if "null" in types else [*types, "null"]
    # enum and const constrain every type, null included: null must be among their values.
    if "const" in out:
        out["enum"] = [out.pop("const")]
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _types(schema: dict[str, Any]) -> list[str]:
    """The ``type`` of a schema as a list."""
    value = schema["type"]
    return list(value) if isinstance(value, list) else [value]


def left_out_when_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without ``null`` for the optional fields whose default is ``null``.

    doxa's answers leave such a field out rather than send ``null`` (``doxa.tools.answer``
    drops every field at its default), so ``null`` says nothing there; and ``type: [X,
    "null"]`` is the form strict validators (the Inspector's ``--strict``) warn is not
    portable across clients. A nullable field that is required, or defaults to something
    else, is left as it is. Works on pydantic's form (``anyOf`` with a ``null`` arm) and on
    ``compact``'s (a type list); the input is not modified.
    """
    out: dict[str, Any] = _drop_null(schema)
    return out


def _drop_null(node: Any) -> Any:
    if isinstance(node, list):
        return [_drop_null(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _drop_null(value) for key, value in node.items()}
    properties = out.get("properties")
    if isinstance(properties, dict):
        required = set(out.get("required", ()))
        out["properties"] = {
            name: _not_null(prop) if name not in required and _defaults_to_null(prop) else prop
            for name, prop in properties.items()
        }
    return out


def _defaults_to_null(prop: Any) -> bool:
    return isinstance(prop, dict) and "default" in prop and prop["default"] is None


def _not_null(prop: dict[str, Any]) -> dict[str, Any]:
    """``prop`` (a field defaulting to ``null``) without ``null`` among its values."""
    out = {key: value for key, value in prop.items() if key != "default"}
    types = out.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [t for t in types if t != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
        if isinstance(out.get("enum"), list):
            out["enum"] = [v for v in out["enum"] if v is not None]
    branches = out.get("anyOf")
    if isinstance(branches, list) and _NULL in branches:
        others = [b for b in branches if b != _NULL]
        del out["anyOf"]
        if len(others) == 1 and isinstance(others[0], dict):
            # The field's own annotations win over the branch's, as in compact.
            out = {**others[0], **out}
        else:
            out["anyOf"] = others
    return out


def lean_input(schema: dict[str, Any]) -> dict[str, Any]:
    """An input schema as a model reads it: ``compact``, without what says nothing to it.

    Titles repeat the property names; a ``null`` or empty-list default and the ``null`` arm
    of an optional parameter say only that it may be left out, which not being ``required``
    already says (and ``type: [X, "null"]`` is the form strict validators warn about); a
    description is said once (the fields of ``memories`` items repeat those of a single
    call), and a list item's own description repeats its property's. Arguments are still
    validated by the tool's pydantic model, which accepts the same values as before (an
    explicit ``null`` for an optional parameter means "not given").
    """
    lean: dict[str, Any] = _lean(compact(schema), set(), False)
    return lean


def _lean(node: Any, said: set[str], item: bool) -> Any:
    if isinstance(node, list):
        return [_lean(x, said, False) for x in node]
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "title" or (key == "default" and value in (None, [])):
            continue
        if key == "description" and isinstance(value, str):
            if item or value in said:
                continue
            said.add(value)
            out[key] = value
        elif key == "properties" and isinstance(value, dict):
            out[key] = {name: _lean(prop, said, False) for name, prop in value.items()}
        else:
            out[key] = _lean(value, said, key == "items")
    types = out.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [t for t in types if t != "null"]
        out["type"] = rest[0] if len(rest) == 1 else rest
        if isinstance(out.get("enum"), list):
            out["enum"] = [v for v in out["enum"] if v is not None]
    return out
