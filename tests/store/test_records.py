"""Records read as typed values: what compares equal, what a query's words name, and a
record crossing the relay between processes."""

from __future__ import annotations

import io
import pickle
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from doxa.store.drafts import MAX_NAME, MAX_SOURCE, MAX_TEXT
from doxa.store.errors import InvalidInput
from doxa.store.memory import RecallOutcome, Recollection
from doxa.store.records import (
    Record,
    RecordField,
    comparable,
    loaded,
    parse_where,
    query_pairs,
    stored,
    typed,
    unmatched_where,
    validate,
)
from doxa.store.relay import _Unpickler


@pytest.mark.parametrize(
    ("value", "kind", "typed_value"),
    [
        (176, "integer", 176),
        (176.0, "decimal", Decimal("176.0")),
        (0.1, "decimal", Decimal("0.1")),  # the shortest repr, never 0.1000000000000000055
        (True, "boolean", True),  # not the integer 1
        ("176", "string", "176"),
        ("2024-05-01", "date", date(2024, 5, 1)),
        ("2024-05-01T10:00:00Z", "datetime", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("2024-05-01 10:00", "datetime", datetime(2024, 5, 1, 10, tzinfo=UTC)),
        ("May 2024", "string", "May 2024"),
        ("2024-05-01t10:00:00z", "datetime", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    ],
)
def test_values_are_typed_as_json_gives_them(value: object, kind: str, typed_value: object) -> None:
    assert typed(value, "f") == (kind, typed_value)
    assert type(typed(value, "f")[1]) is type(typed_value)


def test_a_negative_zero_is_zero_so_its_record_is_the_same_as_zeros() -> None:
    given = validate({"type": "T", "fields": {"v": -0.0}})
    assert given.line() == "T: v=0.0"
    assert given.identity() == validate({"type": "T", "fields": {"v": 0.0}}).identity()


def test_long_integers_keep_every_digit_as_where_compares_them() -> None:
    long = 123456789012345678901234567890
    assert comparable("integer", long) == [("number", str(long))]
    assert comparable("integer", long) != comparable("integer", long + 1)


def test_numbers_compare_as_numbers_and_dates_by_day_and_instant() -> None:
    assert comparable("integer", 176) == comparable("decimal", Decimal("176.00"))
    assert comparable("decimal", Decimal("1.76E+2")) == [("number", "176")]
    assert comparable("string", "176") != comparable("integer", 176)
    assert comparable("boolean", True) != comparable("integer", 1)
    moment = datetime(2024, 5, 1, 1, 30, tzinfo=timezone(timedelta(hours=2)))
    # 01:30 at +02:00 is the evening before in UTC.
    assert comparable("datetime", moment) == [
        ("instant", "2024-04-30T23:30:00+00:00"),
        ("day", "2024-04-30"),
    ]
    assert parse_where({"Released": "2024-04-30"}) == [
        ("released", ("day", "2024-04-30"), "Released", "=", None)
    ]


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("integer", 10**30),
        ("decimal", Decimal("176.50")),
        ("string", "a, b=c"),
        ("boolean", False),
        ("date", date(1999, 12, 31)),
        ("datetime", datetime(2024, 5, 1, 10, tzinfo=timezone(timedelta(hours=-5)))),
    ],
)
def test_a_stored_value_loads_as_it_was_given(kind: str, value: Any) -> None:
    assert loaded(kind, stored(kind, value)) == value
    assert stored(kind, loaded(kind, stored(kind, value))) == stored(kind, value)


def test_a_record_in_words_keeps_its_order_and_a_decimal_its_scale() -> None:
    record = validate({"type": "Track", "fields": {"name": "Jump", "price": 0.5, "n": 3}})
    assert record.line() == "Track: name=Jump, price=0.5, n=3"
    assert [f.kind for f in record.fields] == ["string", "decimal", "integer"]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ("Track", "record"),
        ({"type": "Track", "fields": {"a": 1}, "extra": 1}, "record.extra"),
        ({"type": "Track", "fields": {"1st": 1}}, "record.fields.1st"),
        ({"type": "Track", "fields": {"a": float("nan")}}, "record.fields.a"),
        ({"type": "Track", "fields": {"a": "x" * 2001}}, "record.fields.a"),
        ({"type": 3, "fields": {"a": 1}}, "record.type"),
        ({"type": "Track", "fields": {"a": "2024-13-01"}}, "record.fields.a"),
        ({"type": "Track", "fields": {"a": "2024-05-01T25:00"}}, "record.fields.a"),
        ({"type": "T", "fields": {"a.b": 1}}, "record.fields.a.b"),  # a path is no name
        ({"type": "T", "fields": {"a": [[1]]}}, "record.fields.a[0]"),
    ],
)
def test_a_malformed_record_is_refused_naming_the_field(raw: object, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        validate(raw)
    assert caught.value.field == field


def test_a_record_nested_too_deep_is_refused_saying_how_to_give_it() -> None:
    # Four objects deep is kept as dotted fields; a fifth said only that it was too deep.
    deep: dict[str, Any] = {"f": 1}
    for name in "edcba":
        deep = {name: deep}
    with pytest.raises(InvalidInput) as caught:
        validate({"type": "T", "fields": deep})
    assert caught.value.field == "record.fields.a.b.c.d.e"
    assert caught.value.problem == (
        "nests deeper than 4 objects; give the deeper part as a field of its own, or as text"
    )
    deep["a"]["b"]["c"]["d"]["e"] = 1
    assert [f.name for f in validate({"type": "T", "fields": deep}).fields] == ["a.b.c.d.e"]


def test_a_number_beyond_a_floats_range_is_refused_as_one_too_long_is() -> None:
    # Over JSON, 1e400 and 1e-400 arrive as their text (server/exact.py): they were kept as
    # the strings "1e400" and "1e-400" while 1e300 was refused.
    with pytest.raises(InvalidInput, match="more than 40 digits written out") as long:
        validate({"type": "T", "fields": {"n": 1e300}})
    assert long.value.field == "record.fields.n"
    for literal, size in (("1e400", "large"), ("-1E+400", "large"), ("1e-400", "small")):
        with pytest.raises(InvalidInput) as beyond:
            validate({"type": "T", "fields": {"n": literal}})
        assert beyond.value.field == "record.fields.n"
        assert beyond.value.problem.startswith(
            f"is {literal}, a number too {size} for a float: more than 40 digits written out"
        )
        with pytest.raises(InvalidInput) as bound:
            parse_where({"n": {">": literal}})
        assert (bound.value.field, bound.value.problem) == (
            "where.n.>",
            f"is {literal}, a number too {size} to compare: a bound is a number of at most 40"
            " digits written out",
        )
    # Zero is no number beyond a float's; an inexact one in range, and any other text, stay
    # text as sent.
    for text in ("0e-400", "1e300", "0.12345678901234567891", "1e400 km", "e400"):
        assert typed(text, "n") == ("string", text)
    # A record kept before, read back (an import, a printed result), keeps such a text.
    kept = validate({"type": "T", "fields": {"n": ["1e400", "1e-400"]}}, kept=True)
    assert [(f.kind, f.value) for f in kept.fields] == [("string", "1e400"), ("string", "1e-400")]


def test_the_record_limits_are_as_the_readme_says() -> None:
    # Each of these refused a record, and the README named none of them.
    limits = {"a string value": MAX_SOURCE, "a type": MAX_NAME, "the record in words": MAX_TEXT}
    validate({"type": "T" * MAX_NAME, "fields": {"lyrics": "x" * MAX_SOURCE}})
    with pytest.raises(InvalidInput) as string:
        validate({"type": "Song", "fields": {"lyrics": "x" * (MAX_SOURCE + 1)}})
    with pytest.raises(InvalidInput) as type_:
        validate({"type": f" {'T' * (MAX_NAME + 1)} ", "fields": {"a": 1}})
    with pytest.raises(InvalidInput) as words:
        validate({"type": "T", "fields": {f"f{i}": "x" * MAX_SOURCE for i in range(17)}})
    assert (string.value.field, type_.value.field, words.value.field) == (
        "record.fields.lyrics",
        "record.type",
        "record.fields",
    )
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    section = " ".join(readme.split("### Records", 1)[1].split("\n### ", 1)[0].split())
    for what, limit in limits.items():
        assert f"{what} of at most {limit:,}" in section, what
    for refused in (string, type_):
        assert f"`{refused.value}`" in section


def test_a_query_names_fields_with_the_words_that_follow_them() -> None:
    known = {"album_id": 1, "milliseconds": 1, "name": 1}
    assert query_pairs("tracks of album_id 176?", known) == [
        ("album_id", [("number", "176")], ["176"])
    ]
    # The value belongs to the field it follows, up to the next field name.
    [(first, exact, _), (second, other, _)] = query_pairs(
        "album_id = 2 and milliseconds 176", known
    )
    assert (first, exact, second, other) == (
        "album_id",
        [("number", "2")],
        "milliseconds",
        [("number", "176")],
    )
    [(field, exact, loose)] = query_pairs("name Balls to the Wall", known)
    assert field == "name" and exact == [] and "balls to the wall" in loose
    # A field name may be written as words.
    assert query_pairs("what has album id 176", known) == [
        ("album_id", [("number", "176")], ["176"])
    ]
    assert query_pairs("the number 176", known) == []


def test_a_hyphen_in_a_query_joins_a_field_name_as_a_space_does() -> None:
    known = {"album_id": 1, "unit_price": 1, "customer.country": 1}
    # "album_id 176", "Album ID 176" and "album_id: 176" named it; "album-id 176" did not.
    for query in ("album-id 176", "Album-ID: 176", "tracks of album-id = 176?"):
        assert query_pairs(query, known) == [("album_id", [("number", "176")], ["176"])], query
    [(field, exact, _)] = query_pairs("unit-price 1.99", known)
    assert (field, exact) == ("unit_price", [("number", "1.99")])
    assert [f for f, _, _ in query_pairs("customer-country BR", known)] == ["customer.country"]
    # Only a hyphen between two words: a lone one names no field, a date's stay its own.
    assert query_pairs("unit - price 1.99", known) == []
    assert query_pairs("released 1983-12-05", {"released": 1})[0][1] == [("day", "1983-12-05")]


def test_a_query_names_an_identifying_field_by_its_stem_and_stops_at_a_type() -> None:
    known = {"order_id": 1, "total": 1, "price": 1, "sku": 1}
    # "order" names order_id, so 5042 is no total: it was, read three words past "total".
    assert query_pairs("what is the total for order 5042", known, {"order"})[1:] == [
        ("order_id", [("number", "5042")], ["5042"])
    ]
    assert query_pairs("what is the total for order 5042", known)[0][:2] == ("total", [])
    # A record type's name ends a field's value: item 30 is no price of 30.
    [(field, exact, _)] = query_pairs("price of item 30", known, {"item", "order"})
    assert (field, exact) == ("price", [])
    assert query_pairs("price of items 30", known, {"item"})[0][1] == []
    assert query_pairs("price of 30", known, {"item"})[0][1] == [("number", "30")]
    # A field named "order" is that field, not order_id's stem.
    assert query_pairs("order 7", known | {"order": 1})[0][0] == "order"


def test_nested_objects_and_lists_are_fields_kept_as_given() -> None:
    fields = {"id": 1, "customer": {"Country": "BR", "age": 30}, "tags": ["a", "b"], "one": [2]}
    record = validate({"type": "Invoice", "fields": fields})
    assert (
        record.line() == "Invoice: id=1, customer.Country=BR, customer.age=30, tags=[a, b], one=[2]"
    )
    assert [(f.key, f.listed) for f in record.fields] == [
        ("id", False),
        ("customer.country", False),
        ("customer.age", False),
        ("tags", True),
        ("tags", True),
        ("one", True),
    ]
    assert record.shown_fields() == fields
    # As HAS_FIELD keeps them, and back.
    again = [RecordField.loaded(f.stored_name, f.kind, f.text()) for f in record.fields]
    assert Record("Invoice", tuple(again)) == record
    assert {f.stored_name for f in record.fields} >= {"customer.Country", "tags[]", "one[]"}
    # A path names a nested field in where and in a query's words.
    assert parse_where({"Customer.Country": "BR"}) == [
        ("customer.country", ("string", "BR"), "Customer.Country", "=", None)
    ]
    known = {"customer.country": 1, "country": 1}
    assert [f for f, _, _ in query_pairs("customer country BR", known)] == ["customer.country"]
    assert [f for f, _, _ in query_pairs("customer.country=BR", known)] == ["customer.country"]
    assert [f for f, _, _ in query_pairs("country BR", known)] == ["country"]


def test_a_recollection_with_a_record_crosses_the_relay() -> None:
    record = Record(
        "Track",
        (
            RecordField("price", "decimal", Decimal("0.99")),
            RecordField("released", "date", date(1983, 12, 5)),
            RecordField(
                "at", "datetime", datetime(2024, 5, 1, 10, tzinfo=timezone(timedelta(hours=2)))
            ),
        ),
    )
    outcome = RecallOutcome(
        "rec_1",
        [
            Recollection(
                "obs_1", [], record.line(), Decimal(1), datetime.now(UTC), None, None, [], [],
                1.0, {}, [], True, None, record=record,
            )
        ],
    )  # fmt: skip
    payload = pickle.dumps(outcome, protocol=pickle.HIGHEST_PROTOCOL)
    assert _Unpickler(io.BytesIO(payload)).load() == outcome


def test_a_record_type_is_kept_composed_and_matched_in_either_unicode_form() -> None:
    composed, combining = "Caf\u00e9", "Cafe\u0301"
    record = validate({"type": combining, "fields": {"table": 4}})
    assert record.type == composed
    assert record.identity() == validate({"type": composed, "fields": {"table": 4}}).identity()
    assert parse_where({"@type": combining}) == parse_where({"@type": composed})
    # A memory may hold a type remembered in either form before types were normalised: no
    # note offers 'did you mean "Café"?' for "Café".
    for asked, held in ((combining, composed), (composed, combining)):
        assert unmatched_where(parse_where({"@type": asked}), [], {}, {held: 1}) is None
    # A query's word names it in either form, as the other.
    known = {"table": 1}
    assert query_pairs(f"table {combining} 4", known, {composed.casefold()})[0][1] == []


def test_where_names_the_type_in_any_case_and_strips_it_as_a_record_does() -> None:
    [plain] = parse_where({"@type": "Track"})
    assert parse_where({"@TYPE": " Track "}) == [plain]
    with pytest.raises(InvalidInput) as caught:
        parse_where({"@type": "  "})
    assert caught.value.field == "where.@type"


def test_a_date_time_kept_as_text_before_is_read_back_as_text() -> None:
    # A memory or an older export holds them as strings: read back, neither is refused nor
    # read anew; a where's value finds the first as kept, and the second as a date-time.
    seven, spaced = "2022-05-01T10:00:00.123456789Z", "2022-05-01T10:00:00 +02:00"
    moment = datetime(2022, 5, 1, 10, tzinfo=timezone(timedelta(hours=2)))
    assert typed(seven, "f", kept=True) == ("string", seven)
    assert typed(spaced, "f", kept=True) == ("string", spaced)
    assert typed(spaced, "f") == typed(spaced, "f", kept=True, asked=True) == ("datetime", moment)
    assert parse_where({"f": seven})[0].value == ("string", seven)
    record = validate({"type": "T", "fields": {"f": seven, "g": spaced}}, kept=True)
    assert {f.kind for f in record.fields} == {"string"}
    with pytest.raises(InvalidInput, match="gives 9 decimals of a second"):
        typed(seven, "f")
    with pytest.raises(InvalidInput, match=r"where\.f\.>= .* round it to 6"):
        parse_where({"f": {">=": seven}})
