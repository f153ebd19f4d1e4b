"""The server's log, sent to the clients that ask for it (``logging/setLevel``).

A client that sets a level receives doxa's log records at or above it as
``notifications/message``, on its own connection, for as long as it stays connected; the log
on stderr goes on as configured. Records come from any thread (tool calls run the store on
worker threads), so each is handed to the event loop that serves the client.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.types import EmptyResult, LoggingLevel, SetLevelRequestParams

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

    def emit(self, record: logging.LogRecord) -> None:
        """Hand the record to the loop of every connection that wants its level."""
        with self._guard:
            listeners = [(c, to) for c, to in self._listeners.items() if record.levelno >= to.level]
        if not listeners:
            return
        params: dict[str, Any] = {
            "level": mcp_level(record.levelno),
            "logger": record.name,
            "data": self._message(record),
        }
        for connection, listener in listeners:
            if listener.loop.is_closed():
                continue
            coroutine = connection.notify("notifications/message", params)
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is listener.loop:
                task = running.create_task(coroutine)
                self._pending.add(task)
                task.add_done_callback(self._pending.discard)
            else:
                try:
                    asyncio.run_coroutine_threadsafe(coroutine, listener.loop)
                except RuntimeError:  # the loop closed meanwhile: the client is gone
                    coroutine.close()

    def _message(self, record: logging.LogRecord) -> str:
        try:
            return record.getMessage()
        except Exception:  # a bad format string must not break the call that logged it
            return str(record.msg)
