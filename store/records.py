"""Structured records: a typed set of field values kept as one observation.

``remember(record={"type": "Track", "fields": {"album_id": 176, ...}})`` stores an
observation whose text is the record in words ("Track: name=..., album_id=176") and, in the
graph, its type (``RecordType``) and one ``FieldValue`` node per distinct field value, shared
by every record holding it (``HAS_FIELD`` keeps this record's spelling and order). Recall
filters by field exactly (``where``) and ranks a record whose field holds a value the query
names above one that merely contains the number somewhere.

A nested object's fields are fields too, named by their path (``customer.country``), and a
list of values is one field holding each of them (``tags=[rock, metal]``; ``where`` on it
matches any). A list of objects is refused: each object is a record of its own. ``where``
names the record's type as ``"@type"``, which no field name can be (case-insensitive, as
field names are).

Values are typed when read and compared by type: an integer and a decimal compare as
numbers (``176`` is ``176.0``; decimals are exact, a JSON number is read through its shortest
repr), strings exactly but in either Unicode form of a letter (NFC: "Björk" typed, or pasted
with a combining accent; the value is kept as given), booleans as booleans, ``"YYYY-MM-DD"``
strings as dates and ISO 8601 date-times as instants. A number never matches the string
``"176"``. A date matches that day's dates and date-times (in UTC).
"""

from __future__ import annotations

import difflib
import itertools
import json
import math
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Context, Decimal, InvalidOperation
from typing import Any, NamedTuple

from doxa.store.drafts import MAX_NAME, MAX_SOURCE, MAX_TEXT, name, sent, unicode_text
from doxa.store.errors import InvalidInput
from doxa.store.values import TIME_RANGE

#: The most values one record may hold, the longest field name and the deepest path.
MAX_FIELDS = 100
MAX_FIELD_NAME = 64
MAX_DEPTH = 4
#: What ``HAS_FIELD`` appends to a field's name when the value is one of a list's.
_LISTED = "[]"
#: The most characters a number may take written out in full (a JSON float of 1e300 would
#: otherwise become a 300-digit key).
MAX_NUMBER = 40

#: A field's value as given: ``integer``, ``decimal``, ``string``, ``boolean``, ``date`` or
#: ``datetime``.
KINDS = ("integer", "decimal", "string", "boolean", "date", "datetime")

_FIELD_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: How ``where`` names a record's type: no field can be named so (``_FIELD_NAME``).
TYPE = "@type"
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
#: A date-time: any number of decimals of a second (more than 6 are refused: ``typed``), and
#: a space may come before the offset (``10:00:00 +02:00``, as some libraries write one).
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.(?P<fraction>\d+))?)?"
    r"((?P<space> )?([Zz]|[+-]\d{2}:?\d{2}))?"
)
#: The most decimals of a second a date-time keeps (a microsecond's).
_MOST_DECIMALS = 6

#: The casings of a ``where`` string a note names at most (the rest are counted).
_CASINGS_NAMED = 4
#: Normalises a number of any length this module lets through without rounding it.
_EXACT = Context(prec=MAX_NUMBER + 2)
_TOO_LONG = f"has more than {MAX_NUMBER} digits written out; send it as a string to keep it as text"
#: A JSON number as written: what the server passes on as its text when a float cannot carry
#: it (``server/exact.py``).
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")

Value = int | Decimal | str | bool | date | datetime
#: How a value is compared: (class, canonical text). Integers and decimals share "number".
Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class RecordField:
    """One value of a record: its field's name (a nested field's path, ``customer.country``)
    as given, its kind, its typed value and whether it is one of a list's."""

    name: str
    kind: str
    value: Value
    listed: bool = False

    @classmethod
    def loaded(cls, stored_name: str, kind: str, text: str, strict: bool = False) -> RecordField:
        """A field as ``HAS_FIELD`` keeps it (``stored_name``, ``stored`` text; ``strict``:
        as ``loaded``)."""
        listed = stored_name.endswith(_LISTED)
        name = stored_name.removesuffix(_LISTED) if listed else stored_name
        return cls(name, kind, loaded(kind, text, strict), listed)

    @property
    def stored_name(self) -> str:
        """The name ``HAS_FIELD`` keeps: a list's values say they are one."""
        return self.name + _LISTED if self.listed else self.name

    @property
    def key(self) -> str:
        """The name fields are matched by (case-insensitive)."""
        return field_key(self.name)

    def text(self) -> str:
        """The value as the record's text and the graph keep it (a decimal keeps its scale,
        a date-time its offset)."""
        return stored(self.kind, self.value)


@dataclass(frozen=True, slots=True)
class Record:
    """A validated record: its type and fields in the order given."""

    type: str
    fields: tuple[RecordField, ...]

    def line(self) -> str:
        """The record in words, the observation's text when none is given:
        ``"Track: name=Balls to the Wall, album_id=2, tags=[rock, metal]"``."""
        parts = [
            f"{path}=[{', '.join(f.text() for f in group)}]"
            if listed
            else ", ".join(f"{path}={f.text()}" for f in group)
            for (path, listed), group in self._runs()
        ]
        return f"{self.type}: " + ", ".join(parts)

    def is_in_words(self, text: str) -> bool:
        """Whether ``text`` is this record in words (``line``): the text remember writes when
        given none, as this version or one before types were composed wrote it (its type in
        another Unicode form, or its words parted by other whitespace); such a text is no
        text of the memory's own."""
        line = self.line()
        return text == line or _spaced_composed(text) == _spaced_composed(line)

    def identity(self) -> str:
        """What makes two records the same for duplicate detection: the type and each
        field's name, kind and exact value (``line`` reads 176 and "176" alike; a string in
        its composed Unicode form, as ``where`` compares it), fields in name order (a JSON
        object's order means nothing), a list's values in theirs."""
        fields = sorted(self.fields, key=lambda f: (f.key, f.listed))  # stable: lists keep order
        return json.dumps(
            [
                self.type,
                [
                    [
                        f.key,
                        f.listed,
                        f.kind,
                        composed(f.text()) if f.kind == "string" else f.text(),
                    ]
                    for f in fields
                ],
            ],
            ensure_ascii=False,
        )

    def in_another_form(self) -> bool:
        """Whether a string value is kept in another Unicode form than it is compared in
        (``composed``): its duplicate key (``identity``) and ``FieldValue`` may be as an
        earlier version, which compared strings as given, made them."""
        return any(
            f.kind == "string" and not unicodedata.is_normalized("NFC", f.text())
            for f in self.fields
        )

    def shown_fields(self) -> dict[str, Any]:
        """The fields as they were given: nested objects and lists rebuilt, each value as
        ``shown``."""
        out: dict[str, Any] = {}
        for (path, listed), group in self._runs():
            *parents, last = path.split(".")
            node = out
            for part in parents:
                node = node.setdefault(part, {})
            values = [shown(f.value) for f in group]
            node[last] = values if listed else values[0]
        return out

    def _runs(self) -> Iterator[tuple[tuple[str, bool], list[RecordField]]]:
        """The fields in order, a list's values together."""
        for key, group in itertools.groupby(self.fields, key=lambda f: (f.name, f.listed)):
            yield key, list(group)

    def keys(self) -> Iterator[tuple[str, str, str]]:
        """(field key, class, canonical) under which each field is found by ``where``; a
        date-time is found under its instant and its UTC day."""
        for f in self.fields:
            for cls, canonical in comparable(f.kind, f.value):
                yield f.key, cls, canonical


def _spaced_composed(text: str) -> str:
    """A text composed (NFC), its words parted by one space."""
    return " ".join(unicodedata.normalize("NFC", text).split())


def composed(text: str) -> str:
    """A string as it is compared: in its composed Unicode form (NFC), so that "Björk" typed
    and pasted with a combining accent are one value (they were two, and a where for one
    missed the other)."""
    return unicodedata.normalize("NFC", text)


def value_node(f: RecordField) -> tuple[str, str, str, str]:
    """The ``FieldValue`` a field's value is kept under, shared by every record holding it:
    (key, field key, class, canonical), the key the other three joined by ``|``
    (``comparable``'s first)."""
    cls, canonical = comparable(f.kind, f.value)[0]
    return f"{f.key}|{cls}|{canonical}", f.key, cls, canonical


def type_key(type_name: str) -> tuple[str, str, str]:
    """The key a record of this type is found under by ``where={"@type": ...}``, beside its
    fields' (``Record.keys``): types match as ``type_name_key`` reads them."""
    return TYPE, "type", type_name_key(type_name)


def type_name_key(given: str) -> str:
    """Record types match case-insensitively, as field names do, and in either Unicode form
    of a letter ("Café" typed, or pasted with a combining accent: NFC) and whatever runs of
    whitespace part their words, as topics do; a memory may hold a type remembered before
    types were normalised."""
    return type_name(given).casefold()


def type_name(given: str) -> str:
    """A record type as it is kept: in its composed Unicode form (NFC), its words parted by
    one space, so that "Café" typed and pasted with a combining accent, or "Widget  Pro" and
    "Widget Pro", are one type, shown as one."""
    return " ".join(unicodedata.normalize("NFC", given).split())


def field_key(field_name: str) -> str:
    """Field names match case-insensitively: ``Album_ID`` is ``album_id``."""
    return field_name.casefold()


def _number_text(number: Decimal) -> str:
    """Canonical text of a number: ``176``, ``176.0`` and ``1.76E+2`` are all ``176``, every
    digit kept (the default context would round past 28: two records' long integers were
    found as one)."""
    if number == 0:
        return "0"
    return format(number.normalize(_EXACT), "f")


def comparable(kind: str, value: Value) -> list[Key]:
    """The (class, canonical text) pairs a value is compared under."""
    if kind in ("integer", "decimal"):
        assert isinstance(value, int | Decimal)
        return [("number", _number_text(Decimal(value)))]
    if kind == "boolean":
        return [("boolean", "true" if value else "false")]
    if kind == "date":
        assert isinstance(value, date)
        return [("day", value.isoformat())]
    if kind == "datetime":
        assert isinstance(value, datetime)
        instant = value.astimezone(UTC)
        return [("instant", instant.isoformat()), ("day", instant.date().isoformat())]
    assert isinstance(value, str)
    return [("string", composed(value))]


#: The classes values are compared under (``comparable``), as a ``FieldValue`` names them.
CLASSES = ("number", "string", "boolean", "day", "instant")


def compared_value(cls: str, canonical: str) -> None:
    """Check a value as ``comparable`` keys it (a ``FieldValue``'s class and value): a number
    written out, ``true`` or ``false``, a ``YYYY-MM-DD`` day, an instant with its offset, or
    any text. The exact canonical text is not asked: an earlier version rounded a long
    number's.

    Raises:
        ValueError: ``cls`` is none of ``CLASSES``, or ``canonical`` no value of it.
    """
    if cls not in CLASSES:
        raise ValueError(f"a class values are compared under is one of {', '.join(CLASSES)}")
    if cls == "number":
        if not _NUMBER.fullmatch(canonical):
            raise ValueError("a number is written out in digits, e.g. 176 or 0.99")
    elif cls == "boolean":
        if canonical not in ("true", "false"):
            raise ValueError("a boolean is true or false, in lower case")
    elif cls == "day":
        if not _DATE.fullmatch(canonical):
            raise ValueError("a day is YYYY-MM-DD")
        date.fromisoformat(canonical)  # names no day ("2024-02-30"): a ValueError
    elif cls == "instant" and datetime.fromisoformat(canonical).tzinfo is None:
        raise ValueError("an instant has its offset, e.g. 2024-05-14T10:00:00+00:00")


def where_key(kind: str, value: Value) -> Key:
    """The one (class, canonical) a ``where`` value is looked up under: a date finds its
    day's dates and date-times, a date-time the same instant."""
    found = comparable(kind, value)
    return found[0]


def stored(kind: str, value: Value) -> str:
    """A typed value as text (``loaded`` reads it back)."""
    if kind == "boolean":
        return "true" if value else "false"
    if kind == "decimal":
        assert isinstance(value, Decimal)
        return format(value, "f")
    if isinstance(value, date | datetime):
        return value.isoformat()
    return str(value)


def loaded(kind: str, text: str, strict: bool = False) -> Value:
    """A value stored by ``stored``, typed again; ``strict`` (an import's check), a boolean
    other than the ``true`` or ``false`` ``stored`` writes is refused, not read as false (a
    memory that imported one before imports were so checked still opens, as it did).

    Raises:
        ValueError: the text is not a value of ``kind`` (a boolean's, only ``strict``).
    """
    if kind == "integer":
        return int(text)
    if kind == "decimal":
        return Decimal(text)
    if kind == "boolean":
        if strict and text not in ("true", "false"):
            raise ValueError("a boolean is true or false, in lower case")
        return text == "true"
    if kind == "date":
        return date.fromisoformat(text)
    if kind == "datetime":
        return datetime.fromisoformat(text)
    return text


def typed(
    value: object, field: str, kept: bool = False, *, asked: bool = False
) -> tuple[str, Value]:
    """Read one JSON value as (kind, typed value); ``kept``, a value the memory keeps already
    (an import reading a record back), whose text a JSON number beyond a float's range arrives
    as, or a date-time with more than 6 decimals of a second or a space before its offset,
    stays that text, as it was kept before such numbers and date-times were refused or read;
    ``asked`` (with ``kept``), a ``where``'s value, which finds such a text kept before, but
    a date-time with a space before its offset as the date-time it is now.

    Raises:
        InvalidInput: naming ``field``: not a string, number or boolean, a number too large
            or not finite (also as the text a JSON number beyond a float's range arrives
            as), a string too long, a date-shaped string that is no date, or a date-time with
            more decimals of a second than a microsecond's.
    """
    if isinstance(value, bool):
        return "boolean", value
    if isinstance(value, int):
        if len(str(value)) > MAX_NUMBER:
            raise InvalidInput(field, _TOO_LONG)
        return "integer", value
    if isinstance(value, float | Decimal):
        if isinstance(value, float) and not math.isfinite(value):
            raise InvalidInput(field, f"must be a finite number, got {value!r}")
        # The shortest repr: 0.1 stays 0.1, not 0.1000000000000000055...
        number = Decimal(repr(value)) if isinstance(value, float) else value
        if not number.is_finite():
            raise InvalidInput(field, f"must be a finite number, got {value}")
        # The exponent first: normalising 1e1000000 overflows the decimal context.
        if abs(number.adjusted()) >= MAX_NUMBER or len(_number_text(number)) > MAX_NUMBER:
            raise InvalidInput(field, _TOO_LONG)
        # -0.0 is 0.0 (as ``where`` compares them): one record, not two.
        return "decimal", number.copy_abs() if number.is_zero() else number
    if isinstance(value, str):
        if len(value) > MAX_SOURCE:
            raise InvalidInput(field, f"is {len(value)} characters long; the limit is {MAX_SOURCE}")
        text = unicode_text(value, field)
        # Over JSON, 1e400 and 1e-400 arrive as this text (a float would be infinite, or 0):
        # refused as 1e300 is, not kept as text (an inexact number in range is text, as sent).
        size = None if kept else _beyond_float(text)
        if size:
            raise InvalidInput(
                field,
                f"is {text}, a number too {size} for a float: more than {MAX_NUMBER} digits"
                " written out, more than a number may have (over JSON such a number arrives"
                " as its text, which is read as the number)",
            )
        # Shaped as a date but naming no day ("2024-02-30"): most likely a date gone wrong,
        # which kept as text no date would find.
        if _DATE.fullmatch(text):
            try:
                return "date", date.fromisoformat(text)
            except ValueError:
                raise InvalidInput(
                    field, f"{text!r} is shaped as a date (YYYY-MM-DD) but names no day; give one"
                ) from None
        shaped = _DATETIME.fullmatch(text)
        if shaped:
            decimals = len(shaped["fraction"] or "")
            if kept and (decimals > _MOST_DECIMALS or (shaped["space"] and not asked)):
                return "string", text  # kept so before such date-times were read
            if decimals > _MOST_DECIMALS:
                # Python would cut the digits past a microsecond, and the memory keeps a
                # value exactly: kept as text, a date bound would silently miss it.
                raise InvalidInput(
                    field,
                    f"{text!r} gives {decimals} decimals of a second; a date-time keeps at most"
                    f" {_MOST_DECIMALS} (microseconds): round it to {_MOST_DECIMALS}",
                )
            iso = text
            if shaped["space"]:  # ``fromisoformat`` reads it, but only on Python 3.11 on
                iso = text[: shaped.start("space")] + text[shaped.end("space") :]
            try:
                moment = datetime.fromisoformat(re.sub("[Zz]$", "+00:00", iso).replace("t", "T"))
            except ValueError:
                raise InvalidInput(
                    field,
                    f"{text!r} is shaped as an ISO 8601 date-time but names no moment; give one"
                    " (e.g. 2024-05-14T10:00:00Z)",
                ) from None
            # A time without an offset is UTC, as every time the memory reads.
            moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
            try:
                moment.astimezone(UTC)  # compared as an instant in UTC: it must be one
            except OverflowError:
                raise InvalidInput(field, f"must be a time {TIME_RANGE}, got {text!r}") from None
            return "datetime", moment
        return "string", text
    got = "null" if value is None else type(value).__name__
    raise InvalidInput(
        field,
        f"must be a string, number, boolean or ISO 8601 date, got {got}"
        + ("; leave out a field with no value" if value is None else ""),
    )


def _beyond_float(text: str) -> str | None:
    """Whether ``text`` is a JSON number beyond a float's range, which reaches the store as
    its text (``server/exact.py``): "large" (``1e400``, read as infinite), "small"
    (``1e-400``, not zero, read as 0), else None."""
    if not _JSON_NUMBER.fullmatch(text):
        return None
    if math.isinf(float(text)):
        return "large"
    # Zero only when every digit before the exponent is (Decimal refuses a huge exponent).
    nonzero = re.search("[1-9]", re.split("[eE]", text)[0]) is not None
    return "small" if nonzero and float(text) == 0 else None


def _field_name(raw: object, field: str, paths: bool = False) -> str:
    """A field's name as given; with ``paths``, also a nested field's path
    (``customer.country``)."""
    parts = raw.split(".") if paths and isinstance(raw, str) else [raw]
    if len(parts) > MAX_DEPTH + 1 or not all(
        isinstance(p, str) and _FIELD_NAME.fullmatch(p) and len(p) <= MAX_FIELD_NAME for p in parts
    ):
        raise InvalidInput(
            field,
            f"has the field name {raw!r}: a name is a letter or _ followed by letters,"
            f" digits or _, at most {MAX_FIELD_NAME} characters (album_id)"
            + (
                ", or a nested field's path of names joined by . (customer.country)"
                if paths
                else ""
            ),
        )
    assert isinstance(raw, str)
    return raw


def stored_field_name(stored_name: str, field: str) -> str:
    """A field's name as ``HAS_FIELD`` keeps it (a nested field's path, ``[]`` after a list's
    values), checked as a field's name or path is when a record is given.

    Raises:
        InvalidInput: naming ``field``: a name that could not have been given.
    """
    _field_name(stored_name.removesuffix(_LISTED), field, paths=True)
    return stored_name


def _flattened(
    given: Mapping[Any, Any], path: str, prefix: str = "", kept: bool = False
) -> Iterator[RecordField]:
    """Every value of a record's ``fields`` (at ``path``), nested objects' fields named by
    their path and each of a list's values a field of its own, in the order given (``kept``:
    as ``typed``)."""
    for raw_name, value in given.items():
        here = f"{path}.{raw_name}"
        name = prefix + _field_name(raw_name, here)
        if isinstance(value, Mapping):
            if not value:
                raise InvalidInput(here, "is an empty object; leave out a field with no value")
            if name.count(".") >= MAX_DEPTH:
                raise InvalidInput(
                    here,
                    f"nests deeper than {MAX_DEPTH} objects; give the deeper part as a"
                    " field of its own, or as text",
                )
            yield from _flattened(value, here, name + ".", kept)
        elif isinstance(value, list | tuple):
            if not value:
                raise InvalidInput(here, "is an empty list; leave out a field with no value")
            for i, item in enumerate(value):
                if isinstance(item, Mapping | list | tuple):
                    raise InvalidInput(
                        f"{here}[{i}]",
                        "is not a value: a list holds strings, numbers, booleans or dates;"
                        " remember each object in it as a record of its own",
                    )
                yield RecordField(name, *typed(item, f"{here}[{i}]", kept), listed=True)
        else:
            yield RecordField(name, *typed(value, here, kept))


def validate(raw: object, field: str = "record", kept: bool = False) -> Record:
    """Read a record as given: ``{"type": str, "fields": {name: value}}`` (``kept``: one the
    memory keeps already, as ``typed`` reads its values).

    Raises:
        InvalidInput: naming the field (``record.fields.album_id``): a wrong shape, an
            invalid type or field name, too many values, an empty object or list, objects
            nested too deep, a list of objects, two names that differ only in case, or a value
            of no known kind.
    """
    if not isinstance(raw, Mapping):
        raise InvalidInput(field, 'must be an object {"type": "Track", "fields": {...}}')
    unknown = sorted(str(k) for k in raw if k not in ("type", "fields"))
    if unknown:
        raise InvalidInput(f"{field}.{unknown[0]}", "is not a part of a record (type, fields)")
    given_type = name(raw.get("type"), f"{field}.type", MAX_NAME)
    assert given_type is not None
    kind = type_name(given_type)
    given = raw.get("fields")
    if not isinstance(given, Mapping) or not given:
        raise InvalidInput(f"{field}.fields", "must be a non-empty object {name: value}")
    fields: list[RecordField] = []
    seen: dict[str, str] = {}
    for f in _flattened(given, f"{field}.fields", kept=kept):
        if len(fields) == MAX_FIELDS:
            raise InvalidInput(
                f"{field}.fields", f"holds more than {MAX_FIELDS} values; the limit is {MAX_FIELDS}"
            )
        other = seen.setdefault(f.key, f.name)
        if other != f.name:  # a list's values share their name
            raise InvalidInput(
                f"{field}.fields.{f.name}", f"is the field {other!r} again (names ignore case)"
            )
        fields.append(f)
    record = Record(kind, tuple(fields))
    if len(record.line()) > MAX_TEXT:
        raise InvalidInput(
            f"{field}.fields",
            f"in words take {len(record.line())} characters; the limit is {MAX_TEXT}: split it",
        )
    return record


class WhereField(NamedTuple):
    """One field of a recall's ``where``: its key, the value it is compared with, its name
    as the recall gave it (what a note about it says), and how: ``=`` (equal), or one of
    ``COMPARISONS`` (a bound)."""

    key: str
    value: Key
    name: str
    op: str = "="
    #: The text a date-time was read from, which an earlier version kept as a string (with a
    #: space before its offset): an equality finds that string too.
    also: str | None = None


#: The comparisons a ``where`` may ask of a number or a date: {"milliseconds": {">": 3e5}}.
COMPARISONS = (">", ">=", "<", "<=")

#: The classes a comparison orders (strings and booleans have no order it could mean).
_ORDERED = ("number", "day", "instant")


def holds(cls: str, canonical: str, op: str, bound: str) -> bool:
    """Whether a value (``cls``, ``canonical``, as ``comparable`` keys it) stands ``op`` to
    ``bound`` (of the same class): numbers as numbers, dates and date-times in time."""
    if cls == "number":
        return _ordered(Decimal(canonical), Decimal(bound), op)
    if cls == "instant":  # in UTC, but a fraction of a second is written or not
        return _ordered(datetime.fromisoformat(canonical), datetime.fromisoformat(bound), op)
    return _ordered(canonical, bound, op)  # a day, YYYY-MM-DD: in order as written


def meets(cls: str, canonical: str, bounds: Sequence[WhereField]) -> bool:
    """Whether one value (``cls``, ``canonical``, as ``comparable`` keys it) meets every one
    of ``bounds``: a date-time's instant meets a date bound by its UTC day; a value of
    another class than a bound's meets none."""
    for bound in bounds:
        bound_cls, value = bound.value
        if bound_cls == cls:
            here = canonical
        elif bound_cls == "day" and cls == "instant":
            here = datetime.fromisoformat(canonical).astimezone(UTC).date().isoformat()
        else:
            return False
        if not holds(bound_cls, here, bound.op, value):
            return False
    return True


def conditions(wanted: Sequence[WhereField]) -> list[tuple[WhereField, ...]]:
    """A ``where`` as the conditions one value of a record must meet each: an equality
    alone, every bound of one field together (its key: names in any case are one field).
    A list field holds [1, 10]: 10 is over 5 and 1 is under 3, yet no value is both, and
    ``{">": 5, "<": 3}`` must not find it."""
    equal = [(w,) for w in wanted if w.op == "="]
    bounds: dict[str, list[WhereField]] = {}
    for w in wanted:
        if w.op != "=":
            bounds.setdefault(w.key, []).append(w)
    return equal + [tuple(group) for group in bounds.values()]


def _ordered(left: Any, right: Any, op: str) -> bool:
    if op == ">":
        return bool(left > right)
    if op == ">=":
        return bool(left >= right)
    if op == "<":
        return bool(left < right)
    return bool(left <= right)


def parse_where(raw: object) -> list[WhereField]:
    """A recall's ``where``: {field: value}, all of which must hold. A nested field is named
    by its path, ``{"customer.country": "Brazil"}``, the record's type by ``"@type"``; a value
    that is an object of comparisons bounds a number or a date (``{">=": 100, "<": 200}``);
    any other object is refused, not read as a path. A list's field holds a value if any of
    its values is that value (or, compared, any of them stands so).

    Returns:
        One ``WhereField`` per field.

    Raises:
        InvalidInput: naming ``where.<field>``: not an object, a bad field name or one
            named twice (in two cases), a value that is not a single string, number,
            boolean or ISO 8601 date, or comparisons that are not at most one lower and one
            upper bound, both numbers or both dates.
    """
    if not isinstance(raw, Mapping):
        raise InvalidInput("where", 'must be an object {field: value}, e.g. {"album_id": 176}')
    if len(raw) > MAX_FIELDS:
        raise InvalidInput("where", f"has {len(raw)} fields; the limit is {MAX_FIELDS}")
    wanted: list[WhereField] = []
    named: dict[str, str] = {}  # field key -> the name it was first given
    for raw_name, value in raw.items():
        path = f"where.{raw_name}"
        # Names in any case are one field: {"Price": 5, "price": 6} asks for it twice.
        if isinstance(raw_name, str):
            if (key := field_key(raw_name)) in named:
                raise InvalidInput(
                    path,
                    f"is the field where.{named[key]} names (names match in any case); give"
                    ' each field once, its bounds together, e.g. {"price": {">=": 5, "<": 9}}',
                )
            named[key] = raw_name
        if isinstance(raw_name, str) and raw_name.casefold() == TYPE:
            if not isinstance(value, str) or not value.strip():
                raise InvalidInput(path, 'must be a record type as text, e.g. "Track"')
            _, cls, canonical = type_key(value.strip())  # stripped, as a record's type is
            wanted.append(WhereField(TYPE, (cls, canonical), TYPE))
            continue
        field_name = _field_name(raw_name, path, paths=True)
        if isinstance(value, Mapping):
            wanted += _bounds(value, field_name, path)
            continue
        if isinstance(value, list | tuple):
            first = value[0] if value else None
            shown_first = json.dumps(first, ensure_ascii=False)
            scalar = isinstance(first, str | int | float | bool) and len(shown_first) <= 40
            example = shown_first if scalar else '"…"'
            raise InvalidInput(
                path,
                "must be one value (string, number, boolean or ISO 8601 date) to equal; a"
                " list field matches a record holding that value among its values, e.g."
                f' {{"{field_name}": {example}}}',
            )
        # Kept (``typed``): a text such as "1e400", which a memory may hold as text from
        # before such numbers were refused, is found as that text (an equality needs no
        # number; a bound, below, does); so is a date-time of 7 decimals of a second.
        kind, typed_value = typed(value, path, kept=True, asked=True)
        also = (
            comparable("string", value)[0][1]
            if kind == "datetime" and isinstance(value, str)
            else None
        )
        wanted.append(
            WhereField(field_key(field_name), where_key(kind, typed_value), field_name, also=also)
        )
    return wanted


def _bounds(value: Mapping[Any, Any], field_name: str, path: str) -> list[WhereField]:
    """The comparisons of one ``where`` field, ``{">=": 100, "<": 200}``.

    Raises:
        InvalidInput: an object that holds no comparisons (a nested field is named by its
            path), two lower or two upper bounds, a bound that is no number or ISO 8601
            date, or a number bound beside a date bound.
    """
    if not value or not all(op in COMPARISONS for op in value):
        raise InvalidInput(
            path,
            "must be one value (string, number, boolean or ISO 8601 date) to equal, or"
            f" comparisons ({', '.join(COMPARISONS)}) of a number or date, e.g."
            f' {{">=": 100}}; a nested field is named by its path, e.g.'
            ' {"customer.country": "Brazil"}',
        )
    # {">": 1, ">=": 2} says one bound twice: whichever was meant, the other is a mistake.
    for side, ops in (("lower", (">", ">=")), ("upper", ("<", "<="))):
        given = [op for op in value if op in ops]
        if len(given) > 1:
            raise InvalidInput(
                path,
                f"has two {side} bounds ({' and '.join(given)}); give at most one lower bound"
                ' (> or >=) and one upper bound (< or <=), e.g. {">=": 100, "<": 200}',
            )
    bounds = []
    for op, bound in value.items():
        size = _beyond_float(bound) if isinstance(bound, str) else None
        if size:  # how a JSON number beyond a float's range arrives: no text of a number
            raise InvalidInput(
                f"{path}.{op}",
                f"is {bound}, a number too {size} to compare: a bound is a number of at most"
                f" {MAX_NUMBER} digits written out",
            )
        try:
            kind, typed_value = typed(bound, f"{path}.{op}")
        except InvalidInput as refused:
            if refused.problem != _TOO_LONG:
                raise
            raise InvalidInput(
                refused.field,
                f"has more than {MAX_NUMBER} digits written out; a bound is a number of at"
                f" most {MAX_NUMBER} digits",
            ) from None
        key = where_key(kind, typed_value)
        if key[0] == "string" and isinstance(bound, str) and _NUMBER.fullmatch(bound.strip()):
            # Over JSON, a number a float cannot carry arrives as its text (server/exact.py).
            raise InvalidInput(
                f"{path}.{op}",
                f"is {bound!r}, a number as text; send a JSON number (over JSON one of more"
                " than 15 significant digits may arrive as text: give fewer)",
            )
        if key[0] not in _ORDERED:
            raise InvalidInput(
                f"{path}.{op}",
                f"compares numbers and dates; give a number or an ISO 8601 date, got {sent(bound)}",
            )
        bounds.append(WhereField(field_key(field_name), key, field_name, op))
    # One value meets both bounds (``conditions``), and none is a number and a date.
    kinds = ["number" if b.value[0] == "number" else "date" for b in bounds]
    if len(set(kinds)) > 1:
        raise InvalidInput(
            path,
            f"bounds a {kinds[0]} and a {kinds[1]}; the bounds must be both numbers or both"
            ' dates, e.g. {">=": "2024-01-01", "<": "2024-02-01"}',
        )
    return bounds


#: A class of values in words, as a note on an unmatched ``where`` names it.
_CLASS_WORDS = {
    "number": ("numbers", "a number"),
    "string": ("strings", "a string"),
    "boolean": ("booleans", "true or false"),
    "day": ("dates", 'a date, "YYYY-MM-DD"'),
    "instant": ("date-times", "an ISO 8601 date-time"),
}


def unmatched_where(
    wanted: Sequence[WhereField],
    values: Iterable[tuple[str, str, str]],
    fields: Mapping[str, int],
    types: Mapping[str, int],
    type_fields: Mapping[str, tuple[str, set[str]]] | None = None,
    held_now: Callable[[tuple[str, str, str]], bool] | None = None,
) -> str | None:
    """Why a recall's ``where`` (``parse_where``) can match no record at all, naming the field
    and the fix; None when every field is held with values of the class asked and the type
    asked is some record's (the value may then simply be absent, unless a record holds it
    in another case only: strings match exactly).

    Args:
        wanted: the ``where`` parsed.
        values: the (field key, class, canonical) each value a record holds is found under
            (``Record.keys``), each once.
        fields: per field key, how many records hold it (the most held are named first).
        types: per record type, how many records are of it (the most held named first).
        type_fields: per record type (``type_name_key``), its name and the fields its records hold:
            a field held by other types' records only is named with the type's fields.
        held_now: whether a record holds the value now (None: every one of ``values`` is).
    """
    # The classes each asked field holds: one pass over the values, on this rare path only.
    classes: dict[str, set[str]] = {w.key: set() for w in wanted if fields.get(w.key)}
    # The strings asked to equal, casefolded, and those held that differ only so.
    folded = {
        (w.key, w.value[1].casefold()): w
        for w in wanted
        if w.key in classes and w.op == "=" and w.value[0] == "string"
    }
    cased: dict[tuple[str, str], list[str]] = {}
    if classes:
        for key in values:
            field, cls, canonical = key
            if field in classes:
                classes[field].add(cls)
            fold = (field, canonical.casefold())
            if cls == "string" and fold in folded and (held_now is None or held_now(key)):
                cased.setdefault(fold, []).append(canonical)
    for field, (cls, canonical), given, op, _ in wanted:
        if field == TYPE:
            named = sorted(types, key=lambda t: (-types[t], t))
            if canonical in {type_name_key(t) for t in named}:
                continue
            close = difflib.get_close_matches(canonical, [type_name_key(t) for t in named], n=1)
            if close:
                same = next(t for t in named if type_name_key(t) == close[0])
                return f'where.{TYPE}: no record is of this type; did you mean "{same}"?'
            if not named:
                return f"where.{TYPE}: no record is of this type; no records are stored"
            return f"where.{TYPE}: no record is of this type; types: " + ", ".join(named[:10])
        if field not in classes:
            if field == "type" and types:  # the record's own type, more likely
                return f'where.{given}: no record has this field; a record\'s type is "{TYPE}"'
            known = sorted(fields, key=lambda f: (-fields[f], f))
            inside = [f for f in known if f.startswith(f"{field}.")]
            if inside:  # an object's name: its fields are named by their paths
                return (
                    f"where.{given}: records hold an object here; name one of its fields: "
                    + ", ".join(inside[:10])
                )
            meant = _field_like(field, known)
            if meant:
                return f'where.{given}: no record has this field; did you mean "{meant}"?'
            if not known:
                return f"where.{given}: no record has this field; no records are stored"
            return f"where.{given}: no record has this field; fields: " + ", ".join(known[:10])
        beyond = _beyond_float(canonical) if cls == "string" else None
        if beyond and cls not in classes[field]:
            # 1e400 sent as a JSON number arrives as its text, searched as such (a text kept
            # so before is found): the number itself no record can hold.
            return (
                f"where.{given}: {canonical} is a number too {beyond} for a float, which no"
                " record holds (nor this text)"
            )
        # A date meets a date-time bound as the instant its day begins (``where_rows``).
        bounds_dates = cls == "instant" and op != "=" and "day" in classes[field]
        if cls not in classes[field] and not bounds_dates:
            kinds = " and ".join(_CLASS_WORDS[c][0] for c in sorted(classes[field]))
            # A bound is a number or a date: suggest only the classes a comparison orders.
            fixes = [c for c in sorted(classes[field]) if op == "=" or c in _ORDERED]
            if not fixes:
                return (
                    f"where.{given}: records hold {kinds} here, which do not compare by"
                    f' order; give one value to equal, e.g. {{{json.dumps(given)}: "..."}}'
                )
            fix = " or ".join(_CLASS_WORDS[c][1] for c in fixes)
            return (
                f"where.{given}: records hold {kinds} here, not {_CLASS_WORDS[cls][0]}; "
                f"give the value as {fix}"
            )
    for (field, _), w in folded.items():
        spelt = sorted(cased.get((field, w.value[1].casefold()), []))
        if spelt and w.value[1] not in spelt:
            # Every casing held, as naming one ("food") read as the only spelling when
            # records hold "FOOD" too.
            quoted = [f'"{c}"' for c in spelt[:_CASINGS_NAMED]]
            meant = " or ".join([", ".join(quoted[:-1]), quoted[-1]] if quoted[:-1] else quoted)
            more = len(spelt) - len(quoted)
            return (
                f'where.{w.name}: no record holds "{w.value[1]}" here; strings match exactly:'
                f" did you mean {meant}{f' (+{more} more)' if more else ''}?"
            )
    asked_types = [w.value[1] for w in wanted if w.key == TYPE]
    for canonical in asked_types if type_fields else []:
        assert type_fields is not None
        name, held = type_fields.get(canonical, ("", set()))
        for field, _, given, _, _ in wanted:
            if field != TYPE and held and field not in held:
                return (
                    f'where.{given}: no record of type "{name}" has this field; its fields: '
                    + ", ".join(sorted(held)[:10])
                )
    if type_fields and not asked_types:
        return _no_type_holds_all(wanted, types, type_fields)
    return None


def _no_type_holds_all(
    wanted: Sequence[WhereField],
    types: Mapping[str, int],
    type_fields: Mapping[str, tuple[str, set[str]]],
) -> str | None:
    """Why a ``where`` whose fields are each held, but by records of different types only,
    matches no record (a record is of one type), naming the types that hold each; None when
    one type holds them all."""
    asked = {w.key: w.name for w in wanted if w.key != TYPE}  # a field's bounds: one field
    if len(asked) < 2 or any(asked.keys() <= held for _, held in type_fields.values()):
        return None
    by_count = sorted(type_fields.values(), key=lambda t: (-types.get(t[0], 0), t[0]))
    held_by = []
    for key, given in asked.items():
        names = [name for name, held in by_count if key in held]
        held_by.append(f"{given}: {', '.join(names[:3])}{', …' if len(names) > 3 else ''}")
    return (
        f"where: no record type has all these fields ({'; '.join(held_by)}); a record is of"
        f' one type: drop a field, or give "{TYPE}" to see one type\'s fields'
    )


def _field_like(field: str, known: Sequence[str]) -> str | None:
    """The known field (most held first) a ``where`` most likely meant by an unknown name: a
    nested field it names the end of ("zip" for address.zip), else one spelled nearly so
    ("album_idd" for album_id; "zip" is not "vip")."""
    ends = [f for f in known if f.rsplit(".", 1)[-1] == field]
    if ends:
        return ends[0]
    close = difflib.get_close_matches(field, known, n=1, cutoff=_CLOSE)
    return close[0] if close else None


#: How alike (``difflib``'s ratio) an unknown field's name must be to a known one to be
#: offered for it: "zip" and "vip" (0.67), "discount" and "address.country" (0.61) are not.
_CLOSE = 0.75


def shown(value: Value) -> int | float | str | bool:
    """A field's value as JSON shows it: a decimal as a number when a float says it
    exactly, else as its exact text; dates as ISO 8601."""
    if isinstance(value, bool | int):
        return value
    if isinstance(value, Decimal):
        as_float = float(value)
        if math.isfinite(as_float) and Decimal(repr(as_float)) == value:
            return as_float
        return format(value, "f")
    if isinstance(value, date | datetime):
        return value.isoformat()
    return value


# ---- a query that names a field and a value ---------------------------------------------------

#: A number as a query writes one: digits, a point, an exponent.
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_QUERY_TOKEN = re.compile(r"[^\s,;=()\[\]{}\"'?!]+")
#: How many words after a field name its value may start ("album_id is 176").
_VALUE_REACH = 3
#: The longest string value a query's words are matched against, in words.
_PHRASE_WORDS = 6


def query_pairs(
    query: str, known_fields: Mapping[str, object], types: Collection[str] = ()
) -> list[tuple[str, list[Key], list[str]]]:
    """The (field key, exact values, loose string values) a query names: each known field
    name in its words ("album_id", or "album id" for it; "order" for an ``order_id`` when no
    field is named "order": ``_ID_ENDINGS``), with the words after it read as values:
    numbers, booleans and dates up to the next field name or a record type's name
    (``types``, as ``type_name_key`` keys them: "price of item 30" asks no price of 30),
    phrases of words past it.

    Exact values are (class, canonical) keys; loose ones are phrases of words (``loose``) for
    string fields, matched case- and punctuation-insensitively (ranking is forgiving where
    ``where`` is exact).
    """
    words = _words(composed(query))  # as ``loose`` reads a value
    spans = _field_spans(words, known_fields)
    found: list[tuple[str, list[Key], list[str]]] = []
    for n, (key, _, after) in enumerate(spans):
        end = spans[n + 1][1] if n + 1 < len(spans) else len(words)
        typed_at = (i for i in range(after, end) if _names_a_type(words[i], types))
        end = next(typed_at, end)
        exact: list[Key] = []
        loose: list[str] = []
        # A string value may start with, or hold, another field's name: "title Year of the
        # Cat" names the title "Year of the Cat" though other records have a field "year".
        for start in range(after, min(after + _VALUE_REACH, len(words))):
            try:
                kind, value = typed(_number(words[start]), "query")
            except InvalidInput:
                continue
            if kind != "string" and start < end:
                exact.append(where_key(kind, value))
            loose.extend(
                " ".join(words[start : start + size]).casefold()
                for size in range(1, min(_PHRASE_WORDS, len(words) - start) + 1)
            )
        if exact or loose:
            found.append((key, exact, loose))
    return found


def _words(text: str) -> list[str]:
    """A text's words as a query's are read: split at spaces and punctuation, a word's
    trailing "." or ":" dropped."""
    return [w for w in (w.rstrip(".:") for w in _QUERY_TOKEN.findall(text)) if w]


def loose(value: str) -> str:
    """A string value as a query's words match it: its words (``_words``) casefolded, so
    "Guns N' Roses" is named by guns n roses, "Hello, World" by hello world, in its composed
    Unicode form (``composed``)."""
    return " ".join(_words(composed(value))).casefold()


#: A hyphen inside a query's word ("album-id"): no field name holds one, so it is read as
#: the space or the joint it stands for.
_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")

#: The endings of a field that names its record by a value ("order_id", "invoice_no"): the
#: words before them name the field in a query ("order 5042"), if no field is named so.
_ID_ENDINGS = ("_id", "_no", "_num", "_number", "_code", "_ref", ".id")


def _names_a_type(word: str, types: Collection[str]) -> bool:
    """Whether a query's word names a record type (``types``, as ``type_name_key`` keys
    them), also in the plural ("orders" for Order)."""
    word = type_name_key(word)
    return word in types or (word.endswith("s") and word[:-1] in types)


def _field_spans(
    words: list[str], known_fields: Mapping[str, object]
) -> list[tuple[str, int, int]]:
    """(field key, first word, the word after it) of every known field name in ``words``,
    in order; a name may be written as words ("unit price", "unit-price" for unit_price),
    longest first, and an identifying field by the words before its ending
    (``_ID_ENDINGS``)."""
    stems: dict[str, str] = {}
    for known in sorted(known_fields):
        for ending in _ID_ENDINGS:
            stem = known.removesuffix(ending)
            if stem != known and stem and stem not in known_fields:
                stems.setdefault(stem, known)
    spans: list[tuple[str, int, int]] = []
    i = 0
    while i < len(words):
        for size in (4, 3, 2, 1):
            if i + size > len(words):
                continue
            # "unit price" for unit_price; "customer country" for customer.country; a
            # hyphen joins as a space does ("unit-price", "album-id": punctuation aside)
            keys = {
                field_key(_HYPHEN.sub(joint, joint.join(words[i : i + size])))
                for joint in ("_", ".")
            }
            key = next((k for k in sorted(keys) if k in known_fields), None)
            if key is None:
                key = next((stems[k] for k in sorted(keys) if k in stems), None)
            if key is not None:
                spans.append((key, i, i + size))
                i += size
                break
        else:
            i += 1
    return spans


def _number(word: str) -> object:
    """A query word as the value it reads as: a number or boolean, else the word."""
    if word.casefold() in ("true", "false"):  # read loosely, as strings are
        return word.casefold() == "true"
    if not _NUMBER.fullmatch(word):  # not "1_76", which Python reads as 176, nor "NaN"
        return word
    try:
        return int(word)
    except ValueError:
        pass
    try:
        number = Decimal(word)
    except InvalidOperation:
        return word
    return number if number.is_finite() else word
