"""What a hostile or sloppy client gets from the real ``doxa serve --transport http|sse``: a
clear HTTP or JSON-RPC error for each request, and no traceback in the server's log (anyone
who can reach the port could otherwise fill it)."""

from __future__ import annotations

import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from calls import INITIALIZE

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Start = Callable[..., Awaitable[Any]]

#: What the streamable HTTP transport requires a POST to accept.
ACCEPT = "application/json, text/event-stream"


def _quiet_log(server: Any) -> str:
    """The server's stderr once it has stopped (every line written), checked to hold no
    traceback."""
    assert server.stop() == 0
    stderr = str(server.output()[1])
    assert "Traceback" not in stderr, stderr
    assert "Exception in ASGI application" not in stderr, stderr
    return stderr


async def test_an_sse_stream_refused_for_its_host_or_origin_logs_no_traceback(
    tmp_path: Path, start_server: Start
) -> None:
    server = await start_server("sse", tmp_path / "memory")
    refused = [
        ("GET", {"Host": "evil.example"}, 421, b"Invalid Host header"),
        ("GET", {"Host": "evil.example:80"}, 421, b"Invalid Host header"),
        ("GET", {"Origin": "http://evil.example"}, 403, b"Invalid Origin header"),
        ("HEAD", {"Origin": "http://evil.example"}, 403, b""),
    ]
    with anyio.fail_after(60):
        # One connection for all: uvicorn closed it after each raised exception, so the
        # next request on it failed too.
        async with httpx2.AsyncClient(timeout=30) as http:
            for method, headers, status, body in refused:
                answer = await http.request(method, server.url, headers=headers)
                assert (answer.status_code, answer.content) == (status, body), headers
    stderr = _quiet_log(server)
    assert stderr.count("Invalid Host header: evil.example") == 2
    assert stderr.count("Invalid Origin header: http://evil.example") == 2


def _hang_up_mid_body(port: int, target: str, headers: dict[str, str]) -> None:
    """POST ``target`` announcing ``INITIALIZE``'s length, send a part of it, and hang up."""
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    request = (
        f"POST {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{head}"
        f"Content-Length: {len(INITIALIZE)}\r\n\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
        connection.sendall(request + INITIALIZE[:20])
        time.sleep(0.2)  # the server is waiting for the rest when the client goes


@asynccontextmanager
async def _sse_session(http: httpx2.AsyncClient, url: str) -> AsyncIterator[str]:
    """An SSE stream opened on ``http``, kept open inside: where its session's messages are
    POSTed."""
    async with http.stream("GET", url) as stream:
        async for line in stream.aiter_lines():
            if line.startswith("data: /messages/"):
                yield line.removeprefix("data: ")
                return
    raise AssertionError("the SSE stream named no endpoint")


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_client_hanging_up_mid_body_logs_no_traceback(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    # The SDK read the body again and logged the ClientDisconnect with a traceback.
    server = await start_server(transport, tmp_path / "memory")
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    with anyio.fail_after(60):
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=30))
            target = urlsplit(server.url).path
            if transport == "sse":  # a session's POSTs: its stream stays open meanwhile
                target = await stack.enter_async_context(_sse_session(http, server.url))
            for _ in range(3):
                await anyio.to_thread.run_sync(_hang_up_mid_body, server.port, target, headers)
            # Whole requests are still answered.
            url = f"http://127.0.0.1:{server.port}{target}"
            answer = await http.post(url, content=INITIALIZE, headers=headers)
            assert answer.status_code == (200 if transport == "http" else 202)
    _quiet_log(server)


#: Bodies no JSON-RPC message is read from, and the first error the log names for each.
NOT_JSON_RPC = [
    (b"{not json", "Invalid JSON: key must be a string at line 1 column 2"),
    (b"\xff\xfe not UTF-8", "Invalid JSON: expected value at line 1 column 1"),
    (b"", "Invalid JSON: EOF while parsing a value at line 1 column 0"),
    (b"42", "JSONRPCRequest: Input should be an object (3 more)"),
    (b"[" * 10_000, "Invalid JSON: recursion limit exceeded"),
]


async def test_a_message_to_an_sse_session_that_is_no_json_rpc_is_logged_in_one_line(
    tmp_path: Path, start_server: Start
) -> None:
    # The SDK logged each with an ERROR and the whole pydantic report as a traceback.
    server = await start_server("sse", tmp_path / "memory")
    headers = {"Content-Type": "application/json"}
    with anyio.fail_after(60):
        async with (
            httpx2.AsyncClient(timeout=30) as http,
            _sse_session(http, server.url) as target,
        ):
            url = f"http://127.0.0.1:{server.port}{target}"
            for body, _ in NOT_JSON_RPC:
                answer = await http.post(url, content=body, headers=headers)
                assert (answer.status_code, answer.text) == (400, "Could not parse message")
            answer = await http.post(url, content=INITIALIZE, headers=headers)
            assert answer.status_code == 202
    stderr = _quiet_log(server)
    lines = [line for line in stderr.splitlines() if "is no JSON-RPC message" in line]
    assert len(lines) == len(NOT_JSON_RPC), stderr
    for line, (_, error) in zip(lines, NOT_JSON_RPC, strict=True):
        assert " WARNING mcp.server.sse: " in line and error in line, line
    assert "ERROR" not in stderr, stderr


async def test_a_session_id_cannot_write_lines_of_its_own_into_the_log(
    tmp_path: Path, start_server: Start
) -> None:
    # The SDK logged the decoded session id whole: %0A began a line the client wrote.
    server = await start_server("sse", tmp_path / "memory")
    forged = "2026-01-01 00:00:00,000 ERROR doxa: forged"
    refused = [
        ("x%0A" + forged.replace(" ", "%20"), 400, "Invalid session ID"),
        ("y" * 10_000, 400, "Invalid session ID"),
        ("%E2%80%A8%1B[31mred", 400, "Invalid session ID"),
    ]
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            for session_id, status, text in refused:
                answer = await http.post(
                    f"http://127.0.0.1:{server.port}/messages/?session_id={session_id}",
                    content=INITIALIZE,
                    headers={"Content-Type": "application/json"},
                )
                assert (answer.status_code, answer.text) == (status, text)
    lines = _quiet_log(server).splitlines()
    assert not any(line.startswith("2026-01-01") for line in lines), lines
    invalid = [line for line in lines if "Received invalid session ID" in line]
    assert len(invalid) == 3, lines
    assert invalid[0].endswith("Received invalid session ID: x\\n" + forged)
    assert invalid[1].endswith("… (9729 more characters)") and len(invalid[1]) < 400
    assert invalid[2].endswith("Received invalid session ID: \\u2028\\x1b[31mred")


def _post_as_the_stream_closes(port: int) -> list[int]:
    """Open an SSE session on a raw socket, send a call, close the stream at once, and POST
    a ping after it on the same connection: the statuses of the call and the pings."""
    headers = {"Content-Type": "application/json"}
    call = {"name": "remember", "arguments": {"text": "A note sent as the stream closed."}}
    with socket.create_connection(("127.0.0.1", port), timeout=10) as stream:
        stream.sendall(f"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        seen = b""
        while b"\r\n" not in seen.partition(b"data: /messages/")[2]:
            seen += stream.recv(4096)
        target = seen.partition(b"data: ")[2].partition(b"\r\n")[0].decode()
        url = f"http://127.0.0.1:{port}{target}"
        with httpx2.Client(timeout=10) as http:
            assert http.post(url, content=INITIALIZE, headers=headers).status_code == 202
            initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
            assert http.post(url, content=initialized, headers=headers).status_code == 202
            message = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call}
            statuses = [http.post(url, json=message, headers=headers).status_code]
            stream.close()
            ping = b'{"jsonrpc":"2.0","id":3,"method":"ping"}'
            for _ in range(5):
                statuses.append(http.post(url, content=ping, headers=headers).status_code)
    return statuses


async def test_a_message_for_an_sse_stream_closing_meanwhile_logs_no_traceback(
    tmp_path: Path, start_server: Start
) -> None:
    # Answered 202, the message met the session's closed stream: ClosedResourceError went
    # through uvicorn with a traceback, and the client's connection was cut.
    server = await start_server("sse", tmp_path / "memory")
    with anyio.fail_after(60):
        for _ in range(3):
            statuses = await anyio.to_thread.run_sync(_post_as_the_stream_closes, server.port)
            assert statuses[0] == 202 and set(statuses[1:]) <= {202, 404}, statuses
    _quiet_log(server)


#: A 2026-07-28 request: self-contained, its envelope in ``_meta`` (no session).
MODERN_LIST = {
    "jsonrpc": "2.0",
    "id": 5,
    "method": "tools/list",
    "params": {
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
    },
}
MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}


@pytest.mark.parametrize("accept", ["application/json", "text/event-stream", ""])
async def test_a_request_accepting_too_little_is_told_what_accept_must_hold(
    tmp_path: Path, start_server: Start, accept: str
) -> None:
    # A 2026-07-28 request got an empty 406 with no content type; a 2025 one was told why.
    server = await start_server("http", tmp_path / "memory")
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            answers = [
                await http.post(
                    server.url, json=MODERN_LIST, headers={**MODERN_HEADERS, "Accept": accept}
                ),
                await http.post(
                    server.url,
                    content=INITIALIZE,
                    headers={"Content-Type": "application/json", "Accept": accept},
                ),
            ]
            # Accepting both, the same request is answered.
            served = await http.post(
                server.url, json=MODERN_LIST, headers={**MODERN_HEADERS, "Accept": ACCEPT}
            )
    for answer in answers:
        assert answer.status_code == 406
        assert answer.headers["content-type"] == "application/json"
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Not Acceptable: Client must accept both application/json and"
                " text/event-stream",
            },
        }
    assert served.status_code == 200 and '"remember"' in served.text
    _quiet_log(server)


@pytest.mark.parametrize("version", ["1999-01-01", "garbage", "2025-6-18"])
async def test_a_protocol_version_header_naming_no_revision_served_is_refused_for_it(
    tmp_path: Path, start_server: Start, version: str
) -> None:
    # Inside a 2025 session it was refused for lacking a 2026 envelope: -32602 "params._meta
    # must be an object carrying …", not a word of the header.
    server = await start_server("http", tmp_path / "memory")
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    listing = {"jsonrpc": "2.0", "id": "list-3", "method": "tools/list"}
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            opened = await http.post(server.url, content=INITIALIZE, headers=headers)
            session = {**headers, "Mcp-Session-Id": opened.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(server.url, json=initialized, headers=session)
            refused = await http.post(
                server.url, json=listing, headers={**session, "MCP-Protocol-Version": version}
            )
            served = await http.post(
                server.url, json=listing, headers={**session, "MCP-Protocol-Version": "2025-06-18"}
            )
    assert refused.status_code == 400
    assert refused.json() == {
        "jsonrpc": "2.0",
        "id": "list-3",
        "error": {
            "code": -32022,
            "message": f"Unsupported protocol version: the MCP-Protocol-Version header says"
            f' "{version}"; this server supports 2024-11-05, 2025-03-26, 2025-06-18,'
            " 2025-11-25 (after initialize) and 2026-07-28",
            "data": {
                "supported": ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"],
                "requested": version,
            },
        },
    }
    assert served.status_code == 200 and '"remember"' in served.text
    _quiet_log(server)


#: What the refusal of JSON that is no JSON-RPC message says a message must be.
SHAPE = (
    'Validation error: not a JSON-RPC message: a request is one object with "jsonrpc": "2.0",'
    ' a "method" (a string), an "id" (a string or an integer; none in a notification) and, if'
    ' any, "params" (an object); got '
)


async def test_json_that_is_no_json_rpc_message_is_refused_in_one_line(
    tmp_path: Path, start_server: Start
) -> None:
    # The SDK answered pydantic's whole report: "11 validation errors for union[…]", some
    # forty lines, each failure of each kind of message with a link to pydantic's site.
    server = await start_server("http", tmp_path / "memory")
    refused = {
        b"[]": "[]",
        b"{}": "{}",
        b"42": "42",
        b'{"jsonrpc":"2.0","id":7}': '{"jsonrpc":"2.0","id":7}',
        b'{"jsonrpc": "2.0",\n "id": 1, "method": "ping", "params": [1, 2, 3, 4, 5, 6, 7, 8]}': (
            '{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1,…'
        ),
        '["é"]'.encode(): '["é"]',
    }
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30) as http:
            answers = {}
            for body in refused:
                for version in (None, "2025-06-18"):
                    named = {} if version is None else {"MCP-Protocol-Version": version}
                    answer = await http.post(server.url, content=body, headers={**headers, **named})
                    answers[body, version] = answer
            # A request naming 2026-07-28 is answered by that revision's own rule, in one line.
            modern = await http.post(
                server.url, content=b"[]", headers={**headers, **MODERN_HEADERS}
            )
            served = await http.post(
                server.url, json=MODERN_LIST, headers={**headers, **MODERN_HEADERS}
            )
    for (body, version), answer in answers.items():
        assert answer.status_code == 400, (body, version)
        assert answer.json() == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32602, "message": SHAPE + refused[body]},
        }, (body, version)
    assert modern.status_code == 400
    assert modern.json()["error"] == {
        "code": -32600,
        "message": "Body must be a single JSON-RPC request or notification object",
    }
    assert served.status_code == 200
    _quiet_log(server)


def _open_unread_stream(port: int) -> tuple[socket.socket, str]:
    """An SSE stream on a raw socket, read as far as its endpoint and no further: the
    session's URL to POST to."""
    stream = socket.create_connection(("127.0.0.1", port), timeout=10)
    stream.sendall(f"GET /sse HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
    seen = b""
    while b"\r\n" not in seen.partition(b"data: /messages/")[2]:
        seen += stream.recv(1024)
    target = seen.partition(b"data: ")[2].partition(b"\r\n")[0].decode()
    return stream, f"http://127.0.0.1:{port}{target}"


async def test_an_sse_client_that_does_not_read_its_stream_is_refused_more_calls(
    tmp_path: Path, start_server: Start
) -> None:
    # Every call was accepted, 202, and its answer kept in memory for a client that never
    # read it: the server grew by megabytes a second, and kept them once it had gone.
    from doxa.server.sse_streams import MAX_UNANSWERED

    server = await start_server("sse", tmp_path / "memory")
    headers = {"Content-Type": "application/json"}
    initialized = b'{"jsonrpc":"2.0","method":"notifications/initialized"}'
    stream, url = await anyio.to_thread.run_sync(_open_unread_stream, server.port)
    accepted: list[int] = []
    refused: list[httpx2.Response] = []
    limits = httpx2.Limits(max_connections=WAVE)
    with anyio.fail_after(60):
        async with httpx2.AsyncClient(timeout=30, limits=limits) as http:

            async def call(ident: int) -> None:
                # tools/list: an answer of some 20 KB, for a client that does not read it.
                message = {"jsonrpc": "2.0", "id": ident, "method": "tools/list"}
                answer = await http.post(url, json=message, headers=headers)
                if answer.status_code == 202:
                    accepted.append(ident)
                else:
                    refused.append(answer)

            assert (await http.post(url, content=INITIALIZE, headers=headers)).status_code == 202
            assert (await http.post(url, content=initialized, headers=headers)).status_code == 202
            # In waves (each POST waits some 45 ms): 400 calls, for a client that reads none.
            for wave in range(2, 402, WAVE):
                async with anyio.create_task_group() as calls:
                    for ident in range(wave, wave + WAVE):
                        calls.start_soon(call, ident)
            # The bound, and the answers the connection's buffers took before the stream
            # stalled (the kernel's grow as they fill, up to 4 MiB).
            assert MAX_UNANSWERED <= len(accepted) < MAX_UNANSWERED + 300, len(accepted)
            for answer in refused:
                assert answer.status_code == 429
                assert answer.headers["retry-after"] == "1"
                error = answer.json()
                assert error["id"] not in accepted
                assert error["error"]["code"] == -32000
                assert "read the stream" in error["error"]["message"], error
            # Its client gone, the session goes, with every answer it held.
            stream.close()
            for _ in range(100):
                gone = await http.post(url, content=initialized, headers=headers)
                if gone.status_code == 404:
                    break
                await anyio.sleep(0.1)
            assert gone.status_code == 404, "the session outlived its client"
            # Others are served as before.
            async with _sse_session(http, server.url) as target:
                endpoint = f"http://127.0.0.1:{server.port}{target}"
                hello = await http.post(endpoint, content=INITIALIZE, headers=headers)
                assert hello.status_code == 202
    stderr = _quiet_log(server)
    assert stderr.count("does not read its stream") == 1, stderr


#: How many calls the test above sends at once.
WAVE = 16
