"""The SSE transport's requests, ended cleanly, its streams refused quietly, and its streams
ended once their token is no longer accepted.

The SDK's ``/sse`` endpoint answers twice: its event stream, and, once the stream is over,
an empty ``Response()`` (``mcp.server.mcpserver.server``'s ``handle_sse``). When the client
went away first, uvicorn drops the second answer unsent. When the server ended the stream
itself (a stop: sse-starlette closes every open stream on SIGTERM, SIGHUP or Ctrl-C), it
refuses it: every stop with a client connected logged "Exception in ASGI application" and
a traceback (``RuntimeError: Unexpected ASGI message 'http.response.start' sent, after
response already completed``), and so did every ``HEAD /sse``. ``SseStreams`` lets one
answer through per request, and drops what would follow it.

A stream refused for its Host or Origin (``doxa.server.access``) was answered 421 or 403, and
then the SDK raised ``ValueError("Request validation failed")`` through the app: uvicorn logged
"Exception in ASGI application" and a traceback per request, so anyone who could reach the
port could fill the log. ``SseStreams`` runs the same check first and answers such a request
itself, with the SDK's own status and body: the SDK's one line ("Invalid Host header: …") is
all that is logged.

A POST to a session is answered 202 before its message is handed to the session, which waits
for it on the stream's side. A stream that closes meanwhile (its client went away as it sent,
or a moment before: the session is forgotten only once it has ended) made that hand-over
raise ``ClosedResourceError`` through uvicorn, with a traceback, which also cut the client's
connection. The message has no one to answer it either way: it is dropped with one line.

An SSE session is one long ``GET /sse``, answered on its stream, and the ``POST``s of its
requests. Once its token is revoked, the POSTs get 401 (``doxa.server.access``), but the
stream, let in when it opened, stayed open: the SDK's client, its request sent and refused,
waited on the stream for an answer forever. So each open stream checks, every
``CHECK_EVERY_S``, that a request with its token would still be let in as it was, and is
closed once not (revoked, or the token file deleted or damaged, or a first token created
after it opened without one): the client then fails its calls, as over streamable HTTP,
where each request carries the token.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.requests import Request

from doxa.server.access import bearer_token

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from doxa.server.access import Access

log = logging.getLogger(__name__)

#: How often (seconds) an open stream checks its token: one ``stat`` of ``tokens.json`` when
#: the file did not change.
CHECK_EVERY_S = 1.0
#: Where the SDK's SSE app opens streams (``sse_app``'s default ``sse_path``).
SSE_PATH = "/sse"


class SseStreams:
    """ASGI middleware for the SSE app: one response per request, a stream refused for its
    Host or Origin answered here, a message for a stream just closed dropped quietly, and a
    ``GET`` (a stream) ended once its token is no longer accepted (see the module's doc).

    Args:
        app: the SDK's SSE app.
        access: the server's access rules, behind which ``app`` runs.
    """

    def __init__(self, app: ASGIApp, access: Access) -> None:
        self.app = app
        self.access = access
        self.security = TransportSecurityMiddleware(access.security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD") and scope["path"] == SSE_PATH:
            # The SDK's own check, whose refusal it would answer and then raise through uvicorn.
            refusal = await self.security.validate_request(Request(scope, receive))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if scope["method"] == "GET":
            receive = _Watched(receive, self.access, bearer_token(scope)).receive
        answer = _OneResponse(send)
        try:
            await self.app(scope, receive, answer.send)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            if scope["method"] != "POST" or not answer.complete:
                raise
            # Answered 202, then handed to a session whose stream closed meanwhile.
            log.info("a message POSTed to an SSE session whose stream has closed is dropped")


class _Watched:
    """The ``receive`` of an open stream, which tells the app the client went away once a
    request with the stream's token would no longer be let in as the stream was.

    A streaming response waits in ``receive`` for the client's disconnect for as long as it
    streams: the check runs while it waits, and a disconnect is what makes the SDK end the
    stream and its session, as when the client leaves.
    """

    def __init__(self, receive: Receive, access: Access, presented: str | None) -> None:
        self._receive = receive
        self.access = access
        self.presented = presented
        self.opened = access.admitted_as(presented)  # None: revoked since it was let in
        self.ended = False

    async def receive(self) -> Message:
        while not self.ended:
            with anyio.move_on_after(CHECK_EVERY_S):
                return await self._receive()
            now = self.access.admitted_as(self.presented)
            if self.opened is None or now != self.opened:
                log.info(
                    "an SSE stream opened as %s is closed: a request with its token is now"
                    " let in as %s",
                    self.opened or "nobody",
                    now or "nobody",
                )
                self.ended = True
        return {"type": "http.disconnect"}


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
