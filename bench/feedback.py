"""Does recall learn from use? LoCoMo through MCP: judge half the questions, test the rest.

For each conversation, a fresh memory and server as ``bench/locomo.py`` makes them (its code:
the turns remembered the same way, the questions asked with ``recall(limit=10)``). The
questions are split in two halves (alternately, in the data's order; with ``--split N``, at
random, seeded by N and the conversation, to see how much a figure owes to one split):

1. the *unseen* half is asked: R@5/R@10 before learning;
2. the *judged* half is asked, one question at a time, and an agent judges each recall with
   ``feedback``: the gold turns found are accepted, the rest of the top 10 rejected (with
   ``--noise``: each result accepted with probability ``--noise-accept``, else rejected,
   whatever the gold says). With ``--depth K`` the agent reads the top K (``recall(limit=K)``)
   and accepts the gold turns found among them, still rejecting only the rest of the top 10
   (``--noise``: each of the K accepted with that probability); the judged half's first R@k
   are those of that recall;
3. the ranker is retrained (``Memory.retrain``, on the trainer's thread: the bench waits for
   it, no tool call trains) and the unseen half is asked again (after), then the judged half.

Printed: per conversation and overall, R@5/R@10 of the unseen half before/after and of the
judged half when judged/again, each conversation's model (version, whether it is used, its
held-out check), and what the judgements could tell the unseen half: the share of its gold
turns accepted for a judged question, how often an accepted turn in its top 10 is gold there
against how often another one is, and the most that lifting into its top 10 exactly its gold
turns accepted for a judged question could add. The targets (issue 12): unseen R@10 up by >= 0.03,
judged R@10 >= 0.90, and with ``--noise`` the unseen R@10 down by no more than 0.01.

With ``--grid KEY=V1,V2 ...`` (ranking weights or ``[store.learning]`` settings; several keys
make their product) each point is run on every conversation, and each conversation in turn is
scored at the point the other conversations chose: the best unseen-half R@10 change over their
questions, then the best judged half again (ties: the earlier point, so list the default
first). That leave-one-conversation-out figure is printed first, then each point in-sample.

Usage:
    python bench/feedback.py [--data PATH] [--embedder sentence-transformers|hash]
        [--conversations 0,1,...] [--noise] [--seed N] [--split N] [--depth K]
        [--learning KEY=VALUE ...]
        [--weights KEY=VALUE ...] [--grid KEY=V1,V2,... ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from locomo import (
    DEFAULT_DATA,
    KS,
    LIMIT,
    Asked,
    Conversation,
    _structured,
    add_split_argument,
    ask,
    halves,
    ingest,
    load_conversations,
    make_settings,
    mean,
    parse_weights,
)
from mcp.client import Client
from pydantic import ValidationError
from transfer import accepted_missing

from doxa.server.app import create_server
from doxa.store.embedder import Embedder, make_embedder
from doxa.store.memory import Memory
from doxa.store.settings import LearningSettings

#: Issue 12's targets.
TARGET_UNSEEN_GAIN = 0.03
TARGET_JUDGED = 0.90
TARGET_NOISE_LOSS = 0.01
#: How long the bench waits for a retrain.
TRAIN_WAIT_S = 600.0
#: The transfer figure that bounds what learning can add to the unseen half.
CEILING = "the most they could add to unseen R@10"
PHASES = ("unseen_before", "judged_first", "unseen_after", "judged_again")


def figures(asked: Sequence[Asked]) -> dict[str, float]:
    """R@k over the questions asked."""
    return {f"R@{k}": mean([a.recall_at(k) for a in asked]) for k in KS}


def judge(
    asked: Asked, noise: bool, accept_p: float, rng: random.Random
) -> tuple[list[str], list[str]]:
    """The agent's judgement of one recall: (accepted ids, rejected ids). What it finds good
    among everything it read is accepted; the rest of the top ``LIMIT`` is rejected."""
    accepted: list[str] = []
    rejected: list[str] = []
    gold = set(asked.question.gold)
    for rank, r in enumerate(asked.retrieved):
        good = rng.random() < accept_p if noise else r.source in gold
        if good:
            accepted.append(r.id)
        elif rank < LIMIT:
            rejected.append(r.id)
    return accepted, rejected


async def run_conversation(
    conversation: Conversation,
    embedder_kind: str,
    embedder: Embedder,
    learning: dict[str, Any],
    noise: bool,
    accept_p: float,
    seed: int,
    weights: dict[str, Any],
    depth: int = LIMIT,
    split: int = 0,
) -> dict[str, Any]:
    """One conversation's four phases; the asked questions per phase and its model."""
    rng = random.Random(f"{seed}:{conversation.sample_id}")
    judged_half, unseen_half = halves(conversation, split)
    with tempfile.TemporaryDirectory(prefix="doxa-feedback-") as tmp:
        settings = make_settings(Path(tmp) / "memory", embedder_kind, weights)
        # The bench asks for the retrain itself (after the judged half), so none starts
        # half-way.
        settings.store.learning = LearningSettings(**({"retrain_every": 0} | learning))
        memory = Memory.open(settings.store, embedder=embedder)
        memory.warm_up()
        phases: dict[str, list[Asked]] = {p: [] for p in PHASES}
        accepted_turns: set[str | None] = set()
        began = time.perf_counter()
        try:
            server = create_server(settings, memory)
            async with Client(server) as client:
                await ingest(client, conversation, memory)
                for q in unseen_half:
                    phases["unseen_before"].append((await ask(client, q))[0])
                for q in judged_half:
                    asked, recall_id = await ask(client, q, depth)
                    phases["judged_first"].append(asked)
                    accepted, rejected = judge(asked, noise, accept_p, rng)
                    chosen = set(accepted)
                    accepted_turns.update(r.source for r in asked.retrieved if r.id in chosen)
                    result = await client.call_tool(
                        "feedback",
                        {"recall_id": recall_id, "accepted": accepted, "rejected": rejected},
                    )
                    _structured(result, "feedback")
                trained = time.perf_counter()
                if not memory.wait_trained(memory.retrain(), timeout=TRAIN_WAIT_S):
                    raise RuntimeError(f"no retrain within {TRAIN_WAIT_S} s")
                train_s = time.perf_counter() - trained
                for q in unseen_half:
                    phases["unseen_after"].append((await ask(client, q))[0])
                for q in judged_half:
                    phases["judged_again"].append((await ask(client, q))[0])
                model = memory.ranker()
        finally:
            memory.close()
    return {
        "conversation": conversation.sample_id,
        "phases": phases,
        "model": None if model is None else model.as_json(),
        "transfer": what_transfers(phases["unseen_before"], accepted_turns),
        "train_s": train_s,
        "run_s": time.perf_counter() - began,
    }


def what_transfers(unseen: Sequence[Asked], accepted: set[str | None]) -> dict[str, float]:
    """What the judged half's acceptances could tell the unseen half, counted before learning:
    its gold turns (and how many of them were accepted for a judged question), in its top 10
    the accepted turns and the others (and how many of each are gold there), and the ceiling:
    the sum over its questions of the share of their gold that was accepted for a judged
    question and is missing from their top 10. Lifting exactly those turns into the top 10,
    and nothing else, is the most any use of the judgements can add to the unseen R@10."""
    counts = dict.fromkeys(("gold", "gold_accepted", "top_accepted", "top_accepted_gold"), 0.0)
    counts |= {"top_other": 0.0, "top_other_gold": 0.0, "questions": 0.0, "ceiling": 0.0}
    sources = {a for a in accepted if a}
    for asked in unseen:
        gold = set(asked.question.gold)
        counts["gold"] += len(gold)
        counts["gold_accepted"] += len(gold & accepted)
        top = asked.retrieved[:LIMIT]
        for r in top:
            kind = "top_accepted" if r.source in accepted else "top_other"
            counts[kind] += 1
            counts[f"{kind}_gold"] += r.source in gold
        if gold:
            counts["questions"] += 1
            shown = {r.source or "" for r in top}
            counts["ceiling"] += accepted_missing(gold, sources, shown)
    return counts


def transfer_shares(counts: dict[str, float]) -> dict[str, float]:
    """``what_transfers``'s counts as shares."""
    return {
        "unseen gold accepted for a judged question": counts["gold_accepted"] / counts["gold"],
        "gold among accepted turns in the unseen top 10": counts["top_accepted_gold"]
        / max(counts["top_accepted"], 1),
        "gold among the other turns there": counts["top_other_gold"] / max(counts["top_other"], 1),
        CEILING: counts["ceiling"] / max(counts["questions"], 1),
    }


def summary_of(runs: Sequence[dict[str, Any]], noise: bool) -> dict[str, Any]:
    """Per conversation and overall figures, and the targets' verdicts."""
    overall = {p: figures([a for r in runs for a in r["phases"][p]]) for p in PHASES}
    gain = overall["unseen_after"]["R@10"] - overall["unseen_before"]["R@10"]
    verdicts: dict[str, Any]
    if noise:
        verdicts = {"noise: unseen R@10 not down by more than 0.01": gain >= -TARGET_NOISE_LOSS}
    else:
        verdicts = {
            "unseen R@10 up by >= 0.03": gain >= TARGET_UNSEEN_GAIN,
            "judged R@10 again >= 0.90": overall["judged_again"]["R@10"] >= TARGET_JUDGED,
        }
    return {
        "noise": noise,
        "questions": {
            "unseen": sum(len(r["phases"]["unseen_before"]) for r in runs),
            "judged": sum(len(r["phases"]["judged_first"]) for r in runs),
        },
        "overall": overall,
        "unseen_R@10_change": gain,
        "transfer": transfer_shares(
            {k: sum(r["transfer"][k] for r in runs) for k in runs[0]["transfer"]}
        ),
        "per_conversation": {
            r["conversation"]: {
                **{p: figures(r["phases"][p]) for p in PHASES},
                "model": r["model"],
                "train_s": r["train_s"],
            }
            for r in runs
        },
        "targets": verdicts,
    }


def print_report(summary: dict[str, Any], data: Path, label: str) -> None:
    """The figures as a table."""
    kind = "NOISE judgements (random accept/reject)" if summary["noise"] else "gold judgements"
    print(f"LoCoMo learning from feedback through MCP   data: {data}")
    print(f"embedder: {label}; {kind}; the agent reads the top {summary['depth']}")
    q = summary["questions"]
    print(f"questions: {q['unseen']} unseen, {q['judged']} judged")
    print()
    print(f"{'':22}" + "".join(f"{p.replace('_', ' '):>16}" for p in PHASES))
    print(f"{'':22}" + "".join(f"{'R@5':>8}{'R@10':>8}" for _ in PHASES))

    def row(name: str, values: dict[str, dict[str, float]]) -> str:
        return f"{name:22}" + "".join(
            f"{values[p]['R@5']:>8.3f}{values[p]['R@10']:>8.3f}" for p in PHASES
        )

    print(row("overall", summary["overall"]))
    for name, values in summary["per_conversation"].items():
        print(row(name, values))
    print()
    print(f"unseen-half R@10 change: {summary['unseen_R@10_change']:+.3f}")
    shares = dict(summary["transfer"])
    ceiling = shares.pop(CEILING)
    print(
        "what the judgements could tell the unseen half (before learning): "
        + "; ".join(f"{k} {v:.1%}" for k, v in shares.items())
        + f"; {CEILING} {ceiling:+.3f}"
    )
    print("models (per conversation): version, used, held-out ordering base -> blend, examples")
    for name, values in summary["per_conversation"].items():
        model = values["model"]
        if model is None:
            print(f"  {name:20} none trained (too few judgements)")
            continue
        held = model["held_out"]
        check = (
            f"{held['base']:.3f} -> {held['blend']:.3f} on {int(held['recalls'])} recalls"
            if held
            else "no held-out check"
        )
        print(
            f"  {name:20} v{model['version']} {'used' if model['active'] else 'UNUSED'};"
            f" {check}; {model['examples']} examples; trained in {values['train_s']:.2f} s"
        )
    print(
        "targets: "
        + "; ".join(f"{k}: {'met' if ok else 'NOT met'}" for k, ok in summary["targets"].items())
    )


def parse_learning(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` overrides of ``[store.learning]``, checked."""
    values: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in LearningSettings.model_fields:
            known = ", ".join(LearningSettings.model_fields)
            raise SystemExit(
                f"--learning: expected KEY=VALUE with KEY one of {known}; got {pair!r}"
            )
        values[key] = value
    try:
        return LearningSettings(**values).model_dump(include=set(values))
    except ValidationError as error:
        raise SystemExit(f"--learning: {error}") from None


def parse_grid(pairs: Sequence[str]) -> list[dict[str, str]]:
    """``KEY=V1,V2`` pairs as their product of points (``KEY`` -> value text), in order."""
    points: list[dict[str, str]] = [{}]
    for pair in pairs:
        key, sep, values = pair.partition("=")
        if not sep or not values:
            raise SystemExit(f"--grid: expected KEY=V1,V2,...; got {pair!r}")
        points = [point | {key: value} for point in points for value in values.split(",")]
    return points


def point_settings(
    point: dict[str, str], weights: dict[str, Any], learning: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The ranking weights and learning settings of a grid point, over the run's own."""
    ranked = [f"{k}={v}" for k, v in point.items() if k not in LearningSettings.model_fields]
    learned = [f"{k}={v}" for k, v in point.items() if k in LearningSettings.model_fields]
    return weights | parse_weights(ranked), learning | parse_learning(learned)


def choice_score(runs: Sequence[dict[str, Any]]) -> tuple[float, float]:
    """What a fold chooses by: the unseen-half R@10 change, then the judged half again."""
    phases = {p: figures([a for r in runs for a in r["phases"][p]])["R@10"] for p in PHASES}
    return (
        round(phases["unseen_after"] - phases["unseen_before"], 9),
        round(phases["judged_again"], 9),
    )


def cross_validated(
    points: Sequence[dict[str, str]], runs: Sequence[Sequence[dict[str, Any]]], noise: bool
) -> dict[str, Any]:
    """Leave one conversation out: each conversation scored at the point (index into
    ``points``; ``runs[p]`` its runs, one per conversation) the others chose."""
    folds = []
    for held, name in enumerate(r["conversation"] for r in runs[0]):
        scores = [choice_score([r for i, r in enumerate(rs) if i != held]) for rs in runs]
        best = max(range(len(points)), key=lambda p: scores[p])  # ties: the earlier point
        folds.append({"held_out": name, "point": points[best], "run": runs[best][held]})
    summary = summary_of([f["run"] for f in folds], noise)
    summary["folds"] = [
        {
            "held_out": f["held_out"],
            "point": f["point"],
            **{p: figures(f["run"]["phases"][p]) for p in PHASES},
        }
        for f in folds
    ]
    return summary


def print_grid(
    points: Sequence[dict[str, str]],
    runs: Sequence[Sequence[dict[str, Any]]],
    cv: dict[str, Any],
) -> None:
    """The cross-validated figure first, its folds, then each point in-sample."""
    overall = cv["overall"]
    print(
        f"LEAVE-ONE-CONVERSATION-OUT over {len(points)} points: unseen-half R@10 change"
        f" {cv['unseen_R@10_change']:+.3f} ({overall['unseen_before']['R@10']:.3f} ->"
        f" {overall['unseen_after']['R@10']:.3f}); judged half again R@10"
        f" {overall['judged_again']['R@10']:.3f}"
    )
    for fold in cv["folds"]:
        change = fold["unseen_after"]["R@10"] - fold["unseen_before"]["R@10"]
        print(
            f"  {fold['held_out']:20} chose {point_text(fold['point'])}: unseen {change:+.3f},"
            f" judged again {fold['judged_again']['R@10']:.3f}"
        )
    print("in-sample, per point: unseen-half R@10 change, judged half again R@10")
    for point, point_runs in zip(points, runs, strict=True):
        gain, again = choice_score(point_runs)
        print(f"  {point_text(point):40} {gain:+.3f}  {again:.3f}")


def point_text(point: dict[str, str]) -> str:
    """A grid point as ``KEY=VALUE`` pairs."""
    return " ".join(f"{k}={v}" for k, v in point.items()) or "(the run's settings)"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--embedder", choices=("sentence-transformers", "hash"), default="sentence-transformers"
    )
    parser.add_argument(
        "--conversations", default=None, metavar="I,J", help="indexes of the conversations to run"
    )
    parser.add_argument("--noise", action="store_true", help="random judgements instead")
    parser.add_argument("--noise-accept", type=float, default=0.2, metavar="P")
    parser.add_argument(
        "--depth",
        type=int,
        default=LIMIT,
        metavar="K",
        help=f"results the agent reads and may accept (default {LIMIT}; rejects: top {LIMIT})",
    )
    parser.add_argument("--seed", type=int, default=0)
    add_split_argument(parser)
    parser.add_argument("--learning", nargs="+", action="extend", default=[], metavar="KEY=VALUE")
    parser.add_argument(
        "--weights",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=VALUE",
        help="override [store.ranking] settings, as bench/locomo.py takes them",
    )
    parser.add_argument(
        "--grid",
        nargs="+",
        action="extend",
        default=[],
        metavar="KEY=V1,V2",
        help="cross-validate these values (ranking weights or learning settings)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT")
    args = parser.parse_args(argv)
    weights = parse_weights(args.weights)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    learning = parse_learning(args.learning)
    conversations = load_conversations(args.data)
    if args.conversations:
        chosen = [int(i) for i in args.conversations.split(",")]
        conversations = [conversations[i] for i in chosen]
    probe = make_settings(Path(tempfile.gettempdir()), args.embedder, {}).store
    embedder = make_embedder(probe.embedding)
    embedder.load()
    points = parse_grid(args.grid) if args.grid else [{}]
    settings = [point_settings(point, weights, learning) for point in points]
    every: list[list[dict[str, Any]]] = []
    for point, (point_weights, point_learning) in zip(points, settings, strict=True):
        if args.grid:
            print(f"[point {point_text(point)}]", file=sys.stderr, flush=True)
        runs = []
        for conversation in conversations:
            run = anyio.run(
                run_conversation,
                conversation,
                args.embedder,
                embedder,
                point_learning,
                args.noise,
                args.noise_accept,
                args.seed,
                point_weights,
                args.depth,
                args.split,
            )
            runs.append(run)
            got = {p: figures(run["phases"][p])["R@10"] for p in PHASES}
            print(
                f"[{conversation.sample_id}: R@10 "
                + ", ".join(f"{p} {v:.3f}" for p, v in got.items())
                + f"; {run['run_s']:.0f} s]",
                file=sys.stderr,
                flush=True,
            )
        every.append(runs)
    runtime = getattr(embedder, "runtime", "")
    label = f"{args.embedder} ({runtime})" if runtime else args.embedder
    if args.grid:
        cv = cross_validated(points, every, args.noise)
        cv["depth"] = args.depth
        print("Cross-validated: each conversation at the point the other conversations chose")
        print_report(cv, args.data, label)
        print()
        print_grid(points, every, cv)
        result: dict[str, Any] = {
            "cross_validated": cv,
            "points": [
                {"point": point, **summary_of(runs, args.noise)}
                for point, runs in zip(points, every, strict=True)
            ],
        }
    else:
        result = summary_of(every[0], args.noise)
        result["depth"] = args.depth
        result["weights_overridden"] = weights
        result["learning"] = LearningSettings(**({"retrain_every": 0} | learning)).model_dump()
        print_report(result, args.data, label)
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
