"""The int8 embedding matrix: its scan model, its precision, growth and rows it forgets."""

from __future__ import annotations

import numpy as np
import pytest

from doxa.store import vector_matrix
from doxa.store.vector_matrix import (
    COLUMN_SCAN_MODEL,
    SCAN_MODEL,
    Layout,
    VectorMatrix,
    _layout,
    quantize,
)


@pytest.fixture(params=["rows", "columns"])
def layout(request: pytest.FixtureRequest) -> Layout:
    """Each layout keeps the same values and scores them alike (one is faster on a CPU)."""
    value: Layout = request.param
    return value


def unit_rows(n: int, dim: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, dim)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_scan_model_is_one_matmulinteger_node_as_onnx_builds_it() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["rows", "query"], ["dots"])],
        "scan",
        [
            helper.make_tensor_value_info("rows", TensorProto.UINT8, ["rows", "dim"]),
            helper.make_tensor_value_info("query", TensorProto.INT8, ["dim", 1]),
        ],
        [helper.make_tensor_value_info("dots", TensorProto.INT32, ["rows", 1])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="doxa"
    )
    model.ir_version = 8
    assert model.SerializeToString() == SCAN_MODEL


def test_the_column_scan_model_is_one_matmulinteger_node_as_onnx_builds_it() -> None:
    from onnx import TensorProto, helper

    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["query", "columns"], ["dots"])],
        "scan",
        [
            helper.make_tensor_value_info("query", TensorProto.UINT8, [1, "dim"]),
            helper.make_tensor_value_info("columns", TensorProto.INT8, ["dim", "rows"]),
        ],
        [helper.make_tensor_value_info("dots", TensorProto.INT32, [1, "rows"])],
    )
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="doxa"
    )
    model.ir_version = 8
    assert model.SerializeToString() == COLUMN_SCAN_MODEL


def test_both_layouts_score_the_same_and_a_matrix_takes_the_faster() -> None:
    rows = unit_rows(3000, 384, seed=8)
    matrices = [VectorMatrix(384, capacity=1000, layout=kind) for kind in ("rows", "columns")]
    for matrix in matrices:
        matrix.put(np.arange(3000), rows)
        matrix.clear(17)
    query = unit_rows(1, 384, seed=9)[0]
    by_rows, by_columns = (m.similarity(query, 3000) for m in matrices)
    assert np.array_equal(by_rows, by_columns)  # the same integer dot products
    picked = np.array([2999, 0, 17, 1500])
    assert np.array_equal(matrices[0].refined(query, picked), matrices[1].refined(query, picked))
    assert VectorMatrix(8).layout == _layout() in ("rows", "columns")


def test_quantize_keeps_each_row_within_half_a_step() -> None:
    rows = unit_rows(50, 384)
    values, scales = quantize(rows)
    assert values.dtype == np.int8 and np.abs(values).max() <= 127
    error = np.abs(values * scales[:, None] - rows)
    assert (error <= scales[:, None] / 2 + 1e-7).all()


def test_similarity_is_close_to_the_exact_cosine_and_keeps_the_top(layout: Layout) -> None:
    rows = unit_rows(5000, 384, seed=1)
    matrix = VectorMatrix(384, capacity=5000, layout=layout)
    matrix.put(np.arange(5000), rows)
    # Queries near stored rows, as real queries are near their answers.
    for k, q in enumerate(unit_rows(20, 384, seed=2)):
        query = rows[k * 97] + 0.5 * q
        query /= np.linalg.norm(query)
        exact = rows @ query
        approx = matrix.similarity(query, 5000)
        assert np.abs(approx - exact).max() < 0.01
        assert int(np.argmax(approx)) == k * 97
        top_exact = set(np.argsort(-exact)[:10])
        assert len(top_exact & set(np.argsort(-approx)[:10])) >= 8


def test_rows_beyond_the_first_block_are_scanned(
    monkeypatch: pytest.MonkeyPatch, layout: Layout
) -> None:
    monkeypatch.setattr(vector_matrix, "BLOCK_ROWS", 7)
    monkeypatch.setattr(vector_matrix, "COLUMN_BLOCK", 7)
    rows = unit_rows(40, 16, seed=3)
    matrix = VectorMatrix(16, capacity=5, layout=layout)
    # Out of order and across block boundaries: 5 rows in the first block, then blocks of 7.
    order = np.random.default_rng(4).permutation(40)
    for chunk in np.array_split(order, 6):
        matrix.put(chunk, rows[chunk])
    assert matrix.nbytes >= 40 * 16
    for k in range(40):
        approx = matrix.similarity(rows[k], 40)
        assert approx.shape == (40,)
        assert int(np.argmax(approx)) == k
        assert np.abs(approx - rows @ rows[k]).max() < 0.02
    # Fewer rows than stored: only those are scored.
    assert matrix.similarity(rows[0], 12).shape == (12,)


def test_refined_scores_round_only_the_rows(
    monkeypatch: pytest.MonkeyPatch, layout: Layout
) -> None:
    monkeypatch.setattr(vector_matrix, "BLOCK_ROWS", 7)
    monkeypatch.setattr(vector_matrix, "COLUMN_BLOCK", 7)
    rows = unit_rows(30, 384, seed=6)
    matrix = VectorMatrix(384, capacity=5, layout=layout)
    matrix.put(np.arange(30), rows)
    query = unit_rows(1, 384, seed=7)[0]
    picked = np.array([29, 0, 6, 13, 5])  # across blocks, out of order
    values, scales = quantize(rows[picked])
    refined = matrix.refined(query, picked)
    # Exactly the rounded rows times the float query: within a row's rounding of the cosine.
    assert refined == pytest.approx((values * scales[:, None]) @ query, abs=1e-5)
    exact = rows[picked] @ query
    assert np.abs(refined - exact).max() < 0.003
    assert matrix.refined(query, np.array([], dtype=np.int64)).shape == (0,)


def test_cleared_and_zero_rows_score_zero(layout: Layout) -> None:
    rows = unit_rows(4, 8, seed=5)
    matrix = VectorMatrix(8, capacity=4, layout=layout)
    matrix.put([0, 1, 2], rows[:3])
    matrix.put([3], np.zeros((1, 8), dtype=np.float32))
    matrix.clear(1)
    scores = matrix.similarity(rows[1], 4)
    assert scores[1] == 0.0 and scores[3] == 0.0
    assert scores[0] == pytest.approx(float(rows[0] @ rows[1]), abs=0.02)
    assert matrix.similarity(rows[0], 0).shape == (0,)


def test_a_vector_of_another_dimension_is_refused(layout: Layout) -> None:
    matrix = VectorMatrix(8, layout=layout)
    with pytest.raises(ValueError, match="dimensions"):
        matrix.put([0], np.ones((1, 9), dtype=np.float32))


def test_stored_vectors_come_back_as_rounded(layout: Layout) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((5, 16)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    matrix = VectorMatrix(dim=16, capacity=2, layout=layout)  # rows 2.. land in a second block
    matrix.put([0, 1, 2, 3, 4], vectors)
    back = matrix.vectors(np.array([4, 0, 2]))
    assert np.allclose(back, vectors[[4, 0, 2]], atol=0.01)
    assert np.allclose(back @ back.T, vectors[[4, 0, 2]] @ vectors[[4, 0, 2]].T, atol=0.02)
