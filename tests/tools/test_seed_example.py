"""The seed's bridge example (also the README's), end to end through every tool."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from calls import ok
from mcp.client import Client

pytestmark = pytest.mark.anyio


def ids_of(found: dict[str, Any]) -> list[str]:
    return [r["observation_id"] for r in found["results"]]


async def test_the_bridge_example_end_to_end(client: Client) -> None:
    with anyio.fail_after(60):
        # scout hears on the radio that the bridge is closed
        closed = await ok(
            client,
            "remember",
            text="The bridge on Route 9 is closed for repairs.",
            topics=["route-9", "bridge"],
            agent="scout",
            confidence="0.9",
            source="radio, 7:40",
            episode="patrol-2024-05-14",
        )
        # a road sign is evidence for that belief
        sign = await ok(
            client,
            "remember",
            text="A road sign says: bridge closed until Friday.",
            topics=["bridge"],
            agent="scout",
            confidence=0.7,
            supports=[{"belief_id": closed["belief_id"], "weight": "0.6"}],
        )
        # driver disagrees
        opened = await ok(
            client,
            "remember",
            text="The bridge on Route 9 is open.",
            topics=["route-9", "bridge"],
            agent="driver",
            confidence="0.8",
            contradicts=[closed["observation_id"]],
        )

        by_confidence = await ok(
            client, "recall", query="", topics=["bridge"], order_by="confidence"
        )
        confident = await ok(
            client, "recall", query="Is the Route 9 bridge open?", min_confidence="0.8", limit=5
        )
        scout_conflicts = await ok(client, "find_conflicts", agent="scout")
        between = await ok(client, "find_conflicts", agent="scout", other_agent="driver")
        unsupported = await ok(client, "cite_evidence", agent="scout", unsupported=True)
        cited = await ok(client, "cite_evidence", id=closed["belief_id"])
        judged = await ok(
            client,
            "feedback",
            recall_id=confident["recall_id"],
            accepted=[closed["observation_id"]],
            rejected=[opened["observation_id"]],
        )
        retracted = await ok(client, "forget", id=opened["observation_id"])
        after_forget = await ok(client, "find_conflicts", agent="scout", other_agent="driver")
        cited_after = await ok(client, "cite_evidence", id=closed["belief_id"])

    assert ids_of(by_confidence) == [
        closed["observation_id"],
        opened["observation_id"],
        sign["observation_id"],
    ]
    assert [r["confidence"] for r in by_confidence["results"]] == ["0.9", "0.8", "0.7"]

    assert set(ids_of(confident)) == {closed["observation_id"], opened["observation_id"]}
    assert all(r["confidence"] in ("0.9", "0.8") for r in confident["results"])

    expected = {frozenset((closed["observation_id"], opened["observation_id"]))}
    for found in (scout_conflicts, between):
        assert found["count"] == 1
        assert found["conflicts"][0]["kind"] == "contradiction"
        assert {
            frozenset((c["a"]["observation_id"], c["b"]["observation_id"]))
            for c in found["conflicts"]
        } == expected

    assert [u["observation_id"] for u in unsupported["unsupported"]] == [sign["observation_id"]]

    assert cited["observation"]["source"] == "radio, 7:40"
    assert cited["observation"]["episode"] == "patrol-2024-05-14"
    assert [(b["agent"], b["belief_id"]) for b in cited["believers"]] == [
        ("scout", closed["belief_id"])
    ]
    assert cited["believers"][0]["since"].endswith("Z")
    assert [(e["observation_id"], e["weight"], e["confidence"]) for e in cited["evidence"]] == [
        (sign["observation_id"], "0.6", "0.7")
    ]
    assert [c["observation_id"] for c in cited["contradictions"]] == [opened["observation_id"]]
    assert cited["citation"].startswith(
        '"The bridge on Route 9 is closed for repairs." (confidence 0.9;'
    )

    assert judged["accepted"] == [closed["observation_id"]]
    assert judged["rejected"] == [opened["observation_id"]]
    assert judged["impressions"] == len(confident["results"])

    assert retracted["mode"] == "retract"
    assert after_forget["count"] == 0
    assert cited_after["observation"]["hits"] == 1
    assert [c["retracted"] for c in cited_after["contradictions"]] == [True]
