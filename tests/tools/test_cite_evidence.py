"""The ``cite_evidence`` tool, driven through a real in-memory MCP client."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from calls import LATER, error, ok, seed_bridge
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory

pytestmark = pytest.mark.anyio

ISO_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")

HOSTILE = [
    "x'); MATCH (n) DETACH DELETE n; //",
    '" OR 1=1 --',
    "id IN ('a') OR TRUE",
    "Ünïcödé ✓ 🧠\nnew line",
]


def alice(city: str, observed_at: str) -> dict[str, Any]:
    return {
        "text": f"Alice lives in {city}.",
        "agent": "a",
        "observed_at": observed_at,
        "fact": {"subject": "Alice", "predicate": "lives in", "object": city},
    }


async def test_citing_a_belief_shows_evidence_believers_and_contradictions(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        cited = await ok(client, "cite_evidence", id=ids["closed_belief"])
    observation = cited["observation"]
    assert observation["observation_id"] == ids["closed"]
    assert observation["belief_id"] == ids["closed_belief"]
    assert observation["text"] == "The bridge on Route 9 is closed for repairs."
    assert observation["confidence"] == "0.9"
    assert observation["observed_at"] == "2024-05-01T06:00:00Z"
    assert observation["source"] == "radio report"
    assert observation["episode"] == "morning-briefing"
    assert observation["topics"] == ["bridge", "route-9"]
    # kind "observation" and no retraction are the defaults: left out
    assert "kind" not in observation
    assert "retracted_at" not in observation
    [believer] = cited["believers"]
    assert believer["agent"] == "scout"
    assert believer["belief_id"] == ids["closed_belief"]
    assert ISO_Z.match(believer["since"])
    [evidence] = cited["evidence"]
    assert evidence["observation_id"] == ids["sign"]
    assert evidence["belief_id"] == ids["closed_belief"]
    assert evidence["weight"] == "0.6"
    assert evidence["confidence"] == "0.7"
    assert evidence["text"] == "A road sign says: bridge closed until Friday."
    assert "retracted" not in evidence
    [contradiction] = cited["contradictions"]
    assert contradiction["observation_id"] == ids["open"]
    assert contradiction["text"] == "The bridge on Route 9 is open."
    assert contradiction["confidence"] == "0.8"
    assert "superseded_by" not in cited
    assert "unsupported" not in cited


async def test_citation_is_a_text_block_ready_to_paste(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        cited = await ok(client, "cite_evidence", id=ids["closed_belief"])
    citation = cited["citation"]
    assert citation.splitlines()[0] == (
        '"The bridge on Route 9 is closed for repairs." (confidence 0.9; observed '
        "2024-05-01T06:00:00Z; source: radio report)"
    )
    assert f"- believed by scout since {cited['believers'][0]['since']}" in citation
    assert '- evidence (weight 0.6): "A road sign says: bridge closed until Friday."' in citation
    assert '- contradicted by: "The bridge on Route 9 is open."' in citation


async def test_citing_an_observation_shows_every_believer(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        shared = await ok(
            client, "remember", text="The bridge on Route 9 is open.", agent="mayor",
            confidence="0.4",
        )  # fmt: skip
        cited = await ok(client, "cite_evidence", id=ids["open"])
    # The same text from another agent is its belief in the same observation.
    assert shared["observation_id"] == ids["open"] and shared["shared_with"] == ["driver"]
    assert "belief_id" not in cited["observation"]
    assert [(b["agent"], b["confidence"]) for b in cited["believers"]] == [
        ("driver", "0.8"),
        ("mayor", "0.4"),
    ]
    assert "evidence" not in cited
    assert [c["observation_id"] for c in cited["contradictions"]] == [ids["closed"]]


async def test_citing_evidence_shows_the_belief_it_supports(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        cited = await ok(client, "cite_evidence", id=ids["sign"])
        await ok(client, "forget", id=ids["closed"])
        after = await ok(client, "cite_evidence", id=ids["sign"])
    assert cited["supports"] == [
        {
            "belief_id": ids["closed_belief"],
            "agent": "scout",
            "observation_id": ids["closed"],
            "weight": "0.6",
        }
    ]
    # Its words name it too (they named evidence and contradictions only), and say when
    # what it supports was retracted.
    line = f"- evidence for scout's belief in {ids['closed']} (weight 0.6)"
    assert line in cited["citation"].splitlines()
    assert f"{line} (RETRACTED)" in after["citation"].splitlines()


async def test_unsupported_lists_the_agents_beliefs_without_evidence(client: Client) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(client)
        scout = await ok(client, "cite_evidence", agent="scout", unsupported=True)
        driver = await ok(client, "cite_evidence", agent="driver", unsupported=True)
        nobody = await ok(client, "cite_evidence", agent="nobody", unsupported=True)
    assert scout["agent"] == "scout"
    [sign] = scout["unsupported"]
    assert sign["belief_id"] == ids["sign_belief"]
    assert sign["observation_id"] == ids["sign"]
    assert sign["text"] == "A road sign says: bridge closed until Friday."
    assert sign["confidence"] == "0.7"
    assert ISO_Z.match(sign["since"])
    assert [u["belief_id"] for u in driver["unsupported"]] == [ids["open_belief"]]
    assert nobody["unsupported"] == []
    assert "observation" not in scout


async def test_unsupported_of_an_agent_that_believes_nothing_says_so(client: Client) -> None:
    # "count": 0 alone read as "every belief of scuot's has evidence": a typo looked like a
    # clean bill, where recall and find_conflicts name the agents the memory has.
    with anyio.fail_after(30):
        await seed_bridge(client)
        typo = await ok(client, "cite_evidence", agent="scuot", unsupported=True)
        scout = await ok(client, "cite_evidence", agent="scout", unsupported=True)
    assert typo["count"] == 0
    assert typo["note"] == (
        "no agent 'scuot' believes anything; agents: scout (or leave agent out)"
    )
    assert "note" not in scout


async def test_retracted_evidence_supports_nothing_and_is_cited_as_retracted(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        lake = await ok(client, "remember", text="The lake is frozen.", agent="alice")
        ranger = await ok(
            client,
            "remember",
            text="A ranger confirmed the ice is thick.",
            agent="carol",
            supports=[{"belief_id": lake["belief_id"], "weight": "0.8"}],
        )
        thaw = await ok(
            client,
            "remember",
            text="The lake thawed today.",
            agent="dave",
            contradicts=[lake["observation_id"]],
        )
        supported = await ok(client, "cite_evidence", agent="alice", unsupported=True)
        await ok(client, "forget", id=ranger["observation_id"])
        await ok(client, "forget", id=thaw["observation_id"])
        bare = await ok(client, "cite_evidence", agent="alice", unsupported=True)
        cited = await ok(client, "cite_evidence", id=lake["observation_id"])
        # Another agent's own, lower confidence in the same observation is its own.
        await ok(client, "remember", text="The lake is frozen.", agent="bob", confidence="0.4")
        bobs = await ok(client, "cite_evidence", agent="bob", unsupported=True)
    assert supported["unsupported"] == []
    assert [u["belief_id"] for u in bare["unsupported"]] == [lake["belief_id"]]
    assert '"A ranger confirmed the ice is thick." (confidence 1; RETRACTED)' in cited["citation"]
    assert '- contradicted by: "The lake thawed today." (RETRACTED)' in cited["citation"]
    assert [u["confidence"] for u in bobs["unsupported"]] == ["0.4"]


async def test_evidence_of_weight_zero_supports_nothing(client: Client) -> None:
    with anyio.fail_after(30):
        lake = await ok(client, "remember", text="The lake is frozen.", agent="alice")
        await ok(
            client,
            "remember",
            text="Someone said the ice might hold.",
            agent="carol",
            supports=[{"belief_id": lake["belief_id"], "weight": "0"}],
        )
        bare = await ok(client, "cite_evidence", agent="alice", unsupported=True)
        await ok(
            client,
            "remember",
            text="A ranger confirmed the ice is thick.",
            agent="carol",
            supports=[{"belief_id": lake["belief_id"], "weight": "0.000000000000000001"}],
        )
        supported = await ok(client, "cite_evidence", agent="alice", unsupported=True)
    assert [u["belief_id"] for u in bare["unsupported"]] == [lake["belief_id"]]
    assert supported["unsupported"] == []


async def test_unsupported_leaves_out_a_fact_that_has_ended(client: Client) -> None:
    # A review listed Paris, replaced by Lyon, and a trip over since, as beliefs "that still
    # lack evidence": history wants none.
    def alice(text: str, obj: str, **times: str) -> dict[str, Any]:
        fact = {"subject": "Alice", "predicate": "lives in", "object": obj, **times}
        return {"text": text, "agent": "scout", "fact": fact}

    paris = await ok(client, "remember", **alice("Alice lives in Paris.", "Paris"))
    before = datetime.now(UTC).isoformat()
    lyon = await ok(client, "remember", **alice("Alice lives in Lyon.", "Lyon"))
    trip = {"subject": "Alice", "predicate": "visits", "object": "Rome"}
    await ok(
        client,
        "remember",
        text="Alice visited Rome in May 2024.",
        agent="scout",
        fact=trip | {"valid_from": "2024-05-01T00:00:00Z", "valid_until": "2024-06-01T00:00:00Z"},
    )
    plan = {"subject": "Alice", "predicate": "moves to", "object": "Oslo"}
    oslo = await ok(
        client,
        "remember",
        text=f"Alice moves to Oslo in {LATER}.",
        agent="scout",
        fact=plan | {"valid_from": f"{LATER}-01-01T00:00:00Z"},
    )
    now = await ok(client, "cite_evidence", agent="scout", unsupported=True)
    then = await ok(client, "cite_evidence", agent="scout", unsupported=True, known_at=before)
    assert [u["belief_id"] for u in now["unsupported"]] == [lyon["belief_id"], oslo["belief_id"]]
    assert [u["belief_id"] for u in then["unsupported"]] == [paris["belief_id"]]


async def test_unsupported_at_a_known_at_lists_what_was_held_unsupported_then(
    client: Client,
) -> None:
    # known_at was taken and dropped: the list was always today's.
    def now() -> str:
        return datetime.now(UTC).isoformat()

    with anyio.fail_after(30):
        berlin = await ok(client, "remember", text="Alice lives in Berlin.", agent="a")
        first = now()
        await ok(client, "forget", id=berlin["observation_id"])
        lake = await ok(client, "remember", text="The lake is frozen.", agent="a")
        second = now()
        await ok(
            client,
            "remember",
            text="A ranger confirmed the ice is thick.",
            agent="b",
            supports=[{"belief_id": lake["belief_id"], "weight": "0.8"}],
        )
        lists = [
            await ok(client, "cite_evidence", agent="a", unsupported=True, known_at=known)
            for known in (first, second, now())
        ]
        bad = await error(client, "cite_evidence", agent="a", unsupported=True, known_at="soon")
    assert [[u["text"] for u in found["unsupported"]] for found in lists] == [
        ["Alice lives in Berlin."],
        ["The lake is frozen."],
        [],
    ]
    assert "known_at must be an ISO 8601 time" in bad


async def test_a_citation_at_known_at_shows_no_end_a_later_fact_gave_a_belief(
    client: Client,
) -> None:
    # b's later Berlin withdrew its belief in the Paris it shares with a, ending it on the
    # 3rd; cited as known before Berlin, b held Paris with no end, as it was cited then.
    def paris(agent: str) -> dict[str, Any]:
        fact = {"subject": "Alice", "predicate": "lives in", "object": "Paris"}
        fact["valid_from"] = "2024-01-02T00:00:00Z"
        return {"text": "Alice lives in Paris.", "agent": agent, "fact": fact}

    with anyio.fail_after(30):
        shared = await ok(client, "remember", **paris("b"))
        await ok(client, "remember", **paris("a"))
        then = await ok(client, "cite_evidence", id=shared["observation_id"])
        known = datetime.now(UTC).isoformat()
        berlin = {**paris("b"), "text": "Alice lives in Berlin."}
        berlin["fact"] = {
            **berlin["fact"],
            "object": "Berlin",
            "valid_from": "2024-01-03T00:00:00Z",
        }
        await ok(client, "remember", **berlin)
        now = await ok(client, "cite_evidence", id=shared["observation_id"])
        again = await ok(client, "cite_evidence", id=shared["observation_id"], known_at=known)
    assert [b.get("until") for b in then["believers"]] == [None, None]
    assert now["withdrawn"][0]["until"] == "2024-01-03T00:00:00Z"
    assert again["believers"] == then["believers"] and "withdrawn" not in again


def lives(agent: str, subject: str, city: str, since: str) -> dict[str, Any]:
    fact = {"subject": subject, "predicate": "lives in", "object": city, "valid_from": since}
    return {"text": f"{subject} lives in {city}.", "agent": agent, "fact": fact}


async def told(client: Client, agent: str, subject: str, city: str, since: str) -> str:
    done = await ok(client, "remember", **lives(agent, subject, city, since))
    observation: str = done["observation_id"]
    return observation


async def test_a_withdrawn_beliefs_until_is_where_its_agents_facts_end_it_now(
    client: Client,
) -> None:
    # driver shared scout's Paris, then told Berlin from June, which withdrew its belief,
    # held until June, and Oslo from September. Rome from March, told late, ends it in March;
    # with Rome and then Berlin forgotten, Oslo ends it in September. Recall said so; the
    # citation's until said June throughout. Known before each change, it says what it did.
    def now() -> str:
        return datetime.now(UTC).isoformat()

    async def until(**known: str) -> str | None:
        cited = await ok(client, "cite_evidence", id=paris, **known)
        [gone] = cited["withdrawn"]
        assert gone["agent"] == "driver"
        end: str | None = gone.get("until")
        return end

    async def drivers(as_of: str) -> list[str]:
        found = await ok(client, "recall", query="", subject="Alice", agent="driver", as_of=as_of)
        return [r["observation_id"] for r in found["results"]]

    with anyio.fail_after(30):
        paris = await told(client, "scout", "Alice", "Paris", "2024-01-01")
        await told(client, "driver", "Alice", "Paris", "2024-01-01")
        berlin = await told(client, "driver", "Alice", "Berlin", "2024-06-01")
        await told(client, "driver", "Alice", "Oslo", "2024-09-01")
        known = [now()]
        rome = await told(client, "driver", "Alice", "Rome", "2024-03-01")
        known.append(now())
        in_april = await drivers("2024-04-01")
        ends = [await until()]
        await ok(client, "forget", id=rome)
        known.append(now())
        ends.append(await until())
        await ok(client, "forget", id=berlin)
        in_july = await drivers("2024-07-01")
        ends.append(await until())
        then = [await until(known_at=k) for k in known]
    assert in_april == [rome] and in_july == [paris]
    assert ends == ["2024-03-01T00:00:00Z", "2024-06-01T00:00:00Z", "2024-09-01T00:00:00Z"]
    assert then == ["2024-06-01T00:00:00Z", "2024-03-01T00:00:00Z", "2024-06-01T00:00:00Z"]


async def test_unsupported_lists_a_withdrawn_belief_while_its_agents_facts_hold_it(
    client: Client,
) -> None:
    # driver shared scout's Paris and told Berlin from 2999, then Rome from 2024-03 (told
    # late): Paris is not driver's now, but was listed until 2999. driver shared scout's
    # Lisbon, told Porto from 2024-06 and Faro from 2999, and forgot Porto: Lisbon is
    # driver's until 2999, and was not listed. With Faro forgotten too, driver holds Lisbon
    # again, and Braga from 2998 withdraws that belief too: it is listed once (twice).
    def now() -> str:
        return datetime.now(UTC).isoformat()

    async def listed(**known: str) -> list[str]:
        found = await ok(client, "cite_evidence", agent="driver", unsupported=True, **known)
        return [u["observation_id"] for u in found["unsupported"] if u["observation_id"] in shared]

    with anyio.fail_after(30):
        paris = await told(client, "scout", "Alice", "Paris", "2024-01-01")
        await told(client, "driver", "Alice", "Paris", "2024-01-01")
        await told(client, "driver", "Alice", "Berlin", "2999-01-01")
        known = [now()]
        await told(client, "driver", "Alice", "Rome", "2024-03-01")
        lisbon = await told(client, "scout", "Bob", "Lisbon", "2024-01-01")
        await told(client, "driver", "Bob", "Lisbon", "2024-01-01")
        porto = await told(client, "driver", "Bob", "Porto", "2024-06-01")
        faro = await told(client, "driver", "Bob", "Faro", "2999-01-01")
        known.append(now())
        shared = {paris, lisbon}
        await ok(client, "forget", id=porto)
        held = await listed()
        then = [await listed(known_at=k) for k in known]
        await ok(client, "forget", id=faro)
        again = [await listed()]
        recalled = await ok(client, "recall", query="", subject="Bob", agent="driver")
        await told(client, "driver", "Bob", "Braga", "2998-01-01")
        again.append(await listed())
    assert held == [lisbon]
    assert then == [[paris], []]
    assert [r["observation_id"] for r in recalled["results"]] == [lisbon]
    assert again == [[lisbon], [lisbon]]


async def test_unsupported_defaults_to_the_servers_agent(client: Client) -> None:
    with anyio.fail_after(30):
        done = await ok(client, "remember", text="Unverified rumour.")
        found = await ok(client, "cite_evidence", unsupported=True)
        # Empty once stripped is not given, as elsewhere ("   " was refused, "" was not).
        blank = [await ok(client, "cite_evidence", agent=a, unsupported=True) for a in ("", "  ")]
        # A blank id too: it was refused as given ("give either id ... not both").
        no_id = [await ok(client, "cite_evidence", id=i, unsupported=True) for i in ("", "  ")]
        refused = await error(client, "cite_evidence", id="  ")
    assert found["agent"] == "default"
    assert [u["observation_id"] for u in found["unsupported"]] == [done["observation_id"]]
    assert blank == no_id == [found, found]
    assert refused.endswith(
        "id: give an observation_id or belief_id to cite, or agent with unsupported=true"
    )


async def test_supersession_is_cited_both_ways(client: Client) -> None:
    with anyio.fail_after(30):
        paris = await ok(client, "remember", **alice("Paris", "2024-01-01"))
        berlin = await ok(client, "remember", **alice("Berlin", "2024-06-01"))
        old = await ok(client, "cite_evidence", id=paris["observation_id"])
        new = await ok(client, "cite_evidence", id=berlin["belief_id"])
    assert old["observation"]["kind"] == "fact"
    assert old["observation"]["subject"] == "Alice"
    assert old["observation"]["object"] == "Paris"
    assert old["observation"]["valid_from"] == "2024-01-01T00:00:00Z"
    assert old["observation"]["valid_until"] == "2024-06-01T00:00:00Z"
    assert old["superseded_by"] == [berlin["observation_id"]]
    assert [s["observation_id"] for s in old["supersession_chain"]] == [berlin["observation_id"]]
    assert f"- superseded by {berlin['observation_id']}" in old["citation"]
    assert "valid until 2024-06-01T00:00:00Z" in old["citation"]
    assert "superseded_by" not in new
    [older] = new["supersession_chain"]
    assert older["observation_id"] == paris["observation_id"]
    assert older["valid_until"] == "2024-06-01T00:00:00Z"


@pytest.mark.parametrize(
    "history",
    [
        [
            ("Paris", "2020-01-01"),
            ("Lyon", "2021-01-01"),
            ("Nice", "2022-01-01"),
            ("Berlin", "2023-01-01"),
            ("Rome", "2024-01-01"),
        ],
        [("Paris", "2024-01-01"), ("Berlin", "2024-06-01"), ("Lyon", "2024-03-01")],
    ],
    ids=["five-moves", "late-arrival"],
)
async def test_a_long_or_branching_supersession_chain_can_be_cited(
    settings: Settings, history: list[tuple[str, str]]
) -> None:
    # a small page cache: the chain is a handful of nodes, and the failure shows sooner
    small = settings.model_copy(
        update={"store": settings.store.model_copy(update={"buffer_pool_mb": 64})}
    )
    with anyio.fail_after(60):
        async with Client(create_server(small)) as client:
            ids = []
            for city, day in history:
                done = await ok(client, "remember", **alice(city, day))
                ids.append(done["observation_id"])
            cited = [await ok(client, "cite_evidence", id=i) for i in ids]
    for i, found in zip(ids, cited, strict=True):
        assert {s["observation_id"] for s in found["supersession_chain"]} == set(ids) - {i}


async def test_bad_requests_are_errors_naming_the_field(client: Client) -> None:
    with anyio.fail_after(30):
        both = await error(client, "cite_evidence", id="obs_x", agent="a", unsupported=True)
        neither = await error(client, "cite_evidence")
        unknown = await error(client, "cite_evidence", id="obs_0000000000000000")
        empty = await error(client, "cite_evidence", id=" ")
        # Given with an id, agent filtered nothing: the answer was the same for any agent.
        agent = await error(client, "cite_evidence", id="obs_x", agent="editor")
    assert "id: give either id, or agent with unsupported=true, not both" in both
    assert "id: give an observation_id or belief_id to cite, or agent with unsupported=true" in (
        neither
    )
    assert "id: no observation or belief with id 'obs_0000000000000000'" in unknown
    assert empty == neither  # blank: not given
    assert agent.endswith(
        "agent: names whose unsupported beliefs to list (with unsupported=true); a citation of"
        " an id names every believer: leave agent out"
    )


async def test_a_citation_before_its_belief_was_taken_is_refused_naming_it(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        first = await ok(client, "remember", text="The ferry is late.", agent="reader")
        between = datetime.now(UTC).isoformat()
        await anyio.sleep(0.01)
        shared = await ok(client, "remember", text="The ferry is late.", agent="editor")
        # editor's belief did not exist then: it was cited, itself not among the believers.
        late = await error(client, "cite_evidence", id=shared["belief_id"], known_at=between)
        held = await ok(client, "cite_evidence", id=first["belief_id"], known_at=between)
        early = await error(
            client, "cite_evidence", id=first["observation_id"], known_at="2000-01-01T00:00:00Z"
        )
    assert re.search(
        rf"known_at is before the belief '{shared['belief_id']}' was recorded \(\S+Z\): the"
        " memory did not hold it then$",
        late,
    ), late
    assert [b["agent"] for b in held["believers"]] == ["reader"]
    assert re.search(
        rf"known_at is before the observation '{first['observation_id']}' was recorded", early
    ), early


@pytest.mark.parametrize("hostile", HOSTILE)
async def test_hostile_ids_and_agents_are_data_and_touch_nothing(
    memory_client: Client, memory: Memory, hostile: str
) -> None:
    with anyio.fail_after(30):
        ids = await seed_bridge(memory_client)
        mine = await ok(memory_client, "remember", text="Mine.", agent=hostile)
        before = memory.stats()
        unknown = await error(memory_client, "cite_evidence", id=hostile)
        listed = await ok(memory_client, "cite_evidence", agent=hostile, unsupported=True)
        still = await ok(memory_client, "cite_evidence", id=ids["closed_belief"])
    assert f"id: no observation or belief with id {hostile!r}" in unknown
    assert listed["agent"] == hostile
    assert [u["observation_id"] for u in listed["unsupported"]] == [mine["observation_id"]]
    assert [e["weight"] for e in still["evidence"]] == ["0.6"]
    assert memory.stats() == before


async def test_long_lists_are_cut_and_counted(client: Client) -> None:
    # An agent of 10,000 memories, nearly none with evidence, got every one back (3.3 MB):
    # the first 100 are listed and `count` counts all; a citation lists 50 pieces of
    # evidence and words 10.
    with anyio.fail_after(60):
        [claim] = (await ok(client, "remember", memories=[{"text": "The pier is shut."}]))[
            "remembered"
        ]
        notes = [
            {
                "text": f"Harbour note {i}: the pier gate was locked.",
                "supports": [{"belief_id": claim["belief_id"], "weight": "0.5"}],
            }
            for i in range(55)
        ]
        notes += [{"text": f"Unchecked note {i}."} for i in range(60)]
        await ok(client, "remember", memories=notes)
        listed = await ok(client, "cite_evidence", unsupported=True)
        cited = await ok(client, "cite_evidence", id=claim["observation_id"])
    assert listed["count"] == 115 and len(listed["unsupported"]) == 100
    assert len(cited["evidence"]) == 50 and cited["unlisted"] == {"evidence": 5}
    assert cited["citation"].count("- evidence (weight 0.5)") == 10
    assert cited["citation"].endswith("- and 45 more evidence")


async def test_a_belief_held_until_its_agents_next_fact_takes_evidence(client: Client) -> None:
    # unsupported listed reader's Paris as a belief to check, and evidence for it was refused
    # ("no belief with id"): reader's Berlin from a later year had withdrawn it, held until then.
    paris = {
        "text": "Alice lives in Paris.",
        "fact": {"subject": "Alice", "predicate": "lives in", "object": "Paris",
                 "valid_from": "2024-01-01T00:00:00Z"},
    }  # fmt: skip
    with anyio.fail_after(30):
        held = await ok(client, "remember", agent="reader", **paris)
        await ok(client, "remember", agent="editor", **paris)
        await ok(
            client,
            "remember",
            text=f"Alice will move to Berlin in {LATER}.",
            agent="reader",
            fact={"subject": "Alice", "predicate": "lives in", "object": "Berlin",
                  "valid_from": f"{LATER}-01-01T00:00:00Z"},
        )  # fmt: skip
        listed = await ok(client, "cite_evidence", agent="reader", unsupported=True)
        bill = await ok(
            client,
            "remember",
            text="A Paris utility bill in Alice's name.",
            agent="checker",
            supports=[{"belief_id": held["belief_id"], "weight": "0.7"}],
        )
        after = await ok(client, "cite_evidence", agent="reader", unsupported=True)
        cited = await ok(client, "cite_evidence", id=held["belief_id"])
    assert held["belief_id"] in [u["belief_id"] for u in listed["unsupported"]]
    assert held["belief_id"] not in [u["belief_id"] for u in after["unsupported"]]
    assert [(e["observation_id"], e["weight"]) for e in cited["evidence"]] == [
        (bill["observation_id"], "0.7")
    ]


async def test_a_belief_its_agents_next_fact_has_ended_takes_no_evidence(client: Client) -> None:
    # Paris held for reader until Berlin began in 2022: unsupported does not list it now,
    # and evidence for it was taken.
    def lives(city: str, since: str) -> dict[str, Any]:
        return {
            "text": f"Alice lives in {city}.",
            "fact": {"subject": "Alice", "predicate": "lives in", "object": city,
                     "valid_from": since},
        }  # fmt: skip

    with anyio.fail_after(30):
        paris = await ok(client, "remember", agent="reader", **lives("Paris", "2020-01-01"))
        await ok(client, "remember", agent="editor", **lives("Paris", "2020-01-01"))
        await ok(client, "remember", agent="reader", **lives("Berlin", "2022-01-01"))
        listed = await ok(client, "cite_evidence", agent="reader", unsupported=True)
        refused = await error(
            client,
            "remember",
            text="An old Paris bill.",
            agent="checker",
            supports=[{"belief_id": paris["belief_id"], "weight": "0.5"}],
        )
    assert paris["belief_id"] not in [u["belief_id"] for u in listed["unsupported"]]
    assert f"supports[0].belief_id: no belief with id {paris['belief_id']!r}" in refused


async def test_a_citation_cuts_long_linked_texts_and_keeps_the_cited_one_whole(
    client: Client,
) -> None:
    """A design document with five long reviews as evidence and as contradictions made a
    citation of 270,000 characters (each review listed, then quoted again in the citation's
    words), past what clients pass a model: the linked texts share what the budget leaves
    beside the cited text, which stays whole, and the note says so."""
    words = " ".join(f"cache{i}" for i in range(1_500))  # 13,889 characters
    design = f"Caching design: {words}"
    cited = await ok(client, "remember", text=design)
    reviews = [f"Review {i} of the caching design: {words}" for i in range(5)]
    for review in reviews:
        await ok(
            client,
            "remember",
            text=review,
            agent="reviewer",
            supports=[{"belief_id": cited["belief_id"], "weight": "0.5"}],
            contradicts=[cited["observation_id"]],
        )
    found = await ok(client, "cite_evidence", id=cited["observation_id"])
    assert found["observation"]["text"] == design
    linked = [e["text"] for e in found["evidence"]] + [c["text"] for c in found["contradictions"]]
    assert len(linked) == 10
    assert all(t.endswith("…") and any(r.startswith(t[:-1]) for r in reviews) for t in linked)
    assert len(design) + sum(map(len, linked)) <= 20_000
    # The citation's words quote each text's first 500 characters (the cited text was
    # quoted again whole: twice its length in one answer).
    assert len(found["citation"]) < 7_000
    assert found["citation"].startswith(f'"{design[:400]}')
    assert design not in found["citation"]
    assert found["note"].startswith("10 of the linked texts cut to about 609 characters")
    assert found["note"].endswith("within 20,000; cite_evidence(id) gives one whole")
    whole = await ok(client, "cite_evidence", id=found["evidence"][0]["observation_id"])
    assert whole["observation"]["text"] in reviews


async def test_unsupported_beliefs_of_long_texts_are_cut_to_the_budget(client: Client) -> None:
    words = " ".join(f"tide{i}" for i in range(1_000))  # 7,889 characters
    await ok(client, "remember", memories=[{"text": f"Log {i}: {words}"} for i in range(8)])
    found = await ok(client, "cite_evidence", agent="default", unsupported=True)
    assert found["count"] == 8
    texts = [u["text"] for u in found["unsupported"]]
    assert all(t.endswith("…") for t in texts) and sum(map(len, texts)) <= 20_000
    assert found["note"].startswith("8 of the texts cut to about 2,500 characters")


async def test_a_cited_text_over_the_budget_cuts_nothing_linked_that_is_short(
    client: Client,
) -> None:
    """A cited text of 25,000 characters left a negative budget for the linked texts: their
    cut was the least one (200), which cut none of them, yet the note said "0 of the linked
    texts cut", and said it with no linked text at all."""
    words = " ".join(f"spec{i}" for i in range(3_500))  # 26,389 characters
    cited = await ok(client, "remember", text=f"Specification: {words}")
    alone = await ok(client, "cite_evidence", id=cited["observation_id"])
    assert "note" not in alone, alone.get("note")
    review = "Reviewed: the specification reads well."
    await ok(
        client,
        "remember",
        text=review,
        agent="reviewer",
        supports=[{"belief_id": cited["belief_id"], "weight": "0.5"}],
    )
    found = await ok(client, "cite_evidence", id=cited["observation_id"])
    assert [e["text"] for e in found["evidence"]] == [review]
    assert "note" not in found, found.get("note")
