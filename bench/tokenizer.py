"""Speed of the pure-Python WordPiece (store/wordpiece.py) against Hugging Face ``tokenizers``.

Measures, on LoCoMo's turns ("Speaker: text"; generated sentences if the data set is absent):

1. tokenization alone: one text at a time (p50 over the texts, the word cache warm and cold),
   and a batch of 1,000 texts;
2. the embedding end to end on ONNX Runtime (the bundled model, ``OnnxModel``) with each
   tokenizer: one text at a time (p50) and a batch of 256, runs interleaved.

Needs ``tokenizers`` (the torch extra) as the reference. Usage:

    PYTHONPATH=pyroot python bench/tokenizer.py [--data PATH] [--threads N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from doxa.store.embedder import bundled_model_path
from doxa.store.onnx_embedder import HubTokenizer, OnnxModel, default_cache_dir, exported_model
from doxa.store.wordpiece import WordPieceTokenizer

DEFAULT_DATA = (
    Path(__file__).resolve().parents[2] / "shared" / "bench" / "locomo" / "locomo-dev.json"
)
MAX_LENGTH = 256


def sentences(path: Path, count: int) -> list[str]:
    """``count`` LoCoMo turns, or generated sentences of the same shape without the data."""
    texts: list[str] = []
    if path.is_file():
        for item in json.loads(path.read_text(encoding="utf-8")):
            for key, session in item["conversation"].items():
                if key.startswith("session_") and isinstance(session, list):
                    texts += [f"{turn['speaker']}: {turn['text']}" for turn in session]
    rng = random.Random(7)
    words = ["the", "budget", "meeting", "moved", "to", "Thursday", "and", "Caroline", "said"]
    words += ["she", "loved", "the", "café", "in", "Zürich", "on", "9", "May", "2023"]
    while len(texts) < count:
        texts.append(" ".join(rng.choice(words) for _ in range(rng.randint(5, 40))) + ".")
    rng.shuffle(texts)
    return texts[:count]


def per_text_ms(encode: Callable[[list[str]], object], texts: list[str]) -> float:
    """p50 milliseconds of ``encode([text])`` over ``texts``."""
    times = []
    for text in texts:
        started = time.perf_counter()
        encode([text])
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def batch_ms(encode: Callable[[list[str]], object], texts: list[str], runs: int = 5) -> float:
    """Best of ``runs`` milliseconds of ``encode(texts)``."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        encode(texts)
        best = min(best, (time.perf_counter() - started) * 1000)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--threads", type=int, default=0, help="ONNX Runtime threads (0 = auto)")
    args = parser.parse_args()
    texts = sentences(args.data, 1000)
    path = bundled_model_path() / "tokenizer.json"
    hub = HubTokenizer(path, MAX_LENGTH)
    wordpiece = WordPieceTokenizer.from_file(path, MAX_LENGTH)
    assert hub.encode_batch(texts) == wordpiece.encode_batch(texts)
    tokens = sum(len(ids) for ids in hub.encode_batch(texts)) / len(texts)
    print(f"{len(texts)} texts, {tokens:.1f} tokens each on average")

    cold = [WordPieceTokenizer.from_file(path, MAX_LENGTH) for _ in range(5)]
    print("tokenization              tokenizers   wordpiece")
    print(
        f"  one text p50 (ms)       {per_text_ms(hub.encode_batch, texts):10.4f}"
        f"  {per_text_ms(wordpiece.encode_batch, texts):10.4f} (word cache warm)"
    )
    print(
        f"  batch of 1,000 (ms)     {batch_ms(hub.encode_batch, texts):10.2f}"
        f"  {batch_ms(wordpiece.encode_batch, texts):10.2f} (warm)"
        f"  {min(batch_ms(t.encode_batch, texts, runs=1) for t in cold):.2f} (cold)"
    )

    directory = exported_model(bundled_model_path(), default_cache_dir())
    model = OnnxModel(directory, threads=args.threads)
    runs: dict[str, list[float]] = {"tokenizers": [], "wordpiece": []}
    batches: dict[str, list[float]] = {"tokenizers": [], "wordpiece": []}
    tokenizers_by_name = {"tokenizers": hub, "wordpiece": wordpiece}
    for _ in range(3):  # interleaved, so drift on a shared machine hits both alike
        for name, tokenizer in tokenizers_by_name.items():
            model.tokenizer = tokenizer
            runs[name].append(per_text_ms(lambda t: model.encode(t, 64), texts[:300]))
            batches[name].append(batch_ms(lambda t: model.encode(t, 64), texts[:256], runs=2))
    print("embedding (ONNX)          tokenizers   wordpiece")
    print(
        f"  one text p50 (ms)       {min(runs['tokenizers']):10.3f}"
        f"  {min(runs['wordpiece']):10.3f}"
        f"  ({min(runs['wordpiece']) / min(runs['tokenizers']) - 1:+.1%})"
    )
    print(
        f"  batch of 256 (ms)       {min(batches['tokenizers']):10.1f}"
        f"  {min(batches['wordpiece']):10.1f}"
        f"  ({min(batches['wordpiece']) / min(batches['tokenizers']) - 1:+.1%})"
    )


if __name__ == "__main__":
    main()
