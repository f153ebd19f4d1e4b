"""Event times through the tools: read from an observation's words at remember, shown in
recall and cite_evidence, kept across a restart, and matched by a question's time and by a
question that asks when."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import kuzu
import pytest
from calls import ok
from conftest import hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings

pytestmark = pytest.mark.anyio

SAID = "2024-05-08T18:00:00Z"  # a Wednesday


def said(text: str, topics: list[str] | None = None) -> dict[str, object]:
    return {"text": text, "observed_at": SAID, "topics": topics or ["house"]}


async def test_the_time_words_place_the_event_and_survive_a_restart(settings: Settings) -> None:
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            roof = await ok(client, "remember", **said("I finally fixed the roof yesterday."))
            plain = await ok(client, "remember", **said("The roof is made of slate."))
            found = await ok(client, "recall", query="roof")
            cited = await ok(client, "cite_evidence", id=roof["observation_id"])
        async with Client(create_server(settings)) as client:
            again = await ok(client, "recall", query="roof")
    happened = {r["observation_id"]: r.get("happened") for r in found["results"]}
    assert happened == {roof["observation_id"]: "2024-05-07", plain["observation_id"]: None}
    assert {r["observation_id"]: r.get("happened") for r in again["results"]} == happened
    assert cited["observation"]["happened"] == [{"when": "2024-05-07", "phrase": "yesterday"}]
    assert "happened 2024-05-07 (yesterday)" in cited["citation"]


async def test_every_kind_of_span_is_shown_in_iso_8601(client: Client) -> None:
    texts = {
        "We moved here last month.": "2024-04",
        "I started painting in 2019.": "2019",
        "The trip was last week.": "2024-04-29/2024-05-05",
        "I have played chess since September.": "2023-09-01/..",
    }
    with anyio.fail_after(30):
        for text in texts:
            await ok(client, "remember", **said(text, ["life"]))
        found = await ok(client, "recall", query="", topics=["life"], limit=10)
    assert {r["text"]: r.get("happened") for r in found["results"]} == texts


async def test_a_date_asked_matches_an_event_said_relatively(client: Client) -> None:
    """Both were said on 10 May; only the roof was fixed on 7 May."""
    later = "2024-05-10T18:00:00Z"
    with anyio.fail_after(30):
        roof = await ok(
            client, "remember", text="I fixed the roof three days ago.", observed_at=later
        )
        await ok(client, "remember", text="I fixed the fence this afternoon.", observed_at=later)
        found = await ok(
            client, "recall", query="What did I fix on 7 May 2024?", limit=2, explain=True
        )
    first, second = found["results"]
    assert first["observation_id"] == roof["observation_id"]
    assert first["scores"].get("time", 0) > 0 and second["scores"].get("time", 0) == 0


async def test_a_question_about_the_days_to_come_matches_what_is_planned_then(
    client: Client,
) -> None:
    """Said on Wednesday 8 May 2024, asked (as of then) what is on tomorrow and next Friday,
    and what was done the day before yesterday: each question's days favour what happens
    then (a question's time was read only looking back, and "the day before yesterday" as
    yesterday, which left Monday's cinema with no time score)."""
    with anyio.fail_after(30):
        dentist = await ok(client, "remember", **said("The dentist appointment is tomorrow at 9."))
        party = await ok(client, "remember", **said("Mia's party is on Friday."))
        plumber = await ok(client, "remember", **said("The plumber comes on Monday 20 May."))
        cinema = await ok(client, "remember", **said("We went to the cinema on Monday."))

        async def times(query: str) -> dict[str, float]:
            found = await ok(client, "recall", query=query, as_of=SAID, limit=4, explain=True)
            return {r["observation_id"]: r["scores"].get("time", 0) for r in found["results"]}

        tomorrow = await times("What do I have tomorrow?")
        friday = await times("What is on next Friday?")
        before = await times("What did I do the day before yesterday?")
    # A day is matched with a day's slack either side (the party on Friday the 10th too).
    timed = {o for o, t in tomorrow.items() if t}
    assert dentist["observation_id"] in timed and plumber["observation_id"] not in timed
    assert party["observation_id"] in {o for o, t in friday.items() if t}
    assert cinema["observation_id"] in {o for o, t in before.items() if t}


async def test_a_question_asking_when_prefers_what_is_placed_in_time(tmp_path: Path) -> None:
    settings = hash_settings(tmp_path / "memory", ranking={"dated": 0.3})
    with anyio.fail_after(30):
        async with Client(create_server(settings)) as client:
            dated = await ok(client, "remember", **said("We adopted the dog two weeks ago."))
            await ok(client, "remember", **said("We adopted the dog from a shelter."))
            when = await ok(
                client, "recall", query="When did we adopt the dog?", limit=2, explain=True
            )
            what = await ok(client, "recall", query="Where did we adopt the dog?", limit=2)
    assert when["results"][0]["observation_id"] == dated["observation_id"]
    assert when["results"][0]["scores"]["dated"] == pytest.approx(0.3)
    # A question that does not ask when gives the dated one nothing extra.
    assert all("dated" not in r.get("scores", {}) for r in what["results"])


async def test_time_words_are_read_in_the_speakers_own_calendar(client: Client) -> None:
    # 23:30 on 8 May at -08:00 is 07:30Z on the 9th: the roof was fixed on the 7th, not the
    # 8th, and a question about the 7th finds it.
    with anyio.fail_after(30):
        roof = await ok(
            client,
            "remember",
            text="I fixed the roof yesterday.",
            observed_at="2024-05-08T23:30:00-08:00",
        )
        found = await ok(client, "recall", query="What did I fix on 7 May 2024?", explain=True)
    [first] = found["results"]
    assert first["observation_id"] == roof["observation_id"]
    assert first["happened"] == "2024-05-07" and first["scores"].get("time", 0) > 0
    assert first["observed_at"] == "2024-05-09T07:30:00Z"


async def test_a_weekday_said_with_a_date_chooses_its_year(client: Client) -> None:
    # Said on Monday 6 May 2024: 14 May 2024 is a Tuesday, 14 May 2023 was a Sunday.
    with anyio.fail_after(30):
        await ok(
            client,
            "remember",
            text="My dentist appointment is on Tuesday 14 May at 10:00.",
            observed_at="2024-05-06T09:00:00Z",
        )
        [found] = (await ok(client, "recall", query="dentist"))["results"]
    assert found["happened"] == "2024-05-14"


async def test_days_of_one_month_are_a_span(client: Client) -> None:
    with anyio.fail_after(30):
        await ok(
            client,
            "remember",
            text="I'll be in Rome from 3 to 10 June.",
            observed_at="2024-05-20T10:00:00Z",
        )
        found = await ok(client, "recall", query="Where am I on 6 June 2024?", explain=True)
    [rome] = found["results"]
    assert rome["happened"] == "2024-06-03/2024-06-10"
    assert rome["scores"].get("time", 0) > 0


async def test_a_date_in_a_facts_words_takes_the_year_of_its_valid_from(
    settings: Settings,
) -> None:
    # Said on 20 May 2024 of a fact valid from 11 June 2024: the words' 11 June is that
    # day, not the 11 June before it was said; so after a restart too (which loads what
    # remember read: a start reading it again is the migration's test, in test_schema).
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            await ok(
                client,
                "remember",
                text="Back home in Berlin from 11 June.",
                fact={
                    "subject": "user",
                    "predicate": "located in",
                    "object": "Berlin",
                    "valid_from": "2024-06-11T00:00:00Z",
                },
                observed_at="2024-05-20T10:06:00Z",
            )
            [found] = (await ok(client, "recall", query="", subject="user"))["results"]
        async with Client(create_server(settings)) as client:
            [again] = (await ok(client, "recall", query="", subject="user"))["results"]
    assert found["happened"] == again["happened"] == "2024-06-11"


async def test_a_plan_told_in_the_present_is_ahead(client: Client) -> None:
    # Said on 20 May 2024: the flight is the coming 3 June, not the one of 2023.
    with anyio.fail_after(30):
        await ok(
            client,
            "remember",
            text="My flight to Rome leaves on 3 June.",
            observed_at="2024-05-20T10:00:00Z",
        )
        [found] = (await ok(client, "recall", query="flight"))["results"]
    assert found["happened"] == "2024-06-03"


async def test_days_from_today_asked_match_by_time_not_by_the_same_words(client: Client) -> None:
    """Asked on 8 May: notes of other weeks saying "tomorrow" told of other days (they
    matched the word better than the plan for 9 May matched the question's time); with
    nothing placed on the day asked, the words are all there is to go by."""
    old = [
        "Tomorrow I have a call with the bank.",
        "I have to finish the report by tomorrow.",
        "Tomorrow we go hiking in the hills.",
        "The car goes in for service tomorrow.",
    ]
    with anyio.fail_after(30):
        for day, text in enumerate(old, start=2):
            await ok(client, "remember", text=text, observed_at=f"2024-04-{day:02}T10:00:00Z")
        dentist = await ok(
            client,
            "remember",
            text="The dentist appointment is on Thursday at 9.",
            observed_at="2024-05-07T09:00:00Z",
        )
        found = await ok(
            client, "recall", query="What do I have tomorrow?", as_of=SAID, limit=3, explain=True
        )
        # Nothing is placed on 21 April: the words that said "tomorrow" are found.
        words = await ok(
            client,
            "recall",
            query="What do I have tomorrow?",
            as_of="2024-04-20T12:00:00Z",
            limit=4,
            explain=True,
        )
    first = found["results"][0]
    assert first["observation_id"] == dentist["observation_id"], found["results"]
    assert all("text" not in r["scores"] for r in found["results"])
    assert all(r["scores"].get("text", 0) > 0 for r in words["results"])


async def test_days_from_today_stay_when_nothing_the_recall_may_return_is_placed_then(
    client: Client,
) -> None:
    # The journal holds nothing of 7 May; a note of another episode does, which the recall
    # cannot return: the word "yesterday" was left out all the same, with every text score.
    journal = [
        ("2024-04-02T10:00:00Z", "Yesterday I went hiking in the hills with Tom."),
        ("2024-04-09T10:00:00Z", "Yesterday I baked bread for the first time."),
        ("2024-04-16T10:00:00Z", "I painted the fence in the garden."),
    ]
    with anyio.fail_after(30):
        for at, text in journal:
            await ok(client, "remember", text=text, observed_at=at, episode="journal")
        await ok(
            client,
            "remember",
            text="Deployed build 4.2 to staging.",
            observed_at="2024-05-07T11:00:00Z",
            episode="work",
        )
        found = await ok(
            client,
            "recall",
            query="What did I do yesterday?",
            as_of=SAID,
            episode="journal",
            limit=2,
            explain=True,
        )
    assert [r["scores"].get("text", 0) > 0 for r in found["results"]] == [True, True]


async def test_days_from_today_are_left_out_when_a_fact_the_question_names_held_then(
    client: Client,
) -> None:
    """Asked on Friday 4 December, "Where did Sam live yesterday?" names Sam's home, and
    Munich (from Wednesday) held yesterday: it is placed then as ranking places it, so the
    word "yesterday" is left out, and October's notes saying it (of an October day) are
    not found by it; so for "What did we eat yesterday?", which names the predicate of "Ana
    eats sushi" and no other name. "What did Sam eat yesterday?" names no fact of Sam's (and
    Ana's is not his): nothing is placed then, and the word stays."""
    with anyio.fail_after(30):
        for text, subject, predicate, city, since, told in (
            ("Sam lives in Berlin.", "Sam", "lives in", "Berlin", "2026-11-01", "2026-11-03"),
            ("Sam moved to Munich.", "Sam", "lives in", "Munich", "2026-12-02", "2026-12-03"),
            ("Ana eats sushi.", "Ana", "eats", "sushi", "2026-10-01", "2026-10-02"),
        ):
            await ok(
                client,
                "remember",
                text=text,
                observed_at=f"{told}T09:00:00Z",
                fact={
                    "subject": subject,
                    "predicate": predicate,
                    "object": city,
                    "valid_from": f"{since}T00:00:00Z",
                },
            )
        rained = await ok(
            client, "remember", text="It rained yesterday.", observed_at="2026-10-08T10:00:00Z"
        )
        await ok(
            client,
            "remember",
            text="Yesterday Sam said where he would live next.",
            observed_at="2026-10-09T10:00:00Z",
        )
        home, meal, ours = [
            await ok(
                client,
                "recall",
                query=query,
                as_of="2026-12-04T12:00:00Z",
                limit=10,
                explain=True,
            )
            for query in (
                "Where did Sam live yesterday?",
                "What did Sam eat yesterday?",
                "What did we eat yesterday?",
            )
        ]
    assert home["results"][0]["text"] == "Sam moved to Munich."
    assert home["results"][0]["scores"]["time"] > 0

    def rain(found: dict[str, Any]) -> dict[str, float]:
        [scores] = [
            r["scores"] for r in found["results"] if r["observation_id"] == rained["observation_id"]
        ]
        return scores

    assert "text" not in rain(home)
    assert rain(meal)["text"] > 0
    assert "text" not in rain(ours)


# Said on Monday 2 November 2026; asked on Sunday 6 or Wednesday 9 December.
PLANS = {
    "party": "Mia's birthday party is on 12 December.",
    "dentist": "The dentist appointment is on 17 December at 10.",
    "market": "We're going to the Christmas market on 9 December.",
    "skiing": "The ski trip to Austria is on 8 January.",
}


async def _timed(client: Client, query: str, as_of: str) -> set[str]:
    """The plans (by name) that ``query``, asked as of ``as_of``, gives a time score."""
    names = {}
    for name, text in PLANS.items():
        note = await ok(client, "remember", text=text, observed_at="2026-11-02T10:00:00Z")
        names[note["observation_id"]] = name
    found = await ok(client, "recall", query=query, as_of=as_of, limit=len(PLANS), explain=True)
    return {names[r["observation_id"]] for r in found["results"] if r["scores"].get("time", 0)}


@pytest.mark.parametrize(
    ("query", "timed"),
    [
        ("What do I have in the next two weeks?", {"party", "dentist", "market"}),
        ("What's on the week after next?", {"dentist"}),
        # a day of the month: the first one from today on, as the question looks ahead
        ("What do I have on the 12th?", {"party"}),
        # a month without its year: the one to come (it was January 2026)
        ("What do I have in January?", {"skiing"}),
    ],
)
async def test_the_days_to_come_asked_reach_what_happens_then(
    client: Client, query: str, timed: set[str]
) -> None:
    # Asked on Sunday 6 December: such questions named no time at all.
    with anyio.fail_after(30):
        assert await _timed(client, query, "2026-12-06T15:00:00Z") == timed


@pytest.mark.parametrize(
    ("query", "as_of", "timed"),
    [
        # Only looking back, "this weekend" asked on Wednesday 9 December was 6-10 December.
        ("What are we doing this weekend?", "2026-12-09T15:00:00Z", {"party"}),
        # and "later this month" asked on 6 December was 5 November to 7 December
        (
            "What do I have later this month?",
            "2026-12-06T15:00:00Z",
            {"party", "dentist", "market"},
        ),
    ],
)
async def test_this_weekend_or_month_reaches_the_days_to_come(
    client: Client, query: str, as_of: str, timed: set[str]
) -> None:
    with anyio.fail_after(30):
        assert await _timed(client, query, as_of) == timed


async def test_words_read_again_after_a_restart_keep_the_calendar_they_were_told_in(
    tmp_path: Path,
) -> None:
    # Told at 21:30 on 3 December in California to a memory whose zone is UTC: "tomorrow"
    # is the 4th, also once a migration has cleared its event times for a start to read.
    settings = hash_settings(tmp_path / "memory", timezone="UTC")
    told = {"text": "Dentist tomorrow at 9.", "observed_at": "2026-12-03T21:30:00-08:00"}
    with anyio.fail_after(60):
        async with Client(create_server(settings)) as client:
            await ok(client, "remember", **told)
        database = kuzu.Database(str(tmp_path / "memory" / "graph"))
        connection = kuzu.Connection(database)
        connection.execute("MATCH (o:Observation) SET o.event_times = NULL")
        connection.close()
        database.close()
        async with Client(create_server(settings)) as client:
            found = await ok(client, "recall", query="dentist")
    [result] = found["results"]
    assert result["happened"] == "2026-12-04"
    # Shown in UTC, as every time a result holds.
    assert result["observed_at"] == "2026-12-04T05:30:00Z"
