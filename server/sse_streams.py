"""The SSE transport's requests, ended cleanly.

The SDK's ``/sse`` endpoint answers twice: its event stream, and, once the stream is over,
an empty ``Response()`` (``mcp.server.mcpserver.server``'s ``handle_sse``). When the client
went away first, uvicorn drops the second answer unsent. When the server ended the stream
itself (a stop: sse-starlette closes every open stream on SIGTERM, SIGHUP or Ctrl-C), it
refuses it: every stop with a client connected logged "Exception in ASGI application" and
a traceback (``RuntimeError: Unexpected ASGI message 'http.response.start' sent, after
response already completed``), and so did every ``HEAD /sse``. ``SseStreams`` lets one
answer through per request, and drops what would follow it.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)


class SseStreams:
    """ASGI middleware for the SSE app: one response per request (see the module's doc)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        await self.app(scope, receive, _OneResponse(send).send)


class _OneResponse:
    """The ``send`` of one request that passes its first response only.

    A second response begun while the first is still open (a stream ended without its
    closing chunk) lends its closing body to the first, so the client sees the stream end
    rather than a cut connection; one begun after the first was complete is dropped whole.
    """

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.complete = False

    async def send(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            if self.started:
                log.debug("a second response to one request is dropped: %s", message)
                return
            self.started = True
        elif kind == "http.response.body":
            if self.complete:
                return
            if not message.get("more_body", False):
                self.complete = True
        await self._send(message)
