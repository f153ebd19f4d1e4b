"""Recall quality of doxa on LoCoMo, measured through the real MCP tools.

For each conversation: a fresh temporary data directory and a fresh server (``create_server``)
driven by the in-memory MCP client. Every dialog turn is stored with the public ``remember``
tool (one batched call per session, turns in their order) as ``"Speaker: text"`` (plus
``" [image: caption]"``), topics [speaker], observed_at = the session's date, source = the
turn's dia_id, episode = the session key. Then every question of categories 1-4 is asked with
``recall(query=question, limit=10)``, and recall@k = |gold dia_ids ∩ sources of the top k| /
|gold| is averaged over the questions (k = 5 and 10).

Usage:
    python bench/locomo.py --data PATH [--embedder sentence-transformers|hash]
        [--limit-conversations N] [--json OUT] [--weights KEY=VALUE ...] [--dump-misses N]
        [--cv [--cv-grid JSON | --cv-grid-file PATH]]

The ranking weights were tuned on these conversations, so the plain figures are in-sample.
``--cv`` adds the honest figure, leave-one-conversation-out: for each conversation, the weights
are chosen from a grid (``bench/tune_ranking.py``'s ``DEFAULT_GRID`` unless ``--cv-grid``
gives a JSON object, setting -> list of values, or ``--cv-grid-file`` a file of it) by the
best R@10 on the other conversations, scored there through the store API (the same ranking,
faster), and then that conversation is measured through MCP with the chosen weights. The
cross-validated R@5/R@10, overall and per category, are printed first, beside the in-sample
figures of the plain run (the defaults, or ``--weights``, which are also the base the grid
changes); ``--json`` gets both (``cross_validation``). The grid costs 3-15 s a point.

The data file (CC BY-NC 4.0) is only read from the path given; never copy it into the repo.
DOXA_* environment variables are ignored so runs are reproducible; use the flags instead.
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.types import CallToolResult
from pydantic import ValidationError

from doxa.server.app import create_server
from doxa.server.settings import Settings, load_settings
from doxa.store.embedder import Embedder, make_embedder
from doxa.store.memory import Memory
from doxa.store.settings import RankingWeights

REPO_ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = REPO_ROOT.parent / "shared" / "bench" / "locomo" / "locomo-dev.json"

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
KS = (5, 10)
LIMIT = 10

#: Figures on locomo-dev.json (5 conversations), per-conversation corpora of 'Speaker: text'
#: turns (see STACK-NOTES.md, "Benchmarks").
BASELINES_R10 = {"BM25": 0.608, "all-MiniLM-L6-v2 dense": 0.524, "RRF(BM25, dense)": 0.612}
TARGETS = {"R@10": 0.75, "R@5": 0.65}

_SESSION = re.compile(r"session_(\d+)")
_EVIDENCE = re.compile(r"D:?(\d+):(\d+)")
_DATE_FORMAT = "%I:%M %p on %d %B, %Y"


# ---- data --------------------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    speaker: str
    text: str  # as remembered: "Speaker: text [image: caption]"


@dataclass
class Session:
    key: str  # "session_3"
    observed_at: str  # ISO 8601 UTC
    turns: list[Turn]


@dataclass
class Question:
    conversation: str
    category: int
    question: str
    answer: str
    gold: list[str]  # normalised dia_ids that name turns of the conversation


@dataclass
class Conversation:
    sample_id: str
    sessions: list[Session]
    questions: list[Question]
    skipped: int = 0  # questions of categories 1-4 without a valid evidence id
    dropped_ids: list[str] = field(default_factory=list)  # evidence ids naming no turn

    @property
    def turns(self) -> dict[str, Turn]:
        return {t.dia_id: t for s in self.sessions for t in s.turns}


def halves(conversation: Conversation, split: int = 0) -> tuple[list[Question], list[Question]]:
    """The judged and the unseen half of a conversation's questions: alternately in the data's
    order (``split`` 0), or at random into halves of the same sizes, seeded by ``split`` and
    the conversation, each half in the data's order."""
    questions = conversation.questions
    if not split:
        return list(questions[0::2]), list(questions[1::2])
    order = list(range(len(questions)))
    random.Random(f"split {split}:{conversation.sample_id}").shuffle(order)
    judged = set(order[: (len(questions) + 1) // 2])
    return (
        [q for i, q in enumerate(questions) if i in judged],
        [q for i, q in enumerate(questions) if i not in judged],
    )


def add_split_argument(parser: argparse.ArgumentParser) -> None:
    """``--split N``, the ``split`` of ``halves``."""
    parser.add_argument(
        "--split",
        type=int,
        default=0,
        metavar="N",
        help="halve at random, seeded by N (0: alternately)",
    )


def session_time(text: str) -> str:
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00Z' (the dataset gives no zone: UTC)."""
    moment = datetime.strptime(" ".join(text.split()), _DATE_FORMAT).replace(tzinfo=UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def evidence_ids(entries: Sequence[str]) -> list[str]:
    """Normalised dia_ids from evidence entries: 'D:11:26' -> 'D11:26', 'D30:05' -> 'D30:5';
    an entry may hold several ids separated by ';', ',' or spaces. Unreadable parts are dropped."""
    found: list[str] = []
    for entry in entries:
        for part in re.split(r"[;,\s]+", str(entry)):
            match = _EVIDENCE.fullmatch(part.strip())
            if match:
                dia_id = f"D{int(match[1])}:{int(match[2])}"
                if dia_id not in found:
                    found.append(dia_id)
    return found


def turn_text(turn: dict[str, Any]) -> str:
    text = f"{turn['speaker']}: {turn['text']}"
    caption = turn.get("blip_caption")
    if caption:
        text += f" [image: {caption}]"
    return text


def load_conversations(path: Path) -> list[Conversation]:
    items = json.loads(path.read_text(encoding="utf-8"))
    conversations = []
    for number, item in enumerate(items):
        conv = item["conversation"]
        sample_id = str(item.get("sample_id", f"conv-{number}"))
        keys = sorted(
            (k for k in conv if _SESSION.fullmatch(k) and isinstance(conv[k], list)),
            key=lambda k: int(k.split("_")[1]),
        )
        sessions = [
            Session(
                key=k,
                observed_at=session_time(conv[f"{k}_date_time"]),
                turns=[Turn(t["dia_id"], t["speaker"], turn_text(t)) for t in conv[k]],
            )
            for k in keys
            if conv[k]
        ]
        known = {t.dia_id for s in sessions for t in s.turns}
        out = Conversation(sample_id, sessions, [])
        for qa in item["qa"]:
            category = int(qa.get("category", 0))
            if category not in CATEGORIES:
                continue
            ids = evidence_ids(qa.get("evidence", []))
            out.dropped_ids += [i for i in ids if i not in known]
            gold = [i for i in ids if i in known]
            if not gold:
                out.skipped += 1
                continue
            out.questions.append(
                Question(sample_id, category, qa["question"], str(qa.get("answer", "")), gold)
            )
        conversations.append(out)
    return conversations


# ---- running -----------------------------------------------------------------------------------


@dataclass
class Retrieved:
    source: str | None
    text: str
    score: float
    scores: dict[str, float]
    id: str = ""


@dataclass
class Asked:
    question: Question
    retrieved: list[Retrieved]
    latency_ms: float

    def recall_at(self, k: int) -> float:
        top = {r.source for r in self.retrieved[:k]}
        return len(set(self.question.gold) & top) / len(self.question.gold)


@dataclass
class ConversationRun:
    conversation: Conversation
    asked: list[Asked]
    turns: int
    duplicates: int  # turns the server folded into an earlier identical text
    startup_s: float
    ingest_s: float


def _structured(result: CallToolResult, tool: str) -> dict[str, Any]:
    if result.is_error or result.structured_content is None:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise RuntimeError(f"{tool} failed: {text}")
    content: dict[str, Any] = result.structured_content
    return content


def make_settings(data_dir: Path, embedder: str, weights: dict[str, Any]) -> Settings:
    overrides: dict[tuple[str, ...], Any] = {
        ("store", "data_dir"): str(data_dir),
        ("store", "embedding", "kind"): embedder,
        ("server", "log_level"): "WARNING",
    }
    for key, value in weights.items():
        overrides[("store", "ranking", key)] = value
    return load_settings(environ={}, overrides=overrides)


async def ingest(client: Client, conversation: Conversation, memory: Memory) -> tuple[float, int]:
    """Remember every turn (one batched call per session) and wait until all are embedded:
    (seconds taken, turns the server folded into an earlier identical text)."""
    took = 0.0
    duplicates = 0
    for session in conversation.sessions:
        memories = [
            {
                "text": t.text,
                "topics": [t.speaker],
                "observed_at": session.observed_at,
                "source": t.dia_id,
                "episode": session.key,
            }
            for t in session.turns
        ]
        began = time.perf_counter()
        result = await client.call_tool("remember", {"memories": memories})
        took += time.perf_counter() - began
        done = _structured(result, "remember")["remembered"]
        duplicates += sum(1 for d in done if d.get("duplicate_of"))
    # Ingest counts until every turn is embedded: remember answers before that.
    began = time.perf_counter()
    memory.wait_embedded()
    took += time.perf_counter() - began
    return took, duplicates


async def ask(client: Client, question: Question, limit: int = LIMIT) -> tuple[Asked, str]:
    """Recall one question (top ``limit``, explained): what came back, and the recall id."""
    began = time.perf_counter()
    result = await client.call_tool(
        "recall", {"query": question.question, "limit": limit, "explain": True}
    )
    latency = (time.perf_counter() - began) * 1000
    found = _structured(result, "recall")
    retrieved = [
        Retrieved(r.get("source"), r["text"], r["score"], r.get("scores", {}), r["observation_id"])
        for r in found["results"]
    ]
    return Asked(question, retrieved, latency), str(found.get("recall_id", ""))


async def run_conversation(
    conversation: Conversation, embedder_kind: str, embedder: Embedder, weights: dict[str, Any]
) -> ConversationRun:
    with tempfile.TemporaryDirectory(prefix="doxa-locomo-") as tmp:
        settings = make_settings(Path(tmp) / "memory", embedder_kind, weights)
        started = time.perf_counter()
        # The loaded model is shared by the conversations; everything else is fresh.
        memory = Memory.open(settings.store, embedder=embedder)
        memory.warm_up()
        startup = time.perf_counter() - started
        try:
            server = create_server(settings, memory)
            async with Client(server) as client:
                took, duplicates = await ingest(client, conversation, memory)
                asked = [(await ask(client, q))[0] for q in conversation.questions]
        finally:
            memory.close()
    turns = sum(len(s.turns) for s in conversation.sessions)
    return ConversationRun(conversation, asked, turns, duplicates, startup, took)


# ---- report ------------------------------------------------------------------------------------


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (q in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def scores_of(asked: Sequence[Asked]) -> dict[str, Any]:
    return {
        "questions": len(asked),
        **{f"R@{k}": mean([a.recall_at(k) for a in asked]) for k in KS},
    }


def summarise(
    runs: list[ConversationRun],
    embedder: str,
    weights: dict[str, Any],
    effective: dict[str, Any],
    model_s: float,
) -> dict[str, Any]:
    asked = [a for r in runs for a in r.asked]
    latencies = [a.latency_ms for a in asked]
    turns = sum(r.turns for r in runs)
    ingest = sum(r.ingest_s for r in runs)
    return {
        "embedder": embedder,
        "weights_overridden": weights,
        "weights": effective,
        "overall": scores_of(asked),
        "per_category": {
            f"{c} {name}": scores_of([a for a in asked if a.question.category == c])
            for c, name in CATEGORIES.items()
        },
        "per_conversation": {
            r.conversation.sample_id: {
                **scores_of(r.asked),
                "turns": r.turns,
                "duplicates": r.duplicates,
                "skipped_questions": r.conversation.skipped,
                "dropped_evidence_ids": r.conversation.dropped_ids,
                "startup_s": r.startup_s,
                "ingest_s": r.ingest_s,
                "turns_per_s": r.turns / r.ingest_s if r.ingest_s else 0.0,
            }
            for r in runs
        },
        "skipped_questions": sum(r.conversation.skipped for r in runs),
        "dropped_evidence_ids": sum(len(r.conversation.dropped_ids) for r in runs),
        "timing": {
            "model_load_s": model_s,
            "startup_s": sum(r.startup_s for r in runs),
            "ingest_s": ingest,
            "turns": turns,
            "turns_per_s": turns / ingest if ingest else 0.0,
            "recall_calls": len(latencies),
            "recall_median_ms": percentile(latencies, 50),
            "recall_p95_ms": percentile(latencies, 95),
        },
        "baselines_R@10": BASELINES_R10,
        "targets": TARGETS,
        "questions": [
            {
                "conversation": a.question.conversation,
                "category": a.question.category,
                "question": a.question.question,
                "gold": a.question.gold,
                "retrieved": [r.source for r in a.retrieved],
                **{f"R@{k}": a.recall_at(k) for k in KS},
                "latency_ms": a.latency_ms,
            }
            for a in asked
        ],
    }


def print_report(summary: dict[str, Any], data: Path) -> None:
    overall = summary["overall"]
    timing = summary["timing"]
    print(f"LoCoMo recall through MCP   data: {data}")
    print(f"embedder: {summary['embedder']}")
    if summary["weights_overridden"]:
        shown = ", ".join(f"{k}={v}" for k, v in summary["weights_overridden"].items())
        print(f"ranking weights overridden: {shown}")
    print()
    print(f"{'':28}{'questions':>10}{'R@5':>8}{'R@10':>8}")
    print(f"{'overall':28}{overall['questions']:>10}{overall['R@5']:>8.3f}{overall['R@10']:>8.3f}")
    print()
    print("per category")
    for name, row in summary["per_category"].items():
        print(f"  {name:26}{row['questions']:>10}{row['R@5']:>8.3f}{row['R@10']:>8.3f}")
    print()
    print("per conversation")
    print(
        f"  {'':26}{'questions':>10}{'R@5':>8}{'R@10':>8}{'turns':>8}{'ingest s':>10}"
        f"{'turns/s':>9}{'skipped':>9}"
    )
    for name, row in summary["per_conversation"].items():
        print(
            f"  {name:26}{row['questions']:>10}{row['R@5']:>8.3f}{row['R@10']:>8.3f}"
            f"{row['turns']:>8}{row['ingest_s']:>10.2f}{row['turns_per_s']:>9.1f}"
            f"{row['skipped_questions']:>9}"
        )
    dupes = sum(r["duplicates"] for r in summary["per_conversation"].values())
    print()
    print(
        f"skipped questions (no valid evidence id): {summary['skipped_questions']}; "
        f"evidence ids naming no turn, dropped: {summary['dropped_evidence_ids']}; "
        f"turns folded as duplicates: {dupes}"
    )
    print()
    print("timing (wall clock; noisy on a shared machine)")
    print(f"  model load                 {timing['model_load_s']:.2f} s (once)")
    print(f"  memory start-up            {timing['startup_s']:.2f} s (all conversations)")
    print(
        f"  ingest                     {timing['ingest_s']:.2f} s for {timing['turns']} turns"
        f" = {timing['turns_per_s']:.1f} turns/s (remember calls through MCP, until embedded)"
    )
    print(
        f"  recall latency             median {timing['recall_median_ms']:.1f} ms, "
        f"p95 {timing['recall_p95_ms']:.1f} ms over {timing['recall_calls']} calls"
    )
    print()
    print(
        "baselines on locomo-dev (R@10): "
        + ", ".join(f"{k} {v:.3f}" for k, v in BASELINES_R10.items())
    )
    verdicts = []
    for metric, target in TARGETS.items():
        got = overall[metric]
        verdicts.append(
            f"{metric} >= {target:.2f}: {got:.3f} {'met' if got >= target else 'NOT met'}"
        )
    print("targets: " + "; ".join(verdicts))


def dump_misses(runs: list[ConversationRun], count: int) -> None:
    """Print ``count`` questions whose gold turns are not all in the top 10, spread evenly."""
    misses = [(r, a) for r in runs for a in r.asked if a.recall_at(LIMIT) < 1.0]
    total = sum(len(r.asked) for r in runs)
    print()
    print(f"misses: {len(misses)} of {total} questions lack a gold turn in the top {LIMIT}")
    if not misses or count <= 0:
        return
    step = max(1.0, len(misses) / count)
    chosen = [misses[int(i * step)] for i in range(min(count, len(misses)))]
    for number, (run, asked) in enumerate(chosen, 1):
        q = asked.question
        turns = run.conversation.turns
        ranks = {r.source: i for i, r in enumerate(asked.retrieved, 1)}
        print()
        print(f"--- miss {number}: {q.conversation} category {q.category} {CATEGORIES[q.category]}")
        print(f"Q: {q.question}")
        print(f"A: {q.answer}")
        for dia_id in q.gold:
            where = f"rank {ranks[dia_id]}" if dia_id in ranks else "MISSED"
            print(f"  gold {dia_id} ({where}): {turns[dia_id].text}")
        for i, r in enumerate(asked.retrieved[:3], 1):
            parts = " ".join(f"{k}={v:.2f}" for k, v in r.scores.items() if v)
            print(f"  top{i} {r.source} score {r.score:.3f} [{parts}]: {r.text}")


# ---- cross-validation --------------------------------------------------------------------------


def cross_validate(
    conversations: Sequence[Conversation],
    embedder_kind: str,
    embedder: Embedder,
    weights: dict[str, Any],
    grid: dict[str, list[Any]],
) -> dict[str, Any]:
    """Leave-one-conversation-out: weights chosen per fold on the other conversations (through
    the store API, by ``bench/tune_ranking.py``), each held-out conversation measured through
    MCP with its fold's weights. ``weights`` is the base every grid point changes.

    Raises:
        ValueError: a bad grid, or fewer than two conversations with questions.
    """
    # Imported here: tune_ranking imports this module, and the plain run does not need it.
    import tune_ranking

    base = make_settings(Path(tempfile.gettempdir()), embedder_kind, weights).store.ranking
    points = tune_ranking.grid_points(grid, base)
    began = time.perf_counter()
    cached = tune_ranking.CachedQueries(embedder)
    with tune_ranking.ingested(conversations, cached, embedder_kind) as loaded:

        def progress(number: int, row: tune_ranking.PointScores) -> None:
            got = tune_ranking.figures(row.questions)
            print(
                f"[cv grid {number + 1}/{len(points)}: R@10 {got.r10:.3f} "
                f"{tune_ranking.point_text(row.point)}]",
                file=sys.stderr,
                flush=True,
            )

        table = tune_ranking.score_grid(loaded, base, points, progress)
    selection_s = time.perf_counter() - began
    cv = tune_ranking.leave_one_out(table)
    by_name = {c.sample_id: c for c in conversations}
    held: list[Asked] = []
    folds = []
    for fold in cv.folds:
        chosen = weights | fold.point
        run = anyio.run(run_conversation, by_name[fold.held_out], embedder_kind, embedder, chosen)
        held += run.asked
        folds.append(
            {
                "held_out": fold.held_out,
                "index": fold.index,
                "point": fold.point,
                "weights_overridden": chosen,
                "training_store_api": fold.training.as_json(),
                "held_out_store_api": fold.held_out_figures.as_json(),
                **scores_of(run.asked),
            }
        )
        print(
            f"[cv {fold.held_out}: {len(run.asked)} questions, R@10 "
            f"{mean([a.recall_at(10) for a in run.asked]):.3f} with "
            f"{tune_ranking.point_text(fold.point)}]",
            file=sys.stderr,
            flush=True,
        )
    return {
        "method": "leave one conversation out; chosen by R@10 (then R@5) on the others through "
        "the store API; held-out conversation measured through MCP",
        "grid": grid,
        "base_weights": base.model_dump(),
        "overall": scores_of(held),
        "per_category": {
            f"{c} {name}": scores_of([a for a in held if a.question.category == c])
            for c, name in CATEGORIES.items()
        },
        "folds": folds,
        "selection_s": selection_s,
        "selection": tune_ranking.to_json(cv, table, base),
    }


def print_cross_validation(cross: dict[str, Any], summary: dict[str, Any]) -> None:
    """The cross-validated figures beside the in-sample ones of the plain run."""
    selection = cross["selection"]
    store_api = selection["cross_validation"]["overall"]
    which = "defaults" if not summary["weights_overridden"] else "--weights"
    print("LoCoMo recall, LEAVE-ONE-CONVERSATION-OUT (weights chosen on the other conversations,")
    print(f"held-out conversation measured through MCP); grid of {len(selection['points'])} points")
    print()
    print(f"{'':28}{'questions':>10}{'CV R@5':>9}{'CV R@10':>9}{'in-sample R@5':>16}{'R@10':>8}")
    rows = [("overall", cross["overall"], summary["overall"])] + [
        (f"  {name}", row, summary["per_category"][name])
        for name, row in cross["per_category"].items()
    ]
    for label, cv, plain in rows:
        print(
            f"{label:28}{cv['questions']:>10}{cv['R@5']:>9.3f}{cv['R@10']:>9.3f}"
            f"{plain['R@5']:>16.3f}{plain['R@10']:>8.3f}"
        )
    print(f"(in-sample: the plain run below, with the {which}, chosen on these conversations)")
    print(
        f"(the selection's own CV through the store API: R@5 {store_api['R@5']:.3f}, "
        f"R@10 {store_api['R@10']:.3f})"
    )
    print()
    print("per fold: held out, questions, R@5, R@10 through MCP; the point chosen")
    for fold in cross["folds"]:
        point = json.dumps(fold["point"]) if fold["point"] else "base"
        print(
            f"  {fold['held_out']:26}{fold['questions']:>10}{fold['R@5']:>9.3f}"
            f"{fold['R@10']:>9.3f}   #{fold['index']} {point}"
        )
    best = selection["in_sample_best"]
    point = json.dumps(best["point"]) if best["point"] else "base"
    print(
        f"in-sample best of the grid (store API): R@5 {best['overall']['R@5']:.3f}, "
        f"R@10 {best['overall']['R@10']:.3f}  #{best['index']} {point}"
    )
    print()
    print("-" * 78)
    print()


# ---- entry point -------------------------------------------------------------------------------


def parse_weights(pairs: Sequence[str]) -> dict[str, Any]:
    fields = RankingWeights.model_fields
    weights: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or key not in fields:
            known = ", ".join(fields)
            raise SystemExit(f"--weights: expected KEY=VALUE with KEY one of {known}; got {pair!r}")
        kind = int if fields[key].annotation is int else float
        try:
            weights[key] = kind(value)
        except ValueError:
            raise SystemExit(f"--weights: {key} needs a {kind.__name__}, got {value!r}") from None
    try:
        RankingWeights(**weights)  # range checks, before any work
    except ValidationError as error:
        problems = "; ".join(f"{e['loc'][0]}: {e['msg']}" for e in error.errors())
        raise SystemExit(f"--weights: {problems}") from None
    return weights


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data", type=Path, default=DEFAULT_DATA, help=f"LoCoMo JSON file (default {DEFAULT_DATA})"
    )
    parser.add_argument(
        "--embedder", choices=("sentence-transformers", "hash"), default="sentence-transformers"
    )
    parser.add_argument("--limit-conversations", type=int, default=None, metavar="N")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write figures")
    parser.add_argument(
        "--weights",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help=f"override [store.ranking] settings: {', '.join(RankingWeights.model_fields)}",
    )
    parser.add_argument(
        "--dump-misses", type=int, default=0, metavar="N", help="print N missed questions"
    )
    parser.add_argument(
        "--cv",
        action="store_true",
        help="also leave-one-conversation-out: weights chosen on the other conversations",
    )
    grids = parser.add_mutually_exclusive_group()
    grids.add_argument(
        "--cv-grid", default=None, metavar="JSON", help="--cv's grid: setting -> list of values"
    )
    grids.add_argument("--cv-grid-file", type=Path, default=None, metavar="PATH")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    weights = parse_weights(args.weights)
    conversations = load_conversations(args.data)
    if args.limit_conversations is not None:
        conversations = conversations[: args.limit_conversations]
    grid: dict[str, list[Any]] = {}
    if args.cv:
        import tune_ranking  # beside this file (see cross_validate)

        try:  # a bad grid fails now, not after the plain run
            grid = tune_ranking.read_grid(args.cv_grid, args.cv_grid_file)
            base = make_settings(Path(tempfile.gettempdir()), args.embedder, weights)
            tune_ranking.grid_points(grid, base.store.ranking)
        except ValueError as error:  # json.JSONDecodeError is one
            raise SystemExit(f"--cv-grid: {error}") from None
        if sum(1 for c in conversations if c.questions) < 2:
            raise SystemExit("--cv needs at least two conversations with questions")

    probe = make_settings(Path(tempfile.gettempdir()), args.embedder, weights).store
    began = time.perf_counter()
    embedding = probe.embedding
    embedder = make_embedder(embedding)
    embedder.load()
    model_s = time.perf_counter() - began

    runs = []
    for conversation in conversations:
        run = anyio.run(run_conversation, conversation, args.embedder, embedder, weights)
        runs.append(run)
        r10 = mean([a.recall_at(10) for a in run.asked])
        print(
            f"[{conversation.sample_id}: {run.turns} turns, {len(run.asked)} questions, "
            f"R@10 {r10:.3f}]",
            file=sys.stderr,
            flush=True,
        )
    # Which runtime ran the model (the ONNX embedder falls back to torch, and says why).
    runtime = getattr(embedder, "runtime", "torch" if args.embedder != "hash" else "")
    label = f"{args.embedder} ({runtime})" if runtime else args.embedder
    summary = summarise(runs, label, weights, probe.ranking.model_dump(), model_s)
    summary["data"] = str(args.data)
    if args.cv:
        cross = cross_validate(conversations, args.embedder, embedder, weights, grid)
        summary["cross_validation"] = cross
        print_cross_validation(cross, summary)
    print_report(summary, args.data)
    if args.dump_misses:
        dump_misses(runs, args.dump_misses)
    if args.json is not None:
        summary["misses"] = [
            asdict(a.question) | {"retrieved": [asdict(r) for r in a.retrieved]}
            for r in runs
            for a in r.asked
            if a.recall_at(LIMIT) < 1.0
        ]
        args.json.write_text(json.dumps(summary, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
