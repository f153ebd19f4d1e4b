"""HTTP and SSE shared safely, through real ``doxa serve`` subprocesses: bearer tokens (401
without a valid one, revocable while the server runs), Host and Origin checks on loopback and
off it, no serving off loopback without tokens, and identity bound to the token."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from calls import INITIALIZE, LATER
from mcp.client import Client
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from doxa.server.tokens import TokenStore

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Start = Callable[..., Awaitable[Any]]

#: ``python -m doxa.server`` with the interpreter running the tests (the project's venv).
DOXA = [sys.executable, "-m", "doxa.server"]


@asynccontextmanager
async def _client(server: Any, token: str | None = None) -> AsyncIterator[Client]:
    """The SDK client for ``server``, sending ``Authorization: Bearer token`` if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else None
    if server.transport == "sse":
        async with Client(sse_client(server.url, headers=headers)) as client:
            yield client
        return
    timeout = httpx2.Timeout(30, read=300)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout) as http,
        Client(streamable_http_client(server.url, http_client=http)) as client,
    ):
        yield client


async def _post(server: Any, headers: dict[str, str] | None = None) -> httpx2.Response:
    """A raw ``initialize`` POST to ``/mcp`` on 127.0.0.1, with ``headers`` added."""
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(
            f"http://127.0.0.1:{server.port}/mcp",
            content=INITIALIZE,
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **(headers or {}),
            },
        )


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    assert result.structured_content is not None
    return dict(result.structured_content)


async def _refused(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    """The text of the tool error ``tool`` answers with."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error, result.structured_content
    text = result.content[0]
    assert text.type == "text"
    return str(text.text)


async def _believers(client: Client, observation_id: str) -> list[str]:
    cited = await _call(client, "cite_evidence", {"id": observation_id})
    return [b["agent"] for b in cited["believers"]]


# ---- who may connect ---------------------------------------------------------------------------


async def test_a_loopback_server_without_tokens_works_as_before_until_the_first_token(
    tmp_path: Path, start_server: Start
) -> None:
    data_dir = tmp_path / "memory"
    server = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _client(server) as client:
            await _call(client, "remember", {"text": "Open to the machine.", "agent": "anyone"})
        assert (await _post(server)).status_code == 200

        # The first token locks the running server from the next request on.
        _, secret = TokenStore(data_dir).create("scout")
        refused = await _post(server)
        assert refused.status_code == 401
        assert (await _post(server, _bearer(secret))).status_code == 200


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_with_tokens_a_request_without_a_valid_one_gets_401(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    data_dir = tmp_path / "memory"
    _, secret = TokenStore(data_dir).create("scout")
    server = await start_server(transport, data_dir)
    path = "/mcp" if transport == "http" else "/sse"
    url = f"http://127.0.0.1:{server.port}{path}"

    async def status(headers: dict[str, str]) -> httpx2.Response:
        async with httpx2.AsyncClient(timeout=30) as http:
            if transport == "http":
                return await http.post(
                    url,
                    content=INITIALIZE,
                    headers={
                        "Content-Type": "application/json",
                        "Accept": "application/json, text/event-stream",
                        **headers,
                    },
                )
            return await http.get(url, headers=headers)

    with anyio.fail_after(60):
        missing = await status({})
        assert missing.status_code == 401
        assert missing.headers["www-authenticate"].startswith("Bearer")
        wrong = await status(_bearer(secret[:-2] + "xx"))
        assert wrong.status_code == 401
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
        assert (await status({"Authorization": f"Basic {secret}"})).status_code == 401
        # The right one gets in, and the tools see its agent.
        async with _client(server, secret) as client:
            done = await _call(client, "remember", {"text": "The ferry runs hourly."})
            assert await _believers(client, done["observation_id"]) == ["scout"]


async def test_a_revoked_token_gets_401_on_its_next_request(
    tmp_path: Path, start_server: Start
) -> None:
    data_dir = tmp_path / "memory"
    store = TokenStore(data_dir)
    record, secret = store.create("scout")
    _, other = store.create("driver")
    server = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _client(server, secret) as client:
            await _call(client, "recall", {"query": "ferry"})
            # Revoked by another process (`doxa token revoke`) while the session is open.
            revoke = [*DOXA, "token", "revoke", record.id, "--data-dir", str(data_dir)]
            done = await anyio.run_process(revoke, check=False)
            assert done.returncode == 0, done.stderr
            with pytest.raises(Exception):  # noqa: B017 - the transport's error for a 401
                await client.call_tool("recall", {"query": "ferry"})
        assert (await _post(server, _bearer(secret))).status_code == 401
        assert (await _post(server, _bearer(other))).status_code == 200
        # The last one revoked: the server stays closed (it let anyone in).
        assert TokenStore(data_dir).revoke(store.records()[0].id) is not None
        assert (await _post(server, {})).status_code == 401
        assert (await _post(server, _bearer(other))).status_code == 401


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_a_session_open_with_a_revoked_token_fails_its_next_call_at_once(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    """Over SSE the revoked token's stream is closed: its POSTs were refused, but the stream
    stayed open and the SDK's client waited forever for the answer to its next call."""
    data_dir = tmp_path / "memory"
    store = TokenStore(data_dir)
    record, secret = store.create("scout")
    _, other = store.create("driver")
    server = await start_server(transport, data_dir)
    with anyio.fail_after(60):
        async with _client(server, other) as kept, _client(server, secret) as client:
            await _call(client, "recall", {"query": "ferry"})
            revoke = [*DOXA, "token", "revoke", record.id, "--data-dir", str(data_dir)]
            done = await anyio.run_process(revoke, check=False)
            assert done.returncode == 0, done.stderr
            with anyio.fail_after(20), pytest.raises(Exception):  # noqa: B017 - the transport's
                await client.call_tool("recall", {"query": "ferry"})
            # A session of another token goes on.
            await _call(kept, "recall", {"query": "ferry"})
        if transport == "sse":
            assert f"an SSE stream opened as {record.id} is closed" in server.output()[1]


async def test_an_sse_session_opened_without_a_token_ends_with_the_first_token(
    tmp_path: Path, start_server: Start
) -> None:
    data_dir = tmp_path / "memory"
    server = await start_server("sse", data_dir)
    with anyio.fail_after(60):
        async with _client(server) as client:
            await _call(client, "recall", {"query": "ferry"})
            TokenStore(data_dir).create("scout")
            with anyio.fail_after(20), pytest.raises(Exception):  # noqa: B017 - the transport's
                await client.call_tool("recall", {"query": "ferry"})


async def test_stdio_is_never_asked_for_a_token(
    tmp_path: Path, stdio_params: Callable[..., StdioServerParameters]
) -> None:
    data_dir = tmp_path / "memory"
    TokenStore(data_dir).create("scout")
    with anyio.fail_after(60):
        async with Client(stdio_params(data_dir)) as client:
            done = await _call(client, "remember", {"text": "Local.", "agent": "driver"})
            assert await _believers(client, done["observation_id"]) == ["driver"]
            await _call(client, "forget", {"id": done["observation_id"]})


# ---- Host and Origin ---------------------------------------------------------------------------


@pytest.mark.parametrize("with_token", [False, True])
async def test_a_loopback_server_refuses_a_foreign_host_or_origin(
    tmp_path: Path, start_server: Start, with_token: bool
) -> None:
    data_dir = tmp_path / "memory"
    auth: dict[str, str] = {}
    if with_token:
        auth = _bearer(TokenStore(data_dir).create("scout")[1])
    server = await start_server("http", data_dir)
    with anyio.fail_after(60):
        assert (await _post(server, {**auth, "Host": "evil.example"})).status_code == 421
        evil_origin = {**auth, "Origin": "http://evil.example"}
        assert (await _post(server, evil_origin)).status_code == 403
        local_origin = {**auth, "Origin": f"http://localhost:{server.port}"}
        assert (await _post(server, local_origin)).status_code == 200
        assert (await _post(server, auth)).status_code == 200
        # A local proxy's Host names no port; names are case-insensitive (both got 421).
        for host in ("localhost", "[::1]", f"LocalHost:{server.port}"):
            assert (await _post(server, {**auth, "Host": host})).status_code == 200, host
        assert (await _post(server, {**auth, "Origin": "http://127.0.0.1"})).status_code == 200


async def test_off_loopback_host_and_origin_are_checked_against_the_allow_lists(
    tmp_path: Path, start_server: Start
) -> None:
    """Bound to 0.0.0.0 (reached here on 127.0.0.1): a cross-origin remember is refused."""
    data_dir = tmp_path / "memory"
    _, secret = TokenStore(data_dir).create("scout")
    server = await start_server(
        "http",
        data_dir,
        "--host",
        "0.0.0.0",
        "--allowed-hosts",
        "doxa.test",
        "--allowed-origins",
        "https://app.doxa.test",
    )
    auth = _bearer(secret)

    async def status(**headers: str) -> int:
        return (await _post(server, {**auth, **headers})).status_code

    with anyio.fail_after(60):
        assert await status(Host="evil.example") == 421
        assert await status(Host=f"{server.port}.evil.example:{server.port}") == 421
        assert await status(Host="doxa.test") == 200
        assert await status(Host="DOXA.Test") == 200
        assert await status(Origin="https://APP.doxa.test") == 200
        assert await status(Host=f"doxa.test:{server.port}") == 200
        assert await status(Host=f"127.0.0.1:{server.port}") == 200
        assert await status(Origin="https://app.doxa.test") == 200
        assert await status(Origin="http://evil.example") == 403
        assert await status(Origin="https://app.doxa.test.evil.example") == 403
        assert (await _post(server, {"Host": "doxa.test"})).status_code == 401  # and a token

        # A session opened properly, then a page on another origin tries to write through it.
        opened = await _post(server, auth)
        session = opened.headers["mcp-session-id"]
        async with httpx2.AsyncClient(timeout=30) as http:
            remember = json.dumps(
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tools/call",
                    "params": {"name": "remember", "arguments": {"text": "Injected."}},
                }
            )
            cross = await http.post(
                f"http://127.0.0.1:{server.port}/mcp",
                content=remember,
                headers={
                    **auth,
                    "Content-Type": "application/json",
                    "Accept": "application/json, text/event-stream",
                    "Mcp-Session-Id": session,
                    "Mcp-Protocol-Version": "2025-06-18",
                    "Origin": "http://evil.example",
                },
            )
        assert cross.status_code == 403
        async with _client(server, secret) as client:
            found = await _call(client, "recall", {"query": "Injected."})
        assert found["results"] == []


def _serve_refused(data_dir: Path, *flags: str, env: dict[str, str]) -> str:
    """Run ``doxa serve --transport http`` that must refuse to start: returns its stderr."""
    command = [*DOXA, "serve", "--transport", "http", "--embedder", "hash", "--port", "1"]
    done = subprocess.run(
        [*command, "--data-dir", str(data_dir), *flags],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert not (data_dir / "owner.lock").exists()  # refused before the memory was opened
    assert "doxa serving on" not in done.stderr  # it was said, then refused
    return done.stderr


async def test_a_non_loopback_bind_without_authentication_refuses_to_start(
    tmp_path: Path, server_env: dict[str, str]
) -> None:
    data_dir = tmp_path / "memory"
    stderr = _serve_refused(data_dir, "--host", "0.0.0.0", env=server_env)
    assert "refusing to serve on 0.0.0.0 without authentication" in stderr
    assert "doxa token create --agent NAME" in stderr

    TokenStore(data_dir).create("scout")
    stderr = _serve_refused(data_dir, "--host", "0.0.0.0", "--auth", "none", env=server_env)
    assert 'auth = "none"' in stderr
    # With a token, a wildcard address still needs the names clients use.
    stderr = _serve_refused(data_dir, "--host", "0.0.0.0", env=server_env)
    assert "allowed_hosts" in stderr


# ---- identity bound to the token ---------------------------------------------------------------


async def test_a_token_writes_only_as_its_own_agent(tmp_path: Path, start_server: Start) -> None:
    data_dir = tmp_path / "memory"
    _, scout = TokenStore(data_dir).create("scout")
    server = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _client(server, scout) as client:
            refused = await _refused(
                client, "remember", {"text": "The bridge is open.", "agent": "driver"}
            )
            assert refused.count("agent is 'driver'") == 1 and "'scout'" in refused
            batch = {"memories": [{"text": "One."}, {"text": "Two.", "agent": "driver"}]}
            refused = await _refused(client, "remember", batch)
            assert "memories[1].agent is 'driver'" in refused
            refused = await _refused(
                client, "remember", {"memories": [{"text": "Three."}], "agent": "driver"}
            )
            assert "agent is 'driver'" in refused
            assert (await _call(client, "recall", {"query": "bridge One Two"}))["results"] == []

            named = await _call(client, "remember", {"text": "Mine.", "agent": " scout "})
            unnamed = await _call(client, "remember", {"text": "The bridge is closed."})
            many = await _call(client, "remember", {"memories": [{"text": "Four."}]})
            [one] = many["remembered"]
            for done in (named, unnamed, one):
                assert await _believers(client, done["observation_id"]) == ["scout"]
            # Reads may look at any agent.
            await _call(client, "recall", {"query": "bridge", "agent": "driver"})
            await _call(client, "find_conflicts", {"agent": "driver"})
            await _call(client, "cite_evidence", {"agent": "driver", "unsupported": True})


async def test_a_read_only_token_reads_and_cannot_write(
    tmp_path: Path, start_server: Start
) -> None:
    data_dir = tmp_path / "memory"
    store = TokenStore(data_dir)
    _, writer = store.create("scout")
    _, reader = store.create("auditor", read_only=True)
    server = await start_server("http", data_dir)
    with anyio.fail_after(60):
        async with _client(server, writer) as client:
            done = await _call(client, "remember", {"text": "The depot opens at six."})
        async with _client(server, reader) as client:
            recalled = await _call(client, "recall", {"query": "depot"})
            assert [r["observation_id"] for r in recalled["results"]] == [done["observation_id"]]
            await _call(client, "find_conflicts", {})
            await _call(client, "cite_evidence", {"id": done["observation_id"]})
            for tool, arguments in (
                ("remember", {"text": "Sneaky."}),
                ("feedback", {"recall_id": recalled["recall_id"], "accepted": []}),
                ("forget", {"id": done["observation_id"]}),
            ):
                refused = await _refused(client, tool, arguments)
                assert f"{tool}: this connection's token (agent 'auditor') is read-only" in refused
            again = await _call(client, "recall", {"query": "depot"})
        assert [r["observation_id"] for r in again["results"]] == [done["observation_id"]]


async def test_a_purge_is_refused_while_another_agent_holds_it_until_a_later_fact(
    tmp_path: Path, start_server: Start
) -> None:
    # driver's Rome is withdrawn by driver's Oslo later, so driver holds Rome until then:
    # scout's purge deleted it (only a belief held now counted).
    data_dir = tmp_path / "memory"
    store = TokenStore(data_dir)
    _, scout = store.create("scout")
    _, driver = store.create("driver")
    server = await start_server("http", data_dir)

    def lives(city: str, since: str) -> dict[str, Any]:
        fact = {"subject": "Ada", "predicate": "lives in", "object": city, "valid_from": since}
        return {"text": f"Ada lives in {city}.", "fact": fact}

    with anyio.fail_after(60):
        async with _client(server, driver) as client:
            rome = (await _call(client, "remember", lives("Rome", "2020-01-01")))["observation_id"]
        async with _client(server, scout) as client:
            await _call(client, "remember", lives("Rome", "2020-01-01"))
        async with _client(server, driver) as client:
            await _call(client, "remember", lives("Oslo", f"{LATER}-01-01"))
        async with _client(server, scout) as client:
            refused = await _refused(client, "forget", {"id": rome, "mode": "purge"})
            held = await _call(client, "recall", {"query": "", "subject": "Ada", "explain": True})
    assert f"deletes {rome!r} for every agent, and 'driver' believes it too" in refused
    [still] = [r for r in held["results"] if r["observation_id"] == rome]
    assert sorted(still["agents"]) == ["driver", "scout"]


@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_forget_and_prune_take_back_only_the_tokens_own_beliefs_unless_admin(
    tmp_path: Path, start_server: Start, transport: str
) -> None:
    data_dir = tmp_path / "memory"
    store = TokenStore(data_dir)
    _, scout = store.create("scout")
    _, driver = store.create("driver")
    _, admin = store.create("ops", admin=True)
    server = await start_server(transport, data_dir)
    with anyio.fail_after(90):
        async with _client(server, driver) as client:
            told = await _call(client, "remember", {"text": "Route 9 is open."})
            theirs = told["observation_id"]
        async with _client(server, scout) as client:
            # A belief id is no observation id, whoever holds the belief.
            refused = await _refused(client, "forget", {"id": told["belief_id"]})
            assert (
                f"id {told['belief_id']!r} is a belief id; forget takes an observation" in refused
            )
            mine = (await _call(client, "remember", {"text": "Route 9 is closed."}))[
                "observation_id"
            ]
            for mode in ("retract", "purge"):
                refused = await _refused(client, "forget", {"id": theirs, "mode": mode})
                assert f"id {theirs!r} is believed by 'driver', not by 'scout'" in refused
            assert await _believers(client, theirs) == ["driver"]
            # Believed by driver too, it may be retracted for scout alone, never purged: a
            # purge deleted driver's belief with it.
            shared = await _call(client, "remember", {"text": "Route 9 is open."})
            refused = await _refused(client, "forget", {"id": theirs, "mode": "purge"})
            assert f"deletes {theirs!r} for every agent, and 'driver' believes it too" in refused
            assert await _believers(client, theirs) == ["driver", "scout"]
            assert (await _call(client, "forget", {"id": theirs}))["kept_for"] == ["driver"]
            assert shared["observation_id"] == theirs
        async with _client(server, driver) as client:
            # Believed by both, then withdrawn by driver: scout, the one believer left, may
            # purge it (driver's withdrawn belief refused it, as if driver believed it still).
            told_again = await _call(client, "remember", {"text": "Route 9 has a new sign."})
        async with _client(server, scout) as client:
            again = await _call(client, "remember", {"text": "Route 9 has a new sign."})
            assert again["observation_id"] == told_again["observation_id"]
        async with _client(server, driver) as client:
            await _call(client, "forget", {"id": again["observation_id"]})
        async with _client(server, scout) as client:
            purged = await _call(client, "forget", {"id": again["observation_id"], "mode": "purge"})
            assert purged["mode"] == "purge"
            assert (await _call(client, "forget", {"id": mine}))["mode"] == "retract"
            refused = await _refused(client, "feedback", {"recall_id": "rec_nope"})
            assert "no recall" in refused  # feedback is open to writers; this id names nothing
            # prune retires any agent's observations: an admin's call, even as a dry run.
            refused = await _refused(client, "prune", {})
            assert "not an admin token" in refused and "--admin" in refused
        async with _client(server, admin) as client:
            planned = await _call(client, "prune", {})
            assert planned["dry_run"] is True and planned["unused"] == 0
            done = await _call(client, "forget", {"id": theirs, "mode": "purge"})
            assert done["observation_id"] == theirs
            recalled = await _call(client, "recall", {"query": "Route 9"})
        assert recalled["results"] == []
