"""How long a memory takes to start and stop, as a test, a command or a server pays it.

Makes a new memory with the hash embedder once, then, ``--runs`` (20) times, copies it and
opens it on a fresh copy in this process (``Memory.open`` + ``warm_up``: the graph opened,
its schema checked, the working memory loaded, the index repaired, the background threads
started), writes one note, and closes it (the graph's checkpoint included). Prints the
median and quartiles of each part, in milliseconds, and the wall time of one-shot commands
each in their own process as a user runs them (``doxa stats`` and ``doxa recall``: imports
included, which are most of it).

Run: ``python bench/startup.py [--runs N] [--commands N]`` (about half a minute).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from export import settings_for  # bench/export.py: a hash-embedder memory's settings

DOXA = [sys.executable, "-m", "doxa.server"]


def quartiles(values: list[float]) -> str:
    """Median (first quartile-third quartile) in ms."""
    q1, q2, q3 = statistics.quantiles(values, n=4)
    return f"{q2 * 1000:6.0f} ms ({q1 * 1000:.0f}-{q3 * 1000:.0f})"


def in_process(root: Path, runs: int) -> dict[str, list[float]]:
    """Open, write one note and close a fresh copy of a new memory ``runs`` times."""
    from doxa.store import Memory
    from doxa.store.drafts import MemoryDraft

    new = root / "new"
    made = Memory.open(settings_for(new).store)
    made.warm_up()
    made.close()
    times: dict[str, list[float]] = {"open": [], "write": [], "close": []}
    for run in range(runs):
        copy = root / f"copy-{run}"
        shutil.copytree(new, copy)
        began = time.perf_counter()
        memory = Memory.open(settings_for(copy).store)
        memory.warm_up()
        opened = time.perf_counter()
        memory.remember([MemoryDraft(text=f"The ferry leaves at {run} past nine.")])
        wrote = time.perf_counter()
        memory.close()
        closed = time.perf_counter()
        times["open"].append(opened - began)
        times["write"].append(wrote - opened)
        times["close"].append(closed - wrote)
        shutil.rmtree(copy)
    return times


def commands(root: Path, runs: int) -> dict[str, list[float]]:
    """Wall time of one-shot commands, each its own process."""
    data_dir = root / "commands"
    where = ["--data-dir", str(data_dir), "--embedder", "hash"]
    subprocess.run(
        [*DOXA, "remember", "The ferry leaves at nine.", *where], check=True, capture_output=True
    )
    times: dict[str, list[float]] = {"doxa stats": [], "doxa recall": []}
    for _ in range(runs):
        for name, args in (("doxa stats", ["stats"]), ("doxa recall", ["recall", "ferry"])):
            began = time.perf_counter()
            subprocess.run([*DOXA, *args, *where], check=True, capture_output=True)
            times[name].append(time.perf_counter() - began)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="in-process starts (default 20)")
    parser.add_argument("--commands", type=int, default=5, help="runs of each command (5)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        print(f"a new memory, {args.runs} starts in this process:", flush=True)
        for part, values in in_process(root, args.runs).items():
            print(f"  {part:<6} {quartiles(values)}", flush=True)
        if args.commands:
            print(f"one-shot commands, {args.commands} runs each:", flush=True)
            for name, values in commands(root, max(args.commands, 2)).items():
                print(f"  {name:<12} {quartiles(values)}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
