"""A fact told with no ``valid_until`` whose own words give its end ("Sam is in Berlin until
Friday") ends there, through the tools: recall and about no longer hold it after that day,
remember's answer says so, and what gives no end ("by Friday", a past tense, two times, a
time told of something else) leaves the fact open as before."""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import anyio
import pytest
from calls import ok
from conftest import hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.store.values import iso

pytestmark = pytest.mark.anyio

WEDNESDAY = "2026-10-07T10:00:00Z"
FRIDAY, SATURDAY = "2026-10-09", "2026-10-10"


def berlin(**extra: Any) -> dict[str, Any]:
    return {"subject": "Sam", "predicate": "located in", "object": "Berlin", **extra}


async def tell(client: Client, text: str, when: str = WEDNESDAY, **fact: Any) -> dict[str, Any]:
    return await ok(client, "remember", text=text, observed_at=when, fact=berlin(**fact))


async def sam(client: Client, as_of: str) -> dict[str, bool]:
    """Sam's facts as of ``as_of``: text -> current."""
    found = await ok(client, "recall", query="", subject="Sam", as_of=as_of, explain=True)
    return {r["text"]: r.get("current", True) for r in found["results"]}


async def located(client: Client, as_of: str) -> list[str]:
    """Where ``about`` places Sam as of ``as_of``."""
    about = await ok(client, "about", name="Sam", as_of=as_of)
    return [v["object"] for v in about.get("facts", {}).get("located_in", [])]


async def test_a_fact_told_until_friday_on_wednesday_is_over_on_saturday(client: Client) -> None:
    text = "Sam is in Berlin until Friday."
    with anyio.fail_after(30):
        told = await tell(client, text)
        on_friday, on_saturday = await sam(client, FRIDAY), await sam(client, SATURDAY)
        about_friday, about_saturday = (
            await located(client, FRIDAY),
            await located(client, SATURDAY),
        )
        found = await ok(client, "recall", query="", subject="Sam", as_of=FRIDAY, explain=True)
    # The end of Friday in the memory's zone (UTC here), said back so it can be corrected.
    assert told["ends"] == "2026-10-10T00:00:00Z from 'until Friday'"
    assert (on_friday, on_saturday) == ({text: True}, {text: False})
    assert (about_friday, about_saturday) == (["Berlin"], [])
    [fact] = [r["fact"] for r in found["results"]]
    assert fact["valid_from"] == WEDNESDAY and fact["valid_until"] == "2026-10-10T00:00:00Z"


async def test_until_next_week_ends_when_it_begins(client: Client) -> None:
    """ "until next week", told on Wednesday, is over on Monday."""
    text = "Sam is in Berlin until next week."
    with anyio.fail_after(30):
        told = await tell(client, text)
        on_sunday, on_monday = await sam(client, "2026-10-11"), await sam(client, "2026-10-12")
    assert told["ends"] == "2026-10-12T00:00:00Z from 'until next week'"
    assert (on_sunday, on_monday) == ({text: True}, {text: False})


async def test_an_end_read_amiss_is_mended_as_the_answer_says(client: Client) -> None:
    """The answer's way to change the end: forget the memory, tell it with valid_until."""
    text = "Sam is in Berlin until Friday."
    with anyio.fail_after(30):
        told = await tell(client, text)
        await ok(client, "forget", id=told["observation_id"])
        again = await tell(client, text, valid_until="2026-10-20")
        later = await located(client, "2026-10-15")
    assert "ends" in told and "ends" not in again and "duplicate_of" not in again
    assert later == ["Berlin"]


async def test_told_while_the_agent_holds_the_fact_it_ends_that_fact(client: Client) -> None:
    """ "Sam is in Berlin" from Monday, then on Wednesday "until Friday": the end of the fact
    held (as an end told with ``valid_until`` alone would be), which holds from Monday."""
    with anyio.fail_after(30):
        first = await tell(client, "Sam is in Berlin.", "2026-10-05T09:00:00Z")
        told = await tell(client, "Sam is staying in Berlin until Friday.")
        on_tuesday, on_saturday = (
            await located(client, "2026-10-06"),
            await located(client, SATURDAY),
        )
    assert told["superseded"] == [first["observation_id"]]
    assert told["ends"] == "2026-10-10T00:00:00Z from 'until Friday'"
    assert (on_tuesday, on_saturday) == (["Berlin"], [])


async def test_an_explicit_valid_until_wins_and_an_explicit_valid_from_stays(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        given = await tell(client, "Sam is in Berlin until Friday.", valid_until="2026-10-20")
        later = await sam(client, "2026-10-15")
        other = await ok(
            client,
            "remember",
            text="Ana is in Paris until Friday.",
            observed_at=WEDNESDAY,
            fact={"subject": "Ana", "predicate": "located in", "object": "Paris"}
            | {"valid_from": "2026-10-01"},
        )
        found = await ok(client, "recall", query="", subject="Ana", as_of=FRIDAY, explain=True)
    assert "ends" not in given
    assert later == {"Sam is in Berlin until Friday.": True}
    assert other["ends"] == "2026-10-10T00:00:00Z from 'until Friday'"
    [fact] = [r["fact"] for r in found["results"]]
    assert fact["valid_from"] == "2026-10-01T00:00:00Z"
    assert fact["valid_until"] == "2026-10-10T00:00:00Z"


@pytest.mark.parametrize(
    "text",
    [
        "Sam is in Berlin by Friday.",  # a deadline: from then on, not until then
        "Sam is in Berlin on Friday.",
        "Sam has been in Berlin since Monday.",
        "Sam lived in Berlin until March.",  # over when told: no time to come
        "Sam is in Berlin until Friday and in Rome until Monday.",  # two times
        "Sam is in Berlin. The office is closed until Monday.",  # told of something else
        # Letters casefolding to two before both ("ß" is "ss") moved where each was found.
        "Weiß, Strauß, Groß and Roß: Sam is in Berlin. We stay until Monday.",
        "Sam is in Berlin through Friday.",  # no reading of event time's
        "Sam lived in Berlin until last week.",  # a time gone
    ],
)
async def test_words_that_give_no_end_leave_the_fact_open(client: Client, text: str) -> None:
    with anyio.fail_after(30):
        told = await tell(client, text)
        later = await sam(client, "2026-10-20")
    assert "ends" not in told
    assert later == {text: True}


@pytest.mark.parametrize(
    "text",
    [
        "Sam won't be in Berlin until Friday.",  # there from Friday on
        "Sam isn't in Berlin until Friday.",
        "Sam doesn't arrive in Berlin until Friday.",
        "Not until Friday is Sam in Berlin.",
        "Sam will never be in Berlin until Friday.",
        "Sam won't be in Berlin until next week.",
    ],
)
async def test_a_negated_until_gives_neither_end_nor_start(client: Client, text: str) -> None:
    """ "Sam won't be in Berlin until Friday" says when the fact begins, not when it ends
    ("won't leave Berlin until Friday" does say its end: a negation is not read either way).
    It begins when told, as a fact whose words give no time."""
    with anyio.fail_after(30):
        told = await tell(client, text)
        later = await sam(client, "2026-10-20")
        found = await ok(client, "recall", query="", subject="Sam", explain=True)
    assert "ends" not in told
    assert later == {text: True}
    [fact] = [r["fact"] for r in found["results"]]
    assert fact["valid_from"] == WEDNESDAY and "valid_until" not in fact


async def test_the_end_is_the_end_of_that_day_in_the_memorys_time_zone(tmp_path: Path) -> None:
    """Told now, in a memory whose zone is Berlin's, "until Friday" ends when the next
    Friday there does; told at a time with its own offset, on that clock (as its words are
    read)."""
    settings = hash_settings(tmp_path / "memory", timezone="Europe/Berlin")
    zone = ZoneInfo("Europe/Berlin")
    with anyio.fail_after(30):
        async with Client(create_server(settings)) as client:
            before = datetime.now(zone).date()
            told = await ok(
                client, "remember", text="Sam is in Berlin until Friday.", fact=berlin()
            )
            after = datetime.now(zone).date()
            ana = await ok(
                client,
                "remember",
                text="Ana is in Lisbon until Friday.",
                observed_at="2026-10-07T10:00:00-05:00",
                fact={"subject": "Ana", "predicate": "located in", "object": "Lisbon"},
            )

    def friday_ends(today: date) -> str:
        """When the first Friday after ``today`` ends in Berlin, as the answer says it."""
        friday = today + timedelta(days=(4 - today.weekday()) % 7 or 7)
        end = datetime.combine(friday + timedelta(days=1), time(), zone)
        return f"{iso(end)} from 'until Friday'"

    # Told just before midnight there, it may be read on the next day.
    assert told["ends"] in {friday_ends(before), friday_ends(after)}
    assert ana["ends"] == "2026-10-10T05:00:00Z from 'until Friday'"


async def test_a_plan_keeps_its_days_and_takes_an_end_only_after_its_start(
    client: Client,
) -> None:
    """A plan told with its days keeps them; one told with only its start takes a later
    end from its words, and not one before it begins ("until the 17th", told on 7 December
    of a trip from 10 January, is read as 17 December)."""
    told_on = "2025-12-07T10:00:00Z"
    trip = {"subject": "we", "predicate": "trip to", "object": "Lisbon"}
    with anyio.fail_after(30):
        days = await ok(
            client,
            "remember",
            text="We fly to Lisbon 10-17 January.",
            observed_at=told_on,
            fact=trip | {"valid_from": "2026-01-10", "valid_until": "2026-01-18"},
        )
        started = await ok(
            client,
            "remember",
            text="Bo will be in Lisbon until 17 January.",
            observed_at=told_on,
            fact=trip | {"subject": "Bo", "valid_from": "2026-01-10"},
        )
        before = await ok(
            client,
            "remember",
            text="Cy is in Lisbon from 10 January until the 17th.",
            observed_at=told_on,
            fact=trip | {"subject": "Cy", "valid_from": "2026-01-10"},
        )
    assert "ends" not in days and "ends" not in before
    assert started["ends"] == "2026-01-18T00:00:00Z from 'until 17 January'"
