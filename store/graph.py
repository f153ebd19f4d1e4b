"""The typed graph in Kùzu: the memory's source of truth. All Cypher lives in this module.

One ``Database`` per data directory per process (two on one path lose writes). Reads run on
their own connection and may run concurrently; writes go through ``Graph.write()``, which takes
a lock *before* ``BEGIN TRANSACTION`` because Kùzu fails a second writer at once instead of
waiting, and a failed BEGIN leaves the connection unusable. Every value from outside is a query
parameter; nothing the user typed is ever spliced into query text.

Kùzu keeps the pages that a committed update changed in its buffer pool until the next
checkpoint, and its own checkpoint waits for the write-ahead log to reach 16 MB: a loop of
feedback (which updates counters) filled a 256 MB pool after about 500 calls and then crashed
the process. A checkpoint costs tens to hundreds of milliseconds (relationship tables are
rewritten), so a background thread calls ``checkpoint_if_due`` after every
``checkpoint_every`` write transactions or when writes pause, and a write checkpoints itself
only if four times as many have piled up (the thread is stuck). Kùzu 0.11.3 also keeps about
a quarter of a megabyte of native memory per checkpoint for as long as the database is open (a
Kùzu-only loop: +22 KB a loop with a checkpoint every 13 loops, +5 KB every 52, flat with none;
it is not the page cache, which was 32 MB): so after every ``reopen_every`` checkpoints the
database is closed and opened again, with reads and writes held off for that moment, which
gives it all back.

The page cache must hold what a checkpoint rewrites, which grows with the memory (a checkpoint
found 64 MB full at about 5,700 feedback loops, 24 MB at 900): each opening sizes it to the
graph file when that is larger than ``buffer_pool_bytes``, and when Kùzu still finds it full
the database is reopened with twice the cache (up to ``buffer_pool_max_bytes``), with a
warning; a checkpoint or read that met the full cache is then run again. Only at the ceiling
are writes refused. A database error is raised as
``StorageError`` naming the operation, and the writing connection is replaced, because Kùzu
may leave a connection unusable after a failure.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any, ClassVar, TypeVar

import kuzu
import numpy as np
import numpy.typing as npt
import pyarrow as pa

from doxa.store import native_memory, schema
from doxa.store.errors import (
    DamagedStore,
    MemoryInUse,
    MemoryStoreError,
    NotPermitted,
    SchemaMismatch,
    StorageError,
)
from doxa.store.readers_writer import ReadersWriterLock
from doxa.store.records import Record, RecordField, value_node
from doxa.store.values import from_naive_utc, to_naive_utc, utc_now

log = logging.getLogger(__name__)
#: Observation columns a migration may clear for start-up to compute again (``refill``).
REFILLED = ("event_times", "text_key")

Row = dict[str, Any]
T = TypeVar("T")

_DEC = "DECIMAL(19, 18)"


def wal_file(database: Path) -> Path:
    """Kùzu's write-ahead log of the database file ``database`` (absent after a clean close)."""
    return database.with_name(database.name + ".wal")


#: How an operating system refuses a file this user may not write.
_DENIED = ("Permission denied", "Operation not permitted", "Read-only file system")

#: What to do when the graph's write-ahead log cannot be replayed.
SET_ASIDE_REMEDY = (
    "Restore the data directory from a backup, or run `doxa repair --set-aside-log`: it moves"
    " the log aside and opens the graph as of its last checkpoint; the writes the log held are"
    " lost, and the texts of the observations among them are saved beside it"
)

#: Opens a graph in a child process (``log_crashes``): argv[1] the database file, argv[2]
#: the page cache in bytes, argv[3] "ro" for read-only.
_PROBE = (
    "import sys, kuzu\n"
    "kuzu.Database(sys.argv[1], buffer_pool_size=int(sys.argv[2]), read_only=sys.argv[3] == 'ro')\n"
)
#: Kùzu's refusal of a log whose checkpoint was cut short after writing its shadow pages:
#: those are replayed only by an opening for writing.
_SHADOW_PAGES = "shadow pages under read-only mode"


#: The signals of a process that crashed (not one stopped from outside, as by the kernel's
#: out-of-memory killer or a Ctrl-C).
_CRASHES = frozenset({signal.SIGSEGV, signal.SIGBUS, signal.SIGABRT, signal.SIGILL, signal.SIGFPE})


def opens(database: Path, buffer_pool_bytes: int) -> int | str | None:
    """Open ``database`` read-only in a child process, replaying its write-ahead log: None
    when it opens, Kùzu's error when it refuses, or the signal when Kùzu crashes (a log or
    a file Kùzu 0.11.3 cannot read can kill the process that opens it, which no exception
    reports). A log whose shadow pages only an opening for writing replays is replayed so
    on a copy, leaving the memory as it was (``doxa check`` called such a graph unreadable,
    and ``repair --set-aside-log`` set a log aside that the next start would replay).

    Raises:
        MemoryStoreError: the child was stopped from outside (killed, not crashed): try again.
    """
    found = _probe(database, buffer_pool_bytes, read_only=True)
    if not (isinstance(found, str) and needs_writing_to_replay(found)):
        return found
    with tempfile.TemporaryDirectory(prefix="doxa-replay-") as scratch:
        replayed = replay_on_copy(database, buffer_pool_bytes, Path(scratch))
    return found if replayed == _NO_ROOM else replayed


def needs_writing_to_replay(error: str) -> bool:
    """Whether Kùzu's refusal to open a graph read-only is a log only an opening for writing
    replays (a checkpoint cut short after writing its shadow pages)."""
    return _SHADOW_PAGES in error


#: ``replay_on_copy``'s answer when the copy could not be made.
_NO_ROOM = "no room to copy the graph"


def replay_on_copy(database: Path, buffer_pool_bytes: int, into: Path) -> int | str | None:
    """Copy ``database`` with its log and shadow pages into the directory ``into`` and open
    the copy for writing in a child process, replaying them there: ``opens``' answer for the
    copy (a copy that cannot be made, ``_NO_ROOM``, with a warning)."""
    try:
        for path in (database, wal_file(database), shadow_file(database)):
            if path.exists():
                shutil.copy2(path, into / path.name)
    except OSError as error:
        log.warning("could not copy the graph to replay its log on the copy (%s)", error)
        return _NO_ROOM
    return _probe(into / database.name, buffer_pool_bytes, read_only=False)


def shadow_file(database: Path) -> Path:
    """Kùzu's shadow pages of the database file ``database`` (during a checkpoint)."""
    return database.with_name(database.name + ".shadow")


def _probe(database: Path, buffer_pool_bytes: int, read_only: bool) -> int | str | None:
    """``opens`` in one mode."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            _PROBE,
            str(database),
            str(buffer_pool_bytes),
            "ro" if read_only else "rw",
        ],
        capture_output=True,
        check=False,
    )
    if done.returncode < 0:
        if -done.returncode in _CRASHES:
            return -done.returncode
        raise MemoryStoreError(
            f"opening the memory's graph in {database.parent} was stopped from outside"
            f" (signal {-done.returncode}), perhaps for memory; try again"
        )
    if done.returncode:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    return None


def has_log(database: Path) -> bool:
    """Whether ``database`` has a write-ahead log holding anything (a process stopped
    before its checkpoint; a clean close leaves none)."""
    try:
        return wal_file(database).stat().st_size > 0
    except FileNotFoundError:
        return False


def log_crashes(database: Path, buffer_pool_bytes: int, always: bool = False) -> int | None:
    """The signal that crashed a child process opening ``database`` read-only (``opens``),
    or None when it did not crash. Tried only when ``has_log``, or ``always``. Read-only
    only: a refusal is no crash, so a log only an opening for writing replays is not replayed
    on a copy here (every start after such a kill copied the whole graph first)."""
    if not always and not has_log(database):
        return None
    found = _probe(database, buffer_pool_bytes, read_only=True)
    return found if isinstance(found, int) else None


def recall_features(kept: Sequence[str] | None) -> dict[int, str]:
    """A recall's ``features`` ("<rank> <features JSON>" per result) by rank."""
    found: dict[int, str] = {}
    for item in kept or ():
        rank, _, features = item.partition(" ")
        if rank.lstrip("-").isdigit() and features:
            found[int(rank)] = features
    return found


#: Counts the results feedback accepted or rejected; a judged recall's other results are ""
#: (shown only).
JUDGED_RESULTS = (
    "MATCH ()-[r:RETURNED]->() WHERE r.judgement IN ['accepted', 'rejected'] RETURN count(r)"
)


def query_vector_text(vector: npt.NDArray[np.float32]) -> str:
    """A query vector as stored (``JudgedQuery.vector``): its float32 bytes (little-endian)
    in base64. Text, not a FLOAT[] list: Kùzu 0.11.3 lost such lists written after a
    checkpoint (migration 8)."""
    raw = np.ascontiguousarray(vector, dtype="<f4").tobytes()
    return base64.b64encode(raw).decode("ascii")


def query_vector_of(text: str) -> npt.NDArray[np.float32]:
    """The vector ``query_vector_text`` stored; empty for text that is not one, which
    start-up then embeds again from the recall's query."""
    try:
        raw = base64.b64decode(text, validate=True)
        return np.frombuffer(raw, dtype="<f4").astype(np.float32)
    except ValueError:  # binascii.Error is one; so is a length that is no float32 count
        return np.zeros(0, dtype=np.float32)


def _ts(moment: datetime | None) -> datetime | None:
    return None if moment is None else to_naive_utc(moment)


def _aware(moment: datetime) -> datetime:
    aware = from_naive_utc(moment)
    assert aware is not None
    return aware


#: Rows per read of a long result (``Graph._pages``).
_PAGE = 2000
#: Observations per range of ``Graph.seq_ranges``: the start-up reads the graph's rows a range
#: at a time, as Kùzu keeps the memory of a whole result after it is closed (the 100k
#: observations read at once held ~100 MB more to the end of loading, one range ~10 MB).
_SEQ_RANGE = 16384
#: The observations of one range of seq (``Graph.seq_ranges``; none: all).
_IN_RANGE = " WHERE o.seq >= $first AND o.seq < $past"
#: How Kùzu says its buffer pool had no page left to give.
_POOL_FULL = "buffer pool is full"


def _seq_filter(seqs: tuple[int, int] | None) -> tuple[str, Row | None]:
    """The WHERE clause and parameters of a read of one range of observations (None: all)."""
    if seqs is None:
        return "", None
    return _IN_RANGE, {"first": seqs[0], "past": seqs[1]}


class _Statements:
    """Prepared statements of the writing connection, by query text (writes are serialized).

    Preparing a statement costs about as much as running it (0.4 ms here) and a remember runs
    about ten, so each is prepared once. Kùzu 0.11 marks separate prepare/execute deprecated;
    it is the last release and pinned, and this class is the one place to change if a backend
    drops it.
    """

    def __init__(self, connection: kuzu.Connection) -> None:
        self._connection = connection
        self._prepared: dict[str, kuzu.PreparedStatement] = {}

    def execute(self, query: str, params: Row) -> kuzu.QueryResult:
        prepared = self._prepared.get(query)
        if prepared is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                prepared = self._connection.prepare(query)
            self._prepared[query] = prepared
        result = self._connection.execute(prepared, params)
        assert isinstance(result, kuzu.QueryResult)
        return result


class Graph:
    """The Kùzu database of one data directory.

    Args:
        path: the database file (created if absent).
        buffer_pool_bytes: Kùzu's page cache; Kùzu's own default is most of the machine's RAM.
        buffer_pool_max_bytes: how far the cache may grow when Kùzu finds it full (see the
            module docstring); None keeps it at ``buffer_pool_bytes``.
        checkpoint_every: write transactions between checkpoints (see the module docstring).
        reopen_every: checkpoints between reopenings of the database (see the module
            docstring); 0 never reopens.
        read_only: open for inspection (``doxa check``): no migrations, no writes.
        checked: this process checked and migrated the schema as it closed this database a
            moment ago (the start's second opening, ``startup.open_stores``): not again.

    Raises:
        SchemaMismatch: the store was written by another schema (see ``doxa.store.schema``).
        DamagedStore: the database file exists but cannot be read.
        MemoryStoreError: another process holds the database.
    """

    _open_paths: ClassVar[set[Path]] = set()
    _open_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(
        self,
        path: Path,
        buffer_pool_bytes: int = 256 * 1024 * 1024,
        checkpoint_every: int = 64,
        read_only: bool = False,
        reopen_every: int = 50,
        buffer_pool_max_bytes: int | None = None,
        checked: bool = False,
    ) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.read_only = read_only
        self._path = path.resolve()
        self._checkpoint_every = checkpoint_every
        self._since_checkpoint = 0
        self._pool_floor = buffer_pool_bytes
        self._pool_ceiling = max(buffer_pool_bytes, buffer_pool_max_bytes or 0)
        self._buffer_pool_bytes = self._sized_pool()
        #: Times the page cache grew because Kùzu found it full.
        self.pool_growths = 0
        # Set when a checkpoint found the page cache full at its ceiling: writes are refused
        # from then on.
        self._pool_exhausted: str | None = None
        #: The thread inside a write transaction, if any (the cache cannot grow under it).
        self._transaction_thread: int | None = None
        self._last_write = time.monotonic()
        self._reopen_every = reopen_every
        self._checkpoints = 0
        #: Reads hold it shared, a reopening exclusively (the handles change under it).
        self._handles = ReadersWriterLock()
        self.reopenings = 0
        with Graph._open_lock:
            # Two Database objects on one path in one process lose writes: refuse the second.
            if self._path in Graph._open_paths:
                raise MemoryStoreError(
                    f"the memory in {path.parent} is already open in this process;"
                    " share the open Memory instead of opening it again"
                )
            # A log left by a process killed during a checkpoint can crash Kùzu 0.11.3 as it
            # replays it (a segmentation fault, no exception): tried in a child first.
            # With the largest page cache the opening may grow to (address space only).
            crashed = log_crashes(self._path, self._pool_ceiling)
            if crashed is not None:
                raise DamagedStore(
                    str(path.parent),
                    f"Kùzu crashes (signal {crashed}) replaying its graph's write-ahead log"
                    f" ({wal_file(self._path).name}, {wal_file(self._path).stat().st_size}"
                    " bytes: a process stopped during a checkpoint left it)",
                    SET_ASIDE_REMEDY,
                )
            try:
                self._db = self._open_database(read_only)
            except RuntimeError as error:
                if _POOL_FULL in str(error):
                    raise self._cache_too_small("opening") from None
                if any(denied in str(error) for denied in _DENIED):
                    # Sound, but not ours to open: restoring a backup over it would lose
                    # what it holds.
                    how = "read" if read_only else "opened for writing"
                    raise NotPermitted(
                        f"the memory in {path.parent} was not opened: its graph database"
                        f" ({path.name}) cannot be {how} by this user ({error}); let this user"
                        f" {'read' if read_only else 'write'} the file and its directory (its"
                        " permissions, attributes or a read-only mount)"
                    ) from None
                if "lock" in str(error).lower():
                    raise MemoryInUse(
                        f"the memory in {path.parent} is in use by another process (Kùzu allows"
                        " one); connect this client to that server (doxa serve --transport http)"
                        " or use another --data-dir"
                    ) from None
                replaying = has_log(self._path)
                raise DamagedStore(
                    str(path.parent),
                    f"its graph database ({path.name}) cannot be read: {str(error).rstrip('. ')}",
                    SET_ASIDE_REMEDY
                    if replaying
                    else "Restore that file from a backup; the search index beside it was not"
                    " touched and still holds the memories' texts",
                ) from None
            Graph._open_paths.add(self._path)
        self._connect()
        self._write_lock = threading.RLock()
        try:
            if not (read_only or checked):
                self._migrate()
        except BaseException as error:
            self.close()
            if isinstance(error, RuntimeError) and _POOL_FULL in str(error):
                raise self._cache_too_small("preparing its schema") from None
            raise

    def _cache_too_small(self, doing: str) -> MemoryStoreError:
        """The error for a page cache found full at its ceiling while ``doing``."""
        return MemoryStoreError(
            f"the memory in {self._path.parent} did not fit Kùzu's page cache while {doing}"
            f" ({self.pool_mb} MB); set a larger buffer_pool_max_mb in the settings (store"
            " section)"
        )

    def _connect(self) -> None:
        self._reader = kuzu.Connection(self._db)
        # Per thread, prepared statements of this database handle (a reopening replaces it).
        self._read_statements = threading.local()
        self._writer = kuzu.Connection(self._db)
        self._writes = _Statements(self._writer)

    def _open_database(self, read_only: bool) -> kuzu.Database:
        """Open Kùzu with the sized page cache, doubling it (within the ceiling) while the
        opening itself finds it full (replaying a write-ahead log reads it all)."""
        while True:
            try:
                return kuzu.Database(
                    str(self._path), buffer_pool_size=self._buffer_pool_bytes, read_only=read_only
                )
            except RuntimeError as error:
                if _POOL_FULL not in str(error) or self._buffer_pool_bytes >= self._pool_ceiling:
                    raise
                self._pool_floor = min(self._pool_ceiling, 2 * self._buffer_pool_bytes)
                self._buffer_pool_bytes = self._sized_pool()
                self.pool_growths += 1

    @property
    def pool_mb(self) -> int:
        """The page cache the database is open with, in MiB."""
        return self._buffer_pool_bytes >> 20

    def _sized_pool(self) -> int:
        """The page cache for the next opening: ``buffer_pool_bytes`` (raised when the cache
        was found full) or the graph file's size if larger, within the ceiling."""
        try:
            held = self._path.stat().st_size
        except FileNotFoundError:
            held = 0
        return min(self._pool_ceiling, max(self._pool_floor, (held + (1 << 20) - 1) >> 20 << 20))

    def _grow_pool(self, error: RuntimeError) -> bool:
        """After Kùzu found the page cache full: reopen with twice the cache (the write-ahead
        log is replayed into it). False, changing nothing, at the ceiling or inside a write
        transaction."""
        if _POOL_FULL not in str(error) or self._buffer_pool_bytes >= self._pool_ceiling:
            return False
        with self._write_lock:
            if self._transaction_thread is not None:
                return False
            before = self.pool_mb
            self._pool_floor = min(self._pool_ceiling, 2 * self._buffer_pool_bytes)
            self._reopen()
            self.pool_growths += 1
            log.warning(
                "the graph's page cache was full (%d MB): reopened with %d MB (the ceiling is"
                " buffer_pool_max_mb = %d; set buffer_pool_mb to start there)",
                before,
                self.pool_mb,
                self._pool_ceiling >> 20,
            )
            return True

    def _reopen(self) -> None:
        """Close the database and open it again, with the page cache sized anew (the caller
        holds the write lock), waiting for reads in flight and holding new ones off
        meanwhile."""
        began = time.perf_counter()
        with self._handles.writing():
            self._reader.close()
            with contextlib.suppress(RuntimeError):  # may be unusable after a failed write
                self._writer.close()
            self._db.close()
            self._buffer_pool_bytes = self._sized_pool()
            self._db = self._open_database(read_only=False)
            self._connect()
        self._checkpoints = 0
        self.reopenings += 1
        log.info(
            "graph reopened with a %d MB page cache, giving back what Kùzu kept (%.2f s)",
            self.pool_mb,
            time.perf_counter() - began,
        )

    def wal_bytes(self) -> int:
        """Size of the write-ahead log, 0 when there is none."""
        try:
            return wal_file(self._path).stat().st_size
        except FileNotFoundError:
            return 0

    def checkpoint(self) -> bool:
        """Fold the write-ahead log into the database and release the pages updates held.

        Returns False (and logs why) when Kùzu could not checkpoint now, e.g. because a long
        read was still running; the next write or idle moment tries again. When it failed
        because the page cache is full, the cache grows and the checkpoint runs again; at the
        ceiling every later ``write`` is refused instead (a ``StorageError`` naming
        ``buffer_pool_max_mb``) until a restart.
        """
        # Reads are held off for the checkpoint's few milliseconds: Kùzu's CHECKPOINT waits
        # for every transaction to end while a read's commit waits for the checkpoint, so a
        # read running then stalled both until Kùzu's wait timed out (seconds per checkpoint).
        with self._write_lock:
            try:
                with self._handles.writing():
                    self._writer.execute("CHECKPOINT")
            except RuntimeError as error:
                if self._grow_pool(error):
                    return self.checkpoint()
                if _POOL_FULL in str(error):
                    # The next write after this has crashed the process inside Kùzu (a
                    # soak: 14,000 memories, 64 MB, ~5,000 feedbacks): refuse writes instead,
                    # with what to do. Reads go on; a restart with a larger cache recovers.
                    self._pool_exhausted = str(error)
                    log.error(
                        "graph checkpoint failed, the page cache (%d MB, its ceiling) is too"
                        " small for this memory; writes are refused until a restart with a"
                        " larger buffer_pool_max_mb: %s",
                        self.pool_mb,
                        error,
                    )
                    return False
                log.warning("graph checkpoint postponed: %s", error)
                return False
            self._since_checkpoint = 0
            self._checkpoints += 1
            reopened = bool(self._reopen_every and self._checkpoints >= self._reopen_every)
            if reopened:
                self._reopen()
        # What the checkpoint (or the closed database) freed; outside the lock, as writes go on.
        native_memory.give_back(now=reopened)
        return True

    def checkpoint_if_due(self, idle_s: float = 1.0) -> bool:
        """Checkpoint when ``checkpoint_every`` write transactions are waiting for one, or
        when some are and no write came in the last ``idle_s`` seconds (for a background
        thread). Returns True if it checkpointed."""
        pending = self._since_checkpoint
        idle = time.monotonic() - self._last_write >= idle_s
        if pending >= self._checkpoint_every or (pending and idle):
            return self.checkpoint()
        return False

    def close(self) -> None:
        """Release the database (and its file lock)."""
        with self._write_lock:
            self._reader.close()
            self._writer.close()
            self._db.close()
        with Graph._open_lock:
            Graph._open_paths.discard(self._path)

    # ---- schema -----------------------------------------------------------------------------

    def _tables(self) -> set[str]:
        """The names of the store's tables."""
        return {str(row[1]) for row in self._rows("CALL show_tables() RETURN *")}

    def live_schema(self) -> dict[str, dict[str, str]]:
        """Every table of the store with its columns and types (primary keys included)."""
        tables = sorted(self._tables())
        live: dict[str, dict[str, str]] = {}
        for table in tables:
            # table names come from the database itself, never from a caller
            info = self._rows(f"CALL table_info('{table}') RETURN *")
            live[table] = {row[1]: row[2] for row in info}
        return live

    def applied_migrations(
        self, live: dict[str, dict[str, str]] | None = None
    ) -> dict[int, tuple[str, str]]:
        """The migrations the store records: version -> (name, checksum); empty for a store
        without its history table. ``live``: the ``live_schema`` just read, if any."""
        if schema.MIGRATION_TABLE not in (self.live_schema() if live is None else live):
            return {}
        return {
            row[0]: (row[1], row[2])
            for row in self._rows(
                f"MATCH (m:{schema.MIGRATION_TABLE}) RETURN m.version, m.name, m.checksum"
            )
        }

    def _migrate(self) -> None:
        live = self.live_schema()
        new = not live
        if new:
            self._run_in_transaction([schema.HISTORY_DDL], [])
            live = {schema.MIGRATION_TABLE: {}}
            log.info(
                "creating a new memory store (schema migrations 1-%d)",
                schema.MIGRATIONS[-1].version,
            )
        if schema.MIGRATION_TABLE not in live:
            raise SchemaMismatch(
                [f"no {schema.MIGRATION_TABLE} table: this directory is not a doxa store"]
            )
        applied = self.applied_migrations(live)
        issues, again = schema.judged(applied)
        if issues:
            raise SchemaMismatch(issues)
        for migration in schema.MIGRATIONS:
            if migration.version in applied and migration.version not in again:
                continue
            # A new store's are said once, above; an existing store's each (they may take long).
            log.log(
                logging.DEBUG if new else logging.INFO,
                "applying schema migration %d%s: %s",
                migration.version,
                " again (an earlier doxa applied other statements)"
                if migration.version in again
                else "",
                migration.name,
            )
            records: list[tuple[str, Row]] = []
            if migration.version in again:  # its record is made anew, with this checksum
                records.append(
                    (
                        f"MATCH (m:{schema.MIGRATION_TABLE} {{version: $v}}) DELETE m",
                        {"v": migration.version},
                    )
                )
            records.append(
                (
                    f"CREATE (:{schema.MIGRATION_TABLE} {{version: $v, name: $n,"
                    " checksum: $c, applied_at: $t})",
                    {
                        "v": migration.version,
                        "n": migration.name,
                        "c": migration.checksum,
                        "t": to_naive_utc(utc_now()),
                    },
                )
            )
            self._run_in_transaction(list(migration.statements), records)
        if again or len(applied) < len(schema.MIGRATIONS):
            # DDL and backfills hold pool pages until a checkpoint; with a small pool the
            # first load's reads would otherwise find it full.
            self.checkpoint()
            live = self.live_schema()
        # Read once when nothing was applied: a table's columns are a query each (about
        # 12 ms a reading, paid by every start).
        mismatch = schema.compare(live)
        if mismatch:
            raise SchemaMismatch(mismatch)

    def _run_in_transaction(
        self, statements: list[str], parameterised: list[tuple[str, Row]]
    ) -> None:
        """A migration step in one transaction; rolled back and run again when the page
        cache was too small for it and has grown (as for any write)."""
        with self._write_lock:
            while True:
                self._writer.execute("BEGIN TRANSACTION")
                try:
                    for statement in statements:
                        self._writer.execute(statement)
                    for statement, params in parameterised:
                        self._writer.execute(statement, params)
                except RuntimeError as error:
                    self._rollback()
                    if self._grow_pool(error):
                        continue
                    raise
                except BaseException:
                    self._rollback()
                    raise
                self._writer.execute("COMMIT")
                self._wrote()
                return

    # ---- plumbing ---------------------------------------------------------------------------

    def _read(self, query: str, params: Row | None) -> kuzu.QueryResult:
        """Run a read. Each thread prepares its own statements (reads run on several threads
        at once), once per query text: Kùzu keeps memory for every statement it prepares, and
        preparing on each call grew a process by ~16 KB a call (265 MB over 16,000 calls)."""
        if not params:
            result = self._reader.execute(query)
            assert isinstance(result, kuzu.QueryResult)
            return result
        statements: _Statements | None = getattr(self._read_statements, "cache", None)
        if statements is None:
            statements = self._read_statements.cache = _Statements(self._reader)
        return statements.execute(query, params)

    def _reading(self, run: Callable[[], T]) -> T:
        """``run`` (a read) with the handles held for reading; run once more if Kùzu found
        the page cache full and it grew."""
        for attempt in (1, 2):
            try:
                with self._handles.reading():
                    return run()
            except RuntimeError as error:
                if attempt == 2 or not self._grow_pool(error):
                    raise StorageError("a read", str(error)) from None
        raise AssertionError("unreachable")

    def _rows(self, query: str, params: Row | None = None) -> list[list[Any]]:
        def fetch() -> list[list[Any]]:
            result = self._read(query, params)
            rows: list[list[Any]] = []
            while result.has_next():
                rows.append(list(result.get_next()))
            result.close()
            return rows

        return self._reading(fetch)

    def _pages(self, query: str, params: Row | None = None) -> Iterator[list[Any]]:
        """The rows of ``query`` (which must ORDER BY a key) read ``_PAGE`` at a time: Kùzu
        holds a whole result in its page cache, and a result of every judged recall's
        vector or features filled 256 MB (bench/soak.py, 13,000 judged recalls)."""
        skip = 0
        while True:
            page = self._rows(f"{query} SKIP {skip} LIMIT {_PAGE}", params)
            yield from page
            if len(page) < _PAGE:
                return
            skip += _PAGE

    def read(self, query: str, params: Row | None = None) -> list[list[Any]]:
        """Rows of a read written by a store module that holds its own Cypher (``exporting``,
        which derives its queries from ``schema.EXPECTED``)."""
        return self._rows(query, params)

    def _columns(self, query: str, params: Row | None = None) -> list[tuple[Any, ...]]:
        """Rows of a bulk read, through arrow: at 100k rows about ten times faster than
        fetching them one by one."""
        table = self._arrow(query, params)
        if table.num_rows == 0:
            return []
        return list(zip(*(column.to_pylist() for column in table.columns), strict=True))

    def _arrow(self, query: str, params: Row | None = None) -> pa.Table:
        def fetch() -> pa.Table:
            result = self._read(query, params)
            table: pa.Table = result.get_as_arrow(chunk_size=100_000)
            result.close()
            return table

        return self._reading(fetch)

    @contextmanager
    def write(self, operation: str = "a write") -> Iterator[GraphWriter]:
        """One write transaction: commits when the block ends, rolls back if it raises.

        Args:
            operation: what the write does, named in a ``StorageError`` if the database fails.

        Raises:
            StorageError: the database failed; the transaction was rolled back.
        """
        with self._write_lock:
            if self._pool_exhausted is not None:
                raise StorageError(
                    operation,
                    f"its page cache ({self.pool_mb} MB) is too small for this memory (a"
                    f" checkpoint found it full: {self._pool_exhausted}); set a larger"
                    " buffer_pool_max_mb in the settings (store section) and restart the"
                    " server",
                )
            try:
                self._writer.execute("BEGIN TRANSACTION")
                self._transaction_thread = threading.get_ident()
                try:
                    yield GraphWriter(self._writes)
                except BaseException:
                    self._rollback()
                    raise
                finally:
                    self._transaction_thread = None
                self._writer.execute("COMMIT")
            except RuntimeError as error:
                self._recover_from(error)
                raise StorageError(operation, str(error)) from None
            self._wrote()

    def transact(self, operation: str, body: Callable[[GraphWriter], T]) -> T:
        """``body`` in one write transaction (as ``write``), run once more when it failed
        because the page cache was full and the cache has grown since: the first try was
        rolled back, and the caller should not pay for the cache's growth with an error."""
        growths = self.pool_growths
        try:
            with self.write(operation) as writer:
                return body(writer)
        except StorageError:
            if self.pool_growths == growths:
                raise
        with self.write(operation) as writer:
            return body(writer)

    def _wrote(self) -> None:
        self._last_write = time.monotonic()
        self._since_checkpoint += 1
        if self._since_checkpoint >= 4 * self._checkpoint_every:
            self.checkpoint()

    def _recover_from(self, error: RuntimeError) -> None:
        """After a failed write: a fresh writing connection (Kùzu may leave the old one
        unusable: the next query on it has crashed the process), and a checkpoint, which
        gives back the pool pages that a "buffer pool is full" error ran out of."""
        log.error("graph write failed: %s", error)
        if self._grow_pool(error):  # new connections, and room for the next try
            self.checkpoint()
            return
        with contextlib.suppress(RuntimeError):
            self._writer.close()
        self._writer = kuzu.Connection(self._db)
        self._writes = _Statements(self._writer)
        self.checkpoint()

    def _rollback(self) -> None:
        # A failed statement has already rolled Kùzu's transaction back, and ROLLBACK then
        # fails with "No active transaction"; that must not hide the error that matters.
        try:
            self._writer.execute("ROLLBACK")
        except RuntimeError:
            log.debug("nothing to roll back: the failed statement already did")

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the write lock without a transaction (to keep both stores in step)."""
        with self._write_lock:
            yield

    # ---- loading the working memory ----------------------------------------------------------

    def seq_ranges(self) -> list[tuple[int, int]]:
        """(first, past) ranges of ``seq`` that together cover every observation, in order,
        each holding ``_SEQ_RANGE`` of them (the last fewer; none for an empty graph). Cut
        where the observations are: order numbers far apart (an import's, a file's) make
        no run of empty ranges."""
        table = self._arrow("MATCH (o:Observation) RETURN o.seq AS seq ORDER BY o.seq")
        seqs = table.column("seq").to_pylist()
        if not seqs:
            return []
        firsts = sorted({int(seq) for seq in seqs[::_SEQ_RANGE]})
        return list(zip(firsts, [*firsts[1:], int(seqs[-1]) + 1], strict=True))

    def observations(self, seqs: tuple[int, int] | None = None) -> pa.Table:
        """Every observation's scalar fields (those of one range of ``seq_ranges``), ordered
        by seq (arrow, for fast bulk loading)."""
        where, params = _seq_filter(seqs)
        return self._arrow(
            f"MATCH (o:Observation){where} RETURN o.id AS id, o.seq AS seq, o.text AS text,"
            " o.text_key AS text_key, o.observed_at AS observed_at,"
            " o.recorded_at AS recorded_at, CAST(o.confidence AS STRING) AS confidence,"
            " o.source AS source, o.kind AS kind, o.subject AS subject,"
            " o.predicate AS predicate, o.object AS object, o.valid_from AS valid_from,"
            " o.valid_until AS valid_until, o.retracted_at AS retracted_at, o.hits AS hits,"
            " o.impressions AS impressions, o.stated_until AS stated_until,"
            " o.event_times AS event_times, o.told_offset AS told_offset ORDER BY o.seq",
            params,
        )

    def observation_count(self) -> int:
        """How many observations the graph holds (retracted included)."""
        return int(self._rows("MATCH (o:Observation) RETURN count(o)")[0][0])

    def mentions(self, seqs: tuple[int, int] | None = None) -> list[tuple[str, str]]:
        """(observation id, topic name) for every MENTIONS link (of the observations of one
        range of ``seq_ranges``)."""
        where, params = _seq_filter(seqs)
        return self._columns(
            f"MATCH (o:Observation)-[:MENTIONS]->(t:Topic){where} RETURN o.id, t.name", params
        )

    def beliefs(
        self,
    ) -> list[
        tuple[
            str,
            str,
            str,
            datetime,
            datetime | None,
            Decimal | None,
            datetime | None,
            datetime | None,
        ]
    ]:
        """(agent, belief id, observation id, since, withdrawn at, confidence, held until,
        forgotten at) for every belief, in the order they were taken."""
        return self._columns(
            "MATCH (a:Agent)-[:HOLDS]->(b:Belief)-[:`OF`]->(o:Observation)"
            " RETURN a.name, b.id, o.id, b.since, b.retracted_at, b.confidence, b.held_until,"
            " b.forgotten_at ORDER BY b.since, b.id"
        )

    def predicates(self) -> list[tuple[str, str]]:
        """(name, cardinality) of every recorded predicate."""
        return self._columns("MATCH (p:Predicate) RETURN p.name, p.cardinality")

    def episode_links(self, seqs: tuple[int, int] | None = None) -> list[tuple[str, str]]:
        """(observation id, episode id) for every FROM link (of the observations of one range
        of ``seq_ranges``)."""
        where, params = _seq_filter(seqs)
        return self._columns(
            f"MATCH (o:Observation)-[:`FROM`]->(e:Episode){where} RETURN o.id, e.id", params
        )

    def contradiction_links(self) -> list[tuple[str, str, datetime]]:
        """(id, other id, when the link was recorded) for every CONTRADICTS link, the
        oldest first."""
        return self._columns(
            "MATCH (x:Observation)-[c:CONTRADICTS]->(y:Observation)"
            " RETURN x.id, y.id, c.at ORDER BY c.at, x.id, y.id"
        )

    def supersessions(self) -> list[tuple[str, str, datetime, datetime, datetime | None]]:
        """(newer id, older id, the newer fact's start, when the link was recorded, when a
        forget undid it or None) for every SUPERSEDES link."""
        return self._columns(
            "MATCH (n:Observation)-[s:SUPERSEDES]->(o:Observation)"
            f" RETURN n.id, o.id, s.at, {_LINK_KNOWN}, s.dropped"
        )

    def record_types(self) -> list[tuple[str, str]]:
        """(observation id, record type) of every record."""
        return self._columns("MATCH (o:Observation)-[:IS_A]->(t:RecordType) RETURN o.id, t.name")

    def record_fields(self) -> list[tuple[str, int, str, str, str]]:
        """(observation id, position, field name, kind, value as text) of every record's
        fields, in order."""
        return self._columns(
            "MATCH (o:Observation)-[h:HAS_FIELD]->(:FieldValue)"
            " RETURN o.id, h.position, h.name, h.kind, h.value ORDER BY o.id, h.position"
        )

    def field_links(self, ids: Sequence[str]) -> list[tuple[str, int, str, str, str, str]]:
        """(observation id, position, field name, kind, value as text, the ``FieldValue``'s
        key) of the fields of these records."""
        return [
            (r[0], int(r[1]), r[2], r[3], r[4], r[5])
            for r in self._rows(
                "UNWIND $ids AS i MATCH (o:Observation {id: i})-[h:HAS_FIELD]->(f:FieldValue)"
                " RETURN o.id, h.position, h.name, h.kind, h.value, f.key",
                {"ids": list(ids)},
            )
        ]

    def co_activations(self) -> list[tuple[str, str, int]]:
        """(observation, observation, count) for every pair accepted together."""
        return [
            (r[0], r[1], int(r[2]))
            for r in self._rows("MATCH (p:CoActivation) RETURN p.a, p.b, p.count")
        ]

    def judged_queries(
        self,
    ) -> dict[str, tuple[npt.NDArray[np.float32], str | None, datetime | None, str]]:
        """Every judged recall's query: recall id -> (its vector, the embedder that embedded
        it, judged at, its words: "" for one asked by filters alone); see ``judgements``. A
        query kept with no vector (judged before schema migration 14, or imported) has an
        empty one and no embedder: start-up embeds it again from its words."""
        kept = (
            "OPTIONAL MATCH (q:JudgedQuery {recall: r.id}) RETURN r.id, q.vector, q.embedder"
            # A store not migrated yet (``doxa check`` reads it as it is): none kept.
            if "JudgedQuery" in self._tables()
            else "RETURN r.id, CAST(NULL AS STRING) AS v, CAST(NULL AS STRING) AS e"
        )
        return {
            r[0]: (
                query_vector_of(r[1]) if r[1] is not None else np.zeros(0, np.float32),
                r[2],
                r[3],
                r[4] or "",
            )
            for r in self._pages(
                f"MATCH (r:Recall) WHERE r.judged_at IS NOT NULL {kept}, r.judged_at, r.query"
                " ORDER BY r.id"
            )
        }

    def judgements(
        self,
    ) -> list[tuple[str, npt.NDArray[np.float32], str | None, str, str, datetime | None]]:
        """(recall id, query vector, the embedder that embedded it, observation id, judgement,
        judged at) for every judged result; a query kept with no vector has an empty one
        and no embedder: ``judged_queries`` gives their words."""
        queries = self.judged_queries()
        return [
            (r[0], *queries[r[0]][:2], r[1], r[2], queries[r[0]][2])
            for r in self._pages(
                "MATCH (r:Recall)-[x:RETURNED]->(o:Observation)"
                " WHERE x.judgement IN ['accepted', 'rejected'] AND r.judged_at IS NOT NULL"
                " RETURN r.id, o.id, x.judgement ORDER BY r.id, o.id"
            )
            if r[0] in queries
        ]

    def unstamped_recalls(self) -> int:
        """How many recalls do not say which embedder ranked them (recorded before schema
        migration 10, until start-up stamps them)."""
        return int(self._rows("MATCH (r:Recall) WHERE r.embedder IS NULL RETURN count(r)")[0][0])

    def training_examples(self, recalls: int, embedder: str) -> list[tuple[str, str, bool]]:
        """(recall id, features JSON, accepted) for each judged result of the ``recalls``
        most recently judged recalls that ``embedder`` (its fingerprint) ranked and that
        kept features, in the order they were judged."""
        kept: dict[str, dict[int, str]] = {}
        since = None
        for recall_id, features, judged_at in self._pages(
            "MATCH (r:Recall) WHERE r.judged_at IS NOT NULL AND r.features IS NOT NULL"
            " AND r.embedder = $e"
            " RETURN r.id, r.features, r.judged_at ORDER BY r.judged_at DESC, r.id",
            {"e": embedder},
        ):
            if len(kept) >= recalls:
                break
            kept[recall_id] = recall_features(features)
            since = judged_at
        if since is None:
            return []
        found = []
        for recall_id, rank, judgement in self._pages(
            "MATCH (r:Recall)-[x:RETURNED]->() WHERE r.judged_at >= $since"
            " AND x.judgement IN ['accepted', 'rejected']"
            " RETURN r.id, x.rank, x.judgement ORDER BY r.judged_at, r.id, x.rank",
            {"since": since},
        ):
            features = kept.get(recall_id, {}).get(rank)
            if features is not None:
                found.append((recall_id, features, judgement == "accepted"))
        return found

    def judged_since(self, at: datetime, embedder: str) -> int:
        """How many results of recalls ``embedder`` (its fingerprint) ranked were judged
        after ``at``."""
        rows = self._rows(
            "MATCH (r:Recall)-[x:RETURNED]->() WHERE r.judged_at > $at AND r.embedder = $e"
            " AND x.judgement IN ['accepted', 'rejected'] RETURN count(*)",
            {"at": _ts(at), "e": embedder},
        )
        return int(rows[0][0]) if rows else 0

    def impressions_in_order(self) -> list[tuple[str, str, str]]:
        """(recall id, observation id, judgement: "accepted", "rejected" or "") of every
        result of a judged recall, in the order they were judged."""
        return [
            (r[0], r[1], r[2] or "")
            for r in self._pages(
                "MATCH (r:Recall)-[x:RETURNED]->(o:Observation) WHERE r.judged_at IS NOT NULL"
                " RETURN r.id, o.id, x.judgement ORDER BY r.judged_at, r.id, x.rank"
            )
        ]

    def judged_results(self) -> list[dict[str, Any]]:
        """Every judged result with its recall: recall id, query, agent, judged at, result
        id and text, judgement, rank, score and features (JSON text or None), in the order
        they were judged."""
        keys = (
            "recall_id",
            "query",
            "agent",
            "judged_at",
            "result_id",
            "text",
            "judgement",
            "rank",
            "score",
            "features",
        )
        kept = {
            r[0]: recall_features(r[1])
            for r in self._pages(
                "MATCH (r:Recall) WHERE r.judged_at IS NOT NULL AND r.features IS NOT NULL"
                " RETURN r.id, r.features ORDER BY r.id"
            )
        }
        return [
            dict(zip(keys, [*row, kept.get(row[0], {}).get(row[7])], strict=True))
            for row in self._pages(
                "MATCH (r:Recall)-[x:RETURNED]->(o:Observation)"
                " WHERE x.judgement IN ['accepted', 'rejected']"
                " RETURN r.id, r.query, r.agent, r.judged_at, o.id, o.text, x.judgement,"
                " x.rank, x.score ORDER BY r.judged_at, r.id, x.rank"
            )
        ]

    # ---- evidence and conflicts --------------------------------------------------------------

    def observation(self, observation_id: str) -> Row | None:
        """One observation's fields, its topics and episode, or None."""
        rows = self._rows(
            "MATCH (o:Observation {id: $id})"
            " OPTIONAL MATCH (o)-[:`FROM`]->(e:Episode)"
            " RETURN o.id, o.text, o.observed_at, o.recorded_at, CAST(o.confidence AS STRING),"
            " o.source, o.kind, o.subject, o.predicate, o.object, o.valid_from, o.valid_until,"
            " o.retracted_at, o.hits, o.impressions, e.id, o.stated_until, o.event_times",
            {"id": observation_id},
        )
        if not rows:
            return None
        r = rows[0]
        keys = [
            "id",
            "text",
            "observed_at",
            "recorded_at",
            "confidence",
            "source",
            "kind",
            "subject",
            "predicate",
            "object",
            "valid_from",
            "valid_until",
            "retracted_at",
            "hits",
            "impressions",
            "episode",
            "stated_until",
            "event_times",
        ]
        found = dict(zip(keys, r, strict=True))
        found["topics"] = [
            t[0]
            for t in self._rows(
                "MATCH (o:Observation {id: $id})-[:MENTIONS]->(t:Topic) RETURN t.name"
                " ORDER BY t.name",
                {"id": observation_id},
            )
        ]
        return found

    def belief_target(self, belief_id: str) -> tuple[str, str] | None:
        """(agent, observation id) of a belief, or None."""
        rows = self._rows(
            "MATCH (a:Agent)-[:HOLDS]->(b:Belief {id: $id})-[:`OF`]->(o:Observation)"
            " RETURN a.name, o.id",
            {"id": belief_id},
        )
        return (rows[0][0], rows[0][1]) if rows else None

    def believers(self, observation_id: str) -> list[Row]:
        """Every belief in the observation: agent, belief id, confidence, since, when its
        agent withdrew it (None: held), until when it held for its agent then (None:
        withdrawn outright, or held), and when its agent forgot that (None: never)."""
        return [
            {
                "agent": r[0],
                "belief_id": r[1],
                "confidence": r[2],
                "since": r[3],
                "retracted_at": r[4],
                "held_until": r[5],
                "forgotten_at": r[6],
            }
            for r in self._rows(
                "MATCH (a:Agent)-[:HOLDS]->(b:Belief)-[:`OF`]->(o:Observation {id: $id})"
                " RETURN a.name, b.id, CAST(coalesce(b.confidence, o.confidence) AS STRING),"
                " b.since, b.retracted_at, b.held_until, b.forgotten_at ORDER BY b.since, a.name",
                {"id": observation_id},
            )
        ]

    def evidence_for(self, observation_id: str) -> list[Row]:
        """Evidence supporting any belief in the observation, strongest first, with the
        belief's agent."""
        return [
            {
                "belief_id": r[0],
                "agent": r[9],
                "observation_id": r[1],
                "text": r[2],
                "weight": r[3],
                "confidence": r[4],
                "source": r[5],
                "observed_at": r[6],
                "retracted": r[7] is not None,
                "retracted_at": r[7],
                "recorded_at": r[8],
                "belief_since": r[10],
            }
            for r in self._rows(
                "MATCH (e:Observation)-[s:SUPPORTS]->(b:Belief)-[:`OF`]->(o:Observation {id: $id}),"
                " (a:Agent)-[:HOLDS]->(b)"
                " RETURN b.id, e.id, e.text, CAST(s.weight AS STRING),"
                " CAST(e.confidence AS STRING), e.source, e.observed_at, e.retracted_at,"
                " e.recorded_at, a.name, b.since ORDER BY s.weight DESC, e.id, b.since",
                {"id": observation_id},
            )
        ]

    def supports_given(self, observation_id: str) -> list[Row]:
        """Beliefs this observation is evidence for (with when their observation was
        retracted)."""
        return [
            {
                "belief_id": r[0],
                "agent": r[1],
                "observation_id": r[2],
                "weight": r[3],
                "belief_since": r[4],
                "retracted_at": r[5],
            }
            for r in self._rows(
                "MATCH (e:Observation {id: $id})-[s:SUPPORTS]->(b:Belief)-[:`OF`]->(o:Observation),"
                " (a:Agent)-[:HOLDS]->(b)"
                " RETURN b.id, a.name, o.id, CAST(s.weight AS STRING), b.since, o.retracted_at"
                " ORDER BY b.since, b.id",
                {"id": observation_id},
            )
        ]

    def contradictions_of(self, observation_id: str) -> list[Row]:
        """Observations contradicting this one (either direction)."""
        return [
            {
                "observation_id": r[0],
                "text": r[1],
                "confidence": r[2],
                "retracted": r[3] is not None,
                "retracted_at": r[3],
                "recorded_at": r[4],
            }
            for r in self._rows(
                "MATCH (o:Observation {id: $id})-[:CONTRADICTS]-(x:Observation)"
                " RETURN DISTINCT x.id, x.text, CAST(x.confidence AS STRING), x.retracted_at,"
                " x.recorded_at ORDER BY x.id",
                {"id": observation_id},
            )
        ]

    def supersession_chain(self, observation_id: str, limit: int = 200) -> list[Row]:
        """Every observation linked by SUPERSEDES to this one (any depth), oldest first.

        Walked one hop per query: a variable-length undirected match enumerates every path,
        which explodes (and exhausts the page cache) on facts with a few versions.
        """
        seen = {observation_id}
        frontier = [observation_id]
        while frontier and len(seen) < limit:
            found = self._rows(
                "UNWIND $ids AS i MATCH (o:Observation {id: i})-[:SUPERSEDES]-(x:Observation)"
                " RETURN DISTINCT x.id",
                {"ids": frontier},
            )
            frontier = [r[0] for r in found if r[0] not in seen]
            seen.update(frontier)
        seen.discard(observation_id)
        return [
            {
                "observation_id": r[0],
                "text": r[1],
                "valid_from": r[2],
                "valid_until": r[3],
                "object": r[4],
                "recorded_at": r[5],
                "retracted_at": r[6],
                "stated_until": r[7],
            }
            for r in self._rows(
                "UNWIND $ids AS i MATCH (x:Observation {id: i})"
                " RETURN x.id, x.text, x.valid_from, x.valid_until, x.object, x.recorded_at,"
                " x.retracted_at, x.stated_until ORDER BY x.valid_from, x.id",
                {"ids": sorted(seen)},
            )
        ]

    def supersession_links(self, ids: Sequence[str]) -> list[Row]:
        """Every SUPERSEDES link touching these observations: newer and older id, ``at``
        (the newer fact's start), when the link was recorded, and when it stopped ending
        the older fact (``retracted_at``: the newer one's retraction or the forget that
        undid the link, whichever came first; None while it holds)."""
        found: dict[tuple[str, str, datetime], Row] = {}
        for pattern in (
            "(o:Observation {id: key})<-[s:SUPERSEDES]-(n:Observation)",
            "(n:Observation {id: key})-[s:SUPERSEDES]->(o:Observation)",
        ):
            for r in self._rows(
                f"UNWIND $ids AS i WITH i AS key MATCH {pattern}"
                f" RETURN n.id, o.id, s.at, {_LINK_KNOWN}, {_LINK_UNTIL}",
                {"ids": list(ids)},
            ):
                found[(r[0], r[1], r[3])] = {
                    "newer": r[0],
                    "older": r[1],
                    "at": r[2],
                    "recorded_at": r[3],
                    "retracted_at": r[4],
                }
        return sorted(found.values(), key=lambda link: (link["at"], link["newer"]))

    def unsupported_beliefs(self, agent: str, known_at: datetime | None = None) -> list[Row]:
        """The agent's beliefs in unretracted observations that no unretracted evidence
        supports (evidence of weight 0 supports nothing), each with the agent's own
        confidence; as the graph held them at ``known_at`` when given (the belief and
        observation recorded and not retracted by then, nor any evidence recorded by then
        and not retracted then: evidence is linked when it is remembered). A belief a later
        fact of its agent withdrew (by then) and that its agent had not forgotten then comes
        too, with ``until_later`` True: where it ends is the agent's facts' to say
        (``provenance.unsupported``), not this one's."""
        if known_at is None:
            held = (
                "o.retracted_at IS NULL AND (b.retracted_at IS NULL"
                " OR (b.held_until IS NOT NULL AND b.forgotten_at IS NULL))"
            )
            later = "b.retracted_at IS NOT NULL"
            evidence = "e.retracted_at IS NULL"
            known = {}
        else:
            held = (
                "o.recorded_at <= $k AND b.since <= $k"
                " AND (o.retracted_at IS NULL OR o.retracted_at > $k)"
                " AND (b.retracted_at IS NULL OR b.retracted_at > $k OR (b.held_until IS NOT NULL"
                " AND (b.forgotten_at IS NULL OR b.forgotten_at > $k)))"
            )
            later = "b.retracted_at IS NOT NULL AND b.retracted_at <= $k"
            evidence = "e.recorded_at <= $k AND (e.retracted_at IS NULL OR e.retracted_at > $k)"
            known = {"k": to_naive_utc(known_at)}
        return [
            {
                "belief_id": r[0],
                "observation_id": r[1],
                "text": r[2],
                "confidence": r[3],
                "since": r[4],
                "until_later": bool(r[5]),
            }
            for r in self._rows(
                "MATCH (a:Agent {name: $agent})-[:HOLDS]->(b:Belief)-[:`OF`]->(o:Observation)"
                f" WHERE {held}"
                " AND NOT EXISTS { MATCH (e:Observation)-[s:SUPPORTS]->(b)"
                f" WHERE (s.weight IS NULL OR s.weight > 0) AND {evidence} }}"
                " RETURN b.id, o.id, o.text, CAST(coalesce(b.confidence, o.confidence) AS STRING),"
                f" b.since, {later}"
                " ORDER BY b.since, b.id",
                {"agent": agent, **known},
            )
        ]

    def contradictions(self, known_at: datetime | None = None) -> list[Row]:
        """Explicit CONTRADICTS pairs between unretracted observations with their holders;
        as the graph held them at ``known_at`` when given (both sides recorded and not
        retracted by then, beliefs held then)."""
        if known_at is None:
            rows = self._rows(
                "MATCH (x:Observation)-[c:CONTRADICTS]->(y:Observation)"
                " WHERE x.retracted_at IS NULL AND y.retracted_at IS NULL"
                " OPTIONAL MATCH (ax:Agent)-[:HOLDS]->(bx:Belief)-[:`OF`]->(x)"
                " WHERE bx.retracted_at IS NULL"
                " OPTIONAL MATCH (ay:Agent)-[:HOLDS]->(by:Belief)-[:`OF`]->(y)"
                " WHERE by.retracted_at IS NULL"
                " RETURN x.id, y.id, collect(DISTINCT ax.name), collect(DISTINCT ay.name), c.at"
                " ORDER BY c.at, x.id, y.id"
            )
        else:
            rows = self._rows(
                "MATCH (x:Observation)-[c:CONTRADICTS]->(y:Observation)"
                " WHERE c.at <= $k AND x.recorded_at <= $k AND y.recorded_at <= $k"
                " AND (x.retracted_at IS NULL OR x.retracted_at > $k)"
                " AND (y.retracted_at IS NULL OR y.retracted_at > $k)"
                " OPTIONAL MATCH (ax:Agent)-[:HOLDS]->(bx:Belief)-[:`OF`]->(x)"
                " WHERE bx.since <= $k AND (bx.retracted_at IS NULL OR bx.retracted_at > $k)"
                " OPTIONAL MATCH (ay:Agent)-[:HOLDS]->(by:Belief)-[:`OF`]->(y)"
                " WHERE by.since <= $k AND (by.retracted_at IS NULL OR by.retracted_at > $k)"
                " RETURN x.id, y.id, collect(DISTINCT ax.name), collect(DISTINCT ay.name), c.at"
                " ORDER BY c.at, x.id, y.id",
                {"k": to_naive_utc(known_at)},
            )
        return [
            {"a": x, "b": y, "a_agents": sorted(set(xa)), "b_agents": sorted(set(ya)), "at": at}
            for x, y, xa, ya, at in rows
        ]

    def current_facts(self, at: datetime) -> list[Row]:
        """Unretracted facts valid at ``at``, with their holders (for clash detection)."""
        return [
            {
                "observation_id": r[0],
                "subject": r[1],
                "predicate": r[2],
                "object": r[3],
                "agents": sorted(set(r[4])),
            }
            for r in self._rows(
                "MATCH (o:Observation) WHERE o.subject IS NOT NULL AND o.retracted_at IS NULL"
                " AND (o.valid_from IS NULL OR o.valid_from <= $at)"
                " AND (o.valid_until IS NULL OR o.valid_until > $at)"
                " OPTIONAL MATCH (a:Agent)-[:HOLDS]->(b:Belief)-[:`OF`]->(o)"
                " WHERE b.retracted_at IS NULL"
                " RETURN o.id, o.subject, o.predicate, o.object, collect(a.name)",
                {"at": to_naive_utc(at)},
            )
        ]

    def known_recalls(self, recall_ids: list[str]) -> set[str]:
        """Which of ``recall_ids`` the graph holds a ``Recall`` of."""
        return {
            str(r[0])
            for r in self._rows(
                "UNWIND $ids AS i MATCH (r:Recall {id: i}) RETURN r.id", {"ids": recall_ids}
            )
        }

    def recall_event(self, recall_id: str) -> tuple[str, bool, list[str]] | None:
        """(query, judged already, returned observation ids by rank), or None if unknown."""
        found = self._rows(
            "MATCH (r:Recall {id: $id}) RETURN r.query, r.judged_at", {"id": recall_id}
        )
        if not found:
            return None
        return (
            found[0][0],
            found[0][1] is not None,
            [
                r[0]
                for r in self._rows(
                    "MATCH (r:Recall {id: $id})-[x:RETURNED]->(o:Observation)"
                    " RETURN o.id ORDER BY x.rank",
                    {"id": recall_id},
                )
            ],
        )

    def unheld_observations(self) -> int:
        """Observations that no agent holds as a belief (a write always creates one)."""
        return int(
            self._rows(
                "MATCH (o:Observation) WHERE NOT EXISTS"
                " { MATCH (:Belief)-[:`OF`]->(o) } RETURN count(o)"
            )[0][0]
        )

    def one_sided_links(self) -> dict[str, int]:
        """Per relationship table, how many nodes have links that read differently from
        their two ends (Kùzu stores each direction apart; a damaged table lists an edge from
        one end only, and writes that reach it fail on an assertion). Each node's links are
        summed up (how many, and the sum of their ids) as read forward and as read backward,
        so the check reads every edge but returns a row per node. Empty when all agree."""
        found: dict[str, int] = {}
        for _, table, kind, *_ in self._rows("CALL show_tables() RETURN *"):
            if kind != "REL" or table not in schema.EXPECTED:
                continue
            # Names come from the database and the schema, never from a caller.
            for start, end, *_ in self._rows(f"CALL show_connection('{table}') RETURN *"):
                edge = f"[e:`{table}`]"
                forward = f"MATCH (a:`{start}`) OPTIONAL MATCH (a)-{edge}->(b:`{end}`)"
                backward = f"MATCH (b:`{end}`) OPTIONAL MATCH (b)<-{edge}-(a:`{start}`)"
                differ = 0
                for node in ("a", "b"):
                    tally = (
                        f" WITH {node}, e WHERE e IS NOT NULL"
                        f" RETURN offset(ID({node})), count(e), sum(offset(ID(e)))"
                    )
                    read = [set(map(tuple, self._rows(q + tally))) for q in (forward, backward)]
                    differ += len({row[0] for row in read[0] ^ read[1]})
                if differ:
                    found[table] = found.get(table, 0) + differ
        return found

    def observation_ids(self) -> set[str]:
        """Ids of every observation the graph holds, retracted ones included."""
        table = self._arrow("MATCH (o:Observation) RETURN o.id")
        return {str(v) for v in table.column(0).to_pylist()}

    def live_observation_ids(self) -> set[str]:
        """Ids of the observations that are not retracted (the search index holds these)."""
        table = self._arrow("MATCH (o:Observation) WHERE o.retracted_at IS NULL RETURN o.id")
        return {str(v) for v in table.column(0).to_pylist()}

    def evidence_ids(self) -> set[str]:
        """Ids of the observations that are evidence for a belief (pruning spares them)."""
        table = self._arrow("MATCH (o:Observation)-[:SUPPORTS]->(:Belief) RETURN DISTINCT o.id")
        return {str(v) for v in table.column(0).to_pylist()}

    def argued_ids(self) -> set[str]:
        """Ids of the observations that evidence supports (a belief of theirs) or that a
        contradiction names, either side (a merge spares them: the one kept in their place
        would carry neither link)."""
        found: set[str] = set()
        for query in (
            "MATCH (:Observation)-[:SUPPORTS]->(:Belief)-[:`OF`]->(o:Observation)"
            " RETURN DISTINCT o.id",
            "MATCH (o:Observation)-[:CONTRADICTS]-(:Observation) RETURN DISTINCT o.id",
        ):
            found.update(str(v) for v in self._arrow(query).column(0).to_pylist())
        return found

    def topic_summaries(self, names: Sequence[str]) -> dict[str, tuple[str, datetime]]:
        """The summary written for these Topic nodes, and when (nodes without one left out)."""
        rows = self._rows(
            "UNWIND $names AS n WITH n MATCH (s:Summary {topic: n}) RETURN s.topic, s.text, s.at",
            {"names": list(names)},
        )
        return {str(n): (str(text), _aware(at)) for n, text, at in rows}

    def summary_topics(self) -> list[str]:
        """The Topic names an entity summary is written for."""
        return [str(row[0]) for row in self._rows("MATCH (s:Summary) RETURN s.topic")]

    def has_summaries(self) -> bool:
        """Whether any entity summary is written (none: a store just migrated or imported)."""
        return bool(self._rows("MATCH (s:Summary) RETURN s.topic LIMIT 1"))

    def counts(self) -> dict[str, int]:
        """Node counts per table (for status and tests)."""
        out: dict[str, int] = {}
        for table in ("Agent", "Topic", "Episode", "Observation", "Belief", "Recall"):
            out[table] = int(self._rows(f"MATCH (n:{table}) RETURN count(n)")[0][0])
        return out

    def judged_result_count(self) -> int:
        """How many results feedback accepted or rejected (what the ranker learns from)."""
        return int(self._rows(JUDGED_RESULTS)[0][0])


class GraphWriter:
    """Statements allowed inside one write transaction; each takes a batch of rows (UNWIND).

    Nodes are matched by a key first projected with ``WITH r.x AS key``: Kùzu looks a plain
    variable up in the primary-key index, but joins a struct field (``{id: r.x}``) against a
    scan of the whole table, which made a batch's cost grow with the size of the memory.
    """

    def __init__(self, statements: _Statements) -> None:
        self._c = statements

    def _run(self, query: str, params: Row) -> None:
        self._c.execute(query, params)

    def run(self, query: str, params: Row) -> None:
        """A statement of a store module that holds its own Cypher (``exporting``)."""
        self._c.execute(query, params)

    def _column(self, query: str, params: Row) -> list[Any]:
        """The first column of a read inside the transaction."""
        return [row[0] for row in _all(self._c.execute(query, params))]

    def _links_of(self, labels: tuple[str, ...]) -> list[tuple[str, str, str]]:
        """(table, source label, target label) of every relationship table with an end
        among ``labels``, as the catalog has them (migrations add tables)."""
        found = []
        for table in self._column("CALL show_tables() WHERE type = 'REL' RETURN name", {}):
            for row in _all(self._c.execute(f"CALL show_connection('{table}') RETURN *", {})):
                source, target = str(row[0]), str(row[1])
                if source in labels or target in labels:
                    found.append((str(table), source, target))
        return found

    def ensure_agents(self, names: Sequence[str]) -> None:
        """Create the agents that do not exist yet."""
        if names:
            self._run("UNWIND $names AS n MERGE (:Agent {name: n})", {"names": list(names)})

    def ensure_topics(self, names: Sequence[str]) -> None:
        """Create the topics that do not exist yet."""
        if names:
            self._run(
                "UNWIND $names AS n MERGE (t:Topic {name: n}) ON CREATE SET t.kind = ''",
                {"names": list(names)},
            )

    def refill(self, column: str, rows: Sequence[tuple[str, str]]) -> None:
        """Store what start-up computed again for observations a migration cleared it of:
        (observation id, value) of ``column``, ``event_times`` (``event_time.stored``
        JSON) or ``text_key``."""
        assert column in REFILLED, column  # a name in the query, never the caller's text
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.id AS oid MATCH (o:Observation {id: oid})"
                f" SET o.{column} = r.value",
                {"rows": [{"id": i, "value": v} for i, v in rows]},
            )

    def summarize(self, rows: Sequence[tuple[str, str, bool]], at: datetime) -> None:
        """Write entity summaries of Topic nodes: (name, summary, whether a missing node is
        created, with kind ``entity``). Each replaces the one written before: deleted and
        inserted anew, never set in place (Kùzu 0.11.3 garbles STRING values set on rows a
        checkpoint wrote: schema migration 14)."""
        created = [n for n, _, create in rows if create]
        if created:
            self._run(
                "UNWIND $names AS n MERGE (t:Topic {name: n}) ON CREATE SET t.kind = 'entity'",
                {"names": created},
            )
        if rows:
            self._run(
                "UNWIND $names AS n MATCH (s:Summary {topic: n}) DELETE s",
                {"names": [n for n, _, _ in rows]},
            )
            self._run(
                "UNWIND $rows AS r CREATE (:Summary {topic: r.name, text: r.summary,"
                " at: CAST($at AS TIMESTAMP)})",
                {"rows": [{"name": n, "summary": text} for n, text, _ in rows], "at": _ts(at)},
            )

    def forget_summaries(self, topics: Sequence[str]) -> None:
        """Delete the summaries written for these Topic names."""
        if topics:
            self._run(
                "UNWIND $names AS n MATCH (s:Summary {topic: n}) DELETE s", {"names": list(topics)}
            )

    def forget_every_summary(self) -> None:
        """Delete every entity's summary (the next start writes them all anew)."""
        self._run("MATCH (s:Summary) DELETE s", {})

    def ensure_episodes(self, first_seen: dict[str, datetime]) -> None:
        """Create episodes on first use; keep each episode's earliest start."""
        if first_seen:
            self._run(
                "UNWIND $rows AS r WITH r, r.id AS eid MERGE (e:Episode {id: eid})"
                " ON CREATE SET e.session_id = eid, e.started_at = CAST(r.at AS TIMESTAMP)"
                " ON MATCH SET e.started_at = CASE WHEN CAST(r.at AS TIMESTAMP) < e.started_at"
                " THEN CAST(r.at AS TIMESTAMP) ELSE e.started_at END",
                {"rows": [{"id": k, "at": _ts(v)} for k, v in first_seen.items()]},
            )

    def create_observations(self, rows: Sequence[Row]) -> None:
        """Create observations, each held as a belief by its agent and mentioning its topics
        (agents and topics must exist).

        Each row holds the observation's fields plus ``agent``, ``belief`` (the belief id),
        ``since`` and ``topics`` (names); decimals arrive as strings or Decimals, times as
        aware datetimes. One statement creates the observation, the belief, and every link: a
        statement saved is about a tenth of a single remember's database time.
        """
        if not rows:
            return
        bound = [
            {
                **row,
                "confidence": format(row["confidence"], "f"),  # never exponent notation
                "observed_at": _ts(row["observed_at"]),
                "recorded_at": _ts(row["recorded_at"]),
                "valid_from": _ts(row["valid_from"]),
                "valid_until": _ts(row["valid_until"]),
                "stated_until": _ts(row["stated_until"]),
                "since": _ts(row["since"]),
            }
            for row in rows
        ]
        self._run(
            "UNWIND $rows AS r WITH r, r.agent AS agent MATCH (a:Agent {name: agent})"
            " CREATE (a)-[:HOLDS]->(:Belief {id: r.belief, since: CAST(r.since AS TIMESTAMP),"
            f" confidence: CAST(r.confidence AS {_DEC})}})"
            "-[:`OF`]->(o:Observation {id: r.id, seq: r.seq, text: r.text,"
            " text_key: r.text_key, observed_at: CAST(r.observed_at AS TIMESTAMP),"
            " recorded_at: CAST(r.recorded_at AS TIMESTAMP),"
            f" confidence: CAST(r.confidence AS {_DEC}), source: r.source, kind: r.kind,"
            " subject: r.subject, predicate: r.predicate, object: r.object,"
            " valid_from: CAST(r.valid_from AS TIMESTAMP),"
            " valid_until: CAST(r.valid_until AS TIMESTAMP),"
            " stated_until: CAST(r.stated_until AS TIMESTAMP), event_times: r.event_times,"
            " told_offset: CAST(r.told_offset AS INT16), hits: 0, impressions: 0})"
            # Its topics (which must exist) in the same statement.
            " WITH o, r UNWIND CAST(r.topics AS STRING[]) AS topic"
            " MATCH (t:Topic {name: topic}) CREATE (o)-[:MENTIONS]->(t)",
            {"rows": bound},
        )

    def create_records(self, records: Sequence[tuple[str, Record]]) -> None:
        """Explode records into the graph: (observation id, record). Each observation gets
        its type (``IS_A``) and one ``HAS_FIELD`` link per field to the field value's node,
        created on first use and shared by every record holding that value."""
        if not records:
            return
        self._run(
            "UNWIND $names AS n MERGE (:RecordType {name: n})",
            {"names": sorted({r.type for _, r in records})},
        )
        self._run(
            "UNWIND $rows AS r WITH r, r.o AS oid MATCH (o:Observation {id: oid})"
            " WITH o, r.t AS tname MATCH (t:RecordType {name: tname}) CREATE (o)-[:IS_A]->(t)",
            {"rows": [{"o": o, "t": r.type} for o, r in records]},
        )
        values: dict[str, Row] = {}
        links: list[Row] = []
        for obs, record in records:
            for position, f in enumerate(record.fields):
                key, field_key, cls, canonical = value_node(f)
                values[key] = {"k": key, "f": field_key, "c": cls, "v": canonical}
                links.append(
                    {"o": obs, "k": key, "p": position, "n": f.stored_name, "kind": f.kind,
                     "v": f.text()}
                )  # fmt: skip
        self._run(
            "UNWIND $rows AS r WITH r, r.k AS key MERGE (f:FieldValue {key: key})"
            " ON CREATE SET f.field = r.f, f.kind = r.c, f.value = r.v",
            {"rows": list(values.values())},
        )
        self._run(
            "UNWIND $rows AS r WITH r, r.o AS oid MATCH (o:Observation {id: oid})"
            " WITH r, o, r.k AS key MATCH (f:FieldValue {key: key})"
            " CREATE (o)-[:HAS_FIELD {position: r.p, name: r.n, kind: r.kind, value: r.v}]->(f)",
            {"rows": links},
        )

    def move_fields(self, links: Sequence[tuple[str, int, str, str, str, str]]) -> None:
        """Link record fields to the ``FieldValue`` their value is kept under now
        (``records.value_node``: an earlier version keyed a string as given, not composed):
        (observation id, position, field name, kind, value as text, the key it is linked to)
        per field. Each link is made anew and the old one deleted (Kùzu 0.11.3 garbles STRING
        values set on rows a checkpoint wrote), and a value no record holds any more goes."""
        if not links:
            return
        nodes: dict[str, Row] = {}
        moves: list[Row] = []
        for obs, position, name, kind, value, old in links:
            key, field_key, cls, canonical = value_node(RecordField.loaded(name, kind, value))
            nodes[key] = {"k": key, "f": field_key, "c": cls, "v": canonical}
            moves.append(
                {"o": obs, "p": position, "n": name, "kind": kind, "v": value, "old": old, "k": key}
            )
        self._run(
            "UNWIND $rows AS r WITH r, r.k AS key MERGE (f:FieldValue {key: key})"
            " ON CREATE SET f.field = r.f, f.kind = r.c, f.value = r.v",
            {"rows": list(nodes.values())},
        )
        self._run(
            "UNWIND $rows AS r WITH r, r.o AS oid, r.old AS old"
            " MATCH (o:Observation {id: oid})-[h:HAS_FIELD]->(f:FieldValue {key: old})"
            " WHERE h.position = r.p DELETE h",
            {"rows": moves},
        )
        self._run(
            "UNWIND $rows AS r WITH r, r.o AS oid MATCH (o:Observation {id: oid})"
            " WITH r, o, r.k AS key MATCH (f:FieldValue {key: key})"
            " CREATE (o)-[:HAS_FIELD {position: r.p, name: r.n, kind: r.kind, value: r.v}]->(f)",
            {"rows": moves},
        )
        self._run(
            "UNWIND $keys AS k WITH k AS key MATCH (f:FieldValue {key: key})"
            " WHERE NOT EXISTS { MATCH (f)<-[:HAS_FIELD]-(:Observation) } DELETE f",
            {"keys": sorted({old for *_, old in links})},
        )

    def ensure_predicates(self, rows: Sequence[tuple[str, str]], at: datetime) -> None:
        """Record the cardinality of predicates facts use for the first time:
        (normalised name, "one" or "many"); a predicate already recorded keeps its own."""
        if rows:
            self._run(
                "UNWIND $rows AS r MERGE (p:Predicate {name: r.n})"
                " ON CREATE SET p.cardinality = r.c, p.since = CAST(r.at AS TIMESTAMP)",
                {"rows": [{"n": n, "c": c, "at": _ts(at)} for n, c in rows]},
            )

    def hold_beliefs(self, rows: Sequence[tuple[str, str, str, datetime, Any]]) -> None:
        """Beliefs of agents in observations already held by others: (agent, belief id,
        observation id, since, confidence)."""
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.a AS agent MATCH (a:Agent {name: agent})"
                " WITH r, a, r.o AS oid MATCH (o:Observation {id: oid})"
                " CREATE (a)-[:HOLDS]->(:Belief {id: r.b, since: CAST(r.at AS TIMESTAMP),"
                f" confidence: CAST(r.c AS {_DEC})}})-[:`OF`]->(o)",
                {
                    "rows": [
                        {"a": a, "b": b, "o": o, "at": _ts(at), "c": format(c, "f")}
                        for a, b, o, at, c in rows
                    ]
                },
            )

    def restore_beliefs(self, rows: Sequence[tuple[str, str]], at: datetime) -> None:
        """Beliefs held again since ``at``: (withdrawn belief id, new belief id), the new one
        of the same agent in the same observation, with the same confidence and the
        evidence that supported the withdrawn one (copied: the claim is the same, and views
        before the forget still see the withdrawn one supported). A withdrawn belief that
        held until a later fact holds no more from ``at`` (``forgotten_at``): the new one
        holds the claim, and views from then list it alone."""
        if rows:
            pairs = {"rows": [{"old": old, "new": new} for old, new in rows]}
            self._run(
                "UNWIND $rows AS r WITH r.old AS oid MATCH (b:Belief {id: oid})"
                " WHERE b.held_until IS NOT NULL AND b.forgotten_at IS NULL"
                " SET b.forgotten_at = $at",
                {**pairs, "at": _ts(at)},
            )
            self._run(
                "UNWIND $rows AS r WITH r, r.old AS oid"
                " MATCH (a:Agent)-[:HOLDS]->(old:Belief {id: oid})-[:`OF`]->(o:Observation)"
                " CREATE (a)-[:HOLDS]->(:Belief {id: r.new, since: $at,"
                " confidence: old.confidence})-[:`OF`]->(o)",
                {**pairs, "at": _ts(at)},
            )
            self._run(
                "UNWIND $rows AS r WITH r, r.old AS oid"
                " MATCH (e:Observation)-[s:SUPPORTS]->(:Belief {id: oid})"
                " MATCH (n:Belief {id: r.new})"
                " CREATE (e)-[:SUPPORTS {weight: s.weight}]->(n)",
                pairs,
            )

    def withdraw_beliefs(
        self, beliefs: Sequence[tuple[str, datetime | None]], at: datetime
    ) -> None:
        """Beliefs their agents no longer hold (the observation stays for its others), as
        (belief id, the valid time until which it held for its agent; None: withdrawn
        outright)."""
        outright = [b for b, until in beliefs if until is None]
        if outright:
            self._run(
                "UNWIND $ids AS i WITH i AS bid MATCH (b:Belief {id: bid})"
                " SET b.retracted_at = $at",
                {"ids": outright, "at": _ts(at)},
            )
        # Apart: a list of NULL times alone has no type Kùzu can set a TIMESTAMP from.
        ended = [{"b": b, "until": _ts(until)} for b, until in beliefs if until is not None]
        if ended:
            self._run(
                "UNWIND $rows AS r WITH r, r.b AS bid MATCH (b:Belief {id: bid})"
                " SET b.retracted_at = $at, b.held_until = r.until",
                {"rows": ended, "at": _ts(at)},
            )

    def withdraw_outright(self, beliefs: Sequence[str], at: datetime) -> None:
        """Beliefs a later fact of their agent withdrew that no longer hold for it at any
        valid time either, from ``at`` (their agent forgot them): views at an earlier record
        time still see them held until that fact began."""
        if beliefs:
            self._run(
                "UNWIND $ids AS i WITH i AS bid MATCH (b:Belief {id: bid})"
                " SET b.forgotten_at = $at",
                {"ids": list(beliefs), "at": _ts(at)},
            )

    def learned_in(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Link observations to the episode they were learned in."""
        if pairs:
            self._run(
                "UNWIND $rows AS r WITH r, r.o AS oid MATCH (o:Observation {id: oid})"
                " MATCH (e:Episode {id: r.e})"
                " CREATE (o)-[:`FROM`]->(e)",
                {"rows": [{"o": o, "e": e} for o, e in pairs]},
            )

    def support(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """Evidence: (evidence observation id, belief id, weight as decimal text)."""
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.e AS eid MATCH (e:Observation {id: eid})"
                " WITH r, e, r.b AS bid MATCH (b:Belief {id: bid})"
                f" CREATE (e)-[:SUPPORTS {{weight: CAST(r.w AS {_DEC})}}]->(b)",
                {"rows": [{"e": e, "b": b, "w": w} for e, b, w in rows]},
            )

    def contradict(self, rows: Sequence[tuple[str, str, datetime]]) -> None:
        """Contradictions: (new observation id, contradicted observation id, at)."""
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.x AS xid MATCH (x:Observation {id: xid})"
                " WITH r, x, r.y AS yid MATCH (y:Observation {id: yid})"
                " CREATE (x)-[:CONTRADICTS {at: CAST(r.at AS TIMESTAMP)}]->(y)",
                {"rows": [{"x": x, "y": y, "at": _ts(at)} for x, y, at in rows]},
            )

    def undo_supersessions(self, rows: Sequence[tuple[str, str]], at: datetime) -> None:
        """(newer id, older id): the newer fact no longer ends the older one, from ``at``
        (the link stays, for views at an earlier record time)."""
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.n AS nid MATCH (n:Observation {id: nid})"
                " WITH r, n, r.o AS oid MATCH (n)-[s:SUPERSEDES]->(o:Observation {id: oid})"
                " WHERE s.dropped IS NULL SET s.dropped = CAST($at AS TIMESTAMP)",
                {"rows": [{"n": n, "o": o} for n, o in rows], "at": _ts(at)},
            )

    def supersede(self, rows: Sequence[tuple[str, str, datetime]], known: datetime) -> None:
        """(newer id, older id, at): link, recorded at ``known``, and end the older fact's
        validity at ``at``."""
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.n AS nid MATCH (n:Observation {id: nid})"
                " WITH r, n, r.o AS oid MATCH (o:Observation {id: oid})"
                " CREATE (n)-[:SUPERSEDES {at: CAST(r.at AS TIMESTAMP),"
                " known: CAST($known AS TIMESTAMP)}]->(o)"
                " SET o.valid_until = CASE WHEN o.valid_until IS NULL"
                " OR o.valid_until > CAST(r.at AS TIMESTAMP) THEN CAST(r.at AS TIMESTAMP)"
                " ELSE o.valid_until END",
                {
                    "rows": [{"n": n, "o": o, "at": _ts(at)} for n, o, at in rows],
                    "known": _ts(known),
                },
            )

    def record_recalls(
        self,
        recalls: Sequence[tuple[str, str, str | None, datetime, list[tuple[str, int, float, str]]]],
        embedder: str,
    ) -> None:
        """Recall events and what each returned: (id, query, agent, at, [(obs id, rank,
        score, features as JSON text or "")]), ranked with ``embedder`` (its fingerprint;
        "" when not known)."""
        if not recalls:
            return
        rows = [
            {
                "id": rid,
                "q": query,
                "a": agent,
                "at": _ts(at),
                "e": embedder,
                "f": [f"{rank} {f}" for _, rank, _, f in results if f],
            }
            for rid, query, agent, at, results in recalls
        ]
        # Recalls with and without features apart: a batch whose lists are all empty (or
        # null) binds them as text, which a STRING[] column refuses.
        for kept in (True, False):
            batch = [
                row if kept else {k: v for k, v in row.items() if k != "f"}
                for row in rows
                if bool(row["f"]) is kept
            ]
            if batch:
                self._run(
                    "UNWIND $rows AS r CREATE (:Recall {id: r.id, query: r.q, agent: r.a,"
                    " at: CAST(r.at AS TIMESTAMP), embedder: r.e"
                    + (", features: r.f})" if kept else "})"),
                    {"rows": batch},
                )
        returned = [
            {"r": rid, "o": obs, "rank": rank, "score": score}
            for rid, _, _, _, results in recalls
            for obs, rank, score, _ in results
        ]
        if returned:
            self._run(
                "UNWIND $rows AS x WITH x, x.r AS rid MATCH (r:Recall {id: rid})"
                " WITH x, r, x.o AS oid MATCH (o:Observation {id: oid})"
                " CREATE (r)-[:RETURNED {rank: x.rank, score: x.score}]->(o)",
                {"rows": returned},
            )

    def judge(
        self,
        recall_id: str,
        query_vector: npt.NDArray[np.float32],
        embedder: str,
        judgements: dict[str, str],
        at: datetime,
    ) -> None:
        """Judge a recall: every returned result gets an impression, accepted ones a hit,
        but those retracted since (forgotten, or retired by prune): out of use, their counts
        stay as they were (a prune's "no hits" stays true). Each keeps its judgement.

        Args:
            query_vector: the recall's query, as ``embedder`` (its fingerprint) embedded it.
            judgements: observation id -> "accepted", "rejected" or "" (shown, not judged),
                for every result the recall returned.
        """
        self._run(
            "MATCH (r:Recall {id: $id}) SET r.judged_at = $at", {"id": recall_id, "at": _ts(at)}
        )
        # Inserted whole, never set: Kùzu 0.11.3 garbles STRING values set on rows a
        # checkpoint wrote without one (schema migration 14).
        self._run(
            "CREATE (:JudgedQuery {recall: $id, vector: $v, embedder: $e})",
            {"id": recall_id, "v": query_vector_text(query_vector), "e": embedder},
        )
        rows = [{"o": o, "j": j} for o, j in judgements.items()]
        if rows:
            self._run(
                "MATCH (r:Recall {id: $id}) UNWIND $rows AS x"
                " MATCH (r)-[ret:RETURNED]->(o:Observation {id: x.o})"
                " WITH ret, o, x, CASE WHEN o.retracted_at IS NULL THEN 1 ELSE 0 END AS used"
                " SET ret.judgement = x.j, o.impressions = o.impressions + used,"
                " o.hits = o.hits + CASE WHEN x.j = 'accepted' THEN used ELSE 0 END",
                {"id": recall_id, "rows": rows},
            )

    def keep_query_vectors(
        self, vectors: dict[str, npt.NDArray[np.float32]], embedder: str
    ) -> None:
        """Store judged recalls' query vectors again, by recall id, as ``embedder`` (its
        fingerprint) embedded them: each replaces the one kept (deleted and inserted anew,
        never set in place: see ``judge``)."""
        rows = [{"i": i, "v": query_vector_text(v)} for i, v in vectors.items()]
        if rows:
            self._run(
                "UNWIND $ids AS i MATCH (q:JudgedQuery {recall: i}) DELETE q",
                {"ids": list(vectors)},
            )
            self._run(
                "UNWIND $rows AS x CREATE (:JudgedQuery {recall: x.i, vector: x.v, embedder: $e})",
                {"rows": rows, "e": embedder},
            )

    def stamp_recalls(self, embedder: str) -> None:
        """Mark every recall recorded before schema migration 10 as ranked by ``embedder``
        (its fingerprint; "" when not known)."""
        self._run("MATCH (r:Recall) WHERE r.embedder IS NULL SET r.embedder = $e", {"e": embedder})

    def co_activate(self, pairs: Sequence[tuple[str, str]]) -> None:
        """Count one more co-activation for each (a, b) pair of accepted results."""
        if not pairs:
            return
        rows = [{"k": f"{a} {b}", "a": a, "b": b} for a, b in pairs]
        self._run(
            # Only pairs of stored observations (a purge may have taken one meanwhile).
            "UNWIND $rows AS r WITH r, r.a AS aid MATCH (:Observation {id: aid})"
            " WITH r, r.b AS bid MATCH (:Observation {id: bid})"
            " WITH r, r.k AS key MERGE (p:CoActivation {pair: key})"
            " ON CREATE SET p.a = r.a, p.b = r.b, p.count = 1"
            " ON MATCH SET p.count = p.count + 1",
            {"rows": rows},
        )

    def end_validity(self, rows: Sequence[tuple[str, datetime | None]]) -> None:
        """Set facts' ``valid_until`` (None: valid again with no end)."""
        if rows:
            self._run(
                "UNWIND $rows AS r WITH r, r.id AS oid MATCH (o:Observation {id: oid})"
                " SET o.valid_until = CAST(r.until AS TIMESTAMP)",
                {"rows": [{"id": i, "until": _ts(u)} for i, u in rows]},
            )

    def retract(self, observation_id: str, at: datetime) -> None:
        """Mark an observation retracted (kept for audit)."""
        self._run(
            "MATCH (o:Observation {id: $id}) SET o.retracted_at = $at",
            {"id": observation_id, "at": _ts(at)},
        )

    def retract_all(self, observation_ids: Sequence[str], at: datetime) -> None:
        """Mark many observations retracted at one time (a prune: kept for audit)."""
        if observation_ids:
            self._run(
                "UNWIND $ids AS i WITH i MATCH (o:Observation {id: i}) SET o.retracted_at = $at",
                {"ids": list(observation_ids), "at": _ts(at)},
            )

    def purge(self, observation_id: str) -> list[str]:
        """Delete an observation, its beliefs and every link to either; returns belief ids."""
        beliefs = self._column(
            "MATCH (b:Belief)-[:`OF`]->(o:Observation {id: $id}) RETURN b.id",
            {"id": observation_id},
        )
        values = self._column(
            "MATCH (:Observation {id: $id})-[:HAS_FIELD]->(f:FieldValue) RETURN f.key",
            {"id": observation_id},
        )
        # Links first, a table at a time, then the nodes. Kùzu 0.11.3 replays a DETACH
        # DELETE from its write-ahead log wrongly: after a kill before the next checkpoint,
        # another belief's OF link read from its belief was gone (and from its observation
        # was not). Plain deletes replay right.
        for table, source, target in self._links_of(("Belief", "Observation")):
            for end, label in (("a", source), ("b", target)):
                if label == "Belief" and beliefs:
                    self._run(
                        f"UNWIND $ids AS i MATCH (a:{source})-[r:`{table}`]->(b:{target})"
                        f" WHERE {end}.id = i DELETE r",
                        {"ids": beliefs},
                    )
                elif label == "Observation":
                    self._run(
                        f"MATCH (a:{source})-[r:`{table}`]->(b:{target})"
                        f" WHERE {end}.id = $id DELETE r",
                        {"id": observation_id},
                    )
        if beliefs:
            self._run("UNWIND $ids AS i MATCH (b:Belief {id: i}) DELETE b", {"ids": beliefs})
        self._run("MATCH (o:Observation {id: $id}) DELETE o", {"id": observation_id})
        self._run(
            "MATCH (p:CoActivation) WHERE p.a = $id OR p.b = $id DELETE p", {"id": observation_id}
        )
        if values:
            # A value no other record holds goes with its last record.
            self._run(
                "UNWIND $keys AS k WITH k AS key MATCH (f:FieldValue {key: key})"
                " WHERE NOT EXISTS { MATCH (f)<-[:HAS_FIELD]-(:Observation) } DELETE f",
                {"keys": values},
            )
        return beliefs


#: When a SUPERSEDES link ``s`` from ``n`` to ``o`` was recorded: as it says (migration 16),
#: or, made before, with the later of its two facts (an older fact can arrive late).
_LINK_KNOWN = (
    "coalesce(s.known, CASE WHEN o.recorded_at > n.recorded_at THEN o.recorded_at"
    " ELSE n.recorded_at END)"
)

#: Until when a SUPERSEDES link ``s`` from ``n`` ended ``o``: the earlier of the newer fact's
#: retraction and the forget that undid the link (``dropped``), or NULL while it holds.
_LINK_UNTIL = (
    "CASE WHEN s.dropped IS NOT NULL AND (n.retracted_at IS NULL OR s.dropped < n.retracted_at)"
    " THEN s.dropped ELSE n.retracted_at END"
)


def _all(result: kuzu.QueryResult | list[kuzu.QueryResult]) -> list[list[Any]]:
    assert isinstance(result, kuzu.QueryResult)
    rows: list[list[Any]] = []
    while result.has_next():
        rows.append(list(result.get_next()))
    return rows
