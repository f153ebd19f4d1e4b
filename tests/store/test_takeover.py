"""A process that joins an owner which is dying still ends up with a memory: a killed owner's
listening socket takes connections for a moment and then drops them, so the relay it joined
is gone before the joining is done, and the joining thread must settle again."""

from __future__ import annotations

import fcntl
import os
import socket
import threading
from pathlib import Path

from conftest import hash_settings

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
