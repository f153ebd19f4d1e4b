"""How much could judging some questions lift new ones? Upper bounds on LoCoMo.

``bench/feedback.py`` measures what the memory learns; this asks what any rule of two simple
kinds could learn from the same judgements, so a short figure there can be told from a
limit of the data. Per conversation (the store API and memories of ``bench/tune_ranking.py``),
the questions are split as ``bench/feedback.py`` splits them; an agent judges the judged
half's top 10 (gold turns accepted, the rest rejected; ``--noise``: each accepted with
probability 0.2), and each unseen question's first 40 results, before any learning, are
re-ranked offline by:

- **turn priors:** + ``a`` for a turn accepted for any judged question, ``r`` x (its
  rejections, at most 3) / 3 for one rejected and never accepted (``r`` <= 0);
- **question links:** + ``a`` x likeness for a turn accepted for a judged question at least
  ``t`` alike (cosine of the questions' embeddings) to the new one.

Printed: the unseen half's R@10 before, the change of each rule's best grid point (chosen on
the same questions: in-sample, so it flatters), and the ceiling: lifting into each unseen
question's top 10 exactly its gold turns accepted for a judged question, and nothing else.

Usage:
    python bench/transfer.py [--data PATH] [--embedder sentence-transformers|hash] [--noise]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import locomo
import numpy as np
import tune_ranking

#: How deep each unseen question's results are re-ranked.
DEPTH = 40
PRIOR_GRID = {"a": (0.0, 0.02, 0.05, 0.1), "r": (0.0, -0.02, -0.05, -0.1)}
LINK_GRID = {"t": (0.5, 0.6, 0.7, 0.8, 0.85), "a": (0.02, 0.05, 0.1, 0.3)}


@dataclass
class Unseen:
    """An unseen question: its gold, its first results (source, score) and what the judged
    half of its conversation said: per turn acceptances and rejections, and per judged
    question its likeness to this one and the turns it accepted."""

    gold: set[str]
    results: list[tuple[str, float]]
    accepted: Counter[str]
    rejected: Counter[str]
    links: list[tuple[float, list[str]]]


def r10(order: Sequence[str], gold: set[str]) -> float:
    """Share of ``gold`` in the first 10 of ``order``."""
    return len(gold & set(order[:10])) / len(gold)


def reranked(unseen: Unseen, lift: dict[str, float]) -> list[str]:
    """The results ordered by score plus ``lift``."""
    ordered = sorted(unseen.results, key=lambda r: r[1] + lift.get(r[0], 0.0), reverse=True)
    return [source for source, _ in ordered]


def prior_lift(unseen: Unseen, a: float, r: float) -> dict[str, float]:
    """The turn priors' lift."""
    lift = {s: a for s in unseen.accepted}
    for source, count in unseen.rejected.items():
        if source not in unseen.accepted:
            lift[source] = r * min(count, 3) / 3
    return lift


def link_lift(unseen: Unseen, t: float, a: float) -> dict[str, float]:
    """The question links' lift."""
    lift: dict[str, float] = {}
    for likeness, accepted in unseen.links:
        if likeness >= t:
            for source in accepted:
                lift[source] = max(lift.get(source, 0.0), a * likeness)
    return lift


def accepted_missing(gold: set[str], accepted: set[str], top: set[str]) -> float:
    """The share of ``gold`` accepted for a judged question and missing from ``top``: what
    lifting exactly those turns into the top would add to its R@k."""
    return len((gold & accepted) - top) / len(gold)


def ceiling(unseen: Unseen) -> float:
    """What lifting exactly the accepted gold turns missing from the top 10 would add."""
    top = {s for s, _ in unseen.results[:10]}
    return accepted_missing(unseen.gold, set(unseen.accepted), top)


def collect(
    conversations: Sequence[locomo.Conversation], embedder_kind: str, noise: bool, seed: int
) -> list[Unseen]:
    """Every conversation's unseen questions, with what its judged half said."""
    embedder = tune_ranking.load_embedder(embedder_kind)
    out: list[Unseen] = []
    with tune_ranking.ingested(conversations, embedder, embedder_kind) as loaded:
        for conversation, memory in loaded:
            rng = random.Random(f"{seed}:{conversation.sample_id}")
            judged, unseen = conversation.questions[0::2], conversation.questions[1::2]
            accepted: Counter[str] = Counter()
            rejected: Counter[str] = Counter()
            per_question: list[list[str]] = []
            for question in judged:
                mine = []
                gold = set(question.gold)
                for result in memory.recall(question.question, limit=10).results:
                    source = result.source or ""
                    good = rng.random() < 0.2 if noise else source in gold
                    (accepted if good else rejected)[source] += 1
                    if good:
                        mine.append(source)
                per_question.append(mine)
            texts = [q.question for q in judged] + [q.question for q in unseen]
            vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            likeness = vectors[len(judged) :] @ vectors[: len(judged)].T
            for i, question in enumerate(unseen):
                results = memory.recall(question.question, limit=DEPTH).results
                out.append(
                    Unseen(
                        set(question.gold),
                        [(r.source or "", r.score) for r in results],
                        accepted,
                        rejected,
                        [(float(s), a) for s, a in zip(likeness[i], per_question, strict=True)],
                    )
                )
    return out


#: A rule: the lift per source it gives an unseen question, at one grid point.
Rule = Callable[..., dict[str, float]]


def best_change(
    questions: Sequence[Unseen], grid: dict[str, tuple[float, ...]], rule: Rule
) -> tuple[float, dict[str, float]]:
    """The best in-sample R@10 change of ``rule`` over ``grid``, and its point."""
    before = float(np.mean([r10([s for s, _ in q.results], q.gold) for q in questions]))
    best = (-1.0, {})
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        after = np.mean([r10(reranked(q, rule(q, *values)), q.gold) for q in questions])
        best = max(best, (float(after) - before, point), key=lambda b: b[0])
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument(
        "--embedder", choices=("sentence-transformers", "hash"), default="sentence-transformers"
    )
    parser.add_argument("--noise", action="store_true", help="random judgements instead")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    questions = collect(locomo.load_conversations(args.data), args.embedder, args.noise, args.seed)
    before = np.mean([r10([s for s, _ in q.results], q.gold) for q in questions])
    kind = "random" if args.noise else "gold"
    print(f"LoCoMo, {len(questions)} unseen questions, {kind} judgements of the other half")
    print(f"unseen R@10 before learning (first {DEPTH} re-ranked): {before:.3f}")
    rules: list[tuple[str, Rule, dict[str, tuple[float, ...]]]] = [
        ("turn priors", prior_lift, PRIOR_GRID),
        ("question links", link_lift, LINK_GRID),
    ]
    for name, rule, grid in rules:
        change, point = best_change(questions, grid, rule)
        print(f"best {name} (in-sample): {change:+.3f} at {point}")
    print(f"ceiling: {np.mean([ceiling(q) for q in questions]):+.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
