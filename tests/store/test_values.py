"""Exact decimals and UTC times: how the memory reads values from the outside world."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal

import pytest

from doxa.store.errors import InvalidInput
from doxa.store.values import (
    LATEST,
    decimal_text,
    from_naive_utc,
    iso,
    micros,
    parse_asked_moment,
    parse_asked_time,
    parse_time,
    parse_unit_decimal,
    scaled,
    to_naive_utc,
)

# ---- exact decimals ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("0.1", "0.1"),
        (0.1, "0.1"),
        ("0.8", "0.8"),
        (" 0.25 ", "0.25"),
        ("1", "1"),
        ("1.0", "1.0"),
        (1, "1"),
        (0, "0"),
        ("0", "0"),
        (1.0, "1.0"),
        ("1e-1", "0.1"),
        ("0.000000000000000001", "1E-18"),
        ("0.100000000000000000000", "0.100000000000000000000"),
        (Decimal("0.3"), "0.3"),
    ],
)
def test_unit_decimals_are_read_exactly(given: object, expected: str) -> None:
    value = parse_unit_decimal(given, "confidence")
    assert isinstance(value, Decimal)
    assert value == Decimal(expected)


def test_a_float_is_read_through_its_shortest_repr() -> None:
    assert parse_unit_decimal(0.1, "confidence") == Decimal("0.1")
    tenth = 0.1
    assert parse_unit_decimal(tenth, "confidence") != Decimal(tenth)  # not the binary value
    assert parse_unit_decimal(0.1 + 0.2, "confidence") == Decimal("0.30000000000000004")
    assert parse_unit_decimal(0.3, "confidence") == Decimal("0.3")
    assert parse_unit_decimal(1 / 3, "confidence") == Decimal("0.3333333333333333")


def test_exact_comparison_keeps_float_sums_apart() -> None:
    three_tenths = parse_unit_decimal("0.3", "confidence")
    float_sum = parse_unit_decimal(0.1 + 0.2, "min_confidence")
    assert three_tenths < float_sum
    assert scaled(three_tenths) < scaled(float_sum)
    assert scaled(parse_unit_decimal(0.3, "min_confidence")) == scaled(three_tenths)


@pytest.mark.parametrize(
    ("given", "message"),
    [
        (1.5, "confidence must be between 0 and 1, got 1.5"),
        ("1.000000000000000001", "confidence must be between 0 and 1"),
        (-0.1, "confidence must be between 0 and 1, got -0.1"),
        (2, "confidence must be between 0 and 1, got 2"),
        ("high", "confidence must be a decimal number between 0 and 1 such as \"0.8\", got 'high'"),
        ("", 'confidence must be a decimal number between 0 and 1 such as "0.8"'),
        ("NaN", "confidence must be between 0 and 1, got 'NaN'"),
        ("Infinity", "confidence must be between 0 and 1"),
        (float("nan"), "confidence must be between 0 and 1, got nan"),
        (float("inf"), "confidence must be between 0 and 1, got inf"),
        (True, "confidence must be a decimal number between 0 and 1, got True"),
        (None, "confidence must be a decimal number between 0 and 1, got None"),
        ([0.5], "confidence must be a decimal number between 0 and 1, got [0.5]"),
        ("0.1234567890123456789", "confidence has more than 18 decimal places"),
        ("1e-19", "confidence has more than 18 decimal places"),
    ],
)
def test_bad_unit_decimals_name_the_field_and_the_fix(given: object, message: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_unit_decimal(given, "confidence")
    assert caught.value.field == "confidence"
    assert str(caught.value).startswith(message)


def test_eighteen_places_are_the_limit() -> None:
    assert parse_unit_decimal("0.123456789012345678", "w") == Decimal("0.123456789012345678")
    with pytest.raises(InvalidInput, match="w has more than 18 decimal places"):
        parse_unit_decimal("0.1234567890123456789", "w")


def test_scaled_counts_units_of_ten_to_the_minus_eighteen() -> None:
    assert scaled(Decimal("1")) == 10**18
    assert scaled(Decimal("0.1")) == 10**17
    assert scaled(Decimal("0.000000000000000001")) == 1
    assert scaled(Decimal("0")) == 0
    assert isinstance(scaled(Decimal("0.5")), int)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (Decimal("0.800000000000000000"), "0.8"),
        (Decimal("1.000000000000000000"), "1"),
        (Decimal("0E-18"), "0"),
        (Decimal("0.000000000000000001"), "0.000000000000000001"),
        (Decimal("1E-7"), "0.0000001"),
        (Decimal("0.30000000000000004"), "0.30000000000000004"),
    ],
)
def test_decimal_text_drops_trailing_zeros_and_never_uses_exponents(
    value: Decimal, text: str
) -> None:
    assert decimal_text(value) == text


@pytest.mark.parametrize("given", ["-0", -0.0, "-0.000"])
def test_negative_zero_is_read_as_zero(given: object) -> None:
    assert decimal_text(parse_unit_decimal(given, "confidence")) == "0"


# ---- times ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("2024-05-01T14:30:00Z", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01T14:30:00z", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01T16:30:00+02:00", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01T09:30:00-05:00", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01T14:30:00", datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
        (" 2024-05-01T14:30:00.123456Z ", datetime(2024, 5, 1, 14, 30, 0, 123456, tzinfo=UTC)),
        (datetime(2024, 5, 1, 14, 30), datetime(2024, 5, 1, 14, 30, tzinfo=UTC)),
        (
            datetime(2024, 5, 1, 23, 30, tzinfo=timezone(timedelta(hours=9))),
            datetime(2024, 5, 1, 14, 30, tzinfo=UTC),
        ),
    ],
)
def test_times_are_read_as_aware_utc(given: object, expected: datetime) -> None:
    moment = parse_time(given, "observed_at")
    assert moment == expected
    assert moment.tzinfo is UTC


@pytest.mark.parametrize("given", ["yesterday", "2024-13-01", "01/05/2024", "", 1714573800, None])
def test_bad_times_name_the_field_and_show_an_example(given: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_time(given, "as_of")
    assert caught.value.field == "as_of"
    assert str(caught.value).startswith(
        'as_of must be an ISO 8601 time such as "2024-05-01T14:30:00Z", got '
    )


def test_a_time_naming_no_such_day_says_which_part_is_wrong() -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_time("2023-02-29", "observed_at")
    assert str(caught.value).endswith("got '2023-02-29' (day is out of range for month)")


@pytest.mark.parametrize(
    ("given", "zone", "expected"),
    [
        # A bare date asked of is the last instant of that day in the memory's time zone.
        ("2026-12-03", "UTC", datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC)),
        (" 2026-12-03 ", "UTC", datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC)),
        ("20261203", "UTC", datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2026-W49-4", "UTC", datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC)),
        ("2026-12-03", "local", datetime(2026, 12, 3, 23, 59, 59, 999999, tzinfo=UTC)),  # TZ=UTC
        (
            "2026-12-03",
            "America/Los_Angeles",
            datetime(2026, 12, 4, 7, 59, 59, 999999, tzinfo=UTC),
        ),
        ("2026-12-03", "Asia/Kolkata", datetime(2026, 12, 3, 18, 29, 59, 999999, tzinfo=UTC)),
        # Santiago's clocks go back from midnight to 23:00 at the end of 4 April: its later pass.
        ("2026-04-04", "America/Santiago", datetime(2026, 4, 5, 3, 59, 59, 999999, tzinfo=UTC)),
        # West of UTC the last day ends after the last time held: that time answers the same.
        ("9999-12-31", "America/Los_Angeles", LATEST),
        ("0001-01-01", "Asia/Kolkata", datetime(1, 1, 1, 18, 6, 31, 999999, tzinfo=UTC)),
        # A time keeps its meaning, a naive one UTC.
        ("2026-12-03T00:00:00", "America/Los_Angeles", datetime(2026, 12, 3, tzinfo=UTC)),
        ("2026-12-03T10:00:00-08:00", "UTC", datetime(2026, 12, 3, 18, tzinfo=UTC)),
        (
            datetime(2026, 12, 3, tzinfo=UTC),
            "America/Los_Angeles",
            datetime(2026, 12, 3, tzinfo=UTC),
        ),
    ],
)
def test_a_bare_date_asked_of_means_the_end_of_that_day_in_the_memorys_zone(
    given: object, zone: str, expected: datetime
) -> None:
    moment = parse_asked_time(given, "as_of", zone)
    assert moment == expected
    assert moment.utcoffset() == timedelta(0)


def test_a_bare_date_asked_of_is_read_on_the_memorys_calendar() -> None:
    # The calendar a question's days ("tomorrow") are read in: the 3rd, on the zone's clock.
    given, _ = parse_asked_moment("2026-12-03", "known_at", "America/Los_Angeles")
    assert given.replace(tzinfo=None) == datetime(2026, 12, 3, 23, 59, 59, 999999)
    assert given.utcoffset() == timedelta(hours=-8)


@pytest.mark.parametrize("given", ["2023-02-29", "yesterday", 20261203])
def test_a_wrong_date_asked_of_is_refused_as_a_wrong_time(given: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_asked_time(given, "known_at", "UTC")
    assert str(caught.value).startswith("known_at must be an ISO 8601 time")


def test_iso_renders_utc_with_a_z() -> None:
    assert iso(datetime(2024, 5, 1, 14, 30, tzinfo=UTC)) == "2024-05-01T14:30:00Z"
    assert (
        iso(datetime(2024, 5, 1, 16, 30, 0, 5, tzinfo=timezone(timedelta(hours=2))))
        == "2024-05-01T14:30:00.000005Z"
    )
    assert iso(None) is None


def test_naive_utc_round_trip_keeps_the_instant() -> None:
    moment = datetime(2024, 5, 1, 16, 30, tzinfo=timezone(timedelta(hours=2)))
    naive = to_naive_utc(moment)
    assert naive == datetime(2024, 5, 1, 14, 30)
    assert naive.tzinfo is None
    assert from_naive_utc(naive) == moment
    assert from_naive_utc(None) is None


def test_micros_counts_from_the_epoch() -> None:
    assert micros(datetime(1970, 1, 1, tzinfo=UTC)) == 0
    assert micros(datetime(1970, 1, 1, 0, 0, 1, tzinfo=UTC)) == 1_000_000
    assert micros(datetime(1970, 1, 1, 0, 0, 1)) == 1_000_000
    assert micros(datetime(1969, 12, 31, 23, 59, 59, tzinfo=UTC)) == -1_000_000
