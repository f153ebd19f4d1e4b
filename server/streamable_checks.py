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
"""

from __future__ import annotations

from http import HTTPStatus
from typing import TYPE_CHECKING

from mcp.server.transport_security import TransportSecurityMiddleware
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError
from starlette.requests import Request

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
#: The answer to a POST whose ``Accept`` lacks either kind of answer (the SDK's 2025 words:
#: doxa answers in JSON or in an event stream, whichever the request calls for).
NOT_ACCEPTABLE = "Not Acceptable: Client must accept both application/json and text/event-stream"


class StreamableChecks:
    """ASGI middleware for the SDK's streamable HTTP app: without sessions (``stateless``),
    a GET or HEAD of ``MCP_PATH`` let in by the Host and Origin check is answered 405
    (``Allow: POST``) with a JSON-RPC error saying why; a POST the app refuses 406 with no
    body gets one saying what ``Accept`` must hold; every other request reaches the app and
    is answered as the app answers it.

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
        await _answer(send, HTTPStatus.METHOD_NOT_ALLOWED, NO_STREAM, [(b"allow", b"POST")])


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
            await _answer(self._send, HTTPStatus.NOT_ACCEPTABLE, NOT_ACCEPTABLE, [])
            return
        if self.replaced and kind == "http.response.body":
            return  # the empty body of the answer sent in its place
        await self._send(message)


async def _answer(
    send: Send, status: HTTPStatus, message: str, headers: list[tuple[bytes, bytes]]
) -> None:
    """A JSON-RPC error (id null) with ``status``, as the SDK answers a request it refuses
    before reading a message (uvicorn sends no body to a HEAD)."""
    error = JSONRPCError(
        jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST, message=message)
    )
    body = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode("ascii")),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
