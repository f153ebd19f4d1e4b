"""How much could judging some questions lift new ones? Upper bounds on LoCoMo.

``bench/feedback.py`` measures what the memory learns; this asks what a few simple rules
could learn from the same judgements, so a short figure there can be told from a
limit of the data. Per conversation (the store API and memories of ``bench/tune_ranking.py``),
the questions are split as ``bench/feedback.py`` splits them (``--split N`` as there); an
agent judges the judged half's top 10 (gold turns accepted, the rest rejected; ``--noise``:
each accepted with probability 0.2), and each unseen question's first 40 results, before any
learning, are re-ranked offline by:

- **turn priors:** + ``a`` for a turn accepted for any judged question, ``r`` x (its
  rejections, at most 3) / 3 for one rejected and never accepted (``r`` <= 0);
- **question links:** + ``a`` x likeness for a turn accepted for a judged question at least
  ``t`` alike (cosine of the questions' embeddings) to the new one;
- each of the two for questions that ask for several things only (``asks_for_many``: what
  ``spread`` serves), where the ceiling below is largest;
- **a query map:** a linear map of question embeddings (identity plus a correction ``D``)
  learned per conversation from its judged half (a softmax over each judged question's top 10
  and accepted turns, the accepted ones the targets, ``mu`` x ``|D|^2`` against overfitting),
  lifting each result by ``b`` x (its cosine to the mapped question - to the question);
- **a turn classifier:** logistic regression on turn embeddings (weight decay ``lam``),
  learned per conversation from its judged half's accepted against rejected turns, whatever
  the question, lifting each result by ``b`` x (its logit - the mean of the results').

Printed: the unseen half's R@10 before; the judged half's R@10, R@20 and R@40 before
learning (judged from its top 10, asked again it can hold what ranked in the first 10 and
the results that take the place of those rejected: about its R@20); per rule the change
leave one conversation out (each conversation scored at the grid point the other four
chose) and at the best point chosen on all the questions (in-sample, so it flatters), with
the questions the held-out change moved up and down and its standard error; and the
ceiling, overall and per category: lifting into each unseen question's top 10 exactly its
gold turns accepted for a judged question, and nothing else. Then what the judgements tell
a rule to go on (``evidence``):

- of the (accepted turn, unseen question) pairs a re-rank could lift (the turn accepted for a
  judged question, ranked 11-40 for the unseen one), how many are gold there; how well the
  two questions' likeness tells those (AUC), and how many are gold among the most alike;
- of the turns in an unseen question's top 10 that a judged question rejected, the share gold
  there against that of any turn in a top 10, and how well the likeness of the most alike
  judged question that rejected it tells the gold ones (AUC: 0.5 tells nothing); and the
  ceiling of lowering: dropping from each top 10 exactly its rejected turns not gold there.

Usage:
    python bench/transfer.py [--data PATH] [--embedder sentence-transformers|hash] [--noise]
        [--split N]
"""

from __future__ import annotations

import argparse
import itertools
import random
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import locomo
import numpy as np
import tune_ranking

from doxa.store.question_shape import asks_for_many

#: How deep each unseen question's results are re-ranked.
DEPTH = 40
PRIOR_GRID = {"a": (0.0, 0.02, 0.05, 0.1), "r": (0.0, -0.02, -0.05, -0.1)}
LINK_GRID = {"t": (0.5, 0.6, 0.7, 0.8, 0.85), "a": (0.02, 0.05, 0.1, 0.3)}
MAP_GRID = {"mu": (0.1, 1.0, 3.0), "b": (0.0, 0.3, 1.0, 2.0)}
CLASSIFIER_GRID = {"lam": (0.0001, 0.001, 0.01), "b": (0.0, 0.02, 0.05, 0.1, 0.2)}
#: The turn classifier's gradient steps and step size.
CLASSIFIER_STEPS, CLASSIFIER_RATE = 1000, 1.0
#: The query map's softmax temperature, gradient steps and step size.
MAP_TEMPERATURE, MAP_STEPS, MAP_RATE = 0.05, 150, 0.5


@dataclass
class Unseen:
    """An unseen question: its gold, its first results (source, score) and what the judged
    half of its conversation said: per turn acceptances and rejections, and per judged
    question its likeness to this one and the turns it accepted. Also its conversation, its
    LoCoMo category and whether it asks for several things."""

    gold: set[str]
    results: list[tuple[str, float]]
    accepted: Counter[str]
    rejected: Counter[str]
    links: list[tuple[float, list[str]]]
    conversation: str = ""
    category: int = 0
    many: bool = False
    #: For the query map: the question's vector, mapped per ``mu``, and its results' vectors.
    vector: np.ndarray | None = None
    mapped: dict[float, np.ndarray] | None = None
    result_vectors: dict[str, np.ndarray] | None = None
    #: For the turn classifier: its weights and bias per ``lam``.
    classifiers: dict[float, tuple[np.ndarray, float]] | None = None
    #: Per judged question, in ``links``' order: its likeness and the turns it rejected.
    refusals: list[tuple[float, list[str]]] = field(default_factory=list)


def r10(order: Sequence[str], gold: set[str], k: int = 10) -> float:
    """Share of ``gold`` in the first 10 (or ``k``) of ``order``."""
    return len(gold & set(order[:k])) / len(gold)


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


def map_lift(unseen: Unseen, mu: float, b: float) -> dict[str, float]:
    """The query map's lift: ``b`` x how much more alike each result is to the question
    mapped (learned at ``mu``) than to the question itself."""
    if not b or unseen.vector is None or not unseen.mapped or not unseen.result_vectors:
        return {}
    mapped = unseen.mapped[mu]
    return {
        source: b * float(vector @ mapped - vector @ unseen.vector)
        for source, vector in unseen.result_vectors.items()
    }


def learn_query_map(
    examples: Sequence[tuple[np.ndarray, np.ndarray, list[int]]], mu: float
) -> np.ndarray:
    """The correction ``D`` of a query map ``q -> q + D q``, by gradient descent on the
    softmax loss of each example (question vector, candidate vectors, the accepted ones'
    rows) plus ``mu`` x ``|D|^2 / 2``."""
    dim = examples[0][0].shape[0] if examples else 0
    correction = np.zeros((dim, dim))
    for _ in range(MAP_STEPS if examples else 0):
        gradient = np.zeros((dim, dim))
        for question, candidates, accepted in examples:
            logits = candidates @ (question + correction @ question) / MAP_TEMPERATURE
            chances = np.exp(logits - logits.max())
            chances /= chances.sum()
            chances[accepted] -= 1 / len(accepted)
            gradient += np.outer(candidates.T @ chances / MAP_TEMPERATURE, question)
        correction -= MAP_RATE * (gradient / len(examples) + mu * correction)
    return correction


def learn_turn_classifier(
    turns: np.ndarray, accepted: np.ndarray, lam: float
) -> tuple[np.ndarray, float]:
    """Weights and bias of a logistic regression of ``accepted`` (0 or 1 per row) on the turn
    vectors ``turns``, by gradient descent with ``lam`` x ``|w|^2 / 2``."""
    weights, bias = np.zeros(turns.shape[1]), 0.0
    for _ in range(CLASSIFIER_STEPS if len(turns) else 0):
        error = 1 / (1 + np.exp(-(turns @ weights + bias))) - accepted
        weights -= CLASSIFIER_RATE * (turns.T @ error / len(turns) + lam * weights)
        bias -= CLASSIFIER_RATE * float(error.mean())
    return weights, bias


def classifier_lift(unseen: Unseen, lam: float, b: float) -> dict[str, float]:
    """The turn classifier's lift: ``b`` x each result's logit above the results' mean."""
    if not b or not unseen.classifiers or not unseen.result_vectors:
        return {}
    weights, bias = unseen.classifiers[lam]
    logits = {s: float(v @ weights) + bias for s, v in unseen.result_vectors.items()}
    mean = float(np.mean(list(logits.values())))
    return {source: b * (logit - mean) for source, logit in logits.items()}


def for_many_only(rule: Rule) -> Rule:
    """``rule`` for questions that ask for several things; no lift for the others."""

    def lift(unseen: Unseen, *point: float) -> dict[str, float]:
        return rule(unseen, *point) if unseen.many else {}

    return lift


def accepted_missing(gold: set[str], accepted: set[str], top: set[str]) -> float:
    """The share of ``gold`` accepted for a judged question and missing from ``top``: what
    lifting exactly those turns into the top would add to its R@k."""
    return len((gold & accepted) - top) / len(gold)


def ceiling(unseen: Unseen) -> float:
    """What lifting exactly the accepted gold turns missing from the top 10 would add."""
    top = {s for s, _ in unseen.results[:10]}
    return accepted_missing(unseen.gold, set(unseen.accepted), top)


def lowering_ceiling(unseen: Unseen) -> float:
    """What dropping from the results exactly the turns rejected for a judged question that
    are not gold here would add to R@10: the most lowering what was rejected could do."""
    order = [s for s, _ in unseen.results]
    kept = [s for s in order if not (unseen.rejected[s] and s not in unseen.gold)]
    return r10(kept, unseen.gold) - r10(order, unseen.gold)


def auc(scores: Sequence[float], labels: Sequence[bool]) -> float:
    """The chance that a random positive scores above a random negative (ties: half)."""
    values, truth = np.asarray(scores, dtype=np.float64), np.asarray(labels, dtype=bool)
    positive, negative = values[truth], values[~truth]
    if not len(positive) or not len(negative):
        return float("nan")
    above = sum(int((p > negative).sum()) + 0.5 * int((p == negative).sum()) for p in positive)
    return above / (len(positive) * len(negative))


def evidence(questions: Sequence[Unseen]) -> list[str]:
    """What the judgements tell a rule to go on (see the module docstring), as lines."""
    lifts: list[tuple[float, bool]] = []  # (likeness, gold here) per liftable accepted turn
    lows: list[tuple[float, bool]] = []  # (most alike rejecter, gold here) per rejected turn
    top_gold = top_turns = 0
    for q in questions:
        below = {s for s, _ in q.results[10:DEPTH]}
        for likeness, accepted in q.links:
            lifts += [(likeness, s in q.gold) for s in accepted if s in below]
        top = [s for s, _ in q.results[:10]]
        top_gold, top_turns = top_gold + len(q.gold & set(top)), top_turns + len(top)
        for source in top:
            rejecters = [likeness for likeness, rejected in q.refusals if source in rejected]
            if rejecters:
                lows.append((max(rejecters), source in q.gold))
    lines = []
    if lifts:
        liked, gold = zip(*lifts, strict=True)
        alike = [g for likeness, g in lifts if likeness >= 0.8]
        lines.append(
            f"accepted turns a re-rank could lift (ranked 11-{DEPTH}): {len(gold)} (turn,"
            f" unseen question) pairs, {sum(gold)} gold there; likeness tells them apart with"
            f" AUC {auc(liked, gold):.2f}; at likeness >= 0.8, {sum(alike)} gold of {len(alike)}"
        )
    if lows:
        liked, gold = zip(*lows, strict=True)
        lines.append(
            f"rejected turns in unseen top 10s: {len(gold)}, {sum(gold) / len(gold):.0%} gold"
            f" there (any turn in a top 10: {top_gold / max(top_turns, 1):.0%}); the likeness"
            f" of the most alike rejecter tells them apart with AUC {auc(liked, gold):.2f}"
        )
    lines.append(
        "ceiling of lowering exactly the rejected turns not gold there: "
        f"{np.mean([lowering_ceiling(q) for q in questions]):+.3f}"
    )
    return lines


def collect(
    conversations: Sequence[locomo.Conversation],
    embedder_kind: str,
    noise: bool,
    seed: int,
    split: int = 0,
    judged_depths: list[tuple[float, float, float]] | None = None,
) -> list[Unseen]:
    """Every conversation's unseen questions, with what its judged half said; each judged
    question's R@10, R@20 and R@40 before learning appended to ``judged_depths`` if given."""
    embedder = tune_ranking.load_embedder(embedder_kind)

    def unit(texts: list[str]) -> np.ndarray:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float64)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    out: list[Unseen] = []
    with tune_ranking.ingested(conversations, embedder, embedder_kind) as loaded:
        for conversation, memory in loaded:
            rng = random.Random(f"{seed}:{conversation.sample_id}")
            judged, unseen = locomo.halves(conversation, split)
            accepted: Counter[str] = Counter()
            rejected: Counter[str] = Counter()
            per_question: list[list[str]] = []
            refused: list[list[str]] = []
            shown: list[list[str]] = []
            for question in judged:
                mine, not_mine = [], []
                gold = set(question.gold)
                top = [r.source or "" for r in memory.recall(question.question, limit=10).results]
                for source in top:
                    good = rng.random() < 0.2 if noise else source in gold
                    (accepted if good else rejected)[source] += 1
                    (mine if good else not_mine).append(source)
                per_question.append(mine)
                refused.append(not_mine)
                shown.append(top)
            vectors = unit([q.question for q in judged] + [q.question for q in unseen])
            likeness = vectors[len(judged) :] @ vectors[: len(judged)].T
            turns = conversation.turns
            turn_vectors = dict(zip(turns, unit([t.text for t in turns.values()]), strict=True))
            examples = [
                (vector, np.stack([turn_vectors[s] for s in top]), [top.index(s) for s in mine])
                for vector, top, mine in zip(vectors, shown, per_question, strict=False)
                if mine
            ]
            corrections = {mu: learn_query_map(examples, mu) for mu in MAP_GRID["mu"]}
            judged_turns = [
                (s, s in mine)
                for top, mine in zip(shown, per_question, strict=True)
                for s in top
                if s in turn_vectors
            ]
            turn_matrix = np.stack([turn_vectors[s] for s, _ in judged_turns])
            labels = np.array([float(good) for _, good in judged_turns])
            classifiers = {
                lam: learn_turn_classifier(turn_matrix, labels, lam)
                for lam in CLASSIFIER_GRID["lam"]
            }
            for i, question in enumerate(unseen):
                results = memory.recall(question.question, limit=DEPTH).results
                vector = vectors[len(judged) + i]
                mapped = {}
                for mu, correction in corrections.items():
                    moved = vector + correction @ vector
                    mapped[mu] = moved / np.linalg.norm(moved)
                out.append(
                    Unseen(
                        set(question.gold),
                        [(r.source or "", r.score) for r in results],
                        accepted,
                        rejected,
                        [(float(s), a) for s, a in zip(likeness[i], per_question, strict=True)],
                        conversation.sample_id,
                        question.category,
                        asks_for_many(question.question),
                        vector,
                        mapped,
                        {r.source: turn_vectors[r.source] for r in results if r.source in turns},
                        classifiers,
                        [(float(s), r) for s, r in zip(likeness[i], refused, strict=True)],
                    )
                )
            # Last, so these recalls are no part of what the others saw.
            for question, top in zip(judged, shown, strict=True):
                if judged_depths is None:
                    break
                gold = set(question.gold)
                found = memory.recall(question.question, limit=DEPTH).results
                deeper = [r.source or "" for r in found]
                judged_depths.append(
                    (r10(top, gold), r10(deeper, gold, 20), r10(deeper, gold, DEPTH))
                )
    return out


#: A rule: the lift per source it gives an unseen question, at one grid point.
Rule = Callable[..., dict[str, float]]


#: Per grid point (in the grid's order), each question's R@10 change under a rule.
Table = list[tuple[dict[str, float], list[float]]]


def changes(questions: Sequence[Unseen], grid: dict[str, tuple[float, ...]], rule: Rule) -> Table:
    """Per point of ``grid`` (in its order), each question's R@10 change under ``rule``."""
    before = [r10([s for s, _ in q.results], q.gold) for q in questions]
    out = []
    for values in itertools.product(*grid.values()):
        after = [r10(reranked(q, rule(q, *values)), q.gold) for q in questions]
        change = [a - b for a, b in zip(after, before, strict=True)]
        out.append((dict(zip(grid, values, strict=True)), change))
    return out


def best_change(table: Table) -> tuple[float, dict[str, float]]:
    """The best in-sample R@10 change in ``table``, and its point (ties: the earlier point)."""
    best = (-1.0, {})
    for point, change in table:
        if (mean := float(np.mean(change))) > best[0]:
            best = (mean, point)
    return best


def cross_validated_change(questions: Sequence[Unseen], table: Table) -> float:
    """The R@10 change in ``table`` (of ``questions``) with each conversation's questions
    re-ranked at the point that the other conversations' questions chose (ties: the earlier
    point)."""
    return float(np.mean(held_out_changes(questions, table)))


def held_out_changes(questions: Sequence[Unseen], table: Table) -> list[float]:
    """Per question, grouped by conversation, its R@10 change in ``table`` at the point that
    the other conversations' questions chose (ties: the earlier point)."""
    out: list[float] = []
    for held_out in sorted({q.conversation for q in questions}):
        mine = [q.conversation == held_out for q in questions]
        others = [
            float(np.mean([c for c, m in zip(change, mine, strict=True) if not m]))
            for _, change in table
        ]
        chosen = table[int(np.argmax(others))]  # argmax keeps the first of equals
        out += [c for c, m in zip(chosen[1], mine, strict=True) if m]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    parser.add_argument(
        "--embedder", choices=("sentence-transformers", "hash"), default="sentence-transformers"
    )
    parser.add_argument("--noise", action="store_true", help="random judgements instead")
    parser.add_argument("--seed", type=int, default=0)
    locomo.add_split_argument(parser)
    args = parser.parse_args(argv)
    conversations = locomo.load_conversations(args.data)
    judged_depths: list[tuple[float, float, float]] = []
    questions = collect(
        conversations, args.embedder, args.noise, args.seed, args.split, judged_depths
    )
    before = np.mean([r10([s for s, _ in q.results], q.gold) for q in questions])
    kind = "random" if args.noise else "gold"
    print(f"LoCoMo, {len(questions)} unseen questions, {kind} judgements of the other half")
    print(f"unseen R@10 before learning (first {DEPTH} re-ranked): {before:.3f}")
    rules: list[tuple[str, Rule, dict[str, tuple[float, ...]]]] = [
        ("turn priors", prior_lift, PRIOR_GRID),
        ("question links", link_lift, LINK_GRID),
        ("turn priors, several things only", for_many_only(prior_lift), PRIOR_GRID),
        ("question links, several things only", for_many_only(link_lift), LINK_GRID),
        ("query map", map_lift, MAP_GRID),
        ("turn classifier", classifier_lift, CLASSIFIER_GRID),
    ]
    for name, rule, grid in rules:
        table = changes(questions, grid, rule)
        held_out = np.array(held_out_changes(questions, table))
        error = held_out.std(ddof=1) / np.sqrt(len(held_out))
        moved = f"questions up {(held_out > 0).sum()}, down {(held_out < 0).sum()}"
        change, point = best_change(table)
        print(
            f"{name}: {held_out.mean():+.3f} cross-validated (standard error {error:.3f}; "
            f"{moved}), {change:+.3f} in-sample at {point}"
        )
    print(f"ceiling: {np.mean([ceiling(q) for q in questions]):+.3f}")
    for category, name in locomo.CATEGORIES.items():
        mine = [q for q in questions if q.category == category]
        if mine:
            many = sum(q.many for q in mine)
            print(
                f"  {name:12} {len(mine):4} questions ({many} ask for several things): "
                f"{np.mean([ceiling(q) for q in mine]):+.3f}"
            )
    at10, at20, at40 = np.mean(judged_depths, axis=0)
    print(
        f"judged half before learning: R@10 {at10:.3f}, R@20 {at20:.3f}, R@{DEPTH} {at40:.3f};"
        " judged from its top 10, asked again it can hold at most what ranked in the first 10"
        " + the results rejected (about R@20) unless what it learns lifts gold from deeper"
    )
    print("what the judgements tell a rule to go on:")
    for line in evidence(questions):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
