"""A POSTed body read whole before the app sees it, then handed on as it came: the wire
checks (``exact``, ``request_ids``) read a JSON-RPC message before the SDK does.

A body cut short by the client going away reaches no app: no one is left to answer it, and
the SDK, reading it again, raised ``ClientDisconnect``, which it logged with a traceback
("Error handling POST request" over HTTP, "Exception in ASGI application" over SSE) for
every client that hung up mid-request.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


@dataclass
class Body:
    """What was received of a request: its ASGI messages, the body they carry, and whether
    it came whole (not cut short by a disconnect, nor longer than the limit)."""

    received: deque[Message]
    data: bytes
    complete: bool

    @property
    def abandoned(self) -> bool:
        """Whether the client went away before its body came whole."""
        return bool(self.received) and self.received[-1]["type"] != "http.request"

    def replay(self, receive: Receive) -> Receive:
        """A ``receive`` giving the app what was read here first, then the rest."""

        async def replayed() -> Message:
            return self.received.popleft() if self.received else await receive()

        return replayed

    def replaced(self, data: bytes) -> None:
        """Hand the app ``data`` as the whole body instead."""
        self.received = deque([{"type": "http.request", "body": data, "more_body": False}])
        self.data = data


async def read_body(receive: Receive, limit: int) -> Body:
    """Read a request's body, or up to ``limit`` bytes of it (beyond, the SDK answers 413:
    no more of it is read into memory)."""
    received: deque[Message] = deque()
    data = bytearray()
    while True:
        message = await receive()
        received.append(message)
        if message["type"] != "http.request":
            return Body(received, bytes(data), False)  # a disconnect: the app sees it too
        data.extend(message.get("body", b""))
        if len(data) > limit:
            return Body(received, bytes(data), False)
        if not message.get("more_body", False):
            return Body(received, bytes(data), True)


class BodyCheck:
    """ASGI wrapper reading each POSTed body whole (up to the SDK's own limit, beyond which
    it answers 413) for ``check``; every other request reaches the app as it came."""

    def __init__(self, app: ASGIApp, max_body_bytes: int = DEFAULT_MAX_REQUEST_BODY_SIZE) -> None:
        self.app = app
        self.max_body_bytes = max_body_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_body(receive, self.max_body_bytes)
        if body.abandoned:
            log.debug("a POST is dropped: its client went away before its body came whole")
            return
        await self.check(scope, body, receive, send)

    async def check(self, scope: Scope, body: Body, receive: Receive, send: Send) -> None:
        """Answer the request, or hand it to the app (``body.replay(receive)``)."""
        raise NotImplementedError


async def send_json(
    send: Send, status: int, payload: bytes, headers: Sequence[tuple[bytes, bytes]] = ()
) -> None:
    """Answer with the JSON ``payload`` and ``status`` (and ``headers``), in one body: how
    doxa answers a request it refuses before any app reads it."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode("ascii")),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
