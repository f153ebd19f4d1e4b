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

Layout: each block holds a run of rows, one row per vector (``[rows, dim]``, C order), stored
as uint8 (value + ``ROW_OFFSET``) so that one product ``block[rows, dim] @ query[dim, 1]``
scores the block, and a scan passes only the rows in use: a prefix of a block is a view, never
a copy. (Rows as columns, ``query[1, dim] @ block[dim, rows]``, cost 5-10 times more per row
with ONNX Runtime 1.32 on this machine, and a block had to be scanned whole: a memory of 4,500
rows in a block of 32,768 paid for all of them.) The first block is sized to the memory at
load time; later ones add ``BLOCK_ROWS`` rows, so growing never copies what is stored.
"""

from __future__ import annotations

import base64
import functools
import threading
from typing import Any

import numpy as np
import numpy.typing as npt

#: Rows added per block when the memory grows past its first block (12.6 MB at 384 dims).
BLOCK_ROWS = 32_768
#: Quantized values lie in [-LEVELS, LEVELS].
LEVELS = 127
#: Stored rows are value + ROW_OFFSET, in [1, 255] (the fast MLAS kernel is uint8 x int8).
ROW_OFFSET = 128
#: The query's values lie in [-QUERY_LEVELS, QUERY_LEVELS], as int8. On CPUs without VNNI the
#: kernel adds pairs of uint8 x int8 products in int16, which saturates past 32,767: with full
#: 8-bit queries similarities were off by up to 0.15 there; 2 x 255 x 63 always fits.
QUERY_LEVELS = 63

#: An ONNX model of one MatMulInteger node: rows uint8 [rows, dim] x query int8 [dim, 1] ->
#: int32 [rows, 1]. Written out (146 bytes) so the server need not import ``onnx`` to build
#: it; tests/store/test_vector_matrix.py rebuilds it with onnx.helper and compares.
SCAN_MODEL = base64.b64decode(
    "CAgSBGRveGE6gQEKIgoEcm93cwoFcXVlcnkSBGRvdHMiDU1hdE11bEludGVnZXISBHNjYW5aHQoEcm93cxIVChMIAhIP"
    "CgYSBHJvd3MKBRIDZGltWhoKBXF1ZXJ5EhEKDwgDEgsKBRIDZGltCgIIAWIaCgRkb3RzEhIKEAgGEgwKBhIEcm93cwoC"
    "CAFCBAoAEA0="
)

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float32]

_session_lock = threading.Lock()


@functools.cache
def _scan_session() -> Any:
    """One ONNX Runtime session for every matrix (thread-safe to run; built once)."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    # One thread: recall runs its full-text search on the other core during the scan.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    with _session_lock:
        return onnxruntime.InferenceSession(SCAN_MODEL, options, providers=["CPUExecutionProvider"])


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
    """

    def __init__(self, dim: int, capacity: int = 1024) -> None:
        self.dim = dim
        self._blocks: list[npt.NDArray[np.uint8]] = []
        self._starts: list[int] = []
        self._capacity = 0
        self._scales: FloatArray = np.zeros(0, dtype=np.float32)
        self._present: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        self._reserve(max(capacity, 1))

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Per row (up to the capacity): whether it holds a vector."""
        return self._present

    @property
    def nbytes(self) -> int:
        """Bytes held by the blocks and per-row arrays."""
        return sum(b.nbytes for b in self._blocks) + self._scales.nbytes + self._present.nbytes

    def _reserve(self, rows: int) -> None:
        if rows <= self._capacity:
            return
        size = max(rows - self._capacity, BLOCK_ROWS) if self._blocks else rows
        # ROW_OFFSET is a stored zero: a row never written scores 0.
        self._blocks.append(np.full((size, self.dim), ROW_OFFSET, dtype=np.uint8))
        self._starts.append(self._capacity)
        self._capacity += size
        for name in ("_scales", "_present"):
            old = getattr(self, name)
            new = np.zeros(self._capacity, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

    def _where(self, rows: IntArray) -> list[tuple[npt.NDArray[np.uint8], IntArray, IntArray]]:
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
        stored = (values.astype(np.int16) + ROW_OFFSET).astype(np.uint8)
        for block, chosen, inside in self._where(rows):
            block[inside] = stored[chosen]

    def clear(self, row: int) -> None:
        """Forget the vector at ``row`` (its similarity becomes 0); a row beyond those
        stored has none yet (its embedding had not landed: a forget right after a batch)."""
        if row >= len(self._present):
            return
        for block, _, inside in self._where(np.array([row], dtype=np.int64)):
            block[inside] = ROW_OFFSET
        self._present[row] = False

    def _values(self, rows: IntArray) -> FloatArray:
        """The stored ``rows`` as quantized values (float32, unscaled)."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        for block, chosen, inside in self._where(rows):
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
        column = np.ascontiguousarray(values.reshape(-1, 1))
        # Each stored value carries ROW_OFFSET: every dot is too large by that x the query's sum.
        excess = ROW_OFFSET * int(values.sum(dtype=np.int64))
        session = _scan_session()
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
