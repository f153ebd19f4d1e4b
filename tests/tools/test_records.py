"""Structured records through the tools: remembered as typed fields, filtered exactly by
recall's ``where`` (compared by type), ranked by a field and value the query names, shown in
results and citations, kept across a restart, forgotten, and refused whole when malformed."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from calls import error, ok
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import Memory

pytestmark = pytest.mark.anyio

TRACKS: dict[str, dict[str, Any]] = {
    # Its milliseconds hold 176: "album_id 176" must not find it first.
    "rock": {
        "name": "For Those About To Rock",
        "album_id": 1,
        "milliseconds": 176,
        "unit_price": 0.99,
        "explicit": False,
        "released": "1981-11-23",
    },
    "balls": {
        "name": "Balls to the Wall",
        "album_id": 176,
        "milliseconds": 342562,
        "unit_price": 0.99,
        "explicit": True,
        "released": "1983-12-05T10:30:00+02:00",
    },
    "fast": {
        "name": "Fast As a Shark",
        "album_id": 176.0,  # a decimal: equal to the integer 176
        "milliseconds": 230619,
        "unit_price": "1.99",  # a string, not a number
        "explicit": False,
        "released": "1983-12-05",
    },
}


async def remember_tracks(client: Client) -> dict[str, str]:
    done = await ok(
        client,
        "remember",
        memories=[{"record": {"type": "Track", "fields": f}} for f in TRACKS.values()],
    )
    return {
        key: item["observation_id"] for key, item in zip(TRACKS, done["remembered"], strict=True)
    }


async def where(client: Client, **fields: Any) -> set[str]:
    found = await ok(client, "recall", query="", where=fields)
    return {r["observation_id"] for r in found["results"]}


async def test_where_filters_records_exactly_by_typed_field(client: Client) -> None:
    with anyio.fail_after(60):
        ids = await remember_tracks(client)
        rock, balls, fast = ids["rock"], ids["balls"], ids["fast"]
        assert await where(client, album_id=176) == {balls, fast}
        assert await where(client, album_id=176.0) == {balls, fast}
        assert await where(client, album_id="176") == set()  # a string is not a number
        assert await where(client, milliseconds=176) == {rock}
        assert await where(client, name="Balls to the Wall") == {balls}
        assert await where(client, name="balls to the wall") == set()  # strings exactly
        assert await where(client, unit_price=0.99) == {rock, balls}
        assert await where(client, unit_price="0.99") == set()
        assert await where(client, unit_price="1.99") == {fast}
        assert await where(client, explicit=True) == {balls}
        assert await where(client, explicit=False) == {rock, fast}
        # A date finds that day's dates and date-times (in UTC); a date-time its instant.
        assert await where(client, released="1983-12-05") == {balls, fast}
        assert await where(client, released="1983-12-05T08:30:00Z") == {balls}
        assert await where(client, released="1981-11-23") == {rock}
        assert await where(client, Album_ID=176, explicit=False) == {fast}  # names: any case
        assert await where(client, album_id=176, milliseconds=176) == set()
        assert await where(client, composer="AC/DC") == set()
        # With a query, where narrows the ranking.
        ranked = await ok(client, "recall", query="Shark", where={"album_id": 176})
        assert ranked["results"][0]["observation_id"] == fast
        assert {r["observation_id"] for r in ranked["results"]} <= {balls, fast}


async def test_where_compares_numbers_and_dates_as_a_bound_asks(client: Client) -> None:
    with anyio.fail_after(60):
        ids = await remember_tracks(client)
        rock, balls, fast = ids["rock"], ids["balls"], ids["fast"]
        longer = {"milliseconds": {">": 300000}}
        assert await where(client, **longer) == {balls}
        assert await where(client, milliseconds={">=": 176, "<": 300000}) == {rock, fast}
        assert await where(client, milliseconds={"<=": 176}) == {rock}
        assert await where(client, album_id={">": 175.5}) == {balls, fast}
        assert await where(client, unit_price={"<": 1}) == {rock, balls}  # "1.99" is text
        # A date bounds dates and date-times by their UTC day, a date-time by its instant;
        # against a date-time, a date is the instant its UTC day begins (1981-11-23 is before
        # 1983-12-05T09:00Z: it met no date-time bound).
        assert await where(client, released={">=": "1983-01-01"}) == {balls, fast}
        assert await where(client, released={"<": "1983-12-05T09:00:00Z"}) == {rock, balls, fast}
        assert await where(client, released={">=": "1983-12-05T00:00:00Z"}) == {balls, fast}
        assert await where(client, released={">": "1983-12-05T00:00:00Z"}) == {balls}
        between = {">=": "1981-01-01T00:00:00Z", "<": "1982-01-01T00:00:00+01:00"}
        assert await where(client, released=between) == {rock}
        assert await where(client, released={">": "1983-12-05"}) == set()
        assert await where(client, milliseconds={">": 200000}, explicit=False) == {fast}
        shorter = await ok(client, "recall", query="Shark", where={"milliseconds": {"<": 300000}})
        assert shorter["results"][0]["observation_id"] == fast


async def test_a_date_time_bound_finds_dates_and_an_equal_date_time_is_noted(
    client: Client,
) -> None:
    with anyio.fail_after(60):
        fields = [
            {"order_id": 1, "ordered_at": "2024-03-05"},
            {"order_id": 2, "ordered_at": "2024-02-01"},
        ]
        done = await ok(
            client,
            "remember",
            memories=[{"record": {"type": "Order", "fields": f}} for f in fields],
        )
        march = await ok(
            client, "recall", query="", where={"ordered_at": {">=": "2024-03-01T00:00:00Z"}}
        )
        equal = await ok(client, "recall", query="", where={"ordered_at": "2024-03-05T00:00:00Z"})
    assert [r["observation_id"] for r in march["results"]] == [
        done["remembered"][0]["observation_id"]
    ]
    assert "note" not in march
    # Equal to an instant, a date is not: the note says what the field holds.
    assert equal["results"] == []
    assert equal["note"] == (
        "where.ordered_at: records hold dates here, not date-times; give the value as a date,"
        ' "YYYY-MM-DD"'
    )


async def test_one_value_of_a_list_meets_every_bound_of_its_field(client: Client) -> None:
    series = {
        "vals": [1, 10],
        "days": ["2024-01-01", "2024-12-31"],
        "times": ["2024-01-01T08:00:00Z", "2024-12-31T20:00:00Z"],
    }
    with anyio.fail_after(60):
        done = await ok(client, "remember", record={"type": "Series", "fields": series})
        found = {done["observation_id"]}
        # 10 is over 5 and 1 under 3, but no one value is both.
        assert await where(client, vals={">": 5, "<": 3}) == set()
        assert await where(client, vals={">": 2, "<": 9}) == set()
        assert await where(client, vals={">": 0, "<": 5}) == found  # 1 is
        assert await where(client, vals={">=": 10, "<=": 10}) == found
        assert await where(client, days={">": "2024-06-01", "<": "2024-02-01"}) == set()
        assert await where(client, days={">": "2024-06-01", "<": "2025-01-01"}) == found
        # A date bound and a date-time bound: one date-time must meet both.
        assert await where(client, times={">=": "2024-12-31", "<": "2024-01-01T09:00:00Z"}) == set()
        assert await where(client, times={">=": "2024-12-31", "<": "2024-12-31T21:00:00Z"}) == found
        # Bounds of two fields are met by each field's own values.
        assert await where(client, vals={">": 5}, days={"<": "2024-02-01"}) == found


async def test_a_field_and_value_in_the_query_rank_that_record_first(client: Client) -> None:
    with anyio.fail_after(60):
        ids = await remember_tracks(client)
        found = await ok(client, "recall", query="album_id 176", explain=True)
        hyphened = await ok(client, "recall", query="album-id 176", explain=True)
        by_price = await ok(client, "recall", query="tracks with unit-price 1.99", explain=True)
        by_name = await ok(client, "recall", query="name fast as a shark")
        # Python reads "1_76" as 176; a query's number is written as numbers are.
        underscored = await ok(client, "recall", query="album_id 1_76", explain=True)
    first, second = found["results"][0], found["results"][1]
    assert {first["observation_id"], second["observation_id"]} == {ids["balls"], ids["fast"]}
    assert first["scores"]["field"] == second["scores"]["field"] == 1.0
    rock = next(r for r in found["results"] if r["observation_id"] == ids["rock"])
    assert "field" not in rock["scores"]  # its 176 is its milliseconds
    # A hyphen joins a field's name as a space or an underscore does.
    assert {r["observation_id"] for r in hyphened["results"][:2]} == {ids["balls"], ids["fast"]}
    assert [r["scores"].get("field") for r in hyphened["results"][:3]] == [1.0, 1.0, None]
    # A query's words carry no type: "1.99" finds the price given as the text "1.99" too
    # (where, which is typed, does not).
    assert by_price["results"][0]["observation_id"] == ids["fast"]
    assert [r for r in by_price["results"] if "field" in r["scores"]] == by_price["results"][:1]
    assert by_name["results"][0]["observation_id"] == ids["fast"]
    assert all("field" not in r["scores"] for r in underscored["results"])


async def test_the_field_and_value_a_query_names_outrank_its_words(client: Client) -> None:
    with anyio.fail_after(60):
        # Told in its own words, which share none of the query's: only its field matches.
        paid = await ok(
            client,
            "remember",
            text="Invoice paid in full.",
            record={"type": "Invoice", "fields": {"album_id": 176}},
        )
        # In words, "Track: name=Other, milliseconds=176, album_id=3": the query's words all.
        other = await ok(
            client,
            "remember",
            record={
                "type": "Track",
                "fields": {"name": "Other", "milliseconds": 176, "album_id": 3},
            },
        )
        found = await ok(client, "recall", query="album_id 176", explain=True)
    first, second = found["results"][:2]
    assert first["observation_id"] == paid["observation_id"]
    assert second["observation_id"] == other["observation_id"]
    # Its words score it higher; its field decides.
    assert second["score"] > first["score"]
    assert first["scores"]["field"] == 1.0 and "field" not in second["scores"]


async def test_a_question_about_one_record_ranks_it_not_the_one_holding_its_number(
    client: Client,
) -> None:
    with anyio.fail_after(60):
        asked = await ok(
            client,
            "remember",
            record={"type": "Order", "fields": {"order_id": 5042, "total": 12.5}},
        )
        other = await ok(
            client, "remember", record={"type": "Order", "fields": {"order_id": 7, "total": 5042}}
        )
        await ok(client, "remember", record={"type": "Item", "fields": {"sku": 30, "price": 9.99}})
        priced = await ok(
            client, "remember", record={"type": "Item", "fields": {"sku": 31, "price": 30}}
        )
        total = await ok(client, "recall", query="what is the total for order 5042", explain=True)
        price = await ok(client, "recall", query="price of item 30", explain=True)
    # Order 7's total is 5042; the question is about order 5042.
    assert total["results"][0]["observation_id"] == asked["observation_id"]
    assert total["results"][0]["scores"]["field"] == 1.0
    assert "field" not in next(
        r["scores"] for r in total["results"] if r["observation_id"] == other["observation_id"]
    )
    # "item 30" names no price: the item priced 30 is not put first for it.
    assert all("field" not in r["scores"] for r in price["results"])
    assert priced["observation_id"] in {r["observation_id"] for r in price["results"]}


@pytest.mark.parametrize(
    ("fields", "query"),
    [
        ({"artist": "Guns N' Roses"}, "artist Guns N' Roses"),
        ({"title": "Hello, World"}, "title hello, world"),
        ({"title": "What?"}, "songs with title What?"),
        ({"explicit": True}, "explicit True"),
        # A value that holds another record's field name ("year", "name").
        ({"title": "Year of the Cat", "year": 1976}, "title Year of the Cat"),
        ({"artist": "The Name Band"}, "artist The Name Band"),
    ],
)
async def test_a_value_with_punctuation_or_capitals_is_named_loosely(
    client: Client, fields: dict[str, Any], query: str
) -> None:
    with anyio.fail_after(60):
        await remember_tracks(client)
        done = await ok(client, "remember", record={"type": "Track", "fields": fields})
        found = await ok(client, "recall", query=query, explain=True)
    first = found["results"][0]
    assert first["observation_id"] == done["observation_id"]
    assert first["scores"]["field"] == 1.0


async def test_records_are_shown_leanly_and_cited_with_their_fields(client: Client) -> None:
    with anyio.fail_after(60):
        ids = await remember_tracks(client)
        told = await ok(
            client,
            "remember",
            text="Best-selling track of the store.",
            record={"type": "Sale", "fields": {"track": "Balls to the Wall", "copies": 12}},
        )
        found = await ok(client, "recall", query="", where={"album_id": 176, "explicit": True})
        sale = await ok(client, "recall", query="", where={"copies": 12})
        cited = await ok(client, "cite_evidence", id=ids["balls"])
    [item] = found["results"]
    # The text is the record in words: said once, as the record.
    assert "text" not in item
    assert item["record"] == {"type": "Track", "fields": TRACKS["balls"]}
    [kept] = sale["results"]
    assert kept["observation_id"] == told["observation_id"]
    assert kept["text"] == "Best-selling track of the store."
    assert kept["record"]["fields"] == {"track": "Balls to the Wall", "copies": 12}
    observation = cited["observation"]
    assert observation["kind"] == "record"
    assert observation["record"]["fields"]["released"] == "1983-12-05T10:30:00+02:00"
    assert observation["text"].startswith("Track: name=Balls to the Wall, album_id=176,")


async def test_records_survive_a_restart_and_leave_with_forget(settings: Settings) -> None:
    with anyio.fail_after(90):
        async with Client(create_server(settings)) as client:
            ids = await remember_tracks(client)
            again = await ok(client, "remember", record={"type": "Track", "fields": TRACKS["rock"]})
        async with Client(create_server(settings)) as client:
            assert await where(client, album_id=176) == {ids["balls"], ids["fast"]}
            assert await where(client, released="1983-12-05") == {ids["balls"], ids["fast"]}
            ranked = await ok(client, "recall", query="album_id 176")
            await ok(client, "forget", id=ids["fast"], mode="purge")
            await ok(client, "forget", id=ids["balls"])
            left = await where(client, album_id=176)
            price = await where(client, unit_price=0.99)
        async with Client(create_server(settings)) as client:
            after = await where(client, unit_price=0.99)
            gone = await where(client, album_id=176)
    assert again["duplicate_of"] == ids["rock"]  # the same record again
    assert ranked["results"][0]["observation_id"] in {ids["balls"], ids["fast"]}
    assert left == set() and price == {ids["rock"]}
    assert after == {ids["rock"]} and gone == set()


# Pairs told in the same words ("P: code=176, ok=true") that are two records.
NOT_THE_SAME = [
    ({"code": 176, "ok": True}, {"code": "176", "ok": "true"}),
    ({"tags": ["a"]}, {"tags": "[a]"}),
    ({"name": "a b"}, {"name": "a  b"}),
    ({"a": "1, b=2"}, {"a": "1", "b": 2}),
]


async def test_a_record_is_a_duplicate_only_of_the_same_typed_values(settings: Settings) -> None:
    first = [{"record": {"type": "P", "fields": a}} for a, _ in NOT_THE_SAME]
    second = [{"record": {"type": "P", "fields": b}} for _, b in NOT_THE_SAME]
    with anyio.fail_after(90):
        async with Client(create_server(settings)) as client:
            one = await ok(client, "remember", memories=first)
            two = await ok(client, "remember", memories=second)
            reordered = await ok(
                client, "remember", record={"type": "P", "fields": {"ok": True, "code": 176}}
            )
            found = await where(client, code="176")
        # Keys kept before the restart are read again: the same record is still a duplicate.
        async with Client(create_server(settings)) as client:
            again = await ok(client, "remember", memories=second)
    assert not any(r.get("duplicate_of") for r in two["remembered"])
    assert found == {two["remembered"][0]["observation_id"]}
    # The same fields in another order are the same record.
    assert reordered["duplicate_of"] == one["remembered"][0]["observation_id"]
    assert [r["duplicate_of"] for r in again["remembered"]] == [
        r["observation_id"] for r in two["remembered"]
    ]


async def test_a_records_fields_place_it_at_no_time_its_given_text_does(client: Client) -> None:
    said = "2024-05-08T12:00:00Z"
    with anyio.fail_after(60):
        songs = await ok(
            client,
            "remember",
            memories=[
                {"record": {"type": "Track", "fields": {"name": n}}, "observed_at": said}
                for n in ("Yesterday", "Last Summer")
            ],
        )
        told = await ok(
            client,
            "remember",
            text="Yesterday the order shipped.",
            record={"type": "Order", "fields": {"id": 17, "status": "shipped"}},
            observed_at=said,
        )
        # The record in words given as its text is the same memory, told of no time.
        again = await ok(
            client,
            "remember",
            text="Track: name=Yesterday",
            record={"type": "Track", "fields": {"name": "Yesterday"}},
            observed_at="2024-06-08T12:00:00Z",
        )
        worded = await ok(
            client,
            "remember",
            text="Track: name=Tomorrow",
            record={"type": "Track", "fields": {"name": "Tomorrow"}},
            observed_at=said,
        )
        found = await ok(client, "recall", query="Yesterday", limit=10)
        later = await ok(client, "recall", query="Tomorrow", limit=10)
    assert again["duplicate_of"] == songs["remembered"][0]["observation_id"]
    [tomorrow] = [r for r in later["results"] if r["observation_id"] == worded["observation_id"]]
    assert "happened" not in tomorrow
    happened = {r["observation_id"]: r.get("happened") for r in found["results"]}
    for song in songs["remembered"]:
        assert happened[song["observation_id"]] is None
    assert happened[told["observation_id"]] == "2024-05-07"


async def test_iso_date_times_in_every_offset_form_are_date_times(client: Client) -> None:
    forms = ["2024-05-01T10:00:00+0200", "2024-05-01T08:00:00z", "2024-05-01 08:00:00"]
    with anyio.fail_after(60):
        done = await ok(
            client,
            "remember",
            memories=[{"record": {"type": "Visit", "fields": {"at": f}}} for f in forms],
        )
        found = await where(client, at="2024-05-01T08:00:00Z")
    assert found == {r["observation_id"] for r in done["remembered"]}


async def test_a_record_sent_as_json_text_keeps_its_numbers_as_an_object_does(
    client: Client,
) -> None:
    # A float cannot carry this literal: as an object over the wire it arrives as its text
    # (server/exact.py), and as JSON text it must too, not as 0.12345678901234568.
    literal = "0.12345678901234567890"
    with anyio.fail_after(60):
        done = await ok(
            client, "remember", record=f'{{"type": "J", "fields": {{"exact": {literal}}}}}'
        )
        found = await where(client, exact=literal)
        # A query word beyond what a decimal holds is no value, not a failure.
        huge = await ok(client, "recall", query="exact 1e1000000")
    assert found == {done["observation_id"]}
    assert [r["observation_id"] for r in huge["results"]] == [done["observation_id"]]


INVOICE: dict[str, Any] = {
    "invoice_id": 98,
    "customer": {"country": "Brazil", "address": {"city": "São José dos Campos"}},
    "total": "3.98",
    "tags": ["rock", "metal", "rock"],
    "track_ids": [1],  # a list of one stays a list
}


async def test_nested_fields_and_lists_are_fields_found_by_path(settings: Settings) -> None:
    with anyio.fail_after(90):
        async with Client(create_server(settings)) as client:
            done = await ok(client, "remember", record={"type": "Invoice", "fields": INVOICE})
            other = await ok(
                client,
                "remember",
                record={"type": "Invoice", "fields": {"invoice_id": 99, "country": "Brazil"}},
            )
            await remember_tracks(client)
            found = await ok(client, "recall", query="invoice country Brazil", explain=True)
        # Kept across a restart: the graph rebuilds nested fields and lists as they were given.
        async with Client(create_server(settings)) as client:
            shown = await ok(client, "recall", query="", where={"invoice_id": 98})
            by_path = await where(client, **{"customer.country": "Brazil"})
            by_city = await where(client, **{"Customer.Address.City": "São José dos Campos"})
            by_tag = await where(client, tags="metal")
            by_one = await where(client, track_ids=1)
            top_level = await where(client, country="Brazil")
            ranked = await ok(client, "recall", query="customer country Brazil", explain=True)
            note = await ok(client, "recall", query="", where={"customer.county": "Brazil"})
            whole = await ok(client, "recall", query="", where={"Customer": "Brazil"})
            city = await ok(client, "recall", query="", where={"city": "Rio"})
            # "tag" is like "tags" (0.86); "zip" is like no field
            tag = await ok(client, "recall", query="", where={"tag": "rock"})
            far = await ok(client, "recall", query="", where={"zip": "1"})
            listed = await error(client, "recall", query="", where={"tags": ["metal", "rock"]})
    invoice = done["observation_id"]
    [item] = shown["results"]
    assert item["record"] == {"type": "Invoice", "fields": INVOICE}
    assert "text" not in item  # the record in words, said once
    assert by_path == by_city == by_tag == by_one == {invoice}
    assert top_level == {other["observation_id"]}  # country is not customer.country
    assert ranked["results"][0]["observation_id"] == invoice
    assert ranked["results"][0]["scores"]["field"] == 1.0
    # "country" alone names the other invoice's field.
    assert found["results"][0]["observation_id"] == other["observation_id"]
    assert note["note"] == (
        'where.customer.county: no record has this field; did you mean "customer.country"?'
    )
    # A nested field is offered by the end of its path; a name alike in two letters is not.
    assert city["note"].endswith('did you mean "customer.address.city"?')
    assert tag["note"].endswith('did you mean "tags"?')
    assert far["note"].startswith("where.zip: no record has this field; fields: ")
    # An object's name is no field: the note names the fields inside it.
    assert not whole["results"]
    assert whole["note"] == (
        "where.Customer: records hold an object here; name one of its fields:"
        " customer.address.city, customer.country"
    )
    assert listed.endswith(
        "where.tags must be one value (string, number, boolean or ISO 8601 date) to equal;"
        " a list field matches a record holding that value among its values, e.g."
        ' {"tags": "metal"}'
    )


async def test_a_record_told_with_a_fact_supersedes_the_older_one(client: Client) -> None:
    def order(status: str, at: str) -> dict[str, Any]:
        return {
            "record": {"type": "Order", "fields": {"order_id": 17, "status": status}},
            "fact": {"subject": "order 17", "predicate": "status", "object": status},
            "observed_at": at,
        }

    with anyio.fail_after(60):
        placed = await ok(client, "remember", **order("placed", "2026-03-01T09:00:00Z"))
        shipped = await ok(client, "remember", **order("shipped", "2026-03-03T09:00:00Z"))
        now = await where(client, order_id=17)
        then = await ok(
            client, "recall", query="", where={"order_id": 17}, as_of="2026-03-02T00:00:00Z"
        )
        both = await ok(client, "recall", query="", where={"order_id": 17}, include_superseded=True)
    assert shipped["superseded"] == [placed["observation_id"]]
    assert now == {shipped["observation_id"]}
    assert [r["record"]["fields"]["status"] for r in then["results"]] == ["placed"]
    assert {r["observation_id"] for r in both["results"]} == {
        placed["observation_id"],
        shipped["observation_id"],
    }


def named(message: str, field: str) -> bool:
    """The error is about ``field``: its message begins with the field's path."""
    return message.removeprefix("Error executing tool ").split(": ", 1)[1].startswith(field + " ")


async def test_bad_records_are_refused_naming_the_field_and_nothing_is_written(
    settings: Settings, memory: Memory
) -> None:
    bad: list[tuple[dict[str, Any], str]] = [
        ({"type": "Track", "fields": {"album id": 1}}, "record.fields.album id"),
        ({"type": "Track", "fields": {"album_id": None}}, "record.fields.album_id"),
        ({"type": "Track", "fields": {"tags": []}}, "record.fields.tags"),
        ({"type": "Track", "fields": {"meta": {}}}, "record.fields.meta"),
        ({"type": "Track", "fields": {"lines": [1, {"a": 1}]}}, "record.fields.lines[1]"),
        ({"type": "Track", "fields": {"tags": ["a", None]}}, "record.fields.tags[1]"),
        ({"type": "Track", "fields": {"meta": {"bad name": 1}}}, "record.fields.meta.bad name"),
        ({"type": "Track", "fields": {"meta": {"A": 1, "a": 2}}}, "record.fields.meta.a"),
        (
            {"type": "T", "fields": {"a": {"b": {"c": {"d": {"e": {"f": 1}}}}}}},
            "record.fields.a.b.c.d.e",
        ),
        ({"type": "Track", "fields": {"tags": [f"t{i}" for i in range(101)]}}, "record.fields"),
        ({"type": "Track", "fields": {"released": "2024-02-30"}}, "record.fields.released"),
        ({"type": "Track", "fields": {"n": 10**50}}, "record.fields.n"),
        ({"type": "Track", "fields": {"Name": "a", "name": "b"}}, "record.fields.name"),
        ({"type": "Track", "fields": {}}, "record.fields"),
        ({"type": " ", "fields": {"a": 1}}, "record.type"),
        ({"type": 5, "fields": {"a": 1}}, "record.type"),
        ({"type": None, "fields": {"a": 1}}, "record.type"),
        ({"fields": {"a": 1}}, "record.type"),
        ({"type": "T", "fields": [1, 2]}, "record.fields"),
        ({"type": "T"}, "record.fields"),
        ({"type": "T", "fields": {"a": 1}, "kind": "x"}, "record.kind"),
        ({"type": "Track", "fields": {f"f{i}": i for i in range(101)}}, "record.fields"),
    ]
    server = create_server(settings, memory=memory)
    with anyio.fail_after(60):
        async with Client(server) as client:
            before = memory.stats()
            for record, field in bad:
                message = await error(client, "remember", record=record)
                assert named(message, field), message
                batch = await error(
                    client, "remember", memories=[{"text": "fine"}, {"record": record}]
                )
                assert named(batch, f"memories[1].{field}"), batch
            for shape, field in (
                ({"album_id": {"gt": 3}}, "where.album_id"),
                ({"album_id": {}}, "where.album_id"),
                ({"name": {">": "Balls"}}, "where.name.>"),
                ({"explicit": {"<": True}}, "where.explicit.<"),
                ({"album_id": {">": 1, "=": 2}}, "where.album_id"),
                ({"album_id": [1, 2]}, "where.album_id"),
                ({"album id": 1}, "where.album id"),
                ({"customer..country": 1}, "where.customer..country"),
                ({"album_id": None}, "where.album_id"),
                ({"album_id": {"<": 1e45}}, "where.album_id.<"),
                ({"milliseconds": {">": 1, "<": 2, "<=": 3}}, "where.milliseconds"),
                ({"milliseconds": {">": 1, ">=": 2}}, "where.milliseconds"),
                ({"released": {">=": "2024-01-01", "<": 5}}, "where.released"),
                ({"Milliseconds": {">": 1}, "milliseconds": {">": 2}}, "where.milliseconds"),
            ):
                message = await error(client, "recall", query="", where=shape)
                assert named(message, field), message
                assert "send it as a string" not in message  # a string bound is refused
            after = memory.stats()
    assert after["Observation"] == before["Observation"] == 0
    assert memory.graph._rows("MATCH (f:FieldValue) RETURN count(f)") == [[0]]


async def test_a_where_gives_at_most_two_bounds_of_one_kind(client: Client) -> None:
    with anyio.fail_after(60):
        ids = await remember_tracks(client)
        upper = await error(
            client, "recall", query="", where={"milliseconds": {">": 1, "<": 2, "<=": 3}}
        )
        lower = await error(client, "recall", query="", where={"Milliseconds": {">": 1, ">=": 2}})
        mixed = await error(
            client, "recall", query="", where={"released": {">=": "1983-01-01", "<": 5}}
        )
        twice = await error(
            client, "recall", query="", where={"Milliseconds": {">": 1}, "milliseconds": 2}
        )
        # How a JSON number a float cannot carry arrives (server/exact.py).
        precise = await error(
            client, "recall", query="", where={"unit_price": {">": "0.12345678901234567891"}}
        )
        flag = await error(client, "recall", query="", where={"milliseconds": {">": True}})
        # A date and a date-time are both dates.
        dated = await where(client, released={">=": "1983-12-05", "<": "1983-12-05T09:00:00Z"})
    assert upper.endswith(
        "where.milliseconds has two upper bounds (< and <=); give at most one lower bound"
        ' (> or >=) and one upper bound (< or <=), e.g. {">=": 100, "<": 200}'
    )
    assert lower.endswith(
        "where.Milliseconds has two lower bounds (> and >=); give at most one lower bound"
        ' (> or >=) and one upper bound (< or <=), e.g. {">=": 100, "<": 200}'
    )
    assert mixed.endswith(
        "where.released bounds a date and a number; the bounds must be both numbers or both"
        ' dates, e.g. {">=": "2024-01-01", "<": "2024-02-01"}'
    )
    assert twice.endswith(
        "where.milliseconds is the field where.Milliseconds names (names match in any case);"
        ' give each field once, its bounds together, e.g. {"price": {">=": 5, "<": 9}}'
    )
    assert precise.endswith(
        "where.unit_price.> is '0.12345678901234567891', a number as text; send a JSON number"
        " (over JSON one of more than 15 significant digits may arrive as text: give fewer)"
    )
    assert flag.endswith(  # as JSON, as sent (it said True)
        "where.milliseconds.> compares numbers and dates; give a number or an ISO 8601 date,"
        " got true"
    )
    assert dated == {ids["balls"], ids["fast"]}  # 5 December's date begins before 09:00Z


async def test_a_purged_record_takes_the_values_no_other_record_holds(
    memory_client: Client, memory: Memory
) -> None:
    with anyio.fail_after(60):
        ids = await remember_tracks(memory_client)
        await ok(memory_client, "forget", id=ids["rock"], mode="purge")
        await ok(memory_client, "forget", id=ids["balls"])  # retracted: kept for audit
    values = {row[0] for row in memory.graph._rows("MATCH (f:FieldValue) RETURN f.key")}
    # The rock track's own values left with it; the price it shared with another stays.
    assert "milliseconds|number|176" not in values
    assert "name|string|For Those About To Rock" not in values
    assert "unit_price|number|0.99" in values
    assert "album_id|number|176" in values  # held by the other two
    types = memory.graph._rows("MATCH (o:Observation)-[:IS_A]->(t:RecordType) RETURN count(o)")
    assert types == [[2]]


async def test_a_where_that_can_match_no_record_says_why_and_how_to_fix_it(
    memory_client: Client,
) -> None:
    async def note(**fields: Any) -> str | None:
        found = await ok(memory_client, "recall", query="", where=fields)
        return found.get("note")

    with anyio.fail_after(60):
        ids = await remember_tracks(memory_client)
        string = await note(album_id="176")
        misspelt = await note(Album_Idd=176)
        unknown = await note(composer="AC/DC")
        boolean = await note(released=True)
        # A bound is a number or a date: strings are no fix to suggest for one.
        ordered = await note(name={">": 5})
        priced = await note(unit_price={">": "1983-01-01"})
        # Nothing to say when the field holds values of the kind asked, found or not.
        assert await note(album_id=177) is None
        assert await note(unit_price="0.99") is None  # one price was given as text
        found = await ok(memory_client, "recall", query="", where={"album_id": 176})
        assert found["results"] and "note" not in found
        for track in ids.values():
            await ok(memory_client, "forget", id=track, mode="purge")
        gone = await note(album_id=176)
    assert string == (
        "where.album_id: records hold numbers here, not strings; give the value as a number"
    )
    assert misspelt == 'where.Album_Idd: no record has this field; did you mean "album_id"?'
    assert unknown == (
        "where.composer: no record has this field; fields: album_id, explicit, milliseconds,"
        " name, released, unit_price"
    )
    assert boolean is not None and boolean.startswith(
        "where.released: records hold dates and date-times here, not booleans; give the value"
        ' as a date, "YYYY-MM-DD" or an ISO 8601 date-time'
    )
    assert gone == "where.album_id: no record has this field; no records are stored"
    assert ordered == (
        "where.name: records hold strings here, which do not compare by order; give one value"
        ' to equal, e.g. {"name": "..."}'
    )
    assert priced == (
        "where.unit_price: records hold numbers and strings here, not dates; give the value as"
        " a number"
    )


async def test_where_names_the_record_type_as_at_type(memory_client: Client) -> None:
    async def note(**fields: Any) -> str | None:
        found = await ok(memory_client, "recall", query="", where=fields)
        return found.get("note")

    with anyio.fail_after(60):
        ids = await remember_tracks(memory_client)
        album = await ok(
            memory_client,
            "remember",
            record={"type": "Album", "fields": {"album_id": 176, "title": "Balls to the Wall"}},
        )
        tracks = set(ids.values())
        assert await where(memory_client, **{"@type": "Track"}) == tracks
        assert await where(memory_client, **{"@type": "album", "album_id": 176}) == {
            album["observation_id"]
        }
        assert await where(memory_client, **{"@type": "Track", "album_id": 176}) == {
            ids["balls"],
            ids["fast"],
        }
        assert await where(memory_client, **{"@type": "Album", "milliseconds": 176}) == set()
        # Albums have no milliseconds (tracks do): a note says so.
        assert await note(**{"@type": "Album", "Milliseconds": 176}) == (
            'where.Milliseconds: no record of type "Album" has this field; its fields:'
            " album_id, title"
        )
        misspelt = await note(**{"@type": "Trak"})
        other = await note(**{"@type": "Invoice"})
        as_a_field = await note(type="Track")
        refused = await error(memory_client, "recall", query="", where={"@type": 5})
        await ok(memory_client, "forget", id=album["observation_id"], mode="purge")
        assert await where(memory_client, **{"@type": "Album"}) == set()
    assert misspelt == 'where.@type: no record is of this type; did you mean "Track"?'
    assert other == "where.@type: no record is of this type; types: Track, Album"
    assert as_a_field == 'where.type: no record has this field; a record\'s type is "@type"'
    assert 'where.@type must be a record type as text, e.g. "Track"' in refused


#: One type in either Unicode form: "é" typed, and "e" with a combining accent.
CAFE, CAFE_COMBINING = "Caf\u00e9", "Cafe\u0301"


async def test_a_record_type_is_one_in_either_unicode_form(memory_client: Client) -> None:
    async def found(**fields: Any) -> dict[str, Any]:
        return await ok(memory_client, "recall", query="", where=fields)

    with anyio.fail_after(60):
        told = await ok(
            memory_client, "remember", record={"type": CAFE_COMBINING, "fields": {"table": 4}}
        )
        again = await ok(memory_client, "remember", record={"type": CAFE, "fields": {"table": 4}})
        composed = await found(**{"@type": CAFE})
        combining = await found(**{"@type": CAFE_COMBINING, "table": 4})
        # "did you mean "Café"?" named the same visible type it was given.
        missing = await found(**{"@type": CAFE_COMBINING, "table": 5})
        shown = await ok(memory_client, "recall", query="café table 4")
    assert again["duplicate_of"] == told["observation_id"]
    for answer in (composed, combining):
        assert [r["observation_id"] for r in answer["results"]] == [told["observation_id"]]
        assert "note" not in answer
    assert missing["results"] == [] and "note" not in missing  # the value is simply absent
    assert shown["results"][0]["record"]["type"] == CAFE  # kept composed


async def test_a_where_note_names_only_fields_records_hold_now(memory_client: Client) -> None:
    async def note(**fields: Any) -> str | None:
        found = await ok(memory_client, "recall", query="", where=fields)
        return found.get("note")

    with anyio.fail_after(60):
        secret = await ok(
            memory_client, "remember", record={"type": "Vault", "fields": {"secret": 7}}
        )
        await ok(memory_client, "remember", record={"type": "Track", "fields": {"album_id": 1}})
        before = await note(secrett=7)
        await ok(memory_client, "forget", id=secret["observation_id"])
        after = await note(secrett=7)
        as_type = await note(**{"@type": "Vaul"})
    assert before == 'where.secrett: no record has this field; did you mean "secret"?'
    assert after == "where.secrett: no record has this field; fields: album_id"
    assert as_type == "where.@type: no record is of this type; types: Track"


async def test_a_where_string_held_only_in_another_case_is_noted(memory_client: Client) -> None:
    # Strings match exactly: {"category": "Food"} found nothing beside records of "food",
    # and said nothing, read as "no food expenses".
    async def note(**fields: Any) -> str | None:
        found = await ok(memory_client, "recall", query="", where=fields)
        assert found["results"] == []
        return found.get("note")

    with anyio.fail_after(60):
        for category in ("food", "travel"):
            await ok(
                memory_client,
                "remember",
                record={"type": "Expense", "fields": {"category": category, "amount": 4}},
            )
        secret = await ok(
            memory_client, "remember", record={"type": "Vault", "fields": {"category": "Keys"}}
        )
        await ok(memory_client, "forget", id=secret["observation_id"])
        food = await note(**{"@type": "Expense", "Category": "Food"})
        gone = await note(category="keys")  # held by a retracted record only
        absent = await note(category="rent")
        # Held in two casings, the note named one: each is named, up to four.
        for category in ("TRAVEL", "Travel", "TrAvel", "traVel"):
            await ok(
                memory_client,
                "remember",
                record={"type": "Expense", "fields": {"category": category, "amount": 5}},
            )
        await ok(
            memory_client,
            "remember",
            record={"type": "Expense", "fields": {"category": "FOOD", "amount": 6}},
        )
        foods = await note(category="Food")
        travels = await note(category="tRAVEL")
    assert food == (
        'where.Category: no record holds "Food" here; strings match exactly: did you mean "food"?'
    )
    assert gone is None
    assert absent is None
    assert foods == (
        'where.category: no record holds "Food" here; strings match exactly: did you mean'
        ' "FOOD" or "food"?'
    )
    assert travels == (
        'where.category: no record holds "tRAVEL" here; strings match exactly: did you mean'
        ' "TRAVEL", "TrAvel", "Travel" or "traVel" (+1 more)?'
    )


async def test_a_where_value_beyond_a_float_is_noted_as_such(client: Client) -> None:
    # 1e400 sent as a JSON number arrives as its text ("1e400"), searched as that text: the
    # note said to give the value as a number, which it was.
    with anyio.fail_after(60):
        await remember_tracks(client)
        found = await ok(client, "recall", query="", where={"milliseconds": "1e400"})
    assert found["results"] == []
    assert found["note"] == (
        "where.milliseconds: 1e400 is a number too large for a float, which no record holds"
        " (nor this text)"
    )


async def test_a_where_whose_fields_no_type_holds_together_says_which_types_hold_them(
    memory_client: Client,
) -> None:
    # Each field is held, but by records of different types: the answer was empty and said
    # nothing, though no record could match.
    with anyio.fail_after(60):
        await ok(
            memory_client,
            "remember",
            memories=[
                {"record": {"type": "Customer", "fields": {"country": "Brazil", "id": 1}}},
                {"record": {"type": "Invoice", "fields": {"total": 12, "id": 2}}},
                {"record": {"type": "Refund", "fields": {"total": 3}}},
            ],
        )
        apart = await ok(
            memory_client, "recall", query="", where={"country": "Brazil", "total": {">": 10}}
        )
        together = await ok(memory_client, "recall", query="", where={"id": 3, "total": 12})
    assert apart["results"] == []
    assert apart["note"] == (
        "where: no record type has all these fields (country: Customer; total: Invoice,"
        ' Refund); a record is of one type: drop a field, or give "@type" to see one'
        " type's fields"
    )
    assert together["results"] == [] and "note" not in together  # Invoice holds both


async def test_a_listing_cut_at_its_limit_says_how_many_match(memory_client: Client) -> None:
    # A listing has no relevance to put the best first: 150 matched, 100 came, and nothing
    # said more matched.
    with anyio.fail_after(120):
        for start in range(0, 150, 50):
            await ok(
                memory_client,
                "remember",
                memories=[
                    {"record": {"type": "Track", "fields": {"track_id": i}}}
                    for i in range(start, start + 50)
                ],
            )
        most = await ok(memory_client, "recall", query="", where={"@type": "Track"}, limit=100)
        few = await ok(memory_client, "recall", query="", where={"@type": "Track"}, limit=10)
        all_of = await ok(memory_client, "recall", query="", where={"track_id": {"<": 10}})
        ranked = await ok(memory_client, "recall", query="track_id 7", where={"@type": "Track"})
    assert len(most["results"]) == 100
    assert most["note"] == (
        "150 match; the first 100 are shown (order_by decides which): narrow the filter to"
        " see the rest"
    )
    assert few["note"] == (
        "150 match; the first 10 are shown (order_by decides which): raise limit (up to 100)"
        " or narrow the filter to see the rest"
    )
    assert len(all_of["results"]) == 10 and "note" not in all_of  # all that match
    assert "note" not in ranked  # ranked by relevance: the best come first


async def test_date_times_of_other_writers_are_date_times_or_refused(client: Client) -> None:
    # "2022-05-01T10:00:00 +02:00" and .NET's seven decimals were kept as strings, and a
    # date bound silently missed them.
    with anyio.fail_after(60):
        spaced = await ok(
            client,
            "remember",
            record={"type": "Event", "fields": {"when": "2022-05-01T10:00:00 +02:00"}},
        )
        refused = await error(
            client,
            "remember",
            record={"type": "Event", "fields": {"when": "2022-05-01T10:00:00.1234567Z"}},
        )
        since = await where(client, when={">=": "2022-01-01"})
        instant = await where(client, when="2022-05-01T08:00:00Z")
        shown = await ok(client, "recall", query="", where={"@type": "Event"})
    assert since == instant == {spaced["observation_id"]}
    assert shown["results"][0]["record"]["fields"] == {"when": "2022-05-01T10:00:00+02:00"}
    assert refused.endswith(
        "record.fields.when '2022-05-01T10:00:00.1234567Z' gives 7 decimals of a second; a"
        " date-time keeps at most 6 (microseconds): round it to 6"
    )


#: One string value in either Unicode form.
ZOE, ZOE_COMBINING = "Caf\u00e9 Zo\u00eb", "Cafe\u0301 Zoe\u0308"


async def test_a_string_value_is_one_in_either_unicode_form(memory_client: Client) -> None:
    # "Café Zoë" pasted with combining accents was another value: the record told again was
    # a second record, and a where for the typed form missed it.
    async def found(**fields: Any) -> list[str]:
        answer = await ok(memory_client, "recall", query="", where=fields)
        return [r["observation_id"] for r in answer["results"]]

    with anyio.fail_after(60):
        told = await ok(
            memory_client,
            "remember",
            record={"type": "Person", "fields": {"pid": 1, "name": ZOE, "tags": ["Bj\u00f6rk"]}},
        )
        again = await ok(
            memory_client,
            "remember",
            record={
                "type": "Person",
                "fields": {"name": ZOE_COMBINING, "pid": 1, "tags": ["Bjo\u0308rk"]},
            },
        )
        by_name = await found(name=ZOE_COMBINING)
        by_tag = await found(tags="Bjo\u0308rk")
        kept = await ok(
            memory_client,
            "remember",
            record={"type": "Person", "fields": {"pid": 2, "name": ZOE_COMBINING}},
        )
        both = await found(name=ZOE)
        ranked = await ok(
            memory_client, "recall", query=f"name {ZOE}", where={"pid": 2}, explain=True
        )
    assert again["duplicate_of"] == told["observation_id"]
    assert by_name == by_tag == [told["observation_id"]]
    assert set(both) == {told["observation_id"], kept["observation_id"]}
    # Kept as given: the record shows the form it was told in.
    assert ranked["results"][0]["record"]["fields"]["name"] == ZOE_COMBINING
    assert ranked["results"][0]["scores"]["field"] > 0  # the query names its value


async def test_a_record_type_is_one_whatever_whitespace_parts_its_words(
    memory_client: Client,
) -> None:
    # "Widget  Pro" and "Widget Pro" were two types: the same record told again was a second
    # record, and a where for one missed the other.
    with anyio.fail_after(60):
        told = await ok(
            memory_client, "remember", record={"type": "Widget  Pro", "fields": {"sku": 7}}
        )
        again = await ok(
            memory_client, "remember", record={"type": "Widget Pro", "fields": {"sku": 7}}
        )
        found = await ok(memory_client, "recall", query="", where={"@type": "widget \t pro"})
    assert again["duplicate_of"] == told["observation_id"]
    [shown] = found["results"]
    assert shown["observation_id"] == told["observation_id"]
    assert shown["record"]["type"] == "Widget Pro"
