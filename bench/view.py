"""The page of ``doxa view`` at scale: its size, how long the picture and the page take to
build, and how long headless Chromium takes to load and draw it.

Fills a data directory with ``--size`` (10,000) synthetic memories (``speed.py``'s
generator: 5% facts, 2-3 topics each) with the hash embedder; ``--facts all`` makes every
memory a fact as well (its first topic ``works with`` its second), and ``--facts distinct``
every memory a fact naming an entity of its own (its first topic ``works with`` "item N"):
10,000 more entities, the harshest case for the page. Then times ``Memory.picture`` and
``view_page.render``, writes the page, and loads it ``--loads`` (3) times in headless
Chromium (``--dump-dom``), reading the time from navigation start to the end of the page's
script (``data-rendered-ms``: parsing, the layout of the drawn graph, the list and the first
entity) and the whole browser run.

Run: ``python bench/view.py`` (about a minute); ``--keep DIR`` keeps the data and the page.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from speed import drafts_of, synthetic_memories

HEADLESS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _every_memory_a_fact(items: list[dict[str, Any]], distinct: bool) -> None:
    for n, item in enumerate(items):
        if "fact" not in item:
            first, second = item["topics"][:2]
            other = f"item {n}" if distinct else second
            item["fact"] = {"subject": first, "predicate": "works with", "object": other}


def main() -> int:
    """Fill, picture, render, load; print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--facts", choices=["some", "all", "distinct"], default="some")
    parser.add_argument("--loads", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="keep the data directory and page here")
    args = parser.parse_args()
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("headless Chromium is needed: apt-get install -y chromium", file=sys.stderr)
        return 2
    from doxa.server.settings import load_settings
    from doxa.server.view_page import render
    from doxa.store import Memory
    from doxa.store.drafts import FactDraft

    root = args.keep or Path(tempfile.mkdtemp(prefix="doxa-view-"))
    data_dir = root / "memory"
    settings = load_settings(
        environ={},
        overrides={("store", "data_dir"): str(data_dir), ("store", "embedding", "kind"): "hash"},
    )
    items = synthetic_memories(args.size)
    if args.facts != "some":
        _every_memory_a_fact(items, distinct=args.facts == "distinct")
    memory = Memory.open(settings.store)
    memory.warm_up()
    try:
        began = time.perf_counter()
        for start in range(0, len(items), 500):
            drafts = drafts_of(items[start : start + 500])
            for draft, item in zip(drafts, items[start : start + 500], strict=True):
                if draft.fact is not None and item["fact"]["predicate"] == "works with":
                    draft.fact = FactDraft(**item["fact"], cardinality="many")
            memory.remember(drafts, batch=True)
        memory.settle(timeout=300)
        filled = time.perf_counter() - began
        pictures = []
        for _ in range(3):
            t0 = time.perf_counter()
            picture = memory.picture()
            pictures.append(time.perf_counter() - t0)
    finally:
        memory.close()
    renders = []
    for _ in range(3):
        t0 = time.perf_counter()
        page = render(picture)
        renders.append(time.perf_counter() - t0)
    rendered = min(renders)
    out = root / "memory.html"
    out.write_text(page, encoding="utf-8")
    loads, runs = [], []
    for n in range(args.loads):
        t0 = time.perf_counter()
        profile = f"--user-data-dir={root / f'profile{n}'}"
        dom = subprocess.run(
            [chromium, *HEADLESS, profile, "--dump-dom", out.as_uri()],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        ).stdout
        runs.append(time.perf_counter() - t0)
        found = re.search(r'data-rendered-ms="(\d+)"', dom)
        if found is None:
            print("the page's script did not finish", file=sys.stderr)
            return 1
        loads.append(int(found.group(1)))
    print(
        f"{args.size} memories ({args.facts} facts; filled in {filled:.0f} s):"
        f" {picture.observations} observations, {len(picture.entities)} entities,"
        f" {len(picture.facts)} facts, {len(picture.notes)} notes,"
        f" {len(picture.conflicts)} conflicts"
    )
    print(
        f"page {out.stat().st_size / 1024:.0f} KB; Memory.picture {min(pictures) * 1000:.0f} ms"
        f" (best of 3), render {rendered * 1000:.0f} ms (best of 3)"
    )
    print(
        f"Chromium: navigation to drawn {min(loads)}-{max(loads)} ms over {args.loads} loads;"
        f" whole headless run {min(runs):.1f}-{max(runs):.1f} s"
    )
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
