"""A process that joins an owner which is dying still ends up with a memory: a killed owner's
listening socket takes connections for a moment and then drops them, so the relay it joined
is gone before the joining is done, and the joining thread must settle again."""

from __future__ import annotations

import fcntl
import os
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import hash_settings

from doxa.store import sharing
from doxa.store.errors import MemoryInUse, MemoryStoreError, MessageTooLarge
from doxa.store.memory import Memory
from doxa.store.relay import socket_path
from doxa.store.sharing import SharedMemory


def test_joining_an_owner_that_drops_every_connection_ends_in_taking_over(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "m"
    data_dir.mkdir()
    lock = os.open(data_dir / "owner.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a dying owner's lock, held a moment
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(socket_path(data_dir)))
    listener.listen(16)
    dropped = 0

    def drop_connections_then_die() -> None:
        nonlocal dropped
        while dropped < 4:  # two joins: a call and a watch connection each
            connection, _ = listener.accept()
            connection.close()
            dropped += 1
        listener.close()
        os.unlink(socket_path(data_dir))
        fcntl.flock(lock, fcntl.LOCK_UN)
        os.close(lock)

    dying = threading.Thread(target=drop_connections_then_die, daemon=True)
    dying.start()
    shared = SharedMemory(hash_settings(data_dir).store)
    shared.start()
    try:
        assert shared.stats()["Observation"] == 0
        assert shared.owner
    finally:
        shared.close()
    dying.join(timeout=5)
    assert dropped == 4


def test_a_process_that_could_not_join_tries_again_once_the_holder_is_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An import (or a repair) holds the directory and answers on no socket: a server started
    # meanwhile failed to join, kept that failure, and refused every call until restarted.
    monkeypatch.setattr(sharing, "CONNECT_WAIT_S", 0.5)
    data_dir = tmp_path / "m"
    data_dir.mkdir()
    lock = os.open(data_dir / "owner.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    shared = SharedMemory(hash_settings(data_dir).store)
    shared.start()
    try:
        with pytest.raises(MemoryStoreError, match="does not answer"):
            shared.stats()
        fcntl.flock(lock, fcntl.LOCK_UN)  # the import is done
        os.close(lock)
        assert shared.stats()["Observation"] == 0
        assert shared.owner
    finally:
        shared.close()


def test_a_memory_whose_graph_another_process_held_opens_once_it_is_free(
    tmp_path: Path,
) -> None:
    # A server took the directory while a repair had the graph open: its load failed with
    # "in use by another process" and every call said so, after the repair was long done.
    settings = hash_settings(tmp_path / "m")
    first = Memory.open(settings.store)
    first.warm_up()
    first.close()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_GRAPH, str(tmp_path / "m" / "graph")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"open\n"
        memory = Memory.open(settings.store)
        try:
            with pytest.raises(MemoryInUse):
                memory.wait_ready(timeout=60)
            assert holder.stdin is not None
            holder.stdin.close()  # the repair ends
            holder.wait(timeout=60)
            memory.wait_ready(timeout=60)
            assert memory.stats()["Observation"] == 0
        finally:
            memory.close()
    finally:
        holder.kill()
        holder.wait()


#: Another process holding the graph open until its stdin closes.
_HOLD_GRAPH = """
import sys
from doxa.store.graph import Graph
from pathlib import Path
graph = Graph(Path(sys.argv[1]))
print("open", flush=True)
sys.stdin.read()
graph.close()
"""


def test_every_error_the_memory_raises_crosses_the_relay() -> None:
    # MemoryInUse could not: a relayed call crashed with an UnpicklingError traceback.
    import inspect
    import io
    import pickle

    from doxa.store import errors
    from doxa.store.relay import _Unpickler

    raised = [
        kind
        for _, kind in inspect.getmembers(errors, inspect.isclass)
        if issubclass(kind, errors.MemoryStoreError) and kind.__module__ == errors.__name__
    ]
    assert errors.MemoryInUse in raised
    for kind in raised:
        made = {
            errors.InvalidInput: lambda: errors.InvalidInput("field", "is wrong"),
            errors.NotFound: lambda: errors.NotFound("id", "belief", "bel_x", True),
            errors.SchemaMismatch: lambda: errors.SchemaMismatch(["a"]),
            errors.DamagedStore: lambda: errors.DamagedStore("d", "p", "r"),
            errors.OwnerLost: lambda: errors.OwnerLost("remember"),
            errors.OwnerStopped: lambda: errors.OwnerStopped("recall", "42"),
            errors.StorageError: lambda: errors.StorageError("feedback", "full"),
        }.get(kind, lambda kind=kind: kind("said"))()
        back = _Unpickler(io.BytesIO(pickle.dumps(made))).load()
        assert (type(back), str(back)) == (kind, str(made))


def test_repair_holds_the_directory_until_it_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It looked at owner.lock, let it go, and then rebuilt: a server starting meanwhile
    # took the lock and failed on the graph repair held.
    from doxa.store import health

    settings = hash_settings(tmp_path / "m")
    first = Memory.open(settings.store)
    first.warm_up()
    first.close()
    seen: list[bool] = []
    checked = health._check

    def while_repairing(store: object, owned_here: bool) -> health.Health:
        seen.append(sharing.Ownership(tmp_path / "m").try_acquire())
        return checked(store, owned_here)  # type: ignore[arg-type]

    monkeypatch.setattr(health, "_check", while_repairing)
    assert health.repair(settings.store).healthy
    assert seen == [False]  # another could not take it
    free = sharing.Ownership(tmp_path / "m")
    assert free.try_acquire()
    free.release()


def test_a_call_too_large_to_relay_is_refused_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The owner hung up on it, the call was sent again and again, and it failed as "the
    # memory's owner kept exiting".
    from doxa.store import relay
    from doxa.store.drafts import MemoryDraft

    monkeypatch.setattr(relay, "_MAX_MESSAGE", 64 * 1024)
    settings = hash_settings(tmp_path / "m").store
    owner, joined = SharedMemory(settings), SharedMemory(settings)
    try:
        owner.start()
        assert owner.wait_settled() and owner.owner
        joined.start()
        assert joined.wait_settled() and not joined.owner
        big = [MemoryDraft(f"note {i} " + "x" * 1000) for i in range(100)]
        with pytest.raises(MessageTooLarge, match=r"^remember: the call is 0.1 MiB, more"):
            joined.remember(big, batch=True)
        assert joined.stats()["Observation"] == 0
        joined.remember(big[:10], batch=True)  # in parts
        assert owner.stats()["Observation"] == 10
    finally:
        joined.close()
        owner.close()


def test_an_answer_too_large_to_relay_is_refused_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The owner's connection thread died on it, and the caller resent until "kept exiting".
    from doxa.store import relay
    from doxa.store.drafts import MemoryDraft

    settings = hash_settings(tmp_path / "m").store
    owner, joined = SharedMemory(settings), SharedMemory(settings)
    try:
        owner.start()
        assert owner.wait_settled() and owner.owner
        owner.remember([MemoryDraft(f"note {i} " + "x" * 1500) for i in range(60)], batch=True)
        joined.start()
        assert joined.wait_settled() and not joined.owner
        monkeypatch.setattr(relay, "_MAX_MESSAGE", 64 * 1024)
        with pytest.raises(MessageTooLarge, match=r"^recall: the answer is [\d.]+ MiB, more"):
            joined.recall("note", limit=60)
        assert len(joined.recall("note", limit=5).results) == 5  # a smaller limit
    finally:
        joined.close()
        owner.close()
