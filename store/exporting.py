"""The memory as a file and back: every node and link of the graph as JSON Lines.

A file is a header line, then one line per object, nodes before links, then why prune
retired each observation it retired (format 2):

    {"doxa": "export", "format": 2, "schema": 23, "exported_at": "...", "counts": {...}}
    {"table": "Observation", "id": "...", "confidence": "0.9", "observed_at": "...Z", ...}
    {"table": "SUPPORTS", "from": "<observation id>", "to": "<belief id>", "weight": "0.6"}
    {"table": "Pruned", "id": "<observation id>", "at": "...Z", "why": "pruned: unused ..."}

A node line holds its table's columns (``schema.EXPECTED``, but ``schema.RETIRED``), a link
line the keys of its two ends and its own columns. Values are exact: decimals as text, times
as ISO 8601 UTC, and beside an observation's ``observed_at`` the UTC offset it was told in
(``told_offset``, minutes east of UTC: -480 for -08:00; absent or null in a file of a memory
that did not keep it, whose texts are read again in the importing memory's zone). Vectors
are not in the file: an import embeds the imported observations again with the importing
memory's model (``startup`` fills the index from the graph), and the judged recalls' queries
too, so a file moves between models and embedders.

Reading a file back keeps every id; objects already present (same key, or same two ends for a
link, with a record field's position and a supersession's record time) are skipped. The file
is checked whole before anything is written (its lines against the header's counts, each
value against its column and what the memory allows, each link's ends, each predicate's
cardinality against the memory's), and written in one transaction: a bad line writes nothing.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import re
import shutil
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from doxa.store import event_time, schema
from doxa.store.drafts import (
    CARDINALITIES,
    FUTURE_SKEW,
    MAX_TEXT,
    fact_times,
    memory_key,
    predicate_key,
    unicode_text,
)
from doxa.store.errors import InvalidInput, MemoryStoreError
from doxa.store.records import (
    CLASSES,
    KINDS,
    Record,
    RecordField,
    compared_value,
    field_key,
    stored_field_name,
    type_name,
)
from doxa.store.records import validate as validate_record
from doxa.store.values import (
    MAX_OFFSET,
    from_naive_utc,
    iso,
    parse_unit_decimal,
    to_naive_utc,
    told_in,
    utc_now,
)

if TYPE_CHECKING:
    from doxa.store.graph import Graph, GraphWriter

#: The version of the file's layout; a reader refuses a file of a newer one. 2: ``Pruned``
#: lines, why a prune retired an observation.
FORMAT = 2
#: The lines of the prune audit (``pruning.AuditLog``): ``{"table": "Pruned", "id", "at",
#: "why"}``, after the links.
PRUNED = "Pruned"

#: Node tables and their primary keys, in the order they are written (and read back).
NODES: dict[str, str] = {
    "Agent": "name",
    "Topic": "name",
    "Episode": "id",
    "Predicate": "name",
    "RecordType": "name",
    "FieldValue": "key",
    "Observation": "id",
    "Belief": "id",
    "Recall": "id",
    "CoActivation": "pair",
    "Summary": "topic",
}

#: Link tables and the node tables they join.
LINKS: dict[str, tuple[str, str]] = {
    "HOLDS": ("Agent", "Belief"),
    "OF": ("Belief", "Observation"),
    "MENTIONS": ("Observation", "Topic"),
    "FROM": ("Observation", "Episode"),
    "SUPPORTS": ("Observation", "Belief"),
    "CONTRADICTS": ("Observation", "Observation"),
    "SUPERSEDES": ("Observation", "Observation"),
    "RETURNED": ("Recall", "Observation"),
    "IS_A": ("Observation", "RecordType"),
    "HAS_FIELD": ("Observation", "FieldValue"),
}

#: Rows per statement when writing (one transaction for the whole file).
BATCH = 2000

Progress = Callable[[str], None]


def _quoted(table: str) -> str:
    # OF and FROM are Cypher keywords; table names come from this module, never a caller.
    return f"`{table}`"


def _columns(table: str) -> dict[str, str]:
    """The columns a file holds for ``table``: the live ones but those retired."""
    retired = schema.RETIRED.get(table, {})
    return {c: t for c, t in schema.EXPECTED[table].items() if c not in retired}


# ---- writing a file -------------------------------------------------------------------------


def _out(value: Any, kind: str) -> Any:
    """A stored value as JSON: decimals as text, times as ISO 8601 UTC."""
    if value is None:
        return None
    if kind == "TIMESTAMP":
        return iso(value)
    if kind.startswith("DECIMAL"):
        return format(Decimal(value).normalize(), "f")
    return value


def _node_lines(graph: Graph, table: str) -> Iterator[dict[str, Any]]:
    columns = _columns(table)
    key = NODES[table]
    names = list(columns)
    projection = ", ".join(f"n.{c}" for c in names)
    query = f"MATCH (n:{_quoted(table)}) RETURN {projection} ORDER BY n.{key}"
    for row in graph.read(query):
        line: dict[str, Any] = {"table": table}
        line.update({c: _out(v, columns[c]) for c, v in zip(names, row, strict=True)})
        yield line


#: The property that tells apart two links of one table between the same ends: a record's
#: field by its position (a list may hold a value twice), a supersession by when it was
#: recorded (a forget may undo one, and a later telling make it again).
_LINK_PARTS = {"HAS_FIELD": "position", "SUPERSEDES": "known"}


def _link_lines(graph: Graph, table: str) -> Iterator[dict[str, Any]]:
    columns = _columns(table)
    start, end = LINKS[table]
    names = list(columns)
    projection = "".join(f", r.{c}" for c in names)
    part = f", r.{_LINK_PARTS[table]}" if table in _LINK_PARTS else ""
    query = (
        f"MATCH (a:{_quoted(start)})-[r:{_quoted(table)}]->(b:{_quoted(end)})"
        f" RETURN a.{NODES[start]}, b.{NODES[end]}{projection}"
        f" ORDER BY a.{NODES[start]}, b.{NODES[end]}{part}"
    )
    for row in graph.read(query):
        line: dict[str, Any] = {"table": table, "from": row[0], "to": row[1]}
        line.update({c: _out(v, columns[c]) for c, v in zip(names, row[2:], strict=True)})
        yield line


def export_lines(graph: Graph) -> Iterator[dict[str, Any]]:
    """Every node, then every link, as the file's lines (without the header)."""
    for table in NODES:
        yield from _node_lines(graph, table)
    for table in LINKS:
        yield from _link_lines(graph, table)


def write_export(
    graph: Graph, path: Path, pruned: Sequence[tuple[str, str, str]] = ()
) -> dict[str, Any]:
    """Write the whole graph to ``path``, then the ``pruned`` reasons (``AuditLog.entries``)
    as ``Pruned`` lines (the file replaced only once complete; a failure leaves no file
    behind). The caller keeps writers out meanwhile, so the file is one moment of the
    memory. Returns the header."""
    counts: dict[str, int] = {}
    # The header counts the lines, so they are written first and copied after it.
    body = path.with_name(path.name + ".part")
    whole = path.with_name(path.name + ".partial")
    try:
        with body.open("w", encoding="utf-8") as out:
            held: set[str] = set()  # observations, written before the reasons
            audit = (
                {"table": PRUNED, "id": i, "at": at, "why": w}
                for i, at, w in pruned
                if i in held  # a purge since took the observation, and its reason
            )
            for line in itertools.chain(export_lines(graph), audit):
                if line["table"] == "Observation":
                    held.add(line["id"])
                counts[line["table"]] = counts.get(line["table"], 0) + 1
                out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        header = {
            "doxa": "export",
            "format": FORMAT,
            "schema": schema.latest_version(),
            "exported_at": iso(utc_now()),
            "counts": counts,
        }
        with whole.open("w", encoding="utf-8") as out, body.open(encoding="utf-8") as lines:
            out.write(json.dumps(header, separators=(",", ":")) + "\n")
            shutil.copyfileobj(lines, out)
        os.replace(whole, path)
    finally:
        for left in (body, whole):
            with contextlib.suppress(OSError):
                left.unlink()
    return header


# ---- reading a file -------------------------------------------------------------------------


class ImportRefused(MemoryStoreError):
    """An export file that cannot be read back; nothing was written."""


@dataclass
class Parsed:
    """A checked export file: its header and its objects by table."""

    header: dict[str, Any]
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    #: Why a prune retired an observation: (id, retraction time ISO 8601, why).
    pruned: list[tuple[str, str, str]] = field(default_factory=list)
    #: Where each object was read ("<file> line <n>"), in the order of ``objects`` (and of
    #: ``pruned``, under ``PRUNED``).
    lines: dict[str, list[str]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        """How many objects the file holds."""
        return sum(len(rows) for rows in self.objects.values())


def _in(value: Any, kind: str, where: str, name: str) -> Any:
    """A JSON value as the graph binds it, checked against its column's type."""
    if value is None:
        return None
    try:
        if kind == "TIMESTAMP":
            moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
            if moment.tzinfo is None:
                raise ValueError("no time zone")
            return to_naive_utc(moment)
        if kind.startswith("DECIMAL"):
            if not isinstance(value, str):
                raise ValueError("a decimal is written as text")
            # Every decimal of the memory is a confidence or a weight: as remember reads one.
            try:
                return format(parse_unit_decimal(value, name), "f")
            except InvalidInput as refused:
                raise ImportRefused(f"{where}: {refused}") from None
        if kind in _INTEGER_BITS:
            if not isinstance(value, int) or isinstance(value, bool):
                raise ValueError("not an integer")
            bits = _INTEGER_BITS[kind]
            if not -(2 ** (bits - 1)) <= value < 2 ** (bits - 1):
                raise ValueError(f"beyond a {bits}-bit integer")
            return value
        if kind == "DOUBLE":
            if not isinstance(value, int | float) or isinstance(value, bool):
                raise ValueError("not a number")
            if not math.isfinite(float(value)):
                raise ValueError("not a finite number")
            return float(value)
        if kind == "FLOAT[]":
            if not isinstance(value, list) or not all(
                isinstance(x, int | float) and not isinstance(x, bool) for x in value
            ):
                raise ValueError("not a list of numbers")
            return [float(x) for x in value]
        if kind == "STRING[]":
            if not isinstance(value, list) or not all(isinstance(x, str) for x in value):
                raise ValueError("not a list of texts")
            return value
        if not isinstance(value, str):
            raise ValueError("not text")
        return value
    except (ValueError, ArithmeticError) as error:
        raise ImportRefused(f"{where}: {name} {value!r} is not a {kind} ({error})") from None


#: The integer column types, and their bits.
_INTEGER_BITS = {"INT64": 64, "INT16": 16}


#: The first bytes of compressed files, and the tool that undoes each.
_COMPRESSED = {
    b"\x1f\x8b": ("gzip", "gunzip"),
    b"BZh": ("bzip2", "bunzip2"),
    b"\xfd7zXZ\x00": ("xz", "unxz"),
    b"\x28\xb5\x2f\xfd": ("zstd", "unzstd"),
    b"PK\x03\x04": ("zip", "unzip"),
}


def _not_an_export(first: bytes, header: object) -> str:
    """Why a file whose first line is no export header is refused, saying what it looks like
    when that is known: a compressed export, or the judgements ``doxa export --judgements``
    writes beside one (both were refused as "not a doxa export header", which left the user
    to guess)."""
    for magic, (kind, undo) in _COMPRESSED.items():
        if first.startswith(magic):
            return f"is compressed ({kind}): {undo} it first, then import the file it gives"
    if isinstance(header, dict) and {"recall_id", "result_id", "judgement"} <= header.keys():
        return (
            "this is a judgements file (doxa export --judgements); import takes a doxa export"
            " FILE (doxa export FILE)"
        )
    if not first:
        return "is empty: a doxa export starts with its header line"
    return "line 1 is not a doxa export header"


def parse_export(path: Path, name: str | None = None, zone: str = "UTC") -> Parsed:
    """Read and check a whole export file (named ``name`` in messages; default: its path).

    Raises:
        ImportRefused: the file is not a doxa export, is of a newer format, or has a bad
            line (named with its number and field).
    """
    shown = str(path) if name is None else name
    try:
        handle = path.open("rb")  # each line decoded on its own, so a bad one is named
    except OSError as error:
        raise ImportRefused(f"{shown}: cannot be read ({error.strerror})") from None
    with handle:
        first = handle.readline()
        try:
            header = json.loads(first)  # bytes that are no UTF-8: a ValueError too
        except ValueError:
            header = None
        if not isinstance(header, dict) or header.get("doxa") != "export":
            raise ImportRefused(f"{shown}: {_not_an_export(first, header)}")
        version = header.get("format")
        if not isinstance(version, int) or isinstance(version, bool):
            raise ImportRefused(
                f"{shown}: line 1's format {version!r} is not a number: a doxa export header"
                f' holds "format": {FORMAT} (or older, as a number); write it so or export'
                " the memory again"
            )
        if version > FORMAT:
            raise ImportRefused(
                f"{shown}: export format {version!r} was written by a newer doxa; this one"
                f" reads format {FORMAT} and older: upgrade doxa to import it"
            )
        parsed = Parsed(header)
        written_at = header.get("schema")
        # Retired columns are read (as files before migration 14 hold them), then left out.
        legacy = {
            **(LEGACY if isinstance(written_at, int) and written_at < 6 else {}),
            **schema.RETIRED,
        }
        linked_pairs = isinstance(written_at, int) and written_at < 7
        for number, raw in enumerate(handle, start=2):
            if not raw.strip():
                continue
            where = f"{shown} line {number}"
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ImportRefused(
                    f"{where}: not UTF-8 text (byte {error.start + 1} of the line)"
                ) from None
            try:
                line = json.loads(text)
            except ValueError as error:
                raise ImportRefused(f"{where}: not JSON ({error})") from None
            if not isinstance(line, dict):
                raise ImportRefused(f"{where}: not a JSON object")
            if line.get("table") == PRUNED:
                parsed.pruned.append(_pruned(line, where))
                parsed.lines.setdefault(PRUNED, []).append(where)
                continue
            if linked_pairs and line.get("table") == "CO_ACTIVATED":
                line = _co_activation_node(line)
            row = _checked(line, where, legacy)
            parsed.objects.setdefault(str(line.get("table")), []).append(row)
            parsed.lines.setdefault(str(line.get("table")), []).append(where)
    _all_there(parsed, shown)
    _predicates_named(parsed)
    if isinstance(written_at, int) and written_at < 23:
        _predicates_told(parsed, written_at)
    # Every record read, as the memory loads it and a client reads it back, also where
    # nothing of it is read again.
    records = _checked_records(parsed)
    if isinstance(written_at, int) and written_at < 6:
        _features_to_recalls(parsed)
    _without_retired(parsed)
    if isinstance(written_at, int) and written_at < 31:
        _summaries_written_anew(parsed)
    _read_again(parsed, written_at if isinstance(written_at, int) else None, records, zone)
    return parsed


def _predicates_named(parsed: Parsed) -> None:
    """Name each predicate as ``remember`` does (``predicate_key``: files of schema 1 hold
    "Works At" beside "works_at"), one ``Predicate`` per name: the memory looks a fact's
    cardinality up by that name, and a predicate named otherwise lost its "many".

    Raises:
        ImportRefused: a predicate with no word, or two names of one predicate with both
            cardinalities, naming the lines.
    """
    for row, where in zip(
        parsed.objects.get("Observation", []), parsed.lines.get("Observation", []), strict=True
    ):
        if row.get("predicate") is not None:
            row["predicate"] = _predicate_named(row["predicate"], where, "Observation's predicate")
    rows, lines = parsed.objects.get("Predicate", []), parsed.lines.get("Predicate", [])
    first: dict[str, tuple[dict[str, Any], str]] = {}
    kept: list[tuple[dict[str, Any], str]] = []
    for row, where in zip(rows, lines, strict=True):
        row["name"] = _predicate_named(row["name"], where, "Predicate's name")
        seen = first.get(row["name"])
        if seen is None:
            first[row["name"]] = (row, where)
            kept.append((row, where))
        elif seen[0]["cardinality"] != row["cardinality"]:
            raise ImportRefused(
                f"{where}: predicate {row['name']!r} is {row['cardinality']!r} here but"
                f" {seen[0]['cardinality']!r} at {seen[1]}: one predicate has one cardinality;"
                " keep the line with the one its facts mean"
            )
    if rows:
        parsed.objects["Predicate"] = [row for row, _ in kept]
        parsed.lines["Predicate"] = [where for _, where in kept]


def _predicates_told(parsed: Parsed, written_at: int) -> None:
    """Record "one" for each predicate the file's facts use with no ``Predicate`` line, as
    migration 23 records it for a memory's own: a file written before that migration can
    hold facts told before migration 2, when every predicate was single-valued (their
    supersessions in the file end older objects), and no line for their predicate. Its
    ``since`` is its first fact's record time; its line, that fact's."""
    named = {row["name"] for row in parsed.objects.get("Predicate", [])}
    told: dict[str, tuple[Any, str]] = {}
    for row, where in zip(
        parsed.objects.get("Observation", []), parsed.lines.get("Observation", []), strict=True
    ):
        predicate = row.get("predicate")
        if predicate is None or predicate in named:
            continue
        first = told.get(predicate)
        if first is None or row["recorded_at"] < first[0]:
            told[predicate] = (row["recorded_at"], where)
    for predicate, (since, where) in sorted(told.items()):
        parsed.objects.setdefault("Predicate", []).append(
            {
                **dict.fromkeys(_columns("Predicate")),
                "name": predicate,
                "cardinality": "one",
                "since": since,
            }
        )
        parsed.lines.setdefault("Predicate", []).append(
            f"{where} (a fact of schema {written_at}, which records no cardinality for its"
            ' predicate: read as "one", as it was told)'
        )


def _predicate_named(predicate: str, where: str, what: str) -> str:
    named = predicate_key(predicate)
    if not named:
        raise ImportRefused(f"{where}: {what} {predicate!r} holds no word, as remember needs")
    return named


def _all_there(parsed: Parsed, shown: str) -> None:
    """Refuse a file that holds fewer or more lines than its header counts: cut short (a
    copy that stopped, a ``head``) or edited, it would import as a memory missing parts."""
    counts = parsed.header.get("counts")
    if (
        not counts
        or not isinstance(counts, dict)
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in counts.values())
    ):
        return  # a header without counts (written by hand) is taken as it is
    expected, held = sum(counts.values()), parsed.total + len(parsed.pruned)
    if held != expected:
        raise ImportRefused(
            f"{shown}: its header counts {expected} objects but the file holds {held}: it was"
            " cut short or edited; export the memory again"
        )


def _read_again(
    parsed: Parsed, written_at: int | None, records: dict[str, Record], zone: str
) -> None:
    """Compute what the file's version read differently, or did not keep, as the migrations
    since compute it for a memory's own observations: event times (every observation's
    before migration 11, a record's before 12, a fact's or a text with a digit before 20,
    one that tells of being somewhere before 21, one that joins two days or holds code
    before 22)
    and a record's duplicate key (before 13),
    and either when the file has none; a recall that does not say which model ranked it
    (before 10) is ranked by one not known, and teaches the ranker nothing.

    Computed here, never left unset for the next start to fill in: Kùzu 0.11.3 garbled
    values set on rows a checkpoint wrote without one, and once a memory had filled in one
    such import, the next left every command crashing.
    """

    def before(version: int) -> bool:
        return written_at is not None and written_at < version

    observations = parsed.objects.get("Observation", [])
    for observation, where in zip(observations, parsed.lines.get("Observation", []), strict=True):
        record = records.get(observation["id"])
        if (
            observation.get("event_times") is None
            or before(11)
            or (record is not None and before(12))
            or (before(20) and _read_differently(observation))
            or (before(21) and _read_differently(observation, _BEING_SOMEWHERE))
            or (before(22) and _read_by_22(observation))
            or (before(24) and _read_by_24(observation))
            or (before(25) and _read_by_25(observation))
            or (before(26) and _read_by_26(observation))
            or (before(27) and _read_by_27(observation))
            or (before(28) and _read_by_28(observation))
            or (before(29) and _read_by_29(observation))
            or (before(30) and _read_by_30(observation))
            or (before(32) and _ERRAND_OBJECT.search(observation["text"] or "") is not None)
        ):
            observation["event_times"] = _event_times(observation, record, where, zone)
        if observation.get("text_key") is None or (record is not None and before(13)):
            observation["text_key"] = memory_key(observation["text"] or "", record)
    for recall in parsed.objects.get("Recall", []):
        if recall.get("embedder") is None:  # before migration 10: not known
            recall["embedder"] = ""


def records_in(
    objects: dict[str, list[dict[str, Any]]],
    lines: dict[str, list[str]] | None = None,
    strict: bool = False,
) -> dict[str, Record]:
    """The records of an export's observations (its lines by table: ``Parsed.objects``), by
    observation id, their fields typed again from their ``HAS_FIELD`` links in position
    order (``strict``: an import's check, as ``records.loaded``).

    Raises:
        ImportRefused: a field's value is not of its kind, named by its line (``lines``:
            where each object was read, as ``Parsed.lines``).
    """
    fields: dict[str, list[tuple[int, RecordField]]] = {}
    links = objects.get("HAS_FIELD", [])
    where = (lines or {}).get("HAS_FIELD") or [f"HAS_FIELD {i + 1}" for i in range(len(links))]
    for link, at in zip(links, where, strict=True):
        try:
            field_ = RecordField.loaded(
                link["name"] or "", link["kind"] or "", link["value"] or "", strict
            )
        except (ValueError, ArithmeticError) as error:
            raise ImportRefused(
                f"{at}: HAS_FIELD's value {link['value']!r} is not {_article(link['kind'])}"
                f" {link['kind']} ({error})"
            ) from None
        fields.setdefault(link["from"], []).append((link["position"] or 0, field_))
    return {
        # Its type composed, as a memory reads one kept before types were (``type_name``).
        link["from"]: Record(
            type_name(link["to"]),
            tuple(f for _, f in sorted(fields.get(link["from"], []), key=_first)),
        )
        for link in objects.get("IS_A", [])
    }


def _checked_records(parsed: Parsed) -> dict[str, Record]:
    """The file's records (``records_in``), refused unless the memory can load each field
    and a client can read each record back as it is shown (``records.validate``): a field of
    no kind, or a name no record could have given, made every recall fail once imported.

    Raises:
        ImportRefused: naming the ``HAS_FIELD`` line of a bad field, the ``IS_A`` line of a
            record read back as no record.
    """
    for link, where in zip(
        parsed.objects.get("HAS_FIELD", []), parsed.lines.get("HAS_FIELD", []), strict=True
    ):
        if link["kind"] not in KINDS:
            raise ImportRefused(
                f"{where}: HAS_FIELD's kind {link['kind']!r} is none of {', '.join(KINDS)}"
            )
        try:
            stored_field_name(link["name"], "name")
        except InvalidInput as refused:
            raise ImportRefused(f"{where}: HAS_FIELD {refused.problem}") from None
    # Strict: a boolean other than true or false was read back as false.
    records = records_in(parsed.objects, parsed.lines, strict=True)
    for link, where in zip(
        parsed.objects.get("IS_A", []), parsed.lines.get("IS_A", []), strict=True
    ):
        record = records[link["from"]]
        try:
            shown = record.shown_fields()
        except TypeError:  # a value where a nested field's path needs an object
            raise ImportRefused(
                f"{where}: the record of {link['from']!r} names a field both as a value and"
                " as an object of nested fields (a and a.b): rename one"
            ) from None
        try:
            # Kept: a text "1e400" kept before such numbers were refused reads back as text.
            validate_record({"type": record.type, "fields": shown}, kept=True)
        except InvalidInput as refused:
            raise ImportRefused(
                f"{where}: the record of {link['from']!r} reads back as no record: {refused}"
            ) from None
    return records


def _article(word: str) -> str:
    return "an" if word[:1] in "aeiou" else "a"


def _first(pair: tuple[int, RecordField]) -> int:
    return pair[0]


def _read_differently(observation: dict[str, Any], *also: re.Pattern[str]) -> bool:
    """Whether migration 20 (or, with ``also`` its words, 21) has an observation's event
    times read again: those of a text holding a digit and a month's name or an ordinal day
    (the days whose years and ranges it reads anew), as its query picks them."""
    text = observation["text"] or ""
    return all(p.search(text) is not None for p in (_DIGIT, _DAYS_NAMED, *also))


def _read_by_22(observation: dict[str, Any]) -> bool:
    """Whether migration 22 has an observation's event times read again: a text joining a
    day or month to another beside a day named (or an ISO 8601 day), joining two weekdays,
    or holding a backtick and a word of time (code), as its query picks them."""
    text = observation["text"] or ""
    if _WEEKDAYS_JOINED.search(text) or ("`" in text and _TIME_WORDS.search(text)):
        return True
    days = _DAYS_NAMED.search(text) or _ISO_DAY.search(text)
    return bool(days and _DAYS_JOINED.search(text))


def _read_by_24(observation: dict[str, Any]) -> bool:
    """Whether migration 24 has an observation's event times read again: a text naming a
    weekday beside a plan told in the present, or a day beside "is booked", "scheduled" or
    "planned", as its query picks them."""
    text = observation["text"] or ""
    if _WEEKDAY.search(text) and _PLAN_TOLD.search(text):
        return True
    return _read_differently(observation, _PLAN_BOOKED)


def _read_by_25(observation: dict[str, Any]) -> bool:
    """Whether migration 25 has an observation's event times read again: a text holding a
    digit beside a day named, or naming a weekday beside a plan told in the present, a plan
    moved or a verb of plans, as its query picks them."""
    text = observation["text"] or ""
    if _read_differently(observation):
        return True
    plans = (_PLAN_TOLD, _PLAN_MOVED, _PLAN_VERBS)
    return bool(_WEEKDAY.search(text) and any(p.search(text) for p in plans))


def _read_by_26(observation: dict[str, Any]) -> bool:
    """Whether migration 26 has an observation's event times read again: a text holding a
    digit beside a day named, naming a weekday or holding an ISO 8601 day, as its query picks
    them."""
    text = observation["text"] or ""
    return _read_differently(observation) or bool(_WEEKDAY.search(text) or _ISO_DAY.search(text))


def _read_by_27(observation: dict[str, Any]) -> bool:
    """Whether migration 27 has an observation's event times read again: a text naming a
    month or a weekday, or saying "several", as its query picks them."""
    text = observation["text"] or ""
    return bool(_DAYS_NAMED.search(text) or _WEEKDAY.search(text) or _SEVERAL.search(text))


def _read_by_28(observation: dict[str, Any]) -> bool:
    """Whether migration 28 has an observation's event times read again: a text naming a
    month, a weekday or an ordinal day, as its query picks them."""
    text = observation["text"] or ""
    return bool(_DAYS_NAMED.search(text) or _WEEKDAY.search(text))


def _read_by_29(observation: dict[str, Any]) -> bool:
    """Whether migration 29 has an observation's event times read again: a text holding an
    ordinal day, naming a weekday, saying "end of the month" or "by" before a day or a
    month's end, that a plan slipped or was bumped, or "'s coming" (or going, leaving, ...),
    as its query picks them."""
    text = observation["text"] or ""
    return bool(
        _ORDINAL_DAY.search(text)
        or _WEEKDAY.search(text)
        or _END_OF_THE_MONTH.search(text)
        or _BY_DAY.search(text)
        or _SLIPPED.search(text)
        or _CONTRACTED_COMING.search(text)
    )


def _read_by_30(observation: dict[str, Any]) -> bool:
    """Whether migration 30 has an observation's event times read again: a text saying
    "until", "till" or "extended", a year relative to this one, opening a sentence with an
    errand's verb, or saying what should be done, as its query picks them."""
    text = observation["text"] or ""
    return bool(
        _UNTIL.search(text)
        or _RELATIVE_YEAR.search(text)
        or _ERRAND.search(text)
        or _SHOULD.search(text)
    )


_DIGIT = re.compile(r"[0-9]")
_DAYS_NAMED = re.compile(schema.DAYS_NAMED, re.IGNORECASE)
_BEING_SOMEWHERE = re.compile(schema.BEING_SOMEWHERE, re.IGNORECASE)
_DAYS_JOINED = re.compile(schema.DAYS_JOINED, re.IGNORECASE)
_ISO_DAY = re.compile(schema.ISO_DAY)
_WEEKDAYS_JOINED = re.compile(schema.WEEKDAYS_JOINED, re.IGNORECASE)
_TIME_WORDS = re.compile(schema.TIME_WORDS, re.IGNORECASE)
_WEEKDAY = re.compile(schema.WEEKDAY, re.IGNORECASE)
_SEVERAL = re.compile(schema.SEVERAL, re.IGNORECASE)
_ORDINAL_DAY = re.compile(schema.ORDINAL_DAY, re.IGNORECASE)
_END_OF_THE_MONTH = re.compile(schema.END_OF_THE_MONTH, re.IGNORECASE)
_BY_DAY = re.compile(schema.BY_DAY, re.IGNORECASE)
_SLIPPED = re.compile(schema.SLIPPED, re.IGNORECASE)
_CONTRACTED_COMING = re.compile(schema.CONTRACTED_COMING, re.IGNORECASE)
_UNTIL = re.compile(schema.UNTIL, re.IGNORECASE)
_RELATIVE_YEAR = re.compile(schema.RELATIVE_YEAR, re.IGNORECASE)
_ERRAND = re.compile(schema.ERRAND, re.IGNORECASE)
_ERRAND_OBJECT = re.compile(schema.ERRAND_OBJECT, re.IGNORECASE)
_SHOULD = re.compile(schema.SHOULD, re.IGNORECASE)
_PLAN_TOLD = re.compile(schema.PLAN_TOLD, re.IGNORECASE)
_PLAN_BOOKED = re.compile(schema.PLAN_BOOKED, re.IGNORECASE)
_PLAN_MOVED = re.compile(schema.PLAN_MOVED, re.IGNORECASE)
_PLAN_VERBS = re.compile(schema.PLAN_VERBS, re.IGNORECASE)


def _event_times(observation: dict[str, Any], record: Record | None, where: str, zone: str) -> str:
    """An imported observation's event times read from its words, as ``remember`` reads
    them (a record's own words, ``Record.line``, tell of no time; a fact's times say which
    year its words' dates mean), in the calendar they were told in (the UTC offset the file
    keeps with it, ``told_offset``), or, in a file written before offsets were kept, of the
    memory's time zone ``zone``."""
    text = observation["text"] or ""
    said = from_naive_utc(observation["observed_at"] or observation["recorded_at"])
    if said is None:
        raise ImportRefused(f"{where}: Observation needs observed_at (a time, as text)")
    told = "" if record is not None and record.is_in_words(text) else text
    stated = fact_times(
        from_naive_utc(observation.get("valid_from")),
        from_naive_utc(observation.get("stated_until")),
    )
    said = told_in(said, observation.get("told_offset"), zone)
    return event_time.stored(event_time.event_times(told, said, stated))


def _pruned(line: dict[str, Any], where: str) -> tuple[str, str, str]:
    """A ``Pruned`` line as (id, at, why); the time must read as one."""
    unknown = sorted(set(line) - {"table", "id", "at", "why"})
    if unknown:
        raise ImportRefused(f"{where}: {PRUNED} has no field {unknown[0]!r}")
    values = [line.get(k) for k in ("id", "at", "why")]
    texts = [v for v in values if isinstance(v, str) and v]
    if len(texts) != 3:
        raise ImportRefused(f"{where}: {PRUNED} needs id, at and why, each as text")
    _in(texts[1], "TIMESTAMP", where, "at")
    _encodable({"id": texts[0], "why": texts[2]}, where, PRUNED)
    return texts[0], texts[1], texts[2]


def _without_retired(parsed: Parsed) -> None:
    """A file written before migrations 14 and 15 keeps each judged recall's query vector on
    the recall and each entity's summary on its topic (``schema.RETIRED``), where Kùzu
    0.11.3 could have garbled them: they are left out. The importing memory embeds the
    judged queries again from their words (as it embeds observations), and one imported
    into an empty memory writes every entity's summary anew at its start."""
    for table, columns in schema.RETIRED.items():
        for row in parsed.objects.get(table, []):
            for column in columns:
                row.pop(column, None)


def _summaries_written_anew(parsed: Parsed) -> None:
    """A file written before migration 31 summarised a name told with and without a leading
    article ("the user", "User") as two entities, each with half its facts: its summaries are
    left out, as migration 31 deletes a memory's own, and one imported into an empty memory
    writes every entity's summary anew at its start (into one holding observations, an
    import has them all written anew)."""
    parsed.objects.pop("Summary", None)
    parsed.lines.pop("Summary", None)


#: Fields of files written before a migration moved them: table -> field -> its type.
LEGACY: dict[str, dict[str, str]] = {"RETURNED": {"features": "STRING"}}


def _features_to_recalls(parsed: Parsed) -> None:
    """A file written before migration 6 keeps what the ranker saw on each RETURNED link;
    the graph now keeps it on the recall ("<rank> <features>" per result)."""
    kept: dict[str, list[str]] = {}
    for link in parsed.objects.get("RETURNED", []):
        features = link.pop("features", None)
        if features and link.get("rank") is not None:
            kept.setdefault(link["from"], []).append(f"{link['rank']} {features}")
    for recall in parsed.objects.get("Recall", []):
        if recall.get("features") is None and recall["id"] in kept:
            recall["features"] = kept[recall["id"]]


def _co_activation_node(link: dict[str, Any]) -> dict[str, Any]:
    """A CO_ACTIVATED link of a file written before migration 7, as the ``CoActivation``
    node that now counts its pair (fields it should not have are kept, to be refused)."""
    start, end = link.get("from"), link.get("to")
    named = isinstance(start, str) and isinstance(end, str) and start and end
    rest = {k: v for k, v in link.items() if k not in ("table", "from", "to")}
    return {
        **rest,
        "table": "CoActivation",
        "pair": f"{start} {end}" if named else None,
        "a": start,
        "b": end,
    }


def _checked(
    line: dict[str, Any], where: str, legacy: dict[str, dict[str, str]] | None = None
) -> dict[str, Any]:
    kind = line.get("table")
    if kind not in NODES and kind not in LINKS:
        known = ", ".join([*NODES, *LINKS])
        raise ImportRefused(f"{where}: unknown table {kind!r} (known: {known})")
    columns = {**_columns(kind), **(legacy or {}).get(kind, {})}
    ends = ("from", "to") if kind in LINKS else ()
    unknown = sorted(set(line) - {"table", *ends, *columns})
    if unknown:
        raise ImportRefused(f"{where}: {kind} has no field {unknown[0]!r}")
    row = {c: _in(line.get(c), t, where, c) for c, t in columns.items()}
    for column in _REQUIRED.get(kind, ()):
        if row.get(column) is None:
            why = _WITHOUT.get(kind, "the memory cannot load one without")
            raise ImportRefused(f"{where}: {kind} needs {column!r} ({why})")
    if kind == "Observation":
        told = [c for c in ("subject", "predicate", "object") if row.get(c) is not None]
        if told and len(told) < 3:
            missing = next(c for c in ("subject", "predicate", "object") if c not in told)
            raise ImportRefused(f"{where}: Observation's fact needs {missing!r} beside {told[0]!r}")
    keys = ends or (NODES[kind],)
    for key in keys:
        value = line.get(key)
        if not isinstance(value, str) or not value:
            raise ImportRefused(f"{where}: {kind} needs {key!r} (its key, as text)")
        row[key] = value
    _encodable(row, where, kind)
    for column, value in row.items():
        check = _VALUES.get((kind, column))
        problem = None if value is None or check is None else check(value)
        if problem is not None:
            raise ImportRefused(f"{where}: {kind}'s {column} {problem}")
    problem = _ROWS[kind](row) if kind in _ROWS else None
    if problem is not None:
        raise ImportRefused(f"{where}: {kind}'s {problem}")
    return row


def _encodable(row: dict[str, Any], where: str, kind: str) -> None:
    """Refuse a text the graph cannot store (an unpaired surrogate, ``"\\ud800"`` in JSON,
    has no UTF-8 form: Kùzu failed on it mid-write), as ``remember`` refuses one."""
    for column, value in row.items():
        texts = value if isinstance(value, list) else [value]
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                continue
            try:
                unicode_text(text, column if texts is not value else f"{column}[{i}]")
            except InvalidInput as refused:
                raise ImportRefused(f"{where}: {kind}'s {refused}") from None


def _observation_problem(row: dict[str, Any]) -> str | None:
    """What ``remember`` would refuse of an observation, or the memory misread: a blank text
    (never found), counts below zero (a negative hit rate in every score), a time ahead of
    the importing clock (unseen by every recall until then), an end before the start."""
    text = row["text"]
    if not text.strip():
        return "text must not be blank: write the observation's words"
    if len(text) > MAX_TEXT:
        return f"text is {len(text)} characters long; remember keeps at most {MAX_TEXT}"
    if row.get("kind") not in (None, *_OBSERVATION_KINDS):
        return f"kind must be one of {', '.join(_OBSERVATION_KINDS)}, got {row['kind']!r}"
    for column in ("seq", "hits", "impressions"):
        if (row.get(column) or 0) < 0:
            return f"{column} must be 0 or more, got {row[column]}"
    if (row.get("kind") == "fact") != (row.get("subject") is not None):
        return f"kind {row.get('kind')!r} does not match its fact (subject {row.get('subject')!r})"
    problem = _times_problem(row, ("observed_at", "recorded_at", "retracted_at"), "recorded_at")
    if problem is not None:
        return problem
    start, stated, until = row.get("valid_from"), row.get("stated_until"), row.get("valid_until")
    # A fact told with only an end already past, of one never held, ends before it is
    # told, at the end told ("Sam sold his VW Golf on 10 November", told in December): it
    # never held in its own time, and begins when it was said (any other start was given,
    # and remember refuses an end before it).
    never_held = until is not None and until == stated and start == row.get("observed_at")
    if start is not None and stated is not None and stated <= start and not never_held:
        return f"stated_until {iso(stated)} must be later than valid_from {iso(start)}"
    # valid_until may equal valid_from: a plan replaced before it began never held.
    if start is not None and until is not None and until < start and not never_held:
        return f"valid_until {iso(until)} must not be before valid_from {iso(start)}"
    return None


def _field_value_problem(row: dict[str, Any]) -> str | None:
    """What no record could have written of a field value's node, as ``HAS_FIELD``'s own
    name, kind and value are checked: a field no record could have given or not as fields
    are matched (in lower case), a class values are not compared under, a value not of its
    class, or a key other than the three joined (``Graph.create_records``: a later record's
    equal value is found by it)."""
    field_, cls, value = row["field"], row["kind"], row["value"]
    try:
        stored_field_name(field_, "field")
    except InvalidInput as refused:
        return f"field {refused.problem}"
    if field_ != field_key(field_):
        return f"field {field_!r} is not as records match it: {field_key(field_)!r}"
    try:
        compared_value(cls, value)
    except ValueError as error:
        what = f"kind {cls!r} is no class" if cls not in CLASSES else f"value {value!r} is no {cls}"
        return f"{what} ({error})"
    if row["key"] != f"{field_}|{cls}|{value}":
        return f"key {row['key']!r} is not its field, kind and value joined by |"
    return None


def _belief_problem(row: dict[str, Any]) -> str | None:
    """What the memory would misread of a belief: times ahead of the clock or a withdrawal
    before it began, an end where it was never withdrawn."""
    if row.get("held_until") is not None and row.get("retracted_at") is None:
        return "held_until needs retracted_at: only a withdrawn belief has an end"
    if row.get("forgotten_at") is not None and row.get("held_until") is None:
        return "forgotten_at needs held_until: only a belief held until a later fact is forgotten"
    return _times_problem(row, ("since", "retracted_at", "forgotten_at"), "since")


def _times_problem(row: dict[str, Any], columns: tuple[str, ...], start: str) -> str | None:
    """A record time ahead of the importing clock, or a retraction before ``start``."""
    now = to_naive_utc(utc_now())
    for column in columns:
        moment = row.get(column)
        if moment is not None and moment > now + FUTURE_SKEW:
            return (
                f"{column} {iso(moment)} is ahead of this machine's clock ({iso(now)}):"
                " a file from a machine whose clock ran fast; correct its times"
            )
    began, gone = row.get(start), row.get("retracted_at")
    if began is not None and gone is not None and gone < began:
        return f"retracted_at {iso(gone)} is before its {start} {iso(began)}"
    return None


def _recall_problem(row: dict[str, Any]) -> str | None:
    """What the memory would misread of a recall: a time ahead of the clock (a judgement
    dated ahead never fades), a judgement before the recall."""
    problem = _times_problem(row, ("at", "judged_at"), "at")
    judged, asked = row.get("judged_at"), row.get("at")
    if problem is None and judged is not None and asked is not None and judged < asked:
        return f"judged_at {iso(judged)} is before its at {iso(asked)}"
    return problem


#: The kinds of observation remember writes.
_OBSERVATION_KINDS = ("fact", "observation", "record")

#: Checks of a whole row, per table: what the memory would misread -> the problem.
_ROWS: dict[str, Callable[[dict[str, Any]], str | None]] = {
    "Observation": _observation_problem,
    "Belief": _belief_problem,
    "FieldValue": _field_value_problem,
    "Recall": _recall_problem,
}


def _judgement(value: Any) -> str | None:
    return (
        None
        if value in ("", "accepted", "rejected")
        else (f'must be "accepted", "rejected" or "", got {value!r}')
    )


def _rank(value: Any) -> str | None:
    return None if value >= 0 else f"must be 0 or more (0 first), got {value}"


def _cardinality(value: Any) -> str | None:
    return (
        None
        if value in CARDINALITIES
        else f'must be "one" (a newer object replaces the current one) or "many" (objects'
        f" accumulate), got {value!r}"
    )


def _stored_event_times(value: Any) -> str | None:
    """Event times as the memory loads them at every start: one it could not read, imported,
    left every command failing (repair too)."""
    try:
        event_time.loaded_strictly(value)
    except ValueError as error:
        return (
            f"{value[:60]!r} do not read as event times ({error}): write them as an export"
            " does, [[start, end, precision, phrase]] with times in ISO 8601 UTC, or null to"
            " have them read again from the text"
        )
    return None


def _told_offset(value: Any) -> str | None:
    """A UTC offset in minutes, as a time may be told in (less than a day either side)."""
    if -MAX_OFFSET <= value <= MAX_OFFSET:
        return None
    return (
        f"{value} is no UTC offset: minutes east of UTC, from {-MAX_OFFSET} to {MAX_OFFSET}"
        " (-480 for -08:00), or null when not known"
    )


def _kept_features(value: Any) -> str | None:
    """What a recall keeps of its results for the ranker: "<rank> <features JSON>" each."""
    for i, item in enumerate(value):
        rank, _, features = str(item).partition(" ")
        try:
            values = json.loads(features)  # NaN and Infinity read, then refused as not finite
            readable = rank.isdigit() and isinstance(values, dict)
            readable = readable and all(
                isinstance(v, int | float) and math.isfinite(v) for v in values.values()
            )
        except ValueError:
            readable = False
        if not readable:
            shape = "<rank> <features as a JSON object of finite numbers>"
            return f'[{i}] must be "{shape}", got {str(item)[:60]!r}'
    return None


#: Columns the memory cannot load an object without (null or missing in a file written by
#: hand or damaged, a committed import left every command failing), or would read as
#: another (``_WITHOUT`` says why).
_REQUIRED: dict[str, tuple[str, ...]] = {
    "Observation": ("seq", "text", "observed_at", "recorded_at", "confidence"),
    "HAS_FIELD": ("position", "name", "kind", "value"),
    "FieldValue": ("field", "kind", "value"),
    "CoActivation": ("a", "b", "count"),
    "SUPERSEDES": ("at",),
    "Predicate": ("cardinality",),
}

#: Why a table needs its ``_REQUIRED`` columns where the memory would load an object
#: without them, as another.
_WITHOUT = {"Predicate": '"one" or "many": without it, its facts would take the configured one'}

#: Values a column's type allows but the memory does not: (table, column) -> the problem.
_VALUES: dict[tuple[str, str], Callable[[Any], str | None]] = {
    ("RETURNED", "judgement"): _judgement,
    ("RETURNED", "rank"): _rank,
    ("Recall", "features"): _kept_features,
    ("Predicate", "cardinality"): _cardinality,
    ("Observation", "event_times"): _stored_event_times,
    ("Observation", "told_offset"): _told_offset,
}


@dataclass(frozen=True)
class Imported:
    """What an import wrote: objects created and skipped (already there), per table."""

    created: dict[str, int]
    skipped: dict[str, int]


def write_import(graph: Graph, parsed: Parsed, progress: Progress | None = None) -> Imported:
    """Write a checked file into the graph in one transaction (nothing if it fails).

    Observations keep their ids; imported into a memory that holds some already, their
    order numbers (``seq``) are moved past its last, so they count as newer.
    """
    say = progress or (lambda _: None)
    _check_links(graph, parsed)
    _check_predicates(graph, parsed)
    before = tallies(graph, raw=True)
    offset = 0
    if before.get("Observation"):
        offset = int(graph.read("MATCH (o:Observation) RETURN max(o.seq)")[0][0] or 0)
    with graph.write("import") as writer:
        for table in NODES:
            rows = parsed.objects.get(table, [])
            if table == "Observation" and offset:
                rows = [{**r, "seq": None if r["seq"] is None else r["seq"] + offset} for r in rows]
            _write_rows(writer, table, rows, say)
        for table in LINKS:
            _write_rows(writer, table, parsed.objects.get(table, []), say)
    after = tallies(graph, raw=True)
    created = {t: after.get(t, 0) - before.get(t, 0) for t in [*NODES, *LINKS]}
    skipped = {t: len(parsed.objects.get(t, [])) - created[t] for t in created}
    if before.get("Observation") and created["Observation"]:
        # Imported facts change what the memory's own summaries say (and the file's say too
        # little): the start after the import writes every entity's summary anew.
        with graph.write("summaries") as writer:
            writer.forget_every_summary()
    return Imported(
        {t: n for t, n in created.items() if n}, {t: n for t, n in skipped.items() if n}
    )


def _check_links(graph: Graph, parsed: Parsed) -> None:
    """Refuse a link whose end is neither in the file nor in the memory (it would be counted
    as already there), a ``Pruned`` reason for an observation neither holds (it would show
    nowhere), and a judged result of a recall the file says was never judged.

    Raises:
        ImportRefused: naming the line.
    """
    held = {t: {r[key] for r in parsed.objects.get(t, [])} for t, key in NODES.items()}
    elsewhere: dict[str, set[str]] = {}
    for table, (start, end) in LINKS.items():
        for row in parsed.objects.get(table, []):
            for side, kind in (("from", start), ("to", end)):
                if row[side] not in held[kind]:
                    elsewhere.setdefault(kind, set()).add(row[side])
    for observation, _, _ in parsed.pruned:
        if observation not in held["Observation"]:
            elsewhere.setdefault("Observation", set()).add(observation)
    missing: dict[str, set[str]] = {}
    for kind, ids in elsewhere.items():
        found = graph.read(
            f"UNWIND $ids AS k MATCH (n:{_quoted(kind)} {{{NODES[kind]}: k}})"
            f" RETURN n.{NODES[kind]}",
            {"ids": sorted(ids)},
        )
        missing[kind] = ids - {str(row[0]) for row in found}
    for (observation, _, _), where in zip(parsed.pruned, parsed.lines.get(PRUNED, []), strict=True):
        if observation in missing.get("Observation", ()):
            raise ImportRefused(
                f"{where}: {PRUNED}'s id {observation!r} names no Observation of the file or"
                " the memory"
            )
    never_judged = {r["id"] for r in parsed.objects.get("Recall", []) if r["judged_at"] is None}
    for table, (start, end) in LINKS.items():
        for row, where in zip(
            parsed.objects.get(table, []), parsed.lines.get(table, []), strict=True
        ):
            for side, kind in (("from", start), ("to", end)):
                if row[side] in missing.get(kind, ()):
                    raise ImportRefused(
                        f"{where}: {table}'s {side} {row[side]!r} names no {kind} of the file or"
                        " the memory"
                    )
            if table == "RETURNED" and row.get("judgement") and row["from"] in never_judged:
                raise ImportRefused(
                    f"{where}: {_article(row['judgement'])} {row['judgement']} result of recall"
                    f" {row['from']!r}, whose"
                    " judged_at is null: give the recall the time it was judged"
                )


def _check_predicates(graph: Graph, parsed: Parsed) -> None:
    """Refuse a predicate the memory holds with the other cardinality: the memory's would
    be kept, and the file's supersessions (of a "one") left ending facts that accumulate, or
    its facts (of a "many") taken as replacing each other.

    Raises:
        ImportRefused: naming the line, the predicate, both cardinalities and what to do.
    """
    # Keyed as the memory reads them: an earlier import kept names such as "Works At".
    held = {predicate_key(name): cardinality for name, cardinality in graph.predicates()}
    for row, where in zip(
        parsed.objects.get("Predicate", []), parsed.lines.get("Predicate", []), strict=True
    ):
        mine = held.get(row["name"])
        if mine is not None and mine != row["cardinality"]:
            raise ImportRefused(
                f"{where}: predicate {row['name']!r} is {row['cardinality']!r} in the file but"
                f" {mine!r} in this memory, and an import does not change a predicate's"
                " cardinality: import the file into a new directory (--data-dir) instead"
            )


def _write_rows(
    writer: GraphWriter, table: str, rows: Sequence[dict[str, Any]], say: Progress
) -> None:
    if not rows:
        return
    done = 0
    for start in range(0, len(rows), BATCH):
        batch = rows[start : start + BATCH]
        # One statement per set of present columns: a missing value is left unset (Kùzu
        # would store an empty list for a null list, and cannot type a column of nulls).
        groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for row in batch:
            present = tuple(c for c in _columns(table) if row.get(c) is not None)
            groups.setdefault(present, []).append(row)
        for present, group in groups.items():
            writer.run(_statement(table, present), {"rows": group})
        done += len(batch)
        say(f"{table}: {done}/{len(rows)}")


def _statement(table: str, present: Sequence[str]) -> str:
    columns = _columns(table)
    key = NODES.get(table)
    sets = ", ".join(f"x.{c} = CAST(r.{c} AS {columns[c]})" for c in present if c != key)
    on_create = f" ON CREATE SET {sets}" if sets else ""
    if key is not None:
        return (
            f"UNWIND $rows AS r WITH r, r.{key} AS k"
            f" MERGE (x:{_quoted(table)} {{{key}: k}}){on_create}"
        )
    start, end = LINKS[table]
    # A link is one of its kind between its ends, but those ``_LINK_PARTS`` tells apart.
    part = _LINK_PARTS.get(table)
    if part is not None and part in present:
        sets = ", ".join(f"x.{c} = CAST(r.{c} AS {columns[c]})" for c in present if c != part)
        on_create = f" ON CREATE SET {sets}" if sets else ""
        told = f" {{{part}: CAST(r.{part} AS {columns[part]})}}"
    else:
        told = ""
    # One end matched at a time, each by a plain variable: Kùzu looks that up in the
    # primary-key index, while two ends in one MATCH became a join of both whole tables (a
    # 10,000-observation import filled a 1 GB buffer pool on its first OF batch).
    return (
        "UNWIND $rows AS r WITH r, r.`from` AS f"
        f" MATCH (a:{_quoted(start)} {{{NODES[start]}: f}}) WITH r, a, r.`to` AS t"
        f" MATCH (b:{_quoted(end)} {{{NODES[end]}: t}})"
        f" MERGE (a)-[x:{_quoted(table)}{told}]->(b){on_create}"
    )


# ---- counting -------------------------------------------------------------------------------


def tallies(graph: Graph, raw: bool = False) -> dict[str, int]:
    """How many of each node and link the graph holds; unless ``raw``, also the counts a
    person asks for: facts, current conflicts, judged recalls, retracted observations."""
    out: dict[str, int] = {}
    for table in NODES:
        out[table] = int(graph.read(f"MATCH (n:{_quoted(table)}) RETURN count(n)")[0][0])
    for table in LINKS:
        query = f"MATCH ()-[r:{_quoted(table)}]->() RETURN count(r)"
        out[table] = int(graph.read(query)[0][0])
    if raw:
        return out
    named = {
        "facts": "MATCH (o:Observation) WHERE o.subject IS NOT NULL RETURN count(o)",
        "retracted": "MATCH (o:Observation) WHERE o.retracted_at IS NOT NULL RETURN count(o)",
        "judged recalls": "MATCH (q:Recall) WHERE q.judged_at IS NOT NULL RETURN count(q)",
    }
    for label, query in named.items():
        out[label] = int(graph.read(query)[0][0])
    out["judgements"] = graph.judged_result_count()
    return out
