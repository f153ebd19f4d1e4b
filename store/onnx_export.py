"""Export a sentence-transformers model to ONNX, and prove the export gives the same vectors.

Run as ``python -m doxa.store.onnx_export SOURCE DESTINATION`` by
``doxa.store.onnx_embedder.exported_model``: it imports torch, so it runs in a child process
and the server never holds torch in memory. It writes into DESTINATION:

- ``model.onnx``: the transformer, inputs -> last hidden state;
- ``tokenizer.json``: the model's fast tokenizer;
- ``meta.json``: pooling, dimension, maximum sequence length, padding id, and the largest
  difference found between the export's vectors and sentence-transformers' own.

Only the shapes sentence-transformers models commonly have are exported: a Transformer, then
Pooling by mean, CLS token or max, then optionally Normalize. Anything else is refused, and
the caller keeps running the model with sentence-transformers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from doxa.store.onnx_embedder import EXPORT_FORMAT, POOLINGS, TOLERANCE, ExportError, OnnxModel

#: Texts the export is checked on: short, long (past the maximum length), accents, symbols.
CHECK_TEXTS = [
    "Alice moved the Orion launch to May.",
    "What did we believe about the bridge on Tuesday?",
    "ok",
    "Ünïcödé, émojis 🙂 and 中文 mixed with code: x = f(y) + 1",
    " ".join(f"word{i} about the quarterly roadmap and its risks" for i in range(120)),
    "Bilal: the budget review is on 9 November, 2022; Carol disagrees.",
]


def export(source: Path, destination: Path) -> dict[str, Any]:
    """Export the model in ``source`` into ``destination``; returns the metadata written."""
    import torch
    from sentence_transformers import SentenceTransformer

    # Typed as Any: torch's stubs make every submodule attribute a Tensor | Module.
    model: Any = SentenceTransformer(str(source), device="cpu")
    modules: list[Any] = list(model)
    names = [type(m).__name__ for m in modules]
    if names not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]):
        raise ExportError(f"modules {names} are not Transformer, Pooling[, Normalize]")
    transformer, pooling = modules[0], modules[1]
    mode = str(pooling.pooling_mode)
    if mode not in POOLINGS:
        raise ExportError(f"pooling {mode!r} is not one of {POOLINGS}")
    tokenizer = transformer.tokenizer
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise ExportError("the model has no fast (tokenizers) tokenizer")

    network = transformer.auto_model.eval()
    inputs = [n for n in tokenizer.model_input_names if n in ("input_ids", "attention_mask")]
    if "token_type_ids" in tokenizer.model_input_names:
        inputs.append("token_type_ids")

    class LastHiddenState(torch.nn.Module):
        """The transformer with positional inputs, as the exporter wants them."""

        def __init__(self) -> None:
            super().__init__()
            self.network = network

        def forward(self, *tensors: Any) -> Any:
            return self.network(**dict(zip(inputs, tensors, strict=True))).last_hidden_state

    example = torch.ones((2, 8), dtype=torch.int64)
    axes = {name: {0: "batch", 1: "tokens"} for name in [*inputs, "last_hidden_state"]}
    destination.mkdir(parents=True, exist_ok=True)
    with torch.no_grad():
        torch.onnx.export(
            LastHiddenState(),
            tuple(example for _ in inputs),
            str(destination / "model.onnx"),
            input_names=inputs,
            output_names=["last_hidden_state"],
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )
    backend.save(str(destination / "tokenizer.json"))
    meta: dict[str, Any] = {
        "format": EXPORT_FORMAT,
        "source": str(source),
        "pooling": mode,
        "dim": int(pooling.get_embedding_dimension()),
        "max_seq_length": int(model.max_seq_length),
        "pad_id": int(tokenizer.pad_token_id or 0),
        "torch": torch.__version__,
    }
    (destination / "meta.json").write_text(json.dumps(meta, indent=2))

    expected = model.encode(CHECK_TEXTS, normalize_embeddings=True, convert_to_numpy=True)
    got = OnnxModel(destination, threads=1).encode(CHECK_TEXTS, batch_size=4)
    difference = float(np.abs(got - expected).max())
    if not difference <= TOLERANCE:
        (destination / "meta.json").unlink()
        raise ExportError(f"the export differs from the model by {difference:.2e}")
    meta["max_abs_difference"] = difference
    (destination / "meta.json").write_text(json.dumps(meta, indent=2))
    return meta


def main(argv: list[str] | None = None) -> int:
    """``python -m doxa.store.onnx_export SOURCE DESTINATION``; prints the metadata."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m doxa.store.onnx_export SOURCE DESTINATION", file=sys.stderr)
        return 2
    try:
        meta = export(Path(args[0]), Path(args[1]))
    except ExportError as error:
        print(f"export refused: {error}", file=sys.stderr)
        return 1
    print(json.dumps(meta))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
