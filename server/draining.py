"""A stop over HTTP and SSE drains as one over stdio does: calls in flight get up to
``DRAIN_SECONDS`` to be answered, and any still running then are answered -32000, saying
the call may still have taken effect (``doxa.server.stdio.STOPPED``).

The SDK answers a streamable HTTP call on an event stream of its own (sse-starlette's
``EventSourceResponse``), and sse-starlette ends every such stream as soon as uvicorn is
told to stop. A call still running at SIGTERM was therefore answered an empty stream a
moment after the signal, whatever the drain time: its answer, when it came, had nowhere to
go (the SDK logged "shutdown error response for request 3 gave up: transport write
blocked"), and a call outliving uvicorn's graceful timeout was cancelled with a traceback
("Exception in ASGI application … timeout graceful shutdown exceeded"). So doxa takes that
stop over (``own_the_stop``): each stream ends when doxa says. A stream of what the server
sends outside requests (``GET /mcp``) ends as the stop begins; a call's own stream ends
with its answer, or at the end of the drain time with the refusal, written here in its
place; uvicorn's own timeout comes after it (``GRACE_SECONDS``). The SSE transport drains
its sessions' streams the same way (``doxa.server.sse_streams``).

The call itself is not cut off: a write under way commits, and the process exits once it
has (``doxa.server.http_server``).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import anyio
from mcp_types import JSONRPCError, RequestId
from sse_starlette.event import ensure_bytes
from sse_starlette.sse import AppStatus

from doxa.server.request_body import send_json
from doxa.server.request_ids import REQUEST_ID
from doxa.server.stdio import DRAIN_SECONDS, STOPPED

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger(__name__)

#: How long writing one refusal may take: a client that does not read its stream must not
#: hold the stop up.
WRITE_SECONDS = 1
#: How long uvicorn waits for connections to close after a stop begins, before it cancels
#: what still runs: the drain, then time to write the refusals.
GRACE_SECONDS = DRAIN_SECONDS + 2 * WRITE_SECONDS


#: The SDK's logger of a call's answer, and the start of what it says when its session
#: closes at the end of a stop with the call still running.
DISPATCHER_LOGGER = "mcp.shared.jsonrpc_dispatcher"
_SHUTDOWN_WRITE = "shutdown error response"


def own_the_stop() -> None:
    """Keep sse-starlette from ending every event stream as uvicorn is told to stop: the
    streams end as this module says (see the module's doc). It is a setting of the process,
    which serves one app."""
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]
    logger = logging.getLogger(DISPATCHER_LOGGER)
    if not any(isinstance(f, _AnsweredAlready) for f in logger.filters):
        logger.addFilter(_AnsweredAlready())


class _AnsweredAlready(logging.Filter):
    """The SDK's warning that it could not answer a call its session's close cut off
    ("shutdown error response for request 3 gave up: transport write blocked"), made a
    DEBUG line: at a stop that call was answered already (refused, in its stream, before the
    sessions close), and the SDK's own answer could not go anywhere (it writes it once its
    session no longer reads what it writes)."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if (
            record.levelno == logging.WARNING
            and isinstance(args, tuple)
            and args
            and str(args[0]).startswith(_SHUTDOWN_WRITE)
        ):
            record.levelno = logging.DEBUG
            record.levelname = logging.getLevelName(logging.DEBUG)
            return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)
        return True


class Stop:
    """A server's stop, begun by uvicorn's server (``doxa.server.http_server``) once a stop
    signal came, and waited for by the requests it serves.

    Args:
        drain_seconds: how long calls in flight get to be answered once it has begun.
    """

    def __init__(self, drain_seconds: float = DRAIN_SECONDS) -> None:
        self.drain_seconds = drain_seconds
        self.begun = False
        #: when the drain ends (``anyio.current_time``), once begun
        self.deadline = float("inf")
        self._scopes: set[anyio.CancelScope] = set()

    def begin(self) -> None:
        """Begin the stop (in the event loop): what waits for it is woken."""
        if self.begun:
            return
        self.begun = True
        self.deadline = anyio.current_time() + self.drain_seconds
        for scope in list(self._scopes):
            scope.cancel()

    @contextmanager
    def interrupting(self, scope: anyio.CancelScope) -> Iterator[anyio.CancelScope]:
        """Enter ``scope``, cancelled too as the stop begins (at once if it has)."""
        if self.begun:
            scope.cancel()
        self._scopes.add(scope)
        try:
            with scope:
                yield scope
        finally:
            self._scopes.discard(scope)

    async def wait(self) -> None:
        """Return once the stop has begun."""
        with self.interrupting(anyio.CancelScope()):
            await anyio.sleep_forever()


class Answer:
    """The ``send`` of one request, which knows how far its answer went, and through which
    doxa may write in its place (``take_over``): what the app sends after is dropped, so a
    call is never answered twice.

    Args:
        send: the request's own ``send``.
        answered: told the id of each answer (a result or an error) sent on an event stream.
    """

    def __init__(self, send: Send, answered: Callable[[RequestId], None] | None = None) -> None:
        self._send = send
        self._answered = answered
        self._lock = anyio.Lock(fast_acquire=True)  # no turn of the loop per chunk sent
        self.started = False
        self.complete = False
        self.event_stream = False
        self.taken_over = False
        #: how many answers went out on the event stream
        self.answers = 0

    async def send(self, message: Message) -> None:
        if self.taken_over:
            return
        async with self._lock:
            await self._pass(message)

    async def _pass(self, message: Message) -> None:
        kind = message["type"]
        if kind == "http.response.start":
            self.started = True
            self.event_stream = any(
                name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                for name, value in message.get("headers", ())
            )
        elif kind == "http.response.body":
            if not message.get("more_body", False):
                self.complete = True
            elif self.event_stream:
                ident = answered_id(message.get("body", b""))
                if ident is not None:
                    self.answers += 1
                    if self._answered is not None:
                        self._answered(ident)
        await self._send(message)

    def take_over(self) -> None:
        """Drop whatever the app sends from now on."""
        self.taken_over = True

    async def write(self, message: Message) -> bool:
        """Send ``message`` in the app's place, within ``WRITE_SECONDS``; whether it went."""
        with anyio.move_on_after(WRITE_SECONDS):
            async with self._lock:
                if not self.complete:
                    await self._pass(message)
            return True
        return False

    async def refuse(self, ident: Any) -> None:
        """Answer the call ``ident`` (None: no call known) as stopped, and end the response."""
        refusal = None if ident is None else stopped(ident)
        if not self.started:
            if refusal is not None:
                with anyio.move_on_after(WRITE_SECONDS):
                    async with self._lock:
                        await send_json(self._pass, 200, refusal.encode())
            return
        sent = refusal is None or not self.event_stream or await self.write(stopped_event(refusal))
        if sent:  # else its client does not read: uvicorn ends the connection
            await self.end()

    async def end(self) -> None:
        """End a response left open (its closing chunk), so the client sees it end rather
        than a cut connection, and uvicorn logs nothing of it."""
        if self.started and not self.complete:
            await self.write({"type": "http.response.body", "body": b"", "more_body": False})


#: The start of an event carrying an answer as the SDK writes one (``model_dump_json``: its
#: ``jsonrpc`` first, then its ``id``), and of one carrying a request or a notification.
_ANSWER = re.compile(
    rb'data: \{"jsonrpc":"2\.0","id":(-?\d+|"(?:[^"\\]|\\.)*"),"(?:result|error)":'
)
_NO_ANSWER = re.compile(rb'data: (?:[^{]|\{"jsonrpc":"2\.0","(?:method|id":[^,]*,"method)")')


def answered_id(chunk: bytes) -> RequestId | None:
    """The id of the answer (a result or an error) the event ``chunk`` carries, or None."""
    start = chunk.find(b"data: ", 0, 200)
    if start < 0:
        return None  # a ping, or no event
    found = _ANSWER.match(chunk, start)
    if found is not None:
        ident: object = json.loads(found[1])
    elif _NO_ANSWER.match(chunk, start) is not None:
        return None
    else:  # written otherwise than the SDK writes today: read it whole
        data = b"".join(
            line[len(b"data: ") :] for line in chunk.splitlines() if line.startswith(b"data: ")
        )
        try:
            message = json.loads(data)
        except ValueError:
            return None
        if not isinstance(message, dict) or not ("result" in message or "error" in message):
            return None
        ident = message.get("id")
    return ident if isinstance(ident, int | str) and not isinstance(ident, bool) else None


def stopped(ident: RequestId) -> str:
    """The answer to the call ``ident`` a stop cut off, as JSON."""
    error = JSONRPCError(jsonrpc="2.0", id=ident, error=STOPPED)
    return error.model_dump_json(by_alias=True, exclude_unset=True)


def stopped_event(refusal: str) -> Message:
    """The body chunk carrying the JSON-RPC message ``refusal`` as one event, as the SDK writes
    its own messages on an event stream."""
    chunk = ensure_bytes({"event": "message", "data": refusal}, "\r\n")
    return {"type": "http.response.body", "body": chunk, "more_body": True}


class Draining:
    """ASGI middleware for the SDK's streamable HTTP app, draining it at a stop: a ``GET``
    stream ends as the stop begins; a ``POST`` (a call) unanswered at the end of the drain
    time is answered as stopped, in its stream, in place of the app (see the module's doc).

    Args:
        app: the SDK's streamable HTTP app (behind ``RequestIds``, which tells the call's id).
        stop: the server's stop.
    """

    def __init__(self, app: ASGIApp, stop: Stop) -> None:
        self.app = app
        self.stop = stop

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "POST"):
            await self.app(scope, receive, send)
            return
        answer = Answer(send)
        if scope["method"] == "GET":
            # The stream of what the server sends outside requests: its client hears of the
            # stop as a disconnect, which ends it in the app.
            await self.app(scope, _until(self.stop, receive), answer.send)
            await answer.end()
            return
        with anyio.CancelScope() as serving:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._cut_off, serving, answer)
                await self.app(scope, receive, answer.send)
                tasks.cancel_scope.cancel()
        if serving.cancelled_caught:
            if answer.answers:  # answered, its stream not yet ended
                await answer.end()
                return
            log.warning("a call still running at the end of the stop's drain time is refused")
            await answer.refuse(scope.get(REQUEST_ID))

    async def _cut_off(self, serving: anyio.CancelScope, answer: Answer) -> None:
        """At the end of the drain, stop serving a call not answered yet (the call itself runs
        on: the app only waits for its answer)."""
        await self.stop.wait()
        with anyio.CancelScope(deadline=self.stop.deadline):
            await anyio.sleep_forever()
        if not answer.complete:
            answer.take_over()
            serving.cancel()


def _until(stop: Stop, receive: Receive) -> Receive:
    """``receive``, which tells of a disconnect once ``stop`` has begun."""

    async def received() -> Message:
        with stop.interrupting(anyio.CancelScope()):
            return await receive()
        return {"type": "http.disconnect"}

    return received
