"""``doxa serve --transport http`` (or ``sse``): the MCP server behind uvicorn, in one process,
or in several worker processes answering on one port while the serving process holds the
memory for them (``[server] workers``, ``doxa.server.workers``).

Run as ``python -m doxa.server.http_server``, this module is one such extra worker: it reads
its settings and listening socket from the environment its serving process set.
"""

from __future__ import annotations

import contextlib
import errno
import faulthandler
import functools
import json
import logging
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import TYPE_CHECKING, Any

from doxa.server.settings import Settings, SettingsError

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

    from doxa.server.access import Access
    from doxa.server.draining import Stop
    from doxa.server.workers import Workers
    from doxa.tools.context import MemoryContext

log = logging.getLogger("doxa")

#: A handler for ``signal.signal``.
_Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers

#: How a worker learns its settings (JSON), listening socket (a file descriptor) and the
#: process that started it (``doxa.server.workers``).
WORKER_SETTINGS = "DOXA_WORKER_SETTINGS"
WORKER_SOCKET = "DOXA_WORKER_SOCKET"
WORKER_PARENT = "DOXA_WORKER_PARENT"


def serve_http(settings: Settings) -> int:
    """Serve HTTP or SSE until Ctrl-C, SIGTERM or SIGHUP; every way out stops the workers,
    then closes the memory. Returns the exit status: 0, or 1 when every worker kept dying
    at start (``doxa.server.workers``).

    Raises:
        SettingsError: the server must not start (``doxa.server.access``), or cannot take
            its port (``listen``).
    """
    import anyio

    from doxa.server.access import Access
    from doxa.server.cli import announce
    from doxa.server.draining import Stop
    from doxa.server.stdio import STOP_SIGNALS
    from doxa.server.workers import Workers
    from doxa.tools.context import MemoryContext

    workers = settings.server.workers  # more than one only for HTTP (``doxa.server.cli.serve``)
    # Checked before the memory opens: a server that must not start leaves nothing behind.
    access = Access(settings)
    access.check()
    # Bound here, so the port answers (connections wait in its queue) from now on, and a
    # port another server holds is refused before a data directory is made.
    listeners = listen(settings)
    announce(settings)  # not before: "doxa serving on http" preceded each refusal
    # One memory for the whole process, opened now and kept across sessions.
    state = MemoryContext(settings.store)
    state.start()
    others: Workers | None = None
    try:
        if workers == 1:
            stop = Stop()
            config = _config(settings, _app(settings, state, access, stop))
            _say_listening(config)
            server = _server(config, STOP_SIGNALS, stop)
            anyio.run(functools.partial(server.serve, sockets=listeners))
            return 0
        _say_listening(_config(settings, _no_app))
        # Started once this process holds the memory (or knows its owner): a worker that
        # raced it for the data directory would own it, and go first at every stop.
        state.memory().wait_settled()
        [listener] = listeners
        others = Workers(settings, listener, workers)
        return _keep_memory(others, STOP_SIGNALS)
    finally:
        # A second signal must not cut the close short (Kùzu's graph.wal would stay behind).
        with handling(STOP_SIGNALS, signal.SIG_IGN):
            if others is not None:
                others.stop()  # they relay to this process: they go first
            state.close()
            for sock in listeners:
                sock.close()


def listen(settings: Settings) -> list[socket.socket]:
    """The sockets serving takes the port with, bound and listening: every address the host
    names, as uvicorn's own server binds them; for workers, the one socket they share, as
    uvicorn binds one for them.

    Raises:
        SettingsError: the port is taken, or the address cannot be listened on (named, with
            what to choose instead). uvicorn had logged its ``[Errno 98] … address already in
            use`` and exited 3 (``doxa check``'s code for a directory a server holds), the new
            data directory it had made left behind.
    """
    host, port = settings.server.host, settings.server.port
    addresses: list[tuple[socket.AddressFamily, tuple[Any, ...]]]
    try:
        if settings.server.workers > 1:
            family = socket.AF_INET6 if ":" in host else socket.AF_INET
            addresses = [(family, (host, port))]
        else:
            found = socket.getaddrinfo(
                host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
            )
            addresses = list(dict.fromkeys((info[0], info[4]) for info in found))
    except OSError as error:  # a name that resolves to nothing
        raise SettingsError(
            f"cannot listen on {host}: {error.strerror or error}; choose another with --host"
        ) from None
    bound: list[socket.socket] = []
    try:
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            bound.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6 and settings.server.workers == 1:
                # As asyncio binds each address: IPv4's is bound on its own (uvicorn's
                # socket for workers takes the system's default, both on "::").
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(_BACKLOG)
    except OSError as error:
        for sock in bound:
            sock.close()
        raise SettingsError(_cannot_listen(host, port, error)) from None
    return bound


#: Connections waiting to be accepted (uvicorn's default).
_BACKLOG = 2048


def _say_listening(config: uvicorn.Config) -> None:
    """uvicorn's line saying where it serves, which it leaves out when given its sockets
    (``config`` has set up its logging)."""
    host = f"[{config.host}]" if ":" in config.host else config.host
    logging.getLogger("uvicorn.error").info(
        "Uvicorn running on http://%s:%d (Press CTRL+C to quit)", host, config.port
    )


async def _no_app(scope: Any, receive: Any, send: Any) -> None:
    """The application uvicorn's settings need in the serving process, which only holds
    the port: its workers serve it."""
    raise RuntimeError("the serving process of several workers serves no requests")


def _cannot_listen(host: str, port: int, error: OSError) -> str:
    """Why ``host:port`` cannot be listened on, and what to choose instead."""
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if error.errno == errno.EADDRINUSE:
        return (
            f"port {port} is already in use on {host} (another server listens there);"
            " choose another with --port (or [server] port, DOXA_PORT)"
        )
    if error.errno == errno.EACCES:
        return (
            f"cannot listen on {where}: permission denied (ports below 1024 need privileges);"
            " choose another with --port"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {where}: {host} is no address of this machine;"
            " choose another with --host"
        )
    return f"cannot listen on {where}: {error.strerror or error}"


def _keep_memory(workers: Workers, stop_signals: tuple[int, ...]) -> int:
    """What the serving process does while its workers answer HTTP: hold the memory (its
    relay answers them on other threads) until one of ``stop_signals``, or until every
    worker is given up (then 1)."""
    stop = threading.Event()
    with handling(stop_signals, lambda *_: stop.set()):
        while not stop.wait(0.5):
            if workers.given_up():
                log.error("no HTTP worker is left to answer on the port: stopping")
                return 1
    return 0


def worker_main() -> int:
    """One extra worker (``python -m doxa.server.http_server``): serve on the inherited
    socket until told to stop or until the process that started it is gone."""
    import anyio

    from doxa.server.access import Access
    from doxa.server.cli import limit_malloc_arenas
    from doxa.server.draining import Stop
    from doxa.server.stdio import STOP_SIGNALS
    from doxa.tools.context import MemoryContext

    try:
        settings = Settings.model_validate_json(os.environ.pop(WORKER_SETTINGS))
        listener = socket.socket(fileno=int(os.environ.pop(WORKER_SOCKET)))
        parent = int(os.environ.pop(WORKER_PARENT))
    except (KeyError, ValueError) as error:
        print(f"doxa: not started as an HTTP worker ({error})", file=sys.stderr)
        return 2
    limit_malloc_arenas()
    logging.basicConfig(
        stream=sys.stderr,
        level=settings.server.log_level,
        format="%(asctime)s %(levelname)s %(name)s[worker %(process)d]: %(message)s",
    )
    faulthandler.enable()
    # A worker only relays: were it to take the memory over when its owner goes, HTTP and
    # the memory would share one interpreter lock again (and a worker outliving its serving
    # process would open the memory only to close it as it stops).
    state = MemoryContext(settings.store, may_own=False)
    state.start()
    stop = Stop()
    config = _config(settings, _app(settings, state, Access(settings), stop))
    try:
        server = _server(config, STOP_SIGNALS, stop, parent=parent)
        anyio.run(functools.partial(server.serve, sockets=[listener]))
    finally:
        with handling(STOP_SIGNALS, signal.SIG_IGN):
            state.close()
    return 0


def _app(settings: Settings, state: MemoryContext, access: Access, stop: Stop) -> ASGIApp:
    """The ASGI app: the MCP server behind exact numbers, request ids and the token check
    (over SSE, with its streams ended cleanly, and once their token is no longer accepted:
    ``doxa.server.sse_streams``), drained at ``stop`` (``doxa.server.draining``).

    With several workers requests are served statelessly (no ``Mcp-Session-Id``): the
    kernel gives each connection to whichever worker accepts it, and a session held by one
    worker would be unknown to the others. Clients of the 2026-07-28 revision send
    self-contained requests anyway; older ones lose nothing doxa uses (it sends nothing
    outside the answer to a request), and a ``GET`` for an event stream is refused, 405
    (``doxa.server.streamable_checks``).
    """
    from doxa.server.app import create_server
    from doxa.server.draining import Draining, own_the_stop
    from doxa.server.exact import ExactNumbers
    from doxa.server.request_ids import RequestIds
    from doxa.server.sse_streams import SSE_PATH, SseStreams
    from doxa.server.streamable_checks import StreamableChecks

    own_the_stop()
    server = create_server(settings, state=state)
    host = settings.server.host
    security = access.security
    app: ASGIApp
    if settings.server.transport == "sse":
        sse = server.sse_app(sse_path=SSE_PATH, host=host, transport_security=security)
        app = SseStreams(sse, access, stop)
    else:
        stateless = settings.server.workers > 1
        app = server.streamable_http_app(
            host=host, transport_security=security, stateless_http=stateless
        )
        app = Draining(StreamableChecks(app, access, stateless=stateless), stop)
    streamable = settings.server.transport != "sse"
    wrapped: ASGIApp = access.wrap(RequestIds(ExactNumbers(app), messages=streamable))
    return wrapped


def _config(settings: Settings, app: ASGIApp) -> uvicorn.Config:
    import uvicorn

    from doxa.server.draining import GRACE_SECONDS
    from doxa.server.sdk_logs import quiet_client_faults

    per_request = settings.server.log_level.upper() == "DEBUG"
    if not per_request:
        # The SDK logs each stateless request's session end at INFO: a line per request.
        logging.getLogger("mcp.server.streamable_http").setLevel(logging.WARNING)
    # A client's malformed message is one line, not a traceback (``doxa.server.sdk_logs``).
    quiet_client_faults()
    return uvicorn.Config(
        app,
        host=settings.server.host,
        port=settings.server.port,
        log_level=settings.server.log_level.lower(),
        log_config=_uvicorn_logging(),
        # A line per request cost a tenth of each call's CPU at INFO; a proxy logs them too.
        access_log=per_request,
        # Calls still running at the end of the drain are answered by doxa first; then
        # whatever still runs is cancelled (``doxa.server.draining``).
        timeout_graceful_shutdown=GRACE_SECONDS,
    )


def _server(
    config: uvicorn.Config,
    stop_signals: tuple[int, ...],
    stop: Stop,
    parent: int | None = None,
) -> uvicorn.Server:
    """uvicorn's server, shutting down gracefully on each of ``stop_signals`` and then
    returning, so that the caller closes the memory and the process exits 0; with
    ``parent``, also once that process is gone (a worker whose serving process was killed).
    Its shutdown begins ``stop``, which drains the app."""
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            # uvicorn's own re-raises SIGINT or SIGTERM after its shutdown: SIGTERM then killed
            # the process (exit 143) before the memory was closed, leaving Kùzu's graph.wal
            # behind. And it leaves SIGHUP, which killed the process at once.
            with handling(stop_signals, self.handle_exit):
                yield

        async def on_tick(self, counter: int) -> bool:
            # Every second: a worker outliving its serving process would hold the port.
            if parent is not None and counter % 10 == 0 and os.getppid() != parent:
                log.warning("the serving process %d is gone: this worker stops", parent)
                self.should_exit = True
            return await super().on_tick(counter)

        async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
            stop.begin()  # before uvicorn waits for the requests the drain answers
            await super().shutdown(sockets)

    return Server(config)


@contextlib.contextmanager
def handling(signals: tuple[int, ...], handler: _Handler) -> Iterator[None]:
    """``handler`` for each of ``signals`` (main thread only), the previous ones restored after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, handler) for sig in signals}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


def _uvicorn_logging() -> dict[str, object]:
    """uvicorn's logging, every handler on stderr (its access log defaults to stdout)."""
    from uvicorn.config import LOGGING_CONFIG

    config = json.loads(json.dumps(LOGGING_CONFIG))
    for handler in config["handlers"].values():
        handler["stream"] = "ext://sys.stderr"
    return dict(config)


if __name__ == "__main__":
    raise SystemExit(worker_main())
