"""The ``feedback`` tool, driven through a real in-memory MCP client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from calls import error, ok
from conftest import hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory

pytestmark = pytest.mark.anyio

QUERY = "ferry timetable"

HOSTILE = [
    "x'); MATCH (n) DETACH DELETE n; //",
    '" OR 1=1 --',
    "id IN ('a') OR TRUE",
    "Ünïcödé ✓ 🧠\nnew line",
]


async def seed_ferries(client: Client) -> list[str]:
    """Three observations about ferries; the query matches the first best, the last worst."""
    done = await ok(
        client,
        "remember",
        memories=[
            {"text": "Ferry timetable: the harbour ferry timetable is posted."},
            {"text": "The ferry timetable changes for the winter season."},
            {"text": "A ferry ticket costs five euros on the harbour ferry line."},
        ],
    )
    return [r["observation_id"] for r in done["remembered"]]


def ranks(found: dict[str, Any]) -> list[str]:
    return [r["observation_id"] for r in found["results"]]


async def test_feedback_reports_what_was_recorded(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        judged = await ok(
            client, "feedback", recall_id=found["recall_id"], accepted=[ids[1]], rejected=[ids[2]]
        )
    assert judged == {
        "recall_id": found["recall_id"],
        "accepted": [ids[1]],
        "rejected": [ids[2]],
        "impressions": 3,
    }


async def test_a_result_purged_since_the_recall_is_not_reported_as_judged(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        await ok(client, "forget", id=ids[2], mode="purge")
        judged = await ok(
            client, "feedback", recall_id=found["recall_id"], accepted=[ids[1]], rejected=[ids[2]]
        )
    assert judged == {"recall_id": found["recall_id"], "accepted": [ids[1]], "impressions": 2}


async def test_a_result_retracted_since_the_recall_is_not_counted_as_an_impression(
    client: Client,
) -> None:
    # The answer said 3 impressions; the memory recorded 2 (a retracted result counts none).
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        await ok(client, "forget", id=ids[1])
        judged = await ok(client, "feedback", recall_id=found["recall_id"])
        cited = [await ok(client, "cite_evidence", id=i) for i in ids]
    assert judged == {"recall_id": found["recall_id"], "impressions": 2}
    assert [c["observation"].get("impressions") for c in cited] == [1, None, 1]


async def test_a_belief_or_recall_id_judged_is_named_as_such(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY, explain=True)  # shows belief ids
        first = found["results"][0]
        refused = await error(
            client, "feedback", recall_id=found["recall_id"], accepted=[first["belief_ids"][0]]
        )
        assert refused == (
            "Error executing tool feedback:"
            f" accepted[0] {first['belief_ids'][0]!r} is a belief id; judge a result by its"
            f" observation id (obs_…): this belief's is {first['observation_id']!r}"
        )
        refused = await error(
            client, "feedback", recall_id=found["recall_id"], rejected=[ids[0], found["recall_id"]]
        )
        assert refused == (
            "Error executing tool feedback:"
            f" rejected[1] {found['recall_id']!r} is a recall id; judge its results by their ids"
        )
        # Nothing was judged: the recall still takes its judgement.
        await ok(client, "feedback", recall_id=found["recall_id"], accepted=[ids[0]])


async def test_feedback_counts_hits_and_impressions(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        await ok(client, "feedback", recall_id=found["recall_id"], accepted=[ids[1]])
        accepted = await ok(client, "cite_evidence", id=ids[1])
        shown = await ok(client, "cite_evidence", id=ids[0])
    assert (accepted["observation"]["hits"], accepted["observation"]["impressions"]) == (1, 1)
    assert "hits" not in shown["observation"]  # no hit: the default, left out
    assert shown["observation"]["impressions"] == 1


async def test_accepted_result_ranks_higher_on_the_same_query(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        before = await ok(client, "recall", query=QUERY)
        target = ranks(before)[-1]
        await ok(client, "feedback", recall_id=before["recall_id"], accepted=[target])
        after = await ok(client, "recall", query=QUERY, explain=True)
    assert ranks(before).index(target) >= 1
    assert ranks(after).index(target) < ranks(before).index(target)
    boosted = next(r for r in after["results"] if r["observation_id"] == target)
    assert boosted["scores"]["feedback"] > 0
    assert set(ranks(after)) == set(ids)


async def test_rejected_result_ranks_lower_on_the_same_query(client: Client) -> None:
    with anyio.fail_after(30):
        await seed_ferries(client)
        before = await ok(client, "recall", query=QUERY)
        target = ranks(before)[0]
        await ok(client, "feedback", recall_id=before["recall_id"], rejected=[target])
        after = await ok(client, "recall", query=QUERY, explain=True)
    assert ranks(after).index(target) > 0
    demoted = next(r for r in after["results"] if r["observation_id"] == target)
    assert demoted["scores"]["feedback"] < 0


async def test_results_accepted_together_lift_each_other_on_later_queries(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        first = await ok(client, "recall", query=QUERY)
        await ok(client, "feedback", recall_id=first["recall_id"], accepted=[ids[0], ids[1]])
        other = await ok(client, "recall", query="euros for a ticket")
        await ok(client, "feedback", recall_id=other["recall_id"], accepted=[ids[0]])
        again = await ok(client, "recall", query="euros for a ticket", explain=True)
    by_id = {r["observation_id"]: r["scores"] for r in again["results"]}
    assert by_id[ids[0]]["feedback"] > 0
    assert 0 < by_id[ids[1]]["feedback"] < by_id[ids[0]]["feedback"]
    assert "feedback" not in by_id[ids[2]]


async def test_feedback_does_not_reach_unrelated_queries(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        await ok(client, "feedback", recall_id=found["recall_id"], accepted=[ids[2]])
        other = await ok(client, "recall", query="winter season changes", explain=True)
    assert other["results"]
    assert all("feedback" not in r["scores"] for r in other["results"])


async def test_a_rejection_reaches_only_near_identical_queries_an_acceptance_similar_ones(
    client: Client,
) -> None:
    # "ferry timetable timetable winter" is 0.87 alike to QUERY (hash embedder: word counts
    # 1, 2, 1 against 1, 1), above feedback_similarity (0.85) and below rejection_similarity
    # (0.99).
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        await ok(
            client, "feedback", recall_id=found["recall_id"], accepted=[ids[2]], rejected=[ids[1]]
        )
        similar = await ok(client, "recall", query="ferry timetable timetable winter", explain=True)
        same = await ok(client, "recall", query=QUERY, explain=True)
    on_similar = {r["observation_id"]: r["scores"] for r in similar["results"]}
    assert on_similar[ids[2]]["feedback"] > 0
    assert "feedback" not in on_similar[ids[1]]
    on_same = {r["observation_id"]: r["scores"] for r in same["results"]}
    assert on_same[ids[1]]["feedback"] < 0


async def test_an_acceptance_does_not_reach_a_question_about_another_invoice(
    settings: Settings,
) -> None:
    # The two questions are 0.875 alike (hash embedder: 7 of 8 words), above
    # feedback_similarity, but ask about other invoices: 98's answer is none for 99.
    asked = "what is the total amount of invoice {}"
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            done = await ok(
                client,
                "remember",
                memories=[
                    {"text": "Invoice 98 total is 3.98 dollars."},
                    {"text": "Invoice 99 total is 5.94 dollars."},
                ],
            )
            ninety_eight, ninety_nine = (m["observation_id"] for m in done["remembered"])
            found = await ok(client, "recall", query=asked.format(98))
            await ok(client, "feedback", recall_id=found["recall_id"], accepted=[ninety_eight])
            other = await ok(client, "recall", query=asked.format(99), explain=True)
            again = await ok(client, "recall", query=asked.format(98) + "?", explain=True)
        # The same after a restart, which learns the judged queries from the graph.
        async with Client(create_server(settings)) as client:
            restarted = await ok(client, "recall", query=asked.format(99), explain=True)
    for answer in (other, restarted):
        assert answer["results"][0]["observation_id"] == ninety_nine
        assert all("feedback" not in r["scores"] for r in answer["results"])
    # The same question reworded still gets what was accepted for it.
    assert again["results"][0]["observation_id"] == ninety_eight
    assert again["results"][0]["scores"]["feedback"] > 0


# ---- errors: named, and nothing recorded ------------------------------------------------------


async def test_judging_a_result_the_recall_did_not_return_names_it(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY, limit=1)
        missing = next(i for i in ids if i != ranks(found)[0])
        text = await error(client, "feedback", recall_id=found["recall_id"], accepted=[missing])
        rejected = await error(
            client,
            "feedback",
            recall_id=found["recall_id"],
            accepted=[ranks(found)[0]],
            rejected=["obs_0000000000000000"],
        )
        # Where it was given: after a repeat it was named by its place among the ids left.
        repeated = await error(
            client,
            "feedback",
            recall_id=found["recall_id"],
            rejected=[ranks(found)[0], ranks(found)[0], missing],
        )
        cited = await ok(client, "cite_evidence", id=ranks(found)[0])
        # the failed calls recorded nothing: the recall can still be judged
        judged = await ok(client, "feedback", recall_id=found["recall_id"], accepted=ranks(found))
    assert text.endswith(
        f"accepted[0] {missing!r} was not returned by recall {found['recall_id']}; "
        "judge only its results"
    )
    assert "rejected[0] 'obs_0000000000000000' was not returned by recall" in rejected
    assert f"rejected[2] {missing!r} was not returned by recall" in repeated
    assert "hits" not in cited["observation"] and "impressions" not in cited["observation"]
    assert judged["accepted"] == ranks(found)


async def test_judging_a_recall_twice_is_an_error(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        await ok(client, "feedback", recall_id=found["recall_id"], accepted=[ids[0]])
        text = await error(client, "feedback", recall_id=found["recall_id"], accepted=[ids[1]])
        cited = await ok(client, "cite_evidence", id=ids[1])
    assert "recall_id was already judged; call recall again and judge the new recall_id" in text
    assert "hits" not in cited["observation"]
    assert cited["observation"]["impressions"] == 1


async def test_judging_one_result_both_ways_is_an_error(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(client)
        found = await ok(client, "recall", query=QUERY)
        text = await error(
            client, "feedback", recall_id=found["recall_id"], accepted=[ids[0]], rejected=[ids[0]]
        )
        judged = await ok(client, "feedback", recall_id=found["recall_id"], rejected=[ids[0]])
    assert f"rejected[0] {ids[0]!r} is also in accepted; judge each result once" in text
    assert judged["rejected"] == [ids[0]]


async def test_unknown_recall_id_is_an_error(client: Client) -> None:
    with anyio.fail_after(30):
        text = await error(client, "feedback", recall_id="rec_0000000000000000")
    assert text.endswith(
        "recall_id: no recall with id 'rec_0000000000000000'; use an id returned by recall"
    )
    with anyio.fail_after(30):
        other = await error(client, "feedback", recall_id="obs_0000000000000000")
    assert other.endswith(
        "recall_id: 'obs_0000000000000000' is an observation id, not a recall id (rec_…); use"
        " one returned by recall"
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"recall_id": ""}, "recall_id must not be empty"),
        ({"recall_id": "rec_x", "accepted": [" "]}, "accepted[0] must not be empty"),
    ],
)
async def test_empty_ids_are_errors_naming_the_field(
    client: Client, args: dict[str, Any], message: str
) -> None:
    with anyio.fail_after(30):
        text = await error(client, "feedback", **args)
    assert message in text


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_hostile_ids_are_data_and_touch_nothing(
    memory_client: Client, memory: Memory, hostile: str
) -> None:
    with anyio.fail_after(30):
        ids = await seed_ferries(memory_client)
        found = await ok(memory_client, "recall", query=QUERY)
        unknown = await error(memory_client, "feedback", recall_id=hostile)
        not_returned = await error(
            memory_client, "feedback", recall_id=found["recall_id"], accepted=[hostile]
        )
        cited = [await ok(memory_client, "cite_evidence", id=i) for i in ids]
    assert f"recall_id: no recall with id {hostile!r}" in unknown
    assert f"accepted[0] {hostile!r} was not returned by recall" in not_returned
    assert all("impressions" not in c["observation"] for c in cited)
    assert memory.stats()["Observation"] == 3


async def test_a_result_purged_since_a_recall_from_before_a_restart_is_named_as_such(
    tmp_path: Path,
) -> None:
    settings = hash_settings(tmp_path / "memory")
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            for text in ("The ferry leaves at 9.", "The ferry is late."):
                await ok(client, "remember", text=text)
            found = await ok(client, "recall", query="ferry")
        gone, kept = [r["observation_id"] for r in found["results"]]
        async with Client(create_server(settings)) as client:
            await ok(client, "forget", id=gone, mode="purge")
            refused = await error(client, "feedback", recall_id=found["recall_id"], accepted=[gone])
            judged = await ok(client, "feedback", recall_id=found["recall_id"], accepted=[kept])
    assert f"accepted[0] {gone!r} was not returned by recall" in refused
    assert refused.endswith(", or was purged since; judge only its results")
    assert judged["accepted"] == [kept]
