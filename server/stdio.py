"""doxa's stdio transport: newline-delimited JSON-RPC on stdin and stdout.

The same shape as the SDK's ``mcp.server.stdio.stdio_server`` (an async context manager giving
the server's read and write streams), with three differences:

- Every line that cannot be read is answered, with id null, exactly as doxa's streamable
  HTTP answers the same body: -32700 "Parse error: ..." for a line that is not JSON (a lone
  surrogate, nesting too deep, garbage) and -32602 "Validation error: not a JSON-RPC
  message: ..." for JSON that is not a JSON-RPC message (one line, ``request_ids``'s
  ``not_a_message``). The SDK's stdio transport drops such a line and the client waits
  for an answer that never comes. So does a request whose ``id`` is null or no string or
  integer (the SDK reads it as a notification, which is never answered): -32600 "Invalid
  Request", id null. A request holding an unpaired surrogate gets -32602 with its own id,
  naming the field (``doxa.server.request_ids``), as over HTTP.
- Numbers arrive exactly (``doxa.server.exact``); an id is judged before, as read, so a
  float id (``1e400`` included) is refused as over HTTP, never turned into a string id.
- It stops when asked (``stop``, set by ``serve_stdio`` on SIGINT, SIGTERM and SIGHUP): it
  reads no further line, lets the requests already read finish (up to ``DRAIN_SECONDS``),
  then ends the input like an end of file, so the server shuts down through its lifespan,
  which closes the memory. A request still running then is refused (-32000), by the SDK or,
  where the SDK ends it without an answer, by this transport: a client never waits forever.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import pydantic_core
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from doxa.server.exact import exact_json
from doxa.server.request_ids import id_refusal, not_a_message, refused, unpaired_refusal

if TYPE_CHECKING:
    from mcp.server import MCPServer

log = logging.getLogger(__name__)

#: The signals that stop the server cleanly (SIGHUP: the terminal or the client went away).
STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)

#: How long a stop waits for requests already read to be answered. Short, because whoever
#: sends SIGTERM usually sends SIGKILL soon after (Docker after 10 s), and the memory must
#: still be closed after the wait.
DRAIN_SECONDS = 5

#: The answer to a call a stop cut off (on every transport): a write under way still commits.
STOPPED = ErrorData(
    code=CONNECTION_CLOSED,
    message="the server stopped before answering this call; it may still have taken effect",
)


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` on stdin and stdout until the client closes stdin or a stop signal.

    Both ends go through the server's lifespan, so the memory is closed before this returns.
    """
    # MCPServer.run_stdio_async wires the SDK's stdio transport to its low-level server; this
    # is the same wiring with doxa's transport.
    lowlevel = server._lowlevel_server
    stop = anyio.Event()
    with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
        async with anyio.create_task_group() as watching:

            async def watch() -> None:
                # Keeps listening until the memory is closed: a second signal must not cut the
                # close short (Kùzu's graph.wal would stay behind).
                async for signum in signals:
                    name = signal.Signals(signum).name
                    if stop.is_set():
                        log.info("%s received; already stopping", name)
                    else:
                        log.info("%s received; stopping", name)
                        stop.set()

            watching.start_soon(watch)
            async with stdio_server(stop) as (read_stream, write_stream):
                await lowlevel.run(
                    read_stream, write_stream, lowlevel.create_initialization_options()
                )
            watching.cancel_scope.cancel()


@asynccontextmanager
async def stdio_server(
    stop: anyio.Event | None = None, stdin: int | None = None, stdout: int | None = None
) -> AsyncIterator[
    tuple[MemoryObjectReceiveStream[SessionMessage], MemoryObjectSendStream[SessionMessage]]
]:
    """The server's (read, write) streams over the process's stdin and stdout.

    While it serves, fd 0 reads the null device and fd 1 writes to stderr, as with the SDK's
    transport: a library that reads stdin or prints cannot corrupt the protocol.

    Args:
        stop: when set, stop reading, let the requests already read finish, and end the input.
        stdin: a file descriptor to read instead of the process's stdin (left open).
        stdout: a file descriptor to write instead of the process's stdout (left open).
    """
    restores: list[Callable[[], object]] = []
    try:
        stdin = _claim(0, restores) if stdin is None else stdin
        stdout = _claim(1, restores) if stdout is None else stdout
        stop = stop or anyio.Event()
        lines_in, lines = anyio.create_memory_object_stream[bytes](0)
        to_server, read_stream = anyio.create_memory_object_stream[SessionMessage](0)
        write_stream, from_server = anyio.create_memory_object_stream[SessionMessage](0)
        unanswered = _Unanswered()
        # A daemon thread, not an anyio worker: a read blocked on a client that keeps stdin
        # open must neither delay a stop nor keep the process alive at exit.
        threading.Thread(
            target=_read_lines,
            args=(stdin, lines_in, anyio.lowlevel.current_token()),
            name="doxa-stdin",
            daemon=True,
        ).start()
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(_read, lines, to_server, write_stream.clone(), unanswered, stop)
            tasks.start_soon(_write, from_server, stdout, unanswered)
            yield read_stream, write_stream
    finally:
        for restore in reversed(restores):
            restore()


def _claim(fd: int, restores: list[Callable[[], object]]) -> int:
    """A private duplicate of ``fd`` to serve the wire from, with ``fd`` itself pointed away
    (stdin at the null device, stdout at stderr); ``restores`` gets what points it back.

    Raw descriptors, not Python file objects: the reading thread may still be blocked in a
    read at exit, and a buffered file's lock held by a daemon thread can abort the
    interpreter's shutdown. The duplicate is never closed, for the same reason.
    """
    try:
        wire = os.dup(fd)  # not inherited by children (PEP 446)
    except OSError:  # cannot move it: serve the wire where it is
        return fd
    try:
        diversion = _diversion(fd)
    except OSError:
        return wire
    try:
        os.dup2(diversion, fd)
    except OSError:
        return wire
    finally:
        os.close(diversion)
    restores.append(lambda: os.dup2(wire, fd))
    return wire


def _diversion(fd: int) -> int:
    """A new descriptor for ``fd`` to point at while it serves."""
    if fd == 1:
        with contextlib.suppress(OSError):
            return os.dup(2)
    return os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)


def _read_lines(
    fd: int, lines: MemoryObjectSendStream[bytes], token: anyio.lowlevel.EventLoopToken
) -> None:
    """Hand every line read from ``fd`` to the event loop; end the stream at end of file."""
    buffer = bytearray()
    try:
        while chunk := os.read(fd, 1 << 16):
            searched = len(buffer)
            buffer += chunk
            start = 0
            while (end := buffer.find(b"\n", max(start, searched))) >= 0:
                anyio.from_thread.run(lines.send, bytes(buffer[start:end]), token=token)
                start = end + 1
            del buffer[:start]
        if buffer:
            anyio.from_thread.run(lines.send, bytes(buffer), token=token)
        anyio.from_thread.run(lines.aclose, token=token)
    except Exception:  # the transport stopped listening, or the loop has ended
        # Nothing is logged: this may run during the interpreter's shutdown.
        return


async def _read(
    lines: MemoryObjectReceiveStream[bytes],
    to_server: MemoryObjectSendStream[SessionMessage],
    answers: MemoryObjectSendStream[SessionMessage],
    unanswered: _Unanswered,
    stop: anyio.Event,
) -> None:
    """Parse each line and hand it to the server, or answer it with an error; on ``stop`` or
    end of file, wait for the requests read to be answered, then end the server's input."""
    async with to_server, answers:
        async with lines, anyio.create_task_group() as reading:
            reading.start_soon(_cancel_when_set, stop, reading.cancel_scope)
            async for line in lines:
                # A line read is always handed on whole, even while a stop cancels reading.
                with anyio.CancelScope(shield=True):
                    await _dispatch(line, to_server, answers, unanswered)
            reading.cancel_scope.cancel()
        with anyio.move_on_after(DRAIN_SECONDS) as draining:
            await unanswered.none_left()
        if draining.cancelled_caught:
            log.warning("stopping with %d requests unanswered", len(unanswered))


async def _dispatch(
    line: bytes,
    to_server: MemoryObjectSendStream[SessionMessage],
    answers: MemoryObjectSendStream[SessionMessage],
    unanswered: _Unanswered,
) -> None:
    """One line: the message to the server, or the error the SDK's HTTP transport answers."""
    # Without its line end the body is what HTTP would get, so the errors match to the column.
    line = line.rstrip(b"\r\n")
    if not line.strip():
        return  # an empty line carries no message
    try:
        raw = pydantic_core.from_json(line)
    except ValueError as error:
        unpaired = unpaired_refusal(line)
        answer = _error(PARSE_ERROR, f"Parse error: {error}")
        await answers.send(answer if unpaired is None else SessionMessage(unpaired))
        return
    # The id is judged as read, before exact numbers: 1e400 is no id, not the id "1e400".
    why = id_refusal(raw)
    if why is not None:
        await answers.send(SessionMessage(refused(why)))
        return
    exact = exact_json(line)
    if exact is not line:
        raw = pydantic_core.from_json(exact)
    try:
        message = jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        await answers.send(_error(INVALID_PARAMS, not_a_message(line)))
        return
    if isinstance(message, JSONRPCRequest):
        unanswered.add(message.id)
    elif isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
        # A request the client cancelled is never answered (the protocol forbids it).
        cancelled = (message.params or {}).get("requestId")
        if isinstance(cancelled, int | str):
            unanswered.answered(cancelled)
    await to_server.send(SessionMessage(message))


def _error(code: int, text: str) -> SessionMessage:
    return SessionMessage(
        JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=text))
    )


async def _cancel_when_set(event: anyio.Event, scope: anyio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


async def _write(
    from_server: MemoryObjectReceiveStream[SessionMessage], wire: int, unanswered: _Unanswered
) -> None:
    """Write each message as one line; after a failed write (the client is gone) the rest are
    dropped, so the server still ends through its lifespan instead of failing mid-close."""
    broken = False
    async with from_server:
        async for session_message in from_server:
            message = session_message.message
            if isinstance(message, JSONRPCError) and message.error.code == CONNECTION_CLOSED:
                # The SDK's "Connection closed" for a call cut off at a stop: a write under
                # way still commits (a batch of 60,000 did), so say it may have taken effect.
                message = JSONRPCError(jsonrpc="2.0", id=message.id, error=STOPPED)
            if not broken:
                data = message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                try:
                    await anyio.to_thread.run_sync(_write_all, wire, data)
                except OSError as error:
                    log.warning("stdout is closed (%s); dropping the server's output", error)
                    broken = True
            if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id is not None:
                unanswered.answered(message.id)
    # The server has written all it will. A call it cancelled at shutdown can end without an
    # answer (mcp 2.3 prefers none to two); the client must not wait for one forever.
    for request_id in unanswered.left():
        refusal = JSONRPCError(jsonrpc="2.0", id=request_id, error=STOPPED)
        if not broken:
            with contextlib.suppress(OSError):
                data = refusal.model_dump_json(by_alias=True, exclude_unset=True).encode()
                await anyio.to_thread.run_sync(_write_all, wire, data + b"\n")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


class _Unanswered:
    """The ids of the requests handed to the server and not yet answered."""

    def __init__(self) -> None:
        self._ids: set[int | str] = set()
        self._empty = anyio.Event()
        self._empty.set()

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, request_id: int | str) -> None:
        self._ids.add(request_id)
        if self._empty.is_set():
            self._empty = anyio.Event()

    def answered(self, request_id: int | str) -> None:
        self._ids.discard(request_id)
        if not self._ids:
            self._empty.set()

    async def none_left(self) -> None:
        await self._empty.wait()

    def left(self) -> list[int | str]:
        return list(self._ids)
