"""Tune recall's ranking weights on LoCoMo, honestly: leave-one-conversation-out (LOCO).

    python bench/tune_ranking.py --data ../shared/bench/locomo/locomo-dev.json
    python bench/tune_ranking.py --grid '{"neighbourhood": [0.4, 0.5, 0.6], "time": [0.2, 0.4]}'
    python bench/tune_ranking.py --grid-file GRID.json --embedder hash --json OUT.json

Each conversation is remembered once through the store API (the drafts of ``bench/locomo.py``:
"Speaker: text", topics [speaker], the session's date, source = dia_id, episode = session;
the store settings of ``configs/default.toml``), query embeddings are cached, and every point
of the grid (a JSON object: ranking setting -> list of values, any field of
``RankingWeights``; the other settings keep their defaults) is scored per question by R@5 and
R@10 over the questions of categories 1-4. Without ``--grid``/``--grid-file`` the coarse
``DEFAULT_GRID`` (72 points, the defaults among them) is used; one point takes 3-15 s with the
model on all five conversations, depending on the machine's load.

Then, for each conversation held out in turn, the point with the best mean R@10 over the
questions of the other conversations is chosen (ties: better R@5, then the first in grid order)
and scored on the held-out one. Printed first: the cross-validated R@5/R@10 (mean over every
held-out question), overall and per category, and the point each fold chose: the figure to
quote. Next, the in-sample best, chosen and scored on the same questions, so it flatters; it
is what the defaults should be set to (where the folds disagree, the data does not settle that
weight: take a round value in the middle of the plateau). Then the defaults' own in-sample
figures (when the grid holds them) and the five best points in-sample.

``--json OUT`` writes the cross-validation, the in-sample best, the defaults' figures (when the
grid holds them), each point's figures and the per-question table (R@5 and R@10 per point, in
the order of ``questions``). ``--embedder hash`` runs without the model (tests, smoke runs).

The data file (CC BY-NC 4.0) is only read from the path given; never copy it into the repo.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo  # the benchmark beside this file: data loading, settings and the metric

from doxa.store import Memory, MemoryDraft
from doxa.store.embedder import Embedder, make_embedder
from doxa.store.settings import RankingWeights

#: The default grid: 2 x 3 x 2 x 3 x 2 = 72 points over what moves LoCoMo, the defaults among
#: them; ``spread`` and ``length`` 0 are those rules off, so the cross-validation also decides
#: whether they pay. The previous grid (48 points, with ``broad_topic_share`` 0 / 0.2 and
#: ``topic`` 0.12 / 0.36 / 0.6) had every fold choose ``broad_topic_share`` 0.2 and ``topic``
#: 0.36, so they are held there; a grid of ``length`` alone (0-0.8 over 25-60 words) chose 0.3
#: in every fold. Earlier grids over ``time`` and ``dated`` (0.3-0.6) settled them; ``text``
#: 0.35 recalls 0.003 more here but lowers what feedback teaches (``bench/feedback.py``), so
#: it is held at 0.5. ``fact`` is left out: the bench remembers no facts.
DEFAULT_GRID: dict[str, list[Any]] = {
    "neighbourhood": [0.5, 0.9],
    "neighbour_window": [2, 4, 6],
    "neighbour_decay": [0.8, 0.9],
    "spread": [0.0, 0.15, 0.3],
    "length": [0.0, 0.3],
}


class CachedQueries:
    """An embedder remembering query embeddings (a recall embeds one or two texts) across
    grid points: each question is embedded once, not once per point."""

    def __init__(self, inner: Embedder) -> None:
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
        if len(texts) > 2:  # memories, not a query (and its focused form)
            return self._inner.embed(texts)
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing:
            self._cache.update(zip(missing, self._inner.embed(missing), strict=True))
        return np.stack([self._cache[t] for t in texts])


# ---- the table: one row per question, per grid point -------------------------------------------


@dataclass(frozen=True)
class QuestionScore:
    """Recall of one question at one grid point."""

    conversation: str
    category: int
    r5: float
    r10: float


@dataclass(frozen=True)
class PointScores:
    """One grid point (the settings it changes from the base) and its score per question."""

    point: dict[str, Any]
    questions: list[QuestionScore]


@dataclass(frozen=True)
class Figures:
    """Mean recall over a set of questions."""

    questions: int
    r5: float
    r10: float

    def as_json(self) -> dict[str, Any]:
        """The figures as ``bench/locomo.py`` writes them."""
        return {"questions": self.questions, "R@5": self.r5, "R@10": self.r10}


@dataclass(frozen=True)
class Fold:
    """One held-out conversation: the point chosen on the others, and its score on this one."""

    held_out: str
    index: int  # of the chosen point, in grid order
    point: dict[str, Any]
    training: Figures  # the chosen point on the other conversations
    held_out_figures: Figures
    held_out_questions: list[QuestionScore]


@dataclass(frozen=True)
class Choice:
    """A point chosen on a set of questions, with its figures there."""

    index: int
    point: dict[str, Any]
    overall: Figures
    per_category: dict[int, Figures]


@dataclass(frozen=True)
class CrossValidation:
    """Leave-one-conversation-out figures, and the in-sample best for comparison."""

    folds: list[Fold]
    overall: Figures  # over every held-out question
    per_category: dict[int, Figures]
    in_sample: Choice  # the best point over all conversations


def figures(scores: Sequence[QuestionScore]) -> Figures:
    """Mean R@5 and R@10 over ``scores`` (zeros when empty)."""
    count = len(scores)
    if not count:
        return Figures(0, 0.0, 0.0)
    return Figures(count, sum(s.r5 for s in scores) / count, sum(s.r10 for s in scores) / count)


def by_category(scores: Sequence[QuestionScore]) -> dict[int, Figures]:
    """Figures per LoCoMo category (1-4, every one present, possibly with no questions)."""
    return {c: figures([s for s in scores if s.category == c]) for c in locomo.CATEGORIES}


def best_point(table: Sequence[PointScores], held_out: str | None = None) -> int:
    """Index of the point with the best mean R@10 over the questions of every conversation but
    ``held_out`` (all of them when None); ties go to the better R@5, then to the first in grid
    order."""
    best = 0
    best_key: tuple[float, float] | None = None
    for index, row in enumerate(table):
        got = figures([s for s in row.questions if s.conversation != held_out])
        key = (got.r10, got.r5)
        # Strictly greater: an equal later point never displaces an earlier one.
        if best_key is None or key > best_key:
            best, best_key = index, key
    return best


def leave_one_out(table: Sequence[PointScores]) -> CrossValidation:
    """Leave-one-conversation-out cross-validation over a scored grid (pure: no I/O).

    For each conversation, the point with the best mean R@10 over the questions of all the
    other conversations is chosen (ties: better R@5, then the first point), and its scores on
    the held-out conversation are kept. The cross-validated figures are the means over every
    held-out question, so a conversation counts by its number of questions.

    Args:
        table: the grid points in grid order, each scored on the same questions in the same
            order (conversation and category per question).

    Raises:
        ValueError: the table is empty, its points cover different questions, or the
            questions come from fewer than two conversations.
    """
    if not table:
        raise ValueError("an empty grid")
    asked = [(s.conversation, s.category) for s in table[0].questions]
    for row in table[1:]:
        if [(s.conversation, s.category) for s in row.questions] != asked:
            raise ValueError(f"point {row.point} was scored on other questions than the first")
    conversations = list(dict.fromkeys(name for name, _ in asked))
    if len(conversations) < 2:
        raise ValueError("leaving one conversation out needs at least two conversations")
    folds = []
    for held_out in conversations:
        index = best_point(table, held_out)
        row = table[index]
        held = [s for s in row.questions if s.conversation == held_out]
        folds.append(
            Fold(
                held_out=held_out,
                index=index,
                point=row.point,
                training=figures([s for s in row.questions if s.conversation != held_out]),
                held_out_figures=figures(held),
                held_out_questions=held,
            )
        )
    pooled = [s for fold in folds for s in fold.held_out_questions]
    best = best_point(table)
    in_sample = Choice(
        best, table[best].point, figures(table[best].questions), by_category(table[best].questions)
    )
    return CrossValidation(folds, figures(pooled), by_category(pooled), in_sample)


# ---- the grid ----------------------------------------------------------------------------------


def grid_points(grid: Mapping[str, Sequence[Any]], base: RankingWeights) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in order (the last setting varies fastest).

    Raises:
        ValueError: a key is not a ranking setting, a value list is empty or not a list, or
            a combination is out of a setting's range.
    """
    fields = RankingWeights.model_fields
    for key, values in grid.items():
        if key not in fields:
            raise ValueError(f"grid: {key!r} is not a ranking setting; one of {', '.join(fields)}")
        if not isinstance(values, list) or not values:
            raise ValueError(f"grid: {key!r} needs a non-empty list of values")
    points = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]
    for point in points:
        weights_of(base, point)  # range checks before any work
    return points


def weights_of(base: RankingWeights, point: Mapping[str, Any]) -> RankingWeights:
    """``base`` with the point's settings changed, validated (``model_copy`` would not check
    ranges, so a typo in a grid would be scored silently)."""
    try:
        return RankingWeights.model_validate(base.model_dump() | dict(point))
    except ValidationError as error:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())
        raise ValueError(f"grid point {dict(point)}: {problems}") from None


def read_grid(text: str | None, file: Path | None) -> dict[str, list[Any]]:
    """The grid from ``--grid`` JSON or ``--grid-file``; ``DEFAULT_GRID`` when neither.

    Raises:
        ValueError: the JSON is not an object.
    """
    if file is not None:
        text = file.read_text(encoding="utf-8")
    if text is None:
        return {k: list(v) for k, v in DEFAULT_GRID.items()}
    grid = json.loads(text)
    if not isinstance(grid, dict):
        raise ValueError("grid: expected a JSON object, setting -> list of values")
    return grid


# ---- ingest and scoring ------------------------------------------------------------------------


@contextmanager
def ingested(
    conversations: Sequence[locomo.Conversation], embedder: Embedder, embedder_kind: str
) -> Iterator[list[tuple[locomo.Conversation, Memory]]]:
    """One memory per conversation in a temporary directory, every turn remembered in order;
    closed and removed on exit."""
    loaded: list[tuple[locomo.Conversation, Memory]] = []
    with tempfile.TemporaryDirectory(prefix="doxa-tune-") as tmp:
        try:
            for number, conversation in enumerate(conversations):
                # The settings the MCP benchmark uses (configs/default.toml, no DOXA_* env).
                settings = locomo.make_settings(Path(tmp) / str(number), embedder_kind, {})
                memory = Memory.open(settings.store, embedder=embedder)
                loaded.append((conversation, memory))
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
                memory.wait_embedded()
            yield loaded
        finally:
            for _, memory in loaded:
                memory.close()


def score_point(
    loaded: Sequence[tuple[locomo.Conversation, Memory]], weights: RankingWeights
) -> list[QuestionScore]:
    """R@5 and R@10 of every question with these weights, in conversation and question order."""
    scores = []
    for conversation, memory in loaded:
        memory.settings = memory.settings.model_copy(update={"ranking": weights})
        for question in conversation.questions:
            sources = [r.source for r in memory.recall(question.question, limit=10).results]
            gold = set(question.gold)
            scores.append(
                QuestionScore(
                    conversation.sample_id,
                    question.category,
                    len(gold & set(sources[:5])) / len(gold),
                    len(gold & set(sources)) / len(gold),
                )
            )
    return scores


def score_grid(
    loaded: Sequence[tuple[locomo.Conversation, Memory]],
    base: RankingWeights,
    points: Sequence[dict[str, Any]],
    progress: Callable[[int, PointScores], None] | None = None,
) -> list[PointScores]:
    """Every point scored per question; ``progress`` hears of each point as it is done."""
    table = []
    for number, point in enumerate(points):
        row = PointScores(point, score_point(loaded, weights_of(base, point)))
        table.append(row)
        if progress is not None:
            progress(number, row)
    return table


# ---- report ------------------------------------------------------------------------------------


def category_name(category: int) -> str:
    """'1 multi-hop', as ``bench/locomo.py`` names categories."""
    return f"{category} {locomo.CATEGORIES[category]}"


def point_text(point: Mapping[str, Any]) -> str:
    """A grid point in a line; ``defaults`` for the point that changes nothing."""
    return json.dumps(dict(point)) if point else "defaults"


def report_lines(
    cv: CrossValidation, table: Sequence[PointScores], base: RankingWeights
) -> list[str]:
    """The report: cross-validated figures first, then the in-sample best, the defaults
    (``base``) when the grid holds them, and the five best points in-sample."""
    lines = [
        f"LEAVE-ONE-CONVERSATION-OUT over {len(table)} grid points, {len(cv.folds)} folds",
        f"{'':28}{'questions':>10}{'R@5':>8}{'R@10':>8}",
        _row("cross-validated", cv.overall),
        *(_row(f"  {category_name(c)}", f) for c, f in cv.per_category.items()),
        "",
        "per fold (chosen on the other conversations; scored on the held-out one)",
    ]
    for fold in cv.folds:
        lines.append(
            f"  {fold.held_out:26}{fold.held_out_figures.questions:>10}"
            f"{fold.held_out_figures.r5:>8.3f}{fold.held_out_figures.r10:>8.3f}"
            f"   train R@10 {fold.training.r10:.3f}  #{fold.index} {point_text(fold.point)}"
        )
    best = cv.in_sample
    lines += [
        "",
        f"IN-SAMPLE best (chosen and scored on all conversations: flatters): "
        f"#{best.index} {point_text(best.point)}",
        _row("in-sample", best.overall),
        *(_row(f"  {category_name(c)}", f) for c, f in best.per_category.items()),
    ]
    defaults = defaults_index(table, base)
    if defaults is not None:
        lines.append(_row(f"defaults (#{defaults}, in-sample)", figures(table[defaults].questions)))
    lines += ["", "five best in-sample"]
    for index in _ranked(table)[-5:]:
        got = figures(table[index].questions)
        lines.append(
            f"  R@5 {got.r5:.3f}  R@10 {got.r10:.3f}  #{index} {point_text(table[index].point)}"
        )
    return lines


def _ranked(table: Sequence[PointScores]) -> list[int]:
    """Point indices, worst first, best last (by the order ``best_point`` uses)."""
    keys = [(f.r10, f.r5, -i) for i, f in enumerate(figures(row.questions) for row in table)]
    return sorted(range(len(table)), key=lambda i: keys[i])


def _row(label: str, got: Figures) -> str:
    return f"{label:28}{got.questions:>10}{got.r5:>8.3f}{got.r10:>8.3f}"


def defaults_index(table: Sequence[PointScores], base: RankingWeights) -> int | None:
    """Index of the first point that leaves every setting as ``base`` has it, if any."""
    reference = base.model_dump()
    for index, row in enumerate(table):
        if all(reference.get(k) == v for k, v in row.point.items()):
            return index
    return None


def to_json(
    cv: CrossValidation, table: Sequence[PointScores], base: RankingWeights
) -> dict[str, Any]:
    """Everything measured: the cross-validation, the in-sample best, each point's figures,
    and the per-question table (enough to redo the selection offline)."""

    def categories(scores: Sequence[QuestionScore]) -> dict[str, Any]:
        return {category_name(c): f.as_json() for c, f in by_category(scores).items()}

    conversations = list(dict.fromkeys(s.conversation for s in table[0].questions))
    defaults = defaults_index(table, base)
    return {
        "cross_validation": {
            "overall": cv.overall.as_json(),
            "per_category": {category_name(c): f.as_json() for c, f in cv.per_category.items()},
            "folds": [
                {
                    "held_out": fold.held_out,
                    "index": fold.index,
                    "point": fold.point,
                    "training": fold.training.as_json(),
                    "held_out_figures": fold.held_out_figures.as_json(),
                    "held_out_per_category": categories(fold.held_out_questions),
                }
                for fold in cv.folds
            ],
        },
        "in_sample_best": {
            "index": cv.in_sample.index,
            "point": cv.in_sample.point,
            "overall": cv.in_sample.overall.as_json(),
            "per_category": {
                category_name(c): f.as_json() for c, f in cv.in_sample.per_category.items()
            },
        },
        "defaults_index": defaults,
        "points": [
            {
                "index": index,
                "point": row.point,
                "overall": figures(row.questions).as_json(),
                "per_category": categories(row.questions),
                "per_conversation": {
                    name: figures([s for s in row.questions if s.conversation == name]).as_json()
                    for name in conversations
                },
            }
            for index, row in enumerate(table)
        ],
        "questions": [
            {"conversation": s.conversation, "category": s.category} for s in table[0].questions
        ],
        "table": [
            {"R@5": [s.r5 for s in row.questions], "R@10": [s.r10 for s in row.questions]}
            for row in table
        ],
    }


# ---- entry point -------------------------------------------------------------------------------


def load_embedder(kind: str) -> Embedder:
    """The embedder the MCP benchmark would use for ``kind``, loaded, with queries cached."""
    embedder = make_embedder(
        locomo.make_settings(Path(tempfile.gettempdir()), kind, {}).store.embedding
    )
    embedder.load()
    return CachedQueries(embedder)


def main(argv: Sequence[str] | None = None) -> int:
    """Score the grid, cross-validate, print the report; 0 on success."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=locomo.DEFAULT_DATA)
    grids = parser.add_mutually_exclusive_group()
    grids.add_argument("--grid", default=None, help="JSON: ranking setting -> list of values")
    grids.add_argument(
        "--grid-file", type=Path, default=None, metavar="PATH", help="the same, in a file"
    )
    parser.add_argument(
        "--embedder", choices=("sentence-transformers", "hash"), default="sentence-transformers"
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write figures")
    args = parser.parse_args(argv)

    base = locomo.make_settings(Path(tempfile.gettempdir()), args.embedder, {}).store.ranking
    try:
        grid = read_grid(args.grid, args.grid_file)
        points = grid_points(grid, base)
    except (ValueError, json.JSONDecodeError) as error:
        raise SystemExit(str(error)) from None
    conversations = locomo.load_conversations(args.data)
    started = time.perf_counter()
    embedder = load_embedder(args.embedder)
    with ingested(conversations, embedder, args.embedder) as loaded:
        print(
            f"ingested {len(loaded)} conversations in {time.perf_counter() - started:.0f} s; "
            f"scoring {len(points)} points",
            file=sys.stderr,
            flush=True,
        )

        def progress(number: int, row: PointScores) -> None:
            got = figures(row.questions)
            print(
                f"[{number + 1}/{len(points)}] R@5 {got.r5:.3f}  R@10 {got.r10:.3f}  "
                f"{point_text(row.point)}",
                file=sys.stderr,
                flush=True,
            )

        table = score_grid(loaded, base, points, progress)
    print(f"data: {args.data}   embedder: {args.embedder}   grid: {json.dumps(grid)}")
    if len({s.conversation for s in table[0].questions}) < 2:
        # One conversation: nothing to hold out; the grid alone, best last.
        for index in _ranked(table):
            row = table[index]
            got = figures(row.questions)
            print(f"R@5 {got.r5:.3f}  R@10 {got.r10:.3f}  #{index} {point_text(row.point)}")
        return 0
    cv = leave_one_out(table)
    print("\n".join(report_lines(cv, table, base)))
    if args.json is not None:
        out = {"data": str(args.data), "embedder": args.embedder, "grid": grid}
        out |= {"base_weights": base.model_dump()} | to_json(cv, table, base)
        args.json.write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
