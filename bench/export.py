"""Export, import and backup of a whole memory, timed as a user runs them.

Builds a memory of ``--size`` (10,000) notes with the hash embedder: every one with a topic
(of 200), every fifth a fact (ten per subject, each new city replacing the last), believed by
two agents in turn (every twentieth note told again by the other: 10,500 observations), a
contradiction every 100th, and ``--judged`` (100) recalls judged with feedback. Then runs
the real commands, each its own process as a user starts it:

1. ``doxa export FILE``;
2. ``doxa import FILE`` into an empty directory (which also embeds and indexes everything
   again, as an import does);
3. ``doxa backup DIR`` with no server running, and again while a process owns the memory
   (this one, as a server would: the command relays and the owner copies);
4. ``doxa recall --all --limit 20``, which reads the memory from an export;

and prints for each the wall time, objects per second and the command's peak RSS (from the
kernel's accounting of the finished process), and the export file's size. The round trip is
checked: the imported memory, exported again, gives the same lines (the header's
``exported_at`` aside) and the same counts; the backup opens with the same counts.

Run: ``nice -n 10 python bench/export.py`` (about a minute); ``--keep DIR`` keeps the files.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

DOXA = [sys.executable, "-m", "doxa.server"]
TOPICS = 200
AGENTS = ("scout", "driver")
BATCH = 1000


def out(text: str) -> None:
    print(text, flush=True)


def settings_for(data_dir: Path) -> Any:
    from doxa.server.settings import load_settings

    overrides = {("store", "data_dir"): str(data_dir), ("store", "embedding", "kind"): "hash"}
    return load_settings(environ={}, overrides=overrides)


def build(data_dir: Path, size: int, judged: int, seed: int = 13) -> dict[str, int]:
    """The memory described in the module docstring; returns its tallies."""
    from doxa.store import Memory
    from doxa.store.drafts import FactDraft, MemoryDraft

    rng = random.Random(seed)
    memory = Memory.open(settings_for(data_dir).store)
    memory.warm_up()
    try:
        ids: list[str] = []
        texts: list[str] = []
        for start in range(0, size, BATCH):
            drafts = []
            for i in range(start, min(size, start + BATCH)):
                topic = f"topic-{rng.randrange(TOPICS)}"
                fact = None
                if i % 5 == 0:
                    subject = f"person-{i // 50}"  # ten facts per subject: some replaced
                    fact = FactDraft(subject, "lives in", f"city-{rng.randrange(30)}")
                # Against one of the batch before (ids are known once a batch is written).
                contradicts = [ids[i - BATCH]] if i % 100 == 99 and i >= BATCH else []
                texts.append(
                    f"Note {i} about {topic}: the {rng.choice(WORDS)} "
                    f"near the {rng.choice(WORDS)} was {rng.choice(STATES)}."
                )
                drafts.append(
                    MemoryDraft(
                        text=texts[-1],
                        topics=[topic],
                        agent=AGENTS[i % 2],
                        confidence=f"0.{rng.randrange(1, 10)}",
                        fact=fact,
                        contradicts=contradicts,
                    )
                )
            done = memory.remember(drafts, batch=True)
            ids += [d.observation_id for d in done]
        # Every twentieth note told again by the other agent.
        shared = [MemoryDraft(text=texts[i], agent=AGENTS[1]) for i in range(0, size, 20)]
        memory.remember(shared, batch=True)
        for n in range(judged):
            found = memory.recall(f"{rng.choice(WORDS)} {rng.choice(STATES)}", limit=10)
            if found.results:
                memory.feedback(
                    found.recall_id,
                    accepted=[found.results[0].observation_id],
                    rejected=[r.observation_id for r in found.results[1:3]],
                )
            if n % 25 == 0:
                memory.settle(timeout=60)
        assert memory.settle(timeout=600)
        return memory.tallies()
    finally:
        memory.close()


WORDS = ["harbour", "ferry", "bridge", "lighthouse", "market", "tide", "crane", "quay", "lock"]
STATES = ["closed", "open", "busy", "quiet", "flooded", "repaired", "painted", "moved"]


#: Runs a command as its child and writes the child's peak RSS (kB) to the file named first.
#: The command must not be started by this process directly: a child spawned from a large
#: process inherits that process's peak RSS in its own accounting (Linux keeps the high-water
#: mark across exec), while one forked from this small launcher starts from the launcher's.
LAUNCHER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[2], sys.argv[2:])
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as peak:
    peak.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run(*args: str) -> dict[str, Any]:
    """One ``doxa`` command in its own process: its JSON answer, wall time and peak RSS."""
    with tempfile.TemporaryDirectory() as scratch:
        peak = Path(scratch) / "peak"
        command = [sys.executable, "-c", LAUNCHER, str(peak), *DOXA, *args, "--json"]
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, check=False)
        seconds = time.perf_counter() - began
        if done.returncode != 0:
            said = done.stderr.decode(errors="replace")[-3000:]
            raise SystemExit(f"doxa {' '.join(args)} failed:\n{said}")
        rss_kb = int(peak.read_text())
    return {"answer": json.loads(done.stdout), "seconds": seconds, "rss_mb": rss_kb / 1024}


def where(data_dir: Path) -> list[str]:
    return ["--embedder", "hash", "--data-dir", str(data_dir)]


def lines(path: Path) -> tuple[dict[str, Any], list[str]]:
    first, *rest = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(first)
    header.pop("exported_at")
    return header, rest


def stats(data_dir: Path) -> dict[str, int]:
    counts: dict[str, int] = run("stats", *where(data_dir))["answer"]["counts"]
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000, help="observations (10,000)")
    parser.add_argument("--judged", type=int, default=100, help="recalls judged (100)")
    parser.add_argument("--keep", type=Path, help="keep the directories and files here")
    args = parser.parse_args()
    root = args.keep or Path(tempfile.mkdtemp(prefix="doxa-export-bench-"))
    root.mkdir(parents=True, exist_ok=True)
    source, copy, backups = root / "source", root / "imported", root / "backup"
    out(f"building {args.size:,} observations in {source} (hash embedder)")
    began = time.perf_counter()
    built = build(source, args.size, args.judged)
    out(f"  built in {time.perf_counter() - began:.1f} s: " + json.dumps(built))

    exported = run("export", str(root / "a.jsonl"), *where(source))
    size_mb = (root / "a.jsonl").stat().st_size / 1e6
    total = sum(exported["answer"]["counts"].values())
    imported = run("import", str(root / "a.jsonl"), *where(copy))
    again = run("export", str(root / "b.jsonl"), *where(copy))
    backup = run("backup", str(backups / "idle"), *where(source))
    listed = run("recall", "--all", "--limit", "20", *where(source))
    assert listed["answer"]["total"] == built["Observation"] - built["retracted"]

    from doxa.store.sharing import SharedMemory

    owner = SharedMemory(settings_for(source).store)
    owner.start()
    try:
        owner.stats()
        assert owner.owner, "this process owns the memory while the command runs"
        served = run("backup", str(backups / "served"), *where(source))
    finally:
        owner.close()

    first, second = lines(root / "a.jsonl"), lines(root / "b.jsonl")
    equal = first == second
    counted = stats(source)
    same_counts = all(stats(d) == counted for d in (copy, backups / "idle", backups / "served"))
    out(f"\nexport file: {size_mb:.1f} MB, {total:,} objects (nodes and links)")
    out(f"{'command':<34} {'seconds':>8} {'objects/s':>10} {'peak RSS MB':>12}")
    for name, figures in (
        ("doxa export", exported),
        ("doxa import (empty dir, re-embeds)", imported),
        ("doxa export (of the import)", again),
        ("doxa backup (no server)", backup),
        ("doxa backup (server running)", served),
        ("doxa recall --all --limit 20", listed),
    ):
        rate = total / figures["seconds"]
        out(f"{name:<34} {figures['seconds']:>8.2f} {rate:>10,.0f} {figures['rss_mb']:>12.0f}")
    copied = backup["answer"]
    out(f"backup size: {copied['bytes'] / 1e6:.1f} MB in {copied['files']} files")
    out(f"round trip equal line by line: {equal}; counts equal (import, backups): {same_counts}")
    if args.keep is None:
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    return 0 if equal and same_counts else 1


if __name__ == "__main__":
    raise SystemExit(main())
