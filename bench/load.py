"""Load: one memory shared by many clients at once, against the targets of issue 9 (items 3
and 4). Every part runs real ``doxa serve`` subprocesses with the hash embedder (so the
model's time does not hide the store's) and checks the graph afterwards.

1. **sharing**: 3 stdio processes on one data directory (one owns it, the others relay to
   it; ``doxa.store.sharing``), each driven by its own client through ``--calls`` (200)
   mixed calls: remember, recall, feedback (on the client's last recall), forget (retract or
   purge one of its own memories). When half of all calls are done the owner is killed with
   -9, and a new process is started in its place for its client. Retryable ``OwnerLost``
   answers ("Retry the call") are retried, as an agent would; so is the call that was in
   flight in the killed process. Counted: other errors (target 0), acknowledged writes not
   in the graph afterwards (0), observations stored twice (0), and clients that gave up
   after 3 errors in a row (0: their process stopped answering).
2. **http**: ``doxa serve --transport http --workers W`` (``--workers``, 2) holding
   ``--fill`` (2,000) memories: recall throughput of one client, then ``--clients`` (32)
   clients x ``--calls`` mixed calls (errors 0, lost writes 0, p50 and p99 of recall and
   remember). Once the server's background work is done (its CPU idle for a second), one
   client recalls, then ``--clients`` clients recall only, ``--per-process`` (8) to a client
   process as agents are separate processes, then one client again: throughput vs the mean
   of the two single runs around it, on the same memory (>= 1.6 x on 2 cores), and recall
   p99 <= 4 x p50 under that load (shown for the mixed load too).
3. **conflicts**: ``--facts`` (20,000) facts remembered through MCP in batches, two agents
   per subject, the objects clashing on every ``--clash-every`` (10th) subject; recall
   latency of 4 clients alone, then while another client process calls
   ``find_conflicts(agent=..., limit=--conflicts-limit)`` (50, the tool's default) again and
   again: recall p99 with it / alone (<= 3 x).

Latencies are measured by the clients (MCP over stdio or HTTP, so they include the
protocol). The machine is shared: compare the ratios, which are taken within one run.

Run: ``python bench/load.py`` (about 5 minutes); ``--part sharing|http|conflicts`` for one;
``--keep DIR`` keeps the data directories and the servers' logs there.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

DOXA = [sys.executable, "-m", "doxa.server", "serve", "--embedder", "hash"]
RETRY = "Retry the call"
#: Retried after its process died, these answers mean the first try was applied.
APPLIED = {"feedback": "already judged", "forget": "no observation with id"}
#: Known causes of errors, told apart in the report: (part of the message, what it means).
CAUSES = [
    ("no recall with id", "feedback on a recall whose event the killed owner had not written"),
    ("was not returned by recall", "feedback on a result purged since, recall read from the graph"),
    ("AssertionError", "a relayed call reached a new owner still setting up"),
    ("still being opened", "a relay that never found the new owner"),
]
#: A summary row: figure, measured, target ("" for a figure without one), met.
Row = tuple[str, str, str, bool]
CALL_LIMIT_S = 120.0
#: A sharing client stops after this many errors in a row (its process no longer answers).
GIVE_UP_AFTER = 3
WORDS = [
    "harbour",
    "ferry",
    "bridge",
    "lighthouse",
    "market",
    "tide",
    "crane",
    "storm",
    "gull",
    "pier",
    "boat",
    "road",
]
PLACES = [
    "north quay",
    "old mill",
    "east gate",
    "fish market",
    "town hall",
    "river mouth",
    "signal box",
]


def out(line: str = "") -> None:
    print(line, flush=True)


def check(ok: bool) -> str:
    return "✔" if ok else "✘"


def percentile(values: list[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values``, by the nearest rank."""
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


# ---- what the clients did ---------------------------------------------------------------------


@dataclass
class Ledger:
    """Every client's acknowledged writes, errors and latencies (one per part)."""

    remembered: dict[str, str] = field(default_factory=dict)  # text -> observation id
    forgotten: dict[str, str] = field(default_factory=dict)  # observation id -> mode
    judged: set[str] = field(default_factory=set)  # recall ids
    errors: list[str] = field(default_factory=list)
    retried: int = 0  # OwnerLost answers, retried
    lost_in_flight: int = 0  # calls in flight in a killed process, sent again
    applied_before: int = 0  # retried writes whose first try had been applied
    latency: dict[str, list[float]] = field(default_factory=dict)
    recalls_done: int = 0
    how: dict[str, str] = field(default_factory=dict)  # recall id -> how its feedback went

    def took(self, tool: str, seconds: float) -> None:
        self.latency.setdefault(tool, []).append(seconds)


@dataclass
class Mix:
    """One client's sequence of mixed calls and what it needs to make the next one."""

    tag: str
    seed: int
    rng: random.Random = field(init=False)
    mine: list[str] = field(default_factory=list)  # its live observation ids
    last_recall: tuple[str, list[str]] | None = None  # (recall id, returned ids), unjudged
    counter: int = 0

    def __post_init__(self) -> None:
        self.rng = random.Random(self.seed)

    def text(self) -> str:
        self.counter += 1
        r = self.rng
        return (
            f"Load note {self.tag}-{self.counter}: the {r.choice(WORDS)} by the"
            f" {r.choice(PLACES)} was {r.choice(WORDS)}-{r.randrange(1000)} at {r.randrange(24)}h."
        )

    def query(self) -> str:
        r = self.rng
        return f"{r.choice(WORDS)} {r.choice(WORDS)} near the {r.choice(PLACES)}"

    def next_call(self) -> tuple[str, dict[str, Any]]:
        """The next call: 40% remember, 35% recall, 15% feedback, 10% forget (a call that
        needs what is missing becomes a remember or a recall)."""
        pick = self.rng.random()
        if pick < 0.10 and len(self.mine) > 3:
            victim = self.mine.pop(self.rng.randrange(len(self.mine)))
            mode = "purge" if self.rng.random() < 0.3 else "retract"
            return "forget", {"id": victim, "mode": mode}
        if pick < 0.25 and self.last_recall is not None:
            recall_id, returned = self.last_recall
            self.last_recall = None
            accepted = returned[:1]
            rejected = returned[1:2]
            return "feedback", {"recall_id": recall_id, "accepted": accepted, "rejected": rejected}
        if pick < 0.60:
            return "recall", {"query": self.query(), "limit": 10}
        return "remember", {"text": self.text(), "topics": [self.rng.choice(WORDS)]}

    def done(self, tool: str, args: dict[str, Any], result: dict[str, Any], led: Ledger) -> None:
        """Note an acknowledged call."""
        if tool == "remember":
            led.remembered[args["text"]] = result["observation_id"]
            self.mine.append(result["observation_id"])
        elif tool == "recall":
            led.recalls_done += 1
            returned = [r["observation_id"] for r in result["results"]]
            self.last_recall = (result["recall_id"], returned) if returned else None
        elif tool == "feedback":
            led.judged.add(args["recall_id"])
        elif tool == "forget":
            led.forgotten[args["id"]] = args["mode"]


class ProcessGone(Exception):
    """The client's server process died under a call."""


async def call(
    client: Client, tool: str, args: dict[str, Any], led: Ledger, again: bool = False
) -> dict[str, Any] | None:
    """One tool call, retried while the answer is a retryable ``OwnerLost``; returns the
    structured result, or None after noting an error.

    ``again``: the call may have been applied already (it was in flight when its owner
    died), so a feedback finding its recall judged, or a purge finding its observation
    gone, counts as done.

    Raises:
        ProcessGone: the connection to the server failed.
    """
    for _ in range(20):
        began = time.perf_counter()
        try:
            with anyio.fail_after(CALL_LIMIT_S):
                result = await client.call_tool(tool, args)
        except Exception as error:
            raise ProcessGone(f"{type(error).__name__}: {error}") from error
        took = time.perf_counter() - began
        if not result.is_error:
            led.took(tool, took)
            if tool == "feedback":
                led.how[args["recall_id"]] = f"acknowledged at {time.monotonic():.3f} ({again=})"
            structured = result.structured_content
            assert isinstance(structured, dict)
            return structured
        text = str(getattr(result.content[0], "text", result.content))
        if RETRY in text:
            led.retried += 1
            again = True
            continue
        if again and tool in APPLIED and APPLIED[tool] in text:
            led.applied_before += 1
            if tool == "feedback":
                led.how[args["recall_id"]] = f"retried, found applied at {time.monotonic():.3f}"
            return {}
        led.errors.append(f"{tool}: {text[:300]}")
        return None
    led.errors.append(f"{tool}: still OwnerLost after 20 tries")
    return None


# ---- reading the graph afterwards --------------------------------------------------------------


@dataclass
class Stored:
    """What the graph holds, read with every server stopped."""

    texts: dict[str, list[str]]  # text -> observation ids (more than one: stored twice)
    retracted: set[str]
    recalls: set[str]
    judged: set[str]


def stored(data_dir: Path) -> Stored:
    from doxa.store.graph import Graph

    graph = Graph(data_dir / "graph", read_only=True)
    try:
        rows = graph._rows("MATCH (o:Observation) RETURN o.text, o.id, o.retracted_at")
        recalls = graph._rows("MATCH (r:Recall) RETURN r.id, r.judged_at")
    finally:
        graph.close()
    texts: dict[str, list[str]] = {}
    for text, obs, _ in rows:
        texts.setdefault(str(text), []).append(str(obs))
    return Stored(
        texts,
        {str(r[1]) for r in rows if r[2] is not None},
        {str(r[0]) for r in recalls},
        {str(r[0]) for r in recalls if r[1] is not None},
    )


def audit(led: Ledger, data_dir: Path) -> tuple[int, int, list[str]]:
    """(acknowledged writes missing, observations stored twice, examples) of a part."""
    graph = stored(data_dir)
    missing: list[str] = []
    purged = {obs for obs, mode in led.forgotten.items() if mode == "purge"}
    for text, obs in led.remembered.items():
        if obs not in purged and obs not in graph.texts.get(text, []):
            missing.append(f"remember {obs}")
    present = {obs for ids in graph.texts.values() for obs in ids}
    for obs, mode in led.forgotten.items():
        if (mode == "purge" and obs in present) or (
            mode == "retract" and obs not in graph.retracted
        ):
            missing.append(f"forget ({mode}) {obs}")
    missing += [
        f"feedback {r} ({led.how.get(r)}; recorded: {r in graph.recalls})"
        for r in sorted(led.judged - graph.judged)
    ]
    twice = sum(len(ids) - 1 for ids in graph.texts.values() if len(ids) > 1)
    return len(missing), twice, missing[:3]


def report_errors(led: Ledger) -> None:
    """Print the errors of a part by cause, with one example of each."""
    causes: dict[str, list[str]] = {}
    for error in led.errors:
        cause = next((what for part, what in CAUSES if part in error), "other")
        causes.setdefault(cause, []).append(error)
    for cause, errors in causes.items():
        out(f"  errors, {cause}: {len(errors)}, e.g. {errors[0][:200]}")


def wait_gone(pids: list[int], limit_s: float = 60) -> None:
    deadline = time.monotonic() + limit_s
    while any(Path(f"/proc/{p}").exists() for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def stdio_pids(data_dir: Path) -> dict[str, int]:
    """Agent -> pid of every ``doxa serve`` on ``data_dir`` (told apart by ``--agent``)."""
    found: dict[str, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"doxa.server" in argv and str(data_dir).encode() in argv and b"--agent" in argv:
            found[argv[argv.index(b"--agent") + 1].decode()] = int(entry.name)
    return found


def owner_pid(data_dir: Path) -> int | None:
    try:
        return int((data_dir / "owner.lock").read_text().split()[0])
    except (FileNotFoundError, ValueError, IndexError):
        return None


# ---- 1. sharing: three stdio processes, the owner killed halfway -------------------------------


async def sharing_part(root: Path, calls: int) -> list[Row]:
    data_dir = root / "sharing"
    agents = ["p0", "p1", "p2"]
    out(f"\n## sharing: 3 stdio processes on one directory, {calls} mixed calls each;")
    out("   the owner is killed with -9 halfway and a new process takes its client")
    led = Ledger()
    total = calls * len(agents)
    progress = 0
    kill_at = total // 2
    killed: dict[str, Any] = {}
    gave_up: dict[str, str] = {}  # client -> its last error, when it stopped calling
    owning = anyio.Event()
    ready = [anyio.Event() for _ in agents]

    def params(agent: str) -> StdioServerParameters:
        return StdioServerParameters(
            command=DOXA[0], args=[*DOXA[1:], "--data-dir", str(data_dir), "--agent", agent]
        )

    async def client_task(k: int) -> None:
        nonlocal progress
        agent = agents[k]
        mix = Mix(agent, seed=k)
        pending: tuple[str, dict[str, Any]] | None = None
        generation = 0
        i = 0
        while i < calls:
            my_pid = None
            with (root / "logs" / f"{agent}.{generation}.stderr").open("w") as errlog:
                try:
                    async with Client(stdio_client(params(agent), errlog=errlog)) as client:
                        if generation == 0:
                            # The processes race for ownership as they start; one call
                            # each before any counts, the first one opening the memory.
                            if k == 0:
                                await call(client, "recall", {"query": "warm up"}, Ledger())
                                owning.set()
                            else:
                                await owning.wait()
                                await call(client, "recall", {"query": "warm up"}, Ledger())
                            ready[k].set()
                            for other in ready:
                                await other.wait()
                        my_pid = stdio_pids(data_dir).get(agent)
                        failing = 0
                        while i < calls:
                            tool, args = pending or mix.next_call()
                            again, pending = pending is not None, (tool, args)
                            result = await call(client, tool, args, led, again)
                            pending = None
                            if result is not None:
                                mix.done(tool, args, result, led)
                            failing = failing + 1 if result is None else 0
                            if failing == GIVE_UP_AFTER:  # its process no longer answers
                                gave_up[agent] = led.errors[-1]
                                progress += calls - i
                                return
                            i += 1
                            progress += 1
                            if progress == kill_at:
                                owner = owner_pid(data_dir)
                                assert owner is not None
                                killed.update(pid=owner, at=f"{time.monotonic():.3f}")
                                os.kill(owner, signal.SIGKILL)
                except Exception as error:
                    if my_pid is None or killed.get("pid") != my_pid:
                        raise
                    # Its process was the one killed: start another in its place, and send
                    # the call that was in flight again (it may have been applied).
                    led.lost_in_flight += pending is not None
                    killed.update(client=agent, seen=f"{type(error).__name__}")
                    generation += 1

    began = time.monotonic()
    with anyio.fail_after(900):
        async with anyio.create_task_group() as group:
            for k in range(len(agents)):
                group.start_soon(client_task, k)
    elapsed = time.monotonic() - began
    wait_gone(list(stdio_pids(data_dir).values()))
    missing, twice, examples = audit(led, data_dir)
    out(
        f"  {progress} calls in {elapsed:.1f} s; the owner (pid {killed.get('pid')}, client"
        f" {killed.get('client')}) was killed after {kill_at}; its client saw"
        f" {killed.get('seen')} and started a new process (killed at {killed.get('at')})"
    )
    out(
        f"  OwnerLost answers retried: {led.retried}; calls in flight in the killed process"
        f" sent again: {led.lost_in_flight}; retried writes found applied: {led.applied_before}"
    )
    out(
        f"  acknowledged: {len(led.remembered)} remembers, {len(led.judged)} feedbacks,"
        f" {len(led.forgotten)} forgets, {led.recalls_done} recalls"
    )
    report_errors(led)
    for agent, error in gave_up.items():
        out(f"  client {agent} gave up after {GIVE_UP_AFTER} errors in a row: {error[:200]}")
    if examples:
        out(f"  missing, e.g.: {', '.join(examples)}")
    return [
        ("sharing: clients whose process stopped answering", str(len(gave_up)), "0", not gave_up),
        ("sharing: errors besides OwnerLost", str(len(led.errors)), "0", not led.errors),
        ("sharing: acknowledged writes missing", str(missing), "0", missing == 0),
        ("sharing: observations stored twice", str(twice), "0", twice == 0),
    ]


# ---- 2. HTTP: 32 clients at once ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def http_server(
    data_dir: Path, log: Path, workers: int = 1
) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    process = subprocess.Popen(
        [
            *DOXA,
            *("--data-dir", str(data_dir), "--transport", "http", "--port", str(port)),
            *("--workers", str(workers)),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log.open("wb"),
        start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"doxa serve exited with {process.returncode}; see {log}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not open its port") from None
            await anyio.sleep(0.05)
    return process, f"http://127.0.0.1:{port}/mcp"


def stop(process: subprocess.Popen[bytes]) -> int:
    process.send_signal(signal.SIGTERM)
    try:
        return process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        return process.wait(timeout=60)


async def fill(url: str, memories: list[dict[str, Any]], batch: int) -> float:
    """Remember ``memories`` in batches through one client; returns the seconds taken."""
    began = time.perf_counter()
    async with Client(url) as client:
        for start in range(0, len(memories), batch):
            result = await client.call_tool(
                "remember", {"memories": memories[start : start + batch]}
            )
            if result.is_error:
                raise RuntimeError(f"fill failed: {result.content[0]}")
        await client.call_tool("recall", {"query": "settle"})  # waits for the embeddings
    return time.perf_counter() - began


def cpu_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds (user + system) spent so far by the process ``pid`` with its children
    (the HTTP workers) and by this one."""
    server = 0.0
    for one in [pid, *children(pid)]:
        with contextlib.suppress(FileNotFoundError):
            fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
            server += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    mine = resource.getrusage(resource.RUSAGE_SELF)
    return server, mine.ru_utime + mine.ru_stime


def children(pid: int) -> list[int]:
    """The child processes of ``pid``."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(c) for c in (task / "children").read_text().split()]
    return found


def minus(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return a[0] - b[0], a[1] - b[1]


async def recall_only(url: str, clients: int, each: int, seed: int) -> tuple[float, list[float]]:
    """``clients`` clients doing ``each`` recalls one after another; returns (recalls per
    second over the whole run, latencies)."""
    led = Ledger()
    async with AsyncExitStack() as stack:
        connected = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        for client in connected:  # sessions are set up outside the measured time
            await call(client, "recall", {"query": "warm up"}, Ledger())

        async def run(k: int) -> None:
            mix = Mix(f"r{k}", seed=seed + k)
            for _ in range(each):
                await call(connected[k], "recall", {"query": mix.query(), "limit": 10}, led)

        began = time.perf_counter()
        async with anyio.create_task_group() as group:
            for k in range(clients):
                group.start_soon(run, k)
        elapsed = time.perf_counter() - began
    if led.errors:
        raise RuntimeError(f"recall failed: {led.errors[0]}")
    return clients * each / elapsed, led.latency["recall"]


async def recallers(url: str, clients: int, each: int, seed: int, go: Path, report: Path) -> None:
    """One client process of ``recall_in_processes``: connect ``clients`` clients, say so in
    ``report``.ready, wait for ``go``, recall, then write latencies, wall times and the
    process's CPU seconds to ``report`` (JSON)."""
    led = Ledger()
    async with AsyncExitStack() as stack:
        connected = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
        for client in connected:
            await call(client, "recall", {"query": "warm up"}, Ledger())
        report.with_suffix(".ready").touch()
        while not go.exists():
            await anyio.sleep(0.01)
        cpu = resource.getrusage(resource.RUSAGE_SELF)
        began = time.time()

        async def run(k: int) -> None:
            mix = Mix(f"r{seed}-{k}", seed=seed * 100 + k)
            for _ in range(each):
                await call(connected[k], "recall", {"query": mix.query(), "limit": 10}, led)

        async with anyio.create_task_group() as group:
            for k in range(clients):
                group.start_soon(run, k)
        ended = time.time()
        after = resource.getrusage(resource.RUSAGE_SELF)
    spent = after.ru_utime + after.ru_stime - cpu.ru_utime - cpu.ru_stime
    report.write_text(
        json.dumps(
            {
                "latency": led.latency["recall"],
                "errors": led.errors,
                "began": began,
                "ended": ended,
                "cpu": spent,
            }
        )
    )


async def settled(
    server: int, quiet_s: float = 1.0, idle: float = 0.1, limit_s: float = 120
) -> float:
    """Wait until the server (with its workers) spends less than ``idle`` of a core over
    ``quiet_s``: what the last writes left it to do in the background (embedding, indexing,
    recording recalls, retraining, compaction) is done. Returns the seconds waited."""
    began = time.monotonic()
    while time.monotonic() - began < limit_s:
        before = cpu_seconds(server)[0]
        await anyio.sleep(quiet_s)
        if cpu_seconds(server)[0] - before < idle * quiet_s:
            break
    return time.monotonic() - began


async def recall_in_processes(
    url: str, root: Path, clients: int, per_process: int, each: int, seed: int, server: int
) -> tuple[float, list[float], float, float]:
    """``clients`` clients doing ``each`` recalls one after another, ``per_process`` to a
    client process (as agents are separate processes: one Python process driving 32 SDK
    clients spends half as much CPU again per call as one driving one).

    Returns (recalls per second from the first start to the last end, latencies, server CPU
    seconds and clients' CPU seconds while recalling)."""
    folder = Path(tempfile.mkdtemp(prefix="recallers-", dir=root))
    go = folder / "go"
    sizes = [per_process] * (clients // per_process) + (
        [clients % per_process] if clients % per_process else []
    )
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--recallers",
                url,
                str(size),
                str(each),
                str(seed + k),
                str(go),
                str(folder / f"{k}.json"),
            ],
            stdin=subprocess.DEVNULL,
        )
        for k, size in enumerate(sizes)
    ]
    try:
        deadline = time.monotonic() + 120
        while not all((folder / f"{k}.ready").exists() for k in range(len(sizes))):
            if time.monotonic() > deadline or any(p.poll() for p in processes):
                raise RuntimeError("a recalling client process did not start")
            await anyio.sleep(0.02)
        server_before = cpu_seconds(server)[0]
        go.touch()
        for process in processes:
            while process.poll() is None:
                await anyio.sleep(0.02)
        server_cpu = cpu_seconds(server)[0] - server_before
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    reports = [json.loads((folder / f"{k}.json").read_text()) for k in range(len(sizes))]
    errors = [e for r in reports for e in r["errors"]]
    if errors:
        raise RuntimeError(f"recall failed: {errors[0]}")
    elapsed = max(r["ended"] for r in reports) - min(r["began"] for r in reports)
    latency = [x for r in reports for x in r["latency"]]
    return len(latency) / elapsed, latency, server_cpu, sum(r["cpu"] for r in reports)


async def http_part(
    root: Path, clients: int, calls: int, filled: int, per_process: int, workers: int
) -> list[Row]:
    data_dir = root / "http"
    out(
        f"\n## http: {clients} clients x {calls} mixed calls on {filled:,} memories,"
        f" doxa serve --workers {workers}"
    )
    process, url = await http_server(data_dir, root / "logs" / "http.stderr", workers)
    rows: list[Row] = []
    try:
        warm = Mix("fill", seed=99)
        took = await fill(
            url, [{"text": warm.text(), "topics": ["fill"]} for _ in range(filled)], 500
        )
        out(f"  filled in {took:.1f} s")
        single_a, *_ = await recall_in_processes(url, root, 1, 1, 150, 1000, process.pid)
        led = Ledger()

        async def mixed(k: int, client: Client) -> None:
            mix = Mix(f"h{k}", seed=k)
            for _ in range(calls):
                tool, args = mix.next_call()
                result = await call(client, tool, args, led)
                if result is not None:
                    mix.done(tool, args, result, led)

        began = time.perf_counter()
        async with AsyncExitStack() as stack:
            connected = [await stack.enter_async_context(Client(url)) for _ in range(clients)]
            async with anyio.create_task_group() as group:
                for k, client in enumerate(connected):
                    group.start_soon(mixed, k, client)
        elapsed = time.perf_counter() - began
        # One client and many are compared on the same memory (what the mixed load left:
        # more memories, judged recalls, a model), once its background work is done.
        quiet = await settled(process.pid)
        single_b, *_ = await recall_in_processes(
            url, root, 1, 1, 150, seed=2500, server=process.pid
        )
        each = max(10, 800 // clients)
        many_n = clients * each
        many, many_latency, *many_cpu = await recall_in_processes(
            url, root, clients, per_process, each, seed=2000, server=process.pid
        )
        single_c, single_latency, *single_cpu = await recall_in_processes(
            url, root, 1, 1, 150, seed=3000, server=process.pid
        )
    finally:
        code = stop(process)
    single = (single_b + single_c) / 2
    missing, twice, examples = audit(led, data_dir)
    recall, remember = led.latency.get("recall", []), led.latency.get("remember", [])
    r50, r99 = percentile(recall, 50), percentile(recall, 99)
    m50, m99 = percentile(many_latency, 50), percentile(many_latency, 99)
    out(
        f"  mixed: {clients * calls} calls in {elapsed:.1f} s ({clients * calls / elapsed:.0f}/s);"
        f" server exit code {code}"
    )
    out(
        f"  recall under the mixed load: p50 {ms(r50)}, p99 {ms(r99)} (n={len(recall)});"
        f" remember p50 {ms(percentile(remember, 50))}, p99 {ms(percentile(remember, 99))}"
        f" (n={len(remember)})"
    )
    out(
        f"  recall only ({quiet:.0f} s after the mixed load): 1 client {single:.0f}/s"
        f" ({single_b:.0f} before the {clients} clients, {single_c:.0f} after;"
        f" p50 {ms(percentile(single_latency, 50))}; {single_a:.0f}/s before the mixed load);"
        f" {clients} clients {many:.0f}/s"
        f" (p50 {ms(percentile(many_latency, 50))}, p99 {ms(percentile(many_latency, 99))})"
    )
    # The clients share the machine's cores with the server: what each side spends per
    # recall bounds what 32 clients can get over one.
    out(
        f"  CPU per recall: server {ms(single_cpu[0] / 150)} (1 client),"
        f" {ms(many_cpu[0] / many_n)} ({clients} clients); clients {ms(single_cpu[1] / 150)},"
        f" {ms(many_cpu[1] / many_n)}; {os.cpu_count()} cores allow at most"
        f" {(os.cpu_count() or 1) / ((many_cpu[0] + many_cpu[1]) / many_n):.0f} recalls/s"
        f" ({clients} clients in {-(-clients // per_process)} processes)"
    )
    report_errors(led)
    if examples:
        out(f"  missing, e.g.: {', '.join(examples)}")
    rows += [
        ("http: errors", str(len(led.errors)), "0", not led.errors),
        ("http: acknowledged writes missing", str(missing), "0", missing == 0),
        ("http: observations stored twice", str(twice), "0", twice == 0),
        ("http: recall p50 / p99 (mixed load)", f"{ms(r50)} / {ms(r99)}", "", True),
        (
            "http: remember p50 / p99 (mixed load)",
            f"{ms(percentile(remember, 50))} / {ms(percentile(remember, 99))}",
            "",
            True,
        ),
        ("http: recall p99 / p50 (mixed load)", f"{r99 / r50:.2f}", "", True),
        (
            f"http: recall throughput {clients} clients / 1",
            f"{many / single:.2f} ({many:.0f} vs {single:.0f}/s)",
            ">= 1.6",
            many >= 1.6 * single,
        ),
        (
            f"http: recall p99 / p50 ({clients} clients recalling)",
            f"{m99 / m50:.2f} ({ms(m99)} vs {ms(m50)})",
            "<= 4",
            m99 <= 4 * m50,
        ),
    ]
    return rows


# ---- 3. find_conflicts over 20k facts while recalls run ----------------------------------------


async def conflicts_part(
    root: Path, facts: int, clash_every: int, readers: int, limit: int
) -> list[Row]:
    data_dir = root / "conflicts"
    subjects = facts // 2
    out(
        f"\n## conflicts: find_conflicts over {facts:,} facts ({subjects // clash_every:,}"
        f" clashing pairs) while {readers} clients recall"
    )
    process, url = await http_server(data_dir, root / "logs" / "conflicts.stderr")
    try:
        memories = []
        for s in range(subjects):
            for agent in ("scout", "driver"):
                status = "closed" if agent == "driver" and s % clash_every == 0 else "open"
                memories.append(
                    {
                        "text": f"{agent}: gate {s} by the {PLACES[s % len(PLACES)]} is {status}.",
                        "agent": agent,
                        "topics": [f"gate-{s % 50}"],
                        "fact": {"subject": f"gate {s}", "predicate": "status", "object": status},
                    }
                )
        took = await fill(url, memories, 1000)
        out(f"  {facts:,} facts remembered through MCP in {took:.1f} s")
        each = 60
        _, alone = await recall_only(url, readers, each, seed=4000)
        # The sweeping client is a process of its own, as another user's client would be:
        # it checks each 300 kB answer against the tool's output schema (0.3 s of Python),
        # which in this process would stall the recalling clients' event loop.
        with tempfile.TemporaryDirectory() as scratch:
            stop_file, report = Path(scratch) / "stop", Path(scratch) / "report.json"
            sweeper = subprocess.Popen(
                [sys.executable, __file__, "--sweep", url, str(stop_file), str(report), str(limit)]
            )
            await anyio.sleep(1.0)  # its session is up and the first sweep under way
            _, with_it = await recall_only(url, readers, each, seed=5000)
            stop_file.touch()
            if sweeper.wait(timeout=120) != 0:
                raise RuntimeError("the find_conflicts client failed")
            swept = json.loads(report.read_text())
        sweeps, found = swept["latency"], swept["found"]
    finally:
        stop(process)
    a99, w99 = percentile(alone, 99), percentile(with_it, 99)
    out(
        f"  recall alone: p50 {ms(percentile(alone, 50))}, p99 {ms(a99)}, max {ms(max(alone))};"
        f" with find_conflicts: p50 {ms(percentile(with_it, 50))}, p99 {ms(w99)},"
        f" max {ms(max(with_it))}"
    )
    out(
        f"  find_conflicts(limit={limit}): {len(sweeps)} runs, p50 {ms(percentile(sweeps, 50))},"
        f" {found} conflicts counted each time"
    )
    return [
        ("conflicts: find_conflicts p50", ms(percentile(sweeps, 50)), "", True),
        (
            "conflicts: recall p99 with find_conflicts / alone",
            f"{w99 / a99:.2f} ({ms(w99)} vs {ms(a99)})",
            "<= 3",
            w99 <= 3 * a99,
        ),
    ]


async def sweep(url: str, stop_file: Path, report: Path, limit: int) -> None:
    """Call ``find_conflicts(agent="scout", limit=limit)`` again and again until
    ``stop_file`` exists; write the latencies and the count found to ``report`` (JSON)."""
    latency: list[float] = []
    found = 0
    async with Client(url) as client:
        while not stop_file.exists():
            began = time.perf_counter()
            result = await client.call_tool("find_conflicts", {"agent": "scout", "limit": limit})
            latency.append(time.perf_counter() - began)
            assert not result.is_error, result.content[0]
            found = (result.structured_content or {}).get("count", 0)
    report.write_text(json.dumps({"latency": latency, "found": found}))


# ---- main --------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--part", choices=["sharing", "http", "conflicts"])
    parser.add_argument("--calls", type=int, default=200, help="mixed calls per client")
    parser.add_argument("--clients", type=int, default=32, help="HTTP clients at once")
    parser.add_argument("--fill", type=int, default=2000, help="memories before the HTTP part")
    parser.add_argument("--facts", type=int, default=20_000)
    parser.add_argument("--clash-every", type=int, default=10)
    parser.add_argument("--readers", type=int, default=4, help="recall clients in part 3")
    parser.add_argument(
        "--per-process",
        type=int,
        default=8,
        help="recalling HTTP clients per client process in part 2 (agents are processes)",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=2,
        help="doxa serve --workers in part 2 (default 2: a server shared by many clients)",
    )
    parser.add_argument("--keep", type=Path, help="keep data and logs in this directory")
    parser.add_argument(
        "--conflicts-limit", type=int, default=50, help="find_conflicts' limit in part 3"
    )
    parser.add_argument(
        "--sweep", nargs=4, metavar=("URL", "STOP", "REPORT", "LIMIT"), help=argparse.SUPPRESS
    )
    parser.add_argument("--recallers", nargs=6, help=argparse.SUPPRESS)
    options = parser.parse_args(argv)
    if options.recallers:  # recalling clients of part 2, in a process of their own
        url, clients, each, seed, go, report = options.recallers
        anyio.run(recallers, url, int(clients), int(each), int(seed), Path(go), Path(report))
        return 0
    if options.sweep:  # the find_conflicts client of part 3, in a process of its own
        url, stop_file, report, limit = options.sweep
        anyio.run(sweep, url, Path(stop_file), Path(report), int(limit))
        return 0
    parts: dict[str, Callable[[Path], Awaitable[list[Row]]]] = {
        "sharing": lambda root: sharing_part(root, options.calls),
        "http": lambda root: http_part(
            root, options.clients, options.calls, options.fill, options.per_process, options.workers
        ),
        "conflicts": lambda root: conflicts_part(
            root, options.facts, options.clash_every, options.readers, options.conflicts_limit
        ),
    }
    root = Path(tempfile.mkdtemp(prefix="doxa-load-", dir=options.keep))
    (root / "logs").mkdir()
    out(
        f"doxa load bench, {os.cpu_count()} cpus, load average {os.getloadavg()[0]:.2f};"
        f" data in {root}"
    )
    rows: list[Row] = []
    began = time.monotonic()
    try:
        for name, part in parts.items():
            if options.part in (None, name):
                rows += anyio.run(part, root)
    finally:
        if options.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    out("\nsummary")
    out("-" * 100)
    out(f"  {'figure':<52} {'measured':<30} {'target':<8}")
    for figure, measured, target, ok in rows:
        verdict = check(ok) if target else ""
        out(f"  {figure:<52} {measured:<30} {target:<8} {verdict}")
    out(
        f"total {(time.monotonic() - began) / 60:.1f} min; load average at end"
        f" {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cpus"
    )
    return 0 if all(ok for _, _, target, ok in rows if target) else 1


if __name__ == "__main__":
    raise SystemExit(main())
