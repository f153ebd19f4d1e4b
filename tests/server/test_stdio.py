"""doxa over stdio: the real ``doxa serve`` in a subprocess, driven by the SDK client the way
Claude Desktop, Claude Code or Cursor drive it."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOLS = {
    "remember",
    "recall",
    "about",
    "find_conflicts",
    "cite_evidence",
    "feedback",
    "forget",
    "prune",
}
READ_ONLY = {"recall", "about", "find_conflicts", "cite_evidence"}
DOXA = [sys.executable, "-m", "doxa.server"]
PROMPTS = {"recall-before-answering", "remember-after-conversation", "review-conflicts"}

Params = Callable[..., StdioServerParameters]


@asynccontextmanager
async def _client(
    params: StdioServerParameters, errlog: Path, faults: list[object]
) -> AsyncIterator[Client]:
    """A connected client whose server writes stderr to ``errlog``; a stdout line that is not
    JSON-RPC reaches ``message_handler`` as an exception and lands in ``faults``."""

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):
            faults.append(message)

    with errlog.open("w", encoding="utf-8") as err:
        transport = stdio_client(params, errlog=err)
        async with Client(transport, message_handler=on_message) as client:
            yield client


async def test_a_client_sees_six_tools_with_output_schemas_and_read_only_hints(
    tmp_path: Path, stdio_params: Params
) -> None:
    faults: list[object] = []
    with anyio.fail_after(60):
        async with _client(stdio_params(tmp_path / "memory"), tmp_path / "err", faults) as client:
            assert client.server_info is not None
            assert client.server_info.name == "doxa"
            assert "recall" in (client.instructions or "")
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    assert set(tools) == TOOLS
    for name, tool in tools.items():
        assert tool.output_schema, f"{name} has no outputSchema"
        assert tool.output_schema.get("type") == "object"
        assert tool.description
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (name in READ_ONLY), name
    assert tools["forget"].annotations is not None
    assert tools["forget"].annotations.destructive_hint is True
    assert "text" in tools["remember"].input_schema["properties"]
    assert tools["recall"].input_schema["required"] == ["query"]
    assert faults == []


async def test_what_is_remembered_over_stdio_is_recalled(
    tmp_path: Path, stdio_params: Params
) -> None:
    faults: list[object] = []
    with anyio.fail_after(60):
        async with _client(stdio_params(tmp_path / "memory"), tmp_path / "err", faults) as client:
            stored = await client.call_tool(
                "remember",
                {
                    "text": "The bridge on Route 9 is closed for repairs.",
                    "topics": ["route-9"],
                    "confidence": "0.9",
                    "source": "radio report",
                },
            )
            recalled = await client.call_tool("recall", {"query": "Is the Route 9 bridge open?"})
            explained = await client.call_tool(
                "recall", {"query": "Is the Route 9 bridge open?", "explain": True}
            )

    assert not stored.is_error, stored.content
    assert stored.structured_content is not None
    observation_id = stored.structured_content["observation_id"]
    assert observation_id.startswith("obs_")
    # One memory is answered once, without the defaults (nothing superseded, no duplicate).
    assert set(stored.structured_content) == {"observation_id", "belief_id", "topics"}
    assert not recalled.is_error, recalled.content
    assert recalled.structured_content is not None
    top = recalled.structured_content["results"][0]
    assert top["observation_id"] == observation_id
    assert top["text"] == "The bridge on Route 9 is closed for repairs."
    assert top["confidence"] == "0.9"
    assert top["source"] == "radio report"
    assert not {"score", "scores", "topics", "belief_ids"} & set(top)  # only with explain
    assert explained.structured_content is not None
    [why] = [
        r for r in explained.structured_content["results"] if r["observation_id"] == observation_id
    ]
    assert why["topics"] == ["route-9"]
    assert why["belief_ids"] == [stored.structured_content["belief_id"]]
    # The text content is the structured content as compact JSON, for clients that only
    # read text.
    for result in (stored, recalled, explained):
        text = result.content[0].text
        assert json.loads(text) == result.structured_content
        assert text == json.dumps(
            result.structured_content, ensure_ascii=False, separators=(",", ":")
        )
    assert faults == []


async def test_the_three_prompts_are_listed_and_render_their_arguments(
    tmp_path: Path, stdio_params: Params
) -> None:
    faults: list[object] = []
    with anyio.fail_after(60):
        async with _client(stdio_params(tmp_path / "memory"), tmp_path / "err", faults) as client:
            listed = {p.name: p for p in (await client.list_prompts()).prompts}
            question = await client.get_prompt(
                "recall-before-answering", {"question": "Is the Route 9 bridge open?"}
            )
            transcript = await client.get_prompt(
                "remember-after-conversation",
                {"transcript": "Alice: I moved to Lyon last month.", "episode": "chat-42"},
            )
            conflicts = await client.get_prompt("review-conflicts", {"topic": "route-9"})

    assert set(listed) == PROMPTS
    required = {p.name: {a.name for a in p.arguments or [] if a.required} for p in listed.values()}
    assert required == {
        "recall-before-answering": {"question"},
        "remember-after-conversation": {"transcript"},
        "review-conflicts": set(),
    }

    def text(result: Any) -> str:
        assert len(result.messages) == 1
        assert result.messages[0].role == "user"
        return str(result.messages[0].content.text)

    assert "Is the Route 9 bridge open?" in text(question)
    assert "`recall`" in text(question)
    assert "{question}" not in text(question)
    rendered = text(transcript)
    assert "Alice: I moved to Lyon last month." in rendered
    assert '"chat-42"' in rendered
    assert "{" + "transcript}" not in rendered and "{episode}" not in rendered
    assert 'find_conflicts`(topic="route-9")' in text(conflicts)
    assert faults == []


async def test_a_bad_prompt_request_is_refused_naming_what_to_send(
    tmp_path: Path, stdio_params: Params
) -> None:
    # Each came back as JSON-RPC code 0, "Error rendering prompt review-conflicts"; and the
    # arguments were filled in one after another, so an episode naming {transcript} got the
    # transcript twice, and a quote in an agent's name broke the call the prompt shows.
    faults: list[object] = []
    refused: list[MCPError] = []
    with anyio.fail_after(60):
        async with _client(stdio_params(tmp_path / "memory"), tmp_path / "err", faults) as client:
            for name, arguments in (
                ("review-conflicts", {"nope": "1"}),
                ("recall-before-answering", {}),
                ("no-such-prompt", {}),
            ):
                with pytest.raises(MCPError) as caught:
                    await client.get_prompt(name, arguments)
                refused.append(caught.value)
            transcript = await client.get_prompt(
                "remember-after-conversation", {"transcript": "T-T-T", "episode": "ep {transcript}"}
            )
            quoted = await client.get_prompt("review-conflicts", {"agent": 'a"b'})
    assert [e.code for e in refused] == [-32602] * 3
    assert refused[0].message == (
        "prompt review-conflicts: unknown argument 'nope'; its arguments are: agent (optional),"
        " topic (optional)"
    )
    assert refused[1].message == (
        "prompt recall-before-answering: argument 'question' is required; its arguments are:"
        " question"
    )
    assert refused[2].message.startswith("unknown prompt 'no-such-prompt'; the prompts are:")
    rendered = str(transcript.messages[0].content.text)  # type: ignore[union-attr]
    assert rendered.count("T-T-T") == 1 and '"ep {transcript}"' in rendered
    assert 'find_conflicts`(agent="a\\"b")' in str(quoted.messages[0].content.text)  # type: ignore[union-attr]
    assert faults == []


async def test_stdout_carries_only_json_rpc_and_the_logs_go_to_stderr(tmp_path: Path) -> None:
    """Raw pipes, DEBUG logging: every stdout line is a JSON-RPC message, from start to exit."""
    errlog = tmp_path / "stderr.txt"
    command = [
        *DOXA,
        "serve",
        "--embedder",
        "hash",
        "--data-dir",
        str(tmp_path / "memory"),
        "--log-level",
        "DEBUG",
    ]
    lines: list[bytes] = []
    with errlog.open("wb") as err:
        process = await anyio.open_process(command, stderr=err, start_new_session=True)
    try:
        assert process.stdin is not None and process.stdout is not None
        stdout = BufferedByteReceiveStream(process.stdout)

        async def ask(request_id: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
            await send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            while True:
                line = await stdout.receive_until(b"\n", 10_000_000)
                lines.append(line)
                message = json.loads(line)
                if message.get("id") == request_id:
                    return dict(message)

        async def send(message: dict[str, Any]) -> None:
            assert process.stdin is not None
            await process.stdin.send(json.dumps(message).encode() + b"\n")

        with anyio.fail_after(60):
            hello = await ask(
                1,
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "pytest", "version": "1"},
                },
            )
            assert hello["result"]["serverInfo"]["name"] == "doxa"
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            listed = await ask(2, "tools/list", {})
            assert {t["name"] for t in listed["result"]["tools"]} == TOOLS
            stored = await ask(
                3,
                "tools/call",
                {"name": "remember", "arguments": {"text": "Alice lives in Paris."}},
            )
            assert stored["result"]["isError"] is False
            recalled = await ask(
                4,
                "tools/call",
                {"name": "recall", "arguments": {"query": "Where does Alice live?"}},
            )
            assert recalled["result"]["structuredContent"]["results"][0]["text"] == (
                "Alice lives in Paris."
            )
            await process.stdin.aclose()  # the client going away ends the server
            rest = b""
            try:
                while True:
                    rest += await stdout.receive()
            except (anyio.EndOfStream, anyio.ClosedResourceError):
                pass
            lines.extend(line for line in rest.split(b"\n") if line)
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            with anyio.move_on_after(10, shield=True):
                await process.wait()

    for line in lines:
        message = json.loads(line)
        assert message.get("jsonrpc") == "2.0", line
    logs = errlog.read_text(encoding="utf-8")
    assert "doxa serving on stdio" in logs
    assert " DEBUG " in logs


async def test_a_memory_survives_a_restart_of_the_server_on_the_same_data_dir(
    tmp_path: Path, stdio_params: Params
) -> None:
    params = stdio_params(tmp_path / "memory")
    faults: list[object] = []
    with anyio.fail_after(60):
        async with _client(params, tmp_path / "err1", faults) as first:
            stored = await first.call_tool(
                "remember",
                {
                    "text": "Alice moved to Lyon.",
                    "fact": {"subject": "Alice", "predicate": "lives in", "object": "Lyon"},
                },
            )
        assert stored.structured_content is not None
        observation_id = stored.structured_content["observation_id"]

    with anyio.fail_after(60):
        async with _client(params, tmp_path / "err2", faults) as second:
            recalled = await second.call_tool(
                "recall", {"query": "Where does Alice live?", "explain": True}
            )

    assert recalled.structured_content is not None
    top = recalled.structured_content["results"][0]
    assert top["observation_id"] == observation_id
    assert top["fact"]["object"] == "Lyon"
    assert "current" not in top  # current: the default, left out
    assert faults == []
