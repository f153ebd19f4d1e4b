"""Calling doxa's tools through an MCP client in tests: the result of a call that must
succeed, or the message of one that must fail."""

from __future__ import annotations

from typing import Any

from mcp.client import Client


async def ok(client: Client, tool: str, **args: Any) -> dict[str, Any]:
    result = await client.call_tool(tool, args)
    assert not result.is_error, result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def error(client: Client, tool: str, **args: Any) -> str:
    result = await client.call_tool(tool, args)
    assert result.is_error is True
    text = result.content[0].text
    assert isinstance(text, str)
    return text
