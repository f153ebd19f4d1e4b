"""The working memory's embeddings, one byte per dimension, scanned by ONNX Runtime.

Recall compares the query with every stored embedding. Kept as float32, 100k memories of
384 dimensions take 153 MB and numpy scans them in about 4.7 ms here. Kept as int8 (scalar
quantization: one scale per vector, each value rounded to 1/127 of the vector's largest), they
take 38 MB, and ONNX Runtime's integer matrix product (MLAS, uint8 x int8) scans them: a scan
reads a quarter of the bytes, and a scan is bound by reading them.

The price is precision: a similarity is within about 0.005 of the exact cosine for unit
vectors (rows rounded to 8 bits, the query to 7: see ``QUERY_LEVELS``), far below the gaps
ranking acts on; the few hundred candidates a recall scores are scored again with the query
unrounded (``refined``), which keeps LoCoMo's figures those of float32 (bench/locomo.py).
The exact float32 vectors stay in the search index (LanceDB).

Two layouts, of the same values and the same integer dot products (so the same similarities),
one of which is faster on a given CPU: measured once per process (``_layout``) on a block of
synthetic rows, and every matrix is kept in the faster.

- ``rows``: each block holds a run of rows, one row per vector (``[rows, dim]``), stored as
  uint8 (value + ``ROW_OFFSET``), so one product ``block[rows, dim] @ query[dim, 1]`` scores
  the block, and a scan passes only the rows in use (a prefix of a block is a view).
- ``columns``: each block holds a run of rows as columns (``[dim, rows]``, int8), and one
  product ``query[1, dim] @ block[dim, rows]`` scores it, the query as uint8 (value +
  ``QUERY_OFFSET``; each row's sum, kept, takes the offset out again). A block is scanned
  whole, so blocks after the first are ``COLUMN_BLOCK`` rows: the unused end of the last one
  costs little.

On an AMD EPYC (2026-12-06), 100k rows: ``rows`` 6.8-7.7 ms, ``columns`` 2.8 ms (numpy's
float32 scan 3.5 ms); on the machine of 2026-12-01 ``rows`` took 2.2 ms and ``columns`` five
to ten times more. The first block is sized to the memory at load time; later ones add
``BLOCK_ROWS`` (``COLUMN_BLOCK``) rows, so growing never copies what is stored.
"""

from __future__ import annotations

import base64
import functools
import threading
import time
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

#: Rows added per block when the memory grows past its first block (12.6 MB at 384 dims).
BLOCK_ROWS = 32_768
#: ... in the ``columns`` layout, which scans a block whole (1.5 MB at 384 dims).
COLUMN_BLOCK = 4_096
#: Quantized values lie in [-LEVELS, LEVELS].
LEVELS = 127
#: Stored rows are value + ROW_OFFSET, in [1, 255] (the fast MLAS kernel is uint8 x int8).
ROW_OFFSET = 128
#: The query's values lie in [-QUERY_LEVELS, QUERY_LEVELS], as int8. On CPUs without VNNI the
#: kernel adds pairs of uint8 x int8 products in int16, which saturates past 32,767: with full
#: 8-bit queries similarities were off by up to 0.15 there; 2 x 255 x 63 always fits.
QUERY_LEVELS = 63
#: In the ``columns`` layout the query is the uint8 side: value + 64 lies in [1, 127], so the
#: int16 pair sums of a CPU without VNNI (2 x 127 x 127) fit as well.
QUERY_OFFSET = 64

#: An ONNX model of one MatMulInteger node: rows uint8 [rows, dim] x query int8 [dim, 1] ->
#: int32 [rows, 1]. Written out (146 bytes) so the server need not import ``onnx`` to build
#: it; tests/store/test_vector_matrix.py rebuilds it with onnx.helper and compares.
SCAN_MODEL = base64.b64decode(
    "CAgSBGRveGE6gQEKIgoEcm93cwoFcXVlcnkSBGRvdHMiDU1hdE11bEludGVnZXISBHNjYW5aHQoEcm93cxIVChMIAhIP"
    "CgYSBHJvd3MKBRIDZGltWhoKBXF1ZXJ5EhEKDwgDEgsKBRIDZGltCgIIAWIaCgRkb3RzEhIKEAgGEgwKBhIEcm93cwoC"
    "CAFCBAoAEA0="
)

#: The ``columns`` layout's model: query uint8 [1, dim] x columns int8 [dim, rows] -> int32
#: [1, rows] (152 bytes; rebuilt by the test as ``SCAN_MODEL`` is).
COLUMN_SCAN_MODEL = base64.b64decode(
    "CAgSBGRveGE6hwEKJQoFcXVlcnkKB2NvbHVtbnMSBGRvdHMiDU1hdE11bEludGVnZXISBHNjYW5aGgoFcXVlcnkSEQoP"
    "CAISCwoCCAEKBRIDZGltWiAKB2NvbHVtbnMSFQoTCAMSDwoFEgNkaW0KBhIEcm93c2IaCgRkb3RzEhIKEAgGEgwKAggB"
    "CgYSBHJvd3NCBAoAEA0="
)

Layout = Literal["rows", "columns"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

_session_lock = threading.Lock()


@functools.cache
def _scan_session(layout: Layout = "rows") -> Any:
    """One ONNX Runtime session per layout for every matrix (thread-safe to run; built once)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    # One thread: recall runs its full-text search on the other core during the scan.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    model = SCAN_MODEL if layout == "rows" else COLUMN_SCAN_MODEL
    with _session_lock:
        return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


_layout_lock = threading.Lock()


@functools.cache
def _layout() -> Layout:
    """The layout this CPU scans faster (``_timed_layout``), timed once: two threads that
    ask at once would skew each other's times."""
    with _layout_lock:
        return _timed_layout()


def _timed_layout() -> Layout:
    """The layout this CPU scans faster: each times a block of 32,768 synthetic rows a few
    times (about 50 ms, once per process), the faster's best time wins."""
    rng = np.random.default_rng(0)
    # A few thousand rows, stored again and again: the process keeps no 50 MB sample.
    sample = rng.standard_normal((COLUMN_BLOCK, 384)).astype(np.float32)
    query = sample[0]
    best: dict[Layout, float] = {}
    for layout in ("rows", "columns"):
        matrix = VectorMatrix(384, BLOCK_ROWS, layout)
        for start in range(0, BLOCK_ROWS, COLUMN_BLOCK):
            matrix.put(np.arange(start, start + COLUMN_BLOCK), sample)
        matrix.similarity(query, BLOCK_ROWS)  # the session built, the pages touched
        times = []
        for _ in range(5):
            began = time.perf_counter()
            matrix.similarity(query, BLOCK_ROWS)
            times.append(time.perf_counter() - began)
        best[layout] = min(times)
    return "columns" if best["columns"] < best["rows"] else "rows"


def quantize(vectors: FloatArray, levels: int = LEVELS) -> tuple[npt.NDArray[np.int8], FloatArray]:
    """Rows of ``vectors`` as integers in [-levels, levels] and each row's scale
    (value = integer x scale)."""
    vectors = np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1)
    largest = np.abs(vectors).max(axis=1) if vectors.size else np.zeros(len(vectors))
    scales = np.where(largest > 0, largest / levels, 1.0).astype(np.float32)
    values = np.rint(vectors / scales[:, None])
    return np.clip(values, -levels, levels).astype(np.int8), scales


class VectorMatrix:
    """Embeddings by row, quantized to int8, with an approximate dot-product scan.

    Args:
        dim: embedding dimension.
        capacity: rows the first block holds.
        layout: how the blocks hold the rows (default: the one this CPU scans faster).
    """

    def __init__(self, dim: int, capacity: int = 1024, layout: Layout | None = None) -> None:
        self.dim = dim
        self.layout: Layout = layout or _layout()
        self._blocks: list[npt.NDArray[np.uint8] | npt.NDArray[np.int8]] = []
        self._starts: list[int] = []
        self._capacity = 0
        self._scales: FloatArray = np.zeros(0, dtype=np.float32)
        self._present: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        # Each row's sum of values (``columns``): takes the query's offset out of a dot.
        self._sums: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._reserve(max(capacity, 1))

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Per row (up to the capacity): whether it holds a vector."""
        return self._present

    @property
    def nbytes(self) -> int:
        """Bytes held by the blocks and per-row arrays."""
        per_row = self._scales.nbytes + self._present.nbytes + self._sums.nbytes
        return sum(b.nbytes for b in self._blocks) + per_row

    def _reserve(self, rows: int) -> None:
        if rows <= self._capacity:
            return
        growth = BLOCK_ROWS if self.layout == "rows" else COLUMN_BLOCK
        size = max(rows - self._capacity, growth) if self._blocks else rows
        if self.layout == "rows":
            # ROW_OFFSET is a stored zero: a row never written scores 0.
            self._blocks.append(np.full((size, self.dim), ROW_OFFSET, dtype=np.uint8))
        else:
            self._blocks.append(np.zeros((self.dim, size), dtype=np.int8))
        self._starts.append(self._capacity)
        self._capacity += size
        for name in ("_scales", "_present", "_sums"):
            old = getattr(self, name)
            new = np.zeros(self._capacity, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _where(
        self, rows: IntArray
    ) -> list[tuple[npt.NDArray[np.uint8] | npt.NDArray[np.int8], IntArray, IntArray]]:
        """For each block holding some of ``rows``: the block, the positions in ``rows`` and
        the rows' offsets within the block."""
        which = np.searchsorted(np.asarray(self._starts), rows, side="right") - 1
        found = []
        for index, (start, block) in enumerate(zip(self._starts, self._blocks, strict=True)):
            chosen = np.flatnonzero(which == index)
            if chosen.size:
                found.append((block, chosen, rows[chosen] - start))
        return found

    def put(self, rows: IntArray | list[int], vectors: FloatArray) -> None:
        """Store ``vectors`` (one per row, float32) at ``rows``."""
        rows = np.asarray(rows, dtype=np.int64).reshape(-1)
        if len(rows) == 0:
            return
        values, scales = quantize(vectors)
        if values.shape[1] != self.dim:
            raise ValueError(f"vectors have {values.shape[1]} dimensions, not {self.dim}")
        self._reserve(int(rows.max()) + 1)
        self._scales[rows] = scales
        self._present[rows] = True
        if self.layout == "columns":
            self._sums[rows] = values.sum(axis=1, dtype=np.int32)
            for block, chosen, inside in self._where(rows):
                block[:, inside] = values[chosen].T
            return
        stored = (values.astype(np.int16) + ROW_OFFSET).astype(np.uint8)
        for block, chosen, inside in self._where(rows):
            block[inside] = stored[chosen]

    def clear(self, row: int) -> None:
        """Forget the vector at ``row`` (its similarity becomes 0); a row beyond those
        stored has none yet (its embedding had not landed: a forget right after a batch)."""
        if row >= len(self._present):
            return
        for block, _, inside in self._where(np.array([row], dtype=np.int64)):
            if self.layout == "columns":
                block[:, inside] = 0
            else:
                block[inside] = ROW_OFFSET
        self._present[row] = False
        self._sums[row] = 0

    def _values(self, rows: IntArray) -> FloatArray:
        """The stored ``rows`` as quantized values (float32, unscaled)."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        for block, chosen, inside in self._where(rows):
            if self.layout == "columns":
                out[chosen] = block[:, inside].T.astype(np.float32)
            else:
                out[chosen] = block[inside].astype(np.float32) - ROW_OFFSET
        return out

    def refined(self, query: FloatArray, rows: IntArray) -> FloatArray:
        """Dot products of the float ``query`` with the stored ``rows``: only the rows are
        rounded, not the query (the scan rounds both), for the few candidates ranking scores.
        Rows without a vector score 0."""
        if len(rows) == 0:
            return np.zeros(0, dtype=np.float32)
        flat = np.asarray(query, dtype=np.float32).ravel()
        scaled: FloatArray = (self._values(rows) @ flat) * self._scales[rows]
        return scaled

    def vectors(self, rows: IntArray) -> FloatArray:
        """The stored ``rows`` as float32 (as rounded; zeros where a row has no vector)."""
        scaled: FloatArray = self._values(rows) * self._scales[rows][:, None]
        return scaled

    def similarity(self, query: FloatArray, n: int) -> FloatArray:
        """Approximate dot products of ``query`` with rows ``0..n-1`` (cosines for unit
        vectors, within about 0.005)."""
        out = np.zeros(n, dtype=np.float32)
        if n == 0:
            return out
        values, scale = quantize(np.asarray(query, dtype=np.float32).reshape(1, -1), QUERY_LEVELS)
        session = _scan_session(self.layout)
        if self.layout == "columns":
            shifted = (values.astype(np.int16) + QUERY_OFFSET).astype(np.uint8)
            for start, block in zip(self._starts, self._blocks, strict=True):
                if start >= n:
                    break
                count = min(block.shape[1], n - start)
                dots = session.run(None, {"query": shifted, "columns": block})[0][0, :count]
                # Each dot is too large by QUERY_OFFSET x the row's sum.
                dots = dots - QUERY_OFFSET * self._sums[start : start + count]
                out[start : start + count] = dots * (self._scales[start : start + count] * scale[0])
            return out
        column = np.ascontiguousarray(values.reshape(-1, 1))
        # Each stored value carries ROW_OFFSET: every dot is too large by that x the query's sum.
        excess = ROW_OFFSET * int(values.sum(dtype=np.int64))
        for start, block in zip(self._starts, self._blocks, strict=True):
            if start >= n:
                break
            count = min(len(block), n - start)
            # A prefix of rows is a view: only the rows in use are read.
            dots = session.run(None, {"rows": block[:count], "query": column})[0][:, 0]
            out[start : start + count] = (dots - excess) * (
                self._scales[start : start + count] * scale[0]
            )
        return out
