"""Soak: does the memory stay up, bounded and complete under a long mix of calls?

Three phases, each against a real ``doxa serve`` subprocess (hash embedder, so the model's
time does not hide the store's):

1. **stdio**: one client loops remember -> recall -> feedback (``--loops``, 20,000 by
   default). Every ``--sample`` loops it prints the server's RSS, the size of Kùzu's
   write-ahead log and the loop time; then it closes the client and checks that the server
   exited cleanly (no log left) and that the graph holds every acknowledged memory. A
   fresh server on the same memory then runs ``--sample`` loops more: the soaked process's
   last RSS must be within 10% of that fresh one's, i.e. what it grew by is what it holds,
   not what it ran through.
2. **HTTP**: ``--clients`` (8) concurrent clients loop the same calls for ``--seconds``
   (300), sampling RSS and log size every 10 s; then SIGTERM, and the same checks (the
   fresh server runs 1,000 loops).
3. **crash**: a stdio server doing the same loop is killed with -9 mid-way; the *first*
   restart must answer, and hold every memory acknowledged before the kill.
4. **reads**: what the growth of phase 1 is made of. A stdio server is filled with as many
   memories as phase 1 ends with (``--loops``, in batches), then one client loops recall
   only, then recall -> feedback, ``--loops`` / 2 times each, sampling RSS. A store that
   keeps what it is told grows with it (each memory, each judged recall's query vector);
   a leak would show in the recall-only loop once the last 4,096 recalls kept in memory
   for feedback are full: it then stores nothing in memory (its record goes to the graph,
   whose page cache is bounded by ``buffer_pool_mb``).

Both also print RSS "after warm-up": the first sample past a tenth of the run against the
last one. Run: ``python bench/soak.py`` (about 50 minutes); ``--quick`` for 2,000 loops and
60 s; ``--only PHASE`` for one phase; ``--buffer-pool-mb N`` or ``--config FILE``
for every server it starts.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from doxa.store.recall_log import RECENT_RECALLS

DOXA = [sys.executable, "-m", "doxa.server", "serve", "--embedder", "hash"]


def out(line: str = "") -> None:
    print(line, flush=True)


def rss_mb(pid: int) -> float:
    """Resident memory of a process, in MB (0 when it is gone)."""
    try:
        for row in Path(f"/proc/{pid}/status").read_text().splitlines():
            if row.startswith("VmRSS:"):
                return int(row.split()[1]) / 1024
    except FileNotFoundError:
        pass
    return 0.0


def server_pid(data_dir: Path) -> int:
    """The pid of the ``doxa serve`` whose command line names ``data_dir``."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"doxa.server" in cmdline and str(data_dir).encode() in cmdline:
            return int(entry.name)
    raise RuntimeError(f"no doxa serve for {data_dir}")


def wal_kb(data_dir: Path) -> float:
    try:
        return (data_dir / "graph.wal").stat().st_size / 1024
    except FileNotFoundError:
        return 0.0


def stored_observations(data_dir: Path) -> set[str]:
    """Texts of every observation in the graph (read-only, with the server stopped)."""
    from doxa.store.graph import Graph

    graph = Graph(data_dir / "graph", read_only=True)
    try:
        rows = graph._rows("MATCH (o:Observation) RETURN o.text")
    finally:
        graph.close()
    return {str(r[0]) for r in rows}


@dataclass
class Tally:
    """What a phase did and saw."""

    acknowledged: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    loop_seconds: list[float] = field(default_factory=list)
    curve: list[tuple[str, float, float, float]] = field(default_factory=list)
    #: Loops done when the first point of the curve was taken.
    loops_at_first: int = 0


async def one_loop(client: Client, text: str, tally: Tally, i: int) -> None:
    """remember -> recall -> feedback, counting errors; the text is kept if acknowledged."""
    started = time.perf_counter()
    done = await client.call_tool("remember", {"text": text, "topics": [f"t{i % 13}"]})
    if done.is_error:
        tally.errors.append(f"remember: {done.content[0].text}")  # type: ignore[union-attr]
        return
    tally.acknowledged.append(text)
    found = await client.call_tool("recall", {"query": f"topic {i % 37} weather", "limit": 10})
    if found.is_error:
        tally.errors.append(f"recall: {found.content[0].text}")  # type: ignore[union-attr]
        return
    result: dict[str, Any] = found.structured_content or {}
    ids = [r["observation_id"] for r in result["results"]]
    judged = await client.call_tool(
        "feedback",
        {"recall_id": result["recall_id"], "accepted": ids[:2], "rejected": ids[2:4]},
    )
    if judged.is_error:
        tally.errors.append(f"feedback: {judged.content[0].text}")  # type: ignore[union-attr]
    tally.loop_seconds.append(time.perf_counter() - started)


def note(i: int, who: str = "") -> str:
    return f"Note {who}{i} on topic {i % 37}, the weather {i % 11} and the road {i % 7}."


def sample(tally: Tally, at: str, rss: float, wal: float, p50: float) -> None:
    """Keep one point of the curve, and print it as it is taken."""
    if not tally.curve:
        tally.loops_at_first = len(tally.loop_seconds)
        out(f"  {'at':>10} {'RSS MB':>8} {'WAL KB':>8} {'loop ms p50':>12}")
    tally.curve.append((at, rss, wal, p50))
    out(f"  {at:>10} {rss:>8.1f} {wal:>8.1f} {p50:>12.1f}")


def verdict(tally: Tally, data_dir: Path, exit_code: int | None) -> bool:
    """Print a phase's errors, RSS after warm-up, WAL, exit and completeness; judge all but
    RSS (``against_fresh`` judges that)."""
    rss = [r for _, r, _, _ in tally.curve]
    start = rss[max(1, len(rss) // 10)] if len(rss) > 1 else rss[0]
    growth = (rss[-1] - start) / start if start else 0.0
    wal_max = max(w for _, _, w, _ in tally.curve)
    stored = stored_observations(data_dir)
    missing = [t for t in tally.acknowledged if t not in stored]
    left = (data_dir / "graph.wal").exists()
    first = f" (first: {tally.errors[0][:160]})" if tally.errors else ""
    out(f"  errors: {len(tally.errors)}{first}")
    out(
        f"  RSS after warm-up: {start:.1f} -> {rss[-1]:.1f} MB ({growth:+.1%}), peak {max(rss):.1f}"
    )
    out(f"  WAL: largest sampled {wal_max:.0f} KB; left after exit: {'yes' if left else 'no'}")
    acknowledged = len(tally.acknowledged)
    out(f"  exit code: {exit_code}; acknowledged missing: {len(missing)} of {acknowledged}")
    return not tally.errors and not missing and not left and exit_code == 0


async def stdio_phase(root: Path, loops: int, every: int) -> bool:
    data_dir = root / "stdio"
    out(f"\n## stdio: one client, {loops} loops of remember -> recall -> feedback")
    tally = Tally()
    params = StdioServerParameters(command=DOXA[0], args=[*DOXA[1:], "--data-dir", str(data_dir)])
    async with Client(params) as client:
        pid = server_pid(data_dir)
        for i in range(loops):
            await one_loop(client, note(i), tally, i)
            if (i + 1) % every == 0:
                p50 = statistics.median(tally.loop_seconds[-every:]) * 1000
                sample(tally, f"loop {i + 1}", rss_mb(pid), wal_kb(data_dir), p50)
    deadline = time.monotonic() + 30
    while rss_mb(pid) and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    # The SDK's stdio client reaps the server; a clean exit leaves no write-ahead log.
    clean = verdict(tally, data_dir, 0 if not rss_mb(pid) else None)
    return await against_fresh(tally, data_dir, loops, every) and clean


async def against_fresh(tally: Tally, data_dir: Path, loops: int, every: int) -> bool:
    """Print and judge the soaked process's last RSS against a fresh server's on the same
    memory after ``every`` loops more. The store keeps what it is told (each memory, each
    judged query), so RSS grows with the memory; what must not grow is what a long run adds
    beyond that."""
    params = StdioServerParameters(command=DOXA[0], args=[*DOXA[1:], "--data-dir", str(data_dir)])
    soaked = tally.curve[-1][1]
    fresh = await fresh_rss(data_dir, params, loops, every)
    beyond = (soaked - fresh) / fresh
    loops_since = len(tally.loop_seconds) - tally.loops_at_first
    per_loop = (soaked - tally.curve[0][1]) * 1024 / max(1, loops_since)
    out(
        f"  RSS of the soaked process {soaked:.1f} MB; of a fresh one on the same memory"
        f" {fresh:.1f} MB ({beyond:+.1%}); it grew {per_loop:.1f} KB a loop"
        " (a memory, a recall and a judgement)"
    )
    return beyond < 0.10


async def fresh_rss(data_dir: Path, params: StdioServerParameters, first: int, loops: int) -> float:
    """RSS of a new server on ``data_dir`` after ``loops`` more loops (its warm-up)."""
    async with Client(params) as client:
        pid = server_pid(data_dir)
        tally = Tally()
        for i in range(first, first + loops):
            await one_loop(client, note(i), tally, i)
        rss = rss_mb(pid)
    if tally.errors:
        out(f"  the fresh process saw {len(tally.errors)} errors: {tally.errors[0][:160]}")
    return rss


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def wait_for_port(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"doxa serve exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            await anyio.sleep(0.05)
    raise RuntimeError("the server did not open its port")


async def http_phase(root: Path, clients: int, seconds: float) -> bool:
    data_dir = root / "http"
    out(f"\n## HTTP: {clients} clients looping remember -> recall -> feedback for {seconds:.0f} s")
    port = free_port()
    process = subprocess.Popen(
        [*DOXA, "--data-dir", str(data_dir), "--transport", "http", "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stderr=(root / "http.stderr").open("wb"),
    )
    await wait_for_port(port, process)
    tally = Tally()
    stop_at = time.monotonic() + seconds

    async def worker(k: int) -> None:
        async with Client(f"http://127.0.0.1:{port}/mcp") as client:
            i = 0
            while time.monotonic() < stop_at:
                await one_loop(client, note(i, f"c{k}-"), tally, i)
                i += 1

    async def sampler() -> None:
        started = time.monotonic()
        while time.monotonic() < stop_at:
            await anyio.sleep(10)
            recent = tally.loop_seconds[-200:] or [0.0]
            at = f"{time.monotonic() - started:.0f} s"
            p50 = statistics.median(recent) * 1000
            sample(tally, at, rss_mb(process.pid), wal_kb(data_dir), p50)

    async with anyio.create_task_group() as group:
        for k in range(clients):
            group.start_soon(worker, k)
        group.start_soon(sampler)
    process.send_signal(signal.SIGTERM)
    code = process.wait(timeout=60)
    out(f"  loops: {len(tally.loop_seconds)} ({len(tally.loop_seconds) / seconds:.1f} per s)")
    clean = verdict(tally, data_dir, code)
    return await against_fresh(tally, data_dir, len(tally.loop_seconds), 1000) and clean


async def reads_phase(root: Path, memories: int, loops: int, every: int) -> bool:
    data_dir = root / "reads"
    out(
        f"\n## reads: {memories:,} memories, then {loops:,} recalls,"
        f" then {loops:,} recall -> feedback"
    )
    params = StdioServerParameters(command=DOXA[0], args=[*DOXA[1:], "--data-dir", str(data_dir)])
    growth: dict[str, float] = {}
    errors = 0
    async with Client(params) as client:
        pid = server_pid(data_dir)
        for start in range(0, memories, 500):
            batch = [{"text": note(i), "topics": [f"t{i % 13}"]} for i in range(start, start + 500)]
            done = await client.call_tool("remember", {"memories": batch})
            errors += bool(done.is_error)
        for judged in (False, True):
            name = "recall -> feedback" if judged else "recall only"
            tally = Tally()
            out(f"  {name}:")
            for i in range(loops):
                began = time.perf_counter()
                found = await client.call_tool(
                    "recall", {"query": f"topic {i % 37} weather {i}", "limit": 10}
                )
                errors += bool(found.is_error)
                if judged and not found.is_error:
                    result: dict[str, Any] = found.structured_content or {}
                    ids = [r["observation_id"] for r in result["results"]]
                    fed = await client.call_tool(
                        "feedback",
                        {
                            "recall_id": result["recall_id"],
                            "accepted": ids[:2],
                            "rejected": ids[2:4],
                        },
                    )
                    errors += bool(fed.is_error)
                tally.loop_seconds.append(time.perf_counter() - began)
                if (i + 1) % every == 0:
                    p50 = statistics.median(tally.loop_seconds[-every:]) * 1000
                    sample(tally, f"loop {i + 1}", rss_mb(pid), wal_kb(data_dir), p50)
            rss = [r for _, r, _, _ in tally.curve]
            # Warm-up: until the recent recalls kept for feedback (RECENT_RECALLS, each with
            # its query vector) are full; from then on a recall adds nothing in memory.
            warm = [k for k in range(len(rss)) if (k + 1) * every > RECENT_RECALLS]
            start_at = warm[0] if warm and warm[0] < len(rss) - 1 else max(0, len(rss) // 10)
            loops_measured = (len(rss) - 1 - start_at) * every
            per_loop = (rss[-1] - rss[start_at]) * 1024 / loops_measured if loops_measured else 0.0
            growth[name] = per_loop
            out(
                f"  {name}: RSS {rss[start_at]:.1f} -> {rss[-1]:.1f} MB,"
                f" {per_loop:+.2f} KB per loop"
            )
    out(f"  errors: {errors}")
    # A loop that stores nothing must not grow: under 0.5 KB per recall (RSS moves by pages
    # and allocator arenas; 1,000s of loops make that noise small).
    return errors == 0 and growth["recall only"] < 0.5


async def crash_phase(root: Path, loops: int) -> bool:
    data_dir = root / "crash"
    out(f"\n## crash: kill -9 after {loops} loops with feedback, then the first restart")
    tally = Tally()
    params = StdioServerParameters(command=DOXA[0], args=[*DOXA[1:], "--data-dir", str(data_dir)])
    try:
        async with Client(params) as client:
            pid = server_pid(data_dir)
            for i in range(loops):
                await one_loop(client, note(i), tally, i)
            wal = wal_kb(data_dir)
            os.kill(pid, signal.SIGKILL)
            await client.call_tool("recall", {"query": "anything"})
    except Exception:  # the client sees its server die
        pass
    out(f"  killed with a {wal:.0f} KB write-ahead log")
    restarted = time.perf_counter()
    async with Client(params) as client:
        found = await client.call_tool("recall", {"query": "topic 3 weather"})
    out(
        f"  first restart: {'answered' if not found.is_error else 'FAILED'} in"
        f" {time.perf_counter() - restarted:.1f} s"
    )
    stored = stored_observations(data_dir)
    missing = [t for t in tally.acknowledged if t not in stored]
    out(f"  acknowledged memories missing: {len(missing)} of {len(tally.acknowledged)}")
    return not found.is_error and not missing and not tally.errors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loops", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=300)
    parser.add_argument("--sample", type=int, default=1000, help="stdio loops per sample")
    parser.add_argument("--quick", action="store_true", help="2,000 loops, 60 s of HTTP")
    parser.add_argument("--only", choices=["stdio", "http", "crash", "reads"])
    parser.add_argument(
        "--buffer-pool-mb", type=int, help="the graph's page cache (default: the settings')"
    )
    parser.add_argument("--config", type=Path, help="a settings file for every server it starts")
    options = parser.parse_args(argv)
    if options.quick:
        options.loops, options.seconds, options.sample = 2_000, 60, 200
    phases: dict[str, Callable[[Path], Awaitable[bool]]] = {
        "stdio": lambda root: stdio_phase(root, options.loops, options.sample),
        "http": lambda root: http_phase(root, options.clients, options.seconds),
        "crash": lambda root: crash_phase(root, 600),
        "reads": lambda root: reads_phase(root, options.loops, options.loops // 2, options.sample),
    }
    results: dict[str, bool] = {}
    with tempfile.TemporaryDirectory(prefix="doxa-soak-") as tmp:
        if options.config:
            DOXA.extend(["--config", str(options.config.resolve())])
            out(f"settings: {options.config}")
        elif options.buffer_pool_mb:
            # Every server of the run reads it (DOXA is their command line).
            config = Path(tmp) / "soak.toml"
            config.write_text(f"[store]\nbuffer_pool_mb = {options.buffer_pool_mb}\n")
            DOXA.extend(["--config", str(config)])
            out(f"graph page cache: {options.buffer_pool_mb} MB")
        for name, phase in phases.items():
            if options.only in (None, name):
                results[name] = anyio.run(phase, Path(tmp))
    out("\n" + ", ".join(f"{k}: {'pass' if v else 'FAIL'}" for k, v in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    raise SystemExit(main())
