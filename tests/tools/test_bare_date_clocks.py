"""A bare date asked as ``as_of`` or ``known_at`` ("what did we believe on the 3rd?") means the
end of that day in the memory's time zone, through the tools and the store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime

import anyio
import pytest
from calls import ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory, MemoryDraft, recall
from doxa.store import memory as memory_module

pytestmark = pytest.mark.anyio

#: Record times (when the memory was told) of three boiler notes, in UTC.
TOLD = {
    "Boiler serviced in the afternoon.": "2026-12-03T15:00:00Z",
    "Boiler serviced before midnight.": "2026-12-03T23:59:59Z",
    "Boiler serviced at midnight.": "2026-12-04T00:00:00Z",
}


def tell(monkeypatch: pytest.MonkeyPatch, memory: Memory, told: dict[str, str]) -> None:
    """Remember each text as observed and recorded at its time (the clock set to it)."""
    for text, at in told.items():
        moment = datetime.fromisoformat(at)
        monkeypatch.setattr(memory_module, "utc_now", lambda moment=moment: moment)
        memory.remember([MemoryDraft(text, topics=["boiler"], observed_at=at)])
    monkeypatch.undo()


def opened(settings: Settings, zone: str) -> Memory:
    memory = Memory.open(settings.store.model_copy(update={"timezone": zone}))
    memory.warm_up()
    return memory


@pytest.fixture
def la_memory(settings: Settings) -> Iterator[Memory]:
    memory = opened(settings, "America/Los_Angeles")
    yield memory
    memory.close()


@pytest.fixture
async def la_client(settings: Settings, la_memory: Memory) -> AsyncIterator[Client]:
    server = create_server(settings, memory=la_memory)
    async with Client(server) as connected:
        yield connected


async def texts(client: Client, **when: str) -> set[str]:
    found = await ok(client, "recall", query="Boiler serviced", **when)
    return {r["text"] for r in found["results"]}


async def test_a_bare_date_means_by_the_end_of_that_day_over_mcp(
    monkeypatch: pytest.MonkeyPatch, memory: Memory, memory_client: Client
) -> None:
    tell(monkeypatch, memory, TOLD)
    on_the_3rd = {"Boiler serviced in the afternoon.", "Boiler serviced before midnight."}
    with anyio.fail_after(30):
        assert await texts(memory_client, as_of="2026-12-03") == on_the_3rd
        assert await texts(memory_client, known_at="2026-12-03") == on_the_3rd
        assert await texts(memory_client, as_of="2026-12-03", known_at="2026-12-03") == on_the_3rd
        assert await texts(memory_client, as_of="2026-12-02") == set()
        assert await texts(memory_client, known_at="2026-12-02") == set()
        assert await texts(memory_client, known_at="2026-12-04") == set(TOLD)
        # A time keeps its meaning: midnight is midnight.
        assert await texts(memory_client, known_at="2026-12-03T00:00:00Z") == set()
        boiler = await ok(memory_client, "about", name="boiler", known_at="2026-12-03")
        assert boiler["counts"]["observations"] == 2


async def test_a_bare_date_is_read_in_the_memorys_time_zone_over_mcp(
    monkeypatch: pytest.MonkeyPatch, la_memory: Memory, la_client: Client
) -> None:
    told = {
        "Boiler serviced at nine in the evening.": "2026-12-04T05:00:00Z",  # 21:00 on the 3rd
        "Boiler serviced at midnight.": "2026-12-04T08:00:00Z",  # 00:00 on the 4th in LA
    }
    tell(monkeypatch, la_memory, told)
    evening = {"Boiler serviced at nine in the evening."}
    with anyio.fail_after(30):
        assert await texts(la_client, as_of="2026-12-03") == evening
        assert await texts(la_client, known_at="2026-12-03") == evening
        assert await texts(la_client, known_at="2026-12-02") == set()
        assert await texts(la_client, known_at="2026-12-04") == set(told)


def test_citations_unsupported_and_conflicts_read_a_bare_date_as_its_end(
    monkeypatch: pytest.MonkeyPatch, memory: Memory
) -> None:
    tell(monkeypatch, memory, {"Boiler serviced in the afternoon.": "2026-12-03T15:00:00Z"})
    [found] = memory.recall("Boiler serviced", known_at="2026-12-03").results
    # Recorded at 15:00 on the 3rd: held by the 3rd's end, not refused as before it.
    cited = memory.evidence(found.observation_id, known_at="2026-12-03")
    assert cited["id"] == found.observation_id
    [agent] = found.agents
    assert len(memory.unsupported(agent, known_at="2026-12-03")["unsupported"]) == 1
    assert memory.unsupported(agent, known_at="2026-12-02")["unsupported"] == []
    assert memory.conflicts(known_at="2026-12-03")["count"] == 0


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles"])
def test_tomorrow_asked_as_of_a_bare_date_is_the_next_day(zone: str) -> None:
    asked = recall.question("What do I have tomorrow?", as_of="2026-12-03", zone=zone)
    assert asked.window is not None
    start = datetime.fromtimestamp(asked.window[0] / 1e6, UTC)
    end = datetime.fromtimestamp((asked.window[1] - 1) / 1e6, UTC)
    assert start.date().isoformat() == end.date().isoformat() == "2026-12-04"
