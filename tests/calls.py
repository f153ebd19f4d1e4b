"""Calling doxa's tools through an MCP client in tests: the result of a call that must
succeed, the message of one that must fail, the seed's bridge example, and the raw
``initialize`` request tests of the wire send, and a year that is always ahead."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from mcp.client import Client

#: A year that is always ahead, for a fact that begins later whatever day the tests run: one
#: dated 2030 would hold from then on, and no longer wait behind the fact it replaces.
LATER = datetime.now(UTC).year + 5

#: An MCP ``initialize`` request, the one a new client sends first.
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "pytest", "version": "1"},
        },
    }
).encode()


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


async def seed_bridge(client: Client) -> dict[str, str]:
    """The seed's example: scout's belief, its evidence, and driver's contradiction."""
    closed = await ok(
        client,
        "remember",
        text="The bridge on Route 9 is closed for repairs.",
        topics=["route-9", "bridge"],
        agent="scout",
        confidence="0.9",
        source="radio report",
        episode="morning-briefing",
        observed_at="2024-05-01T08:00:00+02:00",
    )
    sign = await ok(
        client,
        "remember",
        text="A road sign says: bridge closed until Friday.",
        topics=["bridge"],
        agent="scout",
        confidence="0.7",
        supports=[{"belief_id": closed["belief_id"], "weight": "0.6"}],
    )
    opened = await ok(
        client,
        "remember",
        text="The bridge on Route 9 is open.",
        topics=["route-9", "bridge"],
        agent="driver",
        confidence="0.8",
        contradicts=[closed["observation_id"]],
    )
    return {
        "closed": closed["observation_id"],
        "closed_belief": closed["belief_id"],
        "sign": sign["observation_id"],
        "sign_belief": sign["belief_id"],
        "open": opened["observation_id"],
        "open_belief": opened["belief_id"],
    }
