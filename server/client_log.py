"""The server's log, sent to the clients that ask for it.

A client of the 2025 revisions asks with ``logging/setLevel``: it receives doxa's log records
at or above that level as ``notifications/message``, on its own connection, for as long as it
stays connected. A client of the 2026-07-28 revision asks per request, with the level in the
request's ``_meta`` (``io.modelcontextprotocol/logLevel``): it receives the records made while
that request is served (in its task, or on the worker threads anyio runs its tool call on,
which inherit its context; not on threads of the memory's own, such as the recall's second
core or the trainer), on that request's own stream, before the answer. The log on stderr goes on as
configured. Records come from any thread (tool calls run the store on worker threads), so each
is handed to the event loop that serves the client.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
import weakref
from collections.abc import Coroutine
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerMiddleware, ServerRequestContext
from mcp.types import (
    EmptyResult,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    SetLevelRequestParams,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult

#: MCP's levels (RFC 5424's, least severe first) and the Python level each stands for.
LEVELS: dict[LoggingLevel, int] = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL + 5,
    "emergency": logging.CRITICAL + 10,
}


def mcp_level(levelno: int) -> LoggingLevel:
    """The MCP level of a Python log record's level (the most severe one it reaches)."""
    reached: LoggingLevel = "debug"
    for name, number in LEVELS.items():
        if levelno >= number:
            reached = name
    return reached


@dataclass(frozen=True)
class _Listener:
    level: int
    loop: asyncio.AbstractEventLoop


@dataclass
class _Request:
    """A 2026-07-28 request that asked for the log, while it is served."""

    context: ServerRequestContext[Any]
    level: int
    loop: asyncio.AbstractEventLoop
    sending: list[asyncio.Future[Any] | concurrent.futures.Future[Any]] = field(
        default_factory=list
    )
    guard: threading.Lock = field(default_factory=threading.Lock)

    async def sent(self) -> None:
        """Wait for every record handed on so far to be sent (or to fail), at most
        ``_SENDING_S`` in all: a client that stopped reading holds no answer up."""
        with self.guard:
            sending, self.sending = self.sending, []
        waited = [f if isinstance(f, asyncio.Future) else asyncio.wrap_future(f) for f in sending]
        if waited:
            done, _ = await asyncio.wait(waited, timeout=_SENDING_S)
            for future in done:
                # A failure (the client is gone: the answer will not reach it either) is
                # taken here, so it is not reported as never retrieved.
                if not future.cancelled():
                    future.exception()


#: How long an answer waits for the log records sent before it.
_SENDING_S = 5.0

#: The 2026-07-28 request being served, where it asked for the log.
_REQUEST: ContextVar[_Request | None] = ContextVar("doxa_log_request", default=None)


class ClientLog(logging.Handler):
    """Sends the records of the ``doxa`` loggers to every connection that set a level.

    Attach it with ``attach`` while the server runs and ``detach`` when it stops; register
    ``set_level`` as the ``logging/setLevel`` handler. Connections are held weakly: one that
    ends stops receiving without being told.
    """

    def __init__(self, logger: str = "doxa") -> None:
        super().__init__(logging.NOTSET)
        self._logger = logging.getLogger(logger)
        self._listeners: weakref.WeakKeyDictionary[Connection, _Listener] = (
            weakref.WeakKeyDictionary()
        )
        self._guard = threading.Lock()
        self._pending: set[asyncio.Future[Any]] = set()

    def attach(self) -> None:
        """Start relaying the logger's records (idempotent)."""
        if self not in self._logger.handlers:
            self._logger.addHandler(self)

    def detach(self) -> None:
        """Stop relaying them."""
        self._logger.removeHandler(self)

    async def set_level(
        self, ctx: ServerRequestContext[Any], params: SetLevelRequestParams
    ) -> EmptyResult:
        """``logging/setLevel``: this connection receives records at ``params.level`` and up."""
        # The session object is made per request; the connection is what lasts.
        connection: Connection = ctx.session._connection
        with self._guard:
            self._listeners[connection] = _Listener(
                LEVELS[params.level], asyncio.get_running_loop()
            )
        return EmptyResult()

    def middleware(self) -> ServerMiddleware[Any]:
        """The server middleware that sends a 2026-07-28 request the records made while it
        is served, when its ``_meta`` asks for them."""
        return _RequestLog()

    def emit(self, record: logging.LogRecord) -> None:
        """Hand the record to the loop of every connection that wants its level, and of the
        2026-07-28 request being served if it asked for it."""
        with self._guard:
            listeners = [(c, to) for c, to in self._listeners.items() if record.levelno >= to.level]
        request = _REQUEST.get()
        if request is not None and record.levelno < request.level:
            request = None
        if not listeners and request is None:
            return
        params: dict[str, Any] = {
            "level": mcp_level(record.levelno),
            "logger": record.name,
            "data": self._message(record),
        }
        for connection, listener in listeners:
            self._send(connection.notify("notifications/message", params), listener.loop)
        if request is not None:
            notification = LoggingMessageNotification(
                params=LoggingMessageNotificationParams.model_validate(params)
            )
            # On the request's own stream: the protocol allows no other for it.
            sending = request.context.session.send_notification(
                notification, related_request_id=request.context.request_id
            )
            future = self._send(sending, request.loop)
            if future is not None:
                with request.guard:
                    request.sending.append(future)

    def _send(
        self, coroutine: Coroutine[Any, Any, None], loop: asyncio.AbstractEventLoop
    ) -> asyncio.Future[Any] | concurrent.futures.Future[Any] | None:
        """Run ``coroutine`` on ``loop``, from its own thread or any other."""
        if loop.is_closed():
            coroutine.close()
            return None
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task = running.create_task(coroutine)
            self._pending.add(task)
            task.add_done_callback(self._pending.discard)
            return task
        try:
            return asyncio.run_coroutine_threadsafe(coroutine, loop)
        except RuntimeError:  # the loop closed meanwhile: the client is gone
            coroutine.close()
            return None

    def _message(self, record: logging.LogRecord) -> str:
        try:
            return record.getMessage()
        except Exception:  # a bad format string must not break the call that logged it
            return str(record.msg)


class _RequestLog(ServerMiddleware[Any]):
    """Serves a 2026-07-28 request that asked for the log with ``_REQUEST`` set, so the
    records made meanwhile reach it (``ClientLog.emit``), all sent before its answer."""

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Run the request; the records it asked for go to its stream first."""
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return await call_next(ctx)  # 2025: logging/setLevel, for the whole connection
        wanted = allowed_log_levels(ctx.protocol_version, ctx.meta)
        if not wanted:
            return await call_next(ctx)
        level = min(LEVELS[name] for name in wanted)
        request = _Request(ctx, level, asyncio.get_running_loop())
        token = _REQUEST.set(request)
        try:
            return await call_next(ctx)
        finally:
            _REQUEST.reset(token)
            await request.sent()
