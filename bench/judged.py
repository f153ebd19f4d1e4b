"""Do recall, feedback and a start slow down as judgements pile up? In process, hash embedder.

A memory of ``--memories`` (4,500) generated memories (``bench/load.py``'s mix) is recalled
``--queries`` (300) times, three rounds, fresh; then judged recalls are added in steps
(``--steps``: 1,000 and 3,000 in all by default), each a recall of 10 results with
``feedback`` accepting about 3 of them and rejecting the rest, and the same recalls are timed
again. Every judgement is read by every later recall (its query's likeness to the new one
decides what it lends), so some growth is expected; what matters is how much.

Printed: per step, the judged recalls so far, the judgements, recall's median time over
the rounds (ms per recall) with its ratio to the fresh memory's, the median time of the
step's feedback calls, and how long a retrain of the ranker on them all takes (asked for
after the step's recalls were timed, waited for; with the examples it learned from and
whether recall uses the model: random judgements should leave it unused); then how long the
memory takes to start again with them all (a start replays every judged recall).

Usage: ``python bench/judged.py [--memories N] [--queries N] [--steps 1000,3000]``
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence

from load import Mix

from doxa.server.settings import load_settings
from doxa.store.drafts import MemoryDraft
from doxa.store.memory import Memory

ROUNDS = 3


def timed(memory: Memory, queries: Sequence[str]) -> float:
    """Median over ``ROUNDS`` of the mean ms per recall of ``queries`` (after a warm-up)."""
    for query in queries[:30]:
        memory.recall(query, limit=10)
    rounds = []
    for _ in range(ROUNDS):
        began = time.perf_counter()
        for query in queries:
            memory.recall(query, limit=10)
        rounds.append(1000 * (time.perf_counter() - began) / len(queries))
    return statistics.median(rounds)


def judge(memory: Memory, mix: Mix, count: int, rng: random.Random) -> tuple[int, float]:
    """``count`` judged recalls; the judgements made and the median ms per feedback."""
    made = 0
    took = []
    for _ in range(count):
        outcome = memory.recall(mix.query(), limit=10)
        ids = [r.observation_id for r in outcome.results]
        accepted = [i for i in ids if rng.random() < 0.3]
        rejected = [i for i in ids if i not in accepted]
        began = time.perf_counter()
        memory.feedback(outcome.recall_id, accepted, rejected)
        took.append(1000 * (time.perf_counter() - began))
        made += len(ids)
    return made, statistics.median(took)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=4500)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--steps", default="1000,3000", metavar="N,M")
    args = parser.parse_args(argv)
    steps = [int(s) for s in args.steps.split(",")]
    mix = Mix("judged", seed=5)
    with tempfile.TemporaryDirectory(prefix="doxa-judged-") as tmp:
        settings = load_settings(environ={"DOXA_EMBEDDER": "hash", "DOXA_DATA_DIR": tmp})
        # No retrain but the bench's own: this measures the judgements' cost, not a model's.
        settings.store.learning = settings.store.learning.model_copy(update={"retrain_every": 0})
        memory = Memory.open(settings.store)
        try:
            memory.warm_up()
            drafts = [MemoryDraft(text=mix.text(), topics=["fill"]) for _ in range(args.memories)]
            memory.remember(drafts, batch=True)
            memory.wait_embedded()
            queries = [mix.query() for _ in range(args.queries)]
            fresh = timed(memory, queries)
            print(f"{args.memories} memories, {args.queries} recalls x {ROUNDS} rounds, hash")
            print(
                f"{'judged recalls':>15}{'judgements':>12}{'ms/recall':>11}{'vs fresh':>10}"
                f"{'ms/feedback':>13}{'s/retrain':>11}  model"
            )
            print(f"{0:>15}{0:>12}{fresh:>11.2f}{1.0:>10.2f}{'':>13}", flush=True)
            rng = random.Random(1)
            done = made = 0
            for step in steps:
                judged, feedback_ms = judge(memory, mix, step - done, rng)
                made += judged
                done = step
                took = timed(memory, queries)
                began = time.perf_counter()
                if not memory.wait_trained(memory.retrain(), timeout=600):
                    raise RuntimeError("no retrain within 600 s")
                retrain_s = time.perf_counter() - began
                model = memory.ranker()
                learned = (
                    "none trained"
                    if model is None
                    else f"{model.examples} examples, {'used' if model.active else 'unused'}"
                )
                print(
                    f"{done:>15}{made:>12}{took:>11.2f}{took / fresh:>10.2f}{feedback_ms:>13.2f}"
                    f"{retrain_s:>11.2f}  {learned}",
                    flush=True,
                )
        finally:
            memory.close()
        began = time.perf_counter()
        again = Memory.open(settings.store)
        try:
            again.warm_up()
            print(f"start with them all: {time.perf_counter() - began:.2f} s")
        finally:
            again.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
