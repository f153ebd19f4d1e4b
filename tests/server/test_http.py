"""doxa over the network transports: ``doxa serve --transport http`` (streamable HTTP at /mcp)
and ``--transport sse`` (/sse), each a real subprocess on a free loopback port."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from calls import INITIALIZE
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Start = Callable[..., Awaitable[Any]]


def _connect(server: Any) -> Client:
    """The SDK client for a running server: a URL string is streamable HTTP; SSE needs
    ``sse_client`` as the transport."""
    if server.transport == "http":
        return Client(server.url)
    return Client(sse_client(server.url))


async def _remember(client: Client, text: str) -> str:
    result = await client.call_tool("remember", {"text": text})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return str(result.structured_content["observation_id"])


async def _recall(client: Client, query: str) -> list[str]:
    result = await client.call_tool("recall", {"query": query, "limit": 10})
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return [item["text"] for item in result.structured_content["results"]]


def _stop_cleanly(server: Any) -> None:
    """SIGTERM shuts the server down through its lifespan, and it exits 0."""
    assert server.stop() == 0
    assert "Application shutdown complete" in server.output()[1]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_what_is_remembered_over_the_network_transport_is_recalled(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    server = await start_server(transport, tmp_path / "memory")
    with anyio.fail_after(60):
        async with _connect(server) as client:
            assert client.server_info is not None
            assert client.server_info.name == "doxa"
            tools = {tool.name for tool in (await client.list_tools()).tools}
            observation_id = await _remember(client, "The bridge on Route 9 is closed.")
            result = await client.call_tool("recall", {"query": "Route 9 bridge"})

    assert len(tools) == 8
    assert result.structured_content is not None
    top = result.structured_content["results"][0]
    assert top["observation_id"] == observation_id
    assert top["text"] == "The bridge on Route 9 is closed."
    # Bound to loopback unless told otherwise.
    assert f"running on http://127.0.0.1:{server.port}" in server.output()[1]


async def test_two_http_clients_at_once_share_one_memory(
    tmp_path: Path, start_server: Start
) -> None:
    server = await start_server("http", tmp_path / "memory")
    with anyio.fail_after(60):
        async with _connect(server) as first, _connect(server) as second:
            await _remember(first, "Alpha keeps the garden keys.")
            await _remember(second, "Beta keeps the kitchen keys.")
            seen_by_first = await _recall(first, "kitchen keys")
            seen_by_second = await _recall(second, "garden keys")

    assert "Beta keeps the kitchen keys." in seen_by_first
    assert "Alpha keeps the garden keys." in seen_by_second


async def test_a_memory_written_over_http_survives_a_server_restart(
    tmp_path: Path, start_server: Start
) -> None:
    data_dir = tmp_path / "memory"
    first = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _connect(first) as client:
            await _remember(client, "The lighthouse lamp was replaced in March.")
    _stop_cleanly(first)

    second = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _connect(second) as client:
            texts = await _recall(client, "lighthouse lamp")
    assert texts[0] == "The lighthouse lamp was replaced in March."


async def test_an_http_request_with_a_foreign_host_header_is_refused(
    tmp_path: Path, start_server: Start
) -> None:
    """DNS-rebinding protection is on for a loopback server."""
    server = await start_server("http", tmp_path / "memory")

    def post(host: str) -> int:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            connection.request(
                "POST",
                "/mcp",
                body=b'{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
                headers={
                    "Host": host,
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                },
            )
            return connection.getresponse().status
        finally:
            connection.close()

    with anyio.fail_after(30):
        assert await anyio.to_thread.run_sync(post, "evil.example:80") == 421


async def test_a_session_still_opens_its_event_stream_with_get(
    tmp_path: Path, start_server: Start
) -> None:
    # One process keeps sessions, and a session's stream carries what the server sends
    # outside a request (the log, after logging/setLevel): only several workers refuse it.
    server = await start_server("http", tmp_path / "memory")
    accept = {"Accept": "application/json, text/event-stream"}
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=10) as client:
            posted = {**accept, "Content-Type": "application/json"}
            opened = await client.post(server.url, content=INITIALIZE, headers=posted)
            session = {
                "Mcp-Session-Id": opened.headers["mcp-session-id"],
                "MCP-Protocol-Version": "2025-06-18",
            }
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await client.post(server.url, json=initialized, headers={**accept, **session})
            headers = {"Accept": "text/event-stream", **session}
            async with client.stream("GET", server.url, headers=headers) as stream:
                status, kind = stream.status_code, stream.headers["content-type"]
    assert (status, kind) == (200, "text/event-stream")


async def test_a_request_whose_id_is_null_is_refused_and_a_good_one_still_answered(
    tmp_path: Path, start_server: Start
) -> None:
    """JSON-RPC requests carry a string or integer id: one with null was taken for a
    notification (202, never answered)."""
    server = await start_server("http", tmp_path / "memory")

    def post(body: bytes) -> tuple[int, dict[str, Any] | None]:
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
        try:
            connection.request(
                "POST",
                "/mcp",
                body=body,
                headers={
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    "MCP-Protocol-Version": "2025-06-18",
                },
            )
            response = connection.getresponse()
            text = response.read()
            kind = response.getheader("content-type") or ""
            return response.status, json.loads(text) if "json" in kind else None
        finally:
            connection.close()

    with anyio.fail_after(30):
        for ident in (b"null", b"1.5", b"true", b"[1]"):
            body = b'{"jsonrpc":"2.0","id":' + ident + b',"method":"tools/list"}'
            status, answer = await anyio.to_thread.run_sync(post, body)
            assert status == 400 and answer is not None, ident
            assert answer["id"] is None and answer["error"]["code"] == -32600
            assert "id must be a string or an integer" in answer["error"]["message"]
        hello = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "1"},
            },
        }
        status, _ = await anyio.to_thread.run_sync(post, json.dumps(hello).encode())
    assert status == 200


async def test_two_sse_clients_at_once_share_one_memory_that_survives_a_restart(
    tmp_path: Path, start_server: Start
) -> None:
    data_dir = tmp_path / "memory"
    server = await start_server("sse", data_dir)
    with anyio.fail_after(60):
        async with _connect(server) as first:
            await _remember(first, "Alpha keeps the garden keys.")
            async with _connect(server) as second:
                await _remember(second, "Beta keeps the kitchen keys.")
                assert "Alpha keeps the garden keys." in await _recall(second, "garden keys")
            assert "Beta keeps the kitchen keys." in await _recall(first, "kitchen keys")
    _stop_cleanly(server)

    again = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _connect(again) as client:
            texts = await _recall(client, "keys")
    assert "Alpha keeps the garden keys." in texts
    assert "Beta keeps the kitchen keys." in texts


async def test_an_http_server_writes_its_logs_to_stderr_only(
    tmp_path: Path, start_server: Start
) -> None:
    server = await start_server("http", tmp_path / "memory")
    with anyio.fail_after(60):
        async with _connect(server) as client:
            await client.list_tools()
    server.stop()
    stdout, stderr = server.output()
    assert "doxa serving on http" in stderr
    assert stdout == ""


@pytest.mark.parametrize("workers", ["1", "2"])
async def test_a_port_already_in_use_is_named_and_leaves_no_data_directory(
    tmp_path: Path, server_env: dict[str, str], workers: str
) -> None:
    # uvicorn said only "[Errno 98] error while attempting to bind on address …: address
    # already in use" and exited 3 (check's code for a directory a server holds), leaving
    # the empty data directory it had made.
    data_dir = tmp_path / "memory"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        command = [sys.executable, "-m", "doxa.server", "serve", "--transport", "http"]
        flags = ["--port", str(port), "--workers", workers, "--embedder", "hash"]
        with anyio.fail_after(60):
            done = await anyio.run_process(
                [*command, *flags, "--data-dir", str(data_dir)],
                check=False,
                env=server_env,
                stdin=subprocess.DEVNULL,
            )
    stderr = done.stderr.decode()
    assert done.returncode == 2, stderr
    assert done.stdout == b""
    assert stderr.endswith(
        f"doxa: port {port} is already in use on 127.0.0.1 (another server listens there);"
        " choose another with --port (or [server] port, DOXA_PORT)\n"
    )
    assert "Errno" not in stderr and "doxa serving on" not in stderr
    assert not data_dir.exists()


async def test_a_test_server_whose_port_is_taken_before_it_binds_is_started_on_another(
    tmp_path: Path, start_server: Start, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The port a test picks is free only until someone binds it: under pytest-xdist another
    # worker's server took it first, this test's server could not bind it and exited, and the
    # test talked to the other one (a 401 from its tokens where a 421 was expected).
    import tests.server.conftest as fixtures

    with socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen()
        taken = int(other.getsockname()[1])
        picks = iter([taken])
        pick = fixtures.free_port
        monkeypatch.setattr(fixtures, "free_port", lambda: next(picks, None) or pick())

        server = await start_server("http", tmp_path / "memory")

        assert server.port != taken
        with anyio.fail_after(60):
            async with _connect(server) as client:
                await _remember(client, "The ferry leaves at noon.")
                assert await _recall(client, "ferry") == ["The ferry leaves at noon."]
    assert "doxa serving on http" in server.output()[1]


@pytest.mark.parametrize(
    ("transport", "mode", "version"),
    [
        ("http", "legacy", "2025-11-25"),
        ("http", "auto", "2026-07-28"),
        ("stdio", "auto", "2026-07-28"),
    ],
)
async def test_an_unknown_tool_is_a_protocol_error_naming_the_tools(
    tmp_path: Path, start_server: Start, stdio_params: Any, transport: str, mode: str, version: str
) -> None:
    # It came back as a tool result (isError, "Unknown tool: nosuch"), which the protocol
    # keeps for a tool that ran and failed; an unknown prompt was already -32602.
    with anyio.fail_after(60):
        if transport == "http":
            server = await start_server("http", tmp_path / "memory")
            connected = Client(server.url, mode=mode)
        else:
            connected = Client(stdio_client(stdio_params(tmp_path / "memory")), mode=mode)
        async with connected as client:
            assert client.protocol_version == version
            with pytest.raises(MCPError) as caught:
                await client.call_tool("nosuch", {"text": "x"})
            still = await client.call_tool("recall", {"query": "anything"})
    assert caught.value.code == -32602
    assert caught.value.message == (
        "unknown tool 'nosuch'; the tools are: remember, recall, about, find_conflicts,"
        " cite_evidence, feedback, forget, prune"
    )
    assert not still.is_error


@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_both_protocol_versions_are_told_the_same_capabilities(
    tmp_path: Path, start_server: Start, stdio_params: Any, transport: str
) -> None:
    # 2026-07-28 clients were told listChanged and resources.subscribe, which nothing backs
    # (the 2025 answer said false), and a subscriptions/listen was acknowledged, then silent.
    told: dict[str, dict[str, Any]] = {}
    with anyio.fail_after(60):
        if transport == "http":
            server = await start_server("http", tmp_path / "memory")
        for mode in ("legacy", "auto"):
            if transport == "http":
                connected = Client(server.url, mode=mode)
            else:
                connected = Client(stdio_client(stdio_params(tmp_path / mode)), mode=mode)
            async with connected as client:
                capabilities = client.server_capabilities.model_dump(
                    by_alias=True, exclude_none=True, include={"tools", "prompts", "resources"}
                )
                told[client.protocol_version] = capabilities
                if mode == "auto":
                    with pytest.raises(MCPError) as caught:
                        async with client.listen(tools_list_changed=True):
                            pass
                    assert caught.value.code == -32601
    assert set(told) == {"2025-11-25", "2026-07-28"}
    expected = {
        "tools": {"listChanged": False},
        "prompts": {"listChanged": False},
        "resources": {"subscribe": False, "listChanged": False},
    }
    assert told["2025-11-25"] == expected
    assert told["2026-07-28"] == expected
