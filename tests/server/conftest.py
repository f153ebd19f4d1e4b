"""Fixtures for the server tests: the real ``doxa serve`` as a subprocess, on stdio or on a
loopback port, always stopped at the end of the test."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.client.stdio import StdioServerParameters

#: ``python -m doxa.server`` with the interpreter running the tests (the project's venv).
DOXA = [sys.executable, "-m", "doxa.server"]

#: How long a freshly started HTTP/SSE server may take to open its port.
STARTUP_SECONDS = 60.0


#: What ``doxa serve`` logs once its port is bound (``doxa.server.cli.announce``): the servers
#: started here log at INFO, so it is always there.
LISTENING = "doxa serving on "

#: What it says when the port is taken (``doxa.server.http_server.listen``).
PORT_TAKEN = "is already in use"

#: How many free ports a test tries before it gives up.
PORT_ATTEMPTS = 5


def free_port() -> int:
    """A port free now: nothing keeps another process from binding it before the caller does
    (so a server given it may find it taken)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _listens(server: RunningServer) -> bool:
    """Wait until ``server`` listens on its port: True once it says it does, False if the port
    was taken before it could bind it (another test's server, under pytest-xdist, or any
    process). A port that merely answers proves nothing: it may answer for that other server,
    which this test would then talk to."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while not (LISTENING in server.output()[1] and _port_answers(server.port)):
        if server.process.poll() is not None:
            if PORT_TAKEN in server.output()[1]:
                return False
            pytest.fail(f"doxa serve exited with {server.process.returncode}: {server.output()[1]}")
        if time.monotonic() > deadline:
            pytest.fail(
                f"port {server.port} did not answer in {STARTUP_SECONDS} s: {server.output()}"
            )
        await anyio.sleep(0.05)
    return True


def _port_answers(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


@pytest.fixture
def server_env() -> dict[str, str]:
    """The test process's environment without any ``DOXA_*`` variable (hermetic servers)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("DOXA_")}


@pytest.fixture
def stdio_params(server_env: dict[str, str]) -> Callable[..., StdioServerParameters]:
    """``stdio_params(data_dir, *flags)``: parameters that start ``doxa serve`` on stdio with
    the hash embedder (``embedder=...`` picks another kind), in ``server_env`` unless ``env``
    is given (the SDK's own default environment would drop ``PYTHONPATH``, so the server
    could run other sources than the tests import)."""

    def make(
        data_dir: Path, *flags: str, embedder: str = "hash", env: dict[str, str] | None = None
    ) -> StdioServerParameters:
        return StdioServerParameters(
            command=DOXA[0],
            args=[*DOXA[1:], "serve", "--embedder", embedder, "--data-dir", str(data_dir), *flags],
            env=server_env if env is None else env,
        )

    return make


@dataclass
class RunningServer:
    """A ``doxa serve --transport http|sse`` subprocess listening on 127.0.0.1."""

    process: subprocess.Popen[bytes]
    transport: str
    port: int
    stdout: Path
    stderr: Path

    @property
    def url(self) -> str:
        path = "/mcp" if self.transport == "http" else "/sse"
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> int:
        """SIGTERM, then wait (SIGKILL if it does not exit); returns the exit code."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=30)
        return self.process.returncode

    def output(self) -> tuple[str, str]:
        """What the server has written so far to (stdout, stderr)."""
        return (
            self.stdout.read_text(encoding="utf-8", errors="replace"),
            self.stderr.read_text(encoding="utf-8", errors="replace"),
        )


@pytest.fixture
def start_server(
    tmp_path: Path, server_env: dict[str, str]
) -> Iterator[Callable[..., Awaitable[RunningServer]]]:
    """``await start_server(transport, data_dir)``: run ``doxa serve`` on a free loopback port
    and return once it listens there, on another port if that one was taken before it bound
    it. Every server started is stopped at teardown."""
    started: list[RunningServer] = []

    async def start(transport: str, data_dir: Path, *flags: str) -> RunningServer:
        for _ in range(PORT_ATTEMPTS):
            server = spawn(transport, data_dir, free_port(), flags)
            if await _listens(server):
                return server
        pytest.fail(f"every port picked in {PORT_ATTEMPTS} attempts was taken: {server.output()}")

    def spawn(transport: str, data_dir: Path, port: int, flags: tuple[str, ...]) -> RunningServer:
        n = len(started)
        stdout, stderr = tmp_path / f"server{n}.stdout", tmp_path / f"server{n}.stderr"
        with stdout.open("wb") as out, stderr.open("wb") as err:
            process = subprocess.Popen(
                [
                    *DOXA,
                    "serve",
                    "--transport",
                    transport,
                    "--port",
                    str(port),
                    "--embedder",
                    "hash",
                    "--data-dir",
                    str(data_dir),
                    *flags,
                ],
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=server_env,
                start_new_session=True,
            )
        server = RunningServer(process, transport, port, stdout, stderr)
        started.append(server)
        return server

    try:
        yield start
    finally:
        for server in started:
            server.stop()


@dataclass
class RawStdio:
    """A ``doxa serve`` on stdio driven through raw pipes: bytes in, JSON-RPC lines out."""

    process: Process
    stdout: BufferedByteReceiveStream
    next_id: int = 100
    #: answers read while waiting for another one, by request id
    early: dict[object, dict[str, Any]] = field(default_factory=dict)

    async def send(self, line: bytes) -> None:
        """Write ``line`` and a newline to the server's stdin, as they are."""
        assert self.process.stdin is not None
        await self.process.stdin.send(line + b"\n")

    async def receive(self) -> dict[str, Any]:
        """The next message the server writes."""
        return dict(json.loads(await self.stdout.receive_until(b"\n", 10_000_000)))

    async def ask(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        """Send a request and return its answer (a result or an error)."""
        request_id = await self.request(method, params)
        return await self.answer(request_id)

    async def request(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request without waiting; returns its id."""
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(json.dumps(message).encode())
        return self.next_id

    async def answer(self, request_id: int) -> dict[str, Any]:
        """The answer to ``request_id``; other answers read meanwhile are kept for their own
        ``answer`` call, and other messages (such as logs) are skipped."""
        while request_id not in self.early:
            message = await self.receive()
            if "result" in message or "error" in message:
                self.early[message.get("id")] = message
        return self.early.pop(request_id)

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """A ``tools/call`` result (``isError`` tells a refusal)."""
        answer = await self.ask("tools/call", {"name": name, "arguments": arguments})
        return dict(answer["result"])


@pytest.fixture
def raw_stdio(
    tmp_path: Path, server_env: dict[str, str]
) -> Callable[[Path], AbstractAsyncContextManager[RawStdio]]:
    """``async with raw_stdio(data_dir) as server``: ``doxa serve`` on stdio with the hash
    embedder, past the MCP handshake; killed at the end if it is still running."""

    @asynccontextmanager
    async def start(data_dir: Path) -> AsyncIterator[RawStdio]:
        command = [*DOXA, "serve", "--embedder", "hash", "--data-dir", str(data_dir)]
        with (tmp_path / f"{data_dir.name}.stderr").open("ab") as err:
            process = await anyio.open_process(
                command, stderr=err, env=server_env, start_new_session=True
            )
        try:
            assert process.stdout is not None
            server = RawStdio(process, BufferedByteReceiveStream(process.stdout))
            hello = await server.ask(
                "initialize",
                {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "pytest", "version": "1"},
                },
            )
            assert hello["result"]["serverInfo"]["name"] == "doxa"
            await server.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
            yield server
        finally:
            if process.returncode is None:
                process.kill()
                with anyio.move_on_after(10, shield=True):
                    await process.wait()

    return start
