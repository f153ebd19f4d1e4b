"""Hybrid ranking: what the store knows about each observation, fused into one score.

Components (each in roughly [0, 1] before weighting):
- ``vector``       cosine similarity of the query and observation embeddings;
- ``text``         BM25 from the full-text index, divided by the best BM25 of this query;
- ``neighbourhood`` the best vector+text relevance among observations learned next to this one
                   in the same episode (a conversation's turns explain each other), decayed
                   by distance;
- ``topic``        share of the topics named in the query that the observation mentions;
- ``time``         1 when the observation was made inside the time the query names;
- ``confidence``   the observation's confidence;
- ``feedback``     learned from judged recalls: similar past queries whose results were
                   accepted (+) or rejected (-), plus co-activation with accepted results.
The weights are settings (``[ranking]`` in ``configs/default.toml``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from doxa.store.settings import RankingWeights
from doxa.store.working_memory import BoolArray, WorkingMemory, topic_key

_WORD = re.compile(r"[\w'-]+")


@dataclass(frozen=True, slots=True)
class Ranked:
    """One ranked row with its fused score and weighted components."""

    row: int
    score: float
    components: dict[str, float]


def query_topics(memory: WorkingMemory, query: str) -> list[str]:
    """Keys of known topics named in the query (phrases of one to three words)."""
    words = [w.strip("'-") for w in _WORD.findall(query.casefold())]
    found: list[str] = []
    for size in (3, 2, 1):
        for start in range(len(words) - size + 1):
            phrase = " ".join(words[start : start + size])
            if phrase in memory.topic_rows and phrase not in found:
                found.append(phrase)
            elif phrase.endswith("'s") and phrase[:-2] in memory.topic_rows:
                found.append(phrase[:-2])
    return found


def rank(
    memory: WorkingMemory,
    mask: BoolArray,
    query_vector: npt.NDArray[np.float32] | None,
    text_hits: list[tuple[int, float]],
    topics_in_query: list[str],
    window: tuple[int, int] | None,
    weights: RankingWeights,
    limit: int,
) -> list[Ranked]:
    """Rank the rows allowed by ``mask`` for one query; best first, at most ``limit``.

    Args:
        memory: the working memory.
        mask: rows that pass the recall's filters.
        query_vector: the embedded query, or None for a query without text.
        text_hits: (row, BM25 score) from the full-text index.
        topics_in_query: topic keys the query names.
        window: (start, end) in microseconds named by the query's time words, or None.
        weights: the ranking weights.
        limit: how many to return.
    """
    n = len(memory)
    if n == 0 or limit <= 0:
        return []
    usable = mask[:n] & memory.has_vector[:n]
    if query_vector is not None:
        similarity = memory.vectors[:n] @ query_vector
    else:
        similarity = np.zeros(n, dtype=np.float32)
    masked = np.where(usable, similarity, -np.inf)
    allowed = int(usable.sum())
    if allowed == 0:
        return []
    pool_size = min(allowed, max(weights.pool, limit * 3))
    top = np.argpartition(-masked, pool_size - 1)[:pool_size]
    pool: set[int] = {int(r) for r in top if np.isfinite(masked[r])}

    best_text = max((s for r, s in text_hits if usable[r]), default=0.0)
    text: dict[int, float] = {}
    if best_text > 0:
        for row, score in text_hits:
            if usable[row]:
                text[row] = score / best_text
    pool.update(text)

    learned = _feedback(memory, query_vector, usable, weights)
    pool.update(r for r in learned if learned[r] > 0)

    def base(row: int) -> float:
        return weights.vector * max(float(similarity[row]), 0.0) + weights.text * text.get(row, 0.0)

    # Neighbours of the strongest candidates are candidates too: the turn that answers a
    # question often sits next to the one that matches its words.
    if weights.neighbourhood > 0 and weights.neighbour_window > 0:
        strongest = sorted(pool, key=base, reverse=True)[: max(limit * 2, 10)]
        for row in strongest:
            for other, _ in memory.neighbours(row, weights.neighbour_window):
                if usable[other]:
                    pool.add(other)

    topic_sets = {key: memory.rows_of(memory.topic_rows, key) for key in topics_in_query}
    topic_members = {key: set(rows.tolist()) for key, rows in topic_sets.items()}

    ranked: list[Ranked] = []
    for row in pool:
        entry = memory.entries[row]
        components = {
            "vector": weights.vector * float(similarity[row]),
            "text": weights.text * text.get(row, 0.0),
        }
        neighbourhood = 0.0
        if weights.neighbourhood > 0:
            for other, distance in memory.neighbours(row, weights.neighbour_window):
                if usable[other]:
                    value = base(other) * weights.neighbour_decay ** (distance - 1)
                    neighbourhood = max(neighbourhood, value)
        components["neighbourhood"] = weights.neighbourhood * neighbourhood
        if topic_members:
            share = sum(1 for key in topic_members if row in topic_members[key]) / len(
                topic_members
            )
            components["topic"] = weights.topic * share
        if window is not None:
            inside = window[0] <= int(memory.valid_from[row]) < window[1]
            components["time"] = weights.time * (1.0 if inside else 0.0)
        components["confidence"] = weights.confidence * float(entry.confidence)
        if learned.get(row):
            components["feedback"] = weights.feedback * learned[row]
        ranked.append(Ranked(row, sum(components.values()), components))
    ranked.sort(key=lambda r: (-r.score, -memory.entries[r.row].seq))
    return ranked[:limit]


def _feedback(
    memory: WorkingMemory,
    query_vector: npt.NDArray[np.float32] | None,
    usable: BoolArray,
    weights: RankingWeights,
) -> dict[int, float]:
    """Rows judged on similar past queries (+ accepted, - rejected) and their co-activations."""
    if query_vector is None or len(memory.feedback_rows) == 0 or weights.feedback == 0:
        return {}
    similarity = memory.feedback_queries @ query_vector
    close = similarity >= weights.feedback_similarity
    learned: dict[int, float] = {}
    for row, sign, sim in zip(
        memory.feedback_rows[close], memory.feedback_signs[close], similarity[close], strict=True
    ):
        r = int(row)
        if r < len(usable) and usable[r]:
            # Scaled so a query equal to the judged one counts fully, a borderline one little.
            strength = (float(sim) - weights.feedback_similarity) / (
                1.0 - weights.feedback_similarity + 1e-9
            )
            learned[r] = max(-1.0, min(1.0, learned.get(r, 0.0) + float(sign) * strength))
    if weights.co_activation > 0:
        for row, value in list(learned.items()):
            if value <= 0:
                continue
            for other, count in memory.co_activated.get(row, {}).items():
                if other < len(usable) and usable[other] and other not in learned:
                    boost = weights.co_activation / weights.feedback * value * count / (count + 1)
                    learned[other] = max(learned.get(other, 0.0), boost)
    return learned


def topic_keys(names: list[str]) -> list[str]:
    """Normalised topic keys for a filter."""
    return [topic_key(name) for name in names]
