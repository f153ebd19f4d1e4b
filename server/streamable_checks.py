"""The streamable HTTP transport's answers that the SDK leaves open-ended, empty or wrong.

With several workers (``doxa.server.workers``) requests are served without sessions, and a
``GET /mcp`` opened the SDK's event stream for server-initiated messages all the same: a
stream that carried nothing, ever, and never ended, so a client could hold any number of
them open. The protocol lets a server offering no such stream answer that GET with 405
Method Not Allowed, which is what doxa does then (after the Host and Origin check, as the
SDK orders them). One process with sessions keeps the SDK's stream: a 2025 client's
``logging/setLevel`` sends it the log records made outside its requests.

A POST whose ``Accept`` lacks ``application/json`` or ``text/event-stream`` is refused 406
Not Acceptable. A 2025 request was told why in a JSON-RPC error; a 2026-07-28 one (the SDK's
own path for that revision) got an empty 406 with no content type, leaving the client to guess.
It gets the same error as the 2025 request now, naming what ``Accept`` must hold.

The SDK serves a POST whose ``MCP-Protocol-Version`` header is not a 2025 revision as a
2026-07-28 request, which carries its envelope in ``params._meta``. A header naming no
revision at all (``1999-01-01``, garbage) sent with a 2025 request, in a session or not, was
therefore refused for the envelope it lacks (-32602 "params._meta must be an object carrying
…"), which says nothing of the header. Such a request is refused for its header instead:
-32022, the protocol's code for a version not served, naming the header, what it said and
the revisions served, which the error's data lists (``supported``, ``requested``) for a
client choosing another.
"""

from __future__ import annotations

import json
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
)
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp_types import (
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    ErrorData,
    RequestId,
    UnsupportedProtocolVersionErrorData,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from starlette.requests import Request

from doxa.server.request_body import read_body, send_json
from doxa.server.request_ids import id_refusal
from doxa.store.drafts import sent

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from doxa.server.access import Access

#: Where the SDK's streamable HTTP app answers (``streamable_http_app``'s default path).
MCP_PATH = "/mcp"

#: The answer to a GET (or HEAD) when no session, hence no event stream, is served.
NO_STREAM = (
    "Method Not Allowed: this server runs several workers and keeps no sessions, so it has"
    " no event stream to open with GET; POST each request (its answer comes on its own"
    " response)"
)
#: The revisions a request may name in its header: those of the ``initialize`` handshake,
#: then those whose requests carry their own envelope.
SUPPORTED = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
#: The header naming a request's revision, as the protocol spells it, and as ASGI gives it.
VERSION_HEADER = "MCP-Protocol-Version"
_VERSION_HEADER = MCP_PROTOCOL_VERSION_HEADER.lower().encode("ascii")
#: The answer to a POST whose ``Accept`` lacks either kind of answer (the SDK's 2025 words:
#: doxa answers in JSON or in an event stream, whichever the request calls for).
NOT_ACCEPTABLE = "Not Acceptable: Client must accept both application/json and text/event-stream"


class StreamableChecks:
    """ASGI middleware for the SDK's streamable HTTP app: without sessions (``stateless``),
    a GET or HEAD of ``MCP_PATH`` let in by the Host and Origin check is answered 405
    (``Allow: POST``) with a JSON-RPC error saying why. A POST naming a protocol revision
    not served, once let in, is refused for it (-32022, with the request's id); one the app
    refuses 406 with no body gets one saying what ``Accept`` must hold. Every other request
    reaches the app and is answered as the app answers it.

    Args:
        app: the SDK's streamable HTTP app.
        access: the server's access rules (the Host and Origin a request may carry).
        stateless: whether requests are served without sessions (several workers).
    """

    def __init__(self, app: ASGIApp, access: Access, *, stateless: bool) -> None:
        self.app = app
        self.stateless = stateless
        self.security = TransportSecurityMiddleware(access.security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != MCP_PATH:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST":
            # The first such header, as the SDK routes by it.
            named = next((v for k, v in scope["headers"] if k == _VERSION_HEADER), None)
            version = None if named is None else named.decode("latin-1")
            if version is not None and version not in SUPPORTED:
                await self._unsupported(version, scope, receive, send)
                return
            await self.app(scope, receive, _Explained(send).send)
            return
        if not self.stateless or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        # The SDK's own check first: a foreign Host is told 421 whatever its method.
        refusal = await self.security.validate_request(Request(scope, receive))
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        await _answer(send, HTTPStatus.METHOD_NOT_ALLOWED, _error(NO_STREAM), [(b"allow", b"POST")])

    async def _unsupported(self, version: str, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a POST whose header names ``version``, a revision not served, once the Host,
        Origin and content type let it in (as the SDK checks them first), with its own id."""
        refusal = await self.security.validate_request(Request(scope, receive), is_post=True)
        if refusal is not None:
            await refusal(scope, receive, send)
            return
        body = await read_body(receive, DEFAULT_MAX_REQUEST_BODY_SIZE)
        if body.abandoned:
            return  # no one is left to answer
        if not body.complete:  # too large: the SDK answers 413 first
            await self.app(scope, body.replay(receive), send)
            return
        message = (
            f"Unsupported protocol version: the {VERSION_HEADER} header says"
            f" {sent(version)}; this server supports {', '.join(HANDSHAKE_PROTOCOL_VERSIONS)}"
            f" (after initialize) and {', '.join(MODERN_PROTOCOL_VERSIONS)}"
        )
        data = UnsupportedProtocolVersionErrorData(supported=list(SUPPORTED), requested=version)
        error = _error(message, UNSUPPORTED_PROTOCOL_VERSION, data.model_dump(mode="json"))
        await _answer(send, HTTPStatus.BAD_REQUEST, error, [], _request_id(body.data))


class _Explained:
    """The ``send`` of one POST, through which a 406 the app sent with no content type (and
    so no body worth reading) goes out as a JSON-RPC error naming what ``Accept`` must hold;
    any other answer goes out as it came."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.replaced = False

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if (
            kind == "http.response.start"
            and message["status"] == HTTPStatus.NOT_ACCEPTABLE
            and not any(name.lower() == b"content-type" for name, _ in message.get("headers", ()))
        ):
            self.replaced = True
            await _answer(self._send, HTTPStatus.NOT_ACCEPTABLE, _error(NOT_ACCEPTABLE), [])
            return
        if self.replaced and kind == "http.response.body":
            return  # the empty body of the answer sent in its place
        await self._send(message)


def _error(message: str, code: int = INVALID_REQUEST, data: Any = None) -> ErrorData:
    """A JSON-RPC error: -32600 (Invalid Request) unless told another ``code``."""
    return ErrorData(code=code, message=message, data=data)


def _request_id(body: bytes) -> RequestId | None:
    """The id of the JSON-RPC request ``body``, or None: not a request, or an id that is none
    a request may have, or that cannot be sent back (an unpaired surrogate)."""
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(raw, dict) or "method" not in raw or "id" not in raw or id_refusal(raw):
        return None
    ident = raw["id"]
    if isinstance(ident, str):
        try:
            ident.encode("utf-8")
        except UnicodeEncodeError:
            return None
    return ident if isinstance(ident, int | str) else None


async def _answer(
    send: Send,
    status: HTTPStatus,
    error: ErrorData,
    headers: list[tuple[bytes, bytes]],
    ident: RequestId | None = None,
) -> None:
    """A JSON-RPC error with ``status``, as the SDK answers a request it refuses before
    reading a message (id null unless ``ident``; uvicorn sends no body to a HEAD)."""
    # The id is written out when null too, as JSON-RPC wants.
    answer = {
        "jsonrpc": "2.0",
        "id": ident,
        "error": error.model_dump(mode="json", exclude_none=True),
    }
    payload = json.dumps(answer, separators=(",", ":"), ensure_ascii=False).encode()
    await send_json(send, status, payload, headers)
