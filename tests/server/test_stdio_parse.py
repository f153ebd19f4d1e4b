"""What the real ``doxa serve`` does with what it cannot read, and with numbers a float cannot
carry: every bad stdio line is answered as doxa's streamable HTTP answers the same body, and
a confidence or weight arrives exactly (or is refused, naming the field) on stdio and HTTP."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from calls import INITIALIZE
from mcp.shared.message import SessionMessage
from mcp_types import CONNECTION_CLOSED, ErrorData, JSONRPCError, JSONRPCResponse

from doxa.server import stdio
from doxa.server.exact import ExactNumbers, exact_json
from doxa.server.request_ids import MESSAGE_SHAPE

pytestmark = pytest.mark.anyio

Raw = Callable[[Path], AbstractAsyncContextManager[Any]]
Start = Callable[..., Awaitable[Any]]

#: Lines that are not JSON: the SDK's JSON parser refuses each of them (-32700).
NOT_JSON = {
    "a notification with a lone surrogate": b'{"jsonrpc":"2.0","method":"x","params":"\\udc80"}',
    # U+DC80 encoded as UTF-8 would encode it, which UTF-8 forbids
    "a surrogate written raw": b'{"jsonrpc":"2.0","id":1,"method":"ping","params":"\xed\xb2\x80"}',
    "JSON nested 1,000 deep": b"[" * 1000 + b"]" * 1000,
    "garbage": b"hello, server?",
    "a truncated message": b'{"jsonrpc":"2.0","id":1,"method":"pi',
}

#: JSON that is no JSON-RPC message: refused with -32602, as over HTTP.
NOT_JSON_RPC = {
    "an object": b'{"hello":"world"}',
    "an array": b"[]",
    "a number": b"42",
    "a request without a method": b'{"jsonrpc":"2.0","id":7}',
}

HTTP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


async def _still_serving(server: Any) -> None:
    """A ping and a tool call are answered."""
    assert (await server.ask("ping"))["result"] == {}
    recalled = await server.call("recall", {"query": "anything"})
    assert recalled["isError"] is False


async def _refused(server: Any, what: str, line: bytes, code: int, message: str) -> None:
    """Send ``line``: it is answered with id null, ``code``, and a message starting so."""
    await server.send(line)
    answer = await server.receive()
    assert answer["id"] is None, what
    assert answer["error"]["code"] == code, what
    assert answer["error"]["message"].startswith(message), what


@pytest.mark.slow
async def test_every_stdio_line_that_is_not_json_gets_a_parse_error_and_serving_goes_on(
    tmp_path: Path, raw_stdio: Raw
) -> None:
    with anyio.fail_after(60):
        async with raw_stdio(tmp_path / "memory") as server:
            for what, line in NOT_JSON.items():
                await _refused(server, what, line, -32700, "Parse error: ")
                await _still_serving(server)


@pytest.mark.slow
async def test_json_that_is_not_json_rpc_is_refused_with_id_null_and_serving_goes_on(
    tmp_path: Path, raw_stdio: Raw
) -> None:
    with anyio.fail_after(60):
        async with raw_stdio(tmp_path / "memory") as server:
            for what, line in NOT_JSON_RPC.items():
                # In one line, not pydantic's whole report ("4 validation errors for union[…").
                message = f"Validation error: not a JSON-RPC message: {MESSAGE_SHAPE}; got "
                message += line.decode()
                await _refused(server, what, line, -32602, message)
            await server.send(b"")  # an empty line carries no message: nothing to answer
            await _still_serving(server)


#: Requests whose id is no id: the SDK reads them as notifications, never answered.
BAD_IDS = {
    "null": b'{"jsonrpc":"2.0","id":null,"method":"tools/list"}',
    "a float": b'{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}',
    # Floats a float cannot carry: never an id, not even as their text.
    "a float out of range": b'{"jsonrpc":"2.0","id":1e400,"method":"ping"}',
    "a float with too many digits": b'{"jsonrpc":"2.0","id":0.1234567890123456789,"method":"ping"}',
    "true": b'{"jsonrpc":"2.0","id":true,"method":"tools/list"}',
    "an array": b'{"jsonrpc":"2.0","id":[1],"method":"tools/list"}',
    "an object": b'{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
}


@pytest.mark.slow
async def test_a_request_whose_id_is_no_id_is_refused_and_serving_goes_on(
    tmp_path: Path, raw_stdio: Raw
) -> None:
    # The client waited for an answer that never came.
    with anyio.fail_after(60):
        async with raw_stdio(tmp_path / "memory") as server:
            for what, line in BAD_IDS.items():
                message = "Invalid Request: id must be a string or an integer, got "
                await _refused(server, what, line, -32600, message)
            await _still_serving(server)


#: Params the SDK refused with a bare "Invalid request parameters": (method, params, what
#: the refusal names).
BAD_PARAMS = [
    (
        "prompts/get",
        {"name": "recall-before-answering", "arguments": {"question": 5}},
        "prompts/get params.arguments.question: Input should be a valid string, got 5",
    ),
    (
        "prompts/get",
        {"name": "review-conflicts", "arguments": {"agent": None, "topic": None}},
        "params.arguments.agent: Input should be a valid string, got null (1 more)",
    ),
    ("resources/read", {"uri": 7}, "resources/read params.uri: Input should be a valid string"),
    (  # a name is echoed cut short, as a value is
        "prompts/get",
        {"name": "review-conflicts", "arguments": {"a" * 500: 1}},
        f"params.arguments.{'a' * 62}…: Input should be a valid string, got 1",
    ),
]


async def test_params_the_sdk_cannot_read_are_refused_naming_the_parameter(
    tmp_path: Path, raw_stdio: Raw
) -> None:
    with anyio.fail_after(60):
        async with raw_stdio(tmp_path / "memory") as server:
            for method, params, named in BAD_PARAMS:
                answer = await server.ask(method, params)
                assert answer["error"]["code"] == -32602, answer
                assert named in answer["error"]["message"], answer
            await _still_serving(server)


@pytest.mark.slow
async def test_stdio_answers_a_bad_message_exactly_as_http_does(
    tmp_path: Path, raw_stdio: Raw, start_server: Start
) -> None:
    http = await start_server("http", tmp_path / "http-memory")
    with anyio.fail_after(60):
        async with (
            raw_stdio(tmp_path / "memory") as server,
            httpx2.AsyncClient(timeout=30) as client,
        ):
            for what, line in {**NOT_JSON, **NOT_JSON_RPC, **BAD_IDS}.items():
                await server.send(line)
                over_stdio = await server.receive()
                response = await client.post(http.url, content=line, headers=HTTP_HEADERS)
                assert response.status_code == 400, what
                assert over_stdio == response.json(), what


#: Requests holding an unpaired surrogate: (line, what the refusal says). The SDK's parser
#: refused each whole, with id null: the client could not tell which request failed.
UNPAIRED = {
    b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"remember",'
    b'"arguments":{"text":"a\\ud800b"}}}': "tools/call params.arguments.text holds an unpaired"
    " surrogate (U+D800) at character 1: send valid Unicode text",
    b'{"jsonrpc":"2.0","id":"p","method":"ping","params":{"x":["\\udc80","\\ud800"]}}': "ping"
    " params.x[0] holds an unpaired surrogate (U+DC80) at character 0: send valid Unicode text"
    " (1 more)",
    # a key, and an emoji written as its (paired) escapes, which is valid
    b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"recall","arguments":'
    b'{"query":"\\ud83d\\ude00","\\udfff":1}}}': "tools/call params.arguments.\\udfff holds an"
    " unpaired surrogate (U+DFFF) at character 0: send valid Unicode text",
}


@pytest.mark.slow
async def test_a_request_holding_an_unpaired_surrogate_is_refused_with_its_own_id(
    tmp_path: Path, raw_stdio: Raw, start_server: Start
) -> None:
    http = await start_server("http", tmp_path / "http-memory")
    with anyio.fail_after(60):
        async with (
            raw_stdio(tmp_path / "memory") as server,
            _http_session(http.url) as session,
        ):
            for line, message in UNPAIRED.items():
                ident = json.loads(line)["id"]
                await server.send(line)
                over_stdio = await server.receive()
                over_http = await session.post(line)
                expected = {
                    "jsonrpc": "2.0",
                    "id": ident,
                    "error": {"code": -32602, "message": f"Invalid request parameters: {message}"},
                }
                assert over_stdio == expected
                assert over_http == expected
            await _still_serving(server)
            assert (await session.call("recall", '{"query":"anything"}'))["isError"] is False


class _HttpSession:
    """A raw streamable-HTTP MCP session: bodies go out byte for byte as written."""

    def __init__(self, client: httpx2.AsyncClient, url: str) -> None:
        self.client = client
        self.url = url
        self.session_id = ""
        self.next_id = 0

    async def post(self, body: bytes) -> dict[str, Any] | None:
        """POST ``body``; the JSON-RPC answer (from JSON or from the event stream), if any."""
        headers = dict(HTTP_HEADERS)
        if self.session_id:
            headers |= {"mcp-session-id": self.session_id, "mcp-protocol-version": "2025-06-18"}
        response = await self.client.post(self.url, content=body, headers=headers)
        self.session_id = response.headers.get("mcp-session-id", self.session_id)
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            for line in response.text.splitlines():
                if line.startswith("data:"):
                    message = json.loads(line[len("data:") :])
                    if "result" in message or "error" in message:
                        return dict(message)
            return None
        return dict(response.json()) if response.content else None

    async def call(self, name: str, arguments: str) -> dict[str, Any]:
        """``tools/call`` with ``arguments`` as literal JSON text; the result."""
        self.next_id += 1
        body = (
            f'{{"jsonrpc":"2.0","id":{self.next_id},"method":"tools/call",'
            f'"params":{{"name":"{name}","arguments":{arguments}}}}}'
        )
        answer = await self.post(body.encode())
        assert answer is not None and "result" in answer, answer
        return dict(answer["result"])


@asynccontextmanager
async def _http_session(url: str) -> AsyncIterator[_HttpSession]:
    async with httpx2.AsyncClient(timeout=30) as client:
        session = _HttpSession(client, url)
        hello = await session.post(INITIALIZE)
        assert hello is not None and hello["result"]["serverInfo"]["name"] == "doxa"
        await session.post(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
        yield session


#: Literals a float cannot carry: ``1e-400`` would arrive as 0, the next one rounded, and
#: ``1e400`` as infinity. Each is refused, naming the field.
INEXACT = {
    "1e-400": "has more than 18 decimal places: 1e-400; round it to 18",
    "0.1234567890123456789": (
        "has more than 18 decimal places: 0.1234567890123456789; round it to 18"
    ),
    "1.0000000000000000001": "must be between 0 and 1, got 1.0000000000000000001",
    "1e400": "must be between 0 and 1, got 1e400",
}


def _remember(text: str, confidence: str = '"1"', supports: str = "[]") -> str:
    """remember's arguments as JSON text, the numbers written as given."""
    return (
        f'{{"text":{json.dumps(text)},"confidence":{confidence},"supports":{supports},'
        '"topics":["well"]}'
    )


async def _check_numbers(call: Callable[[str, str], Awaitable[dict[str, Any]]]) -> None:
    """Inexact confidences and weights are refused and write nothing; exact ones are kept."""
    first = await call("remember", _remember("The well is dry.", "0.5"))
    assert first["isError"] is False, first
    belief = first["structuredContent"]["belief_id"]
    for literal, problem in INEXACT.items():
        refused = await call("remember", _remember("The well is full.", literal))
        assert refused["isError"] is True
        assert refused["content"][0]["text"].endswith(f"confidence {problem}"), refused
        support = f'[{{"belief_id":"{belief}","weight":{literal}}}]'
        refused = await call("remember", _remember("The well is full.", supports=support))
        assert refused["isError"] is True
        assert refused["content"][0]["text"].endswith(f"supports[0].weight {problem}"), refused
    recalled = await call("recall", '{"query":"well","limit":10}')
    assert [r["text"] for r in recalled["structuredContent"]["results"]] == ["The well is dry."]

    # 18 decimal places arrive exactly (read through a float they would be ...12345678901234568)
    # and a float that is its own literal stays what it says.
    kept = await call("remember", _remember("The well is deep.", "0.123456789012345678"))
    assert kept["isError"] is False, kept
    kept = await call("remember", _remember("The well is old.", "1e-18"))
    assert kept["isError"] is False, kept
    recalled = await call("recall", '{"query":"well","limit":10}')
    confidences = {r["text"]: r["confidence"] for r in recalled["structuredContent"]["results"]}
    assert confidences == {
        "The well is dry.": "0.5",
        "The well is deep.": "0.123456789012345678",
        "The well is old.": "0.000000000000000001",
    }


@pytest.mark.slow
async def test_over_stdio_a_number_a_float_cannot_carry_is_refused_naming_the_field(
    tmp_path: Path, raw_stdio: Raw
) -> None:
    with anyio.fail_after(60):
        async with raw_stdio(tmp_path / "memory") as server:

            async def call(name: str, arguments: str) -> dict[str, Any]:
                server.next_id += 1
                await server.send(
                    f'{{"jsonrpc":"2.0","id":{server.next_id},"method":"tools/call",'
                    f'"params":{{"name":"{name}","arguments":{arguments}}}}}'.encode()
                )
                return dict((await server.answer(server.next_id))["result"])

            await _check_numbers(call)


@pytest.mark.slow
async def test_over_http_a_number_a_float_cannot_carry_is_refused_naming_the_field(
    tmp_path: Path, start_server: Start
) -> None:
    server = await start_server("http", tmp_path / "memory")
    with anyio.fail_after(60):
        async with _http_session(server.url) as session:
            await _check_numbers(session.call)


def test_a_body_without_an_inexact_number_is_left_as_the_same_bytes() -> None:
    for body in [
        b'{"jsonrpc": "2.0",  "id": 1, "params": {"c": 0.5, "w": 1e-3, "n": 0.30000000000000004}}',
        b"[" * 1000 + b"]" * 1000,
        b"garbage 1e-400",
        b"\xef\xbb\xbf{}",
    ]:
        assert exact_json(body) is body


def test_a_number_a_float_cannot_carry_becomes_its_literal_text() -> None:
    body = b'{"c": 1e-400, "w": [0.1234567890123456789, 0.5, 1e400, 1e999999999999999999999]}'
    assert json.loads(exact_json(body)) == {
        "c": "1e-400",
        "w": ["0.1234567890123456789", 0.5, "1e400", "1e999999999999999999999"],
    }


async def _through_wrapper(
    messages: list[dict[str, Any]], method: str = "POST", max_body_bytes: int = 1000
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """What an app behind ``ExactNumbers`` sees: the scope, and every message it receives."""
    seen: list[dict[str, Any]] = []
    scopes: list[dict[str, Any]] = []
    queue = list(messages)

    async def app(scope: Any, receive: Any, send: Any) -> None:
        scopes.append(scope)
        while True:
            message = await receive()
            seen.append(message)
            if message["type"] != "http.request" or not message.get("more_body"):
                return

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def send(message: Any) -> None:
        raise AssertionError("the app sends nothing here")

    scope = {"type": "http", "method": method, "headers": [(b"content-length", b"99")]}
    await ExactNumbers(app, max_body_bytes)(scope, receive, send)
    return scopes[0], seen


async def test_the_http_wrapper_hands_on_what_it_does_not_change_message_for_message() -> None:
    chunks = [
        {"type": "http.request", "body": b'{"c": 0.5,', "more_body": True},
        {"type": "http.request", "body": b' "d": 1}', "more_body": False},
    ]
    scope, seen = await _through_wrapper(chunks)
    assert seen == chunks and all(a is b for a, b in zip(seen, chunks, strict=True))
    assert scope["headers"] == [(b"content-length", b"99")]
    inexact = [{"type": "http.request", "body": b'{"c": 1e-400}', "more_body": False}]
    for method, limit in [("GET", 1000), ("POST", 5)]:  # not a POST; larger than the limit
        scope, seen = await _through_wrapper(inexact, method, limit)
        assert seen == inexact and seen[0] is inexact[0]


async def test_a_body_its_client_gave_up_reaches_no_app() -> None:
    # No one is left to answer it; the SDK, reading it again, logged a traceback.
    queue: list[dict[str, Any]] = [
        {"type": "http.request", "body": b'{"c": 1e-400', "more_body": True},
        {"type": "http.disconnect"},
    ]
    reached: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        reached.append(scope)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    async def send(message: Any) -> None:
        raise AssertionError("nothing is answered to a client that went away")

    scope = {"type": "http", "method": "POST", "headers": [(b"content-length", b"99")]}
    await ExactNumbers(app)(scope, receive, send)
    assert reached == [] and queue == []


async def test_the_http_wrapper_rewrites_an_inexact_number_and_the_content_length() -> None:
    chunks = [
        {"type": "http.request", "body": b'{"c": 1e-', "more_body": True},
        {"type": "http.request", "body": b"400}", "more_body": False},
    ]
    scope, seen = await _through_wrapper(chunks)
    assert seen == [{"type": "http.request", "body": b'{"c":"1e-400"}', "more_body": False}]
    assert scope["headers"] == [(b"content-length", b"14")]


async def test_a_call_still_unanswered_after_the_drain_is_refused_not_left_waiting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The transport in process, on pipes, with a server that answers the ping only."""
    monkeypatch.setattr(stdio, "DRAIN_SECONDS", 0.1)
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    stop = anyio.Event()
    try:
        with anyio.fail_after(10):
            async with stdio.stdio_server(stop, in_read, out_write) as (read_stream, write_stream):
                os.write(
                    in_write,
                    # The bad line first: a line after the last request could meet the stop
                    # before it is read, and is then rightly never answered.
                    b'not json\n{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}\n'
                    b'{"jsonrpc":"2.0","id":8,"method":"ping"}\n',
                )
                async with write_stream:
                    assert (await read_stream.receive()).message.id == 7  # type: ignore[union-attr]
                    assert (await read_stream.receive()).message.id == 8  # type: ignore[union-attr]
                    await write_stream.send(
                        SessionMessage(JSONRPCResponse(jsonrpc="2.0", id=8, result={}))
                    )
                    stop.set()
                    with pytest.raises(anyio.EndOfStream):  # the drain ended the input
                        await read_stream.receive()
        written = [json.loads(line) for line in os.read(out_read, 1 << 16).splitlines()]
    finally:
        os.close(in_write)  # the reading thread sees the end of its input and ends
        for thread in threading.enumerate():
            if thread.name == "doxa-stdin":
                await anyio.to_thread.run_sync(thread.join, 10)
        for fd in (in_read, out_read, out_write):
            os.close(fd)

    by_id = {message["id"]: message for message in written}
    assert len(written) == len(by_id) == 3
    assert by_id[None]["error"]["code"] == -32700  # the line that is not JSON
    assert by_id[8]["result"] == {}
    assert by_id[7]["error"]["code"] == -32000  # refused once the server had stopped
    assert "stopped before answering" in by_id[7]["error"]["message"]
    assert written[-1] == by_id[7]


async def test_the_sdks_connection_closed_for_a_call_cut_off_says_it_may_have_taken_effect() -> (
    None
):
    """A batch of 60,000 cut off by a stop was answered "Connection closed" and then
    committed: a client that did not retry believed nothing was stored."""
    in_read, in_write = os.pipe()
    out_read, out_write = os.pipe()
    stop = anyio.Event()
    try:
        with anyio.fail_after(10):
            async with stdio.stdio_server(stop, in_read, out_write) as (read_stream, write_stream):
                os.write(in_write, b'{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{}}\n')
                async with write_stream:
                    assert (await read_stream.receive()).message.id == 7  # type: ignore[union-attr]
                    closed = ErrorData(code=CONNECTION_CLOSED, message="Connection closed")
                    await write_stream.send(
                        SessionMessage(JSONRPCError(jsonrpc="2.0", id=7, error=closed))
                    )
                    stop.set()
        written = [json.loads(line) for line in os.read(out_read, 1 << 16).splitlines()]
    finally:
        os.close(in_write)
        for thread in threading.enumerate():
            if thread.name == "doxa-stdin":
                await anyio.to_thread.run_sync(thread.join, 10)
        for fd in (in_read, out_read, out_write):
            os.close(fd)
    [refused] = written
    assert refused["id"] == 7 and refused["error"]["code"] == CONNECTION_CLOSED
    assert "it may still have taken effect" in refused["error"]["message"]
