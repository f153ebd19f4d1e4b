"""What a caller asks the memory to remember, and its validation.

``MemoryDraft`` holds raw values as a caller (an MCP tool, a script) gives them; ``validate``
turns it into a ``NewMemory`` with exact types or raises ``InvalidInput`` naming the field and
the fix. Validation happens before anything is written, for every memory of a batch.

Texts (the observation's text and its source) are kept exactly as given, whitespace included:
what a client sends is what is stored. Names (agent, topics, episode, the parts of a fact, ids)
are identities that a client types again to find things, so surrounding whitespace is dropped.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from doxa.store.errors import InvalidInput
from doxa.store.values import (
    in_zone,
    offset_minutes,
    parse_moment,
    parse_time,
    parse_unit_decimal,
    utc_now,
)

if TYPE_CHECKING:
    from doxa.store.event_time import EventTime
    from doxa.store.records import Record

MAX_TEXT = 32_000
MAX_NAME = 200
MAX_SOURCE = 2_000
MAX_TOPICS = 50
MAX_LINKS = 100

#: A predicate's cardinality: "one" (a newer object supersedes the current one) or "many"
#: (objects accumulate until retracted or ended by valid_until).
CARDINALITIES = ("one", "many")
#: How far ahead of this machine's clock an ``observed_at`` may be (another machine's clock
#: may run fast); beyond, it is refused: nothing is observed before it happens, and recall
#: of now would not find it.
FUTURE_SKEW = timedelta(minutes=5)
_PREDICATE_SEPARATORS = re.compile(r"[\s_\-]+")


def predicate_key(predicate: str) -> str:
    """The one name of a predicate: "lives in", "lives_in", "Lives-In" and " LIVES   in " are
    all ``lives_in`` (case-folded, words split on whitespace, ``_`` and ``-``, joined by ``_``),
    in either Unicode form of a letter ("é" typed, or "e" with a combining accent: NFC)."""
    folded = unicodedata.normalize("NFC", predicate).casefold()
    return "_".join(w for w in _PREDICATE_SEPARATORS.split(folded) if w)


def predicate_words(predicate: str) -> str:
    """A predicate's words, to read what it names (``settings.unlisted_cardinality``): its
    ``predicate_key`` with camelCase split too ("hasSister" -> ``has_sister``, "favoriteColor"
    -> ``favorite_color``, "HTMLParser" -> ``html_parser``). Not its stored name: "hasSister"
    and "hassister" are one predicate, which a split name would make two, leaving the facts
    stored under ``hassister`` behind."""
    text = unicodedata.normalize("NFC", predicate)
    split = []
    for i, letter in enumerate(text):
        if i and letter.isupper():
            before, after = text[i - 1], text[i + 1 : i + 2]
            # A word begins at a capital after a small letter or digit ("hasSister"), or at
            # the last capital of a run that a small letter follows ("HTMLParser").
            if before.islower() or before.isdigit() or (before.isupper() and after.islower()):
                split.append(" ")
        split.append(letter)
    return predicate_key("".join(split))


@dataclass
class FactDraft:
    """A subject-predicate-object triple with optional validity, as given."""

    # Any: raw values as the caller gave them (``object`` is also a field name here).
    subject: Any
    predicate: Any
    object: Any
    valid_from: Any = None
    valid_until: Any = None
    cardinality: Any = None


@dataclass
class SupportDraft:
    """Evidence for an existing belief: the new observation supports ``belief_id``."""

    belief_id: object
    weight: object = "1"


@dataclass
class MemoryDraft:
    """One memory to remember, with values as the caller gave them. ``record`` is
    ``{"type": str, "fields": {name: value}}`` (see ``records``); with one, ``text`` may be
    None (the record in words is the text)."""

    text: object
    topics: object = field(default_factory=list)
    agent: object = None
    confidence: object = "1"
    observed_at: object = None
    source: object = None
    episode: object = None
    fact: FactDraft | None = None
    supports: object = field(default_factory=list)
    contradicts: object = field(default_factory=list)
    record: object = None


@dataclass(frozen=True)
class Fact:
    """A validated fact triple; ``predicate`` is normalised (``predicate_key``)."""

    subject: str
    predicate: str
    object: str
    valid_from: datetime | None
    valid_until: datetime | None
    cardinality: str | None = None  # as given: "one", "many", or None (the predicate's own)
    #: The predicate's words as given (``predicate_words``): what its cardinality is read
    #: from when it is unlisted ("hasSister" names a sister, though stored ``hassister``).
    words: str = field(default="", compare=False)
    #: Whether ``valid_from`` is the time the words gave (``begun_as_told``), not the caller.
    from_words: bool = field(default=False, compare=False)
    #: The words ``valid_until`` was read from ("until Friday", ``ended_as_told``); empty
    #: when it was given, or there is none.
    until_words: str = field(default="", compare=False)


@dataclass(frozen=True)
class NewMemory:
    """A validated memory, ready to write."""

    text: str
    text_key: str
    topics: tuple[str, ...]
    agent: str
    confidence: Decimal
    observed_at: datetime | None
    source: str | None
    episode: str | None
    fact: Fact | None
    supports: tuple[tuple[str, Decimal], ...]
    contradicts: tuple[str, ...]
    # When what it tells of happened, read from its words against when it was said.
    event_times: tuple[EventTime, ...] = ()
    record: Record | None = None
    #: The UTC offset its words were read in, minutes east of UTC: ``observed_at``'s as
    #: given, else the memory zone's when it was told. Kept, so that a text read again
    #: later (a migration, an import) is read in the same calendar.
    told_offset: int = 0


def text_key(text: str) -> str:
    """Identity of a text for duplicate detection: whitespace-normalised, case-sensitive."""
    return hashlib.sha256(" ".join(text.split()).encode()).hexdigest()[:32]


def memory_key(text: str, record: Record | None) -> str:
    """Identity of a memory for duplicate detection: its text's (``text_key``) and, for a
    record, the record's typed fields (``Record.identity``): a record's text may say less
    than its fields, and two records told in the same words are still two memories. A
    record's text when none is given (``Record.line``) follows the fields' order and adds
    nothing to the key."""
    if record is None:
        return text_key(text)
    told = "" if record.is_in_words(text) else text_key(text)
    return hashlib.sha256(f"{told}\n{record.identity()}".encode()).hexdigest()[:32]


def name(value: object, field: str, limit: int = MAX_NAME, required: bool = True) -> str | None:
    """A short non-empty string (agent, topic, episode, fact part, id), stripped.

    An optional name that is empty once stripped counts as not given.
    """
    if value is None and not required:
        return None
    if value is None:
        raise InvalidInput(field, "is required")
    if not isinstance(value, str):
        raise InvalidInput(field, f"must be a string, got {sent(value)}")
    text = value.strip()
    if not text:
        if not required:
            return None
        raise InvalidInput(field, "must not be empty")
    if len(text) > limit:
        raise InvalidInput(field, f"is {len(text)} characters long; the limit is {limit}")
    return unicode_text(text, field)


#: The longest sent value an error quotes back.
_SENT = 60


def sent(value: object) -> str:
    """A value as the caller sent it, as JSON (``5``, ``[1, 2]``), cut short."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= _SENT else text[: _SENT - 1] + "…"


def unicode_text(text: str, field: str) -> str:
    """``text`` itself, if it is valid Unicode (the graph stores UTF-8).

    Raises:
        InvalidInput: it holds an unpaired surrogate (``"\\ud800"``), which has no UTF-8 form.
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        code = ord(text[error.start])
        raise InvalidInput(
            field,
            f"holds an unpaired surrogate (U+{code:04X}) at character {error.start}:"
            " send valid Unicode text",
        ) from None
    return text


def optional_text(value: object, field: str, limit: int) -> str | None:
    """An optional text (a source), kept exactly as given; None when not given.

    Unlike a name, a blank text is refused rather than taken as not given: it cannot be kept
    as it was sent, and dropping it silently would store something else.

    Raises:
        InvalidInput: not a string, empty or only whitespace, too long, or not valid Unicode.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, "must be a non-empty string; leave it out when there is none")
    if len(value) > limit:
        raise InvalidInput(field, f"is {len(value)} characters long; the limit is {limit}")
    return unicode_text(value, field)


def _list(value: object, field: str, limit: int) -> list[object]:
    if value is None:
        return []
    if not isinstance(value, list | tuple):
        raise InvalidInput(field, f"must be a list, got {type(value).__name__}")
    if len(value) > limit:
        raise InvalidInput(field, f"has {len(value)} items; the limit is {limit}")
    return list(value)


def _without_offset(value: object) -> bool:
    """Whether an ISO 8601 time was given without its offset (and so read as UTC)."""
    if not isinstance(value, str):
        return False
    text = value.strip()
    if text.endswith(("Z", "z")):
        return False
    try:
        return datetime.fromisoformat(text).tzinfo is None
    except ValueError:
        return False


def _ahead(gap: timedelta) -> str:
    """A gap in words: "5 h 30 min", "3 days"."""
    minutes = round(gap.total_seconds() / 60)
    if minutes >= 2 * 24 * 60:
        return f"{minutes // (24 * 60)} days"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min"


def _on_clock(day: datetime, said: datetime, local: bool = False) -> datetime:
    """``day``, a time the words of a memory said at ``said`` gave (``event_time`` keeps the
    days of the clock they were told on as if UTC), in UTC: on ``said``'s clock (its offset,
    or its zone's on that day), or with ``local`` (told now to a memory whose ``timezone``
    is ``local``; ``said`` holds only today's offset), on the machine's, at the offset it
    has on that day. A day no clock can move so (midnight of 1 January of year 1 east of
    UTC, before the first day UTC holds) stays as if told in UTC."""
    if local:
        try:
            return day.replace(tzinfo=None).astimezone(UTC)  # naive: the machine's rules
        except (OverflowError, OSError, ValueError):
            pass  # a day the platform's clock cannot place: today's offset, as below
    try:
        return day.replace(tzinfo=said.tzinfo).astimezone(UTC)
    except OverflowError:
        return day


#: What may stand between a fact's object and the time its words give, for the time to be
#: the fact's: a few words, in one clause ("moved to SQLite in March", "In March we moved to
#: SQLite", and after a time that opens its sentence, its comma: "Since 2019, Bob has worked
#: at Acme"). Not a clause's or a sentence's break: "Bob works at Acme. He graduated in
#: 2015", "Alice, who joined in 2019, lives in Rome", "left Paris in 2020 and lives in Rome".
_SAME_CLAUSE = re.compile(
    r"[^\W_]+(?:['\u2019][^\W_]+)?(?:\s+[^\W_]+(?:['\u2019][^\W_]+)?){0,3}|", re.UNICODE
)
_CLAUSE_WORDS = frozenset(("and", "but", "or", "while", "who", "which", "that", "because"))


def begun_as_told(
    fact: Fact, times: tuple[EventTime, ...], said: datetime, text: str, local: bool = False
) -> Fact:
    """``fact``, beginning when its words place it if it was given no time and they place
    it once, before it was said, in the clause naming the fact's object: "We moved to SQLite
    in March", told in May, holds from 1 March (from May, ``as_of`` April answered Postgres
    while ``happened`` said March). A time to come is left to ``valid_from`` (a plan may be
    put off), and so are two times (which one the fact began at, the words do not say), a
    time told of something else (``_SAME_CLAUSE``) and a state's end ("until Friday", whose
    span opens today: ``ended_as_told``). Planning tells it from when it was said
    after all if a fact of its agent, subject and predicate already begins later from a
    start given or placed by its words (``planning``: news, not the history before what is
    held); one of the agent's alone that began only when told, it supersedes from its start
    (stale when told)."""
    from doxa.store.event_time import holds_until

    if fact.valid_from is not None or fact.valid_until is not None or len(times) != 1:
        return fact
    if holds_until(times[0]):
        return fact  # "until Friday" tells an end (``ended_as_told``), its span's start today
    # "in March" told at -07:00 began at midnight there (``_on_clock``).
    start = _on_clock(times[0].start, said, local)
    if start >= said or not _beside(text, fact.object, times[0].phrase):
        return fact
    return replace(fact, valid_from=start, from_words=True)


def ended_as_told(
    fact: Fact, times: tuple[EventTime, ...], said: datetime, text: str, local: bool = False
) -> Fact:
    """``fact``, ending when its words say it holds until, if it was given no end and they
    tell one time, a state's end to come (``event_time.holds_until``: "Sam is in Berlin
    until Friday", "her contract was extended to June"), in the clause naming the fact's
    object (``_SAME_CLAUSE``), later than a ``valid_from`` given: at the end of that day (or
    month; "until next week" when it begins, on Monday) on the clock it was told on
    (``said``'s, whose calendar the words were read in; with ``local``, the machine's,
    ``_on_clock``).
    The words are the fact's own, whoever its subject is. A deadline ("by Friday"), a time
    already past ("Sam lived in Paris until March" is no time to come), two times (which one
    ends the fact, the words do not say), a time told of something else ("Sam is in
    Berlin. The office is closed until Monday") and one a negation comes before in its
    sentence (``_NEGATION``: "Sam won't be in Berlin until Friday" is there from Friday on)
    give no end. The start is left as told: "until Friday" says when the state ends, not
    when it began (``begun_as_told`` reads no start from it)."""
    from doxa.store.event_time import holds_until

    if fact.valid_until is not None or len(times) != 1 or not holds_until(times[0]):
        return fact
    read = times[0]
    if not _beside(text, fact.object, read.phrase) or _negated(text, read.phrase):
        return fact
    # That midnight on the clock it was told on, at the offset it has then (summer time may
    # be over by Friday: ``_on_clock``).
    until = _on_clock(read.end, said, local)
    if fact.valid_from is not None and until <= fact.valid_from:
        return fact  # "until the 17th" read in December, of a plan beginning in January
    return replace(fact, valid_until=until, until_words=read.phrase)


def _beside(text: str, obj: str, phrase: str) -> bool:
    """Whether ``phrase`` (a time) and ``obj`` (a fact's object) are told in one clause of
    ``text``, a few words apart at most."""
    # Found, measured and read in the folded text alike: a letter folding to two ("ß" is
    # "ss") puts the folded text out of step with the text from there on.
    folded, phrase, obj = text.casefold(), phrase.casefold(), obj.casefold()
    at, named = folded.find(phrase), folded.find(obj)
    if at < 0 or named < 0:
        return False
    first, second = sorted(((at, len(phrase)), (named, len(obj))))
    gap = folded[first[0] + first[1] : second[0]]
    if "\n" in gap or "\r" in gap:
        return False  # another line
    between = gap.strip()
    if at == first[0] and between.startswith(",") and _opens_sentence(folded[:at]):
        between = between[1:].lstrip()  # "Since 2019, Bob has worked at Acme"
    return _SAME_CLAUSE.fullmatch(between) is not None and not _CLAUSE_WORDS & set(between.split())


#: A negation: before "until" in its sentence, it turns the time into a start ("Sam won't be
#: in Berlin until Friday", "Not until Friday is Sam in Berlin") or keeps it an end ("Sam
#: won't leave Berlin until Friday"), which the words' verb tells, not the time.
_NEGATION = re.compile(r"\b(?:not|never|cannot)\b|n['\u2019]t\b")


def _negated(text: str, phrase: str) -> bool:
    """Whether a negation comes before ``phrase`` (a time) in its sentence of ``text``."""
    folded = text.casefold()
    at = folded.find(phrase.casefold())
    if at < 0:
        return False
    opened = max(folded.rfind(mark, 0, at) for mark in ".!?;\n") + 1
    return _NEGATION.search(folded, opened, at) is not None


def _opens_sentence(before: str) -> bool:
    """Whether a phrase told after ``before`` opens its sentence (or the text)."""
    before = before.rstrip()
    return not before or before[-1] in ".!?;:\n"


def fact_times(valid_from: datetime | None, valid_until: datetime | None) -> tuple[datetime, ...]:
    """The times a fact states (``valid_from``, ``valid_until`` as given), for reading its
    words' dates: they say which year "from 11 June" means (``event_times``' ``stated``)."""
    return tuple(t for t in (valid_from, valid_until) if t is not None)


def validate(draft: MemoryDraft, default_agent: str, zone: str = "UTC") -> NewMemory:
    """Check a draft and give it exact types.

    Raises:
        InvalidInput: naming the field (``confidence``, ``fact.valid_until``, ``topics[2]``…).
    """
    record = None
    if draft.record is not None:
        # Imported here: records reads names and texts with this module's rules.
        from doxa.store.records import validate as read_record

        record = read_record(draft.record)
    given = record.line() if draft.text is None and record is not None else draft.text
    # Kept verbatim: only a text with nothing but whitespace is refused.
    if not isinstance(given, str) or not given.strip():
        raise InvalidInput("text", "must be a non-empty string: the observation to remember")
    if len(given) > MAX_TEXT:
        raise InvalidInput(
            "text", f"is {len(given)} characters long; the limit is {MAX_TEXT}: split it"
        )
    text = unicode_text(given, "text")
    topics: list[str] = []
    for i, topic in enumerate(_list(draft.topics, "topics", MAX_TOPICS)):
        cleaned = name(topic, f"topics[{i}]")
        assert cleaned is not None
        if cleaned.casefold() not in {t.casefold() for t in topics}:
            topics.append(cleaned)
    agent = name(draft.agent, "agent", required=False) or default_agent
    confidence = parse_unit_decimal(draft.confidence, "confidence")
    said = observed_at = None
    if draft.observed_at is not None:
        said, observed_at = parse_moment(draft.observed_at, "observed_at")
    now = utc_now()
    if observed_at is not None and observed_at > now + FUTURE_SKEW:
        # Only a time given without its offset is told to give one: told so when it had,
        # a model was asked to do what it had done.
        fix = (
            " a time without an offset is UTC, so give its offset (+05:30), or leave"
            if _without_offset(draft.observed_at)
            else " check its date, or leave"
        )
        raise InvalidInput(
            "observed_at",
            f"is {_ahead(observed_at - now)} in the future ({observed_at:%Y-%m-%dT%H:%M:%SZ}):"
            f"{fix} observed_at out (now); for a fact that begins later, give fact.valid_from",
        )
    source = optional_text(draft.source, "source", MAX_SOURCE)
    episode = name(draft.episode, "episode", required=False)
    fact = None
    if draft.fact is not None:
        subject = name(draft.fact.subject, "fact.subject")
        predicate = name(draft.fact.predicate, "fact.predicate")
        obj = name(draft.fact.object, "fact.object", MAX_SOURCE)
        valid_from = (
            None
            if draft.fact.valid_from is None
            else parse_time(draft.fact.valid_from, "fact.valid_from")
        )
        valid_until = (
            None
            if draft.fact.valid_until is None
            else parse_time(draft.fact.valid_until, "fact.valid_until")
        )
        if valid_from is not None and valid_until is not None and valid_until <= valid_from:
            # A plan called off was told so: an end before the plan's start, with it.
            raise InvalidInput(
                "fact.valid_until",
                "must be later than fact.valid_from; to end or cancel a fact told before,"
                " tell it again with only fact.valid_until (now, to cancel a plan)",
            )
        assert subject is not None and predicate is not None and obj is not None
        normalised = predicate_key(predicate)
        if not normalised:
            raise InvalidInput("fact.predicate", 'must hold a word, e.g. "lives in"')
        cardinality = draft.fact.cardinality
        if cardinality is not None and cardinality not in CARDINALITIES:
            raise InvalidInput(
                "fact.cardinality",
                f'must be "one" (a newer object replaces the current one) or "many" (objects'
                f" accumulate), got {cardinality!r}",
            )
        fact = Fact(
            subject,
            normalised,
            obj,
            valid_from,
            valid_until,
            cardinality,
            predicate_words(predicate),
        )
    supports: list[tuple[str, Decimal]] = []
    for i, item in enumerate(_list(draft.supports, "supports", MAX_LINKS)):
        if not isinstance(item, SupportDraft):
            raise InvalidInput(f"supports[{i}]", "must be an object {belief_id, weight}")
        belief = name(item.belief_id, f"supports[{i}].belief_id")
        assert belief is not None
        supports.append((belief, parse_unit_decimal(item.weight, f"supports[{i}].weight")))
    contradicts: list[str] = []
    for i, item in enumerate(_list(draft.contradicts, "contradicts", MAX_LINKS)):
        other = name(item, f"contradicts[{i}]")
        assert other is not None
        if other not in contradicts:
            contradicts.append(other)
    # The record in words, given or not, is no text of its own (as for ``memory_key``).
    told = "" if record is not None and record.is_in_words(text) else text
    stated = fact_times(fact.valid_from, fact.valid_until) if fact else ()
    # Read here, before any lock: a long text takes a few hundred microseconds. A memory
    # without observed_at is said now (planning stamps it a moment later).
    # A record's fields are data, not a story: a track named "Yesterday" happened on no
    # day, so only a text given with the record is read.
    # Read in the speaker's own calendar: "yesterday" at 23:30 -08:00 on 8 May is 7 May.
    # A fact's own times say which year a date in its words means ("from 11 June").
    # Imported here: its patterns take about 6 ms to compile, which a server's handshake
    # (settings import this module) need not wait for; the memory's thread imports it.
    from doxa.store.event_time import event_times

    # Told without a time, in the calendar of the memory's time zone (``zone``).
    local = said is None and zone == "local"
    said = said or in_zone(now, zone)
    times = tuple(event_times(told, said, stated))
    if fact is not None:
        fact = ended_as_told(fact, times, said, told, local)
        fact = begun_as_told(fact, times, said, told, local)
    return NewMemory(
        text=text,
        text_key=memory_key(text, record),
        topics=tuple(topics),
        agent=agent,
        confidence=confidence,
        observed_at=observed_at,
        source=source,
        episode=episode,
        fact=fact,
        supports=tuple(supports),
        contradicts=tuple(contradicts),
        event_times=times,
        record=record,
        told_offset=offset_minutes(said),
    )
