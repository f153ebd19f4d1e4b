"""Long texts recalled by meaning: each LoCoMo session remembered as one transcript.

Every session of every conversation is one memory (its turns' texts, a line each: 128 texts,
median 518 words, most past the 256 tokens the model reads). Each question whose gold turns
all sit in one session is asked with ``Memory.recall(question, limit=10)`` (full text, vectors
and ranking, as the tool does), and the rank of that session's memory counts: R@1, R@3, R@10,
and R@3 for questions about a session's first fifth and its later half.

Usage:
    python bench/long_texts.py --data PATH

The data file (CC BY-NC 4.0) is only read from the path given; never copy it into the repo.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from locomo import load_conversations

from doxa.server.settings import load_settings
from doxa.store import Memory, MemoryDraft


def main() -> None:
    """Store the sessions, ask the questions, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True, help="locomo JSON file")
    options = parser.parse_args()
    texts: list[str] = []
    questions: list[tuple[str, int, float]] = []  # question, its session, where in it
    for conversation in load_conversations(options.data):
        for session in conversation.sessions:
            turns = {t.dia_id for t in session.turns}
            texts.append("\n".join(t.text for t in session.turns))
            for q in conversation.questions:
                if q.gold and set(q.gold) <= turns:
                    first = min(i for i, t in enumerate(session.turns) if t.dia_id in q.gold)
                    questions.append((q.question, len(texts) - 1, first / len(session.turns)))
    words = int(np.median([len(t.split()) for t in texts]))
    print(f"{len(texts)} texts (median {words} words), {len(questions)} questions")
    with tempfile.TemporaryDirectory() as directory:
        settings = load_settings(environ={}, overrides={("store", "data_dir"): directory})
        memory = Memory.open(settings.store)
        memory.warm_up()
        try:
            began = time.perf_counter()
            done = memory.remember([MemoryDraft(text=t) for t in texts], batch=True)
            assert memory.settle(timeout=1800)
            stored = time.perf_counter() - began
            ids = [d.observation_id for d in done]
            ranks = []
            for question, session, _ in questions:
                found = [r.observation_id for r in memory.recall(question, limit=10).results]
                ranks.append(found.index(ids[session]) + 1 if ids[session] in found else 99)
        finally:
            memory.close()
    rank = np.array(ranks)
    where = np.array([w for *_, w in questions])
    print(f"remembered and embedded in {stored:.1f} s")
    print(
        f"R@1 {np.mean(rank <= 1):.3f}  R@3 {np.mean(rank <= 3):.3f}  "
        f"R@10 {np.mean(rank <= 10):.3f}  R@3 first fifth {np.mean(rank[where < 0.2] <= 3):.3f}"
        f"  later half {np.mean(rank[where > 0.5] <= 3):.3f}"
    )


if __name__ == "__main__":
    main()
