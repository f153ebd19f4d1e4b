"""Progress notifications of a batch ``remember`` through a real MCP client."""

from __future__ import annotations

import anyio
import pytest
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings

pytestmark = pytest.mark.anyio


async def test_a_batch_remember_with_a_progress_token_reports_received_checked_written(
    client: Client,
) -> None:
    told: list[tuple[float, float | None, str | None]] = []

    async def hear(progress: float, total: float | None, message: str | None) -> None:
        told.append((progress, total, message))

    memories = [{"text": f"Stop {i} is on the line."} for i in range(5)]
    with anyio.fail_after(30):
        result = await client.call_tool("remember", {"memories": memories}, progress_callback=hear)
    assert not result.is_error
    assert told == [
        (0, 2, "received 5 memories"),
        (1, 2, "checked 5 memories"),
        (2, 2, "wrote 5 memories"),
    ]


async def test_a_refused_batch_stops_before_it_is_checked(client: Client) -> None:
    told: list[float] = []

    async def hear(progress: float, total: float | None, message: str | None) -> None:
        told.append(progress)

    with anyio.fail_after(30):
        result = await client.call_tool(
            "remember",
            {"memories": [{"text": "fine"}, {"text": "bad", "confidence": "2"}]},
            progress_callback=hear,
        )
    assert result.is_error
    assert told == [0]


async def test_a_single_remember_and_a_batch_without_a_token_send_no_progress(
    client: Client,
) -> None:
    told: list[float] = []

    async def hear(progress: float, total: float | None, message: str | None) -> None:
        told.append(progress)

    with anyio.fail_after(30):
        single = await client.call_tool("remember", {"text": "One."}, progress_callback=hear)
        batch = await client.call_tool("remember", {"memories": [{"text": "Two."}]})
    assert not single.is_error and not batch.is_error
    assert told == []


async def test_progress_arrives_as_notifications_with_the_token_over_the_2025_handshake(
    settings: Settings,
) -> None:
    told: list[tuple[float, float | None, str | None]] = []

    async def hear(progress: float, total: float | None, message: str | None) -> None:
        told.append((progress, total, message))

    with anyio.fail_after(30):
        async with Client(create_server(settings), mode="legacy") as client:
            result = await client.call_tool(
                "remember", {"memories": [{"text": "A."}, {"text": "B."}]}, progress_callback=hear
            )
    assert not result.is_error
    assert [t[0] for t in told] == [0, 1, 2] and told[-1][2] == "wrote 2 memories"
