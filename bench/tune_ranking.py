"""Tune recall's ranking weights on LoCoMo: ingest each conversation once, then score a grid.

    python bench/tune_ranking.py --data ../shared/bench/locomo/locomo-dev.json \\
        --grid '{"neighbourhood": [0.4, 0.5, 0.6], "neighbour_decay": [0.6, 0.8]}'

Each conversation is remembered once through the store (same drafts as ``bench/locomo.py``:
"Speaker: text", topics [speaker], the session's date, source = dia_id, episode = session),
query embeddings are cached, and every weight combination in the grid is scored by R@5 and
R@10 over the questions of categories 1-4. Prints one line per combination, best last.

Use coarse steps and pick the middle of a plateau, not its peak: the defaults must hold on
conversations this file does not contain.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # the benchmark beside this file: data loading and the metric

from doxa.store import Memory, MemoryDraft, StoreSettings
from doxa.store.embedder import SentenceTransformerEmbedder
from doxa.store.settings import RankingWeights


class CachedQueries:
    """The real embedder, remembering single-text (query) embeddings across grid points."""

    def __init__(self, inner: SentenceTransformerEmbedder) -> None:
        self._inner = inner
        self._cache: dict[str, npt.NDArray[np.float32]] = {}

    @property
    def fingerprint(self) -> str:
        return self._inner.fingerprint

    @property
    def dim(self) -> int:
        return self._inner.dim

    def load(self) -> None:
        self._inner.load()

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        if len(texts) == 1 and texts[0] in self._cache:
            return self._cache[texts[0]][None, :]
        vectors = self._inner.embed(texts)
        if len(texts) == 1:
            self._cache[texts[0]] = vectors[0]
        return vectors


def ingest(data: Path, embedder: CachedQueries) -> list[tuple[locomo.Conversation, Memory]]:
    """One memory per conversation, every turn remembered in order."""
    loaded = []
    for conversation in locomo.load_conversations(data):
        settings = StoreSettings(data_dir=Path(tempfile.mkdtemp(prefix="doxa-tune-")))
        memory = Memory.open(settings, embedder=embedder)
        memory.warm_up()
        for session in conversation.sessions:
            drafts = [
                MemoryDraft(
                    text=turn.text,
                    topics=[turn.speaker],
                    observed_at=session.observed_at,
                    source=turn.dia_id,
                    episode=session.key,
                )
                for turn in session.turns
            ]
            memory.remember(drafts, batch=True)
        loaded.append((conversation, memory))
    return loaded


def score(
    loaded: list[tuple[locomo.Conversation, Memory]], weights: RankingWeights
) -> tuple[float, float]:
    """Mean R@5 and R@10 over all questions."""
    at5 = at10 = 0.0
    count = 0
    for conversation, memory in loaded:
        memory.settings = memory.settings.model_copy(update={"ranking": weights})
        for question in conversation.questions:
            sources = [r.source for r in memory.recall(question.question, limit=10).results]
            gold = set(question.gold)
            at5 += len(gold & set(sources[:5])) / len(gold)
            at10 += len(gold & set(sources)) / len(gold)
            count += 1
    return at5 / count, at10 / count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument("--grid", default="{}", help="JSON: ranking setting -> list of values")
    args = parser.parse_args()
    grid: dict[str, list[Any]] = json.loads(args.grid)
    started = time.perf_counter()
    loaded = ingest(args.data, CachedQueries(SentenceTransformerEmbedder()))
    print(f"ingested {len(loaded)} conversations in {time.perf_counter() - started:.0f} s")
    results = []
    for values in itertools.product(*grid.values()):
        change = dict(zip(grid, values, strict=True))
        at5, at10 = score(loaded, RankingWeights().model_copy(update=change))
        results.append((at5 + at10, at5, at10, change))
        print(f"R@5 {at5:.3f}  R@10 {at10:.3f}  {json.dumps(change)}", flush=True)
    print("best:")
    for _, at5, at10, change in sorted(results, key=lambda r: r[0])[-5:]:
        print(f"R@5 {at5:.3f}  R@10 {at10:.3f}  {json.dumps(change)}")
    for _, memory in loaded:
        memory.close()


if __name__ == "__main__":
    main()
