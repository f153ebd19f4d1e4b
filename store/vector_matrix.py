"""The working memory's embeddings, one byte per dimension, scanned by ONNX Runtime.

Recall compares the query with every stored embedding. Kept as float32, 100k memories of
384 dimensions take 153 MB and numpy scans them in about 4.7 ms here. Kept as int8 (scalar
quantization: one scale per vector, each value rounded to 1/127 of the vector's largest), they
take 38 MB, and ONNX Runtime's integer matrix product (MLAS, uint8 x int8) scans them in about
1.4 ms on one core (2.1 ms with the query's quantization and a top 10, bench/speed.py): the
scan reads a quarter of the bytes, and a scan is bound by reading them.

The price is precision: a similarity is within about 0.005 of the exact cosine for unit
vectors (rows rounded to 8 bits, the query to 7: see ``QUERY_LEVELS``), far below the gaps
ranking acts on; the few hundred candidates a recall scores are scored again with the query
unrounded (``refined``), which keeps LoCoMo's figures those of float32 (bench/locomo.py).
The exact float32 vectors stay in the search index (LanceDB).

Layout: each block holds a run of rows as *columns* (``[dim, rows]``, C order), so that one
matrix product ``query[1, dim] @ block[dim, rows]`` scores the whole block without a copy.
The first block is sized to the memory at load time; later ones add ``BLOCK_ROWS`` rows, so
growing never copies what is stored.
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
#: The query's values lie in [-QUERY_LEVELS, QUERY_LEVELS] and are sent as uint8 (the fast
#: MLAS kernel is uint8 x int8): value + OFFSET, at most 127. On CPUs without VNNI the kernel
#: adds pairs of uint8 x int8 products in int16, which saturates past 32,767: with full 8-bit
#: queries similarities were off by up to 0.15 there; 2 x 127 x 127 always fits.
QUERY_LEVELS = 63
OFFSET = 64

#: An ONNX model of one MatMulInteger node: query uint8 [1, dim] x block int8 [dim, rows] ->
#: int32 [1, rows]. Written out (148 bytes) so the server need not import ``onnx`` to build
#: it; tests/store/test_vector_matrix.py rebuilds it with onnx.helper and compares.
SCAN_MODEL = base64.b64decode(
    "CAgSBGRveGE6gwEKIwoFcXVlcnkKBWJsb2NrEgRkb3RzIg1NYXRNdWxJbnRlZ2VyEgRzY2FuWhoKBXF1ZXJ5EhEKDwgC"
    "EgsKAggBCgUSA2RpbVoeCgVibG9jaxIVChMIAxIPCgUSA2RpbQoGEgRyb3dzYhoKBGRvdHMSEgoQCAYSDAoCCAEKBhIE"
    "cm93c0IECgAQDQ=="
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
        self._blocks: list[npt.NDArray[np.int8]] = []
        self._starts: list[int] = []
        self._capacity = 0
        self._scales: FloatArray = np.zeros(0, dtype=np.float32)
        self._present: npt.NDArray[np.bool_] = np.zeros(0, dtype=bool)
        # OFFSET x the sum of each row's values: what the uint8 query adds to each dot.
        self._offsets: npt.NDArray[np.int32] = np.zeros(0, dtype=np.int32)
        self._reserve(max(capacity, 1))

    @property
    def present(self) -> npt.NDArray[np.bool_]:
        """Per row (up to the capacity): whether it holds a vector."""
        return self._present

    @property
    def nbytes(self) -> int:
        """Bytes held by the blocks and per-row arrays."""
        blocks = sum(b.nbytes for b in self._blocks)
        return blocks + self._scales.nbytes + self._offsets.nbytes

    def _reserve(self, rows: int) -> None:
        if rows <= self._capacity:
            return
        size = max(rows - self._capacity, BLOCK_ROWS) if self._blocks else rows
        self._blocks.append(np.zeros((self.dim, size), dtype=np.int8))
        self._starts.append(self._capacity)
        self._capacity += size
        for name in ("_scales", "_offsets", "_present"):
            old = getattr(self, name)
            new = np.zeros(self._capacity, dtype=old.dtype)
            new[: len(old)] = old
            setattr(self, name, new)

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
        self._offsets[rows] = OFFSET * values.sum(axis=1, dtype=np.int32)
        for start, block in zip(self._starts, self._blocks, strict=True):
            inside = (rows >= start) & (rows < start + block.shape[1])
            if inside.any():
                block[:, rows[inside] - start] = values[inside].T

    def clear(self, row: int) -> None:
        """Forget the vector at ``row`` (its similarity becomes 0)."""
        for start, block in zip(self._starts, self._blocks, strict=True):
            if start <= row < start + block.shape[1]:
                block[:, row - start] = 0
        self._offsets[row] = 0
        self._present[row] = False

    def refined(self, query: FloatArray, rows: IntArray) -> FloatArray:
        """Dot products of the float ``query`` with the stored ``rows``: only the rows are
        rounded, not the query (the scan rounds both), for the few candidates ranking scores.
        Rows without a vector score 0."""
        out = np.zeros(len(rows), dtype=np.float32)
        if len(rows) == 0:
            return out
        flat = np.asarray(query, dtype=np.float32).ravel()
        which = np.searchsorted(np.asarray(self._starts), rows, side="right") - 1
        for index, (start, block) in enumerate(zip(self._starts, self._blocks, strict=True)):
            chosen = np.flatnonzero(which == index)
            if chosen.size:
                out[chosen] = flat @ block[:, rows[chosen] - start].astype(np.float32)
        scaled: FloatArray = out * self._scales[rows]
        return scaled

    def vectors(self, rows: IntArray) -> FloatArray:
        """The stored ``rows`` as float32 (as rounded; zeros where a row has no vector)."""
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        which = np.searchsorted(np.asarray(self._starts), rows, side="right") - 1
        for index, (start, block) in enumerate(zip(self._starts, self._blocks, strict=True)):
            chosen = np.flatnonzero(which == index)
            if chosen.size:
                out[chosen] = block[:, rows[chosen] - start].T.astype(np.float32)
        scaled: FloatArray = out * self._scales[rows][:, None]
        return scaled

    def similarity(self, query: FloatArray, n: int) -> FloatArray:
        """Approximate dot products of ``query`` with rows ``0..n-1`` (cosines for unit
        vectors, within about 0.005)."""
        out = np.zeros(n, dtype=np.float32)
        if n == 0:
            return out
        values, scale = quantize(np.asarray(query, dtype=np.float32).reshape(1, -1), QUERY_LEVELS)
        shifted = (values.astype(np.int16) + OFFSET).astype(np.uint8)
        session = _scan_session()
        for start, block in zip(self._starts, self._blocks, strict=True):
            if start >= n:
                break
            count = min(block.shape[1], n - start)
            dots = session.run(None, {"query": shifted, "block": block})[0][0, :count]
            exact = dots - self._offsets[start : start + count]
            out[start : start + count] = exact * (self._scales[start : start + count] * scale[0])
        return out
