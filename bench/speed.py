"""Speed of doxa against the issue's targets, every figure and ratio measured in one run.

Machines are shared and noisy, so the bench reports medians (p50) and p95, and every target is
a ratio of two figures measured in the same run, interleaved query by query where possible.

Parts:
1. recall p50/p95 at each size (default 1k, 10k, 100k memories) through the MCP tool ``recall``
   (in-memory client), next to the store call alone (``Memory.recall``), one query embedding
   (real model) and a numpy exact scan over the same vectors in float32 (``matrix @ q`` +
   argpartition of the top 10, timed with the default BLAS threads and with one; the faster is
   the baseline), and doxa's own int8 scan. Target at 100k: recall p50 <= 1.5 x (embedding +
   exact scan).
2. ingest: batch ``remember(memories=[...])`` over MCP with the real model vs the embedder's own
   batch throughput on the same texts and batch size. Target: ratio >= 0.8.
3. one ``remember`` over MCP (real model, store of a few thousand) vs one query embedding.
   Target: ratio <= 2.5. A remember returns once the graph holds the memory and embeds it on
   a background thread, so the bench also times remember until embedded (recallable by
   meaning), and settles (untimed) after every step so no step runs into the next one.
4. handshake: a fresh ``doxa serve`` (stdio, real embedder, empty data dir) from spawn until
   ``tools/list`` is answered, vs a minimal one-tool ``MCPServer``. Target: < 0.5 s.
5. peak RSS of a process that opened the 100k store, loaded the model and answered the recall
   queries through MCP, read before the bench loads its own float32 matrix for the baseline.
   Target: <= 700 MB.
6. reference: ``@modelcontextprotocol/server-memory`` (npx, stdio) loaded with the same 10k
   memories (one entity per memory, its text as the observation): ``search_nodes`` vs our
   ``recall`` over stdio (``doxa serve`` on the 10k store), same queries, same client.
   Target: ours <= 1.0 x its median.

The embedder trick: the stores are filled with memories embedded by ``HashEmbedder`` (384-dim,
no model: 100k in minutes), and queries are embedded by the real all-MiniLM-L6-v2 (384-dim).
The work recall does (matrix product, top-k, full-text search, graph neighbours, ranking) does
not depend on what the vectors contain; only the quality of the results does, which this bench
does not judge (see bench/locomo.py). The bench embedder reports the real model's fingerprint,
so ``doxa serve`` with the real model reopens the same index without re-embedding it.

Each size runs in fresh subprocesses (one fills the store, one opens it as a server would and
measures), so peak RSS and warm-up are those of one process holding that store. Data lives in
a temporary directory (``--keep`` keeps it); nothing is written into the repository.

Usage:
    python bench/speed.py [--sizes 1000,10000,100000] [--queries 200] [--json OUT]
        [--skip-reference] [--quick] [--keep] [--only handshake] [--handshake-runs N]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import resource
import select
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

PYTHON = sys.executable
DOXA = str(Path(sys.executable).parent / "doxa")
DIM = 384
FILL_BATCH = 2_000
PROTOCOL = "2025-06-18"
REFERENCE_PACKAGE = "@modelcontextprotocol/server-memory"

TARGETS = {
    "recall_ratio_100k": 1.5,  # recall p50 / (embedding p50 + exact scan p50), at most
    "ingest_ratio": 0.8,  # MCP batch remember rate / embedder rate, at least
    "single_ratio": 2.5,  # single remember p50 / query embedding p50, at most
    "handshake_s": 0.5,  # spawn to tools/list answered, below
    "rss_mb": 700.0,  # peak RSS at 100k with the model, at most
    "reference_ratio": 1.0,  # our recall p50 / its search_nodes p50 over stdio, at most
}


def log(message: str) -> None:
    """Progress goes to stderr; the report goes to stdout."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def out(line: str = "") -> None:
    print(line, flush=True)


# ---- synthetic memories -----------------------------------------------------------------------


def words(text: str, separator: str | None = None) -> list[str]:
    """A word list written as one string."""
    return text.split(separator)


FIRST = words(
    "Alice Bilal Chen Dana Emeka Farah Gustavo Hana Ivan Jia Kofi Lena Mateo Nadia Omar Priya "
    "Quentin Rosa Sven Tomas Uma Viktor Wen Ximena Yusuf Zofia Aiko Bruno Carmen Dmitri Elif "
    "Finn Greta Hugo Ines Jonas Kira Luca Maya Nils"
)
LAST = words(
    "Moreno Okafor Nakamura Schmidt Kowalski Haddad Silva Novak Larsen Dubois Rossi Tanaka "
    "Petrov Garcia Nguyen Ibrahim Jensen Costa Weber Ali"
)
PLACES = words(
    "Lisbon Nairobi Osaka Berlin Krakow Beirut Recife Prague Oslo Lyon Turin Sapporo Kazan "
    "Seville Hanoi Accra Aarhus Porto Hamburg Lagos Montreal Dublin Vienna Tallinn Bergen Quito "
    "Lima Cusco Valencia Bilbao Malmo Ghent Leeds Cork Zagreb Split Riga Vilnius Gdansk Brno "
    "Graz Basel Geneva Bologna Naples Palermo Izmir Tbilisi Yerevan Almaty"
)
PROJECTS = words(
    "Orion Bluebird Kestrel Atlas Juniper Nimbus Quartz Harbor Lantern Meridian Falcon Cobalt "
    "Saffron Tundra Willow Ember Granite Halcyon Iris Jade Keystone Lotus Mosaic Nova Onyx "
    "Pioneer Quill Redwood Sierra Topaz Umbra Vertex Wren Zephyr Aurora Beacon Cedar Delta "
    "Echo Fjord"
)
VERBS = words(
    "reviewed approved postponed discussed shipped cancelled estimated benchmarked audited "
    "drafted signed rejected rescheduled presented refactored migrated tested documented "
    "prioritised escalated archived renegotiated prototyped validated demoed scoped budgeted "
    "paused restarted handed-over"
)
THINGS = words(
    "budget roadmap release contract prototype hiring-plan security-audit migration launch "
    "design-review pricing onboarding dashboard API schema backlog invoice retrospective "
    "deployment load-test compliance-report user-study data-pipeline incident postmortem "
    "vendor-deal style-guide beta test-plan"
)
STATES = words("ready late blocked finished on-track over-budget under-review frozen")
PREFERENCES = words(
    "morning calls|written updates|short agendas|video off|async reviews|in-person workshops|"
    "Friday demos|tea over coffee|quiet rooms|shared docs",
    "|",
)
SOURCES = ("email", "meeting notes", "chat", "call", "wiki", None, None)
CONFIDENCES = ("1", "0.95", "0.9", "0.8", "0.75", "0.6")
MONTHS = words(
    "January February March April May June July August September October November December"
)
START = datetime(2022, 1, 3, tzinfo=UTC)

TEMPLATES = (
    "{p} {v} the {j} {t} in {c} on {d}.",
    "On {d}, {p} told {q} that the {j} {t} would be {s} by {m}.",
    "The {j} team met in {c}; {p} {v} the {t} and {q} took notes (ticket {n}).",
    "{p} flagged {n} open issues in the {j} {t} after the {c} workshop.",
    "Budget for the {j} {t} set to {n}k EUR by {p} on {d}.",
    "{p} and {q} {v} the {t} for {j} during the {c} offsite.",
    "{q} asked {p} to send the {j} {t} numbers before {m}; {n} items remain.",
    "{p} says the {j} {t} is {s}; {q} disagrees and wants a review in {c}.",
    "{p} prefers {f} when working on {j} (noted {d}).",
    "Call with {p} about {j}: the {t} slipped by {n} days, {q} will follow up from {c}.",
)
FACT_TEMPLATES = (
    ("{p} moved to {c} on {d}.", "lives in", "{c}"),
    ("{p} became the lead of {j} on {d}.", "leads", "{j}"),
    ("{p} reports to {q} since {d}.", "reports to", "{q}"),
)
QUERY_TEMPLATES = (
    "What did {p} decide about the {j} {t}?",
    "Where does {p} live now?",
    "Who leads {j}?",
    "What happened with the {t} in {c}?",
    "When was the {j} {t} {v}?",
    "What did {p} say about {j} in {m} {y}?",
    "open issues in the {j} {t}",
    "{p} {j} budget",
    "Is the {j} {t} {s}?",
    "How does {p} like to work?",
)


def _zipf(n: int) -> list[float]:
    return [1.0 / (i + 1) ** 0.8 for i in range(n)]


class Vocabulary:
    """Word lists with skewed (Zipf-like) frequencies, so full-text posting lists and topic
    sizes look like a real memory's: a few people and projects everywhere, a long tail."""

    def __init__(self, seed: int = 7) -> None:
        rng = random.Random(seed)
        names = [f"{f} {last}" for f in FIRST for last in LAST]
        rng.shuffle(names)
        self.people = names[:160]
        self.places = list(PLACES)
        self.projects = list(PROJECTS)
        rng.shuffle(self.places)
        rng.shuffle(self.projects)
        self._w_people = _zipf(len(self.people))
        self._w_places = _zipf(len(self.places))
        self._w_projects = _zipf(len(self.projects))

    def slots(self, rng: random.Random, day: datetime) -> dict[str, str]:
        p, q = rng.choices(self.people, self._w_people, k=2)
        while q == p:
            q = rng.choice(self.people)
        return {
            "p": p,
            "q": q,
            "c": rng.choices(self.places, self._w_places)[0],
            "j": rng.choices(self.projects, self._w_projects)[0],
            "t": rng.choice(THINGS).replace("-", " "),
            "v": rng.choice(VERBS).replace("-", " "),
            "s": rng.choice(STATES).replace("-", " "),
            "f": rng.choice(PREFERENCES),
            "d": f"{day.day} {MONTHS[day.month - 1]} {day.year}",
            "m": MONTHS[rng.randrange(12)],
            "y": str(rng.choice((2022, 2023, 2024, 2025))),
            "n": str(rng.randint(2, 999)),
        }


def synthetic_memories(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` distinct memories in the ``remember`` tool's shape (deterministic for a seed).

    About 40% come in episodes (conversations of 3-12 turns on one day), 5% are facts
    (``lives in``, ``leads``, ``reports to``: newer ones supersede older ones), every memory
    has 2-3 topics (people, project or place).
    """
    vocabulary = Vocabulary()
    rng = random.Random(seed)
    memories: list[dict[str, Any]] = []
    seen: set[str] = set()
    episode: str | None = None
    left = 0
    day = START
    episodes = 0
    while len(memories) < n:
        if left == 0:
            if rng.random() < 0.08:  # a new conversation of several turns
                episodes += 1
                episode, left = f"conv-{seed}-{episodes:06d}", rng.randint(3, 12)
            else:
                episode, left = None, 1
            day = START + timedelta(days=rng.randrange(4 * 365), minutes=rng.randrange(600))
        slots = vocabulary.slots(rng, day)
        fact = None
        if rng.random() < 0.05:
            template, predicate, value = rng.choice(FACT_TEMPLATES)
            text = template.format(**slots)
            fact = {"subject": slots["p"], "predicate": predicate, "object": value.format(**slots)}
        else:
            text = rng.choice(TEMPLATES).format(**slots)
        if text in seen:
            continue
        seen.add(text)
        topics = [slots["p"], slots["j"]] + ([slots["c"]] if rng.random() < 0.5 else [])
        memory: dict[str, Any] = {
            "text": text,
            "topics": topics,
            "confidence": rng.choice(CONFIDENCES),
            "observed_at": day.isoformat().replace("+00:00", "Z"),
        }
        source = rng.choice(SOURCES)
        if source:
            memory["source"] = source
        if episode:
            memory["episode"] = episode
        if fact:
            memory["fact"] = fact
        memories.append(memory)
        left -= 1
        day += timedelta(minutes=rng.randint(1, 5))
    return memories


def synthetic_queries(n: int, seed: int = 11) -> list[tuple[str, str]]:
    """``n`` (question, keyword) pairs over the same vocabulary; the keyword (a person or a
    project) is what a substring search can match."""
    vocabulary = Vocabulary()
    rng = random.Random(seed)
    pairs = []
    for _ in range(n):
        day = START + timedelta(days=rng.randrange(4 * 365))
        slots = vocabulary.slots(rng, day)
        template = rng.choice(QUERY_TEMPLATES)
        keyword = next(slots[k] for k in "pjc" if "{" + k + "}" in template)
        pairs.append((template.format(**slots), keyword))
    return pairs


def drafts_of(items: Sequence[dict[str, Any]]) -> list[Any]:
    from doxa.store.drafts import FactDraft, MemoryDraft

    out_drafts = []
    for item in items:
        fact = item.get("fact")
        out_drafts.append(
            MemoryDraft(
                text=item["text"],
                topics=list(item["topics"]),
                confidence=item["confidence"],
                observed_at=item["observed_at"],
                source=item.get("source"),
                episode=item.get("episode"),
                fact=FactDraft(fact["subject"], fact["predicate"], fact["object"])
                if fact
                else None,
            )
        )
    return out_drafts


# ---- figures ----------------------------------------------------------------------------------


def stats(seconds: Sequence[float]) -> dict[str, float]:
    """p50, p95, mean and min in milliseconds."""
    values = np.asarray(seconds, dtype=np.float64) * 1000.0
    return {
        "p50_ms": float(np.percentile(values, 50)),
        "p95_ms": float(np.percentile(values, 95)),
        "mean_ms": float(values.mean()),
        "min_ms": float(values.min()),
        "n": len(values),
    }


def line(label: str, figures: dict[str, float]) -> str:
    return (
        f"  {label:<46} p50 {figures['p50_ms']:9.2f} ms   p95 {figures['p95_ms']:9.2f} ms"
        f"   (n={figures['n']})"
    )


def proc_status() -> dict[str, float]:
    """VmRSS and VmHWM (peak) of this process, in MB."""
    found: dict[str, float] = {}
    try:
        for row in Path("/proc/self/status").read_text().splitlines():
            key, _, value = row.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    except OSError:
        pass
    return found


def peak_rss_mb() -> float:
    """ru_maxrss of this process in MB (Linux reports kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


#: How the model runs ("onnx", the product's default, or "torch"); set by ``--runtime``.
RUNTIME = "onnx"


def worker_settings(data_dir: Path, buffer_pool_mb: int | None = None) -> Any:
    """The product's default settings for ``data_dir`` (the model on ``RUNTIME``); DOXA_*
    variables are ignored."""
    from doxa.server.settings import load_settings

    return load_settings(
        environ={},
        overrides={
            ("store", "data_dir"): str(data_dir),
            ("store", "embedding", "kind"): "sentence-transformers",
            ("store", "embedding", "runtime"): RUNTIME,
            ("store", "buffer_pool_mb"): buffer_pool_mb,
            ("server", "log_level"): "WARNING",
        },
    )


class HashFillModelQueries:
    """The bench's embedder: ``HashEmbedder`` while ``bulk`` is set (filling the store fast),
    the real model otherwise (queries, and the ingest measurements), run as the product runs
    it (``RUNTIME``: ONNX Runtime by default).

    Both give 384-dim unit vectors. It reports the real model's fingerprint, so the index it
    fills is the one ``doxa serve`` with the real model opens (no re-embedding at start-up).
    """

    def __init__(self, bulk: bool, load_model: bool, batch_size: int = 64) -> None:
        from doxa.store.embedder import HashEmbedder, make_embedder
        from doxa.store.settings import EmbeddingSettings

        self.hash = HashEmbedder(DIM)
        self.model = make_embedder(EmbeddingSettings(runtime=RUNTIME, batch_size=batch_size))
        self.bulk = bulk
        self._load_model = load_model

    @property
    def fingerprint(self) -> str:
        return self.model.fingerprint

    @property
    def dim(self) -> int:
        return DIM

    def load(self) -> None:
        if self._load_model:
            self.model.load()
            assert self.model.dim == DIM, "the model and the hash embedder must agree"

    def embed(self, texts: list[str]) -> npt.NDArray[np.float32]:
        return (self.hash if self.bulk else self.model).embed(texts)


def structured(result: Any, tool: str) -> dict[str, Any]:
    if result.is_error:
        text = " ".join(getattr(c, "text", "") for c in result.content)
        raise RuntimeError(f"{tool} failed: {text}")
    if result.structured_content is not None:
        return dict(result.structured_content)
    text = "".join(getattr(c, "text", "") for c in result.content)
    return dict(json.loads(text)) if text.strip().startswith("{") else {"text": text}


def exact_top10(matrix: npt.NDArray[np.float32], vector: npt.NDArray[np.float32]) -> Any:
    """The baseline: exact cosine scan (unit vectors) and the top 10, best first."""
    similarity = matrix @ vector
    top = np.argpartition(-similarity, 10)[:10]
    return top[np.argsort(-similarity[top])]


def single_blas() -> Any:
    """A context with one BLAS thread (threadpoolctl), or a no-op without threadpoolctl.

    On a busy 2-core machine a 2-thread OpenBLAS matrix-vector product waits for a second core
    (about 12 ms however small the matrix), so the bench times the scan both ways.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


# ---- worker: fill one store -------------------------------------------------------------------


def fill_store(
    data_dir: Path, size: int, batch: int, buffer_pool_mb: int, out_path: Path, seed: int = 7
) -> dict[str, Any]:
    """Fill ``data_dir`` with ``size`` hash-embedded memories via ``Memory.remember``.

    The figures are rewritten to ``out_path`` after every batch, so a fill that fails (or
    crashes the process) still reports how far it got and how long each batch took.
    """
    from doxa.store import Memory

    began = time.perf_counter()
    items = synthetic_memories(size, seed)
    generated = time.perf_counter() - began
    settings = worker_settings(data_dir, buffer_pool_mb or None)
    figures: dict[str, Any] = {
        "size": size,
        "batch": batch,
        "buffer_pool_mb": settings.store.buffer_pool_mb,
        "generate_s": generated,
        "stored": 0,
        "batches_s": [],
        "error": None,
    }
    memory = Memory.open(settings.store, embedder=HashFillModelQueries(True, False))
    memory.warm_up()
    batches: list[float] = figures["batches_s"]
    try:
        for start in range(0, size, batch):
            drafts = drafts_of(items[start : start + batch])
            t0 = time.perf_counter()
            done = memory.remember(drafts, batch=True)
            batches.append(time.perf_counter() - t0)
            figures["stored"] += sum(1 for d in done if d.duplicate_of is None)
            out_path.write_text(json.dumps(figures))
            if len(batches) % max(1, 20_000 // batch) == 0:
                log(f"  fill {size}: {start + len(drafts)} memories, last batch {batches[-1]:.2f}s")
    except Exception as error:  # a product failure is a finding: report it, let the run go on
        figures["error"] = f"{type(error).__name__}: {error}"
        cause = error.__cause__ or error.__context__
        if cause is not None:  # e.g. a failed ROLLBACK hiding the error that caused it
            figures["error"] += f" (raised while handling {type(cause).__name__}: {cause})"
        log(f"  fill {size} failed after {figures['stored']} memories: {figures['error']}")
    finally:
        try:
            memory.close()
        except Exception as error:
            figures["close_error"] = f"{type(error).__name__}: {error}"
    seconds = sum(batches)
    figures.update(
        {
            "fill_s": seconds,
            "rate_per_s": figures["stored"] / seconds if seconds else 0.0,
            "first_batch_s": batches[0] if batches else None,
            "last_batch_s": batches[-1] if batches else None,
            "peak_rss_mb": peak_rss_mb(),
        }
    )
    return figures


# ---- worker: recall at one size ---------------------------------------------------------------


async def measure_recall(data_dir: Path, size: int, n_queries: int) -> dict[str, Any]:
    """Open the filled store as a server would and answer every query once through MCP (peak
    RSS is read here: a server that opened the store, loaded the model and answered); then
    load the float32 vectors for the baseline and time, per query, interleaved: the query's
    embedding alone, the exact scan, doxa's own (int8) scan, ``Memory.recall`` and the MCP
    ``recall`` tool."""
    from mcp.client import Client

    from doxa.server.app import create_server
    from doxa.store import Memory

    rss_start = proc_status()
    settings = worker_settings(data_dir)
    embedder = HashFillModelQueries(False, True)
    began = time.perf_counter()
    memory = Memory.open(settings.store, embedder=embedder)
    memory.warm_up()
    warm_up_s = time.perf_counter() - began
    rss_warm = proc_status()
    working = memory._wm
    n = len(working)
    pairs = synthetic_queries(n_queries + 10)
    measured = pairs[10:]  # the first ten only warm up
    embed_s: list[float] = []
    scan_s: list[float] = []
    scan_1_s: list[float] = []  # the same scan with one BLAS thread
    own_scan_s: list[float] = []  # doxa's int8 scan and top 10
    store_s: list[float] = []
    mcp_s: list[float] = []
    returned = 0
    try:
        async with Client(create_server(settings, memory=memory)) as client:
            # The server's part: every query answered once, untimed.
            for query, _ in pairs:
                embedder.model.embed([query])
                memory.recall(query)
                structured(await client.call_tool("recall", {"query": query}), "recall")
            rss_served = proc_status()
            peak = peak_rss_mb()
            # The baseline's float32 matrix (the exact vectors, from the search index): the
            # bench's, not the server's, so it is loaded after the peak was read.
            index = memory._index
            assert index is not None
            matrix = np.concatenate([vectors for _, vectors in index.vectors()])
            # Vectors for the scans, computed ahead (untimed) so the five steps can run in a
            # rotating order: drift in the machine's load then hits each of them alike.
            vectors = embedder.model.embed([q for q, _ in measured])
            for k, (query, _) in enumerate(measured):
                for step in range(5):
                    which = (step + k) % 5
                    t0 = time.perf_counter()
                    if which == 0:
                        embedder.model.embed([query])
                        embed_s.append(time.perf_counter() - t0)
                    elif which == 1:
                        exact_top10(matrix, vectors[k])
                        scan_s.append(time.perf_counter() - t0)
                        with single_blas():  # entered outside the timed part
                            t0 = time.perf_counter()
                            exact_top10(matrix, vectors[k])
                            scan_1_s.append(time.perf_counter() - t0)
                    elif which == 2:
                        similarity = working.embeddings.similarity(vectors[k], n)
                        np.argpartition(-similarity, 10)[:10]
                        own_scan_s.append(time.perf_counter() - t0)
                    elif which == 3:
                        memory.recall(query)
                        store_s.append(time.perf_counter() - t0)
                    else:
                        result = await client.call_tool("recall", {"query": query})
                        mcp_s.append(time.perf_counter() - t0)
                        returned += len(structured(result, "recall")["results"])
        rss_end = proc_status()
        bench_peak = peak_rss_mb()
    finally:
        memory.close()
    embed, store, mcp = stats(embed_s), stats(store_s), stats(mcp_s)
    scan_default, scan_single = stats(scan_s), stats(scan_1_s)
    # The baseline is the faster way of doing the exact scan on this machine, this run.
    scan = min(scan_default, scan_single, key=lambda figures: figures["p50_ms"])
    return {
        "size": size,
        "rows": int(matrix.shape[0]),
        "warm_up_s": warm_up_s,
        "queries": len(measured),
        "mean_results": returned / len(measured),
        "embedding": embed,
        "exact_scan": scan,
        "exact_scan_default_blas": scan_default,
        "exact_scan_one_blas_thread": scan_single,
        "own_scan": stats(own_scan_s),
        "store_recall": store,
        "mcp_recall": mcp,
        "ratio": mcp["p50_ms"] / (embed["p50_ms"] + scan["p50_ms"]),
        "store_ratio": store["p50_ms"] / (embed["p50_ms"] + scan["p50_ms"]),
        "mcp_overhead_ms": mcp["p50_ms"] - store["p50_ms"],
        "peak_rss_mb": peak,
        "bench_peak_rss_mb": bench_peak,
        "embeddings_mb": working.embeddings.nbytes / 2**20,
        "rss_mb": {
            "start": rss_start.get("VmRSS"),
            "after_warm_up": rss_warm.get("VmRSS"),
            "after_queries": rss_served.get("VmRSS"),
            "bench_end": rss_end.get("VmRSS"),
        },
        "buffer_pool_mb": settings.store.buffer_pool_mb,
    }


# ---- worker: ingest and single remember -------------------------------------------------------


async def measure_ingest(
    data_dir: Path, prefill: int, n: int, batch: int, singles: int
) -> dict[str, Any]:
    """Batch ingest over MCP vs the embedder alone, then single remembers vs one embedding.

    The store first gets ``prefill`` hash-embedded memories; the measured memories are
    embedded by the real model (the bench embedder with ``bulk`` off).
    """
    from mcp.client import Client

    from doxa.server.app import create_server
    from doxa.store import Memory

    items = synthetic_memories(prefill + n + 3 * singles, seed=23)
    settings = worker_settings(data_dir)
    embedder = HashFillModelQueries(True, True)
    memory = Memory.open(settings.store, embedder=embedder)
    memory.warm_up()
    for start in range(0, prefill, FILL_BATCH):
        memory.remember(drafts_of(items[start : min(prefill, start + FILL_BATCH)]), batch=True)
    memory.settle()  # embedded (by the hash embedder) before the real model takes over
    embedder.bulk = False
    model = embedder.model
    ingest_items = items[prefill : prefill + n]
    single_items = items[prefill + n : prefill + n + singles]
    store_items = items[prefill + n + singles : prefill + n + 2 * singles]  # no MCP
    extra_items = items[prefill + n + 2 * singles :]  # remember until recallable
    queries = [q for q, _ in synthetic_queries(singles + 5, seed=29)]
    embed_batches: list[float] = []
    mcp_batches: list[float] = []
    embed_one: list[float] = []
    embed_text: list[float] = []
    remember_one: list[float] = []
    store_one: list[float] = []
    recallable_one: list[float] = []
    try:
        async with Client(create_server(settings, memory=memory)) as client:
            for query in queries[:5]:  # warm both paths
                model.embed([query])
            model.embed([m["text"] for m in single_items[:batch]])
            structured(
                await client.call_tool("remember", {"text": "bench warm-up", "topics": ["bench"]}),
                "remember",
            )
            for k, start in enumerate(range(0, n, batch)):
                chunk = ingest_items[start : start + batch]
                texts = [m["text"] for m in chunk]
                # Alternate which goes first, so drift in the machine's load hits both alike.
                for first in (k % 2 == 0, k % 2 != 0):
                    t0 = time.perf_counter()
                    if first:
                        model.embed(texts)
                        embed_batches.append(time.perf_counter() - t0)
                    else:
                        result = await client.call_tool("remember", {"memories": chunk})
                        # Until the batch is embedded and in the search index: remember
                        # returns before its embeddings are done (see embedding_queue).
                        memory.settle()
                        mcp_batches.append(time.perf_counter() - t0)
                        structured(result, "remember")
                log(
                    f"  ingest batch {k + 1}: embed {embed_batches[-1]:.2f}s, "
                    f"MCP remember {mcp_batches[-1]:.2f}s"
                )
            singles_with = zip(queries[5:], single_items, store_items, strict=False)
            for k, (query, item, other) in enumerate(singles_with):
                for step in range(5):
                    which = (step + k) % 5  # rotate the order, as for recall
                    t0 = time.perf_counter()
                    if which == 0:
                        model.embed([query])
                        embed_one.append(time.perf_counter() - t0)
                    elif which == 3:
                        # The text remember embeds is a memory, longer than a query.
                        model.embed([item["text"]])
                        embed_text.append(time.perf_counter() - t0)
                    elif which == 1:
                        result = await client.call_tool("remember", item)
                        remember_one.append(time.perf_counter() - t0)
                        structured(result, "remember")
                    elif which == 2:
                        memory.remember(drafts_of([other]))
                        store_one.append(time.perf_counter() - t0)
                    else:
                        # Until the memory is recalled by meaning: the call, then its
                        # embedding (what a recall right after it waits for).
                        result = await client.call_tool("remember", extra_items[k])
                        memory.wait_embedded()
                        recallable_one.append(time.perf_counter() - t0)
                        structured(result, "remember")
                    # Untimed: the embeddings a remember queued must not run into the next
                    # step's time.
                    memory.settle()
        stored = len(memory._wm)
    finally:
        memory.close()
    embed_rate = n / sum(embed_batches)
    mcp_rate = n / sum(mcp_batches)
    one, single, alone = stats(embed_one), stats(remember_one), stats(store_one)
    return {
        "prefill": prefill,
        "memories": n,
        "batch": batch,
        "embedder_batch_size": settings.store.embedding.batch_size,
        "embedder": type(model).__name__,
        "embed_batches_s": embed_batches,
        "mcp_batches_s": mcp_batches,
        "embed_rate_per_s": embed_rate,
        "mcp_rate_per_s": mcp_rate,
        "ingest_ratio": mcp_rate / embed_rate,
        "single_store_size": stored,
        "single_embedding": one,
        "single_remember": single,
        "single_store_remember": alone,
        "single_ratio": single["p50_ms"] / one["p50_ms"],
        "single_text_embedding": stats(embed_text),
        "single_until_recallable": stats(recallable_one),
    }


# ---- handshake --------------------------------------------------------------------------------

MINIMAL_SERVER = '''
from mcp.server import MCPServer

server = MCPServer("minimal")


@server.tool()
def echo(text: str) -> str:
    """Say it back."""
    return text


if __name__ == "__main__":
    server.run()
'''


class JsonRpcPipe:
    """Raw JSON-RPC lines over a subprocess's pipes, read with a deadline."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.buffer = b""

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def answer(self, request_id: int, timeout: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while True:
            while b"\n" in self.buffer:
                raw, self.buffer = self.buffer.split(b"\n", 1)
                if not raw.strip():
                    continue
                message = json.loads(raw)
                if message.get("id") == request_id:
                    if "error" in message:
                        raise RuntimeError(f"request {request_id} failed: {message['error']}")
                    return dict(message)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"no answer to request {request_id} within {timeout}s")
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise EOFError(f"the server exited (code {self.process.poll()})")
                self.buffer += chunk


def handshake_once(
    command: list[str], env: dict[str, str], tool_call: dict[str, Any], stderr_path: Path
) -> dict[str, float]:
    """Spawn, ``initialize``, ``tools/list``, then one tool call; seconds from spawn to each."""
    with stderr_path.open("ab") as errors:
        began = time.perf_counter()
        process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, env=env
        )
        pipe = JsonRpcPipe(process)
        try:
            pipe.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": PROTOCOL,
                        "capabilities": {},
                        "clientInfo": {"name": "doxa-speed-bench", "version": "1"},
                    },
                }
            )
            pipe.answer(1, 60)
            initialized = time.perf_counter() - began
            pipe.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            pipe.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            tools = pipe.answer(2, 60)
            listed = time.perf_counter() - began
            assert tools["result"]["tools"], "tools/list returned no tools"
            pipe.send({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": tool_call})
            called = pipe.answer(3, 180)
            first_call = time.perf_counter() - began
            if called["result"].get("isError"):
                raise RuntimeError(f"first tool call failed: {called['result']}")
        finally:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    return {"initialize_s": initialized, "tools_list_s": listed, "first_call_s": first_call}


def compile_doxa() -> None:
    """Compile doxa's modules to bytecode, as ``pip install`` does for a user's install.

    An editable install compiles nothing, and with PYTHONDONTWRITEBYTECODE set (as on some
    machines) every start compiled doxa's own modules again: some 50 ms of the handshake
    that no installed doxa pays. The SDK and the other libraries were compiled by pip.
    """
    import compileall

    import doxa

    for folder in doxa.__path__:
        compileall.compile_dir(folder, quiet=1)


def measure_handshake(root: Path, runs: int) -> dict[str, Any]:
    """Fresh ``doxa serve`` processes vs a minimal ``MCPServer``, interleaved, after one
    discarded run of each (so neither pays the cold file cache alone), doxa's modules
    compiled as an install compiles them (``compile_doxa``)."""
    compile_doxa()
    minimal = root / "minimal_server.py"
    minimal.write_text(MINIMAL_SERVER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOXA_")}
    env["HF_HUB_OFFLINE"] = "1"
    env["DOXA_MODEL_RUNTIME"] = RUNTIME
    stderr_path = root / "handshake-stderr.log"
    doxa_runs: list[dict[str, float]] = []
    minimal_runs: list[dict[str, float]] = []
    for run in range(runs + 1):
        data_dir = root / f"handshake-{run}"
        doxa = handshake_once(
            [DOXA, "serve", "--data-dir", str(data_dir), "--embedder", "sentence-transformers"],
            env,
            {"name": "recall", "arguments": {"query": "what do we know about Orion?"}},
            stderr_path,
        )
        other = handshake_once(
            [PYTHON, str(minimal)],
            env,
            {"name": "echo", "arguments": {"text": "hi"}},
            stderr_path,
        )
        shutil.rmtree(data_dir, ignore_errors=True)
        if run > 0:
            doxa_runs.append(doxa)
            minimal_runs.append(other)
        log(
            f"  handshake run {run}{' (discarded)' if run == 0 else ''}: doxa "
            f"{doxa['tools_list_s']:.3f}s (first recall {doxa['first_call_s']:.2f}s), "
            f"minimal {other['tools_list_s']:.3f}s"
        )

    def medians(rows: list[dict[str, float]]) -> dict[str, float]:
        return {key: float(np.median([r[key] for r in rows])) for key in rows[0]}

    return {
        "runs": runs,
        "doxa": medians(doxa_runs),
        "minimal": medians(minimal_runs),
        "doxa_tools_list_s": [r["tools_list_s"] for r in doxa_runs],
        "minimal_tools_list_s": [r["tools_list_s"] for r in minimal_runs],
    }


# ---- reference --------------------------------------------------------------------------------


async def measure_reference(
    root: Path, data_dir: Path, size: int, n_queries: int
) -> dict[str, Any]:
    """The npm reference server vs ``doxa serve`` over stdio, same client, same queries,
    alternating which server is asked first."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    npx = shutil.which("npx")
    assert npx is not None
    memory_file = root / "reference-memory.jsonl"
    memory_file.unlink(missing_ok=True)
    errors = (root / "reference-stderr.log").open("a")
    reference = stdio_client(
        StdioServerParameters(
            command=npx,
            args=["-y", REFERENCE_PACKAGE],
            env={"MEMORY_FILE_PATH": str(memory_file)},
        ),
        errlog=errors,
    )
    ours = stdio_client(
        StdioServerParameters(
            command=DOXA,
            args=["serve", "--data-dir", str(data_dir), "--embedder", "sentence-transformers"],
            env={"HF_HUB_OFFLINE": "1", "DOXA_LOG_LEVEL": "WARNING", "DOXA_MODEL_RUNTIME": RUNTIME},
        ),
        errlog=errors,
    )
    items = synthetic_memories(size)
    pairs = synthetic_queries(n_queries + 10)
    try:
        async with Client(reference) as theirs, Client(ours) as mine:
            began = time.perf_counter()
            for start in range(0, len(items), 500):
                entities = [
                    {
                        "name": f"memory-{start + k:06d}",
                        "entityType": "observation",
                        "observations": [item["text"]],
                    }
                    for k, item in enumerate(items[start : start + 500])
                ]
                structured(
                    await theirs.call_tool("create_entities", {"entities": entities}),
                    "create_entities",
                )
            load_s = time.perf_counter() - began
            began = time.perf_counter()
            structured(await mine.call_tool("recall", {"query": "warm up"}), "recall")
            our_ready_s = time.perf_counter() - began
            log(f"  reference loaded in {load_s:.1f}s; doxa serve ready in {our_ready_s:.1f}s")

            async def ask_ours(query: str) -> int:
                result = structured(await mine.call_tool("recall", {"query": query}), "recall")
                return len(result["results"])

            async def ask_theirs(query: str) -> int:
                result = structured(
                    await theirs.call_tool("search_nodes", {"query": query}), "search_nodes"
                )
                return len(result.get("entities", []))

            figures: dict[str, Any] = {}
            for kind, index in (("questions", 0), ("keywords", 1)):
                for pair in pairs[:10]:
                    await ask_ours(pair[index])
                    await ask_theirs(pair[index])
                timings: dict[str, list[float]] = {"ours": [], "theirs": []}
                hits = {"ours": 0, "theirs": 0}
                for k, pair in enumerate(pairs[10:]):
                    order = ("ours", "theirs") if k % 2 == 0 else ("theirs", "ours")
                    for who in order:
                        ask = ask_ours if who == "ours" else ask_theirs
                        t0 = time.perf_counter()
                        hits[who] += await ask(pair[index])
                        timings[who].append(time.perf_counter() - t0)
                o, t = stats(timings["ours"]), stats(timings["theirs"])
                figures[kind] = {
                    "ours": o,
                    "theirs": t,
                    "ratio": o["p50_ms"] / t["p50_ms"],
                    "mean_hits_ours": hits["ours"] / len(timings["ours"]),
                    "mean_hits_theirs": hits["theirs"] / len(timings["theirs"]),
                }
    finally:
        errors.close()
    return {
        "size": size,
        "entities": len(items),
        "file_mb": memory_file.stat().st_size / 1e6 if memory_file.exists() else None,
        "load_s": load_s,
        "doxa_ready_s": our_ready_s,
        **figures,
    }


# ---- orchestration ----------------------------------------------------------------------------


def run_worker(args: list[str], out_path: Path, tolerate: bool = False) -> dict[str, Any]:
    """Run this script as a worker subprocess and return the JSON it wrote.

    With ``tolerate``, a worker that died still returns what it last wrote, with ``error``.
    """
    command = [
        PYTHON, str(Path(__file__).resolve()), *args, "--out", str(out_path), "--runtime", RUNTIME
    ]  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOXA_")}
    env["HF_HUB_OFFLINE"] = "1"
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    # As the doxa CLI sets them for the server.
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    env.setdefault("MALLOC_ARENA_MAX", "2")
    completed = subprocess.run(command, env=env, check=False)
    if completed.returncode != 0:
        if tolerate and out_path.exists():
            figures = dict(json.loads(out_path.read_text()))
            figures["error"] = figures.get("error") or f"worker exited {completed.returncode}"
            return figures
        raise RuntimeError(f"worker {' '.join(args)} exited with {completed.returncode}")
    return dict(json.loads(out_path.read_text()))


def run_fill(data_dir: Path, size: int, options: argparse.Namespace, out_path: Path) -> Any:
    """Fill one store in a worker; the figures say how far it got if it failed."""
    log(
        f"fill {size:,} memories (hash embedder, batches of {options.fill_batch}"
        + (
            f", buffer_pool_mb {options.fill_buffer_pool_mb})"
            if options.fill_buffer_pool_mb
            else ")"
        )
    )
    fill = run_worker(
        [
            "--worker", "fill", "--dir", str(data_dir), "--size", str(size),
            "--fill-batch", str(options.fill_batch),
            "--fill-buffer-pool-mb", str(options.fill_buffer_pool_mb),
        ],
        out_path,
        tolerate=True,
    )  # fmt: skip
    if not fill.get("error"):
        log(f"  filled in {fill['fill_s']:.1f}s ({fill['rate_per_s']:,.0f}/s)")
    return fill


def fill_curve(fill: dict[str, Any], points: int = 10) -> str:
    """Batch time against store size, at about ``points`` places."""
    batches = fill["batches_s"]
    step = max(1, len(batches) // points)
    marks = sorted({*range(0, len(batches), step), len(batches) - 1}) if batches else []
    return "  ".join(f"{(i + 1) * fill['batch'] // 1000}k:{batches[i]:.1f}s" for i in marks)


def worker_main(options: argparse.Namespace) -> int:
    import anyio

    data_dir = Path(options.dir)
    result: dict[str, Any]
    if options.worker == "fill":
        result = fill_store(
            data_dir,
            options.size,
            options.fill_batch,
            options.fill_buffer_pool_mb,
            Path(options.out),
        )
    elif options.worker == "recall":
        size, queries = options.size, options.queries

        async def recall_part() -> dict[str, Any]:
            return await measure_recall(data_dir, size, queries)

        result = anyio.run(recall_part)
    else:
        prefill, n, batch, singles = options.size, options.ingest, 500, options.singles

        async def ingest_part() -> dict[str, Any]:
            return await measure_ingest(data_dir, prefill, n, batch, singles)

        result = anyio.run(ingest_part)
    Path(options.out).write_text(json.dumps(result, indent=2))
    return 0


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("PASS" if ok else "SHORT")


def report_header(options: argparse.Namespace, sizes: list[int]) -> dict[str, Any]:
    import importlib.metadata as metadata

    def version(name: str) -> str:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return "?"

    meta = {
        "started": datetime.now(UTC).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_start": os.getloadavg(),
        "versions": {
            n: version(n)
            for n in (
                "doxa",
                "mcp",
                "kuzu",
                "lancedb",
                "onnxruntime",
                "sentence-transformers",
                "torch",
                "numpy",
            )
        },
        "runtime": RUNTIME,
        "sizes": sizes,
        "queries": options.queries,
    }
    out("doxa speed bench")
    out("=" * 100)
    out(
        f"started {meta['started']}  python {meta['python']}  cpus {meta['cpus']}  "
        f"load average {' '.join(f'{x:.2f}' for x in meta['load_average_start'])}"
    )
    out("versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()))
    out(
        textwrap.fill(
            "Shared, noisy machine: read medians and the within-run ratios, not absolute "
            "times. Stored memories are embedded with HashEmbedder (384-dim, fast fill); "
            f"queries and measured ingests with the real all-MiniLM-L6-v2 (384-dim) on "
            f"{'ONNX Runtime (the default)' if RUNTIME == 'onnx' else 'torch'}. Recall's "
            "work does not depend on what the vectors contain, only result quality does "
            "(not judged here).",
            100,
        )
    )
    return meta


def print_recall(r: dict[str, Any], fill: dict[str, Any]) -> None:
    out()
    out(
        f"recall at {r['size']:,} memories ({r['rows']:,} rows; fill {fill['fill_s']:.1f}s = "
        f"{fill['rate_per_s']:,.0f}/s in batches of {fill['batch']}"
        + (
            f" with buffer_pool_mb {fill['buffer_pool_mb']}"
            if fill["buffer_pool_mb"] != r["buffer_pool_mb"]
            else ""
        )
        + f", first batch "
        f"{fill['first_batch_s']:.2f}s, last {fill['last_batch_s']:.2f}s; open + warm-up "
        f"with model {r['warm_up_s']:.1f}s)"
    )
    if len(fill["batches_s"]) > 2:
        out(f"  fill batch time by store size: {fill_curve(fill)}")
    out(line("MCP recall (in-memory client)", r["mcp_recall"]))
    out(line("Memory.recall alone (no MCP)", r["store_recall"]))
    out(line(f"query embedding alone (real model, {RUNTIME})", r["embedding"]))
    out(line("numpy exact scan, default BLAS threads", r["exact_scan_default_blas"]))
    out(line("numpy exact scan, one BLAS thread", r["exact_scan_one_blas_thread"]))
    out(line("doxa's int8 scan (ONNX Runtime)", r["own_scan"]))
    out(
        f"  ratio MCP recall p50 / (embedding + faster exact scan) = {r['ratio']:.2f}   "
        f"(store alone {r['store_ratio']:.2f}; MCP overhead {r['mcp_overhead_ms']:.2f} ms; "
        f"{r['mean_results']:.1f} results/query)"
    )
    out(
        f"  work beyond the model (recall p50 - embedding p50): MCP "
        f"{r['mcp_recall']['p50_ms'] - r['embedding']['p50_ms']:.2f} ms, store alone "
        f"{r['store_recall']['p50_ms'] - r['embedding']['p50_ms']:.2f} ms, of which the exact "
        f"scan {r['exact_scan']['p50_ms']:.2f} ms"
    )
    out(
        f"  peak RSS {r['peak_rss_mb']:.0f} MB (RSS after warm-up "
        f"{r['rss_mb']['after_warm_up']:.0f} MB, after answering every query once "
        f"{r['rss_mb']['after_queries']:.0f} MB; embeddings {r['embeddings_mb']:.0f} MB; Kùzu "
        f"buffer_pool_mb {r['buffer_pool_mb']}); with the bench's float32 baseline matrix "
        f"loaded after: {r['bench_peak_rss_mb']:.0f} MB"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="store sizes for recall")
    parser.add_argument("--queries", type=int, default=200, help="recall queries per size")
    parser.add_argument("--json", type=Path, help="write every figure here")
    parser.add_argument("--skip-reference", action="store_true", help="skip the npm reference")
    parser.add_argument("--quick", action="store_true", help="sizes 1k,10k, fewer queries")
    parser.add_argument("--keep", action="store_true", help="keep the temporary data")
    parser.add_argument(
        "--only", choices=["handshake"], help="run this part alone (the handshake: seconds)"
    )
    parser.add_argument(
        "--handshake-runs", type=int, help="fresh processes of each server (default 7; quick: 3)"
    )
    parser.add_argument(
        "--fill-batch", type=int, default=FILL_BATCH, help="memories per Memory.remember in fills"
    )
    parser.add_argument(
        "--fill-buffer-pool-mb",
        type=int,
        default=0,
        help="Kùzu buffer pool of the fill processes only (default: the product's setting)",
    )
    parser.add_argument(
        "--runtime",
        choices=["onnx", "torch"],
        default="onnx",
        help="run the model on ONNX Runtime (the product's default) or torch",
    )
    parser.add_argument("--worker", choices=["fill", "recall", "ingest"], help=argparse.SUPPRESS)
    parser.add_argument("--dir", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--ingest", type=int, default=2000, help=argparse.SUPPRESS)
    parser.add_argument("--singles", type=int, default=100, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    global RUNTIME
    RUNTIME = options.runtime
    if options.worker:
        return worker_main(options)
    if RUNTIME == "onnx":
        # Export the model now (once per machine, as a user's first start does), so no timed
        # part below pays for it.
        from doxa.store.onnx_embedder import default_cache_dir, exported_model, model_source
        from doxa.store.settings import BUNDLED_MODEL

        began = time.perf_counter()
        source = model_source(BUNDLED_MODEL)
        assert source is not None
        log(
            f"ONNX export ready: {exported_model(source, default_cache_dir())} "
            f"({time.perf_counter() - began:.1f}s)"
        )

    sizes = [int(s) for s in options.sizes.split(",") if s.strip()]
    handshake_runs, ingest_n, singles, prefill = 7, 2000, 100, 2000
    if options.quick:
        sizes = [1000, 10000] if options.sizes == parser.get_default("sizes") else sizes
        options.queries = min(options.queries, 50)
        handshake_runs, ingest_n, singles = 3, 1000, 30
    handshake_runs = options.handshake_runs or handshake_runs
    root = Path(tempfile.mkdtemp(prefix="doxa-speed-"))
    started = time.perf_counter()
    results: dict[str, Any] = {"meta": report_header(options, sizes)}
    results["meta"]["data_root"] = str(root)
    rows: list[tuple[str, str, str, bool | None]] = []
    try:
        # 4. handshake first, before the page cache holds stores of ours.
        log(f"handshake: {handshake_runs} runs of each server (+1 discarded)")
        hs = measure_handshake(root, handshake_runs)
        results["handshake"] = hs
        out()
        out(f"handshake (spawn -> tools/list answered; median of {hs['runs']} fresh processes)")
        out(
            f"  doxa serve (stdio, real embedder, empty dir): initialize "
            f"{hs['doxa']['initialize_s']:.3f}s, tools/list {hs['doxa']['tools_list_s']:.3f}s, "
            f"first recall answered {hs['doxa']['first_call_s']:.2f}s (model loaded)"
        )
        out(
            f"  minimal MCPServer, one tool:                  initialize "
            f"{hs['minimal']['initialize_s']:.3f}s, tools/list "
            f"{hs['minimal']['tools_list_s']:.3f}s, first call {hs['minimal']['first_call_s']:.3f}s"
        )
        out(
            f"  doxa / minimal = {hs['doxa']['tools_list_s'] / hs['minimal']['tools_list_s']:.2f}"
            f"   runs: doxa {' '.join(f'{x:.3f}' for x in hs['doxa_tools_list_s'])}; minimal "
            f"{' '.join(f'{x:.3f}' for x in hs['minimal_tools_list_s'])}"
        )
        if options.only == "handshake":
            out(
                f"load average at end {' '.join(f'{x:.2f}' for x in os.getloadavg())} on "
                f"{os.cpu_count()} cpus"
            )
            return 0

        # 1 and 5. recall at each size.
        results["fill"], results["recall"] = {}, {}
        dirs: dict[int, Path] = {}
        for size in sizes:
            data_dir = root / f"store-{size}"
            fill = run_fill(data_dir, size, options, root / f"fill-{size}.json")
            results["fill"][str(size)] = fill
            if fill.get("error"):
                out()
                out(
                    f"recall at {size:,} memories: NOT MEASURED - the fill failed after "
                    f"{fill['stored']:,} memories (Memory.remember in batches of {fill['batch']}, "
                    f"buffer_pool_mb {fill['buffer_pool_mb']}, {fill['fill_s']:.0f}s):"
                )
                out(f"  {fill['error']}")
                out(f"  batch time by store size: {fill_curve(fill)}")
                continue
            dirs[size] = data_dir
            log(f"recall at {size:,}: {options.queries} queries")
            recall = run_worker(
                [
                    "--worker", "recall", "--dir", str(data_dir), "--size", str(size),
                    "--queries", str(options.queries),
                ],
                root / f"recall-{size}.json",
            )  # fmt: skip
            results["recall"][str(size)] = recall
            print_recall(recall, fill)

        # 2 and 3. ingest and single remember.
        log(f"ingest: {ingest_n} memories in batches of 500 over MCP, then {singles} singles")
        ingest = run_worker(
            [
                "--worker", "ingest", "--dir", str(root / "store-ingest"),
                "--size", str(prefill), "--ingest", str(ingest_n), "--singles", str(singles),
            ],
            root / "ingest.json",
        )  # fmt: skip
        results["ingest"] = ingest
        out()
        out(
            f"ingest: {ingest['memories']:,} memories, remember(memories=[...]) in batches of "
            f"{ingest['batch']} over MCP, real model (store prefilled with {ingest['prefill']:,})"
        )
        out(
            f"  MCP batch remember {ingest['mcp_rate_per_s']:8.1f} memories/s   batches "
            + " ".join(f"{x:.2f}s" for x in ingest["mcp_batches_s"])
        )
        out(
            f"  embedder alone     {ingest['embed_rate_per_s']:8.1f} memories/s   batches "
            + " ".join(f"{x:.2f}s" for x in ingest["embed_batches_s"])
            + f"   ({ingest['embedder']}.embed, batch_size {ingest['embedder_batch_size']})"
        )
        out(f"  ratio MCP / embedder = {ingest['ingest_ratio']:.2f}")
        out()
        out(f"single remember over MCP into a store of {ingest['single_store_size']:,}")
        out(line("remember(text=...) over MCP", ingest["single_remember"]))
        out(line("Memory.remember alone (no MCP)", ingest["single_store_remember"]))
        out(line(f"one query embedding (real model, {RUNTIME})", ingest["single_embedding"]))
        out(line("one embedding of a memory's text", ingest["single_text_embedding"]))
        out(line("remember over MCP until embedded", ingest["single_until_recallable"]))
        until = ingest["single_until_recallable"]["p50_ms"] / ingest["single_embedding"]["p50_ms"]
        out(
            f"  ratio = {ingest['single_ratio']:.2f}   (remember returns once the graph holds the "
            f"memory; until it is also recalled by meaning: {until:.2f})"
        )

        # 6. reference.
        ref_size = 10_000
        if options.skip_reference:
            out()
            out("reference comparison skipped (--skip-reference)")
        elif shutil.which("npx") is None:
            out()
            out("reference comparison skipped: npx not found")
        else:
            if ref_size not in dirs:
                data_dir = root / f"store-{ref_size}-reference"
                fill = run_fill(data_dir, ref_size, options, root / "fill-reference.json")
                if fill.get("error"):
                    raise RuntimeError(f"the 10k fill for the reference failed: {fill['error']}")
                dirs[ref_size] = data_dir
            import anyio

            log(f"reference: {REFERENCE_PACKAGE} vs doxa serve over stdio at {ref_size:,}")

            async def reference_part() -> dict[str, Any]:
                return await measure_reference(root, dirs[ref_size], ref_size, options.queries)

            try:
                ref = anyio.run(reference_part)
            except Exception as error:  # npm offline, package missing: say so and go on
                out()
                out(f"reference comparison skipped: {type(error).__name__}: {error}")
                ref = None
            if ref is not None:
                results["reference"] = ref
                out()
                out(
                    f"reference: {REFERENCE_PACKAGE} (JSONL knowledge graph, "
                    f"{ref['entities']:,} entities, {ref['file_mb']:.1f} MB, loaded in "
                    f"{ref['load_s']:.1f}s) vs doxa serve (ready in {ref['doxa_ready_s']:.1f}s),"
                    " both over stdio, same client"
                )
                for kind in ("questions", "keywords"):
                    f = ref[kind]
                    out(
                        f"  {kind}: doxa recall p50 {f['ours']['p50_ms']:.2f} ms (p95 "
                        f"{f['ours']['p95_ms']:.2f}, {f['mean_hits_ours']:.1f} results)   "
                        f"search_nodes p50 {f['theirs']['p50_ms']:.2f} ms (p95 "
                        f"{f['theirs']['p95_ms']:.2f}, {f['mean_hits_theirs']:.1f} results)   "
                        f"ratio {f['ratio']:.2f}"
                    )
                out(
                    "  (search_nodes is a substring match: a whole question rarely matches "
                    "anything; the keyword rows ask it for a person or a project)"
                )

        # summary
        target = TARGETS["recall_ratio_100k"]
        for size in sizes:
            at_100k = size == 100_000
            r = results["recall"].get(str(size))
            fill = results["fill"][str(size)]
            rows.append(
                (
                    f"recall p50 / (embed + scan) at {size:,}",
                    f"{r['ratio']:.2f}  ({r['mcp_recall']['p50_ms']:.1f} ms)"
                    if r
                    else f"fill failed at {fill['stored']:,}",
                    f"<= {target}" + ("" if at_100k else " (at 100k)"),
                    (r["ratio"] <= target if r else False) if at_100k else None,
                )
            )
        rows.append(
            (
                "ingest MCP batch / embedder",
                f"{ingest['ingest_ratio']:.2f}  ({ingest['mcp_rate_per_s']:.0f}/s)",
                f">= {TARGETS['ingest_ratio']}",
                ingest["ingest_ratio"] >= TARGETS["ingest_ratio"],
            )
        )
        rows.append(
            (
                "single remember p50 / query embedding p50",
                f"{ingest['single_ratio']:.2f}  ({ingest['single_remember']['p50_ms']:.1f} ms)",
                f"<= {TARGETS['single_ratio']}",
                ingest["single_ratio"] <= TARGETS["single_ratio"],
            )
        )
        rows.append(
            (
                "handshake doxa serve (s)",
                f"{hs['doxa']['tools_list_s']:.3f}  (minimal {hs['minimal']['tools_list_s']:.3f})",
                f"< {TARGETS['handshake_s']}",
                hs["doxa"]["tools_list_s"] < TARGETS["handshake_s"],
            )
        )
        measured_sizes = [int(k) for k in results["recall"]]
        biggest = max(measured_sizes, default=0)
        rss = results["recall"][str(biggest)]["peak_rss_mb"] if biggest else None
        if 100_000 in sizes and biggest != 100_000:
            seen = f"; {rss:.0f} at {biggest:,}" if rss is not None else ""
            rows.append(
                (
                    "peak RSS at 100,000 with model (MB)",
                    f"not measured{seen}",
                    f"<= {TARGETS['rss_mb']:.0f}",
                    False,
                )
            )
        else:
            rows.append(
                (
                    f"peak RSS at {biggest:,} with model (MB)",
                    f"{rss:.0f}" if rss is not None else "not measured",
                    f"<= {TARGETS['rss_mb']:.0f} (at 100k)",
                    (rss is not None and rss <= TARGETS["rss_mb"]) if biggest == 100_000 else None,
                )
            )
        if "reference" in results:
            f = results["reference"]["questions"]
            rows.append(
                (
                    "recall / reference search_nodes (stdio)",
                    f"{f['ratio']:.2f}  ({f['ours']['p50_ms']:.1f} vs {f['theirs']['p50_ms']:.1f})",
                    f"<= {TARGETS['reference_ratio']}",
                    f["ratio"] <= TARGETS["reference_ratio"],
                )
            )
        else:
            rows.append(("recall / reference search_nodes (stdio)", "skipped", "<= 1.0", None))
        out()
        out("summary")
        out("-" * 100)
        out(f"  {'figure':<44} {'measured':<28} {'target':<20} verdict")
        for label, value, target, ok in rows:
            out(f"  {label:<44} {value:<28} {target:<20} {verdict(ok)}")
        elapsed = time.perf_counter() - started
        load = os.getloadavg()
        out(
            f"total {elapsed / 60:.1f} min; load average at end "
            f"{' '.join(f'{x:.2f}' for x in load)} on {os.cpu_count()} cpus"
        )
        results["meta"]["total_s"] = elapsed
        results["meta"]["load_average_end"] = load
        results["summary"] = [
            {"figure": label, "measured": value, "target": target, "verdict": verdict(ok)}
            for label, value, target, ok in rows
        ]
    finally:
        if options.json:
            options.json.write_text(json.dumps(results, indent=2, default=str))
        if options.keep:
            log(f"data kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
