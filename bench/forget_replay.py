"""Forgetting as if never told: after one agent forgets one of its facts, does every agent's
history read as it would had that fact never been told?

Random tellings of one subject's single-valued predicate by three agents (four objects, so
agents often share a fact; starts over twelve days, told in random order) go into one memory;
then one telling's agent forgets it (a retraction, or the withdrawal of its belief where
others hold the fact too). The same tellings without that one go into a second memory. Each
agent's history, the objects ``recall(agent=..., subject=..., as_of=day)`` finds current on
each day, is compared between the two. Each sequence has a subject of its own, so a run is
two memories (real Kùzu and LanceDB, hash embedder) in a temporary directory.

A telling another repeated (the same agent, words and fact, still holding) is never the one
forgotten: the two are one memory, and forgetting it forgets both. Facts told late (after a
fact that begins later) change what the others were recorded as (an agent's later fact ends
a fact it alone held then, for every agent), so ``--in-order`` tells them in the order they
begin, isolating what the forget does.

Prints how many forgets leave a history other than the replay's, and the first few.

Run: ``python bench/forget_replay.py [--sequences 400] [--seed 0] [--in-order]`` (seconds).
"""

from __future__ import annotations

import argparse
import random
import tempfile
from pathlib import Path

from doxa.server.settings import load_settings
from doxa.store import FactDraft, Memory, MemoryDraft

AGENTS = ("ann", "bob", "cat")
OBJECTS = ("Athens", "Bonn", "Cork", "Delft")
DAYS = 12

Telling = tuple[str, str, int]  # agent, object, day it begins


def opened(data_dir: Path) -> Memory:
    settings = load_settings(
        environ={},
        overrides={("store", "data_dir"): str(data_dir), ("store", "embedding", "kind"): "hash"},
    )
    memory = Memory.open(settings.store)
    memory.warm_up()
    return memory


def tell(memory: Memory, subject: str, telling: Telling) -> tuple[str, bool]:
    """Remember one telling; (its observation id, whether it was a repeat of the agent's)."""
    agent, obj, day = telling
    when = f"2024-01-{day:02d}T00:00:00Z"
    [done] = memory.remember(
        [
            MemoryDraft(
                text=f"{subject} lives in {obj}.",
                agent=agent,
                observed_at=when,
                fact=FactDraft(subject, "lives in", obj),
            )
        ]
    )
    return done.observation_id, done.duplicate_of is not None


def history(memory: Memory, subject: str) -> dict[tuple[str, int], list[str]]:
    """(agent, day) -> the objects the agent held current at noon that day."""
    found = {}
    for agent in AGENTS:
        for day in range(1, DAYS + 2):
            results = memory.recall(
                "", subject=subject, agent=agent, as_of=f"2024-01-{day:02d}T12:00:00Z"
            ).results
            found[(agent, day)] = sorted(
                r.fact["object"] for r in results if r.current and r.fact is not None
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sequences", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--in-order", action="store_true", help="tell facts in the order they begin (none late)"
    )
    args = parser.parse_args()
    rng = random.Random(args.seed)
    differ: list[str] = []
    counted = 0
    with tempfile.TemporaryDirectory() as tmp:
        forgot, replayed = opened(Path(tmp) / "forgot"), opened(Path(tmp) / "replayed")
        try:
            for n in range(args.sequences):
                subject = f"Kim{n}"
                tellings = [
                    (rng.choice(AGENTS), rng.choice(OBJECTS), rng.randint(1, DAYS))
                    for _ in range(rng.randint(3, 8))
                ]
                if args.in_order:
                    tellings.sort(key=lambda t: t[2])
                told = [tell(forgot, subject, t) for t in tellings]
                # A repeat is the memory told before: forgetting either forgets both.
                repeated = {obs for obs, repeat in told if repeat}
                choices = [
                    i for i, (obs, repeat) in enumerate(told) if not repeat and obs not in repeated
                ]
                if not choices:
                    continue
                gone = rng.choice(choices)
                forgot.forget(told[gone][0], agent=tellings[gone][0])
                for i, telling in enumerate(tellings):
                    if i != gone:
                        tell(replayed, subject, telling)
                counted += 1
                a, b = history(forgot, subject), history(replayed, subject)
                if a != b:
                    first = next(k for k in a if a[k] != b[k])
                    differ.append(
                        f"{subject}: {tellings}, forgot #{gone}; {first}: {a[first]} vs {b[first]}"
                    )
        finally:
            forgot.close()
            replayed.close()
    print(f"forgets: {counted}; histories other than the replay's: {len(differ)}")
    for line in differ[:5]:
        print("  " + line)


if __name__ == "__main__":
    main()
