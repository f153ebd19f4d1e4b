"""The graph's schema: checksummed migrations, and a store written by another schema refused."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import kuzu
import numpy as np
import pytest
from conftest import OtherEmbedder, hash_settings
from mcp.client import Client

from doxa.server.app import create_server
from doxa.server.settings import Settings
from doxa.store import FactDraft, InvalidInput, Memory, MemoryDraft, SchemaMismatch
from doxa.store.drafts import text_key
from doxa.store.embedder import HashEmbedder
from doxa.store.event_time import event_times, shown, stored
from doxa.store.graph import Graph, query_vector_text
from doxa.store.health import check
from doxa.store.index import SearchIndex
from doxa.store.schema import (
    BY_DAY,
    DAYS_NAMED,
    END_OF_THE_MONTH,
    EXPECTED,
    MIGRATION_TABLE,
    MIGRATIONS,
    ORDINAL_DAY,
    SLIPPED,
    WEEKDAY,
    Migration,
    compare,
)
from doxa.store.values import parse_time


def graph_dir(settings: Settings) -> Path:
    return Path(settings.store.data_dir) / "graph"


def rows(
    connection: kuzu.Connection, query: str, params: dict[str, Any] | None = None
) -> list[Any]:
    result = connection.execute(query, params or {})
    assert isinstance(result, kuzu.QueryResult)
    found = []
    while result.has_next():
        found.append(result.get_next())
    return found


def graph_rows(settings: Settings, query: str) -> list[Any]:
    """What ``query`` reads from the graph (the memory must be closed)."""
    database = kuzu.Database(str(graph_dir(settings)))
    connection = kuzu.Connection(database)
    try:
        return rows(connection, query)
    finally:
        connection.close()
        database.close()


def tamper(settings: Settings, *statements: str) -> None:
    """Change the graph behind doxa's back (the memory must be closed)."""
    database = kuzu.Database(str(graph_dir(settings)))
    connection = kuzu.Connection(database)
    try:
        for statement in statements:
            connection.execute(statement)
    finally:
        connection.close()
        database.close()


def open_memory(settings: Settings) -> Memory:
    memory = Memory.open(settings.store)
    try:
        memory.warm_up()
    except BaseException:
        memory.close()
        raise
    return memory


@pytest.fixture
def created(settings: Settings) -> Iterator[Settings]:
    """A data directory that a memory created and closed, holding one observation."""
    memory = open_memory(settings)
    memory.remember([MemoryDraft(text="Kept across schema checks.")])
    memory.close()
    yield settings


# ---- migrations -------------------------------------------------------------------------------


def test_migrations_on_an_empty_store_yield_exactly_the_expected_schema(tmp_path: Path) -> None:
    graph = Graph(tmp_path / "graph")
    try:
        live = graph.live_schema()
    finally:
        graph.close()
    assert live == EXPECTED
    assert compare(live) == []


def test_the_fixtures_new_memory_is_the_one_a_first_start_makes(
    memory: Memory, tmp_path: Path
) -> None:
    # The ``memory`` and ``client`` fixtures serve a copy of one new store made per test
    # process (conftest ``new_store``): it must be what a store migrated anew is.
    first = open_memory(hash_settings(tmp_path / "first"))
    try:
        assert memory.graph.live_schema() == first.graph.live_schema() == EXPECTED
        assert memory.graph.applied_migrations().keys() == first.graph.applied_migrations().keys()
        assert [v[:2] for v in memory.graph.applied_migrations().values()] == [
            v[:2] for v in first.graph.applied_migrations().values()
        ]
        assert memory.stats() == first.stats()
        assert memory.embedder.fingerprint == first.embedder.fingerprint
    finally:
        first.close()


def test_applied_migrations_are_recorded_with_their_checksums(created: Settings) -> None:
    database = kuzu.Database(str(graph_dir(created)))
    connection = kuzu.Connection(database)
    try:
        history = rows(
            connection,
            f"MATCH (m:{MIGRATION_TABLE}) RETURN m.version, m.name, m.checksum, m.applied_at"
            " ORDER BY m.version",
        )
    finally:
        connection.close()
        database.close()
    assert [(v, n, c) for v, n, c, _ in history] == [
        (m.version, m.name, m.checksum) for m in MIGRATIONS
    ]
    assert all(applied is not None for *_, applied in history)


def test_reopening_a_store_applies_nothing_again(created: Settings) -> None:
    memory = open_memory(created)
    try:
        found = memory.recall("Kept across schema checks.")
        live = memory.graph.live_schema()
    finally:
        memory.close()
    assert [r.text for r in found.results] == ["Kept across schema checks."]
    assert live == EXPECTED
    database = kuzu.Database(str(graph_dir(created)))
    connection = kuzu.Connection(database)
    try:
        [[count]] = rows(connection, f"MATCH (m:{MIGRATION_TABLE}) RETURN count(m)")
    finally:
        connection.close()
        database.close()
    assert count == len(MIGRATIONS)


def test_a_start_of_a_store_with_nothing_to_apply_reads_its_schema_once(
    created: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A table's columns are a query each: read three times on each of a start's two
    # openings, the schema was ~100 ms of every start (and of every test's memory).
    readings: list[str] = []
    live_schema = Graph.live_schema

    def counted(graph: Graph) -> dict[str, dict[str, str]]:
        readings.append("read")
        return live_schema(graph)

    monkeypatch.setattr(Graph, "live_schema", counted)
    memory = open_memory(created)
    try:
        assert readings == ["read"]
        assert [r.text for r in memory.recall("Kept across schema checks.").results] == [
            "Kept across schema checks."
        ]
    finally:
        memory.close()


def test_a_schema_a_migration_leaves_wrong_is_still_refused_at_once(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Read again after migrating (a new store here): what the migrations made is compared,
    # not the empty schema read before them.
    monkeypatch.setattr("doxa.store.graph.schema.compare", lambda live: [f"{len(live)} tables"])
    with pytest.raises(SchemaMismatch, match=f"{len(EXPECTED)} tables"):
        Graph(Path(settings.store.data_dir) / "graph")


def test_a_migration_checksum_covers_its_statements() -> None:
    one = Migration(1, "m", ("CREATE NODE TABLE A(x INT64, PRIMARY KEY(x))",))
    same = Migration(1, "m", ("  CREATE NODE TABLE A(x INT64, PRIMARY KEY(x))\n",))
    other = Migration(1, "m", ("CREATE NODE TABLE A(y INT64, PRIMARY KEY(y))",))
    assert one.checksum == same.checksum
    assert one.checksum != other.checksum
    assert len(one.checksum) == 64
    assert [m.version for m in MIGRATIONS] == sorted({m.version for m in MIGRATIONS})


def test_compare_names_every_difference() -> None:
    live = {table: dict(columns) for table, columns in EXPECTED.items()}
    del live["Episode"]
    del live["Agent"]["name"]
    live["Belief"]["since"] = "STRING"
    live["Topic"]["colour"] = "STRING"
    live["Stranger"] = {"id": "STRING"}
    assert compare(live) == [
        "table 'Agent' has no column 'name'",
        "table 'Topic' has an unknown column 'colour'",
        "table 'Episode' is missing",
        "column Belief.since is STRING, expected TIMESTAMP",
        "unknown table 'Stranger'",
    ]


# ---- refusing a store written by another schema -----------------------------------------------


def test_a_store_whose_migration_was_altered_is_refused(created: Settings) -> None:
    tamper(created, f"MATCH (m:{MIGRATION_TABLE} {{version: 1}}) SET m.checksum = 'f00d'")
    with pytest.raises(SchemaMismatch) as caught:
        open_memory(created)
    name = MIGRATIONS[0].name
    assert caught.value.issues == [f"migration 1 ({name!r}) was altered after it was applied"]
    message = str(caught.value)
    assert message.startswith("the memory store's schema does not match this version of doxa: ")
    # The way out that works: the version that wrote it exports, this one imports.
    assert (
        "Export it with the doxa version that wrote it (doxa export FILE) and import the file"
        " with this one into a new directory (doxa import FILE --data-dir NEW)" in message
    )


# The statement migration 20 had when first committed (400cd2b), before it was narrowed,
# migration 27's before texts saying "several" were read again, and migration 29's before
# texts saying "by 15 December" or "by the end of March" were, before a plan that slipped was,
# before the offset told in was kept, and before "Sam's coming" was read as "Sam is coming":
# stores those versions migrated recorded their checksums.
EARLIER_STATEMENTS: dict[int, list[tuple[str, ...]]] = {
    20: [
        (
            "MATCH (o:Observation) WHERE o.kind = 'fact' OR regexp_matches(o.text, '[0-9]')"
            " SET o.event_times = NULL",
        )
    ],
    27: [
        (
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){DAYS_NAMED}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        )
    ],
    29: [
        (
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){ORDINAL_DAY}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '(?i){END_OF_THE_MONTH}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
        (
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){ORDINAL_DAY}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '(?i){END_OF_THE_MONTH}')"
            f" OR regexp_matches(o.text, '(?i){BY_DAY}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
        (
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){ORDINAL_DAY}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '(?i){END_OF_THE_MONTH}')"
            f" OR regexp_matches(o.text, '(?i){BY_DAY}')"
            f" OR regexp_matches(o.text, '(?i){SLIPPED}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
        ),
        (
            f"MATCH (o:Observation) WHERE regexp_matches(o.text, '(?i){ORDINAL_DAY}')"
            f" OR regexp_matches(o.text, '(?i){WEEKDAY}')"
            f" OR regexp_matches(o.text, '(?i){END_OF_THE_MONTH}')"
            f" OR regexp_matches(o.text, '(?i){BY_DAY}')"
            f" OR regexp_matches(o.text, '(?i){SLIPPED}')"
            " SET o.event_times = NULL".replace("\\", "\\\\"),
            "ALTER TABLE Observation ADD IF NOT EXISTS told_offset INT16",
        ),
    ],
}


def test_the_earlier_checksums_a_migration_accepts_are_of_its_earlier_statements() -> None:
    for migration in MIGRATIONS:
        earlier = EARLIER_STATEMENTS.get(migration.version)
        if earlier is None:
            assert migration.earlier == ()
            continue
        assert migration.statements not in earlier
        assert migration.earlier == tuple(Migration(0, "", e).checksum for e in earlier)


@pytest.mark.parametrize(
    ("version", "which"),
    [(v, i) for v, earlier in sorted(EARLIER_STATEMENTS.items()) for i in range(len(earlier))],
)
def test_a_store_migrated_by_an_earlier_statement_opens_and_is_migrated_again(
    settings: Settings, version: int, which: int
) -> None:
    # A store an earlier doxa migrated with the migration's earlier statement: it opens,
    # the migration runs again (the texts it chooses are read again by this version) and
    # its record carries this checksum, so the next start runs nothing.
    said = "2024-05-15T10:00:00Z"  # a Wednesday
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("My dentist appointment is on Tuesday 21 May.", observed_at=said),
            MemoryDraft("Ran `make` yesterday.", observed_at=said),
            MemoryDraft("We hiked yesterday.", observed_at=said),
            MemoryDraft("We moved here several weeks ago.", observed_at=said),
        ]
    )
    memory.close()
    ids = [m.observation_id for m in done]
    [migration] = [m for m in MIGRATIONS if m.version == version]
    earlier = Migration(version, migration.name, EARLIER_STATEMENTS[version][which]).checksum
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: {version}}}) SET m.checksum = '{earlier}'",
    )
    memory = open_memory(settings)
    try:
        happened = [[shown(t) for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()
    read_again = {
        20: [["2024-05-21"], [], [], []],
        27: [["2024-05-21"], [], [], ["2024-04-08/2024-04-14"]],
        29: [["2024-05-21"], [], [], []],
    }
    assert happened == read_again[version]
    history = graph_rows(
        settings, f"MATCH (m:{MIGRATION_TABLE}) RETURN m.version, m.name, m.checksum"
    )
    assert sorted(history) == [[m.version, m.name, m.checksum] for m in MIGRATIONS]
    tamper(settings, "MATCH (o:Observation) SET o.event_times = '[]'")
    memory = open_memory(settings)  # nothing runs again
    try:
        assert all(memory.evidence(i)["event_times"] == () for i in ids)
    finally:
        memory.close()


def test_a_store_with_an_unknown_newer_migration_is_refused(created: Settings) -> None:
    tamper(
        created,
        f"CREATE (:{MIGRATION_TABLE} {{version: 99, name: 'from the future', checksum: 'abc'}})",
    )
    with pytest.raises(SchemaMismatch) as caught:
        open_memory(created)
    latest = MIGRATIONS[-1].version
    assert caught.value.issues == [
        "migration 99 ('from the future') was applied by a newer doxa"
        f" (this one knows up to {latest})"
    ]
    # check called such a directory healthy, though no command opens it.
    [problem] = check(created.store).problems
    assert problem == str(caught.value)


def test_check_names_a_newer_schema_whose_tables_it_cannot_count(created: Settings) -> None:
    # A newer doxa renamed a table check counts: check failed, "run `doxa check`".
    tamper(
        created,
        f"CREATE (:{MIGRATION_TABLE} {{version: 99, name: 'recalls apart', checksum: 'abc'}})",
        "ALTER TABLE Recall RENAME TO RecallSeen",
    )
    found = check(created.store)
    [problem] = found.problems
    assert "migration 99 ('recalls apart') was applied by a newer doxa" in problem
    assert not found.healthy


def test_a_new_store_says_it_is_created_once_and_an_older_one_each_migration(
    settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    # A new memory logged a line for each of its 27 migrations.
    with caplog.at_level(logging.INFO, logger="doxa.store"):
        open_memory(settings).close()
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
        latest = MIGRATIONS[-1].version
        assert f"creating a new memory store (schema migrations 1-{latest})" in said
        assert not [m for m in said if m.startswith("applying schema migration")]
        caplog.clear()
        tamper(settings, f"MATCH (m:{MIGRATION_TABLE} {{version: {latest}}}) DELETE m")
        open_memory(settings).close()
        said = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
        assert [m for m in said if m.startswith("applying schema migration")] == [
            f"applying schema migration {latest}: {MIGRATIONS[-1].name}"
        ]


def test_check_counts_the_migrations_the_next_start_applies(created: Settings) -> None:
    tamper(created, f"MATCH (m:{MIGRATION_TABLE}) WHERE m.version >= 22 DELETE m")
    found = check(created.store)
    assert found.healthy and found.graph["migrations_pending"] == len(MIGRATIONS) - 21
    open_memory(created).close()
    assert check(created.store).graph["migrations_pending"] == 0


def test_a_store_with_a_changed_table_is_refused(created: Settings) -> None:
    tamper(created, "ALTER TABLE Agent ADD nickname STRING")
    with pytest.raises(SchemaMismatch) as caught:
        open_memory(created)
    assert caught.value.issues == ["table 'Agent' has an unknown column 'nickname'"]


def test_a_directory_that_is_not_a_doxa_store_is_refused(settings: Settings) -> None:
    graph_dir(settings).parent.mkdir(parents=True, exist_ok=True)
    tamper(settings, "CREATE NODE TABLE Person(name STRING, PRIMARY KEY(name))")
    with pytest.raises(SchemaMismatch) as caught:
        open_memory(settings)
    assert caught.value.issues == [
        f"no {MIGRATION_TABLE} table: this directory is not a doxa store"
    ]


def test_a_refused_store_is_released_and_opens_once_repaired(
    created: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    tamper(created, f"MATCH (m:{MIGRATION_TABLE} {{version: 1}}) SET m.checksum = 'f00d'")
    with pytest.raises(SchemaMismatch), caplog.at_level(logging.ERROR, logger="doxa.store"):
        open_memory(created)
    # Said in one line, what is wrong and what to do: no traceback of an expected refusal.
    [said] = [r for r in caplog.records if "warm-up failed" in r.getMessage()]
    assert said.exc_info is None and "was altered after it was applied" in said.getMessage()
    tamper(
        created,
        f"MATCH (m:{MIGRATION_TABLE} {{version: 1}}) SET m.checksum = '{MIGRATIONS[0].checksum}'",
    )
    memory = open_memory(created)
    try:
        found = memory.recall("Kept across schema checks.")
    finally:
        memory.close()
    assert [r.text for r in found.results] == ["Kept across schema checks."]


@pytest.mark.anyio
async def test_tools_report_a_refused_store_as_a_tool_error(created: Settings) -> None:
    tamper(created, f"MATCH (m:{MIGRATION_TABLE} {{version: 1}}) SET m.checksum = 'f00d'")
    with anyio.fail_after(30):
        async with Client(create_server(created)) as client:
            tools = await client.list_tools()
            result = await client.call_tool("recall", {"query": "anything"})
    assert {t.name for t in tools.tools} >= {"remember", "recall"}
    assert result.is_error is True
    text = result.content[0].text
    assert "the memory store's schema does not match this version of doxa" in text
    assert "was altered after it was applied" in text


# ---- migrating a store written by an earlier version ------------------------------------------

# The tables later migrations add (2: Predicate; 5: records).
V1_ONLY = {"Predicate", "RecordType", "FieldValue", "IS_A", "HAS_FIELD", "CoActivation"}
V1_DROPPED = {
    "Belief": {"confidence", "retracted_at"},
    "Observation": {"stated_until", "event_times"},
    "Recall": {"features", "query_embedding", "query_embedder", "embedder"},
}


def before_14() -> dict[str, dict[str, str]]:
    """The schema migration 13 left: judged queries' vectors on the recall, entities'
    summaries on their topic."""
    return {t: dict(columns) for t, columns in before_15().items() if t != "JudgedQuery"}


def before_15() -> dict[str, dict[str, str]]:
    """The schema migration 14 left: entities' summaries on their topic."""
    return {table: dict(columns) for table, columns in before_16().items() if table != "Summary"}


def before_16() -> dict[str, dict[str, str]]:
    """The schema migration 15 left: supersessions without their record time."""
    found = before_17()
    del found["SUPERSEDES"]["known"]
    return found


def before_17() -> dict[str, dict[str, str]]:
    """The schema migration 16 left: supersessions no forget could undo."""
    found = before_18()
    del found["SUPERSEDES"]["dropped"]
    return found


def before_18() -> dict[str, dict[str, str]]:
    """The schema migration 17 left: beliefs withdrawn without the time they held until."""
    found = before_19()
    del found["Belief"]["held_until"]
    return found


def before_19() -> dict[str, dict[str, str]]:
    """The schema migration 18 left: beliefs held until a later fact, never forgotten."""
    found = before_29()
    del found["Belief"]["forgotten_at"]
    return found


def before_29() -> dict[str, dict[str, str]]:
    """The schema migration 28 left: observations without the offset they were told in."""
    found = {table: dict(columns) for table, columns in EXPECTED.items()}
    del found["Observation"]["told_offset"]
    return found


def create_v1_store(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    """An empty store as doxa left it at migration 1."""
    from doxa.store import schema

    v1 = {
        table: {c: t for c, t in columns.items() if c not in V1_DROPPED.get(table, set())}
        for table, columns in before_14().items()
        if table not in V1_ONLY
    }
    v1["CO_ACTIVATED"] = {"count": "INT64"}  # pairs are nodes since migration 7
    with monkeypatch.context() as patched:
        patched.setattr(schema, "MIGRATIONS", MIGRATIONS[:1])
        patched.setattr(schema, "EXPECTED", v1)
        graph = Graph(graph_dir(settings))
        graph.close()


def v1_fact(i: int, text: str, predicate: str, obj: str, until: str = "NULL") -> str:
    """Cypher creating scout's fact ``obs_<i>`` about Alice, told on 2024-05-0<i>, as
    schema 1 held it."""
    return (
        f"MATCH (a:Agent {{name: 'scout'}}) CREATE (a)-[:HOLDS]->(:Belief {{id: 'bel_{i}',"
        f" since: timestamp('2024-05-0{i} 08:00:00')}})-[:`OF`]->(:Observation {{id: 'obs_{i}',"
        f" seq: {i}, text: '{text}', text_key: 'k{i}',"
        f" observed_at: timestamp('2024-05-0{i} 08:00:00'),"
        f" recorded_at: timestamp('2024-05-0{i} 08:00:00'),"
        f" confidence: CAST('0.{i}' AS DECIMAL(19, 18)), kind: 'fact', subject: 'Alice',"
        f" predicate: '{predicate}', object: '{obj}',"
        f" valid_from: timestamp('2024-05-0{i} 08:00:00'), valid_until: {until},"
        " hits: 0, impressions: 0})"
    )


def test_a_store_written_at_migration_1_is_migrated_with_its_data(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    create_v1_store(settings, monkeypatch)
    tamper(
        settings,
        "CREATE (:Agent {name: 'scout'})",
        v1_fact(
            1, "Alice lives in Paris.", "lives in", "Paris", "timestamp('2024-05-02 08:00:00')"
        ),
        v1_fact(2, "Alice lives in Berlin.", "lives in", "Berlin"),
        v1_fact(
            3,
            "Alice went on leave yesterday.",
            "status",
            "on leave",
            "timestamp('2024-06-01 00:00:00')",
        ),
        "MATCH (n:Observation {id: 'obs_2'}), (o:Observation {id: 'obs_1'})"
        " CREATE (n)-[:SUPERSEDES {at: timestamp('2024-05-02 08:00:00')}]->(o)",
    )
    memory = open_memory(settings)
    try:
        assert memory.graph.live_schema() == EXPECTED
        paris, berlin, leave = (memory.evidence(f"obs_{i}") for i in (1, 2, 3))
        assert [str(b["confidence"]) for b in paris["believers"]] == ["0.100000000000000000"]
        assert paris["stated_until"] is None  # ended by its superseder, not stated
        assert leave["stated_until"] is not None  # stated when it was remembered
        assert paris["superseded_by"] == ["obs_2"] and berlin["cardinality"] == "one"
        # Event times are read at the first start for what was stored before (migration 3),
        # and kept in the graph: none is left unread.
        [yesterday] = leave["event_times"]
        assert (yesterday.start.isoformat(), yesterday.phrase) == (
            "2024-05-02T00:00:00+00:00",
            "yesterday",
        )
        assert paris["event_times"] == ()
        unread = memory.graph._rows(
            "MATCH (o:Observation) WHERE o.event_times IS NULL RETURN count(o)"
        )
        assert unread == [[0]]
        # New facts in the old predicate's spelling continue its history.
        [done] = memory.remember(
            [
                MemoryDraft(
                    text="Alice moved to Rome.",
                    agent="scout",
                    observed_at="2024-07-01T08:00:00Z",
                    fact=FactDraft("Alice", "Lives In", "Rome"),
                )
            ]
        )
        assert done.superseded == ["obs_2"]
        texts = [r.text for r in memory.recall("Alice").results]
        assert "Alice moved to Rome." in texts and "Alice lives in Paris." not in texts
    finally:
        memory.close()


def test_predicates_used_before_migration_2_are_recorded_single_valued(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Schema 1 had no Predicate table and every predicate was "one": "likes hiking" ended
    # "likes jazz". Migration 23 records such predicates "one" (named as remember names
    # them, since their first fact), so "likes" does not become "many" (the configured
    # default) at its next use, and a fact giving "many" is refused.
    create_v1_store(settings, monkeypatch)
    tamper(
        settings,
        "CREATE (:Agent {name: 'scout'})",
        v1_fact(1, "Alice likes jazz.", "likes", "jazz", "timestamp('2024-05-02 08:00:00')"),
        v1_fact(2, "Alice likes hiking.", "likes", "hiking"),
        v1_fact(3, "Alice lives in Paris.", "Lives In", "Paris"),
        "MATCH (n:Observation {id: 'obs_2'}), (o:Observation {id: 'obs_1'})"
        " CREATE (n)-[:SUPERSEDES {at: timestamp('2024-05-02 08:00:00')}]->(o)",
    )
    memory = open_memory(settings)
    try:
        assert memory.evidence("obs_2")["cardinality"] == "one"
        with pytest.raises(InvalidInput, match="the predicate 'lives_in' is 'one'"):
            memory.remember(
                [
                    MemoryDraft(
                        "Alice lives in Rome too.",
                        agent="scout",
                        fact=FactDraft("Alice", "lives in", "Rome", cardinality="many"),
                    )
                ]
            )
        [chess] = memory.remember(
            [
                MemoryDraft(
                    "Alice likes chess.", agent="scout", fact=FactDraft("Alice", "likes", "chess")
                )
            ]
        )
        assert chess.superseded == ["obs_2"]  # as hiking superseded jazz
    finally:
        memory.close()
    recorded = graph_rows(
        settings, "MATCH (p:Predicate) RETURN p.name, p.cardinality, p.since ORDER BY p.name"
    )
    assert recorded == [
        ["likes", "one", datetime(2024, 5, 1, 8)],
        ["lives_in", "one", datetime(2024, 5, 3, 8)],
    ]


def test_migration_23_keeps_the_cardinality_a_predicate_has(settings: Settings) -> None:
    # Only a predicate facts use that has no Predicate node is recorded: one that has (in
    # any spelling) keeps its own.
    memory = open_memory(settings)
    memory.remember(
        [
            MemoryDraft("Alice knows Bob.", fact=FactDraft("Alice", "knows", "Bob")),
            MemoryDraft("Alice is a cook.", fact=FactDraft("Alice", "works as", "cook")),
        ]
    )
    memory.close()
    tamper(
        settings,
        "MATCH (p:Predicate {name: 'works_as'}) DELETE p",
        "MATCH (p:Predicate {name: 'knows'}) DELETE p",
        "CREATE (:Predicate {name: 'Knows', cardinality: 'many'})",  # as an earlier doxa named it
        f"MATCH (m:{MIGRATION_TABLE} {{version: 23}}) DELETE m",
    )
    memory = open_memory(settings)
    memory.close()
    recorded = graph_rows(
        settings, "MATCH (p:Predicate) RETURN p.name, p.cardinality ORDER BY p.name"
    )
    assert recorded == [["Knows", "many"], ["works_as", "one"]]


def test_event_times_read_by_an_earlier_version_are_read_again(settings: Settings) -> None:
    # A store at migration 10 whose reading of "Last Fri" found nothing: migration 11 has
    # every observation's words read again at the next start.
    memory = open_memory(settings)
    memory.remember(
        [
            MemoryDraft(
                text="Last Fri I took my kids to a pottery workshop.",
                observed_at="2023-07-15T10:00:00Z",
            )
        ]
    )
    memory.close()
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 11}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        [found] = memory.recall("pottery workshop").results
        [friday] = memory.evidence(found.observation_id)["event_times"]
        assert (friday.start.isoformat(), friday.phrase) == (
            "2023-07-14T00:00:00+00:00",
            "Last Fri",
        )
    finally:
        memory.close()
    assert graph_rows(settings, "MATCH (o:Observation) RETURN o.event_times")[0][0] != "[]"


def test_a_records_fields_read_as_a_story_by_an_earlier_version_are_read_again(
    settings: Settings,
) -> None:
    # A store at migration 11, which read "name=Yesterday" as the day before: migration 12
    # clears records' event times, and start-up reads only a text given with the record.
    said = "2024-05-08T12:00:00Z"
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft(
                None, record={"type": "Track", "fields": {"name": "Yesterday"}}, observed_at=said
            ),
            MemoryDraft(
                "Yesterday the order shipped.",
                record={"type": "Order", "fields": {"id": 17}},
                observed_at=said,
            ),
            MemoryDraft("Yesterday I fixed the roof.", observed_at=said),
        ]
    )
    memory.close()
    story = stored(event_times("Yesterday", parse_time(said, "said")))
    tamper(
        settings,
        f"MATCH (o:Observation) SET o.event_times = '{story}'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 12}}) DELETE m",
    )
    ids = [m.observation_id for m in done]
    memory = open_memory(settings)
    try:
        happened = [[t.phrase for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()
    assert happened == [[], ["Yesterday"], ["Yesterday"]]
    kept = dict(graph_rows(settings, "MATCH (o:Observation) RETURN o.id, o.event_times"))
    assert [kept[i] for i in ids] == ["[]", story, story]


def test_days_an_earlier_version_read_in_the_past_year_are_read_again(
    settings: Settings,
) -> None:
    # A store at migration 19, which read "Tuesday 14 May" (said on 6 May 2024) as 14 May
    # 2023, "from 3 to 10 June" as 10 June, and a fact's "from 11 June" as the 11 June
    # before it was said: migration 20 has the words that name a month or an ordinal day
    # beside a digit read again; the others keep what they hold (read again, a time said
    # west of UTC would move a day: only the UTC offset is kept).
    said = "2024-05-20T10:00:00Z"
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft(
                "My dentist appointment is on Tuesday 14 May.", observed_at="2024-05-06T09:00:00Z"
            ),
            MemoryDraft("I'll be in Rome from 3 to 10 June.", observed_at=said),
            MemoryDraft(
                "Back home in Berlin from 11 June.",
                observed_at=said,
                fact=FactDraft("user", "located in", "Berlin", valid_from="2024-06-11"),
            ),
            MemoryDraft("We hiked yesterday.", observed_at=said),
            MemoryDraft("Build 42 failed yesterday.", observed_at="2024-05-20T23:30:00-08:00"),
        ]
    )
    memory.close()
    ids = [m.observation_id for m in done]
    happened = _event_times_read_again(settings, 20, ids)
    assert happened == [["2024-05-14"], ["2024-06-03/2024-06-10"], ["2024-06-11"], [], []]
    kept = dict(graph_rows(settings, "MATCH (o:Observation) RETURN o.id, o.event_times"))
    assert kept[ids[3]] == kept[ids[4]] == "[]" and all(kept[i] != "[]" for i in ids[:3])


def test_being_somewhere_told_in_the_present_is_read_again_as_a_plan(
    settings: Settings,
) -> None:
    # A store at migration 20 read "I'm in Rome from 3 to 10 June", said in May, in the past
    # year; migration 21 reads such words beside a day named again, and no others.
    said = "2024-05-20T10:00:00Z"
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("I'm in Rome from 3 to 10 June.", observed_at=said),
            MemoryDraft("We hiked on 3 June.", observed_at=said),
        ]
    )
    memory.close()
    happened = _event_times_read_again(settings, 21, [m.observation_id for m in done])
    assert happened == [["2024-06-03/2024-06-10"], []]


def test_ranges_with_no_from_and_of_weekdays_are_read_again_as_spans(
    settings: Settings,
) -> None:
    # A store at migration 21 read "28 May to 3 June" as 3 June alone, "from Monday to
    # Wednesday" as Wednesday, and code as words; migration 22 reads texts joining such days
    # again, and those holding code, no others.
    said = "2024-05-15T10:00:00Z"  # a Wednesday
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("We stayed in Lisbon 28 May to 3 June.", observed_at=said),
            MemoryDraft("I was in Rome from Monday to Wednesday.", observed_at=said),
            MemoryDraft("Ran `make` yesterday.", observed_at=said),
            MemoryDraft("We hiked yesterday.", observed_at=said),
            # A dash, "to" and "dec" in a word: no range, so left as read.
            MemoryDraft("Decided on gpt-4 yesterday, to be sure.", observed_at=said),
        ]
    )
    memory.close()
    happened = _event_times_read_again(settings, 22, [m.observation_id for m in done])
    assert happened == [
        ["2023-05-28/2023-06-03"],
        ["2024-05-13/2024-05-15"],
        ["2024-05-14"],
        [],
        [],
    ]


def test_weekdays_of_plans_told_in_the_present_are_read_again_as_days_to_come(
    settings: Settings,
) -> None:
    # A store at migration 23 read "my flight leaves on Friday", said on a Monday, as the
    # Friday gone; migration 24 reads a weekday beside such words again, and no others.
    said = "2024-05-20T10:00:00Z"  # a Monday
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("My flight leaves on Friday.", observed_at=said),
            MemoryDraft("I'm in Rome from Wednesday to Friday.", observed_at=said),
            MemoryDraft("The trip is booked on 3 June.", observed_at=said),
            MemoryDraft("We hiked on Friday.", observed_at=said),
        ]
    )
    memory.close()
    happened = _event_times_read_again(settings, 24, [m.observation_id for m in done])
    assert happened == [["2024-05-24"], ["2024-05-22/2024-05-24"], ["2024-06-03"], []]


def test_plans_told_of_anyone_and_plans_moved_are_read_again_as_days_to_come(
    settings: Settings,
) -> None:
    # A store at migration 24 read "Sam is flying to Lisbon on Tuesday" and "the offsite was
    # moved to 18 December", said on Thursday 3 December, as days gone; migration 25 reads a
    # weekday or a day beside such words again, and no others.
    said = "2026-12-03T10:00:00Z"
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("Sam is flying to Lisbon on Tuesday.", observed_at=said),
            MemoryDraft("The user is in Rome from 10 to 14 December.", observed_at=said),
            MemoryDraft("The team offsite was moved to 18 December.", observed_at=said),
            MemoryDraft("Sam was in Lisbon on Tuesday.", observed_at=said),
            MemoryDraft("Sam turns 40 on 9 December.", observed_at=said),
            MemoryDraft("The deadline is 15 December.", observed_at=said),
            MemoryDraft("Sam went to Lisbon.", observed_at=said),
            MemoryDraft("Dinner is 7pm on Saturday.", observed_at=said),
            MemoryDraft("The plumber comes on Saturday.", observed_at=said),
        ]
    )
    memory.close()
    happened = _event_times_read_again(settings, 25, [m.observation_id for m in done])
    assert happened == [
        ["2026-12-08"],
        ["2026-12-10/2026-12-14"],
        ["2026-12-18"],
        [],
        ["2026-12-09"],
        ["2026-12-15"],
        [],
        ["2026-12-05"],
        ["2026-12-05"],
    ]


def test_plans_in_the_present_progressive_and_notes_of_events_are_read_again(
    settings: Settings,
) -> None:
    # A store at migration 25 read "the user is meeting Ana on 9 December", said on Thursday
    # 3 December, as a year back, and "Lunch with Ana on Friday" as the Friday gone;
    # migration 26 reads every text naming a weekday, or a digit beside a day, again.
    said = "2026-12-03T10:00:00Z"
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("The user is meeting Ana on 9 December.", observed_at=said),
            MemoryDraft("Lunch with Ana on Friday.", observed_at=said),
            MemoryDraft("Remind the user to call mum on Sunday.", observed_at=said),
            MemoryDraft("The release is planned for 15 December.", observed_at=said),
            MemoryDraft("Lunch with Ana was great.", observed_at=said),
            MemoryDraft("The standup was moved from Tuesday to Friday.", observed_at=said),
        ]
    )
    memory.close()
    happened = _event_times_read_again(settings, 26, [m.observation_id for m in done])
    assert happened == [
        ["2026-12-09"],
        ["2026-12-04"],
        ["2026-12-06"],
        ["2026-12-15"],
        [],
        ["2026-12-04"],
    ]


def test_days_of_a_month_told_in_no_past_tense_and_after_short_forms_are_read_again(
    settings: Settings,
) -> None:
    # A store at migration 26 read "Maya has a check-in on 10 December", said on Thursday 3
    # December, as a year back, "with Dr. Kim on Monday" as the Monday gone and "on Tuesday
    # mornings" as one Tuesday, "Dentist on Monday: no cavities!" as the Monday to come, and
    # "several weeks ago" as no time; migration 27 reads every text naming a month or a
    # weekday, or saying "several".
    said = "2026-12-03T10:00:00Z"
    memory = open_memory(settings)
    done = memory.remember(
        [
            MemoryDraft("Maya has a check-in with her manager on 10 December.", observed_at=said),
            MemoryDraft("Maya has an appointment with Dr. Kim on Monday.", observed_at=said),
            MemoryDraft("Maya runs on Tuesday mornings.", observed_at=said),
            MemoryDraft("Maya went to Paris on 10 December.", observed_at=said),
            MemoryDraft("Sam flies to Osaka tomorrow.", observed_at=said),
            MemoryDraft("Sam moved to Oslo several weeks ago.", observed_at=said),
            MemoryDraft("Dentist on Monday: no cavities!", observed_at=said),
        ]
    )
    memory.close()
    happened = _event_times_read_again(settings, 27, [m.observation_id for m in done])
    assert happened == [
        ["2026-12-10"],
        ["2026-12-07"],
        [],
        ["2025-12-10"],
        [],
        ["2026-10-26/2026-11-01"],
        ["2026-11-30"],
    ]


def test_a_day_read_inside_a_name_is_read_again_as_none(settings: Settings) -> None:
    # A store at migration 25 read "GPT-4o-2024-08-06" as 6 August 2024: migration 26 reads
    # the texts holding an ISO 8601 day again.
    memory = open_memory(settings)
    [done] = memory.remember([MemoryDraft("GPT-4o-2024-08-06 scores 88.7% on MMLU.")])
    memory.close()
    stale = '[["2024-08-06T00:00:00Z", "2024-08-07T00:00:00Z", "day", "2024-08-06"]]'
    tamper(
        settings,
        f"MATCH (o:Observation) SET o.event_times = '{stale}'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 26}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        assert not memory.evidence(done.observation_id)["event_times"]
    finally:
        memory.close()


def _event_times_read_again(settings: Settings, version: int, ids: list[str]) -> list[list[str]]:
    """The event times of ``ids`` once a store that has none and lacks migration ``version``
    opens (the migration's own choice of texts reads theirs again)."""
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: {version}}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        return [[shown(t) for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()


def test_records_keys_read_from_their_words_by_an_earlier_version_are_computed_again(
    settings: Settings,
) -> None:
    # A store at migration 12, whose record keys came from the record in words, where 176
    # and "176" are alike: migration 13 clears them and start-up computes them once.
    memory = open_memory(settings)
    [first] = memory.remember([MemoryDraft(None, record={"type": "P", "fields": {"code": 176}})])
    memory.close()
    worded = text_key("P: code=176\nP: code=176")  # the key as the earlier version made it
    tamper(
        settings,
        f"MATCH (o:Observation) SET o.text_key = '{worded}'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 13}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        [text] = memory.remember(
            [MemoryDraft(None, record={"type": "P", "fields": {"code": "176"}})]
        )
        [again] = memory.remember(
            [MemoryDraft(None, record={"type": "P", "fields": {"code": 176}})]
        )
    finally:
        memory.close()
    assert text.duplicate_of is None and again.duplicate_of == first.observation_id
    kept = dict(graph_rows(settings, "MATCH (o:Observation) RETURN o.id, o.text_key"))
    assert kept[first.observation_id] not in (worded, None)


def create_store_at(
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    version: int,
    expected: dict[str, dict[str, str]],
) -> None:
    """A store as doxa left it after migration ``version``, whose schema is ``expected``."""
    from doxa.store import schema

    with monkeypatch.context() as patched:
        patched.setattr(schema, "MIGRATIONS", MIGRATIONS[:version])
        patched.setattr(schema, "EXPECTED", expected)
        graph = Graph(graph_dir(settings))
        graph.close()


def harbour_note(i: int) -> str:
    """Cypher creating observation ``obs_<i>``, a judged note, with every column of schema 6."""
    return (
        f"CREATE (:Observation {{id: 'obs_{i}', seq: {i}, text: 'Harbour note {i}',"
        f" text_key: 'k{i}', observed_at: timestamp('2024-05-01 08:00:00'),"
        " recorded_at: timestamp('2024-05-01 08:00:00'), confidence: CAST('0.5' AS"
        " DECIMAL(19, 18)), kind: 'note', valid_from: timestamp('2024-05-01 08:00:00'),"
        " hits: 1, impressions: 1, event_times: '[]'})"
    )


def test_features_kept_on_returned_links_move_to_their_recall(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before migration 6 what the ranker saw was text on each RETURNED edge; the soak showed
    # that filling Kùzu's page cache at a checkpoint. It moves to the recall, and stays a
    # training example.
    v5 = {table: columns for table, columns in before_14().items() if table != "CoActivation"}
    v5["CO_ACTIVATED"] = {"count": "INT64"}
    for column in ("features", "query_embedding", "query_embedder", "embedder"):
        del v5["Recall"][column]
    v5["RETURNED"]["features"] = "STRING"
    create_store_at(settings, monkeypatch, 5, v5)
    tamper(
        settings,
        harbour_note(1),
        "CREATE (:Recall {id: 'rec_1', query: 'harbour', at: timestamp('2024-05-02 08:00:00'),"
        " judged_at: timestamp('2024-05-02 08:00:00'),"
        f" query_vector: [{', '.join(['0.05'] * 384)}]}})",
        "MATCH (r:Recall {id: 'rec_1'}), (o:Observation {id: 'obs_1'})"
        " CREATE (r)-[:RETURNED {rank: 1, score: 0.9, judgement: 'accepted',"
        " features: '{\"vector\": 0.7}'}]->(o)",
    )
    memory = open_memory(settings)
    try:
        assert memory.graph.live_schema() == EXPECTED
        [judged] = memory.graph.judged_results()
        assert (judged["result_id"], judged["judgement"]) == ("obs_1", "accepted")
        assert judged["features"] == '{"vector": 0.7}'
    finally:
        memory.close()


def test_co_activated_links_become_counted_pairs(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before migration 7 a pair accepted together was a CO_ACTIVATED edge whose count was
    # updated in place; a soak left that table's two directions disagreeing inside Kùzu and
    # every later feedback on it failed. The counts move to nodes, largest count kept where
    # the damaged side listed a pair twice.
    v6 = {table: columns for table, columns in before_14().items() if table != "CoActivation"}
    v6["CO_ACTIVATED"] = {"count": "INT64"}
    for column in ("query_embedding", "query_embedder", "embedder"):
        del v6["Recall"][column]
    create_store_at(settings, monkeypatch, 6, v6)
    tamper(
        settings,
        *(harbour_note(i) for i in (1, 2, 3)),
        *(
            f"MATCH (a:Observation {{id: '{a}'}}), (b:Observation {{id: '{b}'}})"
            f" CREATE (a)-[:CO_ACTIVATED {{count: {n}}}]->(b)"
            for a, b, n in (("obs_1", "obs_2", 3), ("obs_1", "obs_2", 5), ("obs_2", "obs_3", 1))
        ),
    )
    memory = open_memory(settings)
    try:
        assert memory.graph.live_schema() == EXPECTED
        assert sorted(memory.graph.co_activations()) == [
            ("obs_1", "obs_2", 5),
            ("obs_2", "obs_3", 1),
        ]
        row = memory._wm.row_of
        assert memory._wm.co_activated[row["obs_2"]] == {row["obs_1"]: 5, row["obs_3"]: 1}
        # Counting goes on on the node, and a purge takes the observation's pairs with it.
        with memory.graph.write("test") as w:
            w.co_activate([("obs_1", "obs_2"), ("obs_1", "obs_3")])
        assert sorted(memory.graph.co_activations()) == [
            ("obs_1", "obs_2", 6),
            ("obs_1", "obs_3", 1),
            ("obs_2", "obs_3", 1),
        ]
        with memory.graph.write("test") as w:
            w.purge("obs_2")
        assert memory.graph.co_activations() == [("obs_1", "obs_3", 1)]
    finally:
        memory.close()


def test_judged_queries_kept_before_migration_14_are_embedded_again(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # Until migration 14 a judged query's vector was set on its recall, where Kùzu 0.11.3
    # garbled it (another recall's vector, text 193 vectors long; before migration 8 a
    # FLOAT[] list read back as zeros). None is trusted: each is embedded again from the
    # recall's words, kept apart, and teaches feedback again.
    v13 = before_14()
    create_store_at(settings, monkeypatch, 13, v13)
    embedder = HashEmbedder()
    crane, lines = embedder.embed(["harbour crane", "mooring lines"])
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")  # judgements decay
    tamper(
        settings,
        *(harbour_note(i) for i in (1, 2)),
        # rec_1 holds rec_2's vector, as the garbling left them; rec_2 a lost list.
        f"CREATE (:Recall {{id: 'rec_1', query: 'harbour crane', at: timestamp('{now}'),"
        f" judged_at: timestamp('{now}'), query_embedding: '{query_vector_text(lines)}',"
        f" query_embedder: '{embedder.fingerprint}'}})",
        f"CREATE (:Recall {{id: 'rec_2', query: 'mooring lines', at: timestamp('{now}'),"
        f" judged_at: timestamp('{now}'), query_vector: [{', '.join(['0.0'] * 384)}]}})",
        *(
            f"MATCH (r:Recall {{id: '{rid}'}}), (o:Observation {{id: '{obs}'}})"
            " CREATE (r)-[:RETURNED {rank: 0, score: 0.9, judgement: 'accepted'}]->(o)"
            for rid, obs in (("rec_1", "obs_1"), ("rec_2", "obs_2"))
        ),
    )
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        memory = open_memory(settings)
    try:
        assert memory.graph.live_schema() == EXPECTED
        vectors = {rid: (vector, by) for rid, vector, by, *_ in memory.graph.judgements()}
        found = memory.recall("mooring lines", limit=2)
    finally:
        memory.close()
    assert "2 judged queries embedded again" in caplog.text
    assert np.array_equal(vectors["rec_1"][0], crane)
    assert np.array_equal(vectors["rec_2"][0], lines)
    assert {by for _, by in vectors.values()} == {embedder.fingerprint}
    assert found.results[0].observation_id == "obs_2"
    assert found.results[0].scores.get("feedback", 0) > 0
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="doxa.store.startup"):
        open_memory(settings).close()  # kept: nothing to embed again
    assert "embedded again" not in caplog.text


def test_entity_summaries_are_written_anew_apart_from_their_topics(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Until migration 15 a summary was set on its Topic node again and again, where Kùzu
    # 0.11.3 could garble it (migration 14): the start after the migration writes each anew.
    create_store_at(settings, monkeypatch, 14, before_15())
    tamper(
        settings,
        harbour_note(1),
        "MATCH (o:Observation {id: 'obs_1'}) SET o.subject = 'Alice', o.predicate = 'likes',"
        " o.object = 'jazz', o.kind = 'fact'",
        "CREATE (:Topic {name: 'Alice', kind: 'entity', summary: 'Bob: likes tea (garbled)',"
        " summary_at: timestamp('2024-05-01 08:00:00')})",
    )
    memory = open_memory(settings)
    try:
        assert memory.graph.live_schema() == EXPECTED
        assert memory.settle(timeout=10)
        written = memory.graph.topic_summaries(["Alice"])
        exported = memory.export(str(settings.store.data_dir / "out.jsonl"))
    finally:
        memory.close()
    assert written["Alice"][0] == "Alice: likes jazz (1 fact, 0 agents)"  # held by none
    assert exported["counts"]["Summary"] == 1


@pytest.mark.parametrize("model", ["same", "changed"])
def test_recalls_recorded_before_migration_10_say_which_embedder_ranked_them(
    settings: Settings, monkeypatch: pytest.MonkeyPatch, model: str
) -> None:
    # The ranker learns only from recalls of the embedder it ranks with. One recorded before
    # was ranked by the embedder that built the index: this one's, unless the model changed.
    v9 = before_14()
    del v9["Recall"]["embedder"]
    create_store_at(settings, monkeypatch, 9, v9)
    SearchIndex(settings.store.data_dir / "index", 384, HashEmbedder().fingerprint)
    tamper(
        settings,
        harbour_note(1),
        "CREATE (:Recall {id: 'rec_1', query: 'harbour', at: timestamp('2024-05-02 08:00:00'),"
        " judged_at: timestamp('2024-05-02 08:00:00'), features: ['0 {\"vector\": 0.7}']})",
        "MATCH (r:Recall {id: 'rec_1'}), (o:Observation {id: 'obs_1'})"
        " CREATE (r)-[:RETURNED {rank: 0, score: 0.9, judgement: 'accepted'}]->(o)",
    )
    embedder = HashEmbedder() if model == "same" else OtherEmbedder()
    memory = Memory.open(settings.store, embedder=embedder)
    try:
        memory.warm_up()
        assert memory.graph.live_schema() == EXPECTED
        assert memory.graph.unstamped_recalls() == 0
        examples = memory.graph.training_examples(10, embedder.fingerprint)
        memory.recall("harbour")
    finally:
        memory.close()
    assert [r for r, _, _ in examples] == (["rec_1"] if model == "same" else [])
    [[stamped]] = graph_rows(settings, "MATCH (r:Recall {id: 'rec_1'}) RETURN r.embedder")
    assert stamped == ("hash-v1:384" if model == "same" else "")
    [[recorded]] = graph_rows(settings, "MATCH (r:Recall) WHERE r.id <> 'rec_1' RETURN r.embedder")
    assert recorded == embedder.fingerprint


def test_migration_28_reads_again_the_texts_naming_a_day(settings: Settings) -> None:
    # Before it, how a day went followed by an emoji was a plan (and the day of a month,
    # told in no past tense, is the nearer one): Kùzu's own regex picks the texts.
    said = "2026-12-06T10:00:00Z"  # a Sunday
    texts = [
        "Dentist on Friday: no cavities \U0001f389",
        "Checkup on Friday \u2014 all clear \U0001f389",
        "Maya has a check-in on 10 December.",
        "No cavities: great news",
    ]
    memory = open_memory(settings)
    done = memory.remember([MemoryDraft(t, observed_at=said) for t in texts])
    memory.close()
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 28}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        ids = [m.observation_id for m in done]
        happened = [[shown(t) for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()
    assert happened == [["2026-12-04"], ["2026-12-04"], ["2026-12-10"], []]


def test_migration_29_reads_again_ordinal_days_weekdays_and_the_end_of_the_month(
    settings: Settings,
) -> None:
    # Before it, ordinal days with no month, "by the end of the month", a deadline "by
    # Friday", "by 15 December" or "by the end of March" and a weekday someone is coming
    # were no time: Kùzu's own regex picks the texts.
    said = "2026-12-06T10:00:00Z"  # a Sunday
    texts = [
        "We're in Porto from the 20th to the 23rd.",
        "I'll finish the report by the end of the month.",
        "The essay is due by Friday.",
        "Sam is coming Thursday.",
        "No cavities: great news",
        "Please send it by 15 December.",
        "The report is due by the end of March.",
        "We're in Porto from the 28th to the 3rd.",
        "Marketing says the launch slipped to March 17.",
        "Sam's coming on 20 March.",
    ]
    memory = open_memory(settings)
    done = memory.remember([MemoryDraft(t, observed_at=said) for t in texts])
    memory.close()
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 29}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        ids = [m.observation_id for m in done]
        happened = [[shown(t) for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()
    assert happened == [
        ["2026-12-20/2026-12-23"],
        ["2026-12"],
        ["2026-12-06/2026-12-11"],
        ["2026-12-10"],
        [],
        ["2026-12-06/2026-12-15"],
        ["2026-12-06/2027-03-31"],
        ["2026-12-28/2027-01-03"],
        ["2027-03-17"],
        ["2027-03-20"],
    ]
    # Run again, it keeps the offsets the texts were told in (``Z``: 0).
    offsets = graph_rows(settings, "MATCH (o:Observation) RETURN o.told_offset")
    assert offsets == [[0]] * len(texts)


def test_migration_30_reads_again_until_a_time_to_come(settings: Settings) -> None:
    # Before it, a time after "until" was dropped, "extended to June" was no time and "in May
    # last year" was this year's May: Kùzu's own regex picks the texts.
    said = "2026-12-06T10:00:00Z"  # a Sunday
    texts = [
        "I'm in Berlin until Friday.",
        "The call is postponed till 15 December.",
        "Her contract was extended to June.",
        "I lived in Paris until March.",
        "We hiked on Friday.",
        "I went to Rome in May last year.",
        "Groceries done. Call the plumber on Monday.",
        "TODO: pay the rent on the 20th.",
        "We should ship the release on Friday.",
    ]
    memory = open_memory(settings)
    done = memory.remember([MemoryDraft(t, observed_at=said) for t in texts])
    memory.close()
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 30}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        ids = [m.observation_id for m in done]
        happened = [[shown(t) for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()
    # The last text says none of the words: left as it was.
    assert happened == [
        ["2026-12-06/2026-12-11"],
        ["2026-12-15"],
        ["2026-12-06/2027-06-30"],
        [],
        [],
        ["2025-05"],
        ["2026-12-07"],
        ["2026-12-20"],
        ["2026-12-11"],
    ]


def test_migration_31_writes_anew_the_summaries_of_names_told_with_and_without_an_article(
    settings: Settings,
) -> None:
    # Before it, "the user" and "User" were two entities, each summarised with half its
    # facts: the start after the migration writes every summary anew, of one entity.
    memory = open_memory(settings)
    memory.remember(
        [
            MemoryDraft(
                "The user likes tea.", agent="a", fact=FactDraft("the user", "likes", "tea")
            ),
            MemoryDraft(
                "User works at Acme.", agent="a", fact=FactDraft("User", "works at", "Acme")
            ),
        ]
    )
    assert memory.settle(timeout=10)
    memory.close()
    tamper(
        settings,
        "MATCH (s:Summary) DELETE s",
        "CREATE (:Summary {topic: 'the user', text: 'the user: likes tea (1 fact, 1 agent)',"
        " at: timestamp('2024-05-01 08:00:00')})",
        "CREATE (:Summary {topic: 'User', text: 'User: works at Acme (1 fact, 1 agent)',"
        " at: timestamp('2024-05-01 08:00:00')})",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 31}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        assert memory.settle(timeout=10)
        written = memory.graph.topic_summaries(["the user", "User"])
    finally:
        memory.close()
    # One entity, its summary on the node of the name it was first told by.
    assert written == {
        "the user": (
            "the user: likes tea; works at Acme (2 facts, 1 agent)",
            written["the user"][1],
        )
    }


def test_migration_32_reads_again_errands_whose_verb_is_also_a_noun(settings: Settings) -> None:
    # Before it, "Order the cake by Friday" was no time and "Fix the sink on Monday" the
    # Monday gone: Kùzu's own regex picks the texts.
    said = "2026-12-06T10:00:00Z"  # a Sunday
    texts = [
        "Order the cake by Friday.",
        "Milk bought. Fix the sink on Monday.",
        "Please book a table at Casa Nova on Friday.",
        "Book club on Friday.",
    ]
    memory = open_memory(settings)
    done = memory.remember([MemoryDraft(t, observed_at=said) for t in texts])
    memory.close()
    tamper(
        settings,
        "MATCH (o:Observation) SET o.event_times = '[]'",
        f"MATCH (m:{MIGRATION_TABLE} {{version: 32}}) DELETE m",
    )
    memory = open_memory(settings)
    try:
        ids = [m.observation_id for m in done]
        happened = [[shown(t) for t in memory.evidence(i)["event_times"]] for i in ids]
    finally:
        memory.close()
    # The last opens with no errand: left as it was.
    assert happened == [["2026-12-06/2026-12-11"], ["2026-12-07"], ["2026-12-11"], []]
