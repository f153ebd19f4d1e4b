"""Exact decimals and UTC times: how the memory reads values from the outside world.

Confidence and weights are exact decimals end to end. A JSON number arrives in Python as a
float; it is read through its shortest repr, so ``0.1`` stays ``Decimal("0.1")`` rather than
``0.1000000000000000055…``. Times are timezone-aware UTC; a naive time is taken to be UTC,
and a bare date (``2026-12-03``) means its midnight UTC, except where a question is asked of
a time (``as_of``, ``known_at``: ``parse_asked_time``), where it means the end of that day in
the memory's time zone ("what did we believe on the 3rd?" is by the end of the 3rd).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, date, datetime, time, timedelta, timezone, tzinfo
from decimal import Decimal, InvalidOperation

from doxa.store.errors import InvalidInput

#: Fractional digits stored for confidence and weights (Kùzu ``DECIMAL(19, 18)``).
SCALE = 18
_QUANTUM = Decimal(1).scaleb(-SCALE)
_ONE = Decimal(1)
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
#: The times the memory holds, in UTC: the range of Python's datetime. Kùzu's TIMESTAMP counts
#: microseconds in an int64 and stores this whole range exactly, but its Python driver cannot
#: read back a time outside it (it crashes the process), so nothing outside may be written.
EARLIEST = datetime.min.replace(tzinfo=UTC)
LATEST = datetime.max.replace(tzinfo=UTC)
#: The times the memory holds, in words (what a refusal of another time says).
TIME_RANGE = "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z (in UTC)"


def parse_limit(value: object, field: str, most: int) -> int:
    """Read a count of results: a whole number from 1 to ``most`` (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
        raise InvalidInput(field, f"must be a whole number from 1 to {most}, got {value!r}")
    return value


def parse_unit_decimal(value: object, field: str) -> Decimal:
    """Read a confidence or weight: an exact decimal between 0 and 1 inclusive.

    Args:
        value: a string (``"0.8"``), an int, or a float (read through its shortest repr).
        field: the parameter name, used in the error.

    Returns:
        The exact value as a ``Decimal``.

    Raises:
        InvalidInput: not a number, out of range, or more than 18 decimal places.
    """
    if isinstance(value, bool):
        raise InvalidInput(field, f"must be a decimal number between 0 and 1, got {value!r}")
    if isinstance(value, Decimal):
        number = value
    elif isinstance(value, int):
        number = Decimal(value)
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(field, f"must be between 0 and 1, got {value!r}")
        number = Decimal(repr(value))
    elif isinstance(value, str):
        try:
            number = Decimal(value.strip())
        except InvalidOperation:
            raise InvalidInput(
                field, f'must be a decimal number between 0 and 1 such as "0.8", got {value!r}'
            ) from None
    else:
        raise InvalidInput(field, f"must be a decimal number between 0 and 1, got {value!r}")
    if not number.is_finite():
        raise InvalidInput(field, f"must be between 0 and 1, got {value!r}")
    if number < 0 or number > _ONE:
        raise InvalidInput(field, f"must be between 0 and 1, got {value}")
    if number != number.quantize(_QUANTUM):
        raise InvalidInput(
            field, f"has more than {SCALE} decimal places: {value}; round it to {SCALE}"
        )
    if number == 0:
        return Decimal(0)  # "-0" and "0.000" are plain zero
    return number


def decimal_text(value: Decimal) -> str:
    """Render a stored decimal without trailing zeros (``0.800000`` becomes ``"0.8"``)."""
    text = format(value.normalize(), "f")
    return text


def scaled(value: Decimal) -> int:
    """The decimal as an integer count of 1e-18 units: exact, and comparable in numpy."""
    return int(value.scaleb(SCALE).to_integral_value())


#: Python's reason for a time of the right shape naming no such part ("day is out of range
#: for month", "month must be in 1..12"); its other reasons are no help to a caller.
_PART_OUT_OF_RANGE = re.compile(r"(year|month|day|hour|minute|second)\b")


def parse_time(value: object, field: str) -> datetime:
    """Read an ISO 8601 time (or a datetime) as an aware UTC datetime.

    A time without an offset is taken to be UTC. A bare date means its midnight UTC.

    Raises:
        InvalidInput: the value is not an ISO 8601 time, or is outside ``EARLIEST``..``LATEST``
            once converted to UTC (``0001-01-01T00:00:00+05:00`` is in year 0).
    """
    return parse_moment(value, field)[1]


def parse_moment(value: object, field: str) -> tuple[datetime, datetime]:
    """``parse_time``, also in the offset it was given in (the speaker's calendar): (as
    given, in UTC).

    Raises:
        InvalidInput: as ``parse_time``.
    """
    if isinstance(value, datetime):
        moment = value
    elif isinstance(value, str):
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            moment = datetime.fromisoformat(text)
        except ValueError as error:
            # A time of the right shape naming no such day or hour says which part is wrong.
            why = f" ({error})" if _PART_OUT_OF_RANGE.match(str(error)) else ""
            raise InvalidInput(
                field,
                f'must be an ISO 8601 time such as "2024-05-01T14:30:00Z", got {value!r}{why}',
            ) from None
    else:
        raise InvalidInput(
            field, f'must be an ISO 8601 time such as "2024-05-01T14:30:00Z", got {value!r}'
        )
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment, moment.astimezone(UTC)
    except OverflowError:
        raise InvalidInput(field, f"must be a time {TIME_RANGE}, got {value!r}") from None


def parse_asked_time(value: object, field: str, zone: str) -> datetime:
    """Read the time a question is asked of (``as_of``, ``known_at``) as an aware UTC datetime:
    as ``parse_time``, but a bare date (``2026-12-03``, or any ISO 8601 date without a time)
    means the last instant of that day (23:59:59.999999) in the time zone ``zone`` names (the
    ``timezone`` setting, as ``in_zone`` reads it), as asked "by the end of the 3rd": the
    clocks compare with ``<=``, so what was told at 23:59:59 on the 3rd is held then and what
    was told at 00:00 on the 4th is not.

    Raises:
        InvalidInput: as ``parse_time``.
    """
    return parse_asked_moment(value, field, zone)[1]


def parse_asked_moment(value: object, field: str, zone: str) -> tuple[datetime, datetime]:
    """``parse_asked_time``, also on the clock it was asked in (the calendar a question's days
    are read in): (as given, in UTC); a bare date's is the end of that day on ``zone``'s clock.

    Raises:
        InvalidInput: as ``parse_time``.
    """
    day = _bare_date(value)
    if day is None:
        return parse_moment(value, field)
    # fold=1: on a day whose last hour is repeated (a zone's clocks going back at midnight),
    # its later pass, the day's true end.
    end = datetime.combine(day, time.max, tzinfo=_zone_info(zone)).replace(fold=1)
    try:
        if end.tzinfo is None:  # "local": the machine's offset as it is on that day
            end = end.astimezone()
        return end, end.astimezone(UTC).replace(fold=0)
    except (OverflowError, ValueError):
        # 9999-12-31 west of UTC ends after the last time the memory holds, which comes
        # after everything in it: asked "by then", the last time answers the same.
        return LATEST, LATEST


def _bare_date(value: object) -> date | None:
    """The day ``value`` names when it is a date without a time of day, else None."""
    if not isinstance(value, str):
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        return None


def _zone_info(zone: str) -> tzinfo | None:
    """The tzinfo of the ``timezone`` setting ``zone`` (as ``in_zone`` reads it); None for
    ``local``, whose offset depends on the day (``datetime.astimezone`` finds it)."""
    if zone == "local":
        return None
    if zone == "UTC":
        return UTC
    from zoneinfo import ZoneInfo  # cached per name by the module

    return ZoneInfo(zone)


def utc_now() -> datetime:
    """The current time, aware, in UTC, truncated to microseconds as Kùzu stores it."""
    return datetime.now(UTC)


def in_zone(moment: datetime, zone: str) -> datetime:
    """``moment`` (aware) on the clock of the time zone ``zone`` names (the ``timezone``
    setting): ``local``, the machine's, as it is at that moment (daylight saving follows);
    ``UTC``; or an IANA name (``Europe/Paris``)."""
    return moment.astimezone(_zone_info(zone))  # None: the machine's own


#: The largest UTC offset a time may be told in, in minutes either side (Python's limit: less
#: than a day).
MAX_OFFSET = 24 * 60 - 1


def offset_minutes(moment: datetime) -> int:
    """The UTC offset of ``moment`` (aware), in whole minutes east of UTC: the calendar it
    was told in, as the graph keeps it (``Observation.told_offset``). An offset's seconds
    (no zone has had any since 1972) are dropped."""
    offset = moment.utcoffset()
    assert offset is not None
    return int(offset.total_seconds() / 60)


def told_in(moment: datetime, offset: int | None, zone: str) -> datetime:
    """``moment`` (aware) on the clock it was told on: that of ``offset`` (minutes east of UTC,
    as ``offset_minutes`` gives) when one was kept, else of the time zone ``zone`` names (an
    observation stored before offsets were kept: ``in_zone``)."""
    if offset is None:
        return in_zone(moment, zone)
    try:
        return moment.astimezone(timezone(timedelta(minutes=offset)))
    except OverflowError:
        # Only an imported offset can move a time kept at the very end of the range off
        # it (a time told so was within it as told): read it on UTC's clock instead.
        return moment.astimezone(UTC)


def to_naive_utc(moment: datetime) -> datetime:
    """The naive UTC datetime Kùzu binds (it drops offsets silently, so convert first)."""
    return moment.astimezone(UTC).replace(tzinfo=None)


def from_naive_utc(moment: datetime | None) -> datetime | None:
    """An aware UTC datetime from a naive one read back from Kùzu."""
    return None if moment is None else moment.replace(tzinfo=UTC)


def micros(moment: datetime) -> int:
    """Microseconds since the epoch: the integer time used by in-memory filters."""
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return (aware - _EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    """The aware UTC time of microseconds since the epoch (``micros`` undone)."""
    return _EPOCH + timedelta(microseconds=value)


def iso(moment: datetime | None) -> str | None:
    """ISO 8601 text with a ``Z`` suffix, or None. A naive time (as Kùzu returns) is UTC."""
    if moment is None:
        return None
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).isoformat().replace("+00:00", "Z")
