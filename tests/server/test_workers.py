"""``doxa serve --transport http --workers 2``, through real processes: two workers answer on
the port and relay to the serving process's memory, enforcing the same tokens; a dead
worker is replaced; a worker outlives no serving process; workers that keep dying at start
stop the server; SIGTERM stops them all cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import httpx2
import pytest
from mcp.client import Client
from mcp.client.streamable_http import streamable_http_client

from doxa.server.tokens import TokenStore
from tests.server.conftest import PORT_ATTEMPTS, PORT_TAKEN, free_port

if TYPE_CHECKING:
    from tests.server.conftest import RunningServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Start = Callable[..., Awaitable["RunningServer"]]


def workers_of(pid: int) -> list[int]:
    """The child processes of ``pid`` (its HTTP workers)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            found += [int(c) for c in (task / "children").read_text().split()]
        except FileNotFoundError:
            continue  # a thread that ended between the listing and the reading
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


async def wait_for(check: Callable[[], bool], seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} within {seconds} s")
        await anyio.sleep(0.05)


@asynccontextmanager
async def client(server: RunningServer, token: str) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {token}"}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30, read=120)) as http,
        Client(streamable_http_client(server.url, http_client=http)) as connected,
    ):
        yield connected


async def remember(server: RunningServer, token: str, text: str) -> str:
    async with client(server, token) as connected:
        result = await connected.call_tool("remember", {"text": text})
    assert not result.is_error, result.content
    observation: Any = result.structured_content
    return str(observation["observation_id"])


async def recalled(server: RunningServer, token: str, query: str) -> list[str]:
    async with client(server, token) as connected:
        result = await connected.call_tool("recall", {"query": query, "limit": 50})
    assert not result.is_error, result.content
    found: Any = result.structured_content
    return [r["text"] for r in found["results"]]


async def test_a_worker_answers_on_the_port_with_the_owners_memory_and_tokens(
    start_server: Start, tmp_path: Path
) -> None:
    data_dir = tmp_path / "memory"
    _, token = TokenStore(data_dir).create("scout")
    server = await start_server("http", data_dir, "--workers", "2")
    await wait_for(lambda: len(workers_of(server.process.pid)) == 2, 30, "no workers started")
    worker, other = workers_of(server.process.pid)

    # Many clients at once, each on its own connection: either worker may take each one.
    texts = [f"Ferry note {k}: the boat to island {k} leaves from pier {k % 3}." for k in range(12)]
    async with anyio.create_task_group() as group:
        for text in texts:
            group.start_soon(remember, server, token, text)
    assert set(texts) <= set(await recalled(server, token, "ferry boat island pier"))

    # With the serving process frozen, a worker still lists the tools (no memory needed)
    # and refuses a request without a token.
    os.kill(server.process.pid, signal.SIGSTOP)
    try:
        with anyio.fail_after(20):
            async with client(server, token) as connected:
                tools = await connected.list_tools()
            async with httpx2.AsyncClient(timeout=10) as http:
                refused = await http.post(
                    server.url,
                    json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                    headers={"Accept": "application/json, text/event-stream"},
                )
    finally:
        os.kill(server.process.pid, signal.SIGCONT)
    assert "remember" in {tool.name for tool in tools.tools}
    assert refused.status_code == 401

    # A dead worker is replaced, and the memory is still one.
    os.kill(worker, signal.SIGKILL)
    await wait_for(
        lambda: len(set(workers_of(server.process.pid)) - {worker}) == 2, 15, "no new worker"
    )
    await remember(server, token, "Ferry note 99: the last boat leaves at ten.")
    assert "Ferry note 99: the last boat leaves at ten." in await recalled(
        server, token, "last boat ten"
    )

    replacements = workers_of(server.process.pid)
    assert other in replacements
    assert server.stop() == 0
    assert not any(alive(pid) for pid in replacements)
    assert not list(data_dir.rglob("*.wal"))  # the memory was closed, after the worker
    # No line per request at INFO (the README's promise; it cost CPU on every call).
    logged = server.output()[1]
    assert '"POST /mcp' not in logged and "Terminating session" not in logged, logged[-2000:]


async def test_without_sessions_a_get_for_an_event_stream_is_refused_405(
    start_server: Start, tmp_path: Path
) -> None:
    # The SDK opened a stream that carried nothing and never ended: a client could hold any
    # number of them open.
    server = await start_server("http", tmp_path / "memory", "--workers", "2")
    stream = {"Accept": "text/event-stream"}
    # Generous: on a loaded machine (CI beside other jobs) a worker still starting took >10 s.
    with anyio.fail_after(120):
        async with httpx2.AsyncClient(timeout=60) as http:
            for method, headers in [
                ("GET", stream),
                ("GET", {**stream, "MCP-Protocol-Version": "2025-06-18"}),
                ("HEAD", stream),
            ]:
                # Streamed: the SDK's stream would never end, and was answered 200 at once.
                async with http.stream(method, server.url, headers=headers) as answer:
                    assert answer.status_code == 405, (method, headers)
                    assert answer.headers["allow"] == "POST"
                    body = await answer.aread()
                if method == "GET":
                    error = json.loads(body)["error"]
                    assert error["code"] == -32600
                    assert "no event stream to open with GET; POST each request" in error["message"]
            # The Host check still comes first, and a POST is answered as ever.
            foreign = await http.get(server.url, headers={**stream, "Host": "evil.example"})
            listed = await http.post(
                server.url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Accept": "application/json, text/event-stream"},
            )
    assert foreign.status_code == 421
    assert listed.status_code == 200 and '"remember"' in listed.text


async def test_a_worker_stops_when_its_serving_process_is_killed(
    start_server: Start, tmp_path: Path
) -> None:
    data_dir = tmp_path / "memory"
    server = await start_server("http", data_dir, "--workers", "2")
    await wait_for(lambda: len(workers_of(server.process.pid)) == 2, 30, "no workers started")
    workers = workers_of(server.process.pid)
    server.process.kill()
    server.process.wait(timeout=30)
    await wait_for(
        lambda: not any(alive(pid) for pid in workers), 15, "a worker outlived its server"
    )
    # Workers only relay: each took the memory over as it stopped (opened it, wrote the
    # journal's recalls, closed it), one after the other.
    assert "[worker" not in "".join(
        line for line in server.output()[1].splitlines() if "this process owns the memory" in line
    )
    # Nothing left behind blocks the next server on the directory.
    again = await start_server("http", data_dir)
    _, token = TokenStore(data_dir).create("scout")
    await remember(again, token, "The harbour opens at six.")


@pytest.mark.parametrize("transport", ["sse", "stdio"])
def test_workers_need_streamable_http(tmp_path: Path, transport: str) -> None:
    # stdio was served with the setting silently ignored (and exited 0 at the end of input).
    done = subprocess.run(
        [sys.executable, "-m", "doxa.server", "serve", "--transport", transport, "--workers", "2"],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        env={**os.environ, "DOXA_EMBEDDER": "hash", "DOXA_DATA_DIR": str(tmp_path / "m")},
    )
    assert done.returncode == 2
    assert "server.workers = 2 needs --transport http" in done.stderr
    assert not (tmp_path / "m").exists()  # refused before anything opened


def test_workers_that_keep_dying_at_start_stop_the_server(tmp_path: Path) -> None:
    # Python imports sitecustomize at start: this one ends every HTTP worker at once (only
    # they are given a listening socket), as a broken install would.
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\nif 'DOXA_WORKER_SOCKET' in os.environ:\n    os._exit(3)\n"
    )
    env = {**os.environ, "DOXA_EMBEDDER": "hash", "DOXA_DATA_DIR": str(tmp_path / "m")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    for _ in range(PORT_ATTEMPTS):  # the port picked may be taken before the server binds it
        serve = ["serve", "--transport", "http", "--workers", "2", "--port", str(free_port())]
        done = subprocess.run(
            [sys.executable, "-m", "doxa.server", *serve],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        if PORT_TAKEN not in done.stderr:
            break
    assert done.returncode == 1, done.stderr
    assert "no HTTP worker is left" in done.stderr
    assert not list((tmp_path / "m").rglob("*.wal"))  # the memory was closed
