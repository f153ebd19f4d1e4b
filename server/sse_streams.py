"""The SSE transport's requests, ended cleanly, its streams refused quietly, its streams
ended once their token is no longer accepted, and drained at a stop.

The SDK's ``/sse`` endpoint answers twice: its event stream, and, once the stream is over,
an empty ``Response()`` (``mcp.server.mcpserver.server``'s ``handle_sse``). When the client
went away first, uvicorn drops the second answer unsent. When the server ended the stream
itself (its token revoked; at a stop, as sse-starlette once closed every open stream), it
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

A session's answers all go on its stream, which its client must read. A client that POSTed
calls and never read their answers had each answer wait in the server's memory for good
(202 to every POST, and +5.5 MB/s for one posting recalls, kept after it closed its
stream): a session has at most ``MAX_UNANSWERED`` calls unanswered on its stream (running, or
answered and not yet taken by its client), and a call beyond is refused, 429 with
``Retry-After``, saying to read the stream. What a session held goes when its stream ends.

A session's answers all go on its stream, so a stop drains it (``doxa.server.draining``):
each session counts the calls POSTed to it and not yet answered on its stream; a stream
with none ends as the stop begins, one with calls in flight once they are answered, or at
the end of the drain time with each call still running refused on it, -32000, saying it
may still have taken effect. sse-starlette had ended every stream at the signal, and the
answers of the calls in flight were lost.
"""

from __future__ import annotations

import contextvars
import logging
from typing import TYPE_CHECKING
from urllib.parse import parse_qs
from uuid import UUID

import anyio
from mcp.server.transport_security import TransportSecurityMiddleware
from mcp_types import ErrorData, JSONRPCError, RequestId
from starlette.requests import Request

from doxa.server.access import bearer_token
from doxa.server.draining import Answer, Stop, stopped, stopped_event
from doxa.server.request_body import send_json
from doxa.server.request_ids import CANCELLED_ID, REQUEST_ID

if TYPE_CHECKING:
    from anyio.abc import TaskGroup
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from doxa.server.access import Access

log = logging.getLogger(__name__)

#: How often (seconds) an open stream checks its token: one ``stat`` of ``tokens.json`` when
#: the file did not change.
CHECK_EVERY_S = 1.0
#: Where the SDK's SSE app opens streams (``sse_app``'s default ``sse_path``).
SSE_PATH = "/sse"
#: The most calls a session may have unanswered on its stream: a few dozen answers held for
#: a client that does not read (a recall's with ``explain`` is about 0.25 MB), and more
#: calls in flight at once than a client reading its stream needs.
MAX_UNANSWERED = 64
#: How long (seconds) a call refused for them is told to wait (``Retry-After``).
RETRY_AFTER_S = 1
#: The JSON-RPC code of that refusal (a server error, of JSON-RPC's range for them).
SERVER_BUSY = -32000


class SseStreams:
    """ASGI middleware for the SSE app: one response per request, a stream refused for its
    Host or Origin answered here, a message for a stream just closed dropped quietly, and a
    ``GET`` (a stream) ended once its token is no longer accepted (see the module's doc).

    Args:
        app: the SDK's SSE app (behind ``RequestIds``, which tells each POST's ids).
        access: the server's access rules, behind which ``app`` runs.
        stop: the server's stop, which drains each session's stream.
    """

    def __init__(self, app: ASGIApp, access: Access, stop: Stop) -> None:
        self.app = app
        self.access = access
        self.stop = stop
        self.security = TransportSecurityMiddleware(access.security)
        #: the open streams' sessions, by the id the SDK gave each (``uuid.hex``)
        self.sessions: dict[str, _Session] = {}
        #: where sessions run while the app's lifespan does (``_stream``)
        self._sessions: TaskGroup | None = None
        #: a session's event, set once it has ended, for each session running
        self._running: set[anyio.Event] = set()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(scope, receive, send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["method"] in ("GET", "HEAD") and scope["path"] == SSE_PATH:
            # The SDK's own check, whose refusal it would answer and then raise through uvicorn.
            refusal = await self.security.validate_request(Request(scope, receive))
            if refusal is not None:
                await refusal(scope, receive, send)
                return
        if scope["method"] == "GET":
            await self._stream(scope, receive, send)
            return
        session = self._session_of(scope) if scope["method"] == "POST" else None
        if session is None:
            await self._serve(scope, receive, send)
            return
        cancelled = scope.get(CANCELLED_ID)
        if cancelled is not None:  # the SDK never answers a call its client cancelled
            session.answered(cancelled)
        ident = scope.get(REQUEST_ID)
        if ident is None:
            await self._serve(scope, receive, send)
            return
        if len(session) >= MAX_UNANSWERED:
            if not session.refused:  # once per session: its client may keep sending
                log.info("an SSE session's client does not read its stream: calls refused")
                session.refused = True
            await _too_many(ident, send)
            return
        session.posted(ident)
        status = _Status(send)
        try:
            await self._serve(scope, receive, status.send)
        finally:
            if status.code != 202:  # refused: the session never gets it
                session.answered(ident)

    async def _lifespan(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The app's lifespan, which holds the sessions (``_stream``): its shutdown completes
        once the calls of sessions drained at a stop have finished."""
        async with anyio.create_task_group() as sessions:

            async def sent(message: Message) -> None:
                if message["type"] == "lifespan.shutdown.complete":
                    for done in list(self._running):
                        await done.wait()
                await send(message)

            self._sessions = sessions
            try:
                await self.app(scope, receive, sent)
            finally:
                self._sessions = None

    async def _stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A ``GET``: a session's stream, watched for its token and drained at a stop.

        The SDK runs the session inside this request, and it ends only once its calls have:
        a call still running when a stop has refused it and ended the stream (a write, which
        is never cut off) held the request past uvicorn's graceful timeout, which cancelled
        it, with "Exception in ASGI application" and a traceback. So the session runs in the
        lifespan's task group, and the request ends with its stream (drained, closed for its
        token, or its client gone: ``_Watched``), the session's calls finishing before the
        lifespan's shutdown completes, as the streamable HTTP sessions' do before their
        manager stops.
        """
        session = _Session()
        answer = Answer(send, session.answered)
        released = anyio.Event()  # the stream has ended (or its client gone), or the session

        async def sent(message: Message) -> None:
            if session.key is None and message["type"] == "http.response.body":
                session.key = _endpoint_session(message.get("body", b""))
                if session.key is not None:
                    self.sessions[session.key] = session
            await answer.send(message)

        watched = _Watched(
            receive, self.access, bearer_token(scope), self.stop, session, answer, released
        )
        failed: list[Exception] = []
        serving = anyio.CancelScope()

        ended = anyio.Event()

        async def serve() -> None:
            self._running.add(ended)
            try:
                with serving:
                    await self._serve(scope, watched.receive, sent)
            except Exception as error:
                if released.is_set():  # its request has ended: no one else to tell
                    log.error("an SSE session failed after its stream ended", exc_info=error)
                failed.append(error)
            finally:
                released.set()
                ended.set()
                self._running.discard(ended)
                if session.key is not None:
                    self.sessions.pop(session.key, None)

        if self._sessions is None:  # no lifespan: served in this request
            await serve()
        else:
            # Started in this request's context, which holds its caller (``access``).
            contextvars.copy_context().run(self._sessions.start_soon, serve)
            try:
                await released.wait()
            except BaseException:
                serving.cancel()
                raise
        if failed and not watched.drained:
            raise failed[0]

    def _session_of(self, scope: Scope) -> _Session | None:
        """The open session a POST names in its query (``session_id``), if any."""
        named = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_id")
        if not named:
            return None
        try:
            key = UUID(hex=named[0]).hex  # as the SDK reads it
        except ValueError:
            return None
        return self.sessions.get(key)

    async def _serve(self, scope: Scope, receive: Receive, send: Send) -> None:
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

    def __init__(
        self,
        receive: Receive,
        access: Access,
        presented: str | None,
        stop: Stop,
        session: _Session,
        answer: Answer,
        released: anyio.Event,
    ) -> None:
        self._receive = receive
        self.access = access
        self.presented = presented
        self.opened = access.admitted_as(presented)  # None: revoked since it was let in
        self.stop = stop
        self.session = session
        self.answer = answer
        self.released = released
        self.ended = False
        #: whether a stop has ended the stream (its request may then end: ``_stream``)
        self.drained = False

    async def receive(self) -> Message:
        while not self.ended:
            with self.stop.interrupting(anyio.move_on_after(CHECK_EVERY_S)):
                message = await self._receive()
                if message["type"] == "http.disconnect":
                    # Its client has gone: the request ends now, its session's calls running
                    # on in the lifespan (``_stream``). Waiting for them held it past a stop's
                    # graceful timeout when one ran long, and uvicorn cancelled it.
                    self.released.set()
                return message
            if self.stop.begun:
                await self._drain()
                break
            now = self.access.admitted_as(self.presented)
            if self.opened is None or now != self.opened:
                log.info(
                    "an SSE stream opened as %s is closed: a request with its token is now"
                    " let in as %s",
                    self.opened or "nobody",
                    now or "nobody",
                )
                self.ended = True
                # Ended here: the SDK ends its stream as for a client gone, with no closing
                # chunk, which came only once the session's calls had ended; a call running
                # on held the client's stream open, and at a stop the request, past
                # uvicorn's graceful timeout. No answer went on the stream after it anyway.
                self.answer.take_over()
                try:
                    await self.answer.end()
                finally:
                    self.released.set()
        return {"type": "http.disconnect"}

    async def _drain(self) -> None:
        """Wait for the session's calls to be answered, until the end of the drain time;
        refuse those still running then; end the stream (the SDK then ends the session)."""
        with anyio.CancelScope(deadline=self.stop.deadline):
            await self.session.idle()
        self.answer.take_over()  # an answer coming after its call's refusal is dropped
        left = self.session.left()
        if left:
            log.warning("an SSE stream ends with %d calls unanswered on it, refused", len(left))
        try:
            for ident in left:
                if not await self.answer.write(stopped_event(stopped(ident))):
                    return  # its client does not read: uvicorn ends the connection
            await self.answer.end()
        finally:
            self.drained = True
            self.released.set()


class _Session:
    """The calls POSTed to one SSE session and not yet answered on its stream (an id sent
    again counts twice, as it is answered twice)."""

    def __init__(self) -> None:
        #: the id the SDK gave it, once its stream told the client
        self.key: str | None = None
        #: whether a call was refused for the calls unanswered
        self.refused = False
        self._calls: dict[RequestId, int] = {}
        self._idle: anyio.Event | None = None

    def __len__(self) -> int:
        return sum(self._calls.values())

    def posted(self, ident: RequestId) -> None:
        self._calls[ident] = self._calls.get(ident, 0) + 1

    def answered(self, ident: RequestId) -> None:
        count = self._calls.pop(ident, 0) - 1
        if count > 0:
            self._calls[ident] = count
        if not self._calls and self._idle is not None:
            self._idle.set()

    async def idle(self) -> None:
        """Return once every call is answered."""
        while self._calls:
            if self._idle is None or self._idle.is_set():
                self._idle = anyio.Event()
            await self._idle.wait()

    def left(self) -> list[RequestId]:
        return [ident for ident, count in self._calls.items() for _ in range(count)]


async def _too_many(ident: RequestId, send: Send) -> None:
    """Refuse the call ``ident``, POSTed to a session with ``MAX_UNANSWERED`` calls unanswered
    (429, with when to try again), naming the cause and what to do."""
    message = (
        f"Too many calls unanswered: this SSE session has {MAX_UNANSWERED} calls running or"
        " answered on its event stream and not yet read; read the stream (the GET /sse"
        " response) for their answers, then send this call again"
    )
    error = JSONRPCError(
        jsonrpc="2.0", id=ident, error=ErrorData(code=SERVER_BUSY, message=message)
    )
    payload = error.model_dump_json(by_alias=True, exclude_unset=True).encode()
    await send_json(send, 429, payload, [(b"retry-after", str(RETRY_AFTER_S).encode("ascii"))])


def _endpoint_session(chunk: bytes) -> str | None:
    """The session id the SDK's first event (``endpoint``) tells the client to POST to."""
    if not chunk.startswith(b"event: endpoint"):
        return None
    _, _, query = chunk.partition(b"?")
    named = parse_qs(query.split(b"\r")[0].split(b"\n")[0].decode("latin-1")).get("session_id")
    return named[0] if named else None


class _Status:
    """The ``send`` of one request, remembering the status it was answered with."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.code = 0

    async def send(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.code = message["status"]
        await self._send(message)


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
