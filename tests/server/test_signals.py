"""SIGTERM, SIGHUP and SIGINT stop the real ``doxa serve`` cleanly on every transport: calls in
flight are answered, the memory is closed (Kùzu leaves no ``graph.wal``), the exit code is 0,
and a restart on the same data directory recalls what was remembered."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.sse import sse_client

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
