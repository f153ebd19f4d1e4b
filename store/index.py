"""The searchable side of the memory in LanceDB: one row per recallable observation.

Rows carry the graph's observation id, the text and the embedding: what start-up loads into
the working memory (vectors) and rebuilds its full-text index from (texts come from the
graph). The graph is the source of truth; this index can always be rebuilt from it
(``Memory`` repairs it at start-up). The embedder's fingerprint is kept in the table's schema
metadata, so an index written by another model is detected and rebuilt. A table that cannot
be read (a fragment missing, cut short or overwritten) is reported in ``problem`` and left as
it is: whether to rebuild it is the caller's decision, since it may hold the only copy of the
texts when the graph is damaged too.

A long text's passages have vectors of their own (``passage_vectors``), kept in a second
table, ``passages`` (the observation's id, the passage's number from 0, the vector), not as
rows of the first (whose ids are the observations'), under the same fingerprint rules:
dropped and rebuilt with the rows. It holds no text, so one that cannot be read is made anew
(the repair embeds the passages again).

Writes come in batches (one Lance fragment and version per ``add``, applied by the
``IndexWriter`` thread), and ``maintain`` compacts fragments once enough rows arrived.
"""

from __future__ import annotations

import logging
import shutil
import threading
import warnings
from collections.abc import Iterator, Sequence
from datetime import timedelta
from pathlib import Path

import lancedb
import numpy as np
import pyarrow as pa

from doxa.store.embedder import Vectors, are_embeddings

log = logging.getLogger(__name__)

TABLE = "observations"
PASSAGES = "passages"
_FINGERPRINT_KEY = b"doxa.embedder"
#: Size of each of LanceDB's caches (index, metadata) for the search index.
_CACHE_BYTES = 16 * 1024 * 1024


def _quote(value: str) -> str:
    """A SQL string literal for Lance filters: ids are validated, and quotes doubled anyway."""
    return "'" + value.replace("'", "''") + "'"


class SearchIndex:
    """LanceDB table of observation texts and vectors.

    Args:
        path: the LanceDB directory.
        dim: embedding dimension.
        fingerprint: the embedder's identity; a table written by another embedder is dropped
            (``rebuilt`` and ``foreign`` are then True and the caller re-embeds every
            observation).
        read_only: open for inspection: a table of another embedder is kept and reported in
            ``foreign``, and a missing one is not created (``problem`` says so).

    Attributes:
        problem: why the table could not be read, or None; see ``reset``.
    """

    def __init__(self, path: Path, dim: int, fingerprint: str, read_only: bool = False) -> None:
        self._path = path
        # LanceDB's default caches keep metadata of every version it has seen: each append
        # makes one, and a long-running server grew by ~100 KB per append (279 MB over 2,000
        # single-row appends). Nothing here uses a Lance index; small caches bound it.
        self._db = lancedb.connect(
            str(path),
            session=lancedb.Session(
                index_cache_size_bytes=_CACHE_BYTES, metadata_cache_size_bytes=_CACHE_BYTES
            ),
        )
        self._dim = dim
        self._lock = threading.Lock()
        self._since_maintenance = 0
        self.rebuilt = False
        self.problem: str | None = None
        self.foreign = False
        self._schema = pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("text", pa.string()),
                pa.field("vector", pa.list_(pa.float32(), dim)),
            ],
            metadata={_FINGERPRINT_KEY: fingerprint.encode()},
        )
        self._passage_schema = pa.schema(
            [
                pa.field("id", pa.string(), nullable=False),
                pa.field("passage", pa.int32(), nullable=False),
                pa.field("vector", pa.list_(pa.float32(), dim)),
            ],
            metadata={_FINGERPRINT_KEY: fingerprint.encode()},
        )
        self._rows = 0
        self._fingerprint = fingerprint
        names = set(self._db.list_tables().tables)
        if TABLE in names:
            try:
                table = self._db.open_table(TABLE)
                metadata = table.schema.metadata or {}
                rows = int(table.count_rows())
            except (OSError, RuntimeError, ValueError) as error:  # Lance reports damage so
                self.problem = error_line(error)
                return
            if read_only:
                self.foreign = metadata.get(_FINGERPRINT_KEY) != fingerprint.encode()
                self._table, self._rows = table, rows
                return
            if metadata.get(_FINGERPRINT_KEY) != fingerprint.encode():
                log.warning("search index was built by another embedder; rebuilding it")
                self.foreign = True
                self._db.drop_table(TABLE)
                self.rebuilt = True
            else:
                self._table, self._rows = table, rows
        if read_only and TABLE not in names:
            self.problem = "it has no table yet"
            return
        if TABLE not in names or self.rebuilt:
            self._table = self._db.create_table(TABLE, schema=self._schema)
        self._passages = self._open_passages(PASSAGES in names)

    def _open_passages(self, exists: bool) -> lancedb.table.Table:
        """The passages table: as it is if it can be read and matches the rows' embedder,
        else made anew, empty (its passages are embedded again by the repair)."""
        if exists:
            try:
                table = self._db.open_table(PASSAGES)
                metadata = table.schema.metadata or {}
                table.count_rows()
                if (
                    not self.rebuilt
                    and metadata.get(_FINGERPRINT_KEY) == self._fingerprint.encode()
                ):
                    return table
            except (OSError, RuntimeError, ValueError) as error:
                log.warning(
                    "search index: passages cannot be read (%s); rebuilding them", error_line(error)
                )
            self._drop(PASSAGES)
        return self._db.create_table(PASSAGES, schema=self._passage_schema)

    def _drop(self, name: str) -> None:
        try:
            self._db.drop_table(name)
        except (OSError, RuntimeError, ValueError):  # too damaged to drop: remove it
            shutil.rmtree(self._path / f"{name}.lance", ignore_errors=True)

    def reset(self, reason: str) -> None:
        """Drop the table and start an empty one (the caller embeds every observation
        again): for a table that cannot be read or holds vectors that are no embeddings."""
        log.warning("search index: %s; rebuilding it from the graph", reason)
        with self._lock:
            self._drop(TABLE)
            self._table = self._db.create_table(TABLE, schema=self._schema)
            self._drop(PASSAGES)
            self._passages = self._db.create_table(PASSAGES, schema=self._passage_schema)
            self._rows = 0
            self._since_maintenance = 0
            self.rebuilt = True
            self.problem = None

    def clear_passages(self) -> None:
        """Drop every passage (the caller embeds them again): for a table that cannot be read."""
        with self._lock:
            self._drop(PASSAGES)
            self._passages = self._db.create_table(PASSAGES, schema=self._passage_schema)

    def count(self) -> int:
        """Number of rows."""
        return int(self._table.count_rows())

    def add(self, ids: Sequence[str], texts: Sequence[str], vectors: Vectors) -> None:
        """Add rows in one batch (one fragment)."""
        if not ids:
            return
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        batch = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "text": pa.array(list(texts), pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, self._dim),
            },
            schema=self._schema,
        )
        with self._lock:
            self._table.add(batch)
            self._since_maintenance += len(ids)
            self._rows += len(ids)

    def add_passages(self, ids: Sequence[str], numbers: Sequence[int], vectors: Vectors) -> None:
        """Add passage vectors in one batch: ``ids[i]``'s passage ``numbers[i]``."""
        if not ids:
            return
        flat = pa.array(np.ascontiguousarray(vectors, dtype=np.float32).reshape(-1))
        batch = pa.table(
            {
                "id": pa.array(list(ids), pa.string()),
                "passage": pa.array(list(numbers), pa.int32()),
                "vector": pa.FixedSizeListArray.from_arrays(flat, self._dim),
            },
            schema=self._passage_schema,
        )
        with self._lock:
            self._passages.add(batch)
            self._since_maintenance += len(ids)

    def delete(self, ids: Sequence[str], rows: bool = True) -> None:
        """Remove rows by id, and their passages. ``rows`` False: the passages alone."""
        if not ids:
            return
        with self._lock:
            for start in range(0, len(ids), 500):
                chunk = ids[start : start + 500]
                where = "id IN (" + ", ".join(_quote(i) for i in chunk) + ")"
                if rows:
                    self._table.delete(where)
                self._passages.delete(where)
            self._since_maintenance += len(ids)
            self._rows = int(self._table.count_rows())

    def scrub(self, batch_rows: int = 8192) -> None:
        """Write the table anew from the rows it holds, and drop its earlier versions: a
        deleted row's words leave its files. (A compaction rewrites only a fragment of which
        a tenth is deleted: a purged text stayed in the file of a table of ten rows or more,
        marked deleted.) Reads every row, a range at a time, then writes them in one commit:
        one that fails leaves the table as it was (written in several, a failure left part
        of it, and the retry's clean-up dropped the whole)."""
        with self._lock:
            rows = int(self._table.count_rows())
            kept = [
                self._table.search()
                .select(["id", "text", "vector"])
                .offset(start)
                .limit(min(batch_rows, rows - start))
                .to_arrow()
                .cast(self._schema)
                for start in range(0, rows, batch_rows)
            ]
            self._table.add(
                pa.concat_tables(kept) if kept else self._schema.empty_table(), mode="overwrite"
            )
            # A passage holds no words, but its vector tells of them: rewritten likewise.
            count = int(self._passages.count_rows())
            passages = [
                self._passages.search()
                .select(["id", "passage", "vector"])
                .offset(start)
                .limit(min(batch_rows, count - start))
                .to_arrow()
                .cast(self._passage_schema)
                for start in range(0, count, batch_rows)
            ]
            self._passages.add(
                pa.concat_tables(passages) if passages else self._passage_schema.empty_table(),
                mode="overwrite",
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                self._table.optimize(cleanup_older_than=timedelta(seconds=0))
                self._passages.optimize(cleanup_older_than=timedelta(seconds=0))
            self._since_maintenance = 0
            self._rows = int(self._table.count_rows())

    def ids(self) -> list[str]:
        """Every row's id."""
        # A projected scan: reading the whole table would load every text and vector too.
        table = self._table.search().select(["id"]).limit(max(self._rows, 1)).to_arrow()
        return [str(v) for v in table.column("id").to_pylist()]

    def texts(self, ids: Sequence[str]) -> dict[str, str]:
        """The texts of the rows of ``ids`` that the index holds."""
        found: dict[str, str] = {}
        for start in range(0, len(ids), 500):
            chunk = ids[start : start + 500]
            where = "id IN (" + ", ".join(_quote(i) for i in chunk) + ")"
            rows = self._table.search().where(where).select(["id", "text"]).limit(len(chunk))
            table = rows.to_arrow()
            found |= dict(
                zip(
                    (str(v) for v in table.column("id").to_pylist()),
                    (str(v) for v in table.column("text").to_pylist()),
                    strict=True,
                )
            )
        return found

    def vectors(self, batch_rows: int = 2048) -> Iterator[tuple[list[str], Vectors]]:
        """Every row's id and vector, a range of rows at a time (to load the working memory).

        One query per range, not one streamed scan: the stream reads ahead as far as it
        likes, and at 100k rows it briefly held about 190 MB; ranges of 2,048 rows hold about
        40 MB at most, in the same time (0.13 s). Call it while nothing writes the table
        (start-up), so the ranges tile one version of it.
        """
        rows = int(self._table.count_rows())
        for start in range(0, rows, batch_rows):
            query = self._table.search().select(["id", "vector"])
            batch = query.offset(start).limit(min(batch_rows, rows - start)).to_arrow()
            ids = [str(v) for v in batch.column("id").to_pylist()]
            if not ids:
                break
            column = batch.column("vector").combine_chunks()
            values = column.values.to_numpy(zero_copy_only=False)
            matrix: Vectors = np.asarray(values, dtype=np.float32).reshape(len(ids), self._dim)
            yield ids, matrix

    def passage_vectors(
        self, batch_rows: int = 2048
    ) -> Iterator[tuple[list[str], list[int], Vectors]]:
        """Every passage's id, number and vector, a range at a time (as ``vectors``)."""
        rows = int(self._passages.count_rows())
        for start in range(0, rows, batch_rows):
            query = self._passages.search().select(["id", "passage", "vector"])
            batch = query.offset(start).limit(min(batch_rows, rows - start)).to_arrow()
            ids = [str(v) for v in batch.column("id").to_pylist()]
            if not ids:
                break
            numbers = [int(v) for v in batch.column("passage").to_pylist()]
            column = batch.column("vector").combine_chunks()
            values = column.values.to_numpy(zero_copy_only=False)
            matrix: Vectors = np.asarray(values, dtype=np.float32).reshape(len(ids), self._dim)
            yield ids, numbers, matrix

    def passages_held(self) -> tuple[int, int] | None:
        """For ``doxa check`` (a read-only index too): the passages table's rows and those
        whose vectors are no embeddings; None when it has no such table (a memory made
        before passages were kept).

        Raises:
            OSError, RuntimeError, ValueError: the table cannot be read.
        """
        if not hasattr(self, "_passages"):  # read only: the table is not opened at start
            if PASSAGES not in set(self._db.list_tables().tables):
                return None
            self._passages = self._db.open_table(PASSAGES)
        rows = not_unit = 0
        for ids, _numbers, vectors in self.passage_vectors():
            rows += len(ids)
            not_unit += int(np.count_nonzero(~are_embeddings(vectors)))
        return rows, not_unit

    def maintain(self, every: int = 2000, force: bool = False) -> bool:
        """Compact fragments (``optimize``) after ``every`` changed rows, or sooner while the
        table is small: every ``add`` makes a fragment, and reading many small ones at
        start-up is slow. Earlier versions go with it. ``force``: now, whatever changed.

        Returns True when maintenance ran.
        """
        with self._lock:
            threshold = min(every, max(32, self._rows // 4))
            if not force and (self._since_maintenance < threshold or self._rows == 0):
                return False
            self._since_maintenance = 0
            with warnings.catch_warnings():
                # One process owns the data directory, so no reader holds an old version.
                warnings.simplefilter("ignore", UserWarning)
                self._table.optimize(cleanup_older_than=timedelta(seconds=0))
                self._passages.optimize(cleanup_older_than=timedelta(seconds=0))
            return True


def error_line(error: BaseException) -> str:
    """Lance's message without the source location it appends."""
    return str(error).splitlines()[0].split(", /")[0]
