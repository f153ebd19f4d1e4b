"""SIGTERM, SIGHUP and SIGINT stop the real ``doxa serve`` cleanly on every transport: calls in
flight are answered (those still running at the end of the drain time refused, saying they may
still have taken effect), the memory is closed (Kùzu leaves no ``graph.wal``), the exit code is
0, and a restart on the same data directory recalls what was remembered."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client

from doxa.server.draining import GRACE_SECONDS
from doxa.server.stdio import DRAIN_SECONDS
from doxa.server.tokens import TokenStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Raw = Callable[[Path], AbstractAsyncContextManager[Any]]
Start = Callable[..., Awaitable[Any]]

SIGNALS = [
    pytest.param(signal.SIGTERM, id="SIGTERM"),
    pytest.param(signal.SIGHUP, id="SIGHUP"),
    pytest.param(signal.SIGINT, id="SIGINT"),
]
#: SSE stops through the same code as HTTP, so Ctrl-C is tried on HTTP only.
NETWORK = [
    pytest.param("http", signal.SIGTERM, id="http-SIGTERM"),
    pytest.param("http", signal.SIGHUP, id="http-SIGHUP"),
    pytest.param("http", signal.SIGINT, id="http-SIGINT"),
    pytest.param("sse", signal.SIGTERM, id="sse-SIGTERM"),
    pytest.param("sse", signal.SIGHUP, id="sse-SIGHUP"),
]

TEXT = "The lighthouse keeper retired in 1998."


async def _recalled_after_a_restart(raw_stdio: Raw, data_dir: Path) -> None:
    """The memory, opened again by a new server, recalls ``TEXT``."""
    assert not (data_dir / "graph.wal").exists(), "Kùzu was not closed cleanly"
    with anyio.fail_after(60):
        async with raw_stdio(data_dir) as again:
            recalled = await again.call("recall", {"query": "lighthouse keeper"})
    assert recalled["structuredContent"]["results"][0]["text"] == TEXT


@pytest.mark.parametrize("signum", SIGNALS)
async def test_a_stdio_server_answers_the_call_in_flight_and_exits_0_on(
    tmp_path: Path, raw_stdio: Raw, signum: signal.Signals
) -> None:
    data_dir = tmp_path / "memory"
    with anyio.fail_after(60):
        async with raw_stdio(data_dir) as server:
            # Once the memory is open a remember takes milliseconds, well within the time a
            # stop gives calls in flight. The ping's answer shows the remember was read first.
            assert (await server.call("recall", {"query": "anything"}))["isError"] is False
            in_flight = await server.request(
                "tools/call", {"name": "remember", "arguments": {"text": TEXT}}
            )
            assert (await server.ask("ping"))["result"] == {}
            server.process.send_signal(signum)
            answer = await server.answer(in_flight)
            assert answer["result"]["isError"] is False, answer
            assert await server.process.wait() == 0

    await _recalled_after_a_restart(raw_stdio, data_dir)


@pytest.mark.parametrize(("transport", "signum"), NETWORK)
async def test_a_network_server_with_a_client_connected_exits_0_on(
    tmp_path: Path, start_server: Start, raw_stdio: Raw, transport: str, signum: signal.Signals
) -> None:
    data_dir = tmp_path / "memory"
    server = await start_server(transport, data_dir)
    connection = server.url if transport == "http" else sse_client(server.url)

    def exit_code() -> int:
        try:
            return int(server.process.wait(timeout=30))
        except subprocess.TimeoutExpired:
            pytest.fail(f"doxa serve still runs 30 s after {signum.name}: {server.output()[1]}")

    with anyio.fail_after(60):
        async with Client(connection) as client:
            stored = await client.call_tool("remember", {"text": TEXT})
            assert not stored.is_error, stored.content
            if transport == "sse":  # headers only, and no error logged for it either
                async with httpx2.AsyncClient(timeout=30) as http:
                    assert (await http.head(server.url)).status_code == 200
            # Stopped while the session is open: its streams must not hold the server up.
            server.process.send_signal(signum)
            code = await anyio.to_thread.run_sync(exit_code)

    stderr = server.output()[1]
    assert code == 0, stderr
    assert "Application shutdown complete" in stderr
    # No traceback, SSE included: its open stream once ended in "Exception in ASGI
    # application" (the SDK answered a stream the stop had closed a second time).
    assert "Traceback" not in stderr, stderr
    assert "Exception in ASGI application" not in stderr, stderr
    await _recalled_after_a_restart(raw_stdio, data_dir)


#: A JSON-RPC session's first messages (the 2025 handshake, which SSE sessions need).
VERSION = "2025-06-18"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": VERSION,
        "capabilities": {},
        "clientInfo": {"name": "pytest", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
ACCEPT = {"Accept": "application/json, text/event-stream"}


def _call(request_id: int, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def _messages(lines: AsyncIterator[str]) -> AsyncIterator[dict[str, Any]]:
    """Each JSON-RPC message of an event stream (other events skipped)."""
    async for line in lines:
        if line.startswith("data: {"):
            yield json.loads(line[len("data: ") :])


async def _answer(lines: AsyncIterator[str], request_id: int) -> dict[str, Any] | None:
    """The answer to ``request_id`` on an event stream, or None: the stream ended first."""
    async for message in _messages(lines):
        if message.get("id") == request_id and ("result" in message or "error" in message):
            return message
    return None


async def _answer_at_a_stop(
    server: Any, request: dict[str, Any], warm_up: dict[str, Any] | None = None
) -> tuple[dict[str, Any] | None, float]:
    """Send ``request`` (after ``warm_up``, answered first), SIGTERM the server while it runs,
    and return the answer it gets (None: none came), with the seconds from the signal to it."""
    async with httpx2.AsyncClient(timeout=30) as http:
        if server.transport == "http":
            hello = await http.post(server.url, json=INITIALIZE, headers=ACCEPT)
            headers = {
                **ACCEPT,
                "Mcp-Session-Id": hello.headers["mcp-session-id"],
                "MCP-Protocol-Version": VERSION,
            }
            await http.post(server.url, json=INITIALIZED, headers=headers)
            if warm_up is not None:
                warm = await http.post(server.url, json=warm_up, headers=headers)
                assert "result" in warm.text, warm.text
            # Its headers come back as the call starts: the signal finds it running.
            async with http.stream("POST", server.url, json=request, headers=headers) as running:
                server.process.send_signal(signal.SIGTERM)
                signalled = time.monotonic()
                answer = await _answer(running.aiter_lines(), request["id"])
                return answer, time.monotonic() - signalled
        async with http.stream("GET", server.url) as stream:
            lines = stream.aiter_lines()
            async for line in lines:
                if line.startswith("data: /"):
                    endpoint = f"http://127.0.0.1:{server.port}{line[len('data: ') :]}"
                    break
            for message in (INITIALIZE, INITIALIZED, warm_up, request):
                if message is None:
                    continue
                assert (await http.post(endpoint, json=message)).status_code == 202
                if message is not request and "id" in message:
                    assert await _answer(lines, message["id"]) is not None
            server.process.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            answer = await _answer(lines, request["id"])
            return answer, time.monotonic() - signalled


def _exits_cleanly(server: Any) -> str:
    """The server's log once it has exited 0, with no traceback or error logged."""
    try:
        code = server.process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(f"doxa serve still runs 30 s after SIGTERM: {server.output()[1]}")
    stderr = str(server.output()[1])
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert "Exception in ASGI application" not in stderr, stderr
    assert "ERROR" not in stderr, stderr
    assert "gave up" not in stderr, stderr
    return stderr


@contextmanager
def _held(data_dir: Path) -> Iterator[None]:
    """``data_dir`` held as a ``doxa import`` holds it: its owner lock taken, and no socket
    to relay to, so that a server's first call waits for the memory (up to 30 s)."""
    data_dir.mkdir(parents=True)
    fd = os.open(data_dir / "owner.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_call_in_flight_at_a_stop_gets_its_own_answer_over(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    # sse-starlette ended every event stream at the signal: the call's, over HTTP (an empty
    # stream, no answer), and the session's, over SSE, which carries its answers.
    server = await start_server(transport, tmp_path / "memory")
    batch = [{"text": f"The lighthouse log, entry {i}: " + "calm " * 30} for i in range(1500)]
    with anyio.fail_after(60):
        answer, _ = await _answer_at_a_stop(
            server,
            _call(3, "remember", {"memories": batch}),
            warm_up=_call(2, "recall", {"query": "lighthouse"}),
        )
    assert answer is not None, server.output()[1]
    assert "result" in answer, answer
    assert not answer["result"]["isError"], answer
    assert len(answer["result"]["structuredContent"]["remembered"]) == len(batch)
    _exits_cleanly(server)


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_call_still_running_when_a_stop_has_drained_is_refused_over(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    # The memory is held elsewhere, so the call waits for it past the drain time.
    data_dir = tmp_path / "memory"
    with _held(data_dir):
        server = await start_server(transport, data_dir)
        with anyio.fail_after(60):
            answer, after = await _answer_at_a_stop(server, _call(3, "recall", {"query": "x"}))
    assert answer is not None, server.output()[1]
    assert answer["error"]["code"] == -32000, answer
    assert "may still have taken effect" in answer["error"]["message"], answer
    assert DRAIN_SECONDS - 0.5 < after < DRAIN_SECONDS + 3
    _exits_cleanly(server)


async def _running_call(
    server: Any, http: httpx2.AsyncClient, lines: AsyncIterator[str], request: dict[str, Any]
) -> None:
    """Open an SSE session on the stream read from ``lines``, and send it ``request`` and a
    ping: once the ping is answered the session has read ``request``, which runs on."""
    async for line in lines:
        if line.startswith("data: /"):
            endpoint = f"http://127.0.0.1:{server.port}{line[len('data: ') :]}"
            break
    ping = {"jsonrpc": "2.0", "id": request["id"] + 1, "method": "ping"}
    for message in (INITIALIZE, INITIALIZED, request, ping):
        assert (await http.post(endpoint, json=message)).status_code == 202
    assert await _answer(lines, ping["id"]) is not None


async def _stopped_within_the_grace(server: Any) -> None:
    """SIGTERM ``server``, and see uvicorn done with its requests within its graceful
    timeout (it cancels those still running then, with a traceback), before the app's
    shutdown, which waits for the calls still running."""
    server.process.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    while "Waiting for application shutdown" not in server.output()[1]:
        await anyio.sleep(0.05)
    assert time.monotonic() - signalled < GRACE_SECONDS, server.output()[1]


async def test_an_sse_stream_whose_client_left_with_a_call_running_ends_quietly_at_a_stop(
    tmp_path: Path, start_server: Start
) -> None:
    # The stream's request waited for its session to end, and the session for its calls: a
    # call running past uvicorn's graceful timeout (here, waiting for a memory held
    # elsewhere; once, a remember on a loaded machine) had the request cancelled, with
    # "Exception in ASGI application" and a traceback.
    data_dir = tmp_path / "memory"
    with _held(data_dir):
        server = await start_server("sse", data_dir)
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                http.stream("GET", server.url) as stream,
            ):
                request = _call(3, "recall", {"query": "x"})
                await _running_call(server, http, stream.aiter_lines(), request)
            await _stopped_within_the_grace(server)
    _exits_cleanly(server)  # the call then gets the memory, and ends


async def test_an_sse_stream_closed_for_its_token_with_a_call_running_ends_at_once(
    tmp_path: Path, start_server: Start
) -> None:
    # Closed for its token (here, opened without one, and a first token created since), the
    # stream stayed open to its client until its session's calls had ended, and its request
    # past uvicorn's graceful timeout at a stop.
    data_dir = tmp_path / "memory"
    with _held(data_dir):
        server = await start_server("sse", data_dir)
        with anyio.fail_after(60):
            async with (
                httpx2.AsyncClient(timeout=30) as http,
                http.stream("GET", server.url) as stream,
            ):
                lines = stream.aiter_lines()
                request = _call(3, "recall", {"query": "x"})
                await _running_call(server, http, lines, request)
                TokenStore(data_dir).create("scout")
                with anyio.fail_after(10):  # the check runs every second
                    assert await _answer(lines, request["id"]) is None
            await _stopped_within_the_grace(server)
    _exits_cleanly(server)
