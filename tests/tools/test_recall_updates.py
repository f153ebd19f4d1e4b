"""A plain note a later one may update: among recall's results, the older of two notes about
the same thing that differ in their numbers or names, the later one saying so ("now",
"bumped", "moved to"…), names the later one in ``maybe_updated_by``, and the later one is
never ranked below it. Facts supersede one another; notes never did, and an agent read the
March note first with no word that June's said otherwise. Driven through a real in-memory
MCP client."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import anyio
import pytest
from calls import ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings

pytestmark = pytest.mark.anyio

MARCH = "2025-03-10T09:00:00Z"
JUNE = "2025-06-12T09:00:00Z"


def hints(found: dict[str, Any]) -> dict[str, list[str]]:
    """Each result's id and the ids it names in ``maybe_updated_by`` (none: left out)."""
    return {r["observation_id"]: r.get("maybe_updated_by", []) for r in found["results"]}


def order(found: dict[str, Any]) -> list[str]:
    return [r["observation_id"] for r in found["results"]]


async def remember(client: Client, text: str, observed_at: str) -> str:
    told = await ok(client, "remember", text=text, observed_at=observed_at)
    return str(told["observation_id"])


@pytest.mark.slow
async def test_the_newer_python_minimum_ranks_first_and_the_older_names_it(
    bundled_settings: Settings,
) -> None:
    # The brief's example with the bundled model: asked after both, the March note ranked
    # above June's, and nothing said that the two disagree.
    with anyio.fail_after(180):
        async with Client(create_server(bundled_settings)) as client:
            march = await remember(client, "Python 3.12 is the minimum supported version", MARCH)
            june = await remember(client, "Bumped the minimum Python to 3.13", JUNE)
            for text, at in (
                ("The staging server runs out of disk space every weekend.", MARCH),
                ("Maria adopted a grey kitten named Pixel.", JUNE),
            ):
                await remember(client, text, at)
            found = await ok(client, "recall", query="What is the minimum Python version?")
    assert order(found)[:2] == [june, march]
    assert hints(found)[march] == [june]
    assert hints(found)[june] == []
    assert all(not named for row, named in hints(found).items() if row != march)


async def test_a_later_note_with_other_numbers_is_named_on_the_older(client: Client) -> None:
    with anyio.fail_after(30):
        march = await remember(client, "The minimum supported Python version is 3.12.", MARCH)
        june = await remember(client, "The minimum supported Python version is now 3.13.", JUNE)
        found = await ok(client, "recall", query="minimum supported Python version")
    assert order(found) == [june, march]
    assert hints(found) == {june: [], march: [june]}


async def test_the_newer_note_is_lifted_above_an_older_that_ranked_higher(
    client: Client,
) -> None:
    # The older note says the query's words more often: by relevance alone it ranks first.
    with anyio.fail_after(30):
        march = await remember(
            client, "Deploy window: the deploy window for the API is Tuesday 14:00.", MARCH
        )
        june = await remember(client, "The API deploy window moved to Thursday 10:00.", JUNE)
        found = await ok(client, "recall", query="deploy window", explain=True)
    scores = {r["observation_id"]: r["score"] for r in found["results"]}
    assert scores[march] > scores[june]
    assert order(found) == [june, march]
    assert hints(found)[march] == [june]


async def test_notes_about_unrelated_things_with_numbers_are_not_marked(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        invoice = await remember(client, "Invoice 42 for the printer came to 310 euros.", MARCH)
        bus = await remember(client, "Bus 42 now leaves the depot at 7:15.", JUNE)
        found = await ok(client, "recall", query="42")
    assert set(order(found)) == {invoice, bus}
    assert hints(found) == {invoice: [], bus: []}


async def test_a_note_and_its_paraphrase_with_the_same_numbers_are_not_marked(
    client: Client,
) -> None:
    with anyio.fail_after(30):
        march = await remember(client, "The minimum supported Python version is 3.12.", MARCH)
        june = await remember(client, "The minimum Python version supported is now 3.12.", JUNE)
        found = await ok(client, "recall", query="minimum supported Python version")
    assert hints(found) == {march: [], june: []}


async def test_a_note_told_at_the_same_time_is_not_named(client: Client) -> None:
    # Two notes of one moment are two sides told together, not one the other updates.
    with anyio.fail_after(30):
        await ok(
            client,
            "remember",
            memories=[
                {"text": "The minimum supported Python version is 3.12.", "observed_at": MARCH},
                {"text": "The minimum supported Python version is now 3.13.", "observed_at": MARCH},
            ],
        )
        found = await ok(client, "recall", query="minimum supported Python version")
    assert all(not named for named in hints(found).values())


async def test_as_of_before_the_newer_note_gives_no_hint(client: Client) -> None:
    with anyio.fail_after(30):
        march = await remember(client, "The minimum supported Python version is 3.12.", MARCH)
        await remember(client, "The minimum supported Python version is now 3.13.", JUNE)
        then = await ok(
            client, "recall", query="minimum supported Python version", as_of="2025-04-01"
        )
    assert hints(then) == {march: []}


async def test_known_at_before_the_newer_note_was_told_gives_no_hint(client: Client) -> None:
    with anyio.fail_after(30):
        march = await remember(client, "The minimum supported Python version is 3.12.", MARCH)
        before = datetime.now(UTC).isoformat()
        june = await remember(client, "The minimum supported Python version is now 3.13.", JUNE)
        then = await ok(client, "recall", query="minimum supported Python version", known_at=before)
        now = await ok(client, "recall", query="minimum supported Python version")
    assert hints(then) == {march: []}
    assert hints(now) == {june: [], march: [june]}


async def test_a_forgotten_newer_note_is_not_named(client: Client) -> None:
    with anyio.fail_after(30):
        march = await remember(client, "The minimum supported Python version is 3.12.", MARCH)
        june = await remember(client, "The minimum supported Python version is now 3.13.", JUNE)
        await ok(client, "forget", id=june)
        found = await ok(client, "recall", query="minimum supported Python version")
    assert hints(found) == {march: []}


async def test_a_newer_note_past_the_limit_is_still_named(client: Client) -> None:
    # One result asked for: the older ranks first, and its hint names what was left out.
    with anyio.fail_after(30):
        march = await remember(
            client, "Deploy window: the deploy window for the API is Tuesday 14:00.", MARCH
        )
        june = await remember(client, "The API deploy window moved to Thursday 10:00.", JUNE)
        found = await ok(client, "recall", query="deploy window", limit=1)
    assert hints(found) == {march: [june]}


async def test_facts_are_not_marked_as_notes(client: Client) -> None:
    # Facts supersede one another (superseded_by); a hint would say it twice.
    def fact(version: str, at: str) -> dict[str, Any]:
        return {
            "text": f"The minimum supported Python version is now {version}.",
            "observed_at": at,
            "fact": {"subject": "doxa", "predicate": "minimum python", "object": version},
        }

    with anyio.fail_after(30):
        await ok(client, "remember", **fact("3.12", MARCH))
        await ok(client, "remember", **fact("3.13", JUNE))
        found = await ok(
            client, "recall", query="minimum supported Python version", include_superseded=True
        )
    assert len(found["results"]) == 2
    assert all(not named for named in hints(found).values())


async def test_a_later_note_repeating_the_old_name_or_ending_it_is_named(client: Client) -> None:
    # "Changed from Priya to Daniel" repeats the old name, and "no longer closes on
    # Mondays" names no other value: neither was named, as each note had to say a value
    # the other lacked.
    with anyio.fail_after(30):
        priya = await remember(client, "The on-call lead for the week is Priya.", MARCH)
        daniel = await remember(
            client, "The on-call lead for the week changed from Priya to Daniel.", JUNE
        )
        lead = await ok(client, "recall", query="on-call lead Priya")
        mondays = await remember(client, "The café by the office closes on Mondays.", MARCH)
        opens = await remember(client, "The café by the office no longer closes on Mondays.", JUNE)
        cafe = await ok(client, "recall", query="café by the office closes on Mondays")
    assert order(lead)[:2] == [daniel, priya]
    assert hints(lead)[priya] == [daniel]
    assert order(cafe)[:2] == [opens, mondays]
    assert hints(cafe)[mondays] == [opens]
    assert hints(cafe)[opens] == []


async def test_a_new_holder_is_named_and_another_persons_change_is_not(client: Client) -> None:
    # "Ben" opens its sentence, where a capitalised word is read as no value, and "The yoga
    # class was cancelled" names no value of the earlier: neither was named. "Sara's son"
    # told his own upgrade, and it was named on Sara's phone.
    with anyio.fail_after(30):
        nora = await remember(client, "Nora leads the data platform team.", MARCH)
        ben = await remember(client, "Ben took over the data platform team from Nora.", JUNE)
        team = await ok(client, "recall", query="who leads the data platform team")
        yoga = await remember(client, "The lunchtime yoga class is on Thursdays at 12:30.", MARCH)
        ended = await remember(client, "The lunchtime yoga class was cancelled.", JUNE)
        classes = await ok(client, "recall", query="lunchtime yoga class")
        sara = await remember(client, "Sara has an iPhone 12 for work calls.", MARCH)
        await remember(client, "Sara's son upgraded to an iPhone 15 for work calls.", JUNE)
        phone = await ok(client, "recall", query="Sara iPhone for work calls")
    assert order(team)[:2] == [ben, nora]
    assert hints(team)[nora] == [ben]
    assert order(classes)[:2] == [ended, yoga]
    assert hints(classes)[yoga] == [ended]
    assert hints(phone)[sara] == []


@pytest.mark.slow
async def test_a_new_holder_or_an_ending_the_model_finds_less_alike_is_named(
    bundled_settings: Settings,
) -> None:
    # The bundled model finds these 0.43 and 0.47 alike, under ``update_alike``: a new holder
    # of the earlier's post and an ending naming its thing alone need only
    # ``update_alike_strict``.
    with anyio.fail_after(180):
        async with Client(create_server(bundled_settings)) as client:
            oscar = await remember(client, "Oscar is the building's caretaker.", MARCH)
            wendy = await remember(
                client, "Wendy has taken over as the building's caretaker.", JUNE
            )
            caretaker = await ok(client, "recall", query="Who is the building's caretaker?")
            scheme = await remember(
                client, "Our mentoring scheme pairs each new hire with a buddy for 3 months.", MARCH
            )
            scrapped = await remember(client, "The mentoring scheme was scrapped.", JUNE)
            mentoring = await ok(client, "recall", query="mentoring scheme for new hires")
    assert hints(caretaker)[oscar] == [wendy]
    assert order(caretaker).index(wendy) < order(caretaker).index(oscar)
    assert hints(mentoring)[scheme] == [scrapped]
