"""Progress notifications of a batch ``remember`` through a real MCP client."""

from __future__ import annotations

import threading
from typing import Any

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


async def test_a_cancelled_batch_stops_before_it_is_written(settings: Settings) -> None:
    # A client cancelling a 10,000-memory remember got no answer, yet every memory was
    # written and progress went on. It now stops at its next step, before the write.
    from doxa.store import Memory
    from doxa.tools.progress import CallCancelled

    memory = Memory.open(settings.store)
    ended: list[BaseException | None] = []
    started, done = threading.Event(), threading.Event()
    remember = memory.remember

    def watched(*args: Any, **kwargs: Any) -> Any:
        started.set()
        try:
            result = remember(*args, **kwargs)
        except BaseException as error:
            ended.append(error)
            raise
        else:
            ended.append(None)
            return result
        finally:
            done.set()

    memory.remember = watched  # type: ignore[method-assign]
    told: list[float] = []
    heard = anyio.Event()

    async def hear(progress: float, total: float | None, message: str | None) -> None:
        told.append(progress)
        heard.set()

    memories = [
        {"text": f"Ferry note {i}: the boat leaves from pier {i % 7}."} for i in range(10_000)
    ]
    try:
        with anyio.fail_after(60):
            async with Client(create_server(settings, memory=memory)) as client:
                with anyio.CancelScope() as scope:
                    async with anyio.create_task_group() as group:

                        async def send() -> None:
                            await client.call_tool(
                                "remember", {"memories": memories}, progress_callback=hear
                            )

                        group.start_soon(send)
                        await heard.wait()
                        # Cancelled while the memories are checked (about a second).
                        assert await anyio.to_thread.run_sync(started.wait, 30)
                        scope.cancel()
                assert await anyio.to_thread.run_sync(done.wait, 30)
                stats = await client.read_resource("doxa://stats")
    finally:
        memory.close()
    [error] = ended
    assert isinstance(error, CallCancelled)
    assert '"Observation":0' in stats.contents[0].text.replace(" ", "")  # type: ignore[union-attr]
    assert told == [0]
