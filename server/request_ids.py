"""A request whose ``id`` is null or no string or integer is refused, not ignored.

JSON-RPC allows only strings and integers as a request's id. The SDK reads a request with
an id of null (or one it cannot read as an id) as a notification, which is never answered:
over stdio the client waited forever, over HTTP it got ``202 Accepted`` and no answer. doxa
answers it instead, with -32600 "Invalid Request" and id null (over HTTP with status 400,
as the SDK answers a body it cannot parse).

A request holding a string with an unpaired surrogate escape (``"a\\ud800b"``) is no JSON the
SDK's parser reads: it answered -32700 with id null, and the client could not tell which of
its requests failed. Python's parser reads it, so doxa answers it with its own id: -32602,
naming the field that holds it (``unpaired_refusal``).

JSON that is no JSON-RPC message (``[]``, ``{}``, ``42``, a request without a method) was
refused by the SDK's streamable HTTP transport with -32602 "Validation error: " and pydantic's
whole report: "11 validation errors for union[JSONRPCRequest, …]", some forty lines of every
way each kind of message failed, each with a link to pydantic's site. doxa answers it with the
same code and id null, in one line: what a request is, and the start of what came
(``not_a_message``); stdio answers the same line the same way.
"""

from __future__ import annotations

import contextlib
import json
import re
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

import pydantic_core
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    ErrorData,
    JSONRPCError,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError

from doxa.server.argument_errors import printable
from doxa.server.request_body import Body, BodyCheck, send_json

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send


#: Where ``RequestIds`` leaves, in the scope of a POST it hands on, the id of the request the
#: body carries (absent for a notification or a response): the SSE transport counts its
#: session's calls unanswered by it, and a stop answers a call still running with it
#: (``doxa.server.draining``).
REQUEST_ID = "doxa.request_id"
#: Where it leaves the id a ``notifications/cancelled`` names: the SDK never answers a call
#: its client cancelled, so that call no longer waits for an answer.
CANCELLED_ID = "doxa.cancelled_id"


def id_refusal(raw: Any) -> str | None:
    """Why the JSON-RPC message ``raw`` (as parsed) is refused for its id, or None: only a
    request (a ``method`` with an ``id``) has one to refuse."""
    if not isinstance(raw, dict) or "method" not in raw or "id" not in raw:
        return None
    ident = raw["id"]
    if ident is not None and not isinstance(ident, bool) and isinstance(ident, int | str):
        return None
    shown = json.dumps(ident, separators=(",", ":"))[:40]
    return f"Invalid Request: id must be a string or an integer, got {shown}"


#: A surrogate written as an escape, paired or not: only a body holding one is searched.
_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")

#: The longest field path a refusal quotes back (a client names its own arguments).
_PATH = 80


def unpaired_refusal(body: bytes) -> JSONRPCError | None:
    """The answer to the request ``body`` when a string in it holds an unpaired surrogate, or
    None: no such string, not a request, or no id to answer with (the SDK's parse error then
    stands, with id null).

    Such a string has no UTF-8 form; the SDK's parser refuses the whole body for it, Python's
    reads it, which finds the request's id and the field.
    """
    if _SURROGATE_ESCAPE.search(body) is None:
        return None
    try:
        raw = json.loads(body.decode("utf-8"))
    except (ValueError, RecursionError):  # not JSON, or a surrogate written raw (no UTF-8)
        return None
    if id_refusal(raw) is not None or not isinstance(raw, dict) or "id" not in raw:
        return None
    ident = raw["id"]
    if isinstance(ident, str) and _first_unpaired(ident) is not None:
        return None  # an id that cannot be sent back
    found: list[tuple[str, str, int]] = []
    _unpaired(raw, "", found)
    if not found:
        return None
    where, text, at = found[0]
    method = raw.get("method")
    method = f"{method} " if isinstance(method, str) and _first_unpaired(method) is None else ""
    where = where if len(where) <= _PATH else where[: _PATH - 1] + "…"
    more = f" ({len(found) - 1} more)" if len(found) > 1 else ""
    message = (
        f"Invalid request parameters: {method}{where} holds an unpaired surrogate"
        f" (U+{ord(text[at]):04X}) at character {at}: send valid Unicode text{more}"
    )
    return JSONRPCError(
        jsonrpc="2.0", id=ident, error=ErrorData(code=INVALID_PARAMS, message=message)
    )


def _first_unpaired(text: str) -> int | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return error.start
    return None


def _unpaired(value: Any, where: str, found: list[tuple[str, str, int]]) -> None:
    """Add (field path, text, index) for every string or key in ``value`` that has no UTF-8
    form."""
    if isinstance(value, str):
        at = _first_unpaired(value)
        if at is not None:
            found.append((where or "message", value, at))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _unpaired(item, f"{where}[{i}]", found)
    elif isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{printable(key)}" if where else printable(key)
            _unpaired(key, path, found)
            _unpaired(item, path, found)


#: What a message must be, as a refusal of one says.
MESSAGE_SHAPE = (
    'a request is one object with "jsonrpc": "2.0", a "method" (a string), an "id" (a string'
    ' or an integer; none in a notification) and, if any, "params" (an object)'
)
#: The most characters of a refused body a refusal quotes back.
_SHOWN = 60


def not_a_message(body: bytes) -> str:
    """The refusal of ``body``, JSON that is no JSON-RPC message, in one line: what a request
    is, and the start of what came (its white space run together)."""
    shown = " ".join(body.decode("utf-8", "replace").split())
    shown = shown if len(shown) <= _SHOWN else shown[: _SHOWN - 1] + "…"
    return f"Validation error: not a JSON-RPC message: {MESSAGE_SHAPE}; got {printable(shown)}"


def shape_refusal(body: bytes, raw: Any) -> JSONRPCError | None:
    """The answer to ``body`` (``raw`` as read) when it is JSON but no JSON-RPC message, as
    the SDK reads one, or None: it is one, or it is no JSON the SDK reads (the SDK's parse
    error then stands)."""
    if (
        isinstance(raw, dict)
        and raw.get("jsonrpc") == "2.0"
        and isinstance(raw.get("method"), str)
        and isinstance(raw.get("params", {}), dict)
    ):
        return None  # a request or notification (its id is judged before): the usual case
    try:
        parsed = pydantic_core.from_json(body)
    except ValueError:
        return None  # no JSON the SDK reads: its parse error stands
    try:
        jsonrpc_message_adapter.validate_python(parsed, by_name=False)
    except ValidationError:
        error = ErrorData(code=INVALID_PARAMS, message=not_a_message(body))
        return JSONRPCError(jsonrpc="2.0", id=None, error=error)
    return None


def refused(text: str) -> JSONRPCError:
    """The answer to a request refused for its id."""
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=text))


class RequestIds(BodyCheck):
    """ASGI wrapper answering a POSTed request whose id is none a request may have, or that
    holds an unpaired surrogate (HTTP and SSE, with status 400, as the SDK answers a body it
    cannot parse), and with ``messages``, JSON that is no JSON-RPC message (``shape_refusal``);
    every other request reaches the app as it came.

    Args:
        app: the SDK's app.
        messages: whether JSON that is no JSON-RPC message is answered here: for streamable
            HTTP, where the SDK's 2025 path answered pydantic's whole report (its 2026-07-28
            path, a request naming that revision, answers in one line of its own; the SSE
            transport answers such a POST 400 "Could not parse message").
        max_body_bytes: the longest body read (the SDK answers a longer one 413).
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        messages: bool = False,
        max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
    ) -> None:
        super().__init__(app, max_body_bytes)
        self.messages = messages

    async def check(self, scope: Scope, body: Body, receive: Receive, send: Send) -> None:
        """Answer a request refused for its id, its shape or an unpaired surrogate; hand any
        other to the app."""
        refusal = None
        raw: Any = None
        if body.complete:
            with contextlib.suppress(ValueError, RecursionError):  # not JSON: the SDK answers
                raw = json.loads(body.data)
                why = id_refusal(raw)
                refusal = None if why is None else refused(why)
                if refusal is None and self.messages and _handshake_era(scope):
                    refusal = shape_refusal(body.data, raw)
            refusal = refusal or unpaired_refusal(body.data)
        if refusal is None:
            scope = _with_ids(scope, raw)
            await self.app(scope, body.replay(receive), send)
            return
        answer = refusal.model_dump_json(by_alias=True, exclude_unset=True).encode()
        await send_json(send, HTTPStatus.BAD_REQUEST, answer)


def _with_ids(scope: Scope, raw: Any) -> Scope:
    """``scope`` with the ids the message ``raw`` asks an answer for or cancels, if any."""
    if not isinstance(raw, dict) or not isinstance(raw.get("method"), str):
        return scope
    if "id" in raw:
        return {**scope, REQUEST_ID: raw["id"]}  # judged above: a string or an integer
    params = raw.get("params")
    if raw["method"] == "notifications/cancelled" and isinstance(params, dict):
        cancelled = params.get("requestId")
        if isinstance(cancelled, int | str) and not isinstance(cancelled, bool):
            return {**scope, CANCELLED_ID: cancelled}
    return scope


_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")


def _handshake_era(scope: Scope) -> bool:
    """Whether the SDK serves the request on its 2025 path: no ``MCP-Protocol-Version``
    header, or (the first one) naming a revision of the ``initialize`` handshake."""
    named = next((v for k, v in scope["headers"] if k == _VERSION_HEADER), None)
    return named is None or named.decode("latin-1") in HANDSHAKE_PROTOCOL_VERSIONS
