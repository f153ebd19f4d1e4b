"""Several ``doxa serve`` processes on one data directory share one memory: the first owns
it, the others relay to it, and when the owner goes (closed or killed) another takes over.
Real subprocesses over stdio, as several Claude Code sessions start them."""

from __future__ import annotations

import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from calls import ok
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

Params = Callable[..., StdioServerParameters]


@asynccontextmanager
async def session(params: StdioServerParameters, errlog: Path) -> AsyncIterator[Client]:
    with errlog.open("w", encoding="utf-8") as err:
        try:
            async with Client(stdio_client(params, errlog=err)) as client:
                yield client
        except BaseException:
            # The server's own log says what it was doing (shown by pytest on a failure).
            err.flush()
            print(f"--- {errlog.name}:\n{errlog.read_text(encoding='utf-8')[-4000:]}")
            raise


def owner_pid(data_dir: Path) -> int:
    return int((data_dir / "owner.lock").read_text().split()[0])


async def wait_for_owner(data_dir: Path, not_pid: int | None = None) -> int:
    """The pid holding ownership once one (other than ``not_pid``) does."""
    with anyio.fail_after(30):
        while True:
            try:
                pid = owner_pid(data_dir)
            except (FileNotFoundError, ValueError, IndexError):
                pid = None
            if pid is not None and pid != not_pid:
                return pid
            await anyio.sleep(0.05)


async def test_three_processes_share_one_memory_each_as_its_own_agent(
    tmp_path: Path, stdio_params: Params
) -> None:
    data_dir = tmp_path / "memory"
    agents = ["scout", "driver", "medic"]
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                session(stdio_params(data_dir, "--agent", a), tmp_path / f"{a}.err")
            )
            for a in agents
        ]
        with anyio.fail_after(60):
            done = [
                await ok(c, "remember", text=f"The {a} saw the red lighthouse.", topics=["coast"])
                for c, a in zip(clients, agents, strict=True)
            ]
            for client in clients:
                found = await ok(client, "recall", query="", topics=["coast"])
                assert {r["observation_id"] for r in found["results"]} == {
                    d["observation_id"] for d in done
                }
            cited = await ok(clients[2], "cite_evidence", id=done[1]["observation_id"])
    assert [b["agent"] for b in cited["believers"]] == ["driver"]
    assert not (data_dir / "graph.wal").exists()


async def test_when_the_owner_is_killed_another_process_takes_over_and_nothing_is_lost(
    tmp_path: Path, stdio_params: Params
) -> None:
    data_dir = tmp_path / "memory"
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(
            session(stdio_params(data_dir, "--agent", "a"), tmp_path / "a.err")
        )
        kept = await ok(first, "remember", text="Written before the owner died.")
        owner = await wait_for_owner(data_dir)
        relays = [
            await stack.enter_async_context(
                session(stdio_params(data_dir, "--agent", name), tmp_path / f"{name}.err")
            )
            for name in ("b", "c")
        ]
        asked = [await ok(relay, "recall", query="owner died") for relay in relays]
        os.kill(owner, signal.SIGKILL)  # within the 0.25 s in which recall events gather
        killed_at = time.monotonic()
        new_owner = await wait_for_owner(data_dir, not_pid=owner)
        took_over = time.monotonic() - killed_at
        with anyio.fail_after(60):
            # A relayed recall was answered only once its event was written: its feedback
            # finds it in the new owner's memory.
            for relay, recalled in zip(relays, asked, strict=True):
                judged = await ok(
                    relay,
                    "feedback",
                    recall_id=recalled["recall_id"],
                    accepted=[kept["observation_id"]],
                )
                assert judged["accepted"] == [kept["observation_id"]]
            later = await ok(relays[0], "remember", text="Written after the takeover.")
            for relay in relays:
                found = await ok(relay, "recall", query="written before after owner takeover")
                ids = {r["observation_id"] for r in found["results"]}
                assert {kept["observation_id"], later["observation_id"]} <= ids
    assert new_owner != owner
    assert took_over < 5.0


async def test_a_write_in_flight_when_the_owner_dies_is_not_applied_twice(
    tmp_path: Path, stdio_params: Params
) -> None:
    data_dir = tmp_path / "memory"
    texts = [f"Burst note {i} about the harbour." for i in range(40)]
    answers: list[tuple[str, Any]] = []
    async with AsyncExitStack() as stack:
        owner_client = await stack.enter_async_context(
            session(stdio_params(data_dir), tmp_path / "owner.err")
        )
        await ok(owner_client, "recall", query="warm up")
        owner = await wait_for_owner(data_dir)
        relay = await stack.enter_async_context(session(stdio_params(data_dir), tmp_path / "r.err"))
        await ok(relay, "recall", query="warm up")

        async def write_all() -> None:
            for text in texts:
                result = await relay.call_tool("remember", {"text": text})
                answers.append((text, result))

        async with anyio.create_task_group() as group:
            group.start_soon(write_all)
            await anyio.sleep(0.3)
            os.kill(owner, signal.SIGKILL)
        with anyio.fail_after(60):
            # Every write the relay answered with an error is retried, as an agent would.
            for text, result in answers:
                if result.is_error:
                    assert "Retry the call" in result.content[0].text
                    again = await ok(relay, "remember", text=text)
                    assert again["observation_id"]
            listed = await ok(relay, "recall", query="", agent="default", limit=100)
    stored = [r["text"] for r in listed["results"]]
    assert sorted(stored) == sorted(texts)  # each once: nothing lost, nothing doubled


async def test_a_stale_socket_and_lock_left_by_a_killed_owner_never_block_a_start(
    tmp_path: Path, stdio_params: Params
) -> None:
    data_dir = tmp_path / "memory"
    data_dir.mkdir()
    (data_dir / "owner.lock").write_text("999999\n")
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(data_dir / "doxa.sock"))
    stale.close()  # a socket file nobody listens on
    with anyio.fail_after(60):
        async with session(stdio_params(data_dir), tmp_path / "err") as client:
            done = await ok(client, "remember", text="Started over a stale socket.")
            found = await ok(client, "recall", query="stale socket")
    assert found["results"][0]["observation_id"] == done["observation_id"]


async def test_the_owner_closing_its_client_hands_the_memory_to_another(
    tmp_path: Path, stdio_params: Params
) -> None:
    data_dir = tmp_path / "memory"
    owning, joined, gone = anyio.Event(), anyio.Event(), anyio.Event()
    kept: dict[str, Any] = {}

    async def first_client() -> None:  # its own task: it ends while the other goes on
        async with session(stdio_params(data_dir), tmp_path / "a.err") as leaves:
            await ok(leaves, "recall", query="warm up")
            owning.set()
            await joined.wait()
            kept.update(await ok(leaves, "remember", text="Kept across the hand-over."))
        gone.set()  # its process has exited

    with anyio.fail_after(90):
        async with anyio.create_task_group() as group:
            group.start_soon(first_client)
            await owning.wait()
            first_owner = await wait_for_owner(data_dir)
            async with session(stdio_params(data_dir), tmp_path / "b.err") as stays:
                await ok(stays, "recall", query="warm up")
                joined.set()
                await gone.wait()
                found = await ok(stays, "recall", query="hand-over")
                second_owner = await wait_for_owner(data_dir, not_pid=first_owner)
    assert found["results"][0]["observation_id"] == kept["observation_id"]
    assert second_owner != first_owner


async def test_two_spellings_of_a_long_data_directory_share_one_memory(
    tmp_path: Path, stdio_params: Params, server_env: dict[str, str]
) -> None:
    # A path too long for a socket address put the socket under $XDG_RUNTIME_DIR, chosen by
    # the path as given: a process started through a short link to it (or in a session
    # with another $XDG_RUNTIME_DIR) looked for another socket, and failed to start.
    data_dir = tmp_path / ("a-rather-long-directory-name-" * 4) / "memory"
    data_dir.mkdir(parents=True)
    link = tmp_path / "m"
    link.symlink_to(data_dir)
    elsewhere = {**server_env, "XDG_RUNTIME_DIR": str(tmp_path)}
    async with AsyncExitStack() as stack:
        owner = await stack.enter_async_context(
            session(stdio_params(data_dir, "--agent", "scout"), tmp_path / "owner.err")
        )
        with anyio.fail_after(60):
            done = await ok(owner, "remember", text="The long road is closed.")
        other = await stack.enter_async_context(
            session(stdio_params(link, "--agent", "driver", env=elsewhere), tmp_path / "o.err")
        )
        with anyio.fail_after(60):
            found = await ok(other, "recall", query="long road")
    assert [r["observation_id"] for r in found["results"]] == [done["observation_id"]]


async def test_an_owner_that_does_not_answer_is_named_with_its_pid(
    tmp_path: Path, stdio_params: Params, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A stopped owner left a joining process saying "the memory is still being opened".
    from conftest import hash_settings

    from doxa.store import sharing
    from doxa.store.errors import MemoryStoreError

    data_dir = tmp_path / "memory"
    monkeypatch.setattr(sharing, "CONNECT_WAIT_S", 1.0)
    async with session(stdio_params(data_dir), tmp_path / "owner.err") as first:
        await ok(first, "remember", text="The owner will stop.")
        owner = await wait_for_owner(data_dir)
        os.kill(owner, signal.SIGSTOP)
        joining = sharing.SharedMemory(hash_settings(data_dir).store)
        try:
            with pytest.raises(MemoryStoreError) as caught:
                await anyio.to_thread.run_sync(joining.stats)
            # Closing does not wait for the stopped owner either (a CLI command took 30 s
            # more to exit).
            began = time.monotonic()
            await anyio.to_thread.run_sync(joining.close)
            closing = time.monotonic() - began
        finally:
            os.kill(owner, signal.SIGCONT)
            joining.close()
    assert f"(pid {owner}) is stopped" in str(caught.value)
    assert closing < 0.9  # CONNECT_WAIT_S is 1 s here


async def test_a_call_to_an_owner_stopped_meanwhile_fails_naming_it_and_works_once_resumed(
    tmp_path: Path, stdio_params: Params
) -> None:
    # Ctrl-Z on the terminal serving the memory held every other client's calls until it
    # ran again, with no word of why.
    from conftest import hash_settings

    from doxa.store import sharing
    from doxa.store.errors import OwnerStopped

    data_dir = tmp_path / "memory"
    async with session(stdio_params(data_dir), tmp_path / "owner.err") as first:
        await ok(first, "remember", text="The owner will stop.")
        owner = await wait_for_owner(data_dir)
        joining = sharing.SharedMemory(hash_settings(data_dir).store)
        try:
            await anyio.to_thread.run_sync(joining.stats)
            os.kill(owner, signal.SIGSTOP)
            try:
                with anyio.fail_after(30), pytest.raises(OwnerStopped) as caught:
                    await anyio.to_thread.run_sync(
                        lambda: joining.recall("owner"), abandon_on_cancel=True
                    )
            finally:
                os.kill(owner, signal.SIGCONT)
            with anyio.fail_after(30):
                [found] = (await anyio.to_thread.run_sync(lambda: joining.recall("owner"))).results
        finally:
            joining.close()
    assert f"(pid {owner}) is stopped" in str(caught.value)
    assert f"kill -CONT {owner}" in str(caught.value)
    assert found.text == "The owner will stop."
