"""The server's log sent to a client that set a level (``logging/setLevel``), through a real
MCP client speaking the 2025 handshake (the protocol revision that has it)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import stdio_client
from mcp.types import LoggingMessageNotificationParams

from doxa.server.app import create_server
from doxa.server.client_log import mcp_level
from doxa.server.settings import Settings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore:The logging capability is deprecated"),
]


class Heard:
    """The log messages a client received, and a way to wait for the next."""

    def __init__(self) -> None:
        self.messages: list[LoggingMessageNotificationParams] = []
        self._arrived = anyio.Event()

    async def __call__(self, params: LoggingMessageNotificationParams) -> None:
        self.messages.append(params)
        self._arrived.set()

    async def until(self, count: int) -> list[LoggingMessageNotificationParams]:
        while len(self.messages) < count:
            await self._arrived.wait()
            self._arrived = anyio.Event()
        return self.messages


@pytest.fixture
def heard() -> Heard:
    return Heard()


@pytest.fixture
async def legacy_client(settings: Settings, heard: Heard) -> AsyncIterator[Client]:
    async with Client(create_server(settings), logging_callback=heard, mode="legacy") as client:
        yield client


async def test_after_set_level_the_servers_warnings_arrive_and_lower_levels_do_not(
    legacy_client: Client, heard: Heard
) -> None:
    log = logging.getLogger("doxa.server.test")
    with anyio.fail_after(30):
        assert (await legacy_client.set_logging_level("warning")).model_dump(
            exclude_none=True, exclude={"result_type"}
        ) == {}
        log.info("not sent: below the level")
        log.warning("the bridge is %s", "closed")
        log.error("the road is flooded")
        messages = await heard.until(2)
    assert [(m.level, m.logger, m.data) for m in messages] == [
        ("warning", "doxa.server.test", "the bridge is closed"),
        ("error", "doxa.server.test", "the road is flooded"),
    ]


async def test_a_log_record_from_a_worker_thread_arrives(
    legacy_client: Client, heard: Heard
) -> None:
    with anyio.fail_after(30):
        await legacy_client.set_logging_level("info")
        await anyio.to_thread.run_sync(
            lambda: logging.getLogger("doxa.store.test").warning("from a thread")
        )
        messages = await heard.until(1)
    assert (messages[0].level, messages[0].data) == ("warning", "from a thread")


async def test_without_set_level_nothing_is_sent(legacy_client: Client, heard: Heard) -> None:
    with anyio.fail_after(30):
        await legacy_client.list_tools()
        logging.getLogger("doxa.server.test").error("kept on stderr only")
        await legacy_client.set_logging_level("error")
        logging.getLogger("doxa.server.test").error("sent")
        messages = await heard.until(1)
    assert [m.data for m in messages] == ["sent"]


def test_python_levels_map_to_the_most_severe_mcp_level_they_reach() -> None:
    assert mcp_level(logging.DEBUG) == "debug"
    assert mcp_level(logging.INFO) == "info"
    assert mcp_level(logging.WARNING) == "warning"
    assert mcp_level(logging.ERROR + 1) == "error"
    assert mcp_level(logging.CRITICAL) == "critical"


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["http", "stdio"])
async def test_a_2026_request_that_asks_for_the_log_gets_the_records_made_while_it_is_served(
    tmp_path: Path, start_server: Any, stdio_params: Any, transport: str
) -> None:
    # 2026-07-28 has no logging/setLevel: the level rides each request's _meta. doxa
    # advertised logging to such clients and sent them nothing; the record went to stderr.
    data_dir = tmp_path / "memory"
    data_dir.mkdir()
    (data_dir / "pruned.jsonl").mkdir()  # the prune audit cannot be read: a warning
    heard = Heard()
    with anyio.fail_after(60):
        if transport == "http":
            server = await start_server("http", data_dir)
            connected = Client(server.url, mode="auto", log_level="warning", logging_callback=heard)
        else:
            params = stdio_params(data_dir)
            connected = Client(
                stdio_client(params), mode="auto", log_level="warning", logging_callback=heard
            )
        async with connected as client:
            assert client.protocol_version == "2026-07-28"
            assert client.server_capabilities.logging is not None
            stored = await client.call_tool("remember", {"text": "The ferry runs at noon."})
            assert stored.structured_content is not None
            observation = stored.structured_content["observation_id"]
            forgot = await client.call_tool("forget", {"id": observation})
            assert not forgot.is_error
            assert len(heard.messages) == 0  # nothing logged while those were served
            cited = await client.call_tool("cite_evidence", {"id": observation})
            assert not cited.is_error
            # Sent on the call's own stream, before its answer.
            warned = [m for m in heard.messages if "prune audit" in str(m.data)]
    assert [(m.level, m.logger) for m in warned] == [("warning", "doxa.store.pruning")]
    assert "unreadable" in str(warned[0].data)
