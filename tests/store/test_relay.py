"""The relay between a relaying process and the owner: calls from one relaying process run
in parallel in the owner, up to the client's connections."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from doxa.store.errors import MemoryStoreError
from doxa.store.relay import RelayClient, RelayServer, RequestLost


class SlowOwner:
    """Answers every call after ``seconds``, counting how many ran at once."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.running = 0
        self.most = 0
        self._lock = threading.Lock()

    def __call__(self, method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        with self._lock:
            self.running += 1
            self.most = max(self.most, self.running)
        time.sleep(self.seconds)
        with self._lock:
            self.running -= 1
        if method == "forget":
            raise MemoryStoreError("no observation with id x")
        return (method, args, kwargs)


def calls_at_once(client: RelayClient, n: int) -> list[Any]:
    answers: list[Any] = [None] * n

    def one(k: int) -> None:
        answers[k] = client.call("recall", (f"q{k}",), {"limit": k})

    threads = [threading.Thread(target=one, args=(k,)) for k in range(n)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


@pytest.mark.parametrize("connections, most", [(4, 4), (1, 1)])
def test_calls_of_one_process_overlap_up_to_its_connections(
    tmp_path: Path, connections: int, most: int
) -> None:
    owner = SlowOwner(0.2)
    server = RelayServer(tmp_path / "owner.sock", owner)
    client = RelayClient(tmp_path / "owner.sock", connections=connections)
    try:
        answers = calls_at_once(client, 4)
        assert answers == [("recall", (f"q{k}",), {"limit": k}) for k in range(4)]
        assert owner.most == most
        # Connections are kept for the next calls, not opened again.
        assert len(client._open) == most
        with pytest.raises(MemoryStoreError, match="no observation"):
            client.call("forget", ("x",), {})
        assert client.call("stats", (), {}) == ("stats", (), {})
    finally:
        client.close()
        server.close()


def test_a_call_to_an_owner_that_went_is_lost_and_says_whether_it_was_sent(
    tmp_path: Path,
) -> None:
    server = RelayServer(tmp_path / "owner.sock", SlowOwner(0.0))
    client = RelayClient(tmp_path / "owner.sock", connections=2)
    assert client.call("stats", (), {}) == ("stats", (), {})
    server.close()
    with pytest.raises(RequestLost):
        client.call("stats", (), {})
    client.close()
    with pytest.raises(RequestLost) as lost:
        client.call("stats", (), {})
    assert lost.value.sent is False


def test_a_call_whose_connection_is_closed_while_it_waits_is_lost_once_sent(
    tmp_path: Path,
) -> None:
    """The owner gone, its watch closes the client's connections while calls wait for their
    answers: a waiting call failed on the closed socket with a ValueError (neither sent
    again, if it read, nor told to retry, if it wrote)."""
    server = RelayServer(tmp_path / "owner.sock", SlowOwner(3.0))

    def watch_closes(method: str) -> None:  # between two waits, as the watch thread may
        client.close()

    client = RelayClient(tmp_path / "owner.sock", connections=1, stalled=watch_closes)
    try:
        with pytest.raises(RequestLost) as lost:
            client.call("recall", ("q",), {})
        assert lost.value.sent is True
    finally:
        server.close()
