"""Export and import: a memory filled through MCP with every kind of object comes back equal
object by object; duplicates are skipped, a bad line writes nothing, a newer format is refused."""

from __future__ import annotations

import json
import logging
import re
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pytest
from calls import ok, seed_bridge
from conftest import hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.listing import listing
from doxa.store import Memory, records
from doxa.store.drafts import FactDraft, MemoryDraft, SupportDraft, memory_key
from doxa.store.embedder import HashEmbedder
from doxa.store.errors import MemoryStoreError, StorageError
from doxa.store.exporting import FORMAT, ImportRefused, parse_export, records_in, write_import
from doxa.store.graph import Graph, query_vector_text
from doxa.store.health import check
from doxa.store.importing import import_file, page_cache_bytes
from doxa.store.records import Record
from doxa.store.records import validate as validate_record
from doxa.store.schema import latest_version
from doxa.store.values import iso, utc_now

pytestmark = pytest.mark.anyio


async def fill_everything(data_dir: Path) -> None:
    """Every kind of object: agents, topics, episodes, beliefs, evidence, contradictions,
    facts superseded under both clocks, a retraction, a record, recalls and a judgement."""
    async with Client(create_server(hash_settings(data_dir))) as client:
        ids = await seed_bridge(client)
        await ok(
            client,
            "remember",
            text="Alice lives in Paris.",
            fact={"subject": "Alice", "predicate": "lives in", "object": "Paris"},
            observed_at="2024-01-01T00:00:00Z",
        )
        await ok(
            client,
            "remember",
            text="Alice lives in Lyon.",
            fact={"subject": "Alice", "predicate": "lives in", "object": "Lyon"},
            observed_at="2024-06-01T00:00:00Z",
        )
        # This agent shares another's Bonn (its Athens ends), takes it back (the link is
        # undone) and shares it again: a second link between the same two facts.
        carl = {"subject": "Carl", "predicate": "lives in"}
        athens = {"text": "Carl lives in Athens.", "fact": {**carl, "object": "Athens"}}
        await ok(client, "remember", **athens, observed_at="2024-01-01T00:00:00Z")
        bonn = {
            "text": "Carl lives in Bonn.",
            "fact": {**carl, "object": "Bonn"},
            "observed_at": "2024-03-01T00:00:00Z",
        }
        told = await ok(client, "remember", **bonn, agent="alice")
        await ok(client, "remember", **bonn)
        await ok(client, "forget", id=told["observation_id"])
        await ok(client, "remember", **bonn)
        # This agent's later fact withdraws its belief in a fact alice holds too: the belief
        # keeps the time it held until.
        dora = {"subject": "Dora", "predicate": "lives in"}
        rome = {
            "text": "Dora lives in Rome.",
            "fact": {**dora, "object": "Rome"},
            "observed_at": "2024-01-01T00:00:00Z",
        }
        await ok(client, "remember", **rome, agent="alice")
        await ok(client, "remember", **rome)
        oslo = {**dora, "object": "Oslo", "valid_from": "2024-09-01T00:00:00Z"}
        await ok(client, "remember", text="Dora lives in Oslo.", fact=oslo)
        # The same, then forgotten: the belief keeps when its agent forgot it.
        emil = {**rome, "text": "Emil lives in Rome.", "fact": {**rome["fact"], "subject": "Emil"}}
        await ok(client, "remember", **emil, agent="alice")
        shared = await ok(client, "remember", **emil)
        await ok(client, "remember", text="Emil lives in Oslo.", fact={**oslo, "subject": "Emil"})
        await ok(client, "forget", id=shared["observation_id"])
        await ok(
            client,
            "remember",
            text="Alice likes tea.",
            fact={"subject": "Alice", "predicate": "likes", "object": "tea", "cardinality": "many"},
        )
        # A list may hold a value twice: two links to one field value.
        tags = ["rock", "metal", "rock"]
        await ok(
            client, "remember", record={"type": "Track", "fields": {"album_id": 176, "tags": tags}}
        )
        wrong = await ok(client, "remember", text="The moon is made of cheese.")
        await ok(client, "forget", id=wrong["observation_id"])
        found = await ok(client, "recall", query="bridge route 9")
        other = next(
            r["observation_id"] for r in found["results"] if r["observation_id"] != ids["closed"]
        )
        await ok(  # two accepted together: a co-activated pair
            client, "feedback", recall_id=found["recall_id"], accepted=[ids["closed"], other]
        )
        await ok(client, "recall", query="Alice")


#: ``fill_everything``'s export, made once per test process for the tests that damage a
#: copy of it (each filled and exported a memory of its own: a second or two apiece).
_EXPORTED: list[str] = []


async def everything_exported(tmp_path: Path) -> list[str]:
    """The lines of an export of ``fill_everything``'s memory (a new list each call)."""
    if not _EXPORTED:
        await fill_everything(tmp_path / "a")
        export(tmp_path / "a", tmp_path / "a.jsonl")
        _EXPORTED.extend((tmp_path / "a.jsonl").read_text().splitlines())
    return list(_EXPORTED)


async def damaged(tmp_path: Path, which: Any, change: dict[str, Any]) -> int:
    """Write ``tmp_path / "bad.jsonl"``: the export with ``change`` made to the first line
    ``which`` picks; returns that line's number."""
    text = await everything_exported(tmp_path)
    number = next(i for i, line in enumerate(text) if i and which(json.loads(line)))
    text[number] = json.dumps(json.loads(text[number]) | change)
    (tmp_path / "bad.jsonl").write_text("\n".join(text) + "\n")
    return number + 1


def lines(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    text = path.read_text().splitlines()
    return json.loads(text[0]), [json.loads(line) for line in text[1:]]


def export(data_dir: Path, path: Path) -> dict[str, Any]:
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        return memory.export(str(path))
    finally:
        memory.close()


def imported_as_of(
    tmp_path: Path, schema: int, header: dict[str, Any], objects: list[dict[str, Any]]
) -> Memory:
    """A new memory in ``tmp_path / "b"`` (open) that imported ``objects`` as a file written
    at ``schema``."""
    old = tmp_path / "old.jsonl"
    old.write_text(
        "\n".join(json.dumps(x) for x in [{**header, "schema": schema}, *objects]) + "\n"
    )
    import_file(hash_settings(tmp_path / "b").store, old)
    memory = Memory.open(hash_settings(tmp_path / "b").store)
    memory.warm_up()
    return memory


async def test_a_round_trip_gives_back_every_object_equal(tmp_path: Path) -> None:
    await fill_everything(tmp_path / "a")
    header = export(tmp_path / "a", tmp_path / "a.jsonl")
    assert header["format"] == FORMAT and header["schema"] == latest_version()
    kinds = set(header["counts"])
    nodes = ("Agent", "Topic", "Episode", "Observation", "Belief", "Recall", "Predicate")
    for kind in (*nodes, "CoActivation"):
        assert kind in kinds
    for kind in ("SUPPORTS", "CONTRADICTS", "SUPERSEDES", "RETURNED", "IS_A", "HAS_FIELD"):
        assert kind in kinds
    progress: list[str] = []
    done = import_file(hash_settings(tmp_path / "b").store, tmp_path / "a.jsonl", progress.append)
    assert done.created["Observation"] == header["counts"]["Observation"]
    assert not done.skipped
    assert any(p.startswith("Observation: ") for p in progress)
    export(tmp_path / "b", tmp_path / "b.jsonl")
    first, second = lines(tmp_path / "a.jsonl"), lines(tmp_path / "b.jsonl")
    assert second[1] == first[1]
    assert first[0]["counts"] == second[0]["counts"]
    judged = [x for x in first[1] if x["table"] == "RETURNED" and x["judgement"]]
    assert judged, "the judgement travels with its recall"
    bonn = next(x["id"] for x in first[1] if x.get("text") == "Carl lives in Bonn.")
    undone, again = [x for x in first[1] if x["table"] == "SUPERSEDES" and x["from"] == bonn]
    assert undone["dropped"] is not None and again["dropped"] is None
    held = [x for x in first[1] if x["table"] == "Belief" and x["held_until"]]
    assert [x["held_until"][:19] for x in held] == ["2024-09-01T00:00:00"] * 2, held
    assert sorted(x["forgotten_at"] is None for x in held) == [False, True]
    memory = Memory.open(hash_settings(tmp_path / "b").store)
    memory.warm_up()
    try:
        assert memory.stats()["IndexRows"] == len(memory.graph.live_observation_ids())
        assert memory.recall("Lyon").results[0].text == "Alice lives in Lyon."
    finally:
        memory.close()


async def test_a_file_from_before_migration_6_keeps_its_features(tmp_path: Path) -> None:
    # Files of schema 5 kept what the ranker saw on each RETURNED link; it is the recall's now.
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, objects = lines(tmp_path / "a.jsonl")
    kept = {x["id"]: x.pop("features") for x in objects if x["table"] == "Recall"}
    assert any(kept.values()), "the recalls kept what the ranker saw"
    for x in objects:
        if x["table"] == "RETURNED":
            by_rank = dict(f.split(" ", 1) for f in kept[x["from"]] or ())
            x["features"] = by_rank.get(str(x["rank"]))
    memory = imported_as_of(tmp_path, 5, header, objects)
    try:
        judged = memory.graph.judged_results()
    finally:
        memory.close()
    assert judged and all(j["features"] and "vector" in j["features"] for j in judged)


async def test_a_file_from_before_migration_7_keeps_its_co_activations(tmp_path: Path) -> None:
    # Files of schema 6 held each pair accepted together as a CO_ACTIVATED link; the graph
    # counts it on a CoActivation node now.
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, objects = lines(tmp_path / "a.jsonl")
    pairs = [x for x in objects if x["table"] == "CoActivation"]
    assert pairs
    old = [x for x in objects if x["table"] != "CoActivation"] + [
        {"table": "CO_ACTIVATED", "from": x["a"], "to": x["b"], "count": x["count"]} for x in pairs
    ]
    path = tmp_path / "old.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [{**header, "schema": 6}, *old]) + "\n")
    done = import_file(hash_settings(tmp_path / "b").store, path)
    assert done.created["CoActivation"] == len(pairs)
    memory = Memory.open(hash_settings(tmp_path / "b").store)
    memory.warm_up()
    try:
        assert sorted(memory.graph.co_activations()) == sorted(
            (x["a"], x["b"], x["count"]) for x in pairs
        )
    finally:
        memory.close()
    newer = tmp_path / "newer.jsonl"
    newer.write_text("\n".join(json.dumps(x) for x in [header, *old]) + "\n")
    with pytest.raises(ImportRefused, match="unknown table 'CO_ACTIVATED'"):
        import_file(hash_settings(tmp_path / "c").store, newer)


async def test_a_file_from_before_migration_14_has_its_judged_queries_embedded_again(
    tmp_path: Path,
) -> None:
    # Files of schema 13 and before held a judged query's vector on the recall (bytes, or
    # before schema 8 a list of floats), where Kùzu 0.11.3 could have garbled it: it is left
    # out, and the importing memory embeds each judged query again from its words.
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, objects = lines(tmp_path / "a.jsonl")
    judged = [x for x in objects if x["table"] == "Recall" and x["judged_at"]]
    assert judged, "the memory holds judged recalls"
    garbled = query_vector_text(np.ones(384, dtype=np.float32))
    for x in judged:  # another recall's vector, as Kùzu's garbling left them
        x["query_embedding"], x["query_embedder"] = garbled, "hash-v1:384"
    judged[0]["query_vector"] = [0.5] * 384
    memory = imported_as_of(tmp_path, 13, header, objects)
    try:
        kept = {rid: (vector, by) for rid, vector, by, *_ in memory.graph.judgements()}
        found = memory.recall("bridge route 9")
    finally:
        memory.close()
    embedder = HashEmbedder()
    queries = {x["id"]: x["query"] for x in judged}
    assert kept and set(kept) <= set(queries)
    for rid, (vector, by) in kept.items():
        assert by == embedder.fingerprint
        assert np.array_equal(vector, embedder.embed([queries[rid] or " "])[0])
    assert any(r.scores.get("feedback", 0) > 0 for r in found.results)


async def test_an_import_embedding_what_it_brought_logs_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # An export keeps no vectors: the start after an import embeds every observation and
    # judged query it brought. That is the import's work, not a repair, into a new memory
    # or one that held others.
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    async with Client(create_server(hash_settings(tmp_path / "c"))) as client:
        await ok(client, "remember", text="A note of the memory imported into.")
    caplog.set_level(logging.INFO, logger="doxa.store.startup")
    for into in ("b", "c"):
        caplog.clear()
        import_file(hash_settings(tmp_path / into).store, tmp_path / "a.jsonl")
        said = {r.getMessage(): r.levelno for r in caplog.records}
        assert [m for m, level in said.items() if level >= logging.WARNING] == [], into
        assert any("observations it lacks" in m for m in said), into
        assert any("judged queries embedded again" in m for m in said), into


def test_an_index_that_lost_rows_is_still_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = hash_settings(tmp_path / "a")
    memory = Memory.open(settings.store)
    memory.warm_up()
    try:
        done = memory.remember([MemoryDraft(text=f"Note {i}.") for i in range(3)], batch=True)
        assert memory.settle(timeout=30)
    finally:
        memory.close()
    index = lancedb.connect(str(tmp_path / "a" / "index")).open_table("observations")
    index.delete(f"id = '{done[0].observation_id}'")
    caplog.set_level(logging.INFO, logger="doxa.store.startup")
    memory = Memory.open(settings.store)
    memory.warm_up()
    memory.close()
    [lost] = [r for r in caplog.records if "observations it lacks" in r.getMessage()]
    assert lost.levelno == logging.WARNING and "embedding 1 " in lost.getMessage()


async def test_importing_the_same_file_twice_skips_what_is_there(tmp_path: Path) -> None:
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    again = import_file(hash_settings(tmp_path / "a").store, tmp_path / "a.jsonl")
    assert again.created == {}
    assert again.skipped["Observation"] == lines(tmp_path / "a.jsonl")[0]["counts"]["Observation"]


def observations(data_dir: Path) -> int:
    """How many observations the memory in ``data_dir`` holds (an import wrote none?)."""
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        return memory.stats()["Observation"]
    finally:
        memory.close()


async def test_a_record_text_a_remember_now_refuses_as_a_number_imports_as_kept(
    tmp_path: Path,
) -> None:
    # "1e400" (a JSON number beyond a float's range, arriving as its text) was kept as that
    # string; remember now refuses it, and an export holding it still imports.
    text = await everything_exported(tmp_path)
    for number, line in enumerate(text):
        read = json.loads(line)
        if read.get("table") == "FieldValue" and read["value"] == "metal":
            text[number] = json.dumps(read | {"key": "tags|string|1e400", "value": "1e400"})
        elif read.get("table") == "HAS_FIELD" and read["value"] == "metal":
            text[number] = json.dumps(read | {"to": "tags|string|1e400", "value": "1e400"})
    (tmp_path / "old.jsonl").write_text("\n".join(text) + "\n")
    import_file(hash_settings(tmp_path / "b").store, tmp_path / "old.jsonl")
    memory = Memory.open(hash_settings(tmp_path / "b").store)
    memory.warm_up()
    try:
        [found] = memory.recall("", where={"tags": "rock"}).results
        # Found by that text too (a where refused it as a number too large to compare).
        by_text = memory.recall("", where={"tags": "1e400"}).results
    finally:
        memory.close()
    assert found.record is not None
    assert found.record.shown_fields()["tags"] == ["rock", "1e400", "rock"]
    assert [r.observation_id for r in by_text] == [found.observation_id]


async def test_a_record_type_kept_in_another_unicode_form_is_found_in_either(
    tmp_path: Path,
) -> None:
    # A memory may hold a type remembered before types were kept composed (NFC): "Café" with a
    # combining accent. A where naming it typed ("é") found nothing, saying: did you mean
    # "Café"?
    composed, combining = "Caf\u00e9", "Cafe\u0301"
    text = await everything_exported(tmp_path)
    for number, line in enumerate(text):
        read = json.loads(line)
        if read.get("table") == "RecordType":
            text[number] = json.dumps(read | {"name": combining})
        elif read.get("table") == "IS_A":
            text[number] = json.dumps(read | {"to": combining})
    (tmp_path / "old.jsonl").write_text("\n".join(text) + "\n")
    import_file(hash_settings(tmp_path / "b").store, tmp_path / "old.jsonl")
    memory = Memory.open(hash_settings(tmp_path / "b").store)
    memory.warm_up()
    try:
        for asked in (composed, combining):
            found = memory.recall("", where={"@type": asked, "album_id": 176})
            assert [r.record.type for r in found.results if r.record] == [composed], asked
            assert found.note is None
        [told] = memory.remember(
            [MemoryDraft(text=None, record={"type": composed, "fields": {"album_id": 5}})]
        )
        both = memory.recall("", where={"@type": combining})
        missing = memory.recall("", where={"@type": "Cafes"})
    finally:
        memory.close()
    assert told.observation_id in {r.observation_id for r in both.results}
    assert len(both.results) == 2
    assert missing.note == 'where.@type: no record is of this type; did you mean "Café"?'
    # The Markdown export and doxa recall --all read an export's records: composed there too.
    kept = records_in(parse_export(tmp_path / "old.jsonl").objects)
    assert {r.type for r in kept.values()} == {composed}


async def test_a_bad_line_writes_nothing_and_is_named(tmp_path: Path) -> None:
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    text = (tmp_path / "a.jsonl").read_text().splitlines()
    bad = json.loads(text[-1])
    bad["table"] = "Observation"
    bad["id"], bad["confidence"] = "o-bad", 7
    text.append(json.dumps(bad))
    (tmp_path / "bad.jsonl").write_text("\n".join(text) + "\n")
    with pytest.raises(ImportRefused, match=f"line {len(text)}"):
        import_file(hash_settings(tmp_path / "b").store, tmp_path / "bad.jsonl")
    assert observations(tmp_path / "b") == 0


def _judged(line: dict[str, Any]) -> bool:
    return line["table"] == "RETURNED" and bool(line["judgement"])


def _judged_recall(line: dict[str, Any]) -> bool:
    return line["table"] == "Recall" and line["judged_at"] is not None


#: (which line, what it is changed to, what the refusal says): values the columns' types
#: allow but the memory does not, a link to nothing, a judged result of an unjudged recall.
DAMAGE: list[tuple[Any, dict[str, Any], str]] = [
    (_judged, {"judgement": "maybe"}, 'judgement must be "accepted", "rejected" or ""'),
    (_judged, {"rank": -3}, "rank must be 0 or more"),
    (_judged, {"to": "obs_nowhere"}, "to 'obs_nowhere' names no Observation"),
    (_judged_recall, {"features": ["0 {not json"]}, "features [0] must be"),
    (_judged_recall, {"judged_at": None}, "whose judged_at is null"),
    (_judged, {"rank": 10**30}, "beyond a 64-bit integer"),
    (_judged, {"score": float("nan")}, "not a finite number"),
    (_judged_recall, {"features": ['0 {"vector": NaN}']}, "features [0] must be"),
]


@pytest.mark.parametrize(("which", "change", "said"), DAMAGE)
async def test_learning_data_the_memory_cannot_use_is_refused_naming_the_line(
    tmp_path: Path, which: Any, change: dict[str, Any], said: str
) -> None:
    line = await damaged(tmp_path, which, change)
    with pytest.raises(ImportRefused) as refused:
        import_file(hash_settings(tmp_path / "b").store, tmp_path / "bad.jsonl")
    message = str(refused.value)
    assert said in message
    judged_at = change.get("judged_at", "") is None  # named at the result that needs it
    assert (f"line {line}:" in message) != judged_at, message
    assert observations(tmp_path / "b") == 0


def _observation(line: dict[str, Any]) -> bool:
    return line["table"] == "Observation"


def _fact(line: dict[str, Any]) -> bool:
    return line["table"] == "Observation" and line["subject"] is not None


def _table(name: str) -> Any:
    return lambda line: line["table"] == name


def _held(line: dict[str, Any]) -> bool:
    return line["table"] == "Belief" and line.get("retracted_at") is None


#: A time without its offset: the memory compares event times with aware ones.
NAIVE = "2024-01-01T00:00:00"

#: Values a damaged or hand-written file may hold that the memory cannot load: imported,
#: each left every later command failing (or a confidence out of range stored as it was).
UNLOADABLE: list[tuple[Any, dict[str, Any], str]] = [
    (_observation, {"confidence": None}, "Observation needs 'confidence'"),
    (_observation, {"text": None}, "Observation needs 'text'"),
    (_observation, {"observed_at": None}, "Observation needs 'observed_at'"),
    (_observation, {"seq": None}, "Observation needs 'seq'"),
    (_observation, {"confidence": "1.5"}, "confidence must be between 0 and 1, got 1.5"),
    (_observation, {"confidence": "NaN"}, "confidence must be between 0 and 1"),
    (_observation, {"confidence": "0.1234567890123456789"}, "more than 18 decimal places"),
    (_fact, {"object": None}, "Observation's fact needs 'object'"),
    (_table("SUPPORTS"), {"weight": "-0.5"}, "weight must be between 0 and 1"),
    (_table("HAS_FIELD"), {"position": None}, "HAS_FIELD needs 'position'"),
    (_table("SUPERSEDES"), {"at": None}, "SUPERSEDES needs 'at'"),
    (_table("CoActivation"), {"count": None}, "CoActivation needs 'count'"),
    # Each of these imported, then failed every start of the memory (repair's too), or
    # every recall of the record (its field name), as the memory loads them.
    (_observation, {"event_times": "x"}, "event_times 'x' do not read as event times"),
    (_observation, {"event_times": "a"}, "event_times 'a' do not read as event times"),
    (_observation, {"event_times": "[[1,2]]"}, "(not enough values to unpack"),
    (_observation, {"event_times": '[["noon", "dusk", "day", "x"]]'}, "'noon'"),
    (_observation, {"event_times": f'[["{NAIVE}", "{NAIVE}", "day", "x"]]'}, "without its offset"),
    # A UTC offset of a day or more: no calendar a time was told in (Python has none).
    (_observation, {"told_offset": 1440}, "told_offset 1440 is no UTC offset"),
    (_observation, {"told_offset": -2000}, "told_offset -2000 is no UTC offset"),
    (_observation, {"told_offset": 40000}, "told_offset 40000 is not a INT16"),
    (_observation, {"told_offset": "-08:00"}, "told_offset '-08:00' is not a INT16"),
    (_table("HAS_FIELD"), {"kind": "integer", "value": "abc"}, "'abc' is not an integer"),
    (_table("HAS_FIELD"), {"kind": "date", "value": "notadate"}, "'notadate' is not a date"),
    (_table("HAS_FIELD"), {"kind": "potato"}, "kind 'potato' is none of integer, decimal"),
    (_table("HAS_FIELD"), {"name": "a b c!"}, "HAS_FIELD has the field name 'a b c!'"),
    # Each of these was read back as false.
    (_table("HAS_FIELD"), {"kind": "boolean", "value": "maybe"}, "'maybe' is not a boolean"),
    (_table("HAS_FIELD"), {"kind": "boolean", "value": "TRUE"}, "'TRUE' is not a boolean"),
    (_table("HAS_FIELD"), {"kind": "boolean", "value": "1"}, "'1' is not a boolean"),
    (_table("HAS_FIELD"), {"kind": "boolean", "value": ""}, "value '' is not a boolean"),
    # A field value's node was not checked at all: a later record's equal value is filed
    # under it.
    (_table("FieldValue"), {"kind": "number", "value": "abc"}, "value 'abc' is no number"),
    (_table("FieldValue"), {"kind": "date", "value": "2024-02-30"}, "kind 'date' is no class"),
    (_table("FieldValue"), {"kind": "day", "value": "2024-02-30"}, "'2024-02-30' is no day"),
    (_table("FieldValue"), {"kind": "boolean", "value": "yes"}, "'yes' is no boolean"),
    (_table("FieldValue"), {"kind": "instant", "value": NAIVE}, f"{NAIVE!r} is no instant"),
    (_table("FieldValue"), {"field": "größe"}, "FieldValue's field has the field name 'größe'"),
    (_table("FieldValue"), {"field": "Album_ID"}, "field 'Album_ID' is not as records match"),
    (_table("FieldValue"), {"key": "x|number|176"}, "key 'x|number|176' is not its field"),
    # Kùzu failed on it mid-write, and a new directory was left behind.
    (_observation, {"text": "Bad \ud800 text."}, "text holds an unpaired surrogate (U+D800)"),
    (_table("Predicate"), {"cardinality": "several"}, 'cardinality must be "one"'),
    (_table("Predicate"), {"cardinality": None}, "Predicate needs 'cardinality'"),
    # Each of these remember refuses; imported, the memory misread it: a text no recall
    # finds, a negative hit rate in every score, a memory no recall sees until 2099.
    (_observation, {"text": " \n "}, "Observation's text must not be blank"),
    (_observation, {"seq": -1}, "Observation's seq must be 0 or more, got -1"),
    (_observation, {"hits": -2}, "Observation's hits must be 0 or more, got -2"),
    (_observation, {"kind": "note"}, "kind must be one of fact, observation, record"),
    (_observation, {"recorded_at": "2099-01-01T00:00:00Z"}, "2099-01-01T00:00:00Z is ahead"),
    (_observation, {"observed_at": "2099-01-01T00:00:00+05:00"}, "observed_at 2098-12-31T19"),
    (
        _fact,
        {"valid_from": "2024-02-01T00:00:00Z", "stated_until": "2024-01-01T00:00:00Z"},
        "stated_until 2024-01-01T00:00:00Z must be later than valid_from 2024-02-01",
    ),
    (
        _fact,
        {"valid_from": "2024-02-01T00:00:00Z", "valid_until": "2024-01-01T00:00:00Z"},
        "valid_until 2024-01-01T00:00:00Z must not be before valid_from 2024-02-01",
    ),
    (_fact, {"kind": "observation"}, "kind 'observation' does not match its fact"),
    (_observation, {"retracted_at": "2099-01-01T00:00:00Z"}, "retracted_at 2099-01-01T00:00:00Z"),
    (
        _observation,
        {"retracted_at": "2000-01-01T00:00:00Z"},
        "retracted_at 2000-01-01T00:00:00Z is",
    ),
    (_table("Belief"), {"since": "2099-01-01T00:00:00Z"}, "Belief's since 2099-01-01T00:00:00Z"),
    # A judgement dated ahead never faded (its lift stayed 0.6 for good).
    (_judged_recall, {"judged_at": "9999-12-31T00:00:00Z"}, "judged_at 9999-12-31T00:00:00Z is"),
    (_judged_recall, {"judged_at": "2000-01-01T00:00:00Z"}, "judged_at 2000-01-01T00:00:00Z is"),
    # Beliefs never withdrawn (an export lists beliefs in no set order).
    (_held, {"held_until": "2024-01-01T00:00:00Z"}, "held_until needs retracted_at"),
    (_held, {"forgotten_at": "2024-01-01T00:00:00Z"}, "forgotten_at needs held_until"),
]


@pytest.mark.parametrize(("which", "change", "said"), UNLOADABLE)
async def test_what_the_memory_could_not_load_is_refused_before_anything_is_written(
    tmp_path: Path, which: Any, change: dict[str, Any], said: str
) -> None:
    line = await damaged(tmp_path, which, change)
    mine = hash_settings(tmp_path / "mine").store
    memory = Memory.open(mine)
    memory.remember([MemoryDraft(text="My own note.")])
    memory.close()
    with pytest.raises(ImportRefused, match=f"line {line}: .*{re.escape(said)}"):
        import_file(mine, tmp_path / "bad.jsonl")
    with pytest.raises(ImportRefused):  # into a new directory: none is left behind
        import_file(hash_settings(tmp_path / "new").store, tmp_path / "bad.jsonl")
    assert not (tmp_path / "new").exists()
    assert observations(tmp_path / "mine") == 1  # opens, as it was


async def test_a_record_a_client_could_not_read_back_is_refused_at_its_line(
    tmp_path: Path,
) -> None:
    # Fields named alike but for case each load, but the record as recall shows it is no
    # record: `doxa recall` failed on it.
    def album(line: dict[str, Any]) -> bool:
        return line["table"] == "HAS_FIELD" and line["name"] == "album_id"

    await damaged(tmp_path, album, {"name": "TAGS"})  # beside its tags
    text = (tmp_path / "bad.jsonl").read_text().splitlines()
    is_a = next(i for i, line in enumerate(text) if i and json.loads(line)["table"] == "IS_A")
    said = f"line {is_a + 1}: the record of .* reads back as no record: .*'TAGS' again"
    with pytest.raises(ImportRefused, match=said):
        import_file(hash_settings(tmp_path / "new").store, tmp_path / "bad.jsonl")
    assert not (tmp_path / "new").exists()


def test_a_failed_import_into_a_new_directory_leaves_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Only a refused file was cleaned up: a failure while writing (Kùzu refusing a value)
    # left the graph and the lock where there had been nothing.
    big_export(tmp_path / "file.jsonl", 3)

    def failing(*_: Any) -> None:
        raise StorageError("import", "the database failed")

    monkeypatch.setattr("doxa.store.importing.write_import", failing)
    with pytest.raises(StorageError):
        import_file(hash_settings(tmp_path / "new" / "deeper").store, tmp_path / "file.jsonl")
    assert not (tmp_path / "new").exists()
    mine = hash_settings(tmp_path / "mine").store
    Memory.open(mine).close()
    with pytest.raises(StorageError):  # a memory that was there stays
        import_file(mine, tmp_path / "file.jsonl")
    assert observations(tmp_path / "mine") == 0


#: An import that stops inside the graph's write, in a process of its own, to be killed there.
_STOPPED_IMPORT = """
import sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from conftest import hash_settings
import doxa.store.importing as importing

def stuck(graph, parsed, say):
    print("writing", flush=True)
    time.sleep(600)

importing.write_import = stuck
importing.import_file(hash_settings(Path(sys.argv[1])).store, Path(sys.argv[2]))
"""


def test_an_import_killed_into_a_new_memory_is_no_memory_until_imported_again(
    tmp_path: Path,
) -> None:
    # Killed while writing the graph of a new memory: the graph held nothing (or part of the
    # file), and check called it a healthy empty memory.
    big_export(tmp_path / "file.jsonl", 3)
    new = tmp_path / "new"
    (new / "photos").mkdir(parents=True)  # the user's: starting again took them away too
    (new / "notes.txt").write_text("mine")
    (new / "photos" / "a.jpg").write_bytes(b"jpg")
    tests = str(Path(__file__).parents[1])
    args = [sys.executable, "-c", _STOPPED_IMPORT, str(new), str(tmp_path / "file.jsonl"), tests]
    with subprocess.Popen(args, stdout=subprocess.PIPE, text=True) as stopped:
        assert stopped.stdout is not None and stopped.stdout.readline() == "writing\n"
        stopped.kill()
    settings = hash_settings(new).store
    found = check(settings)
    assert not found.healthy
    assert found.problems == [
        f"{new} is a new memory whose import stopped midway: it is no"
        " memory; import the file into it again (or delete the directory)"
    ]
    with pytest.raises(MemoryStoreError, match="import stopped midway"):
        Memory.open(settings).warm_up()
    import_file(settings, tmp_path / "file.jsonl")
    assert check(settings).healthy and observations(new) == 3
    assert (new / "notes.txt").read_text() == "mine" and (new / "photos" / "a.jpg").exists()


async def test_a_predicate_of_the_other_cardinality_is_not_merged(tmp_path: Path) -> None:
    # The memory's "many" was kept and the file's supersessions of its "one" imported under
    # it: Alice's tea ended her coffee, which the memory said accumulate.
    def likes(drink: str, cardinality: str) -> dict[str, Any]:
        fact = {"subject": "Alice", "predicate": "likes", "object": drink}
        return {"text": f"Alice likes {drink}.", "fact": fact | {"cardinality": cardinality}}

    async with Client(create_server(hash_settings(tmp_path / "mine"))) as client:
        await ok(client, "remember", **likes("jazz", "many"))
    async with Client(create_server(hash_settings(tmp_path / "other"))) as client:
        await ok(client, "remember", **likes("coffee", "one"))
        await ok(client, "remember", **likes("tea", "one"))
    export(tmp_path / "other", tmp_path / "other.jsonl")
    said = (
        r"line \d+: predicate 'likes' is 'one' in the file but 'many' in this memory.*"
        r"import the file into a new directory"
    )
    with pytest.raises(ImportRefused, match=said):
        import_file(hash_settings(tmp_path / "mine").store, tmp_path / "other.jsonl")
    assert observations(tmp_path / "mine") == 1
    import_file(hash_settings(tmp_path / "new").store, tmp_path / "other.jsonl")
    assert observations(tmp_path / "new") == 2


async def works_at_many(data_dir: Path, path: Path, named: str) -> None:
    """Export a memory where Alice works at Acme and Globex ("many") to ``path``, its
    predicate written ``named`` (as files of schema 1 held such names)."""
    async with Client(create_server(hash_settings(data_dir))) as client:
        for company in ("Acme", "Globex"):
            fact = {"subject": "Alice", "predicate": "works at", "object": company}
            await ok(
                client,
                "remember",
                text=f"Alice works at {company}.",
                fact=fact | {"cardinality": "many"},
            )
    export(data_dir, path)
    header, rest = lines(path)
    for line in rest:
        if line["table"] == "Predicate":
            line["name"] = named
        elif line["table"] == "Observation" and line.get("predicate"):
            line["predicate"] = named
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *rest]))


async def works_at(data_dir: Path) -> list[tuple[str, str]]:
    """What ``about`` tells of Alice after she starts at Initech, told without a
    cardinality: (event, fact) in order."""
    async with Client(create_server(hash_settings(data_dir))) as client:
        fact = {"subject": "Alice", "predicate": "works at", "object": "Initech"}
        await ok(client, "remember", text="Alice works at Initech.", fact=fact)
        told = await ok(client, "about", name="Alice")
    return [(e["event"], e["fact"]) for e in told["timeline"]]


async def test_a_predicate_named_otherwise_keeps_its_cardinality(tmp_path: Path) -> None:
    # Imported as written, "Works At" was a predicate the memory never looked up (it looks
    # up "works_at"): its "many" lost, the next start took Globex as ending Acme, and
    # Initech ended both.
    await works_at_many(tmp_path / "a", tmp_path / "a.jsonl", "Works At")
    import_file(hash_settings(tmp_path / "b").store, tmp_path / "a.jsonl")
    assert await works_at(tmp_path / "b") == [
        ("started", "Alice works at Acme"),
        ("started", "Alice works at Globex"),
        ("started", "Alice works at Initech"),
    ]


async def test_a_memory_an_earlier_import_left_a_predicate_named_otherwise_keeps_it(
    tmp_path: Path,
) -> None:
    await works_at_many(tmp_path / "a", tmp_path / "a.jsonl", "Works At")
    parsed = parse_export(tmp_path / "a.jsonl")
    for row in parsed.objects["Predicate"]:
        row["name"] = "Works At"
    for row in parsed.objects["Observation"]:
        row["predicate"] = "Works At"
    graph = Graph(tmp_path / "b" / "graph")  # as an earlier version imported it
    try:
        write_import(graph, parsed)
        assert graph.predicates() == [("Works At", "many")]
    finally:
        graph.close()
    assert [event for event, _ in await works_at(tmp_path / "b")] == ["started"] * 3


async def test_two_names_of_one_predicate_with_both_cardinalities_are_refused(
    tmp_path: Path,
) -> None:
    await works_at_many(tmp_path / "a", tmp_path / "a.jsonl", "Works At")
    header, rest = lines(tmp_path / "a.jsonl")
    at = next(i for i, line in enumerate(rest) if line["table"] == "Predicate")
    rest.insert(at + 1, {**rest[at], "name": "works-at", "cardinality": "one"})
    header["counts"]["Predicate"] += 1
    (tmp_path / "b.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [header, *rest]))
    said = (
        rf"line {at + 3}: predicate 'works_at' is 'one' here but 'many' at \S+ line {at + 2}:"
        " one predicate has one cardinality"
    )
    with pytest.raises(ImportRefused, match=said):
        import_file(hash_settings(tmp_path / "b").store, tmp_path / "b.jsonl")
    assert not (tmp_path / "b").exists()
    rest[at]["name"] = "--"
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [header, *rest]))
    with pytest.raises(ImportRefused, match=r"Predicate's name '--' holds no word"):
        import_file(hash_settings(tmp_path / "c").store, tmp_path / "c.jsonl")


def likes_told_as_one(data_dir: Path, path: Path, written_at: int) -> None:
    """Export a memory where Alice's hiking superseded her jazz ("likes" told as "one", as
    every predicate was before migration 2) to ``path`` as a file of schema ``written_at``
    holding no Predicate line (as such files, and those of a memory migrated from schema 1
    before migration 23, were written)."""
    memory = Memory.open(hash_settings(data_dir).store)
    memory.warm_up()
    try:
        for i, hobby in enumerate(("jazz", "hiking")):
            fact = FactDraft("Alice", "likes", hobby, cardinality="one")
            said = f"2024-05-0{i + 1}T08:00:00Z"
            memory.remember([MemoryDraft(f"Alice likes {hobby}.", observed_at=said, fact=fact)])
    finally:
        memory.close()
    export(data_dir, path)
    header, rest = lines(path)
    rest = [line for line in rest if line["table"] != "Predicate"]
    del header["counts"]["Predicate"]
    header["schema"] = written_at
    path.write_text("".join(json.dumps(x) + "\n" for x in [header, *rest]))


@pytest.mark.parametrize("written_at", [1, 22])
def test_a_file_before_migration_23_records_its_facts_predicates_single_valued(
    tmp_path: Path, written_at: int
) -> None:
    # Imported without a cardinality, "likes" became "many" at its next use (the configured
    # default) while jazz stayed superseded by hiking, and a fact could give "many".
    likes_told_as_one(tmp_path / "a", tmp_path / "a.jsonl", written_at)
    parsed = parse_export(tmp_path / "a.jsonl")
    [first] = [r for r in parsed.objects["Observation"] if r["text"] == "Alice likes jazz."]
    [predicate] = parsed.objects["Predicate"]
    assert (predicate["name"], predicate["cardinality"]) == ("likes", "one")
    assert predicate["since"] == first["recorded_at"]
    import_file(hash_settings(tmp_path / "b").store, tmp_path / "a.jsonl")
    memory = Memory.open(hash_settings(tmp_path / "b").store)
    memory.warm_up()
    try:
        assert [(n, c) for n, c in memory.graph.predicates()] == [("likes", "one")]
        [chess] = memory.remember(
            [MemoryDraft("Alice likes chess.", fact=FactDraft("Alice", "likes", "chess"))]
        )
        assert len(chess.superseded) == 1  # hiking, as hiking superseded jazz
    finally:
        memory.close()
    # Into a memory where "likes" is "many", refused as any file's "one" is.
    mine = hash_settings(tmp_path / "mine").store
    memory = Memory.open(mine)
    memory.warm_up()
    try:
        fact = FactDraft("Bob", "likes", "tea", cardinality="many")
        memory.remember([MemoryDraft("Bob likes tea.", fact=fact)])
    finally:
        memory.close()
    said = r"line \d+ \(a fact of schema \d+, .*\): predicate 'likes' is 'one' in the file but"
    with pytest.raises(ImportRefused, match=said):
        import_file(mine, tmp_path / "a.jsonl")


def test_a_file_of_this_schema_is_read_as_it_says(tmp_path: Path) -> None:
    # Since migration 23 every predicate a fact uses is recorded: none is made up.
    likes_told_as_one(tmp_path / "a", tmp_path / "a.jsonl", latest_version())
    assert "Predicate" not in parse_export(tmp_path / "a.jsonl").objects


async def test_a_file_cut_short_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    await fill_everything(tmp_path / "a")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    text = (tmp_path / "a.jsonl").read_text().splitlines()
    (tmp_path / "cut.jsonl").write_text("\n".join(text[:30]) + "\n")  # as `head -30` cuts it
    with pytest.raises(ImportRefused, match=r"header counts \d+ objects but the file holds 29"):
        import_file(hash_settings(tmp_path / "b").store, tmp_path / "cut.jsonl")
    assert observations(tmp_path / "b") == 0


async def test_a_file_of_schema_11_has_its_records_event_times_read_again(
    tmp_path: Path,
) -> None:
    # Before migration 12 a record's fields were read as a story: "name=Yesterday" happened
    # the day before it was told. Imported, its event times are read again (none).
    settings = hash_settings(tmp_path / "a")
    async with Client(create_server(settings)) as client:
        said = "2024-05-08T12:00:00Z"
        song = await ok(
            client,
            "remember",
            record={"type": "Track", "fields": {"name": "Yesterday"}},
            observed_at=said,
        )
        note = await ok(client, "remember", text="Yesterday I fixed the roof.", observed_at=said)
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, *rest = (json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines())
    story = next(x for x in rest if x.get("id") == note["observation_id"])["event_times"]
    for line in rest:
        if line.get("id") == song["observation_id"]:
            line["event_times"] = story
    old = [header | {"schema": 11, "format": 1}, *rest]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(x) + "\n" for x in old))
    import_file(hash_settings(tmp_path / "b").store, tmp_path / "old.jsonl")
    async with Client(create_server(hash_settings(tmp_path / "b"))) as client:
        found = await ok(client, "recall", query="Yesterday", limit=5)
    happened = {r["observation_id"]: r.get("happened") for r in found["results"]}
    assert happened == {song["observation_id"]: None, note["observation_id"]: "2024-05-07"}


async def test_a_file_of_schema_19_has_its_days_read_again(tmp_path: Path) -> None:
    # Before migration 20 a fact's "from 11 June", said in May 2024 of a fact valid from
    # 11 June 2024, was the 11 June before it was said. Imported, words naming a month or
    # an ordinal day beside a digit are read again; another text keeps the times the file
    # holds.
    settings = hash_settings(tmp_path / "a")
    said = "2024-05-20T10:00:00Z"
    async with Client(create_server(settings)) as client:
        home = await ok(
            client,
            "remember",
            text="Back home in Berlin from 11 June.",
            fact={
                "subject": "user",
                "predicate": "located in",
                "object": "Berlin",
                "valid_from": "2024-06-11",
            },
            observed_at=said,
            topics=["user"],
        )
        hike = await ok(
            client, "remember", text="We hiked yesterday.", observed_at=said, topics=["user"]
        )
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, *rest = (json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines())
    for line in rest:
        if line.get("id") in (home["observation_id"], hike["observation_id"]):
            line["event_times"] = "[]"
    old = [header | {"schema": 19}, *rest]
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(x) + "\n" for x in old))
    import_file(hash_settings(tmp_path / "b").store, tmp_path / "old.jsonl")
    async with Client(create_server(hash_settings(tmp_path / "b"))) as client:
        found = await ok(client, "recall", query="", topics=["user"], limit=5)
    happened = {r["observation_id"]: r.get("happened") for r in found["results"]}
    assert happened == {home["observation_id"]: "2024-06-11", hike["observation_id"]: None}


@pytest.mark.parametrize(
    ("text", "said", "read"),
    [
        # Before migration 21 "I'm in Rome from 3 to 10 June", said in May, was in the past
        # year. (A file of schema 21 reads it again too: migration 22 reads days joined by
        # "to".)
        (
            "I'm in Rome from 3 to 10 June.",
            "2024-05-20T10:00:00Z",
            (
                (20, "2024-06-03/2024-06-10"),
                (24, "2024-06-03/2024-06-10"),
                (27, "2024-06-03/2024-06-10"),
                (28, None),
            ),
        ),
        # Before migration 22 "from Monday to Wednesday" was Wednesday alone.
        (
            "I was in Rome from Monday to Wednesday.",
            "2024-05-15T10:00:00Z",
            (
                (21, "2024-05-13/2024-05-15"),
                (22, "2024-05-13/2024-05-15"),
                (27, "2024-05-13/2024-05-15"),
                (28, "2024-05-13/2024-05-15"),
                (29, None),
            ),
        ),
        # Before migration 24 a weekday of a plan told in the present was one gone.
        # (and migration 25 reads plans in the present again, whoever they tell of).
        (
            "My flight leaves on Friday.",
            "2024-05-20T10:00:00Z",
            (
                (23, "2024-05-24"),
                (25, "2024-05-24"),
                (27, "2024-05-24"),
                (28, "2024-05-24"),
                (29, None),
            ),
        ),
        (
            "The trip is booked on 3 June.",
            "2024-05-20T10:00:00Z",
            ((23, "2024-06-03"), (25, "2024-06-03"), (27, "2024-06-03"), (28, None)),
        ),
        # Before migration 25 a plan told of a named person, or one moved, was a day gone.
        (
            "Sam is flying to Lisbon on Tuesday.",
            "2026-12-03T10:00:00Z",
            ((24, "2026-12-08"), (27, "2026-12-08"), (28, "2026-12-08"), (29, None)),
        ),
        (
            "The offsite was moved to 18 December.",
            "2026-12-03T10:00:00Z",
            ((24, "2026-12-18"), (27, "2026-12-18"), (28, None)),
        ),
        # Before migration 26 a note of an event without a verb was a day gone (and every
        # text naming a weekday, or a digit beside a day, is read again; by migration 27 every
        # text naming a month or a weekday).
        (
            "Lunch with Ana on Friday.",
            "2024-05-20T10:00:00Z",
            ((25, "2024-05-24"), (27, "2024-05-24"), (28, "2024-05-24"), (29, None)),
        ),
        # Before migration 27 a day of a month told in no past tense was the one gone.
        (
            "Maya has a check-in on 10 December.",
            "2026-12-03T10:00:00Z",
            ((26, "2026-12-10"), (27, "2026-12-10"), (28, None)),
        ),
        # Before migration 27 "several" counted nothing.
        (
            "Sam moved to Oslo several weeks ago.",
            "2026-12-03T10:00:00Z",
            ((26, "2026-10-26/2026-11-01"), (27, None)),
        ),
        # Before migration 28 how it went, then an emoji, was a plan: the Friday to come.
        (
            "Dentist on Friday: no cavities \U0001f389",
            "2026-12-06T10:00:00Z",
            ((27, "2026-12-04"), (28, "2026-12-04"), (29, None)),
        ),
        # Before migration 29 ordinal days with no month and the end of the month were no
        # time (and every text naming a weekday is read again: "by Friday", "Sam is coming
        # Thursday" were none either).
        (
            "We're in Porto from the 20th to the 23rd.",
            "2026-12-06T10:00:00Z",
            ((28, "2026-12-20/2026-12-23"), (29, None)),
        ),
        (
            "I'll finish the report by the end of the month.",
            "2026-12-06T10:00:00Z",
            ((28, "2026-12"), (29, None)),
        ),
        # ... and deadlines of a day or a month's end were dropped after "by".
        (
            "Please send it by 15 December.",
            "2026-12-06T10:00:00Z",
            # (migration 30 reads it again too: it opens with an errand's verb)
            ((28, "2026-12-06/2026-12-15"), (29, "2026-12-06/2026-12-15"), (30, None)),
        ),
        (
            "The report is due by the end of March.",
            "2026-12-06T10:00:00Z",
            ((28, "2026-12-06/2027-03-31"), (29, None)),
        ),
        # ... and a plan that slipped to a day was the day gone.
        (
            "Marketing says the launch slipped to March 17.",
            "2026-12-06T10:00:00Z",
            ((28, "2027-03-17"), (29, None)),
        ),
        # ... and "Sam's coming on 20 March" was no plan ("Sam is coming" was): the March
        # gone.
        (
            "Sam's coming on 20 March.",
            "2026-12-06T10:00:00Z",
            ((28, "2027-03-20"), (29, None)),
        ),
        # Before migration 30 a time after "until" was dropped.
        (
            "I'm in Berlin until Friday.",
            "2026-12-06T10:00:00Z",
            ((29, "2026-12-06/2026-12-11"), (30, None)),
        ),
        # ... and an errand's day was the one gone.
        (
            "Call the plumber on Monday.",
            "2026-12-06T10:00:00Z",
            ((29, "2026-12-07"), (30, None)),
        ),
        # ... and "in May last year" was this year's May.
        (
            "I went to Rome in May last year.",
            "2026-12-06T10:00:00Z",
            ((29, "2025-05"), (30, None)),
        ),
        # ... and what should be done was the day gone.
        (
            "We should ship the release on Friday.",
            "2026-12-06T10:00:00Z",
            ((29, "2026-12-11"), (30, None)),
        ),
        # Before migration 32 an errand whose verb is also a noun was no time.
        (
            "Order the cake by Friday.",
            "2026-12-06T10:00:00Z",
            ((31, "2026-12-06/2026-12-11"), (32, None)),
        ),
    ],
)
async def test_a_file_of_an_older_schema_reads_what_its_migrations_read_again(
    tmp_path: Path, text: str, said: str, read: tuple[tuple[int, str | None], ...]
) -> None:
    settings = hash_settings(tmp_path / "a")
    async with Client(create_server(settings)) as client:
        rome = await ok(client, "remember", text=text, observed_at=said, topics=["user"])
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, *rest = (json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines())
    for line in rest:
        if line.get("id") == rome["observation_id"]:
            line["event_times"] = "[]"
    for schema, happened in read:
        old = [header | {"schema": schema}, *rest]
        (tmp_path / f"{schema}.jsonl").write_text("".join(json.dumps(x) + "\n" for x in old))
        into = hash_settings(tmp_path / f"b{schema}")
        import_file(into.store, tmp_path / f"{schema}.jsonl")
        async with Client(create_server(into)) as client:
            [found] = (await ok(client, "recall", query="", topics=["user"]))["results"]
        assert found.get("happened") == happened, schema


@pytest.mark.parametrize("schema", [2, 12])
async def test_an_older_file_leaves_nothing_for_the_next_start_to_fill_in(
    tmp_path: Path, schema: int
) -> None:
    # Files before migration 13 hold records' duplicate keys read from their words (before
    # 3, no event times at all; before 10, no recall's model). Left unset for the start
    # after the import to compute and set, they were the rows Kùzu 0.11.3 garbles: the third
    # such import into one memory left every command crashing. The import computes them; a
    # record told again is found.
    settings = hash_settings(tmp_path / "a")
    track = {"type": "Track", "fields": {"name": "Yesterday", "ms": 176}}
    async with Client(create_server(settings)) as client:
        song = await ok(client, "remember", record=track, observed_at="2024-05-08T12:00:00Z")
        await ok(client, "remember", text="Yesterday I fixed the roof.")
        await ok(client, "recall", query="roof")
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, *rest = (json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines())
    for line in rest:
        if line.get("table") == "Recall" and schema < 10:
            del line["embedder"]  # which model ranked it: not known, not stamped
        if line.get("table") == "Observation":
            line["text_key"] = "read from its words by an older version"
            if schema < 3:
                del line["event_times"]
    (tmp_path / "old.jsonl").write_text(
        "".join(json.dumps(x) + "\n" for x in [header | {"schema": schema, "format": 1}, *rest])
    )
    parsed = parse_export(tmp_path / "old.jsonl")
    graph = Graph(tmp_path / "b" / "graph")
    try:
        write_import(graph, parsed)
        rows = graph.observations().to_pylist()
        assert graph.unstamped_recalls() == 0
    finally:
        graph.close()
    assert len(rows) == 2
    assert all(r["text_key"] and r["event_times"] is not None for r in rows), rows
    times = {r["text"]: json.loads(r["event_times"]) for r in rows}
    assert times["Track: name=Yesterday, ms=176"] == []
    assert [t[3] for t in times["Yesterday I fixed the roof."]] == ["Yesterday"]
    async with Client(create_server(hash_settings(tmp_path / "b"))) as client:
        again = await ok(client, "remember", record=track)
    assert again["duplicate_of"] == song["observation_id"]


async def test_an_import_into_a_memory_with_facts_writes_its_summaries_anew(
    tmp_path: Path,
) -> None:
    # The memory's summary of Alice said only Paris after jazz was imported (and an
    # entity the file brought had none): exports carried them stale.
    async with Client(create_server(hash_settings(tmp_path / "mine"))) as client:
        await ok(
            client,
            "remember",
            text="Alice lives in Paris.",
            fact={"subject": "Alice", "predicate": "lives in", "object": "Paris"},
        )
    async with Client(create_server(hash_settings(tmp_path / "other"))) as client:
        await ok(
            client,
            "remember",
            text="Alice likes jazz.",
            fact={"subject": "Alice", "predicate": "likes", "object": "jazz"},
        )
    export(tmp_path / "other", tmp_path / "other.jsonl")
    import_file(hash_settings(tmp_path / "mine").store, tmp_path / "other.jsonl")
    export(tmp_path / "mine", tmp_path / "mine.jsonl")
    _, objects = lines(tmp_path / "mine.jsonl")
    summaries = {x["topic"]: x["text"] for x in objects if x["table"] == "Summary"}
    assert summaries["Alice"].startswith("Alice: likes jazz; lives in Paris"), summaries


def test_a_newer_format_is_refused_with_what_to_do(tmp_path: Path) -> None:
    newer = {"doxa": "export", "format": FORMAT + 1, "schema": 99}
    (tmp_path / "new.jsonl").write_text(json.dumps(newer) + "\n")
    with pytest.raises(ImportRefused, match=r"newer doxa.*upgrade doxa"):
        import_file(hash_settings(tmp_path / "b").store, tmp_path / "new.jsonl")


def test_a_format_that_is_no_number_is_refused_as_such(tmp_path: Path) -> None:
    # "2" was refused as written by a newer doxa, and upgrading would not have helped.
    header = {"doxa": "export", "format": str(FORMAT), "schema": latest_version()}
    (tmp_path / "text.jsonl").write_text(json.dumps(header) + "\n")
    with pytest.raises(ImportRefused, match=f"format '{FORMAT}' is not a number") as refused:
        import_file(hash_settings(tmp_path / "b").store, tmp_path / "text.jsonl")
    assert "newer" not in str(refused.value)
    assert not (tmp_path / "b").exists()


def big_export(path: Path, n: int) -> None:
    """An export file of ``n`` observations, each believed by scout (4 n + 1 objects)."""
    at = "2024-01-01T00:00:00Z"
    objects: list[dict[str, Any]] = [{"table": "Agent", "name": "scout"}]
    for i in range(n):
        text = f"Note {i} about the harbour."
        objects.append(
            {"table": "Observation", "id": f"obs_{i}", "seq": i + 1, "text": text}
            | {"observed_at": at, "recorded_at": at, "confidence": "1", "kind": "observation"}
        )
        objects.append({"table": "Belief", "id": f"bel_{i}", "since": at, "confidence": "1"})
        objects.append({"table": "HOLDS", "from": "scout", "to": f"bel_{i}"})
        objects.append({"table": "OF", "from": f"bel_{i}", "to": f"obs_{i}"})
    header = {"doxa": "export", "format": FORMAT, "schema": latest_version(), "counts": {}}
    path.write_text("\n".join(json.dumps(x) for x in [header, *objects]) + "\n")


def test_a_large_file_imports_within_a_small_buffer_pool(tmp_path: Path) -> None:
    """Links are written by looking each end up by its key: both ends in one MATCH joined
    the two whole tables, and 10,000 beliefs filled a 1 GB pool."""
    n = 4000
    file = tmp_path / "big.jsonl"
    big_export(file, n)
    settings = hash_settings(tmp_path / "b", buffer_pool_mb=64).store
    done = import_file(settings, file)
    assert done.created == {"Agent": 1, "Observation": n, "Belief": n, "HOLDS": n, "OF": n}
    memory = Memory.open(settings)
    memory.warm_up()
    try:
        assert memory.stats()["IndexRows"] == n
        assert memory.evidence("obs_7")["believers"][0]["agent"] == "scout"
    finally:
        memory.close()


def test_a_large_file_gets_the_page_cache_its_one_transaction_needs() -> None:
    """30,000 observations with their beliefs (120,001 objects) overflowed a 64 MiB pool."""
    assert page_cache_bytes(64, 4 * 30_000 + 1) == (4 * 30_000 + 1) * 2048 > 200 << 20
    assert page_cache_bytes(256, 55_173) == 256 << 20  # bench/export.py's 10,000 notes


async def test_an_import_merging_facts_leaves_each_agent_one_value_after_the_next_start(
    tmp_path: Path,
) -> None:
    # The file's Paris (since January) beside the memory's own Rome (since June), by the
    # same agent: both stayed current, a clash of the agent with itself.
    def lives(city: str, since: str) -> dict[str, Any]:
        fact = {"subject": "Alice", "predicate": "lives in", "object": city, "valid_from": since}
        return {"text": f"Alice lives in {city}.", "fact": fact}

    async with Client(create_server(hash_settings(tmp_path / "mine"))) as client:
        rome = await ok(client, "remember", **lives("Rome", "2024-06-01T00:00:00Z"))
    async with Client(create_server(hash_settings(tmp_path / "other"))) as client:
        paris = await ok(client, "remember", **lives("Paris", "2024-01-01T00:00:00Z"))
        oslo = await ok(client, "remember", **lives("Oslo", "2024-09-01T00:00:00Z"))
    # Oslo has superseded Paris in the file; the memory's Rome falls between them.
    export(tmp_path / "other", tmp_path / "other.jsonl")
    import_file(hash_settings(tmp_path / "mine").store, tmp_path / "other.jsonl")
    async with Client(create_server(hash_settings(tmp_path / "mine"))) as client:
        now = await ok(client, "recall", query="", subject="Alice")
        july = await ok(client, "recall", query="", subject="Alice", as_of="2024-07-01")
        cited = await ok(client, "cite_evidence", id=rome["observation_id"])
        clashes = await ok(client, "find_conflicts")
    assert [r["observation_id"] for r in now["results"]] == [oslo["observation_id"]]
    assert [r["observation_id"] for r in july["results"]] == [rome["observation_id"]]
    assert cited["superseded_by"] == [oslo["observation_id"]]
    assert clashes["count"] == 0
    assert paris["observation_id"] not in {r["observation_id"] for r in now["results"]}


def test_evidence_imported_without_a_weight_still_supports(tmp_path: Path) -> None:
    # A SUPPORTS line with no weight was imported as support, then (weight 0 supporting
    # nothing) no longer counted, while cite_evidence listed it as live evidence.
    memory = Memory.open(hash_settings(tmp_path / "a").store)
    memory.warm_up()
    try:
        [lake] = memory.remember([MemoryDraft("The lake is frozen.", agent="alice")])
        memory.remember(
            [
                MemoryDraft(
                    "A ranger confirmed it.",
                    agent="carol",
                    supports=[SupportDraft(lake.belief_id, "0.5")],
                )
            ]
        )
    finally:
        memory.close()
    header = export(tmp_path / "a", tmp_path / "a.jsonl")
    _, objects = lines(tmp_path / "a.jsonl")
    for line in objects:
        if line["table"] == "SUPPORTS":
            del line["weight"]
    memory = imported_as_of(tmp_path, header["schema"], header, objects)
    try:
        assert memory.unsupported("alice")["unsupported"] == []
    finally:
        memory.close()


def test_a_record_kept_with_its_type_decomposed_is_read_as_told_now(tmp_path: Path) -> None:
    # A record remembered before types were composed ("Cafe" and a combining accent) was a
    # new record when told again with "Café" (its duplicate key was the old type's), and its
    # words, which only said the record, were shown beside it as if told apart.
    composed, combining = "Caf\u00e9", "Cafe\u0301"
    told = {"type": composed, "fields": {"name": "Green", "open": True}}
    memory = Memory.open(hash_settings(tmp_path / "a").store)
    memory.warm_up()
    try:
        [first] = memory.remember([MemoryDraft(text=None, record=told)])
    finally:
        memory.close()
    header = export(tmp_path / "a", tmp_path / "a.jsonl")
    _, objects = lines(tmp_path / "a.jsonl")
    old = Record(combining, validate_record(told).fields)
    for line in objects:  # as a memory of that time kept it
        if line["table"] == "RecordType":
            line["name"] = combining
        elif line["table"] == "IS_A":
            line["to"] = combining
        elif line["table"] == "Observation":
            line["text"], line["text_key"] = old.line(), memory_key(old.line(), old)
    memory = imported_as_of(tmp_path, header["schema"], header, objects)
    try:
        [again] = memory.remember([MemoryDraft(text=None, record=told)])
        [found] = memory.recall("Green").results
    finally:
        memory.close()
    assert again.duplicate_of == first.observation_id
    # Its words only say the record: no text of its own beside it, in recall or the listing.
    assert found.record is not None and found.record.is_in_words(found.text)
    assert found.record.type == composed
    [listed] = listing(hash_settings(tmp_path / "b"))["results"]  # doxa recall --all
    assert "text" not in listed and listed["record"]["type"] == composed


def test_a_date_time_text_kept_as_a_string_before_imports_as_kept(tmp_path: Path) -> None:
    # Date-times of 7 decimals of a second and with a space before the offset were kept as
    # strings; remember now refuses the first and reads the second as a date-time, and an
    # export holding either still imports, each as the string it was, found by where as such
    # (the spaced one by its text too, though a where reads it as a date-time now: it found
    # nothing, and a note said to give the string it was given).
    seven, spaced = "2022-05-01T10:00:00.1234567Z", "2022-05-01T10:00:00 +02:00"
    memory = Memory.open(hash_settings(tmp_path / "a").store)
    memory.warm_up()
    try:
        told = {"type": "Event", "fields": {"a": "SEVEN_HERE", "b": "SPACED_HERE"}}
        memory.remember([MemoryDraft(text=None, record=told)])
    finally:
        memory.close()
    header = export(tmp_path / "a", tmp_path / "a.jsonl")
    text = (tmp_path / "a.jsonl").read_text()
    text = text.replace("SEVEN_HERE", seven).replace("SPACED_HERE", spaced)
    objects = [json.loads(line) for line in text.splitlines()[1:]]
    memory = imported_as_of(tmp_path, header["schema"], header, objects)
    try:
        [found] = memory.recall("", where={"a": seven}).results
        by_space = memory.recall("", where={"b": spaced}).results
        dated = memory.recall("", where={"a": {">=": "2022-01-01"}}).results
    finally:
        memory.close()
    assert found.record is not None
    assert found.record.shown_fields() == {"a": seven, "b": spaced}
    assert {f.kind for f in found.record.fields} == {"string"}
    assert [r.observation_id for r in by_space] == [found.observation_id]
    assert dated == []


#: A string value in either Unicode form, and a record holding it as a memory before strings
#: were compared composed kept it: decomposed, and keyed (``FieldValue``, duplicate key) so.
ZOE, ZOE_COMBINING = "Caf\u00e9 Zo\u00eb", "Cafe\u0301 Zoe\u0308"
OLD_ZOE = {"type": "Person", "fields": {"pid": 1, "name": ZOE_COMBINING, "tags": ["Zoe\u0308"]}}


def field_value_keys(memory: Memory) -> list[str]:
    """Every ``FieldValue``'s key, and the key each ``HAS_FIELD`` links to, in the graph."""
    nodes = memory.graph.read("MATCH (f:FieldValue) RETURN f.key")
    links = memory.graph.read("MATCH ()-[:HAS_FIELD]->(f:FieldValue) RETURN f.key")
    return [*sorted(r[0] for r in nodes), "->", *sorted(r[0] for r in links)]


def remembered_as_before(data_dir: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """Remember ``OLD_ZOE`` in ``data_dir`` as a version that compared strings as given."""
    with monkeypatch.context() as patched:
        patched.setattr(records, "composed", lambda text: text)
        memory = Memory.open(hash_settings(data_dir).store)
        memory.warm_up()
        try:
            [told] = memory.remember([MemoryDraft(text=None, record=OLD_ZOE)])
            assert "name|string|" + ZOE_COMBINING in field_value_keys(memory)
        finally:
            memory.close()
    return told.observation_id


def assert_keyed_as_compared_now(memory: Memory, told: str) -> None:
    """``told`` (``OLD_ZOE``) is found, keyed and a duplicate as a record told now is."""
    [found] = memory.recall("", where={"name": ZOE}).results
    assert found.observation_id == told
    assert found.record is not None and found.record.shown_fields() == OLD_ZOE["fields"]
    assert [r.observation_id for r in memory.recall("", where={"tags": "Zo\u00eb"}).results] == [
        told
    ]
    composed = {"type": "Person", "fields": {"pid": 1, "name": ZOE, "tags": ["Zo\u00eb"]}}
    [again] = memory.remember([MemoryDraft(text=None, record=composed)])
    assert again.duplicate_of == told
    keys = ["name|string|" + ZOE, "pid|number|1", "tags|string|Zo\u00eb"]
    assert field_value_keys(memory) == [*keys, "->", *keys]  # no value left behind


def test_a_memory_keeping_string_values_decomposed_is_keyed_as_compared_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its FieldValue nodes were keyed by the decomposed form and its duplicate keys made so:
    # the record told again composed was a second record, and a where missed it.
    told = remembered_as_before(tmp_path / "a", monkeypatch)
    memory = Memory.open(hash_settings(tmp_path / "a").store)
    memory.warm_up()
    try:
        assert_keyed_as_compared_now(memory, told)
    finally:
        memory.close()
    memory = Memory.open(hash_settings(tmp_path / "a").store)  # once: nothing moves again
    memory.warm_up()
    try:
        [again] = memory.remember([MemoryDraft(text=None, record=OLD_ZOE)])
        assert again.duplicate_of == told
    finally:
        memory.close()


def test_an_export_keeping_string_values_decomposed_imports_keyed_as_compared_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    told = remembered_as_before(tmp_path / "a", monkeypatch)
    # Exported as that version did: opening the memory to export it would key it anew.
    with monkeypatch.context() as patched:
        patched.setattr(records, "composed", lambda text: text)
        header = export(tmp_path / "a", tmp_path / "a.jsonl")
    _, objects = lines(tmp_path / "a.jsonl")
    assert any(o.get("key") == "name|string|" + ZOE_COMBINING for o in objects)
    memory = imported_as_of(tmp_path, header["schema"], header, objects)
    try:
        assert_keyed_as_compared_now(memory, told)
    finally:
        memory.close()


def test_a_record_type_kept_with_runs_of_whitespace_is_read_as_told_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A type kept before its words' whitespace was made one space ("Widget  Pro") was another
    # type than "Widget Pro": where missed it, and the record told again was a second one.
    told = {"type": "Widget  Pro", "fields": {"sku": 7}}
    with monkeypatch.context() as patched:
        patched.setattr(records, "type_name", lambda given: unicodedata.normalize("NFC", given))
        memory = Memory.open(hash_settings(tmp_path / "a").store)
        memory.warm_up()
        try:
            [first] = memory.remember([MemoryDraft(text=None, record=told)])
            [kept] = memory.graph.read("MATCH (t:RecordType) RETURN t.name")
            assert kept == ["Widget  Pro"]
        finally:
            memory.close()
    header = export(tmp_path / "a", tmp_path / "a.jsonl")
    _, objects = lines(tmp_path / "a.jsonl")
    for data_dir, opened in ((tmp_path / "a", None), (tmp_path / "b", objects)):
        memory = (
            Memory.open(hash_settings(data_dir).store)
            if opened is None
            else imported_as_of(tmp_path, header["schema"], header, opened)
        )
        try:
            memory.warm_up()
            [found] = memory.recall("", where={"@type": "Widget Pro"}).results
            [again] = memory.remember(
                [MemoryDraft(text=None, record={"type": "Widget Pro", "fields": {"sku": 7}})]
            )
        finally:
            memory.close()
        assert found.observation_id == first.observation_id
        assert found.record is not None and found.record.type == "Widget Pro"
        assert again.duplicate_of == first.observation_id


@pytest.mark.parametrize("schema", [30, 31])
def test_a_file_before_migration_31_has_its_summaries_written_anew(
    tmp_path: Path, schema: int
) -> None:
    # Its "the user" and "User" were two entities, each summarised with half the facts
    # (as migration 31 finds a memory's own): imported, every summary is written anew.
    memory = Memory.open(hash_settings(tmp_path / "a").store)
    memory.warm_up()
    try:
        memory.remember(
            [
                MemoryDraft("The user likes tea.", fact=FactDraft("the user", "likes", "tea")),
                MemoryDraft("User works at Acme.", fact=FactDraft("User", "works at", "Acme")),
            ]
        )
        assert memory.settle(timeout=10)
    finally:
        memory.close()
    export(tmp_path / "a", tmp_path / "a.jsonl")
    header, rest = lines(tmp_path / "a.jsonl")
    [summary] = [line for line in rest if line["table"] == "Summary"]
    summary["text"] = "the user: likes tea (1 fact, 1 agent)"
    rest.append({**summary, "topic": "User", "text": "User: works at Acme (1 fact, 1 agent)"})
    header["counts"]["Summary"] += 1
    header["schema"] = schema
    (tmp_path / "old.jsonl").write_text("".join(json.dumps(x) + "\n" for x in [header, *rest]))
    into = hash_settings(tmp_path / "b")
    import_file(into.store, tmp_path / "old.jsonl")
    memory = Memory.open(into.store)
    memory.warm_up()
    try:
        assert memory.settle(timeout=10)
        written = memory.graph.topic_summaries(["the user", "User"])
    finally:
        memory.close()
    texts = {topic: text for topic, (text, _) in written.items()}
    if schema == 31:  # a file of this version is taken as it is
        assert texts == {
            "the user": "the user: likes tea (1 fact, 1 agent)",
            "User": "User: works at Acme (1 fact, 1 agent)",
        }
    else:
        assert texts == {"the user": "the user: likes tea; works at Acme (2 facts, 1 agent)"}


def _holdings(memory: Memory, plan: str, known: dict[str, str | None]) -> dict[str, Any]:
    """What each agent (and the memory as a whole) holds of Sam before and after January
    2030, as known now and at each record time in ``known``; what ``about`` says; who
    believes the plan and who withdrew from it."""
    seen: dict[str, Any] = {}
    for agent in ("scout", "driver", None):
        for as_of in ("2029-06-01", "2030-06-01"):
            for name, at in known.items():
                found = memory.recall("", subject="Sam", agent=agent, as_of=as_of, known_at=at)
                current = sorted(r.text for r in found.results if r.current)
                seen[f"recall {agent} {as_of} {name}"] = current
                if agent is None:
                    about = memory.about("Sam", as_of=as_of, known_at=at)
                    seen[f"about {as_of} {name}"] = (about["facts"], about.get("conflicts"))
    cited = memory.evidence(plan)
    seen["believers"] = sorted(b["agent"] for b in cited["believers"])
    seen["withdrawn"] = sorted((w["agent"], w.get("held_until")) for w in cited["withdrawn"])
    return seen


@pytest.mark.parametrize("together", [False, True])
def test_a_plan_one_of_two_agents_called_off_reads_the_same_imported(
    tmp_path: Path, together: bool
) -> None:
    """scout has Sam in Berlin; scout and driver tell his move to Munich from January 2030;
    scout calls it off (told one by one, or in one call). The import of an export reads as
    the memory did, for each agent, before and after January 2030, at record times before
    and after the cancellation: scout keeps Berlin, driver the plan. After the next start
    too, and a backup's copy; and forgetting the cancellation in the imported memory gives
    scout the plan back, as it does in the memory exported, after a restart too. (The
    cancellation is matched to scout's withdrawn belief by the time it was recorded: the
    file must keep both times exactly.)"""
    source, into = hash_settings(tmp_path / "a"), hash_settings(tmp_path / "b")

    october, december = "2026-10-05T09:00:00Z", "2026-12-03T09:00:00Z"

    def draft(text: str, obj: str, agent: str = "scout", **times: str) -> MemoryDraft:
        when = december if "valid_until" in times else october
        fact = FactDraft("Sam", "lives in", obj, **times)
        return MemoryDraft(text=text, agent=agent, observed_at=when, fact=fact)

    drafts = [
        draft("Sam lives in Berlin.", "Berlin"),
        draft("Sam moves to Munich.", "Munich", valid_from="2030-01-10"),
        draft("Sam moves to Munich.", "Munich", agent="driver", valid_from="2030-01-10"),
        draft("Sam's move to Munich is off.", "Munich", valid_until=december),
    ]
    memory = Memory.open(source.store)
    memory.warm_up()
    try:
        known: dict[str, str | None] = {"now": None}
        if together:
            done = memory.remember(drafts)
        else:
            done = [memory.remember([d])[0] for d in drafts[:3]]
            known["before"] = iso(utc_now())
            done += memory.remember(drafts[3:])
        known["after"] = iso(utc_now())
        plan, off = done[1].observation_id, done[3].observation_id
        told = _holdings(memory, plan, known)
        memory.export(str(tmp_path / "a.jsonl"))
        memory.backup(str(tmp_path / "copy"))
    finally:
        memory.close()
    assert told["recall scout 2030-06-01 now"] == ["Sam lives in Berlin."]
    assert told["recall driver 2030-06-01 now"] == ["Sam moves to Munich."]
    assert told["believers"] == ["driver"]
    if not together:
        assert told["recall scout 2030-06-01 before"] == ["Sam moves to Munich."]
    import_file(into.store, tmp_path / "a.jsonl")
    copy = hash_settings(tmp_path / "copy")
    for settings, restarted in ((into, False), (into, True), (copy, False)):
        memory = Memory.open(settings.store)
        memory.warm_up()
        try:
            assert _holdings(memory, plan, known) == told, (settings is copy, restarted)
        finally:
            memory.close()
    forgotten: dict[tuple[str, bool], dict[str, Any]] = {}
    for name, settings in (("source", source), ("imported", into)):
        for restarted in (False, True):
            memory = Memory.open(settings.store)
            memory.warm_up()
            try:
                if not restarted:
                    memory.forget(off, agent="scout")
                forgotten[name, restarted] = _holdings(memory, plan, known)
            finally:
                memory.close()
    back = forgotten["source", False]
    assert all(seen == back for seen in forgotten.values())
    assert back["recall scout 2030-06-01 now"] == ["Sam moves to Munich."]
    assert back["recall scout 2029-06-01 now"] == ["Sam lives in Berlin."]
    assert back["believers"] == ["driver", "scout"]
