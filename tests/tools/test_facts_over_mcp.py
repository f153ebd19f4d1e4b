"""Facts as agents mean them, through the MCP client: multi-valued and single-valued
predicates across agents, the cardinality error, one observation believed by two agents,
forgetting one agent's belief, and ``known_at`` beside ``as_of``."""

from __future__ import annotations

import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest
from calls import LATER, error, ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.store.values import iso, utc_now
from tests.conftest import hash_settings

pytestmark = pytest.mark.anyio


async def fact(client: Client, subject: str, predicate: str, obj: str, **more: Any) -> str:
    agent = more.pop("agent", "scout")
    extra = more.pop("fact", {})
    done = await ok(
        client,
        "remember",
        text=more.pop("text", f"{subject} {predicate} {obj}."),
        agent=agent,
        fact={"subject": subject, "predicate": predicate, "object": obj, **extra},
        **more,
    )
    observation: str = done["observation_id"]
    return observation


def ids(found: dict[str, Any]) -> list[str]:
    return [r.get("observation_id", r.get("id")) for r in found["results"]]


async def test_multi_valued_facts_accumulate_and_never_clash_single_valued_ones_do(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        jazz = await fact(client, "Alice", "likes", "jazz", observed_at="2024-05-01")
        hiking = await fact(client, "Alice", "likes", "hiking", observed_at="2024-05-02")
        chess = await fact(client, "Alice", "Likes", "chess", agent="driver")
        likes = await ok(client, "recall", query="Alice likes", limit=10)
        none = await ok(client, "find_conflicts")
        await fact(client, "Alice", "lives in", "Paris", agent="scout")
        await fact(client, "Alice", "lives_in", "Berlin", agent="driver")
        clashing = await ok(client, "find_conflicts", agent="scout", other_agent="driver")
        refused = await error(
            client,
            "remember",
            text="Alice likes tea.",
            fact={"subject": "Alice", "predicate": "likes", "object": "tea", "cardinality": "one"},
        )
    current = {
        r.get("observation_id", r.get("id")): r.get("current", True) for r in likes["results"]
    }
    assert all(current[i] for i in (jazz, hiking, chess))
    assert none["count"] == 0
    [clash] = clashing["conflicts"]
    assert clash["kind"] == "clash" and clash["predicate"] == "lives_in"
    assert "fact.cardinality" in refused and "'many'" in refused


async def test_a_second_agent_believes_the_same_observation_and_may_withdraw_alone(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        first = await ok(
            client, "remember", text="The ferry leaves at 9.", agent="scout", confidence="0.9"
        )
        second = await ok(
            client, "remember", text="The ferry leaves at 9.", agent="driver", confidence="0.6"
        )
        cited = await ok(client, "cite_evidence", id=first["observation_id"])
        await fact(client, "ferry", "status", "running", agent="scout", text="Ferry runs.")
        await fact(client, "ferry", "status", "running", agent="driver", text="Ferry runs.")
        await fact(client, "ferry", "status", "cancelled", agent="medic")
        conflicts = await ok(client, "find_conflicts", agent="medic")
    assert second["observation_id"] == first["observation_id"]
    assert second["shared_with"] == ["scout"]
    assert [(b["agent"], b["confidence"]) for b in cited["believers"]] == [
        ("scout", "0.9"),
        ("driver", "0.6"),
    ]
    [clash] = conflicts["conflicts"]
    sides = [clash["a"]["agents"], clash["b"]["agents"]]
    assert ["driver", "scout"] in sides and ["medic"] in sides


async def test_known_at_answers_with_what_the_memory_held_then(client: Client) -> None:
    with anyio.fail_after(30):
        berlin = await fact(
            client, "Alice", "lives in", "Berlin", text="Alice moved to Berlin.",
            fact={"valid_from": "2024-03-01"},
        )  # fmt: skip
        time.sleep(0.01)
        t = iso(utc_now())
        time.sleep(0.01)
        lisbon = await fact(
            client, "Alice", "lives in", "Lisbon",
            text="Alice has lived in Lisbon since September.", fact={"valid_from": "2024-09-01"},
        )  # fmt: skip
        true_then = await ok(client, "recall", query="Where does Alice live?", as_of=t)
        held_then = await ok(client, "recall", query="Where does Alice live?", known_at=t)
        both = await ok(client, "recall", query="Where does Alice live?", as_of=t, known_at=t)
        cited_then = await ok(client, "cite_evidence", id=berlin, known_at=t)
        cited_now = await ok(client, "cite_evidence", id=berlin)
        conflicts_then = await ok(client, "find_conflicts", known_at=t)
        bad = await error(client, "recall", query="Alice", known_at="last Tuesday")
    assert ids(true_then) == [lisbon]
    assert ids(held_then) == [berlin] and ids(both) == [berlin]
    assert cited_then.get("superseded_by", []) == []
    assert cited_then["observation"].get("valid_until") is None
    assert cited_now["superseded_by"] == [lisbon]
    assert "recorded" in cited_now["citation"]
    assert conflicts_then["count"] == 0
    assert bad.startswith("Error executing tool recall: known_at")


async def test_forget_by_one_of_two_believers_withdraws_only_its_belief(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "memory", agent="driver")  # this server's agent
    with anyio.fail_after(30):
        async with Client(create_server(settings)) as client:
            first = await ok(client, "remember", text="Gulls nest on the pier.", agent="scout")
            await ok(client, "remember", text="Gulls nest on the pier.")  # driver's belief
            gone = await ok(client, "forget", id=first["observation_id"])
            again = await ok(client, "forget", id=first["observation_id"])
            mine = await ok(client, "recall", query="gulls", agent="driver")
            theirs = await ok(client, "recall", query="gulls", agent="scout")
            cited = await ok(client, "cite_evidence", id=first["observation_id"])
    assert gone["kept_for"] == ["scout"] and not gone.get("already")
    assert again["already"] is True
    assert mine["results"] == [] and ids(theirs) == [first["observation_id"]]
    assert [b["agent"] for b in cited["believers"]] == ["scout"]
    assert [b["agent"] for b in cited["withdrawn"]] == ["driver"]


async def test_forget_of_a_plan_another_agent_called_off_keeps_it_for_nobody(
    tmp_path: Path,
) -> None:
    settings = hash_settings(tmp_path / "memory", agent="driver")  # this server's agent
    october = "2026-10-05T09:00:00Z"
    move = {"text": "Sam moves to Munich.", "fact": {"valid_from": "2030-01-10"}}
    with anyio.fail_after(30):
        async with Client(create_server(settings)) as client:
            await fact(client, "Sam", "lives in", "Berlin", observed_at=october)
            plan = await fact(client, "Sam", "lives in", "Munich", observed_at=october, **move)
            await fact(
                client, "Sam", "lives in", "Munich", agent="driver", observed_at=october, **move
            )
            await fact(
                client, "Sam", "lives in", "Munich", text="Sam's move to Munich is off.",
                observed_at="2026-12-03T09:00:00Z", fact={"valid_until": "2026-12-03T09:00:00Z"},
            )  # fmt: skip
            gone = await ok(client, "forget", id=plan)
            theirs = await ok(client, "recall", query="Sam", agent="scout", as_of="2030-06-01")
    assert "kept_for" not in gone and gone["belief_ids"]
    assert [r["text"] for r in theirs["results"] if r.get("current", True)] == [
        "Sam lives in Berlin."
    ]


async def test_an_agent_filter_filters_orders_and_shows_by_that_agents_own_confidence(
    tmp_path: Path,
) -> None:
    settings = hash_settings(tmp_path / "memory")
    record = {"type": "Invoice", "fields": {"invoice_id": 98, "total": 3.98}}
    seen: list[dict[str, Any]] = []
    with anyio.fail_after(60):
        for restart in (False, True):  # as remembered, and as loaded at a start
            async with Client(create_server(settings)) as client:
                if not restart:
                    first = await ok(
                        client, "remember", record=record, agent="alice", confidence="0.9"
                    )
                    await ok(client, "remember", record=record, agent="bob", confidence="0.6")
                    await ok(client, "remember", text="Invoice 97 is paid.", agent="bob")
                bobs = await ok(
                    client, "recall", query="invoice", agent="bob", min_confidence="0.7"
                )
                alices = await ok(
                    client, "recall", query="invoice", agent="alice", min_confidence="0.7"
                )
                ordered = await ok(
                    client, "recall", query="invoice", agent="bob", order_by="confidence"
                )
                seen.append({"bob": bobs, "alice": alices, "ordered": ordered})
    for found in seen:
        assert [r["text"] for r in found["bob"]["results"]] == ["Invoice 97 is paid."]
        assert ids(found["alice"]) == [first["observation_id"]]
        assert found["alice"]["results"][0]["confidence"] == "0.9"
        assert [r["confidence"] for r in found["ordered"]["results"]] == ["1", "0.6"]


async def test_after_retracting_the_newer_fact_the_older_one_names_no_superseder(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        paris = await fact(client, "Alice", "lives in", "Paris", observed_at="2024-05-01")
        berlin = await fact(client, "Alice", "lives in", "Berlin", observed_at="2024-06-01")
        before = await ok(client, "cite_evidence", id=paris)
        await ok(client, "forget", id=berlin)
        after = await ok(client, "cite_evidence", id=paris)
        found = await ok(client, "recall", query="Alice lives in", limit=1)
    assert before["superseded_by"] == [berlin] and berlin in before["citation"]
    assert after.get("superseded_by", []) == [] and berlin not in after["citation"]
    assert after["observation"].get("valid_until") is None
    assert ids(found) == [paris] and found["results"][0].get("current", True)


async def test_retracting_the_middle_of_a_chain_ends_the_first_where_the_last_begins(
    client: Client,
) -> None:
    # Bonn ended Athens and Cork ended Bonn. Without Bonn, Athens ran until Cork began: it
    # came back with no end, beside Cork, as two current homes and a clash with itself.
    with anyio.fail_after(30):
        athens = await fact(client, "Jo", "lives in", "Athens", fact={"valid_from": "2024-01-01"})
        bonn = await fact(client, "Jo", "lives in", "Bonn", fact={"valid_from": "2024-03-01"})
        cork = await fact(client, "Jo", "lives in", "Cork", fact={"valid_from": "2024-06-01"})
        await ok(client, "forget", id=bonn)
        now = await ok(client, "recall", query="", subject="Jo", predicate="lives in")
        april = await ok(
            client, "recall", query="", subject="Jo", predicate="lives in", as_of="2024-04-01"
        )
        cited = await ok(client, "cite_evidence", id=athens)
        about = await ok(client, "about", name="Jo")
    assert ids(now) == [cork] and ids(april) == [athens]
    assert cited["superseded_by"] == [cork]
    assert cited["observation"]["valid_until"] == "2024-06-01T00:00:00Z"
    assert about.get("conflicts", []) == []


async def test_sharing_another_agents_newer_fact_ends_the_agents_own_older_one(
    client: Client,
) -> None:
    # bob believed alice's Berlin, and his own Paris stayed current beside it.
    with anyio.fail_after(30):
        paris = await fact(
            client, "Alice", "lives in", "Paris", agent="bob", fact={"valid_from": "2024-01-01"}
        )
        berlin = await fact(
            client, "Alice", "lives in", "Berlin", agent="alice", fact={"valid_from": "2024-06-01"}
        )
        shared = await ok(
            client,
            "remember",
            text="Alice lives in Berlin.",
            agent="bob",
            fact={"subject": "Alice", "predicate": "lives in", "object": "Berlin"}
            | {"valid_from": "2024-06-01"},
        )
        bobs = await ok(client, "recall", query="", subject="Alice", agent="bob")
        cited = await ok(client, "cite_evidence", id=paris)
    assert shared["observation_id"] == berlin and shared["shared_with"] == ["alice"]
    assert shared["superseded"] == [paris]
    assert ids(bobs) == [berlin]
    assert cited["superseded_by"] == [berlin]


async def test_a_late_fact_that_ended_on_its_own_is_superseded_by_nothing(
    client: Client,
) -> None:
    # Madrid ended in 2019 as told; Paris began in 2020 and cut nothing of it.
    with anyio.fail_after(30):
        paris = await fact(client, "Ann", "lives in", "Paris", fact={"valid_from": "2020-01-01"})
        lisbon = await fact(client, "Ann", "lives in", "Lisbon", fact={"valid_from": "2019-09-01"})
        madrid = await fact(
            client,
            "Ann",
            "lives in",
            "Madrid",
            fact={"valid_from": "2018-01-01", "valid_until": "2019-06-01"},
        )
        rome = await fact(client, "Ann", "lives in", "Rome", fact={"valid_from": "2017-01-01"})
        cited = {o: await ok(client, "cite_evidence", id=o) for o in (madrid, rome, lisbon)}
    assert cited[madrid].get("superseded_by", []) == []
    assert cited[madrid]["observation"]["valid_until"] == "2019-06-01T00:00:00Z"
    # Rome ran until Madrid began, and only Madrid cut it.
    assert cited[rome]["superseded_by"] == [madrid]
    assert cited[lisbon]["superseded_by"] == [paris]


async def test_another_agent_shares_only_a_fact_that_holds_unended_when_its_own_starts(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        new = await fact(client, "order 2", "status", "new", text="Order 2 is new.", agent="alice")
        await fact(client, "order 2", "status", "paid", text="Order 2 is paid.", agent="alice")
        # alice's "new" was replaced: dave's own "new" since 2020 is another claim.
        since = await ok(
            client,
            "remember",
            text="Order 2 is new.",
            agent="dave",
            fact={"subject": "order 2", "predicate": "status", "object": "new"}
            | {"valid_from": "2020-01-01T00:00:00Z"},
        )
        daves = await ok(client, "recall", query="order 2", agent="dave")
        clashes = await ok(client, "find_conflicts", agent="dave")
        lake = await fact(client, "lake", "state", "frozen", agent="alice")
        ended = await fact(
            client, "lake", "state", "frozen", agent="dave", fact={"valid_until": "2099-01-01"}
        )
        later = await ok(
            client,
            "remember",
            text="lake state frozen.",
            agent="carol",
            fact={"subject": "lake", "predicate": "state", "object": "frozen"},
        )
    assert since["observation_id"] != new and "shared_with" not in since
    assert ids(daves) == [since["observation_id"]]
    assert [c["kind"] for c in clashes["conflicts"]] == ["clash"]
    assert ended != lake  # dave says when it ends; alice's fact has no end
    assert later["observation_id"] == lake and later["shared_with"] == ["alice"]


async def test_sharing_a_fact_does_to_the_agents_own_facts_what_its_own_fact_would(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        # bob held Paris with carol: believing alice's Berlin withdraws his belief only.
        paris = await fact(client, "Alice", "lives in", "Paris", agent="bob")
        await fact(client, "Alice", "lives in", "Paris", agent="carol")
        later, year_after = {"valid_from": f"{LATER}-01-01"}, {"valid_from": f"{LATER + 1}-01-01"}
        berlin = await fact(client, "Alice", "lives in", "Berlin", agent="alice", fact=later)
        shared = await fact(client, "Alice", "lives in", "Berlin", agent="bob", fact=later)
        # dave moves to Tokyo a year after erin's Oslo begins: hers is, for dave, his own
        # until then.
        tokyo = await fact(client, "Dan", "lives in", "Tokyo", agent="dave", fact=year_after)
        oslo = await fact(client, "Dan", "lives in", "Oslo", agent="erin", fact=later)
        daves = await ok(
            client,
            "remember",
            text="Dan lives in Oslo.",
            agent="dave",
            fact={"subject": "Dan", "predicate": "lives in", "object": "Oslo"} | later,
        )
        late = f"{LATER}-06-01T00:00:00Z"
        bobs = await ok(client, "recall", query="", subject="Alice", agent="bob", as_of=late)
        # Paris held for bob until his Berlin began.
        bobs_before = await ok(
            client, "recall", query="", subject="Alice", agent="bob", as_of=f"{LATER - 1}-06-01"
        )
        paris_cited = await ok(client, "cite_evidence", id=paris)
        carols = await ok(client, "recall", query="", subject="Alice", agent="carol", as_of=late)
        erins = await ok(client, "recall", query="", subject="Dan", as_of=f"{LATER + 2}-01-01")
        cited = await ok(client, "cite_evidence", id=daves["observation_id"])
    assert shared == berlin
    assert ids(bobs) == [berlin] and ids(carols) == [paris]
    assert ids(bobs_before) == [paris]
    assert [(b["agent"], b.get("until")) for b in paris_cited["withdrawn"]] == [
        ("bob", f"{LATER}-01-01T00:00:00Z")
    ]
    assert daves["observation_id"] != oslo and "shared_with" not in daves
    assert cited["superseded_by"] == [tokyo]
    assert cited["observation"]["valid_until"] == f"{LATER + 1}-01-01T00:00:00Z"
    assert set(ids(erins)) == {oslo, tokyo}  # erin's Oslo holds on, dave's ended


async def test_a_link_a_share_or_a_forget_makes_later_is_not_seen_at_an_earlier_known_at(
    client: Client,
) -> None:
    # Such a link counted from its newer fact's record time: a view of before it was made
    # lost bob's Berlin (and the clash), and Athens named Cork as its superseder.
    with anyio.fail_after(30):
        berlin = await fact(client, "Zed", "lives in", "Berlin", agent="bob",
                            fact={"valid_from": "2024-02-01"})  # fmt: skip
        paris = await fact(client, "Zed", "lives in", "Paris", agent="alice",
                           fact={"valid_from": "2024-03-01"})  # fmt: skip
        athens = await fact(client, "Jo", "lives in", "Athens", fact={"valid_from": "2024-01-01"})
        bonn = await fact(client, "Jo", "lives in", "Bonn", fact={"valid_from": "2024-03-01"})
        cork = await fact(client, "Jo", "lives in", "Cork", fact={"valid_from": "2024-06-01"})
        time.sleep(0.01)
        t = iso(utc_now())
        time.sleep(0.01)
        shared = await fact(client, "Zed", "lives in", "Paris", agent="bob",
                            fact={"valid_from": "2024-03-01"})  # fmt: skip
        await ok(client, "forget", id=bonn)
        zed_then = await ok(client, "recall", query="", subject="Zed", known_at=t)
        clashes_then = await ok(client, "find_conflicts", known_at=t)
        athens_then = await ok(client, "cite_evidence", id=athens, known_at=t)
        athens_now = await ok(client, "cite_evidence", id=athens)
        jo_then = await ok(client, "about", name="Jo", known_at=t)
        zed_now = await ok(client, "about", name="Zed")
        berlin_then = await ok(client, "cite_evidence", id=berlin, known_at=t)
        berlin_now = await ok(client, "cite_evidence", id=berlin)
    assert shared == paris
    assert set(ids(zed_then)) == {berlin, paris}
    assert clashes_then["count"] == 1
    assert athens_then["superseded_by"] == [bonn]
    assert athens_then["observation"]["valid_until"] == "2024-03-01T00:00:00Z"
    assert athens_now["superseded_by"] == [cork]
    ended = [e for e in jo_then["timeline"] if e["event"] == "superseded"]
    assert [e["by"] for e in ended] == [bonn, cork]
    [bobs] = [e for e in zed_now["timeline"] if e["event"] == "superseded"]
    assert bobs["recorded"] > t  # recorded when bob came to share Paris
    assert berlin_then.get("supersession_chain", []) == []
    assert [c["observation_id"] for c in berlin_now["supersession_chain"]] == [paris]
    [line] = [x for x in berlin_now["citation"].splitlines() if x.startswith("- superseded by")]
    assert line.split("recorded ")[1].rstrip(")") > t  # the share's time, not Paris's


async def test_a_links_record_time_is_kept_across_a_restart(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "memory")
    with anyio.fail_after(30):
        async with Client(create_server(settings)) as client:
            since = {"valid_from": "2024-03-01"}
            berlin = await fact(
                client, "Zed", "lives in", "Berlin", agent="bob", fact={"valid_from": "2024-02-01"}
            )
            paris = await fact(client, "Zed", "lives in", "Paris", agent="alice", fact=since)
            time.sleep(0.01)
            t = iso(utc_now())
            time.sleep(0.01)
            await fact(client, "Zed", "lives in", "Paris", agent="bob", fact=since)
        async with Client(create_server(settings)) as client:
            then = await ok(client, "recall", query="", subject="Zed", known_at=t)
            now = await ok(client, "recall", query="", subject="Zed")
    assert set(ids(then)) == {berlin, paris} and ids(now) == [paris]


async def test_a_fact_that_began_before_the_agent_says_while_it_held_another_is_not_shared(
    client: Client,
) -> None:
    # b shared c's Oslo (since 2025) saying "from a later year", and its Paris ended only
    # then: from 2025 b held both, a clash of b with itself.
    with anyio.fail_after(30):
        oslo = await fact(client, "Alice", "lives in", "Oslo", agent="c",
                          fact={"valid_from": "2025-01-01"})  # fmt: skip
        paris = await fact(client, "Alice", "lives in", "Paris", agent="b",
                           fact={"valid_from": "2024-01-01"})  # fmt: skip
        bobs = await fact(client, "Alice", "lives in", "Oslo", agent="b",
                          fact={"valid_from": f"{LATER}-06-01"})  # fmt: skip
        in_2026 = await ok(client, "recall", query="", subject="Alice", agent="b",
                           as_of="2026-01-01")  # fmt: skip
        clashes = await ok(client, "find_conflicts", agent="b")
        cited = await ok(client, "cite_evidence", id=paris)
    assert bobs != oslo
    assert ids(in_2026) == [paris]
    assert cited["superseded_by"] == [bobs]
    # c's Oslo and b's Paris clash, b with c; never b with itself.
    assert all(not {*c["a"]["agents"]} & {*c["b"]["agents"]} for c in clashes["conflicts"])
    assert clashes["count"] == 1


async def test_a_fact_told_again_with_only_an_end_ends_it_and_the_news_comes_back(
    client: Client,
) -> None:
    """Sam's job and car, told in October; in December the agent tells, as the same facts
    with only an end, that Sam quit and sold the car on 10 November: neither is current any
    more (both stayed current, and the news was found only with include_superseded), the
    news comes back after what holds now, marked not current, and about says so."""
    with anyio.fail_after(30):
        await fact(client, "Sam", "works at", "Acme", observed_at="2026-10-05")
        car = await fact(client, "Sam", "owns", "VW Golf", observed_at="2026-10-05")
        await fact(client, "Sam", "lives in", "Lyon", observed_at="2026-10-05")
        sold = await ok(
            client,
            "remember",
            text="Sam sold his VW Golf.",
            agent="scout",
            observed_at="2026-12-03",
            fact={
                "subject": "Sam",
                "predicate": "owns",
                "object": "VW Golf",
                "valid_until": "2026-11-10",
            },
        )
        found = await ok(client, "recall", query="Does Sam still have his car?", subject="Sam")
        # Ten notes that only share a word with the question kept the news out of the
        # answer: what no longer held came after every current result.
        for i in range(12):
            await ok(client, "remember", text=f"Note {i}: does the printer still jam?")
        asked = await ok(client, "recall", query="Does Sam still have his VW Golf?")
        about = await ok(client, "about", name="Sam")
        back_then = await ok(
            client, "recall", query="", subject="Sam", predicate="owns", as_of="2026-10-20"
        )
    assert sold["superseded"] == [car]
    shown = {r["text"]: r.get("current", True) for r in found["results"]}
    assert shown == {
        "Sam works at Acme.": True,
        "Sam lives in Lyon.": True,
        "Sam sold his VW Golf.": False,
    }
    assert ("Sam sold his VW Golf.", False) in [
        (r["text"], r.get("current", True)) for r in asked["results"]
    ]
    assert "owns" not in about["facts"] and "VW Golf" not in about["summary"]
    assert {"event": "ended", "fact": "Sam owns VW Golf"}.items() <= next(
        e for e in about["timeline"] if e["event"] == "ended"
    ).items()
    # Back then Sam had it: the fact holds from when the agent's began, in the news's words.
    assert [(r["text"], r.get("current", True)) for r in back_then["results"]] == [
        ("Sam sold his VW Golf.", True)
    ]


async def test_a_fact_placed_before_one_begun_only_when_told_holds_from_its_words(
    client: Client,
) -> None:
    """ "My sister lives in Porto", told on 1 June, began only when told; "My sister moved
    to Lisbon in March", told on 10 June, holds from 1 March: as_of April and as_of 5 June
    answer Lisbon (it was news from 10 June), and known_at before it was told, Porto. Porto
    told from April is a start of its own: then Lisbon is news from 10 June."""
    sister = {"subject": "sister", "predicate": "lives in"}
    with anyio.fail_after(30):
        porto = await fact(
            client, "sister", "lives in", "Porto", text="My sister lives in Porto.",
            observed_at="2026-06-01T09:00:00Z",
        )  # fmt: skip
        time.sleep(0.01)
        t = iso(utc_now())
        time.sleep(0.01)
        told = await ok(
            client, "remember", text="My sister moved to Lisbon in March.", agent="scout",
            observed_at="2026-06-10T09:00:00Z", fact={**sister, "object": "Lisbon"},
        )  # fmt: skip
        april = await ok(client, "recall", query="", subject="sister", as_of="2026-04-15")
        june = await ok(client, "recall", query="", subject="sister", as_of="2026-06-05")
        believed = await ok(client, "recall", query="", subject="sister", known_at=t)
        about = await ok(client, "about", name="sister")
        await fact(
            client, "brother", "lives in", "Porto", text="My brother moved to Porto in April.",
            observed_at="2026-06-01T09:00:00Z",
        )  # fmt: skip
        news = await ok(
            client, "remember", text="My brother moved to Lisbon in March.", agent="scout",
            observed_at="2026-06-10T09:00:00Z",
            fact={"subject": "brother", "predicate": "lives in", "object": "Lisbon"},
        )  # fmt: skip
        brother = await ok(client, "recall", query="", subject="brother", as_of="2026-06-05")
    lisbon = told["observation_id"]
    assert told["superseded"] == [porto] and told["replaced"] == ["sister lives in Porto"]
    assert ids(april) == [lisbon] and ids(june) == [lisbon]
    assert ids(believed) == [porto]
    assert [f["object"] for f in about["facts"]["lives_in"]] == ["Lisbon"]
    assert news.get("superseded_by", []) == []
    assert [r["text"] for r in brother["results"]] == ["My brother moved to Porto in April."]


async def test_a_plan_told_again_with_an_end_before_it_begins_is_cancelled(
    client: Client,
) -> None:
    """ "We fly to Lisbon from 10 to 17 January", then the trip is called off: the same
    fact told again with only an end now (before the plan begins) cancels it. The plan
    stayed intact (as_of 12 January found it current) and the news was a fact of its own;
    now it holds at no time, the news comes back not current, about's timeline says it was
    superseded and when that was told, and known_at before the cancellation still has the
    plan; the same call retried is a repeat. An end a clock's skew ahead is taken as now
    (the trip held from the call to then)."""
    trip = {"subject": "we", "predicate": "trip_to", "object": "Lisbon"}
    plan = {**trip, "valid_from": f"{LATER}-01-10", "valid_until": f"{LATER}-01-17"}
    with anyio.fail_after(30):
        lisbon = await ok(
            client, "remember", text="We fly to Lisbon from 10 to 17 January.", agent="scout",
            fact=plan,
        )  # fmt: skip
        time.sleep(0.01)
        t = iso(utc_now())
        time.sleep(0.01)
        off = {**trip, "valid_until": iso(utc_now())}
        backwards = await error(
            client, "remember", text="The Lisbon trip is cancelled.", agent="scout",
            fact={**off, "valid_from": f"{LATER}-01-10"},
        )  # fmt: skip
        cancelled = await ok(
            client, "remember", text="The Lisbon trip is cancelled.", agent="scout", fact=off
        )
        retried = await ok(
            client, "remember", text="The Lisbon trip is cancelled.", agent="scout", fact=off
        )
        now = await ok(client, "recall", query="Lisbon trip", subject="we")
        then = await ok(client, "recall", query="", subject="we", as_of=f"{LATER}-01-12")
        believed = await ok(client, "recall", query="", subject="we", known_at=t)
        about = await ok(client, "about", name="we")
        oslo = await ok(
            client, "remember", text="We fly to Oslo in March.", agent="scout",
            fact={**trip, "object": "Oslo", "valid_from": f"{LATER}-03-02"},
        )  # fmt: skip
        ahead = {**trip, "object": "Oslo", "valid_until": iso(utc_now() + timedelta(minutes=1))}
        called_off = await ok(client, "remember", text="Oslo is off.", agent="scout", fact=ahead)
        again = await ok(client, "remember", text="Oslo is off.", agent="scout", fact=ahead)
        march = await ok(client, "recall", query="", subject="we", as_of=f"{LATER}-03-05")
        today = await ok(client, "recall", query="", subject="we")
    plan_id, news = lisbon["observation_id"], cancelled["observation_id"]
    # Its end before its start, given together, is refused, saying how to cancel.
    assert backwards.endswith(
        "fact.valid_until must be later than fact.valid_from; to end or cancel a fact told"
        " before, tell it again with only fact.valid_until (now, to cancel a plan)"
    )
    assert cancelled["superseded"] == [plan_id]
    assert retried["observation_id"] == news and retried.get("duplicate_of")
    assert [(r["text"], r.get("current", True)) for r in now["results"]] == [
        ("The Lisbon trip is cancelled.", False)
    ]
    assert [r["text"] for r in then["results"] if r.get("current", True)] == []
    assert [(r["text"], r.get("current", True)) for r in believed["results"]] == [
        ("We fly to Lisbon from 10 to 17 January.", False)
    ]
    assert "trip_to" not in about.get("facts", {})
    events = [(e["event"], e["observation_id"]) for e in about["timeline"]]
    assert ("started", plan_id) not in events and ("superseded", plan_id) in events
    # An end a clock's skew ahead is now.
    assert called_off["superseded"] == [oslo["observation_id"]]
    assert again["observation_id"] == called_off["observation_id"]
    for found in (march, today):
        assert [r["text"] for r in found["results"] if r.get("current", True)] == []


async def test_a_cancelled_plan_gives_back_the_fact_it_would_have_ended(tmp_path: Path) -> None:
    """Sam lives in Berlin; a move to Munich from a later January ends Berlin there; the move
    is called off (the plan told again with only an end now). The plan holds at no time, so
    it ends nothing: Berlin holds on past January (it had ended there, and as_of June found
    Sam living nowhere), as remembered and after a restart; at a known_at before the
    cancellation the plan holds as told then. Forgetting the cancellation gives the plan
    back, and with it Berlin's end in January."""
    settings = hash_settings(tmp_path / "memory")
    move = {"subject": "Sam", "predicate": "lives in", "object": "Munich"}
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            berlin = await fact(client, "Sam", "lives in", "Berlin", observed_at="2026-05-01")
            planned = await ok(
                client, "remember", text=f"Sam moves to Munich on 10 January {LATER}.",
                agent="scout", fact={**move, "valid_from": f"{LATER}-01-10"},
            )  # fmt: skip
            time.sleep(0.01)
            before = iso(utc_now())
            time.sleep(0.01)
            cancelled = await ok(
                client, "remember", text="Sam's move to Munich is off.", agent="scout",
                fact={**move, "valid_until": iso(utc_now())},
            )  # fmt: skip
            june = await ok(client, "recall", query="", subject="Sam", as_of=f"{LATER}-06-01")
            held = await ok(
                client, "recall", query="", subject="Sam", as_of=f"{LATER}-06-01", known_at=before
            )
        async with Client(create_server(settings)) as client:
            after_start = await ok(
                client, "recall", query="", subject="Sam", as_of=f"{LATER}-06-01"
            )
            about = await ok(client, "about", name="Sam", as_of=f"{LATER}-06-01")
            cited = await ok(client, "cite_evidence", id=berlin)
            await ok(client, "forget", id=cancelled["observation_id"])
            back = await ok(client, "recall", query="", subject="Sam", as_of=f"{LATER}-06-01")
            now = await ok(client, "recall", query="", subject="Sam")
    plan = planned["observation_id"]
    assert planned["superseded"] == [berlin]
    assert cancelled["superseded"] == [plan]

    def current(found: dict[str, Any]) -> list[str]:
        return [r["observation_id"] for r in found["results"] if r.get("current", True)]

    assert current(june) == [berlin] and current(after_start) == [berlin]
    assert current(held) == [plan]
    assert [f["object"] for f in about["facts"]["lives_in"]] == ["Berlin"]
    assert "valid_until" not in cited["observation"] and "superseded_by" not in cited
    assert current(back) == [plan] and current(now) == [berlin]


async def test_a_plan_two_agents_hold_called_off_by_one_is_withdrawn_for_it_alone(
    tmp_path: Path,
) -> None:
    """scout has Sam living in Berlin; scout and driver tell his move to Munich from a later
    January; scout calls it off. For scout the plan holds at no time and Berlin holds on past
    January, clashing with driver's plan there; driver still holds the plan; at a known_at
    before the cancellation scout held it; after a restart alike. Forgetting the
    cancellation gives scout the plan back."""
    settings = hash_settings(tmp_path / "memory")
    move = {"subject": "Sam", "predicate": "lives in", "object": "Munich"}
    text = f"Sam moves to Munich on 10 January {LATER}."
    june = {"query": "", "subject": "Sam", "as_of": f"{LATER}-06-01"}
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            berlin = await fact(client, "Sam", "lives in", "Berlin", observed_at="2026-05-01")
            planned = [
                await ok(
                    client,
                    "remember",
                    text=text,
                    agent=agent,
                    fact={**move, "valid_from": f"{LATER}-01-10"},
                )
                for agent in ("scout", "driver")
            ]
            time.sleep(0.01)
            before = iso(utc_now())
            time.sleep(0.01)
            cancelled = await ok(
                client, "remember", text="Sam's move to Munich is off.", agent="scout",
                fact={**move, "valid_until": iso(utc_now())},
            )  # fmt: skip
            held = await ok(client, "recall", agent="scout", known_at=before, **june)
            seen = {a: await ok(client, "recall", agent=a, **june) for a in ("scout", "driver")}
        async with Client(create_server(settings)) as client:
            again = {a: await ok(client, "recall", agent=a, **june) for a in ("scout", "driver")}
            cited = await ok(client, "cite_evidence", id=planned[0]["observation_id"])
            await ok(client, "forget", id=cancelled["observation_id"])
            back = await ok(client, "recall", agent="scout", **june)
    plan = planned[0]["observation_id"]
    assert planned[1]["observation_id"] == plan
    assert "superseded" not in cancelled and cancelled["conflicts"] == [plan]

    def current(found: dict[str, Any]) -> list[str]:
        return [r["observation_id"] for r in found["results"] if r.get("current", True)]

    for views in (seen, again):
        assert current(views["scout"]) == [berlin] and current(views["driver"]) == [plan]
        [lives] = [r for r in views["scout"]["results"] if r["observation_id"] == berlin]
        assert lives["conflicts"] == [plan]
    assert current(held) == [plan]
    assert [b["agent"] for b in cited["believers"]] == ["driver"]
    assert current(back) == [plan]
