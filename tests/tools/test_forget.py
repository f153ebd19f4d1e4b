"""The ``forget`` tool, driven through a real in-memory MCP client."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import anyio
import lancedb
import pytest
from calls import error, ok
from mcp.client import Client

from doxa.server.settings import Settings
from doxa.store import Memory

pytestmark = pytest.mark.anyio

ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

HOSTILE = [
    "x'); MATCH (n) DETACH DELETE n; //",
    '" OR 1=1 --',
    "id IN ('a') OR TRUE",
    "') OR id LIKE '%",
    "Ünïcödé ✓ 🧠\nnew line",
]


def index_ids(settings: Settings) -> set[str]:
    """The ids the LanceDB search index holds, read behind the memory's back."""
    table = lancedb.connect(str(Path(settings.store.data_dir) / "index")).open_table("observations")
    return {str(i) for i in table.to_arrow().column("id").to_pylist()}


async def seed_bridge(client: Client) -> dict[str, str]:
    closed = await ok(
        client,
        "remember",
        text="The bridge on Route 9 is closed for repairs.",
        topics=["route-9", "bridge"],
        agent="scout",
        confidence="0.9",
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
    return {
        "closed": closed["observation_id"],
        "closed_belief": closed["belief_id"],
        "sign": sign["observation_id"],
        "sign_belief": sign["belief_id"],
    }


def alice(city: str, observed_at: str) -> dict[str, Any]:
    return {
        "text": f"Alice lives in {city}.",
        "agent": "a",
        "observed_at": observed_at,
        "fact": {"subject": "Alice", "predicate": "lives in", "object": city},
    }


# ---- retract ----------------------------------------------------------------------------------


async def test_retract_hides_from_recall_but_keeps_the_audit_trail(
    memory_client: Client, memory: Memory, settings: Settings
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        done = await ok(memory_client, "forget", id=ids["sign"])
        found = await ok(memory_client, "recall", query="road sign bridge closed")
        by_topic = await ok(memory_client, "recall", query="", topics=["bridge"])
        cited = await ok(memory_client, "cite_evidence", id=ids["sign"])
        belief = await ok(memory_client, "cite_evidence", id=ids["closed_belief"])
    assert done == {
        "observation_id": ids["sign"],
        "mode": "retract",
        "belief_ids": [ids["sign_belief"]],
    }  # not already retracted, no other believer: "already" and "kept_for" are left out
    assert ids["sign"] not in {r["observation_id"] for r in found["results"]}
    assert [r["observation_id"] for r in by_topic["results"]] == [ids["closed"]]
    assert ISO_Z.match(cited["observation"]["retracted_at"])
    assert cited["observation"]["text"] == "A road sign says: bridge closed until Friday."
    assert f"RETRACTED at {cited['observation']['retracted_at']}" in cited["citation"]
    assert [(e["observation_id"], e["retracted"]) for e in belief["evidence"]] == [
        (ids["sign"], True)
    ]
    assert memory.stats()["Observation"] == 2
    assert index_ids(settings) == {ids["closed"]}


async def test_retracting_twice_reports_already(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        await ok(client, "forget", id=ids["sign"], mode="retract")
        again = await ok(client, "forget", id=ids["sign"], mode="retract")
    assert again["already"] is True
    assert again["belief_ids"] == [ids["sign_belief"]]


async def test_retracted_text_can_be_remembered_again_as_new(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        await ok(client, "forget", id=ids["sign"])
        again = await ok(
            client,
            "remember",
            text="A road sign says: bridge closed until Friday.",
            agent="scout",
        )
        found = await ok(client, "recall", query="", agent="scout")
    assert "duplicate_of" not in again
    assert again["observation_id"] != ids["sign"]
    assert {r["observation_id"] for r in found["results"]} == {
        ids["closed"],
        again["observation_id"],
    }


async def test_retracted_beliefs_are_not_listed_as_unsupported(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        await ok(client, "forget", id=ids["sign"])
        found = await ok(client, "cite_evidence", agent="scout", unsupported=True)
    # Not the retracted sign; the closure it was the only evidence for is unsupported now.
    assert [u["observation_id"] for u in found["unsupported"]] == [ids["closed"]]


async def test_a_retracted_observation_cannot_be_contradicted(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        await ok(client, "forget", id=ids["closed"])
        text = await error(
            client, "remember", text="It is open.", agent="driver", contradicts=[ids["closed"]]
        )
    assert f"contradicts[0]: the observation {ids['closed']!r} was retracted; name one" in text


async def test_a_retracted_observation_takes_no_new_evidence(
    memory_client: Client, memory: Memory
) -> None:
    # Evidence told after the retraction was attached to it, and cited under it unmarked.
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        await ok(memory_client, "forget", id=ids["closed"])
        before = memory.stats()
        text = await error(
            memory_client,
            "remember",
            text="A second sign says closed.",
            agent="driver",
            supports=[{"belief_id": ids["closed_belief"], "weight": "0.9"}],
        )
        after = memory.stats()
    assert text.endswith(
        f"supports[0].belief_id: the belief {ids['closed_belief']!r} is in a retracted"
        " observation; name one still held"
    )
    assert after == before


# ---- purge ------------------------------------------------------------------------------------


async def test_purge_removes_it_from_both_stores(
    memory_client: Client, memory: Memory, settings: Settings
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        before = memory.stats()
        done = await ok(memory_client, "forget", id=ids["sign"], mode="purge")
        found = await ok(memory_client, "recall", query="road sign bridge closed")
        gone = await error(memory_client, "cite_evidence", id=ids["sign"])
        gone_belief = await error(memory_client, "cite_evidence", id=ids["sign_belief"])
        belief = await ok(memory_client, "cite_evidence", id=ids["closed_belief"])
        unsupported = await ok(memory_client, "cite_evidence", agent="scout", unsupported=True)
    assert done == {
        "observation_id": ids["sign"],
        "mode": "purge",
        "belief_ids": [ids["sign_belief"]],
    }
    assert [r["observation_id"] for r in found["results"]] == [ids["closed"]]
    assert f"no observation or belief with id {ids['sign']!r}" in gone
    assert f"no observation or belief with id {ids['sign_belief']!r}" in gone_belief
    assert "evidence" not in belief
    assert [u["belief_id"] for u in unsupported["unsupported"]] == [ids["closed_belief"]]
    after = memory.stats()
    assert after["Observation"] == before["Observation"] - 1
    assert after["Belief"] == before["Belief"] - 1
    assert after["IndexRows"] == before["IndexRows"] - 1
    assert index_ids(settings) == {ids["closed"]}


async def test_a_purged_text_leaves_the_index_files_and_their_earlier_versions(
    memory_client: Client, memory: Memory, settings: Settings
) -> None:
    """The index kept each earlier version of its table until maintenance, which a single
    purge never started: LanceDB read the purged text back from one, and its bytes stayed in
    the files (a backup copied them); and a compaction rewrote only a fragment of which a
    tenth was deleted, so one of twenty notes purged stayed in its file, marked deleted."""
    secret = "The door code of the lab is ZEBRA-PURPLE-4471."
    notes = [{"text": f"Ordinary note number {i}."} for i in range(20)]
    with anyio.fail_after(30):
        batch = await ok(memory_client, "remember", memories=[*notes, {"text": secret}])
        told = batch["remembered"][-1]
        await ok(memory_client, "remember", text="The canteen opens at noon.")
        assert memory.settle(timeout=10)
        await ok(memory_client, "forget", id=told["observation_id"], mode="purge")
        assert memory.settle(timeout=10)
    index = Path(settings.store.data_dir) / "index"
    held = [p for p in index.rglob("*") if p.is_file() and b"ZEBRA-PURPLE" in p.read_bytes()]
    assert held == []
    table = lancedb.connect(str(index)).open_table("observations")
    assert len(table.list_versions()) == 1
    assert told["observation_id"] not in index_ids(settings)
    assert len(index_ids(settings)) == 21  # the others stay, each once


async def test_purge_after_retract_removes_it(memory_client: Client, memory: Memory) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        await ok(memory_client, "forget", id=ids["sign"])
        await ok(memory_client, "forget", id=ids["sign"], mode="purge")
        gone = await error(memory_client, "cite_evidence", id=ids["sign"])
        # A purge retried (its answer lost, say to a stopped owner) answers already, as a
        # retried retraction does; it answered that the id named nothing.
        again = await ok(memory_client, "forget", id=ids["sign"], mode="purge")
        retract = await error(memory_client, "forget", id=ids["sign"])
    assert "no observation or belief with id" in gone
    assert again["already"] is True and again["belief_ids"] == [ids["sign_belief"]]
    assert f"id: no observation with id {ids['sign']!r}" in retract
    assert memory.stats()["Observation"] == 1


async def test_purging_a_newer_fact_leaves_no_dangling_superseded_by(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        await ok(client, "forget", id=berlin["observation_id"], mode="purge")
        found = await ok(client, "recall", query="Alice lives in", include_superseded=True)
        cited = await ok(client, "cite_evidence", id=paris["observation_id"])
    assert "superseded_by" not in cited
    [old] = found["results"]
    assert old["observation_id"] == paris["observation_id"]
    assert "superseded_by" not in old
    assert "current" not in old  # current again


# ---- errors -----------------------------------------------------------------------------------


async def test_unknown_id_is_an_error(memory_client: Client, memory: Memory) -> None:
    with anyio.fail_after(30):
        await seed_bridge(memory_client)
        before = memory.stats()
        retract = await error(memory_client, "forget", id="obs_0000000000000000")
        purge = await error(memory_client, "forget", id="obs_0000000000000000", mode="purge")
        belief = await error(memory_client, "forget", id="bel_0000000000000000")
    assert "id: no observation with id 'obs_0000000000000000'" in retract
    assert "id: no observation with id 'obs_0000000000000000'" in purge
    assert "id: 'bel_0000000000000000' is a belief id, not an observation id (obs_…)" in belief
    assert memory.stats() == before


async def test_a_belief_id_is_refused_saying_forget_takes_an_observation_id(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        before = memory.stats()
        retract = await error(memory_client, "forget", id=ids["closed_belief"])
        purge = await error(memory_client, "forget", id=ids["closed_belief"], mode="purge")
        after = memory.stats()  # before the recall below, whose log is a write of its own
        found = await ok(memory_client, "recall", query="bridge closed for repairs")
    expected = (
        f"id {ids['closed_belief']!r} is a belief id; forget takes an observation id (obs_…)"
        f" as remember or recall return it: this belief's is {ids['closed']!r}"
    )
    assert retract.endswith(expected)
    assert purge.endswith(expected)
    assert after == before
    assert ids["closed"] in {r["observation_id"] for r in found["results"]}


async def test_unknown_mode_is_an_error_naming_it(memory_client: Client, memory: Memory) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        text = await error(memory_client, "forget", id=ids["sign"], mode="shred")
        cited = await ok(memory_client, "cite_evidence", id=ids["sign"])
    assert "mode" in text
    assert "'retract' or 'purge'" in text
    assert "retracted_at" not in cited["observation"]


@pytest.mark.parametrize("hostile", HOSTILE)
@pytest.mark.parametrize("mode", ["retract", "purge"])
async def test_hostile_ids_are_data_and_touch_nothing(
    memory_client: Client, memory: Memory, settings: Settings, hostile: str, mode: str
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        before = memory.stats()
        text = await error(memory_client, "forget", id=hostile, mode=mode)
        found = await ok(memory_client, "recall", query="", topics=["bridge"])
    assert f"id: no observation with id {hostile!r}" in text
    assert {r["observation_id"] for r in found["results"]} == {ids["closed"], ids["sign"]}
    assert {k: v for k, v in memory.stats().items() if k != "Recall"} == {
        k: v for k, v in before.items() if k != "Recall"
    }
    assert index_ids(settings) == {ids["closed"], ids["sign"]}
