"""What ``tools/list`` answers: kept in ``server/tools.json`` so a start builds no tool, and
always what the tools' code derives through the SDK."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp.client import Client
from mcp.server import MCPServer
from mcp.types import Tool as MCPTool

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.server.tool_listing import LISTING, derived_listing

pytestmark = pytest.mark.anyio


def _wire(tools: list[MCPTool]) -> str:
    """The tools as the SDK's server sends them."""
    return json.dumps([t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools])


def test_the_kept_listing_is_what_the_tools_code_derives() -> None:
    # Change a tool's description, arguments, result or hints and this fails: rewrite the
    # listing with `python -m doxa.server.tool_listing`.
    kept = json.loads(LISTING.read_text(encoding="utf-8"))
    assert kept == derived_listing(), "run `python -m doxa.server.tool_listing` to rewrite it"


async def test_a_client_is_sent_what_the_sdk_lists_from_the_built_tools(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = create_server(settings)
    built = create_server(settings)
    # The SDK's own listing, from the tools built from their functions.
    monkeypatch.setattr(built, "list_tools", functools.partial(MCPServer.list_tools, built))
    assert _wire(await kept.list_tools()) == _wire(await built.list_tools())
    async with Client(kept) as one, Client(built) as other:
        sent, derived = await one.list_tools(), await other.list_tools()
    assert _wire(sent.tools) == _wire(derived.tools)
    assert [tool.name for tool in sent.tools] == [
        "remember",
        "recall",
        "about",
        "find_conflicts",
        "cite_evidence",
        "feedback",
        "forget",
        "prune",
    ]


def test_listing_the_tools_builds_and_imports_none_of_them(tmp_path: Path) -> None:
    # Building the eight tools' argument models and schemas took about 40 ms of each start,
    # importing their modules about 15 ms more; a tool is built at its first call. The
    # /view route's Host and Origin checks (doxa.server.access) wait for its first request.
    probe = f"""
import sys, anyio
from mcp.server.mcpserver.tools import Tool
built = []
original = Tool.from_function.__func__
Tool.from_function = classmethod(lambda cls, *a, **k: built.append(1) or original(cls, *a, **k))
from doxa.server.app import create_server
from doxa.server.settings import load_settings
server = create_server(load_settings(None, {{}}, {{("store", "data_dir"): {str(tmp_path)!r}}}))
tools = anyio.run(server.list_tools)
# about serves the entity resources too, and find_conflicts its conflicts
served = {{"doxa.tools.about", "doxa.tools.find_conflicts"}}
tool_modules = {{"doxa.tools." + t.name for t in tools}} - served
print(len(tools), len(built), sorted((tool_modules | {{"doxa.server.access"}}) & set(sys.modules)))
"""
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.split() == ["8", "0", "[]"]


async def test_a_tool_is_built_at_its_first_call(settings: Settings) -> None:
    # Built as the SDK builds it, then closed and verbatim (doxa.server.app._tool).
    server = create_server(settings)
    async with Client(server) as client:
        result = await client.call_tool("recall", {"query": "anything"})
        refused = await client.call_tool("recall", {"query": "x", "limti": 3})
    assert result.is_error is False and result.structured_content is not None
    assert refused.is_error is True
    assert "limti" in str(refused.content[0]) and "the arguments are" in str(refused.content[0])


def _entry(listing: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return next(tool for tool in listing if tool["name"] == name)


def test_the_listing_is_written_as_the_code_derives_it(tmp_path: Path) -> None:
    # The command that rewrites it writes exactly what the test above compares.
    written = tmp_path / "tools.json"
    subprocess.run(
        [sys.executable, "-m", "doxa.server.tool_listing", "--out", str(written)],
        check=True,
        timeout=60,
    )
    listing = json.loads(written.read_text(encoding="utf-8"))
    assert listing == derived_listing()
    assert _entry(listing, "recall")["annotations"]["readOnlyHint"] is True


def test_a_tool_that_failed_to_build_is_built_again_at_its_next_use(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    from doxa.server import app

    tools = app.CheckedTools()
    real = app._tool

    def failing(*_: object) -> None:
        raise RuntimeError("no memory for the argument model")

    monkeypatch.setattr(app, "_tool", failing)
    with pytest.raises(RuntimeError):
        tools.get_tool("recall")
    monkeypatch.setattr(app, "_tool", real)
    # Not taken for an unknown tool from then on.
    built = tools.get_tool("recall")
    assert built is not None and built.name == "recall"
